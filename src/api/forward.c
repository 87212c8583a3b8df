/* SPDX-License-Identifier: MIT
 * The forwarder (docs/forwarding.md): every stored webhook to its sink as
 * a CloudEvent until the sink takes it. A loop sends the rows it stored
 * itself at once (leased at insert, encoded from the committed row while
 * on_row holds it); loop 0 also claims what is due (retries, rows of dead
 * processes, FIFO sources, rows past the memory budget, redeliveries).
 * Each attempt ends in a SETTLE: delivered, pending again later, or failed.
 * The rows a sink took during one turn of the loop share one SETTLE (a
 * batch of up to HK_SETTLE_BATCH_MAX); a retry or a failure has its own.
 *
 * Ownership: a `struct send` (one per request in flight, from the loop's
 * free list) owns copies of what the request needs: the encoded headers
 * and body, and a reference to the sources snapshot whose URL it uses. A
 * `struct batch` (the loop's) owns its rows' ids and outcomes; the sends
 * are over once their rows are in one. */
#include "api/forward.h"

#include <inttypes.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>

#include "api/api_int.h"
#include "api/ingress.h"
#include "core/clock.h"
#include "core/log.h"
#include "ingress/sources.h"
#include "outbound/client.h"
#include "outbound/curl_api.h"
#include "outbound/cloudevents.h"
#include "outbound/retry.h"

#define CLAIM_MAX 100            /* rows per claim */
#define CLAIM_EVERY_MS 1000      /* loop 0 claims at least this often */
#define ERROR_MAX 200            /* bytes of last_error kept */
#define FREE_SENDS_MAX 64        /* idle send records a loop keeps */
#define MAX_FIFO 64              /* FIFO sources named in one claim */
#define SINK_BUSY_MS 1000        /* a claimed row whose sink is full and has as many waiting waits this long */
#define SINKS 64                 /* sinks counted apart; more share the last slot */

/* Latency buckets, seconds (receipt -> the sink's 2xx). */
static const double lat_le[] = {0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300};
#define NLAT (sizeof lat_le / sizeof lat_le[0])

enum { R_DELIVERED, R_RETRY, R_FAILED, R__COUNT };
static const char *const result_names[R__COUNT] = {"delivered", "retry", "failed"};

/* Requests in flight to one sink (by its URL's hash), so that a sink that
 * stalls holds at most its own share of the slots: the others keep going. */
struct sink {
    _Atomic uint64_t key;            /* 0: free */
    _Atomic uint32_t n;
    uint32_t waiting;                /* claimed rows waiting for a slot of it (loop 0's; run_waiting) */
};

struct hk_forwarder {
    struct hk_api *api;
    struct sink sinks[SINKS];
    const char *url;                 /* K_SINK, else HOOKD_FORWARD_URL (the configuration's string) */
    enum hk_ce_mode mode;
    struct hk_retry_policy policy;
    int64_t owner;                   /* this process's lease owner id */
    uint32_t concurrency;            /* per sink (HOOKD_FORWARD_CONCURRENCY) */
    uint32_t total;                  /* all sinks together */
    uint64_t budget;                 /* HOOKD_FORWARD_INFLIGHT_BYTES */
    struct hk_fwd_loop *claimer;     /* loop 0's, while it runs */
    _Atomic uint32_t inflight;       /* requests in flight or reserved, all loops */
    _Atomic uint64_t bytes;          /* their bodies' bytes */
    _Atomic uint64_t attempts[R__COUNT];
    _Atomic uint64_t dead;           /* rows that ended failed */
    _Atomic uint64_t lat[NLAT + 1];  /* last: +Inf */
    _Atomic uint64_t lat_sum_us;
    _Atomic uint64_t settle_errors;
    _Atomic uint64_t claimed;
    _Atomic uint32_t settling;       /* outcomes not yet recorded by the store, all loops */
    _Atomic uint32_t claim_held;     /* of `inflight`: slots a claim in flight holds for its rows */
};

struct send {
    struct hk_out_req req;
    struct hk_fwd_loop *fl;
    struct send *next;               /* free list */
    struct hk_sources *snap;         /* holds `url` when it is a source's; NULL: the global one */
    int64_t id, received_us;
    int32_t attempts;                /* made before this one */
    uint64_t bytes;                  /* reserved in f->bytes */
    struct sink *sink;               /* counted in, or NULL */
    bool slot;                       /* holds a slot (and `bytes`): until its HTTP exchange ends */
    bool settling;                   /* counted in f->settling: its outcome is on its way to the store */
    unsigned settle_tries;           /* SETTLE submissions the store turned away */
    struct send *retry_next;         /* the loop's settles to submit again */
    struct sink *wait_sink;          /* claimed, encoded, waiting for a slot of this sink (loop 0) */
    uint64_t wait_ms;                /* since when (loop time) */
    struct hk_buf hdr, body;         /* the encoded request */
    const char *lines[HK_CE_MAX_HEADERS];
    struct hk_store_op op;           /* the SETTLE */
    uint64_t t0;                     /* when the SETTLE was submitted */
    char error[ERROR_MAX + 1];
};

/* Rows the sink took, on their way to the store in one SETTLE. Until it
 * commits they stay leased to this process (a crash sends them again). */
struct batch {
    struct hk_store_op op;
    struct hk_fwd_loop *fl;
    struct batch *next;              /* the loop's free or retry list */
    uint64_t t0;                     /* when submitted */
    unsigned tries;                  /* submissions the store turned away */
    uint32_t n;
    struct hk_settle_item items[HK_SETTLE_BATCH_MAX];
};

