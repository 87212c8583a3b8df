/* SPDX-License-Identifier: MIT
 * The SQLite store's writer thread: it owns the only read-write connection,
 * commits every queued write of a wakeup (webhook INSERT/DELETE, token and
 * session writes) in one transaction (group commit), hands each op back to
 * its loop, and keeps the failure spell of the writes, probing while it
 * lasts and the queue is empty. */
#include "store/sqlite_int.h"

#include <assert.h>
#include <inttypes.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/statvfs.h>

#include "core/clock.h"
#include "core/log.h"

#define HK_SQLITE_BATCH_MAX 256        /* ops per transaction */
#define HK_SQLITE_PROBE_MS 1000        /* while writes fail, an idle writer tries one this often */
#define HK_SQLITE_FULL_ROOM (1u << 20) /* free bytes that end a full-disk spell */

#define SQL_INSERT \
    "INSERT INTO webhooks(source, event_type, payload, received_us, idem_key, dstate, dnext_us, dlease_owner," \
    " dlease_us) VALUES(?1, ?2, ?3, ?4, ?5, ?11, ?12, ?13, ?14)"
#define SQL_IDEM "SELECT " COLS " FROM webhooks WHERE source = ?1 AND idem_key = ?2"
/* An ingress row. The payload stays NULL: the body is the payload. */
#define SQL_INSERT_HOOK \
    "INSERT INTO webhooks(source, event_type, received_us, body, content_type, delivery_id," \
    " body_sha256, headers, verified, client_addr, dstate, dnext_us, dlease_owner, dlease_us)" \
    " VALUES(?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14)"
#define SQL_DELIVERY "SELECT " COLS " FROM webhooks WHERE source = ?1 AND delivery_id = ?2"
#define SQL_DELETE "DELETE FROM webhooks WHERE id = ?1"
/* Credentials. ON CONFLICT DO NOTHING turns a name or hash stored already
 * into "no change" (HK_ECONFLICT) instead of a constraint error. */
#define SQL_TOKEN_INS \
    "INSERT INTO api_tokens(name, hash, scopes, created_us, expires_us)" \
    " VALUES(?1, ?2, ?3, ?4, ?5) ON CONFLICT DO NOTHING"
#define SQL_TOKEN_REVOKE \
    "UPDATE api_tokens SET revoked_us = coalesce(revoked_us, ?2) WHERE name = ?1" \
    " RETURNING " TOKEN_COLS
/* A revoked token's sessions end with it (sessions hold its name). */
#define SQL_TOKEN_REVOKE_SESSIONS "DELETE FROM sessions WHERE subject = ?1"
/* The oldest expired sessions, a bounded few (sessions_expires index). */
#define SQL_SESSION_SWEEP \
    "DELETE FROM sessions WHERE hash IN (SELECT hash FROM sessions" \
    " WHERE expires_us <= ?1 ORDER BY expires_us LIMIT ?2)"
#define SQL_SESSION_INS \
    "INSERT INTO sessions(hash, subject, scopes, csrf_hash, expires_us)" \
    " VALUES(?1, ?2, ?3, ?4, ?5) ON CONFLICT DO NOTHING"
#define SQL_SESSION_DEL "DELETE FROM sessions WHERE hash = ?1 RETURNING expires_us"
/* Forwarding (docs/forwarding.md). A claim reads the due rows that no
 * live lease holds (webhooks_due: pending rows only, by due time), then
 * leases them one by one, all in the writer's transaction: no other
 * process can claim in between. With FIFO sources (?4, a JSON array of
 * names), a row of theirs qualifies only as its source's oldest pending
 * row (webhooks_pending_source). */
#define SQL_CLAIM_WHERE \
    " FROM webhooks WHERE dstate = 1 AND dnext_us <= ?1 AND (dlease_us IS NULL OR dlease_us < ?1)"
#define SQL_CLAIM "SELECT " COLS SQL_CLAIM_WHERE " ORDER BY dnext_us, id LIMIT ?2"
#define SQL_CLAIM_FIFO \
    "SELECT " COLS SQL_CLAIM_WHERE " AND (source NOT IN (SELECT value FROM json_each(?4))" \
    " OR id = (SELECT min(o.id) FROM webhooks AS o WHERE o.source = webhooks.source AND o.dstate = 1))" \
    " ORDER BY dnext_us, id LIMIT ?2"
#define SQL_LEASE "UPDATE webhooks SET dlease_owner = ?2, dlease_us = ?3 WHERE id = ?1"
/* A settle by the lease's owner, or of a row whose lease ended or that
 * has none; ?7 is now. */
#define SQL_SETTLE \
    "UPDATE webhooks SET dstate = ?2, dattempts = ?3, dnext_us = ?4, dlast_status = ?5, dlast_error = ?6," \
    " dupdated_us = ?7, dlease_owner = NULL, dlease_us = NULL WHERE id = ?1" \
    " AND (dlease_owner IS NULL OR dlease_owner = ?8 OR dlease_us < ?7)"
#define SQL_EXISTS "SELECT 1 FROM webhooks WHERE id = ?1"
#define SQL_REDELIVER \
    "UPDATE webhooks SET dstate = 1, dattempts = 0, dnext_us = ?2, dlease_owner = NULL, dlease_us = NULL" \
    " WHERE id = ?1 RETURNING " COLS
/* Retention: one batch, oldest first. ?1 received before (INT64_MIN: no
 * age bound), ?2 the lowest id kept by a row cap (INT64_MIN: none), ?3
 * 1 to take any row (a size cap's step), ?4 1 to keep pending rows, ?5
 * the batch, ?6 the source or ?7 the sources left alone (a JSON array). */
#define SQL_PURGE_SELECT(scope) \
    "DELETE FROM webhooks WHERE id IN (SELECT id FROM webhooks WHERE " scope \
    " (?4 = 0 OR dstate <> 1) AND (received_us < ?1 OR id < ?2 OR ?3 = 1) ORDER BY id LIMIT ?5)"
#define SQL_PURGE_ALL SQL_PURGE_SELECT("source NOT IN (SELECT value FROM json_each(?7)) AND")
#define SQL_PURGE_SRC SQL_PURGE_SELECT("source = ?6 AND")
/* The id of the n-th newest row (?1 = n - 1), of a source or of all but
 * the sources left alone: a row cap keeps it and everything newer. */
