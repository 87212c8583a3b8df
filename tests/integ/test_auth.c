/* SPDX-License-Identifier: MIT
 * Access control through the real server (docs/auth.md): the first-start
 * admin token, HOOKD_AUTH=off, `hookd token` while a server runs, scopes,
 * expiry, attempts to get past the gate, cookie sessions and CSRF, the
 * failure limiter, the metrics token and hookd_auth_total, the audit lines,
 * and sessions in Redis: the keys, an outage under load, a hung server and
 * a wrong password. Each failed authentication counts against the client's
 * address, so the tests that make many of them send each from an address
 * of its own on loopback (127.0.x.y). */
#include <criterion/criterion.h>

#include <hiredis/hiredis.h>
#include <openssl/sha.h>

#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>
#include <sys/wait.h>
#include <unistd.h>

#include "../prom.h"
#include "harness.h"

#define TOKEN_LEN 47   /* "hkd_" + 43 base64url characters */

static struct hk_server srv;
static char own_redis[256];    /* a Redis of this test's own ("" when none) */
static pid_t stopped_redis;    /* SIGSTOPped by a test: continued by teardown */

static void redis_sh(const char *verb, const char *dir, char *out, size_t n);

static void teardown(void)
{
    if (stopped_redis > 0)
        kill(stopped_redis, SIGCONT);
    stopped_redis = 0;
    hk_server_cleanup(&srv);
    if (own_redis[0]) {
        char dir[256];
        snprintf(dir, sizeof dir, "%s", own_redis);
        own_redis[0] = 0;
        redis_sh("stop", dir, NULL, 0);
    }
}

TestSuite(auth, .fini = teardown, .timeout = 60);

/* ---- small helpers ---- */

#define HDRS(...) ((const char *const[]){__VA_ARGS__, NULL})

/* "Authorization: Bearer <tok>" in a small per-thread ring. */
static const char *bearer(const char *tok)
{
    static _Thread_local char ring[8][256];
    static _Thread_local unsigned next;
    char *b = ring[next++ % 8];
    snprintf(b, sizeof ring[0], "Authorization: Bearer %s", tok);
    return b;
}

/* Start hookd with access control on, plus `extra` (may be NULL). */
static void start_on(struct hk_server *s, const char *const *extra)
{
    const char *env[HK_MAX_ENV];
    size_t k = 0;
    env[k++] = "HOOKD_AUTH=on";
    for (size_t i = 0; extra && extra[i]; i++) {
        cr_assert(k + 1 < HK_MAX_ENV);
        env[k++] = extra[i];
    }
    env[k] = NULL;
    hk_server_start(s, env);
}

static bool b64url(char c)
{
    return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-' || c == '_';
}

/* The distinct tokens with `prefix` (hkd_, hks_, hkc_) in `text`: their
 * number; the first goes to `first` (may be NULL). */
static int tokens_in(const char *text, const char *prefix, char first[TOKEN_LEN + 1])
{
    char seen[8][TOKEN_LEN + 1];
    int n = 0;
    for (const char *p = strstr(text, prefix); p; p = strstr(p + 1, prefix)) {
        size_t len = 4;
        while (b64url(p[len]))
            len++;
        char t[TOKEN_LEN + 1];
        snprintf(t, sizeof t, "%.*s", (int)(len > TOKEN_LEN ? TOKEN_LEN : len), p);
        bool dup = false;
        for (int i = 0; i < n && i < 8; i++)
            dup |= strcmp(seen[i], t) == 0;
        if (dup)
            continue;
        if (n < 8)
            memcpy(seen[n], t, sizeof t);
        n++;
    }
    if (first)
        snprintf(first, TOKEN_LEN + 1, "%s", n ? seen[0] : "");
    return n;
}

/* The admin token the first start printed on stderr. */
static void admin_token(const struct hk_server *s, char out[TOKEN_LEN + 1])
{
    char *err = hk_server_stderr(s);
    int n = tokens_in(err, "hkd_", out);
    cr_assert_eq(n, 1, "the first start should print exactly one hkd_ token, found %d:\n%s", n, err);
    cr_assert_eq(strlen(out), TOKEN_LEN, "a short token in the banner: %s", out);
    free(err);
}

/* A request; the status. */
static long call(const struct hk_server *s, struct hk_resp *r, const char *method, const char *path,
                 const char *source, const char *const *headers)
{
    struct hk_req q = {.method = method, .path = path, .headers = headers, .source = source};
    hk_do(s, NULL, &q, r);
    return r->status;
}

/* The status of one request (the response is dropped). */
static long status_of(const struct hk_server *s, const char *method, const char *path, const char *source,
                      const char *const *headers)
{
    struct hk_resp r;
    long st = call(s, &r, method, path, source, headers);
    hk_resp_free(&r);
    return st;
}

static bool reason_in(const char *reason, const char *alternatives)
{
    size_t n = strlen(reason);
    for (const char *p = alternatives; *p;) {
        const char *e = strchr(p, '|');
        size_t len = e ? (size_t)(e - p) : strlen(p);
        if (len == n && strncmp(p, reason, n) == 0)
            return true;
        p += len + (e ? 1 : 0);
    }
    return false;
}

/* For assert_denied: the error a 401 should name given its reason (none
 * for a missing credential, invalid_token otherwise, RFC 6750 3.1). */
#define BY_REASON "(by reason)"

/* A refusal: problem+json with `status` and a reason among `reasons`
 * ("a|b"); a 401 or a scope 403 carries WWW-Authenticate: Bearer, with
 * error=`www_error` (NULL: no error attribute; BY_REASON: as its reason
 * says). */
/* What assert_denied is looking at, for its messages ("" when unset). */
static _Thread_local char checking[256];

static void assert_denied(const struct hk_resp *r, long status, const char *reasons, const char *www_error)
{
    json_t *j = hk_assert_problem(r, status);
    const char *why = hk_jstr(j, "reason");
    cr_assert(reason_in(why, reasons), "%s: reason \"%s\", expected %s: %s", checking, why, reasons, r->body);
    char v[512];
    if (www_error && strcmp(www_error, BY_REASON) == 0)
        www_error = strcmp(why, "missing") == 0 ? NULL : "invalid_token";
    if (status == 401 || strcmp(why, "insufficient_scope") == 0) {
        cr_assert(hk_header(r, "WWW-Authenticate", v, sizeof v), "%s: %ld without WWW-Authenticate:\n%s", checking,
                  status, r->head);
        cr_assert(strncasecmp(v, "Bearer", 6) == 0 && (v[6] == 0 || v[6] == ' '),
                  "%s: WWW-Authenticate is not a Bearer challenge: %s", checking, v);
        if (www_error) {
            char want[64];
            snprintf(want, sizeof want, "error=\"%s\"", www_error);
            cr_assert(strstr(v, want), "%s: WWW-Authenticate \"%s\" lacks %s (reason %s)", checking, v, want, why);
        } else {
            cr_assert(!strstr(v, "error="), "%s: WWW-Authenticate \"%s\" has an error for %s", checking, v, why);
        }
    }
    json_decref(j);
}

/* A request that must be refused as assert_denied says. */
static void expect_denied(const struct hk_server *s, const char *method, const char *path, const char *source,
                          const char *const *headers, long status, const char *reasons, const char *www_error)
{
    struct hk_resp r;
    snprintf(checking, sizeof checking, "%s %s from %s", method, path, source ? source : "127.0.0.1");
    hk_context("%s", checking);
    call(s, &r, method, path, source, headers);
    assert_denied(&r, status, reasons, www_error);
    hk_context("%s", "");
    checking[0] = 0;
    hk_resp_free(&r);
}

/* `hookd token ARGS...` on the server's store; exit code, stdout, stderr. */
static int token_cli(const struct hk_server *s, char **out, char **err, const char *const *args)
{
    const char *argv[HK_MAX_ARGS];
    size_t k = 0;
    argv[k++] = "token";
    for (size_t i = 0; args[i]; i++) {
        cr_assert(k + 1 < HK_MAX_ARGS);
        argv[k++] = args[i];
    }
    argv[k] = NULL;
    int st = hk_server_run(s, NULL, argv, 20000, out, err);
    cr_assert(st != -1, "hookd token timed out");
    cr_assert(WIFEXITED(st), "hookd token died: status 0x%x", st);
    return WEXITSTATUS(st);
}

/* hookd token create; the token it printed. */
static void create_token(const struct hk_server *s, const char *name, const char *scope, const char *expires,
                         char tok[TOKEN_LEN + 1])
{
    char *out, *err;
    int rc = expires ? token_cli(s, &out, &err, HDRS("create", "--name", name, "--scope", scope, "--expires", expires))
                     : token_cli(s, &out, &err, HDRS("create", "--name", name, "--scope", scope));
    cr_assert_eq(rc, 0, "token create %s: exit %d\nstdout: %s\nstderr: %s", name, rc, out, err);
    cr_assert(hk_matches(out, "^hkd_[A-Za-z0-9_-]{43}\n$"), "token create printed \"%s\"", out);
    snprintf(tok, TOKEN_LEN + 1, "%.*s", TOKEN_LEN, out);
    cr_assert_eq(tokens_in(err, "hkd_", NULL), 0, "the token is on stderr too: %s", err);
    free(out);
    free(err);
}

static void revoke_token(const struct hk_server *s, const char *name)
{
    char *out, *err;
    int rc = token_cli(s, &out, &err, HDRS("revoke", name));
    cr_assert_eq(rc, 0, "token revoke %s: exit %d: %s", name, rc, err);
    free(out);
    free(err);
}

struct session {
    char token[TOKEN_LEN + 1], csrf[TOKEN_LEN + 1];
    char subject[80], expires_at[64];
    char cookie_session[512], cookie_csrf[512];   /* the Set-Cookie values */
};

/* The value of the Set-Cookie header that sets `name`, "" when none. */
static void set_cookie(const struct hk_resp *r, const char *name, char *out, size_t n)
{
    out[0] = 0;
    size_t nl = strlen(name);
    for (const char *p = r->head; p && *p;) {
        const char *e = strchr(p, '\n');
        size_t len = e ? (size_t)(e - p) : strlen(p);
        if (len > 11 && strncasecmp(p, "Set-Cookie:", 11) == 0) {
            const char *v = p + 11;
            while (*v == ' ')
                v++;
            if (strncmp(v, name, nl) == 0 && v[nl] == '=') {
                size_t vl = len - (size_t)(v - p);
                while (vl && (v[vl - 1] == '\r' || v[vl - 1] == ' '))
                    vl--;
                snprintf(out, n, "%.*s", (int)vl, v);
                return;
            }
        }
        p = e ? e + 1 : NULL;
    }
}

