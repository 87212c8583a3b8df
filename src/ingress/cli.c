/* SPDX-License-Identifier: MIT
 * `hookd sign` prints the headers a provider would send with the body on
 * stdin (or a curl command that sends it); `hookd verify` checks a body
 * against headers copied from a delivery and says why it fails. Both go
 * through the server's own code (ingress/verify.c), and neither prints a
 * secret or an expected MAC: only references such as env:STRIPE_SECRET. */
#include "ingress/cli.h"

#include <errno.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include "core/ascii.h"
#include "core/base64.h"
#include "core/buf.h"
#include "core/config.h"
#include "core/crypto.h"
#include "ingress/sources.h"
#include "ingress/verify.h"

#define HEADERS_FILE_MAX (1 << 20)
#define HEADERS_MAX 1000
#define KEY_FILE_MAX 4096
#define DEFAULT_MAX_BODY 1048576
#define TIME_MAX 253402300799LL    /* 9999-12-31T23:59:59Z */

struct opts {
    const char *cmd;
    const char *source, *url, *id, *timestamp, *key_file, *headers;
    bool curl;
};

struct io {
    FILE *in, *out, *err;
    const char *cmd;
};

__attribute__((format(printf, 2, 3))) static int usage_error(struct io *io, const char *fmt, ...)
{
    va_list ap;
    fprintf(io->err, "hookd %s: ", io->cmd);
    va_start(ap, fmt);
    vfprintf(io->err, fmt, ap);
    va_end(ap);
    fputc('\n', io->err);
    return 2;
}

static void usage(FILE *f, const char *cmd)
{
    if (strcmp(cmd, "sign") == 0)
        fputs("usage: hookd sign --source NAME [--curl] [--url URL] [--id ID] [--timestamp UNIX]\n"
              "                  [--ed25519-key FILE] < body\n"
              "Prints the headers the source's provider would send with the body on stdin\n"
              "(signed with its first secret), or with --curl a curl command that sends them.\n"
              "--ed25519-key: the private key (64 hex digits, or base64) for discord and\n"
              "standard-webhooks whpk_ sources. HOOKD_SOURCES names the sources file.\n",
              f);
    else
        fputs("usage: hookd verify --source NAME --headers FILE [--timestamp UNIX] < body\n"
              "Checks the body on stdin against the headers in FILE (\"Name: value\" lines, as\n"
              "printed by hookd sign or copied from the provider's delivery log). Exit 0 when\n"
              "it verifies, 1 with the reason when not, 2 on a usage error.\n"
              "--timestamp: the time to check the signed timestamp against (default: now).\n"
              "HOOKD_SOURCES names the sources file.\n",
              f);
}

/* --name VALUE or --name=VALUE; 1 when argv[*i] is that option. */
static int opt_value(int argc, char **argv, int *i, const char *name, const char **out, struct io *io, int *rc)
{
    const char *a = argv[*i];
    size_t n = strlen(name);
    if (strncmp(a, name, n) != 0)
        return 0;
    if (a[n] == '=') {
        *out = a + n + 1;
    } else if (a[n] == '\0') {
        if (*i + 1 >= argc) {
            *rc = usage_error(io, "%s needs a value", name);
            return 1;
        }
        *out = argv[++*i];
    } else {
        return 0;
    }
    if (!**out)
        *rc = usage_error(io, "%s needs a value", name);
    return 1;
}

static int parse_opts(int argc, char **argv, struct opts *o, struct io *io)
{
    bool sign = strcmp(o->cmd, "sign") == 0;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        int rc = 0;
        if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
            usage(io->out, o->cmd);
            return 0;
        }
        if (sign && !strcmp(a, "--curl")) {
            o->curl = true;
            continue;
        }
        if (opt_value(argc, argv, &i, "--source", &o->source, io, &rc) ||
            opt_value(argc, argv, &i, "--timestamp", &o->timestamp, io, &rc) ||
            (sign && opt_value(argc, argv, &i, "--url", &o->url, io, &rc)) ||
            (sign && opt_value(argc, argv, &i, "--id", &o->id, io, &rc)) ||
            (sign && opt_value(argc, argv, &i, "--ed25519-key", &o->key_file, io, &rc)) ||
            (!sign && opt_value(argc, argv, &i, "--headers", &o->headers, io, &rc))) {
            if (rc)
                return rc;
            continue;
        }
        return usage_error(io, "unknown argument \"%.40s\" (see hookd %s --help)", a, o->cmd);
    }
    if (!o->source)
        return usage_error(io, "--source NAME is required");
    if (!sign && !o->headers)
        return usage_error(io, "--headers FILE is required");
    return -1;
}

