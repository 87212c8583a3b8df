/* SPDX-License-Identifier: MIT
 * The SQLite store: one writer thread owns the write connection and commits
 * every queued INSERT/DELETE of a wakeup in one transaction (group commit);
 * each event loop reads synchronously through its own read-only connection.
 * Write results travel back to the submitting loop through a uv_async_t. */
#include <assert.h>
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/statvfs.h>

#include <sqlite3.h>
#include <uv.h>

#include "core/clock.h"
#include "core/log.h"
#include "store/store.h"

#define HK_SQLITE_BATCH_MAX 256        /* ops per transaction */
#define HK_SQLITE_QUEUE_MAX 65536      /* queued writes before submit says HK_EBUSY */
#define HK_SQLITE_BUSY_MS 5000         /* another process holding the write lock */
#define HK_SQLITE_LOOKASIDE_SZ 256     /* lookaside slot size, bytes */
#define HK_SQLITE_LOOKASIDE_N 64       /* lookaside slots per connection */
#define HK_SQLITE_WARM_MS 10           /* a loop's read connection opens by then */
#define HK_SQLITE_PROBE_MS 1000        /* while writes fail, an idle writer tries one this often */
#define HK_SQLITE_FULL_ROOM (1u << 20) /* free bytes that end a full-disk spell */

/* Schema migrations; entry i takes the database from version i to i + 1.
 * Never edit an entry once released: append a new one. */
static const char *const migrations[] = {
    "CREATE TABLE webhooks("
    " id INTEGER PRIMARY KEY AUTOINCREMENT,"
    " source TEXT NOT NULL,"
    " event_type TEXT NOT NULL,"
    " payload TEXT,"
    " received_us INTEGER NOT NULL,"
    " idem_key TEXT);"
    "CREATE UNIQUE INDEX webhooks_idem ON webhooks(source, idem_key)"
    " WHERE idem_key IS NOT NULL;"
    "CREATE INDEX webhooks_source_id ON webhooks(source, id);"
    "CREATE INDEX webhooks_event_type_id ON webhooks(event_type, id);",
};
#define SCHEMA_VERSION ((int)(sizeof migrations / sizeof migrations[0]))

#define COLS "id, source, event_type, payload, received_us"
#define SQL_INSERT \
    "INSERT INTO webhooks(source, event_type, payload, received_us, idem_key)" \
    " VALUES(?1, ?2, ?3, ?4, ?5)"
#define SQL_IDEM "SELECT " COLS " FROM webhooks WHERE source = ?1 AND idem_key = ?2"
#define SQL_DELETE "DELETE FROM webhooks WHERE id = ?1"
#define SQL_GET "SELECT " COLS " FROM webhooks WHERE id = ?1"
/* The probe's write: a row no reader counts (versions start at 1, readers
 * take the maximum), inserted and deleted again in one transaction. */
#define SQL_PROBE_INS "INSERT INTO schema_version(version) VALUES(0)"
#define SQL_PROBE_DEL "DELETE FROM schema_version WHERE version = 0"

/* One list statement per filter combination, so each can use its index:
 * bit 0 = source, bit 1 = event_type. ?3 is the keyset bound, ?4 the limit. */
static const char *const list_sql[4] = {
    "SELECT " COLS " FROM webhooks WHERE id < ?3 ORDER BY id DESC LIMIT ?4",
    "SELECT " COLS " FROM webhooks WHERE source = ?1 AND id < ?3"
    " ORDER BY id DESC LIMIT ?4",
    "SELECT " COLS " FROM webhooks WHERE event_type = ?2 AND id < ?3"
    " ORDER BY id DESC LIMIT ?4",
    "SELECT " COLS " FROM webhooks WHERE source = ?1 AND event_type = ?2 AND id < ?3"
    " ORDER BY id DESC LIMIT ?4",
};

struct sq_loop;

struct sq_store {
    struct hk_store base;
    char *path;
    char *dir;                      /* the database's directory, for statvfs */
    sqlite3 *db;                    /* the write connection; writer thread only */
    sqlite3_stmt *begin, *commit, *rollback, *ins, *idem, *del, *probe_ins, *probe_del;
    uv_thread_t writer;
    bool writer_started;            /* guarded by mu */
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
    sqlite3_stmt *list[4];
    uv_async_t async;
    uv_timer_t warm;                /* opens db shortly after start */
    int closing;                    /* handles whose close is pending */
    size_t pending;                 /* writes submitted, callbacks not yet run */
    size_t streams;                 /* streamed lists waiting for next/close */

    uv_mutex_t mu;                  /* guards the completion list */
    struct hk_store_op *done_head, *done_tail;
};

/* An idempotent replay: the original row, copied out of the writer's
 * statement so the loop thread can read it after the statement moved on.
 * Freed once on_done has returned. */
struct replay {
    struct sq_loop *sl;
    struct hk_webhook row;
    char bytes[];
};

/* While an op is queued or executing, op->priv is its loop; a replayed op
 * moves it into its replay record. */
static struct sq_loop *op_loop(struct hk_store_op *op)
{
    return op->replayed ? ((struct replay *)op->priv)->sl : op->priv;
}

