/* SPDX-License-Identifier: MIT
 * libFuzzer target: what forwarding parses or builds from data it does not
 * control (outbound/): the JSON check that decides a CloudEvent's data
 * member (whatever jansson accepts, it must accept too, NUL bytes aside), the sink's
 * Retry-After, and the CloudEvent of a row whose every field is hostile
 * (header lines printable ASCII or HTAB: no CR, LF or NUL; a structured body
 * that jansson reads back; the row's body byte for byte in binary mode). */
#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "core/buf.h"
#include "outbound/cloudevents.h"
#include "outbound/retry.h"

/* The next piece of the input: up to the next 0xff byte. */
static const char *piece(const uint8_t **p, const uint8_t *end, size_t *n)
{
    const uint8_t *s = *p;
    const uint8_t *e = memchr(s, 0xff, (size_t)(end - s));
    if (!e)
        e = end;
    *n = (size_t)(e - s);
    *p = e < end ? e + 1 : end;
    return (const char *)s;
}

static void check_encode(const uint8_t *data, size_t size, enum hk_ce_mode mode)
{
    const uint8_t *p = data, *end = data + size;
    struct hk_webhook w = {0};
    w.id = 1 + (int64_t)(size * 7919);
    w.received_us = INT64_C(1764612181123456);
    w.ingress = size % 2;
    w.source = piece(&p, end, &w.source_len);
    w.event_type = piece(&p, end, &w.event_type_len);
    size_t n;
    const char *x = piece(&p, end, &n);
    if (w.ingress) {
        w.body = (const uint8_t *)x;
        w.body_len = n;
        w.content_type = piece(&p, end, &w.content_type_len);
        w.delivery_id = piece(&p, end, &w.delivery_id_len);
        if (!w.delivery_id_len)
            w.delivery_id = NULL;
        if (!w.content_type_len)
            w.content_type = NULL;
    } else {
        w.payload = x;
        w.payload_len = n;
    }
    size_t tn;
    const char *tmpl = piece(&p, end, &tn);
    char tbuf[300];
    if (tn >= sizeof tbuf)
        tn = sizeof tbuf - 1;
    memcpy(tbuf, tmpl, tn);
    tbuf[tn] = '\0';
    static const char *const schemes[] = {NULL, "github", "gitlab", "stripe", "shopify", "gitea", "hmac", "none"};
    struct hk_ce_opts o = {.mode = mode, .type_template = tn ? tbuf : NULL, .scheme = schemes[size % 8]};
    struct hk_buf h = HK_BUF_INIT, b = HK_BUF_INIT;
    if (hk_ce_encode(&w, &o, &h, &b) == 0) {
        const char *lines[HK_CE_MAX_HEADERS];
        size_t nl = hk_ce_header_lines(&h, lines, HK_CE_MAX_HEADERS);
        if (nl == 0)
            abort();
        for (size_t i = 0; i < nl; i++)
            for (const unsigned char *c = (const unsigned char *)lines[i]; *c; c++)
                if ((*c < 0x20 && *c != 0x09) || *c > 0x7e)   /* HTAB is a field-value character */
                    abort();
        if (mode == HK_CE_STRUCTURED) {
            json_error_t e;
            json_t *j = json_loadb(b.p ? b.p : "", b.len, 0, &e);
            /* RFC 8259 numbers have no bound; jansson's do (1e999, 2^64). */
            if ((!j && !strstr(e.text, "overflow") && !strstr(e.text, "too big")) || (j && !json_is_object(j)))
                abort();
            json_decref(j);
        } else if (w.ingress && (b.len != w.body_len || (b.len && memcmp(b.p, w.body, b.len) != 0))) {
            abort();
        }
    }
    char type[HK_CE_TYPE_MAX + 1];
    size_t tl = hk_ce_type(&w, &o, type, sizeof type);
    if (tl > HK_CE_TYPE_MAX || strlen(type) != tl)
        abort();
    hk_buf_free(&h);
    hk_buf_free(&b);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size == 0)
        return 0;
    const uint8_t *rest = data + 1;
    size_t n = size - 1;
    switch (data[0] % 4) {
    case 0: {
        bool ours = hk_ce_is_json((const char *)rest, n);
        /* jansson's reader skips raw NUL bytes (fuzz_jscan.c says why):
         * such inputs are only run. */
        if (memchr(rest, 0, n))
            break;
        json_t *j = json_loadb((const char *)rest, n, JSON_DECODE_ANY, NULL);
        if (j && !ours)
            abort();   /* jansson read it: it is JSON */
        json_decref(j);
        break;
    }
    case 1: {
        int64_t ms = hk_retry_after_ms((const char *)rest, n, 1764612181);
        if (ms < -1)
            abort();
        break;
    }
    case 2:
        check_encode(rest, n, HK_CE_BINARY);
        break;
    default:
        check_encode(rest, n, HK_CE_STRUCTURED);
        break;
    }
    return 0;
}
