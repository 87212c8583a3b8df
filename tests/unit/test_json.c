/* SPDX-License-Identifier: MIT
 * Unit tests for json/webhook_json.c: decoding and validating create
 * requests (violations, syntax errors with positions) and the byte-exact
 * WebhookResponse encoding, with a round trip through jansson, for
 * envelope rows and ingress rows (their fields, and the body as the payload
 * when it is text). */
#include <criterion/criterion.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "json/webhook_json.h"

static struct hk_webhook_in in;

static void fini(void)
{
    hk_webhook_in_free(&in);
}

TestSuite(decode, .fini = fini);
TestSuite(encode);

#define DEC(lit) hk_webhook_decode((lit), sizeof(lit) - 1, &in)

/* `field`/`message` pairs, in order; ends at NULL. */
static void expect_violations(const char *const *want)
{
    int n = 0;
    while (want[2 * n] != NULL)
        n++;
    cr_assert_eq(in.nv, n, "want %d violations, got %d (first: %s / %s)", n, in.nv,
                 in.nv > 0 ? in.v[0].field : "-", in.nv > 0 ? in.v[0].message : "-");
    for (int i = 0; i < n; i++) {
        cr_assert_str_eq(in.v[i].field, want[2 * i], "violation %d", i);
        cr_assert_str_eq(in.v[i].message, want[2 * i + 1], "violation %d", i);
    }
}
#define EXPECT_V(...) expect_violations((const char *const[]){__VA_ARGS__, NULL})

static void expect_invalid_row_cleared(void)
{
    cr_assert_null(in.row.source);
    cr_assert_null(in.row.event_type);
    cr_assert_null(in.row.payload);
}

#define assert_span(p, n, lit)                                                     \
    cr_assert((p) != NULL && (n) == sizeof(lit) - 1 && memcmp((p), (lit), (n)) == 0, \
              "got %zu bytes \"%.*s\", want \"%s\"", (size_t)(n), (int)(n),        \
              (p) ? (p) : "", (lit))

/* ---- valid requests ---- */

Test(decode, minimal)
{
    cr_assert_eq(DEC("{\"source\":\"github\",\"eventType\":\"push\"}"), HK_DECODE_OK);
    cr_assert_eq(in.nv, 0);
    cr_assert_not_null(in.root);
    assert_span(in.row.source, in.row.source_len, "github");
    assert_span(in.row.event_type, in.row.event_type_len, "push");
    cr_assert_null(in.row.payload);
    cr_assert_eq(in.row.payload_len, 0);
}

Test(decode, with_payload)
{
    cr_assert_eq(DEC("{\"source\":\"stripe\",\"eventType\":\"charge.succeeded\","
                     "\"payload\":\"{\\\"amount\\\":100}\"}"),
                 HK_DECODE_OK);
    assert_span(in.row.source, in.row.source_len, "stripe");
    assert_span(in.row.event_type, in.row.event_type_len, "charge.succeeded");
    assert_span(in.row.payload, in.row.payload_len, "{\"amount\":100}");
}

Test(decode, empty_payload_is_a_string)
{
    cr_assert_eq(DEC("{\"source\":\"s\",\"eventType\":\"e\",\"payload\":\"\"}"), HK_DECODE_OK);
    cr_assert_not_null(in.row.payload);
    cr_assert_eq(in.row.payload_len, 0);
}

Test(decode, null_payload)
{
    cr_assert_eq(DEC("{\"source\":\"s\",\"eventType\":\"e\",\"payload\":null}"), HK_DECODE_OK);
    cr_assert_null(in.row.payload);
    cr_assert_eq(in.row.payload_len, 0);
}

Test(decode, absent_payload_whitespace_and_key_order)
{
    cr_assert_eq(DEC(" \r\n\t{ \"eventType\" : \"e\" ,\n \"source\" : \"s\" } \n"), HK_DECODE_OK);
    assert_span(in.row.source, in.row.source_len, "s");
    assert_span(in.row.event_type, in.row.event_type_len, "e");
    cr_assert_null(in.row.payload);
}

Test(decode, unknown_fields_ignored)
{
    cr_assert_eq(DEC("{\"id\":99999999999999999999999,\"source\":\"s\",\"extra\":{\"a\":[1,2.5,true,null]},"
                     "\"eventType\":\"e\",\"receivedAt\":\"2026-01-01T00:00:00Z\",\"processingMode\":7,"
                     "\"Source\":5,\"payload\":\"p\",\"big\":-123456789012345678901234567890}"),
                 HK_DECODE_OK);
    cr_assert_eq(in.nv, 0);
    assert_span(in.row.source, in.row.source_len, "s");
    assert_span(in.row.payload, in.row.payload_len, "p");
}

Test(decode, duplicate_keys_last_wins)
{
    cr_assert_eq(DEC("{\"source\":\"first\",\"eventType\":1,\"source\":\"second\",\"eventType\":\"e\"}"),
                 HK_DECODE_OK);
    assert_span(in.row.source, in.row.source_len, "second");
    assert_span(in.row.event_type, in.row.event_type_len, "e");
}

