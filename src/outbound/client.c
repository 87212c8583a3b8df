/* SPDX-License-Identifier: MIT
 * The outbound HTTP client (client.h): libcurl's multi socket interface
 * driven by a libuv loop. curl says which sockets to watch (on_socket: a
 * uv_poll per socket) and when to wake it (on_curl_timer: one uv_timer);
 * the loop's events go back through curl_multi_socket_action, and finished
 * transfers are collected with curl_multi_info_read afterwards, outside any
 * curl callback, so that a done may send again or close the client. */
#include "outbound/client.h"

#include <assert.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "core/clock.h"
#include "core/err.h"
#include "outbound/curl_api.h"

#define MAX_CONNS_CAP 65536u
#define MAX_RESPONSE_CAP ((size_t)16 << 20)
/* Delta-seconds above this are read as this (about 31 years). */
#define RETRY_AFTER_MAX_S 1000000000LL

/* A socket curl asked us to watch. Found by its descriptor in o->byfd, never
 * through curl_multi_assign: a pointer kept inside curl could outlive the
 * watch if curl ever closed a socket without saying CURL_POLL_REMOVE first. */
struct sock {
    uv_poll_t h;
    struct hk_out *o;
    curl_socket_t fd;
    int events;                /* what h is started for; 0 when stopped */
    bool tcp;                  /* an AF_INET or AF_INET6 socket (not the resolver's socketpair) */
    bool seen_in;              /* curl has waited to read from it: a connection in use */
    bool parked;               /* its transfer is over and curl keeps the connection (on_socket) */
    struct sock *next;         /* o->spare */
};

#define HDR_LINES 16           /* header lines a request sends without an allocation */

/* A request slot. There are max_conns of them; each keeps its easy handle
 * (and so libcurl's per-handle state) and its response buffer for the
 * requests that come after. */
struct xfer {
    struct hk_out *o;
    CURL *easy;                /* made on the slot's first request */
    struct hk_out_req *req;    /* NULL while the slot is free */
    /* This request's header lines: in `line` when they fit (curl only
     * reads the list, and the strings are the request's, alive until it
     * ends), else a list from curl_slist_append in `hdrs`. */
    struct curl_slist line[HDR_LINES];
    struct curl_slist *hdrs;
    char *url;                 /* the URL set on `easy` last (curl keeps a copy of its own) */
    struct xfer *prev, *next;  /* o->busy while in flight, o->free (next only) while free */
    struct xfer *rnext;        /* o->refused */
    bool in_multi;             /* added to o->multi */
    int fail;                  /* refused before curl saw it: an HK_E* code, with fail_text */
    const char *fail_text;
    int64_t retry_after_ms;
    char *body;                /* the response body's first max_response bytes */
    size_t body_len, body_cap;
    char errbuf[CURL_ERROR_SIZE];
};

struct hk_out {
    uv_loop_t *loop;
    CURLM *multi;
    struct hk_out_opts opts;
    uv_timer_t timer;          /* curl's timeout */
    uv_timer_t defer;          /* ends refused requests on the next turn of the loop */
    struct xfer *slots;        /* opts.max_conns */
    struct xfer *free;         /* free slots, a stack */
    struct xfer *busy;         /* slots in flight */
    struct xfer *refused;      /* slots in flight that wait for `defer` */
    size_t inflight;
    struct sock **byfd;        /* watched sockets by descriptor */
    size_t nbyfd;
    /* Closed socks for reuse: curl drops a connection's socket at the end
     * of every transfer and takes it up again with the next one. At most
     * as many as were ever watched at once. */
    struct sock *spare;
    unsigned nclosing;         /* uv handles closing */
    bool closing;
};

/* ---- typed option setters ---------------------------------------------- */

/* curl_easy_setopt is variadic: a value of the wrong width is read as
 * garbage. curl.h's type checks are off (curl_api.h), so every value but a
 * callback goes through one of these, whose prototypes convert it
 * (callbacks are passed as variables of curl's own callback types). */
static CURLcode opt_long(CURL *e, CURLoption opt, long v)
{
    return hk_curl.curl_easy_setopt(e, opt, v);
}

static CURLcode opt_ptr(CURL *e, CURLoption opt, const void *v)
{
    return hk_curl.curl_easy_setopt(e, opt, v);
}

static CURLcode opt_off(CURL *e, CURLoption opt, curl_off_t v)
{
    return hk_curl.curl_easy_setopt(e, opt, v);
}

