/* SPDX-License-Identifier: MIT
 * HTTP/1.1 protocol state for one connection. llhttp parses in place; the
 * parser pauses after each message so that exactly one request is in the
 * handler at a time and pipelined bytes wait in `in`. The session decides
 * when to close; the transport only moves bytes. */
#include "http/session.h"

#include <stddef.h>
#include <string.h>
#include <netinet/in.h>
#include <strings.h>

#include "core/ascii.h"
#include "core/clock.h"
#include "http/resp.h"
#include "http/server.h"

/* Buffers larger than this are released after the request that grew them:
 * with hundreds of connections, idle capacity is what peak RSS is made of. */
#define IN_KEEP (16 * 1024)
#define BUF_KEEP (16 * 1024)

static void run(struct hk_session *s, const char *p, size_t n);

static struct hk_session *of(llhttp_t *p)
{
    return (struct hk_session *)((char *)p - offsetof(struct hk_session, parser));
}

static uint64_t now_ms(struct hk_session *s)
{
    return uv_now(&s->w->loop);
}

static void set_deadline(struct hk_session *s, uint64_t ms, bool answer_408)
{
    s->deadline_ms = now_ms(s) + (ms ? ms : 1);
    s->deadline_408 = answer_408;
}

static int too_big_header(struct hk_session *s, size_t n)
{
    s->header_bytes += (uint32_t)n;
    if (s->header_bytes > s->w->cfg->max_header_bytes) {
        s->err_status = 431;
        s->err_detail = "request line and headers exceed the configured limit";
        return 1;
    }
    return 0;
}

static int on_message_begin(llhttp_t *p)
{
    struct hk_session *s = of(p);
    s->in_message = true;
    s->head.len = 0;
    s->body.len = 0;
    memset(&s->url, 0, sizeof s->url);
    memset(s->hdr, 0, sizeof s->hdr);
    s->header_bytes = 0;
    s->chunk_ext_bytes = 0;
    s->value_cut = false;
    s->cur = HK_H_OTHER;
    s->expect_continue = false;
    s->crlf_pending = 0;
    s->hdrs.len = 0;
    s->keep_all = false;
    s->app_refused = false;
    s->req.body_max = 0;
    s->req.body_cb = false;
    s->req.refused = 0;
    set_deadline(s, s->w->cfg->header_timeout_ms, true);
    return 0;
}

static int on_url(llhttp_t *p, const char *at, size_t n)
{
    struct hk_session *s = of(p);
    if (too_big_header(s, n))
        return -1;
    hk_buf_put(&s->head, at, n);
    s->url.len += (uint32_t)n;
    return 0;
}

/* The request target's path and query, in `head` (absolute-form
 * "http://host/path" reduced to its path). */
static void split_url(struct hk_session *s, struct hk_req *r)
{
    const char *u = s->head.p + s->url.off;
    size_t ulen = s->url.len;
    if (ulen > 7 && (strncasecmp(u, "http://", 7) == 0 || strncasecmp(u, "https://", 8) == 0)) {
        const char *slash = memchr(u + 8, '/', ulen - 8);
        size_t skip = slash ? (size_t)(slash - u) : ulen;
        u += skip;
        ulen -= skip;
    }
    const char *q = memchr(u, '?', ulen);
    r->path = u;
    r->path_len = q ? (size_t)(q - u) : ulen;
    r->query = q ? q + 1 : NULL;
    r->query_len = q ? ulen - r->path_len - 1 : 0;
}

static int on_url_complete(llhttp_t *p)
{
    struct hk_session *s = of(p);
    hk_buf_putc(&s->head, 0);
    if (s->w->app->keep_headers) {
        split_url(s, &s->req);
        s->keep_all = s->w->app->keep_headers(s->req.path, s->req.path_len);
    }
    return 0;
}

