/* SPDX-License-Identifier: MIT
 * Per-loop observability: the counters and histograms a request updates
 * (plain stores on memory only its own loop writes), and the registry that
 * lets a scrape on any loop read every loop's numbers. */
#include "obs/obs.h"

#if defined(__SANITIZE_ADDRESS__)
#define HK_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define HK_ASAN 1
#endif
#endif
#ifdef HK_ASAN
#include <sanitizer/lsan_interface.h>
#define LSAN_ROOT(p, n) __lsan_register_root_region((p), (n))
#define LSAN_UNROOT(p, n) __lsan_unregister_root_region((p), (n))
#endif
#ifndef LSAN_ROOT
#define LSAN_ROOT(p, n) ((void)(p), (void)(n))
#define LSAN_UNROOT(p, n) ((void)(p), (void)(n))
#endif

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "core/err.h"
#include "obs/access_log.h"

const char *const hk_hist_le[HK_HIST_BOUNDS] = {
    "0.0001", "0.00025", "0.0005", "0.001", "0.0025", "0.005", "0.01", "0.025",
    "0.05", "0.1", "0.25", "0.5", "1", "2.5", "5", "10",
};
const uint64_t hk_hist_bound_ns[HK_HIST_BOUNDS] = {
    100000, 250000, 500000, 1000000, 2500000, 5000000, 10000000, 25000000,
    50000000, 100000000, 250000000, 500000000, 1000000000, 2500000000, 5000000000, 10000000000,
};

const char *const hk_reject_names[HK_REJ__COUNT] = {
    "validation", "invalid_json", "too_large", "headers_too_large", "unsupported_media_type",
    "unauthorized", "invalid_idempotency_key", "idempotency_conflict", "store_unavailable",
};
const char *const hk_auth_result_names[HK_AUTHR__COUNT] = {
    "ok", "missing", "malformed", "unknown", "expired", "revoked", "insufficient_scope", "rate_limited",
    "unavailable",
};
const char *const hk_store_err_names[HK_SERR__COUNT] = {"busy", "unavailable", "timeout", "failed"};
const char *const hk_store_op_names[HK_STORE_OPS] = {
    "insert", "get", "delete", "list", "token_put", "token_get", "token_list", "token_revoke",
    "session_put", "session_get", "session_delete", "source_stats", "claim", "settle", "redeliver", "purge",
};

static pthread_mutex_t registry_mu = PTHREAD_MUTEX_INITIALIZER;
static struct hk_obs *registry;

void hk_hist_observe(struct hk_hist *h, uint64_t ns)
{
    int i = 0;
    while (i < HK_HIST_BOUNDS && ns > hk_hist_bound_ns[i])
        i++;
    hk_ctr_add(&h->b[i], 1);
    hk_ctr_add(&h->sum_ns, ns);
}

void hk_obs_each(void (*fn)(struct hk_obs *o, void *arg), void *arg)
{
    pthread_mutex_lock(&registry_mu);
    for (struct hk_obs *o = registry; o; o = o->next)
        fn(o, arg);
    pthread_mutex_unlock(&registry_mu);
}

/* The counters, histograms and source slots: about 60 KB, nearly all
 * zero until traffic touches them. A private anonymous mapping hands out
 * zero pages as they are first written; calloc would clear (and so fault
 * in) every page at start, and page faults are the largest part of a cold
 * start on a VM. */
static size_t obs_bytes(unsigned nsources)
{
    return sizeof(struct hk_obs) + (size_t)nsources * (sizeof(struct hk_source_slot) + HK_OBS_SOURCE_MAX);
}

