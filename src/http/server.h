/* SPDX-License-Identifier: MIT
 * The server: listening sockets, one event loop per thread (loop 0 on the
 * caller's), TCP connections feeding HTTP sessions, timeouts, connection
 * limit, graceful stop. */
#ifndef HK_SERVER_H
#define HK_SERVER_H

#include <stdbool.h>
#include <stdint.h>
#include <time.h>
#include <uv.h>

#include "core/config.h"
#include "store/store.h"

struct hk_conn;
struct hk_server;

/* Per-loop context: everything a handler may need lives here. */
struct hk_worker {
    uv_loop_t loop;
    int index;
    struct hk_server *srv;     /* NULL when driven in memory (tests, fuzz) */
    const struct hk_config *cfg;
    struct hk_store *store;
    struct hk_store_loop *sl;
    struct hk_obs *obs;        /* metrics, request ids, access log (obs/obs.h) */
    uint64_t start_ns;         /* process start (hk_mono_ns) */
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
    uv_thread_t thread;
    char *rbuf;                /* shared read buffer: reads on a loop never overlap */
    size_t rbuf_len;
    struct hk_conn *conns;     /* doubly linked list of open connections */
    unsigned nconns;
    struct hk_conn *idle_head; /* kept-alive connections between requests, */
    struct hk_conn *idle_tail; /* longest idle first: closed to admit newcomers */
    size_t out_bytes;          /* output buffered on this loop's connections */
    size_t out_peak;           /* highest out_bytes since the last trim */
    bool stopping;
    bool listening;
    bool listener_open;
    bool accept_paused;
    bool finished;
};

/* Current Date header value (29 bytes, not NUL-terminated for callers). */
const char *hk_worker_date(struct hk_worker *w);

/* Initialise a worker's loop and attach the store on the calling thread
 * (tests and the fuzzer drive such a worker without a server). */
int hk_worker_init(struct hk_worker *w, const struct hk_config *cfg, struct hk_store *store);
/* Detach the store, run the loop until its handles closed, close the loop. */
void hk_worker_fini(struct hk_worker *w);

/* Bind, set up loop 0 on the calling thread, start one thread for each
 * other loop, and return once every loop is listening. `bound_port`
 * receives the port (useful with port 0). */
int hk_server_start(struct hk_server **out, const struct hk_config *cfg, struct hk_store *store,
                    uint64_t start_ns, int *bound_port, char *err, size_t errlen);
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
