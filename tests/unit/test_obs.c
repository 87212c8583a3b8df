/* SPDX-License-Identifier: MIT
 * Observability through the real request path, in memory: the exposition
 * (strictly parsed) after a known sequence of requests, source bounding,
 * request ids, the 5xx log line, and the embedded OpenAPI document checked
 * against the route table in both directions. */
#include <criterion/criterion.h>
#include <ctype.h>
#include <fcntl.h>
#include <jansson.h>
#include <stdio.h>
#include <strings.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../prom.h"
#include "api/api.h"
#include "core/config.h"
#include "core/log.h"
#include "hk_build.h"
#include "http/memio.h"
#include "store/store.h"
#include "http/route.h"
#include "obs/metrics.h"
#include "api/openapi.h"

static struct hk_config cfg;
static struct hk_store *store;
static struct hk_worker w;
static struct hk_api *api;
static struct hk_memio m;
static char dir[64];

static void start(unsigned top_sources)
{
    char err[256];
    char *argv[] = {"hookd", NULL};
    unsetenv("HOOKD_WEBHOOK_SECRET");
    unsetenv("HOOKD_ACCESS_LOG");
    cr_assert_eq(hk_config_load(&cfg, 1, argv, err, sizeof err), HK_CONFIG_RUN);
    cfg.auth_on = false;   /* the API as the reference's clients use it */
    cfg.max_body_bytes = 4096;
    cfg.metrics_top_sources = (int)top_sources;
    snprintf(dir, sizeof dir, "/tmp/hookd-obs-XXXXXX");
    cr_assert_not_null(mkdtemp(dir));
    char path[128];
    snprintf(path, sizeof path, "%s/t.db", dir);
    store = hk_sqlite_open(&(struct hk_sqlite_opts){.path = path}, err, sizeof err);
    cr_assert_not_null(store, "%s", err);
    hk_api_init();
    memset(&w, 0, sizeof w);
    api = hk_api_new(&cfg, store, 0);
    cr_assert_eq(hk_worker_init(&w, &cfg, hk_api_app(api)), 0);
    hk_memio_init(&m, &w);
}

static void setup(void)
{
    start(20);
}

static void teardown(void)
{
    hk_memio_free(&m);
    hk_worker_fini(&w);
    hk_api_free(api);
    api = NULL;
    store->vt->close(store);
    hk_config_free(&cfg);
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
    cr_expect_eq(system(cmd), 0);
}

TestSuite(obs, .init = setup, .fini = teardown);

static const char *sent(void)
{
    hk_buf_putc(&m.sent, 0);
    m.sent.len--;
    return m.sent.p ? m.sent.p : "";
}

static void send_str(const char *s)
{
    hk_memio_feed(&m, s, strlen(s));
    hk_memio_settle(&m);
}

static void post(const char *source)
{
    char body[256], req[512];
    int n = snprintf(body, sizeof body, "{\"source\":\"%s\",\"eventType\":\"e\"}", source);
    snprintf(req, sizeof req,
             "POST /api/webhooks HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n%s",
             n, body);
    send_str(req);
}

/* GET /q/metrics through the session; parse strictly; the body is kept in *text. */
static void scrape(struct prom *p, char **text)
{
    m.sent.len = 0;
    send_str("GET /q/metrics HTTP/1.1\r\nHost: x\r\n\r\n");
    const char *s = sent();
    cr_assert_not_null(strstr(s, "HTTP/1.1 200 OK\r\n"), "%.300s", s);
    cr_assert_not_null(strstr(s, "Content-Type: text/plain; version=0.0.4; charset=utf-8\r\n"), "%.300s", s);
    const char *body = strstr(s, "\r\n\r\n");
    cr_assert_not_null(body);
    body += 4;
    char *err = prom_parse(body, p);
    cr_assert_null(err, "exposition rejected: %s\n%s", err, body);
    if (text)
        *text = strdup(body);
}

#define REQ(method, uri, status, outcome)                                                                 \
    "method=\"" method "\",outcome=\"" outcome "\",status=\"" status "\",uri=\"" uri "\""

