/* SPDX-License-Identifier: MIT
 * Access log: lines go into a per-worker buffer; a thread-pool job writes a
 * full buffer (or, 100 ms after the first line, whatever is there) while the
 * loop fills the other one. Why not write(2) from the loop: stderr is often
 * a pipe (journald, a container runtime) that can fill up, and setting
 * O_NONBLOCK on it would change the open file description other processes
 * share. Why not uv_fs_write: it hands the whole buffer to one writev, and a
 * pipe write above PIPE_BUF may interleave with another thread's log line;
 * the job below writes at most PIPE_BUF at a time, cut at line ends. */
#include "obs/access_log.h"

#include <errno.h>
#include <stdbool.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <uv.h>

#include "core/buf.h"
#include "core/clock.h"
#include "core/ctr.h"

#define FLUSH_BYTES (32 * 1024)
#define MAX_BYTES (1024 * 1024)
#define FLUSH_MS 100
#define PATH_MAX_LOGGED 512

struct hk_access_log {
    hk_ctr dropped;
    uv_loop_t *loop;
    struct hk_buf cur;         /* lines being collected */
    struct hk_buf out;         /* lines the pool job is writing */
    uv_work_t work;
    uv_timer_t timer;
    int fd;
    bool writing;
    bool timer_armed;
    bool closed;
};

/* Write `n` bytes in pieces of at most PIPE_BUF that end at a newline
 * (a longer line goes alone), so each piece is one atomic pipe write. */
static void write_lines(int fd, const char *p, size_t n)
{
    while (n) {
        size_t k = n < PIPE_BUF ? n : PIPE_BUF;
        if (k < n) {
            const char *nl = memrchr(p, '\n', k);
            if (nl)
                k = (size_t)(nl - p) + 1;
            else {
                nl = memchr(p + k, '\n', n - k);
                k = nl ? (size_t)(nl - p) + 1 : n;
            }
        }
        size_t off = 0;
        while (off < k) {
            ssize_t w = write(fd, p + off, k - off);
            if (w < 0 && errno == EINTR)
                continue;
            if (w <= 0)
                return; /* stderr gone: nothing sensible to do with the lines */
            off += (size_t)w;
        }
        p += k;
        n -= k;
    }
}

static void on_work(uv_work_t *req)
{
    struct hk_access_log *a = req->data;
    write_lines(a->fd, a->out.p, a->out.len);
}

static void start_write(struct hk_access_log *a);

static void after_work(uv_work_t *req, int status)
{
    (void)status;
    struct hk_access_log *a = req->data;
    a->writing = false;
    a->out.len = 0;
    hk_buf_reset(&a->out, MAX_BYTES);
    /* What piled up meanwhile goes now: it has already waited one write. */
    if (a->cur.len)
        start_write(a);
}

static void start_write(struct hk_access_log *a)
{
    if (a->writing || !a->cur.len)
        return;
    struct hk_buf t = a->out;
    a->out = a->cur;
    a->cur = t;
    a->cur.len = 0;
    a->work.data = a;
    if (uv_queue_work(a->loop, &a->work, on_work, after_work) < 0) {
        /* Only when the loop is closing: keep the lines for hk_access_log_free. */
        t = a->cur;
        a->cur = a->out;
        a->out = t;
        return;
    }
    a->writing = true;
}

static void on_timer(uv_timer_t *t)
{
    struct hk_access_log *a = t->data;
    a->timer_armed = false;
    start_write(a);
}

struct hk_access_log *hk_access_log_new(uv_loop_t *loop)
{
    struct hk_access_log *a = calloc(1, sizeof *a);
    if (!a)
        abort();
    a->fd = STDERR_FILENO;
    a->loop = loop;
    uv_timer_init(loop, &a->timer);
    a->timer.data = a;
    /* Pending lines must not keep a stopping loop alive: free() writes them. */
    uv_unref((uv_handle_t *)&a->timer);
    return a;
}

/* The path as sent, with bytes that are not printable ASCII (and the JSON
 * specials) percent-encoded: the line stays valid JSON and UTF-8 whatever
 * the client sent. */
static void put_path(struct hk_buf *b, const char *p, size_t n)
{
    static const char hex[] = "0123456789ABCDEF";
    if (n > PATH_MAX_LOGGED)
        n = PATH_MAX_LOGGED;
    hk_buf_putc(b, '"');
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)p[i];
        if (c < 0x21 || c > 0x7e || c == '"' || c == '\\') {
            char e[3] = {'%', hex[c >> 4], hex[c & 15]};
            hk_buf_put(b, e, 3);
        } else {
            hk_buf_putc(b, (char)c);
        }
    }
    hk_buf_putc(b, '"');
}

uint64_t hk_access_log_dropped(struct hk_access_log *a)
{
    return hk_ctr_get(&a->dropped);
}

void hk_access_log_request(struct hk_access_log *a, const struct hk_obs_request *q, const char *method)
{
    if (a->closed || a->cur.len >= MAX_BYTES) {
        hk_ctr_add(&a->dropped, 1);
        return;
    }
    struct hk_buf *b = &a->cur;
    hk_buf_puts(b, "{\"ts\":\"");
    hk_buf_put_iso_us(b, hk_wall_us());
    hk_buf_puts(b, "\",\"level\":\"info\",\"msg\":\"access\",\"method\":\"");
    hk_buf_puts(b, method);
    hk_buf_puts(b, "\",\"route\":");
    hk_buf_put_json_str(b, q->uri_name, strlen(q->uri_name));
    if (q->path) {
        hk_buf_puts(b, ",\"path\":");
        put_path(b, q->path, q->path_len);
    }
    hk_buf_puts(b, ",\"status\":");
    hk_buf_put_u64(b, (uint64_t)(q->status > 0 ? q->status : 0));
    hk_buf_puts(b, ",\"bytes\":");
    hk_buf_put_u64(b, q->bytes);
    hk_buf_puts(b, ",\"durUs\":");
    hk_buf_put_u64(b, q->dur_ns / 1000);
    hk_buf_puts(b, ",\"requestId\":");
    hk_buf_put_json_str(b, q->req_id, q->req_id_len);
    hk_buf_puts(b, "}\n");
    if (b->len >= FLUSH_BYTES) {
        start_write(a);
    } else if (!a->timer_armed && !a->writing) {
        a->timer_armed = true;
        uv_timer_start(&a->timer, on_timer, FLUSH_MS, 0);
    }
}

void hk_access_log_close(struct hk_access_log *a)
{
    if (a->closed)
        return;
    a->closed = true;
    uv_close((uv_handle_t *)&a->timer, NULL);
}

void hk_access_log_free(struct hk_access_log *a)
{
    if (!a)
        return;
    if (a->cur.len)
        write_lines(a->fd, a->cur.p, a->cur.len);
    hk_buf_free(&a->cur);
    hk_buf_free(&a->out);
    free(a);
}
