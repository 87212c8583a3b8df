/* SPDX-License-Identifier: MIT
 * The sources file: libyaml events into a small bounded tree (no anchors,
 * aliases or tags, nesting no deeper than the format), then one strict pass
 * per source into struct hk_source, sorted by name. Errors name the file,
 * the source and the field, and never quote a secret.
 *
 * Secrets, as the verifier reads them (struct hk_secret):
 * - HMAC schemes (github, gitea, stripe, shopify, slack, twitch, zoom, meta,
 *   twilio, hmac): `key` = the secret's bytes as given (Stripe: the whole
 *   whsec_... string), `hmac` prepared with sha256; twilio with sha1, hmac
 *   with its `algorithm`.
 * - gitlab, token: `key` = the token; `hmac` unused (zero).
 * - standard-webhooks: "whsec_<base64>" (or bare base64) -> `key` = the
 *   decoded bytes, `hmac` sha256; "whpk_<base64>" -> `key` = the 32-byte
 *   ed25519 public key, `ed25519` set.
 * - discord: 64 hex digits -> `key` = the 32-byte public key, `ed25519` set.
 * A {file: PATH} secret loses its trailing newline(s); an {env: NAME} one
 * is taken as it is. */
#include "ingress/sources.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <arpa/inet.h>
#include <yaml.h>

#include "core/ascii.h"
#include "core/base64.h"
#include "core/config.h"

/* ------------------------------------------------------------------ tree */

/* The deepest the format goes: document map > sources list > source map >
 * secrets list > secret map. */
#define DEPTH_MAX 5
#define NODES_MAX (1u << 18)
#define MAP_KEYS_MAX 64
#define STR_MAX 4096               /* any string value (paths, URLs, templates are shorter) */
#define RAW_SECRET_MAX 2048        /* a secret as written: base64 of HK_SECRET_MAX, with room */
#define TEMPLATE_MAX 256
#define FIELD_MAX 255              /* eventTypeField, deliveryIdField */
#define TOLERANCE_MAX ((int64_t)1 << 40)
#define RATE_MAX 1e6
#define BURST_MAX 1000000000u
#define MAX_BODY_MAX (1ull << 30)
#define FORWARD_URL_MAX 2048
#define CE_TYPE_MAX 256
#define MAX_AGE_MAX_MS 3153600000000ull    /* 36500d, HOOKD_RETENTION's bound */
#define MAX_ROWS_MAX ((uint64_t)INT64_MAX)  /* the stores count in signed 64 bits */

enum ntype { N_SCALAR, N_SEQ, N_MAP };

struct node {
    uint8_t type;
    bool plain;                /* an unquoted scalar: may be a number, a boolean or null */
    uint32_t line;             /* 1-based */
    uint32_t n;                /* children (a map: keys and values, alternating) */
    uint32_t first, last, next;    /* indexes; 0: none (node 0 is never used) */
    char *s;                   /* scalar: a NUL-terminated copy, which may hold NULs itself */
    size_t len;
};

struct tree {
    struct node *v;
    uint32_t n, cap;
};

struct ctx {
    char *err;
    size_t errlen;
    const char *base;
    char label[80];            /* `source "stripe"` or `sources[3]` */
    hk_env_fn env;
    hk_file_fn file;
    bool crypto_ok;
};

/* Untrusted text (a key, a path, a name) for a message, cut to fit `cap`
 * with "...": printable ASCII only, the rest as '?', so that a message
 * stays one line whatever the file holds. */
static void sanitize(char *out, size_t cap, const char *s, size_t n)
{
    size_t k = 0;
    for (size_t i = 0; i < n && k + 4 < cap; i++)
        out[k++] = (unsigned char)s[i] >= 0x20 && (unsigned char)s[i] < 0x7f ? s[i] : '?';
    if (n && k + 4 >= cap && n > k) {
        memcpy(out + k, "...", 3);
        k += 3;
    }
    out[k] = '\0';
}

/* The one-line error: "base: label: message". Returns -1. */
__attribute__((format(printf, 2, 3))) static int fail(struct ctx *c, const char *fmt, ...)
{
    if (!c->errlen)
        return -1;
    int k = c->label[0] ? snprintf(c->err, c->errlen, "%s: %s: ", c->base, c->label)
                        : snprintf(c->err, c->errlen, "%s: ", c->base);
    if (k >= 0 && (size_t)k < c->errlen) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(c->err + k, c->errlen - (size_t)k, fmt, ap);
        va_end(ap);
    }
    return -1;
}

static void tree_free(struct tree *t)
{
    for (uint32_t i = 0; i < t->n; i++)
        free(t->v[i].s);
    free(t->v);
    t->v = NULL;
    t->n = t->cap = 0;
}

static uint32_t tree_add(struct tree *t, enum ntype type, uint32_t line)
{
    if (t->n == t->cap) {
        uint32_t cap = t->cap ? t->cap * 2 : 64;
        struct node *v = realloc(t->v, (size_t)cap * sizeof *v);
        if (!v)
            abort();
        t->v = v;
        t->cap = cap;
    }
    struct node *nd = &t->v[t->n];
    memset(nd, 0, sizeof *nd);
    nd->type = (uint8_t)type;
    nd->line = line;
    return t->n++;
}

static const char *yaml_kind(yaml_event_type_t t)
{
    return t == YAML_SCALAR_EVENT ? "a scalar" : t == YAML_SEQUENCE_START_EVENT ? "a list" : "a mapping";
}

