/* SPDX-License-Identifier: MIT
 * PostgreSQL only: the server going away under load and coming back, a
 * query stuck behind a lock (timeout and queue bound), several hookd
 * processes on one database, passwords kept out of logs, an unreachable
 * database at start, and one client's failing statements beside everyone
 * else's requests; and the credential ops (tokens, sessions, the sweep,
 * the migration from version 1) driven through the store itself on the
 * server. Runs in the integ-pg suite; the fault test starts a
 * cluster of its own with scripts/pg.sh ($HOOKD_PG_SH) so that stopping it
 * does not disturb the tests running in parallel. */
#include <criterion/criterion.h>

#include <inttypes.h>
#include <libpq-fe.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <uv.h>

#include "core/clock.h"
#include "core/log.h"
#include "store/pg.h"
#include "store/store.h"

#include "harness.h"

static struct hk_server srv, srv2, srv3;
static char cluster[256];   /* private cluster directory, "" when none */
static void cstore_cleanup(void);

static void stop_cluster(void)
{
    if (!cluster[0])
        return;
    char cmd[512];
    snprintf(cmd, sizeof cmd, "\"%s\" stop '%s' >/dev/null 2>&1", getenv("HOOKD_PG_SH"), cluster);
    if (system(cmd) != 0)
        fprintf(stderr, "test_pg: could not stop the cluster in %s\n", cluster);
    cluster[0] = 0;
}

static void teardown(void)
{
    hk_server_cleanup(&srv);
    hk_server_cleanup(&srv2);
    hk_server_cleanup(&srv3);
    stop_cluster();
    cstore_cleanup();
}

TestSuite(pg, .fini = teardown, .timeout = 120);

static const char *base_url(void)
{
    const char *u = getenv("HOOKD_TEST_DATABASE_URL");
    if (!hk_store_is_pg() || !u || !*u)
        cr_skip_test("needs HOOKD_TEST_STORE=pg and HOOKD_TEST_DATABASE_URL (scripts/test.sh sets both)");
    return u;
}

/* The DATABASE_URL the harness gave this server. */
static const char *url_of(const struct hk_server *s)
{
    for (size_t i = 0; i < HK_MAX_ENV && s->env[i]; i++)
        if (strncmp(s->env[i], "DATABASE_URL=", 13) == 0)
            return s->env[i] + 13;
    cr_assert_fail("server has no DATABASE_URL");
    return NULL;
}

static PGconn *db_connect(const char *url)
{
    PGconn *c = PQconnectdb(url);
    cr_assert_eq(PQstatus(c), CONNECTION_OK, "connect %s: %s", url, PQerrorMessage(c));
    return c;
}

static PGresult *db_exec(PGconn *c, const char *sql)
{
    PGresult *r = PQexec(c, sql);
    ExecStatusType st = PQresultStatus(r);
    cr_assert(st == PGRES_COMMAND_OK || st == PGRES_TUPLES_OK, "%s: %s", sql, PQresultErrorMessage(r));
    return r;
}

static long db_count(PGconn *c, const char *sql)
{
    PGresult *r = db_exec(c, sql);
    long n = atol(PQgetvalue(r, 0, 0));
    PQclear(r);
    return n;
}

/* Run scripts/pg.sh with arguments; returns its first line of output. */
static void pg_sh(const char *args, char *out, size_t outn)
{
    const char *sh = getenv("HOOKD_PG_SH");
    cr_assert(sh && *sh, "HOOKD_PG_SH is not set");
    char cmd[1024];
    snprintf(cmd, sizeof cmd, "\"%s\" %s", sh, args);
    FILE *p = popen(cmd, "r");
    cr_assert_not_null(p, "popen %s", cmd);
    char line[512] = "";
    if (!fgets(line, sizeof line, p))
        line[0] = 0;
    int st = pclose(p);
    cr_assert(st == 0, "%s: exit status 0x%x", cmd, st);
    line[strcspn(line, "\n")] = 0;
    if (out)
        snprintf(out, outn, "%s", line);
}

static long get_status(const struct hk_server *s, const char *path)
{
    struct hk_resp r;
    struct hk_req req = {.path = path, .timeout_ms = 5000};
    hk_request(s, NULL, &req, &r);
    long st = r.curl_rc == CURLE_OK ? r.status : -1;
    hk_resp_free(&r);
    return st;
}

static bool wait_ready(const struct hk_server *s, long want, int timeout_ms)
{
    int64_t deadline = hk_now_ms() + timeout_ms;
    while (hk_now_ms() < deadline) {
        if (get_status(s, "/q/health/ready") == want)
            return true;
        hk_sleep_ms(50);
    }
    return false;
}

/* ---- a burst of POSTs from several threads until told to stop ---- */

#define BURST_MAX 20000

struct burst {
    const struct hk_server *s;
    atomic_bool stop;
    atomic_int next;
    int64_t ids[BURST_MAX];       /* > 0: the id of a 201 */
    long status[BURST_MAX];       /* HTTP status, or -1000 - CURLcode */
    int64_t ms[BURST_MAX];        /* how long the request took */
};

static void *burst_worker(void *arg)
{
    struct burst *b = arg;
    CURL *h = hk_curl_new();
    const char *hs[] = {"Content-Type: application/json", NULL};
    while (!atomic_load(&b->stop)) {
        int i = atomic_fetch_add(&b->next, 1);
        if (i >= BURST_MAX)
            break;
        char body[128];
        snprintf(body, sizeof body, "{\"source\":\"burst\",\"eventType\":\"e\",\"payload\":\"n%d\"}", i);
        struct hk_req req = {.method = "POST", .path = "/api/webhooks", .body = body, .headers = hs,
                             .timeout_ms = 15000};
        struct hk_resp r;
        int64_t t0 = hk_now_ms();
        int rc = hk_request(b->s, h, &req, &r);
        b->ms[i] = hk_now_ms() - t0;
        b->status[i] = rc == CURLE_OK ? r.status : -1000 - rc;
        if (rc == CURLE_OK && r.status == 201) {
            json_t *o = json_loadb(r.body, r.body_len, 0, NULL);
            json_t *id = json_object_get(o, "id");
            b->ids[i] = json_is_integer(id) ? json_integer_value(id) : -2;
            json_decref(o);
        }
        hk_resp_free(&r);
    }
    curl_easy_cleanup(h);
    return NULL;
}

/* ---- the server goes away and comes back ---- */