static void row_from_stmt(sqlite3_stmt *stmt, struct hk_webhook *row)
{
    row->id = sqlite3_column_int64(stmt, 0);
    row->source = (const char *)sqlite3_column_text(stmt, 1);
    row->source_len = (size_t)sqlite3_column_bytes(stmt, 1);
    row->event_type = (const char *)sqlite3_column_text(stmt, 2);
    row->event_type_len = (size_t)sqlite3_column_bytes(stmt, 2);
    if (sqlite3_column_type(stmt, 3) == SQLITE_NULL) {
        row->payload = NULL;
        row->payload_len = 0;
    } else {
        row->payload = (const char *)sqlite3_column_text(stmt, 3);
        row->payload_len = (size_t)sqlite3_column_bytes(stmt, 3);
    }
    row->received_us = sqlite3_column_int64(stmt, 4);
}

/* A NULL pointer binds SQL NULL; any other pointer binds its `n` bytes, so an
 * empty string stays an empty string. */
static int bind_str(sqlite3_stmt *stmt, int i, const char *p, size_t n)
{
    if (p == NULL)
        return sqlite3_bind_null(stmt, i);
    return sqlite3_bind_text64(stmt, i, p, n, SQLITE_STATIC, SQLITE_UTF8);
}

/* Run a statement that returns no rows and leave it ready for the next run. */
static int step_once(sqlite3_stmt *stmt)
{
    int rc = sqlite3_step(stmt);
    sqlite3_reset(stmt);
    return rc;
}

static void log_sqlite(const char *msg, int rc)
{
    /* sqlite3_errstr() strings are fixed English text without quotes, safe to
     * put in a JSON field as they are; sqlite3_errmsg() may quote names. */
    hk_error(msg, "\"rc\":%d,\"err\":\"%s\"", rc, sqlite3_errstr(rc));
}

/* SQLite's result codes as the store's, for reads and writes alike. The
 * environmental failures that pass by themselves (a full disk, another
 * process holding the lock, a disk or file system that failed) get codes of
 * their own, answered 507/503 with Retry-After; anything else is unexpected. */
static int store_err(int rc)
{
    switch (rc & 0xff) {
    case SQLITE_FULL:
        return HK_EFULL;
    case SQLITE_BUSY:
    case SQLITE_LOCKED:
    case SQLITE_PROTOCOL:   /* lost the race for a WAL lock too many times */
        return HK_ELOCKED;
    case SQLITE_IOERR:
    case SQLITE_CANTOPEN:   /* a -wal or -shm file that cannot be opened again */
    case SQLITE_READONLY:   /* a file system remounted read-only, a file moved away */
        return HK_EIO;
    default:
        return HK_ESTORE;
    }
}

/* The stable token a spell is logged with (resp.c answers with the same). */
static const char *err_reason(int code)
{
    switch (code) {
    case HK_EFULL: return "disk_full";
    case HK_ELOCKED: return "database_locked";
    case HK_EIO: return "io_error";
    default: return "internal_error";
    }
}

/* One line when a spell of failures begins or changes its cause, never one
 * per request: warn for the environmental ones, error for the rest. */
static void log_spell(const char *msg, int code, int rc)
{
    hk_log(code == HK_ESTORE ? HK_LOG_ERROR : HK_LOG_WARN, msg,
           "\"reason\":\"%s\",\"rc\":%d,\"err\":\"%s\"", err_reason(code), rc,
           sqlite3_errstr(rc));
}

/* ---- writer thread ---------------------------------------------------- */

/* Errors that belong to one op and leave the transaction usable. Anything
 * else (I/O, full disk, corruption, rollback by SQLite) fails the batch. */
static bool op_error(sqlite3 *db, int rc)
{
    int primary = rc & 0xff;
    return (primary == SQLITE_CONSTRAINT || primary == SQLITE_TOOBIG ||
            primary == SQLITE_MISMATCH) && !sqlite3_get_autocommit(db);
}

/* Look up (source, idem_key). Returns SQLITE_ROW after turning `op` into a
 * replay of the stored row, SQLITE_DONE when there is none, or an error. */
static int find_idem(struct sq_store *st, struct hk_store_op *op)
{
    sqlite3_stmt *stmt = st->idem;
    int rc = bind_str(stmt, 1, op->row.source, op->row.source_len);
    if (rc == SQLITE_OK)
        rc = sqlite3_bind_text(stmt, 2, op->idem_key, -1, SQLITE_STATIC);
    if (rc != SQLITE_OK)
        goto out;
    rc = sqlite3_step(stmt);
    if (rc != SQLITE_ROW)
        goto out;

    struct hk_webhook orig;
    row_from_stmt(stmt, &orig);
    size_t n = orig.source_len + orig.event_type_len + orig.payload_len;
    struct replay *rb = malloc(sizeof *rb + n);
    if (rb == NULL)
        abort();   /* process-wide OOM policy (see core/buf.h) */
    char *p = rb->bytes;
    rb->sl = op->priv;
    rb->row = orig;
    rb->row.source = p;
    memcpy(p, orig.source, orig.source_len);
    p += orig.source_len;
    rb->row.event_type = p;
    memcpy(p, orig.event_type, orig.event_type_len);
    p += orig.event_type_len;
    if (orig.payload != NULL) {
        rb->row.payload = p;
        memcpy(p, orig.payload, orig.payload_len);
    }
    op->priv = rb;
    op->replayed = true;
    op->status = 0;
out:
    sqlite3_reset(stmt);
    sqlite3_clear_bindings(stmt);
    return rc;
}

/* Returns SQLITE_OK when the op has its status (success or its own failure),
 * or the SQLite error that must fail the whole batch. */
