/* SPDX-License-Identifier: MIT
 * An in-memory transport for a session: tests and the fuzzer feed bytes and
 * read what the server would have sent, through the real request path. */
#ifndef HK_MEMIO_H
#define HK_MEMIO_H

#include "http/server.h"
#include "http/session.h"

struct hk_memio {
    struct hk_session s;
    struct hk_buf sent;        /* every byte the session sent */
    uv_timer_t drain;          /* drained notifications come asynchronously */
    bool closed;               /* the session asked to close */
    void *app;                 /* the application's per-request block */
};

/* `w` must have been set up with hk_worker_init. */
void hk_memio_init(struct hk_memio *m, struct hk_worker *w);
void hk_memio_feed(struct hk_memio *m, const void *p, size_t n);
/* Run the loop until no request is in progress. */
void hk_memio_settle(struct hk_memio *m);
/* Release; runs the loop until the timer handle is closed. */
void hk_memio_free(struct hk_memio *m);

#endif
