/* SPDX-License-Identifier: MIT
 * The webhook record every layer passes around: the store stores it, json/
 * decodes and encodes it, api/ moves it between them. */
#ifndef HK_WEBHOOK_H
#define HK_WEBHOOK_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* A webhook's forwarding state (docs/forwarding.md). */
enum hk_delivery_state {
    HK_DLV_NONE = 0,       /* not forwarded: forwarding was off when it was stored */
    HK_DLV_PENDING = 1,    /* waiting for its next attempt (or in one) */
    HK_DLV_DELIVERED = 2,  /* a sink answered 2xx */
    HK_DLV_FAILED = 3,     /* dead-lettered: a permanent refusal, or out of attempts or age */
};

struct hk_delivery {
    uint8_t state;             /* enum hk_delivery_state */
    int32_t attempts;          /* attempts made */
    int32_t last_status;       /* the sink's last HTTP status; 0: none (no attempt, or no answer) */
    const char *last_error;    /* the last attempt's error (short text); NULL: none */
    size_t last_error_len;
    int64_t next_us;           /* PENDING: not before (unix microseconds) */
    int64_t updated_us;        /* when the last attempt ended; 0: none */
};

/* A row as the API sees it. Strings are not NUL-terminated; `payload` is NULL
 * for a JSON null payload. In a row handed to a callback, every pointer is
 * borrowed until that callback returns. */
struct hk_webhook {
    int64_t id;
    const char *source;
    size_t source_len;
    const char *event_type;
    size_t event_type_len;
    const char *payload;
    size_t payload_len;
    int64_t received_us;   /* unix microseconds */
    /* A delivery to POST /hooks/{source} (docs/ingress.md). For an envelope
     * post (POST /api/webhooks) `ingress` is false and the rest is NULL/0. */
    bool ingress;
    const uint8_t *body;   /* the raw body, byte-exact (may be empty, then any pointer) */
    size_t body_len;
    const uint8_t *body_sha256;    /* 32 bytes */
    const char *content_type;      /* as sent; NULL when absent */
    size_t content_type_len;
    const char *delivery_id;       /* NULL when none; unique with `source` */
    size_t delivery_id_len;
    const char *headers;           /* a JSON object (kept headers, lower-case names); NULL: none */
    size_t headers_len;
    const char *verified;          /* a JSON object {"scheme":…,"secret":"env:…"}; NULL: scheme none */
    size_t verified_len;
    const char *client_addr;       /* printable address */
    size_t client_addr_len;
    struct hk_delivery delivery;   /* state NONE and the rest 0/NULL unless forwarded */
};

#endif
