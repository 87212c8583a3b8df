/* SPDX-License-Identifier: MIT
 * The transport: SO_REUSEPORT listeners (one per loop), TCP connections
 * that move bytes between the kernel and their HTTP session, a periodic
 * sweep for timeouts, the connection limit, and the graceful stop. */
#include "http/server.h"

#include <assert.h>
#include <errno.h>
#include <malloc.h>
#include <netinet/tcp.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <unistd.h>

#include "core/clock.h"
#include "core/log.h"
#include "http/resp.h"
#include "http/listen.h"
#include "http/session.h"

#define RBUF_SIZE (64 * 1024)
#define BACKLOG_MAX (256 * 1024)   /* unparsed input: stop reading past it */
#define LINGER_MS 2000
#define OUT_KEEP (16 * 1024)       /* output capacity kept between responses */
/* Output buffered for peers, all loops together. Over it, the connections
 * whose output has waited longest are closed until a quarter is free. */
#define OUT_TOTAL_MAX (64 * 1024 * 1024)
/* After a burst: give freed memory back once the loop's buffers are small. */
#define TRIM_PEAK (4 * 1024 * 1024)
#define ACCEPT_BATCH 64            /* accepts per wakeup, for fairness */
#define ACCEPT_BACKOFF_MIN_MS 20
#define ACCEPT_BACKOFF_MAX_MS 1000

struct hk_conn {
    uv_tcp_t tcp;
    struct hk_session s;
    struct hk_worker *w;
    struct hk_conn *prev, *next;
    struct hk_conn *iprev, *inext; /* in the worker's idle list when `idle_listed` */
    uv_write_t wreq;
    uv_shutdown_t sreq;
    struct hk_buf wbuf;        /* bytes in flight in wreq */
    uint64_t linger_until;
    size_t acct;               /* this connection's share of w->out_bytes */
    uint64_t write_since;      /* loop ms of the last write progress while writing */
    size_t write_left;         /* bytes the pending write still had then */
    bool idle_listed;
    bool writing;
    bool reading;
    bool close_pending;        /* the session is done: close after the last write */
    bool lingering;            /* FIN sent, discarding input until EOF or timeout */
    bool tcp_closed;           /* uv_close called */
    bool got_input;            /* received at least one byte */
};

struct hk_server {
    const struct hk_config *cfg;
    const struct hk_app *app;
    struct hk_worker *workers;
    int nworkers;
    atomic_uint nconns;
    atomic_ulong accepted;     /* ever, for the idle-exit check */
    atomic_bool idle_stop;     /* stopping because nothing connected for a while */
    uv_sem_t ready;
    int failed;
};

/* IMF-fixdate by hand: strftime would call tzset() and read
 * /etc/localtime for a header that is always GMT. */
const char *hk_worker_date(struct hk_worker *w)
{
    static const char days[7][4] = {"Sun", "Mon", "Tue", "Wed", "Thu", "Fri", "Sat"};
    static const char months[12][4] = {"Jan", "Feb", "Mar", "Apr", "May", "Jun",
                                       "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"};
    time_t now = time(NULL);
    if (now != w->date_sec) {
        struct tm tm;
        hk_utc_tm((int64_t)now, &tm);
        if (tm.tm_wday < 0 || tm.tm_wday > 6 || tm.tm_mon < 0 ||
            tm.tm_mon > 11 || tm.tm_year < 0 || tm.tm_year > 9999 - 1900 || tm.tm_sec > 60) {
            /* A clock beyond what the format can say: a valid header still. */
            if (w->date[0] == '\0')
                memcpy(w->date, "Thu, 01 Jan 1970 00:00:00 GMT", sizeof w->date);
            return w->date;
        }
        /* "Sun, 06 Nov 1994 08:49:37 GMT": fixed positions. */
        char *d = w->date;
        int year = tm.tm_year + 1900;
        memcpy(d, "Xxx, 00 Xxx 0000 00:00:00 GMT", sizeof w->date);
        memcpy(d, days[tm.tm_wday], 3);
        d[5] = (char)('0' + tm.tm_mday / 10), d[6] = (char)('0' + tm.tm_mday % 10);
        memcpy(d + 8, months[tm.tm_mon], 3);
        d[12] = (char)('0' + year / 1000), d[13] = (char)('0' + year / 100 % 10);
        d[14] = (char)('0' + year / 10 % 10), d[15] = (char)('0' + year % 10);
        d[17] = (char)('0' + tm.tm_hour / 10), d[18] = (char)('0' + tm.tm_hour % 10);
        d[20] = (char)('0' + tm.tm_min / 10), d[21] = (char)('0' + tm.tm_min % 10);
        d[23] = (char)('0' + tm.tm_sec / 10), d[24] = (char)('0' + tm.tm_sec % 10);
        w->date_sec = now;
    }
    return w->date;
}

