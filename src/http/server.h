/* SPDX-License-Identifier: MIT
 * The server: listening sockets, one event loop per thread (loop 0 on the
 * caller's), TCP connections feeding HTTP sessions, timeouts, connection
 * limit, graceful stop. It knows nothing of the application: that comes in
 * as a struct hk_app at start, whose hooks it calls on each loop. */
#ifndef HK_SERVER_H
#define HK_SERVER_H

#include <stdbool.h>
#include <stdint.h>
#include <time.h>
#include <uv.h>

#include "core/config.h"
#include "core/ctr.h"

struct hk_conn;
struct hk_server;
struct hk_worker;
struct hk_req;

/* The application, as the transport sees it: hooks called on the loop
 * thread of the worker concerned, never from another thread. */
struct hk_app {
    void *arg;                 /* the application's, passed to loop_start */
    /* Bytes of per-request state the application keeps (hk_req.app): one
     * block per connection, reused by each of its requests. */
    size_t req_size;
    /* A loop starts, on its thread, before it serves: *out receives the
     * application's per-loop state. Negative: the worker fails to start. */
    int (*loop_start)(void *arg, struct hk_worker *w, void **out);
    /* The loop is stopping: release what keeps it alive (store handles);
     * the loop then runs until those handles are closed. */
    void (*loop_stop)(void *loop_data);
    /* After the loop's last run. */
    void (*loop_free)(void *loop_data);
    /* A request starts: one the parser accepted, or one it refused and the
     * session answers itself (r->app is the request's state, not cleared). */
    void (*begin)(struct hk_req *r);
    /* Answer a parsed request: exactly one hk_resp_* ending, now or later. */
    void (*request)(struct hk_req *r);
    /* The request's response is complete (metrics, logs, cleanup). */
    void (*end)(struct hk_req *r);
    /* Optional, for routes that read a request while it arrives (ingress):
     * keep_headers says, from the path, whether the session keeps every
     * header of this request (hk_req_header). For those requests only:
     * `head` runs once the headers are in (r's path, query and headers are
     * set; begin has not run yet): 0 reads the body, an HTTP status refuses
     * the request before its body (the session then dispatches it at once
     * with r->refused set and closes after the answer). It may set
     * r->body_max and r->body_cb. `body` gets each piece of the body when
     * r->body_cb is set: 0, or a status to refuse the rest the same way.
     * `drop` runs when such a request ends without a response (the peer
     * left, the connection closed): release what `head` took. Between
     * `head` and `end` or `drop`, exactly one of them runs. */
    bool (*keep_headers)(const char *path, size_t len);
    int (*head)(struct hk_req *r);
    int (*body)(struct hk_req *r, const char *p, size_t n);
    void (*drop)(struct hk_req *r);
};

/* What the transport counts, per loop (one writer: the loop). */
struct hk_http_stats {
    hk_ctr accepted;
    hk_ctr closed;
    hk_ctr rejected;           /* over the connection limit: 503 and close */
    hk_ctr evicted;            /* idle kept-alive connections closed to admit a newcomer */
    hk_ctr shed;               /* peer stopped reading: send timeout or output buffer cap */
    hk_ctr accept_failed;      /* accept() failures (out of descriptors): accepting pauses */
    hk_ctr bytes_in;
    hk_ctr bytes_out;
};

/* Plain totals of hk_http_stats over a server's loops. */
struct hk_http_totals {
    uint64_t accepted, closed, rejected, evicted, shed, accept_failed, bytes_in, bytes_out;
    unsigned loops;
};

#define HK_REQ_ID_PREFIX_MAX 24