struct hk_obs *hk_obs_new(uv_loop_t *loop, unsigned nsources, bool access_log)
{
    void *mem = mmap(NULL, obs_bytes(nsources), PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (mem == MAP_FAILED)
        abort();
    /* LeakSanitizer scans the heap and globals, not private mappings: the
     * buffers this block points to would look leaked. */
    LSAN_ROOT(mem, obs_bytes(nsources));
    struct hk_obs *o = mem;
    o->nsources = nsources;
    if (o->nsources) {
        o->sources = (struct hk_source_slot *)(o + 1);
        char *names = (char *)(o->sources + o->nsources);
        for (unsigned i = 0; i < o->nsources; i++)
            o->sources[i].name = names + (size_t)i * HK_OBS_SOURCE_MAX;
    }
    if (access_log)
        o->alog = hk_access_log_new(loop);
    pthread_mutex_lock(&registry_mu);
    o->next = registry;
    if (registry)
        registry->prev = o;
    registry = o;
    pthread_mutex_unlock(&registry_mu);
    return o;
}

void hk_obs_close(struct hk_obs *o)
{
    if (o && o->alog)
        hk_access_log_close(o->alog);
}

void hk_obs_free(struct hk_obs *o)
{
    if (!o)
        return;
    LSAN_UNROOT(o, obs_bytes(o->nsources));
    pthread_mutex_lock(&registry_mu);
    if (o->prev)
        o->prev->next = o->next;
    else
        registry = o->next;
    if (o->next)
        o->next->prev = o->prev;
    pthread_mutex_unlock(&registry_mu);
    if (o->alog)
        hk_access_log_free(o->alog);
    hk_buf_free(&o->proc_text);
    munmap(o, obs_bytes(o->nsources));
}

uint64_t hk_obs_access_log_dropped(struct hk_obs *o)
{
    return o->alog ? hk_access_log_dropped(o->alog) : 0;
}

static const char *const method_names[HK_M__COUNT] = {
    "UNKNOWN", "GET", "HEAD", "POST", "PUT", "DELETE", "PATCH", "OPTIONS", "TRACE", "CONNECT", "OTHER",
};

const char *hk_obs_method_name(unsigned i)
{
    return i < HK_M__COUNT ? method_names[i] : "OTHER";
}

static struct hk_series *series_for(struct hk_obs *o, uint32_t key)
{
    uint32_t h = (key * 2654435761u) >> 24; /* 8 bits: HK_SERIES_MAX slots */
    for (unsigned probe = 0; probe < HK_SERIES_MAX; probe++) {
        struct hk_series *s = &o->series[(h + probe) & (HK_SERIES_MAX - 1)];
        uint32_t k = atomic_load_explicit(&s->key, memory_order_relaxed);
        if (k == key)
            return s;
        if (k == 0) {
            /* The histogram is still zero from calloc: publish the key. */
            atomic_store_explicit(&s->key, key, memory_order_release);
            return s;
        }
    }
    return NULL;
}
_Static_assert((HK_SERIES_MAX & (HK_SERIES_MAX - 1)) == 0 && HK_SERIES_MAX == 256, "series hash takes 8 bits");

void hk_obs_request(struct hk_obs *o, const struct hk_obs_request *q)
{
    int status = q->status > 0 && q->status < 1000 ? q->status : 0;
    unsigned uri = q->uri < HK_OBS_URI_MAX ? q->uri : HK_URI_UNKNOWN;
    unsigned method = q->method < HK_M__COUNT ? q->method : HK_M_OTHER;
    uint32_t key = (uint32_t)uri << 14 | (uint32_t)method << 10 | (uint32_t)status;
    struct hk_series *s = series_for(o, key);
    if (s)
        hk_hist_observe(&s->h, q->dur_ns);
    else
        hk_ctr_add(&o->c[HK_C_SERIES_OVERFLOW], 1);
    if (uri == HK_URI_UNKNOWN) {
        if (status == 413)
            hk_ctr_add(&o->rejected[HK_REJ_TOO_LARGE], 1);
        else if (status == 431)
            hk_ctr_add(&o->rejected[HK_REJ_HEADERS_TOO_LARGE], 1);
    }
    if (o->alog)
        hk_access_log_request(o->alog, q, method_names[method]);
}

void hk_obs_auth(struct hk_obs *o, enum hk_obs_auth result)
{
    if ((unsigned)result < HK_AUTHR__COUNT)
        hk_ctr_add(&o->auth[result], 1);
}

void hk_obs_rejected(struct hk_obs *o, enum hk_reject why)
{
    hk_ctr_add(&o->rejected[why], 1);
}

static uint32_t fnv1a(const char *p, size_t n)
{
    uint32_t h = 2166136261u;
    for (size_t i = 0; i < n; i++)
        h = (h ^ (unsigned char)p[i]) * 16777619u;
    return h;
}

void hk_obs_received(struct hk_obs *o, const char *source, size_t n)
{
    if (n == 0 || n > HK_OBS_SOURCE_MAX) {
        hk_ctr_add(&o->c[HK_C_RECEIVED_OTHER], 1);
        return;
    }
    uint32_t h = fnv1a(source, n);
    for (unsigned i = 0; i < o->nsources; i++) {
        struct hk_source_slot *sl = &o->sources[(h + i) % o->nsources];
        uint32_t len = atomic_load_explicit(&sl->len, memory_order_relaxed);
        if (len == 0) {
            memcpy(sl->name, source, n);
            sl->hash = h;
            hk_ctr_add(&sl->n, 1);
            atomic_store_explicit(&sl->len, (uint32_t)n, memory_order_release);
            return;
        }
        if (len == n && sl->hash == h && memcmp(sl->name, source, n) == 0) {
            hk_ctr_add(&sl->n, 1);
            return;
        }
    }
    hk_ctr_add(&o->c[HK_C_RECEIVED_OTHER], 1);
}

void hk_obs_store(struct hk_obs *o, int kind, int status, uint64_t dur_ns)
{
    if (kind < 0 || kind >= HK_STORE_OPS)
        return;
    hk_hist_observe(&o->store[kind], dur_ns);
    int e;
    switch (status) {
    case 0:
    case HK_ENOTFOUND:
    case HK_ECONFLICT:
        return;
    case HK_EBUSY: e = HK_SERR_BUSY; break;
    case HK_EUNAVAIL: e = HK_SERR_UNAVAILABLE; break;
    case HK_ETIMEDOUT: e = HK_SERR_TIMEOUT; break;
    default: e = HK_SERR_FAILED; break;
    }
    hk_ctr_add(&o->store_err[kind][e], 1);
}
