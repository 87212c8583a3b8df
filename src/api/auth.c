/* SPDX-License-Identifier: MIT
 * The gate in front of every route that needs a credential: the bearer
 * token (or the session cookie with its CSRF token), looked up on the
 * request's loop (API tokens in the file's list or the store; sessions in
 * Redis or the store), then the handler or a 401/403/429/503 with a stable
 * reason. Also the sessions endpoints and the audit lines. docs/auth.md. */
#include <llhttp.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "api/api_int.h"
#include "auth/limiter.h"
#include "auth/token.h"
#include "core/ascii.h"
#include "core/clock.h"
#include "core/log.h"
#include "core/sha256.h"
#include "http/query.h"
#include "redis/redis.h"

#define SESSION_COOKIE "hookd_session"
#define CSRF_COOKIE "hookd_csrf"
#define REDIS_PREFIX "hookd:session:"
#define HK_REDIS_SUBJECT_PREFIX "hookd:subject:"

/* The process-wide limiter, under its lock. */
static uint64_t lim_check(struct hk_req *r)
{
    struct hk_api *a = api_loop(r)->api;
    pthread_mutex_lock(&a->limiter_mu);
    uint64_t ms = hk_limiter_check(a->limiter, r->s->peer, uv_now(&api_loop(r)->w->loop));
    pthread_mutex_unlock(&a->limiter_mu);
    return ms;
}

static void lim_fail(struct hk_req *r)
{
    struct hk_api *a = api_loop(r)->api;
    pthread_mutex_lock(&a->limiter_mu);
    hk_limiter_fail(a->limiter, r->s->peer, uv_now(&api_loop(r)->w->loop));
    pthread_mutex_unlock(&a->limiter_mu);
}

static void lim_ok(struct hk_req *r)
{
    struct hk_api *a = api_loop(r)->api;
    pthread_mutex_lock(&a->limiter_mu);
    hk_limiter_ok(a->limiter, r->s->peer);
    pthread_mutex_unlock(&a->limiter_mu);
}

static enum hk_obs_auth obs_result(enum hk_auth_reason why)
{
    switch (why) {
    case HK_AUTH_OK: return HK_AUTHR_OK;
    case HK_AUTH_MISSING: return HK_AUTHR_MISSING;
    case HK_AUTH_MALFORMED: return HK_AUTHR_MALFORMED;
    case HK_AUTH_UNKNOWN: return HK_AUTHR_UNKNOWN;
    case HK_AUTH_EXPIRED: return HK_AUTHR_EXPIRED;
    case HK_AUTH_REVOKED: return HK_AUTHR_REVOKED;
    default: return HK_AUTHR_INSUFFICIENT_SCOPE;
    }
}

static const char *scope_word(unsigned need)
{
    return need & HK_SCOPE_ADMIN ? "admin" : need & HK_SCOPE_DELETE ? "delete" : "read";
}

/* 401 or 403, per RFC 6750: WWW-Authenticate on both, the error code on
 * everything but a missing credential. A failure counts against the
 * client's address; a wrong scope does not (the credential was valid). */
static void deny(struct hk_req *r, enum hk_auth_reason why, const char *detail)
{
    struct hk_api_loop *L = api_loop(r);
    struct hk_api_req *q = api_req(r);
    char v[160];
    int n;
    hk_obs_auth(L->obs, obs_result(why));
    if (why == HK_AUTH_INSUFFICIENT_SCOPE) {
        n = snprintf(v, sizeof v, "Bearer realm=\"hookd\", error=\"insufficient_scope\", scope=\"%s\"",
                     scope_word(q->auth.need));
        hk_resp_header(r, "WWW-Authenticate", v, (size_t)n);
        hk_resp_problem_reason(r, 403, hk_auth_reason_name(why), "%s", detail);
        return;
    }
    lim_fail(r);
    n = why == HK_AUTH_MISSING ? snprintf(v, sizeof v, "Bearer realm=\"hookd\"")
                               : snprintf(v, sizeof v, "Bearer realm=\"hookd\", error=\"invalid_token\"");
    hk_resp_header(r, "WWW-Authenticate", v, (size_t)n);
    hk_resp_problem_reason(r, 401, hk_auth_reason_name(why), "%s", detail);
}

