/* SPDX-License-Identifier: MIT
 * WebhookRequest in (jansson parse, then the @NotBlank/@Size checks the Java
 * service applied) and WebhookResponse out (written straight into a buffer,
 * no intermediate JSON tree), with an ingress row's fields and its body as
 * the payload when that is text. */
#include "json/webhook_json.h"

#include <assert.h>
#include <stdbool.h>
#include <string.h>

#include "core/ascii.h"
#include "core/mediatype.h"
#include "core/utf8.h"

#define STR_(x) #x
#define STR(x) STR_(x)
#define PUT_LIT(b, lit) hk_buf_put((b), lit, sizeof(lit) - 1)

static void add_violation(struct hk_webhook_in *in, const char *field, const char *message)
{
    assert(in->nv < HK_MAX_VIOLATIONS);
    in->v[in->nv].field = field;
    in->v[in->nv].message = message;
    in->nv++;
}

/* Blank as Hibernate Validator's @NotBlank sees it: String.trim() removes
 * every char <= U+0020, so a string of only those is blank. That covers
 * Character.isWhitespace's ASCII set (and the other C0 controls; jansson
 * already refuses U+0000). Non-ASCII spaces such as U+3000 are not blank for
 * trim() either, and every byte of a multibyte sequence is >= 0x80. */
static int is_blank(const char *s, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if ((unsigned char)s[i] > 0x20)
            return 0;
    return 1;
}

/* Code points in valid UTF-8 (jansson has checked it): count every byte that
 * is not a continuation byte, stopping once past `max`. */
static size_t count_code_points(const char *s, size_t n, size_t max)
{
    size_t count = 0;
    for (size_t i = 0; i < n && count <= max; i++)
        count += ((unsigned char)s[i] & 0xc0) != 0x80;
    return count;
}

/* A required string field: source or eventType. */
static void check_name(struct hk_webhook_in *in, const char *field, size_t max,
                       const char *size_message, const char **out, size_t *out_len)
{
    json_t *v = json_object_get(in->root, field);
    if (!v || json_is_null(v)) {
        add_violation(in, field, "must not be blank");
        return;
    }
    if (!json_is_string(v)) {
        add_violation(in, field, "must be a string");
        return;
    }
    const char *s = json_string_value(v);
    size_t n = json_string_length(v);
    /* Both constraints are checked, as Bean Validation does: 300 spaces
     * violate @NotBlank and @Size at once. On any violation the caller
     * clears the whole row. */
    if (is_blank(s, n))
        add_violation(in, field, "must not be blank");
    if (count_code_points(s, n, max) > max)
        add_violation(in, field, size_message);
    *out = s;
    *out_len = n;
}

void hk_json_init(void)
{
    json_object_seed(0);
}

enum hk_decode_result hk_webhook_decode(const char *body, size_t len, struct hk_webhook_in *in)
{
    memset(in, 0, sizeof *in);
    if (!body) {
        assert(len == 0);
        body = "";   /* jansson refuses a NULL buffer with a less useful message */
    }

    /* JSON_DECODE_ANY: a scalar body is valid JSON, just not an object (a
     * violation, not a syntax error). JSON_DECODE_INT_AS_REAL: an unknown
     * field holding a huge integer must not fail the parse; numbers are never
     * used here. No JSON_REJECT_DUPLICATES: like Jackson, the last one wins.
     * No JSON_DISABLE_EOF_CHECK: trailing garbage is an error.
     * FIXME: a number beyond double range ("1e400") is still a jansson error,
     * where Jackson would skip it in an unknown field. */
    json_error_t err;
    in->root = json_loadb(body, len, JSON_DECODE_ANY | JSON_DECODE_INT_AS_REAL, &err);
    if (!in->root) {
        size_t tl = strnlen(err.text, sizeof err.text);
        if (tl >= sizeof in->err_text)
            tl = sizeof in->err_text - 1;
        memcpy(in->err_text, err.text, tl);
        in->err_text[tl] = 0;
        in->err_line = err.line;
        in->err_column = err.column;
        in->err_position = err.position > 0 ? (size_t)err.position : 0;
        return HK_DECODE_SYNTAX;
    }

