/* SPDX-License-Identifier: MIT
 * A stored row as a CloudEvent 1.0 HTTP request (outbound/cloudevents.h):
 * the attributes, their two spellings (percent-encoded header values in
 * binary mode, JSON strings in structured mode), the ce-type table, and a
 * JSON validator that decides whether data may be embedded as it is. */
#include "outbound/cloudevents.h"

#include <stdint.h>
#include <string.h>

#include "core/base64.h"
#include "core/err.h"
#include "core/mediatype.h"
#include "core/utf8.h"

#define PUT_LIT(b, lit) hk_buf_put((b), lit, sizeof(lit) - 1)
#define N_OF(a) (sizeof(a) / sizeof((a)[0]))

/* U+FFFD REPLACEMENT CHARACTER in UTF-8. */
static const char replacement[] = "\xef\xbf\xbd";

/* CloudEvents attribute values may not hold U+0000-U+001F or U+007F-U+009F. */
static bool is_control(uint32_t cp)
{
    return cp < 0x20 || (cp >= 0x7f && cp <= 0x9f);
}

/* The next character of an attribute string as it is sent: *len bytes at
 * s, or U+FFFD (returned true) for a byte that starts no well-formed
 * sequence and for a control character. Returns whether it was replaced;
 * *adv is how many input bytes it stands for. */
static bool attr_char(const unsigned char *s, size_t n, size_t *adv)
{
    uint32_t cp = 0;
    size_t len = hk_utf8_seq(s, n, &cp);
    if (len == 0) {
        *adv = 1;
        return true;
    }
    *adv = len;
    return is_control(cp);
}

/* ---- header values (HTTP binding 3.1.3.2) ----------------------------------- */

/* Append an attribute string as a header value: space, '"', '%' and every
 * byte outside U+0021-U+007E as %XY of its UTF-8 bytes (upper-case hex),
 * after attr_char's replacements. */
static void put_header_value(struct hk_buf *b, const char *str, size_t n)
{
    static const char hex[] = "0123456789ABCDEF";
    const unsigned char *s = (const unsigned char *)str;
    size_t i = 0;
    while (i < n) {
        unsigned c = s[i];
        if (c > 0x20 && c < 0x7f && c != '"' && c != '%') {
            hk_buf_putc(b, (char)c);
            i++;
            continue;
        }
        size_t adv;
        const unsigned char *bytes = s + i;
        size_t nbytes;
        if (attr_char(s + i, n - i, &adv)) {
            bytes = (const unsigned char *)replacement;
            nbytes = 3;
        } else {
            nbytes = adv;
        }
        char *p = hk_buf_reserve(b, 3 * nbytes);
        for (size_t k = 0; k < nbytes; k++) {
            *p++ = '%';
            *p++ = hex[bytes[k] >> 4];
            *p++ = hex[bytes[k] & 15];
        }
        b->len += 3 * nbytes;
        i += adv;
    }
}

/* ---- JSON strings ------------------------------------------------------------ */

/* The same attribute string as JSON string content (no quotes): after
 * attr_char's replacements only '"' and '\\' need escaping, since no
 * control character is left. */
static void put_json_chars(struct hk_buf *b, const char *str, size_t n)
{
    const unsigned char *s = (const unsigned char *)str;
    size_t i = 0;
    while (i < n) {
        unsigned c = s[i];
        if (c >= 0x20 && c < 0x7f) {
            if (c == '"' || c == '\\')
                hk_buf_putc(b, '\\');
            hk_buf_putc(b, (char)c);
            i++;
            continue;
        }
        size_t adv;
        if (attr_char(s + i, n - i, &adv))
            hk_buf_put(b, replacement, 3);
        else
            hk_buf_put(b, s + i, adv);
        i += adv;
    }
}

/* ---- JSON validation ---------------------------------------------------------- */

#define JSON_DEPTH_MAX 4096

static const unsigned char *skip_ws(const unsigned char *p, const unsigned char *end)
{
    while (p < end && (*p == ' ' || *p == '\t' || *p == '\n' || *p == '\r'))
        p++;
    return p;
}