static void unavailable(struct hk_req *r, const char *what)
{
    hk_obs_auth(api_loop(r)->obs, HK_AUTHR_UNAVAILABLE);
    hk_resp_unavailable(r, 503, "auth_unavailable", 1, "%s is unavailable: the credential cannot be checked", what);
}

/* The credential checks out: run the route's handler. */
static void admit(struct hk_req *r)
{
    struct hk_api_loop *L = api_loop(r);
    struct hk_api_req *q = api_req(r);
    hk_obs_auth(L->obs, HK_AUTHR_OK);
    lim_ok(r);
    hk_api_routes[q->route].handler(r);
}

/* Expiry, revocation, scope, CSRF: the same rules for every source. */
static void judge(struct hk_req *r, unsigned scopes, int64_t expires_us, int64_t revoked_us, const char *subject,
                  const uint8_t *csrf_hash)
{
    struct hk_api_req *q = api_req(r);
    int64_t now = hk_wall_us();
    if (revoked_us) {
        deny(r, HK_AUTH_REVOKED, "the token was revoked");
        return;
    }
    if (expires_us && expires_us <= now) {
        deny(r, HK_AUTH_EXPIRED, q->auth.kind == HK_TOKEN_SESSION ? "the session expired" : "the token expired");
        return;
    }
    snprintf(q->auth.subject, sizeof q->auth.subject, "%s", subject);
    q->auth.scopes = scopes;
    /* A browser's cookie rides along with any request: a state-changing one
     * must also prove it comes from hookd's page (double submit). */
    if (q->auth.via_cookie && r->method != HTTP_GET && r->method != HTTP_HEAD) {
        uint8_t h[32];
        if (!r->csrf || r->csrf_len != HK_TOKEN_LEN || !csrf_hash) {
            hk_obs_auth(api_loop(r)->obs, HK_AUTHR_MALFORMED);
            hk_resp_problem_reason(r, 403, "csrf", "a cookie session needs X-CSRF-Token on %s",
                                   r->method == HTTP_DELETE ? "DELETE" : "this method");
            return;
        }
        hk_sha256(r->csrf, r->csrf_len, h);
        if (!hk_ct_equal(h, csrf_hash, 32)) {
            hk_obs_auth(api_loop(r)->obs, HK_AUTHR_MALFORMED);
            hk_resp_problem_reason(r, 403, "csrf", "X-CSRF-Token does not belong to this session");
            return;
        }
    }
    unsigned need = q->auth.need;
    if ((need & HK_NEED_SCOPES) && !hk_scopes_allow(scopes, need & HK_NEED_SCOPES)) {
        deny(r, HK_AUTH_INSUFFICIENT_SCOPE, "the credential lacks the scope this needs");
        return;
    }
    if ((need & HK_NEED_API_TOKEN) && q->auth.kind != HK_TOKEN_API) {
        deny(r, HK_AUTH_INSUFFICIENT_SCOPE, "this needs an API token, not a session");
        return;
    }
    if ((need & HK_NEED_SESSION) && q->auth.kind != HK_TOKEN_SESSION) {
        deny(r, HK_AUTH_MALFORMED, "this needs a session token");
        return;
    }
    admit(r);
}

/* ---- API tokens: the file's list, then the store ---- */

static void token_done(struct hk_store_op *op)
{
    struct hk_req *r = op->data;
    struct hk_api_req *q = api_req(r);
    hk_api_store_end(r, HK_OP_TOKEN_GET, op->status);
    if (op->status == HK_ENOTFOUND) {
        deny(r, HK_AUTH_UNKNOWN, "no such token");
        return;
    }
    if (op->status < 0) {
        unavailable(r, "the store");
        return;
    }
    const struct hk_token_rec *t = &q->auth.token;
    judge(r, t->scopes, t->expires_us, t->revoked_us, t->name, NULL);
}

