/* SPDX-License-Identifier: MIT
 * The SQLite store as the loops see it: the ops table, reads (webhooks,
 * and the token and session lookups every authenticated request makes) run
 * inside submit on each loop's own read-only connection, writes handed to the
 * writer thread (sqlite_writer.c) and answered on the loop through a
 * uv_async_t, and the error mapping both sides share. hk_sqlite_open is in
 * sqlite_open.c. */
#include "store/sqlite_int.h"

#include <assert.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/clock.h"
#include "core/log.h"
#include "store/cred_int.h"
#include "store/row_int.h"

#define HK_SQLITE_WARM_MS 10           /* a loop's read connection opens by then */

#define SQL_GET "SELECT " COLS " FROM webhooks WHERE id = ?1"

/* One list statement per variant, so each can use its index: the filter
 * combination (bit 0 = source, bit 1 = event_type, bit 2 = delivery_id),
 * the order (newest first, or oldest first for the live feed) and the
 * delivery state (any, or one of the four, written into the SQL so that
 * the partial indexes on pending and failed rows can serve it). ?3 and ?9
 * are the keyset bounds (id < ?3 AND id > ?9), ?4 the limit, ?5 the
 * delivery id. A delivery id with a source is one row at most; with or
 * without one, the unique webhooks_delivery on (delivery_id, source)
 * serves it (`delivery_id = ?5` implies the partial index's NOT NULL). The
 * time bounds ?6 and ?7 are always there (unset: INT64_MIN and INT64_MAX,
 * which no row reaches) and filter whatever the index walk finds: no
 * index has received_us, so they never change a plan (test_store_sqlite.c
 * checks the plans). */
static unsigned list_variant(const struct hk_list_query *q)
{
    unsigned filters = (q->source ? 1u : 0u) | (q->event_type ? 2u : 0u) | (q->delivery_id ? 4u : 0u);
    unsigned delivery = q->delivery <= 4 ? q->delivery : 0;
    return filters + 8u * (q->ascending ? 1u : 0u) + 16u * delivery;
}

/* The SQL of a variant into out (a few hundred bytes). */
static void list_sql(unsigned variant, char *out, size_t cap)
{
    static const char *const where[8] = {
        "",
        "source = ?1 AND ",
        "event_type = ?2 AND ",
        "source = ?1 AND event_type = ?2 AND ",
        "delivery_id = ?5 AND ",
        "source = ?1 AND delivery_id = ?5 AND ",
        /* The unary + keeps the planner off (event_type, id): a delivery id
         * matches a handful of rows, an event type may match millions. */
        "+event_type = ?2 AND delivery_id = ?5 AND ",
        "source = ?1 AND +event_type = ?2 AND delivery_id = ?5 AND ",
    };
    static const char *const state[5] = {"", "dstate = 0 AND ", "dstate = 1 AND ", "dstate = 2 AND ",
                                         "dstate = 3 AND "};
    bool asc = (variant / 8) % 2;
    snprintf(out, cap,
             "SELECT " COLS " FROM webhooks WHERE %s%sreceived_us > ?6 AND received_us < ?7 AND id < ?3 AND id > ?9"
             " ORDER BY id %s LIMIT ?4",
             where[variant % 8], state[variant / 16], asc ? "ASC" : "DESC");
}

/* Credentials. Every authenticated request runs SQL_TOKEN_GET or
 * SQL_SESSION_GET, which is why they are reads here and not the writer's:
 * one indexed lookup on the loop's own connection, no thread hop. BINARY
 * collation orders names by their bytes, as PostgreSQL's COLLATE "C". */
#define SQL_TOKEN_GET "SELECT " TOKEN_COLS " FROM api_tokens WHERE hash = ?1"
#define SQL_TOKEN_LIST "SELECT " TOKEN_COLS " FROM api_tokens ORDER BY name LIMIT ?1"
#define SQL_SESSION_GET "SELECT " SESSION_COLS " FROM sessions WHERE hash = ?1 AND expires_us > ?2"

/* Per-source figures: one walk of the covering index (source, id), groups
 * in name order (BINARY: byte order), and for each group one seek for its
 * newest row's time. Reading max(received_us) instead would fetch every row
 * of the table, payloads and bodies included. */
#define SQL_STATS \
    "SELECT source, count(*), (SELECT received_us FROM webhooks AS n WHERE n.source = w.source" \
    " ORDER BY n.id DESC LIMIT 1) FROM webhooks AS w GROUP BY source ORDER BY source LIMIT ?1"

