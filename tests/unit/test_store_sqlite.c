/* SPDX-License-Identifier: MIT
 * Unit tests for store/sqlite.c against a real database file in a fresh temp
 * directory and a real uv loop: schema, round trips, lists and streams, group
 * commit, idempotency, two loops at once, crash durability, queue limit, health,
 * failure spells (a locked database, and a full or failing disk through a
 * fault-injecting VFS), the credential ops (tokens, sessions, the sweep),
 * and ingress rows (byte-exact bodies, dedup on the delivery id, two loops
 * racing on the same deliveries, the delivery-id filter and its index, the
 * migration from version 2). */
#include <criterion/criterion.h>
#include <dirent.h>
#include <fcntl.h>
#include <inttypes.h>
#include <sched.h>
#include <stdatomic.h>
#include <signal.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <uv.h>

#include "core/clock.h"
#include "core/config.h"
#include "store/store.h"

#if defined(__SANITIZE_ADDRESS__)
#include <sanitizer/lsan_interface.h>
#define HAVE_LSAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#include <sanitizer/lsan_interface.h>
#define HAVE_LSAN 1
#endif
#endif

/* A store bug tends to hang uv_run rather than crash; fail instead. */
TestSuite(store_sqlite, .timeout = 60);

/* ---- harness ---------------------------------------------------------- */

struct ctx {
    char dir[64];
    char path[128];
    uint32_t queue_max;     /* for hk_sqlite_opts; 0: the default */
    uint32_t busy_ms;       /* for hk_sqlite_opts; 0: the default */
    struct hk_store *s;
    uv_loop_t loop;
    struct hk_store_loop *sl;
};

/* What an op's callbacks saw; copies the last row, collects list ids. */
struct got {
    int rows;
    int dones;
    int status;
    bool more;
    bool replayed;
    int64_t id;
    int64_t received_us;
    char source[256];
    size_t source_len;
    char event_type[256];
    size_t event_type_len;
    char payload[1024];
    size_t payload_len;
    bool payload_null;
    int64_t *ids;
    size_t nids;
    uint32_t batch_rows;
    uint32_t max_batch;
    int batches;
    /* The last row's ingress fields ("(null)" for a NULL text). */
    bool ingress;
    bool body_null;
    char body[256];
    size_t body_len;
    bool has_sha;
    uint8_t sha[32];
    char ctype[64], delivery[64], headers[128], verified[128], client[64];
    /* The last row's delivery. */
    int dstate, dattempts, dstatus;
    int64_t dnext_us, dupdated_us;
    char derror[256];
};

static void copy_str(char *dst, size_t cap, const char *src, size_t n)
{
    cr_assert_lt(n, cap, "string too long for the test buffer");
    cr_assert(n == 0 || src != NULL);
    if (n > 0)
        memcpy(dst, src, n);
    dst[n] = '\0';
}

static void on_row(struct hk_store_op *op, const struct hk_webhook *row)
{
    struct got *g = op->data;
    g->rows++;
    g->batch_rows++;
    g->id = row->id;
    g->received_us = row->received_us;
    copy_str(g->source, sizeof g->source, row->source, row->source_len);
    g->source_len = row->source_len;
    copy_str(g->event_type, sizeof g->event_type, row->event_type, row->event_type_len);
    g->event_type_len = row->event_type_len;
    g->payload_null = row->payload == NULL;
    copy_str(g->payload, sizeof g->payload, row->payload, row->payload_len);
    g->payload_len = row->payload_len;
    g->ids = realloc(g->ids, (g->nids + 1) * sizeof *g->ids);
    cr_assert_not_null(g->ids);
    g->ids[g->nids++] = row->id;
    g->ingress = row->ingress;
    g->body_null = row->body == NULL;
    cr_assert_leq(row->body_len, sizeof g->body);
    if (row->body_len > 0)
        memcpy(g->body, row->body, row->body_len);
    g->body_len = row->body_len;
    g->has_sha = row->body_sha256 != NULL;
    if (g->has_sha)
        memcpy(g->sha, row->body_sha256, 32);
#define KEEP(dst, p, n) copy_str(dst, sizeof dst, (p) ? (p) : "(null)", (p) ? (n) : 6)
    KEEP(g->ctype, row->content_type, row->content_type_len);
    KEEP(g->delivery, row->delivery_id, row->delivery_id_len);
    KEEP(g->headers, row->headers, row->headers_len);
    KEEP(g->verified, row->verified, row->verified_len);
    KEEP(g->client, row->client_addr, row->client_addr_len);
    KEEP(g->derror, row->delivery.last_error, row->delivery.last_error_len);
#undef KEEP
    g->dstate = row->delivery.state;
    g->dattempts = row->delivery.attempts;
    g->dstatus = row->delivery.last_status;
    g->dnext_us = row->delivery.next_us;
    g->dupdated_us = row->delivery.updated_us;
}

static void on_done(struct hk_store_op *op)
{
    struct got *g = op->data;
    g->dones++;
    g->status = op->status;
    g->more = op->more;
    g->replayed = op->replayed;
    g->batches++;
    if (g->batch_rows > g->max_batch)
        g->max_batch = g->batch_rows;
    g->batch_rows = 0;
}

static void got_free(struct got *g)
{
    free(g->ids);
    memset(g, 0, sizeof *g);
}

static void ctx_open(struct ctx *c, bool sync_full)
{
    char err[256];
    struct hk_sqlite_opts o = {.path = c->path, .sync_full = sync_full, .queue_max = c->queue_max,
                               .busy_ms = c->busy_ms};
    c->s = hk_sqlite_open(&o, err, sizeof err);
    cr_assert_not_null(c->s, "open failed: %s", err);
    cr_assert_str_eq(c->s->vt->name, "sqlite");
    cr_assert_eq(uv_loop_init(&c->loop), 0);
    cr_assert_eq(c->s->vt->loop_attach(c->s, &c->loop, &c->sl), 0);
    cr_assert_eq(c->sl->store, c->s);
}

static void ctx_init(struct ctx *c)
{
    memset(c, 0, sizeof *c);
    snprintf(c->dir, sizeof c->dir, "/tmp/hk_sqlite_XXXXXX");
    cr_assert_not_null(mkdtemp(c->dir));
    snprintf(c->path, sizeof c->path, "%s/hookd.db", c->dir);
}

/* Detach, prove the loop closes clean, close the store. */
static void ctx_close(struct ctx *c)
{
    c->s->vt->loop_detach(c->sl);
    cr_assert_eq(uv_run(&c->loop, UV_RUN_DEFAULT), 0);
    cr_assert_eq(uv_loop_close(&c->loop), 0);
    c->s->vt->close(c->s);
    c->s = NULL;
    c->sl = NULL;
}

/* Criterion does not fail a test over a LeakSanitizer report at exit, so
 * each test asks for a leak check itself as its last step. */
static void assert_no_leaks(void)
{
#ifdef HAVE_LSAN
    cr_assert_eq(__lsan_do_recoverable_leak_check(), 0, "LeakSanitizer found leaks (above)");
#endif
}

/* The last step of every test: remove the files, then check for leaks. */
static void rm_dir(struct ctx *c)
{
    static const char *const suffix[] = {"", "-wal", "-shm", "-journal"};
    char p[160];
    for (size_t i = 0; i < 4; i++) {
        snprintf(p, sizeof p, "%s%s", c->path, suffix[i]);
        unlink(p);
    }
    cr_assert_eq(rmdir(c->dir), 0, "leftover files in %s", c->dir);
    assert_no_leaks();
}

static void op_insert(struct hk_store_op *op, struct got *g, const char *src, const char *et,
                      const char *payload, const char *idem)
{
    memset(op, 0, sizeof *op);
    op->kind = HK_OP_INSERT;
    op->row.source = src;
    op->row.source_len = src ? strlen(src) : 0;
    op->row.event_type = et;
    op->row.event_type_len = et ? strlen(et) : 0;
    op->row.payload = payload;
    op->row.payload_len = payload ? strlen(payload) : 0;
    op->idem_key = idem;
    op->on_row = on_row;
    op->on_done = on_done;
    op->data = g;
}

/* Submit and run the loop until the store has nothing out. */
static void run_op(struct ctx *c, struct hk_store_op *op)
{
    struct got *g = op->data;
    int before = g->dones;
    cr_assert_eq(hk_store_submit(c->sl, op), 0);
    uv_run(&c->loop, UV_RUN_DEFAULT);
    cr_assert_eq(g->dones, before + 1, "on_done ran %d times", g->dones - before);
}

static int64_t insert(struct ctx *c, const char *src, const char *et, const char *payload)
{
    struct hk_store_op op;
    struct got g = {0};
    op_insert(&op, &g, src, et, payload, NULL);
    run_op(c, &op);
    cr_assert_eq(g.status, 0);
    cr_assert_eq(g.rows, 1);
    cr_assert_eq(g.replayed, false);
    cr_assert_eq(op.row.id, g.id);
    int64_t id = g.id;
    got_free(&g);
    return id;
}

static void op_by_id(struct hk_store_op *op, struct got *g, enum hk_op_kind kind, int64_t id)
{
    memset(op, 0, sizeof *op);
    op->kind = kind;
    op->id = id;
    op->on_row = on_row;
    op->on_done = on_done;
    op->data = g;
}

static int get(struct ctx *c, int64_t id, struct got *g)
{
    struct hk_store_op op;
    op_by_id(&op, g, HK_OP_GET, id);
    run_op(c, &op);
    return g->status;
}

static int del(struct ctx *c, int64_t id)
{
    struct hk_store_op op;
    struct got g = {0};
    op_by_id(&op, &g, HK_OP_DELETE, id);
    run_op(c, &op);
    cr_assert_eq(g.rows, 0);
    return g.status;
}

/* Insert n rows in one go (one group-commit wave); ids come back in `ids`. */
static void insert_many(struct ctx *c, int n, const char *src, const char *et, int64_t *ids)
{
    struct hk_store_op *ops = calloc((size_t)n, sizeof *ops);
    struct got *gs = calloc((size_t)n, sizeof *gs);
    cr_assert(ops && gs);
    for (int i = 0; i < n; i++) {
        op_insert(&ops[i], &gs[i], src, et, "{}", NULL);
        cr_assert_eq(hk_store_submit(c->sl, &ops[i]), 0);
    }
    uv_run(&c->loop, UV_RUN_DEFAULT);
    for (int i = 0; i < n; i++) {
        cr_assert_eq(gs[i].dones, 1);
        cr_assert_eq(gs[i].status, 0);
        cr_assert_eq(gs[i].rows, 1);
        if (ids != NULL)
            ids[i] = gs[i].id;
        got_free(&gs[i]);
    }
    free(ops);
    free(gs);
}

/* Direct SQL on the file, for checks that must not go through the store. */
static int64_t sql_int(const char *path, const char *sql)
{
    sqlite3 *db;
    sqlite3_stmt *st;
    cr_assert_eq(sqlite3_open_v2(path, &db, SQLITE_OPEN_READWRITE, NULL), SQLITE_OK);
    cr_assert_eq(sqlite3_prepare_v2(db, sql, -1, &st, NULL), SQLITE_OK, "%s: %s", sql,
                 sqlite3_errmsg(db));
    cr_assert_eq(sqlite3_step(st), SQLITE_ROW, "%s", sql);
    int64_t v = sqlite3_column_int64(st, 0);
    sqlite3_finalize(st);
    sqlite3_close(db);
    return v;
}

/* ---- schema ----------------------------------------------------------- */

Test(store_sqlite, creates_schema_version_4_in_wal)
{
    struct ctx c;
    ctx_init(&c);
    ctx_open(&c, true);
    cr_assert_eq(hk_store_health(c.sl), 0);
    ctx_close(&c);
    /* A clean close leaves the WAL with a frame or two of nothing in it
     * (store/sqlite_writer.c: hk__sq_writer_leave_wal). */
    char wal[160];
    snprintf(wal, sizeof wal, "%s-wal", c.path);
    struct stat sb;
    cr_assert_eq(stat(wal, &sb), 0);
    cr_assert(sb.st_size > 32 && sb.st_size < 64 * 1024, "WAL of %lld bytes", (long long)sb.st_size);

    cr_assert_eq(sql_int(c.path, "SELECT count(*) FROM schema_version"), 1);
    cr_assert_eq(sql_int(c.path, "SELECT version FROM schema_version"), 4);
    cr_assert_eq(sql_int(c.path, "SELECT count(*) FROM sqlite_master WHERE type = 'index'"
                                 " AND name IN ('webhooks_idem', 'webhooks_source_id',"
                                 " 'webhooks_event_type_id', 'sessions_expires',"
                                 " 'webhooks_delivery', 'webhooks_delivery_id')"), 5);
    cr_assert_eq(sql_int(c.path, "SELECT \"unique\" FROM pragma_index_list('webhooks')"
                                 " WHERE name = 'webhooks_delivery'"), 1);
    cr_assert_eq(sql_int(c.path, "SELECT count(*) FROM pragma_table_info('webhooks') WHERE name IN"
                                 " ('body', 'content_type', 'delivery_id', 'body_sha256', 'headers',"
                                 " 'verified', 'client_addr')"), 7);
    cr_assert_eq(sql_int(c.path, "SELECT count(*) FROM sqlite_master WHERE type = 'table'"
                                 " AND name IN ('api_tokens', 'sessions')"), 2);
    cr_assert_eq(sql_int(c.path, "SELECT count(*) FROM sqlite_master WHERE name = 'webhooks'"
                                 " AND sql LIKE '%AUTOINCREMENT%'"), 1);
    cr_assert_eq(sql_int(c.path, "SELECT \"unique\" FROM pragma_index_list('webhooks')"
                                 " WHERE name = 'webhooks_idem'"), 1);
    cr_assert_eq(sql_int(c.path, "SELECT count(*) FROM pragma_journal_mode"
                                 " WHERE journal_mode = 'wal'"), 1);
    rm_dir(&c);
}

Test(store_sqlite, reopen_keeps_data_and_never_reuses_ids)
{
    struct ctx c;
    ctx_init(&c);
    ctx_open(&c, false);
    int64_t a = insert(&c, "gh", "push", "{\"n\":1}");
    int64_t b = insert(&c, "gh", "push", "{\"n\":2}");
    int64_t d = insert(&c, "gh", "push", "{\"n\":3}");
    cr_assert(a < b && b < d);
    cr_assert_eq(del(&c, d), 0);
    ctx_close(&c);

    ctx_open(&c, false);
    struct got g = {0};
    cr_assert_eq(get(&c, a, &g), 0);
    cr_assert_str_eq(g.payload, "{\"n\":1}");
    got_free(&g);
    cr_assert_eq(get(&c, b, &g), 0);
    cr_assert_str_eq(g.payload, "{\"n\":2}");
    got_free(&g);
    /* AUTOINCREMENT: the deleted highest id is not handed out again. */
    cr_assert_gt(insert(&c, "gh", "push", "{}"), d);
    ctx_close(&c);

    cr_assert_eq(sql_int(c.path, "SELECT count(*) FROM webhooks"), 3);
    cr_assert_eq(sql_int(c.path, "SELECT count(*) FROM schema_version"), 1);
    rm_dir(&c);
}

Test(store_sqlite, refuses_newer_schema_and_bad_paths)
{
    struct ctx c;
    char err[256];
    ctx_init(&c);
    ctx_open(&c, false);
    ctx_close(&c);
    sqlite3 *db;
    cr_assert_eq(sqlite3_open(c.path, &db), SQLITE_OK);
    cr_assert_eq(sqlite3_exec(db, "UPDATE schema_version SET version = 99", NULL, NULL, NULL),
                 SQLITE_OK);
    sqlite3_close(db);
    cr_assert_null(hk_sqlite_open(&(struct hk_sqlite_opts){.path = c.path}, err, sizeof err));
    cr_assert_not_null(strstr(err, "99"), "errbuf: %s", err);
    rm_dir(&c);

    err[0] = '\0';
    cr_assert_null(hk_sqlite_open(&(struct hk_sqlite_opts){.path = "/nonexistent-dir/x/hookd.db"}, err,
                                  sizeof err));
    cr_assert_neq(err[0], '\0');
    cr_assert_null(strchr(err, '\n'));
}

/* The limits come from the configuration (HOOKD_SQLITE_QUEUE_MAX and
 * HOOKD_SQLITE_BUSY_MS), which refuses a bad value naming the variable;
 * hk_sqlite_open refuses one above its limit before creating anything. */
Test(store_sqlite, bad_tunable_fails_open)
{
    struct ctx c;
    char err[256];
    const char *bad[][2] = {{"HOOKD_SQLITE_QUEUE_MAX", "lots"}, {"HOOKD_SQLITE_QUEUE_MAX", "0"},
                            {"HOOKD_SQLITE_QUEUE_MAX", "16777217"}, {"HOOKD_SQLITE_BUSY_MS", "0"},
                            {"HOOKD_SQLITE_BUSY_MS", "600001"}};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        struct hk_config cfg;
        char *argv[] = {"hookd", NULL};
        setenv(bad[i][0], bad[i][1], 1);
        err[0] = '\0';
        cr_assert_eq(hk_config_load(&cfg, 1, argv, err, sizeof err), HK_CONFIG_ERROR,
                     "%s=%s accepted", bad[i][0], bad[i][1]);
        cr_assert_not_null(strstr(err, bad[i][0]), "errbuf: %s", err);
        hk_config_free(&cfg);
        unsetenv(bad[i][0]);
    }
    struct hk_config cfg;
    char *argv[] = {"hookd", NULL};
    setenv("HOOKD_SQLITE_QUEUE_MAX", "8", 1);
    setenv("HOOKD_SQLITE_BUSY_MS", "50", 1);
    cr_assert_eq(hk_config_load(&cfg, 1, argv, err, sizeof err), HK_CONFIG_RUN, "%s", err);
    cr_assert_eq(cfg.sqlite_queue_max, 8);
    cr_assert_eq(cfg.sqlite_busy_ms, 50);
    hk_config_free(&cfg);

    ctx_init(&c);
    cr_assert_null(hk_sqlite_open(&(struct hk_sqlite_opts){.path = c.path,
                                                            .queue_max = HK_SQLITE_QUEUE_MAX_LIMIT + 1},
                                  err, sizeof err));
    cr_assert_not_null(strstr(err, "queue_max"), "errbuf: %s", err);
    cr_assert_eq(access(c.path, F_OK), -1, "nothing is created on a bad setting");
    cr_assert_null(hk_sqlite_open(&(struct hk_sqlite_opts){.path = c.path,
                                                            .busy_ms = HK_SQLITE_BUSY_MS_LIMIT + 1},
                                  err, sizeof err));
    cr_assert_not_null(strstr(err, "busy_ms"), "errbuf: %s", err);
    cr_assert_eq(access(c.path, F_OK), -1, "nothing is created on a bad setting");
    rm_dir(&c);
}

/* ---- round trips ------------------------------------------------------ */

Test(store_sqlite, insert_get_round_trip)
{
    struct ctx c;
    ctx_init(&c);
    ctx_open(&c, false);

    /* Not NUL-terminated at the length: the store must honour lengths. */
    static const char src_buf[] = "github.com/acme-TRAILING";
    static const char et[] = "issue \"opened\"\n\t'x' \\ h\xc3\xa9llo \xe2\x9c\x93 \xf0\x9f\x98\x80";
    static const char payload[] = "{\"a\":\"line1\\nline2\",\"u\":\"\xe6\x97\xa5\xe6\x9c\xac\"}\n";

    struct hk_store_op op;
    struct got g = {0};
    op_insert(&op, &g, src_buf, et, payload, NULL);
    op.row.source_len = strlen("github.com/acme");
    op.row.id = 777;               /* ignored on input */
    int64_t t0 = hk_wall_us();
    run_op(&c, &op);
    int64_t t1 = hk_wall_us();
    cr_assert_eq(g.status, 0);
    cr_assert_eq(g.rows, 1);
    cr_assert_eq(g.id, 1);
    cr_assert_str_eq(g.source, "github.com/acme");
    cr_assert(g.received_us >= t0 && g.received_us <= t1);
    int64_t recv = g.received_us;
    got_free(&g);

    cr_assert_eq(get(&c, 1, &g), 0);
    cr_assert_eq(g.rows, 1);
    cr_assert_eq(g.id, 1);
    cr_assert_eq(g.source_len, strlen("github.com/acme"));
    cr_assert_str_eq(g.source, "github.com/acme");
    cr_assert_eq(g.event_type_len, sizeof et - 1);
    cr_assert_str_eq(g.event_type, et);
    cr_assert_eq(g.payload_len, sizeof payload - 1);
    cr_assert_str_eq(g.payload, payload);
    cr_assert_not(g.payload_null);
    cr_assert_eq(g.received_us, recv);
    got_free(&g);

    /* NULL payload stays NULL; an empty one stays empty. */
    int64_t n = insert(&c, "s", "e", NULL);
    int64_t e = insert(&c, "s", "e", "");
    cr_assert_eq(n, 2);
    cr_assert_eq(e, 3);
    cr_assert_eq(get(&c, n, &g), 0);
    cr_assert(g.payload_null);
    cr_assert_eq(g.payload_len, 0);
    got_free(&g);
    cr_assert_eq(get(&c, e, &g), 0);
    cr_assert_not(g.payload_null);
    cr_assert_eq(g.payload_len, 0);
    got_free(&g);

    ctx_close(&c);
    cr_assert_eq(sql_int(c.path, "SELECT count(*) FROM webhooks WHERE payload IS NULL"), 1);
    rm_dir(&c);
}