static void check_api_token(struct hk_req *r)
{
    struct hk_api_loop *L = api_loop(r);
    struct hk_api_req *q = api_req(r);
    const struct hk_api *a = L->api;
    for (size_t i = 0; i < a->nfile_tokens; i++) {
        const struct hk_token_rec *t = &a->file_tokens[i];
        if (hk_ct_equal(t->hash, q->auth.hash, 32)) {
            judge(r, t->scopes, t->expires_us, t->revoked_us, t->name, NULL);
            return;
        }
    }
    struct hk_store_op *op = &q->op;
    memset(op, 0, sizeof *op);
    memset(&q->auth.token, 0, sizeof q->auth.token);
    memcpy(q->auth.token.hash, q->auth.hash, 32);
    op->kind = HK_OP_TOKEN_GET;
    op->token = &q->auth.token;
    op->on_done = token_done;
    op->data = r;
    hk_api_store_begin(r);
    int rc = hk_store_submit(L->sl, op);
    if (rc < 0)
        unavailable(r, "the store");
}

/* ---- sessions: Redis or the store ---- */

/* Redis holds "v1 <scopes> <expires_us> <csrf hex> <subject>". */
static int session_decode(const char *v, size_t n, struct hk_session_rec *s)
{
    char buf[256], csrf[65];
    unsigned scopes;
    long long exp;
    if (n >= sizeof buf)
        return -1;
    memcpy(buf, v, n);
    buf[n] = '\0';
    int used = 0;
    if (sscanf(buf, "v1 %u %lld %64s %n", &scopes, &exp, csrf, &used) != 3 || used <= 0 || strlen(csrf) != 64)
        return -1;
    const char *subject = buf + used;
    if (strlen(subject) > HK_TOKEN_NAME_MAX || hk_hex_decode(csrf, s->csrf_hash, 32) < 0)
        return -1;
    s->scopes = scopes;
    s->expires_us = exp;
    snprintf(s->subject, sizeof s->subject, "%s", subject);
    return 0;
}

static size_t session_encode(const struct hk_session_rec *s, char *out, size_t cap)
{
    char csrf[65];
    hk_hex_encode(s->csrf_hash, 32, csrf);
    int n = snprintf(out, cap, "v1 %u %lld %s %s", s->scopes, (long long)s->expires_us, csrf, s->subject);
    return n > 0 && (size_t)n < cap ? (size_t)n : 0;
}

static size_t session_key(const uint8_t hash[32], char *out, size_t cap)
{
    char hex[65];
    hk_hex_encode(hash, 32, hex);
    int n = snprintf(out, cap, "%s%s", REDIS_PREFIX, hex);
    return n > 0 && (size_t)n < cap ? (size_t)n : 0;
}

static void session_from_redis(void *data, int status, const char *val, size_t len)
{
    struct hk_req *r = data;
    struct hk_api_req *q = api_req(r);
    if (status == HK_ENOTFOUND) {
        deny(r, HK_AUTH_UNKNOWN, "no such session (ended or expired)");
        return;
    }
    if (status < 0) {
        unavailable(r, "Redis");
        return;
    }
    struct hk_session_rec *s = &q->auth.session;
    if (session_decode(val, len, s) < 0) {
        deny(r, HK_AUTH_UNKNOWN, "no such session");
        return;
    }
    judge(r, s->scopes, s->expires_us, 0, s->subject, s->csrf_hash);
}

static void session_from_store(struct hk_store_op *op)
{
    struct hk_req *r = op->data;
    struct hk_api_req *q = api_req(r);
    if (op->status == HK_ENOTFOUND) {
        deny(r, HK_AUTH_UNKNOWN, "no such session (ended or expired)");
        return;
    }
    if (op->status < 0) {
        unavailable(r, "the store");
        return;
    }
    struct hk_session_rec *s = &q->auth.session;
    judge(r, s->scopes, s->expires_us, 0, s->subject, s->csrf_hash);
}

