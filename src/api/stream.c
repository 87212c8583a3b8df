/* SPDX-License-Identifier: MIT
 * The live feed (docs/forwarding.md): GET /api/webhooks/stream as
 * Server-Sent Events, and the hub that reads stored rows in id order on
 * loop 0 and hands each, rendered once, to every loop that has clients. */
#include "api/stream.h"

#include <assert.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "api/api_int.h"
#include "core/clock.h"
#include "core/log.h"
#include "core/utf8.h"
#include "http/query.h"
#include "ingress/provider.h"

#define HUB_BATCH_MAX 500          /* rows per hub read */
#define HUB_BATCH_BYTES (1 << 20)  /* ... fewer when rows are large */
#define REPLAY_BATCH_MAX 200       /* rows per replay read */
#define REPLAY_BATCH_BYTES (256 * 1024)
/* A replaying client's next batch waits for the peer while more than this
 * is unsent: a replay costs about one batch of memory, whatever its length. */
#define REPLAY_PACE (64 * 1024)
/* Events queued for one loop and not consumed yet: over it the hub reads
 * no more (the rows wait in the store) until that loop catches up. */
#define LOOP_WINDOW (4u << 20)
#define TICK_MS 1000               /* a read at least this often while clients exist */
#define GAP_MS 100                 /* docs/forwarding.md: a missing id is final after this */
#define ANNOUNCE_MS 50             /* NOTIFYs to other replicas, at most one per this */
#define ANNOUNCE_AFTER_MS 10       /* and this long after the commit that calls for one */
/* PostgreSQL: how far below the newest id a hub that starts reads, so that
 * an id handed out before the start and committed after it is not
 * skipped (ids are taken in time order; inserts are single statements). */
#define BACKFILL 256
/* A client waits this long at most for the hub to start (a store that is
 * down): then a 503. */
#define START_WAIT_MS 10000
#define SCRATCH_KEEP (256 * 1024)   /* rendering buffers kept after a large row */
#define FILTER_MAX (4 * HK_SOURCE_MAX + 4 * HK_EVENT_TYPE_MAX + HK_META_MAX)

static const char RETRY[] = "retry: 2000\n\n";
static const char HEARTBEAT[] = ": hb\n\n";

enum reason { R_SLOW, R_CLOSED, R_SHUTDOWN, R_ERROR, R__COUNT };
static const char *const reason_names[R__COUNT] = {"slow", "closed", "shutdown", "error"};

/* A published row, rendered once as its SSE event; shared by the loops'
 * queues and the clients' replay buffers, freed by the last to let go. */
struct frame {
    atomic_uint refs;
    int64_t id;
    uint8_t delivery;          /* the row's delivery state + 1, as hk_list_query.delivery */
    bool has_did;
    size_t len;                /* the event's bytes, at data */
    const char *source, *event_type, *did;   /* into data, after the event */
    size_t source_len, event_type_len, did_len;
    char data[];
};

enum cstate { C_WAIT, C_REPLAY, C_LIVE };

/* One stream. Made by the handler, ended by whichever comes first (the
 * peer leaving, a cut, the server stopping), freed once its timer has
 * closed and no replay read is in flight (the read uses its filters). */
struct client {
    struct hk_stream_loop *sl;
    struct hk_req *r;          /* NULL once the request has ended */
    struct client *prev, *next;
    uv_timer_t hb;
    enum cstate state;
    bool ended, hb_closed;
    bool op_busy;              /* a replay read in flight: it holds the loop */
    bool stepping, step_again;
    bool kick;                 /* just subscribed by the loop's wake: its head and replay are due */
    bool resume;               /* Last-Event-ID or ?after= given */
    int64_t resume_after;
    int64_t w0;                /* the hub's W when it subscribed */
    int64_t live_after;        /* live events above it go out */
    int64_t cursor;            /* replay: the last id read */
    uint32_t limit;            /* replay: rows per read */
    uint32_t nrows;
    size_t batch_bytes;
    uint64_t op_start;
    uint64_t last_write;       /* loop ms */
    struct frame **pend;       /* live events that came during the replay */
    size_t npend, pcap, pend_bytes;
    struct hk_store_op op;
    const char *source, *event_type, *did;
    size_t source_len, event_type_len, did_len;
    uint8_t delivery;
    char strs[];
};

struct hk_stream_loop {
    struct hk_stream_hub *hub;
    struct hk_api_loop *L;
    uv_async_t wake;
    /* Under hub->mu. */
    struct frame **q;
    size_t qn, qcap, qbytes;
    unsigned nsub;             /* clients that take live events */
    unsigned nwait;            /* clients waiting for the hub to start */
    /* The loop's own. */
    struct frame **work;
    size_t wcap;
    struct client *clients;
    struct hk_buf json, ev;    /* rendering scratch */
};

enum hstate { H_OFF, H_START, H_WARM, H_LIVE };
enum rkind { RD_PROBE, RD_MAX, RD_NEXT };

