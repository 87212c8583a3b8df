/* SPDX-License-Identifier: MIT
 * GraphQL over HTTP (docs/graphql.md): POST /graphql with a JSON body and
 * GET /graphql?query=… (queries only), the response media type the client
 * accepts, the mutation's scope, and the root fields' resolvers over the
 * store. Parsing, validation and execution are graphql/'s; this file only
 * moves requests and rows in and out. */
#include <llhttp.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "api/api_int.h"
#include "auth/token.h"
#include "core/ascii.h"
#include "core/base64.h"
#include "core/clock.h"
#include "core/mediatype.h"
#include "core/utf8.h"
#include "core/credential.h"
#include "graphql/graphql.h"
#include "http/query.h"
#include "ingress/jscan.h"
#include "hk_build.h"

#define CT_GQL_RESPONSE "application/graphql-response+json; charset=utf-8"
#define CT_JSON_UTF8 "application/json; charset=utf-8"
#define ARENA_CAP (16u << 20)   /* a page's rows live here: 1000 rows of 16 KB */
#define CURSOR_PREFIX "v1:"

/* One GraphQL request: from the handler to app->end. */
struct hk_api_gq {
    struct hk_req *r;
    struct gq_arena arena;
    struct gq_exec *x;
    json_t *body;              /* the POSTed document ({query, variables, operationName}) */
    json_t *vars;              /* GET: parsed from the query string */
    bool gql_media;            /* answer application/graphql-response+json */
    struct doc_entry *ent;     /* the cached document in use (a reference), or NULL */
    /* The executor may finish inside any call into it (gq_exec_start,
     * gq_root_done), and answering ends the request, which frees all of
     * this: the answer waits until no executor frame is on the stack. */
    unsigned depth;
    bool done, sent;
};

/* One root field being resolved, with its store op (in the arena). */
struct root {
    struct gq_root_call *call;
    struct hk_req *r;
    struct hk_store_op op;
    json_t *acc;               /* sources: the list so far */
    struct xrow **rows;        /* webhook(s): the rows so far, in the arena */
    uint32_t nrows;
    bool full;                 /* the arena ran out: the field fails */
    uint32_t first;
    char err[160];
};

static struct hk_api_gq *gq_of(struct hk_req *r)
{
    return api_req(r)->gq;
}

/* ---- documents already parsed and validated, per loop ------------------- */

/* Clients send the same few documents over and over: a loop keeps the
 * last DOC_CACHE_N that validated (the schema, the limits and the
 * introspection switch are the same for the process's life), so a repeat
 * skips parsing and validation. An entry in use by a request in flight is
 * referenced and never evicted. */
#define DOC_CACHE_N 16
#define DOC_CACHE_QUERY_MAX 8192
#define DOC_CACHE_ARENA (256u << 10)

struct doc_entry {
    char *query;               /* malloc'ed copy; NULL: a free slot */
    size_t len;
    struct gq_arena arena;     /* holds doc */
    struct gq_document *doc;
    unsigned refs;
    uint64_t used;             /* tick of the last use (LRU) */
};

struct hk_gq_docs {
    struct doc_entry e[DOC_CACHE_N];
    uint64_t tick;
};

static struct doc_entry *doc_lookup(struct hk_api_loop *L, const char *q, size_t n)
{
    struct hk_gq_docs *c = L->gq_docs;
    if (!c || n > DOC_CACHE_QUERY_MAX)
        return NULL;
    for (unsigned i = 0; i < DOC_CACHE_N; i++) {
        struct doc_entry *e = &c->e[i];
        if (e->query && e->len == n && memcmp(e->query, q, n) == 0) {
            e->refs++;
            e->used = ++c->tick;
            return e;
        }
    }
    return NULL;
}

static void doc_drop(struct doc_entry *e)
{
    free(e->query);
    e->query = NULL;
    gq_arena_free(&e->arena);
}

/* Keep a copy of a document that validated; returns it referenced, or
 * NULL (nothing to evict, too large, out of memory: the request goes on
 * with its own copy). */
static struct doc_entry *doc_store(struct hk_api_loop *L, const char *q, size_t n, const struct gq_limits *lim)
{
    if (n > DOC_CACHE_QUERY_MAX)
        return NULL;
    if (!L->gq_docs && !(L->gq_docs = calloc(1, sizeof *L->gq_docs)))
        return NULL;
    struct hk_gq_docs *c = L->gq_docs;
    struct doc_entry *victim = NULL;
    for (unsigned i = 0; i < DOC_CACHE_N; i++) {
        struct doc_entry *e = &c->e[i];
        if (!e->query) {
            victim = e;
            break;
        }
        if (!e->refs && (!victim || e->used < victim->used))
            victim = e;
    }
    if (!victim)
        return NULL;
    if (victim->query)
        doc_drop(victim);
    gq_arena_init(&victim->arena, DOC_CACHE_ARENA);
    struct gq_error err;
    /* The tree points into the text it was parsed from: parse the copy. */
    if (!(victim->query = malloc(n ? n : 1))) {
        doc_drop(victim);
        return NULL;
    }
    memcpy(victim->query, q, n);
    if (gq_parse(&victim->arena, victim->query, n, lim, &victim->doc, &err) < 0) {
        doc_drop(victim);
        return NULL;
    }
    victim->len = n;
    victim->refs = 1;
    victim->used = ++c->tick;
    return victim;
}