static void check_session(struct hk_req *r)
{
    struct hk_api_loop *L = api_loop(r);
    struct hk_api_req *q = api_req(r);
    memset(&q->auth.session, 0, sizeof q->auth.session);
    memcpy(q->auth.session.hash, q->auth.hash, 32);
    if (L->redis) {
        char key[96];
        size_t klen = session_key(q->auth.hash, key, sizeof key);
        if (hk_redis_get(L->redis, key, klen, session_from_redis, r) < 0)
            unavailable(r, "Redis");
        return;
    }
    struct hk_store_op *op = &q->op;
    memset(op, 0, sizeof *op);
    op->kind = HK_OP_SESSION_GET;
    op->session = &q->auth.session;
    op->on_done = session_from_store;
    op->data = r;
    if (hk_store_submit(L->sl, op) < 0)
        unavailable(r, "the store");
}

/* ---- the gate ---- */

/* The value of cookie `name` in a Cookie header, or NULL. */
static const char *cookie_value(const char *c, size_t n, const char *name, size_t *vlen)
{
    size_t nl = strlen(name);
    size_t i = 0;
    while (c && i < n) {
        while (i < n && (c[i] == ' ' || c[i] == ';'))
            i++;
        size_t start = i;
        while (i < n && c[i] != ';')
            i++;
        if (i - start > nl && memcmp(c + start, name, nl) == 0 && c[start + nl] == '=') {
            *vlen = i - start - nl - 1;
            return c + start + nl + 1;
        }
    }
    return NULL;
}

/* Bearer tokens travel in headers only: one in the query string ends up in
 * logs and browser history, so asking with one is refused outright. */
static bool token_in_query(const struct hk_req *r)
{
    static const char *const names[] = {"access_token", "token", "api_key", "apikey"};
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
        size_t n;
        if (hk_query_raw(r->query, r->query_len, names[i], &n))
            return true;
    }
    return false;
}

/* /q/metrics with HOOKD_METRICS_TOKEN: one shared secret, compared in
 * constant time (after hashing, so that its length does not leak either). */
static void check_metrics(struct hk_req *r)
{
    const char *want = api_cfg(r)->metrics_token;
    if (!want) {
        hk_api_routes[api_req(r)->route].handler(r);
        return;
    }
    uint8_t a[32], b[32];
    const char *v = r->authorization;
    size_t n = r->authorization_len;
    if (!v || n < 7 || strncasecmp(v, "Bearer ", 7) != 0) {
        hk_resp_header(r, "WWW-Authenticate", "Bearer realm=\"hookd\"", strlen("Bearer realm=\"hookd\""));
        hk_resp_problem_reason(r, 401, "missing", "/q/metrics needs the metrics token");
        return;
    }
    hk_sha256(v + 7, n - 7, a);
    hk_sha256(want, strlen(want), b);
    if (!hk_ct_equal(a, b, 32)) {
        lim_fail(r);
        hk_resp_header(r, "WWW-Authenticate", "Bearer realm=\"hookd\", error=\"invalid_token\"",
                      strlen("Bearer realm=\"hookd\", error=\"invalid_token\""));
        hk_resp_problem_reason(r, 401, "unknown", "wrong metrics token");
        return;
    }
    hk_api_routes[api_req(r)->route].handler(r);
}