#define SQL_KEEP_ALL \
    "SELECT id FROM webhooks WHERE source NOT IN (SELECT value FROM json_each(?2)) ORDER BY id DESC" \
    " LIMIT 1 OFFSET ?1"
#define SQL_KEEP_SRC "SELECT id FROM webhooks WHERE source = ?2 ORDER BY id DESC LIMIT 1 OFFSET ?1"
#define SQL_VACUUM "PRAGMA incremental_vacuum"
/* The live pages' bytes: what the file holds, less its free list. */
#define SQL_PAGES \
    "SELECT (p.page_count - f.freelist_count) * s.page_size FROM pragma_page_count() AS p," \
    " pragma_freelist_count() AS f, pragma_page_size() AS s"

/* The probe's write: a row no reader counts (versions start at 1, readers
 * take the maximum), inserted and deleted again in one transaction. */
#define SQL_PROBE_INS "INSERT INTO schema_version(version) VALUES(0)"
#define SQL_PROBE_DEL "DELETE FROM schema_version WHERE version = 0"

/* Run a statement that returns no rows and leave it ready for the next run. */
static int step_once(sqlite3_stmt *stmt)
{
    int rc = sqlite3_step(stmt);
    sqlite3_reset(stmt);
    return rc;
}

/* ---- one batch ---------------------------------------------------------- */

/* Errors that belong to one op and leave the transaction usable. Anything
 * else (I/O, full disk, corruption, rollback by SQLite) fails the batch. */
static bool op_error(sqlite3 *db, int rc)
{
    int primary = rc & 0xff;
    return (primary == SQLITE_CONSTRAINT || primary == SQLITE_TOOBIG ||
            primary == SQLITE_MISMATCH) && !sqlite3_get_autocommit(db);
}

/* Copy n bytes of src to *p and move *p past them. NULL stays NULL; an
 * empty value gets a valid pointer. */
static const void *copy_field(char **p, const void *src, size_t n)
{
    if (!src)
        return NULL;
    char *dst = *p;
    if (n > 0)
        memcpy(dst, src, n);
    *p += n;
    return dst;
}

/* The replay record of `orig`: one allocation holding the row and a copy
 * of everything it points to. */
struct sq_replay *hk__sq_replay_new(const struct hk_webhook *orig)
{
    size_t sha_len = orig->body_sha256 ? 32 : 0;
    size_t n = orig->source_len + orig->event_type_len + orig->payload_len + orig->body_len + sha_len +
               orig->content_type_len + orig->delivery_id_len + orig->headers_len + orig->verified_len +
               orig->client_addr_len + orig->delivery.last_error_len;
    struct sq_replay *rb = malloc(sizeof *rb + n);
    if (!rb)
        abort();   /* process-wide OOM policy (see core/buf.h) */
    char *p = rb->bytes;
    rb->row = *orig;
    rb->row.source = copy_field(&p, orig->source, orig->source_len);
    rb->row.event_type = copy_field(&p, orig->event_type, orig->event_type_len);
    rb->row.payload = copy_field(&p, orig->payload, orig->payload_len);
    rb->row.body = copy_field(&p, orig->body, orig->body_len);
    rb->row.body_sha256 = copy_field(&p, orig->body_sha256, sha_len);
    rb->row.content_type = copy_field(&p, orig->content_type, orig->content_type_len);
    rb->row.delivery_id = copy_field(&p, orig->delivery_id, orig->delivery_id_len);
    rb->row.headers = copy_field(&p, orig->headers, orig->headers_len);
    rb->row.verified = copy_field(&p, orig->verified, orig->verified_len);
    rb->row.client_addr = copy_field(&p, orig->client_addr, orig->client_addr_len);
    rb->row.delivery.last_error = copy_field(&p, orig->delivery.last_error, orig->delivery.last_error_len);
    rb->next = NULL;
    assert(p == rb->bytes + n);
    return rb;
}

/* Look up the stored row with this source and key, with `stmt` (SQL_IDEM
 * or SQL_DELIVERY). Returns SQLITE_ROW after turning `op` into a replay of
 * it, SQLITE_DONE when there is none, or an error. */
static int find_orig(sqlite3_stmt *stmt, struct hk_store_op *op, const char *key, size_t key_len)
{
    int rc = hk__sq_bind_str(stmt, 1, op->row.source, op->row.source_len);
    if (rc == SQLITE_OK)
        rc = hk__sq_bind_str(stmt, 2, key, key_len);
    if (rc != SQLITE_OK)
        goto out;
    rc = sqlite3_step(stmt);
    if (rc != SQLITE_ROW)
        goto out;
    struct hk_webhook orig;
    hk__sq_row(stmt, &orig);
    op->be.sq.replay = hk__sq_replay_new(&orig);
    op->replayed = true;
    op->status = 0;
out:
    sqlite3_reset(stmt);
    sqlite3_clear_bindings(stmt);
    return rc;
}

/* An INSERT's delivery columns (?11..?14): pending from its receipt,
 * leased to the inserting process when it sends the row itself, or none.
 * hk__row_begin has normalized row.delivery; on_row reads it back. */
static int bind_delivery(sqlite3_stmt *stmt, struct hk_store_op *op)
{
    struct hk_delivery *d = &op->row.delivery;
    bool pending = d->state == HK_DLV_PENDING;
    if (pending)
        d->next_us = op->row.received_us;
    int rc = sqlite3_bind_int(stmt, 11, pending ? 1 : 0);
    if (rc == SQLITE_OK)
        rc = pending ? sqlite3_bind_int64(stmt, 12, d->next_us) : sqlite3_bind_null(stmt, 12);
    if (rc == SQLITE_OK)
        rc = op->fwd.owner ? sqlite3_bind_int64(stmt, 13, op->fwd.owner) : sqlite3_bind_null(stmt, 13);
    if (rc == SQLITE_OK)
        rc = op->fwd.owner ? sqlite3_bind_int64(stmt, 14, op->fwd.lease_us) : sqlite3_bind_null(stmt, 14);
    return rc;
}

/* An ingress row (store.h). The lookup and the insert run in the batch's
 * transaction, which holds the database's write lock from its BEGIN
 * IMMEDIATE: no other writer, in this process or another, can store the
 * same delivery in between, so a duplicate always finds the original here
 * (a second one in the same batch finds the first) and the unique index
 * never has to refuse one. Same contract as run_insert. */
