/* SPDX-License-Identifier: MIT
 * Forwarding (docs/forwarding.md): every stored webhook to the sink as a
 * CloudEvent, through the outbox in the webhooks table, with retries. */
#ifndef HK_API_FORWARD_H
#define HK_API_FORWARD_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/webhook.h"

struct hk_api;
struct hk_api_loop;
struct hk_forwarder;
struct hk_store_op;
struct hk_buf;

/* From the configuration (before the loops start): *out NULL when no sink
 * is configured. 0, or -1 with one line in err (a bad URL, libcurl missing). */
int hk_forward_new(struct hk_api *a, struct hk_forwarder **out, char *err, size_t errlen);
void hk_forward_free(struct hk_forwarder *f);   /* NULL is fine */
void hk_forward_loop_start(struct hk_api_loop *L);
void hk_forward_loop_stop(struct hk_api_loop *L);
void hk_forward_loop_free(struct hk_api_loop *L);
/* Before an INSERT (op->row filled): sets op->row.delivery.state when the
 * row is to be forwarded, and leases it to this process (op->fwd) when a
 * slot and the memory to send it at once were free. */
void hk_forward_prepare_insert(struct hk_api_loop *L, struct hk_store_op *op);
/* In that INSERT's on_row (the row committed): sends it at once when the
 * insert took a lease (not for a replayed one). `row` is borrowed for the
 * call. */
void hk_forward_inserted(struct hk_api_loop *L, struct hk_store_op *op, const struct hk_webhook *row);
/* In its on_done, or when submit failed: gives back what prepare reserved
 * and no send took. Always call it after prepare. */
void hk_forward_insert_end(struct hk_api_loop *L, struct hk_store_op *op);
/* A redelivery was queued: claim soon. */
void hk_forward_wake(struct hk_api_loop *L);
/* Its families for /q/metrics. */
void hk_forward_metrics(const struct hk_forwarder *f, struct hk_buf *b);

#endif