/* libyaml's events into `t`: node 1 is the document's root. */
static int build_tree(struct ctx *c, const char *text, size_t len, struct tree *t)
{
    yaml_parser_t p;
    yaml_event_t ev;
    uint32_t stack[DEPTH_MAX + 1];
    int depth = 0, docs = 0, rc = -1;
    bool done = false;

    if (!yaml_parser_initialize(&p))
        abort();
    yaml_parser_set_input_string(&p, (const unsigned char *)text, len);
    yaml_parser_set_encoding(&p, YAML_UTF8_ENCODING);
    tree_add(t, N_SCALAR, 0);  /* node 0: "none" */
    while (!done) {
        if (!yaml_parser_parse(&p, &ev)) {
            fail(c, "line %zu, column %zu: %s%s%s", p.problem_mark.line + 1, p.problem_mark.column + 1,
                 p.problem ? p.problem : "malformed YAML", p.context ? " " : "", p.context ? p.context : "");
            goto out;
        }
        uint32_t line = (uint32_t)ev.start_mark.line + 1;
        const yaml_char_t *anchor = NULL, *tag = NULL;
        enum ntype type = N_SCALAR;
        bool node = false;
        switch (ev.type) {
        case YAML_STREAM_END_EVENT:
            done = true;
            break;
        case YAML_DOCUMENT_START_EVENT:
            if (++docs > 1) {
                fail(c, "line %u: more than one YAML document", line);
                goto fail_ev;
            }
            break;
        case YAML_ALIAS_EVENT:
            fail(c, "line %u: YAML aliases are not accepted", line);
            goto fail_ev;
        case YAML_SCALAR_EVENT:
            anchor = ev.data.scalar.anchor;
            tag = ev.data.scalar.tag;
            node = true;
            break;
        case YAML_SEQUENCE_START_EVENT:
            anchor = ev.data.sequence_start.anchor;
            tag = ev.data.sequence_start.tag;
            type = N_SEQ;
            node = true;
            break;
        case YAML_MAPPING_START_EVENT:
            anchor = ev.data.mapping_start.anchor;
            tag = ev.data.mapping_start.tag;
            type = N_MAP;
            node = true;
            break;
        case YAML_SEQUENCE_END_EVENT:
        case YAML_MAPPING_END_EVENT:
            depth--;
            break;
        default:
            break;
        }
        if (node) {
            /* Anchors are refused with aliases: billion laughs needs both,
             * and an anchor nothing refers to is a sign of a file meant for
             * another program. Tags could retype a value behind our back. */
            if (anchor) {
                fail(c, "line %u: YAML anchors are not accepted", line);
                goto fail_ev;
            }
            if (tag) {
                fail(c, "line %u: YAML tags are not accepted", line);
                goto fail_ev;
            }
            if (type != N_SCALAR && depth == DEPTH_MAX) {
                fail(c, "line %u: %s nested deeper than the format has", line, yaml_kind(ev.type));
                goto fail_ev;
            }
            if (t->n >= NODES_MAX) {
                fail(c, "line %u: more than %u YAML nodes", line, NODES_MAX);
                goto fail_ev;
            }
            uint32_t parent = depth ? stack[depth - 1] : 0;
            if (!parent && t->n > 1) {
                fail(c, "line %u: more than one root node", line);
                goto fail_ev;
            }
            if (parent) {
                struct node *pn = &t->v[parent];
                if (pn->type == N_SEQ && pn->n >= HK_SOURCES_MAX) {
                    if (depth == 2)
                        fail(c, "sources: more than %d sources", HK_SOURCES_MAX);
                    else
                        fail(c, "line %u: a list of more than %d entries", line, HK_SOURCES_MAX);
                    goto fail_ev;
                }
                if (pn->type == N_MAP && pn->n >= 2 * MAP_KEYS_MAX) {
                    fail(c, "line %u: a mapping of more than %d keys", line, MAP_KEYS_MAX);
                    goto fail_ev;
                }
                if (pn->type == N_MAP && pn->n % 2 == 0 && type != N_SCALAR) {
                    fail(c, "line %u: a mapping key must be a string, not %s", line, yaml_kind(ev.type));
                    goto fail_ev;
                }
            }
            uint32_t i = tree_add(t, type, line);
            struct node *nd = &t->v[i];
            if (type == N_SCALAR) {
                nd->plain = ev.data.scalar.style == YAML_PLAIN_SCALAR_STYLE;
                nd->len = ev.data.scalar.length;
                nd->s = malloc(nd->len + 1);
                if (!nd->s)
                    abort();
                memcpy(nd->s, ev.data.scalar.value, nd->len);
                nd->s[nd->len] = '\0';
            }
            if (parent) {
                struct node *pn = &t->v[parent];
                if (pn->last)
                    t->v[pn->last].next = i;
                else
                    pn->first = i;
                pn->last = i;
                pn->n++;
            }
            if (type != N_SCALAR)
                stack[depth++] = i;
        }
        yaml_event_delete(&ev);
        continue;
    fail_ev:
        yaml_event_delete(&ev);
        goto out;
    }
    rc = 0;
out:
    yaml_parser_delete(&p);
    return rc;
}

/* ------------------------------------------------------------- scalars */

/* Is the scalar exactly `s`? (A scalar may hold a NUL; strcmp would stop there.) */
static bool keq(const struct node *n, const char *s)
{
    size_t len = strlen(s);
    return n->type == N_SCALAR && n->len == len && memcmp(n->s, s, len) == 0;
}

static bool is_null(const struct node *n)
{
    return n->type == N_SCALAR && n->plain &&
           (n->len == 0 || strcmp(n->s, "~") == 0 || strcmp(n->s, "null") == 0 || strcmp(n->s, "Null") == 0 ||
            strcmp(n->s, "NULL") == 0);
}

static const char *kind_of(const struct node *n)
{
    if (n->type == N_SEQ)
        return "a list";
    if (n->type == N_MAP)
        return "a mapping";
    return is_null(n) ? "null" : "a scalar";
}

/* A non-empty string of at most `max` bytes without NUL; *out borrows the node. */
static int get_str(struct ctx *c, const struct node *n, const char *field, size_t max, const char **out)
{
    if (n->type != N_SCALAR || is_null(n))
        return fail(c, "%s: expected a string, not %s", field, kind_of(n));
    if (n->len == 0)
        return fail(c, "%s: empty", field);
    if (memchr(n->s, '\0', n->len))
        return fail(c, "%s: contains a NUL byte", field);
    if (n->len > max)
        return fail(c, "%s: longer than %zu bytes", field, max);
    *out = n->s;
    return 0;
}

static int dup_str(struct ctx *c, const struct node *n, const char *field, size_t max, char **out)
{
    const char *s;
    if (get_str(c, n, field, max, &s) < 0)
        return -1;
    if (!(*out = strdup(s)))
        abort();
    return 0;
}

/* An unquoted YAML boolean (JSON's true and false among them). */
static bool bool_value(const struct node *n, bool *out)
{
    if (n->type != N_SCALAR || !n->plain)
        return false;
    if (!strcmp(n->s, "true") || !strcmp(n->s, "True") || !strcmp(n->s, "TRUE")) {
        *out = true;
        return true;
    }
    if (!strcmp(n->s, "false") || !strcmp(n->s, "False") || !strcmp(n->s, "FALSE")) {
        *out = false;
        return true;
    }
    return false;
}

static int get_bool(struct ctx *c, const struct node *n, const char *field, bool *out)
{
    if (bool_value(n, out))
        return 0;
    return fail(c, "%s: expected true or false", field);
}

static bool all_digits(const char *s, size_t n)
{
    if (n == 0)
        return false;
    for (size_t i = 0; i < n; i++)
        if (s[i] < '0' || s[i] > '9')
            return false;
    return true;
}

/* An unquoted decimal integer in [min, max]. */
static int get_uint(struct ctx *c, const struct node *n, const char *field, uint64_t min, uint64_t max,
                    uint64_t *out)
{
    if (n->type != N_SCALAR || !n->plain || !all_digits(n->s, n->len))
        return fail(c, "%s: expected a whole number", field);
    uint64_t v = 0;
    for (size_t i = 0; i < n->len; i++) {
        if (v > (UINT64_MAX - 9) / 10)
            return fail(c, "%s: at most %llu", field, (unsigned long long)max);
        v = v * 10 + (uint64_t)(n->s[i] - '0');
    }
    if (v < min || v > max)
        return fail(c, "%s: from %llu to %llu", field, (unsigned long long)min, (unsigned long long)max);
    *out = v;
    return 0;
}

/* "300", "300s", "5m", "1h", "2d": whole seconds, 1 to TOLERANCE_MAX. */
static int get_duration_s(struct ctx *c, const struct node *n, const char *field, int64_t *out)
{
    if (n->type != N_SCALAR || is_null(n) || n->len == 0)
        return fail(c, "%s: expected a duration such as 300s, 5m, 1h or 2d", field);
    size_t k = n->len;
    int64_t mul = 1;
    switch (n->s[k - 1]) {
    case 's': mul = 1, k--; break;
    case 'm': mul = 60, k--; break;
    case 'h': mul = 3600, k--; break;
    case 'd': mul = 86400, k--; break;
    default: break;
    }
    if (!all_digits(n->s, k) || k > 18)
        return fail(c, "%s: expected a duration such as 300s, 5m, 1h or 2d", field);
    int64_t v = 0;
    for (size_t i = 0; i < k; i++)
        v = v * 10 + (n->s[i] - '0');
    if (v == 0)
        return fail(c, "%s: at least 1s", field);
    if (v > TOLERANCE_MAX / mul)
        return fail(c, "%s: at most %llds", field, (long long)TOLERANCE_MAX);
    *out = v * mul;
    return 0;
}

