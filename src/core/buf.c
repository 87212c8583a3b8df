/* SPDX-License-Identifier: MIT
 * The growable byte buffer every response is written into, with the append
 * helpers the hot path needs: integers without printf, JSON string escaping
 * that copies runs of plain bytes at once, and RFC 3339 timestamps. */
#include "core/buf.h"
#include "core/ascii.h"
#include "core/clock.h"

#include <assert.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* A year-2038 time_t would make gmtime_r fail or lie for valid rows. */
static_assert(sizeof(time_t) >= 8, "hookd needs a 64-bit time_t");

#define MIN_CAP 64

static void oom(size_t want)
{
    fprintf(stderr, "hookd: out of memory (buffer of %zu bytes)\n", want);
    abort();
}

char *hk_buf_grow(struct hk_buf *b, size_t extra)
{
    if (b->p && b->cap - b->len >= extra)
        return b->p + b->len;
    if (extra > SIZE_MAX - b->len)
        oom(SIZE_MAX);
    size_t need = b->len + extra;
    size_t cap = b->cap < MIN_CAP ? MIN_CAP : b->cap;
    while (cap < need)
        cap = cap > SIZE_MAX / 2 ? need : cap * 2;
    char *p = realloc(b->p, cap);
    if (!p)
        oom(cap);
    b->p = p;
    b->cap = cap;
    return b->p + b->len;
}

void hk_buf_puts(struct hk_buf *b, const char *s)
{
    hk_buf_put(b, s, strlen(s));
}

static const char digit_pairs[201] =
    "00010203040506070809"
    "10111213141516171819"
    "20212223242526272829"
    "30313233343536373839"
    "40414243444546474849"
    "50515253545556575859"
    "60616263646566676869"
    "70717273747576777879"
    "80818283848586878889"
    "90919293949596979899";

/* Writes v right-aligned ending at `end`; returns where it starts. */
static char *u64_backwards(char *end, uint64_t v)
{
    char *p = end;
    while (v >= 100) {
        unsigned d = (unsigned)(v % 100) * 2;
        v /= 100;
        *--p = digit_pairs[d + 1];
        *--p = digit_pairs[d];
    }
    if (v >= 10) {
        unsigned d = (unsigned)v * 2;
        *--p = digit_pairs[d + 1];
        *--p = digit_pairs[d];
    } else {
        *--p = (char)('0' + v);
    }
    return p;
}

void hk_buf_put_u64(struct hk_buf *b, uint64_t v)
{
    char tmp[20];   /* UINT64_MAX has 20 digits */
    char *end = tmp + sizeof tmp;
    char *p = u64_backwards(end, v);
    hk_buf_put(b, p, (size_t)(end - p));
}

void hk_buf_put_i64(struct hk_buf *b, int64_t v)
{
    if (v < 0) {
        hk_buf_putc(b, '-');
        /* Negate in unsigned arithmetic so INT64_MIN does not overflow. */
        hk_buf_put_u64(b, (uint64_t)0 - (uint64_t)v);
    } else {
        hk_buf_put_u64(b, (uint64_t)v);
    }
}

void hk_buf_printf(struct hk_buf *b, const char *fmt, ...)
{
    va_list ap, ap2;
    va_start(ap, fmt);
    va_copy(ap2, ap);
    /* First try in whatever room there is; most calls fit. */
    size_t room = b->cap - b->len;
    if (!b->p || room < MIN_CAP) {
        hk_buf_reserve(b, MIN_CAP);
        room = b->cap - b->len;
    }
    int n = vsnprintf(b->p + b->len, room, fmt, ap);
    va_end(ap);
    /* A negative n is a bad format or an over-INT_MAX result: append nothing
     * rather than garbage. */
    if (n >= 0 && (size_t)n >= room) {
        hk_buf_reserve(b, (size_t)n + 1);
        n = vsnprintf(b->p + b->len, (size_t)n + 1, fmt, ap2);
    }
    va_end(ap2);
    if (n > 0)
        b->len += (size_t)n;
}

/* What a byte needs inside a JSON string: 0 copy as is, 1 escape,
 * 2 maybe (0xE2 starts U+2028/U+2029, which are escaped for JavaScript). */