/* Up to `max` bytes of `f`; *over when it holds more. */
static int read_bounded(FILE *f, size_t max, struct hk_buf *b, bool *over)
{
    *over = false;
    for (;;) {
        size_t room = max - b->len + 1;
        size_t want = room < 65536 ? room : 65536;
        char *p = hk_buf_reserve(b, want);
        size_t got = fread(p, 1, want, f);
        b->len += got;
        if (b->len > max) {
            *over = true;
            b->len = max;
            return 0;
        }
        if (got < want)
            return ferror(f) ? -1 : 0;
    }
}

static int read_path(struct io *io, const char *what, const char *path, size_t max, struct hk_buf *b)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return usage_error(io, "%s %s: %s", what, path, strerror(errno));
    bool over;
    int rc = read_bounded(f, max, b, &over);
    int e = errno;
    fclose(f);
    if (rc < 0)
        return usage_error(io, "%s %s: %s", what, path, strerror(e));
    if (over)
        return usage_error(io, "%s %s: larger than %zu bytes", what, path, max);
    return 0;
}

static uint64_t default_max_body(void)
{
    int64_t v;
    const char *s = hk_env("HOOKD_MAX_BODY_BYTES");
    if (s && hk_parse_int(s, 1, 1 << 30, &v) == 0)
        return (uint64_t)v;
    return DEFAULT_MAX_BODY;
}

/* Print `s` for a POSIX shell: bare when it is plainly safe, else in
 * single quotes (a quote inside becomes '\''). */
static void put_shell(FILE *f, const char *s, size_t n)
{
    bool bare = n > 0;
    for (size_t i = 0; i < n && bare; i++)
        bare = (s[i] >= 'a' && s[i] <= 'z') || (s[i] >= 'A' && s[i] <= 'Z') || (s[i] >= '0' && s[i] <= '9') ||
               strchr("_@%+=:,./-", s[i]);
    if (bare) {
        fwrite(s, 1, n, f);
        return;
    }
    fputc('\'', f);
    for (size_t i = 0; i < n; i++) {
        if (s[i] == '\'')
            fputs("'\\''", f);
        else
            fputc(s[i], f);
    }
    fputc('\'', f);
}

/* An ed25519 private key: 64 hex digits (the seed), 128 (seed and public
 * key, as NaCl writes it), or base64 of 32 or 64 bytes, after an optional
 * whsk_ (Standard Webhooks). */
static int parse_private_key(const char *s, size_t n, uint8_t priv[32])
{
    uint8_t tmp[64];
    int rc = -1;
    while (n && (s[n - 1] == '\n' || s[n - 1] == '\r' || s[n - 1] == ' ' || s[n - 1] == '\t'))
        n--;
    if (n > 5 && memcmp(s, "whsk_", 5) == 0)
        s += 5, n -= 5;
    if ((n == 64 || n == 128) && hk_hex_decode(s, tmp, n / 2) == 0) {
        rc = 0;
    } else {
        long k = hk_base64_decode(s, n, tmp, sizeof tmp);
        if (k == 32 || k == 64)
            rc = 0;
    }
    if (rc == 0)
        memcpy(priv, tmp, 32);
    explicit_bzero(tmp, sizeof tmp);
    return rc;
}

static int parse_time(struct io *io, const char *s, int64_t *now)
{
    if (!s) {
        *now = (int64_t)time(NULL);
        return 0;
    }
    if (hk_parse_int(s, 0, TIME_MAX, now) < 0)
        return usage_error(io, "--timestamp: unix seconds, such as 1700000000");
    return 0;
}

/* The snapshot and the source; 0, or the exit code. */
static int open_source(struct io *io, const char *path, const char *name, struct hk_sources **ss,
                       const struct hk_source **src)
{
    char err[512];
    if (!path)
        return usage_error(io, "HOOKD_SOURCES is not set (the sources file that names the source)");
    size_t n = strlen(name);
    if (!hk_source_name_ok(name, n))
        return usage_error(io, "--source: 1 to %d characters of a-z 0-9 _ -", HK_SOURCE_NAME_MAX);
    *ss = hk_sources_load(path, default_max_body(), hk_env, err, sizeof err);
    if (!*ss)
        return usage_error(io, "%s", err);
    *src = hk_sources_find(*ss, name, n);
    if (!*src)
        return usage_error(io, "no source \"%s\" in %s", name, path);
    return 0;
}