struct hk_fwd_loop {
    struct hk_forwarder *f;
    struct hk_api_loop *L;
    struct hk_out *out;
    struct send *free;
    unsigned nfree;
    unsigned live;                   /* sends in flight on this loop (request or settle) */
    bool stopping;
    uint64_t rng;                    /* retry jitter (next_jitter), seeded from getrandom */
    /* Settles the store turned away (busy, down), submitted again soon. */
    struct send *retry;
    struct batch *bretry;
    uv_timer_t retry_timer;
    /* The batch this turn of the loop fills, submitted before the loop
     * waits again (`flush`) or when full; idle batches. */
    struct batch *open, *bfree;
    uv_prepare_t flush;
    /* Loop 0: the claimer. */
    uv_timer_t timer;
    uv_async_t wake;                 /* another loop asks for a claim */
    struct hk_store_op claim;
    const char *fifo[MAX_FIFO];
    struct hk_sources *claim_snap;   /* holds `fifo` names during a claim */
    uint64_t claim_t0;
    uint32_t nclaimed;               /* rows the claim in flight has given */
    bool claiming, claim_again, handles;
    int64_t next_due_us;             /* earliest retry this loop scheduled; 0: none known */
    /* Claimed rows whose sink had all it may take, oldest first: they keep
     * their lease, their global slot and their bytes, and go as soon as a
     * request to that sink ends (at most `total` of them). */
    struct send *wait_head, *wait_tail;
    uint32_t nwaiting;
    bool in_waiting;                 /* run_waiting is walking the list (a send's end may re-enter) */
};

static uint64_t rnd64(void)
{
    uint64_t v = 0;
    if (getrandom(&v, sizeof v, GRND_NONBLOCK) != sizeof v)
        v = hk_mono_ns() * UINT64_C(0x9E3779B97F4A7C15);
    return v;
}

/* The random draw behind a retry's jitter (full jitter: a uniform delay
 * below the back-off). Every outcome asks for one, a delivery too, so it
 * comes from the loop's own xorshift64* generator, seeded once from
 * getrandom, not from a system call per request. Nothing secret depends on
 * it: it only spreads retries out. */
static uint64_t next_jitter(struct hk_fwd_loop *fl)
{
    uint64_t x = fl->rng;
    x ^= x >> 12;
    x ^= x << 25;
    x ^= x >> 27;
    fl->rng = x;
    return x * UINT64_C(0x2545F4914F6CDD1D);
}

/* ---- the process --------------------------------------------------------- */

/* http:// or https://, a host, and nothing a request line could not carry. */
static bool url_ok(const char *u)
{
    size_t skip = strncmp(u, "http://", 7) == 0 ? 7 : strncmp(u, "https://", 8) == 0 ? 8 : 0;
    if (!skip || !u[skip] || u[skip] == '/')
        return false;
    for (const unsigned char *p = (const unsigned char *)u; *p; p++)
        if (*p <= 0x20 || *p >= 0x7f)
            return false;
    return true;
}

int hk_forward_new(struct hk_api *a, struct hk_forwarder **out, char *err, size_t errlen)
{
    const struct hk_config *cfg = a->cfg;
    *out = NULL;
    const char *url = cfg->k_sink && *cfg->k_sink ? cfg->k_sink : cfg->forward_url;
    enum hk_ce_mode mode;
    if (hk_ce_mode_parse(cfg->forward_mode, &mode) < 0) {
        snprintf(err, errlen, "invalid HOOKD_FORWARD_MODE=\"%s\": expected binary or structured", cfg->forward_mode);
        return -1;
    }
    if (!url || !*url)
        return 0;   /* no sink: nothing is forwarded (per-source URLs need a global switch too) */
    if (!url_ok(url)) {
        /* Never the URL itself: it may carry a password. */
        snprintf(err, errlen, "invalid %s: expected an http:// or https:// URL",
                 cfg->k_sink && *cfg->k_sink ? "K_SINK" : "HOOKD_FORWARD_URL");
        return -1;
    }
    if (hk_curl_load(err, errlen) < 0)
        return -1;
    struct hk_forwarder *f = calloc(1, sizeof *f);
    if (!f)
        abort();
    f->api = a;
    f->url = url;
    f->mode = mode;
    f->policy = (struct hk_retry_policy){.max_attempts = cfg->forward_max_attempts,
                                         .max_age_ms = cfg->forward_max_age_ms,
                                         .base_ms = cfg->forward_backoff_ms,
                                         .max_ms = cfg->forward_backoff_max_ms,
                                         .retry_4xx = cfg->forward_retry_4xx};
    f->owner = (int64_t)(rnd64() >> 1);
    if (f->owner == 0)
        f->owner = 1;
    f->concurrency = cfg->forward_concurrency;
    f->total = cfg->forward_concurrency * 4 < 65536 ? cfg->forward_concurrency * 4 : 65536;
    f->budget = cfg->forward_inflight_bytes;
    *out = f;
    return 0;
}

void hk_forward_free(struct hk_forwarder *f)
{
    free(f);
}

/* The source's entry in a snapshot (a new reference in *snap), or NULL. */
static const struct hk_source *source_of(struct hk_api *a, const char *name, size_t len, struct hk_sources **snap)
{
    *snap = hk_ingress_snapshot(a->ingress);
    if (!*snap)
        return NULL;
    const struct hk_source *src = hk_source_name_ok(name, len) ? hk_sources_find(*snap, name, len) : NULL;
    if (!src) {
        hk_sources_unref(*snap);
        *snap = NULL;
    }
    return src;
}

/* ---- sending --------------------------------------------------------------- */

static void claim_soon(struct hk_fwd_loop *fl);

static struct send *send_get(struct hk_fwd_loop *fl)
{
    struct send *s = fl->free;
    if (s) {
        fl->free = s->next;
        fl->nfree--;
    } else if (!(s = calloc(1, sizeof *s))) {
        abort();
    }
    s->fl = fl;
    s->next = NULL;
    s->snap = NULL;
    s->sink = NULL;
    s->slot = true;
    s->settling = false;
    s->settle_tries = 0;
    s->retry_next = NULL;
    s->hdr.len = s->body.len = 0;
    s->error[0] = '\0';
    fl->live++;
    return s;
}

/* The HTTP exchange is over: give back its slots and bytes, so the next
 * request need not wait for this one's outcome to reach the store. */
static void release_slot(struct send *s)
{
    if (!s->slot)
        return;
    struct hk_forwarder *f = s->fl->f;
    s->slot = false;
    atomic_fetch_sub_explicit(&f->inflight, 1, memory_order_relaxed);
    atomic_fetch_sub_explicit(&f->bytes, s->bytes, memory_order_relaxed);
    if (s->sink)
        atomic_fetch_sub_explicit(&s->sink->n, 1, memory_order_relaxed);
    s->sink = NULL;
    /* Room again: the claimer may have rows waiting. */
    claim_soon(s->fl);
}