/* ---- shared with the writer --------------------------------------------- */

/* A text column: NULL stays NULL. */
static void text_col(sqlite3_stmt *stmt, int i, const char **p, size_t *n)
{
    if (sqlite3_column_type(stmt, i) == SQLITE_NULL) {
        *p = NULL;
        *n = 0;
        return;
    }
    *p = (const char *)sqlite3_column_text(stmt, i);
    *n = (size_t)sqlite3_column_bytes(stmt, i);
}

void hk__sq_row(sqlite3_stmt *stmt, struct hk_webhook *row)
{
    static const uint8_t empty[1];
    row->id = sqlite3_column_int64(stmt, 0);
    row->source = (const char *)sqlite3_column_text(stmt, 1);
    row->source_len = (size_t)sqlite3_column_bytes(stmt, 1);
    row->event_type = (const char *)sqlite3_column_text(stmt, 2);
    row->event_type_len = (size_t)sqlite3_column_bytes(stmt, 2);
    text_col(stmt, 3, &row->payload, &row->payload_len);
    row->received_us = sqlite3_column_int64(stmt, 4);
    /* An ingress row is one with a body, an empty one included: a
     * zero-length blob is not NULL (run_insert_hook binds a zeroblob), but
     * sqlite3_column_blob returns NULL for it. */
    row->ingress = sqlite3_column_type(stmt, 5) != SQLITE_NULL;
    struct hk_delivery *d = &row->delivery;
    int64_t state = sqlite3_column_int64(stmt, 12);
    d->state = state >= HK_DLV_NONE && state <= HK_DLV_FAILED ? (uint8_t)state : HK_DLV_NONE;
    d->attempts = (int32_t)sqlite3_column_int64(stmt, 13);
    d->next_us = sqlite3_column_int64(stmt, 14);
    d->last_status = (int32_t)sqlite3_column_int64(stmt, 15);   /* NULL reads as 0: none */
    text_col(stmt, 16, &d->last_error, &d->last_error_len);
    d->updated_us = sqlite3_column_int64(stmt, 17);
    if (!row->ingress) {
        row->body = NULL;
        row->body_len = 0;
        row->body_sha256 = NULL;
        row->content_type = row->delivery_id = row->headers = row->verified = row->client_addr = NULL;
        row->content_type_len = row->delivery_id_len = row->headers_len = row->verified_len = 0;
        row->client_addr_len = 0;
        return;
    }
    const void *body = sqlite3_column_blob(stmt, 5);
    row->body_len = (size_t)sqlite3_column_bytes(stmt, 5);
    row->body = body ? body : empty;
    text_col(stmt, 6, &row->content_type, &row->content_type_len);
    text_col(stmt, 7, &row->delivery_id, &row->delivery_id_len);
    /* The CHECK constraint keeps it at 32 bytes; anything else reads as none. */
    const void *sha = sqlite3_column_blob(stmt, 8);
    row->body_sha256 = sha && sqlite3_column_bytes(stmt, 8) == 32 ? sha : NULL;
    text_col(stmt, 9, &row->headers, &row->headers_len);
    text_col(stmt, 10, &row->verified, &row->verified_len);
    text_col(stmt, 11, &row->client_addr, &row->client_addr_len);
}

/* A blob column of exactly 32 bytes (the CHECK constraints see to it);
 * anything else reads as zeros. */
static void hash_col(sqlite3_stmt *stmt, int i, uint8_t out[32])
{
    const void *p = sqlite3_column_blob(stmt, i);
    if (p && sqlite3_column_bytes(stmt, i) == 32)
        memcpy(out, p, 32);
    else
        memset(out, 0, 32);
}

/* A name column into a record's array, cut to HK_TOKEN_NAME_MAX bytes. */
static void name_col(sqlite3_stmt *stmt, int i, char out[HK_TOKEN_NAME_MAX + 1])
{
    const unsigned char *p = sqlite3_column_text(stmt, i);
    size_t n = p ? (size_t)sqlite3_column_bytes(stmt, i) : 0;
    if (n > HK_TOKEN_NAME_MAX)
        n = HK_TOKEN_NAME_MAX;
    if (n > 0)
        memcpy(out, p, n);
    out[n] = '\0';
}

