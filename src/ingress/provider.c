/* SPDX-License-Identifier: MIT
 * What a delivery says about itself (event type, delivery id) and the
 * handshakes providers make before sending events. Everything read here is
 * hostile until proven otherwise: values are bounded and checked before
 * they are kept or echoed, the JSON tree lives only for one call, and a
 * secret is used as a key but never copied into an answer. */
#include "ingress/provider.h"

#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <jansson.h>

#include "core/ascii.h"
#include "core/crypto.h"
#include "core/mediatype.h"
#include "core/utf8.h"
#include "ingress/jscan.h"

/* jansson refuses nesting deeper than this while parsing (recursion in
 * parse_value, and again in json_delete): 2048 in Debian's 2.14. A body
 * nested deeper fails to parse and yields nothing. Should a build ever
 * raise the limit past what a request thread's stack takes, fail here. */
_Static_assert(JSON_PARSER_MAX_DEPTH <= 4096, "jansson's nesting limit bounds the recursion on hostile bodies");

#define PUT_LIT(b, lit) hk_buf_put((b), lit, sizeof(lit) - 1)

static const char *const hs_names[HK_HS__COUNT] = {
    [HK_HS_NONE] = "none",
    [HK_HS_SLACK] = "slack",
    [HK_HS_DISCORD] = "discord",
    [HK_HS_TWITCH] = "twitch",
    [HK_HS_ZOOM] = "zoom",
    [HK_HS_META] = "meta",
    [HK_HS_GRAPH] = "graph",
};

const char *hk_handshake_name(enum hk_handshake k)
{
    return (unsigned)k < HK_HS__COUNT ? hs_names[k] : "none";
}

/* ---- Values ------------------------------------------------------------ */

/* Text that may be stored, shown and echoed: valid UTF-8 without NUL, and
 * no control character at all - C0, DEL, and C1 (U+0080..U+009F, encoded
 * C2 80..C2 9F) - so it cannot split a log line, a header or a terminal. */
static bool text_ok(const char *p, size_t n, size_t max)
{
    if (n == 0 || n > max || !hk_utf8_valid(p, n, false))
        return false;
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)p[i];
        if (c < 0x20 || c == 0x7f)
            return false;
        if (c == 0xc2 && i + 1 < n && (unsigned char)p[i + 1] < 0xa0)
            return false;    /* valid UTF-8 puts a continuation byte here: 0x80..0x9f is C1 */
    }
    return true;
}

/* The one value of a header: none when absent, sent twice (which of the
 * two would be the id?), or not text_ok after trimming optional
 * whitespace. Borrows the header's bytes. */
static bool hdr_value(const struct hk_hdrs *h, const char *name, size_t max, const char **out, size_t *out_len)
{
    if (!h || !h->get || !name)
        return false;
    size_t n = 0;
    unsigned count = 0;
    const char *p = h->get(h->ctx, name, &n, &count);
    if (!p || count > 1)
        return false;
    while (n > 0 && (*p == ' ' || *p == '\t'))
        p++, n--;
    while (n > 0 && (p[n - 1] == ' ' || p[n - 1] == '\t'))
        n--;
    if (!text_ok(p, n, max))
        return false;
    *out = p;
    *out_len = n;
    return true;
}

/* A body parsed at most once, and only when something asks for it. */
struct body {
    const void *p;
    size_t n;
    bool json;                 /* the content type says JSON */
    bool tried;
    json_t *root;              /* an object, or NULL */
};

static json_t *body_root(struct body *b)
{
    if (!b->tried) {
        b->tried = true;
        if (b->json && b->p && b->n > 0) {
            json_error_t err;
            /* No flags: trailing bytes, NUL in strings and integers that
             * overflow json_int_t all fail the parse, which means "none". */
            b->root = json_loadb(b->p, b->n, 0, &err);
            if (b->root && !json_is_object(b->root)) {
                json_decref(b->root);
                b->root = NULL;
            }
        }
    }
    return b->root;
}

