/* SPDX-License-Identifier: MIT
 * Token text and the small parsers around it. Everything a request runs
 * (hk_bearer_parse, hk_token_hash, hk_ct_equal, hk_scopes_allow) works on
 * the caller's bytes and the stack: no allocation, no locale, no libcrypto. */
#include "auth/token.h"

#include <errno.h>
#include <string.h>
#include <sys/random.h>

#include "core/base64.h"
#include "core/clock.h"
#include "core/sha256.h"

static const char *const PREFIX[] = {
    [HK_TOKEN_API] = "hkd_",
    [HK_TOKEN_SESSION] = "hks_",
    [HK_TOKEN_CSRF] = "hkc_",
};

static int fill_random(uint8_t *p, size_t n)
{
    unsigned flags = GRND_NONBLOCK;
    size_t got = 0;
    while (got < n) {
        ssize_t r = getrandom(p + got, n - got, flags);
        if (r < 0) {
            if (errno == EINTR)
                continue;
            /* Early boot: the pool is not initialised yet. Waiting is right
             * for a secret; a guessable token is not. */
            if (errno == EAGAIN && flags) {
                flags = 0;
                continue;
            }
            return -1;
        }
        got += (size_t)r;
    }
    return 0;
}

const char *hk_token_prefix(enum hk_token_kind k)
{
    return (unsigned)k <= HK_TOKEN_CSRF ? PREFIX[k] : "";
}

int hk_token_new(enum hk_token_kind k, char out[HK_TOKEN_LEN + 1])
{
    uint8_t rnd[32];
    out[0] = '\0';
    if ((unsigned)k > HK_TOKEN_CSRF) {
        errno = EINVAL;
        return -1;
    }
    if (fill_random(rnd, sizeof rnd) < 0) {
        explicit_bzero(rnd, sizeof rnd);
        return -1;
    }
    memcpy(out, PREFIX[k], HK_TOKEN_PREFIX_LEN);
    hk_base64url_encode(rnd, sizeof rnd, out + HK_TOKEN_PREFIX_LEN);   /* 43 characters and a NUL */
    explicit_bzero(rnd, sizeof rnd);
    return 0;
}

int hk_token_kind_of(const char *tok, size_t n, enum hk_token_kind *kind)
{
    if (!tok || n != HK_TOKEN_LEN)
        return -1;
    int k = -1;
    for (int i = 0; i <= HK_TOKEN_CSRF; i++)
        if (memcmp(tok, PREFIX[i], HK_TOKEN_PREFIX_LEN) == 0)
            k = i;
    if (k < 0)
        return -1;
    /* 43 characters carry 258 bits; strict decoding wants the last two
     * zero, so that each 32-byte value has exactly one spelling. */
    uint8_t raw[32];
    long m = hk_base64url_decode(tok + HK_TOKEN_PREFIX_LEN, HK_TOKEN_B64_LEN, raw, sizeof raw);
    explicit_bzero(raw, sizeof raw);
    if (m != 32)
        return -1;
    if (kind)
        *kind = (enum hk_token_kind)k;
    return 0;
}

void hk_token_hash(const char *tok, size_t n, uint8_t out[32])
{
    hk_sha256(tok, n, out);
}

bool hk_ct_equal(const void *a, const void *b, size_t n)
{
    /* volatile: the compiler must not turn the loop into an early exit. */
    const volatile uint8_t *x = a, *y = b;
    uint8_t d = 0;
    for (size_t i = 0; i < n; i++)
        d |= x[i] ^ y[i];
    return d == 0;
}

const char *hk_auth_reason_name(enum hk_auth_reason r)
{
    static const char *const names[HK_AUTH__COUNT] = {
        [HK_AUTH_OK] = "ok",
        [HK_AUTH_MISSING] = "missing",
        [HK_AUTH_MALFORMED] = "malformed",
        [HK_AUTH_UNKNOWN] = "unknown",
        [HK_AUTH_EXPIRED] = "expired",
        [HK_AUTH_REVOKED] = "revoked",
        [HK_AUTH_INSUFFICIENT_SCOPE] = "insufficient_scope",
    };
    return (unsigned)r < HK_AUTH__COUNT ? names[r] : "unknown";
}