static const unsigned char json_class[256] = {
    1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1,   /* 0x00 */
    1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1,   /* 0x10 */
    0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,   /* 0x20: '"' */
    0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
    0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
    0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0,   /* 0x50: '\\' */
    0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
    0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1,   /* 0x7f: DEL */
    0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
    0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
    0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
    0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
    0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
    0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
    0, 0, 2, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,   /* 0xe2 */
    0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
};

#define ONES UINT64_C(0x0101010101010101)
#define HIGHS UINT64_C(0x8080808080808080)

/* Nonzero when some byte of x is zero (exact as to "some", though not as to
 * which one). */
static inline uint64_t has_zero(uint64_t x)
{
    return (x - ONES) & ~x & HIGHS;
}

/* Nonzero when some byte of the eight in x may need escaping (below 0x20,
 * '"', '\\', DEL, or 0xE2); exact as to "some". */
static inline uint64_t special8(uint64_t x)
{
    return ((x - ONES * 0x20) & ~x & HIGHS)   /* some byte < 0x20 */
        | has_zero(x ^ (ONES * 0x22))
        | has_zero(x ^ (ONES * 0x5c))
        | has_zero(x ^ (ONES * 0x7f))
        | has_zero(x ^ (ONES * 0xe2));
}

/* Index of the first byte at or after i that is not class 0. Eight bytes at a
 * time while none of them can be special; the byte loop then finds the one
 * that is within the same eight. */
static size_t skip_plain(const unsigned char *s, size_t i, size_t n)
{
    while (n - i >= 8) {
        uint64_t x;
        memcpy(&x, s + i, 8);
        if (special8(x))
            break;
        i += 8;
    }
    while (i < n && json_class[s[i]] == 0)
        i++;
    return i;
}

static const char hex_lower[] = "0123456789abcdef";

/* The letter of a two-character escape (\" \\ \b \f \n \r \t), else 0. */
static const char short_escape[256] = {
    ['"'] = '"', ['\\'] = '\\', ['\b'] = 'b', ['\f'] = 'f', ['\n'] = 'n', ['\r'] = 'r', ['\t'] = 't',
};

/* Input bytes escaped per reservation. A byte takes at most six output
 * bytes (\u00XX; U+2028 takes six for three), so a chunk never needs more
 * than 6 * JSON_CHUNK, whatever a large body holds. */
#define JSON_CHUNK 512

void hk_buf_put_json_str(struct hk_buf *b, const char *str, size_t n)
{
    const unsigned char *s = (const unsigned char *)str;
    /* Most strings need no escaping: one copy between the quotes. A string
     * that does has its plain prefix copied the same way. */
    size_t i = n ? skip_plain(s, 0, n) : 0;
    char *o = hk_buf_reserve(b, i + 2);
    o[0] = '"';
    if (i)
        memcpy(o + 1, s, i);
    if (i == n) {
        o[i + 1] = '"';
        b->len += i + 2;
        return;
    }
    b->len += i + 1;
    const unsigned char *p = s + i, *end = s + n;
    /* Escape-dense text (JSON inside a string: a quote every few bytes)
     * goes byte by byte straight into the buffer, eight plain bytes at a
     * time where it can. */
    while (p < end) {
        size_t m = (size_t)(end - p) < JSON_CHUNK ? (size_t)(end - p) : JSON_CHUNK;
        const unsigned char *stop = p + m;
        char *w0 = hk_buf_reserve(b, 6 * m), *w = w0;
        for (;;) {
            /* The plain run up to the next byte that may need escaping. */
            while (stop - p >= 8) {
                uint64_t x;
                memcpy(&x, p, 8);
                if (special8(x))
                    break;
                memcpy(w, p, 8);
                w += 8;
                p += 8;
            }
            while (p < stop && json_class[*p] == 0)
                *w++ = (char)*p++;
            if (p >= stop)
                break;
            unsigned char c = *p;
            if (json_class[c] == 2) {
                /* U+2028 and U+2029 (E2 80 A8/A9) are escaped for JavaScript;
                 * other U+2xxx characters pass. The look-ahead is bounded by
                 * the string, not the chunk: a sequence may end past it. */
                if (end - p >= 3 && p[1] == 0x80 && (p[2] == 0xa8 || p[2] == 0xa9)) {
                    memcpy(w, p[2] == 0xa8 ? "\\u2028" : "\\u2029", 6);
                    w += 6;
                    p += 3;
                } else {
                    *w++ = (char)c;
                    p++;
                }
            } else if (short_escape[c]) {
                w[0] = '\\';
                w[1] = short_escape[c];
                w += 2;
                p++;
            } else {
                memcpy(w, "\\u00", 4);
                w[4] = hex_lower[c >> 4];
                w[5] = hex_lower[c & 15];
                w += 6;
                p++;
            }
        }
        b->len += (size_t)(w - w0);
    }
    hk_buf_putc(b, '"');
}

