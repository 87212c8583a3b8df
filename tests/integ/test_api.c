/* SPDX-License-Identifier: MIT
 * The API contract, end to end: create/list/get/delete webhooks, validation
 * and error documents, idempotency, signatures, body limits, routing, the
 * system and health endpoints. Each test runs its own hookd on a fresh
 * database. */
#include <criterion/criterion.h>

#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness.h"

static struct hk_server srv;

static void teardown(void)
{
    hk_server_cleanup(&srv);
}

TestSuite(api, .fini = teardown, .timeout = 60);

static const char *const JSON_CT[] = {"Content-Type: application/json", NULL};

/* POST `body` (n bytes; 0 = strlen) to /api/webhooks with these headers. */
static void post(const char *const *headers, const char *body, size_t n, struct hk_resp *r)
{
    struct hk_req req = {.method = "POST", .path = "/api/webhooks", .body = body,
                         .body_len = n, .headers = headers};
    hk_do(&srv, NULL, &req, r);
}

static void expect_violations_1(const char *body, const char *field, const char *msg)
{
    hk_context("POST /api/webhooks %.300s", body);
    struct hk_resp r;
    post(JSON_CT, body, 0, &r);
    hk_assert_violations(&r, 1, field, msg);
    hk_resp_free(&r);
    hk_context("%s", "");
}

/* GET a list and return it (asserting 200, JSON array, ids strictly descending). */
static json_t *list(const char *path)
{
    hk_context("GET %s", path);
    struct hk_resp r;
    hk_get(&srv, path, &r);
    json_t *a = hk_assert_json(&r, 200);
    cr_assert(json_is_array(a), "GET %s: not an array: %.200s", path, r.body);
    int64_t prev = INT64_MAX;
    for (size_t i = 0; i < json_array_size(a); i++) {
        json_t *id = json_object_get(json_array_get(a, i), "id");
        cr_assert(json_is_integer(id), "GET %s: item %zu without integer id", path, i);
        cr_assert(json_integer_value(id) < prev, "GET %s: ids not strictly descending at item %zu",
                  path, i);
        prev = json_integer_value(id);
    }
    hk_resp_free(&r);
    hk_context("%s", "");
    return a;
}

static int64_t item_id(json_t *a, size_t i)
{
    return json_integer_value(json_object_get(json_array_get(a, i), "id"));
}

static int cmp_i64_desc(const void *a, const void *b)
{
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return x < y ? 1 : x > y ? -1 : 0;
}

static void body_alpha_beta(int i, char *buf, size_t n)
{
    snprintf(buf, n, "{\"source\":\"%s\",\"eventType\":\"%s\",\"payload\":\"n%d\"}",
             i % 2 ? "beta" : "alpha", i % 3 ? "push" : "ping", i);
}

/* Insert n rows in parallel; all must be 201. Returns ids sorted descending. */
static int64_t *bulk(int n, void (*fn)(int, char *, size_t))
{
    int64_t *ids = calloc((size_t)n, sizeof *ids);
    int ok = hk_parallel_posts(&srv, 4, n, fn, ids);
    for (int i = 0; i < n && ok != n; i++)
        cr_assert(ids[i] > 0, "bulk insert %d/%d failed: %" PRId64 " (-status or -1000-curl)", i, n,
                  ids[i]);
    qsort(ids, (size_t)n, sizeof *ids, cmp_i64_desc);
    for (int i = 1; i < n; i++)
        cr_assert(ids[i] < ids[i - 1], "duplicate id %" PRId64, ids[i]);
    return ids;
}

/* ---- create ---- */

Test(api, create_returns_201_location_and_webhook)
{
    hk_server_start(&srv, NULL);
    struct hk_resp r;
    post(JSON_CT, "{\"source\":\"github\",\"eventType\":\"push\",\"payload\":\"{\\\"ref\\\":\\\"main\\\"}\"}",
         0, &r);
    json_t *j = hk_assert_json(&r, 201);
    int64_t id = hk_assert_webhook(j, "github", "push", "{\"ref\":\"main\"}");
    char loc[256], want[64];
    snprintf(want, sizeof want, "/api/webhooks/%" PRId64, id);
    cr_assert(hk_header(&r, "Location", loc, sizeof loc), "201 without Location:\n%s", r.head);
    cr_assert_str_eq(loc, want);

    struct hk_resp g;
    hk_get(&srv, loc, &g);
    json_t *gj = hk_assert_json(&g, 200);
    cr_assert(json_equal(j, gj), "GET %s differs from the 201 body:\n%s\n%s", loc, r.body, g.body);
    json_decref(gj);
    json_decref(j);
    hk_resp_free(&g);
    hk_resp_free(&r);
    hk_finish(&srv);
}

Test(api, create_accepts_charset_and_case_insensitive_media_type)
{
    hk_server_start(&srv, NULL);
    const char *cts[] = {"Content-Type: application/json; charset=utf-8",
                         "Content-Type: application/json;charset=UTF-8",
                         "Content-Type: Application/JSON"};
    for (size_t i = 0; i < sizeof cts / sizeof cts[0]; i++) {
        const char *hs[] = {cts[i], NULL};
        struct hk_resp r;
        post(hs, "{\"source\":\"s\",\"eventType\":\"e\"}", 0, &r);
        json_t *j = hk_assert_json(&r, 201);
        hk_assert_webhook(j, "s", "e", NULL);
        json_decref(j);
        hk_resp_free(&r);
    }
    hk_finish(&srv);
}

Test(api, create_payload_null_absent_and_unknown_fields)
{
    hk_server_start(&srv, NULL);
    const char *bodies[] = {
        "{\"source\":\"s\",\"eventType\":\"e\",\"payload\":null}",
        "{\"source\":\"s\",\"eventType\":\"e\"}",
        "{\"source\":\"s\",\"extra\":{\"a\":[1,2]},\"eventType\":\"e\",\"id\":999,\"receivedAt\":\"x\"}",
        "  {\"eventType\":\"e\",\"source\":\"s\"}  \n",
    };
    for (size_t i = 0; i < sizeof bodies / sizeof bodies[0]; i++) {
        hk_context("POST %s", bodies[i]);
        struct hk_resp r;
        post(JSON_CT, bodies[i], 0, &r);
        json_t *j = hk_assert_json(&r, 201);
        int64_t id = hk_assert_webhook(j, "s", "e", NULL);
        cr_assert_neq(id, 999, "client-supplied id was used");
        json_decref(j);
        hk_resp_free(&r);
    }
    hk_finish(&srv);
}

Test(api, create_round_trips_unicode_and_escapes)
{
    hk_server_start(&srv, NULL);
    /* Control characters, quotes, backslash, 2-, 3- and 4-byte UTF-8, an escaped surrogate pair. */
    const char *payload = "line1\nline2\t\"q\" \\ \x01 é € 😀 </script>";
    int64_t id = hk_create(&srv, "sr\xc3\xa7 \"x\"", "t/\\e", payload);
    struct hk_resp r;
    char path[64];
    snprintf(path, sizeof path, "/api/webhooks/%" PRId64, id);
    hk_get(&srv, path, &r);
    json_t *j = hk_assert_json(&r, 200);
    hk_assert_webhook(j, "sr\xc3\xa7 \"x\"", "t/\\e", payload);
    json_decref(j);
    hk_resp_free(&r);

    struct hk_resp r2;
    post(JSON_CT, "{\"source\":\"\\ud83d\\ude00\",\"eventType\":\"\\u00e9\",\"payload\":\"\\/\"}", 0, &r2);
    j = hk_assert_json(&r2, 201);
    hk_assert_webhook(j, "😀", "é", "/");
    json_decref(j);
    hk_resp_free(&r2);
    hk_finish(&srv);
}