/* POST /api/sessions with API token `tok`. */
static void new_session(const struct hk_server *s, const char *tok, struct session *out)
{
    struct hk_resp r;
    call(s, &r, "POST", "/api/sessions", NULL, HDRS(bearer(tok)));
    json_t *j = hk_assert_json(&r, 201);
    const char *t = hk_jstr(j, "token"), *c = hk_jstr(j, "csrfToken");
    cr_assert(hk_matches(t, "^hks_[A-Za-z0-9_-]{43}$"), "session token \"%s\"", t);
    cr_assert(hk_matches(c, "^hkc_[A-Za-z0-9_-]{43}$"), "csrfToken \"%s\"", c);
    snprintf(out->token, sizeof out->token, "%s", t);
    snprintf(out->csrf, sizeof out->csrf, "%s", c);
    snprintf(out->subject, sizeof out->subject, "%s", hk_jstr(j, "subject"));
    snprintf(out->expires_at, sizeof out->expires_at, "%s", hk_jstr(j, "expiresAt"));
    cr_assert(hk_parse_rfc3339(out->expires_at) > 0, "expiresAt \"%s\"", out->expires_at);
    set_cookie(&r, "hookd_session", out->cookie_session, sizeof out->cookie_session);
    set_cookie(&r, "hookd_csrf", out->cookie_csrf, sizeof out->cookie_csrf);
    json_decref(j);
    hk_resp_free(&r);
}

/* ---- raw requests ---- */

/* Send `req` (n bytes, 0: strlen) from `source` and read one response into
 * raw; its status, or -1 when none came. */
static int raw_exchange(const struct hk_server *s, const char *source, const char *req, size_t n,
                        struct hk_raw *raw)
{
    int fd = hk_tcp_connect_from(s, source);
    /* The server may answer and close before reading everything. */
    hk_tcp_send(fd, req, n ? n : strlen(req));
    hk_tcp_read(fd, raw, 1, 5000);
    hk_tcp_close(fd);
    const struct hk_raw_resp *rr = hk_raw_final(raw, 0);
    return rr ? rr->status : -1;
}

/* A raw response seen as an hk_resp (borrowed: do not free). */
static struct hk_resp raw_as_resp(const struct hk_raw *raw)
{
    const struct hk_raw_resp *rr = hk_raw_final(raw, 0);
    struct hk_resp r = {0};
    cr_assert(rr, "no response: %s", raw->buf ? raw->buf : "");
    r.status = rr->status;
    r.head = (char *)rr->head;
    r.head_len = rr->head_len;
    r.body = rr->body;
    r.body_len = rr->body_len;
    return r;
}

/* ---- the secure default ---- */

Test(auth, first_start_prints_an_admin_token_once)
{
    start_on(&srv, NULL);
    char admin[TOKEN_LEN + 1];
    admin_token(&srv, admin);
    expect_denied(&srv, "GET", "/api/webhooks", NULL, NULL, 401, "missing", NULL);
    cr_assert_eq(status_of(&srv, "GET", "/api/webhooks", NULL, HDRS(bearer(admin))), 200);

    struct hk_resp r;
    call(&srv, &r, "GET", "/api/system/info", NULL, NULL);
    json_t *j = hk_assert_json(&r, 200);
    cr_expect_str_eq(hk_jstr(j, "auth"), "on");
    cr_expect_str_eq(hk_jstr(j, "sessions"), "store");
    json_decref(j);
    hk_resp_free(&r);

    /* The second start finds the token and prints none; it still works. */
    hk_server_stop_clean(&srv);
    long long before = hk_server_stderr_size(&srv);
    hk_server_restart(&srv);
    char *err = hk_server_stderr(&srv);
    cr_assert_eq(tokens_in(err + before, "hkd_", NULL), 0, "the second start printed a token:\n%s", err + before);
    cr_assert_null(strstr(err + before, "no API token existed"), "a banner on the second start:\n%s", err + before);
    free(err);
    cr_assert_eq(status_of(&srv, "GET", "/api/webhooks", NULL, HDRS(bearer(admin))), 200);

    char *out;
    cr_assert_eq(token_cli(&srv, &out, &err, HDRS("list")), 0, "%s", err);
    cr_assert(hk_matches(out, "^admin +read,delete,admin +created "), "token list: %s", out);
    cr_assert_null(strchr(out, '\n') ? strchr(strchr(out, '\n') + 1, '\n') : NULL, "more than one token: %s", out);
    cr_assert_eq(tokens_in(out, "hkd_", NULL), 0, "token list shows a token: %s", out);
    free(out);
    free(err);
    hk_finish(&srv);
}

Test(auth, a_tokens_file_means_no_first_start_token)
{
    /* A well-formed token (its last character carries no stray bits). */
    char tok[TOKEN_LEN + 1] = "hkd_";
    for (int i = 4; i < TOKEN_LEN; i++)
        tok[i] = "Fz3_kQ9-"[i % 8];
    tok[TOKEN_LEN - 1] = 'A';
    tok[TOKEN_LEN] = 0;
    char path[] = "/tmp/hookd-auth-tokens-XXXXXX", line[200];
    int fd = mkstemp(path);
    cr_assert(fd >= 0, "mkstemp");
    FILE *f = fdopen(fd, "w");
    cr_assert(f);
    snprintf(line, sizeof line, "# ops\nops read %s\n", tok);
    fputs(line, f);
    fclose(f);
    char env[450];
    snprintf(env, sizeof env, "HOOKD_API_TOKENS_FILE=%s", path);
    start_on(&srv, HDRS(env));
    unlink(path);
    char *err = hk_server_stderr(&srv);
    cr_assert_eq(tokens_in(err, "hkd_", NULL), 0, "a token printed although a tokens file was given:\n%s", err);
    free(err);
    cr_assert_eq(status_of(&srv, "GET", "/api/webhooks", NULL, HDRS(bearer(tok))), 200);
    expect_denied(&srv, "DELETE", "/api/webhooks/1", NULL, HDRS(bearer(tok)), 403, "insufficient_scope",
                  "insufficient_scope");
    hk_finish(&srv);
}

Test(auth, auth_off_is_open_warns_and_says_so)
{
    hk_server_start(&srv, HDRS("HOOKD_AUTH=off"));
    int64_t id = hk_create(&srv, "github", "push", NULL);
    cr_assert_eq(status_of(&srv, "GET", "/api/webhooks", NULL, NULL), 200);
    char path[64];
    snprintf(path, sizeof path, "/api/webhooks/%lld", (long long)id);
    cr_assert_eq(status_of(&srv, "GET", path, NULL, NULL), 200);
    cr_assert_eq(status_of(&srv, "DELETE", path, NULL, NULL), 204);
    struct hk_resp r;
    call(&srv, &r, "GET", "/api/system/info", NULL, NULL);
    json_t *j = hk_assert_json(&r, 200);
    cr_expect_str_eq(hk_jstr(j, "auth"), "off");
    json_decref(j);
    hk_resp_free(&r);
    char *err = hk_server_stderr(&srv);
    cr_assert(hk_matches(err, "\"level\":\"warn\"[^\n]*HOOKD_AUTH=off"), "no warning about HOOKD_AUTH=off:\n%s", err);
    cr_assert_eq(tokens_in(err, "hkd_", NULL), 0, "a token printed with HOOKD_AUTH=off:\n%s", err);
    free(err);
    hk_finish(&srv);
}

/* ---- hookd token while the server runs ---- */

Test(auth, token_cli_create_list_revoke_while_running)
{
    start_on(&srv, NULL);
    char r1[TOKEN_LEN + 1];
    create_token(&srv, "reader-1", "read", NULL, r1);
    /* Used on a keep-alive connection, revoked meanwhile, refused on it. */
    CURL *h = hk_curl_new();
    struct hk_req q = {.path = "/api/webhooks", .headers = HDRS(bearer(r1))};
    struct hk_resp r;
    hk_do(&srv, h, &q, &r);
    cr_assert_eq(r.status, 200, "%s", r.body);
    hk_resp_free(&r);

    /* A session made from the token ends with it. */
    struct session sess;
    new_session(&srv, r1, &sess);
    cr_assert_eq(status_of(&srv, "GET", "/api/webhooks", NULL, HDRS(bearer(sess.token))), 200);

    char *out, *err;
    cr_assert_eq(token_cli(&srv, &out, &err, HDRS("list")), 0, "%s", err);
    cr_assert(hk_matches(out, "(^|\n)admin +read,delete,admin +created "), "%s", out);
    cr_assert(hk_matches(out, "(^|\n)reader-1 +read +created [0-9T:.Z-]+\n"), "%s", out);
    cr_assert_eq(tokens_in(out, "hkd_", NULL), 0, "token list shows a token: %s", out);
    free(out);
    free(err);

    revoke_token(&srv, "reader-1");
    hk_do(&srv, h, &q, &r);
    cr_assert_eq(r.num_connects, 0, "the keep-alive connection was not reused");
    assert_denied(&r, 401, "revoked", "invalid_token");
    hk_resp_free(&r);
    curl_easy_cleanup(h);
    expect_denied(&srv, "GET", "/api/webhooks", NULL, HDRS(bearer(r1)), 401, "revoked", "invalid_token");
    expect_denied(&srv, "GET", "/api/webhooks", NULL, HDRS(bearer(sess.token)), 401, "unknown", "invalid_token");

    cr_assert_eq(token_cli(&srv, &out, &err, HDRS("list")), 0, "%s", err);
    cr_assert(hk_matches(out, "(^|\n)reader-1 +read +created [^\n]* revoked [0-9T:.Z-]+\n"), "%s", out);
    free(out);
    free(err);

    /* Mistakes: a taken name, an unknown name, a bad scope or duration. */
    cr_assert_eq(token_cli(&srv, &out, &err, HDRS("create", "--name", "reader-1", "--scope", "read")), 1,
                 "%s %s", out, err);
    cr_assert_eq(tokens_in(out, "hkd_", NULL), 0, "%s", out);
    free(out);
    free(err);
    cr_assert_eq(token_cli(&srv, &out, &err, HDRS("revoke", "nobody")), 1, "%s", err);
    free(out);
    free(err);
    cr_assert_eq(token_cli(&srv, &out, &err, HDRS("create", "--name", "x", "--scope", "root")), 2, "%s", err);
    free(out);
    free(err);
    cr_assert_eq(token_cli(&srv, &out, &err, HDRS("create", "--name", "x", "--scope", "read", "--expires", "soon")),
                 2, "%s", err);
    free(out);
    free(err);
    /* A new token by another name works at once. */
    char r2[TOKEN_LEN + 1];
    create_token(&srv, "reader-2", "read", "30d", r2);
    cr_assert_eq(status_of(&srv, "GET", "/api/webhooks", NULL, HDRS(bearer(r2))), 200);
    hk_finish(&srv);
}

/* ---- scopes ---- */

