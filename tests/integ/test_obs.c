/* SPDX-License-Identifier: MIT
 * Observability of the real server over HTTP: /q/metrics strictly parsed
 * after a known sequence of requests on two event loops, top-N sources,
 * request ids end to end, the access log's lines (parsed with jansson),
 * log levels, and /q/openapi in both formats. */
#include <criterion/criterion.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "../prom.h"
#include "harness.h"

static struct hk_server srv;

static void teardown(void)
{
    hk_server_cleanup(&srv);
}

TestSuite(obs, .fini = teardown, .timeout = 60);

static const char *const JSON_CT[] = {"Content-Type: application/json", NULL};

static void scrape_path(const char *path, struct prom *p)
{
    struct hk_resp r;
    hk_get(&srv, path, &r);
    cr_assert_eq(r.status, 200, "%s: %ld %s", path, r.status, r.body);
    char ct[128];
    cr_assert_not_null(hk_header(&r, "Content-Type", ct, sizeof ct));
    cr_expect_str_eq(ct, "text/plain; version=0.0.4; charset=utf-8");
    char *err = prom_parse(r.body, p);
    cr_assert_null(err, "exposition rejected: %s\n%s", err, r.body);
    hk_resp_free(&r);
}

static void request(const char *method, const char *path, const char *body, const char *const *headers,
                    long want)
{
    struct hk_req q = {.method = method, .path = path, .body = body, .headers = headers};
    struct hk_resp r;
    hk_do(&srv, NULL, &q, &r);
    cr_assert_eq(r.status, want, "%s %s: %ld %s", method, path, r.status, r.body);
    hk_resp_free(&r);
}

#define REQ(method, uri, status, outcome)                                                                 \
    "method=\"" method "\",outcome=\"" outcome "\",status=\"" status "\",uri=\"" uri "\""

