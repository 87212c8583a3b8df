/* SPDX-License-Identifier: MIT
 * Unit tests for the PostgreSQL store: without a server, the password
 * redaction of connection strings and the scrubbing of libpq messages
 * (store/pg_redact.c); with the server at HOOKD_TEST_DATABASE_URL (skipped
 * when unset), ingress rows through the store itself: byte-exact bodies,
 * dedup on the delivery id, two replicas racing on the same deliveries,
 * the migration from version 2, no row data in the logs, the lists' time
 * bounds and their plans, and SOURCE_STATS. */
#include <criterion/criterion.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <uv.h>

#include "core/clock.h"
#include "core/err.h"
#include "core/log.h"
#include "store/pg.h"
#include "store/pq_api.h"
#include "store/store.h"

TestSuite(pg_redact);

struct redact_case {
    const char *url;
    const char *want;
};

static const struct redact_case redact_cases[] = {
    /* URIs, both schemes */
    {"postgresql://u:secret@db.example:5432/hookd", "postgresql://u:***@db.example:5432/hookd"},
    {"postgres://u:secret@db/hookd?sslmode=require", "postgres://u:***@db/hookd?sslmode=require"},
    {"postgresql://u@db/hookd", "postgresql://u@db/hookd"},
    {"postgresql://db/hookd", "postgresql://db/hookd"},
    {"postgresql://", "postgresql://"},
    {"postgresql://u:@db/x", "postgresql://u:***@db/x"},
    /* percent-encoded and raw specials in the password */
    {"postgresql://u:p%40ss%2Fw@db/x", "postgresql://u:***@db/x"},
    {"postgresql://u:p@ss@db/x", "postgresql://u:***@db/x"},
    {"postgresql://u:a:b@h1:5432,h2:5433/x", "postgresql://u:***@h1:5432,h2:5433/x"},
    /* ?password= in the query, plain or encoded key */
    {"postgresql://u@db/x?password=secret&sslmode=disable",
     "postgresql://u@db/x?password=***&sslmode=disable"},
    {"postgresql://u@db/x?sslmode=disable&password=secret", "postgresql://u@db/x?sslmode=disable&password=***"},
    {"postgresql://u@db/x?pass%77ord=secret", "postgresql://u@db/x?pass%77ord=***"},
    {"postgresql://u:one@db/x?password=two", "postgresql://u:***@db/x?password=***"},
    /* key=value strings */
    {"host=db user=u password=secret dbname=x", "host=db user=u password=*** dbname=x"},
    {"host=db password = secret dbname=x", "host=db password = *** dbname=x"},
    {"host=db password='sec ret' dbname=x", "host=db password=*** dbname=x"},
    {"host=db password='it\\'s' dbname=x", "host=db password=*** dbname=x"},
    {"password=a\\ b host=db", "password=*** host=db"},
    {"host=db dbname=x", "host=db dbname=x"},
    {"", ""},
    /* unparsable: everything from the bad token on is hidden */
    {"host=db secretwithoutkey", "host=db ***"},
    {"host=db passwd", "host=db ***"},
};

Test(pg_redact, cases)
{
    /* A plain loop rather than a parameterized test: Criterion runs each
     * case in a new process, where pointers to these strings would dangle. */
    for (size_t i = 0; i < sizeof redact_cases / sizeof redact_cases[0]; i++) {
        const struct redact_case *c = &redact_cases[i];
        char out[256];
        hk_pg_redact(c->url, out, sizeof out);
        cr_expect_str_eq(out, c->want, "redact(\"%s\")", c->url);
    }
}

Test(pg_redact, truncates_and_terminates)
{
    char out[12];
    memset(out, 'x', sizeof out);
    hk_pg_redact("postgresql://u:secret@db/x", out, sizeof out);
    cr_assert_eq(strlen(out), sizeof out - 1);
    cr_assert_str_eq(out, "postgresql:");
    hk_pg_redact(NULL, out, sizeof out);
    cr_assert_str_eq(out, "");
}

Test(pg_redact, never_contains_the_password)
{
    /* Whatever the form, the secret itself is gone. */
    const char *urls[] = {
        "postgresql://user:Sup3rS3cret@h/db",
        "postgres://user:Sup3rS3cret@h:1,h2:2/db?x=1",
        "postgresql://user@h/db?password=Sup3rS3cret",
        "host=h password=Sup3rS3cret",
        "host=h password='Sup3rS3cret'",
        "host=h   password   =   Sup3rS3cret   user=u",
        "Sup3rS3cret",
        "host=h Sup3rS3cret",
    };
    for (size_t i = 0; i < sizeof urls / sizeof urls[0]; i++) {
        char out[256];
        hk_pg_redact(urls[i], out, sizeof out);
        cr_assert_null(strstr(out, "Sup3rS3cret"), "\"%s\" -> \"%s\"", urls[i], out);
    }
}

TestSuite(pg_scrub);

Test(pg_scrub, one_line_without_the_password)
{
    char out[256];
    hk_pg_scrub("postgresql://u:hunter2@db/x",
                "connection to server at \"db\" (10.0.0.1), port 5432 failed: FATAL:  "
                "password authentication failed for user \"u\" hunter2\n\tsecond line\n",
                out, sizeof out);
    cr_assert_str_eq(out, "connection to server at \"db\" (10.0.0.1), port 5432 failed: FATAL: "
                          "password authentication failed for user \"u\" *** second line");
}