Test(decode, escapes_and_embedded_bytes)
{
    /* Strings may hold anything but U+0000; lengths come from jansson, not
     * strlen. */
    cr_assert_eq(DEC("{\"source\":\"a\\\"b\\\\c\\n\\u00e9\\ud83d\\ude00\",\"eventType\":\"\\u2028x\","
                     "\"payload\":\"caf\xc3\xa9\"}"),
                 HK_DECODE_OK);
    assert_span(in.row.source, in.row.source_len, "a\"b\\c\n\xc3\xa9\xf0\x9f\x98\x80");
    assert_span(in.row.event_type, in.row.event_type_len, "\xe2\x80\xa8x");
    assert_span(in.row.payload, in.row.payload_len, "caf\xc3\xa9");
}

/* ---- violations ---- */

Test(decode, source_missing)
{
    cr_assert_eq(DEC("{\"eventType\":\"e\"}"), HK_DECODE_INVALID);
    EXPECT_V("source", "must not be blank");
    expect_invalid_row_cleared();
}

Test(decode, source_null)
{
    cr_assert_eq(DEC("{\"source\":null,\"eventType\":\"e\"}"), HK_DECODE_INVALID);
    EXPECT_V("source", "must not be blank");
}

Test(decode, source_empty)
{
    cr_assert_eq(DEC("{\"source\":\"\",\"eventType\":\"e\"}"), HK_DECODE_INVALID);
    EXPECT_V("source", "must not be blank");
}

Test(decode, source_not_a_string)
{
    static const char *const bodies[] = {
        "{\"source\":1,\"eventType\":\"e\"}",
        "{\"source\":-2.5e3,\"eventType\":\"e\"}",
        "{\"source\":true,\"eventType\":\"e\"}",
        "{\"source\":false,\"eventType\":\"e\"}",
        "{\"source\":{},\"eventType\":\"e\"}",
        "{\"source\":[\"s\"],\"eventType\":\"e\"}",
    };
    for (size_t i = 0; i < sizeof bodies / sizeof bodies[0]; i++) {
        cr_assert_eq(hk_webhook_decode(bodies[i], strlen(bodies[i]), &in), HK_DECODE_INVALID, "%s", bodies[i]);
        EXPECT_V("source", "must be a string");
        expect_invalid_row_cleared();
        hk_webhook_in_free(&in);
    }
}

Test(decode, event_type_each_violation)
{
    cr_assert_eq(DEC("{\"source\":\"s\"}"), HK_DECODE_INVALID);
    EXPECT_V("eventType", "must not be blank");
    expect_invalid_row_cleared();
    hk_webhook_in_free(&in);

    cr_assert_eq(DEC("{\"source\":\"s\",\"eventType\":null}"), HK_DECODE_INVALID);
    EXPECT_V("eventType", "must not be blank");
    hk_webhook_in_free(&in);

    cr_assert_eq(DEC("{\"source\":\"s\",\"eventType\":\" \"}"), HK_DECODE_INVALID);
    EXPECT_V("eventType", "must not be blank");
    hk_webhook_in_free(&in);

    cr_assert_eq(DEC("{\"source\":\"s\",\"eventType\":42}"), HK_DECODE_INVALID);
    EXPECT_V("eventType", "must be a string");
}

Test(decode, payload_not_string_or_null)
{
    static const char *const payloads[] = {"0", "1.5", "true", "false", "{}", "{\"a\":\"b\"}", "[]", "[\"x\"]"};
    for (size_t i = 0; i < sizeof payloads / sizeof payloads[0]; i++) {
        char body[128];
        int n = snprintf(body, sizeof body, "{\"source\":\"s\",\"eventType\":\"e\",\"payload\":%s}", payloads[i]);
        cr_assert_eq(hk_webhook_decode(body, (size_t)n, &in), HK_DECODE_INVALID, "%s", body);
        EXPECT_V("payload", "must be a string or null");
        expect_invalid_row_cleared();
        hk_webhook_in_free(&in);
    }
}

Test(decode, all_violations_in_field_order)
{
    /* Keys in reverse order in the body; violations still come source first. */
    cr_assert_eq(DEC("{\"payload\":[1],\"eventType\":\"  \",\"source\":7}"), HK_DECODE_INVALID);
    EXPECT_V("source", "must be a string",
             "eventType", "must not be blank",
             "payload", "must be a string or null");
    expect_invalid_row_cleared();
    hk_webhook_in_free(&in);

    cr_assert_eq(DEC("{}"), HK_DECODE_INVALID);
    EXPECT_V("source", "must not be blank", "eventType", "must not be blank");
}

Test(decode, blank_whitespace_only)
{
    /* Every ASCII whitespace Java knows (space \t \n \v \f \r, 0x1c-0x1f). */
    cr_assert_eq(DEC("{\"source\":\" \\t\\n\\u000b\\f\\r\\u001c\\u001d\\u001e\\u001f\",\"eventType\":\"\\t\"}"),
                 HK_DECODE_INVALID);
    EXPECT_V("source", "must not be blank", "eventType", "must not be blank");
}

