/* SPDX-License-Identifier: MIT
 * Serving the web inspector (docs/ui.md): the page at /ui and its assets
 * under content-hashed names, from the table the build embeds (ui.h),
 * identity or gzip by Accept-Encoding, with ETags, cache lifetimes and the
 * security headers every /ui response carries. The bytes are static:
 * nothing here allocates. */
#include <llhttp.h>
#include <string.h>
#include <strings.h>

#include "api/api_int.h"
#include "api/ui.h"

/* The page runs no inline script or style and loads nothing from
 * elsewhere; payloads it shows are attacker-controlled, so the policy is
 * the last line behind textContent. */
#define UI_CSP                                                                                             \
    "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; " \
    "font-src 'self'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'"

#define HDR(r, name, lit) hk_resp_header((r), (name), (lit), sizeof(lit) - 1)

bool hk_ui_path(const char *path, size_t len)
{
    return len >= 3 && memcmp(path, "/ui", 3) == 0 && (len == 3 || path[3] == '/');
}

static void secure(struct hk_req *r)
{
    HDR(r, "Content-Security-Policy", UI_CSP);
    HDR(r, "X-Content-Type-Options", "nosniff");
    HDR(r, "Referrer-Policy", "no-referrer");
    HDR(r, "X-Frame-Options", "DENY");
    HDR(r, "Cross-Origin-Opener-Policy", "same-origin");
}

static bool is_ows(char c)
{
    return c == ' ' || c == '\t';
}

/* A q-value ("1", "0.5", "0.000"): is it above zero? Anything that is not
 * a q-value counts as zero: identity is always a safe answer. */
static bool q_positive(const char *p, size_t n)
{
    if (n == 0 || n > 5 || (p[0] != '0' && p[0] != '1'))
        return false;
    bool nonzero = p[0] == '1';
    if (n > 1) {
        if (p[1] != '.')
            return false;
        for (size_t i = 2; i < n; i++) {
            if (p[i] < '0' || p[i] > '9')
                return false;
            nonzero |= p[i] != '0';
        }
    }
    return nonzero;
}

/* Does Accept-Encoding allow gzip? RFC 9110 12.5.3: gzip (or x-gzip) with
 * q > 0; else "*" with q > 0 when gzip is not named. No header: identity
 * (clients that can inflate say so). */
static bool wants_gzip(const char *v, size_t n)
{
    int gzip = -1, star = -1;   /* -1: not named; else 0/1 */
    size_t i = 0;
    while (v && i < n) {
        while (i < n && (is_ows(v[i]) || v[i] == ','))
            i++;
        size_t cs = i;
        while (i < n && v[i] != ',' && v[i] != ';' && !is_ows(v[i]))
            i++;
        size_t clen = i - cs;
        bool ok = true;
        while (i < n && v[i] != ',') {
            while (i < n && (is_ows(v[i]) || v[i] == ';'))
                i++;
            size_t ps = i;
            while (i < n && v[i] != ',' && v[i] != ';' && !is_ows(v[i]))
                i++;
            if (i - ps >= 2 && (v[ps] == 'q' || v[ps] == 'Q') && v[ps + 1] == '=')
                ok = q_positive(v + ps + 2, i - ps - 2);
        }
        if (clen == 1 && v[cs] == '*')
            star = ok;
        else if ((clen == 4 && strncasecmp(v + cs, "gzip", 4) == 0) ||
                 (clen == 6 && strncasecmp(v + cs, "x-gzip", 6) == 0))
            gzip = gzip == 1 ? 1 : ok;
    }
    return gzip >= 0 ? gzip == 1 : star == 1;
}

/* Does If-None-Match name `etag` (or "*")? The weak comparison (RFC 9110
 * 13.1.2): a W/ prefix is ignored. */