static bool ows(char c)
{
    return c == ' ' || c == '\t';
}

enum hk_auth_reason hk_bearer_parse(const char *v, size_t n, const char **tok, size_t *len,
                                    enum hk_token_kind *kind)
{
    static const char scheme[] = "bearer";
    if (!v)
        return HK_AUTH_MISSING;
    /* A long value is refused unread: a real one is "Bearer " and 47 bytes. */
    if (n > HK_BEARER_MAX)
        return HK_AUTH_MALFORMED;
    size_t i = 0, end = n;
    while (i < end && ows(v[i]))
        i++;
    while (end > i && ows(v[end - 1]))
        end--;
    if (i == end)
        return HK_AUTH_MISSING;
    if (end - i < sizeof scheme - 1)
        return HK_AUTH_MALFORMED;
    /* The scheme is case-insensitive (RFC 9110 11.1); ASCII folding only,
     * whatever the locale. */
    for (size_t j = 0; j < sizeof scheme - 1; j++) {
        unsigned char c = (unsigned char)v[i + j];
        if (c >= 'A' && c <= 'Z')
            c = (unsigned char)(c - 'A' + 'a');
        if (c != (unsigned char)scheme[j])
            return HK_AUTH_MALFORMED;
    }
    i += sizeof scheme - 1;
    /* RFC 6750 2.1: credentials = "Bearer" 1*SP b64token. */
    if (i == end || v[i] != ' ')
        return HK_AUTH_MALFORMED;
    while (i < end && v[i] == ' ')
        i++;
    enum hk_token_kind k;
    if (hk_token_kind_of(v + i, end - i, &k) < 0 || k == HK_TOKEN_CSRF)
        return HK_AUTH_MALFORMED;
    if (tok)
        *tok = v + i;
    if (len)
        *len = HK_TOKEN_LEN;
    if (kind)
        *kind = k;
    return HK_AUTH_OK;
}

static const struct {
    const char *word;
    unsigned bit;
} SCOPES[] = {
    {"read", HK_SCOPE_READ},
    {"delete", HK_SCOPE_DELETE},
    {"admin", HK_SCOPE_ADMIN},
};

int hk_scopes_parse(const char *s, size_t n, unsigned *out)
{
    if (!s || n == 0)
        return -1;
    unsigned bits = 0;
    size_t i = 0;
    for (;;) {
        size_t start = i;
        while (i < n && s[i] != ',')
            i++;
        size_t a = start, b = i;
        while (a < b && ows(s[a]))
            a++;
        while (b > a && ows(s[b - 1]))
            b--;
        unsigned bit = 0;
        for (size_t j = 0; j < sizeof SCOPES / sizeof SCOPES[0]; j++)
            if (strlen(SCOPES[j].word) == b - a && memcmp(SCOPES[j].word, s + a, b - a) == 0)
                bit = SCOPES[j].bit;
        if (!bit)
            return -1;
        bits |= bit;
        if (i == n)
            break;
        i++;   /* the comma; a trailing one leaves an empty word: -1 */
    }
    *out = bits;
    return 0;
}

void hk_scopes_format(unsigned scopes, char *out, size_t outlen)
{
    if (!outlen)
        return;
    size_t o = 0;
    for (size_t j = 0; j < sizeof SCOPES / sizeof SCOPES[0]; j++) {
        if (!(scopes & SCOPES[j].bit))
            continue;
        for (const char *w = o ? "," : ""; *w && o + 1 < outlen; w++)
            out[o++] = *w;
        for (const char *w = SCOPES[j].word; *w && o + 1 < outlen; w++)
            out[o++] = *w;
    }
    out[o] = '\0';
}