Test(pg, server_stop_gives_503s_then_recovers_without_restart, .timeout = 180)
{
    base_url();
    pg_sh("start", cluster, sizeof cluster);
    char args[600], url[512], env_url[600];
    snprintf(args, sizeof args, "url '%s'", cluster);
    pg_sh(args, url, sizeof url);
    snprintf(env_url, sizeof env_url, "DATABASE_URL=%s", url);
    const char *env[] = {env_url, "HOOKD_DB_TIMEOUT=2s", NULL};
    hk_server_start(&srv, env);
    hk_create(&srv, "before", "e", NULL);

    static struct burst b;
    memset(&b, 0, sizeof b);
    b.s = &srv;
    enum { T = 6 };
    pthread_t th[T];
    for (int i = 0; i < T; i++)
        cr_assert_eq(pthread_create(&th[i], NULL, burst_worker, &b), 0);
    hk_sleep_ms(500);

    snprintf(args, sizeof args, "halt '%s'", cluster);
    int64_t t_halt = hk_now_ms();
    pg_sh(args, NULL, 0);
    bool went_down = wait_ready(&srv, 503, 10000);
    int64_t down_ms = hk_now_ms() - t_halt;
    hk_sleep_ms(700);   /* requests keep coming while it is down */

    snprintf(args, sizeof args, "resume '%s'", cluster);
    pg_sh(args, NULL, 0);
    int64_t t_resume = hk_now_ms();
    bool came_back = wait_ready(&srv, 200, 15000);
    int64_t up_ms = hk_now_ms() - t_resume;
    hk_sleep_ms(300);
    atomic_store(&b.stop, true);
    for (int i = 0; i < T; i++)
        pthread_join(th[i], NULL);

    cr_assert(went_down, "/q/health/ready never said 503 after the server stopped");
    cr_assert(came_back, "/q/health/ready not back to 200 within 15 s of the restart");
    int n = atomic_load(&b.next);
    if (n > BURST_MAX)
        n = BURST_MAX;
    int ok = 0, unavailable = 0;
    int64_t slowest = 0;
    for (int i = 0; i < n; i++) {
        if (b.status[i] == 0)
            continue;   /* claimed but not sent when the burst stopped */
        cr_assert(b.status[i] == 201 || b.status[i] == 503,
                  "POST %d during the outage: status %ld (only 201 or 503 allowed)", i, b.status[i]);
        ok += b.status[i] == 201;
        unavailable += b.status[i] == 503;
        if (b.ms[i] > slowest)
            slowest = b.ms[i];
    }
    cr_assert_gt(unavailable, 0, "no 503 while PostgreSQL was down (%d requests)", n);
    cr_assert_gt(ok, 0, "no 201 at all");
    cr_assert_lt(slowest, 2000 + 1500, "a request took %" PRId64 " ms (timeout 2 s)", slowest);

    /* Recovered without a restart: every loop has its pool back once the
     * last one logs it (a loop may still be in its reconnect backoff when
     * another one already answers ready). */
    bool all_back = false;
    for (int64_t until = hk_now_ms() + 12000; !all_back && hk_now_ms() < until; hk_sleep_ms(50)) {
        char *log = hk_server_stderr(&srv);
        all_back = strstr(log, "postgresql available again") != NULL;
        free(log);
    }
    cr_assert(all_back, "no \"postgresql available again\" log line within 12 s of ready");
    for (int i = 0; i < 10; i++)
        hk_create(&srv, "after", "e", NULL);
    /* And every acknowledged row is there. */
    PGconn *c = db_connect(url);
    int missing = 0;
    for (int i = 0; i < n; i++) {
        if (b.status[i] != 201)
            continue;
        char sql[128];
        snprintf(sql, sizeof sql, "SELECT count(*) FROM webhooks WHERE id = %" PRId64 " AND payload = 'n%d'",
                 b.ids[i], i);
        if (db_count(c, sql) != 1)
            missing++;
    }
    PQfinish(c);
    cr_assert_eq(missing, 0, "%d of %d acknowledged rows are not in the database", missing, ok);
    char *log = hk_server_stderr(&srv);
    cr_assert(strstr(log, "postgresql unavailable"), "no log line for the outage:\n%s", log);
    free(log);
    cr_log_info("outage: %d requests, %d x 201, %d x 503; ready 503 after %" PRId64
                " ms, 200 again %" PRId64 " ms after the restart; slowest %" PRId64 " ms",
                n, ok, unavailable, down_ms, up_ms, slowest);
    hk_finish(&srv);
}

/* ---- a lock held by someone else ---- */

struct one_post {
    const struct hk_server *s;
    long status;
    int64_t ms;
    char detail[128];
};

static void *post_once(void *arg)
{
    struct one_post *p = arg;
    const char *hs[] = {"Content-Type: application/json", NULL};
    struct hk_req req = {.method = "POST", .path = "/api/webhooks", .headers = hs, .timeout_ms = 10000,
                         .body = "{\"source\":\"locked\",\"eventType\":\"e\"}"};
    struct hk_resp r;
    int64_t t0 = hk_now_ms();
    int rc = hk_request(p->s, NULL, &req, &r);
    p->ms = hk_now_ms() - t0;
    p->status = rc == CURLE_OK ? r.status : -1000 - rc;
    json_t *o = rc == CURLE_OK ? json_loadb(r.body, r.body_len, 0, NULL) : NULL;
    const char *d = json_string_value(json_object_get(o, "detail"));
    snprintf(p->detail, sizeof p->detail, "%s", d ? d : "");
    json_decref(o);
    hk_resp_free(&r);
    return NULL;
}

Test(pg, lock_held_hits_timeout_and_queue_bound)
{
    base_url();
    const char *env[] = {"HOOKD_DB_TIMEOUT=500ms", "HOOKD_DB_QUEUE=4", "HOOKD_DB_POOL=1", "HOOKD_THREADS=1",
                         NULL};
    hk_server_start(&srv, env);
    hk_create(&srv, "warm", "e", NULL);
    PGconn *lock = db_connect(url_of(&srv));
    PQclear(db_exec(lock, "BEGIN"));
    PQclear(db_exec(lock, "LOCK TABLE webhooks IN ACCESS EXCLUSIVE MODE"));

    enum { N = 12 };
    struct one_post p[N];
    pthread_t th[N];
    for (int i = 0; i < N; i++) {
        p[i] = (struct one_post){.s = &srv};
        cr_assert_eq(pthread_create(&th[i], NULL, post_once, &p[i]), 0);
    }
    for (int i = 0; i < N; i++)
        pthread_join(th[i], NULL);
    int timed_out = 0, full = 0;
    for (int i = 0; i < N; i++) {
        cr_assert_eq(p[i].status, 503, "POST %d with the table locked: %ld (%s)", i, p[i].status, p[i].detail);
        cr_assert_lt(p[i].ms, 500 + 1500, "POST %d took %" PRId64 " ms with a 500 ms timeout", i, p[i].ms);
        timed_out += strstr(p[i].detail, "in time") != NULL;
        full += strstr(p[i].detail, "queue is full") != NULL;
    }
    cr_assert_gt(timed_out, 0, "no request hit the 500 ms timeout");
    cr_assert_gt(full, 0, "no request hit the queue bound of 4");

    PQclear(db_exec(lock, "ROLLBACK"));
    cr_assert(wait_ready(&srv, 200, 15000), "not ready again after the lock was released");
    hk_create(&srv, "unlocked", "e", NULL);
    /* A 503 after a timeout means "outcome unknown", not "not stored": a
     * statement already on the server may still commit once the lock goes
     * (statement_timeout makes that rare; Idempotency-Key makes retries safe).
     * What must hold is that nothing answered 503 is reported stored. */
    cr_log_info("rows stored by requests answered 503: %ld",
                db_count(lock, "SELECT count(*) FROM webhooks WHERE source = 'locked'"));
    PQfinish(lock);
    hk_finish(&srv);
}