/* Follow a dotted path ("event.type") through objects. NULL when a
 * segment is empty or missing, a step is not an object, or the path has
 * more than HK_META_PATH_MAX segments. */
static json_t *json_path(json_t *v, const char *path)
{
    const char *p = path;
    for (int depth = 0; v; depth++) {
        if (depth >= HK_META_PATH_MAX || !json_is_object(v))
            return NULL;
        const char *dot = strchr(p, '.');
        size_t len = dot ? (size_t)(dot - p) : strlen(p);
        if (len == 0)
            return NULL;
        v = json_object_getn(v, p, len);
        if (!dot)
            return v;
        p = dot + 1;
    }
    return NULL;
}

/* A real as the shortest of %.15g..%.17g that reads back to the same
 * double: 1.5 stays "1.5", 0.1 does not become 0.10000000000000001. */
static int put_real(double d, char *dst, size_t cap)
{
    int len = 0;
    for (int prec = 15; prec <= 17; prec++) {
        len = snprintf(dst, cap, "%.*g", prec, d);
        if (len > 0 && (size_t)len < cap && strtod(dst, NULL) == d)
            break;
    }
    return len;
}

/* Keep a JSON value as text in dst (HK_META_MAX + 1 bytes): a string as
 * it is, a number in decimal; anything else is none. */
static bool json_text(const json_t *v, char *dst, const char **out, size_t *out_len)
{
    size_t n;
    if (json_is_string(v)) {
        n = json_string_length(v);
        if (!text_ok(json_string_value(v), n, HK_META_MAX))
            return false;
        memcpy(dst, json_string_value(v), n);
    } else if (json_is_integer(v)) {
        int len = snprintf(dst, HK_META_MAX + 1, "%" PRId64, (int64_t)json_integer_value(v));
        if (len <= 0)
            return false;
        n = (size_t)len;
    } else if (json_is_real(v)) {
        int len = put_real(json_real_value(v), dst, HK_META_MAX + 1);
        if (len <= 0 || len > HK_META_MAX)
            return false;
        n = (size_t)len;
    } else {
        return false;
    }
    dst[n] = '\0';
    *out = dst;
    *out_len = n;
    return true;
}

/* One value at a dotted path, read by the scanner (jscan.h: no tree, no
 * allocation; it accepts and finds what jansson would), rendered as
 * json_text does. */
static bool field_value(struct body *b, const char *path, char *dst, const char **out, size_t *out_len)
{
    if (!path || !b->json || !b->p || b->n == 0)
        return false;
    struct hk_jscan_want w = {.path = path};
    if (hk_jscan(b->p, b->n, &w, 1) < 0)
        return false;
    char num[64];
    long n;
    switch (w.out.kind) {
    case HK_J_STRING:
        n = hk_jscan_string(&w.out, dst, HK_META_MAX);
        if (n < 0 || !text_ok(dst, (size_t)n, HK_META_MAX))
            return false;
        break;
    case HK_J_INT:
    case HK_J_REAL:
        if (w.out.n >= sizeof num)
            return false;
        memcpy(num, w.out.p, w.out.n);
        num[w.out.n] = 0;
        if (w.out.kind == HK_J_INT)
            n = snprintf(dst, HK_META_MAX + 1, "%" PRId64, (int64_t)strtoll(num, NULL, 10));
        else
            n = put_real(strtod(num, NULL), dst, HK_META_MAX + 1);
        if (n <= 0 || n > HK_META_MAX)
            return false;
        break;
    default:
        return false;
    }
    dst[n] = 0;
    *out = dst;
    *out_len = (size_t)n;
    return true;
}

/* Where one value is written: the result pointers and its half of buf. */
struct slot {
    const char **p;
    size_t *n;
    char *dst;
};

static bool from_hdr(const struct hk_hdrs *h, const char *name, struct slot s)
{
    return hdr_value(h, name, HK_META_MAX, s.p, s.n);
}

static bool from_field(struct body *b, const char *path, struct slot s)
{
    return field_value(b, path, s.dst, s.p, s.n);
}

