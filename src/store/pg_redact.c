/* SPDX-License-Identifier: MIT
 * Passwords and data out of logs: hk_pg_redact (a connection string with
 * every password replaced by "***") and hk_pg_scrub (a libpq message on one
 * line, without the parts of a server error that quote row data, and with
 * the passwords a connection string holds replaced the same way). */
#include "store/pg.h"

#include <ctype.h>
#include <stdbool.h>
#include <string.h>

#include "core/ascii.h"
#include "core/buf.h"

static bool is_uri(const char *s)
{
    return strncmp(s, "postgresql://", 13) == 0 || strncmp(s, "postgres://", 11) == 0;
}

/* Percent-decode p[0..n) into b. Malformed escapes stay as they are. */
static void put_decoded(struct hk_buf *b, const char *p, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        if (p[i] == '%' && i + 2 < n && hk_hex_val(p[i + 1]) >= 0 && hk_hex_val(p[i + 2]) >= 0) {
            hk_buf_putc(b, (char)(hk_hex_val(p[i + 1]) * 16 + hk_hex_val(p[i + 2])));
            i += 2;
        } else {
            hk_buf_putc(b, p[i]);
        }
    }
}

static bool key_is_password(const char *k, size_t n, bool encoded)
{
    if (!encoded)
        return n == 8 && strncmp(k, "password", 8) == 0;
    struct hk_buf b = HK_BUF_INIT;
    put_decoded(&b, k, n);
    bool yes = b.len == 8 && strncmp(b.p, "password", 8) == 0;
    hk_buf_free(&b);
    return yes;
}

/* Walk a connection string: copy it to `out` (when not NULL) with each
 * password replaced by "***", and remember where the passwords are. */
struct walk {
    struct hk_buf *out;
    const char *secrets[4];
    size_t secret_len[4];
    bool secret_uri[4];
    int nsecrets;
};

static void put(struct walk *w, const char *p, size_t n)
{
    if (w->out)
        hk_buf_put(w->out, p, n);
}

static void found(struct walk *w, const char *p, size_t n, bool uri)
{
    put(w, "***", 3);
    if (w->nsecrets < 4 && n > 0) {
        w->secrets[w->nsecrets] = p;
        w->secret_len[w->nsecrets] = n;
        w->secret_uri[w->nsecrets] = uri;
        w->nsecrets++;
    }
}

static void walk_uri(struct walk *w, const char *url)
{
    const char *p = strstr(url, "://") + 3;
    const char *auth_end = p + strcspn(p, "/?");
    const char *at = NULL;
    for (const char *q = p; q < auth_end; q++)
        if (*q == '@')
            at = q;   /* the last one: a raw '@' in a password still ends up redacted */
    put(w, url, (size_t)(p - url));
    if (at) {
        const char *colon = memchr(p, ':', (size_t)(at - p));
        if (colon) {
            put(w, p, (size_t)(colon + 1 - p));
            found(w, colon + 1, (size_t)(at - colon - 1), true);
            p = at;
        }
    }
    put(w, p, (size_t)(auth_end - p));
    p = auth_end;
    const char *qm = strchr(p, '?');
    if (!qm) {
        put(w, p, strlen(p));
        return;
    }
    put(w, p, (size_t)(qm + 1 - p));
    p = qm + 1;
    while (*p != '\0') {
        size_t n = strcspn(p, "&");
        const char *eq = memchr(p, '=', n);
        if (eq && key_is_password(p, (size_t)(eq - p), true)) {
            put(w, p, (size_t)(eq + 1 - p));
            found(w, eq + 1, (size_t)(p + n - eq - 1), true);
        } else {
            put(w, p, n);
        }
        p += n;
        if (*p == '&') {
            put(w, "&", 1);
            p++;
        }
    }
}

