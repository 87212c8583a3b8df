/* SPDX-License-Identifier: MIT
 * outbound/cloudevents and outbound/retry: the exact requests a row makes in
 * both content modes (structured output read back with jansson), hostile
 * attribute values against the HTTP binding's percent-encoding, the ce-type
 * table for every scheme hookd knows, the JSON validator against jansson,
 * and the retry policy's verdicts, backoff and Retry-After parsing (dates
 * checked against strftime/timegm). */
#include <criterion/criterion.h>
#include <inttypes.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "core/base64.h"
#include "core/err.h"
#include "core/utf8.h"
#include "ingress/sources.h"
#include "outbound/cloudevents.h"
#include "outbound/retry.h"

#define RECEIVED_US INT64_C(1764612181123456)
#define RECEIVED_ISO "2025-12-01T18:03:01.123456Z"

/* xorshift64*: deterministic "random" input for the property tests. */
static uint64_t rng_state = 0x9e3779b97f4a7c15u;
static uint64_t rnd64(void)
{
    rng_state ^= rng_state >> 12;
    rng_state ^= rng_state << 25;
    rng_state ^= rng_state >> 27;
    return rng_state * 0x2545f4914f6cdd1du;
}

static struct hk_webhook ingress_row(void)
{
    static const char body[] = "{\"action\":\"opened\",\"n\":1}";
    static const char headers[] = "{\"x-github-event\":\"push\",\"content-type\":\"application/json\"}";
    struct hk_webhook w = {0};
    w.id = 42;
    w.source = "gh";
    w.source_len = 2;
    w.event_type = "pull_request";
    w.event_type_len = 12;
    w.received_us = RECEIVED_US;
    w.ingress = true;
    w.body = (const uint8_t *)body;
    w.body_len = sizeof body - 1;
    w.content_type = "application/json";
    w.content_type_len = 16;
    w.delivery_id = "72d3162e-cc78-11e3-81ab-4c9367dc0958";
    w.delivery_id_len = 36;
    w.headers = headers;
    w.headers_len = sizeof headers - 1;
    return w;
}

static struct hk_webhook envelope_row(const char *payload)
{
    struct hk_webhook w = {0};
    w.id = 7;
    w.source = "billing";
    w.source_len = 7;
    w.event_type = "invoice.paid";
    w.event_type_len = 12;
    w.received_us = RECEIVED_US;
    w.payload = payload;
    w.payload_len = payload ? strlen(payload) : 0;
    return w;
}

struct enc {
    struct hk_buf h, b;
    const char *lines[HK_CE_MAX_HEADERS + 1];
    size_t n;
};

static int encode(const struct hk_webhook *w, const struct hk_ce_opts *o, struct enc *e)
{
    memset(e, 0, sizeof *e);
    int rc = hk_ce_encode(w, o, &e->h, &e->b);
    e->n = hk_ce_header_lines(&e->h, e->lines, HK_CE_MAX_HEADERS + 1);
    cr_assert_leq(e->n, HK_CE_MAX_HEADERS);
    return rc;
}

static void enc_free(struct enc *e)
{
    hk_buf_free(&e->h);
    hk_buf_free(&e->b);
}

static void expect_lines(const struct enc *e, const char *const *want)
{
    size_t n = 0;
    while (want[n])
        n++;
    for (size_t i = 0; i < e->n && i < n; i++)
        cr_expect_str_eq(e->lines[i], want[i], "line %zu", i);
    cr_expect_eq(e->n, n, "%zu header lines, want %zu", e->n, n);
}

static void expect_body(const struct enc *e, const void *p, size_t n)
{
    cr_expect_eq(e->b.len, n, "body of %zu bytes, want %zu", e->b.len, n);
    cr_expect(n == 0 || (e->b.len == n && memcmp(e->b.p, p, n) == 0));
}

/* ---- binary mode ------------------------------------------------------------- */

Test(ce_binary, ingress_row_exact)
{
    struct hk_webhook w = ingress_row();
    struct hk_ce_opts o = {.mode = HK_CE_BINARY, .scheme = "github"};
    struct enc e;
    cr_assert_eq(encode(&w, &o, &e), 0);
    static const char *const want[] = {
        "ce-specversion: 1.0",
        "ce-id: 42",
        "ce-source: /hooks/gh",
        "ce-type: com.github.pull_request",
        "ce-time: " RECEIVED_ISO,
        "ce-subject: gh",
        "ce-hookddeliveryid: 72d3162e-cc78-11e3-81ab-4c9367dc0958",
        "Content-Type: application/json",
        NULL,
    };
    expect_lines(&e, want);
    expect_body(&e, w.body, w.body_len);
    enc_free(&e);
}

Test(ce_binary, ingress_raw_bytes_without_content_type)
{
    static const uint8_t raw[] = {0x00, 0xff, 0x0d, 0x0a, 'x', 0x80, 0x00};
    struct hk_webhook w = ingress_row();
    w.body = raw;
    w.body_len = sizeof raw;
    w.content_type = NULL;
    w.content_type_len = 0;
    w.delivery_id = NULL;
    w.delivery_id_len = 0;
    w.id = INT64_C(9007199254740993);
    struct hk_ce_opts o = {.mode = HK_CE_BINARY, .scheme = "hmac", .id_prefix = "db1-"};
    struct enc e;
    cr_assert_eq(encode(&w, &o, &e), 0);
    static const char *const want[] = {
        "ce-specversion: 1.0",
        "ce-id: db1-9007199254740993",
        "ce-source: /hooks/gh",
        "ce-type: dev.hookd.gh.pull_request",
        "ce-time: " RECEIVED_ISO,
        "ce-subject: gh",
        NULL,
    };
    expect_lines(&e, want);
    expect_body(&e, raw, sizeof raw);
    enc_free(&e);
}

Test(ce_binary, ingress_empty_body_keeps_content_type)
{
    struct hk_webhook w = ingress_row();
    w.body = NULL;
    w.body_len = 0;
    w.content_type = "  text/plain; charset=utf-8\t";
    w.content_type_len = strlen(w.content_type);
    struct enc e;
    cr_assert_eq(encode(&w, &(struct hk_ce_opts){.scheme = "github"}, &e), 0);
    cr_assert_eq(e.n, 8);
    cr_expect_str_eq(e.lines[7], "Content-Type: text/plain; charset=utf-8");
    cr_expect_eq(e.b.len, 0);
    enc_free(&e);
}

Test(ce_binary, envelope_json_payload)
{
    const char *payload = " {\"amount\": 12.5e0, \"tags\": [\"a\", null]} ";
    struct hk_webhook w = envelope_row(payload);
    struct enc e;
    cr_assert_eq(encode(&w, &(struct hk_ce_opts){.mode = HK_CE_BINARY}, &e), 0);
    static const char *const want[] = {
        "ce-specversion: 1.0",
        "ce-id: 7",
        "ce-source: /api/webhooks",
        "ce-type: dev.hookd.webhook.invoice.paid",
        "ce-time: " RECEIVED_ISO,
        "ce-subject: billing",
        "Content-Type: application/json",
        NULL,
    };
    expect_lines(&e, want);
    expect_body(&e, payload, strlen(payload));
    enc_free(&e);
}

Test(ce_binary, envelope_text_payload)
{
    const char *payload = "hello {not json";
    struct hk_webhook w = envelope_row(payload);
    struct enc e;
    cr_assert_eq(encode(&w, NULL, &e), 0);   /* NULL options: binary, by the scheme */
    static const char *const want[] = {
        "ce-specversion: 1.0",
        "ce-id: 7",
        "ce-source: /api/webhooks",
        "ce-type: dev.hookd.webhook.invoice.paid",
        "ce-time: " RECEIVED_ISO,
        "ce-subject: billing",
        "Content-Type: text/plain; charset=utf-8",
        NULL,
    };
    expect_lines(&e, want);
    expect_body(&e, payload, strlen(payload));
    enc_free(&e);
}