static int on_header_field(llhttp_t *p, const char *at, size_t n)
{
    struct hk_session *s = of(p);
    if (too_big_header(s, n + 4))
        return -1;
    if (s->cur != HK_H__COUNT) {
        /* First piece of a new name. */
        s->field_off = (uint32_t)s->head.len;
        s->cur = HK_H__COUNT;
    }
    hk_buf_put(&s->head, at, n);
    return 0;
}

static enum hk_hdr_id classify(const char *name, size_t n)
{
    static const struct {
        const char *name;
        enum hk_hdr_id h;
    } known[] = {
        {"content-type", HK_H_CONTENT_TYPE},
        {"expect", HK_H_EXPECT},
        {"idempotency-key", HK_H_IDEM_KEY},
        {"x-hub-signature-256", HK_H_SIGNATURE},
        {"host", HK_H_HOST},
        {"x-request-id", HK_H_REQUEST_ID},
        {"accept", HK_H_ACCEPT},
        {"authorization", HK_H_AUTHORIZATION},
        {"cookie", HK_H_COOKIE},
        {"x-csrf-token", HK_H_CSRF},
        {"last-event-id", HK_H_LAST_EVENT_ID},
    };
    for (size_t i = 0; i < sizeof known / sizeof known[0]; i++)
        if (strlen(known[i].name) == n && strncasecmp(known[i].name, name, n) == 0)
            return known[i].h;
    return HK_H_OTHER;
}

static int on_header_field_complete(llhttp_t *p)
{
    struct hk_session *s = of(p);
    if (s->keep_all) {
        if (s->app_head) {
            /* Trailers would change the headers a signature was checked
             * against after the check. */
            s->err_status = 400;
            s->err_detail = "trailer fields are not accepted on this route";
            return -1;
        }
        hk_buf_put(&s->hdrs, s->head.p + s->field_off, s->head.len - s->field_off);
        hk_buf_putc(&s->hdrs, 0);
    }
    enum hk_hdr_id h = classify(s->head.p + s->field_off, s->head.len - s->field_off);
    /* hookd keeps values only, and only of the headers it reads. */
    s->head.len = s->field_off;
    s->cur = h;
    if (h != HK_H_OTHER && s->hdr[h].present && h != HK_H_ACCEPT && h != HK_H_EXPECT) {
        /* Two of a header that has one value: a proxy in front may have
         * read the other one (request smuggling, a signature checked on
         * one value and logged with another). Refused, not guessed. */
        s->err_status = 400;
        s->err_detail = h == HK_H_HOST ? "more than one Host header"
                        : h == HK_H_SIGNATURE ? "more than one X-Hub-Signature-256 header (ambiguous)"
                        : "a header that takes one value was sent more than once";
        return -1;
    }
    if (h != HK_H_OTHER) {
        s->hdr[h].off = (uint32_t)s->head.len;
        s->hdr[h].len = 0;
        s->hdr[h].present = true;
    }
    return 0;
}

static int on_header_value(llhttp_t *p, const char *at, size_t n)
{
    struct hk_session *s = of(p);
    if (too_big_header(s, n))
        return -1;
    /* llhttp passes an obs-fold continuation line on as one more piece of
     * the same value. A value also comes in pieces when it is split across
     * reads, but then the piece before ended at the end of the input; a
     * piece that ended before it was cut by a line end. RFC 9112 5.2 lets
     * a server reject folding, and a proxy in front may have unfolded it
     * differently. */
    if (s->value_cut) {
        s->err_status = 400;
        s->err_detail = "obsolete line folding in a header value";
        return -1;
    }
    s->value_cut = at + n != s->cur_end;
    if (s->keep_all)
        hk_buf_put(&s->hdrs, at, n);
    if (s->cur != HK_H_OTHER) {
        hk_buf_put(&s->head, at, n);
        s->hdr[s->cur].len += (uint32_t)n;
    }
    return 0;
}

static int on_header_value_complete(llhttp_t *p)
{
    struct hk_session *s = of(p);
    if (s->keep_all)
        hk_buf_putc(&s->hdrs, 0);
    if (s->cur != HK_H_OTHER)
        hk_buf_putc(&s->head, 0);
    s->cur = HK_H_OTHER;
    s->value_cut = false;
    return 0;
}

