/* SPDX-License-Identifier: MIT
 * GET /q/metrics and /metrics: what only the application knows (route
 * labels, the store's gauges, the transport's counters) handed to obs/ as
 * plain values, rendered as Prometheus text. */
#include <stdlib.h>

#include "api/api_int.h"
#include "api/forward.h"
#include "api/ingress.h"
#include "api/retention.h"
#include "api/stream.h"
#include "obs/metrics.h"

/* Copy the ingress counters out (relaxed reads: a scrape is a snapshot in
 * time, not across counters). `rows` and `vals` are the caller's. */
static void ingress_in(struct hk_ingress *g, struct hk_metrics_ingress *out, struct hk_metrics_ingress_row *rows,
                       uint64_t *vals, const char **names, const char **rnames, const char **hnames,
                       uint64_t *hs)
{
    for (int k = 0; k < HK_IRES__COUNT; k++)
        names[k] = hk_ingress_result_name(k);
    for (int k = 0; k < HK_IR__COUNT; k++)
        rnames[k] = hk_ingress_reason_name(k);
    for (int k = 0; k < HK_HS__COUNT; k++) {
        hnames[k] = hk_handshake_name((enum hk_handshake)k);
        hs[k] = atomic_load_explicit(&g->handshakes[k], memory_order_relaxed);
    }
    pthread_mutex_lock(&g->mu);
    unsigned n = g->nslots;
    pthread_mutex_unlock(&g->mu);
    for (unsigned i = 0; i < n; i++) {
        struct hk_ingress_slot *sl = &g->slots[i];
        uint64_t *v = vals + (size_t)i * (HK_IRES__COUNT + HK_IR__COUNT);
        for (int k = 0; k < HK_IRES__COUNT; k++)
            v[k] = atomic_load_explicit(&sl->result[k], memory_order_relaxed);
        for (int k = 0; k < HK_IR__COUNT; k++)
            v[HK_IRES__COUNT + k] = atomic_load_explicit(&sl->reason[k], memory_order_relaxed);
        rows[i] = (struct hk_metrics_ingress_row){sl->name, v, v + HK_IRES__COUNT};
    }
    *out = (struct hk_metrics_ingress){
        .on = true,
        .rows = rows,
        .nrows = n,
        .result_names = names,
        .nresults = HK_IRES__COUNT,
        .reason_names = rnames,
        .nreasons = HK_IR__COUNT,
        .handshake_names = hnames,
        .handshakes = hs,
        .nhandshakes = HK_HS__COUNT,
        .inflight_bytes = atomic_load_explicit(&g->inflight, memory_order_relaxed),
        .reloads = atomic_load_explicit(&g->reloads, memory_order_relaxed),
        .reload_failures = atomic_load_explicit(&g->reload_failures, memory_order_relaxed),
    };
}

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
    struct hk_ingress *g = L->api->ingress;
    struct hk_metrics_ingress_row *rows = NULL;
    uint64_t *vals = NULL;
    const char *inames[HK_IRES__COUNT], *rnames[HK_IR__COUNT], *hnames[HK_HS__COUNT];
    uint64_t hs[HK_HS__COUNT];
    if (g) {
        rows = malloc(sizeof *rows * HK_INGRESS_SLOTS);
        vals = malloc(sizeof *vals * HK_INGRESS_SLOTS * (HK_IRES__COUNT + HK_IR__COUNT));
        if (!rows || !vals)
            abort();
        ingress_in(g, &in.ingress, rows, vals, inames, rnames, hnames, hs);
    }
    hk_metrics_render(hk_resp_body(r), &in, L->obs);
    /* The families of forwarding, the live feed and retention, which keep
     * their own counters (docs/forwarding.md). */
    hk_forward_metrics(L->api->fwd, hk_resp_body(r));
    hk_stream_metrics(L->api->hub, hk_resp_body(r));
    hk_retention_metrics(L->api->retention, hk_resp_body(r));
    free(rows);
    free(vals);
    hk_resp_send(r, 200, HK_METRICS_CT);
}
