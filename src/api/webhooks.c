/* SPDX-License-Identifier: MIT
 * /api/webhooks: create (validated, optionally signed and idempotent), list
 * (paged or streamed), get and delete. Each handler fills its request's
 * store op and answers from the op's callbacks. */
#include <strings.h>
#include <string.h>

#include "api/api_int.h"
#include "api/forward.h"
#include "api/stream.h"
#include "core/ascii.h"
#include "core/hmac.h"
#include "core/log.h"
#include "core/mediatype.h"
#include "core/utf8.h"
#include "http/query.h"
#include "ingress/provider.h"

#define LIST_DEFAULT 100
#define LIST_MAX 1000
#define STREAM_BATCH 100
/* A streamed batch aims at this many bytes: with large payloads the next
 * batch has fewer rows, so a stream holds about this much at a time. */
#define STREAM_BATCH_BYTES (256 * 1024)
#define IDEM_KEY_MAX 255

static struct hk_store_loop *sl_of(struct hk_req *r)
{
    return api_loop(r)->sl;
}

static void submit(struct hk_req *r)
{
    struct hk_store_op *op = &api_req(r)->op;
    hk_api_store_begin(r);
    int rc = hk_store_submit(sl_of(r), op);
    if (rc < 0) {
        if (op->kind == HK_OP_INSERT)
            hk_forward_insert_end(api_loop(r), op);
        hk_api_store_end(r, (int)op->kind, rc);
        if (op->kind == HK_OP_INSERT)
            hk_obs_rejected(api_loop(r)->obs, HK_REJ_STORE_UNAVAILABLE);
        hk_resp_store_error(r, rc);
    }
}

/* --- create --- */

/* GitHub's scheme: X-Hub-Signature-256: sha256=<hex HMAC-SHA256(secret, body)>. */
static int signature_ok(struct hk_req *r)
{
    const struct hk_config *cfg = api_cfg(r);
    if (!r->signature || r->signature_len != 7 + 64 || strncasecmp(r->signature, "sha256=", 7) != 0)
        return 0;
    unsigned char mac[32];
    if (hk_hmac_sha256(cfg->webhook_secret, cfg->webhook_secret_len, r->body->p ? r->body->p : "", r->body->len,
                       mac) < 0)
        return 0;
    unsigned char given[32];
    if (hk_hex_decode(r->signature + 7, given, sizeof given) < 0)
        return 0;
    return hk_hmac_equal(given, mac, 32) == 0;
}

static void create_row(struct hk_store_op *op, const struct hk_webhook *row)
{
    struct hk_req *r = op->data;
    if (!op->replayed) {
        hk_forward_inserted(api_loop(r), op, row);
        hk_stream_committed(api_loop(r), row->id);
    }
    hk_webhook_encode(hk_resp_body(r), row);
    char loc[48];
    int n = snprintf(loc, sizeof loc, "/api/webhooks/%lld", (long long)row->id);
    hk_resp_header(r, "Location", loc, (size_t)n);
}

static void create_done(struct hk_store_op *op)
{
    struct hk_req *r = op->data;
    struct hk_obs *obs = api_loop(r)->obs;
    hk_api_store_end(r, HK_OP_INSERT, op->status);
    hk_forward_insert_end(api_loop(r), op);
    if (op->status < 0) {
        r->s->rhdr.len = 0;
        hk_obs_rejected(obs, op->status == HK_ECONFLICT ? HK_REJ_IDEMPOTENCY_CONFLICT : HK_REJ_STORE_UNAVAILABLE);
        hk_resp_store_error(r, op->status);
        return;
    }
    if (!op->replayed)
        hk_obs_received(obs, op->row.source, op->row.source_len);
    if (op->replayed)
        hk_resp_header(r, "Idempotent-Replayed", "true", 4);
    hk_resp_send(r, op->replayed ? 200 : 201, HK_CT_JSON);
}

