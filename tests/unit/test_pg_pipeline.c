/* SPDX-License-Identifier: MIT
 * The PostgreSQL store's pipeline and pool on a scripted libpq
 * (fake_pq.c, installed with hk_pq_use), through the public interfaces
 * only: hk_pg_open, the store's ops table and a real uv loop. Faults a
 * server cannot be made to show on cue: a connection lost mid-pipeline, a
 * statement failing inside a group-committed batch, deadlines passing
 * while queued and while in flight, idempotent replays, the SQLSTATE to
 * status mapping, reconnect back-off, the start-up's schema check and
 * migrations, the credential ops' refusals and retries, ingress rows
 * (every field sent and read back in binary, dedup on the delivery id, its
 * list filter, refusals before sending, no row data in the logs), the
 * lists' time bounds and SOURCE_STATS. */
#include <criterion/criterion.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <uv.h>

#include "core/err.h"
#include "core/log.h"
#include "store/pg.h"
#include "store/store.h"

#include "fake_pq.h"

#if defined(__SANITIZE_ADDRESS__)
#include <sanitizer/lsan_interface.h>
#define HAVE_LSAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#include <sanitizer/lsan_interface.h>
#define HAVE_LSAN 1
#endif
#endif

#define URL "postgresql://hookd:s3cret@db.invalid:5432/hookd"

static void setup(void)
{
    hk_log_set_level(HK_LOG_ERROR);
    fpq_reset();
}

/* A store bug tends to hang the loop rather than crash: RUN_UNTIL bounds
 * every wait, and the suite's timeout the rest. */
TestSuite(pg_pipeline, .init = setup, .timeout = 60);

/* ---- harness ---------------------------------------------------------------- */

struct ctx;
typedef void (*at_fn)(struct ctx *c, void *arg);

struct at {
    uv_timer_t t;
    struct ctx *c;
    at_fn fn;
    void *arg;
};

struct ctx {
    struct hk_store *s;
    uv_loop_t loop;
    struct hk_store_loop *sl;
    uv_timer_t guard;          /* wakes uv_run often, so RUN_UNTIL sees time pass */
    struct at at[8];
    unsigned nat;
};

static void on_guard(uv_timer_t *t)
{
    (void)t;
}

static uint64_t now(struct ctx *c)
{
    uv_update_time(&c->loop);
    return uv_now(&c->loop);
}