void hk__sq_token_row(sqlite3_stmt *stmt, struct hk_token_rec *out)
{
    name_col(stmt, 0, out->name);
    hash_col(stmt, 1, out->hash);
    out->scopes = (unsigned)sqlite3_column_int64(stmt, 2);
    out->created_us = sqlite3_column_int64(stmt, 3);
    out->expires_us = sqlite3_column_int64(stmt, 4);   /* NULL reads as 0: never */
    out->revoked_us = sqlite3_column_int64(stmt, 5);   /* NULL reads as 0: live */
}

void hk__sq_session_row(sqlite3_stmt *stmt, struct hk_session_rec *out)
{
    hash_col(stmt, 0, out->hash);
    name_col(stmt, 1, out->subject);
    out->scopes = (unsigned)sqlite3_column_int64(stmt, 2);
    hash_col(stmt, 3, out->csrf_hash);
    out->expires_us = sqlite3_column_int64(stmt, 4);
}

/* An empty string stays an empty string. */
int hk__sq_bind_str(sqlite3_stmt *stmt, int i, const char *p, size_t n)
{
    if (!p)
        return sqlite3_bind_null(stmt, i);
    return sqlite3_bind_text64(stmt, i, p, n, SQLITE_STATIC, SQLITE_UTF8);
}

/* SQLite's result codes as the store's, for reads and writes alike. The
 * environmental failures that pass by themselves (a full disk, another
 * process holding the lock, a disk or file system that failed) get codes of
 * their own, answered 507/503 with Retry-After; anything else is unexpected. */
int hk__sq_store_err(int rc)
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

const char *hk__sq_err_reason(int code)
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
void hk__sq_log_spell(const char *msg, int code, int rc)
{
    hk_log(code == HK_ESTORE ? HK_LOG_ERROR : HK_LOG_WARN, msg,
           "\"reason\":\"%s\",\"rc\":%d,\"err\":\"%s\"", hk__sq_err_reason(code), rc,
           sqlite3_errstr(rc));
}

/* ---- write completions ------------------------------------------------- */