void hk_api_graphql_loop_free(struct hk_api_loop *L)
{
    struct hk_gq_docs *c = L->gq_docs;
    if (!c)
        return;
    for (unsigned i = 0; i < DOC_CACHE_N; i++)
        if (c->e[i].query)
            doc_drop(&c->e[i]);
    free(c);
    L->gq_docs = NULL;
}

void hk_api_graphql_end(struct hk_req *r)
{
    struct hk_api_gq *g = api_req(r)->gq;
    if (!g)
        return;
    api_req(r)->gq = NULL;
    if (g->x)
        gq_exec_free(g->x);
    if (g->ent)
        g->ent->refs--;
    json_decref(g->body);
    json_decref(g->vars);
    gq_arena_free(&g->arena);
    free(g);
}

static const char *media(const struct hk_api_gq *g)
{
    return g->gql_media ? CT_GQL_RESPONSE : CT_JSON_UTF8;
}

/* A request error (no execution): {"errors":[{"message":…}]}, 400 with
 * the GraphQL media type, else 200 as GraphQL over HTTP has it for
 * application/json (a legacy client reads the errors from the body). */
static void request_error(struct hk_req *r, const char *msg, const struct gq_loc *loc)
{
    struct hk_api_gq *g = gq_of(r);
    struct hk_buf *b = hk_resp_body(r);
    b->len = 0;
    hk_buf_puts(b, "{\"errors\":[{\"message\":");
    hk_buf_put_json_str(b, msg, strlen(msg));
    if (loc)
        hk_buf_printf(b, ",\"locations\":[{\"line\":%u,\"column\":%u}]", loc->line, loc->column);
    hk_buf_puts(b, "}]}");
    hk_resp_send(r, g->gql_media ? 400 : 200, media(g));
}

static void errors_response(struct hk_req *r, const struct gq_errors *e)
{
    struct hk_api_gq *g = gq_of(r);
    struct hk_buf *b = hk_resp_body(r);
    b->len = 0;
    hk_buf_puts(b, "{\"errors\":[");
    for (uint32_t i = 0; i < e->n; i++) {
        hk_buf_puts(b, i ? ",{\"message\":" : "{\"message\":");
        hk_buf_put_json_str(b, e->v[i].message, strlen(e->v[i].message));
        if (e->v[i].nlocs) {
            hk_buf_puts(b, ",\"locations\":[");
            for (uint32_t k = 0; k < e->v[i].nlocs; k++)
                hk_buf_printf(b, "%s{\"line\":%u,\"column\":%u}", k ? "," : "", e->v[i].locs[k].line,
                              e->v[i].locs[k].column);
            hk_buf_putc(b, ']');
        }
        hk_buf_putc(b, '}');
    }
    hk_buf_puts(b, "]}");
    hk_resp_send(r, g->gql_media ? 400 : 200, media(g));
}

/* ---- values the schema's types are made of ------------------------------- */

static json_t *datetime(int64_t us)
{
    struct hk_buf b = HK_BUF_INIT;
    hk_buf_put_iso_us(&b, us);
    json_t *v = json_stringn(b.p, b.len);
    hk_buf_free(&b);
    return v;
}

/* The decimal text of a non-negative id (ids are > 0) into out (at least
 * 20 bytes); returns its length. snprintf was a tenth of a page's CPU. */
static size_t put_dec(char *out, int64_t v)
{
    char tmp[24];
    size_t k = 0;
    uint64_t u = v < 0 ? 0 : (uint64_t)v;
    do {
        tmp[k++] = (char)('0' + u % 10);
        u /= 10;
    } while (u);
    for (size_t i = 0; i < k; i++)
        out[i] = tmp[k - 1 - i];
    out[k] = 0;
    return k;
}

/* A Webhook as the executor reads it (graphql.h's external objects): the
 * row's fields copied into the request's arena, read field by field
 * during completion - no JSON tree per row. */
/* A row's Delivery (null when it was not forwarded). */
struct xdelivery {
    struct gq_ext ext;
    uint8_t state;
    const char *error;
    size_t error_len;
    char attempts[12], status[12], next[32], last[32];
    uint8_t attempts_len, status_len, next_len, last_len;
};

struct xrow {
    struct gq_ext ext;
    struct xdelivery dlv;             /* dlv.state NONE: delivery is null */
    const char *source, *event_type, *payload, *content_type, *delivery_id, *client_addr;
    size_t source_len, event_type_len, payload_len, content_type_len, delivery_id_len, client_addr_len;
    bool has_payload, ingress, has_sha;
    char id[24], at[32], bytes[24], sha[65];
    uint8_t id_len, at_len, bytes_len;
    int64_t idv;
};

static void xput(struct gq_xval *o, const char *s, size_t n, bool present)
{
    o->kind = present ? GQ_X_STRING : GQ_X_NULL;
    o->s = s;
    o->n = n;
}

