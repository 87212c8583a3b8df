/* SPDX-License-Identifier: MIT
 * In-memory transport: "sending" appends to a buffer; drained notifications
 * are deferred to the loop like a real write completion would be. */
#include "http/memio.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdlib.h>

static void mem_flush(struct hk_session *s);
static void mem_close(struct hk_session *s);
static const struct hk_session_io mem_io = {mem_flush, mem_close, NULL};

static void on_drain_timer(uv_timer_t *t)
{
    struct hk_memio *m = t->data;
    hk_session_drained(&m->s);
}

static void mem_flush(struct hk_session *s)
{
    struct hk_memio *m = s->io_data;
    hk_buf_put(&m->sent, s->out.p, s->out.len);
    s->out.len = 0;
    if (s->want_drain)
        uv_timer_start(&m->drain, on_drain_timer, 0, 0);
}

static void mem_close(struct hk_session *s)
{
    struct hk_memio *m = s->io_data;
    hk_buf_put(&m->sent, s->out.p, s->out.len);
    s->out.len = 0;
    m->closed = true;
}

void hk_memio_init(struct hk_memio *m, struct hk_worker *w)
{
    *m = (struct hk_memio){0};
    uv_timer_init(&w->loop, &m->drain);
    m->drain.data = m;
    hk_session_init(&m->s, w, &mem_io, m);
    struct sockaddr_in lo = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    hk_session_set_peer(&m->s, (struct sockaddr *)&lo);
    if (w->app->req_size) {
        m->app = calloc(1, w->app->req_size);
        if (!m->app)
            abort();
    }
    m->s.req.app = m->app;
}

void hk_memio_feed(struct hk_memio *m, const void *p, size_t n)
{
    hk_session_feed(&m->s, p, n);
}

void hk_memio_settle(struct hk_memio *m)
{
    while (m->s.busy)
        uv_run(&m->s.w->loop, UV_RUN_ONCE);
}

void hk_memio_free(struct hk_memio *m)
{
    hk_memio_settle(m);
    uv_close((uv_handle_t *)&m->drain, NULL);
    uv_run(&m->s.w->loop, UV_RUN_NOWAIT);
    hk_session_free(&m->s);
    hk_buf_free(&m->sent);
    free(m->app);
    m->app = NULL;
}