/* The send is over (settled or dropped): its record goes back. */
static void send_put(struct send *s)
{
    struct hk_fwd_loop *fl = s->fl;
    struct hk_forwarder *f = fl->f;
    release_slot(s);
    if (s->settling)
        atomic_fetch_sub_explicit(&f->settling, 1, memory_order_relaxed);
    s->settling = false;
    if (s->snap)
        hk_sources_unref(s->snap);
    s->snap = NULL;
    fl->live--;
    if (fl->nfree < FREE_SENDS_MAX && !fl->stopping) {
        /* Keep the buffers unless one large body grew them. */
        hk_buf_reset(&s->hdr, 4096);
        hk_buf_reset(&s->body, 65536);
        s->next = fl->free;
        fl->free = s;
        fl->nfree++;
    } else {
        hk_buf_free(&s->hdr);
        hk_buf_free(&s->body);
        free(s);
    }
    claim_soon(fl);
}

/* The counter of the sink at `url` (FNV-1a of the URL; open addressing,
 * claimed with a CAS; a full table shares its last slot). */
static struct sink *sink_of(struct hk_forwarder *f, const char *url)
{
    uint64_t h = UINT64_C(14695981039346656037);
    for (const unsigned char *p = (const unsigned char *)url; *p; p++)
        h = (h ^ *p) * UINT64_C(1099511628211);
    if (h == 0)
        h = 1;
    for (unsigned i = 0; i < SINKS; i++) {
        struct sink *k = &f->sinks[(h + i) % SINKS];
        uint64_t cur = atomic_load_explicit(&k->key, memory_order_acquire);
        if (cur == h)
            return k;
        if (cur == 0) {
            uint64_t zero = 0;
            if (atomic_compare_exchange_strong(&k->key, &zero, h) || zero == h)
                return k;
        }
    }
    return &f->sinks[SINKS - 1];
}

/* The URL a row of `src` (NULL: no such source) goes to. */
static const char *url_of(const struct hk_forwarder *f, const struct hk_source *src)
{
    return src && src->forward.url ? src->forward.url : f->url;
}

/* Take a slot of the sink's, one of all, and `bytes` of the budget: false
 * when any is out. The sink's slot only when `k` is not NULL. */
static bool reserve(struct hk_forwarder *f, struct sink *k, uint64_t bytes)
{
    uint32_t n = atomic_fetch_add_explicit(&f->inflight, 1, memory_order_relaxed);
    uint64_t b = atomic_fetch_add_explicit(&f->bytes, bytes, memory_order_relaxed);
    uint32_t ks = k ? atomic_fetch_add_explicit(&k->n, 1, memory_order_relaxed) : 0;
    /* Outcomes waiting for the store count too: a slow store slows the
     * sends instead of piling up their records. */
    uint32_t pending = atomic_load_explicit(&f->settling, memory_order_relaxed);
    if (n < f->total && ks < f->concurrency && pending < f->total * 4 && (b + bytes <= f->budget || b == 0))
        return true;
    atomic_fetch_sub_explicit(&f->inflight, 1, memory_order_relaxed);
    atomic_fetch_sub_explicit(&f->bytes, bytes, memory_order_relaxed);
    if (k)
        atomic_fetch_sub_explicit(&k->n, 1, memory_order_relaxed);
    return false;
}

static void settle_submit(struct send *s);
static void batch_submit(struct batch *b);
static void on_retry_settles(uv_timer_t *t);

/* Turned away by a busy or unavailable store: keep the outcome and submit
 * it again soon (dropping it would leave the row leased, and so unsent,
 * until the lease ended). The loop's list; one timer. */
static void settle_later(struct send *s)
{
    struct hk_fwd_loop *fl = s->fl;
    if (fl->L->stopping || !fl->L->sl || s->settle_tries++ >= 600) {
        /* Stopping, or a store down for minutes: the lease ends and the row
         * is claimed again then. */
        atomic_fetch_add_explicit(&fl->f->settle_errors, 1, memory_order_relaxed);
        send_put(s);
        return;
    }
    s->retry_next = fl->retry;
    fl->retry = s;
    if (!uv_is_active((uv_handle_t *)&fl->retry_timer))
        uv_timer_start(&fl->retry_timer, on_retry_settles, 100, 0);
}

static bool transient(int status)
{
    return status == HK_EBUSY || status == HK_EUNAVAIL || status == HK_ETIMEDOUT || status == HK_ELOCKED ||
           status == HK_EIO || status == HK_EFULL;
}

static void settle_done(struct hk_store_op *op)
{
    struct send *s = op->data;
    hk_obs_store(s->fl->L->obs, HK_OP_SETTLE, op->status, hk_mono_ns() - s->t0);
    hk_api_bg_end(s->fl->L);
    if (transient(op->status)) {
        settle_later(s);
        return;
    }
    if (op->status < 0 && op->status != HK_ECONFLICT && op->status != HK_ENOTFOUND)
        atomic_fetch_add_explicit(&s->fl->f->settle_errors, 1, memory_order_relaxed);
    send_put(s);
}

static void settle_submit(struct send *s)
{
    struct hk_fwd_loop *fl = s->fl;
    if (!fl->L->sl) {
        send_put(s);   /* the lease ends; the row is claimed again */
        return;
    }
    s->t0 = hk_mono_ns();
    hk_api_bg_begin(fl->L);
    int rc = hk_store_submit(fl->L->sl, &s->op);
    if (rc < 0) {
        hk_api_bg_end(fl->L);
        settle_later(s);
    }
}

static void on_retry_settles(uv_timer_t *t)
{
    struct hk_fwd_loop *fl = t->data;
    struct batch *b = fl->bretry;
    fl->bretry = NULL;
    while (b) {
        struct batch *next = b->next;
        b->next = NULL;
        batch_submit(b);
        b = next;
    }
    struct send *s = fl->retry;
    fl->retry = NULL;
    while (s) {
        struct send *next = s->retry_next;
        s->retry_next = NULL;
        settle_submit(s);
        s = next;
    }
}

/* Record an attempt's outcome (`counted`: it was an attempt; a send cut
 * short by a stop is not) and end the lease. */