static bool none_match_hits(const char *v, size_t n, const char *etag)
{
    size_t elen = strlen(etag);
    size_t i = 0;
    while (v && i < n) {
        while (i < n && (is_ows(v[i]) || v[i] == ','))
            i++;
        if (i < n && v[i] == '*')
            return true;
        if (i + 1 < n && v[i] == 'W' && v[i + 1] == '/')
            i += 2;
        size_t s = i;
        if (i < n && v[i] == '"') {
            i++;
            while (i < n && v[i] != '"')
                i++;
            if (i < n)
                i++;
        }
        if (i - s == elen && memcmp(v + s, etag, elen) == 0)
            return true;
        while (i < n && v[i] != ',')
            i++;
    }
    return false;
}

static void serve(struct hk_req *r, const struct hk_ui_file *f)
{
    size_t n;
    const char *ae = hk_req_header(r, "accept-encoding", &n, NULL);
    bool gz = ae && wants_gzip(ae, n);
    const char *etag = gz ? f->etag_gz : f->etag;
    secure(r);
    hk_resp_header(r, "Cache-Control", f->cache_control, strlen(f->cache_control));
    hk_resp_header(r, "ETag", etag, strlen(etag));
    HDR(r, "Vary", "Accept-Encoding");
    const char *inm = hk_req_header(r, "if-none-match", &n, NULL);
    if (inm && none_match_hits(inm, n, etag)) {
        hk_resp_send(r, 304, NULL);
        return;
    }
    if (gz)
        HDR(r, "Content-Encoding", "gzip");
    /* The body is copied into the response for its length even on HEAD
     * (resp.c sends the length, not the bytes). */
    hk_buf_put(hk_resp_body(r), gz ? f->gz : f->data, gz ? f->gz_len : f->len);
    hk_resp_send(r, 200, f->content_type);
}

/* The session refused the request before its body (a Content-Length over
 * the limit: /ui keeps its headers, so the application answers). */
static bool refused(struct hk_req *r)
{
    if (!r->refused)
        return false;
    secure(r);
    hk_resp_problem(r, r->refused, NULL, "a request to /ui carries no body this large");
    return true;
}

void hk_api_ui_page(struct hk_req *r)
{
    if (!refused(r))
        serve(r, &hk_ui_files[0]);
}

void hk_api_ui_asset(struct hk_req *r)
{
    if (refused(r))
        return;
    for (size_t i = 1; i < hk_ui_nfiles; i++) {
        const struct hk_ui_file *f = &hk_ui_files[i];
        if (f->path_len == r->path_len && memcmp(f->path, r->path, r->path_len) == 0) {
            serve(r, f);
            return;
        }
    }
    secure(r);
    hk_resp_problem(r, 404, NULL, "no such asset: asset names carry their content's hash; reload /ui");
}

void hk_api_ui_unrouted(struct hk_req *r, int status, const char *allow)
{
    if (refused(r))
        return;
    /* "/ui/" is no route of its own (OpenAPI paths end without a slash),
     * so it arrives here: the page, as at /ui. */
    if (r->path_len == 4 && memcmp(r->path, "/ui/", 4) == 0) {
        if (r->method == HTTP_GET || r->method == HTTP_HEAD) {
            serve(r, &hk_ui_files[0]);
            return;
        }
        status = 405;
        allow = "GET";
    }
    secure(r);
    if (status == 405) {
        hk_resp_header(r, "Allow", allow, strlen(allow));
        hk_resp_problem(r, 405, NULL, "method not allowed here; allowed: %s", allow);
        return;
    }
    hk_resp_problem(r, 404, NULL, "nothing of the inspector at this path; it is at /ui");
}

/* GET/HEAD /favicon.ico: the inspector's icon, for the browsers that ask
 * for it by that name (a page without an icon link, a JSON document opened
 * in a tab) and would log a 404 otherwise. A name that outlives upgrades:
 * cached for a day, not for ever. */
void hk_api_ui_favicon(struct hk_req *r)
{
    if (refused(r))
        return;
    for (size_t i = 1; i < hk_ui_nfiles; i++) {
        if (strcmp(hk_ui_files[i].name, "icon.svg") == 0) {
            struct hk_ui_file f = hk_ui_files[i];
            f.cache_control = "public, max-age=86400";
            serve(r, &f);
            return;
        }
    }
    hk_resp_problem(r, 404, NULL, "no icon in this build");
}
