/* SPDX-License-Identifier: MIT
 * Internals of the SQLite store shared by its files: the store, a loop's
 * side of it, the replay record, and the helpers one file offers the
 * others. Not for use outside src/store/sqlite*.c.
 *
 * Ownership: hk_sqlite_open allocates the sq_store and owns it until
 * close(); its write connection and statements belong to the writer thread
 * once that has started (sqlite_writer.c), its queue to whoever holds `mu`.
 * An sq_loop belongs to the thread of the loop that attached it, except its
 * completion list, which the writer fills under the loop's `mu`. */
#ifndef HK_SQLITE_INT_H
#define HK_SQLITE_INT_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <sqlite3.h>
#include <uv.h>

#include "store/store.h"

/* List statements: 8 filter combinations x 2 orders x 5 delivery filters. */
#define HK_SQ_LIST_VARIANTS 80
#define HK_SQLITE_QUEUE_MAX 65536      /* queued writes before submit says HK_EBUSY */
#define HK_SQLITE_BUSY_MS 5000         /* another process holding the write lock */

/* A webhook row: the envelope's columns, then the ingress ones (migration 3;
 * `body` NULL for an envelope row), then the delivery's (migration 4).
 * hk__sq_row reads them in this order. */
#define COLS \
    "id, source, event_type, payload, received_us, body, content_type, delivery_id, body_sha256," \
    " headers, verified, client_addr, dstate, dattempts, dnext_us, dlast_status, dlast_error, dupdated_us"
#define TOKEN_COLS "name, hash, scopes, created_us, expires_us, revoked_us"
#define SESSION_COLS "hash, subject, scopes, csrf_hash, expires_us"

struct sq_store {
    struct hk_store base;
    char *path;
    char *dir;                      /* the database's directory, for statvfs */
    sqlite3 *db;                    /* the write connection; writer thread only */
    sqlite3_stmt *begin, *commit, *rollback, *ins, *idem, *del, *probe_ins, *probe_del;
    sqlite3_stmt *ins_hook, *delivery;    /* ingress rows: insert, and find by delivery id */
    /* Prepared on first use (sqlite_writer.c: prepare_for), else NULL. */
    sqlite3_stmt *tok_ins, *tok_revoke, *tok_revoke_ses, *ses_sweep, *ses_ins, *ses_del;
    /* Forwarding and retention (docs/forwarding.md). */
    sqlite3_stmt *claim, *claim_fifo, *lease, *settle, *exists, *redeliver, *purge_all, *purge_src, *keep_all,
        *keep_src, *vacuum, *pages;
    uv_thread_t writer;
    bool writer_started;            /* guarded by mu */
    bool sync_full;                 /* synchronous=FULL, else NORMAL (set at open) */
    bool wal_going;                 /* the WAL had frames at open (a clean close leaves it so) */
    int busy_ms;
    atomic_int health;              /* 0, or HK_EUNAVAIL while `spell` lasts */
    atomic_int read_spell;          /* 0, or the code the failing reads get */

    /* The writer's failure spell; writer thread only. */
    int spell;                      /* 0, or the code the failing writes get */
    uint64_t spell_start_ns;
    uint64_t spell_failed;          /* writes failed since the spell began */

    uv_mutex_t mu;                  /* guards everything below */
    uv_cond_t cv;
    struct hk_store_op *head, *tail;
    size_t queued;
    size_t queue_max;
    unsigned nloops;
    bool stopping;
};

struct sq_loop {
    struct hk_store_loop base;      /* first: the API casts between the two */
    struct sq_store *st;
    sqlite3 *db;                    /* read-only; this loop's thread only */
    sqlite3_stmt *get;
    /* By variant (sqlite.c list_variant): filters, order and delivery
     * state; prepared on first use. */
    sqlite3_stmt *list[HK_SQ_LIST_VARIANTS];
    sqlite3_stmt *tok_get, *tok_list, *ses_get, *stats;
    uv_async_t async;
    uv_timer_t warm;                /* opens db shortly after start */
    uv_check_t turn;                /* the end of each turn of the loop */
    bool queued;                    /* this turn queued a write (sqlite.c: on_turn) */
    int closing;                    /* handles whose close is pending */
    size_t pending;                 /* writes submitted, callbacks not yet run */
    size_t streams;                 /* streamed lists waiting for next/close */

    uv_mutex_t mu;                  /* guards the completion list */
    struct hk_store_op *done_head, *done_tail;
};

/* A replay (op->be.sq.replay: an idempotency key or a delivery id stored
 * already): the original row, every string and the body copied out of the
 * writer's statement into `bytes`, so the loop thread can read it after the
 * statement moved on. Freed once on_done has returned. */
struct sq_replay {
    struct hk_webhook row;
    struct sq_replay *next;         /* CLAIM: the next row claimed */
    char bytes[];
};

/* ---- sqlite.c: shared helpers and the ops table ------------------------- */

extern const struct hk_store_vt hk__sq_vt;

/* The row a statement (COLS order) is on; strings borrowed from it. */
void hk__sq_row(sqlite3_stmt *stmt, struct hk_webhook *row);
/* The token (TOKEN_COLS order) or session (SESSION_COLS order) a statement
 * is on, copied into *out. */
void hk__sq_token_row(sqlite3_stmt *stmt, struct hk_token_rec *out);
void hk__sq_session_row(sqlite3_stmt *stmt, struct hk_session_rec *out);
/* A NULL pointer binds SQL NULL; any other pointer binds its `n` bytes. */
int hk__sq_bind_str(sqlite3_stmt *stmt, int i, const char *p, size_t n);
/* SQLite's result code as the store's HK_E* code. */
int hk__sq_store_err(int rc);
/* The stable token a failure is logged with (resp.c answers with the same). */
const char *hk__sq_err_reason(int code);
/* One line when a spell of failures begins or changes its cause. */
void hk__sq_log_spell(const char *msg, int code, int rc);

/* ---- sqlite_writer.c: the writer thread ------------------------------------ */

/* Prepare the statements inserts, deletes and the failure probe use on
 * st->db (the others on their first use, in the writer thread). SQLITE_OK
 * or the error. */
int hk__sq_writer_prepare(struct sq_store *st);
void hk__sq_writer_finalize(struct sq_store *st);
/* Start the writer thread if it has not started. The caller holds st->mu.
 * 0 or HK_EUNAVAIL. */
int hk__sq_writer_start_locked(struct sq_store *st);
/* Queue a write of loop `sl`: 0 (its callbacks will run on sl), or
 * HK_EUNAVAIL / HK_EBUSY (they will not). */
int hk__sq_writer_push(struct sq_store *st, struct sq_loop *sl, struct hk_store_op *op);
/* Let the writer commit what is queued and end; no loop may be attached. */
void hk__sq_writer_stop(struct sq_store *st);
/* After the stop: checkpoint into the database file and leave the WAL
 * going for the next start (or leave the close to SQLite on a failure). */
void hk__sq_writer_leave_wal(struct sq_store *st);

/* Copies of `orig` and all it points to (one allocation; the caller frees). */
struct sq_replay *hk__sq_replay_new(const struct hk_webhook *orig);
/* ---- sqlite_open.c: open, migrate, free ------------------------------------- */

void hk__sq_store_free(struct sq_store *st);

#endif
