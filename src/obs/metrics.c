/* SPDX-License-Identifier: MIT
 * Scrape: copy each worker's numbers under the registry lock (a few KiB of
 * loads), merge, and render straight into the response body. No printf on
 * the per-sample path: a 1 kHz scraper must stay cheap for the loop it
 * lands on. */
#include "obs/metrics.h"

#include <dirent.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include "core/clock.h"
#include "core/proc.h"
#include "hk_build.h"
#include "obs/obs.h"

struct series_copy {
    uint32_t key;
    uint64_t b[HK_HIST_BOUNDS + 1];
    uint64_t sum_ns;
};

struct source_copy {
    char *name;
    uint32_t len;
    uint64_t n;
};

struct gather {
    uint64_t c[HK_C__COUNT];
    uint64_t rejected[HK_REJ__COUNT];
    uint64_t auth[HK_AUTHR__COUNT];
    struct series_copy store[HK_STORE_OPS];
    uint64_t store_err[HK_STORE_OPS][HK_SERR__COUNT];
    struct series_copy *ser;
    size_t nser, capser;
    struct source_copy *src;
    size_t nsrc, capsrc;
    uint64_t alog_dropped;
    unsigned workers;
};

static void *grow(void *p, size_t *cap, size_t need, size_t elem)
{
    if (need <= *cap)
        return p;
    size_t c = *cap ? *cap : 64;
    while (c < need)
        c *= 2;
    p = realloc(p, c * elem);
    if (!p)
        abort();
    *cap = c;
    return p;
}

static void copy_hist(struct series_copy *dst, struct hk_hist *h)
{
    for (int i = 0; i <= HK_HIST_BOUNDS; i++)
        dst->b[i] += hk_ctr_get(&h->b[i]);
    dst->sum_ns += hk_ctr_get(&h->sum_ns);
}

static void gather_one(struct hk_obs *o, void *arg)
{
    struct gather *g = arg;
    g->workers++;
    for (int i = 0; i < HK_C__COUNT; i++)
        g->c[i] += hk_ctr_get(&o->c[i]);
    g->alog_dropped += hk_obs_access_log_dropped(o);
    for (int i = 0; i < HK_REJ__COUNT; i++)
        g->rejected[i] += hk_ctr_get(&o->rejected[i]);
    for (int i = 0; i < HK_AUTHR__COUNT; i++)
        g->auth[i] += hk_ctr_get(&o->auth[i]);
    for (int k = 0; k < HK_STORE_OPS; k++) {
        copy_hist(&g->store[k], &o->store[k]);
        for (int e = 0; e < HK_SERR__COUNT; e++)
            g->store_err[k][e] += hk_ctr_get(&o->store_err[k][e]);
    }
    for (int i = 0; i < HK_SERIES_MAX; i++) {
        uint32_t key = atomic_load_explicit(&o->series[i].key, memory_order_acquire);
        if (!key)
            continue;
        g->ser = grow(g->ser, &g->capser, g->nser + 1, sizeof *g->ser);
        struct series_copy *d = &g->ser[g->nser++];
        memset(d, 0, sizeof *d);
        d->key = key;
        copy_hist(d, &o->series[i].h);
    }
    for (unsigned i = 0; i < o->nsources; i++) {
        struct hk_source_slot *sl = &o->sources[i];
        uint32_t len = atomic_load_explicit(&sl->len, memory_order_acquire);
        if (!len)
            continue;
        g->src = grow(g->src, &g->capsrc, g->nsrc + 1, sizeof *g->src);
        struct source_copy *d = &g->src[g->nsrc++];
        d->name = malloc(len);
        if (!d->name)
            abort();
        memcpy(d->name, sl->name, len);
        d->len = len;
        d->n = hk_ctr_get(&sl->n);
    }
}

static int by_key(const void *a, const void *b)
{
    uint32_t x = ((const struct series_copy *)a)->key, y = ((const struct series_copy *)b)->key;
    return x < y ? -1 : x > y;
}

static int by_name(const void *a, const void *b)
{
    const struct source_copy *x = a, *y = b;
    size_t n = x->len < y->len ? x->len : y->len;
    int c = memcmp(x->name, y->name, n);
    return c ? c : x->len < y->len ? -1 : x->len > y->len;
}

static int by_count_desc(const void *a, const void *b)
{
    const struct source_copy *x = a, *y = b;
    if (x->n != y->n)
        return x->n > y->n ? -1 : 1;
    return by_name(a, b);
}