Test(decode, blank_is_trim_semantics)
{
    /* @NotBlank trims every char <= U+0020, so other C0 controls are blank
     * too; a non-ASCII space (NBSP, U+3000) is not. */
    cr_assert_eq(DEC("{\"source\":\"\\u0001\\u0007\\u001b \",\"eventType\":\"e\"}"), HK_DECODE_INVALID);
    EXPECT_V("source", "must not be blank");
    hk_webhook_in_free(&in);

    cr_assert_eq(DEC("{\"source\":\"\\u00a0\",\"eventType\":\"\xe3\x80\x80\"}"), HK_DECODE_OK);
    assert_span(in.row.source, in.row.source_len, "\xc2\xa0");
    hk_webhook_in_free(&in);

    /* Surrounding whitespace is kept, not trimmed away. */
    cr_assert_eq(DEC("{\"source\":\" s \",\"eventType\":\"\\te\"}"), HK_DECODE_OK);
    assert_span(in.row.source, in.row.source_len, " s ");
    assert_span(in.row.event_type, in.row.event_type_len, "\te");
}

/* Body {"source":<src>,"eventType":<et>} with src = n_src copies of `unit`. */
static enum hk_decode_result decode_repeat(const char *unit, int n_src, const char *et_unit, int n_et)
{
    static char body[8192];
    size_t len = 0;
    len += (size_t)sprintf(body + len, "{\"source\":\"");
    for (int i = 0; i < n_src; i++)
        len += (size_t)sprintf(body + len, "%s", unit);
    len += (size_t)sprintf(body + len, "\",\"eventType\":\"");
    for (int i = 0; i < n_et; i++)
        len += (size_t)sprintf(body + len, "%s", et_unit);
    len += (size_t)sprintf(body + len, "\"}");
    return hk_webhook_decode(body, len, &in);
}

Test(decode, source_length_in_code_points)
{
    cr_assert_eq(decode_repeat("a", 255, "e", 1), HK_DECODE_OK);
    cr_assert_eq(in.row.source_len, 255);
    hk_webhook_in_free(&in);

    cr_assert_eq(decode_repeat("a", 256, "e", 1), HK_DECODE_INVALID);
    EXPECT_V("source", "size must be between 0 and 255");
    hk_webhook_in_free(&in);

    /* 255 x U+00E9: 510 bytes but 255 characters. */
    cr_assert_eq(decode_repeat("\xc3\xa9", 255, "e", 1), HK_DECODE_OK);
    cr_assert_eq(in.row.source_len, 510);
    hk_webhook_in_free(&in);

    cr_assert_eq(decode_repeat("\xc3\xa9", 256, "e", 1), HK_DECODE_INVALID);
    EXPECT_V("source", "size must be between 0 and 255");
    hk_webhook_in_free(&in);

    /* Same through escapes: counted after decoding. */
    cr_assert_eq(decode_repeat("\\u00e9", 255, "e", 1), HK_DECODE_OK);
    hk_webhook_in_free(&in);

    /* 4-byte characters count once each (code points, not UTF-16 units). */
    cr_assert_eq(decode_repeat("\xf0\x9f\x98\x80", 255, "e", 1), HK_DECODE_OK);
    cr_assert_eq(in.row.source_len, 1020);
    hk_webhook_in_free(&in);

    cr_assert_eq(decode_repeat("\xe6\x97\xa5", 256, "e", 1), HK_DECODE_INVALID);
    EXPECT_V("source", "size must be between 0 and 255");
}

Test(decode, event_type_length_in_code_points)
{
    cr_assert_eq(decode_repeat("s", 1, "\xf0\x9f\x98\x80", 100), HK_DECODE_OK);
    cr_assert_eq(in.row.event_type_len, 400);
    hk_webhook_in_free(&in);

    cr_assert_eq(decode_repeat("s", 1, "\xf0\x9f\x98\x80", 101), HK_DECODE_INVALID);
    EXPECT_V("eventType", "size must be between 0 and 100");
    hk_webhook_in_free(&in);

    cr_assert_eq(decode_repeat("s", 1, "x", 100), HK_DECODE_OK);
    hk_webhook_in_free(&in);

    cr_assert_eq(decode_repeat("\xc3\xa9", 256, "x", 101), HK_DECODE_INVALID);
    EXPECT_V("source", "size must be between 0 and 255", "eventType", "size must be between 0 and 100");
}

Test(decode, blank_and_too_long_together)
{
    /* Bean Validation reports both constraints of one field. */
    cr_assert_eq(decode_repeat(" ", 256, "\\t", 101), HK_DECODE_INVALID);
    EXPECT_V("source", "must not be blank", "source", "size must be between 0 and 255",
             "eventType", "must not be blank", "eventType", "size must be between 0 and 100");
}

Test(decode, payload_has_no_length_limit)
{
    static char body[300000];
    size_t len = (size_t)sprintf(body, "{\"source\":\"s\",\"eventType\":\"e\",\"payload\":\"");
    memset(body + len, 'p', 200000);
    len += 200000;
    len += (size_t)sprintf(body + len, "\"}");
    cr_assert_eq(hk_webhook_decode(body, len, &in), HK_DECODE_OK);
    cr_assert_eq(in.row.payload_len, 200000);
}

Test(decode, not_an_object)
{
    static const char *const bodies[] = {"[]", "[{\"source\":\"s\",\"eventType\":\"e\"}]", "\"s\"",
                                         "123", "-1.5", "true", "null", " \"x\" "};
    for (size_t i = 0; i < sizeof bodies / sizeof bodies[0]; i++) {
        cr_assert_eq(hk_webhook_decode(bodies[i], strlen(bodies[i]), &in), HK_DECODE_INVALID, "%s", bodies[i]);
        EXPECT_V("", "must be a JSON object");
        expect_invalid_row_cleared();
        hk_webhook_in_free(&in);
    }
}

