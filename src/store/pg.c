/* SPDX-License-Identifier: MIT
 * The PostgreSQL store's pool, one per event loop: non-blocking libpq
 * connections in pipeline mode watched with uv_poll, the FIFO of waiting
 * ops dealt to them once per loop iteration as pipeline groups closed by a
 * Sync (group commit), results matched to ops in send order, the group
 * sent again when one of its statements failed it, and the timers for
 * deadlines, pings and reconnects; plus the ops table, and the LISTEN
 * connection behind `watch`. Its parts call each other in a loop, so they
 * stay in one file. docs/store-pg.md has the design and the measurements
 * behind it; pg_open.c starts the store. */
#include "store/pg_int.h"

#include <assert.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/buf.h"
#include "core/clock.h"
#include "store/cred_int.h"
#include "store/row_int.h"

#define PG_PING_MS 2000            /* an idle connection is pinged this often */
#define PG_BACKOFF_MIN_MS 100
/* The pool beyond a loop's first connection opens when ops wait for a
 * connection, when one goes down, or this long after the loop attached:
 * not at once, where backends starting would compete with the first
 * requests after a start for the same cores. */
#define PG_STANDBY_MS 250
#define PG_BACKOFF_MAX_MS 5000
/* Times an op goes back to the queue because another op failed its group;
 * after that it fails (HK_EUNAVAIL). From its third send on an op goes out
 * alone (see group_class), so it never needs that many: the bound only
 * keeps anything from looping. */
#define PG_RETRY_MAX 3

/* ---- op completion ---------------------------------------------------- */

static void arm(struct pg_loop *pl);
static void tick_fast(struct pg_loop *pl);

/* Finish an op without rows. The op may be freed or resubmitted by on_done,
 * so nothing touches it afterwards. */
static void complete(struct pg_loop *pl, struct hk_store_op *op, int status)
{
    assert(pl->nops > 0);
    pl->nops--;
    op->status = status;
    op->more = false;
    op->be.pg.deadline = 0;
    op->next = NULL;
    op->on_done(op);
}

/* Complete every op of a list (linked through op->next) with `status`. */
static void complete_list(struct pg_loop *pl, struct hk_store_op *op, int status)
{
    while (op) {
        struct hk_store_op *next = op->next;
        complete(pl, op, status);
        op = next;
    }
}

/* The op leaves this loop's accounting; its callbacks run next. */
static void retire(struct pg_loop *pl, struct hk_store_op *op)
{
    assert(pl->nops > 0);
    pl->nops--;
    op->be.pg.deadline = 0;
    op->next = NULL;
    op->status = 0;
    op->more = false;
}

/* Reads are answered as their rows arrive; writes wait for the commit. */
static bool is_read(enum hk_op_kind k)
{
    return k == HK_OP_GET || k == HK_OP_LIST || k == HK_OP_TOKEN_GET || k == HK_OP_TOKEN_LIST ||
           k == HK_OP_SESSION_GET || k == HK_OP_SOURCE_STATS;
}

/* A feed's read: a LIST with `ascending`, answered with the snapshot after
 * its rows. */
static bool is_feed_read(const struct hk_store_op *op)
{
    return op->kind == HK_OP_LIST && op->list.ascending;
}

static void deliver_stats(struct hk_store_op *op, PGresult *res)
{
    int n = hk_pq.PQntuples(res);
    for (int i = 0; i < n; i++) {
        struct hk_source_stats st;
        if (!hk__pg_stats_of(res, i, &st)) {
            op->status = HK_ESTORE;
            break;
        }
        if (op->on_stats)
            op->on_stats(op, &st);
    }
    op->on_done(op);
}

static void deliver_cred_read(struct hk_store_op *op, PGresult *res)
{
    int n = hk_pq.PQntuples(res);
    if (op->kind == HK_OP_TOKEN_LIST) {
        for (int i = 0; i < n; i++) {
            struct hk_token_rec t;
            if (!hk__pg_token_of(res, i, &t)) {
                op->status = HK_ESTORE;
                break;
            }
            if (op->on_token)
                op->on_token(op, &t);
        }
    } else if (n == 0) {
        op->status = HK_ENOTFOUND;
    } else if (op->kind == HK_OP_TOKEN_GET ? !hk__pg_token_of(res, 0, op->token)
                                           : !hk__pg_session_of(res, 0, op->session)) {
        op->status = HK_ESTORE;
    }
    op->on_done(op);
}

static void deliver_read(struct pg_loop *pl, struct hk_store_op *op, PGresult *res)
{
    int n = hk_pq.PQntuples(res);
    struct hk_webhook row;
    retire(pl, op);
    if (op->kind == HK_OP_SOURCE_STATS) {
        deliver_stats(op, res);
        return;
    }
    if (op->kind != HK_OP_GET && op->kind != HK_OP_LIST) {
        deliver_cred_read(op, res);
        return;
    }
    if (op->kind == HK_OP_GET) {
        if (n == 0)
            op->status = HK_ENOTFOUND;
        else if (!hk__pg_row_of(res, 0, &row))
            op->status = HK_ESTORE;
        else if (op->on_row)
            op->on_row(op, &row);
        op->on_done(op);
        return;
    }
    const struct hk_list_query *q = &op->list;
    bool more = false;
    int64_t last = 0;
    if (q->stream && q->limit != 0 && (uint32_t)n > q->limit) {
        more = true;
        n = (int)q->limit;
    }
    for (int i = 0; i < n; i++) {
        if (!hk__pg_row_of(res, i, &row)) {
            op->status = HK_ESTORE;
            more = false;
            break;
        }
        last = row.id;
        if (op->on_row)
            op->on_row(op, &row);
    }
    if (more) {
        /* The next batch goes on from the last row given, either way. */
        if (q->ascending)
            op->list.after = last;
        else
            op->list.before = last;
        pl->streams++;
    }
    op->more = more;
    op->on_done(op);
}

/* Did the write change a row? */
static bool changed(PGresult *res)
{
    const char *n = hk_pq.PQcmdTuples(res);
    return n[0] != '\0' && strcmp(n, "0") != 0;
}

/* A credential write whose group committed. */
static void deliver_cred_write(struct hk_store_op *op, PGresult *res)
{
    switch (op->kind) {
    case HK_OP_TOKEN_PUT:
    case HK_OP_SESSION_PUT:
        op->status = changed(res) ? 0 : HK_ECONFLICT;
        break;
    case HK_OP_TOKEN_REVOKE:
        if (hk_pq.PQntuples(res) == 0)
            op->status = HK_ENOTFOUND;
        else if (op->token && !hk__pg_token_of(res, 0, op->token))
            op->status = HK_ESTORE;
        break;
    default:   /* SESSION_DEL: RETURNING whether it was still live */
        if (hk_pq.PQntuples(res) == 0 || hk_pq.PQgetvalue(res, 0, 0)[0] != 't')
            op->status = HK_ENOTFOUND;
        break;
    }
    op->on_done(op);
}

/* CLAIM's leased rows and REDELIVER's row, in order (borrowed from res). */
static void deliver_rows(struct hk_store_op *op, PGresult *res)
{
    int n = hk_pq.PQntuples(res);
    if (op->kind == HK_OP_REDELIVER && n == 0)
        op->status = HK_ENOTFOUND;
    for (int i = 0; i < n; i++) {
        struct hk_webhook row;
        if (!hk__pg_row_of(res, i, &row)) {
            op->status = HK_ESTORE;
            break;
        }
        if (op->on_row)
            op->on_row(op, &row);
    }
    op->on_done(op);
}