struct hk_stream_hub {
    struct hk_api *api;
    const struct hk_config *cfg;
    pthread_mutex_t mu;
    /* Under mu. */
    struct hk_stream_loop **loops;
    size_t nloops, lcap;
    unsigned nactive;          /* clients on every loop, waiting ones included */
    enum hstate state;
    int64_t w;                 /* the watermark W (written on loop 0 only) */
    bool open;                 /* loop 0's handles may be signalled */
    bool paused;               /* a loop's queue is over LOOP_WINDOW */
    /* Any thread. */
    atomic_bool commit_pending;
    atomic_uint_least64_t events;
    atomic_uint_least64_t disc[R__COUNT];
    /* Loop 0's, from here on. */
    struct hk_api_loop *L0;    /* NULL before loop 0 starts and once it stops */
    uv_async_t wake;
    uv_timer_t tick, gap_timer, ann_timer;
    bool watching, watch_warned;
    int gaps;                  /* -1 not known yet; 0 ids commit in order (SQLite); 1 they may not */
    int64_t target;            /* H_WARM: the newest id when the hub started */
    uint64_t last_announce;
    bool announce_due;
    bool running, rerun;
    /* The read in flight. */
    struct hk_store_op op;
    enum rkind op_kind;
    bool op_busy;
    uint64_t op_start;
    uint32_t limit;
    int64_t newest;
    int64_t *ids;
    struct frame **frames;
    size_t nrows;
    size_t bytes;
    uint64_t fail_logged;      /* loop ms of the last failed-read line */
    /* A missing id below rows that are there (PostgreSQL): rows above it
     * wait until the transactions running at the read that found it have
     * ended and GAP_MS passed; the read after that decides. */
    bool gap, gap_confirm;
    int64_t gap_upto;          /* the highest id of that read: holes up to it share its fate */
    uint64_t gap_xip;          /* that read's newest running transaction (0: none) */
    uint64_t gap_ms;
};

/* --- events --- */

static void frame_unref(struct frame *f)
{
    if (atomic_fetch_sub_explicit(&f->refs, 1, memory_order_acq_rel) == 1)
        free(f);
}

static void frame_ref(struct frame *f)
{
    atomic_fetch_add_explicit(&f->refs, 1, memory_order_relaxed);
}

/* `row` as an SSE event appended to ev: "id: N", then the row's JSON (as
 * GET /api/webhooks/{id} shows it) in data lines. The encoder escapes
 * line ends inside strings; any outside (whitespace in a stored object)
 * start a new data line, which a client joins back with "\n". */
static void render(struct hk_buf *json, struct hk_buf *ev, const struct hk_webhook *row)
{
    json->len = 0;
    hk_webhook_encode(json, row);
    hk_buf_put(ev, "id: ", 4);
    hk_buf_put_i64(ev, row->id);
    hk_buf_put(ev, "\ndata: ", 7);
    const char *p = json->p, *end = json->p + json->len;
    while (p < end) {
        const char *q = p;
        while (q < end && *q != '\n' && *q != '\r')
            q++;
        hk_buf_put(ev, p, (size_t)(q - p));
        if (q == end)
            break;
        if (*q == '\r' && q + 1 < end && q[1] == '\n')
            q++;
        hk_buf_put(ev, "\ndata: ", 7);
        p = q + 1;
    }
    hk_buf_put(ev, "\n\n", 2);
}

static struct frame *frame_new(struct hk_buf *json, struct hk_buf *ev, const struct hk_webhook *row)
{
    ev->len = 0;
    render(json, ev, row);
    bool has_did = row->ingress && row->delivery_id;
    size_t did_len = has_did ? row->delivery_id_len : 0;
    struct frame *f = malloc(sizeof *f + ev->len + row->source_len + row->event_type_len + did_len);
    if (!f)
        abort();
    atomic_init(&f->refs, 1);
    f->id = row->id;
    f->delivery = (uint8_t)(row->delivery.state + 1);
    f->has_did = has_did;
    f->len = ev->len;
    char *p = f->data;
    memcpy(p, ev->p, ev->len);
    p += ev->len;
    f->source = p;
    f->source_len = row->source_len;
    if (row->source_len)
        memcpy(p, row->source, row->source_len);
    p += row->source_len;
    f->event_type = p;
    f->event_type_len = row->event_type_len;
    if (row->event_type_len)
        memcpy(p, row->event_type, row->event_type_len);
    p += row->event_type_len;
    f->did = p;
    f->did_len = did_len;
    if (did_len)
        memcpy(p, row->delivery_id, did_len);
    hk_buf_reset(json, SCRATCH_KEEP);
    hk_buf_reset(ev, SCRATCH_KEEP);
    return f;
}

/* The list's filters, applied to a live event (the store applies them to a replay). */
static bool matches(const struct client *c, const struct frame *f)
{
    if (c->source && (f->source_len != c->source_len || memcmp(f->source, c->source, c->source_len) != 0))
        return false;
    if (c->event_type &&
        (f->event_type_len != c->event_type_len || memcmp(f->event_type, c->event_type, c->event_type_len) != 0))
        return false;
    if (c->did && (!f->has_did || f->did_len != c->did_len || memcmp(f->did, c->did, c->did_len) != 0))
        return false;
    return !c->delivery || c->delivery == f->delivery;
}

/* --- clients --- */

static void hub_kick_locked(struct hk_stream_hub *h)
{
    if (h->open)
        uv_async_send(&h->wake);
}

static void pend_drop(struct client *c)
{
    for (size_t i = 0; i < c->npend; i++)
        frame_unref(c->pend[i]);
    free(c->pend);
    c->pend = NULL;
    c->npend = c->pcap = c->pend_bytes = 0;
}

static void client_free_maybe(struct client *c)
{
    if (c->hb_closed && !c->op_busy)
        free(c);
}

static void on_hb_closed(uv_handle_t *t)
{
    struct client *c = t->data;
    c->hb_closed = true;
    client_free_maybe(c);
}

/* End the stream (once): cut drops what is unsent and closes at once;
 * otherwise the last chunk goes out first. Safe from inside a write to
 * this client: the memory stays until the timer has closed. */