static int run_insert(struct sq_store *st, struct hk_store_op *op)
{
    sqlite3_stmt *stmt = st->ins;
    const struct hk_webhook *r = &op->row;
    int rc = op->idem_key != NULL ? find_idem(st, op) : SQLITE_DONE;

    if (rc == SQLITE_ROW)
        return SQLITE_OK;   /* a replay: find_idem has filled in the op */
    if (rc == SQLITE_DONE)
        rc = bind_str(stmt, 1, r->source, r->source_len);
    if (rc == SQLITE_OK)
        rc = bind_str(stmt, 2, r->event_type, r->event_type_len);
    if (rc == SQLITE_OK)
        rc = bind_str(stmt, 3, r->payload, r->payload_len);
    if (rc == SQLITE_OK)
        rc = sqlite3_bind_int64(stmt, 4, r->received_us);
    if (rc == SQLITE_OK)
        rc = sqlite3_bind_text(stmt, 5, op->idem_key, -1, SQLITE_STATIC);
    if (rc == SQLITE_OK)
        rc = sqlite3_step(stmt);
    if (rc == SQLITE_DONE) {
        op->row.id = sqlite3_last_insert_rowid(st->db);
        op->status = 0;
        rc = SQLITE_OK;
    } else if (op_error(st->db, rc)) {
        op->status = HK_EINVAL;
        rc = SQLITE_OK;
    }
    sqlite3_reset(stmt);
    sqlite3_clear_bindings(stmt);
    return rc;
}

static int run_delete(struct sq_store *st, struct hk_store_op *op)
{
    int rc = sqlite3_bind_int64(st->del, 1, op->id);
    if (rc == SQLITE_OK)
        rc = sqlite3_step(st->del);
    if (rc == SQLITE_DONE) {
        op->status = sqlite3_changes(st->db) > 0 ? 0 : HK_ENOTFOUND;
        rc = SQLITE_OK;
    }
    sqlite3_reset(st->del);
    return rc;
}

/* Is there room on the database's file system to end a full-disk spell?
 * When statvfs cannot tell, the write that just worked decides. */
static bool disk_has_room(const struct sq_store *st)
{
    struct statvfs v;
    if (statvfs(st->dir, &v) != 0)
        return true;
    return (uint64_t)v.f_bavail * v.f_frsize >= HK_SQLITE_FULL_ROOM;
}

/* Writes failed with `code` (SQLite's `rc`), `n` ops with them. The store is
 * not ready (health says HK_EUNAVAIL) until a write commits again. */
static void spell_fail(struct sq_store *st, int code, int rc, size_t n)
{
    if (code != st->spell) {
        log_spell("sqlite writes failing, store not ready", code, rc);
        if (st->spell == 0) {
            st->spell_start_ns = hk_mono_ns();
            st->spell_failed = 0;
        }
        st->spell = code;
        atomic_store(&st->health, HK_EUNAVAIL);
    }
    st->spell_failed += n;
}

/* A write committed: the spell is over, except that a full disk needs room
 * again. A small write can fit in WAL space that the failed batches had
 * already claimed; ending the spell on that would flap with the next write. */
static void spell_ok(struct sq_store *st)
{
    if (st->spell == 0 || (st->spell == HK_EFULL && !disk_has_room(st)))
        return;
    hk_info("sqlite writes recovered, store ready",
            "\"reason\":\"%s\",\"seconds\":%.3f,\"failed_writes\":%" PRIu64,
            err_reason(st->spell), (double)(hk_mono_ns() - st->spell_start_ns) / 1e9,
            st->spell_failed);
    st->spell = 0;
    atomic_store(&st->health, 0);
}

/* While a spell lasts, writes may never come to end it: a store that is not
 * ready gets no traffic. So the idle writer makes a write of its own every
 * HK_SQLITE_PROBE_MS. It must commit, since only a commit meets a full or
 * failing disk, and it must change nothing anyone reads. */
static void probe(struct sq_store *st)
{
    if (st->spell == HK_EFULL && !disk_has_room(st))
        return;
    int rc = step_once(st->begin);
    if (rc == SQLITE_DONE)
        rc = step_once(st->probe_ins);
    if (rc == SQLITE_DONE)
        rc = step_once(st->probe_del);
    if (rc == SQLITE_DONE)
        rc = step_once(st->commit);
    if (rc == SQLITE_DONE) {
        spell_ok(st);
        return;
    }
    if (!sqlite3_get_autocommit(st->db))
        step_once(st->rollback);
    spell_fail(st, store_err(rc), rc, 0);
}

/* Execute a batch of `n` ops in one transaction. On any batch-level failure,
 * nothing of the batch is stored and every op reports the mapped error. */
static void run_batch(struct sq_store *st, struct hk_store_op *batch, size_t n)
{
    struct hk_store_op *op;
    int rc = step_once(st->begin);
    if (rc != SQLITE_DONE)
        goto out;
    for (op = batch; op != NULL; op = op->next) {
        rc = op->kind == HK_OP_INSERT ? run_insert(st, op) : run_delete(st, op);
        if (rc != SQLITE_OK)
            goto out;
    }
    rc = step_once(st->commit);
out:
    if (rc == SQLITE_DONE) {
        spell_ok(st);
        return;
    }
    int code = store_err(rc);
    spell_fail(st, code, rc, n);
    if (!sqlite3_get_autocommit(st->db))
        step_once(st->rollback);
    for (op = batch; op != NULL; op = op->next) {
        if (op->replayed) {
            struct replay *rb = op->priv;
            op->priv = rb->sl;
            op->replayed = false;
            free(rb);
        }
        op->status = code;
    }
}

