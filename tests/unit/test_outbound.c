/* SPDX-License-Identifier: MIT
 * Unit tests for outbound/client.c on a real libuv loop against an HTTP
 * server of the test's own (a thread per connection on blocking sockets,
 * 127.0.0.1): statuses and Retry-After, timeouts, connections cut, refused
 * and counted (keep-alive), bad URLs and headers, credentials kept out of
 * error texts, the in-flight bound, many requests over few connections,
 * closing with requests in flight, bodies and headers as the server saw
 * them. Each test ends by proving its loop closes clean and, under ASan,
 * that nothing leaked. */
#include <criterion/criterion.h>

#include <arpa/inet.h>
#include <inttypes.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>
#include <uv.h>

#include "core/err.h"
#include "core/sha256.h"
#include "outbound/client.h"

#if defined(__SANITIZE_ADDRESS__)
#include <sanitizer/lsan_interface.h>
#define HAVE_LSAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#include <sanitizer/lsan_interface.h>
#define HAVE_LSAN 1
#endif
#endif

static uint64_t now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

/* ---- the test server ------------------------------------------------------
 * Routes by path: /ok 200 "ok"; /echo 200 "<body length> <body sha256>";
 * (and " expect" when the request had an Expect header);
 * /hdrs 200 with the request head as body; /busy 503 Retry-After: 7;
 * /limit 429 with an HTTP-date 30 s ahead; /ra/<v> 503 with Retry-After: v
 * ('_' for spaces); /stall never answers; /cut promises 100 bytes, sends 5
 * and closes; /big 100000 bytes; /redirect 302 to /ok. Anything not HTTP
 * (a TLS hello) gets a 400 and a close. */

#define SRV_MAX_CONNS 256

struct srv {
    int lfd;
    int port;
    pthread_t acceptor;
    atomic_int accepted;
    pthread_mutex_t mu;
    int fds[SRV_MAX_CONNS];
    pthread_t threads[SRV_MAX_CONNS];
    int n;
};

static struct srv srv;
static bool srv_running;

static bool send_all(int fd, const void *p, size_t n)
{
    const char *c = p;
    while (n > 0) {
        ssize_t w = send(fd, c, n, MSG_NOSIGNAL);
        if (w <= 0)
            return false;
        c += w;
        n -= (size_t)w;
    }
    return true;
}

static bool respond(int fd, int status, const char *reason, const char *extra, const void *body,
                    size_t len)
{
    char head[512];
    int n = snprintf(head, sizeof head, "HTTP/1.1 %d %s\r\n%sContent-Length: %zu\r\n\r\n", status,
                     reason, extra, len);
    return send_all(fd, head, (size_t)n) && send_all(fd, body, len);
}

static void hex32(const uint8_t d[32], char out[65])
{
    for (int i = 0; i < 32; i++)
        snprintf(out + 2 * i, 3, "%02x", d[i]);
}

/* One connection: requests one after another until the peer closes. */
static void *conn_main(void *arg)
{
    int fd = (int)(intptr_t)arg;
    static const size_t cap = 64 * 1024;
    char *buf = malloc(cap);
    size_t have = 0;
    for (;;) {
        char *end = NULL;
        while (!(end = memmem(buf, have, "\r\n\r\n", 4))) {
            if (have >= 1 && (buf[0] < 'A' || buf[0] > 'Z')) {
                respond(fd, 400, "Bad Request", "Connection: close\r\n", "", 0);
                shutdown(fd, SHUT_RDWR);
                goto out;
            }
            if (have == cap)
                goto out;
            ssize_t r = recv(fd, buf + have, cap - have, 0);
            if (r <= 0)
                goto out;
            have += (size_t)r;
        }
        size_t head_len = (size_t)(end - buf) + 4;
        char path[256] = "";
        sscanf(buf, "%*s %255s", path);
        size_t clen = 0;
        for (char *p = buf; p < end; p++)
            if ((p == buf || p[-1] == '\n') && strncasecmp(p, "content-length:", 15) == 0)
                clen = strtoul(p + 15, NULL, 10);
        /* The body, hashed as it comes. */
        struct hk_sha256_ctx sha;
        hk_sha256_init(&sha);
        size_t got = have - head_len < clen ? have - head_len : clen;
        hk_sha256_update(&sha, buf + head_len, got);
        char *head = malloc(head_len + 1);
        memcpy(head, buf, head_len);
        head[head_len] = 0;
        size_t rest = have - head_len - got;
        memmove(buf, buf + head_len + got, rest);
        have = rest;
        while (got < clen) {
            char tmp[16384];
            size_t want = clen - got < sizeof tmp ? clen - got : sizeof tmp;
            ssize_t r = recv(fd, tmp, want, 0);
            if (r <= 0) {
                free(head);
                goto out;
            }
            hk_sha256_update(&sha, tmp, (size_t)r);
            got += (size_t)r;
        }
        uint8_t d[32];
        hk_sha256_final(&sha, d);
        bool ok = true;
        if (strcmp(path, "/ok") == 0) {
            ok = respond(fd, 200, "OK", "", "ok", 2);
        } else if (strcmp(path, "/echo") == 0) {
            char hex[65], b[128];
            hex32(d, hex);
            /* Says so when the client asked for a 100-continue. */
            int n = snprintf(b, sizeof b, "%zu %s%s", clen, hex,
                             strcasestr(head, "\nexpect:") ? " expect" : "");
            ok = respond(fd, 200, "OK", "", b, (size_t)n);
        } else if (strcmp(path, "/hdrs") == 0) {
            ok = respond(fd, 200, "OK", "", head, head_len);
        } else if (strcmp(path, "/busy") == 0) {
            ok = respond(fd, 503, "Service Unavailable", "Retry-After: 7\r\n", "busy", 4);
        } else if (strcmp(path, "/limit") == 0) {
            char date[64], extra[96];
            time_t t = time(NULL) + 30;
            struct tm tm;
            gmtime_r(&t, &tm);
            strftime(date, sizeof date, "%a, %d %b %Y %H:%M:%S GMT", &tm);
            snprintf(extra, sizeof extra, "Retry-After: %s\r\n", date);
            ok = respond(fd, 429, "Too Many Requests", extra, "", 0);
        } else if (strncmp(path, "/ra/", 4) == 0) {
            char extra[320];
            for (char *p = path; *p; p++)
                if (*p == '_')
                    *p = ' ';
            snprintf(extra, sizeof extra, "Retry-After: %s\r\n", path + 4);
            ok = respond(fd, 503, "Service Unavailable", extra, "", 0);
        } else if (strcmp(path, "/stall") == 0) {
            char tmp[256];
            while (recv(fd, tmp, sizeof tmp, 0) > 0)
                ;
            ok = false;
        } else if (strcmp(path, "/cut") == 0) {
            static const char cut[] = "HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\nshort";
            send_all(fd, cut, sizeof cut - 1);
            shutdown(fd, SHUT_RDWR);
            ok = false;
        } else if (strcmp(path, "/big") == 0) {
            char *big = malloc(100000);
            memset(big, 'x', 100000);
            ok = respond(fd, 200, "OK", "", big, 100000);
            free(big);
        } else if (strcmp(path, "/bye") == 0) {
            /* Kept alive by the answer, then closed by the server while
             * the client holds it idle. */
            respond(fd, 200, "OK", "", "bye", 3);
            usleep(50000);
            shutdown(fd, SHUT_RDWR);
            ok = false;
        } else if (strcmp(path, "/redirect") == 0) {
            ok = respond(fd, 302, "Found", "Location: /ok\r\n", "", 0);
        } else {
            ok = respond(fd, 404, "Not Found", "", "", 0);
        }
        free(head);
        if (!ok)
            goto out;
    }
out:
    free(buf);
    return NULL;
}

