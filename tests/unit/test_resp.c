/* SPDX-License-Identifier: MIT
 * Store errors as HTTP answers (http/resp.c), through the real request path
 * in memory, against a fake store whose ops end with whatever code a test
 * sets: status, Retry-After, the problem's stable "reason", no internal code
 * in any body, and a log line only for a 500. */
#include <criterion/criterion.h>
#include <fcntl.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "api/api.h"
#include "core/config.h"
#include "http/memio.h"
#include "store/store.h"
#include "http/resp.h"

/* ---- a store that answers every op with `op_status` ---- */

static int op_status;      /* what on_done sees */
static int submit_rc;      /* nonzero: submit refuses with it */
static struct hk_store_loop fake_loop;

static int fake_attach(struct hk_store *s, uv_loop_t *loop, struct hk_store_loop **out)
{
    (void)loop;
    fake_loop.store = s;
    *out = &fake_loop;
    return 0;
}

static void fake_detach(struct hk_store_loop *sl)
{
    (void)sl;
}

static int fake_submit(struct hk_store_loop *sl, struct hk_store_op *op)
{
    (void)sl;
    if (submit_rc != 0)
        return submit_rc;
    op->status = op_status;
    op->more = false;
    op->replayed = false;
    op->on_done(op);
    return 0;
}

static void fake_list_end(struct hk_store_loop *sl, struct hk_store_op *op)
{
    (void)sl;
    (void)op;
    cr_assert_fail("no stream is ever left open");
}

static int fake_health(struct hk_store_loop *sl)
{
    (void)sl;
    return 0;
}

static void fake_close(struct hk_store *s)
{
    (void)s;
}

static const struct hk_store_vt fake_vt = {
    .name = "fake",
    .loop_attach = fake_attach,
    .loop_detach = fake_detach,
    .submit = fake_submit,
    .list_next = fake_list_end,
    .list_close = fake_list_end,
    .health = fake_health,
    .close = fake_close,
};
static struct hk_store fake_store = {.vt = &fake_vt};

/* ---- fixture ---- */

static struct hk_config cfg;
static struct hk_worker w;
static struct hk_api *api;
static struct hk_memio m;
static char log_path[64];
static int saved_stderr = -1;

/* stderr (the log) goes to a file for the length of a test. */
static void setup(void)
{
    char err[256];
    char *argv[] = {"hookd", NULL};
    unsetenv("HOOKD_WEBHOOK_SECRET");
    unsetenv("HOOKD_LOG_LEVEL");
    cr_assert_eq(hk_config_load(&cfg, 1, argv, err, sizeof err), HK_CONFIG_RUN);
    cfg.auth_on = false;   /* the API as the reference's clients use it */
    op_status = 0;
    submit_rc = 0;
    hk_api_init();
    memset(&w, 0, sizeof w);
    api = hk_api_new(&cfg, &fake_store, 0);
    cr_assert_eq(hk_worker_init(&w, &cfg, hk_api_app(api)), 0);
    hk_memio_init(&m, &w);
    snprintf(log_path, sizeof log_path, "/tmp/hookd-resp-XXXXXX");
    int fd = mkstemp(log_path);
    cr_assert_geq(fd, 0);
    saved_stderr = dup(2);
    cr_assert_eq(dup2(fd, 2), 2);
    close(fd);
}

static void teardown(void)
{
    if (saved_stderr >= 0) {
        dup2(saved_stderr, 2);
        close(saved_stderr);
        saved_stderr = -1;
    }
    unlink(log_path);
    hk_memio_free(&m);
    hk_worker_fini(&w);
    hk_api_free(api);
    api = NULL;
    hk_config_free(&cfg);
}

TestSuite(resp, .init = setup, .fini = teardown);

/* Lines logged so far that contain `needle` ("" counts every line). */
static int log_lines(const char *needle)
{
    FILE *f = fopen(log_path, "r");
    cr_assert_not_null(f);
    char line[2048];
    int n = 0;
    while (fgets(line, sizeof line, f))
        n += strstr(line, needle) != NULL;
    fclose(f);
    return n;
}