static int read_body(struct io *io, const struct hk_source *src, struct hk_buf *body)
{
    bool over;
    if (read_bounded(io->in, src->max_body, body, &over) < 0)
        return usage_error(io, "reading the body from stdin: %s", strerror(errno));
    if (over)
        return usage_error(io, "the body is larger than the source's maxBodyBytes (%llu)",
                           (unsigned long long)src->max_body);
    return 0;
}

/* ---------------------------------------------------------------- sign */

static bool signs_with_ed25519(const struct hk_source *src)
{
    return src->nsecrets && src->secrets[0].ed25519;
}

static int sign_key(struct io *io, const struct opts *o, const struct hk_source *src, uint8_t priv[32], bool *have)
{
    *have = false;
    if (!signs_with_ed25519(src)) {
        if (o->key_file)
            return usage_error(io, "--ed25519-key: source \"%s\" signs with an HMAC secret, not an ed25519 key",
                               src->name);
        return 0;
    }
    if (!o->key_file)
        return usage_error(io,
                           "source \"%s\" holds an ed25519 public key (%s): pass the private key with "
                           "--ed25519-key FILE",
                           src->name, src->secrets[0].ref);
    struct hk_buf b = HK_BUF_INIT;
    int rc = read_path(io, "--ed25519-key", o->key_file, KEY_FILE_MAX, &b);
    if (rc == 0 && parse_private_key(b.p ? b.p : "", b.len, priv) < 0)
        rc = usage_error(io, "--ed25519-key %s: not a private key (64 hex digits, or base64 of 32 or 64 bytes)",
                         o->key_file);
    if (b.p)
        explicit_bzero(b.p, b.cap);
    hk_buf_free(&b);
    if (rc)
        return rc;
    *have = true;
    uint8_t pub[32];
    if (hk_ed25519_public(priv, pub) == 0 && src->secrets[0].len == 32 &&
        hk_crypto_memeq(pub, src->secrets[0].key, 32) != 0)
        fprintf(io->err, "hookd sign: warning: this key's public half is not %s, the source's first key: hookd "
                         "will refuse the signature\n", src->secrets[0].ref);
    return 0;
}

static bool has_header(const char *p, size_t n, const char *name)
{
    size_t k = strlen(name);
    return n > k && p[k] == ':' && strncasecmp(p, name, k) == 0;
}

/* A Content-Type for curl when the scheme implies none: curl would send
 * application/x-www-form-urlencoded, which a contentTypes list refuses. */
static const char *guess_content_type(const struct hk_source *src, const char *body, size_t n)
{
    if (src->ncontent_types)
        return src->content_types[0];
    size_t i = 0;
    while (i < n && (body[i] == ' ' || body[i] == '\t' || body[i] == '\r' || body[i] == '\n'))
        i++;
    if (i < n && (body[i] == '{' || body[i] == '['))
        return "application/json";
    return "application/octet-stream";
}

static int run_sign(struct io *io, const struct opts *o, const struct hk_source *src, const struct hk_buf *body,
                    int64_t now)
{
    uint8_t priv[32];
    bool have_priv;
    int rc = sign_key(io, o, src, priv, &have_priv);
    if (rc)
        return rc;
    struct hk_buf out = HK_BUF_INIT;
    char err[256];
    const char *bp = body->p ? body->p : "";
    if (hk_sign(src, bp, body->len, now, o->id, have_priv ? priv : NULL, &out, err, sizeof err) < 0) {
        explicit_bzero(priv, sizeof priv);
        hk_buf_free(&out);
        return usage_error(io, "%s", err);
    }
    explicit_bzero(priv, sizeof priv);

    if (o->curl)
        fputs("curl -sS --data-binary @-", io->out);
    bool ctype = false;
    for (size_t i = 0; i < out.len;) {
        const char *p = out.p + i;
        const char *nl = memchr(p, '\n', out.len - i);
        size_t n = nl ? (size_t)(nl - p) : out.len - i;
        i += n + (nl != NULL);
        if (n && p[n - 1] == '\r')
            n--;
        if (!n)
            continue;
        ctype |= has_header(p, n, "content-type");
        if (o->curl) {
            fputs(" -H ", io->out);
            put_shell(io->out, p, n);
        } else {
            fwrite(p, 1, n, io->out);
            fputc('\n', io->out);
        }
    }
    if (o->curl) {
        if (!ctype) {
            char h[300];
            int k = snprintf(h, sizeof h, "Content-Type: %s", guess_content_type(src, bp, body->len));
            fputs(" -H ", io->out);
            put_shell(io->out, h, (size_t)k < sizeof h ? (size_t)k : sizeof h - 1);
        }
        fputc(' ', io->out);
        if (o->url) {
            put_shell(io->out, o->url, strlen(o->url));
        } else {
            char url[128];
            int k = snprintf(url, sizeof url, "http://localhost:8080/hooks/%s", src->name);
            put_shell(io->out, url, (size_t)k);
        }
        fputc('\n', io->out);
    }
    hk_buf_free(&out);
    return 0;
}