/* A write whose group committed. */
static void deliver_write(struct pg_loop *pl, struct hk_store_op *op, PGresult *res)
{
    retire(pl, op);
    switch (op->kind) {
    case HK_OP_INSERT:
    case HK_OP_DELETE:
        break;
    case HK_OP_CLAIM:
    case HK_OP_REDELIVER:
        deliver_rows(op, res);
        return;
    case HK_OP_SETTLE:
        op->status = hk__pg_settle_of(res, op);
        op->on_done(op);
        return;
    case HK_OP_PURGE:
        if (!hk__pg_purge_of(res, op->purge))
            op->status = HK_ESTORE;
        op->on_done(op);
        return;
    default:
        deliver_cred_write(op, res);
        return;
    }
    if (op->kind == HK_OP_DELETE) {
        op->status = changed(res) ? 0 : HK_ENOTFOUND;
        op->on_done(op);
        return;
    }
    if (!hk__pg_insert_returns_row(op)) {
        if (!hk__pg_id_of(res, &op->row.id))
            op->status = HK_ESTORE;
        else if (op->on_row)
            op->on_row(op, &op->row);
        op->on_done(op);
        return;
    }
    /* A delivery: its id and time, or the earlier one's; on_row gets the
     * submitted row with those (store.h). */
    if (op->row.ingress) {
        bool inserted;
        if (!hk__pg_hook_of(res, &op->row.id, &op->row.received_us, &inserted)) {
            op->status = HK_ESTORE;
        } else {
            op->replayed = !inserted;
            if (op->on_row)
                op->on_row(op, &op->row);
        }
        op->on_done(op);
        return;
    }
    /* An idempotency key: the row it stored, or the one stored before
     * (ON CONFLICT ... RETURNING, column PG_NCOLS says which). */
    struct hk_webhook row;
    bool inserted;
    if (hk_pq.PQntuples(res) != 1 || !hk__pg_row_of(res, 0, &row) || !hk__pg_inserted_of(res, &inserted)) {
        op->status = HK_ESTORE;
        op->on_done(op);
        return;
    }
    if (inserted) {
        op->row.id = row.id;
        op->row.received_us = row.received_us;
    } else {
        op->replayed = true;
    }
    if (op->on_row)
        op->on_row(op, inserted ? &op->row : &row);
    op->on_done(op);
}

/* ---- connections ------------------------------------------------------ */

static void on_poll(uv_poll_t *h, int status, int events);
static void on_retry(uv_timer_t *t);
static void health_update(struct pg_loop *pl, const char *why);

static void closed_one(struct pg_loop *pl)
{
    assert(pl->closing > 0);
    if (--pl->closing == 0 && pl->detached) {
        free(pl->conns);
        free(pl);
    }
}

static void on_handle_closed(uv_handle_t *h)
{
    closed_one(h->data);
}

static void on_poll_closed(uv_handle_t *h)
{
    struct pg_poll *p = h->data;
    struct pg_loop *pl = p->pl;
    free(p);
    closed_one(pl);
}

/* A socket's poll handle (*pp) and what it watches (*events): shared by
 * the pool's connections and the listen connection. */
static void poll_release(struct pg_loop *pl, struct pg_poll **pp, int *events)
{
    struct pg_poll *p = *pp;
    if (!p)
        return;
    /* Stop first: the descriptor may be closed (or reused) right after. */
    uv_poll_stop(&p->h);
    p->c = NULL;
    p->l = NULL;
    pl->closing++;
    uv_close((uv_handle_t *)&p->h, on_poll_closed);
    *pp = NULL;
    *events = 0;
}

/* Watch pc's socket for `events`. `fresh` makes a new handle: while
 * connecting, libpq may close the socket and open another, possibly with
 * the same number, which an existing epoll registration would miss. The
 * handle points back at `c` or `l`, whichever is given. */
static int poll_set(struct pg_loop *pl, struct pg_poll **pp, int *cur, PGconn *pc, int events, bool fresh,
                    struct pg_conn *c, struct pg_listen *l, uv_poll_cb cb)
{
    int rc = 0;
    if (fresh || !*pp) {
        poll_release(pl, pp, cur);
        int fd = hk_pq.PQsocket(pc);
        if (fd < 0)
            return UV_EBADF;
        struct pg_poll *p = calloc(1, sizeof *p);
        if (!p)
            abort();
        p->pl = pl;
        p->c = c;
        p->l = l;
        p->h.data = p;
        rc = uv_poll_init(pl->loop, &p->h, fd);
        if (rc < 0) {
            free(p);
            return rc;
        }
        *pp = p;
        *cur = 0;
    }
    if (events != *cur) {
        rc = uv_poll_start(&(*pp)->h, events, cb);
        *cur = events;
    }
    return rc;
}

static void poll_drop(struct pg_conn *c)
{
    poll_release(c->pl, &c->poll, &c->events);
}

static int watch(struct pg_conn *c, int events, bool fresh)
{
    return poll_set(c->pl, &c->poll, &c->events, c->pc, events, fresh, c, NULL, on_poll);
}

static struct ent *ring_push(struct pg_conn *c, enum ent_kind kind, uint64_t deadline,
                             struct hk_store_op *op)
{
    assert(c->n < PG_RING);
    struct ent *e = &c->ring[(c->head + c->n) % PG_RING];
    c->n++;
    e->kind = (uint8_t)kind;
    e->got = false;
    e->deadline = deadline;
    e->op = op;
    e->res = NULL;
    if (kind == E_OP && c->nops++ == 0)
        atomic_fetch_add_explicit(&c->pl->st->busy, 1, memory_order_relaxed);
    if (kind == E_SYNC)
        c->nsyncs++;
    return e;
}

static void ring_pop(struct pg_conn *c)
{
    assert(c->n > 0);
    assert(!c->ring[c->head].res);
    if (c->ring[c->head].kind == E_OP && --c->nops == 0)
        atomic_fetch_sub_explicit(&c->pl->st->busy, 1, memory_order_relaxed);
    if (c->ring[c->head].kind == E_SYNC)
        c->nsyncs--;
    c->head = (c->head + 1) % PG_RING;
    c->n--;
}

static void conn_start(struct pg_conn *c);

/* Open one connection of the pool that has not been started yet, if any
 * is left (PG_STANDBY_MS). */
static void wake_standby(struct pg_loop *pl)
{
    for (unsigned i = 0; i < pl->nconns; i++) {
        struct pg_conn *c = &pl->conns[i];
        if (c->standby) {
            uv_timer_stop(&c->retry);
            conn_start(c);
            return;
        }
    }
}

/* Close the connection (its ops taken off it already), count it out of
 * the ready ones, and schedule a reconnect with backoff. */
static void conn_down(struct pg_conn *c)
{
    struct pg_loop *pl = c->pl;
    bool was_ready = c->state == C_READY;
    poll_drop(c);
    if (c->pc)
        hk_pq.PQfinish(c->pc);
    c->pc = NULL;
    c->prepared = 0;
    c->state = C_DOWN;
    c->failed_once = true;
    if (!pl->detached) {
        uv_timer_start(&c->retry, on_retry, c->backoff_ms, 0);
        wake_standby(pl);
    }
    c->backoff_ms = c->backoff_ms * 2 > PG_BACKOFF_MAX_MS ? PG_BACKOFF_MAX_MS : c->backoff_ms * 2;
    if (was_ready) {
        assert(pl->nready > 0);
        pl->nready--;
        atomic_fetch_sub_explicit(&pl->st->ready, 1, memory_order_relaxed);
    }
}

/* Close the connection, fail every op it carried (the head one with
 * `head_status`, the others with HK_EUNAVAIL: a write may or may not have
 * committed, so never a success), and schedule a reconnect. */