Test(auth, scopes_decide_what_a_token_may_do)
{
    start_on(&srv, NULL);
    char admin[TOKEN_LEN + 1], rd[TOKEN_LEN + 1], dl[TOKEN_LEN + 1], rdl[TOKEN_LEN + 1];
    admin_token(&srv, admin);
    create_token(&srv, "rd", "read", NULL, rd);
    create_token(&srv, "dl", "delete", NULL, dl);
    create_token(&srv, "rdl", "read,delete", NULL, rdl);
    /* Senders need nothing. */
    int64_t ids[4];
    for (int i = 0; i < 4; i++)
        ids[i] = hk_create(&srv, "github", "push", NULL);
    char p[4][64];
    for (int i = 0; i < 4; i++)
        snprintf(p[i], sizeof p[i], "/api/webhooks/%lld", (long long)ids[i]);

    cr_assert_eq(status_of(&srv, "GET", "/api/webhooks?limit=20", NULL, HDRS(bearer(rd))), 200);
    cr_assert_eq(status_of(&srv, "GET", p[0], NULL, HDRS(bearer(rd))), 200);
    struct hk_resp r;
    call(&srv, &r, "DELETE", p[0], NULL, HDRS(bearer(rd)));
    assert_denied(&r, 403, "insufficient_scope", "insufficient_scope");
    char v[256];
    hk_header(&r, "WWW-Authenticate", v, sizeof v);
    cr_assert(strstr(v, "scope=\"delete\""), "WWW-Authenticate does not name the scope: %s", v);
    hk_resp_free(&r);

    call(&srv, &r, "GET", "/api/webhooks", NULL, HDRS(bearer(dl)));
    assert_denied(&r, 403, "insufficient_scope", "insufficient_scope");
    hk_header(&r, "WWW-Authenticate", v, sizeof v);
    cr_assert(strstr(v, "scope=\"read\""), "WWW-Authenticate does not name the scope: %s", v);
    hk_resp_free(&r);
    expect_denied(&srv, "GET", p[1], NULL, HDRS(bearer(dl)), 403, "insufficient_scope", "insufficient_scope");
    cr_assert_eq(status_of(&srv, "DELETE", p[0], NULL, HDRS(bearer(dl))), 204);

    cr_assert_eq(status_of(&srv, "GET", p[1], NULL, HDRS(bearer(rdl))), 200);
    cr_assert_eq(status_of(&srv, "DELETE", p[1], NULL, HDRS(bearer(rdl))), 204);

    cr_assert_eq(status_of(&srv, "GET", p[2], NULL, HDRS(bearer(admin))), 200);
    cr_assert_eq(status_of(&srv, "DELETE", p[2], NULL, HDRS(bearer(admin))), 204);
    cr_assert_eq(status_of(&srv, "DELETE", p[2], NULL, HDRS(bearer(admin))), 404);

    /* A session carries the scopes of the token that made it. */
    struct session s;
    new_session(&srv, rd, &s);
    cr_assert_str_eq(s.subject, "rd");
    cr_assert_eq(status_of(&srv, "GET", p[3], NULL, HDRS(bearer(s.token))), 200);
    expect_denied(&srv, "DELETE", p[3], NULL, HDRS(bearer(s.token)), 403, "insufficient_scope",
                  "insufficient_scope");
    cr_assert_eq(status_of(&srv, "GET", p[3], NULL, HDRS(bearer(admin))), 200, "the refused DELETE deleted it");

    /* What stays open. */
    static const char *const open_paths[] = {"/q/health", "/q/health/live", "/q/health/ready", "/q/health/started",
                                             "/q/openapi", "/api/system/info", "/q/metrics"};
    for (size_t i = 0; i < sizeof open_paths / sizeof open_paths[0]; i++)
        cr_assert_eq(status_of(&srv, "GET", open_paths[i], NULL, NULL), 200, "%s", open_paths[i]);
    hk_finish(&srv);
}

/* ---- expiry ---- */

Test(auth, tokens_and_sessions_expire)
{
    start_on(&srv, HDRS("HOOKD_SESSION_TTL=1s"));
    char admin[TOKEN_LEN + 1], e2[TOKEN_LEN + 1];
    admin_token(&srv, admin);
    create_token(&srv, "short", "read", "2s", e2);
    int64_t t0 = hk_now_ms();   /* the token expires within 2 s of this */
    struct session s;
    new_session(&srv, admin, &s);
    cr_assert(strstr(s.cookie_session, "Max-Age=1;") || hk_matches(s.cookie_session, "Max-Age=1$"),
              "cookie lifetime is not the session's: %s", s.cookie_session);
    cr_assert_eq(status_of(&srv, "GET", "/api/webhooks", NULL, HDRS(bearer(s.token))), 200);
    cr_assert_eq(status_of(&srv, "GET", "/api/webhooks", NULL, HDRS(bearer(e2))), 200);

    char *out, *err;
    cr_assert_eq(token_cli(&srv, &out, &err, HDRS("list")), 0, "%s", err);
    cr_assert(hk_matches(out, "(^|\n)short +read +created [^\n]* expires [0-9T:.Z-]+\n"), "%s", out);
    free(out);
    free(err);

    int64_t left = t0 + 2250 - hk_now_ms();
    if (left > 0)
        hk_sleep_ms((int)left);
    expect_denied(&srv, "GET", "/api/webhooks", NULL, HDRS(bearer(s.token)), 401, "expired|unknown", "invalid_token");
    expect_denied(&srv, "GET", "/api/webhooks", NULL, HDRS(bearer(e2)), 401, "expired", "invalid_token");
    cr_assert_eq(status_of(&srv, "GET", "/api/webhooks", NULL, HDRS(bearer(admin))), 200);
    hk_finish(&srv);
}

/* ---- getting past the gate ---- */

struct bypass {
    const char *name;
    const char *req;      /* %T admin token, %S session, %C its CSRF token, %R a read token */
    int status;
    const char *reasons;  /* for 401/403; NULL: not checked */
};

/* Expand the placeholders of b->req into out. */
static size_t expand(const char *tmpl, const char *admin, const struct session *s, const char *rd, char *out,
                     size_t cap)
{
    size_t o = 0;
    for (const char *p = tmpl; *p; p++) {
        const char *sub = NULL;
        if (p[0] == '%' && p[1]) {
            sub = p[1] == 'T' ? admin : p[1] == 'S' ? s->token : p[1] == 'C' ? s->csrf : p[1] == 'R' ? rd : NULL;
        }
        if (sub) {
            size_t n = strlen(sub);
            cr_assert(o + n < cap);
            memcpy(out + o, sub, n);
            o += n;
            p++;
        } else {
            cr_assert(o + 1 < cap);
            out[o++] = *p;
        }
    }
    out[o] = 0;
    return o;
}

#define GET_HEAD "GET /api/webhooks HTTP/1.1\r\nHost: x\r\nConnection: close\r\n"

