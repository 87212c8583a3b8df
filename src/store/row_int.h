/* SPDX-License-Identifier: MIT
 * What both stores check of an ingress row (store.h: INSERT) before it goes
 * anywhere near the database, so that the two answer the same HK_EINVAL for
 * the same row, and PostgreSQL never sees a value it would refuse in a
 * group other ops share; a list's time bounds, read the same way by
 * both; and a SETTLE's outcome. Not for use outside src/store/. */
#ifndef HK_STORE_ROW_INT_H
#define HK_STORE_ROW_INT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/err.h"
#include "core/utf8.h"
#include "core/webhook.h"
#include "store/store.h"

/* Below PostgreSQL's largest field (1 GiB) and SQLite's default
 * SQLITE_MAX_LENGTH (10^9 bytes): a value past it is the caller's mistake,
 * answered the same on both stores. */
#define HK__ROW_FIELD_MAX ((size_t)1000000000)

/* A text column's value: absent (NULL), or UTF-8 without NUL, which
 * PostgreSQL's text can hold (SQLite could hold more; it is held to the
 * same rule so that a row moves between the two). */
static inline bool hk__row_text_ok(const char *p, size_t n)
{
    return !p || (n <= HK__ROW_FIELD_MAX && hk_utf8_valid(p, n, false));
}

/* An INSERT's row at submit: 0, or HK_EINVAL. What on_row will get of a
 * new row is this row, so it is made to read as GET will read it back:
 * an envelope row's ingress fields cleared (they are not stored), an
 * ingress row's payload cleared (the body is the payload) and its empty
 * body given a pointer. An envelope row is otherwise left to each store's
 * own checks, unchanged. An ingress row needs its source, event type and
 * digest, a body pointer unless the body is empty, and every text field as
 * hk__row_text_ok says. */
static inline int hk__row_begin(struct hk_store_op *op)
{
    static const uint8_t empty[1];
    struct hk_webhook *r = &op->row;
    /* What an INSERT stores of the delivery (store.h): pending with no
     * attempt yet, or none. The store sets next_us to received_us. */
    r->delivery = (struct hk_delivery){.state = r->delivery.state == HK_DLV_PENDING ? HK_DLV_PENDING
                                                                                      : HK_DLV_NONE};
    if (!r->delivery.state)
        op->fwd.owner = op->fwd.lease_us = 0;
    if (!r->ingress) {
        r->body = r->body_sha256 = NULL;
        r->body_len = 0;
        r->content_type = r->delivery_id = r->headers = r->verified = r->client_addr = NULL;
        r->content_type_len = r->delivery_id_len = r->headers_len = r->verified_len = 0;
        r->client_addr_len = 0;
        return 0;
    }
    r->payload = NULL;
    r->payload_len = 0;
    if (!r->source || !r->event_type || !r->body_sha256 || (!r->body && r->body_len > 0) ||
        r->body_len > HK__ROW_FIELD_MAX)
        return HK_EINVAL;
    if (!r->body)
        r->body = empty;
    return hk__row_text_ok(r->source, r->source_len) && hk__row_text_ok(r->event_type, r->event_type_len) &&
           hk__row_text_ok(r->content_type, r->content_type_len) &&
           hk__row_text_ok(r->delivery_id, r->delivery_id_len) &&
           hk__row_text_ok(r->headers, r->headers_len) && hk__row_text_ok(r->verified, r->verified_len) &&
           hk__row_text_ok(r->client_addr, r->client_addr_len)
               ? 0 : HK_EINVAL;
}

/* A list's time bound as both stores apply it (store.h, hk_list_query):
 * clamped to the dates an RFC 3339 time can name, which a PostgreSQL
 * timestamptz always holds. The caller passes only a set bound (not 0). */
static inline int64_t hk__list_time(int64_t us)
{
    return us < HK_STORE_LIST_TIME_MIN ? HK_STORE_LIST_TIME_MIN : us > HK_STORE_TIME_MAX ? HK_STORE_TIME_MAX : us;
}

/* A SETTLE's outcome as both stores take it (store.h): a state a settle
 * may write, or a batch of 1..HK_SETTLE_BATCH_MAX rows with ids, attempts
 * and HTTP statuses that could be real. */
static inline bool hk__settle_ok(const struct hk_store_op *op)
{
    if (op->fwd.ndelivered == 0)
        return op->row.delivery.state >= HK_DLV_PENDING && op->row.delivery.state <= HK_DLV_FAILED;
    if (op->fwd.ndelivered > HK_SETTLE_BATCH_MAX || !op->fwd.delivered)
        return false;
    for (size_t i = 0; i < op->fwd.ndelivered; i++) {
        const struct hk_settle_item *it = &op->fwd.delivered[i];
        if (it->id <= 0 || it->attempts < 1 || it->status < 100 || it->status > 999)
            return false;
    }
    return true;
}

#endif