Test(store_sqlite, delete_then_not_found)
{
    struct ctx c;
    struct got g = {0};
    ctx_init(&c);
    ctx_open(&c, false);
    int64_t id = insert(&c, "s", "e", "{}");
    cr_assert_eq(del(&c, id), 0);
    cr_assert_eq(del(&c, id), HK_ENOTFOUND);
    cr_assert_eq(get(&c, id, &g), HK_ENOTFOUND);
    cr_assert_eq(g.rows, 0);
    cr_assert_eq(g.dones, 1);
    got_free(&g);
    cr_assert_eq(get(&c, 424242, &g), HK_ENOTFOUND);
    cr_assert_eq(g.rows, 0);
    got_free(&g);
    cr_assert_eq(del(&c, 424242), HK_ENOTFOUND);
    ctx_close(&c);
    rm_dir(&c);
}

/* A loop's read connection opens on the first read: a failure there is a
 * 503 for that read, and the next read tries again. */
Test(store_sqlite, read_connection_opens_on_first_read_and_retries)
{
    struct ctx c;
    struct got g = {0};
    char moved[160];
    ctx_init(&c);
    ctx_open(&c, false);
    snprintf(moved, sizeof moved, "%s.moved", c.path);
    cr_assert_eq(rename(c.path, moved), 0);
    cr_assert_eq(get(&c, 1, &g), HK_EUNAVAIL);
    cr_assert_eq(g.dones, 1);
    cr_assert_eq(g.rows, 0);
    got_free(&g);
    cr_assert_eq(rename(moved, c.path), 0);
    cr_assert_eq(get(&c, 1, &g), HK_ENOTFOUND);
    got_free(&g);
    int64_t id = insert(&c, "s", "e", "{}");
    cr_assert_eq(get(&c, id, &g), 0);
    cr_assert_eq(g.rows, 1);
    got_free(&g);
    ctx_close(&c);
    rm_dir(&c);
}

Test(store_sqlite, reads_run_inside_submit)
{
    struct ctx c;
    struct got g = {0};
    struct hk_store_op op;
    ctx_init(&c);
    ctx_open(&c, false);
    int64_t id = insert(&c, "s", "e", "{}");
    op_by_id(&op, &g, HK_OP_GET, id);
    cr_assert_eq(hk_store_submit(c.sl, &op), 0);
    cr_assert_eq(g.dones, 1);
    cr_assert_eq(g.rows, 1);
    cr_assert_eq(g.status, 0);
    got_free(&g);
    ctx_close(&c);
    rm_dir(&c);
}

/* ---- lists ------------------------------------------------------------ */

struct mirror {
    int64_t id;
    const char *src;
    const char *et;
};

static void check_list(struct ctx *c, const struct mirror *m, int n, const char *src,
                       const char *et, int64_t before, uint32_t limit)
{
    struct hk_store_op op;
    struct got g = {0};
    memset(&op, 0, sizeof op);
    op.kind = HK_OP_LIST;
    op.list.source = src;
    op.list.source_len = src ? strlen(src) : 0;
    op.list.event_type = et;
    op.list.event_type_len = et ? strlen(et) : 0;
    op.list.before = before;
    op.list.limit = limit;
    op.on_row = on_row;
    op.on_done = on_done;
    op.data = &g;
    cr_assert_eq(hk_store_submit(c->sl, &op), 0);
    cr_assert_eq(g.dones, 1);
    cr_assert_eq(g.status, 0);
    cr_assert_eq(g.more, false);

    size_t want = 0;
    for (int i = n - 1; i >= 0 && (limit == 0 || want < limit); i--) {
        if ((src && strcmp(m[i].src, src) != 0) || (et && strcmp(m[i].et, et) != 0) ||
            (before && m[i].id >= before))
            continue;
        cr_assert_lt(want, g.nids, "src=%s et=%s before=%" PRId64 " limit=%u: too few rows",
                     src, et, before, limit);
        cr_assert_eq(g.ids[want], m[i].id, "row %zu", want);
        want++;
    }
    cr_assert_eq(g.nids, want, "src=%s et=%s before=%" PRId64 " limit=%u", src, et, before,
                 limit);
    got_free(&g);
}

Test(store_sqlite, list_newest_first_with_filters)
{
    struct ctx c;
    struct mirror m[30];
    ctx_init(&c);
    ctx_open(&c, false);
    for (int i = 0; i < 30; i++) {
        m[i].src = i % 2 ? "b" : "a";
        m[i].et = i % 3 == 0 ? "x" : "y";
        m[i].id = insert(&c, m[i].src, m[i].et, "{}");
        cr_assert(i == 0 || m[i].id > m[i - 1].id);
    }
    int64_t mid = m[17].id;
    const char *srcs[] = {NULL, "a", "b", "zz"};
    const char *ets[] = {NULL, "x", "y"};
    int64_t befores[] = {0, mid, m[0].id};
    uint32_t limits[] = {0, 1, 4, 100};
    for (size_t s = 0; s < 4; s++)
        for (size_t e = 0; e < 3; e++)
            for (size_t b = 0; b < 3; b++)
                for (size_t l = 0; l < 4; l++)
                    check_list(&c, m, 30, srcs[s], ets[e], befores[b], limits[l]);

    /* Spot-check one combination by hand, so the mirror cannot hide a bug. */
    struct hk_store_op op;
    struct got g = {0};
    memset(&op, 0, sizeof op);
    op.kind = HK_OP_LIST;
    op.list = (struct hk_list_query){.source = "a", .source_len = 1, .event_type = "x",
                                     .event_type_len = 1, .before = mid, .limit = 2};
    op.on_row = on_row;
    op.on_done = on_done;
    op.data = &g;
    cr_assert_eq(hk_store_submit(c.sl, &op), 0);
    /* a: even i; x: i % 3 == 0; id < m[17]: i < 17 -> i in {12, 6, 0}, limit 2. */
    cr_assert_eq(g.nids, 2);
    cr_assert_eq(g.ids[0], m[12].id);
    cr_assert_eq(g.ids[1], m[6].id);
    got_free(&g);

    ctx_close(&c);
    rm_dir(&c);
}

struct stream {
    struct got g;
    struct ctx *c;
    int stop_after;      /* list_close after this many batches; 0 = never */
    bool closed;
};

static void stream_done(struct hk_store_op *op)
{
    struct stream *sm = op->data;
    on_done(op);
    cr_assert_eq(sm->g.status, 0);
    if (!op->more)
        return;
    if (sm->stop_after && sm->g.batches == sm->stop_after) {
        hk_store_list_close(sm->c->sl, op);
        sm->closed = true;
        return;
    }
    /* Continuing from inside on_done is allowed. */
    hk_store_list_next(sm->c->sl, op);
}

static void stream_list(struct ctx *c, struct stream *sm, uint32_t limit)
{
    struct hk_store_op op;
    memset(&op, 0, sizeof op);
    sm->c = c;
    op.kind = HK_OP_LIST;
    op.list.limit = limit;
    op.list.stream = true;
    op.on_row = on_row;
    op.on_done = stream_done;
    op.data = sm;   /* struct got is the first member */
    cr_assert_eq(hk_store_submit(c->sl, &op), 0);
}

Test(store_sqlite, stream_delivers_every_row_once_in_order)
{
    struct ctx c;
    int64_t *ids = calloc(2500, sizeof *ids);
    ctx_init(&c);
    ctx_open(&c, false);
    insert_many(&c, 2500, "bulk", "e", ids);

    struct stream sm = {0};
    stream_list(&c, &sm, 100);
    cr_assert_eq(sm.g.nids, 2500);
    cr_assert_eq(sm.g.batches, 25);
    cr_assert_eq(sm.g.max_batch, 100);
    cr_assert_eq(sm.g.more, false);
    for (size_t i = 0; i < 2500; i++)
        cr_assert_eq(sm.g.ids[i], ids[2499 - i], "row %zu", i);
    got_free(&sm.g);

    /* An exact multiple ends without an empty extra batch; 2500 = 3 * 833 + 1. */
    struct stream sm2 = {0};
    stream_list(&c, &sm2, 833);
    cr_assert_eq(sm2.g.batches, 4);
    cr_assert_eq(sm2.g.nids, 2500);
    got_free(&sm2.g);

    /* Closing mid-stream releases it (detach asserts no stream is open). */
    struct stream sm3 = {0};
    sm3.stop_after = 3;
    stream_list(&c, &sm3, 100);
    cr_assert(sm3.closed);
    cr_assert_eq(sm3.g.batches, 3);
    cr_assert_eq(sm3.g.nids, 300);
    cr_assert_eq(sm3.g.ids[299], ids[2200]);
    got_free(&sm3.g);

    free(ids);
    ctx_close(&c);
    rm_dir(&c);
}

Test(store_sqlite, empty_stream_ends_at_once)
{
    struct ctx c;
    ctx_init(&c);
    ctx_open(&c, false);
    struct stream sm = {0};
    stream_list(&c, &sm, 100);
    cr_assert_eq(sm.g.batches, 1);
    cr_assert_eq(sm.g.nids, 0);
    cr_assert_eq(sm.g.more, false);
    ctx_close(&c);
    rm_dir(&c);
}

/* A GET and a LIST submitted from inside a running LIST's on_row. */
struct nested {
    struct got g;
    struct ctx *c;
    int inner_rows;
    int inner_dones;
};

static void inner_row(struct hk_store_op *op, const struct hk_webhook *row)
{
    struct nested *n = op->data;
    (void)row;
    n->inner_rows++;
}

static void inner_done(struct hk_store_op *op)
{
    struct nested *n = op->data;
    cr_assert_eq(op->status, 0);
    n->inner_dones++;
}

static void outer_row(struct hk_store_op *op, const struct hk_webhook *row)
{
    struct nested *n = op->data;
    int64_t id = row->id;
    struct hk_store_op in;
    memset(&in, 0, sizeof in);
    in.kind = HK_OP_GET;
    in.id = id;
    in.on_row = inner_row;
    in.on_done = inner_done;
    in.data = n;
    cr_assert_eq(hk_store_submit(n->c->sl, &in), 0);
    in.kind = HK_OP_LIST;
    in.list.limit = 1000;
    cr_assert_eq(hk_store_submit(n->c->sl, &in), 0);
    on_row(op, row);    /* the outer row must still be intact */
    cr_assert_eq(n->g.id, id);
}

Test(store_sqlite, reads_can_nest_in_callbacks)
{
    struct ctx c;
    ctx_init(&c);
    ctx_open(&c, false);
    insert_many(&c, 5, "s", "e", NULL);
    struct nested n = {.c = &c};
    struct hk_store_op op;
    memset(&op, 0, sizeof op);
    op.kind = HK_OP_LIST;
    op.list.limit = 10;
    op.on_row = outer_row;
    op.on_done = on_done;
    op.data = &n;
    cr_assert_eq(hk_store_submit(c.sl, &op), 0);
    cr_assert_eq(n.g.nids, 5);
    cr_assert_eq(n.g.ids[0], 5);
    cr_assert_eq(n.g.ids[4], 1);
    cr_assert_eq(n.inner_dones, 10);
    cr_assert_eq(n.inner_rows, 5 + 5 * 5);
    got_free(&n.g);
    ctx_close(&c);
    rm_dir(&c);
}

/* ---- writes ----------------------------------------------------------- */

Test(store_sqlite, group_commit_thousand_inserts)
{
    struct ctx c;
    int64_t *ids = calloc(1000, sizeof *ids);
    ctx_init(&c);
    ctx_open(&c, true);
    insert_many(&c, 1000, "s", "e", ids);
    /* FIFO through the queue: ids are distinct and follow submission order. */
    for (int i = 1; i < 1000; i++)
        cr_assert_gt(ids[i], ids[i - 1], "ids[%d]", i);
    ctx_close(&c);

    ctx_open(&c, true);
    struct got g = {0};
    cr_assert_eq(get(&c, ids[999], &g), 0);
    got_free(&g);
    ctx_close(&c);
    cr_assert_eq(sql_int(c.path, "SELECT count(DISTINCT id) FROM webhooks"), 1000);
    free(ids);
    rm_dir(&c);
}

Test(store_sqlite, failed_op_does_not_fail_its_batch)
{
    struct ctx c;
    struct hk_store_op ops[6];
    struct got gs[6] = {0};
    ctx_init(&c);
    ctx_open(&c, false);
    for (int i = 0; i < 6; i++) {
        /* NOT NULL fails these two alone: no source; no event type (with a key). */
        op_insert(&ops[i], &gs[i], i == 2 ? NULL : "s", i == 4 ? NULL : "e", "{}",
                  i == 4 ? "k4" : NULL);
        cr_assert_eq(hk_store_submit(c.sl, &ops[i]), 0);
    }
    uv_run(&c.loop, UV_RUN_DEFAULT);
    for (int i = 0; i < 6; i++) {
        bool bad = i == 2 || i == 4;
        cr_assert_eq(gs[i].dones, 1);
        cr_assert_eq(gs[i].status, bad ? HK_EINVAL : 0, "op %d", i);
        cr_assert_eq(gs[i].rows, bad ? 0 : 1, "op %d", i);
        got_free(&gs[i]);
    }
    cr_assert_eq(hk_store_health(c.sl), 0);
    ctx_close(&c);
    cr_assert_eq(sql_int(c.path, "SELECT count(*) FROM webhooks"), 4);
    rm_dir(&c);
}

Test(store_sqlite, idempotency_key_replays_the_original)
{
    struct ctx c;
    struct hk_store_op op;
    struct got g = {0};
    ctx_init(&c);
    ctx_open(&c, false);

    op_insert(&op, &g, "gh", "push", "{\"v\":1}", "key-1");
    run_op(&c, &op);
    cr_assert_eq(g.status, 0);
    cr_assert_not(g.replayed);
    int64_t orig = g.id;
    int64_t orig_us = g.received_us;
    got_free(&g);

    /* Same source and key, different body: the original comes back. */
    op_insert(&op, &g, "gh", "other", NULL, "key-1");
    run_op(&c, &op);
    cr_assert_eq(g.status, 0);
    cr_assert(g.replayed);
    cr_assert_eq(g.rows, 1);
    cr_assert_eq(g.id, orig);
    cr_assert_eq(g.received_us, orig_us);
    cr_assert_str_eq(g.event_type, "push");
    cr_assert_str_eq(g.payload, "{\"v\":1}");
    cr_assert_not(g.payload_null);
    got_free(&g);

    /* The key is per source. */
    op_insert(&op, &g, "other-src", "push", "{}", "key-1");
    run_op(&c, &op);
    cr_assert_not(g.replayed);
    cr_assert_gt(g.id, orig);
    got_free(&g);

    /* Two with one new key in the same batch: one row, second replays first. */
    struct hk_store_op two[2];
    struct got g2[2] = {0};
    op_insert(&two[0], &g2[0], "gh", "push", NULL, "key-2");
    op_insert(&two[1], &g2[1], "gh", "push", "{}", "key-2");
    cr_assert_eq(hk_store_submit(c.sl, &two[0]), 0);
    cr_assert_eq(hk_store_submit(c.sl, &two[1]), 0);
    uv_run(&c.loop, UV_RUN_DEFAULT);
    cr_assert_not(g2[0].replayed);
    cr_assert(g2[1].replayed);
    cr_assert_eq(g2[1].id, g2[0].id);
    cr_assert(g2[1].payload_null);
    got_free(&g2[0]);
    got_free(&g2[1]);

    ctx_close(&c);
    cr_assert_eq(sql_int(c.path, "SELECT count(*) FROM webhooks WHERE idem_key = 'key-1'"), 2);
    cr_assert_eq(sql_int(c.path, "SELECT count(*) FROM webhooks WHERE source = 'gh'"), 2);
    cr_assert_eq(sql_int(c.path, "SELECT count(*) FROM webhooks"), 3);
    rm_dir(&c);
}

/* Two threads, each with its own loop, inserting at the same time. */
struct worker {
    struct hk_store *s;
    int n;
    int64_t *ids;
    int failures;    /* checked on the main thread: Criterion asserts belong there */
};

static void worker_main(void *arg)
{
    struct worker *w = arg;
    uv_loop_t loop;
    struct hk_store_loop *sl;
    struct hk_store_op *ops = calloc((size_t)w->n, sizeof *ops);
    struct got *gs = calloc((size_t)w->n, sizeof *gs);
    if (uv_loop_init(&loop) != 0 || w->s->vt->loop_attach(w->s, &loop, &sl) != 0) {
        w->failures++;
        goto out;
    }
    /* Several waves so batches from the two loops interleave. */
    for (int base = 0; base < w->n; base += 100) {
        for (int i = base; i < w->n && i < base + 100; i++) {
            op_insert(&ops[i], &gs[i], "thread", "e", "{}", NULL);
            if (hk_store_submit(sl, &ops[i]) != 0)
                w->failures++;
        }
        uv_run(&loop, UV_RUN_DEFAULT);
    }
    for (int i = 0; i < w->n; i++) {
        if (gs[i].dones != 1 || gs[i].status != 0 || gs[i].rows != 1)
            w->failures++;
        w->ids[i] = gs[i].id;
        free(gs[i].ids);
    }
    w->s->vt->loop_detach(sl);
    uv_run(&loop, UV_RUN_DEFAULT);
    if (uv_loop_close(&loop) != 0)
        w->failures++;
out:
    free(ops);
    free(gs);
}

static int cmp_i64(const void *a, const void *b)
{
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return (x > y) - (x < y);
}

Test(store_sqlite, two_loops_lose_no_rows)
{
    struct ctx c;
    char err[256];
    ctx_init(&c);
    c.s = hk_sqlite_open(&(struct hk_sqlite_opts){.path = c.path}, err, sizeof err);
    cr_assert_not_null(c.s, "%s", err);

    enum { N = 700 };
    int64_t *all = calloc(2 * N, sizeof *all);
    struct worker w[2] = {{c.s, N, all, 0}, {c.s, N, all + N, 0}};
    uv_thread_t t[2];
    for (int i = 0; i < 2; i++)
        cr_assert_eq(uv_thread_create(&t[i], worker_main, &w[i]), 0);
    for (int i = 0; i < 2; i++)
        cr_assert_eq(uv_thread_join(&t[i]), 0);
    cr_assert_eq(w[0].failures, 0);
    cr_assert_eq(w[1].failures, 0);
    c.s->vt->close(c.s);

    qsort(all, 2 * N, sizeof *all, cmp_i64);
    for (int i = 0; i < 2 * N; i++)
        cr_assert_eq(all[i], i + 1, "ids must be exactly 1..%d", 2 * N);
    cr_assert_eq(sql_int(c.path, "SELECT count(*) FROM webhooks"), 2 * N);
    free(all);
    rm_dir(&c);
}

/* ---- durability ------------------------------------------------------- */

static int ack_fd;
static int acks;

/* Acknowledge, and at the 2000th ack die at once: the harshest moment for a
 * crash, since a store that acked before its commit reached the file would
 * lose the rows of the batch it is committing right now. */
static void child_row(struct hk_store_op *op, const struct hk_webhook *row)
{
    (void)op;
    /* 8 bytes to a pipe are written atomically. */
    if (write(ack_fd, &row->id, sizeof row->id) != sizeof row->id)
        _exit(3);
    if (++acks == 2000)
        raise(SIGKILL);
}

static struct hk_store_loop *child_sl;

static void child_done(struct hk_store_op *op)
{
    if (op->status != 0)
        _exit(4);
    if (hk_store_submit(child_sl, op) != 0)     /* keep the writer busy */
        _exit(5);
}

static _Noreturn void child_writer(const char *path)
{
    char err[256];
    static struct hk_store_op ops[64];
    uv_loop_t loop;
    struct hk_store *s = hk_sqlite_open(&(struct hk_sqlite_opts){.path = path}, err, sizeof err);
    if (s == NULL || uv_loop_init(&loop) != 0 || s->vt->loop_attach(s, &loop, &child_sl) != 0)
        _exit(2);
    for (int i = 0; i < 64; i++) {
        ops[i].kind = HK_OP_INSERT;
        ops[i].row.source = "durable";
        ops[i].row.source_len = 7;
        ops[i].row.event_type = "e";
        ops[i].row.event_type_len = 1;
        ops[i].row.payload = "{\"k\":\"v\"}";
        ops[i].row.payload_len = 9;
        ops[i].on_row = child_row;
        ops[i].on_done = child_done;
        if (hk_store_submit(child_sl, &ops[i]) != 0)
            _exit(5);
    }
    uv_run(&loop, UV_RUN_DEFAULT);
    _exit(6);   /* unreachable: the writes never stop */
}

