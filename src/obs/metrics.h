/* SPDX-License-Identifier: MIT
 * The Prometheus text exposition (format 0.0.4): every loop's counters
 * summed at scrape time, plus the values the caller hands in (transport
 * counters, store gauges, route labels). */
#ifndef HK_METRICS_H
#define HK_METRICS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/buf.h"

struct hk_obs;

#define HK_METRICS_CT "text/plain; version=0.0.4; charset=utf-8"

/* Transport counters, summed over the loops. */
struct hk_metrics_http {
    uint64_t accepted, closed, rejected, evicted, shed, accept_failed, bytes_in, bytes_out;
};

/* Ingress counters (POST /hooks/{source}) per source name. */
struct hk_metrics_ingress_row {
    const char *source;
    const uint64_t *result;    /* nresults counts */
    const uint64_t *reason;    /* nreasons counts */
};
struct hk_metrics_ingress {
    bool on;                   /* a sources file is configured */
    const struct hk_metrics_ingress_row *rows;
    size_t nrows;
    const char *const *result_names;
    unsigned nresults;
    const char *const *reason_names;
    unsigned nreasons;
    const char *const *handshake_names;
    const uint64_t *handshakes;
    unsigned nhandshakes;
    uint64_t inflight_bytes, reloads, reload_failures;
};

/* What the caller knows and observability does not. */
struct hk_metrics_in {
    const char *const *uri_names;  /* label of uri index i (0 and 1 are fixed: UNKNOWN, NOT_FOUND) */
    unsigned nuri;
    unsigned top_sources;          /* sources named in hookd_webhooks_received_total; the rest "other" */
    const char *backend;           /* store backend label */
    /* Store gauges; -1 where the store cannot tell. */
    int64_t store_conns_open, store_conns_busy, store_queue_depth, store_queue_capacity;
    struct hk_metrics_http http;
    struct hk_metrics_ingress ingress;
};

/* Append the whole exposition to `b`: the request metrics of every
 * registered loop, the caller's values, process metrics and build info.
 * `self` is the calling loop's hk_obs (NULL: none): its copy of the
 * process_* families is reused for up to a second, which saves the eight
 * system calls they take on most scrapes of a fast scraper. */
void hk_metrics_render(struct hk_buf *b, const struct hk_metrics_in *in, struct hk_obs *self);

#endif
