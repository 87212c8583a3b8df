/* SPDX-License-Identifier: MIT
 * Routing table and matcher. The table is small and fixed, so a linear scan
 * over exact paths plus one {id} template beats anything cleverer. */
#include "http/route.h"

#include <llhttp.h>
#include <string.h>

#include "api/api.h"
#include "obs/metrics.h"
#include "obs/openapi.h"

#define M(x) (1u << HTTP_##x)

struct route {
    const char *tmpl;
    uint32_t method;           /* one method per entry */
    hk_handler handler;
};

/* Entries with the same template are adjacent; Allow lists them in order,
 * so each template's methods are listed alphabetically. */
static const struct route routes[] = {
    {"/api/webhooks", M(GET), hk_api_webhook_list},
    {"/api/webhooks", M(POST), hk_api_webhook_create},
    {"/api/webhooks/{id}", M(DELETE), hk_api_webhook_delete},
    {"/api/webhooks/{id}", M(GET), hk_api_webhook_get},
    {"/api/system/info", M(GET), hk_api_system_info},
    {"/api/system/benchmark", M(GET), hk_api_system_benchmark},
    {"/q/health", M(GET), hk_api_health},
    {"/q/health/live", M(GET), hk_api_health_live},
    {"/q/health/ready", M(GET), hk_api_health_ready},
    {"/q/health/started", M(GET), hk_api_health_started},
    {"/q/metrics", M(GET), hk_api_metrics},
    {"/metrics", M(GET), hk_api_metrics},
    {"/q/openapi", M(GET), hk_api_openapi},
};

#define NROUTES ((int)(sizeof routes / sizeof routes[0]))

const char *const hk_route_templates[] = {
    "/api/webhooks", "/api/webhooks", "/api/webhooks/{id}", "/api/webhooks/{id}",
    "/api/system/info", "/api/system/benchmark", "/q/health", "/q/health/live",
    "/q/health/ready", "/q/health/started", "/q/metrics", "/metrics", "/q/openapi",
};
const int hk_route_count = NROUTES;
_Static_assert(sizeof hk_route_templates / sizeof hk_route_templates[0] == NROUTES,
               "route name table out of step");

const char *hk_route_method(int i)
{
    if (i < 0 || i >= NROUTES)
        return NULL;
    return llhttp_method_name((llhttp_method_t)__builtin_ctz(routes[i].method));
}

/* Does `path` fit `tmpl`? On a {id} template, store the segment. */
static int fits(const char *tmpl, const char *path, size_t len, const char **param, size_t *plen)
{
    const char *brace = strchr(tmpl, '{');
    if (!brace)
        return strlen(tmpl) == len && memcmp(tmpl, path, len) == 0;
    size_t prefix = (size_t)(brace - tmpl);
    if (len <= prefix || memcmp(tmpl, path, prefix) != 0)
        return 0;
    const char *seg = path + prefix;
    size_t slen = len - prefix;
    if (memchr(seg, '/', slen))
        return 0;
    *param = seg;
    *plen = slen;
    return 1;
}

void hk_route_match(const char *path, size_t len, uint8_t method, struct hk_match *m)
{
    memset(m, 0, sizeof *m);
    m->route = HK_ROUTE_NONE;
    m->status = 404;
    uint8_t want = method == HTTP_HEAD ? HTTP_GET : method;
    const char *matched_tmpl = NULL;
    size_t alen = 0;
    for (int i = 0; i < NROUTES; i++) {
        const char *param = NULL;
        size_t plen = 0;
        if (matched_tmpl && strcmp(routes[i].tmpl, matched_tmpl) != 0)
            break;
        if (!fits(routes[i].tmpl, path, len, &param, &plen))
            continue;
        matched_tmpl = routes[i].tmpl;
        if (routes[i].method == (1u << want)) {
            m->route = i;
            m->handler = routes[i].handler;
            m->status = 0;
            m->param = param;
            m->param_len = plen;
            return;
        }
        const char *name = llhttp_method_name((llhttp_method_t)__builtin_ctz(routes[i].method));
        size_t n = strlen(name);
        if (alen + n + 2 < sizeof m->allow) {
            if (alen) {
                memcpy(m->allow + alen, ", ", 2);
                alen += 2;
            }
            memcpy(m->allow + alen, name, n);
            alen += n;
            m->allow[alen] = 0;
        }
        m->route = i;
        m->status = 405;
    }
}
