/* SPDX-License-Identifier: MIT
 * Reading Content-Type values (core/mediatype.h). */
#include "core/mediatype.h"

#include <string.h>
#include <strings.h>

size_t hk_media_base(const char *ct, size_t n, const char **base)
{
    *base = ct;
    if (!ct)
        return 0;
    const char *semi = memchr(ct, ';', n);
    if (semi)
        n = (size_t)(semi - ct);
    while (n > 0 && (*ct == ' ' || *ct == '\t')) {
        ct++;
        n--;
    }
    while (n > 0 && (ct[n - 1] == ' ' || ct[n - 1] == '\t'))
        n--;
    *base = ct;
    return n;
}

bool hk_media_is(const char *ct, size_t n, const char *type)
{
    const char *b;
    size_t len = hk_media_base(ct, n, &b);
    return len && len == strlen(type) && strncasecmp(b, type, len) == 0;
}

bool hk_media_is_json(const char *ct, size_t n)
{
    static const char pj[] = "+json";
    const char *b;
    size_t len = hk_media_base(ct, n, &b);
    if (len == 0)
        return false;
    if (len == 16 && strncasecmp(b, "application/json", 16) == 0)
        return true;
    const char *slash = memchr(b, '/', len);
    /* type "/" subtype "+json", with a non-empty type and subtype name. */
    return slash && slash > b && (size_t)(b + len - slash - 1) > sizeof pj - 1 &&
           strncasecmp(b + len - (sizeof pj - 1), pj, sizeof pj - 1) == 0;
}