static void xrow_field(const struct gq_ext *e, unsigned index, struct gq_xval *o)
{
    const struct xrow *w = (const struct xrow *)e;
    o->kind = GQ_X_NULL;
    switch (index) {
    case GQ_WEBHOOK_ID: xput(o, w->id, w->id_len, true); break;
    case GQ_WEBHOOK_SOURCE: xput(o, w->source, w->source_len, true); break;
    case GQ_WEBHOOK_EVENT_TYPE: xput(o, w->event_type, w->event_type_len, true); break;
    case GQ_WEBHOOK_PAYLOAD: xput(o, w->payload, w->payload_len, w->has_payload); break;
    case GQ_WEBHOOK_RECEIVED_AT: xput(o, w->at, w->at_len, true); break;
    case GQ_WEBHOOK_INGRESS: o->kind = GQ_X_BOOL, o->b = w->ingress; break;
    case GQ_WEBHOOK_CONTENT_TYPE: xput(o, w->content_type, w->content_type_len, w->content_type != NULL); break;
    case GQ_WEBHOOK_CLIENT_ADDRESS: xput(o, w->client_addr, w->client_addr_len, w->client_addr != NULL); break;
    case GQ_WEBHOOK_DELIVERY_ID: xput(o, w->delivery_id, w->delivery_id_len, w->delivery_id != NULL); break;
    case GQ_WEBHOOK_BODY_BYTES:
        if (w->ingress) {
            xput(o, w->bytes, w->bytes_len, true);
            o->kind = GQ_X_INT;
        }
        break;
    case GQ_WEBHOOK_BODY_SHA256: xput(o, w->sha, 64, w->has_sha); break;
    case GQ_WEBHOOK_DELIVERY:
        if (w->dlv.state != HK_DLV_NONE)
            o->kind = GQ_X_OBJECT, o->obj = &w->dlv.ext;
        break;
    }
}

static const struct gq_ext_vt xrow_vt = {xrow_field};

static void xdelivery_field(const struct gq_ext *e, unsigned index, struct gq_xval *o)
{
    static const char *const states[] = {"NONE", "PENDING", "DELIVERED", "FAILED"};
    const struct xdelivery *d = (const struct xdelivery *)e;
    o->kind = GQ_X_NULL;
    switch (index) {
    case GQ_DELIVERY_STATE: xput(o, states[d->state], strlen(states[d->state]), true); break;
    case GQ_DELIVERY_ATTEMPTS:
        xput(o, d->attempts, d->attempts_len, true);
        o->kind = GQ_X_INT;
        break;
    case GQ_DELIVERY_LAST_STATUS:
        if (d->status_len) {
            xput(o, d->status, d->status_len, true);
            o->kind = GQ_X_INT;
        }
        break;
    case GQ_DELIVERY_LAST_ERROR: xput(o, d->error, d->error_len, d->error != NULL); break;
    case GQ_DELIVERY_NEXT_ATTEMPT_AT: xput(o, d->next, d->next_len, d->next_len > 0); break;
    case GQ_DELIVERY_LAST_ATTEMPT_AT: xput(o, d->last, d->last_len, d->last_len > 0); break;
    }
}

static const struct gq_ext_vt xdelivery_vt = {xdelivery_field};

/* s[0..n) copied to *at (NULL stays NULL), which moves past it. */
static const char *xcopy(char **at, const char *s, size_t n)
{
    if (!s)
        return NULL;
    char *d = *at;
    if (n)
        memcpy(d, s, n);
    *at += n;
    return d;
}

/* The row as a Webhook object in the arena, or NULL when it is full. The
 * store's text lives only during on_row: its strings are copied into one
 * block behind the object. */
static struct xrow *xrow_of(struct gq_arena *a, const struct hk_webhook *w)
{
    const char *p;
    size_t pn;
    bool has_payload = hk_webhook_payload(w, &p, &pn);
    const struct hk_delivery *d = &w->delivery;
    size_t text = w->source_len + w->event_type_len + (has_payload ? pn : 0) + d->last_error_len;
    if (w->ingress)
        text += w->content_type_len + w->delivery_id_len + w->client_addr_len;
    struct xrow *x = gq_alloc(a, sizeof *x + text);
    if (!x)
        return NULL;
    char *at = (char *)(x + 1);
    x->ext.vt = &xrow_vt;
    x->idv = w->id;
    x->id_len = (uint8_t)put_dec(x->id, w->id);
    struct hk_buf b = {.p = x->at, .cap = sizeof x->at};
    hk_buf_put_iso_us(&b, w->received_us);
    x->at_len = (uint8_t)b.len;
    x->has_payload = has_payload;
    x->ingress = w->ingress;
    x->source_len = w->source_len;
    x->event_type_len = w->event_type_len;
    x->payload_len = pn;
    x->source = xcopy(&at, w->source ? w->source : "", w->source_len);
    x->event_type = xcopy(&at, w->event_type ? w->event_type : "", w->event_type_len);
    x->payload = has_payload ? xcopy(&at, p ? p : "", pn) : NULL;
    x->content_type = x->delivery_id = x->client_addr = NULL;
    x->has_sha = false;
    struct xdelivery *xd = &x->dlv;
    xd->state = d->state <= HK_DLV_FAILED ? d->state : HK_DLV_NONE;
    if (xd->state != HK_DLV_NONE) {
        xd->ext.vt = &xdelivery_vt;
        xd->error = xcopy(&at, d->last_error, d->last_error_len);
        xd->error_len = d->last_error_len;
        xd->attempts_len = (uint8_t)put_dec(xd->attempts, d->attempts);
        xd->status_len = d->last_status ? (uint8_t)put_dec(xd->status, d->last_status) : 0;
        struct hk_buf t = {.p = xd->next, .cap = sizeof xd->next};
        if (d->state == HK_DLV_PENDING && d->next_us)
            hk_buf_put_iso_us(&t, d->next_us);
        xd->next_len = (uint8_t)t.len;
        t = (struct hk_buf){.p = xd->last, .cap = sizeof xd->last};
        if (d->updated_us)
            hk_buf_put_iso_us(&t, d->updated_us);
        xd->last_len = (uint8_t)t.len;
    }
    if (w->ingress) {
        x->content_type_len = w->content_type_len;
        x->delivery_id_len = w->delivery_id_len;
        x->client_addr_len = w->client_addr_len;
        x->content_type = xcopy(&at, w->content_type, w->content_type_len);
        x->delivery_id = xcopy(&at, w->delivery_id, w->delivery_id_len);
        x->client_addr = xcopy(&at, w->client_addr, w->client_addr_len);
        x->bytes_len = (uint8_t)put_dec(x->bytes, (int64_t)w->body_len);
        if (w->body_sha256) {
            hk_hex_encode(w->body_sha256, 32, x->sha);
            x->has_sha = true;
        }
    }
    return x;
}

