/* SPDX-License-Identifier: MIT
 * /api/system/info and /api/system/benchmark. Static facts are read once at
 * start; per request only the RSS is read (one pread of /proc/self/statm). */
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/utsname.h>
#include <unistd.h>

#include "api/api.h"
#include "core/config.h"
#include "core/clock.h"
#include "hk_build.h"
#include "http/query.h"
#include "http/resp.h"
#include "http/server.h"

#define BENCH_DEFAULT 1000
#define BENCH_MAX 1000000
/* One run stops after this much time, whatever was asked: the endpoint is
 * open to anyone, and a stop must not wait for it. */
#define BENCH_BUDGET_NS 1000000000ull

/* r->bench[] slots. */
enum { B_ASKED, B_WALL, B_MIN, B_MAX, B_SUM, B_DONE, B_CANCEL };

/* A run in progress on this loop (each loop is one thread): one at a time,
 * so a few clients cannot fill the thread pool that other work shares. */
static _Thread_local bool bench_running;

static struct {
    char os_name[65];
    char os_arch[65];
    char os_version[65];
    double max_memory_mb;
    int cpus;
    int statm_fd;
    long page_size;
} sys = {.statm_fd = -1};

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
    sys.page_size = sysconf(_SC_PAGESIZE);
    double phys = (double)sysconf(_SC_PHYS_PAGES) * (double)sys.page_size;
    double lim = cgroup_memory_limit();
    sys.max_memory_mb = (lim > 0 && lim < phys ? lim : phys) / (1024.0 * 1024.0);
    sys.cpus = hk_cpus_available();
    if (sys.statm_fd < 0)
        sys.statm_fd = open("/proc/self/statm", O_RDONLY | O_CLOEXEC);
}

/* Deferred to the first /api/system/info so that start-up does not pay for it. */
void hk_api_init(void)
{
    static pthread_once_t once = PTHREAD_ONCE_INIT;
    pthread_once(&once, read_static_facts);
}

static double rss_mb(void)
{
    char buf[128];
    if (sys.statm_fd < 0)
        return 0;
    ssize_t n = pread(sys.statm_fd, buf, sizeof buf - 1, 0);
    if (n <= 0)
        return 0;
    buf[n] = 0;
    unsigned long size, resident;
    if (sscanf(buf, "%lu %lu", &size, &resident) != 2)
        return 0;
    return (double)resident * (double)sys.page_size / (1024.0 * 1024.0);
}

void hk_api_system_info(struct hk_req *r)
{
    struct hk_worker *w = r->s->w;
    struct hk_buf *b = hk_resp_body(r);
    hk_api_init();
    uint64_t up_ms = (hk_mono_ns() - w->start_ns) / 1000000u;
    hk_buf_puts(b, "{\"mode\":\"native\",\"version\":\"" HK_VERSION "\",\"osName\":");
    hk_buf_put_json_str(b, sys.os_name, strlen(sys.os_name));
    hk_buf_puts(b, ",\"osArch\":");
    hk_buf_put_json_str(b, sys.os_arch, strlen(sys.os_arch));
    hk_buf_puts(b, ",\"osVersion\":");
    hk_buf_put_json_str(b, sys.os_version, strlen(sys.os_version));
    hk_buf_printf(b, ",\"uptimeMs\":%llu,\"rssMb\":%.1f,\"maxMemoryMb\":%.0f,\"availableProcessors\":%d,"
                     "\"eventLoops\":%d,\"store\":\"%s\",\"processingMode\":\"event-loop\",\"timestamp\":\"",
                  (unsigned long long)up_ms, rss_mb(), sys.max_memory_mb, sys.cpus, w->cfg->threads,
                  w->store->vt->name);
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

static void bench_work(uv_work_t *wk)
{
    struct hk_req *r = wk->data;
    uint64_t iters = r->bench[B_ASKED], min = UINT64_MAX, max = 0, sum = 0, i = 0;
    volatile unsigned sink = 0;
    uint64_t t0 = hk_mono_ns();
    while (i < iters) {
        uint64_t a = hk_mono_ns();
        sink += iteration();
        uint64_t z = hk_mono_ns(), d = z - a;
        sum += d;
        min = d < min ? d : min;
        max = d > max ? d : max;
        i++;
        if (z - t0 >= BENCH_BUDGET_NS || __atomic_load_n(&r->bench[B_CANCEL], __ATOMIC_RELAXED))
            break;
    }
    (void)sink;
    r->bench[B_DONE] = i;
    r->bench[B_WALL] = hk_mono_ns() - t0;
    r->bench[B_MIN] = min;
    r->bench[B_MAX] = max;
    r->bench[B_SUM] = sum;
}

static void unavailable(struct hk_req *r, const char *reason, const char *detail)
{
    hk_resp_unavailable(r, 503, reason, 1, "%s", detail);
}

static void bench_done(uv_work_t *wk, int status)
{
    struct hk_req *r = wk->data;
    bench_running = false;
    if (status < 0 || __atomic_load_n(&r->bench[B_CANCEL], __ATOMIC_RELAXED)) {
        unavailable(r, "stopping", "benchmark cancelled: the server is stopping");
        return;
    }
    double iters = (double)r->bench[B_DONE], total_ms = (double)r->bench[B_WALL] / 1e6;
    struct hk_buf *b = hk_resp_body(r);
    hk_buf_printf(b,
                  "{\"mode\":\"native\",\"iterations\":%llu,\"requestedIterations\":%llu,\"truncated\":%s,"
                  "\"totalDurationMs\":%.6f,\"avgDurationMs\":%.6f,"
                  "\"minDurationMs\":%.6f,\"maxDurationMs\":%.6f,\"throughputPerSec\":%.1f,\"timestamp\":\"",
                  (unsigned long long)r->bench[B_DONE], (unsigned long long)r->bench[B_ASKED],
                  r->bench[B_DONE] < r->bench[B_ASKED] ? "true" : "false", total_ms,
                  (double)r->bench[B_SUM] / 1e6 / iters, (double)r->bench[B_MIN] / 1e6, (double)r->bench[B_MAX] / 1e6,
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
    __atomic_store_n(&r->bench[B_CANCEL], 1, __ATOMIC_RELAXED);
    uv_cancel((uv_req_t *)&r->work);
}

void hk_api_system_benchmark(struct hk_req *r)
{
    int64_t iters = BENCH_DEFAULT;
    size_t vlen;
    const char *v = hk_query_raw(r->query, r->query_len, "iterations", &vlen);
    if (v) {
        char tmp[24];
        if (vlen >= sizeof tmp || (memcpy(tmp, v, vlen), tmp[vlen] = 0, hk_parse_int(tmp, 1, BENCH_MAX, &iters) < 0)) {
            hk_resp_problem(r, 400, NULL, "iterations must be an integer from 1 to %d", BENCH_MAX);
            return;
        }
    }
    if (r->s->draining_server) {
        unavailable(r, "stopping", "the server is stopping");
        return;
    }
    if (bench_running) {
        unavailable(r, "benchmark_busy", "a benchmark is already running on this event loop");
        return;
    }
    memset(r->bench, 0, sizeof r->bench);
    r->bench[B_ASKED] = (uint64_t)iters;
    r->work.data = r;
    int rc = uv_queue_work(&r->s->w->loop, &r->work, bench_work, bench_done);
    if (rc < 0) {
        unavailable(r, "benchmark_busy", "cannot schedule the benchmark");
        return;
    }
    bench_running = true;
    r->on_cancel = bench_cancel;
}