Test(pg_scrub, decoded_and_quoted_forms)
{
    char out[256];
    hk_pg_scrub("postgresql://u:p%40ss@db/x", "invalid token \"p%40ss\" or p@ss", out, sizeof out);
    cr_assert_str_eq(out, "invalid token \"***\" or ***");
    hk_pg_scrub("host=db password='it\\'s here'", "saw it's here and 'it\\'s here'", out, sizeof out);
    cr_assert_null(strstr(out, "it's here"), "%s", out);
    cr_assert_null(strstr(out, "it\\'s here"), "%s", out);
    hk_pg_scrub("postgresql://u@db/x?password=abc%21", "abc! and abc%21", out, sizeof out);
    cr_assert_str_eq(out, "*** and ***");
}

Test(pg_scrub, no_password_leaves_the_message)
{
    char out[64];
    hk_pg_scrub("postgresql://u@db/x", "  could not connect\n", out, sizeof out);
    cr_assert_str_eq(out, "could not connect");
    hk_pg_scrub(NULL, NULL, out, sizeof out);
    cr_assert_str_eq(out, "");
}

Test(pg_scrub, drops_the_parts_that_quote_data)
{
    /* A server error as libpq formats it: the DETAIL quotes the row. */
    char out[256];
    hk_pg_scrub("postgresql://u:pw@db/x",
                "ERROR:  new row for relation \"webhooks\" violates check constraint \"c\"\n"
                "DETAIL:  Failing row contains (7, gh, push, BODY-BYTES, {\"x\":\"HDR\"}).\n"
                "HINT:  after\n",
                out, sizeof out);
    cr_assert_str_eq(out, "ERROR: new row for relation \"webhooks\" violates check constraint \"c\"");
    hk_pg_scrub(NULL, "ERROR:  boom\nCONTEXT:  unnamed portal parameter $4 = '...'\n", out, sizeof out);
    cr_assert_str_eq(out, "ERROR: boom");
    /* A value with newlines of its own: nothing after the DETAIL survives. */
    hk_pg_scrub(NULL, "ERROR:  dup\n  DETAIL:  Key (x)=(a\nb\nERROR:  c) exists\n", out, sizeof out);
    cr_assert_str_eq(out, "ERROR: dup");
    /* "DETAIL:" inside a line is the message's own text. */
    hk_pg_scrub(NULL, "could not connect: DETAIL: none\nsecond", out, sizeof out);
    cr_assert_str_eq(out, "could not connect: DETAIL: none second");
}

/* ---- the store on a real server (HOOKD_TEST_DATABASE_URL) --------------------- */

/* Each test makes a schema of its own on the cluster scripts/test.sh starts,
 * opens stores on it through their ops table, and checks behind their back
 * on a connection of its own (libpq through the store's own table). */
static struct {
    char schema[64];
    char url[1024];
    PGconn *db;
} srv;

static int64_t now_ms(void)
{
    return (int64_t)(hk_mono_ns() / 1000000);
}

static const char *base_url(void)
{
    const char *u = getenv("HOOKD_TEST_DATABASE_URL");
    if (!u || !*u)
        cr_skip_test("needs HOOKD_TEST_DATABASE_URL (scripts/test.sh sets it)");
    return u;
}

static PGconn *db_connect(const char *url)
{
    char err[256];
    cr_assert_eq(hk_pq_load(err, sizeof err), 0, "%s", err);
    const char *const kw[] = {"dbname", NULL};
    const char *const val[] = {url, NULL};
    PGconn *pc = hk_pq.PQconnectStartParams(kw, val, 1);
    cr_assert_not_null(pc);
    PostgresPollingStatusType r = hk_pq.PQstatus(pc) == CONNECTION_BAD ? PGRES_POLLING_FAILED
                                                                     : PGRES_POLLING_WRITING;
    while (r == PGRES_POLLING_READING || r == PGRES_POLLING_WRITING) {
        struct pollfd p = {hk_pq.PQsocket(pc), r == PGRES_POLLING_READING ? POLLIN : POLLOUT, 0};
        cr_assert_gt(poll(&p, 1, 10000), 0, "connecting timed out");
        r = hk_pq.PQconnectPoll(pc);
    }
    cr_assert_eq(r, PGRES_POLLING_OK, "connect: %s", hk_pq.PQerrorMessage(pc));
    return pc;
}

static void db_exec(PGconn *c, const char *sql)
{
    PGresult *r = hk_pq.PQexec(c, sql);
    ExecStatusType st = hk_pq.PQresultStatus(r);
    cr_assert(st == PGRES_COMMAND_OK || st == PGRES_TUPLES_OK, "%s: %s", sql, hk_pq.PQresultErrorMessage(r));
    hk_pq.PQclear(r);
}

static long db_count(PGconn *c, const char *sql)
{
    PGresult *r = hk_pq.PQexec(c, sql);
    cr_assert_eq(hk_pq.PQresultStatus(r), PGRES_TUPLES_OK, "%s: %s", sql, hk_pq.PQresultErrorMessage(r));
    long n = atol(hk_pq.PQgetvalue(r, 0, 0));
    hk_pq.PQclear(r);
    return n;
}

/* A fresh schema and a connection on it; `setup_sql` (or NULL) runs there
 * before any store opens. */
static void srv_open(const char *setup_sql)
{
    const char *base = base_url();
    static unsigned serial;
    hk_log_set_level(HK_LOG_WARN);
    snprintf(srv.schema, sizeof srv.schema, "hk_unit_%d_%u", (int)getpid(), serial++);
    PGconn *admin = db_connect(base);
    char sql[128];
    snprintf(sql, sizeof sql, "CREATE SCHEMA %s", srv.schema);
    db_exec(admin, sql);
    hk_pq.PQfinish(admin);
    /* The harness's way (tests/integ/harness.c): the schema as the session's
     * search_path, given in the URL. */
    snprintf(srv.url, sizeof srv.url, "%s%soptions=-csearch_path%%3D%s", base,
             strchr(base, '?') ? "&" : "?", srv.schema);
    cr_assert(strstr(base, "://") != NULL, "a URI is expected in HOOKD_TEST_DATABASE_URL");
    srv.db = db_connect(srv.url);
    db_exec(srv.db, "SET client_min_messages = warning");
    if (setup_sql)
        db_exec(srv.db, setup_sql);
}