/* -------------------------------------------------------------- verify */

static bool ends_with_http_version(const char *p, size_t n)
{
    /* "POST /hooks/x HTTP/1.1" or "HTTP/1.1 200 OK" */
    if (n >= 5 && memcmp(p, "HTTP/", 5) == 0)
        return true;
    for (size_t i = n; i-- > 0;) {
        if (p[i] == ' ')
            return n - i > 6 && memcmp(p + i + 1, "HTTP/", 5) == 0;
    }
    return false;
}

/* "Name: value" lines into h (pointing into text, which is NUL-free). Blank
 * lines and a leading request or status line are skipped; "> " (curl -v)
 * is dropped. Returns 0, or an exit code. Quotes nothing of the file: a
 * misplaced token must not end up on a terminal. */
static int parse_headers_file(struct io *io, const char *path, char *text, size_t len, struct hk_hdr *h,
                              size_t *nh)
{
    size_t line = 0, i = 0;
    bool first = true;
    *nh = 0;
    if (memchr(text, '\0', len))
        return usage_error(io, "--headers %s: a NUL byte (is this a text file?)", path);
    while (i < len) {
        char *p = text + i;
        char *nl = memchr(p, '\n', len - i);
        size_t n = nl ? (size_t)(nl - p) : len - i;
        i += n + (nl != NULL);
        if (++line > HEADERS_MAX)
            return usage_error(io, "--headers %s: more than %d lines", path, HEADERS_MAX);
        if (n && p[n - 1] == '\r')
            n--;
        if (n >= 2 && p[0] == '>' && p[1] == ' ')
            p += 2, n -= 2;
        while (n && (p[n - 1] == ' ' || p[n - 1] == '\t'))
            n--;
        if (!n)
            continue;
        bool was_first = first;
        first = false;
        char *colon = memchr(p, ':', n);
        size_t nlen = colon ? (size_t)(colon - p) : 0;
        bool name_ok = nlen > 0;
        for (size_t k = 0; k < nlen && name_ok; k++)
            name_ok = hk_ascii_printable(p + k, 1, 0x21) && !strchr("()<>@,;:\\\"/[]?={}", p[k]);
        if (!name_ok) {
            if (was_first && ends_with_http_version(p, n))
                continue;
            return usage_error(io, "--headers %s: line %zu is not \"Name: value\"", path, line);
        }
        char *v = colon + 1;
        size_t vn = n - nlen - 1;
        while (vn && (*v == ' ' || *v == '\t'))
            v++, vn--;
        h[*nh] = (struct hk_hdr){.name = p, .name_len = nlen, .value = v, .value_len = vn};
        p[nlen] = '\0';
        v[vn] = '\0';
        (*nh)++;
    }
    return 0;
}

static void print_refs(FILE *f, const struct hk_source *src)
{
    fputs("tried:", f);
    for (size_t i = 0; i < src->nsecrets; i++)
        fprintf(f, "%s %s", i ? "," : "", src->secrets[i].ref);
    fputc('\n', f);
}

