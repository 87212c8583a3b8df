/* SPDX-License-Identifier: MIT
 * Retention (docs/forwarding.md): the rules from HOOKD_RETENTION,
 * HOOKD_MAX_ROWS, HOOKD_MAX_BYTES and the sources' `retention:`, applied
 * by a purge timer on loop 0 in small batches off the request path. */
#ifndef HK_API_RETENTION_H
#define HK_API_RETENTION_H

#include <stddef.h>

struct hk_api;
struct hk_api_loop;
struct hk_retention;
struct hk_buf;

/* The rules (before the loops start), from a->cfg. *out NULL when no rule
 * can ever apply: no HOOKD_RETENTION, HOOKD_MAX_ROWS or HOOKD_MAX_BYTES and
 * no sources file. With a sources file it is made even when no source has
 * `retention:` yet, so that a SIGHUP that adds one takes effect (a run
 * with nothing to apply submits nothing). The sources themselves are read
 * from a->ingress's current snapshot at the start of each run. Returns 0
 * (nothing here can fail; err is for symmetry with its siblings). */
int hk_retention_new(struct hk_api *a, struct hk_retention **out, char *err, size_t errlen);
void hk_retention_free(struct hk_retention *r);   /* NULL is fine; after every loop is freed */
/* Each loop, on its thread; the timer runs on loop 0 only (no-ops
 * elsewhere, and when a->retention is NULL). Its PURGE ops go through the
 * loop's store handle as background ops (hk_api_bg_begin/end). stop closes
 * the timer; a batch in flight completes and nothing more is submitted.
 * free releases what is left, after the loop's last run. */
void hk_retention_loop_start(struct hk_api_loop *L);
void hk_retention_loop_stop(struct hk_api_loop *L);
void hk_retention_loop_free(struct hk_api_loop *L);
/* Its families for /q/metrics (Prometheus text), appended to b; nothing
 * when r is NULL. Any loop's thread: the counters are read relaxed.
 *   hookd_retention_deleted_total  counter  rows deleted
 *   hookd_retention_runs_total     counter  runs ended (cut short or failed included)
 *   hookd_retention_errors_total   counter  batches the store failed or refused
 *   hookd_retention_run_seconds    gauge    the last run's duration
 *   hookd_store_bytes              gauge    the size the last PURGE reported (absent before one) */
void hk_retention_metrics(const struct hk_retention *r, struct hk_buf *b);

#endif
