/* SPDX-License-Identifier: MIT
 * libFuzzer target: the create-request decoder and the response encoder.
 * Whatever decodes must encode to JSON that jansson reads back with the
 * same strings. */
#include <jansson.h>
#include <stdlib.h>
#include <string.h>

#include "json/webhook_json.h"

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
    return 0;
}