static const char *hdr_val(struct hk_session *s, enum hk_hdr_id h, size_t *len)
{
    if (!s->hdr[h].present) {
        *len = 0;
        return NULL;
    }
    *len = s->hdr[h].len;
    return s->head.p + s->hdr[h].off;
}

/* The request's fields hookd reads, from `head` (valid until `head`
 * grows again: at dispatch they are set once more). */
static void fill_req(struct hk_session *s)
{
    struct hk_req *r = &s->req;
    r->method = (uint8_t)s->parser.method;
    r->head = r->method == HTTP_HEAD;
    split_url(s, r);
    r->content_type = hdr_val(s, HK_H_CONTENT_TYPE, &r->content_type_len);
    r->idem_key = hdr_val(s, HK_H_IDEM_KEY, &r->idem_key_len);
    r->signature = hdr_val(s, HK_H_SIGNATURE, &r->signature_len);
    r->accept = hdr_val(s, HK_H_ACCEPT, &r->accept_len);
    r->authorization = hdr_val(s, HK_H_AUTHORIZATION, &r->authorization_len);
    r->cookie = hdr_val(s, HK_H_COOKIE, &r->cookie_len);
    r->csrf = hdr_val(s, HK_H_CSRF, &r->csrf_len);
    r->last_event_id = hdr_val(s, HK_H_LAST_EVENT_ID, &r->last_event_id_len);
    r->body = &s->body;
    r->content_length = (s->parser.flags & F_CONTENT_LENGTH) ? s->parser.content_length : UINT64_MAX;
}

static uint64_t body_max(const struct hk_session *s)
{
    return s->req.body_max ? s->req.body_max : s->w->cfg->max_body_bytes;
}

/* The application refused the request before its body was in: stop
 * parsing; parse() hands the request to the application as refused. */
static int app_refuse(struct hk_session *s, int status)
{
    s->err_status = status;
    s->err_detail = "refused";
    s->app_refused = true;
    return -1;
}

static int on_headers_complete(llhttp_t *p)
{
    struct hk_session *s = of(p);
    if (p->http_major != 1 || p->http_minor > 1) {
        s->err_status = 505;
        s->err_detail = "only HTTP/1.0 and HTTP/1.1 are supported";
        return -1;
    }
    if (p->http_major == 1 && p->http_minor == 1 && !s->hdr[HK_H_HOST].present) {
        s->err_status = 400;
        s->err_detail = "HTTP/1.1 request without a Host header";
        return -1;
    }
    if (s->keep_all && s->w->app->head) {
        fill_req(s);
        s->app_head = true;
        int rc = s->w->app->head(&s->req);
        if (rc)
            return app_refuse(s, rc);
    }
    if ((p->flags & F_CONTENT_LENGTH) && p->content_length > body_max(s)) {
        if (s->app_head)
            return app_refuse(s, 413);
        s->err_status = 413;
        s->err_detail = "request body exceeds the configured limit";
        return -1;
    }
    size_t n;
    const char *v = hdr_val(s, HK_H_EXPECT, &n);
    if (v) {
        if (n != 12 || strncasecmp(v, "100-continue", 12) != 0) {
            s->err_status = 417;
            s->err_detail = "only Expect: 100-continue is supported";
            return -1;
        }
        s->expect_continue = true;
    }
    if (s->expect_continue && ((p->flags & F_CHUNKED) || p->content_length > 0))
        hk_buf_puts(&s->out, "HTTP/1.1 100 Continue\r\n\r\n");
    return 0;
}

/* llhttp 8.1 skips the two bytes after chunk data without checking that
 * they are CRLF; hookd checks them itself, so "2\r\n{}XX0\r\n\r\n" is
 * a framing error rather than a body of "{}". */