static void conn_fail(struct pg_conn *c, int head_status, const char *why)
{
    struct pg_loop *pl = c->pl;
    struct pg_store *st = pl->st;
    struct hk_store_op *head_ops = NULL, *others = NULL, **tail = &others;
    bool head_is_sync = c->n > 0 && c->ring[c->head].kind == E_SYNC;

    if (why) {
        hk_pg_scrub(st->url, why, c->err, sizeof c->err);
        hk__pg_log(HK_LOG_DEBUG, "postgresql connection lost", st, why, NULL);
    }
    /* Held ops belong to the oldest open group. Even those of a group that
     * failed, known to be rolled back, are not sent again: this is the
     * behaviour of the rest (a connection failure fails what it carried). */
    struct hk_store_op **held_tail = head_is_sync ? &head_ops : tail;
    for (unsigned i = 0; i < c->nheld; i++) {
        struct hk_store_op *op = c->held[i].op;
        hk_pq.PQclear(c->held[i].res);
        op->next = NULL;
        *held_tail = op;
        held_tail = &op->next;
    }
    if (!head_is_sync)
        tail = held_tail;
    c->nheld = 0;
    for (unsigned i = 0; i < c->n; i++) {
        struct ent *e = &c->ring[(c->head + i) % PG_RING];
        hk_pq.PQclear(e->res);
        e->res = NULL;
        /* A feed's read is held by one of its two entries at a time. */
        if ((e->kind != E_OP && e->kind != E_HORIZON) || !e->op)
            continue;
        e->op->next = NULL;
        if (i == 0) {
            head_ops = e->op;
        } else {
            *tail = e->op;
            tail = &e->op->next;
        }
    }
    if (c->nops > 0)
        atomic_fetch_sub_explicit(&st->busy, 1, memory_order_relaxed);
    c->head = c->n = c->nops = c->nsyncs = 0;
    c->group_failed = false;
    c->dirty = false;
    c->parses = false;

    conn_down(c);
    /* With no usable connection left, nothing waits for one: fail fast. */
    if (pl->nready == 0) {
        *tail = pl->wait_head;
        pl->wait_head = pl->wait_tail = NULL;
        atomic_fetch_sub_explicit(&st->waiting, (long)pl->nwait, memory_order_relaxed);
        pl->nwait = 0;
        health_update(pl, c->err);
    }
    if (head_ops && head_is_sync) {
        complete_list(pl, head_ops, head_status);
    } else if (head_ops) {
        complete(pl, head_ops, head_status);
    }
    complete_list(pl, others, HK_EUNAVAIL);
}

static void conn_ready(struct pg_conn *c)
{
    struct pg_loop *pl = c->pl;
    c->state = C_READY;
    c->backoff_ms = PG_BACKOFF_MIN_MS;
    c->err[0] = '\0';
    pl->nready++;
    atomic_fetch_add_explicit(&pl->st->ready, 1, memory_order_relaxed);
    if (pl->nready == 1)
        health_update(pl, NULL);
    if (pl->wait_head)
        arm(pl);
}

static int conn_flush(struct pg_conn *c)
{
    int r = hk_pq.PQflush(c->pc);
    if (r < 0)
        return -1;
    return watch(c, UV_READABLE | (r > 0 ? UV_WRITABLE : 0), false) < 0 ? -1 : 0;
}


/* `n` setup statements and their Sync are sent (or queued in libpq): the
 * connection is ready when the Sync comes back. */
static void conn_staged(struct pg_conn *c, int n)
{
    uint64_t dl = c->connect_deadline;
    for (int i = 0; i < n; i++)
        ring_push(c, E_SETUP, dl, NULL);
    ring_push(c, E_SYNC, dl, NULL);
    c->state = C_SETUP;
    c->last_io = uv_now(c->pl->loop);
    if (conn_flush(c) < 0)
        conn_fail(c, HK_EUNAVAIL, hk_pq.PQerrorMessage(c->pc));
}

static void conn_setup(struct pg_conn *c)
{
    int n = hk__pg_send_setup(c->pc, c->pl->st->timeout_ms, false, &c->prepared);
    if (n < 0)
        conn_fail(c, HK_EUNAVAIL, hk_pq.PQerrorMessage(c->pc));
    else
        conn_staged(c, n);
}

static void connect_step(struct pg_conn *c)
{
    switch (hk_pq.PQconnectPoll(c->pc)) {
    case PGRES_POLLING_OK:
        conn_setup(c);
        return;
    case PGRES_POLLING_READING:
        if (watch(c, UV_READABLE, true) < 0)
            break;
        return;
    case PGRES_POLLING_WRITING:
        if (watch(c, UV_WRITABLE, true) < 0)
            break;
        return;
    default:
        break;
    }
    conn_fail(c, HK_EUNAVAIL, hk_pq.PQerrorMessage(c->pc));
}

static void conn_start(struct pg_conn *c)
{
    struct pg_loop *pl = c->pl;
    assert(c->state == C_DOWN && !c->pc);
    c->standby = false;
    c->pc = hk__pg_start_connect(pl->st->url);
    c->prepared = 0;
    c->state = C_CONNECTING;
    c->connect_deadline = uv_now(pl->loop) + PG_CONNECT_MS;
    tick_fast(pl);
    if (hk_pq.PQstatus(c->pc) == CONNECTION_BAD) {
        conn_fail(c, HK_EUNAVAIL, hk_pq.PQerrorMessage(c->pc));
        return;
    }
    /* libpq's rule: act as if PQconnectPoll had said PGRES_POLLING_WRITING. */
    if (watch(c, UV_WRITABLE, true) < 0)
        conn_fail(c, HK_EUNAVAIL, "cannot watch the connection's socket");
}

static void on_retry(uv_timer_t *t)
{
    conn_start(t->data);
}

static int drain(struct pg_conn *c);

/* Take over a connection hk_pg_open started, where it left it. */
static void conn_adopt(struct pg_conn *c, const struct pre_conn *p)
{
    struct pg_loop *pl = c->pl;
    assert(c->state == C_DOWN && !c->pc);
    c->pc = p->pc;
    c->prepared = p->prepared;
    c->connect_deadline = uv_now(pl->loop) + PG_CONNECT_MS;
    tick_fast(pl);
    switch (p->state) {
    case P_READY:
        /* Given back by a loop that detached: idle, nothing in flight. */
        c->last_io = uv_now(pl->loop);
        if (watch(c, UV_READABLE, true) < 0)
            conn_fail(c, HK_EUNAVAIL, "cannot watch the connection's socket");
        else
            conn_ready(c);
        break;
    case P_STAGED:
        conn_staged(c, p->nsetup);
        /* libpq may hold answers already: no poll event would announce them. */
        if (c->state == C_SETUP)
            drain(c);
        break;
    case P_OK:
        conn_setup(c);
        break;
    default:
        c->state = C_CONNECTING;
        if (watch(c, p->poll == PGRES_POLLING_READING ? UV_READABLE : UV_WRITABLE, true) < 0)
            conn_fail(c, HK_EUNAVAIL, "cannot watch the connection's socket");
        break;
    }
}

/* ---- results ---------------------------------------------------------- */

/* Put the ops of a group that failed, rolled back or never run, back at
 * the head of the wait queue in the order they were sent, ahead of newer
 * ops: nothing of them was committed, so sending them again is safe. They
 * keep their deadline (op->be.pg.deadline) and their place in the queue bound
 * (pl->nops), which they never left. One sent back PG_RETRY_MAX times
 * already fails instead. */
static void requeue(struct pg_loop *pl, const struct held *h, unsigned n)
{
    struct pg_store *st = pl->st;
    struct hk_store_op *head = NULL, **tail = &head, *spent = NULL, **spent_tail = &spent;
    struct hk_store_op *last = NULL;
    size_t nback = 0;
    for (unsigned i = 0; i < n; i++) {
        struct hk_store_op *op = h[i].op;
        hk_pq.PQclear(h[i].res);
        op->next = NULL;
        if (op->be.pg.retries >= PG_RETRY_MAX) {
            *spent_tail = op;
            spent_tail = &op->next;
            continue;
        }
        op->be.pg.retries++;
        *tail = last = op;
        tail = &op->next;
        nback++;
    }
    if (head) {
        last->next = pl->wait_head;
        pl->wait_head = head;
        if (!pl->wait_tail)
            pl->wait_tail = last;
        pl->nwait += nback;
        atomic_fetch_add_explicit(&st->waiting, (long)nback, memory_order_relaxed);
        arm(pl);
    }
    complete_list(pl, spent, HK_EUNAVAIL);
}