/* qsort's base may not be NULL, even for zero elements. */
static void sort(void *base, size_t n, size_t size, int (*cmp)(const void *, const void *))
{
    if (n > 1)
        qsort(base, n, size, cmp);
}

/* ---- text helpers ---- */

static void family(struct hk_buf *b, const char *name, const char *type, const char *help)
{
    hk_buf_puts(b, "# HELP ");
    hk_buf_puts(b, name);
    hk_buf_putc(b, ' ');
    hk_buf_puts(b, help);
    hk_buf_puts(b, "\n# TYPE ");
    hk_buf_puts(b, name);
    hk_buf_putc(b, ' ');
    hk_buf_puts(b, type);
    hk_buf_putc(b, '\n');
}

/* A label value, escaped as the exposition format requires. The format
 * knows only three escapes (backslash, quote, LF); a raw CR or other
 * control character would end the line for some readers and let a sender
 * forge samples, and an unknown escape such as \r fails the whole scrape,
 * so those become U+FFFD. */
static void label_value(struct hk_buf *b, const char *p, size_t n)
{
    hk_buf_putc(b, '"');
    for (size_t i = 0; i < n; i++) {
        char c = p[i];
        if (c == '\\' || c == '"') {
            hk_buf_putc(b, '\\');
            hk_buf_putc(b, c);
        } else if (c == '\n') {
            hk_buf_put(b, "\\n", 2);
        } else if (((unsigned char)c < 0x20 && c != '\t') || c == 0x7f) {
            hk_buf_put(b, "\xef\xbf\xbd", 3);
        } else {
            hk_buf_putc(b, c);
        }
    }
    hk_buf_putc(b, '"');
}

static void sample_u64(struct hk_buf *b, const char *name, const char *labels, uint64_t v)
{
    hk_buf_puts(b, name);
    if (labels && *labels) {
        hk_buf_putc(b, '{');
        hk_buf_puts(b, labels);
        hk_buf_putc(b, '}');
    }
    hk_buf_putc(b, ' ');
    hk_buf_put_u64(b, v);
    hk_buf_putc(b, '\n');
}

/* Nanoseconds as exact decimal seconds. */
static void put_seconds_ns(struct hk_buf *b, uint64_t ns)
{
    hk_buf_put_u64(b, ns / 1000000000u);
    char frac[10];
    uint64_t f = ns % 1000000000u;
    frac[0] = '.';
    for (int i = 9; i >= 1; i--) {
        frac[i] = (char)('0' + f % 10);
        f /= 10;
    }
    hk_buf_put(b, frac, 10);
}

static char *put_u64_raw(char *p, uint64_t v)
{
    char tmp[20];
    int n = 0;
    do {
        tmp[n++] = (char)('0' + v % 10);
        v /= 10;
    } while (v);
    while (n)
        *p++ = tmp[--n];
    return p;
}

static char *put_raw(char *p, const char *s, size_t n)
{
    memcpy(p, s, n);
    return p + n;
}

/* name_bucket{labels,le="..."} cumulative..., +Inf, name_count == +Inf,
 * name_sum. The bulk of a scrape: written through one reservation. */
static void histogram(struct hk_buf *b, const char *name, const char *labels, size_t llen,
                      const struct series_copy *h)
{
    size_t nlen = strlen(name);
    size_t line = nlen + llen + 8 + 5 + 3 + 20 + 1;
    char *p = hk_buf_reserve(b, (HK_HIST_BOUNDS + 3) * (line + 8) + 64);
    char *start = p;
    uint64_t cum = 0;
    for (int i = 0; i <= HK_HIST_BOUNDS; i++) {
        cum += h->b[i];
        p = put_raw(p, name, nlen);
        p = put_raw(p, "_bucket{", 8);
        p = put_raw(p, labels, llen);
        p = put_raw(p, ",le=\"", 5);
        if (i < HK_HIST_BOUNDS) {
            p = put_raw(p, hk_hist_le[i], strlen(hk_hist_le[i]));
        } else {
            p = put_raw(p, "+Inf", 4);
        }
        p = put_raw(p, "\"} ", 3);
        p = put_u64_raw(p, cum);
        *p++ = '\n';
    }
    p = put_raw(p, name, nlen);
    p = put_raw(p, "_count{", 7);
    p = put_raw(p, labels, llen);
    p = put_raw(p, "} ", 2);
    p = put_u64_raw(p, cum);
    *p++ = '\n';
    p = put_raw(p, name, nlen);
    p = put_raw(p, "_sum{", 5);
    p = put_raw(p, labels, llen);
    p = put_raw(p, "} ", 2);
    b->len += (size_t)(p - start);
    put_seconds_ns(b, h->sum_ns);
    hk_buf_putc(b, '\n');
}