void hk_api_gate(struct hk_req *r, unsigned need)
{
    struct hk_api_loop *L = api_loop(r);
    struct hk_api_req *q = api_req(r);
    const struct hk_config *cfg = api_cfg(r);
    memset(&q->auth, 0, sizeof q->auth);
    q->auth.need = need;
    if (need == HK_NEED_METRICS) {
        check_metrics(r);
        return;
    }
    if (!cfg->auth_on) {
        if (need & (HK_NEED_API_TOKEN | HK_NEED_SESSION)) {
            hk_resp_problem(r, 404, NULL, "sessions need access control (HOOKD_AUTH is off)");
            return;
        }
        hk_api_routes[q->route].handler(r);
        return;
    }
    uint64_t wait_ms = lim_check(r);
    if (wait_ms) {
        char v[24];
        int n = snprintf(v, sizeof v, "%llu", (unsigned long long)((wait_ms + 999) / 1000));
        hk_resp_header(r, "Retry-After", v, (size_t)n);
        hk_obs_auth(L->obs, HK_AUTHR_RATE_LIMITED);
        hk_resp_problem_reason(r, 429, "rate_limited", "too many failed attempts from this address");
        return;
    }
    if (token_in_query(r)) {
        deny(r, HK_AUTH_MALFORMED, "tokens are not accepted in the query string: use Authorization: Bearer");
        return;
    }
    const char *tok;
    size_t len;
    enum hk_token_kind kind;
    enum hk_auth_reason why;
    if (r->authorization) {
        why = hk_bearer_parse(r->authorization, r->authorization_len, &tok, &len, &kind);
    } else {
        size_t clen = 0;
        tok = cookie_value(r->cookie, r->cookie_len, SESSION_COOKIE, &clen);
        len = clen;
        why = !tok ? HK_AUTH_MISSING : hk_token_kind_of(tok, len, &kind) == 0 && kind == HK_TOKEN_SESSION
                                           ? HK_AUTH_OK
                                           : HK_AUTH_MALFORMED;
        q->auth.via_cookie = tok != NULL;
    }
    if (why != HK_AUTH_OK) {
        deny(r, why, why == HK_AUTH_MISSING ? "this needs Authorization: Bearer <token>"
                                            : "the credential is not one hookd issues");
        return;
    }
    if (kind != HK_TOKEN_API && kind != HK_TOKEN_SESSION) {
        deny(r, HK_AUTH_MALFORMED, "the credential is not one hookd issues");
        return;
    }
    q->auth.kind = kind;
    hk_sha256(tok, len, q->auth.hash);
    if (kind == HK_TOKEN_API)
        check_api_token(r);
    else
        check_session(r);
}

/* ---- POST /api/sessions, DELETE /api/sessions/current ---- */

static void put_cookies(struct hk_req *r, const char *session, const char *csrf, uint64_t max_age_s)
{
    char v[256];
    const char *secure = r->s->peer_loopback ? "" : "; Secure";
    int n = snprintf(v, sizeof v, "%s=%s; Path=/; Max-Age=%llu; HttpOnly; SameSite=Strict%s", SESSION_COOKIE,
                     session, (unsigned long long)max_age_s, secure);
    hk_resp_header(r, "Set-Cookie", v, (size_t)n);
    n = snprintf(v, sizeof v, "%s=%s; Path=/; Max-Age=%llu; SameSite=Strict%s", CSRF_COOKIE, csrf,
                 (unsigned long long)max_age_s, secure);
    hk_resp_header(r, "Set-Cookie", v, (size_t)n);
}

static void session_created(struct hk_req *r, int status)
{
    struct hk_api_req *q = api_req(r);
    if (status < 0) {
        hk_resp_store_error(r, status == HK_ECONFLICT ? HK_EUNAVAIL : status);
        return;
    }
    uint64_t ttl_s = api_cfg(r)->session_ttl_ms / 1000;
    put_cookies(r, q->auth.new_token, q->auth.new_csrf, ttl_s);
    struct hk_buf *b = hk_resp_body(r);
    hk_buf_puts(b, "{\"token\":\"");
    hk_buf_puts(b, q->auth.new_token);
    hk_buf_puts(b, "\",\"expiresAt\":\"");
    hk_buf_put_iso_us(b, q->auth.session.expires_us);
    hk_buf_puts(b, "\",\"csrfToken\":\"");
    hk_buf_puts(b, q->auth.new_csrf);
    hk_buf_puts(b, "\",\"subject\":");
    hk_buf_put_json_str(b, q->auth.subject, strlen(q->auth.subject));
    hk_buf_puts(b, "}");
    hk_log_req(HK_LOG_INFO, r->req_id, "audit", "\"action\":\"session.create\",\"subject\":\"%s\"",
               q->auth.subject);
    hk_resp_send(r, 201, HK_CT_JSON);
}