/* key = value pairs, values optionally single-quoted, backslash escapes. */
static void walk_kv(struct walk *w, const char *s)
{
    while (*s != '\0') {
        const char *sp = s;
        while (isspace((unsigned char)*s))
            s++;
        put(w, sp, (size_t)(s - sp));
        if (*s == '\0')
            break;
        const char *k = s;
        while (*s != '\0' && *s != '=' && !isspace((unsigned char)*s))
            s++;
        size_t klen = (size_t)(s - k);
        const char *after_key = s;
        while (isspace((unsigned char)*s))
            s++;
        if (*s != '=') {
            /* Not key=value: it might be anything, a password included. */
            found(w, k, strlen(k), false);
            return;
        }
        put(w, k, klen);
        put(w, after_key, (size_t)(s - after_key) + 1);
        s++;
        sp = s;
        while (isspace((unsigned char)*s))
            s++;
        put(w, sp, (size_t)(s - sp));
        const char *v = s;
        if (*s == '\'') {
            s++;
            while (*s != '\0' && *s != '\'') {
                if (*s == '\\' && s[1] != '\0')
                    s++;
                s++;
            }
            if (*s == '\'')
                s++;
        } else {
            while (*s != '\0' && !isspace((unsigned char)*s)) {
                if (*s == '\\' && s[1] != '\0')
                    s++;
                s++;
            }
        }
        if (key_is_password(k, klen, false))
            found(w, v, (size_t)(s - v), false);
        else
            put(w, v, (size_t)(s - v));
    }
}

static void walk(struct walk *w, const char *url)
{
    if (is_uri(url))
        walk_uri(w, url);
    else
        walk_kv(w, url);
}

static void copy_out(const struct hk_buf *b, char *out, size_t outlen)
{
    if (outlen == 0)
        return;
    size_t n = b->len < outlen - 1 ? b->len : outlen - 1;
    if (n > 0)
        memcpy(out, b->p, n);
    out[n] = '\0';
}

void hk_pg_redact(const char *url, char *out, size_t outlen)
{
    struct hk_buf b = HK_BUF_INIT;
    struct walk w = {.out = &b};
    walk(&w, url ? url : "");
    copy_out(&b, out, outlen);
    hk_buf_free(&b);
}

/* Replace every occurrence of `sec` in b (from `from`) by "***". */
static void replace_all(struct hk_buf *b, const char *sec, size_t n)
{
    if (n == 0 || b->len < n)
        return;
    struct hk_buf r = HK_BUF_INIT;
    size_t i = 0;
    while (i < b->len) {
        if (i + n <= b->len && memcmp(b->p + i, sec, n) == 0) {
            hk_buf_put(&r, "***", 3);
            i += n;
        } else {
            hk_buf_putc(&r, b->p[i++]);
        }
    }
    hk_buf_free(b);
    *b = r;
}

/* Does the line at p start (after blanks) a part of a server message that
 * quotes data: DETAIL ("Failing row contains (...)", "Key (...)=(...)")
 * or CONTEXT (bind parameters, when the server is set to report them)? */
static bool quotes_data(const char *p)
{
    p += strspn(p, " \t");
    return strncmp(p, "DETAIL:", 7) == 0 || strncmp(p, "CONTEXT:", 8) == 0;
}

void hk_pg_scrub(const char *url, const char *msg, char *out, size_t outlen)
{
    struct hk_buf b = HK_BUF_INIT;
    bool space = false;
    const char *p = msg ? msg : "";
    for (; *p != '\0'; p++) {
        /* Everything from such a line on goes: a value quoted there may
         * hold newlines of its own, so no later line is safe either. */
        if ((p == msg || p[-1] == '\n') && quotes_data(p))
            break;
        if (*p == '\n' || *p == '\r' || *p == '\t' || *p == ' ') {
            space = b.len > 0;
            continue;
        }
        if (space)
            hk_buf_putc(&b, ' ');
        space = false;
        hk_buf_putc(&b, *p);
    }
    struct walk w = {0};
    walk(&w, url ? url : "");
    for (int i = 0; i < w.nsecrets; i++) {
        const char *s = w.secrets[i];
        size_t n = w.secret_len[i];
        struct hk_buf d = HK_BUF_INIT;
        if (!w.secret_uri[i] && n >= 2 && s[0] == '\'') {
            /* The value a key=value string means: unquoted, unescaped. */
            for (size_t k = 1; k + 1 < n; k++) {
                if (s[k] == '\\' && k + 2 < n)
                    k++;
                hk_buf_putc(&d, s[k]);
            }
        } else if (w.secret_uri[i]) {
            put_decoded(&d, s, n);
        } else {
            for (size_t k = 0; k < n; k++) {
                if (s[k] == '\\' && k + 1 < n)
                    k++;
                hk_buf_putc(&d, s[k]);
            }
        }
        replace_all(&b, s, n);
        replace_all(&b, d.p, d.len);
        hk_buf_free(&d);
    }
    copy_out(&b, out, outlen);
    hk_buf_free(&b);
}