static void *accept_main(void *arg)
{
    (void)arg;
    for (;;) {
        int fd = accept(srv.lfd, NULL, NULL);
        if (fd < 0)
            return NULL;   /* the listener was shut down */
        atomic_fetch_add(&srv.accepted, 1);
        /* A head and a body in two writes must not wait for a delayed ACK. */
        int one = 1;
        setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
        pthread_mutex_lock(&srv.mu);
        if (srv.n == SRV_MAX_CONNS) {
            pthread_mutex_unlock(&srv.mu);
            close(fd);
            continue;
        }
        srv.fds[srv.n] = fd;
        pthread_create(&srv.threads[srv.n], NULL, conn_main, (void *)(intptr_t)fd);
        srv.n++;
        pthread_mutex_unlock(&srv.mu);
    }
}

static void srv_start(void)
{
    memset(&srv, 0, sizeof srv);
    pthread_mutex_init(&srv.mu, NULL);
    srv.lfd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    cr_assert(srv.lfd >= 0);
    int one = 1;
    setsockopt(srv.lfd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    cr_assert_eq(bind(srv.lfd, (struct sockaddr *)&a, sizeof a), 0);
    cr_assert_eq(listen(srv.lfd, 512), 0);
    socklen_t len = sizeof a;
    getsockname(srv.lfd, (struct sockaddr *)&a, &len);
    srv.port = ntohs(a.sin_port);
    pthread_create(&srv.acceptor, NULL, accept_main, NULL);
    srv_running = true;
}

static void srv_stop(void)
{
    if (!srv_running)
        return;
    srv_running = false;
    shutdown(srv.lfd, SHUT_RDWR);
    pthread_join(srv.acceptor, NULL);
    close(srv.lfd);
    for (int i = 0; i < srv.n; i++) {
        shutdown(srv.fds[i], SHUT_RDWR);
        pthread_join(srv.threads[i], NULL);
        close(srv.fds[i]);
    }
    pthread_mutex_destroy(&srv.mu);
}

/* A port on which nothing listens: bound, never listened on, closed. */
static int closed_port(void)
{
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    cr_assert_eq(bind(fd, (struct sockaddr *)&a, sizeof a), 0);
    socklen_t len = sizeof a;
    getsockname(fd, (struct sockaddr *)&a, &len);
    close(fd);
    return ntohs(a.sin_port);
}

/* ---- the loop and the client ------------------------------------------------ */

static uv_loop_t loop;
static uv_timer_t guard;       /* wakes uv_run so that run_until can look at the clock */
static bool loop_open;
static struct hk_out *cli;

static void on_guard(uv_timer_t *t)
{
    (void)t;
}

static void setup(void)
{
    cr_assert_eq(uv_loop_init(&loop), 0);
    uv_timer_init(&loop, &guard);
    uv_timer_start(&guard, on_guard, 5, 5);
    loop_open = true;
    srv_start();
}

static void count_handle(uv_handle_t *h, void *arg)
{
    if (h != (uv_handle_t *)&guard)
        ++*(int *)arg;
}

static int handles_left(void)
{
    int n = 0;
    uv_walk(&loop, count_handle, &n);
    return n;
}

/* Close the client, run the loop until its handles are gone (5 s at most,
 * so that a failed test cannot hang here), close the guard and the loop: 0
 * when nothing was left behind. */
static int close_loop(void)
{
    if (!loop_open)
        return 0;
    if (cli)
        hk_out_close(cli);
    cli = NULL;
    uint64_t end = now_ms() + 5000;
    while (handles_left() > 0 && now_ms() < end)
        uv_run(&loop, UV_RUN_ONCE);
    uv_close((uv_handle_t *)&guard, NULL);
    uv_run(&loop, UV_RUN_NOWAIT);
    loop_open = false;
    return uv_loop_close(&loop);
}

static void teardown(void)
{
    close_loop();
    srv_stop();
}

TestSuite(outbound, .init = setup, .fini = teardown, .timeout = 60);

static void finish_test(void)
{
    cr_assert_eq(close_loop(), 0, "the loop still had handles after hk_out_close");
    srv_stop();
#ifdef HAVE_LSAN
    cr_assert_eq(__lsan_do_recoverable_leak_check(), 0, "LeakSanitizer found leaks (above)");
#endif
}

static void open_cli(uint32_t max_conns, uint64_t total_ms, size_t max_response)
{
    struct hk_out_opts o = {.max_conns = max_conns, .connect_ms = 2000, .total_ms = total_ms,
                            .max_response = max_response};
    char err[256] = "";
    int rc = hk_out_open(&loop, &o, &cli, err, sizeof err);
    cr_assert_eq(rc, 0, "hk_out_open: %d %s", rc, err);
}

static bool run_until(bool (*cond)(void *), void *arg, uint64_t ms)
{
    uint64_t end = now_ms() + ms;
    while (!cond(arg)) {
        if (now_ms() > end)
            return false;
        uv_run(&loop, UV_RUN_ONCE);
    }
    return true;
}

static bool never(void *arg)
{
    (void)arg;
    return false;
}

/* What one request's done saw. */
struct call {
    struct hk_out_req req;
    char url[512];
    const char *hdrs[8];
    int ndone;
    int status, err;
    int64_t retry_after_ms;
    bool has_error;
    char error[512];
    char body[4096];
    size_t body_len;
    uint64_t sent_ms, done_ms;
    void (*then)(struct call *c);   /* runs at the end of done */
};

static bool in_send;            /* done must never run from inside hk_out_send */
static int early_dones;

static void on_done(struct hk_out_req *r, const struct hk_out_result *res)
{
    struct call *c = r->data;
    if (in_send)
        early_dones++;
    c->ndone++;
    c->status = res->status;
    c->err = res->err;
    c->retry_after_ms = res->retry_after_ms;
    c->has_error = res->error != NULL;
    snprintf(c->error, sizeof c->error, "%s", res->error ? res->error : "");
    c->body_len = res->body_len;
    size_t keep = res->body_len < sizeof c->body - 1 ? res->body_len : sizeof c->body - 1;
    if (keep)
        memcpy(c->body, res->body, keep);
    c->body[keep] = 0;
    c->done_ms = now_ms();
    if (c->then)
        c->then(c);
}

static void call_init(struct call *c, const char *path)
{
    memset(c, 0, sizeof *c);
    snprintf(c->url, sizeof c->url, "http://127.0.0.1:%d%s", srv.port, path);
    c->req.url = c->url;
    c->req.done = on_done;
    c->req.data = c;
    c->req.headers = c->hdrs;
}

static int send_call(struct call *c)
{
    c->sent_ms = now_ms();
    in_send = true;
    int rc = hk_out_send(cli, &c->req);
    in_send = false;
    return rc;
}

static bool done1(void *arg)
{
    return ((struct call *)arg)->ndone > 0;
}

/* Send c and run the loop until its done ran. */
static void roundtrip(struct call *c, uint64_t ms)
{
    cr_assert_eq(send_call(c), 0);
    cr_assert(run_until(done1, c, ms), "no done within %" PRIu64 " ms for %s", ms, c->url);
    cr_assert_eq(c->ndone, 1);
    cr_assert_eq(early_dones, 0, "done ran inside hk_out_send");
}

/* ---- tests ------------------------------------------------------------------------ */

Test(outbound, ok_200)
{
    open_cli(4, 5000, 1024);
    struct call c;
    call_init(&c, "/ok");
    roundtrip(&c, 5000);
    cr_assert_eq(c.err, 0, "%d %s", c.err, c.error);
    cr_assert_eq(c.status, 200);
    cr_assert(!c.has_error);
    cr_assert_eq(c.retry_after_ms, -1);
    cr_assert_eq(c.body_len, 2);
    cr_assert_str_eq(c.body, "ok");
    cr_assert_eq(hk_out_inflight(cli), 0);
    finish_test();
}

Test(outbound, retry_after_seconds)
{
    open_cli(4, 5000, 1024);
    struct call c;
    call_init(&c, "/busy");
    roundtrip(&c, 5000);
    cr_assert_eq(c.err, 0);
    cr_assert_eq(c.status, 503);
    cr_assert_eq(c.retry_after_ms, 7000);
    cr_assert_str_eq(c.body, "busy");
    finish_test();
}

Test(outbound, retry_after_http_date)
{
    open_cli(4, 5000, 1024);
    struct call c;
    call_init(&c, "/limit");
    roundtrip(&c, 5000);
    cr_assert_eq(c.err, 0);
    cr_assert_eq(c.status, 429);
    /* 30 s ahead with one-second resolution, read a moment later. */
    cr_assert(c.retry_after_ms > 27000 && c.retry_after_ms <= 30000, "retry_after_ms %" PRId64,
              c.retry_after_ms);
    finish_test();
}

Test(outbound, retry_after_values)
{
    static const struct {
        const char *v;
        int64_t lo, hi;
    } cases[] = {
        {"0", 0, 0},
        {"120", 120000, 120000},
        {"__42__", 42000, 42000},
        {"99999999999999999999999", 1000000000000LL, 1000000000000LL},
        {"-5", -1, -1},
        {"7s", -1, -1},
        {"soon", -1, -1},
        {"Sun,_06_Nov_1994_08:49:37_GMT", 0, 0},               /* in the past */
        {"Fri,_01_Jan_2100_00:00:00_GMT", 2000000000000LL, 4200000000000LL},
        {"Sun,_31_Feb_2100_00:00:00_GMT", -1, -1},             /* no such day */
        {"Sun,_06_Nov_1994_08:49:37_UTC", -1, -1},
        {"Sunday,_06-Nov-94_08:49:37_GMT", -1, -1},            /* RFC 850: not read */
        {"Sun,_06_Nov_1994_24:49:37_GMT", -1, -1},
    };
    open_cli(4, 5000, 1024);
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        struct call c;
        char path[128];
        snprintf(path, sizeof path, "/ra/%s", cases[i].v);
        call_init(&c, path);
        roundtrip(&c, 5000);
        cr_assert_eq(c.status, 503);
        cr_assert(c.retry_after_ms >= cases[i].lo && c.retry_after_ms <= cases[i].hi,
                  "Retry-After %s: %" PRId64, cases[i].v, c.retry_after_ms);
    }
    finish_test();
}

