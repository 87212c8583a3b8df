/* SPDX-License-Identifier: MIT
 * The web inspector's server side through a real hookd (docs/ui.md): the
 * page and its content-hashed assets (names and bytes recomputed here from
 * ui/ with libcrypto, independently of src/api/ui_embed.py), their
 * headers, gzip negotiation, ETags, HEAD, refusals of odd paths and
 * methods, the 60 KB budget; the ring of refused deliveries (reasons,
 * paging, its bound, scopes, and never a secret); GET
 * /api/sessions/current; the raw-body endpoint's headers. SQLite only:
 * nothing here depends on the store. */
#include <criterion/criterion.h>

#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <openssl/evp.h>
#include <openssl/hmac.h>

#include "harness.h"

#define CSP                                                                                                \
    "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; " \
    "font-src 'self'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'"
#define BODY_CSP "sandbox; default-src 'none'"
#define TOKEN_LEN 47
#define GH_SECRET "gh-Secret-ui-5b7d1f"
#define HMAC_SECRET "hmac-Secret-ui-9c2e4a"
#define TOKEN_SECRET "token-Secret-ui-3a8f6d"
#define WRONG_TOKEN "wrong-token-ui-e1c5b0"
#define HDRS(...) ((const char *const[]){__VA_ARGS__, NULL})

static struct hk_server srv;

static void teardown(void)
{
    hk_server_cleanup(&srv);
}

TestSuite(ui, .fini = teardown, .timeout = 120);

static void sqlite_only(void)
{
    if (hk_store_is_pg())
        cr_skip_test("store-independent: the integ suite runs it on SQLite");
}

/* ---- what the build should have embedded, recomputed from ui/ ---- */

struct file {
    const char *name;          /* in ui/ */
    const char *type;          /* the Content-Type it must be served with */
    char *raw;
    size_t raw_len;
    char *out;                 /* references rewritten */
    size_t out_len;
    char path[128];            /* where it is served */
};

static struct file files[] = {
    {.name = "index.html", .type = "text/html; charset=utf-8"},
    {.name = "app.js", .type = "text/javascript; charset=utf-8"},
    {.name = "app.css", .type = "text/css; charset=utf-8"},
    {.name = "icon.svg", .type = "image/svg+xml"},
};
#define NFILES (sizeof files / sizeof files[0])

static void sha256_hex(const void *p, size_t n, char out[65])
{
    unsigned char md[32];
    unsigned int len = 0;
    cr_assert(EVP_Digest(p, n, md, &len, EVP_sha256(), NULL) == 1);
    for (int i = 0; i < 32; i++)
        snprintf(out + 2 * i, 3, "%02x", md[i]);
}

static char *read_file(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    cr_assert_not_null(f, "%s: %s", path, strerror(errno));
    size_t cap = 4096, n = 0;
    char *p = malloc(cap);
    size_t got;
    while ((got = fread(p + n, 1, cap - n - 1, f)) > 0) {
        n += got;
        if (cap - n < 2)
            p = realloc(p, cap *= 2);
    }
    fclose(f);
    p[n] = 0;
    *len = n;
    return p;
}

static bool rewritten_kind(const char *name)
{
    const char *dot = strrchr(name, '.');
    return strcmp(dot, ".html") == 0 || strcmp(dot, ".css") == 0 || strcmp(dot, ".js") == 0;
}

static bool name_char(char c, bool first)
{
    return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') ||
           (!first && (c == '.' || c == '_' || c == '-'));
}

/* Rewrite f's references; false when one names an asset not yet placed. */
static bool rewrite(struct file *f)
{
    static const char pre[] = "/ui/assets/";
    size_t pl = sizeof pre - 1;
    if (!rewritten_kind(f->name)) {
        f->out = malloc(f->raw_len + 1);
        memcpy(f->out, f->raw, f->raw_len + 1);
        f->out_len = f->raw_len;
        return true;
    }
    size_t cap = f->raw_len + 1024, o = 0;
    char *out = malloc(cap);
    for (size_t i = 0; i < f->raw_len;) {
        size_t e = i + pl;
        if (f->raw_len - i >= pl && memcmp(f->raw + i, pre, pl) == 0 && e < f->raw_len && name_char(f->raw[e], true)) {
            while (e < f->raw_len && name_char(f->raw[e], false))
                e++;
            const struct file *to = NULL;
            for (size_t k = 1; k < NFILES; k++)
                if (strlen(files[k].name) == e - i - pl && memcmp(files[k].name, f->raw + i + pl, e - i - pl) == 0)
                    to = &files[k];
            cr_assert_not_null(to, "%s names %.*s, not an embedded file (the build should have failed)", f->name,
                               (int)(e - i), f->raw + i);
            if (!to->path[0]) {
                free(out);
                return false;
            }
            size_t n = strlen(to->path);
            if (o + n + 1 > cap)
                out = realloc(out, cap = 2 * cap + n);
            memcpy(out + o, to->path, n);
            o += n;
            i = e;
            continue;
        }
        if (o + 2 > cap)
            out = realloc(out, cap *= 2);
        out[o++] = f->raw[i++];
    }
    out[o] = 0;
    f->out = out;
    f->out_len = o;
    return true;
}

static void load_files(void)
{
    if (files[0].raw)
        return;
    const char *src = getenv("SRC");
    cr_assert_not_null(src, "SRC names the source tree");
    for (size_t i = 0; i < NFILES; i++) {
        char path[512];
        snprintf(path, sizeof path, "%s/ui/%s", src, files[i].name);
        files[i].raw = read_file(path, &files[i].raw_len);
    }
    for (int round = 0; round < 4; round++)
        for (size_t i = 1; i < NFILES; i++) {
            struct file *f = &files[i];
            if (f->path[0] || !rewrite(f))
                continue;
            char hex[65];
            sha256_hex(f->out, f->out_len, hex);
            const char *dot = strrchr(f->name, '.');
            snprintf(f->path, sizeof f->path, "/ui/assets/%.*s.%.12s%s", (int)(dot - f->name), f->name, hex, dot);
        }
    for (size_t i = 1; i < NFILES; i++)
        cr_assert(files[i].path[0], "%s could not be placed (its references go round)", files[i].name);
    cr_assert(rewrite(&files[0]));
    snprintf(files[0].path, sizeof files[0].path, "/ui");
}

/* ---- requests ---- */

static long req(const char *method, const char *path, const char *const *headers, struct hk_resp *r)
{
    hk_context("%s %s", method, path);
    struct hk_req q = {.method = method, .path = path, .headers = headers};
    hk_do(&srv, NULL, &q, r);
    hk_context("%s", "");
    return r->status;
}

static void expect_header(const struct hk_resp *r, const char *name, const char *want)
{
    char v[1024];
    cr_assert(hk_header(r, name, v, sizeof v), "no %s header:\n%s", name, r->head);
    cr_assert_str_eq(v, want, "%s", name);
}

static void expect_no_header(const struct hk_resp *r, const char *name)
{
    char v[1024];
    cr_assert_null(hk_header(r, name, v, sizeof v), "unexpected %s: %s", name, v);
}