static void settle_as(struct send *s, uint8_t state, int64_t next_us, int status, bool counted)
{
    struct hk_fwd_loop *fl = s->fl;
    release_slot(s);
    if (!s->settling) {
        s->settling = true;
        atomic_fetch_add_explicit(&fl->f->settling, 1, memory_order_relaxed);
    }
    struct hk_store_op *op = &s->op;
    memset(op, 0, sizeof *op);
    op->kind = HK_OP_SETTLE;
    op->id = s->id;
    op->fwd.owner = fl->f->owner;
    op->row.delivery = (struct hk_delivery){.state = state, .attempts = s->attempts + (counted ? 1 : 0),
                                            .next_us = next_us,
                                            .last_status = status, .last_error = s->error[0] ? s->error : NULL,
                                            .last_error_len = strlen(s->error)};
    op->on_done = settle_done;
    op->data = s;
    settle_submit(s);
}

static void settle(struct send *s, uint8_t state, int64_t next_us, int status)
{
    settle_as(s, state, next_us, status, true);
}

/* ---- delivered rows, in batches -------------------------------------------- */

/* The batch is over (written, or dropped): its rows no longer count as
 * waiting for the store. */
static void batch_put(struct batch *b)
{
    struct hk_fwd_loop *fl = b->fl;
    atomic_fetch_sub_explicit(&fl->f->settling, b->n, memory_order_relaxed);
    b->n = 0;
    b->next = fl->bfree;
    fl->bfree = b;
    claim_soon(fl);
}

/* As settle_later, for a batch. */
static void batch_later(struct batch *b)
{
    struct hk_fwd_loop *fl = b->fl;
    if (fl->L->stopping || !fl->L->sl || b->tries++ >= 600) {
        atomic_fetch_add_explicit(&fl->f->settle_errors, b->n, memory_order_relaxed);
        batch_put(b);
        return;
    }
    b->next = fl->bretry;
    fl->bretry = b;
    if (!uv_is_active((uv_handle_t *)&fl->retry_timer))
        uv_timer_start(&fl->retry_timer, on_retry_settles, 100, 0);
}

static void batch_done(struct hk_store_op *op)
{
    struct batch *b = op->data;
    struct hk_fwd_loop *fl = b->fl;
    hk_obs_store(fl->L->obs, HK_OP_SETTLE, op->status, hk_mono_ns() - b->t0);
    hk_api_bg_end(fl->L);
    if (transient(op->status)) {
        batch_later(b);
        return;
    }
    if (op->status < 0)
        atomic_fetch_add_explicit(&fl->f->settle_errors, b->n, memory_order_relaxed);
    batch_put(b);
}

static void batch_submit(struct batch *b)
{
    struct hk_fwd_loop *fl = b->fl;
    if (!fl->L->sl) {
        batch_put(b);   /* the leases end; the rows are claimed again */
        return;
    }
    struct hk_store_op *op = &b->op;
    memset(op, 0, sizeof *op);
    op->kind = HK_OP_SETTLE;
    op->fwd.owner = fl->f->owner;
    op->fwd.delivered = b->items;
    op->fwd.ndelivered = b->n;
    op->on_done = batch_done;
    op->data = b;
    b->t0 = hk_mono_ns();
    hk_api_bg_begin(fl->L);
    if (hk_store_submit(fl->L->sl, op) < 0) {
        hk_api_bg_end(fl->L);
        batch_later(b);
    }
}

/* The loop is about to wait: what it delivered this turn goes to the store. */
static void on_flush(uv_prepare_t *h)
{
    struct hk_fwd_loop *fl = h->data;
    struct batch *b = fl->open;
    uv_prepare_stop(h);
    fl->open = NULL;
    if (b)
        batch_submit(b);
}

/* The sink took s's row: into this turn's batch, and the send is over. */
static void delivered(struct send *s, int status)
{
    struct hk_fwd_loop *fl = s->fl;
    struct batch *b = fl->open;
    if (!b) {
        b = fl->bfree;
        if (b)
            fl->bfree = b->next;
        else if (!(b = malloc(sizeof *b)))
            abort();
        b->fl = fl;
        b->next = NULL;
        b->tries = 0;
        b->n = 0;
        fl->open = b;
        uv_prepare_start(&fl->flush, on_flush);
    }
    b->items[b->n++] = (struct hk_settle_item){.id = s->id, .attempts = s->attempts + 1, .status = status};
    atomic_fetch_add_explicit(&fl->f->settling, 1, memory_order_relaxed);
    send_put(s);
    if (b->n == HK_SETTLE_BATCH_MAX) {
        fl->open = NULL;
        uv_prepare_stop(&fl->flush);
        batch_submit(b);
    }
}

static void note_due(struct hk_fwd_loop *fl, int64_t next_us);

static void sent(struct hk_out_req *req, const struct hk_out_result *res)
{
    struct send *s = (struct send *)req;
    struct hk_fwd_loop *fl = s->fl;
    struct hk_forwarder *f = fl->f;
    if (fl->stopping) {
        /* Shutting down: not the sink's fault, and no attempt. The row is
         * released (pending, due now), so the next start or another
         * replica sends it at once instead of after the lease. The store
         * detaches once this settle is done (hk_api_bg_begin). */
        snprintf(s->error, sizeof s->error, "interrupted: hookd stopped");
        settle_as(s, HK_DLV_PENDING, hk_wall_us(), 0, false);
        return;
    }
    int64_t now = hk_wall_us();
    uint64_t age_ms = now > s->received_us ? (uint64_t)(now - s->received_us) / 1000 : 0;
    uint64_t delay_ms = 0;
    /* A URL or header the client refuses will be refused every time. */
    enum hk_retry_verdict v = res->err == HK_EINVAL
                                  ? HK_RETRY_FAIL
                                  : hk_retry_decide(&f->policy, (uint32_t)s->attempts + 1, age_ms, res->status,
                                                    res->retry_after_ms, next_jitter(fl), &delay_ms);
    if (v != HK_RETRY_DELIVERED)
        hk_retry_reason(res->status, res->err, res->error, s->error, sizeof s->error);
    switch (v) {
    case HK_RETRY_DELIVERED: {
        atomic_fetch_add_explicit(&f->attempts[R_DELIVERED], 1, memory_order_relaxed);
        double secs = (double)(now - s->received_us) / 1e6;
        size_t i = 0;
        while (i < NLAT && secs > lat_le[i])
            i++;
        atomic_fetch_add_explicit(&f->lat[i], 1, memory_order_relaxed);
        atomic_fetch_add_explicit(&f->lat_sum_us, (uint64_t)(now > s->received_us ? now - s->received_us : 0),
                                  memory_order_relaxed);
        delivered(s, res->status);
        return;
    }
    case HK_RETRY_AGAIN: {
        atomic_fetch_add_explicit(&f->attempts[R_RETRY], 1, memory_order_relaxed);
        int64_t next = now + (int64_t)delay_ms * 1000;
        note_due(fl, next);
        settle(s, HK_DLV_PENDING, next, res->status);
        return;
    }
    case HK_RETRY_FAIL:
        atomic_fetch_add_explicit(&f->attempts[R_FAILED], 1, memory_order_relaxed);
        atomic_fetch_add_explicit(&f->dead, 1, memory_order_relaxed);
        settle(s, HK_DLV_FAILED, 0, res->status);
        return;
    }
}

