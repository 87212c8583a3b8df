/* SPDX-License-Identifier: MIT
 * HTTP/1.1 behaviour on the wire: keep-alive, pipelining, connection close
 * rules, parser rejections (with a close), limits and timeouts. Most tests
 * use raw sockets because libcurl would hide or refuse what they check. */
#include <criterion/criterion.h>

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness.h"

static struct hk_server srv;

static void teardown(void)
{
    hk_server_cleanup(&srv);
}

TestSuite(http, .fini = teardown, .timeout = 60);

#define LIVE "GET /q/health/live HTTP/1.1\r\nHost: localhost\r\n\r\n"

static void assert_raw_common(const struct hk_raw *raw)
{
    for (int i = 0; i < raw->n; i++) {
        const struct hk_raw_resp *rr = &raw->r[i];
        if (rr->interim)
            continue;
        hk_assert_common(rr->head, rr->head_len, rr->status, rr->body_len, false);
    }
}

/* Send `req` (n bytes; 0 = strlen) on a new connection and expect one
 * response with `status`, Connection: close, then the server closing. */
static void expect_status_and_close(const char *req, size_t n, int status)
{
    hk_context("request %.200s", req);
    int fd = hk_tcp_connect(&srv);
    /* The server may close before it has read everything: ignore send errors. */
    hk_tcp_send(fd, req, n ? n : strlen(req));
    struct hk_raw raw = {0};
    hk_tcp_read(fd, &raw, 1, 3000);
    cr_assert_eq(raw.nfinal, 1, "expected a %d response to %.120s...; got (closed %d, reset %d): %s",
                 status, req, raw.closed, raw.reset, raw.buf);
    const struct hk_raw_resp *rr = hk_raw_final(&raw, 0);
    cr_assert_eq(rr->status, status, "expected %d to %.120s...:\n%s", status, req, raw.buf);
    assert_raw_common(&raw);
    char v[128];
    cr_assert(hk_raw_header(&raw, 0, "Connection", v, sizeof v) && hk_list_has(v, "close"),
              "%d without Connection: close:\n%.*s", status, (int)rr->head_len, rr->head);
    if (status >= 400) {
        cr_assert(hk_raw_header(&raw, 0, "Content-Type", v, sizeof v) &&
                  strncmp(v, "application/problem+json", 24) == 0,
                  "%d is not problem+json: %s", status, v);
    }
    cr_assert(hk_tcp_wait_closed(fd, &raw, 2000), "server did not close after %d to %.120s", status, req);
    cr_assert_eq(raw.nfinal, 1, "more responses after the %d:\n%s", status, raw.buf);
    hk_tcp_close(fd);
    hk_raw_free(&raw);
    hk_context("%s", "");
}

/* ---- keep-alive ---- */

Test(http, keep_alive_reuses_one_connection)
{
    hk_server_start(&srv, NULL);
    CURL *h = hk_curl_new();
    const char *ct[] = {"Content-Type: application/json", NULL};
    struct hk_req reqs[] = {
        {.path = "/q/health/live"},
        {.method = "POST", .path = "/api/webhooks", .headers = ct, .body = "{\"source\":\"s\",\"eventType\":\"e\"}"},
        {.path = "/api/webhooks"},
        {.path = "/api/webhooks/1"},
        {.method = "HEAD", .path = "/api/webhooks/1"},
        {.path = "/nope"},
        {.method = "POST", .path = "/api/webhooks", .headers = ct, .body = "{}"},
        {.method = "PUT", .path = "/api/webhooks"},
        {.method = "DELETE", .path = "/api/webhooks/1"},
        {.method = "DELETE", .path = "/api/webhooks/1"},
        {.path = "/api/system/info"},
        {.method = "POST", .path = "/api/webhooks", .headers = ct, .body = "{\"source\":\"s\",\"eventType\":\"e\"}",
         .chunked = true},
        {.path = "/api/webhooks?all=true"},
        {.path = "/q/health"},
    };
    long want[] = {200, 201, 200, 200, 200, 404, 400, 405, 204, 404, 200, 201, 200, 200};
    for (size_t i = 0; i < sizeof reqs / sizeof reqs[0]; i++) {
        hk_context("request %zu: %s %s", i, reqs[i].method ? reqs[i].method : "GET", reqs[i].path);
        struct hk_resp r;
        hk_do(&srv, h, &reqs[i], &r);
        cr_assert_eq(r.status, want[i], "request %zu (%s): %ld %s", i, reqs[i].path, r.status, r.body);
        char v[64];
        cr_assert(!hk_header(&r, "Connection", v, sizeof v) || !hk_list_has(v, "close"),
                  "request %zu: Connection: close on a keep-alive exchange", i);
        cr_assert_eq(r.num_connects, i == 0 ? 1 : 0, "request %zu (%s) opened a new connection", i,
                     reqs[i].path);
        hk_resp_free(&r);
    }
    curl_easy_cleanup(h);
    hk_finish(&srv);
}

