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
#include "config.h"
#include "core/clock.h"
#include "hk_build.h"
#include "http/query.h"
#include "http/resp.h"
#include "http/server.h"

#define BENCH_DEFAULT 1000
#define BENCH_MAX 1000000

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
    uint64_t iters = r->bench[0], min = UINT64_MAX, max = 0, sum = 0;
    volatile unsigned sink = 0;
    uint64_t t0 = hk_mono_ns();
    for (uint64_t i = 0; i < iters; i++) {
        uint64_t a = hk_mono_ns();
        sink += iteration();
        uint64_t d = hk_mono_ns() - a;
        sum += d;
        min = d < min ? d : min;
        max = d > max ? d : max;
    }
    (void)sink;
    r->bench[1] = hk_mono_ns() - t0;
    r->bench[2] = min;
    r->bench[3] = max;
    r->bench[4] = sum;
}

static void bench_done(uv_work_t *wk, int status)
{
    struct hk_req *r = wk->data;
    if (status < 0) {
        hk_resp_problem(r, 503, NULL, "benchmark cancelled");
        return;
    }
    double iters = (double)r->bench[0], total_ms = (double)r->bench[1] / 1e6;
    struct hk_buf *b = hk_resp_body(r);
    hk_buf_printf(b,
                  "{\"mode\":\"native\",\"iterations\":%llu,\"totalDurationMs\":%.6f,\"avgDurationMs\":%.6f,"
                  "\"minDurationMs\":%.6f,\"maxDurationMs\":%.6f,\"throughputPerSec\":%.1f,\"timestamp\":\"",
                  (unsigned long long)r->bench[0], total_ms, (double)r->bench[4] / 1e6 / iters, (double)r->bench[2] / 1e6,
                  (double)r->bench[3] / 1e6, total_ms > 0 ? iters / (total_ms / 1000.0) : 0.0);
    hk_buf_put_iso_us(b, hk_wall_us());
    hk_buf_puts(b, "\"}");
    hk_resp_send(r, 200, HK_CT_JSON);
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
    r->bench[0] = (uint64_t)iters;
    r->work.data = r;
    int rc = uv_queue_work(&r->s->w->loop, &r->work, bench_work, bench_done);
    if (rc < 0)
        hk_resp_problem(r, 503, NULL, "cannot schedule the benchmark: %s", uv_strerror(rc));
}