static int hex4(const unsigned char *p)
{
    int v = 0;
    for (int i = 0; i < 4; i++) {
        unsigned c = p[i];
        int d = c >= '0' && c <= '9' ? (int)c - '0'
              : c >= 'a' && c <= 'f' ? (int)c - 'a' + 10
              : c >= 'A' && c <= 'F' ? (int)c - 'A' + 10 : -1;
        if (d < 0)
            return -1;
        v = v << 4 | d;
    }
    return v;
}

/* A string from its opening quote: returns the byte after the closing
 * quote, or NULL. Unpaired surrogate escapes are refused (RFC 7493), as
 * strict decoders (jansson among them) refuse them. */
static const unsigned char *scan_string(const unsigned char *p, const unsigned char *end)
{
    p++;
    while (p < end) {
        unsigned c = *p;
        if (c == '"')
            return p + 1;
        if (c < 0x20)
            return NULL;
        if (c < 0x80 && c != '\\') {
            p++;
            continue;
        }
        if (c >= 0x80) {
            uint32_t cp;
            size_t len = hk_utf8_seq(p, (size_t)(end - p), &cp);
            if (len == 0)
                return NULL;
            p += len;
            continue;
        }
        if (end - p < 2)
            return NULL;
        switch (p[1]) {
        case '"': case '\\': case '/': case 'b': case 'f': case 'n': case 'r': case 't':
            p += 2;
            continue;
        case 'u':
            break;
        default:
            return NULL;
        }
        if (end - p < 6)
            return NULL;
        int u = hex4(p + 2);
        if (u < 0 || (u >= 0xdc00 && u <= 0xdfff))
            return NULL;
        p += 6;
        if (u >= 0xd800 && u <= 0xdbff) {
            if (end - p < 6 || p[0] != '\\' || p[1] != 'u')
                return NULL;
            int lo = hex4(p + 2);
            if (lo < 0xdc00 || lo > 0xdfff)
                return NULL;
            p += 6;
        }
    }
    return NULL;
}

static const unsigned char *digits(const unsigned char *p, const unsigned char *end)
{
    const unsigned char *start = p;
    while (p < end && *p >= '0' && *p <= '9')
        p++;
    return p > start ? p : NULL;
}

/* -? (0 | [1-9][0-9]*) (. [0-9]+)? ([eE] [+-]? [0-9]+)? */
static const unsigned char *scan_number(const unsigned char *p, const unsigned char *end)
{
    if (*p == '-')
        p++;
    if (p == end)
        return NULL;
    if (*p == '0')
        p++;
    else if (!(p = digits(p, end)))
        return NULL;
    if (p < end && *p == '.' && !(p = digits(p + 1, end)))
        return NULL;
    if (p < end && (*p == 'e' || *p == 'E')) {
        p++;
        if (p < end && (*p == '+' || *p == '-'))
            p++;
        if (!(p = digits(p, end)))
            return NULL;
    }
    return p;
}

static const unsigned char *scan_literal(const unsigned char *p, const unsigned char *end, const char *lit,
                                         size_t n)
{
    return (size_t)(end - p) >= n && memcmp(p, lit, n) == 0 ? p + n : NULL;
}

static bool top_is_object(const uint8_t *bits, size_t depth)
{
    return bits[(depth - 1) / 8] >> ((depth - 1) % 8) & 1;
}

