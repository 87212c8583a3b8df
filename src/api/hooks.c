/* SPDX-License-Identifier: MIT
 * POST /hooks/{source}: provider deliveries (docs/ingress.md). The source
 * is found when the headers are in (hk_app.head), the body is hashed and
 * its MACs computed while it arrives (hk_app.body), and the handler
 * verifies, answers handshakes, and stores each delivery once. Also the
 * handshakes carried by a query string (GET) and GET
 * /api/webhooks/{id}/body. The process-wide state (the sources snapshot,
 * per-source counters and rate buckets, bytes in flight) is one
 * struct hk_ingress; a request's own state comes from its loop's free
 * list. */
#include <arpa/inet.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include "api/api_int.h"
#include "api/forward.h"
#include "api/stream.h"
#include "api/ingress.h"
#include "api/ui.h"
#include "core/ascii.h"
#include "core/clock.h"
#include "core/crypto.h"
#include "core/log.h"
#include "core/mediatype.h"
#include "core/utf8.h"
#include "http/query.h"
#include "ingress/provider.h"
#include "ingress/refusals.h"
#include "ingress/sources.h"
#include "ingress/verify.h"

#define HOOKS_PREFIX "/hooks/"
#define HOOKS_PREFIX_LEN 7
#define ING_FREE_KEEP 64       /* request states a loop keeps between deliveries */

/* A request's ingress state: from head to end (or drop). */
struct hk_api_ingress {
    struct hk_api_ingress *next;       /* the loop's free list */
    struct hk_sources *snap;           /* a reference, or NULL (unknown source) */
    const struct hk_source *src;       /* in snap */
    int slot;                          /* counters (hk_ingress_slot) */
    uint64_t held;                     /* bytes of hk_ingress.inflight this request holds */
    bool reserved;                     /* the whole Content-Length was reserved at head */
    int refuse_reason;                 /* HK_IR_* of an early refusal */
    unsigned retry_after;              /* for an early 429/503 */
    bool counted;                      /* the result is counted */
    struct hk_verify v;
    struct hk_md_ctx sha;
    struct hk_meta meta;
    uint8_t digest[32];
    char addr[INET6_ADDRSTRLEN];
};

static struct hk_ingress *ing_of(struct hk_req *r)
{
    return api_loop(r)->api->ingress;
}

/* ---- process-wide state ------------------------------------------------ */

struct hk_ingress *hk_ingress_new(void)
{
    struct hk_ingress *g = calloc(1, sizeof *g);
    if (!g)
        abort();
    pthread_mutex_init(&g->mu, NULL);
    /* Slot 0 counts requests for names no source has. */
    strcpy(g->slots[0].name, "(unknown)");
    g->nslots = 1;
    return g;
}

void hk_ingress_free(struct hk_ingress *g)
{
    if (!g)
        return;
    if (g->sources)
        hk_sources_unref(g->sources);
    pthread_mutex_destroy(&g->mu);
    free(g);
}

int hk_ingress_install(struct hk_ingress *g, struct hk_sources *s)
{
    pthread_mutex_lock(&g->mu);
    struct hk_sources *old = g->sources;
    g->sources = s;
    pthread_mutex_unlock(&g->mu);
    if (old)
        hk_sources_unref(old);
    return 0;
}

struct hk_sources *hk_ingress_snapshot(struct hk_ingress *g)
{
    if (!g)
        return NULL;
    pthread_mutex_lock(&g->mu);
    struct hk_sources *s = g->sources;
    if (s)
        hk_sources_ref(s);
    pthread_mutex_unlock(&g->mu);
    return s;
}

int hk_api_sources_load(struct hk_api *a, char *err, size_t errlen)
{
    struct hk_ingress *g = a->ingress;
    if (!g || !a->cfg->sources_path)
        return 0;
    /* Every delivery's body is hashed (SHA-256), whatever its scheme. */
    if (hk_crypto_init(err, errlen) < 0)
        return -1;
    struct hk_sources *s = hk_sources_load(a->cfg->sources_path, a->cfg->max_body_bytes, hk_env, err, errlen);
    if (!s) {
        atomic_fetch_add_explicit(&g->reload_failures, 1, memory_order_relaxed);
        return -1;
    }
    atomic_fetch_add_explicit(&g->reloads, 1, memory_order_relaxed);
    hk_ingress_install(g, s);
    return 0;
}

/* The counter slot of a source name; under g->mu. A full table (names come
 * only from sources files, at most HK_SOURCES_MAX each, so only many
 * reloads with new names fill it) counts under slot 0. */
static int slot_of(struct hk_ingress *g, const char *name, size_t len)
{
    for (unsigned i = 1; i < g->nslots; i++)
        if (strlen(g->slots[i].name) == len && memcmp(g->slots[i].name, name, len) == 0)
            return (int)i;
    if (g->nslots >= HK_INGRESS_SLOTS)
        return 0;
    struct hk_ingress_slot *sl = &g->slots[g->nslots];
    memcpy(sl->name, name, len);
    sl->name[len] = 0;
    return (int)g->nslots++;
}

/* Take a reference to the current snapshot and find `name`. */
static void find_source(struct hk_ingress *g, const char *name, size_t len, struct hk_api_ingress *st)
{
    st->snap = NULL;
    st->src = NULL;
    st->slot = 0;
    if (!g)
        return;
    pthread_mutex_lock(&g->mu);
    if (g->sources && hk_source_name_ok(name, len)) {
        const struct hk_source *src = hk_sources_find(g->sources, name, len);
        if (src) {
            hk_sources_ref(g->sources);
            st->snap = g->sources;
            st->src = src;
            st->slot = slot_of(g, name, len);
        }
    }
    pthread_mutex_unlock(&g->mu);
}