Test(outbound, stall_times_out)
{
    open_cli(4, 300, 1024);
    struct call c;
    call_init(&c, "/stall");
    roundtrip(&c, 5000);
    cr_assert_eq(c.err, HK_ETIMEDOUT, "%d %s", c.err, c.error);
    cr_assert_eq(c.status, 0);
    cr_assert(strstr(c.error, "timed out"), "%s", c.error);
    uint64_t took = c.done_ms - c.sent_ms;
    cr_assert(took >= 250 && took < 3000, "took %" PRIu64 " ms", took);
    finish_test();
}

Test(outbound, cut_mid_response)
{
    open_cli(4, 5000, 1024);
    struct call c;
    call_init(&c, "/cut");
    roundtrip(&c, 5000);
    cr_assert_eq(c.err, HK_EUNAVAIL, "%d %s", c.err, c.error);
    cr_assert_eq(c.status, 0);
    cr_assert_eq(c.retry_after_ms, -1);
    cr_assert(strstr(c.error, "cut short"), "%s", c.error);
    /* The client goes on: the next request works on a new connection. */
    struct call d;
    call_init(&d, "/ok");
    roundtrip(&d, 5000);
    cr_assert_eq(d.status, 200);
    cr_assert_eq(atomic_load(&srv.accepted), 2);
    finish_test();
}