/* The headers every /ui response carries. */
static void expect_secured(const struct hk_resp *r)
{
    expect_header(r, "Content-Security-Policy", CSP);
    expect_header(r, "X-Content-Type-Options", "nosniff");
    expect_header(r, "Referrer-Policy", "no-referrer");
    expect_header(r, "X-Frame-Options", "DENY");
    expect_header(r, "Cross-Origin-Opener-Policy", "same-origin");
    char v[1024];
    cr_assert_eq(hk_head_get(r->head, r->head_len, "Content-Security-Policy", v, sizeof v), 1, "one CSP only");
}

/* gunzip through gzip(1): an inflater that is not the one that deflated. */
static char *gunzip(const char *p, size_t n, size_t *out_len)
{
    char in[512], cmd[1100];
    snprintf(in, sizeof in, "%s/gz.bin", srv.dir);
    FILE *f = fopen(in, "wb");
    cr_assert_not_null(f);
    cr_assert_eq(fwrite(p, 1, n, f), n);
    fclose(f);
    snprintf(cmd, sizeof cmd, "gzip -dc < '%s'", in);
    FILE *pp = popen(cmd, "r");
    cr_assert_not_null(pp);
    size_t cap = 4096, len = 0, got;
    char *out = malloc(cap);
    while ((got = fread(out + len, 1, cap - len - 1, pp)) > 0) {
        len += got;
        if (cap - len < 2)
            out = realloc(out, cap *= 2);
    }
    int st = pclose(pp);
    cr_assert(WIFEXITED(st) && WEXITSTATUS(st) == 0, "gzip -dc failed: the rendering is not gzip");
    out[len] = 0;
    *out_len = len;
    return out;
}

static void start_auth(const char *const *extra)
{
    const char *env[HK_MAX_ENV];
    size_t k = 0;
    env[k++] = "HOOKD_AUTH=on";
    for (size_t i = 0; extra && extra[i]; i++)
        env[k++] = extra[i];
    env[k] = NULL;
    hk_server_start(&srv, env);
}

/* ---- the page and the assets ---- */

Test(ui, page_and_assets_under_hashed_names_with_their_headers)
{
    sqlite_only();
    load_files();
    start_auth(NULL);   /* open even with access control on */
    for (size_t i = 0; i < NFILES; i++) {
        struct file *f = &files[i];
        struct hk_resp r;
        cr_assert_eq(req("GET", f->path, NULL, &r), 200, "%s: %s", f->path, r.body);
        hk_assert_ctype(&r, f->type);
        expect_header(&r, "Content-Type", f->type);
        expect_secured(&r);
        expect_header(&r, "Cache-Control", i == 0 ? "no-cache" : "public, max-age=31536000, immutable");
        expect_header(&r, "Vary", "Accept-Encoding");
        expect_no_header(&r, "Content-Encoding");
        expect_no_header(&r, "WWW-Authenticate");
        char etag[128];
        cr_assert(hk_header(&r, "ETag", etag, sizeof etag));
        cr_assert(hk_matches(etag, "^\"[0-9a-f]{16,64}\"$"), "%s: ETag %s is not a strong quoted hash", f->path, etag);
        cr_assert_eq(r.body_len, f->out_len, "%s: %zu bytes served, %zu expected", f->path, r.body_len, f->out_len);
        cr_assert(memcmp(r.body, f->out, f->out_len) == 0, "%s: the bytes differ from ui/%s (rewritten)", f->path,
                  f->name);
        hk_resp_free(&r);
    }
    /* The page keeps its filters in the query string. */
    struct hk_resp a, b;
    req("GET", "/ui", NULL, &a);
    cr_assert_eq(req("GET", "/ui?source=gh&eventType=push&delivery=failed#x", NULL, &b), 200);
    cr_assert_eq(a.body_len, b.body_len);
    cr_assert(memcmp(a.body, b.body, a.body_len) == 0);
    hk_resp_free(&a);
    hk_resp_free(&b);
    hk_finish(&srv);
}

Test(ui, every_asset_the_page_names_is_served)
{
    sqlite_only();
    load_files();
    hk_server_start(&srv, NULL);
    /* Whatever the page references under /ui/assets/ is a hashed name that
     * answers 200 (the build rewrote every plain name). */
    struct hk_resp r;
    req("GET", "/ui", NULL, &r);
    int n = 0;
    for (const char *p = strstr(r.body, "/ui/assets/"); p; p = strstr(p + 1, "/ui/assets/")) {
        char path[160];
        size_t k = 0;
        while (k < sizeof path - 1 && p[k] && (name_char(p[k], false) || p[k] == '/'))
            path[k] = p[k], k++;
        path[k] = 0;
        cr_assert(hk_matches(path, "^/ui/assets/[A-Za-z0-9_-]+\\.[0-9a-f]{12}\\.[a-z0-9]+$"),
                  "the page names %s, not a hashed asset", path);
        struct hk_resp a;
        cr_assert_eq(req("GET", path, NULL, &a), 200, "%s", path);
        hk_resp_free(&a);
        n++;
    }
    hk_resp_free(&r);
    cr_log_info("the page names %d asset references", n);
    hk_finish(&srv);
}

Test(ui, favicon_is_the_icon_cached_for_a_day)
{
    sqlite_only();
    hk_server_start(&srv, NULL);
    char path[4096];
    snprintf(path, sizeof path, "%s/ui/icon.svg", getenv("SRC") ? getenv("SRC") : "..");
    size_t len;
    char *icon = read_file(path, &len);
    struct hk_resp r;
    cr_assert_eq(req("GET", "/favicon.ico", NULL, &r), 200);
    expect_header(&r, "Content-Type", "image/svg+xml");
    expect_header(&r, "Cache-Control", "public, max-age=86400");
    expect_header(&r, "X-Content-Type-Options", "nosniff");
    cr_assert_eq(r.body_len, len);
    cr_assert_eq(memcmp(r.body, icon, len), 0, "/favicon.ico is ui/icon.svg");
    hk_resp_free(&r);
    cr_assert_eq(req("POST", "/favicon.ico", NULL, &r), 405);
    hk_resp_free(&r);
    free(icon);
    hk_finish(&srv);
}