static void client_end(struct client *c, enum reason why, bool cut)
{
    if (c->ended)
        return;
    c->ended = true;
    struct hk_stream_loop *sl = c->sl;
    struct hk_stream_hub *h = sl->hub;
    atomic_fetch_add_explicit(&h->disc[why], 1, memory_order_relaxed);
    struct hk_req *r = c->r;
    c->r = NULL;
    if (c->prev)
        c->prev->next = c->next;
    else
        sl->clients = c->next;
    if (c->next)
        c->next->prev = c->prev;
    c->prev = c->next = NULL;
    pthread_mutex_lock(&h->mu);
    h->nactive--;
    if (c->state == C_WAIT)
        sl->nwait--;
    else
        sl->nsub--;
    pthread_mutex_unlock(&h->mu);
    pend_drop(c);
    uv_close((uv_handle_t *)&c->hb, on_hb_closed);
    if (r) {
        r->handler_data = NULL;
        if (cut)
            hk_resp_cut_stream(r);
        else if (!r->streaming)
            /* Still waiting for the hub: nothing was sent yet. */
            hk_resp_unavailable(r, 503, why == R_SHUTDOWN ? "shutting_down" : "store_unavailable", 1,
                                why == R_SHUTDOWN ? "the server is stopping"
                                                  : "the live feed could not read the store in time");
        else
            hk_resp_end_stream(r);
    }
}

static void on_gone(struct hk_req *r)
{
    struct client *c = r->handler_data;
    if (c)
        client_end(c, R_CLOSED, true);
}

/* The server stops: a clean end when nothing waits to be sent, else a cut
 * (a client resumes from the last event it got). */
static void on_cancel(struct hk_req *r)
{
    struct client *c = r->handler_data;
    if (c)
        client_end(c, R_SHUTDOWN, hk_resp_unsent(r) > 0);
}

static const struct hk_config *cfg_of(const struct client *c)
{
    return c->sl->hub->cfg;
}

static uint64_t loop_now(const struct client *c)
{
    return uv_now(&c->sl->L->w->loop);
}

static void count_events(struct hk_stream_hub *h, uint64_t n)
{
    if (n)
        atomic_fetch_add_explicit(&h->events, n, memory_order_relaxed);
}

/* Would `n` more bytes put the client over HOOKD_STREAM_BUFFER? A client
 * that has taken everything may always get one event, however large. */
static bool over_cap(const struct client *c, size_t n)
{
    size_t held = hk_resp_unsent(c->r) + c->pend_bytes;
    return held > 0 && held + n > cfg_of(c)->stream_buffer;
}

static void write_bytes(struct client *c, const void *p, size_t n)
{
    hk_resp_chunk_put(c->r, p, n);
    c->last_write = loop_now(c);
}

static void on_hb(uv_timer_t *t)
{
    struct client *c = t->data;
    if (c->ended)
        return;
    if (c->state == C_WAIT) {
        client_end(c, R_ERROR, false);
        return;
    }
    uint64_t now = loop_now(c), every = cfg_of(c)->stream_heartbeat_ms;
    if (now - c->last_write >= every) {
        if (over_cap(c, sizeof HEARTBEAT - 1)) {
            client_end(c, R_SLOW, true);
            return;
        }
        write_bytes(c, HEARTBEAT, sizeof HEARTBEAT - 1);
        hk_resp_flush(c->r);
        if (c->ended)
            return;
    }
    uint64_t due = c->last_write + every;
    uv_timer_start(&c->hb, on_hb, due > now ? due - now : every, 0);
}

/* Live events for one client, in id order; one flush at the end. */
static void deliver(struct client *c, struct frame *const *f, size_t n)
{
    uint64_t sent = 0;
    for (size_t i = 0; i < n && !c->ended; i++) {
        struct frame *fr = f[i];
        if (fr->id <= c->live_after || !matches(c, fr))
            continue;
        if (over_cap(c, fr->len)) {
            client_end(c, R_SLOW, true);
            break;
        }
        if (c->state == C_REPLAY) {
            if (c->npend == c->pcap) {
                c->pcap = c->pcap ? 2 * c->pcap : 16;
                c->pend = realloc(c->pend, c->pcap * sizeof *c->pend);
                if (!c->pend)
                    abort();
            }
            frame_ref(fr);
            c->pend[c->npend++] = fr;
            c->pend_bytes += fr->len;
            continue;
        }
        write_bytes(c, fr->data, fr->len);
        c->live_after = fr->id;
        sent++;
    }
    count_events(c->sl->hub, sent);
    if (sent && !c->ended)
        hk_resp_flush(c->r);
}

/* --- replay: what a resuming client missed, from the store on its loop --- */

static void replay_step(struct client *c);

static void replay_row(struct hk_store_op *op, const struct hk_webhook *row)
{
    struct client *c = op->data;
    c->nrows++;
    c->cursor = row->id;
    if (c->ended)
        return;
    struct hk_stream_loop *sl = c->sl;
    sl->ev.len = 0;
    render(&sl->json, &sl->ev, row);
    c->batch_bytes += sl->ev.len;
    write_bytes(c, sl->ev.p, sl->ev.len);
    count_events(sl->hub, 1);
    hk_buf_reset(&sl->json, SCRATCH_KEEP);
    hk_buf_reset(&sl->ev, SCRATCH_KEEP);
}

static void replay_drained(struct hk_req *r)
{
    struct client *c = r->handler_data;
    if (c)
        replay_step(c);
}

