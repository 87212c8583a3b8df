/* SPDX-License-Identifier: MIT
 * Unit tests for core/buf.c: growth, integer and printf appends, JSON string
 * escaping (checked byte for byte, and against a naive reference escaper),
 * RFC 3339 timestamps and reset/free. */
#include <criterion/criterion.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "core/buf.h"
#include "core/clock.h"

/* Exact bytes, embedded NULs included; prints both sides on failure. */
#define assert_bytes(b, exp, exp_len)                                              \
    do {                                                                           \
        const struct hk_buf *b_ = (b);                                             \
        size_t el_ = (exp_len);                                                    \
        cr_assert(b_->len == el_ && (el_ == 0 || memcmp(b_->p, (exp), el_) == 0),   \
                  "got %zu bytes \"%.*s\", want %zu bytes \"%.*s\"", b_->len,      \
                  (int)b_->len, b_->p ? b_->p : "", el_, (int)el_, (exp));         \
    } while (0)
#define assert_buf(b, lit) assert_bytes((b), (lit), sizeof(lit) - 1)

Test(buf, starts_empty_and_reserve_always_gives_memory)
{
    struct hk_buf b = HK_BUF_INIT;
    cr_assert_null(b.p);
    char *p = hk_buf_reserve(&b, 0);
    cr_assert_not_null(p);
    cr_assert_eq(p, b.p);
    cr_assert_eq(b.len, 0);
    cr_assert_geq(b.cap, 1);
    hk_buf_free(&b);
}

Test(buf, put_puts_putc)
{
    struct hk_buf b = HK_BUF_INIT;
    hk_buf_put(&b, "ab\0c", 4);
    hk_buf_puts(&b, "de");
    hk_buf_putc(&b, 'f');
    hk_buf_put(&b, NULL, 0);
    hk_buf_puts(&b, "");
    assert_bytes(&b, "ab\0cdef", 7);
    hk_buf_free(&b);
}

Test(buf, grows_across_many_appends)
{
    struct hk_buf b = HK_BUF_INIT;
    size_t grows = 0;
    size_t last_cap = 0;
    for (unsigned i = 0; i < 200000; i++) {
        hk_buf_putc(&b, (char)('a' + i % 26));
        if (b.cap != last_cap) {
            grows++;
            last_cap = b.cap;
        }
        cr_assert_leq(b.len, b.cap);
    }
    cr_assert_eq(b.len, 200000);
    for (unsigned i = 0; i < 200000; i++)
        cr_assert_eq(b.p[i], (char)('a' + i % 26), "byte %u", i);
    /* Geometric growth: a handful of reallocations, not one per append. */
    cr_assert_leq(grows, 20, "grew %zu times", grows);

    /* One big reservation jumps straight past the current capacity. */
    char *p = hk_buf_reserve(&b, 1u << 22);
    cr_assert_eq(p, b.p + b.len);
    cr_assert_geq(b.cap - b.len, (size_t)1 << 22);
    memset(p, 'z', 1u << 22);   /* ASan would catch a short allocation */
    hk_buf_free(&b);
}