/* ---- syntax errors ---- */

static void expect_syntax(const char *body, size_t len, const char *text, int line, int column, size_t position)
{
    cr_assert_eq(hk_webhook_decode(body, len, &in), HK_DECODE_SYNTAX, "%.*s", (int)len, body);
    cr_assert_null(in.root);
    cr_assert_eq(in.nv, 0);
    cr_assert_str_eq(in.err_text, text);
    cr_assert_eq(in.err_line, line, "line %d", in.err_line);
    cr_assert_eq(in.err_column, column, "column %d", in.err_column);
    cr_assert_eq(in.err_position, position, "position %zu", in.err_position);
    expect_invalid_row_cleared();
    hk_webhook_in_free(&in);
}
#define SYNTAX(lit, text, line, col, pos) expect_syntax((lit), sizeof(lit) - 1, (text), (line), (col), (pos))

Test(decode, syntax_truncated)
{
    SYNTAX("{\"source\":\"s\"", "'}' expected near end of file", 1, 13, 13);
    SYNTAX("{\"source\":\"s", "premature end of input near '\"s'", 1, 12, 12);
    SYNTAX("{\"source\":", "unexpected token near end of file", 1, 10, 10);
    SYNTAX("{", "string or '}' expected near end of file", 1, 1, 1);
}

Test(decode, syntax_empty_and_blank_body)
{
    SYNTAX("", "unexpected token near end of file", 1, 0, 0);
    SYNTAX(" \n ", "unexpected token near end of file", 2, 1, 3);
    expect_syntax(NULL, 0, "unexpected token near end of file", 1, 0, 0);
}

Test(decode, syntax_trailing_garbage)
{
    SYNTAX("{\"source\":\"s\",\"eventType\":\"e\"} x", "end of file expected near 'x'", 1, 32, 32);
    SYNTAX("{} {}", "end of file expected near '{'", 1, 4, 4);
    /* A NUL after the object counts as garbage too. */
    SYNTAX("{}\0", "end of file expected near end of file", 1, 3, 3);
}

Test(decode, syntax_bad_tokens)
{
    SYNTAX("{'source':1}", "string or '}' expected near '''", 1, 2, 2);
    SYNTAX("{\"a\":1,}", "string or '}' expected near '}'", 1, 8, 8);
    SYNTAX("{\"a\" 1}", "':' expected near '1'", 1, 6, 6);
    SYNTAX("{\"a\":\"x\ny\"}", "unexpected newline near '\"x'", 1, 7, 7);
}

Test(decode, syntax_position_counts_lines)
{
    SYNTAX("{\n  \"source\": \"s\",\n  \"eventType\": ?\n}", "invalid token near '?'", 3, 16, 35);
}

Test(decode, syntax_invalid_utf8)
{
    /* jansson checks UTF-8 as it reads: the position is the offending byte's
     * offset. (For token errors it is the offset just past the token.) */
    SYNTAX("{\"source\":\"\xff\"}", "unable to decode byte 0xff near '\"'", 1, 11, 11);
    /* Overlong encoding of U+0000. */
    SYNTAX("{\"source\":\"\xc0\x80\"}", "unable to decode byte 0xc0 near '\"'", 1, 11, 11);
    /* UTF-8-encoded surrogate U+D800 (CESU style). */
    SYNTAX("{\"source\":\"\xed\xa0\x80\"}", "unable to decode byte 0xed near '\"'", 1, 11, 11);
    /* Beyond U+10FFFF. */
    SYNTAX("{\"source\":\"\xf4\x90\x80\x80\"}", "unable to decode byte 0xf4 near '\"'", 1, 11, 11);
    /* Truncated sequence. */
    SYNTAX("{\"source\":\"\xc3\"}", "unable to decode byte 0xc3 near '\"'", 1, 11, 11);
    /* Outside strings too. */
    SYNTAX("\xff", "unable to decode byte 0xff", 1, 0, 0);
    SYNTAX("{\"a\":1,\n\xfe}", "unable to decode byte 0xfe", 2, 0, 8);
}

Test(decode, syntax_lone_surrogate_escapes)
{
    SYNTAX("{\"source\":\"\\ud800\"}", "invalid Unicode '\\uD800' near '\"\\ud800\"'", 1, 18, 18);
    SYNTAX("{\"source\":\"\\udc00x\"}", "invalid Unicode '\\uDC00' near '\"\\udc00x\"'", 1, 19, 19);
    SYNTAX("{\"source\":\"\\ud800\\u0041\"}",
           "invalid Unicode '\\uD800\\u0041' near '\"\\ud800\\u0041\"'", 1, 24, 24);
}

Test(decode, syntax_nul)
{
    SYNTAX("{\"source\":\"a\\u0000b\"}",
           "\\u0000 is not allowed without JSON_ALLOW_NUL near '\"a\\u0000b\"'", 1, 20, 20);
    /* A raw NUL byte inside a string is an unescaped control character. */
    SYNTAX("{\"source\":\"a\0b\"}", "control character 0x0 near '\"a'", 1, 12, 12);
    /* In a key too. */
    SYNTAX("{\"\\u0000\":1}", "NUL byte in object key not supported near '\"\\u0000\"'", 1, 9, 9);
}