static void go(struct hk_fwd_loop *fl, struct send *s, struct sink *sink);

/* One request more to sink k, if it has room. */
static bool sink_take(struct hk_forwarder *f, struct sink *k)
{
    if (atomic_fetch_add_explicit(&k->n, 1, memory_order_relaxed) >= f->concurrency) {
        atomic_fetch_sub_explicit(&k->n, 1, memory_order_relaxed);
        return false;
    }
    return true;
}

/* Encode `row` into a send that holds a reservation (its sink's slot too
 * when `sink` is not NULL; claimed rows take theirs here), and start it. */
static void start(struct hk_fwd_loop *fl, const struct hk_webhook *row, uint64_t bytes, struct sink *sink)
{
    struct hk_forwarder *f = fl->f;
    struct send *s = send_get(fl);
    s->id = row->id;
    s->received_us = row->received_us;
    s->attempts = row->delivery.attempts;
    s->bytes = bytes;
    const struct hk_source *src = source_of(f->api, row->source, row->source_len, &s->snap);
    const char *url = url_of(f, src);
    struct hk_ce_opts o = {
        .mode = src && src->forward.mode >= 0 ? (enum hk_ce_mode)src->forward.mode : f->mode,
        .type_template = src ? src->forward.type : NULL,
        .scheme = src && row->ingress ? hk_scheme_name(src->scheme) : NULL,
    };
    if (hk_ce_encode(row, &o, &s->hdr, &s->body) < 0) {
        /* A stored row that cannot be encoded will never be: dead letter. */
        snprintf(s->error, sizeof s->error, "cannot encode the row as a CloudEvent");
        atomic_fetch_add_explicit(&f->attempts[R_FAILED], 1, memory_order_relaxed);
        atomic_fetch_add_explicit(&f->dead, 1, memory_order_relaxed);
        settle(s, HK_DLV_FAILED, 0, 0);
        return;
    }
    size_t nlines = hk_ce_header_lines(&s->hdr, s->lines, HK_CE_MAX_HEADERS);
    s->req = (struct hk_out_req){
        .url = url,
        .headers = s->lines,
        .nheaders = nlines,
        .body = s->body.p,
        .body_len = s->body.len,
        .done = sent,
        .data = s,
    };
    if (!sink) {
        struct sink *k = sink_of(f, url);
        if (!sink_take(f, k)) {
            if (k->waiting >= f->concurrency) {
                /* Its sink has all it may take, and as many waiting: back
                 * to the store for a second, no attempt made. */
                snprintf(s->error, sizeof s->error, "waiting: the sink has %u requests in flight", f->concurrency);
                settle_as(s, HK_DLV_PENDING, hk_wall_us() + SINK_BUSY_MS * 1000, 0, false);
                return;
            }
            /* Its sink has all it may take (a claimed row): wait in memory
             * for the next of its requests to end, no attempt made. The
             * row keeps its bytes and its lease, not a slot of all sinks':
             * a stalled sink's rows hold up no other sink. */
            k->waiting++;
            fl->nwaiting++;
            atomic_fetch_sub_explicit(&f->inflight, 1, memory_order_relaxed);
            s->wait_sink = k;
            s->wait_ms = uv_now(&fl->L->w->loop);
            s->next = NULL;
            if (fl->wait_tail)
                fl->wait_tail->next = s;
            else
                fl->wait_head = s;
            fl->wait_tail = s;
            return;
        }
        sink = k;
    }
    go(fl, s, sink);
}

/* Start the HTTP exchange of an encoded send that holds its sink's slot. */
static void go(struct hk_fwd_loop *fl, struct send *s, struct sink *sink)
{
    s->sink = sink;
    int rc = hk_out_send(fl->out, &s->req);
    if (rc < 0) {
        struct hk_out_result res = {.status = 0, .err = rc, .error = "no connection slot", .retry_after_ms = -1};
        sent(&s->req, &res);
    }
}

/* Claimed rows waiting for their sinks (loop 0): those whose sink has room
 * now go, oldest first; one that waited half a lease goes back to the store
 * (pending, due now, no attempt) before its lease could end under it. All
 * go back when the loop stops. */
static void run_waiting(struct hk_fwd_loop *fl)
{
    struct hk_forwarder *f = fl->f;
    if (fl->in_waiting)
        return;   /* a send that ended at once, inside the walk below */
    fl->in_waiting = true;
    uint64_t now = uv_now(&fl->L->w->loop), max_ms = f->api->cfg->forward_lease_ms / 2;
    struct send **pp = &fl->wait_head, *prev = NULL;
    while (*pp) {
        struct send *s = *pp;
        bool back = fl->stopping || now - s->wait_ms >= max_ms;
        if (!back && !sink_take(f, s->wait_sink)) {
            prev = s;
            pp = &s->next;
            continue;
        }
        *pp = s->next;
        if (fl->wait_tail == s)
            fl->wait_tail = prev;
        s->next = NULL;
        struct sink *k = s->wait_sink;
        s->wait_sink = NULL;
        k->waiting--;
        fl->nwaiting--;
        /* A slot of all sinks' again: the send's end gives it back. */
        atomic_fetch_add_explicit(&f->inflight, 1, memory_order_relaxed);
        if (back) {
            snprintf(s->error, sizeof s->error, "waiting: the sink has %u requests in flight", f->concurrency);
            settle_as(s, HK_DLV_PENDING, hk_wall_us(), 0, false);
        } else {
            go(fl, s, k);
        }
        /* The calls above may have run a send's end, which appends to the
         * list only through start() (not here): walk on from the head's
         * current state. */
        pp = prev ? &prev->next : &fl->wait_head;
    }
    fl->in_waiting = false;
}