Test(buf, u64)
{
    struct hk_buf b = HK_BUF_INIT;
    static const struct {
        uint64_t v;
        const char *s;
    } cases[] = {
        {0, "0"},
        {7, "7"},
        {9, "9"},
        {10, "10"},
        {99, "99"},
        {100, "100"},
        {101, "101"},
        {1000, "1000"},
        {4294967295u, "4294967295"},
        {4294967296u, "4294967296"},
        {UINT64_C(10000000000000000000), "10000000000000000000"},
        {UINT64_MAX, "18446744073709551615"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        hk_buf_reset(&b, 4096);
        hk_buf_put_u64(&b, cases[i].v);
        assert_bytes(&b, cases[i].s, strlen(cases[i].s));
    }
    /* Every value below 100000 against printf. */
    char want[32];
    for (uint64_t v = 0; v < 100000; v++) {
        hk_buf_reset(&b, 4096);
        hk_buf_put_u64(&b, v);
        int n = snprintf(want, sizeof want, "%" PRIu64, v);
        assert_bytes(&b, want, (size_t)n);
    }
    hk_buf_free(&b);
}

Test(buf, i64)
{
    struct hk_buf b = HK_BUF_INIT;
    hk_buf_put_i64(&b, INT64_MIN);
    hk_buf_putc(&b, ' ');
    hk_buf_put_i64(&b, -1);
    hk_buf_putc(&b, ' ');
    hk_buf_put_i64(&b, 0);
    hk_buf_putc(&b, ' ');
    hk_buf_put_i64(&b, -10);
    hk_buf_putc(&b, ' ');
    hk_buf_put_i64(&b, 42);
    hk_buf_putc(&b, ' ');
    hk_buf_put_i64(&b, INT64_MAX);
    assert_buf(&b, "-9223372036854775808 -1 0 -10 42 9223372036854775807");
    hk_buf_free(&b);
}

Test(buf, printf_appends_short_and_long)
{
    struct hk_buf b = HK_BUF_INIT;
    hk_buf_puts(&b, "x=");
    hk_buf_printf(&b, "%d/%s/%05.1f", -3, "ok", 2.25);
    assert_buf(&b, "x=-3/ok/002.2");

    /* Longer than whatever room is left: takes the second vsnprintf pass. */
    char big[3000];
    memset(big, 'q', sizeof big - 1);
    big[sizeof big - 1] = 0;
    hk_buf_reset(&b, 0);
    hk_buf_puts(&b, "<");
    hk_buf_printf(&b, "%s|%zu", big, sizeof big - 1);
    cr_assert_eq(b.len, 1 + 2999 + 1 + 4);
    cr_assert_eq(b.p[0], '<');
    cr_assert_eq(memcmp(b.p + 1, big, 2999), 0);
    cr_assert_eq(memcmp(b.p + 3000, "|2999", 5), 0);

    /* Empty result appends nothing. */
    size_t len = b.len;
    hk_buf_printf(&b, "%s", "");
    cr_assert_eq(b.len, len);
    hk_buf_free(&b);
}

Test(buf, printf_into_exactly_full_buffer)
{
    /* room == n exactly: vsnprintf needs n + 1 for the NUL, so must regrow. */
    struct hk_buf b = HK_BUF_INIT;
    hk_buf_reserve(&b, 64);
    size_t room = b.cap;
    char s[256];
    memset(s, 'r', room);
    s[room] = 0;
    hk_buf_printf(&b, "%s", s);
    cr_assert_eq(b.len, room);
    cr_assert_eq(memcmp(b.p, s, room), 0);
    hk_buf_free(&b);
}

Test(buf, reset_keeps_small_frees_large)
{
    struct hk_buf b = HK_BUF_INIT;
    hk_buf_puts(&b, "hello");
    char *p = b.p;
    size_t cap = b.cap;
    hk_buf_reset(&b, cap);          /* cap == keep: kept */
    cr_assert_eq(b.len, 0);
    cr_assert_eq(b.p, p);
    cr_assert_eq(b.cap, cap);
    hk_buf_puts(&b, "again");
    assert_buf(&b, "again");

    hk_buf_reset(&b, cap - 1);      /* cap > keep: freed */
    cr_assert_eq(b.len, 0);
    cr_assert_null(b.p);
    cr_assert_eq(b.cap, 0);

    hk_buf_puts(&b, "reuse");        /* usable after a freeing reset */
    assert_buf(&b, "reuse");
    hk_buf_free(&b);
    cr_assert_null(b.p);
    cr_assert_eq(b.len, 0);
    cr_assert_eq(b.cap, 0);
    hk_buf_free(&b);                 /* twice is harmless */

    hk_buf_reset(&b, 0);             /* on an empty buffer too */
    cr_assert_null(b.p);
}

/* ---- JSON strings ---- */

static void json_of(struct hk_buf *b, const char *s, size_t n)
{
    hk_buf_reset(b, 1 << 20);
    hk_buf_put_json_str(b, s, n);
}
#define JSON_LIT(b, lit) json_of((b), (lit), sizeof(lit) - 1)

Test(json_str, plain_and_empty)
{
    struct hk_buf b = HK_BUF_INIT;
    JSON_LIT(&b, "");
    assert_buf(&b, "\"\"");
    json_of(&b, NULL, 0);
    assert_buf(&b, "\"\"");
    JSON_LIT(&b, "github");
    assert_buf(&b, "\"github\"");
    JSON_LIT(&b, "a longer string that spans several eight-byte words/ok");
    assert_buf(&b, "\"a longer string that spans several eight-byte words/ok\"");
    hk_buf_free(&b);
}

Test(json_str, quotes_backslash_del)
{
    struct hk_buf b = HK_BUF_INIT;
    JSON_LIT(&b, "say \"hi\" \\o/ \x7f end");
    assert_buf(&b, "\"say \\\"hi\\\" \\\\o/ \\u007f end\"");
    JSON_LIT(&b, "\"");
    assert_buf(&b, "\"\\\"\"");
    JSON_LIT(&b, "\\\\");
    assert_buf(&b, "\"\\\\\\\\\"");
    hk_buf_free(&b);
}

Test(json_str, every_control_char)
{
    static const char *const want[32] = {
        "\\u0000", "\\u0001", "\\u0002", "\\u0003", "\\u0004", "\\u0005", "\\u0006", "\\u0007",
        "\\b",     "\\t",     "\\n",     "\\u000b", "\\f",     "\\r",     "\\u000e", "\\u000f",
        "\\u0010", "\\u0011", "\\u0012", "\\u0013", "\\u0014", "\\u0015", "\\u0016", "\\u0017",
        "\\u0018", "\\u0019", "\\u001a", "\\u001b", "\\u001c", "\\u001d", "\\u001e", "\\u001f",
    };
    struct hk_buf b = HK_BUF_INIT;
    char exp[16];
    for (int c = 0; c < 32; c++) {
        char in = (char)c;
        json_of(&b, &in, 1);
        int n = snprintf(exp, sizeof exp, "\"%s\"", want[c]);
        assert_bytes(&b, exp, (size_t)n);
    }
    /* All of them in one string, between plain bytes. */
    char all[64];
    for (int c = 0; c < 32; c++) {
        all[2 * c] = 'x';
        all[2 * c + 1] = (char)c;
    }
    json_of(&b, all, sizeof all);
    struct hk_buf e = HK_BUF_INIT;
    hk_buf_putc(&e, '"');
    for (int c = 0; c < 32; c++) {
        hk_buf_putc(&e, 'x');
        hk_buf_puts(&e, want[c]);
    }
    hk_buf_putc(&e, '"');
    assert_bytes(&b, e.p, e.len);
    hk_buf_free(&e);
    hk_buf_free(&b);
}

Test(json_str, line_and_paragraph_separators)
{
    struct hk_buf b = HK_BUF_INIT;
    JSON_LIT(&b, "a\xe2\x80\xa8" "b\xe2\x80\xa9" "c");
    assert_buf(&b, "\"a\\u2028b\\u2029c\"");
    /* Neighbours that share the 0xE2 lead byte pass through: U+2027, U+202A,
     * U+2014 (em dash), U+20AC (euro sign). */
    JSON_LIT(&b, "\xe2\x80\xa7\xe2\x80\xaa\xe2\x80\x94\xe2\x82\xac");
    assert_buf(&b, "\"\xe2\x80\xa7\xe2\x80\xaa\xe2\x80\x94\xe2\x82\xac\"");
    /* At the very end of the input, and a truncated lead byte (not valid
     * UTF-8, but it must not read past the end). */
    JSON_LIT(&b, "\xe2\x80\xa9");
    assert_buf(&b, "\"\\u2029\"");
    JSON_LIT(&b, "x\xe2\x80");
    assert_buf(&b, "\"x\xe2\x80\"");
    JSON_LIT(&b, "x\xe2");
    assert_buf(&b, "\"x\xe2\"");
    /* The bytes right after the end would complete U+2028: not ours to read. */
    json_of(&b, "x\xe2\x80\xa8", 3);
    assert_buf(&b, "\"x\xe2\x80\"");
    json_of(&b, "x\xe2\x80\xa8", 2);
    assert_buf(&b, "\"x\xe2\"");
    /* Exact-size heap copies, so ASan sees any read past the end. */
    for (size_t n = 1; n <= 3; n++) {
        char *h = malloc(n);
        memcpy(h, "\xe2\x80\xa8", n);
        json_of(&b, h, n);
        if (n == 3)
            assert_buf(&b, "\"\\u2028\"");
        else
            assert_bytes(&b, n == 1 ? "\"\xe2\"" : "\"\xe2\x80\"", n + 2);
        free(h);
    }
    hk_buf_free(&b);
}

Test(json_str, utf8_passes_through)
{
    struct hk_buf b = HK_BUF_INIT;
    JSON_LIT(&b, "caf\xc3\xa9 \xe6\x97\xa5\xe6\x9c\xac \xf0\x9f\x98\x80 \xc2\x80\xef\xbf\xbf");
    assert_buf(&b, "\"caf\xc3\xa9 \xe6\x97\xa5\xe6\x9c\xac \xf0\x9f\x98\x80 \xc2\x80\xef\xbf\xbf\"");
    hk_buf_free(&b);
}

/* The obvious byte-at-a-time escaper, to check the word-at-a-time one. */
static void ref_escape(struct hk_buf *b, const unsigned char *s, size_t n)
{
    hk_buf_putc(b, '"');
    for (size_t i = 0; i < n; i++) {
        unsigned c = s[i];
        if (c == '"')
            hk_buf_puts(b, "\\\"");
        else if (c == '\\')
            hk_buf_puts(b, "\\\\");
        else if (c == '\b')
            hk_buf_puts(b, "\\b");
        else if (c == '\f')
            hk_buf_puts(b, "\\f");
        else if (c == '\n')
            hk_buf_puts(b, "\\n");
        else if (c == '\r')
            hk_buf_puts(b, "\\r");
        else if (c == '\t')
            hk_buf_puts(b, "\\t");
        else if (c < 0x20 || c == 0x7f)
            hk_buf_printf(b, "\\u%04x", c);
        else if (c == 0xe2 && i + 2 < n && s[i + 1] == 0x80 && (s[i + 2] == 0xa8 || s[i + 2] == 0xa9)) {
            hk_buf_puts(b, s[i + 2] == 0xa8 ? "\\u2028" : "\\u2029");
            i += 2;
        } else
            hk_buf_putc(b, (char)c);
    }
    hk_buf_putc(b, '"');
}

Test(json_str, each_special_at_each_offset)
{
    /* Every byte value, alone at each position in a run of plain bytes: hits
     * every lane of the 8-byte scan, the tail loop, and both ends. */
    struct hk_buf got = HK_BUF_INIT, want = HK_BUF_INIT;
    unsigned char s[40];
    for (unsigned c = 0; c < 256; c++) {
        for (size_t len = 1; len <= sizeof s; len += 13) {
            for (size_t at = 0; at < len; at++) {
                memset(s, 'a', len);
                s[at] = (unsigned char)c;
                json_of(&got, (const char *)s, len);
                hk_buf_reset(&want, 1 << 20);
                ref_escape(&want, s, len);
                assert_bytes(&got, want.p, want.len);
            }
        }
    }
    /* The separators at each offset. */
    for (size_t at = 0; at + 3 <= sizeof s; at++) {
        memset(s, 'b', sizeof s);
        memcpy(s + at, "\xe2\x80\xa8", 3);
        json_of(&got, (const char *)s, sizeof s);
        hk_buf_reset(&want, 1 << 20);
        ref_escape(&want, s, sizeof s);
        assert_bytes(&got, want.p, want.len);
        cr_assert_not_null(memmem(got.p, got.len, "\\u2028", 6));
    }
    hk_buf_free(&got);
    hk_buf_free(&want);
}

Test(json_str, random_bytes_match_reference)
{
    struct hk_buf got = HK_BUF_INIT, want = HK_BUF_INIT;
    uint64_t x = 0x9e3779b97f4a7c15u;
    unsigned char s[300];
    for (int iter = 0; iter < 20000; iter++) {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        size_t len = (size_t)(x % sizeof s);
        for (size_t i = 0; i < len; i++) {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            /* Mostly plain ASCII, so long safe runs occur, plus any byte. */
            unsigned r = (unsigned)(x >> 32);
            s[i] = (r & 7) == 0 ? (unsigned char)(r >> 8) : (unsigned char)('A' + (r >> 8) % 26);
            if ((r & 0xff) == 1 && i + 3 <= len) {
                memcpy(s + i, (r >> 9) & 1 ? "\xe2\x80\xa9" : "\xe2\x80\xa8", 3);
                i += 2;
            }
        }
        json_of(&got, (const char *)s, len);
        hk_buf_reset(&want, 1 << 20);
        ref_escape(&want, s, len);
        assert_bytes(&got, want.p, want.len);
    }
    hk_buf_free(&got);
    hk_buf_free(&want);
}

/* Long, escape-dense strings (JSON inside a string) are escaped in chunks
 * of input (buf.c: JSON_CHUNK); a U+2028 or an escape on either side of a
 * chunk's end, and any mix of plain runs and escapes, match the reference. */
Test(json_str, long_dense_strings_across_chunks_match_reference)
{
    struct hk_buf got = HK_BUF_INIT, want = HK_BUF_INIT;
    static unsigned char s[3000];
    uint64_t x = 0x2545f4914f6cdd1du;
    for (int iter = 0; iter < 3000; iter++) {
        size_t len = 400 + (size_t)(iter * 7 % 2600);
        for (size_t i = 0; i < len; i++) {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            unsigned r = (unsigned)(x >> 32);
            static const char dense[] = "{\"\\:,\n\t\x01\x7f";
            s[i] = (r & 3) == 0 ? (unsigned char)dense[(r >> 8) % (sizeof dense - 1)]
                 : (r & 3) == 1 ? (unsigned char)(r >> 8) : (unsigned char)('a' + (r >> 8) % 26);
        }
        /* A line separator right at, before and after the chunk ends. */
        size_t at = 509 + (size_t)(iter % 6);
        if (at + 3 <= len)
            memcpy(s + at, iter & 1 ? "\xe2\x80\xa8" : "\xe2\x80\xa9", 3);
        at = 1021 + (size_t)(iter % 6);
        if (at + 3 <= len)
            memcpy(s + at, "\xe2\x80\xa8", 3);
        json_of(&got, (const char *)s, len);
        hk_buf_reset(&want, 1 << 20);
        ref_escape(&want, s, len);
        assert_bytes(&got, want.p, want.len);
    }
    /* All of it escaped: six bytes out for every byte in. */
    memset(s, 0x01, sizeof s);
    json_of(&got, (const char *)s, sizeof s);
    cr_assert_eq(got.len, 6 * sizeof s + 2);
    hk_buf_reset(&want, 1 << 20);
    ref_escape(&want, s, sizeof s);
    assert_bytes(&got, want.p, want.len);
    hk_buf_free(&got);
    hk_buf_free(&want);
}

Test(json_str, appends_after_existing_content)
{
    struct hk_buf b = HK_BUF_INIT;
    hk_buf_puts(&b, "[");
    hk_buf_put_json_str(&b, "a\nb", 3);
    hk_buf_putc(&b, ',');
    hk_buf_put_json_str(&b, "c", 1);
    hk_buf_putc(&b, ']');
    assert_buf(&b, "[\"a\\nb\",\"c\"]");
    hk_buf_free(&b);
}

Test(json_hex, quoted_lowercase_hex_across_chunks_or_null)
{
    unsigned char v[70];
    for (size_t i = 0; i < sizeof v; i++)
        v[i] = (unsigned char)(i * 37 + 11);
    struct hk_buf b = HK_BUF_INIT;
    hk_buf_put_json_hex(&b, v, sizeof v);
    cr_assert_eq(b.len, 2 + 2 * sizeof v);
    cr_assert_eq(b.p[0], '"');
    cr_assert_eq(b.p[b.len - 1], '"');
    for (size_t i = 0; i < sizeof v; i++) {
        char want[3];
        snprintf(want, sizeof want, "%02x", v[i]);
        cr_assert(b.p[1 + 2 * i] == want[0] && b.p[2 + 2 * i] == want[1], "byte %zu", i);
    }
    b.len = 0;
    hk_buf_put_json_hex(&b, NULL, 32);
    hk_buf_put_json_hex(&b, v, 0);
    assert_buf(&b, "null\"\"");
    hk_buf_free(&b);
}

/* ---- timestamps ---- */

static void iso_is(int64_t us, const char *want)
{
    struct hk_buf b = HK_BUF_INIT;
    hk_buf_putc(&b, '>');
    hk_buf_put_iso_us(&b, us);
    cr_assert(b.len == strlen(want) + 1 && memcmp(b.p + 1, want, b.len - 1) == 0,
              "%" PRId64 ": got \"%.*s\", want \"%s\"", us, (int)b.len - 1, b.p + 1, want);
    hk_buf_free(&b);
}

Test(iso, epoch_and_around_it)
{
    iso_is(0, "1970-01-01T00:00:00.000000Z");
    iso_is(1, "1970-01-01T00:00:00.000001Z");
    iso_is(999999, "1970-01-01T00:00:00.999999Z");
    iso_is(1000000, "1970-01-01T00:00:01.000000Z");
    iso_is(-1, "1969-12-31T23:59:59.999999Z");
    iso_is(-999999, "1969-12-31T23:59:59.000001Z");
    iso_is(-1000000, "1969-12-31T23:59:59.000000Z");
    iso_is(-1000001, "1969-12-31T23:59:58.999999Z");
}

Test(iso, ordinary_dates)
{
    iso_is(INT64_C(1795978981123456), "2026-11-29T19:03:01.123456Z");
    iso_is(INT64_C(1795978981000000), "2026-11-29T19:03:01.000000Z");
    iso_is(INT64_C(1709210096789012), "2024-02-29T12:34:56.789012Z");   /* leap day */
    iso_is(INT64_C(951782400000000), "2000-02-29T00:00:00.000000Z");    /* leap (div by 400) */
    iso_is(INT64_C(4107542400000000), "2100-03-01T00:00:00.000000Z");   /* 2100 is not leap */
    iso_is(INT64_C(1798761599999999), "2026-12-31T23:59:59.999999Z");
    iso_is(INT64_C(1798761600000000), "2027-01-01T00:00:00.000000Z");
}

Test(iso, year_range_edges)
{
    iso_is(INT64_C(253402300799999999), "9999-12-31T23:59:59.999999Z");
    iso_is(INT64_C(253402300800000000), "+10000-01-01T00:00:00.000000Z");
    iso_is(INT64_C(-62135596800000000), "0001-01-01T00:00:00.000000Z");
    iso_is(INT64_C(-62167219200000000), "0000-01-01T00:00:00.000000Z");
    iso_is(INT64_C(-62167219200000001), "-0001-12-31T23:59:59.999999Z");
    iso_is(INT64_C(-65322892800000000), "-0100-01-01T00:00:00.000000Z");
    iso_is(INT64_C(-93692592000000000), "-0999-01-01T00:00:00.000000Z");
    iso_is(INT64_MAX, "+294247-01-10T04:00:54.775807Z");
    iso_is(INT64_MIN, "-290308-12-21T19:59:05.224192Z");
}

/* The arithmetic calendar agrees with gmtime_r across the years 0000..9999,
 * every day boundary included. */
Test(iso, agrees_with_gmtime)
{
    uint64_t x = 88172645463325252ULL;
    for (int i = 0; i < 200000; i++) {
        x ^= x << 13, x ^= x >> 7, x ^= x << 17; /* xorshift64 */
        int64_t lo = INT64_C(-62167219200), span = INT64_C(253402300799) - lo;
        int64_t sec = lo + (int64_t)(x % (uint64_t)span);
        if (i % 4 == 0)
            sec -= sec % 86400; /* midnight */
        int64_t us = sec * 1000000 + (int64_t)((x >> 40) % 1000000);
        time_t t = (time_t)sec;
        struct tm tm;
        cr_assert(gmtime_r(&t, &tm));
        char want[96];
        snprintf(want, sizeof want, "%04d-%02d-%02dT%02d:%02d:%02d.%06dZ", tm.tm_year + 1900, tm.tm_mon + 1,
                 tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec, (int)((x >> 40) % 1000000));
        struct hk_buf b = HK_BUF_INIT;
        hk_buf_put_iso_us(&b, us);
        cr_assert(b.len == strlen(want) && memcmp(b.p, want, b.len) == 0, "%lld: got %.*s, want %s",
                  (long long)us, (int)b.len, b.p, want);
        hk_buf_free(&b);
    }
}

Test(iso, is_27_bytes)
{
    struct hk_buf b = HK_BUF_INIT;
    hk_buf_put_iso_us(&b, INT64_C(1795978981123456));
    cr_assert_eq(b.len, 27);
    hk_buf_free(&b);
}

/* hk_utc_tm is gmtime_r without the timezone: the same fields for every
 * second of leap days, century and era boundaries, before 1970 and far
 * after 2038. */
Test(buf, utc_tm_agrees_with_gmtime)
{
    static const int64_t at[] = {0, -1, 59, 86399, 86400, 951782400 /* 2000-02-29 */, 951868799,
                                 4107542399 /* 2100-02-28T23:59:59 */, 4107542400, -2208988800 /* 1900 */,
                                 -62135596800 /* 0001-01-01 */, 253402300799 /* 9999-12-31T23:59:59 */,
                                 1796083200 /* 2026-12-01 */, 2147483647, 2147483648};
    for (size_t i = 0; i < sizeof at / sizeof at[0]; i++) {
        for (int64_t d = -2; d <= 2; d++) {
            time_t t = (time_t)(at[i] + d);
            struct tm want, got;
            cr_assert_not_null(gmtime_r(&t, &want));
            hk_utc_tm(at[i] + d, &got);
            cr_assert(got.tm_year == want.tm_year && got.tm_mon == want.tm_mon && got.tm_mday == want.tm_mday &&
                          got.tm_wday == want.tm_wday && got.tm_hour == want.tm_hour &&
                          got.tm_min == want.tm_min && got.tm_sec == want.tm_sec,
                      "%lld: %d-%d-%d wd%d %d:%d:%d, gmtime %d-%d-%d wd%d %d:%d:%d", (long long)t, got.tm_year,
                      got.tm_mon, got.tm_mday, got.tm_wday, got.tm_hour, got.tm_min, got.tm_sec, want.tm_year,
                      want.tm_mon, want.tm_mday, want.tm_wday, want.tm_hour, want.tm_min, want.tm_sec);
        }
    }
    /* Every day over four centuries, at noon. */
    for (int64_t day = -146097; day < 146097; day += 1) {
        time_t t = (time_t)(day * 86400 + 43200);
        struct tm want, got;
        cr_assert_not_null(gmtime_r(&t, &want));
        hk_utc_tm(day * 86400 + 43200, &got);
        if (got.tm_year != want.tm_year || got.tm_mon != want.tm_mon || got.tm_mday != want.tm_mday ||
            got.tm_wday != want.tm_wday)
            cr_assert_fail("day %lld differs", (long long)day);
    }
}
