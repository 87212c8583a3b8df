/* SPDX-License-Identifier: MIT
 * systemd integration: socket activation through Debian's
 * systemd-socket-activate (a request sent while hookd is down is answered,
 * hookd exits 0 after HOOKD_EXIT_IDLE_AFTER, the next request starts it
 * again), sd_notify READY=1/STOPPING=1 on a datagram socket of the test's,
 * and LISTEN_* variables that are not hookd's. */
#include <criterion/criterion.h>

#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include "harness.h"

#define ACTIVATE "/usr/bin/systemd-socket-activate"
#define IDLE_MS 1000

static struct hk_server srv;
static int held = -1;

static void teardown(void)
{
    hk_server_cleanup(&srv);
    if (held >= 0)
        close(held);
    held = -1;
}

TestSuite(activation, .fini = teardown, .timeout = 90);

static void need_activate(void)
{
    if (access(ACTIVATE, X_OK) != 0)
        cr_skip_test("%s is missing (Debian package systemd): socket activation not tested", ACTIVATE);
}

static void make_dir(struct hk_server *s)
{
    memset(s, 0, sizeof *s);
    s->out_fd = -1;
    const char *base = access("/dev/shm", W_OK) == 0 ? "/dev/shm" : "/tmp";
    snprintf(s->dir, sizeof s->dir, "%s/hookd-act-XXXXXX", base);
    cr_assert(mkdtemp(s->dir), "mkdtemp: %s", strerror(errno));
    snprintf(s->db_path, sizeof s->db_path, "%s/hookd.db", s->dir);
    snprintf(s->stderr_path, sizeof s->stderr_path, "%s/stderr.log", s->dir);
}

/* A listening socket on a free loopback port, held by the test the way a
 * service manager holds it: it outlives every hookd process. */
static int listen_loopback(int *port)
{
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    cr_assert(fd >= 0);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    socklen_t al = sizeof a;
    cr_assert_eq(bind(fd, (struct sockaddr *)&a, sizeof a), 0, "bind: %s", strerror(errno));
    cr_assert_eq(listen(fd, 128), 0);
    cr_assert_eq(getsockname(fd, (struct sockaddr *)&a, &al), 0);
    *port = ntohs(a.sin_port);
    return fd;
}

static int free_port(void)
{
    int port;
    int fd = listen_loopback(&port);
    close(fd);
    return port;
}

/* systemd-socket-activate passes on only the variables given with -E. */
static void push_env(const char **argv, int *n, char bufs[][600], int *nb, const char *fmt, const char *v)
{
    snprintf(bufs[*nb], sizeof bufs[0], fmt, v);
    argv[(*n)++] = "-E";
    argv[(*n)++] = bufs[(*nb)++];
}

/* Start systemd-socket-activate, on `listen_addr` (-l) or on the socket the
 * test holds (listen_addr NULL), with hookd as the program to exec. */
static void spawn_activate(struct hk_server *s, const char *listen_addr, int fd)
{
    const char *argv[40];
    char bufs[12][600];
    int n = 0, nb = 0;
    argv[n++] = ACTIVATE;
    if (listen_addr) {
        argv[n++] = "-l";
        argv[n++] = listen_addr;
    }
    char idle[32];
    snprintf(idle, sizeof idle, "%dms", IDLE_MS);
    push_env(argv, &n, bufs, &nb, "HOOKD_EXIT_IDLE_AFTER=%s", idle);
    push_env(argv, &n, bufs, &nb, "HOOKD_SQLITE_PATH=%s", s->db_path);
    push_env(argv, &n, bufs, &nb, "HOOKD_THREADS=%s", "2");
    push_env(argv, &n, bufs, &nb, "HOOKD_AUTH=%s", "off");   /* the test reads what it stored */
    static const char *const pass[] = {"ASAN_OPTIONS", "LSAN_OPTIONS", "UBSAN_OPTIONS", NULL};
    for (int i = 0; pass[i]; i++) {
        const char *v = getenv(pass[i]);
        if (v) {
            char f[64];
            snprintf(f, sizeof f, "%s=%%s", pass[i]);
            push_env(argv, &n, bufs, &nb, f, v);
        }
    }
    argv[n++] = getenv("HOOKD_BIN");
    argv[n] = NULL;
    if (s->out_fd >= 0)
        close(s->out_fd);
    s->pid = hk_spawn_cmd(s->dir, NULL, argv, listen_addr ? -1 : fd, &s->out_fd, s->stderr_path);
}

/* What the process is right now: "systemd-socket-" (comm is cut at 15
 * characters) before the first connection, "hookd" once it exec'd; the
 * test's own name for a moment after fork. */
