/* SPDX-License-Identifier: MIT
 * Request dispatch and the health endpoints (MicroProfile Health shape). */
#include "api/api.h"

#include <string.h>

#include "http/resp.h"
#include "http/route.h"
#include "http/server.h"

/* Echo the path in a problem only when it is plain printable ASCII. */
static int printable(const char *p, size_t n)
{
    if (n > 200)
        return 0;
    for (size_t i = 0; i < n; i++)
        if ((unsigned char)p[i] < 0x21 || (unsigned char)p[i] > 0x7e)
            return 0;
    return 1;
}

void hk_api_dispatch(struct hk_req *r)
{
    struct hk_match m;
    hk_route_match(r->path, r->path_len, r->method, &m);
    r->route = m.route;
    if (m.status == 404) {
        if (printable(r->path, r->path_len))
            hk_resp_problem(r, 404, NULL, "no resource at %.*s", (int)r->path_len, r->path);
        else
            hk_resp_problem(r, 404, NULL, "no resource at this path");
        return;
    }
    if (m.status == 405) {
        hk_resp_header(r, "Allow", m.allow, strlen(m.allow));
        hk_resp_problem(r, 405, NULL, "method not allowed here; allowed: %s", m.allow);
        return;
    }
    r->param = m.param;
    r->param_len = m.param_len;
    m.handler(r);
}

static void health(struct hk_req *r, bool live, bool ready, bool started)
{
    struct hk_worker *w = r->s->w;
    bool store_up = hk_store_health(w->sl) == 0;
    bool up = !ready || store_up;
    struct hk_buf *b = hk_resp_body(r);
    hk_buf_puts(b, up ? "{\"status\":\"UP\",\"checks\":[" : "{\"status\":\"DOWN\",\"checks\":[");
    const char *sep = "";
    if (live) {
        hk_buf_puts(b, "{\"name\":\"event-loop\",\"status\":\"UP\"}");
        sep = ",";
    }
    if (ready) {
        hk_buf_puts(b, sep);
        hk_buf_puts(b, "{\"name\":\"store\",\"status\":\"");
        hk_buf_puts(b, store_up ? "UP" : "DOWN");
        hk_buf_puts(b, "\",\"data\":{\"backend\":\"");
        hk_buf_puts(b, w->store->vt->name);
        hk_buf_puts(b, "\"}}");
        sep = ",";
    }
    if (started) {
        hk_buf_puts(b, sep);
        hk_buf_puts(b, "{\"name\":\"started\",\"status\":\"UP\"}");
    }
    hk_buf_puts(b, "]}");
    hk_resp_send(r, up ? 200 : 503, HK_CT_JSON);
}

void hk_api_health(struct hk_req *r)
{
    health(r, true, true, true);
}

void hk_api_health_live(struct hk_req *r)
{
    health(r, true, false, false);
}

void hk_api_health_ready(struct hk_req *r)
{
    health(r, false, true, false);
}

void hk_api_health_started(struct hk_req *r)
{
    health(r, false, false, true);
}