Test(auth, attempts_to_get_past_the_gate_are_refused)
{
    start_on(&srv, NULL);
    char admin[TOKEN_LEN + 1], rd[TOKEN_LEN + 1];
    admin_token(&srv, admin);
    create_token(&srv, "rd", "read", NULL, rd);
    struct session s;
    new_session(&srv, admin, &s);
    int64_t id = hk_create(&srv, "github", "push", NULL);
    cr_assert_eq(id, 1, "the cases below name webhook 1");

    /* A token one character short and one long, and unknown ones of the
     * right shape. */
    char shorter[TOKEN_LEN], longer[TOKEN_LEN + 2];
    snprintf(shorter, sizeof shorter, "%.*s", TOKEN_LEN - 1, admin);
    snprintf(longer, sizeof longer, "%sA", admin);
    char short_case[256], long_case[256];
    snprintf(short_case, sizeof short_case, GET_HEAD "Authorization: Bearer %s\r\n\r\n", shorter);
    snprintf(long_case, sizeof long_case, GET_HEAD "Authorization: Bearer %s\r\n\r\n", longer);

    const struct bypass cases[] = {
        {"no credential", GET_HEAD "\r\n", 401, "missing"},
        {"empty Authorization", GET_HEAD "Authorization: \r\n\r\n", 401, "missing|malformed"},
        {"empty Bearer", GET_HEAD "Authorization: Bearer \r\n\r\n", 401, "missing|malformed"},
        {"Bearer alone", GET_HEAD "Authorization: Bearer\r\n\r\n", 401, "missing|malformed"},
        {"Bearer Bearer", GET_HEAD "Authorization: Bearer Bearer %T\r\n\r\n", 401, "malformed"},
        {"Bearer twice in one value", GET_HEAD "Authorization: Bearer %T Bearer %T\r\n\r\n", 401, "malformed"},
        {"two credentials in a list", GET_HEAD "Authorization: Bearer %T, Bearer %T\r\n\r\n", 401, "malformed"},
        {"two Authorization headers", GET_HEAD "Authorization: Bearer %T\r\nAuthorization: Bearer %T\r\n\r\n", 400,
         NULL},
        {"an empty and a good Authorization", GET_HEAD "Authorization: \r\nAuthorization: Bearer %T\r\n\r\n", 400,
         NULL},
        {"Basic", GET_HEAD "Authorization: Basic YWRtaW46YWRtaW4=\r\n\r\n", 401, "malformed"},
        {"a tab for the space", GET_HEAD "Authorization: Bearer\t%T\r\n\r\n", 401, "malformed"},
        {"token one short", short_case, 401, "malformed"},
        {"token one long", long_case, 401, "malformed"},
        {"unknown API token", GET_HEAD "Authorization: Bearer hkd_AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA\r\n\r\n",
         401, "unknown"},
        {"unknown session", GET_HEAD "Authorization: Bearer hks_AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA\r\n\r\n",
         401, "unknown"},
        {"CSRF token as Bearer", GET_HEAD "Authorization: Bearer %C\r\n\r\n", 401, "malformed"},
        {"CSRF token as the session cookie", GET_HEAD "Cookie: hookd_session=%C\r\n\r\n", 401, "malformed"},
        {"API token as the session cookie", GET_HEAD "Cookie: hookd_session=%T\r\n\r\n", 401, "malformed"},
        {"CSRF token alone", GET_HEAD "X-CSRF-Token: %C\r\n\r\n", 401, "missing"},
        {"cookie named like the session", GET_HEAD "Cookie: xhookd_session=%S\r\n\r\n", 401, "missing"},
        {"a bad header beats a good cookie",
         GET_HEAD "Authorization: Bearer hkd_AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA\r\nCookie: hookd_session=%S\r\n\r\n",
         401, "unknown"},
        {"session token for a new session",
         "POST /api/sessions HTTP/1.1\r\nHost: x\r\nConnection: close\r\nContent-Length: 0\r\n"
         "Authorization: Bearer %S\r\n\r\n",
         403, "insufficient_scope"},
        {"API token to end a session",
         "DELETE /api/sessions/current HTTP/1.1\r\nHost: x\r\nConnection: close\r\nAuthorization: Bearer %T\r\n\r\n",
         401, "malformed"},
        {"access_token in the query",
         "GET /api/webhooks?access_token=%T HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n", 401, "malformed"},
        {"token in the query", "GET /api/webhooks?limit=5&token=%T HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n",
         401, "malformed"},
        {"api_key in the query", "GET /api/webhooks/1?api_key=%T HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n",
         401, "malformed"},
        {"query token beside a good header",
         "GET /api/webhooks?access_token=%T HTTP/1.1\r\nHost: x\r\nConnection: close\r\nAuthorization: Bearer %T\r\n\r\n",
         401, "malformed"},
        {"CR LF and Redis commands in the token",
         GET_HEAD "Authorization: Bearer *3\r\n$3\r\nDEL\r\n$15\r\nhookd:session:*\r\n\r\n", 400, NULL},
        {"CR LF and Redis commands in the cookie",
         GET_HEAD "Cookie: hookd_session=*1\r\n$8\r\nFLUSHALL\r\n\r\n", 400, NULL},
        {"Redis commands in the token, one line",
         GET_HEAD "Authorization: Bearer *3 $3 DEL $15 hookd:session:*\r\n\r\n", 401, "malformed"},
        {"Redis inline command in the token", GET_HEAD "Authorization: Bearer FLUSHALL\r\n\r\n", 401, "malformed"},
        {"a bare LF in the token", GET_HEAD "Authorization: Bearer hkd_AAAA\nAAAA\r\n\r\n", 400, NULL},
        {"a bare CR in the token", GET_HEAD "Authorization: Bearer hkd_AAAA\rAAAA\r\n\r\n", 400, NULL},
        {"a folded Authorization", GET_HEAD "Authorization: Bearer\r\n %T\r\n\r\n", 400, NULL},
        {"method override", "DELETE /api/webhooks/1 HTTP/1.1\r\nHost: x\r\nConnection: close\r\n"
                            "X-HTTP-Method-Override: GET\r\nAuthorization: Bearer %R\r\n\r\n",
         403, "insufficient_scope"},
    };
    char buf[2048];
    char src[32];
    int k = 0;
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++, k++) {
        const struct bypass *b = &cases[i];
        size_t n = expand(b->req, admin, &s, rd, buf, sizeof buf);
        snprintf(src, sizeof src, "127.0.1.%d", 10 + k);
        hk_context("case \"%s\" from %s", b->name, src);
        snprintf(checking, sizeof checking, "case \"%s\"", b->name);
        struct hk_raw raw = {0};
        int st = raw_exchange(&srv, src, buf, n, &raw);
        cr_assert(st >= 0, "case \"%s\": no response (closed %d): %s", b->name, raw.closed, raw.buf);
        cr_assert(st < 200 || st > 299, "case \"%s\" got past the gate: %d\n%s", b->name, st, raw.buf);
        cr_assert_eq(st, b->status, "case \"%s\": %d, expected %d\n%s", b->name, st, b->status, raw.buf);
        if (b->reasons) {
            struct hk_resp r = raw_as_resp(&raw);
            assert_denied(&r, b->status, b->reasons, b->status == 403 ? "insufficient_scope" : BY_REASON);
        }
        hk_raw_free(&raw);
    }
    hk_context("%s", "");

    /* A NUL in the token, with its length known. */
    {
        char nul[256];
        int n = snprintf(nul, sizeof nul, GET_HEAD "Authorization: Bearer hkd_AAAA");
        nul[n++] = 0;
        n += snprintf(nul + n, sizeof nul - (size_t)n, "AAAA\r\n\r\n");
        struct hk_raw raw = {0};
        int st = raw_exchange(&srv, "127.0.1.200", nul, (size_t)n, &raw);
        cr_assert_eq(st, 400, "a NUL in the token: %d\n%s", st, raw.buf);
        hk_raw_free(&raw);
    }

    /* 64 KB of Authorization: too large a header section. 4 KB fits the
     * section but is no token. */
    {
        size_t big = 64 * 1024;
        char *req = malloc(big + 256);
        int n = snprintf(req, 256, GET_HEAD "Authorization: Bearer hkd_");
        memset(req + n, 'A', big);
        n += (int)big;
        n += snprintf(req + n, 8, "\r\n\r\n");
        struct hk_raw raw = {0};
        int st = raw_exchange(&srv, "127.0.1.201", req, (size_t)n, &raw);
        cr_assert_eq(st, 431, "64 KB Authorization: %d\n%.300s", st, raw.buf);
        hk_raw_free(&raw);
        n = snprintf(req, 256, GET_HEAD "Authorization: Bearer hkd_");
        memset(req + n, 'A', 4096);
        n += 4096;
        n += snprintf(req + n, 8, "\r\n\r\n");
        st = raw_exchange(&srv, "127.0.1.202", req, (size_t)n, &raw);
        struct hk_resp r = raw_as_resp(&raw);
        assert_denied(&r, 401, "malformed", "invalid_token");
        hk_raw_free(&raw);
        free(req);
    }

    /* Paths spelled otherwise do not reach the data without a credential. */
    static const char *const paths[] = {"/api/webhooks/", "//api/webhooks", "/api//webhooks", "/api/./webhooks",
                                        "/api/webhooks/../webhooks", "/API/WEBHOOKS", "/api/webhooks%2F1",
                                        "/api/webhooks/1/", "/api/webhooks;x=1", "/api/webhooks/%31",
                                        "/api/webhooks/01", "/api/webhooks/1?x=1#f"};
    for (size_t i = 0; i < sizeof paths / sizeof paths[0]; i++) {
        char req[256];
        snprintf(req, sizeof req, "GET %s HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n", paths[i]);
        snprintf(src, sizeof src, "127.0.2.%d", 10 + (int)i);
        struct hk_raw raw = {0};
        int st = raw_exchange(&srv, src, req, 0, &raw);
        cr_assert(st == 401 || st == 404 || st == 400, "GET %s without a credential: %d\n%s", paths[i], st, raw.buf);
        hk_raw_free(&raw);
    }
    /* HEAD and other methods on the protected routes. */
    static const char *const methods[] = {"HEAD", "OPTIONS", "PUT", "PATCH", "POST"};
    for (size_t i = 0; i < sizeof methods / sizeof methods[0]; i++) {
        char req[256];
        snprintf(req, sizeof req, "%s /api/webhooks/1 HTTP/1.1\r\nHost: x\r\nConnection: close\r\nContent-Length: 0\r\n\r\n",
                 methods[i]);
        snprintf(src, sizeof src, "127.0.3.%d", 10 + (int)i);
        struct hk_raw raw = {0};
        raw.head_mask = strcmp(methods[i], "HEAD") == 0 ? 1u : 0u;
        int st = raw_exchange(&srv, src, req, 0, &raw);
        cr_assert(st >= 400 && st < 500, "%s /api/webhooks/1 without a credential: %d\n%s", methods[i], st, raw.buf);
        hk_raw_free(&raw);
    }

    /* The scheme is case-insensitive (RFC 9110 11.1); the token is not. */
    static const char *const schemes[] = {"bearer", "BEARER", "bEaReR"};
    for (size_t i = 0; i < 3; i++) {
        char h[128];
        snprintf(h, sizeof h, "Authorization: %s %s", schemes[i], admin);
        cr_assert_eq(status_of(&srv, "GET", "/api/webhooks", NULL, HDRS(h)), 200, "%s", schemes[i]);
    }
    char upper[TOKEN_LEN + 1];
    snprintf(upper, sizeof upper, "%s", admin);
    for (int i = 4; i < TOKEN_LEN - 1; i++)
        if (upper[i] >= 'a' && upper[i] <= 'z')
            upper[i] = (char)(upper[i] - 'a' + 'A');
    if (strcmp(upper, admin) != 0)
        expect_denied(&srv, "GET", "/api/webhooks", "127.0.1.203", HDRS(bearer(upper)), 401, "unknown|malformed",
                      "invalid_token");
    /* Nothing above changed anything. */
    cr_assert_eq(status_of(&srv, "GET", "/api/webhooks/1", NULL, HDRS(bearer(admin))), 200);
    cr_assert_eq(status_of(&srv, "GET", "/api/webhooks", NULL, HDRS(bearer(s.token))), 200);
    hk_finish(&srv);
}

/* ---- cookie sessions ---- */

static bool attr_has(const char *cookie, const char *attr)
{
    for (const char *p = strchr(cookie, ';'); p; p = strchr(p + 1, ';')) {
        const char *a = p + 1;
        while (*a == ' ')
            a++;
        size_t n = strlen(attr);
        if (strncasecmp(a, attr, n) == 0 && (a[n] == ';' || a[n] == 0 || a[n] == '='))
            return true;
    }
    return false;
}

Test(auth, cookie_sessions_need_the_csrf_token_to_change_things)
{
    start_on(&srv, NULL);
    char admin[TOKEN_LEN + 1];
    admin_token(&srv, admin);
    struct session s, other;
    new_session(&srv, admin, &s);
    new_session(&srv, admin, &other);
    cr_assert_str_eq(s.subject, "admin");
    double exp = hk_parse_rfc3339(s.expires_at);
    struct timespec now;
    clock_gettime(CLOCK_REALTIME, &now);
    cr_assert(exp > (double)now.tv_sec + 3500 && exp < (double)now.tv_sec + 3700, "expiresAt %s is not in 1 h",
              s.expires_at);

    char want[128];
    snprintf(want, sizeof want, "hookd_session=%s;", s.token);
    cr_assert(strncmp(s.cookie_session, want, strlen(want)) == 0, "Set-Cookie %s", s.cookie_session);
    cr_assert(attr_has(s.cookie_session, "HttpOnly"), "%s", s.cookie_session);
    cr_assert(attr_has(s.cookie_session, "SameSite=Strict"), "%s", s.cookie_session);
    cr_assert(attr_has(s.cookie_session, "Path=/"), "%s", s.cookie_session);
    cr_assert(!attr_has(s.cookie_session, "Secure"), "Secure on a loopback client: %s", s.cookie_session);
    snprintf(want, sizeof want, "hookd_csrf=%s;", s.csrf);
    cr_assert(strncmp(s.cookie_csrf, want, strlen(want)) == 0, "Set-Cookie %s", s.cookie_csrf);
    cr_assert(attr_has(s.cookie_csrf, "SameSite=Strict"), "%s", s.cookie_csrf);
    cr_assert(!attr_has(s.cookie_csrf, "Secure"), "%s", s.cookie_csrf);

    int64_t a = hk_create(&srv, "github", "push", NULL), b = hk_create(&srv, "github", "push", NULL);
    char pa[64], pb[64], cookie[160], csrf[160], wrong[160], self[160];
    snprintf(pa, sizeof pa, "/api/webhooks/%lld", (long long)a);
    snprintf(pb, sizeof pb, "/api/webhooks/%lld", (long long)b);
    snprintf(cookie, sizeof cookie, "Cookie: theme=dark; hookd_session=%s; hookd_csrf=%s", s.token, s.csrf);
    snprintf(csrf, sizeof csrf, "X-CSRF-Token: %s", s.csrf);
    snprintf(wrong, sizeof wrong, "X-CSRF-Token: %s", other.csrf);
    snprintf(self, sizeof self, "X-CSRF-Token: %s", s.token);

    cr_assert_eq(status_of(&srv, "GET", "/api/webhooks", NULL, HDRS(cookie)), 200);
    cr_assert_eq(status_of(&srv, "GET", pa, NULL, HDRS(cookie)), 200);
    expect_denied(&srv, "DELETE", pa, NULL, HDRS(cookie), 403, "csrf", NULL);
    expect_denied(&srv, "DELETE", pa, NULL, HDRS(cookie, wrong), 403, "csrf", NULL);
    expect_denied(&srv, "DELETE", pa, NULL, HDRS(cookie, self), 403, "csrf", NULL);
    cr_assert_eq(status_of(&srv, "GET", pa, NULL, HDRS(cookie)), 200, "a refused DELETE deleted");
    cr_assert_eq(status_of(&srv, "DELETE", pa, NULL, HDRS(cookie, csrf)), 204);
    cr_assert_eq(status_of(&srv, "DELETE", pa, NULL, HDRS(cookie, csrf)), 404);
    /* In the Authorization header the session is no ambient credential. */
    cr_assert_eq(status_of(&srv, "DELETE", pb, NULL, HDRS(bearer(s.token))), 204);

    /* Ending it: with the cookie, the CSRF token too. */
    expect_denied(&srv, "DELETE", "/api/sessions/current", NULL, HDRS(cookie), 403, "csrf", NULL);
    struct hk_resp r;
    call(&srv, &r, "DELETE", "/api/sessions/current", NULL, HDRS(cookie, csrf));
    cr_assert_eq(r.status, 204, "%s", r.body);
    char gone[512];
    set_cookie(&r, "hookd_session", gone, sizeof gone);
    cr_assert(hk_matches(gone, "^hookd_session=;") && attr_has(gone, "Max-Age=0"), "the cookie is not cleared: %s",
              gone);
    hk_resp_free(&r);
    expect_denied(&srv, "GET", "/api/webhooks", NULL, HDRS(cookie), 401, "unknown|revoked", "invalid_token");
    expect_denied(&srv, "GET", "/api/webhooks", NULL, HDRS(bearer(s.token)), 401, "unknown|revoked", "invalid_token");
    /* The other session lives on. */
    cr_assert_eq(status_of(&srv, "GET", "/api/webhooks", NULL, HDRS(bearer(other.token))), 200);
    hk_finish(&srv);
}