Test(outbound, refused_quickly)
{
    open_cli(4, 10000, 1024);
    struct call c;
    call_init(&c, "");
    snprintf(c.url, sizeof c.url, "http://127.0.0.1:%d/x", closed_port());
    roundtrip(&c, 5000);
    cr_assert_eq(c.err, HK_EUNAVAIL, "%d %s", c.err, c.error);
    cr_assert_eq(c.status, 0);
    cr_assert(strstr(c.error, "connect failed (curl 7)"), "%s", c.error);
    cr_assert(c.done_ms - c.sent_ms < 1000, "took %" PRIu64 " ms", c.done_ms - c.sent_ms);
    finish_test();
}

/* Through libcurl's resolver (names in .invalid never resolve, RFC 6761);
 * a resolver with no DNS server to ask may time out instead. */
Test(outbound, unresolvable_host)
{
    open_cli(4, 10000, 1024);
    struct call c;
    call_init(&c, "");
    snprintf(c.url, sizeof c.url, "http://hookd-outbound-test.invalid/x");
    roundtrip(&c, 15000);
    cr_assert(c.err == HK_EUNAVAIL || c.err == HK_ETIMEDOUT, "%d %s", c.err, c.error);
    cr_assert_eq(c.status, 0);
    if (c.err == HK_EUNAVAIL)
        cr_assert(strstr(c.error, "could not resolve host (curl 6)"), "%s", c.error);
    finish_test();
}

/* A refused request closed before its done ran keeps its reason. */
Test(outbound, refused_then_closed)
{
    open_cli(4, 5000, 1024);
    struct call c, d;
    call_init(&c, "");
    snprintf(c.url, sizeof c.url, "ftp://127.0.0.1/");
    call_init(&d, "/stall");
    cr_assert_eq(send_call(&c), 0);
    cr_assert_eq(send_call(&d), 0);
    hk_out_close(cli);
    cli = NULL;
    cr_assert_eq(c.ndone, 1);
    cr_assert_eq(c.err, HK_EINVAL);
    cr_assert_eq(d.ndone, 1);
    cr_assert_eq(d.err, HK_EUNAVAIL);
    cr_assert_str_eq(d.error, "client closed");
    finish_test();
}

