/* SPDX-License-Identifier: MIT
 * The optional access log (HOOKD_ACCESS_LOG=1): one JSON line per request on
 * stderr, collected per worker and written by libuv's thread pool, so a slow
 * or blocked stderr never stalls an event loop. */
#ifndef HK_ACCESS_LOG_H
#define HK_ACCESS_LOG_H

#include <stdint.h>
#include <uv.h>

#include "obs/request.h"

struct hk_access_log;

/* On the loop's thread. Aborts on OOM. */
struct hk_access_log *hk_access_log_new(uv_loop_t *loop);
/* Append the line for a finished request; `method` is its label. Lines are
 * written within ~100 ms, or sooner when 32 KiB are waiting. Beyond 1 MiB
 * waiting (stderr not keeping up) lines are dropped and counted. */
void hk_access_log_request(struct hk_access_log *a, const struct hk_obs_request *q, const char *method);
/* Lines dropped so far (any thread: a relaxed read). */
uint64_t hk_access_log_dropped(struct hk_access_log *a);
/* Close the timer (before the loop's last run; a write in flight finishes). */
void hk_access_log_close(struct hk_access_log *a);
/* After the loop's last run: write what is left (blocking), free. */
void hk_access_log_free(struct hk_access_log *a);

#endif
