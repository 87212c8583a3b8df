/* SPDX-License-Identifier: MIT
 * The live feed (docs/forwarding.md): GET /api/webhooks/stream as
 * Server-Sent Events, and the hub that publishes stored rows in id order
 * to every loop's clients. */
#ifndef HK_API_STREAM_H
#define HK_API_STREAM_H

#include <stddef.h>
#include <stdint.h>

struct hk_api;
struct hk_api_loop;
struct hk_stream_hub;
struct hk_req;
struct hk_buf;

/* The process's hub (before the loops start): 0, or -1 with one line in err. */
int hk_stream_new(struct hk_api *a, struct hk_stream_hub **out, char *err, size_t errlen);
void hk_stream_free(struct hk_stream_hub *h);   /* NULL is fine; after every loop stopped */
/* Each loop, on its thread: start (never fails; a NULL hub: no feed, the
 * route answers 503), stop (every stream ends, handles close), free. */
void hk_stream_loop_start(struct hk_api_loop *L);
void hk_stream_loop_stop(struct hk_api_loop *L);
void hk_stream_loop_free(struct hk_api_loop *L);
/* A row this process stored (any loop, on that loop's thread): wakes the hub. */
void hk_stream_committed(struct hk_api_loop *L, int64_t id);
/* GET /api/webhooks/stream */
void hk_api_stream(struct hk_req *r);
/* Its families for /q/metrics (Prometheus text), appended to b. */
void hk_stream_metrics(const struct hk_stream_hub *h, struct hk_buf *b);

#endif