static CURLMcode mopt_long(CURLM *m, CURLMoption opt, long v)
{
    return hk_curl.curl_multi_setopt(m, opt, v);
}

static CURLMcode mopt_ptr(CURLM *m, CURLMoption opt, const void *v)
{
    return hk_curl.curl_multi_setopt(m, opt, v);
}

/* ---- closing ------------------------------------------------------------ */

static void maybe_free(struct hk_out *o)
{
    if (!o->closing || o->nclosing > 0)
        return;
    for (uint32_t i = 0; i < o->opts.max_conns; i++) {
        free(o->slots[i].body);
        free(o->slots[i].url);
    }
    free(o->slots);
    free(o->byfd);
    while (o->spare) {
        struct sock *s = o->spare;
        o->spare = s->next;
        free(s);
    }
    free(o);
}

static void on_handle_closed(uv_handle_t *h)
{
    struct hk_out *o = h->data;
    assert(o->nclosing > 0);
    o->nclosing--;
    maybe_free(o);
}

static void on_sock_closed(uv_handle_t *h)
{
    struct sock *s = h->data;
    struct hk_out *o = s->o;
    s->next = o->spare;
    o->spare = s;
    assert(o->nclosing > 0);
    o->nclosing--;
    maybe_free(o);
}

/* Stop watching s and close its handle. Both happen now, before curl
 * closes the descriptor: uv_close stops the poll and removes the
 * descriptor from epoll at once (only the callback waits), so a socket that
 * curl opens next with the same number gets a clean registration. */
static void sock_drop(struct hk_out *o, struct sock *s)
{
    assert((size_t)s->fd < o->nbyfd && o->byfd[s->fd] == s);
    o->byfd[s->fd] = NULL;
    o->nclosing++;
    uv_close((uv_handle_t *)&s->h, on_sock_closed);
}

static struct sock *sock_of(const struct hk_out *o, curl_socket_t fd)
{
    return fd >= 0 && (size_t)fd < o->nbyfd ? o->byfd[fd] : NULL;
}

/* ---- completion ---------------------------------------------------------- */

/* What a curl failure means for the caller, in words that never repeat the
 * URL: the errno class and a fixed text. */
static int classify(CURLcode cc, const char **text)
{
    switch (cc) {
    case CURLE_OPERATION_TIMEDOUT:
        *text = "timed out";
        return HK_ETIMEDOUT;
    case CURLE_UNSUPPORTED_PROTOCOL:
        *text = "URL scheme not allowed (http or https)";
        return HK_EINVAL;
    case CURLE_URL_MALFORMAT:
        *text = "malformed URL";
        return HK_EINVAL;
    case CURLE_COULDNT_RESOLVE_HOST:
        *text = "could not resolve host";
        return HK_EUNAVAIL;
    case CURLE_COULDNT_RESOLVE_PROXY:
        *text = "could not resolve proxy";
        return HK_EUNAVAIL;
    case CURLE_COULDNT_CONNECT:
        *text = "connect failed";
        return HK_EUNAVAIL;
    case CURLE_PEER_FAILED_VERIFICATION:
        *text = "TLS certificate not trusted";
        return HK_EUNAVAIL;
    case CURLE_SSL_CONNECT_ERROR:
    case CURLE_SSL_CERTPROBLEM:
    case CURLE_SSL_CIPHER:
    case CURLE_SSL_CACERT_BADFILE:
    case CURLE_SSL_ISSUER_ERROR:
    case CURLE_SSL_CRL_BADFILE:
    case CURLE_SSL_PINNEDPUBKEYNOTMATCH:
    case CURLE_SSL_INVALIDCERTSTATUS:
    case CURLE_SSL_ENGINE_NOTFOUND:
    case CURLE_SSL_ENGINE_SETFAILED:
    case CURLE_SSL_ENGINE_INITFAILED:
    case CURLE_USE_SSL_FAILED:
        *text = "TLS handshake failed";
        return HK_EUNAVAIL;
    case CURLE_SEND_ERROR:
        *text = "send failed";
        return HK_EUNAVAIL;
    case CURLE_RECV_ERROR:
        *text = "connection reset";
        return HK_EUNAVAIL;
    case CURLE_GOT_NOTHING:
        *text = "empty reply";
        return HK_EUNAVAIL;
    case CURLE_PARTIAL_FILE:
        *text = "response cut short";
        return HK_EUNAVAIL;
    case CURLE_WEIRD_SERVER_REPLY:
        *text = "malformed response";
        return HK_EUNAVAIL;
    case CURLE_HTTP2:
    case CURLE_HTTP2_STREAM:
        *text = "HTTP/2 error";
        return HK_EUNAVAIL;
    case CURLE_OUT_OF_MEMORY:
        *text = "out of memory";
        return HK_EUNAVAIL;
    default:
        *text = "transfer failed";
        return HK_EUNAVAIL;
    }
}

