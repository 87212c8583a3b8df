/* SPDX-License-Identifier: MIT
 * The application's hooks: per-loop state (store loop, observability),
 * routing each request to its handler, and what happens at a request's
 * start and end (its labels and numbers handed to obs/). */
#include <llhttp.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api/api_int.h"
#include "api/forward.h"
#include "api/retention.h"
#include "api/stream.h"
#include "api/ui.h"
#include "core/ascii.h"
#include "auth/limiter.h"
#include "core/clock.h"
#include "redis/redis.h"

static int loop_start(void *arg, struct hk_worker *w, void **out)
{
    struct hk_api *a = arg;
    struct hk_api_loop *L = calloc(1, sizeof *L);
    if (!L)
        abort();
    L->api = a;
    L->w = w;
    int rc = a->store->vt->loop_attach(a->store, &w->loop, &L->sl);
    if (rc < 0) {
        free(L);
        return rc;
    }
    L->obs = hk_obs_new(&w->loop, (unsigned)a->cfg->metrics_top_sources, a->cfg->access_log);
    uv_timer_init(&w->loop, &L->detach_timer);
    L->detach_timer.data = L;
    if (a->redis) {
        L->redis = hk_redis_attach(&w->loop, a->redis);
        hk_redis_count_up(L->redis, &a->redis_up);
    }
    /* What can fail was checked at start (hk_api_start_outbound). */
    hk_stream_loop_start(L);
    hk_forward_loop_start(L);
    hk_retention_loop_start(L);
    *out = L;
    return 0;
}

static void store_detach(struct hk_api_loop *L)
{
    if (L->sl)
        L->api->store->vt->loop_detach(L->sl);
    L->sl = NULL;
}

void hk_api_bg_begin(struct hk_api_loop *L)
{
    L->bg_ops++;
}

static void on_detach(uv_timer_t *t)
{
    struct hk_api_loop *L = t->data;
    store_detach(L);
    uv_close((uv_handle_t *)&L->detach_timer, NULL);
}

void hk_api_bg_end(struct hk_api_loop *L)
{
    /* The last one after a stop: detach on the next turn of the loop, not
     * from inside the store's own callback (the store is still using the
     * connection that answered). */
    if (--L->bg_ops == 0 && L->stopping)
        uv_timer_start(&L->detach_timer, on_detach, 0, 0);
}

static void loop_stop(void *data)
{
    struct hk_api_loop *L = data;
    /* First what submits store ops of its own: none starts from here on.
     * Those in flight finish, and the last one's end detaches the store
     * (the store's own handles keep the loop running until then). */
    L->stopping = true;
    hk_retention_loop_stop(L);
    hk_forward_loop_stop(L);
    hk_stream_loop_stop(L);
    if (L->bg_ops == 0) {
        store_detach(L);
        uv_close((uv_handle_t *)&L->detach_timer, NULL);
    }
    if (L->redis)
        hk_redis_detach(L->redis);
    L->redis = NULL;
    hk_obs_close(L->obs);
}

static void loop_free(void *data)
{
    struct hk_api_loop *L = data;
    if (!L)
        return;
    hk_ingress_loop_free(L);
    hk_retention_loop_free(L);
    hk_forward_loop_free(L);
    hk_stream_loop_free(L);
    gq_arena_cache_free(&L->gq_cache);
    hk_api_graphql_loop_free(L);
    hk_obs_free(L->obs);
    free(L);
}

static void on_begin(struct hk_req *r)
{
    struct hk_api_req *q = api_req(r);
    q->route = HK_ROUTE_UNROUTED;
    q->param = NULL;
    q->param_len = 0;
}