static void replay_done(struct hk_store_op *op)
{
    struct client *c = op->data;
    struct hk_api_loop *L = c->sl->L;
    c->op_busy = false;
    hk_obs_store(L->obs, HK_OP_LIST, op->status, hk_mono_ns() - c->op_start);
    hk_worker_release(L->w);
    if (c->ended) {
        client_free_maybe(c);
        return;
    }
    if (op->status < 0) {
        hk_log_req(HK_LOG_WARN, c->r->req_id, "live feed: replay read failed, closing the stream",
                   "\"code\":%d", op->status);
        client_end(c, R_ERROR, true);
        return;
    }
    bool more = c->nrows == op->list.limit;
    size_t per_row = c->batch_bytes / (c->nrows ? c->nrows : 1);
    size_t target = cfg_of(c)->stream_buffer / 4 < REPLAY_BATCH_BYTES ? cfg_of(c)->stream_buffer / 4
                                                                       : REPLAY_BATCH_BYTES;
    size_t next = target / (per_row ? per_row : 1);
    c->limit = (uint32_t)(next < 1 ? 1 : next > REPLAY_BATCH_MAX ? REPLAY_BATCH_MAX : next);
    if (more) {
        if (hk_resp_unsent(c->r) > REPLAY_PACE) {
            hk_resp_wait_drain(c->r, replay_drained, on_gone);
            return;
        }
        hk_resp_flush(c->r);
        if (!c->ended)
            replay_step(c);
        return;
    }
    /* Caught up with W0: the live events that came meanwhile, then live. */
    uint64_t sent = 0;
    for (size_t i = 0; i < c->npend; i++) {
        write_bytes(c, c->pend[i]->data, c->pend[i]->len);
        c->live_after = c->pend[i]->id;
        sent++;
    }
    pend_drop(c);
    c->state = C_LIVE;
    count_events(c->sl->hub, sent);
    hk_resp_flush(c->r);
}

/* One replay read: ids in (cursor, W0] with the client's filters. A read
 * that completes inside submit (SQLite) asks for the next through
 * step_again instead of recursing. */
static void replay_step(struct client *c)
{
    if (c->stepping) {
        c->step_again = true;
        return;
    }
    c->stepping = true;
    do {
        c->step_again = false;
        if (c->ended || c->op_busy)
            break;
        struct hk_api_loop *L = c->sl->L;
        if (!L->sl || !hk_worker_hold(L->w)) {
            client_end(c, R_SHUTDOWN, true);
            break;
        }
        struct hk_store_op *op = &c->op;
        memset(op, 0, sizeof *op);
        op->kind = HK_OP_LIST;
        op->list.ascending = true;
        op->list.after = c->cursor;
        op->list.before = c->w0 < INT64_MAX ? c->w0 + 1 : 0;
        op->list.limit = c->limit;
        op->list.source = c->source;
        op->list.source_len = c->source_len;
        op->list.event_type = c->event_type;
        op->list.event_type_len = c->event_type_len;
        op->list.delivery_id = c->did;
        op->list.delivery_id_len = c->did_len;
        op->list.delivery = c->delivery;
        op->on_row = replay_row;
        op->on_done = replay_done;
        op->data = c;
        c->op_busy = true;
        c->nrows = 0;
        c->batch_bytes = 0;
        c->op_start = hk_mono_ns();
        int rc = hk_store_submit(L->sl, op);
        if (rc < 0) {
            c->op_busy = false;
            hk_worker_release(L->w);
            hk_obs_store(L->obs, HK_OP_LIST, rc, hk_mono_ns() - c->op_start);
            client_end(c, R_ERROR, true);
            break;
        }
    } while (c->step_again);
    c->stepping = false;
}

/* Under the hub's lock: from now on the client's loop gets every event
 * above W0 = W. */
static void subscribe_locked(struct hk_stream_hub *h, struct client *c)
{
    c->w0 = h->w;
    c->sl->nsub++;
    if (c->resume && c->resume_after < c->w0) {
        c->state = C_REPLAY;
        c->cursor = c->resume_after;
        c->live_after = c->w0;
    } else {
        c->state = C_LIVE;
        c->live_after = c->resume ? c->resume_after : c->w0;
    }
}

static void stream_head(struct hk_req *r)
{
    hk_resp_header(r, "Cache-Control", "no-store", 8);
    /* nginx would otherwise hold the events back to fill its buffer. */
    hk_resp_header(r, "X-Accel-Buffering", "no", 2);
    hk_resp_begin_stream(r, 200, "text/event-stream");
}

/* Subscribed: the head goes out only now, so that a client that has it
 * gets every row committed after (W0 is no older than the head). Then
 * the retry field, the heartbeat, and the replay of a resuming client. */
static void client_start(struct client *c)
{
    stream_head(c->r);
    write_bytes(c, RETRY, sizeof RETRY - 1);
    uv_timer_start(&c->hb, on_hb, cfg_of(c)->stream_heartbeat_ms, 0);
    hk_resp_flush(c->r);
    if (!c->ended && c->state == C_REPLAY)
        replay_step(c);
}

/* --- each loop: the hub's events in, to the clients --- */

static void on_loop_wake(uv_async_t *a)
{
    struct hk_stream_loop *sl = a->data;
    struct hk_stream_hub *h = sl->hub;
    bool started = false;
    pthread_mutex_lock(&h->mu);
    /* Take the queue; the hub goes on with the other array. */
    struct frame **f = sl->q;
    size_t n = sl->qn, fcap = sl->qcap;
    sl->q = sl->work;
    sl->qcap = sl->wcap;
    sl->qn = 0;
    sl->qbytes = 0;
    sl->work = f;
    sl->wcap = fcap;
    /* Everything just taken is <= W: clients subscribed now skip it. */
    if (h->state == H_LIVE && sl->nwait) {
        for (struct client *c = sl->clients; c; c = c->next)
            if (c->state == C_WAIT) {
                sl->nwait--;
                subscribe_locked(h, c);
                c->kick = true;
                started = true;
            }
    }
    if (h->paused)
        hub_kick_locked(h);
    pthread_mutex_unlock(&h->mu);
    if (n) {
        for (struct client *c = sl->clients, *next; c; c = next) {
            next = c->next;
            if (c->state != C_WAIT && !c->kick)
                deliver(c, f, n);
        }
        for (size_t i = 0; i < n; i++)
            frame_unref(f[i]);
    }
    if (started)
        for (struct client *c = sl->clients, *next; c; c = next) {
            next = c->next;
            if (c->kick) {
                c->kick = false;
                client_start(c);
            }
        }
}