static int check_crlf(struct hk_session *s, const char *at, const char *end)
{
    static const char crlf[] = "\r\n";
    while (s->crlf_pending && at < end) {
        if (*at++ != crlf[2 - s->crlf_pending]) {
            s->err_status = 400;
            s->err_detail = "invalid chunked framing: chunk data not followed by CRLF";
            return -1;
        }
        s->crlf_pending--;
    }
    return 0;
}

static int on_chunk_header(llhttp_t *p)
{
    struct hk_session *s = of(p);
    s->chunk_left = p->content_length;
    s->chunk_ext_bytes = 0;
    return 0;
}

/* Chunk extensions mean nothing to hookd, but llhttp would parse any
 * amount of them: a body of extensions and no data. */
static int on_chunk_ext(llhttp_t *p, const char *at, size_t n)
{
    (void)at;
    struct hk_session *s = of(p);
    s->chunk_ext_bytes += (uint32_t)(n <= HK_CHUNK_EXT_MAX ? n : HK_CHUNK_EXT_MAX + 1);
    if (s->chunk_ext_bytes > HK_CHUNK_EXT_MAX) {
        s->err_status = 400;
        s->err_detail = "chunk extensions exceed 256 bytes";
        return -1;
    }
    return 0;
}

static int on_body(llhttp_t *p, const char *at, size_t n)
{
    struct hk_session *s = of(p);
    if (p->flags & F_CHUNKED) {
        s->chunk_left -= n;
        if (s->chunk_left == 0) {
            s->crlf_pending = 2;
            if (check_crlf(s, at + n, s->cur_end) < 0)
                return -1;
        }
    }
    if (s->body.len + n > body_max(s)) {
        if (s->app_head)
            return app_refuse(s, 413);
        s->err_status = 413;
        s->err_detail = "request body exceeds the configured limit";
        return -1;
    }
    if (s->req.body_cb) {
        int rc = s->w->app->body(&s->req, at, n);
        if (rc)
            return app_refuse(s, rc);
    }
    hk_buf_put(&s->body, at, n);
    return 0;
}

static int on_message_complete(llhttp_t *p)
{
    struct hk_session *s = of(p);
    s->in_message = false;
    s->keep_alive = llhttp_should_keep_alive(p) && !p->upgrade;
    return HPE_PAUSED;
}

static const llhttp_settings_t settings = {
    .on_message_begin = on_message_begin,
    .on_url = on_url,
    .on_url_complete = on_url_complete,
    .on_header_field = on_header_field,
    .on_header_field_complete = on_header_field_complete,
    .on_header_value = on_header_value,
    .on_header_value_complete = on_header_value_complete,
    .on_headers_complete = on_headers_complete,
    .on_chunk_header = on_chunk_header,
    .on_chunk_extension_name = on_chunk_ext,
    .on_chunk_extension_value = on_chunk_ext,
    .on_body = on_body,
    .on_message_complete = on_message_complete,
};

void hk_session_set_peer(struct hk_session *s, const struct sockaddr *sa)
{
    static const uint8_t mapped[12] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff};
    memset(s->peer, 0, sizeof s->peer);
    s->peer_loopback = false;
    if (sa && sa->sa_family == AF_INET) {
        const struct sockaddr_in *a = (const struct sockaddr_in *)sa;
        memcpy(s->peer, mapped, 12);
        memcpy(s->peer + 12, &a->sin_addr, 4);
        s->peer_loopback = s->peer[12] == 127;
    } else if (sa && sa->sa_family == AF_INET6) {
        const struct sockaddr_in6 *a = (const struct sockaddr_in6 *)sa;
        memcpy(s->peer, &a->sin6_addr, 16);
        s->peer_loopback = IN6_IS_ADDR_LOOPBACK(&a->sin6_addr) ||
                           (IN6_IS_ADDR_V4MAPPED(&a->sin6_addr) && s->peer[12] == 127);
    }
}