/* ---- pipelining ---- */

Test(http, pipelined_gets_in_one_write)
{
    hk_server_start(&srv, NULL);
    int fd = hk_tcp_connect(&srv);
    cr_assert_eq(hk_tcp_sends(fd, LIVE LIVE LIVE), 0);
    struct hk_raw raw = {0};
    hk_tcp_read(fd, &raw, 3, 3000);
    cr_assert(!raw.malformed, "%s", raw.buf);
    cr_assert_eq(raw.nfinal, 3, "3 pipelined GETs, %d responses:\n%s", raw.nfinal, raw.buf);
    assert_raw_common(&raw);
    for (int i = 0; i < 3; i++) {
        cr_assert_eq(raw.r[i].status, 200);
        json_t *j = json_loadb(raw.r[i].body, raw.r[i].body_len, 0, NULL);
        cr_assert_str_eq(hk_jstr(j, "status"), "UP");
        json_decref(j);
    }
    /* Still open and in sync. */
    cr_assert_eq(hk_tcp_sends(fd, LIVE), 0);
    hk_tcp_read(fd, &raw, 4, 3000);
    cr_assert_eq(raw.nfinal, 4, "%s", raw.buf);
    cr_assert_eq(raw.r[3].status, 200);
    hk_tcp_close(fd);
    hk_raw_free(&raw);
    hk_finish(&srv);
}

Test(http, pipelined_get_post_get_in_order)
{
    hk_server_start(&srv, NULL);
    const char *body = "{\"source\":\"pipe\",\"eventType\":\"line\",\"payload\":\"p\"}";
    char req[1024];
    snprintf(req, sizeof req,
             LIVE "POST /api/webhooks HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\n"
                  "Content-Length: %zu\r\n\r\n%s"
                  "GET /api/webhooks?limit=1 HTTP/1.1\r\nHost: localhost\r\n\r\n",
             strlen(body), body);
    int fd = hk_tcp_connect(&srv);
    cr_assert_eq(hk_tcp_sends(fd, req), 0);
    struct hk_raw raw = {0};
    hk_tcp_read(fd, &raw, 3, 3000);
    cr_assert(!raw.malformed, "%s", raw.buf);
    cr_assert_eq(raw.nfinal, 3, "%s", raw.buf);
    assert_raw_common(&raw);
    cr_assert_eq(raw.r[0].status, 200, "%s", raw.buf);
    cr_assert_eq(raw.r[1].status, 201, "%s", raw.buf);
    cr_assert_eq(raw.r[2].status, 200, "%s", raw.buf);
    json_t *created = json_loadb(raw.r[1].body, raw.r[1].body_len, 0, NULL);
    int64_t id = hk_assert_webhook(created, "pipe", "line", "p");
    /* The GET was sent after the POST, so it must see the new row. */
    json_t *a = json_loadb(raw.r[2].body, raw.r[2].body_len, 0, NULL);
    cr_assert(json_is_array(a) && json_array_size(a) == 1, "%s", raw.r[2].body);
    cr_assert_eq(json_integer_value(json_object_get(json_array_get(a, 0), "id")), id,
                 "the pipelined GET did not see the POST before it");
    json_decref(a);
    json_decref(created);
    hk_tcp_close(fd);
    hk_raw_free(&raw);
    hk_finish(&srv);
}

Test(http, pipelined_error_does_not_break_the_sequence)
{
    hk_server_start(&srv, NULL);
    int fd = hk_tcp_connect(&srv);
    cr_assert_eq(hk_tcp_sends(fd, LIVE "GET /nope HTTP/1.1\r\nHost: localhost\r\n\r\n"
                                       "POST /api/webhooks HTTP/1.1\r\nHost: localhost\r\n"
                                       "Content-Type: application/json\r\nContent-Length: 2\r\n\r\n{}" LIVE),
                 0);
    struct hk_raw raw = {0};
    hk_tcp_read(fd, &raw, 4, 3000);
    cr_assert_eq(raw.nfinal, 4, "%s", raw.buf);
    assert_raw_common(&raw);
    cr_assert_eq(raw.r[0].status, 200);
    cr_assert_eq(raw.r[1].status, 404);
    cr_assert_eq(raw.r[2].status, 400);
    cr_assert_eq(raw.r[3].status, 200);
    hk_tcp_close(fd);
    hk_raw_free(&raw);
    hk_finish(&srv);
}