static void conn_flush(struct hk_session *s);
static void conn_close(struct hk_session *s);

/* The application's hold on the loop (store handles) goes, once. */
static void app_stop(struct hk_worker *w)
{
    if (w->app_loop && !w->app_stopped && w->app->loop_stop)
        w->app->loop_stop(w->app_loop);
    w->app_stopped = true;
}

static void on_sweep_now(uv_timer_t *t);
static void on_alloc(uv_handle_t *h, size_t suggested, uv_buf_t *buf);
static void on_read(uv_stream_t *st, ssize_t nread, const uv_buf_t *buf);
static void tcp_close(struct hk_conn *c);

static void idle_del(struct hk_conn *c)
{
    struct hk_worker *w = c->w;
    if (!c->idle_listed)
        return;
    if (c->iprev)
        c->iprev->inext = c->inext;
    else
        w->idle_head = c->inext;
    if (c->inext)
        c->inext->iprev = c->iprev;
    else
        w->idle_tail = c->iprev;
    c->iprev = c->inext = NULL;
    c->idle_listed = false;
}

/* The session waits for its next request with nothing buffered: the newest
 * idle connection goes last. */
static void idle_add(struct hk_conn *c)
{
    struct hk_worker *w = c->w;
    if (c->idle_listed || c->tcp_closed || c->close_pending || !hk_session_idle(&c->s))
        return;
    c->iprev = w->idle_tail;
    c->inext = NULL;
    if (w->idle_tail)
        w->idle_tail->inext = c;
    else
        w->idle_head = c;
    w->idle_tail = c;
    c->idle_listed = true;
}

static size_t out_total_max(const struct hk_worker *w)
{
    return OUT_TOTAL_MAX / (size_t)(w->srv ? w->srv->nworkers : 1);
}

/* Keep w->out_bytes equal to the output held by this loop's connections.
 * Over the loop's share of the cap, the sweep runs at once to shed. */
static void account(struct hk_conn *c)
{
    struct hk_worker *w = c->w;
    size_t cur = c->tcp_closed ? 0 : c->s.out.len + (c->writing ? c->wbuf.len : 0);
    w->out_bytes = w->out_bytes - c->acct + cur;
    c->acct = cur;
    if (w->out_bytes > w->out_peak)
        w->out_peak = w->out_bytes;
    if (w->out_bytes > out_total_max(w) && !w->stopping)
        uv_timer_start(&w->sweep, on_sweep_now, 0, 0);
}

/* Read again once the output is under its bound and the input backlog
 * is small, unless the session or the transport is done with input. */
static void maybe_read(struct hk_conn *c)
{
    struct hk_session *s = &c->s;
    if (c->reading || c->tcp_closed || c->lingering || c->close_pending || s->eof || s->closing)
        return;
    if (hk_session_out_full(s) || hk_session_backlog(s) >= BACKLOG_MAX / 2)
        return;
    if (uv_read_start((uv_stream_t *)&c->tcp, on_alloc, on_read) == 0)
        c->reading = true;
}

/* Give up on a connection whose peer does not take its output. A busy
 * session is told the peer is gone and closes once its handler is done. */
static void conn_abort(struct hk_conn *c)
{
    hk_ctr_add(&c->w->stats.shed, 1);
    if (c->s.closed || c->close_pending)
        tcp_close(c);
    else
        hk_session_eof(&c->s, true);
}

/* Once stopping, the listener is gone and no connection is left: close the
 * loop's own handles and stop the application, so that uv_run returns. */
static void maybe_finish(struct hk_worker *w)
{
    if (!w->stopping || w->listener_open || w->conns || w->holds || w->finished)
        return;
    w->finished = true;
    uv_close((uv_handle_t *)&w->wake, NULL);
    uv_close((uv_handle_t *)&w->sweep, NULL);
    uv_close((uv_handle_t *)&w->drain, NULL);
    uv_close((uv_handle_t *)&w->finish, NULL);
    uv_close((uv_handle_t *)&w->accept_retry, NULL);
    app_stop(w);
}
/* A write in progress keeps its whole buffer; what libuv has not handed
 * to the kernel yet is its queue size. */
static size_t conn_inflight(const struct hk_session *s)
{
    const struct hk_conn *c = s->io_data;
    return c->writing && !c->tcp_closed ? c->tcp.write_queue_size : 0;
}