/* The error line for a failed transfer: the fixed text, curl's code and,
 * when the URL carries no '@' (so no user:password can be in it), curl's
 * own message, which names the host at most. Control bytes become spaces. */
static int describe(CURLcode cc, const char *url, const char *errbuf, char *out, size_t outlen)
{
    const char *text;
    int err = classify(cc, &text);
    int n = snprintf(out, outlen, "%s (curl %d)", text, (int)cc);
    if (n < 0 || (size_t)n >= outlen)
        return err;
    if (errbuf[0] && !strchr(url, '@')) {
        size_t len = strnlen(errbuf, CURL_ERROR_SIZE - 1);
        while (len > 0 && (errbuf[len - 1] == '\n' || errbuf[len - 1] == '\r'))
            len--;
        char *p = out + n;
        size_t room = outlen - (size_t)n;
        if (len > 0 && room > 3) {
            *p++ = ':';
            *p++ = ' ';
            room -= 2;
            for (size_t i = 0; i < len && room > 1; i++, room--) {
                unsigned char c = (unsigned char)errbuf[i];
                *p++ = c < 0x20 || c == 0x7f ? ' ' : (char)c;
            }
            *p = 0;
        }
    }
    return err;
}

/* End x's request and call its done. The slot goes back to the free list
 * before done runs, so that done can send again at once; the body and the
 * error text handed to done stay valid meanwhile: a new request on this
 * slot writes to its buffer only from a later turn of the loop. */
static void finish(struct hk_out *o, struct xfer *x, CURLcode cc)
{
    struct hk_out_req *r = x->req;
    struct hk_out_result res = {.retry_after_ms = -1};
    char text[CURL_ERROR_SIZE + 64];
    assert(r);
    if (x->in_multi) {
        hk_curl.curl_multi_remove_handle(o->multi, x->easy);
        x->in_multi = false;
    }
    if (x->fail) {
        res.err = x->fail;
        res.error = x->fail_text;
    } else if (cc == CURLE_OK) {
        long status = 0;
        hk_curl.curl_easy_getinfo(x->easy, CURLINFO_RESPONSE_CODE, &status);
        res.status = (int)status;
        res.retry_after_ms = x->retry_after_ms;
        res.body = x->body;
        res.body_len = x->body_len;
    } else {
        res.err = describe(cc, r->url, x->errbuf, text, sizeof text);
        res.error = text;
    }
    if (x->hdrs)
        hk_curl.curl_slist_free_all(x->hdrs);
    x->hdrs = NULL;
    x->fail = 0;
    x->req = NULL;
    if (x->prev)
        x->prev->next = x->next;
    else
        o->busy = x->next;
    if (x->next)
        x->next->prev = x->prev;
    x->prev = NULL;
    x->next = o->free;
    o->free = x;
    assert(o->inflight > 0);
    o->inflight--;
    r->done(r, &res);
}

/* Complete what curl has finished. Runs after curl_multi_socket_action has
 * returned, never from inside a curl callback; stops when a done closed the
 * client (the multi handle is gone then). */
static void drain(struct hk_out *o)
{
    CURLMsg *m;
    int left;
    while (!o->closing && (m = hk_curl.curl_multi_info_read(o->multi, &left))) {
        if (m->msg != CURLMSG_DONE)
            continue;
        CURL *e = m->easy_handle;
        CURLcode cc = m->data.result;
        char *priv = NULL;
        hk_curl.curl_easy_getinfo(e, CURLINFO_PRIVATE, &priv);
        finish(o, (struct xfer *)(void *)priv, cc);
    }
}

static void on_defer(uv_timer_t *t)
{
    struct hk_out *o = t->data;
    while (!o->closing && o->refused) {
        struct xfer *x = o->refused;
        o->refused = x->rnext;
        x->rnext = NULL;
        finish(o, x, CURLE_OK);
    }
}