static int run_insert_hook(struct sq_store *st, struct hk_store_op *op)
{
    sqlite3_stmt *stmt = st->ins_hook;
    const struct hk_webhook *r = &op->row;
    int rc = r->delivery_id ? find_orig(st->delivery, op, r->delivery_id, r->delivery_id_len) : SQLITE_DONE;

    if (rc == SQLITE_ROW)
        return SQLITE_OK;
    if (rc == SQLITE_DONE)
        rc = hk__sq_bind_str(stmt, 1, r->source, r->source_len);
    if (rc == SQLITE_OK)
        rc = hk__sq_bind_str(stmt, 2, r->event_type, r->event_type_len);
    if (rc == SQLITE_OK)
        rc = sqlite3_bind_int64(stmt, 3, r->received_us);
    /* Never NULL, even when empty: a NULL body marks an envelope row, and
     * sqlite3_bind_blob binds NULL for a NULL pointer. */
    if (rc == SQLITE_OK)
        rc = r->body_len > 0 ? sqlite3_bind_blob64(stmt, 4, r->body, r->body_len, SQLITE_STATIC)
                             : sqlite3_bind_zeroblob(stmt, 4, 0);
    if (rc == SQLITE_OK)
        rc = hk__sq_bind_str(stmt, 5, r->content_type, r->content_type_len);
    if (rc == SQLITE_OK)
        rc = hk__sq_bind_str(stmt, 6, r->delivery_id, r->delivery_id_len);
    if (rc == SQLITE_OK)
        rc = sqlite3_bind_blob(stmt, 7, r->body_sha256, 32, SQLITE_STATIC);
    if (rc == SQLITE_OK)
        rc = hk__sq_bind_str(stmt, 8, r->headers, r->headers_len);
    if (rc == SQLITE_OK)
        rc = hk__sq_bind_str(stmt, 9, r->verified, r->verified_len);
    if (rc == SQLITE_OK)
        rc = hk__sq_bind_str(stmt, 10, r->client_addr, r->client_addr_len);
    if (rc == SQLITE_OK)
        rc = bind_delivery(stmt, op);
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

/* Returns SQLITE_OK when the op has its status (success or its own failure),
 * or the SQLite error that must fail the whole batch. */
static int run_insert(struct sq_store *st, struct hk_store_op *op)
{
    sqlite3_stmt *stmt = st->ins;
    const struct hk_webhook *r = &op->row;
    if (r->ingress)
        return run_insert_hook(st, op);
    int rc = op->idem_key ? find_orig(st->idem, op, op->idem_key, strlen(op->idem_key)) : SQLITE_DONE;

    if (rc == SQLITE_ROW)
        return SQLITE_OK;   /* a replay: find_orig has filled in the op */
    if (rc == SQLITE_DONE)
        rc = hk__sq_bind_str(stmt, 1, r->source, r->source_len);
    if (rc == SQLITE_OK)
        rc = hk__sq_bind_str(stmt, 2, r->event_type, r->event_type_len);
    if (rc == SQLITE_OK)
        rc = hk__sq_bind_str(stmt, 3, r->payload, r->payload_len);
    if (rc == SQLITE_OK)
        rc = sqlite3_bind_int64(stmt, 4, r->received_us);
    if (rc == SQLITE_OK)
        rc = sqlite3_bind_text(stmt, 5, op->idem_key, -1, SQLITE_STATIC);
    if (rc == SQLITE_OK)
        rc = bind_delivery(stmt, op);
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

/* The end of a credential write: `found` says whether it changed (or, for
 * RETURNING statements, returned) a row. Same contract as run_insert. */
static int cred_done(struct sq_store *st, struct hk_store_op *op, sqlite3_stmt *stmt, int rc,
                     bool found, int if_not_found)
{
    if (rc == SQLITE_DONE) {
        op->status = found ? 0 : if_not_found;
        rc = SQLITE_OK;
    } else if (op_error(st->db, rc)) {
        op->status = HK_EINVAL;
        rc = SQLITE_OK;
    }
    sqlite3_reset(stmt);
    sqlite3_clear_bindings(stmt);
    return rc;
}

static int run_token_put(struct sq_store *st, struct hk_store_op *op)
{
    sqlite3_stmt *stmt = st->tok_ins;
    const struct hk_token_rec *t = op->token;
    int rc = sqlite3_bind_text(stmt, 1, t->name, -1, SQLITE_STATIC);
    if (rc == SQLITE_OK)
        rc = sqlite3_bind_blob(stmt, 2, t->hash, 32, SQLITE_STATIC);
    if (rc == SQLITE_OK)
        rc = sqlite3_bind_int64(stmt, 3, t->scopes);
    if (rc == SQLITE_OK)
        rc = sqlite3_bind_int64(stmt, 4, t->created_us);
    if (rc == SQLITE_OK && t->expires_us != 0)
        rc = sqlite3_bind_int64(stmt, 5, t->expires_us);   /* unbound: NULL, never */
    if (rc == SQLITE_OK)
        rc = sqlite3_step(stmt);
    return cred_done(st, op, stmt, rc, rc == SQLITE_DONE && sqlite3_changes(st->db) > 0,
                     HK_ECONFLICT);
}

/* coalesce keeps the first revocation's time: revoking twice is no error.
 * Each revoke, a repeated one too, deletes the token's sessions in the
 * batch's transaction: none outlives the commit that revoked it. */
static int run_token_revoke(struct sq_store *st, struct hk_store_op *op)
{
    sqlite3_stmt *stmt = st->tok_revoke;
    bool found = false;
    int rc = sqlite3_bind_text(stmt, 1, op->name, -1, SQLITE_STATIC);
    if (rc == SQLITE_OK)
        rc = sqlite3_bind_int64(stmt, 2, op->now_us);
    if (rc == SQLITE_OK)
        rc = sqlite3_step(stmt);
    if (rc == SQLITE_ROW) {
        found = true;
        if (op->token)
            hk__sq_token_row(stmt, op->token);
        rc = sqlite3_step(stmt);   /* names are unique: SQLITE_DONE */
    }
    if (rc == SQLITE_DONE && found) {
        int drc = sqlite3_bind_text(st->tok_revoke_ses, 1, op->name, -1, SQLITE_STATIC);
        if (drc == SQLITE_OK)
            drc = step_once(st->tok_revoke_ses);
        sqlite3_clear_bindings(st->tok_revoke_ses);
        if (drc != SQLITE_DONE) {
            /* A DELETE breaks no constraint: the batch's failure. */
            sqlite3_reset(stmt);
            sqlite3_clear_bindings(stmt);
            return drc;
        }
    }
    return cred_done(st, op, stmt, rc, found, HK_ENOTFOUND);
}

/* Expired sessions go a few at a time, with each new one: the table holds
 * no more than it did at its busiest, and no sweep holds the write lock
 * for long. */
static int run_session_put(struct sq_store *st, struct hk_store_op *op)
{
    sqlite3_stmt *stmt = st->ses_ins;
    const struct hk_session_rec *ses = op->session;
    int rc = sqlite3_bind_int64(st->ses_sweep, 1, op->now_us);
    if (rc == SQLITE_OK)
        rc = sqlite3_bind_int64(st->ses_sweep, 2, HK_STORE_SWEEP_MAX);
    if (rc == SQLITE_OK)
        rc = step_once(st->ses_sweep);
    if (rc != SQLITE_DONE)
        return rc;   /* a DELETE breaks no constraint: the batch's failure */
    rc = sqlite3_bind_blob(stmt, 1, ses->hash, 32, SQLITE_STATIC);
    if (rc == SQLITE_OK)
        rc = sqlite3_bind_text(stmt, 2, ses->subject, -1, SQLITE_STATIC);
    if (rc == SQLITE_OK)
        rc = sqlite3_bind_int64(stmt, 3, ses->scopes);
    if (rc == SQLITE_OK)
        rc = sqlite3_bind_blob(stmt, 4, ses->csrf_hash, 32, SQLITE_STATIC);
    if (rc == SQLITE_OK)
        rc = sqlite3_bind_int64(stmt, 5, ses->expires_us);
    if (rc == SQLITE_OK)
        rc = sqlite3_step(stmt);
    return cred_done(st, op, stmt, rc, rc == SQLITE_DONE && sqlite3_changes(st->db) > 0,
                     HK_ECONFLICT);
}

/* An expired session is deleted all the same, but reported as not found,
 * as SESSION_GET would have: the answer does not depend on the sweep. */
static int run_session_del(struct sq_store *st, struct hk_store_op *op)
{
    sqlite3_stmt *stmt = st->ses_del;
    bool found = false;
    int rc = sqlite3_bind_blob(stmt, 1, op->session->hash, 32, SQLITE_STATIC);
    if (rc == SQLITE_OK)
        rc = sqlite3_step(stmt);
    if (rc == SQLITE_ROW) {
        found = sqlite3_column_int64(stmt, 0) > op->now_us;
        rc = sqlite3_step(stmt);   /* the primary key: SQLITE_DONE */
    }
    return cred_done(st, op, stmt, rc, found, HK_ENOTFOUND);
}

/* ---- forwarding and retention --------------------------------------------- */

/* A JSON array of NUL-terminated names, in *out: `stack` when it fits, else
 * malloc'd (free it when *out != stack). */
static void names_json(const char *const *v, size_t n, char *stack, size_t cap, char **out)
{
    size_t need = 3;
    for (size_t i = 0; i < n; i++)
        need += strlen(v[i]) * 6 + 3;
    char *b = need <= cap ? stack : malloc(need);
    if (!b)
        abort();   /* process-wide OOM policy (core/buf.h) */
    size_t k = 0;
    b[k++] = '[';
    for (size_t i = 0; i < n; i++) {
        const char *p = v[i];
        if (i)
            b[k++] = ',';
        b[k++] = '"';
        for (; *p; p++) {
            unsigned char c = (unsigned char)*p;
            if (c == '"' || c == '\\') {
                b[k++] = '\\';
                b[k++] = (char)c;
            } else if (c < 0x20) {
                k += (size_t)snprintf(b + k, need - k, "\\u%04x", c);
            } else {
                b[k++] = (char)c;
            }
        }
        b[k++] = '"';
    }
    b[k++] = ']';
    b[k] = '\0';
    *out = b;
}

/* Free a list of copied rows. */
static void rows_free(struct sq_replay *rb)
{
    while (rb) {
        struct sq_replay *next = rb->next;
        free(rb);
        rb = next;
    }
}

/* CLAIM (store.h): the rows copied into op->be.sq.replay, in order, for
 * on_row on the loop after the commit. */
static int run_claim(struct sq_store *st, struct hk_store_op *op)
{
    char stack[1024], *fifo = stack;
    sqlite3_stmt *stmt = op->fwd.nfifo ? st->claim_fifo : st->claim;
    if (op->fwd.nfifo)
        names_json(op->fwd.fifo, op->fwd.nfifo, stack, sizeof stack, &fifo);
    int rc = sqlite3_bind_int64(stmt, 1, op->now_us);
    if (rc == SQLITE_OK)
        rc = sqlite3_bind_int64(stmt, 2, op->list.limit);
    if (rc == SQLITE_OK && op->fwd.nfifo)
        rc = sqlite3_bind_text(stmt, 4, fifo, -1, SQLITE_TRANSIENT);
    if (fifo != stack)
        free(fifo);
    struct sq_replay *head = NULL, **tail = &head;
    while (rc == SQLITE_OK && (rc = sqlite3_step(stmt)) == SQLITE_ROW) {
        struct hk_webhook row;
        hk__sq_row(stmt, &row);
        *tail = hk__sq_replay_new(&row);
        tail = &(*tail)->next;
        rc = SQLITE_OK;
    }
    sqlite3_reset(stmt);
    sqlite3_clear_bindings(stmt);
    if (rc == SQLITE_DONE)
        rc = SQLITE_OK;
    for (struct sq_replay *c = head; c && rc == SQLITE_OK; c = c->next) {
        rc = sqlite3_bind_int64(st->lease, 1, c->row.id);
        if (rc == SQLITE_OK)
            rc = sqlite3_bind_int64(st->lease, 2, op->fwd.owner);
        if (rc == SQLITE_OK)
            rc = sqlite3_bind_int64(st->lease, 3, op->fwd.lease_us);
        if (rc == SQLITE_OK) {
            rc = sqlite3_step(st->lease);
            rc = rc == SQLITE_DONE ? SQLITE_OK : rc;
        }
        sqlite3_reset(st->lease);
    }
    if (rc != SQLITE_OK) {
        rows_free(head);
        return rc;
    }
    op->be.sq.replay = head;
    op->status = 0;
    return SQLITE_OK;
}

/* The settle statement once: row `id` gets outcome `d` (store.h: SETTLE),
 * under the lease rule. SQLite's code: SQLITE_DONE when it ran (whether or
 * not it changed the row: sqlite3_changes tells). */
static int step_settle(struct sq_store *st, const struct hk_store_op *op, int64_t id, const struct hk_delivery *d)
{
    sqlite3_stmt *stmt = st->settle;
    int rc = sqlite3_bind_int64(stmt, 1, id);
    if (rc == SQLITE_OK)
        rc = sqlite3_bind_int(stmt, 2, d->state);
    if (rc == SQLITE_OK)
        rc = sqlite3_bind_int(stmt, 3, d->attempts);
    if (rc == SQLITE_OK)
        rc = d->state == HK_DLV_PENDING ? sqlite3_bind_int64(stmt, 4, d->next_us) : sqlite3_bind_null(stmt, 4);
    if (rc == SQLITE_OK)
        rc = d->last_status ? sqlite3_bind_int(stmt, 5, d->last_status) : sqlite3_bind_null(stmt, 5);
    if (rc == SQLITE_OK)
        rc = hk__sq_bind_str(stmt, 6, d->last_error, d->last_error_len);
    if (rc == SQLITE_OK)
        rc = sqlite3_bind_int64(stmt, 7, op->now_us);
    if (rc == SQLITE_OK)
        rc = sqlite3_bind_int64(stmt, 8, op->fwd.owner);
    if (rc == SQLITE_OK)
        rc = sqlite3_step(stmt);
    sqlite3_reset(stmt);
    sqlite3_clear_bindings(stmt);
    return rc;
}

/* SETTLE as a batch (store.h): the statement once per row, inside the
 * writer's transaction; a failure fails the whole batch with it. */
static int run_settle_batch(struct sq_store *st, struct hk_store_op *op)
{
    uint32_t settled = 0;
    for (size_t i = 0; i < op->fwd.ndelivered; i++) {
        const struct hk_settle_item *it = &op->fwd.delivered[i];
        struct hk_delivery d = {.state = HK_DLV_DELIVERED, .attempts = it->attempts, .last_status = it->status};
        int rc = step_settle(st, op, it->id, &d);
        if (rc != SQLITE_DONE)
            return rc == SQLITE_OK ? SQLITE_ERROR : rc;
        if (sqlite3_changes(st->db) > 0)
            settled++;
    }
    op->fwd.settled = settled;
    op->status = 0;
    return SQLITE_OK;
}

/* SETTLE (store.h). */
static int run_settle(struct sq_store *st, struct hk_store_op *op)
{
    if (op->fwd.ndelivered)
        return run_settle_batch(st, op);
    int rc = step_settle(st, op, op->id, &op->row.delivery);
    if (rc == SQLITE_DONE && sqlite3_changes(st->db) > 0) {
        op->status = 0;
        return SQLITE_OK;
    }
    if (rc != SQLITE_DONE) {
        if (op_error(st->db, rc)) {
            op->status = HK_EINVAL;
            return SQLITE_OK;
        }
        return rc;
    }
    /* Nothing changed: gone, or leased to someone else. */
    rc = sqlite3_bind_int64(st->exists, 1, op->id);
    if (rc == SQLITE_OK)
        rc = sqlite3_step(st->exists);
    sqlite3_reset(st->exists);
    if (rc == SQLITE_ROW)
        op->status = HK_ECONFLICT;
    else if (rc == SQLITE_DONE)
        op->status = HK_ENOTFOUND;
    else
        return rc;
    return SQLITE_OK;
}

/* REDELIVER (store.h): the row as stored afterwards, for on_row. */
static int run_redeliver(struct sq_store *st, struct hk_store_op *op)
{
    sqlite3_stmt *stmt = st->redeliver;
    int rc = sqlite3_bind_int64(stmt, 1, op->id);
    if (rc == SQLITE_OK)
        rc = sqlite3_bind_int64(stmt, 2, op->now_us);
    if (rc == SQLITE_OK)
        rc = sqlite3_step(stmt);
    if (rc == SQLITE_ROW) {
        struct hk_webhook row;
        hk__sq_row(stmt, &row);
        op->be.sq.replay = hk__sq_replay_new(&row);
        op->status = 0;
        rc = sqlite3_step(stmt);   /* runs the update to its end */
    } else if (rc == SQLITE_DONE) {
        op->status = HK_ENOTFOUND;
    }
    sqlite3_reset(stmt);
    sqlite3_clear_bindings(stmt);
    if (rc != SQLITE_DONE) {
        rows_free(op->be.sq.replay);
        op->be.sq.replay = NULL;
        return rc;
    }
    return SQLITE_OK;
}

static int purge_batch(struct sq_store *st, struct hk_store_op *op, const char *except);

/* PURGE (store.h): one batch, then the freed pages back to the file
 * system, and the live size. */
static int run_purge(struct sq_store *st, struct hk_store_op *op)
{
    struct hk_purge_op *pg = op->purge;
    char stack[1024], *except = stack;
    names_json(pg->except, pg->source ? 0 : pg->nexcept, stack, sizeof stack, &except);
    int rc = purge_batch(st, op, except);
    if (except != stack)
        free(except);
    return rc;
}

/* run_purge with the sources left alone as a JSON array. */
static int purge_batch(struct sq_store *st, struct hk_store_op *op, const char *except)
{
    struct hk_purge_op *pg = op->purge;
    /* The row cap's bound: the id of the keep_rows-th newest row. */
    int64_t keep_from = INT64_MIN;
    int rc = SQLITE_OK;
    if (pg->keep_rows && pg->keep_from != 0) {
        keep_from = pg->keep_from > 0 ? pg->keep_from : INT64_MIN;   /* the caller's, from a walk before */
    } else if (pg->keep_rows) {
        sqlite3_stmt *k = pg->source ? st->keep_src : st->keep_all;
        int64_t skip = pg->keep_rows > (uint64_t)INT64_MAX ? INT64_MAX : (int64_t)pg->keep_rows - 1;
        rc = sqlite3_bind_int64(k, 1, skip);
        if (rc == SQLITE_OK)
            rc = pg->source ? sqlite3_bind_text(k, 2, pg->source, -1, SQLITE_STATIC)
                            : sqlite3_bind_text(k, 2, except, -1, SQLITE_TRANSIENT);
        if (rc == SQLITE_OK)
            rc = sqlite3_step(k);
        if (rc == SQLITE_ROW) {
            keep_from = sqlite3_column_int64(k, 0);
            rc = SQLITE_DONE;
        }
        sqlite3_reset(k);
        sqlite3_clear_bindings(k);
        if (rc != SQLITE_DONE)
            return rc;
        pg->keep_from = keep_from != INT64_MIN ? keep_from : -1;
    }
    sqlite3_stmt *stmt = pg->source ? st->purge_src : st->purge_all;
    uint64_t limit = pg->oldest && pg->oldest < pg->limit ? pg->oldest : pg->limit;
    rc = sqlite3_bind_int64(stmt, 1, pg->before_us ? pg->before_us : INT64_MIN);
    if (rc == SQLITE_OK)
        rc = sqlite3_bind_int64(stmt, 2, keep_from);
    if (rc == SQLITE_OK)
        rc = sqlite3_bind_int(stmt, 3, pg->oldest ? 1 : 0);
    if (rc == SQLITE_OK)
        rc = sqlite3_bind_int(stmt, 4, pg->keep_pending ? 1 : 0);
    if (rc == SQLITE_OK)
        rc = sqlite3_bind_int64(stmt, 5, (int64_t)limit);
    if (rc == SQLITE_OK)
        rc = pg->source ? sqlite3_bind_text(stmt, 6, pg->source, -1, SQLITE_STATIC)
                        : sqlite3_bind_text(stmt, 7, except, -1, SQLITE_TRANSIENT);
    if (rc == SQLITE_OK)
        rc = sqlite3_step(stmt);
    sqlite3_reset(stmt);
    sqlite3_clear_bindings(stmt);
    if (rc != SQLITE_DONE)
        return rc;
    pg->deleted = (uint64_t)sqlite3_changes(st->db);
    if (pg->deleted > 0) {
        while ((rc = sqlite3_step(st->vacuum)) == SQLITE_ROW)
            ;
        sqlite3_reset(st->vacuum);
        if (rc != SQLITE_DONE)
            return rc;
    }
    rc = sqlite3_step(st->pages);
    if (rc == SQLITE_ROW) {
        int64_t b = sqlite3_column_int64(st->pages, 0);
        pg->store_bytes = b > 0 ? (uint64_t)b : 0;
        rc = SQLITE_DONE;
    }
    sqlite3_reset(st->pages);
    if (rc != SQLITE_DONE)
        return rc;
    op->status = 0;
    return SQLITE_OK;
}

/* Every writer statement is prepared persistent: it lives as long as the
 * connection. */
static int prepare(sqlite3 *db, const char *sql, sqlite3_stmt **out)
{
    return sqlite3_prepare_v3(db, sql, -1, SQLITE_PREPARE_PERSISTENT, out, NULL);
}

/* The statements of credentials, forwarding and retention, prepared the
 * first time an op of theirs runs: start-up prepares only what inserts,
 * deletes and the failure probe use (hk__sq_writer_prepare). SQLITE_OK, or
 * the prepare's error, which fails the batch like any other. */
static int prepare_for(struct sq_store *st, enum hk_op_kind kind)
{
    struct {
        sqlite3_stmt **slot;
        const char *sql;
    } need[6];
    size_t n = 0;
#define NEED(field, text) (need[n].slot = &st->field, need[n++].sql = (text))
    switch (kind) {
    case HK_OP_TOKEN_PUT:
        NEED(tok_ins, SQL_TOKEN_INS);
        break;
    case HK_OP_TOKEN_REVOKE:
        NEED(tok_revoke, SQL_TOKEN_REVOKE);
        NEED(tok_revoke_ses, SQL_TOKEN_REVOKE_SESSIONS);
        break;
    case HK_OP_SESSION_PUT:
        NEED(ses_sweep, SQL_SESSION_SWEEP);
        NEED(ses_ins, SQL_SESSION_INS);
        break;
    case HK_OP_SESSION_DEL:
        NEED(ses_del, SQL_SESSION_DEL);
        break;
    case HK_OP_CLAIM:
        NEED(claim, SQL_CLAIM);
        NEED(claim_fifo, SQL_CLAIM_FIFO);
        NEED(lease, SQL_LEASE);
        break;
    case HK_OP_SETTLE:
        NEED(settle, SQL_SETTLE);
        NEED(exists, SQL_EXISTS);
        break;
    case HK_OP_REDELIVER:
        NEED(redeliver, SQL_REDELIVER);
        break;
    case HK_OP_PURGE:
        NEED(keep_all, SQL_KEEP_ALL);
        NEED(keep_src, SQL_KEEP_SRC);
        NEED(purge_all, SQL_PURGE_ALL);
        NEED(purge_src, SQL_PURGE_SRC);
        NEED(vacuum, SQL_VACUUM);
        NEED(pages, SQL_PAGES);
        break;
    default:
        break;
    }
#undef NEED
    for (size_t i = 0; i < n; i++) {
        int rc = *need[i].slot ? SQLITE_OK : prepare(st->db, need[i].sql, need[i].slot);
        if (rc != SQLITE_OK)
            return rc;
    }
    return SQLITE_OK;
}

static int run_op(struct sq_store *st, struct hk_store_op *op)
{
    int rc = prepare_for(st, op->kind);
    if (rc != SQLITE_OK)
        return rc;
    switch (op->kind) {
    case HK_OP_INSERT:
        return run_insert(st, op);
    case HK_OP_DELETE:
        return run_delete(st, op);
    case HK_OP_TOKEN_PUT:
        return run_token_put(st, op);
    case HK_OP_TOKEN_REVOKE:
        return run_token_revoke(st, op);
    case HK_OP_SESSION_PUT:
        return run_session_put(st, op);
    case HK_OP_SESSION_DEL:
        return run_session_del(st, op);
    case HK_OP_CLAIM:
        return run_claim(st, op);
    case HK_OP_SETTLE:
        return run_settle(st, op);
    case HK_OP_REDELIVER:
        return run_redeliver(st, op);
    case HK_OP_PURGE:
        return run_purge(st, op);
    default:
        /* submit queues only the kinds above. */
        assert(!"not a write");
        op->status = HK_EINVAL;
        return SQLITE_OK;
    }
}

/* ---- failure spells ------------------------------------------------------ */

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
        hk__sq_log_spell("sqlite writes failing, store not ready", code, rc);
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
            hk__sq_err_reason(st->spell), (double)(hk_mono_ns() - st->spell_start_ns) / 1e9,
            st->spell_failed);
    st->spell = 0;
    atomic_store(&st->health, 0);
}