static void srv_close(void)
{
    char sql[128];
    snprintf(sql, sizeof sql, "DROP SCHEMA IF EXISTS %s CASCADE", srv.schema);
    db_exec(srv.db, sql);
    hk_pq.PQfinish(srv.db);
    srv.db = NULL;
}

static struct hk_store *store_open(unsigned pool)
{
    struct hk_pg_config cfg = {.url = srv.url, .pool = pool, .queue_max = 1024, .timeout_ms = 10000,
                               .loops = 1};
    char err[512];
    struct hk_store *s = hk_pg_open(&cfg, err, sizeof err);
    cr_assert_not_null(s, "hk_pg_open: %s", err);
    return s;
}

/* A store attached to a loop of the calling thread. */
struct replica {
    struct hk_store *s;
    uv_loop_t loop;
    struct hk_store_loop *sl;
};

static void replica_attach(struct replica *r)
{
    cr_assert_eq(uv_loop_init(&r->loop), 0);
    cr_assert_eq(r->s->vt->loop_attach(r->s, &r->loop, &r->sl), 0);
}

static void replica_detach(struct replica *r)
{
    r->s->vt->loop_detach(r->sl);
    uv_run(&r->loop, UV_RUN_DEFAULT);
    cr_assert_eq(uv_loop_close(&r->loop), 0);
}

/* What an op's callbacks saw. */
struct seen {
    int rows, dones, status;
    bool replayed, ingress, has_sha;
    int64_t id, received_us;
    char body[64];
    size_t body_len;
    uint8_t sha[32];
    char delivery[64], ctype[64], headers[64], verified[64], client[64];
    int64_t ids[16];
    int nids;
};

static void seen_row(struct hk_store_op *op, const struct hk_webhook *row)
{
    struct seen *g = op->data;
    g->rows++;
    g->id = row->id;
    g->received_us = row->received_us;
    g->ingress = row->ingress;
    cr_assert_leq(row->body_len, sizeof g->body);
    if (row->body_len > 0)
        memcpy(g->body, row->body, row->body_len);
    g->body_len = row->body_len;
    g->has_sha = row->body_sha256 != NULL;
    if (g->has_sha)
        memcpy(g->sha, row->body_sha256, 32);
#define KEEP(dst, p, n) snprintf(dst, sizeof dst, "%.*s", (p) ? (int)(n) : 6, (p) ? (p) : "(null)")
    KEEP(g->delivery, row->delivery_id, row->delivery_id_len);
    KEEP(g->ctype, row->content_type, row->content_type_len);
    KEEP(g->headers, row->headers, row->headers_len);
    KEEP(g->verified, row->verified, row->verified_len);
    KEEP(g->client, row->client_addr, row->client_addr_len);
#undef KEEP
    if (g->nids < 16)
        g->ids[g->nids++] = row->id;
}

static void seen_done(struct hk_store_op *op)
{
    struct seen *g = op->data;
    g->dones++;
    g->status = op->status;
    g->replayed = op->replayed;
}

static const uint8_t digest[32] = {9, 8, 7, 6, 5, 4, 3, 2, 1, 0, 1, 2, 3, 4, 5, 6,
                                   7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 21, 0};

static void op_hook(struct hk_store_op *op, struct seen *g, const char *source, const char *delivery,
                    const void *body, size_t n)
{
    memset(op, 0, sizeof *op);
    memset(g, 0, sizeof *g);
    op->kind = HK_OP_INSERT;
    op->on_row = seen_row;
    op->on_done = seen_done;
    op->data = g;
    struct hk_webhook *w = &op->row;
    w->source = source;
    w->source_len = strlen(source);
    w->event_type = "push";
    w->event_type_len = 4;
    w->ingress = true;
    w->body = body;
    w->body_len = n;
    w->body_sha256 = digest;
    w->content_type = "application/octet-stream";
    w->content_type_len = strlen(w->content_type);
    w->delivery_id = delivery;
    w->delivery_id_len = delivery ? strlen(delivery) : 0;
    w->headers = "{\"x-a\":\"b\"}";
    w->headers_len = strlen(w->headers);
    w->verified = "{\"scheme\":\"stripe\",\"secret\":\"env:S\"}";
    w->verified_len = strlen(w->verified);
    w->client_addr = "198.51.100.4";
    w->client_addr_len = strlen(w->client_addr);
}

/* Submit and run the loop until on_done. */
static void run(struct replica *r, struct hk_store_op *op)
{
    struct seen *g = op->data;
    cr_assert_eq(hk_store_submit(r->sl, op), 0);
    int64_t deadline = now_ms() + 10000;
    while (g->dones == 0) {
        cr_assert_lt(now_ms(), deadline, "no answer after 10 s");
        uv_run(&r->loop, UV_RUN_ONCE);
    }
    cr_assert_eq(g->dones, 1);
}