Test(ui, gzip_by_accept_encoding_and_within_the_budget)
{
    sqlite_only();
    load_files();
    hk_server_start(&srv, NULL);
    static const struct {
        const char *ae;        /* NULL: no Accept-Encoding */
        bool gz;
    } cases[] = {
        {NULL, false},
        {"gzip", true},
        {"gzip;q=0", false},
        {"gzip; q=0.000", false},
        {"GZIP ; Q=1", true},
        {"br, gzip;q=0.5", true},
        {"x-gzip", true},
        {"*", true},
        {"*;q=0", false},
        {"identity", false},
        {"br, deflate", false},
        {"deflate, *;q=0.1, gzip;q=0", false},
        {"gzip;q=0, *", false},
        {"gzip;q=nonsense", false},
        {"", false},
    };
    size_t total_gz = 0, total_id = 0;
    for (size_t i = 0; i < NFILES; i++) {
        struct file *f = &files[i];
        char etag_id[128] = "", etag_gz[128] = "";
        for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
            char h[128];
            snprintf(h, sizeof h, "Accept-Encoding: %s", cases[c].ae ? cases[c].ae : "");
            struct hk_resp r;
            hk_context("%s with %s", f->path, h);
            cr_assert_eq(req("GET", f->path, cases[c].ae ? HDRS(h) : NULL, &r), 200);
            hk_context("%s with %s", f->path, h);
            expect_header(&r, "Vary", "Accept-Encoding");
            expect_secured(&r);
            char etag[128];
            cr_assert(hk_header(&r, "ETag", etag, sizeof etag));
            if (cases[c].gz) {
                expect_header(&r, "Content-Encoding", "gzip");
                size_t n;
                char *plain = gunzip(r.body, r.body_len, &n);
                cr_assert_eq(n, f->out_len, "%s: gzip inflates to %zu bytes, not %zu", f->path, n, f->out_len);
                cr_assert(memcmp(plain, f->out, n) == 0, "%s: gzip inflates to other bytes", f->path);
                free(plain);
                if (!etag_gz[0]) {
                    snprintf(etag_gz, sizeof etag_gz, "%s", etag);
                    total_gz += r.body_len;
                }
                cr_assert_str_eq(etag, etag_gz, "one ETag per rendering");
            } else {
                expect_no_header(&r, "Content-Encoding");
                cr_assert_eq(r.body_len, f->out_len);
                cr_assert(memcmp(r.body, f->out, f->out_len) == 0);
                if (!etag_id[0]) {
                    snprintf(etag_id, sizeof etag_id, "%s", etag);
                    total_id += r.body_len;
                }
                cr_assert_str_eq(etag, etag_id, "one ETag per rendering");
            }
            hk_resp_free(&r);
            hk_context("%s", "");
        }
        cr_assert_str_neq(etag_id, etag_gz, "%s: the gzip and identity renderings share an ETag", f->path);
    }
    cr_log_info("ui: %zu bytes, %zu gzip-compressed", total_id, total_gz);
    cr_assert_leq(total_gz, 61440, "the inspector is %zu bytes gzip-compressed, over 60 KB", total_gz);
    hk_finish(&srv);
}

Test(ui, etag_answers_304_and_head_has_the_length)
{
    sqlite_only();
    load_files();
    hk_server_start(&srv, NULL);
    for (size_t i = 0; i < NFILES; i++) {
        struct file *f = &files[i];
        struct hk_resp r;
        char etag[128], etag_gz[128], h[300];
        req("GET", f->path, NULL, &r);
        cr_assert(hk_header(&r, "ETag", etag, sizeof etag));
        hk_resp_free(&r);
        req("GET", f->path, HDRS("Accept-Encoding: gzip"), &r);
        cr_assert(hk_header(&r, "ETag", etag_gz, sizeof etag_gz));
        size_t gz_len = r.body_len;
        hk_resp_free(&r);

        /* The ETag, weakly compared (W/ ignored), in a list, or "*". */
        for (int k = 0; k < 4; k++) {
            if (k == 0)
                snprintf(h, sizeof h, "If-None-Match: %s", etag);
            else if (k == 1)
                snprintf(h, sizeof h, "If-None-Match: W/%s", etag);
            else if (k == 2)
                snprintf(h, sizeof h, "If-None-Match: \"other\", %s", etag);
            else
                snprintf(h, sizeof h, "If-None-Match: *");
            cr_assert_eq(req("GET", f->path, HDRS(h), &r), 304, "%s with %s: %ld", f->path, h, r.status);
            cr_assert_eq(r.body_len, 0);
            /* RFC 9110 8.6: a 304's Content-Length could only be the 200's. */
            expect_no_header(&r, "Content-Length");
            expect_no_header(&r, "Content-Type");
            if (k != 3)
                expect_header(&r, "ETag", etag);
            expect_secured(&r);
            expect_header(&r, "Vary", "Accept-Encoding");
            expect_header(&r, "Cache-Control", i == 0 ? "no-cache" : "public, max-age=31536000, immutable");
            hk_resp_free(&r);
        }
        /* The identity ETag does not validate the gzip rendering, nor a stranger's. */
        snprintf(h, sizeof h, "If-None-Match: %s", etag);
        cr_assert_eq(req("GET", f->path, HDRS(h, "Accept-Encoding: gzip"), &r), 200);
        hk_resp_free(&r);
        snprintf(h, sizeof h, "If-None-Match: %s", etag_gz);
        cr_assert_eq(req("GET", f->path, HDRS(h, "Accept-Encoding: gzip"), &r), 304);
        hk_resp_free(&r);
        cr_assert_eq(req("GET", f->path, HDRS("If-None-Match: \"0000\""), &r), 200);
        hk_resp_free(&r);

        /* HEAD: the headers of GET, its length, no body. */
        cr_assert_eq(req("HEAD", f->path, NULL, &r), 200);
        char v[64];
        cr_assert(hk_header(&r, "Content-Length", v, sizeof v));
        cr_assert_eq(strtoull(v, NULL, 10), f->out_len, "HEAD %s: Content-Length %s", f->path, v);
        cr_assert_eq(r.body_len, 0);
        expect_secured(&r);
        expect_header(&r, "ETag", etag);
        hk_resp_free(&r);
        cr_assert_eq(req("HEAD", f->path, HDRS("Accept-Encoding: gzip"), &r), 200);
        cr_assert(hk_header(&r, "Content-Length", v, sizeof v));
        cr_assert_eq(strtoull(v, NULL, 10), gz_len);
        expect_header(&r, "Content-Encoding", "gzip");
        hk_resp_free(&r);
    }
    hk_finish(&srv);
}

/* One raw request line; the status of the answer (0: none came). */
static int raw_status(const char *request, struct hk_raw *raw)
{
    int fd = hk_tcp_connect(&srv);
    cr_assert_eq(hk_tcp_sends(fd, request), 0);
    memset(raw, 0, sizeof *raw);
    hk_tcp_read(fd, raw, 1, 5000);
    hk_tcp_close(fd);
    const struct hk_raw_resp *r = hk_raw_final(raw, 0);
    return r ? r->status : 0;
}