Test(obs, metrics_count_exactly_what_was_asked)
{
    hk_server_start(&srv, NULL);
    for (int i = 0; i < 5; i++)
        hk_create(&srv, i < 3 ? "github" : "gitlab", "push", NULL);
    request("POST", "/api/webhooks", "{\"source\":\" \",\"eventType\":\"x\"}", JSON_CT, 400);
    request("POST", "/api/webhooks", "{nope", JSON_CT, 400);
    static const char *const TEXT_CT[] = {"Content-Type: text/plain", NULL};
    request("POST", "/api/webhooks", "{}", TEXT_CT, 415);
    for (int i = 0; i < 4; i++)
        request("GET", "/api/webhooks?limit=2", NULL, NULL, 200);
    request("GET", "/api/webhooks/1", NULL, NULL, 200);
    request("GET", "/api/webhooks/4242", NULL, NULL, 404);
    request("DELETE", "/api/webhooks/2", NULL, NULL, 204);
    request("DELETE", "/api/webhooks/2", NULL, NULL, 404);
    request("GET", "/api/system/info", NULL, NULL, 200);
    request("GET", "/does/not/exist", NULL, NULL, 404);
    request("GET", "/api/webhooks/1/extra", NULL, NULL, 404);
    request("PATCH", "/api/webhooks/1", NULL, NULL, 405);
    request("HEAD", "/q/health/ready", NULL, NULL, 200);

    struct prom p;
    scrape_path("/q/metrics", &p);
    static const struct {
        const char *labels;
        double n;
    } want[] = {
        {REQ("POST", "/api/webhooks", "201", "SUCCESS"), 5},
        {REQ("POST", "/api/webhooks", "400", "CLIENT_ERROR"), 2},
        {REQ("POST", "/api/webhooks", "415", "CLIENT_ERROR"), 1},
        {REQ("GET", "/api/webhooks", "200", "SUCCESS"), 4},
        {REQ("GET", "/api/webhooks/{id}", "200", "SUCCESS"), 1},
        {REQ("GET", "/api/webhooks/{id}", "404", "CLIENT_ERROR"), 1},
        {REQ("DELETE", "/api/webhooks/{id}", "204", "SUCCESS"), 1},
        {REQ("DELETE", "/api/webhooks/{id}", "404", "CLIENT_ERROR"), 1},
        {REQ("GET", "/api/system/info", "200", "SUCCESS"), 1},
        {REQ("GET", "NOT_FOUND", "404", "CLIENT_ERROR"), 2},
        {REQ("PATCH", "/api/webhooks/{id}", "405", "CLIENT_ERROR"), 1},
        {REQ("HEAD", "/q/health/ready", "200", "SUCCESS"), 1},
    };
    int n = (int)(sizeof want / sizeof want[0]);
    double total = 0;
    for (int i = 0; i < n; i++) {
        double got = prom_get(&p, "http_server_requests_seconds_count", want[i].labels);
        cr_expect_eq(got, want[i].n, "{%s}: %g, want %g", want[i].labels, got, want[i].n);
        total += want[i].n;
    }
    cr_expect_eq(prom_count(&p, "http_server_requests_seconds_count"), n, "unexpected series");
    /* Two event loops, one sum: every request counted once. */
    double sum = 0;
    for (int i = 0; i < p.n; i++)
        if (strcmp(p.s[i].name, "http_server_requests_seconds_count") == 0)
            sum += p.s[i].value;
    cr_expect_eq(sum, total);
    cr_expect_eq(prom_get(&p, "hookd_event_loops", NULL), 2);
    cr_expect_eq(prom_get(&p, "hookd_webhooks_received_total", "source=\"github\""), 3);
    cr_expect_eq(prom_get(&p, "hookd_webhooks_received_total", "source=\"gitlab\""), 2);
    cr_expect_eq(prom_get(&p, "hookd_webhooks_rejected_total", "reason=\"validation\""), 1);
    cr_expect_eq(prom_get(&p, "hookd_webhooks_rejected_total", "reason=\"invalid_json\""), 1);
    cr_expect_eq(prom_get(&p, "hookd_webhooks_rejected_total", "reason=\"unsupported_media_type\""), 1);
    cr_expect_eq(prom_get(&p, "hookd_webhooks_rejected_total", "reason=\"too_large\""), 0);
    cr_expect_eq(prom_get(&p, "hookd_store_query_seconds_count", "backend=\"sqlite\",operation=\"insert\""), 5);
    cr_expect_eq(prom_get(&p, "hookd_store_query_seconds_count", "backend=\"sqlite\",operation=\"list\""), 4);
    cr_expect_eq(prom_get(&p, "hookd_store_query_seconds_count", "backend=\"sqlite\",operation=\"delete\""), 2);
    cr_expect_eq(prom_get(&p, "hookd_store_connections_open", "backend=\"sqlite\""), 3);
    /* One connection per request so far (fresh curl handles), the scrape's included. */
    double accepted = prom_get(&p, "hookd_connections_accepted_total", NULL);
    cr_expect_eq(accepted, total + 1, "accepted %g", accepted);
    cr_expect_geq(prom_get(&p, "hookd_connections_open", NULL), 1);
    cr_expect_gt(prom_get(&p, "hookd_http_received_bytes_total", NULL), 100 * total / 10);
    cr_expect_gt(prom_get(&p, "hookd_http_sent_bytes_total", NULL), 100 * total / 10);
    cr_expect_gt(prom_get(&p, "process_resident_memory_bytes", NULL), 1e5);
    double started = prom_get(&p, "process_start_time_seconds", NULL), now = (double)time(NULL);
    cr_expect(started > now - 120 && started <= now + 1, "process_start_time_seconds %f, now %f", started, now);
    prom_free(&p);

    /* The alias serves the same families, and sees the first scrape. */
    scrape_path("/metrics", &p);
    cr_expect_eq(prom_get(&p, "http_server_requests_seconds_count", REQ("GET", "/q/metrics", "200", "SUCCESS")), 1);
    cr_expect_eq(prom_get(&p, "hookd_webhooks_received_total", "source=\"github\""), 3);
    prom_free(&p);
    hk_finish(&srv);
}

Test(obs, top_sources_bounded)
{
    const char *env[] = {"HOOKD_METRICS_TOP_SOURCES=2", "HOOKD_THREADS=1", NULL};
    hk_server_start(&srv, env);
    const char *seq[] = {"s1", "s1", "s1", "s2", "s2", "s3", "s4", "s4", "s5"};
    for (size_t i = 0; i < sizeof seq / sizeof seq[0]; i++)
        hk_create(&srv, seq[i], "e", NULL);
    struct prom p;
    scrape_path("/q/metrics", &p);
    cr_expect_eq(prom_get(&p, "hookd_webhooks_received_total", "source=\"s1\""), 3);
    cr_expect_eq(prom_get(&p, "hookd_webhooks_received_total", "source=\"s2\""), 2);
    cr_expect_eq(prom_get(&p, "hookd_webhooks_received_total", "source=\"other\""), 4);
    cr_expect_eq(prom_count(&p, "hookd_webhooks_received_total"), 3);
    prom_free(&p);
    hk_finish(&srv);
}

static void get_with(const char *path, const char *const *headers, struct hk_resp *r)
{
    struct hk_req q = {.path = path, .headers = headers};
    hk_do(&srv, NULL, &q, r);
}