void hk_session_init(struct hk_session *s, struct hk_worker *w, const struct hk_session_io *io,
                     void *io_data)
{
    s->w = w;
    s->io = io;
    s->io_data = io_data;
    llhttp_init(&s->parser, HTTP_REQUEST, &settings);
    s->req.s = s;
    s->in.len = s->in_pos = 0;
    s->head.len = s->body.len = s->out.len = s->rbody.len = s->rhdr.len = 0;
    s->out_inflight = 0;
    s->served = 0;
    s->busy = s->feeding = s->closing = s->closed = s->peer_gone = s->eof = false;
    s->want_drain = s->in_message = s->draining_server = false;
    s->err_status = 0;
    uint64_t t = w->cfg->idle_timeout_ms < w->cfg->header_timeout_ms ? w->cfg->idle_timeout_ms
                                                                      : w->cfg->header_timeout_ms;
    set_deadline(s, t, false);
}

void hk_session_free(struct hk_session *s)
{
    if (s->app_head) {
        s->app_head = false;
        if (s->w->app->drop)
            s->w->app->drop(&s->req);
    }
    hk_buf_free(&s->hdrs);
    hk_buf_free(&s->in);
    hk_buf_free(&s->head);
    hk_buf_free(&s->body);
    hk_buf_free(&s->out);
    hk_buf_free(&s->rbody);
    hk_buf_free(&s->rhdr);
}

/* The client's X-Request-Id when it is 1..HK_REQ_ID_MAX printable ASCII
 * characters, else "<loop prefix><hex counter>": no syscall, no printf. */
static void request_id(struct hk_req *r, const char *id, size_t n)
{
    struct hk_worker *w = r->s->w;
    if (id && n > 0 && n <= HK_REQ_ID_MAX && hk_ascii_printable(id, n, 0x20)) {
        memcpy(r->req_id, id, n);
        r->req_id_len = (uint8_t)n;
    } else {
        memcpy(r->req_id, w->rid_prefix, w->rid_prefix_len);
        char tmp[16];
        int k = 0;
        uint64_t v = ++w->rid_next;
        do {
            tmp[k++] = "0123456789abcdef"[v & 15];
            v >>= 4;
        } while (v);
        size_t len = w->rid_prefix_len;
        while (k)
            r->req_id[len++] = tmp[--k];
        r->req_id_len = (uint8_t)len;
    }
    r->req_id[r->req_id_len] = 0;
}

static void begin_request(struct hk_session *s)
{
    struct hk_req *r = &s->req;
    s->busy = true;
    s->deadline_ms = 0;
    s->rbody.len = 0;
    s->rhdr.len = 0;
    r->s = s;
    r->head = false;
    r->streaming = false;
    r->on_drain = NULL;
    r->on_abort = NULL;
    r->on_cancel = NULL;
    r->on_gone = NULL;
    r->handler_data = NULL;
    r->routed = false;
    r->start_ns = hk_mono_ns();
    r->status = 0;
    r->resp_bytes = 0;
    size_t idn;
    const char *id = hdr_val(s, HK_H_REQUEST_ID, &idn);
    request_id(r, id, idn);
    s->w->app->begin(r);
}

/* Answer a request the parser rejected, and close. */
static void reject(struct hk_session *s, int status, const char *detail)
{
    begin_request(s);
    s->keep_alive = false;
    s->req.method = HTTP_GET;
    hk_resp_problem(&s->req, status, NULL, "%s", detail);
}

void hk_session_overload(struct hk_session *s)
{
    s->feeding = true;
    begin_request(s);
    s->keep_alive = false;
    s->req.method = HTTP_GET;
    hk_resp_unavailable(&s->req, 503, "too_many_connections", 1, "too many open connections");
    s->feeding = false;
    run(s, NULL, 0);
}

static void dispatch(struct hk_session *s)
{
    struct hk_req *r = &s->req;
    begin_request(s);
    fill_req(s);
    r->routed = true;
    s->w->app->request(r);
}

/* A request the application refused before its body was in: it answers
 * (r->refused says with what), and the connection closes after, as the
 * rest of the body was never read. */
