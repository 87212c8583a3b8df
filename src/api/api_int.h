/* SPDX-License-Identifier: MIT
 * What the files of api/ share: the application's per-loop and per-request
 * state, the handlers the route table names, and the helpers every handler
 * uses (refusing a delivery, timing a store op). Private to api/. */
#ifndef HK_API_INT_H
#define HK_API_INT_H

#include <stdatomic.h>
#include <stdbool.h>
#include <pthread.h>
#include <stdint.h>
#include <uv.h>

#include "api/api.h"
#include "core/config.h"
#include "core/credential.h"
#include "graphql/arena.h"
#include "http/resp.h"
#include "http/route.h"
#include "http/server.h"
#include "http/session.h"
#include "json/webhook_json.h"
#include "obs/obs.h"
#include "store/store.h"

struct hk_sources;
struct hk_forwarder;
struct hk_fwd_loop;
struct hk_stream_hub;
struct hk_stream_loop;
struct hk_retention;
struct hk_retention_loop;
struct hk_api_ingress;
struct hk_api_gq;
struct hk_gq_docs;

/* What a route needs (hk_route.need): scope bits (core/credential.h), or
 * one of the kinds of credential below. 0: open to anyone. */
enum {
    HK_NEED_OPEN = 0,
    HK_NEED_READ = HK_SCOPE_READ,
    HK_NEED_DELETE = HK_SCOPE_DELETE,
    HK_NEED_ADMIN = HK_SCOPE_ADMIN,
    HK_NEED_SCOPES = HK_SCOPE_ALL,
    HK_NEED_API_TOKEN = 0x100,  /* an API token of any scope (not a session) */
    HK_NEED_SESSION = 0x200,    /* a session (header or cookie) */
    HK_NEED_METRICS = 0x400,    /* HOOKD_METRICS_TOKEN, when set */
};

/* Any valid credential, whatever its kind and scopes (GET
 * /api/sessions/current): a bit the gate checks nothing for. */
enum { HK_NEED_CREDENTIAL = 0x800 };

/* The process-wide application (hk_api_new). */
struct hk_api {
    struct hk_app app;         /* first: the transport's view of it */
    const struct hk_config *cfg;
    struct hk_store *store;
    uint64_t start_ns;
    /* HOOKD_API_TOKENS_FILE, read once at start; read-only afterwards. */
    struct hk_token_rec *file_tokens;
    size_t nfile_tokens;
    struct hk_redis_cfg *redis; /* NULL: sessions in the store */
    /* Readiness is the pod's, not one loop's: with Redis, ready only while
     * every loop's client is up (api/health.c). */
    atomic_int redis_up;        /* loops whose client is up (hk_redis_count_up) */
    int nloops;                 /* the loops the server runs (as http/server.c counts them) */
    /* Failed credentials per client address, for every loop together: a
     * client's connections land on any loop. The lock is held for a table
     * probe, never across I/O. */
    struct hk_limiter *limiter;
    pthread_mutex_t limiter_mu;
    struct hk_ingress *ingress; /* POST /hooks/{source} (api/hooks.c) */
    struct hk_forwarder *fwd;   /* forwarding, when a sink is configured (api/forward.c); else NULL */
    struct hk_stream_hub *hub;  /* the live feed's hub (api/stream.c) */
    struct hk_retention *retention; /* retention rules (api/retention.c); NULL: none */
};

/* One loop's application state, made on that loop's thread. */
struct hk_limiter;
struct hk_redis;
struct hk_redis_cfg;

struct hk_api_loop {
    struct hk_api *api;
    struct hk_worker *w;
    struct hk_store_loop *sl;  /* NULL once detached */
    struct hk_obs *obs;
    struct hk_redis *redis;     /* sessions, when configured */
    bool bench_running;        /* one CPU benchmark at a time per loop */
    struct hk_api_ingress *ing_free; /* ingress request states not in use (api/hooks.c) */
    unsigned ing_nfree;
    struct gq_arena_cache gq_cache;  /* GraphQL arena blocks between requests (api/graphql.c) */
    struct hk_gq_docs *gq_docs;      /* GraphQL documents that validated, for repeats (api/graphql.c) */
    struct hk_fwd_loop *fwd;         /* this loop's forwarder (api/forward.c); NULL: forwarding off */
    struct hk_stream_loop *stream;   /* this loop's live-feed clients (api/stream.c) */
    struct hk_retention_loop *retention; /* the purge timer, on loop 0 (api/retention.c) */
    unsigned bg_ops;                 /* store ops of no request in flight (hk_api_bg_begin) */
    uv_timer_t detach_timer;         /* detaches the store after the last of them, at stop */
    bool stopping;                   /* loop_stop ran: no new background op may start */
};

/* A request's credential while the gate checks it, and what it proved. */
struct hk_api_auth {
    unsigned need;             /* the route's HK_NEED_* */
    int kind;                  /* enum hk_token_kind */
    bool via_cookie;
    uint8_t hash[32];          /* SHA-256 of the presented token */
    unsigned scopes;           /* once admitted */
    char subject[HK_TOKEN_NAME_MAX + 1];
    struct hk_token_rec token; /* store lookups fill these */
    struct hk_session_rec session;
    char new_token[64];        /* POST /api/sessions: what it hands out */
    char new_csrf[64];
};

/* A CPU benchmark run (api/system.c): the thread-pool job and its results. */
struct hk_bench {
    uv_work_t work;
    uint64_t asked, done;      /* iterations */
    uint64_t wall_ns, min_ns, max_ns, sum_ns;
    _Atomic bool cancel;       /* set by the loop, read by the job */
};

/* One request's application state, in the block the transport keeps per
 * connection (hk_req.app). `begin` resets what must not carry over. */