static void violations(struct hk_req *r, const struct hk_webhook_in *in)
{
    struct hk_buf *b = hk_resp_body(r);
    b->len = 0;
    hk_buf_puts(b, "{\"type\":\"about:blank\",\"title\":\"Constraint Violation\",\"status\":400,"
                   "\"detail\":\"the request body violates the WebhookRequest constraints\",\"violations\":[");
    for (int i = 0; i < in->nv; i++) {
        hk_buf_puts(b, i ? ",{\"field\":" : "{\"field\":");
        hk_buf_put_json_str(b, in->v[i].field, strlen(in->v[i].field));
        hk_buf_puts(b, ",\"message\":");
        hk_buf_put_json_str(b, in->v[i].message, strlen(in->v[i].message));
        hk_buf_putc(b, '}');
    }
    hk_buf_putc(b, ']');
    hk_resp_put_instance(r, b);
    hk_buf_putc(b, '}');
    hk_obs_rejected(api_loop(r)->obs, HK_REJ_VALIDATION);
    hk_resp_send(r, 400, HK_CT_PROBLEM);
}

static int idem_key_ok(const char *k, size_t n)
{
    return n > 0 && n <= IDEM_KEY_MAX && hk_ascii_printable(k, n, 0x20);
}

void hk_api_webhook_create(struct hk_req *r)
{
    const struct hk_config *cfg = api_cfg(r);
    struct hk_api_req *q = api_req(r);
    if (!hk_media_is_json(r->content_type, r->content_type_len)) {
        hk_api_refuse(r, HK_REJ_UNSUPPORTED_MEDIA_TYPE, 415, "Content-Type must be application/json");
        return;
    }
    if (cfg->webhook_secret && !signature_ok(r)) {
        hk_resp_header(r, "WWW-Authenticate", "HMAC-SHA256 header=\"X-Hub-Signature-256\"", 40);
        hk_api_refuse(r, HK_REJ_UNAUTHORIZED, 401,
                      "missing or invalid X-Hub-Signature-256 (sha256=<hex HMAC of the body>)");
        return;
    }
    if (r->idem_key && !idem_key_ok(r->idem_key, r->idem_key_len)) {
        hk_api_refuse(r, HK_REJ_INVALID_IDEMPOTENCY_KEY, 400,
                      "Idempotency-Key must be 1 to %d printable ASCII characters", IDEM_KEY_MAX);
        return;
    }
    q->win_used = true;
    enum hk_decode_result dr = hk_webhook_decode(r->body->p ? r->body->p : "", r->body->len, &q->win);
    if (dr == HK_DECODE_SYNTAX) {
        hk_api_refuse(r, HK_REJ_INVALID_JSON, 400, "invalid JSON at line %d, column %d (position %zu): %s",
                      q->win.err_line, q->win.err_column, q->win.err_position, q->win.err_text);
        return;
    }
    if (dr == HK_DECODE_INVALID) {
        violations(r, &q->win);
        return;
    }
    struct hk_store_op *op = &q->op;
    memset(op, 0, sizeof *op);
    op->kind = HK_OP_INSERT;
    op->row = q->win.row;
    op->idem_key = r->idem_key;
    op->on_row = create_row;
    op->on_done = create_done;
    op->data = r;
    hk_forward_prepare_insert(api_loop(r), op);
    submit(r);
}

/* --- get / delete --- */

/* Strict: 1..19 digits, no sign, no leading junk, fits int64, > 0. */
int hk_api_parse_id(const char *p, size_t n, int64_t *out)
{
    if (n == 0 || n > 19)
        return -1;
    uint64_t v = 0;
    for (size_t i = 0; i < n; i++) {
        if (p[i] < '0' || p[i] > '9')
            return -1;
        v = v * 10 + (uint64_t)(p[i] - '0');
    }
    if (v == 0 || v > INT64_MAX)
        return -1;
    *out = (int64_t)v;
    return 0;
}

static void get_row(struct hk_store_op *op, const struct hk_webhook *row)
{
    hk_webhook_encode(hk_resp_body(op->data), row);
}