/* ---- inserts ----------------------------------------------------------------- */

void hk_forward_prepare_insert(struct hk_api_loop *L, struct hk_store_op *op)
{
    struct hk_fwd_loop *fl = L->fwd;
    if (!fl || fl->stopping)
        return;
    struct hk_forwarder *f = fl->f;
    struct hk_webhook *w = &op->row;
    struct hk_sources *snap;
    const struct hk_source *src = source_of(f->api, w->source, w->source_len, &snap);
    bool off = src && src->forward.off, fifo = src && src->forward.fifo;
    struct sink *k = off || fifo ? NULL : sink_of(f, url_of(f, src));
    if (snap)
        hk_sources_unref(snap);
    if (off)
        return;
    w->delivery.state = HK_DLV_PENDING;
    uint64_t bytes = w->body_len + w->payload_len + 1024;
    /* FIFO rows wait for their turn (the claimer); others are sent at once
     * when there is room, else they wait in the store. */
    if (fifo || !reserve(f, k, bytes))
        return;
    op->fwd.tag = (uint32_t)(k - f->sinks);
    op->fwd.owner = f->owner;
    op->fwd.lease_us = hk_wall_us() + (int64_t)f->api->cfg->forward_lease_ms * 1000;
}

void hk_forward_inserted(struct hk_api_loop *L, struct hk_store_op *op, const struct hk_webhook *row)
{
    struct hk_fwd_loop *fl = L->fwd;
    if (!fl || op->replayed || row->delivery.state != HK_DLV_PENDING)
        return;
    if (!op->fwd.owner) {
        claim_soon(fl);   /* stored to wait: the claimer takes it */
        return;
    }
    op->fwd.lease_us = 0;   /* marks the reservation as the send's now (insert_end) */
    start(fl, row, row->body_len + row->payload_len + 1024, &fl->f->sinks[op->fwd.tag % SINKS]);
}

void hk_forward_insert_end(struct hk_api_loop *L, struct hk_store_op *op)
{
    struct hk_fwd_loop *fl = L->fwd;
    if (fl && op->fwd.owner && op->fwd.lease_us) {
        /* Reserved but never sent: the insert failed, or was a duplicate. */
        atomic_fetch_sub_explicit(&fl->f->sinks[op->fwd.tag % SINKS].n, 1, memory_order_relaxed);
        atomic_fetch_sub_explicit(&fl->f->inflight, 1, memory_order_relaxed);
        atomic_fetch_sub_explicit(&fl->f->bytes, op->row.body_len + op->row.payload_len + 1024,
                                  memory_order_relaxed);
    }
    op->fwd.owner = 0;
    op->fwd.lease_us = 0;
}

/* ---- claiming (loop 0) ----------------------------------------------------------- */

/* A claimed row: its slot was reserved by claim_now, its bytes now. */
static void claim_row(struct hk_store_op *op, const struct hk_webhook *row)
{
    struct hk_fwd_loop *fl = op->data;
    uint64_t bytes = row->body_len + row->payload_len + 1024;
    fl->nclaimed++;
    atomic_fetch_sub_explicit(&fl->f->claim_held, 1, memory_order_relaxed);   /* the slot is the row's now */
    atomic_fetch_add_explicit(&fl->f->claimed, 1, memory_order_relaxed);
    atomic_fetch_add_explicit(&fl->f->bytes, bytes, memory_order_relaxed);
    start(fl, row, bytes, NULL);
}

static void claim_done(struct hk_store_op *op)
{
    struct hk_fwd_loop *fl = op->data;
    struct hk_forwarder *f = fl->f;
    fl->claiming = false;
    hk_obs_store(fl->L->obs, HK_OP_CLAIM, op->status, hk_mono_ns() - fl->claim_t0);
    if (fl->claim_snap)
        hk_sources_unref(fl->claim_snap);
    fl->claim_snap = NULL;
    /* Give back the slots the claim reserved and did not fill. */
    atomic_fetch_sub_explicit(&f->inflight, op->list.limit - fl->nclaimed, memory_order_relaxed);
    atomic_fetch_sub_explicit(&f->claim_held, op->list.limit - fl->nclaimed, memory_order_relaxed);
    bool full = op->status == 0 && fl->nclaimed == op->list.limit;
    hk_api_bg_end(fl->L);
    if ((full || fl->claim_again) && !fl->stopping) {
        fl->claim_again = false;
        claim_soon(fl);
    }
}

