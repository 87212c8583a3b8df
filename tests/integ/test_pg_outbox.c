/* SPDX-License-Identifier: MIT
 * PostgreSQL only: the outbox, retention and live-feed ops of the store
 * (docs/forwarding.md), driven through the store itself on the server at
 * $HOOKD_TEST_DATABASE_URL, each test on schemas of its own: migration 4
 * from a version 3 database, inserts with and without forwarding, CLAIM
 * (due, unleased, order, limit, leases of others, two claimers at once,
 * FIFO sources), SETTLE (owner, stranger, gone, lease ended), REDELIVER,
 * PURGE (age, row caps, oldest, exceptions, pending rows, batch size), the
 * ascending LIST with its snapshot, the delivery filter, and watch/announce
 * (same schema, not across schemas, and after its backend is terminated).
 * Skipped without HOOKD_TEST_STORE=pg and the URL. */
#include <criterion/criterion.h>

#include <inttypes.h>
#include <libpq-fe.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <uv.h>

#include "core/clock.h"
#include "core/log.h"
#include "store/pg.h"
#include "store/pg_int.h"   /* white box: the listen connection's backend, to terminate it */
#include "store/store.h"

#include "harness.h"

#define SEC INT64_C(1000000)

/* ---- a store on a schema of the test's --------------------------------- */

struct ostore {
    char schema[64];
    char *url;
    PGconn *db;                /* the test's own connection, same schema */
    struct hk_store *s;
    uv_loop_t loop;
    struct hk_store_loop *sl;
};

static struct ostore A, B, C;
static PGconn *tx;          /* a transaction a test holds open: ended before the schemas go */

static void store_close(struct ostore *o)
{
    if (o->s) {
        o->s->vt->loop_detach(o->sl);
        uv_run(&o->loop, UV_RUN_DEFAULT);
        /* Every handle closed, the listen connection's included. */
        cr_assert_eq(uv_loop_close(&o->loop), 0, "the loop still has handles after detach");
        o->s->vt->close(o->s);
        o->s = NULL;
        o->sl = NULL;
    }
}

static void store_cleanup(struct ostore *o)
{
    store_close(o);
    if (o->db) {
        char sql[128];
        snprintf(sql, sizeof sql, "DROP SCHEMA IF EXISTS %s CASCADE", o->schema);
        PQclear(PQexec(o->db, sql));
        PQfinish(o->db);
        o->db = NULL;
    }
    free(o->url);
    o->url = NULL;
}

static void teardown(void)
{
    if (tx)
        PQfinish(tx);
    tx = NULL;
    store_cleanup(&A);
    /* B may share A's schema (dropped already): dropping it again is a no-op. */
    store_cleanup(&B);
    store_cleanup(&C);
}

TestSuite(pg_outbox, .fini = teardown, .timeout = 120);

static const char *base_url(void)
{
    const char *u = getenv("HOOKD_TEST_DATABASE_URL");
    if (!hk_store_is_pg() || !u || !*u)
        cr_skip_test("needs HOOKD_TEST_STORE=pg and HOOKD_TEST_DATABASE_URL (scripts/test.sh sets both)");
    return u;
}

static PGconn *db_connect(const char *url)
{
    PGconn *c = PQconnectdb(url);
    cr_assert_eq(PQstatus(c), CONNECTION_OK, "connect: %s", PQerrorMessage(c));
    return c;
}

static PGresult *db_exec(PGconn *c, const char *sql)
{
    PGresult *r = PQexec(c, sql);
    ExecStatusType st = PQresultStatus(r);
    cr_assert(st == PGRES_COMMAND_OK || st == PGRES_TUPLES_OK, "%s: %s", sql, PQresultErrorMessage(r));
    return r;
}