static void assert_hook(const struct seen *g, const void *body, size_t n, const char *delivery)
{
    cr_assert(g->ingress);
    cr_assert_eq(g->body_len, n);
    cr_assert(n == 0 || memcmp(g->body, body, n) == 0, "the body is not byte-exact");
    cr_assert(g->has_sha);
    cr_assert_arr_eq(g->sha, digest, 32);
    cr_assert_str_eq(g->delivery, delivery ? delivery : "(null)");
    cr_assert_str_eq(g->ctype, "application/octet-stream");
    cr_assert_str_eq(g->headers, "{\"x-a\":\"b\"}");
    cr_assert_str_eq(g->verified, "{\"scheme\":\"stripe\",\"secret\":\"env:S\"}");
    cr_assert_str_eq(g->client, "198.51.100.4");
}

TestSuite(pg_server, .timeout = 120);

Test(pg_server, ingress_rows_round_trip_and_dedup)
{
    srv_open(NULL);
    struct replica r = {.s = store_open(1)};
    replica_attach(&r);
    static const char body[] = "\0\x01\xff\xfe{\"k\":\"\\u0000\"}\r\n";
    struct hk_store_op op;
    struct seen a, g;
    op_hook(&op, &a, "gh", "d-1", body, sizeof body - 1);
    run(&r, &op);
    cr_assert_eq(a.status, 0);
    cr_assert_not(a.replayed);
    assert_hook(&a, body, sizeof body - 1, "d-1");

    /* Again, another body: the original, nothing stored. */
    op_hook(&op, &g, "gh", "d-1", "other", 5);
    run(&r, &op);
    cr_assert_eq(g.status, 0);
    cr_assert(g.replayed);
    cr_assert_eq(g.id, a.id);
    cr_assert_eq(g.received_us, a.received_us);
    /* (Only the id and time come back for a duplicate; a GET shows the
     * original body, below.) */

    /* Per source; an empty body is an empty bytea; no id never dedups. */
    struct seen d, e, f;
    op_hook(&op, &d, "stripe", "d-1", "x", 1);
    run(&r, &op);
    cr_assert_not(d.replayed);
    op_hook(&op, &e, "gh", NULL, NULL, 0);
    run(&r, &op);
    op_hook(&op, &f, "gh", NULL, NULL, 0);
    run(&r, &op);
    cr_assert_eq(e.status, 0);
    cr_assert_eq(f.status, 0);
    cr_assert_neq(e.id, f.id);

    /* Two of a new delivery in one pipeline group (one transaction): the
     * second finds the first, not yet committed, and says so. */
    struct hk_store_op two[2];
    struct seen t0, t1;
    op_hook(&two[0], &t0, "gh", "d-2", "one", 3);
    op_hook(&two[1], &t1, "gh", "d-2", "two", 3);
    cr_assert_eq(hk_store_submit(r.sl, &two[0]), 0);
    run(&r, &two[1]);
    while (t0.dones == 0)
        uv_run(&r.loop, UV_RUN_ONCE);
    cr_assert_eq(t0.status, 0);
    cr_assert_eq(t1.status, 0);
    cr_assert_not(t0.replayed);
    cr_assert(t1.replayed);
    cr_assert_eq(t1.id, t0.id);

    /* GET and LIST read every field back. */
    memset(&op, 0, sizeof op);
    memset(&g, 0, sizeof g);
    op.kind = HK_OP_GET;
    op.id = a.id;
    op.on_row = seen_row;
    op.on_done = seen_done;
    op.data = &g;
    run(&r, &op);
    cr_assert_eq(g.status, 0);
    assert_hook(&g, body, sizeof body - 1, "d-1");
    cr_assert_eq(g.received_us, a.received_us);
    op.id = e.id;
    memset(&g, 0, sizeof g);
    run(&r, &op);
    assert_hook(&g, NULL, 0, NULL);

    memset(&op, 0, sizeof op);
    memset(&g, 0, sizeof g);
    op.kind = HK_OP_LIST;
    op.list.delivery_id = "d-1";
    op.list.delivery_id_len = 3;
    op.list.limit = 10;
    op.on_row = seen_row;
    op.on_done = seen_done;
    op.data = &g;
    run(&r, &op);
    cr_assert_eq(g.status, 0);
    cr_assert_eq(g.nids, 2);
    cr_assert_eq(g.ids[0], d.id);
    cr_assert_eq(g.ids[1], a.id);
    memset(&g, 0, sizeof g);
    op.list.source = "gh";
    op.list.source_len = 2;
    op.list.event_type = "push";
    op.list.event_type_len = 4;
    run(&r, &op);
    cr_assert_eq(g.nids, 1);
    assert_hook(&g, body, sizeof body - 1, "d-1");

    replica_detach(&r);
    r.s->vt->close(r.s);
    cr_assert_eq(db_count(srv.db, "SELECT count(*) FROM webhooks"), 5);
    cr_assert_eq(db_count(srv.db, "SELECT count(*) FROM webhooks WHERE body = ''::bytea"), 2);
    cr_assert_eq(db_count(srv.db, "SELECT count(*) FROM webhooks WHERE payload IS NULL"), 5);

    /* The delivery-id filter has an index to use (sequential scans made
     * dear: the table is too small for the planner to want one). With the
     * source too, (source, id) may serve as well as the unique index: on
     * five rows the planner prefers the one that needs no sort. */
    db_exec(srv.db, "SET enable_seqscan = off");
    static const struct {
        const char *where;
        const char *want;
    } plans[] = {
        {"delivery_id = 'd-1'", "using webhooks_delivery on"},
        {"source = 'gh' AND delivery_id = 'd-1'", "using webhooks_"},
    };
    for (size_t k = 0; k < sizeof plans / sizeof plans[0]; k++) {
        char sql[256];
        snprintf(sql, sizeof sql, "EXPLAIN SELECT id FROM webhooks WHERE %s AND id < 100 ORDER BY id DESC LIMIT 5",
                 plans[k].where);
        PGresult *res = hk_pq.PQexec(srv.db, sql);
        cr_assert_eq(hk_pq.PQresultStatus(res), PGRES_TUPLES_OK);
        bool found = false;
        for (int i = 0; i < hk_pq.PQntuples(res); i++)
            found |= strstr(hk_pq.PQgetvalue(res, i, 0), plans[k].want) != NULL;
        hk_pq.PQclear(res);
        cr_assert(found, "%s: no \"%s\" in its plan", plans[k].where, plans[k].want);
    }
    srv_close();
}

