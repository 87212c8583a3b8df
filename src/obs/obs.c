/* SPDX-License-Identifier: MIT
 * Per-worker observability: the counters and histograms a request updates
 * (plain stores on memory only its own loop writes), request ids, and the
 * registry that lets a scrape on any loop read every worker's numbers. */
#include "obs/obs.h"

#include <llhttp.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/random.h>

#include "core/clock.h"
#include "http/route.h"
#include "http/server.h"
#include "http/session.h"
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
const char *const hk_store_err_names[HK_SERR__COUNT] = {"busy", "unavailable", "timeout", "failed"};
const char *const hk_store_op_names[HK_STORE_OPS] = {"insert", "get", "delete", "list"};

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
    return sizeof(struct hk_obs) + (size_t)nsources * (sizeof(struct hk_source_slot) + HK_SOURCE_NAME_MAX);
}

void hk_obs_init(struct hk_worker *w)
{
    unsigned nsources = w->cfg->metrics_top_sources;
    void *mem = mmap(NULL, obs_bytes(nsources), PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (mem == MAP_FAILED)
        abort();
    struct hk_obs *o = mem;
    o->nsources = nsources;
    if (o->nsources) {
        o->sources = (struct hk_source_slot *)(o + 1);
        char *names = (char *)(o->sources + o->nsources);
        for (unsigned i = 0; i < o->nsources; i++)
            o->sources[i].name = names + (size_t)i * HK_SOURCE_NAME_MAX;
    }
    /* Ids are unique across workers (index) and, with 48 random bits, across
     * restarts in practice; one getrandom per worker, none per request. */
    unsigned char rnd[6] = {0};
    if (getrandom(rnd, sizeof rnd, GRND_NONBLOCK) != (ssize_t)sizeof rnd) {
        uint64_t t = hk_mono_ns() ^ (uint64_t)hk_wall_us();
        memcpy(rnd, &t, sizeof rnd);
    }
    int n = snprintf(o->rid_prefix, sizeof o->rid_prefix, "%02x%02x%02x%02x%02x%02x-%d-", rnd[0], rnd[1],
                     rnd[2], rnd[3], rnd[4], rnd[5], w->index);
    o->rid_prefix_len = n > 0 && (size_t)n < sizeof o->rid_prefix ? (size_t)n : 0;
    w->obs = o;
    if (w->cfg->access_log)
        o->alog = hk_access_log_new(w);
    pthread_mutex_lock(&registry_mu);
    o->next = registry;
    if (registry)
        registry->prev = o;
    registry = o;
    pthread_mutex_unlock(&registry_mu);
}

void hk_obs_close(struct hk_worker *w)
{
    if (w->obs && w->obs->alog)
        hk_access_log_close(w->obs->alog);
}

void hk_obs_free(struct hk_worker *w)
{
    struct hk_obs *o = w->obs;
    if (!o)
        return;
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
    w->obs = NULL;
}

static bool id_ok(const char *p, size_t n)
{
    if (n == 0 || n > HK_REQ_ID_MAX)
        return false;
    for (size_t i = 0; i < n; i++)
        if ((unsigned char)p[i] < 0x20 || (unsigned char)p[i] > 0x7e)
            return false;
    return true;
}

void hk_obs_begin(struct hk_req *r, const char *id, size_t n)
{
    struct hk_obs *o = r->s->w->obs;
    r->start_ns = hk_mono_ns();
    r->status = 0;
    r->resp_bytes = 0;
    if (id && id_ok(id, n)) {
        memcpy(r->req_id, id, n);
        r->req_id_len = (uint8_t)n;
    } else {
        /* prefix + hex counter: no syscall, no formatting library. */
        memcpy(r->req_id, o->rid_prefix, o->rid_prefix_len);
        char tmp[16];
        int k = 0;
        uint64_t v = ++o->rid_next;
        do {
            tmp[k++] = "0123456789abcdef"[v & 15];
            v >>= 4;
        } while (v);
        size_t len = o->rid_prefix_len;
        while (k)
            r->req_id[len++] = tmp[--k];
        r->req_id_len = (uint8_t)len;
    }
    r->req_id[r->req_id_len] = 0;
}

/* Method label index (4 bits). */
static const char *const method_names[] = {"UNKNOWN", "GET",   "HEAD",  "POST",    "PUT",  "DELETE",
                                           "PATCH",   "OPTIONS", "TRACE", "CONNECT", "OTHER"};

const char *hk_obs_method_name(unsigned i)
{
    return i < sizeof method_names / sizeof method_names[0] ? method_names[i] : "OTHER";
}

static unsigned method_index(const struct hk_req *r)
{
    if (r->route == HK_ROUTE_UNROUTED)
        return 0;
    if (r->head)
        return 2;
    switch (r->method) {
    case HTTP_GET: return 1;
    case HTTP_POST: return 3;
    case HTTP_PUT: return 4;
    case HTTP_DELETE: return 5;
    case HTTP_PATCH: return 6;
    case HTTP_OPTIONS: return 7;
    case HTTP_TRACE: return 8;
    case HTTP_CONNECT: return 9;
    default: return 10;
    }
}

/* uri index: 0 UNKNOWN, 1 NOT_FOUND, 2 + i for the first route with template i. */
static unsigned uri_index(const struct hk_req *r)
{
    if (r->route == HK_ROUTE_UNROUTED)
        return 0;
    if (r->route < 0 || r->route >= hk_route_count)
        return 1;
    int i = r->route;
    /* Entries sharing a template are adjacent (route.c): use the first. */
    while (i > 0 && strcmp(hk_route_templates[i - 1], hk_route_templates[r->route]) == 0)
        i--;
    return 2 + (unsigned)i;
}

const char *hk_obs_uri_name(unsigned i)
{
    if (i == 0)
        return "UNKNOWN";
    if (i == 1)
        return "NOT_FOUND";
    return (int)(i - 2) < hk_route_count ? hk_route_templates[i - 2] : "UNKNOWN";
}

const char *hk_obs_uri(const struct hk_req *r)
{
    return hk_obs_uri_name(uri_index(r));
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

void hk_obs_end(struct hk_req *r)
{
    struct hk_obs *o = r->s->w->obs;
    uint64_t dur = hk_mono_ns() - r->start_ns;
    int status = r->status > 0 && r->status < 1000 ? r->status : 0;
    unsigned uri = uri_index(r);
    uint32_t key = (uint32_t)uri << 14 | (uint32_t)method_index(r) << 10 | (uint32_t)status;
    struct hk_series *s = series_for(o, key);
    if (s)
        hk_hist_observe(&s->h, dur);
    else
        hk_obs_count(o, HK_C_SERIES_OVERFLOW, 1);
    if (uri == 0) {
        if (status == 413)
            hk_ctr_add(&o->rejected[HK_REJ_TOO_LARGE], 1);
        else if (status == 431)
            hk_ctr_add(&o->rejected[HK_REJ_HEADERS_TOO_LARGE], 1);
    }
    if (o->alog)
        hk_access_log_request(o->alog, r, hk_obs_uri_name(uri), dur);
}

void hk_obs_rejected(struct hk_req *r, enum hk_reject why)
{
    hk_ctr_add(&r->s->w->obs->rejected[why], 1);
}

static uint32_t fnv1a(const char *p, size_t n)
{
    uint32_t h = 2166136261u;
    for (size_t i = 0; i < n; i++)
        h = (h ^ (unsigned char)p[i]) * 16777619u;
    return h;
}

void hk_obs_received(struct hk_req *r, const char *source, size_t n)
{
    struct hk_obs *o = r->s->w->obs;
    if (n == 0 || n > HK_SOURCE_NAME_MAX) {
        hk_obs_count(o, HK_C_RECEIVED_OTHER, 1);
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
    hk_obs_count(o, HK_C_RECEIVED_OTHER, 1);
}

void hk_obs_store_start(struct hk_req *r)
{
    r->op_start_ns = hk_mono_ns();
}

void hk_obs_store_done(struct hk_req *r, int kind, int status)
{
    struct hk_obs *o = r->s->w->obs;
    if (kind < 0 || kind >= HK_STORE_OPS)
        return;
    hk_hist_observe(&o->store[kind], hk_mono_ns() - r->op_start_ns);
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
