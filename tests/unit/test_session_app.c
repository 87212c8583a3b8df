/* SPDX-License-Identifier: MIT
 * The session's hooks for routes that read a request while it arrives
 * (hk_app.keep_headers, head, body, drop): every header kept and looked
 * up, a per-request body limit, refusals before and during the body,
 * trailers refused, and exactly one of end/drop after head. A test
 * application, in memory. */
#include <criterion/criterion.h>
#include <llhttp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/config.h"
#include "http/memio.h"
#include "http/resp.h"
#include "http/server.h"

struct seen {
    int heads, ends, drops, requests;
    size_t body_bytes;
    unsigned xa_count;
    char xa[64];
    char last_name[64];
    int nheaders;
};

static struct seen seen;
static struct hk_config cfg;
static struct hk_worker w;
static struct hk_memio m;

static bool keep(const char *path, size_t len)
{
    return len >= 3 && memcmp(path, "/k/", 3) == 0;
}

static bool is(const struct hk_req *r, const char *p)
{
    return r->path_len == strlen(p) && memcmp(r->path, p, r->path_len) == 0;
}

static void each(void *arg, const char *name, size_t nl, const char *value, size_t vl)
{
    (void)arg;
    (void)value;
    (void)vl;
    seen.nheaders++;
    snprintf(seen.last_name, sizeof seen.last_name, "%.*s", (int)nl, name);
}

static int head(struct hk_req *r)
{
    seen.heads++;
    size_t n;
    const char *v = hk_req_header(r, "X-A", &n, &seen.xa_count);
    snprintf(seen.xa, sizeof seen.xa, "%.*s", v ? (int)n : 0, v ? v : "");
    hk_req_headers_each(r, each, NULL);
    if (is(r, "/k/refuse"))
        return 429;
    if (is(r, "/k/small"))
        r->body_max = 10;
    if (is(r, "/k/big"))
        r->body_max = 100000;   /* above the server's max_body_bytes (256) */
    r->body_cb = true;
    return 0;
}

static int body(struct hk_req *r, const char *p, size_t n)
{
    (void)p;
    seen.body_bytes += n;
    return is(r, "/k/stop") && seen.body_bytes > 5 ? 503 : 0;
}

static void request(struct hk_req *r)
{
    seen.requests++;
    if (r->refused) {
        hk_resp_problem(r, r->refused, NULL, "refused by the test");
        return;
    }
    hk_buf_printf(hk_resp_body(r), "n=%zu", r->body->len);
    hk_resp_send(r, 200, "text/plain");
}

static void begin(struct hk_req *r)
{
    (void)r;
}

static void end(struct hk_req *r)
{
    (void)r;
    seen.ends++;
}

static void drop(struct hk_req *r)
{
    (void)r;
    seen.drops++;
}

static int loop_start(void *arg, struct hk_worker *wk, void **out)
{
    (void)arg;
    (void)wk;
    *out = NULL;
    return 0;
}

static void loop_nop(void *d)
{
    (void)d;
}

static const struct hk_app app = {
    .req_size = 16,
    .loop_start = loop_start,
    .loop_stop = loop_nop,
    .loop_free = loop_nop,
    .begin = begin,
    .request = request,
    .end = end,
    .keep_headers = keep,
    .head = head,
    .body = body,
    .drop = drop,
};

static void setup(void)
{
    char err[256];
    char *argv[] = {"hookd", NULL};
    cr_assert_eq(hk_config_load(&cfg, 1, argv, err, sizeof err), HK_CONFIG_RUN);
    cfg.max_body_bytes = 256;
    memset(&seen, 0, sizeof seen);
    memset(&w, 0, sizeof w);
    cr_assert_eq(hk_worker_init(&w, &cfg, &app), 0);
    hk_memio_init(&m, &w);
}

static void teardown(void)
{
    hk_memio_free(&m);
    hk_worker_fini(&w);
    hk_config_free(&cfg);
}

TestSuite(session_app, .init = setup, .fini = teardown);

static void send_str(const char *s)
{
    hk_memio_feed(&m, s, strlen(s));
    hk_memio_settle(&m);
}

static const char *sent(void)
{
    hk_buf_putc(&m.sent, 0);
    m.sent.len--;
    return m.sent.p ? m.sent.p : "";
}

Test(session_app, headers_kept_and_found_case_insensitively)
{
    send_str("POST /k/a HTTP/1.1\r\nHost: x\r\nx-a: first\r\nUser-Agent: t\r\nX-A: second\r\n"
             "Content-Length: 3\r\n\r\nabc");
    cr_assert_not_null(strstr(sent(), "HTTP/1.1 200 OK"), "%s", sent());
    cr_expect_str_eq(seen.xa, "first");
    cr_expect_eq(seen.xa_count, 2);
    cr_expect_eq(seen.nheaders, 5);
    cr_expect_str_eq(seen.last_name, "Content-Length");
    cr_expect_eq(seen.body_bytes, 3);
    cr_expect_eq(seen.heads, 1);
    cr_expect_eq(seen.ends, 1);
    cr_expect_eq(seen.drops, 0);
    cr_expect_not(m.closed);
}