Test(ce_binary, envelope_scalar_json_payloads)
{
    static const char *const json[] = {"42", "\"str\"", "true", "null", "-0.5E+3", "[]", "{}"};
    for (size_t i = 0; i < sizeof json / sizeof json[0]; i++) {
        struct hk_webhook w = envelope_row(json[i]);
        struct enc e;
        cr_assert_eq(encode(&w, NULL, &e), 0);
        cr_expect_str_eq(e.lines[e.n - 1], "Content-Type: application/json", "%s", json[i]);
        enc_free(&e);
    }
}

Test(ce_binary, envelope_null_and_empty_payload)
{
    struct hk_webhook w = envelope_row(NULL);
    struct enc e;
    cr_assert_eq(encode(&w, NULL, &e), 0);
    static const char *const want[] = {
        "ce-specversion: 1.0",
        "ce-id: 7",
        "ce-source: /api/webhooks",
        "ce-type: dev.hookd.webhook.invoice.paid",
        "ce-time: " RECEIVED_ISO,
        "ce-subject: billing",
        NULL,
    };
    expect_lines(&e, want);
    cr_expect_eq(e.b.len, 0);
    enc_free(&e);

    w = envelope_row("");
    cr_assert_eq(encode(&w, NULL, &e), 0);
    cr_assert_eq(e.n, 7);
    cr_expect_str_eq(e.lines[6], "Content-Type: text/plain; charset=utf-8");
    cr_expect_eq(e.b.len, 0);
    enc_free(&e);
}

Test(ce_binary, appends_and_lines_are_capped)
{
    struct hk_webhook w = ingress_row();
    struct hk_buf h = HK_BUF_INIT, b = HK_BUF_INIT;
    hk_buf_put(&h, "User-Agent: hookd\0", 18);
    cr_assert_eq(hk_ce_encode(&w, &(struct hk_ce_opts){.scheme = "github"}, &h, &b), 0);
    const char *lines[4];
    cr_expect_eq(hk_ce_header_lines(&h, lines, 4), 4);
    cr_expect_str_eq(lines[0], "User-Agent: hookd");
    cr_expect_str_eq(lines[1], "ce-specversion: 1.0");
    const char *all[16];
    cr_expect_eq(hk_ce_header_lines(&h, all, 16), 9);
    /* An unterminated tail is not a line. */
    hk_buf_put(&h, "X-Half: 1", 9);
    cr_expect_eq(hk_ce_header_lines(&h, all, 16), 9);
    hk_buf_free(&h);
    hk_buf_free(&b);
}

Test(ce_binary, refuses_what_no_request_carried)
{
    static const char *const bad[] = {"text/plain\r\nX-Injected: 1", "text/plain\n", "a\0b", "caf\xc3\xa9/json",
                                      "text/\x7f"};
    static const size_t bad_len[] = {25, 11, 3, 10, 6};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        struct hk_webhook w = ingress_row();
        w.content_type = bad[i];
        w.content_type_len = bad_len[i];
        struct hk_buf h = HK_BUF_INIT, b = HK_BUF_INIT;
        for (int mode = 0; mode < 2; mode++) {
            struct hk_ce_opts o = {.mode = (enum hk_ce_mode)mode, .scheme = "github"};
            cr_expect_eq(hk_ce_encode(&w, &o, &h, &b), HK_EINVAL, "case %zu", i);
            cr_expect_eq(h.len + b.len, 0, "case %zu wrote something", i);
        }
    }
    struct hk_webhook w = ingress_row();
    struct hk_buf h = HK_BUF_INIT, b = HK_BUF_INIT;
    cr_expect_eq(hk_ce_encode(&w, &(struct hk_ce_opts){.mode = (enum hk_ce_mode)7}, &h, &b), HK_EINVAL);
    /* ce-time must be RFC 3339: years 0000 to 9999. */
    w.received_us = INT64_C(253402300800) * 1000000;
    cr_expect_eq(hk_ce_encode(&w, NULL, &h, &b), HK_EINVAL);
    w.received_us = INT64_C(-62167219201) * 1000000;
    cr_expect_eq(hk_ce_encode(&w, NULL, &h, &b), HK_EINVAL);
    cr_expect_eq(h.len + b.len, 0);
    w.received_us = INT64_C(253402300799) * 1000000 + 999999;
    struct enc e;
    cr_assert_eq(encode(&w, NULL, &e), 0);
    cr_expect_str_eq(e.lines[4], "ce-time: 9999-12-31T23:59:59.999999Z");
    enc_free(&e);
}

Test(ce_binary, mode_names)
{
    enum hk_ce_mode m = HK_CE_BINARY;
    cr_expect_eq(hk_ce_mode_parse("structured", &m), 0);
    cr_expect_eq(m, HK_CE_STRUCTURED);
    cr_expect_eq(hk_ce_mode_parse("binary", &m), 0);
    cr_expect_eq(m, HK_CE_BINARY);
    cr_expect_eq(hk_ce_mode_parse("Binary", &m), HK_EINVAL);
    cr_expect_eq(hk_ce_mode_parse("", &m), HK_EINVAL);
    cr_expect_eq(hk_ce_mode_parse(NULL, &m), HK_EINVAL);
}

/* ---- hostile values ---------------------------------------------------------- */

/* Quote, percent, CR LF, space, é, a C0 control, a byte that is never
 * UTF-8, DEL, U+0085 (C1), a truncated sequence, then 'z'. */
static const char hostile[] = "a\"b%c\r\nd \xc3\xa9\x01\xff\x7f\xc2\x85\xe2\x82z";
/* What CloudEvents may carry of it: each control and each broken sequence
 * replaced by U+FFFD. */
#define R "\xef\xbf\xbd"
static const char hostile_clean[] = "a\"b%c" R R "d \xc3\xa9" R R R R R R "z";
#define PR "%EF%BF%BD"
static const char hostile_header[] = "a%22b%25c" PR PR "d%20%C3%A9" PR PR PR PR PR PR "z";

/* Percent-decoding as a receiver does it; false on a malformed escape. */
static bool pct_decode(const char *s, char *out, size_t *n)
{
    size_t k = 0;
    for (size_t i = 0; s[i]; i++) {
        if (s[i] != '%') {
            out[k++] = s[i];
            continue;
        }
        unsigned v;
        if (sscanf(s + i + 1, "%2x", &v) != 1 || !s[i + 1] || !s[i + 2])
            return false;
        out[k++] = (char)v;
        i += 2;
    }
    *n = k;
    return true;
}

static bool hex_upper(char c)
{
    return (c >= '0' && c <= '9') || (c >= 'A' && c <= 'F');
}

/* Every line "Name: value": one ": ", then only printable ASCII; ce- values
 * have no space, quote or bare '%' either, and decode to UTF-8 without
 * control characters. */
static void check_header_lines(const struct enc *e)
{
    for (size_t i = 0; i < e->n; i++) {
        const char *l = e->lines[i];
        const char *colon = strstr(l, ": ");
        cr_assert(colon, "line %zu has no ': ': %s", i, l);
        for (const char *p = l; *p; p++)
            cr_assert((unsigned char)*p >= 0x20 && (unsigned char)*p < 0x7f, "line %zu byte 0x%02x", i,
                      (unsigned char)*p);
        if (strncmp(l, "ce-", 3) != 0)
            continue;
        const char *v = colon + 2;
        for (const char *p = v; *p; p++) {
            cr_assert(*p != ' ' && *p != '"', "line %zu: %s", i, l);
            if (*p == '%')
                cr_assert(hex_upper(p[1]) && hex_upper(p[2]), "line %zu: bare %%: %s", i, l);
        }
        char dec[4096];
        size_t n;
        cr_assert(pct_decode(v, dec, &n));
        cr_assert(hk_utf8_valid(dec, n, false), "line %zu decodes to invalid UTF-8", i);
        for (size_t k = 0; k < n; k++)
            cr_assert((unsigned char)dec[k] >= 0x20 && dec[k] != 0x7f, "line %zu decodes to a control", i);
    }
}