/* Hand each op back to its loop. The async send happens under the loop's
 * mutex: once the loop has drained an op, the writer is done touching that
 * loop, which is what lets loop_detach free it. */
static void complete_batch(struct hk_store_op *batch)
{
    struct hk_store_op *op = batch;
    while (op != NULL) {
        struct hk_store_op *next = op->next;
        struct sq_loop *sl = op_loop(op);
        if (!op->replayed)
            op->priv = NULL;
        op->next = NULL;
        uv_mutex_lock(&sl->mu);
        if (sl->done_tail != NULL)
            sl->done_tail->next = op;
        else
            sl->done_head = op;
        sl->done_tail = op;
        /* Cannot fail on a live handle (libuv returns 0 unconditionally). */
        (void)uv_async_send(&sl->async);
        uv_mutex_unlock(&sl->mu);
        op = next;
    }
}

static void writer_main(void *arg)
{
    struct sq_store *st = arg;
    for (;;) {
        bool timed_out = false;
        uv_mutex_lock(&st->mu);
        while (st->head == NULL && !st->stopping && !timed_out) {
            if (st->spell == 0)
                uv_cond_wait(&st->cv, &st->mu);
            else
                timed_out = uv_cond_timedwait(&st->cv, &st->mu,
                                              HK_SQLITE_PROBE_MS * UINT64_C(1000000)) == UV_ETIMEDOUT;
        }
        if (st->head == NULL) {
            bool stopping = st->stopping;
            uv_mutex_unlock(&st->mu);
            if (stopping)
                break;   /* and the queue is drained */
            probe(st);
            continue;
        }
        struct hk_store_op *batch = st->head, *last = st->head;
        size_t n = 1;
        while (n < HK_SQLITE_BATCH_MAX && last->next != NULL) {
            last = last->next;
            n++;
        }
        st->head = last->next;
        if (st->head == NULL)
            st->tail = NULL;
        last->next = NULL;
        st->queued -= n;
        uv_mutex_unlock(&st->mu);

        run_batch(st, batch, n);
        complete_batch(batch);
    }
}

/* The writer thread starts with the first write or a loop's warm-up,
 * whichever comes first: starting a thread is a good part of a cold start
 * on a VM, and the write connection is open and migrated already. The
 * caller holds st->mu. */
static int writer_start_locked(struct sq_store *st)
{
    if (st->writer_started)
        return 0;
    /* Signals are the main thread's: the writer starts with all blocked. */
    sigset_t all, old;
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, &old);
    int rc = uv_thread_create(&st->writer, writer_main, st);
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    if (rc != 0)
        return HK_EUNAVAIL;
    st->writer_started = true;
    return 0;
}

/* ---- loop side -------------------------------------------------------- */

static void on_async(uv_async_t *h)
{
    struct sq_loop *sl = h->data;
    uv_mutex_lock(&sl->mu);
    struct hk_store_op *op = sl->done_head;
    sl->done_head = sl->done_tail = NULL;
    uv_mutex_unlock(&sl->mu);

    while (op != NULL) {
        /* Read everything first: on_done may free or resubmit the op. */
        struct hk_store_op *next = op->next;
        struct replay *rb = op->replayed ? op->priv : NULL;
        op->next = NULL;
        op->priv = NULL;
        assert(sl->pending > 0);
        if (--sl->pending == 0)
            uv_unref((uv_handle_t *)&sl->async);
        if (op->kind == HK_OP_INSERT && op->status == 0 && op->on_row != NULL)
            op->on_row(op, rb != NULL ? &rb->row : &op->row);
        op->more = false;
        op->on_done(op);
        free(rb);
        op = next;
    }
}

static void on_handle_closed(uv_handle_t *h)
{
    struct sq_loop *sl = h->data;
    if (--sl->closing > 0)
        return;
    uv_mutex_destroy(&sl->mu);
    free(sl);
}

/* A callback may re-enter submit while one of this loop's statements is still
 * stepping (a GET from inside a LIST's on_row, say). The nested call then gets
 * a statement of its own instead of resetting the running one. */
static int stmt_acquire(struct sq_loop *sl, sqlite3_stmt *cached, const char *sql,
                        sqlite3_stmt **out)
{
    if (!sqlite3_stmt_busy(cached)) {
        *out = cached;
        return SQLITE_OK;
    }
    return sqlite3_prepare_v2(sl->db, sql, -1, out, NULL);
}

static void stmt_release(sqlite3_stmt *stmt, sqlite3_stmt *cached)
{
    if (stmt == cached) {
        /* Reset ends the read transaction, so no snapshot outlives a call
         * and checkpoints are never held back by an idle loop. */
        sqlite3_reset(stmt);
        sqlite3_clear_bindings(stmt);
    } else {
        sqlite3_finalize(stmt);
    }
}

/* A read failed with SQLite's `rc`: returns the op's status. Reads fail
 * and recover on every loop at once, so the spell is the store's, logged
 * once; it leaves readiness to the writer, whose spell is about writes. */
static int read_failed(struct sq_store *st, int rc)
{
    int code = store_err(rc);
    if (atomic_exchange(&st->read_spell, code) != code)
        log_spell("sqlite reads failing", code, rc);
    return code;
}

