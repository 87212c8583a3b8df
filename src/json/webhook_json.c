/* SPDX-License-Identifier: MIT
 * WebhookRequest in (jansson parse, then the @NotBlank/@Size checks the Java
 * service applied) and WebhookResponse out (written straight into a buffer,
 * no intermediate JSON tree). */
#include "json/webhook_json.h"

#include <assert.h>
#include <string.h>

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

void hk_webhook_encode(struct hk_buf *b, const struct hk_webhook *w)
{
    /* The fixed parts and the usual sizes of the strings, reserved up front
     * so that short rows grow the buffer at most once. */
    hk_buf_reserve(b, 128 + w->source_len + w->event_type_len + w->payload_len);
    PUT_LIT(b, "{\"id\":");
    hk_buf_put_i64(b, w->id);
    PUT_LIT(b, ",\"source\":");
    hk_buf_put_json_str(b, w->source, w->source_len);
    PUT_LIT(b, ",\"eventType\":");
    hk_buf_put_json_str(b, w->event_type, w->event_type_len);
    PUT_LIT(b, ",\"payload\":");
    if (w->payload)
        hk_buf_put_json_str(b, w->payload, w->payload_len);
    else
        PUT_LIT(b, "null");
    PUT_LIT(b, ",\"receivedAt\":\"");
    hk_buf_put_iso_us(b, w->received_us);
    PUT_LIT(b, "\",\"processingMode\":\"event-loop\"}");
}