/* Route the request and run its handler, or answer 404/405. */
static void on_request(struct hk_req *r)
{
    struct hk_api_req *q = api_req(r);
    struct hk_match m;
    hk_route_match(hk_api_routes, hk_api_nroutes, r->path, r->path_len, r->method, &m);
    /* "/ui/" is "/ui" (OpenAPI paths end without a slash, so the table has
     * only the one): the same handler, and the same label in the metrics. */
    if (m.status == 404 && r->path_len == 4 && memcmp(r->path, "/ui/", 4) == 0)
        hk_route_match(hk_api_routes, hk_api_nroutes, "/ui", 3, r->method, &m);
    q->route = m.route;
    if (m.status && hk_ui_path(r->path, r->path_len)) {
        /* The inspector's headers on the router's refusals under /ui. */
        hk_api_ui_unrouted(r, m.status, m.allow);
        return;
    }
    if (m.status == 404) {
        /* Echo the path only when it is plain printable ASCII. */
        if (r->path_len <= 200 && hk_ascii_printable(r->path, r->path_len, 0x21))
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
    q->param = m.param;
    q->param_len = m.param_len;
    unsigned need = hk_api_routes[m.route].need;
    if (need)
        hk_api_gate(r, need);
    else
        hk_api_routes[m.route].handler(r);
}

static unsigned method_label(const struct hk_req *r, const struct hk_api_req *q)
{
    if (q->route == HK_ROUTE_UNROUTED)
        return HK_M_UNKNOWN;
    if (r->head)
        return HK_M_HEAD;
    switch (r->method) {
    case HTTP_GET: return HK_M_GET;
    case HTTP_POST: return HK_M_POST;
    case HTTP_PUT: return HK_M_PUT;
    case HTTP_DELETE: return HK_M_DELETE;
    case HTTP_PATCH: return HK_M_PATCH;
    case HTTP_OPTIONS: return HK_M_OPTIONS;
    case HTTP_TRACE: return HK_M_TRACE;
    case HTTP_CONNECT: return HK_M_CONNECT;
    default: return HK_M_OTHER;
    }
}

static void on_end(struct hk_req *r)
{
    struct hk_api_req *q = api_req(r);
    unsigned uri = hk_api_uri_of(q->route);
    bool routed = q->route != HK_ROUTE_UNROUTED;
    struct hk_obs_request o = {
        .uri = uri,
        .uri_name = hk_api_uri_name(uri),
        .method = method_label(r, q),
        .status = r->status,
        .bytes = r->resp_bytes,
        .dur_ns = hk_mono_ns() - r->start_ns,
        .path = routed ? r->path : NULL,
        .path_len = routed ? r->path_len : 0,
        .req_id = r->req_id,
        .req_id_len = r->req_id_len,
    };
    hk_obs_request(api_loop(r)->obs, &o);
    if (q->ing)
        hk_ingress_end(r);
    if (q->gq)
        hk_api_graphql_end(r);
    if (q->win_used) {
        hk_webhook_in_free(&q->win);
        q->win_used = false;
    }
}

void hk_api_refuse(struct hk_req *r, enum hk_reject why, int status, const char *detail_fmt, ...)
{
    char detail[512];
    va_list ap;
    va_start(ap, detail_fmt);
    vsnprintf(detail, sizeof detail, detail_fmt, ap);
    va_end(ap);
    hk_obs_rejected(api_loop(r)->obs, why);
    hk_resp_problem(r, status, NULL, "%s", detail);
}

void hk_api_store_begin(struct hk_req *r)
{
    api_req(r)->op_start_ns = hk_mono_ns();
}

void hk_api_store_end(struct hk_req *r, int kind, int status)
{
    hk_obs_store(api_loop(r)->obs, kind, status, hk_mono_ns() - api_req(r)->op_start_ns);
}

struct hk_api *hk_api_new(const struct hk_config *cfg, struct hk_store *store, uint64_t start_ns)
{
    struct hk_api *a = calloc(1, sizeof *a);
    if (!a)
        abort();
    a->cfg = cfg;
    a->store = store;
    a->start_ns = start_ns;
    /* One loop per thread, and at least one per inherited socket. */
    a->nloops = cfg->threads > cfg->n_listen_fds ? cfg->threads : cfg->n_listen_fds;
    atomic_init(&a->redis_up, 0);
    a->limiter = hk_limiter_new();
    pthread_mutex_init(&a->limiter_mu, NULL);
    a->app = (struct hk_app){
        .arg = a,
        .req_size = sizeof(struct hk_api_req),
        .loop_start = loop_start,
        .loop_stop = loop_stop,
        .loop_free = loop_free,
        .begin = on_begin,
        .request = on_request,
        .end = on_end,
        .keep_headers = hk_ingress_keep_headers,
        .head = hk_ingress_head,
        .body = hk_ingress_body,
        .drop = hk_ingress_drop,
    };
    if (cfg->sources_path)
        a->ingress = hk_ingress_new();
    /* The schema's type references are resolved now, not by the first query. */
    hk_api_graphql_init();
    return a;
}

int hk_api_start_outbound(struct hk_api *a, char *err, size_t errlen)
{
    if (hk_stream_new(a, &a->hub, err, errlen) < 0 || hk_forward_new(a, &a->fwd, err, errlen) < 0 ||
        hk_retention_new(a, &a->retention, err, errlen) < 0)
        return -1;
    return 0;
}

const struct hk_app *hk_api_app(struct hk_api *a)
{
    return &a->app;
}

void hk_api_free(struct hk_api *a)
{
    if (a->file_tokens)
        explicit_bzero(a->file_tokens, a->nfile_tokens * sizeof *a->file_tokens);
    free(a->file_tokens);
    if (a->redis)
        hk_redis_cfg_free(a->redis);
    hk_retention_free(a->retention);
    hk_forward_free(a->fwd);
    hk_stream_free(a->hub);
    hk_ingress_free(a->ingress);
    hk_limiter_free(a->limiter);
    pthread_mutex_destroy(&a->limiter_mu);
    free(a->redis);
    free(a);
}