static void get_done(struct hk_store_op *op)
{
    struct hk_req *r = op->data;
    hk_api_store_end(r, HK_OP_GET, op->status);
    if (op->status < 0)
        hk_resp_store_error(r, op->status);
    else
        hk_resp_send(r, 200, HK_CT_JSON);
}

static void delete_done(struct hk_store_op *op)
{
    struct hk_req *r = op->data;
    hk_api_store_end(r, HK_OP_DELETE, op->status);
    if (op->status < 0) {
        hk_resp_store_error(r, op->status);
        return;
    }
    struct hk_api_req *q = api_req(r);
    hk_log_req(HK_LOG_INFO, r->req_id, "audit", "\"action\":\"webhook.delete\",\"id\":%lld,\"subject\":\"%s\"",
               (long long)op->id, q->auth.subject[0] ? q->auth.subject : "anonymous (HOOKD_AUTH=off)");
    hk_resp_send(r, 204, NULL);
}

static void by_id(struct hk_req *r, enum hk_op_kind kind)
{
    struct hk_api_req *q = api_req(r);
    struct hk_store_op *op = &q->op;
    memset(op, 0, sizeof *op);
    if (hk_api_parse_id(q->param, q->param_len, &op->id) < 0) {
        hk_resp_problem(r, 404, NULL, "webhook not found (ids are positive integers)");
        return;
    }
    op->kind = kind;
    op->on_row = kind == HK_OP_GET ? get_row : NULL;
    op->on_done = kind == HK_OP_GET ? get_done : delete_done;
    op->data = r;
    submit(r);
}

void hk_api_webhook_get(struct hk_req *r)
{
    by_id(r, HK_OP_GET);
}

void hk_api_webhook_delete(struct hk_req *r)
{
    by_id(r, HK_OP_DELETE);
}

/* --- list --- */

static void list_row(struct hk_store_op *op, const struct hk_webhook *row)
{
    struct hk_req *r = op->data;
    struct hk_api_req *q = api_req(r);
    struct hk_buf *b = hk_resp_body(r);
    if (!q->first_row)
        hk_buf_putc(b, ',');
    q->first_row = false;
    hk_webhook_encode(b, row);
}

static void stream_next(struct hk_req *r)
{
    hk_api_store_begin(r);
    hk_store_list_next(sl_of(r), &api_req(r)->op);
}

static void stream_abort(struct hk_req *r)
{
    hk_store_list_close(sl_of(r), &api_req(r)->op);
    hk_resp_end_stream(r);
}

static void list_done(struct hk_store_op *op)
{
    struct hk_req *r = op->data;
    hk_api_store_end(r, HK_OP_LIST, op->status);
    if (op->status < 0) {
        if (op->more)
            hk_store_list_close(sl_of(r), op);
        if (r->streaming) {
            hk_resp_abort_stream(r);
            return;
        }
        hk_resp_body(r)->len = 0;
        hk_resp_store_error(r, op->status);
        return;
    }
    if (!op->list.stream) {
        hk_buf_putc(hk_resp_body(r), ']');
        hk_resp_send(r, 200, HK_CT_JSON);
        return;
    }
    if (!r->streaming)
        hk_resp_begin_stream(r, 200, HK_CT_JSON);
    if (!op->more) {
        hk_buf_putc(hk_resp_body(r), ']');
        hk_resp_end_stream(r);
        return;
    }
    /* A batch with `more` had exactly list.limit rows. */
    size_t per_row = hk_resp_body(r)->len / (op->list.limit ? op->list.limit : 1);
    size_t next = STREAM_BATCH_BYTES / (per_row ? per_row : 1);
    op->list.limit = (uint32_t)(next < 1 ? 1 : next > STREAM_BATCH ? STREAM_BATCH : next);
    hk_resp_chunk(r);
    hk_resp_wait_drain(r, stream_next, stream_abort);
}