Test(session_app, other_paths_do_not_call_head)
{
    send_str("POST /other HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\n\r\nhi");
    cr_expect_not_null(strstr(sent(), "n=2"), "%s", sent());
    cr_expect_eq(seen.heads, 0);
    cr_expect_eq(seen.body_bytes, 0);
}

Test(session_app, refused_at_head_before_the_body_and_closed)
{
    /* The body is never sent: the answer must not wait for it. */
    send_str("POST /k/refuse HTTP/1.1\r\nHost: x\r\nContent-Length: 100\r\n\r\n");
    cr_assert_not_null(strstr(sent(), "HTTP/1.1 429 "), "%s", sent());
    cr_expect_eq(seen.requests, 1);
    cr_expect_eq(seen.ends, 1);
    cr_expect_eq(seen.body_bytes, 0);
    cr_expect(m.closed);
}

Test(session_app, per_request_limit_from_content_length)
{
    send_str("POST /k/small HTTP/1.1\r\nHost: x\r\nContent-Length: 11\r\n\r\n");
    cr_assert_not_null(strstr(sent(), "HTTP/1.1 413 "), "%s", sent());
    cr_expect_eq(seen.body_bytes, 0);
    cr_expect_eq(seen.ends, 1);
    cr_expect(m.closed);
}

Test(session_app, per_request_limit_cuts_a_chunked_body)
{
    send_str("POST /k/small HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n8\r\n12345678\r\n");
    cr_expect_null(strstr(sent(), "HTTP/1.1 413 "), "%s", sent());
    send_str("8\r\n12345678\r\n");
    cr_assert_not_null(strstr(sent(), "HTTP/1.1 413 "), "%s", sent());
    cr_expect_eq(seen.body_bytes, 8);
    cr_expect_eq(seen.ends, 1);
    cr_expect(m.closed);
}

Test(session_app, per_request_limit_may_exceed_the_servers)
{
    char req[2048];
    char body[1000];
    memset(body, 'b', sizeof body);
    int n = snprintf(req, sizeof req, "POST /k/big HTTP/1.1\r\nHost: x\r\nContent-Length: 1000\r\n\r\n%.*s",
                     (int)sizeof body, body);
    hk_memio_feed(&m, req, (size_t)n);
    hk_memio_settle(&m);
    cr_expect_not_null(strstr(sent(), "n=1000"), "%s", sent());
}

Test(session_app, refused_mid_body)
{
    send_str("POST /k/stop HTTP/1.1\r\nHost: x\r\nContent-Length: 20\r\n\r\n1234");
    cr_expect_null(strstr(sent(), "HTTP/1.1 503 "), "%s", sent());
    send_str("5678");
    cr_assert_not_null(strstr(sent(), "HTTP/1.1 503 "), "%s", sent());
    cr_expect_eq(seen.ends, 1);
    cr_expect_eq(seen.drops, 0);
    cr_expect(m.closed);
}

Test(session_app, trailers_refused)
{
    send_str("POST /k/a HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n0\r\n"
             "X-A: late\r\n\r\n");
    cr_assert_not_null(strstr(sent(), "HTTP/1.1 400 "), "%s", sent());
    cr_expect_not_null(strstr(sent(), "trailer"), "%s", sent());
    cr_expect_str_eq(seen.xa, "");
    cr_expect_eq(seen.ends, 1);
}

Test(session_app, peer_leaving_mid_body_drops)
{
    send_str("POST /k/a HTTP/1.1\r\nHost: x\r\nContent-Length: 20\r\n\r\n12");
    cr_expect_eq(seen.heads, 1);
    hk_session_eof(&m.s, true);
    hk_memio_settle(&m);
    hk_session_free(&m.s);
    cr_expect_eq(seen.drops, 1);
    cr_expect_eq(seen.ends, 0);
    /* hk_memio_free frees again: a second free must not drop twice. */
}

Test(session_app, keep_alive_between_kept_requests_resets_headers)
{
    send_str("POST /k/a HTTP/1.1\r\nHost: x\r\nX-A: one\r\nContent-Length: 1\r\n\r\na"
             "POST /k/a HTTP/1.1\r\nHost: x\r\nContent-Length: 1\r\n\r\nb");
    cr_expect_eq(seen.heads, 2);
    cr_expect_str_eq(seen.xa, "");
    cr_expect_eq(seen.xa_count, 0);
    cr_expect_eq(seen.ends, 2);
}