/* A page: WebhookConnection, its edges and its PageInfo, in the arena. */
struct xedge {
    struct gq_ext ext;
    const struct xrow *node;
    char cursor[64];
    size_t cursor_len;
};
struct xpage {
    struct gq_ext ext;           /* PageInfo */
    bool more;
    const char *end;
    size_t end_len;
};
struct xconn {
    struct gq_ext ext;           /* WebhookConnection */
    const struct gq_ext **edges;
    size_t n;
    struct xpage page;
};

static void xedge_field(const struct gq_ext *e, unsigned index, struct gq_xval *o)
{
    const struct xedge *x = (const struct xedge *)e;
    o->kind = GQ_X_NULL;
    if (index == GQ_EDGE_CURSOR)
        xput(o, x->cursor, x->cursor_len, true);
    else if (index == GQ_EDGE_NODE)
        o->kind = GQ_X_OBJECT, o->obj = &x->node->ext;
}

static void xpage_field(const struct gq_ext *e, unsigned index, struct gq_xval *o)
{
    const struct xpage *p = (const struct xpage *)e;
    o->kind = GQ_X_NULL;
    if (index == GQ_PAGE_INFO_HAS_NEXT_PAGE)
        o->kind = GQ_X_BOOL, o->b = p->more;
    else if (index == GQ_PAGE_INFO_END_CURSOR)
        xput(o, p->end, p->end_len, p->end != NULL);
}

static void xconn_field(const struct gq_ext *e, unsigned index, struct gq_xval *o)
{
    const struct xconn *c = (const struct xconn *)e;
    o->kind = GQ_X_NULL;
    if (index == GQ_CONNECTION_EDGES) {
        o->kind = GQ_X_LIST;
        o->items = c->edges;
        o->n = c->n;
    } else if (index == GQ_CONNECTION_PAGE_INFO) {
        o->kind = GQ_X_OBJECT;
        o->obj = &c->page.ext;
    }
}

static const struct gq_ext_vt xedge_vt = {xedge_field}, xpage_vt = {xpage_field}, xconn_vt = {xconn_field};

/* The cursor's text in out (NUL-terminated); its length. */
static size_t cursor_of(int64_t id, char *out, size_t cap)
{
    char raw[32];
    memcpy(raw, CURSOR_PREFIX, 3);
    size_t n = 3 + put_dec(raw + 3, id);
    if (n < cap && HK_BASE64_LEN(n) < cap) {
        return hk_base64url_encode(raw, n, out);
    }
    out[0] = 0;
    return 0;
}

/* An opaque cursor back to its id; -1 when it is not one of ours. */
static int cursor_id(const char *c, size_t n, int64_t *id)
{
    uint8_t raw[40];
    long m = hk_base64url_decode(c, n, raw, sizeof raw);
    if (m < 4 || memcmp(raw, CURSOR_PREFIX, 3) != 0)
        return -1;
    return hk_api_parse_id((const char *)raw + 3, (size_t)m - 3, id);
}

/* ---- root resolvers -------------------------------------------------------- */

static const char *arg_str(json_t *args, const char *name, size_t *n)
{
    json_t *v = json_object_get(args, name);
    if (!json_is_string(v))
        return NULL;
    *n = json_string_length(v);
    return json_string_value(v);
}

static void maybe_send(struct hk_req *r)
{
    struct hk_api_gq *g = gq_of(r);
    if (g && g->done && !g->sent && g->depth == 0) {
        g->sent = true;
        hk_resp_send(r, 200, media(g));   /* ends the request: g is freed */
    }
}

/* Complete a root field. rt lives in the arena: not touched after. */
static void root_done(struct root *rt, json_t *v, const char *err)
{
    struct hk_req *r = rt->r;
    struct hk_api_gq *g = gq_of(r);
    g->depth++;
    gq_root_done(rt->call, v, err);
    g->depth--;
    maybe_send(r);
}