/* The first of a list of headers that has a value (gitea's forks). */
static bool from_hdrs(const struct hk_hdrs *h, const char *const *names, size_t count, struct slot s)
{
    for (size_t i = 0; i < count; i++)
        if (from_hdr(h, names[i], s))
            return true;
    return false;
}

#define N_OF(a) (sizeof(a) / sizeof((a)[0]))

/* Discord sends two kinds of signed POSTs to an app (both ed25519):
 * - Interactions (discord.com/developers/docs/interactions/receiving-and-
 *   responding, "Interaction Type"): `type` 1 PING, 2 APPLICATION_COMMAND,
 *   3 MESSAGE_COMPONENT, 4 APPLICATION_COMMAND_AUTOCOMPLETE, 5 MODAL_SUBMIT,
 *   with the interaction's snowflake in `id`.
 * - Webhook events (discord.com/developers/docs/events/webhook-events,
 *   "Webhook Event Payloads": {"version":1,"application_id":…,"type":…,
 *   "event":{"type":"APPLICATION_AUTHORIZED","timestamp":…,"data":…}}),
 *   where `type` 0 is PING and 1 EVENT, the event body holding its type.
 * An `event` member tells the second kind from the first. */
static bool discord_type(struct body *b, struct slot s)
{
    static const char *const names[] = {"PING", "APPLICATION_COMMAND", "MESSAGE_COMPONENT",
                                        "APPLICATION_COMMAND_AUTOCOMPLETE", "MODAL_SUBMIT"};
    json_t *root = body_root(b);
    if (!root)
        return false;
    json_t *t = json_object_get(root, "type"), *ev = json_object_get(root, "event");
    if (!json_is_integer(t))
        return false;
    json_int_t type = json_integer_value(t);
    const char *name = NULL;
    if (ev) {
        if (type == 1 && json_is_object(ev))
            return json_text(json_object_get(ev, "type"), s.dst, s.p, s.n);
        return false;
    }
    if (type == 0)
        name = "PING";           /* the webhook-event PING carries no `event` */
    else if (type >= 1 && type <= (json_int_t)N_OF(names))
        name = names[type - 1];
    if (!name)
        return false;
    size_t n = strlen(name);
    memcpy(s.dst, name, n + 1);
    *s.p = s.dst;
    *s.n = n;
    return true;
}

static bool default_type(const struct hk_source *src, const struct hk_hdrs *h, struct body *b, struct slot s)
{
    static const char *const gitea[] = {"x-gitea-event", "x-forgejo-event", "x-gogs-event"};
    switch (src->scheme) {
    case HK_SCHEME_GITHUB:
        return from_hdr(h, "x-github-event", s);
    case HK_SCHEME_GITEA:
        return from_hdrs(h, gitea, N_OF(gitea), s);
    case HK_SCHEME_GITLAB:
        return from_hdr(h, "x-gitlab-event", s);
    case HK_SCHEME_STRIPE:
        return from_field(b, "type", s);
    case HK_SCHEME_SHOPIFY:
        return from_hdr(h, "x-shopify-topic", s);
    case HK_SCHEME_SLACK:
        /* Events API: the outer envelope's inner event; url_verification
         * and app_rate_limited have only the outer `type`. */
        return from_field(b, "event.type", s) || from_field(b, "type", s);
    case HK_SCHEME_STANDARD:
        /* The Standard Webhooks spec's payload convention: {"type", "timestamp", "data"}. */
        return from_field(b, "type", s);
    case HK_SCHEME_DISCORD:
        return discord_type(b, s);
    case HK_SCHEME_TWITCH:
        return from_field(b, "subscription.type", s) || from_hdr(h, "twitch-eventsub-subscription-type", s);
    case HK_SCHEME_ZOOM:
        return from_field(b, "event", s);
    case HK_SCHEME_META:
        return from_field(b, "object", s);
    default:
        return false;            /* twilio, hmac, token, none: only what the source says */
    }
}