static const struct hk_session_io tcp_io = {conn_flush, conn_close, conn_inflight};

bool hk_worker_hold(struct hk_worker *w)
{
    if (w->stopping)
        return false;
    w->holds++;
    return true;
}

static void on_finish(uv_timer_t *t)
{
    maybe_finish(t->data);
}

void hk_worker_release(struct hk_worker *w)
{
    assert(w->holds > 0);
    if (--w->holds == 0 && w->stopping && w->srv && !w->finished)
        uv_timer_start(&w->finish, on_finish, 0, 0);
}

static void on_tcp_closed(uv_handle_t *h)
{
    struct hk_conn *c = h->data;
    struct hk_worker *w = c->w;
    if (c->prev)
        c->prev->next = c->next;
    else
        w->conns = c->next;
    if (c->next)
        c->next->prev = c->prev;
    w->nconns--;
    idle_del(c);
    w->out_bytes -= c->acct;
    c->acct = 0;
    hk_ctr_add(&w->stats.closed, 1);
    if (w->srv)
        atomic_fetch_sub(&w->srv->nconns, 1);
    hk_session_free(&c->s);
    hk_buf_free(&c->wbuf);
    free(c);
    maybe_finish(w);
}

static void tcp_close(struct hk_conn *c)
{
    if (c->tcp_closed)
        return;
    idle_del(c);
    c->tcp_closed = true;
    uv_close((uv_handle_t *)&c->tcp, on_tcp_closed);
}

static void on_shutdown(uv_shutdown_t *req, int status)
{
    struct hk_conn *c = req->data;
    if (status < 0 || !c->reading)
        tcp_close(c);
}

/* Half-close and read until the peer closes, so that a response to a
 * request whose body we did not read is not destroyed by an RST. */
static void start_linger(struct hk_conn *c)
{
    if (c->lingering || c->tcp_closed)
        return;
    c->lingering = true;
    /* While stopping, a client that keeps its end open must not hold the exit up. */
    c->linger_until = uv_now(&c->w->loop) + (c->w->stopping ? LINGER_MS / 10 : LINGER_MS);
    c->sreq.data = c;
    if (uv_shutdown(&c->sreq, (uv_stream_t *)&c->tcp, on_shutdown) < 0)
        tcp_close(c);
}

static void on_write(uv_write_t *req, int status)
{
    struct hk_conn *c = req->data;
    c->writing = false;
    c->s.out_inflight = 0;
    if (status == 0)
        hk_ctr_add(&c->w->stats.bytes_out, c->wbuf.len);
    c->wbuf.len = 0;
    hk_buf_reset(&c->wbuf, OUT_KEEP);
    account(c);
    if (status < 0) {
        if (c->close_pending) {
            tcp_close(c);
            return;
        }
        hk_session_eof(&c->s, true);
        return;
    }
    if (c->s.out.len) {
        conn_flush(&c->s);
        return;
    }
    if (c->close_pending) {
        start_linger(c);
        return;
    }
    if (c->s.want_drain) {
        hk_session_drained(&c->s);
        return;
    }
    /* Backpressure released: the pipelined requests that waited go on. */
    hk_session_resume(&c->s);
    if (!c->tcp_closed && !c->writing) {
        maybe_read(c);
        idle_add(c);
    }
}

static void on_alloc(uv_handle_t *h, size_t suggested, uv_buf_t *buf)
{
    (void)suggested;
    struct hk_conn *c = h->data;
    buf->base = c->w->rbuf;
    buf->len = c->w->rbuf_len;
}

static void on_read(uv_stream_t *st, ssize_t nread, const uv_buf_t *buf)
{
    struct hk_conn *c = st->data;
    if (nread > 0) {
        c->got_input = true;
        if (c->lingering || c->close_pending)
            return;
        hk_ctr_add(&c->w->stats.bytes_in, (uint64_t)nread);
        idle_del(c);
        hk_session_feed(&c->s, buf->base, (size_t)nread);
        /* Stop reading while the peer does not take what it asked for, or
         * while what it sent waits unparsed: both bound this connection's
         * memory, whatever it pipelines. */
        if (!c->tcp_closed && c->reading &&
            (hk_session_backlog(&c->s) > BACKLOG_MAX || hk_session_out_full(&c->s))) {
            uv_read_stop(st);
            c->reading = false;
        }
        return;
    }
    if (nread == 0)
        return;
    if (c->lingering || c->close_pending) {
        uv_read_stop(st);
        c->reading = false;
        if (c->lingering)
            tcp_close(c);
        return;
    }
    uv_read_stop(st);
    c->reading = false;
    hk_session_eof(&c->s, nread != UV_EOF);
}