/* ---- the failure limiter ---- */

static const char UNKNOWN_TOKEN[] = "hkd_AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA";

static void assert_rate_limited(const struct hk_resp *r)
{
    assert_denied(r, 429, "rate_limited", NULL);
    char v[64];
    cr_assert(hk_header(r, "Retry-After", v, sizeof v), "429 without Retry-After:\n%s", r->head);
    cr_assert(hk_matches(v, "^[0-9]+$") && atoi(v) >= 1 && atoi(v) <= 960, "Retry-After \"%s\"", v);
}

Test(auth, many_failures_on_one_connection_get_429)
{
    start_on(&srv, NULL);
    char admin[TOKEN_LEN + 1];
    admin_token(&srv, admin);
    const char *src = "127.0.4.1";
    CURL *h = hk_curl_new();
    struct hk_req bad = {.path = "/api/webhooks", .headers = HDRS(bearer(UNKNOWN_TOKEN)), .source = src};
    struct hk_resp r;
    for (int i = 0; i < 11; i++) {
        hk_do(&srv, h, &bad, &r);
        cr_assert_eq(r.status, 401, "failure %d: %ld", i + 1, r.status);
        if (i > 0)
            cr_assert_eq(r.num_connects, 0, "a new connection for failure %d", i + 1);
        hk_resp_free(&r);
    }
    hk_do(&srv, h, &bad, &r);
    assert_rate_limited(&r);
    hk_resp_free(&r);
    /* Blocked is blocked: the good token from there is refused too. */
    struct hk_req good = {.path = "/api/webhooks", .headers = HDRS(bearer(admin)), .source = src};
    hk_do(&srv, h, &good, &r);
    assert_rate_limited(&r);
    hk_resp_free(&r);
    /* What needs no credential still works from there. */
    struct hk_req live = {.path = "/q/health/live", .source = src};
    hk_do(&srv, h, &live, &r);
    cr_assert_eq(r.status, 200);
    hk_resp_free(&r);
    curl_easy_cleanup(h);
    /* Another address is not blocked. */
    cr_assert_eq(status_of(&srv, "GET", "/api/webhooks", "127.0.4.2", HDRS(bearer(admin))), 200);
    hk_finish(&srv);
}

Test(auth, many_failures_from_one_address_get_429)
{
    /* As a script with curl would: a new connection for each try. */
    start_on(&srv, NULL);
    char admin[TOKEN_LEN + 1];
    admin_token(&srv, admin);
    const char *src = "127.0.4.3";
    for (int i = 0; i < 11; i++)
        cr_assert_eq(status_of(&srv, "GET", "/api/webhooks", src, HDRS(bearer(UNKNOWN_TOKEN))), 401, "failure %d",
                     i + 1);
    /* More than 10 failures in 10 s from one address: blocked, whichever
     * connection (and so event loop) the next tries come on. */
    int limited = 0;
    char seen[128] = "";
    for (int i = 0; i < 6; i++) {
        struct hk_resp r;
        call(&srv, &r, "GET", "/api/webhooks", src, HDRS(bearer(i % 2 ? admin : UNKNOWN_TOKEN)));
        limited += r.status == 429;
        size_t n = strlen(seen);
        snprintf(seen + n, sizeof seen - n, "%s%ld", n ? " " : "", r.status);
        hk_resp_free(&r);
    }
    cr_assert_eq(limited, 6,
                 "after 11 failures from %s, 6 more tries on new connections got %s (HOOKD_THREADS=2); "
                 "expected 429 for each",
                 src, seen);
    hk_finish(&srv);
}

/* ---- metrics ---- */

static void scrape(const struct hk_server *s, const char *tok, struct prom *p)
{
    char h[200];
    snprintf(h, sizeof h, "Authorization: Bearer %s", tok);
    struct hk_resp r;
    call(s, &r, "GET", "/q/metrics", NULL, HDRS(h));
    cr_assert_eq(r.status, 200, "%ld %s", r.status, r.body);
    char *err = prom_parse(r.body, p);
    cr_assert_null(err, "exposition rejected: %s", err);
    hk_resp_free(&r);
}

static const char *const RESULTS[] = {"ok",      "missing",           "malformed",    "unknown",    "expired",
                                      "revoked", "insufficient_scope", "rate_limited", "unavailable"};
#define NRESULTS ((int)(sizeof RESULTS / sizeof RESULTS[0]))

static void auth_counts(const struct prom *p, double out[NRESULTS])
{
    for (int i = 0; i < NRESULTS; i++) {
        char l[64];
        snprintf(l, sizeof l, "result=\"%s\"", RESULTS[i]);
        out[i] = prom_get(p, "hookd_auth_total", l);
        cr_assert(out[i] >= 0, "no hookd_auth_total{%s}", l);
    }
}

Test(auth, the_metrics_token_and_nothing_else_opens_metrics)
{
    start_on(&srv, HDRS("HOOKD_METRICS_TOKEN=metrics-secret-7f3a9c"));
    char admin[TOKEN_LEN + 1];
    admin_token(&srv, admin);
    expect_denied(&srv, "GET", "/q/metrics", "127.0.5.1", NULL, 401, "missing", NULL);
    expect_denied(&srv, "GET", "/metrics", "127.0.5.2", NULL, 401, "missing", NULL);
    cr_assert_eq(status_of(&srv, "GET", "/q/metrics", NULL, HDRS("Authorization: Bearer metrics-secret-7f3a9c")),
                 200);
    cr_assert_eq(status_of(&srv, "GET", "/q/metrics", NULL, HDRS("Authorization: bearer metrics-secret-7f3a9c")),
                 200);
    expect_denied(&srv, "GET", "/q/metrics", "127.0.5.3", HDRS("Authorization: Bearer metrics-secret-7f3a9"), 401,
                  "unknown", "invalid_token");
    expect_denied(&srv, "GET", "/q/metrics", "127.0.5.4", HDRS(bearer(admin)), 401, "unknown", "invalid_token");
    expect_denied(&srv, "GET", "/q/metrics", "127.0.5.5", HDRS("Authorization: Basic bWV0cmljczpzZWNyZXQ="), 401,
                  "missing|malformed", NULL);
    hk_finish(&srv);
}

Test(auth, hookd_auth_total_counts_each_result)
{
    const char *mt = "metrics-secret-7f3a9c";
    start_on(&srv, HDRS("HOOKD_METRICS_TOKEN=metrics-secret-7f3a9c"));
    char admin[TOKEN_LEN + 1], rd[TOKEN_LEN + 1], ex[TOKEN_LEN + 1], rv[TOKEN_LEN + 1];
    admin_token(&srv, admin);
    create_token(&srv, "ex", "read", "1s", ex);
    int64_t t_ex = hk_now_ms();   /* it expires within 1 s of this */
    create_token(&srv, "rd", "read", NULL, rd);
    create_token(&srv, "rv", "read", NULL, rv);
    revoke_token(&srv, "rv");

    struct prom p0, p1;
    scrape(&srv, mt, &p0);
    double c0[NRESULTS], c1[NRESULTS];
    auth_counts(&p0, c0);

    static const double want[NRESULTS] = {3, 2, 2, 2 + 11, 1, 1, 1, 1, 0};
    cr_assert_eq(status_of(&srv, "GET", "/api/webhooks", NULL, HDRS(bearer(admin))), 200);
    cr_assert_eq(status_of(&srv, "GET", "/api/webhooks", NULL, HDRS(bearer(rd))), 200);
    cr_assert_eq(status_of(&srv, "GET", "/api/webhooks?limit=1", NULL, HDRS(bearer(rd))), 200);
    expect_denied(&srv, "GET", "/api/webhooks", NULL, NULL, 401, "missing", NULL);
    expect_denied(&srv, "GET", "/api/webhooks/1", NULL, NULL, 401, "missing", NULL);
    expect_denied(&srv, "GET", "/api/webhooks", NULL, HDRS("Authorization: Bearer nope"), 401, "malformed",
                  "invalid_token");
    {
        char path[128];
        snprintf(path, sizeof path, "/api/webhooks?access_token=%s", rd);
        expect_denied(&srv, "GET", path, NULL, NULL, 401, "malformed", "invalid_token");
    }
    expect_denied(&srv, "GET", "/api/webhooks", NULL, HDRS(bearer(UNKNOWN_TOKEN)), 401, "unknown", "invalid_token");
    expect_denied(&srv, "GET", "/api/webhooks/1", NULL, HDRS(bearer(UNKNOWN_TOKEN)), 401, "unknown",
                  "invalid_token");
    expect_denied(&srv, "GET", "/api/webhooks", NULL, HDRS(bearer(rv)), 401, "revoked", "invalid_token");
    expect_denied(&srv, "DELETE", "/api/webhooks/1", NULL, HDRS(bearer(rd)), 403, "insufficient_scope",
                  "insufficient_scope");
    int64_t left = t_ex + 1150 - hk_now_ms();
    if (left > 0)
        hk_sleep_ms((int)left);
    expect_denied(&srv, "GET", "/api/webhooks", NULL, HDRS(bearer(ex)), 401, "expired", "invalid_token");
    /* 11 unknown, then one rate_limited, on one connection from elsewhere. */
    CURL *h = hk_curl_new();
    struct hk_req bad = {.path = "/api/webhooks", .headers = HDRS(bearer(UNKNOWN_TOKEN)), .source = "127.0.5.9"};
    struct hk_resp r;
    for (int i = 0; i < 12; i++) {
        hk_do(&srv, h, &bad, &r);
        cr_assert_eq(r.status, i < 11 ? 401 : 429, "try %d: %ld", i + 1, r.status);
        hk_resp_free(&r);
    }
    curl_easy_cleanup(h);

    scrape(&srv, mt, &p1);
    auth_counts(&p1, c1);
    for (int i = 0; i < NRESULTS; i++)
        cr_expect_eq(c1[i] - c0[i], want[i], "hookd_auth_total{result=\"%s\"} went up by %.0f, expected %.0f",
                     RESULTS[i], c1[i] - c0[i], want[i]);
    cr_assert_eq(prom_count(&p1, "hookd_auth_total"), NRESULTS, "other hookd_auth_total results than the nine");
    prom_free(&p0);
    prom_free(&p1);
    hk_finish(&srv);
}