/* ---- replicas ---- */

static void body_replica(int i, char *buf, size_t n)
{
    snprintf(buf, n, "{\"source\":\"rep%d\",\"eventType\":\"e\",\"payload\":\"p%d\"}", i % 5, i);
}

Test(pg, replicas_on_one_port_and_database_lose_nothing)
{
    base_url();
    hk_server_start(&srv, NULL);
    char port[32], dburl[600];
    snprintf(port, sizeof port, "PORT=%d", srv.port);
    snprintf(dburl, sizeof dburl, "DATABASE_URL=%s", url_of(&srv));
    const char *env[] = {port, dburl, NULL};
    hk_server_start(&srv2, env);
    hk_server_start(&srv3, env);
    cr_assert_eq(srv2.port, srv.port);
    cr_assert_eq(srv3.port, srv.port);

    enum { N = 1500 };
    static int64_t ids[N];
    int ok = hk_parallel_posts(&srv, 12, N, body_replica, ids);
    cr_assert_eq(ok, N, "%d of %d POSTs got 201", ok, N);
    for (int i = 0; i < N; i++)
        for (int j = i + 1; j < N; j++)
            cr_assert_neq(ids[i], ids[j], "POSTs %d and %d both got id %" PRId64, i, j, ids[i]);

    PGconn *c = db_connect(url_of(&srv));
    cr_assert_eq(db_count(c, "SELECT count(*) FROM webhooks"), N);
    cr_assert_eq(db_count(c, "SELECT count(DISTINCT payload) FROM webhooks"), N);
    PQfinish(c);
    /* Each of them served some of it (SO_REUSEPORT spreads connections). */
    hk_finish(&srv3);
    hk_finish(&srv2);
    hk_finish(&srv);
}

/* ---- passwords ---- */

#define SECRET "Zq8-n0t-in-l0gs"

static char *with_password(const char *url)
{
    /* postgresql://postgres@host:port/db -> postgresql://postgres:SECRET@host:port/db */
    const char *at = strchr(url, '@');
    cr_assert_not_null(at, "%s", url);
    char *out = malloc(strlen(url) + sizeof SECRET + 2);
    cr_assert_not_null(out);
    sprintf(out, "%.*s:" SECRET "%s", (int)(at - url), url, at);
    return out;
}

static void assert_no_secret(const char *what, const char *text)
{
    cr_assert_null(strstr(text, SECRET), "the password appears in %s:\n%s", what, text);
    cr_assert_null(strstr(text, "n0t-in"), "part of the password appears in %s:\n%s", what, text);
}

Test(pg, password_never_in_logs_or_system_info)
{
    base_url();
    hk_server_start(&srv, NULL);
    char *url = with_password(url_of(&srv));
    hk_server_stop_clean(&srv);

    /* As a URI (trust auth: libpq does not even send it, hookd still has it). */
    char env_url[700];
    snprintf(env_url, sizeof env_url, "DATABASE_URL=%s", url);
    const char *env[] = {env_url, "HOOKD_LOG_LEVEL=debug", NULL};
    struct hk_server *s = &srv2;   /* on srv's database, which teardown drops */
    hk_server_start(s, env);
    hk_create(s, "pw", "e", NULL);
    struct hk_resp r;
    hk_get(s, "/api/system/info", &r);
    assert_no_secret("/api/system/info", r.body);
    cr_assert(strstr(r.body, "\"store\":\"postgresql\""), "%s", r.body);
    hk_resp_free(&r);
    hk_finish(s);
    char *log = hk_server_stderr(s);
    assert_no_secret("stderr", log);
    cr_assert(strstr(log, "\"store\":\"postgresql\""), "the started line does not name the store:\n%s", log);
    free(log);
    hk_server_cleanup(s);

    /* From DATABASE_URL_FILE, as key=value with a quoted password. */
    char path[] = "/tmp/hookd-dburl-XXXXXX";
    int fd = mkstemp(path);
    cr_assert_geq(fd, 0);
    char port[16];
    const char *p = strrchr(url, ':');
    snprintf(port, sizeof port, "%d", atoi(p + 1));
    dprintf(fd, "host=127.0.0.1 port=%s user=postgres password='" SECRET "' dbname=postgres "
            "options='-csearch_path=%s'\n", port, srv.pg_schema);
    close(fd);
    char env_file[64];
    snprintf(env_file, sizeof env_file, "DATABASE_URL_FILE=%s", path);
    const char *env2[] = {env_file, "DATABASE_URL", NULL};
    hk_server_start(s, env2);
    hk_create(s, "pw2", "e", NULL);
    hk_finish(s);
    log = hk_server_stderr(s);
    assert_no_secret("stderr (DATABASE_URL_FILE)", log);
    free(log);
    unlink(path);
    free(url);
}

/* ---- start-up failures ---- */

static int count_lines(const char *s)
{
    int n = 0;
    for (; *s; s++)
        n += *s == '\n';
    return n;
}

static int unused_port(void)
{
    /* A port from the ephemeral range nobody listens on right now. */
    for (int port = 39000; port < 39100; port++) {
        int fd = hk_tcp_try_connect(port);
        if (fd < 0)
            return port;
        close(fd);
    }
    cr_assert_fail("no unused port");
    return 0;
}

Test(pg, unreachable_database_fails_fast_with_one_line)
{
    base_url();
    const char *forms[] = {"postgresql://hookd:" SECRET "@127.0.0.1:%d/hookd",
                           "postgres://hookd:" SECRET "@127.0.0.1:%d/hookd",
                           "host=127.0.0.1 port=%d user=hookd password=" SECRET " dbname=hookd"};
    for (size_t i = 0; i < sizeof forms / sizeof forms[0]; i++) {
        char env_url[256];
        int n = snprintf(env_url, sizeof env_url, "DATABASE_URL=");
        snprintf(env_url + n, sizeof env_url - (size_t)n, forms[i], unused_port());
        const char *env[] = {env_url, NULL};
        char *out, *err;
        int64_t t0 = hk_now_ms();
        int st = hk_run(env, NULL, 5000, &out, &err);
        int64_t dt = hk_now_ms() - t0;
        cr_assert(st != -1, "%s: still running after 5 s", env_url);
        cr_assert(WIFEXITED(st) && WEXITSTATUS(st) != 0, "%s: exit status 0x%x", env_url, st);
        cr_assert_lt(dt, 3000, "%s: took %" PRId64 " ms to give up", env_url, dt);
        cr_assert(!strstr(out, "started"), "printed the ready line: %s", out);
        cr_assert_eq(count_lines(err), 1, "%s: expected one line on stderr:\n%s", env_url, err);
        cr_assert(strstr(err, "cannot open the store") && strstr(err, "postgresql"), "%s", err);
        cr_assert(strstr(err, "***") || !strstr(forms[i], "@"), "no redacted URL in: %s", err);
        assert_no_secret("the start-up error", err);
        free(out);
        free(err);
    }
}