/* --- the hub, on loop 0 --- */

static void hub_run(struct hk_stream_hub *h);

static void on_hub_timer(uv_timer_t *t)
{
    hub_run(t->data);
}

static bool window_full_locked(const struct hk_stream_hub *h)
{
    for (size_t i = 0; i < h->nloops; i++)
        if (h->loops[i]->qbytes > LOOP_WINDOW)
            return true;
    return false;
}

static void notify_ready_locked(struct hk_stream_hub *h)
{
    for (size_t i = 0; i < h->nloops; i++)
        if (h->loops[i]->nwait)
            uv_async_send(&h->loops[i]->wake);
}

static void push_locked(struct hk_stream_loop *sl, struct frame *f)
{
    if (sl->qn == sl->qcap) {
        sl->qcap = sl->qcap ? 2 * sl->qcap : 64;
        sl->q = realloc(sl->q, sl->qcap * sizeof *sl->q);
        if (!sl->q)
            abort();
    }
    frame_ref(f);
    sl->q[sl->qn++] = f;
    sl->qbytes += f->len;
}

static void hub_row(struct hk_store_op *op, const struct hk_webhook *row)
{
    struct hk_stream_hub *h = op->data;
    if (h->op_kind == RD_MAX) {
        h->newest = row->id;
        return;
    }
    if (h->op_kind != RD_NEXT || h->nrows >= HUB_BATCH_MAX)
        return;
    struct frame *f = NULL;
    /* Rows published before the hub goes live have no one to go to. */
    if (h->state == H_LIVE) {
        struct hk_stream_loop *sl = h->L0->stream;
        f = frame_new(&sl->json, &sl->ev, row);
        h->bytes += f->len;
    } else {
        h->bytes += row->payload_len + row->body_len + 512;
    }
    h->ids[h->nrows] = row->id;
    h->frames[h->nrows] = f;
    h->nrows++;
}

/* The newest id is known: where W starts (docs/forwarding.md). */
static void hub_activate(struct hk_stream_hub *h, int64_t newest)
{
    pthread_mutex_lock(&h->mu);
    if (h->gaps == 0) {
        if (newest > h->w)
            h->w = newest;
        h->state = H_LIVE;
    } else {
        int64_t from = newest > BACKFILL ? newest - BACKFILL : 0;
        if (from > h->w)
            h->w = from;
        h->target = newest;
        h->state = h->w >= newest ? H_LIVE : H_WARM;
    }
    if (h->state == H_LIVE)
        notify_ready_locked(h);
    pthread_mutex_unlock(&h->mu);
    h->gap = false;
    h->limit = HUB_BATCH_MAX;
}

/* Publish the rows of a read up to the first one that must wait, keep the
 * gap's bookkeeping, and say whether to read again at once. */
static bool hub_publish(struct hk_stream_hub *h, const struct hk_store_op *op)
{
    uint64_t now = uv_now(&h->L0->w->loop);
    bool gaps = op->horizon.valid;
    int64_t w = h->w;
    size_t i;
    for (i = 0; i < h->nrows; i++) {
        int64_t id = h->ids[i];
        if (id > w + 1 && gaps && !(h->gap && h->gap_confirm && id - 1 <= h->gap_upto))
            break;
        if (id > w)
            w = id;
    }
    bool held = i < h->nrows;
    pthread_mutex_lock(&h->mu);
    for (size_t k = 0; k < i; k++) {
        struct frame *f = h->frames[k];
        if (h->ids[k] <= h->w)
            continue;
        if (f && h->state == H_LIVE)
            for (size_t j = 0; j < h->nloops; j++)
                if (h->loops[j]->nsub)
                    push_locked(h->loops[j], f);
        h->w = h->ids[k];
        if (h->state == H_WARM && h->w >= h->target) {
            h->state = H_LIVE;
            notify_ready_locked(h);
        }
    }
    /* Nothing at all above W while warming: the rows up to the target
     * went (deleted); there is nothing to wait for. */
    if (h->state == H_WARM && h->nrows == 0) {
        if (h->target > h->w)
            h->w = h->target;
        h->state = H_LIVE;
        notify_ready_locked(h);
    }
    for (size_t j = 0; j < h->nloops; j++)
        if (h->loops[j]->qn)
            uv_async_send(&h->loops[j]->wake);
    h->paused = window_full_locked(h);
    bool paused = h->paused;
    pthread_mutex_unlock(&h->mu);
    for (size_t k = 0; k < h->nrows; k++)
        if (h->frames[k])
            frame_unref(h->frames[k]);

    bool full = h->nrows == op->list.limit;
    size_t per_row = h->bytes / (h->nrows ? h->nrows : 1);
    size_t next = HUB_BATCH_BYTES / (per_row ? per_row : 1);
    h->limit = (uint32_t)(next < 1 ? 1 : next > HUB_BATCH_MAX ? HUB_BATCH_MAX : next);
    if (!held) {
        h->gap = false;
        uv_timer_stop(&h->gap_timer);
        return full && !paused;
    }
    if (!h->gap || h->gap_confirm) {
        /* A new hole: the transactions running now may still fill it. */
        h->gap = true;
        h->gap_confirm = false;
        h->gap_upto = h->ids[h->nrows - 1];
        h->gap_xip = op->horizon.xip_max;
        h->gap_ms = now;
    } else if ((h->gap_xip == 0 || op->horizon.xmin > h->gap_xip) && now - h->gap_ms >= GAP_MS) {
        /* They have all ended: the next read, which starts after, decides. */
        h->gap_confirm = true;
        return true;
    }
    uint64_t due = h->gap_ms + GAP_MS;
    uv_timer_start(&h->gap_timer, on_hub_timer, due > now ? due - now : GAP_MS, 0);
    return false;
}

