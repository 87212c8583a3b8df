/* SPDX-License-Identifier: MIT
 * The SQLite store failing for real, from outside: a database another
 * process holds locked, and a full disk (the database on a tiny tmpfs in a
 * private mount namespace; root only). Either way hookd answers 503/507 with
 * Retry-After and a stable reason, never 500, logs one line for the spell,
 * says not ready while it lasts, keeps serving reads, and comes back by
 * itself once the cause is gone, without a client write to nudge it. */
#include <criterion/criterion.h>

#include <errno.h>
#include <inttypes.h>
#include <poll.h>
#include <signal.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "harness.h"

static struct hk_server srv;

static void teardown(void)
{
    hk_server_cleanup(&srv);
}

TestSuite(storefail, .fini = teardown, .timeout = 60);

/* Lines of the server's stderr that contain both `a` and `b`. */
static int log_lines(const struct hk_server *s, const char *a, const char *b)
{
    char *text = hk_server_stderr(s);
    int n = 0;
    for (char *line = text, *end; *line; line = end + 1) {
        end = strchr(line, '\n');
        if (end == NULL)
            end = line + strlen(line) - 1;
        else
            *end = '\0';
        n += strstr(line, a) != NULL && strstr(line, b) != NULL;
    }
    free(text);
    return n;
}

/* Warn lines but the one every start with HOOKD_AUTH=off (the harness's
 * default) writes. */
static int warn_lines(const struct hk_server *s)
{
    return log_lines(s, "\"level\":\"warn\"", "") - log_lines(s, "\"level\":\"warn\"", "access control is off");
}

/* The answer to a write the store cannot take: `status`, Retry-After,
 * problem+json with `reason`, and no internal code anywhere in the body. */
static void assert_unavailable(const struct hk_resp *r, long status, const char *reason,
                               const char *retry_after)
{
    json_t *j = hk_assert_problem(r, status);
    cr_assert_str_eq(hk_jstr(j, "reason"), reason, "%s", r->body);
    char v[32];
    cr_assert_not_null(hk_header(r, "Retry-After", v, sizeof v), "no Retry-After: %s", r->head);
    cr_assert_str_eq(v, retry_after);
    cr_assert_null(strstr(r->body, "code"), "%s", r->body);
    cr_assert_null(strstr(r->body, "-100"), "%s", r->body);
    json_decref(j);
}

static long ready_status(const struct hk_server *s)
{
    struct hk_resp r;
    hk_get(s, "/q/health/ready", &r);
    long st = r.status;
    if (st == 503)
        cr_assert_not_null(strstr(r.body, "\"status\":\"DOWN\""), "%s", r.body);
    hk_resp_free(&r);
    return st;
}

/* Poll readiness until it answers `want`; no write is sent meanwhile. */
static bool ready_becomes(const struct hk_server *s, long want, int ms)
{
    int64_t deadline = hk_now_ms() + ms;
    do {
        if (ready_status(s) == want)
            return true;
        hk_sleep_ms(50);
    } while (hk_now_ms() < deadline);
    return false;
}

static void post(const struct hk_server *s, const char *body, struct hk_resp *r)
{
    hk_post_json(s, "/api/webhooks", body, r);
}

#define SMALL "{\"source\":\"gh\",\"eventType\":\"push\",\"payload\":\"small\"}"

/* ---- a locked database ---- */