struct answer {
    int status;
    char status_line[128];
    char retry_after[32];       /* "" when absent */
    int retry_after_count;
    char ctype[64];
    json_t *body;               /* parsed problem, NULL when not JSON */
    char raw_body[2048];
};

static void header_value(const char *head, const char *name, char *out, size_t n, int *count)
{
    size_t len = strlen(name);
    out[0] = '\0';
    *count = 0;
    for (const char *p = strstr(head, "\r\n"); p && p[2] != '\r'; p = strstr(p + 2, "\r\n")) {
        if (strncasecmp(p + 2, name, len) == 0 && p[2 + len] == ':') {
            const char *v = p + 3 + len;
            while (*v == ' ')
                v++;
            size_t vl = strcspn(v, "\r");
            snprintf(out, n, "%.*s", (int)vl, v);
            (*count)++;
        }
    }
}

/* Send one request, settle, and take the one response apart. */
static void ask(const char *req, struct answer *a)
{
    memset(a, 0, sizeof *a);
    m.sent.len = 0;
    hk_memio_feed(&m, req, strlen(req));
    hk_memio_settle(&m);
    hk_buf_putc(&m.sent, 0);
    const char *s = m.sent.p;
    const char *end = strstr(s, "\r\n\r\n");
    cr_assert_not_null(end, "no complete response: %s", s);
    cr_assert_eq(sscanf(s, "HTTP/1.1 %d", &a->status), 1, "%s", s);
    snprintf(a->status_line, sizeof a->status_line, "%.*s", (int)strcspn(s, "\r"), s);
    char head[4096];
    snprintf(head, sizeof head, "%.*s", (int)(end - s + 2), s);
    int k;
    header_value(head, "Retry-After", a->retry_after, sizeof a->retry_after, &a->retry_after_count);
    header_value(head, "Content-Type", a->ctype, sizeof a->ctype, &k);
    snprintf(a->raw_body, sizeof a->raw_body, "%s", end + 4);
    a->body = json_loads(a->raw_body, 0, NULL);
    m.sent.len = 0;
}

static const char *jstr(json_t *o, const char *key)
{
    json_t *v = json_object_get(o, key);
    return json_is_string(v) ? json_string_value(v) : NULL;
}

struct mapping {
    int err;
    int status;
    const char *reason;         /* NULL: no "reason" member */
    const char *retry_after;    /* NULL: no Retry-After */
};

static const struct mapping mappings[] = {
    {HK_EFULL, 507, "disk_full", "30"},
    {HK_ELOCKED, 503, "database_locked", "1"},
    {HK_EIO, 503, "io_error", "5"},
    {HK_EUNAVAIL, 503, "store_unavailable", "1"},
    {HK_EBUSY, 503, "queue_full", "1"},
    {HK_ETIMEDOUT, 503, "store_timeout", "1"},
    {HK_ESTORE, 500, "internal_error", NULL},
    {HK_EINVAL, 400, NULL, NULL},
    {-4242, 500, "internal_error", NULL},
    {HK_ENOTFOUND, 404, NULL, NULL},
    {HK_ECONFLICT, 409, NULL, NULL},
};