static void root_done_ext(struct root *rt, const struct gq_ext *v, const char *err)
{
    struct hk_req *r = rt->r;
    struct hk_api_gq *g = gq_of(r);
    g->depth++;
    gq_root_done_ext(rt->call, v, err);
    g->depth--;
    maybe_send(r);
}

static void root_fail(struct root *rt, const char *msg)
{
    root_done(rt, NULL, msg);
}

static void submit(struct root *rt)
{
    struct hk_req *r = rt->r;
    hk_api_store_begin(r);
    int rc = hk_store_submit(api_loop(r)->sl, &rt->op);
    if (rc < 0) {
        hk_api_store_end(r, (int)rt->op.kind, rc);
        root_fail(rt, rc == HK_EBUSY ? "the store is busy; retry later" : "the store is unavailable");
    }
}

static const char *store_msg(int status)
{
    switch (status) {
    case HK_EBUSY: return "the store is busy; retry later";
    case HK_EUNAVAIL: return "the store is unavailable";
    case HK_ETIMEDOUT: return "the store did not answer in time";
    default: return "the store failed";
    }
}

#define ARENA_FULL_MSG "the page is larger than a request may hold; ask for fewer rows (first)"

static void one_row(struct hk_store_op *op, const struct hk_webhook *row)
{
    struct root *rt = op->data;
    struct xrow *x = xrow_of(&gq_of(rt->r)->arena, row);
    if (!x)
        rt->full = true;
    rt->rows[0] = x;
    rt->nrows = 1;
}

static void one_done(struct hk_store_op *op)
{
    struct root *rt = op->data;
    hk_api_store_end(rt->r, (int)op->kind, op->status);
    if (rt->full) {
        root_fail(rt, ARENA_FULL_MSG);
    } else if (op->status == 0 && rt->nrows) {
        root_done_ext(rt, &rt->rows[0]->ext, NULL);
    } else if (op->status == HK_ENOTFOUND || op->status == 0) {
        root_done(rt, NULL, NULL);
    } else {
        root_fail(rt, store_msg(op->status));
    }
}

static void resolve_webhook(struct root *rt, json_t *args)
{
    size_t n = 0;
    const char *id = arg_str(args, "id", &n);
    int64_t v;
    if (!id || hk_api_parse_id(id, n, &v) < 0) {
        root_done(rt, NULL, NULL);   /* no webhook has such an id */
        return;
    }
    rt->rows = gq_alloc(&gq_of(rt->r)->arena, sizeof *rt->rows);
    if (!rt->rows) {
        root_fail(rt, ARENA_FULL_MSG);
        return;
    }
    rt->op.kind = HK_OP_GET;
    rt->op.id = v;
    rt->op.on_row = one_row;
    rt->op.on_done = one_done;
    submit(rt);
}

static void list_row(struct hk_store_op *op, const struct hk_webhook *row)
{
    struct root *rt = op->data;
    if (rt->full || rt->nrows >= rt->first + 1u)
        return;
    struct xrow *x = xrow_of(&gq_of(rt->r)->arena, row);
    if (!x)
        rt->full = true;
    else
        rt->rows[rt->nrows++] = x;
}

static void list_done(struct hk_store_op *op)
{
    struct root *rt = op->data;
    struct gq_arena *a = &gq_of(rt->r)->arena;
    hk_api_store_end(rt->r, HK_OP_LIST, op->status);
    if (op->status < 0) {
        root_fail(rt, store_msg(op->status));
        return;
    }
    uint32_t n = rt->nrows < rt->first ? rt->nrows : rt->first;
    struct xconn *c = gq_alloc(a, sizeof *c);
    struct xedge *edges = gq_alloc(a, (n ? n : 1) * sizeof *edges);
    const struct gq_ext **items = gq_alloc(a, (n ? n : 1) * sizeof *items);
    if (rt->full || !c || !edges || !items) {
        root_fail(rt, ARENA_FULL_MSG);
        return;
    }
    for (uint32_t i = 0; i < n; i++) {
        edges[i].ext.vt = &xedge_vt;
        edges[i].node = rt->rows[i];
        edges[i].cursor_len = cursor_of(rt->rows[i]->idv, edges[i].cursor, sizeof edges[i].cursor);
        items[i] = &edges[i].ext;
    }
    c->ext.vt = &xconn_vt;
    c->edges = items;
    c->n = n;
    c->page.ext.vt = &xpage_vt;
    c->page.more = rt->nrows > rt->first;
    if (n) {
        c->page.end = edges[n - 1].cursor;
        c->page.end_len = edges[n - 1].cursor_len;
    }
    root_done_ext(rt, &c->ext, NULL);
}

static int time_arg(json_t *args, const char *name, int64_t *us, struct root *rt)
{
    size_t n;
    const char *s = arg_str(args, name, &n);
    *us = 0;
    if (!s)
        return 0;
    if (hk_rfc3339_parse(s, n, us) < 0) {
        snprintf(rt->err, sizeof rt->err, "%s must be an RFC 3339 date-time such as 2026-12-01T10:00:00Z", name);
        return -1;
    }
    return 0;
}