/* Token bucket: 0 when a token was taken, else the seconds to wait. */
static unsigned bucket_take(struct hk_ingress *g, int slot, const struct hk_source *src)
{
    if (src->rate <= 0)
        return 0;
    uint64_t now = hk_mono_ns();
    unsigned wait = 0;
    pthread_mutex_lock(&g->mu);
    struct hk_ingress_slot *sl = &g->slots[slot];
    double burst = src->burst ? (double)src->burst : 1.0;
    if (!sl->bucket_init) {
        sl->tokens = burst;
        sl->bucket_init = true;
    } else {
        sl->tokens += src->rate * (double)(now - sl->last_ns) / 1e9;
    }
    if (sl->tokens > burst)
        sl->tokens = burst;
    sl->last_ns = now;
    if (sl->tokens >= 1.0)
        sl->tokens -= 1.0;
    else
        wait = (unsigned)((1.0 - sl->tokens) / src->rate) + 1;
    pthread_mutex_unlock(&g->mu);
    return wait ? wait : 0;
}

static void count_result(struct hk_ingress *g, struct hk_api_ingress *st, enum hk_ingress_result res, int reason)
{
    if (st->counted)
        return;
    st->counted = true;
    struct hk_ingress_slot *sl = &g->slots[st->slot];
    atomic_fetch_add_explicit(&sl->result[res], 1, memory_order_relaxed);
    if (res == HK_IRES_REJECTED)
        atomic_fetch_add_explicit(&sl->reason[reason], 1, memory_order_relaxed);
}

/* ---- request state ------------------------------------------------------- */

static struct hk_api_ingress *state_get(struct hk_api_loop *L)
{
    struct hk_api_ingress *st = L->ing_free;
    if (st) {
        L->ing_free = st->next;
        L->ing_nfree--;
    } else if (!(st = malloc(sizeof *st)))
        abort();
    memset(st, 0, offsetof(struct hk_api_ingress, v));
    st->v.src = NULL;
    return st;
}

/* Release what the request holds and put its state back on the list. */
static void state_put(struct hk_req *r)
{
    struct hk_api_req *q = api_req(r);
    struct hk_api_ingress *st = q->ing;
    if (!st)
        return;
    q->ing = NULL;
    struct hk_ingress *g = ing_of(r);
    if (st->held)
        atomic_fetch_sub_explicit(&g->inflight, st->held, memory_order_relaxed);
    hk_verify_end(&st->v);
    explicit_bzero(&st->sha, sizeof st->sha);
    if (st->snap)
        hk_sources_unref(st->snap);
    st->snap = NULL;
    st->src = NULL;
    struct hk_api_loop *L = api_loop(r);
    /* A burst of concurrent deliveries does not pin its states: the list
     * keeps a few for the next ones. */
    if (L->ing_nfree >= ING_FREE_KEEP) {
        free(st);
        return;
    }
    st->next = L->ing_free;
    L->ing_free = st;
    L->ing_nfree++;
}

void hk_ingress_loop_free(struct hk_api_loop *L)
{
    while (L->ing_free) {
        struct hk_api_ingress *st = L->ing_free;
        L->ing_free = st->next;
        free(st);
    }
}

/* ---- the transport's hooks ------------------------------------------------ */

static bool hooks_path(const char *path, size_t len)
{
    return len > HOOKS_PREFIX_LEN && memcmp(path, HOOKS_PREFIX, HOOKS_PREFIX_LEN) == 0;
}

/* The transport's one keep_headers hook: deliveries keep every header; the
 * inspector's pages (api/ui.c) read Accept-Encoding and If-None-Match,
 * which the session does not pick out. hk_ingress_head leaves the latter
 * alone. */
bool hk_ingress_keep_headers(const char *path, size_t len)
{
    return hooks_path(path, len) || hk_ui_path(path, len);
}

static const char *hdr_get(const void *ctx, const char *name, size_t *len, unsigned *count)
{
    return hk_req_header(ctx, name, len, count);
}

static bool reserve(struct hk_ingress *g, struct hk_api_ingress *st, uint64_t n, uint64_t cap)
{
    uint64_t cur = atomic_load_explicit(&g->inflight, memory_order_relaxed);
    do {
        if (cur + n > cap)
            return false;
    } while (!atomic_compare_exchange_weak_explicit(&g->inflight, &cur, cur + n, memory_order_relaxed,
                                                    memory_order_relaxed));
    st->held += n;
    return true;
}

int hk_ingress_head(struct hk_req *r)
{
    struct hk_api_req *q = api_req(r);
    if (r->method != HTTP_POST || !hooks_path(r->path, r->path_len))
        return 0;   /* GET handshakes: nothing to stream; /ui: not a delivery */
    struct hk_api_loop *L = api_loop(r);
    struct hk_ingress *g = ing_of(r);
    struct hk_api_ingress *st = state_get(L);
    q->ing = st;
    const char *name = r->path + HOOKS_PREFIX_LEN;
    size_t nlen = r->path_len - HOOKS_PREFIX_LEN;
    find_source(g, name, nlen, st);
    if (!st->src) {
        st->refuse_reason = HK_IR_UNKNOWN_SOURCE;
        return 404;
    }
    const struct hk_source *src = st->src;
    r->body_max = src->max_body ? src->max_body : 1;
    unsigned wait = bucket_take(g, st->slot, src);
    if (wait) {
        st->refuse_reason = HK_IR_RATE_LIMITED;
        st->retry_after = wait;
        return 429;
    }
    uint64_t cap = L->api->cfg->ingress_inflight_bytes;
    if (r->content_length != UINT64_MAX && r->content_length <= src->max_body) {
        if (!reserve(g, st, r->content_length, cap)) {
            st->refuse_reason = HK_IR_BUSY;
            st->retry_after = 1;
            return 503;
        }
        st->reserved = true;
    }
    struct hk_hdrs h = {hdr_get, r};
    hk_verify_begin(&st->v, src, &h, (int64_t)time(NULL));
    hk_md_init(&st->sha, HK_MD_SHA256);
    r->body_cb = true;
    return 0;
}

