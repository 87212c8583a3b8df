/* SPDX-License-Identifier: MIT
 * Forwarding (docs/forwarding.md) through the real server, on SQLite and
 * (HOOKD_TEST_STORE=pg) PostgreSQL: every stored webhook reaches a real
 * sink (tests/forward/sink.py) as a CloudEvent, which the CloudEvents
 * JavaScript SDK then checks (tests/forward/check_events.sh); retries with
 * Retry-After, dead letters and redelivery; a sink that is down for a
 * while; kill -9 with an outbox of acknowledged webhooks; two replicas on
 * one PostgreSQL schema; the memory budget; configuration errors that keep
 * their secrets. */
#include <criterion/criterion.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "harness.h"

TestSuite(forward, .timeout = 120);

/* ---- the sink ------------------------------------------------------------ */

struct sink {
    pid_t pid;
    int port;
    char dir[64];
    char ledger[128];
};

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* Start tests/forward/sink.py (port 0: any) and read its port. */
static void sink_start(struct sink *k, int port)
{
    if (!k->dir[0]) {
        snprintf(k->dir, sizeof k->dir, "/tmp/hk_sink_XXXXXX");
        cr_assert_not_null(mkdtemp(k->dir));
        snprintf(k->ledger, sizeof k->ledger, "%s/ledger.jsonl", k->dir);
    }
    const char *src = getenv("SRC");
    char script[512];
    snprintf(script, sizeof script, "%s/tests/forward/sink.py", src ? src : "..");
    char portarg[16];
    snprintf(portarg, sizeof portarg, "%d", port);
    int pfd[2];
    cr_assert_eq(pipe(pfd), 0);
    pid_t pid = fork();
    cr_assert_neq(pid, -1);
    if (pid == 0) {
        /* A test that fails leaves without sink_cleanup: the sink goes too. */
        prctl(PR_SET_PDEATHSIG, SIGTERM);
        dup2(pfd[1], 1);
        close(pfd[0]);
        close(pfd[1]);
        execlp("python3", "python3", script, "--port", portarg, "--ledger", k->ledger, (char *)NULL);
        _exit(127);
    }
    close(pfd[1]);
    char buf[32] = "";
    size_t n = 0;
    struct pollfd p = {.fd = pfd[0], .events = POLLIN};
    while (n < sizeof buf - 1 && !memchr(buf, '\n', n) && poll(&p, 1, 10000) == 1) {
        ssize_t r = read(pfd[0], buf + n, sizeof buf - 1 - n);
        if (r <= 0)
            break;
        n += (size_t)r;
        buf[n] = '\0';
    }
    close(pfd[0]);
    k->pid = pid;
    k->port = atoi(buf);
    cr_assert_gt(k->port, 0, "the sink did not start (is %s there?)", script);
}

static void sink_stop(struct sink *k)
{
    if (k->pid > 0) {
        kill(k->pid, SIGTERM);
        int st;
        waitpid(k->pid, &st, 0);
    }
    k->pid = 0;
}

static void sink_cleanup(struct sink *k)
{
    sink_stop(k);
    if (k->dir[0]) {
        unlink(k->ledger);
        rmdir(k->dir);
    }
}

/* A request to the sink itself (control, ledger). */
static json_t *sink_call(const struct sink *k, const char *method, const char *path, const char *body)
{
    struct hk_server fake = {.port = k->port};
    struct hk_req req = {.method = method, .path = path, .body = body,
                         .headers = (const char *const[]){"Content-Type: application/json", NULL}};
    struct hk_resp r;
    cr_assert_eq(hk_request(&fake, NULL, &req, &r), CURLE_OK, "sink %s %s", method, path);
    cr_assert_eq(r.status, 200, "sink %s %s: %ld %s", method, path, r.status, r.body);
    json_t *j = json_loads(r.body, JSON_DECODE_ANY, NULL);
    hk_resp_free(&r);
    return j;
}

static void sink_rule(const struct sink *k, const char *rule)
{
    json_decref(sink_call(k, "POST", "/_control", rule));
}

/* The events recorded so far (a JSON array; caller decrefs). */
static json_t *sink_ledger(const struct sink *k)
{
    json_t *j = sink_call(k, "GET", "/_ledger", NULL);
    cr_assert(json_is_array(j));
    return j;
}

/* A header of a recorded event, or NULL. */
static const char *ev_header(json_t *ev, const char *name)
{
    size_t i;
    json_t *h;
    json_array_foreach(json_object_get(ev, "headers"), i, h)
        if (strcasecmp(json_string_value(json_array_get(h, 0)), name) == 0)
            return json_string_value(json_array_get(h, 1));
    return NULL;
}

