/* SPDX-License-Identifier: MIT
 * The process around the server: command line, configuration errors, the
 * ready line, structured logs, graceful shutdown and durability across a
 * SIGKILL and restart. */
#include <criterion/criterion.h>

#include <errno.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "harness.h"

static struct hk_server srv;

static void teardown(void)
{
    hk_server_cleanup(&srv);
}

TestSuite(lifecycle, .fini = teardown, .timeout = 60);

#define LIVE "GET /q/health/live HTTP/1.1\r\nHost: localhost\r\n\r\n"

static int count_lines(const char *s)
{
    int n = 0;
    for (; *s; s++)
        n += *s == '\n';
    return n;
}

/* ---- command line ---- */

Test(lifecycle, version_flag)
{
    const char *args[] = {"--version", NULL};
    char *out, *err;
    int st = hk_run(NULL, args, 2000, &out, &err);
    cr_assert(st != -1 && WIFEXITED(st) && WEXITSTATUS(st) == 0, "--version: status 0x%x, stderr: %s", st, err);
    cr_assert_str_eq(out, "hookd 0.1.0\n");
    free(out);
    free(err);
}

Test(lifecycle, help_flag)
{
    const char *args[] = {"--help", NULL};
    char *out, *err;
    int st = hk_run(NULL, args, 2000, &out, &err);
    cr_assert(st != -1 && WIFEXITED(st) && WEXITSTATUS(st) == 0, "--help: status 0x%x, stderr: %s", st, err);
    cr_assert(strstr(out, "PORT") || strstr(err, "PORT"), "--help does not mention PORT:\n%s%s", out, err);
    cr_assert(strstr(out, "HOOKD_MAX_BODY_BYTES") || strstr(err, "HOOKD_MAX_BODY_BYTES"),
              "--help does not list HOOKD_MAX_BODY_BYTES");
    free(out);
    free(err);
}

Test(lifecycle, flags_work_like_env)
{
    /* No PORT or HOOKD_HOST in the environment: the flags alone decide. */
    const char *env[] = {"PORT", "HOOKD_HOST", "HOOKD_THREADS", NULL};
    const char *args[] = {"--port", "0", "--host", "127.0.0.1", "--threads", "1", NULL};
    hk_server_start_args(&srv, env, args);
    hk_assert_alive(&srv);
    hk_server_stop_clean(&srv);
    hk_server_cleanup(&srv);

    /* --flag=value, and a flag wins over its variable. */
    const char *env2[] = {"HOOKD_HOST=0.0.0.0", "PORT=1", NULL};
    const char *args2[] = {"--host=127.0.0.1", "--port=0", NULL};
    hk_server_start_args(&srv, env2, args2);
    cr_assert(strstr(srv.started_line, "http://127.0.0.1:"), "%s", srv.started_line);
    hk_finish(&srv);
}

struct bad_case {
    const char *env;      /* NAME=value, or NULL */
    const char *args[4];  /* flags, or empty */
    const char *name;     /* must appear on the line */
};

static void expect_config_error(const struct bad_case *c)
{
    const char *env[] = {c->env, NULL};
    char *out, *err;
    int64_t t0 = hk_now_ms();
    int st = hk_run(c->env ? env : NULL, c->args, 2000, &out, &err);
    int64_t dt = hk_now_ms() - t0;
    const char *what = c->env ? c->env : c->args[0];
    cr_assert(st != -1, "%s: still running after 2 s (stdout: %s)", what, out);
    cr_assert(WIFEXITED(st) && WEXITSTATUS(st) != 0, "%s: exit status 0x%x, expected a non-zero exit", what, st);
    cr_assert_lt(dt, 2000, "%s: took %" PRId64 " ms", what, dt);
    cr_assert(!strstr(out, "started"), "%s: printed the ready line: %s", what, out);
    cr_assert_eq(count_lines(err), 1, "%s: expected exactly one line on stderr, got:\n%s", what, err);
    cr_assert(strstr(err, c->name), "%s: the error line does not name %s: %s", what, c->name, err);
    free(out);
    free(err);
}