int hk_ingress_body(struct hk_req *r, const char *p, size_t n)
{
    struct hk_api_ingress *st = api_req(r)->ing;
    if (!st->reserved && !reserve(ing_of(r), st, n, api_cfg(r)->ingress_inflight_bytes)) {
        st->refuse_reason = HK_IR_BUSY;
        st->retry_after = 1;
        return 503;
    }
    hk_verify_update(&st->v, p, n);
    hk_md_update(&st->sha, p, n);
    return 0;
}

void hk_ingress_drop(struct hk_req *r)
{
    state_put(r);
}

void hk_ingress_end(struct hk_req *r)
{
    state_put(r);
}

/* ---- answers ---------------------------------------------------------------- */

static const char *const reason_names[HK_IR__COUNT] = {
    [HK_IR_MISSING_HEADER] = "missing_header",
    [HK_IR_MALFORMED_HEADER] = "malformed_header",
    [HK_IR_TIMESTAMP] = "timestamp_out_of_tolerance",
    [HK_IR_NO_MATCH] = "no_matching_signature",
    [HK_IR_NO_SECRET] = "no_secret",
    [HK_IR_UNKNOWN_SOURCE] = "unknown_source",
    [HK_IR_BODY_TOO_LARGE] = "body_too_large",
    [HK_IR_MEDIA_TYPE] = "unsupported_media_type",
    [HK_IR_RATE_LIMITED] = "rate_limited",
    [HK_IR_BUSY] = "ingress_busy",
    [HK_IR_STORE] = "store_unavailable",
    [HK_IR_HANDSHAKE] = "invalid_handshake",
};

const char *hk_ingress_reason_name(int i)
{
    return i >= 0 && i < HK_IR__COUNT && reason_names[i] ? reason_names[i] : "other";
}

static const char *const result_names[HK_IRES__COUNT] = {"stored", "duplicate", "handshake", "rejected"};

const char *hk_ingress_result_name(int i)
{
    return i >= 0 && i < HK_IRES__COUNT ? result_names[i] : "other";
}

static void record_refusal(struct hk_req *r, struct hk_api_ingress *st, int status, int reason, const char *detail,
                           int64_t skew);

/* A refused delivery: problem+json with the stable reason, counted, and a
 * debug line with the request id. Never the expected MAC or a secret. A
 * refused POST also goes into the ring the inspector reads. */
static void refuse(struct hk_req *r, struct hk_api_ingress *st, int status, int reason, const char *detail,
                   int64_t skew)
{
    struct hk_ingress *g = ing_of(r);
    if (r->method == HTTP_POST)
        record_refusal(r, st, status, reason, detail, skew);
    if (st && g)
        count_result(g, st, HK_IRES_REJECTED, reason);
    else if (g)
        atomic_fetch_add_explicit(&g->slots[0].reason[reason], 1, memory_order_relaxed);
    const char *src = st && st->src ? st->src->name : "";
    hk_log_req(HK_LOG_DEBUG, r->req_id, "ingress refused", "\"source\":\"%s\",\"status\":%d,\"reason\":\"%s\"", src,
               status, reason_names[reason]);
    struct hk_buf *b = hk_resp_body(r);
    b->len = 0;
    hk_buf_printf(b, "{\"type\":\"about:blank\",\"title\":\"%s\",\"status\":%d,\"reason\":\"%s\",\"detail\":",
                  hk_status_reason(status), status, reason_names[reason]);
    hk_buf_put_json_str(b, detail, strlen(detail));
    if (reason == HK_IR_TIMESTAMP)
        hk_buf_printf(b, ",\"skewSeconds\":%lld", (long long)skew);
    hk_resp_put_instance(r, b);
    hk_buf_putc(b, '}');
    if (status == 429 || status == 503) {
        char ra[16];
        int n = snprintf(ra, sizeof ra, "%u", st && st->retry_after ? st->retry_after : 1);
        hk_resp_header(r, "Retry-After", ra, (size_t)n);
    }
    hk_resp_send(r, status, HK_CT_PROBLEM);
}

static void refuse_early(struct hk_req *r)
{
    struct hk_api_ingress *st = api_req(r)->ing;
    int reason = st ? st->refuse_reason : HK_IR_UNKNOWN_SOURCE;
    char d[160];
    switch (r->refused) {
    case 404:
        refuse(r, st, 404, HK_IR_UNKNOWN_SOURCE, "no source has this name", 0);
        return;
    case 413:
        snprintf(d, sizeof d, "the body exceeds this source's limit of %llu bytes",
                 st && st->src ? (unsigned long long)st->src->max_body : 0ULL);
        refuse(r, st, 413, HK_IR_BODY_TOO_LARGE, d, 0);
        return;
    case 429:
        refuse(r, st, 429, HK_IR_RATE_LIMITED, "this source's rate limit is reached; retry later", 0);
        return;
    default:
        refuse(r, st, r->refused, reason == HK_IR_BUSY ? HK_IR_BUSY : reason,
               "too many delivery bytes are being received; retry later", 0);
        return;
    }
}