static bool text_ok(const char *p, size_t n)
{
    return !p || hk_utf8_valid(p, n, false);
}

static void resolve_webhooks(struct root *rt, json_t *args, const struct gq_limits *lim)
{
    json_t *f = json_object_get(args, "first");
    json_int_t first = json_is_integer(f) ? json_integer_value(f) : 20;
    if (first < 0 || first > (json_int_t)lim->max_first) {
        snprintf(rt->err, sizeof rt->err, "first must be between 0 and %u", lim->max_first);
        root_fail(rt, rt->err);
        return;
    }
    struct hk_list_query *q = &rt->op.list;
    size_t n;
    const char *after = arg_str(args, "after", &n);
    if (after && cursor_id(after, n, &q->before) < 0) {
        root_fail(rt, "after is not a cursor this API gave");
        return;
    }
    q->source = arg_str(args, "source", &q->source_len);
    q->event_type = arg_str(args, "eventType", &q->event_type_len);
    q->delivery_id = arg_str(args, "deliveryId", &q->delivery_id_len);
    size_t dn;
    const char *ds = arg_str(args, "delivery", &dn);   /* validated: one of the enum's values */
    static const char *const states[] = {"NONE", "PENDING", "DELIVERED", "FAILED"};
    for (uint8_t i = 0; ds && i < 4; i++)
        if (strlen(states[i]) == dn && memcmp(states[i], ds, dn) == 0)
            q->delivery = (uint8_t)(i + 1);
    if (time_arg(args, "receivedAfter", &q->received_after_us, rt) < 0 ||
        time_arg(args, "receivedBefore", &q->received_before_us, rt) < 0) {
        root_fail(rt, rt->err);
        return;
    }
    rt->first = (uint32_t)first;
    rt->rows = gq_alloc(&gq_of(rt->r)->arena, ((size_t)rt->first + 1) * sizeof *rt->rows);
    if (!rt->rows) {
        root_fail(rt, ARENA_FULL_MSG);
        return;
    }
    /* Stored text is UTF-8 without NUL on every store: such a filter
     * matches nothing (and PostgreSQL would refuse the statement). */
    if (!text_ok(q->source, q->source_len) || !text_ok(q->event_type, q->event_type_len) ||
        !text_ok(q->delivery_id, q->delivery_id_len)) {
        rt->first = 0;
        rt->op.status = 0;
        hk_api_store_begin(rt->r);
        list_done(&rt->op);
        return;
    }
    q->limit = rt->first + 1;
    rt->op.kind = HK_OP_LIST;
    rt->op.on_row = list_row;
    rt->op.on_done = list_done;
    submit(rt);
}

static void stats_one(struct hk_store_op *op, const struct hk_source_stats *s)
{
    struct root *rt = op->data;
    json_t *o = json_object();
    json_object_set_new(o, "source", json_stringn(s->source, s->source_len));
    json_object_set_new(o, "count", json_integer(s->count));
    json_object_set_new(o, "lastReceivedAt", s->last_received_us ? datetime(s->last_received_us) : json_null());
    json_array_append_new(rt->acc, o);
}

static void stats_done(struct hk_store_op *op)
{
    struct root *rt = op->data;
    hk_api_store_end(rt->r, (int)op->kind, op->status);
    json_t *v = rt->acc;
    rt->acc = NULL;
    if (op->status < 0) {
        json_decref(v);
        root_fail(rt, store_msg(op->status));
        return;
    }
    root_done(rt, v, NULL);
}

static void resolve_sources(struct root *rt)
{
    rt->acc = json_array();
    rt->op.kind = HK_OP_SOURCE_STATS;
    rt->op.on_stats = stats_one;
    rt->op.on_done = stats_done;
    submit(rt);
}

static void resolve_system(struct root *rt)
{
    struct hk_api *a = api_loop(rt->r)->api;
    json_t *o = json_object();
    json_object_set_new(o, "version", json_string(HK_VERSION));
    json_object_set_new(o, "store", json_string(a->store->vt->name));
    json_object_set_new(o, "uptimeMs", json_real((double)(hk_mono_ns() - a->start_ns) / 1e6));
    json_object_set_new(o, "eventLoops", json_integer(a->cfg->threads));
    root_done(rt, o, NULL);
}

static void delete_done(struct hk_store_op *op)
{
    struct root *rt = op->data;
    hk_api_store_end(rt->r, HK_OP_DELETE, op->status);
    if (op->status == 0 || op->status == HK_ENOTFOUND)
        root_done(rt, json_boolean(op->status == 0), NULL);
    else
        root_fail(rt, store_msg(op->status));
}

static void resolve_delete(struct root *rt, json_t *args)
{
    size_t n = 0;
    const char *id = arg_str(args, "id", &n);
    int64_t v;
    if (!id || hk_api_parse_id(id, n, &v) < 0) {
        root_done(rt, json_false(), NULL);
        return;
    }
    rt->op.kind = HK_OP_DELETE;
    rt->op.id = v;
    rt->op.on_done = delete_done;
    submit(rt);
}

