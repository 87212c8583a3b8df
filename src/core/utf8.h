/* SPDX-License-Identifier: MIT
 * Strict UTF-8 (RFC 3629: no overlongs, no surrogates, nothing above
 * U+10FFFF): validation, used to refuse text a database would refuse, and
 * one sequence's decoding for the scanners. */
#ifndef HK_UTF8_H
#define HK_UTF8_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* True when p[0..n) is valid UTF-8 and, unless `allow_nul`, holds no NUL
 * byte (PostgreSQL's text cannot store U+0000). */
bool hk_utf8_valid(const char *p, size_t n, bool allow_nul);

/* The length of the well-formed UTF-8 sequence at s[0..n) (n > 0; RFC
 * 3629: shortest form, no surrogates, nothing above U+10FFFF) with its code
 * point in *cp, or 0 when s does not start one. Inline: scanners call it
 * per character. */
static inline size_t hk_utf8_seq(const unsigned char *s, size_t n, uint32_t *cp)
{
    unsigned c = s[0];
    size_t len;
    uint32_t v, min;
    if (c < 0x80) {
        *cp = c;
        return 1;
    }
    if (c >= 0xc2 && c <= 0xdf)
        len = 2, v = c & 0x1f, min = 0x80;
    else if (c >= 0xe0 && c <= 0xef)
        len = 3, v = c & 0x0f, min = 0x800;
    else if (c >= 0xf0 && c <= 0xf4)
        len = 4, v = c & 0x07, min = 0x10000;
    else
        return 0;
    if (n < len)
        return 0;
    for (size_t i = 1; i < len; i++) {
        if ((s[i] & 0xc0) != 0x80)
            return 0;
        v = (v << 6) | (s[i] & 0x3f);
    }
    if (v < min || v > 0x10ffff || (v >= 0xd800 && v <= 0xdfff))
        return 0;
    *cp = v;
    return len;
}

#endif
