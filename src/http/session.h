/* SPDX-License-Identifier: MIT
 * One HTTP/1.1 connection's protocol state, independent of the transport:
 * bytes in (hk_session_feed), parsed by llhttp into one request at a time,
 * handed to the router, responses appended to `out` for the transport to send.
 * Pipelined requests wait in `in` while a handler is pending, and while the
 * output not yet taken by the peer is over HK_OUT_HIGH (backpressure: a
 * client that pipelines and never reads costs a bounded amount of memory). */
#ifndef HK_SESSION_H
#define HK_SESSION_H

#include <llhttp.h>
#include <sys/socket.h>
#include <stdbool.h>
#include <stdint.h>

#include "core/buf.h"

/* Unsent output above which a session parses no further request (and its
 * transport reads no further bytes) until the peer has taken some. */
#define HK_OUT_HIGH (64 * 1024)
/* Bytes of chunk extensions allowed on one chunk (they are ignored). */
#define HK_CHUNK_EXT_MAX 256

struct hk_worker;
struct hk_session;
struct hk_req;

/* What a transport provides. */
struct hk_session_io {
    /* Output is waiting in s->out: send it (now or later). When everything
     * has been handed to the kernel and s->want_drain is set, call
     * hk_session_drained() - never from inside flush itself. */
    void (*flush)(struct hk_session *s);
    /* The session is finished (after a flush of its last output): close the
     * transport. hk_session_free() may be called from here or later. */
    void (*close)(struct hk_session *s);
    /* Optional: of what the transport has taken (out_inflight), the bytes
     * not in the kernel yet; NULL: all of out_inflight counts. */
    size_t (*inflight)(const struct hk_session *s);
};

struct hk_span {
    uint32_t off, len;        /* in hk_session.head */
    bool present;
};

typedef void (*hk_req_cb)(struct hk_req *r);

#define HK_REQ_ID_MAX 128

/* The request being served. Pointers are valid until the response is done. */
struct hk_req {
    struct hk_session *s;
    void *app;                 /* the application's per-request block (hk_app.req_size bytes) */
    uint8_t method;            /* llhttp_method_t */
    bool head;                 /* HEAD: headers only */
    const char *path;
    size_t path_len;
    const char *query;         /* after '?', or NULL */
    size_t query_len;
    const char *content_type;  /* NULL when absent */
    size_t content_type_len;
    const char *idem_key;      /* Idempotency-Key, NUL-terminated, or NULL */
    size_t idem_key_len;
    const char *signature;     /* X-Hub-Signature-256, NUL-terminated, or NULL */
    size_t signature_len;
    const char *accept;        /* Accept, NUL-terminated, or NULL */
    size_t accept_len;
    const char *authorization; /* Authorization, NUL-terminated, or NULL */
    size_t authorization_len;
    const char *cookie;        /* Cookie, NUL-terminated, or NULL */
    size_t cookie_len;
    const char *csrf;          /* X-CSRF-Token, NUL-terminated, or NULL */
    size_t csrf_len;
    const char *last_event_id; /* Last-Event-ID (Server-Sent Events), NUL-terminated, or NULL */
    size_t last_event_id_len;
    const struct hk_buf *body;
    uint64_t content_length;   /* as announced; UINT64_MAX when none (chunked, or no body) */
    /* Set by hk_app.head (zero otherwise): a body limit for this request
     * instead of HOOKD_MAX_BODY_BYTES, and whether hk_app.body sees the
     * body as it arrives. */
    uint64_t body_max;
    bool body_cb;
    /* hk_app.head or .body refused the request with this status before
     * its body was read (0: not refused). The handler answers it. */
    int refused;
    uint64_t start_ns;
    /* Set by a handler that waits for hk_session_drained (streams). */
    hk_req_cb on_drain;
    /* Called instead of on_drain when the peer went away mid-stream: the
     * handler must release what it holds and call hk_resp_end_stream(). */
    hk_req_cb on_abort;
    /* Set by a handler whose work can be called off (queued off-loop work):
     * called once when the server stops. The handler still ends the
     * request, now or when its work comes back. */
    hk_req_cb on_cancel;
    /* Set by hk_resp_hold (a response that stays open): called once when
     * the peer goes away first (EOF, a failed write, the transport shedding
     * the connection); the handler must then end the request. */
    hk_req_cb on_gone;
    /* The handler's own pointer while the request is in it (NULL at its
     * start), for callbacks that get only the request. */
    void *handler_data;
    bool streaming;
    bool routed;               /* parsed and handed to the application (not refused by the parser) */
    int status;                /* of the response, once its head is written */
    uint64_t resp_bytes;       /* body bytes sent (access log) */
    uint8_t req_id_len;
    char req_id[HK_REQ_ID_MAX + 1]; /* X-Request-Id: the client's (printable ASCII) or generated */
};

/* Which interesting header a value belongs to (parse bookkeeping). */
enum hk_hdr_id {
    HK_H_OTHER, HK_H_CONTENT_TYPE, HK_H_EXPECT, HK_H_IDEM_KEY, HK_H_SIGNATURE, HK_H_HOST, HK_H_REQUEST_ID,
    HK_H_ACCEPT, HK_H_AUTHORIZATION, HK_H_COOKIE, HK_H_CSRF, HK_H_LAST_EVENT_ID, HK_H__COUNT
};