/* Let x's request end with `err` on the next turn of the loop. */
static void refuse(struct hk_out *o, struct xfer *x, int err, const char *why)
{
    x->fail = err;
    x->fail_text = why;
    x->rnext = o->refused;
    o->refused = x;
    uv_timer_start(&o->defer, on_defer, 0, 0);
}

/* ---- curl's callbacks ----------------------------------------------------- */

static void on_poll(uv_poll_t *h, int status, int events)
{
    struct sock *s = h->data;
    struct hk_out *o = s->o;
    int flags = 0, running;
    if (s->parked) {
        /* An idle connection became readable: its server closed it (or
         * said something unasked). curl finds that out when it next takes
         * the connection, as it would unwatched; until then, no more
         * wake-ups for it. */
        uv_poll_stop(&s->h);
        s->events = 0;
        return;
    }
    if (status < 0) {
        /* libuv has stopped the handle; curl fails the transfer or asks
         * for the socket again. */
        s->events = 0;
        flags = CURL_CSELECT_ERR;
    } else {
        if (events & UV_READABLE)
            flags |= CURL_CSELECT_IN;
        if (events & UV_WRITABLE)
            flags |= CURL_CSELECT_OUT;
    }
    /* s may be closed inside this call: only fd and o are used after. */
    hk_curl.curl_multi_socket_action(o->multi, s->fd, flags, &running);
    drain(o);
}

static void on_timer(uv_timer_t *t)
{
    struct hk_out *o = t->data;
    int running;
    hk_curl.curl_multi_socket_action(o->multi, CURL_SOCKET_TIMEOUT, 0, &running);
    drain(o);
}

/* CURLMOPT_TIMERFUNCTION. A timeout of 0 is a timer that fires on this or
 * the next turn of the loop: socket_action is never called from here. */
static int on_curl_timer(CURLM *m, long ms, void *arg)
{
    struct hk_out *o = arg;
    (void)m;
    if (o->closing)
        return 0;
    if (ms < 0)
        uv_timer_stop(&o->timer);
    else
        uv_timer_start(&o->timer, on_timer, (uint64_t)ms, 0);
    return 0;
}

/* CURLMOPT_SOCKETFUNCTION: watch fd for what curl wants. */
static int on_socket(CURL *e, curl_socket_t fd, int what, void *arg, void *sockp)
{
    struct hk_out *o = arg;
    struct sock *s = sock_of(o, fd);
    (void)e;
    (void)sockp;
    if (what == CURL_POLL_REMOVE) {
        /* A connection curl has read from keeps its watch for input while
         * it waits in curl's cache: the next request on it then costs no
         * epoll change, where stopping and starting again cost three or
         * four. Such a socket is active in curl's sense (it has connected),
         * so curl closes it through on_closesocket, which ends the watch
         * before the descriptor goes. Any other socket (a connect that
         * lost, the resolver's socketpair, which curl closes itself) stops
         * being watched now. */
        if (s && s->tcp && s->seen_in) {
            s->parked = true;
            if (s->events != UV_READABLE) {
                s->events = UV_READABLE;
                if (uv_poll_start(&s->h, UV_READABLE, on_poll) < 0)
                    s->events = 0;
            }
        } else if (s) {
            sock_drop(o, s);
        }
        return 0;
    }
    if (fd < 0)
        return 0;
    if (!s) {
        if ((size_t)fd >= o->nbyfd) {
            size_t n = o->nbyfd ? o->nbyfd : 64;
            while (n <= (size_t)fd)
                n *= 2;
            struct sock **p = realloc(o->byfd, n * sizeof *p);
            if (!p)
                abort();
            memset(p + o->nbyfd, 0, (n - o->nbyfd) * sizeof *p);
            o->byfd = p;
            o->nbyfd = n;
        }
        s = o->spare;
        if (s)
            o->spare = s->next;
        else if (!(s = malloc(sizeof *s)))
            abort();
        memset(s, 0, sizeof *s);
        /* Never -1 to curl: that marks the whole multi handle dead. A
         * socket left unwatched ends in the transfer's timeout. */
        if (uv_poll_init(o->loop, &s->h, fd) < 0) {
            s->next = o->spare;
            o->spare = s;
            return 0;
        }
        s->o = o;
        s->fd = fd;
        s->h.data = s;
        int dom = 0;
        socklen_t dlen = sizeof dom;
        s->tcp = getsockopt(fd, SOL_SOCKET, SO_DOMAIN, &dom, &dlen) == 0 && (dom == AF_INET || dom == AF_INET6);
        o->byfd[fd] = s;
    }
    s->parked = false;
    if (what & CURL_POLL_IN)
        s->seen_in = true;
    int events = (what & CURL_POLL_IN ? UV_READABLE : 0) | (what & CURL_POLL_OUT ? UV_WRITABLE : 0);
    if (events == s->events)
        return 0;
    s->events = events;
    if (!events)
        uv_poll_stop(&s->h);
    else if (uv_poll_start(&s->h, events, on_poll) < 0)
        s->events = 0;
    return 0;
}

