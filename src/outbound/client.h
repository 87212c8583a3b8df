/* SPDX-License-Identifier: MIT
 * The outbound HTTP client: POST requests sent from one libuv loop through
 * libcurl's multi socket interface (uv_poll per socket, one uv_timer), with
 * keep-alive connections reused across requests, TLS by libcurl (the
 * system's CA store) and a bound on requests in flight. docs/forwarding.md,
 * "Sending", has the design. One client per loop, used only on that loop's
 * thread. */
#ifndef HK_OUT_CLIENT_H
#define HK_OUT_CLIENT_H

#include <stddef.h>
#include <stdint.h>

#include <uv.h>

struct hk_out;

struct hk_out_opts {
    uint32_t max_conns;        /* requests in flight at once (1..65536), and the connections kept */
    uint64_t connect_ms;       /* TCP + TLS connect deadline (> 0) */
    uint64_t total_ms;         /* whole-request deadline (> 0) */
    size_t max_response;       /* response body bytes kept for done (0..16 MiB); the rest is read and dropped */
};

struct hk_out_result {
    int status;                /* the HTTP status of a complete response; 0 when err != 0 */
    int err;                   /* 0, or HK_ETIMEDOUT (connect or total deadline), HK_EUNAVAIL (DNS,
                                  connect, TLS, reset, cut short, client closed), HK_EINVAL (URL
                                  not http(s)://, malformed, or a header line with CR/LF) */
    const char *error;         /* one line, valid during done only; NULL when err is 0; names the
                                  host at most, never the URL's user:password */
    int64_t retry_after_ms;    /* from the response's Retry-After (delta-seconds, or an HTTP-date
                                  taken relative to now), >= 0; -1 when absent or unreadable, or
                                  when err != 0 */
    const void *body;          /* the response body's first max_response bytes, valid during done */
    size_t body_len;
};

/* A request: the caller's memory. It and everything it points to are
 * borrowed from hk_out_send until done returns; the client keeps its own
 * per-request state in a slot of its own (see hk_out_send). */
struct hk_out_req {
    const char *url;           /* http:// or https:// (anything else ends in HK_EINVAL); redirects
                                  are not followed; a user:password in it is sent as Basic auth */
    const char *const *headers;/* nheaders "Name: value" lines, without CR or LF */
    size_t nheaders;
    const void *body;          /* the POST body, body_len bytes (not copied; NULL when 0) */
    size_t body_len;
    /* Runs exactly once per accepted request, on the loop, never inside
     * hk_out_send. It may free or reuse r, send again, or close the client. */
    void (*done)(struct hk_out_req *r, const struct hk_out_result *res);
    void *data;                /* the caller's */
};

/* Make a client on `loop` (loading libcurl if needed). Returns 0 with *out
 * set, HK_EINVAL for options out of range, or HK_EUNAVAIL when libcurl cannot
 * be loaded or set up; a one-line reason is then in err. */
int hk_out_open(uv_loop_t *loop, const struct hk_out_opts *o, struct hk_out **out, char *err,
                size_t errlen);

/* Start a POST of r. Returns 0: r->done will run once, on a later turn of
 * the loop, whatever happens (a URL or header the client refuses included);
 * HK_EBUSY when max_conns requests are in flight; HK_EUNAVAIL once the
 * client is closing; HK_EINVAL when r has no url or done, or a body pointer
 * is missing. Allocates only the request's header list (curl_slist, one
 * node per line); its slot, the curl easy handle and the response buffer
 * are reused from earlier requests. */
int hk_out_send(struct hk_out *o, struct hk_out_req *r);

/* Requests sent whose done has not run yet. */
size_t hk_out_inflight(const struct hk_out *o);

/* Close the client: every pending request's done runs now, with
 * HK_EUNAVAIL ("client closed"); cached connections are closed; then its
 * handles close, and o is freed when they have (the loop must run until
 * then). May be called from a done. o must not be used afterwards. */
void hk_out_close(struct hk_out *o);

#endif