    if (!json_is_object(in->root)) {
        add_violation(in, "", "must be a JSON object");
        return HK_DECODE_INVALID;
    }

    struct hk_webhook *row = &in->row;
    check_name(in, "source", HK_SOURCE_MAX,
               "size must be between 0 and " STR(HK_SOURCE_MAX),
               &row->source, &row->source_len);
    check_name(in, "eventType", HK_EVENT_TYPE_MAX,
               "size must be between 0 and " STR(HK_EVENT_TYPE_MAX),
               &row->event_type, &row->event_type_len);

    json_t *payload = json_object_get(in->root, "payload");
    if (json_is_string(payload)) {
        row->payload = json_string_value(payload);
        row->payload_len = json_string_length(payload);
    } else if (payload && !json_is_null(payload)) {
        add_violation(in, "payload", "must be a string or null");
    }

    if (in->nv > 0) {
        /* Half-filled rows must not be mistaken for valid ones. */
        memset(row, 0, sizeof *row);
        return HK_DECODE_INVALID;
    }
    return HK_DECODE_OK;
}

void hk_webhook_in_free(struct hk_webhook_in *in)
{
    json_decref(in->root);
    in->root = NULL;
    memset(&in->row, 0, sizeof in->row);
    in->nv = 0;
}

/* Byte-wise ASCII case-insensitive equality of p[0..n) and the lower-case
 * literal `lit`. */
static bool ieq(const char *p, size_t n, const char *lit)
{
    size_t k = strlen(lit);
    if (n != k)
        return false;
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)p[i];
        if ((c >= 'A' && c <= 'Z' ? c + 32 : c) != (unsigned char)lit[i])
            return false;
    }
    return true;
}

/* Does p[0..n) end in `suffix` (lower-case), with something before it? */
static bool iends(const char *p, size_t n, const char *suffix)
{
    size_t k = strlen(suffix);
    return n > k && ieq(p + n - k, k, suffix);
}

/* Is `ct` (a Content-Type as sent) a type whose body reads as text: text/any,
 * JSON, XML and form bodies, with any parameters (`; charset=...`) and the
 * whitespace around the type ignored, in any case? */
static bool textual(const char *ct0, size_t n0)
{
    const char *ct;
    size_t n = hk_media_base(ct0, n0, &ct);
    const char *slash = memchr(ct, '/', n);
    if (!slash || slash == ct || slash == ct + n - 1)
        return false;
    size_t tn = (size_t)(slash - ct);
    const char *sub = slash + 1;
    size_t sn = n - tn - 1;
    if (ieq(ct, tn, "text"))
        return true;
    return ieq(ct, tn, "application") &&
           (ieq(sub, sn, "json") || ieq(sub, sn, "xml") || ieq(sub, sn, "x-www-form-urlencoded") ||
            iends(sub, sn, "+json") || iends(sub, sn, "+xml"));
}

/* A stored JSON object's text, as it is; `absent` when there is none. The
 * API layer writes these (docs/ingress.md); anything that is not even
 * braced counts as none rather than breaking the document around it. */
static void put_raw_object(struct hk_buf *b, const char *p, size_t n, const char *absent)
{
    if (p && n >= 2 && p[0] == '{' && p[n - 1] == '}')
        hk_buf_put(b, p, n);
    else
        hk_buf_puts(b, absent);
}

static void put_str_or_null(struct hk_buf *b, const char *p, size_t n)
{
    if (p)
        hk_buf_put_json_str(b, p, n);
    else
        PUT_LIT(b, "null");
}