/* How many recorded requests carry ce-id `id`. */
static int sink_count(json_t *ledger, int64_t id)
{
    char want[24];
    snprintf(want, sizeof want, "%" PRId64, id);
    int n = 0;
    size_t i;
    json_t *ev;
    json_array_foreach(ledger, i, ev) {
        const char *ce = ev_header(ev, "ce-id");
        if (ce && strcmp(ce, want) == 0)
            n++;
    }
    return n;
}

/* ---- a sources file ------------------------------------------------------ */

struct srcfile {
    char dir[64];
    char path[96];
    char env[128];             /* HOOKD_SOURCES=<path> */
};

/* Write `text` (printf-style) as a sources file in a fresh directory. */
static void srcfile_write(struct srcfile *sf, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void srcfile_write(struct srcfile *sf, const char *fmt, ...)
{
    snprintf(sf->dir, sizeof sf->dir, "/tmp/hk_fwd_src_XXXXXX");
    cr_assert_not_null(mkdtemp(sf->dir));
    snprintf(sf->path, sizeof sf->path, "%s/sources.yaml", sf->dir);
    FILE *f = fopen(sf->path, "w");
    cr_assert_not_null(f);
    va_list ap;
    va_start(ap, fmt);
    vfprintf(f, fmt, ap);
    va_end(ap);
    fclose(f);
    snprintf(sf->env, sizeof sf->env, "HOOKD_SOURCES=%s", sf->path);
}

static void srcfile_remove(const struct srcfile *sf)
{
    unlink(sf->path);
    rmdir(sf->dir);
}

/* ---- hookd ------------------------------------------------------------------ */

static void start_fwd(struct hk_server *s, const struct sink *k, const char *const *more)
{
    static char url[96];
    snprintf(url, sizeof url, "HOOKD_FORWARD_URL=http://127.0.0.1:%d/events", k->port);
    const char *env[HK_MAX_ENV];
    size_t n = 0;
    env[n++] = url;
    for (size_t i = 0; more && more[i]; i++)
        env[n++] = more[i];
    env[n] = NULL;
    hk_server_start(s, env);
}

/* GET /api/webhooks/{id}: the row (caller decrefs). */
static json_t *row_of(const struct hk_server *s, int64_t id)
{
    char path[64];
    snprintf(path, sizeof path, "/api/webhooks/%" PRId64, id);
    struct hk_resp r;
    hk_get(s, path, &r);
    json_t *j = hk_assert_json(&r, 200);
    hk_resp_free(&r);
    return j;
}

static const char *state_of(json_t *row)
{
    json_t *d = json_object_get(row, "delivery");
    return d ? json_string_value(json_object_get(d, "state")) : "(none)";
}

/* Wait (up to `secs`) until row `id` is in `state`; returns the row. */
static json_t *wait_state(const struct hk_server *s, int64_t id, const char *state, double secs)
{
    double end = now_s() + secs;
    for (;;) {
        json_t *row = row_of(s, id);
        if (strcmp(state_of(row), state) == 0)
            return row;
        if (now_s() > end) {
            char *dump = json_dumps(row, 0);
            cr_assert_fail("row %" PRId64 " not %s after %.0f s: %s", id, state, secs, dump);
        }
        json_decref(row);
        usleep(50 * 1000);
    }
}

/* Wait until the sink has every id at least once; returns the ledger. */
static json_t *wait_all(const struct sink *k, const int64_t *ids, int n, double secs)
{
    double end = now_s() + secs;
    for (;;) {
        json_t *l = sink_ledger(k);
        int missing = 0;
        int64_t first = 0;
        for (int i = 0; i < n; i++)
            if (sink_count(l, ids[i]) == 0 && missing++ == 0)
                first = ids[i];
        if (missing == 0)
            return l;
        json_decref(l);
        cr_assert(now_s() < end, "%d of %d webhooks never reached the sink (first: %" PRId64 ")", missing, n,
                  first);
        usleep(50 * 1000);
    }
}

static double metric(const struct hk_server *s, const char *line_prefix)
{
    struct hk_resp r;
    hk_get(s, "/q/metrics", &r);
    cr_assert_eq(r.status, 200);
    /* A sample's line, not the # HELP line that names it too. */
    char want[256];
    snprintf(want, sizeof want, "\n%s", line_prefix);
    const char *p = strstr(r.body, want);
    double v = p ? strtod(p + strlen(want), NULL) : -1;
    hk_resp_free(&r);
    return v;
}

/* POST an envelope and return its id (hk_create wants a row without the
 * delivery member). */
static int64_t create(const struct hk_server *s, const char *source, const char *event_type, const char *payload)
{
    char body[512];
    snprintf(body, sizeof body, "{\"source\":\"%s\",\"eventType\":\"%s\",\"payload\":\"%s\"}", source,
             event_type, payload);
    struct hk_resp r;
    hk_post_json(s, "/api/webhooks", body, &r);
    json_t *j = hk_assert_json(&r, 201);
    int64_t id = json_integer_value(json_object_get(j, "id"));
    cr_assert_gt(id, 0);
    json_decref(j);
    hk_resp_free(&r);
    return id;
}

static void env_body(int i, char *buf, size_t n)
{
    if (i % 3 == 0)
        snprintf(buf, n, "{\"source\":\"s%d\",\"eventType\":\"push\",\"payload\":\"{\\\"n\\\":%d}\"}", i % 4, i);
    else if (i % 3 == 1)
        snprintf(buf, n, "{\"source\":\"s%d\",\"eventType\":\"note\",\"payload\":\"plain text %d\"}", i % 4, i);
    else
        snprintf(buf, n, "{\"source\":\"s%d\",\"eventType\":\"ping\",\"payload\":null}", i % 4);
}

/* Run tests/forward/check_events.sh on the ledger: 0 valid, 77 skipped. */
static int check_with_sdk(const struct sink *k, int min)
{
    const char *src = getenv("SRC");
    char cmd[1024];
    snprintf(cmd, sizeof cmd, "bash %s/tests/forward/check_events.sh %s --min %d >&2", src ? src : "..",
             k->ledger, min);
    int st = system(cmd);
    return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

/* ---- tests ---------------------------------------------------------------------- */

Test(forward, every_webhook_reaches_the_sink_once_as_a_valid_cloudevent)
{
    struct sink k = {0};
    struct hk_server s = {0};
    sink_start(&k, 0);
    /* A delivery source too: its body and Content-Type go as they came. */
    struct srcfile sf;
    srcfile_write(&sf, "sources:\n  - name: plain\n    scheme: none\n");
    start_fwd(&s, &k, (const char *const[]){sf.env, NULL});

    enum { N = 30 };
    int64_t ids[N + 1];
    cr_assert_eq(hk_parallel_posts(&s, 3, N, env_body, ids), N);
    struct hk_req req = {.method = "POST", .path = "/hooks/plain", .body = "a=1&b=<x>",
                         .headers = (const char *const[]){"Content-Type: application/x-www-form-urlencoded",
                                                          NULL}};
    struct hk_resp r;
    hk_do(&s, NULL, &req, &r);
    json_t *j = hk_assert_json(&r, 201);
    ids[N] = json_integer_value(json_object_get(j, "id"));
    json_decref(j);
    hk_resp_free(&r);

    json_t *l = wait_all(&k, ids, N + 1, 20);
    for (int i = 0; i <= N; i++)
        cr_expect_eq(sink_count(l, ids[i]), 1, "webhook %" PRId64 " reached the sink once", ids[i]);
    size_t i;
    json_t *ev;
    char want[24];
    snprintf(want, sizeof want, "%" PRId64, ids[N]);
    bool seen = false;
    json_array_foreach(l, i, ev) {
        cr_expect_str_eq(json_string_value(json_object_get(ev, "path")), "/events");
        cr_expect_str_eq(ev_header(ev, "ce-specversion"), "1.0");
        if (strcmp(ev_header(ev, "ce-id"), want) != 0) {
            cr_expect_str_eq(ev_header(ev, "ce-source"), "/api/webhooks");
            continue;
        }
        seen = true;
        cr_expect_str_eq(ev_header(ev, "ce-source"), "/hooks/plain");
        cr_expect_str_eq(ev_header(ev, "ce-subject"), "plain");
        cr_expect_str_eq(ev_header(ev, "Content-Type"), "application/x-www-form-urlencoded");
        cr_expect_str_eq(json_string_value(json_object_get(ev, "body")), "YT0xJmI9PHg+", "the body as it came");
    }
    cr_expect(seen);
    json_decref(l);
    /* What the REST API says of them. */
    for (int n = 0; n <= N; n++)
        json_decref(wait_state(&s, ids[n], "delivered", 10));
    hk_get(&s, "/api/webhooks?delivery=delivered&limit=1000", &r);
    j = hk_assert_json(&r, 200);
    cr_expect_eq(json_array_size(j), N + 1);
    json_decref(j);
    hk_resp_free(&r);
    hk_get(&s, "/api/webhooks?delivery=lost", &r);
    json_decref(hk_assert_problem(&r, 400));
    hk_resp_free(&r);
    cr_expect_eq(metric(&s, "hookd_forward_attempts_total{result=\"delivered\"} "), N + 1);
    cr_expect_eq(metric(&s, "hookd_forward_inflight "), 0);
    int rc = check_with_sdk(&k, N + 1);
    cr_expect(rc == 0 || rc == 77, "the CloudEvents SDK refused an event (exit %d; stderr above)", rc);
    hk_finish(&s);
    hk_server_cleanup(&s);
    sink_cleanup(&k);
    srcfile_remove(&sf);
}

Test(forward, retries_honour_retry_after_then_deliver)
{
    struct sink k = {0};
    struct hk_server s = {0};
    sink_start(&k, 0);
    sink_rule(&k, "{\"status\":503,\"count\":2,\"headers\":{\"Retry-After\":\"1\"}}");
    start_fwd(&s, &k, NULL);
    double t0 = now_s();
    int64_t id = create(&s, "s", "push", "x");
    json_t *row = wait_state(&s, id, "delivered", 15);
    json_t *d = json_object_get(row, "delivery");
    cr_expect_eq(json_integer_value(json_object_get(d, "attempts")), 3);
    cr_expect_eq(json_integer_value(json_object_get(d, "lastStatus")), 200);
    json_decref(row);
    cr_expect_geq(now_s() - t0, 1.9, "two waits of Retry-After: 1");
    json_t *l = sink_ledger(&k);
    cr_expect_eq(sink_count(l, id), 3);
    json_decref(l);
    cr_expect_eq(metric(&s, "hookd_forward_attempts_total{result=\"retry\"} "), 2);
    hk_finish(&s);
    hk_server_cleanup(&s);
    sink_cleanup(&k);
}

Test(forward, a_refusal_dead_letters_and_redeliver_sends_it_again)
{
    struct sink k = {0};
    struct hk_server s = {0};
    sink_start(&k, 0);
    sink_rule(&k, "{\"status\":400,\"count\":1,\"body\":\"no thanks\"}");
    start_fwd(&s, &k, NULL);
    int64_t id = create(&s, "s", "push", "x");
    json_t *row = wait_state(&s, id, "failed", 10);
    json_t *d = json_object_get(row, "delivery");
    cr_expect_eq(json_integer_value(json_object_get(d, "attempts")), 1);
    cr_expect_eq(json_integer_value(json_object_get(d, "lastStatus")), 400);
    cr_expect(json_is_string(json_object_get(d, "lastError")));
    json_decref(row);
    struct hk_resp r;
    hk_get(&s, "/api/webhooks?delivery=failed", &r);
    json_t *j = hk_assert_json(&r, 200);
    cr_expect_eq(json_array_size(j), 1);
    json_decref(j);
    hk_resp_free(&r);
    cr_expect_eq(metric(&s, "hookd_forward_dead_letters_total "), 1);

    char path[64];
    snprintf(path, sizeof path, "/api/webhooks/%" PRId64 "/redeliver", id);
    struct hk_req req = {.method = "POST", .path = path};
    hk_do(&s, NULL, &req, &r);
    j = hk_assert_json(&r, 202);
    cr_expect_str_eq(state_of(j), "pending");
    json_decref(j);
    hk_resp_free(&r);
    json_decref(wait_state(&s, id, "delivered", 10));
    json_t *l = sink_ledger(&k);
    cr_expect_eq(sink_count(l, id), 2);
    json_decref(l);
    req.path = "/api/webhooks/999999/redeliver";
    hk_do(&s, NULL, &req, &r);
    json_decref(hk_assert_problem(&r, 404));
    hk_resp_free(&r);
    req.path = "/api/webhooks/abc/redeliver";
    hk_do(&s, NULL, &req, &r);
    json_decref(hk_assert_problem(&r, 404));
    hk_resp_free(&r);
    hk_finish(&s);
    hk_server_cleanup(&s);
    sink_cleanup(&k);
}

Test(forward, out_of_attempts_is_failed)
{
    struct sink k = {0};
    struct hk_server s = {0};
    sink_start(&k, 0);
    sink_rule(&k, "{\"status\":500}");
    start_fwd(&s, &k, (const char *const[]){"HOOKD_FORWARD_MAX_ATTEMPTS=3", "HOOKD_FORWARD_BACKOFF=50ms",
                                            "HOOKD_FORWARD_BACKOFF_MAX=200ms", NULL});
    int64_t id = create(&s, "s", "push", "x");
    json_t *row = wait_state(&s, id, "failed", 15);
    cr_expect_eq(json_integer_value(json_object_get(json_object_get(row, "delivery"), "attempts")), 3);
    cr_expect_str_eq(json_string_value(json_object_get(json_object_get(row, "delivery"), "lastError")), "HTTP 500");
    json_decref(row);
    hk_finish(&s);
    hk_server_cleanup(&s);
    sink_cleanup(&k);
}

Test(forward, a_sink_down_for_a_while_gets_everything_when_it_is_back)
{
    struct sink k = {0};
    struct hk_server s = {0};
    sink_start(&k, 0);
    int port = k.port;
    sink_stop(&k);   /* nothing listens there now */
    start_fwd(&s, &k, (const char *const[]){"HOOKD_FORWARD_BACKOFF=100ms", "HOOKD_FORWARD_BACKOFF_MAX=400ms",
                                            NULL});
    enum { N = 10 };
    int64_t ids[N];
    for (int i = 0; i < N; i++)
        ids[i] = create(&s, "s", "push", "x");
    /* Each fails to connect and waits for its retry. */
    double end = now_s() + 10;
    for (;;) {
        json_t *row = row_of(&s, ids[N - 1]);
        json_t *d = json_object_get(row, "delivery");
        bool tried = json_integer_value(json_object_get(d, "attempts")) >= 1;
        if (tried) {
            cr_expect_str_eq(state_of(row), "pending");
            cr_expect(json_is_null(json_object_get(d, "lastStatus")));
            cr_expect(json_is_string(json_object_get(d, "lastError")));
        }
        json_decref(row);
        if (tried)
            break;
        cr_assert(now_s() < end, "no attempt was made");
        usleep(50 * 1000);
    }
    usleep(500 * 1000);
    sink_start(&k, port);
    json_t *l = wait_all(&k, ids, N, 20);
    json_decref(l);
    for (int i = 0; i < N; i++)
        json_decref(wait_state(&s, ids[i], "delivered", 10));
    hk_finish(&s);
    hk_server_cleanup(&s);
    sink_cleanup(&k);
}

Test(forward, kill9_leaves_no_acknowledged_webhook_behind)
{
    struct sink k = {0};
    struct hk_server s = {0};
    sink_start(&k, 0);
    /* The sink takes every request and answers none: everything acknowledged
     * is in flight or waiting when hookd dies. */
    sink_rule(&k, "{\"action\":\"stall\"}");
    start_fwd(&s, &k, (const char *const[]){"HOOKD_FORWARD_LEASE=1s", "HOOKD_FORWARD_TIMEOUT=60s",
                                            "HOOKD_FORWARD_CONCURRENCY=8", NULL});
    enum { N = 40 };
    int64_t ids[N];   /* the client's ledger: every 201 */
    cr_assert_eq(hk_parallel_posts(&s, 4, N, env_body, ids), N);
    usleep(200 * 1000);
    hk_server_kill9(&s);
    sink_rule(&k, "{\"reset\":true}");
    json_decref(sink_call(&k, "POST", "/_control", "{\"clearLedger\":true}"));
    hk_server_restart(&s);
    json_t *l = wait_all(&k, ids, N, 30);
    json_decref(l);
    for (int i = 0; i < N; i++)
        json_decref(wait_state(&s, ids[i], "delivered", 10));
    hk_finish(&s);
    hk_server_cleanup(&s);
    sink_cleanup(&k);
}

static int64_t deliver(const struct hk_server *s, const char *source, int i)
{
    char path[64], body[64];
    snprintf(path, sizeof path, "/hooks/%s", source);
    snprintf(body, sizeof body, "{\"n\":%d}", i);
    struct hk_req req = {.method = "POST", .path = path, .body = body,
                         .headers = (const char *const[]){"Content-Type: application/json", NULL}};
    struct hk_resp r;
    hk_do(s, NULL, &req, &r);
    json_t *j = hk_assert_json(&r, 201);
    int64_t id = json_integer_value(json_object_get(j, "id"));
    json_decref(j);
    hk_resp_free(&r);
    return id;
}

Test(forward, per_source_fifo_order_and_opting_out)
{
    struct sink k = {0};
    struct hk_server s = {0};
    sink_start(&k, 0);
    struct srcfile sf;
    srcfile_write(&sf, "sources:\n"
                       "  - name: ordered\n    scheme: none\n    forward: {fifo: true, type: \"org.example.{event}\"}\n"
                       "  - name: quiet\n    scheme: none\n    forward: false\n");
    /* The first request is refused for a while: the others must wait. */
    sink_rule(&k, "{\"status\":503,\"count\":2}");
    start_fwd(&s, &k, (const char *const[]){sf.env, "HOOKD_FORWARD_BACKOFF=100ms", "HOOKD_FORWARD_BACKOFF_MAX=200ms",
                                            NULL});
    enum { N = 6 };
    int64_t ids[N];
    for (int i = 0; i < N; i++)
        ids[i] = deliver(&s, "ordered", i);
    int64_t quiet = deliver(&s, "quiet", 0);
    json_t *l = wait_all(&k, ids, N, 20);
    /* In id order, each one only after the one before was taken. */
    int64_t last = 0;
    size_t i;
    json_t *ev;
    json_array_foreach(l, i, ev) {
        int64_t id = strtoll(ev_header(ev, "ce-id"), NULL, 10);
        cr_expect_geq(id, last, "ce-id %" PRId64 " after %" PRId64, id, last);
        last = id;
        cr_expect_str_eq(ev_header(ev, "ce-type"), "org.example.unknown", "the source's template");
    }
    cr_expect_eq(sink_count(l, ids[0]), 3, "two refusals, then taken");
    cr_expect_eq(sink_count(l, quiet), 0);
    json_decref(l);
    json_t *row = row_of(&s, quiet);
    cr_expect_null(json_object_get(row, "delivery"), "forward: false");
    json_decref(row);
    hk_finish(&s);
    hk_server_cleanup(&s);
    sink_cleanup(&k);
    srcfile_remove(&sf);
}

Test(forward, a_stalled_sink_holds_up_no_other)
{
    struct sink slow = {0}, fast = {0};
    struct hk_server s = {0};
    sink_start(&slow, 0);
    sink_start(&fast, 0);
    sink_rule(&slow, "{\"action\":\"stall\"}");
    struct srcfile sf;
    srcfile_write(&sf, "sources:\n"
                       "  - name: a\n    scheme: none\n    forward: {url: \"http://127.0.0.1:%d/a\"}\n"
                       "  - name: b\n    scheme: none\n    forward: {url: \"http://127.0.0.1:%d/b\"}\n",
                  slow.port, fast.port);
    start_fwd(&s, &fast, (const char *const[]){sf.env, "HOOKD_FORWARD_CONCURRENCY=4", "HOOKD_FORWARD_TIMEOUT=60s",
                                               NULL});
    for (int i = 0; i < 30; i++)
        deliver(&s, "a", i);   /* 4 in flight at the stalled sink, the rest waiting */
    enum { N = 8 };
    int64_t ids[N];
    for (int i = 0; i < N; i++)
        ids[i] = deliver(&s, "b", i);
    json_decref(wait_all(&fast, ids, N, 10));
    json_t *l = sink_ledger(&slow);
    cr_expect_leq(json_array_size(l), 4, "the stalled sink is sent 4 requests at most");
    json_decref(l);
    cr_expect_leq(metric(&s, "hookd_forward_inflight "), 4, "those 4 are all that is in flight");
    hk_server_stop_clean(&s);
    hk_server_cleanup(&s);
    sink_cleanup(&slow);
    sink_cleanup(&fast);
    srcfile_remove(&sf);
}

/* After a clean stop with the sink stalled: the sink answers again, hookd
 * restarts, and every row in `ids` reaches it within seconds (released at
 * the stop, not left leased) with one attempt counted (the interrupted
 * send or the wait was none). */
static void back_after_a_clean_stop(struct hk_server *s, const struct sink *k, const int64_t *ids, int n)
{
    sink_rule(k, "{\"reset\":true}");
    json_decref(sink_call(k, "POST", "/_control", "{\"clearLedger\":true}"));
    hk_server_restart(s);
    json_decref(wait_all(k, ids, n, 10));
    for (int i = 0; i < n; i++) {
        json_t *row = wait_state(s, ids[i], "delivered", 10);
        cr_expect_eq(json_integer_value(json_object_get(json_object_get(row, "delivery"), "attempts")), 1,
                     "webhook %" PRId64 ": the interrupted send or the wait was not an attempt", ids[i]);
        json_decref(row);
    }
}

Test(forward, a_clean_stop_releases_what_was_in_flight)
{
    struct sink k = {0};
    struct hk_server s = {0};
    sink_start(&k, 0);
    sink_rule(&k, "{\"action\":\"stall\"}");
    start_fwd(&s, &k, (const char *const[]){"HOOKD_FORWARD_LEASE=600s", "HOOKD_FORWARD_TIMEOUT=60s", NULL});
    enum { N = 5 };
    int64_t ids[N];
    for (int i = 0; i < N; i++)
        ids[i] = create(&s, "s", "push", "x");
    double end = now_s() + 10;
    while (metric(&s, "hookd_forward_inflight ") < N) {
        cr_assert(now_s() < end, "the sends never started");
        usleep(20 * 1000);
    }
    double t0 = now_s();
    hk_server_stop_clean(&s);
    cr_expect_lt(now_s() - t0, 3, "a stop is not held by the sink");
    /* The releases are the last store ops: the store detaches after them,
     * cleanly (once it detached from inside their completion, and
     * PostgreSQL's connection was gone under its feet). */
    char *err = hk_server_stderr(&s);
    cr_expect_null(strstr(err, "unavailable"), "%s", err);
    free(err);
    /* Released, not leased for 600 s: sent as soon as hookd is back. */
    back_after_a_clean_stop(&s, &k, ids, N);
    hk_finish(&s);
    hk_server_cleanup(&s);
    sink_cleanup(&k);
}

Test(forward, a_clean_stop_releases_claimed_rows_waiting_for_their_sink)
{
    struct sink k = {0};
    struct hk_server s = {0};
    sink_start(&k, 0);
    sink_rule(&k, "{\"action\":\"stall\"}");
    /* Two at the stalled sink; the next two are claimed and wait in memory. */
    start_fwd(&s, &k, (const char *const[]){"HOOKD_FORWARD_LEASE=600s", "HOOKD_FORWARD_TIMEOUT=60s",
                                            "HOOKD_FORWARD_CONCURRENCY=2", NULL});
    enum { N = 4 };
    int64_t ids[N];
    for (int i = 0; i < N; i++)
        ids[i] = create(&s, "s", "push", "x");
    double end = now_s() + 10;
    while (metric(&s, "hookd_forward_claimed_total ") < 2) {
        cr_assert(now_s() < end, "the claimer never took the rows the sink had no room for");
        usleep(20 * 1000);
    }
    cr_expect_leq(metric(&s, "hookd_forward_inflight "), 2, "waiting rows are not requests in flight");
    hk_server_stop_clean(&s);
    /* Released at the stop, not leased for 600 s: sent once hookd is back,
     * and no attempt was counted for the wait. */
    back_after_a_clean_stop(&s, &k, ids, N);
    hk_finish(&s);
    hk_server_cleanup(&s);
    sink_cleanup(&k);
}

Test(forward, bodies_wait_in_the_store_beyond_the_memory_budget)
{
    struct sink k = {0};
    struct hk_server s = {0};
    sink_start(&k, 0);
    sink_rule(&k, "{\"delayMs\":300,\"count\":4}");
    start_fwd(&s, &k, (const char *const[]){"HOOKD_FORWARD_INFLIGHT_BYTES=65536", "HOOKD_MAX_BODY_BYTES=32768",
                                            NULL});
    enum { N = 40 };
    int64_t ids[N];
    static char big[20000];
    memset(big, 'x', sizeof big - 1);
    char body[21000];
    double most = 0;
    for (int i = 0; i < N; i++) {
        snprintf(body, sizeof body, "{\"source\":\"s\",\"eventType\":\"big\",\"payload\":\"%d%s\"}", i, big);
        struct hk_resp r;
        hk_post_json(&s, "/api/webhooks", body, &r);
        json_t *j = hk_assert_json(&r, 201);
        ids[i] = json_integer_value(json_object_get(j, "id"));
        json_decref(j);
        hk_resp_free(&r);
        double b = metric(&s, "hookd_forward_inflight_bytes ");
        if (b > most)
            most = b;
    }
    cr_expect_leq(most, 65536 + 32768 + 2048, "bytes held: %.0f", most);
    json_decref(wait_all(&k, ids, N, 30));
    hk_finish(&s);
    hk_server_cleanup(&s);
    sink_cleanup(&k);
}

/* Rows the claimer leases while their sink has all it may take wait in
 * memory for its next free slot: each is claimed once and sent once (they
 * used to go back to the store for a second, and be claimed again). */
Test(forward, claimed_rows_wait_for_their_sink_without_going_back)
{
    struct sink k = {0};
    struct hk_server s = {0};
    sink_start(&k, 0);
    sink_rule(&k, "{\"delayMs\":150,\"count\":1000}");
    /* Two requests at once to the sink: the rest wait in the store and are
     * claimed (up to the 8 slots of all sinks), more than the sink takes. */
    start_fwd(&s, &k, (const char *const[]){"HOOKD_FORWARD_CONCURRENCY=2", NULL});
    enum { N = 30 };
    int64_t ids[N];
    for (int i = 0; i < N; i++)
        ids[i] = create(&s, "w", "push", "x");
    json_t *l = wait_all(&k, ids, N, 60);
    for (int i = 0; i < N; i++)
        cr_expect_eq(sink_count(l, ids[i]), 1, "webhook %" PRId64 " sent %d times", ids[i], sink_count(l, ids[i]));
    json_decref(l);
    double claimed = metric(&s, "hookd_forward_claimed_total ");
    cr_expect_gt(claimed, 0, "rows went through the claimer");
    /* Once at most each (those the inserts sent at once were never
     * claimed); going back to the store made it hundreds. */
    cr_expect_leq(claimed, N, "each row claimed once at most (claimed %.0f)", claimed);
    cr_expect_eq(metric(&s, "hookd_forward_attempts_total{result=\"retry\"} "), 0);
    for (int i = 0; i < N; i++)
        json_decref(wait_state(&s, ids[i], "delivered", 10));
    hk_finish(&s);
    hk_server_cleanup(&s);
    sink_cleanup(&k);
}

Test(forward, two_replicas_share_the_outbox_and_send_each_once)
{
    if (!hk_store_is_pg())
        cr_skip_test("PostgreSQL only: SQLite is one process's store");
    struct sink k = {0};
    struct hk_server a = {0}, b = {0};
    sink_start(&k, 0);
    start_fwd(&a, &k, (const char *const[]){"HOOKD_FORWARD_LEASE=2s", NULL});
    const char *base = getenv("HOOKD_TEST_DATABASE_URL");
    char *url = hk_pg_url_with_schema(base, a.pg_schema);
    char env_url[1024];
    snprintf(env_url, sizeof env_url, "DATABASE_URL=%s", url);
    free(url);
    start_fwd(&b, &k, (const char *const[]){env_url, "HOOKD_FORWARD_LEASE=2s", NULL});
    enum { N = 60 };
    int64_t ids[N];
    for (int i = 0; i < N; i++)
        ids[i] = create(i % 2 ? &b : &a, "s", "push", "x");
    json_t *l = wait_all(&k, ids, N, 20);
    json_decref(l);
    usleep(3000 * 1000);   /* beyond a lease: nothing is sent twice in steady state */
    l = sink_ledger(&k);
    for (int i = 0; i < N; i++)
        cr_expect_eq(sink_count(l, ids[i]), 1, "webhook %" PRId64, ids[i]);
    json_decref(l);
    hk_finish(&b);
    hk_server_cleanup(&b);
    hk_finish(&a);
    hk_server_cleanup(&a);
    sink_cleanup(&k);
}

Test(forward, forwarding_off_leaves_rows_alone)
{
    struct hk_server s = {0};
    hk_server_start(&s, NULL);
    int64_t id = create(&s, "s", "push", "x");
    json_t *row = row_of(&s, id);
    cr_expect_null(json_object_get(row, "delivery"), "no delivery without a sink");
    json_decref(row);
    char path[64];
    snprintf(path, sizeof path, "/api/webhooks/%" PRId64 "/redeliver", id);
    struct hk_req req = {.method = "POST", .path = path};
    struct hk_resp r;
    hk_do(&s, NULL, &req, &r);
    json_t *p = hk_assert_problem(&r, 409);
    cr_expect_str_eq(hk_jstr(p, "reason"), "forwarding_off");
    json_decref(p);
    hk_resp_free(&r);
    cr_expect_eq(metric(&s, "hookd_forward_attempts_total"), -1, "no forwarding families without a sink");
    hk_finish(&s);
    hk_server_cleanup(&s);
}

Test(forward, a_bad_sink_url_stops_the_start_without_showing_it)
{
    static const char *const bad[] = {
        "HOOKD_FORWARD_URL=ftp://u:topsecret@example.com/x",
        "HOOKD_FORWARD_URL=http://u:topsecret@exa mple.com/",
        "K_SINK=topsecret",
        "HOOKD_FORWARD_URL=http:///nohost",
        "HOOKD_FORWARD_MODE=topsecret",
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        hk_context("%s", bad[i]);
        char *out = NULL, *err = NULL;
        int st = hk_run((const char *const[]){bad[i], "HOOKD_SQLITE_PATH=/tmp/hk_fwd_bad.db", NULL}, NULL, 10000,
                        &out, &err);
        cr_expect(WIFEXITED(st) && WEXITSTATUS(st) == 2, "exit %d: %s", st, err);
        cr_expect(strstr(err, "topsecret") == NULL || strstr(bad[i], "MODE") != NULL, "a secret in: %s", err);
        free(out);
        free(err);
    }
    hk_context("%s", "");
    unlink("/tmp/hk_fwd_bad.db");
    unlink("/tmp/hk_fwd_bad.db-wal");
    unlink("/tmp/hk_fwd_bad.db-shm");
}
