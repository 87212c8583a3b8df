/* SPDX-License-Identifier: MIT
 * Retention (docs/forwarding.md): a timer on loop 0 that, every
 * HOOKD_PURGE_INTERVAL, runs PURGE batches one after another: each source
 * with its own `retention:`, then HOOKD_RETENTION and HOOKD_MAX_ROWS for
 * every other source, then HOOKD_MAX_BYTES. Counters for /q/metrics. */
#include <assert.h>
#include <inttypes.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "api/api_int.h"
#include "api/ingress.h"
#include "api/retention.h"
#include "core/buf.h"
#include "core/clock.h"
#include "core/ctr.h"
#include "core/log.h"
#include "ingress/sources.h"

/* A run stops after this many batches or this long, whichever comes
 * first, and the next run goes on a second later: a huge backlog is spread
 * over runs instead of keeping the store's writer busy for minutes. */
#define RUN_BATCHES_MAX 1000
#define RUN_NS_MAX (10 * UINT64_C(1000000000))

/* A batch's size adapts to what it costs here: while a batch holds the
 * store, the requests that need it wait, so a batch is kept near
 * BATCH_TARGET_NS (halved when it took more than twice that, grown by a
 * quarter when it took less than half), between BATCH_MIN rows and
 * HOOKD_PURGE_BATCH. Rows of 200 bytes or of 1 MB, a fast disk or a slow
 * one: a request meets at most about one such pause (measured: the mix's
 * p99 during purges, bench/hkbench/forward.py). */
#define BATCH_TARGET_NS (2 * UINT64_C(1000000))
#define BATCH_MIN 16
#define BATCH_START 64

/* The process-wide rules and counters. The counters have one writer
 * (loop 0) and are read by a scrape on any loop. */
struct hk_retention {
    struct hk_api *api;
    uint64_t age_ms;           /* HOOKD_RETENTION: 0 none */
    uint64_t max_rows;         /* HOOKD_MAX_ROWS: 0 none */
    uint64_t max_bytes;        /* HOOKD_MAX_BYTES: 0 none */
    uint64_t interval_ms;
    uint32_t batch;
    bool keep_pending;
    hk_ctr deleted, runs, errors;
    hk_ctr run_ns;             /* the last run's duration (a gauge) */
    hk_ctr store_bytes;        /* the last size a PURGE reported (a gauge) */
    _Atomic bool bytes_seen;
};

enum phase { PH_SOURCES, PH_GLOBAL, PH_BYTES, PH_DONE };

/* Loop 0's timer and the run in progress. */
struct hk_retention_loop {
    struct hk_retention *r;
    struct hk_api_loop *L;
    /* One timer drives everything: the next run (the interval) and the
     * next batch of a run (after a pause as long as the last batch took). */
    uv_timer_t timer;
    bool running, inflight, stopping;
    bool failing;              /* in a spell of store errors (logged once) */
    struct hk_store_op op;
    struct hk_purge_op purge;
    /* The run in progress. */
    struct hk_sources *snap;   /* a reference, or NULL (no sources file) */
    const char **except;       /* names (in snap) of sources with their own rules */
    size_t nexcept, except_cap;
    enum phase phase;
    size_t idx;                /* PH_SOURCES: the source being purged */
    int64_t now_us;            /* the run's "now": one age cutoff for all its batches */
    uint64_t start_ns, op_ns;
    uint64_t run_deleted;
    unsigned batches;
    uint32_t cur_batch;        /* the next batch's size (adapted; see BATCH_TARGET_NS) */
    int64_t keep_from;         /* the row cap's bound the rule's first batch found (store.h); 0: none yet */
    bool bytes_known;          /* a PURGE of this run reported the size */
    uint64_t bytes;            /* what it reported */
    /* The size at which deleting a full batch did not shrink the store
     * (PostgreSQL gives space back to VACUUM, not to DELETE): the size cap
     * waits until the store grows past it rather than deleting more
     * rows for nothing. 0: none. See past_floor for "past". */
    uint64_t bytes_floor;
    bool floor_logged;
};