static void verify_refusal(struct hk_req *r, struct hk_api_ingress *st)
{
    const struct hk_verify *v = &st->v;
    char d[256];
    int reason;
    switch (v->reason) {
    case HK_VR_MISSING_HEADER:
        reason = HK_IR_MISSING_HEADER;
        snprintf(d, sizeof d, "the %s scheme needs the header %s", hk_scheme_name(st->src->scheme),
                 v->header ? v->header : "(signature)");
        break;
    case HK_VR_MALFORMED_HEADER:
        reason = HK_IR_MALFORMED_HEADER;
        snprintf(d, sizeof d, "the header %s is not what the %s scheme sends (or was sent more than once)",
                 v->header ? v->header : "(signature)", hk_scheme_name(st->src->scheme));
        break;
    case HK_VR_TIMESTAMP:
        reason = HK_IR_TIMESTAMP;
        snprintf(d, sizeof d, "the signed timestamp is %lld s from this server's clock; the tolerance is %lld s",
                 (long long)v->skew_s, (long long)st->src->tolerance_s);
        break;
    case HK_VR_NO_SECRET:
        reason = HK_IR_NO_SECRET;
        snprintf(d, sizeof d, "this source has no secret of the kind the signature header needs");
        break;
    default:
        reason = HK_IR_NO_MATCH;
        snprintf(d, sizeof d,
                 "no signature matches any of this source's %zu secret(s): check the secret and that the body "
                 "is passed on byte for byte",
                 st->src->nsecrets);
        break;
    }
    hk_resp_header(r, "WWW-Authenticate", "Signature", 9);
    refuse(r, st, 401, reason, d, v->skew_s);
}

/* Is the media type (parameters ignored) one the source allows? */
static bool type_allowed(const struct hk_source *src, const char *ct, size_t n)
{
    if (src->ncontent_types == 0)
        return true;
    const char *b;
    size_t len = hk_media_base(ct, n, &b);
    if (!len)
        return false;
    for (size_t i = 0; i < src->ncontent_types; i++)
        if (strlen(src->content_types[i]) == len && strncasecmp(src->content_types[i], b, len) == 0)
            return true;
    return false;
}

/* ---- what is stored with a delivery ----------------------------------------- */

/* Headers kept with every delivery, beside the scheme's own. */
static const char *const common_headers[] = {"content-type", "user-agent", NULL};
static const char *const scheme_headers[HK_SCHEME__COUNT][10] = {
    [HK_SCHEME_GITHUB] = {"x-github-event", "x-github-delivery", "x-github-hook-id",
                          "x-github-hook-installation-target-id", "x-github-hook-installation-target-type",
                          "x-hub-signature-256", "x-hub-signature"},
    [HK_SCHEME_GITEA] = {"x-gitea-event", "x-gitea-delivery", "x-gitea-signature", "x-forgejo-event",
                         "x-forgejo-delivery", "x-forgejo-signature", "x-gogs-event", "x-gogs-delivery",
                         "x-gogs-signature"},
    [HK_SCHEME_GITLAB] = {"x-gitlab-event", "x-gitlab-event-uuid", "x-gitlab-webhook-uuid", "x-gitlab-instance"},
    [HK_SCHEME_STRIPE] = {"stripe-signature"},
    [HK_SCHEME_SHOPIFY] = {"x-shopify-topic", "x-shopify-webhook-id", "x-shopify-event-id", "x-shopify-shop-domain",
                           "x-shopify-api-version", "x-shopify-hmac-sha256", "x-shopify-triggered-at"},
    [HK_SCHEME_SLACK] = {"x-slack-signature", "x-slack-request-timestamp", "x-slack-retry-num",
                         "x-slack-retry-reason"},
    [HK_SCHEME_STANDARD] = {"webhook-id", "webhook-timestamp", "webhook-signature", "svix-id", "svix-timestamp",
                            "svix-signature"},
    [HK_SCHEME_DISCORD] = {"x-signature-ed25519", "x-signature-timestamp"},
    [HK_SCHEME_TWITCH] = {"twitch-eventsub-message-id", "twitch-eventsub-message-retry",
                          "twitch-eventsub-message-type", "twitch-eventsub-message-signature",
                          "twitch-eventsub-message-timestamp", "twitch-eventsub-subscription-type",
                          "twitch-eventsub-subscription-version"},
    [HK_SCHEME_ZOOM] = {"x-zm-signature", "x-zm-request-timestamp", "x-zm-trackingid"},
    [HK_SCHEME_META] = {"x-hub-signature-256", "x-hub-signature"},
    [HK_SCHEME_TWILIO] = {"x-twilio-signature", "i-twilio-idempotency-token", "x-home-region"},
};

static bool in_list(const char *const *list, size_t n, const char *name, size_t len)
{
    for (size_t i = 0; i < n && list[i]; i++)
        if (strlen(list[i]) == len && strncasecmp(list[i], name, len) == 0)
            return true;
    return false;
}

static bool eq_name(const char *a, const char *name, size_t len)
{
    return a && strlen(a) == len && strncasecmp(a, name, len) == 0;
}

struct kept {
    const struct hk_source *src;
    struct hk_buf *b;
    const char *seen[64];
    size_t seen_len[64];
    unsigned nseen;
    size_t max;                /* 0, or the most bytes of JSON (a refusal's record) */
    bool cut;                  /* a header went over max: it and those after it are left out */
};