/* CURLOPT_CLOSESOCKETFUNCTION: curl says CURL_POLL_REMOVE before closing a
 * socket it watched; should it ever not, the watch ends here, before the
 * descriptor is closed and its number reused. */
static int on_closesocket(void *arg, curl_socket_t fd)
{
    struct hk_out *o = arg;
    struct sock *s = sock_of(o, fd);
    if (s)
        sock_drop(o, s);
    return close(fd);
}

/* The response body: the first max_response bytes are kept, the rest is
 * counted as read and dropped (only the status matters to the caller). */
static size_t on_write(char *p, size_t size, size_t nmemb, void *arg)
{
    struct xfer *x = arg;
    size_t len = size * nmemb, max = x->o->opts.max_response;
    if (x->body_len < max) {
        size_t take = len < max - x->body_len ? len : max - x->body_len;
        if (x->body_len + take > x->body_cap) {
            size_t cap = x->body_cap ? x->body_cap : 4096;
            while (cap < x->body_len + take)
                cap *= 2;
            if (cap > max)
                cap = max;
            char *b = realloc(x->body, cap);
            if (!b)
                abort();
            x->body = b;
            x->body_cap = cap;
        }
        memcpy(x->body + x->body_len, p, take);
        x->body_len += take;
    }
    return len;
}

static bool is_ows(char c)
{
    return c == ' ' || c == '\t' || c == '\r' || c == '\n';
}

static int two_digits(const char *p)
{
    if (p[0] < '0' || p[0] > '9' || p[1] < '0' || p[1] > '9')
        return -1;
    return (p[0] - '0') * 10 + (p[1] - '0');
}

/* An IMF-fixdate ("Sun, 06 Nov 1994 08:49:37 GMT", RFC 9110 5.6.7) as a
 * Unix time, or -1. By hand rather than strptime: %a and %b follow the
 * locale. */
static int64_t parse_imf_fixdate(const char *p, size_t n)
{
    static const char months[] = "JanFebMarAprMayJunJulAugSepOctNovDec";
    static const char days[] = "SunMonTueWedThuFriSat";
    if (n != 29 || p[3] != ',' || p[4] != ' ' || p[7] != ' ' || p[11] != ' ' || p[16] != ' ' ||
        p[19] != ':' || p[22] != ':' || p[25] != ' ' || memcmp(p + 26, "GMT", 3) != 0)
        return -1;
    bool day_ok = false;
    for (int i = 0; i < 7 && !day_ok; i++)
        day_ok = memcmp(p, days + 3 * i, 3) == 0;
    int mon = -1;
    for (int i = 0; i < 12 && mon < 0; i++)
        if (memcmp(p + 8, months + 3 * i, 3) == 0)
            mon = i;
    int mday = two_digits(p + 5), y1 = two_digits(p + 12), y2 = two_digits(p + 14);
    int hh = two_digits(p + 17), mm = two_digits(p + 20), ss = two_digits(p + 23);
    if (!day_ok || mon < 0 || mday < 1 || mday > 31 || y1 < 0 || y2 < 0 || hh < 0 || hh > 23 ||
        mm < 0 || mm > 59 || ss < 0 || ss > 60)
        return -1;
    struct tm tm = {.tm_year = y1 * 100 + y2 - 1900, .tm_mon = mon, .tm_mday = mday,
                    .tm_hour = hh, .tm_min = mm, .tm_sec = ss};
    time_t t = timegm(&tm);
    /* timegm moves "31 Feb" into March: such a date is not one. */
    if (t == (time_t)-1 || tm.tm_mday != mday || tm.tm_mon != mon)
        return -1;
    return (int64_t)t;
}

/* A Retry-After value (RFC 9110 10.2.3) in milliseconds from now, >= 0, or
 * -1 when it is neither delta-seconds nor an IMF-fixdate. */
