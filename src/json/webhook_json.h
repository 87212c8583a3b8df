/* SPDX-License-Identifier: MIT
 * JSON for webhooks: decode + validate a create request (jansson), and encode
 * a WebhookResponse straight into an output buffer. */
#ifndef HK_WEBHOOK_JSON_H
#define HK_WEBHOOK_JSON_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

#include "core/buf.h"
#include "core/webhook.h"

#define HK_SOURCE_MAX 255      /* characters (Unicode code points) */
#define HK_EVENT_TYPE_MAX 100
#define HK_MAX_VIOLATIONS 8

struct hk_violation {
    const char *field;         /* static strings */
    const char *message;
};

enum hk_decode_result {
    HK_DECODE_OK = 0,
    HK_DECODE_SYNTAX = 1,      /* not JSON: err_* set */
    HK_DECODE_INVALID = 2,     /* JSON, but violations (or not an object) */
};

struct hk_webhook_in {
    json_t *root;              /* owns the strings `row` points to */
    struct hk_webhook row;     /* source, event_type, payload (NULL if null/absent) */
    struct hk_violation v[HK_MAX_VIOLATIONS];
    int nv;
    /* HK_DECODE_SYNTAX: jansson's message and where it stopped. */
    char err_text[160];
    int err_line, err_column;
    size_t err_position;       /* byte offset */
};

/* Parse `len` bytes of `body` and validate them as a WebhookRequest:
 * source and eventType not blank (whitespace only counts as blank), at most
 * HK_SOURCE_MAX / HK_EVENT_TYPE_MAX characters; payload a string, null or
 * absent; unknown fields ignored; a body that is not an object is one
 * violation on field "" ("must be a JSON object"). Invalid UTF-8 and \u0000
 * are syntax errors. Every violated field is listed, in the order
 * source, eventType, payload. `in` must be released with
 * hk_webhook_in_free() whatever the result. */
/* Seed jansson's object hashing now, at start: it reads /dev/urandom the
 * first time an object is made, which would otherwise be the first
 * request's work. */
void hk_json_init(void);

enum hk_decode_result hk_webhook_decode(const char *body, size_t len, struct hk_webhook_in *in);
void hk_webhook_in_free(struct hk_webhook_in *in);

/* Append the WebhookResponse JSON object for `w`. An envelope row
 * (w->ingress false; the ingress fields are not read):
 * {"id":1,"source":"...","eventType":"...","payload":"..."|null,
 *  "receivedAt":"2026-11-29T19:03:01.123456Z","processingMode":"event-loop"}
 * An ingress row (docs/ingress.md) has the same members in the same order,
 * then, in this order:
 *  "ingress":true,
 *  "contentType":"..."|null,
 *  "deliveryId":"..."|null,
 *  "verified":{...}|null      the stored object's text as it is (NULL: null),
 *  "headers":{...}            the stored object's text as it is (NULL: {}),
 *  "bodyBytes":123,
 *  "bodySha256":"<64 lower-case hex digits>"|null,
 *  "clientAddress":"..."|null
 * Its "payload" is not w->payload but the body as a string when the content
 * type is textual (text/x; application/json, xml, x-www-form-urlencoded, or
 * a +json or +xml subtype; parameters such as "; charset=utf-8" and case
 * ignored) and the bytes are valid UTF-8 without NUL; otherwise null (no
 * content type included). A verified or headers text that is not braced
 * {...} counts as absent. Strings are escaped; raw objects are trusted to be
 * JSON (the API layer writes them). */
void hk_webhook_encode(struct hk_buf *b, const struct hk_webhook *w);
/* The "payload" hk_webhook_encode shows for `w` (borrowed from w): false
 * (and *p NULL) when it is null. */
bool hk_webhook_payload(const struct hk_webhook *w, const char **p, size_t *n);

#endif