static void dispatch_refused(struct hk_session *s)
{
    struct hk_req *r = &s->req;
    int status = s->err_status;
    s->in_message = false;
    s->keep_alive = false;
    begin_request(s);
    fill_req(s);
    r->refused = status;
    r->routed = true;
    s->w->app->request(r);
}

/* Parse from p; returns how many bytes were used. */
static size_t parse(struct hk_session *s, const char *p, size_t n)
{
    llhttp_errno_t e;
    s->cur_end = p + n;
    if (s->crlf_pending && check_crlf(s, p, p + n) < 0)
        e = HPE_USER;
    else
        e = llhttp_execute(&s->parser, p, n);
    if (e == HPE_OK)
        return n;
    if (e == HPE_PAUSED || e == HPE_PAUSED_UPGRADE) {
        size_t used = (size_t)(llhttp_get_error_pos(&s->parser) - p);
        if (e == HPE_PAUSED)
            llhttp_resume(&s->parser);
        else
            s->keep_alive = false; /* no protocol switch here: answer and close */
        dispatch(s);
        return used;
    }
    if (s->app_refused) {
        dispatch_refused(s);
        return n;
    }
    int status = s->err_status ? s->err_status : 400;
    const char *detail = s->err_status ? s->err_detail : llhttp_get_error_reason(&s->parser);
    /* llhttp says "Invalid HTTP version" for a well-formed version it does
     * not know (HTTP/1.2, HTTP/3.0), and "Invalid major/minor version" for
     * broken syntax, which stays a 400. */
    if (!s->err_status && e == HPE_INVALID_VERSION && detail && strcmp(detail, "Invalid HTTP version") == 0) {
        status = 505;
        detail = "only HTTP/1.0 and HTTP/1.1 are supported";
    }
    reject(s, status, detail ? detail : "malformed HTTP request");
    return n;
}

/* Parse what is buffered, dispatching requests one at a time, then flush.
 * Re-entered from hk_session_finish when a handler completes later. */
static void run(struct hk_session *s, const char *p, size_t n)
{
    if (s->feeding)
        return;
    s->feeding = true;
    /* Fast path: nothing buffered, parse the caller's bytes in place. */
    if (p && hk_session_backlog(s) == 0) {
        while (n && !s->busy && !s->closing && !hk_session_out_full(s)) {
            size_t used = parse(s, p, n);
            p += used;
            n -= used;
        }
        if (n && !s->closing) {
            s->in.len = s->in_pos = 0;
            hk_buf_put(&s->in, p, n);
        }
    } else if (p && !s->closing) {
        hk_buf_put(&s->in, p, n);
    }
    for (;;) {
        while (!s->busy && !s->closing && hk_session_backlog(s) && !hk_session_out_full(s)) {
            size_t used = parse(s, s->in.p + s->in_pos, hk_session_backlog(s));
            s->in_pos += used;
        }
        if (s->closing || hk_session_backlog(s) == 0) {
            s->in.len = s->in_pos = 0;
            hk_buf_reset(&s->in, IN_KEEP);
        }
        /* Parsing stopped on the output bound: hand the output over now,
         * and if the transport took it at once, go on with what waits. */
        if (s->closed || s->busy || s->closing || !s->out.len || !hk_session_backlog(s))
            break;
        s->io->flush(s);
        if (hk_session_out_full(s))
            break;
    }
    s->feeding = false;
    if (s->closed)
        return;
    /* After EOF, requests that came before it are still answered. */
    if (!s->busy && (s->closing || (s->eof && !hk_session_backlog(s)))) {
        s->closed = true;
        s->io->close(s);
        return;
    }
    if (s->out.len)
        s->io->flush(s);
}

void hk_session_feed(struct hk_session *s, const char *p, size_t n)
{
    if (s->closed || s->closing)
        return;
    run(s, p, n);
}

void hk_session_resume(struct hk_session *s)
{
    if (!s->busy && !s->closed && !s->closing && hk_session_backlog(s) && !hk_session_out_full(s))
        run(s, NULL, 0);
}