static void on_timer(uv_timer_t *t);

/* Whether the store grew past the floor: by more than 1 MiB or 1/64 of it.
 * A PostgreSQL table grows a few pages without a new row (the visibility
 * and free-space maps VACUUM makes), which must not cost another batch. */
static bool past_floor(uint64_t bytes, uint64_t floor)
{
    uint64_t margin = floor / 64 > (1u << 20) ? floor / 64 : (1u << 20);
    return !floor || bytes > floor + margin;
}

int hk_retention_new(struct hk_api *a, struct hk_retention **out, char *err, size_t errlen)
{
    (void)err;
    (void)errlen;
    const struct hk_config *cfg = a->cfg;
    *out = NULL;
    /* With a sources file the rules may come later: a SIGHUP can give a
     * source `retention:` that the file did not have at start, and the
     * timer must already be there to apply it. Without either, nothing
     * could ever apply and no timer runs. */
    if (!cfg->retention_ms && !cfg->max_rows && !cfg->max_bytes && !cfg->sources_path)
        return 0;
    struct hk_retention *r = calloc(1, sizeof *r);
    if (!r)
        abort();
    r->api = a;
    r->age_ms = cfg->retention_ms;
    r->max_rows = cfg->max_rows;
    r->max_bytes = cfg->max_bytes;
    r->interval_ms = cfg->purge_interval_ms ? cfg->purge_interval_ms : 60000;
    r->batch = cfg->purge_batch ? cfg->purge_batch : 500;
    r->keep_pending = cfg->retention_keep_undelivered;
    *out = r;
    return 0;
}

void hk_retention_free(struct hk_retention *r)
{
    free(r);
}

/* ---- the run --------------------------------------------------------- */

static int64_t cutoff_us(int64_t now_us, uint64_t age_ms)
{
    if (!age_ms)
        return 0;
    /* Ages are at most 100 years (the options' bound): no overflow. */
    int64_t c = now_us - (int64_t)age_ms * 1000;
    return c > 0 ? c : 1;
}

static void run_begin(struct hk_retention_loop *rl)
{
    rl->running = true;
    rl->start_ns = hk_mono_ns();
    rl->now_us = hk_wall_us();
    rl->run_deleted = 0;
    rl->batches = 0;
    rl->bytes_known = false;
    rl->phase = PH_SOURCES;
    rl->idx = 0;
    rl->keep_from = 0;
    rl->nexcept = 0;
    /* The snapshot current now: a SIGHUP between runs applies from the next. */
    rl->snap = hk_ingress_snapshot(rl->r->api->ingress);
    if (!rl->snap)
        return;
    if (rl->snap->n > rl->except_cap) {
        const char **v = realloc(rl->except, rl->snap->n * sizeof *v);
        if (!v)
            abort();
        rl->except = v;
        rl->except_cap = rl->snap->n;
    }
    /* A source with `retention:` has its own rules in place of the global
     * age and row ones, even when they keep everything (maxAge: 0). */
    for (size_t i = 0; i < rl->snap->n; i++)
        if (rl->snap->v[i].retention.set)
            rl->except[rl->nexcept++] = rl->snap->v[i].name;
}

static void run_end(struct hk_retention_loop *rl, bool cut)
{
    struct hk_retention *r = rl->r;
    uint64_t ns = hk_mono_ns() - rl->start_ns;
    hk_ctr_add(&r->runs, 1);
    atomic_store_explicit(&r->run_ns, ns, memory_order_relaxed);
    if (rl->run_deleted)
        hk_info("retention: webhooks deleted",
                "\"deleted\":%" PRIu64 ",\"batches\":%u,\"seconds\":%.3f,\"storeBytes\":%" PRIu64
                ",\"more\":%s",
                rl->run_deleted, rl->batches, (double)ns / 1e9, rl->bytes_known ? rl->bytes : 0,
                cut ? "true" : "false");
    hk_sources_unref(rl->snap);
    rl->snap = NULL;
    rl->nexcept = 0;
    rl->running = false;
}