Test(pg, invalid_url_fails_fast_without_echoing_it)
{
    base_url();
    const char *env[] = {"DATABASE_URL=postgresql://u:" SECRET "@h/db?nosuchoption=1", NULL};
    char *out, *err;
    int st = hk_run(env, NULL, 5000, &out, &err);
    cr_assert(st != -1 && WIFEXITED(st) && WEXITSTATUS(st) != 0, "exit status 0x%x", st);
    cr_assert_eq(count_lines(err), 1, "%s", err);
    cr_assert(strstr(err, "not a valid connection string"), "%s", err);
    assert_no_secret("the start-up error", err);
    free(out);
    free(err);
}

/* ---- one client's failing statement, everyone else's requests ---- */

/* Requests from several threads until told to stop, each thread in one
 * role; what each request got is kept for the checks afterwards. */
enum role { R_POISON, R_WRITE, R_LIST, R_STREAM, R_BADFILTER };

#define STORM_MAX 50000
#define NSEED 250   /* rows a streamed list reads: three batches of 100 */

struct storm {
    const struct hk_server *s;
    atomic_bool stop;
    atomic_int next;
    uint8_t role[STORM_MAX];
    long status[STORM_MAX];       /* HTTP status, or -1000 - CURLcode */
    int64_t id[STORM_MAX];        /* R_WRITE: the id of a 201 */
    int rows[STORM_MAX];          /* R_STREAM: rows received; -1: not a JSON array */
    char ctype[STORM_MAX][8];     /* R_BADFILTER: "problem" when problem+json */
};

struct storm_worker {
    struct storm *st;
    enum role role;
};

static const char *const bad_filters[] = {
    "/api/webhooks?source=%ff%fe",          /* not UTF-8 */
    "/api/webhooks?source=a%00b",           /* NUL */
    "/api/webhooks?eventType=%c3%28",       /* broken sequence */
    "/api/webhooks?source=x&eventType=%ed%a0%80",   /* a surrogate */
    "/api/webhooks?all=true&source=%c0%af", /* overlong, streamed */
};

static void *storm_worker(void *arg)
{
    struct storm_worker *w = arg;
    struct storm *st = w->st;
    CURL *h = hk_curl_new();
    const char *hs[] = {"Content-Type: application/json", NULL};
    for (unsigned k = 0; !atomic_load(&st->stop); k++) {
        int i = atomic_fetch_add(&st->next, 1);
        if (i >= STORM_MAX)
            break;
        char body[128], path[128];
        struct hk_req req = {.headers = hs, .timeout_ms = 15000, .path = path};
        st->role[i] = (uint8_t)w->role;
        switch (w->role) {
        case R_POISON:
        case R_WRITE:
            snprintf(body, sizeof body, "{\"source\":\"%s\",\"eventType\":\"e\",\"payload\":\"n%d\"}",
                     w->role == R_POISON ? "poison" : "innocent", i);
            snprintf(path, sizeof path, "/api/webhooks");
            req.method = "POST";
            req.body = body;
            break;
        case R_LIST:
            snprintf(path, sizeof path, k % 2 ? "/api/webhooks?limit=20" : "/api/webhooks?source=innocent&limit=5");
            break;
        case R_STREAM:
            snprintf(path, sizeof path, "/api/webhooks?all=true&source=seed");
            break;
        case R_BADFILTER:
            snprintf(path, sizeof path, "%s", bad_filters[k % (sizeof bad_filters / sizeof bad_filters[0])]);
            break;
        }
        struct hk_resp r;
        int rc = hk_request(st->s, h, &req, &r);
        st->status[i] = rc == CURLE_OK ? r.status : -1000 - rc;
        json_t *o = rc == CURLE_OK && r.status < 300 ? json_loadb(r.body, r.body_len, 0, NULL) : NULL;
        if (w->role == R_WRITE && st->status[i] == 201) {
            json_t *id = json_object_get(o, "id");
            st->id[i] = json_is_integer(id) ? json_integer_value(id) : -2;
        }
        if (w->role == R_STREAM)
            st->rows[i] = json_is_array(o) ? (int)json_array_size(o) : -1;
        char ct[128];
        if (rc == CURLE_OK && hk_header(&r, "Content-Type", ct, sizeof ct) != NULL &&
            strncmp(ct, "application/problem+json", 24) == 0)
            snprintf(st->ctype[i], sizeof st->ctype[i], "problem");
        json_decref(o);
        hk_resp_free(&r);
        if (w->role == R_BADFILTER)
            hk_sleep_ms(1);   /* answered at once: leave the CPU to the writers */
        if (rc != CURLE_OK) {
            /* A stream cut short closes the connection: start a new one. */
            curl_easy_cleanup(h);
            h = hk_curl_new();
        }
    }
    curl_easy_cleanup(h);
    return NULL;
}

/* Run the roles given (one thread each) for `ms`, or until STORM_MAX. */
static int storm_run(struct storm *st, const enum role *roles, int nroles, int ms)
{
    pthread_t th[16];
    struct storm_worker w[16];
    cr_assert_leq(nroles, 16);
    for (int t = 0; t < nroles; t++) {
        w[t] = (struct storm_worker){st, roles[t]};
        cr_assert_eq(pthread_create(&th[t], NULL, storm_worker, &w[t]), 0);
    }
    hk_sleep_ms(ms);
    atomic_store(&st->stop, true);
    for (int t = 0; t < nroles; t++)
        pthread_join(th[t], NULL);
    int n = atomic_load(&st->next);
    return n > STORM_MAX ? STORM_MAX : n;
}

static void seed_rows(PGconn *c)
{
    char sql[256];
    snprintf(sql, sizeof sql, "INSERT INTO webhooks(source, event_type, payload, received_at)"
             " SELECT 'seed', 'e', 's' || g, now() FROM generate_series(1, %d) g", NSEED);
    PQclear(db_exec(c, sql));
}

/* Every acknowledged innocent webhook is in the database, under its id. */
static void assert_acknowledged_stored(PGconn *c, const struct storm *st, int n)
{
    static int64_t found[STORM_MAX];
    memset(found, 0, sizeof found);
    PGresult *res = db_exec(c, "SELECT id, payload FROM webhooks WHERE source = 'innocent'");
    for (int k = 0; k < PQntuples(res); k++) {
        int i = atoi(PQgetvalue(res, k, 1) + 1);
        cr_assert(i >= 0 && i < STORM_MAX, "unexpected row %s", PQgetvalue(res, k, 1));
        found[i] = strtoll(PQgetvalue(res, k, 0), NULL, 10);
    }
    PQclear(res);
    int acked = 0, missing = 0;
    for (int i = 0; i < n; i++) {
        if (st->role[i] != R_WRITE || st->status[i] != 201)
            continue;
        acked++;
        missing += found[i] != st->id[i];
    }
    cr_assert_eq(missing, 0, "%d of %d acknowledged webhooks are not stored under their id", missing, acked);
}

