/* SPDX-License-Identifier: MIT
 * The ring of recent refused deliveries (refusals.h): a static array of
 * fixed-size records, a counter, one mutex. Pushing copies a record in;
 * rendering writes the chosen ones as JSON while holding the lock (a few
 * hundred records at most, read rarely: the inspector polls). */
#include "ingress/refusals.h"

#include <pthread.h>
#include <string.h>

#include "core/ascii.h"
#include "core/utf8.h"

static struct {
    pthread_mutex_t mu;
    uint64_t next;             /* the number the next record gets, from 1 */
    uint64_t cleared;          /* records numbered up to this are forgotten */
} ring = {.mu = PTHREAD_MUTEX_INITIALIZER, .next = 1};
/* The records, under ring.mu. Apart from `ring`, whose initialiser would
 * put all of them (some 770 KB) into the binary's data instead of its
 * zero-filled bss. */
static struct hk_refusal records[HK_REFUSALS_MAX];

void hk_refusal_set(char *dst, size_t cap, const char *src, size_t n)
{
    if (!cap)
        return;
    size_t o = 0;
    const unsigned char *s = (const unsigned char *)src;
    for (size_t i = 0; src && i < n;) {
        uint32_t cp = 0;
        size_t len = hk_utf8_seq(s + i, n - i, &cp);
        if (len == 0 || cp < 0x20 || cp == 0x7f) {
            /* One byte, shown as '?'. */
            if (o + 1 >= cap)
                break;
            dst[o++] = '?';
            i++;
            continue;
        }
        if (o + len >= cap)
            break;   /* a whole character or nothing */
        memcpy(dst + o, s + i, len);
        o += len;
        i += len;
    }
    dst[o] = '\0';
}

uint64_t hk_refusals_push(const struct hk_refusal *e)
{
    pthread_mutex_lock(&ring.mu);
    uint64_t seq = ring.next++;
    struct hk_refusal *d = &records[seq % HK_REFUSALS_MAX];
    *d = *e;
    d->seq = seq;
    pthread_mutex_unlock(&ring.mu);
    return seq;
}

void hk_refusals_clear(void)
{
    pthread_mutex_lock(&ring.mu);
    ring.cleared = ring.next - 1;
    pthread_mutex_unlock(&ring.mu);
}

static void put_str_or_null(struct hk_buf *b, const char *s)
{
    if (*s)
        hk_buf_put_json_str(b, s, strlen(s));
    else
        hk_buf_puts(b, "null");
}

static void render_one(struct hk_buf *b, const struct hk_refusal *e)
{
    hk_buf_puts(b, "{\"seq\":");
    hk_buf_put_u64(b, e->seq);
    hk_buf_puts(b, ",\"receivedAt\":\"");
    hk_buf_put_iso_us(b, e->time_us);
    hk_buf_puts(b, "\",\"source\":");
    hk_buf_put_json_str(b, e->source, strlen(e->source));
    hk_buf_puts(b, e->source_known ? ",\"sourceKnown\":true" : ",\"sourceKnown\":false");
    hk_buf_puts(b, ",\"status\":");
    hk_buf_put_u64(b, (uint64_t)e->status);
    hk_buf_puts(b, ",\"reason\":");
    hk_buf_put_json_str(b, e->reason, strlen(e->reason));
    hk_buf_puts(b, ",\"detail\":");
    hk_buf_put_json_str(b, e->detail, strlen(e->detail));
    if (e->has_skew) {
        hk_buf_puts(b, ",\"skewSeconds\":");
        hk_buf_put_i64(b, e->skew_s);
    }
    hk_buf_puts(b, ",\"scheme\":");
    put_str_or_null(b, e->scheme);
    hk_buf_puts(b, ",\"eventType\":");
    put_str_or_null(b, e->event_type);
    hk_buf_puts(b, ",\"deliveryId\":");
    put_str_or_null(b, e->delivery_id);
    hk_buf_puts(b, ",\"contentType\":");
    put_str_or_null(b, e->content_type);
    hk_buf_puts(b, ",\"bodyBytes\":");
    if (e->body_bytes >= 0)
        hk_buf_put_i64(b, e->body_bytes);
    else
        hk_buf_puts(b, "null");
    hk_buf_puts(b, e->body_read ? ",\"bodyRead\":true" : ",\"bodyRead\":false");
    hk_buf_puts(b, ",\"bodySha256\":");
    hk_buf_put_json_hex(b, e->body_read ? e->body_sha256 : NULL, 32);
    hk_buf_puts(b, ",\"clientAddress\":");
    put_str_or_null(b, e->client_addr);
    /* The headers' JSON was rendered by the caller, whole headers only. */
    hk_buf_puts(b, ",\"headers\":");
    hk_buf_puts(b, e->headers[0] == '{' ? e->headers : "{}");
    hk_buf_puts(b, e->headers_truncated ? ",\"headersTruncated\":true}" : ",\"headersTruncated\":false}");
}

void hk_refusals_render(struct hk_buf *b, const char *source, size_t source_len, bool has_after, uint64_t after,
                        unsigned limit)
{
    uint16_t pick[HK_REFUSALS_MAX];
    unsigned n = 0;
    if (limit > HK_REFUSALS_MAX)
        limit = HK_REFUSALS_MAX;
    pthread_mutex_lock(&ring.mu);
    uint64_t last = ring.next - 1;
    uint64_t first = last >= HK_REFUSALS_MAX ? last - HK_REFUSALS_MAX + 1 : 1;
    if (first <= ring.cleared)
        first = ring.cleared + 1;
    if (has_after && after >= first)
        first = after + 1;
    /* Without `after`: the newest `limit`, walking down. With it: the
     * `limit` just above it, walking up (then listed the other way). */
    for (uint64_t k = 0; k + first <= last && n < limit; k++) {
        uint64_t seq = has_after ? first + k : last - k;
        const struct hk_refusal *e = &records[seq % HK_REFUSALS_MAX];
        if (source && (strlen(e->source) != source_len || memcmp(e->source, source, source_len) != 0))
            continue;
        pick[n++] = (uint16_t)(seq % HK_REFUSALS_MAX);
    }
    hk_buf_putc(b, '[');
    for (unsigned i = 0; i < n; i++) {
        if (i)
            hk_buf_putc(b, ',');
        render_one(b, &records[pick[has_after ? n - 1 - i : i]]);
    }
    hk_buf_putc(b, ']');
    pthread_mutex_unlock(&ring.mu);
}
