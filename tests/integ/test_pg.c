/* SPDX-License-Identifier: MIT
 * PostgreSQL only: the server going away under load and coming back, a
 * query stuck behind a lock (timeout and queue bound), several hookd
 * processes on one database, passwords kept out of logs, an unreachable
 * database at start, and one client's failing statements beside everyone
 * else's requests. Runs in the integ-pg suite; the fault test starts a
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

#include "harness.h"

static struct hk_server srv, srv2, srv3;
static char cluster[256];   /* private cluster directory, "" when none */

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
    cr_assert_gt(count[R_POISON], 50, "too few poisoned requests to mean anything: %d", count[R_POISON]);
    cr_assert_gt(count[R_WRITE], 200, "too few writes: %d", count[R_WRITE]);
    cr_assert_eq(bad[R_WRITE], 0, "%d of %d innocent POSTs failed beside a failing statement", bad[R_WRITE],
                 count[R_WRITE]);
    cr_assert_eq(bad[R_LIST], 0, "%d of %d lists failed beside a failing statement", bad[R_LIST], count[R_LIST]);
    cr_assert_eq(bad[R_STREAM], 0, "%d of %d streamed lists failed or came short beside a failing statement",
                 bad[R_STREAM], count[R_STREAM]);
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