Test(store_sqlite, acknowledged_rows_survive_sigkill)
{
    struct ctx c;
    int fds[2];
    ctx_init(&c);
    cr_assert_eq(pipe(fds), 0);
    pid_t pid = fork();
    cr_assert_neq(pid, -1);
    if (pid == 0) {
        close(fds[0]);
        ack_fd = fds[1];
        child_writer(c.path);
    }
    close(fds[1]);

    size_t n = 0, cap = 4096;
    int64_t *acked = malloc(cap * sizeof *acked);
    for (;;) {
        int64_t id;
        ssize_t r = read(fds[0], &id, sizeof id);
        if (r == 0)
            break;
        cr_assert_eq(r, (ssize_t)sizeof id);
        if (n == cap) {
            cap *= 2;
            acked = realloc(acked, cap * sizeof *acked);
        }
        acked[n++] = id;
    }
    close(fds[0]);
    int wst;
    cr_assert_eq(waitpid(pid, &wst, 0), pid);
    cr_assert(WIFSIGNALED(wst) && WTERMSIG(wst) == SIGKILL,
              "child did not die by SIGKILL (status %d, %zu acks)", wst, n);
    cr_assert_eq(n, 2000);

    /* Reopen through the store (WAL recovery), then check every ack. */
    ctx_open(&c, false);
    cr_assert_eq(hk_store_health(c.sl), 0);
    for (size_t i = 0; i < n; i++) {
        struct got g = {0};
        cr_assert_eq(get(&c, acked[i], &g), 0, "acknowledged id %" PRId64 " lost", acked[i]);
        cr_assert_str_eq(g.source, "durable");
        cr_assert_str_eq(g.payload, "{\"k\":\"v\"}");
        got_free(&g);
    }
    ctx_close(&c);
    cr_assert_geq(sql_int(c.path, "SELECT count(*) FROM webhooks"), (int64_t)n);
    free(acked);
    rm_dir(&c);
}

/* ---- limits and health ------------------------------------------------ */

static sqlite3 *hold_write_lock(const char *path)
{
    sqlite3 *db;
    cr_assert_eq(sqlite3_open(path, &db), SQLITE_OK);
    /* The store's writer readies the WAL as it starts (a write of its
     * own): wait for it rather than fail. */
    sqlite3_busy_timeout(db, 5000);
    cr_assert_eq(sqlite3_exec(db, "BEGIN IMMEDIATE", NULL, NULL, NULL), SQLITE_OK);
    return db;
}

static void release_write_lock(sqlite3 *db)
{
    cr_assert_eq(sqlite3_exec(db, "COMMIT", NULL, NULL, NULL), SQLITE_OK);
    sqlite3_close(db);
}

Test(store_sqlite, full_queue_says_busy)
{
    struct ctx c;
    enum { N = 300 };
    struct hk_store_op *ops = calloc(N, sizeof *ops);
    struct got *gs = calloc(N, sizeof *gs);
    ctx_init(&c);
    c.queue_max = 8;
    ctx_open(&c, false);

    /* Another connection holds the write lock, so the writer stalls in
     * BEGIN IMMEDIATE holding at most one batch (256) while the queue fills. */
    sqlite3 *lock = hold_write_lock(c.path);
    int ok = 0, busy = 0;
    for (int i = 0; i < N; i++) {
        op_insert(&ops[i], &gs[i], "s", "e", "{}", NULL);
        int rc = hk_store_submit(c.sl, &ops[i]);
        cr_assert(rc == 0 || rc == HK_EBUSY, "rc %d", rc);
        if (rc == 0)
            ok++;
        else
            busy++;
    }
    cr_assert_geq(busy, N - 8 - 256);
    cr_assert_geq(ok, 8);
    release_write_lock(lock);

    uv_run(&c.loop, UV_RUN_DEFAULT);
    int done = 0;
    for (int i = 0; i < N; i++) {
        cr_assert(gs[i].dones == 0 || (gs[i].dones == 1 && gs[i].status == 0));
        done += gs[i].dones;
        got_free(&gs[i]);
    }
    cr_assert_eq(done, ok, "every accepted op completes, no refused one does");
    cr_assert_eq(hk_store_health(c.sl), 0);
    ctx_close(&c);
    cr_assert_eq(sql_int(c.path, "SELECT count(*) FROM webhooks"), ok);
    free(ops);
    free(gs);
    rm_dir(&c);
}

Test(store_sqlite, health_fails_on_unwritable_and_recovers)
{
    struct ctx c;
    struct hk_store_op op;
    struct got g = {0};
    ctx_init(&c);
    c.busy_ms = 50;
    ctx_open(&c, false);
    cr_assert_eq(hk_store_health(c.sl), 0);

    sqlite3 *lock = hold_write_lock(c.path);
    op_insert(&op, &g, "s", "e", "{}", "k");
    run_op(&c, &op);
    cr_assert_eq(g.status, HK_ELOCKED);
    cr_assert_eq(g.rows, 0, "nothing is reported stored when the commit fails");
    cr_assert_eq(hk_store_health(c.sl), HK_EUNAVAIL);
    got_free(&g);
    op_by_id(&op, &g, HK_OP_DELETE, 1);
    run_op(&c, &op);
    cr_assert_eq(g.status, HK_ELOCKED);
    got_free(&g);
    /* Reads keep working meanwhile. */
    cr_assert_eq(get(&c, 1, &g), HK_ENOTFOUND);
    got_free(&g);
    release_write_lock(lock);

    op_insert(&op, &g, "s", "e", "{}", "k");
    run_op(&c, &op);
    cr_assert_eq(g.status, 0);
    cr_assert_not(g.replayed);
    cr_assert_eq(hk_store_health(c.sl), 0);
    got_free(&g);
    ctx_close(&c);
    cr_assert_eq(sql_int(c.path, "SELECT count(*) FROM webhooks"), 1);
    rm_dir(&c);
}

/* ---- failure spells ----------------------------------------------------- */

/* A VFS in front of the default one that fails reads or writes on demand
 * with the SQLite code set here, so that a full or failing disk can be had
 * without root. Registered as the default, so the store's connections (same
 * SQLite, linked into this binary) go through it. Criterion runs each test
 * in a process of its own: the registration ends with the test. */
static atomic_int fail_write, fail_read;
static sqlite3_vfs *real_vfs;
static sqlite3_vfs shim_vfs;

struct shim_file {
    sqlite3_file base;
    sqlite3_file *real;   /* right after this struct, szOsFile of real_vfs */
};

static sqlite3_file *real_of(sqlite3_file *f)
{
    return ((struct shim_file *)f)->real;
}

static int shim_close(sqlite3_file *f)
{
    return real_of(f)->pMethods->xClose(real_of(f));
}

static int shim_read(sqlite3_file *f, void *p, int n, sqlite3_int64 off)
{
    int rc = atomic_load(&fail_read);
    return rc ? rc : real_of(f)->pMethods->xRead(real_of(f), p, n, off);
}

static int shim_write(sqlite3_file *f, const void *p, int n, sqlite3_int64 off)
{
    int rc = atomic_load(&fail_write);
    return rc ? rc : real_of(f)->pMethods->xWrite(real_of(f), p, n, off);
}

static int shim_truncate(sqlite3_file *f, sqlite3_int64 size)
{
    return real_of(f)->pMethods->xTruncate(real_of(f), size);
}

static int shim_sync(sqlite3_file *f, int flags)
{
    return real_of(f)->pMethods->xSync(real_of(f), flags);
}

static int shim_file_size(sqlite3_file *f, sqlite3_int64 *size)
{
    return real_of(f)->pMethods->xFileSize(real_of(f), size);
}

static int shim_lock(sqlite3_file *f, int lock)
{
    return real_of(f)->pMethods->xLock(real_of(f), lock);
}

static int shim_unlock(sqlite3_file *f, int lock)
{
    return real_of(f)->pMethods->xUnlock(real_of(f), lock);
}

static int shim_check_lock(sqlite3_file *f, int *out)
{
    return real_of(f)->pMethods->xCheckReservedLock(real_of(f), out);
}

static int shim_file_control(sqlite3_file *f, int op, void *arg)
{
    return real_of(f)->pMethods->xFileControl(real_of(f), op, arg);
}

static int shim_sector_size(sqlite3_file *f)
{
    return real_of(f)->pMethods->xSectorSize(real_of(f));
}

static int shim_device(sqlite3_file *f)
{
    return real_of(f)->pMethods->xDeviceCharacteristics(real_of(f));
}

static int shim_shm_map(sqlite3_file *f, int pg, int pgsz, int extend, void volatile **pp)
{
    return real_of(f)->pMethods->xShmMap(real_of(f), pg, pgsz, extend, pp);
}

static int shim_shm_lock(sqlite3_file *f, int offset, int n, int flags)
{
    return real_of(f)->pMethods->xShmLock(real_of(f), offset, n, flags);
}

static void shim_shm_barrier(sqlite3_file *f)
{
    real_of(f)->pMethods->xShmBarrier(real_of(f));
}

static int shim_shm_unmap(sqlite3_file *f, int del)
{
    return real_of(f)->pMethods->xShmUnmap(real_of(f), del);
}

/* No memory-mapped reads: every read goes through shim_read. */
static int shim_fetch(sqlite3_file *f, sqlite3_int64 off, int n, void **pp)
{
    (void)f;
    (void)off;
    (void)n;
    *pp = NULL;
    return SQLITE_OK;
}

static int shim_unfetch(sqlite3_file *f, sqlite3_int64 off, void *p)
{
    (void)f;
    (void)off;
    (void)p;
    return SQLITE_OK;
}

static const sqlite3_io_methods shim_io = {
    .iVersion = 3,
    .xClose = shim_close,
    .xRead = shim_read,
    .xWrite = shim_write,
    .xTruncate = shim_truncate,
    .xSync = shim_sync,
    .xFileSize = shim_file_size,
    .xLock = shim_lock,
    .xUnlock = shim_unlock,
    .xCheckReservedLock = shim_check_lock,
    .xFileControl = shim_file_control,
    .xSectorSize = shim_sector_size,
    .xDeviceCharacteristics = shim_device,
    .xShmMap = shim_shm_map,
    .xShmLock = shim_shm_lock,
    .xShmBarrier = shim_shm_barrier,
    .xShmUnmap = shim_shm_unmap,
    .xFetch = shim_fetch,
    .xUnfetch = shim_unfetch,
};

static int shim_open(sqlite3_vfs *vfs, const char *name, sqlite3_file *f, int flags, int *out)
{
    (void)vfs;
    struct shim_file *p = (struct shim_file *)f;
    p->real = (sqlite3_file *)(p + 1);
    int rc = real_vfs->xOpen(real_vfs, name, p->real, flags, out);
    p->base.pMethods = p->real->pMethods != NULL ? &shim_io : NULL;
    return rc;
}

static void shim_register(void)
{
    real_vfs = sqlite3_vfs_find(NULL);
    cr_assert_not_null(real_vfs);
    shim_vfs = *real_vfs;
    shim_vfs.zName = "hk-fault";
    shim_vfs.szOsFile = (int)sizeof(struct shim_file) + real_vfs->szOsFile;
    shim_vfs.xOpen = shim_open;
    shim_vfs.pNext = NULL;
    cr_assert_eq(sqlite3_vfs_register(&shim_vfs, 1), SQLITE_OK);
}

/* The store's log lines (stderr) go to a file for the length of a test. */
struct capture {
    int saved;
    char path[160];
};

