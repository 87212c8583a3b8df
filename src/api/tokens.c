/* SPDX-License-Identifier: MIT
 * API tokens outside the request path: `hookd token create|list|revoke` on
 * the configured store (a server may be running on it), the tokens file and
 * Redis read at start, and the secure default: the first start with nothing
 * configured makes an admin token and shows it once. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api/api_int.h"
#include "auth/token.h"
#include "auth/tokens_file.h"
#include "core/clock.h"
#include "core/log.h"
#include "redis/redis.h"

#define FILE_TOKENS_MAX 1024

/* One store op to completion on a loop of its own: the CLI and start-up
 * have no server loop to run it on. Rows go to `on_token` (may be NULL). */
struct sync_op {
    struct hk_store_op op;
    bool done;
    void (*on_token)(const struct hk_token_rec *t, void *arg);
    void *arg;
};

static void sync_done(struct hk_store_op *op)
{
    struct sync_op *s = op->data;
    s->done = !op->more;
}

static void sync_token(struct hk_store_op *op, const struct hk_token_rec *t)
{
    struct sync_op *s = op->data;
    if (s->on_token)
        s->on_token(t, s->arg);
}

static int run_op(struct hk_store *store, struct sync_op *s)
{
    uv_loop_t loop;
    struct hk_store_loop *sl;
    int rc = uv_loop_init(&loop);
    if (rc < 0)
        return rc;
    rc = store->vt->loop_attach(store, &loop, &sl);
    if (rc < 0) {
        uv_loop_close(&loop);
        return rc;
    }
    s->op.data = s;
    s->op.on_done = sync_done;
    s->op.on_token = sync_token;
    rc = hk_store_submit(sl, &s->op);
    while (rc == 0 && !s->done)
        uv_run(&loop, UV_RUN_ONCE);
    store->vt->loop_detach(sl);
    uv_run(&loop, UV_RUN_DEFAULT);
    uv_loop_close(&loop);
    return rc < 0 ? rc : s->op.status;
}

static void count_one(const struct hk_token_rec *t, void *arg)
{
    (void)t;
    ++*(size_t *)arg;
}

static int token_count(struct hk_store *store, size_t *n)
{
    struct sync_op s = {.on_token = count_one, .arg = n};
    *n = 0;
    s.op.kind = HK_OP_TOKEN_LIST;
    s.op.list.limit = 1;   /* whether any exists is all start-up asks */
    return run_op(store, &s);
}

/* A new token named `name` with `scopes`; its text goes to `out`. */
static int token_create(struct hk_store *store, const char *name, unsigned scopes, int64_t expires_us,
                        char out[HK_TOKEN_LEN + 1])
{
    struct hk_token_rec rec = {.scopes = scopes, .expires_us = expires_us, .created_us = hk_wall_us()};
    snprintf(rec.name, sizeof rec.name, "%s", name);
    if (hk_token_new(HK_TOKEN_API, out) < 0)
        return HK_EUNAVAIL;
    hk_token_hash(out, HK_TOKEN_LEN, rec.hash);
    struct sync_op s = {0};
    s.op.kind = HK_OP_TOKEN_PUT;
    s.op.token = &rec;
    return run_op(store, &s);
}

/* ---- start-up ---- */

static int read_tokens_file(struct hk_api *a, const char *path, char *err, size_t errlen)
{
    FILE *f = fopen(path, "r");
    if (!f) {
        snprintf(err, errlen, "invalid HOOKD_API_TOKENS_FILE=\"%s\": %s", path, strerror(errno));
        return -1;
    }
    static char text[256 * 1024];
    size_t n = fread(text, 1, sizeof text, f);
    bool full = n == sizeof text;
    fclose(f);
    if (full) {
        snprintf(err, errlen, "invalid HOOKD_API_TOKENS_FILE=\"%s\": longer than %zu bytes", path, sizeof text - 1);
        return -1;
    }
    a->file_tokens = calloc(FILE_TOKENS_MAX, sizeof *a->file_tokens);
    if (!a->file_tokens)
        abort();
    char why[160];
    int rc = hk_tokens_file_parse(text, n, a->file_tokens, FILE_TOKENS_MAX, &a->nfile_tokens, why, sizeof why);
    explicit_bzero(text, n);
    if (rc < 0) {
        snprintf(err, errlen, "invalid HOOKD_API_TOKENS_FILE=\"%s\": %s", path, why);
        return -1;
    }
    return 0;
}

/* No credential anywhere and access control on: make an admin token and
 * show it once, as Jupyter and Grafana do on a first run. Only its hash
 * is kept. */