/* Two hookd processes on one database, as two stores with pools of their
 * own, each on its own thread, submitting the same deliveries at once:
 * every delivery is stored once, and both get that row. */
enum { RACE_N = 300, RACE_WAVE = 20 };
_Static_assert(RACE_N % RACE_WAVE == 0, "whole waves");

struct racer {
    struct replica r;
    uv_barrier_t *start;
    int64_t ids[RACE_N];
    bool replayed[RACE_N];
    int failures;    /* checked on the main thread: Criterion asserts belong there */
};

static void racer_main(void *arg)
{
    struct racer *w = arg;
    static __thread struct hk_store_op ops[RACE_N];
    static __thread struct seen gs[RACE_N];
    static __thread char dlv[RACE_N][16];
    if (uv_loop_init(&w->r.loop) != 0 || w->r.s->vt->loop_attach(w->r.s, &w->r.loop, &w->r.sl) != 0) {
        w->failures++;
        for (int base = 0; base < RACE_N; base += RACE_WAVE)
            uv_barrier_wait(w->start);   /* the other one waits for us */
        return;
    }
    for (int i = 0; i < RACE_N; i++) {
        snprintf(dlv[i], sizeof dlv[i], "evt_%d", i);
        op_hook(&ops[i], &gs[i], "race", dlv[i], dlv[i], strlen(dlv[i]));
    }
    /* In waves that start together: the same deliveries are in flight on
     * both replicas at once, wave after wave. */
    int64_t deadline = now_ms() + 30000;
    for (int base = 0; base < RACE_N; base += RACE_WAVE) {
        uv_barrier_wait(w->start);
        for (int i = base; i < base + RACE_WAVE; i++)
            if (hk_store_submit(w->r.sl, &ops[i]) != 0)
                w->failures++;
        for (int i = base; i < base + RACE_WAVE; i++)
            while (gs[i].dones == 0 && now_ms() < deadline)
                uv_run(&w->r.loop, UV_RUN_ONCE);
    }
    for (int i = 0; i < RACE_N; i++) {
        if (gs[i].dones != 1 || gs[i].status != 0 || gs[i].rows != 1 || gs[i].body_len != strlen(dlv[i]) ||
            memcmp(gs[i].body, dlv[i], gs[i].body_len) != 0)
            w->failures++;
        w->ids[i] = gs[i].id;
        w->replayed[i] = gs[i].replayed;
    }
    w->r.s->vt->loop_detach(w->r.sl);
    uv_run(&w->r.loop, UV_RUN_DEFAULT);
    if (uv_loop_close(&w->r.loop) != 0)
        w->failures++;
}

Test(pg_server, two_replicas_racing_store_each_delivery_once)
{
    srv_open(NULL);
    static struct racer w[2];
    uv_barrier_t start;
    cr_assert_eq(uv_barrier_init(&start, 2), 0);
    for (int k = 0; k < 2; k++) {
        memset(&w[k], 0, sizeof w[k]);
        w[k].r.s = store_open(3);
        w[k].start = &start;
    }
    uv_thread_t t[2];
    for (int k = 0; k < 2; k++)
        cr_assert_eq(uv_thread_create(&t[k], racer_main, &w[k]), 0);
    for (int k = 0; k < 2; k++)
        cr_assert_eq(uv_thread_join(&t[k]), 0);
    uv_barrier_destroy(&start);
    for (int k = 0; k < 2; k++) {
        w[k].r.s->vt->close(w[k].r.s);
        cr_assert_eq(w[k].failures, 0, "replica %d: %d ops went wrong", k, w[k].failures);
    }
    for (int i = 0; i < RACE_N; i++) {
        cr_assert_eq(w[0].ids[i], w[1].ids[i], "delivery %d: two rows", i);
        cr_assert_neq(w[0].replayed[i], w[1].replayed[i], "delivery %d: exactly one stored it", i);
    }
    cr_assert_eq(db_count(srv.db, "SELECT count(*) FROM webhooks"), RACE_N);
    cr_assert_eq(db_count(srv.db, "SELECT count(DISTINCT delivery_id) FROM webhooks"), RACE_N);
    srv_close();
}

/* Migrations 1 and 2 as released, with rows: the store migrates the schema
 * to 3 and reads the old rows as envelope rows. */