Test(lifecycle, invalid_config_fails_fast_with_one_line)
{
    static const struct bad_case cases[] = {
        {"PORT=abc", {NULL}, "PORT"},
        {"PORT=70000", {NULL}, "PORT"},
        {"PORT=-1", {NULL}, "PORT"},
        {"HOOKD_THREADS=0", {NULL}, "HOOKD_THREADS"},
        {"HOOKD_THREADS=two", {NULL}, "HOOKD_THREADS"},
        {"HOOKD_MAX_BODY_BYTES=-1", {NULL}, "HOOKD_MAX_BODY_BYTES"},
        {"HOOKD_MAX_BODY_BYTES=1k", {NULL}, "HOOKD_MAX_BODY_BYTES"},
        {"HOOKD_HEADER_TIMEOUT=xyz", {NULL}, "HOOKD_HEADER_TIMEOUT"},
        {"HOOKD_IDLE_TIMEOUT=-5s", {NULL}, "HOOKD_IDLE_TIMEOUT"},
        {"HOOKD_MAX_CONNECTIONS=0", {NULL}, "HOOKD_MAX_CONNECTIONS"},
        {"HOOKD_MAX_HEADER_BYTES=99999999999", {NULL}, "HOOKD_MAX_HEADER_BYTES"},
        {NULL, {"--port", "abc", NULL}, "PORT"},
        {NULL, {"--threads=0", NULL}, "HOOKD_THREADS"},
        {NULL, {"--no-such-flag", NULL}, "--no-such-flag"},
        {NULL, {"--port", NULL}, "port"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
        expect_config_error(&cases[i]);
}

Test(lifecycle, unusable_database_path_fails_fast)
{
    if (hk_store_is_pg())
        cr_skip_test("HOOKD_SQLITE_PATH is the SQLite store's; the integ suite covers it");
    const char *env[] = {"HOOKD_SQLITE_PATH=/proc/hookd-no-such-dir/x.db", NULL};
    char *out, *err;
    int st = hk_run(env, NULL, 3000, &out, &err);
    cr_assert(st != -1, "still running with an unusable database path (stdout: %s)", out);
    cr_assert(WIFEXITED(st) && WEXITSTATUS(st) != 0, "exit status 0x%x", st);
    cr_assert(!strstr(out, "started"), "printed the ready line: %s", out);
    cr_assert_gt(strlen(err), 0, "nothing on stderr");
    free(out);
    free(err);
}

/* A start that fails on a value holding quotes still logs one line of
 * valid JSON that carries the value intact. */
Test(lifecycle, start_failure_line_is_json)
{
    static const char *const cases[][2] = {
        {"HOOKD_HOST=no\"such\"host.invalid", "no\"such\"host.invalid"},
        {"HOOKD_SQLITE_PATH=/proc/hookd-\"no\"-dir/x.db", "/proc/hookd-\"no\"-dir/x.db"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        if (i == 1 && hk_store_is_pg())
            continue;
        const char *env[] = {cases[i][0], NULL};
        char *out, *err;
        int st = hk_run(env, NULL, 5000, &out, &err);
        cr_assert(st != -1 && WIFEXITED(st) && WEXITSTATUS(st) != 0, "%s: status 0x%x", cases[i][0], st);
        cr_assert_eq(count_lines(err), 1, "%s: expected one line on stderr, got:\n%s", cases[i][0], err);
        json_error_t e;
        json_t *j = json_loads(err, 0, &e);
        cr_assert(j != NULL, "%s: not JSON (%s): %s", cases[i][0], e.text, err);
        const char *level = json_string_value(json_object_get(j, "level"));
        cr_assert(level && strcmp(level, "error") == 0, "%s: %s", cases[i][0], err);
        cr_assert(strstr(err, "\\\"no") || strstr(err, "no\\\""), "%s: value not escaped: %s", cases[i][0], err);
        char *dump = json_dumps(j, 0);
        int found = 0;
        const char *k;
        json_t *v;
        json_object_foreach(j, k, v)
        {
            if (json_is_string(v) && strstr(json_string_value(v), cases[i][1]))
                found = 1;
        }
        cr_assert(found, "%s: no field carries the value: %s", cases[i][0], dump);
        free(dump);
        json_decref(j);
        free(out);
        free(err);
    }
}

/* ---- the ready line and logs ---- */

Test(lifecycle, ready_line_format)
{
    hk_server_start(&srv, NULL);
    cr_assert(hk_matches(srv.started_line,
                         "^hookd [0-9.]+ started in [0-9]+\\.[0-9]{6}s\\. Listening on: "
                         "http://127\\.0\\.0\\.1:[0-9]+$"),
              "ready line: \"%s\"", srv.started_line);
    char want[64];
    snprintf(want, sizeof want, "http://127.0.0.1:%d", srv.port);
    cr_assert(strstr(srv.started_line, want), "%s", srv.started_line);
    cr_assert(strncmp(srv.started_line, "hookd 0.1.0 started in ", 23) == 0, "%s", srv.started_line);
    /* Nothing else on stdout. */
    char *more = hk_read_all_fd(srv.out_fd, 200, NULL);
    cr_assert_str_eq(more, "", "more output on stdout after the ready line: %s", more);
    free(more);
    hk_finish(&srv);
}

Test(lifecycle, stderr_lines_are_json_objects)
{
    const char *env[] = {"HOOKD_LOG_LEVEL=debug", NULL};
    hk_server_start(&srv, env);
    hk_create(&srv, "log", "e", "p");
    struct hk_resp r;
    hk_get(&srv, "/nope", &r);
    hk_resp_free(&r);
    int fd = hk_tcp_connect(&srv);
    hk_tcp_sends(fd, "BAD\r\n\r\n");
    struct hk_raw raw = {0};
    hk_tcp_read(fd, &raw, 0, 2000);
    hk_tcp_close(fd);
    hk_raw_free(&raw);
    hk_finish(&srv);

    char *log = hk_server_stderr(&srv);
    int n = 0;
    for (char *line = strtok(log, "\n"); line; line = strtok(NULL, "\n")) {
        json_error_t e;
        json_t *j = json_loads(line, 0, &e);
        cr_assert(j, "stderr line %d is not JSON (%s): %s", n + 1, e.text, line);
        cr_assert(json_is_object(j), "stderr line %d is not an object: %s", n + 1, line);
        cr_assert(json_is_string(json_object_get(j, "level")), "line %d without level: %s", n + 1, line);
        cr_assert(json_is_string(json_object_get(j, "msg")), "line %d without msg: %s", n + 1, line);
        json_decref(j);
        n++;
    }
    cr_assert_gt(n, 0, "nothing logged at debug level over a start, requests and a stop");
    free(log);
}

/* ---- shutdown ---- */

Test(lifecycle, sigterm_idle_exits_zero_quickly)
{
    hk_server_start(&srv, NULL);
    hk_assert_alive(&srv);
    int64_t t0 = hk_now_ms();
    int st = hk_server_stop_within(&srv, 2000);
    cr_assert(st != -1, "no exit within 2 s of SIGTERM");
    cr_assert(WIFEXITED(st) && WEXITSTATUS(st) == 0, "exit status 0x%x", st);
    cr_assert_lt(hk_now_ms() - t0, 2000);
}

Test(lifecycle, sigterm_with_idle_keep_alive_connection)
{
    hk_server_start(&srv, NULL);
    int fd = hk_tcp_connect(&srv);
    cr_assert_eq(hk_tcp_sends(fd, LIVE), 0);
    struct hk_raw raw = {0};
    hk_tcp_read(fd, &raw, 1, 3000);
    cr_assert_eq(raw.nfinal, 1);
    /* An idle keep-alive connection has nothing in flight: the server closes
     * it at once, and once the client closes too the exit must not wait. */
    int64_t t0 = hk_now_ms();
    cr_assert_eq(kill(srv.pid, SIGTERM), 0);
    cr_assert(hk_tcp_wait_closed(fd, &raw, 1000), "idle keep-alive connection not closed on SIGTERM");
    cr_assert_eq(raw.nfinal, 1, "bytes sent on the idle connection at shutdown:\n%s", raw.buf);
    hk_tcp_close(fd);
    fd = -1;
    int st = 0;
    int64_t left = 2000 - (hk_now_ms() - t0);
    cr_assert_eq(hk_wait_pid(srv.pid, left > 0 ? (int)left : 0, &st), 0,
                 "no exit within 2 s of SIGTERM with an idle keep-alive connection");
    srv.pid = 0;
    cr_assert(WIFEXITED(st) && WEXITSTATUS(st) == 0, "exit status 0x%x", st);
    hk_tcp_close(fd);
    hk_raw_free(&raw);
}

Test(lifecycle, sigterm_finishes_request_in_flight)
{
    hk_server_start(&srv, NULL);
    const char *body = "{\"source\":\"inflight\",\"eventType\":\"term\",\"payload\":\"x\"}";
    size_t blen = strlen(body), half = blen / 2;
    char head[512];
    snprintf(head, sizeof head,
             "POST /api/webhooks HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\n"
             "Content-Length: %zu\r\n\r\n", blen);
    int fd = hk_tcp_connect(&srv);
    cr_assert_eq(hk_tcp_sends(fd, head), 0);
    cr_assert_eq(hk_tcp_send(fd, body, half), 0);
    hk_sleep_ms(100);
    cr_assert_eq(kill(srv.pid, SIGTERM), 0);
    hk_sleep_ms(200);

    /* New connections are no longer served. */
    int fd2 = hk_tcp_try_connect(srv.port);
    if (fd2 >= 0) {
        hk_tcp_sends(fd2, LIVE);
        struct hk_raw r2 = {0};
        hk_tcp_read(fd2, &r2, 1, 1000);
        cr_assert_eq(r2.nfinal, 0, "a connection made after SIGTERM was served:\n%s", r2.buf);
        hk_tcp_close(fd2);
        hk_raw_free(&r2);
    } else {
        cr_assert_eq(-fd2, ECONNREFUSED, "connect after SIGTERM: %s", strerror(-fd2));
    }

    cr_assert_eq(hk_tcp_send(fd, body + half, blen - half), 0, "the in-flight connection was dropped");
    struct hk_raw raw = {0};
    hk_tcp_read(fd, &raw, 1, 3000);
    cr_assert_eq(raw.nfinal, 1, "no response to the in-flight request (closed %d): %s", raw.closed, raw.buf);
    cr_assert_eq(raw.r[0].status, 201, "%s", raw.buf);
    json_t *o = json_loadb(raw.r[0].body, raw.r[0].body_len, 0, NULL);
    int64_t id = hk_assert_webhook(o, "inflight", "term", "x");
    json_decref(o);
    hk_tcp_close(fd);
    hk_raw_free(&raw);

    int st = 0;
    cr_assert_eq(hk_wait_pid(srv.pid, 3000, &st), 0, "no exit within 3 s after the last request");
    srv.pid = 0;
    cr_assert(WIFEXITED(st) && WEXITSTATUS(st) == 0, "exit status 0x%x", st);

    /* And the row it acknowledged is there after a restart. */
    hk_server_restart(&srv);
    char path[64];
    snprintf(path, sizeof path, "/api/webhooks/%" PRId64, id);
    struct hk_resp r;
    hk_get(&srv, path, &r);
    json_decref(hk_assert_json(&r, 200));
    hk_resp_free(&r);
    hk_finish(&srv);
}

/* As a container's entrypoint hookd is PID 1, for which the kernel drops
 * every signal that has no handler: SIGTERM works only because hookd
 * installs one. Run it as PID 1 of a new PID namespace and do what a
 * container runtime does on `stop`, with a request in flight. */
Test(lifecycle, sigterm_as_pid1_finishes_request_in_flight)
{
    const char *probe[] = {"unshare", "--pid", "--fork", "true", NULL};
    char *e = NULL;
    int out;
    char dir[64] = "/tmp/hookd-pid1-XXXXXX", errlog[128];
    cr_assert(mkdtemp(dir));
    snprintf(errlog, sizeof errlog, "%s/stderr.log", dir);
    int st = 0;
    pid_t p = hk_spawn_cmd(dir, NULL, probe, -1, &out, errlog);
    if (hk_wait_pid(p, 3000, &st) < 0 || !WIFEXITED(st) || WEXITSTATUS(st) != 0) {
        kill(p, SIGKILL);
        hk_wait_pid(p, 1000, &st);
        cr_skip_test("unshare --pid --fork does not work here (not root, or no user namespaces)");
    }
    close(out);

    const char *argv[] = {"unshare", "--pid", "--fork", "--kill-child", getenv("HOOKD_BIN"), NULL};
    srv.pid = hk_spawn_cmd(dir, NULL, argv, -1, &srv.out_fd, errlog);
    snprintf(srv.dir, sizeof srv.dir, "%s", dir);
    snprintf(srv.stderr_path, sizeof srv.stderr_path, "%s", errlog);
    /* The ready line carries the port. */
    char line[256] = "";
    size_t n = 0;
    int64_t deadline = hk_now_ms() + 10000;
    while (n + 1 < sizeof line && hk_now_ms() < deadline) {
        char c;
        ssize_t r = read(srv.out_fd, &c, 1);
        if (r == 1 && c == '\n')
            break;
        if (r == 1)
            line[n++] = c;
        else if (r == 0)
            break;
    }
    line[n] = 0;
    const char *m = strstr(line, "http://127.0.0.1:");
    e = hk_server_stderr(&srv);
    cr_assert(m, "no ready line (got \"%s\"), stderr:\n%s", line, e);
    free(e);
    srv.port = atoi(m + strlen("http://127.0.0.1:"));

    /* hookd is unshare's only child, and PID 1 in its namespace. */
    char path[96], buf[256] = "";
    snprintf(path, sizeof path, "/proc/%d/task/%d/children", (int)srv.pid, (int)srv.pid);
    FILE *f = fopen(path, "r");
    cr_assert(f && fgets(buf, sizeof buf, f), "cannot read %s", path);
    fclose(f);
    pid_t child = (pid_t)atoi(buf);
    cr_assert_gt(child, 1);
    snprintf(path, sizeof path, "/proc/%d/status", (int)child);
    f = fopen(path, "r");
    cr_assert(f);
    char nspid[256] = "";
    while (fgets(buf, sizeof buf, f))
        if (strncmp(buf, "NSpid:", 6) == 0)
            snprintf(nspid, sizeof nspid, "%s", buf);
    fclose(f);
    cr_assert(hk_matches(nspid, "^NSpid:[[:space:]]+[0-9]+[[:space:]]+1[[:space:]]*$"), "not PID 1: %s", nspid);

    const char *body = "{\"source\":\"pid1\",\"eventType\":\"term\",\"payload\":\"x\"}";
    size_t blen = strlen(body), half = blen / 2;
    char head[512];
    snprintf(head, sizeof head,
             "POST /api/webhooks HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\n"
             "Content-Length: %zu\r\n\r\n", blen);
    int fd = hk_tcp_connect(&srv);
    cr_assert_eq(hk_tcp_sends(fd, head), 0);
    cr_assert_eq(hk_tcp_send(fd, body, half), 0);
    hk_sleep_ms(100);
    cr_assert_eq(kill(child, SIGTERM), 0);
    hk_sleep_ms(200);
    cr_assert_eq(hk_tcp_send(fd, body + half, blen - half), 0, "the in-flight connection was dropped");
    struct hk_raw raw = {0};
    hk_tcp_read(fd, &raw, 1, 3000);
    e = hk_server_stderr(&srv);
    cr_assert_eq(raw.nfinal, 1, "no response to the in-flight request as PID 1: %s\nstderr:\n%s", raw.buf, e);
    free(e);
    cr_assert_eq(raw.r[0].status, 201, "%s", raw.buf);
    hk_tcp_close(fd);
    hk_raw_free(&raw);
    /* unshare exits with its child's status. */
    cr_assert_eq(hk_wait_pid(srv.pid, 3000, &st), 0, "PID 1 did not exit within 3 s of SIGTERM");
    srv.pid = 0;
    e = hk_server_stderr(&srv);
    cr_assert(WIFEXITED(st) && WEXITSTATUS(st) == 0, "exit status 0x%x\nstderr:\n%s", st, e);
    cr_assert(strstr(e, "\"msg\":\"stopped\""), "no clean stop logged:\n%s", e);
    free(e);
}

/* ---- durability ---- */

static void body_numbered(int i, char *buf, size_t n)
{
    snprintf(buf, n, "{\"source\":\"dur%d\",\"eventType\":\"e\",\"payload\":\"n%d\"}", i % 7, i);
}

Test(lifecycle, acknowledged_writes_survive_sigkill)
{
    hk_server_start(&srv, NULL);
    enum { N = 200 };
    int64_t ids[N];
    int ok = hk_parallel_posts(&srv, 4, N, body_numbered, ids);
    int64_t max = 0;
    for (int i = 0; i < N; i++) {
        cr_assert_gt(ids[i], 0, "POST %d failed: %" PRId64 " (-status or -1000-curl)", i, ids[i]);
        if (ids[i] > max)
            max = ids[i];
    }
    cr_assert_eq(ok, N);
    hk_server_kill9(&srv);
    hk_server_restart(&srv);

    CURL *h = hk_curl_new();
    for (int i = 0; i < N; i++) {
        char path[64], src[16], payload[16];
        snprintf(path, sizeof path, "/api/webhooks/%" PRId64, ids[i]);
        snprintf(src, sizeof src, "dur%d", i % 7);
        snprintf(payload, sizeof payload, "n%d", i);
        struct hk_req req = {.path = path};
        struct hk_resp r;
        hk_do(&srv, h, &req, &r);
        cr_assert_eq(r.status, 200, "id %" PRId64 " (POST %d) acknowledged with 201 but lost after SIGKILL",
                     ids[i], i);
        json_t *o = hk_assert_json(&r, 200);
        hk_assert_webhook(o, src, "e", payload);
        json_decref(o);
        hk_resp_free(&r);
    }
    curl_easy_cleanup(h);
    int64_t next = hk_create(&srv, "after", "restart", NULL);
    cr_assert_gt(next, max, "id %" PRId64 " after restart is not above %" PRId64, next, max);
    hk_finish(&srv);
}

static void delete_id(int64_t id)
{
    char path[64];
    snprintf(path, sizeof path, "/api/webhooks/%" PRId64, id);
    struct hk_req req = {.method = "DELETE", .path = path};
    struct hk_resp r;
    hk_do(&srv, NULL, &req, &r);
    cr_assert_eq(r.status, 204, "DELETE %s: %ld", path, r.status);
    hk_resp_free(&r);
}

Test(lifecycle, deleted_highest_id_is_never_reused)
{
    hk_server_start(&srv, NULL);
    hk_create(&srv, "s", "e", NULL);
    hk_create(&srv, "s", "e", NULL);
    int64_t c = hk_create(&srv, "s", "e", NULL);
    delete_id(c);
    int64_t d = hk_create(&srv, "s", "e", NULL);
    cr_assert_gt(d, c, "id %" PRId64 " reused after deleting %" PRId64, d, c);
    delete_id(d);

    hk_server_stop_clean(&srv);
    hk_server_restart(&srv);
    int64_t e = hk_create(&srv, "s", "e", NULL);
    cr_assert_gt(e, d, "after a clean restart, id %" PRId64 " reused (deleted %" PRId64 ")", e, d);
    delete_id(e);

    hk_server_kill9(&srv);
    hk_server_restart(&srv);
    int64_t f = hk_create(&srv, "s", "e", NULL);
    cr_assert_gt(f, e, "after SIGKILL and restart, id %" PRId64 " reused (deleted %" PRId64 ")", f, e);

    struct hk_resp r;
    hk_get(&srv, "/api/webhooks", &r);
    json_t *a = hk_assert_json(&r, 200);
    cr_assert_eq(json_array_size(a), 3, "%s", r.body);
    json_decref(a);
    hk_resp_free(&r);
    hk_finish(&srv);
}

Test(lifecycle, idempotency_survives_restart)
{
    hk_server_start(&srv, NULL);
    const char *hs[] = {"Content-Type: application/json", "Idempotency-Key: restart-key", NULL};
    struct hk_req req = {.method = "POST", .path = "/api/webhooks", .headers = hs,
                         .body = "{\"source\":\"idem\",\"eventType\":\"e\"}"};
    struct hk_resp r;
    hk_do(&srv, NULL, &req, &r);
    json_t *o = hk_assert_json(&r, 201);
    int64_t id = hk_assert_webhook(o, "idem", "e", NULL);
    json_decref(o);
    hk_resp_free(&r);
    hk_server_kill9(&srv);
    hk_server_restart(&srv);
    hk_do(&srv, NULL, &req, &r);
    o = hk_assert_json(&r, 200);
    cr_assert_eq(hk_assert_webhook(o, "idem", "e", NULL), id);
    json_decref(o);
    hk_resp_free(&r);
    hk_finish(&srv);
}
