/* SPDX-License-Identifier: MIT
 * libFuzzer target: the create-request decoder and the response encoder.
 * Whatever decodes must encode to JSON that jansson reads back with the
 * same strings. The raw input also goes through the encoder as an ingress
 * row's body (any bytes, with a JSON content type): the output must parse,
 * and its payload be the body exactly when the body is UTF-8 without NUL. */
#include <jansson.h>
#include <stdlib.h>
#include <string.h>

#include "core/utf8.h"
#include "json/webhook_json.h"

static void ingress_row(const uint8_t *data, size_t size)
{
    static const uint8_t digest[32];
    struct hk_webhook w = {
        .id = 7,
        .source = "gh",
        .source_len = 2,
        .event_type = "push",
        .event_type_len = 4,
        .ingress = true,
        .body = data,
        .body_len = size,
        .body_sha256 = digest,
        .content_type = "application/json; charset=utf-8",
        .content_type_len = 31,
        .headers = "{\"x-a\":\"b\"}",
        .headers_len = 11,
        .client_addr = "127.0.0.1",
        .client_addr_len = 9,
    };
    struct hk_buf b = HK_BUF_INIT;
    hk_webhook_encode(&b, &w);
    json_error_t e;
    json_t *back = json_loadb(b.p, b.len, 0, &e);
    if (!back)
        abort();
    json_t *pl = json_object_get(back, "payload");
    bool text = hk_utf8_valid((const char *)data, size, false);
    if (text ? (!json_is_string(pl) || json_string_length(pl) != size ||
                (size && memcmp(json_string_value(pl), data, size) != 0))
             : !json_is_null(pl))
        abort();
    if (json_integer_value(json_object_get(back, "bodyBytes")) != (json_int_t)size)
        abort();
    json_decref(back);
    hk_buf_free(&b);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct hk_webhook_in in;
    enum hk_decode_result r = hk_webhook_decode((const char *)data, size, &in);
    if (r == HK_DECODE_OK) {
        struct hk_buf b = HK_BUF_INIT;
        in.row.id = 1;
        in.row.received_us = 0;
        hk_webhook_encode(&b, &in.row);
        json_error_t e;
        json_t *back = json_loadb(b.p, b.len, 0, &e);
        if (!back)
            abort();
        json_t *src = json_object_get(back, "source");
        if (!json_is_string(src) || json_string_length(src) != in.row.source_len ||
            memcmp(json_string_value(src), in.row.source, in.row.source_len) != 0)
            abort();
        json_t *pl = json_object_get(back, "payload");
        if (in.row.payload ? (!json_is_string(pl) || json_string_length(pl) != in.row.payload_len ||
                              memcmp(json_string_value(pl), in.row.payload, in.row.payload_len) != 0)
                           : !json_is_null(pl))
            abort();
        json_decref(back);
        hk_buf_free(&b);
    }
    hk_webhook_in_free(&in);
    ingress_row(data, size);
    return 0;
}