static void comm_of(pid_t pid, char *out, size_t n)
{
    char path[64];
    snprintf(path, sizeof path, "/proc/%d/comm", (int)pid);
    FILE *f = fopen(path, "r");
    out[0] = 0;
    if (f) {
        if (fgets(out, (int)n, f))
            out[strcspn(out, "\n")] = 0;
        fclose(f);
    }
}

static bool log_has(const struct hk_server *s, const char *needle, int timeout_ms)
{
    int64_t deadline = hk_now_ms() + timeout_ms;
    do {
        char *log = hk_server_stderr(s);
        bool found = log && strstr(log, needle);
        free(log);
        if (found)
            return true;
        hk_sleep_ms(5);
    } while (hk_now_ms() < deadline);
    return false;
}

/* Send a request on a fresh connection; returns the fd (response not read). */
static int send_request(int port, const char *req)
{
    int fd = hk_tcp_try_connect(port);
    cr_assert(fd >= 0, "connect to 127.0.0.1:%d: %s (refused while hookd was down?)", port, strerror(-fd));
    cr_assert_eq(hk_tcp_sends(fd, req), 0);
    return fd;
}

/* Read one response; assert its status; returns the ms since `t0`. */
static double expect_status(int fd, int status, int64_t t0_us, json_t **body)
{
    struct hk_raw raw = {0};
    hk_tcp_read(fd, &raw, 1, 10000);
    char *log = hk_server_stderr(&srv);
    cr_assert_eq(raw.nfinal, 1, "no response (closed %d, timed out %d): %s\nstderr:\n%s", raw.closed, raw.timed_out,
                 raw.buf, log);
    free(log);
    cr_assert_eq(raw.r[0].status, status, "%s", raw.buf);
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    double ms = (double)((int64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000 - t0_us) / 1000.0;
    if (body)
        *body = json_loadb(raw.r[0].body, raw.r[0].body_len, 0, NULL);
    hk_tcp_close(fd);
    hk_raw_free(&raw);
    return ms;
}

static int64_t now_us(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

/* hookd exits on its own, with status 0, about IDLE_MS after the last
 * connection closed (the check runs every IDLE_MS/10). */
static void expect_idle_exit(struct hk_server *s, int64_t last_close_ms)
{
    int st = 0;
    cr_assert_eq(hk_wait_pid(s->pid, IDLE_MS + 4000, &st), 0, "no exit within %d ms of idleness", IDLE_MS + 4000);
    s->pid = 0;
    int64_t waited = hk_now_ms() - last_close_ms;
    char *log = hk_server_stderr(s);
    cr_assert(WIFEXITED(st) && WEXITSTATUS(st) == 0, "exit status 0x%x\nstderr:\n%s", st, log);
    /* Half: the test may see the close late on a loaded machine. */
    cr_assert_geq(waited, IDLE_MS / 2, "exited %lld ms after the last connection, before the idle time",
                  (long long)waited);
    cr_assert(strstr(log, "\"reason\":\"idle\""), "no idle stop logged:\n%s", log);
    free(log);
}

static const char READY[] = "GET /q/health/ready HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n";

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

Test(activation, listen_address_first_request_is_answered_then_idle_exit)
{
    need_activate();
    make_dir(&srv);
    srv.port = free_port();
    char addr[64];
    snprintf(addr, sizeof addr, "127.0.0.1:%d", srv.port);
    spawn_activate(&srv, addr, -1);
    cr_assert(log_has(&srv, "Listening on", 5000), "systemd-socket-activate did not listen");
    char comm[32];
    comm_of(srv.pid, comm, sizeof comm);
    cr_assert_str_eq(comm, "systemd-socket-", "hookd started before any connection");

    int64_t t0 = now_us();
    int fd = send_request(srv.port, READY);
    double ms = expect_status(fd, 200, t0, NULL);
    comm_of(srv.pid, comm, sizeof comm);
    cr_assert_str_eq(comm, "hookd");
    fprintf(stderr, "socket activation (-l), request sent before hookd started -> 200: %.2f ms\n", ms);
    expect_idle_exit(&srv, hk_now_ms());
}

/* The whole cycle as a service manager runs it: the socket stays open
 * between processes, so requests that arrive while no hookd runs wait in
 * its queue, and each one wakes a fresh process that answers it. */
Test(activation, held_socket_restarts_on_each_request_and_keeps_data)
{
    need_activate();
    make_dir(&srv);
    held = listen_loopback(&srv.port);
    enum { CYCLES = 7 };
    double lat[CYCLES];
    int64_t id = 0;
    for (int c = 0; c < CYCLES; c++) {
        hk_context("activation cycle %d", c);
        if (truncate(srv.stderr_path, 0) < 0 && errno != ENOENT)
            cr_assert_fail("truncate %s: %s", srv.stderr_path, strerror(errno));
        int fd;
        int64_t t0;
        if (c % 2 == 0) {
            /* Process first: it must wait for the connection, not start hookd. */
            spawn_activate(&srv, NULL, held);
            char comm[32];
            int64_t deadline = hk_now_ms() + 5000;
            do {
                hk_sleep_ms(5);
                comm_of(srv.pid, comm, sizeof comm);
            } while (strcmp(comm, "systemd-socket-") != 0 && strcmp(comm, "hookd") != 0 && hk_now_ms() < deadline);
            hk_sleep_ms(100);
            comm_of(srv.pid, comm, sizeof comm);
            cr_assert_str_eq(comm, "systemd-socket-", "hookd started before any connection");
            t0 = now_us();
            fd = send_request(srv.port, READY);
        } else {
            /* Request first, while nothing runs: it is queued, not refused. */
            fd = send_request(srv.port, READY);
            hk_sleep_ms(50);
            /* Timed from the start, as the queueing time is the test's own. */
            t0 = now_us();
            spawn_activate(&srv, NULL, held);
        }
        lat[c] = expect_status(fd, 200, t0, NULL);
        if (c == 0) {
            id = hk_create(&srv, "activation", "cycle", "x");
        } else {
            char req[128];
            snprintf(req, sizeof req, "GET /api/webhooks/%lld HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n",
                     (long long)id);
            fd = send_request(srv.port, req);
            json_t *o = NULL;
            expect_status(fd, 200, now_us(), &o);
            hk_assert_webhook(o, "activation", "cycle", "x");
            json_decref(o);
        }
        expect_idle_exit(&srv, hk_now_ms());
    }
    hk_context("%s", "");
    qsort(lat, CYCLES, sizeof lat[0], cmp_double);
    fprintf(stderr, "socket activation, request -> 200 with hookd down: median %.2f ms (min %.2f, max %.2f, %d runs)\n",
            lat[CYCLES / 2], lat[0], lat[CYCLES - 1], CYCLES);
    cr_assert_lt(lat[CYCLES / 2], 2000.0, "median first-request latency %.1f ms", lat[CYCLES / 2]);
}

/* ---- sd_notify ---- */

static int notify_socket(char *name, size_t n, bool abstract, const char *dir)
{
    int fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    cr_assert(fd >= 0);
    struct sockaddr_un sa = {.sun_family = AF_UNIX};
    socklen_t len;
    if (abstract) {
        snprintf(name, n, "@hookd-test-notify-%d-%lld", (int)getpid(), (long long)now_us());
        size_t l = strlen(name);
        memcpy(sa.sun_path, name, l);
        sa.sun_path[0] = 0;
        len = (socklen_t)(offsetof(struct sockaddr_un, sun_path) + l);
    } else {
        snprintf(name, n, "%s/notify.sock", dir);
        snprintf(sa.sun_path, sizeof sa.sun_path, "%s", name);
        len = sizeof sa;
    }
    cr_assert_eq(bind(fd, (struct sockaddr *)&sa, len), 0, "bind %s: %s", name, strerror(errno));
    return fd;
}

/* Collect datagrams until one contains `want` or the time is up. */
static bool recv_state(int fd, const char *want, int timeout_ms, char *all, size_t alln)
{
    int64_t deadline = hk_now_ms() + timeout_ms;
    for (;;) {
        int64_t left = deadline - hk_now_ms();
        if (left <= 0)
            return false;
        struct pollfd p = {fd, POLLIN, 0};
        if (poll(&p, 1, (int)left) <= 0)
            continue;
        char buf[512];
        ssize_t r = recv(fd, buf, sizeof buf - 1, 0);
        if (r <= 0)
            continue;
        buf[r] = 0;
        size_t used = strlen(all);
        snprintf(all + used, alln - used, "[%s]", buf);
        for (char *save = NULL, *line = strtok_r(buf, "\n", &save); line; line = strtok_r(NULL, "\n", &save))
            if (strcmp(line, want) == 0)
                return true;
    }
}

static void notify_case(bool abstract)
{
    char dir[64] = "/tmp/hookd-notify-XXXXXX";
    cr_assert(mkdtemp(dir));
    char name[100], env[160];
    int nfd = notify_socket(name, sizeof name, abstract, dir);
    snprintf(env, sizeof env, "NOTIFY_SOCKET=%s", name);
    const char *extra[] = {env, NULL};
    hk_server_start(&srv, extra);
    /* hk_server_start returned: the ready line was read. READY=1 follows it. */
    char got[2048] = "";
    cr_assert(recv_state(nfd, "READY=1", 2000, got, sizeof got), "no READY=1 on %s, got: %s", name, got);
    cr_assert(strstr(got, "STATUS=Listening on http://127.0.0.1:"), "no STATUS line: %s", got);
    hk_assert_alive(&srv);
    cr_assert_eq(kill(srv.pid, SIGTERM), 0);
    cr_assert(recv_state(nfd, "STOPPING=1", 2000, got, sizeof got), "no STOPPING=1 after SIGTERM, got: %s", got);
    hk_server_stop_clean(&srv);
    close(nfd);
    if (!abstract)
        unlink(name);
    rmdir(dir);
}

Test(activation, notify_ready_and_stopping_on_abstract_socket)
{
    notify_case(true);
}

Test(activation, notify_ready_on_path_socket)
{
    notify_case(false);
}

/* ---- LISTEN_* that are not for hookd ---- */

Test(activation, listen_pid_of_another_process_is_ignored)
{
    /* fd 3 is closed in the child: were the variables believed, the start
     * would fail; ignored, hookd binds its own port. */
    const char *env[] = {"LISTEN_PID=1", "LISTEN_FDS=1", "LISTEN_FDNAMES=x", NULL};
    hk_server_start(&srv, env);
    hk_assert_alive(&srv);
    hk_finish(&srv);
}

Test(activation, listen_fds_that_are_not_listening_sockets_fail_fast)
{
    make_dir(&srv);
    /* $$ is the shell's pid, which exec keeps: LISTEN_PID is hookd's own. */
    const char *cases[][2] = {
        {"exec 3</dev/null; LISTEN_PID=$$ LISTEN_FDS=1 exec \"$HOOKD_BIN\"", "not a socket"},
        {"exec 3<&-; LISTEN_PID=$$ LISTEN_FDS=1 exec \"$HOOKD_BIN\"", "not an open descriptor"},
        {"exec 3</dev/null; LISTEN_PID=$$ LISTEN_FDS=x exec \"$HOOKD_BIN\"", "LISTEN_FDS"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        const char *argv[] = {"/bin/sh", "-c", cases[i][0], NULL};
        char bin[600];
        snprintf(bin, sizeof bin, "HOOKD_BIN=%s", getenv("HOOKD_BIN"));
        const char *extra[] = {bin, NULL};
        if (truncate(srv.stderr_path, 0) < 0 && errno != ENOENT)
            cr_assert_fail("truncate %s: %s", srv.stderr_path, strerror(errno));
        int out;
        pid_t pid = hk_spawn_cmd(srv.dir, extra, argv, -1, &out, srv.stderr_path);
        int st = 0;
        cr_assert_eq(hk_wait_pid(pid, 3000, &st), 0, "case %zu: still running", i);
        char *o = hk_read_all_fd(out, 100, NULL);
        close(out);
        char *log = hk_server_stderr(&srv);
        cr_assert(WIFEXITED(st) && WEXITSTATUS(st) == 2, "case %zu: status 0x%x, stderr: %s", i, st, log);
        cr_assert(strstr(log, cases[i][1]) && strstr(log, "LISTEN_FDS"), "case %zu: %s", i, log);
        cr_assert(!strstr(o, "started"), "case %zu: started anyway: %s", i, o);
        free(o);
        free(log);
    }
}

/* ---- idle exit on its own socket ---- */

Test(activation, idle_exit_waits_for_open_connections)
{
    const char *env[] = {"HOOKD_EXIT_IDLE_AFTER=300ms", NULL};
    hk_server_start(&srv, env);
    /* A keep-alive connection open longer than the idle time holds it up. */
    int fd = hk_tcp_connect(&srv);
    cr_assert_eq(hk_tcp_sends(fd, "GET /q/health/live HTTP/1.1\r\nHost: x\r\n\r\n"), 0);
    struct hk_raw raw = {0};
    hk_tcp_read(fd, &raw, 1, 3000);
    cr_assert_eq(raw.nfinal, 1);
    hk_sleep_ms(900);
    int st;
    cr_assert_eq(hk_wait_pid(srv.pid, 0, &st), -1, "exited with a connection open");
    hk_tcp_close(fd);
    hk_raw_free(&raw);
    int64_t closed = hk_now_ms();
    cr_assert_eq(hk_wait_pid(srv.pid, 3000, &st), 0, "no idle exit within 3 s of the last close");
    srv.pid = 0;
    int64_t after = hk_now_ms() - closed;
    cr_assert(WIFEXITED(st) && WEXITSTATUS(st) == 0, "exit status 0x%x", st);
    cr_assert_geq(after, 150, "exited %lld ms after the last close (idle time 300 ms)", (long long)after);
}

Test(activation, exit_idle_after_is_validated)
{
    const char *env[] = {"HOOKD_EXIT_IDLE_AFTER=soon", NULL};
    char *out, *err;
    int st = hk_run(env, NULL, 2000, &out, &err);
    cr_assert(st != -1 && WIFEXITED(st) && WEXITSTATUS(st) != 0, "status 0x%x", st);
    cr_assert(strstr(err, "HOOKD_EXIT_IDLE_AFTER"), "%s", err);
    free(out);
    free(err);
}