static void conn_flush(struct hk_session *s)
{
    struct hk_conn *c = s->io_data;
    if (c->tcp_closed)
        return;
    if (c->writing) {
        account(c);
        return;
    }
    if (!s->out.len && !s->want_drain) {
        maybe_read(c);
        idle_add(c);
        return;
    }
    if (!s->want_drain && s->out.len) {
        uv_buf_t b = uv_buf_init(s->out.p, (unsigned)s->out.len);
        int n = uv_try_write((uv_stream_t *)&c->tcp, &b, 1);
        if (n > 0)
            hk_ctr_add(&c->w->stats.bytes_out, (uint64_t)n);
        if (n == (int)s->out.len) {
            hk_buf_reset(&s->out, OUT_KEEP);
            account(c);
            maybe_read(c);
            idle_add(c);
            return;
        }
        if (n < 0 && n != UV_EAGAIN) {
            s->out.len = 0;
            account(c);
            if (c->close_pending)
                tcp_close(c);
            else
                hk_session_eof(s, true);
            return;
        }
        if (n > 0) {
            memmove(s->out.p, s->out.p + n, s->out.len - (size_t)n);
            s->out.len -= (size_t)n;
        }
    }
    /* Hand the rest to uv_write; `out` keeps collecting meanwhile. */
    struct hk_buf t = c->wbuf;
    c->wbuf = s->out;
    s->out = t;
    s->out.len = 0;
    uv_buf_t b = uv_buf_init(c->wbuf.p, (unsigned)c->wbuf.len);
    c->wreq.data = c;
    int rc = uv_write(&c->wreq, (uv_stream_t *)&c->tcp, &b, 1, on_write);
    if (rc < 0) {
        c->wbuf.len = 0;
        account(c);
        if (c->close_pending)
            tcp_close(c);
        else
            hk_session_eof(s, true);
        return;
    }
    c->writing = true;
    s->out_inflight = c->wbuf.len;
    c->write_since = uv_now(&c->w->loop);
    c->write_left = c->wbuf.len;
    account(c);
    if (!hk_session_out_full(s))
        maybe_read(c);
}

static void conn_close(struct hk_session *s)
{
    struct hk_conn *c = s->io_data;
    c->close_pending = true;
    if (s->peer_gone) {
        tcp_close(c);
        return;
    }
    if (s->out.len)
        conn_flush(s);
    if (!c->writing && !c->tcp_closed)
        start_linger(c);
}

/* Close the longest-idle kept-alive connection of this loop, as nginx and
 * h2o do at their limit: a newcomer is worth more than a socket that
 * holds a slot doing nothing. False when there is none. */
static bool evict_idle(struct hk_worker *w)
{
    while (w->idle_head) {
        struct hk_conn *c = w->idle_head;
        idle_del(c);
        if (c->tcp_closed || c->close_pending || c->lingering || c->writing || !hk_session_idle(&c->s))
            continue;
        hk_ctr_add(&w->stats.evicted, 1);
        tcp_close(c);
        return true;
    }
    return false;
}

static void conn_new(struct hk_worker *w, int fd, const struct sockaddr *peer)
{
    /* The application's per-request block follows the connection. */
    size_t off = (sizeof(struct hk_conn) + _Alignof(max_align_t) - 1) & ~(_Alignof(max_align_t) - 1);
    struct hk_conn *c = calloc(1, off + w->app->req_size);
    if (!c)
        abort();
    c->w = w;
    uv_tcp_init(&w->loop, &c->tcp);
    c->tcp.data = c;
    if (uv_tcp_open(&c->tcp, fd) < 0) {
        close(fd);
        uv_close((uv_handle_t *)&c->tcp, (uv_close_cb)free);
        return;
    }
    c->next = w->conns;
    if (w->conns)
        w->conns->prev = c;
    w->conns = c;
    w->nconns++;
    if (w->srv)
        atomic_fetch_add(&w->srv->accepted, 1);
    unsigned total = w->srv ? atomic_fetch_add(&w->srv->nconns, 1) + 1 : w->nconns;
    hk_ctr_add(&w->stats.accepted, 1);
    hk_session_init(&c->s, w, &tcp_io, c);
    hk_session_set_peer(&c->s, peer);
    c->s.req.app = w->app->req_size ? (char *)c + off : NULL;
    if (total > w->cfg->max_connections && !evict_idle(w)) {
        hk_ctr_add(&w->stats.rejected, 1);
        hk_session_overload(&c->s);
        return;
    }
    uv_tcp_nodelay(&c->tcp, 1);
    if (uv_read_start((uv_stream_t *)&c->tcp, on_alloc, on_read) == 0)
        c->reading = true;
    else
        hk_session_eof(&c->s, true);
}