static bool default_id(const struct hk_source *src, const struct hk_hdrs *h, struct body *b, struct slot s)
{
    static const char *const gitea[] = {"x-gitea-delivery", "x-forgejo-delivery", "x-gogs-delivery"};
    static const char *const gitlab[] = {"x-gitlab-event-uuid", "x-gitlab-webhook-uuid"};
    static const char *const shopify[] = {"x-shopify-webhook-id", "x-shopify-event-id"};
    static const char *const standard[] = {"webhook-id", "svix-id"};
    switch (src->scheme) {
    case HK_SCHEME_GITHUB:
        return from_hdr(h, "x-github-delivery", s);
    case HK_SCHEME_GITEA:
        return from_hdrs(h, gitea, N_OF(gitea), s);
    case HK_SCHEME_GITLAB:
        return from_hdrs(h, gitlab, N_OF(gitlab), s);
    case HK_SCHEME_STRIPE:
        return from_field(b, "id", s);
    case HK_SCHEME_SHOPIFY:
        return from_hdrs(h, shopify, N_OF(shopify), s);
    case HK_SCHEME_SLACK:
        return from_field(b, "event_id", s);
    case HK_SCHEME_STANDARD:
        return from_hdrs(h, standard, N_OF(standard), s);
    case HK_SCHEME_DISCORD:
        return from_field(b, "id", s);
    case HK_SCHEME_TWITCH:
        return from_hdr(h, "twitch-eventsub-message-id", s);
    case HK_SCHEME_TWILIO:
        return from_hdr(h, "i-twilio-idempotency-token", s);
    case HK_SCHEME_HMAC:
        /* The header a generic template signs as {id} is its delivery id. */
        return src->id_header && from_hdr(h, src->id_header, s);
    default:
        return false;            /* zoom, meta, token, none */
    }
}

void hk_meta_extract(const struct hk_source *src, const struct hk_hdrs *h, const char *content_type,
                     size_t content_type_len, const void *body, size_t n, struct hk_meta *out)
{
    out->event_type = out->delivery_id = NULL;
    out->event_type_len = out->delivery_id_len = 0;
    out->buf[0] = out->buf[HK_META_MAX + 1] = '\0';
    if (!src)
        return;
    struct body b = {.p = body, .n = n, .json = hk_media_is_json(content_type, content_type_len)};
    struct slot type = {&out->event_type, &out->event_type_len, out->buf};
    struct slot id = {&out->delivery_id, &out->delivery_id_len, out->buf + HK_META_MAX + 1};

    /* Each step runs only when the ones before found nothing; a source's
     * override that finds nothing falls back on the scheme's default. */
    if (!(src->event_type_header && from_hdr(h, src->event_type_header, type)) &&
        !(src->event_type_field && from_field(&b, src->event_type_field, type)))
        default_type(src, h, &b, type);
    if (!(src->delivery_id_header && from_hdr(h, src->delivery_id_header, id)) &&
        !(src->delivery_id_field && from_field(&b, src->delivery_id_field, id)))
        default_id(src, h, &b, id);
    json_decref(b.root);
}

/* ---- Handshakes in a POST body ------------------------------------------ */

/* A JSON string member fit to echo: 1..HK_HANDSHAKE_ECHO_MAX bytes; for a
 * text/plain answer also free of control characters (a JSON answer
 * escapes them). jansson has checked the UTF-8 and refused U+0000. */
static const char *echo_str(const json_t *v, bool plain, size_t *len)
{
    if (!json_is_string(v))
        return NULL;
    const char *p = json_string_value(v);
    size_t n = json_string_length(v);
    if (n == 0 || n > HK_HANDSHAKE_ECHO_MAX || (plain && !text_ok(p, n, HK_HANDSHAKE_ECHO_MAX)))
        return NULL;
    *len = n;
    return p;
}

static bool str_is(const json_t *v, const char *s)
{
    return json_is_string(v) && json_string_length(v) == strlen(s) && strcmp(json_string_value(v), s) == 0;
}

