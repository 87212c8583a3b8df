/* SPDX-License-Identifier: MIT
 * Response writing: every response goes through here, so the headers every
 * response must carry (Date, length or chunked, Connection) live in one place. */
#include "http/resp.h"

#include <assert.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "core/err.h"
#include "core/log.h"
#include "http/server.h"

const char *hk_status_reason(int status)
{
    switch (status) {
    case 100: return "Continue";
    case 200: return "OK";
    case 201: return "Created";
    case 204: return "No Content";
    case 304: return "Not Modified";
    case 400: return "Bad Request";
    case 401: return "Unauthorized";
    case 403: return "Forbidden";
    case 404: return "Not Found";
    case 405: return "Method Not Allowed";
    case 408: return "Request Timeout";
    case 409: return "Conflict";
    case 411: return "Length Required";
    case 413: return "Content Too Large";
    case 415: return "Unsupported Media Type";
    case 422: return "Unprocessable Content";
    case 429: return "Too Many Requests";
    case 431: return "Request Header Fields Too Large";
    case 500: return "Internal Server Error";
    case 501: return "Not Implemented";
    case 503: return "Service Unavailable";
    case 504: return "Gateway Timeout";
    case 505: return "HTTP Version Not Supported";
    case 507: return "Insufficient Storage";
    default: return "Unknown";
    }
}

void hk_resp_header(struct hk_req *r, const char *name, const char *value, size_t len)
{
    struct hk_buf *h = &r->s->rhdr;
    hk_buf_puts(h, name);
    hk_buf_put(h, ": ", 2);
    hk_buf_put(h, value, len);
    hk_buf_put(h, "\r\n", 2);
}

/* Status line and common headers, up to (not including) the length header. */
static void put_head(struct hk_req *r, int status, const char *content_type)
{
    struct hk_session *s = r->s;
    struct hk_buf *o = &s->out;
    if (s->draining_server)
        s->keep_alive = false;
    hk_buf_put(o, "HTTP/1.1 ", 9);
    hk_buf_put_u64(o, (uint64_t)status);
    hk_buf_putc(o, ' ');
    hk_buf_puts(o, hk_status_reason(status));
    hk_buf_put(o, "\r\nServer: hookd\r\nDate: ", 23);
    hk_buf_put(o, hk_worker_date(s->w), 29);
    hk_buf_put(o, "\r\n", 2);
    if (content_type) {
        hk_buf_put(o, "Content-Type: ", 14);
        hk_buf_puts(o, content_type);
        hk_buf_put(o, "\r\n", 2);
    }
    if (!s->keep_alive)
        hk_buf_put(o, "Connection: close\r\n", 19);
    else if (s->parser.http_minor == 0)
        hk_buf_put(o, "Connection: keep-alive\r\n", 24);
    hk_buf_put(o, "X-Request-Id: ", 14);
    hk_buf_put(o, r->req_id, r->req_id_len);
    hk_buf_put(o, "\r\n", 2);
    hk_buf_put(o, s->rhdr.p, s->rhdr.len);
    r->status = status;
}

void hk_resp_send(struct hk_req *r, int status, const char *content_type)
{
    struct hk_session *s = r->s;
    struct hk_buf *o = &s->out;
    /* 204 and 304 carry no content, and no Content-Length either (RFC
     * 9110: a 304's would have to be the 200's length). */
    bool empty = status == 204 || status == 304;
    if (empty)
        s->rbody.len = 0;
    put_head(r, status, empty ? NULL : content_type);
    if (!empty) {
        hk_buf_put(o, "Content-Length: ", 16);
        hk_buf_put_u64(o, s->rbody.len);
        hk_buf_put(o, "\r\n", 2);
    }
    hk_buf_put(o, "\r\n", 2);
    if (!r->head) {
        hk_buf_put(o, s->rbody.p, s->rbody.len);
        r->resp_bytes += s->rbody.len;
    }
    hk_session_finish(s);
}

/* Reasons are tokens clients compare: lowercase letters, digits and '_'.
 * (Only asserted, hence unused under NDEBUG.) */
__attribute__((unused)) static bool reason_ok(const char *reason)
{
    if (*reason == '\0')
        return false;
    for (const char *p = reason; *p; p++)
        if (!((*p >= 'a' && *p <= 'z') || (*p >= '0' && *p <= '9') || *p == '_'))
            return false;
    return true;
}

/* The one problem+json writer. `reason` NULL: no "reason" member. `code`
 * nonzero goes into the log line only, never into the body. */