static void session_indexed(void *data, int status, const char *val, size_t len)
{
    (void)val;
    (void)len;
    session_created(data, status);
}

/* The session is in Redis; now in its subject's index, so that revoking
 * the token (hookd token revoke) can end it. */
static void session_put_redis(void *data, int status, const char *val, size_t len)
{
    (void)val;
    (void)len;
    struct hk_req *r = data;
    struct hk_api_loop *L = api_loop(r);
    struct hk_api_req *q = api_req(r);
    if (status < 0) {
        session_created(r, status);
        return;
    }
    char set[HK_TOKEN_NAME_MAX + 32], key[96];
    int sn = snprintf(set, sizeof set, "%s%s", HK_REDIS_SUBJECT_PREFIX, q->auth.session.subject);
    size_t klen = session_key(q->auth.session.hash, key, sizeof key);
    if (hk_redis_sadd_px(L->redis, set, (size_t)sn, key, klen, api_cfg(r)->session_ttl_ms, session_indexed, r) < 0)
        unavailable(r, "Redis");
}

static void session_put_store(struct hk_store_op *op)
{
    session_created(op->data, op->status);
}

void hk_api_session_create(struct hk_req *r)
{
    struct hk_api_loop *L = api_loop(r);
    struct hk_api_req *q = api_req(r);
    struct hk_session_rec *s = &q->auth.session;
    if (hk_token_new(HK_TOKEN_SESSION, q->auth.new_token) < 0 || hk_token_new(HK_TOKEN_CSRF, q->auth.new_csrf) < 0) {
        hk_resp_unavailable(r, 503, "no_randomness", 1, "the system's random source failed");
        return;
    }
    memset(s, 0, sizeof *s);
    hk_sha256(q->auth.new_token, HK_TOKEN_LEN, s->hash);
    hk_sha256(q->auth.new_csrf, HK_TOKEN_LEN, s->csrf_hash);
    snprintf(s->subject, sizeof s->subject, "%s", q->auth.subject);
    s->scopes = q->auth.scopes;
    uint64_t ttl_ms = api_cfg(r)->session_ttl_ms;
    s->expires_us = hk_wall_us() + (int64_t)ttl_ms * 1000;
    if (L->redis) {
        char key[96], val[256];
        size_t klen = session_key(s->hash, key, sizeof key);
        size_t vlen = session_encode(s, val, sizeof val);
        if (!vlen || hk_redis_setex(L->redis, key, klen, val, vlen, ttl_ms, session_put_redis, r) < 0)
            unavailable(r, "Redis");
        return;
    }
    struct hk_store_op *op = &q->op;
    memset(op, 0, sizeof *op);
    op->kind = HK_OP_SESSION_PUT;
    op->session = s;
    op->on_done = session_put_store;
    op->data = r;
    int rc = hk_store_submit(L->sl, op);
    if (rc < 0)
        hk_resp_store_error(r, rc);
}

static void session_ended(struct hk_req *r, int status)
{
    struct hk_api_req *q = api_req(r);
    if (status < 0 && status != HK_ENOTFOUND) {
        hk_resp_store_error(r, status);
        return;
    }
    put_cookies(r, "", "", 0);
    hk_log_req(HK_LOG_INFO, r->req_id, "audit", "\"action\":\"session.delete\",\"subject\":\"%s\"",
               q->auth.subject);
    hk_resp_send(r, 204, NULL);
}

static void session_del_redis(void *data, int status, const char *val, size_t len)
{
    (void)val;
    (void)len;
    session_ended(data, status);
}

static void session_del_store(struct hk_store_op *op)
{
    session_ended(op->data, op->status);
}

