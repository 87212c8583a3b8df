/* SPDX-License-Identifier: MIT
 * Per-worker observability state: request counters and latency histograms,
 * the request-id generator and the access log. Each event loop owns one
 * hk_obs and is the only thread that writes it; a scrape on any loop reads
 * every registered hk_obs (see hk_obs_each). */
#ifndef HK_OBS_H
#define HK_OBS_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/buf.h"

struct hk_worker;
struct hk_req;
struct hk_access_log;
struct hk_store;

/* One writer (the owning loop), any number of readers (scrapes on other
 * loops). Relaxed loads and stores compile to plain moves on the platforms
 * hookd targets; the owner never needs a read-modify-write, so no lock
 * prefix and no shared cache line is written on the request path. A reader
 * may see a histogram mid-update (a bucket bumped, its sum not yet): the
 * exposition derives _count from the buckets so it stays consistent, and
 * the sum catches up by the next scrape. */
typedef _Atomic uint64_t hk_ctr;

static inline void hk_ctr_add(hk_ctr *c, uint64_t n)
{
    atomic_store_explicit(c, atomic_load_explicit(c, memory_order_relaxed) + n, memory_order_relaxed);
}

static inline uint64_t hk_ctr_get(hk_ctr *c)
{
    return atomic_load_explicit(c, memory_order_relaxed);
}

/* Latency histogram bounds, in seconds and nanoseconds (finite buckets; the
 * last slot counts everything above the largest bound). */
#define HK_HIST_BOUNDS 16
extern const char *const hk_hist_le[HK_HIST_BOUNDS];
extern const uint64_t hk_hist_bound_ns[HK_HIST_BOUNDS];

struct hk_hist {
    hk_ctr b[HK_HIST_BOUNDS + 1];   /* per bucket, NOT cumulative */
    hk_ctr sum_ns;
};

void hk_hist_observe(struct hk_hist *h, uint64_t ns);

/* Plain per-worker counters. */
enum hk_counter {
    HK_C_CONN_ACCEPTED,
    HK_C_CONN_CLOSED,
    HK_C_CONN_REJECTED,        /* over the connection limit: 503 and close */
    HK_C_CONN_EVICTED,         /* idle kept-alive connections closed to admit a new client */
    HK_C_CONN_SHED,            /* closed: output stalled past the send timeout or over the buffer cap */
    HK_C_ACCEPT_FAILED,        /* accept() failures (out of descriptors): accepting pauses */
    HK_C_BYTES_IN,
    HK_C_BYTES_OUT,
    HK_C_RECEIVED_OTHER,       /* webhooks whose source found no slot */
    HK_C_SERIES_OVERFLOW,      /* requests not recorded: series table full */
    HK_C_ACCESS_LOG_DROPPED,   /* access-log lines dropped: writer too slow */
    HK_C__COUNT
};

/* Why POST /api/webhooks (or a request the parser refused) was rejected. */
enum hk_reject {
    HK_REJ_VALIDATION,
    HK_REJ_INVALID_JSON,
    HK_REJ_TOO_LARGE,
    HK_REJ_HEADERS_TOO_LARGE,
    HK_REJ_UNSUPPORTED_MEDIA_TYPE,
    HK_REJ_UNAUTHORIZED,
    HK_REJ_INVALID_IDEMPOTENCY_KEY,
    HK_REJ_IDEMPOTENCY_CONFLICT,
    HK_REJ_STORE_UNAVAILABLE,
    HK_REJ__COUNT
};
extern const char *const hk_reject_names[HK_REJ__COUNT];

/* Store failures by kind (not-found and idempotency conflicts are answers,
 * not failures, and are not counted). */
enum hk_store_err { HK_SERR_BUSY, HK_SERR_UNAVAILABLE, HK_SERR_TIMEOUT, HK_SERR_FAILED, HK_SERR__COUNT };
extern const char *const hk_store_err_names[HK_SERR__COUNT];
#define HK_STORE_OPS 4                 /* enum hk_op_kind */
extern const char *const hk_store_op_names[HK_STORE_OPS];

/* http_server_requests_seconds series: key = uri << 14 | method << 10 | status. */
#define HK_SERIES_MAX 256
struct hk_series {
    _Atomic uint32_t key;              /* 0: free; published after h is zeroed */
    struct hk_hist h;
};

/* hookd_webhooks_received_total: the first `nsources` distinct sources this
 * worker sees get a slot each; the rest count as "other". */
#define HK_SOURCE_NAME_MAX 1024        /* bytes: 255 code points of up to 4 bytes */
struct hk_source_slot {
    _Atomic uint32_t len;              /* 0: free; published after name */
    uint32_t hash;
    hk_ctr n;
    char *name;
};

#define HK_REQ_ID_MAX 128

struct hk_obs {
    hk_ctr c[HK_C__COUNT];
    hk_ctr rejected[HK_REJ__COUNT];
    struct hk_hist store[HK_STORE_OPS];
    hk_ctr store_err[HK_STORE_OPS][HK_SERR__COUNT];
    struct hk_series series[HK_SERIES_MAX];
    struct hk_source_slot *sources;
    unsigned nsources;
    struct hk_access_log *alog;        /* NULL when the access log is off */
    struct hk_buf proc_text;           /* process_* families, rendered at most once a second */
    uint64_t proc_text_ns;
    char rid_prefix[24];               /* "<12 hex>-<worker>-" */
    size_t rid_prefix_len;
    uint64_t rid_next;
    struct hk_obs *prev, *next;        /* registry; guarded by its lock */
};

/* Allocate w->obs, register it for scrapes, start the access log when
 * configured. Called on the loop's thread once the loop exists. Aborts on OOM. */
void hk_obs_init(struct hk_worker *w);
/* Close the loop handles hk_obs holds (before the loop's last run). */
void hk_obs_close(struct hk_worker *w);
/* After the loop's last run: unregister, write what the access log still
 * holds, free. */
void hk_obs_free(struct hk_worker *w);

/* A request starts: stamp r->start_ns, take the request id from the given
 * X-Request-Id (`id`, n bytes, may be NULL) when it is 1..HK_REQ_ID_MAX
 * printable ASCII characters, else generate one. */
void hk_obs_begin(struct hk_req *r, const char *id, size_t n);
/* The response is complete: record the request metrics and the access-log
 * line. Uses r->status, r->route, r->method/head, r->resp_bytes. */
void hk_obs_end(struct hk_req *r);

static inline void hk_obs_count(struct hk_obs *o, enum hk_counter c, uint64_t n)
{
    hk_ctr_add(&o->c[c], n);
}

void hk_obs_rejected(struct hk_req *r, enum hk_reject why);
/* A webhook was stored (201): count it under its source. */
void hk_obs_received(struct hk_req *r, const char *source, size_t n);
/* Store op timing: start before submit/list_next, done in on_done (or when
 * submit itself fails, with its error). */
void hk_obs_store_start(struct hk_req *r);
void hk_obs_store_done(struct hk_req *r, int kind, int status);

/* The uri label of a request: its route template, "NOT_FOUND" for a path no
 * route matches, "UNKNOWN" for a request refused before routing. */
const char *hk_obs_uri(const struct hk_req *r);
/* Label values behind the series key's uri and method fields. */
const char *hk_obs_uri_name(unsigned i);
const char *hk_obs_method_name(unsigned i);

/* Run `fn` for every registered hk_obs, holding the registry lock (scrapes
 * only: the lock is never taken on the request path). */
void hk_obs_each(void (*fn)(struct hk_obs *o, void *arg), void *arg);

#endif