Test(outbound, credentials_not_in_error)
{
    open_cli(4, 10000, 1024);
    int port = closed_port();
    static const char *const urls[] = {
        "http://hookuser:s3cr3tpw@127.0.0.1:%d/x",
        "http://hookuser:s3cr3tpw@localhost:%d/x",
        "http://s3cr3tpw@127.0.0.1:%d/x",
        "ftp://hookuser:s3cr3tpw@127.0.0.1:%d/x",
        "http://hookuser:s3cr3tpw@127.0.0.1:%d:x/",
    };
    for (size_t i = 0; i < sizeof urls / sizeof urls[0]; i++) {
        struct call c;
        call_init(&c, "");
        snprintf(c.url, sizeof c.url, urls[i], port);
        roundtrip(&c, 5000);
        cr_assert_neq(c.err, 0, "%s", c.url);
        cr_assert(c.has_error);
        cr_assert_null(strstr(c.error, "s3cr3tpw"), "%s", c.error);
        cr_assert_null(strstr(c.error, "hookuser"), "%s", c.error);
    }
    /* Credentials that work are sent (Basic), and a success has no text. */
    struct call c;
    call_init(&c, "");
    snprintf(c.url, sizeof c.url, "http://hookuser:s3cr3tpw@127.0.0.1:%d/hdrs", srv.port);
    roundtrip(&c, 5000);
    cr_assert_eq(c.status, 200);
    cr_assert(!c.has_error);
    cr_assert(strstr(c.body, "Authorization: Basic aG9va3VzZXI6czNjcjN0cHc="), "%s", c.body);
    finish_test();
}

Test(outbound, bad_urls_end_in_einval)
{
    open_cli(4, 5000, 1024);
    char ftp[128], port0[128];
    snprintf(ftp, sizeof ftp, "ftp://127.0.0.1:%d/file", srv.port);
    snprintf(port0, sizeof port0, "http://127.0.0.1:99999/");
    const char *urls[] = {ftp, "garbage", "", "file:///etc/passwd", "http://[::1/", port0,
                          "http://exa mple.com/", "gopher://127.0.0.1/"};
    for (size_t i = 0; i < sizeof urls / sizeof urls[0]; i++) {
        struct call c;
        call_init(&c, "");
        snprintf(c.url, sizeof c.url, "%s", urls[i]);
        roundtrip(&c, 5000);
        cr_assert_eq(c.err, HK_EINVAL, "%s: %d %s", urls[i], c.err, c.error);
        cr_assert_eq(c.status, 0);
        cr_assert(c.has_error && c.error[0]);
    }
    cr_assert_eq(atomic_load(&srv.accepted), 0);
    /* The scheme is read without regard to case. */
    struct call c;
    call_init(&c, "");
    snprintf(c.url, sizeof c.url, "HTTP://127.0.0.1:%d/ok", srv.port);
    roundtrip(&c, 5000);
    cr_assert_eq(c.status, 200);
    finish_test();
}

Test(outbound, bad_headers_end_in_einval)
{
    open_cli(4, 5000, 1024);
    static const char *const bad[] = {"X-A: b\r\nX-Injected: 1", "X-A: b\n", "NoColon", ": empty name",
                                      "X-A: \x01"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        struct call c;
        call_init(&c, "/ok");
        c.hdrs[0] = "X-Fine: yes";
        c.hdrs[1] = bad[i];
        c.req.nheaders = 2;
        roundtrip(&c, 5000);
        cr_assert_eq(c.err, HK_EINVAL, "%zu: %d %s", i, c.err, c.error);
    }
    cr_assert_eq(atomic_load(&srv.accepted), 0);
    /* Misuse is refused at send, with no done. */
    struct call c;
    call_init(&c, "/ok");
    c.req.body_len = 5;
    cr_assert_eq(send_call(&c), HK_EINVAL);
    c.req.body_len = 0;
    c.req.done = NULL;
    cr_assert_eq(send_call(&c), HK_EINVAL);
    c.req.done = on_done;
    c.req.url = NULL;
    cr_assert_eq(send_call(&c), HK_EINVAL);
    cr_assert_eq(hk_out_inflight(cli), 0);
    run_until(never, NULL, 50);
    cr_assert_eq(c.ndone, 0);
    finish_test();
}