int hk_api_query_text(struct hk_req *r, const char *name, size_t max, char *buf, size_t cap, size_t *used,
                      const char **out, size_t *olen)
{
    size_t vlen;
    const char *v = hk_query_raw(r->query, r->query_len, name, &vlen);
    *out = NULL;
    *olen = 0;
    if (!v)
        return 0;
    long n = hk_url_decode(v, vlen, buf + *used, cap - *used);
    if (n < 0) {
        hk_resp_problem(r, 400, NULL, "query parameter %s is not a valid percent-encoded value", name);
        return -1;
    }
    if ((size_t)n > max) {
        hk_resp_problem(r, 400, NULL, "query parameter %s is longer than %zu bytes", name, max);
        return -1;
    }
    /* Stored text is UTF-8 without NUL on every store; a filter that is
     * not can match nothing, and PostgreSQL would fail the statement. */
    if (!hk_utf8_valid(buf + *used, (size_t)n, false)) {
        hk_resp_problem(r, 400, NULL, "query parameter %s must be UTF-8 text without NUL bytes", name);
        return -1;
    }
    *out = buf + *used;
    *olen = (size_t)n;
    *used += (size_t)n;
    return 0;
}

static int query_str(struct hk_req *r, const char *name, size_t max, size_t *used, const char **out, size_t *olen)
{
    return hk_api_query_text(r, name, max, api_req(r)->scratch, sizeof api_req(r)->scratch, used, out, olen);
}

static int query_int(struct hk_req *r, const char *name, int64_t min, int64_t max, int64_t *out)
{
    size_t vlen;
    const char *v = hk_query_raw(r->query, r->query_len, name, &vlen);
    if (!v)
        return 0;
    if (hk_parse_int_n(v, vlen, min, max, out) < 0) {
        hk_resp_problem(r, 400, NULL, "query parameter %s must be an integer from %lld to %lld", name,
                        (long long)min, (long long)max);
        return -1;
    }
    return 0;
}

int hk_api_delivery_param(struct hk_req *r, uint8_t *out)
{
    static const char *const names[] = {"none", "pending", "delivered", "failed"};
    size_t n;
    const char *v = hk_query_raw(r->query, r->query_len, "delivery", &n);
    *out = 0;
    if (!v)
        return 0;
    for (uint8_t i = 0; i < 4; i++)
        if (strlen(names[i]) == n && memcmp(names[i], v, n) == 0) {
            *out = (uint8_t)(i + 1);
            return 0;
        }
    hk_resp_problem(r, 400, NULL, "query parameter delivery must be none, pending, delivered or failed");
    return -1;
}

void hk_api_webhook_list(struct hk_req *r)
{
    struct hk_api_req *ar = api_req(r);
    struct hk_store_op *op = &ar->op;
    memset(op, 0, sizeof *op);
    struct hk_list_query *q = &op->list;
    int64_t limit = LIST_DEFAULT, before = 0;
    size_t used = 0;
    if (query_int(r, "limit", 1, LIST_MAX, &limit) < 0 || query_int(r, "before", 1, INT64_MAX, &before) < 0 ||
        query_str(r, "source", 4 * HK_SOURCE_MAX, &used, &q->source, &q->source_len) < 0 ||
        query_str(r, "eventType", 4 * HK_EVENT_TYPE_MAX, &used, &q->event_type, &q->event_type_len) < 0 ||
        query_str(r, "deliveryId", HK_META_MAX, &used, &q->delivery_id, &q->delivery_id_len) < 0 ||
        hk_api_delivery_param(r, &q->delivery) < 0)
        return;
    size_t alen;
    const char *all = hk_query_raw(r->query, r->query_len, "all", &alen);
    if (all && !(alen == 5 && strncasecmp(all, "false", 5) == 0)) {
        if (!(alen == 4 && strncasecmp(all, "true", 4) == 0) && alen != 0) {
            hk_resp_problem(r, 400, NULL, "query parameter all must be true or false");
            return;
        }
        q->stream = true;
    }
    q->limit = q->stream ? STREAM_BATCH : (uint32_t)limit;
    q->before = before;
    op->kind = HK_OP_LIST;
    op->on_row = list_row;
    op->on_done = list_done;
    op->data = r;
    ar->first_row = true;
    hk_buf_putc(hk_resp_body(r), '[');
    submit(r);
}