/* ---- audit lines, and no secret in any log line ---- */

/* The JSON log line with msg "audit", this action and, when rid is not
 * NULL, this requestId; NULL when none (caller decrefs). */
static json_t *audit_line(const char *log, const char *action, const char *rid)
{
    for (const char *p = log; p && *p;) {
        const char *e = strchr(p, '\n');
        size_t n = e ? (size_t)(e - p) : strlen(p);
        if (n && *p == '{') {
            json_t *j = json_loadb(p, n, 0, NULL);
            if (j && strcmp(hk_jstr(j, "msg"), "audit") == 0 && strcmp(hk_jstr(j, "action"), action) == 0 &&
                (!rid || strcmp(hk_jstr(j, "requestId"), rid) == 0))
                return j;
            json_decref(j);
        }
        p = e ? e + 1 : NULL;
    }
    return NULL;
}

/* Every line of a log that starts with '{' is JSON without a token in it. */
static void assert_no_secret_in_json_lines(const char *log, const char *what)
{
    for (const char *p = log; p && *p;) {
        const char *e = strchr(p, '\n');
        size_t n = e ? (size_t)(e - p) : strlen(p);
        if (n && *p == '{') {
            json_t *j = json_loadb(p, n, 0, NULL);
            cr_assert(j, "%s: a log line is not JSON: %.*s", what, (int)n, p);
            json_decref(j);
            char line[4096];
            snprintf(line, sizeof line, "%.*s", (int)n, p);
            cr_assert(!strstr(line, "hkd_") && !strstr(line, "hks_") && !strstr(line, "hkc_"),
                      "%s: a token in a log line: %s", what, line);
        }
        p = e ? e + 1 : NULL;
    }
}

static const char *rid_of(const struct hk_resp *r, char *out, size_t n)
{
    cr_assert(hk_header(r, "X-Request-Id", out, n), "no X-Request-Id:\n%s", r->head);
    return out;
}

Test(auth, audit_lines_name_the_subject_and_request_and_never_a_token)
{
    start_on(&srv, HDRS("HOOKD_ACCESS_LOG=1"));
    char admin[TOKEN_LEN + 1], ci[TOKEN_LEN + 1];
    admin_token(&srv, admin);

    char *out, *err;
    cr_assert_eq(token_cli(&srv, &out, &err, HDRS("create", "--name", "ci", "--scope", "read,delete")), 0, "%s", err);
    snprintf(ci, sizeof ci, "%.*s", TOKEN_LEN, out);
    json_t *j = audit_line(err, "token.create", NULL);
    cr_assert(j, "no token.create audit line from hookd token create:\n%s", err);
    cr_assert_str_eq(hk_jstr(j, "subject"), "ci");
    json_decref(j);
    assert_no_secret_in_json_lines(err, "hookd token create");
    free(out);
    free(err);

    struct hk_resp r;
    char rid[128];
    /* session.create, with the request id the client gave. */
    call(&srv, &r, "POST", "/api/sessions", NULL, HDRS(bearer(ci), "X-Request-Id: audit-session-1"));
    json_t *sj = hk_assert_json(&r, 201);
    struct session s = {0};
    snprintf(s.token, sizeof s.token, "%s", hk_jstr(sj, "token"));
    snprintf(s.csrf, sizeof s.csrf, "%s", hk_jstr(sj, "csrfToken"));
    json_decref(sj);
    cr_assert_str_eq(rid_of(&r, rid, sizeof rid), "audit-session-1");
    hk_resp_free(&r);

    int64_t id = hk_create(&srv, "github", "push", NULL);
    char path[64];
    snprintf(path, sizeof path, "/api/webhooks/%lld", (long long)id);
    char rid_del[128], rid_del2[128], rid_end[128];
    call(&srv, &r, "DELETE", path, NULL, HDRS(bearer(s.token)));
    cr_assert_eq(r.status, 204, "%s", r.body);
    rid_of(&r, rid_del, sizeof rid_del);
    hk_resp_free(&r);
    id = hk_create(&srv, "github", "push", NULL);
    snprintf(path, sizeof path, "/api/webhooks/%lld", (long long)id);
    call(&srv, &r, "DELETE", path, NULL, HDRS(bearer(admin)));
    cr_assert_eq(r.status, 204, "%s", r.body);
    rid_of(&r, rid_del2, sizeof rid_del2);
    hk_resp_free(&r);
    call(&srv, &r, "DELETE", "/api/sessions/current", NULL, HDRS(bearer(s.token)));
    cr_assert_eq(r.status, 204, "%s", r.body);
    rid_of(&r, rid_end, sizeof rid_end);
    hk_resp_free(&r);

    /* Tokens where they must not go: the query string, bad headers. */
    char q[160];
    snprintf(q, sizeof q, "/api/webhooks?access_token=%s", admin);
    expect_denied(&srv, "GET", q, NULL, NULL, 401, "malformed", "invalid_token");

    cr_assert_eq(token_cli(&srv, &out, &err, HDRS("revoke", "ci")), 0, "%s", err);
    j = audit_line(err, "token.revoke", NULL);
    cr_assert(j, "no token.revoke audit line from hookd token revoke:\n%s", err);
    cr_assert_str_eq(hk_jstr(j, "subject"), "ci");
    json_decref(j);
    free(out);
    free(err);

    hk_server_stop_clean(&srv);   /* flushes the access log */
    char *log = hk_server_stderr(&srv);
    j = audit_line(log, "session.create", "audit-session-1");
    cr_assert(j, "no session.create audit line with requestId audit-session-1:\n%s", log);
    cr_assert_str_eq(hk_jstr(j, "subject"), "ci");
    json_decref(j);
    j = audit_line(log, "webhook.delete", rid_del);
    cr_assert(j, "no webhook.delete audit line with requestId %s:\n%s", rid_del, log);
    cr_assert_str_eq(hk_jstr(j, "subject"), "ci", "a session acts as its token's subject");
    json_decref(j);
    j = audit_line(log, "webhook.delete", rid_del2);
    cr_assert(j, "no webhook.delete audit line with requestId %s:\n%s", rid_del2, log);
    cr_assert_str_eq(hk_jstr(j, "subject"), "admin");
    json_decref(j);
    j = audit_line(log, "session.delete", rid_end);
    cr_assert(j, "no session.delete audit line with requestId %s:\n%s", rid_end, log);
    cr_assert_str_eq(hk_jstr(j, "subject"), "ci");
    json_decref(j);
    j = audit_line(log, "token.create", NULL);
    cr_assert(j, "no audit line for the first-start token:\n%s", log);
    cr_assert_str_eq(hk_jstr(j, "subject"), "admin");
    json_decref(j);

    /* The first-start banner is the only place a token appears. */
    assert_no_secret_in_json_lines(log, "the server's stderr");
    cr_assert_eq(tokens_in(log, "hkd_", NULL), 1, "a token other than the banner's in the log:\n%s", log);
    cr_assert_eq(tokens_in(log, "hks_", NULL), 0, "a session token in the log:\n%s", log);
    cr_assert_eq(tokens_in(log, "hkc_", NULL), 0, "a CSRF token in the log:\n%s", log);
    free(log);
}

/* ---- Redis ---- */

static const char *redis_url(void)
{
    const char *u = getenv("HOOKD_TEST_REDIS_URL");
    if (!u || !*u)
        cr_skip_test("needs a Redis: HOOKD_TEST_REDIS_URL=redis://... (by hand: d=$(scripts/redis.sh start); "
                     "export HOOKD_TEST_REDIS_URL=$(scripts/redis.sh url $d))");
    return u;
}

/* scripts/redis.sh VERB [DIR]; its first output line into out. */
static void redis_sh(const char *verb, const char *dir, char *out, size_t n)
{
    const char *sh = getenv("HOOKD_REDIS_SH");
    char cmd[800];
    snprintf(cmd, sizeof cmd, "bash '%s' %s %s%s%s", sh, verb, dir ? "'" : "", dir ? dir : "", dir ? "'" : "");
    FILE *f = popen(cmd, "r");
    cr_assert(f, "popen %s", cmd);
    char line[512] = "";
    if (!fgets(line, sizeof line, f))
        line[0] = 0;
    int rc = pclose(f);
    cr_assert_eq(rc, 0, "%s failed", cmd);
    line[strcspn(line, "\n")] = 0;
    if (out)
        snprintf(out, n, "%s", line);
}

/* A Redis of this test's own (it halts or stops it); its URL. */
static void own_redis_start(char *url, size_t n)
{
    redis_url();   /* the same opt-in as every Redis test */
    if (!getenv("HOOKD_REDIS_SH"))
        cr_skip_test("needs HOOKD_REDIS_SH (tests/meson.build passes scripts/redis.sh)");
    redis_sh("start", NULL, own_redis, sizeof own_redis);
    cr_assert(own_redis[0], "scripts/redis.sh start printed no directory");
    redis_sh("url", own_redis, url, n);
}

/* A blocking connection to the Redis at `url` (redis://user:pw@host:port/db). */
static redisContext *redis_open(const char *url)
{
    char user[128] = "", pw[256] = "", host[128] = "";
    int port = 6379, db = 0;
    cr_assert(strncmp(url, "redis://", 8) == 0, "not a redis:// URL");
    const char *p = url + 8, *at = strchr(p, '@');
    if (at) {
        const char *colon = memchr(p, ':', (size_t)(at - p));
        if (colon) {
            snprintf(user, sizeof user, "%.*s", (int)(colon - p), p);
            snprintf(pw, sizeof pw, "%.*s", (int)(at - colon - 1), colon + 1);
        } else {
            snprintf(pw, sizeof pw, "%.*s", (int)(at - p), p);
        }
        p = at + 1;
    }
    size_t hl = strcspn(p, ":/");
    snprintf(host, sizeof host, "%.*s", (int)hl, p);
    p += hl;
    if (*p == ':')
        port = atoi(++p);
    p += strcspn(p, "/");
    if (*p == '/')
        db = atoi(p + 1);
    redisContext *c = redisConnectWithTimeout(host, port, (struct timeval){2, 0});
    cr_assert(c && !c->err, "cannot connect to Redis at %s:%d: %s", host, port, c ? c->errstr : "");
    redisReply *r = user[0] ? redisCommand(c, "AUTH %s %s", user, pw) : pw[0] ? redisCommand(c, "AUTH %s", pw) : NULL;
    if (r) {
        cr_assert(r->type == REDIS_REPLY_STATUS, "AUTH failed: %s", r->str ? r->str : "");
        freeReplyObject(r);
    }
    r = redisCommand(c, "SELECT %d", db);
    cr_assert(r && r->type == REDIS_REPLY_STATUS);
    freeReplyObject(r);
    return c;
}