Test(outbound, headers_and_body_received)
{
    open_cli(4, 5000, 4096);
    struct call c;
    call_init(&c, "/hdrs");
    c.hdrs[0] = "X-Test: abc def";
    c.hdrs[1] = "Content-Type: application/json";
    c.hdrs[2] = "ce-id: 42";
    c.req.nheaders = 3;
    c.req.body = "{\"a\":1}";
    c.req.body_len = 7;
    roundtrip(&c, 5000);
    cr_assert_eq(c.status, 200);
    cr_assert(strncmp(c.body, "POST /hdrs HTTP/1.1\r\n", 21) == 0, "%s", c.body);
    cr_assert(strstr(c.body, "\r\nX-Test: abc def\r\n"), "%s", c.body);
    cr_assert(strstr(c.body, "\r\nContent-Type: application/json\r\n"), "%s", c.body);
    cr_assert(strstr(c.body, "\r\nce-id: 42\r\n"), "%s", c.body);
    cr_assert(strstr(c.body, "\r\nContent-Length: 7\r\n"), "%s", c.body);
    cr_assert_null(strstr(c.body, "Expect"), "%s", c.body);
    /* No Content-Type given: none sent (not curl's form type), empty body. */
    struct call d;
    call_init(&d, "/hdrs");
    roundtrip(&d, 5000);
    cr_assert_eq(d.status, 200);
    cr_assert_null(strcasestr(d.body, "Content-Type"), "%s", d.body);
    cr_assert(strstr(d.body, "\r\nContent-Length: 0\r\n"), "%s", d.body);
    finish_test();
}

/* Header lines go to curl in the slot's own list when they fit and in an
 * allocated one when not (client.c: header_lines); the URL is set again
 * only when it changes. One slot, so every request reuses the same handle:
 * 20 lines (the allocated list), then another URL with 2, then the first
 * URL again with none; each request carries its own lines and path only. */
Test(outbound, header_lines_and_url_per_request_on_one_handle)
{
    open_cli(1, 5000, 4096);
    static char lines[20][32];
    static const char *many[20];
    for (int i = 0; i < 20; i++) {
        snprintf(lines[i], sizeof lines[i], "X-Line-%02d: v%d", i, i);
        many[i] = lines[i];
    }
    struct call a;
    call_init(&a, "/hdrs");
    a.req.headers = many;
    a.req.nheaders = 20;
    roundtrip(&a, 5000);
    cr_assert_eq(a.status, 200, "%d %s", a.err, a.error);
    cr_assert(strncmp(a.body, "POST /hdrs HTTP/1.1\r\n", 21) == 0, "%s", a.body);
    for (int i = 0; i < 20; i++) {
        char want[48];
        snprintf(want, sizeof want, "\r\nX-Line-%02d: v%d\r\n", i, i);
        cr_assert(strstr(a.body, want), "line %d missing: %s", i, a.body);
    }
    cr_assert_null(strstr(a.body, "Expect"), "%s", a.body);

    struct call b;
    call_init(&b, "/echo");
    b.hdrs[0] = "X-Only: b";
    b.hdrs[1] = "Content-Type: text/plain";
    b.req.nheaders = 2;
    b.req.body = "hello";
    b.req.body_len = 5;
    roundtrip(&b, 5000);
    cr_assert_eq(b.status, 200, "%d %s", b.err, b.error);
    cr_assert(strncmp(b.body, "5 ", 2) == 0, "went to the previous URL: %s", b.body);
    cr_assert_null(strstr(b.body, "expect"), "%s", b.body);

    struct call c;
    call_init(&c, "/hdrs");
    roundtrip(&c, 5000);
    cr_assert_eq(c.status, 200, "%d %s", c.err, c.error);
    cr_assert(strncmp(c.body, "POST /hdrs HTTP/1.1\r\n", 21) == 0, "%s", c.body);
    cr_assert_null(strstr(c.body, "X-Line-"), "a line of an earlier request: %s", c.body);
    cr_assert_null(strstr(c.body, "X-Only"), "a line of an earlier request: %s", c.body);
    cr_assert_null(strcasestr(c.body, "Content-Type"), "%s", c.body);
    cr_assert_eq(atomic_load(&srv.accepted), 1);
    finish_test();
}

Test(outbound, big_body_intact)
{
    open_cli(4, 20000, 1024);
    /* Past curl's 1 MiB threshold for Expect: 100-continue, which the
     * client turns off. */
    size_t n = (1 << 20) + 17;
    unsigned char *body = malloc(n);
    uint32_t x = 2463534242u;
    for (size_t i = 0; i < n; i++) {
        x ^= x << 13;
        x ^= x >> 17;
        x ^= x << 5;
        body[i] = (unsigned char)x;
    }
    uint8_t d[32];
    char hex[65], want[128];
    hk_sha256(body, n, d);
    hex32(d, hex);
    snprintf(want, sizeof want, "%zu %s", n, hex);
    struct call c;
    call_init(&c, "/echo");
    c.hdrs[0] = "Content-Type: application/octet-stream";
    c.req.nheaders = 1;
    c.req.body = body;
    c.req.body_len = n;
    roundtrip(&c, 20000);
    cr_assert_eq(c.err, 0, "%d %s", c.err, c.error);
    cr_assert_eq(c.status, 200);
    cr_assert_str_eq(c.body, want);
    free(body);
    finish_test();
}

Test(outbound, response_kept_up_to_max)
{
    open_cli(4, 5000, 1000);
    struct call c;
    call_init(&c, "/big");
    roundtrip(&c, 5000);
    cr_assert_eq(c.status, 200);
    cr_assert_eq(c.body_len, 1000);
    cr_assert_eq(strspn(c.body, "x"), 1000);
    /* The whole response was read: the connection is reused. */
    struct call d;
    call_init(&d, "/ok");
    roundtrip(&d, 5000);
    cr_assert_eq(d.status, 200);
    cr_assert_eq(atomic_load(&srv.accepted), 1);
    finish_test();
}