Test(http, many_pipelined_requests_with_large_responses)
{
    hk_server_start(&srv, NULL);
    for (int i = 0; i < 20; i++)
        hk_create(&srv, "bulk", "e", "0123456789012345678901234567890123456789012345678901234567890123456789");
    /* ~20 KB of requests, ~150 responses of ~3 KB: more than one read and one write each way. */
    int n = 150;
    size_t cap = (size_t)n * 64;
    char *req = malloc(cap);
    size_t len = 0;
    for (int i = 0; i < n; i++)
        len += (size_t)snprintf(req + len, cap - len, "GET /api/webhooks?limit=20 HTTP/1.1\r\nHost: x\r\n\r\n");
    int fd = hk_tcp_connect(&srv);
    cr_assert_eq(hk_tcp_send(fd, req, len), 0);
    struct hk_raw raw = {0};
    hk_tcp_read(fd, &raw, n, 5000);
    cr_assert(!raw.malformed, "malformed response stream");
    cr_assert_eq(raw.nfinal, n, "%d of %d responses (timed out %d)", raw.nfinal, n, raw.timed_out);
    for (int i = 0; i < n; i++) {
        cr_assert_eq(raw.r[i].status, 200, "response %d: %d", i, raw.r[i].status);
        json_t *a = json_loadb(raw.r[i].body, raw.r[i].body_len, 0, NULL);
        cr_assert(json_is_array(a) && json_array_size(a) == 20, "response %d is not the list of 20", i);
        json_decref(a);
    }
    cr_assert_eq(raw.r[n - 1].head + raw.r[n - 1].head_len + raw.r[n - 1].body_len, raw.buf + raw.len,
                 "bytes after the last response");
    free(req);
    hk_tcp_close(fd);
    hk_raw_free(&raw);
    hk_finish(&srv);
}

Test(http, request_split_into_single_bytes)
{
    hk_server_start(&srv, NULL);
    const char *body = "{\"source\":\"drip\",\"eventType\":\"e\"}";
    char req[512];
    snprintf(req, sizeof req,
             "POST /api/webhooks?x=1 HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\n"
             "X-Long-Header-Name-To-Split: some value that spans reads\r\nContent-Length: %zu\r\n\r\n%s",
             strlen(body), body);
    int fd = hk_tcp_connect(&srv);
    for (size_t i = 0; req[i]; i++) {
        cr_assert_eq(hk_tcp_send(fd, req + i, 1), 0, "send failed at byte %zu", i);
        if (i % 8 == 0)
            hk_sleep_ms(1);
    }
    struct hk_raw raw = {0};
    hk_tcp_read(fd, &raw, 1, 3000);
    cr_assert_eq(raw.nfinal, 1, "%s", raw.buf);
    cr_assert_eq(raw.r[0].status, 201, "%s", raw.buf);
    hk_tcp_close(fd);
    hk_raw_free(&raw);
    hk_finish(&srv);
}

Test(http, header_names_are_case_insensitive)
{
    hk_server_start(&srv, NULL);
    const char *body = "{\"source\":\"case\",\"eventType\":\"e\"}";
    char req[512];
    snprintf(req, sizeof req,
             "POST /api/webhooks HTTP/1.1\r\nhost: localhost\r\ncontent-type: application/json\r\n"
             "CONTENT-LENGTH: %zu\r\n\r\n%s",
             strlen(body), body);
    int fd = hk_tcp_connect(&srv);
    cr_assert_eq(hk_tcp_sends(fd, req), 0);
    struct hk_raw raw = {0};
    hk_tcp_read(fd, &raw, 1, 3000);
    cr_assert_eq(raw.nfinal, 1, "%s", raw.buf);
    cr_assert_eq(raw.r[0].status, 201, "%s", raw.buf);
    hk_tcp_close(fd);
    hk_raw_free(&raw);
    hk_finish(&srv);
}

static void body_stream(int i, char *buf, size_t n)
{
    snprintf(buf, n, "{\"source\":\"stream\",\"eventType\":\"e\",\"payload\":\"row %d padded "
                     "xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx\"}", i);
}

/* Clients that vanish during a streamed list (all=true spans several store
 * batches) must not take the server down or leak the stream. */
