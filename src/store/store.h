/* SPDX-License-Identifier: MIT
 * The store interface: what the API needs from a database, as an ops table.
 * One `struct hk_store` per process, one `struct hk_store_loop` per event loop.
 * Every callback of an op runs on the loop that submitted it. */
#ifndef HK_STORE_H
#define HK_STORE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <uv.h>

#include "core/credential.h"
#include "core/err.h"
#include "core/webhook.h"

/* Filters and paging for a list. Zero/NULL fields mean "not set". */
struct hk_list_query {
    int64_t before;        /* only ids < before (keyset paging); 0 = no bound */
    const char *source;
    size_t source_len;
    const char *event_type;
    size_t event_type_len;
    const char *delivery_id;
    size_t delivery_id_len;
    /* Only rows with received_us > received_after_us and < received_before_us
     * (both exclusive), unix microseconds; 0 = no bound. A bound is clamped
     * to HK_STORE_LIST_TIME_MIN..HK_STORE_TIME_MAX, which every stored row
     * lies within. */
    int64_t received_after_us;
    int64_t received_before_us;
    uint32_t limit;        /* rows per batch; the list ends after one batch unless `stream` */
    bool stream;           /* deliver every matching row, batch by batch (see hk_store_op.more) */
    /* The live feed's reads (docs/forwarding.md): oldest first, ids > after
     * (with `before` too when set: after < id < before). */
    bool ascending;
    int64_t after;         /* only ids > after; 0 = no bound */
    uint8_t delivery;      /* only rows in this enum hk_delivery_state + 1 (0 = any; 1 = NONE, 2 = PENDING, ...) */
};

/* Forwarding's side of an op (docs/forwarding.md). `owner` names the
 * process holding a lease: a random non-zero 63-bit number per process. */
/* One row a sink took, in a SETTLE batch. */
struct hk_settle_item {
    int64_t id;
    int32_t attempts;          /* made, this one included */
    int32_t status;            /* the sink's HTTP status */
};

/* Rows in one SETTLE batch, at most. */
#define HK_SETTLE_BATCH_MAX 64

struct hk_fwd_op {
    int64_t owner;
    int64_t lease_us;          /* INSERT (optional), CLAIM: the lease's end, unix microseconds */
    const char *const *fifo;   /* CLAIM: sources delivered in order (NUL-terminated names), or NULL */
    size_t nfifo;
    /* SETTLE as a batch: the caller's array, borrowed until on_done. */
    const struct hk_settle_item *delivered;
    size_t ndelivered;         /* 0: a single SETTLE (id, row.delivery); else 1..HK_SETTLE_BATCH_MAX */
    uint32_t settled;          /* out, a batch: rows written */
    uint32_t tag;              /* the caller's bookkeeping; the store neither reads nor writes it */
};

/* Retention's side of a PURGE (docs/forwarding.md). Every bound that is set
 * applies (OR): a row goes when it is older than before_us, or beyond the
 * newest keep_rows, or among the oldest `oldest`. */
struct hk_purge_op {
    int64_t before_us;         /* received before this (unix microseconds); 0 = no age bound */
    uint64_t keep_rows;        /* keep the newest keep_rows of the rows in scope (`source`'s, or all but
                                * `except`'s); 0 = no cap */
    uint64_t oldest;           /* delete the oldest this many (a size cap's step); 0 = none */
    const char *source;        /* only this source (NUL-terminated); NULL: every source except `except` */
    const char *const *except; /* with source NULL: sources left alone (they have their own rules) */
    size_t nexcept;
    bool keep_pending;         /* never delete a row whose delivery is PENDING */
    uint32_t limit;            /* rows per statement, at most (the op deletes one batch) */
    /* In and out, with keep_rows: the id of the keep_rows-th newest row in
     * scope (the cap deletes the rows below it). In: 0 finds it (one walk
     * of an index, linear in keep_rows), > 0 uses it, -1 says the scope
     * holds no more than keep_rows rows (the cap deletes nothing). Out:
     * the bound used. A caller repeating batches of one rule passes the
     * first batch's back: rows only come in newer, so the bound still lets
     * go only rows the cap would (rows deleted by others meanwhile can make
     * the cap keep that many fewer until the next walk). */
    int64_t keep_from;
    /* out */
    uint64_t deleted;          /* rows deleted by this op */
    uint64_t store_bytes;      /* the store's size after it (SQLite: the file's live pages; PostgreSQL: the
                                * table with its indexes and TOAST) */
};