/* ---- encode ---- */

#define assert_buf(b, lit)                                                                    \
    cr_assert((b)->len == sizeof(lit) - 1 && memcmp((b)->p, (lit), sizeof(lit) - 1) == 0,     \
              "got  %.*s\nwant %s", (int)(b)->len, (b)->p, (lit))

static struct hk_webhook sample(void)
{
    struct hk_webhook w = {
        .id = 42,
        .source = "github",
        .source_len = 6,
        .event_type = "push",
        .event_type_len = 4,
        .payload = "{\"ref\":\"main\"}",
        .payload_len = 14,
        .received_us = INT64_C(1795978981123456),
    };
    return w;
}

Test(encode, sample_row_exact)
{
    struct hk_buf b = HK_BUF_INIT;
    struct hk_webhook w = sample();
    hk_webhook_encode(&b, &w);
    assert_buf(&b, "{\"id\":42,\"source\":\"github\",\"eventType\":\"push\","
                   "\"payload\":\"{\\\"ref\\\":\\\"main\\\"}\","
                   "\"receivedAt\":\"2026-11-29T19:03:01.123456Z\",\"processingMode\":\"event-loop\"}");
    hk_buf_free(&b);
}

Test(encode, null_payload_and_appending)
{
    struct hk_buf b = HK_BUF_INIT;
    struct hk_webhook w = sample();
    w.payload = NULL;
    w.payload_len = 0;
    w.id = INT64_MAX;
    w.received_us = 0;
    hk_buf_putc(&b, '[');
    hk_webhook_encode(&b, &w);
    hk_buf_putc(&b, ',');
    w.id = 1;
    w.payload = "";
    w.received_us = 1;
    hk_webhook_encode(&b, &w);
    hk_buf_putc(&b, ']');
    assert_buf(&b, "[{\"id\":9223372036854775807,\"source\":\"github\",\"eventType\":\"push\","
                   "\"payload\":null,\"receivedAt\":\"1970-01-01T00:00:00.000000Z\","
                   "\"processingMode\":\"event-loop\"},"
                   "{\"id\":1,\"source\":\"github\",\"eventType\":\"push\","
                   "\"payload\":\"\",\"receivedAt\":\"1970-01-01T00:00:00.000001Z\","
                   "\"processingMode\":\"event-loop\"}]");
    hk_buf_free(&b);
}

Test(encode, escapes_every_string_field)
{
    struct hk_buf b = HK_BUF_INIT;
    struct hk_webhook w = sample();
    w.source = "q\"b\\s/\x7f";
    w.source_len = 7;
    w.event_type = "a\xe2\x80\xa8" "b\xe2\x80\xa9" "\xc3\xa9";
    w.event_type_len = 10;
    w.payload = "\x00\x01\b\t\n\x0b\f\r\x1f";
    w.payload_len = 9;
    hk_webhook_encode(&b, &w);
    assert_buf(&b, "{\"id\":42,\"source\":\"q\\\"b\\\\s/\\u007f\","
                   "\"eventType\":\"a\\u2028b\\u2029\xc3\xa9\","
                   "\"payload\":\"\\u0000\\u0001\\b\\t\\n\\u000b\\f\\r\\u001f\","
                   "\"receivedAt\":\"2026-11-29T19:03:01.123456Z\",\"processingMode\":\"event-loop\"}");
    hk_buf_free(&b);
}

static uint64_t rng = 0x243f6a8885a308d3u;

static uint32_t next_rand(void)
{
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return (uint32_t)(rng >> 32);
}

/* Random valid UTF-8, weighted toward the characters that need care:
 * controls (NUL included), quotes, backslashes, DEL, U+2028/9, and every
 * sequence length. Returns the byte length. */
static size_t random_utf8(char *out, size_t max_chars)
{
    size_t n = 0, chars = next_rand() % (max_chars + 1);
    for (size_t i = 0; i < chars; i++) {
        uint32_t r = next_rand(), cp;
        switch (r % 8) {
        case 0: cp = (r >> 8) % 0x20; break;
        case 1: cp = "\"\\/\x7f"[(r >> 8) % 4]; break;
        case 2: cp = 0x2028 + (r >> 8) % 2; break;
        case 3: cp = 0x80 + (r >> 8) % (0x800 - 0x80); break;
        case 4:
            cp = 0x800 + (r >> 8) % (0x10000 - 0x800);
            if (cp >= 0xd800 && cp <= 0xdfff)
                cp -= 0x800;
            break;
        case 5: cp = 0x10000 + (r >> 8) % (0x110000 - 0x10000); break;
        default: cp = 0x20 + (r >> 8) % 0x5f; break;
        }
        if (cp < 0x80) {
            out[n++] = (char)cp;
        } else if (cp < 0x800) {
            out[n++] = (char)(0xc0 | cp >> 6);
            out[n++] = (char)(0x80 | (cp & 0x3f));
        } else if (cp < 0x10000) {
            out[n++] = (char)(0xe0 | cp >> 12);
            out[n++] = (char)(0x80 | (cp >> 6 & 0x3f));
            out[n++] = (char)(0x80 | (cp & 0x3f));
        } else {
            out[n++] = (char)(0xf0 | cp >> 18);
            out[n++] = (char)(0x80 | (cp >> 12 & 0x3f));
            out[n++] = (char)(0x80 | (cp >> 6 & 0x3f));
            out[n++] = (char)(0x80 | (cp & 0x3f));
        }
    }
    return n;
}