Test(api, ids_increase)
{
    hk_server_start(&srv, NULL);
    int64_t prev = 0;
    for (int i = 0; i < 5; i++) {
        int64_t id = hk_create(&srv, "s", "e", "p");
        cr_assert_gt(id, prev, "ids must increase: %" PRId64 " after %" PRId64, id, prev);
        prev = id;
    }
    hk_finish(&srv);
}

/* ---- validation ---- */

Test(api, violations_blank_fields)
{
    hk_server_start(&srv, NULL);
    hk_context("POST {}");
    struct hk_resp r;
    post(JSON_CT, "{}", 0, &r);
    hk_assert_violations(&r, 2, "source", "must not be blank", "eventType", "must not be blank");
    hk_resp_free(&r);

    const char *blank_source[] = {
        "{\"eventType\":\"e\"}",
        "{\"source\":null,\"eventType\":\"e\"}",
        "{\"source\":\"\",\"eventType\":\"e\"}",
        "{\"source\":\"   \",\"eventType\":\"e\"}",
        "{\"source\":\"\\t\\n\\r \",\"eventType\":\"e\"}",
    };
    for (size_t i = 0; i < sizeof blank_source / sizeof blank_source[0]; i++)
        expect_violations_1(blank_source[i], "source", "must not be blank");
    const char *blank_event[] = {
        "{\"source\":\"s\"}",
        "{\"source\":\"s\",\"eventType\":null}",
        "{\"source\":\"s\",\"eventType\":\"\"}",
        "{\"source\":\"s\",\"eventType\":\" \\t \"}",
    };
    for (size_t i = 0; i < sizeof blank_event / sizeof blank_event[0]; i++)
        expect_violations_1(blank_event[i], "eventType", "must not be blank");
    hk_finish(&srv);
}

Test(api, violations_wrong_types)
{
    hk_server_start(&srv, NULL);
    expect_violations_1("{\"source\":1,\"eventType\":\"e\"}", "source", "must be a string");
    expect_violations_1("{\"source\":{},\"eventType\":\"e\"}", "source", "must be a string");
    expect_violations_1("{\"source\":\"s\",\"eventType\":[\"e\"]}", "eventType", "must be a string");
    expect_violations_1("{\"source\":\"s\",\"eventType\":false}", "eventType", "must be a string");
    const char *bad_payload[] = {"5", "true", "{}", "[\"a\"]", "1.5"};
    for (size_t i = 0; i < sizeof bad_payload / sizeof bad_payload[0]; i++) {
        char body[128];
        snprintf(body, sizeof body, "{\"source\":\"s\",\"eventType\":\"e\",\"payload\":%s}", bad_payload[i]);
        expect_violations_1(body, "payload", "must be a string or null");
    }
    hk_finish(&srv);
}

Test(api, violations_listed_in_field_order)
{
    hk_server_start(&srv, NULL);
    /* Members in reverse order: the violations still come source, eventType, payload. */
    const char *body = "{\"payload\":7,\"eventType\":\"  \",\"source\":true}";
    hk_context("POST %s", body);
    struct hk_resp r;
    post(JSON_CT, body, 0, &r);
    hk_assert_violations(&r, 3, "source", "must be a string", "eventType", "must not be blank",
                         "payload", "must be a string or null");
    hk_resp_free(&r);
    hk_finish(&srv);
}

static char *repeat(const char *unit, int n, const char *prefix, const char *suffix)
{
    size_t u = strlen(unit);
    char *b = malloc(strlen(prefix) + u * (size_t)n + strlen(suffix) + 1);
    char *p = b + sprintf(b, "%s", prefix);
    for (int i = 0; i < n; i++, p += u)
        memcpy(p, unit, u);
    strcpy(p, suffix);
    return b;
}

Test(api, source_and_event_type_lengths_in_code_points)
{
    hk_server_start(&srv, NULL);
    /* 255 x "é" is 510 bytes but 255 characters: allowed. */
    char *s255 = repeat("é", 255, "", "");
    int64_t id = hk_create(&srv, s255, "e", NULL);
    cr_assert_gt(id, 0);
    char *ascii255 = repeat("a", 255, "", "");
    hk_create(&srv, ascii255, "e", NULL);
    char *b = repeat("é", 256, "{\"source\":\"", "\",\"eventType\":\"e\"}");
    expect_violations_1(b, "source", "size must be between 0 and 255");
    free(b);
    b = repeat("a", 256, "{\"source\":\"", "\",\"eventType\":\"e\"}");
    expect_violations_1(b, "source", "size must be between 0 and 255");
    free(b);
    /* 4-byte characters count once each too. */
    b = repeat("😀", 255, "{\"source\":\"", "\",\"eventType\":\"e\"}");
    struct hk_resp r;
    post(JSON_CT, b, 0, &r);
    cr_assert_eq(r.status, 201, "255 x U+1F600 source: %ld %s", r.status, r.body);
    hk_resp_free(&r);
    free(b);

    char *e100 = repeat("ü", 100, "", "");
    hk_create(&srv, "s", e100, NULL);
    b = repeat("ü", 101, "{\"source\":\"s\",\"eventType\":\"", "\"}");
    expect_violations_1(b, "eventType", "size must be between 0 and 100");
    free(b);
    b = repeat("x", 101, "{\"source\":\"s\",\"eventType\":\"", "\"}");
    expect_violations_1(b, "eventType", "size must be between 0 and 100");
    free(b);
    /* Both too long, payload wrong: three violations in order. */
    b = repeat("a", 300, "{\"source\":\"", "\",\"eventType\":\"");
    char *b2 = repeat("b", 120, b, "\",\"payload\":[]}");
    hk_context("POST <300 a, 120 b, payload []>");
    post(JSON_CT, b2, 0, &r);
    hk_assert_violations(&r, 3, "source", "size must be between 0 and 255", "eventType",
                         "size must be between 0 and 100", "payload", "must be a string or null");
    hk_resp_free(&r);
    free(b);
    free(b2);
    free(s255);
    free(ascii255);
    free(e100);
    hk_finish(&srv);
}

Test(api, body_not_an_object)
{
    hk_server_start(&srv, NULL);
    const char *bodies[] = {"[]", "[{\"source\":\"s\",\"eventType\":\"e\"}]", "\"str\"", "42", "null", "true"};
    for (size_t i = 0; i < sizeof bodies / sizeof bodies[0]; i++)
        expect_violations_1(bodies[i], "", "must be a JSON object");
    hk_finish(&srv);
}