/* Answer the writes the writer handed back to this loop. */
static void on_async(uv_async_t *h)
{
    struct sq_loop *sl = h->data;
    uv_mutex_lock(&sl->mu);
    struct hk_store_op *op = sl->done_head;
    sl->done_head = sl->done_tail = NULL;
    uv_mutex_unlock(&sl->mu);

    while (op) {
        /* Read everything first: on_done may free or resubmit the op. */
        struct hk_store_op *next = op->next;
        struct sq_replay *rb = op->be.sq.replay;
        op->next = NULL;
        op->be.sq.loop = NULL;
        op->be.sq.replay = NULL;
        assert(sl->pending > 0);
        if (--sl->pending == 0)
            uv_unref((uv_handle_t *)&sl->async);
        if (op->kind == HK_OP_INSERT && op->status == 0 && op->on_row) {
            op->on_row(op, rb ? &rb->row : &op->row);
        } else if ((op->kind == HK_OP_CLAIM || op->kind == HK_OP_REDELIVER) && op->status == 0 && op->on_row) {
            for (struct sq_replay *c = rb; c; c = c->next)
                op->on_row(op, &c->row);
        }
        op->more = false;
        op->on_done(op);
        while (rb) {
            struct sq_replay *c = rb->next;
            free(rb);
            rb = c;
        }
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

/* ---- reads ---------------------------------------------------------------- */

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
    int code = hk__sq_store_err(rc);
    if (atomic_exchange(&st->read_spell, code) != code)
        hk__sq_log_spell("sqlite reads failing", code, rc);
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
    sqlite3_finalize(sl->tok_get);
    sl->tok_get = NULL;
    sqlite3_finalize(sl->tok_list);
    sl->tok_list = NULL;
    sqlite3_finalize(sl->ses_get);
    sl->ses_get = NULL;
    sqlite3_finalize(sl->stats);
    sl->stats = NULL;
    for (int i = 0; i < HK_SQ_LIST_VARIANTS; i++) {
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
    if (sl->db)
        return SQLITE_OK;
    int rc = sqlite3_open_v2(sl->st->path, &sl->db, SQLITE_OPEN_READONLY | SQLITE_OPEN_NOMUTEX, NULL);
    if (rc == SQLITE_OK)
        rc = sqlite3_extended_result_codes(sl->db, 1);
    if (rc == SQLITE_OK)
        rc = sqlite3_busy_timeout(sl->db, sl->st->busy_ms);
    if (rc == SQLITE_OK)
        rc = sqlite3_prepare_v3(sl->db, SQL_GET, -1, SQLITE_PREPARE_PERSISTENT, &sl->get, NULL);
    /* The eight newest-first lists every request may use; the rest on first use. */
    for (unsigned i = 0; i < 8 && rc == SQLITE_OK; i++) {
        char sql[512];
        list_sql(i, sql, sizeof sql);
        rc = sqlite3_prepare_v3(sl->db, sql, -1, SQLITE_PREPARE_PERSISTENT, &sl->list[i], NULL);
    }
    if (rc == SQLITE_OK)
        rc = sqlite3_prepare_v3(sl->db, SQL_TOKEN_GET, -1, SQLITE_PREPARE_PERSISTENT,
                                &sl->tok_get, NULL);
    if (rc == SQLITE_OK)
        rc = sqlite3_prepare_v3(sl->db, SQL_TOKEN_LIST, -1, SQLITE_PREPARE_PERSISTENT,
                                &sl->tok_list, NULL);
    if (rc == SQLITE_OK)
        rc = sqlite3_prepare_v3(sl->db, SQL_SESSION_GET, -1, SQLITE_PREPARE_PERSISTENT,
                                &sl->ses_get, NULL);
    if (rc == SQLITE_OK)
        rc = sqlite3_prepare_v3(sl->db, SQL_STATS, -1, SQLITE_PREPARE_PERSISTENT, &sl->stats, NULL);
    if (rc != SQLITE_OK) {
        (void)read_failed(sl->st, rc);
        loop_free_db(sl);
    }
    return rc;
}

/* A turn of the loop that queued writes ends by offering its CPU to the
 * writer (sched_yield), which runs SCHED_BATCH and does not take it on its
 * own when woken (sqlite_writer.c: writer_yields_to_loops): on a CPU both
 * share, the turn's writes go in one commit now, not at the scheduler's next
 * tick. With the writer on another CPU, or nothing else to run, the call
 * returns at once. */
static void on_turn(uv_check_t *c)
{
    struct sq_loop *sl = c->data;
    if (!sl->queued)
        return;
    sl->queued = false;
    sched_yield();
}

static void on_warm(uv_timer_t *t)
{
    struct sq_loop *sl = t->data;
    uv_mutex_lock(&sl->st->mu);
    if (hk__sq_writer_start_locked(sl->st) < 0)
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
        hk__sq_row(stmt, &row);
        read_ok(sl->st);
        op->status = 0;
        if (op->on_row)
            op->on_row(op, &row);
    } else if (rc == SQLITE_DONE) {
        read_ok(sl->st);
        op->status = HK_ENOTFOUND;
    } else {
        op->status = read_failed(sl->st, rc);
    }
    if (stmt)
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
    unsigned variant = list_variant(q);
    char sql[512];
    int rc = SQLITE_OK;
    /* The text only when a statement is to be prepared: not per request. */
    if (!sl->list[variant] || sqlite3_stmt_busy(sl->list[variant]))
        list_sql(variant, sql, sizeof sql);
    if (!sl->list[variant])
        rc = sqlite3_prepare_v3(sl->db, sql, -1, SQLITE_PREPARE_PERSISTENT, &sl->list[variant], NULL);
    sqlite3_stmt *cached = sl->list[variant];
    sqlite3_stmt *stmt = NULL;
    uint32_t n = 0;
    int64_t last = 0;
    bool more = false;

    if (rc == SQLITE_OK)
        rc = stmt_acquire(sl, cached, sql, &stmt);
    if (rc == SQLITE_OK && q->source)
        rc = hk__sq_bind_str(stmt, 1, q->source, q->source_len);
    if (rc == SQLITE_OK && q->event_type)
        rc = hk__sq_bind_str(stmt, 2, q->event_type, q->event_type_len);
    if (rc == SQLITE_OK && q->delivery_id)
        rc = hk__sq_bind_str(stmt, 5, q->delivery_id, q->delivery_id_len);
    if (rc == SQLITE_OK)
        rc = sqlite3_bind_int64(stmt, 3, q->before > 0 ? q->before : INT64_MAX);
    if (rc == SQLITE_OK)
        rc = sqlite3_bind_int64(stmt, 9, q->after > 0 ? q->after : INT64_MIN);
    if (rc == SQLITE_OK)
        rc = sqlite3_bind_int64(stmt, 6, q->received_after_us != 0 ? hk__list_time(q->received_after_us)
                                                                   : INT64_MIN);
    if (rc == SQLITE_OK)
        rc = sqlite3_bind_int64(stmt, 7, q->received_before_us != 0 ? hk__list_time(q->received_before_us)
                                                                    : INT64_MAX);
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
        hk__sq_row(stmt, &row);
        last = row.id;
        n++;
        if (op->on_row)
            op->on_row(op, &row);
    }
out:
    if (stmt)
        stmt_release(stmt, cached);
    if (rc != SQLITE_DONE) {
        op->status = read_failed(sl->st, rc);
        more = false;
    } else {
        read_ok(sl->st);
    }
    if (more) {
        if (q->ascending)
            op->list.after = last;
        else
            op->list.before = last;
        sl->streams++;
    }
    op->more = more;
    op->on_done(op);
}