__attribute__((format(printf, 6, 0)))
static void problem(struct hk_req *r, int status, const char *title, const char *reason, int code,
                    const char *detail_fmt, va_list ap)
{
    char detail[512];
    int n = vsnprintf(detail, sizeof detail, detail_fmt, ap);
    if (n < 0)
        n = 0;
    if ((size_t)n >= sizeof detail)
        n = sizeof detail - 1;
    assert(!reason || reason_ok(reason));
    struct hk_buf *b = hk_resp_body(r);
    b->len = 0;
    hk_buf_puts(b, "{\"type\":\"about:blank\",\"title\":");
    title = title ? title : hk_status_reason(status);
    hk_buf_put_json_str(b, title, strlen(title));
    hk_buf_puts(b, ",\"status\":");
    hk_buf_put_u64(b, (uint64_t)status);
    hk_buf_puts(b, ",\"detail\":");
    hk_buf_put_json_str(b, detail, (size_t)n);
    if (reason) {
        hk_buf_puts(b, ",\"reason\":\"");
        hk_buf_puts(b, reason);
        hk_buf_putc(b, '"');
    }
    hk_resp_put_instance(r, b);
    hk_buf_putc(b, '}');
    /* A 500 is a bug or a broken store: worth a line. Other 5xx (overload,
     * unavailable store) come in floods and are counted in /q/metrics. */
    enum hk_log_level lvl = status == 500 ? HK_LOG_WARN : HK_LOG_DEBUG;
    if (status >= 500 && hk_log_enabled(lvl)) {
        struct hk_buf d = HK_BUF_INIT;
        hk_buf_put_json_str(&d, detail, (size_t)n);
        if (reason)
            hk_buf_printf(&d, ",\"reason\":\"%s\"", reason);
        if (code)
            hk_buf_printf(&d, ",\"code\":%d", code);
        hk_log_req(lvl, r->req_id, "request failed", "\"status\":%d,\"detail\":%.*s", status, (int)d.len, d.p);
        hk_buf_free(&d);
    }
    hk_resp_send(r, status, HK_CT_PROBLEM);
}

void hk_resp_problem(struct hk_req *r, int status, const char *title, const char *detail_fmt, ...)
{
    va_list ap;
    va_start(ap, detail_fmt);
    problem(r, status, title, NULL, 0, detail_fmt, ap);
    va_end(ap);
}

void hk_resp_unavailable(struct hk_req *r, int status, const char *reason, unsigned retry_after_s,
                         const char *detail_fmt, ...)
{
    char v[16];
    int n = snprintf(v, sizeof v, "%u", retry_after_s);
    hk_resp_header(r, "Retry-After", v, (size_t)n);
    va_list ap;
    va_start(ap, detail_fmt);
    problem(r, status, NULL, reason, 0, detail_fmt, ap);
    va_end(ap);
}

void hk_resp_problem_reason(struct hk_req *r, int status, const char *reason, const char *detail_fmt, ...)
{
    va_list ap;
    va_start(ap, detail_fmt);
    problem(r, status, NULL, reason, 0, detail_fmt, ap);
    va_end(ap);
}

/* An unexpected store code: a bug, or a store failing in a way nobody
 * mapped. The code is for the log; clients get a stable reason. */
static void internal_error(struct hk_req *r, int code, const char *detail_fmt, ...)
    __attribute__((format(printf, 3, 4)));
static void internal_error(struct hk_req *r, int code, const char *detail_fmt, ...)
{
    va_list ap;
    va_start(ap, detail_fmt);
    problem(r, 500, NULL, "internal_error", code, detail_fmt, ap);
    va_end(ap);
}

void hk_resp_put_instance(struct hk_req *r, struct hk_buf *b)
{
    hk_buf_puts(b, ",\"instance\":\"urn:request:");
    /* put_json_str quotes: splice its output without the quotes. */
    size_t at = b->len;
    hk_buf_put_json_str(b, r->req_id, r->req_id_len);
    memmove(b->p + at, b->p + at + 1, b->len - at - 1);
    b->len--;
}

