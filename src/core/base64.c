/* SPDX-License-Identifier: MIT
 * Base64 (RFC 4648 sections 4 and 5): encoders for both alphabets, and a
 * strict decoder of the standard one, so that one value has exactly one
 * accepted spelling (signatures are compared as bytes after decoding). */
#include "core/base64.h"

#include <stdbool.h>

static const char std_alpha[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
static const char url_alpha[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";

/* Encode n bytes; pad with '=' or not. Returns the length written. */
static size_t encode(const char *alpha, const uint8_t *s, size_t n, char *out, int pad)
{
    size_t o = 0, i = 0;
    for (; n - i >= 3; i += 3) {
        uint32_t v = (uint32_t)s[i] << 16 | (uint32_t)s[i + 1] << 8 | s[i + 2];
        out[o++] = alpha[v >> 18];
        out[o++] = alpha[v >> 12 & 63];
        out[o++] = alpha[v >> 6 & 63];
        out[o++] = alpha[v & 63];
    }
    if (n - i == 1) {
        uint32_t v = (uint32_t)s[i] << 16;
        out[o++] = alpha[v >> 18];
        out[o++] = alpha[v >> 12 & 63];
        if (pad) {
            out[o++] = '=';
            out[o++] = '=';
        }
    } else if (n - i == 2) {
        uint32_t v = (uint32_t)s[i] << 16 | (uint32_t)s[i + 1] << 8;
        out[o++] = alpha[v >> 18];
        out[o++] = alpha[v >> 12 & 63];
        out[o++] = alpha[v >> 6 & 63];
        if (pad)
            out[o++] = '=';
    }
    out[o] = '\0';
    return o;
}

size_t hk_base64_encode(const void *p, size_t n, char *out)
{
    return encode(std_alpha, p, n, out, 1);
}

size_t hk_base64url_encode(const void *p, size_t n, char *out)
{
    return encode(url_alpha, p, n, out, 0);
}

/* The value of a standard-alphabet character, or -1 ('=' included). */
static int val(char ch)
{
    unsigned char c = (unsigned char)ch;
    if (c >= 'A' && c <= 'Z')
        return c - 'A';
    if (c >= 'a' && c <= 'z')
        return c - 'a' + 26;
    if (c >= '0' && c <= '9')
        return c - '0' + 52;
    if (c == '+')
        return 62;
    if (c == '/')
        return 63;
    return -1;
}

long hk_base64_decode(const char *s, size_t n, uint8_t *out, size_t cap)
{
    if (n % 4)
        return -1;
    if (n == 0)
        return 0;
    /* Padding: only in the last quantum, one or two '=' at its end. */
    size_t pad = s[n - 1] == '=' ? (s[n - 2] == '=' ? 2 : 1) : 0;
    size_t len = n / 4 * 3 - pad;
    if (len > cap)
        return -1;
    size_t o = 0;
    for (size_t i = 0; i < n; i += 4) {
        bool last = i + 4 == n;
        int a = val(s[i]), b = val(s[i + 1]);
        int c = last && pad == 2 ? 0 : val(s[i + 2]);
        int d = last && pad >= 1 ? 0 : val(s[i + 3]);
        if (a < 0 || b < 0 || c < 0 || d < 0)
            return -1;
        uint32_t v = (uint32_t)a << 18 | (uint32_t)b << 12 | (uint32_t)c << 6 | (uint32_t)d;
        out[o++] = (uint8_t)(v >> 16);
        if (last && pad == 2) {
            /* "xx==": the last character's low 4 bits are not data. */
            if (b & 15)
                return -1;
            break;
        }
        out[o++] = (uint8_t)(v >> 8);
        if (last && pad == 1) {
            if (c & 3)     /* "xxx=": the low 2 bits are not data */
                return -1;
            break;
        }
        out[o++] = (uint8_t)v;
    }
    return (long)o;
}

/* The value of a base64url character, or -1. */
static int val_url(char ch)
{
    if (ch == '-')
        return 62;
    if (ch == '_')
        return 63;
    return ch == '+' || ch == '/' ? -1 : val(ch);
}

long hk_base64url_decode(const char *s, size_t n, uint8_t *out, size_t cap)
{
    size_t tail = n % 4;
    if (tail == 1)
        return -1;
    size_t len = n / 4 * 3 + (tail ? tail - 1 : 0);
    if (len > cap)
        return -1;
    size_t o = 0;
    for (size_t i = 0; i < n; i += 4) {
        size_t k = n - i < 4 ? n - i : 4;
        uint32_t v = 0;
        for (size_t j = 0; j < 4; j++) {
            int x = j < k ? val_url(s[i + j]) : 0;
            if (x < 0)
                return -1;
            v = v << 6 | (uint32_t)x;
        }
        out[o++] = (uint8_t)(v >> 16);
        if (k == 2) {
            if (v & 0xffff)       /* the second character's low 4 bits are not data */
                return -1;
            break;
        }
        out[o++] = (uint8_t)(v >> 8);
        if (k == 3) {
            if (v & 0xff)         /* the third character's low 2 bits are not data */
                return -1;
            break;
        }
        out[o++] = (uint8_t)v;
    }
    return (long)o;
}