static void on_sync(struct pg_conn *c)
{
    struct pg_loop *pl = c->pl;
    /* A copy: callbacks run from here on, and the connection's list starts
     * over for its next group. */
    struct held h[PG_PIPELINE_MAX];
    unsigned n = c->nheld;
    bool failed = c->group_failed;
    memcpy(h, c->held, n * sizeof h[0]);
    c->nheld = 0;
    c->group_failed = false;
    if (c->state == C_SETUP) {
        assert(n == 0);
        if (failed)
            conn_fail(c, HK_EUNAVAIL, c->err[0] != '\0' ? c->err : "session setup failed");
        else
            conn_ready(c);
        return;
    }
    if (pl->wait_head)
        arm(pl);
    if (failed) {
        /* Rolled back with the op that failed the group, which has its
         * answer already; none of these is to blame. */
        requeue(pl, h, n);
        return;
    }
    for (unsigned i = 0; i < n; i++) {
        assert(h[i].res);   /* only a failed group holds aborted ops */
        deliver_write(pl, h[i].op, h[i].res);
        hk_pq.PQclear(h[i].res);
    }
}

static void hold(struct pg_conn *c, struct hk_store_op *op, PGresult *res)
{
    assert(c->nheld < PG_PIPELINE_MAX);
    c->held[c->nheld].op = op;
    c->held[c->nheld].res = res;
    c->nheld++;
}

static void op_result(struct pg_conn *c, struct ent *e, PGresult *res)
{
    struct pg_loop *pl = c->pl;
    struct hk_store_op *op = e->op;
    ExecStatusType s = hk_pq.PQresultStatus(res);
    e->op = NULL;
    assert(op);
    if (s == PGRES_TUPLES_OK || s == PGRES_COMMAND_OK) {
        if (is_feed_read(op)) {
            /* Answered with the snapshot that follows (horizon_result). */
            struct ent *h = &c->ring[(c->head + 1) % PG_RING];
            assert(c->n > 1 && h->kind == E_HORIZON && !h->op && !h->res);
            h->op = op;
            h->res = res;
            return;
        }
        if (is_read(op->kind)) {
            deliver_read(pl, op, res);
            hk_pq.PQclear(res);
            return;
        }
        /* A write: acknowledged only once its group has committed. */
        hold(c, op, res);
        return;
    }
    c->group_failed = true;
    if (s == PGRES_PIPELINE_ABORTED) {
        /* Never run: a statement before it in its group failed. It goes
         * out again with the group's rolled-back writes after the Sync. */
        hk_pq.PQclear(res);
        hold(c, op, NULL);
        return;
    }
    const char *sqlstate = NULL;
    int status = hk__pg_map_error(c->pc, res, &sqlstate);
    /* The primary message only: the full one carries DETAIL lines such as
     * "Failing row contains (...)", which would put a body, headers or a
     * delivery id into the log. */
    if (status == HK_ESTORE || status == HK_EINVAL)
        hk__pg_log(HK_LOG_WARN, "postgresql statement failed", pl->st,
                   hk_pq.PQresultErrorField(res, PG_DIAG_MESSAGE_PRIMARY), sqlstate);
    hk_pq.PQclear(res);
    complete(pl, op, status);
}

/* The snapshot after a feed's read: the read is answered now, its rows
 * with op->horizon filled. Nothing waits here when the read itself failed
 * or was aborted (it has its answer, or goes out again). */
static void horizon_result(struct pg_conn *c, struct ent *e, PGresult *res)
{
    struct pg_loop *pl = c->pl;
    struct hk_store_op *op = e->op;
    PGresult *rows = e->res;
    e->op = NULL;
    e->res = NULL;
    if (!op) {
        hk_pq.PQclear(res);
        return;
    }
    ExecStatusType s = hk_pq.PQresultStatus(res);
    if (s == PGRES_TUPLES_OK) {
        if (hk__pg_horizon_of(res, &op->horizon)) {
            deliver_read(pl, op, rows);
        } else {
            retire(pl, op);
            op->status = HK_ESTORE;
            op->on_done(op);
        }
    } else {
        const char *sqlstate = NULL;
        int status = hk__pg_map_error(c->pc, res, &sqlstate);
        c->group_failed = true;
        hk__pg_log(HK_LOG_WARN, "postgresql statement failed", pl->st,
                   hk_pq.PQresultErrorField(res, PG_DIAG_MESSAGE_PRIMARY), sqlstate);
        complete(pl, op, status);
    }
    hk_pq.PQclear(rows);
    hk_pq.PQclear(res);
}

/* Read every result that is complete. Returns -1 when the connection was
 * failed (and reset) meanwhile. */
static int drain(struct pg_conn *c)
{
    struct pg_loop *pl = c->pl;
    bool freed = false;
    while (!hk_pq.PQisBusy(c->pc)) {
        if (c->n == 0)
            break;   /* nothing asked: nothing to read (notices are handled by libpq) */
        struct ent *e = &c->ring[c->head];
        PGresult *res = hk_pq.PQgetResult(c->pc);
        c->last_io = uv_now(pl->loop);
        if (!res) {
            if (e->kind == E_SYNC || !e->got) {
                if (hk_pq.PQstatus(c->pc) == CONNECTION_BAD) {
                    conn_fail(c, HK_EUNAVAIL, hk_pq.PQerrorMessage(c->pc));
                    return -1;
                }
                break;
            }
            freed |= e->kind == E_OP;
            ring_pop(c);
            continue;
        }
        ExecStatusType s = hk_pq.PQresultStatus(res);
        if (s == PGRES_PIPELINE_SYNC) {
            hk_pq.PQclear(res);
            if (e->kind != E_SYNC) {
                conn_fail(c, HK_EUNAVAIL, "pipeline out of step (unexpected sync)");
                return -1;
            }
            ring_pop(c);
            enum conn_state before = c->state;
            on_sync(c);
            if (before == C_SETUP && c->state == C_DOWN)
                return -1;
            continue;
        }
        if (e->kind == E_SYNC || e->got) {
            /* A result nobody asked for: a connection-level error, usually.
             * Its primary message only, as in op_result. */
            char why[256];
            const char *msg = hk_pq.PQresultErrorField(res, PG_DIAG_MESSAGE_PRIMARY);
            snprintf(why, sizeof why, "%s", msg ? msg : "");
            hk_pq.PQclear(res);
            conn_fail(c, HK_EUNAVAIL, why[0] != '\0' ? why : "pipeline out of step");
            return -1;
        }
        e->got = true;
        switch (e->kind) {
        case E_OP:
            op_result(c, e, res);
            break;
        case E_HORIZON:
            horizon_result(c, e, res);
            break;
        case E_SETUP:
            if (s != PGRES_COMMAND_OK && s != PGRES_TUPLES_OK) {
                if (!c->group_failed)
                    hk_pg_scrub(pl->st->url, hk_pq.PQresultErrorMessage(res), c->err,
                                sizeof c->err);
                c->group_failed = true;
            }
            hk_pq.PQclear(res);
            break;
        case E_PREP:
            /* Failed, or skipped because the group failed before it: not
             * prepared, so the next use sends the Parse again. What uses
             * it in this group is aborted and goes out again after the
             * Sync. */
            if (s != PGRES_COMMAND_OK) {
                hk__pg_unprepare(&c->prepared, e->stmt);
                if (s != PGRES_PIPELINE_ABORTED) {
                    const char *sqlstate = hk_pq.PQresultErrorField(res, PG_DIAG_SQLSTATE);
                    hk__pg_log(HK_LOG_WARN, "postgresql statement failed", pl->st,
                               hk_pq.PQresultErrorField(res, PG_DIAG_MESSAGE_PRIMARY), sqlstate);
                }
                c->group_failed = true;
            }
            hk_pq.PQclear(res);
            break;
        default:   /* E_PING, E_NOTIFY: an answer is all they wanted */
            hk_pq.PQclear(res);
            break;
        }
    }
    if (freed && pl->wait_head)
        arm(pl);
    if (hk_pq.PQstatus(c->pc) == CONNECTION_BAD) {
        conn_fail(c, HK_EUNAVAIL, hk_pq.PQerrorMessage(c->pc));
        return -1;
    }
    return 0;
}