static void resolve(void *ctx, struct gq_root_call *call)
{
    struct hk_req *r = ctx;
    struct hk_api_gq *g = gq_of(r);
    struct root *rt = gq_alloc(&g->arena, sizeof *rt);
    if (!rt) {
        gq_root_done(call, NULL, "the request needs more memory than it may use");
        return;
    }
    rt->call = call;
    rt->r = r;
    rt->op.data = rt;
    call->data = rt;
    const char *f = call->field->name;
    static const struct gq_limits lim = GQ_LIMITS_DEFAULT;
    if (strcmp(f, "webhook") == 0)
        resolve_webhook(rt, call->args);
    else if (strcmp(f, "webhooks") == 0)
        resolve_webhooks(rt, call->args, &lim);
    else if (strcmp(f, "sources") == 0)
        resolve_sources(rt);
    else if (strcmp(f, "system") == 0)
        resolve_system(rt);
    else if (strcmp(f, "deleteWebhook") == 0)
        resolve_delete(rt, call->args);
    else
        root_fail(rt, "this field has no resolver");
}

static void exec_done(void *ud, struct gq_exec *x)
{
    (void)x;
    struct hk_req *r = ud;
    gq_of(r)->done = true;   /* answered by maybe_send once the executor has returned */
}

/* ---- the endpoint ----------------------------------------------------------- */

/* A decoded string member into the arena (NUL-terminated), or the body's
 * own bytes when it has no escapes. */
static const char *member_text(struct hk_api_gq *g, const struct hk_jval *v, size_t *n)
{
    if (!v->escaped) {
        *n = v->n;
        return v->p;
    }
    char *dst = gq_alloc(&g->arena, v->n + 1);
    long k = dst ? hk_jscan_string(v, dst, v->n) : -1;
    if (k < 0)
        return NULL;
    dst[k] = 0;
    *n = (size_t)k;
    return dst;
}

/* The usual POST body, {"query": "…"} with perhaps an operationName and
 * empty variables, read in one pass without a JSON tree (ingress/jscan.h
 * accepts what jansson does). Anything else - variables, odd types, a
 * \u0000 - is left to jansson, which also words the errors: false. */
static bool body_fast(struct hk_req *r, struct hk_api_gq *g, const char **query, size_t *qlen, const char **opname,
                      size_t *olen)
{
    struct hk_jscan_want w[3] = {{.path = "query"}, {.path = "operationName"}, {.path = "variables"}};
    const char *p = r->body->p;
    if (!p || hk_jscan(p, r->body->len, w, 3) < 0 || w[0].out.kind != HK_J_STRING)
        return false;
    if (w[2].out.kind != HK_J_NONE) {
        /* Only {} (no variables at all) stays on this path. */
        const char *v = w[2].out.p, *end = p + r->body->len;
        if (w[2].out.kind != HK_J_OTHER || !v || *v != '{')
            return false;
        for (v++; v < end && (*v == ' ' || *v == '\t' || *v == '\n' || *v == '\r'); v++)
            ;
        if (v >= end || *v != '}')
            return false;
    }
    if (w[1].out.kind != HK_J_NONE && w[1].out.kind != HK_J_STRING)
        return false;
    *query = member_text(g, &w[0].out, qlen);
    if (!*query)
        return false;
    *opname = NULL;
    *olen = 0;
    if (w[1].out.kind == HK_J_STRING) {
        /* NUL-terminated for gq_select_operation: always a copy. */
        char *o = gq_alloc(&g->arena, w[1].out.n + 1);
        long k = o ? hk_jscan_string(&w[1].out, o, w[1].out.n) : -1;
        if (k < 0)
            return false;
        o[k] = 0;
        *opname = o;
        *olen = (size_t)k;
    }
    return true;
}

/* GET's query string values, decoded into the arena. */
static const char *qparam(struct hk_req *r, const char *name, size_t *n, int *bad)
{
    size_t vlen;
    const char *v = hk_query_raw(r->query, r->query_len, name, &vlen);
    if (!v)
        return NULL;
    char *dst = gq_alloc(&gq_of(r)->arena, vlen + 1);
    long k = dst ? hk_url_decode(v, vlen, dst, vlen + 1) : -1;
    if (k < 0) {
        *bad = 1;
        return NULL;
    }
    dst[k] = 0;
    *n = (size_t)k;
    return dst;
}