/* Slack (api.slack.com/events/url_verification): {"token":…,"challenge":…,
 * "type":"url_verification"}. Slack takes the challenge back as text/plain,
 * form-encoded or JSON; the JSON form {"challenge":…} is the one whose
 * escaping leaves nothing to refuse. */
static enum hk_handshake hs_slack(json_t *root, struct hk_buf *resp, const char **ctype)
{
    size_t len;
    const char *c;
    if (!str_is(json_object_get(root, "type"), "url_verification") ||
        !(c = echo_str(json_object_get(root, "challenge"), false, &len)))
        return HK_HS_NONE;
    PUT_LIT(resp, "{\"challenge\":");
    hk_buf_put_json_str(resp, c, len);
    hk_buf_putc(resp, '}');
    *ctype = "application/json";
    return HK_HS_SLACK;
}

/* Discord: an interactions endpoint gets PING {"type":1,…} and must answer
 * PONG {"type":1} (interactions/receiving-and-responding, "Receiving an
 * Interaction"); a webhook-events URL gets PING {"type":0,…} and must
 * answer 204 with an empty body and a Content-Type (events/webhook-events,
 * "Acknowledging PING requests"). type 1 with an `event` is a webhook
 * event, not a PING. */
static enum hk_handshake hs_discord(json_t *root, struct hk_buf *resp, const char **ctype)
{
    json_t *t = json_object_get(root, "type");
    if (!json_is_integer(t) || json_object_get(root, "event"))
        return HK_HS_NONE;
    if (json_integer_value(t) == 1)
        PUT_LIT(resp, "{\"type\":1}");
    else if (json_integer_value(t) != 0)
        return HK_HS_NONE;
    *ctype = "application/json";
    return HK_HS_DISCORD;
}

/* Twitch EventSub (dev.twitch.tv/docs/eventsub/handling-webhook-events,
 * "Responding to a challenge request"): Twitch-Eventsub-Message-Type:
 * webhook_callback_verification, body {"challenge":…,"subscription":{…}};
 * the answer is the raw challenge, text/plain. */
static enum hk_handshake hs_twitch(json_t *root, struct hk_buf *resp, const char **ctype)
{
    size_t len;
    const char *c = echo_str(json_object_get(root, "challenge"), true, &len);
    if (!c)
        return HK_HS_NONE;
    hk_buf_put(resp, c, len);
    *ctype = "text/plain";
    return HK_HS_TWITCH;
}

/* Zoom (developers.zoom.us/docs/api/webhooks, "Validate your webhook
 * endpoint"): {"payload":{"plainToken":…},"event_ts":…,"event":
 * "endpoint.url_validation"} is answered with {"plainToken":…,
 * "encryptedToken": hex HMAC-SHA256(secret token, plainToken)}. The key is
 * the secret that verified the request itself. */
static enum hk_handshake hs_zoom(const struct hk_source *src, json_t *root, int matched, struct hk_buf *resp,
                                 const char **ctype)
{
    size_t len;
    const char *pt;
    if (!str_is(json_object_get(root, "event"), "endpoint.url_validation") ||
        !(pt = echo_str(json_path(root, "payload.plainToken"), false, &len)))
        return HK_HS_NONE;
    if (matched < 0 || (size_t)matched >= src->nsecrets || (size_t)matched >= HK_SOURCE_SECRETS_MAX)
        return HK_HS_NONE;
    const struct hk_secret *sec = &src->secrets[matched];
    if (sec->ed25519 || !sec->key || sec->len == 0)
        return HK_HS_NONE;
    uint8_t mac[HK_MD_MAX];
    char hex[2 * HK_MD_MAX + 1];
    size_t mlen = hk_hmac(HK_MD_SHA256, sec->key, sec->len, pt, len, mac);
    hk_hex_encode(mac, mlen, hex);
    PUT_LIT(resp, "{\"plainToken\":");
    hk_buf_put_json_str(resp, pt, len);
    PUT_LIT(resp, ",\"encryptedToken\":\"");
    hk_buf_put(resp, hex, 2 * mlen);
    PUT_LIT(resp, "\"}");
    *ctype = "application/json";
    return HK_HS_ZOOM;
}

