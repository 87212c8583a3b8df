/* SPDX-License-Identifier: MIT
 * The optional access log (HOOKD_ACCESS_LOG=1): one JSON line per request on
 * stderr, collected per worker and written by libuv's thread pool, so a slow
 * or blocked stderr never stalls an event loop. */
#ifndef HK_ACCESS_LOG_H
#define HK_ACCESS_LOG_H

#include <stdint.h>

struct hk_worker;
struct hk_req;
struct hk_access_log;

/* On the worker's loop thread. Aborts on OOM. */
struct hk_access_log *hk_access_log_new(struct hk_worker *w);
/* Append the line for a finished request; `route` is its uri label. Lines
 * are written within ~100 ms, or sooner when 32 KiB are waiting. Beyond
 * 1 MiB waiting (stderr not keeping up) lines are dropped and counted. */
void hk_access_log_request(struct hk_access_log *a, const struct hk_req *r, const char *route,
                           uint64_t dur_ns);
/* Close the timer (before the loop's last run; a write in flight finishes). */
void hk_access_log_close(struct hk_access_log *a);
/* After the loop's last run: write what is left (blocking), free. */
void hk_access_log_free(struct hk_access_log *a);

#endif
