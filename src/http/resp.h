/* SPDX-License-Identifier: MIT
 * Writing responses: status line and the headers every response carries
 * (Date, Content-Length or chunked, Connection), problem+json errors, and
 * chunked streams. Each request ends with exactly one of hk_resp_send,
 * hk_resp_problem* or hk_resp_end_stream. */
#ifndef HK_RESP_H
#define HK_RESP_H

#include "http/session.h"

#define HK_CT_JSON "application/json"
#define HK_CT_PROBLEM "application/problem+json"

/* The body under construction (empty at the start of each request). */
static inline struct hk_buf *hk_resp_body(struct hk_req *r)
{
    return &r->s->rbody;
}

/* Add a header line to the response under construction. */
void hk_resp_header(struct hk_req *r, const char *name, const char *value, size_t len);

/* Write status, headers and the body in hk_resp_body(r); ends the request. */
void hk_resp_send(struct hk_req *r, int status, const char *content_type);

/* application/problem+json {"type","title","status","detail"}; ends the request.
 * `title` NULL means the status's reason phrase. */
void hk_resp_problem(struct hk_req *r, int status, const char *title, const char *detail_fmt, ...)
    __attribute__((format(printf, 4, 5)));
/* Append ,"instance":"urn:request:<request id>" to a problem+json body
 * under construction (for handlers that build their own problem). */
void hk_resp_put_instance(struct hk_req *r, struct hk_buf *b);
/* A problem with an extra stable member "reason" (a snake_case token
 * clients may branch on), for refusals that are not temporary (401, 403).
 * Ends the request. */
void hk_resp_problem_reason(struct hk_req *r, int status, const char *reason, const char *detail_fmt, ...)
    __attribute__((format(printf, 4, 5)));
/* A temporary, environmental failure (overload, a full disk, a store that is
 * down): `status` (503, or 507 for a full disk) with `Retry-After:
 * <retry_after_s>` and a problem whose extra member "reason" is `reason`, a
 * stable snake_case token clients may branch on ("disk_full",
 * "database_locked", ...); the detail is for people. Logged at debug level
 * only: such failures come in floods and are counted in /q/metrics. Ends
 * the request. */
void hk_resp_unavailable(struct hk_req *r, int status, const char *reason, unsigned retry_after_s,
                         const char *detail_fmt, ...) __attribute__((format(printf, 5, 6)));
/* Map a store error (HK_E*) to its status and problem, once for every
 * handler: 404, 409, 503/507 with a reason and Retry-After (see
 * hk_resp_unavailable), or for an unexpected code a 500 with reason
 * "internal_error", which logs a warn line with the code (the body never
 * shows it). Ends the request. */
void hk_resp_store_error(struct hk_req *r, int err);

/* Chunked streaming: begin writes the headers; each chunk sends what is in
 * hk_resp_body(r) as one chunk and empties it; end writes the last chunk
 * (after the body still in hk_resp_body) and ends the request. */
void hk_resp_begin_stream(struct hk_req *r, int status, const char *content_type);
void hk_resp_chunk(struct hk_req *r);
void hk_resp_end_stream(struct hk_req *r);
/* A stream that cannot complete (store failed midway): send what is there,
 * omit the last chunk so the client sees a truncated body, close. */
void hk_resp_abort_stream(struct hk_req *r);

/* Ask the transport to send what is queued and call `cb` once it is all
 * handed to the kernel (or on_abort if the peer goes away). */
void hk_resp_wait_drain(struct hk_req *r, hk_req_cb cb, hk_req_cb on_abort);

/* Responses that stay open (Server-Sent Events). hold: the handler
 * writes whenever it likes, from any callback on the loop, until it ends
 * the request; no timeout applies but the transport's send timeout (a peer
 * that takes nothing for the idle timeout). `gone` runs once if the peer
 * goes away first (EOF, a failed write, the output cap shedding it); the
 * handler then ends the request, at once. The connection closes when the
 * response ends (the end is the client's cue to reconnect): held before
 * the head, the head says Connection: close. The server's stop calls
 * r->on_cancel as for any request. */
void hk_resp_hold(struct hk_req *r, hk_req_cb gone);
/* Append n bytes as one chunk (HTTP/1.0: as they are), straight to the
 * output. Nothing is sent before hk_resp_flush. */
void hk_resp_chunk_put(struct hk_req *r, const void *p, size_t n);
/* Hand the output to the transport now (a write may fail inside: a held
 * response's `gone` can run before this returns). */
void hk_resp_flush(struct hk_req *r);
/* Response bytes hookd holds that the peer has not taken yet: queued, and
 * handed to a write not finished (the kernel's socket buffer is not
 * counted). */
size_t hk_resp_unsent(const struct hk_req *r);
/* End a stream at once, dropping what is not sent yet, and close the
 * connection without waiting for the peer (one that reads too slowly to
 * keep, or a server that stops). Ends the request. */
void hk_resp_cut_stream(struct hk_req *r);

const char *hk_status_reason(int status);


#endif