/* Never kept, whatever a sources file says: credentials, and the token
 * schemes' own header (it is the secret). */
static bool forbidden(const struct hk_source *src, const char *name, size_t len)
{
    if ((len == 13 && strncasecmp(name, "authorization", 13) == 0) || (len == 6 && strncasecmp(name, "cookie", 6) == 0) ||
        (len == 19 && strncasecmp(name, "proxy-authorization", 19) == 0))
        return true;
    if (src->scheme == HK_SCHEME_GITLAB && len == 14 && strncasecmp(name, "x-gitlab-token", 14) == 0)
        return true;
    return src->scheme == HK_SCHEME_TOKEN && eq_name(src->header, name, len);
}

static void keep_header(void *arg, const char *name, size_t nlen, const char *value, size_t vlen)
{
    struct kept *k = arg;
    const struct hk_source *src = k->src;
    if (k->cut || forbidden(src, name, nlen))
        return;
    bool want = in_list(common_headers, SIZE_MAX, name, nlen) ||
                in_list(scheme_headers[src->scheme], 10, name, nlen) ||
                in_list((const char *const *)src->headers, src->nheaders, name, nlen) ||
                (src->scheme == HK_SCHEME_HMAC &&
                 (eq_name(src->header, name, nlen) || eq_name(src->timestamp_header, name, nlen) ||
                  eq_name(src->id_header, name, nlen))) ||
                eq_name(src->event_type_header, name, nlen) || eq_name(src->delivery_id_header, name, nlen);
    if (!want || !hk_utf8_valid(value, vlen, false))
        return;
    for (unsigned i = 0; i < k->nseen; i++)
        if (k->seen_len[i] == nlen && strncasecmp(k->seen[i], name, nlen) == 0)
            return;   /* the first value only, as verified */
    if (k->nseen == 64)
        return;
    k->seen[k->nseen] = name;
    k->seen_len[k->nseen++] = nlen;
    size_t before = k->b->len;
    hk_buf_putc(k->b, k->nseen > 1 ? ',' : '{');
    char lower[256];
    size_t n = nlen < sizeof lower ? nlen : sizeof lower;
    for (size_t i = 0; i < n; i++)
        lower[i] = (char)((name[i] >= 'A' && name[i] <= 'Z') ? name[i] + 32 : name[i]);
    hk_buf_put_json_str(k->b, lower, n);
    hk_buf_putc(k->b, ':');
    hk_buf_put_json_str(k->b, value, vlen);
    if (k->max && k->b->len > k->max) {
        k->b->len = before;
        k->nseen--;
        k->cut = true;
    }
}

/* The client: the peer, or - when the peer is a trusted proxy - the
 * rightmost X-Forwarded-For entry that is not one. */
static void client_addr(struct hk_req *r, const struct hk_source *src, char *out, size_t cap)
{
    uint8_t a[16];
    memcpy(a, r->s->peer, 16);
    size_t n;
    unsigned count;
    const char *xff = hk_req_header(r, "x-forwarded-for", &n, &count);
    if (xff && src && src->nproxies && hk_source_trusts(src, a)) {
        size_t end = n;
        for (int hops = 0; hops < 32 && end > 0; hops++) {
            size_t start = end;
            while (start > 0 && xff[start - 1] != ',')
                start--;
            size_t s = start, e = end;
            while (s < e && (xff[s] == ' ' || xff[s] == '\t'))
                s++;
            while (e > s && (xff[e - 1] == ' ' || xff[e - 1] == '\t'))
                e--;
            char tmp[INET6_ADDRSTRLEN];
            uint8_t b[16];
            if (e - s == 0 || e - s >= sizeof tmp)
                break;
            memcpy(tmp, xff + s, e - s);
            tmp[e - s] = 0;
            if (inet_pton(AF_INET6, tmp, b) != 1) {
                struct in_addr v4;
                if (inet_pton(AF_INET, tmp, &v4) != 1)
                    break;
                memset(b, 0, 10);
                b[10] = b[11] = 0xff;
                memcpy(b + 12, &v4, 4);
            }
            memcpy(a, b, 16);
            if (!hk_source_trusts(src, a))
                break;
            end = start ? start - 1 : 0;
        }
    }
    static const uint8_t mapped[12] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff};
    if (memcmp(a, mapped, 12) == 0)
        inet_ntop(AF_INET, a + 12, out, (socklen_t)cap);
    else
        inet_ntop(AF_INET6, a, out, (socklen_t)cap);
}

/* ---- the refusals ring (ingress/refusals.h) ---------------------------------- */

/* Stands in for a source nobody configured when its headers are kept for
 * the ring: the common ones only, since without a source nothing says
 * which others hold secrets. */
static const struct hk_source no_source = {.scheme = HK_SCHEME_NONE};

/* A body up to this size is read for the refused delivery's event type
 * and id; past it only headers are (a refusal stays cheap). */
#define REFUSAL_META_BODY_MAX (64 * 1024)

