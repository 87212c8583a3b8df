/* SPDX-License-Identifier: MIT
 * HOOKD_API_TOKENS_FILE's parser. Errors name the line and the field but
 * quote nothing from the file: an operator who put the token in the wrong
 * column must not find it in a log. */
#include "auth/tokens_file.h"

#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "auth/token.h"
#include "core/ascii.h"

#define MAX_FIELDS 4

struct span {
    const char *p;
    size_t n;
};

__attribute__((format(printf, 4, 5))) static int fail(char *err, size_t errlen, size_t line, const char *fmt, ...)
{
    if (errlen) {
        int k = snprintf(err, errlen, "line %zu: ", line);
        if (k >= 0 && (size_t)k < errlen) {
            va_list ap;
            va_start(ap, fmt);
            vsnprintf(err + k, errlen - (size_t)k, fmt, ap);
            va_end(ap);
        }
    }
    return -1;
}

static bool blank(char c)
{
    return c == ' ' || c == '\t';
}

/* One line's record; returns 0 or -1 with err set. */
static int parse_line(const char *p, size_t n, size_t line, struct hk_token_rec *r, char *err, size_t errlen)
{
    struct span f[MAX_FIELDS];
    size_t nf = 0, i = 0;
    while (i < n) {
        while (i < n && blank(p[i]))
            i++;
        if (i == n)
            break;
        if (nf == MAX_FIELDS)
            return fail(err, errlen, line, "too many fields (expected NAME SCOPES TOKEN [expires=<RFC 3339>])");
        size_t start = i;
        while (i < n && !blank(p[i]))
            i++;
        f[nf].p = p + start;
        f[nf].n = i - start;
        nf++;
    }
    if (nf < 3)
        return fail(err, errlen, line, "too few fields (expected NAME SCOPES TOKEN [expires=<RFC 3339>])");

    memset(r, 0, sizeof *r);
    if (hk_token_kind_of(f[0].p, f[0].n, NULL) == 0)
        return fail(err, errlen, line, "the name is a token: the fields are NAME SCOPES TOKEN");
    if (!hk_token_name_ok(f[0].p, f[0].n))
        return fail(err, errlen, line, "bad name: 1 to %d characters of A-Z a-z 0-9 . _ -", HK_TOKEN_NAME_MAX);
    memcpy(r->name, f[0].p, f[0].n);
    r->name[f[0].n] = '\0';

    if (hk_scopes_parse(f[1].p, f[1].n, &r->scopes) < 0)
        return fail(err, errlen, line, "bad scopes: read, delete, admin, comma-separated");

    static const char sha[] = "sha256:";
    enum hk_token_kind kind;
    if (f[2].n > sizeof sha - 1 && memcmp(f[2].p, sha, sizeof sha - 1) == 0) {
        if (f[2].n != sizeof sha - 1 + 64 || hk_hex_decode(f[2].p + sizeof sha - 1, r->hash, 32) < 0)
            return fail(err, errlen, line, "bad token hash: sha256: and 64 hex digits");
    } else if (hk_token_kind_of(f[2].p, f[2].n, &kind) == 0 && kind == HK_TOKEN_API) {
        hk_token_hash(f[2].p, f[2].n, r->hash);
    } else {
        return fail(err, errlen, line, "bad token: hkd_ and 43 base64url characters, or sha256:<64 hex>");
    }

    if (nf == 4) {
        static const char ex[] = "expires=";
        if (f[3].n < sizeof ex - 1 || memcmp(f[3].p, ex, sizeof ex - 1) != 0)
            return fail(err, errlen, line, "unknown fourth field (expected expires=<RFC 3339>)");
        /* 0 means "never" in a record, so the epoch itself and anything
         * before it are refused rather than silently made eternal. */
        if (hk_rfc3339_parse(f[3].p + sizeof ex - 1, f[3].n - (sizeof ex - 1), &r->expires_us) < 0 ||
            r->expires_us <= 0)
            return fail(err, errlen, line, "bad expires: an RFC 3339 time after 1970, e.g. 2027-01-31T00:00:00Z");
    }
    return 0;
}

int hk_tokens_file_parse(const char *text, size_t n, struct hk_token_rec *out, size_t max, size_t *count,
                         char *err, size_t errlen)
{
    size_t got = 0, line = 0, i = 0;
    int rc = 0;
    if (errlen)
        err[0] = '\0';
    const char *z = n ? memchr(text, '\0', n) : NULL;
    if (z) {
        /* Name the line the NUL is on: count the line ends before it. */
        size_t ln = 1;
        for (const char *q = text; q < z; q++)
            ln += *q == '\n';
        rc = fail(err, errlen, ln, "a NUL byte (is this a text file?)");
        goto out;
    }
    while (i < n) {
        line++;
        const char *p = text + i;
        const char *nl = memchr(p, '\n', n - i);
        size_t len = nl ? (size_t)(nl - p) : n - i;
        i += len + (nl != NULL);
        if (len && p[len - 1] == '\r')
            len--;
        size_t j = 0;
        while (j < len && blank(p[j]))
            j++;
        if (j == len || p[j] == '#')
            continue;
        for (size_t k = j; k < len; k++) {
            unsigned char c = (unsigned char)p[k];
            if ((c < 0x20 && c != '\t') || c == 0x7f) {
                rc = fail(err, errlen, line, "a control character");
                goto out;
            }
        }
        if (got == max) {
            rc = fail(err, errlen, line, "more than %zu tokens", max);
            goto out;
        }
        struct hk_token_rec *r = &out[got];
        if ((rc = parse_line(p + j, len - j, line, r, err, errlen)) < 0)
            goto out;
        /* Duplicates are found by a scan over what was read: the file holds
         * a handful of tokens, read once at start. */
        for (size_t k = 0; k < got; k++) {
            if (strcmp(out[k].name, r->name) == 0) {
                rc = fail(err, errlen, line, "a name already used by an earlier token");
                goto out;
            }
            if (hk_ct_equal(out[k].hash, r->hash, 32)) {
                rc = fail(err, errlen, line, "the same token as an earlier line");
                goto out;
            }
        }
        got++;
    }
out:
    *count = rc < 0 ? 0 : got;
    return rc;
}