static int64_t parse_retry_after(const char *p, size_t n, int64_t now_us)
{
    while (n > 0 && is_ows(*p))
        p++, n--;
    while (n > 0 && is_ows(p[n - 1]))
        n--;
    if (n == 0)
        return -1;
    if (p[0] >= '0' && p[0] <= '9') {
        int64_t s = 0;
        for (size_t i = 0; i < n; i++) {
            if (p[i] < '0' || p[i] > '9')
                return -1;
            if (s < RETRY_AFTER_MAX_S)
                s = s * 10 + (p[i] - '0');
        }
        if (s > RETRY_AFTER_MAX_S)
            s = RETRY_AFTER_MAX_S;
        return s * 1000;
    }
    int64_t t = parse_imf_fixdate(p, n);
    if (t < 0)
        return -1;
    int64_t ms = t * 1000 - now_us / 1000;
    return ms > 0 ? ms : 0;
}

/* Response header lines, one per call (not NUL-terminated). Each response
 * (a 1xx, then the final one) starts with its status line, which forgets
 * what an earlier one said. */
static size_t on_header(char *p, size_t size, size_t nmemb, void *arg)
{
    struct xfer *x = arg;
    size_t len = size * nmemb;
    static const char ra[] = "retry-after:";
    if (len >= 5 && memcmp(p, "HTTP/", 5) == 0)
        x->retry_after_ms = -1;
    else if (len >= sizeof ra - 1 && strncasecmp(p, ra, sizeof ra - 1) == 0)
        x->retry_after_ms = parse_retry_after(p + sizeof ra - 1, len - (sizeof ra - 1), hk_wall_us());
    return len;
}

/* ---- the client ---------------------------------------------------------- */

/* The options every request of a slot shares, set once on its easy handle. */
static CURL *make_easy(struct hk_out *o, struct xfer *x)
{
    CURL *e = hk_curl.curl_easy_init();
    if (!e)
        return NULL;
    /* Callbacks go straight to curl_easy_setopt: each has exactly the
     * function type curl reads back. */
    curl_write_callback wr = on_write, hdr = on_header;
    curl_closesocket_callback cls = on_closesocket;
    bool bad = false;
    bad |= opt_long(e, CURLOPT_NOSIGNAL, 1L) != CURLE_OK;
    bad |= opt_ptr(e, CURLOPT_PRIVATE, x) != CURLE_OK;
    bad |= opt_ptr(e, CURLOPT_PROTOCOLS_STR, "http,https") != CURLE_OK;
    bad |= opt_long(e, CURLOPT_FOLLOWLOCATION, 0L) != CURLE_OK;
    /* No proxy from http_proxy & co.: hookd reads its environment only
     * through core/config. */
    bad |= opt_ptr(e, CURLOPT_PROXY, "") != CURLE_OK;
    bad |= opt_long(e, CURLOPT_POST, 1L) != CURLE_OK;
    bad |= opt_long(e, CURLOPT_CONNECTTIMEOUT_MS, (long)o->opts.connect_ms) != CURLE_OK;
    bad |= opt_long(e, CURLOPT_TIMEOUT_MS, (long)o->opts.total_ms) != CURLE_OK;
    bad |= hk_curl.curl_easy_setopt(e, CURLOPT_WRITEFUNCTION, wr) != CURLE_OK;
    bad |= opt_ptr(e, CURLOPT_WRITEDATA, x) != CURLE_OK;
    bad |= hk_curl.curl_easy_setopt(e, CURLOPT_HEADERFUNCTION, hdr) != CURLE_OK;
    bad |= opt_ptr(e, CURLOPT_HEADERDATA, x) != CURLE_OK;
    bad |= opt_ptr(e, CURLOPT_ERRORBUFFER, x->errbuf) != CURLE_OK;
    bad |= hk_curl.curl_easy_setopt(e, CURLOPT_CLOSESOCKETFUNCTION, cls) != CURLE_OK;
    bad |= opt_ptr(e, CURLOPT_CLOSESOCKETDATA, o) != CURLE_OK;
    if (bad) {
        hk_curl.curl_easy_cleanup(e);
        return NULL;
    }
    return e;
}