/* The PostgreSQL snapshot taken after a live-feed read (a LIST with
 * `ascending`), so the feed can tell a gap in the ids that a transaction
 * still running may fill from one that stays (docs/forwarding.md). SQLite
 * stores in id order: `valid` stays false there. */
struct hk_feed_horizon {
    bool valid;
    uint64_t xmin;             /* oldest transaction still running (xid8) */
    uint64_t xmax;             /* first transaction not yet started */
    uint64_t xip_max;          /* the newest of those running, 0: none */
};

/* The values are obs/'s label indexes (obs.h HK_STORE_OPS, hk_store_op_names):
 * a new kind goes at the end, before HK_OP__COUNT. */
enum hk_op_kind {
    HK_OP_INSERT,
    HK_OP_GET,
    HK_OP_DELETE,
    HK_OP_LIST,
    /* Credentials (docs/auth.md): API tokens and sessions. */
    HK_OP_TOKEN_PUT,
    HK_OP_TOKEN_GET,
    HK_OP_TOKEN_LIST,
    HK_OP_TOKEN_REVOKE,
    HK_OP_SESSION_PUT,
    HK_OP_SESSION_GET,
    HK_OP_SESSION_DEL,
    /* Per-source counts (docs/graphql.md, `sources`). */
    HK_OP_SOURCE_STATS,
    /* Forwarding and retention (docs/forwarding.md). */
    HK_OP_CLAIM,
    HK_OP_SETTLE,
    HK_OP_REDELIVER,
    HK_OP_PURGE,
    HK_OP__COUNT
};

/* Earliest time a list bound may carry, unix microseconds: the start of
 * year 0000 (UTC), as early as an RFC 3339 date goes. */
#define HK_STORE_LIST_TIME_MIN INT64_C(-62167219200000000)
/* Sources a SOURCE_STATS reports, at most (the first by name). */
#define HK_STORE_STATS_MAX 10000

/* How many expired sessions each SESSION_PUT deletes first, at most. */
#define HK_STORE_SWEEP_MAX 16
/* Latest time a credential may carry, unix microseconds: the end of year
 * 9999 (UTC). Both stores refuse later times and negative ones. */
#define HK_STORE_TIME_MAX INT64_C(253402300799999999)

struct hk_store_op;
struct sq_loop;     /* private to the SQLite store (sqlite_int.h) */
struct sq_replay;   /* private to the SQLite store (sqlite_int.h) */
typedef void (*hk_store_row_cb)(struct hk_store_op *op, const struct hk_webhook *row);
typedef void (*hk_store_token_cb)(struct hk_store_op *op, const struct hk_token_rec *token);
typedef void (*hk_store_done_cb)(struct hk_store_op *op);

/* One source's figures, for SOURCE_STATS. */
struct hk_source_stats {
    const char *source;        /* borrowed for the call */
    size_t source_len;
    int64_t count;
    int64_t last_received_us;  /* unix microseconds */
};
typedef void (*hk_store_stats_cb)(struct hk_store_op *op, const struct hk_source_stats *s);