static void assert_json_str(json_t *obj, const char *key, const char *want, size_t want_len)
{
    json_t *v = json_object_get(obj, key);
    cr_assert(json_is_string(v), "%s is not a string", key);
    size_t n = json_string_length(v);
    cr_assert(n == want_len && memcmp(json_string_value(v), want, n) == 0,
              "%s differs after the round trip (%zu vs %zu bytes)", key, n, want_len);
}

Test(encode, round_trip_through_jansson)
{
    static char src[200 * 4], et[200 * 4], pl[400 * 4];
    struct hk_buf b = HK_BUF_INIT;
    for (int iter = 0; iter < 3000; iter++) {
        struct hk_webhook w = {
            .id = (int64_t)((uint64_t)next_rand() << 32 | next_rand()),
            .source = src,
            .source_len = random_utf8(src, 200),
            .event_type = et,
            .event_type_len = random_utf8(et, 200),
            .payload = iter % 5 == 0 ? NULL : pl,
            .payload_len = 0,
            .received_us = INT64_C(1795978981123456) + iter,
        };
        if (w.payload)
            w.payload_len = random_utf8(pl, 400);
        hk_buf_reset(&b, 1 << 20);
        hk_webhook_encode(&b, &w);

        json_error_t err;
        json_t *root = json_loadb(b.p, b.len, JSON_ALLOW_NUL | JSON_REJECT_DUPLICATES, &err);
        cr_assert_not_null(root, "iter %d: %s at %d: %.*s", iter, err.text, err.position, (int)b.len, b.p);
        cr_assert_eq(json_object_size(root), 6);
        cr_assert_eq(json_integer_value(json_object_get(root, "id")), w.id);
        assert_json_str(root, "source", w.source, w.source_len);
        assert_json_str(root, "eventType", w.event_type, w.event_type_len);
        if (w.payload)
            assert_json_str(root, "payload", w.payload, w.payload_len);
        else
            cr_assert(json_is_null(json_object_get(root, "payload")));
        char when[32];
        snprintf(when, sizeof when, "2026-11-29T19:03:01.%06dZ", 123456 + iter);
        assert_json_str(root, "receivedAt", when, 27);
        assert_json_str(root, "processingMode", "event-loop", 10);
        json_decref(root);

        /* No raw control bytes and no raw U+2028/9 in the output. */
        for (size_t i = 0; i < b.len; i++)
            cr_assert((unsigned char)b.p[i] >= 0x20 && b.p[i] != 0x7f, "raw 0x%02x at %zu", b.p[i], i);
        cr_assert_null(memmem(b.p, b.len, "\xe2\x80\xa8", 3));
        cr_assert_null(memmem(b.p, b.len, "\xe2\x80\xa9", 3));
    }
    hk_buf_free(&b);
}

Test(encode, round_trip_through_decode)
{
    /* What the API does on replay: our own output is accepted as a request. */
    struct hk_buf b = HK_BUF_INIT;
    struct hk_webhook w = sample();
    w.source = "caf\xc3\xa9 \"x\"\t\xe2\x80\xa8";
    w.source_len = strlen(w.source);
    hk_webhook_encode(&b, &w);
    struct hk_webhook_in in2;
    cr_assert_eq(hk_webhook_decode(b.p, b.len, &in2), HK_DECODE_OK);
    cr_assert(in2.row.source_len == w.source_len && memcmp(in2.row.source, w.source, w.source_len) == 0);
    cr_assert(in2.row.payload_len == w.payload_len && memcmp(in2.row.payload, w.payload, w.payload_len) == 0);
    hk_webhook_in_free(&in2);
    hk_buf_free(&b);
}

/* ---- ingress rows ---- */

static const uint8_t sha_sample[32] = {0x00, 0x01, 0x0a, 0xab, 0xcd, 0xef, 0xf0, 0xff, 0x10, 0x20, 0x30,
                                       0x40, 0x50, 0x60, 0x70, 0x80, 0x90, 0xa0, 0xb0, 0xc0, 0xd0, 0xe0,
                                       0x11, 0x22, 0x33, 0x44, 0x55, 0x66, 0x77, 0x88, 0x99, 0x09};
#define SHA_HEX "00010aabcdeff0ff102030405060708090a0b0c0d0e011223344556677889909"

static struct hk_webhook ingress_sample(void)
{
    struct hk_webhook w = sample();
    w.payload = NULL;
    w.payload_len = 0;
    w.ingress = true;
    w.body = (const uint8_t *)"{\"ref\":\"main\"}";
    w.body_len = 14;
    w.body_sha256 = sha_sample;
    w.content_type = "application/json";
    w.content_type_len = 16;
    w.delivery_id = "72d3162e-cc78-11e3-81ab-4c9367dc0958";
    w.delivery_id_len = 36;
    w.headers = "{\"x-github-event\":\"push\"}";
    w.headers_len = 25;
    w.verified = "{\"scheme\":\"github\",\"secret\":\"env:GH_SECRET\"}";
    w.verified_len = strlen(w.verified);
    w.client_addr = "192.0.2.7";
    w.client_addr_len = 9;
    return w;
}