static void read_ok(struct sq_store *st)
{
    if (atomic_load_explicit(&st->read_spell, memory_order_relaxed) != 0 &&
        atomic_exchange(&st->read_spell, 0) != 0)
        hk_info("sqlite reads recovered", NULL);
}

static void loop_free_db(struct sq_loop *sl)
{
    sqlite3_finalize(sl->get);
    sl->get = NULL;
    for (int i = 0; i < 4; i++) {
        sqlite3_finalize(sl->list[i]);
        sl->list[i] = NULL;
    }
    sqlite3_close(sl->db);
    sl->db = NULL;
}

/* The loop's read connection opens on its first use or HK_SQLITE_WARM_MS
 * after the loop started, whichever comes first: the write connection has
 * already opened and migrated the database, so the reader is not needed to
 * be ready, and its open (schema parse, some 30 page faults) stays out of
 * the cold start. A failure is retried on the next read. */
static int reader_open(struct sq_loop *sl)
{
    if (sl->db != NULL)
        return SQLITE_OK;
    int rc = sqlite3_open_v2(sl->st->path, &sl->db, SQLITE_OPEN_READONLY | SQLITE_OPEN_NOMUTEX, NULL);
    if (rc == SQLITE_OK)
        rc = sqlite3_extended_result_codes(sl->db, 1);
    if (rc == SQLITE_OK)
        rc = sqlite3_busy_timeout(sl->db, sl->st->busy_ms);
    if (rc == SQLITE_OK)
        rc = sqlite3_prepare_v3(sl->db, SQL_GET, -1, SQLITE_PREPARE_PERSISTENT, &sl->get, NULL);
    for (int i = 0; i < 4 && rc == SQLITE_OK; i++)
        rc = sqlite3_prepare_v3(sl->db, list_sql[i], -1, SQLITE_PREPARE_PERSISTENT,
                                &sl->list[i], NULL);
    if (rc != SQLITE_OK) {
        (void)read_failed(sl->st, rc);
        loop_free_db(sl);
    }
    return rc;
}

static void on_warm(uv_timer_t *t)
{
    struct sq_loop *sl = t->data;
    uv_mutex_lock(&sl->st->mu);
    if (writer_start_locked(sl->st) < 0)
        hk_warn("sqlite: cannot start the writer thread", NULL);
    uv_mutex_unlock(&sl->st->mu);
    (void)reader_open(sl);
}

static void do_get(struct sq_loop *sl, struct hk_store_op *op)
{
    sqlite3_stmt *stmt = NULL;
    int rc = stmt_acquire(sl, sl->get, SQL_GET, &stmt);
    if (rc == SQLITE_OK)
        rc = sqlite3_bind_int64(stmt, 1, op->id);
    if (rc == SQLITE_OK)
        rc = sqlite3_step(stmt);
    if (rc == SQLITE_ROW) {
        struct hk_webhook row;
        row_from_stmt(stmt, &row);
        read_ok(sl->st);
        op->status = 0;
        if (op->on_row != NULL)
            op->on_row(op, &row);
    } else if (rc == SQLITE_DONE) {
        read_ok(sl->st);
        op->status = HK_ENOTFOUND;
    } else {
        op->status = read_failed(sl->st, rc);
    }
    if (stmt != NULL)
        stmt_release(stmt, sl->get);
    op->more = false;
    op->on_done(op);
}

/* One batch of a list. Streams are keyset-paged: after a batch, list.before
 * becomes the last id delivered, so nothing is held open between batches.
 * A stream fetches limit + 1 rows to know whether another batch exists. */
static void list_batch(struct sq_loop *sl, struct hk_store_op *op)
{
    const struct hk_list_query *q = &op->list;
    unsigned variant = (q->source != NULL ? 1u : 0u) | (q->event_type != NULL ? 2u : 0u);
    sqlite3_stmt *cached = sl->list[variant];
    sqlite3_stmt *stmt = NULL;
    uint32_t n = 0;
    int64_t last = 0;
    bool more = false;

    int rc = stmt_acquire(sl, cached, list_sql[variant], &stmt);
    if (rc == SQLITE_OK && q->source != NULL)
        rc = bind_str(stmt, 1, q->source, q->source_len);
    if (rc == SQLITE_OK && q->event_type != NULL)
        rc = bind_str(stmt, 2, q->event_type, q->event_type_len);
    if (rc == SQLITE_OK)
        rc = sqlite3_bind_int64(stmt, 3, q->before > 0 ? q->before : INT64_MAX);
    if (rc == SQLITE_OK)
        rc = sqlite3_bind_int64(stmt, 4, q->limit == 0 ? -1
                                : (int64_t)q->limit + (q->stream ? 1 : 0));
    if (rc != SQLITE_OK)
        goto out;
    op->status = 0;
    while ((rc = sqlite3_step(stmt)) == SQLITE_ROW) {
        if (q->limit != 0 && n == q->limit) {
            more = true;
            rc = SQLITE_DONE;
            break;
        }
        struct hk_webhook row;
        row_from_stmt(stmt, &row);
        last = row.id;
        n++;
        if (op->on_row != NULL)
            op->on_row(op, &row);
    }
out:
    if (stmt != NULL)
        stmt_release(stmt, cached);
    if (rc != SQLITE_DONE) {
        op->status = read_failed(sl->st, rc);
        more = false;
    } else {
        read_ok(sl->st);
    }
    if (more) {
        op->list.before = last;
        sl->streams++;
    }
    op->more = more;
    op->on_done(op);
}