bool hk_ce_is_json(const char *text, size_t n)
{
    if (!text)
        return false;
    const unsigned char *p = (const unsigned char *)text, *end = p + n;
    /* One bit per open container (1: object), so nesting costs no recursion. */
    uint8_t in_object[JSON_DEPTH_MAX / 8];
    size_t depth = 0;

value:
    p = skip_ws(p, end);
    if (p == end)
        return false;
    switch (*p) {
    case '{':
    case '[':
        if (depth == JSON_DEPTH_MAX)
            return false;
        if (*p == '{')
            in_object[depth / 8] |= (uint8_t)(1u << (depth % 8));
        else
            in_object[depth / 8] &= (uint8_t)~(1u << (depth % 8));
        depth++;
        p = skip_ws(p + 1, end);
        if (p < end && *p == (top_is_object(in_object, depth) ? '}' : ']')) {
            depth--;       /* empty */
            p++;
            goto after;
        }
        if (top_is_object(in_object, depth))
            goto key;
        goto value;
    case '"':
        p = scan_string(p, end);
        break;
    case 't':
        p = scan_literal(p, end, "true", 4);
        break;
    case 'f':
        p = scan_literal(p, end, "false", 5);
        break;
    case 'n':
        p = scan_literal(p, end, "null", 4);
        break;
    default:
        p = (*p == '-' || (*p >= '0' && *p <= '9')) ? scan_number(p, end) : NULL;
        break;
    }
    if (!p)
        return false;

after:
    p = skip_ws(p, end);
    if (depth == 0)
        return p == end;
    if (p == end)
        return false;
    {
        bool obj = top_is_object(in_object, depth);
        if (*p == ',') {
            p = skip_ws(p + 1, end);
            if (obj)
                goto key;
            goto value;
        }
        if (*p != (obj ? '}' : ']'))
            return false;
        depth--;
        p++;
        goto after;
    }

key:
    if (p == end || *p != '"' || !(p = scan_string(p, end)))
        return false;
    p = skip_ws(p, end);
    if (p == end || *p != ':')
        return false;
    p++;
    goto value;
}

/* ---- ce-type ------------------------------------------------------------------ */

enum xform { X_NONE, X_GITLAB, X_SHOPIFY };

struct type_writer {
    char *out;
    size_t len, max;
};

static bool type_safe(unsigned c)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '.' || c == '_' ||
           c == '-';
}

static void type_putc(struct type_writer *w, char c)
{
    if (w->len < w->max)
        w->out[w->len++] = c;
}

/* Append s[0..n) as ce-type text: one character per character, each kept
 * when in [A-Za-z0-9._-] and "_" otherwise, after the scheme's rewrite. */
static void type_put(struct type_writer *w, const char *str, size_t n, enum xform x)
{
    const unsigned char *s = (const unsigned char *)str;
    for (size_t i = 0; i < n && w->len < w->max;) {
        unsigned c = s[i];
        if (c >= 0x80) {
            uint32_t cp;
            size_t len = hk_utf8_seq(s + i, n - i, &cp);
            type_putc(w, '_');
            i += len ? len : 1;
            continue;
        }
        if (x == X_GITLAB && c >= 'A' && c <= 'Z')
            c = c - 'A' + 'a';
        else if (x == X_SHOPIFY && c == '/')
            c = '.';
        type_putc(w, type_safe(c) ? (char)c : '_');
        i++;
    }
}

/* Does the row's kept-headers object (JSON, lower-case names) have `name`?
 * A quoted name followed by ':' can only be a key: inside a string every
 * quote is escaped, and a string value is never followed by ':'. */
static bool has_header(const struct hk_webhook *row, const char *name)
{
    if (!row->headers)
        return false;
    size_t nl = strlen(name);
    const char *p = row->headers, *end = row->headers + row->headers_len;
    while ((size_t)(end - p) >= nl + 2) {
        const char *q = memchr(p, '"', (size_t)(end - p));
        if (!q || (size_t)(end - q) < nl + 2)
            return false;
        if (memcmp(q + 1, name, nl) == 0 && q[1 + nl] == '"') {
            const char *r = q + nl + 2;
            while (r < end && (*r == ' ' || *r == '\t' || *r == '\n' || *r == '\r'))
                r++;
            if (r < end && *r == ':')
                return true;
        }
        p = q + 1;
    }
    return false;
}

static const struct scheme_type {
    const char *scheme;
    const char *prefix;
    enum xform x;
} scheme_types[] = {
    {"github", "com.github.", X_NONE},
    {"gitea", "io.gitea.", X_NONE},
    {"forgejo", "org.forgejo.", X_NONE},
    {"gogs", "io.gogs.", X_NONE},
    {"gitlab", "com.gitlab.", X_GITLAB},
    {"stripe", "com.stripe.", X_NONE},
    {"shopify", "com.shopify.", X_SHOPIFY},
    {"slack", "com.slack.", X_NONE},
    {"standard-webhooks", "dev.hookd.standardwebhooks.", X_NONE},
    {"discord", "com.discord.", X_NONE},
    {"twitch", "tv.twitch.", X_NONE},
    {"zoom", "us.zoom.", X_NONE},
    {"meta", "com.meta.", X_NONE},
    {"twilio", "com.twilio.", X_NONE},
};

