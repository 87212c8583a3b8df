/* SPDX-License-Identifier: MIT
 * /api/system/info and /api/system/benchmark. Static facts are read once at
 * start; per request only the RSS is read (one pread of /proc/self/statm). */
#include <pthread.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/utsname.h>
#include <unistd.h>

#include "api/api_int.h"
#include "core/clock.h"
#include "core/proc.h"
#include "hk_build.h"
#include "http/query.h"

#define BENCH_DEFAULT 1000
#define BENCH_MAX 1000000
/* One run stops after this much time, whatever was asked: the endpoint is
 * open to anyone, and a stop must not wait for it. */
#define BENCH_BUDGET_NS 1000000000ull


static struct {
    char os_name[65];
    char os_arch[65];
    char os_version[65];
    double max_memory_mb;
    int cpus;
} sys;

static double cgroup_memory_limit(void)
{
    const char *files[] = {"/sys/fs/cgroup/memory.max", "/sys/fs/cgroup/memory/memory.limit_in_bytes"};
    for (size_t i = 0; i < 2; i++) {
        FILE *f = fopen(files[i], "r");
        if (!f)
            continue;
        char v[64] = "";
        int ok = fscanf(f, "%63s", v) == 1;
        fclose(f);
        if (!ok || strcmp(v, "max") == 0)
            return 0;
        double b = strtod(v, NULL);
        /* cgroup v1 reports "no limit" as a huge number */
        return b > 0 && b < 1e18 ? b : 0;
    }
    return 0;
}

static void read_static_facts(void)
{
    struct utsname u;
    if (uname(&u) == 0) {
        snprintf(sys.os_name, sizeof sys.os_name, "%s", u.sysname);
        snprintf(sys.os_arch, sizeof sys.os_arch, "%s", u.machine);
        snprintf(sys.os_version, sizeof sys.os_version, "%s", u.release);
    }
    double phys = (double)sysconf(_SC_PHYS_PAGES) * (double)sysconf(_SC_PAGESIZE);
    double lim = cgroup_memory_limit();
    sys.max_memory_mb = (lim > 0 && lim < phys ? lim : phys) / (1024.0 * 1024.0);
    sys.cpus = hk_cpus_available();
}

/* Deferred to the first /api/system/info so that start-up does not pay for it. */
void hk_api_init(void)
{
    static pthread_once_t once = PTHREAD_ONCE_INIT;
    pthread_once(&once, read_static_facts);
}

static double rss_mb(void)
{
    uint64_t rss, vsize;
    hk_proc_memory(&rss, &vsize);
    return (double)rss / (1024.0 * 1024.0);
}

void hk_api_system_info(struct hk_req *r)
{
    struct hk_api *a = api_loop(r)->api;
    struct hk_buf *b = hk_resp_body(r);
    hk_api_init();
    uint64_t up_ms = (hk_mono_ns() - a->start_ns) / 1000000u;
    hk_buf_puts(b, "{\"mode\":\"native\",\"version\":\"" HK_VERSION "\",\"osName\":");
    hk_buf_put_json_str(b, sys.os_name, strlen(sys.os_name));
    hk_buf_puts(b, ",\"osArch\":");
    hk_buf_put_json_str(b, sys.os_arch, strlen(sys.os_arch));
    hk_buf_puts(b, ",\"osVersion\":");
    hk_buf_put_json_str(b, sys.os_version, strlen(sys.os_version));
    hk_buf_printf(b, ",\"uptimeMs\":%llu,\"rssMb\":%.1f,\"maxMemoryMb\":%.0f,\"availableProcessors\":%d,"
                     "\"eventLoops\":%d,\"store\":\"%s\",\"auth\":\"%s\",\"sessions\":\"%s\","
                     "\"processingMode\":\"event-loop\",\"timestamp\":\"",
                  (unsigned long long)up_ms, rss_mb(), sys.max_memory_mb, sys.cpus, a->cfg->threads,
                  a->store->vt->name, a->cfg->auth_on ? "on" : "off", a->redis ? "redis" : "store");
    hk_buf_put_iso_us(b, hk_wall_us());
    hk_buf_puts(b, "\"}");
    hk_resp_send(r, 200, HK_CT_JSON);
}

/* One iteration: count the primes below 2000 by trial division. Pure CPU,
 * no memory traffic, so it measures the core the way the reference's does. */
static unsigned iteration(void)
{
    unsigned n = 0;
    for (unsigned i = 2; i < 2000; i++) {
        unsigned d = 2;
        while (d * d <= i && i % d)
            d++;
        n += d * d > i;
    }
    return n;
}