Test(ui, unknown_assets_and_path_tricks_are_404)
{
    sqlite_only();
    load_files();
    hk_server_start(&srv, NULL);
    char plain[200], upper[200], slash[200], stale[200];
    snprintf(plain, sizeof plain, "/ui/assets/%s", files[1].name);
    snprintf(upper, sizeof upper, "%s", files[1].path);
    upper[11] = (char)(upper[11] - 32);    /* "App.…" */
    snprintf(slash, sizeof slash, "%s/", files[1].path);
    snprintf(stale, sizeof stale, "/ui/assets/app.000000000000.js");
    const char *const paths[] = {plain, upper, stale, "/ui/assets/nothing", "/ui/assets/index.html",
                                 "/ui/assets/%2e%2e", "/ui/assets/%2e%2e%2fmeson.build",
                                 "/ui/assets/%00", "/ui/assets/app.js%00"};
    for (size_t i = 0; i < sizeof paths / sizeof paths[0]; i++) {
        struct hk_resp r;
        cr_assert_eq(req("GET", paths[i], NULL, &r), 404, "GET %s: %ld %s", paths[i], r.status, r.body);
        hk_context("GET %s", paths[i]);
        json_decref(hk_assert_problem(&r, 404));
        cr_assert(hk_header(&r, "Content-Security-Policy", (char[512]){0}, 512), "GET %s: no CSP\n%s%s", paths[i],
                  r.head, r.body);
        expect_secured(&r);
        expect_no_header(&r, "Cache-Control");
        hk_resp_free(&r);
        hk_context("%s", "");
    }
    /* Paths curl would normalise, and bytes it would not send: raw. */
    const char *const raw_paths[] = {"/ui/assets/..", "/ui/assets/../../etc/passwd", "/ui/assets/./app.js",
                                     "/ui/assets//app.js", slash};
    for (size_t i = 0; i < sizeof raw_paths / sizeof raw_paths[0]; i++) {
        char line[400];
        snprintf(line, sizeof line, "GET %s HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n", raw_paths[i]);
        struct hk_raw raw;
        int st = raw_status(line, &raw);
        cr_assert_eq(st, 404, "GET %s: %d\n%s", raw_paths[i], st, raw.buf);
        cr_assert_null(strstr(raw.buf, "root:"), "GET %s served a file", raw_paths[i]);
        hk_raw_free(&raw);
    }
    /* A NUL byte in the request line is not HTTP. */
    static const char nul[] = "GET /ui/assets/app.js\0.x HTTP/1.1\r\nHost: x\r\n\r\n";
    int fd = hk_tcp_connect(&srv);
    cr_assert_eq(hk_tcp_send(fd, nul, sizeof nul - 1), 0);
    struct hk_raw raw = {0};
    hk_tcp_read(fd, &raw, 1, 5000);
    hk_tcp_close(fd);
    cr_assert_eq(hk_raw_final(&raw, 0) ? hk_raw_final(&raw, 0)->status : 0, 400, "%s", raw.buf);
    hk_raw_free(&raw);
    hk_finish(&srv);
}

Test(ui, other_methods_are_405_and_a_body_too_large_413)
{
    sqlite_only();
    load_files();
    hk_server_start(&srv, NULL);
    const char *const methods[] = {"POST", "PUT", "DELETE", "PATCH", "OPTIONS"};
    const char *const paths[] = {"/ui", files[1].path, files[3].path};
    for (size_t p = 0; p < 3; p++)
        for (size_t m = 0; m < 5; m++) {
            struct hk_resp r;
            struct hk_req q = {.method = methods[m], .path = paths[p], .body = "x", .body_len = 1};
            hk_do(&srv, NULL, &q, &r);
            cr_assert_eq(r.status, 405, "%s %s: %ld", methods[m], paths[p], r.status);
            char allow[64];
            cr_assert(hk_header(&r, "Allow", allow, sizeof allow));
            cr_assert(hk_list_has(allow, "GET"), "Allow: %s", allow);
            hk_resp_free(&r);
        }
    /* The page keeps its headers: a Content-Length over the limit is
     * answered by the inspector, with its headers, and the connection ends. */
    struct hk_raw raw;
    int st = raw_status("GET /ui HTTP/1.1\r\nHost: x\r\nContent-Length: 99999999999\r\n\r\n", &raw);
    cr_assert_eq(st, 413, "%s", raw.buf);
    char v[512];
    cr_assert_not_null(hk_raw_header(&raw, 0, "Content-Security-Policy", v, sizeof v), "%s", raw.buf);
    cr_assert_str_eq(v, CSP);
    hk_raw_free(&raw);
    hk_finish(&srv);
}

/* Needs api/app.c to hand /ui requests the table does not match to
 * hk_api_ui_unrouted (docs/ui.md): "/ui/" and the inspector's headers on
 * 404/405 answered by the router. */
Test(ui, slash_page_and_router_refusals_carry_the_headers)
{
    sqlite_only();
    load_files();
    hk_server_start(&srv, NULL);
    struct hk_resp r;
    cr_assert_eq(req("GET", "/ui/?source=x", NULL, &r), 200, "GET /ui/: %ld", r.status);
    cr_assert_eq(r.body_len, files[0].out_len);
    cr_assert(memcmp(r.body, files[0].out, r.body_len) == 0);
    expect_secured(&r);
    expect_header(&r, "Cache-Control", "no-cache");
    hk_resp_free(&r);
    cr_assert_eq(req("HEAD", "/ui/", NULL, &r), 200);
    hk_resp_free(&r);
    struct hk_req q = {.method = "POST", .path = "/ui/", .body = "x", .body_len = 1};
    hk_do(&srv, NULL, &q, &r);
    cr_assert_eq(r.status, 405);
    expect_secured(&r);
    hk_resp_free(&r);
    q.path = "/ui";
    hk_do(&srv, NULL, &q, &r);
    cr_assert_eq(r.status, 405);
    expect_secured(&r);
    hk_resp_free(&r);
    cr_assert_eq(req("GET", "/ui/nothing", NULL, &r), 404);
    expect_secured(&r);
    hk_resp_free(&r);
    struct hk_raw raw;
    cr_assert_eq(raw_status("GET /ui/assets/../x HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n", &raw), 404);
    char v[512];
    cr_assert_not_null(hk_raw_header(&raw, 0, "Content-Security-Policy", v, sizeof v), "%s", raw.buf);
    hk_raw_free(&raw);
    /* Not the inspector's: /uix, /u. */
    cr_assert_eq(req("GET", "/uix", NULL, &r), 404);
    expect_no_header(&r, "Content-Security-Policy");
    hk_resp_free(&r);
    hk_finish(&srv);
}

/* ---- credentials ---- */

static const char *bearer(const char *tok)
{
    static _Thread_local char ring[8][128];
    static _Thread_local unsigned next;
    char *b = ring[next++ % 8];
    snprintf(b, sizeof ring[0], "Authorization: Bearer %s", tok);
    return b;
}

static void first_token(char out[TOKEN_LEN + 1])
{
    char *err = hk_server_stderr(&srv);
    const char *p = strstr(err, "hkd_");
    cr_assert_not_null(p, "no admin token on the first start:\n%s", err);
    snprintf(out, TOKEN_LEN + 1, "%.*s", TOKEN_LEN, p);
    cr_assert_eq(strlen(out), TOKEN_LEN);
    free(err);
}