static void claim_now(struct hk_fwd_loop *fl)
{
    struct hk_forwarder *f = fl->f;
    if (fl->wait_head)
        run_waiting(fl);
    if (fl->claiming || fl->stopping || fl->L->stopping || !fl->L->sl) {
        fl->claim_again = fl->claiming;
        return;
    }
    /* Slots for the whole claim, reserved now so the loops' own sends
     * cannot take them meanwhile; bytes as the rows come. */
    uint32_t used = atomic_load_explicit(&f->inflight, memory_order_relaxed);
    if (used >= f->total)
        return;   /* a send's end calls claim_soon again */
    uint32_t n = f->total - used;
    uint64_t per_row = (uint64_t)f->api->cfg->max_body_bytes + 1024;
    uint64_t b = atomic_load_explicit(&f->bytes, memory_order_relaxed);
    uint64_t room = b < f->budget ? (f->budget - b) / per_row : 0;
    if (room == 0 && b > 0)
        return;
    if (room > 0 && n > room)
        n = (uint32_t)room;
    if (n > CLAIM_MAX)
        n = CLAIM_MAX;
    if (n == 0)
        n = 1;   /* a budget under one largest body: one row at a time */
    /* No more than the roomiest sink could take now or keep waiting:
     * rows claimed beyond that would only go back to the store. */
    uint32_t best = 0;
    bool any = false;
    for (unsigned i = 0; i < SINKS; i++) {
        const struct sink *k = &f->sinks[i];
        if (!atomic_load_explicit(&k->key, memory_order_relaxed))
            continue;
        any = true;
        uint32_t used_k = atomic_load_explicit(&k->n, memory_order_relaxed) + k->waiting;
        uint32_t room_k = used_k < 2 * f->concurrency ? 2 * f->concurrency - used_k : 0;
        if (room_k > best)
            best = room_k;
    }
    if (any && best == 0)
        return;   /* a send's end calls claim_soon again */
    if (any && n > best)
        n = best;
    atomic_fetch_add_explicit(&f->inflight, n, memory_order_relaxed);
    atomic_fetch_add_explicit(&f->claim_held, n, memory_order_relaxed);
    struct hk_store_op *op = &fl->claim;
    memset(op, 0, sizeof *op);
    op->kind = HK_OP_CLAIM;
    op->fwd.owner = f->owner;
    op->fwd.lease_us = hk_wall_us() + (int64_t)f->api->cfg->forward_lease_ms * 1000;
    op->list.limit = n;
    /* FIFO sources, from the current snapshot (held until the claim ends). */
    fl->claim_snap = hk_ingress_snapshot(f->api->ingress);
    size_t nf = 0;
    if (fl->claim_snap)
        for (size_t i = 0; i < fl->claim_snap->n && nf < MAX_FIFO; i++)
            if (fl->claim_snap->v[i].forward.fifo && !fl->claim_snap->v[i].forward.off)
                fl->fifo[nf++] = fl->claim_snap->v[i].name;
    op->fwd.fifo = nf ? fl->fifo : NULL;
    op->fwd.nfifo = nf;
    op->on_row = claim_row;
    op->on_done = claim_done;
    op->data = fl;
    fl->claiming = true;
    fl->nclaimed = 0;
    fl->claim_t0 = hk_mono_ns();
    hk_api_bg_begin(fl->L);
    int rc = hk_store_submit(fl->L->sl, op);
    if (rc < 0) {
        hk_api_bg_end(fl->L);
        fl->claiming = false;
        atomic_fetch_sub_explicit(&f->inflight, n, memory_order_relaxed);
        atomic_fetch_sub_explicit(&f->claim_held, n, memory_order_relaxed);
        if (fl->claim_snap)
            hk_sources_unref(fl->claim_snap);
        fl->claim_snap = NULL;
    }
}

static void on_timer(uv_timer_t *t)
{
    struct hk_fwd_loop *fl = t->data;
    fl->next_due_us = 0;
    claim_now(fl);
    if (!fl->stopping)
        uv_timer_start(&fl->timer, on_timer, CLAIM_EVERY_MS, 0);
}

static void on_wake(uv_async_t *h)
{
    claim_now(h->data);
}

/* Ask loop 0 for a claim soon (from any loop). */
static void claim_soon(struct hk_fwd_loop *fl)
{
    struct hk_fwd_loop *c = fl->f->claimer;
    if (!c || fl->stopping)
        return;
    if (c == fl)
        claim_now(fl);
    else
        uv_async_send(&c->wake);
}

/* A retry is due at next_us: loop 0 claims then (a loop that is not loop 0
 * leaves it to the once-a-second claim). */
static void note_due(struct hk_fwd_loop *fl, int64_t next_us)
{
    if (fl != fl->f->claimer || fl->stopping)
        return;
    if (fl->next_due_us && fl->next_due_us <= next_us)
        return;
    fl->next_due_us = next_us;
    int64_t ms = (next_us - hk_wall_us()) / 1000 + 1;
    if (ms < 1)
        ms = 1;
    if ((uint64_t)ms < uv_timer_get_due_in(&fl->timer))
        uv_timer_start(&fl->timer, on_timer, (uint64_t)ms, 0);
}

void hk_forward_wake(struct hk_api_loop *L)
{
    if (L->fwd)
        claim_soon(L->fwd);
}

/* ---- the loop ---------------------------------------------------------------- */

void hk_forward_loop_start(struct hk_api_loop *L)
{
    struct hk_forwarder *f = L->api->fwd;
    if (!f)
        return;
    struct hk_fwd_loop *fl = calloc(1, sizeof *fl);
    if (!fl)
        abort();
    fl->f = f;
    fl->L = L;
    fl->rng = rnd64() | 1;   /* xorshift's state must not be 0 */
    const struct hk_config *cfg = L->api->cfg;
    struct hk_out_opts o = {.max_conns = L->api->fwd->total,
                            .connect_ms = cfg->forward_connect_timeout_ms,
                            .total_ms = cfg->forward_timeout_ms,
                            .max_response = 4096};
    char err[160];
    if (hk_out_open(&L->w->loop, &o, &fl->out, err, sizeof err) < 0) {
        /* libcurl was loaded at start; this is out of memory or fds. */
        hk_error("forwarding off on this loop", "\"error\":\"%s\"", err);
        free(fl);
        return;
    }
    L->fwd = fl;
    uv_timer_init(&L->w->loop, &fl->retry_timer);
    fl->retry_timer.data = fl;
    uv_prepare_init(&L->w->loop, &fl->flush);
    fl->flush.data = fl;
    if (L->w->index == 0) {
        uv_timer_init(&L->w->loop, &fl->timer);
        uv_async_init(&L->w->loop, &fl->wake, on_wake);
        fl->timer.data = fl->wake.data = fl;
        fl->handles = true;
        f->claimer = fl;
        /* Rows left by a previous run (or another replica) go out soon. */
        uv_timer_start(&fl->timer, on_timer, 1, 0);
    }
}

void hk_forward_loop_stop(struct hk_api_loop *L)
{
    struct hk_fwd_loop *fl = L->fwd;
    if (!fl)
        return;
    fl->stopping = true;
    if (fl->f->claimer == fl)
        fl->f->claimer = NULL;
    if (fl->handles) {
        uv_close((uv_handle_t *)&fl->timer, NULL);
        uv_close((uv_handle_t *)&fl->wake, NULL);
    }
    /* Requests in flight end now (sent() drops them: their leases end and
     * they are claimed again); settles in flight finish before the store
     * detaches (the store completes them). */
    hk_out_close(fl->out);
    fl->out = NULL;
    /* Claimed rows still waiting for their sink go back (pending, due now). */
    run_waiting(fl);
    /* This turn's deliveries go to the store now; outcomes the store
     * turned away get one last try; what it turns away again is dropped
     * (the lease ends: sent again after a restart). */
    on_flush(&fl->flush);
    uv_close((uv_handle_t *)&fl->flush, NULL);
    uv_timer_stop(&fl->retry_timer);
    on_retry_settles(&fl->retry_timer);
    uv_close((uv_handle_t *)&fl->retry_timer, NULL);
}