Test(ce_hostile, binary_percent_encodes)
{
    struct hk_webhook w = envelope_row("x");
    w.source = hostile;
    w.source_len = sizeof hostile - 1;
    w.event_type = hostile;
    w.event_type_len = sizeof hostile - 1;
    w.delivery_id = hostile;
    w.delivery_id_len = sizeof hostile - 1;
    struct hk_ce_opts o = {.mode = HK_CE_BINARY, .id_prefix = "p r%"};
    struct enc e;
    cr_assert_eq(encode(&w, &o, &e), 0);
    check_header_lines(&e);
    cr_expect_str_eq(e.lines[1], "ce-id: p%20r%257");
    cr_expect_str_eq(e.lines[3], "ce-type: dev.hookd.webhook.a_b_c__d________z");
    char want[256];
    snprintf(want, sizeof want, "ce-subject: %s", hostile_header);
    cr_expect_str_eq(e.lines[5], want);
    snprintf(want, sizeof want, "ce-hookddeliveryid: %s", hostile_header);
    cr_expect_str_eq(e.lines[6], want);
    char dec[256];
    size_t n;
    cr_assert(pct_decode(hostile_header, dec, &n));
    cr_expect(n == sizeof hostile_clean - 1 && memcmp(dec, hostile_clean, n) == 0);
    enc_free(&e);
}

Test(ce_hostile, ingress_source_is_a_uri_segment)
{
    struct hk_webhook w = ingress_row();
    w.source = "a b/%\xc3\xa9";
    w.source_len = strlen(w.source);
    struct enc e;
    cr_assert_eq(encode(&w, &(struct hk_ce_opts){.scheme = "github"}, &e), 0);
    check_header_lines(&e);
    /* The URI-reference /hooks/a%20b%2F%25%C3%A9, then its '%'s encoded. */
    cr_expect_str_eq(e.lines[2], "ce-source: /hooks/a%2520b%252F%2525%25C3%25A9");
    enc_free(&e);
    cr_assert_eq(encode(&w, &(struct hk_ce_opts){.mode = HK_CE_STRUCTURED, .scheme = "github"}, &e), 0);
    json_error_t err;
    json_t *j = json_loadb(e.b.p, e.b.len, 0, &err);
    cr_assert(j, "%s", err.text);
    cr_expect_str_eq(json_string_value(json_object_get(j, "source")), "/hooks/a%20b%2F%25%C3%A9");
    json_decref(j);
    enc_free(&e);
}

Test(ce_hostile, structured_is_valid_json)
{
    struct hk_webhook w = envelope_row("x");
    w.source = hostile;
    w.source_len = sizeof hostile - 1;
    w.delivery_id = hostile;
    w.delivery_id_len = sizeof hostile - 1;
    struct hk_ce_opts o = {.mode = HK_CE_STRUCTURED, .id_prefix = "\"\\\n"};
    struct enc e;
    cr_assert_eq(encode(&w, &o, &e), 0);
    json_error_t err;
    json_t *j = json_loadb(e.b.p, e.b.len, JSON_REJECT_DUPLICATES, &err);
    cr_assert(j, "%s: %.*s", err.text, (int)e.b.len, e.b.p);
    cr_expect_str_eq(json_string_value(json_object_get(j, "subject")), hostile_clean);
    cr_expect_str_eq(json_string_value(json_object_get(j, "hookddeliveryid")), hostile_clean);
    cr_expect_str_eq(json_string_value(json_object_get(j, "id")), "\"\\" R "7");
    json_decref(j);
    enc_free(&e);
}

/* Random bytes in every attribute a row supplies: every header line stays
 * one printable line, every structured body parses. */
Test(ce_hostile, random_attributes)
{
    char src[40], ev[40], did[40], pre[12];
    for (int round = 0; round < 3000; round++) {
        size_t ns = rnd64() % sizeof src, ne = rnd64() % sizeof ev, nd = rnd64() % sizeof did;
        for (size_t i = 0; i < sizeof src; i++) {
            /* Mostly bytes near the trouble: controls, quote, '%', high bytes. */
            uint64_t r = rnd64();
            src[i] = (char)(r & 0xff);
            ev[i] = (char)(r >> 8 & 0xff);
            did[i] = (char)(r >> 16 & 0xff);
        }
        size_t np = rnd64() % (sizeof pre - 1);
        for (size_t i = 0; i < np; i++)
            pre[i] = (char)(rnd64() % 255 + 1);
        pre[np] = '\0';
        struct hk_webhook w = round % 2 ? ingress_row() : envelope_row("{}");
        w.source = src;
        w.source_len = ns;
        w.event_type = ev;
        w.event_type_len = ne;
        w.delivery_id = did;
        w.delivery_id_len = nd;
        struct hk_ce_opts o = {.mode = HK_CE_BINARY, .scheme = round % 3 ? "gitlab" : NULL, .id_prefix = pre};
        char tpl[sizeof src + 1];
        memcpy(tpl, src, ns);
        tpl[ns] = '\0';
        if (round % 5 == 0)
            o.type_template = tpl;
        struct enc e;
        cr_assert_eq(encode(&w, &o, &e), 0);
        check_header_lines(&e);
        enc_free(&e);
        o.mode = HK_CE_STRUCTURED;
        cr_assert_eq(encode(&w, &o, &e), 0);
        json_error_t err;
        json_t *j = json_loadb(e.b.p, e.b.len, JSON_REJECT_DUPLICATES, &err);
        cr_assert(j, "round %d: %s", round, err.text);
        json_decref(j);
        enc_free(&e);
    }
}

/* ---- structured mode --------------------------------------------------------- */

static json_t *structured(const struct hk_webhook *w, const struct hk_ce_opts *o, struct enc *e)
{
    cr_assert_eq(encode(w, o, e), 0);
    cr_assert_eq(e->n, 1);
    cr_expect_str_eq(e->lines[0], "Content-Type: application/cloudevents+json; charset=utf-8");
    json_error_t err;
    json_t *j = json_loadb(e->b.p, e->b.len, JSON_REJECT_DUPLICATES, &err);
    cr_assert(j, "%s: %.*s", err.text, (int)e->b.len, e->b.p);
    return j;
}

static const char *jstr(json_t *j, const char *k)
{
    return json_string_value(json_object_get(j, k));
}

Test(ce_structured, ingress_json_embedded_as_is)
{
    static const char body[] = "{ \"a\" : [1, 2.50e3, \"\\u00e9\"],\n \"b\":{} }";
    struct hk_webhook w = ingress_row();
    w.body = (const uint8_t *)body;
    w.body_len = sizeof body - 1;
    w.content_type = "application/vnd.github+json; charset=utf-8";
    w.content_type_len = strlen(w.content_type);
    struct enc e;
    json_t *j = structured(&w, &(struct hk_ce_opts){.mode = HK_CE_STRUCTURED, .scheme = "github", .id_prefix = "x-"},
                           &e);
    cr_expect_eq(json_object_size(j), 9);
    cr_expect_str_eq(jstr(j, "specversion"), "1.0");
    cr_expect_str_eq(jstr(j, "id"), "x-42");
    cr_expect_str_eq(jstr(j, "source"), "/hooks/gh");
    cr_expect_str_eq(jstr(j, "type"), "com.github.pull_request");
    cr_expect_str_eq(jstr(j, "time"), RECEIVED_ISO);
    cr_expect_str_eq(jstr(j, "subject"), "gh");
    cr_expect_str_eq(jstr(j, "hookddeliveryid"), "72d3162e-cc78-11e3-81ab-4c9367dc0958");
    cr_expect_str_eq(jstr(j, "datacontenttype"), "application/vnd.github+json; charset=utf-8");
    json_t *want = json_loads(body, 0, NULL);
    cr_expect(json_equal(json_object_get(j, "data"), want));
    cr_expect_null(json_object_get(j, "data_base64"));
    /* Not re-serialized: the body's own bytes, whitespace and all. */
    cr_expect(memmem(e.b.p, e.b.len, body, sizeof body - 1) != NULL);
    json_decref(want);
    json_decref(j);
    enc_free(&e);
}