/* Access-log lines in the server's stderr, as parsed JSON objects. */
static int access_lines(json_t **out, int max)
{
    char *log = hk_server_stderr(&srv);
    int n = 0;
    for (char *line = strtok(log, "\n"); line; line = strtok(NULL, "\n")) {
        json_error_t je;
        json_t *j = json_loads(line, 0, &je);
        cr_assert_not_null(j, "stderr line is not JSON: %s", line);
        if (strcmp(hk_jstr(j, "msg"), "access") == 0 && n < max)
            out[n++] = j;
        else
            json_decref(j);
    }
    free(log);
    return n;
}

Test(obs, request_ids_and_access_log)
{
    const char *env[] = {"HOOKD_ACCESS_LOG=1", NULL};
    hk_server_start(&srv, env);
    char id[256];
    /* Given: echoed on a success and on a problem, as the problem's instance. */
    static const char *const GIVEN_OK[] = {"X-Request-Id: req-ok-1", NULL};
    static const char *const GIVEN_404[] = {"X-Request-Id: req-404-1", NULL};
    struct hk_resp r;
    get_with("/api/webhooks", GIVEN_OK, &r);
    cr_expect_str_eq(hk_header(&r, "X-Request-Id", id, sizeof id), "req-ok-1");
    hk_resp_free(&r);
    get_with("/api/webhooks/77", GIVEN_404, &r);
    cr_expect_str_eq(hk_header(&r, "X-Request-Id", id, sizeof id), "req-404-1");
    json_t *j = hk_assert_problem(&r, 404);
    cr_expect_str_eq(hk_jstr(j, "instance"), "urn:request:req-404-1");
    json_decref(j);
    hk_resp_free(&r);
    /* Generated: present, distinct, in the problem too. */
    char gen1[256], gen2[256];
    hk_get(&srv, "/q/health/live", &r);
    cr_assert_not_null(hk_header(&r, "X-Request-Id", gen1, sizeof gen1));
    cr_expect(hk_matches(gen1, "^[0-9a-f]{12}-[0-9]+-[0-9a-f]+$"), "generated id %s", gen1);
    hk_resp_free(&r);
    hk_get(&srv, "/nowhere", &r);
    cr_assert_not_null(hk_header(&r, "X-Request-Id", gen2, sizeof gen2));
    cr_expect_neq(strcmp(gen1, gen2), 0);
    j = hk_assert_problem(&r, 404);
    char inst[300];
    snprintf(inst, sizeof inst, "urn:request:%s", gen2);
    cr_expect_str_eq(hk_jstr(j, "instance"), inst);
    json_decref(j);
    hk_resp_free(&r);
    /* Too long: replaced. */
    char longh[200] = "X-Request-Id: ";
    memset(longh + strlen(longh), 'z', 129);
    const char *const LONG[] = {longh, NULL};
    get_with("/q/health/live", LONG, &r);
    cr_assert_not_null(hk_header(&r, "X-Request-Id", id, sizeof id));
    cr_expect(hk_matches(id, "^[0-9a-f]{12}-[0-9]+-[0-9a-f]+$"), "%s", id);
    hk_resp_free(&r);
    /* A rejection before routing (431) still carries the client's id. */
    int fd = hk_tcp_connect(&srv);
    char big[20000];
    memset(big, 'b', sizeof big - 1);
    big[sizeof big - 1] = 0;
    char req[21000];
    snprintf(req, sizeof req, "GET /q/health HTTP/1.1\r\nHost: x\r\nX-Request-Id: raw-431\r\nX-Big: %s\r\n\r\n", big);
    hk_tcp_sends(fd, req);
    struct hk_raw raw = {0};
    hk_tcp_read(fd, &raw, 1, 5000);
    cr_assert_eq(raw.nfinal, 1);
    cr_expect_eq(hk_raw_final(&raw, 0)->status, 431);
    cr_expect_str_eq(hk_raw_header(&raw, 0, "X-Request-Id", id, sizeof id), "raw-431");
    hk_raw_free(&raw);
    hk_tcp_close(fd);

    hk_server_stop_clean(&srv); /* flushes the access log */
    json_t *lines[32];
    int n = access_lines(lines, 32);
    cr_assert_eq(n, 6, "%d access lines", n);
    static const struct {
        const char *method, *route, *path;
        int status;
    } want[] = {
        {"GET", "/api/webhooks", "/api/webhooks", 200},
        {"GET", "/api/webhooks/{id}", "/api/webhooks/77", 404},
        {"GET", "/q/health/live", "/q/health/live", 200},
        {"GET", "NOT_FOUND", "/nowhere", 404},
        {"GET", "/q/health/live", "/q/health/live", 200},
        {"UNKNOWN", "UNKNOWN", NULL, 431},
    };
    const char *ids[] = {"req-ok-1", "req-404-1", gen1, gen2, NULL, "raw-431"};
    /* Two loops write their own lines: match by request id, not order. */
    for (int i = 0; i < 6; i++) {
        json_t *l = NULL;
        for (int k = 0; k < n && !l; k++) {
            const char *rid = hk_jstr(lines[k], "requestId");
            if (ids[i] ? strcmp(rid, ids[i]) == 0
                       : strcmp(rid, gen1) != 0 && strcmp(rid, gen2) != 0 && hk_matches(rid, "^[0-9a-f]{12}-"))
                l = lines[k];
        }
        cr_assert_not_null(l, "no access line for request %d (%s)", i, ids[i] ? ids[i] : "generated");
        cr_expect_str_eq(hk_jstr(l, "method"), want[i].method);
        cr_expect_str_eq(hk_jstr(l, "route"), want[i].route);
        if (want[i].path)
            cr_expect_str_eq(hk_jstr(l, "path"), want[i].path);
        cr_expect_eq(json_integer_value(json_object_get(l, "status")), want[i].status);
        cr_expect(json_is_integer(json_object_get(l, "bytes")));
        cr_expect(json_is_integer(json_object_get(l, "durUs")));
        cr_expect_geq(json_integer_value(json_object_get(l, "durUs")), 0);
        cr_expect_gt(hk_parse_rfc3339(hk_jstr(l, "ts")), 0, "ts %s", hk_jstr(l, "ts"));
        if (want[i].status == 404)
            cr_expect_gt(json_integer_value(json_object_get(l, "bytes")), 50);
    }
    for (int k = 0; k < n; k++)
        json_decref(lines[k]);
}