static const char *outcome(unsigned status)
{
    switch (status / 100) {
    case 1: return "INFORMATIONAL";
    case 2: return "SUCCESS";
    case 3: return "REDIRECTION";
    case 4: return "CLIENT_ERROR";
    case 5: return "SERVER_ERROR";
    default: return "UNKNOWN";
    }
}

/* ---- process facts ---- */

static struct {
    double start_time;
} proc;

/* The kernel's record of the exec: boot time (/proc/stat btime) plus the
 * process's starttime in clock ticks (/proc/self/stat field 22), as the
 * Prometheus client libraries compute it; without /proc/stat, boot time
 * from CLOCK_BOOTTIME. */
static double start_time(void)
{
    char buf[1024];
    double btime = 0;
    unsigned long long ticks = 0;
    FILE *f = fopen("/proc/stat", "r");
    if (f) {
        while (fgets(buf, sizeof buf, f))
            if (sscanf(buf, "btime %lf", &btime) == 1)
                break;
        fclose(f);
    }
    f = fopen("/proc/self/stat", "r");
    if (f) {
        size_t n = fread(buf, 1, sizeof buf - 1, f);
        buf[n] = 0;
        fclose(f);
        /* After the ")" closing the command name, each space starts the next
         * field: state is field 3, starttime field 22. */
        char *p = strrchr(buf, ')');
        int field = 2;
        for (p = p ? p + 1 : buf + n; *p && field < 22; p++)
            if (*p == ' ')
                field++;
        if (sscanf(p, "%llu", &ticks) != 1)
            ticks = 0;
    }
    double since_boot = (double)ticks / (double)sysconf(_SC_CLK_TCK);
    if (btime > 0)
        return btime + since_boot;
    /* /proc/stat hidden (systemd's ProcSubset=pid): boot time is now less
     * the time since boot, both from clocks a process can read. */
    struct timespec bt;
    if (ticks == 0 || clock_gettime(CLOCK_BOOTTIME, &bt) != 0)
        return (double)hk_wall_us() / 1e6;
    return (double)hk_wall_us() / 1e6 - ((double)bt.tv_sec + (double)bt.tv_nsec / 1e9) + since_boot;
}

static void proc_init(void)
{
    proc.start_time = start_time();
}

static int count_fds(void)
{
    DIR *d = opendir("/proc/self/fd");
    if (!d)
        return -1;
    int n = 0, self = dirfd(d);
    struct dirent *e;
    while ((e = readdir(d)))
        if (e->d_name[0] != '.' && atoi(e->d_name) != self)
            n++;
    closedir(d);
    return n;
}

static void put_double(struct hk_buf *b, const char *name, double v, int decimals)
{
    hk_buf_printf(b, "%s %.*f\n", name, decimals, v);
}

static void process_metrics(struct hk_buf *b)
{
    static pthread_once_t once = PTHREAD_ONCE_INIT;
    pthread_once(&once, proc_init);
    struct rusage ru;
    if (getrusage(RUSAGE_SELF, &ru) == 0) {
        family(b, "process_cpu_seconds_total", "counter", "Total user and system CPU time spent in seconds.");
        double s = (double)ru.ru_utime.tv_sec + (double)ru.ru_stime.tv_sec +
                   (double)(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) / 1e6;
        put_double(b, "process_cpu_seconds_total", s, 6);
    }
    uint64_t rss, vsize;
    hk_proc_memory(&rss, &vsize);
    if (rss) {
        family(b, "process_resident_memory_bytes", "gauge", "Resident memory size in bytes.");
        sample_u64(b, "process_resident_memory_bytes", NULL, rss);
        family(b, "process_virtual_memory_bytes", "gauge", "Virtual memory size in bytes.");
        sample_u64(b, "process_virtual_memory_bytes", NULL, vsize);
    }
    int fds = count_fds();
    if (fds >= 0) {
        family(b, "process_open_fds", "gauge", "Number of open file descriptors.");
        sample_u64(b, "process_open_fds", NULL, (uint64_t)fds);
    }
    struct rlimit rl;
    if (getrlimit(RLIMIT_NOFILE, &rl) == 0) {
        family(b, "process_max_fds", "gauge", "Maximum number of open file descriptors.");
        sample_u64(b, "process_max_fds", NULL, rl.rlim_cur == RLIM_INFINITY ? UINT64_MAX : (uint64_t)rl.rlim_cur);
    }
    family(b, "process_start_time_seconds", "gauge", "Start time of the process since unix epoch in seconds.");
    put_double(b, "process_start_time_seconds", proc.start_time, 2);
}