Test(pg, failing_statement_fails_only_its_own_request, .timeout = 60)
{
    base_url();
    /* One loop: every request shares its pipeline groups with the others. */
    const char *env[] = {"HOOKD_THREADS=1", NULL};
    hk_server_start(&srv, env);
    PGconn *c = db_connect(url_of(&srv));
    seed_rows(c);
    /* A statement that passes hookd's validation and fails in the server. */
    PQclear(db_exec(c, "CREATE FUNCTION poison() RETURNS trigger LANGUAGE plpgsql AS $$"
                       " BEGIN IF NEW.source = 'poison' THEN RAISE EXCEPTION 'poisoned'; END IF;"
                       " RETURN NEW; END $$"));
    PQclear(db_exec(c, "CREATE TRIGGER poison BEFORE INSERT ON webhooks"
                       " FOR EACH ROW EXECUTE FUNCTION poison()"));

    static struct storm st;
    memset(&st, 0, sizeof st);
    st.s = &srv;
    const enum role roles[] = {R_POISON, R_POISON, R_WRITE, R_WRITE, R_WRITE, R_WRITE,
                               R_LIST, R_LIST, R_STREAM};
    int n = storm_run(&st, roles, (int)(sizeof roles / sizeof roles[0]), 2500);

    int count[5] = {0}, bad[5] = {0};
    long poison_status = 0;
    int poison_mixed = 0;
    for (int i = 0; i < n; i++) {
        if (st.status[i] == 0)
            continue;   /* claimed but not sent when the storm stopped */
        enum role r = st.role[i];
        count[r]++;
        switch (r) {
        case R_POISON:
            if (poison_status == 0)
                poison_status = st.status[i];
            poison_mixed += st.status[i] != poison_status;
            break;
        case R_WRITE:
            bad[r] += st.status[i] != 201;
            break;
        case R_LIST:
            bad[r] += st.status[i] != 200;
            break;
        default:
            bad[r] += st.status[i] != 200 || st.rows[i] != NSEED;
            break;
        }
    }
    cr_log_info("poisoned groups: %d requests; poison %d (status %ld), writes %d (%d failed), lists %d"
                " (%d failed), streams %d (%d failed)",
                n, count[R_POISON], poison_status, count[R_WRITE], bad[R_WRITE], count[R_LIST],
                bad[R_LIST], count[R_STREAM], bad[R_STREAM]);
    if (bad[R_WRITE] || bad[R_LIST] || bad[R_STREAM]) {
        /* What hookd logged, but the poison's own failures. */
        char *err = hk_server_stderr(&srv);
        for (char *line = strtok(err, "\n"); line; line = strtok(NULL, "\n"))
            if (!strstr(line, "poisoned"))
                cr_log_error("hookd: %s", line);
        free(err);
    }
    cr_assert_gt(count[R_POISON], 50, "too few poisoned requests to mean anything: %d", count[R_POISON]);
    cr_assert_gt(count[R_WRITE], 200, "too few writes: %d", count[R_WRITE]);
    cr_assert_eq(bad[R_WRITE], 0, "%d of %d innocent POSTs failed beside a failing statement", bad[R_WRITE],
                 count[R_WRITE]);
    cr_assert_eq(bad[R_LIST], 0, "%d of %d lists failed beside a failing statement", bad[R_LIST], count[R_LIST]);
    int first_bad = -1;
    for (int i = 0; i < n && first_bad < 0; i++)
        if (st.role[i] == R_STREAM && st.status[i] != 0 && (st.status[i] != 200 || st.rows[i] != NSEED))
            first_bad = i;
    cr_assert_eq(bad[R_STREAM], 0,
                 "%d of %d streamed lists failed or came short beside a failing statement"
                 " (the first: status %ld, %d rows of %d)",
                 bad[R_STREAM], count[R_STREAM], first_bad < 0 ? 0 : st.status[first_bad],
                 first_bad < 0 ? 0 : st.rows[first_bad], NSEED);
    cr_assert(poison_status >= 400 && poison_status < 600 && poison_mixed == 0,
              "poisoned POSTs answered %ld, and %d of %d something else", poison_status, poison_mixed,
              count[R_POISON]);
    assert_acknowledged_stored(c, &st, n);
    cr_assert_eq(db_count(c, "SELECT count(*) FROM webhooks WHERE source = 'poison'"), 0);
    /* Every op sent again was accounted for: nothing waits, nothing runs. */
    struct hk_resp r;
    hk_get(&srv, "/q/metrics", &r);
    cr_assert_eq(r.status, 200);
    cr_assert(strstr(r.body, "\nhookd_store_queue_depth{backend=\"postgresql\"} 0\n") &&
              strstr(r.body, "\nhookd_store_connections_busy{backend=\"postgresql\"} 0\n"),
              "store gauges not back to 0 after the storm:\n%s", r.body);
    hk_resp_free(&r);
    /* And through hookd. */
    hk_get(&srv, "/api/webhooks?all=true&source=innocent", &r);
    json_t *a = hk_assert_json(&r, 200);
    int acked = 0;
    for (int i = 0; i < n; i++)
        acked += st.role[i] == R_WRITE && st.status[i] == 201;
    cr_assert_eq((int)json_array_size(a), acked, "hookd lists %zu innocent webhooks, %d were acknowledged",
                 json_array_size(a), acked);
    json_decref(a);
    hk_resp_free(&r);
    PQfinish(c);
    hk_finish(&srv);
}

Test(pg, filters_postgresql_refuses_answer_400_beside_writers, .timeout = 60)
{
    base_url();
    const char *env[] = {"HOOKD_THREADS=1", NULL};
    hk_server_start(&srv, env);
    static struct storm st;
    memset(&st, 0, sizeof st);
    st.s = &srv;
    const enum role roles[] = {R_BADFILTER, R_BADFILTER, R_WRITE, R_WRITE, R_WRITE, R_WRITE, R_LIST};
    int n = storm_run(&st, roles, (int)(sizeof roles / sizeof roles[0]), 1500);
    int count[5] = {0}, bad[5] = {0};
    for (int i = 0; i < n; i++) {
        if (st.status[i] == 0)
            continue;
        enum role r = st.role[i];
        count[r]++;
        if (r == R_BADFILTER)
            bad[r] += st.status[i] != 400 || strcmp(st.ctype[i], "problem") != 0;
        else
            bad[r] += st.status[i] != (r == R_WRITE ? 201 : 200);
    }
    cr_log_info("invalid filters: %d requests; filters %d (%d not a 400 problem), writes %d (%d failed),"
                " lists %d (%d failed)",
                n, count[R_BADFILTER], bad[R_BADFILTER], count[R_WRITE], bad[R_WRITE], count[R_LIST],
                bad[R_LIST]);
    cr_assert_gt(count[R_BADFILTER], 50, "too few invalid filters sent: %d", count[R_BADFILTER]);
    cr_assert_eq(bad[R_WRITE], 0, "%d of %d POSTs failed beside invalid filters", bad[R_WRITE], count[R_WRITE]);
    cr_assert_eq(bad[R_LIST], 0, "%d of %d lists failed beside invalid filters", bad[R_LIST], count[R_LIST]);
    PGconn *c = db_connect(url_of(&srv));
    assert_acknowledged_stored(c, &st, n);
    PQfinish(c);
    /* Each one is the client's mistake: a 400 problem, as with SQLite. */
    for (size_t k = 0; k < sizeof bad_filters / sizeof bad_filters[0]; k++) {
        struct hk_resp r;
        hk_context("GET %s", bad_filters[k]);
        hk_get(&srv, bad_filters[k], &r);
        json_decref(hk_assert_problem(&r, 400));
        hk_resp_free(&r);
    }
    hk_context("%s", "");
    cr_assert_eq(bad[R_BADFILTER], 0, "%d of %d invalid filters not answered 400 problem+json",
                 bad[R_BADFILTER], count[R_BADFILTER]);
    hk_finish(&srv);
}