static void record_refusal(struct hk_req *r, struct hk_api_ingress *st, int status, int reason, const char *detail,
                           int64_t skew)
{
    if (!hooks_path(r->path, r->path_len))
        return;
    struct hk_refusal e;
    memset(&e, 0, sizeof e);
    const struct hk_source *src = st ? st->src : NULL;
    e.time_us = hk_wall_us();
    e.status = status;
    hk_refusal_set(e.reason, sizeof e.reason, reason_names[reason], strlen(reason_names[reason]));
    hk_refusal_set(e.detail, sizeof e.detail, detail, strlen(detail));
    if (reason == HK_IR_TIMESTAMP) {
        e.has_skew = true;
        e.skew_s = skew;
    }
    if (src) {
        e.source_known = true;
        hk_refusal_set(e.source, sizeof e.source, src->name, src->name_len);
        const char *sn = hk_scheme_name(src->scheme);
        hk_refusal_set(e.scheme, sizeof e.scheme, sn, strlen(sn));
    } else {
        hk_refusal_set(e.source, sizeof e.source, r->path + HOOKS_PREFIX_LEN, r->path_len - HOOKS_PREFIX_LEN);
    }
    if (r->content_type)
        hk_refusal_set(e.content_type, sizeof e.content_type, r->content_type, r->content_type_len);
    /* The body went through the hash only when the request got as far as
     * the handler with its source (no early refusal). */
    e.body_read = !r->refused && src;
    if (e.body_read) {
        e.body_bytes = (int64_t)r->body->len;
        hk_md_final(&st->sha, e.body_sha256);
    } else {
        e.body_bytes = r->content_length != UINT64_MAX ? (int64_t)r->content_length : -1;
    }
    if (src) {
        struct hk_hdrs h = {hdr_get, r};
        struct hk_meta m;
        bool body = e.body_read && r->body->len <= REFUSAL_META_BODY_MAX && r->body->p;
        hk_meta_extract(src, &h, r->content_type, r->content_type_len, body ? r->body->p : "",
                        body ? r->body->len : 0, &m);
        if (m.event_type)
            hk_refusal_set(e.event_type, sizeof e.event_type, m.event_type, m.event_type_len);
        if (m.delivery_id)
            hk_refusal_set(e.delivery_id, sizeof e.delivery_id, m.delivery_id, m.delivery_id_len);
    }
    client_addr(r, src, e.client_addr, sizeof e.client_addr);
    /* The kept headers, rendered where the problem document is about to
     * be written (refuse empties it next). */
    struct hk_buf *b = hk_resp_body(r);
    b->len = 0;
    struct kept k = {.src = src ? src : &no_source, .b = b, .max = HK_REFUSAL_HEADERS_MAX - 1};
    hk_req_headers_each(r, keep_header, &k);
    if (!k.nseen)
        hk_buf_putc(b, '{');
    hk_buf_putc(b, '}');
    memcpy(e.headers, b->p, b->len);
    e.headers[b->len] = '\0';
    e.headers_truncated = k.cut;
    b->len = 0;
    hk_refusals_push(&e);
}

/* GET /api/ingress/refusals: the ring, newest first (docs/ui.md). */
void hk_api_ingress_refusals(struct hk_req *r)
{
    int64_t limit = 100, after = 0;
    size_t vlen, used = 0, slen = 0;
    const char *v = hk_query_raw(r->query, r->query_len, "limit", &vlen);
    if (v && hk_parse_int_n(v, vlen, 1, HK_REFUSALS_MAX, &limit) < 0) {
        hk_resp_problem(r, 400, NULL, "query parameter limit must be an integer from 1 to %d", HK_REFUSALS_MAX);
        return;
    }
    const char *a = hk_query_raw(r->query, r->query_len, "after", &vlen);
    if (a && hk_parse_int_n(a, vlen, 0, INT64_MAX, &after) < 0) {
        hk_resp_problem(r, 400, NULL, "query parameter after must be a sequence number (an integer from 0)");
        return;
    }
    const char *src;
    struct hk_api_req *q = api_req(r);
    if (hk_api_query_text(r, "source", 4 * HK_SOURCE_NAME_MAX, q->scratch, sizeof q->scratch, &used, &src, &slen) <
        0)
        return;
    struct hk_buf *b = hk_resp_body(r);
    b->len = 0;
    hk_refusals_render(b, src, slen, a != NULL, (uint64_t)after, (unsigned)limit);
    hk_resp_header(r, "Cache-Control", "no-store", 8);
    hk_resp_send(r, 200, HK_CT_JSON);
}

/* ---- POST /hooks/{source} ---------------------------------------------------- */

static void insert_row(struct hk_store_op *op, const struct hk_webhook *row)
{
    struct hk_req *r = op->data;
    api_req(r)->op.id = row->id;
    if (!op->replayed) {
        hk_forward_inserted(api_loop(r), op, row);
        hk_stream_committed(api_loop(r), row->id);
    }
}

static void insert_done(struct hk_store_op *op)
{
    struct hk_req *r = op->data;
    struct hk_api_ingress *st = api_req(r)->ing;
    hk_api_store_end(r, HK_OP_INSERT, op->status);
    hk_forward_insert_end(api_loop(r), op);
    /* The stored strings lived in the response body buffer until now. */
    struct hk_buf *b = hk_resp_body(r);
    b->len = 0;
    if (op->status < 0) {
        count_result(ing_of(r), st, HK_IRES_REJECTED, HK_IR_STORE);
        hk_resp_store_error(r, op->status);
        return;
    }
    count_result(ing_of(r), st, op->replayed ? HK_IRES_DUPLICATE : HK_IRES_STORED, 0);
    if (!op->replayed)
        hk_obs_received(api_loop(r)->obs, st->src->name, st->src->name_len);
    hk_buf_printf(b, "{\"id\":%lld,\"duplicate\":%s}", (long long)op->id, op->replayed ? "true" : "false");
    char loc[48];
    int n = snprintf(loc, sizeof loc, "/api/webhooks/%lld", (long long)op->id);
    hk_resp_header(r, "Location", loc, (size_t)n);
    hk_resp_send(r, op->replayed ? 200 : 201, HK_CT_JSON);
}