/* TOKEN_GET and SESSION_GET: one row by hash into the caller's record. */
static void cred_get(struct sq_loop *sl, struct hk_store_op *op)
{
    bool token = op->kind == HK_OP_TOKEN_GET;
    sqlite3_stmt *cached = token ? sl->tok_get : sl->ses_get;
    sqlite3_stmt *stmt = NULL;
    int rc = stmt_acquire(sl, cached, token ? SQL_TOKEN_GET : SQL_SESSION_GET, &stmt);
    if (rc == SQLITE_OK)
        rc = sqlite3_bind_blob(stmt, 1, token ? op->token->hash : op->session->hash, 32,
                               SQLITE_STATIC);
    if (rc == SQLITE_OK && !token)
        rc = sqlite3_bind_int64(stmt, 2, op->now_us);
    if (rc == SQLITE_OK)
        rc = sqlite3_step(stmt);
    if (rc == SQLITE_ROW) {
        if (token)
            hk__sq_token_row(stmt, op->token);
        else
            hk__sq_session_row(stmt, op->session);
        read_ok(sl->st);
        op->status = 0;
    } else if (rc == SQLITE_DONE) {
        read_ok(sl->st);
        op->status = HK_ENOTFOUND;
    } else {
        op->status = read_failed(sl->st, rc);
    }
    if (stmt)
        stmt_release(stmt, cached);
    op->more = false;
    op->on_done(op);
}

/* TOKEN_LIST: the tokens in name order, in one go (a handful, not a log). */
static void token_list(struct sq_loop *sl, struct hk_store_op *op)
{
    sqlite3_stmt *stmt = NULL;
    int rc = stmt_acquire(sl, sl->tok_list, SQL_TOKEN_LIST, &stmt);
    if (rc == SQLITE_OK)
        rc = sqlite3_bind_int64(stmt, 1, op->list.limit == 0 ? -1 : (int64_t)op->list.limit);
    op->status = 0;
    if (rc == SQLITE_OK) {
        while ((rc = sqlite3_step(stmt)) == SQLITE_ROW) {
            struct hk_token_rec t;
            hk__sq_token_row(stmt, &t);
            if (op->on_token)
                op->on_token(op, &t);
        }
    }
    if (stmt)
        stmt_release(stmt, sl->tok_list);
    if (rc == SQLITE_DONE)
        read_ok(sl->st);
    else
        op->status = read_failed(sl->st, rc);
    op->more = false;
    op->on_done(op);
}

/* SOURCE_STATS: every source's figures in one go (bounded by
 * HK_STORE_STATS_MAX), like TOKEN_LIST. */
static void source_stats(struct sq_loop *sl, struct hk_store_op *op)
{
    sqlite3_stmt *stmt = NULL;
    int rc = stmt_acquire(sl, sl->stats, SQL_STATS, &stmt);
    if (rc == SQLITE_OK)
        rc = sqlite3_bind_int64(stmt, 1, HK_STORE_STATS_MAX);
    op->status = 0;
    if (rc == SQLITE_OK) {
        while ((rc = sqlite3_step(stmt)) == SQLITE_ROW) {
            struct hk_source_stats st;
            st.source = (const char *)sqlite3_column_text(stmt, 0);
            st.source_len = (size_t)sqlite3_column_bytes(stmt, 0);
            st.count = sqlite3_column_int64(stmt, 1);
            st.last_received_us = sqlite3_column_int64(stmt, 2);
            if (!st.source)
                st.source = "";   /* NOT NULL column: only an out-of-memory gets here */
            if (op->on_stats)
                op->on_stats(op, &st);
        }
    }
    if (stmt)
        stmt_release(stmt, sl->stats);
    if (rc == SQLITE_DONE)
        read_ok(sl->st);
    else
        op->status = read_failed(sl->st, rc);
    op->more = false;
    op->on_done(op);
}