/* While a spell lasts, writes may never come to end it: a store that is not
 * ready gets no traffic. So the idle writer makes a write of its own every
 * HK_SQLITE_PROBE_MS. It must commit, since only a commit meets a full or
 * failing disk, and it must change nothing anyone reads. */
/* A committed write that leaves nothing: a row into schema_version and
 * out again (an UPDATE that changes nothing writes nothing). SQLITE_DONE,
 * or the error, rolled back. */
static int write_nothing(struct sq_store *st)
{
    int rc = step_once(st->begin);
    if (rc == SQLITE_DONE)
        rc = step_once(st->probe_ins);
    if (rc == SQLITE_DONE)
        rc = step_once(st->probe_del);
    if (rc == SQLITE_DONE)
        rc = step_once(st->commit);
    if (rc != SQLITE_DONE && !sqlite3_get_autocommit(st->db))
        step_once(st->rollback);
    return rc;
}

static void probe(struct sq_store *st)
{
    if (st->spell == HK_EFULL && !disk_has_room(st))
        return;
    int rc = write_nothing(st);
    if (rc == SQLITE_DONE)
        spell_ok(st);
    else
        spell_fail(st, hk__sq_store_err(rc), rc, 0);
}

/* ---- the thread ------------------------------------------------------------ */

/* Execute a batch of `n` ops in one transaction. On any batch-level failure,
 * nothing of the batch is stored and every op reports the mapped error. */