void hk_api_session_delete(struct hk_req *r)
{
    struct hk_api_loop *L = api_loop(r);
    struct hk_api_req *q = api_req(r);
    if (L->redis) {
        char key[96];
        size_t klen = session_key(q->auth.hash, key, sizeof key);
        if (hk_redis_del(L->redis, key, klen, session_del_redis, r) < 0)
            unavailable(r, "Redis");
        return;
    }
    struct hk_store_op *op = &q->op;
    memset(op, 0, sizeof *op);
    memcpy(q->auth.session.hash, q->auth.hash, 32);
    op->kind = HK_OP_SESSION_DEL;
    op->session = &q->auth.session;
    op->on_done = session_del_store;
    op->data = r;
    int rc = hk_store_submit(L->sl, op);
    if (rc < 0)
        hk_resp_store_error(r, rc);
}

/* ---- GET /api/sessions/current ---- */

/* A cookie session's CSRF token, for a page that reloaded: only its hash
 * is stored, but the browser holds the token in the hookd_csrf cookie and
 * sends it along; it is handed back when it hashes to the session's. */
static const char *session_csrf(struct hk_req *r, size_t *n)
{
    struct hk_api_req *q = api_req(r);
    if (!q->auth.via_cookie || q->auth.kind != HK_TOKEN_SESSION)
        return NULL;
    const char *c = cookie_value(r->cookie, r->cookie_len, CSRF_COOKIE, n);
    if (!c || *n != HK_TOKEN_LEN)
        return NULL;
    uint8_t h[32];
    hk_sha256(c, *n, h);
    return hk_ct_equal(h, q->auth.session.csrf_hash, 32) ? c : NULL;
}

void hk_api_session_current(struct hk_req *r)
{
    struct hk_api_req *q = api_req(r);
    const struct hk_api *a = api_loop(r)->api;
    struct hk_buf *b = hk_resp_body(r);
    b->len = 0;
    hk_resp_header(r, "Cache-Control", "no-store", 8);
    if (!api_cfg(r)->auth_on) {
        /* No access control: nothing to log in to. */
        hk_buf_puts(b, "{\"subject\":null,\"scope\":\"read,delete,admin\",\"expiresAt\":null,\"kind\":\"none\"}");
        hk_resp_send(r, 200, HK_CT_JSON);
        return;
    }
    char scope[64];
    hk_scopes_format(q->auth.scopes, scope, sizeof scope);
    int64_t expires = 0;
    if (q->auth.kind == HK_TOKEN_SESSION) {
        expires = q->auth.session.expires_us;
    } else {
        /* A token of the file was matched there (the store was not asked);
         * any other was read from the store into auth.token. */
        expires = q->auth.token.expires_us;
        for (size_t i = 0; i < a->nfile_tokens; i++)
            if (hk_ct_equal(a->file_tokens[i].hash, q->auth.hash, 32))
                expires = a->file_tokens[i].expires_us;
    }
    hk_buf_puts(b, "{\"subject\":");
    hk_buf_put_json_str(b, q->auth.subject, strlen(q->auth.subject));
    hk_buf_puts(b, ",\"scope\":");
    hk_buf_put_json_str(b, scope, strlen(scope));
    hk_buf_puts(b, ",\"expiresAt\":");
    if (expires) {
        hk_buf_putc(b, '"');
        hk_buf_put_iso_us(b, expires);
        hk_buf_putc(b, '"');
    } else {
        hk_buf_puts(b, "null");
    }
    hk_buf_puts(b, q->auth.kind == HK_TOKEN_SESSION ? ",\"kind\":\"session\"" : ",\"kind\":\"token\"");
    size_t n;
    const char *csrf = session_csrf(r, &n);
    if (csrf) {
        hk_buf_puts(b, ",\"csrfToken\":");
        hk_buf_put_json_str(b, csrf, n);
    }
    hk_buf_putc(b, '}');
    hk_resp_send(r, 200, HK_CT_JSON);
}