/* ---- the exposition ---- */

static const char *uri_name(const struct hk_metrics_in *in, unsigned i)
{
    if (i == HK_URI_NOT_FOUND)
        return "NOT_FOUND";
    return i < in->nuri && in->uri_names[i] ? in->uri_names[i] : "UNKNOWN";
}

static void request_metrics(struct hk_buf *b, struct gather *g, const struct hk_metrics_in *in)
{
    family(b, "http_server_requests_seconds", "histogram",
           "Duration of HTTP server requests, by method, route template (uri), status and outcome.");
    sort(g->ser, g->nser, sizeof *g->ser, by_key);
    struct hk_buf l = HK_BUF_INIT;
    for (size_t i = 0; i < g->nser;) {
        struct series_copy m = g->ser[i];
        size_t j = i + 1;
        for (; j < g->nser && g->ser[j].key == m.key; j++) {
            for (int k = 0; k <= HK_HIST_BOUNDS; k++)
                m.b[k] += g->ser[j].b[k];
            m.sum_ns += g->ser[j].sum_ns;
        }
        i = j;
        unsigned status = m.key & 1023, method = (m.key >> 10) & 15, uri = m.key >> 14;
        l.len = 0;
        char st[8];
        size_t stn = 0;
        unsigned v = status;
        do {
            st[stn++] = (char)('0' + v % 10);
            v /= 10;
        } while (v && stn < sizeof st);
        hk_buf_puts(&l, "method=\"");
        hk_buf_puts(&l, hk_obs_method_name(method));
        hk_buf_puts(&l, "\",outcome=\"");
        hk_buf_puts(&l, outcome(status));
        hk_buf_puts(&l, "\",status=\"");
        while (stn)
            hk_buf_putc(&l, st[--stn]);
        hk_buf_puts(&l, "\",uri=");
        const char *u = uri_name(in, uri);
        label_value(&l, u, strlen(u));
        histogram(b, "http_server_requests_seconds", l.p, l.len, &m);
    }
    hk_buf_free(&l);
}

static void source_metrics(struct hk_buf *b, struct gather *g, unsigned top)
{
    family(b, "hookd_webhooks_received_total", "counter",
           "Webhooks stored, by source: the HOOKD_METRICS_TOP_SOURCES busiest sources, the rest as source=\"other\".");
    sort(g->src, g->nsrc, sizeof *g->src, by_name);
    size_t n = 0;
    for (size_t i = 0; i < g->nsrc; i++) {
        if (n && by_name(&g->src[n - 1], &g->src[i]) == 0) {
            g->src[n - 1].n += g->src[i].n;
            free(g->src[i].name);
            continue;
        }
        g->src[n++] = g->src[i];
    }
    g->nsrc = n;
    sort(g->src, g->nsrc, sizeof *g->src, by_count_desc);
    uint64_t other = g->c[HK_C_RECEIVED_OTHER];
    size_t shown = g->nsrc < top ? g->nsrc : top;
    /* Sorted by name for a stable output. */
    sort(g->src, shown, sizeof *g->src, by_name);
    for (size_t i = 0; i < g->nsrc; i++) {
        if (i >= shown) {
            other += g->src[i].n;
            continue;
        }
        hk_buf_puts(b, "hookd_webhooks_received_total{source=");
        label_value(b, g->src[i].name, g->src[i].len);
        hk_buf_puts(b, "} ");
        hk_buf_put_u64(b, g->src[i].n);
        hk_buf_putc(b, '\n');
    }
    sample_u64(b, "hookd_webhooks_received_total", "source=\"other\"", other);
}

