/* SPDX-License-Identifier: MIT
 * Strict UTF-8 validation: a byte-at-a-time state machine over the table of
 * well-formed sequences (Unicode 15, table 3-7). ASCII runs take the fast
 * path, since most of what hookd checks is ASCII. */
#include "core/utf8.h"

#include <stdint.h>

bool hk_utf8_valid(const char *p, size_t n, bool allow_nul)
{
    const unsigned char *s = (const unsigned char *)p, *end = s + n;
    while (s < end) {
        unsigned c = *s;
        if (c < 0x80) {
            if (c == 0 && !allow_nul)
                return false;
            s++;
            continue;
        }
        size_t len;
        unsigned lo = 0x80, hi = 0xbf;
        if (c >= 0xc2 && c <= 0xdf) {
            len = 2;
        } else if (c >= 0xe0 && c <= 0xef) {
            len = 3;
            if (c == 0xe0)
                lo = 0xa0;   /* overlong */
            else if (c == 0xed)
                hi = 0x9f;   /* surrogates */
        } else if (c >= 0xf0 && c <= 0xf4) {
            len = 4;
            if (c == 0xf0)
                lo = 0x90;   /* overlong */
            else if (c == 0xf4)
                hi = 0x8f;   /* above U+10FFFF */
        } else {
            return false;    /* continuation byte, C0/C1, F5..FF */
        }
        if ((size_t)(end - s) < len)
            return false;
        if (s[1] < lo || s[1] > hi)
            return false;
        for (size_t i = 2; i < len; i++)
            if (s[i] < 0x80 || s[i] > 0xbf)
                return false;
        s += len;
    }
    return true;
}
