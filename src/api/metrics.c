/* SPDX-License-Identifier: MIT
 * GET /q/metrics and /metrics: what only the application knows (route
 * labels, the store's gauges, the transport's counters) handed to obs/ as
 * plain values, rendered as Prometheus text. */
#include "api/api_int.h"
#include "obs/metrics.h"

void hk_api_metrics(struct hk_req *r)
{
    struct hk_api_loop *L = api_loop(r);
    struct hk_store *store = L->api->store;
    const char *names[HK_API_NURI(64)];
    unsigned nuri = HK_API_NURI(hk_api_nroutes);
    if (nuri > sizeof names / sizeof names[0])
        nuri = sizeof names / sizeof names[0];
    for (unsigned i = 0; i < nuri; i++)
        names[i] = hk_api_uri_name(i);
    struct hk_store_stats st = {-1, -1, -1, -1};
    if (store->vt->stats)
        store->vt->stats(store, &st);
    struct hk_http_totals t;
    hk_worker_totals(L->w, &t);
    struct hk_metrics_in in = {
        .uri_names = names,
        .nuri = nuri,
        .top_sources = (unsigned)L->api->cfg->metrics_top_sources,
        .backend = store->vt->name,
        .store_conns_open = st.conns_open,
        .store_conns_busy = st.conns_busy,
        .store_queue_depth = st.queue_depth,
        .store_queue_capacity = st.queue_capacity,
        .http = {t.accepted, t.closed, t.rejected, t.evicted, t.shed, t.accept_failed, t.bytes_in, t.bytes_out},
    };
    hk_metrics_render(hk_resp_body(r), &in, L->obs);
    hk_resp_send(r, 200, HK_METRICS_CT);
}