static int first_start(struct hk_api *a, char *err, size_t errlen)
{
    size_t n = 0;
    int rc = token_count(a->store, &n);
    if (rc < 0) {
        snprintf(err, errlen, "cannot read the API tokens from the store (code %d)", rc);
        return -1;
    }
    if (n > 0)
        return 0;
    char tok[HK_TOKEN_LEN + 1];
    rc = token_create(a->store, "admin", HK_SCOPE_ALL, 0, tok);
    if (rc == HK_ECONFLICT)
        return 0;   /* another instance made it meanwhile */
    if (rc < 0) {
        snprintf(err, errlen, "cannot store the first admin token (code %d)", rc);
        return -1;
    }
    fprintf(stderr,
            "\nhookd: access control is on and no API token existed, so one was made.\n"
            "       It is shown this once; only its hash is stored. Keep it like a password:\n\n"
            "       %s\n\n"
            "       curl -H 'Authorization: Bearer %s' http://localhost:%d/api/webhooks\n"
            "       More tokens: hookd token create --name NAME --scope read|delete|admin\n\n",
            tok, tok, a->cfg->port ? a->cfg->port : 8080);
    explicit_bzero(tok, sizeof tok);
    hk_info("audit", "\"action\":\"token.create\",\"subject\":\"admin\",\"by\":\"first start\"");
    return 0;
}

int hk_api_prepare(struct hk_api *a, char *err, size_t errlen)
{
    const struct hk_config *cfg = a->cfg;
    if (cfg->redis_url) {
        a->redis = calloc(1, sizeof *a->redis);
        if (!a->redis)
            abort();
        if (hk_redis_parse_url(cfg->redis_url, a->redis, err, errlen) < 0)
            return -1;
        a->redis->timeout_ms = cfg->redis_timeout_ms;
        if (hk_redis_check(a->redis, err, errlen) < 0)
            return -1;
    }
    if (!cfg->auth_on)
        return 0;   /* main warns once the server has started */
    if (cfg->api_tokens_file && read_tokens_file(a, cfg->api_tokens_file, err, errlen) < 0)
        return -1;
    if (a->nfile_tokens > 0)
        return 0;
    return first_start(a, err, errlen);
}

/* ---- hookd token ... ---- */

static int usage(FILE *f, int rc)
{
    fprintf(f, "Usage:\n"
               "  hookd token create --name NAME --scope read|delete|admin[,...] [--expires 30d]\n"
               "  hookd token list\n"
               "  hookd token revoke NAME\n"
               "On the store hookd is configured with (DATABASE_URL, HOOKD_SQLITE_PATH), also while a\n"
               "server runs on it. create prints the token on stdout, once; only its hash is kept.\n");
    return rc;
}

static void print_one(const struct hk_token_rec *t, void *arg)
{
    (void)arg;
    char scopes[HK_SCOPES_TEXT_MAX];
    hk_scopes_format(t->scopes, scopes, sizeof scopes);
    struct hk_buf b = HK_BUF_INIT;
    hk_buf_printf(&b, "%-24s %-18s created ", t->name, scopes);
    hk_buf_put_iso_us(&b, t->created_us);
    if (t->expires_us) {
        hk_buf_puts(&b, "  expires ");
        hk_buf_put_iso_us(&b, t->expires_us);
    }
    if (t->revoked_us) {
        hk_buf_puts(&b, "  revoked ");
        hk_buf_put_iso_us(&b, t->revoked_us);
    }
    hk_buf_putc(&b, '\0');
    printf("%s\n", b.p);
    hk_buf_free(&b);
}

/* The flags of `create`: --name, --scope, --expires (also as --x=v). */
static int create_args(int argc, char **argv, const char **name, const char **scope, const char **expires)
{
    for (int i = 0; i < argc; i++) {
        const char *f = argv[i], *v = NULL;
        const char *eq = strchr(f, '=');
        size_t fl = eq ? (size_t)(eq - f) : strlen(f);
        if (eq)
            v = eq + 1;
        else if (i + 1 < argc)
            v = argv[++i];
        if (!v)
            return -1;
        if (fl == 6 && strncmp(f, "--name", 6) == 0)
            *name = v;
        else if (fl == 7 && strncmp(f, "--scope", 7) == 0)
            *scope = v;
        else if (fl == 9 && strncmp(f, "--expires", 9) == 0)
            *expires = v;
        else
            return -1;
    }
    return *name && *scope ? 0 : -1;
}