static int sq_submit(struct hk_store_loop *base, struct hk_store_op *op)
{
    struct sq_loop *sl = (struct sq_loop *)base;
    struct sq_store *st = sl->st;

    op->status = 0;
    op->more = false;
    op->replayed = false;
    switch (op->kind) {
    case HK_OP_GET:
    case HK_OP_LIST:
        /* A stream's later batches (sq_list_next) find the reader open. */
        if (reader_open(sl) != SQLITE_OK) {
            op->status = HK_EUNAVAIL;
            op->on_done(op);
        } else if (op->kind == HK_OP_GET) {
            do_get(sl, op);
        } else {
            list_batch(sl, op);
        }
        return 0;
    case HK_OP_INSERT:
        /* received_us is when the request was accepted, not when the writer
         * got to it: queueing under load does not shift timestamps. */
        op->row.received_us = hk_wall_us();
        break;
    case HK_OP_DELETE:
        break;
    default:
        return HK_EINVAL;
    }

    op->priv = sl;
    op->next = NULL;
    uv_mutex_lock(&st->mu);
    assert(!st->stopping);
    if (writer_start_locked(st) < 0) {
        uv_mutex_unlock(&st->mu);
        op->priv = NULL;
        hk_warn("sqlite: cannot start the writer thread", NULL);
        return HK_EUNAVAIL;
    }
    if (st->queued >= st->queue_max) {
        uv_mutex_unlock(&st->mu);
        op->priv = NULL;
        return HK_EBUSY;
    }
    if (st->tail != NULL) {
        st->tail->next = op;
    } else {
        /* The writer only sleeps on an empty queue. */
        st->head = op;
        uv_cond_signal(&st->cv);
    }
    st->tail = op;
    st->queued++;
    uv_mutex_unlock(&st->mu);

    /* The async handle keeps the loop alive exactly while writes are out. */
    if (sl->pending++ == 0)
        uv_ref((uv_handle_t *)&sl->async);
    return 0;
}

static void sq_list_next(struct hk_store_loop *base, struct hk_store_op *op)
{
    struct sq_loop *sl = (struct sq_loop *)base;
    assert(op->kind == HK_OP_LIST && op->more && sl->streams > 0);
    sl->streams--;
    op->more = false;
    list_batch(sl, op);
}

static void sq_list_close(struct hk_store_loop *base, struct hk_store_op *op)
{
    struct sq_loop *sl = (struct sq_loop *)base;
    assert(op->kind == HK_OP_LIST && op->more && sl->streams > 0);
    /* Keyset paging holds nothing between batches. */
    sl->streams--;
    op->more = false;
}

static int sq_health(struct hk_store_loop *base)
{
    struct sq_loop *sl = (struct sq_loop *)base;
    return atomic_load_explicit(&sl->st->health, memory_order_relaxed);
}


static int sq_loop_attach(struct hk_store *s, uv_loop_t *loop, struct hk_store_loop **out)
{
    struct sq_store *st = (struct sq_store *)s;
    struct sq_loop *sl = calloc(1, sizeof *sl);
    int rc;
    if (sl == NULL)
        abort();
    sl->base.store = s;
    sl->st = st;
    sl->async.data = sl;
    rc = uv_mutex_init(&sl->mu);
    if (rc < 0) {
        free(sl);
        return rc;
    }
    rc = uv_async_init(loop, &sl->async, on_async);
    if (rc < 0)
        goto out;
    uv_unref((uv_handle_t *)&sl->async);
    sl->warm.data = sl;
    uv_timer_init(loop, &sl->warm);
    uv_timer_start(&sl->warm, on_warm, HK_SQLITE_WARM_MS, 0);
    uv_unref((uv_handle_t *)&sl->warm);

    uv_mutex_lock(&st->mu);
    st->nloops++;
    uv_mutex_unlock(&st->mu);
    *out = &sl->base;
out:
    if (rc != 0) {
        uv_mutex_destroy(&sl->mu);
        free(sl);
    }
    return rc;
}

static void sq_loop_detach(struct hk_store_loop *base)
{
    struct sq_loop *sl = (struct sq_loop *)base;
    struct sq_store *st = sl->st;

    assert(sl->pending == 0 && sl->streams == 0);
    uv_mutex_lock(&sl->mu);
    assert(sl->done_head == NULL);
    uv_mutex_unlock(&sl->mu);

    loop_free_db(sl);
    uv_mutex_lock(&st->mu);
    assert(st->nloops > 0);
    st->nloops--;
    uv_mutex_unlock(&st->mu);
    sl->closing = 2;
    uv_close((uv_handle_t *)&sl->warm, on_handle_closed);
    uv_close((uv_handle_t *)&sl->async, on_handle_closed);
}

/* ---- open / close ----------------------------------------------------- */

static void store_free(struct sq_store *st)
{
    sqlite3_finalize(st->begin);
    sqlite3_finalize(st->commit);
    sqlite3_finalize(st->rollback);
    sqlite3_finalize(st->ins);
    sqlite3_finalize(st->idem);
    sqlite3_finalize(st->del);
    sqlite3_finalize(st->probe_ins);
    sqlite3_finalize(st->probe_del);
    int rc = sqlite3_close(st->db);
    if (rc != SQLITE_OK)
        log_sqlite("sqlite close failed", rc);
    uv_cond_destroy(&st->cv);
    uv_mutex_destroy(&st->mu);
    free(st->path);
    free(st->dir);
    free(st);
}