static void run_batch(struct sq_store *st, struct hk_store_op *batch, size_t n)
{
    struct hk_store_op *op;
    int rc = step_once(st->begin);
    if (rc != SQLITE_DONE)
        goto out;
    for (op = batch; op; op = op->next) {
        rc = run_op(st, op);
        if (rc != SQLITE_OK)
            goto out;
    }
    rc = step_once(st->commit);
out:
    if (rc == SQLITE_DONE) {
        spell_ok(st);
        return;
    }
    int code = hk__sq_store_err(rc);
    spell_fail(st, code, rc, n);
    if (!sqlite3_get_autocommit(st->db))
        step_once(st->rollback);
    for (op = batch; op; op = op->next) {
        rows_free(op->be.sq.replay);   /* a replay's original, or claimed rows */
        op->be.sq.replay = NULL;
        op->replayed = false;
        if (op->kind == HK_OP_PURGE)
            op->purge->deleted = 0;
        op->status = code;
    }
}

/* Hand each op back to its loop. The async send happens under the loop's
 * mutex: once the loop has drained an op, the writer is done touching that
 * loop, which is what lets loop_detach free it. */
static void complete_batch(struct hk_store_op *batch)
{
    struct hk_store_op *op = batch;
    while (op) {
        struct hk_store_op *next = op->next;
        struct sq_loop *sl = op->be.sq.loop;
        op->next = NULL;
        uv_mutex_lock(&sl->mu);
        if (sl->done_tail)
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

/* The first write after an open pays for the WAL's start: the first sync
 * of the WAL file on each open also syncs the directory that holds it, and
 * a WAL started anew has its header synced on its own before that. The
 * writer does it first thing, beside the rest of the start, so that the
 * first webhook after ready pays its own commit's sync only:
 * - a WAL that has frames (a clean close leaves one so:
 *   hk__sq_writer_leave_wal) is appended to by the next write, with no new
 *   header: one sync of the WAL file (SQLite's own xSync, which syncs the
 *   directory with it) is all there is to do, and it costs no transaction;
 * - else a write that leaves nothing (write_nothing), at the synchronous
 *   level asked for, starts the WAL.
 * A failure is left to the first write, which reports it. */
static void prime_wal(struct sq_store *st)
{
    sqlite3_file *wal = NULL;
    if (st->wal_going &&
        sqlite3_file_control(st->db, "main", SQLITE_FCNTL_JOURNAL_POINTER, &wal) == SQLITE_OK && wal &&
        wal->pMethods) {
        (void)wal->pMethods->xSync(wal, SQLITE_SYNC_NORMAL);
        return;
    }
    (void)write_nothing(st);
}

/* The writer gives way to the loops. A loop that wakes it keeps its CPU
 * until it waits (SCHED_BATCH: no preemption at wakeup), so on a busy CPU
 * the writes of the loop's whole turn wait in the queue and go in one
 * commit, instead of the writer taking the CPU for every first write of a
 * batch and again when its sync returns. The loop offers the CPU at the end
 * of such a turn (sqlite.c: on_turn), and the scheduler's tick still gives
 * the writer its share. Measured on one pinned CPU with the load mix:
 * context switches per request 1.38 -> 0.03, req/s +45%
 * (docs/store-sqlite.md). A refusal (a seccomp profile, say) only costs
 * that. The name is for top -H and /proc. */
static void writer_yields_to_loops(void)
{
    (void)pthread_setname_np(pthread_self(), "hookd-sqlite");
    struct sched_param sp = {0};
    int rc = pthread_setschedparam(pthread_self(), SCHED_BATCH, &sp);
    if (rc != 0)
        hk_info("sqlite: the writer thread stays SCHED_OTHER", "\"errno\":%d", rc);
}

static void writer_main(void *arg)
{
    struct sq_store *st = arg;
    /* The WAL's readying races the start and should win: it takes its
     * syncs' wake-ups as a normal thread, and gives way only after. */
    prime_wal(st);
    writer_yields_to_loops();
    for (;;) {
        bool timed_out = false;
        uv_mutex_lock(&st->mu);
        while (!st->head && !st->stopping && !timed_out) {
            if (st->spell == 0)
                uv_cond_wait(&st->cv, &st->mu);
            else
                timed_out = uv_cond_timedwait(&st->cv, &st->mu,
                                              HK_SQLITE_PROBE_MS * UINT64_C(1000000)) == UV_ETIMEDOUT;
        }
        if (!st->head) {
            bool stopping = st->stopping;
            uv_mutex_unlock(&st->mu);
            if (stopping)
                break;   /* and the queue is drained */
            probe(st);
            continue;
        }
        struct hk_store_op *batch = st->head, *last = st->head;
        size_t n = 1;
        while (n < HK_SQLITE_BATCH_MAX && last->next) {
            last = last->next;
            n++;
        }
        st->head = last->next;
        if (!st->head)
            st->tail = NULL;
        last->next = NULL;
        st->queued -= n;
        uv_mutex_unlock(&st->mu);

        run_batch(st, batch, n);
        complete_batch(batch);
    }
}

/* The writer thread starts when hk_sqlite_open is done (it primes the WAL
 * while the server starts: prime_wal), or with the first write or a
 * loop's warm-up if that start failed. The caller holds st->mu. */
int hk__sq_writer_start_locked(struct sq_store *st)
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


int hk__sq_writer_push(struct sq_store *st, struct sq_loop *sl, struct hk_store_op *op)
{
    op->be.sq.loop = sl;
    op->be.sq.replay = NULL;
    op->next = NULL;
    uv_mutex_lock(&st->mu);
    assert(!st->stopping);
    if (hk__sq_writer_start_locked(st) < 0) {
        uv_mutex_unlock(&st->mu);
        op->be.sq.loop = NULL;
        hk_warn("sqlite: cannot start the writer thread", NULL);
        return HK_EUNAVAIL;
    }
    if (st->queued >= st->queue_max) {
        uv_mutex_unlock(&st->mu);
        op->be.sq.loop = NULL;
        return HK_EBUSY;
    }
    if (st->tail) {
        st->tail->next = op;
    } else {
        /* The writer only sleeps on an empty queue. */
        st->head = op;
        uv_cond_signal(&st->cv);
    }
    st->tail = op;
    st->queued++;
    uv_mutex_unlock(&st->mu);
    return 0;
}

void hk__sq_writer_stop(struct sq_store *st)
{
    uv_mutex_lock(&st->mu);
    assert(st->nloops == 0);
    st->stopping = true;
    uv_cond_signal(&st->cv);
    bool started = st->writer_started;
    uv_mutex_unlock(&st->mu);
    /* The writer commits whatever is still queued before it exits. */
    if (started)
        uv_thread_join(&st->writer);
}

/* A clean close leaves the WAL going, so that the next start's first
 * webhook does not start it over. SQLite's own close would checkpoint and
 * delete the WAL; the next start would then make it anew, its header
 * synced on its own on top of the commit's sync. Here everything goes into
 * the database file first (a TRUNCATE checkpoint: the file is whole and
 * synced, the WAL empty), then a write that leaves nothing puts a header
 * and a frame back into the WAL, and the connection closes without its
 * checkpoint. The database file alone holds every row; the WAL's frame
 * changes nothing. On any failure the close is SQLite's own. Runs on the
 * closing thread, after the writer has stopped. */
void hk__sq_writer_leave_wal(struct sq_store *st)
{
    if (!st->db || st->spell != 0)
        return;
    /* A TRUNCATE checkpoint waits for every reader; one in another process
     * (a sqlite3 shell in a long transaction) must not hold up the stop:
     * busy at once means SQLite's own close, which does not wait. */
    (void)sqlite3_busy_timeout(st->db, 0);
    if (sqlite3_wal_checkpoint_v2(st->db, NULL, SQLITE_CHECKPOINT_TRUNCATE, NULL, NULL) != SQLITE_OK)
        return;
    if (write_nothing(st) == SQLITE_DONE)
        (void)sqlite3_db_config(st->db, SQLITE_DBCONFIG_NO_CKPT_ON_CLOSE, 1, NULL);
}

/* ---- statements ------------------------------------------------------------ */

/* From here on the write connection belongs to the writer thread, started
 * by hk__sq_writer_start_locked. */
int hk__sq_writer_prepare(struct sq_store *st)
{
    int rc = prepare(st->db, "BEGIN IMMEDIATE", &st->begin);
    if (rc == SQLITE_OK)
        rc = prepare(st->db, "COMMIT", &st->commit);
    if (rc == SQLITE_OK)
        rc = prepare(st->db, "ROLLBACK", &st->rollback);
    if (rc == SQLITE_OK)
        rc = prepare(st->db, SQL_INSERT, &st->ins);
    if (rc == SQLITE_OK)
        rc = prepare(st->db, SQL_IDEM, &st->idem);
    if (rc == SQLITE_OK)
        rc = prepare(st->db, SQL_INSERT_HOOK, &st->ins_hook);
    if (rc == SQLITE_OK)
        rc = prepare(st->db, SQL_DELIVERY, &st->delivery);
    if (rc == SQLITE_OK)
        rc = prepare(st->db, SQL_DELETE, &st->del);
    if (rc == SQLITE_OK)
        rc = prepare(st->db, SQL_PROBE_INS, &st->probe_ins);
    if (rc == SQLITE_OK)
        rc = prepare(st->db, SQL_PROBE_DEL, &st->probe_del);
    return rc;
}

void hk__sq_writer_finalize(struct sq_store *st)
{
    sqlite3_finalize(st->begin);
    sqlite3_finalize(st->commit);
    sqlite3_finalize(st->rollback);
    sqlite3_finalize(st->ins);
    sqlite3_finalize(st->idem);
    sqlite3_finalize(st->ins_hook);
    sqlite3_finalize(st->delivery);
    sqlite3_finalize(st->del);
    sqlite3_finalize(st->tok_ins);
    sqlite3_finalize(st->tok_revoke);
    sqlite3_finalize(st->tok_revoke_ses);
    sqlite3_finalize(st->ses_sweep);
    sqlite3_finalize(st->ses_ins);
    sqlite3_finalize(st->ses_del);
    sqlite3_finalize(st->probe_ins);
    sqlite3_finalize(st->probe_del);
    sqlite3_finalize(st->claim);
    sqlite3_finalize(st->claim_fifo);
    sqlite3_finalize(st->lease);
    sqlite3_finalize(st->settle);
    sqlite3_finalize(st->exists);
    sqlite3_finalize(st->redeliver);
    sqlite3_finalize(st->purge_all);
    sqlite3_finalize(st->purge_src);
    sqlite3_finalize(st->keep_all);
    sqlite3_finalize(st->keep_src);
    sqlite3_finalize(st->vacuum);
    sqlite3_finalize(st->pages);
}