Test(pg_server, migrates_a_version_2_schema_with_rows)
{
    srv_open("CREATE TABLE schema_version(version integer NOT NULL);"
             "INSERT INTO schema_version(version) VALUES(2);"
             "CREATE TABLE webhooks("
             " id bigint GENERATED BY DEFAULT AS IDENTITY PRIMARY KEY,"
             " source text NOT NULL,"
             " event_type text NOT NULL,"
             " payload text,"
             " received_at timestamptz NOT NULL,"
             " idem_key text);"
             "CREATE UNIQUE INDEX webhooks_idem ON webhooks(source, idem_key)"
             " WHERE idem_key IS NOT NULL;"
             "CREATE INDEX webhooks_source_id ON webhooks(source, id);"
             "CREATE INDEX webhooks_event_type_id ON webhooks(event_type, id);"
             "CREATE TABLE api_tokens("
             " name text PRIMARY KEY CHECK (octet_length(name) BETWEEN 1 AND 64),"
             " hash bytea NOT NULL UNIQUE CHECK (octet_length(hash) = 32),"
             " scopes integer NOT NULL,"
             " created_at timestamptz NOT NULL,"
             " expires_at timestamptz,"
             " revoked_at timestamptz);"
             "CREATE TABLE sessions("
             " hash bytea PRIMARY KEY CHECK (octet_length(hash) = 32),"
             " subject text NOT NULL,"
             " scopes integer NOT NULL,"
             " csrf_hash bytea NOT NULL CHECK (octet_length(csrf_hash) = 32),"
             " expires_at timestamptz NOT NULL);"
             "CREATE INDEX sessions_expires ON sessions(expires_at);"
             "INSERT INTO webhooks(source, event_type, payload, received_at, idem_key)"
             " VALUES('gh', 'push', '{\"n\":1}', timestamptz 'epoch' + interval '42 microseconds', 'k1'),"
             " ('gh', 'issue', NULL, now(), NULL)");
    struct replica r = {.s = store_open(1)};
    replica_attach(&r);
    cr_assert_eq(db_count(srv.db, "SELECT version FROM schema_version"), 5);
    cr_assert_eq(db_count(srv.db, "SELECT count(*) FROM schema_version"), 1);
    cr_assert_eq(db_count(srv.db, "SELECT count(*) FROM pg_indexes WHERE schemaname = current_schema()"
                                  " AND indexname IN ('webhooks_delivery', 'webhooks_delivery_id')"), 1);

    struct hk_store_op op;
    struct seen g = {0};
    op.kind = HK_OP_GET;
    memset(&op, 0, sizeof op);
    op.kind = HK_OP_GET;
    op.id = 1;
    op.on_row = seen_row;
    op.on_done = seen_done;
    op.data = &g;
    run(&r, &op);
    cr_assert_eq(g.status, 0);
    cr_assert_not(g.ingress);
    cr_assert_not(g.has_sha);
    cr_assert_eq(g.received_us, 42);
    cr_assert_str_eq(g.delivery, "(null)");

    /* The old key still replays; ingress rows go in beside the old ones. */
    memset(&op, 0, sizeof op);
    memset(&g, 0, sizeof g);
    op.kind = HK_OP_INSERT;
    op.row.source = "gh";
    op.row.source_len = 2;
    op.row.event_type = "push";
    op.row.event_type_len = 4;
    op.idem_key = "k1";
    op.on_row = seen_row;
    op.on_done = seen_done;
    op.data = &g;
    run(&r, &op);
    cr_assert(g.replayed);
    cr_assert_eq(g.id, 1);
    op_hook(&op, &g, "gh", "d-1", "new", 3);
    run(&r, &op);
    cr_assert_eq(g.status, 0);
    cr_assert_not(g.replayed);
    cr_assert_gt(g.id, 2);

    replica_detach(&r);
    r.s->vt->close(r.s);
    cr_assert_eq(db_count(srv.db, "SELECT count(*) FROM webhooks WHERE body IS NULL"), 2);
    cr_assert_eq(db_count(srv.db, "SELECT count(*) FROM webhooks"), 3);
    srv_close();
}

/* A statement the server refuses: logged by its primary message, never
 * the DETAIL that quotes the row (here a trigger puts the body there). */
Test(pg_server, refused_row_is_not_logged)
{
    srv_open(NULL);
    struct replica r = {.s = store_open(1)};
    replica_attach(&r);
    db_exec(srv.db, "CREATE FUNCTION poison() RETURNS trigger LANGUAGE plpgsql AS $$"
                    " BEGIN IF NEW.source = 'poison' THEN RAISE EXCEPTION 'poisoned row'"
                    " USING ERRCODE = 'check_violation', DETAIL = 'body ' || encode(NEW.body, 'escape'),"
                    " HINT = NEW.headers; END IF; RETURN NEW; END $$;"
                    "CREATE TRIGGER poison BEFORE INSERT ON webhooks FOR EACH ROW EXECUTE FUNCTION poison()");
    char path[] = "/tmp/hk_unit_pglog_XXXXXX";
    int fd = mkstemp(path);
    cr_assert_geq(fd, 0);
    int saved = dup(STDERR_FILENO);
    dup2(fd, STDERR_FILENO);
    struct hk_store_op op;
    struct seen g;
    op_hook(&op, &g, "poison", "d-1", "SECRET-BODY", 11);
    op.row.headers = "{\"authorization\":\"SECRET-HEADER\"}";
    op.row.headers_len = strlen(op.row.headers);
    run(&r, &op);
    dup2(saved, STDERR_FILENO);
    close(saved);
    cr_assert_eq(g.status, HK_EINVAL);
    char log[8192];
    ssize_t n = pread(fd, log, sizeof log - 1, 0);
    close(fd);
    unlink(path);
    cr_assert_gt(n, 0);
    log[n] = '\0';
    cr_assert(strstr(log, "poisoned row") != NULL, "%s", log);
    cr_assert_null(strstr(log, "SECRET"), "%s", log);
    replica_detach(&r);
    r.s->vt->close(r.s);
    srv_close();
}

/* ---- time bounds and per-source figures (GraphQL) ------------------------- */

static void list_timed(struct replica *r, struct seen *g, const char *source, int64_t after, int64_t before_us,
                       uint32_t limit)
{
    struct hk_store_op op;
    memset(&op, 0, sizeof op);
    memset(g, 0, sizeof *g);
    op.kind = HK_OP_LIST;
    op.list.source = source;
    op.list.source_len = source ? strlen(source) : 0;
    op.list.received_after_us = after;
    op.list.received_before_us = before_us;
    op.list.limit = limit;
    op.on_row = seen_row;
    op.on_done = seen_done;
    op.data = g;
    run(r, &op);
    cr_assert_eq(g->status, 0);
}