/* Why r cannot be sent, or NULL. */
static const char *check_req(const struct hk_out_req *r, bool *has_ctype)
{
    if (strncasecmp(r->url, "http://", 7) != 0 && strncasecmp(r->url, "https://", 8) != 0)
        return "URL scheme not allowed (http or https)";
    *has_ctype = false;
    for (size_t i = 0; i < r->nheaders; i++) {
        const char *h = r->headers[i];
        if (!h)
            return "header line missing";
        const char *colon = strchr(h, ':');
        if (!colon || colon == h)
            return "header line without a name and a colon";
        for (const char *p = h; *p; p++)
            if (((unsigned char)*p < 0x20 && *p != '\t') || *p == 0x7f)
                return "header line with a control character";
        if (colon - h == 12 && strncasecmp(h, "content-type", 12) == 0)
            *has_ctype = true;
    }
    return NULL;
}

static struct curl_slist *append(struct curl_slist *l, const char *line)
{
    struct curl_slist *n = hk_curl.curl_slist_append(l, line);
    if (!n)
        abort();
    return n;
}

/* The list of header lines for CURLOPT_HTTPHEADER. An empty Expect: saves
 * the 100-continue round trip curl makes for large bodies; an empty
 * Content-Type: drops the form type curl would claim for a POST body when
 * the caller names none. curl takes `data` as char * but never writes it. */
static struct curl_slist *header_lines(struct xfer *x, const struct hk_out_req *r, bool has_ctype)
{
    size_t n = 1 + !has_ctype + r->nheaders;
    if (n > HDR_LINES) {
        struct curl_slist *l = append(NULL, "Expect:");
        if (!has_ctype)
            l = append(l, "Content-Type:");
        for (size_t i = 0; i < r->nheaders; i++)
            l = append(l, r->headers[i]);
        x->hdrs = l;
        return l;
    }
    size_t k = 0;
    x->line[k++].data = (char *)"Expect:";
    if (!has_ctype)
        x->line[k++].data = (char *)"Content-Type:";
    for (size_t i = 0; i < r->nheaders; i++)
        x->line[k++].data = (char *)r->headers[i];
    for (size_t i = 0; i < k; i++)
        x->line[i].next = i + 1 < k ? &x->line[i + 1] : NULL;
    return &x->line[0];
}

int hk_out_send(struct hk_out *o, struct hk_out_req *r)
{
    if (!o || !r || !r->url || !r->done || (r->body_len && !r->body) ||
        (r->nheaders && !r->headers))
        return HK_EINVAL;
    if (o->closing)
        return HK_EUNAVAIL;
    if (o->inflight >= o->opts.max_conns)
        return HK_EBUSY;
    struct xfer *x = o->free;
    assert(x && !x->req);
    o->free = x->next;
    x->req = r;
    x->prev = NULL;
    x->next = o->busy;
    if (o->busy)
        o->busy->prev = x;
    o->busy = x;
    o->inflight++;
    x->fail = 0;
    x->retry_after_ms = -1;
    x->body_len = 0;
    x->errbuf[0] = 0;

    bool has_ctype = false;
    const char *why = check_req(r, &has_ctype);
    if (why) {
        refuse(o, x, HK_EINVAL, why);
        return 0;
    }
    if (!x->easy)
        x->easy = make_easy(o, x);
    if (!x->easy) {
        refuse(o, x, HK_EUNAVAIL, "libcurl refused a new transfer handle");
        return 0;
    }
    struct curl_slist *l = header_lines(x, r, has_ctype);
    if (!x->url || strcmp(x->url, r->url) != 0) {
        free(x->url);
        x->url = NULL;
        if (opt_ptr(x->easy, CURLOPT_URL, r->url) != CURLE_OK) {
            refuse(o, x, HK_EINVAL, "URL refused by libcurl");
            return 0;
        }
        x->url = strdup(r->url);
        if (!x->url)
            abort();
    }
    bool bad = opt_off(x->easy, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)r->body_len) != CURLE_OK;
    bad |= opt_ptr(x->easy, CURLOPT_POSTFIELDS, r->body_len ? r->body : "") != CURLE_OK;
    bad |= opt_ptr(x->easy, CURLOPT_HTTPHEADER, l) != CURLE_OK;
    if (bad || hk_curl.curl_multi_add_handle(o->multi, x->easy) != CURLM_OK) {
        refuse(o, x, HK_EUNAVAIL, "libcurl refused the transfer");
        return 0;
    }
    /* curl asked for a timer of 0 in there: the transfer starts on the
     * loop, and done cannot run before this returns. */
    x->in_multi = true;
    return 0;
}

size_t hk_out_inflight(const struct hk_out *o)
{
    return o->inflight;
}