static void db_run(PGconn *c, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void db_run(PGconn *c, const char *fmt, ...)
{
    char sql[4096];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(sql, sizeof sql, fmt, ap);
    va_end(ap);
    PQclear(db_exec(c, sql));
}

/* The first column of the first row as an integer (NULL: INT64_MIN). */
static int64_t db_i64(PGconn *c, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static int64_t db_i64(PGconn *c, const char *fmt, ...)
{
    char sql[4096];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(sql, sizeof sql, fmt, ap);
    va_end(ap);
    PGresult *r = db_exec(c, sql);
    cr_assert_eq(PQntuples(r), 1, "%s: %d rows", sql, PQntuples(r));
    int64_t v = PQgetisnull(r, 0, 0) ? INT64_MIN : strtoll(PQgetvalue(r, 0, 0), NULL, 10);
    PQclear(r);
    return v;
}

static void store_attach(struct ostore *o)
{
    struct hk_pg_config cfg = {.url = o->url, .pool = 2, .queue_max = 256, .timeout_ms = 5000, .loops = 1};
    char err[512];
    o->s = hk_pg_open(&cfg, err, sizeof err);
    cr_assert_not_null(o->s, "hk_pg_open: %s", err);
    cr_assert_eq(uv_loop_init(&o->loop), 0);
    cr_assert_eq(o->s->vt->loop_attach(o->s, &o->loop, &o->sl), 0);
}

/* A fresh schema for `o`; `setup_sql` (or NULL) runs in it before the store
 * opens. */
static void store_open(struct ostore *o, const char *setup_sql)
{
    static unsigned serial;
    const char *base = base_url();
    hk_log_set_level(HK_LOG_WARN);
    memset(o, 0, sizeof *o);
    snprintf(o->schema, sizeof o->schema, "hk_obx_%d_%u", (int)getpid(), serial++);
    PGconn *admin = db_connect(base);
    db_run(admin, "CREATE SCHEMA %s", o->schema);
    PQfinish(admin);
    o->url = hk_pg_url_with_schema(base, o->schema);
    o->db = db_connect(o->url);
    PQclear(db_exec(o->db, "SET client_min_messages = warning"));
    if (setup_sql)
        PQclear(db_exec(o->db, setup_sql));
    store_attach(o);
}

/* A second store handle (a second process, as far as the database can
 * tell) on the schema of `of`. */
static void store_open_same(struct ostore *o, const struct ostore *of)
{
    memset(o, 0, sizeof *o);
    snprintf(o->schema, sizeof o->schema, "%s", of->schema);
    o->url = strdup(of->url);
    cr_assert_not_null(o->url);
    store_attach(o);
}

/* ---- ops ------------------------------------------------------------------ */

struct got {
    int64_t id, received_us;
    char source[32];
    bool ingress;
    char body[64];
    size_t body_len;
    struct hk_delivery d;      /* last_error points into err */
    char err[128];
};

struct res {
    struct hk_store_loop *sl;  /* for a stream's next batch */
    int dones, batches, status;
    bool replayed;
    int n;
    struct got rows[256];
    struct hk_feed_horizon horizon;
};

static void on_row(struct hk_store_op *op, const struct hk_webhook *row)
{
    struct res *r = op->data;
    cr_assert_lt(r->n, 256);
    struct got *g = &r->rows[r->n++];
    memset(g, 0, sizeof *g);
    g->id = row->id;
    g->received_us = row->received_us;
    cr_assert_lt(row->source_len, sizeof g->source);
    memcpy(g->source, row->source, row->source_len);
    g->ingress = row->ingress;
    if (row->ingress) {
        cr_assert_leq(row->body_len, sizeof g->body);
        memcpy(g->body, row->body, row->body_len);
        g->body_len = row->body_len;
    }
    g->d = row->delivery;
    if (row->delivery.last_error) {
        cr_assert_lt(row->delivery.last_error_len, sizeof g->err);
        memcpy(g->err, row->delivery.last_error, row->delivery.last_error_len);
        g->d.last_error = g->err;
    }
}

static void on_done(struct hk_store_op *op)
{
    struct res *r = op->data;
    r->batches++;
    r->status = op->status;
    r->replayed = op->replayed;
    r->horizon = op->horizon;
    if (op->more) {
        hk_store_list_next(r->sl, op);
        return;
    }
    r->dones++;
}

static void op_init(struct hk_store_op *op, struct res *r, const struct ostore *o, enum hk_op_kind kind)
{
    memset(op, 0, sizeof *op);
    memset(r, 0, sizeof *r);
    r->sl = o->sl;
    op->kind = kind;
    op->on_row = on_row;
    op->on_done = on_done;
    op->data = r;
}

/* Run the loops of up to two stores until every one of `n` results is in. */
static void wait_all(struct ostore *o1, struct ostore *o2, struct res *const *rs, int n)
{
    int64_t deadline = hk_now_ms() + 10000;
    for (;;) {
        int pending = 0;
        for (int i = 0; i < n; i++)
            pending += rs[i]->dones == 0;
        if (pending == 0)
            break;
        cr_assert_lt(hk_now_ms(), deadline, "%d ops unanswered after 10 s", pending);
        uv_run(&o1->loop, o2 ? UV_RUN_NOWAIT : UV_RUN_ONCE);
        if (o2) {
            uv_run(&o2->loop, UV_RUN_NOWAIT);
            usleep(200);
        }
    }
    for (int i = 0; i < n; i++)
        cr_assert_eq(rs[i]->dones, 1);
}

static int run(struct ostore *o, struct hk_store_op *op)
{
    struct res *r = op->data;
    cr_assert_eq(hk_store_submit(o->sl, op), 0);
    wait_all(o, NULL, &r, 1);
    return r->status;
}

/* An envelope row: forwarded (pending) or not, leased to `owner` until
 * `lease_us` when both are set. Returns the id; *out (may be NULL) gets
 * what on_row saw. */
static int64_t insert(struct ostore *o, const char *source, bool pending, int64_t owner, int64_t lease_us,
                      struct got *out)
{
    struct hk_store_op op;
    struct res r;
    op_init(&op, &r, o, HK_OP_INSERT);
    op.row.source = source;
    op.row.source_len = strlen(source);
    op.row.event_type = "evt";
    op.row.event_type_len = 3;
    op.row.payload = "{}";
    op.row.payload_len = 2;
    op.row.delivery.state = pending ? HK_DLV_PENDING : HK_DLV_NONE;
    op.fwd.owner = owner;
    op.fwd.lease_us = lease_us;
    cr_assert_eq(run(o, &op), 0);
    cr_assert_eq(r.n, 1);
    if (out)
        *out = r.rows[0];
    return r.rows[0].id;
}

static int get(struct ostore *o, int64_t id, struct got *out)
{
    struct hk_store_op op;
    struct res r;
    op_init(&op, &r, o, HK_OP_GET);
    op.id = id;
    int rc = run(o, &op);
    if (rc == 0) {
        cr_assert_eq(r.n, 1);
        *out = r.rows[0];
    }
    return rc;
}

static void claim_op(struct hk_store_op *op, struct res *r, const struct ostore *o, int64_t owner,
                     int64_t lease_us, uint32_t limit, const char *const *fifo, size_t nfifo)
{
    op_init(op, r, o, HK_OP_CLAIM);
    op->fwd.owner = owner;
    op->fwd.lease_us = lease_us;
    op->fwd.fifo = fifo;
    op->fwd.nfifo = nfifo;
    op->list.limit = limit;
}

/* CLAIM; the claimed ids in *r. */
static int claim(struct ostore *o, struct res *r, int64_t owner, int64_t lease_us, uint32_t limit,
                 const char *const *fifo, size_t nfifo)
{
    struct hk_store_op op;
    claim_op(&op, r, o, owner, lease_us, limit, fifo, nfifo);
    return run(o, &op);
}

static int settle(struct ostore *o, int64_t id, int64_t owner, enum hk_delivery_state state, int attempts,
                  int last_status, const char *last_error, int64_t next_us)
{
    struct hk_store_op op;
    struct res r;
    op_init(&op, &r, o, HK_OP_SETTLE);
    op.id = id;
    op.fwd.owner = owner;
    op.row.delivery.state = (uint8_t)state;
    op.row.delivery.attempts = attempts;
    op.row.delivery.last_status = last_status;
    op.row.delivery.last_error = last_error;
    op.row.delivery.last_error_len = last_error ? strlen(last_error) : 0;
    op.row.delivery.next_us = next_us;
    int rc = run(o, &op);
    cr_assert_eq(r.n, 0, "SETTLE gave rows");
    return rc;
}

static int purge(struct ostore *o, struct hk_purge_op *p)
{
    struct hk_store_op op;
    struct res r;
    op_init(&op, &r, o, HK_OP_PURGE);
    op.purge = p;
    int rc = run(o, &op);
    cr_assert_eq(r.n, 0, "PURGE gave rows");
    return rc;
}

static int64_t now_us(void)
{
    return hk_wall_us();
}

/* Row `id` is delivered after one attempt (a 202), settled at t0 or later. */
static void assert_delivered_once(struct ostore *o, int64_t id, int64_t t0)
{
    struct got g;
    cr_assert_eq(get(o, id, &g), 0);
    cr_assert_eq(g.d.state, HK_DLV_DELIVERED);
    cr_assert_eq(g.d.attempts, 1);
    cr_assert_eq(g.d.last_status, 202);
    cr_assert_null(g.d.last_error);
    cr_assert_eq(g.d.next_us, 0);
    cr_assert_geq(g.d.updated_us, t0);
    cr_assert_leq(g.d.updated_us, now_us());
}

/* n rows of `source` inserted behind the store's back, received `age_s`
 * seconds ago, in delivery state `dstate` (due now when pending). */
static void seed(struct ostore *o, const char *source, int n, int age_s, int dstate)
{
    db_run(o->db,
           "INSERT INTO webhooks(source, event_type, payload, received_at, dstate, dnext_us)"
           " SELECT '%s', 'evt', '{}', now() - interval '%d seconds', %d, CASE WHEN %d = 1 THEN 0 END"
           " FROM generate_series(1, %d)",
           source, age_s, dstate, dstate, n);
}

static int64_t count_rows(struct ostore *o, const char *where)
{
    return db_i64(o->db, "SELECT count(*) FROM webhooks WHERE %s", where);
}

/* ---- migration ---------------------------------------------------------------- */

/* A version 3 database (webhooks with the ingress columns, credentials)
 * gains the delivery columns and indexes; its rows read as not forwarded. */
Test(pg_outbox, migrates_a_version_3_schema)
{
    store_open(&A,
               "CREATE TABLE schema_version(version integer NOT NULL);"
               "INSERT INTO schema_version(version) VALUES(3);"
               "CREATE TABLE webhooks(id bigint GENERATED BY DEFAULT AS IDENTITY PRIMARY KEY,"
               " source text NOT NULL, event_type text NOT NULL, payload text,"
               " received_at timestamptz NOT NULL, idem_key text, body bytea, content_type text,"
               " delivery_id text, body_sha256 bytea, headers text, verified text, client_addr text);"
               "CREATE UNIQUE INDEX webhooks_idem ON webhooks(source, idem_key) WHERE idem_key IS NOT NULL;"
               "CREATE INDEX webhooks_source_id ON webhooks(source, id);"
               "CREATE INDEX webhooks_event_type_id ON webhooks(event_type, id);"
               "CREATE UNIQUE INDEX webhooks_delivery ON webhooks(delivery_id, source)"
               " WHERE delivery_id IS NOT NULL;"
               "CREATE TABLE api_tokens(name text PRIMARY KEY, hash bytea NOT NULL UNIQUE, scopes integer NOT NULL,"
               " created_at timestamptz NOT NULL, expires_at timestamptz, revoked_at timestamptz);"
               "CREATE TABLE sessions(hash bytea PRIMARY KEY, subject text NOT NULL, scopes integer NOT NULL,"
               " csrf_hash bytea NOT NULL, expires_at timestamptz NOT NULL);"
               "INSERT INTO webhooks(source, event_type, payload, received_at) VALUES('gh', 'push', '{}', now());"
               "INSERT INTO webhooks(source, event_type, received_at, body, delivery_id)"
               " VALUES('st', 'charge', now(), 'raw', 'd-1');");
    cr_assert_eq(db_i64(A.db, "SELECT version FROM schema_version"), hk__pg_schema_version);
    cr_assert_eq(db_i64(A.db, "SELECT count(*) FROM schema_version"), 1);
    cr_assert_eq(count_rows(&A, "dstate = 0 AND dattempts = 0 AND dnext_us IS NULL AND dlease_owner IS NULL"), 2);
    cr_assert_eq(db_i64(A.db, "SELECT count(*) FROM pg_indexes WHERE schemaname = current_schema() AND indexname"
                              " IN ('webhooks_due', 'webhooks_pending_source', 'webhooks_failed')"),
                 3);
    int64_t id = db_i64(A.db, "SELECT min(id) FROM webhooks");
    struct got g;
    for (int k = 0; k < 2; k++) {
        cr_assert_eq(get(&A, id + k, &g), 0);
        cr_assert_eq(g.d.state, HK_DLV_NONE);
        cr_assert_eq(g.d.attempts, 0);
        cr_assert_eq(g.d.last_status, 0);
        cr_assert_null(g.d.last_error);
        cr_assert_eq(g.d.next_us, 0);
        cr_assert_eq(g.d.updated_us, 0);
    }
    cr_assert(g.ingress);
    /* And the migrated table takes forwarded rows. */
    int64_t nid = insert(&A, "gh", true, 0, 0, NULL);
    cr_assert_eq(count_rows(&A, "dstate = 1"), 1);
    cr_assert_eq(db_i64(A.db, "SELECT id FROM webhooks WHERE dstate = 1"), nid);
}

/* ---- inserts ---------------------------------------------------------------- */

Test(pg_outbox, insert_with_and_without_forwarding)
{
    store_open(&A, NULL);
    struct got g, back;
    int64_t plain = insert(&A, "gh", false, 0, 0, &g);
    cr_assert_eq(g.d.state, HK_DLV_NONE);
    cr_assert_eq(g.d.next_us, 0);
    cr_assert_eq(db_i64(A.db, "SELECT dstate FROM webhooks WHERE id = %" PRId64, plain), 0);
    cr_assert_eq(db_i64(A.db, "SELECT count(*) FROM webhooks WHERE id = %" PRId64
                              " AND dnext_us IS NULL AND dlease_owner IS NULL AND dlease_us IS NULL", plain), 1);

    /* Pending, no lease: due at once, as on_row says and GET reads back. */
    int64_t t0 = now_us();
    int64_t p = insert(&A, "gh", true, 0, 0, &g);
    cr_assert_eq(g.d.state, HK_DLV_PENDING);
    cr_assert_eq(g.d.attempts, 0);
    cr_assert_eq(g.d.next_us, g.received_us);
    cr_assert_geq(g.received_us, t0);
    cr_assert_eq(get(&A, p, &back), 0);
    cr_assert_eq(back.d.state, HK_DLV_PENDING);
    cr_assert_eq(back.d.next_us, g.received_us);
    cr_assert_eq(back.d.updated_us, 0);
    cr_assert_eq(db_i64(A.db, "SELECT count(*) FROM webhooks WHERE id = %" PRId64
                              " AND dlease_owner IS NULL AND dlease_us IS NULL", p), 1);

    /* Pending and leased by the inserting process. */
    int64_t lease = now_us() + 30 * SEC;
    int64_t l = insert(&A, "gh", true, 77, lease, NULL);
    cr_assert_eq(db_i64(A.db, "SELECT dlease_owner FROM webhooks WHERE id = %" PRId64, l), 77);
    cr_assert_eq(db_i64(A.db, "SELECT dlease_us FROM webhooks WHERE id = %" PRId64, l), lease);

    /* Any other state asked for stores NONE. */
    struct hk_store_op op;
    struct res r;
    op_init(&op, &r, &A, HK_OP_INSERT);
    op.row.source = "gh";
    op.row.source_len = 2;
    op.row.event_type = "e";
    op.row.event_type_len = 1;
    op.row.delivery.state = HK_DLV_DELIVERED;
    op.row.delivery.attempts = 5;
    op.fwd.owner = 9;
    op.fwd.lease_us = lease;
    cr_assert_eq(run(&A, &op), 0);
    cr_assert_eq(r.rows[0].d.state, HK_DLV_NONE);
    cr_assert_eq(r.rows[0].d.attempts, 0);
    cr_assert_eq(db_i64(A.db, "SELECT count(*) FROM webhooks WHERE id = %" PRId64
                              " AND dstate = 0 AND dattempts = 0 AND dlease_owner IS NULL", r.rows[0].id), 1);

    /* An idempotent envelope: the replay changes nothing, forwarding asked or not. */
    op_init(&op, &r, &A, HK_OP_INSERT);
    op.row.source = "gh";
    op.row.source_len = 2;
    op.row.event_type = "e";
    op.row.event_type_len = 1;
    op.idem_key = "k1";
    op.row.delivery.state = HK_DLV_PENDING;
    cr_assert_eq(run(&A, &op), 0);
    int64_t idem = r.rows[0].id;
    cr_assert_eq(r.rows[0].d.state, HK_DLV_PENDING);
    cr_assert_not(r.replayed);
    db_run(A.db, "UPDATE webhooks SET dstate = 2, dattempts = 1 WHERE id = %" PRId64, idem);
    op_init(&op, &r, &A, HK_OP_INSERT);
    op.row.source = "gh";
    op.row.source_len = 2;
    op.row.event_type = "e";
    op.row.event_type_len = 1;
    op.idem_key = "k1";
    op.row.delivery.state = HK_DLV_PENDING;
    op.fwd.owner = 5;
    op.fwd.lease_us = lease;
    cr_assert_eq(run(&A, &op), 0);
    cr_assert(r.replayed);
    cr_assert_eq(r.rows[0].id, idem);
    cr_assert_eq(r.rows[0].d.state, HK_DLV_DELIVERED, "the original's delivery, as stored");
    cr_assert_eq(db_i64(A.db, "SELECT count(*) FROM webhooks WHERE id = %" PRId64
                              " AND dstate = 2 AND dattempts = 1 AND dlease_owner IS NULL", idem), 1);

    /* An ingress row: pending and leased in the insert; its duplicate
     * changes nothing. */
    static const uint8_t sha[32] = {1};
    for (int k = 0; k < 2; k++) {
        op_init(&op, &r, &A, HK_OP_INSERT);
        op.row.ingress = true;
        op.row.source = "st";
        op.row.source_len = 2;
        op.row.event_type = "charge";
        op.row.event_type_len = 6;
        op.row.body = (const uint8_t *)"body";
        op.row.body_len = 4;
        op.row.body_sha256 = sha;
        op.row.delivery_id = "evt_1";
        op.row.delivery_id_len = 5;
        op.row.delivery.state = HK_DLV_PENDING;
        op.fwd.owner = k == 0 ? 41 : 42;
        op.fwd.lease_us = lease + k;
        cr_assert_eq(run(&A, &op), 0);
        cr_assert_eq(r.replayed, k == 1);
        if (k == 0)
            db_run(A.db, "UPDATE webhooks SET dattempts = 3 WHERE delivery_id = 'evt_1'");
    }
    cr_assert_eq(count_rows(&A, "delivery_id = 'evt_1'"), 1);
    cr_assert_eq(db_i64(A.db, "SELECT count(*) FROM webhooks WHERE delivery_id = 'evt_1' AND dstate = 1"
                              " AND dattempts = 3 AND dlease_owner = 41 AND dlease_us = %" PRId64, lease), 1);
}

/* ---- CLAIM ---------------------------------------------------------------------- */

Test(pg_outbox, claim_takes_due_unleased_rows_in_order)
{
    store_open(&A, NULL);
    int64_t now = now_us();
    int64_t id[8];
    for (int i = 0; i < 8; i++)
        id[i] = insert(&A, i == 7 ? "hk" : "gh", i != 6, 0, 0, NULL);
    /* Due times out of id order; id[2] not due; id[3] leased by another
     * owner for a while; id[4] leased, but that lease ended; id[5] settled. */
    db_run(A.db, "UPDATE webhooks SET dnext_us = %" PRId64 " WHERE id = %" PRId64, now - 5 * SEC, id[1]);
    db_run(A.db, "UPDATE webhooks SET dnext_us = %" PRId64 " WHERE id = %" PRId64, now - 4 * SEC, id[0]);
    db_run(A.db, "UPDATE webhooks SET dnext_us = %" PRId64 " WHERE id = %" PRId64, now + 60 * SEC, id[2]);
    db_run(A.db, "UPDATE webhooks SET dlease_owner = 99, dlease_us = %" PRId64 " WHERE id = %" PRId64,
           now + 60 * SEC, id[3]);
    db_run(A.db, "UPDATE webhooks SET dlease_owner = 99, dlease_us = %" PRId64 " WHERE id = %" PRId64,
           now - SEC, id[4]);
    db_run(A.db, "UPDATE webhooks SET dstate = 2 WHERE id = %" PRId64, id[5]);
    /* A body comes along: an ingress row, due first of all. */
    static const uint8_t sha[32] = {2};
    struct hk_store_op op;
    struct res r;
    op_init(&op, &r, &A, HK_OP_INSERT);
    op.row.ingress = true;
    op.row.source = "st";
    op.row.source_len = 2;
    op.row.event_type = "charge";
    op.row.event_type_len = 6;
    op.row.body = (const uint8_t *)"b\0dy";
    op.row.body_len = 4;
    op.row.body_sha256 = sha;
    op.row.delivery.state = HK_DLV_PENDING;
    cr_assert_eq(run(&A, &op), 0);
    int64_t hook = r.rows[0].id;
    db_run(A.db, "UPDATE webhooks SET dnext_us = %" PRId64 ", dattempts = 2 WHERE id = %" PRId64, now - 9 * SEC,
           hook);

    int64_t lease = now_us() + 30 * SEC;
    cr_assert_eq(claim(&A, &r, 7, lease, 3, NULL, 0), 0);
    cr_assert_eq(r.n, 3);
    cr_assert_eq(r.rows[0].id, hook);
    cr_assert_eq(r.rows[1].id, id[1]);
    cr_assert_eq(r.rows[2].id, id[0]);
    /* Every field, the body included, and the delivery as before the lease. */
    cr_assert(r.rows[0].ingress);
    cr_assert_eq(r.rows[0].body_len, 4);
    cr_assert_eq(memcmp(r.rows[0].body, "b\0dy", 4), 0);
    cr_assert_eq(r.rows[0].d.state, HK_DLV_PENDING);
    cr_assert_eq(r.rows[0].d.attempts, 2);
    cr_assert_eq(r.rows[0].d.next_us, now - 9 * SEC);
    cr_assert_eq(db_i64(A.db, "SELECT count(*) FROM webhooks WHERE dlease_owner = 7 AND dlease_us = %" PRId64,
                        lease), 3);

    /* The rest that qualifies, by due time then id: id[4] (its lease ended), id[7]. */
    cr_assert_eq(claim(&A, &r, 7, lease, 100, NULL, 0), 0);
    cr_assert_eq(r.n, 2);
    cr_assert_eq(r.rows[0].id, id[4]);
    cr_assert_eq(r.rows[1].id, id[7]);
    cr_assert_eq(claim(&A, &r, 8, lease, 100, NULL, 0), 0);
    cr_assert_eq(r.n, 0, "leased rows, a row not due, a delivered one and a NONE one were claimed");

    /* Another owner's lease keeps the row until it ends. */
    int64_t ends = now_us() + 2 * SEC;
    int64_t mine = insert(&A, "gh", true, 31, ends, NULL);
    cr_assert_eq(claim(&A, &r, 32, now_us() + 30 * SEC, 100, NULL, 0), 0);
    cr_assert_eq(r.n, 0);
    while (now_us() <= ends)
        usleep(50000);
    cr_assert_eq(claim(&A, &r, 32, now_us() + 30 * SEC, 100, NULL, 0), 0);
    cr_assert_eq(r.n, 1);
    cr_assert_eq(r.rows[0].id, mine);
    cr_assert_eq(db_i64(A.db, "SELECT dlease_owner FROM webhooks WHERE id = %" PRId64, mine), 32);

    /* Refused before sending: no owner, a limit out of 1..1000. */
    cr_assert_eq(claim(&A, &r, 0, lease, 10, NULL, 0), HK_EINVAL);
    cr_assert_eq(claim(&A, &r, 7, lease, 0, NULL, 0), HK_EINVAL);
    cr_assert_eq(claim(&A, &r, 7, lease, 1001, NULL, 0), HK_EINVAL);
    const char *bad[] = {"ok", NULL};
    cr_assert_eq(claim(&A, &r, 7, lease, 10, bad, 2), HK_EINVAL);
    cr_assert_eq(claim(&A, &r, 7, lease, 1000, NULL, 0), 0);
}

/* Two processes claiming at once lease disjoint rows, round after round. */
Test(pg_outbox, two_claimers_lease_disjoint_rows, .timeout = 180)
{
    enum { ROUNDS = 25, ROWS = 60 };
    store_open(&A, NULL);
    store_open_same(&B, &A);
    static uint8_t seen[ROUNDS * ROWS + 64];
    int64_t base = db_i64(A.db, "SELECT coalesce(max(id), 0) FROM webhooks");
    int total = 0, both = 0;
    for (int round = 0; round < ROUNDS; round++) {
        seed(&A, "gh", ROWS, 0, 1);
        int got = 0;
        for (;;) {
            struct hk_store_op oa, ob;
            static struct res ra, rb;
            int64_t lease = now_us() + 60 * SEC;
            claim_op(&oa, &ra, &A, 1001, lease, 7, NULL, 0);
            claim_op(&ob, &rb, &B, 2002, lease, 7, NULL, 0);
            cr_assert_eq(hk_store_submit(A.sl, &oa), 0);
            cr_assert_eq(hk_store_submit(B.sl, &ob), 0);
            struct res *rs[] = {&ra, &rb};
            wait_all(&A, &B, rs, 2);
            cr_assert_eq(ra.status, 0);
            cr_assert_eq(rb.status, 0);
            both += ra.n > 0 && rb.n > 0;
            for (int k = 0; k < 2; k++) {
                const struct res *r = rs[k];
                for (int i = 0; i < r->n; i++) {
                    int64_t off = r->rows[i].id - base;
                    cr_assert(off > 0 && off < (int64_t)sizeof seen, "id %" PRId64 " out of range", r->rows[i].id);
                    cr_assert_eq(seen[off], 0, "round %d: row %" PRId64 " leased twice", round, r->rows[i].id);
                    seen[off] = 1;
                    cr_assert_eq(db_i64(A.db, "SELECT dlease_owner FROM webhooks WHERE id = %" PRId64,
                                        r->rows[i].id), k == 0 ? 1001 : 2002);
                }
            }
            got += ra.n + rb.n;
            if (ra.n == 0 && rb.n == 0)
                break;
        }
        cr_assert_eq(got, ROWS, "round %d: %d of %d rows leased", round, got, ROWS);
        total += got;
    }
    cr_assert_eq(total, ROUNDS * ROWS);
    cr_assert_gt(both, 0, "the two claimers never both got rows in one round");
    cr_assert_eq(count_rows(&A, "dlease_owner IS NULL"), 0);
}

/* A FIFO source gives one row at a time: its oldest pending one. */
Test(pg_outbox, fifo_source_gives_its_oldest_pending_row_only)
{
    store_open(&A, NULL);
    const char *fifo[] = {"ff", "other"};
    int64_t f1 = insert(&A, "ff", true, 0, 0, NULL);
    int64_t f2 = insert(&A, "ff", true, 0, 0, NULL);
    int64_t f3 = insert(&A, "ff", true, 0, 0, NULL);
    int64_t n1 = insert(&A, "nn", true, 0, 0, NULL);
    int64_t n2 = insert(&A, "nn", true, 0, 0, NULL);
    int64_t lease = now_us() + 60 * SEC;
    struct res r;
    cr_assert_eq(claim(&A, &r, 5, lease, 100, fifo, 2), 0);
    cr_assert_eq(r.n, 3);
    cr_assert_eq(r.rows[0].id, f1);
    cr_assert_eq(r.rows[1].id, n1);
    cr_assert_eq(r.rows[2].id, n2);
    /* f1 is leased: nothing more of ff. */
    cr_assert_eq(claim(&A, &r, 5, lease, 100, fifo, 2), 0);
    cr_assert_eq(r.n, 0);
    /* Without the FIFO rule the others would go. */
    cr_assert_eq(claim(&A, &r, 6, lease, 1, NULL, 0), 0);
    cr_assert_eq(r.n, 1);
    cr_assert_eq(r.rows[0].id, f2);
    db_run(A.db, "UPDATE webhooks SET dlease_owner = NULL, dlease_us = NULL WHERE id = %" PRId64, f2);
    /* f1 delivered: f2 is next. */
    cr_assert_eq(settle(&A, f1, 5, HK_DLV_DELIVERED, 1, 200, NULL, 0), 0);
    cr_assert_eq(claim(&A, &r, 5, lease, 100, fifo, 2), 0);
    cr_assert_eq(r.n, 1);
    cr_assert_eq(r.rows[0].id, f2);
    /* f2 to retry later: still the oldest pending one, so f3 waits. */
    cr_assert_eq(settle(&A, f2, 5, HK_DLV_PENDING, 1, 503, "unavailable", now_us() + 60 * SEC), 0);
    cr_assert_eq(claim(&A, &r, 5, lease, 100, fifo, 2), 0);
    cr_assert_eq(r.n, 0);
    db_run(A.db, "UPDATE webhooks SET dnext_us = 0 WHERE id = %" PRId64, f2);
    cr_assert_eq(claim(&A, &r, 5, lease, 100, fifo, 2), 0);
    cr_assert_eq(r.n, 1);
    cr_assert_eq(r.rows[0].id, f2);
    /* f2 failed for good: f3 goes. */
    cr_assert_eq(settle(&A, f2, 5, HK_DLV_FAILED, 2, 400, "bad request", 0), 0);
    cr_assert_eq(claim(&A, &r, 5, lease, 100, fifo, 2), 0);
    cr_assert_eq(r.n, 1);
    cr_assert_eq(r.rows[0].id, f3);
}

/* ---- SETTLE, REDELIVER ---------------------------------------------------------------- */

Test(pg_outbox, settle_by_owner_stranger_gone_and_after_the_lease)
{
    store_open(&A, NULL);
    int64_t lease = now_us() + 60 * SEC;
    int64_t a = insert(&A, "gh", true, 1, lease, NULL);
    int64_t b = insert(&A, "gh", true, 1, lease, NULL);
    int64_t c = insert(&A, "gh", true, 1, lease, NULL);
    int64_t d = insert(&A, "gh", true, 0, 0, NULL);
    int64_t e = insert(&A, "gh", true, 1, lease, NULL);

    /* By the owner: written, lease ended. */
    int64_t t0 = now_us();
    cr_assert_eq(settle(&A, a, 1, HK_DLV_DELIVERED, 1, 202, NULL, 0), 0);
    struct got g;
    assert_delivered_once(&A, a, t0);
    cr_assert_eq(db_i64(A.db, "SELECT count(*) FROM webhooks WHERE id = %" PRId64
                              " AND dlease_owner IS NULL AND dlease_us IS NULL", a), 1);

    /* A retry: next time, status and error kept. */
    int64_t next = now_us() + 30 * SEC;
    cr_assert_eq(settle(&A, e, 1, HK_DLV_PENDING, 3, 503, "upstream said \"no\" \xc3\xa9", next), 0);
    cr_assert_eq(get(&A, e, &g), 0);
    cr_assert_eq(g.d.state, HK_DLV_PENDING);
    cr_assert_eq(g.d.attempts, 3);
    cr_assert_eq(g.d.last_status, 503);
    cr_assert_str_eq(g.err, "upstream said \"no\" \xc3\xa9");
    cr_assert_eq(g.d.last_error_len, strlen("upstream said \"no\" \xc3\xa9"));
    cr_assert_eq(g.d.next_us, next);

    /* By a stranger while the lease holds: refused, nothing changes. */
    cr_assert_eq(settle(&A, b, 2, HK_DLV_DELIVERED, 1, 200, NULL, 0), HK_ECONFLICT);
    cr_assert_eq(db_i64(A.db, "SELECT count(*) FROM webhooks WHERE id = %" PRId64
                              " AND dstate = 1 AND dattempts = 0 AND dlease_owner = 1 AND dupdated_us IS NULL", b), 1);

    /* Gone. */
    db_run(A.db, "DELETE FROM webhooks WHERE id = %" PRId64, c);
    cr_assert_eq(settle(&A, c, 1, HK_DLV_DELIVERED, 1, 200, NULL, 0), HK_ENOTFOUND);
    cr_assert_eq(settle(&A, INT64_MAX, 1, HK_DLV_DELIVERED, 1, 200, NULL, 0), HK_ENOTFOUND);

    /* Not leased at all: anyone's to settle. */
    cr_assert_eq(settle(&A, d, 3, HK_DLV_FAILED, 1, 410, "gone", 0), 0);
    cr_assert_eq(get(&A, d, &g), 0);
    cr_assert_eq(g.d.state, HK_DLV_FAILED);

    /* The lease ended and nobody took the row since: the owner settles it,
     * and so may another (a lease that ended is no lease). */
    db_run(A.db, "UPDATE webhooks SET dlease_us = %" PRId64 " WHERE id = %" PRId64, now_us() - SEC, b);
    cr_assert_eq(settle(&A, b, 1, HK_DLV_PENDING, 1, 0, "timed out", now_us()), 0);
    db_run(A.db, "UPDATE webhooks SET dlease_owner = 1, dlease_us = %" PRId64 " WHERE id = %" PRId64,
           now_us() - SEC, b);
    cr_assert_eq(settle(&A, b, 2, HK_DLV_DELIVERED, 2, 200, NULL, 0), 0);
    cr_assert_eq(get(&A, b, &g), 0);
    cr_assert_eq(g.d.state, HK_DLV_DELIVERED);
    cr_assert_eq(g.d.attempts, 2);
    cr_assert_eq(g.d.last_status, 200);

    /* Taken over by another claimer after our lease ended: theirs now. */
    int64_t ends = now_us() + 200000;
    int64_t f = insert(&A, "gh", true, 1, ends, NULL);
    while (now_us() <= ends)
        usleep(20000);
    struct res r;
    cr_assert_eq(claim(&A, &r, 2, now_us() + 60 * SEC, 10, NULL, 0), 0);
    cr_assert_eq(r.n, 1);
    cr_assert_eq(r.rows[0].id, f);
    cr_assert_eq(settle(&A, f, 1, HK_DLV_DELIVERED, 1, 200, NULL, 0), HK_ECONFLICT);
    cr_assert_eq(settle(&A, f, 2, HK_DLV_DELIVERED, 1, 200, NULL, 0), 0);

    /* Refused before sending. */
    cr_assert_eq(settle(&A, a, 1, HK_DLV_NONE, 1, 200, NULL, 0), HK_EINVAL);
    cr_assert_eq(settle(&A, a, 0, HK_DLV_DELIVERED, 1, 200, NULL, 0), HK_EINVAL);
    cr_assert_eq(settle(&A, a, 1, HK_DLV_DELIVERED, 1, 200, "bad \xff utf-8", 0), HK_EINVAL);
}

static int settle_batch(struct ostore *o, const struct hk_settle_item *items, size_t n, int64_t owner,
                        uint32_t *settled)
{
    struct hk_store_op op;
    struct res r;
    op_init(&op, &r, o, HK_OP_SETTLE);
    op.fwd.owner = owner;
    op.fwd.delivered = items;
    op.fwd.ndelivered = n;
    op.fwd.settled = 12345;
    int rc = run(o, &op);
    cr_assert_eq(r.n, 0, "SETTLE gave rows");
    if (settled)
        *settled = op.fwd.settled;
    return rc;
}

/* One statement for the rows a sink took: each under the lease rule, what
 * it may not write left alone, and the count of what it wrote. */
Test(pg_outbox, a_settle_batch_delivers_the_rows_it_may)
{
    store_open(&A, NULL);
    int64_t lease = now_us() + 60 * SEC;
    int64_t mine = insert(&A, "gh", true, 1, lease, NULL);
    int64_t free_row = insert(&A, "gh", true, 0, 0, NULL);
    int64_t theirs = insert(&A, "gh", true, 2, lease, NULL);
    int64_t ended = insert(&A, "gh", true, 3, now_us() - SEC, NULL);
    int64_t gone = insert(&A, "gh", true, 1, lease, NULL);
    db_run(A.db, "DELETE FROM webhooks WHERE id = %" PRId64, gone);
    struct hk_settle_item items[] = {
        {.id = mine, .attempts = 1, .status = 202},   {.id = free_row, .attempts = 3, .status = 200},
        {.id = theirs, .attempts = 1, .status = 204}, {.id = ended, .attempts = 2, .status = 201},
        {.id = gone, .attempts = 1, .status = 200},
    };
    int64_t t0 = now_us();
    uint32_t settled = 0;
    cr_assert_eq(settle_batch(&A, items, 5, 1, &settled), 0);
    cr_assert_eq(settled, 3, "mine, the unleased one and the one whose lease ended");
    struct got g;
    assert_delivered_once(&A, mine, t0);
    cr_assert_eq(get(&A, free_row, &g), 0);
    cr_assert_eq(g.d.state, HK_DLV_DELIVERED);
    cr_assert_eq(g.d.attempts, 3);
    cr_assert_eq(g.d.last_status, 200);
    cr_assert_eq(get(&A, ended, &g), 0);
    cr_assert_eq(g.d.last_status, 201);
    cr_assert_eq(db_i64(A.db, "SELECT count(*) FROM webhooks WHERE id = %" PRId64
                              " AND dstate = 1 AND dattempts = 0 AND dlease_owner = 2 AND dupdated_us IS NULL", theirs),
                 1, "another owner's lease: untouched");
    cr_assert_eq(count_rows(&A, "dlease_owner IN (1, 3)"), 0, "the leases written end");

    /* Refused whole before sending. */
    struct hk_settle_item big[HK_SETTLE_BATCH_MAX + 1];
    for (size_t i = 0; i < HK_SETTLE_BATCH_MAX + 1; i++)
        big[i] = (struct hk_settle_item){.id = theirs, .attempts = 1, .status = 200};
    cr_assert_eq(settle_batch(&A, big, HK_SETTLE_BATCH_MAX + 1, 2, NULL), HK_EINVAL);
    struct hk_settle_item bad = {.id = theirs, .attempts = 1, .status = 42};
    cr_assert_eq(settle_batch(&A, &bad, 1, 2, NULL), HK_EINVAL);
    cr_assert_eq(settle_batch(&A, items, 1, 0, NULL), HK_EINVAL);
    cr_assert_eq(count_rows(&A, "dstate = 1"), 1, "nothing written by a refused batch");

    /* A full batch, in one statement. */
    struct hk_settle_item full[HK_SETTLE_BATCH_MAX];
    for (size_t i = 0; i < HK_SETTLE_BATCH_MAX; i++)
        full[i] = (struct hk_settle_item){.id = insert(&A, "gl", true, 1, lease, NULL), .attempts = 1,
                                          .status = 200 + (int32_t)(i % 3)};
    cr_assert_eq(settle_batch(&A, full, HK_SETTLE_BATCH_MAX, 1, &settled), 0);
    cr_assert_eq(settled, HK_SETTLE_BATCH_MAX);
    cr_assert_eq(count_rows(&A, "source = 'gl' AND dstate = 2 AND dlast_status BETWEEN 200 AND 202"),
                 HK_SETTLE_BATCH_MAX);
}

/* The generic plan (as a prepared statement runs once PostgreSQL settles
 * on one) of `sql` prepared as name(types), executed with `args` (in a
 * transaction rolled back; ANALYZE when `analyze`): its lines, one per
 * line. */
static void generic_plan(PGconn *c, const char *name, const char *types, const char *sql, const char *args,
                         bool analyze, char *out, size_t cap)
{
    db_run(c, "SET plan_cache_mode = force_generic_plan");
    db_run(c, "PREPARE %s(%s) AS %s", name, types, sql);
    db_run(c, "BEGIN");
    char q[256];
    snprintf(q, sizeof q, "EXPLAIN %sEXECUTE %s(%s)", analyze ? "ANALYZE " : "", name, args);
    PGresult *r = db_exec(c, q);
    out[0] = '\0';
    for (int i = 0; i < PQntuples(r); i++) {
        size_t len = strlen(out);
        snprintf(out + len, cap - len, "%s\n", PQgetvalue(r, i, 0));
    }
    PQclear(r);
    db_run(c, "ROLLBACK");
    db_run(c, "DEALLOCATE %s", name);
    db_run(c, "RESET plan_cache_mode");
}

static void batch_plan(PGconn *c, const char *name, const char *sql, char *out, size_t cap)
{
    generic_plan(c, name, "int8[], int8, int8, int8[], int8[]", sql, "'{1,2}', 1, 1, '{1,1}', '{200,200}'", false,
                 out, cap);
}

/* On a new table (never analyzed: the planner assumes ten pages) the
 * batch's generic plan looks each id up through the primary key and
 * updates by ctid; the same update joined plainly hashes the ids and reads
 * the whole table, a plan PostgreSQL keeps as the table grows (the control
 * that shows this test can fail). And it stays so on a big table. */
Test(pg_outbox, a_settle_batch_plan_never_reads_the_whole_table)
{
    store_open(&A, NULL);
    const char *sql = hk__pg_stmt_sql("settle_many");
    cr_assert_not_null(sql);
    char plan[4096];
    batch_plan(A.db, "sm_new", sql, plan, sizeof plan);
    cr_assert_null(strstr(plan, "Seq Scan"), "%s", plan);
    cr_assert_null(strstr(plan, "Hash"), "%s", plan);
    cr_assert_not_null(strstr(plan, "Index Scan using webhooks_pkey"), "%s", plan);
    cr_assert_not_null(strstr(plan, "Tid Scan on webhooks"), "%s", plan);
    static const char plain[] =
        "WITH u AS (UPDATE webhooks AS w SET dstate = 2, dattempts = v.a, dlast_status = v.s"
        " FROM unnest($1::int8[], $4::int8[], $5::int8[]) AS v(id, a, s)"
        " WHERE w.id = v.id AND (w.dlease_owner IS NULL OR w.dlease_owner = $2 OR w.dlease_us < $3)"
        " RETURNING 1) SELECT count(*) FROM u";
    batch_plan(A.db, "sm_plain", plain, plan, sizeof plan);
    cr_assert_not_null(strstr(plan, "Seq Scan on webhooks"), "the control: %s", plan);
    db_run(A.db, "INSERT INTO webhooks(source, event_type, payload, received_at)"
                 " SELECT 's', 'e', '{}', now() FROM generate_series(1, 20000); ANALYZE webhooks");
    batch_plan(A.db, "sm_big", sql, plan, sizeof plan);
    cr_assert_null(strstr(plan, "Seq Scan"), "%s", plan);
    cr_assert_not_null(strstr(plan, "Tid Scan on webhooks"), "%s", plan);
}

/* The claim's generic plan, run (EXPLAIN ANALYZE), on the current table. */
static void claim_plan(PGconn *c, const char *name, char *out, size_t cap)
{
    const char *sql = hk__pg_stmt_sql("claim");
    cr_assert_not_null(sql);
    generic_plan(c, name, "int8, int8, int8, int8, text[]", sql, "1, 9000000000000000, 9000000000000000, 64, '{}'",
                 true, out, cap);
}

/* Statistics taken while few rows were pending, then a backlog: the claim
 * still walks the due index and stops at its limit (no sort of every
 * pending row). The control: with webhooks_pending_source as migration 4
 * made it, the same claim reads every pending row through it and sorts
 * them. */
Test(pg_outbox, a_claim_walks_the_due_rows_whatever_the_backlog, .timeout = 120)
{
    store_open(&A, NULL);
    db_run(A.db, "INSERT INTO webhooks(source, event_type, payload, received_at, dstate)"
                 " SELECT 's' || (i %% 3), 'e', '{}', now(), 2 FROM generate_series(1, 30000) AS i;"
                 " ANALYZE webhooks;"
                 " UPDATE webhooks SET dstate = 1, dnext_us = 0 WHERE id %% 2 = 0");
    char plan[8192];
    claim_plan(A.db, "cl_new", plan, sizeof plan);
    cr_assert_not_null(strstr(plan, "Index Scan using webhooks_due on webhooks"), "%s", plan);
    cr_assert_null(strstr(plan, "Sort Key: webhooks.dnext_us"), "%s", plan);
    cr_assert_not_null(strstr(plan, "rows=64 loops=1"), "%s", plan);
    db_run(A.db, "DROP INDEX webhooks_pending_source;"
                 " CREATE INDEX webhooks_pending_source ON webhooks(source, id) WHERE dstate = 1");
    claim_plan(A.db, "cl_old", plan, sizeof plan);
    cr_assert_not_null(strstr(plan, "Sort Key: webhooks.dnext_us"), "the control: %s", plan);
}

Test(pg_outbox, redeliver_makes_a_row_pending_again)
{
    store_open(&A, NULL);
    int64_t f = insert(&A, "gh", true, 4, now_us() + 60 * SEC, NULL);
    cr_assert_eq(settle(&A, f, 4, HK_DLV_FAILED, 7, 422, "unprocessable", 0), 0);
    int64_t t0 = now_us();
    struct hk_store_op op;
    struct res r;
    op_init(&op, &r, &A, HK_OP_REDELIVER);
    op.id = f;
    cr_assert_eq(run(&A, &op), 0);
    cr_assert_eq(r.n, 1);
    cr_assert_eq(r.rows[0].id, f);
    cr_assert_eq(r.rows[0].d.state, HK_DLV_PENDING);
    cr_assert_eq(r.rows[0].d.attempts, 0);
    cr_assert_eq(r.rows[0].d.last_status, 422);
    cr_assert_str_eq(r.rows[0].err, "unprocessable");
    cr_assert_geq(r.rows[0].d.next_us, t0);
    cr_assert_eq(db_i64(A.db, "SELECT count(*) FROM webhooks WHERE id = %" PRId64
                              " AND dlease_owner IS NULL AND dlease_us IS NULL", f), 1);
    /* Due at once: the next claim takes it. */
    struct res c;
    cr_assert_eq(claim(&A, &c, 9, now_us() + 60 * SEC, 10, NULL, 0), 0);
    cr_assert_eq(c.n, 1);
    cr_assert_eq(c.rows[0].id, f);

    /* A row never forwarded, and a leased one: pending, lease gone. */
    int64_t none = insert(&A, "gh", false, 0, 0, NULL);
    op_init(&op, &r, &A, HK_OP_REDELIVER);
    op.id = none;
    op.on_row = NULL;
    cr_assert_eq(run(&A, &op), 0);
    cr_assert_eq(db_i64(A.db, "SELECT dstate FROM webhooks WHERE id = %" PRId64, none), 1);
    op_init(&op, &r, &A, HK_OP_REDELIVER);
    op.id = f;
    cr_assert_eq(run(&A, &op), 0);
    cr_assert_eq(db_i64(A.db, "SELECT count(*) FROM webhooks WHERE id = %" PRId64
                              " AND dstate = 1 AND dlease_owner IS NULL", f), 1);

    op_init(&op, &r, &A, HK_OP_REDELIVER);
    op.id = INT64_MAX;
    cr_assert_eq(run(&A, &op), HK_ENOTFOUND);
    cr_assert_eq(r.n, 0);
}

/* ---- PURGE ------------------------------------------------------------------------------- */

/* The lowest id of the rows `where` selects. */
static int64_t min_id(struct ostore *o, const char *where)
{
    return db_i64(o->db, "SELECT min(id) FROM webhooks WHERE %s", where);
}

Test(pg_outbox, purge_by_age_in_batches)
{
    store_open(&A, NULL);
    seed(&A, "gh", 10, 10 * 86400, 2);
    seed(&A, "gh", 5, 0, 2);
    int64_t young = min_id(&A, "received_at > now() - interval '1 hour'");
    struct hk_purge_op p = {.before_us = now_us() - 86400 * SEC, .limit = 4};
    uint64_t sizes = 0;
    int64_t expect[] = {4, 4, 2, 0};
    for (int i = 0; i < 4; i++) {
        int64_t oldest_before = min_id(&A, "true");
        cr_assert_eq(purge(&A, &p), 0);
        cr_assert_eq(p.deleted, (uint64_t)expect[i], "batch %d: %" PRIu64 " deleted", i, p.deleted);
        cr_assert_gt(p.store_bytes, 0);
        sizes = p.store_bytes;
        if (expect[i] > 0)
            cr_assert_eq(min_id(&A, "true"), oldest_before + expect[i], "batch %d did not take the oldest", i);
    }
    cr_assert_eq(count_rows(&A, "true"), 5);
    cr_assert_eq(min_id(&A, "true"), young);
    cr_assert_eq(db_i64(A.db, "SELECT pg_total_relation_size('webhooks')"), (int64_t)sizes);

    /* No bound at all deletes nothing; a zero limit is refused. */
    struct hk_purge_op none = {.limit = 100};
    cr_assert_eq(purge(&A, &none), 0);
    cr_assert_eq(none.deleted, 0);
    struct hk_purge_op zero = {.before_us = now_us(), .limit = 0};
    cr_assert_eq(purge(&A, &zero), HK_EINVAL);
    struct hk_store_op op;
    struct res r;
    op_init(&op, &r, &A, HK_OP_PURGE);
    cr_assert_eq(run(&A, &op), HK_EINVAL, "a PURGE without its purge op");
}

Test(pg_outbox, purge_by_row_caps_global_and_per_source)
{
    store_open(&A, NULL);
    for (int i = 0; i < 10; i++) {
        seed(&A, "aa", 1, 0, 2);
        seed(&A, "bb", 1, 0, 2);
    }
    /* Per source: aa keeps its newest 3, bb is not touched. */
    int64_t aa_kept = db_i64(A.db, "SELECT min(id) FROM (SELECT id FROM webhooks WHERE source = 'aa'"
                                   " ORDER BY id DESC LIMIT 3) AS k");
    struct hk_purge_op p = {.keep_rows = 3, .source = "aa", .limit = 100};
    cr_assert_eq(purge(&A, &p), 0);
    cr_assert_eq(p.deleted, 7);
    cr_assert_eq(count_rows(&A, "source = 'aa'"), 3);
    cr_assert_eq(min_id(&A, "source = 'aa'"), aa_kept);
    cr_assert_eq(count_rows(&A, "source = 'bb'"), 10);
    cr_assert_eq(purge(&A, &p), 0);
    cr_assert_eq(p.deleted, 0);

    /* Global (no exceptions): the newest 5 of all rows stay, whatever their
     * source, in batches of 4. */
    int64_t kept = db_i64(A.db, "SELECT min(id) FROM (SELECT id FROM webhooks ORDER BY id DESC LIMIT 5) AS k");
    struct hk_purge_op g = {.keep_rows = 5, .limit = 4};
    cr_assert_eq(purge(&A, &g), 0);
    cr_assert_eq(g.deleted, 4);
    cr_assert_eq(purge(&A, &g), 0);
    cr_assert_eq(g.deleted, 4);
    cr_assert_eq(purge(&A, &g), 0);
    cr_assert_eq(g.deleted, 0);
    cr_assert_eq(count_rows(&A, "true"), 5);
    cr_assert_eq(min_id(&A, "true"), kept);

    /* Sources with rules of their own are out of the global count: the
     * newest 2 of the others stay, xx's newer rows do not push them out. */
    seed(&A, "xx", 4, 0, 2);
    const char *except[] = {"xx"};
    int64_t kept2 = db_i64(A.db, "SELECT min(id) FROM (SELECT id FROM webhooks WHERE source <> 'xx'"
                                 " ORDER BY id DESC LIMIT 2) AS k");
    struct hk_purge_op ex = {.keep_rows = 2, .except = except, .nexcept = 1, .limit = 100};
    cr_assert_eq(purge(&A, &ex), 0);
    cr_assert_eq(ex.deleted, 3);
    cr_assert_eq(count_rows(&A, "source = 'xx'"), 4);
    cr_assert_eq(count_rows(&A, "source <> 'xx'"), 2);
    cr_assert_eq(min_id(&A, "source <> 'xx'"), kept2);

    /* A cap above the table's size deletes nothing, and says so. */
    struct hk_purge_op big = {.keep_rows = UINT64_MAX, .limit = 100};
    cr_assert_eq(purge(&A, &big), 0);
    cr_assert_eq(big.deleted, 0);
    cr_assert_eq(big.keep_from, -1);

    /* The cap's bound (keep_from): found by the first batch and given back
     * by the next ones, which then delete below it without a walk. */
    for (int i = 0; i < 10; i++)
        seed(&A, "dd", 1, 0, 2);
    int64_t fourth = db_i64(A.db, "SELECT min(id) FROM (SELECT id FROM webhooks WHERE source = 'dd'"
                                  " ORDER BY id DESC LIMIT 4) AS k");
    struct hk_purge_op d = {.keep_rows = 4, .source = "dd", .limit = 2};
    cr_assert_eq(purge(&A, &d), 0);
    cr_assert_eq(d.deleted, 2);
    cr_assert_eq(d.keep_from, fourth, "the bound is the 4th newest row's id");
    for (int i = 0; i < 3; i++)
        seed(&A, "dd", 1, 0, 2);   /* newer rows: the bound given still holds */
    struct hk_purge_op d2 = {.keep_rows = 4, .source = "dd", .limit = 100, .keep_from = fourth};
    cr_assert_eq(purge(&A, &d2), 0);
    cr_assert_eq(d2.deleted, 4, "the rows below the bound given, not a new walk's");
    cr_assert_eq(d2.keep_from, fourth);
    cr_assert_eq(count_rows(&A, "source = 'dd'"), 7);
    struct hk_purge_op d3 = {.keep_rows = 1, .source = "dd", .limit = 100, .keep_from = -1};
    cr_assert_eq(purge(&A, &d3), 0);
    cr_assert_eq(d3.deleted, 0, "-1: the cap deletes nothing");
}

Test(pg_outbox, purge_oldest_except_and_pending_rows)
{
    store_open(&A, NULL);
    seed(&A, "aa", 3, 100, 2);
    seed(&A, "bb", 3, 100, 2);
    seed(&A, "cc", 3, 100, 1);   /* pending */
    seed(&A, "aa", 3, 0, 2);

    /* The oldest 4, in batches of 3. */
    int64_t first = min_id(&A, "true");
    struct hk_purge_op p = {.oldest = 4, .limit = 3};
    cr_assert_eq(purge(&A, &p), 0);
    cr_assert_eq(p.deleted, 3);
    cr_assert_eq(min_id(&A, "true"), first + 3);
    p.oldest = 1;   /* the caller counts down */
    cr_assert_eq(purge(&A, &p), 0);
    cr_assert_eq(p.deleted, 1);
    cr_assert_eq(min_id(&A, "true"), first + 4);
    cr_assert_eq(count_rows(&A, "source = 'bb'"), 2);

    /* Every source but bb and aa: old rows go, pending ones kept when asked. */
    const char *except[] = {"bb", "aa"};
    struct hk_purge_op q = {.before_us = now_us() - 10 * SEC, .except = except, .nexcept = 2,
                            .keep_pending = true, .limit = 100};
    cr_assert_eq(purge(&A, &q), 0);
    cr_assert_eq(q.deleted, 0, "a pending row went");
    q.keep_pending = false;
    cr_assert_eq(purge(&A, &q), 0);
    cr_assert_eq(q.deleted, 3);
    cr_assert_eq(count_rows(&A, "source = 'cc'"), 0);
    cr_assert_eq(count_rows(&A, "source = 'bb'"), 2);
    cr_assert_eq(count_rows(&A, "source = 'aa'"), 3);

    /* Only bb, by age: its old rows. Pending rows of a source kept, the
     * delivered ones behind them still go. */
    seed(&A, "bb", 2, 100, 1);
    seed(&A, "bb", 2, 100, 3);
    db_run(A.db, "UPDATE webhooks SET dstate = 1 WHERE id = (SELECT min(id) FROM webhooks WHERE source = 'bb')");
    struct hk_purge_op s = {.before_us = now_us() - 10 * SEC, .source = "bb", .keep_pending = true,
                            .limit = 100};
    cr_assert_eq(purge(&A, &s), 0);
    cr_assert_eq(s.deleted, 3);
    cr_assert_eq(count_rows(&A, "source = 'bb'"), 3);
    cr_assert_eq(count_rows(&A, "source = 'bb' AND dstate = 1"), 3);
    cr_assert_eq(count_rows(&A, "source = 'aa'"), 3);

    /* Everything else left alone (empty except list: every source), the
     * age bound ORed with a row cap. */
    int64_t young = min_id(&A, "received_at > now() - interval '10 seconds'");
    struct hk_purge_op all = {.before_us = now_us() - 10 * SEC, .keep_rows = 4, .limit = 100};
    cr_assert_eq(purge(&A, &all), 0);
    cr_assert_eq(all.deleted, 4, "old or beyond the newest 4");
    cr_assert_eq(count_rows(&A, "true"), 2);
    cr_assert_eq(min_id(&A, "true"), young + 1);
}

/* ---- LIST: the feed's reads and the delivery filter ----------------------------------- */

static void list_op(struct hk_store_op *op, struct res *r, const struct ostore *o)
{
    op_init(op, r, o, HK_OP_LIST);
    op->list.limit = 100;
}

static void assert_ids(const struct res *r, const int64_t *want, int n, const char *what)
{
    cr_assert_eq(r->n, n, "%s: %d rows, want %d", what, r->n, n);
    for (int i = 0; i < n; i++)
        cr_assert_eq(r->rows[i].id, want[i], "%s: row %d is %" PRId64 ", want %" PRId64, what, i, r->rows[i].id,
                     want[i]);
}

/* xmin <= xmax, and the bound on what ran at the read is at least xmin
 * (it is the read's own transaction, or a running one). */
static void assert_horizon(const struct res *r)
{
    cr_assert(r->horizon.valid);
    cr_assert_gt(r->horizon.xmin, 0);
    cr_assert_leq(r->horizon.xmin, r->horizon.xmax);
    cr_assert_geq(r->horizon.xip_max, r->horizon.xmin);
}

Test(pg_outbox, ascending_list_with_after_before_and_filters)
{
    store_open(&A, NULL);
    int64_t id[12];
    static const uint8_t sha[32] = {3};
    for (int i = 0; i < 12; i++) {
        struct hk_store_op op;
        struct res r;
        char dlv[16];
        op_init(&op, &r, &A, HK_OP_INSERT);
        op.row.source = i % 2 ? "aa" : "bb";
        op.row.source_len = 2;
        op.row.event_type = i % 3 ? "push" : "pull";
        op.row.event_type_len = 4;
        if (i % 4 == 0 || i == 3) {
            /* d0 twice, on two sources; d1, d2. */
            snprintf(dlv, sizeof dlv, "d%d", i == 3 ? 0 : i / 4);
            op.row.ingress = true;
            op.row.body = (const uint8_t *)"x";
            op.row.body_len = 1;
            op.row.body_sha256 = sha;
            op.row.delivery_id = dlv;
            op.row.delivery_id_len = strlen(dlv);
        }
        cr_assert_eq(run(&A, &op), 0);
        id[i] = r.rows[0].id;
    }
    struct hk_store_op op;
    struct res r;
    list_op(&op, &r, &A);
    op.list.ascending = true;
    cr_assert_eq(run(&A, &op), 0);
    assert_ids(&r, id, 12, "all, oldest first");
    assert_horizon(&r);

    list_op(&op, &r, &A);
    op.list.ascending = true;
    op.list.after = id[3];
    op.list.limit = 4;
    cr_assert_eq(run(&A, &op), 0);
    assert_ids(&r, id + 4, 4, "after, limit");
    assert_horizon(&r);

    list_op(&op, &r, &A);
    op.list.ascending = true;
    op.list.after = id[3];
    op.list.before = id[7];
    cr_assert_eq(run(&A, &op), 0);
    assert_ids(&r, id + 4, 3, "after and before");

    list_op(&op, &r, &A);
    op.list.ascending = true;
    op.list.after = id[2];
    op.list.source = "aa";
    op.list.source_len = 2;
    cr_assert_eq(run(&A, &op), 0);
    int64_t aa[] = {id[3], id[5], id[7], id[9], id[11]};
    assert_ids(&r, aa, 5, "source");

    list_op(&op, &r, &A);
    op.list.ascending = true;
    op.list.event_type = "pull";
    op.list.event_type_len = 4;
    op.list.source = "bb";
    op.list.source_len = 2;
    cr_assert_eq(run(&A, &op), 0);
    int64_t pull_bb[] = {id[0], id[6]};
    assert_ids(&r, pull_bb, 2, "source and event type");

    list_op(&op, &r, &A);
    op.list.ascending = true;
    op.list.delivery_id = "d0";
    op.list.delivery_id_len = 2;
    cr_assert_eq(run(&A, &op), 0);
    int64_t d0[] = {id[0], id[3]};
    assert_ids(&r, d0, 2, "delivery id");

    list_op(&op, &r, &A);
    op.list.ascending = true;
    op.list.received_after_us = 1;
    op.list.received_before_us = HK_STORE_TIME_MAX;
    op.list.after = id[9];
    cr_assert_eq(run(&A, &op), 0);
    assert_ids(&r, id + 10, 2, "time bounds");

    /* A stream, oldest first, batch after batch from where the last ended. */
    list_op(&op, &r, &A);
    op.list.ascending = true;
    op.list.stream = true;
    op.list.limit = 5;
    op.list.after = id[0];
    cr_assert_eq(run(&A, &op), 0);
    assert_ids(&r, id + 1, 11, "stream");
    cr_assert_eq(r.batches, 3);
    assert_horizon(&r);

    /* The newest-first list is as before. */
    list_op(&op, &r, &A);
    op.list.limit = 2;
    cr_assert_eq(run(&A, &op), 0);
    int64_t newest[] = {id[11], id[10]};
    assert_ids(&r, newest, 2, "descending");
    cr_assert_not(r.horizon.valid, "a descending list has no snapshot");
}

/* The snapshot after a read counts a transaction still running, a lone
 * insert whose id is at or above the snapshot's xmax included: its id is
 * not below xmin, and xip_max is at least it. */
Test(pg_outbox, feed_snapshot_sees_a_running_insert)
{
    store_open(&A, NULL);
    insert(&A, "gh", false, 0, 0, NULL);
    tx = db_connect(A.url);
    PQclear(db_exec(tx, "BEGIN"));
    PQclear(db_exec(tx, "INSERT INTO webhooks(source, event_type, received_at) VALUES('gh', 'e', now())"));
    int64_t xid = db_i64(tx, "SELECT pg_current_xact_id()::text::int8");
    struct hk_store_op op;
    struct res r;
    list_op(&op, &r, &A);
    op.list.ascending = true;
    cr_assert_eq(run(&A, &op), 0);
    cr_assert_eq(r.n, 1, "the uncommitted row was read");
    assert_horizon(&r);
    cr_assert_leq(r.horizon.xmin, (uint64_t)xid);
    cr_assert_geq(r.horizon.xip_max, (uint64_t)xid, "xmin %" PRIu64 " xmax %" PRIu64 " xip_max %" PRIu64 " xid %" PRId64, r.horizon.xmin, r.horizon.xmax, r.horizon.xip_max, xid);
    PQclear(db_exec(tx, "COMMIT"));
    PQfinish(tx);
    tx = NULL;
    list_op(&op, &r, &A);
    op.list.ascending = true;
    cr_assert_eq(run(&A, &op), 0);
    cr_assert_eq(r.n, 2);
    assert_horizon(&r);
    /* (Whether xmin passed it depends on the other tests on the cluster.) */
}

Test(pg_outbox, delivery_filter_in_both_orders)
{
    store_open(&A, NULL);
    /* States by row: NONE, PENDING, DELIVERED, FAILED, twice, on two sources. */
    int64_t id[8];
    for (int i = 0; i < 8; i++) {
        id[i] = insert(&A, i < 4 ? "aa" : "bb", i % 4 != 0, 0, 0, NULL);
        if (i % 4 >= 2)
            db_run(A.db, "UPDATE webhooks SET dstate = %d WHERE id = %" PRId64, i % 4, id[i]);
    }
    for (int state = HK_DLV_NONE; state <= HK_DLV_FAILED; state++) {
        for (int asc = 0; asc < 2; asc++) {
            for (int src = 0; src < 2; src++) {
                struct hk_store_op op;
                struct res r;
                list_op(&op, &r, &A);
                op.list.delivery = (uint8_t)(state + 1);
                op.list.ascending = asc;
                if (src) {
                    op.list.source = "bb";
                    op.list.source_len = 2;
                }
                cr_assert_eq(run(&A, &op), 0);
                int64_t want[2];
                int n = 0;
                if (!src)
                    want[n++] = id[asc ? state : 4 + state];
                want[n++] = id[asc || src ? 4 + state : state];
                char what[64];
                snprintf(what, sizeof what, "state %d, %s, %s", state, asc ? "ascending" : "descending",
                         src ? "source bb" : "any source");
                assert_ids(&r, want, n, what);
                for (int i = 0; i < r.n; i++)
                    cr_assert_eq(r.rows[i].d.state, state);
            }
        }
    }
    /* With an event type, and a keyset bound, newest first. */
    struct hk_store_op op;
    struct res r;
    list_op(&op, &r, &A);
    op.list.delivery = HK_DLV_FAILED + 1;
    op.list.event_type = "evt";
    op.list.event_type_len = 3;
    op.list.before = id[7];
    cr_assert_eq(run(&A, &op), 0);
    assert_ids(&r, &id[3], 1, "failed, event type, before");
    list_op(&op, &r, &A);
    op.list.delivery = 5;
    cr_assert_eq(run(&A, &op), HK_EINVAL);
}

/* ---- watch and announce ------------------------------------------------------------- */

static int wakes_b, wakes_c, wakes_a;

static void on_wake(void *ud)
{
    ++*(int *)ud;
}

/* Run the loops for up to `ms`, until *counter reaches `want` (0: the whole time). */
static void spin(int ms, int *counter, int want)
{
    int64_t end = hk_now_ms() + ms;
    while (hk_now_ms() < end && (!counter || *counter < want)) {
        struct ostore *os[] = {&A, &B, &C};
        for (int i = 0; i < 3; i++)
            if (os[i]->s)
                uv_run(&os[i]->loop, UV_RUN_NOWAIT);
        usleep(1000);
    }
}

Test(pg_outbox, watch_hears_announcements_of_its_schema_only)
{
    store_open(&A, NULL);
    store_open_same(&B, &A);
    store_open(&C, NULL);
    cr_assert_eq(A.s->vt->watch(A.sl, on_wake, &wakes_a), 0);
    cr_assert_eq(B.s->vt->watch(B.sl, on_wake, &wakes_b), 0);
    cr_assert_eq(C.s->vt->watch(C.sl, on_wake, &wakes_c), 0);
    cr_assert_eq(B.s->vt->watch(B.sl, on_wake, &wakes_b), HK_EINVAL, "a second watcher on one loop");
    /* Each one calls back once its LISTEN is in place. */
    spin(10000, &wakes_a, 1);
    spin(10000, &wakes_b, 1);
    spin(10000, &wakes_c, 1);
    cr_assert_eq(wakes_a, 1);
    cr_assert_eq(wakes_b, 1);
    cr_assert_eq(wakes_c, 1);
    for (int round = 0; round < 3; round++) {
        wakes_a = wakes_b = wakes_c = 0;
        A.s->vt->announce(A.sl);
        A.s->vt->announce(A.sl);   /* coalesced with the first */
        spin(5000, &wakes_b, 1);
        cr_assert_geq(wakes_b, 1, "round %d: the other store on the schema was not told", round);
        spin(300, NULL, 0);
        cr_assert_eq(wakes_c, 0, "round %d: a store on another schema was told", round);
        cr_assert_eq(wakes_a, 0, "round %d: the announcing store woke itself", round);
    }
    /* And the other way round. */
    wakes_a = 0;
    B.s->vt->announce(B.sl);
    spin(5000, &wakes_a, 1);
    cr_assert_eq(wakes_a, 1);
    /* Detach closes the listen connections: store_close checks the loops end empty. */
    store_close(&B);
    store_close(&C);
    store_close(&A);
}

Test(pg_outbox, watch_reconnects_after_its_backend_is_terminated, .timeout = 60)
{
    store_open(&A, NULL);
    store_open_same(&B, &A);
    cr_assert_eq(B.s->vt->watch(B.sl, on_wake, &wakes_b), 0);
    spin(10000, &wakes_b, 1);
    cr_assert_eq(wakes_b, 1);
    for (int round = 0; round < 2; round++) {
        struct pg_loop *pl = (struct pg_loop *)B.sl;
        cr_assert_eq(pl->listen.state, L_READY);
        int pid = PQbackendPID(pl->listen.pc);
        cr_assert_gt(pid, 0);
        cr_assert_eq(db_i64(A.db, "SELECT count(*) FROM pg_stat_activity WHERE pid = %d", pid), 1);
        wakes_b = 0;
        cr_assert_eq(db_i64(A.db, "SELECT pg_terminate_backend(%d)::int", pid), 1);
        /* Called back after the reconnect: announcements may have been missed. */
        spin(15000, &wakes_b, 1);
        cr_assert_geq(wakes_b, 1, "round %d: no call back after the reconnect", round);
        cr_assert_eq(pl->listen.state, L_READY);
        cr_assert_neq(PQbackendPID(pl->listen.pc), pid);
        /* And it hears again. */
        wakes_b = 0;
        A.s->vt->announce(A.sl);
        spin(5000, &wakes_b, 1);
        cr_assert_geq(wakes_b, 1, "round %d: deaf after the reconnect", round);
    }
}