/* Run the loop until `cond` holds; fail after `ms` milliseconds. */
#define RUN_UNTIL(c, cond, ms)                                                          \
    do {                                                                                \
        uint64_t until_ = now(c) + (ms);                                                \
        while (!(cond)) {                                                               \
            cr_assert_lt(now(c), until_, "gave up after %d ms waiting for: %s", (int)(ms), \
                         #cond);                                                        \
            uv_run(&(c)->loop, UV_RUN_ONCE);                                            \
        }                                                                               \
    } while (0)

/* Run the loop for `ms` milliseconds. */
static void run_for(struct ctx *c, uint64_t ms)
{
    uint64_t until = now(c) + ms;
    while (now(c) < until)
        uv_run(&c->loop, UV_RUN_ONCE);
}

static void on_at(uv_timer_t *t)
{
    struct at *a = t->data;
    a->fn(a->c, a->arg);
}

/* Call fn(c, arg) from the loop `ms` from now. */
static void at(struct ctx *c, uint64_t ms, at_fn fn, void *arg)
{
    cr_assert_lt(c->nat, 8);
    struct at *a = &c->at[c->nat++];
    a->c = c;
    a->fn = fn;
    a->arg = arg;
    a->t.data = a;
    uv_timer_init(&c->loop, &a->t);
    uv_timer_start(&a->t, on_at, ms, 0);
}

static int64_t conns_open(struct ctx *c)
{
    struct hk_store_stats st = {-1, -1, -1, -1};
    c->s->vt->stats(c->s, &st);
    return st.conns_open;
}

static void ctx_open(struct ctx *c, unsigned pool, uint64_t timeout_ms)
{
    memset(c, 0, sizeof *c);
    struct hk_pg_config cfg = {.url = URL, .pool = pool, .queue_max = 256, .timeout_ms = timeout_ms,
                               .loops = 1};
    char err[512];
    c->s = hk_pg_open(&cfg, err, sizeof err);
    cr_assert_not_null(c->s, "hk_pg_open: %s", err);
    cr_assert_eq(uv_loop_init(&c->loop), 0);
    cr_assert_eq(c->s->vt->loop_attach(c->s, &c->loop, &c->sl), 0);
    cr_assert_eq(hk_store_health(c->sl), 0);
    uv_timer_init(&c->loop, &c->guard);
    uv_timer_start(&c->guard, on_guard, 5, 5);
    RUN_UNTIL(c, conns_open(c) == (int64_t)pool, 2000);
}

static void assert_no_leaks(void)
{
#ifdef HAVE_LSAN
    cr_assert_eq(__lsan_do_recoverable_leak_check(), 0, "LeakSanitizer found leaks (above)");
#endif
}

/* Detach (no op may be pending), prove the loop closes clean, close the
 * store, and check that every fake connection was PQfinish'ed. */
static void ctx_close(struct ctx *c)
{
    if (getenv("FPQ_TRACE") != NULL)
        fpq_dump();
    c->s->vt->loop_detach(c->sl);
    uv_close((uv_handle_t *)&c->guard, NULL);
    for (unsigned i = 0; i < c->nat; i++)
        uv_close((uv_handle_t *)&c->at[i].t, NULL);
    cr_assert_eq(uv_run(&c->loop, UV_RUN_DEFAULT), 0);
    cr_assert_eq(uv_loop_close(&c->loop), 0);
    c->s->vt->close(c->s);
    cr_assert_eq(fpq_cleanup(), 0, "connections the store never closed");
    assert_no_leaks();
}

/* What one op's callbacks saw. */
struct rec {
    struct hk_store_op op;
    struct ctx *c;
    int rows, dones, status;
    bool replayed;
    int64_t row_id, row_received_us;
    char row_source[32], row_payload[64];
    uint64_t done_ms;
    unsigned seq;              /* completion order over the test */
    int64_t ids[16];           /* a list's rows */
    int nids;
    /* The last row's ingress fields ("(null)" for a NULL text). */
    bool ingress;
    char body[64];
    size_t body_len;
    bool has_sha;
    uint8_t sha[32];
    char ctype[32], delivery[32], headers[64], verified[64], client[32];
};

static unsigned done_seq;

static void on_row(struct hk_store_op *op, const struct hk_webhook *row)
{
    struct rec *r = op->data;
    r->rows++;
    r->row_id = row->id;
    r->row_received_us = row->received_us;
    if (r->nids < 16)
        r->ids[r->nids++] = row->id;
    snprintf(r->row_source, sizeof r->row_source, "%.*s", (int)row->source_len, row->source);
    if (row->payload != NULL)
        snprintf(r->row_payload, sizeof r->row_payload, "%.*s", (int)row->payload_len, row->payload);
    else
        snprintf(r->row_payload, sizeof r->row_payload, "(null)");
    r->ingress = row->ingress;
    r->body_len = row->body_len;
    cr_assert(row->body_len <= sizeof r->body);
    if (row->body_len > 0)
        memcpy(r->body, row->body, row->body_len);
    r->has_sha = row->body_sha256 != NULL;
    if (r->has_sha)
        memcpy(r->sha, row->body_sha256, 32);
#define KEEP(dst, p, n) snprintf(dst, sizeof dst, "%.*s", (p) ? (int)(n) : 6, (p) ? (p) : "(null)")
    KEEP(r->ctype, row->content_type, row->content_type_len);
    KEEP(r->delivery, row->delivery_id, row->delivery_id_len);
    KEEP(r->headers, row->headers, row->headers_len);
    KEEP(r->verified, row->verified, row->verified_len);
    KEEP(r->client, row->client_addr, row->client_addr_len);
#undef KEEP
}

static void on_done(struct hk_store_op *op)
{
    struct rec *r = op->data;
    r->dones++;
    r->status = op->status;
    r->replayed = op->replayed;
    r->done_ms = now(r->c);
    r->seq = ++done_seq;
}

static void rec_init(struct ctx *c, struct rec *r, enum hk_op_kind kind)
{
    memset(r, 0, sizeof *r);
    r->c = c;
    r->op.kind = kind;
    r->op.on_row = on_row;
    r->op.on_done = on_done;
    r->op.data = r;
}

static void ins_idem(struct ctx *c, struct rec *r, const char *source, const char *idem,
                     const char *payload)
{
    rec_init(c, r, HK_OP_INSERT);
    r->op.row.source = source;
    r->op.row.source_len = strlen(source);
    r->op.row.event_type = "evt";
    r->op.row.event_type_len = 3;
    r->op.row.payload = payload;
    r->op.row.payload_len = strlen(payload);
    r->op.idem_key = idem;
}

static void ins(struct ctx *c, struct rec *r, const char *source)
{
    ins_idem(c, r, source, NULL, "{}");
}

static void get(struct ctx *c, struct rec *r, int64_t id)
{
    rec_init(c, r, HK_OP_GET);
    r->op.id = id;
}

static void list_stream(struct ctx *c, struct rec *r, uint32_t limit)
{
    rec_init(c, r, HK_OP_LIST);
    r->op.list.limit = limit;
    r->op.list.stream = true;
}

static void submit(struct rec *r)
{
    cr_assert_eq(hk_store_submit(r->c->sl, &r->op), 0);
}

/* Every op answered exactly once, with `status`, and no row unless 0. */
static void assert_once(const struct rec *r, const char *name, int status)
{
    cr_assert_eq(r->dones, 1, "%s: on_done ran %d times", name, r->dones);
    cr_assert_eq(r->status, status, "%s: status %d, want %d", name, r->status, status);
    if (status != 0)
        cr_assert_eq(r->rows, 0, "%s: a row with a failure", name);
}

/* Executions of "get" with this id. */
static unsigned get_sends(int64_t id, unsigned *group_of_last)
{
    unsigned n = 0;
    for (size_t i = 0; i < fpq_nstmts(); i++) {
        const struct fpq_stmt *s = fpq_stmt_at(i);
        if (s->msg == FPQ_EXECUTE && strcmp(s->name, "get") == 0 && fpq_param_i64(s, 0) == id) {
            n++;
            if (group_of_last != NULL)
                *group_of_last = s->group;
        }
    }
    return n;
}

/* Index in the record of the n-th execution of `name` with first param p0. */
static size_t send_index(const char *name, const char *p0, unsigned n)
{
    const struct fpq_stmt *s = fpq_send_at(name, p0, n);
    cr_assert_not_null(s, "%s(%s) was not sent %u times", name, p0 != NULL ? p0 : "", n + 1);
    return (size_t)(s - fpq_stmt_at(0));
}

/* ---- the script: rules matched in order ------------------------------------ */

struct rule {
    bool armed;
    enum fpq_msg msg;
    const char *name;          /* NULL: any */
    const char *p0;            /* NULL: any */
    unsigned nth;              /* 0: every send; k: only the k-th send of name(p0) */
    bool once;                 /* disarm after the first match */
    struct fpq_reply reply;
    unsigned hits;
};

struct plan {
    struct rule r[6];
    const char *fail_state;    /* error_codes: the SQLSTATE of the moment */
};

static void plan_script(const struct fpq_stmt *s, struct fpq_reply *out, void *arg)
{
    struct plan *p = arg;
    for (size_t i = 0; i < sizeof p->r / sizeof p->r[0]; i++) {
        struct rule *r = &p->r[i];
        if (!r->armed || r->msg != s->msg)
            continue;
        if (r->name != NULL && strcmp(r->name, s->name) != 0)
            continue;
        if (r->p0 != NULL && (s->nparams == 0 || s->param[0] == NULL || strcmp(r->p0, s->param[0]) != 0))
            continue;
        if (r->nth != 0 && fpq_sends(s->name, r->p0) != r->nth)
            continue;
        r->hits++;
        if (r->once)
            r->armed = false;
        *out = r->reply;
        return;
    }
}

#define HOLD {FPQ_HOLD, NULL, NULL}
#define FAIL(state) {FPQ_FAIL, state, "ERROR:  scripted " state}

/* ---- a connection lost mid-pipeline ------------------------------------------- */

Test(pg_pipeline, lost_mid_pipeline_answers_every_op_once)
{
    struct ctx c;
    struct plan p = {.r = {{.armed = true, .msg = FPQ_EXECUTE, .name = "ins", .p0 = "W2", .once = true,
                            .reply = HOLD}}};
    int64_t old = fpq_seed("old", "evt", "{}", 1, NULL);
    fpq_script(plan_script, &p);
    ctx_open(&c, 1, 2000);

    /* One group: W1 is answered (its result waits for the Sync), the
     * server stops at W2, R behind it. */
    struct rec w1, w2, r, q1, q2, late;
    ins(&c, &w1, "W1");
    ins(&c, &w2, "W2");
    get(&c, &r, old);
    submit(&w1);
    submit(&w2);
    submit(&r);
    RUN_UNTIL(&c, fpq_held(1) != NULL && fpq_unread(1) == 0, 1000);
    cr_assert_eq(w1.dones + w2.dones + r.dones, 0, "an answer before the group's Sync");

    /* Two more wait in the queue: the connection's group is out. */
    ins(&c, &q1, "Q1");
    get(&c, &q2, old);
    submit(&q1);
    submit(&q2);
    run_for(&c, 20);
    cr_assert_eq(fpq_sends("ins", "Q1"), 0);

    /* The first reconnect fails at once, the second works. */
    fpq_fail_connects(1, true);
    cr_assert(fpq_drop(1));
    RUN_UNTIL(&c, w1.dones && w2.dones && r.dones && q1.dones && q2.dones, 1000);
    run_for(&c, 30);   /* room for a second answer */
    assert_once(&w1, "W1 (answered, not committed)", HK_EUNAVAIL);
    assert_once(&w2, "W2 (held)", HK_EUNAVAIL);
    assert_once(&r, "R (never run)", HK_EUNAVAIL);
    assert_once(&q1, "Q1 (queued)", HK_EUNAVAIL);
    assert_once(&q2, "Q2 (queued)", HK_EUNAVAIL);

    /* No connection: refused at once, and no callback. */
    cr_assert_eq(hk_store_health(c.sl), HK_EUNAVAIL);
    ins(&c, &late, "late");
    cr_assert_eq(hk_store_submit(c.sl, &late.op), HK_EUNAVAIL);

    RUN_UNTIL(&c, hk_store_health(c.sl) == 0, 2000);
    cr_assert_eq(late.dones, 0);
    cr_assert_eq(fpq_nconnects(), 3);
    const struct fpq_connect *k0 = fpq_connect_at(0), *k1 = fpq_connect_at(1), *k2 = fpq_connect_at(2);
    cr_assert(k0->finished && k1->failed && k1->finished && !k2->failed);
    cr_expect(k1->start_ms - k0->drop_ms >= 90 && k1->start_ms - k0->drop_ms <= 400,
              "first reconnect %" PRIu64 " ms after the loss", k1->start_ms - k0->drop_ms);
    cr_expect(k2->start_ms - k1->start_ms >= 190 && k2->start_ms - k1->start_ms <= 600,
              "second reconnect %" PRIu64 " ms after the first", k2->start_ms - k1->start_ms);

    submit(&late);
    RUN_UNTIL(&c, late.dones == 1, 1000);
    assert_once(&late, "late", 0);
    cr_assert_eq(late.rows, 1);
    cr_assert_eq(late.row_id, fpq_row_id("late"));

    /* Nothing was sent twice after the loss, nothing committed. */
    cr_assert_eq(fpq_sends("ins", "W1"), 1);
    cr_assert_eq(fpq_sends("ins", "W2"), 1);
    cr_assert_eq(fpq_sends("ins", "Q1"), 0);
    cr_assert_eq(get_sends(old, NULL), 1);
    cr_assert_eq(fpq_rows("W1") + fpq_rows("W2") + fpq_rows("Q1"), 0);
    cr_assert_eq(fpq_send_at("ins", "late", 0)->conn, 3);
    ctx_close(&c);
}

/* Every result came, the Sync's did not: the read was answered when its
 * rows came, the writes (maybe committed, maybe not) are unavailable. */
Test(pg_pipeline, lost_before_sync_fails_writes_keeps_reads)
{
    struct ctx c;
    struct plan p = {.r = {{.msg = FPQ_SYNC, .once = true, .reply = HOLD}}};
    int64_t old = fpq_seed("old", "evt", "{\"a\":1}", 1, NULL);
    fpq_script(plan_script, &p);
    ctx_open(&c, 1, 2000);
    p.r[0].armed = true;

    struct rec w1, r, w2;
    ins(&c, &w1, "W1");
    get(&c, &r, old);
    ins(&c, &w2, "W2");
    submit(&w1);
    submit(&r);
    submit(&w2);
    RUN_UNTIL(&c, fpq_held(1) != NULL && fpq_unread(1) == 0, 1000);
    cr_assert_eq(fpq_held(1)->msg, FPQ_SYNC);
    assert_once(&r, "R", 0);
    cr_assert_eq(r.rows, 1);
    cr_assert_str_eq(r.row_payload, "{\"a\":1}");
    cr_assert_eq(w1.dones + w2.dones, 0, "a write acknowledged before its commit");

    cr_assert(fpq_drop(1));
    RUN_UNTIL(&c, w1.dones && w2.dones, 1000);
    run_for(&c, 30);
    assert_once(&w1, "W1", HK_EUNAVAIL);
    assert_once(&w2, "W2", HK_EUNAVAIL);
    assert_once(&r, "R", 0);
    cr_assert_eq(fpq_rows("W1") + fpq_rows("W2"), 0);
    RUN_UNTIL(&c, hk_store_health(c.sl) == 0, 2000);
    ctx_close(&c);
}

/* Pool of two, both with a group out, one op queued: losing one
 * connection fails its ops only; the queued op goes out on the other. */
Test(pg_pipeline, lost_connection_leaves_the_queue_to_the_other)
{
    struct ctx c;
    struct plan p = {.r = {{.armed = true, .msg = FPQ_EXECUTE, .name = "ins", .p0 = "H1", .once = true,
                            .reply = HOLD},
                           {.armed = true, .msg = FPQ_EXECUTE, .name = "ins", .p0 = "H2", .once = true,
                            .reply = HOLD}}};
    fpq_script(plan_script, &p);
    ctx_open(&c, 2, 2000);

    struct rec h1, h2, k1, k2, q;
    ins(&c, &h1, "H1");
    ins(&c, &h2, "H2");
    ins(&c, &k1, "K1");
    ins(&c, &k2, "K2");
    submit(&h1);
    submit(&h2);
    submit(&k1);
    submit(&k2);
    RUN_UNTIL(&c, p.r[0].hits == 1 && p.r[1].hits == 1, 1000);
    unsigned ca = fpq_send_at("ins", "H1", 0)->conn, cb = fpq_send_at("ins", "H2", 0)->conn;
    cr_assert_neq(ca, cb, "one group per connection");
    cr_assert_eq(fpq_send_at("ins", "K1", 0)->conn, ca);
    cr_assert_eq(fpq_send_at("ins", "K2", 0)->conn, cb);

    ins(&c, &q, "Q");
    submit(&q);
    run_for(&c, 20);
    cr_assert_eq(fpq_sends("ins", "Q"), 0, "sent while both connections had a group out");

    cr_assert(fpq_drop(ca));
    RUN_UNTIL(&c, h1.dones && k1.dones, 1000);
    run_for(&c, 30);
    assert_once(&h1, "H1", HK_EUNAVAIL);
    assert_once(&k1, "K1", HK_EUNAVAIL);
    cr_assert_eq(q.dones, 0, "the queued op failed with a connection still up");
    cr_assert_eq(hk_store_health(c.sl), 0);

    struct fpq_reply answer = {FPQ_ANSWER, NULL, NULL};
    cr_assert(fpq_release(cb, &answer));
    RUN_UNTIL(&c, h2.dones && k2.dones && q.dones, 1000);
    run_for(&c, 30);
    assert_once(&h2, "H2", 0);
    assert_once(&k2, "K2", 0);
    assert_once(&q, "Q", 0);
    cr_assert_eq(q.row_id, fpq_row_id("Q"));
    cr_assert_eq(fpq_sends("ins", "Q"), 1);
    cr_assert_eq(fpq_send_at("ins", "Q", 0)->conn, cb);
    cr_assert_eq(fpq_rows("H1") + fpq_rows("K1"), 0);
    cr_assert_eq(fpq_rows("H2") + fpq_rows("K2") + fpq_rows("Q"), 3);

    /* The lost one is replaced. */
    RUN_UNTIL(&c, conns_open(&c) == 2, 2000);
    cr_assert_eq(fpq_nconnects(), 3);
    ctx_close(&c);
}

/* ---- an error inside a group-committed batch ---------------------------------- */

static void error_in_group(const char *sqlstate, int want)
{
    struct ctx c;
    struct plan p = {.r = {{.armed = true, .msg = FPQ_EXECUTE, .name = "ins", .p0 = "B",
                            .reply = {FPQ_FAIL, sqlstate, "ERROR:  refused by a trigger"}},
                           {.msg = FPQ_SYNC, .once = true, .reply = HOLD}}};
    int64_t old = fpq_seed("old", "evt", "{}", 1, NULL);
    fpq_script(plan_script, &p);
    ctx_open(&c, 1, 2000);
    p.r[1].armed = true;   /* the first group's Sync, not the session setup's */

    struct rec a, b, cc, g;
    ins(&c, &a, "A");
    ins(&c, &b, "B");
    ins(&c, &cc, "C");
    get(&c, &g, old);
    submit(&a);
    submit(&b);
    submit(&cc);
    submit(&g);

    /* Everything but the Sync has come back: B has its error, nobody else
     * an answer (A ran but rolls back; C and the GET never ran). */
    RUN_UNTIL(&c, fpq_held(1) != NULL && fpq_unread(1) == 0, 1000);
    cr_assert_eq(fpq_held(1)->msg, FPQ_SYNC);
    assert_once(&b, "B", want);
    cr_assert_eq(a.dones + cc.dones + g.dones, 0, "an answer from a group that failed");
    unsigned g1 = fpq_send_at("ins", "A", 0)->group;
    cr_assert_eq(fpq_group_size(1, g1), 4, "A, B, C and the GET are one group");
    cr_assert_eq(fpq_send_at("ins", "C", 0)->outcome, FPQ_ABORTED);

    struct fpq_reply answer = {FPQ_ANSWER, NULL, NULL};
    cr_assert(fpq_release(1, &answer));
    RUN_UNTIL(&c, a.dones && cc.dones && g.dones, 1000);
    run_for(&c, 30);
    assert_once(&a, "A", 0);
    assert_once(&cc, "C", 0);
    assert_once(&g, "GET", 0);
    assert_once(&b, "B", want);
    cr_assert(b.seq < a.seq && b.seq < cc.seq && b.seq < g.seq);
    cr_assert_eq(a.rows, 1);
    cr_assert_eq(a.row_id, fpq_row_id("A"));
    cr_assert_eq(cc.row_id, fpq_row_id("C"));
    cr_assert_eq(g.rows, 1);
    cr_assert_eq(g.row_id, old);

    /* Sent again, in send order, in a group of their own: no B. */
    unsigned g2 = fpq_send_at("ins", "A", 1)->group, gget = 0;
    cr_assert_eq(fpq_sends("ins", "A"), 2);
    cr_assert_eq(fpq_sends("ins", "C"), 2);
    cr_assert_eq(get_sends(old, &gget), 2);
    cr_assert_eq(fpq_sends("ins", "B"), 1);
    cr_assert_gt(g2, g1);
    cr_assert_eq(fpq_send_at("ins", "C", 1)->group, g2);
    cr_assert_eq(gget, g2);
    cr_assert_eq(fpq_group_size(1, g2), 3);
    cr_assert_lt(send_index("ins", "A", 1), send_index("ins", "C", 1));

    /* Committed once each; B never. */
    cr_assert_eq(fpq_rows("A"), 1);
    cr_assert_eq(fpq_rows("C"), 1);
    cr_assert_eq(fpq_rows("B"), 0);
    cr_assert_eq(fpq_nconnects(), 1, "a failed statement is no reason to reconnect");
    ctx_close(&c);
}

Test(pg_pipeline, error_in_group_data_error)
{
    error_in_group("23505", HK_EINVAL);
}

Test(pg_pipeline, error_in_group_raised_by_trigger)
{
    error_in_group("P0001", HK_ESTORE);
}

/* The retried group fails again (for another op): the ops left go alone. */
Test(pg_pipeline, error_in_retried_group_sends_each_alone)
{
    struct ctx c;
    struct plan p = {.r = {{.armed = true, .msg = FPQ_EXECUTE, .name = "ins", .p0 = "D",
                            .reply = FAIL("23514")},
                           {.armed = true, .msg = FPQ_EXECUTE, .name = "ins", .p0 = "C", .nth = 2,
                            .reply = FAIL("23505")}}};
    fpq_script(plan_script, &p);
    ctx_open(&c, 1, 2000);

    struct rec a, b, cc, d;
    ins(&c, &a, "A");
    ins(&c, &b, "B");
    ins(&c, &cc, "C");
    ins(&c, &d, "D");
    submit(&a);
    submit(&b);
    submit(&cc);
    submit(&d);
    RUN_UNTIL(&c, a.dones && b.dones && cc.dones && d.dones, 1000);
    run_for(&c, 30);
    assert_once(&d, "D", HK_EINVAL);
    assert_once(&cc, "C", HK_EINVAL);
    assert_once(&a, "A", 0);
    assert_once(&b, "B", 0);
    cr_assert_eq(fpq_sends("ins", "D"), 1);
    cr_assert_eq(fpq_sends("ins", "C"), 2);
    cr_assert_eq(fpq_sends("ins", "A"), 3);
    cr_assert_eq(fpq_sends("ins", "B"), 3);
    /* Second time: A, B, C together; third: one op, one Sync. */
    unsigned g2 = fpq_send_at("ins", "A", 1)->group;
    cr_assert_eq(fpq_send_at("ins", "B", 1)->group, g2);
    cr_assert_eq(fpq_send_at("ins", "C", 1)->group, g2);
    cr_assert_eq(fpq_group_size(1, g2), 3);
    unsigned ga = fpq_send_at("ins", "A", 2)->group, gb = fpq_send_at("ins", "B", 2)->group;
    cr_assert_neq(ga, gb);
    cr_assert_eq(fpq_group_size(1, ga), 1);
    cr_assert_eq(fpq_group_size(1, gb), 1);
    cr_assert_eq(fpq_rows("A") + fpq_rows("B"), 2);
    cr_assert_eq(fpq_rows("C") + fpq_rows("D"), 0);
    ctx_close(&c);
}

/* A stream's next batch rides in a group that fails for another op: it
 * goes again, from where the stream was, and the stream goes on. */
Test(pg_pipeline, stream_batch_in_a_failed_group_goes_again)
{
    struct ctx c;
    struct plan p = {.r = {{.armed = true, .msg = FPQ_EXECUTE, .name = "ins", .p0 = "F",
                            .reply = FAIL("23505")}}};
    int64_t id[5];
    for (int i = 0; i < 5; i++)
        id[i] = fpq_seed("s", "evt", "{}", i, NULL);
    fpq_script(plan_script, &p);
    ctx_open(&c, 1, 2000);

    struct rec l, f;
    list_stream(&c, &l, 2);
    submit(&l);
    RUN_UNTIL(&c, l.dones == 1, 1000);
    cr_assert_eq(l.status, 0);
    cr_assert(l.op.more);
    cr_assert_eq(l.nids, 2);
    cr_assert_eq(l.ids[0], id[4]);
    cr_assert_eq(l.ids[1], id[3]);

    ins(&c, &f, "F");
    submit(&f);
    hk_store_list_next(c.sl, &l.op);   /* the same group, behind F */
    RUN_UNTIL(&c, l.dones == 2 && f.dones == 1, 1000);
    assert_once(&f, "F", HK_EINVAL);
    cr_assert_eq(l.status, 0);
    cr_assert(l.op.more);
    cr_assert_eq(l.nids, 4);
    cr_assert_eq(l.ids[2], id[2]);
    cr_assert_eq(l.ids[3], id[1]);
    cr_assert_eq(fpq_send_at("list0", NULL, 2)->group, fpq_send_at("ins", "F", 0)->group);
    cr_assert_eq(fpq_send_at("list0", NULL, 2)->outcome, FPQ_ABORTED);
    cr_assert_eq(fpq_param_i64(fpq_send_at("list0", NULL, 3), 2), id[3], "the keyset bound");

    hk_store_list_next(c.sl, &l.op);
    RUN_UNTIL(&c, l.dones == 3, 1000);
    run_for(&c, 30);
    cr_assert_eq(l.dones, 3);
    cr_assert_eq(l.status, 0);
    cr_assert(!l.op.more);
    cr_assert_eq(l.nids, 5);
    cr_assert_eq(l.ids[4], id[0]);
    cr_assert_eq(fpq_sends("list0", NULL), 5);
    ctx_close(&c);
}

/* ---- deadlines ---------------------------------------------------------------- */

/* The server sits on a GET: at the deadline that op times out, the
 * connection is reset and every other op it carried fails (none is left
 * without an answer), so does the op queued behind, and the pool comes back. */
Test(pg_pipeline, deadline_in_flight_resets_the_connection)
{
    struct ctx c;
    struct plan p = {.r = {{.armed = true, .msg = FPQ_EXECUTE, .name = "get", .once = true,
                            .reply = HOLD}}};
    int64_t old = fpq_seed("old", "evt", "{}", 1, NULL);
    fpq_script(plan_script, &p);
    ctx_open(&c, 1, 300);

    struct rec g, b, cc, q, after;
    get(&c, &g, old);
    ins(&c, &b, "B");
    ins(&c, &cc, "C");
    uint64_t t0 = now(&c);
    submit(&g);
    submit(&b);
    submit(&cc);
    RUN_UNTIL(&c, fpq_held(1) != NULL, 1000);
    ins(&c, &q, "Q");
    submit(&q);
    RUN_UNTIL(&c, g.dones && b.dones && cc.dones && q.dones, 1500);
    run_for(&c, 30);
    assert_once(&g, "GET (held)", HK_ETIMEDOUT);
    assert_once(&b, "B", HK_EUNAVAIL);
    assert_once(&cc, "C", HK_EUNAVAIL);
    assert_once(&q, "Q (queued)", HK_EUNAVAIL);
    cr_expect(g.done_ms >= t0 + 300 && g.done_ms <= t0 + 300 + 200,
              "timed out after %" PRIu64 " ms", g.done_ms - t0);
    cr_assert(fpq_connect_at(0)->finished, "the connection was not reset");
    cr_assert_eq(fpq_rows("B") + fpq_rows("C") + fpq_rows("Q"), 0);

    RUN_UNTIL(&c, hk_store_health(c.sl) == 0, 2000);
    ins(&c, &after, "after");
    submit(&after);
    RUN_UNTIL(&c, after.dones, 1000);
    assert_once(&after, "after", 0);
    cr_assert_eq(fpq_send_at("ins", "after", 0)->conn, 2);
    ctx_close(&c);
}

static void do_submit(struct ctx *c, void *arg)
{
    (void)c;
    submit(arg);
}

static void do_answer(struct ctx *c, void *arg)
{
    (void)c;
    (void)arg;
    struct fpq_reply r = {FPQ_ANSWER, NULL, NULL};
    cr_assert(fpq_release(1, &r));
}

static void do_fail_23505(struct ctx *c, void *arg)
{
    (void)c;
    (void)arg;
    struct fpq_reply r = FAIL("23505");
    cr_assert(fpq_release(1, &r));
}

/* A is answered, then its group fails (for F) after A's deadline: back in
 * the queue, A is past its deadline when its turn comes and is not sent
 * again; the connection stays. */
Test(pg_pipeline, deadline_passed_in_queue_is_not_sent)
{
    struct ctx c;
    struct plan p = {.r = {{.armed = true, .msg = FPQ_EXECUTE, .name = "get", .once = true, .reply = HOLD},
                           {.armed = true, .msg = FPQ_EXECUTE, .name = "ins", .p0 = "F", .once = true,
                            .reply = HOLD}}};
    int64_t old = fpq_seed("old", "evt", "{}", 1, NULL);
    fpq_script(plan_script, &p);
    ctx_open(&c, 1, 400);

    struct rec g, a, f;
    get(&c, &g, old);
    submit(&g);
    RUN_UNTIL(&c, fpq_held(1) != NULL, 1000);
    ins(&c, &a, "A");
    ins(&c, &f, "F");
    uint64_t t0 = now(&c);
    submit(&a);                          /* waits: the GET's group is out */
    at(&c, 150, do_submit, &f);          /* waits too */
    at(&c, 200, do_answer, NULL);        /* the GET: A and F go out together, F is held */
    at(&c, 450, do_fail_23505, NULL);    /* past A's deadline (400), before F's (550) */
    RUN_UNTIL(&c, g.dones && a.dones && f.dones, 1500);
    run_for(&c, 30);
    assert_once(&g, "GET", 0);
    assert_once(&f, "F", HK_EINVAL);
    assert_once(&a, "A", HK_ETIMEDOUT);
    cr_expect(a.done_ms >= t0 + 440 && a.done_ms <= t0 + 600, "A timed out after %" PRIu64 " ms",
              a.done_ms - t0);
    cr_assert_eq(fpq_send_at("ins", "A", 0)->group, fpq_send_at("ins", "F", 0)->group);
    cr_assert_eq(fpq_sends("ins", "A"), 1, "sent again past its deadline");
    cr_assert_eq(fpq_rows("A") + fpq_rows("F"), 0);
    cr_assert_eq(fpq_nconnects(), 1);
    cr_assert(!fpq_connect_at(0)->finished, "the connection was reset");
    ctx_close(&c);
}

/* A goes back to the queue (its retried group failed for B) while a newer
 * group, held by the server, is out on the only connection: A's deadline
 * passes in the queue, before that group's. */
Test(pg_pipeline, deadline_passes_while_queued)
{
    struct ctx c;
    struct plan p = {.r = {{.armed = true, .msg = FPQ_EXECUTE, .name = "ins", .p0 = "F", .once = true,
                            .reply = HOLD},
                           {.armed = true, .msg = FPQ_EXECUTE, .name = "ins", .p0 = "B", .nth = 2,
                            .reply = FAIL("23505")},
                           {.armed = true, .msg = FPQ_EXECUTE, .name = "ins", .p0 = "N", .once = true,
                            .reply = HOLD}}};
    fpq_script(plan_script, &p);
    ctx_open(&c, 1, 600);

    struct rec a, b, f, n;
    ins(&c, &a, "A");
    ins(&c, &b, "B");
    ins(&c, &f, "F");
    ins(&c, &n, "N");
    uint64_t t0 = now(&c);
    submit(&a);
    submit(&b);
    submit(&f);
    RUN_UNTIL(&c, fpq_held(1) != NULL, 1000);
    at(&c, 300, do_submit, &n);          /* waits: A, B, F are out */
    at(&c, 350, do_fail_23505, NULL);    /* F fails: A, B again, then N alone, held */
    at(&c, 750, do_answer, NULL);        /* N, after A's deadline (600), before its own (900) */
    RUN_UNTIL(&c, a.dones && b.dones && f.dones && n.dones, 1500);
    run_for(&c, 30);
    assert_once(&f, "F", HK_EINVAL);
    assert_once(&b, "B", HK_EINVAL);
    assert_once(&a, "A", HK_ETIMEDOUT);
    assert_once(&n, "N", 0);
    cr_expect(a.done_ms >= t0 + 595 && a.done_ms <= t0 + 740, "A timed out after %" PRIu64 " ms",
              a.done_ms - t0);
    cr_assert_lt(a.seq, n.seq, "A waited for N's answer");
    cr_assert_eq(fpq_sends("ins", "A"), 2);
    cr_assert_eq(fpq_sends("ins", "B"), 2);
    cr_assert_eq(fpq_sends("ins", "N"), 1);
    cr_assert_eq(fpq_rows("N"), 1);
    cr_assert_eq(fpq_rows("A") + fpq_rows("B") + fpq_rows("F"), 0);
    cr_assert_eq(fpq_nconnects(), 1);
    ctx_close(&c);
}

/* ---- idempotent replay ----------------------------------------------------------- */

Test(pg_pipeline, idempotent_replay_returns_the_original_row)
{
    struct ctx c;
    struct plan p = {.r = {{.armed = true, .msg = FPQ_EXECUTE, .name = "ins", .p0 = "F",
                            .reply = FAIL("23505")}}};
    fpq_script(plan_script, &p);
    ctx_open(&c, 1, 2000);

    struct rec first, again, other, retried, f;
    ins_idem(&c, &first, "S", "k1", "{\"n\":1}");
    submit(&first);
    RUN_UNTIL(&c, first.dones, 1000);
    assert_once(&first, "first", 0);
    cr_assert(!first.replayed);
    cr_assert_eq(first.rows, 1);
    cr_assert_eq(first.row_id, fpq_row_id("S"));
    int64_t id = first.row_id, received = first.row_received_us;
    const struct fpq_stmt *s = fpq_send_at("ins_idem", "S", 0);
    cr_assert_eq(s->nparams, 9);
    cr_assert_str_eq(s->param[4], "k1");
    cr_assert_eq(fpq_param_i64(s, 3), received);

    run_for(&c, 5);   /* a later received_us, were it used */
    ins_idem(&c, &again, "S", "k1", "{\"n\":2}");
    submit(&again);
    RUN_UNTIL(&c, again.dones, 1000);
    assert_once(&again, "again", 0);
    cr_assert(again.replayed);
    cr_assert_eq(again.rows, 1);
    cr_assert_eq(again.row_id, id);
    cr_assert_eq(again.row_received_us, received);
    cr_assert_str_eq(again.row_payload, "{\"n\":1}");
    cr_assert_str_eq(again.row_source, "S");
    cr_assert_eq(fpq_rows("S"), 1);

    /* The key is per source. */
    ins_idem(&c, &other, "T", "k1", "{}");
    submit(&other);
    RUN_UNTIL(&c, other.dones, 1000);
    assert_once(&other, "other", 0);
    cr_assert(!other.replayed);
    cr_assert_neq(other.row_id, id);

    /* A replay in a group that fails for another op is still a replay
     * when it goes again. */
    ins_idem(&c, &retried, "S", "k1", "{\"n\":3}");
    ins(&c, &f, "F");
    submit(&retried);
    submit(&f);
    RUN_UNTIL(&c, retried.dones && f.dones, 1000);
    run_for(&c, 30);
    assert_once(&f, "F", HK_EINVAL);
    assert_once(&retried, "retried", 0);
    cr_assert(retried.replayed);
    cr_assert_eq(retried.row_id, id);
    cr_assert_str_eq(retried.row_payload, "{\"n\":1}");
    cr_assert_eq(fpq_sends("ins_idem", "S"), 4);
    cr_assert_eq(fpq_rows("S"), 1);
    ctx_close(&c);
}

/* ---- SQLSTATE to status ---------------------------------------------------------- */

Test(pg_pipeline, error_codes_map_to_statuses)
{
    static const struct {
        const char *sqlstate;
        int want;
    } codes[] = {
        {"57014", HK_ETIMEDOUT},   /* statement_timeout */
        {"22001", HK_EINVAL}, {"22P02", HK_EINVAL}, {"22021", HK_EINVAL},
        {"23505", HK_EINVAL}, {"23502", HK_EINVAL}, {"23514", HK_EINVAL},
        {"08006", HK_EUNAVAIL}, {"08P01", HK_EUNAVAIL}, {"57P01", HK_EUNAVAIL}, {"57P03", HK_EUNAVAIL},
        {"53300", HK_EUNAVAIL}, {"53100", HK_EUNAVAIL}, {"40001", HK_EUNAVAIL}, {"40P01", HK_EUNAVAIL},
        {"55P03", HK_EUNAVAIL}, {"55006", HK_EUNAVAIL},
        {"XX000", HK_ESTORE}, {"P0001", HK_ESTORE}, {"42P01", HK_ESTORE}, {"42501", HK_ESTORE},
        {NULL, HK_EUNAVAIL},       /* an error without a SQLSTATE */
    };
    struct ctx c;
    struct plan p = {.r = {{.msg = FPQ_EXECUTE, .name = "get"}, {.msg = FPQ_EXECUTE, .name = "ins"}}};
    int64_t old = fpq_seed("old", "evt", "{}", 1, NULL);
    fpq_script(plan_script, &p);
    ctx_open(&c, 1, 2000);
    p.r[0].armed = p.r[1].armed = true;

    for (size_t i = 0; i < sizeof codes / sizeof codes[0]; i++) {
        const char *state = codes[i].sqlstate;
        p.r[0].reply = p.r[1].reply = (struct fpq_reply){FPQ_FAIL, state, "ERROR:  scripted"};
        struct rec g, w;
        get(&c, &g, old);
        submit(&g);
        RUN_UNTIL(&c, g.dones, 1000);
        ins(&c, &w, "W");
        submit(&w);
        RUN_UNTIL(&c, w.dones, 1000);
        run_for(&c, 2);
        cr_expect_eq(g.dones, 1, "%s: GET answered %d times", state ? state : "(none)", g.dones);
        cr_expect_eq(g.status, codes[i].want, "%s: GET status %d, want %d", state ? state : "(none)",
                     g.status, codes[i].want);
        cr_expect_eq(w.dones, 1, "%s: INSERT answered %d times", state ? state : "(none)", w.dones);
        cr_expect_eq(w.status, codes[i].want, "%s: INSERT status %d, want %d",
                     state ? state : "(none)", w.status, codes[i].want);
    }
    cr_assert_eq(fpq_rows("W"), 0);
    cr_assert_eq(fpq_nconnects(), 1, "a statement's error is no reason to reconnect");
    ctx_close(&c);
}

/* ---- reconnect back-off --------------------------------------------------------- */

/* Six attempts fail after the loss: they come 100, 200, 400, 800, 1600 and
 * 3200 ms apart, then 5000 (the cap, not 6400). Once a connection is up, the
 * next loss starts again at 100. About 11.5 s. */
Test(pg_pipeline, reconnect_backoff_doubles_to_the_cap_then_resets)
{
    static const uint64_t want[] = {100, 200, 400, 800, 1600, 3200, 5000};
    struct ctx c;
    ctx_open(&c, 1, 2000);
    fpq_fail_connects(6, false);
    cr_assert(fpq_drop(1));
    RUN_UNTIL(&c, hk_store_health(c.sl) == HK_EUNAVAIL, 1000);
    struct rec r;
    ins(&c, &r, "R");
    cr_assert_eq(hk_store_submit(c.sl, &r.op), HK_EUNAVAIL);
    RUN_UNTIL(&c, hk_store_health(c.sl) == 0, 14000);
    cr_assert_eq(fpq_nconnects(), 8);
    uint64_t prev = fpq_connect_at(0)->drop_ms;
    for (unsigned k = 1; k < 8; k++) {
        const struct fpq_connect *a = fpq_connect_at(k);
        uint64_t gap = a->start_ms - prev, w = want[k - 1];
        cr_expect(gap + 10 >= w && gap <= w + w / 4 + 60, "attempt %u came %" PRIu64 " ms after the %s, want %" PRIu64,
                  k, gap, k == 1 ? "loss" : "previous attempt", w);
        cr_assert_eq(a->failed, k < 7);
        cr_assert(k == 7 || a->finished);
        prev = a->start_ms;
    }

    cr_assert(fpq_drop(8));
    RUN_UNTIL(&c, hk_store_health(c.sl) == 0 && fpq_nconnects() == 9, 2000);
    uint64_t gap = fpq_connect_at(8)->start_ms - fpq_connect_at(7)->drop_ms;
    cr_expect(gap + 10 >= 100 && gap <= 400, "after a success the back-off starts over: %" PRIu64 " ms", gap);
    submit(&r);
    RUN_UNTIL(&c, r.dones, 1000);
    assert_once(&r, "R", 0);
    ctx_close(&c);
}

/* ---- credentials --------------------------------------------------------------- */

/* Credential input the server would refuse (or that breaks store.h's
 * rules) never reaches a group: HK_EINVAL inside submit, up or down. */
Test(pg_pipeline, credential_input_refused_before_sending)
{
    struct ctx c;
    ctx_open(&c, 1, 2000);
    struct hk_token_rec bad_name = {.name = "bad name", .scopes = HK_SCOPE_READ};
    struct hk_token_rec bad_time = {.name = "ok", .scopes = HK_SCOPE_READ, .expires_us = -1};
    struct hk_session_rec no_scope = {.subject = "ok", .expires_us = 1};
    struct rec r[5];
    rec_init(&c, &r[0], HK_OP_TOKEN_PUT);
    r[0].op.token = &bad_name;
    rec_init(&c, &r[1], HK_OP_TOKEN_PUT);
    r[1].op.token = &bad_time;
    rec_init(&c, &r[2], HK_OP_SESSION_PUT);
    r[2].op.session = &no_scope;
    rec_init(&c, &r[3], HK_OP_TOKEN_REVOKE);   /* no name */
    rec_init(&c, &r[4], HK_OP_TOKEN_GET);      /* no record */
    for (int i = 0; i < 5; i++) {
        submit(&r[i]);
        assert_once(&r[i], "refused", HK_EINVAL);
    }
    /* The pool down: still the caller's mistake first. */
    cr_assert(fpq_drop(1));
    RUN_UNTIL(&c, hk_store_health(c.sl) != 0, 1000);
    rec_init(&c, &r[0], HK_OP_TOKEN_PUT);
    r[0].op.token = &bad_name;
    submit(&r[0]);
    assert_once(&r[0], "refused while down", HK_EINVAL);
    RUN_UNTIL(&c, hk_store_health(c.sl) == 0, 2000);
    run_for(&c, 20);
    cr_assert_eq(fpq_sends("tok_put", NULL) + fpq_sends("ses_put", NULL) +
                 fpq_sends("tok_revoke", NULL) + fpq_sends("tok_get", NULL), 0);
    ctx_close(&c);
}

/* Credential ops ride the pipeline like the others: in a group that a
 * webhook insert fails, the writes before it and the ops after it go again
 * (their callbacks run once), with what submit set kept. */
Test(pg_pipeline, credential_ops_in_a_failed_group_go_again)
{
    struct ctx c;
    struct plan p = {.r = {{.armed = true, .msg = FPQ_EXECUTE, .name = "ins", .p0 = "B",
                            .reply = FAIL("23514")}}};
    fpq_script(plan_script, &p);
    ctx_open(&c, 1, 2000);

    struct hk_token_rec t = {.name = "ops", .scopes = HK_SCOPE_READ};
    memset(t.hash, 0xab, sizeof t.hash);
    t.hash[3] = 0;
    struct hk_session_rec ses = {0};
    memset(ses.hash, 0x11, sizeof ses.hash);
    struct rec a, b, tp, sg, rv;
    ins(&c, &a, "A");
    rec_init(&c, &tp, HK_OP_TOKEN_PUT);
    tp.op.token = &t;
    ins(&c, &b, "B");
    rec_init(&c, &sg, HK_OP_SESSION_GET);
    sg.op.session = &ses;
    rec_init(&c, &rv, HK_OP_TOKEN_REVOKE);
    rv.op.name = "ops";
    submit(&a);
    submit(&tp);
    submit(&b);
    submit(&sg);
    submit(&rv);
    cr_assert_gt(t.created_us, 0, "created_us set at submit");
    RUN_UNTIL(&c, a.dones && b.dones && tp.dones && sg.dones && rv.dones, 1000);
    run_for(&c, 30);
    assert_once(&b, "B", HK_EINVAL);
    assert_once(&a, "A", 0);
    assert_once(&tp, "TOKEN_PUT", 0);
    assert_once(&sg, "SESSION_GET", HK_ENOTFOUND);
    assert_once(&rv, "TOKEN_REVOKE", HK_ENOTFOUND);
    cr_assert_eq(fpq_sends("tok_put", NULL), 2);
    cr_assert_eq(fpq_sends("ses_get", NULL), 2);
    cr_assert_eq(fpq_sends("tok_revoke", NULL), 2);
    unsigned g1 = fpq_send_at("ins", "B", 0)->group;
    cr_assert_eq(fpq_send_at("tok_put", NULL, 0)->group, g1);
    cr_assert_eq(fpq_send_at("ses_get", NULL, 0)->outcome, FPQ_ABORTED);
    for (unsigned k = 0; k < 2; k++) {
        const struct fpq_stmt *sp = fpq_send_at("tok_put", NULL, k);
        cr_assert_eq(sp->nparams, 5);
        cr_assert_str_eq(sp->param[0], "ops");
        cr_assert_eq(sp->len[1], 32, "the hash as 32 binary bytes");
        cr_assert_eq(memcmp(sp->param[1], t.hash, 32), 0);
        cr_assert_eq(fpq_param_i64(sp, 2), HK_SCOPE_READ);
        cr_assert_eq(fpq_param_i64(sp, 3), t.created_us, "the same creation time when sent again");
        cr_assert_null(sp->param[4], "never expires: NULL");
    }
    const struct fpq_stmt *sg2 = fpq_send_at("ses_get", NULL, 1);
    cr_assert_eq(sg2->len[0], 32);
    cr_assert_eq(sg2->nparams, 2);
    cr_assert_eq(fpq_rows("A"), 1);
    cr_assert_eq(fpq_rows("B"), 0);
    ctx_close(&c);
}

/* ---- start-up ------------------------------------------------------------------- */

/* The schema check and the session setup go as one group on the first
 * connection; a current schema needs nothing else. */
Test(pg_pipeline, startup_current_schema_is_one_round_trip)
{
    struct ctx c;
    ctx_open(&c, 1, 2000);
    cr_assert_eq(fpq_nconnects(), 1);
    size_t n = fpq_nstmts();
    cr_assert_gt(n, 3);
    const struct fpq_stmt *s0 = fpq_stmt_at(0), *s1 = fpq_stmt_at(1);
    cr_assert_eq(s0->msg, FPQ_QUERY);
    cr_assert(strstr(s0->sql, "schema_version") != NULL);
    cr_assert_eq(s1->msg, FPQ_FLUSH, "the check's answer comes back alone");
    unsigned prepares = 0;
    for (size_t i = 0; i < n; i++) {
        const struct fpq_stmt *s = fpq_stmt_at(i);
        cr_assert_neq(s->msg, FPQ_EXEC, "a blocking statement with a current schema");
        cr_assert_eq(s->group, 0);
        cr_assert_eq(s->outcome, FPQ_ANSWERED);
        prepares += s->msg == FPQ_PREPARE;
    }
    cr_assert_geq(prepares, 5);
    cr_assert_eq(fpq_stmt_at(n - 1)->msg, FPQ_SYNC);
    ctx_close(&c);
}

/* No schema: the pipelined check fails, a blocking connection migrates
 * under the advisory lock and joins the pool. */
Test(pg_pipeline, startup_migrates_under_the_advisory_lock)
{
    static const char *const order[] = {
        "SET statement_timeout", "SELECT pg_advisory_lock(", "CREATE TABLE IF NOT EXISTS schema_version",
        "BEGIN", "SELECT coalesce(max(version), 0) FROM schema_version", "CREATE TABLE webhooks(",
        "CREATE TABLE api_tokens(", "ALTER TABLE webhooks ADD COLUMN body bytea",
        "ALTER TABLE webhooks ADD COLUMN dstate smallint",
        "DROP INDEX webhooks_pending_source",
        "DELETE FROM schema_version;INSERT INTO schema_version(version) VALUES(5)", "COMMIT",
        "SELECT pg_advisory_unlock(",
    };
    struct ctx c;
    fpq_set_schema(-1);
    ctx_open(&c, 1, 2000);
    cr_assert_eq(fpq_schema(), FPQ_SCHEMA_CURRENT);
    cr_assert_eq(fpq_stmt_at(0)->outcome, FPQ_FAILED);
    cr_assert(fpq_connect_at(0)->finished, "the spoilt pipeline was not closed");
    size_t k = 0;
    for (size_t i = 0; i < fpq_nstmts() && k < sizeof order / sizeof order[0]; i++) {
        const struct fpq_stmt *s = fpq_stmt_at(i);
        if (s->msg == FPQ_EXEC && strncmp(s->sql, order[k], strlen(order[k])) == 0) {
            cr_assert_eq(s->conn, 2);
            k++;
        }
    }
    cr_assert_eq(k, sizeof order / sizeof order[0], "missing or out of order: %s", order[k]);

    struct rec w;
    ins(&c, &w, "W");
    submit(&w);
    RUN_UNTIL(&c, w.dones, 1000);
    assert_once(&w, "W", 0);
    cr_assert_eq(fpq_send_at("ins", "W", 0)->conn, 2);
    ctx_close(&c);
}

/* A version 1 schema (webhooks only) gets the later migrations, not the
 * first one again: the pipelined setup failed on the missing tables. */
Test(pg_pipeline, startup_migrates_an_older_schema)
{
    struct ctx c;
    fpq_set_schema(1);
    ctx_open(&c, 1, 2000);
    cr_assert_eq(fpq_schema(), FPQ_SCHEMA_CURRENT);
    unsigned webhooks = 0, tokens = 0, ingress = 0;
    for (size_t i = 0; i < fpq_nstmts(); i++) {
        const struct fpq_stmt *s = fpq_stmt_at(i);
        if (s->msg != FPQ_EXEC)
            continue;
        webhooks += strncmp(s->sql, "CREATE TABLE webhooks(", 22) == 0;
        tokens += strncmp(s->sql, "CREATE TABLE api_tokens(", 24) == 0;
        ingress += strncmp(s->sql, "ALTER TABLE webhooks ADD COLUMN body", 36) == 0;
    }
    cr_assert_eq(webhooks, 0);
    cr_assert_eq(tokens, 1);
    cr_assert_eq(ingress, 1);
    ctx_close(&c);
}

/* A version 2 schema (webhooks and credentials) gets the ingress columns
 * only. */
Test(pg_pipeline, startup_migrates_a_version_2_schema)
{
    struct ctx c;
    fpq_set_schema(2);
    ctx_open(&c, 1, 2000);
    cr_assert_eq(fpq_schema(), FPQ_SCHEMA_CURRENT);
    unsigned older = 0, ingress = 0;
    for (size_t i = 0; i < fpq_nstmts(); i++) {
        const struct fpq_stmt *s = fpq_stmt_at(i);
        if (s->msg != FPQ_EXEC)
            continue;
        older += strncmp(s->sql, "CREATE TABLE webhooks(", 22) == 0 ||
                 strncmp(s->sql, "CREATE TABLE api_tokens(", 24) == 0;
        if (strncmp(s->sql, "ALTER TABLE webhooks ADD COLUMN body", 36) == 0) {
            ingress++;
            cr_assert(strstr(s->sql, "CREATE UNIQUE INDEX webhooks_delivery ON webhooks(delivery_id, source)"
                                     " WHERE delivery_id IS NOT NULL") != NULL, "%s", s->sql);
        }
    }
    cr_assert_eq(older, 0);
    cr_assert_eq(ingress, 1);
    ctx_close(&c);
}

Test(pg_pipeline, startup_refuses_a_newer_schema)
{
    fpq_set_schema(FPQ_SCHEMA_CURRENT + 1);
    struct hk_pg_config cfg = {.url = URL, .pool = 1, .timeout_ms = 2000, .loops = 1};
    char err[512];
    cr_assert_null(hk_pg_open(&cfg, err, sizeof err));
    cr_assert(strstr(err, "newer") != NULL, "%s", err);
    cr_assert_eq(fpq_cleanup(), 0);
    assert_no_leaks();
}

Test(pg_pipeline, startup_without_a_connection_fails_with_the_reason)
{
    fpq_fail_connects(10, false);
    struct hk_pg_config cfg = {.url = URL, .pool = 1, .timeout_ms = 2000, .loops = 2};
    char err[512];
    cr_assert_null(hk_pg_open(&cfg, err, sizeof err));
    cr_assert(strstr(err, "Connection refused") != NULL, "%s", err);
    cr_assert(strstr(err, "s3cret") == NULL, "%s", err);
    cr_assert_eq(fpq_nconnects(), 2);
    cr_assert_eq(fpq_cleanup(), 0);
    assert_no_leaks();
}

/* ---- ingress rows ------------------------------------------------------------ */

static const uint8_t digest[32] = {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15,
                                   16, 17, 18, 19, 20, 21, 22, 23, 24, 25, 26, 27, 28, 29, 30, 255};

/* An ingress row of `source` with this delivery id (or NULL) and body. */
static void hook(struct ctx *c, struct rec *r, const char *source, const char *delivery, const void *body,
                 size_t body_len)
{
    rec_init(c, r, HK_OP_INSERT);
    struct hk_webhook *w = &r->op.row;
    w->source = source;
    w->source_len = strlen(source);
    w->event_type = "push";
    w->event_type_len = 4;
    w->ingress = true;
    w->body = body;
    w->body_len = body_len;
    w->body_sha256 = digest;
    w->content_type = "application/json";
    w->content_type_len = 16;
    w->delivery_id = delivery;
    w->delivery_id_len = delivery ? strlen(delivery) : 0;
    w->headers = "{\"x-a\":\"1\"}";
    w->headers_len = strlen(w->headers);
    w->verified = "{\"scheme\":\"github\",\"secret\":\"env:GH\"}";
    w->verified_len = strlen(w->verified);
    w->client_addr = "192.0.2.7";
    w->client_addr_len = 9;
}

static void assert_hook_fields(const struct rec *r, const char *body, size_t body_len, const char *delivery)
{
    cr_assert(r->ingress);
    cr_assert_eq(r->body_len, body_len);
    cr_assert(body_len == 0 || memcmp(r->body, body, body_len) == 0);
    cr_assert(r->has_sha);
    cr_assert_arr_eq(r->sha, digest, 32);
    cr_assert_str_eq(r->ctype, "application/json");
    cr_assert_str_eq(r->delivery, delivery ? delivery : "(null)");
    cr_assert_str_eq(r->headers, "{\"x-a\":\"1\"}");
    cr_assert_str_eq(r->verified, "{\"scheme\":\"github\",\"secret\":\"env:GH\"}");
    cr_assert_str_eq(r->client, "192.0.2.7");
    cr_assert_str_eq(r->row_payload, "(null)", "an ingress row's payload column stays NULL");
}

Test(pg_pipeline, ingress_insert_is_byte_exact_and_dedups_on_the_delivery_id)
{
    struct ctx c;
    ctx_open(&c, 1, 2000);
    static const char body[] = "{\"a\":\"\0\xff\"}";   /* a NUL, and a byte that is no UTF-8 */
    struct rec a, b, d, e, g;
    hook(&c, &a, "gh", "d-1", body, sizeof body - 1);
    a.op.row.payload = "ignored";   /* an ingress row's payload is not stored */
    a.op.row.payload_len = 7;
    a.op.idem_key = "ignored-too";
    submit(&a);
    RUN_UNTIL(&c, a.dones, 1000);
    assert_once(&a, "first", 0);
    cr_assert_not(a.replayed);
    cr_assert_eq(a.rows, 1);
    assert_hook_fields(&a, body, sizeof body - 1, "d-1");

    /* Every field went as a binary parameter, the body byte for byte. */
    const struct fpq_stmt *s = fpq_send_at("ins_hook", "gh", 0);
    cr_assert_not_null(s);
    cr_assert_eq(s->nparams, 14);
    cr_assert_eq(s->result_format, 1);
    cr_assert_str_eq(s->param[1], "push");
    cr_assert_eq(fpq_param_i64(s, 2), a.op.row.received_us);
    cr_assert_eq(s->len[3], (int)sizeof body - 1);
    cr_assert_arr_eq(s->param[3], body, sizeof body - 1);
    cr_assert_str_eq(s->param[4], "application/json");
    cr_assert_str_eq(s->param[5], "d-1");
    cr_assert_eq(s->len[6], 32);
    cr_assert_arr_eq(s->param[6], digest, 32);
    cr_assert_str_eq(s->param[9], "192.0.2.7");
    cr_assert_eq(fpq_sends("ins_idem", NULL), 0, "an ingress row never takes the idempotency path");

    /* The same delivery again, another body: the original, nothing stored. */
    hook(&c, &b, "gh", "d-1", "other", 5);
    submit(&b);
    RUN_UNTIL(&c, b.dones, 1000);
    assert_once(&b, "again", 0);
    cr_assert(b.replayed);
    cr_assert_eq(b.row_id, a.row_id);
    cr_assert_eq(b.row_received_us, a.row_received_us);
    /* Only the id and time come back (the body is not sent back). */
    cr_assert_eq(fpq_rows("gh"), 1);

    /* The id is per source; no id never deduplicates; an empty body is
     * an empty bytea, not NULL. */
    hook(&c, &d, "stripe", "d-1", "x", 1);
    hook(&c, &e, "gh", NULL, NULL, 0);
    hook(&c, &g, "gh", NULL, NULL, 0);
    submit(&d);
    submit(&e);
    submit(&g);
    RUN_UNTIL(&c, d.dones && e.dones && g.dones, 1000);
    assert_once(&d, "other source", 0);
    assert_once(&e, "no id", 0);
    assert_once(&g, "no id again", 0);
    cr_assert_not(d.replayed || e.replayed || g.replayed);
    cr_assert(d.row_id != a.row_id && e.row_id != g.row_id);
    assert_hook_fields(&e, NULL, 0, NULL);
    const struct fpq_stmt *se = fpq_send_at("ins_hook", "gh", 2);
    cr_assert_not_null(se->param[3], "an empty body was sent as NULL");
    cr_assert_eq(se->len[3], 0);
    cr_assert_null(se->param[5]);
    cr_assert_eq(fpq_rows("gh"), 3);

    /* GET reads every field back; an envelope row reads as one. */
    struct rec r1, r2, env;
    ins(&c, &env, "plain");
    submit(&env);
    RUN_UNTIL(&c, env.dones, 1000);
    get(&c, &r1, a.row_id);
    get(&c, &r2, env.row_id);
    submit(&r1);
    submit(&r2);
    RUN_UNTIL(&c, r1.dones && r2.dones, 1000);
    assert_once(&r1, "get ingress", 0);
    assert_hook_fields(&r1, body, sizeof body - 1, "d-1");
    cr_assert_eq(r1.row_received_us, a.row_received_us);
    assert_once(&r2, "get envelope", 0);
    cr_assert_not(r2.ingress);
    cr_assert_not(r2.has_sha);
    cr_assert_str_eq(r2.delivery, "(null)");
    cr_assert_str_eq(r2.row_payload, "{}");
    ctx_close(&c);
}

/* A value the server would refuse never reaches it: HK_EINVAL inside
 * submit, nothing sent. */
Test(pg_pipeline, ingress_input_refused_before_sending)
{
    struct ctx c;
    ctx_open(&c, 1, 2000);
    struct rec r;
    for (int k = 0; k < 8; k++) {
        hook(&c, &r, "gh", "d-1", "{}", 2);
        struct hk_webhook *w = &r.op.row;
        switch (k) {
        case 0: w->delivery_id = "d\0x"; w->delivery_id_len = 3; break;
        case 1: w->headers = "{\"a\":\"\xc3\"}"; w->headers_len = 9; break;
        case 2: w->body_sha256 = NULL; break;
        case 3: w->body = NULL; break;
        case 4: w->client_addr = "\0"; w->client_addr_len = 1; break;
        case 5: w->content_type = "te\0t"; w->content_type_len = 4; break;
        case 6: w->verified = "\xff"; w->verified_len = 1; break;
        default: w->source = NULL; break;
        }
        cr_assert_eq(hk_store_submit(c.sl, &r.op), 0);
        assert_once(&r, "refused", HK_EINVAL);
    }
    rec_init(&c, &r, HK_OP_LIST);
    r.op.list.delivery_id = "\xc0\x80";
    r.op.list.delivery_id_len = 2;
    cr_assert_eq(hk_store_submit(c.sl, &r.op), 0);
    assert_once(&r, "list", HK_EINVAL);
    cr_assert_eq(fpq_sends("ins_hook", NULL), 0);
    cr_assert_eq(fpq_sends("list4", NULL), 0);
    ctx_close(&c);
}

static void list_by(struct ctx *c, struct rec *r, const char *source, const char *event_type,
                    const char *delivery)
{
    rec_init(c, r, HK_OP_LIST);
    r->op.list.source = source;
    r->op.list.source_len = source ? strlen(source) : 0;
    r->op.list.event_type = event_type;
    r->op.list.event_type_len = event_type ? strlen(event_type) : 0;
    r->op.list.delivery_id = delivery;
    r->op.list.delivery_id_len = delivery ? strlen(delivery) : 0;
    r->op.list.limit = 10;
    submit(r);
    RUN_UNTIL(c, r->dones, 1000);
    assert_once(r, "list", 0);
}

/* One statement per filter combination: the delivery id is bit 2 and $5. */
Test(pg_pipeline, list_filters_on_the_delivery_id)
{
    struct ctx c;
    ctx_open(&c, 1, 2000);
    struct rec h[4];
    hook(&c, &h[0], "gh", "d1", "a", 1);
    hook(&c, &h[1], "gh", "d2", "b", 1);
    hook(&c, &h[2], "st", "d1", "c", 1);
    ins(&c, &h[3], "gh");
    for (int i = 0; i < 4; i++)
        submit(&h[i]);
    RUN_UNTIL(&c, h[0].dones && h[1].dones && h[2].dones && h[3].dones, 1000);

    struct rec r;
    list_by(&c, &r, NULL, NULL, "d1");
    cr_assert_eq(r.nids, 2);
    cr_assert_eq(r.ids[0], h[2].row_id, "newest first");
    cr_assert_eq(r.ids[1], h[0].row_id);
    const struct fpq_stmt *s = fpq_send_at("list4", NULL, 0);
    cr_assert_not_null(s);
    cr_assert_eq(s->nparams, 9);
    cr_assert_str_eq(s->param[4], "d1");
    cr_assert_eq(fpq_param_i64(s, 5), INT64_MIN, "no time bound: -infinity");
    cr_assert_eq(fpq_param_i64(s, 6), INT64_MAX, "no time bound: infinity");
    cr_assert_eq(s->result_format, 1);

    list_by(&c, &r, "gh", NULL, "d1");
    cr_assert_eq(r.nids, 1);
    cr_assert_eq(r.ids[0], h[0].row_id);
    cr_assert_eq(fpq_sends("list5", "gh"), 1);
    list_by(&c, &r, NULL, "push", "d2");
    cr_assert_eq(r.nids, 1);
    cr_assert_eq(r.ids[0], h[1].row_id);
    cr_assert_eq(fpq_sends("list6", NULL), 1);
    list_by(&c, &r, "st", "push", "d1");
    cr_assert_eq(r.nids, 1);
    cr_assert_eq(r.ids[0], h[2].row_id);
    cr_assert_eq(fpq_sends("list7", "st"), 1);
    list_by(&c, &r, "st", "push", "d2");
    cr_assert_eq(r.nids, 0);
    list_by(&c, &r, "gh", NULL, NULL);
    cr_assert_eq(r.nids, 3, "without the filter, envelope rows too");
    cr_assert_null(fpq_send_at("list1", "gh", 0)->param[4]);
    ctx_close(&c);
}

/* A failing statement is logged by its primary message only: the DETAIL a
 * server adds may quote the row (body, headers). */
Test(pg_pipeline, failed_ingress_insert_logs_no_row_data)
{
    struct ctx c;
    struct plan p = {.r = {{.armed = true, .msg = FPQ_EXECUTE, .name = "ins_hook", .once = true,
                            .reply = {FPQ_FAIL, "23514",
                                      "ERROR:  new row for relation \"webhooks\" violates check constraint"
                                      " \"webhooks_body_sha256_len\"\nDETAIL:  Failing row contains"
                                      " (7, gh, push, SECRET-BODY, {\"authorization\":\"SECRET-HDR\"})."}}}};
    fpq_script(plan_script, &p);
    ctx_open(&c, 1, 2000);
    hk_log_set_level(HK_LOG_WARN);
    char path[] = "/tmp/hk_pgpipe_log_XXXXXX";
    int fd = mkstemp(path);
    cr_assert_geq(fd, 0);
    int saved = dup(STDERR_FILENO);
    dup2(fd, STDERR_FILENO);
    struct rec r;
    hook(&c, &r, "gh", "d-1", "SECRET-BODY", 11);
    submit(&r);
    RUN_UNTIL(&c, r.dones, 1000);
    dup2(saved, STDERR_FILENO);
    close(saved);
    assert_once(&r, "failed", HK_EINVAL);
    char log[4096] = "";
    ssize_t n = pread(fd, log, sizeof log - 1, 0);
    close(fd);
    unlink(path);
    cr_assert_gt(n, 0);
    log[n] = '\0';
    cr_assert(strstr(log, "violates check constraint") != NULL, "%s", log);
    cr_assert(strstr(log, "23514") != NULL, "%s", log);
    cr_assert_null(strstr(log, "SECRET"), "%s", log);
    cr_assert_null(strstr(log, "Failing row"), "%s", log);
    ctx_close(&c);
}

/* ---- time bounds and per-source figures (GraphQL) ------------------------------- */

/* The bounds go as $6 and $7 of every list variant, binary timestamptz
 * (microseconds from 2000-01-01; -infinity and infinity when unset),
 * clamped to the dates RFC 3339 can name; rows on a bound are left out
 * (both exclusive). */
Test(pg_pipeline, list_time_bounds_are_parameters_6_and_7)
{
    struct ctx c;
    ctx_open(&c, 1, 2000);
    int64_t id[5];
    for (int i = 0; i < 5; i++)
        id[i] = fpq_seed(i % 2 ? "b" : "a", "e", "{}", 1000 * (i + 1), NULL);

    struct rec r;
    rec_init(&c, &r, HK_OP_LIST);
    r.op.list.limit = 10;
    r.op.list.received_after_us = 2000;
    r.op.list.received_before_us = 5000;
    submit(&r);
    RUN_UNTIL(&c, r.dones, 1000);
    assert_once(&r, "list", 0);
    cr_assert_eq(r.nids, 2, "3000 and 4000: both bounds exclusive");
    cr_assert_eq(r.ids[0], id[3]);
    cr_assert_eq(r.ids[1], id[2]);
    const struct fpq_stmt *s = fpq_send_at("list0", NULL, 1);
    cr_assert_not_null(s);
    cr_assert_eq(s->nparams, 9);
    cr_assert_eq(s->len[5], 8);
    cr_assert_eq(fpq_param_i64(s, 5), 2000 - FPQ_PG_EPOCH_US);
    cr_assert_eq(fpq_param_i64(s, 6), 5000 - FPQ_PG_EPOCH_US);

    /* One bound alone, with a source filter: the other stays NULL. */
    rec_init(&c, &r, HK_OP_LIST);
    r.op.list.source = "a";
    r.op.list.source_len = 1;
    r.op.list.received_after_us = 1000;
    submit(&r);
    RUN_UNTIL(&c, r.dones, 1000);
    assert_once(&r, "list", 0);
    cr_assert_eq(r.nids, 2);
    cr_assert_eq(r.ids[0], id[4]);
    cr_assert_eq(r.ids[1], id[2]);
    s = fpq_send_at("list1", "a", 0);
    cr_assert_not_null(s);
    cr_assert_eq(fpq_param_i64(s, 5), 1000 - FPQ_PG_EPOCH_US);
    cr_assert_eq(fpq_param_i64(s, 6), INT64_MAX);

    /* Out of range: clamped, so the server can always convert them. */
    rec_init(&c, &r, HK_OP_LIST);
    r.op.list.received_after_us = INT64_MIN;
    r.op.list.received_before_us = INT64_MAX;
    submit(&r);
    RUN_UNTIL(&c, r.dones, 1000);
    assert_once(&r, "list", 0);
    cr_assert_eq(r.nids, 5);
    s = fpq_send_at("list0", NULL, 2);
    cr_assert_not_null(s);
    cr_assert_eq(fpq_param_i64(s, 5), HK_STORE_LIST_TIME_MIN - FPQ_PG_EPOCH_US);
    cr_assert_eq(fpq_param_i64(s, 6), HK_STORE_TIME_MAX - FPQ_PG_EPOCH_US);
    ctx_close(&c);
}

/* What on_stats saw. */
struct stats_rec {
    struct rec r;              /* first: on_done takes op->data as a rec */
    char source[4][16];
    int64_t count[4], last[4];
    int n;
};

static void on_stats(struct hk_store_op *op, const struct hk_source_stats *st)
{
    struct stats_rec *sr = op->data;
    cr_assert_lt(sr->n, 4);
    cr_assert_lt(st->source_len, sizeof sr->source[0]);
    snprintf(sr->source[sr->n], sizeof sr->source[0], "%.*s", (int)st->source_len, st->source);
    sr->count[sr->n] = st->count;
    sr->last[sr->n] = st->last_received_us;
    sr->n++;
}

static void stats_init(struct ctx *c, struct stats_rec *sr)
{
    memset(sr, 0, sizeof *sr);
    rec_init(c, &sr->r, HK_OP_SOURCE_STATS);
    sr->r.op.on_stats = on_stats;
    sr->r.op.data = sr;
}

/* A read: answered when its rows come, without parameters, in binary; in
 * a group that another op fails, it goes again like any read. */
Test(pg_pipeline, source_stats_is_a_read_that_goes_again)
{
    struct ctx c;
    struct plan p = {.r = {{.armed = true, .msg = FPQ_EXECUTE, .name = "ins", .p0 = "bad",
                            .reply = FAIL("23514")}}};
    fpq_script(plan_script, &p);
    ctx_open(&c, 1, 2000);
    fpq_seed("zeta", "e", "{}", 10, NULL);
    fpq_seed("alpha", "e", "{}", 20, NULL);
    fpq_seed("zeta", "e", "{}", 30, NULL);
    fpq_seed("Beta", "e", "{}", 40, NULL);

    struct stats_rec sr;
    stats_init(&c, &sr);
    submit(&sr.r);
    RUN_UNTIL(&c, sr.r.dones, 1000);
    assert_once(&sr.r, "stats", 0);
    cr_assert_eq(sr.n, 3);
    cr_assert_str_eq(sr.source[0], "Beta", "byte order: upper case first");
    cr_assert_eq(sr.count[0], 1);
    cr_assert_eq(sr.last[0], 40);
    cr_assert_str_eq(sr.source[1], "alpha");
    cr_assert_eq(sr.count[1], 1);
    cr_assert_eq(sr.last[1], 20);
    cr_assert_str_eq(sr.source[2], "zeta");
    cr_assert_eq(sr.count[2], 2);
    cr_assert_eq(sr.last[2], 30);
    const struct fpq_stmt *s = fpq_send_at("stats", NULL, 0);
    cr_assert_not_null(s);
    cr_assert_eq(s->nparams, 0);
    cr_assert_eq(s->result_format, 1);

    /* Behind an insert that fails its group: aborted, then sent again. */
    struct rec bad;
    ins(&c, &bad, "bad");
    stats_init(&c, &sr);
    sr.r.op.on_stats = NULL;   /* may be NULL */
    submit(&bad);
    submit(&sr.r);
    RUN_UNTIL(&c, bad.dones && sr.r.dones, 1000);
    assert_once(&bad, "bad", HK_EINVAL);
    assert_once(&sr.r, "stats", 0);
    cr_assert_eq(sr.n, 0);
    cr_assert_eq(fpq_sends("stats", NULL), 3);
    cr_assert_eq(fpq_send_at("stats", NULL, 1)->outcome, FPQ_ABORTED);
    cr_assert_eq(fpq_send_at("stats", NULL, 2)->outcome, FPQ_ANSWERED);
    ctx_close(&c);
}

/* ---- statements prepared on first use ------------------------------------------- */

/* The Parses of `name` sent so far (on any connection). */
static unsigned prepares(const char *name)
{
    unsigned n = 0;
    for (size_t i = 0; i < fpq_nstmts(); i++) {
        const struct fpq_stmt *s = fpq_stmt_at(i);
        n += s->msg == FPQ_PREPARE && strcmp(s->name, name) == 0;
    }
    return n;
}

/* The index of the n-th Parse of `name`. */
static size_t prepare_at(const char *name, unsigned n)
{
    for (size_t i = 0; i < fpq_nstmts(); i++) {
        const struct fpq_stmt *s = fpq_stmt_at(i);
        if (s->msg == FPQ_PREPARE && strcmp(s->name, name) == 0 && n-- == 0)
            return i;
    }
    cr_assert_fail("%s was not prepared that often", name);
    return 0;
}

/* The setup prepares the statements of the first requests only; another
 * one is prepared the first time the connection runs it, right before it
 * in the same group, and once. */
Test(pg_pipeline, statements_are_prepared_on_first_use_once_per_connection)
{
    struct ctx c;
    int64_t id[2] = {fpq_seed("a", "e", "{}", 1, NULL), fpq_seed("b", "e", "{}", 2, NULL)};
    ctx_open(&c, 1, 2000);
    cr_assert_eq(prepares("ins"), 1, "a hot statement: in the setup");
    cr_assert_eq(prepares("get"), 1);
    cr_assert_eq(prepares("del"), 0, "not used yet, not prepared");
    cr_assert_eq(prepares("ping"), 0);

    struct rec d;
    rec_init(&c, &d, HK_OP_DELETE);
    d.op.id = id[0];
    submit(&d);
    RUN_UNTIL(&c, d.dones, 1000);
    assert_once(&d, "first delete", 0);
    cr_assert_eq(prepares("del"), 1);
    size_t p = prepare_at("del", 0);
    const struct fpq_stmt *e = fpq_send_at("del", NULL, 0);
    cr_assert_eq((size_t)(e - fpq_stmt_at(0)), p + 1, "the Parse right before the first execution");
    cr_assert_eq(fpq_stmt_at(p)->group, e->group, "in the same group: no round trip of its own");
    cr_assert_eq(fpq_stmt_at(p)->conn, e->conn);

    rec_init(&c, &d, HK_OP_DELETE);
    d.op.id = id[1];
    submit(&d);
    RUN_UNTIL(&c, d.dones, 1000);
    assert_once(&d, "second delete", 0);
    cr_assert_eq(fpq_sends("del", NULL), 2);
    cr_assert_eq(prepares("del"), 1, "prepared once per connection");
    ctx_close(&c);
}

/* A Parse that a failed group skipped is not prepared: the op that needed
 * it goes again, with its Parse, and succeeds. */
Test(pg_pipeline, a_parse_skipped_by_a_failed_group_is_sent_again)
{
    struct ctx c;
    struct plan p = {.r = {{.armed = true, .msg = FPQ_EXECUTE, .name = "ins", .p0 = "BAD",
                            .reply = FAIL("23514")}}};
    int64_t id = fpq_seed("a", "e", "{}", 1, NULL);
    fpq_script(plan_script, &p);
    ctx_open(&c, 1, 2000);

    struct rec bad, d;
    ins(&c, &bad, "BAD");
    rec_init(&c, &d, HK_OP_DELETE);
    d.op.id = id;
    submit(&bad);
    submit(&d);   /* the same group, behind the failing insert */
    RUN_UNTIL(&c, bad.dones && d.dones, 2000);
    cr_assert_neq(bad.status, 0);
    assert_once(&d, "delete", 0);
    cr_assert_eq(fpq_stmt_at(prepare_at("del", 0))->outcome, FPQ_ABORTED);
    cr_assert_eq(prepares("del"), 2, "the skipped Parse went again");
    cr_assert_eq(fpq_send_at("del", NULL, 1)->outcome, FPQ_ANSWERED);
    cr_assert_eq(fpq_rows("a"), 0, "the delete ran");
    ctx_close(&c);
}

/* A Parse holds only if its group commits. While that group is out, a
 * later group on the same connection must not run the statement without
 * one: had the first group failed, the statement would not exist, and an
 * op that did nothing wrong would fail ("prepared statement does not
 * exist"). Here the second group is one of new ops behind a group of ops
 * sent again, whose own failure skips the Parse. */
Test(pg_pipeline, a_later_group_does_not_rely_on_a_parse_still_out)
{
    struct ctx c;
    struct plan p = {.r = {{.armed = true, .msg = FPQ_EXECUTE, .name = "ins", .p0 = "HOLD", .once = true,
                            .reply = HOLD},
                           {.armed = true, .msg = FPQ_EXECUTE, .name = "ins", .p0 = "BAD",
                            .reply = FAIL("23514")}}};
    int64_t id1 = fpq_seed("a", "e", "{}", 1, NULL), id2 = fpq_seed("b", "e", "{}", 2, NULL);
    fpq_script(plan_script, &p);
    ctx_open(&c, 1, 2000);

    /* One group, held at its first insert: a bad insert and the first
     * delete (with its Parse) behind it. */
    struct rec h, bad, d1, d2;
    ins(&c, &h, "HOLD");
    ins(&c, &bad, "BAD");
    rec_init(&c, &d1, HK_OP_DELETE);
    d1.op.id = id1;
    submit(&h);
    submit(&bad);
    submit(&d1);
    RUN_UNTIL(&c, fpq_held(1) != NULL, 1000);
    /* A new delete waits while that group is out. */
    rec_init(&c, &d2, HK_OP_DELETE);
    d2.op.id = id2;
    submit(&d2);
    run_for(&c, 20);
    cr_assert_eq(fpq_sends("del", NULL), 1);

    /* The held insert fails: the bad insert and the first delete go again
     * in a group of their own (with del's Parse), the new delete in a
     * group behind it; the bad insert fails that group too. */
    const struct fpq_reply fail = FAIL("23514");
    cr_assert(fpq_release(1, &fail));
    RUN_UNTIL(&c, h.dones && bad.dones && d1.dones && d2.dones, 2000);
    cr_assert_neq(h.status, 0);
    cr_assert_neq(bad.status, 0);
    assert_once(&d1, "first delete", 0);
    assert_once(&d2, "second delete", 0);
    cr_assert_eq(fpq_rows("a") + fpq_rows("b"), 0, "both deletes ran");
    for (unsigned i = 0; i < fpq_sends("del", NULL); i++)
        cr_assert_neq(fpq_send_at("del", NULL, i)->outcome, FPQ_FAILED,
                      "delete %u ran without its statement", i);
    ctx_close(&c);
}

/* A loop that detaches leaves its idle connection to the next one to
 * attach (hookd's first-start token check runs on a loop of its own
 * before the server's): no second connect, no second setup. */
Test(pg_pipeline, a_detached_loops_connection_goes_to_the_next_loop)
{
    struct ctx c;
    ctx_open(&c, 1, 2000);
    struct rec g;
    get(&c, &g, 1);
    submit(&g);
    RUN_UNTIL(&c, g.dones, 1000);
    c.s->vt->loop_detach(c.sl);
    for (int i = 0; i < 5; i++)
        uv_run(&c.loop, UV_RUN_NOWAIT);   /* the detach's handles close */
    cr_assert_eq(fpq_open_conns(), 1, "kept for the next loop");

    uv_loop_t loop2;
    struct hk_store_loop *sl2;
    cr_assert_eq(uv_loop_init(&loop2), 0);
    cr_assert_eq(c.s->vt->loop_attach(c.s, &loop2, &sl2), 0);
    cr_assert_eq(hk_store_health(sl2), 0, "ready at once");
    cr_assert_eq(fpq_nconnects(), 1, "the same connection");
    c.sl = sl2;
    get(&c, &g, 1);
    g.op.id = fpq_seed("x", "e", "{}", 5, NULL);
    submit(&g);
    uint64_t until = uv_now(&loop2) + 1000;
    while (!g.dones && uv_now(&loop2) < until)
        uv_run(&loop2, UV_RUN_ONCE);
    assert_once(&g, "get on the second loop", 0);
    cr_assert_eq(g.rows, 1);
    cr_assert_eq(prepares("get"), 1, "not prepared again");
    c.s->vt->loop_detach(sl2);
    cr_assert_eq(uv_run(&loop2, UV_RUN_DEFAULT), 0);
    cr_assert_eq(uv_loop_close(&loop2), 0);
    uv_close((uv_handle_t *)&c.guard, NULL);
    cr_assert_eq(uv_run(&c.loop, UV_RUN_DEFAULT), 0);
    cr_assert_eq(uv_loop_close(&c.loop), 0);
    c.s->vt->close(c.s);
    cr_assert_eq(fpq_cleanup(), 0, "connections the store never closed");
    assert_no_leaks();
}