static void capture_start(struct capture *cap, const struct ctx *c)
{
    snprintf(cap->path, sizeof cap->path, "%s/stderr.log", c->dir);
    int fd = open(cap->path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    cr_assert_geq(fd, 0);
    cap->saved = dup(2);
    cr_assert_geq(cap->saved, 0);
    cr_assert_eq(dup2(fd, 2), 2);
    close(fd);
}

/* Restore stderr; returns what was logged (caller frees) and removes the file. */
static char *capture_end(struct capture *cap)
{
    dup2(cap->saved, 2);
    close(cap->saved);
    FILE *f = fopen(cap->path, "r");
    cr_assert_not_null(f);
    char *text = calloc(1, 1 << 16);
    cr_assert_not_null(text);
    size_t n = fread(text, 1, (1 << 16) - 1, f);
    text[n] = '\0';
    fclose(f);
    unlink(cap->path);
    return text;
}

/* Lines of `text` that contain both `a` and `b`. */
static int lines_with(const char *text, const char *a, const char *b)
{
    int n = 0;
    for (const char *line = text; *line;) {
        const char *end = strchr(line, '\n');
        size_t len = end ? (size_t)(end - line) : strlen(line);
        char buf[1024];
        snprintf(buf, sizeof buf, "%.*s", (int)len, line);
        if (strstr(buf, a) && strstr(buf, b))
            n++;
        line += len + (end ? 1 : 0);
    }
    return n;
}

/* Poll health (the writer thread sets it) for up to `ms`. */
static bool health_becomes(struct ctx *c, int want, int ms)
{
    for (int waited = 0; waited < ms; waited += 20) {
        if (hk_store_health(c->sl) == want)
            return true;
        usleep(20 * 1000);
    }
    return hk_store_health(c->sl) == want;
}

static int insert_status(struct ctx *c)
{
    struct hk_store_op op;
    struct got g = {0};
    op_insert(&op, &g, "s", "e", "{}", NULL);
    run_op(c, &op);
    int status = g.status;
    if (status != 0)
        cr_assert_eq(g.rows, 0, "nothing is reported stored when the commit fails");
    got_free(&g);
    return status;
}

/* A spell is logged once however many writes fail in it, the store says
 * not ready meanwhile, and it ends by itself once the lock is gone: no
 * write comes to a store that is not ready, so the writer probes. */
Test(store_sqlite, locked_spell_logs_once_and_ends_without_writes)
{
    struct ctx c;
    struct capture cap;
    struct got g = {0};
    ctx_init(&c);
    c.busy_ms = 50;
    ctx_open(&c, false);
    int64_t id = insert(&c, "s", "e", "{}");
    capture_start(&cap, &c);

    sqlite3 *lock = hold_write_lock(c.path);
    for (int i = 0; i < 5; i++)
        cr_assert_eq(insert_status(&c), HK_ELOCKED);
    cr_assert_eq(hk_store_health(c.sl), HK_EUNAVAIL);
    cr_assert_eq(get(&c, id, &g), 0, "reads work while another process writes");
    got_free(&g);
    /* Still locked after a probe or two: still not ready. */
    usleep(1300 * 1000);
    cr_assert_eq(hk_store_health(c.sl), HK_EUNAVAIL);
    release_write_lock(lock);
    bool up = health_becomes(&c, 0, 5000);

    char *log = capture_end(&cap);
    cr_assert(up, "health did not come back without a write; log:\n%s", log);
    cr_assert_eq(lines_with(log, "\"level\":\"warn\"", "\"reason\":\"database_locked\""), 1,
                 "one warn line for the spell:\n%s", log);
    cr_assert_eq(lines_with(log, "\"level\":\"warn\"", ""), 1, "%s", log);
    cr_assert_eq(lines_with(log, "\"level\":\"error\"", ""), 0, "%s", log);
    cr_assert_eq(lines_with(log, "\"level\":\"info\"", "sqlite writes recovered"), 1, "%s", log);
    cr_assert_eq(lines_with(log, "sqlite writes recovered", "\"failed_writes\":5"), 1, "%s", log);
    free(log);
    cr_assert_eq(insert_status(&c), 0);
    ctx_close(&c);
    cr_assert_eq(sql_int(c.path, "SELECT count(*) FROM webhooks"), 2);
    cr_assert_eq(sql_int(c.path, "SELECT count(*) FROM schema_version"), 1,
                 "the probe leaves nothing behind");
    rm_dir(&c);
}

/* SQLITE_FULL is HK_EFULL (507); reads go on; the probe ends the spell once
 * writes work and the file system has room (here: /tmp). */
Test(store_sqlite, full_disk_is_efull_and_the_probe_recovers)
{
    struct ctx c;
    struct capture cap;
    struct got g = {0};
    shim_register();
    ctx_init(&c);
    ctx_open(&c, false);
    int64_t id = insert(&c, "s", "e", "{}");
    capture_start(&cap, &c);

    atomic_store(&fail_write, SQLITE_FULL);
    for (int i = 0; i < 3; i++)
        cr_assert_eq(insert_status(&c), HK_EFULL);
    cr_assert_eq(hk_store_health(c.sl), HK_EUNAVAIL);
    cr_assert_eq(get(&c, id, &g), 0, "reads work on a full disk");
    got_free(&g);
    usleep(1300 * 1000);
    cr_assert_eq(hk_store_health(c.sl), HK_EUNAVAIL, "a failing probe keeps the spell");
    atomic_store(&fail_write, 0);
    bool up = health_becomes(&c, 0, 5000);

    char *log = capture_end(&cap);
    cr_assert(up, "health did not come back without a write; log:\n%s", log);
    cr_assert_eq(lines_with(log, "\"level\":\"warn\"", "\"reason\":\"disk_full\""), 1, "%s", log);
    cr_assert_eq(lines_with(log, "\"level\":\"warn\"", ""), 1, "%s", log);
    cr_assert_eq(lines_with(log, "sqlite writes recovered", "disk_full"), 1, "%s", log);
    free(log);
    cr_assert_eq(insert_status(&c), 0);
    ctx_close(&c);
    cr_assert_eq(sql_int(c.path, "SELECT count(*) FROM webhooks"), 2);
    rm_dir(&c);
}

/* I/O errors are HK_EIO, for writes and for reads; failing reads are logged
 * once, recover by themselves, and leave readiness alone. */
Test(store_sqlite, io_errors_are_eio_for_writes_and_reads)
{
    struct ctx c;
    struct capture cap;
    struct got g = {0};
    shim_register();
    ctx_init(&c);
    ctx_open(&c, false);
    int64_t id = insert(&c, "s", "e", "{}");
    cr_assert_eq(get(&c, id, &g), 0);
    got_free(&g);
    capture_start(&cap, &c);

    atomic_store(&fail_write, SQLITE_IOERR_WRITE);
    cr_assert_eq(insert_status(&c), HK_EIO);
    cr_assert_eq(insert_status(&c), HK_EIO);
    cr_assert_eq(hk_store_health(c.sl), HK_EUNAVAIL);
    atomic_store(&fail_write, 0);
    cr_assert(health_becomes(&c, 0, 5000));

    /* A new row makes the reader go to the files again. */
    int64_t id2 = insert(&c, "s", "e", "{}");
    atomic_store(&fail_read, SQLITE_IOERR_READ);
    for (int i = 0; i < 3; i++) {
        cr_assert_eq(get(&c, id2, &g), HK_EIO);
        cr_assert_eq(g.rows, 0);
        got_free(&g);
    }
    cr_assert_eq(hk_store_health(c.sl), 0, "reads do not decide readiness");
    atomic_store(&fail_read, 0);
    cr_assert_eq(get(&c, id2, &g), 0);
    got_free(&g);

    char *log = capture_end(&cap);
    cr_assert_eq(lines_with(log, "sqlite writes failing", "\"reason\":\"io_error\""), 1, "%s", log);
    cr_assert_eq(lines_with(log, "sqlite reads failing", "\"reason\":\"io_error\""), 1, "%s", log);
    cr_assert_eq(lines_with(log, "\"level\":\"warn\"", ""), 2, "%s", log);
    cr_assert_eq(lines_with(log, "\"level\":\"info\"", "sqlite reads recovered"), 1, "%s", log);
    free(log);
    ctx_close(&c);
    rm_dir(&c);
}

/* Anything SQLite says that is not environmental stays HK_ESTORE (a 500),
 * logged once as an error; the probe still ends the spell. */
Test(store_sqlite, unexpected_errors_stay_estore)
{
    struct ctx c;
    struct capture cap;
    shim_register();
    ctx_init(&c);
    ctx_open(&c, false);
    capture_start(&cap, &c);
    atomic_store(&fail_write, SQLITE_CORRUPT);
    cr_assert_eq(insert_status(&c), HK_ESTORE);
    cr_assert_eq(insert_status(&c), HK_ESTORE);
    cr_assert_eq(hk_store_health(c.sl), HK_EUNAVAIL);
    atomic_store(&fail_write, 0);
    bool up = health_becomes(&c, 0, 5000);
    char *log = capture_end(&cap);
    cr_assert(up, "%s", log);
    cr_assert_eq(lines_with(log, "\"level\":\"error\"", "\"reason\":\"internal_error\""), 1, "%s", log);
    free(log);
    cr_assert_eq(insert_status(&c), 0);
    ctx_close(&c);
    rm_dir(&c);
}

/* ---- credentials ------------------------------------------------------ */

/* What a credential op's callbacks saw. */
struct cred {
    int dones;
    int status;
    int ntokens;
    char names[32][HK_TOKEN_NAME_MAX + 1];
    struct hk_token_rec last;
};

static void cred_row(struct hk_store_op *op, const struct hk_webhook *row)
{
    (void)op;
    (void)row;
    cr_assert_fail("on_row called for a credential op");
}

static void cred_token(struct hk_store_op *op, const struct hk_token_rec *t)
{
    struct cred *r = op->data;
    cr_assert_eq(op->kind, HK_OP_TOKEN_LIST);
    cr_assert_lt(r->ntokens, 32);
    snprintf(r->names[r->ntokens++], sizeof r->names[0], "%s", t->name);
    r->last = *t;
}

static void cred_done(struct hk_store_op *op)
{
    struct cred *r = op->data;
    cr_assert_not(op->more);
    r->dones++;
    r->status = op->status;
}

static void cred_op(struct hk_store_op *op, struct cred *r, enum hk_op_kind kind)
{
    memset(op, 0, sizeof *op);
    memset(r, 0, sizeof *r);
    op->kind = kind;
    op->on_row = cred_row;
    op->on_token = cred_token;
    op->on_done = cred_done;
    op->data = r;
}

/* Submit, run the loop until the store has nothing out; on_done once. */
static int cred_run(struct ctx *c, struct hk_store_op *op)
{
    struct cred *r = op->data;
    cr_assert_eq(hk_store_submit(c->sl, op), 0);
    uv_run(&c->loop, UV_RUN_DEFAULT);
    cr_assert_eq(r->dones, 1, "on_done ran %d times", r->dones);
    return r->status;
}

static void fill_hash(uint8_t h[32], unsigned seed)
{
    for (unsigned i = 0; i < 32; i++)
        h[i] = (uint8_t)(seed * 37u + i * 7u + 1u);
    h[5] = 0;   /* a zero byte inside: hashes are bytes, not strings */
}

static struct hk_token_rec token_rec(const char *name, unsigned seed, unsigned scopes, int64_t expires_us)
{
    struct hk_token_rec t;
    memset(&t, 0, sizeof t);
    snprintf(t.name, sizeof t.name, "%s", name);
    fill_hash(t.hash, seed);
    t.scopes = scopes;
    t.expires_us = expires_us;
    return t;
}

static int token_put(struct ctx *c, struct hk_token_rec *t)
{
    struct hk_store_op op;
    struct cred r;
    cred_op(&op, &r, HK_OP_TOKEN_PUT);
    op.token = t;
    return cred_run(c, &op);
}

/* The token with hash `seed`; on_done ran inside submit (a read). */
static int token_get(struct ctx *c, unsigned seed, struct hk_token_rec *out)
{
    struct hk_store_op op;
    struct cred r;
    cred_op(&op, &r, HK_OP_TOKEN_GET);
    memset(out, 0, sizeof *out);
    fill_hash(out->hash, seed);
    op.token = out;
    cr_assert_eq(hk_store_submit(c->sl, &op), 0);
    cr_assert_eq(r.dones, 1, "TOKEN_GET is answered inside submit");
    return r.status;
}

static int token_revoke(struct ctx *c, const char *name, struct hk_token_rec *out)
{
    struct hk_store_op op;
    struct cred r;
    cred_op(&op, &r, HK_OP_TOKEN_REVOKE);
    op.name = name;
    op.token = out;
    return cred_run(c, &op);
}

static int token_list(struct ctx *c, uint32_t limit, struct cred *r)
{
    struct hk_store_op op;
    cred_op(&op, r, HK_OP_TOKEN_LIST);
    op.list.limit = limit;
    return cred_run(c, &op);
}

static struct hk_session_rec session_rec(unsigned seed, const char *subject, unsigned scopes,
                                         int64_t expires_us)
{
    struct hk_session_rec s;
    memset(&s, 0, sizeof s);
    fill_hash(s.hash, seed);
    fill_hash(s.csrf_hash, seed + 1000);
    snprintf(s.subject, sizeof s.subject, "%s", subject);
    s.scopes = scopes;
    s.expires_us = expires_us;
    return s;
}

static int session_put(struct ctx *c, struct hk_session_rec *s)
{
    struct hk_store_op op;
    struct cred r;
    cred_op(&op, &r, HK_OP_SESSION_PUT);
    op.session = s;
    return cred_run(c, &op);
}

static int session_get(struct ctx *c, unsigned seed, struct hk_session_rec *out)
{
    struct hk_store_op op;
    struct cred r;
    cred_op(&op, &r, HK_OP_SESSION_GET);
    memset(out, 0, sizeof *out);
    fill_hash(out->hash, seed);
    op.session = out;
    cr_assert_eq(hk_store_submit(c->sl, &op), 0);
    cr_assert_eq(r.dones, 1, "SESSION_GET is answered inside submit");
    return r.status;
}

static int session_del(struct ctx *c, unsigned seed)
{
    struct hk_store_op op;
    struct cred r;
    struct hk_session_rec s;
    memset(&s, 0, sizeof s);
    fill_hash(s.hash, seed);
    cred_op(&op, &r, HK_OP_SESSION_DEL);
    op.session = &s;
    return cred_run(c, &op);
}

static void sql_exec(const char *path, const char *sql)
{
    sqlite3 *db;
    cr_assert_eq(sqlite3_open_v2(path, &db, SQLITE_OPEN_READWRITE, NULL), SQLITE_OK);
    cr_assert_eq(sqlite3_busy_timeout(db, 5000), SQLITE_OK);
    char *err = NULL;
    int rc = sqlite3_exec(db, sql, NULL, NULL, &err);
    cr_assert_eq(rc, SQLITE_OK, "%s: %s", sql, err ? err : "?");
    sqlite3_close(db);
}

static void assert_token_eq(const struct hk_token_rec *a, const struct hk_token_rec *b)
{
    cr_assert_str_eq(a->name, b->name);
    cr_assert_eq(memcmp(a->hash, b->hash, 32), 0);
    cr_assert_eq(a->scopes, b->scopes);
    cr_assert_eq(a->created_us, b->created_us);
    cr_assert_eq(a->expires_us, b->expires_us);
    cr_assert_eq(a->revoked_us, b->revoked_us);
}

static void assert_session_eq(const struct hk_session_rec *a, const struct hk_session_rec *b)
{
    cr_assert_eq(memcmp(a->hash, b->hash, 32), 0);
    cr_assert_str_eq(a->subject, b->subject);
    cr_assert_eq(a->scopes, b->scopes);
    cr_assert_eq(memcmp(a->csrf_hash, b->csrf_hash, 32), 0);
    cr_assert_eq(a->expires_us, b->expires_us);
}

Test(store_sqlite, token_put_get_list_revoke)
{
    struct ctx c;
    ctx_init(&c);
    ctx_open(&c, false);

    int64_t t0 = hk_wall_us();
    struct hk_token_rec a = token_rec("alpha", 1, HK_SCOPE_READ, 0);
    cr_assert_eq(token_put(&c, &a), 0);
    int64_t t1 = hk_wall_us();
    cr_assert(a.created_us >= t0 && a.created_us <= t1, "created_us 0 becomes now");
    /* An explicit creation time is kept; revoked_us on input is ignored. */
    struct hk_token_rec b = token_rec("Beta-2.x_y", 2, HK_SCOPE_ALL, HK_STORE_TIME_MAX);
    b.created_us = 1234567;
    b.revoked_us = 99;
    cr_assert_eq(token_put(&c, &b), 0);
    cr_assert_eq(b.created_us, 1234567);
    cr_assert_eq(b.revoked_us, 0);
    struct hk_token_rec z = token_rec("_z", 3, HK_SCOPE_READ | HK_SCOPE_DELETE, t0 + 1000000);
    cr_assert_eq(token_put(&c, &z), 0);

    struct hk_token_rec got;
    cr_assert_eq(token_get(&c, 1, &got), 0);
    assert_token_eq(&got, &a);
    cr_assert_eq(token_get(&c, 2, &got), 0);
    assert_token_eq(&got, &b);
    cr_assert_eq(token_get(&c, 3, &got), 0);
    assert_token_eq(&got, &z);
    cr_assert_eq(token_get(&c, 4, &got), HK_ENOTFOUND);

    /* Byte order of names: upper case, then '_', then lower case. */
    struct cred r;
    cr_assert_eq(token_list(&c, 0, &r), 0);
    cr_assert_eq(r.ntokens, 3);
    cr_assert_str_eq(r.names[0], "Beta-2.x_y");
    cr_assert_str_eq(r.names[1], "_z");
    cr_assert_str_eq(r.names[2], "alpha");
    assert_token_eq(&r.last, &a);
    cr_assert_eq(token_list(&c, 1, &r), 0);
    cr_assert_eq(r.ntokens, 1, "list.limit 1 says whether any token exists");
    cr_assert_str_eq(r.names[0], "Beta-2.x_y");

    /* Revoke: now, once; a second revoke keeps the first time. */
    struct hk_token_rec rv;
    int64_t r0 = hk_wall_us();
    cr_assert_eq(token_revoke(&c, "alpha", &rv), 0);
    int64_t r1 = hk_wall_us();
    cr_assert_str_eq(rv.name, "alpha");
    cr_assert(rv.revoked_us >= r0 && rv.revoked_us <= r1);
    cr_assert_eq(rv.created_us, a.created_us);
    usleep(2000);
    struct hk_token_rec rv2;
    cr_assert_eq(token_revoke(&c, "alpha", &rv2), 0);
    cr_assert_eq(rv2.revoked_us, rv.revoked_us, "revoking again keeps the first time");
    cr_assert_eq(token_revoke(&c, "alpha", NULL), 0);
    cr_assert_eq(token_get(&c, 1, &got), 0, "a revoked token is returned as data");
    cr_assert_eq(got.revoked_us, rv.revoked_us);
    cr_assert_eq(token_revoke(&c, "nobody", NULL), HK_ENOTFOUND);
    cr_assert_eq(token_revoke(&c, "alph", NULL), HK_ENOTFOUND);
    cr_assert_eq(token_get(&c, 2, &got), 0);
    cr_assert_eq(got.revoked_us, 0, "only the named token is revoked");
    ctx_close(&c);
    cr_assert_eq(sql_int(c.path, "SELECT count(*) FROM api_tokens WHERE revoked_us IS NOT NULL"), 1);
    cr_assert_eq(sql_int(c.path, "SELECT count(*) FROM api_tokens WHERE expires_us IS NULL"), 1);
    rm_dir(&c);
}

/* A name or a hash stored already: HK_ECONFLICT and nothing changes, also
 * for two puts of one name in the same group commit. */
Test(store_sqlite, token_put_conflicts)
{
    struct ctx c;
    ctx_init(&c);
    ctx_open(&c, false);
    struct hk_token_rec a = token_rec("ops", 1, HK_SCOPE_READ, 0);
    cr_assert_eq(token_put(&c, &a), 0);
    struct hk_token_rec same_name = token_rec("ops", 2, HK_SCOPE_ADMIN, 0);
    cr_assert_eq(token_put(&c, &same_name), HK_ECONFLICT);
    struct hk_token_rec same_hash = token_rec("other", 1, HK_SCOPE_ADMIN, 0);
    cr_assert_eq(token_put(&c, &same_hash), HK_ECONFLICT);
    struct hk_token_rec got;
    cr_assert_eq(token_get(&c, 1, &got), 0);
    assert_token_eq(&got, &a);
    cr_assert_eq(token_get(&c, 2, &got), HK_ENOTFOUND);

    /* Two in one batch, beside a webhook insert that must not suffer. */
    struct hk_store_op ops[3];
    struct cred rs[2];
    struct got g = {0};
    struct hk_token_rec x = token_rec("twin", 10, HK_SCOPE_READ, 0);
    struct hk_token_rec y = token_rec("twin", 11, HK_SCOPE_READ, 0);
    cred_op(&ops[0], &rs[0], HK_OP_TOKEN_PUT);
    ops[0].token = &x;
    op_insert(&ops[1], &g, "s", "e", "{}", NULL);
    cred_op(&ops[2], &rs[1], HK_OP_TOKEN_PUT);
    ops[2].token = &y;
    for (int i = 0; i < 3; i++)
        cr_assert_eq(hk_store_submit(c.sl, &ops[i]), 0);
    uv_run(&c.loop, UV_RUN_DEFAULT);
    cr_assert_eq(rs[0].dones, 1);
    cr_assert_eq(rs[1].dones, 1);
    cr_assert_eq(g.dones, 1);
    cr_assert_eq(rs[0].status, 0);
    cr_assert_eq(rs[1].status, HK_ECONFLICT);
    cr_assert_eq(g.status, 0);
    got_free(&g);
    ctx_close(&c);
    cr_assert_eq(sql_int(c.path, "SELECT count(*) FROM api_tokens"), 2);
    cr_assert_eq(sql_int(c.path, "SELECT count(*) FROM webhooks"), 1);
    rm_dir(&c);
}

/* Input the store refuses: HK_EINVAL inside submit, nothing written. */
Test(store_sqlite, credential_input_refused)
{
    struct ctx c;
    ctx_init(&c);
    ctx_open(&c, false);
    char long_name[HK_TOKEN_NAME_MAX + 2];
    memset(long_name, 'a', sizeof long_name - 1);
    long_name[sizeof long_name - 1] = '\0';
    const char *bad_names[] = {"", "has space", "slash/", "caf\xc3\xa9", "quote\"", long_name};
    for (size_t i = 0; i < sizeof bad_names / sizeof bad_names[0]; i++) {
        struct hk_token_rec t = token_rec("x", 1, HK_SCOPE_READ, 0);
        memset(t.name, 0, sizeof t.name);
        memcpy(t.name, bad_names[i], strlen(bad_names[i]) < HK_TOKEN_NAME_MAX ? strlen(bad_names[i])
                                                                                : HK_TOKEN_NAME_MAX);
        if (strlen(bad_names[i]) > HK_TOKEN_NAME_MAX)
            memset(t.name, 'a', sizeof t.name);   /* no NUL within the array */
        struct hk_store_op op;
        struct cred r;
        cred_op(&op, &r, HK_OP_TOKEN_PUT);
        op.token = &t;
        cr_assert_eq(hk_store_submit(c.sl, &op), 0);
        cr_assert_eq(r.dones, 1, "refused inside submit (%zu)", i);
        cr_assert_eq(r.status, HK_EINVAL, "name %zu", i);
        cr_assert_eq(token_revoke(&c, bad_names[i], NULL), HK_EINVAL, "revoke name %zu", i);
    }
    /* A 64-byte name is fine. */
    char max_name[HK_TOKEN_NAME_MAX + 1];
    memset(max_name, 'm', HK_TOKEN_NAME_MAX);
    max_name[HK_TOKEN_NAME_MAX] = '\0';
    struct hk_token_rec ok = token_rec(max_name, 7, HK_SCOPE_READ, 0);
    cr_assert_eq(token_put(&c, &ok), 0);

    struct hk_token_rec t = token_rec("t", 1, 0, 0);
    cr_assert_eq(token_put(&c, &t), HK_EINVAL, "no scope");
    t = token_rec("t", 1, HK_SCOPE_ALL + 1, 0);
    cr_assert_eq(token_put(&c, &t), HK_EINVAL, "unknown scope bit");
    t = token_rec("t", 1, HK_SCOPE_READ, -1);
    cr_assert_eq(token_put(&c, &t), HK_EINVAL, "negative expiry");
    t = token_rec("t", 1, HK_SCOPE_READ, HK_STORE_TIME_MAX + 1);
    cr_assert_eq(token_put(&c, &t), HK_EINVAL, "expiry after 9999");
    t = token_rec("t", 1, HK_SCOPE_READ, 0);
    t.created_us = -5;
    cr_assert_eq(token_put(&c, &t), HK_EINVAL, "negative creation time");

    struct hk_store_op op;
    struct cred r;
    enum hk_op_kind need_rec[] = {HK_OP_TOKEN_PUT, HK_OP_TOKEN_GET, HK_OP_TOKEN_REVOKE,
                                  HK_OP_SESSION_PUT, HK_OP_SESSION_GET, HK_OP_SESSION_DEL};
    for (size_t i = 0; i < sizeof need_rec / sizeof need_rec[0]; i++) {
        cred_op(&op, &r, need_rec[i]);
        cr_assert_eq(hk_store_submit(c.sl, &op), 0);
        cr_assert_eq(r.dones, 1);
        cr_assert_eq(r.status, HK_EINVAL, "kind %d without its record", (int)need_rec[i]);
    }

    int64_t later = hk_wall_us() + 3600000000;
    struct hk_session_rec s = session_rec(1, "ok", HK_SCOPE_READ, 0);
    cr_assert_eq(session_put(&c, &s), HK_EINVAL, "a session expires");
    s = session_rec(1, "", HK_SCOPE_READ, later);
    cr_assert_eq(session_put(&c, &s), HK_EINVAL, "empty subject");
    s = session_rec(1, "a b", HK_SCOPE_READ, later);
    cr_assert_eq(session_put(&c, &s), HK_EINVAL, "bad subject");
    s = session_rec(1, "ok", 0, later);
    cr_assert_eq(session_put(&c, &s), HK_EINVAL, "no scope");
    s = session_rec(1, "ok", HK_SCOPE_READ, HK_STORE_TIME_MAX + 1);
    cr_assert_eq(session_put(&c, &s), HK_EINVAL, "expiry after 9999");
    ctx_close(&c);
    cr_assert_eq(sql_int(c.path, "SELECT count(*) FROM api_tokens"), 1);
    cr_assert_eq(sql_int(c.path, "SELECT count(*) FROM sessions"), 0);
    rm_dir(&c);
}

/* A TOKEN_GET from inside TOKEN_LIST's on_token: the nested read gets a
 * statement of its own. */
struct nest_list {
    struct ctx *c;
    int found;
};

static void nested_token(struct hk_store_op *op, const struct hk_token_rec *t)
{
    struct nest_list *n = op->data;
    struct hk_token_rec got;
    struct hk_store_op inner;
    struct cred r;
    cred_op(&inner, &r, HK_OP_TOKEN_GET);
    got = *t;
    memset(got.name, 0, sizeof got.name);
    inner.token = &got;
    cr_assert_eq(hk_store_submit(n->c->sl, &inner), 0);
    cr_assert_eq(r.dones, 1);
    cr_assert_eq(r.status, 0);
    cr_assert_str_eq(got.name, t->name);
    n->found++;
}

static void nested_done(struct hk_store_op *op)
{
    cr_assert_eq(op->status, 0);
}

Test(store_sqlite, token_reads_nest_in_callbacks)
{
    struct ctx c;
    ctx_init(&c);
    ctx_open(&c, false);
    for (unsigned i = 0; i < 5; i++) {
        char name[16];
        snprintf(name, sizeof name, "t%u", i);
        struct hk_token_rec t = token_rec(name, 100 + i, HK_SCOPE_READ, 0);
        cr_assert_eq(token_put(&c, &t), 0);
    }
    struct nest_list n = {&c, 0};
    struct hk_store_op op;
    memset(&op, 0, sizeof op);
    op.kind = HK_OP_TOKEN_LIST;
    op.on_token = nested_token;
    op.on_done = nested_done;
    op.data = &n;
    cr_assert_eq(hk_store_submit(c.sl, &op), 0);
    cr_assert_eq(n.found, 5);
    ctx_close(&c);
    rm_dir(&c);
}

/* Tokens, revocations and sessions outlive the process. */
Test(store_sqlite, reopen_keeps_tokens_and_sessions)
{
    struct ctx c;
    ctx_init(&c);
    ctx_open(&c, true);
    struct hk_token_rec a = token_rec("admin", 1, HK_SCOPE_ALL, 0);
    struct hk_token_rec b = token_rec("reader", 2, HK_SCOPE_READ, hk_wall_us() + 86400000000);
    cr_assert_eq(token_put(&c, &a), 0);
    cr_assert_eq(token_put(&c, &b), 0);
    struct hk_token_rec rv;
    cr_assert_eq(token_revoke(&c, "reader", &rv), 0);
    b.revoked_us = rv.revoked_us;
    struct hk_session_rec s = session_rec(9, "admin", HK_SCOPE_ALL, hk_wall_us() + 3600000000);
    cr_assert_eq(session_put(&c, &s), 0);
    ctx_close(&c);

    ctx_open(&c, true);
    struct hk_token_rec got;
    cr_assert_eq(token_get(&c, 1, &got), 0);
    assert_token_eq(&got, &a);
    cr_assert_eq(token_get(&c, 2, &got), 0);
    assert_token_eq(&got, &b);
    struct cred r;
    cr_assert_eq(token_list(&c, 0, &r), 0);
    cr_assert_eq(r.ntokens, 2);
    struct hk_session_rec gs;
    cr_assert_eq(session_get(&c, 9, &gs), 0);
    assert_session_eq(&gs, &s);
    cr_assert_eq(token_put(&c, &a), HK_ECONFLICT);
    ctx_close(&c);
    rm_dir(&c);
}

/* A database of version 1 (webhooks only) gains the credential tables and
 * keeps its rows. */
Test(store_sqlite, migrates_a_version_1_database)
{
    struct ctx c;
    ctx_init(&c);
    sqlite3 *db;
    cr_assert_eq(sqlite3_open(c.path, &db), SQLITE_OK);
    cr_assert_eq(sqlite3_exec(db,
                              "CREATE TABLE schema_version(version INTEGER NOT NULL);"
                              "INSERT INTO schema_version(version) VALUES(1);"
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
                              "CREATE INDEX webhooks_event_type_id ON webhooks(event_type, id);"
                              "INSERT INTO webhooks(source, event_type, payload, received_us)"
                              " VALUES('gh', 'push', '{}', 42);",
                              NULL, NULL, NULL), SQLITE_OK);
    sqlite3_close(db);
    ctx_open(&c, false);
    struct got g = {0};
    cr_assert_eq(get(&c, 1, &g), 0);
    cr_assert_eq(g.received_us, 42);
    got_free(&g);
    struct cred r;
    cr_assert_eq(token_list(&c, 0, &r), 0);
    cr_assert_eq(r.ntokens, 0, "no token yet: the first start makes one");
    struct hk_token_rec t = token_rec("first", 1, HK_SCOPE_ALL, 0);
    cr_assert_eq(token_put(&c, &t), 0);
    cr_assert_eq(token_list(&c, 1, &r), 0);
    cr_assert_eq(r.ntokens, 1);
    ctx_close(&c);
    cr_assert_eq(sql_int(c.path, "SELECT version FROM schema_version"), 4);
    cr_assert_eq(sql_int(c.path, "SELECT count(*) FROM schema_version"), 1);
    rm_dir(&c);
}

Test(store_sqlite, session_put_get_del_and_expiry)
{
    struct ctx c;
    ctx_init(&c);
    ctx_open(&c, false);
    int64_t now = hk_wall_us();
    struct hk_session_rec live = session_rec(1, "admin", HK_SCOPE_READ | HK_SCOPE_DELETE,
                                             now + 3600000000);
    cr_assert_eq(session_put(&c, &live), 0);
    struct hk_session_rec dup = session_rec(1, "other", HK_SCOPE_ALL, now + 7200000000);
    cr_assert_eq(session_put(&c, &dup), HK_ECONFLICT);
    struct hk_session_rec got;
    cr_assert_eq(session_get(&c, 1, &got), 0);
    assert_session_eq(&got, &live);   /* the first one's */
    cr_assert_eq(session_get(&c, 2, &got), HK_ENOTFOUND);

    /* Expired: not found, though still in the table until swept. */
    struct hk_session_rec brief = session_rec(2, "admin", HK_SCOPE_READ, hk_wall_us() + 400000);
    cr_assert_eq(session_put(&c, &brief), 0);
    cr_assert_eq(session_get(&c, 2, &got), 0);
    usleep(500000);
    cr_assert_eq(session_get(&c, 2, &got), HK_ENOTFOUND, "an expired session is not found");
    cr_assert_eq(sql_int(c.path, "SELECT count(*) FROM sessions"), 2);
    cr_assert_eq(session_del(&c, 2), HK_ENOTFOUND, "deleting an expired session: not found");
    cr_assert_eq(sql_int(c.path, "SELECT count(*) FROM sessions"), 1, "but deleted all the same");

    cr_assert_eq(session_del(&c, 1), 0);
    cr_assert_eq(session_del(&c, 1), HK_ENOTFOUND);
    cr_assert_eq(session_get(&c, 1, &got), HK_ENOTFOUND);
    cr_assert_eq(session_del(&c, 3), HK_ENOTFOUND);
    ctx_close(&c);
    cr_assert_eq(sql_int(c.path, "SELECT count(*) FROM sessions"), 0);
    rm_dir(&c);
}

/* Revoking a token ends the sessions made from it (subject = its name),
 * and only those; a repeated revoke does so again. */
Test(store_sqlite, token_revoke_deletes_its_sessions)
{
    struct ctx c;
    ctx_init(&c);
    ctx_open(&c, false);
    int64_t later = hk_wall_us() + 3600000000;
    struct hk_token_rec a = token_rec("ci-a", 1, HK_SCOPE_READ, 0);
    struct hk_token_rec b = token_rec("ci-b", 2, HK_SCOPE_READ, 0);
    cr_assert_eq(token_put(&c, &a), 0);
    cr_assert_eq(token_put(&c, &b), 0);
    struct hk_session_rec a1 = session_rec(1, "ci-a", HK_SCOPE_READ, later);
    struct hk_session_rec a2 = session_rec(2, "ci-a", HK_SCOPE_READ, later);
    struct hk_session_rec b1 = session_rec(3, "ci-b", HK_SCOPE_READ, later);
    cr_assert_eq(session_put(&c, &a1), 0);
    cr_assert_eq(session_put(&c, &a2), 0);
    cr_assert_eq(session_put(&c, &b1), 0);

    struct hk_session_rec got;
    cr_assert_eq(token_revoke(&c, "nobody", NULL), HK_ENOTFOUND);
    cr_assert_eq(sql_int(c.path, "SELECT count(*) FROM sessions"), 3);
    cr_assert_eq(token_revoke(&c, "ci-a", NULL), 0);
    cr_assert_eq(session_get(&c, 1, &got), HK_ENOTFOUND, "the revoked token's sessions end");
    cr_assert_eq(session_get(&c, 2, &got), HK_ENOTFOUND);
    cr_assert_eq(session_get(&c, 3, &got), 0, "another token's session stays");
    assert_session_eq(&got, &b1);

    /* Revoking again (already revoked) deletes again. */
    struct hk_session_rec a3 = session_rec(4, "ci-a", HK_SCOPE_READ, later);
    cr_assert_eq(session_put(&c, &a3), 0);
    cr_assert_eq(token_revoke(&c, "ci-a", NULL), 0);
    cr_assert_eq(session_get(&c, 4, &got), HK_ENOTFOUND);
    cr_assert_eq(session_get(&c, 3, &got), 0);
    ctx_close(&c);
    cr_assert_eq(sql_int(c.path, "SELECT count(*) FROM sessions WHERE subject = 'ci-a'"), 0);
    cr_assert_eq(sql_int(c.path, "SELECT count(*) FROM sessions WHERE subject = 'ci-b'"), 1);
    rm_dir(&c);
}

/* Each SESSION_PUT first deletes at most HK_STORE_SWEEP_MAX expired
 * sessions, the longest expired first; live ones stay. */
Test(store_sqlite, session_put_sweeps_expired_a_few_at_a_time)
{
    struct ctx c;
    ctx_init(&c);
    ctx_open(&c, false);
    ctx_close(&c);
    /* 40 sessions that expired long ago (expires_us 1 to 40), 2 live. */
    sql_exec(c.path, "WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 40)"
                     " INSERT INTO sessions(hash, subject, scopes, csrf_hash, expires_us)"
                     " SELECT randomblob(32), 'old', 1, randomblob(32), i FROM n;"
                     "INSERT INTO sessions(hash, subject, scopes, csrf_hash, expires_us)"
                     " VALUES(randomblob(32), 'live', 1, randomblob(32), 9000000000000000),"
                     " (randomblob(32), 'live', 1, randomblob(32), 9000000000000001);");
    ctx_open(&c, false);
    int64_t later = hk_wall_us() + 3600000000;
    int64_t left = 40;
    for (unsigned k = 0; k < 4; k++) {
        struct hk_session_rec s = session_rec(100 + k, "new", HK_SCOPE_READ, later);
        cr_assert_eq(session_put(&c, &s), 0);
        left = left > HK_STORE_SWEEP_MAX ? left - HK_STORE_SWEEP_MAX : 0;
        cr_assert_eq(sql_int(c.path, "SELECT count(*) FROM sessions WHERE subject = 'old'"), left,
                     "after put %u", k);
        if (left > 0)
            cr_assert_eq(sql_int(c.path, "SELECT min(expires_us) FROM sessions WHERE subject = 'old'"),
                         40 - left + 1, "the longest expired go first");
    }
    cr_assert_eq(sql_int(c.path, "SELECT count(*) FROM sessions WHERE subject = 'live'"), 2);
    cr_assert_eq(sql_int(c.path, "SELECT count(*) FROM sessions WHERE subject = 'new'"), 4);
    ctx_close(&c);
    rm_dir(&c);
}

/* Far times and zero bytes in hashes come back exactly. */
Test(store_sqlite, credential_values_round_trip_exactly)
{
    struct ctx c;
    ctx_init(&c);
    ctx_open(&c, false);
    struct hk_token_rec t = token_rec("far", 0, HK_SCOPE_ADMIN, HK_STORE_TIME_MAX);
    memset(t.hash, 0, 32);
    t.created_us = 1;
    cr_assert_eq(token_put(&c, &t), 0);
    struct hk_token_rec got;
    memset(&got, 0xff, sizeof got);
    struct hk_store_op op;
    struct cred r;
    cred_op(&op, &r, HK_OP_TOKEN_GET);
    memset(got.hash, 0, 32);
    op.token = &got;
    cr_assert_eq(hk_store_submit(c.sl, &op), 0);
    cr_assert_eq(r.status, 0);
    assert_token_eq(&got, &t);
    struct hk_session_rec s = session_rec(5, "far", HK_SCOPE_READ, HK_STORE_TIME_MAX);
    cr_assert_eq(session_put(&c, &s), 0);
    struct hk_session_rec gs;
    cr_assert_eq(session_get(&c, 5, &gs), 0);
    cr_assert_eq(gs.expires_us, HK_STORE_TIME_MAX);
    ctx_close(&c);
    rm_dir(&c);
}

/* ---- ingress rows (docs/ingress.md) ------------------------------------- */

static const uint8_t digest[32] = {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15,
                                   16, 17, 18, 19, 20, 21, 22, 23, 24, 25, 26, 27, 28, 29, 30, 255};

/* An ingress row of `src` with this delivery id (or NULL) and body. */
static void op_hook(struct hk_store_op *op, struct got *g, const char *src, const char *delivery,
                    const void *body, size_t body_len)
{
    op_insert(op, g, src, "push", NULL, NULL);
    struct hk_webhook *w = &op->row;
    w->ingress = true;
    w->body = body;
    w->body_len = body_len;
    w->body_sha256 = digest;
    w->content_type = "text/plain; charset=utf-8";
    w->content_type_len = strlen(w->content_type);
    w->delivery_id = delivery;
    w->delivery_id_len = delivery ? strlen(delivery) : 0;
    w->headers = "{\"x-github-event\":\"push\"}";
    w->headers_len = strlen(w->headers);
    w->verified = "{\"scheme\":\"github\",\"secret\":\"env:GH\"}";
    w->verified_len = strlen(w->verified);
    w->client_addr = "2001:db8::7";
    w->client_addr_len = strlen(w->client_addr);
}

static void assert_hook(const struct got *g, const void *body, size_t body_len, const char *delivery)
{
    cr_assert(g->ingress);
    cr_assert_not(g->body_null, "a row's body is never a NULL pointer, an empty one included");
    cr_assert_eq(g->body_len, body_len);
    cr_assert(body_len == 0 || memcmp(g->body, body, body_len) == 0);
    cr_assert(g->has_sha);
    cr_assert_arr_eq(g->sha, digest, 32);
    cr_assert_str_eq(g->ctype, "text/plain; charset=utf-8");
    cr_assert_str_eq(g->delivery, delivery ? delivery : "(null)");
    cr_assert_str_eq(g->headers, "{\"x-github-event\":\"push\"}");
    cr_assert_str_eq(g->verified, "{\"scheme\":\"github\",\"secret\":\"env:GH\"}");
    cr_assert_str_eq(g->client, "2001:db8::7");
    cr_assert(g->payload_null, "an ingress row's payload column stays NULL");
    cr_assert_str_eq(g->event_type, "push");
}

Test(store_sqlite, ingress_row_round_trips_byte_exact)
{
    struct ctx c;
    struct hk_store_op op;
    struct got g = {0};
    ctx_init(&c);
    ctx_open(&c, false);
    static const char body[] = "a\0b\xff\xfe\r\n";   /* NULs and bytes that are no UTF-8 */
    op_hook(&op, &g, "gh", "d-1", body, sizeof body - 1);
    op.row.payload = "not stored";
    op.row.payload_len = 10;
    op.idem_key = "not used";
    run_op(&c, &op);
    cr_assert_eq(g.status, 0);
    cr_assert_not(g.replayed);
    cr_assert_eq(g.rows, 1);
    assert_hook(&g, body, sizeof body - 1, "d-1");
    int64_t id = g.id, us = g.received_us;
    got_free(&g);

    cr_assert_eq(get(&c, id, &g), 0);
    assert_hook(&g, body, sizeof body - 1, "d-1");
    cr_assert_eq(g.received_us, us);
    got_free(&g);

    /* An empty body is a zero-length blob, not NULL: still an ingress row.
     * So is one with no delivery id, content type, verification or address. */
    op_hook(&op, &g, "gh", NULL, NULL, 0);
    run_op(&c, &op);
    cr_assert_eq(g.status, 0);
    assert_hook(&g, NULL, 0, NULL);
    int64_t empty = g.id;
    got_free(&g);
    op_hook(&op, &g, "gh", NULL, "x", 1);
    op.row.content_type = op.row.verified = op.row.client_addr = op.row.headers = NULL;
    run_op(&c, &op);
    cr_assert_eq(g.status, 0);
    int64_t bare = g.id;
    got_free(&g);
    cr_assert_eq(get(&c, empty, &g), 0);
    assert_hook(&g, NULL, 0, NULL);
    got_free(&g);
    cr_assert_eq(get(&c, bare, &g), 0);
    cr_assert(g.ingress);
    cr_assert_str_eq(g.ctype, "(null)");
    cr_assert_str_eq(g.verified, "(null)");
    cr_assert_str_eq(g.client, "(null)");
    cr_assert_str_eq(g.headers, "(null)");
    got_free(&g);

    /* An envelope row keeps its shape; ingress fields given with one are
     * neither stored nor handed back. */
    op_hook(&op, &g, "gh", "d-9", "x", 1);
    op.row.ingress = false;
    op.row.payload = "{}";
    op.row.payload_len = 2;
    run_op(&c, &op);
    cr_assert_eq(g.status, 0);
    cr_assert_not(g.ingress);
    cr_assert(g.body_null);
    cr_assert_str_eq(g.delivery, "(null)");
    int64_t env = g.id;
    got_free(&g);
    cr_assert_eq(get(&c, env, &g), 0);
    cr_assert_not(g.ingress);
    cr_assert(g.body_null);
    cr_assert_not(g.has_sha);
    cr_assert_str_eq(g.delivery, "(null)");
    cr_assert_str_eq(g.payload, "{}");
    got_free(&g);
    ctx_close(&c);

    cr_assert_eq(sql_int(c.path, "SELECT count(*) FROM webhooks WHERE body IS NOT NULL"), 3);
    char sql[128];
    snprintf(sql, sizeof sql, "SELECT length(body) FROM webhooks WHERE id = %" PRId64, empty);
    cr_assert_eq(sql_int(c.path, sql), 0);
    cr_assert_eq(sql_int(c.path, "SELECT count(*) FROM webhooks WHERE payload IS NOT NULL"), 1);
    cr_assert_eq(sql_int(c.path, "SELECT count(*) FROM webhooks WHERE idem_key IS NOT NULL"), 0);
    rm_dir(&c);
}

Test(store_sqlite, ingress_delivery_id_stores_once)
{
    struct ctx c;
    struct hk_store_op op;
    struct got g = {0};
    ctx_init(&c);
    ctx_open(&c, false);
    op_hook(&op, &g, "gh", "d-1", "first", 5);
    run_op(&c, &op);
    cr_assert_eq(g.status, 0);
    cr_assert_not(g.replayed);
    int64_t orig = g.id, orig_us = g.received_us;
    got_free(&g);

    /* Same source and id, another body: the original, nothing stored. */
    op_hook(&op, &g, "gh", "d-1", "second", 6);
    op.row.event_type = "other";
    op.row.event_type_len = 5;
    run_op(&c, &op);
    cr_assert_eq(g.status, 0);
    cr_assert(g.replayed);
    cr_assert_eq(g.rows, 1);
    cr_assert_eq(g.id, orig);
    cr_assert_eq(g.received_us, orig_us);
    assert_hook(&g, "first", 5, "d-1");
    got_free(&g);

    /* The id is per source; the envelope's idempotency keys are another
     * space; in one batch, the second of two finds the first. */
    op_hook(&op, &g, "stripe", "d-1", "x", 1);
    run_op(&c, &op);
    cr_assert_not(g.replayed);
    cr_assert_gt(g.id, orig);
    got_free(&g);
    struct hk_store_op env;
    op_insert(&env, &g, "gh", "push", "{}", "d-1");
    run_op(&c, &env);
    cr_assert_not(g.replayed);
    got_free(&g);
    struct hk_store_op two[3];
    struct got g2[3] = {0};
    op_hook(&two[0], &g2[0], "gh", "d-2", "a", 1);
    op_hook(&two[1], &g2[1], "gh", "d-2", "b", 1);
    op_hook(&two[2], &g2[2], "gh", NULL, "c", 1);
    for (int i = 0; i < 3; i++)
        cr_assert_eq(hk_store_submit(c.sl, &two[i]), 0);
    uv_run(&c.loop, UV_RUN_DEFAULT);
    cr_assert_not(g2[0].replayed);
    cr_assert(g2[1].replayed);
    cr_assert_eq(g2[1].id, g2[0].id);
    cr_assert_eq(g2[1].body[0], 'a');
    cr_assert_not(g2[2].replayed);
    for (int i = 0; i < 3; i++)
        got_free(&g2[i]);

    ctx_close(&c);
    cr_assert_eq(sql_int(c.path, "SELECT count(*) FROM webhooks WHERE delivery_id = 'd-1'"), 2);
    cr_assert_eq(sql_int(c.path, "SELECT count(*) FROM webhooks WHERE delivery_id = 'd-2'"), 1);
    cr_assert_eq(sql_int(c.path, "SELECT count(*) FROM webhooks"), 5);
    rm_dir(&c);
}

/* What neither store would keep is refused inside submit, as PostgreSQL
 * refuses it: HK_EINVAL, nothing written. */
Test(store_sqlite, ingress_input_refused)
{
    struct ctx c;
    struct hk_store_op op;
    struct got g = {0};
    ctx_init(&c);
    ctx_open(&c, false);
    for (int k = 0; k < 9; k++) {
        op_hook(&op, &g, "gh", "d-1", "{}", 2);
        struct hk_webhook *w = &op.row;
        switch (k) {
        case 0: w->delivery_id = "d\0x"; w->delivery_id_len = 3; break;
        case 1: w->headers = "{\"a\":\"\xc3\"}"; w->headers_len = 9; break;
        case 2: w->body_sha256 = NULL; break;
        case 3: w->body = NULL; break;
        case 4: w->client_addr = "\0"; w->client_addr_len = 1; break;
        case 5: w->content_type = "te\0t"; w->content_type_len = 4; break;
        case 6: w->verified = "\xed\xa0\x80"; w->verified_len = 3; break;   /* a surrogate */
        case 7: w->event_type = NULL; break;
        default: w->source = "\xff"; w->source_len = 1; break;
        }
        cr_assert_eq(hk_store_submit(c.sl, &op), 0);
        cr_assert_eq(g.dones, 1, "case %d: answered inside submit", k);
        cr_assert_eq(g.status, HK_EINVAL, "case %d", k);
        cr_assert_eq(g.rows, 0);
        got_free(&g);
    }
    ctx_close(&c);
    cr_assert_eq(sql_int(c.path, "SELECT count(*) FROM webhooks"), 0);
    rm_dir(&c);
}

static void list_by(struct ctx *c, struct got *g, const char *src, const char *et, const char *delivery,
                    uint32_t limit, bool stream)
{
    struct hk_store_op op;
    memset(&op, 0, sizeof op);
    op.kind = HK_OP_LIST;
    op.list.source = src;
    op.list.source_len = src ? strlen(src) : 0;
    op.list.event_type = et;
    op.list.event_type_len = et ? strlen(et) : 0;
    op.list.delivery_id = delivery;
    op.list.delivery_id_len = delivery ? strlen(delivery) : 0;
    op.list.limit = limit;
    op.list.stream = stream;
    op.on_row = on_row;
    op.on_done = on_done;
    op.data = g;
    cr_assert_eq(hk_store_submit(c->sl, &op), 0);
    while (g->more)
        hk_store_list_next(c->sl, &op);
    cr_assert_eq(g->status, 0);
}

Test(store_sqlite, list_filters_on_the_delivery_id)
{
    struct ctx c;
    struct hk_store_op op;
    struct got g = {0};
    int64_t id[5];
    ctx_init(&c);
    ctx_open(&c, false);
    const char *const src[5] = {"gh", "gh", "st", "gh", "st"};
    const char *const dlv[5] = {"d1", "d2", "d1", NULL, "d3"};
    for (int i = 0; i < 5; i++) {
        op_hook(&op, &g, src[i], dlv[i], "b", 1);
        if (i == 4) {
            op.row.event_type = "charge";
            op.row.event_type_len = 6;
        }
        run_op(&c, &op);
        cr_assert_eq(g.status, 0);
        id[i] = g.id;
        got_free(&g);
    }
    insert(&c, "gh", "push", "{}");

    list_by(&c, &g, NULL, NULL, "d1", 10, false);
    cr_assert_eq(g.nids, 2);
    cr_assert_eq(g.ids[0], id[2], "newest first");
    cr_assert_eq(g.ids[1], id[0]);
    got_free(&g);
    list_by(&c, &g, "gh", NULL, "d1", 10, false);
    cr_assert_eq(g.nids, 1);
    cr_assert_eq(g.ids[0], id[0]);
    got_free(&g);
    list_by(&c, &g, NULL, "push", "d2", 10, false);
    cr_assert_eq(g.nids, 1);
    cr_assert_eq(g.ids[0], id[1]);
    got_free(&g);
    list_by(&c, &g, "st", "charge", "d3", 10, false);
    cr_assert_eq(g.nids, 1);
    cr_assert_eq(g.ids[0], id[4]);
    got_free(&g);
    list_by(&c, &g, "st", "push", "d3", 10, false);
    cr_assert_eq(g.nids, 0);
    got_free(&g);
    /* Streamed one row per batch, keyset-paged as without the filter. */
    list_by(&c, &g, NULL, NULL, "d1", 1, true);
    cr_assert_eq(g.nids, 2);
    cr_assert_eq(g.ids[0], id[2]);
    cr_assert_eq(g.ids[1], id[0]);
    cr_assert_eq(g.max_batch, 1);
    got_free(&g);
    list_by(&c, &g, "gh", NULL, NULL, 0, false);
    cr_assert_eq(g.nids, 4, "without the filter, every row of the source");
    got_free(&g);
    ctx_close(&c);
    rm_dir(&c);
}

/* The filter's statements use the indexes migration 3 made. */
Test(store_sqlite, delivery_id_filters_use_their_index)
{
    struct ctx c;
    ctx_init(&c);
    ctx_open(&c, false);
    ctx_close(&c);
    sqlite3 *db;
    cr_assert_eq(sqlite3_open_v2(c.path, &db, SQLITE_OPEN_READONLY, NULL), SQLITE_OK);
    static const struct {
        const char *where;
        const char *index;
    } cases[] = {
        {"delivery_id = ?5", "webhooks_delivery"},
        {"source = ?1 AND delivery_id = ?5", "webhooks_delivery"},
        {"+event_type = ?2 AND delivery_id = ?5", "webhooks_delivery"},
        {"source = ?1 AND +event_type = ?2 AND delivery_id = ?5", "webhooks_delivery"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char sql[256], want[96];
        snprintf(sql, sizeof sql, "EXPLAIN QUERY PLAN SELECT id FROM webhooks WHERE %s AND id < ?3"
                 " ORDER BY id DESC LIMIT ?4", cases[i].where);
        snprintf(want, sizeof want, "INDEX %s ", cases[i].index);
        sqlite3_stmt *st;
        cr_assert_eq(sqlite3_prepare_v2(db, sql, -1, &st, NULL), SQLITE_OK, "%s", sqlite3_errmsg(db));
        bool found = false;
        while (sqlite3_step(st) == SQLITE_ROW)
            found |= strstr((const char *)sqlite3_column_text(st, 3), want) != NULL;
        sqlite3_finalize(st);
        cr_assert(found, "%s does not use %s", cases[i].where, cases[i].index);
    }
    sqlite3_close(db);
    rm_dir(&c);
}

/* A database of version 2, rows in it, from before ingress: it migrates,
 * keeps its rows as envelope rows, and takes ingress rows. */
Test(store_sqlite, migrates_a_version_2_database)
{
    struct ctx c;
    ctx_init(&c);
    sqlite3 *db;
    cr_assert_eq(sqlite3_open(c.path, &db), SQLITE_OK);
    /* Migrations 1 and 2 as released. */
    cr_assert_eq(sqlite3_exec(db,
                              "CREATE TABLE schema_version(version INTEGER NOT NULL);"
                              "INSERT INTO schema_version(version) VALUES(2);"
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
                              "CREATE INDEX webhooks_event_type_id ON webhooks(event_type, id);"
                              "CREATE TABLE api_tokens("
                              " name TEXT NOT NULL PRIMARY KEY CHECK (length(name) BETWEEN 1 AND 64),"
                              " hash BLOB NOT NULL UNIQUE CHECK (length(hash) = 32),"
                              " scopes INTEGER NOT NULL,"
                              " created_us INTEGER NOT NULL,"
                              " expires_us INTEGER,"
                              " revoked_us INTEGER);"
                              "CREATE TABLE sessions("
                              " hash BLOB NOT NULL PRIMARY KEY CHECK (length(hash) = 32),"
                              " subject TEXT NOT NULL,"
                              " scopes INTEGER NOT NULL,"
                              " csrf_hash BLOB NOT NULL CHECK (length(csrf_hash) = 32),"
                              " expires_us INTEGER NOT NULL);"
                              "CREATE INDEX sessions_expires ON sessions(expires_us);"
                              "INSERT INTO webhooks(source, event_type, payload, received_us, idem_key)"
                              " VALUES('gh', 'push', '{\"n\":1}', 42, 'k1'),"
                              " ('gh', 'issue', NULL, 43, NULL);"
                              "INSERT INTO api_tokens VALUES('ci', zeroblob(32), 1, 5, NULL, NULL);",
                              NULL, NULL, NULL), SQLITE_OK);
    sqlite3_close(db);

    ctx_open(&c, false);
    struct got g = {0};
    cr_assert_eq(get(&c, 1, &g), 0);
    cr_assert_eq(g.received_us, 42);
    cr_assert_str_eq(g.payload, "{\"n\":1}");
    cr_assert_not(g.ingress);
    got_free(&g);
    cr_assert_eq(get(&c, 2, &g), 0);
    cr_assert(g.payload_null);
    cr_assert_not(g.ingress);
    got_free(&g);
    /* The old idempotency key still replays. */
    struct hk_store_op op;
    op_insert(&op, &g, "gh", "push", "{}", "k1");
    run_op(&c, &op);
    cr_assert(g.replayed);
    cr_assert_eq(g.id, 1);
    got_free(&g);
    op_hook(&op, &g, "gh", "d-1", "hi", 2);
    run_op(&c, &op);
    cr_assert_eq(g.status, 0);
    cr_assert_eq(g.id, 3);
    got_free(&g);
    list_by(&c, &g, "gh", NULL, NULL, 0, false);
    cr_assert_eq(g.nids, 3);
    cr_assert_eq(g.ids[0], 3);
    cr_assert(g.ingress == false && g.ids[2] == 1, "the last row listed is the oldest, an envelope");
    got_free(&g);
    struct cred r;
    cr_assert_eq(token_list(&c, 0, &r), 0);
    cr_assert_eq(r.ntokens, 1);
    ctx_close(&c);
    cr_assert_eq(sql_int(c.path, "SELECT version FROM schema_version"), 4);
    cr_assert_eq(sql_int(c.path, "SELECT count(*) FROM schema_version"), 1);
    cr_assert_eq(sql_int(c.path, "SELECT count(*) FROM webhooks WHERE body IS NULL"), 2);
    rm_dir(&c);
}

/* Two loops, each on its own thread, submitting the same deliveries at the
 * same time: each is stored once, and both submitters get that row. */
enum { RACE_N = 400, RACE_WAVE = 25 };
_Static_assert(RACE_N % RACE_WAVE == 0, "whole waves");

struct racer {
    struct hk_store *s;
    uv_barrier_t *start;
    int64_t ids[RACE_N];
    bool replayed[RACE_N];
    int failures;    /* checked on the main thread */
};

static void racer_main(void *arg)
{
    struct racer *w = arg;
    uv_loop_t loop;
    struct hk_store_loop *sl;
    static __thread struct hk_store_op ops[RACE_N];
    static __thread struct got gs[RACE_N];
    static __thread char dlv[RACE_N][16];
    if (uv_loop_init(&loop) != 0 || w->s->vt->loop_attach(w->s, &loop, &sl) != 0) {
        w->failures++;
        for (int base = 0; base < RACE_N; base += RACE_WAVE)
            uv_barrier_wait(w->start);   /* the other one waits for us */
        return;
    }
    /* In waves that start together: the same deliveries reach the writer
     * from both loops at once, wave after wave. */
    for (int base = 0; base < RACE_N; base += RACE_WAVE) {
        for (int i = base; i < base + RACE_WAVE; i++) {
            snprintf(dlv[i], sizeof dlv[i], "d-%d", i);
            op_hook(&ops[i], &gs[i], "race", dlv[i], dlv[i], strlen(dlv[i]));
        }
        uv_barrier_wait(w->start);
        for (int i = base; i < base + RACE_WAVE; i++)
            if (hk_store_submit(sl, &ops[i]) != 0)
                w->failures++;
        uv_run(&loop, UV_RUN_DEFAULT);
    }
    for (int i = 0; i < RACE_N; i++) {
        if (gs[i].dones != 1 || gs[i].status != 0 || gs[i].rows != 1 ||
            gs[i].body_len != strlen(dlv[i]) || memcmp(gs[i].body, dlv[i], gs[i].body_len) != 0)
            w->failures++;
        w->ids[i] = gs[i].id;
        w->replayed[i] = gs[i].replayed;
        free(gs[i].ids);
    }
    w->s->vt->loop_detach(sl);
    uv_run(&loop, UV_RUN_DEFAULT);
    if (uv_loop_close(&loop) != 0)
        w->failures++;
}

Test(store_sqlite, racing_loops_store_each_delivery_once)
{
    struct ctx c;
    char err[256];
    ctx_init(&c);
    c.s = hk_sqlite_open(&(struct hk_sqlite_opts){.path = c.path}, err, sizeof err);
    cr_assert_not_null(c.s, "%s", err);
    static struct racer w[2];
    uv_barrier_t start;
    cr_assert_eq(uv_barrier_init(&start, 2), 0);
    for (int k = 0; k < 2; k++) {
        memset(&w[k], 0, sizeof w[k]);
        w[k].s = c.s;
        w[k].start = &start;
    }
    uv_thread_t t[2];
    for (int i = 0; i < 2; i++)
        cr_assert_eq(uv_thread_create(&t[i], racer_main, &w[i]), 0);
    for (int i = 0; i < 2; i++)
        cr_assert_eq(uv_thread_join(&t[i]), 0);
    uv_barrier_destroy(&start);
    cr_assert_eq(w[0].failures, 0);
    cr_assert_eq(w[1].failures, 0);
    c.s->vt->close(c.s);
    for (int i = 0; i < RACE_N; i++) {
        cr_assert_eq(w[0].ids[i], w[1].ids[i], "delivery %d: two rows", i);
        cr_assert_neq(w[0].replayed[i], w[1].replayed[i], "delivery %d: exactly one stored it", i);
    }
    cr_assert_eq(sql_int(c.path, "SELECT count(*) FROM webhooks"), RACE_N);
    cr_assert_eq(sql_int(c.path, "SELECT count(DISTINCT delivery_id) FROM webhooks"), RACE_N);
    rm_dir(&c);
}

/* ---- time bounds and per-source figures (GraphQL) ------------------------- */

/* A list with every filter, the time bounds included, against a mirror. */
static void check_timed_list(struct ctx *c, const struct mirror *m, const int64_t *at, int n, const char *src,
                             const char *et, int64_t after, int64_t before_us, int64_t before, uint32_t limit)
{
    struct got g = {0};
    struct hk_store_op op;
    memset(&op, 0, sizeof op);
    op.kind = HK_OP_LIST;
    op.list.source = src;
    op.list.source_len = src ? strlen(src) : 0;
    op.list.event_type = et;
    op.list.event_type_len = et ? strlen(et) : 0;
    op.list.received_after_us = after;
    op.list.received_before_us = before_us;
    op.list.before = before;
    op.list.limit = limit;
    op.on_row = on_row;
    op.on_done = on_done;
    op.data = &g;
    cr_assert_eq(hk_store_submit(c->sl, &op), 0);
    cr_assert_eq(g.dones, 1);
    cr_assert_eq(g.status, 0);
    size_t want = 0;
    for (int i = n - 1; i >= 0 && (limit == 0 || want < limit); i--) {
        if ((src && strcmp(m[i].src, src) != 0) || (et && strcmp(m[i].et, et) != 0) ||
            (before && m[i].id >= before) || (after && at[i] <= after) || (before_us && at[i] >= before_us))
            continue;
        cr_assert_lt(want, g.nids, "after=%" PRId64 " before_us=%" PRId64 ": too few rows", after, before_us);
        cr_assert_eq(g.ids[want], m[i].id, "row %zu", want);
        want++;
    }
    cr_assert_eq(g.nids, want, "src=%s et=%s after=%" PRId64 " before_us=%" PRId64 " before=%" PRId64
                 " limit=%u", src, et, after, before_us, before, limit);
    got_free(&g);
}

/* A stream of `limit` rows a batch within the two bounds. */
static void list_by_time(struct ctx *c, struct got *g, int64_t after, int64_t before_us, uint32_t limit)
{
    struct hk_store_op op;
    memset(&op, 0, sizeof op);
    op.kind = HK_OP_LIST;
    op.list.received_after_us = after;
    op.list.received_before_us = before_us;
    op.list.limit = limit;
    op.list.stream = true;
    op.on_row = on_row;
    op.on_done = on_done;
    op.data = g;
    cr_assert_eq(hk_store_submit(c->sl, &op), 0);
    while (g->more)
        hk_store_list_next(c->sl, &op);
    cr_assert_eq(g->status, 0);
}

Test(store_sqlite, list_time_bounds_are_exclusive_and_combine)
{
    struct ctx c;
    struct mirror m[30];
    int64_t at[30];
    ctx_init(&c);
    ctx_open(&c, false);
    for (int i = 0; i < 30; i++) {
        m[i].src = i % 2 ? "b" : "a";
        m[i].et = i % 3 == 0 ? "x" : "y";
        m[i].id = insert(&c, m[i].src, m[i].et, "{}");
    }
    /* Receipt times the test controls: 1000 us apart, in id order. */
    sql_exec(c.path, "UPDATE webhooks SET received_us = 1700000000000000 + id * 1000");
    for (int i = 0; i < 30; i++)
        at[i] = 1700000000000000 + m[i].id * 1000;

    const char *srcs[] = {NULL, "a", "b"};
    const char *ets[] = {NULL, "x"};
    int64_t afters[] = {0, at[4], at[20], at[29], INT64_MIN};
    int64_t befores_us[] = {0, at[25], at[5], at[0], INT64_MAX};
    int64_t befores[] = {0, m[22].id};
    uint32_t limits[] = {0, 3};
    for (size_t s = 0; s < 3; s++)
        for (size_t e = 0; e < 2; e++)
            for (size_t a = 0; a < 5; a++)
                for (size_t b = 0; b < 5; b++)
                    for (size_t k = 0; k < 2; k++)
                        for (size_t l = 0; l < 2; l++)
                            check_timed_list(&c, m, at, 30, srcs[s], ets[e], afters[a], befores_us[b], befores[k],
                                             limits[l]);

    /* By hand: strictly after at[4] and strictly before at[8] is 5, 6, 7. */
    struct got g = {0};
    struct hk_store_op op;
    memset(&op, 0, sizeof op);
    op.kind = HK_OP_LIST;
    op.list = (struct hk_list_query){.received_after_us = at[4], .received_before_us = at[8]};
    op.on_row = on_row;
    op.on_done = on_done;
    op.data = &g;
    cr_assert_eq(hk_store_submit(c.sl, &op), 0);
    cr_assert_eq(g.nids, 3);
    cr_assert_eq(g.ids[0], m[7].id);
    cr_assert_eq(g.ids[2], m[5].id);
    got_free(&g);

    /* Streamed one row a batch, keyset by id: each row of the window once. */
    list_by_time(&c, &g, at[9], at[15], 1);
    cr_assert_eq(g.nids, 5);
    for (int i = 0; i < 5; i++)
        cr_assert_eq(g.ids[i], m[14 - i].id);
    cr_assert_eq(g.max_batch, 1);
    got_free(&g);
    ctx_close(&c);
    rm_dir(&c);
}

/* The bounds change no plan: every list variant walks the index it walked
 * without them (no index has received_us), never the whole table. */
Test(store_sqlite, list_time_bounds_keep_every_plan)
{
    struct ctx c;
    ctx_init(&c);
    ctx_open(&c, false);
    ctx_close(&c);
    sqlite3 *db;
    cr_assert_eq(sqlite3_open_v2(c.path, &db, SQLITE_OPEN_READONLY, NULL), SQLITE_OK);
    /* sqlite.c's list_sql, by variant. */
    static const char *const where[8] = {
        "", "source = ?1 AND ", "event_type = ?2 AND ", "source = ?1 AND event_type = ?2 AND ",
        "delivery_id = ?5 AND ", "source = ?1 AND delivery_id = ?5 AND ",
        "+event_type = ?2 AND delivery_id = ?5 AND ", "source = ?1 AND +event_type = ?2 AND delivery_id = ?5 AND ",
    };
    static const char *const index[8] = {
        "INTEGER PRIMARY KEY", "INDEX webhooks_source_id ", "INDEX webhooks_event_type_id ", "INDEX webhooks_",
        "INDEX webhooks_delivery ", "INDEX webhooks_delivery ", "INDEX webhooks_delivery ",
        "INDEX webhooks_delivery ",
    };
    for (int v = 0; v < 8; v++) {
        char plan[2][512];
        for (int t = 0; t < 2; t++) {
            char sql[512];
            snprintf(sql, sizeof sql, "EXPLAIN QUERY PLAN SELECT * FROM webhooks WHERE %s%s id < ?3"
                     " ORDER BY id DESC LIMIT ?4", where[v], t ? "received_us > ?6 AND received_us < ?7 AND" : "");
            sqlite3_stmt *st;
            cr_assert_eq(sqlite3_prepare_v2(db, sql, -1, &st, NULL), SQLITE_OK, "%s", sqlite3_errmsg(db));
            plan[t][0] = '\0';
            while (sqlite3_step(st) == SQLITE_ROW) {
                size_t len = strlen(plan[t]);
                snprintf(plan[t] + len, sizeof plan[t] - len, "%s;", (const char *)sqlite3_column_text(st, 3));
            }
            sqlite3_finalize(st);
        }
        cr_assert_str_eq(plan[1], plan[0], "variant %d: the bounds changed the plan", v);
        cr_assert(strstr(plan[1], index[v]) != NULL, "variant %d: %s", v, plan[1]);
        cr_assert_null(strstr(plan[1], "SCAN webhooks"), "variant %d scans the table: %s", v, plan[1]);
    }
    sqlite3_close(db);
    rm_dir(&c);
}

/* What on_stats saw, in order. */
struct stats_got {
    struct got g;            /* first: on_done takes op->data as a got */
    char (*source)[24];
    int64_t *count, *last;
    int n, cap;
};

static void on_stats(struct hk_store_op *op, const struct hk_source_stats *st)
{
    struct stats_got *sg = op->data;
    cr_assert_lt(sg->n, sg->cap);
    cr_assert_lt(st->source_len, sizeof sg->source[0]);
    memcpy(sg->source[sg->n], st->source, st->source_len);
    sg->source[sg->n][st->source_len] = '\0';
    sg->count[sg->n] = st->count;
    sg->last[sg->n] = st->last_received_us;
    sg->n++;
}

/* SOURCE_STATS into `sg`, room for `cap` sources; a read: done inside submit. */
static void source_stats(struct ctx *c, struct stats_got *sg, int cap)
{
    memset(sg, 0, sizeof *sg);
    sg->cap = cap;
    sg->source = calloc((size_t)cap, sizeof *sg->source);
    sg->count = calloc((size_t)cap, sizeof *sg->count);
    sg->last = calloc((size_t)cap, sizeof *sg->last);
    cr_assert(sg->source && sg->count && sg->last);
    struct hk_store_op op;
    memset(&op, 0, sizeof op);
    op.kind = HK_OP_SOURCE_STATS;
    op.on_stats = on_stats;
    op.on_done = on_done;
    op.data = sg;
    cr_assert_eq(hk_store_submit(c->sl, &op), 0);
    cr_assert_eq(sg->g.dones, 1);
    cr_assert_eq(sg->g.more, false);
}

static void stats_free(struct stats_got *sg)
{
    free(sg->source);
    free(sg->count);
    free(sg->last);
}

Test(store_sqlite, source_stats_counts_each_source_in_byte_order)
{
    struct ctx c;
    struct stats_got sg;
    ctx_init(&c);
    ctx_open(&c, false);
    source_stats(&c, &sg, 4);
    cr_assert_eq(sg.g.status, 0);
    cr_assert_eq(sg.n, 0, "an empty table has no sources");
    stats_free(&sg);

    const char *const src[7] = {"zeta", "alpha", "zeta", "Beta", "alpha", "zeta", "\xc3\xa9t\xc3\xa9"};
    int64_t id[7];
    for (int i = 0; i < 7; i++)
        id[i] = insert(&c, src[i], "e", "{}");
    sql_exec(c.path, "UPDATE webhooks SET received_us = 5000000 - id");   /* the newest row is not the latest time */
    int64_t del_id = insert(&c, "gone", "e", "{}");
    cr_assert_eq(del(&c, del_id), 0);

    source_stats(&c, &sg, 8);
    cr_assert_eq(sg.g.status, 0);
    cr_assert_eq(sg.n, 4, "a deleted source's last row takes it away");
    cr_assert_str_eq(sg.source[0], "Beta", "byte order: upper case before lower");
    cr_assert_str_eq(sg.source[1], "alpha");
    cr_assert_str_eq(sg.source[2], "zeta");
    cr_assert_str_eq(sg.source[3], "\xc3\xa9t\xc3\xa9", "UTF-8 after ASCII");
    cr_assert_eq(sg.count[0], 1);
    cr_assert_eq(sg.count[1], 2);
    cr_assert_eq(sg.count[2], 3);
    cr_assert_eq(sg.count[3], 1);
    /* The receipt time of the newest row (highest id), by definition. */
    cr_assert_eq(sg.last[0], 5000000 - id[3]);
    cr_assert_eq(sg.last[1], 5000000 - id[4]);
    cr_assert_eq(sg.last[2], 5000000 - id[5]);
    cr_assert_eq(sg.last[3], 5000000 - id[6]);
    stats_free(&sg);

    /* on_stats may be NULL. */
    struct got g = {0};
    struct hk_store_op op;
    memset(&op, 0, sizeof op);
    op.kind = HK_OP_SOURCE_STATS;
    op.on_done = on_done;
    op.data = &g;
    cr_assert_eq(hk_store_submit(c.sl, &op), 0);
    cr_assert_eq(g.dones, 1);
    cr_assert_eq(g.status, 0);
    cr_assert_eq(g.rows, 0);
    ctx_close(&c);
    rm_dir(&c);
}

/* At most HK_STORE_STATS_MAX sources, the first by name. */
Test(store_sqlite, source_stats_stops_at_its_bound)
{
    struct ctx c;
    struct stats_got sg;
    ctx_init(&c);
    ctx_open(&c, false);
    char sql[512];
    snprintf(sql, sizeof sql,
             "WITH RECURSIVE n(i) AS (SELECT 0 UNION ALL SELECT i + 1 FROM n WHERE i < %d)"
             " INSERT INTO webhooks(source, event_type, payload, received_us)"
             " SELECT printf('s%%06d', i), 'e', '{}', 1000 + i FROM n",
             HK_STORE_STATS_MAX + 4);
    sql_exec(c.path, sql);
    source_stats(&c, &sg, HK_STORE_STATS_MAX + 5);
    cr_assert_eq(sg.g.status, 0);
    cr_assert_eq(sg.n, HK_STORE_STATS_MAX);
    cr_assert_str_eq(sg.source[0], "s000000");
    char last[24];
    snprintf(last, sizeof last, "s%06d", HK_STORE_STATS_MAX - 1);
    cr_assert_str_eq(sg.source[HK_STORE_STATS_MAX - 1], last);
    cr_assert_eq(sg.count[HK_STORE_STATS_MAX - 1], 1);
    cr_assert_eq(sg.last[HK_STORE_STATS_MAX - 1], 1000 + HK_STORE_STATS_MAX - 1);
    stats_free(&sg);

    /* Its plan: the covering (source, id) index in order, no sort, and one
     * seek per group. */
    ctx_close(&c);
    sqlite3 *db;
    cr_assert_eq(sqlite3_open_v2(c.path, &db, SQLITE_OPEN_READONLY, NULL), SQLITE_OK);
    sqlite3_stmt *st;
    cr_assert_eq(sqlite3_prepare_v2(db, "EXPLAIN QUERY PLAN SELECT source, count(*), (SELECT received_us"
                                        " FROM webhooks AS n WHERE n.source = w.source ORDER BY n.id DESC LIMIT 1)"
                                        " FROM webhooks AS w GROUP BY source ORDER BY source LIMIT ?1",
                                    -1, &st, NULL), SQLITE_OK);
    char plan[512] = "";
    while (sqlite3_step(st) == SQLITE_ROW) {
        size_t len = strlen(plan);
        snprintf(plan + len, sizeof plan - len, "%s;", (const char *)sqlite3_column_text(st, 3));
    }
    sqlite3_finalize(st);
    sqlite3_close(db);
    cr_assert(strstr(plan, "SCAN w USING COVERING INDEX webhooks_source_id") != NULL, "%s", plan);
    cr_assert(strstr(plan, "SEARCH n USING INDEX webhooks_source_id (source=?)") != NULL, "%s", plan);
    cr_assert_null(strstr(plan, "TEMP B-TREE"), "%s", plan);
    rm_dir(&c);
}

/* ---- forwarding and retention (docs/forwarding.md) --------------------- */

/* An envelope insert to forward: pending, leased to `owner` until `lease_us`
 * when owner != 0. */
static int64_t insert_fwd(struct ctx *c, const char *src, const char *payload, int64_t owner, int64_t lease_us,
                          struct got *out)
{
    struct hk_store_op op;
    struct got g = {0};
    op_insert(&op, &g, src, "push", payload, NULL);
    op.row.delivery.state = HK_DLV_PENDING;
    op.fwd.owner = owner;
    op.fwd.lease_us = lease_us;
    run_op(c, &op);
    cr_assert_eq(g.status, 0);
    cr_assert_eq(g.rows, 1);
    int64_t id = g.id;
    if (out)
        *out = g;
    else
        got_free(&g);
    return id;
}

static int claim(struct ctx *c, int64_t owner, int64_t lease_us, uint32_t limit, const char *const *fifo,
                 size_t nfifo, struct got *g)
{
    struct hk_store_op op;
    memset(&op, 0, sizeof op);
    op.kind = HK_OP_CLAIM;
    op.fwd.owner = owner;
    op.fwd.lease_us = lease_us;
    op.fwd.fifo = fifo;
    op.fwd.nfifo = nfifo;
    op.list.limit = limit;
    op.on_row = on_row;
    op.on_done = on_done;
    op.data = g;
    run_op(c, &op);
    return g->status;
}

static int settle(struct ctx *c, int64_t id, int64_t owner, int state, int attempts, int64_t next_us, int status,
                  const char *error)
{
    struct hk_store_op op;
    struct got g = {0};
    op_by_id(&op, &g, HK_OP_SETTLE, id);
    op.fwd.owner = owner;
    op.row.delivery = (struct hk_delivery){.state = (uint8_t)state, .attempts = attempts, .next_us = next_us,
                                           .last_status = status, .last_error = error,
                                           .last_error_len = error ? strlen(error) : 0};
    run_op(c, &op);
    cr_assert_eq(g.rows, 0);
    return g.status;
}

static int64_t now_us(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (int64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

Test(store_sqlite, a_forwarded_insert_is_pending_from_its_receipt)
{
    struct ctx c;
    ctx_init(&c);
    ctx_open(&c, false);
    struct got g;
    int64_t id = insert_fwd(&c, "s", "{}", 0, 0, &g);
    cr_assert_eq(g.dstate, HK_DLV_PENDING);
    cr_assert_eq(g.dattempts, 0);
    cr_assert_eq(g.dnext_us, g.received_us, "on_row reads as GET will");
    got_free(&g);
    cr_assert_eq(get(&c, id, &g), 0);
    cr_assert_eq(g.dstate, HK_DLV_PENDING);
    cr_assert_eq(g.dnext_us, g.received_us);
    cr_assert_str_eq(g.derror, "(null)");
    got_free(&g);
    /* Not forwarded: NONE, whatever else the caller left in delivery. */
    struct hk_store_op op;
    op_insert(&op, &g, "s", "push", "{}", NULL);
    op.row.delivery = (struct hk_delivery){.state = HK_DLV_FAILED, .attempts = 9};
    run_op(&c, &op);
    cr_assert_eq(g.dstate, HK_DLV_NONE);
    cr_assert_eq(g.dattempts, 0);
    int64_t plain = g.id;
    got_free(&g);
    cr_assert_eq(claim(&c, 7, now_us() + 60000000, 10, NULL, 0, &g), 0);
    cr_assert_eq(g.nids, 1, "only the forwarded row is claimed");
    cr_assert_eq(g.ids[0], id);
    cr_assert_neq(g.ids[0], plain);
    got_free(&g);
    ctx_close(&c);
    rm_dir(&c);
}

Test(store_sqlite, claims_lease_due_rows_once_until_the_lease_ends)
{
    struct ctx c;
    ctx_init(&c);
    ctx_open(&c, false);
    int64_t t = now_us();
    int64_t a = insert_fwd(&c, "s", "{\"n\":1}", 0, 0, NULL);
    int64_t b = insert_fwd(&c, "s", "{\"n\":2}", 0, 0, NULL);
    int64_t leased = insert_fwd(&c, "s", "{\"n\":3}", 5, t + 60000000, NULL);   /* the inserter sends it */
    struct got g = {0};
    cr_assert_eq(claim(&c, 7, t + 60000000, 1, NULL, 0, &g), 0);
    cr_assert_eq(g.nids, 1, "the limit holds");
    cr_assert_eq(g.ids[0], a, "oldest due first");
    cr_assert_str_eq(g.payload, "{\"n\":1}", "the row comes whole");
    got_free(&g);
    cr_assert_eq(claim(&c, 8, t + 60000000, 10, NULL, 0, &g), 0);
    cr_assert_eq(g.nids, 1, "a and the inserter's row are leased");
    cr_assert_eq(g.ids[0], b);
    got_free(&g);
    cr_assert_eq(claim(&c, 9, t + 60000000, 10, NULL, 0, &g), 0);
    cr_assert_eq(g.nids, 0);
    got_free(&g);
    /* A lease that ended (its holder died): claimable again. */
    cr_assert_eq(sql_int(c.path, "SELECT count(*) FROM webhooks WHERE dlease_owner IS NOT NULL"), 3);
    ctx_close(&c);
    sqlite3 *db;
    cr_assert_eq(sqlite3_open(c.path, &db), SQLITE_OK);
    char sql[160];
    snprintf(sql, sizeof sql, "UPDATE webhooks SET dlease_us = %" PRId64 " WHERE id = %" PRId64, t - 1, leased);
    cr_assert_eq(sqlite3_exec(db, sql, NULL, NULL, NULL), SQLITE_OK);
    sqlite3_close(db);
    ctx_open(&c, false);
    cr_assert_eq(claim(&c, 9, now_us() + 60000000, 10, NULL, 0, &g), 0);
    cr_assert_eq(g.nids, 1);
    cr_assert_eq(g.ids[0], leased);
    got_free(&g);
    /* Bad claims. */
    cr_assert_eq(claim(&c, 0, t, 10, NULL, 0, &g), HK_EINVAL, "an owner is required");
    got_free(&g);
    cr_assert_eq(claim(&c, 9, t, 0, NULL, 0, &g), HK_EINVAL, "a limit is required");
    got_free(&g);
    cr_assert_eq(claim(&c, 9, t, 1001, NULL, 0, &g), HK_EINVAL);
    got_free(&g);
    ctx_close(&c);
    rm_dir(&c);
}

Test(store_sqlite, settle_needs_the_lease_and_a_row)
{
    struct ctx c;
    ctx_init(&c);
    ctx_open(&c, false);
    int64_t t = now_us();
    int64_t id = insert_fwd(&c, "s", "{}", 7, t + 60000000, NULL);
    cr_assert_eq(settle(&c, id, 8, HK_DLV_DELIVERED, 1, 0, 200, NULL), HK_ECONFLICT, "a stranger's lease");
    struct got g = {0};
    cr_assert_eq(get(&c, id, &g), 0);
    cr_assert_eq(g.dstate, HK_DLV_PENDING, "nothing changed");
    got_free(&g);
    /* The owner: a retry in the future, then not due. */
    cr_assert_eq(settle(&c, id, 7, HK_DLV_PENDING, 1, t + 3600000000LL, 503, "HTTP 503"), 0);
    cr_assert_eq(get(&c, id, &g), 0);
    cr_assert_eq(g.dstate, HK_DLV_PENDING);
    cr_assert_eq(g.dattempts, 1);
    cr_assert_eq(g.dstatus, 503);
    cr_assert_str_eq(g.derror, "HTTP 503");
    cr_assert_eq(g.dnext_us, t + 3600000000LL);
    cr_assert_gt(g.dupdated_us, 0);
    got_free(&g);
    cr_assert_eq(claim(&c, 9, now_us() + 60000000, 10, NULL, 0, &g), 0);
    cr_assert_eq(g.nids, 0, "not due yet");
    got_free(&g);
    /* No lease now: anyone may settle (the lease ended with the settle). */
    cr_assert_eq(settle(&c, id, 9, HK_DLV_FAILED, 2, 0, 410, "HTTP 410"), 0);
    cr_assert_eq(get(&c, id, &g), 0);
    cr_assert_eq(g.dstate, HK_DLV_FAILED);
    cr_assert_eq(g.dstatus, 410);
    got_free(&g);
    cr_assert_eq(del(&c, id), 0);
    cr_assert_eq(settle(&c, id, 7, HK_DLV_DELIVERED, 1, 0, 200, NULL), HK_ENOTFOUND);
    ctx_close(&c);
    rm_dir(&c);
}

/* A SETTLE batch: `n` items, owner; the op's status, and *settled. */
static int settle_batch(struct ctx *c, const struct hk_settle_item *items, size_t n, int64_t owner,
                        uint32_t *settled)
{
    struct hk_store_op op;
    struct got g = {0};
    op_by_id(&op, &g, HK_OP_SETTLE, 0);
    op.fwd.owner = owner;
    op.fwd.delivered = items;
    op.fwd.ndelivered = n;
    op.fwd.settled = 12345;
    run_op(c, &op);
    cr_assert_eq(g.rows, 0);
    if (settled)
        *settled = op.fwd.settled;
    return g.status;
}

Test(store_sqlite, a_settle_batch_delivers_the_rows_it_may)
{
    struct ctx c;
    ctx_init(&c);
    ctx_open(&c, false);
    int64_t t = now_us();
    int64_t mine = insert_fwd(&c, "s", "{\"n\":1}", 7, t + 60000000, NULL);
    int64_t free_row = insert_fwd(&c, "s", "{\"n\":2}", 0, 0, NULL);
    int64_t theirs = insert_fwd(&c, "s", "{\"n\":3}", 8, t + 60000000, NULL);
    int64_t ended = insert_fwd(&c, "s", "{\"n\":4}", 9, t - 1, NULL);
    int64_t gone = insert_fwd(&c, "s", "{\"n\":5}", 7, t + 60000000, NULL);
    cr_assert_eq(del(&c, gone), 0);
    struct hk_settle_item items[] = {
        {.id = mine, .attempts = 1, .status = 202},   {.id = free_row, .attempts = 3, .status = 200},
        {.id = theirs, .attempts = 1, .status = 204}, {.id = ended, .attempts = 2, .status = 201},
        {.id = gone, .attempts = 1, .status = 200},
    };
    uint32_t settled = 0;
    cr_assert_eq(settle_batch(&c, items, 5, 7, &settled), 0, "rows gone or another's do not fail the batch");
    cr_assert_eq(settled, 3, "mine, the unleased one and the one whose lease ended");
    struct got g = {0};
    cr_assert_eq(get(&c, mine, &g), 0);
    cr_assert_eq(g.dstate, HK_DLV_DELIVERED);
    cr_assert_eq(g.dattempts, 1);
    cr_assert_eq(g.dstatus, 202);
    cr_assert_str_eq(g.derror, "(null)");
    cr_assert_geq(g.dupdated_us, t);
    got_free(&g);
    cr_assert_eq(get(&c, free_row, &g), 0);
    cr_assert_eq(g.dstate, HK_DLV_DELIVERED);
    cr_assert_eq(g.dattempts, 3);
    cr_assert_eq(g.dstatus, 200);
    got_free(&g);
    cr_assert_eq(get(&c, ended, &g), 0);
    cr_assert_eq(g.dstatus, 201);
    got_free(&g);
    cr_assert_eq(get(&c, theirs, &g), 0);
    cr_assert_eq(g.dstate, HK_DLV_PENDING, "another owner's lease: untouched");
    cr_assert_eq(g.dattempts, 0);
    got_free(&g);
    cr_assert_eq(sql_int(c.path, "SELECT count(*) FROM webhooks WHERE dlease_owner = 7 OR dlease_owner = 9"), 0,
                 "the leases written end");
    /* Nothing claimable is left but the stranger's, whose lease runs. */
    cr_assert_eq(claim(&c, 10, now_us() + 60000000, 10, NULL, 0, &g), 0);
    cr_assert_eq(g.nids, 0);
    got_free(&g);
    /* Bad batches are refused whole. */
    struct hk_settle_item big[HK_SETTLE_BATCH_MAX + 1];
    for (size_t i = 0; i < HK_SETTLE_BATCH_MAX + 1; i++)
        big[i] = (struct hk_settle_item){.id = theirs, .attempts = 1, .status = 200};
    cr_assert_eq(settle_batch(&c, big, HK_SETTLE_BATCH_MAX + 1, 8, NULL), HK_EINVAL, "too many rows");
    struct hk_settle_item bad[][1] = {{{.id = 0, .attempts = 1, .status = 200}},
                                      {{.id = theirs, .attempts = 0, .status = 200}},
                                      {{.id = theirs, .attempts = 1, .status = 99}},
                                      {{.id = theirs, .attempts = 1, .status = 1000}}};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
        cr_assert_eq(settle_batch(&c, bad[i], 1, 8, NULL), HK_EINVAL, "bad item %zu", i);
    cr_assert_eq(settle_batch(&c, NULL, 1, 8, NULL), HK_EINVAL, "no items");
    cr_assert_eq(settle_batch(&c, items, 1, 0, NULL), HK_EINVAL, "no owner");
    cr_assert_eq(get(&c, theirs, &g), 0);
    cr_assert_eq(g.dstate, HK_DLV_PENDING, "nothing written by a refused batch");
    got_free(&g);
    /* A full batch of the owner's rows. */
    struct hk_settle_item full[HK_SETTLE_BATCH_MAX];
    for (size_t i = 0; i < HK_SETTLE_BATCH_MAX; i++)
        full[i] = (struct hk_settle_item){.id = insert_fwd(&c, "s", "{}", 7, now_us() + 60000000, NULL),
                                          .attempts = 1, .status = 200};
    cr_assert_eq(settle_batch(&c, full, HK_SETTLE_BATCH_MAX, 7, &settled), 0);
    cr_assert_eq(settled, HK_SETTLE_BATCH_MAX);
    cr_assert_eq(sql_int(c.path, "SELECT count(*) FROM webhooks WHERE dstate = 2"), 3 + HK_SETTLE_BATCH_MAX);
    ctx_close(&c);
    rm_dir(&c);
}

Test(store_sqlite, redeliver_queues_a_row_again)
{
    struct ctx c;
    ctx_init(&c);
    ctx_open(&c, false);
    int64_t id = insert_fwd(&c, "s", "{}", 7, now_us() + 60000000, NULL);
    cr_assert_eq(settle(&c, id, 7, HK_DLV_FAILED, 12, 0, 500, "HTTP 500"), 0);
    int64_t plain = insert(&c, "s", "push", "{}");
    struct hk_store_op op;
    struct got g = {0};
    op_by_id(&op, &g, HK_OP_REDELIVER, id);
    run_op(&c, &op);
    cr_assert_eq(g.status, 0);
    cr_assert_eq(g.rows, 1);
    cr_assert_eq(g.dstate, HK_DLV_PENDING);
    cr_assert_eq(g.dattempts, 0);
    cr_assert_eq(g.dstatus, 500, "the last outcome stays for the record");
    got_free(&g);
    op_by_id(&op, &g, HK_OP_REDELIVER, plain);
    run_op(&c, &op);
    cr_assert_eq(g.status, 0, "a row stored without forwarding may be sent too");
    got_free(&g);
    op_by_id(&op, &g, HK_OP_REDELIVER, 999999);
    run_op(&c, &op);
    cr_assert_eq(g.status, HK_ENOTFOUND);
    cr_assert_eq(g.rows, 0);
    got_free(&g);
    cr_assert_eq(claim(&c, 9, now_us() + 60000000, 10, NULL, 0, &g), 0);
    cr_assert_eq(g.nids, 2);
    got_free(&g);
    ctx_close(&c);
    rm_dir(&c);
}

Test(store_sqlite, fifo_sources_give_one_row_at_a_time)
{
    struct ctx c;
    ctx_init(&c);
    ctx_open(&c, false);
    int64_t a1 = insert_fwd(&c, "a", "{}", 0, 0, NULL);
    int64_t a2 = insert_fwd(&c, "a", "{}", 0, 0, NULL);
    int64_t b1 = insert_fwd(&c, "b", "{}", 0, 0, NULL);
    int64_t b2 = insert_fwd(&c, "b", "{}", 0, 0, NULL);
    static const char *const fifo[] = {"a", "x\"y"};
    int64_t lease = now_us() + 60000000;
    struct got g = {0};
    cr_assert_eq(claim(&c, 7, lease, 10, fifo, 2, &g), 0);
    cr_assert_eq(g.nids, 3, "a's first, and b's both (b is parallel)");
    cr_assert_eq(g.ids[0], a1);
    cr_assert_eq(g.ids[1], b1);
    cr_assert_eq(g.ids[2], b2);
    got_free(&g);
    cr_assert_eq(claim(&c, 7, lease, 10, fifo, 2, &g), 0);
    cr_assert_eq(g.nids, 0, "a2 waits for a1");
    got_free(&g);
    cr_assert_eq(settle(&c, a1, 7, HK_DLV_PENDING, 1, now_us() - 1, 503, "HTTP 503"), 0);
    cr_assert_eq(claim(&c, 7, lease, 10, fifo, 2, &g), 0);
    cr_assert_eq(g.nids, 1, "a1 again, not a2: a retry keeps its place");
    cr_assert_eq(g.ids[0], a1);
    got_free(&g);
    cr_assert_eq(settle(&c, a1, 7, HK_DLV_DELIVERED, 2, 0, 200, NULL), 0);
    cr_assert_eq(claim(&c, 7, lease, 10, fifo, 2, &g), 0);
    cr_assert_eq(g.nids, 1);
    cr_assert_eq(g.ids[0], a2);
    got_free(&g);
    ctx_close(&c);
    rm_dir(&c);
}

static struct hk_purge_op purge(struct ctx *c, struct hk_purge_op p)
{
    struct hk_store_op op;
    struct got g = {0};
    memset(&op, 0, sizeof op);
    op.kind = HK_OP_PURGE;
    op.purge = &p;
    op.on_done = on_done;
    op.data = &g;
    run_op(c, &op);
    cr_assert_eq(g.status, 0);
    cr_assert_eq(g.rows, 0);
    return p;
}

static int64_t count_rows(struct ctx *c, const char *where)
{
    ctx_close(c);
    char sql[256];
    snprintf(sql, sizeof sql, "SELECT count(*) FROM webhooks%s%s", where ? " WHERE " : "", where ? where : "");
    int64_t n = sql_int(c->path, sql);
    ctx_open(c, false);
    return n;
}

Test(store_sqlite, purge_deletes_by_age_cap_and_size_oldest_first)
{
    struct ctx c;
    ctx_init(&c);
    ctx_open(&c, false);
    int64_t ids[40];
    insert_many(&c, 20, "a", "push", ids);
    insert_many(&c, 20, "b", "push", ids + 20);
    int64_t pending = insert_fwd(&c, "a", "{}", 0, 0, NULL);
    int64_t cut = now_us();
    int64_t late = insert(&c, "a", "push", "{}");

    /* Age, in batches of 15, keeping the pending row. */
    struct hk_purge_op p = purge(&c, (struct hk_purge_op){.before_us = cut, .keep_pending = true, .limit = 15});
    cr_assert_eq(p.deleted, 15);
    cr_assert_gt(p.store_bytes, 0);
    p = purge(&c, (struct hk_purge_op){.before_us = cut, .keep_pending = true, .limit = 15});
    cr_assert_eq(p.deleted, 15);
    p = purge(&c, (struct hk_purge_op){.before_us = cut, .keep_pending = true, .limit = 15});
    cr_assert_eq(p.deleted, 10, "a short batch: done");
    struct got g = {0};
    cr_assert_eq(get(&c, pending, &g), 0, "the pending row stays");
    got_free(&g);
    cr_assert_eq(get(&c, late, &g), 0, "a new row stays");
    got_free(&g);
    cr_assert_eq(get(&c, ids[39], &g), HK_ENOTFOUND);
    got_free(&g);

    /* A row cap per source and the others left alone. */
    insert_many(&c, 10, "a", "push", ids);
    insert_many(&c, 10, "b", "push", ids + 10);
    p = purge(&c, (struct hk_purge_op){.keep_rows = 3, .source = "a", .limit = 100});
    cr_assert_eq(p.deleted, 12 - 3 + 0, "a had the pending, the late and 10 more: 12, keeps 3");
    cr_assert_eq(count_rows(&c, "source = 'a'"), 3);
    cr_assert_eq(count_rows(&c, "source = 'b'"), 10);
    cr_assert_eq(get(&c, ids[9], &g), 0, "the newest of a stays");
    got_free(&g);
    /* The global cap, except a. */
    static const char *const except[] = {"a"};
    p = purge(&c, (struct hk_purge_op){.keep_rows = 4, .except = except, .nexcept = 1, .limit = 100});
    cr_assert_eq(p.deleted, 6);
    cr_assert_eq(count_rows(&c, "source = 'b'"), 4, "the cap counts the rows it governs");
    cr_assert_eq(count_rows(&c, "source = 'a'"), 3, "a untouched");
    /* A size cap's step: the oldest n, whatever their age. */
    insert_many(&c, 10, "c", "push", ids);
    p = purge(&c, (struct hk_purge_op){.oldest = 4, .limit = 100});
    cr_assert_eq(p.deleted, 4);
    cr_assert_eq(count_rows(&c, NULL), 3 + 4 + 10 - 4);
    cr_assert_eq(count_rows(&c, "source = 'a'"), 0, "a's were the oldest");
    cr_assert_eq(count_rows(&c, "source = 'b'"), 3);
    /* Nothing selected: nothing deleted. */
    p = purge(&c, (struct hk_purge_op){.limit = 100});
    cr_assert_eq(p.deleted, 0);

    /* The cap's bound (keep_from): found by the first batch and given back
     * by the next ones, which then delete below it without a walk. */
    insert_many(&c, 10, "d", "push", ids);
    p = purge(&c, (struct hk_purge_op){.keep_rows = 4, .source = "d", .limit = 2});
    cr_assert_eq(p.deleted, 2);
    cr_assert_eq(p.keep_from, ids[6], "the bound is the 4th newest row's id");
    int64_t bound = p.keep_from;
    insert_many(&c, 3, "d", "push", ids + 10);   /* newer rows: the bound still holds */
    p = purge(&c, (struct hk_purge_op){.keep_rows = 4, .source = "d", .limit = 100, .keep_from = bound});
    cr_assert_eq(p.deleted, 4, "ids[2..5], below the bound given, not a new walk's");
    cr_assert_eq(p.keep_from, bound);
    cr_assert_eq(count_rows(&c, "source = 'd'"), 7);
    /* -1: the scope is within its cap, the cap deletes nothing. */
    p = purge(&c, (struct hk_purge_op){.keep_rows = 1, .source = "d", .limit = 100, .keep_from = -1});
    cr_assert_eq(p.deleted, 0);
    /* A walk that finds fewer rows than the cap says -1. */
    p = purge(&c, (struct hk_purge_op){.keep_rows = 100, .source = "d", .limit = 100});
    cr_assert_eq(p.deleted, 0);
    cr_assert_eq(p.keep_from, -1);
    ctx_close(&c);
    rm_dir(&c);
}

Test(store_sqlite, purge_gives_the_pages_back)
{
    struct ctx c;
    ctx_init(&c);
    ctx_open(&c, false);
    char big[1000];
    memset(big, 'x', sizeof big - 1);
    big[sizeof big - 1] = '\0';
    for (int i = 0; i < 3000; i++) {
        big[i % 900] = (char)('a' + i % 26);   /* no two alike: nothing to share */
        insert(&c, "s", "push", big);
    }
    struct hk_purge_op p = purge(&c, (struct hk_purge_op){.oldest = 1, .limit = 1});
    uint64_t full = p.store_bytes;
    cr_assert_gt(full, 2u * 1024 * 1024);
    p = purge(&c, (struct hk_purge_op){.oldest = 2990, .limit = 5000});
    cr_assert_eq(p.deleted, 2990);
    cr_assert_lt(p.store_bytes, full / 10, "%" PRIu64 " of %" PRIu64, p.store_bytes, full);
    ctx_close(&c);
    struct stat sb;
    cr_assert_eq(stat(c.path, &sb), 0);
    cr_assert_lt((uint64_t)sb.st_size, full / 4, "the file shrank: %lld bytes", (long long)sb.st_size);
    cr_assert_eq(sql_int(c.path, "PRAGMA auto_vacuum"), 2);
    rm_dir(&c);
}

Test(store_sqlite, a_file_without_auto_vacuum_is_converted_once)
{
    struct ctx c;
    ctx_init(&c);
    sqlite3 *db;
    cr_assert_eq(sqlite3_open(c.path, &db), SQLITE_OK);
    cr_assert_eq(sqlite3_exec(db, "CREATE TABLE t(x); DROP TABLE t;", NULL, NULL, NULL), SQLITE_OK);
    sqlite3_close(db);
    cr_assert_eq(sql_int(c.path, "PRAGMA auto_vacuum"), 0);
    ctx_open(&c, false);
    insert(&c, "s", "push", "{}");
    ctx_close(&c);
    cr_assert_eq(sql_int(c.path, "PRAGMA auto_vacuum"), 2);
    cr_assert_eq(sql_int(c.path, "SELECT count(*) FROM webhooks"), 1);
    rm_dir(&c);
}

static void list_asc(struct ctx *c, struct hk_list_query q, struct got *g)
{
    struct hk_store_op op;
    memset(&op, 0, sizeof op);
    op.kind = HK_OP_LIST;
    op.list = q;
    op.on_row = on_row;
    op.on_done = on_done;
    op.data = g;
    run_op(c, &op);
    cr_assert_eq(g->status, 0);
    while (op.more) {
        int before = g->dones;
        hk_store_list_next(c->sl, &op);
        uv_run(&c->loop, UV_RUN_DEFAULT);
        cr_assert_eq(g->dones, before + 1);
        cr_assert_eq(g->status, 0);
    }
}

Test(store_sqlite, lists_oldest_first_after_an_id_and_by_delivery_state)
{
    struct ctx c;
    ctx_init(&c);
    ctx_open(&c, false);
    int64_t ids[10];
    insert_many(&c, 10, "s", "push", ids);
    int64_t f1 = insert_fwd(&c, "s", "{}", 7, now_us() + 60000000, NULL);
    int64_t f2 = insert_fwd(&c, "t", "{}", 7, now_us() + 60000000, NULL);
    cr_assert_eq(settle(&c, f1, 7, HK_DLV_FAILED, 3, 0, 400, "HTTP 400"), 0);
    struct got g = {0};
    list_asc(&c, (struct hk_list_query){.ascending = true, .after = ids[3], .limit = 3, .stream = true}, &g);
    cr_assert_eq(g.nids, 8, "ids[4..9], f1, f2");
    for (size_t i = 1; i < g.nids; i++)
        cr_assert_gt(g.ids[i], g.ids[i - 1], "oldest first");
    cr_assert_eq(g.ids[0], ids[4]);
    cr_assert_eq(g.max_batch, 3);
    got_free(&g);
    list_asc(&c, (struct hk_list_query){.ascending = true, .after = ids[3], .before = ids[6], .limit = 50}, &g);
    cr_assert_eq(g.nids, 2);
    got_free(&g);
    list_asc(&c, (struct hk_list_query){.ascending = true, .source = "t", .source_len = 1, .limit = 50}, &g);
    cr_assert_eq(g.nids, 1);
    cr_assert_eq(g.ids[0], f2);
    got_free(&g);
    list_asc(&c, (struct hk_list_query){.delivery = HK_DLV_FAILED + 1, .limit = 50}, &g);
    cr_assert_eq(g.nids, 1, "newest first, failed only");
    cr_assert_eq(g.ids[0], f1);
    cr_assert_eq(g.dstate, HK_DLV_FAILED);
    got_free(&g);
    list_asc(&c, (struct hk_list_query){.delivery = HK_DLV_PENDING + 1, .ascending = true, .limit = 50}, &g);
    cr_assert_eq(g.nids, 1);
    cr_assert_eq(g.ids[0], f2);
    got_free(&g);
    list_asc(&c, (struct hk_list_query){.delivery = HK_DLV_NONE + 1, .limit = 50}, &g);
    cr_assert_eq(g.nids, 10);
    got_free(&g);
    ctx_close(&c);

    /* The failed filter walks its partial index. */
    sqlite3 *db;
    cr_assert_eq(sqlite3_open_v2(c.path, &db, SQLITE_OPEN_READONLY, NULL), SQLITE_OK);
    sqlite3_stmt *st;
    cr_assert_eq(sqlite3_prepare_v2(db, "EXPLAIN QUERY PLAN SELECT id FROM webhooks WHERE dstate = 3 AND"
                                        " received_us > ?6 AND received_us < ?7 AND id < ?3 AND id > ?9"
                                        " ORDER BY id DESC LIMIT ?4", -1, &st, NULL), SQLITE_OK);
    char plan[512] = "";
    while (sqlite3_step(st) == SQLITE_ROW) {
        size_t len = strlen(plan);
        snprintf(plan + len, sizeof plan - len, "%s;", (const char *)sqlite3_column_text(st, 3));
    }
    sqlite3_finalize(st);
    sqlite3_close(db);
    cr_assert(strstr(plan, "webhooks_failed") != NULL, "%s", plan);
    rm_dir(&c);
}

/* The WAL's header, salts included (bytes 16-23): a WAL started over
 * gets new salts. */
static void wal_salts(const char *path, unsigned char out[8])
{
    char wal[200];
    snprintf(wal, sizeof wal, "%s-wal", path);
    int fd = open(wal, O_RDONLY | O_CLOEXEC);
    cr_assert_geq(fd, 0, "no WAL at %s", wal);
    cr_assert_eq(pread(fd, out, 8, 16), 8);
    close(fd);
}

static off_t file_size(const char *path, const char *suffix)
{
    char p[200];
    snprintf(p, sizeof p, "%s%s", path, suffix);
    struct stat sb;
    return stat(p, &sb) == 0 ? sb.st_size : -1;
}

/* `sql` on a copy of the database file alone, without its WAL. */
static int64_t sql_int_file_alone(const char *path, const char *sql)
{
    char copy[200];
    snprintf(copy, sizeof copy, "%s.alone", path);
    char cmd[2 * sizeof copy + 16];
    snprintf(cmd, sizeof cmd, "cp '%s' '%s'", path, copy);
    cr_assert_eq(system(cmd), 0);
    int64_t v = sql_int(copy, sql);
    unlink(copy);
    return v;
}

/* A clean close puts every row into the database file and leaves the WAL
 * going, so that the next start appends to it instead of starting it over
 * (a header synced on its own): the first webhook after a restart pays for
 * its own commit only (the writer syncs the WAL, and with it its directory,
 * as the store opens: sqlite_writer.c, prime_wal). */
Test(store_sqlite, the_wal_is_ready_before_the_first_write)
{
    struct ctx c;
    ctx_init(&c);
    ctx_open(&c, true);
    insert(&c, "gh", "push", "{}");
    ctx_close(&c);
    off_t closed = file_size(c.path, "-wal");
    cr_assert(closed > 32 && closed < 64 * 1024, "a clean close leaves the WAL going (%lld bytes)",
              (long long)closed);
    cr_assert_eq(sql_int_file_alone(c.path, "SELECT count(*) FROM webhooks"), 1,
                 "the database file alone holds every row");
    unsigned char before[8], after[8];
    wal_salts(c.path, before);

    ctx_open(&c, true);
    insert(&c, "gh", "push", "{}");
    cr_assert_gt(file_size(c.path, "-wal"), closed, "the insert is not in the WAL");
    wal_salts(c.path, after);
    cr_assert_eq(memcmp(before, after, 8), 0, "the WAL was started over");
    ctx_close(&c);
    cr_assert_eq(sql_int(c.path, "PRAGMA auto_vacuum"), 2);
    cr_assert_eq(sql_int(c.path, "SELECT count(*) FROM webhooks"), 2);
    cr_assert_eq(sql_int(c.path, "SELECT count(*) FROM schema_version"), 1, "the readying left nothing");
    rm_dir(&c);
}

/* A reader in another connection (a sqlite3 shell, say) in a long
 * transaction at the stop: the close does not wait for it (the TRUNCATE
 * checkpoint would, for the busy timeout), loses nothing, and leaves the
 * WAL to SQLite's own close. */
Test(store_sqlite, a_reader_holding_a_transaction_does_not_hold_up_the_close)
{
    struct ctx c;
    ctx_init(&c);
    c.busy_ms = 5000;
    ctx_open(&c, true);
    insert(&c, "gh", "push", "{}");
    sqlite3 *db;
    cr_assert_eq(sqlite3_open_v2(c.path, &db, SQLITE_OPEN_READONLY, NULL), SQLITE_OK);
    cr_assert_eq(sqlite3_exec(db, "BEGIN", NULL, NULL, NULL), SQLITE_OK);
    sqlite3_stmt *q;
    cr_assert_eq(sqlite3_prepare_v2(db, "SELECT count(*) FROM webhooks", -1, &q, NULL), SQLITE_OK);
    cr_assert_eq(sqlite3_step(q), SQLITE_ROW);
    cr_assert_eq(sqlite3_column_int(q, 0), 1);
    sqlite3_finalize(q);
    insert(&c, "gh", "push", "{}");   /* the reader's snapshot is now behind */
    uint64_t t0 = hk_mono_ns();
    ctx_close(&c);
    double secs = (double)(hk_mono_ns() - t0) / 1e9;
    cr_assert_lt(secs, 2.0, "the close waited %.2f s for a reader", secs);
    cr_assert_eq(sqlite3_exec(db, "COMMIT", NULL, NULL, NULL), SQLITE_OK);
    sqlite3_close(db);
    cr_assert_eq(sql_int(c.path, "SELECT count(*) FROM webhooks"), 2);
    cr_assert_eq(sql_int(c.path, "SELECT count(*) FROM pragma_integrity_check WHERE integrity_check = 'ok'"), 1);
    rm_dir(&c);
}

/* A clean close now leaves a WAL behind. Removing the database file to
 * start afresh must still start afresh: SQLite drops a WAL that sits beside
 * an empty database (its pager does, on open) instead of reading those
 * frames as the new file's. */
Test(store_sqlite, the_wal_of_a_removed_database_is_not_read_into_a_new_one)
{
    struct ctx c;
    ctx_init(&c);
    ctx_open(&c, true);
    insert(&c, "gh", "push", "{}");
    ctx_close(&c);
    /* More than the close leaves: rows only the WAL holds. */
    sqlite3 *db;
    cr_assert_eq(sqlite3_open_v2(c.path, &db, SQLITE_OPEN_READWRITE, NULL), SQLITE_OK);
    cr_assert_eq(sqlite3_db_config(db, SQLITE_DBCONFIG_NO_CKPT_ON_CLOSE, 1, NULL), SQLITE_OK);
    cr_assert_eq(sqlite3_exec(db, "WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 50)"
                                  " INSERT INTO webhooks(source, event_type, payload, received_us)"
                                  " SELECT 'old', 'x', zeroblob(3000), 1 FROM n",
                              NULL, NULL, NULL),
                 SQLITE_OK, "%s", sqlite3_errmsg(db));
    sqlite3_close(db);
    cr_assert_gt(file_size(c.path, "-wal"), 50 * 3000);
    cr_assert_eq(unlink(c.path), 0);

    ctx_open(&c, true);
    int64_t id = insert(&c, "gh", "push", "{}");
    cr_assert_eq(id, 1, "a new file numbers from 1");
    ctx_close(&c);
    cr_assert_eq(sql_int(c.path, "SELECT count(*) FROM webhooks"), 1);
    cr_assert_eq(sql_int(c.path, "SELECT count(*) FROM pragma_integrity_check WHERE integrity_check = 'ok'"), 1);
    rm_dir(&c);
}

/* A new file is made without syncs and made durable once at the end: its
 * schema is in the database file itself (checkpointed), in WAL mode with
 * auto_vacuum, before the store is handed out. */
Test(store_sqlite, a_new_file_is_checkpointed_once_made)
{
    struct ctx c;
    ctx_init(&c);
    ctx_open(&c, true);
    /* Read with the WAL out of the way: only what the checkpoint wrote to
     * the database file counts. */
    char copy[sizeof c.path + 8];
    snprintf(copy, sizeof copy, "%s.copy", c.path);
    char cmd[3 * sizeof copy + 16];
    snprintf(cmd, sizeof cmd, "cp '%s' '%s'", c.path, copy);
    cr_assert_eq(system(cmd), 0);
    cr_assert_eq(sql_int(copy, "SELECT count(*) FROM sqlite_master WHERE name = 'webhooks'"), 1);
    cr_assert_gt(sql_int(copy, "SELECT max(version) FROM schema_version"), 0);
    cr_assert_eq(sql_int(copy, "PRAGMA auto_vacuum"), 2);
    unlink(copy);
    ctx_close(&c);
    rm_dir(&c);
}

/* The writer thread is named and runs SCHED_BATCH, so that a loop that
 * queues a write keeps its CPU until it waits (sqlite_writer.c:
 * writer_yields_to_loops). */
Test(store_sqlite, the_writer_thread_gives_way_to_the_loops)
{
    struct ctx c;
    ctx_init(&c);
    ctx_open(&c, true);
    insert(&c, "gh", "push", "{}");
    DIR *d = opendir("/proc/self/task");
    cr_assert_not_null(d);
    int found = 0, policy = -1;
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
        if (e->d_name[0] == '.')
            continue;
        char path[300], comm[32] = "";
        snprintf(path, sizeof path, "/proc/self/task/%s/comm", e->d_name);
        FILE *f = fopen(path, "r");
        if (!f)
            continue;
        if (fgets(comm, sizeof comm, f) && strcmp(comm, "hookd-sqlite\n") == 0) {
            found++;
            policy = sched_getscheduler((pid_t)atoi(e->d_name));
        }
        fclose(f);
    }
    closedir(d);
    cr_assert_eq(found, 1, "threads named hookd-sqlite: %d", found);
    cr_assert_eq(policy, SCHED_BATCH, "the writer's policy is %d", policy);
    ctx_close(&c);
    rm_dir(&c);
}