int hk_out_open(uv_loop_t *loop, const struct hk_out_opts *opts, struct hk_out **out, char *err,
                size_t errlen)
{
    *out = NULL;
    if (opts->max_conns < 1 || opts->max_conns > MAX_CONNS_CAP) {
        snprintf(err, errlen, "outbound: max_conns must be 1..%u", MAX_CONNS_CAP);
        return HK_EINVAL;
    }
    /* curl takes the deadlines as long milliseconds; 0 would mean none. */
    if (opts->connect_ms < 1 || opts->connect_ms > INT32_MAX || opts->total_ms < 1 ||
        opts->total_ms > INT32_MAX) {
        snprintf(err, errlen, "outbound: connect and total timeouts must be 1..%d ms", INT32_MAX);
        return HK_EINVAL;
    }
    if (opts->max_response > MAX_RESPONSE_CAP) {
        snprintf(err, errlen, "outbound: max_response must be at most %zu bytes", MAX_RESPONSE_CAP);
        return HK_EINVAL;
    }
    if (hk_curl_load(err, errlen) < 0)
        return HK_EUNAVAIL;

    struct hk_out *o = calloc(1, sizeof *o);
    struct xfer *slots = calloc(opts->max_conns, sizeof *slots);
    if (!o || !slots)
        abort();
    o->loop = loop;
    o->opts = *opts;
    o->slots = slots;
    for (uint32_t i = opts->max_conns; i-- > 0;) {
        slots[i].o = o;
        slots[i].next = o->free;
        o->free = &slots[i];
    }
    o->multi = hk_curl.curl_multi_init();
    if (!o->multi) {
        snprintf(err, errlen, "outbound: curl_multi_init failed");
        free(slots);
        free(o);
        return HK_EUNAVAIL;
    }
    curl_socket_callback scb = on_socket;
    curl_multi_timer_callback tcb = on_curl_timer;
    bool bad = hk_curl.curl_multi_setopt(o->multi, CURLMOPT_SOCKETFUNCTION, scb) != CURLM_OK;
    bad |= mopt_ptr(o->multi, CURLMOPT_SOCKETDATA, o) != CURLM_OK;
    bad |= hk_curl.curl_multi_setopt(o->multi, CURLMOPT_TIMERFUNCTION, tcb) != CURLM_OK;
    bad |= mopt_ptr(o->multi, CURLMOPT_TIMERDATA, o) != CURLM_OK;
    bad |= mopt_long(o->multi, CURLMOPT_MAX_TOTAL_CONNECTIONS, (long)opts->max_conns) != CURLM_OK;
    /* The connection cache keeps as many idle connections as there can be
     * requests, so that keep-alive survives a burst. */
    bad |= mopt_long(o->multi, CURLMOPT_MAXCONNECTS, (long)opts->max_conns) != CURLM_OK;
    if (bad) {
        snprintf(err, errlen, "outbound: libcurl refused the multi handle's options");
        hk_curl.curl_multi_cleanup(o->multi);
        free(slots);
        free(o);
        return HK_EUNAVAIL;
    }
    uv_timer_init(loop, &o->timer);
    o->timer.data = o;
    uv_timer_init(loop, &o->defer);
    o->defer.data = o;
    *out = o;
    return 0;
}

void hk_out_close(struct hk_out *o)
{
    if (!o || o->closing)
        return;
    o->closing = true;
    uv_timer_stop(&o->timer);
    uv_timer_stop(&o->defer);
    o->refused = NULL;
    /* Each done may send (refused now) or free its request; a close from
     * it returns at once (closing is set). A request already refused keeps
     * its reason. */
    while (o->busy) {
        struct xfer *x = o->busy;
        x->rnext = NULL;
        if (!x->fail) {
            x->fail = HK_EUNAVAIL;
            x->fail_text = "client closed";
        }
        finish(o, x, CURLE_OK);
    }
    for (uint32_t i = 0; i < o->opts.max_conns; i++)
        if (o->slots[i].easy)
            hk_curl.curl_easy_cleanup(o->slots[i].easy);
    /* Closes the cached connections: their sockets leave through
     * on_socket / on_closesocket, which close their polls. */
    hk_curl.curl_multi_cleanup(o->multi);
    o->multi = NULL;
    for (size_t fd = 0; fd < o->nbyfd; fd++)
        if (o->byfd[fd])
            sock_drop(o, o->byfd[fd]);
    o->nclosing += 2;
    uv_close((uv_handle_t *)&o->timer, on_handle_closed);
    uv_close((uv_handle_t *)&o->defer, on_handle_closed);
}