Test(obs, exact_request_counts_after_known_sequence)
{
    post("github");
    post("github");
    post("stripe");
    send_str("POST /api/webhooks HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 2\r\n\r\n{}");
    send_str("POST /api/webhooks HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 1\r\n\r\n{");
    send_str("POST /api/webhooks HTTP/1.1\r\nHost: x\r\nContent-Type: text/plain\r\nContent-Length: 1\r\n\r\nx");
    send_str("GET /api/webhooks HTTP/1.1\r\nHost: x\r\n\r\n");
    send_str("GET /api/webhooks?limit=1 HTTP/1.1\r\nHost: x\r\n\r\n");
    send_str("GET /api/webhooks/1 HTTP/1.1\r\nHost: x\r\n\r\n");
    send_str("GET /api/webhooks/999 HTTP/1.1\r\nHost: x\r\n\r\n");
    send_str("GET /api/webhooks/abc HTTP/1.1\r\nHost: x\r\n\r\n");
    send_str("DELETE /api/webhooks/2 HTTP/1.1\r\nHost: x\r\n\r\n");
    send_str("GET /nope HTTP/1.1\r\nHost: x\r\n\r\n");
    send_str("GET /also/nope HTTP/1.1\r\nHost: x\r\n\r\n");
    send_str("PUT /api/webhooks HTTP/1.1\r\nHost: x\r\nContent-Length: 0\r\n\r\n");
    send_str("HEAD /q/health/live HTTP/1.1\r\nHost: x\r\n\r\n");

    struct prom p;
    scrape(&p, NULL);
    static const struct {
        const char *labels;
        double n;
    } want[] = {
        {REQ("POST", "/api/webhooks", "201", "SUCCESS"), 3},
        {REQ("POST", "/api/webhooks", "400", "CLIENT_ERROR"), 2},
        {REQ("POST", "/api/webhooks", "415", "CLIENT_ERROR"), 1},
        {REQ("GET", "/api/webhooks", "200", "SUCCESS"), 2},
        {REQ("GET", "/api/webhooks/{id}", "200", "SUCCESS"), 1},
        {REQ("GET", "/api/webhooks/{id}", "404", "CLIENT_ERROR"), 2},
        {REQ("DELETE", "/api/webhooks/{id}", "204", "SUCCESS"), 1},
        {REQ("GET", "NOT_FOUND", "404", "CLIENT_ERROR"), 2},
        {REQ("PUT", "/api/webhooks", "405", "CLIENT_ERROR"), 1},
        {REQ("HEAD", "/q/health/live", "200", "SUCCESS"), 1},
    };
    int nwant = (int)(sizeof want / sizeof want[0]);
    for (int i = 0; i < nwant; i++) {
        cr_expect_eq(prom_get(&p, "http_server_requests_seconds_count", want[i].labels), want[i].n, "%s: %g",
                     want[i].labels, prom_get(&p, "http_server_requests_seconds_count", want[i].labels));
        char le[1200];
        snprintf(le, sizeof le, "le=\"+Inf\",%s", want[i].labels);
        cr_expect_eq(prom_get(&p, "http_server_requests_seconds_bucket", le), want[i].n, "%s", le);
    }
    /* Nothing else: the scrape itself is not in its own numbers. */
    cr_expect_eq(prom_count(&p, "http_server_requests_seconds_count"), nwant);
    cr_expect_eq(prom_get(&p, "hookd_webhooks_received_total", "source=\"github\""), 2);
    cr_expect_eq(prom_get(&p, "hookd_webhooks_received_total", "source=\"stripe\""), 1);
    cr_expect_eq(prom_get(&p, "hookd_webhooks_received_total", "source=\"other\""), 0);
    cr_expect_eq(prom_get(&p, "hookd_webhooks_rejected_total", "reason=\"validation\""), 1);
    cr_expect_eq(prom_get(&p, "hookd_webhooks_rejected_total", "reason=\"invalid_json\""), 1);
    cr_expect_eq(prom_get(&p, "hookd_webhooks_rejected_total", "reason=\"unsupported_media_type\""), 1);
    cr_expect_eq(prom_get(&p, "hookd_store_query_seconds_count", "backend=\"sqlite\",operation=\"insert\""), 3);
    cr_expect_eq(prom_get(&p, "hookd_store_query_seconds_count", "backend=\"sqlite\",operation=\"get\""), 2);
    cr_expect_eq(prom_get(&p, "hookd_store_query_seconds_count", "backend=\"sqlite\",operation=\"delete\""), 1);
    cr_expect_eq(prom_get(&p, "hookd_store_query_seconds_count", "backend=\"sqlite\",operation=\"list\""), 2);
    cr_expect_eq(prom_get(&p, "hookd_store_errors_total", "backend=\"sqlite\",error=\"failed\",operation=\"get\""), 0);
    cr_expect_eq(prom_get(&p, "hookd_store_queue_depth", "backend=\"sqlite\""), 0);
    cr_expect_eq(prom_get(&p, "hookd_store_connections_open", "backend=\"sqlite\""), 2);
    cr_expect_eq(prom_get(&p, "hookd_event_loops", NULL), 1);
    cr_expect_eq(prom_get(&p, "hookd_metrics_series_overflow_total", NULL), 0);
    cr_expect_gt(prom_get(&p, "process_resident_memory_bytes", NULL), 0);
    cr_expect_gt(prom_get(&p, "process_open_fds", NULL), 2);
    cr_expect_gt(prom_get(&p, "process_max_fds", NULL), 2);
    cr_expect_gt(prom_get(&p, "process_start_time_seconds", NULL), 1.6e9);
    cr_expect_geq(prom_get(&p, "process_cpu_seconds_total", NULL), 0);
    prom_free(&p);

    /* The first scrape shows up in the second. */
    scrape(&p, NULL);
    cr_expect_eq(prom_get(&p, "http_server_requests_seconds_count", REQ("GET", "/q/metrics", "200", "SUCCESS")), 1);
    prom_free(&p);
}