static void explain(FILE *f, const struct hk_verify *v, const struct hk_source *src, const char *body, size_t n,
                    size_t nh)
{
    const char *scheme = hk_scheme_name(src->scheme);
    fprintf(f, "failed: %s", hk_vreason_name(v->reason));
    if (v->header)
        fprintf(f, " (header %s)", v->header);
    fputc('\n', f);
    switch (v->reason) {
    case HK_VR_MISSING_HEADER:
        fprintf(f, "hint: scheme %s needs %s; the headers file gave %zu header(s)\n", scheme,
                v->header ? v->header : "a header it did not find", nh);
        break;
    case HK_VR_MALFORMED_HEADER:
        fprintf(f, "hint: the value is not in the form scheme %s sends (or the header came twice); copy it exactly "
                   "as delivered\n", scheme);
        break;
    case HK_VR_TIMESTAMP:
        fprintf(f, "skew: %llds (the signed time is %s); tolerance is %llds\n",
                (long long)(v->skew_s < 0 ? -v->skew_s : v->skew_s), v->skew_s < 0 ? "in the future" : "in the past",
                (long long)src->tolerance_s);
        fprintf(f, "hint: to check an old delivery, pass --timestamp %lld (the signed time)\n", (long long)v->ts);
        break;
    case HK_VR_NO_SECRET:
        print_refs(f, src);
        fprintf(f, "hint: no secret of source \"%s\" is of the kind this signature needs (standard-webhooks: v1 "
                   "needs a whsec_ secret, v1a a whpk_ public key)\n", src->name);
        break;
    case HK_VR_NO_MATCH:
        print_refs(f, src);
        fputs("hint: the body must be the exact bytes received; a trailing newline changes the MAC\n", f);
        if (n && body[n - 1] == '\n')
            fputs("hint: this body ends with a newline (echo and most editors add one): was it in the delivery?\n", f);
        if (n == 0)
            fputs("hint: the body is empty: was it given on stdin?\n", f);
        if (src->scheme == HK_SCHEME_TWILIO)
            fprintf(f, "hint: Twilio signs the URL it posts to: publicUrl must be exactly %s as configured in "
                       "Twilio\n", src->public_url);
        if (src->scheme == HK_SCHEME_HMAC)
            fprintf(f, "hint: check algorithm (%s), encoding (%s) and prefix against the provider's documentation\n",
                    hk_md_name(src->algorithm), src->encoding == HK_ENC_HEX ? "hex" : "base64");
        if (src->nsecrets > 0 && !src->secrets[0].ed25519)
            fputs("hint: a rotated secret? list both old and new under secrets\n", f);
        break;
    default:
        break;
    }
}

static int run_verify(struct io *io, const struct opts *o, const struct hk_source *src, const struct hk_buf *body,
                      int64_t now)
{
    struct hk_buf text = HK_BUF_INIT;
    struct hk_hdr *h = NULL;
    size_t nh = 0;
    int rc = read_path(io, "--headers", o->headers, HEADERS_FILE_MAX, &text);
    if (rc)
        goto out;
    hk_buf_putc(&text, '\0');
    text.len--;
    h = calloc(HEADERS_MAX, sizeof *h);
    if (!h)
        abort();
    if ((rc = parse_headers_file(io, o->headers, text.p, text.len, h, &nh)) != 0)
        goto out;
    struct hk_hdr_list list = {h, nh};
    struct hk_hdrs hdrs = {hk_hdr_list_get, &list};
    struct hk_verify v;
    const char *bp = body->p ? body->p : "";
    enum hk_vreason r = hk_verify_all(&v, src, &hdrs, bp, body->len, now);
    if (r == HK_VR_OK) {
        if (v.matched >= 0 && (size_t)v.matched < src->nsecrets)
            fprintf(io->out, "ok: verified with secret %s (scheme %s)\n", src->secrets[v.matched].ref,
                    hk_scheme_name(src->scheme));
        else
            fprintf(io->out, "ok: nothing to verify (scheme %s)\n", hk_scheme_name(src->scheme));
        rc = 0;
    } else {
        explain(io->out, &v, src, bp, body->len, nh);
        rc = 1;
    }
out:
    /* The file may hold a token (gitlab, token schemes). */
    if (text.p)
        explicit_bzero(text.p, text.cap);
    hk_buf_free(&text);
    free(h);
    return rc;
}

int hk_ingress_cli_io(int argc, char **argv, const char *sources_path, FILE *in, FILE *out, FILE *err)
{
    struct opts o = {0};
    struct io io = {in, out, err, "sign"};
    if (argc < 1 || (strcmp(argv[0], "sign") != 0 && strcmp(argv[0], "verify") != 0)) {
        fputs("hookd: expected sign or verify\n", err);
        return 2;
    }
    o.cmd = io.cmd = argv[0];
    int rc = parse_opts(argc, argv, &o, &io);
    if (rc >= 0)
        return rc;
    int64_t now;
    if ((rc = parse_time(&io, o.timestamp, &now)) != 0)
        return rc;
    struct hk_sources *ss = NULL;
    const struct hk_source *src = NULL;
    struct hk_buf body = HK_BUF_INIT;
    if ((rc = open_source(&io, sources_path, o.source, &ss, &src)) != 0)
        goto out;
    if ((rc = read_body(&io, src, &body)) != 0)
        goto out;
    rc = strcmp(o.cmd, "sign") == 0 ? run_sign(&io, &o, src, &body, now) : run_verify(&io, &o, src, &body, now);
out:
    fflush(out);
    hk_buf_free(&body);
    hk_sources_unref(ss);
    return rc;
}

int hk_ingress_cli(int argc, char **argv, const char *sources_path)
{
    return hk_ingress_cli_io(argc, argv, sources_path, stdin, stdout, stderr);
}