Test(http, client_gone_during_streamed_list)
{
    hk_server_start(&srv, NULL);
    enum { N = 600 };
    int64_t ids[N];
    cr_assert_eq(hk_parallel_posts(&srv, 4, N, body_stream, ids), N);
    for (int i = 0; i < 30; i++) {
        int fd = hk_tcp_connect(&srv);
        cr_assert_eq(hk_tcp_sends(fd, "GET /api/webhooks?all=true HTTP/1.1\r\nHost: x\r\n\r\n"), 0);
        if (i % 3 == 1) {
            struct hk_raw raw = {0};
            hk_tcp_read_until(fd, &raw, "\"id\"", 2000);
            hk_raw_free(&raw);
        } else if (i % 3 == 2) {
            /* Pipelined second request, then gone. */
            hk_tcp_sends(fd, LIVE);
        }
        hk_tcp_close(fd);
    }
    hk_assert_alive(&srv);
    /* A full stream still works afterwards. */
    struct hk_resp r;
    hk_get(&srv, "/api/webhooks?all=true", &r);
    json_t *a = hk_assert_json(&r, 200);
    cr_assert_eq(json_array_size(a), (size_t)N);
    json_decref(a);
    hk_resp_free(&r);
    hk_finish(&srv);
}

/* ---- closing ---- */

Test(http, http10_without_keep_alive_closes)
{
    hk_server_start(&srv, NULL);
    int fd = hk_tcp_connect(&srv);
    cr_assert_eq(hk_tcp_sends(fd, "GET /q/health/live HTTP/1.0\r\n\r\n"), 0);
    struct hk_raw raw = {0};
    hk_tcp_read(fd, &raw, 1, 3000);
    cr_assert_eq(raw.nfinal, 1, "%s", raw.buf);
    cr_assert_eq(raw.r[0].status, 200);
    assert_raw_common(&raw);
    char v[64];
    cr_assert(hk_raw_header(&raw, 0, "Connection", v, sizeof v) && hk_list_has(v, "close"),
              "HTTP/1.0 response the server closes after, without Connection: close:\n%s", raw.buf);
    cr_assert(hk_tcp_wait_closed(fd, &raw, 2000), "HTTP/1.0 connection left open");
    hk_tcp_close(fd);
    hk_raw_free(&raw);

    /* curl speaking HTTP/1.0. */
    struct hk_req req = {.path = "/api/webhooks", .http10 = true};
    struct hk_resp r;
    hk_do(&srv, NULL, &req, &r);
    json_decref(hk_assert_json(&r, 200));
    hk_resp_free(&r);
    hk_finish(&srv);
}

Test(http, http10_never_gets_chunked)
{
    hk_server_start(&srv, NULL);
    hk_create(&srv, "s", "e", NULL);
    int fd = hk_tcp_connect(&srv);
    cr_assert_eq(hk_tcp_sends(fd, "GET /api/webhooks?all=true HTTP/1.0\r\n\r\n"), 0);
    struct hk_raw raw = {0};
    hk_tcp_read(fd, &raw, 0, 3000); /* until close */
    cr_assert(raw.closed, "HTTP/1.0 connection left open");
    cr_assert(raw.n >= 1, "%s", raw.buf);
    char te[64];
    cr_assert(!hk_raw_header(&raw, 0, "Transfer-Encoding", te, sizeof te),
              "chunked response to an HTTP/1.0 request (RFC 9112 6.1):\n%s", raw.buf);
    json_t *a = json_loadb(raw.r[0].body, raw.r[0].body_len, 0, NULL);
    cr_assert(json_is_array(a) && json_array_size(a) == 1, "%s", raw.buf);
    json_decref(a);
    hk_tcp_close(fd);
    hk_raw_free(&raw);
    hk_finish(&srv);
}

Test(http, connection_close_is_honoured)
{
    hk_server_start(&srv, NULL);
    expect_status_and_close("GET /q/health/live HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n", 0,
                            200);
    /* Pipelined after a Connection: close: the later request is not answered. */
    int fd = hk_tcp_connect(&srv);
    cr_assert_eq(hk_tcp_sends(fd, "GET /q/health/live HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n" LIVE), 0);
    struct hk_raw raw = {0};
    hk_tcp_read(fd, &raw, 0, 3000);
    cr_assert(raw.closed, "not closed after Connection: close");
    cr_assert_eq(raw.nfinal, 1, "answered a request after Connection: close:\n%s", raw.buf);
    hk_tcp_close(fd);
    hk_raw_free(&raw);
    hk_finish(&srv);
}

/* ---- parser rejections ---- */

