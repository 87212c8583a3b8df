/* SPDX-License-Identifier: MIT
 * Per-loop observability state: request counters and latency histograms,
 * and the access log. Each event loop owns one hk_obs and is the only
 * thread that writes it; a scrape on any loop reads every registered hk_obs
 * (see hk_obs_each). A leaf: callers hand it plain values (label indexes,
 * status, bytes, durations), and it knows nothing of HTTP or the store. */
#ifndef HK_OBS_H
#define HK_OBS_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <uv.h>

#include "core/buf.h"
#include "core/ctr.h"
#include "obs/request.h"

struct hk_access_log;

/* A reader may see a histogram mid-update (a bucket bumped, its sum not
 * yet): the exposition derives _count from the buckets so it stays
 * consistent, and the sum catches up by the next scrape. */
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

/* Plain per-loop counters. */
enum hk_counter {
    HK_C_RECEIVED_OTHER,       /* webhooks whose source found no slot */
    HK_C_SERIES_OVERFLOW,      /* requests not recorded: series table full */
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
/* Store operations, in the order of store.h's enum hk_op_kind: insert,
 * get, delete, list, then the credential ops. */
#define HK_STORE_OPS 16
extern const char *const hk_store_op_names[HK_STORE_OPS];

/* hookd_auth_total{result}: how each check of a credential ended. */
enum hk_obs_auth {
    HK_AUTHR_OK, HK_AUTHR_MISSING, HK_AUTHR_MALFORMED, HK_AUTHR_UNKNOWN, HK_AUTHR_EXPIRED,
    HK_AUTHR_REVOKED, HK_AUTHR_INSUFFICIENT_SCOPE, HK_AUTHR_RATE_LIMITED, HK_AUTHR_UNAVAILABLE,
    HK_AUTHR__COUNT
};
extern const char *const hk_auth_result_names[HK_AUTHR__COUNT];

/* The method label (4 bits of a series key). */
enum hk_obs_method {
    HK_M_UNKNOWN, HK_M_GET, HK_M_HEAD, HK_M_POST, HK_M_PUT, HK_M_DELETE, HK_M_PATCH, HK_M_OPTIONS,
    HK_M_TRACE, HK_M_CONNECT, HK_M_OTHER, HK_M__COUNT
};

/* The uri label: 0 UNKNOWN (refused before routing), 1 NOT_FOUND, then the
 * caller's route labels from 2 on (at most HK_OBS_URI_MAX in all). */
enum { HK_URI_UNKNOWN = 0, HK_URI_NOT_FOUND = 1, HK_OBS_URI_MAX = 1024 };


/* http_server_requests_seconds series: key = uri << 14 | method << 10 | status. */
#define HK_SERIES_MAX 256
struct hk_series {
    _Atomic uint32_t key;              /* 0: free; published after h is zeroed */
    struct hk_hist h;
};

/* hookd_webhooks_received_total: the first `nsources` distinct sources this
 * worker sees get a slot each; the rest count as "other". */
#define HK_OBS_SOURCE_MAX 1024        /* bytes: 255 code points of up to 4 bytes */
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
    hk_ctr auth[HK_AUTHR__COUNT];
    struct hk_hist store[HK_STORE_OPS];
    hk_ctr store_err[HK_STORE_OPS][HK_SERR__COUNT];
    struct hk_series series[HK_SERIES_MAX];
    struct hk_source_slot *sources;
    unsigned nsources;
    struct hk_access_log *alog;        /* NULL when the access log is off */
    struct hk_buf proc_text;           /* process_* families, rendered at most once a second */
    uint64_t proc_text_ns;
    struct hk_obs *prev, *next;        /* registry; guarded by its lock */
};

/* A loop's hk_obs, registered for scrapes, with the access log when
 * `access_log`; `nsources` bounds the sources it counts by name. On the
 * loop's thread once the loop exists. Aborts on OOM. */
struct hk_obs *hk_obs_new(uv_loop_t *loop, unsigned nsources, bool access_log);
/* Close the loop handles hk_obs holds (before the loop's last run). */
void hk_obs_close(struct hk_obs *o);
/* After the loop's last run: unregister, write what the access log still
 * holds, free. */
void hk_obs_free(struct hk_obs *o);

/* A request is complete: its series, and its access-log line. */
void hk_obs_request(struct hk_obs *o, const struct hk_obs_request *q);
/* A credential checked, by result. */
void hk_obs_auth(struct hk_obs *o, enum hk_obs_auth result);
/* A webhook refused, by reason. */
void hk_obs_rejected(struct hk_obs *o, enum hk_reject why);
/* A webhook was stored (201): count it under its source. */
void hk_obs_received(struct hk_obs *o, const char *source, size_t n);
/* A store op of `kind` (enum hk_op_kind) finished with `status` (0 or an
 * HK_E* code) after dur_ns. */
void hk_obs_store(struct hk_obs *o, int kind, int status, uint64_t dur_ns);

/* Label value of a method index. */
const char *hk_obs_method_name(unsigned i);
/* Access-log lines dropped so far by this loop (stderr too slow). */
uint64_t hk_obs_access_log_dropped(struct hk_obs *o);

/* Run `fn` for every registered hk_obs, holding the registry lock (scrapes
 * only: the lock is never taken on the request path). */
void hk_obs_each(void (*fn)(struct hk_obs *o, void *arg), void *arg);

#endif