static void on_listen(uv_poll_t *h, int status, int events);

static void accept_resume(uv_timer_t *t)
{
    struct hk_worker *w = t->data;
    if (!w->accept_paused || !w->listening)
        return;
    w->accept_paused = false;
    uv_poll_start(&w->listener, UV_READABLE, on_listen);
}

/* accept() failed for want of a resource (descriptors, memory): the
 * connection stays queued in the kernel, so retrying at once would spin.
 * Stop watching the socket for a back-off that doubles while the spell
 * lasts, and say so once per spell. */
static void accept_pause(struct hk_worker *w, int err)
{
    hk_ctr_add(&w->stats.accept_failed, 1);
    w->accept_fails++;
    if (!w->accept_fail_since) {
        w->accept_fail_since = uv_now(&w->loop) | 1;
        w->accept_backoff_ms = ACCEPT_BACKOFF_MIN_MS;
        hk_warn("accept failed, pausing accepts", "\"worker\":%d,\"error\":\"%s\",\"openConnections\":%u",
                w->index, uv_strerror(err), w->nconns);
    } else if (w->accept_backoff_ms < ACCEPT_BACKOFF_MAX_MS) {
        w->accept_backoff_ms *= 2;
        if (w->accept_backoff_ms > ACCEPT_BACKOFF_MAX_MS)
            w->accept_backoff_ms = ACCEPT_BACKOFF_MAX_MS;
    }
    uv_poll_stop(&w->listener);
    w->accept_paused = true;
    uv_timer_start(&w->accept_retry, accept_resume, w->accept_backoff_ms, 0);
}

static void on_listen(uv_poll_t *h, int status, int events)
{
    (void)events;
    struct hk_worker *w = h->data;
    if (status < 0) {
        accept_pause(w, status);
        return;
    }
    for (int i = 0; i < ACCEPT_BATCH && w->listening; i++) {
        struct sockaddr_storage ss;
        socklen_t sl = sizeof ss;
        int fd = accept4(w->listen_fd, (struct sockaddr *)&ss, &sl, SOCK_NONBLOCK | SOCK_CLOEXEC);
        if (fd >= 0) {
            conn_new(w, fd, (struct sockaddr *)&ss);
            continue;
        }
        int e = errno;
        if (e == EAGAIN || e == EWOULDBLOCK) {
            /* The queue is empty: a spell of failures is over. */
            if (w->accept_fail_since) {
                hk_info("accepting again", "\"worker\":%d,\"failedAccepts\":%lu,\"pausedMs\":%llu", w->index,
                        w->accept_fails, (unsigned long long)(uv_now(&w->loop) - w->accept_fail_since));
                w->accept_fail_since = 0;
                w->accept_fails = 0;
            }
            return;
        }
        /* The peer gave up before we took it, or a signal: next one. */
        if (e == ECONNABORTED || e == EINTR || e == EPROTO || e == EPERM || e == ENETDOWN || e == ENOPROTOOPT ||
            e == EHOSTDOWN || e == ENONET || e == EHOSTUNREACH || e == EOPNOTSUPP || e == ENETUNREACH)
            continue;
        accept_pause(w, -e);
        return;
    }
}

/* Send timeout and buffer cap: a peer that takes nothing for the idle
 * timeout, or, while the loop holds more output than its share of
 * OUT_TOTAL_MAX, the peers whose output has waited longest. */
static void shed(struct hk_worker *w, uint64_t now)
{
    size_t max = out_total_max(w);
    for (struct hk_conn *c = w->conns, *next; c; c = next) {
        next = c->next;
        if (!c->writing || c->tcp_closed)
            continue;
        size_t left = c->tcp.write_queue_size;
        if (left < c->write_left) {
            c->write_left = left;
            c->write_since = now;
        } else if (now - c->write_since >= w->cfg->idle_timeout_ms) {
            conn_abort(c);
        }
    }
    if (w->out_bytes <= max)
        return;
    /* Oldest offenders first; a quarter of the cap freed per pass. */
    size_t over = w->out_bytes, target = max - max / 4;
    while (over > target) {
        struct hk_conn *victim = NULL;
        for (struct hk_conn *c = w->conns; c; c = c->next)
            if (c->acct && !c->tcp_closed && !c->s.peer_gone && (!victim || c->write_since < victim->write_since))
                victim = c;
        if (!victim)
            break;
        over -= victim->acct < over ? victim->acct : over;
        hk_warn("output buffer cap reached, closing the connection that waited longest",
                "\"worker\":%d,\"bufferedBytes\":%zu,\"capBytes\":%zu", w->index, w->out_bytes, max);
        conn_abort(victim);
        if (!victim->tcp_closed && !victim->s.peer_gone)
            break;   /* could not be taken down now: next pass */
    }
}