Test(http, header_section_too_large_is_431)
{
    const char *env[] = {"HOOKD_MAX_HEADER_BYTES=4096", NULL};
    hk_server_start(&srv, env);
    char *big = malloc(9000);
    int n = sprintf(big, "GET /q/health/live HTTP/1.1\r\nHost: localhost\r\nX-Big: ");
    memset(big + n, 'a', 8192);
    strcpy(big + n + 8192, "\r\n\r\n");
    expect_status_and_close(big, 0, 431);
    /* Without ever finishing the header section. */
    big[n + 8192] = 0;
    expect_status_and_close(big, 0, 431);
    /* Many small headers add up too. */
    char *many = malloc(20000);
    int m = sprintf(many, "GET /q/health/live HTTP/1.1\r\nHost: localhost\r\n");
    for (int i = 0; i < 400; i++)
        m += sprintf(many + m, "X-H%03d: v\r\n", i);
    strcpy(many + m, "\r\n");
    expect_status_and_close(many, 0, 431);
    /* Under the limit is fine. */
    memset(big + n, 'b', 2048);
    strcpy(big + n + 2048, "\r\n\r\n");
    int fd = hk_tcp_connect(&srv);
    cr_assert_eq(hk_tcp_sends(fd, big), 0);
    struct hk_raw raw = {0};
    hk_tcp_read(fd, &raw, 1, 3000);
    cr_assert_eq(raw.nfinal, 1);
    cr_assert_eq(raw.r[0].status, 200, "a 2 KiB header under a 4 KiB limit: %s", raw.buf);
    hk_tcp_close(fd);
    hk_raw_free(&raw);
    free(big);
    free(many);
    hk_finish(&srv);
}

Test(http, malformed_request_line_is_400)
{
    hk_server_start(&srv, NULL);
    static const struct {
        const char *p;
        size_t n;
    } bad[] = {
#define C(lit) {lit, sizeof(lit) - 1}
        C("GARBAGE\r\n\r\n"),
        C("GET /q/health/live HTTX/1.1\r\nHost: x\r\n\r\n"),
        C("GET /q/health/live HTTP/1.1 extra\r\nHost: x\r\n\r\n"),
        C("GET\r\n\r\n"),
        C("G@T /q/health/live HTTP/1.1\r\nHost: x\r\n\r\n"),
        C("GET /q/he alth/live HTTP/1.1\r\nHost: x\r\n\r\n"),
        C("GET /q/health/live HTTP/1.1\r\nNo colon here\r\n\r\n"),
        C("GET /q/health/live HTTP/1.1\r\nBad Name: x\r\n\r\n"),
        C("GET /q/health/live HTTP/1.1\r\nHost : x\r\n\r\n"),
        /* The start of a TLS ClientHello: https spoken to the plain port. */
        C("\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03\r\n\r\n"),
#undef C
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        expect_status_and_close(bad[i].p, bad[i].n, 400);
        hk_assert_alive(&srv);
    }
    hk_finish(&srv);
}

Test(http, bad_request_after_good_one_on_same_connection)
{
    hk_server_start(&srv, NULL);
    int fd = hk_tcp_connect(&srv);
    cr_assert_eq(hk_tcp_sends(fd, LIVE "BROKEN REQUEST\r\n\r\n" LIVE), 0);
    struct hk_raw raw = {0};
    hk_tcp_read(fd, &raw, 0, 3000);
    cr_assert(raw.closed, "not closed after a malformed request");
    cr_assert_eq(raw.nfinal, 2, "expected 200 then 400 and a close:\n%s", raw.buf);
    cr_assert_eq(raw.r[0].status, 200);
    cr_assert_eq(raw.r[1].status, 400);
    hk_tcp_close(fd);
    hk_raw_free(&raw);
    hk_finish(&srv);
}

Test(http, content_length_with_chunked_is_400)
{
    hk_server_start(&srv, NULL);
    /* Request smuggling: which framing wins is ambiguous, so neither may. */
    expect_status_and_close("POST /api/webhooks HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                            "Content-Length: 35\r\nTransfer-Encoding: chunked\r\n\r\n"
                            "0\r\n\r\nGET /q/health/live HTTP/1.1\r\nHost: x\r\n\r\n",
                            0, 400);
    expect_status_and_close("POST /api/webhooks HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                            "Transfer-Encoding: chunked\r\nContent-Length: 4\r\n\r\n"
                            "0\r\n\r\n",
                            0, 400);
    json_t *a;
    struct hk_resp r;
    hk_get(&srv, "/api/webhooks", &r);
    a = hk_assert_json(&r, 200);
    cr_assert_eq(json_array_size(a), 0);
    json_decref(a);
    hk_resp_free(&r);
    hk_finish(&srv);
}

Test(http, conflicting_content_lengths_are_400)
{
    hk_server_start(&srv, NULL);
    expect_status_and_close("POST /api/webhooks HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                            "Content-Length: 2\r\nContent-Length: 3\r\n\r\n{} ",
                            0, 400);
    expect_status_and_close("POST /api/webhooks HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                            "Content-Length: 2, 3\r\n\r\n{} ",
                            0, 400);
    expect_status_and_close("POST /api/webhooks HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                            "Content-Length: -2\r\n\r\n{}",
                            0, 400);
    expect_status_and_close("POST /api/webhooks HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                            "Content-Length: abc\r\n\r\n{}",
                            0, 400);
    hk_finish(&srv);
}

