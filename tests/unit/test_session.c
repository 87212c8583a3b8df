/* SPDX-License-Identifier: MIT
 * The HTTP session through the real request path, in memory: parsing,
 * pipelining, limits, smuggling, and the API's answers, without sockets. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "api/api.h"
#include "core/config.h"
#include "http/memio.h"
#include "store/store.h"

static struct hk_config cfg;
static struct hk_store *store;
static struct hk_worker w;
static struct hk_api *api;
static struct hk_memio m;
static char dir[64];

static void setup(void)
{
    char err[256];
    char *argv[] = {"hookd", NULL};
    unsetenv("HOOKD_WEBHOOK_SECRET");
    cr_assert_eq(hk_config_load(&cfg, 1, argv, err, sizeof err), HK_CONFIG_RUN);
    cfg.auth_on = false;   /* the API as the reference's clients use it */
    cfg.max_header_bytes = 1024;
    cfg.max_body_bytes = 256;
    snprintf(dir, sizeof dir, "/tmp/hookd-session-XXXXXX");
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

TestSuite(session, .init = setup, .fini = teardown);

static void send_str(const char *s)
{
    hk_memio_feed(&m, s, strlen(s));
    hk_memio_settle(&m);
}

/* NUL-terminated copy of everything sent so far. */
static const char *sent(void)
{
    hk_buf_putc(&m.sent, 0);
    m.sent.len--;
    return m.sent.p ? m.sent.p : "";
}

static int count(const char *hay, const char *needle)
{
    int n = 0;
    for (const char *p = hay; (p = strstr(p, needle)); p += strlen(needle))
        n++;
    return n;
}

Test(session, health_live)
{
    send_str("GET /q/health/live HTTP/1.1\r\nHost: x\r\n\r\n");
    cr_assert_not_null(strstr(sent(), "HTTP/1.1 200 OK\r\n"), "%s", sent());
    cr_expect_not_null(strstr(sent(), "\r\nDate: "));
    cr_expect_not_null(strstr(sent(), "\r\nContent-Length: "));
    cr_expect_not_null(strstr(sent(), "{\"status\":\"UP\""));
    cr_expect_not(m.closed);
}

Test(session, pipelined_in_one_feed_answered_in_order)
{
    send_str("GET /q/health/live HTTP/1.1\r\nHost: x\r\n\r\n"
             "POST /api/webhooks HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 36\r\n\r\n"
             "{\"source\":\"gh\",\"eventType\":\"push\"}  "
             "GET /api/webhooks/1 HTTP/1.1\r\nHost: x\r\n\r\n");
    const char *s = sent();
    const char *a = strstr(s, "HTTP/1.1 200 OK");
    const char *b = strstr(s, "HTTP/1.1 201 Created");
    cr_assert(a && b, "%s", s);
    const char *c = strstr(b, "HTTP/1.1 200 OK");
    cr_assert(a < b && c, "%s", s);
    cr_expect_not_null(strstr(c, "\"id\":1,\"source\":\"gh\""));
}