Test(outbound, redirect_not_followed)
{
    open_cli(4, 5000, 1024);
    struct call c;
    call_init(&c, "/redirect");
    roundtrip(&c, 5000);
    cr_assert_eq(c.err, 0);
    cr_assert_eq(c.status, 302);
    finish_test();
}

Test(outbound, tls_to_plain_server)
{
    open_cli(4, 5000, 1024);
    struct call c;
    call_init(&c, "");
    snprintf(c.url, sizeof c.url, "https://127.0.0.1:%d/ok", srv.port);
    roundtrip(&c, 5000);
    cr_assert_eq(c.err, HK_EUNAVAIL, "%d %s", c.err, c.error);
    cr_assert(strstr(c.error, "TLS handshake failed"), "%s", c.error);
    finish_test();
}

/* Keep-alive: 20 requests one after another over one connection. */
static struct call seq[20];
static int seq_next;

static void seq_then(struct call *c)
{
    (void)c;
    if (seq_next < 20)
        cr_assert_eq(send_call(&seq[seq_next++]), 0);
}

static bool seq_done(void *arg)
{
    (void)arg;
    return seq[19].ndone > 0;
}

Test(outbound, keepalive_reuses_one_connection)
{
    open_cli(4, 5000, 1024);
    for (int i = 0; i < 20; i++) {
        call_init(&seq[i], "/echo");
        seq[i].then = seq_then;
        seq[i].req.body = "hello";
        seq[i].req.body_len = 5;
    }
    seq_next = 1;
    cr_assert_eq(send_call(&seq[0]), 0);
    cr_assert(run_until(seq_done, NULL, 10000));
    for (int i = 0; i < 20; i++) {
        cr_assert_eq(seq[i].ndone, 1);
        cr_assert_eq(seq[i].status, 200, "%d: %d %s", i, seq[i].err, seq[i].error);
    }
    cr_assert_eq(atomic_load(&srv.accepted), 1);
    cr_assert_eq(early_dones, 0);
    finish_test();
}

static int turns;

static bool count_turns(void *arg)
{
    (void)arg;
    turns++;
    return false;
}

/* A kept-alive connection stays watched between requests (client.c); when
 * its server closes it meanwhile, the watch ends instead of waking the loop
 * on every turn, and the next request goes on a new connection. */
Test(outbound, idle_connection_closed_by_its_server)
{
    open_cli(4, 5000, 1024);
    struct call c, d;
    call_init(&c, "/bye");
    roundtrip(&c, 5000);
    cr_assert_eq(c.status, 200, "%d %s", c.err, c.error);
    cr_assert_str_eq(c.body, "bye");
    turns = 0;
    run_until(count_turns, NULL, 300);
    /* Watched still, the closed socket would wake every turn: about
     * 270,000 turns in these 300 ms, against about 60 (curl's timers). */
    cr_assert_lt(turns, 1000, "the loop turned %d times in 300 ms with nothing to do", turns);
    call_init(&d, "/ok");
    roundtrip(&d, 5000);
    cr_assert_eq(d.status, 200, "%d %s", d.err, d.error);
    cr_assert_eq(atomic_load(&srv.accepted), 2, "a new connection for the second request");
    /* Many requests in turn over one kept-alive connection still reuse it. */
    for (int i = 0; i < 20; i++) {
        call_init(&seq[i], "/echo");
        seq[i].then = seq_then;
    }
    seq_next = 1;
    cr_assert_eq(send_call(&seq[0]), 0);
    cr_assert(run_until(seq_done, NULL, 10000));
    for (int i = 0; i < 20; i++)
        cr_assert_eq(seq[i].status, 200, "%d: %d %s", i, seq[i].err, seq[i].error);
    cr_assert_eq(atomic_load(&srv.accepted), 2);
    finish_test();
}

Test(outbound, busy_at_max_conns)
{
    open_cli(2, 30000, 1024);
    struct call a, b, c;
    call_init(&a, "/stall");
    call_init(&b, "/stall");
    call_init(&c, "/ok");
    cr_assert_eq(send_call(&a), 0);
    cr_assert_eq(send_call(&b), 0);
    cr_assert_eq(send_call(&c), HK_EBUSY);
    cr_assert_eq(hk_out_inflight(cli), 2);
    run_until(never, NULL, 100);
    cr_assert_eq(send_call(&c), HK_EBUSY);
    hk_out_close(cli);
    cli = NULL;
    cr_assert_eq(a.ndone, 1);
    cr_assert_eq(b.ndone, 1);
    cr_assert_eq(c.ndone, 0);
    cr_assert_eq(a.err, HK_EUNAVAIL);
    cr_assert_str_eq(a.error, "client closed");
    cr_assert_eq(b.err, HK_EUNAVAIL);
    finish_test();
    cr_assert_eq(a.ndone, 1);
    cr_assert_eq(b.ndone, 1);
}

/* 200 requests through 16 slots: each done sends the next. */
#define MANY 200
static struct call many[MANY];
static int many_next;
static size_t many_peak;
static char many_bodies[MANY][32];

static void many_pump(struct call *c)
{
    (void)c;
    while (many_next < MANY) {
        int rc = send_call(&many[many_next]);
        if (rc == HK_EBUSY)
            break;
        cr_assert_eq(rc, 0);
        many_next++;
    }
    if (cli && hk_out_inflight(cli) > many_peak)
        many_peak = hk_out_inflight(cli);
}