Test(http, bad_chunked_framing_is_400)
{
    hk_server_start(&srv, NULL);
    expect_status_and_close("POST /api/webhooks HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                            "Transfer-Encoding: chunked\r\n\r\nzz\r\n{}\r\n0\r\n\r\n",
                            0, 400);
    expect_status_and_close("POST /api/webhooks HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                            "Transfer-Encoding: chunked\r\n\r\n2\r\n{}XX0\r\n\r\n",
                            0, 400);
    hk_finish(&srv);
}

/* Inputs whose exact answer the contract leaves open: the server must answer
 * or close, and keep serving. They also seed the fuzz corpus. */
Test(http, odd_inputs_do_not_break_the_server)
{
    hk_server_start(&srv, NULL);
    static const struct {
        const char *p;
        size_t n;
    } odd[] = {
#define C(lit) {lit, sizeof(lit) - 1}
        C("GET /q/health/live HTTP/1.1\nHost: x\n\n"),
        C("GET /q/health/live HTTP/1.1\r\n\r\n"),
        C("GET http://localhost/q/health/live HTTP/1.1\r\nHost: localhost\r\n\r\n"),
        C("OPTIONS * HTTP/1.1\r\nHost: x\r\n\r\n"),
        C("GET /q/health/live HTTP/1.1\r\nHost: x\r\nX-Folded: a\r\n b\r\n\r\n"),
        C("GET /q/health/live HTTP/2.0\r\nHost: x\r\n\r\n"),
        C("PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"),
        C("GET /q/health/live HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: gzip\r\n\r\n"),
        C("POST /api/webhooks HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
          "Transfer-Encoding: gzip, chunked\r\n\r\n0\r\n\r\n"),
        C("GET /q/health/live\x00 HTTP/1.1\r\nHost: x\r\n\r\n"),
        C("GET /%zz HTTP/1.1\r\nHost: x\r\n\r\n"),
        C("GET /api/webhooks?source=%ZZ&limit=%00 HTTP/1.1\r\nHost: x\r\n\r\n"),
        C("GET /api/webhooks/%2e%2e/%2e%2e HTTP/1.1\r\nHost: x\r\n\r\n"),
        C("\r\n\r\nGET /q/health/live HTTP/1.1\r\nHost: x\r\n\r\n"),
        C("POST /api/webhooks HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
          "Content-Length: 18446744073709551616\r\n\r\n"),
        C("POST /api/webhooks HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
          "Transfer-Encoding: chunked\r\n\r\nffffffffffffffffff\r\n"),
        C("DELETE /api/webhooks/1 HTTP/1.1\r\nHost: x\r\nContent-Length: 3\r\n\r\nabc"),
#undef C
    };
    for (size_t i = 0; i < sizeof odd / sizeof odd[0]; i++) {
        hk_context("odd input %zu: %.80s", i, odd[i].p);
        int fd = hk_tcp_connect(&srv);
        hk_tcp_send(fd, odd[i].p, odd[i].n);
        struct hk_raw raw = {0};
        hk_tcp_read(fd, &raw, 1, 3000);
        cr_assert(raw.nfinal == 1 || raw.closed, "odd input %zu: neither answered nor closed in 3 s", i);
        cr_assert(!raw.malformed, "odd input %zu: malformed response:\n%s", i, raw.buf);
        if (raw.nfinal == 1) {
            /* 501 (unknown transfer coding) and 505 (version) are fair answers too. */
            int st = hk_raw_final(&raw, 0)->status;
            cr_assert(st < 500 || st == 501 || st == 505, "odd input %zu: %d\n%s", i, st, raw.buf);
        }
        hk_tcp_close(fd);
        hk_raw_free(&raw);
        hk_assert_alive(&srv);
    }
    hk_finish(&srv);
}

/* ---- timeouts ---- */