Test(storefail, locked_database_is_503_database_locked_and_recovers)
{
    if (hk_store_is_pg())
        cr_skip("SQLite only");
    const char *env[] = {"HOOKD_SQLITE_BUSY_MS=100", NULL};
    hk_server_start(&srv, env);
    int64_t id = hk_create(&srv, "gh", "push", "before");

    /* Another process takes the write lock and keeps it. */
    sqlite3 *db;
    cr_assert_eq(sqlite3_open_v2(srv.db_path, &db, SQLITE_OPEN_READWRITE, NULL), SQLITE_OK);
    sqlite3_busy_timeout(db, 2000);
    cr_assert_eq(sqlite3_exec(db, "BEGIN EXCLUSIVE", NULL, NULL, NULL), SQLITE_OK, "%s",
                 sqlite3_errmsg(db));

    for (int i = 0; i < 8; i++) {
        struct hk_resp r;
        post(&srv, SMALL, &r);
        assert_unavailable(&r, 503, "database_locked", "1");
        hk_resp_free(&r);
    }
    cr_assert_eq(ready_status(&srv), 503, "ready while writes fail");
    struct hk_resp r;
    char path[64];
    snprintf(path, sizeof path, "/api/webhooks/%" PRId64, id);
    hk_get(&srv, path, &r);
    json_decref(hk_assert_json(&r, 200));
    hk_resp_free(&r);
    /* Still locked after the writer's probes: still not ready. */
    hk_sleep_ms(1300);
    cr_assert_eq(ready_status(&srv), 503);

    cr_assert_eq(sqlite3_exec(db, "ROLLBACK", NULL, NULL, NULL), SQLITE_OK);
    cr_assert_eq(sqlite3_close(db), SQLITE_OK);
    cr_assert(ready_becomes(&srv, 200, 5000), "not ready again within 5 s of the lock going");
    int64_t id2 = hk_create(&srv, "gh", "push", "after");
    cr_assert_gt(id2, id);

    cr_assert_eq(warn_lines(&srv), 1, "one warn line for the spell");
    cr_assert_eq(log_lines(&srv, "\"level\":\"warn\"", "\"reason\":\"database_locked\""), 1);
    cr_assert_eq(log_lines(&srv, "\"level\":\"error\"", ""), 0);
    cr_assert_eq(log_lines(&srv, "sqlite writes recovered", "database_locked"), 1);
    hk_finish(&srv);
}

/* ---- a full disk ---- */

/* Mount a 4 MiB tmpfs on $1 in a mount namespace of hookd's own, put a
 * 2 MiB filler file there (the space the test frees later), and become
 * hookd ($2): same pid throughout, so /proc/<pid>/root reaches the mount. */
#define FULL_DISK_SH \
    "set -e; mount -t tmpfs -o size=4m,mode=0700 hookd-full \"$1\"; " \
    "dd if=/dev/zero of=\"$1/filler\" bs=64k count=32 status=none; exec \"$2\""

/* The ready line on the child's stdout gives the port. */
static void wait_started(struct hk_server *s)
{
    char line[512];
    size_t n = 0;
    int64_t deadline = hk_now_ms() + 10000;
    for (;;) {
        int64_t left = deadline - hk_now_ms();
        struct pollfd p = {s->out_fd, POLLIN, 0};
        if (left <= 0 || (poll(&p, 1, (int)left) < 0 && errno != EINTR))
            break;
        char c;
        ssize_t k = read(s->out_fd, &c, 1);
        if (k < 0 && (errno == EINTR || errno == EAGAIN))
            continue;
        if (k <= 0 || c == '\n')
            break;
        if (n + 1 < sizeof line)
            line[n++] = c;
    }
    line[n] = '\0';
    const char *m = strstr(line, "http://127.0.0.1:");
    if (m != NULL)
        s->port = atoi(m + strlen("http://127.0.0.1:"));
    if (m == NULL || s->port <= 0) {
        char *err = hk_server_stderr(s);
        cr_assert_fail("hookd did not start in its tmpfs (stdout: \"%s\")\nstderr:\n%s", line, err);
    }
    snprintf(s->started_line, sizeof s->started_line, "%s", line);
}

static char *big_body(size_t pad)
{
    const char *head = "{\"source\":\"fill\",\"eventType\":\"e\",\"payload\":\"";
    size_t hl = strlen(head);
    char *b = malloc(hl + pad + 3);
    cr_assert_not_null(b);
    memcpy(b, head, hl);
    memset(b + hl, 'x', pad);
    strcpy(b + hl + pad, "\"}");
    return b;
}