bool hk_scopes_allow(unsigned have, unsigned need)
{
    if (have & HK_SCOPE_ADMIN)
        return true;
    return (have & need) == need;
}

int hk_duration_parse(const char *s, size_t n, int64_t *us)
{
    /* Twelve digits bound the value before any multiplication. */
    if (!s || n < 2 || n > 13)
        return -1;
    int64_t v = 0;
    for (size_t i = 0; i + 1 < n; i++) {
        if (s[i] < '0' || s[i] > '9')
            return -1;
        v = v * 10 + (s[i] - '0');
    }
    int64_t unit;
    switch (s[n - 1]) {
    case 's':
        unit = INT64_C(1000000);
        break;
    case 'm':
        unit = INT64_C(60) * 1000000;
        break;
    case 'h':
        unit = INT64_C(3600) * 1000000;
        break;
    case 'd':
        unit = INT64_C(86400) * 1000000;
        break;
    default:
        return -1;
    }
    if (v == 0 || v > HK_DURATION_MAX_US / unit)
        return -1;
    *us = v * unit;
    return 0;
}

bool hk_token_name_ok(const char *s, size_t n)
{
    if (!s || n == 0 || n > HK_TOKEN_NAME_MAX)
        return false;
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)s[i];
        if (!((c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '.' ||
              c == '_' || c == '-'))
            return false;
    }
    return true;
}

/* n decimal digits at s, or -1. */
static int digits(const char *s, size_t n)
{
    int v = 0;
    for (size_t i = 0; i < n; i++) {
        if (s[i] < '0' || s[i] > '9')
            return -1;
        v = v * 10 + (s[i] - '0');
    }
    return v;
}

int hk_rfc3339_parse(const char *s, size_t n, int64_t *us)
{
    static const uint8_t mdays[12] = {31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
    /* full-date "T" partial-time: 19 bytes before the fraction and offset. */
    if (!s || n < 20 || s[4] != '-' || s[7] != '-' || (s[10] != 'T' && s[10] != 't') || s[13] != ':' ||
        s[16] != ':')
        return -1;
    int y = digits(s, 4), mo = digits(s + 5, 2), d = digits(s + 8, 2);
    int h = digits(s + 11, 2), mi = digits(s + 14, 2), sec = digits(s + 17, 2);
    if (y < 1 || mo < 1 || mo > 12 || d < 1 || h < 0 || h > 23 || mi < 0 || mi > 59 || sec < 0 || sec > 60)
        return -1;
    bool leap = (y % 4 == 0 && y % 100 != 0) || y % 400 == 0;
    if (d > mdays[mo - 1] + (mo == 2 && leap))
        return -1;
    size_t i = 19;
    int64_t frac = 0;
    if (s[i] == '.') {
        size_t nd = 0;
        for (i++; i < n && s[i] >= '0' && s[i] <= '9'; i++, nd++)
            if (nd < 6)
                frac = frac * 10 + (s[i] - '0');
        if (nd == 0)
            return -1;
        for (; nd < 6; nd++)
            frac *= 10;
    }
    int64_t off = 0;
    if (i < n && (s[i] == 'Z' || s[i] == 'z')) {
        i++;
    } else if (i + 6 == n && (s[i] == '+' || s[i] == '-') && s[i + 3] == ':') {
        int oh = digits(s + i + 1, 2), om = digits(s + i + 4, 2);
        if (oh < 0 || oh > 23 || om < 0 || om > 59)
            return -1;
        off = (oh * 60 + om) * 60;
        if (s[i] == '-')
            off = -off;
        i += 6;
    } else {
        return -1;
    }
    if (i != n)
        return -1;
    int64_t secs = hk_days_from_civil(y, (unsigned)mo, (unsigned)d) * 86400 + h * 3600 + mi * 60 + sec - off;
    *us = secs * 1000000 + frac;
    return 0;
}