/* Exclusive bounds, to the microsecond, alone or together, beside the
 * other filters; far dates are clamped, not refused. */
Test(pg_server, list_time_bounds_are_exclusive)
{
    srv_open(NULL);
    struct replica r = {.s = store_open(1)};
    replica_attach(&r);
    /* Rows 1..10, received 1 ms apart from 2023-11-14T22:13:20.000001Z on,
     * in sources a (odd ids) and b. */
    db_exec(srv.db, "INSERT INTO webhooks(source, event_type, payload, received_at)"
                    " SELECT CASE WHEN i % 2 = 1 THEN 'a' ELSE 'b' END, 'e', '{}',"
                    " timestamptz 'epoch' + (1700000000000001 + i * 1000) * interval '1 microsecond'"
                    " FROM generate_series(1, 10) AS i ORDER BY i");
#define AT(i) (INT64_C(1700000000000001) + (i) * 1000)
    struct seen g;
    list_timed(&r, &g, NULL, AT(3), AT(7), 0);
    cr_assert_eq(g.nids, 3);
    cr_assert_eq(g.ids[0], 6);
    cr_assert_eq(g.ids[1], 5);
    cr_assert_eq(g.ids[2], 4);
    cr_assert_eq(g.received_us, AT(4), "exact to the microsecond");
    list_timed(&r, &g, NULL, AT(3) - 1, AT(7) + 1, 0);
    cr_assert_eq(g.nids, 5, "one microsecond either side takes both ends in");
    list_timed(&r, &g, NULL, AT(8), 0, 0);
    cr_assert_eq(g.nids, 2);
    cr_assert_eq(g.ids[0], 10);
    list_timed(&r, &g, NULL, 0, AT(2), 0);
    cr_assert_eq(g.nids, 1);
    cr_assert_eq(g.ids[0], 1);
    list_timed(&r, &g, "a", AT(2), AT(9), 2);
    cr_assert_eq(g.nids, 2);
    cr_assert_eq(g.ids[0], 7);
    cr_assert_eq(g.ids[1], 5);
    list_timed(&r, &g, "b", AT(10), 0, 0);
    cr_assert_eq(g.nids, 0);
    list_timed(&r, &g, NULL, INT64_MIN, INT64_MAX, 0);
    cr_assert_eq(g.nids, 10, "clamped bounds the server can convert");
    list_timed(&r, &g, NULL, HK_STORE_TIME_MAX, 0, 0);
    cr_assert_eq(g.nids, 0);
    list_timed(&r, &g, NULL, 0, HK_STORE_LIST_TIME_MIN, 0);
    cr_assert_eq(g.nids, 0);
    list_timed(&r, &g, NULL, -1, 0, 0);
    cr_assert_eq(g.nids, 10, "before 1970 is a time too");
#undef AT
    replica_detach(&r);
    r.s->vt->close(r.s);
    srv_close();
}

/* The bounds change no access path: on a table the planner has statistics
 * for, every list statement (generic plan: how a prepared statement runs
 * once PostgreSQL settles on one) walks an index backwards by id, with the
 * bounds as without them: no sequential scan, no bitmap, no sort (the
 * delivery-id variants sort their handful of rows either way). Written
 * plainly, the same bounds make some of them read a whole event type and
 * sort it: the control that shows this test can fail. The statements are
 * pg_sql.c's, COLS aside. */
static void plan_scans(const char *sql, char *out, size_t cap)
{
    PGresult *res = hk_pq.PQexec(srv.db, sql);
    cr_assert_eq(hk_pq.PQresultStatus(res), PGRES_TUPLES_OK, "%s", hk_pq.PQresultErrorMessage(res));
    out[0] = '\0';
    for (int i = 0; i < hk_pq.PQntuples(res); i++) {
        const char *line = hk_pq.PQgetvalue(res, i, 0);
        if (!strstr(line, "Scan") && !strstr(line, "Sort"))
            continue;
        /* The node's name and index, without its costs. */
        const char *p = line;
        while (*p == ' ' || *p == '-' || *p == '>')
            p++;
        size_t n = strcspn(p, "(");
        size_t len = strlen(out);
        snprintf(out + len, cap - len, "%.*s;", (int)n, p);
    }
    hk_pq.PQclear(res);
}