/* After a burst, hand the memory back: free() keeps it in the heap. */
static void maybe_trim(struct hk_worker *w)
{
    if (w->out_peak >= TRIM_PEAK && w->out_bytes < TRIM_PEAK / 4) {
        malloc_trim(0);
        w->out_peak = w->out_bytes;
    }
}

static void on_sweep(uv_timer_t *t)
{
    struct hk_worker *w = t->data;
    uint64_t now = uv_now(&w->loop);
    for (struct hk_conn *c = w->conns, *next; c; c = next) {
        next = c->next;
        if (c->tcp_closed)
            continue;
        if (c->lingering) {
            if (now >= c->linger_until)
                tcp_close(c);
            continue;
        }
        if (c->s.deadline_ms && now >= c->s.deadline_ms)
            hk_session_timeout(&c->s);
    }
    shed(w, now);
    maybe_trim(w);
}

/* The cap was crossed: sweep now, then go back to the usual period. */
static void on_sweep_now(uv_timer_t *t)
{
    struct hk_worker *w = t->data;
    on_sweep(t);
    uv_timer_start(&w->sweep, on_sweep, w->sweep_ms, w->sweep_ms);
}

static void force_close_all(uv_timer_t *t)
{
    struct hk_worker *w = t->data;
    hk_warn("drain timeout: closing remaining connections", "\"open\":%u", w->nconns);
    for (struct hk_conn *c = w->conns, *next; c; c = next) {
        next = c->next;
        if (c->s.busy || c->tcp_closed)
            hk_session_eof(&c->s, true);
        else
            tcp_close(c);
    }
}

static void on_listener_closed(uv_handle_t *h)
{
    struct hk_worker *w = h->data;
    w->listener_open = false;
    if (w->listen_fd >= 0)
        close(w->listen_fd);
    w->listen_fd = -1;
    if (!w->conns) {
        maybe_finish(w);
        return;
    }
    /* An idle exit is decided on another thread: a connection accepted
     * between that decision and this close came after the quiet spell and
     * gets its request answered (with Connection: close) rather than lost. */
    bool idle = w->srv && atomic_load(&w->srv->idle_stop);
    for (struct hk_conn *c = w->conns, *next; c; c = next) {
        next = c->next;
        if (idle && !c->got_input)
            c->s.draining_server = true;
        else
            hk_session_shutdown(&c->s);
    }
    uv_timer_start(&w->drain, force_close_all, w->cfg->drain_timeout_ms, 0);
}

static void on_wake(uv_async_t *a)
{
    struct hk_worker *w = a->data;
    if (w->stopping)
        return;
    w->stopping = true;
    if (w->listening) {
        w->listening = false;
        uv_timer_stop(&w->accept_retry);
        uv_close((uv_handle_t *)&w->listener, on_listener_closed);
    }
}

/* Request ids are "<12 hex>-<loop>-<counter>": unique across loops, and
 * with 48 random bits across restarts in practice; one getrandom per loop,
 * none per request. */
static void rid_prefix(struct hk_worker *w)
{
    unsigned char rnd[6] = {0};
    if (getrandom(rnd, sizeof rnd, GRND_NONBLOCK) != (ssize_t)sizeof rnd) {
        uint64_t t = hk_mono_ns() ^ (uint64_t)hk_wall_us();
        memcpy(rnd, &t, sizeof rnd);
    }
    int n = snprintf(w->rid_prefix, sizeof w->rid_prefix, "%02x%02x%02x%02x%02x%02x-%d-", rnd[0], rnd[1],
                     rnd[2], rnd[3], rnd[4], rnd[5], w->index);
    w->rid_prefix_len = n > 0 && (size_t)n < sizeof w->rid_prefix ? (size_t)n : 0;
}