static void sq_close(struct hk_store *s)
{
    struct sq_store *st = (struct sq_store *)s;
    uv_mutex_lock(&st->mu);
    assert(st->nloops == 0);
    st->stopping = true;
    uv_cond_signal(&st->cv);
    bool started = st->writer_started;
    uv_mutex_unlock(&st->mu);
    /* The writer commits whatever is still queued before it exits. The last
     * connection to close checkpoints the WAL into the database file. */
    if (started)
        uv_thread_join(&st->writer);
    store_free(st);
}

/* One write connection plus one read connection per attached loop; the
 * queue is the writer's. */
static void sq_stats(struct hk_store *s, struct hk_store_stats *out)
{
    struct sq_store *st = (struct sq_store *)s;
    uv_mutex_lock(&st->mu);
    out->conns_open = 1 + (int64_t)st->nloops;
    out->queue_depth = (int64_t)st->queued;
    out->queue_capacity = (int64_t)st->queue_max;
    uv_mutex_unlock(&st->mu);
}

static const struct hk_store_vt sqlite_vt = {
    .name = "sqlite",
    .loop_attach = sq_loop_attach,
    .loop_detach = sq_loop_detach,
    .submit = sq_submit,
    .list_next = sq_list_next,
    .list_close = sq_list_close,
    .health = sq_health,
    .close = sq_close,
    .stats = sq_stats,
};

/* Optional integer tunable from the environment, in [1, max]. */
static int env_tunable(const char *name, long dflt, long max, long *out,
                       char *errbuf, size_t errlen)
{
    const char *v = getenv(name);
    char *end;
    *out = dflt;
    if (v == NULL || *v == '\0')
        return 0;
    errno = 0;
    long n = strtol(v, &end, 10);
    if (errno != 0 || *end != '\0' || n < 1 || n > max) {
        snprintf(errbuf, errlen, "%s=%s: want an integer from 1 to %ld", name, v, max);
        return HK_EINVAL;
    }
    *out = n;
    return 0;
}

/* Bring the schema to SCHEMA_VERSION in one transaction. BEGIN IMMEDIATE
 * serializes two processes opening the same new file. */
static int migrate(sqlite3 *db, char *errbuf, size_t errlen)
{
    sqlite3_stmt *stmt = NULL;
    int version = 0;
    int rc = sqlite3_exec(db, "BEGIN IMMEDIATE;"
                          "CREATE TABLE IF NOT EXISTS schema_version(version INTEGER NOT NULL);",
                          NULL, NULL, NULL);
    if (rc != SQLITE_OK)
        goto out;
    rc = sqlite3_prepare_v2(db, "SELECT max(version) FROM schema_version", -1, &stmt, NULL);
    if (rc != SQLITE_OK)
        goto out;
    rc = sqlite3_step(stmt);
    if (rc != SQLITE_ROW)
        goto out;
    version = sqlite3_column_int(stmt, 0);   /* NULL (empty table) reads as 0 */
    sqlite3_finalize(stmt);
    stmt = NULL;
    if (version > SCHEMA_VERSION) {
        snprintf(errbuf, errlen, "database schema version %d is newer than this hookd's (%d)",
                 version, SCHEMA_VERSION);
        rc = SQLITE_ERROR;
        goto out;
    }
    for (int v = version; v < SCHEMA_VERSION; v++) {
        rc = sqlite3_exec(db, migrations[v], NULL, NULL, NULL);
        if (rc != SQLITE_OK)
            goto out;
    }
    if (version < SCHEMA_VERSION) {
        char sql[96];
        snprintf(sql, sizeof sql, "DELETE FROM schema_version;"
                 "INSERT INTO schema_version(version) VALUES(%d);", SCHEMA_VERSION);
        rc = sqlite3_exec(db, sql, NULL, NULL, NULL);
        if (rc != SQLITE_OK)
            goto out;
    }
    rc = sqlite3_exec(db, "COMMIT", NULL, NULL, NULL);
out:
    sqlite3_finalize(stmt);
    if (rc != SQLITE_OK) {
        if (errbuf[0] == '\0')
            snprintf(errbuf, errlen, "schema migration from version %d: %s",
                     version, sqlite3_errmsg(db));
        if (!sqlite3_get_autocommit(db))
            sqlite3_exec(db, "ROLLBACK", NULL, NULL, NULL);
        return HK_ESTORE;
    }
    return 0;
}

/* SQLite's process-wide memory settings, before its first use. By default
 * every connection carves 20 cache pages in one block and a 120 KB lookaside
 * arena, writing into all of it at open: some 60 page faults per connection,
 * which on a VM cost more than the rest of a cold start. Cache pages come
 * one at a time instead, and lookaside stays, smaller. Once SQLite is
 * initialised (a second store in the same process) the calls are refused
 * and the first settings stand. */
static void sqlite_memory_settings(void)
{
    static bool done;
    if (done)
        return;
    done = true;
    (void)sqlite3_config(SQLITE_CONFIG_PAGECACHE, NULL, 0, 0);
    (void)sqlite3_config(SQLITE_CONFIG_LOOKASIDE, HK_SQLITE_LOOKASIDE_SZ, HK_SQLITE_LOOKASIDE_N);
}