static int cmd_create(struct hk_store *store, int argc, char **argv)
{
    const char *name = NULL, *scope = NULL, *expires = NULL;
    unsigned scopes;
    int64_t dur = 0;
    if (create_args(argc, argv, &name, &scope, &expires) < 0)
        return usage(stderr, 2);
    if (!hk_token_name_ok(name, strlen(name))) {
        fprintf(stderr, "hookd token: --name must be 1 to %d of A-Z a-z 0-9 . _ -\n", HK_TOKEN_NAME_MAX);
        return 2;
    }
    if (hk_scopes_parse(scope, strlen(scope), &scopes) < 0) {
        fprintf(stderr, "hookd token: --scope must be read, delete or admin (comma-separated)\n");
        return 2;
    }
    if (expires && hk_duration_parse(expires, strlen(expires), &dur) < 0) {
        fprintf(stderr, "hookd token: --expires must be a duration such as 30d, 12h or 90m\n");
        return 2;
    }
    char tok[HK_TOKEN_LEN + 1];
    int rc = token_create(store, name, scopes, dur ? hk_wall_us() + dur : 0, tok);
    if (rc == HK_ECONFLICT) {
        fprintf(stderr, "hookd token: a token named \"%s\" exists (revoke it, or pick another name)\n", name);
        return 1;
    }
    if (rc < 0) {
        fprintf(stderr, "hookd token: the store failed (code %d)\n", rc);
        return 1;
    }
    printf("%s\n", tok);
    explicit_bzero(tok, sizeof tok);
    hk_info("audit", "\"action\":\"token.create\",\"subject\":\"%s\",\"scopes\":\"%s\"", name, scope);
    return 0;
}

/* Sessions made from the token end with it: the store drops them in the
 * revoke's transaction; in Redis they are found through the subject's
 * index set. */
static int drop_redis_sessions(const struct hk_config *cfg, const char *name)
{
    char err[256];
    struct hk_redis_cfg rc;
    memset(&rc, 0, sizeof rc);
    if (hk_redis_parse_url(cfg->redis_url, &rc, err, sizeof err) < 0) {
        fprintf(stderr, "hookd token: %s\n", err);
        return -1;
    }
    rc.timeout_ms = cfg->redis_timeout_ms;
    char set[HK_TOKEN_NAME_MAX + 32];
    snprintf(set, sizeof set, "hookd:subject:%s", name);
    int n = hk_redis_drop_subject(&rc, set, err, sizeof err);
    hk_redis_cfg_free(&rc);
    if (n < 0) {
        fprintf(stderr, "hookd token: the token is revoked, but its sessions in Redis could not be ended: %s\n",
                err);
        return -1;
    }
    return n;
}

static int cmd_revoke(const struct hk_config *cfg, struct hk_store *store, const char *name)
{
    struct sync_op s = {0};
    s.op.kind = HK_OP_TOKEN_REVOKE;
    s.op.name = name;
    int rc = run_op(store, &s);
    if (rc == HK_ENOTFOUND) {
        fprintf(stderr, "hookd token: no token named \"%s\"\n", name);
        return 1;
    }
    if (rc < 0) {
        fprintf(stderr, "hookd token: the store failed (code %d)\n", rc);
        return 1;
    }
    int ended = cfg->redis_url ? drop_redis_sessions(cfg, name) : 0;
    hk_info("audit", "\"action\":\"token.revoke\",\"subject\":\"%s\",\"redisSessionsEnded\":%d", name,
            ended);
    return ended < 0 ? 1 : 0;
}

int hk_api_token_cli(const struct hk_config *cfg, struct hk_store *store, int argc, char **argv)
{
    if (argc < 1 || strcmp(argv[0], "--help") == 0 || strcmp(argv[0], "-h") == 0)
        return usage(argc < 1 ? stderr : stdout, argc < 1 ? 2 : 0);
    if (strcmp(argv[0], "create") == 0)
        return cmd_create(store, argc - 1, argv + 1);
    if (strcmp(argv[0], "list") == 0 && argc == 1) {
        struct sync_op s = {.on_token = print_one};
        s.op.kind = HK_OP_TOKEN_LIST;
        int rc = run_op(store, &s);
        if (rc < 0) {
            fprintf(stderr, "hookd token: the store failed (code %d)\n", rc);
            return 1;
        }
        return 0;
    }
    if (strcmp(argv[0], "revoke") == 0 && argc == 2)
        return cmd_revoke(cfg, store, argv[1]);
    return usage(stderr, 2);
}