int hk_worker_init(struct hk_worker *w, const struct hk_config *cfg, const struct hk_app *app)
{
    int rc = uv_loop_init(&w->loop);
    if (rc < 0)
        return rc;
    w->cfg = cfg;
    w->app = app;
    w->rbuf_len = RBUF_SIZE;
    w->rbuf = malloc(w->rbuf_len);
    if (!w->rbuf)
        abort();
    rid_prefix(w);
    rc = app->loop_start(app->arg, w, &w->app_loop);
    if (rc < 0) {
        free(w->rbuf);
        w->rbuf = NULL;
        uv_loop_close(&w->loop);
        return rc;
    }
    return rc;
}

void hk_worker_fini(struct hk_worker *w)
{
    app_stop(w);
    uv_run(&w->loop, UV_RUN_DEFAULT);
    if (w->app->loop_free)
        w->app->loop_free(w->app_loop);
    w->app_loop = NULL;
    if (uv_loop_close(&w->loop) != 0)
        hk_warn("event loop closed with handles still open", NULL);
    free(w->rbuf);
    w->rbuf = NULL;
}

static void add_stats(struct hk_http_totals *t, struct hk_http_stats *s)
{
    t->accepted += hk_ctr_get(&s->accepted);
    t->closed += hk_ctr_get(&s->closed);
    t->rejected += hk_ctr_get(&s->rejected);
    t->evicted += hk_ctr_get(&s->evicted);
    t->shed += hk_ctr_get(&s->shed);
    t->accept_failed += hk_ctr_get(&s->accept_failed);
    t->bytes_in += hk_ctr_get(&s->bytes_in);
    t->bytes_out += hk_ctr_get(&s->bytes_out);
    t->loops++;
}

void hk_worker_totals(struct hk_worker *w, struct hk_http_totals *out)
{
    memset(out, 0, sizeof *out);
    if (!w->srv) {
        add_stats(out, &w->stats);
        return;
    }
    /* Workers are set up before any loop serves and freed after all have
     * stopped, so reading their counters from any loop is safe. */
    for (int i = 0; i < w->srv->nworkers; i++)
        add_stats(out, &w->srv->workers[i].stats);
}

/* Make a worker's loop, handles and listener on the calling thread. On
 * failure the worker is torn down again and srv->failed is set. */
static int worker_setup(struct hk_worker *w)
{
    struct hk_server *srv = w->srv;
    int rc = hk_worker_init(w, srv->cfg, srv->app);
    if (rc < 0) {
        hk_error("worker start failed", "\"worker\":%d,\"error\":\"%s\"", w->index, uv_strerror(rc));
        srv->failed = 1;
        close(w->listen_fd);
        return rc;
    }
    w->listener.data = w;
    w->wake.data = w;
    w->sweep.data = w;
    w->drain.data = w;
    w->finish.data = w;
    w->accept_retry.data = w;
    uv_async_init(&w->loop, &w->wake, on_wake);
    uv_timer_init(&w->loop, &w->sweep);
    uv_timer_init(&w->loop, &w->drain);
    uv_timer_init(&w->loop, &w->finish);
    uv_timer_init(&w->loop, &w->accept_retry);
    uint64_t t = w->cfg->header_timeout_ms < w->cfg->idle_timeout_ms ? w->cfg->header_timeout_ms
                                                                     : w->cfg->idle_timeout_ms;
    t /= 4;
    t = t < 10 ? 10 : t > 1000 ? 1000 : t;
    w->sweep_ms = t;
    uv_timer_start(&w->sweep, on_sweep, t, t);
    uv_unref((uv_handle_t *)&w->sweep);
    uv_unref((uv_handle_t *)&w->accept_retry);
    /* The socket is watched with a poll handle and accepted by hand, so
     * that a failed accept can pause instead of spinning (uv_listen
     * retries at once, on every loop). */
    rc = uv_poll_init(&w->loop, &w->listener, w->listen_fd);
    if (rc == 0) {
        w->listener_open = true;
        rc = uv_poll_start(&w->listener, UV_READABLE, on_listen);
    }
    if (rc < 0) {
        hk_error("listen failed", "\"worker\":%d,\"error\":\"%s\"", w->index, uv_strerror(rc));
        srv->failed = 1;
        w->stopping = true;
        if (w->listener_open) {
            uv_close((uv_handle_t *)&w->listener, on_listener_closed);
        } else {
            close(w->listen_fd);
            w->listen_fd = -1;
            maybe_finish(w);
        }
        uv_run(&w->loop, UV_RUN_DEFAULT);
        hk_worker_fini(w);
        return rc;
    }
    w->listening = true;
    return 0;
}