/* ---- the ops table -------------------------------------------------------- */

static int sq_submit(struct hk_store_loop *base, struct hk_store_op *op)
{
    struct sq_loop *sl = (struct sq_loop *)base;
    struct sq_store *st = sl->st;

    op->status = 0;
    op->more = false;
    op->replayed = false;
    if (hk__cred_kind(op->kind) && hk__cred_begin(op, hk_wall_us()) < 0) {
        /* As PostgreSQL answers it: the caller's mistake, whatever the
         * store's state. */
        op->status = HK_EINVAL;
        op->on_done(op);
        return 0;
    }
    switch (op->kind) {
    case HK_OP_GET:
    case HK_OP_LIST:
    case HK_OP_TOKEN_GET:
    case HK_OP_TOKEN_LIST:
    case HK_OP_SESSION_GET:
    case HK_OP_SOURCE_STATS:
        /* A stream's later batches (sq_list_next) find the reader open. */
        if (reader_open(sl) != SQLITE_OK) {
            op->status = HK_EUNAVAIL;
            op->on_done(op);
        } else if (op->kind == HK_OP_GET) {
            do_get(sl, op);
        } else if (op->kind == HK_OP_LIST) {
            list_batch(sl, op);
        } else if (op->kind == HK_OP_TOKEN_LIST) {
            token_list(sl, op);
        } else if (op->kind == HK_OP_SOURCE_STATS) {
            source_stats(sl, op);
        } else {
            cred_get(sl, op);
        }
        return 0;
    case HK_OP_INSERT:
        if (hk__row_begin(op) < 0) {
            op->status = HK_EINVAL;
            op->on_done(op);
            return 0;
        }
        /* received_us is when the request was accepted, not when the writer
         * got to it: queueing under load does not shift timestamps. */
        op->row.received_us = hk_wall_us();
        break;
    case HK_OP_CLAIM:
    case HK_OP_SETTLE:
    case HK_OP_PURGE:
        if ((op->kind != HK_OP_PURGE && op->fwd.owner <= 0) ||
            (op->kind == HK_OP_CLAIM && (op->list.limit == 0 || op->list.limit > 1000)) ||
            (op->kind == HK_OP_SETTLE && !hk__settle_ok(op)) ||
            (op->kind == HK_OP_PURGE && (!op->purge || op->purge->limit == 0))) {
            op->status = HK_EINVAL;
            op->on_done(op);
            return 0;
        }
        op->now_us = hk_wall_us();
        break;
    case HK_OP_REDELIVER:
        op->now_us = hk_wall_us();
        break;
    case HK_OP_DELETE:
    case HK_OP_TOKEN_PUT:
    case HK_OP_TOKEN_REVOKE:
    case HK_OP_SESSION_PUT:
    case HK_OP_SESSION_DEL:
        break;
    default:
        return HK_EINVAL;
    }

    int rc = hk__sq_writer_push(st, sl, op);
    if (rc < 0)
        return rc;
    sl->queued = true;

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
    if (!sl)
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
    sl->turn.data = sl;
    uv_check_init(loop, &sl->turn);
    uv_check_start(&sl->turn, on_turn);
    uv_unref((uv_handle_t *)&sl->turn);

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
    assert(!sl->done_head);
    uv_mutex_unlock(&sl->mu);

    loop_free_db(sl);
    uv_mutex_lock(&st->mu);
    assert(st->nloops > 0);
    st->nloops--;
    uv_mutex_unlock(&st->mu);
    sl->closing = 3;
    uv_close((uv_handle_t *)&sl->turn, on_handle_closed);
    uv_close((uv_handle_t *)&sl->warm, on_handle_closed);
    uv_close((uv_handle_t *)&sl->async, on_handle_closed);
}

static void sq_close(struct hk_store *s)
{
    struct sq_store *st = (struct sq_store *)s;
    hk__sq_writer_stop(st);
    /* Everything goes into the database file; the WAL stays, ready for
     * the next start's first write (sqlite_writer.c). */
    hk__sq_writer_leave_wal(st);
    hk__sq_store_free(st);
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

const struct hk_store_vt hk__sq_vt = {
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