Test(session, byte_by_byte)
{
    const char *req = "POST /api/webhooks HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                      "Transfer-Encoding: chunked\r\n\r\n5\r\n{\"sou\r\n19\r\nrce\":\"a\",\"eventType\":\"b\"}\r\n0\r\n\r\n";
    for (size_t i = 0; req[i]; i++)
        hk_memio_feed(&m, req + i, 1);
    hk_memio_settle(&m);
    cr_expect_not_null(strstr(sent(), "HTTP/1.1 201 Created"), "%s", sent());
}

Test(session, smuggling_cl_and_te_rejected)
{
    send_str("POST /api/webhooks HTTP/1.1\r\nHost: x\r\nContent-Length: 4\r\nTransfer-Encoding: chunked\r\n\r\n"
             "0\r\n\r\n");
    cr_expect_not_null(strstr(sent(), "HTTP/1.1 400 "), "%s", sent());
    cr_expect_not_null(strstr(sent(), "Connection: close"));
    cr_expect(m.closed);
}

Test(session, header_limit_431)
{
    char big[2048];
    memset(big, 'a', sizeof big);
    big[sizeof big - 1] = 0;
    char req[2200];
    snprintf(req, sizeof req, "GET /q/health HTTP/1.1\r\nHost: x\r\nX-Big: %s\r\n\r\n", big);
    send_str(req);
    cr_expect_not_null(strstr(sent(), "HTTP/1.1 431 "), "%s", sent());
    cr_expect(m.closed);
}

Test(session, body_limit_from_content_length_413)
{
    send_str("POST /api/webhooks HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 100000\r\n\r\n");
    cr_expect_not_null(strstr(sent(), "HTTP/1.1 413 "), "%s", sent());
    cr_expect(m.closed);
}

Test(session, body_limit_chunked_413)
{
    send_str("POST /api/webhooks HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n");
    char chunk[300];
    memset(chunk, 'x', 200);
    sprintf(chunk + 200, "\r\n");
    for (int i = 0; i < 2 && !m.closed; i++) {
        send_str("c8\r\n");
        send_str(chunk);
    }
    cr_expect_not_null(strstr(sent(), "HTTP/1.1 413 "), "%s", sent());
    cr_expect(m.closed);
}

Test(session, missing_host_http11_400)
{
    send_str("GET /q/health HTTP/1.1\r\n\r\n");
    cr_expect_not_null(strstr(sent(), "HTTP/1.1 400 "), "%s", sent());
}

Test(session, http10_closes)
{
    send_str("GET /q/health/live HTTP/1.0\r\n\r\n");
    cr_expect_not_null(strstr(sent(), "HTTP/1.1 200 OK"), "%s", sent());
    cr_expect_not_null(strstr(sent(), "Connection: close"));
    cr_expect(m.closed);
}

Test(session, head_has_no_body)
{
    send_str("HEAD /q/health/live HTTP/1.1\r\nHost: x\r\n\r\n");
    const char *s = sent();
    cr_assert_not_null(strstr(s, "HTTP/1.1 200 OK"), "%s", s);
    const char *end = strstr(s, "\r\n\r\n");
    cr_assert_not_null(end);
    cr_expect_eq(end[4], 0, "HEAD response has a body: %s", s);
}

Test(session, expect_continue)
{
    send_str("POST /api/webhooks HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 33\r\n"
             "Expect: 100-continue\r\n\r\n");
    cr_expect_not_null(strstr(sent(), "HTTP/1.1 100 Continue\r\n\r\n"), "%s", sent());
    send_str("{\"source\":\"a\",\"eventType\":\"bbbb\"}");
    cr_expect_not_null(strstr(sent(), "HTTP/1.1 201 Created"), "%s", sent());
}

Test(session, stream_all_is_chunked_and_complete)
{
    for (int i = 0; i < 1200; i++)
        send_str("POST /api/webhooks HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 32\r\n\r\n"
                 "{\"source\":\"s\",\"eventType\":\"e\"}  ");
    cr_assert_eq(count(sent(), "201 Created"), 1200);
    m.sent.len = 0;
    send_str("GET /api/webhooks?all=true HTTP/1.1\r\nHost: x\r\n\r\n");
    const char *s = sent();
    cr_expect_not_null(strstr(s, "Transfer-Encoding: chunked"), "%.300s", s);
    cr_expect_eq(count(s, "\"processingMode\""), 1200);
    cr_expect_not_null(strstr(s, "\"id\":1200,"));
    cr_expect_not_null(strstr(s, "]\r\n0\r\n\r\n"));
}

Test(session, not_found_and_method_not_allowed)
{
    send_str("GET /nope HTTP/1.1\r\nHost: x\r\n\r\nPUT /api/webhooks HTTP/1.1\r\nHost: x\r\nContent-Length: 0\r\n\r\n");
    const char *s = sent();
    cr_expect_not_null(strstr(s, "HTTP/1.1 404 Not Found"), "%s", s);
    cr_expect_not_null(strstr(s, "HTTP/1.1 405 Method Not Allowed"));
    cr_expect_not_null(strstr(s, "Allow: GET, POST\r\n"));
    cr_expect_not_null(strstr(s, "application/problem+json"));
}

Test(session, timeout_408_when_request_incomplete)
{
    send_str("GET /q/hea");
    hk_session_timeout(&m.s);
    cr_expect_not_null(strstr(sent(), "HTTP/1.1 408 "), "%s", sent());
    cr_expect(m.closed);
}

Test(session, idle_timeout_closes_quietly)
{
    send_str("GET /q/health/live HTTP/1.1\r\nHost: x\r\n\r\n");
    size_t before = m.sent.len;
    hk_session_timeout(&m.s);
    cr_expect(m.closed);
    cr_expect_eq(m.sent.len, before);
}

/* ---- strictness for deployments behind proxies ---- */

static void expect_rejected(const char *status_line, const char *detail_part)
{
    cr_expect_not_null(strstr(sent(), status_line), "%s", sent());
    cr_expect_not_null(strstr(sent(), "application/problem+json"), "%s", sent());
    if (detail_part)
        cr_expect_not_null(strstr(sent(), detail_part), "%s", sent());
    cr_expect(m.closed, "the connection closes after a framing error");
}

Test(session, second_host_400)
{
    send_str("GET /q/health/live HTTP/1.1\r\nHost: a\r\nHost: b\r\n\r\n");
    expect_rejected("HTTP/1.1 400 ", "more than one Host header");
}

Test(session, second_signature_400_without_a_secret)
{
    send_str("POST /api/webhooks HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
             "X-Hub-Signature-256: sha256=00\r\nX-hub-signature-256: sha256=11\r\nContent-Length: 2\r\n\r\n{}");
    expect_rejected("HTTP/1.1 400 ", "X-Hub-Signature-256");
}

Test(session, second_idempotency_key_400)
{
    send_str("POST /api/webhooks HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
             "Idempotency-Key: a\r\nIdempotency-Key: b\r\nContent-Length: 2\r\n\r\n{}");
    expect_rejected("HTTP/1.1 400 ", NULL);
}

Test(session, obs_fold_400)
{
    send_str("GET /q/health/live HTTP/1.1\r\nHost: x\r\nX-A: one\r\n two\r\n\r\n");
    expect_rejected("HTTP/1.1 400 ", "line folding");
}

Test(session, obs_fold_with_tab_split_across_reads_400)
{
    const char *a = "GET /q/health/live HTTP/1.1\r\nHost: x\r\nX-A: one\r";
    hk_memio_feed(&m, a, strlen(a));
    send_str("\n\ttwo\r\n\r\n");
    expect_rejected("HTTP/1.1 400 ", "line folding");
}

Test(session, value_split_across_reads_is_not_folding)
{
    const char *a = "GET /q/health/live HTTP/1.1\r\nHost: x\r\nX-A: one";
    hk_memio_feed(&m, a, strlen(a));
    send_str(" two\r\n\r\n");
    cr_expect_not_null(strstr(sent(), "HTTP/1.1 200 OK"), "%s", sent());
    cr_expect_not(m.closed);
}

Test(session, other_http_versions_505)
{
    static const char *const versions[] = {"HTTP/1.2", "HTTP/2.0", "HTTP/0.9", "HTTP/3.0"};
    for (size_t i = 0; i < sizeof versions / sizeof versions[0]; i++) {
        hk_memio_free(&m);
        hk_memio_init(&m, &w);
        char req[128];
        snprintf(req, sizeof req, "GET /q/health/live %s\r\nHost: x\r\n\r\n", versions[i]);
        send_str(req);
        cr_expect_not_null(strstr(sent(), "HTTP/1.1 505 HTTP Version Not Supported"), "%s: %s", versions[i], sent());
        cr_expect(m.closed, "%s", versions[i]);
    }
}

Test(session, broken_version_syntax_400)
{
    send_str("GET /q/health/live HTTP/1.x\r\nHost: x\r\n\r\n");
    expect_rejected("HTTP/1.1 400 ", NULL);
}

Test(session, long_chunk_extension_400)
{
    char req[1024];
    char ext[300];
    memset(ext, 'e', sizeof ext - 1);
    ext[sizeof ext - 1] = 0;
    snprintf(req, sizeof req,
             "POST /api/webhooks HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
             "Transfer-Encoding: chunked\r\n\r\n2;%s\r\n{}\r\n0\r\n\r\n", ext);
    send_str(req);
    expect_rejected("HTTP/1.1 400 ", "chunk extensions");
}

Test(session, chunk_extension_split_across_reads_400)
{
    const char *a = "POST /api/webhooks HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                    "Transfer-Encoding: chunked\r\n\r\n2;n=";
    hk_memio_feed(&m, a, strlen(a));
    char v[200];
    memset(v, 'v', sizeof v - 1);
    v[sizeof v - 1] = 0;
    hk_memio_feed(&m, v, strlen(v));
    send_str(v);
    expect_rejected("HTTP/1.1 400 ", "chunk extensions");
}

Test(session, short_chunk_extensions_are_ignored)
{
    send_str("POST /api/webhooks HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
             "Transfer-Encoding: chunked\r\n\r\n19;a;c\r\n{\"source\":\"s\",\"eventType\"\r\n5;x=y\r\n:\"e\"}\r\n0\r\n\r\n");
    cr_expect_not_null(strstr(sent(), "HTTP/1.1 201 Created"), "%s", sent());
}

Test(session, filters_that_are_not_utf8_text_400)
{
    static const char *const q[] = {"source=%ff%fe", "source=a%00b", "eventType=%c0%af", "eventType=%ed%a0%80"};
    for (size_t i = 0; i < sizeof q / sizeof q[0]; i++) {
        char req[128];
        m.sent.len = 0;
        snprintf(req, sizeof req, "GET /api/webhooks?%s HTTP/1.1\r\nHost: x\r\n\r\n", q[i]);
        send_str(req);
        cr_expect_not_null(strstr(sent(), "HTTP/1.1 400 "), "%s: %s", q[i], sent());
        cr_expect_not_null(strstr(sent(), "UTF-8"), "%s: %s", q[i], sent());
    }
    m.sent.len = 0;
    send_str("GET /api/webhooks?source=caf%C3%A9 HTTP/1.1\r\nHost: x\r\n\r\n");
    cr_expect_not_null(strstr(sent(), "HTTP/1.1 200 OK"), "%s", sent());
}