/* Fill rl->purge with the current phase's next batch, moving on past the
 * phases that have nothing to do. False when the run is over. */
static bool prepare(struct hk_retention_loop *rl)
{
    struct hk_retention *r = rl->r;
    struct hk_purge_op *p = &rl->purge;
    for (;;) {
        memset(p, 0, sizeof *p);
        p->limit = rl->cur_batch;
        p->keep_from = rl->keep_from;
        p->keep_pending = r->keep_pending;
        switch (rl->phase) {
        case PH_SOURCES:
            if (rl->snap && rl->idx < rl->snap->n) {
                const struct hk_source *src = &rl->snap->v[rl->idx];
                if (src->retention.set && (src->retention.max_age_ms || src->retention.max_rows)) {
                    p->source = src->name;
                    p->before_us = cutoff_us(rl->now_us, src->retention.max_age_ms);
                    p->keep_rows = src->retention.max_rows;
                    return true;
                }
                rl->idx++;
                continue;
            }
            rl->phase = PH_GLOBAL;
            continue;
        case PH_GLOBAL:
            if (r->age_ms || r->max_rows) {
                p->before_us = cutoff_us(rl->now_us, r->age_ms);
                p->keep_rows = r->max_rows;
                p->except = rl->nexcept ? rl->except : NULL;
                p->nexcept = rl->nexcept;
                return true;
            }
            rl->phase = PH_BYTES;
            continue;
        case PH_BYTES:
            if (!r->max_bytes) {
                rl->phase = PH_DONE;
                continue;
            }
            /* Nothing of this run told the size yet: a PURGE without
             * bounds deletes nothing and reports it. */
            if (!rl->bytes_known)
                return true;
            if (rl->bytes > r->max_bytes && past_floor(rl->bytes, rl->bytes_floor)) {
                p->oldest = rl->cur_batch;
                return true;
            }
            rl->phase = PH_DONE;
            continue;
        case PH_DONE:
            return false;
        }
    }
}

static const char *err_name(int status)
{
    switch (status) {
    case HK_EBUSY: return "busy";
    case HK_EUNAVAIL: return "unavailable";
    case HK_ETIMEDOUT: return "timeout";
    case HK_EINVAL: return "invalid";
    case HK_ECONFLICT: return "conflict";
    case HK_EFULL: return "disk full";
    case HK_ELOCKED: return "locked";
    case HK_EIO: return "i/o error";
    case HK_ENOTFOUND: return "not found";
    default: return "store error";
    }
}

/* A store error ends the run; the next one tries again. One line per
 * spell of errors, one when a batch succeeds again. */
static void store_failed(struct hk_retention_loop *rl, int status)
{
    hk_ctr_add(&rl->r->errors, 1);
    if (!rl->failing) {
        rl->failing = true;
        hk_warn("retention: purge failed, retrying at the next run", "\"error\":\"%s\",\"phase\":\"%s\"",
                err_name(status),
                rl->phase == PH_SOURCES ? "source" : rl->phase == PH_GLOBAL ? "global" : "size");
    }
    run_end(rl, false);
}

/* The next batch's size from what this one took (see BATCH_TARGET_NS). A
 * short batch (a rule's last, or a size probe that deletes nothing) says
 * nothing about a full one's cost: only full ones move it. */
static void adapt(struct hk_retention_loop *rl, bool full, uint64_t took_ns)
{
    uint32_t max = rl->r->batch, cur = rl->cur_batch;
    if (!full)
        return;
    if (took_ns > 2 * BATCH_TARGET_NS)
        cur /= 2;
    else if (took_ns < BATCH_TARGET_NS / 2)
        cur += cur / 4 + 1;
    if (cur < BATCH_MIN)
        cur = BATCH_MIN;
    if (cur > max)
        cur = max;
    rl->cur_batch = cur;
}

static void arm(struct hk_retention_loop *rl, uint64_t ms)
{
    uv_timer_start(&rl->timer, on_timer, ms, 0);
}

