/* SPDX-License-Identifier: MIT
 * The Prometheus endpoint (/q/metrics, /metrics): every worker's counters
 * summed at scrape time, rendered as text exposition format 0.0.4. */
#ifndef HK_METRICS_H
#define HK_METRICS_H

#include "core/buf.h"

struct hk_req;
struct hk_store;
struct hk_obs;

#define HK_METRICS_CT "text/plain; version=0.0.4; charset=utf-8"

/* Append the whole exposition to `b`: the request metrics of every
 * registered worker, `store`'s gauges (NULL: none), process metrics and
 * build info. `top_sources` bounds the source label of
 * hookd_webhooks_received_total (the rest is source="other"). `self` is the
 * calling worker's hk_obs (NULL: none): its copy of the process_* families
 * is reused for up to a second, which saves the eight system calls they
 * take on most scrapes of a fast scraper. */
void hk_metrics_render(struct hk_buf *b, struct hk_store *store, unsigned top_sources, struct hk_obs *self);

/* GET /q/metrics and /metrics. */
void hk_api_metrics(struct hk_req *r);

#endif