static void worker_main(void *arg)
{
    struct hk_worker *w = arg;
    int rc = worker_setup(w);
    uv_sem_post(&w->srv->ready);
    if (rc < 0)
        return;
    uv_run(&w->loop, UV_RUN_DEFAULT);
    hk_worker_fini(w);
}

int hk_server_start(struct hk_server **out, const struct hk_config *cfg, const struct hk_app *app,
                    int *bound_port, char *err, size_t errlen)
{
    struct hk_server *srv = calloc(1, sizeof *srv);
    if (!srv)
        abort();
    srv->cfg = cfg;
    srv->app = app;
    srv->nworkers = cfg->threads;
    /* Every inherited socket needs at least one loop accepting on it. */
    if (cfg->n_listen_fds > srv->nworkers)
        srv->nworkers = cfg->n_listen_fds;
    srv->workers = calloc((size_t)srv->nworkers, sizeof *srv->workers);
    if (!srv->workers)
        abort();
    uv_sem_init(&srv->ready, 0);
    int port = cfg->port;
    int launched = 0; /* workers that own their listener: loop 0, then threads */
    for (int i = 0; i < srv->nworkers; i++) {
        struct hk_worker *w = &srv->workers[i];
        w->index = i;
        w->srv = srv;
        w->cfg = cfg;
        w->app = app;
        if (cfg->n_listen_fds > 0)
            w->listen_fd = hk_listen_inherited(cfg->listen_fds[i % cfg->n_listen_fds], i == 0 ? &port : NULL,
                                              err, errlen);
        else
            w->listen_fd = hk_listen_open(cfg->host, port, &port, err, errlen);
        if (w->listen_fd < 0)
            goto fail;
    }
    *bound_port = port;
    /* Loop 0 runs on the caller's thread (hk_server_run): one thread fewer
     * to start, and with one loop, none. The other loops set up on their
     * threads meanwhile (each waits for its store connection): side by
     * side, not one after the other. */
    launched = 1;
    int started = 1;
    for (int i = 1; i < srv->nworkers; i++) {
        if (uv_thread_create(&srv->workers[i].thread, worker_main, &srv->workers[i]) < 0) {
            snprintf(err, errlen, "cannot start worker thread %d", i);
            break;
        }
        started++;
    }
    int rc0 = worker_setup(&srv->workers[0]);
    for (int i = 1; i < started; i++)
        uv_sem_wait(&srv->ready);
    launched = started;
    if (rc0 < 0) {
        snprintf(err, errlen, "a worker failed to start (see the log above)");
        srv->workers[0].listen_fd = -1;
        goto fail;
    }
    if (started < srv->nworkers)
        goto fail;
    if (srv->failed) {
        snprintf(err, errlen, "a worker failed to start (see the log above)");
        goto fail;
    }
    *out = srv;
    return 0;
fail:
    for (int i = 0; i < launched; i++)
        if (srv->workers[i].listening)
            uv_async_send(&srv->workers[i].wake);
    if (launched > 0 && srv->workers[0].listen_fd >= 0) {
        uv_run(&srv->workers[0].loop, UV_RUN_DEFAULT);
        hk_worker_fini(&srv->workers[0]);
    }
    for (int i = 1; i < launched; i++)
        uv_thread_join(&srv->workers[i].thread);
    for (int i = launched; i < srv->nworkers; i++)
        if (srv->workers[i].listen_fd > 0)
            close(srv->workers[i].listen_fd);
    uv_sem_destroy(&srv->ready);
    free(srv->workers);
    free(srv);
    return -1;
}

uv_loop_t *hk_server_loop(struct hk_server *srv)
{
    return &srv->workers[0].loop;
}

void hk_server_run(struct hk_server *srv)
{
    uv_run(&srv->workers[0].loop, UV_RUN_DEFAULT);
}

void hk_server_shutdown(struct hk_server *srv, bool idle)
{
    if (idle)
        atomic_store(&srv->idle_stop, true);
    for (int i = 0; i < srv->nworkers; i++)
        uv_async_send(&srv->workers[i].wake);
}

void hk_server_join(struct hk_server *srv)
{
    for (int i = 1; i < srv->nworkers; i++)
        uv_thread_join(&srv->workers[i].thread);
    hk_worker_fini(&srv->workers[0]);
}

void hk_server_activity(struct hk_server *srv, unsigned *open, unsigned long *accepted)
{
    *open = atomic_load(&srv->nconns);
    *accepted = atomic_load(&srv->accepted);
}

void hk_server_free(struct hk_server *srv)
{
    uv_sem_destroy(&srv->ready);
    free(srv->workers);
    free(srv);
}