static void hub_done(struct hk_store_op *op)
{
    struct hk_stream_hub *h = op->data;
    struct hk_api_loop *L0 = h->L0;
    bool again = false;
    h->op_busy = false;
    hk_obs_store(L0->obs, HK_OP_LIST, op->status, hk_mono_ns() - h->op_start);
    if (op->status < 0) {
        for (size_t k = 0; k < h->nrows; k++)
            if (h->frames[k])
                frame_unref(h->frames[k]);
        /* The tick tries again; a store that is down says so once a minute. */
        uint64_t now = uv_now(&L0->w->loop);
        if (!h->fail_logged || now - h->fail_logged >= 60000) {
            hk_warn("live feed: read failed, retrying every second", "\"code\":%d", op->status);
            h->fail_logged = now;
        }
    } else if (h->op_kind == RD_PROBE) {
        h->gaps = op->horizon.valid ? 1 : 0;
        again = true;
    } else if (h->op_kind == RD_MAX) {
        hub_activate(h, h->newest);
        again = true;
    } else {
        again = hub_publish(h, op);
    }
    h->nrows = 0;
    hk_worker_release(L0->w);
    if (again)
        hub_run(h);
}

static void hub_submit(struct hk_stream_hub *h, enum rkind kind)
{
    struct hk_api_loop *L0 = h->L0;
    if (!L0->sl || !hk_worker_hold(L0->w))
        return;
    struct hk_store_op *op = &h->op;
    memset(op, 0, sizeof *op);
    op->kind = HK_OP_LIST;
    op->on_row = hub_row;
    op->on_done = hub_done;
    op->data = h;
    switch (kind) {
    case RD_PROBE:
        /* Nothing comes back; the horizon says whether ids can commit out of order. */
        op->list.ascending = true;
        op->list.after = INT64_MAX - 1;
        op->list.limit = 1;
        break;
    case RD_MAX:
        op->list.limit = 1;
        h->newest = 0;
        break;
    case RD_NEXT:
        op->list.ascending = true;
        op->list.after = h->w;
        op->list.limit = h->limit ? h->limit : HUB_BATCH_MAX;
        break;
    }
    h->op_kind = kind;
    h->op_busy = true;
    h->nrows = 0;
    h->bytes = 0;
    h->op_start = hk_mono_ns();
    int rc = hk_store_submit(L0->sl, op);
    if (rc < 0) {
        h->op_busy = false;
        hk_obs_store(L0->obs, HK_OP_LIST, rc, hk_mono_ns() - h->op_start);
        hk_worker_release(L0->w);
    }
}

static void on_watch(void *ud)
{
    hub_run(ud);
}

/* One step of the state machine: stop when nobody listens, else the next read. */
static void hub_step(struct hk_stream_hub *h)
{
    struct hk_api_loop *L0 = h->L0;
    if (!L0 || h->op_busy || L0->w->stopping)
        return;
    pthread_mutex_lock(&h->mu);
    bool active = h->nactive > 0;
    if (!active)
        h->state = H_OFF;
    else if (h->state == H_OFF)
        h->state = H_START;
    enum hstate st = h->state;
    h->paused = window_full_locked(h);
    bool paused = h->paused;
    pthread_mutex_unlock(&h->mu);
    if (!active) {
        /* W stays; the next start moves it to the newest id. */
        uv_timer_stop(&h->tick);
        uv_timer_stop(&h->gap_timer);
        h->gap = false;
        return;
    }
    if (!uv_is_active((uv_handle_t *)&h->tick))
        uv_timer_start(&h->tick, on_hub_timer, TICK_MS, TICK_MS);
    const struct hk_store_vt *vt = h->api->store->vt;
    if (!h->watching && vt->watch && L0->sl) {
        int rc = vt->watch(L0->sl, on_watch, h);
        h->watching = rc == 0;
        if (rc < 0 && !h->watch_warned) {
            hk_warn("live feed: cannot watch the store for other replicas' rows; reading every second",
                    "\"code\":%d", rc);
            h->watch_warned = true;
        }
    }
    if (st == H_START)
        hub_submit(h, h->gaps < 0 ? RD_PROBE : RD_MAX);
    else if (!paused)
        hub_submit(h, RD_NEXT);
}

/* Every wakeup comes here. A read that completes inside submit (SQLite)
 * asks for the next through `rerun` instead of recursing. */
static void hub_run(struct hk_stream_hub *h)
{
    if (h->running) {
        h->rerun = true;
        return;
    }
    h->running = true;
    do {
        h->rerun = false;
        hub_step(h);
    } while (h->rerun && !h->op_busy);
    h->running = false;
}

static void announce_now(struct hk_stream_hub *h)
{
    struct hk_api_loop *L0 = h->L0;
    h->announce_due = false;
    h->last_announce = uv_now(&L0->w->loop);
    if (L0->sl)
        h->api->store->vt->announce(L0->sl);
}

static void on_announce(uv_timer_t *t)
{
    struct hk_stream_hub *h = t->data;
    if (h->announce_due && h->L0)
        announce_now(h);
}

/* Rows were committed here: tell the other replicas, at most once per
 * ANNOUNCE_MS, whether or not anyone here listens. Not at once but
 * ANNOUNCE_AFTER_MS later: the rows of a burst go in one NOTIFY, and the
 * requests right behind a write (a read of what was written, often) do
 * not queue behind the NOTIFY's transaction on the store connection. */