/* The members an ingress row adds, in the order webhook_json.h gives. */
static void encode_ingress(struct hk_buf *b, const struct hk_webhook *w)
{
    PUT_LIT(b, ",\"ingress\":true,\"contentType\":");
    put_str_or_null(b, w->content_type, w->content_type_len);
    PUT_LIT(b, ",\"deliveryId\":");
    put_str_or_null(b, w->delivery_id, w->delivery_id_len);
    PUT_LIT(b, ",\"verified\":");
    put_raw_object(b, w->verified, w->verified_len, "null");
    PUT_LIT(b, ",\"headers\":");
    put_raw_object(b, w->headers, w->headers_len, "{}");
    PUT_LIT(b, ",\"bodyBytes\":");
    hk_buf_put_u64(b, w->body_len);
    PUT_LIT(b, ",\"bodySha256\":");
    hk_buf_put_json_hex(b, w->body_sha256, 32);
    PUT_LIT(b, ",\"clientAddress\":");
    put_str_or_null(b, w->client_addr, w->client_addr_len);
}

bool hk_webhook_payload(const struct hk_webhook *w, const char **p, size_t *n)
{
    /* An ingress row's payload is its body, when that reads as text. */
    const char *payload = w->payload;
    size_t payload_len = w->payload_len;
    if (w->ingress) {
        const char *body = (const char *)w->body;
        bool text = w->content_type && textual(w->content_type, w->content_type_len) &&
                    (w->body_len == 0 || (body && hk_utf8_valid(body, w->body_len, false)));
        payload = text ? (w->body_len > 0 ? body : "") : NULL;
        payload_len = text ? w->body_len : 0;
    }
    *p = payload;
    *n = payload_len;
    return payload != NULL;
}

/* A forwarded row's "delivery" (docs/forwarding.md); a row stored while
 * forwarding was off has none. */
static void encode_delivery(struct hk_buf *b, const struct hk_delivery *d)
{
    static const char *const state[] = {"none", "pending", "delivered", "failed"};
    PUT_LIT(b, ",\"delivery\":{\"state\":\"");
    hk_buf_puts(b, state[d->state <= HK_DLV_FAILED ? d->state : 0]);
    PUT_LIT(b, "\",\"attempts\":");
    hk_buf_put_i64(b, d->attempts);
    PUT_LIT(b, ",\"lastStatus\":");
    if (d->last_status)
        hk_buf_put_i64(b, d->last_status);
    else
        PUT_LIT(b, "null");
    PUT_LIT(b, ",\"lastError\":");
    put_str_or_null(b, d->last_error, d->last_error_len);
    if (d->state == HK_DLV_PENDING && d->next_us) {
        PUT_LIT(b, ",\"nextAttemptAt\":\"");
        hk_buf_put_iso_us(b, d->next_us);
        hk_buf_putc(b, '"');
    }
    if (d->updated_us) {
        PUT_LIT(b, ",\"lastAttemptAt\":\"");
        hk_buf_put_iso_us(b, d->updated_us);
        hk_buf_putc(b, '"');
    }
    hk_buf_putc(b, '}');
}

void hk_webhook_encode(struct hk_buf *b, const struct hk_webhook *w)
{
    const char *payload;
    size_t payload_len;
    hk_webhook_payload(w, &payload, &payload_len);
    /* The fixed parts and the usual sizes of the strings, reserved up front
     * so that short rows grow the buffer at most once. */
    hk_buf_reserve(b, 128 + w->source_len + w->event_type_len + payload_len +
                          (w->ingress ? 256 + w->headers_len + w->verified_len : 0));
    PUT_LIT(b, "{\"id\":");
    hk_buf_put_i64(b, w->id);
    PUT_LIT(b, ",\"source\":");
    hk_buf_put_json_str(b, w->source, w->source_len);
    PUT_LIT(b, ",\"eventType\":");
    hk_buf_put_json_str(b, w->event_type, w->event_type_len);
    PUT_LIT(b, ",\"payload\":");
    put_str_or_null(b, payload, payload_len);
    PUT_LIT(b, ",\"receivedAt\":\"");
    hk_buf_put_iso_us(b, w->received_us);
    PUT_LIT(b, "\",\"processingMode\":\"event-loop\"");
    if (w->ingress)
        encode_ingress(b, w);
    if (w->delivery.state != HK_DLV_NONE)
        encode_delivery(b, &w->delivery);
    hk_buf_putc(b, '}');
}