enum hk_handshake hk_handshake_post(const struct hk_source *src, const struct hk_hdrs *h, const void *body, size_t n,
                                    int matched, struct hk_buf *resp, const char **ctype)
{
    if (!src || !body || n == 0 || n > HK_HANDSHAKE_BODY_MAX)
        return HK_HS_NONE;
    switch (src->scheme) {
    case HK_SCHEME_SLACK:
    case HK_SCHEME_DISCORD:
    case HK_SCHEME_ZOOM:
        break;
    case HK_SCHEME_TWITCH: {
        /* The header says what the message is; notifications and
         * revocations are not parsed here at all. */
        const char *t;
        size_t tl;
        static const char want[] = "webhook_callback_verification";
        if (!hdr_value(h, "twitch-eventsub-message-type", 64, &t, &tl) || tl != sizeof want - 1 ||
            memcmp(t, want, tl) != 0)
            return HK_HS_NONE;
        break;
    }
    default:
        return HK_HS_NONE;
    }
    json_error_t err;
    json_t *root = json_loadb(body, n, 0, &err);
    enum hk_handshake k = HK_HS_NONE;
    if (json_is_object(root)) {
        switch (src->scheme) {
        case HK_SCHEME_SLACK:
            k = hs_slack(root, resp, ctype);
            break;
        case HK_SCHEME_DISCORD:
            k = hs_discord(root, resp, ctype);
            break;
        case HK_SCHEME_TWITCH:
            k = hs_twitch(root, resp, ctype);
            break;
        case HK_SCHEME_ZOOM:
            k = hs_zoom(src, root, matched, resp, ctype);
            break;
        default:
            break;
        }
    }
    json_decref(root);
    return k;
}

/* ---- Handshakes in the query string -------------------------------------- */

/* Percent-decode (with '+' as a space, as forms and most providers encode
 * queries) into dst. The length, or DEC_BAD on a malformed escape, or
 * DEC_LONG when the result would pass `cap`. */
#define DEC_BAD (-1)
#define DEC_LONG (-2)
static long url_decode(const char *src, size_t n, char *dst, size_t cap)
{
    size_t o = 0;
    for (size_t i = 0; i < n; i++) {
        char c = src[i];
        if (c == '%') {
            if (n - i < 3)
                return DEC_BAD;
            int hi = hk_hex_val(src[i + 1]), lo = hk_hex_val(src[i + 2]);
            if (hi < 0 || lo < 0)
                return DEC_BAD;
            c = (char)(hi << 4 | lo);
            i += 2;
        } else if (c == '+') {
            c = ' ';
        }
        if (o >= cap)
            return DEC_LONG;
        dst[o++] = c;
    }
    return (long)o;
}

/* One parameter of a query: its first raw value, and how many times the
 * name appeared (decoded names are compared, so hub%2Emode is hub.mode). */
struct qparam {
    const char *v;
    size_t len;
    unsigned count;
};

static struct qparam query_get(const char *q, size_t qlen, const char *name)
{
    struct qparam r = {NULL, 0, 0};
    size_t nlen = strlen(name);
    const char *p = q, *end = q + qlen;
    /* One pass over the query, each byte looked at a bounded number of
     * times: the loop ends when the query does. */
    while (p < end) {
        const char *amp = memchr(p, '&', (size_t)(end - p));
        const char *pe = amp ? amp : end;
        const char *eq = memchr(p, '=', (size_t)(pe - p));
        const char *ke = eq ? eq : pe;
        char key[32];
        long klen = url_decode(p, (size_t)(ke - p), key, sizeof key);
        if (klen == (long)nlen && memcmp(key, name, nlen) == 0) {
            if (r.count++ == 0) {
                r.v = eq ? eq + 1 : pe;
                r.len = (size_t)(pe - r.v);
            }
        }
        p = pe + (amp != NULL);
    }
    return r;
}