static void on_done(struct hk_store_op *op)
{
    struct hk_retention_loop *rl = op->data;
    struct hk_retention *r = rl->r;
    struct hk_api_loop *L = rl->L;
    struct hk_purge_op *p = &rl->purge;
    rl->inflight = false;
    uint64_t took_ns = hk_mono_ns() - rl->op_ns;
    hk_obs_store(rl->L->obs, HK_OP_PURGE, op->status, took_ns);
    if (op->status < 0) {
        store_failed(rl, op->status);
        if (!rl->stopping)
            arm(rl, r->interval_ms);
    } else {
        if (rl->failing) {
            rl->failing = false;
            hk_info("retention: purging again", NULL);
        }
        rl->batches++;
        rl->run_deleted += p->deleted;
        adapt(rl, p->deleted >= p->limit, took_ns);
        rl->keep_from = p->keep_rows ? p->keep_from : 0;
        hk_ctr_add(&r->deleted, p->deleted);
        bool shrank = !rl->bytes_known || p->store_bytes < rl->bytes;
        rl->bytes_known = true;
        rl->bytes = p->store_bytes;
        if (rl->bytes <= r->max_bytes) {
            rl->bytes_floor = 0;
            rl->floor_logged = false;
        }
        atomic_store_explicit(&r->store_bytes, p->store_bytes, memory_order_relaxed);
        atomic_store_explicit(&r->bytes_seen, true, memory_order_relaxed);
        /* A full batch: there may be more of the same. A short one: this
         * rule is done for now. */
        bool full = p->deleted >= p->limit;
        switch (rl->phase) {
        case PH_SOURCES:
            if (!full) {
                rl->idx++;
                rl->keep_from = 0;   /* the next rule walks for its own */
            }
            break;
        case PH_GLOBAL:
            if (!full) {
                rl->phase = PH_BYTES;
                rl->keep_from = 0;
            }
            break;
        case PH_BYTES:
            if (p->oldest && !full) {
                rl->phase = PH_DONE;           /* nothing deletable left */
            } else if (p->oldest && !shrank) {
                rl->bytes_floor = p->store_bytes;
                rl->phase = PH_DONE;
                if (!rl->floor_logged) {
                    rl->floor_logged = true;
                    hk_info("retention: deleting webhooks did not shrink the store; HOOKD_MAX_BYTES waits for it "
                            "to grow (PostgreSQL returns space to VACUUM, not to DELETE)",
                            "\"storeBytes\":%" PRIu64, p->store_bytes);
                }
            }
            break;
        case PH_DONE:
            break;
        }
        if (rl->stopping) {
            run_end(rl, true);
        } else {
            /* The next batch after a pause as long as this one took: purges
             * hold the store (SQLite's writer, PostgreSQL's locks and I/O)
             * at most half the time, so requests meanwhile wait for one
             * batch at most (measured: the mix's p99 during purges). */
            uint64_t ms = (took_ns + 999999) / 1000000;
            arm(rl, ms < 1 ? 1 : ms > 1000 ? 1000 : ms);
        }
    }
    /* Last: after a stop, the last background op to end detaches the
     * loop's store handle (app.c). */
    hk_api_bg_end(L);
}

/* Submit the run's next batch, or end the run and wait for the next. */
static void step(struct hk_retention_loop *rl)
{
    struct hk_retention *r = rl->r;
    bool cut = rl->batches >= RUN_BATCHES_MAX || hk_mono_ns() - rl->start_ns >= RUN_NS_MAX;
    if (cut || !prepare(rl)) {
        bool more = cut && rl->phase != PH_DONE;
        run_end(rl, more);
        /* A run cut short goes on after a second's rest, not a whole
         * interval: a backlog larger than one run must still shrink. */
        arm(rl, more && r->interval_ms > 1000 ? 1000 : r->interval_ms);
        return;
    }
    struct hk_store_op *op = &rl->op;
    memset(op, 0, sizeof *op);
    op->kind = HK_OP_PURGE;
    op->purge = &rl->purge;
    op->on_done = on_done;
    op->data = rl;
    rl->op_ns = hk_mono_ns();
    rl->inflight = true;
    hk_api_bg_begin(rl->L);
    /* on_done may run before submit returns (and then already armed the
     * timer): nothing of rl is touched after a submit that worked. */
    int rc = hk_store_submit(rl->L->sl, op);
    if (rc < 0) {
        /* Refused at once (queue full, store down): on_done will not run. */
        rl->inflight = false;
        hk_obs_store(rl->L->obs, HK_OP_PURGE, rc, 0);
        store_failed(rl, rc);
        arm(rl, r->interval_ms);
        hk_api_bg_end(rl->L);
    }
}