static void expect_base64(json_t *j, const void *p, size_t n)
{
    const char *b64 = jstr(j, "data_base64");
    cr_assert(b64);
    cr_expect_null(json_object_get(j, "data"));
    uint8_t out[512];
    long got = hk_base64_decode(b64, strlen(b64), out, sizeof out);
    cr_assert_eq(got, (long)n);
    cr_expect(n == 0 || memcmp(out, p, n) == 0);
}

Test(ce_structured, ingress_binary_as_base64)
{
    uint8_t raw[256];
    for (int i = 0; i < 256; i++)
        raw[i] = (uint8_t)i;
    struct hk_webhook w = ingress_row();
    w.body = raw;
    w.body_len = sizeof raw;
    w.content_type = "application/octet-stream";
    w.content_type_len = 24;
    struct enc e;
    json_t *j = structured(&w, &(struct hk_ce_opts){.mode = HK_CE_STRUCTURED, .scheme = "github"}, &e);
    cr_expect_str_eq(jstr(j, "datacontenttype"), "application/octet-stream");
    expect_base64(j, raw, sizeof raw);
    json_decref(j);
    enc_free(&e);
}

Test(ce_structured, json_type_but_not_json_body_or_json_body_but_other_type)
{
    static const char bad[] = "{\"a\":1,}";
    struct hk_webhook w = ingress_row();
    w.body = (const uint8_t *)bad;
    w.body_len = sizeof bad - 1;
    struct enc e;
    json_t *j = structured(&w, &(struct hk_ce_opts){.mode = HK_CE_STRUCTURED}, &e);
    cr_expect_str_eq(jstr(j, "datacontenttype"), "application/json");
    expect_base64(j, bad, sizeof bad - 1);
    json_decref(j);
    enc_free(&e);

    /* JSON bytes declared as text stay text: data would claim otherwise. */
    static const char good[] = "{\"a\":1}";
    w.body = (const uint8_t *)good;
    w.body_len = sizeof good - 1;
    w.content_type = "text/plain";
    w.content_type_len = 10;
    j = structured(&w, &(struct hk_ce_opts){.mode = HK_CE_STRUCTURED}, &e);
    expect_base64(j, good, sizeof good - 1);
    json_decref(j);
    enc_free(&e);

    /* No content type at all: no datacontenttype, data as bytes. */
    w.content_type = NULL;
    w.content_type_len = 0;
    j = structured(&w, &(struct hk_ce_opts){.mode = HK_CE_STRUCTURED}, &e);
    cr_expect_null(json_object_get(j, "datacontenttype"));
    expect_base64(j, good, sizeof good - 1);
    json_decref(j);
    enc_free(&e);
}

Test(ce_structured, envelopes)
{
    struct enc e;
    struct hk_webhook w = envelope_row("[1,{\"k\":\"v\"}]");
    json_t *j = structured(&w, &(struct hk_ce_opts){.mode = HK_CE_STRUCTURED}, &e);
    cr_expect_eq(json_object_size(j), 8);
    cr_expect_str_eq(jstr(j, "source"), "/api/webhooks");
    cr_expect_str_eq(jstr(j, "type"), "dev.hookd.webhook.invoice.paid");
    cr_expect_str_eq(jstr(j, "subject"), "billing");
    cr_expect_str_eq(jstr(j, "datacontenttype"), "application/json");
    cr_expect_null(json_object_get(j, "hookddeliveryid"));
    json_t *want = json_loads("[1,{\"k\":\"v\"}]", 0, NULL);
    cr_expect(json_equal(json_object_get(j, "data"), want));
    json_decref(want);
    json_decref(j);
    enc_free(&e);

    w = envelope_row("plain \xc3\xa9 text");
    j = structured(&w, &(struct hk_ce_opts){.mode = HK_CE_STRUCTURED}, &e);
    cr_expect_str_eq(jstr(j, "datacontenttype"), "text/plain; charset=utf-8");
    expect_base64(j, "plain \xc3\xa9 text", 13);
    json_decref(j);
    enc_free(&e);

    w = envelope_row("null");   /* the JSON text null is data; a NULL payload is none */
    j = structured(&w, &(struct hk_ce_opts){.mode = HK_CE_STRUCTURED}, &e);
    cr_expect(json_is_null(json_object_get(j, "data")));
    json_decref(j);
    enc_free(&e);

    w = envelope_row(NULL);
    j = structured(&w, &(struct hk_ce_opts){.mode = HK_CE_STRUCTURED}, &e);
    cr_expect_eq(json_object_size(j), 6);
    cr_expect_null(json_object_get(j, "data"));
    cr_expect_null(json_object_get(j, "data_base64"));
    cr_expect_null(json_object_get(j, "datacontenttype"));
    json_decref(j);
    enc_free(&e);

    w = envelope_row("");
    j = structured(&w, &(struct hk_ce_opts){.mode = HK_CE_STRUCTURED}, &e);
    cr_expect_null(json_object_get(j, "data"));
    cr_expect_null(json_object_get(j, "data_base64"));
    json_decref(j);
    enc_free(&e);
}

/* ---- ce-type ------------------------------------------------------------------- */

static const char *type_of(const struct hk_webhook *w, const char *scheme, const char *tpl)
{
    static char out[HK_CE_TYPE_MAX + 1];
    struct hk_ce_opts o = {.scheme = scheme, .type_template = tpl};
    size_t n = hk_ce_type(w, &o, out, sizeof out);
    cr_assert_eq(n, strlen(out));
    return out;
}

static struct hk_webhook typed(const char *source, const char *event, bool ingress)
{
    struct hk_webhook w = ingress ? ingress_row() : envelope_row(NULL);
    w.source = source;
    w.source_len = strlen(source);
    w.event_type = event;
    w.event_type_len = event ? strlen(event) : 0;
    w.headers = NULL;
    w.headers_len = 0;
    return w;
}

Test(ce_type, every_scheme_hookd_knows)
{
    static const struct {
        const char *scheme, *event, *want;
    } table[] = {
        {"github", "pull_request", "com.github.pull_request"},
        {"gitea", "push", "io.gitea.push"},
        {"gitlab", "Merge Request Hook", "com.gitlab.merge_request_hook"},
        {"stripe", "invoice.payment_succeeded", "com.stripe.invoice.payment_succeeded"},
        {"shopify", "orders/create", "com.shopify.orders.create"},
        {"slack", "app_mention", "com.slack.app_mention"},
        {"standard-webhooks", "user.created", "dev.hookd.standardwebhooks.user.created"},
        {"discord", "APPLICATION_AUTHORIZED", "com.discord.APPLICATION_AUTHORIZED"},
        {"twitch", "channel.follow", "tv.twitch.channel.follow"},
        {"zoom", "meeting.started", "us.zoom.meeting.started"},
        {"meta", "page", "com.meta.page"},
        {"twilio", "sms", "com.twilio.sms"},
        {"hmac", "build.done", "dev.hookd.src-1.build.done"},
        {"token", "deploy", "dev.hookd.src-1.deploy"},
        {"none", "ping", "dev.hookd.src-1.ping"},
    };
    /* The table above names every scheme of ingress/sources.h: a new one
     * fails here until its ce-type is decided. */
    for (int s = 0; s < HK_SCHEME__COUNT; s++) {
        const char *name = hk_scheme_name((enum hk_scheme)s);
        size_t i = 0;
        while (i < sizeof table / sizeof table[0] && strcmp(table[i].scheme, name) != 0)
            i++;
        cr_assert_lt(i, sizeof table / sizeof table[0], "scheme %s has no expected ce-type", name);
        struct hk_webhook w = typed("src-1", table[i].event, true);
        cr_expect_str_eq(type_of(&w, name, NULL), table[i].want, "scheme %s", name);
    }
}