static void check(const struct answer *a, const struct mapping *mp, const char *what)
{
    char code[16];
    snprintf(code, sizeof code, "%d", mp->err);
    cr_assert_eq(a->status, mp->status, "%s, code %d: %s", what, mp->err, a->status_line);
    cr_assert_str_eq(a->ctype, HK_CT_PROBLEM, "%s, code %d", what, mp->err);
    cr_assert_not_null(a->body, "%s, code %d: body is not JSON: %s", what, mp->err, a->raw_body);
    cr_assert_eq(json_integer_value(json_object_get(a->body, "status")), mp->status);
    cr_assert_not_null(jstr(a->body, "detail"));
    cr_assert_str_eq(jstr(a->body, "title"), hk_status_reason(mp->status));
    if (mp->reason)
        cr_assert_str_eq(jstr(a->body, "reason") ? jstr(a->body, "reason") : "(none)", mp->reason,
                         "%s, code %d: %s", what, mp->err, a->raw_body);
    else
        cr_assert_null(json_object_get(a->body, "reason"), "%s: %s", what, a->raw_body);
    if (mp->retry_after) {
        cr_assert_eq(a->retry_after_count, 1, "%s, code %d: one Retry-After", what, mp->err);
        cr_assert_str_eq(a->retry_after, mp->retry_after, "%s, code %d", what, mp->err);
    } else {
        cr_assert_eq(a->retry_after_count, 0, "%s, code %d: no Retry-After", what, mp->err);
    }
    /* The instance (request id) aside, nothing in the body shows a code. */
    json_t *rest = json_deep_copy(a->body);
    json_object_del(rest, "instance");
    char *text = json_dumps(rest, 0);
    cr_assert_null(strstr(text, code), "%s: the body shows the internal code: %s", what, text);
    cr_assert_null(strstr(text, "-100"), "%s: %s", what, text);
    cr_assert_null(strstr(text, "code"), "%s: %s", what, text);
    free(text);
    json_decref(rest);
    /* Still one status line of the right reason phrase. */
    char want[128];
    snprintf(want, sizeof want, "HTTP/1.1 %d %s", mp->status, hk_status_reason(mp->status));
    cr_assert_str_eq(a->status_line, want);
}

#define POST_BODY "{\"source\":\"gh\",\"eventType\":\"push\"}"

Test(resp, every_store_error_maps_once_for_every_operation)
{
    static const char *const reqs[] = {
        "GET /api/webhooks/1 HTTP/1.1\r\nHost: x\r\n\r\n",
        "DELETE /api/webhooks/1 HTTP/1.1\r\nHost: x\r\n\r\n",
        "GET /api/webhooks HTTP/1.1\r\nHost: x\r\n\r\n",
    };
    char post[256];
    snprintf(post, sizeof post,
             "POST /api/webhooks HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
             "Content-Length: %zu\r\n\r\n%s", strlen(POST_BODY), POST_BODY);
    int n500 = 0;
    for (size_t i = 0; i < sizeof mappings / sizeof mappings[0]; i++) {
        const struct mapping *mp = &mappings[i];
        struct answer a;
        op_status = mp->err;
        for (size_t j = 0; j < 3; j++) {
            if (mp->err == HK_ECONFLICT)
                continue;   /* only a create can conflict */
            if (mp->err == HK_ENOTFOUND && j == 2)
                continue;   /* a list finds nothing without an error */
            ask(reqs[j], &a);
            check(&a, mp, reqs[j]);
            json_decref(a.body);
            n500 += mp->status == 500;
        }
        if (mp->err == HK_ENOTFOUND)
            continue;       /* a create that is not found is not a thing */
        ask(post, &a);
        check(&a, mp, "POST");
        json_decref(a.body);
        n500 += mp->status == 500;
    }
    /* One warn line per 500 (a bug is worth a line), with the code for
     * whoever reads the log; none for the environmental answers. */
    cr_assert_eq(log_lines("\"level\":\"warn\""), n500);
    cr_assert_eq(log_lines("\"code\":-10007"), 4);
    cr_assert_eq(log_lines("\"code\":-4242"), 4);
    cr_assert_eq(log_lines("\"reason\":\"internal_error\""), n500);
}

/* A store that refuses at submit (full queue, no writer) maps the same. */
Test(resp, refused_submit_maps_the_same)
{
    char post[256];
    snprintf(post, sizeof post,
             "POST /api/webhooks HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
             "Content-Length: %zu\r\n\r\n%s", strlen(POST_BODY), POST_BODY);
    for (size_t i = 0; i < 6; i++) {
        struct answer a;
        submit_rc = mappings[i].err;
        ask(post, &a);
        check(&a, &mappings[i], "refused POST");
        json_decref(a.body);
    }
    cr_assert_eq(log_lines(""), 0, "environmental failures are not logged per request");
}

Test(resp, reason_phrases)
{
    cr_assert_str_eq(hk_status_reason(505), "HTTP Version Not Supported");
    cr_assert_str_eq(hk_status_reason(507), "Insufficient Storage");
    cr_assert_str_eq(hk_status_reason(503), "Service Unavailable");
}