static const struct scheme_type *find_scheme(const char *scheme)
{
    if (!scheme)
        return NULL;
    for (size_t i = 0; i < N_OF(scheme_types); i++)
        if (strcmp(scheme_types[i].scheme, scheme) == 0)
            return &scheme_types[i];
    return NULL;
}

size_t hk_ce_type(const struct hk_webhook *row, const struct hk_ce_opts *o, char *out, size_t cap)
{
    if (cap == 0)
        return 0;
    struct type_writer w = {out, 0, cap - 1 < HK_CE_TYPE_MAX ? cap - 1 : HK_CE_TYPE_MAX};
    const char *ev = row->event_type;
    size_t evn = row->event_type_len;
    if (!ev || evn == 0) {
        ev = "unknown";
        evn = 7;
    }
    const char *tpl = o ? o->type_template : NULL;
    if (tpl) {
        size_t n = strlen(tpl);
        for (size_t i = 0; i < n && w.len < w.max;) {
            if (n - i >= 7 && memcmp(tpl + i, "{event}", 7) == 0) {
                type_put(&w, ev, evn, X_NONE);
                i += 7;
            } else if (n - i >= 8 && memcmp(tpl + i, "{source}", 8) == 0) {
                type_put(&w, row->source, row->source_len, X_NONE);
                i += 8;
            } else {
                /* One character of the template's own text. */
                uint32_t cp;
                size_t len = hk_utf8_seq((const unsigned char *)tpl + i, n - i, &cp);
                type_put(&w, tpl + i, len ? len : 1, X_NONE);
                i += len ? len : 1;
            }
        }
    } else if (!row->ingress) {
        type_put(&w, "dev.hookd.webhook.", 18, X_NONE);
        type_put(&w, ev, evn, X_NONE);
    } else {
        const struct scheme_type *t = find_scheme(o ? o->scheme : NULL);
        if (t && strcmp(t->scheme, "gitea") == 0) {
            /* Forgejo sends X-Forgejo-Event beside Gitea's and Gogs's
             * headers, Gitea X-Gitea-Event beside Gogs's, Gogs only its own. */
            if (has_header(row, "x-forgejo-event"))
                t = find_scheme("forgejo");
            else if (!has_header(row, "x-gitea-event") && has_header(row, "x-gogs-event"))
                t = find_scheme("gogs");
        }
        if (t) {
            type_put(&w, t->prefix, strlen(t->prefix), X_NONE);
            type_put(&w, ev, evn, t->x);
        } else {
            type_put(&w, "dev.hookd.", 10, X_NONE);
            type_put(&w, row->source, row->source_len, X_NONE);
            type_putc(&w, '.');
            type_put(&w, ev, evn, X_NONE);
        }
    }
    out[w.len] = '\0';
    return w.len;
}

/* ---- the request ------------------------------------------------------------- */

int hk_ce_mode_parse(const char *s, enum hk_ce_mode *out)
{
    if (s && strcmp(s, "binary") == 0) {
        *out = HK_CE_BINARY;
        return 0;
    }
    if (s && strcmp(s, "structured") == 0) {
        *out = HK_CE_STRUCTURED;
        return 0;
    }
    return HK_EINVAL;
}

size_t hk_ce_header_lines(const struct hk_buf *headers, const char **lines, size_t cap)
{
    size_t n = 0, i = 0;
    while (i < headers->len && n < cap) {
        const char *line = headers->p + i;
        const char *nul = memchr(line, '\0', headers->len - i);
        if (!nul)
            break;   /* an unterminated tail is not a line */
        lines[n++] = line;
        i = (size_t)(nul - headers->p) + 1;
    }
    return n;
}

/* The source as one URI path segment: anything but RFC 3986's unreserved
 * characters percent-encoded, so ce-source is a URI-reference whatever the
 * row holds (a source name never needs it: [a-z0-9_-]). */
static void put_path_segment(struct hk_buf *b, const char *s, size_t n)
{
    static const char hex[] = "0123456789ABCDEF";
    for (size_t i = 0; i < n; i++) {
        unsigned c = (unsigned char)s[i];
        if (type_safe(c) || c == '~') {
            hk_buf_putc(b, (char)c);
        } else {
            char e[3] = {'%', hex[c >> 4], hex[c & 15]};
            hk_buf_put(b, e, 3);
        }
    }
}