Test(encode, ingress_row_exact)
{
    struct hk_buf b = HK_BUF_INIT;
    struct hk_webhook w = ingress_sample();
    hk_webhook_encode(&b, &w);
    assert_buf(&b, "{\"id\":42,\"source\":\"github\",\"eventType\":\"push\","
                   "\"payload\":\"{\\\"ref\\\":\\\"main\\\"}\","
                   "\"receivedAt\":\"2026-11-29T19:03:01.123456Z\",\"processingMode\":\"event-loop\","
                   "\"ingress\":true,\"contentType\":\"application/json\","
                   "\"deliveryId\":\"72d3162e-cc78-11e3-81ab-4c9367dc0958\","
                   "\"verified\":{\"scheme\":\"github\",\"secret\":\"env:GH_SECRET\"},"
                   "\"headers\":{\"x-github-event\":\"push\"},\"bodyBytes\":14,"
                   "\"bodySha256\":\"" SHA_HEX "\",\"clientAddress\":\"192.0.2.7\"}");
    hk_buf_free(&b);
}

Test(encode, ingress_row_absent_fields)
{
    struct hk_buf b = HK_BUF_INIT;
    struct hk_webhook w = ingress_sample();
    w.content_type = w.delivery_id = w.headers = w.verified = w.client_addr = NULL;
    w.body_sha256 = NULL;
    w.body = NULL;
    w.body_len = 0;
    w.payload = "never shown";   /* an ingress row's payload is its body */
    w.payload_len = 11;
    hk_webhook_encode(&b, &w);
    assert_buf(&b, "{\"id\":42,\"source\":\"github\",\"eventType\":\"push\",\"payload\":null,"
                   "\"receivedAt\":\"2026-11-29T19:03:01.123456Z\",\"processingMode\":\"event-loop\","
                   "\"ingress\":true,\"contentType\":null,\"deliveryId\":null,\"verified\":null,"
                   "\"headers\":{},\"bodyBytes\":0,\"bodySha256\":null,\"clientAddress\":null}");
    hk_buf_free(&b);
}

Test(encode, envelope_row_ignores_ingress_fields)
{
    struct hk_buf b = HK_BUF_INIT;
    struct hk_webhook w = ingress_sample();
    w.ingress = false;
    w.payload = "p";
    w.payload_len = 1;
    hk_webhook_encode(&b, &w);
    assert_buf(&b, "{\"id\":42,\"source\":\"github\",\"eventType\":\"push\",\"payload\":\"p\","
                   "\"receivedAt\":\"2026-11-29T19:03:01.123456Z\",\"processingMode\":\"event-loop\"}");
    hk_buf_free(&b);
}

/* The payload member for `ct` and `body` (n bytes): NULL when it is null,
 * else the decoded string (in *out, at most outn bytes). */
static const char *payload_for(const char *ct, const char *body, size_t n, char *out, size_t outn)
{
    struct hk_buf b = HK_BUF_INIT;
    struct hk_webhook w = ingress_sample();
    w.content_type = ct;
    w.content_type_len = ct ? strlen(ct) : 0;
    w.body = (const uint8_t *)body;
    w.body_len = n;
    hk_webhook_encode(&b, &w);
    json_error_t err;
    json_t *root = json_loadb(b.p, b.len, 0, &err);
    cr_assert_not_null(root, "not JSON (%s): %.*s", err.text, (int)b.len, b.p);
    cr_assert_eq(json_integer_value(json_object_get(root, "bodyBytes")), (json_int_t)n);
    json_t *p = json_object_get(root, "payload");
    cr_assert_not_null(p);
    const char *ret = NULL;
    if (json_is_string(p)) {
        cr_assert_lt(json_string_length(p), outn);
        memcpy(out, json_string_value(p), json_string_length(p) + 1);
        ret = out;
    } else {
        cr_assert(json_is_null(p));
    }
    json_decref(root);
    hk_buf_free(&b);
    return ret;
}