void hk_api_graphql(struct hk_req *r)
{
    struct hk_api_req *q = api_req(r);
    const struct hk_config *cfg = api_cfg(r);
    struct hk_api_gq *g = calloc(1, sizeof *g);
    if (!g)
        abort();
    g->r = r;
    gq_arena_init_cached(&g->arena, ARENA_CAP, &api_loop(r)->gq_cache);
    q->gq = g;
    g->gql_media = r->accept && hk_api_accepts(r->accept, r->accept_len, "application/graphql-response+json");
    static const struct gq_limits lim = GQ_LIMITS_DEFAULT;

    const char *query = NULL, *opname = NULL;
    size_t qlen = 0, olen = 0;
    json_t *vars = NULL;
    bool get = r->method == HTTP_GET || r->method == HTTP_HEAD;
    if (get) {
        int bad = 0;
        size_t vlen = 0;
        query = qparam(r, "query", &qlen, &bad);
        opname = qparam(r, "operationName", &olen, &bad);
        const char *vs = qparam(r, "variables", &vlen, &bad);
        if (bad) {
            request_error(r, "the query string is not valid percent-encoding", NULL);
            return;
        }
        if (vs && vlen) {
            json_error_t e;
            g->vars = json_loadb(vs, vlen, JSON_ALLOW_NUL, &e);
            if (!json_is_object(g->vars) && !json_is_null(g->vars)) {
                request_error(r, "variables must be a JSON object", NULL);
                return;
            }
            vars = json_is_object(g->vars) ? g->vars : NULL;
        }
    } else {
        if (!hk_media_is(r->content_type, r->content_type_len, "application/json")) {
            hk_resp_problem(r, 415, NULL, "POST /graphql takes Content-Type: application/json");
            return;
        }
        if (body_fast(r, g, &query, &qlen, &opname, &olen))
            goto have_query;
        json_error_t e;
        /* JSON_ALLOW_NUL: a NUL in the query is the parser's to refuse
         * (with graphql-js's message), and one in a variable a filter's
         * that matches nothing. */
        g->body = json_loadb(r->body->p ? r->body->p : "", r->body->len, JSON_ALLOW_NUL, &e);
        if (!json_is_object(g->body)) {
            request_error(r, "the body must be a JSON object {\"query\": …, \"variables\": …, \"operationName\": …}",
                          NULL);
            return;
        }
        json_t *qv = json_object_get(g->body, "query");
        json_t *vv = json_object_get(g->body, "variables");
        json_t *ov = json_object_get(g->body, "operationName");
        if (json_is_string(qv)) {
            query = json_string_value(qv);
            qlen = json_string_length(qv);
        } else if (qv && !json_is_null(qv)) {
            request_error(r, "query must be a string", NULL);
            return;
        }
        if (vv && !json_is_null(vv) && !json_is_object(vv)) {
            request_error(r, "variables must be an object", NULL);
            return;
        }
        vars = json_is_object(vv) ? vv : NULL;
        if (json_is_string(ov)) {
            opname = json_string_value(ov);
            olen = json_string_length(ov);
        } else if (ov && !json_is_null(ov)) {
            request_error(r, "operationName must be a string", NULL);
            return;
        }
    }
have_query:
    if (!query) {
        request_error(r, "a query is required (the \"query\" member, or ?query= on GET)", NULL);
        return;
    }
    if (opname && (olen != strlen(opname) || olen == 0)) {
        request_error(r, "operationName must be a name", NULL);
        return;
    }
    if (qlen > lim.max_bytes) {
        char m[96];
        snprintf(m, sizeof m, "the document is larger than %u bytes", lim.max_bytes);
        request_error(r, m, NULL);
        return;
    }

    const struct gq_schema *schema = hk_gq_schema();
    struct gq_document *doc;
    g->ent = doc_lookup(api_loop(r), query, qlen);
    if (g->ent) {
        doc = g->ent->doc;   /* parsed and validated by an earlier request */
    } else {
        struct gq_error perr;
        if (gq_parse(&g->arena, query, qlen, &lim, &doc, &perr) < 0) {
            request_error(r, perr.message, perr.nlocs ? &perr.locs[0] : NULL);
            return;
        }
        struct gq_errors *errs = gq_alloc(&g->arena, sizeof *errs);
        if (!errs) {
            request_error(r, "the request needs more memory than it may use", NULL);
            return;
        }
        if (gq_validate(&g->arena, schema, doc, &lim, cfg->graphql_introspection, errs) > 0) {
            errors_response(r, errs);
            return;
        }
        g->ent = doc_store(api_loop(r), query, qlen, &lim);
        if (g->ent)
            doc = g->ent->doc;
    }
    const struct gq_definition *op = gq_select_operation(doc, opname);
    if (op && op->op == GQ_OP_MUTATION) {
        if (get) {
            hk_resp_header(r, "Allow", "POST", 4);
            hk_resp_problem(r, 405, NULL, "mutations are POSTed; GET runs queries only");
            return;
        }
        if (cfg->auth_on && !hk_scopes_allow(q->auth.scopes, HK_SCOPE_DELETE)) {
            hk_resp_problem_reason(r, 403, "insufficient_scope", "deleteWebhook needs the delete scope");
            return;
        }
    }
    struct gq_exec_params p = {
        .schema = schema,
        .doc = doc,
        .operation_name = opname,
        .variables = vars,
        .introspection = cfg->graphql_introspection,
        .allow_mutation = !get,
        .resolve = resolve,
        .resolve_ctx = r,
        .done = exec_done,
        .done_ud = r,
        .out = hk_resp_body(r),
    };
    hk_resp_body(r)->len = 0;
    g->depth++;
    g->x = gq_exec_start(&g->arena, &p);
    g->depth--;
    if (!g->x) {
        hk_resp_send(r, g->gql_media ? 400 : 200, media(g));
        return;
    }
    maybe_send(r);
}

void hk_api_graphql_init(void)
{
    (void)hk_gq_schema();
}

void hk_api_graphql_schema(struct hk_req *r)
{
    gq_schema_print(hk_gq_schema(), hk_resp_body(r));
    hk_resp_send(r, 200, "text/plain; charset=utf-8");
}