/* The run a thread-pool job belongs to (work.data is the request). */
static struct hk_bench *bench_of(uv_work_t *wk)
{
    return (struct hk_bench *)((char *)wk - offsetof(struct hk_bench, work));
}

static void bench_work(uv_work_t *wk)
{
    struct hk_bench *bn = bench_of(wk);
    uint64_t min = UINT64_MAX, max = 0, sum = 0, i = 0;
    volatile unsigned sink = 0;
    uint64_t t0 = hk_mono_ns();
    while (i < bn->asked) {
        uint64_t a = hk_mono_ns();
        sink += iteration();
        uint64_t z = hk_mono_ns(), d = z - a;
        sum += d;
        min = d < min ? d : min;
        max = d > max ? d : max;
        i++;
        if (z - t0 >= BENCH_BUDGET_NS || atomic_load_explicit(&bn->cancel, memory_order_relaxed))
            break;
    }
    (void)sink;
    bn->done = i;
    bn->wall_ns = hk_mono_ns() - t0;
    bn->min_ns = min;
    bn->max_ns = max;
    bn->sum_ns = sum;
}

static void unavailable(struct hk_req *r, const char *reason, const char *detail)
{
    hk_resp_unavailable(r, 503, reason, 1, "%s", detail);
}

static void bench_done(uv_work_t *wk, int status)
{
    struct hk_bench *bn = bench_of(wk);
    struct hk_req *r = wk->data;
    api_loop(r)->bench_running = false;
    if (status < 0 || atomic_load_explicit(&bn->cancel, memory_order_relaxed)) {
        unavailable(r, "stopping", "benchmark cancelled: the server is stopping");
        return;
    }
    double iters = (double)bn->done, total_ms = (double)bn->wall_ns / 1e6;
    struct hk_buf *b = hk_resp_body(r);
    hk_buf_printf(b,
                  "{\"mode\":\"native\",\"iterations\":%llu,\"requestedIterations\":%llu,\"truncated\":%s,"
                  "\"totalDurationMs\":%.6f,\"avgDurationMs\":%.6f,"
                  "\"minDurationMs\":%.6f,\"maxDurationMs\":%.6f,\"throughputPerSec\":%.1f,\"timestamp\":\"",
                  (unsigned long long)bn->done, (unsigned long long)bn->asked, bn->done < bn->asked ? "true" : "false",
                  total_ms, (double)bn->sum_ns / 1e6 / iters, (double)bn->min_ns / 1e6, (double)bn->max_ns / 1e6,
                  total_ms > 0 ? iters / (total_ms / 1000.0) : 0.0);
    hk_buf_put_iso_us(b, hk_wall_us());
    hk_buf_puts(b, "\"}");
    hk_resp_send(r, 200, HK_CT_JSON);
}

/* The server is stopping: a run still queued is called off (bench_done
 * then sees UV_ECANCELED), one already running stops at its next
 * iteration. Either way the client gets its 503 from bench_done. */
static void bench_cancel(struct hk_req *r)
{
    struct hk_bench *bn = &api_req(r)->bench;
    atomic_store_explicit(&bn->cancel, true, memory_order_relaxed);
    uv_cancel((uv_req_t *)&bn->work);
}

void hk_api_system_benchmark(struct hk_req *r)
{
    int64_t iters = BENCH_DEFAULT;
    size_t vlen;
    const char *v = hk_query_raw(r->query, r->query_len, "iterations", &vlen);
    if (v && hk_parse_int_n(v, vlen, 1, BENCH_MAX, &iters) < 0) {
        hk_resp_problem(r, 400, NULL, "iterations must be an integer from 1 to %d", BENCH_MAX);
        return;
    }
    struct hk_api_loop *L = api_loop(r);
    if (r->s->draining_server) {
        unavailable(r, "stopping", "the server is stopping");
        return;
    }
    if (L->bench_running) {
        unavailable(r, "benchmark_busy", "a benchmark is already running on this event loop");
        return;
    }
    struct hk_bench *bn = &api_req(r)->bench;
    memset(bn, 0, sizeof *bn);
    bn->asked = (uint64_t)iters;
    bn->work.data = r;
    int rc = uv_queue_work(&L->w->loop, &bn->work, bench_work, bench_done);
    if (rc < 0) {
        unavailable(r, "benchmark_busy", "cannot schedule the benchmark");
        return;
    }
    L->bench_running = true;
    r->on_cancel = bench_cancel;
}