Test(api, invalid_json_reports_position)
{
    hk_server_start(&srv, NULL);
    static const struct {
        const char *body;
        size_t len;
    } cases[] = {
#define C(lit) {lit, sizeof(lit) - 1}
        C("{\"source\":\"a\""),
        C("{\"source\":\"a\",\"eventType\":\"b\"} x"),
        C("{\"source\":\"a\",\"eventType\":\"b\"}{}"),
        C("{\"source\":\"\xff\xfe\",\"eventType\":\"b\"}"),
        C("{\"source\":\"\xc3\",\"eventType\":\"b\"}"),
        C("{\"source\":\"\xed\xa0\x80\",\"eventType\":\"b\"}"), /* UTF-8-encoded surrogate */
        C("{\"source\":\"a\\u0000b\",\"eventType\":\"b\"}"),
        C("{\"source\":\"a\0b\",\"eventType\":\"b\"}"),
        C("{source:\"a\",\"eventType\":\"b\"}"),
        C("{\"source\":'a',\"eventType\":\"b\"}"),
        C("{\"source\":\"a\",\"eventType\":\"b\",}"),
#undef C
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        hk_context("invalid JSON case %zu: %s", i, cases[i].body);
        struct hk_resp r;
        post(JSON_CT, cases[i].body, cases[i].len, &r);
        json_t *j = hk_assert_problem(&r, 400);
        const char *d = json_string_value(json_object_get(j, "detail"));
        cr_assert(strstr(d, "position") && strpbrk(d, "0123456789"),
                  "case %zu: detail does not give a position: %s", i, r.body);
        cr_assert(!json_object_get(j, "violations"), "case %zu: syntax error reported as violations: %s",
                  i, r.body);
        json_decref(j);
        hk_resp_free(&r);
    }
    /* An empty body is not JSON either. */
    hk_context("empty body");
    struct hk_resp r;
    struct hk_req req = {.method = "POST", .path = "/api/webhooks", .headers = JSON_CT,
                         .body = "", .body_len = 0};
    hk_do(&srv, NULL, &req, &r);
    json_decref(hk_assert_problem(&r, 400));
    hk_resp_free(&r);
    json_t *a = list("/api/webhooks");
    cr_assert_eq(json_array_size(a), 0, "a rejected body was stored");
    json_decref(a);
    hk_finish(&srv);
}

Test(api, unsupported_media_type)
{
    hk_server_start(&srv, NULL);
    const char *cts[] = {NULL, "Content-Type: text/plain", "Content-Type: application/x-www-form-urlencoded",
                         "Content-Type: application/xml", "Content-Type: text/json-ish"};
    for (size_t i = 0; i < sizeof cts / sizeof cts[0]; i++) {
        hk_context("Content-Type case %zu: %s", i, cts[i] ? cts[i] : "(none)");
        const char *hs[] = {cts[i], NULL};
        struct hk_resp r;
        post(hs, "{\"source\":\"s\",\"eventType\":\"e\"}", 0, &r);
        json_decref(hk_assert_problem(&r, 415));
        hk_resp_free(&r);
    }
    json_t *a = list("/api/webhooks");
    cr_assert_eq(json_array_size(a), 0);
    json_decref(a);
    hk_finish(&srv);
}

/* ---- body size, chunked, Expect ---- */

static const char *const SMALL_BODY_ENV[] = {"HOOKD_MAX_BODY_BYTES=1024", NULL};

/* A valid create body of exactly n bytes. */
static char *body_of_size(size_t n)
{
    const char *pre = "{\"source\":\"s\",\"eventType\":\"e\",\"payload\":\"";
    const char *post_ = "\"}";
    size_t fixed = strlen(pre) + strlen(post_);
    cr_assert(n > fixed);
    char *b = malloc(n + 1);
    strcpy(b, pre);
    memset(b + strlen(pre), 'x', n - fixed);
    strcpy(b + n - strlen(post_), post_);
    cr_assert_eq(strlen(b), n);
    return b;
}

Test(api, body_at_limit_accepted)
{
    hk_server_start(&srv, SMALL_BODY_ENV);
    char *b = body_of_size(1024);
    struct hk_resp r;
    post(JSON_CT, b, 0, &r);
    cr_assert_eq(r.status, 201, "a 1024-byte body with HOOKD_MAX_BODY_BYTES=1024: %ld %s", r.status, r.body);
    hk_resp_free(&r);
    free(b);
    hk_finish(&srv);
}

/* Raw request: headers only, with a Content-Length over the limit. The 413
 * must come without the body ever being sent. */
Test(api, body_too_large_by_content_length)
{
    hk_server_start(&srv, SMALL_BODY_ENV);
    const char *lens[] = {"1025", "100000000"};
    for (size_t i = 0; i < 2; i++) {
        hk_context("Content-Length %s", lens[i]);
        int fd = hk_tcp_connect(&srv);
        char req[512];
        snprintf(req, sizeof req,
                 "POST /api/webhooks HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\n"
                 "Content-Length: %s\r\n\r\n", lens[i]);
        cr_assert_eq(hk_tcp_sends(fd, req), 0);
        struct hk_raw raw = {0};
        hk_tcp_read(fd, &raw, 1, 3000);
        cr_assert_eq(raw.nfinal, 1, "no response to an oversized Content-Length before the body "
                     "(timed out: %d): %s", raw.timed_out, raw.buf);
        const struct hk_raw_resp *rr = hk_raw_final(&raw, 0);
        cr_assert_eq(rr->status, 413, "%s", raw.buf);
        hk_assert_common(rr->head, rr->head_len, rr->status, rr->body_len, false);
        char v[128];
        cr_assert(hk_raw_header(&raw, 0, "Content-Type", v, sizeof v) &&
                  strncmp(v, "application/problem+json", 24) == 0, "413 Content-Type: %s", v);
        cr_assert(hk_raw_header(&raw, 0, "Connection", v, sizeof v) && hk_list_has(v, "close"),
                  "413 without Connection: close:\n%.*s", (int)rr->head_len, rr->head);
        cr_assert(hk_tcp_wait_closed(fd, &raw, 2000), "connection not closed after 413");
        hk_tcp_close(fd);
        hk_raw_free(&raw);
    }
    hk_finish(&srv);
}

Test(api, body_too_large_chunked)
{
    hk_server_start(&srv, SMALL_BODY_ENV);
    int fd = hk_tcp_connect(&srv);
    cr_assert_eq(hk_tcp_sends(fd, "POST /api/webhooks HTTP/1.1\r\nHost: localhost\r\n"
                                  "Content-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n"
                                  "1e\r\n{\"source\":\"s\",\"eventType\":\"e\",\r\n"),
                 0);
    char chunk[600];
    memset(chunk, ' ', sizeof chunk);
    char sz[16];
    snprintf(sz, sizeof sz, "%zx\r\n", sizeof chunk);
    /* Up to 3 x 600 bytes; the server may answer and close before the last ones. */
    for (int i = 0; i < 3; i++) {
        if (hk_tcp_sends(fd, sz) < 0 || hk_tcp_send(fd, chunk, sizeof chunk) < 0 ||
            hk_tcp_sends(fd, "\r\n") < 0)
            break;
    }
    struct hk_raw raw = {0};
    hk_tcp_read(fd, &raw, 1, 3000);
    cr_assert_eq(raw.nfinal, 1, "no response to a chunked body over the limit: %s", raw.buf);
    const struct hk_raw_resp *rr = hk_raw_final(&raw, 0);
    cr_assert_eq(rr->status, 413, "%s", raw.buf);
    char v[128];
    cr_assert(hk_raw_header(&raw, 0, "Connection", v, sizeof v) && hk_list_has(v, "close"),
              "413 without Connection: close");
    cr_assert(hk_tcp_wait_closed(fd, &raw, 2000), "connection not closed after 413");
    hk_tcp_close(fd);
    hk_raw_free(&raw);
    json_t *a = list("/api/webhooks");
    cr_assert_eq(json_array_size(a), 0);
    json_decref(a);
    hk_finish(&srv);
}