Test(encode, ingress_payload_when_textual)
{
    static const char *const text[] = {
        "text/plain", "text/html; charset=utf-8", "TEXT/CSV", "application/json",
        "Application/JSON ; charset=UTF-8", "application/vnd.github+json", "application/ld+JSON",
        "application/xml", "application/atom+xml", "application/x-www-form-urlencoded",
        " text/plain", "application/json\t;x=1",
    };
    static const char *const binary[] = {
        "application/octet-stream", "image/png", "application/jsonx", "application/+json",
        "application/json+zip", "multipart/form-data; boundary=x", "text", "text/", "/json",
        "application", "", "xml/application", "application/x-www-form-urlencodedx",
    };
    char out[256];
    for (size_t i = 0; i < sizeof text / sizeof text[0]; i++) {
        const char *p = payload_for(text[i], "caf\xc3\xa9 \"q\"\n", 10, out, sizeof out);
        cr_assert_not_null(p, "%s: payload null", text[i]);
        cr_assert_str_eq(p, "caf\xc3\xa9 \"q\"\n", "%s", text[i]);
    }
    for (size_t i = 0; i < sizeof binary / sizeof binary[0]; i++)
        cr_assert_null(payload_for(binary[i], "abc", 3, out, sizeof out), "%s: payload shown", binary[i]);
    cr_assert_null(payload_for(NULL, "abc", 3, out, sizeof out), "no content type");
    /* Text types whose bytes are not text. */
    cr_assert_null(payload_for("text/plain", "a\0b", 3, out, sizeof out), "NUL");
    cr_assert_null(payload_for("application/json", "\"\xff\"", 3, out, sizeof out), "not UTF-8");
    cr_assert_null(payload_for("text/plain", "\xc3", 1, out, sizeof out), "cut sequence");
    cr_assert_null(payload_for("text/plain", "\xed\xa0\x80", 3, out, sizeof out), "surrogate");
    /* An empty text body is an empty string, whatever its pointer. */
    cr_assert_str_eq(payload_for("text/plain", NULL, 0, out, sizeof out), "");
    cr_assert_str_eq(payload_for("text/plain", "", 0, out, sizeof out), "");
}

Test(encode, ingress_strings_escaped_and_objects_guarded)
{
    struct hk_buf b = HK_BUF_INIT;
    struct hk_webhook w = ingress_sample();
    w.delivery_id = "a\"b\\c\x01";
    w.delivery_id_len = 6;
    w.content_type = "text/plain; x=\"\xe2\x80\xa8\"";
    w.content_type_len = strlen(w.content_type);
    w.client_addr = "::1\t";
    w.client_addr_len = 4;
    w.body = (const uint8_t *)"line\r\n\x7f";
    w.body_len = 7;
    w.headers = "";            /* not an object: counts as none */
    w.headers_len = 0;
    w.verified = "{\"a\":1";   /* unbraced */
    w.verified_len = 6;
    hk_webhook_encode(&b, &w);
    json_error_t err;
    json_t *root = json_loadb(b.p, b.len, 0, &err);
    cr_assert_not_null(root, "not JSON (%s): %.*s", err.text, (int)b.len, b.p);
    assert_json_str(root, "deliveryId", "a\"b\\c\x01", 6);
    assert_json_str(root, "contentType", w.content_type, w.content_type_len);
    assert_json_str(root, "clientAddress", "::1\t", 4);
    assert_json_str(root, "payload", "line\r\n\x7f", 7);
    cr_assert(json_is_object(json_object_get(root, "headers")));
    cr_assert_eq(json_object_size(json_object_get(root, "headers")), 0);
    cr_assert(json_is_null(json_object_get(root, "verified")));
    cr_assert(json_is_true(json_object_get(root, "ingress")));
    json_decref(root);
    for (size_t i = 0; i < b.len; i++)
        cr_assert((unsigned char)b.p[i] >= 0x20 && b.p[i] != 0x7f, "raw 0x%02x at %zu", b.p[i], i);
    hk_buf_free(&b);
}

/* Random bodies, text or not, under text and binary types: the output is
 * always JSON, and the payload is the body exactly when the type is textual
 * and the body is UTF-8 without NUL (random_utf8 makes NULs too). */
Test(encode, ingress_random_bodies_round_trip)
{
    static const struct {
        const char *ct;
        bool text;
    } types[] = {
        {"application/json", true}, {"text/plain; charset=utf-8", true}, {"application/cloudevents+json", true},
        {"application/octet-stream", false}, {"image/gif", false}, {NULL, false},
    };
    static char body[400 * 4];
    struct hk_buf b = HK_BUF_INIT;
    for (int iter = 0; iter < 2000; iter++) {
        struct hk_webhook w = ingress_sample();
        size_t n = random_utf8(body, 400);
        bool utf8_no_nul = memchr(body, 0, n) == NULL;
        if (n > 0 && next_rand() % 3 == 0) {
            body[next_rand() % n] = (char)(0x80 | next_rand());   /* likely breaks the UTF-8 */
            utf8_no_nul = false;
        }
        size_t k = next_rand() % (sizeof types / sizeof types[0]);
        w.content_type = types[k].ct;
        w.content_type_len = types[k].ct ? strlen(types[k].ct) : 0;
        w.body = (const uint8_t *)body;
        w.body_len = n;
        b.len = 0;
        hk_webhook_encode(&b, &w);
        json_error_t err;
        json_t *root = json_loadb(b.p, b.len, 0, &err);
        cr_assert_not_null(root, "iteration %d: not JSON (%s)", iter, err.text);
        cr_assert_eq(json_integer_value(json_object_get(root, "bodyBytes")), (json_int_t)n);
        json_t *p = json_object_get(root, "payload");
        if (types[k].text && utf8_no_nul) {
            assert_json_str(root, "payload", body, n);
        } else if (!types[k].text) {
            cr_assert(json_is_null(p), "iteration %d: a payload for %s", iter, types[k].ct);
        } else {
            /* A byte set at random may still have made valid UTF-8: then the
             * payload is that text exactly, else null. */
            cr_assert(json_is_null(p) || (json_string_length(p) == n &&
                                          memcmp(json_string_value(p), body, n) == 0),
                      "iteration %d", iter);
        }
        json_decref(root);
    }
    hk_buf_free(&b);
}