void hk_forward_loop_free(struct hk_api_loop *L)
{
    struct hk_fwd_loop *fl = L->fwd;
    if (!fl)
        return;
    while (fl->free) {
        struct send *s = fl->free;
        fl->free = s->next;
        hk_buf_free(&s->hdr);
        hk_buf_free(&s->body);
        free(s);
    }
    while (fl->bfree) {
        struct batch *b = fl->bfree;
        fl->bfree = b->next;
        free(b);
    }
    if (fl->claim_snap)
        hk_sources_unref(fl->claim_snap);
    free(fl);
    L->fwd = NULL;
}

/* ---- metrics ------------------------------------------------------------------ */

void hk_forward_metrics(const struct hk_forwarder *fc, struct hk_buf *b)
{
    struct hk_forwarder *f = (struct hk_forwarder *)fc;
    if (!f)
        return;
    /* In flight: the slots taken, less those a claim holds for rows it has
     * not handed over yet (read apart: never below 0). */
    int64_t held = atomic_load_explicit(&f->claim_held, memory_order_relaxed);
    int64_t taken = atomic_load_explicit(&f->inflight, memory_order_relaxed);
    unsigned sending = taken > held ? (unsigned)(taken - held) : 0;
    hk_buf_puts(b, "# HELP hookd_forward_attempts_total Delivery attempts to the sink, by what came of them.\n"
                   "# TYPE hookd_forward_attempts_total counter\n");
    for (int i = 0; i < R__COUNT; i++)
        hk_buf_printf(b, "hookd_forward_attempts_total{result=\"%s\"} %" PRIu64 "\n", result_names[i],
                      atomic_load_explicit(&f->attempts[i], memory_order_relaxed));
    hk_buf_printf(b,
                  "# HELP hookd_forward_dead_letters_total Webhooks that ended failed (dead-lettered).\n"
                  "# TYPE hookd_forward_dead_letters_total counter\n"
                  "hookd_forward_dead_letters_total %" PRIu64 "\n"
                  "# HELP hookd_forward_inflight Deliveries in flight, all loops.\n"
                  "# TYPE hookd_forward_inflight gauge\n"
                  "hookd_forward_inflight %u\n"
                  "# HELP hookd_forward_inflight_bytes Bytes held for deliveries in flight.\n"
                  "# TYPE hookd_forward_inflight_bytes gauge\n"
                  "hookd_forward_inflight_bytes %" PRIu64 "\n"
                  "# HELP hookd_forward_claimed_total Rows taken from the outbox by this process's claims.\n"
                  "# TYPE hookd_forward_claimed_total counter\n"
                  "hookd_forward_claimed_total %" PRIu64 "\n"
                  "# HELP hookd_forward_settle_errors_total Attempt outcomes the store could not record "
                  "(the row is sent again once its lease ends).\n"
                  "# TYPE hookd_forward_settle_errors_total counter\n"
                  "hookd_forward_settle_errors_total %" PRIu64 "\n",
                  atomic_load_explicit(&f->dead, memory_order_relaxed),
                  sending,
                  atomic_load_explicit(&f->bytes, memory_order_relaxed),
                  atomic_load_explicit(&f->claimed, memory_order_relaxed),
                  atomic_load_explicit(&f->settle_errors, memory_order_relaxed));
    hk_buf_puts(b, "# HELP hookd_forward_latency_seconds From receipt to the sink's 2xx.\n"
                   "# TYPE hookd_forward_latency_seconds histogram\n");
    uint64_t cum = 0;
    for (size_t i = 0; i <= NLAT; i++) {
        cum += atomic_load_explicit(&f->lat[i], memory_order_relaxed);
        if (i < NLAT)
            hk_buf_printf(b, "hookd_forward_latency_seconds_bucket{le=\"%g\"} %" PRIu64 "\n", lat_le[i], cum);
        else
            hk_buf_printf(b, "hookd_forward_latency_seconds_bucket{le=\"+Inf\"} %" PRIu64 "\n", cum);
    }
    hk_buf_printf(b, "hookd_forward_latency_seconds_sum %.6f\nhookd_forward_latency_seconds_count %" PRIu64 "\n",
                  (double)atomic_load_explicit(&f->lat_sum_us, memory_order_relaxed) / 1e6, cum);
}

/* ---- POST /api/webhooks/{id}/redeliver ------------------------------------------- */

static void redeliver_row(struct hk_store_op *op, const struct hk_webhook *row)
{
    struct hk_req *r = op->data;
    hk_webhook_encode(hk_resp_body(r), row);
}

static void redeliver_done(struct hk_store_op *op)
{
    struct hk_req *r = op->data;
    hk_api_store_end(r, HK_OP_REDELIVER, op->status);
    if (op->status == HK_ENOTFOUND) {
        hk_resp_problem(r, 404, "Not Found", "no webhook has id %lld", (long long)op->id);
        return;
    }
    if (op->status < 0) {
        hk_resp_body(r)->len = 0;
        hk_resp_store_error(r, op->status);
        return;
    }
    hk_forward_wake(api_loop(r));
    hk_resp_send(r, 202, HK_CT_JSON);
}

void hk_api_webhook_redeliver(struct hk_req *r)
{
    struct hk_api_req *q = api_req(r);
    int64_t id;
    if (hk_api_parse_id(q->param, q->param_len, &id) < 0) {
        hk_resp_problem(r, 404, "Not Found", "no webhook has id %.*s", (int)(q->param_len > 40 ? 40 : q->param_len),
                        q->param);
        return;
    }
    if (!api_loop(r)->fwd) {
        hk_resp_problem_reason(r, 409, "forwarding_off",
                               "forwarding is off: set K_SINK or HOOKD_FORWARD_URL to redeliver");
        return;
    }
    struct hk_store_op *op = &q->op;
    memset(op, 0, sizeof *op);
    op->kind = HK_OP_REDELIVER;
    op->id = id;
    op->on_row = redeliver_row;
    op->on_done = redeliver_done;
    op->data = r;
    hk_api_store_begin(r);
    int rc = hk_store_submit(api_loop(r)->sl, op);
    if (rc < 0) {
        hk_api_store_end(r, HK_OP_REDELIVER, rc);
        hk_resp_store_error(r, rc);
    }
}