Test(api, default_body_limit_is_one_mebibyte)
{
    hk_server_start(&srv, NULL);
    /* Exactly 1 MiB is accepted and stored whole: the body spans many reads. */
    char *b = body_of_size(1048576);
    struct hk_resp r;
    post(JSON_CT, b, 0, &r);
    cr_assert_eq(r.status, 201, "a 1 MiB body under the default limit: %ld %.200s", r.status, r.body);
    json_t *j = hk_assert_json(&r, 201);
    size_t plen = strlen(hk_jstr(j, "payload"));
    cr_assert_eq(plen, 1048576 - strlen("{\"source\":\"s\",\"eventType\":\"e\",\"payload\":\"\"}"),
                 "payload came back with %zu bytes", plen);
    json_decref(j);
    hk_resp_free(&r);
    free(b);
    /* One more byte is 413, decided from Content-Length alone. */
    int fd = hk_tcp_connect(&srv);
    cr_assert_eq(hk_tcp_sends(fd, "POST /api/webhooks HTTP/1.1\r\nHost: localhost\r\n"
                                  "Content-Type: application/json\r\nContent-Length: 1048577\r\n\r\n"),
                 0);
    struct hk_raw raw = {0};
    hk_tcp_read(fd, &raw, 1, 3000);
    cr_assert_eq(raw.nfinal, 1, "no 413 before the body: %s", raw.buf);
    cr_assert_eq(raw.r[0].status, 413, "%s", raw.buf);
    hk_tcp_close(fd);
    hk_raw_free(&raw);
    hk_finish(&srv);
}

Test(api, flag_max_body_bytes_works_like_env)
{
    const char *args[] = {"--max-body-bytes", "1024", NULL};
    hk_server_start_args(&srv, NULL, args);
    char *b = body_of_size(1025);
    const char *hs[] = {"Content-Type: application/json", NULL};
    struct hk_req req = {.method = "POST", .path = "/api/webhooks", .body = b, .headers = hs};
    struct hk_resp r;
    hk_request(&srv, NULL, &req, &r);
    cr_assert_eq(r.status, 413, "--max-body-bytes 1024 and a 1025-byte body: curl %d status %ld",
                 r.curl_rc, r.status);
    hk_resp_free(&r);
    free(b);
    hk_finish(&srv);
}

Test(api, chunked_request_body)
{
    hk_server_start(&srv, NULL);
    struct hk_req req = {.method = "POST", .path = "/api/webhooks", .headers = JSON_CT, .chunked = true,
                         .body = "{\"source\":\"chunky\",\"eventType\":\"split\",\"payload\":\"0123456789abcdef0123456789\"}"};
    struct hk_resp r;
    hk_do(&srv, NULL, &req, &r);
    json_t *j = hk_assert_json(&r, 201);
    hk_assert_webhook(j, "chunky", "split", "0123456789abcdef0123456789");
    json_decref(j);
    hk_resp_free(&r);

    /* Raw: odd chunk sizes, a chunk extension and a trailer. */
    int fd = hk_tcp_connect(&srv);
    cr_assert_eq(hk_tcp_sends(fd, "POST /api/webhooks HTTP/1.1\r\nHost: localhost\r\n"
                                  "Content-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n"
                                  "1\r\n{\r\n"
                                  "A;ext=1\r\n\"source\":\"\r\n"
                                  "1f\r\nraw\",\"eventType\":\"e\",\"payload\":\r\n"
                                  "5\r\nnull}\r\n"
                                  "0\r\nX-Trailer: t\r\n\r\n"),
                 0);
    struct hk_raw raw = {0};
    hk_tcp_read(fd, &raw, 1, 3000);
    const struct hk_raw_resp *rr = hk_raw_final(&raw, 0);
    cr_assert(rr, "no response: %s", raw.buf);
    cr_assert_eq(rr->status, 201, "%s", raw.buf);
    json_t *o = json_loadb(rr->body, rr->body_len, 0, NULL);
    hk_assert_webhook(o, "raw", "e", NULL);
    json_decref(o);
    hk_tcp_close(fd);
    hk_raw_free(&raw);
    hk_finish(&srv);
}

Test(api, expect_100_continue)
{
    hk_server_start(&srv, NULL);
    const char *body = "{\"source\":\"exp\",\"eventType\":\"e\"}";
    int fd = hk_tcp_connect(&srv);
    char head[512];
    snprintf(head, sizeof head,
             "POST /api/webhooks HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\n"
             "Expect: 100-continue\r\nContent-Length: %zu\r\n\r\n", strlen(body));
    cr_assert_eq(hk_tcp_sends(fd, head), 0);
    struct hk_raw raw = {0};
    cr_assert(hk_tcp_read_until(fd, &raw, "\r\n\r\n", 2000), "nothing within 2 s after Expect: %s", raw.buf);
    cr_assert(strncmp(raw.buf, "HTTP/1.1 100 Continue\r\n", 23) == 0, "expected 100 Continue first: %s",
              raw.buf);
    cr_assert_eq(hk_tcp_sends(fd, body), 0);
    hk_tcp_read(fd, &raw, 1, 3000);
    cr_assert_eq(raw.n, 2, "expected 100 then the final response: %s", raw.buf);
    cr_assert(raw.r[0].interim && raw.r[0].status == 100);
    cr_assert_eq(raw.r[1].status, 201, "%s", raw.buf);
    hk_tcp_close(fd);
    hk_raw_free(&raw);

    /* curl's own Expect handling. */
    struct hk_req req = {.method = "POST", .path = "/api/webhooks", .headers = JSON_CT,
                         .body = body, .expect_100 = true};
    const char *hs[] = {"Content-Type: application/json", "Expect: 100-continue", NULL};
    req.headers = hs;
    struct hk_resp r;
    hk_do(&srv, NULL, &req, &r);
    cr_assert(r.saw_100, "curl did not see 100 Continue:\n%s", r.heads);
    json_decref(hk_assert_json(&r, 201));
    hk_resp_free(&r);
    hk_finish(&srv);
}

Test(api, expect_100_with_oversized_body_gets_413_without_100)
{
    hk_server_start(&srv, SMALL_BODY_ENV);
    int fd = hk_tcp_connect(&srv);
    cr_assert_eq(hk_tcp_sends(fd, "POST /api/webhooks HTTP/1.1\r\nHost: localhost\r\n"
                                  "Content-Type: application/json\r\nExpect: 100-continue\r\n"
                                  "Content-Length: 5000\r\n\r\n"),
                 0);
    struct hk_raw raw = {0};
    hk_tcp_read(fd, &raw, 1, 3000);
    cr_assert(raw.n >= 1, "no response: %s", raw.buf);
    cr_assert_eq(raw.r[0].status, 413, "first response should be 413, not an invitation to send: %s",
                 raw.buf);
    hk_tcp_close(fd);
    hk_raw_free(&raw);
    hk_finish(&srv);
}

/* ---- idempotency ---- */