Test(obs, build_info_and_help_type_everywhere)
{
    struct prom p;
    char *text;
    scrape(&p, &text);
    char labels[256];
    snprintf(labels, sizeof labels, "compiler=\"%s\",variant=\"%s\",version=\"%s\"", HK_COMPILER, HK_VARIANT,
             HK_VERSION);
    cr_expect_eq(prom_get(&p, "hookd_build_info", labels), 1, "%s", text);
    static const char *const families[] = {
        "http_server_requests_seconds", "hookd_webhooks_received_total", "hookd_webhooks_rejected_total",
        "hookd_store_query_seconds", "hookd_store_errors_total", "hookd_connections_open",
        "hookd_connections_accepted_total", "hookd_connections_closed_total", "hookd_http_received_bytes_total",
        "hookd_http_sent_bytes_total", "process_cpu_seconds_total", "process_resident_memory_bytes",
        "process_open_fds", "process_max_fds", "process_start_time_seconds", "hookd_build_info",
    };
    for (size_t i = 0; i < sizeof families / sizeof families[0]; i++)
        cr_expect_not_null(prom__family(&p, families[i]), "no family %s", families[i]);
    prom_free(&p);
    free(text);
}

/* The strict reader must refuse what it is there to catch. */
Test(obs, exposition_reader_rejects_broken_input)
{
    static const char *const bad[] = {
        "x_total 1\n",
        "# TYPE x counter\nx 1\n",
        "# HELP x h\n# TYPE x counter\nx -1\n",
        "# HELP x h\n# TYPE x counter\nx{a=\"1\",a=\"2\"} 1\n",
        "# HELP x h\n# TYPE x counter\nx{1a=\"1\"} 1\n",
        "# HELP x h\n# TYPE x counter\nx{a=1} 1\n",
        "# HELP x h\n# TYPE x counter\nx 1 123\n",
        "# HELP h h\n# TYPE h histogram\nh_bucket{le=\"1\"} 2\nh_bucket{le=\"+Inf\"} 1\nh_count 1\nh_sum 0\n",
        "# HELP h h\n# TYPE h histogram\nh_bucket{le=\"1\"} 1\nh_count 1\nh_sum 0\n",
        "# HELP h h\n# TYPE h histogram\nh_bucket{le=\"1\"} 1\nh_bucket{le=\"+Inf\"} 2\nh_count 1\nh_sum 0\n",
        "# HELP h h\n# TYPE h histogram\nh_bucket{le=\"+Inf\"} 1\nh_count 1\n",
        "# HELP a h\n# TYPE a gauge\n# HELP b h\n# TYPE b gauge\nb 1\na 1\n",
        "# HELP x h\n# TYPE x gauge\nx 1\nx 2\n",
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        struct prom p;
        char *err = prom_parse(bad[i], &p);
        cr_expect_not_null(err, "accepted: %s", bad[i]);
        free(err);
        prom_free(&p);
    }
    struct prom p;
    char *err = prom_parse("# HELP h h\n# TYPE h histogram\nh_bucket{le=\"1\"} 1\nh_bucket{le=\"+Inf\"} 2\n"
                           "h_count 2\nh_sum 0.5\n# HELP g h\n# TYPE g gauge\ng{l=\"a\\\"b\"} 3\n",
                           &p);
    cr_expect_null(err, "%s", err);
    cr_expect_eq(prom_get(&p, "g", "l=\"a\\\"b\""), 3);
    prom_free(&p);
}