static void answer_handshake(struct hk_req *r, struct hk_api_ingress *st, enum hk_handshake kind, int status,
                             const char *ctype)
{
    struct hk_ingress *g = ing_of(r);
    if (status != 200) {
        hk_resp_body(r)->len = 0;
        refuse(r, st, status, HK_IR_HANDSHAKE,
               status == 403 ? "the verify token does not match this source's"
                             : "a malformed handshake (a bad escape, a repeated parameter, or no challenge)",
               0);
        return;
    }
    if (st)
        count_result(g, st, HK_IRES_HANDSHAKE, 0);
    atomic_fetch_add_explicit(&g->handshakes[kind], 1, memory_order_relaxed);
    /* Echoed challenges are the caller's bytes: never sniffed as HTML. */
    hk_resp_header(r, "X-Content-Type-Options", "nosniff", 7);
    /* Discord's webhook-event PING wants 204, no body, and a Content-Type
     * all the same (hk_resp_send writes none for an empty 204). */
    if (!hk_resp_body(r)->len) {
        if (ctype)
            hk_resp_header(r, "Content-Type", ctype, strlen(ctype));
        hk_resp_send(r, 204, NULL);
        return;
    }
    hk_resp_send(r, 200, ctype);
}

void hk_api_hooks_post(struct hk_req *r)
{
    struct hk_api_req *q = api_req(r);
    struct hk_api_ingress *st = q->ing;
    if (r->refused || !st || !st->src) {
        refuse_early(r);
        return;
    }
    const struct hk_source *src = st->src;
    const char *body = r->body->p ? r->body->p : "";
    size_t blen = r->body->len;
    /* Microsoft Graph's validation comes before any signature exists. */
    if (src->graph_validation && r->query) {
        const char *ctype = NULL;
        enum hk_handshake kind = HK_HS_NONE;
        hk_resp_body(r)->len = 0;
        int status = hk_handshake_query(src, r->query, r->query_len, hk_resp_body(r), &ctype, &kind);
        if (status) {
            answer_handshake(r, st, kind, status, ctype);
            return;
        }
    }
    if (!type_allowed(src, r->content_type, r->content_type_len)) {
        refuse(r, st, 415, HK_IR_MEDIA_TYPE, "this source does not accept this Content-Type", 0);
        return;
    }
    if (hk_verify_finish(&st->v, body, blen) != HK_VR_OK) {
        verify_refusal(r, st);
        return;
    }
    struct hk_hdrs h = {hdr_get, r};
    const char *ctype = NULL;
    struct hk_buf *b = hk_resp_body(r);
    b->len = 0;
    enum hk_handshake kind = hk_handshake_post(src, &h, body, blen, st->v.matched, b, &ctype);
    if (kind != HK_HS_NONE) {
        answer_handshake(r, st, kind, 200, ctype);
        return;
    }
    b->len = 0;
    hk_meta_extract(src, &h, r->content_type, r->content_type_len, body, blen, &st->meta);
    hk_md_final(&st->sha, st->digest);
    client_addr(r, src, st->addr, sizeof st->addr);

    /* The JSON texts stored with the row live in the response body buffer
     * until the store is done with them (insert_done empties it). */
    struct kept k = {.src = src, .b = b};
    hk_req_headers_each(r, keep_header, &k);
    if (!k.nseen)
        hk_buf_putc(b, '{');
    hk_buf_putc(b, '}');
    size_t headers_len = b->len;
    size_t verified_off = b->len;
    if (src->scheme != HK_SCHEME_NONE) {
        hk_buf_puts(b, "{\"scheme\":");
        const char *sn = hk_scheme_name(src->scheme);
        hk_buf_put_json_str(b, sn, strlen(sn));
        if (st->v.matched >= 0 && (size_t)st->v.matched < src->nsecrets) {
            const char *ref = src->secrets[st->v.matched].ref;
            hk_buf_puts(b, ",\"secret\":");
            hk_buf_put_json_str(b, ref, strlen(ref));
        }
        hk_buf_putc(b, '}');
    }
    size_t verified_len = b->len - verified_off;

    struct hk_store_op *op = &q->op;
    memset(op, 0, sizeof *op);
    op->kind = HK_OP_INSERT;
    struct hk_webhook *w = &op->row;
    w->source = src->name;
    w->source_len = src->name_len;
    w->event_type = st->meta.event_type ? st->meta.event_type : "";
    w->event_type_len = st->meta.event_type ? st->meta.event_type_len : 0;
    w->ingress = true;
    w->body = (const uint8_t *)body;
    w->body_len = blen;
    w->body_sha256 = st->digest;
    if (r->content_type && hk_ascii_printable(r->content_type, r->content_type_len, 0x20)) {
        w->content_type = r->content_type;
        w->content_type_len = r->content_type_len;
    }
    w->delivery_id = st->meta.delivery_id;
    w->delivery_id_len = st->meta.delivery_id ? st->meta.delivery_id_len : 0;
    w->headers = b->p;
    w->headers_len = headers_len;
    w->verified = verified_len ? b->p + verified_off : NULL;
    w->verified_len = verified_len;
    w->client_addr = st->addr;
    w->client_addr_len = strlen(st->addr);
    op->on_row = insert_row;
    op->on_done = insert_done;
    op->data = r;
    hk_forward_prepare_insert(api_loop(r), op);
    hk_api_store_begin(r);
    int rc = hk_store_submit(api_loop(r)->sl, op);
    if (rc < 0) {
        hk_forward_insert_end(api_loop(r), op);
        hk_api_store_end(r, HK_OP_INSERT, rc);
        b->len = 0;
        count_result(ing_of(r), st, HK_IRES_REJECTED, HK_IR_STORE);
        hk_resp_store_error(r, rc);
    }
}