Test(obs, no_access_log_by_default)
{
    hk_server_start(&srv, NULL);
    hk_create(&srv, "a", "b", NULL);
    hk_server_stop_clean(&srv);
    json_t *lines[4];
    cr_expect_eq(access_lines(lines, 4), 0);
}

Test(obs, log_level_filters_lines)
{
    const char *env[] = {"HOOKD_LOG_LEVEL=warn", NULL};
    hk_server_start(&srv, env);
    hk_assert_alive(&srv);
    hk_server_stop_clean(&srv);
    char *log = hk_server_stderr(&srv);
    cr_expect_null(strstr(log, "\"level\":\"info\""), "info lines at warn level:\n%s", log);
    free(log);

    const char *env2[] = {"HOOKD_LOG_LEVEL=info", NULL};
    hk_server_cleanup(&srv);
    memset(&srv, 0, sizeof srv);
    hk_server_start(&srv, env2);
    hk_server_stop_clean(&srv);
    log = hk_server_stderr(&srv);
    cr_expect_not_null(strstr(log, "\"msg\":\"started\""), "%s", log);
    free(log);
}

Test(obs, openapi_yaml_default_json_on_request)
{
    hk_server_start(&srv, NULL);
    struct hk_resp r;
    hk_get(&srv, "/q/openapi", &r);
    cr_assert_eq(r.status, 200);
    hk_assert_ctype(&r, "application/yaml");
    cr_expect_eq(strncmp(r.body, "openapi: \"3.1.0\"\n", 17), 0, "%.100s", r.body);
    hk_resp_free(&r);

    hk_get(&srv, "/q/openapi?format=json", &r);
    json_t *doc = hk_assert_json(&r, 200);
    hk_resp_free(&r);
    static const char *const ACCEPT[] = {"Accept: application/json", NULL};
    get_with("/q/openapi", ACCEPT, &r);
    json_t *doc2 = hk_assert_json(&r, 200);
    hk_resp_free(&r);
    cr_expect(json_equal(doc, doc2));
    cr_expect_str_eq(hk_jstr(doc, "openapi"), "3.1.0");
    /* Each documented GET answers something other than 404 (the unit test
     * checks the document against the route table both ways). */
    const char *path;
    json_t *item;
    json_object_foreach(json_object_get(doc, "paths"), path, item) {
        /* The live feed never ends (test_stream.c has it). */
        if (!json_object_get(item, "get") || strchr(path, '{') || strstr(path, "benchmark") ||
            strstr(path, "/stream"))
            continue;
        hk_get(&srv, path, &r);
        cr_expect(r.status == 200 || r.status == 503, "GET %s: %ld", path, r.status);
        hk_resp_free(&r);
    }
    json_decref(doc);
    json_decref(doc2);
    hk_finish(&srv);
}
