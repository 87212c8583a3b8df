/* SPDX-License-Identifier: MIT
 * The webhook record every layer passes around: the store stores it, json/
 * decodes and encodes it, api/ moves it between them. */
#ifndef HK_WEBHOOK_H
#define HK_WEBHOOK_H

#include <stddef.h>
#include <stdint.h>

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
};

#endif