struct hk_session {
    llhttp_t parser;
    struct hk_worker *w;
    const struct hk_session_io *io;
    void *io_data;
    struct hk_buf in;          /* received but not parsed yet: [in_pos, in.len) */
    size_t in_pos;
    struct hk_buf head;        /* URL + the header values hookd reads */
    struct hk_buf body;
    struct hk_buf out;         /* bytes for the transport */
    size_t out_inflight;       /* bytes the transport has taken but the kernel has not (transport sets it) */
    struct hk_buf rbody;       /* response body under construction */
    struct hk_buf rhdr;        /* extra response headers under construction */
    struct hk_buf hdrs;        /* keep_all: every header, "name\0value\0" in arrival order */
    struct hk_req req;
    struct hk_span url;
    struct hk_span hdr[HK_H__COUNT];
    uint32_t field_off;        /* start of the current header name in head */
    enum hk_hdr_id cur;
    uint32_t header_bytes;
    uint32_t chunk_ext_bytes;  /* of the current chunk */
    uint32_t served;           /* requests answered on this connection */
    int err_status;            /* set by a parser callback that rejects */
    const char *err_detail;
    uint64_t deadline_ms;      /* 0: none. Checked by the transport's sweep */
    bool deadline_408;         /* on expiry answer 408 (a request was started) */
    bool in_message;           /* between message begin and complete */
    bool busy;                 /* a handler is working on req */
    bool feeding;              /* inside hk_session_feed */
    bool keep_alive;           /* of the current request */
    bool closing;              /* close once `out` is flushed */
    bool closed;               /* io->close was called */
    bool peer_gone;            /* transport failed: output can't be delivered */
    bool eof;                  /* no more input will come */
    bool want_drain;
    bool draining_server;      /* the server is shutting down: answer with close */
    bool expect_continue;
    bool keep_all;             /* the application keeps every header of this request */
    bool app_head;             /* hk_app.head ran: `end` or `drop` is owed */
    bool app_refused;          /* the parser stopped because the application refused */
    bool value_cut;            /* the last piece of a header value ended before the input did */
    uint8_t peer[16];          /* the client's address, IPv6 or v4-mapped (transport sets it) */
    bool peer_loopback;        /* 127.0.0.0/8 or ::1 */
    uint8_t crlf_pending;      /* CRLF bytes after chunk data still to check */
    uint64_t chunk_left;
    const char *cur_end;       /* end of the bytes being parsed */
};

/* The client's address as 16 bytes (v4-mapped for IPv4), for the transport. */
void hk_session_set_peer(struct hk_session *s, const struct sockaddr *sa);

/* A header of a request whose path the application asked for
 * (hk_app.keep_headers): the first value of `name` (ASCII, matched
 * case-insensitively) and its length, NULL when absent; *count (may be
 * NULL) gets how many times it was sent. Valid until the response is done. */
const char *hk_req_header(const struct hk_req *r, const char *name, size_t *len, unsigned *count);
/* Call fn for every kept header, in arrival order. */
void hk_req_headers_each(const struct hk_req *r, void (*fn)(void *arg, const char *name, size_t name_len,
                                                            const char *value, size_t value_len),
                         void *arg);

/* Prepare `s` (zeroed memory, or a session released with hk_session_free). */
void hk_session_init(struct hk_session *s, struct hk_worker *w, const struct hk_session_io *io,
                     void *io_data);
/* Release buffers. Only when !s->busy. */
void hk_session_free(struct hk_session *s);
/* Feed received bytes. The session copies what it keeps. */
void hk_session_feed(struct hk_session *s, const char *p, size_t n);
/* The transport saw EOF or an error: no more input. If `fatal`, output can
 * no longer be delivered either. A held response (hk_resp_hold) hears of
 * either through its on_gone: its peer has nothing more to ask, so EOF
 * means it left. */
void hk_session_eof(struct hk_session *s, bool fatal);
/* All output handed to the kernel; runs the waiting handler's on_drain. */
void hk_session_drained(struct hk_session *s);
/* Deadline passed (transport's sweep): 408 + close, or a quiet close. */
void hk_session_timeout(struct hk_session *s);
/* Connection limit reached: answer 503 + Retry-After and close. */
void hk_session_overload(struct hk_session *s);
/* Server shutdown: an idle session closes now; a busy one after its response. */
void hk_session_shutdown(struct hk_session *s);
/* Bytes not yet parsed (the transport stops reading past a bound). */
static inline size_t hk_session_backlog(const struct hk_session *s)
{
    return s->in.len - s->in_pos;
}
/* Output the peer has not taken yet is over the bound: read and parse no more. */
static inline bool hk_session_out_full(const struct hk_session *s)
{
    return s->out.len + s->out_inflight > HK_OUT_HIGH;
}
/* Between requests on a kept-alive connection, with nothing buffered either
 * way: the transport may close it to admit a new client. */
static inline bool hk_session_idle(const struct hk_session *s)
{
    return s->served > 0 && !s->busy && !s->in_message && !s->closing && !s->closed &&
           s->in.len == s->in_pos && s->out.len == 0 && s->out_inflight == 0;
}
/* The transport's output went below the bound: go on with pipelined requests. */
void hk_session_resume(struct hk_session *s);

/* Called by the response layer when the current response is complete. */
void hk_session_finish(struct hk_session *s);

#endif