Test(obs, sources_bounded_to_top_n_then_other)
{
    teardown();
    start(3);
    /* Four distinct sources on one worker with three slots: the fourth has
     * no slot and counts as other from the start. */
    const char *seq[] = {"a", "a", "a", "b", "b", "c", "d", "d", "d", "d", "a"};
    for (size_t i = 0; i < sizeof seq / sizeof seq[0]; i++)
        post(seq[i]);
    struct prom p;
    char *text;
    scrape(&p, &text);
    cr_expect_eq(prom_get(&p, "hookd_webhooks_received_total", "source=\"a\""), 4, "%s", text);
    cr_expect_eq(prom_get(&p, "hookd_webhooks_received_total", "source=\"b\""), 2);
    cr_expect_eq(prom_get(&p, "hookd_webhooks_received_total", "source=\"c\""), 1);
    cr_expect_eq(prom_get(&p, "hookd_webhooks_received_total", "source=\"d\""), -1);
    cr_expect_eq(prom_get(&p, "hookd_webhooks_received_total", "source=\"other\""), 4);
    cr_expect_eq(prom_count(&p, "hookd_webhooks_received_total"), 4);
    prom_free(&p);
    free(text);
    /* Rendering with a smaller bound keeps the busiest and folds the rest. */
    struct hk_buf b = HK_BUF_INIT;
    hk_metrics_render(&b, &(struct hk_metrics_in){.top_sources = 1, .backend = "sqlite"}, NULL);
    hk_buf_putc(&b, 0);
    char *err = prom_parse(b.p, &p);
    cr_assert_null(err, "%s", err);
    cr_expect_eq(prom_get(&p, "hookd_webhooks_received_total", "source=\"a\""), 4);
    cr_expect_eq(prom_get(&p, "hookd_webhooks_received_total", "source=\"other\""), 7);
    cr_expect_eq(prom_count(&p, "hookd_webhooks_received_total"), 2);
    prom_free(&p);
    hk_buf_free(&b);
}

Test(obs, source_label_values_are_escaped)
{
    post("a\\\\b\\\"c");
    struct prom p;
    char *text;
    scrape(&p, &text);
    cr_expect_eq(prom_get(&p, "hookd_webhooks_received_total", "source=\"a\\\\b\\\"c\""), 1, "%s", text);
    prom_free(&p);
    free(text);
}

/* A CR (or another control character) in a source must neither end the
 * sample's line nor use an escape the format does not have (\r would fail
 * the whole scrape): it becomes U+FFFD. */
Test(obs, control_characters_in_label_values_cannot_forge_lines)
{
    post("a\\rb\\u0001c\\nd");
    struct prom p;
    char *text;
    scrape(&p, &text);
    cr_expect_eq(prom_get(&p, "hookd_webhooks_received_total", "source=\"a\xef\xbf\xbd" "b\xef\xbf\xbd" "c\\nd\""), 1,
                 "%s", text);
    cr_expect_null(strchr(text, '\r'), "a raw CR in the exposition");
    cr_expect_null(strstr(text, "\\r"), "an escape the format does not define");
    prom_free(&p);
    free(text);
}

static const char *header(const char *resp, const char *name, char *out, size_t n)
{
    char pat[64];
    snprintf(pat, sizeof pat, "\r\n%s: ", name);
    const char *h = strstr(resp, pat);
    if (!h)
        return NULL;
    h += strlen(pat);
    size_t k = strcspn(h, "\r");
    snprintf(out, n, "%.*s", (int)(k < n ? k : n - 1), h);
    return out;
}