static char *put2(char *p, unsigned v)
{
    assert(v < 100);
    p[0] = digit_pairs[v * 2];
    p[1] = digit_pairs[v * 2 + 1];
    return p + 2;
}

void hk_buf_put_iso_us(struct hk_buf *b, int64_t unix_us)
{
    /* Floor division: -1 µs is 1969-12-31T23:59:59.999999Z, not ...:00.-000001. */
    int64_t sec = unix_us / 1000000;
    int64_t us = unix_us % 1000000;
    if (us < 0) {
        us += 1000000;
        sec--;
    }
    /* The calendar by arithmetic (hk_utc_tm): gmtime_r takes glibc's
     * timezone lock for every row of a list. int64 microseconds span about
     * ±292,000 years, well inside int64 days. */
    struct tm tm;
    hk_utc_tm(sec, &tm);

    /* Years outside 0000..9999 are not RFC 3339; write them the way
     * java.time.Instant does ("+10000-...", "-0001-...") rather than lie. */
    long long year = (long long)tm.tm_year + 1900;
    if (year < 0 || year > 9999) {
        hk_buf_putc(b, year < 0 ? '-' : '+');
        unsigned long long ay = year < 0 ? 0ULL - (unsigned long long)year : (unsigned long long)year;
        if (ay < 1000) {
            char four[4] = {'0', '0', '0', '0'};
            u64_backwards(four + 4, ay);
            hk_buf_put(b, four, 4);
        } else {
            hk_buf_put_u64(b, ay);
        }
    } else {
        char *p = hk_buf_reserve(b, 4);
        put2(p, (unsigned)(year / 100));
        put2(p + 2, (unsigned)(year % 100));
        b->len += 4;
    }

    char *p = hk_buf_reserve(b, 23);
    char *q = p;
    *q++ = '-';
    q = put2(q, (unsigned)tm.tm_mon + 1);
    *q++ = '-';
    q = put2(q, (unsigned)tm.tm_mday);
    *q++ = 'T';
    q = put2(q, (unsigned)tm.tm_hour);
    *q++ = ':';
    q = put2(q, (unsigned)tm.tm_min);
    *q++ = ':';
    q = put2(q, (unsigned)tm.tm_sec);
    *q++ = '.';
    unsigned frac = (unsigned)us;
    q = put2(q, frac / 10000);
    q = put2(q, frac / 100 % 100);
    q = put2(q, frac % 100);
    *q++ = 'Z';
    assert(q - p == 23);
    b->len += 23;
}

void hk_buf_reset(struct hk_buf *b, size_t keep)
{
    b->len = 0;
    if (b->cap > keep) {
        free(b->p);
        b->p = NULL;
        b->cap = 0;
    }
}

void hk_buf_free(struct hk_buf *b)
{
    free(b->p);
    b->p = NULL;
    b->len = 0;
    b->cap = 0;
}

void hk_buf_put_json_hex(struct hk_buf *b, const unsigned char *p, size_t n)
{
    if (!p) {
        hk_buf_put(b, "null", 4);
        return;
    }
    hk_buf_putc(b, '"');
    char hex[65];   /* 32 bytes' digits and hk_hex_encode's NUL */
    for (size_t i = 0; i < n; i += 32) {
        size_t k = n - i < 32 ? n - i : 32;
        hk_hex_encode(p + i, k, hex);
        hk_buf_put(b, hex, 2 * k);
    }
    hk_buf_putc(b, '"');
}