/* One request to the store. The caller owns the memory and keeps it (and the
 * input strings it points to) alive until on_done has run with more == false.
 *
 * INSERT: in `row` (id and received_us ignored; the store assigns the id and
 *         sets received_us to now). on_row gets the stored row (after
 *         commit: the row is durable when on_row runs).
 *         An envelope row (row.ingress false; its ingress fields are not
 *         stored, and cleared in `row` at submit) takes an optional
 *         `idem_key`: with one already stored for the same source, on_row
 *         gets the original row and `replayed` is set.
 *         An ingress row (row.ingress true, docs/ingress.md) stores `body`
 *         byte for byte (an empty body is stored empty, not NULL: `body`
 *         may then be any pointer, NULL included), body_sha256 (32 bytes,
 *         required), and content_type, delivery_id, headers, verified and
 *         client_addr, each NULL or UTF-8 without NUL. Its `payload` and the
 *         op's `idem_key` are not used: payload is stored NULL and cleared
 *         in `row` at submit (and a NULL empty body given a pointer), so
 *         on_row reads the new row as GET will. With a delivery_id already
 *         stored for the
 *         same source, whatever the body, on_row gets the original row's
 *         id and received_us (the other fields: the submitted ones on
 *         PostgreSQL, the original's on SQLite), `replayed` is set and nothing is stored (no time window); two
 *         identical deliveries at once, from any loop or any process on the
 *         same database, store one row. A NULL delivery_id never matches.
 *         An ingress row breaking these completes with HK_EINVAL before
 *         anything reaches the database (on_done may run inside submit,
 *         which then returns 0).
 * GET:    in `id`; on_row once, or status HK_ENOTFOUND.
 * DELETE: in `id`; status 0 or HK_ENOTFOUND.
 * LIST:   in `list`; on_row per row, newest (highest id) first, then on_done.
 *         Filters (source, event_type, delivery_id, the two time bounds)
 *         combine with AND; a delivery_id matches ingress rows only. The
 *         time bounds filter the rows an index walk by id finds: with
 *         neither source nor delivery_id, a bound that leaves a page short
 *         walks every older id (linear in the table, never worse).
 *         With list.stream, on_done may come with more == true after a batch
 *         of list.limit rows: the caller must then call exactly one of
 *         hk_store_list_next() (another batch) or hk_store_list_close().
 * SOURCE_STATS: no input. on_stats (may be NULL) once per source that has
 *         rows, in byte order of name, at most HK_STORE_STATS_MAX of them
 *         (the first ones: a caller that got that many may have been cut
 *         short), then on_done once (never `more`). `count` is the source's
 *         rows; `last_received_us` the received_us of its newest row
 *         (highest id: ids follow receipt). A read: one pass over the
 *         (source, id) index, linear in the table.
 * Forwarding and retention (docs/forwarding.md):
 * INSERT  with row.delivery.state PENDING stores the row to be forwarded
 *         (delivery state PENDING, attempts 0, next_us now) in the same
 *         transaction as the row: the outbox is the row. With fwd.owner and
 *         fwd.lease_us set, the row is stored leased to that owner until
 *         then (the inserting process sends it at once). Any other state
 *         stores NONE. A replayed (duplicate) insert changes nothing.
 * CLAIM:  in fwd.owner, fwd.lease_us, list.limit (1..1000), fwd.fifo.
 *         Leases up to list.limit rows that are PENDING, due (next_us <=
 *         now) and not leased (no lease, or one that ended before now), by
 *         next_us then id; of a source in fwd.fifo only its oldest PENDING
 *         row, and only when that one is not leased. Each leased row goes
 *         to on_row (every field, body included, delivery as stored before
 *         the lease), then on_done once. On PostgreSQL the rows are locked
 *         with FOR UPDATE SKIP LOCKED: two processes claiming at once lease
 *         disjoint rows.
 * SETTLE: in id, fwd.owner, row.delivery (state PENDING with next_us, or
 *         DELIVERED, or FAILED; attempts; last_status; last_error, NULL or
 *         UTF-8 without NUL, cut to 200 bytes by the caller). Writes them,
 *         updated_us = now, and ends the lease, if the row is leased to
 *         fwd.owner or not leased at all; HK_ECONFLICT when another owner
 *         holds it (nothing changes); HK_ENOTFOUND when the row is gone.
 *         With fwd.ndelivered > 0 (id and row.delivery unused), a batch:
 *         each row of fwd.delivered as DELIVERED with its attempts and
 *         status (last_error and next_us NULL), under the same lease rule,
 *         in one statement (SQLite: one transaction); rows gone or another
 *         owner's are left as they are. status 0 and fwd.settled = rows
 *         written, or an error for the whole batch (nothing written).
 * REDELIVER: in id. Makes the row PENDING again (attempts 0, next_us now,
 *         no lease; last_status and last_error kept), whatever its state,
 *         NONE included. HK_ENOTFOUND when no such row. on_row (may be
 *         NULL) gets the row as stored afterwards.
 * PURGE:  in *purge (op->purge must point to it). Deletes at most
 *         purge->limit rows (oldest first) that its bounds select, sets
 *         purge->deleted and purge->store_bytes; on SQLite then returns
 *         free pages to the file system (incremental vacuum). A caller
 *         repeats it while `deleted` == limit. With no bound set it
 *         deletes nothing and only reports store_bytes. On PostgreSQL
 *         store_bytes does not fall after a DELETE (the space is reused,
 *         not returned, until a VACUUM FULL). on_row is not called.
 * LIST    with list.ascending: rows oldest first; list.after bounds them
 *         below. On PostgreSQL, op->horizon is filled after the read.
 *         list.delivery filters by delivery state (both orders).
 * Rows given to on_row (INSERT, GET, LIST) carry every field: for an
 *         ingress row (row->ingress) body (never NULL, even when empty),
 *         body_sha256 and the ingress strings (NULL where none was stored),
 *         with payload NULL; for an envelope row the ingress fields are
 *         NULL/0. All borrowed until on_row returns.
 *
 * Credentials (core/credential.h). `token` and `session` point to the
 * caller's records, which the store reads and writes until on_done; nothing
 * else of theirs is kept. A name (token->name, session->subject, `name`) is
 * 1 to HK_TOKEN_NAME_MAX bytes of [A-Za-z0-9._-], NUL-terminated; scopes
 * are a non-zero subset of HK_SCOPE_ALL; times are unix microseconds from 0
 * to HK_STORE_TIME_MAX. An op breaking these, or missing its record,
 * completes with HK_EINVAL before anything reaches the database (on_done
 * may run inside submit, which then returns 0). "now" is the wall time at
 * submit. on_row is never called for these kinds.
 * TOKEN_PUT:    in *token: name, hash, scopes, expires_us (0: never),
 *               created_us (0: the store writes now into it); revoked_us
 *               is ignored and set to 0 (live). HK_ECONFLICT when the name
 *               or the hash is stored already (nothing changes).
 * TOKEN_GET:    in token->hash; out: *token, every field, revoked or expired
 *               ones included (the caller judges). HK_ENOTFOUND when none.
 * TOKEN_LIST:   in list.limit (0: all; other `list` fields are ignored).
 *               on_token (may be NULL) per token in byte order of name, the
 *               record borrowed for the call, then on_done once (never
 *               `more`). list.limit = 1 tells whether any token exists.
 * TOKEN_REVOKE: in `name`. Sets revoked_us to now unless set already (a
 *               second revoke succeeds and keeps the first time). HK_ENOTFOUND
 *               when no token has that name. Every revoke of an existing
 *               token, a repeated one too, also deletes every session whose
 *               subject is that name, in the same transaction. When `token`
 *               is not NULL, it is filled with the token as stored afterwards.
 * SESSION_PUT:  in *session (every field; expires_us > 0). HK_ECONFLICT when
 *               the hash is stored already. First deletes up to
 *               HK_STORE_SWEEP_MAX expired sessions of anyone's (the sweep).
 * SESSION_GET:  in session->hash; out: *session. HK_ENOTFOUND when none,
 *               or when it has expired (expires_us <= now).
 * SESSION_DEL:  in session->hash; deletes it. HK_ENOTFOUND when there was
 *               none, or only an expired one (deleted all the same).
 * On an error status the output records hold nothing to rely on.
 *
 * on_done always runs exactly once per batch, with `status` 0 or a negative
 * HK_E* code. Callbacks may run before submit returns (e.g. SQLite reads). */