static void hub_committed(struct hk_stream_hub *h)
{
    if (!h->api->store->vt->announce)
        return;
    h->announce_due = true;
    if (uv_is_active((uv_handle_t *)&h->ann_timer))
        return;
    uint64_t now = uv_now(&h->L0->w->loop), wait = ANNOUNCE_AFTER_MS;
    if (h->last_announce && now - h->last_announce < ANNOUNCE_MS &&
        h->last_announce + ANNOUNCE_MS - now > wait)
        wait = h->last_announce + ANNOUNCE_MS - now;
    uv_timer_start(&h->ann_timer, on_announce, wait, 0);
}

static void on_hub_wake(uv_async_t *a)
{
    struct hk_stream_hub *h = a->data;
    if (atomic_exchange(&h->commit_pending, false))
        hub_committed(h);
    hub_run(h);
}

void hk_stream_committed(struct hk_api_loop *L, int64_t id)
{
    (void)id;   /* a hint: the hub reads what is there */
    struct hk_stream_hub *h = L->api->hub;
    if (!h || atomic_exchange(&h->commit_pending, true))
        return;
    pthread_mutex_lock(&h->mu);
    hub_kick_locked(h);
    pthread_mutex_unlock(&h->mu);
}

/* --- the handler --- */

/* Where to resume: Last-Event-ID (what an EventSource sends when it
 * reconnects, so it wins over the URL's ?after=), else ?after=. */
static int resume_point(struct hk_req *r, bool *resume, int64_t *after)
{
    *resume = false;
    if (r->last_event_id && r->last_event_id_len) {
        if (hk_parse_int_n(r->last_event_id, r->last_event_id_len, 0, INT64_MAX, after) < 0) {
            hk_resp_problem(r, 400, NULL, "Last-Event-ID must be an event id (an integer from 0 to %lld)",
                            (long long)INT64_MAX);
            return -1;
        }
        *resume = true;
        return 0;
    }
    size_t vlen;
    const char *v = hk_query_raw(r->query, r->query_len, "after", &vlen);
    if (!v)
        return 0;
    if (hk_parse_int_n(v, vlen, 0, INT64_MAX, after) < 0) {
        hk_resp_problem(r, 400, NULL, "query parameter after must be an integer from 0 to %lld", (long long)INT64_MAX);
        return -1;
    }
    *resume = true;
    return 0;
}

void hk_api_stream(struct hk_req *r)
{
    struct hk_api_loop *L = api_loop(r);
    struct hk_stream_loop *sl = L->stream;
    struct hk_stream_hub *h = L->api->hub;
    if (!h || !sl) {
        hk_resp_unavailable(r, 503, "stream_unavailable", 5, "the live feed is not running in this process");
        return;
    }
    if (L->w->stopping || r->s->draining_server) {
        hk_resp_unavailable(r, 503, "shutting_down", 1, "the server is stopping");
        return;
    }
    char buf[FILTER_MAX];
    size_t used = 0;
    const char *src, *type, *did;
    size_t src_len, type_len, did_len;
    uint8_t delivery;
    bool resume;
    int64_t after = 0;
    if (hk_api_query_text(r, "source", 4 * HK_SOURCE_MAX, buf, sizeof buf, &used, &src, &src_len) < 0 ||
        hk_api_query_text(r, "eventType", 4 * HK_EVENT_TYPE_MAX, buf, sizeof buf, &used, &type, &type_len) < 0 ||
        hk_api_query_text(r, "deliveryId", HK_META_MAX, buf, sizeof buf, &used, &did, &did_len) < 0 ||
        hk_api_delivery_param(r, &delivery) < 0 || resume_point(r, &resume, &after) < 0)
        return;
    if (r->head) {
        stream_head(r);
        hk_resp_end_stream(r);
        return;
    }
    struct client *c = calloc(1, sizeof *c + used);
    if (!c)
        abort();
    memcpy(c->strs, buf, used);
    /* The filters point into the client's copy, at the same offsets. */
    c->source = src ? c->strs + (src - buf) : NULL;
    c->source_len = src_len;
    c->event_type = type ? c->strs + (type - buf) : NULL;
    c->event_type_len = type_len;
    c->did = did ? c->strs + (did - buf) : NULL;
    c->did_len = did_len;
    c->delivery = delivery;
    c->resume = resume;
    c->resume_after = after;
    c->limit = REPLAY_BATCH_MAX;
    c->sl = sl;

    pthread_mutex_lock(&h->mu);
    if (h->nactive >= h->cfg->stream_max_clients) {
        pthread_mutex_unlock(&h->mu);
        free(c);
        hk_resp_unavailable(r, 503, "too_many_streams", 5, "this process serves %u live-feed clients already",
                            (unsigned)h->cfg->stream_max_clients);
        return;
    }
    h->nactive++;
    bool live = h->state == H_LIVE;
    if (live) {
        subscribe_locked(h, c);
    } else {
        c->state = C_WAIT;
        sl->nwait++;
        if (h->state == H_OFF) {
            h->state = H_START;
            hub_kick_locked(h);
        }
    }
    pthread_mutex_unlock(&h->mu);

    c->r = r;
    c->next = sl->clients;
    if (sl->clients)
        sl->clients->prev = c;
    sl->clients = c;
    r->handler_data = c;
    r->on_cancel = on_cancel;
    hk_resp_hold(r, on_gone);
    uv_timer_init(&L->w->loop, &c->hb);
    c->hb.data = c;
    if (live)
        client_start(c);
    else
        uv_timer_start(&c->hb, on_hb, START_WAIT_MS, 0);
}

/* --- lifetime --- */