Test(pg_server, list_time_bounds_keep_every_plan)
{
    srv_open(NULL);
    struct replica r = {.s = store_open(1)};
    replica_attach(&r);
    replica_detach(&r);
    r.s->vt->close(r.s);
    db_exec(srv.db, "INSERT INTO webhooks(source, event_type, payload, received_at, delivery_id)"
                    " SELECT 's' || (i % 50), 'e' || (i / 1000), '{}', now(), 'd' || i"
                    " FROM generate_series(1, 50000) AS i; ANALYZE webhooks");
    db_exec(srv.db, "SET plan_cache_mode = force_generic_plan");
    static const char *const where[8] = {
        "", "source = $1 AND ", "event_type = $2 AND ", "source = $1 AND event_type = $2 AND ",
        "delivery_id = $5 AND ", "source = $1 AND delivery_id = $5 AND ", "event_type = $2 AND delivery_id = $5 AND ",
        "source = $1 AND event_type = $2 AND delivery_id = $5 AND ",
    };
    static const char *const bounds[3] = {
        "$6 IS NULL AND $7 IS NULL AND",                        /* none (the parameters must be used) */
        "(received_at > $6 AND received_at < $7)::int <> 0 AND", /* pg_sql.c's LIST_TIME */
        "received_at > $6 AND received_at < $7 AND",            /* plainly: the control */
    };
    int plain_sorts = 0;
    for (int v = 0; v < 8; v++) {
        for (int t = 0; t < 3; t++) {
            char sql[1024], plan[1024];
            snprintf(sql, sizeof sql,
                     "PREPARE q%d%d(text, text, int8, int8, text, timestamptz, timestamptz) AS SELECT * FROM webhooks"
                     " WHERE %s%s id < $3 ORDER BY id DESC LIMIT $4", v, t, where[v], bounds[t]);
            db_exec(srv.db, sql);
            snprintf(sql, sizeof sql, "EXPLAIN EXECUTE q%d%d('s1', 'e1', 9223372036854775807, 21, 'd1', %s)", v, t,
                     t ? "'2023-11-14 22:13:20Z', 'infinity'" : "NULL, NULL");
            plan_scans(sql, plan, sizeof plan);
            if (t == 2) {
                plain_sorts += strstr(plan, "Sort") != NULL;
                continue;
            }
            cr_assert_null(strstr(plan, "Seq Scan"), "variant %d/%d: %s", v, t, plan);
            cr_assert_null(strstr(plan, "Bitmap"), "variant %d/%d: %s", v, t, plan);
            if (v < 4) {
                cr_assert(strncmp(plan, "Index Scan Backward using webhooks_", 35) == 0, "variant %d/%d: %s", v, t,
                          plan);
                cr_assert_null(strstr(plan, "Sort"), "variant %d/%d: %s", v, t, plan);
            } else {
                cr_assert_not_null(strstr(plan, "using webhooks_delivery"), "variant %d/%d: %s", v, t, plan);
            }
        }
    }
    cr_assert_gt(plain_sorts, 0, "the control: plain bounds should have made some plan sort");
    srv_close();
}

struct stats_seen {
    struct seen g;              /* first: seen_done takes op->data as a seen */
    char source[8][16];
    int64_t count[8], last[8];
    int n;
    char last_name[16];
};

static void stats_row(struct hk_store_op *op, const struct hk_source_stats *st)
{
    struct stats_seen *ss = op->data;
    cr_assert_lt(st->source_len, sizeof ss->source[0]);
    if (ss->n < 8) {
        snprintf(ss->source[ss->n], sizeof ss->source[0], "%.*s", (int)st->source_len, st->source);
        ss->count[ss->n] = st->count;
        ss->last[ss->n] = st->last_received_us;
    }
    snprintf(ss->last_name, sizeof ss->last_name, "%.*s", (int)st->source_len, st->source);
    ss->n++;
}

static void source_stats(struct replica *r, struct stats_seen *ss)
{
    struct hk_store_op op;
    memset(&op, 0, sizeof op);
    memset(ss, 0, sizeof *ss);
    op.kind = HK_OP_SOURCE_STATS;
    op.on_stats = stats_row;
    op.on_done = seen_done;
    op.data = ss;
    run(r, &op);
    cr_assert_eq(ss->g.status, 0);
}

/* As the SQLite store: byte order of name, the count, the newest row's
 * time (highest id, whatever the times say), bounded. */
Test(pg_server, source_stats_counts_each_source_in_byte_order)
{
    srv_open(NULL);
    struct replica r = {.s = store_open(1)};
    replica_attach(&r);
    struct stats_seen ss;
    source_stats(&r, &ss);
    cr_assert_eq(ss.n, 0);
    db_exec(srv.db, "INSERT INTO webhooks(source, event_type, payload, received_at)"
                    " SELECT s, 'e', '{}', timestamptz 'epoch' + (5000000 - i) * interval '1 microsecond'"
                    " FROM unnest(ARRAY['zeta', 'alpha', 'zeta', 'Beta', 'alpha', 'zeta', U&'\\00e9t\\00e9'])"
                    " WITH ORDINALITY AS t(s, i) ORDER BY i");
    source_stats(&r, &ss);
    cr_assert_eq(ss.n, 4);
    cr_assert_str_eq(ss.source[0], "Beta", "byte order: upper case before lower");
    cr_assert_str_eq(ss.source[1], "alpha");
    cr_assert_str_eq(ss.source[2], "zeta");
    cr_assert_str_eq(ss.source[3], "\xc3\xa9t\xc3\xa9", "UTF-8 after ASCII");
    cr_assert_eq(ss.count[0], 1);
    cr_assert_eq(ss.count[1], 2);
    cr_assert_eq(ss.count[2], 3);
    cr_assert_eq(ss.count[3], 1);
    cr_assert_eq(ss.last[0], 5000000 - 4);
    cr_assert_eq(ss.last[1], 5000000 - 5);
    cr_assert_eq(ss.last[2], 5000000 - 6);
    cr_assert_eq(ss.last[3], 5000000 - 7);

    db_exec(srv.db, "TRUNCATE webhooks");
    char sql[256];
    snprintf(sql, sizeof sql, "INSERT INTO webhooks(source, event_type, payload, received_at)"
             " SELECT 's' || lpad(i::text, 6, '0'), 'e', '{}', now() FROM generate_series(0, %d) AS i",
             HK_STORE_STATS_MAX + 3);
    db_exec(srv.db, sql);
    source_stats(&r, &ss);
    cr_assert_eq(ss.n, HK_STORE_STATS_MAX, "the first HK_STORE_STATS_MAX by name");
    char last[16];
    snprintf(last, sizeof last, "s%06d", HK_STORE_STATS_MAX - 1);
    cr_assert_str_eq(ss.last_name, last);
    replica_detach(&r);
    r.s->vt->close(r.s);
    srv_close();
}