struct hk_store *hk_sqlite_open(const char *path, bool sync_full, char *errbuf, size_t errlen)
{
    struct sq_store *st = NULL;
    sqlite3_stmt *stmt = NULL;
    long queue_max, busy_ms;
    int rc;

    assert(errlen > 0);
    errbuf[0] = '\0';
    if (path == NULL || *path == '\0') {
        snprintf(errbuf, errlen, "sqlite: no database path");
        return NULL;
    }
    if (env_tunable("HOOKD_SQLITE_QUEUE_MAX", HK_SQLITE_QUEUE_MAX, 1L << 24, &queue_max,
                    errbuf, errlen) < 0 ||
        env_tunable("HOOKD_SQLITE_BUSY_MS", HK_SQLITE_BUSY_MS, 600000, &busy_ms,
                    errbuf, errlen) < 0)
        return NULL;

    sqlite_memory_settings();
    st = calloc(1, sizeof *st);
    if (st == NULL || (st->path = strdup(path)) == NULL || (st->dir = strdup(path)) == NULL)
        abort();
    char *slash = strrchr(st->dir, '/');
    if (slash == NULL)
        strcpy(st->dir, ".");
    else if (slash == st->dir)
        slash[1] = '\0';
    else
        *slash = '\0';
    st->base.vt = &sqlite_vt;
    st->queue_max = (size_t)queue_max;
    st->busy_ms = (int)busy_ms;
    atomic_init(&st->health, 0);
    atomic_init(&st->read_spell, 0);
    if (uv_mutex_init(&st->mu) < 0 || uv_cond_init(&st->cv) < 0)
        abort();

    rc = sqlite3_open_v2(path, &st->db,
                         SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX, NULL);
    /* Extended codes say which I/O failed in the logs; store_err() maps
     * them by their primary code. */
    if (rc == SQLITE_OK)
        rc = sqlite3_extended_result_codes(st->db, 1);
    if (rc == SQLITE_OK)
        rc = sqlite3_busy_timeout(st->db, st->busy_ms);
    if (rc != SQLITE_OK)
        goto out;

    /* Readers on other connections need WAL; it is not optional. */
    rc = sqlite3_prepare_v2(st->db, "PRAGMA journal_mode=WAL", -1, &stmt, NULL);
    if (rc == SQLITE_OK)
        rc = sqlite3_step(stmt);
    if (rc != SQLITE_ROW)
        goto out;
    if (strcmp((const char *)sqlite3_column_text(stmt, 0), "wal") != 0) {
        snprintf(errbuf, errlen, "sqlite %s: cannot use WAL (journal_mode is %s)",
                 path, (const char *)sqlite3_column_text(stmt, 0));
        rc = SQLITE_ERROR;
        goto out;
    }
    sqlite3_finalize(stmt);
    stmt = NULL;
    rc = sqlite3_exec(st->db, sync_full ? "PRAGMA synchronous=FULL" : "PRAGMA synchronous=NORMAL",
                      NULL, NULL, NULL);
    if (rc != SQLITE_OK)
        goto out;
    if (migrate(st->db, errbuf, errlen) < 0) {
        rc = SQLITE_ERROR;
        goto out;
    }

    rc = sqlite3_prepare_v3(st->db, "BEGIN IMMEDIATE", -1, SQLITE_PREPARE_PERSISTENT,
                            &st->begin, NULL);
    if (rc == SQLITE_OK)
        rc = sqlite3_prepare_v3(st->db, "COMMIT", -1, SQLITE_PREPARE_PERSISTENT,
                                &st->commit, NULL);
    if (rc == SQLITE_OK)
        rc = sqlite3_prepare_v3(st->db, "ROLLBACK", -1, SQLITE_PREPARE_PERSISTENT,
                                &st->rollback, NULL);
    if (rc == SQLITE_OK)
        rc = sqlite3_prepare_v3(st->db, SQL_INSERT, -1, SQLITE_PREPARE_PERSISTENT,
                                &st->ins, NULL);
    if (rc == SQLITE_OK)
        rc = sqlite3_prepare_v3(st->db, SQL_IDEM, -1, SQLITE_PREPARE_PERSISTENT,
                                &st->idem, NULL);
    if (rc == SQLITE_OK)
        rc = sqlite3_prepare_v3(st->db, SQL_DELETE, -1, SQLITE_PREPARE_PERSISTENT,
                                &st->del, NULL);
    if (rc == SQLITE_OK)
        rc = sqlite3_prepare_v3(st->db, SQL_PROBE_INS, -1, SQLITE_PREPARE_PERSISTENT,
                                &st->probe_ins, NULL);
    if (rc == SQLITE_OK)
        rc = sqlite3_prepare_v3(st->db, SQL_PROBE_DEL, -1, SQLITE_PREPARE_PERSISTENT,
                                &st->probe_del, NULL);
    /* From here on the write connection belongs to the writer thread,
     * started by writer_start_locked. */
out:
    sqlite3_finalize(stmt);
    if (rc != SQLITE_OK) {
        if (errbuf[0] == '\0')
            snprintf(errbuf, errlen, "sqlite %s: %s", path,
                     st->db != NULL ? sqlite3_errmsg(st->db) : sqlite3_errstr(rc));
        store_free(st);
        return NULL;
    }
    return &st->base;
}