/* ---- the credential ops on the server, through the store itself ---- */

/* One PostgreSQL store on a fresh schema of the test cluster, attached to
 * a loop of the test's own, and a libpq connection of the test's on the
 * same schema for checks behind the store's back. */
static struct {
    char schema[64];
    char *url;
    PGconn *db;
    struct hk_store *s;
    uv_loop_t loop;
    struct hk_store_loop *sl;
} cs;

static void cstore_attach(unsigned pool)
{
    struct hk_pg_config cfg = {.url = cs.url, .pool = pool, .queue_max = 256, .timeout_ms = 5000,
                               .loops = 1};
    char err[512];
    cs.s = hk_pg_open(&cfg, err, sizeof err);
    cr_assert_not_null(cs.s, "hk_pg_open: %s", err);
    cr_assert_eq(uv_loop_init(&cs.loop), 0);
    cr_assert_eq(cs.s->vt->loop_attach(cs.s, &cs.loop, &cs.sl), 0);
}

static void cstore_detach(void)
{
    if (!cs.s)
        return;
    cs.s->vt->loop_detach(cs.sl);
    uv_run(&cs.loop, UV_RUN_DEFAULT);
    cr_assert_eq(uv_loop_close(&cs.loop), 0);
    cs.s->vt->close(cs.s);
    cs.s = NULL;
    cs.sl = NULL;
}

/* A fresh schema; `setup_sql` (or NULL) runs in it before the store opens. */
static void cstore_open(unsigned pool, const char *setup_sql)
{
    const char *base = base_url();
    static unsigned serial;
    hk_log_set_level(HK_LOG_WARN);
    memset(&cs, 0, sizeof cs);
    snprintf(cs.schema, sizeof cs.schema, "hk_cred_%d_%u", (int)getpid(), serial++);
    PGconn *admin = db_connect(base);
    char sql[128];
    snprintf(sql, sizeof sql, "CREATE SCHEMA %s", cs.schema);
    PQclear(db_exec(admin, sql));
    PQfinish(admin);
    cs.url = hk_pg_url_with_schema(base, cs.schema);
    cs.db = db_connect(cs.url);
    PQclear(db_exec(cs.db, "SET client_min_messages = warning"));   /* DROP's NOTICEs */
    if (setup_sql)
        PQclear(db_exec(cs.db, setup_sql));
    cstore_attach(pool);
}

static void cstore_cleanup(void)
{
    cstore_detach();
    if (cs.db) {
        char sql[128];
        snprintf(sql, sizeof sql, "DROP SCHEMA IF EXISTS %s CASCADE", cs.schema);
        PQclear(PQexec(cs.db, sql));
        PQfinish(cs.db);
        cs.db = NULL;
    }
    free(cs.url);
    cs.url = NULL;
}

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

/* Run the loop until every one of `n` ops has its answer. */
static void cred_wait(struct cred *const *rs, int n)
{
    int64_t deadline = hk_now_ms() + 10000;
    for (;;) {
        int pending = 0;
        for (int i = 0; i < n; i++)
            pending += rs[i]->dones == 0;
        if (pending == 0)
            break;
        cr_assert_lt(hk_now_ms(), deadline, "%d credential ops unanswered after 10 s", pending);
        uv_run(&cs.loop, UV_RUN_ONCE);
    }
    for (int i = 0; i < n; i++)
        cr_assert_eq(rs[i]->dones, 1);
}

static int cred_run(struct hk_store_op *op)
{
    struct cred *r = op->data;
    cr_assert_eq(hk_store_submit(cs.sl, op), 0);
    cred_wait(&r, 1);
    return r->status;
}