/* One event loop and its transport state. */
struct hk_worker {
    uv_loop_t loop;
    int index;
    struct hk_server *srv;     /* NULL when driven in memory (tests, fuzz) */
    const struct hk_config *cfg;
    const struct hk_app *app;
    void *app_loop;            /* the application's per-loop state (loop_start) */
    struct hk_http_stats stats;
    char rid_prefix[HK_REQ_ID_PREFIX_MAX]; /* request ids: "<12 hex>-<loop>-" + a counter */
    size_t rid_prefix_len;
    uint64_t rid_next;
    time_t date_sec;
    char date[30];             /* IMF-fixdate, 29 chars + NUL */
    /* Transport state (server.c). */
    uv_poll_t listener;        /* readiness of listen_fd; server.c accepts itself */
    int listen_fd;
    uv_timer_t accept_retry;   /* out of descriptors: accepting pauses, then retries */
    unsigned accept_backoff_ms;
    uint64_t accept_fail_since;/* loop ms when the current spell began; 0: none */
    unsigned long accept_fails;/* in the current spell */
    uv_async_t wake;
    uv_timer_t sweep;
    uint64_t sweep_ms;
    uv_timer_t drain;
    uv_timer_t finish;         /* the last hold released while stopping: finish from a callback of its own */
    uv_thread_t thread;
    char *rbuf;                /* shared read buffer: reads on a loop never overlap */
    size_t rbuf_len;
    struct hk_conn *conns;     /* doubly linked list of open connections */
    unsigned nconns;
    struct hk_conn *idle_head; /* kept-alive connections between requests, */
    struct hk_conn *idle_tail; /* longest idle first: closed to admit newcomers */
    size_t out_bytes;          /* output buffered on this loop's connections */
    size_t out_peak;           /* highest out_bytes since the last trim */
    unsigned holds;            /* the application's work in flight that the stop waits for */
    bool stopping;
    bool listening;
    bool listener_open;
    bool accept_paused;
    bool app_stopped;
    bool finished;
};

/* Current Date header value (29 bytes, not NUL-terminated for callers). */
const char *hk_worker_date(struct hk_worker *w);

/* Initialise a worker's loop and start the application on it, on the
 * calling thread (tests and the fuzzer drive such a worker without a
 * server). `app` is borrowed for the worker's life. */
int hk_worker_init(struct hk_worker *w, const struct hk_config *cfg, const struct hk_app *app);
/* Stop the application on the loop, run the loop until its handles closed,
 * close the loop. */
void hk_worker_fini(struct hk_worker *w);
/* The application's per-loop state of the loop serving `w`. */
static inline void *hk_worker_app(const struct hk_worker *w)
{
    return w->app_loop;
}
/* The application has work on this loop that no connection stands for (a
 * background store op): the graceful stop waits for it before calling
 * loop_stop, as it waits for connections. False once the loop is
 * stopping: start nothing then. Each true is matched by one release, which
 * may come from inside the work's own callback (the stop then goes on
 * from a callback of its own, never inside the caller's). */
bool hk_worker_hold(struct hk_worker *w);
void hk_worker_release(struct hk_worker *w);
/* hk_http_stats summed over every loop of w's server (just w without one).
 * Any loop's thread. */
void hk_worker_totals(struct hk_worker *w, struct hk_http_totals *out);

/* Bind, set up loop 0 on the calling thread, start one thread for each
 * other loop, and return once every loop is listening. `bound_port`
 * receives the port (useful with port 0). `cfg` and `app` are borrowed
 * until hk_server_free. */
int hk_server_start(struct hk_server **out, const struct hk_config *cfg, const struct hk_app *app,
                    int *bound_port, char *err, size_t errlen);
/* Loop 0, for the caller's own handles (signals, timers) next to it. */
uv_loop_t *hk_server_loop(struct hk_server *srv);
/* Run loop 0 until it has stopped and the caller's handles on it closed. */
void hk_server_run(struct hk_server *srv);
/* Begin the graceful stop on every loop: stop accepting, let in-flight
 * requests finish (bounded by the drain timeout). Safe from loop 0's
 * callbacks. With `idle` (HOOKD_EXIT_IDLE_AFTER) a connection accepted in
 * the meantime that has not sent anything yet is still answered once
 * instead of being closed. */
void hk_server_shutdown(struct hk_server *srv, bool idle);
/* After hk_server_run returned: join the other loops, close loop 0. */
void hk_server_join(struct hk_server *srv);
/* Connections open now, and accepted since the start: the caller compares
 * two readings to tell whether anything connected in between. Thread-safe. */
void hk_server_activity(struct hk_server *srv, unsigned *open, unsigned long *accepted);
void hk_server_free(struct hk_server *srv);

#endif