static void session_key(const char *tok, char out[96])
{
    unsigned char md[32];
    SHA256((const unsigned char *)tok, strlen(tok), md);
    int n = snprintf(out, 96, "hookd:session:");
    for (int i = 0; i < 32; i++)
        n += snprintf(out + n, 96 - (size_t)n, "%02x", md[i]);
}

static long long redis_int(redisContext *c, const char *cmd, const char *key)
{
    redisReply *r = redisCommand(c, "%s %s", cmd, key);
    cr_assert(r && r->type == REDIS_REPLY_INTEGER, "%s %s: no integer reply", cmd, key);
    long long v = r->integer;
    freeReplyObject(r);
    return v;
}

static void assert_ready(const struct hk_server *s, bool up)
{
    struct hk_resp r;
    call(s, &r, "GET", "/q/health/ready", NULL, NULL);
    json_t *j = hk_assert_json(&r, up ? 200 : 503);
    cr_assert_str_eq(hk_jstr(j, "status"), up ? "UP" : "DOWN", "%s", r.body);
    json_t *checks = json_object_get(j, "checks");
    bool found = false;
    for (size_t i = 0; i < json_array_size(checks); i++) {
        json_t *c = json_array_get(checks, i);
        if (strcmp(hk_jstr(c, "name"), "redis") == 0) {
            found = true;
            cr_assert_str_eq(hk_jstr(c, "status"), up ? "UP" : "DOWN", "%s", r.body);
        } else if (strcmp(hk_jstr(c, "name"), "store") == 0) {
            cr_assert_str_eq(hk_jstr(c, "status"), "UP", "%s", r.body);
        }
    }
    cr_assert(found, "no redis check in readiness: %s", r.body);
    json_decref(j);
    hk_resp_free(&r);
}

static bool wait_ready_up(const struct hk_server *s, int n, int ms);

Test(auth, redis_holds_the_sessions)
{
    const char *url = redis_url();
    char env[600];
    snprintf(env, sizeof env, "HOOKD_REDIS_URL=%s", url);
    start_on(&srv, HDRS(env, "HOOKD_SESSION_TTL=90s"));
    char admin[TOKEN_LEN + 1];
    admin_token(&srv, admin);
    struct hk_resp r;
    call(&srv, &r, "GET", "/api/system/info", NULL, NULL);
    json_t *j = hk_assert_json(&r, 200);
    cr_expect_str_eq(hk_jstr(j, "sessions"), "redis");
    cr_expect_str_eq(hk_jstr(j, "auth"), "on");
    json_decref(j);
    hk_resp_free(&r);
    /* Each loop opens its own Redis connection as it starts, and a probe
     * reaches one loop: right after the start, one loop's may still be on
     * its way (a 503 seen by CI once). Every loop UP, then the check. */
    cr_assert(wait_ready_up(&srv, 6, 10000), "readiness not UP within 10 s of the start");
    assert_ready(&srv, true);

    struct session s;
    new_session(&srv, admin, &s);
    char key[96];
    session_key(s.token, key);
    redisContext *c = redis_open(url);
    cr_assert_eq(redis_int(c, "EXISTS", key), 1, "no key %s in Redis", key);
    long long ttl = redis_int(c, "PTTL", key);
    cr_assert(ttl > 80000 && ttl <= 90000, "PTTL of the session's key: %lld ms, expected about 90 s", ttl);
    redisReply *v = redisCommand(c, "GET %s", key);
    cr_assert(v && v->type == REDIS_REPLY_STRING);
    cr_assert(!strstr(v->str, "hks_") && !strstr(v->str, "hkc_") && !strstr(v->str, "hkd_"),
              "a token in the stored session: %s", v->str);
    freeReplyObject(v);

    cr_assert_eq(status_of(&srv, "GET", "/api/webhooks", NULL, HDRS(bearer(s.token))), 200);
    char cookie[128];
    snprintf(cookie, sizeof cookie, "Cookie: hookd_session=%s", s.token);
    cr_assert_eq(status_of(&srv, "GET", "/api/webhooks", NULL, HDRS(cookie)), 200);

    /* Redis commands smuggled in a credential reach no Redis. */
    char req[512];
    snprintf(req, sizeof req, GET_HEAD "Authorization: Bearer x\r\n*2\r\n$3\r\nDEL\r\n$%zu\r\n%s\r\n\r\n", strlen(key),
             key);
    struct hk_raw raw = {0};
    int st = raw_exchange(&srv, "127.0.6.1", req, 0, &raw);
    cr_assert_eq(st, 400, "%s", raw.buf);
    hk_raw_free(&raw);
    snprintf(req, sizeof req, GET_HEAD "Cookie: hookd_session=%s\r\n*1\r\n$8\r\nFLUSHALL\r\n\r\n", s.token);
    st = raw_exchange(&srv, "127.0.6.2", req, 0, &raw);
    cr_assert_eq(st, 400, "%s", raw.buf);
    hk_raw_free(&raw);
    snprintf(req, sizeof req, GET_HEAD "Authorization: Bearer DEL %s\r\n\r\n", key);
    st = raw_exchange(&srv, "127.0.6.3", req, 0, &raw);
    cr_assert_eq(st, 401, "%s", raw.buf);
    hk_raw_free(&raw);
    cr_assert_eq(redis_int(c, "EXISTS", key), 1, "the session's key went away");

    /* Ended: the key goes, the token fails on the next request. */
    cr_assert_eq(status_of(&srv, "DELETE", "/api/sessions/current", NULL, HDRS(bearer(s.token))), 204);
    cr_assert_eq(redis_int(c, "EXISTS", key), 0, "the session's key is still in Redis");
    expect_denied(&srv, "GET", "/api/webhooks", NULL, HDRS(bearer(s.token)), 401, "unknown|revoked", "invalid_token");
    expect_denied(&srv, "GET", "/api/webhooks", NULL, HDRS(cookie), 401, "unknown|revoked", "invalid_token");

    /* Revoking a token ends the sessions made from it, in Redis too. */
    char ops[TOKEN_LEN + 1];
    create_token(&srv, "ops", "read", NULL, ops);
    struct session s1, s2;
    new_session(&srv, ops, &s1);
    new_session(&srv, ops, &s2);
    cr_assert_eq(status_of(&srv, "GET", "/api/webhooks", NULL, HDRS(bearer(s1.token))), 200);
    cr_assert_eq(redis_int(c, "SCARD", "hookd:subject:ops"), 2, "the subject's index holds both sessions");
    revoke_token(&srv, "ops");
    expect_denied(&srv, "GET", "/api/webhooks", NULL, HDRS(bearer(s1.token)), 401, "unknown", "invalid_token");
    expect_denied(&srv, "GET", "/api/webhooks", NULL, HDRS(bearer(s2.token)), 401, "unknown", "invalid_token");
    cr_assert_eq(redis_int(c, "EXISTS", "hookd:subject:ops"), 0, "the subject's index is still there");
    redisFree(c);
    hk_finish(&srv);
}

/* Requests with a session from several threads, each noting when it
 * started and how it ended. */
#define LOAD_MAX 20000
struct load {
    const struct hk_server *s;
    const char *header;          /* "Authorization: Bearer hks_..." or NULL (then POST a webhook) */
    atomic_bool *stop;
    int n;
    int64_t t[LOAD_MAX];
    int status[LOAD_MAX];
};

static void *load_run(void *arg)
{
    struct load *l = arg;
    CURL *h = hk_curl_new();
    const char *const hs[] = {l->header, NULL};
    const char *const post_hs[] = {"Content-Type: application/json", NULL};
    while (!atomic_load(l->stop) && l->n < LOAD_MAX) {
        struct hk_req q = l->header ? (struct hk_req){.path = "/api/webhooks?limit=5", .headers = hs,
                                                      .timeout_ms = 5000}
                                    : (struct hk_req){.path = "/api/webhooks", .body = "{\"source\":\"s\","
                                                                                       "\"eventType\":\"e\"}",
                                                      .headers = post_hs, .timeout_ms = 5000};
        struct hk_resp r;
        int64_t t = hk_now_ms();
        int rc = hk_request(l->s, h, &q, &r);
        l->t[l->n] = t;
        l->status[l->n] = rc == CURLE_OK ? (int)r.status : -1000 - rc;
        l->n++;
        hk_resp_free(&r);
        hk_sleep_ms(2);
    }
    curl_easy_cleanup(h);
    return NULL;
}

/* Wait until `n` fresh connections in a row find readiness UP (they land on
 * either event loop), within `ms`. */
static bool wait_ready_up(const struct hk_server *s, int n, int ms)
{
    int64_t end = hk_now_ms() + ms;
    int streak = 0;
    while (hk_now_ms() < end) {
        struct hk_resp r;
        struct hk_req q = {.path = "/q/health/ready", .timeout_ms = 2000};
        hk_request(s, NULL, &q, &r);
        streak = r.curl_rc == CURLE_OK && r.status == 200 ? streak + 1 : 0;
        hk_resp_free(&r);
        if (streak >= n)
            return true;
        hk_sleep_ms(50);
    }
    return false;
}

/* `INFO clients`' connected_clients of the Redis on `c`. */
static long long redis_clients(redisContext *c)
{
    redisReply *v = redisCommand(c, "INFO clients");
    cr_assert(v && v->type == REDIS_REPLY_STRING, "INFO clients: no reply");
    const char *p = strstr(v->str, "connected_clients:");
    cr_assert(p, "%s", v->str);
    long long n = strtoll(p + strlen("connected_clients:"), NULL, 10);
    freeReplyObject(v);
    return n;
}

/* Readiness is the pod's, not one loop's. Three loops, and a Redis that
 * takes three clients, one of them this test's: two loops have their client
 * up, the third is refused and keeps retrying. Every probe says not ready,
 * whichever loop answers it (before, the two loops with a client said
 * ready). Once the third gets in, every probe says ready. */