Test(obs, request_id_given_is_echoed_and_in_problem_instance)
{
    send_str("GET /api/webhooks/42 HTTP/1.1\r\nHost: x\r\nX-Request-Id: trace-7 abc\r\n\r\n");
    char id[200];
    cr_assert_not_null(header(sent(), "X-Request-Id", id, sizeof id), "%s", sent());
    cr_expect_str_eq(id, "trace-7 abc");
    cr_expect_not_null(strstr(sent(), "\"instance\":\"urn:request:trace-7 abc\""), "%s", sent());
    /* Violations carry it too. */
    m.sent.len = 0;
    send_str("POST /api/webhooks HTTP/1.1\r\nHost: x\r\nX-Request-Id: v-1\r\nContent-Type: application/json\r\n"
             "Content-Length: 2\r\n\r\n{}");
    cr_expect_not_null(strstr(sent(), "X-Request-Id: v-1\r\n"), "%s", sent());
    const char *body = strstr(sent(), "\r\n\r\n");
    json_t *j = json_loads(body + 4, 0, NULL);
    cr_assert_not_null(j, "%s", body);
    cr_expect_str_eq(json_string_value(json_object_get(j, "instance")), "urn:request:v-1");
    cr_expect(json_is_array(json_object_get(j, "violations")));
    json_decref(j);
}

Test(obs, request_id_generated_when_absent_or_invalid)
{
    char big[200];
    memset(big, 'a', 129);
    big[129] = 0;
    char req[512];
    snprintf(req, sizeof req, "GET /q/health/live HTTP/1.1\r\nHost: x\r\nX-Request-Id: %s\r\n\r\n", big);
    const char *const reqs[] = {
        "GET /q/health/live HTTP/1.1\r\nHost: x\r\n\r\n",
        "GET /q/health/live HTTP/1.1\r\nHost: x\r\n\r\n",
        req,
        "GET /q/health/live HTTP/1.1\r\nHost: x\r\nX-Request-Id: a\tb\r\n\r\n",
        "GET /q/health/live HTTP/1.1\r\nHost: x\r\nX-Request-Id: caf\xc3\xa9\r\n\r\n",
    };
    char ids[5][200];
    for (int i = 0; i < 5; i++) {
        m.sent.len = 0;
        send_str(reqs[i]);
        cr_assert_not_null(header(sent(), "X-Request-Id", ids[i], sizeof ids[i]), "%s", sent());
        size_t n = strlen(ids[i]);
        cr_expect(n > 0 && n <= 128, "%s", ids[i]);
        for (size_t k = 0; k < n; k++)
            cr_expect(isgraph((unsigned char)ids[i][k]) || ids[i][k] == '-', "%s", ids[i]);
        cr_expect_neq(strcmp(ids[i], big), 0);
        for (int j = 0; j < i; j++)
            cr_expect_neq(strcmp(ids[i], ids[j]), 0, "id repeated: %s", ids[i]);
    }
}

Test(obs, request_id_on_parser_rejections)
{
    send_str("POST /api/webhooks HTTP/1.1\r\nHost: x\r\nX-Request-Id: big-1\r\nContent-Type: application/json\r\n"
             "Content-Length: 100000\r\n\r\n");
    cr_expect_not_null(strstr(sent(), "HTTP/1.1 413 "), "%s", sent());
    cr_expect_not_null(strstr(sent(), "X-Request-Id: big-1\r\n"), "%s", sent());
    cr_expect_not_null(strstr(sent(), "\"instance\":\"urn:request:big-1\""), "%s", sent());
    hk_memio_free(&m);
    hk_memio_init(&m, &w);
    struct prom p;
    scrape(&p, NULL);
    cr_expect_eq(prom_get(&p, "hookd_webhooks_rejected_total", "reason=\"too_large\""), 1);
    cr_expect_eq(prom_get(&p, "http_server_requests_seconds_count", REQ("UNKNOWN", "UNKNOWN", "413", "CLIENT_ERROR")),
                 1);
    prom_free(&p);
}

/* ---- a store that fails, for the 5xx path ---- */

static int failing_submit(struct hk_store_loop *sl, struct hk_store_op *op)
{
    (void)sl;
    (void)op;
    return HK_ESTORE;
}