static void store_metrics(struct hk_buf *b, struct gather *g, const struct hk_metrics_in *in)
{
    const char *backend = in->backend ? in->backend : "none";
    char labels[128];
    family(b, "hookd_store_query_seconds", "histogram",
           "Store operation latency, from submit to completion (queueing and group commit included).");
    for (int k = 0; k < HK_STORE_OPS; k++) {
        int n = snprintf(labels, sizeof labels, "backend=\"%s\",operation=\"%s\"", backend, hk_store_op_names[k]);
        histogram(b, "hookd_store_query_seconds", labels, (size_t)n, &g->store[k]);
    }
    family(b, "hookd_store_errors_total", "counter", "Store operations that failed, by operation and error.");
    for (int k = 0; k < HK_STORE_OPS; k++)
        for (int e = 0; e < HK_SERR__COUNT; e++) {
            snprintf(labels, sizeof labels, "backend=\"%s\",error=\"%s\",operation=\"%s\"", backend,
                     hk_store_err_names[e], hk_store_op_names[k]);
            sample_u64(b, "hookd_store_errors_total", labels, g->store_err[k][e]);
        }
    snprintf(labels, sizeof labels, "backend=\"%s\"", backend);
    const struct {
        int64_t v;
        const char *name, *help;
    } gauges[] = {
        {in->store_conns_open, "hookd_store_connections_open", "Database connections the store holds open."},
        {in->store_conns_busy, "hookd_store_connections_busy", "Database connections running a query now."},
        {in->store_queue_depth, "hookd_store_queue_depth",
         "Store requests waiting for a connection (SQLite: queued writes)."},
        {in->store_queue_capacity, "hookd_store_queue_capacity",
         "Store requests that may wait before new ones are refused with 503."},
    };
    for (size_t i = 0; i < sizeof gauges / sizeof gauges[0]; i++) {
        int64_t v = gauges[i].v;
        if (v < 0)
            continue;
        family(b, gauges[i].name, "gauge", gauges[i].help);
        sample_u64(b, gauges[i].name, labels, (uint64_t)v);
    }
}

static void counter(struct hk_buf *b, const char *name, const char *help, uint64_t v)
{
    family(b, name, "counter", help);
    sample_u64(b, name, NULL, v);
}

static void ingress_sample(struct hk_buf *b, const char *name, const char *key, const char *value,
                           const char *source, uint64_t v)
{
    hk_buf_puts(b, name);
    hk_buf_puts(b, "{");
    hk_buf_puts(b, key);
    hk_buf_puts(b, "=\"");
    hk_buf_puts(b, value);
    hk_buf_puts(b, "\",source=");
    label_value(b, source, strlen(source));
    hk_buf_puts(b, "} ");
    hk_buf_put_u64(b, v);
    hk_buf_putc(b, '\n');
}

static void ingress_metrics(struct hk_buf *b, const struct hk_metrics_ingress *in)
{
    if (!in->on)
        return;
    family(b, "hookd_ingress_total", "counter",
           "Deliveries to POST /hooks/{source}, by source and result (stored, duplicate, handshake, rejected).");
    for (size_t i = 0; i < in->nrows; i++)
        for (unsigned k = 0; k < in->nresults; k++)
            ingress_sample(b, "hookd_ingress_total", "result", in->result_names[k], in->rows[i].source,
                           in->rows[i].result[k]);
    family(b, "hookd_ingress_rejected_total", "counter",
           "Deliveries refused, by source and reason (the problem document's reason); only reasons seen.");
    for (size_t i = 0; i < in->nrows; i++)
        for (unsigned k = 0; k < in->nreasons; k++)
            if (in->rows[i].reason[k])
                ingress_sample(b, "hookd_ingress_rejected_total", "reason", in->reason_names[k], in->rows[i].source,
                               in->rows[i].reason[k]);
    family(b, "hookd_ingress_handshakes_total", "counter", "Provider handshakes answered, by provider.");
    for (unsigned k = 0; k < in->nhandshakes; k++) {
        hk_buf_puts(b, "hookd_ingress_handshakes_total{provider=\"");
        hk_buf_puts(b, in->handshake_names[k]);
        hk_buf_puts(b, "\"} ");
        hk_buf_put_u64(b, in->handshakes[k]);
        hk_buf_putc(b, '\n');
    }
    family(b, "hookd_ingress_inflight_bytes", "gauge", "Delivery body bytes being received or stored now.");
    sample_u64(b, "hookd_ingress_inflight_bytes", NULL, in->inflight_bytes);
    counter(b, "hookd_sources_reloads_total", "Sources files loaded (at start and on SIGHUP).", in->reloads);
    counter(b, "hookd_sources_reload_failures_total", "Sources files refused on SIGHUP (the old sources stay).",
            in->reload_failures);
}