/* An unquoted decimal number: digits, optionally a point and digits. */
static int get_rate(struct ctx *c, const struct node *n, const char *field, double *out)
{
    if (n->type != N_SCALAR || !n->plain || n->len == 0 || n->len > 32)
        return fail(c, "%s: expected a number such as 10 or 0.5", field);
    size_t i = 0, intd = 0, fracd = 0;
    while (i < n->len && n->s[i] >= '0' && n->s[i] <= '9')
        i++, intd++;
    if (i < n->len && n->s[i] == '.') {
        i++;
        while (i < n->len && n->s[i] >= '0' && n->s[i] <= '9')
            i++, fracd++;
        if (!fracd)
            intd = 0;
    }
    if (i != n->len || !intd)
        return fail(c, "%s: expected a number such as 10 or 0.5", field);
    double v = strtod(n->s, NULL);
    if (!(v >= 0 && v <= RATE_MAX))
        return fail(c, "%s: from 0 to %g", field, RATE_MAX);
    *out = v;
    return 0;
}

static bool tchar(unsigned char ch)
{
    return (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9') ||
           (ch && strchr("!#$%&'*+-.^_`|~", ch));
}

static bool token_ok(const char *s, size_t n)
{
    if (n == 0)
        return false;
    for (size_t i = 0; i < n; i++)
        if (!tchar((unsigned char)s[i]))
            return false;
    return true;
}

static void lower(char *s)
{
    for (; *s; s++)
        if (*s >= 'A' && *s <= 'Z')
            *s = (char)(*s - 'A' + 'a');
}

/* A header name: an HTTP token, stored lower-case. */
static int get_header_name(struct ctx *c, const struct node *n, const char *field, char **out)
{
    const char *s;
    if (get_str(c, n, field, 256, &s) < 0)
        return -1;
    if (!token_ok(s, n->len))
        return fail(c, "%s: not a header name", field);
    if (!(*out = strdup(s)))
        abort();
    lower(*out);
    return 0;
}

/* ------------------------------------------------------------- secrets */

int hk_sources_read_file(const char *path, void *buf, size_t cap, size_t *len)
{
    *len = 0;
    /* O_NONBLOCK: a FIFO named by mistake must not hang a reload. */
    int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
    if (fd < 0)
        return errno;
    struct stat st;
    int e = 0;
    if (fstat(fd, &st) < 0) {
        e = errno;
        goto out;
    }
    if (!S_ISREG(st.st_mode)) {
        e = EINVAL;
        goto out;
    }
    size_t got = 0;
    for (;;) {
        char extra;
        /* One byte past `cap` tells a file that is too large from one that fits. */
        void *dst = got < cap ? (char *)buf + got : &extra;
        size_t want = got < cap ? cap - got : 1;
        ssize_t r = read(fd, dst, want);
        if (r < 0 && errno == EINTR)
            continue;
        if (r < 0) {
            e = errno;
            break;
        }
        if (r == 0)
            break;
        if (got >= cap) {
            e = EFBIG;
            break;
        }
        got += (size_t)r;
    }
    *len = got;
out:
    close(fd);
    return e;
}

static bool env_name_ok(const char *s, size_t n)
{
    if (n == 0 || n > 128 || (s[0] >= '0' && s[0] <= '9'))
        return false;
    for (size_t i = 0; i < n; i++)
        if (!((s[i] >= 'A' && s[i] <= 'Z') || (s[i] >= 'a' && s[i] <= 'z') || (s[i] >= '0' && s[i] <= '9') ||
              s[i] == '_'))
            return false;
    return true;
}

/* {env: NAME} or {file: PATH}: the raw bytes into raw (RAW_SECRET_MAX),
 * the reference into ref. Messages name the reference, never the bytes. */
static int read_secret(struct ctx *c, const struct tree *t, const struct node *n, const char *field, char *ref,
                       size_t refcap, uint8_t *raw, size_t *rawlen)
{
    if (n->type != N_MAP || n->n != 2)
        return fail(c, "%s: expected {env: NAME} or {file: PATH}", field);
    const struct node *k = &t->v[n->first], *v = &t->v[k->next];
    char what[32];
    if (!keq(k, "env") && !keq(k, "file")) {
        sanitize(what, sizeof what, k->s, k->len);
        return fail(c, "%s: unknown key \"%s\" (expected env or file)", field, what);
    }
    bool env = k->s[0] == 'e';
    char sub[48];
    snprintf(sub, sizeof sub, "%s: %s", field, k->s);
    const char *s;
    if (get_str(c, v, sub, env ? 128 : PATH_MAX - 1, &s) < 0)
        return -1;
    char shown[128];
    sanitize(shown, sizeof shown, s, v->len);
    snprintf(ref, refcap, "%s:%s", env ? "env" : "file", shown);
    if (env) {
        if (!env_name_ok(s, v->len))
            return fail(c, "%s: env %s: not a variable name", field, shown);
        const char *val = c->env ? c->env(s) : NULL;
        if (!val)
            return fail(c, "%s: env %s is not set", field, shown);
        size_t len = strlen(val);
        if (len == 0)
            return fail(c, "%s: env %s is empty", field, shown);
        if (len > RAW_SECRET_MAX)
            return fail(c, "%s: env %s: longer than %d bytes", field, shown, RAW_SECRET_MAX);
        memcpy(raw, val, len);
        *rawlen = len;
        return 0;
    }
    if (!c->file)
        return fail(c, "%s: file %s: %s", field, shown, strerror(ENOENT));
    size_t len = 0;
    int e = c->file(s, raw, RAW_SECRET_MAX, &len);
    if (e == EFBIG)
        return fail(c, "%s: file %s: longer than %d bytes", field, shown, RAW_SECRET_MAX);
    if (e == EINVAL)
        return fail(c, "%s: file %s: not a regular file", field, shown);
    if (e)
        return fail(c, "%s: file %s: %s", field, shown, strerror(e));
    if (len > RAW_SECRET_MAX)
        len = RAW_SECRET_MAX;
    while (len && (raw[len - 1] == '\n' || raw[len - 1] == '\r'))
        len--;
    if (len == 0)
        return fail(c, "%s: file %s is empty", field, shown);
    *rawlen = len;
    return 0;
}

static bool hmac_scheme(enum hk_scheme s)
{
    return s != HK_SCHEME_GITLAB && s != HK_SCHEME_TOKEN && s != HK_SCHEME_NONE && s != HK_SCHEME_DISCORD &&
           s != HK_SCHEME_STANDARD;
}

static bool crypto_scheme(enum hk_scheme s)
{
    return s != HK_SCHEME_GITLAB && s != HK_SCHEME_TOKEN && s != HK_SCHEME_NONE;
}

static int need_crypto(struct ctx *c)
{
    if (c->crypto_ok)
        return 0;
    char e[256];
    if (hk_crypto_init(e, sizeof e) < 0)
        return fail(c, "%s", e);
    c->crypto_ok = true;
    return 0;
}

static void set_key(struct hk_secret *sec, const uint8_t *p, size_t n)
{
    sec->key = malloc(n ? n : 1);
    if (!sec->key)
        abort();
    memcpy(sec->key, p, n);
    sec->len = n;
}

/* Decode `raw` into `sec` the way src's scheme keys with it. */
static int decode_secret(struct ctx *c, const struct hk_source *src, const char *field, struct hk_secret *sec,
                         const uint8_t *raw, size_t n)
{
    uint8_t dec[HK_SECRET_MAX];
    int rc = -1;
    switch (src->scheme) {
    case HK_SCHEME_DISCORD:
        if (n != 64 || hk_hex_decode((const char *)raw, dec, 32) < 0) {
            fail(c, "%s: %s: not 64 hex digits (the application's public key)", field, sec->ref);
            goto out;
        }
        set_key(sec, dec, 32);
        sec->ed25519 = true;
        break;
    case HK_SCHEME_STANDARD: {
        bool pk = n > 5 && memcmp(raw, "whpk_", 5) == 0;
        size_t skip = pk || (n > 6 && memcmp(raw, "whsec_", 6) == 0) ? (pk ? 5 : 6) : 0;
        long k = hk_base64_decode((const char *)raw + skip, n - skip, dec, sizeof dec);
        if (k <= 0 || (pk && k != 32)) {
            fail(c, "%s: %s: not whsec_<base64> (a signing secret) or whpk_<base64> (a 32-byte public key)", field,
                 sec->ref);
            goto out;
        }
        set_key(sec, dec, (size_t)k);
        sec->ed25519 = pk;
        if (!pk)
            hk_hmac_key_init(&sec->hmac, HK_MD_SHA256, sec->key, sec->len);
        break;
    }
    default:
        if (n > HK_SECRET_MAX) {
            fail(c, "%s: %s: longer than %d bytes", field, sec->ref, HK_SECRET_MAX);
            goto out;
        }
        set_key(sec, raw, n);
        if (hmac_scheme(src->scheme)) {
            enum hk_md md = src->scheme == HK_SCHEME_TWILIO ? HK_MD_SHA1
                            : src->scheme == HK_SCHEME_HMAC ? src->algorithm
                                                            : HK_MD_SHA256;
            hk_hmac_key_init(&sec->hmac, md, sec->key, sec->len);
        }
        break;
    }
    rc = 0;
out:
    explicit_bzero(dec, sizeof dec);
    return rc;
}

static int parse_secrets(struct ctx *c, const struct tree *t, const struct node *n, struct hk_source *src)
{
    if (n->type != N_SEQ)
        return fail(c, "secrets: expected a list of {env: NAME} or {file: PATH}, not %s", kind_of(n));
    if (n->n > HK_SOURCE_SECRETS_MAX)
        return fail(c, "secrets: more than %d", HK_SOURCE_SECRETS_MAX);
    if (n->n && crypto_scheme(src->scheme) && need_crypto(c) < 0)
        return -1;
    uint8_t raw[RAW_SECRET_MAX];
    int rc = 0;
    size_t i = 0;
    for (uint32_t e = n->first; e; e = t->v[e].next, i++) {
        char field[32];
        snprintf(field, sizeof field, "secrets[%zu]", i);
        struct hk_secret *sec = &src->secrets[src->nsecrets];
        size_t len = 0;
        if ((rc = read_secret(c, t, &t->v[e], field, sec->ref, sizeof sec->ref, raw, &len)) < 0)
            break;
        /* Compared as written: a ref is cut short when the path is long. */
        size_t j = 0;
        for (uint32_t p = n->first; p != e; p = t->v[p].next, j++) {
            const struct node *a = &t->v[t->v[p].first], *b = &t->v[t->v[e].first];
            const struct node *av = &t->v[a->next], *bv = &t->v[b->next];
            if (a->len == b->len && av->len == bv->len && !memcmp(a->s, b->s, a->len) &&
                !memcmp(av->s, bv->s, av->len)) {
                rc = fail(c, "%s: %s is also secrets[%zu]", field, sec->ref, j);
                break;
            }
        }
        if (rc < 0)
            break;
        if ((rc = decode_secret(c, src, field, sec, raw, len)) < 0)
            break;
        src->nsecrets++;
    }
    explicit_bzero(raw, sizeof raw);
    return rc;
}

/* ------------------------------------------------------------- fields */

enum key {
    K_NAME,
    K_SCHEME,
    K_TOLERANCE,
    K_MAXBODY,
    K_CTYPES,
    K_RATE,
    K_HEADERS,
    K_ETH,
    K_ETF,
    K_DIH,
    K_DIF,
    K_PROXIES,
    K_LEGACY,
    K_VTOKEN,
    K_PUBURL,
    K_GRAPH,
    K_HEADER,
    K_ALGO,
    K_ENC,
    K_PREFIX,
    K_TSH,
    K_TEMPLATE,
    K_FORWARD,
    K_RETENTION,
    K_SECRETS,                 /* last: decoding needs the scheme and the algorithm */
    K__COUNT
};

#define SCH(x) (1u << HK_SCHEME_##x)
#define ANY ((1u << HK_SCHEME__COUNT) - 1)

static const struct {
    const char *name;
    unsigned schemes;
} keys[K__COUNT] = {
    [K_NAME] = {"name", ANY},
    [K_SCHEME] = {"scheme", ANY},
    [K_SECRETS] = {"secrets", ANY},
    [K_TOLERANCE] = {"tolerance", ANY},
    [K_MAXBODY] = {"maxBodyBytes", ANY},
    [K_CTYPES] = {"contentTypes", ANY},
    [K_RATE] = {"rateLimit", ANY},
    [K_HEADERS] = {"headers", ANY},
    [K_ETH] = {"eventTypeHeader", ANY},
    [K_ETF] = {"eventTypeField", ANY},
    [K_DIH] = {"deliveryIdHeader", ANY},
    [K_DIF] = {"deliveryIdField", ANY},
    [K_PROXIES] = {"trustedProxies", ANY},
    [K_LEGACY] = {"legacySha1", SCH(GITHUB)},
    [K_VTOKEN] = {"verifyToken", SCH(META)},
    [K_PUBURL] = {"publicUrl", SCH(TWILIO)},
    [K_GRAPH] = {"graphValidation", ANY},
    [K_HEADER] = {"header", SCH(HMAC) | SCH(TOKEN)},
    [K_ALGO] = {"algorithm", SCH(HMAC)},
    [K_ENC] = {"encoding", SCH(HMAC)},
    [K_PREFIX] = {"prefix", SCH(HMAC)},
    [K_TSH] = {"timestampHeader", SCH(HMAC)},
    [K_TEMPLATE] = {"template", SCH(HMAC)},
    [K_FORWARD] = {"forward", ANY},
    [K_RETENTION] = {"retention", ANY},
};

static const char *const scheme_names[HK_SCHEME__COUNT] = {
    [HK_SCHEME_GITHUB] = "github",
    [HK_SCHEME_GITEA] = "gitea",
    [HK_SCHEME_GITLAB] = "gitlab",
    [HK_SCHEME_STRIPE] = "stripe",
    [HK_SCHEME_SHOPIFY] = "shopify",
    [HK_SCHEME_SLACK] = "slack",
    [HK_SCHEME_STANDARD] = "standard-webhooks",
    [HK_SCHEME_DISCORD] = "discord",
    [HK_SCHEME_TWITCH] = "twitch",
    [HK_SCHEME_ZOOM] = "zoom",
    [HK_SCHEME_META] = "meta",
    [HK_SCHEME_TWILIO] = "twilio",
    [HK_SCHEME_HMAC] = "hmac",
    [HK_SCHEME_TOKEN] = "token",
    [HK_SCHEME_NONE] = "none",
};

const char *hk_scheme_name(enum hk_scheme s)
{
    return (unsigned)s < HK_SCHEME__COUNT ? scheme_names[s] : "unknown";
}

bool hk_source_name_ok(const char *name, size_t len)
{
    if (len == 0 || len > HK_SOURCE_NAME_MAX)
        return false;
    for (size_t i = 0; i < len; i++) {
        char ch = name[i];
        if (!((ch >= 'a' && ch <= 'z') || (ch >= '0' && ch <= '9') || ch == '_' || ch == '-'))
            return false;
    }
    return true;
}

/* contentTypes, headers, trustedProxies: a list of at most
 * HK_SOURCE_LIST_MAX non-empty strings. */
static int check_list(struct ctx *c, const struct node *n, const char *field)
{
    if (n->type != N_SEQ)
        return fail(c, "%s: expected a list, not %s", field, kind_of(n));
    if (n->n == 0)
        return fail(c, "%s: an empty list (leave the key out instead)", field);
    if (n->n > HK_SOURCE_LIST_MAX)
        return fail(c, "%s: more than %d entries", field, HK_SOURCE_LIST_MAX);
    return 0;
}

static int parse_ctypes(struct ctx *c, const struct tree *t, const struct node *n, struct hk_source *src)
{
    if (check_list(c, n, "contentTypes") < 0)
        return -1;
    size_t i = 0;
    for (uint32_t e = n->first; e; e = t->v[e].next, i++) {
        char field[32];
        snprintf(field, sizeof field, "contentTypes[%zu]", i);
        const char *s;
        if (get_str(c, &t->v[e], field, 255, &s) < 0)
            return -1;
        const char *slash = strchr(s, '/');
        size_t len = t->v[e].len;
        if (!slash || !token_ok(s, (size_t)(slash - s)) || !token_ok(slash + 1, len - (size_t)(slash - s) - 1))
            return fail(c, "%s: not a media type without parameters, such as application/json", field);
        char *v = strdup(s);
        if (!v)
            abort();
        lower(v);
        for (size_t j = 0; j < src->ncontent_types; j++) {
            if (strcmp(src->content_types[j], v) == 0) {
                free(v);
                return fail(c, "%s: the same as contentTypes[%zu]", field, j);
            }
        }
        src->content_types[src->ncontent_types++] = v;
    }
    return 0;
}

static int parse_headers(struct ctx *c, const struct tree *t, const struct node *n, struct hk_source *src)
{
    if (check_list(c, n, "headers") < 0)
        return -1;
    size_t i = 0;
    for (uint32_t e = n->first; e; e = t->v[e].next, i++) {
        char field[32];
        snprintf(field, sizeof field, "headers[%zu]", i);
        char *v;
        if (get_header_name(c, &t->v[e], field, &v) < 0)
            return -1;
        /* Credentials of the client, never a provider's: storing them
         * would put them in front of whoever reads deliveries. */
        if (!strcmp(v, "authorization") || !strcmp(v, "cookie") || !strcmp(v, "proxy-authorization")) {
            fail(c, "%s: %s is never kept (it carries credentials)", field, v);
            free(v);
            return -1;
        }
        for (size_t j = 0; j < src->nheaders; j++) {
            if (strcmp(src->headers[j], v) == 0) {
                free(v);
                return fail(c, "%s: the same as headers[%zu]", field, j);
            }
        }
        src->headers[src->nheaders++] = v;
    }
    return 0;
}

/* "10.0.0.0/8", "192.0.2.7", "2001:db8::/32", "::1". Host bits set after
 * the prefix are refused: "10.0.0.1/8" is more likely a typo than a wish. */
static int parse_cidr(const char *s, struct hk_cidr *out)
{
    char a[INET6_ADDRSTRLEN + 8];
    const char *slash = strchr(s, '/');
    size_t alen = slash ? (size_t)(slash - s) : strlen(s);
    if (alen == 0 || alen >= sizeof a)
        return -1;
    memcpy(a, s, alen);
    a[alen] = '\0';
    memset(out, 0, sizeof *out);
    int max;
    unsigned char v4[4];
    if (inet_pton(AF_INET, a, v4) == 1) {
        out->addr[10] = out->addr[11] = 0xff;
        memcpy(out->addr + 12, v4, 4);
        max = 32;
    } else if (inet_pton(AF_INET6, a, out->addr) == 1) {
        max = 128;
    } else {
        return -1;
    }
    int bits = max;
    if (slash) {
        const char *b = slash + 1;
        size_t bl = strlen(b);
        if (!all_digits(b, bl) || bl > 3 || (bl > 1 && b[0] == '0'))
            return -1;
        bits = atoi(b);
        if (bits > max)
            return -1;
    }
    bits += 128 - max;
    for (int i = bits; i < 128; i++)
        if (out->addr[i / 8] & (0x80 >> (i % 8)))
            return -1;
    out->bits = (uint8_t)bits;
    return 0;
}

static int parse_proxies(struct ctx *c, const struct tree *t, const struct node *n, struct hk_source *src)
{
    if (check_list(c, n, "trustedProxies") < 0)
        return -1;
    size_t i = 0;
    for (uint32_t e = n->first; e; e = t->v[e].next, i++) {
        char field[32];
        snprintf(field, sizeof field, "trustedProxies[%zu]", i);
        const char *s;
        if (get_str(c, &t->v[e], field, 64, &s) < 0)
            return -1;
        struct hk_cidr *p = &src->proxies[src->nproxies];
        if (parse_cidr(s, p) < 0) {
            char shown[72];
            sanitize(shown, sizeof shown, s, t->v[e].len);
            return fail(c, "%s: \"%s\" is not an IPv4 or IPv6 address or CIDR block (host bits must be zero)", field,
                        shown);
        }
        for (size_t j = 0; j < src->nproxies; j++)
            if (src->proxies[j].bits == p->bits && memcmp(src->proxies[j].addr, p->addr, 16) == 0)
                return fail(c, "%s: the same as trustedProxies[%zu]", field, j);
        src->nproxies++;
    }
    return 0;
}

static int parse_rate(struct ctx *c, const struct tree *t, const struct node *n, struct hk_source *src)
{
    if (n->type != N_MAP)
        return fail(c, "rateLimit: expected {rate: N, burst: N}, not %s", kind_of(n));
    const struct node *rate = NULL, *burst = NULL;
    for (uint32_t k = n->first; k; k = t->v[t->v[k].next].next) {
        const struct node *kn = &t->v[k], *vn = &t->v[kn->next];
        const struct node **slot = keq(kn, "rate") ? &rate : keq(kn, "burst") ? &burst : NULL;
        if (!slot) {
            char what[40];
            sanitize(what, sizeof what, kn->s, kn->len);
            return fail(c, "rateLimit: unknown key \"%s\" (expected rate, burst)", what);
        }
        if (*slot)
            return fail(c, "rateLimit.%s: given twice", kn->s);
        *slot = vn;
    }
    if (!rate)
        return fail(c, "rateLimit.rate: missing");
    if (get_rate(c, rate, "rateLimit.rate", &src->rate) < 0)
        return -1;
    if (burst) {
        uint64_t b;
        if (get_uint(c, burst, "rateLimit.burst", 1, BURST_MAX, &b) < 0)
            return -1;
        src->burst = (uint32_t)b;
    } else {
        /* ceil(rate), at least 1 (rate <= RATE_MAX fits; no libm for one call). */
        uint32_t b = (uint32_t)src->rate;
        b += (double)b < src->rate;
        src->burst = b ? b : 1;
    }
    if (src->rate == 0)
        src->burst = 0;
    return 0;
}

/* A dotted path into a JSON body: "event.type". */
static int get_field_path(struct ctx *c, const struct node *n, const char *field, char **out)
{
    const char *s;
    if (get_str(c, n, field, FIELD_MAX, &s) < 0)
        return -1;
    size_t len = n->len;
    if (!hk_ascii_printable(s, len, 0x21) || s[0] == '.' || s[len - 1] == '.' || strstr(s, ".."))
        return fail(c, "%s: a dotted path of keys such as event.type", field);
    if (!(*out = strdup(s)))
        abort();
    return 0;
}

static bool url_ok(const char *s, size_t n)
{
    size_t k = !strncmp(s, "https://", 8) ? 8 : !strncmp(s, "http://", 7) ? 7 : 0;
    return k && n > k && s[k] != '/' && hk_ascii_printable(s, n, 0x21);
}

static int parse_template(struct ctx *c, const struct node *n, struct hk_source *src, bool *has_ts, bool *has_id)
{
    const char *s;
    if (get_str(c, n, "template", TEMPLATE_MAX, &s) < 0)
        return -1;
    for (size_t i = 0; i < n->len; i++)
        if (((unsigned char)s[i] < 0x20 && s[i] != '\n' && s[i] != '\t') || (unsigned char)s[i] > 0x7e)
            return fail(c, "template: printable ASCII, tabs and newlines only");
    int body = 0;
    for (const char *p = s; *p; p++) {
        if (*p == '}')
            return fail(c, "template: a '}' outside a placeholder ({body}, {timestamp}, {id})");
        if (*p != '{')
            continue;
        if (!strncmp(p, "{body}", 6))
            body++, p += 5;
        else if (!strncmp(p, "{timestamp}", 11))
            *has_ts = true, p += 10;
        else if (!strncmp(p, "{id}", 4))
            *has_id = true, p += 3;
        else
            return fail(c, "template: an unknown placeholder (only {body}, {timestamp}, {id})");
    }
    if (body != 1)
        return fail(c, "template: must hold {body} exactly once");
    if (!(src->template = strdup(s)))
        abort();
    return 0;
}

/* --------------------------------------------- forwarding and retention */

/* The sink's URL: http:// or https://, a host after any userinfo, printable
 * ASCII without spaces. It may hold a password, so no message quotes it. */
static bool forward_url_ok(const char *s, size_t n)
{
    size_t k = !strncmp(s, "https://", 8) ? 8 : !strncmp(s, "http://", 7) ? 7 : 0;
    if (!k || !hk_ascii_printable(s, n, 0x21))
        return false;
    size_t end = k + strcspn(s + k, "/?#");
    size_t host = k;
    for (size_t i = k; i < end; i++)
        if (s[i] == '@')
            host = i + 1;
    return end > host && s[host] != ':';
}

/* forward.type: a ce-type template, placeholders {event} and {source}. */
static int check_ce_type(struct ctx *c, const char *s, size_t n)
{
    if (!hk_ascii_printable(s, n, 0x20) || s[0] == ' ' || s[n - 1] == ' ')
        return fail(c, "forward.type: printable ASCII, not starting or ending with a space");
    for (const char *p = s; *p; p++) {
        if (*p == '}')
            return fail(c, "forward.type: a '}' outside a placeholder ({event}, {source})");
        if (*p != '{')
            continue;
        if (!strncmp(p, "{event}", 7))
            p += 6;
        else if (!strncmp(p, "{source}", 8))
            p += 7;
        else
            return fail(c, "forward.type: an unknown placeholder (only {event} and {source})");
    }
    return 0;
}

/* forward: false, or {url, type, mode, fifo}. */
static int parse_forward(struct ctx *c, const struct tree *t, const struct node *n, struct hk_source *src)
{
    bool on;
    if (bool_value(n, &on)) {
        if (on)
            return fail(c, "forward: true is the default (leave the key out), or give a mapping (url, type, mode, "
                           "fifo)");
        src->forward.off = true;
        return 0;
    }
    if (n->type != N_MAP)
        return fail(c, "forward: expected false or a mapping (url, type, mode, fifo), not %s", kind_of(n));
    if (n->n == 0)
        return fail(c, "forward: an empty mapping (leave the key out instead)");
    static const char *const names[] = {"url", "type", "mode", "fifo"};
    const struct node *v[4] = {0};
    for (uint32_t k = n->first; k; k = t->v[t->v[k].next].next) {
        const struct node *kn = &t->v[k];
        size_t i = 0;
        while (i < 4 && !keq(kn, names[i]))
            i++;
        if (i == 4) {
            char what[40];
            sanitize(what, sizeof what, kn->s, kn->len);
            return fail(c, "forward: unknown key \"%s\" (expected url, type, mode, fifo)", what);
        }
        if (v[i])
            return fail(c, "forward.%s: given twice", names[i]);
        v[i] = &t->v[kn->next];
    }
    if (v[0]) {
        const char *s;
        if (get_str(c, v[0], "forward.url", FORWARD_URL_MAX, &s) < 0)
            return -1;
        if (!forward_url_ok(s, v[0]->len))
            return fail(c, "forward.url: expected http:// or https://, a host, and no spaces or control characters");
        if (!(src->forward.url = strdup(s)))
            abort();
    }
    if (v[1]) {
        const char *s;
        if (get_str(c, v[1], "forward.type", CE_TYPE_MAX, &s) < 0 || check_ce_type(c, s, v[1]->len) < 0)
            return -1;
        if (!(src->forward.type = strdup(s)))
            abort();
    }
    if (v[2]) {
        const char *s;
        if (get_str(c, v[2], "forward.mode", 16, &s) < 0)
            return -1;
        if (!strcmp(s, "binary"))
            src->forward.mode = 0;
        else if (!strcmp(s, "structured"))
            src->forward.mode = 1;
        else
            return fail(c, "forward.mode: binary or structured");
    }
    if (v[3] && get_bool(c, v[3], "forward.fifo", &src->forward.fifo) < 0)
        return -1;
    return 0;
}

/* retention: {maxAge, maxRows}. maxAge takes HOOKD_RETENTION's units, but
 * a bare number other than 0 is refused: HOOKD_RETENTION reads it as
 * milliseconds, while tolerance (beside it in this file) reads seconds. */
static int parse_retention(struct ctx *c, const struct tree *t, const struct node *n, struct hk_source *src)
{
    if (n->type != N_MAP)
        return fail(c, "retention: expected a mapping (maxAge, maxRows), not %s", kind_of(n));
    if (n->n == 0)
        return fail(c, "retention: an empty mapping (leave the key out instead)");
    const struct node *age = NULL, *rows = NULL;
    for (uint32_t k = n->first; k; k = t->v[t->v[k].next].next) {
        const struct node *kn = &t->v[k], *vn = &t->v[kn->next];
        const struct node **slot = keq(kn, "maxAge") ? &age : keq(kn, "maxRows") ? &rows : NULL;
        if (!slot) {
            char what[40];
            sanitize(what, sizeof what, kn->s, kn->len);
            return fail(c, "retention: unknown key \"%s\" (expected maxAge, maxRows)", what);
        }
        if (*slot)
            return fail(c, "retention.%s: given twice", kn->s);
        *slot = vn;
    }
    if (age) {
        const char *s;
        uint64_t ms = 0;
        if (get_str(c, age, "retention.maxAge", 32, &s) < 0)
            return -1;
        if (hk_parse_duration_ms(s, &ms) < 0 || (ms && all_digits(s, age->len)))
            return fail(c, "retention.maxAge: expected a duration such as 30d, 12h, 90m or 500ms (0: keep forever)");
        if (ms > MAX_AGE_MAX_MS)
            return fail(c, "retention.maxAge: at most 36500d");
        src->retention.max_age_ms = ms;
    }
    if (rows && get_uint(c, rows, "retention.maxRows", 0, MAX_ROWS_MAX, &src->retention.max_rows) < 0)
        return -1;
    src->retention.set = true;
    return 0;
}

static int parse_scheme(struct ctx *c, const struct node *n, enum hk_scheme *out)
{
    const char *s;
    if (get_str(c, n, "scheme", 64, &s) < 0)
        return -1;
    for (int i = 0; i < HK_SCHEME__COUNT; i++) {
        if (strcmp(s, scheme_names[i]) == 0) {
            *out = (enum hk_scheme)i;
            return 0;
        }
    }
    char shown[72];
    sanitize(shown, sizeof shown, s, n->len);
    return fail(c,
                "scheme: unknown \"%s\" (github, gitea, gitlab, stripe, shopify, slack, standard-webhooks, discord, "
                "twitch, zoom, meta, twilio, hmac, token, none)",
                shown);
}

static void source_free(struct hk_source *src)
{
    for (size_t i = 0; i < src->nsecrets; i++) {
        if (src->secrets[i].key)
            explicit_bzero(src->secrets[i].key, src->secrets[i].len);
        free(src->secrets[i].key);
    }
    /* Covers the prepared HMAC pads too, which are as good as the key. */
    explicit_bzero(src->secrets, sizeof src->secrets);
    if (src->verify_token)
        explicit_bzero(src->verify_token, src->verify_token_len);
    free(src->verify_token);
    free(src->verify_token_ref);
    for (size_t i = 0; i < src->ncontent_types; i++)
        free(src->content_types[i]);
    for (size_t i = 0; i < src->nheaders; i++)
        free(src->headers[i]);
    free(src->event_type_header);
    free(src->event_type_field);
    free(src->delivery_id_header);
    free(src->delivery_id_field);
    free(src->public_url);
    free(src->header);
    free(src->prefix);
    free(src->timestamp_header);
    free(src->template);
    free(src->id_header);
    /* The sink's URL may carry a password (userinfo). */
    if (src->forward.url)
        explicit_bzero(src->forward.url, strlen(src->forward.url));
    free(src->forward.url);
    free(src->forward.type);
}

static int parse_source(struct ctx *c, const struct tree *t, const struct node *n, size_t idx, uint64_t default_max,
                        struct hk_source *src)
{
    snprintf(c->label, sizeof c->label, "sources[%zu]", idx);
    if (n->type != N_MAP)
        return fail(c, "expected a mapping (name, scheme, secrets, ...), not %s", kind_of(n));

    /* The name first, so that every later message can name the source. */
    const struct node *slot[K__COUNT] = {0};
    for (uint32_t k = n->first; k; k = t->v[t->v[k].next].next) {
        if (keq(&t->v[k], "name")) {
            slot[K_NAME] = &t->v[t->v[k].next];
            break;
        }
    }
    if (!slot[K_NAME])
        return fail(c, "name: missing");
    const char *name;
    if (get_str(c, slot[K_NAME], "name", 256, &name) < 0)
        return -1;
    if (!hk_source_name_ok(name, slot[K_NAME]->len))
        return fail(c, "name: 1 to %d characters of a-z 0-9 _ -", HK_SOURCE_NAME_MAX);
    memcpy(src->name, name, slot[K_NAME]->len + 1);
    src->name_len = slot[K_NAME]->len;
    snprintf(c->label, sizeof c->label, "source \"%s\"", src->name);

    slot[K_NAME] = NULL;
    for (uint32_t k = n->first; k; k = t->v[t->v[k].next].next) {
        const struct node *kn = &t->v[k];
        int i = 0;
        while (i < K__COUNT && !keq(kn, keys[i].name))
            i++;
        if (i == K__COUNT) {
            char what[48];
            sanitize(what, sizeof what, kn->s, kn->len);
            return fail(c, "unknown key \"%s\"", what);
        }
        if (slot[i])
            return fail(c, "%s: given twice", keys[i].name);
        slot[i] = &t->v[kn->next];
    }

    if (!slot[K_SCHEME])
        return fail(c, "scheme: missing (write scheme: none to accept unsigned deliveries)");
    if (parse_scheme(c, slot[K_SCHEME], &src->scheme) < 0)
        return -1;
    for (int i = 0; i < K__COUNT; i++)
        if (slot[i] && !(keys[i].schemes & (1u << src->scheme)))
            return fail(c, "%s: not a setting of scheme %s", keys[i].name, scheme_names[src->scheme]);

    src->tolerance_s = 300;
    src->max_body = default_max;
    src->algorithm = HK_MD_SHA256;
    src->encoding = HK_ENC_HEX;
    src->forward.mode = -1;
    bool has_ts = false, has_id = false;
    for (int i = 0; i < K__COUNT; i++) {
        const struct node *v = slot[i];
        if (!v)
            continue;
        const char *f = keys[i].name;
        int rc = 0;
        uint64_t u;
        switch ((enum key)i) {
        case K_NAME:
        case K_SCHEME:
            break;
        case K_TOLERANCE:
            rc = get_duration_s(c, v, f, &src->tolerance_s);
            break;
        case K_MAXBODY:
            if ((rc = get_uint(c, v, f, 1, MAX_BODY_MAX, &u)) == 0)
                src->max_body = u;
            break;
        case K_CTYPES:
            rc = parse_ctypes(c, t, v, src);
            break;
        case K_RATE:
            rc = parse_rate(c, t, v, src);
            break;
        case K_HEADERS:
            rc = parse_headers(c, t, v, src);
            break;
        case K_ETH:
            rc = get_header_name(c, v, f, &src->event_type_header);
            break;
        case K_ETF:
            rc = get_field_path(c, v, f, &src->event_type_field);
            break;
        case K_DIH:
            rc = get_header_name(c, v, f, &src->delivery_id_header);
            break;
        case K_DIF:
            rc = get_field_path(c, v, f, &src->delivery_id_field);
            break;
        case K_PROXIES:
            rc = parse_proxies(c, t, v, src);
            break;
        case K_LEGACY:
            rc = get_bool(c, v, f, &src->legacy_sha1);
            break;
        case K_VTOKEN: {
            uint8_t raw[RAW_SECRET_MAX];
            char ref[sizeof src->secrets[0].ref];
            size_t len = 0;
            if ((rc = read_secret(c, t, v, f, ref, sizeof ref, raw, &len)) == 0) {
                if (len > HK_SECRET_MAX) {
                    rc = fail(c, "%s: %s: longer than %d bytes", f, ref, HK_SECRET_MAX);
                } else {
                    if (!(src->verify_token = malloc(len)) || !(src->verify_token_ref = strdup(ref)))
                        abort();
                    memcpy(src->verify_token, raw, len);
                    src->verify_token_len = len;
                }
            }
            explicit_bzero(raw, sizeof raw);
            break;
        }
        case K_PUBURL:
            if ((rc = dup_str(c, v, f, 2048, &src->public_url)) == 0 && !url_ok(src->public_url, v->len))
                rc = fail(c, "%s: the URL Twilio posts to, http(s)://host/path as configured in Twilio", f);
            break;
        case K_GRAPH:
            rc = get_bool(c, v, f, &src->graph_validation);
            break;
        case K_HEADER:
            rc = get_header_name(c, v, f, &src->header);
            break;
        case K_ALGO: {
            const char *s;
            if ((rc = get_str(c, v, f, 16, &s)) < 0)
                break;
            if (!strcmp(s, "sha1"))
                src->algorithm = HK_MD_SHA1;
            else if (!strcmp(s, "sha256"))
                src->algorithm = HK_MD_SHA256;
            else if (!strcmp(s, "sha512"))
                src->algorithm = HK_MD_SHA512;
            else
                rc = fail(c, "%s: sha1, sha256 or sha512", f);
            break;
        }
        case K_ENC: {
            const char *s;
            if ((rc = get_str(c, v, f, 16, &s)) < 0)
                break;
            if (!strcmp(s, "hex"))
                src->encoding = HK_ENC_HEX;
            else if (!strcmp(s, "base64"))
                src->encoding = HK_ENC_BASE64;
            else
                rc = fail(c, "%s: hex or base64", f);
            break;
        }
        case K_PREFIX:
            if ((rc = dup_str(c, v, f, 64, &src->prefix)) == 0 && !hk_ascii_printable(src->prefix, v->len, 0x21))
                rc = fail(c, "%s: printable ASCII without spaces", f);
            break;
        case K_TSH:
            rc = get_header_name(c, v, f, &src->timestamp_header);
            break;
        case K_TEMPLATE:
            rc = parse_template(c, v, src, &has_ts, &has_id);
            break;
        case K_FORWARD:
            rc = parse_forward(c, t, v, src);
            break;
        case K_RETENTION:
            rc = parse_retention(c, t, v, src);
            break;
        case K_SECRETS:
            rc = parse_secrets(c, t, v, src);
            break;
        case K__COUNT:
            break;
        }
        if (rc < 0)
            return -1;
    }

    if (src->scheme == HK_SCHEME_NONE) {
        if (src->nsecrets)
            return fail(c, "secrets: scheme none verifies nothing, so it takes no secrets");
    } else if (src->nsecrets == 0) {
        return fail(c, "secrets: at least one {env: NAME} or {file: PATH} (scheme %s)", scheme_names[src->scheme]);
    }
    if ((src->scheme == HK_SCHEME_HMAC || src->scheme == HK_SCHEME_TOKEN) && !src->header)
        return fail(c, "header: missing (the header the %s comes in)",
                    src->scheme == HK_SCHEME_HMAC ? "signature" : "token");
    if (src->scheme == HK_SCHEME_TWILIO && !src->public_url)
        return fail(c, "publicUrl: missing (Twilio signs the URL it posts to)");
    if (src->scheme == HK_SCHEME_HMAC) {
        if (!src->template && !(src->template = strdup("{body}")))
            abort();
        if (has_ts && !src->timestamp_header)
            return fail(c, "template: {timestamp} needs timestampHeader");
        if (!has_ts && src->timestamp_header)
            return fail(c, "timestampHeader: the template must sign {timestamp}, or a replayed delivery passes");
        if (has_id && !src->delivery_id_header)
            return fail(c, "template: {id} needs deliveryIdHeader");
        if (src->delivery_id_header && !(src->id_header = strdup(src->delivery_id_header)))
            abort();
    }
    return 0;
}

/* ------------------------------------------------------------ snapshot */

static void sources_free(struct hk_sources *s)
{
    for (size_t i = 0; i < s->n; i++)
        source_free(&s->v[i]);
    free(s->v);
    free(s);
}

static int by_name(const void *a, const void *b)
{
    return strcmp(((const struct hk_source *)a)->name, ((const struct hk_source *)b)->name);
}

static int parse_doc(struct ctx *c, const struct tree *t, uint64_t default_max, struct hk_sources *s)
{
    if (t->n < 2)
        return fail(c, "empty (expected a mapping with a sources: list)");
    const struct node *root = &t->v[1];
    if (root->type != N_MAP)
        return fail(c, "expected a mapping with a sources: list, not %s", kind_of(root));
    const struct node *list = NULL;
    for (uint32_t k = root->first; k; k = t->v[t->v[k].next].next) {
        const struct node *kn = &t->v[k];
        if (!keq(kn, "sources")) {
            char what[48];
            sanitize(what, sizeof what, kn->s, kn->len);
            return fail(c, "unknown key \"%s\" (expected sources)", what);
        }
        if (list)
            return fail(c, "sources: given twice");
        list = &t->v[kn->next];
    }
    if (!list)
        return fail(c, "sources: missing");
    if (list->type != N_SEQ)
        return fail(c, "sources: expected a list, not %s", kind_of(list));
    if (list->n > HK_SOURCES_MAX)
        return fail(c, "sources: more than %d sources", HK_SOURCES_MAX);
    s->v = calloc(list->n ? list->n : 1, sizeof *s->v);
    if (!s->v)
        abort();
    size_t i = 0;
    for (uint32_t e = list->first; e; e = t->v[e].next, i++) {
        /* Counted before parsing: a half-parsed source is freed with the rest. */
        s->n++;
        if (parse_source(c, t, &t->v[e], i, default_max, &s->v[i]) < 0)
            return -1;
    }
    c->label[0] = '\0';
    qsort(s->v, s->n, sizeof *s->v, by_name);
    for (i = 1; i < s->n; i++) {
        if (strcmp(s->v[i - 1].name, s->v[i].name) == 0) {
            snprintf(c->label, sizeof c->label, "source \"%s\"", s->v[i].name);
            return fail(c, "name: used by two sources");
        }
    }
    return 0;
}

struct hk_sources *hk_sources_parse_with(const char *text, size_t len, const char *base, uint64_t default_max_body,
                                         hk_env_fn env, hk_file_fn file, char *err, size_t errlen)
{
    struct ctx c = {.err = err, .errlen = errlen, .base = base ? base : "sources", .env = env, .file = file};
    struct tree t = {0};
    struct hk_sources *s = NULL;
    if (errlen)
        err[0] = '\0';
    if (len > HK_SOURCES_FILE_MAX) {
        fail(&c, "larger than %d bytes", HK_SOURCES_FILE_MAX);
        goto fail;
    }
    if (build_tree(&c, text, len, &t) < 0)
        goto fail;
    s = calloc(1, sizeof *s);
    if (!s)
        abort();
    atomic_init(&s->refs, 1);
    snprintf(s->path, sizeof s->path, "%s", c.base);
    if (parse_doc(&c, &t, default_max_body, s) < 0)
        goto fail;
    tree_free(&t);
    return s;
fail:
    if (s)
        sources_free(s);
    tree_free(&t);
    return NULL;
}

struct hk_sources *hk_sources_parse(const char *text, size_t len, const char *base, uint64_t default_max_body,
                                    hk_env_fn env, char *err, size_t errlen)
{
    return hk_sources_parse_with(text, len, base, default_max_body, env, hk_sources_read_file, err, errlen);
}

struct hk_sources *hk_sources_load(const char *path, uint64_t default_max_body, hk_env_fn env, char *err,
                                   size_t errlen)
{
    char *text = malloc(HK_SOURCES_FILE_MAX);
    if (!text)
        abort();
    size_t len = 0;
    struct hk_sources *s = NULL;
    int e = hk_sources_read_file(path, text, HK_SOURCES_FILE_MAX, &len);
    if (e == EFBIG)
        snprintf(err, errlen, "%s: larger than %d bytes", path, HK_SOURCES_FILE_MAX);
    else if (e == EINVAL)
        snprintf(err, errlen, "%s: not a regular file", path);
    else if (e)
        snprintf(err, errlen, "%s: %s", path, strerror(e));
    else
        s = hk_sources_parse(text, len, path, default_max_body, env, err, errlen);
    free(text);
    return s;
}

const struct hk_source *hk_sources_find(const struct hk_sources *s, const char *name, size_t len)
{
    if (!s || len == 0 || len > HK_SOURCE_NAME_MAX)
        return NULL;
    size_t lo = 0, hi = s->n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        const struct hk_source *m = &s->v[mid];
        /* strcmp's order, for a name that is not NUL-terminated. */
        size_t k = len < m->name_len ? len : m->name_len;
        int d = memcmp(name, m->name, k);
        if (d == 0)
            d = len < m->name_len ? -1 : len > m->name_len ? 1 : 0;
        if (d == 0)
            return m;
        if (d < 0)
            hi = mid;
        else
            lo = mid + 1;
    }
    return NULL;
}

void hk_sources_ref(struct hk_sources *s)
{
    atomic_fetch_add_explicit(&s->refs, 1, memory_order_relaxed);
}

void hk_sources_unref(struct hk_sources *s)
{
    if (!s)
        return;
    /* acq_rel: the thread that frees sees every other holder's reads done. */
    if (atomic_fetch_sub_explicit(&s->refs, 1, memory_order_acq_rel) == 1)
        sources_free(s);
}

bool hk_source_trusts(const struct hk_source *src, const uint8_t addr[16])
{
    for (size_t i = 0; i < src->nproxies; i++) {
        const struct hk_cidr *p = &src->proxies[i];
        size_t full = p->bits / 8;
        unsigned rem = p->bits % 8;
        if (memcmp(addr, p->addr, full) != 0)
            continue;
        if (rem && ((addr[full] ^ p->addr[full]) & (uint8_t)(0xff00u >> rem)))
            continue;
        return true;
    }
    return false;
}