static int capture_begin(char *path, size_t n)
{
    snprintf(path, n, "%s/stderr", dir);
    int saved = dup(STDERR_FILENO);
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    cr_assert(saved >= 0 && fd >= 0);
    dup2(fd, STDERR_FILENO);
    close(fd);
    return saved;
}

static char *capture_end(int saved, const char *path)
{
    dup2(saved, STDERR_FILENO);
    close(saved);
    FILE *f = fopen(path, "r");
    cr_assert_not_null(f);
    char *buf = calloc(1, 65536);
    size_t n = fread(buf, 1, 65535, f);
    buf[n] = 0;
    fclose(f);
    return buf;
}

Test(obs, server_error_logs_a_line_with_the_request_id)
{
    struct hk_store_vt vt = *store->vt;
    vt.submit = failing_submit;
    const struct hk_store_vt *orig = store->vt;
    store->vt = &vt;
    char path[128];
    int saved = capture_begin(path, sizeof path);
    hk_log_set_level(HK_LOG_INFO);
    send_str("GET /api/webhooks/1 HTTP/1.1\r\nHost: x\r\nX-Request-Id: boom-1\r\n\r\n");
    hk_log_set_level(HK_LOG_ERROR);
    send_str("GET /api/webhooks/1 HTTP/1.1\r\nHost: x\r\nX-Request-Id: quiet-1\r\n\r\n");
    hk_log_set_level(HK_LOG_INFO);
    char *log = capture_end(saved, path);
    store->vt = orig;
    cr_expect_not_null(strstr(sent(), "HTTP/1.1 500 "), "%s", sent());
    /* One JSON line, for the first request only (the second was below the level). */
    json_error_t je;
    json_t *j = json_loads(log, JSON_DISABLE_EOF_CHECK, &je);
    cr_assert_not_null(j, "not a JSON line: %s", log);
    cr_expect_str_eq(json_string_value(json_object_get(j, "level")), "warn");
    cr_expect_str_eq(json_string_value(json_object_get(j, "requestId")), "boom-1");
    cr_expect_eq(json_integer_value(json_object_get(j, "status")), 500);
    json_decref(j);
    cr_expect_null(strstr(log, "quiet-1"), "%s", log);
    cr_expect_eq(strchr(log, '\n') - log + 1, (long)strlen(log), "more than one line: %s", log);
    free(log);
    struct prom p;
    scrape(&p, NULL);
    cr_expect_eq(prom_get(&p, "hookd_store_errors_total", "backend=\"sqlite\",error=\"failed\",operation=\"get\""), 2);
    prom_free(&p);
}

/* ---- OpenAPI ---- */

static const char *const http_methods[] = {"get", "put", "post", "delete", "options", "head", "patch", "trace"};

Test(obs, openapi_document_matches_the_route_table)
{
    json_error_t je;
    json_t *doc = json_loadb(hk_openapi_json, hk_openapi_json_len, 0, &je);
    cr_assert_not_null(doc, "embedded JSON: %s at line %d", je.text, je.line);
    cr_expect_str_eq(json_string_value(json_object_get(doc, "openapi")), "3.1.0");
    json_t *paths = json_object_get(doc, "paths");
    cr_assert(json_is_object(paths));
    /* Every registered (template, method) is documented... */
    for (int i = 0; i < hk_api_nroutes; i++) {
        char lower[16];
        const char *mth = hk_route_method_name(&hk_api_routes[i]);
        size_t k = 0;
        for (; mth[k] && k < sizeof lower - 1; k++)
            lower[k] = (char)tolower((unsigned char)mth[k]);
        lower[k] = 0;
        json_t *op = json_object_get(json_object_get(paths, hk_api_routes[i].tmpl), lower);
        cr_expect(json_is_object(op), "route %s %s is not in docs/openapi.json", mth, hk_api_routes[i].tmpl);
        cr_expect(json_is_object(json_object_get(op, "responses")), "%s %s: no responses", mth,
                  hk_api_routes[i].tmpl);
    }
    /* ...and every documented operation is registered. */
    const char *path;
    json_t *item;
    json_object_foreach(paths, path, item) {
        int ops = 0;
        for (size_t k = 0; k < sizeof http_methods / sizeof http_methods[0]; k++) {
            if (!json_object_get(item, http_methods[k]))
                continue;
            ops++;
            bool found = false;
            for (int i = 0; i < hk_api_nroutes && !found; i++)
                found = strcmp(hk_api_routes[i].tmpl, path) == 0 &&
                        strcasecmp(hk_route_method_name(&hk_api_routes[i]), http_methods[k]) == 0;
            cr_expect(found, "docs/openapi.json documents %s %s, which hookd does not serve", http_methods[k], path);
        }
        cr_expect_gt(ops, 0, "%s has no operation", path);
        /* A templated path declares its parameter. */
        if (strchr(path, '{')) {
            json_t *params = json_object_get(item, "parameters");
            cr_expect(json_is_array(params) && json_array_size(params) > 0, "%s: no path parameter", path);
        }
    }
    json_decref(doc);
}