/* The same segment as a header value: each %XY of the URI gets its '%'
 * encoded again (%25XY), as the binding wants of any '%' in a value. */
static void put_source_header(struct hk_buf *b, const char *s, size_t n)
{
    static const char hex[] = "0123456789ABCDEF";
    for (size_t i = 0; i < n; i++) {
        unsigned c = (unsigned char)s[i];
        if (type_safe(c) || c == '~') {
            hk_buf_putc(b, (char)c);
        } else {
            char e[5] = {'%', '2', '5', hex[c >> 4], hex[c & 15]};
            hk_buf_put(b, e, 5);
        }
    }
}

/* RFC 3339 years are 0000-9999: seconds of 0000-01-01 and 10000-01-01. */
#define TIME_MIN_US (INT64_C(-62167219200) * 1000000)
#define TIME_END_US (INT64_C(253402300800) * 1000000)

/* What is sent as data, worked out before anything is written. */
struct data {
    bool present;           /* false: no data, no content type */
    const char *p;
    size_t n;
    const char *ct;         /* NULL: none */
    size_t ct_n;
    bool json;              /* the content type is JSON and so are the bytes (ingress
                             * rows: worked out in structured mode only) */
};

static int data_of(const struct hk_webhook *row, enum hk_ce_mode mode, struct data *d)
{
    memset(d, 0, sizeof *d);
    if (row->ingress) {
        d->present = true;
        d->p = row->body_len ? (const char *)row->body : "";
        d->n = row->body_len;
        const char *ct = row->content_type;
        size_t n = ct ? row->content_type_len : 0;
        while (n > 0 && (*ct == ' ' || *ct == '\t')) {
            ct++;
            n--;
        }
        while (n > 0 && (ct[n - 1] == ' ' || ct[n - 1] == '\t'))
            n--;
        /* It came in as a header value and goes out as one; a byte no HTTP
         * request carries means the row is not what it should be. */
        for (size_t i = 0; i < n; i++)
            if (((unsigned char)ct[i] < 0x20 && ct[i] != '\t') || (unsigned char)ct[i] > 0x7e)
                return HK_EINVAL;
        if (n > 0) {
            d->ct = ct;
            d->ct_n = n;
            /* Only structured mode cares, and the scan reads every byte. */
            d->json = mode == HK_CE_STRUCTURED && hk_media_is_json(ct, n) && hk_ce_is_json(d->p, d->n);
        }
    } else if (row->payload) {
        d->present = true;
        d->p = row->payload;
        d->n = row->payload_len;
        d->json = hk_ce_is_json(d->p, d->n);
        d->ct = d->json ? "application/json" : "text/plain; charset=utf-8";
        d->ct_n = strlen(d->ct);
    }
    return 0;
}

static void put_id(struct hk_buf *b, const struct hk_webhook *row, const struct hk_ce_opts *o, bool header)
{
    if (o && o->id_prefix) {
        if (header)
            put_header_value(b, o->id_prefix, strlen(o->id_prefix));
        else
            put_json_chars(b, o->id_prefix, strlen(o->id_prefix));
    }
    hk_buf_put_i64(b, row->id);
}

static void encode_binary(const struct hk_webhook *row, const struct hk_ce_opts *o, const char *type,
                          size_t type_n, const struct data *d, struct hk_buf *h, struct hk_buf *body)
{
    PUT_LIT(h, "ce-specversion: 1.0\0");
    PUT_LIT(h, "ce-id: ");
    put_id(h, row, o, true);
    hk_buf_putc(h, '\0');
    if (row->ingress) {
        PUT_LIT(h, "ce-source: /hooks/");
        put_source_header(h, row->source, row->source_len);
        hk_buf_putc(h, '\0');
    } else {
        PUT_LIT(h, "ce-source: /api/webhooks\0");
    }
    PUT_LIT(h, "ce-type: ");
    hk_buf_put(h, type, type_n);
    hk_buf_putc(h, '\0');
    PUT_LIT(h, "ce-time: ");
    hk_buf_put_iso_us(h, row->received_us);
    hk_buf_putc(h, '\0');
    if (row->source_len > 0) {
        PUT_LIT(h, "ce-subject: ");
        put_header_value(h, row->source, row->source_len);
        hk_buf_putc(h, '\0');
    }
    if (row->delivery_id && row->delivery_id_len > 0) {
        PUT_LIT(h, "ce-hookddeliveryid: ");
        put_header_value(h, row->delivery_id, row->delivery_id_len);
        hk_buf_putc(h, '\0');
    }
    if (d->ct) {
        PUT_LIT(h, "Content-Type: ");
        hk_buf_put(h, d->ct, d->ct_n);
        hk_buf_putc(h, '\0');
    }
    if (d->present)
        hk_buf_put(body, d->p, d->n);
}