Test(http, header_timeout_is_408_and_close)
{
    const char *env[] = {"HOOKD_HEADER_TIMEOUT=300ms", NULL};
    hk_server_start(&srv, env);
    int fd = hk_tcp_connect(&srv);
    int64_t t0 = hk_now_ms();
    cr_assert_eq(hk_tcp_sends(fd, "GET /q/heal"), 0);
    struct hk_raw raw = {0};
    hk_tcp_read(fd, &raw, 0, 2000);
    int64_t dt = hk_now_ms() - t0;
    cr_assert(raw.closed, "stalled request line not closed within 2 s");
    cr_assert_geq(dt, 200, "closed after %" PRId64 " ms, before the 300 ms timeout", dt);
    cr_assert_eq(raw.nfinal, 1, "expected a 408 before the close: \"%s\"", raw.buf);
    cr_assert_eq(raw.r[0].status, 408, "%s", raw.buf);
    assert_raw_common(&raw);
    char v[64];
    cr_assert(hk_raw_header(&raw, 0, "Connection", v, sizeof v) && hk_list_has(v, "close"),
              "408 without Connection: close");
    hk_tcp_close(fd);
    hk_raw_free(&raw);
    hk_finish(&srv);
}

Test(http, header_timeout_counts_the_whole_request_not_each_byte)
{
    const char *env[] = {"HOOKD_HEADER_TIMEOUT=300ms", NULL};
    hk_server_start(&srv, env);
    int fd = hk_tcp_connect(&srv);
    int64_t t0 = hk_now_ms();
    const char *drip = "GET /q/health/live HTTP/1.1\r\nHost: localhost\r\nX-Slow: aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa\r\n";
    struct hk_raw raw = {0};
    for (size_t i = 0; drip[i] && hk_now_ms() - t0 < 2500; i++) {
        if (hk_tcp_send(fd, drip + i, 1) < 0)
            break;
        hk_tcp_read(fd, &raw, 0, 50);
        if (raw.closed)
            break;
    }
    if (!raw.closed)
        hk_tcp_read(fd, &raw, 0, 1000);
    int64_t dt = hk_now_ms() - t0;
    cr_assert(raw.closed, "a request dripping one byte per 50 ms was never timed out");
    cr_assert_lt(dt, 1500, "slowloris connection lived %" PRId64 " ms with a 300 ms header timeout", dt);
    hk_tcp_close(fd);
    hk_raw_free(&raw);
    hk_finish(&srv);
}

Test(http, silent_connection_is_closed)
{
    const char *env[] = {"HOOKD_HEADER_TIMEOUT=300ms", "HOOKD_IDLE_TIMEOUT=300ms", NULL};
    hk_server_start(&srv, env);
    int fd = hk_tcp_connect(&srv);
    struct hk_raw raw = {0};
    cr_assert(hk_tcp_wait_closed(fd, &raw, 2000), "a connection that never sent a byte was kept open");
    hk_tcp_close(fd);
    hk_raw_free(&raw);
    hk_finish(&srv);
}

Test(http, idle_keep_alive_connection_is_closed)
{
    const char *env[] = {"HOOKD_IDLE_TIMEOUT=300ms", NULL};
    hk_server_start(&srv, env);
    int fd = hk_tcp_connect(&srv);
    cr_assert_eq(hk_tcp_sends(fd, LIVE), 0);
    struct hk_raw raw = {0};
    hk_tcp_read(fd, &raw, 1, 3000);
    cr_assert_eq(raw.nfinal, 1);
    cr_assert_eq(raw.r[0].status, 200);
    int64_t t0 = hk_now_ms();
    cr_assert(hk_tcp_wait_closed(fd, &raw, 2000), "idle keep-alive connection still open after 2 s");
    int64_t dt = hk_now_ms() - t0;
    cr_assert_geq(dt, 200, "idle connection closed after %" PRId64 " ms, before the 300 ms timeout", dt);
    cr_assert_eq(raw.nfinal, 1, "bytes sent on an idle connection before closing it:\n%s", raw.buf);
    cr_assert(!raw.reset, "idle close was a reset, not a FIN");
    hk_tcp_close(fd);
    hk_raw_free(&raw);
    hk_finish(&srv);
}

Test(http, busy_connection_outlives_idle_timeout)
{
    const char *env[] = {"HOOKD_IDLE_TIMEOUT=300ms", NULL};
    hk_server_start(&srv, env);
    CURL *h = hk_curl_new();
    struct hk_req req = {.path = "/q/health/live"};
    for (int i = 0; i < 10; i++) {
        struct hk_resp r;
        hk_do(&srv, h, &req, &r);
        cr_assert_eq(r.status, 200);
        cr_assert_eq(r.num_connects, i == 0 ? 1 : 0, "request %d needed a new connection", i);
        hk_resp_free(&r);
        hk_sleep_ms(100);
    }
    curl_easy_cleanup(h);
    hk_finish(&srv);
}

/* ---- connection limit ---- */

/* At the limit, the longest-idle kept-alive connection makes room for a
 * newcomer (as nginx does); the others keep working. */
