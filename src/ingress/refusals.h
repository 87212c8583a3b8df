/* SPDX-License-Identifier: MIT
 * The most recent refused deliveries (POST /hooks/{source} answered with a
 * refusal), for the inspector's "why did it not verify" (docs/ui.md): one
 * process-wide ring of HK_REFUSALS_MAX fixed-size records under a mutex
 * (loops on every thread push), each numbered by a sequence that only
 * grows. Fixed memory: nothing is allocated per refusal, long fields are
 * cut. A record holds what the sender sent and why it was refused, never
 * a secret or an expected signature: callers fill it with names, the
 * kept headers and the refusal's public detail only. */
#ifndef HK_INGRESS_REFUSALS_H
#define HK_INGRESS_REFUSALS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/buf.h"
#include "ingress/sources.h"

#define HK_REFUSALS_MAX 256
#define HK_REFUSAL_HEADERS_MAX 2048    /* bytes of the headers' JSON object */

struct hk_refusal {
    uint64_t seq;              /* set by hk_refusals_push: 1, 2, ... */
    int64_t time_us;           /* wall clock */
    int status;                /* the HTTP status answered */
    int64_t skew_s;            /* has_skew: the timestamp's distance from the clock */
    int64_t body_bytes;        /* read whole: its size; else the announced length; -1: unknown */
    bool has_skew;
    bool source_known;         /* a source has this name */
    bool body_read;            /* the whole body was read (body_sha256 is its hash) */
    bool headers_truncated;    /* headers beyond HK_REFUSAL_HEADERS_MAX were left out */
    uint8_t body_sha256[32];
    /* NUL-terminated UTF-8 (hk_refusal_set); "" when absent. */
    char source[HK_SOURCE_NAME_MAX + 1];
    char reason[32];           /* the problem document's stable reason */
    char scheme[24];
    char detail[256];          /* the problem document's detail */
    char event_type[128];
    char delivery_id[256];
    char content_type[128];
    char client_addr[48];
    char headers[HK_REFUSAL_HEADERS_MAX + 1]; /* a JSON object's text, or "" */
};

/* Copy n bytes of `src` into dst (cap bytes with the NUL): cut at a
 * character boundary when too long; a byte that does not start a
 * well-formed UTF-8 character, or a control character, becomes '?'. */
void hk_refusal_set(char *dst, size_t cap, const char *src, size_t n);

/* Copy *e into the ring (the oldest record gives way) and number it.
 * Returns its sequence number. Any thread. */
uint64_t hk_refusals_push(const struct hk_refusal *e);

/* Append to b a JSON array of the records held, newest first: at most
 * `limit` (1..HK_REFUSALS_MAX), only those of source `source` (NULL: any),
 * and with `has_after` only those numbered above `after` - the `limit`
 * just above it (so a poller that passes the highest number it saw misses
 * nothing the ring still holds). Any thread. */
void hk_refusals_render(struct hk_buf *b, const char *source, size_t source_len, bool has_after, uint64_t after,
                        unsigned limit);

/* Forget every record (tests). The numbering goes on. */
void hk_refusals_clear(void);

#endif