void hk_session_finish(struct hk_session *s)
{
    struct hk_req *r = &s->req;
    s->w->app->end(r);
    s->app_head = false;
    s->busy = false;
    s->served++;
    s->want_drain = false;
    r->on_drain = NULL;
    r->on_abort = NULL;
    r->on_cancel = NULL;
    r->on_gone = NULL;
    r->handler_data = NULL;
    r->streaming = false;
    if (s->draining_server || s->peer_gone)
        s->keep_alive = false;
    if (!s->keep_alive)
        s->closing = true;
    else
        set_deadline(s, s->w->cfg->idle_timeout_ms, false);
    hk_buf_reset(&s->body, BUF_KEEP);
    hk_buf_reset(&s->rbody, BUF_KEEP);
    hk_buf_reset(&s->hdrs, BUF_KEEP);
    run(s, NULL, 0);
}

void hk_session_eof(struct hk_session *s, bool fatal)
{
    if (s->closed)
        return;
    s->eof = true;
    if (fatal) {
        s->peer_gone = true;
        s->closing = true;
    }
    /* A held response ends on EOF too; a stream waiting for a drain only
     * when its output can no longer go out. */
    hk_req_cb cb = NULL;
    if (s->busy && s->req.on_gone)
        cb = s->req.on_gone;
    else if (fatal && s->want_drain && s->req.on_abort)
        cb = s->req.on_abort;
    if (cb) {
        s->want_drain = false;
        s->req.on_drain = NULL;
        s->req.on_abort = NULL;
        s->req.on_gone = NULL;
        cb(&s->req);
        return;
    }
    if (!s->busy)
        run(s, NULL, 0);
}

void hk_session_drained(struct hk_session *s)
{
    if (!s->want_drain)
        return;
    hk_req_cb cb = s->req.on_drain;
    s->want_drain = false;
    s->req.on_drain = NULL;
    s->req.on_abort = NULL;
    if (cb)
        cb(&s->req);
}

void hk_session_timeout(struct hk_session *s)
{
    if (s->busy || s->closed)
        return;
    s->deadline_ms = 0;
    if (s->deadline_408) {
        s->feeding = true;
        reject(s, 408, "the request was not received in time");
        s->feeding = false;
        run(s, NULL, 0);
        return;
    }
    s->closing = true;
    run(s, NULL, 0);
}

void hk_session_shutdown(struct hk_session *s)
{
    s->draining_server = true;
    if (s->busy && s->req.on_cancel) {
        hk_req_cb cancel = s->req.on_cancel;
        s->req.on_cancel = NULL;
        cancel(&s->req);
        return;
    }
    if (!s->busy && !s->in_message && !s->closed) {
        s->closing = true;
        run(s, NULL, 0);
    }
}

const char *hk_req_header(const struct hk_req *r, const char *name, size_t *len, unsigned *count)
{
    const struct hk_session *s = r->s;
    size_t nlen = strlen(name);
    const char *found = NULL;
    unsigned c = 0;
    *len = 0;
    /* "name\0value\0" pairs; a few dozen headers at most (max_header_bytes). */
    for (size_t i = 0; i < s->hdrs.len;) {
        const char *n = s->hdrs.p + i;
        size_t nl = strlen(n);
        const char *v = n + nl + 1;
        size_t vl = strlen(v);
        if (nl == nlen && strncasecmp(n, name, nlen) == 0) {
            if (!found) {
                found = v;
                *len = vl;
            }
            c++;
        }
        i += nl + vl + 2;
    }
    if (count)
        *count = c;
    return found;
}

void hk_req_headers_each(const struct hk_req *r, void (*fn)(void *arg, const char *name, size_t name_len,
                                                            const char *value, size_t value_len),
                         void *arg)
{
    const struct hk_session *s = r->s;
    for (size_t i = 0; i < s->hdrs.len;) {
        const char *n = s->hdrs.p + i;
        size_t nl = strlen(n);
        const char *v = n + nl + 1;
        size_t vl = strlen(v);
        fn(arg, n, nl, v, vl);
        i += nl + vl + 2;
    }
}