#define PROC_TEXT_MAX_AGE_NS 1000000000u

void hk_metrics_render(struct hk_buf *b, const struct hk_metrics_in *in, struct hk_obs *self)
{
    struct gather g;
    memset(&g, 0, sizeof g);
    hk_obs_each(gather_one, &g);

    request_metrics(b, &g, in);
    source_metrics(b, &g, in->top_sources);
    family(b, "hookd_webhooks_rejected_total", "counter", "Webhook deliveries refused, by reason.");
    for (int i = 0; i < HK_REJ__COUNT; i++) {
        hk_buf_puts(b, "hookd_webhooks_rejected_total{reason=\"");
        hk_buf_puts(b, hk_reject_names[i]);
        hk_buf_puts(b, "\"} ");
        hk_buf_put_u64(b, g.rejected[i]);
        hk_buf_putc(b, '\n');
    }
    store_metrics(b, &g, in);
    ingress_metrics(b, &in->ingress);
    family(b, "hookd_auth_total", "counter", "Credentials checked, by result (requests that needed one).");
    for (int i = 0; i < HK_AUTHR__COUNT; i++) {
        hk_buf_puts(b, "hookd_auth_total{result=\"");
        hk_buf_puts(b, hk_auth_result_names[i]);
        hk_buf_puts(b, "\"} ");
        hk_buf_put_u64(b, g.auth[i]);
        hk_buf_putc(b, '\n');
    }

    const struct hk_metrics_http *h = &in->http;
    uint64_t acc = h->accepted, closed = h->closed;
    family(b, "hookd_connections_open", "gauge", "TCP connections open now.");
    sample_u64(b, "hookd_connections_open", NULL, acc > closed ? acc - closed : 0);
    counter(b, "hookd_connections_accepted_total", "TCP connections accepted.", acc);
    counter(b, "hookd_connections_closed_total", "TCP connections closed.", closed);
    counter(b, "hookd_connections_rejected_total",
            "TCP connections answered 503 and closed because of the connection limit.", h->rejected);
    counter(b, "hookd_connections_evicted_total",
            "Idle kept-alive connections closed to admit a new client at the connection limit.",
            h->evicted);
    counter(b, "hookd_connections_shed_total",
            "Connections closed because their peer stopped reading: send timeout or output buffer cap.",
            h->shed);
    counter(b, "hookd_accept_failures_total",
            "Failed accepts (out of file descriptors); each pauses accepting on its loop briefly.",
            h->accept_failed);
    counter(b, "hookd_http_received_bytes_total", "Bytes read from TCP connections.", h->bytes_in);
    counter(b, "hookd_http_sent_bytes_total", "Bytes written to TCP connections.", h->bytes_out);
    counter(b, "hookd_access_log_dropped_total", "Access-log lines dropped because stderr did not keep up.",
            g.alog_dropped);
    counter(b, "hookd_metrics_series_overflow_total",
            "Requests left out of http_server_requests_seconds because a worker's series table was full.",
            g.c[HK_C_SERIES_OVERFLOW]);
    family(b, "hookd_event_loops", "gauge", "Event loops (worker threads) serving requests.");
    sample_u64(b, "hookd_event_loops", NULL, g.workers);

    if (self) {
        uint64_t now = hk_mono_ns();
        if (!self->proc_text.len || now - self->proc_text_ns >= PROC_TEXT_MAX_AGE_NS) {
            self->proc_text.len = 0;
            process_metrics(&self->proc_text);
            self->proc_text_ns = now;
        }
        hk_buf_put(b, self->proc_text.p, self->proc_text.len);
    } else {
        process_metrics(b);
    }
    family(b, "hookd_build_info", "gauge", "Build information; the value is always 1.");
    sample_u64(b, "hookd_build_info",
               "compiler=\"" HK_COMPILER "\",variant=\"" HK_VARIANT "\",version=\"" HK_VERSION "\"", 1);

    for (size_t i = 0; i < g.nsrc; i++)
        free(g.src[i].name);
    free(g.src);
    free(g.ser);
}