static void on_poll(uv_poll_t *h, int status, int events)
{
    struct pg_poll *p = h->data;
    struct pg_conn *c = p->c;
    if (!c)
        return;
    if (status < 0) {
        conn_fail(c, HK_EUNAVAIL, uv_strerror(status));
        return;
    }
    if (c->state == C_CONNECTING) {
        connect_step(c);
        return;
    }
    if ((events & UV_WRITABLE) && conn_flush(c) < 0) {
        conn_fail(c, HK_EUNAVAIL, hk_pq.PQerrorMessage(c->pc));
        return;
    }
    if (events & UV_READABLE) {
        if (!hk_pq.PQconsumeInput(c->pc)) {
            conn_fail(c, HK_EUNAVAIL, hk_pq.PQerrorMessage(c->pc));
            return;
        }
        drain(c);
    }
}

/* ---- sending ------------------------------------------------------------ */

/* A statement's Parse went out ahead of it (r == 1): its result comes
 * first. */
static void push_prep(struct pg_conn *c, int r, int stmt, uint64_t deadline)
{
    if (r == 1)
        ring_push(c, E_PREP, deadline, NULL)->stmt = (int8_t)stmt;
}

static int send_op(struct pg_conn *c, struct hk_store_op *op)
{
    uint64_t dl = op->be.pg.deadline;
    int stmt;
    if (dl > c->group_deadline)
        c->group_deadline = dl;
    c->dirty = true;
    bool feed = is_feed_read(op);
    int r = 0;
    /* A feed's snapshot statement is prepared ahead of the read, whose
     * entry must be right before the snapshot's (op_result). */
    if (feed) {
        r = hk__pg_prepare_horizon(c->pc, &c->prepared, &stmt);
        push_prep(c, r, stmt, dl);
        c->parses |= r == 1;
    }
    if (r >= 0) {
        r = hk__pg_send_op(c->pc, op, &c->prepared, &stmt);
        push_prep(c, r, stmt, dl);
        c->parses |= r == 1;
    }
    /* In the ring even when sending failed: conn_fail answers it. */
    ring_push(c, E_OP, dl, op);
    if (r < 0)
        return -1;
    if (!feed)
        return 0;
    /* The snapshot right behind the read, in the same group: the op moves
     * to this entry when its rows have come (op_result). */
    ring_push(c, E_HORIZON, dl, NULL);
    return hk__pg_send_horizon(c->pc);
}

static struct hk_store_op *unqueue(struct pg_loop *pl)
{
    struct hk_store_op *op = pl->wait_head;
    pl->wait_head = op->next;
    if (!pl->wait_head)
        pl->wait_tail = NULL;
    op->next = NULL;
    pl->nwait--;
    atomic_fetch_sub_explicit(&pl->st->waiting, 1, memory_order_relaxed);
    return op;
}

/* The ready connection with the fewest ops in flight and room for one more.
 * A connection takes a new group only once its previous one has come back:
 * what arrives meanwhile waits and then goes as one bigger group, one
 * commit (one WAL flush) for all of it, instead of a string of small
 * groups that each wait for their own flush behind the one before. */
static struct pg_conn *pick(struct pg_loop *pl)
{
    struct pg_conn *best = NULL;
    for (unsigned i = 0; i < pl->nconns; i++) {
        struct pg_conn *c = &pl->conns[i];
        if (c->state != C_READY || c->nops >= PG_PIPELINE_MAX || c->n + 5 > PG_RING)
            continue;
        if (c->nsyncs > 0 && !c->dirty)
            continue;
        if (!best || c->nops < best->nops)
            best = c;
    }
    return best;
}

static int close_group(struct pg_conn *c)
{
    c->dirty = false;
    c->parses = false;
    if (!hk_pq.PQpipelineSync(c->pc))
        return -1;
    ring_push(c, E_SYNC, c->group_deadline, NULL);
    c->group_deadline = 0;
    c->last_io = uv_now(c->pl->loop);
    return conn_flush(c);
}

/* Which ops may share a group. New ones share theirs. Ops sent a second
 * time (their group failed for another op) share one without new ops,
 * which could fail them again: it fails only if one of them does, which
 * costs one commit after a failure instead of one each. From the third
 * time on, an op goes alone and fails only for what it does itself. */
static uint8_t group_class(const struct hk_store_op *op)
{
    return op->be.pg.retries < 2 ? (uint8_t)op->be.pg.retries : 2;
}

/* An announcement (pg_announce) as a group of its own, outside any
 * insert's transaction, on the ready connection with the least in flight
 * (an idle one first). With no connection ready it is dropped: watchers
 * read on a timer as well. */
static void send_announce(struct pg_loop *pl)
{
    struct pg_conn *best = NULL;
    if (pl->nready == 0) {
        pl->announce = false;
        return;
    }
    for (unsigned i = 0; i < pl->nconns; i++) {
        struct pg_conn *c = &pl->conns[i];
        if (c->state != C_READY || c->dirty || c->n + 3 > PG_RING)
            continue;
        if (!best || (c->nsyncs == 0 && best->nsyncs > 0) ||
            ((c->nsyncs == 0) == (best->nsyncs == 0) && c->nops < best->nops))
            best = c;
    }
    if (!best)
        return;   /* every ring full: stays due, next iteration */
    pl->announce = false;
    uint64_t now = uv_now(pl->loop), dl = now + pl->st->timeout_ms;
    int stmt, r = hk__pg_send_notify(best->pc, pl->st->token, &best->prepared, &stmt);
    int ok = r >= 0;
    if (ok) {
        push_prep(best, r, stmt, dl);
        ring_push(best, E_NOTIFY, dl, NULL);
        ok = hk_pq.PQpipelineSync(best->pc);
    }
    if (ok) {
        ring_push(best, E_SYNC, dl, NULL);
        best->last_io = now;
        ok = conn_flush(best) == 0;
    }
    if (!ok)
        conn_fail(best, HK_EUNAVAIL, hk_pq.PQerrorMessage(best->pc));
    tick_fast(pl);
}

/* Send what waits, in arrival order, and close each connection's group;
 * then an announcement, if one is due. */
static void flush_queue(struct pg_loop *pl)
{
    struct pg_conn *c;
    uint64_t now = uv_now(pl->loop);
    while (pl->wait_head && (c = pick(pl))) {
        struct hk_store_op *op = pl->wait_head;
        if (op->be.pg.deadline <= now) {
            /* Past its deadline already (one sent again may be): on_tick
             * would reset its connection for it, failing the others too. */
            complete(pl, unqueue(pl), HK_ETIMEDOUT);
            continue;
        }
        /* An op that may not join the group open on its connection closes
         * it and starts the next one right behind it. */
        uint8_t cls = group_class(op);
        if (c->dirty && (cls != c->cls || cls == 2)) {
            /* A Parse counts from its group's commit: with one in the
             * group just closed, the statement may not exist for a group
             * behind it. The connection waits for that Sync (pick passes
             * it by), the op for another connection or for that Sync. */
            bool parses = c->parses;
            if (close_group(c) < 0)
                conn_fail(c, HK_EUNAVAIL, hk_pq.PQerrorMessage(c->pc));
            if (parses || c->state != C_READY)
                continue;
        }
        unqueue(pl);
        c->cls = cls;
        if (send_op(c, op) < 0)
            conn_fail(c, HK_EUNAVAIL, hk_pq.PQerrorMessage(c->pc));
    }
    for (unsigned i = 0; i < pl->nconns; i++) {
        c = &pl->conns[i];
        if (c->state == C_READY && c->dirty && close_group(c) < 0)
            conn_fail(c, HK_EUNAVAIL, hk_pq.PQerrorMessage(c->pc));
    }
    if (pl->announce)
        send_announce(pl);
    /* Ops wait with every connection busy: the next one of the pool. */
    if (pl->wait_head)
        wake_standby(pl);
    if (pl->armed && (!pl->wait_head || !pick(pl)) && !pl->announce) {
        /* Re-armed when a connection frees room or becomes ready. */
        uv_prepare_stop(&pl->prep);
        uv_check_stop(&pl->check);
        pl->armed = false;
    }
}

static void on_prepare(uv_prepare_t *h)
{
    flush_queue(h->data);
}