Test(api, idempotency_key_replays_original)
{
    hk_server_start(&srv, NULL);
    const char *hs[] = {"Content-Type: application/json", "Idempotency-Key: k1", NULL};
    const char *body = "{\"source\":\"github\",\"eventType\":\"push\",\"payload\":\"first\"}";
    struct hk_resp r1, r2;
    post(hs, body, 0, &r1);
    json_t *j1 = hk_assert_json(&r1, 201);
    int64_t id = hk_assert_webhook(j1, "github", "push", "first");
    char v[64];
    cr_assert(!hk_header(&r1, "Idempotent-Replayed", v, sizeof v) || strcmp(v, "true") != 0,
              "first request marked as replayed");

    post(hs, body, 0, &r2);
    json_t *j2 = hk_assert_json(&r2, 200);
    cr_assert_eq(hk_assert_webhook(j2, "github", "push", "first"), id, "replay returned another id");
    cr_assert(json_equal(j1, j2), "replay differs from the original:\n%s\n%s", r1.body, r2.body);
    cr_assert(hk_header(&r2, "Idempotent-Replayed", v, sizeof v), "replay without Idempotent-Replayed:\n%s",
              r2.head);
    cr_assert_str_eq(v, "true");

    json_t *a = list("/api/webhooks");
    cr_assert_eq(json_array_size(a), 1, "a replay stored a second row");
    json_decref(a);

    /* The key is scoped to the source: another source gets its own row. */
    const char *body2 = "{\"source\":\"gitlab\",\"eventType\":\"push\",\"payload\":\"first\"}";
    struct hk_resp r3;
    post(hs, body2, 0, &r3);
    json_t *j3 = hk_assert_json(&r3, 201);
    cr_assert_gt(hk_assert_webhook(j3, "gitlab", "push", "first"), id);
    /* And another key with the same source too. */
    const char *hs2[] = {"Content-Type: application/json", "Idempotency-Key: k2", NULL};
    struct hk_resp r4;
    post(hs2, body, 0, &r4);
    json_decref(hk_assert_json(&r4, 201));
    a = list("/api/webhooks");
    cr_assert_eq(json_array_size(a), 3);
    json_decref(a);
    json_decref(j1);
    json_decref(j2);
    json_decref(j3);
    hk_resp_free(&r1);
    hk_resp_free(&r2);
    hk_resp_free(&r3);
    hk_resp_free(&r4);
    hk_finish(&srv);
}

struct idem_job {
    const struct hk_server *s;
    long status;
    int64_t id;
    char replayed[16];
};

static void *idem_worker(void *arg)
{
    struct idem_job *j = arg;
    const char *hs[] = {"Content-Type: application/json", "Idempotency-Key: race", NULL};
    struct hk_req req = {.method = "POST", .path = "/api/webhooks", .headers = hs,
                         .body = "{\"source\":\"race\",\"eventType\":\"e\"}"};
    struct hk_resp r;
    if (hk_request(j->s, NULL, &req, &r) == CURLE_OK) {
        j->status = r.status;
        json_t *o = json_loadb(r.body, r.body_len, 0, NULL);
        j->id = json_integer_value(json_object_get(o, "id"));
        json_decref(o);
        hk_header(&r, "Idempotent-Replayed", j->replayed, sizeof j->replayed);
    }
    hk_resp_free(&r);
    return NULL;
}

Test(api, idempotency_key_race_stores_one_row)
{
    hk_server_start(&srv, NULL);
    enum { N = 8 };
    pthread_t th[N];
    struct idem_job jobs[N];
    for (int i = 0; i < N; i++) {
        jobs[i] = (struct idem_job){.s = &srv};
        cr_assert_eq(pthread_create(&th[i], NULL, idem_worker, &jobs[i]), 0);
    }
    for (int i = 0; i < N; i++)
        pthread_join(th[i], NULL);
    int created = 0;
    for (int i = 0; i < N; i++) {
        cr_assert(jobs[i].status == 201 || jobs[i].status == 200, "concurrent request %d: status %ld", i,
                  jobs[i].status);
        created += jobs[i].status == 201;
        if (jobs[i].status == 200)
            cr_assert_str_eq(jobs[i].replayed, "true", "concurrent replay %d without Idempotent-Replayed", i);
        cr_assert_eq(jobs[i].id, jobs[0].id, "concurrent requests with one key got ids %" PRId64 " and %" PRId64,
                     jobs[0].id, jobs[i].id);
    }
    cr_assert_eq(created, 1, "%d of %d concurrent requests with one key got 201", created, N);
    json_t *a = list("/api/webhooks");
    cr_assert_eq(json_array_size(a), 1, "concurrent requests with one key stored %zu rows", json_array_size(a));
    json_decref(a);
    hk_finish(&srv);
}

Test(api, idempotency_key_length)
{
    hk_server_start(&srv, NULL);
    char *k255 = repeat("k", 255, "Idempotency-Key: ", "");
    char *k256 = repeat("k", 256, "Idempotency-Key: ", "");
    const char *ok[] = {"Content-Type: application/json", k255, NULL};
    const char *bad[] = {"Content-Type: application/json", k256, NULL};
    struct hk_resp r;
    post(ok, "{\"source\":\"s\",\"eventType\":\"e\"}", 0, &r);
    cr_assert_eq(r.status, 201, "255-character key: %ld %s", r.status, r.body);
    hk_resp_free(&r);
    post(bad, "{\"source\":\"s\",\"eventType\":\"e\"}", 0, &r);
    json_decref(hk_assert_problem(&r, 400));
    hk_resp_free(&r);
    json_t *a = list("/api/webhooks");
    cr_assert_eq(json_array_size(a), 1);
    json_decref(a);
    free(k255);
    free(k256);
    hk_finish(&srv);
}

/* ---- signatures ---- */

static const char *const SECRET_ENV[] = {"HOOKD_WEBHOOK_SECRET=s3cret", NULL};

Test(api, signature_required_when_secret_set)
{
    hk_server_start(&srv, SECRET_ENV);
    /* Odd spacing: the HMAC is over the raw bytes, not a re-serialisation. */
    const char *body = "{ \"source\" : \"signed\",\n \"eventType\":\"push\" }";
    char sig[72], hdr[128];
    hk_hub_signature("s3cret", body, strlen(body), sig);
    snprintf(hdr, sizeof hdr, "X-Hub-Signature-256: %s", sig);
    const char *good[] = {"Content-Type: application/json", hdr, NULL};
    struct hk_resp r;
    post(good, body, 0, &r);
    json_t *j = hk_assert_json(&r, 201);
    hk_assert_webhook(j, "signed", "push", NULL);
    json_decref(j);
    hk_resp_free(&r);

    /* Chunked bodies are signed over the decoded bytes. */
    struct hk_req creq = {.method = "POST", .path = "/api/webhooks", .headers = good, .body = body,
                          .chunked = true};
    hk_do(&srv, NULL, &creq, &r);
    cr_assert_eq(r.status, 201, "signed chunked body: %ld %s", r.status, r.body);
    hk_resp_free(&r);

    char other[72], hdr_other[128], hdr_key[128];
    hk_hub_signature("s3cret", "{}", 2, other);
    snprintf(hdr_other, sizeof hdr_other, "X-Hub-Signature-256: %s", other);
    hk_hub_signature("wrong", body, strlen(body), other);
    snprintf(hdr_key, sizeof hdr_key, "X-Hub-Signature-256: %s", other);
    char hdr_noprefix[128];
    snprintf(hdr_noprefix, sizeof hdr_noprefix, "X-Hub-Signature-256: %s", sig + 7);
    const char *bad_sigs[] = {NULL, hdr_other, hdr_key, hdr_noprefix, "X-Hub-Signature-256: sha256=zz",
                              "X-Hub-Signature-256: sha256=", "X-Hub-Signature: sha1=0000"};
    for (size_t i = 0; i < sizeof bad_sigs / sizeof bad_sigs[0]; i++) {
        hk_context("bad signature case %zu: %s", i, bad_sigs[i] ? bad_sigs[i] : "(none)");
        const char *hs[] = {"Content-Type: application/json", bad_sigs[i], NULL};
        post(hs, body, 0, &r);
        json_decref(hk_assert_problem(&r, 401));
        hk_resp_free(&r);
    }
    hk_context("%s", "");
    /* Reads need no signature. */
    json_t *a = list("/api/webhooks");
    cr_assert_eq(json_array_size(a), 2);
    json_decref(a);
    hk_finish(&srv);
}