struct hk_store_op {
    enum hk_op_kind kind;
    int status;
    bool more;
    bool replayed;
    struct hk_webhook row;
    const char *idem_key;       /* INSERT, optional, NUL-terminated */
    int64_t id;
    struct hk_list_query list;
    struct hk_token_rec *token;     /* TOKEN_PUT, TOKEN_GET, TOKEN_REVOKE (optional) */
    struct hk_session_rec *session; /* SESSION_PUT, SESSION_GET, SESSION_DEL */
    const char *name;               /* TOKEN_REVOKE, NUL-terminated */
    struct hk_fwd_op fwd;           /* INSERT, CLAIM, SETTLE */
    struct hk_purge_op *purge;      /* PURGE */
    struct hk_feed_horizon horizon; /* out: LIST with list.ascending, PostgreSQL */
    hk_store_row_cb on_row;
    hk_store_token_cb on_token;     /* TOKEN_LIST */
    hk_store_stats_cb on_stats;     /* SOURCE_STATS */
    hk_store_done_cb on_done;
    void *data;                 /* the caller's */
    /* Backend-private from here on: the caller neither sets nor reads these.
     * `next` links the op into whichever queue holds it; `now_us` is the
     * wall time at submit for the credential ops that compare or store it.
     * An op belongs to one store, so only that store's member of `be` is
     * ever valid. */
    struct hk_store_op *next;
    int64_t now_us;
    union {
        /* PostgreSQL: valid from submit until the op completes. */
        struct {
            uint64_t deadline;  /* loop time (ms) to answer by; kept when sent again */
            unsigned retries;   /* times sent again because another op failed its group */
        } pg;
        /* SQLite: a write's, valid from submit until its on_done has run. */
        struct {
            struct sq_loop *loop;       /* the loop that submitted it, to answer on */
            struct sq_replay *replay;   /* the original row while `replayed`, else NULL */
        } sq;
    } be;
};