void hk_resp_store_error(struct hk_req *r, int err)
{
    switch (err) {
    case HK_ENOTFOUND:
        hk_resp_problem(r, 404, NULL, "webhook not found");
        return;
    case HK_ECONFLICT:
        hk_resp_problem(r, 409, NULL, "idempotency key already used with a different request");
        return;
    case HK_EINVAL:
        /* The store refused a value (a backend's own check, or a data
         * error from the database): the request's fault. */
        hk_resp_problem(r, 400, NULL, "the store refused a value: text must be UTF-8 without NUL bytes");
        return;
    case HK_EFULL:
        /* Space comes back when someone frees it: not within a second. */
        hk_resp_unavailable(r, 507, "disk_full", 30, "the store's disk is full, retry later");
        return;
    case HK_ELOCKED:
        hk_resp_unavailable(r, 503, "database_locked", 1,
                            "the database is locked by another process, retry later");
        return;
    case HK_EIO:
        hk_resp_unavailable(r, 503, "io_error", 5, "the store's disk failed, retry later");
        return;
    case HK_EUNAVAIL:
        hk_resp_unavailable(r, 503, "store_unavailable", 1, "the store is unavailable");
        return;
    case HK_EBUSY:
        hk_resp_unavailable(r, 503, "queue_full", 1, "the store's queue is full, retry later");
        return;
    case HK_ETIMEDOUT:
        hk_resp_unavailable(r, 503, "store_timeout", 1, "the store did not answer in time");
        return;
    default:
        internal_error(r, err, "the store failed unexpectedly");
        return;
    }
}

void hk_resp_begin_stream(struct hk_req *r, int status, const char *content_type)
{
    struct hk_session *s = r->s;
    struct hk_buf *o = &s->out;
    /* HTTP/1.0 has no chunked coding: the body ends when the connection does. */
    if (s->parser.http_minor == 0)
        s->keep_alive = false;
    put_head(r, status, content_type);
    /* A HEAD says what its GET would: chunked (no chunk follows). */
    if (s->parser.http_minor != 0)
        hk_buf_put(o, "Transfer-Encoding: chunked\r\n", 28);
    hk_buf_put(o, "\r\n", 2);
    r->streaming = true;
}

void hk_resp_chunk(struct hk_req *r)
{
    struct hk_session *s = r->s;
    if (!s->rbody.len)
        return;
    if (!r->head && !s->peer_gone) {
        bool chunked = s->parser.http_minor != 0;
        if (chunked)
            hk_buf_printf(&s->out, "%zx\r\n", s->rbody.len);
        hk_buf_put(&s->out, s->rbody.p, s->rbody.len);
        r->resp_bytes += s->rbody.len;
        if (chunked)
            hk_buf_put(&s->out, "\r\n", 2);
    }
    s->rbody.len = 0;
}

void hk_resp_end_stream(struct hk_req *r)
{
    hk_resp_chunk(r);
    if (!r->head && !r->s->peer_gone && r->s->parser.http_minor != 0)
        hk_buf_put(&r->s->out, "0\r\n\r\n", 5);
    r->streaming = false;
    hk_session_finish(r->s);
}

void hk_resp_abort_stream(struct hk_req *r)
{
    hk_resp_chunk(r);
    r->streaming = false;
    r->s->keep_alive = false;
    hk_session_finish(r->s);
}

void hk_resp_wait_drain(struct hk_req *r, hk_req_cb cb, hk_req_cb on_abort)
{
    struct hk_session *s = r->s;
    r->on_drain = cb;
    r->on_abort = on_abort;
    s->want_drain = true;
    if (s->peer_gone) {
        s->want_drain = false;
        r->on_drain = NULL;
        r->on_abort = NULL;
        on_abort(r);
        return;
    }
    s->io->flush(s);
}

void hk_resp_hold(struct hk_req *r, hk_req_cb gone)
{
    r->on_gone = gone;
    r->s->keep_alive = false;
}

void hk_resp_chunk_put(struct hk_req *r, const void *p, size_t n)
{
    struct hk_session *s = r->s;
    if (!n || r->head || s->peer_gone)
        return;
    bool chunked = s->parser.http_minor != 0;
    if (chunked)
        hk_buf_printf(&s->out, "%zx\r\n", n);
    hk_buf_put(&s->out, p, n);
    if (chunked)
        hk_buf_put(&s->out, "\r\n", 2);
    r->resp_bytes += n;
}

void hk_resp_flush(struct hk_req *r)
{
    struct hk_session *s = r->s;
    if (s->out.len && !s->peer_gone && !s->closed)
        s->io->flush(s);
}

size_t hk_resp_unsent(const struct hk_req *r)
{
    const struct hk_session *s = r->s;
    size_t inflight = s->io->inflight ? s->io->inflight(s) : s->out_inflight;
    return s->out.len + inflight + s->rbody.len;
}

void hk_resp_cut_stream(struct hk_req *r)
{
    struct hk_session *s = r->s;
    s->rbody.len = 0;
    s->out.len = 0;
    /* The transport closes a session whose peer is gone without flushing
     * or lingering: what was not sent is dropped, memory and descriptor go. */
    s->peer_gone = true;
    s->keep_alive = false;
    r->streaming = false;
    hk_session_finish(s);
}