static void on_timer(uv_timer_t *t)
{
    struct hk_retention_loop *rl = t->data;
    if (rl->stopping || rl->inflight)
        return;                /* never two batches at once */
    if (!rl->running)
        run_begin(rl);
    step(rl);
}

/* ---- loops ------------------------------------------------------------ */

void hk_retention_loop_start(struct hk_api_loop *L)
{
    struct hk_retention *r = L->api->retention;
    L->retention = NULL;
    if (!r || L->w->index != 0)
        return;
    struct hk_retention_loop *rl = calloc(1, sizeof *rl);
    if (!rl)
        abort();
    rl->r = r;
    rl->L = L;
    rl->cur_batch = r->batch < BATCH_START ? r->batch : BATCH_START;
    uv_timer_init(&L->w->loop, &rl->timer);
    rl->timer.data = rl;
    arm(rl, r->interval_ms);
    L->retention = rl;
}

void hk_retention_loop_stop(struct hk_api_loop *L)
{
    struct hk_retention_loop *rl = L->retention;
    if (!rl || rl->stopping)
        return;
    rl->stopping = true;
    uv_close((uv_handle_t *)&rl->timer, NULL);
    /* A batch in flight completes (on_done then submits nothing more and
     * ends the run); between batches, the run ends here. */
    if (rl->running && !rl->inflight)
        run_end(rl, true);
}

void hk_retention_loop_free(struct hk_api_loop *L)
{
    struct hk_retention_loop *rl = L->retention;
    if (!rl)
        return;
    /* The loop has run to its end: the timer is closed, nothing in flight. */
    assert(rl->stopping && !rl->inflight && !rl->running);
    hk_sources_unref(rl->snap);
    free(rl->except);
    free(rl);
    L->retention = NULL;
}

/* ---- metrics ---------------------------------------------------------- */

static void family(struct hk_buf *b, const char *name, const char *type, const char *help)
{
    hk_buf_printf(b, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, type);
}

static uint64_t get(const hk_ctr *c)
{
    return atomic_load_explicit(c, memory_order_relaxed);
}

void hk_retention_metrics(const struct hk_retention *r, struct hk_buf *b)
{
    if (!r)
        return;
    family(b, "hookd_retention_deleted_total", "counter", "Webhooks deleted by retention.");
    hk_buf_printf(b, "hookd_retention_deleted_total %" PRIu64 "\n", get(&r->deleted));
    family(b, "hookd_retention_runs_total", "counter", "Retention runs (every HOOKD_PURGE_INTERVAL).");
    hk_buf_printf(b, "hookd_retention_runs_total %" PRIu64 "\n", get(&r->runs));
    family(b, "hookd_retention_errors_total", "counter", "Retention batches the store failed.");
    hk_buf_printf(b, "hookd_retention_errors_total %" PRIu64 "\n", get(&r->errors));
    family(b, "hookd_retention_run_seconds", "gauge", "How long the last retention run took.");
    uint64_t ns = get(&r->run_ns);
    hk_buf_printf(b, "hookd_retention_run_seconds %" PRIu64 ".%09" PRIu64 "\n", ns / 1000000000u,
                  ns % 1000000000u);
    if (atomic_load_explicit(&r->bytes_seen, memory_order_relaxed)) {
        family(b, "hookd_store_bytes", "gauge", "The store's size as its last purge reported it.");
        hk_buf_printf(b, "hookd_store_bytes %" PRIu64 "\n", get(&r->store_bytes));
    }
}