static bool many_done(void *arg)
{
    (void)arg;
    for (int i = 0; i < MANY; i++)
        if (many[i].ndone == 0)
            return false;
    return true;
}

Test(outbound, many_over_few_connections)
{
    open_cli(16, 20000, 1024);
    for (int i = 0; i < MANY; i++) {
        call_init(&many[i], "/echo");
        many[i].then = many_pump;
        int n = snprintf(many_bodies[i], sizeof many_bodies[i], "request %d", i);
        many[i].req.body = many_bodies[i];
        many[i].req.body_len = (size_t)n;
    }
    many_pump(NULL);
    cr_assert_eq(many_next, 16, "the first 16 are sent, then HK_EBUSY");
    cr_assert(run_until(many_done, NULL, 30000), "only %d sent", many_next);
    for (int i = 0; i < MANY; i++) {
        cr_assert_eq(many[i].ndone, 1);
        cr_assert_eq(many[i].status, 200, "%d: %d %s", i, many[i].err, many[i].error);
        uint8_t d[32];
        char hex[65], want[128];
        hk_sha256(many_bodies[i], many[i].req.body_len, d);
        hex32(d, hex);
        snprintf(want, sizeof want, "%zu %s", many[i].req.body_len, hex);
        cr_assert_str_eq(many[i].body, want);
    }
    cr_assert_eq(many_peak, 16);
    int conns = atomic_load(&srv.accepted);
    cr_assert(conns >= 1 && conns <= 16, "%d connections", conns);
    cr_assert_eq(early_dones, 0);
    finish_test();
}

Test(outbound, close_with_requests_in_flight)
{
    open_cli(8, 30000, 1024);
    struct call c[8];
    for (int i = 0; i < 8; i++) {
        call_init(&c[i], i % 2 ? "/stall" : "/hdrs");
        if (i % 2 == 0)
            c[i].req.url = "http://127.0.0.1:1/";   /* refused, or pending in the loop */
        cr_assert_eq(send_call(&c[i]), 0);
    }
    /* Let the stalled ones connect and send. */
    run_until(never, NULL, 150);
    size_t pending = hk_out_inflight(cli);
    cr_assert(pending >= 4, "%zu", pending);
    hk_out_close(cli);
    cli = NULL;
    int closed = 0;
    for (int i = 0; i < 8; i++) {
        cr_assert_eq(c[i].ndone, 1, "%d ran %d times", i, c[i].ndone);
        if (strcmp(c[i].error, "client closed") == 0) {
            cr_assert_eq(c[i].err, HK_EUNAVAIL);
            closed++;
        }
    }
    cr_assert_eq((size_t)closed, pending);
    finish_test();
    for (int i = 0; i < 8; i++)
        cr_assert_eq(c[i].ndone, 1);
}

/* A done that closes the client: the others still end once each, and what
 * they try to send then is refused. */
static struct call cfd[6], cfd_extra;
static struct hk_out *cfd_closing;
static int cfd_refused;

static void close_then(struct call *c)
{
    (void)c;
    cfd_closing = cli;
    cli = NULL;
    hk_out_close(cfd_closing);
    hk_out_close(cfd_closing);   /* a second close while closing is harmless */
}

static void send_after_close(struct call *c)
{
    (void)c;
    call_init(&cfd_extra, "/ok");
    if (hk_out_send(cfd_closing, &cfd_extra.req) == HK_EUNAVAIL)
        cfd_refused++;
}

static bool cfd_done(void *arg)
{
    (void)arg;
    for (int i = 0; i < 6; i++)
        if (cfd[i].ndone == 0)
            return false;
    return true;
}

Test(outbound, close_from_done)
{
    open_cli(8, 30000, 1024);
    call_init(&cfd[0], "/ok");
    cfd[0].then = close_then;
    cr_assert_eq(send_call(&cfd[0]), 0);
    for (int i = 1; i < 6; i++) {
        call_init(&cfd[i], "/stall");
        cfd[i].then = send_after_close;
        cr_assert_eq(send_call(&cfd[i]), 0);
    }
    cr_assert(run_until(cfd_done, NULL, 5000));
    cr_assert_eq(cfd[0].status, 200);
    for (int i = 1; i < 6; i++) {
        cr_assert_eq(cfd[i].ndone, 1);
        cr_assert_eq(cfd[i].err, HK_EUNAVAIL);
        cr_assert_str_eq(cfd[i].error, "client closed");
    }
    cr_assert_eq(cfd_refused, 5);
    finish_test();
    cr_assert_eq(cfd_extra.ndone, 0);
}

Test(outbound, open_refuses_bad_options)
{
    struct hk_out *o = NULL;
    char err[256];
    struct hk_out_opts bad[] = {
        {.max_conns = 0, .connect_ms = 1000, .total_ms = 1000},
        {.max_conns = 1, .connect_ms = 0, .total_ms = 1000},
        {.max_conns = 1, .connect_ms = 1000, .total_ms = 0},
        {.max_conns = 1, .connect_ms = 1000, .total_ms = 1000, .max_response = (size_t)1 << 30},
        {.max_conns = 1000000, .connect_ms = 1000, .total_ms = 1000},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        err[0] = 0;
        cr_assert_eq(hk_out_open(&loop, &bad[i], &o, err, sizeof err), HK_EINVAL);
        cr_assert_null(o);
        cr_assert(err[0], "no reason for case %zu", i);
    }
    finish_test();
}