static void create_token(const char *name, const char *scope, const char *expires, char tok[TOKEN_LEN + 1])
{
    char *out, *err;
    int st = expires ? hk_server_run(&srv, NULL,
                                     HDRS("token", "create", "--name", name, "--scope", scope, "--expires", expires),
                                     20000, &out, &err)
                     : hk_server_run(&srv, NULL, HDRS("token", "create", "--name", name, "--scope", scope), 20000,
                                     &out, &err);
    cr_assert(st != -1 && WIFEXITED(st) && WEXITSTATUS(st) == 0, "token create: %s", err);
    cr_assert(hk_matches(out, "^hkd_[A-Za-z0-9_-]{43}\n$"), "token create printed %s", out);
    snprintf(tok, TOKEN_LEN + 1, "%.*s", TOKEN_LEN, out);
    free(out);
    free(err);
}

/* POST /api/sessions with `tok`: the session token, CSRF token and the
 * Cookie header a browser would send back. */
struct session {
    char token[TOKEN_LEN + 1], csrf[TOKEN_LEN + 1];
    char cookie[256];
    char expires[64];
};

static void login(const char *tok, struct session *s)
{
    struct hk_resp r;
    struct hk_req q = {.method = "POST", .path = "/api/sessions", .headers = HDRS(bearer(tok))};
    hk_do(&srv, NULL, &q, &r);
    json_t *j = hk_assert_json(&r, 201);
    snprintf(s->token, sizeof s->token, "%s", hk_jstr(j, "token"));
    snprintf(s->csrf, sizeof s->csrf, "%s", hk_jstr(j, "csrfToken"));
    snprintf(s->expires, sizeof s->expires, "%s", hk_jstr(j, "expiresAt"));
    snprintf(s->cookie, sizeof s->cookie, "Cookie: hookd_session=%s; hookd_csrf=%s", s->token, s->csrf);
    json_decref(j);
    hk_resp_free(&r);
}

static json_t *current(const char *const *headers, long status)
{
    struct hk_resp r;
    req("GET", "/api/sessions/current", headers, &r);
    json_t *j = status == 200 ? hk_assert_json(&r, 200) : hk_assert_problem(&r, status);
    if (status == 200)
        expect_header(&r, "Cache-Control", "no-store");
    hk_resp_free(&r);
    return j;
}

Test(ui, sessions_current_restores_a_page)
{
    sqlite_only();
    start_auth(NULL);
    char admin[TOKEN_LEN + 1], reader[TOKEN_LEN + 1], dated[TOKEN_LEN + 1];
    first_token(admin);
    create_token("ui-reader", "read", NULL, reader);
    create_token("ui-dated", "read,delete", "30d", dated);

    /* A cookie session: who, what, until when, and its CSRF token back. */
    struct session s;
    login(reader, &s);
    json_t *j = current(HDRS(s.cookie), 200);
    cr_assert_str_eq(hk_jstr(j, "subject"), "ui-reader");
    cr_assert_str_eq(hk_jstr(j, "scope"), "read");
    cr_assert_str_eq(hk_jstr(j, "kind"), "session");
    cr_assert_str_eq(hk_jstr(j, "expiresAt"), s.expires);
    cr_assert_str_eq(hk_jstr(j, "csrfToken"), s.csrf, "the CSRF token after a reload");
    json_decref(j);
    /* ... which is the one that lets the page change things. */
    struct hk_resp r;
    char csrf_hdr[128];
    snprintf(csrf_hdr, sizeof csrf_hdr, "X-CSRF-Token: %s", s.csrf);

    /* The same session as a bearer token: no CSRF token (none needed). */
    j = current(HDRS(bearer(s.token)), 200);
    cr_assert_str_eq(hk_jstr(j, "kind"), "session");
    cr_assert_null(json_object_get(j, "csrfToken"));
    json_decref(j);

    /* A cookie whose hookd_csrf is not this session's: no token handed out. */
    char other[300];
    snprintf(other, sizeof other, "Cookie: hookd_session=%s; hookd_csrf=hkc_%043d", s.token, 0);
    j = current(HDRS(other), 200);
    cr_assert_null(json_object_get(j, "csrfToken"), "a CSRF cookie of no session was echoed");
    json_decref(j);
    snprintf(other, sizeof other, "Cookie: hookd_session=%s", s.token);
    j = current(HDRS(other), 200);
    cr_assert_null(json_object_get(j, "csrfToken"));
    json_decref(j);

    /* API tokens: kind token, their expiry (null: never). */
    j = current(HDRS(bearer(admin)), 200);
    cr_assert_str_eq(hk_jstr(j, "kind"), "token");
    cr_assert(hk_list_has(hk_jstr(j, "scope"), "admin"), "scope %s", hk_jstr(j, "scope"));
    cr_assert(json_is_null(json_object_get(j, "expiresAt")));
    cr_assert_null(json_object_get(j, "csrfToken"));
    json_decref(j);
    j = current(HDRS(bearer(dated)), 200);
    cr_assert_str_eq(hk_jstr(j, "subject"), "ui-dated");
    cr_assert_str_eq(hk_jstr(j, "scope"), "read,delete");
    double at = hk_parse_rfc3339(hk_jstr(j, "expiresAt"));
    cr_assert(fabs(at - ((double)time(NULL) + 30 * 86400.0)) < 120, "expiresAt %s", hk_jstr(j, "expiresAt"));
    json_decref(j);

    /* None, or a credential hookd did not issue: 401. */
    json_decref(current(NULL, 401));
    json_decref(current(HDRS("Authorization: Bearer hks_AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA"), 401));
    json_decref(current(HDRS("Cookie: hookd_csrf=x"), 401));

    /* Logging out with the restored token ends it: 401 after. */
    cr_assert_eq(req("DELETE", "/api/sessions/current", HDRS(s.cookie, csrf_hdr), &r), 204);
    hk_resp_free(&r);
    j = current(HDRS(s.cookie), 401);
    json_decref(j);
    hk_finish(&srv);
}

Test(ui, sessions_current_expired_and_without_access_control)
{
    sqlite_only();
    start_auth(HDRS("HOOKD_SESSION_TTL=1s"));
    char admin[TOKEN_LEN + 1];
    first_token(admin);
    struct session s;
    login(admin, &s);
    json_decref(current(HDRS(s.cookie), 200));
    hk_sleep_ms(1300);
    json_t *j = current(HDRS(s.cookie), 401);
    const char *why = hk_jstr(j, "reason");
    cr_assert(strcmp(why, "expired") == 0 || strcmp(why, "unknown") == 0, "reason %s", why);
    json_decref(j);
    hk_finish(&srv);
    hk_server_cleanup(&srv);

    hk_server_start(&srv, NULL);   /* HOOKD_AUTH=off */
    j = current(NULL, 200);
    cr_assert_str_eq(hk_jstr(j, "kind"), "none");
    cr_assert(json_is_null(json_object_get(j, "subject")));
    cr_assert(hk_list_has(hk_jstr(j, "scope"), "admin"));
    json_decref(j);
    hk_finish(&srv);
}

/* ---- refusals ---- */

static char sources_env[600];