Test(api, no_signature_needed_without_secret)
{
    hk_server_start(&srv, NULL);
    hk_create(&srv, "unsigned", "e", NULL);
    hk_finish(&srv);
}

/* ---- list ---- */

Test(api, list_empty)
{
    hk_server_start(&srv, NULL);
    json_t *a = list("/api/webhooks");
    cr_assert_eq(json_array_size(a), 0);
    json_decref(a);
    a = list("/api/webhooks?all=true");
    cr_assert_eq(json_array_size(a), 0);
    json_decref(a);
    hk_finish(&srv);
}

Test(api, list_newest_first_default_limit_and_paging)
{
    hk_server_start(&srv, NULL);
    int64_t *ids = bulk(105, body_alpha_beta);
    json_t *a = list("/api/webhooks");
    cr_assert_eq(json_array_size(a), 100, "default limit is 100");
    for (size_t i = 0; i < 100; i++)
        cr_assert_eq(item_id(a, i), ids[i], "item %zu: id %" PRId64 ", expected %" PRId64, i,
                     item_id(a, i), ids[i]);
    /* Every item is a full WebhookResponse. */
    json_t *first = json_array_get(a, 0);
    const char *src = json_string_value(json_object_get(first, "source"));
    const char *et = json_string_value(json_object_get(first, "eventType"));
    const char *pl = json_string_value(json_object_get(first, "payload"));
    cr_assert(src && et && pl);
    hk_assert_webhook(first, src, et, pl);
    json_decref(a);

    a = list("/api/webhooks?limit=5");
    cr_assert_eq(json_array_size(a), 5);
    for (size_t i = 0; i < 5; i++)
        cr_assert_eq(item_id(a, i), ids[i]);
    json_decref(a);
    a = list("/api/webhooks?limit=1");
    cr_assert_eq(json_array_size(a), 1);
    cr_assert_eq(item_id(a, 0), ids[0]);
    json_decref(a);
    a = list("/api/webhooks?limit=1000");
    cr_assert_eq(json_array_size(a), 105);
    json_decref(a);

    /* Keyset paging: before=<id> gives only smaller ids. */
    char path[128];
    snprintf(path, sizeof path, "/api/webhooks?before=%" PRId64, ids[50]);
    a = list(path);
    cr_assert_eq(json_array_size(a), 54);
    for (size_t i = 0; i < 54; i++)
        cr_assert_eq(item_id(a, i), ids[51 + i]);
    json_decref(a);
    snprintf(path, sizeof path, "/api/webhooks?limit=10&before=%" PRId64, ids[100]);
    a = list(path);
    cr_assert_eq(json_array_size(a), 4);
    cr_assert_eq(item_id(a, 0), ids[101]);
    json_decref(a);
    snprintf(path, sizeof path, "/api/webhooks?before=%" PRId64, ids[104]);
    a = list(path);
    cr_assert_eq(json_array_size(a), 0);
    json_decref(a);
    /* Walk all pages of 30. */
    int64_t before = 0;
    int seen = 0;
    for (int page = 0; page < 10; page++) {
        if (before)
            snprintf(path, sizeof path, "/api/webhooks?limit=30&before=%" PRId64, before);
        else
            snprintf(path, sizeof path, "/api/webhooks?limit=30");
        a = list(path);
        size_t n = json_array_size(a);
        for (size_t i = 0; i < n; i++)
            cr_assert_eq(item_id(a, i), ids[seen + (int)i]);
        seen += (int)n;
        if (n)
            before = item_id(a, n - 1);
        json_decref(a);
        if (n < 30)
            break;
    }
    cr_assert_eq(seen, 105);
    free(ids);
    hk_finish(&srv);
}

Test(api, list_invalid_limit)
{
    hk_server_start(&srv, NULL);
    const char *bad[] = {"0", "1001", "abc", "-1", "1.5", "99999999999999999999"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        hk_context("GET /api/webhooks?limit=%s", bad[i]);
        struct hk_resp r;
        char path[96];
        snprintf(path, sizeof path, "/api/webhooks?limit=%s", bad[i]);
        hk_get(&srv, path, &r);
        json_decref(hk_assert_problem(&r, 400));
        hk_resp_free(&r);
    }
    hk_finish(&srv);
}

Test(api, list_filters_by_source_and_event_type)
{
    hk_server_start(&srv, NULL);
    hk_create(&srv, "a b", "push", NULL);
    hk_create(&srv, "a", "push", NULL);
    hk_create(&srv, "a b c", "push", NULL);
    int64_t last_ab = 0;
    last_ab = hk_create(&srv, "a b", "pull request", NULL);
    hk_create(&srv, "A B", "push", NULL);
    hk_create(&srv, "a&b=c", "push", NULL);

    json_t *a = list("/api/webhooks?source=a%20b");
    cr_assert_eq(json_array_size(a), 2, "source=a%%20b must match exactly \"a b\"");
    for (size_t i = 0; i < 2; i++)
        cr_assert_str_eq(json_string_value(json_object_get(json_array_get(a, i), "source")), "a b");
    cr_assert_eq(item_id(a, 0), last_ab);
    json_decref(a);

    a = list("/api/webhooks?source=a");
    cr_assert_eq(json_array_size(a), 1);
    json_decref(a);
    a = list("/api/webhooks?source=a%26b%3Dc");
    cr_assert_eq(json_array_size(a), 1, "percent-encoded & and = in a filter value");
    json_decref(a);
    a = list("/api/webhooks?eventType=pull%20request");
    cr_assert_eq(json_array_size(a), 1);
    cr_assert_eq(item_id(a, 0), last_ab);
    json_decref(a);
    a = list("/api/webhooks?eventType=push");
    cr_assert_eq(json_array_size(a), 5);
    json_decref(a);
    a = list("/api/webhooks?source=a%20b&eventType=push");
    cr_assert_eq(json_array_size(a), 1);
    cr_assert_str_eq(json_string_value(json_object_get(json_array_get(a, 0), "eventType")), "push");
    json_decref(a);
    a = list("/api/webhooks?eventType=push&source=a%20b&limit=1");
    cr_assert_eq(json_array_size(a), 1);
    json_decref(a);
    a = list("/api/webhooks?source=nobody");
    cr_assert_eq(json_array_size(a), 0);
    json_decref(a);
    hk_finish(&srv);
}

Test(api, list_all_streams_every_row_chunked, .timeout = 120)
{
    hk_server_start(&srv, NULL);
    int n = 2500;
    int64_t *ids = bulk(n, body_alpha_beta);
    struct hk_resp r;
    hk_get(&srv, "/api/webhooks?all=true", &r);
    json_t *a = hk_assert_json(&r, 200);
    char te[64];
    cr_assert(hk_header(&r, "Transfer-Encoding", te, sizeof te) && strcasecmp(te, "chunked") == 0,
              "all=true is not chunked:\n%s", r.head);
    cr_assert(json_is_array(a));
    cr_assert_eq(json_array_size(a), (size_t)n, "all=true returned %zu of %d rows", json_array_size(a), n);
    for (int i = 0; i < n; i++)
        cr_assert_eq(item_id(a, (size_t)i), ids[i], "all=true item %d: %" PRId64 " expected %" PRId64, i,
                     item_id(a, (size_t)i), ids[i]);
    json_decref(a);
    hk_resp_free(&r);

    /* Filters still apply. */
    a = list("/api/webhooks?all=true&source=beta");
    cr_assert_eq(json_array_size(a), (size_t)n / 2);
    for (size_t i = 0; i < json_array_size(a); i++)
        cr_assert_str_eq(json_string_value(json_object_get(json_array_get(a, i), "source")), "beta");
    json_decref(a);
    a = list("/api/webhooks?all=true&source=alpha&eventType=ping");
    int want = 0;
    for (int i = 0; i < n; i++)
        want += i % 2 == 0 && i % 3 == 0;
    cr_assert_eq(json_array_size(a), (size_t)want);
    json_decref(a);
    free(ids);
    hk_finish(&srv);
}