Test(auth, readiness_waits_for_every_loops_redis)
{
    char url[600], env[650];
    own_redis_start(url, sizeof url);
    redisContext *c = redis_open(url);
    redisReply *v = redisCommand(c, "CONFIG SET maxclients 3");
    cr_assert(v && v->type == REDIS_REPLY_STATUS, "CONFIG SET maxclients 3 refused");
    freeReplyObject(v);
    snprintf(env, sizeof env, "HOOKD_REDIS_URL=%s", url);
    start_on(&srv, HDRS(env, "HOOKD_THREADS=3"));
    int64_t end = hk_now_ms() + 5000;
    while (redis_clients(c) < 3 && hk_now_ms() < end)
        hk_sleep_ms(20);
    cr_assert_eq(redis_clients(c), 3, "two of hookd's loops did not connect");
    hk_sleep_ms(100);
    int up = 0;
    for (int i = 0; i < 30; i++) {
        struct hk_resp r;
        struct hk_req q = {.path = "/q/health/ready", .timeout_ms = 2000};
        hk_request(&srv, NULL, &q, &r);
        cr_assert_eq(r.curl_rc, CURLE_OK);
        if (r.status == 200)
            up++;
        else
            cr_assert(r.status == 503 && strstr(r.body, "{\"name\":\"redis\",\"status\":\"DOWN\"}"),
                      "%d %s", r.status, r.body);
        hk_resp_free(&r);
    }
    cr_assert_eq(up, 0, "%d of 30 probes said ready with one loop's Redis client refused", up);

    v = redisCommand(c, "CONFIG SET maxclients 100");
    cr_assert(v && v->type == REDIS_REPLY_STATUS, "CONFIG SET maxclients 100 refused");
    freeReplyObject(v);
    redisFree(c);
    cr_assert(wait_ready_up(&srv, 9, 15000), "not ready within 15 s once every loop could connect");
    assert_ready(&srv, true);
}

Test(auth, redis_going_away_under_load_gives_503_then_recovers)
{
    char url[600], env[650];
    own_redis_start(url, sizeof url);
    snprintf(env, sizeof env, "HOOKD_REDIS_URL=%s", url);
    start_on(&srv, HDRS(env, "HOOKD_REDIS_TIMEOUT=500ms"));
    char admin[TOKEN_LEN + 1];
    admin_token(&srv, admin);
    struct session s;
    new_session(&srv, admin, &s);
    cr_assert_eq(status_of(&srv, "GET", "/api/webhooks", NULL, HDRS(bearer(s.token))), 200);

    enum { NLOAD = 4 };
    static struct load loads[NLOAD];
    static char auth_header[128];
    snprintf(auth_header, sizeof auth_header, "Authorization: Bearer %s", s.token);
    atomic_bool stop = false;
    pthread_t th[NLOAD];
    for (int i = 0; i < NLOAD; i++) {
        loads[i] = (struct load){.s = &srv, .header = i < NLOAD - 1 ? auth_header : NULL, .stop = &stop};
        cr_assert_eq(pthread_create(&th[i], NULL, load_run, &loads[i]), 0);
    }
    hk_sleep_ms(300);
    redis_sh("halt", own_redis, NULL, 0);
    int64_t t_down = hk_now_ms();
    hk_sleep_ms(300);

    /* While it is away: sessions 503 (with Retry-After), API tokens (in the
     * store) and senders fine, not ready, alive. */
    struct hk_resp r;
    call(&srv, &r, "GET", "/api/webhooks", NULL, HDRS(bearer(s.token)));
    assert_denied(&r, 503, "auth_unavailable", NULL);
    char v[64];
    cr_assert(hk_header(&r, "Retry-After", v, sizeof v), "503 without Retry-After:\n%s", r.head);
    hk_resp_free(&r);
    for (int i = 0; i < 6; i++)
        cr_assert_eq(status_of(&srv, "GET", "/api/webhooks", NULL, HDRS(bearer(admin))), 200,
                     "an API token while Redis is down");
    cr_assert_eq(status_of(&srv, "DELETE", "/api/webhooks/999999", NULL, HDRS(bearer(admin))), 404);
    hk_create(&srv, "github", "push", NULL);
    for (int i = 0; i < 4; i++)
        assert_ready(&srv, false);
    cr_assert_eq(status_of(&srv, "GET", "/q/health/live", NULL, NULL), 200);
    long st = status_of(&srv, "POST", "/api/sessions", NULL, HDRS(bearer(admin)));
    cr_assert_eq(st, 503, "a new session while Redis is down: %ld", st);
    hk_sleep_ms(700);
    atomic_store(&stop, true);
    for (int i = 0; i < NLOAD; i++)
        pthread_join(th[i], NULL);

    int n503 = 0, after = 0;
    for (int i = 0; i < NLOAD - 1; i++) {
        for (int k = 0; k < loads[i].n; k++) {
            int code = loads[i].status[k];
            cr_assert(code == 200 || code == 503, "a session request during the outage got %d (thread %d, #%d)",
                      code, i, k);
            if (loads[i].t[k] >= t_down) {
                after++;
                cr_assert_eq(code, 503, "a session request made after Redis went away got %d", code);
            }
            n503 += code == 503;
        }
    }
    cr_assert(after > 10 && n503 >= after, "too few requests during the outage (%d)", after);
    for (int k = 0; k < loads[NLOAD - 1].n; k++)
        cr_assert_eq(loads[NLOAD - 1].status[k], 201, "POST /api/webhooks during the outage got %d",
                     loads[NLOAD - 1].status[k]);

    struct prom p;
    call(&srv, &r, "GET", "/q/metrics", NULL, NULL);
    cr_assert_null(prom_parse(r.body, &p));
    cr_assert(prom_get(&p, "hookd_auth_total", "result=\"unavailable\"") >= n503,
              "hookd_auth_total{result=\"unavailable\"} is %.0f after %d 503s",
              prom_get(&p, "hookd_auth_total", "result=\"unavailable\""), n503);
    prom_free(&p);
    hk_resp_free(&r);

    /* Back, without restarting hookd. redis.sh keeps nothing across a
     * restart, so the old session is gone; a new one works everywhere. */
    redis_sh("resume", own_redis, NULL, 0);
    cr_assert(wait_ready_up(&srv, 6, 10000), "readiness not UP within 10 s of Redis coming back");
    assert_ready(&srv, true);
    struct session s2;
    new_session(&srv, admin, &s2);
    for (int i = 0; i < 6; i++)
        cr_assert_eq(status_of(&srv, "GET", "/api/webhooks", NULL, HDRS(bearer(s2.token))), 200);
    expect_denied(&srv, "GET", "/api/webhooks", NULL, HDRS(bearer(s.token)), 401, "unknown", "invalid_token");
    hk_finish(&srv);
}

Test(auth, a_hung_redis_gives_503_and_the_same_session_works_after)
{
    char url[600], env[650];
    own_redis_start(url, sizeof url);
    snprintf(env, sizeof env, "HOOKD_REDIS_URL=%s", url);
    start_on(&srv, HDRS(env, "HOOKD_REDIS_TIMEOUT=300ms"));
    char admin[TOKEN_LEN + 1];
    admin_token(&srv, admin);
    struct session s;
    new_session(&srv, admin, &s);
    cr_assert_eq(status_of(&srv, "GET", "/api/webhooks", NULL, HDRS(bearer(s.token))), 200);

    char pidfile[300], pidtext[32] = "";
    snprintf(pidfile, sizeof pidfile, "%s/redis.pid", own_redis);
    FILE *f = fopen(pidfile, "r");
    cr_assert(f && fgets(pidtext, sizeof pidtext, f), "no %s", pidfile);
    fclose(f);
    pid_t rpid = (pid_t)atoi(pidtext);
    cr_assert(rpid > 0);
    cr_assert_eq(kill(rpid, SIGSTOP), 0);
    stopped_redis = rpid;
    for (int i = 0; i < 4; i++) {
        int64_t t = hk_now_ms();
        struct hk_resp r;
        call(&srv, &r, "GET", "/api/webhooks", NULL, HDRS(bearer(s.token)));
        assert_denied(&r, 503, "auth_unavailable", NULL);
        cr_assert(hk_now_ms() - t < 2000, "the 503 took %lld ms (HOOKD_REDIS_TIMEOUT=300ms)",
                  (long long)(hk_now_ms() - t));
        hk_resp_free(&r);
        cr_assert_eq(status_of(&srv, "GET", "/api/webhooks", NULL, HDRS(bearer(admin))), 200);
    }
    kill(rpid, SIGCONT);
    stopped_redis = 0;
    int64_t end = hk_now_ms() + 10000;
    int ok = 0;
    while (ok < 8 && hk_now_ms() < end) {
        long code = status_of(&srv, "GET", "/api/webhooks", NULL, HDRS(bearer(s.token)));
        cr_assert(code == 200 || code == 503, "the session after Redis came back: %ld", code);
        ok = code == 200 ? ok + 1 : 0;
        if (code != 200)
            hk_sleep_ms(50);
    }
    cr_assert_eq(ok, 8, "the session does not work again within 10 s of Redis answering");
    cr_assert(wait_ready_up(&srv, 6, 10000), "readiness not UP again");
    hk_finish(&srv);
}

Test(auth, a_wrong_redis_password_stops_the_start_with_one_clear_line)
{
    const char *url = redis_url();
    const char *at = strchr(url, '@');
    const char *colon = at ? memrchr(url, ':', (size_t)(at - url)) : NULL;
    if (!at || !colon || colon < url + 8)
        cr_skip_test("HOOKD_TEST_REDIS_URL has no user:password@ (%s)", "redis://user:password@host:port/db");
    char real_pw[256];
    snprintf(real_pw, sizeof real_pw, "%.*s", (int)(at - colon - 1), colon + 1);
    const char *wrong_pw = "Wr0ng-pa55word-4c1d";
    char bad[700], env[750];
    snprintf(bad, sizeof bad, "%.*s:%s%s", (int)(colon - url), url, wrong_pw, at);
    snprintf(env, sizeof env, "HOOKD_REDIS_URL=%s", bad);
    char *out, *err;
    int st = hk_run(HDRS("HOOKD_AUTH=on", env), NULL, 10000, &out, &err);
    cr_assert(st != -1, "hookd did not exit within 10 s with a wrong Redis password");
    cr_assert(WIFEXITED(st) && WEXITSTATUS(st) != 0, "exit status 0x%x with a wrong Redis password", st);
    cr_assert_null(strstr(out, "started"), "started with a wrong Redis password: %s", out);
    int lines = 0;
    for (const char *p = err; *p;) {
        const char *e = strchr(p, '\n');
        size_t n = e ? (size_t)(e - p) : strlen(p);
        lines += n > 0;
        p += n + (e ? 1 : 0);
    }
    cr_assert_eq(lines, 1, "expected one line on stderr, got %d:\n%s", lines, err);
    cr_assert(strcasestr(err, "redis"), "the line does not say Redis: %s", err);
    cr_assert(strcasestr(err, "WRONGPASS") || strcasestr(err, "password") || strcasestr(err, "auth"),
              "the line does not say what is wrong: %s", err);
    cr_assert_null(strstr(err, wrong_pw), "the password is in the output: %s", err);
    cr_assert_null(strstr(err, real_pw), "the real password is in the output: %s", err);
    cr_assert_null(strstr(out, wrong_pw), "the password is on stdout: %s", out);
    cr_assert_eq(tokens_in(err, "hkd_", NULL), 0, "an admin token although the start failed: %s", err);
    free(out);
    free(err);
}