static void start_with_sources(const char *const *extra)
{
    char path[400];
    snprintf(path, sizeof path, "%s/ui-sources-%d.yaml", access("/dev/shm", W_OK) == 0 ? "/dev/shm" : "/tmp",
             (int)getpid());
    FILE *f = fopen(path, "w");
    cr_assert_not_null(f);
    fputs("sources:\n"
          "  - {name: gh, scheme: github, secrets: [{env: HKT_UI_GH}]}\n"
          "  - name: gen\n"
          "    scheme: hmac\n"
          "    header: X-Signature\n"
          "    prefix: \"v1=\"\n"
          "    timestampHeader: X-Timestamp\n"
          "    template: \"{timestamp}.{body}\"\n"
          "    secrets: [{env: HKT_UI_HMAC}]\n"
          "  - {name: tok, scheme: token, header: X-Hook-Token, secrets: [{env: HKT_UI_TOKEN}]}\n"
          "  - {name: open, scheme: none}\n",
          f);
    fclose(f);
    snprintf(sources_env, sizeof sources_env, "HOOKD_SOURCES=%s", path);
    const char *env[HK_MAX_ENV];
    size_t k = 0;
    env[k++] = "HOOKD_AUTH=on";
    env[k++] = sources_env;
    env[k++] = "HKT_UI_GH=" GH_SECRET;
    env[k++] = "HKT_UI_HMAC=" HMAC_SECRET;
    env[k++] = "HKT_UI_TOKEN=" TOKEN_SECRET;
    for (size_t i = 0; extra && extra[i]; i++)
        env[k++] = extra[i];
    env[k] = NULL;
    hk_server_start(&srv, env);
    unlink(path);   /* read at start */
}

/* POST /hooks/<path> with headers; the status, the problem's detail. */
static long deliver(const char *path, const char *const *headers, const char *body, char *detail, size_t dn)
{
    struct hk_resp r;
    struct hk_req q = {.method = "POST", .path = path, .body = body, .body_len = strlen(body), .headers = headers};
    hk_context("POST %s", path);
    hk_do(&srv, NULL, &q, &r);
    hk_context("%s", "");
    if (detail) {
        json_t *j = json_loads(r.body, 0, NULL);
        snprintf(detail, dn, "%s", j ? hk_jstr(j, "detail") : "");
        json_decref(j);
    }
    long st = r.status;
    hk_resp_free(&r);
    return st;
}

static json_t *refusals(const char *query, const char *tok, long status)
{
    char path[300];
    snprintf(path, sizeof path, "/api/ingress/refusals%s", query);
    struct hk_resp r;
    req("GET", path, tok ? HDRS(bearer(tok)) : NULL, &r);
    json_t *j = status == 200 ? hk_assert_json(&r, 200) : hk_assert_problem(&r, status);
    if (status == 200) {
        cr_assert(json_is_array(j), "%s", r.body);
        /* Never a secret, a secret's reference, or an expected MAC. */
        const char *never[] = {GH_SECRET, HMAC_SECRET, TOKEN_SECRET, WRONG_TOKEN, "HKT_UI", "env:"};
        for (size_t i = 0; i < sizeof never / sizeof never[0]; i++)
            cr_assert_null(strstr(r.body, never[i]), "the refusals show %s:\n%s", never[i], r.body);
    }
    hk_resp_free(&r);
    return j;
}

static json_t *find_reason(json_t *a, const char *source, const char *reason)
{
    size_t i;
    json_t *e;
    json_array_foreach(a, i, e) if (strcmp(hk_jstr(e, "source"), source) == 0 &&
                                    strcmp(hk_jstr(e, "reason"), reason) == 0) return e;
    cr_assert_fail("no refusal of %s with reason %s in %s", source, reason, json_dumps(a, 0));
    return NULL;
}

static void hmac_hex(const char *key, const char *data, char out[65])
{
    unsigned char md[32];
    unsigned int len = 0;
    HMAC(EVP_sha256(), key, (int)strlen(key), (const unsigned char *)data, strlen(data), md, &len);
    for (int i = 0; i < 32; i++)
        snprintf(out + 2 * i, 3, "%02x", md[i]);
}