Test(storefail, full_disk_is_507_disk_full_and_recovers)
{
    if (hk_store_is_pg())
        cr_skip("SQLite only");
    if (geteuid() != 0)
        cr_skip("needs root: puts the database on a tmpfs mounted in a private mount namespace "
                "(CI runs the tests as root, so it runs there)");
    const char *bin = getenv("HOOKD_BIN");
    cr_assert(bin != NULL && *bin, "HOOKD_BIN is not set");
    cr_assert_eq(system("unshare -m true"), 0,
                 "running as root but cannot make a mount namespace (unshare -m): this test "
                 "needs CAP_SYS_ADMIN");

    memset(&srv, 0, sizeof srv);
    srv.out_fd = -1;
    snprintf(srv.dir, sizeof srv.dir, "/tmp/hookd-storefail-XXXXXX");
    cr_assert_not_null(mkdtemp(srv.dir));
    char mnt[128], dbenv[400], filler[400];
    snprintf(mnt, sizeof mnt, "%.100s/mnt", srv.dir);
    cr_assert_eq(mkdir(mnt, 0700), 0);
    snprintf(srv.db_path, sizeof srv.db_path, "%s/hookd.db", mnt);
    snprintf(srv.stderr_path, sizeof srv.stderr_path, "%s/stderr.log", srv.dir);
    snprintf(dbenv, sizeof dbenv, "HOOKD_SQLITE_PATH=%s", srv.db_path);
    const char *env[] = {dbenv, NULL};
    const char *argv[] = {"unshare", "-m", "--propagation", "private",
                          "sh", "-c", FULL_DISK_SH, "sh", mnt, bin, NULL};
    srv.pid = hk_spawn_cmd(srv.dir, env, argv, -1, &srv.out_fd, srv.stderr_path);
    wait_started(&srv);
    snprintf(filler, sizeof filler, "/proc/%d/root%s/filler", (int)srv.pid, mnt);
    cr_assert_eq(access(filler, F_OK), 0, "cannot reach the filler in hookd's mount: %s",
                 strerror(errno));
    int64_t first = hk_create(&srv, "gh", "push", "first");

    /* Fill the rest of the disk, 64 KiB a webhook. Never a 500. */
    char *body = big_body(64 * 1024);
    struct hk_resp r;
    int stored = 0;
    for (;;) {
        post(&srv, body, &r);
        if (r.status != 201)
            break;
        hk_resp_free(&r);
        stored++;
        cr_assert_lt(stored, 200, "4 MiB should be full by now");
    }
    cr_assert_gt(stored, 5, "the disk was full too soon");
    assert_unavailable(&r, 507, "disk_full", "30");
    hk_resp_free(&r);
    for (int i = 0; i < 10; i++) {
        post(&srv, body, &r);
        assert_unavailable(&r, 507, "disk_full", "30");
        hk_resp_free(&r);
    }
    cr_assert_eq(ready_status(&srv), 503, "ready on a full disk");

    /* Reads go on. */
    char path[64];
    snprintf(path, sizeof path, "/api/webhooks/%" PRId64, first);
    hk_get(&srv, path, &r);
    json_decref(hk_assert_json(&r, 200));
    hk_resp_free(&r);
    hk_get(&srv, "/api/webhooks?limit=3", &r);
    json_decref(hk_assert_json(&r, 200));
    hk_resp_free(&r);
    /* Still full after a probe period: still not ready, still one line. */
    hk_sleep_ms(1300);
    cr_assert_eq(ready_status(&srv), 503);
    cr_assert_eq(warn_lines(&srv), 1, "one warn line for the spell");
    cr_assert_eq(log_lines(&srv, "\"level\":\"warn\"", "\"reason\":\"disk_full\""), 1);

    /* Someone frees space: hookd is ready again by itself, and takes writes. */
    cr_assert_eq(unlink(filler), 0, "rm %s: %s", filler, strerror(errno));
    cr_assert(ready_becomes(&srv, 200, 5000), "not ready again within 5 s of freeing space");
    post(&srv, SMALL, &r);
    json_decref(hk_assert_json(&r, 201));
    hk_resp_free(&r);
    free(body);

    cr_assert_eq(warn_lines(&srv), 1);
    cr_assert_eq(log_lines(&srv, "\"level\":\"error\"", ""), 0);
    cr_assert_eq(log_lines(&srv, "sqlite writes recovered", "disk_full"), 1);
    hk_finish(&srv);
}