/* ---- GET /hooks/{source}: handshakes by query string ------------------------- */

void hk_api_hooks_get(struct hk_req *r)
{
    struct hk_api_req *q = api_req(r);
    struct hk_ingress *g = ing_of(r);
    const char *name = q->param;
    size_t nlen = q->param_len;
    struct hk_api_ingress tmp;
    memset(&tmp, 0, offsetof(struct hk_api_ingress, v));
    find_source(g, name, nlen, &tmp);
    if (!tmp.src) {
        refuse(r, NULL, 404, HK_IR_UNKNOWN_SOURCE, "no source has this name", 0);
        return;
    }
    const char *ctype = NULL;
    enum hk_handshake kind = HK_HS_NONE;
    hk_resp_body(r)->len = 0;
    int status = r->query ? hk_handshake_query(tmp.src, r->query, r->query_len, hk_resp_body(r), &ctype, &kind) : 0;
    if (status) {
        answer_handshake(r, &tmp, kind, status, ctype);
    } else {
        hk_resp_problem_reason(r, 400, "not_a_handshake",
                               "GET on a hook answers a subscription handshake only "
                               "(hub.mode=subscribe or validationToken); deliveries are POSTed");
    }
    hk_sources_unref(tmp.snap);
}

/* ---- GET /api/webhooks/{id}/body ------------------------------------------- */

/* A download's extension: from the content type when it names a kind
 * that no browser runs when opened from disk, else "bin" (never html or
 * svg: a saved file opened locally would run its script). */
static const char *download_ext(const char *ct, size_t n)
{
    const char *b;
    size_t len = ct ? hk_media_base(ct, n, &b) : 0;
    static const struct {
        const char *type, *ext;
    } map[] = {
        {"application/json", "json"}, {"text/plain", "txt"}, {"application/xml", "xml"},
        {"text/xml", "xml"}, {"application/x-www-form-urlencoded", "txt"}, {"text/csv", "csv"},
    };
    for (size_t i = 0; i < sizeof map / sizeof map[0]; i++)
        if (strlen(map[i].type) == len && strncasecmp(map[i].type, b, len) == 0)
            return map[i].ext;
    if (len > 17 && strncasecmp(b + len - 5, "+json", 5) == 0 && strncasecmp(b, "application/", 12) == 0)
        return "json";
    return "bin";
}

static void body_row(struct hk_store_op *op, const struct hk_webhook *row)
{
    struct hk_req *r = op->data;
    struct hk_buf *b = hk_resp_body(r);
    b->len = 0;
    if (!row->ingress) {
        op->replayed = true;   /* marks "no raw body" for body_done */
        return;
    }
    hk_buf_put(b, row->body_len ? (const char *)row->body : "", row->body_len);
    const char *ct = row->content_type ? row->content_type : "application/octet-stream";
    size_t ctlen = row->content_type ? row->content_type_len : 24;
    /* The bytes are the sender's, served on hookd's origin where the
     * inspector's session cookie lives: never sniffed, and a stored HTML
     * or SVG body opened here runs no script and loads nothing. */
    hk_resp_header(r, "X-Content-Type-Options", "nosniff", 7);
    static const char csp[] = "sandbox; default-src 'none'";
    hk_resp_header(r, "Content-Security-Policy", csp, sizeof csp - 1);
    size_t dn;
    const char *dl = hk_query_raw(r->query, r->query_len, "download", &dn);
    if (dl && ((dn == 1 && dl[0] == '1') || (dn == 4 && memcmp(dl, "true", 4) == 0))) {
        char v[96];
        int n = snprintf(v, sizeof v, "attachment; filename=\"webhook-%lld.%s\"", (long long)row->id,
                         download_ext(row->content_type, row->content_type_len));
        hk_resp_header(r, "Content-Disposition", v, (size_t)n);
    }
    /* The Content-Type of the delivery, given through the extra headers
     * (resp.c writes its own only when asked to). */
    hk_resp_header(r, "Content-Type", ct, ctlen);
}

static void body_done(struct hk_store_op *op)
{
    struct hk_req *r = op->data;
    hk_api_store_end(r, HK_OP_GET, op->status);
    if (op->status < 0) {
        r->s->rhdr.len = 0;
        hk_resp_store_error(r, op->status);
    } else if (op->replayed) {
        r->s->rhdr.len = 0;
        hk_resp_body(r)->len = 0;
        hk_resp_problem_reason(r, 404, "no_raw_body",
                               "this webhook was posted to /api/webhooks and has no raw body; read it at "
                               "/api/webhooks/{id}");
    } else {
        hk_resp_send(r, 200, NULL);
    }
}

void hk_api_webhook_body(struct hk_req *r)
{
    struct hk_api_req *q = api_req(r);
    int64_t id;
    if (hk_api_parse_id(q->param, q->param_len, &id) < 0) {
        hk_resp_problem(r, 400, NULL, "id must be a positive integer");
        return;
    }
    struct hk_store_op *op = &q->op;
    memset(op, 0, sizeof *op);
    op->kind = HK_OP_GET;
    op->id = id;
    op->on_row = body_row;
    op->on_done = body_done;
    op->data = r;
    hk_api_store_begin(r);
    int rc = hk_store_submit(api_loop(r)->sl, op);
    if (rc < 0) {
        hk_api_store_end(r, HK_OP_GET, rc);
        hk_resp_store_error(r, rc);
    }
}