Test(ce_type, gitea_family_by_kept_headers)
{
    struct hk_webhook w = typed("forge", "push", true);
    static const struct {
        const char *headers, *want;
    } cases[] = {
        {"{\"x-gitea-event\":\"push\",\"x-gogs-event\":\"push\"}", "io.gitea.push"},
        {"{\"x-forgejo-event\": \"push\", \"x-gitea-event\": \"push\", \"x-gogs-event\": \"push\"}",
         "org.forgejo.push"},
        {"{\"x-gogs-event\":\"push\"}", "io.gogs.push"},
        {"{}", "io.gitea.push"},
        /* A value that mentions a header is not the header. */
        {"{\"user-agent\":\"\\\"x-forgejo-event\\\":\",\"x-gogs-event\":\"push\"}", "io.gogs.push"},
        {"{\"user-agent\":\"x-forgejo-event\"}", "io.gitea.push"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        w.headers = cases[i].headers;
        w.headers_len = strlen(cases[i].headers);
        cr_expect_str_eq(type_of(&w, "gitea", NULL), cases[i].want, "case %zu", i);
    }
    w.headers = NULL;
    w.headers_len = 0;
    cr_expect_str_eq(type_of(&w, "gitea", NULL), "io.gitea.push");
    cr_expect_str_eq(type_of(&w, "forgejo", NULL), "org.forgejo.push");
    cr_expect_str_eq(type_of(&w, "gogs", NULL), "io.gogs.push");
}

Test(ce_type, envelopes_unknown_schemes_and_empty_events)
{
    struct hk_webhook w = typed("billing", "invoice.paid", false);
    cr_expect_str_eq(type_of(&w, NULL, NULL), "dev.hookd.webhook.invoice.paid");
    cr_expect_str_eq(type_of(&w, "github", NULL), "dev.hookd.webhook.invoice.paid");
    w = typed("billing", NULL, false);
    cr_expect_str_eq(type_of(&w, NULL, NULL), "dev.hookd.webhook.unknown");
    w = typed("gh", "", true);
    cr_expect_str_eq(type_of(&w, "github", NULL), "com.github.unknown");
    w = typed("gh", NULL, true);
    cr_expect_str_eq(type_of(&w, NULL, NULL), "dev.hookd.gh.unknown");
    cr_expect_str_eq(type_of(&w, "no-such-scheme", NULL), "dev.hookd.gh.unknown");
    cr_expect_str_eq(type_of(&w, "GitHub", NULL), "dev.hookd.gh.unknown");
}

Test(ce_type, templates)
{
    struct hk_webhook w = typed("shop", "orders/create", true);
    cr_expect_str_eq(type_of(&w, "shopify", "com.example.{source}.{event}"), "com.example.shop.orders_create");
    cr_expect_str_eq(type_of(&w, "shopify", "{event}{event}"), "orders_createorders_create");
    cr_expect_str_eq(type_of(&w, NULL, "fixed.type"), "fixed.type");
    cr_expect_str_eq(type_of(&w, NULL, "{foo} {event"), "_foo___event");
    cr_expect_str_eq(type_of(&w, NULL, "caf\xc3\xa9.\xf0\x9f\x98\x80.{source}"), "caf_._.shop");
    cr_expect_str_eq(type_of(&w, NULL, ""), "");
    w = typed("shop", NULL, true);
    cr_expect_str_eq(type_of(&w, NULL, "x.{event}"), "x.unknown");
    w = typed("b i\"l", "a\r\nb", false);
    cr_expect_str_eq(type_of(&w, NULL, "{source}/{event}"), "b_i_l_a__b");
}

Test(ce_type, characters_and_length)
{
    struct hk_webhook w = typed("gl", "Push Hook \xc3\xa9\xe2\x82\xac\xff\xf0\x9f", true);
    /* é and € are one "_" each; 0xff and the truncated F0 9F one per byte. */
    cr_expect_str_eq(type_of(&w, "gitlab", NULL), "com.gitlab.push_hook______");
    char ev[600];
    memset(ev, 'e', sizeof ev);
    w.event_type = ev;
    w.event_type_len = sizeof ev;
    const char *t = type_of(&w, "github", NULL);
    cr_expect_eq(strlen(t), HK_CE_TYPE_MAX);
    cr_expect(strncmp(t, "com.github.eee", 14) == 0);
    char small[8];
    cr_expect_eq(hk_ce_type(&w, &(struct hk_ce_opts){.scheme = "github"}, small, sizeof small), 7);
    cr_expect_str_eq(small, "com.git");
    cr_expect_eq(hk_ce_type(&w, NULL, small, 0), 0);
    /* Templates are cut the same way. */
    struct hk_ce_opts o = {.type_template = "{event}{event}{event}"};
    char out[HK_CE_TYPE_MAX + 10];
    cr_expect_eq(hk_ce_type(&w, &o, out, sizeof out), HK_CE_TYPE_MAX);
}

/* ---- the JSON validator ------------------------------------------------------- */

Test(ce_json, grammar)
{
    static const struct {
        const char *s;
        bool ok;
    } cases[] = {
        {"0", true}, {"-0", true}, {"1e5", true}, {"1E+5", true}, {"1.0e-5", true}, {"-12.5", true},
        {"123456789012345678901234567890", true}, {"1e400", true}, {"\"\"", true}, {"\"\\u00e9\\n\\/\"", true},
        {"\"\\ud83d\\ude00\"", true}, {"[]", true}, {"{}", true}, {" [ 1 , [ ] , { } ] ", true},
        {"{\"a\":{\"b\":[true,false,null]}}", true}, {"\"caf\xc3\xa9\"", true}, {"\t\r\n1\t\r\n", true},
        {"", false}, {" ", false}, {"01", false}, {"-", false}, {"1.", false}, {".5", false}, {"1e", false},
        {"+1", false}, {"0x10", false}, {"NaN", false}, {"Infinity", false}, {"tru", false}, {"nulll", false},
        {"[1,]", false}, {"[,1]", false}, {"{\"a\":1,}", false}, {"{,}", false}, {"{\"a\"}", false},
        {"{\"a\" 1}", false}, {"{1:2}", false}, {"[1 2]", false}, {"[", false}, {"]", false}, {"[}", false},
        {"{]", false}, {"1 2", false}, {"\"abc", false}, {"\"a\nb\"", false}, {"\"\\x\"", false},
        {"\"\\u12\"", false}, {"\"\\ud800\"", false}, {"\"\\udc00\"", false}, {"\"\\ud800\\u0041\"", false},
        {"\"\xff\"", false}, {"\"\xc0\xaf\"", false}, {"\"\xed\xa0\x80\"", false}, {"\xef\xbb\xbf{}", false},
        {"{}x", false}, {"[1]]", false}, {"'a'", false},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
        cr_expect_eq(hk_ce_is_json(cases[i].s, strlen(cases[i].s)), cases[i].ok, "case %zu: %s", i, cases[i].s);
    cr_expect(hk_ce_is_json("\"a\0b\"", 5) == false);
    cr_expect(hk_ce_is_json("\"\\u0000\"", 8));
    cr_expect_not(hk_ce_is_json(NULL, 0));
}

Test(ce_json, nesting_bound)
{
    size_t n = 4097;
    char *s = malloc(2 * n);
    memset(s, '[', n);
    memset(s + n, ']', n);
    cr_expect_not(hk_ce_is_json(s, 2 * n));
    cr_expect(hk_ce_is_json(s + 1, 2 * n - 2));   /* 4096 deep */
    s[n - 1] = '{';                                  /* mismatched closer at the deepest level */
    cr_expect_not(hk_ce_is_json(s + 1, 2 * n - 2));
    free(s);
    /* Objects and arrays interleaved, each closed by its own kind. */
    struct hk_buf b = HK_BUF_INIT;
    for (int i = 0; i < 3000; i++)
        hk_buf_puts(&b, i % 2 ? "[" : "{\"k\":");
    hk_buf_puts(&b, "1");
    for (int i = 2999; i >= 0; i--)
        hk_buf_puts(&b, i % 2 ? "]" : "}");
    cr_expect(hk_ce_is_json(b.p, b.len));
    hk_buf_free(&b);
}

/* Against jansson on mutations of valid documents: wherever jansson
 * accepts (it refuses \u0000, huge numbers and deep nesting, which are
 * JSON), so does the scan; wherever the scan accepts, the text is JSON to
 * jansson too, numbers and NULs aside. */
Test(ce_json, agrees_with_jansson)
{
    static const char *const seeds[] = {
        "{\"a\":[1,2,{\"b\":null}],\"c\":\"d\\n\\u00e9\"}",
        "[true,false,null,-1.5e3,\"x\"]",
        "{\"emoji\":\"\\ud83d\\ude00\",\"s\":\"caf\xc3\xa9\"}",
        "  {\"nested\": {\"deeper\": [[], {}, [0]]}}  ",
    };
    static const char alphabet[] = "{}[],:\"\\ 0123-.eEtrufalsn\x01\xc3\xa9\xff";
    char buf[128];
    int agree = 0;
    for (int round = 0; round < 20000; round++) {
        const char *seed = seeds[rnd64() % 4];
        size_t n = strlen(seed);
        memcpy(buf, seed, n);
        int muts = 1 + (int)(rnd64() % 3);
        for (int m = 0; m < muts && n > 0; m++) {
            size_t at = rnd64() % n;
            char c = alphabet[rnd64() % (sizeof alphabet - 1)];
            switch (rnd64() % 3) {
            case 0:
                buf[at] = c;
                break;
            case 1:
                memmove(buf + at, buf + at + 1, n - at - 1);
                n--;
                break;
            default:
                if (n + 1 < sizeof buf) {
                    memmove(buf + at + 1, buf + at, n - at);
                    buf[at] = c;
                    n++;
                }
            }
        }
        json_error_t err;
        json_t *j = json_loadb(buf, n, JSON_DECODE_ANY, &err);
        bool mine = hk_ce_is_json(buf, n);
        if (j)
            cr_assert(mine, "jansson accepts, the scan refuses: %.*s", (int)n, buf);
        else if (mine)
            cr_assert(strstr(err.text, "overflow") || strstr(err.text, "too big") || strstr(err.text, "\\u0000") ||
                          strstr(err.text, "NUL"),
                      "the scan accepts what jansson refuses (%s): %.*s", err.text, (int)n, buf);
        agree += (j != NULL) == mine;
        json_decref(j);
    }
    cr_expect_gt(agree, 19000);
}

/* ---- retry: verdicts ----------------------------------------------------------- */

static const struct hk_retry_policy policy = {
    .max_attempts = 12, .max_age_ms = 86400000, .base_ms = 1000, .max_ms = 300000, .retry_4xx = false};

static enum hk_retry_verdict decide(const struct hk_retry_policy *p, uint32_t attempts, uint64_t age, int status,
                                    int64_t ra, uint64_t rnd, uint64_t *delay)
{
    *delay = 12345;   /* overwritten on every path */
    return hk_retry_decide(p, attempts, age, status, ra, rnd, delay);
}

Test(retry, status_matrix)
{
    static const struct {
        int status;
        enum hk_retry_verdict plain, with_4xx;
    } m[] = {
        {200, HK_RETRY_DELIVERED, HK_RETRY_DELIVERED}, {201, HK_RETRY_DELIVERED, HK_RETRY_DELIVERED},
        {202, HK_RETRY_DELIVERED, HK_RETRY_DELIVERED}, {204, HK_RETRY_DELIVERED, HK_RETRY_DELIVERED},
        {299, HK_RETRY_DELIVERED, HK_RETRY_DELIVERED}, {301, HK_RETRY_FAIL, HK_RETRY_AGAIN},
        {302, HK_RETRY_FAIL, HK_RETRY_AGAIN},          {307, HK_RETRY_FAIL, HK_RETRY_AGAIN},
        {308, HK_RETRY_FAIL, HK_RETRY_AGAIN},          {400, HK_RETRY_FAIL, HK_RETRY_AGAIN},
        {401, HK_RETRY_FAIL, HK_RETRY_AGAIN},          {403, HK_RETRY_FAIL, HK_RETRY_AGAIN},
        {404, HK_RETRY_FAIL, HK_RETRY_AGAIN},          {408, HK_RETRY_AGAIN, HK_RETRY_AGAIN},
        {409, HK_RETRY_AGAIN, HK_RETRY_AGAIN},         {410, HK_RETRY_FAIL, HK_RETRY_AGAIN},
        {413, HK_RETRY_FAIL, HK_RETRY_AGAIN},          {422, HK_RETRY_FAIL, HK_RETRY_AGAIN},
        {429, HK_RETRY_AGAIN, HK_RETRY_AGAIN},         {499, HK_RETRY_FAIL, HK_RETRY_AGAIN},
        {500, HK_RETRY_AGAIN, HK_RETRY_AGAIN},         {502, HK_RETRY_AGAIN, HK_RETRY_AGAIN},
        {503, HK_RETRY_AGAIN, HK_RETRY_AGAIN},         {504, HK_RETRY_AGAIN, HK_RETRY_AGAIN},
        {599, HK_RETRY_AGAIN, HK_RETRY_AGAIN},         {0, HK_RETRY_AGAIN, HK_RETRY_AGAIN},
        {100, HK_RETRY_AGAIN, HK_RETRY_AGAIN},         {600, HK_RETRY_AGAIN, HK_RETRY_AGAIN},
        {-1, HK_RETRY_AGAIN, HK_RETRY_AGAIN},
    };
    struct hk_retry_policy p4 = policy;
    p4.retry_4xx = true;
    for (size_t i = 0; i < sizeof m / sizeof m[0]; i++) {
        uint64_t d;
        cr_expect_eq(decide(&policy, 1, 0, m[i].status, -1, UINT64_MAX, &d), m[i].plain, "status %d", m[i].status);
        cr_expect_eq(d, m[i].plain == HK_RETRY_AGAIN ? 1000 : 0, "status %d delay %" PRIu64, m[i].status, d);
        cr_expect_eq(decide(&p4, 1, 0, m[i].status, -1, UINT64_MAX, &d), m[i].with_4xx, "status %d (retry 4xx)",
                     m[i].status);
    }
}

Test(retry, retry_after_wins_on_429_and_503_only)
{
    uint64_t d;
    cr_expect_eq(decide(&policy, 1, 0, 503, 7000, 0, &d), HK_RETRY_AGAIN);
    cr_expect_eq(d, 7000);
    cr_expect_eq(decide(&policy, 9, 0, 429, 0, UINT64_MAX, &d), HK_RETRY_AGAIN);
    cr_expect_eq(d, 0);
    /* Longer than the backoff cap is still believed, up to an hour. */
    cr_expect_eq(decide(&policy, 1, 0, 429, 1800000, 0, &d), HK_RETRY_AGAIN);
    cr_expect_eq(d, 1800000);
    cr_expect_eq(decide(&policy, 1, 0, 503, INT64_MAX, 0, &d), HK_RETRY_AGAIN);
    cr_expect_eq(d, HK_RETRY_AFTER_MAX_MS);
    /* 429 without one: the backoff. Other statuses ignore it. */
    cr_expect_eq(decide(&policy, 3, 0, 429, -1, UINT64_MAX, &d), HK_RETRY_AGAIN);
    cr_expect_eq(d, 4000);
    cr_expect_eq(decide(&policy, 3, 0, 500, 7000, UINT64_MAX, &d), HK_RETRY_AGAIN);
    cr_expect_eq(d, 4000);
    cr_expect_eq(decide(&policy, 3, 0, 0, 7000, 0, &d), HK_RETRY_AGAIN);
    cr_expect_eq(d, 0);
    /* A Retry-After never turns a refusal into a retry. */
    cr_expect_eq(decide(&policy, 1, 0, 400, 1000, 0, &d), HK_RETRY_FAIL);
    /* ... and a Retry-After past the age limit dead-letters. */
    cr_expect_eq(decide(&policy, 1, 86400000 - 3600000, 503, 3600000, 0, &d), HK_RETRY_FAIL);
    cr_expect_eq(decide(&policy, 1, 86400000 - 3600001, 503, 3600000, 0, &d), HK_RETRY_AGAIN);
}

Test(retry, exhaustion)
{
    uint64_t d;
    cr_expect_eq(decide(&policy, 11, 0, 503, -1, 0, &d), HK_RETRY_AGAIN);
    cr_expect_eq(decide(&policy, 12, 0, 503, -1, 0, &d), HK_RETRY_FAIL);
    cr_expect_eq(d, 0);
    cr_expect_eq(decide(&policy, 13, 0, 0, -1, 0, &d), HK_RETRY_FAIL);
    cr_expect_eq(decide(&policy, 12, 0, 200, -1, 0, &d), HK_RETRY_DELIVERED);   /* a late success counts */
    /* Age: age + delay >= max_age fails. rnd 0 gives delay 0. */
    cr_expect_eq(decide(&policy, 1, 86399999, 500, -1, 0, &d), HK_RETRY_AGAIN);
    cr_expect_eq(d, 0);
    cr_expect_eq(decide(&policy, 1, 86400000, 500, -1, 0, &d), HK_RETRY_FAIL);
    cr_expect_eq(decide(&policy, 1, 86399000, 500, -1, UINT64_MAX, &d), HK_RETRY_FAIL);   /* + 1000 */
    cr_expect_eq(decide(&policy, 1, 86398999, 500, -1, UINT64_MAX, &d), HK_RETRY_AGAIN);
    cr_expect_eq(d, 1000);
    cr_expect_eq(decide(&policy, 1, UINT64_MAX, 500, -1, 0, &d), HK_RETRY_FAIL);
    /* 0: no limit. */
    struct hk_retry_policy open = policy;
    open.max_attempts = 0;
    open.max_age_ms = 0;
    cr_expect_eq(decide(&open, UINT32_MAX, UINT64_MAX, 500, -1, UINT64_MAX, &d), HK_RETRY_AGAIN);
    cr_expect_eq(d, 300000);
}

Test(retry, backoff_bounds_and_monotone_cap)
{
    struct hk_retry_policy p = policy;
    p.max_attempts = 0;
    p.max_age_ms = 0;
    uint64_t prev = 0;
    for (uint32_t a = 0; a < 200; a++) {
        uint64_t cap = hk_retry_backoff_cap(&p, a);
        cr_expect_geq(cap, prev, "attempt %u", a);
        cr_expect_leq(cap, p.max_ms);
        if (a >= 1 && a <= 9)
            cr_expect_eq(cap, 1000u << (a - 1), "attempt %u", a);
        if (a >= 10)
            cr_expect_eq(cap, p.max_ms);
        prev = cap;
        uint64_t d;
        cr_expect_eq(decide(&p, a, 0, 500, -1, UINT64_MAX, &d), HK_RETRY_AGAIN);
        cr_expect_eq(d, cap);
        cr_expect_eq(decide(&p, a, 0, 500, -1, 0, &d), HK_RETRY_AGAIN);
        cr_expect_eq(d, 0);
        for (int k = 0; k < 50; k++) {
            cr_expect_eq(decide(&p, a, 0, 500, -1, rnd64(), &d), HK_RETRY_AGAIN);
            cr_expect_leq(d, cap);
        }
    }
    cr_expect_eq(hk_retry_backoff_cap(&p, 0), 1000);
    cr_expect_eq(hk_retry_backoff_cap(&p, UINT32_MAX), p.max_ms);
}

Test(retry, jitter_is_spread)
{
    /* Full jitter: uniform over [0, cap]; ten buckets each get their share. */
    struct hk_retry_policy p = policy;
    unsigned buckets[10] = {0};
    for (int i = 0; i < 100000; i++) {
        uint64_t d;
        decide(&p, 4, 0, 503, -1, rnd64(), &d);
        cr_assert_leq(d, 8000);
        buckets[d * 10 / 8001]++;
    }
    for (int i = 0; i < 10; i++)
        cr_expect(buckets[i] > 9000 && buckets[i] < 11000, "bucket %d: %u", i, buckets[i]);
}

Test(retry, huge_values_do_not_overflow)
{
    struct hk_retry_policy p = {.max_attempts = 0, .max_age_ms = 0, .base_ms = UINT64_MAX, .max_ms = UINT64_MAX};
    cr_expect_eq(hk_retry_backoff_cap(&p, 1), UINT64_MAX);
    cr_expect_eq(hk_retry_backoff_cap(&p, 64), UINT64_MAX);
    p.base_ms = UINT64_C(1) << 62;
    cr_expect_eq(hk_retry_backoff_cap(&p, 2), UINT64_C(1) << 63);
    cr_expect_eq(hk_retry_backoff_cap(&p, 3), UINT64_MAX);
    p.base_ms = 1;
    cr_expect_eq(hk_retry_backoff_cap(&p, 64), UINT64_C(1) << 63);
    cr_expect_eq(hk_retry_backoff_cap(&p, 65), UINT64_MAX);
    uint64_t d;
    cr_expect_eq(decide(&p, UINT32_MAX, 0, 500, -1, UINT64_MAX, &d), HK_RETRY_AGAIN);
    cr_expect_eq(d, UINT64_MAX);
    p.max_age_ms = UINT64_MAX;
    cr_expect_eq(decide(&p, UINT32_MAX, 1, 500, -1, UINT64_MAX, &d), HK_RETRY_FAIL);
    /* base above max: max. */
    struct hk_retry_policy q = {.base_ms = 5000, .max_ms = 2000};
    cr_expect_eq(hk_retry_backoff_cap(&q, 1), 2000);
}

/* ---- retry: Retry-After ------------------------------------------------------- */

static int64_t ra(const char *s, int64_t now)
{
    return hk_retry_after_ms(s, strlen(s), now);
}

Test(retry_after, delta_seconds)
{
    cr_expect_eq(ra("120", 0), 120000);
    cr_expect_eq(ra("0", 0), 0);
    cr_expect_eq(ra(" \t5 ", 0), 5000);
    cr_expect_eq(ra("007", 0), 7000);
    cr_expect_eq(ra("9223372036854775", 0), INT64_C(9223372036854775000));
    cr_expect_eq(ra("9223372036854776", 0), INT64_MAX);
    cr_expect_eq(ra("99999999999999999999999999999999", 0), INT64_MAX);
    static const char *const bad[] = {"", "  ", "-5", "+5", "1.5", "5s", "1 2", "abc", "0x10", "1e3", "\xff"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
        cr_expect_eq(ra(bad[i], 0), -1, "%s", bad[i]);
    cr_expect_eq(hk_retry_after_ms(NULL, 0, 0), -1);
    cr_expect_eq(hk_retry_after_ms("12", 1, 0), 1000);   /* n bytes, not up to a NUL */
}

Test(retry_after, the_three_date_forms)
{
    const int64_t at = 784111777;   /* 1994-11-06T08:49:37Z, RFC 9110's example */
    cr_expect_eq(ra("Sun, 06 Nov 1994 08:49:37 GMT", at - 10), 10000);
    cr_expect_eq(ra("Sunday, 06-Nov-94 08:49:37 GMT", at - 10), 10000);
    cr_expect_eq(ra("Sun Nov  6 08:49:37 1994", at - 10), 10000);
    cr_expect_eq(ra("Sun Nov 16 08:49:37 1994", at), 10 * 86400 * 1000);
    /* Past or now: retry now. */
    cr_expect_eq(ra("Sun, 06 Nov 1994 08:49:37 GMT", at), 0);
    cr_expect_eq(ra("Sun, 06 Nov 1994 08:49:37 GMT", at + 3600), 0);
    cr_expect_eq(ra("Thu, 01 Jan 1970 00:00:00 GMT", 0), 0);
    /* Leap day and far future. */
    cr_expect_eq(ra("Thu, 29 Feb 2024 00:00:01 GMT", 1709164800), 1000);
    cr_expect_eq(ra("Fri, 31 Dec 9999 23:59:59 GMT", 0), INT64_C(253402300799) * 1000);
    /* The day name is read, not checked against the date (senders get it wrong). */
    cr_expect_eq(ra("Mon, 06 Nov 1994 08:49:37 GMT", at - 1), 1000);
}

Test(retry_after, rfc850_two_digit_years)
{
    const int64_t now_2026 = 1767225600;   /* 2026-01-01T00:00:00Z */
    /* Up to 50 years ahead is this century; more is the last one. */
    cr_expect_eq(ra("Friday, 01-Jan-27 00:00:00 GMT", now_2026), INT64_C(31536000) * 1000);
    cr_expect_eq(ra("Thursday, 01-Jan-26 00:00:10 GMT", now_2026), 10000);
    cr_expect_gt(ra("Saturday, 01-Jan-76 00:00:00 GMT", now_2026), INT64_C(49) * 365 * 86400 * 1000);
    cr_expect_eq(ra("Saturday, 01-Jan-77 00:00:00 GMT", now_2026), 0);   /* 1977: past */
    cr_expect_eq(ra("Sunday, 06-Nov-94 08:49:37 GMT", now_2026), 0);
}

Test(retry_after, garbage_dates)
{
    static const char *const bad[] = {
        "Sun, 06 Nov 1994 08:49:37",         "Sun, 06 Nov 1994 08:49:37 UTC",    "Sun, 6 Nov 1994 08:49:37 GMT",
        "Sun, 06 nov 1994 08:49:37 GMT",     "sun, 06 Nov 1994 08:49:37 GMT",    "Sun, 06 Nov 94 08:49:37 GMT",
        "Sun, 31 Nov 1994 08:49:37 GMT",     "Sun, 00 Nov 1994 08:49:37 GMT",    "Sun, 29 Feb 1900 00:00:00 GMT",
        "Sun, 06 Nov 1994 24:00:00 GMT",     "Sun, 06 Nov 1994 08:60:00 GMT",    "Sun, 06 Nov 1994 08:49:61 GMT",
        "Sun, 06 Nov 1994 08:49:37 GMTx",    "Sun, 06 Nov 1994 8:49:37 GMT",     "Sun,  06 Nov 1994 08:49:37 GMT",
        "Sunday, 06-Nov-1994 08:49:37 GMT",  "Sun, 06-Nov-94 08:49:37 GMT",      "Sunday, 06 Nov 94 08:49:37 GMT",
        "Sun Nov 6 08:49:37 1994",           "Sun Nov  6 08:49:37 94",           "Sun Nov  6 08:49:37 1994 GMT",
        "Xyz, 06 Nov 1994 08:49:37 GMT",     "Sun, 06 Xyz 1994 08:49:37 GMT",    "Sun",
        "Sun, 06 Nov 1994 08:49:37 GMT\r\n", "Sun, 06 Nov 1994 08:49:37 \0GMT",  "2025-12-01T18:03:01Z",
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
        cr_expect_eq(ra(bad[i], 0), -1, "%s", bad[i]);
    /* Leap second: read as the next second. */
    cr_expect_eq(ra("Sat, 31 Dec 2016 23:59:60 GMT", 1483228800 - 1), 1000);
}

/* Every date strftime writes in the three forms reads back as timegm's. */
Test(retry_after, against_strftime)
{
    static const char *const forms[] = {"%a, %d %b %Y %H:%M:%S GMT", "%A, %d-%b-%y %H:%M:%S GMT",
                                        "%a %b %e %H:%M:%S %Y"};
    const int64_t now = 1767225600;   /* 2026: two-digit years read 1977..2076 */
    for (int i = 0; i < 3000; i++) {
        int64_t t = (int64_t)(rnd64() % (UINT64_C(3) * 1000000000)) + 1;   /* 1970..2065 */
        time_t tt = (time_t)t;
        struct tm tm;
        gmtime_r(&tt, &tm);
        for (int f = 0; f < 3; f++) {
            if (f == 1 && (tm.tm_year + 1900 < 1977 || tm.tm_year + 1900 > 2076))
                continue;
            char s[64];
            size_t n = strftime(s, sizeof s, forms[f], &tm);
            cr_assert_gt(n, 0);
            int64_t got = hk_retry_after_ms(s, n, now);
            int64_t want = t > now ? (t - now) * 1000 : 0;
            cr_assert_eq(got, want, "%s: %" PRId64 " want %" PRId64, s, got, want);
            /* And relative to a moment before the date. */
            cr_assert_eq(hk_retry_after_ms(s, n, t - 1), 1000, "%s", s);
        }
    }
}

/* ---- retry: texts --------------------------------------------------------------- */

Test(retry, reasons)
{
    char out[HK_RETRY_REASON_MAX];
    cr_expect_eq(hk_retry_reason(503, 0, NULL, out, sizeof out), 8);
    cr_expect_str_eq(out, "HTTP 503");
    hk_retry_reason(0, HK_ETIMEDOUT, NULL, out, sizeof out);
    cr_expect_str_eq(out, "timed out");
    hk_retry_reason(0, HK_EUNAVAIL, "connect: Connection refused", out, sizeof out);
    cr_expect_str_eq(out, "unreachable: connect: Connection refused");
    hk_retry_reason(0, 0, NULL, out, sizeof out);
    cr_expect_str_eq(out, "no answer");
    hk_retry_reason(0, HK_ESTORE, "", out, sizeof out);
    cr_expect_str_eq(out, "failed");
    hk_retry_reason(502, HK_EUNAVAIL, "bad\r\ngateway\xc3\xa9", out, sizeof out);
    cr_expect_str_eq(out, "HTTP 502: bad??gateway??");
    /* Cut to the buffer and to HK_RETRY_REASON_MAX. */
    char small[6];
    cr_expect_eq(hk_retry_reason(503, 0, "xyz", small, sizeof small), 5);
    cr_expect_str_eq(small, "HTTP ");
    char big[1024], longtext[900];
    memset(longtext, 'x', sizeof longtext - 1);
    longtext[sizeof longtext - 1] = '\0';
    cr_expect_eq(hk_retry_reason(0, HK_EUNAVAIL, longtext, big, sizeof big), HK_RETRY_REASON_MAX - 1);
    cr_expect_eq(hk_retry_reason(0, HK_EUNAVAIL, longtext, big, 0), 0);
    cr_expect_str_eq(hk_retry_verdict_name(HK_RETRY_DELIVERED), "delivered");
    cr_expect_str_eq(hk_retry_verdict_name(HK_RETRY_AGAIN), "retry");
    cr_expect_str_eq(hk_retry_verdict_name(HK_RETRY_FAIL), "failed");
}
