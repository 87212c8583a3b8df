/* SPDX-License-Identifier: MIT
 * The route matcher. The tables are small and fixed, so a linear scan over
 * exact paths plus {param} templates beats anything cleverer. */
#include "http/route.h"

#include <llhttp.h>
#include <string.h>

const char *hk_route_method_name(const struct hk_route *route)
{
    return llhttp_method_name((llhttp_method_t)route->method);
}

/* Does `path` fit `tmpl`? On a {param} template, store the segment. */
static int fits(const char *tmpl, const char *path, size_t len, const char **param, size_t *plen)
{
    const char *brace = strchr(tmpl, '{');
    if (!brace)
        return strlen(tmpl) == len && memcmp(tmpl, path, len) == 0;
    size_t prefix = (size_t)(brace - tmpl);
    /* What follows the parameter: "" or "/body" in "/api/webhooks/{id}/body". */
    const char *close = strchr(brace, '}');
    const char *suffix = close ? close + 1 : "";
    size_t slen_suffix = strlen(suffix);
    if (len <= prefix + slen_suffix || memcmp(tmpl, path, prefix) != 0 ||
        memcmp(path + len - slen_suffix, suffix, slen_suffix) != 0)
        return 0;
    const char *seg = path + prefix;
    size_t slen = len - prefix - slen_suffix;
    if (memchr(seg, '/', slen))
        return 0;
    *param = seg;
    *plen = slen;
    return 1;
}

static void allow_add(struct hk_match *m, size_t *alen, const char *name)
{
    size_t n = strlen(name);
    if (*alen + n + 2 >= sizeof m->allow)
        return;
    if (*alen) {
        memcpy(m->allow + *alen, ", ", 2);
        *alen += 2;
    }
    memcpy(m->allow + *alen, name, n);
    *alen += n;
    m->allow[*alen] = 0;
}

void hk_route_match(const struct hk_route *table, int n, const char *path, size_t len, uint8_t method,
                    struct hk_match *m)
{
    memset(m, 0, sizeof *m);
    m->route = HK_ROUTE_NONE;
    m->status = 404;
    uint8_t want = method == HTTP_HEAD ? HTTP_GET : method;
    const char *matched_tmpl = NULL;
    size_t alen = 0;
    for (int i = 0; i < n; i++) {
        const char *param = NULL;
        size_t plen = 0;
        if (matched_tmpl && strcmp(table[i].tmpl, matched_tmpl) != 0)
            break;
        if (!fits(table[i].tmpl, path, len, &param, &plen))
            continue;
        matched_tmpl = table[i].tmpl;
        if (table[i].method == want) {
            m->route = i;
            m->status = 0;
            m->param = param;
            m->param_len = plen;
            return;
        }
        allow_add(m, &alen, hk_route_method_name(&table[i]));
        m->route = i;
        m->status = 405;
    }
}