/* ---- get / delete ---- */

Test(api, get_absent_or_malformed_id_is_404)
{
    hk_server_start(&srv, NULL);
    hk_create(&srv, "s", "e", NULL);
    const char *bad[] = {"2", "0", "abc", "-1", "1.5", "99999999999999999999", "1abc"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        hk_context("GET /api/webhooks/%s", bad[i]);
        struct hk_resp r;
        char path[128];
        snprintf(path, sizeof path, "/api/webhooks/%s", bad[i]);
        hk_get(&srv, path, &r);
        json_decref(hk_assert_problem(&r, 404));
        hk_resp_free(&r);
    }
    hk_finish(&srv);
}

Test(api, delete_then_gone)
{
    hk_server_start(&srv, NULL);
    int64_t keep = hk_create(&srv, "s", "e", NULL);
    int64_t id = hk_create(&srv, "s", "e", "bye");
    char path[64];
    snprintf(path, sizeof path, "/api/webhooks/%" PRId64, id);
    struct hk_req del = {.method = "DELETE", .path = path};
    struct hk_resp r;
    hk_do(&srv, NULL, &del, &r);
    cr_assert_eq(r.status, 204, "DELETE: %ld %s", r.status, r.body);
    cr_assert_eq(r.body_len, 0);
    hk_resp_free(&r);

    hk_do(&srv, NULL, &del, &r);
    json_decref(hk_assert_problem(&r, 404));
    hk_resp_free(&r);
    hk_get(&srv, path, &r);
    json_decref(hk_assert_problem(&r, 404));
    hk_resp_free(&r);
    json_t *a = list("/api/webhooks");
    cr_assert_eq(json_array_size(a), 1);
    cr_assert_eq(item_id(a, 0), keep);
    json_decref(a);

    const char *bad[] = {"/api/webhooks/abc", "/api/webhooks/-1", "/api/webhooks/99999999999999999999"};
    for (size_t i = 0; i < 3; i++) {
        struct hk_req d = {.method = "DELETE", .path = bad[i]};
        hk_do(&srv, NULL, &d, &r);
        cr_assert_eq(r.status, 404, "DELETE %s: %ld", bad[i], r.status);
        hk_resp_free(&r);
    }
    hk_finish(&srv);
}

/* ---- routing ---- */

Test(api, unknown_paths_are_404_problems)
{
    hk_server_start(&srv, NULL);
    const char *paths[] = {"/", "/nope", "/api", "/api/webhooks/1/extra", "/api/webhookss",
                           "/q/health/nope", "/api/system", "/API/WEBHOOKS"};
    for (size_t i = 0; i < sizeof paths / sizeof paths[0]; i++) {
        hk_context("GET %s", paths[i]);
        struct hk_resp r;
        hk_get(&srv, paths[i], &r);
        json_decref(hk_assert_problem(&r, 404));
        hk_resp_free(&r);
    }
    hk_finish(&srv);
}

static void expect_405(CURL *h, const char *method, const char *path, const char *const *allowed, int nallowed)
{
    hk_context("%s %s", method, path);
    struct hk_req req = {.method = method, .path = path};
    if (strcmp(method, "PUT") == 0 || strcmp(method, "PATCH") == 0) {
        req.body = "{\"source\":\"s\",\"eventType\":\"e\"}";
        req.headers = JSON_CT;
    }
    struct hk_resp r;
    hk_do(&srv, h, &req, &r);
    json_decref(hk_assert_problem(&r, 405));
    char allow[256];
    cr_assert(hk_header(&r, "Allow", allow, sizeof allow), "%s %s: 405 without Allow", method, path);
    /* The set matters, not the order; HEAD may be listed as well. */
    int n = 0;
    for (int i = 0; i < nallowed; i++) {
        cr_assert(hk_list_has(allow, allowed[i]), "%s %s: Allow \"%s\" lacks %s", method, path, allow,
                  allowed[i]);
        n++;
    }
    if (hk_list_has(allow, "HEAD"))
        n++;
    int commas = 0;
    for (const char *p = allow; *p; p++)
        commas += *p == ',';
    cr_assert_eq(commas + 1, n, "%s %s: Allow \"%s\" has methods outside the expected set", method, path,
                 allow);
    hk_resp_free(&r);
}

Test(api, wrong_method_is_405_with_allow)
{
    hk_server_start(&srv, NULL);
    int64_t id = hk_create(&srv, "s", "e", NULL);
    char one[64];
    snprintf(one, sizeof one, "/api/webhooks/%" PRId64, id);
    const char *get_post[] = {"GET", "POST"};
    const char *del_get[] = {"DELETE", "GET"};
    const char *get[] = {"GET"};
    /* One keep-alive handle throughout: a 405 with a body must not desync the connection. */
    CURL *h = hk_curl_new();
    expect_405(h, "PUT", "/api/webhooks", get_post, 2);
    expect_405(h, "DELETE", "/api/webhooks", get_post, 2);
    expect_405(h, "PATCH", "/api/webhooks", get_post, 2);
    expect_405(h, "POST", one, del_get, 2);
    expect_405(h, "PUT", one, del_get, 2);
    expect_405(h, "POST", "/api/webhooks/1", del_get, 2);
    expect_405(h, "POST", "/q/health", get, 1);
    expect_405(h, "DELETE", "/q/health/live", get, 1);
    expect_405(h, "POST", "/api/system/info", get, 1);
    expect_405(h, "PUT", "/api/system/benchmark", get, 1);
    struct hk_req req = {.path = one};
    struct hk_resp r;
    hk_do(&srv, h, &req, &r);
    json_decref(hk_assert_json(&r, 200));
    hk_resp_free(&r);
    curl_easy_cleanup(h);
    json_t *a = list("/api/webhooks");
    cr_assert_eq(json_array_size(a), 1, "a PUT/PATCH created a row");
    json_decref(a);
    hk_finish(&srv);
}

Test(api, query_string_does_not_change_route)
{
    hk_server_start(&srv, NULL);
    int64_t id = hk_create(&srv, "s", "e", NULL);
    char path[96];
    snprintf(path, sizeof path, "/api/webhooks/%" PRId64 "?x=1", id);
    struct hk_resp r;
    hk_get(&srv, path, &r);
    json_decref(hk_assert_json(&r, 200));
    hk_resp_free(&r);
    hk_get(&srv, "/q/health/live?verbose=1", &r);
    json_decref(hk_assert_json(&r, 200));
    hk_resp_free(&r);
    hk_finish(&srv);
}