Test(ui, refusals_say_why_and_never_a_secret)
{
    sqlite_only();
    start_with_sources(NULL);
    char admin[TOKEN_LEN + 1];
    first_token(admin);
    const char *body = "{\"action\":\"opened\",\"number\":17}";
    char d_sig[300], d_missing[300], d_unknown[300], d_stale[300], d_token[300];

    /* 1: GitHub, a signature made with another key. */
    char good[72], bad[72];
    hk_hub_signature(GH_SECRET, body, strlen(body), good);
    hk_hub_signature("not-the-secret", body, strlen(body), bad);
    char sig[120];
    snprintf(sig, sizeof sig, "X-Hub-Signature-256: %s", bad);
    cr_assert_eq(deliver("/hooks/gh",
                         HDRS("Content-Type: application/json", "User-Agent: GitHub-Hookshot/ui", sig,
                              "X-GitHub-Event: pull_request", "X-GitHub-Delivery: 72d3162e-cc78-11e3-81ab-4c9367dc0958",
                              "Authorization: Basic c2VjcmV0", "Cookie: a=b"),
                         body, d_sig, sizeof d_sig),
                 401);
    /* 2: GitHub without the signature header. */
    cr_assert_eq(deliver("/hooks/gh", HDRS("Content-Type: application/json", "X-GitHub-Event: push"), body, d_missing,
                         sizeof d_missing),
                 401);
    /* 3: a source nobody configured (its headers: the common ones only). */
    cr_assert_eq(deliver("/hooks/nope", HDRS("Content-Type: text/plain", "X-Hook-Token: " WRONG_TOKEN), "hello",
                         d_unknown, sizeof d_unknown),
                 404);
    /* 4: a generic HMAC source, signed 1000 s ago. */
    char ts[64], mac[65], sigh[120], payload[200];
    long long t = (long long)time(NULL) - 1000;
    snprintf(ts, sizeof ts, "X-Timestamp: %lld", t);
    snprintf(payload, sizeof payload, "%lld.%s", t, body);
    hmac_hex(HMAC_SECRET, payload, mac);
    snprintf(sigh, sizeof sigh, "X-Signature: v1=%s", mac);
    cr_assert_eq(deliver("/hooks/gen", HDRS("Content-Type: application/json", ts, sigh), body, d_stale, sizeof d_stale),
                 401);
    /* 5: a token source, the wrong token (never kept: it is the secret's kind). */
    cr_assert_eq(deliver("/hooks/tok", HDRS("Content-Type: application/json", "X-Hook-Token: " WRONG_TOKEN), body,
                         d_token, sizeof d_token),
                 401);
    /* A delivery that is stored is no refusal. */
    snprintf(sig, sizeof sig, "X-Hub-Signature-256: %s", good);
    cr_assert_eq(deliver("/hooks/gh", HDRS("Content-Type: application/json", sig, "X-GitHub-Event: push"), body, NULL,
                         0),
                 201);

    json_t *a = refusals("", admin, 200);
    cr_assert_eq(json_array_size(a), 5, "%s", json_dumps(a, 0));
    /* Newest first, numbered upward. */
    for (size_t i = 1; i < json_array_size(a); i++)
        cr_assert_eq(json_integer_value(json_object_get(json_array_get(a, i - 1), "seq")),
                     json_integer_value(json_object_get(json_array_get(a, i), "seq")) + 1);
    cr_assert_str_eq(hk_jstr(json_array_get(a, 0), "source"), "tok");

    char sha[65];
    sha256_hex(body, strlen(body), sha);
    json_t *e = find_reason(a, "gh", "no_matching_signature");
    cr_assert_eq(json_integer_value(json_object_get(e, "status")), 401);
    cr_assert_str_eq(hk_jstr(e, "detail"), d_sig, "the detail the sender got");
    cr_assert_str_eq(hk_jstr(e, "scheme"), "github");
    cr_assert(json_is_true(json_object_get(e, "sourceKnown")));
    cr_assert_str_eq(hk_jstr(e, "eventType"), "pull_request");
    cr_assert_str_eq(hk_jstr(e, "deliveryId"), "72d3162e-cc78-11e3-81ab-4c9367dc0958");
    cr_assert_str_eq(hk_jstr(e, "contentType"), "application/json");
    cr_assert(json_is_true(json_object_get(e, "bodyRead")));
    cr_assert_eq(json_integer_value(json_object_get(e, "bodyBytes")), (json_int_t)strlen(body));
    cr_assert_str_eq(hk_jstr(e, "bodySha256"), sha);
    cr_assert_str_eq(hk_jstr(e, "clientAddress"), "127.0.0.1");
    cr_assert(hk_matches(hk_jstr(e, "receivedAt"), "^[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9:]{8}\\.[0-9]{6}Z$"));
    json_t *h = json_object_get(e, "headers");
    cr_assert_str_eq(hk_jstr(h, "x-github-event"), "pull_request");
    cr_assert_str_eq(hk_jstr(h, "user-agent"), "GitHub-Hookshot/ui");
    cr_assert_str_eq(hk_jstr(h, "x-hub-signature-256"), bad, "the signature sent is shown (not the expected one)");
    cr_assert_null(json_object_get(h, "authorization"));
    cr_assert_null(json_object_get(h, "cookie"));
    cr_assert(json_is_false(json_object_get(e, "headersTruncated")));

    e = find_reason(a, "gh", "missing_header");
    cr_assert_str_eq(hk_jstr(e, "detail"), d_missing);
    cr_assert_str_eq(hk_jstr(e, "eventType"), "push");

    e = find_reason(a, "nope", "unknown_source");
    cr_assert_eq(json_integer_value(json_object_get(e, "status")), 404);
    cr_assert_str_eq(hk_jstr(e, "detail"), d_unknown);
    cr_assert(json_is_false(json_object_get(e, "sourceKnown")));
    cr_assert(json_is_null(json_object_get(e, "scheme")));
    cr_assert(json_is_false(json_object_get(e, "bodyRead")), "refused before the body");
    cr_assert(json_is_null(json_object_get(e, "bodySha256")));
    cr_assert_eq(json_integer_value(json_object_get(e, "bodyBytes")), 5, "the announced length");
    h = json_object_get(e, "headers");
    cr_assert_str_eq(hk_jstr(h, "content-type"), "text/plain");
    cr_assert_eq(json_object_size(h), 1, "an unknown source keeps the common headers only: %s", json_dumps(h, 0));

    e = find_reason(a, "gen", "timestamp_out_of_tolerance");
    cr_assert_str_eq(hk_jstr(e, "detail"), d_stale);
    json_int_t skew = json_integer_value(json_object_get(e, "skewSeconds"));
    cr_assert(skew >= 990 && skew <= 1010, "skewSeconds %lld (the server's clock minus the timestamp)", (long long)skew);
    cr_assert_str_eq(hk_jstr(e, "scheme"), "hmac");

    e = find_reason(a, "tok", "no_matching_signature");
    cr_assert_str_eq(hk_jstr(e, "detail"), d_token);
    cr_assert_null(json_object_get(json_object_get(e, "headers"), "x-hook-token"));

    /* The expected GitHub MAC appears nowhere. */
    char *all = json_dumps(a, 0);
    cr_assert_null(strstr(all, good + 7), "the expected signature is shown");
    free(all);
    json_decref(a);

    /* source= filters; limit= caps. */
    a = refusals("?source=gh", admin, 200);
    cr_assert_eq(json_array_size(a), 2);
    json_decref(a);
    a = refusals("?source=gh&limit=1", admin, 200);
    cr_assert_eq(json_array_size(a), 1);
    cr_assert_str_eq(hk_jstr(json_array_get(a, 0), "reason"), "missing_header", "the newest of the two");
    json_decref(a);
    a = refusals("?source=zzz", admin, 200);
    cr_assert_eq(json_array_size(a), 0);
    json_decref(a);
    hk_finish(&srv);
}