struct hk_store;

/* Gauges a backend may report; -1 where it cannot tell. */
struct hk_store_stats {
    int64_t conns_open;         /* database connections held open */
    int64_t conns_busy;         /* of which running a query now */
    int64_t queue_depth;        /* requests waiting for a connection (SQLite: queued writes) */
    int64_t queue_capacity;     /* waiting requests allowed before HK_EBUSY */
};

/* Per-loop handle. Backends embed it as the first member of their own. */
struct hk_store_loop {
    struct hk_store *store;
};

struct hk_store_vt {
    const char *name;           /* "sqlite", "postgresql" */
    /* Called on the loop's thread before it runs. */
    int (*loop_attach)(struct hk_store *s, uv_loop_t *loop, struct hk_store_loop **out);
    /* Called on the loop's thread; the loop must then run until the handles
     * this closed are gone. No op of this loop may be pending. */
    void (*loop_detach)(struct hk_store_loop *sl);
    /* Returns 0 (callbacks will run) or HK_EBUSY / HK_EUNAVAIL (they will not). */
    int (*submit)(struct hk_store_loop *sl, struct hk_store_op *op);
    void (*list_next)(struct hk_store_loop *sl, struct hk_store_op *op);
    void (*list_close)(struct hk_store_loop *sl, struct hk_store_op *op);
    /* Cheap (no I/O per call): 0 when usable, else HK_EUNAVAIL. */
    int (*health)(struct hk_store_loop *sl);
    /* After every loop detached: flush pending writes and release everything. */
    void (*close)(struct hk_store *s);
    /* Optional (NULL: the backend reports none): pool and queue gauges for
     * /q/metrics. Fills what it knows and leaves the rest as the caller set
     * it (-1). Called on any loop's thread at scrape time: must be
     * thread-safe and cheap (no I/O). */
    void (*stats)(struct hk_store *s, struct hk_store_stats *out);
    /* Optional (NULL: a store other processes do not share): rows stored by
     * other processes on the same database. watch: call cb(ud) on this
     * loop soon after another process announces (PostgreSQL LISTEN on a
     * connection of its own; reconnects by itself, and calls cb after a
     * reconnect too, since announcements may have been missed); 0 or an
     * HK_E* code. announce: tell the others that rows were stored (a NOTIFY
     * outside any insert's transaction; the caller coalesces, at most a few
     * per second). Both on the loop's thread. */
    int (*watch)(struct hk_store_loop *sl, void (*cb)(void *ud), void *ud);
    void (*announce)(struct hk_store_loop *sl);
};

struct hk_store {
    const struct hk_store_vt *vt;
};

static inline int hk_store_submit(struct hk_store_loop *sl, struct hk_store_op *op)
{
    return sl->store->vt->submit(sl, op);
}
static inline void hk_store_list_next(struct hk_store_loop *sl, struct hk_store_op *op)
{
    sl->store->vt->list_next(sl, op);
}
static inline void hk_store_list_close(struct hk_store_loop *sl, struct hk_store_op *op)
{
    sl->store->vt->list_close(sl, op);
}
static inline int hk_store_health(struct hk_store_loop *sl)
{
    return sl->store->vt->health(sl);
}

/* How to open the SQLite store. Zero limits mean the defaults. */
struct hk_sqlite_opts {
    const char *path;           /* the database file */
    bool sync_full;             /* PRAGMA synchronous=FULL (durable against power loss), else NORMAL */
    uint32_t queue_max;         /* queued writes before submit says HK_EBUSY; 0: 65536 */
    uint32_t busy_ms;           /* wait for another process's write lock; 0: 5000 */
};

#define HK_SQLITE_QUEUE_MAX_LIMIT (1u << 24)   /* largest queue_max */
#define HK_SQLITE_BUSY_MS_LIMIT 600000u        /* largest busy_ms */

/* SQLite backend. Creates or migrates the schema. `opts` is borrowed for
 * the call. On failure (a limit above its LIMIT included) returns NULL and
 * writes a one-line reason into errbuf. */
struct hk_store *hk_sqlite_open(const struct hk_sqlite_opts *opts, char *errbuf, size_t errlen);

#endif