Test(api, head_mirrors_get_without_body)
{
    hk_server_start(&srv, NULL);
    int64_t id = hk_create(&srv, "s", "e", "p");
    char one[64];
    snprintf(one, sizeof one, "/api/webhooks/%" PRId64, id);
    const struct {
        const char *path;
        bool same_length;
    } cases[] = {
        {"/q/health/live", true}, {"/q/health", true},          {"/api/webhooks", true},
        {one, true},              {"/api/webhooks/999", true}, {"/api/system/info", false},
        {"/nope", true},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        hk_context("HEAD %s", cases[i].path);
        struct hk_resp g, h;
        hk_get(&srv, cases[i].path, &g);
        struct hk_req req = {.method = "HEAD", .path = cases[i].path};
        hk_do(&srv, NULL, &req, &h);
        cr_assert_eq(h.status, g.status, "HEAD %s: %ld, GET: %ld", cases[i].path, h.status, g.status);
        cr_assert_eq(h.body_len, 0);
        char a[256], b[256];
        cr_assert(hk_header(&h, "Content-Type", a, sizeof a), "HEAD %s: no Content-Type", cases[i].path);
        hk_header(&g, "Content-Type", b, sizeof b);
        cr_assert_str_eq(a, b);
        if (cases[i].same_length) {
            cr_assert(hk_header(&h, "Content-Length", a, sizeof a), "HEAD %s: no Content-Length:\n%s",
                      cases[i].path, h.head);
            hk_header(&g, "Content-Length", b, sizeof b);
            cr_assert_str_eq(a, b, "HEAD %s: Content-Length %s, GET: %s", cases[i].path, a, b);
        }
        hk_resp_free(&g);
        hk_resp_free(&h);
    }
    hk_context("%s", "");
    /* On the wire: no body bytes between a HEAD response and the next one. */
    int fd = hk_tcp_connect(&srv);
    cr_assert_eq(hk_tcp_sends(fd, "HEAD /q/health/live HTTP/1.1\r\nHost: x\r\n\r\n"
                                  "HEAD /api/webhooks HTTP/1.1\r\nHost: x\r\n\r\n"
                                  "GET /q/health/live HTTP/1.1\r\nHost: x\r\n\r\n"),
                 0);
    struct hk_raw raw = {.head_mask = 3};
    hk_tcp_read(fd, &raw, 3, 3000);
    cr_assert(!raw.malformed, "bytes after a HEAD response:\n%s", raw.buf);
    cr_assert_eq(raw.nfinal, 3, "%s", raw.buf);
    for (int i = 0; i < 3; i++)
        cr_assert_eq(raw.r[i].status, 200);
    cr_assert_eq(raw.r[2].body_len > 0, true);
    /* Nothing left over after the GET's body. */
    const char *end = raw.r[2].head + raw.r[2].head_len + raw.r[2].body_len;
    cr_assert_eq(end, raw.buf + raw.len, "trailing bytes after the last response:\n%s", raw.buf);
    hk_tcp_close(fd);
    hk_raw_free(&raw);
    hk_finish(&srv);
}

/* ---- system and health ---- */

static double num(json_t *o, const char *k)
{
    json_t *v = json_object_get(o, k);
    cr_assert(json_is_number(v), "\"%s\" is not a number", k);
    return json_number_value(v);
}

Test(api, system_info)
{
    hk_server_start(&srv, NULL);
    struct hk_resp r;
    hk_get(&srv, "/api/system/info", &r);
    json_t *j = hk_assert_json(&r, 200);
    hk_context("system info %s", r.body);
    cr_assert_str_eq(hk_jstr(j, "mode"), "native", "%s", r.body);
    cr_assert_str_eq(hk_jstr(j, "version"), "0.1.0", "%s", r.body);
    cr_assert_str_eq(hk_jstr(j, "osName"), "Linux", "%s", r.body);
    const char *arch = json_string_value(json_object_get(j, "osArch"));
    cr_assert(arch && *arch, "osArch: %s", r.body);
    cr_assert_geq(num(j, "uptimeMs"), 0);
    cr_assert_gt(num(j, "rssMb"), 0, "%s", r.body);
    cr_assert_gt(num(j, "maxMemoryMb"), 0, "%s", r.body);
    cr_assert_geq(num(j, "availableProcessors"), 1, "%s", r.body);
    const char *ts = json_string_value(json_object_get(j, "timestamp"));
    cr_assert(ts, "timestamp: %s", r.body);
    double t = hk_parse_rfc3339(ts);
    cr_assert_gt(t, 0, "timestamp not RFC 3339: %s", ts);
    struct timespec now;
    clock_gettime(CLOCK_REALTIME, &now);
    cr_assert(t > now.tv_sec - 60 && t < now.tv_sec + 60, "timestamp %s is not now", ts);
    json_decref(j);
    hk_resp_free(&r);
    hk_finish(&srv);
}

static void check_benchmark(const char *path, long iterations)
{
    struct hk_resp r;
    hk_get(&srv, path, &r);
    json_t *j = hk_assert_json(&r, 200);
    cr_assert(json_is_string(json_object_get(j, "mode")), "%s", r.body);
    cr_assert(json_is_integer(json_object_get(j, "iterations")), "%s", r.body);
    cr_assert_eq(json_integer_value(json_object_get(j, "iterations")), iterations, "%s", r.body);
    double tot = num(j, "totalDurationMs"), avg = num(j, "avgDurationMs");
    double mn = num(j, "minDurationMs"), mx = num(j, "maxDurationMs");
    cr_assert(tot >= 0 && avg >= 0 && mn >= 0 && mx >= 0, "%s", r.body);
    cr_assert(mn <= avg + 1e-9 && avg <= mx + 1e-9, "min <= avg <= max: %s", r.body);
    cr_assert(avg <= tot + 1e-9, "avg <= total: %s", r.body);
    cr_assert_gt(num(j, "throughputPerSec"), 0, "%s", r.body);
    const char *ts = json_string_value(json_object_get(j, "timestamp"));
    cr_assert(ts && hk_parse_rfc3339(ts) > 0, "timestamp: %s", r.body);
    json_decref(j);
    hk_resp_free(&r);
}

Test(api, system_benchmark)
{
    hk_server_start(&srv, NULL);
    check_benchmark("/api/system/benchmark?iterations=10", 10);
    check_benchmark("/api/system/benchmark?iterations=1", 1);
    check_benchmark("/api/system/benchmark", 1000);
    const char *bad[] = {"0", "-1", "x", "1000001", "1e3", ""};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        if (!*bad[i])
            continue; /* "iterations=" with no value: not in the contract */
        hk_context("benchmark iterations=%s", bad[i]);
        char path[96];
        snprintf(path, sizeof path, "/api/system/benchmark?iterations=%s", bad[i]);
        struct hk_resp r;
        hk_get(&srv, path, &r);
        json_decref(hk_assert_problem(&r, 400));
        hk_resp_free(&r);
    }
    hk_finish(&srv);
}

Test(api, health_endpoints)
{
    hk_server_start(&srv, NULL);
    const char *paths[] = {"/q/health", "/q/health/live", "/q/health/ready", "/q/health/started"};
    for (size_t i = 0; i < 4; i++) {
        hk_context("GET %s", paths[i]);
        struct hk_resp r;
        hk_get(&srv, paths[i], &r);
        json_t *j = hk_assert_json(&r, 200);
        cr_assert_str_eq(hk_jstr(j, "status"), "UP", "%s: %s", paths[i],
                         r.body);
        json_t *checks = json_object_get(j, "checks");
        cr_assert(json_is_array(checks), "%s: no checks array: %s", paths[i], r.body);
        for (size_t k = 0; k < json_array_size(checks); k++) {
            json_t *c = json_array_get(checks, k);
            cr_assert(json_is_string(json_object_get(c, "name")), "%s: check without name: %s", paths[i],
                      r.body);
            cr_assert_str_eq(hk_jstr(c, "status"), "UP", "%s: %s",
                             paths[i], r.body);
        }
        json_decref(j);
        hk_resp_free(&r);
    }
    hk_finish(&srv);
}