Test(ui, refusals_need_read_and_check_their_query)
{
    sqlite_only();
    start_with_sources(NULL);
    char admin[TOKEN_LEN + 1], reader[TOKEN_LEN + 1], deleter[TOKEN_LEN + 1];
    first_token(admin);
    create_token("ui-reader", "read", NULL, reader);
    create_token("ui-deleter", "delete", NULL, deleter);
    deliver("/hooks/nope", NULL, "x", NULL, 0);

    json_t *j = refusals("", NULL, 401);
    json_decref(j);
    j = refusals("", deleter, 403);
    cr_assert_str_eq(hk_jstr(j, "reason"), "insufficient_scope");
    json_decref(j);
    j = refusals("", reader, 200);
    cr_assert_eq(json_array_size(j), 1);
    json_decref(j);
    struct session s;
    login(reader, &s);
    struct hk_resp r;
    cr_assert_eq(req("GET", "/api/ingress/refusals", HDRS(s.cookie), &r), 200, "a cookie session reads them");
    hk_resp_free(&r);

    const char *const bad[] = {"?limit=0", "?limit=257", "?limit=x", "?after=-1", "?after=1x", "?source=%zz"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
        json_decref(refusals(bad[i], admin, 400));
    j = refusals("?limit=256&after=0", admin, 200);
    cr_assert_eq(json_array_size(j), 1);
    json_decref(j);
    hk_finish(&srv);
}

static json_int_t seq_at(json_t *a, size_t i)
{
    return json_integer_value(json_object_get(json_array_get(a, i), "seq"));
}

Test(ui, the_ring_keeps_the_newest_256_and_pages_by_after, .timeout = 240)
{
    sqlite_only();
    start_with_sources(NULL);
    char admin[TOKEN_LEN + 1];
    first_token(admin);
    CURL *h = hk_curl_new();
    /* Long headers: each record's headers are cut at about 2 KB. */
    static char big[3000];
    memset(big, 'v', sizeof big - 1);
    char hdr[3100];
    snprintf(hdr, sizeof hdr, "User-Agent: %s", big);
    struct hk_req q = {.method = "POST", .path = "/hooks/gh", .body = "{}", .headers = HDRS(hdr, "X-GitHub-Event: e")};
    struct hk_resp r;
    hk_do(&srv, h, &q, &r);
    cr_assert_eq(r.status, 401);
    hk_resp_free(&r);
    json_t *a = refusals("?limit=1", admin, 200);
    json_t *e = json_array_get(a, 0);
    cr_assert(json_is_true(json_object_get(e, "headersTruncated")), "%s", json_dumps(e, 0));
    cr_assert_null(json_object_get(json_object_get(e, "headers"), "user-agent"));
    cr_assert_str_eq(hk_jstr(e, "eventType"), "e");
    json_decref(a);

    long rss[3];
    for (int round = 0; round < 3; round++) {
        /* Refusals after the body keep the connection (an unknown source
         * closes it: then each would cost a connection, which is not what
         * is measured here). */
        for (int i = 0; i < (round == 0 ? 1000 : 2000); i++) {
            char id[80];
            snprintf(id, sizeof id, "X-GitHub-Delivery: d-%d-%d", round, i);
            struct hk_req p = {.method = "POST", .path = "/hooks/gh", .body = "{}", .headers = HDRS(hdr, id)};
            cr_assert_eq(hk_request(&srv, h, &p, &r), CURLE_OK);
            cr_assert_eq(r.status, 401);
            hk_resp_free(&r);
        }
        rss[round] = hk_proc_rss_kb(srv.pid);
    }
    curl_easy_cleanup(h);
    cr_log_info("rss after 1000, 3000, 5000 refusals: %ld %ld %ld KiB", rss[0], rss[1], rss[2]);
    /* Fixed memory: 4000 more refusals (each with 3 KB of headers) add
     * nothing that stays. */
    cr_assert_lt(rss[2] - rss[1], 4096, "RSS grew %ld KiB over the last 2000 refusals", rss[2] - rss[1]);

    a = refusals("?limit=256", admin, 200);
    cr_assert_eq(json_array_size(a), 256);
    json_int_t last = seq_at(a, 0);
    cr_assert_eq(last, 5001, "1 + 5000 refusals numbered");
    for (size_t i = 0; i < 256; i++)
        cr_assert_eq(seq_at(a, i), last - (json_int_t)i);
    cr_assert_str_eq(hk_jstr(json_array_get(a, 0), "deliveryId"), "d-2-1999", "the newest kept");
    cr_assert_str_eq(hk_jstr(json_array_get(a, 255), "deliveryId"), "d-2-1744", "the oldest kept");
    json_decref(a);

    /* after=: the entries just above it, newest first within the page. */
    a = refusals("?after=0&limit=10", admin, 200);
    cr_assert_eq(json_array_size(a), 10);
    cr_assert_eq(seq_at(a, 9), last - 255, "the oldest one still held comes first in paging");
    cr_assert_eq(seq_at(a, 0), last - 246);
    json_decref(a);
    char qs[64];
    snprintf(qs, sizeof qs, "?after=%lld&limit=100", (long long)(last - 5));
    a = refusals(qs, admin, 200);
    cr_assert_eq(json_array_size(a), 5);
    cr_assert_eq(seq_at(a, 0), last);
    cr_assert_eq(seq_at(a, 4), last - 4);
    json_decref(a);
    snprintf(qs, sizeof qs, "?after=%lld", (long long)last);
    a = refusals(qs, admin, 200);
    cr_assert_eq(json_array_size(a), 0);
    json_decref(a);
    /* Walking the whole ring with after= finds each once. */
    json_int_t after = 0, seen = 0;
    for (int pages = 0; pages < 10; pages++) {
        snprintf(qs, sizeof qs, "?after=%lld&limit=100", (long long)after);
        a = refusals(qs, admin, 200);
        size_t n = json_array_size(a);
        if (n == 0) {
            json_decref(a);
            break;
        }
        cr_assert(seq_at(a, n - 1) > after);
        after = seq_at(a, 0);
        seen += (json_int_t)n;
        json_decref(a);
    }
    cr_assert_eq(seen, 256);
    cr_assert_eq(after, last);
    hk_finish(&srv);
}

/* ---- the raw body ---- */

Test(ui, raw_body_cannot_run_script_and_downloads)
{
    sqlite_only();
    start_with_sources(NULL);
    char admin[TOKEN_LEN + 1];
    first_token(admin);
    static const struct {
        const char *ctype, *body, *ext;
    } cases[] = {
        {"text/html", "<script>parent.pwned=1</script>", "bin"},
        {"image/svg+xml", "<svg xmlns=\"http://www.w3.org/2000/svg\" onload=\"alert(1)\"/>", "bin"},
        {"application/json; charset=utf-8", "{\"a\":1}", "json"},
        {"application/cloudevents+json", "{\"a\":1}", "json"},
        {"text/plain", "hello", "txt"},
        {NULL, "\x01\x02", "bin"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char ct[120];
        snprintf(ct, sizeof ct, "Content-Type: %s", cases[i].ctype ? cases[i].ctype : "");
        struct hk_resp r;
        struct hk_req q = {.method = "POST", .path = "/hooks/open", .body = cases[i].body,
                           .headers = cases[i].ctype ? HDRS(ct) : NULL};
        hk_do(&srv, NULL, &q, &r);
        json_t *j = hk_assert_json(&r, 201);
        json_int_t id = json_integer_value(json_object_get(j, "id"));
        json_decref(j);
        hk_resp_free(&r);

        char path[96];
        snprintf(path, sizeof path, "/api/webhooks/%lld/body", (long long)id);
        cr_assert_eq(req("GET", path, HDRS(bearer(admin)), &r), 200);
        expect_header(&r, "Content-Security-Policy", BODY_CSP);
        expect_header(&r, "X-Content-Type-Options", "nosniff");
        expect_no_header(&r, "Content-Disposition");
        expect_header(&r, "Content-Type", cases[i].ctype ? cases[i].ctype : "application/octet-stream");
        cr_assert_eq(r.body_len, strlen(cases[i].body));
        cr_assert(memcmp(r.body, cases[i].body, r.body_len) == 0);
        hk_resp_free(&r);

        snprintf(path, sizeof path, "/api/webhooks/%lld/body?download=1", (long long)id);
        cr_assert_eq(req("GET", path, HDRS(bearer(admin)), &r), 200);
        char want[128];
        snprintf(want, sizeof want, "attachment; filename=\"webhook-%lld.%s\"", (long long)id, cases[i].ext);
        expect_header(&r, "Content-Disposition", want);
        expect_header(&r, "Content-Security-Policy", BODY_CSP);
        expect_header(&r, "X-Content-Type-Options", "nosniff");
        hk_resp_free(&r);
        snprintf(path, sizeof path, "/api/webhooks/%lld/body?download=0", (long long)id);
        cr_assert_eq(req("GET", path, HDRS(bearer(admin)), &r), 200);
        expect_no_header(&r, "Content-Disposition");
        hk_resp_free(&r);
    }
    /* Still behind the gate. */
    struct hk_resp r;
    cr_assert_eq(req("GET", "/api/webhooks/1/body?download=1", NULL, &r), 401);
    hk_resp_free(&r);
    hk_finish(&srv);
}
