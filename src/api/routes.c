/* SPDX-License-Identifier: MIT
 * The route table: one list of method, template and handler. Metrics
 * labels, the Allow header and the OpenAPI check all read it. */
#include <llhttp.h>
#include <string.h>

#include "api/api_int.h"
#include "api/stream.h"
#include "api/ui.h"

/* Same templates adjacent, their methods in alphabetical order (Allow).
 * The last column is what a caller needs (api_int.h: HK_NEED_*). */
const struct hk_route hk_api_routes[] = {
    {HTTP_GET, "/api/webhooks", hk_api_webhook_list, HK_NEED_READ},
    {HTTP_POST, "/api/webhooks", hk_api_webhook_create, HK_NEED_OPEN},   /* senders: signatures */
    {HTTP_GET, "/api/webhooks/stream", hk_api_stream, HK_NEED_READ},
    {HTTP_DELETE, "/api/webhooks/{id}", hk_api_webhook_delete, HK_NEED_DELETE},
    {HTTP_GET, "/api/webhooks/{id}", hk_api_webhook_get, HK_NEED_READ},
    {HTTP_GET, "/api/webhooks/{id}/body", hk_api_webhook_body, HK_NEED_READ},
    {HTTP_POST, "/api/webhooks/{id}/redeliver", hk_api_webhook_redeliver, HK_NEED_ADMIN},
    {HTTP_GET, "/hooks/{source}", hk_api_hooks_get, HK_NEED_OPEN},      /* handshakes */
    {HTTP_POST, "/hooks/{source}", hk_api_hooks_post, HK_NEED_OPEN},    /* providers: signatures */
    {HTTP_GET, "/graphql", hk_api_graphql, HK_NEED_READ},
    {HTTP_POST, "/graphql", hk_api_graphql, HK_NEED_READ},             /* deleteWebhook also needs delete */
    {HTTP_GET, "/graphql/schema.graphql", hk_api_graphql_schema, HK_NEED_OPEN},
    {HTTP_POST, "/api/sessions", hk_api_session_create, HK_NEED_API_TOKEN},
    {HTTP_DELETE, "/api/sessions/current", hk_api_session_delete, HK_NEED_SESSION},
    {HTTP_GET, "/api/sessions/current", hk_api_session_current, HK_NEED_CREDENTIAL},
    {HTTP_GET, "/api/ingress/refusals", hk_api_ingress_refusals, HK_NEED_READ},
    {HTTP_GET, "/api/system/info", hk_api_system_info, HK_NEED_OPEN},
    {HTTP_GET, "/api/system/benchmark", hk_api_system_benchmark, HK_NEED_OPEN},
    {HTTP_GET, "/q/health", hk_api_health, HK_NEED_OPEN},
    {HTTP_GET, "/q/health/live", hk_api_health_live, HK_NEED_OPEN},
    {HTTP_GET, "/q/health/ready", hk_api_health_ready, HK_NEED_OPEN},
    {HTTP_GET, "/q/health/started", hk_api_health_started, HK_NEED_OPEN},
    {HTTP_GET, "/q/metrics", hk_api_metrics, HK_NEED_METRICS},
    {HTTP_GET, "/metrics", hk_api_metrics, HK_NEED_METRICS},
    {HTTP_GET, "/q/openapi", hk_api_openapi, HK_NEED_OPEN},
    /* The web inspector (docs/ui.md): open, the page logs in itself.
     * "/ui/" reaches api/ui.c through hk_api_ui_unrouted. */
    {HTTP_GET, "/ui", hk_api_ui_page, HK_NEED_OPEN},
    {HTTP_GET, "/ui/assets/{asset}", hk_api_ui_asset, HK_NEED_OPEN},
    {HTTP_GET, "/favicon.ico", hk_api_ui_favicon, HK_NEED_OPEN},
};

#define NROUTES ((int)(sizeof hk_api_routes / sizeof hk_api_routes[0]))
const int hk_api_nroutes = NROUTES;

const char *hk_api_uri_name(unsigned i)
{
    if (i == HK_URI_NOT_FOUND)
        return "NOT_FOUND";
    if (i < 2 || i >= 2 + (unsigned)NROUTES)
        return "UNKNOWN";
    return hk_api_routes[i - 2].tmpl;
}

unsigned hk_api_uri_of(int route)
{
    if (route == HK_ROUTE_UNROUTED)
        return HK_URI_UNKNOWN;
    if (route < 0 || route >= NROUTES)
        return HK_URI_NOT_FOUND;
    int i = route;
    while (i > 0 && strcmp(hk_api_routes[i - 1].tmpl, hk_api_routes[route].tmpl) == 0)
        i--;
    return 2 + (unsigned)i;
}