/* Every 4xx/5xx response is a problem document (inline or through a $ref). */
Test(obs, openapi_errors_are_problem_json)
{
    json_t *doc = json_loadb(hk_openapi_json, hk_openapi_json_len, 0, NULL);
    cr_assert_not_null(doc);
    json_t *shared = json_object_get(json_object_get(doc, "components"), "responses");
    const char *path;
    json_t *item;
    json_object_foreach(json_object_get(doc, "paths"), path, item) {
        const char *mth;
        json_t *op;
        json_object_foreach(item, mth, op) {
            if (strcmp(mth, "parameters") == 0)
                continue;
            const char *code;
            json_t *resp;
            json_object_foreach(json_object_get(op, "responses"), code, resp) {
                if (code[0] != '4' && code[0] != '5')
                    continue;
                json_t *ref = json_object_get(resp, "$ref");
                if (ref) {
                    const char *r = json_string_value(ref);
                    const char *name = strrchr(r, '/');
                    resp = json_object_get(shared, name ? name + 1 : r);
                    cr_assert_not_null(resp, "%s %s %s: dangling %s", mth, path, code, r);
                }
                json_t *ct = json_object_get(resp, "content");
                /* GraphQL over HTTP answers a request that cannot run with
                 * a GraphQL response document, not a problem. */
                bool ok = json_object_get(ct, "application/problem+json") != NULL ||
                          (strcmp(code, "503") == 0 && strncmp(path, "/q/health", 9) == 0) ||
                          (strcmp(code, "400") == 0 && strcmp(path, "/graphql") == 0 &&
                           json_object_get(ct, "application/graphql-response+json") != NULL);
                cr_expect(ok, "%s %s %s is not application/problem+json", mth, path, code);
            }
        }
    }
    json_decref(doc);
}

Test(obs, openapi_served_as_yaml_by_default_json_on_request)
{
    send_str("GET /q/openapi HTTP/1.1\r\nHost: x\r\n\r\n");
    cr_expect_not_null(strstr(sent(), "Content-Type: application/yaml;charset=UTF-8\r\n"), "%.300s", sent());
    cr_expect_not_null(strstr(sent(), "\r\n\r\nopenapi: \"3.1.0\"\n"), "%.300s", sent());
    for (int i = 0; i < hk_api_nroutes; i++) {
        char key[128];
        snprintf(key, sizeof key, "\n  \"%s\":\n", hk_api_routes[i].tmpl);
        cr_expect_not_null(strstr(sent(), key), "YAML lacks %s", hk_api_routes[i].tmpl);
    }
    const char *const json_reqs[] = {
        "GET /q/openapi?format=json HTTP/1.1\r\nHost: x\r\n\r\n",
        "GET /q/openapi HTTP/1.1\r\nHost: x\r\nAccept: text/html, application/json;q=0.9\r\n\r\n",
    };
    for (int i = 0; i < 2; i++) {
        m.sent.len = 0;
        send_str(json_reqs[i]);
        cr_expect_not_null(strstr(sent(), "Content-Type: application/json;charset=UTF-8\r\n"), "%.300s", sent());
        json_t *j = json_loads(strstr(sent(), "\r\n\r\n") + 4, 0, NULL);
        cr_expect(json_is_object(j));
        json_decref(j);
    }
    m.sent.len = 0;
    send_str("GET /q/openapi?format=xml HTTP/1.1\r\nHost: x\r\n\r\n");
    cr_expect_not_null(strstr(sent(), "HTTP/1.1 400 "), "%.300s", sent());
}
