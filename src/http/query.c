/* SPDX-License-Identifier: MIT
 * Query-string helpers: a linear scan (queries are short) and a strict
 * percent-decoder that rejects malformed escapes instead of guessing. */
#include "http/query.h"

#include <string.h>

#include "core/ascii.h"

const char *hk_query_raw(const char *q, size_t qlen, const char *name, size_t *vlen)
{
    size_t nlen = strlen(name);
    const char *p = q, *end = q ? q + qlen : NULL;
    while (p && p < end) {
        const char *amp = memchr(p, '&', (size_t)(end - p));
        const char *pe = amp ? amp : end;
        const char *eq = memchr(p, '=', (size_t)(pe - p));
        const char *ke = eq ? eq : pe;
        if ((size_t)(ke - p) == nlen && memcmp(p, name, nlen) == 0) {
            const char *v = eq ? eq + 1 : pe;
            *vlen = (size_t)(pe - v);
            return v;
        }
        p = amp ? amp + 1 : end;
    }
    *vlen = 0;
    return NULL;
}

long hk_url_decode(const char *src, size_t n, char *dst, size_t cap)
{
    size_t o = 0;
    for (size_t i = 0; i < n; i++) {
        char c = src[i];
        if (c == '%') {
            if (i + 2 >= n)
                return -1;
            int h = hk_hex_val(src[i + 1]), l = hk_hex_val(src[i + 2]);
            if (h < 0 || l < 0)
                return -1;
            c = (char)(h << 4 | l);
            i += 2;
        } else if (c == '+') {
            c = ' ';
        }
        if (o >= cap)
            return -1;
        dst[o++] = c;
    }
    return (long)o;
}