int hk_stream_new(struct hk_api *a, struct hk_stream_hub **out, char *err, size_t errlen)
{
    (void)err;
    (void)errlen;
    struct hk_stream_hub *h = calloc(1, sizeof *h);
    if (!h)
        abort();
    h->api = a;
    h->cfg = a->cfg;
    pthread_mutex_init(&h->mu, NULL);
    h->gaps = -1;
    h->limit = HUB_BATCH_MAX;
    h->ids = malloc(HUB_BATCH_MAX * sizeof *h->ids);
    h->frames = malloc(HUB_BATCH_MAX * sizeof *h->frames);
    if (!h->ids || !h->frames)
        abort();
    *out = h;
    return 0;
}

void hk_stream_free(struct hk_stream_hub *h)
{
    if (!h)
        return;
    assert(h->nloops == 0);
    free(h->loops);
    free(h->ids);
    free(h->frames);
    pthread_mutex_destroy(&h->mu);
    free(h);
}

void hk_stream_loop_start(struct hk_api_loop *L)
{
    struct hk_stream_hub *h = L->api->hub;
    if (!h)
        return;
    struct hk_stream_loop *sl = calloc(1, sizeof *sl);
    if (!sl)
        abort();
    sl->hub = h;
    sl->L = L;
    uv_async_init(&L->w->loop, &sl->wake, on_loop_wake);
    sl->wake.data = sl;
    L->stream = sl;
    bool first = L->w->index == 0 && !h->L0;
    if (first) {
        h->L0 = L;
        uv_async_init(&L->w->loop, &h->wake, on_hub_wake);
        uv_timer_init(&L->w->loop, &h->tick);
        uv_timer_init(&L->w->loop, &h->gap_timer);
        uv_timer_init(&L->w->loop, &h->ann_timer);
        h->wake.data = h->tick.data = h->gap_timer.data = h->ann_timer.data = h;
    }
    pthread_mutex_lock(&h->mu);
    if (h->nloops == h->lcap) {
        h->lcap = h->lcap ? 2 * h->lcap : 8;
        h->loops = realloc(h->loops, h->lcap * sizeof *h->loops);
        if (!h->loops)
            abort();
    }
    h->loops[h->nloops++] = sl;
    if (first)
        h->open = true;
    pthread_mutex_unlock(&h->mu);
}

void hk_stream_loop_stop(struct hk_api_loop *L)
{
    struct hk_stream_loop *sl = L->stream;
    if (!sl)
        return;
    struct hk_stream_hub *h = sl->hub;
    /* Streams end with their connections, before this; any left end here. */
    while (sl->clients)
        client_end(sl->clients, R_SHUTDOWN, true);
    bool hub_here = h->L0 == L;
    pthread_mutex_lock(&h->mu);
    for (size_t i = 0; i < h->nloops; i++)
        if (h->loops[i] == sl) {
            h->loops[i] = h->loops[--h->nloops];
            break;
        }
    if (hub_here)
        h->open = false;
    struct frame **q = sl->q;
    size_t qn = sl->qn;
    sl->q = NULL;
    sl->qn = sl->qcap = sl->qbytes = 0;
    pthread_mutex_unlock(&h->mu);
    for (size_t i = 0; i < qn; i++)
        frame_unref(q[i]);
    free(q);
    uv_close((uv_handle_t *)&sl->wake, NULL);
    if (hub_here) {
        /* No read is in flight: it held the loop (hk_worker_hold). */
        assert(!h->op_busy);
        h->L0 = NULL;
        uv_close((uv_handle_t *)&h->wake, NULL);
        uv_close((uv_handle_t *)&h->tick, NULL);
        uv_close((uv_handle_t *)&h->gap_timer, NULL);
        uv_close((uv_handle_t *)&h->ann_timer, NULL);
    }
}

void hk_stream_loop_free(struct hk_api_loop *L)
{
    struct hk_stream_loop *sl = L->stream;
    if (!sl)
        return;
    free(sl->q);
    free(sl->work);
    hk_buf_free(&sl->json);
    hk_buf_free(&sl->ev);
    free(sl);
    L->stream = NULL;
}

void hk_stream_metrics(const struct hk_stream_hub *h, struct hk_buf *b)
{
    unsigned clients = 0;
    uint64_t events = 0, disc[R__COUNT] = {0};
    if (h) {
        struct hk_stream_hub *m = (struct hk_stream_hub *)h;   /* the lock only */
        pthread_mutex_lock(&m->mu);
        clients = h->nactive;
        pthread_mutex_unlock(&m->mu);
        events = atomic_load_explicit(&m->events, memory_order_relaxed);
        for (int i = 0; i < R__COUNT; i++)
            disc[i] = atomic_load_explicit(&m->disc[i], memory_order_relaxed);
    }
    hk_buf_puts(b, "# HELP hookd_stream_clients Live-feed (Server-Sent Events) clients connected now.\n"
                   "# TYPE hookd_stream_clients gauge\nhookd_stream_clients ");
    hk_buf_put_u64(b, clients);
    hk_buf_puts(b, "\n# HELP hookd_stream_events_total Events written to live-feed clients (replayed and live).\n"
                   "# TYPE hookd_stream_events_total counter\nhookd_stream_events_total ");
    hk_buf_put_u64(b, events);
    hk_buf_puts(b, "\n# HELP hookd_stream_disconnects_total Live-feed streams ended by hookd or their client, "
                   "by reason.\n# TYPE hookd_stream_disconnects_total counter\n");
    for (int i = 0; i < R__COUNT; i++) {
        hk_buf_puts(b, "hookd_stream_disconnects_total{reason=\"");
        hk_buf_puts(b, reason_names[i]);
        hk_buf_puts(b, "\"} ");
        hk_buf_put_u64(b, disc[i]);
        hk_buf_putc(b, '\n');
    }
}