/* Decode a parameter into dst (HK_HANDSHAKE_ECHO_MAX bytes) and check it
 * is fit to echo as text/plain. The length, or -1. */
static long decode_echo(struct qparam qp, char *dst)
{
    if (qp.count != 1)
        return -1;
    long n = url_decode(qp.v, qp.len, dst, HK_HANDSHAKE_ECHO_MAX);
    if (n <= 0 || !text_ok(dst, (size_t)n, HK_HANDSHAKE_ECHO_MAX))
        return -1;
    return n;
}

/* Meta (developers.facebook.com/docs/graph-api/webhooks/getting-started,
 * "Verification Requests"): GET ?hub.mode=subscribe&hub.challenge=…&
 * hub.verify_token=…; answer the challenge when the token is the one set
 * in the app dashboard, else refuse. */
static int hs_meta(const struct hk_source *src, const char *q, size_t qlen, struct hk_buf *resp, const char **ctype)
{
    struct qparam mode = query_get(q, qlen, "hub.mode");
    char buf[HK_HANDSHAKE_ECHO_MAX];
    char mbuf[16];
    long n = mode.count == 1 ? url_decode(mode.v, mode.len, mbuf, sizeof mbuf) : -1;
    if (n != 9 || memcmp(mbuf, "subscribe", 9) != 0)
        return 400;

    struct qparam tok = query_get(q, qlen, "hub.verify_token");
    if (tok.count > 1)
        return 400;
    if (tok.count == 0 || !src->verify_token || src->verify_token_len == 0)
        return 403;
    n = url_decode(tok.v, tok.len, buf, sizeof buf);
    if (n == DEC_BAD)
        return 400;
    /* Longer than any token we hold (DEC_LONG) is simply not ours. The
     * lengths may differ in time; the bytes compare in constant time. */
    if (n < 0 || (size_t)n != src->verify_token_len ||
        hk_crypto_memeq(buf, src->verify_token, src->verify_token_len) != 0)
        return 403;

    n = decode_echo(query_get(q, qlen, "hub.challenge"), buf);
    if (n < 0)
        return 400;
    hk_buf_put(resp, buf, (size_t)n);
    *ctype = "text/plain";
    return 200;
}

/* Microsoft Graph (learn.microsoft.com/graph/change-notifications-delivery-
 * webhooks, "Notification endpoint validation"): POST ?validationToken=…
 * must be answered within 10 s with 200, text/plain, the decoded token.
 * The token is text such as "Validation: Testing client application
 * reachability for subscription Request-Id: …"; Graph warns it must not be
 * reflected as HTML, hence text/plain and no control characters. */
static int hs_graph(const char *q, size_t qlen, struct hk_buf *resp, const char **ctype)
{
    struct qparam t = query_get(q, qlen, "validationToken");
    if (t.count == 0)
        return 0;
    char buf[HK_HANDSHAKE_ECHO_MAX];
    long n = decode_echo(t, buf);
    if (n < 0)
        return 400;
    hk_buf_put(resp, buf, (size_t)n);
    *ctype = "text/plain";
    return 200;
}

int hk_handshake_query(const struct hk_source *src, const char *query, size_t query_len, struct hk_buf *resp,
                       const char **ctype, enum hk_handshake *kind)
{
    *kind = HK_HS_NONE;
    if (!src || !query)
        return 0;
    if (query_len > 0 && query[0] == '?')
        query++, query_len--;
    if ((src->scheme == HK_SCHEME_META || src->verify_token) && query_get(query, query_len, "hub.mode").count > 0) {
        *kind = HK_HS_META;
        return hs_meta(src, query, query_len, resp, ctype);
    }
    if (src->graph_validation) {
        int st = hs_graph(query, query_len, resp, ctype);
        if (st)
            *kind = HK_HS_GRAPH;
        return st;
    }
    return 0;
}