static void on_check(uv_check_t *h)
{
    flush_queue(h->data);
}

static void arm(struct pg_loop *pl)
{
    if (pl->armed || pl->detached)
        return;
    pl->armed = true;
    uv_prepare_start(&pl->prep, on_prepare);
    uv_check_start(&pl->check, on_check);
}

/* ---- timers: deadlines, pings, connect timeouts ------------------------ */

static void on_tick(uv_timer_t *t);

static void tick_set(struct pg_loop *pl, uint64_t period)
{
    if (pl->tick_period == period || pl->detached)
        return;
    pl->tick_period = period;
    uv_timer_start(&pl->tick, on_tick, period, period);
}

static void tick_fast(struct pg_loop *pl)
{
    tick_set(pl, pl->st->tick_ms);
}

/* A round trip on an idle connection: a server that died silently (no FIN,
 * no RST) shows as a ping that times out. */
static void send_ping(struct pg_conn *c, uint64_t now)
{
    uint64_t dl = now + c->pl->st->timeout_ms;
    int stmt, r = hk__pg_send_ping(c->pc, &c->prepared, &stmt);
    int ok = r >= 0;
    if (ok) {
        push_prep(c, r, stmt, dl);
        ring_push(c, E_PING, dl, NULL);
        ok = hk_pq.PQpipelineSync(c->pc);
    }
    if (ok) {
        ring_push(c, E_SYNC, dl, NULL);
        c->last_io = now;
        ok = conn_flush(c) == 0;
    }
    if (!ok)
        conn_fail(c, HK_EUNAVAIL, hk_pq.PQerrorMessage(c->pc));
}

static void on_tick(uv_timer_t *t)
{
    struct pg_loop *pl = t->data;
    struct pg_store *st = pl->st;
    uint64_t now = uv_now(pl->loop);
    bool busy = false;

    for (unsigned i = 0; i < pl->nconns; i++) {
        struct pg_conn *c = &pl->conns[i];
        if (c->state == C_CONNECTING) {
            busy = true;
            if (now >= c->connect_deadline)
                conn_fail(c, HK_EUNAVAIL, "timed out connecting");
            continue;
        }
        if (c->state == C_DOWN || c->n == 0)
            continue;
        busy = true;
        struct ent *e = &c->ring[c->head];
        if (now < e->deadline)
            continue;
        /* The answers of this connection cannot be matched to ops any more
         * once one is given up on: reset it. */
        if (c->state == C_READY)
            hk_warn("postgresql query timed out, resetting the connection",
                    "\"timeoutMs\":%" PRIu64 ",\"inFlight\":%u", st->timeout_ms, c->nops);
        conn_fail(c, HK_ETIMEDOUT, c->state == C_SETUP ? "timed out setting the session up"
                                                       : "query timed out");
    }
    while (pl->wait_head && pl->wait_head->be.pg.deadline <= now)
        complete(pl, unqueue(pl), HK_ETIMEDOUT);
    if (pl->wait_head)
        busy = true;
    if (now >= pl->next_ping) {
        pl->next_ping = now + PG_PING_MS;
        for (unsigned i = 0; i < pl->nconns; i++) {
            struct pg_conn *c = &pl->conns[i];
            if (c->state == C_READY && c->n == 0 && now - c->last_io >= PG_PING_MS)
                send_ping(c, now);
        }
    }
    tick_set(pl, busy || pl->nops > 0 ? st->tick_ms : PG_PING_MS);
}

/* One log line when a loop's pool goes down with none down before, one when
 * the last one is back. `why` is scrubbed. */
static void health_update(struct pg_loop *pl, const char *why)
{
    struct pg_store *st = pl->st;
    bool up = pl->nready > 0;
    if (up == pl->up)
        return;
    pl->up = up;
    if (!up) {
        pl->counted_down = true;
        if (atomic_fetch_add(&st->ndown, 1) == 0) {
            struct hk_buf b = HK_BUF_INIT;
            hk_buf_puts(&b, "\"error\":");
            hk_buf_put_json_str(&b, why ? why : "", why ? strlen(why) : 0);
            hk_buf_putc(&b, '\0');
            hk_warn("postgresql unavailable, reconnecting", "%s", b.p);
            hk_buf_free(&b);
        }
    } else if (pl->counted_down) {
        pl->counted_down = false;
        if (atomic_fetch_sub(&st->ndown, 1) == 1)
            hk_info("postgresql available again", NULL);
    }
}

/* ---- the listen connection (watch) ------------------------------------------ */

static void on_listen_poll(uv_poll_t *h, int status, int events);
static void on_listen_timer(uv_timer_t *t);

static int listen_watch(struct pg_listen *l, int events, bool fresh)
{
    return poll_set(l->pl, &l->poll, &l->events, l->pc, events, fresh, NULL, l, on_listen_poll);
}

/* Close the listen connection and try again after the back-off (100 ms
 * doubling to 5 s, as the pool's). */
static void listen_fail(struct pg_listen *l, const char *why)
{
    struct pg_loop *pl = l->pl;
    hk__pg_log(HK_LOG_DEBUG, "postgresql listen connection lost", pl->st, why ? why : "", NULL);
    poll_release(pl, &l->poll, &l->events);
    if (l->pc)
        hk_pq.PQfinish(l->pc);
    l->pc = NULL;
    l->state = L_DOWN;
    l->ping_out = false;
    uv_timer_start(&l->timer, on_listen_timer, l->backoff_ms, 0);
    l->backoff_ms = l->backoff_ms * 2 > PG_BACKOFF_MAX_MS ? PG_BACKOFF_MAX_MS : l->backoff_ms * 2;
}

static void listen_fail_pq(struct pg_listen *l)
{
    char why[256];
    snprintf(why, sizeof why, "%s", hk_pq.PQerrorMessage(l->pc));
    listen_fail(l, why);
}

static void listen_start(struct pg_listen *l)
{
    struct pg_loop *pl = l->pl;
    assert(!l->pc && !l->poll);
    l->pc = hk__pg_start_connect(pl->st->url);
    l->state = L_CONNECTING;
    l->deadline = uv_now(pl->loop) + PG_CONNECT_MS;
    if (hk_pq.PQstatus(l->pc) == CONNECTION_BAD) {
        listen_fail_pq(l);
        return;
    }
    uv_timer_start(&l->timer, on_listen_timer, PG_CONNECT_MS, 0);
    /* libpq's rule: act as if PQconnectPoll had said PGRES_POLLING_WRITING. */
    if (listen_watch(l, UV_WRITABLE, true) < 0)
        listen_fail(l, "cannot watch the connection's socket");
}

/* Send what libpq holds; watch for writability only while some is left. */
static int listen_flush(struct pg_listen *l)
{
    int r = hk_pq.PQflush(l->pc);
    if (r < 0)
        return -1;
    return listen_watch(l, UV_READABLE | (r > 0 ? UV_WRITABLE : 0), false) < 0 ? -1 : 0;
}

static void listen_connect_step(struct pg_listen *l)
{
    switch (hk_pq.PQconnectPoll(l->pc)) {
    case PGRES_POLLING_OK:
        if (hk_pq.PQsetnonblocking(l->pc, 1) != 0 || hk__pg_send_listen(l->pc) < 0 || listen_flush(l) < 0) {
            listen_fail_pq(l);
            return;
        }
        l->state = L_LISTENING;
        return;
    case PGRES_POLLING_READING:
        if (listen_watch(l, UV_READABLE, true) < 0)
            break;
        return;
    case PGRES_POLLING_WRITING:
        if (listen_watch(l, UV_WRITABLE, true) < 0)
            break;
        return;
    default:
        break;
    }
    listen_fail_pq(l);
}

/* What came on a connected listen connection: the LISTEN's answer (then it
 * is ready, and announcements may have been missed meanwhile: cb), a
 * ping's, and notifications (cb once for all of them, none for this
 * store's own). */