static void json_member(struct hk_buf *b, const char *name, const char *s, size_t n)
{
    hk_buf_printf(b, ",\"%s\":\"", name);
    put_json_chars(b, s, n);
    hk_buf_putc(b, '"');
}

static void encode_structured(const struct hk_webhook *row, const struct hk_ce_opts *o, const char *type,
                              size_t type_n, const struct data *d, struct hk_buf *h, struct hk_buf *b)
{
    PUT_LIT(h, "Content-Type: application/cloudevents+json; charset=utf-8\0");
    /* One reservation for the fixed part and the data, the larger share. */
    size_t data_room = d->present ? (d->json ? d->n : HK_BASE64_LEN(d->n) + 1) : 0;
    hk_buf_reserve(b, 256 + type_n + 3 * (row->source_len + row->delivery_id_len) + d->ct_n + data_room);
    PUT_LIT(b, "{\"specversion\":\"1.0\",\"id\":\"");
    put_id(b, row, o, false);
    hk_buf_putc(b, '"');
    if (row->ingress) {
        PUT_LIT(b, ",\"source\":\"/hooks/");
        put_path_segment(b, row->source, row->source_len);
        hk_buf_putc(b, '"');
    } else {
        PUT_LIT(b, ",\"source\":\"/api/webhooks\"");
    }
    json_member(b, "type", type, type_n);
    PUT_LIT(b, ",\"time\":\"");
    hk_buf_put_iso_us(b, row->received_us);
    hk_buf_putc(b, '"');
    if (row->source_len > 0)
        json_member(b, "subject", row->source, row->source_len);
    if (row->delivery_id && row->delivery_id_len > 0)
        json_member(b, "hookddeliveryid", row->delivery_id, row->delivery_id_len);
    if (d->ct)
        json_member(b, "datacontenttype", d->ct, d->ct_n);
    /* An empty body is no data: binary mode cannot tell them apart either. */
    if (d->present && d->n > 0) {
        if (d->json) {
            /* Validated JSON text goes in as it came, byte for byte. */
            PUT_LIT(b, ",\"data\":");
            hk_buf_put(b, d->p, d->n);
        } else {
            PUT_LIT(b, ",\"data_base64\":\"");
            char *p = hk_buf_reserve(b, HK_BASE64_LEN(d->n) + 1);
            b->len += hk_base64_encode(d->p, d->n, p);
            hk_buf_putc(b, '"');
        }
    }
    hk_buf_putc(b, '}');
}

int hk_ce_encode(const struct hk_webhook *row, const struct hk_ce_opts *o, struct hk_buf *headers,
                 struct hk_buf *body)
{
    enum hk_ce_mode mode = o ? o->mode : HK_CE_BINARY;
    if (mode != HK_CE_BINARY && mode != HK_CE_STRUCTURED)
        return HK_EINVAL;
    if (row->received_us < TIME_MIN_US || row->received_us >= TIME_END_US)
        return HK_EINVAL;
    struct data d;
    int rc = data_of(row, mode, &d);
    if (rc < 0)
        return rc;
    char type[HK_CE_TYPE_MAX + 1];
    size_t type_n = hk_ce_type(row, o, type, sizeof type);
    if (mode == HK_CE_BINARY)
        encode_binary(row, o, type, type_n, &d, headers, body);
    else
        encode_structured(row, o, type, type_n, &d, headers, body);
    return 0;
}