Test(http, max_connections_evicts_the_longest_idle)
{
    const char *env[] = {"HOOKD_MAX_CONNECTIONS=4", "HOOKD_THREADS=1", NULL};
    hk_server_start(&srv, env);
    int fds[4];
    for (int i = 0; i < 4; i++) {
        fds[i] = hk_tcp_connect(&srv);
        cr_assert_eq(hk_tcp_sends(fds[i], LIVE), 0);
        struct hk_raw raw = {0};
        hk_tcp_read(fds[i], &raw, 1, 3000);
        cr_assert_eq(raw.nfinal, 1, "connection %d of 4 not served: %s", i, raw.buf);
        cr_assert_eq(raw.r[0].status, 200);
        hk_raw_free(&raw);
        hk_sleep_ms(20);   /* a clear order of idleness */
    }
    int fd5 = hk_tcp_connect(&srv);
    cr_assert_eq(hk_tcp_sends(fd5, LIVE), 0);
    struct hk_raw raw5 = {0};
    hk_tcp_read(fd5, &raw5, 1, 3000);
    cr_assert(raw5.nfinal == 1 && raw5.r[0].status == 200, "fifth connection not admitted: %s", raw5.buf);
    hk_raw_free(&raw5);
    struct hk_raw gone = {0};
    cr_assert(hk_tcp_wait_closed(fds[0], &gone, 2000), "the longest-idle connection was not closed");
    cr_expect_eq(gone.len, 0u, "it was closed without a response: %s", gone.buf);
    hk_raw_free(&gone);
    hk_tcp_close(fds[0]);
    for (int i = 1; i < 4; i++) {
        cr_assert_eq(hk_tcp_sends(fds[i], LIVE), 0);
        struct hk_raw raw = {0};
        hk_tcp_read(fds[i], &raw, 1, 3000);
        cr_assert(raw.nfinal == 1 && raw.r[0].status == 200, "connection %d broken by the fifth: %s", i, raw.buf);
        hk_raw_free(&raw);
        hk_tcp_close(fds[i]);
    }
    hk_tcp_close(fd5);
    hk_finish(&srv);
}

/* With every slot busy (requests under way), a newcomer gets 503 and
 * nobody is disturbed; once they are done, newcomers are served again. */
Test(http, max_connections_rejects_when_none_is_idle_then_recovers)
{
    const char *env[] = {"HOOKD_MAX_CONNECTIONS=4", "HOOKD_THREADS=1", NULL};
    hk_server_start(&srv, env);
    int fds[4];
    for (int i = 0; i < 4; i++) {
        fds[i] = hk_tcp_connect(&srv);
        cr_assert_eq(hk_tcp_sends(fds[i], "GET /q/health/live HTTP/1.1\r\n"), 0);
    }
    hk_sleep_ms(100);
    /* The fifth: 503, or closed, but never a 2xx. */
    int fd5 = hk_tcp_try_connect(srv.port);
    if (fd5 >= 0) {
        hk_tcp_sends(fd5, LIVE);
        struct hk_raw raw = {0};
        hk_tcp_read(fd5, &raw, 1, 2000);
        if (raw.nfinal >= 1) {
            cr_assert_eq(raw.r[0].status, 503, "fifth connection over a limit of 4 got:\n%s", raw.buf);
            assert_raw_common(&raw);
        } else {
            cr_assert(raw.closed, "fifth connection neither answered nor closed within 2 s");
        }
        hk_tcp_close(fd5);
        hk_raw_free(&raw);
    }
    /* The four finish their requests undisturbed. */
    for (int i = 0; i < 4; i++) {
        cr_assert_eq(hk_tcp_sends(fds[i], "Host: x\r\n\r\n"), 0);
        struct hk_raw raw = {0};
        hk_tcp_read(fds[i], &raw, 1, 3000);
        cr_assert(raw.nfinal == 1 && raw.r[0].status == 200, "connection %d broken by the fifth: %s", i,
                  raw.buf);
        hk_raw_free(&raw);
        hk_tcp_close(fds[i]);
    }
    /* Once they are gone, a new connection is served again (allow time to notice the closes). */
    int64_t deadline = hk_now_ms() + 2000;
    int status = 0;
    while (hk_now_ms() < deadline) {
        int fd = hk_tcp_try_connect(srv.port);
        if (fd >= 0) {
            hk_tcp_sends(fd, LIVE);
            struct hk_raw raw = {0};
            hk_tcp_read(fd, &raw, 1, 1000);
            status = raw.nfinal ? raw.r[0].status : 0;
            hk_tcp_close(fd);
            hk_raw_free(&raw);
            if (status == 200)
                break;
        }
        hk_sleep_ms(50);
    }
    cr_assert_eq(status, 200, "no connection served after the others closed (last status %d)", status);
    hk_finish(&srv);
}