static void listen_read(struct pg_listen *l)
{
    struct pg_loop *pl = l->pl;
    bool wake = false, failed = false;
    if (!hk_pq.PQconsumeInput(l->pc)) {
        listen_fail_pq(l);
        return;
    }
    l->last_io = uv_now(pl->loop);
    while (!hk_pq.PQisBusy(l->pc)) {
        PGresult *res = hk_pq.PQgetResult(l->pc);
        if (!res)
            break;
        ExecStatusType s = hk_pq.PQresultStatus(res);
        failed |= s != PGRES_COMMAND_OK && s != PGRES_TUPLES_OK;
        if (l->state == L_LISTENING && !failed) {
            l->state = L_READY;
            l->backoff_ms = PG_BACKOFF_MIN_MS;
            wake = true;
            uv_timer_start(&l->timer, on_listen_timer, PG_PING_MS, PG_PING_MS);
        } else if (l->state == L_READY) {
            l->ping_out = false;
        }
        hk_pq.PQclear(res);
    }
    if (failed) {
        listen_fail(l, "LISTEN failed");
        return;
    }
    PGnotify *n;
    while ((n = hk_pq.PQnotifies(l->pc))) {
        wake |= !n->extra || strcmp(n->extra, pl->st->token) != 0;
        hk_pq.PQfreemem(n);
    }
    if (hk_pq.PQstatus(l->pc) == CONNECTION_BAD) {
        listen_fail_pq(l);
        return;
    }
    if (wake)
        l->cb(l->ud);   /* last: the callback may do anything a loop callback may */
}

static void on_listen_poll(uv_poll_t *h, int status, int events)
{
    struct pg_poll *p = h->data;
    struct pg_listen *l = p->l;
    if (!l)
        return;
    if (status < 0) {
        listen_fail(l, uv_strerror(status));
        return;
    }
    if (l->state == L_CONNECTING) {
        listen_connect_step(l);
        return;
    }
    if ((events & UV_WRITABLE) && listen_flush(l) < 0) {
        listen_fail_pq(l);
        return;
    }
    if (events & UV_READABLE)
        listen_read(l);
}

/* Reconnects after the back-off; gives up on a connect or a LISTEN that
 * takes too long; pings an idle ready connection (a server gone without a
 * word shows as a ping without answer). */
static void on_listen_timer(uv_timer_t *t)
{
    struct pg_listen *l = t->data;
    struct pg_loop *pl = l->pl;
    uint64_t now = uv_now(pl->loop);
    switch (l->state) {
    case L_DOWN:
        listen_start(l);
        return;
    case L_CONNECTING:
    case L_LISTENING:
        listen_fail(l, "timed out connecting");
        return;
    case L_READY:
        if (l->ping_out) {
            if (now >= l->deadline)
                listen_fail(l, "ping timed out");
            return;
        }
        if (now - l->last_io < PG_PING_MS)
            return;
        if (!hk_pq.PQsendQueryParams(l->pc, "SELECT 1", 0, NULL, NULL, NULL, NULL, 0) || listen_flush(l) < 0) {
            listen_fail_pq(l);
            return;
        }
        l->ping_out = true;
        l->deadline = now + pl->st->timeout_ms;
        l->last_io = now;
        return;
    default:
        return;
    }
}

static int pg_watch(struct hk_store_loop *base, void (*cb)(void *ud), void *ud)
{
    struct pg_loop *pl = (struct pg_loop *)base;
    struct pg_listen *l = &pl->listen;
    if (!cb || l->state != L_OFF || pl->detached)
        return HK_EINVAL;   /* one watcher per loop */
    l->pl = pl;
    l->cb = cb;
    l->ud = ud;
    l->backoff_ms = PG_BACKOFF_MIN_MS;
    uv_timer_init(pl->loop, &l->timer);
    l->timer.data = l;
    l->state = L_DOWN;
    listen_start(l);
    return 0;
}

/* Told to the watchers of the other processes on this schema, from the
 * loop's next iteration (flush_queue): several in one iteration are one. */
static void pg_announce(struct hk_store_loop *base)
{
    struct pg_loop *pl = (struct pg_loop *)base;
    if (pl->detached || pl->nready == 0)
        return;
    pl->announce = true;
    arm(pl);
}

/* ---- the ops table -------------------------------------------------------- */

static void enqueue(struct pg_loop *pl, struct hk_store_op *op)
{
    op->be.pg.deadline = uv_now(pl->loop) + pl->st->timeout_ms;
    op->next = NULL;
    if (pl->wait_tail)
        pl->wait_tail->next = op;
    else
        pl->wait_head = op;
    pl->wait_tail = op;
    pl->nwait++;
    atomic_fetch_add_explicit(&pl->st->waiting, 1, memory_order_relaxed);
    pl->nops++;
    arm(pl);
    tick_fast(pl);
}

static int pg_submit(struct hk_store_loop *base, struct hk_store_op *op)
{
    struct pg_loop *pl = (struct pg_loop *)base;
    op->status = 0;
    op->more = false;
    op->replayed = false;
    op->be.pg.retries = 0;
    switch (op->kind) {
    case HK_OP_INSERT:
        if (hk__row_begin(op) < 0) {
            /* As below: refused before anything is sent. */
            op->status = HK_EINVAL;
            op->on_done(op);
            return 0;
        }
        /* When the request was accepted, as with SQLite. */
        op->row.received_us = hk_wall_us();
        /* What the row's delivery will read as: pending and due now, or
         * none (store.h); on_row gets it so. */
        op->row.delivery = (struct hk_delivery){
            .state = op->row.delivery.state == HK_DLV_PENDING ? HK_DLV_PENDING : HK_DLV_NONE};
        if (op->row.delivery.state == HK_DLV_PENDING)
            op->row.delivery.next_us = op->row.received_us;
        break;
    case HK_OP_LIST:
        op->horizon = (struct hk_feed_horizon){0};
        break;
    case HK_OP_GET:
    case HK_OP_DELETE:
    case HK_OP_SOURCE_STATS:
        break;
    case HK_OP_CLAIM:
    case HK_OP_SETTLE:
    case HK_OP_REDELIVER:
    case HK_OP_PURGE:
        /* Leases, due times and settle times are the submitting process's
         * wall clock, as the rows' received_us. */
        op->now_us = hk_wall_us();
        if (op->kind == HK_OP_PURGE && op->purge)
            op->purge->deleted = op->purge->store_bytes = 0;
        break;
    case HK_OP_TOKEN_PUT:
    case HK_OP_TOKEN_GET:
    case HK_OP_TOKEN_LIST:
    case HK_OP_TOKEN_REVOKE:
    case HK_OP_SESSION_PUT:
    case HK_OP_SESSION_GET:
    case HK_OP_SESSION_DEL:
        break;
    default:
        return HK_EINVAL;
    }
    /* A credential op is checked, timed and a new token's created_us set
     * (cred_int.h) here, as with SQLite. */
    if ((hk__cred_kind(op->kind) && hk__cred_begin(op, hk_wall_us()) < 0) || !hk__pg_params_ok(op)) {
        /* Refused before anything is sent: a value the server would refuse
         * never gets into a group other ops share. The caller's mistake,
         * whatever the pool's state. */
        op->status = HK_EINVAL;
        op->on_done(op);
        return 0;
    }
    if (pl->nready == 0)
        return HK_EUNAVAIL;
    if (pl->nops >= pl->st->queue_max)
        return HK_EBUSY;
    enqueue(pl, op);
    return 0;
}

static void pg_list_next(struct hk_store_loop *base, struct hk_store_op *op)
{
    struct pg_loop *pl = (struct pg_loop *)base;
    assert(op->kind == HK_OP_LIST && op->more && pl->streams > 0);
    pl->streams--;
    op->more = false;
    op->status = 0;
    op->be.pg.retries = 0;
    /* The stream was admitted already: no queue bound for its next batch. */
    if (pl->nready == 0) {
        pl->nops++;
        complete(pl, op, HK_EUNAVAIL);
        return;
    }
    enqueue(pl, op);
}

static void pg_list_close(struct hk_store_loop *base, struct hk_store_op *op)
{
    struct pg_loop *pl = (struct pg_loop *)base;
    assert(op->kind == HK_OP_LIST && op->more && pl->streams > 0);
    /* Keyset paging holds nothing between batches. */
    pl->streams--;
    op->more = false;
}

