/* SPDX-License-Identifier: MIT
 * A stored row as a CloudEvent 1.0 HTTP request (docs/forwarding.md
 * "Sending"): the binary or the structured content mode of the HTTP protocol
 * binding, and the ce-type a row gets. Knows rows only through
 * core/webhook.h; writes into the caller's buffers and allocates nothing
 * else. */
#ifndef HK_CLOUDEVENTS_H
#define HK_CLOUDEVENTS_H

#include <stdbool.h>
#include <stddef.h>

#include "core/buf.h"
#include "core/webhook.h"

enum hk_ce_mode { HK_CE_BINARY, HK_CE_STRUCTURED };

#define HK_CE_TYPE_MAX 256      /* bytes of a ce-type, longer ones are cut */
#define HK_CE_MAX_HEADERS 8     /* header lines hk_ce_encode writes, at most */

/* Everything is borrowed for the call. */
struct hk_ce_opts {
    enum hk_ce_mode mode;
    /* The source's `forward.type`: "{event}" and "{source}" are replaced
     * by the row's event type and source, everything else kept; NULL: by
     * the scheme (hk_ce_type). */
    const char *type_template;
    /* The ingress scheme of the row's source as hookd spells it
     * ("github", "gitea", "standard-webhooks", "hmac", ...); NULL for
     * envelopes and for a source no longer in the sources file. */
    const char *scheme;
    /* Prepended to the row id in ce-id (a database identity, so that a
     * sink fed by several databases can deduplicate); NULL: none. */
    const char *id_prefix;
};

/* "binary" or "structured" (HOOKD_FORWARD_MODE). Returns 0, or HK_EINVAL. */
int hk_ce_mode_parse(const char *s, enum hk_ce_mode *out);

/* Append the request for `row` to `headers` and `body`.
 *
 * `headers` gets header lines, each "Name: value" followed by a NUL byte
 * (at most HK_CE_MAX_HEADERS of them); hk_ce_header_lines points at them
 * once the buffer is complete. Binary mode: ce-specversion, ce-id,
 * ce-source, ce-type, ce-time, ce-subject, ce-hookddeliveryid (when the
 * row has a delivery id), and Content-Type when the data has one; every
 * ce- value percent-encoded as the HTTP binding (3.1.3.2) says, so no
 * space, quote, percent, control or non-ASCII byte reaches a header.
 * Structured mode: one line, Content-Type: application/cloudevents+json.
 *
 * The data: an ingress row's raw body with its stored Content-Type; an
 * envelope's payload string, application/json when it is JSON text, else
 * text/plain; none for a NULL payload. In structured mode it is `data`
 * (the JSON text as it is) when the content type is JSON and the bytes
 * are JSON, else `data_base64`.
 *
 * Attribute strings are made valid first: invalid UTF-8 and control
 * characters (C0, DEL, C1, which CloudEvents attributes may not hold)
 * become U+FFFD, in both modes alike.
 *
 * Returns 0, or HK_EINVAL without writing anything when the row cannot be
 * sent as it is (a stored Content-Type that is not printable ASCII, which
 * no HTTP request could have carried) or `o->mode` is unknown. */
int hk_ce_encode(const struct hk_webhook *row, const struct hk_ce_opts *o, struct hk_buf *headers,
                 struct hk_buf *body);

/* Point lines[0..] at the NUL-terminated lines of a buffer hk_ce_encode
 * (or the caller, the same way) filled. The pointers are valid until the
 * buffer next changes. Returns the number of lines, at most `cap`. */
size_t hk_ce_header_lines(const struct hk_buf *headers, const char **lines, size_t cap);

/* The ce-type of `row` into out (NUL-terminated, cut at HK_CE_TYPE_MAX
 * bytes and at cap - 1). Returns its length.
 *
 * With a template, "{event}" and "{source}" are replaced. Without one, by
 * the scheme: github com.github.<event>; gitea io.gitea., org.forgejo. or
 * io.gogs. (the kept X-Forgejo-Event / X-Gitea-Event / X-Gogs-Event
 * header tells which); gitlab com.gitlab.<event> lower-cased, spaces as
 * "_" ("Push Hook" -> push_hook); stripe com.stripe.; shopify com.shopify.
 * with "/" as "." (orders/create -> orders.create); slack com.slack.;
 * standard-webhooks dev.hookd.standardwebhooks.; discord com.discord.;
 * twitch tv.twitch.; zoom us.zoom.; meta com.meta.; twilio com.twilio.;
 * hmac, token, none and unknown schemes dev.hookd.<source>.<event>;
 * envelopes dev.hookd.webhook.<event>. An empty event type is "unknown".
 * Every character outside [A-Za-z0-9._-] then becomes "_" (one per
 * character, however many bytes it takes). */
size_t hk_ce_type(const struct hk_webhook *row, const struct hk_ce_opts *o, char *out, size_t cap);

/* Is p[0..n) one JSON text (RFC 8259: any value, whitespace around it,
 * valid UTF-8)? A validating scan without allocation; nesting deeper than
 * 4096 counts as not JSON. */
bool hk_ce_is_json(const char *p, size_t n);

#endif