struct hk_api_req {
    int route;                 /* hk_api_routes index, HK_ROUTE_NONE or HK_ROUTE_UNROUTED */
    const char *param;         /* the {id} segment, raw; borrowed from the request */
    size_t param_len;
    struct hk_store_op op;
    uint64_t op_start_ns;
    struct hk_webhook_in win;  /* the decoded body of a create, while win_used */
    bool win_used;
    bool first_row;            /* list: no comma before the next row */
    char scratch[2048];        /* decoded query values */
    struct hk_api_auth auth;
    struct hk_bench bench;
    /* An ingress request's state, from hk_app.head to end/drop (taken
     * from the loop's free list: a few KB, not kept per connection). */
    struct hk_api_ingress *ing;
    struct hk_api_gq *gq;      /* a GraphQL request's state (api/graphql.c) */
};

static inline struct hk_api_req *api_req(struct hk_req *r)
{
    return r->app;
}

static inline struct hk_api_loop *api_loop(struct hk_req *r)
{
    return hk_worker_app(r->s->w);
}

static inline const struct hk_config *api_cfg(struct hk_req *r)
{
    return api_loop(r)->api->cfg;
}

/* Refuse a webhook delivery: counted once under `why` and answered with a
 * problem document. Ends the request. */
void hk_api_refuse(struct hk_req *r, enum hk_reject why, int status, const char *detail_fmt, ...)
    __attribute__((format(printf, 4, 5)));

/* Check the request's credential against `need` (HK_NEED_*), then run the
 * route's handler, or answer 401/403/429/503 (api/auth.c). */
void hk_api_gate(struct hk_req *r, unsigned need);

/* A store op that belongs to no request (forwarding, retention, the live
 * feed's hub): begin before submit, end when its on_done has run (or
 * submit failed). At stop the store detaches once none is in flight. */
void hk_api_bg_begin(struct hk_api_loop *L);
void hk_api_bg_end(struct hk_api_loop *L);

/* Time a store op: begin before submit or list_next, end in on_done (or
 * when submit itself failed, with its error). */
void hk_api_store_begin(struct hk_req *r);
void hk_api_store_end(struct hk_req *r, int kind, int status);

/* The uri label of index i (see obs.h: 0 UNKNOWN, 1 NOT_FOUND, 2 + route). */
const char *hk_api_uri_name(unsigned i);
/* Index of the uri label of route i: the first route with its template. */
unsigned hk_api_uri_of(int route);
/* How many uri labels there are (2 + routes). */
#define HK_API_NURI(n) (2 + (unsigned)(n))

/* Does a comma-separated Accept value name `type` (parameters ignored)? */
int hk_api_accepts(const char *v, size_t n, const char *type);

/* A text query parameter, percent-decoded into buf + *used (cap bytes in
 * all; *used moves past it): at most `max` bytes of UTF-8 without NUL.
 * *out NULL when absent. 0, or -1 after answering 400. */
int hk_api_query_text(struct hk_req *r, const char *name, size_t max, char *buf, size_t cap, size_t *used,
                      const char **out, size_t *olen);

/* ?delivery=none|pending|delivered|failed as hk_list_query.delivery (state
 * + 1; 0 when absent): 0, or -1 after answering 400. */
int hk_api_delivery_param(struct hk_req *r, uint8_t *out);

/* A webhook id: 1..19 digits, no sign, > 0, fits int64. 0 or -1. */
int hk_api_parse_id(const char *p, size_t n, int64_t *out);

void hk_api_webhook_create(struct hk_req *r);
void hk_api_webhook_list(struct hk_req *r);
void hk_api_webhook_get(struct hk_req *r);
void hk_api_webhook_delete(struct hk_req *r);
void hk_api_system_info(struct hk_req *r);
void hk_api_system_benchmark(struct hk_req *r);
void hk_api_health(struct hk_req *r);
void hk_api_health_live(struct hk_req *r);
void hk_api_health_ready(struct hk_req *r);
void hk_api_health_started(struct hk_req *r);
void hk_api_metrics(struct hk_req *r);
void hk_api_openapi(struct hk_req *r);
void hk_api_session_create(struct hk_req *r);
void hk_api_session_delete(struct hk_req *r);
void hk_api_hooks_post(struct hk_req *r);
void hk_api_hooks_get(struct hk_req *r);
void hk_api_webhook_body(struct hk_req *r);
void hk_api_webhook_redeliver(struct hk_req *r);
/* GET /api/ingress/refusals (api/hooks.c), GET /api/sessions/current
 * (api/auth.c). */
void hk_api_ingress_refusals(struct hk_req *r);
void hk_api_session_current(struct hk_req *r);
void hk_api_graphql(struct hk_req *r);
void hk_api_graphql_schema(struct hk_req *r);
void hk_api_graphql_init(void);
void hk_api_graphql_loop_free(struct hk_api_loop *L);
/* Release a GraphQL request's state (app->end). */
void hk_api_graphql_end(struct hk_req *r);

/* Ingress (api/hooks.c): the process-wide state, the transport hooks, and
 * the sources file. hk_api_ingress_load installs a new snapshot (start,
 * SIGHUP): 0, or -1 with the reason in err and the old one kept. */
struct hk_ingress *hk_ingress_new(void);
void hk_ingress_free(struct hk_ingress *g);
bool hk_ingress_keep_headers(const char *path, size_t len);
int hk_ingress_head(struct hk_req *r);
int hk_ingress_body(struct hk_req *r, const char *p, size_t n);
void hk_ingress_drop(struct hk_req *r);
void hk_ingress_end(struct hk_req *r);
void hk_ingress_loop_free(struct hk_api_loop *L);

#endif