static int pg_health(struct hk_store_loop *base)
{
    struct pg_loop *pl = (struct pg_loop *)base;
    return pl->nready > 0 ? 0 : HK_EUNAVAIL;
}

/* Close every handle; pl is freed by the last close callback when
 * `detached`, else the caller runs the loop until pl->closing is 0. */
static void loop_teardown(struct pg_loop *pl)
{
    for (unsigned i = 0; i < pl->nconns; i++) {
        struct pg_conn *c = &pl->conns[i];
        poll_drop(c);
        if (c->pc)
            hk_pq.PQfinish(c->pc);
        c->pc = NULL;
        for (unsigned k = 0; k < c->nheld; k++)
            hk_pq.PQclear(c->held[k].res);
        c->nheld = 0;
        for (unsigned k = 0; k < c->n; k++) {
            struct ent *e = &c->ring[(c->head + k) % PG_RING];
            hk_pq.PQclear(e->res);
            e->res = NULL;
        }
        c->n = 0;
        c->state = C_DOWN;
        pl->closing++;
        c->retry.data = pl;
        uv_close((uv_handle_t *)&c->retry, on_handle_closed);
    }
    if (pl->listen.state != L_OFF) {
        struct pg_listen *l = &pl->listen;
        poll_release(pl, &l->poll, &l->events);
        if (l->pc)
            hk_pq.PQfinish(l->pc);
        l->pc = NULL;
        l->state = L_OFF;
        pl->closing++;
        l->timer.data = pl;
        uv_close((uv_handle_t *)&l->timer, on_handle_closed);
    }
    pl->announce = false;
    atomic_fetch_sub_explicit(&pl->st->ready, (long)pl->nready, memory_order_relaxed);
    pl->nready = 0;
    pl->closing += 3;
    uv_close((uv_handle_t *)&pl->prep, on_handle_closed);
    uv_close((uv_handle_t *)&pl->check, on_handle_closed);
    uv_close((uv_handle_t *)&pl->tick, on_handle_closed);
}

static void pg_loop_detach(struct hk_store_loop *base)
{
    struct pg_loop *pl = (struct pg_loop *)base;
    struct pg_store *st = pl->st;
    assert(pl->nops == 0 && pl->streams == 0 && !pl->wait_head);
    if (pl->counted_down)
        atomic_fetch_sub(&st->ndown, 1);
    pl->counted_down = false;
    pl->detached = true;
    /* Idle, set-up connections go to the next loop to attach (one started
     * by a start-up task, such as the first-start token check, is then
     * not connected and set up a second time); the store closes what no
     * loop takes. */
    for (unsigned i = 0; i < pl->nconns; i++) {
        struct pg_conn *c = &pl->conns[i];
        if (c->state != C_READY || c->n > 0 || c->nheld > 0 || c->dirty)
            continue;
        poll_drop(c);
        if (hk__pg_give_pre(st, c->pc, c->prepared))
            c->pc = NULL;
    }
    loop_teardown(pl);
    atomic_fetch_sub(&st->nloops, 1);
}

/* A pool for `loop`, its handles initialised, no connection started. */
static struct pg_loop *loop_new(struct pg_store *st, uv_loop_t *loop)
{
    struct pg_loop *pl = calloc(1, sizeof *pl);
    if (!pl)
        abort();
    pl->base.store = &st->base;
    pl->st = st;
    pl->loop = loop;
    pl->nconns = st->pool;
    pl->conns = calloc(pl->nconns, sizeof *pl->conns);
    if (!pl->conns)
        abort();
    pl->prep.data = pl->check.data = pl->tick.data = pl;
    uv_prepare_init(loop, &pl->prep);
    uv_check_init(loop, &pl->check);
    uv_timer_init(loop, &pl->tick);
    pl->next_ping = uv_now(loop) + PG_PING_MS;
    tick_fast(pl);
    for (unsigned i = 0; i < pl->nconns; i++) {
        struct pg_conn *c = &pl->conns[i];
        c->pl = pl;
        c->backoff_ms = PG_BACKOFF_MIN_MS;
        uv_timer_init(loop, &c->retry);
        c->retry.data = c;
    }
    return pl;
}

/* Adopt the connection hk_pg_open started for this loop and wait (bounded
 * by PG_CONNECT_MS each) until it is ready: "started in" comes after. Only
 * then the rest of the pool, which gets ready on the running loop: backends
 * starting side by side slow each other down on a small machine (2 vCPUs:
 * first 200 after 79 ms instead of 87 with the whole pool at once). If the
 * first one fails, the others are tried at once. A connection that failed
 * keeps retrying from the caller's loop. */
static void start_pool(struct pg_loop *pl)
{
    struct pre_conn p;
    if (hk__pg_take_pre(pl->st, &p))
        conn_adopt(&pl->conns[0], &p);
    else
        conn_start(&pl->conns[0]);
    unsigned started = 1;
    for (;;) {
        unsigned pending = 0;
        for (unsigned i = 0; i < started; i++)
            pending += !pl->conns[i].failed_once && pl->conns[i].state != C_READY;
        if (pl->nready > 0 || (pending == 0 && started == pl->nconns))
            break;
        if (pending == 0) {
            for (; started < pl->nconns; started++)
                conn_start(&pl->conns[started]);
            continue;
        }
        uv_run(pl->loop, UV_RUN_ONCE);
    }
    for (; started < pl->nconns; started++) {
        struct pg_conn *c = &pl->conns[started];
        c->standby = true;
        uv_timer_start(&c->retry, on_retry, PG_STANDBY_MS, 0);
    }
}

/* No connection of the pool came up: say why, close it all, free pl. */
static void attach_failed(struct pg_loop *pl)
{
    const char *why = pl->conns[0].err;
    struct hk_buf b = HK_BUF_INIT;
    hk_buf_puts(&b, "\"url\":");
    hk_buf_put_json_str(&b, pl->st->safe_url, strlen(pl->st->safe_url));
    hk_buf_puts(&b, ",\"error\":");
    hk_buf_put_json_str(&b, why, strlen(why));
    hk_buf_putc(&b, '\0');
    hk_error("postgresql: no connection of the pool could be made", "%s", b.p);
    hk_buf_free(&b);
    loop_teardown(pl);
    while (pl->closing > 0)
        uv_run(pl->loop, UV_RUN_ONCE);
    free(pl->conns);
    free(pl);
}

static int pg_loop_attach(struct hk_store *s, uv_loop_t *loop, struct hk_store_loop **out)
{
    struct pg_store *st = (struct pg_store *)s;
    struct pg_loop *pl = loop_new(st, loop);
    start_pool(pl);
    if (pl->nready == 0) {
        attach_failed(pl);
        return HK_EUNAVAIL;
    }
    pl->up = true;
    atomic_fetch_add(&st->nloops, 1);
    *out = &pl->base;
    return 0;
}

static void pg_close(struct hk_store *s)
{
    struct pg_store *st = (struct pg_store *)s;
    assert(atomic_load(&st->nloops) == 0);
    hk__pg_store_free(st);
}

static void pg_stats(struct hk_store *s, struct hk_store_stats *out)
{
    struct pg_store *st = (struct pg_store *)s;
    out->conns_open = atomic_load_explicit(&st->ready, memory_order_relaxed);
    out->conns_busy = atomic_load_explicit(&st->busy, memory_order_relaxed);
    out->queue_depth = atomic_load_explicit(&st->waiting, memory_order_relaxed);
    out->queue_capacity = (int64_t)st->queue_max * atomic_load_explicit(&st->nloops, memory_order_relaxed);
}

const struct hk_store_vt hk__pg_vt = {
    .name = "postgresql",
    .loop_attach = pg_loop_attach,
    .loop_detach = pg_loop_detach,
    .submit = pg_submit,
    .list_next = pg_list_next,
    .list_close = pg_list_close,
    .health = pg_health,
    .close = pg_close,
    .stats = pg_stats,
    .watch = pg_watch,
    .announce = pg_announce,
};