static void fill_hash(uint8_t h[32], unsigned seed)
{
    for (unsigned i = 0; i < 32; i++)
        h[i] = (uint8_t)(seed * 37u + i * 7u + 1u);
    h[5] = 0;
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

static int token_put(struct hk_token_rec *t)
{
    struct hk_store_op op;
    struct cred r;
    cred_op(&op, &r, HK_OP_TOKEN_PUT);
    op.token = t;
    return cred_run(&op);
}

static int token_get(unsigned seed, struct hk_token_rec *out)
{
    struct hk_store_op op;
    struct cred r;
    cred_op(&op, &r, HK_OP_TOKEN_GET);
    memset(out, 0, sizeof *out);
    fill_hash(out->hash, seed);
    op.token = out;
    return cred_run(&op);
}

static int token_revoke(const char *name, struct hk_token_rec *out)
{
    struct hk_store_op op;
    struct cred r;
    cred_op(&op, &r, HK_OP_TOKEN_REVOKE);
    op.name = name;
    op.token = out;
    return cred_run(&op);
}

static int token_list(uint32_t limit, struct cred *r)
{
    struct hk_store_op op;
    cred_op(&op, r, HK_OP_TOKEN_LIST);
    op.list.limit = limit;
    return cred_run(&op);
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

static int session_put(struct hk_session_rec *s)
{
    struct hk_store_op op;
    struct cred r;
    cred_op(&op, &r, HK_OP_SESSION_PUT);
    op.session = s;
    return cred_run(&op);
}

static int session_get(unsigned seed, struct hk_session_rec *out)
{
    struct hk_store_op op;
    struct cred r;
    cred_op(&op, &r, HK_OP_SESSION_GET);
    memset(out, 0, sizeof *out);
    fill_hash(out->hash, seed);
    op.session = out;
    return cred_run(&op);
}

static int session_del(unsigned seed)
{
    struct hk_store_op op;
    struct cred r;
    struct hk_session_rec s;
    memset(&s, 0, sizeof s);
    fill_hash(s.hash, seed);
    cred_op(&op, &r, HK_OP_SESSION_DEL);
    op.session = &s;
    return cred_run(&op);
}

static void assert_token_eq(const struct hk_token_rec *a, const struct hk_token_rec *b)
{
    cr_assert_str_eq(a->name, b->name);
    cr_assert_eq(memcmp(a->hash, b->hash, 32), 0);
    cr_assert_eq(a->scopes, b->scopes);
    cr_assert_eq(a->created_us, b->created_us, "%lld != %lld", (long long)a->created_us,
                 (long long)b->created_us);
    cr_assert_eq(a->expires_us, b->expires_us, "%lld != %lld", (long long)a->expires_us,
                 (long long)b->expires_us);
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

Test(pg, credential_tokens_on_the_server)
{
    cstore_open(2, NULL);
    int64_t t0 = hk_wall_us();
    struct hk_token_rec a = token_rec("alpha", 1, HK_SCOPE_READ, 0);
    cr_assert_eq(token_put(&a), 0);
    cr_assert(a.created_us >= t0 && a.created_us <= hk_wall_us(), "created_us 0 becomes now");
    /* Far times, exact: the end of 9999, and an odd microsecond. */
    struct hk_token_rec b = token_rec("Beta-2.x_y", 2, HK_SCOPE_ALL, HK_STORE_TIME_MAX);
    b.created_us = 1234567;
    b.revoked_us = 99;   /* ignored */
    cr_assert_eq(token_put(&b), 0);
    cr_assert_eq(b.revoked_us, 0);
    struct hk_token_rec z = token_rec("_z", 3, HK_SCOPE_READ | HK_SCOPE_DELETE, INT64_C(9007199254740993));
    cr_assert_eq(token_put(&z), 0);

    struct hk_token_rec got;
    cr_assert_eq(token_get(1, &got), 0);
    assert_token_eq(&got, &a);
    cr_assert_eq(token_get(2, &got), 0);
    assert_token_eq(&got, &b);
    cr_assert_eq(token_get(3, &got), 0);
    assert_token_eq(&got, &z);
    cr_assert_eq(token_get(4, &got), HK_ENOTFOUND);

    /* Conflicts: a name or a hash stored already. */
    struct hk_token_rec same_name = token_rec("alpha", 9, HK_SCOPE_ADMIN, 0);
    cr_assert_eq(token_put(&same_name), HK_ECONFLICT);
    struct hk_token_rec same_hash = token_rec("other", 1, HK_SCOPE_ADMIN, 0);
    cr_assert_eq(token_put(&same_hash), HK_ECONFLICT);
    cr_assert_eq(db_count(cs.db, "SELECT count(*) FROM api_tokens"), 3);

    /* Byte order of names whatever the database's collation. */
    struct cred r;
    cr_assert_eq(token_list(0, &r), 0);
    cr_assert_eq(r.ntokens, 3);
    cr_assert_str_eq(r.names[0], "Beta-2.x_y");
    cr_assert_str_eq(r.names[1], "_z");
    cr_assert_str_eq(r.names[2], "alpha");
    assert_token_eq(&r.last, &a);
    cr_assert_eq(token_list(1, &r), 0);
    cr_assert_eq(r.ntokens, 1);

    struct hk_token_rec rv, rv2;
    int64_t r0 = hk_wall_us();
    cr_assert_eq(token_revoke("alpha", &rv), 0);
    cr_assert(rv.revoked_us >= r0 && rv.revoked_us <= hk_wall_us());
    cr_assert_eq(rv.created_us, a.created_us);
    usleep(2000);
    cr_assert_eq(token_revoke("alpha", &rv2), 0);
    cr_assert_eq(rv2.revoked_us, rv.revoked_us, "revoking again keeps the first time");
    cr_assert_eq(token_revoke("alpha", NULL), 0);
    cr_assert_eq(token_revoke("nobody", NULL), HK_ENOTFOUND);
    cr_assert_eq(token_get(1, &got), 0);
    cr_assert_eq(got.revoked_us, rv.revoked_us);
    cr_assert_eq(token_get(2, &got), 0);
    cr_assert_eq(got.revoked_us, 0);

    /* The same, for another process: tokens outlive the store. */
    cstore_detach();
    cstore_attach(1);
    cr_assert_eq(token_get(1, &got), 0);
    a.revoked_us = rv.revoked_us;
    assert_token_eq(&got, &a);
    cr_assert_eq(token_get(2, &got), 0);
    assert_token_eq(&got, &b);
    cr_assert_eq(db_count(cs.db, "SELECT count(*) FROM api_tokens WHERE expires_at IS NULL"), 1);
    cr_assert_eq(db_count(cs.db, "SELECT count(*) FROM api_tokens WHERE expires_at"
                                 " = timestamptz '9999-12-31 23:59:59.999999+00'"), 1);

    /* Refused before the server: nothing sent, nothing stored. */
    struct hk_token_rec bad = token_rec("bad name", 5, HK_SCOPE_READ, 0);
    struct hk_store_op op;
    cred_op(&op, &r, HK_OP_TOKEN_PUT);
    op.token = &bad;
    cr_assert_eq(hk_store_submit(cs.sl, &op), 0);
    cr_assert_eq(r.dones, 1, "refused inside submit");
    cr_assert_eq(r.status, HK_EINVAL);
    bad = token_rec("t", 5, HK_SCOPE_READ, HK_STORE_TIME_MAX + 1);
    cr_assert_eq(token_put(&bad), HK_EINVAL);
    cr_assert_eq(db_count(cs.db, "SELECT count(*) FROM api_tokens"), 3);
    cstore_cleanup();
}

Test(pg, credential_sessions_on_the_server)
{
    cstore_open(2, NULL);
    int64_t now = hk_wall_us();
    struct hk_session_rec live = session_rec(1, "admin", HK_SCOPE_READ | HK_SCOPE_DELETE, now + 3600000000);
    cr_assert_eq(session_put(&live), 0);
    struct hk_session_rec dup = session_rec(1, "other", HK_SCOPE_ALL, now + 7200000000);
    cr_assert_eq(session_put(&dup), HK_ECONFLICT);
    struct hk_session_rec got;
    cr_assert_eq(session_get(1, &got), 0);
    assert_session_eq(&got, &live);
    cr_assert_eq(session_get(2, &got), HK_ENOTFOUND);

    struct hk_session_rec brief = session_rec(2, "admin", HK_SCOPE_READ, hk_wall_us() + 400000);
    cr_assert_eq(session_put(&brief), 0);
    cr_assert_eq(session_get(2, &got), 0);
    usleep(500000);
    cr_assert_eq(session_get(2, &got), HK_ENOTFOUND, "an expired session is not found");
    cr_assert_eq(db_count(cs.db, "SELECT count(*) FROM sessions"), 2);
    cr_assert_eq(session_del(2), HK_ENOTFOUND, "deleting an expired session: not found");
    cr_assert_eq(db_count(cs.db, "SELECT count(*) FROM sessions"), 1, "but deleted all the same");
    cr_assert_eq(session_del(1), 0);
    cr_assert_eq(session_del(1), HK_ENOTFOUND);
    cr_assert_eq(session_get(1, &got), HK_ENOTFOUND);

    struct hk_session_rec far = session_rec(3, "far", HK_SCOPE_READ, HK_STORE_TIME_MAX);
    cr_assert_eq(session_put(&far), 0);
    cr_assert_eq(session_get(3, &got), 0);
    assert_session_eq(&got, &far);
    cstore_cleanup();
}

/* Each SESSION_PUT deletes at most HK_STORE_SWEEP_MAX expired sessions
 * first, the longest expired first; live ones stay. */
Test(pg, credential_session_sweep_on_the_server)
{
    cstore_open(1, NULL);
    PQclear(db_exec(cs.db, "INSERT INTO sessions(hash, subject, scopes, csrf_hash, expires_at)"
                           " SELECT sha256(i::text::bytea), 'old', 1, sha256(i::text::bytea),"
                           " timestamptz 'epoch' + i * interval '1 second'"
                           " FROM generate_series(1, 40) i;"
                           "INSERT INTO sessions(hash, subject, scopes, csrf_hash, expires_at)"
                           " SELECT sha256(('live' || i)::bytea), 'live', 1, sha256(i::text::bytea),"
                           " now() + interval '1 day' FROM generate_series(1, 2) i"));
    int64_t later = hk_wall_us() + 3600000000;
    long left = 40;
    for (unsigned k = 0; k < 4; k++) {
        struct hk_session_rec s = session_rec(100 + k, "new", HK_SCOPE_READ, later);
        cr_assert_eq(session_put(&s), 0);
        left = left > HK_STORE_SWEEP_MAX ? left - HK_STORE_SWEEP_MAX : 0;
        cr_assert_eq(db_count(cs.db, "SELECT count(*) FROM sessions WHERE subject = 'old'"), left,
                     "after put %u", k);
        if (left > 0)
            cr_assert_eq(db_count(cs.db, "SELECT extract(epoch FROM min(expires_at))::int8"
                                         " FROM sessions WHERE subject = 'old'"),
                         40 - left + 1, "the longest expired go first");
    }
    cr_assert_eq(db_count(cs.db, "SELECT count(*) FROM sessions WHERE subject = 'live'"), 2);
    cr_assert_eq(db_count(cs.db, "SELECT count(*) FROM sessions WHERE subject = 'new'"), 4);
    cstore_cleanup();
}

/* A name stored already is "no change", not a failing statement: the ops
 * sharing its pipeline group go through once, untouched. */
Test(pg, credential_conflict_leaves_its_group_alone)
{
    cstore_open(1, NULL);
    struct hk_token_rec x = token_rec("twin", 10, HK_SCOPE_READ, 0);
    struct hk_token_rec y = token_rec("twin", 11, HK_SCOPE_READ, 0);
    struct hk_session_rec s = session_rec(7, "twin", HK_SCOPE_READ, hk_wall_us() + 3600000000);
    struct hk_store_op ops[5];
    struct cred rs[5];
    cred_op(&ops[0], &rs[0], HK_OP_TOKEN_PUT);
    ops[0].token = &x;
    cred_op(&ops[1], &rs[1], HK_OP_TOKEN_PUT);
    ops[1].token = &y;
    cred_op(&ops[2], &rs[2], HK_OP_SESSION_PUT);
    ops[2].session = &s;
    cred_op(&ops[3], &rs[3], HK_OP_TOKEN_REVOKE);
    ops[3].name = "twin";
    cred_op(&ops[4], &rs[4], HK_OP_SESSION_DEL);
    ops[4].session = &s;
    for (int i = 0; i < 5; i++)
        cr_assert_eq(hk_store_submit(cs.sl, &ops[i]), 0);
    struct cred *all[] = {&rs[0], &rs[1], &rs[2], &rs[3], &rs[4]};
    cred_wait(all, 5);
    cr_assert_eq(rs[0].status, 0);
    cr_assert_eq(rs[1].status, HK_ECONFLICT, "the second twin, in the same group");
    cr_assert_eq(rs[2].status, 0);
    cr_assert_eq(rs[3].status, 0, "the group's own insert is visible to its revoke");
    cr_assert_eq(rs[4].status, HK_ENOTFOUND, "the revoke ended twin's session first");
    struct hk_token_rec got;
    cr_assert_eq(token_get(10, &got), 0);
    cr_assert_gt(got.revoked_us, 0);
    cr_assert_eq(token_get(11, &got), HK_ENOTFOUND);
    cr_assert_eq(db_count(cs.db, "SELECT count(*) FROM sessions"), 0);
    cstore_cleanup();
}

/* Revoking a token ends the sessions made from it (subject = its name) in
 * the same statement, and only those; a repeated revoke does so again. */
Test(pg, credential_revoke_deletes_its_sessions)
{
    cstore_open(1, NULL);
    int64_t later = hk_wall_us() + 3600000000;
    struct hk_token_rec a = token_rec("ci-a", 1, HK_SCOPE_READ, 0);
    struct hk_token_rec b = token_rec("ci-b", 2, HK_SCOPE_READ, 0);
    cr_assert_eq(token_put(&a), 0);
    cr_assert_eq(token_put(&b), 0);
    struct hk_session_rec a1 = session_rec(1, "ci-a", HK_SCOPE_READ, later);
    struct hk_session_rec a2 = session_rec(2, "ci-a", HK_SCOPE_READ, later);
    struct hk_session_rec b1 = session_rec(3, "ci-b", HK_SCOPE_READ, later);
    cr_assert_eq(session_put(&a1), 0);
    cr_assert_eq(session_put(&a2), 0);
    cr_assert_eq(session_put(&b1), 0);

    struct hk_session_rec got;
    struct hk_token_rec rv;
    cr_assert_eq(token_revoke("nobody", NULL), HK_ENOTFOUND);
    cr_assert_eq(db_count(cs.db, "SELECT count(*) FROM sessions"), 3);
    cr_assert_eq(token_revoke("ci-a", &rv), 0);
    cr_assert_str_eq(rv.name, "ci-a");
    cr_assert_gt(rv.revoked_us, 0);
    cr_assert_eq(session_get(1, &got), HK_ENOTFOUND, "the revoked token's sessions end");
    cr_assert_eq(session_get(2, &got), HK_ENOTFOUND);
    cr_assert_eq(session_get(3, &got), 0, "another token's session stays");
    assert_session_eq(&got, &b1);

    /* Revoking again (already revoked) deletes again. */
    struct hk_session_rec a3 = session_rec(4, "ci-a", HK_SCOPE_READ, later);
    cr_assert_eq(session_put(&a3), 0);
    cr_assert_eq(token_revoke("ci-a", NULL), 0);
    cr_assert_eq(session_get(4, &got), HK_ENOTFOUND);
    cr_assert_eq(session_get(3, &got), 0);
    cr_assert_eq(db_count(cs.db, "SELECT count(*) FROM sessions WHERE subject = 'ci-a'"), 0);
    cr_assert_eq(db_count(cs.db, "SELECT count(*) FROM sessions WHERE subject = 'ci-b'"), 1);
    cstore_cleanup();
}

/* A schema of version 1 (webhooks only) gains the credential tables under
 * the advisory lock and keeps its rows. */
Test(pg, credential_tables_migrate_from_version_1)
{
    cstore_open(1, "CREATE TABLE schema_version(version integer NOT NULL);"
                   "INSERT INTO schema_version(version) VALUES(1);"
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
                   "INSERT INTO webhooks(source, event_type, payload, received_at)"
                   " VALUES('gh', 'push', '{}', now())");
    cr_assert_eq(db_count(cs.db, "SELECT version FROM schema_version"), 5);
    cr_assert_eq(db_count(cs.db, "SELECT count(*) FROM schema_version"), 1);
    cr_assert_eq(db_count(cs.db, "SELECT count(*) FROM webhooks"), 1);
    cr_assert_eq(db_count(cs.db, "SELECT count(*) FROM pg_indexes WHERE indexname = 'sessions_expires'"
                                 " AND schemaname = current_schema()"), 1);
    struct cred r;
    cr_assert_eq(token_list(1, &r), 0);
    cr_assert_eq(r.ntokens, 0);
    struct hk_token_rec t = token_rec("first", 1, HK_SCOPE_ALL, 0);
    cr_assert_eq(token_put(&t), 0);
    cr_assert_eq(token_list(1, &r), 0);
    cr_assert_eq(r.ntokens, 1);
    cstore_cleanup();
}
