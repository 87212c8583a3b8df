/* SPDX-License-Identifier: MIT
 * Hostile clients and loads: pipeliners that never read, descriptor
 * exhaustion, idle keep-alive connections at the connection limit, CPU work
 * queued at shutdown, filters that are not UTF-8, and HTTP that proxies may
 * read differently than hookd. Each test runs a bounded slice by default (a
 * few seconds); HOOKD_TORTURE=1 runs the sizes the hardening issue quotes
 * (make torture). Memory and time bounds are generous ceilings, not
 * benchmarks: a leak or a spin is orders of magnitude over them. What each
 * test measured goes to stderr as "hostile: ..." lines. */
#include <criterion/criterion.h>

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include "harness.h"

#if defined(__SANITIZE_ADDRESS__)
#define HK_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define HK_ASAN 1
#endif
#endif
#ifndef HK_ASAN
#define HK_ASAN 0
#endif

static struct hk_server srv, srv2;

static void teardown(void)
{
    hk_server_cleanup(&srv);
    hk_server_cleanup(&srv2);
}

TestSuite(hostile, .fini = teardown, .timeout = 180);

#define LIVE "GET /q/health/live HTTP/1.1\r\nHost: localhost\r\n\r\n"
#define MB (1024L * 1024L)

static bool torture(void)
{
    const char *v = getenv("HOOKD_TORTURE");
    return v && *v && strcmp(v, "0") != 0;
}

/* The slice `make test` runs, or the size the issue quotes. */
static int size_pick(int slice, int full)
{
    return torture() ? full : slice;
}

#define REPORT(...)                                   \
    do {                                              \
        fprintf(stderr, "hostile: " __VA_ARGS__);     \
        fputc('\n', stderr);                          \
        fflush(stderr);                               \
    } while (0)

static void store_independent(void)
{
    if (hk_store_is_pg())
        cr_skip_test("store-independent: the integ suite runs it on SQLite");
}

static bool have_program(const char *name)
{
    const char *path = getenv("PATH");
    if (!path || !*path)
        path = "/usr/bin:/bin";
    char buf[4096];
    snprintf(buf, sizeof buf, "%s", path);
    for (char *save = NULL, *d = strtok_r(buf, ":", &save); d; d = strtok_r(NULL, ":", &save)) {
        char p[4200];
        snprintf(p, sizeof p, "%s/%s", d, name);
        if (access(p, X_OK) == 0)
            return true;
    }
    return false;
}

/* Under ASan, freed memory waits in a quarantine (256 MB by default) before
 * it is reused: RSS then says little about what hookd holds. A small
 * quarantine keeps use-after-free detection for recent frees. */
static const char *asan_env(void)
{
    if (!HK_ASAN)
        return NULL;
    static char buf[1024];
    const char *cur = getenv("ASAN_OPTIONS");
    snprintf(buf, sizeof buf, "ASAN_OPTIONS=%s%squarantine_size_mb=16", cur && *cur ? cur : "",
             cur && *cur ? ":" : "");
    return buf;
}

static bool problem_json(const char *head, size_t head_len)
{
    char v[128];
    return hk_head_get(head, head_len, "Content-Type", v, sizeof v) > 0 &&
           strncasecmp(v, "application/problem+json", 24) == 0;
}

/* One request on a fresh connection; the status, 0 when none came. */
static int raw_status_once(int port, const char *req, int timeout_ms)
{
    int fd = hk_tcp_try_connect(port);
    if (fd < 0)
        return 0;
    hk_tcp_sends(fd, req);
    struct hk_raw raw = {0};
    hk_tcp_read(fd, &raw, 1, timeout_ms);
    int st = raw.nfinal ? hk_raw_final(&raw, 0)->status : 0;
    hk_tcp_close(fd);
    hk_raw_free(&raw);
    return st;
}

/* ==== 1. pipelining clients that never read ==== */

static void flood_body(int i, char *buf, size_t n)
{
    char pl[1025];
    memset(pl, 'a' + i % 26, 1024);
    pl[1024] = 0;
    snprintf(buf, n, "{\"source\":\"flood\",\"eventType\":\"e%d\",\"payload\":\"%s\"}", i, pl);
}

struct probe {
    const struct hk_server *s;
    atomic_bool stop;
    int n, ok;
    long worst_ms, last_status;
    int last_rc;
};

/* GET /q/health/live on a fresh connection every 300 ms; each must answer
 * 200 within 2 s. */
static void *probe_main(void *arg)
{
    struct probe *p = arg;
    while (!atomic_load(&p->stop)) {
        int64_t t = hk_now_ms();
        struct hk_req req = {.path = "/q/health/live", .timeout_ms = 2000};
        struct hk_resp r;
        int rc = hk_request(p->s, NULL, &req, &r);
        long ms = (long)(hk_now_ms() - t);
        p->n++;
        if (rc == CURLE_OK && r.status == 200 && ms <= 2000)
            p->ok++;
        else {
            p->last_rc = rc;
            p->last_status = r.status;
        }
        if (ms > p->worst_ms)
            p->worst_ms = ms;
        hk_resp_free(&r);
        for (int i = 0; i < 6 && !atomic_load(&p->stop); i++)
            hk_sleep_ms(50);
    }
    return NULL;
}

Test(hostile, pipelined_flood_without_reading_keeps_memory_bounded)
{
    const int nconn = 20;
    const int nreq = size_pick(200, 1000);
    const int hold_ms = size_pick(3000, 6000);
    const char *env[] = {asan_env(), NULL};
    hk_server_start(&srv, env);

    /* ~1,000 webhooks of 1 KiB: each list response is over 1 MB. */
    enum { NSEED = 1000 };
    static int64_t ids[NSEED];
    int ok = hk_parallel_posts(&srv, 4, NSEED, flood_body, ids);
    cr_assert_eq(ok, NSEED, "seeding: %d of %d webhooks stored", ok, NSEED);
    struct hk_resp r;
    hk_get(&srv, "/api/webhooks?limit=1000", &r);
    cr_assert_eq(r.status, 200, "GET /api/webhooks?limit=1000: %ld", r.status);
    size_t resp_bytes = r.body_len;
    hk_resp_free(&r);
    hk_sleep_ms(200);
    long pre_kb = hk_proc_rss_kb(srv.pid);
    cr_assert(pre_kb > 0, "cannot read /proc/%d/status", (int)srv.pid);
    /* Over what hookd held before (which includes ASan's own overhead): a
     * bounded hookd needs a few MB for this; unbounded, the responses nobody
     * reads are 20 x 200 x 1.1 MB = 4.6 GB (23 GB at full size). */
    const long ceiling_kb = pre_kb + size_pick(150, 350) * 1024L;

    const char *one = "GET /api/webhooks?limit=1000 HTTP/1.1\r\nHost: flood\r\n\r\n";
    size_t one_len = strlen(one), req_len = one_len * (size_t)nreq;
    char *reqs = malloc(req_len);
    cr_assert(reqs);
    for (int i = 0; i < nreq; i++)
        memcpy(reqs + (size_t)i * one_len, one, one_len);
    int fds[20];
    size_t sent[20] = {0};
    bool dead[20] = {false};
    for (int i = 0; i < nconn; i++) {
        fds[i] = hk_tcp_connect(&srv);
        fcntl(fds[i], F_SETFL, fcntl(fds[i], F_GETFL) | O_NONBLOCK);
    }

    struct probe pr = {.s = &srv};
    pthread_t th;
    cr_assert_eq(pthread_create(&th, NULL, probe_main, &pr), 0);
    long max_kb = pre_kb;
    int64_t t0 = hk_now_ms(), over_at = -1;
    int ndead = 0;
    size_t total_sent = 0;
    while (hk_now_ms() - t0 < hold_ms) {
        for (int i = 0; i < nconn; i++) {
            while (!dead[i] && sent[i] < req_len) {
                ssize_t w = send(fds[i], reqs + sent[i], req_len - sent[i], MSG_NOSIGNAL | MSG_DONTWAIT);
                if (w > 0) {
                    sent[i] += (size_t)w;
                    total_sent += (size_t)w;
                } else if (w < 0 && errno == EINTR) {
                    continue;
                } else {
                    if (w < 0 && errno != EAGAIN && errno != EWOULDBLOCK) {
                        dead[i] = true;
                        ndead++;
                    }
                    break;
                }
            }
        }
        long kb = hk_proc_rss_kb(srv.pid);
        if (kb > max_kb)
            max_kb = kb;
        if (kb > ceiling_kb) {
            /* Stop the flood before it eats the machine. */
            over_at = hk_now_ms() - t0;
            hk_server_kill9(&srv);
            break;
        }
        hk_sleep_ms(20);
    }
    int64_t held = hk_now_ms() - t0;
    atomic_store(&pr.stop, true);
    pthread_join(th, NULL);
    REPORT("flood: %d conns x %d pipelined GETs (%zu-byte responses, %zu request bytes taken), "
           "RSS before %ld MB, max %ld MB (ceiling %ld MB)%s%" PRId64 " ms; %d conns reset; "
           "health probes %d/%d answered 200 within 2 s (worst %ld ms)",
           nconn, nreq, resp_bytes, total_sent, pre_kb / 1024, max_kb / 1024, ceiling_kb / 1024,
           over_at >= 0 ? ", ceiling passed after " : ", held ", over_at >= 0 ? over_at : held, ndead,
           pr.ok, pr.n, pr.worst_ms);
    cr_assert(over_at < 0,
              "hookd's RSS passed %ld MB %" PRId64 " ms into the flood (%ld MB before it): "
              "it keeps parsing requests whose responses nobody reads",
              ceiling_kb / 1024, over_at, pre_kb / 1024);
    cr_assert(pr.n >= 3 && pr.ok == pr.n,
              "health during the flood: %d of %d probes answered 200 within 2 s (worst %ld ms, "
              "last failure curl %d status %ld)",
              pr.ok, pr.n, pr.worst_ms, pr.last_rc, pr.last_status);

    for (int i = 0; i < nconn; i++)
        hk_tcp_close(fds[i]);
    free(reqs);
    /* Once the flooders are gone, what they cost is given back to the
     * system (freed buffers alone would stay in the heap). ASan's allocator
     * keeps its own quarantine and ignores malloc_trim: a looser bound. */
    const long back_kb = HK_ASAN ? 2 * pre_kb + 64 * 1024L : pre_kb + 16 * 1024L;
    int64_t t1 = hk_now_ms();
    long kb = hk_proc_rss_kb(srv.pid);
    while (kb > back_kb && hk_now_ms() - t1 < size_pick(5000, 10000)) {
        hk_sleep_ms(100);
        kb = hk_proc_rss_kb(srv.pid);
    }
    REPORT("flood: RSS %ld MB %" PRId64 " ms after the flooders closed (bound %ld MB)", kb / 1024,
           hk_now_ms() - t1, back_kb / 1024);
    cr_assert(kb <= back_kb, "RSS still %ld MB after the flooders closed (before: %ld MB)", kb / 1024,
              pre_kb / 1024);
    hk_finish(&srv);
}

/* ==== 2. descriptor exhaustion ==== */

/* Our own process holds hundreds of client sockets. */
static void raise_own_nofile(long need)
{
    struct rlimit rl;
    cr_assert_eq(getrlimit(RLIMIT_NOFILE, &rl), 0);
    if (rl.rlim_cur != rl.rlim_max) {
        rl.rlim_cur = rl.rlim_max;
        setrlimit(RLIMIT_NOFILE, &rl);
        getrlimit(RLIMIT_NOFILE, &rl);
    }
    if (rl.rlim_cur != RLIM_INFINITY && (long)rl.rlim_cur < need)
        cr_skip_test("open files limit %ld (hard) is below the %ld this test needs", (long)rl.rlim_cur, need);
}

static void need_prlimit(void)
{
    if (!have_program("prlimit"))
        cr_skip_test("prlimit (Debian package util-linux) is missing");
}

/* Open n connections that send nothing, 50 at a time so that both loops
 * see them arrive; fails the test if one cannot be opened. */
static void open_silent(int *fds, int n)
{
    for (int i = 0; i < n; i++) {
        fds[i] = hk_tcp_try_connect(srv.port);
        cr_assert(fds[i] >= 0, "client connection %d of %d: %s", i, n, strerror(-fds[i]));
        if (i % 50 == 49)
            hk_sleep_ms(10);
    }
}

/* Keep the pressure on, as a real crowd does: clients hookd closed (it may
 * shed connections it cannot serve) come back, at most `max` of them, so
 * connections keep arriving while descriptors are exhausted. Returns how
 * many came back. */
static int reconnect_closed(int *fds, int n, int max)
{
    int again = 0;
    for (int i = 0; i < n && again < max; i++) {
        struct pollfd p = {fds[i], POLLIN, 0};
        if (poll(&p, 1, 0) != 1)
            continue;
        char b[512];
        ssize_t r = recv(fds[i], b, sizeof b, MSG_DONTWAIT);
        if (r > 0 || (r < 0 && (errno == EAGAIN || errno == EINTR)))
            continue;
        hk_tcp_close(fds[i]);
        fds[i] = hk_tcp_try_connect(srv.port);
        again++;
        if (fds[i] < 0)
            break;
    }
    return again;
}

static bool log_mentions_fd_trouble(const char *log)
{
    for (const char *p = log; *p; p++)
        if (strncasecmp(p, "accept", 6) == 0 || strncasecmp(p, "descriptor", 10) == 0)
            return true;
    return false;
}

/* SIGTERM, then wait up to timeout_ms for the exit while clients that were
 * closed keep coming back (fds: n clients, may be NULL). Gives up early when
 * stderr grows by 64 MB meanwhile: a stopping server has no reason to, and a
 * loop spinning on accept writes 100+ MB/s to /dev/shm. Returns the wait
 * status, or -1 (hookd is then SIGKILLed). */
static int stop_under_pressure(struct hk_server *s, int timeout_ms, int *fds, int n, bool *log_exploded)
{
    *log_exploded = false;
    long long log0 = hk_server_stderr_size(s);
    kill(s->pid, SIGTERM);
    int64_t deadline = hk_now_ms() + timeout_ms, next = 0;
    int st = 0;
    while (hk_now_ms() < deadline) {
        if (hk_wait_pid(s->pid, 20, &st) == 0) {
            s->pid = 0;
            return st;
        }
        if (hk_server_stderr_size(s) - log0 > 64 * MB) {
            *log_exploded = true;
            break;
        }
        if (fds && hk_now_ms() >= next) {
            reconnect_closed(fds, n, 10);
            next = hk_now_ms() + 100;
        }
    }
    hk_server_kill9(s);
    return -1;
}

#define NOFILE_CAP "--nofile=256:256"

Test(hostile, fd_exhaustion_does_not_spin_and_recovers)
{
    store_independent();
    need_prlimit();
    const int nclients = 600;
    const int window_ms = size_pick(2000, 5000);
    raise_own_nofile(nclients + 64);
    const char *env[] = {"HOOKD_THREADS=2", "HOOKD_MAX_CONNECTIONS=10000", "HOOKD_DRAIN_TIMEOUT=1s", NULL};
    const char *wrap[] = {"prlimit", NOFILE_CAP, "--", NULL};
    hk_server_start_wrapped(&srv, env, wrap);
    long soft = 0, hard = 0;
    cr_assert_eq(hk_proc_nofile(srv.pid, &soft, &hard), 0);
    cr_assert(soft <= 256 && hard == 256, "prlimit did not apply: soft %ld hard %ld", soft, hard);

    static int fds[600];
    open_silent(fds, nclients);
    hk_sleep_ms(200);
    double cpu0 = hk_proc_cpu_s(srv.pid);
    long long log0 = hk_server_stderr_size(&srv);
    int64_t t0 = hk_now_ms();
    long long log_now = log0;
    /* CPU every 100 ms: a spin that starts late in the window shows in the
     * busiest 500 ms even when the average hides it. */
    double cpu_at[128];
    int ns = 0, churn = 0;
    cpu_at[ns++] = cpu0;
    while (hk_now_ms() - t0 < window_ms && ns < 128) {
        hk_sleep_ms(100);
        churn += reconnect_closed(fds, nclients, 10);
        cpu_at[ns++] = hk_proc_cpu_s(srv.pid);
        log_now = hk_server_stderr_size(&srv);
        /* Stop early when the log explodes: it lives in RAM (/dev/shm). */
        if (log_now > 32 * MB)
            break;
    }
    double secs = (double)(hk_now_ms() - t0) / 1000.0;
    double cpu = cpu_at[ns - 1] - cpu0;
    double pct = 100.0 * cpu / secs, peak = 0;
    for (int i = 5; i < ns; i++)
        if (100.0 * (cpu_at[i] - cpu_at[i - 5]) / 0.5 > peak)
            peak = 100.0 * (cpu_at[i] - cpu_at[i - 5]) / 0.5;
    long long log_total = hk_server_stderr_size(&srv);
    bool spin = pct > 30.0 || peak > 50.0 || log_total > 64 * 1024;
    if (spin)
        hk_server_kill9(&srv);
    char *log = NULL;
    bool mentions = false;
    if (log_total <= 32 * MB) {
        log = hk_server_stderr(&srv);
        mentions = log_mentions_fd_trouble(log);
    }
    REPORT("fd exhaustion: %d silent clients (%d reconnected) against a 256-descriptor hookd with 2 loops: "
           "CPU %.0f%% of a core over %.1f s (busiest 500 ms: %.0f%%), stderr %lld bytes (%.1f MB/s "
           "during the window), accept/descriptor line: %s",
           nclients, churn, pct, secs, peak, log_total, (double)(log_now - log0) / MB / secs,
           log ? (mentions ? "yes" : "no") : "log too big to read");
    cr_assert(pct <= 30.0 && peak <= 50.0, "hookd used %.0f%% of a core over %.1f s (%.0f%% in the busiest "
              "500 ms) with its descriptors exhausted (a loop spinning on accept); stderr grew to %lld bytes",
              pct, secs, peak, log_total);
    cr_assert(log_total <= 64 * 1024, "stderr grew to %lld bytes in %.1f s with descriptors exhausted",
              log_total, secs);
    cr_assert(mentions, "stderr does not say accept failed / descriptors ran out:\n%.2000s", log);
    free(log);

    /* Clients leave: hookd must take new connections again. */
    for (int i = 0; i < nclients - 100; i++)
        hk_tcp_close(fds[i]);
    int64_t t1 = hk_now_ms();
    int st = 0;
    while (hk_now_ms() - t1 < 5000 && st != 200)
        st = raw_status_once(srv.port, LIVE, 1000);
    REPORT("fd exhaustion: after %d clients closed, a new client got %d after %" PRId64 " ms",
           nclients - 100, st, hk_now_ms() - t1);
    cr_assert_eq(st, 200, "no new client served within 5 s after %d clients closed (last status %d)",
                 nclients - 100, st);

    int64_t t2 = hk_now_ms();
    bool exploded;
    int ws = stop_under_pressure(&srv, 1000 + 2000, NULL, 0, &exploded);
    REPORT("fd exhaustion: SIGTERM with 100 clients still open: %s after %" PRId64 " ms",
           ws == -1 ? "no exit" : "exit", hk_now_ms() - t2);
    cr_assert(ws != -1 && WIFEXITED(ws) && WEXITSTATUS(ws) == 0,
              "SIGTERM: hookd did not exit 0 within drain timeout + 2 s (status 0x%x)", ws);
    for (int i = nclients - 100; i < nclients; i++)
        hk_tcp_close(fds[i]);
}

Test(hostile, fd_exhaustion_sigterm_exits_within_drain_timeout)
{
    store_independent();
    need_prlimit();
    const int nclients = 600;
    raise_own_nofile(nclients + 64);
    const char *env[] = {"HOOKD_THREADS=2", "HOOKD_MAX_CONNECTIONS=10000", "HOOKD_DRAIN_TIMEOUT=1s", NULL};
    const char *wrap[] = {"prlimit", NOFILE_CAP, "--", NULL};
    hk_server_start_wrapped(&srv, env, wrap);
    static int fds[600];
    open_silent(fds, nclients);
    /* A second of clients coming and going (less if stderr explodes). */
    for (int i = 0; i < 10 && hk_server_stderr_size(&srv) < 32 * MB; i++) {
        hk_sleep_ms(100);
        reconnect_closed(fds, nclients, 50);
    }
    long long log0 = hk_server_stderr_size(&srv);
    int64_t t0 = hk_now_ms();
    bool exploded;
    int ws = stop_under_pressure(&srv, 1000 + 2000, fds, nclients, &exploded);
    int64_t took = hk_now_ms() - t0;
    long long log = hk_server_stderr_size(&srv);
    REPORT("fd exhaustion: SIGTERM with %d clients connected: %s after %" PRId64 " ms (stderr %lld bytes at "
           "SIGTERM, %lld after)", nclients, ws != -1 ? "exit" : exploded ? "no exit, stderr grew 64 MB, SIGKILLed"
           : "no exit, SIGKILLed", took, log0, log);
    for (int i = 0; i < nclients; i++)
        hk_tcp_close(fds[i]);
    cr_assert(ws != -1, "hookd did not act on SIGTERM within drain timeout (1 s) + 2 s with its "
              "descriptors exhausted%s", exploded ? " (gave up early: stderr grew by 64 MB after SIGTERM)" : "");
    cr_assert(WIFEXITED(ws) && WEXITSTATUS(ws) == 0, "SIGTERM: status 0x%x", ws);
}

Test(hostile, fd_limit_below_max_connections_is_reported)
{
    store_independent();
    need_prlimit();
    const char *env[] = {"HOOKD_MAX_CONNECTIONS=10000", NULL};
    const char *wrap[] = {"prlimit", NOFILE_CAP, "--", NULL};
    hk_server_start_wrapped(&srv, env, wrap);
    hk_assert_alive(&srv);
    char *log = hk_server_stderr(&srv);
    char both[8192];
    snprintf(both, sizeof both, "%s\n%s", srv.started_line, log);
    bool said = false;
    const char *words[] = {"max_connections", "maxconnections", "max-connections", "max connections",
                           "capped", "descriptor", "nofile", "open files"};
    for (char *p = both; *p && !said; p++)
        for (size_t i = 0; i < sizeof words / sizeof words[0]; i++)
            if (strncasecmp(p, words[i], strlen(words[i])) == 0)
                said = true;
    REPORT("fd limit 256 < HOOKD_MAX_CONNECTIONS=10000: served; %s", said ? "reported" : "not reported");
    cr_assert(said, "soft descriptor limit 256 is below HOOKD_MAX_CONNECTIONS=10000 and neither the "
              "ready line nor stderr says the connection limit was capped:\n%s", both);
    free(log);
    hk_finish(&srv);
}

Test(hostile, soft_fd_limit_is_raised_to_the_hard_limit)
{
    store_independent();
    need_prlimit();
    struct rlimit rl;
    cr_assert_eq(getrlimit(RLIMIT_NOFILE, &rl), 0);
    long hard = rl.rlim_max == RLIM_INFINITY || rl.rlim_max > 4096 ? 4096 : (long)rl.rlim_max;
    if (hard <= 300)
        cr_skip_test("hard open files limit %ld leaves no room above a soft 256", hard);
    char opt[64];
    snprintf(opt, sizeof opt, "--nofile=256:%ld", hard);
    const char *wrap[] = {"prlimit", opt, "--", NULL};
    hk_server_start_wrapped(&srv, NULL, wrap);
    long soft = 0, h = 0;
    cr_assert_eq(hk_proc_nofile(srv.pid, &soft, &h), 0);
    REPORT("fd limit 256:%ld at exec: hookd's soft limit after start %ld (hard %ld)", hard, soft, h);
    cr_assert_eq(soft, h, "hookd kept its soft open files limit at %ld below the hard %ld", soft, h);
    hk_finish(&srv);
}

/* ==== 3. the connection limit and idle keep-alive connections ==== */

Test(hostile, idle_keep_alive_connection_makes_room_for_a_new_client)
{
    store_independent();
    const int limit = 20;
    const int newcomers = size_pick(5, 200);
    const char *env[] = {"HOOKD_MAX_CONNECTIONS=20", NULL};
    hk_server_start(&srv, env);
    int fds[20];
    for (int i = 0; i < limit; i++) {
        fds[i] = hk_tcp_connect(&srv);
        cr_assert_eq(hk_tcp_sends(fds[i], LIVE), 0);
        struct hk_raw raw = {0};
        hk_tcp_read(fds[i], &raw, 1, 3000);
        cr_assert(raw.nfinal == 1 && raw.r[0].status == 200, "keep-alive client %d not served: %s", i, raw.buf);
        hk_raw_free(&raw);
    }
    hk_sleep_ms(100);
    /* Each newcomer stays open (and idle) too: every one needs an eviction. */
    int *extra = calloc((size_t)newcomers, sizeof *extra);
    int served = 0, first_fail = 0;
    for (int k = 0; k < newcomers; k++) {
        extra[k] = hk_tcp_connect(&srv);
        hk_tcp_sends(extra[k], LIVE);
        struct hk_raw raw = {0};
        hk_tcp_read(extra[k], &raw, 1, 3000);
        int st = raw.nfinal ? raw.r[0].status : 0;
        hk_raw_free(&raw);
        if (st == 200)
            served++;
        else if (!first_fail)
            first_fail = st ? st : -1;
        if (st != 200)
            break;
    }
    int closed = 0;
    for (int i = 0; i < limit; i++) {
        struct hk_raw raw = {0};
        if (hk_tcp_wait_closed(fds[i], &raw, i == 0 ? 1000 : 10))
            closed++;
        hk_raw_free(&raw);
    }
    REPORT("keep-alive at the limit: 20 idle connections, %d of %d newcomers served (first refusal: "
           "status %d); %d of the idle 20 closed", served, newcomers, first_fail, closed);
    cr_assert_eq(served, newcomers,
                 "with HOOKD_MAX_CONNECTIONS=20 held by idle keep-alive connections, newcomer %d got %d "
                 "instead of 200 (the longest-idle connection should make room)",
                 served + 1, first_fail);
    cr_assert(closed >= 1, "no idle keep-alive connection was closed to admit the newcomers");
    for (int i = 0; i < limit; i++)
        hk_tcp_close(fds[i]);
    for (int k = 0; k < newcomers; k++)
        hk_tcp_close(extra[k]);
    free(extra);
    /* Twenty connections closing at once are still counted until the
     * server has read their EOFs and closed them; a client that comes in
     * that instant may get the 503 of a server at its limit (seen once
     * under ASan). Let the closes land before the final check. */
    hk_sleep_ms(300);
    hk_finish(&srv);
}

/* ==== 4. CPU work and shutdown ==== */

#define BENCH_MAX_PATH "/api/system/benchmark?iterations=1000000"

struct bench_call {
    const struct hk_server *s;
    long timeout_ms;
    int rc;
    long status;
    bool retry_after, problem;
    int64_t ms;
    char body[160];
};

static void *bench_main(void *arg)
{
    struct bench_call *b = arg;
    struct hk_req req = {.path = BENCH_MAX_PATH, .timeout_ms = b->timeout_ms};
    struct hk_resp r;
    int64_t t = hk_now_ms();
    b->rc = hk_request(b->s, NULL, &req, &r);
    b->ms = hk_now_ms() - t;
    b->status = r.status;
    char v[64];
    b->retry_after = hk_header(&r, "Retry-After", v, sizeof v) != NULL;
    b->problem = r.head && problem_json(r.head, r.head_len);
    snprintf(b->body, sizeof b->body, "%s", r.body ? r.body : "");
    hk_resp_free(&r);
    return NULL;
}

static void describe_calls(const struct bench_call *b, int n, char *out, size_t outn)
{
    size_t k = 0;
    out[0] = 0;
    for (int i = 0; i < n && k < outn; i++)
        k += (size_t)snprintf(out + k, outn - k, "%s#%d: %s %ld in %" PRId64 " ms", i ? "; " : "", i,
                              b[i].rc ? curl_easy_strerror((CURLcode)b[i].rc) : "HTTP", b[i].status, b[i].ms);
}

Test(hostile, sigterm_with_queued_benchmarks_is_bounded_and_answers_everyone)
{
    store_independent();
    const char *env[] = {"HOOKD_DRAIN_TIMEOUT=2s", "HOOKD_THREADS=2", NULL};
    hk_server_start(&srv, env);
    enum { N = 6 };
    struct bench_call calls[N];
    pthread_t th[N];
    for (int i = 0; i < N; i++) {
        calls[i] = (struct bench_call){.s = &srv, .timeout_ms = 10000};
        cr_assert_eq(pthread_create(&th[i], NULL, bench_main, &calls[i]), 0);
    }
    hk_sleep_ms(300);
    int64_t t0 = hk_now_ms();
    int ws = hk_server_stop_within(&srv, 4500);
    int64_t took = hk_now_ms() - t0;
    for (int i = 0; i < N; i++)
        pthread_join(th[i], NULL);
    char desc[1024];
    describe_calls(calls, N, desc, sizeof desc);
    REPORT("benchmarks at SIGTERM: %d x iterations=1000000, drain 2 s: %s after %" PRId64 " ms; %s", N,
           ws == -1 ? "no exit (SIGKILLed)" : "exit", took, desc);
    cr_assert(ws != -1, "hookd did not exit within 4.5 s of SIGTERM (drain timeout 2 s) with "
              "benchmarks running: %s", desc);
    cr_assert(WIFEXITED(ws) && WEXITSTATUS(ws) == 0, "exit status 0x%x", ws);
    for (int i = 0; i < N; i++) {
        cr_assert(calls[i].rc == CURLE_OK, "client %d got no HTTP response (%s): %s", i,
                  curl_easy_strerror((CURLcode)calls[i].rc), desc);
        cr_assert(calls[i].status == 200 || calls[i].status == 503, "client %d: %ld %s", i, calls[i].status,
                  calls[i].body);
        if (calls[i].status == 503)
            cr_assert(calls[i].problem, "client %d: 503 is not problem+json: %s", i, calls[i].body);
    }
}

Test(hostile, benchmark_at_max_iterations_is_capped)
{
    store_independent();
    const char *env[] = {"HOOKD_THREADS=1", NULL};
    hk_server_start(&srv, env);
    /* About a second of work; the ceiling leaves room for a busy machine
     * (the uncapped run takes ~24 s). */
    struct bench_call b = {.s = &srv, .timeout_ms = 4000};
    bench_main(&b);
    REPORT("one benchmark at iterations=1000000: %s %ld after %" PRId64 " ms",
           b.rc ? curl_easy_strerror((CURLcode)b.rc) : "HTTP", b.status, b.ms);
    cr_assert(b.rc == CURLE_OK && b.status == 200,
              "GET " BENCH_MAX_PATH ": no 200 within 4 s (curl: %s, status %ld; its CPU work should be "
              "capped at about a second)", curl_easy_strerror((CURLcode)b.rc), b.status);
    hk_finish(&srv);
}

Test(hostile, concurrent_benchmarks_on_a_busy_loop_get_503)
{
    store_independent();
    const char *env[] = {"HOOKD_THREADS=1", NULL};
    hk_server_start(&srv, env);
    enum { N = 6 };
    struct bench_call calls[N];
    pthread_t th[N];
    calls[0] = (struct bench_call){.s = &srv, .timeout_ms = 6000};
    cr_assert_eq(pthread_create(&th[0], NULL, bench_main, &calls[0]), 0);
    hk_sleep_ms(200);
    for (int i = 1; i < N; i++) {
        calls[i] = (struct bench_call){.s = &srv, .timeout_ms = 6000};
        cr_assert_eq(pthread_create(&th[i], NULL, bench_main, &calls[i]), 0);
    }
    for (int i = 0; i < N; i++)
        pthread_join(th[i], NULL);
    char desc[1024];
    describe_calls(calls, N, desc, sizeof desc);
    int n200 = 0, n503 = 0;
    for (int i = 0; i < N; i++) {
        n200 += calls[i].rc == CURLE_OK && calls[i].status == 200;
        n503 += calls[i].rc == CURLE_OK && calls[i].status == 503;
    }
    REPORT("benchmarks on one loop: 1 then %d concurrent: %d x 200, %d x 503; %s", N - 1, n200, n503, desc);
    for (int i = 0; i < N; i++) {
        cr_assert(calls[i].rc == CURLE_OK, "client %d: no response within 6 s (%s): %s", i,
                  curl_easy_strerror((CURLcode)calls[i].rc), desc);
        cr_assert(calls[i].status == 200 || calls[i].status == 503, "client %d: %ld %s", i, calls[i].status,
                  calls[i].body);
        if (calls[i].status == 503)
            cr_assert(calls[i].retry_after && calls[i].problem,
                      "client %d: 503 without Retry-After or not problem+json: %s", i, calls[i].body);
    }
    cr_assert(n503 >= 1, "with a benchmark already running on the only loop, none of %d more got 503: %s",
              N - 1, desc);
    cr_assert(n200 >= 1, "no benchmark ran at all: %s", desc);
    hk_finish(&srv);
}

/* ==== 5. filters that are not UTF-8 ==== */

static const char *const bad_filters[] = {
    "/api/webhooks?source=%ff%fe",
    "/api/webhooks?source=a%00b",
    "/api/webhooks?eventType=%c0%af",
};
#define NBAD (sizeof bad_filters / sizeof bad_filters[0])

Test(hostile, bad_filter_encodings_are_400)
{
    hk_server_start(&srv, NULL);
    hk_create(&srv, "good", "e", "p");
    for (size_t i = 0; i < NBAD; i++) {
        hk_context("GET %s", bad_filters[i]);
        struct hk_resp r;
        hk_get(&srv, bad_filters[i], &r);
        REPORT("bad filter %s: %ld %.100s", bad_filters[i], r.status, r.body);
        json_decref(hk_assert_problem(&r, 400));
        hk_resp_free(&r);
    }
    hk_context("%s", "");
    struct hk_resp r;
    hk_get(&srv, "/api/webhooks?source=good", &r);
    json_t *a = hk_assert_json(&r, 200);
    cr_assert_eq(json_array_size(a), 1, "good filter after bad ones: %s", r.body);
    json_decref(a);
    hk_resp_free(&r);
    hk_finish(&srv);
}

struct mixed {
    const struct hk_server *s;
    atomic_bool stop;
    /* writers */
    int64_t *ids;
    int nids, cap, fails;
    long first_fail_status;
    int first_fail_rc;
    char first_fail_body[200];
    /* bad-filter readers */
    int nbad, bad_not_400;
    long bad_other_status;
};

static void *writer_main(void *arg)
{
    struct mixed *m = arg;
    CURL *h = hk_curl_new();
    const char *hs[] = {"Content-Type: application/json", NULL};
    for (int i = 0; !atomic_load(&m->stop); i++) {
        char body[256];
        snprintf(body, sizeof body, "{\"source\":\"writer\",\"eventType\":\"e%d\",\"payload\":\"p%d\"}", i, i);
        struct hk_req req = {.method = "POST", .path = "/api/webhooks", .body = body, .headers = hs,
                             .timeout_ms = 10000};
        struct hk_resp r;
        int rc = hk_request(m->s, h, &req, &r);
        json_t *o = rc == CURLE_OK && r.status == 201 ? json_loadb(r.body, r.body_len, 0, NULL) : NULL;
        json_t *id = json_object_get(o, "id");
        if (json_is_integer(id)) {
            if (m->nids == m->cap) {
                m->cap = m->cap ? 2 * m->cap : 1024;
                m->ids = realloc(m->ids, (size_t)m->cap * sizeof *m->ids);
                if (!m->ids)
                    abort();
            }
            m->ids[m->nids++] = json_integer_value(id);
        } else {
            if (!m->fails) {
                m->first_fail_rc = rc;
                m->first_fail_status = r.status;
                snprintf(m->first_fail_body, sizeof m->first_fail_body, "%s", r.body ? r.body : "");
            }
            m->fails++;
        }
        json_decref(o);
        hk_resp_free(&r);
    }
    curl_easy_cleanup(h);
    return NULL;
}

static void *bad_reader_main(void *arg)
{
    struct mixed *m = arg;
    CURL *h = hk_curl_new();
    for (int i = 0; !atomic_load(&m->stop); i++) {
        struct hk_req req = {.path = bad_filters[i % NBAD], .timeout_ms = 10000};
        struct hk_resp r;
        int rc = hk_request(m->s, h, &req, &r);
        m->nbad++;
        if (rc != CURLE_OK || r.status != 400) {
            m->bad_not_400++;
            m->bad_other_status = rc != CURLE_OK ? -rc : r.status;
        }
        hk_resp_free(&r);
        /* Hundreds a second each, not a CPU hog: the writers need a share. */
        hk_sleep_ms(1);
    }
    curl_easy_cleanup(h);
    return NULL;
}

struct readback {
    const struct hk_server *s;
    const struct mixed *m;
    int t, nthreads, checked, missing;
    int64_t first_missing;
    long first_status;
};

static void *readback_main(void *arg)
{
    struct readback *rb = arg;
    CURL *h = hk_curl_new();
    int k = 0;
    for (int w = 0; w < 4; w++)
        for (int i = 0; i < rb->m[w].nids; i++, k++) {
            if (k % rb->nthreads != rb->t)
                continue;
            char path[64];
            snprintf(path, sizeof path, "/api/webhooks/%" PRId64, rb->m[w].ids[i]);
            struct hk_req req = {.path = path};
            struct hk_resp r;
            int rc = hk_request(rb->s, h, &req, &r);
            rb->checked++;
            if (rc != CURLE_OK || r.status != 200) {
                if (!rb->missing) {
                    rb->first_missing = rb->m[w].ids[i];
                    rb->first_status = rc != CURLE_OK ? -rc : r.status;
                }
                rb->missing++;
            }
            hk_resp_free(&r);
        }
    curl_easy_cleanup(h);
    return NULL;
}

Test(hostile, bad_filters_on_postgresql_do_not_fail_writers)
{
    if (!hk_store_is_pg())
        cr_skip_test("PostgreSQL only (integ-pg); bad_filter_encodings_are_400 covers SQLite");
    const int run_ms = size_pick(3000, 10000);
    hk_server_start(&srv, NULL);
    /* Writers in m[0..3], bad-filter readers in m[4..7]. */
    static struct mixed m[8];
    pthread_t th[8];
    for (int i = 0; i < 8; i++) {
        memset(&m[i], 0, sizeof m[i]);
        m[i].s = &srv;
        cr_assert_eq(pthread_create(&th[i], NULL, i < 4 ? writer_main : bad_reader_main, &m[i]), 0);
    }
    hk_sleep_ms(run_ms);
    for (int i = 0; i < 8; i++)
        atomic_store(&m[i].stop, true);
    for (int i = 0; i < 8; i++)
        pthread_join(th[i], NULL);
    int written = 0, fails = 0, nbad = 0, bad_not_400 = 0;
    long bad_other = 0;
    const struct mixed *ff = NULL;
    for (int i = 0; i < 4; i++) {
        written += m[i].nids;
        fails += m[i].fails;
        if (m[i].fails && !ff)
            ff = &m[i];
        nbad += m[4 + i].nbad;
        bad_not_400 += m[4 + i].bad_not_400;
        if (m[4 + i].bad_not_400)
            bad_other = m[4 + i].bad_other_status;
    }
    struct readback rb[4];
    pthread_t rt[4];
    for (int t = 0; t < 4; t++) {
        rb[t] = (struct readback){.s = &srv, .m = m, .t = t, .nthreads = 4};
        cr_assert_eq(pthread_create(&rt[t], NULL, readback_main, &rb[t]), 0);
    }
    int checked = 0, missing = 0;
    const struct readback *fm = NULL;
    for (int t = 0; t < 4; t++) {
        pthread_join(rt[t], NULL);
        checked += rb[t].checked;
        missing += rb[t].missing;
        if (rb[t].missing && !fm)
            fm = &rb[t];
    }
    REPORT("bad filters on PostgreSQL for %d ms: %d bad-filter GETs (%d not 400, e.g. %ld); "
           "writers: %d x 201, %d failures (first: status %ld, curl %d, %.120s); read back %d, %d missing",
           run_ms, nbad, bad_not_400, bad_other, written, fails, ff ? ff->first_fail_status : 0L,
           ff ? ff->first_fail_rc : 0, ff ? ff->first_fail_body : "", checked, missing);
    static const struct mixed none;
    static const struct readback none_rb;
    if (!ff)
        ff = &none;
    if (!fm)
        fm = &none_rb;
    cr_assert_eq(fails, 0, "%d of %d POSTs failed while bad filters ran beside them (first: curl %d, "
                 "status %ld, %s)", fails, fails + written, ff->first_fail_rc, ff->first_fail_status,
                 ff->first_fail_body);
    cr_assert_eq(bad_not_400, 0, "%d of %d bad-filter GETs were not 400 (e.g. %ld)", bad_not_400, nbad,
                 bad_other);
    cr_assert_eq(missing, 0, "%d of %d acknowledged webhooks cannot be read back (first id %" PRId64
                 ": %ld)", missing, checked, fm->first_missing, fm->first_status);
    cr_assert(written > 0, "no POST succeeded at all");
    for (int i = 0; i < 4; i++)
        free(m[i].ids);
    hk_finish(&srv);
}

/* ==== 6. HTTP that proxies may read differently ==== */

/* Send `req` on a new connection; expect one response whose status is one of
 * `ok` (0-terminated), problem+json, and then the server closing. Returns
 * the status. */
static int expect_reject_and_close(const char *what, const char *req, size_t n, const int *ok)
{
    hk_context("%s", what);
    int fd = hk_tcp_connect(&srv);
    hk_tcp_send(fd, req, n ? n : strlen(req));
    struct hk_raw raw = {0};
    hk_tcp_read(fd, &raw, 1, 3000);
    const struct hk_raw_resp *rr = hk_raw_final(&raw, 0);
    int st = rr ? rr->status : 0;
    REPORT("%s: %d", what, st);
    cr_assert(rr, "%s: no response (closed %d, reset %d): %.300s", what, raw.closed, raw.reset, raw.buf);
    bool good = false;
    char want[64] = "";
    size_t k = 0;
    for (int i = 0; ok[i]; i++) {
        good |= st == ok[i];
        k += (size_t)snprintf(want + k, sizeof want - k, "%s%d", i ? " or " : "", ok[i]);
    }
    cr_assert(good, "%s: got %d, expected %s:\n%.600s", what, st, want, raw.buf);
    cr_assert(problem_json(rr->head, rr->head_len), "%s: %d is not problem+json:\n%.*s", what, st,
              (int)rr->head_len, rr->head);
    cr_assert(hk_tcp_wait_closed(fd, &raw, 2000), "%s: the connection stayed open after the %d", what, st);
    hk_tcp_close(fd);
    hk_raw_free(&raw);
    hk_context("%s", "");
    return st;
}

static const int ONLY_400[] = {400, 0};
static const int ONLY_505[] = {505, 0};
static const int BAD_VERSION[] = {400, 505, 0};

/* The server still serves ordinary requests after the hostile ones. */
static void still_serves(void)
{
    hk_create(&srv, "after", "hostile", "ok");
    hk_finish(&srv);
}

Test(hostile, duplicate_host_header_is_400)
{
    store_independent();
    hk_server_start(&srv, NULL);
    expect_reject_and_close("two different Host headers",
                            "GET /q/health/live HTTP/1.1\r\nHost: a.example\r\nHost: b.example\r\n\r\n", 0,
                            ONLY_400);
    expect_reject_and_close("the same Host header twice",
                            "GET /q/health/live HTTP/1.1\r\nHost: a.example\r\nHost: a.example\r\n\r\n", 0,
                            ONLY_400);
    still_serves();
}

Test(hostile, obs_fold_is_400)
{
    store_independent();
    hk_server_start(&srv, NULL);
    expect_reject_and_close("header continued with a space",
                            "GET /q/health/live HTTP/1.1\r\nHost: x\r\nX-Long: a\r\n b\r\n\r\n", 0, ONLY_400);
    expect_reject_and_close("header continued with a tab",
                            "GET /q/health/live HTTP/1.1\r\nHost: x\r\nX-Long: a\r\n\tb\r\n\r\n", 0, ONLY_400);
    const char *body = "{\"source\":\"fold\",\"eventType\":\"e\"}";
    char req[512];
    snprintf(req, sizeof req,
             "POST /api/webhooks HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
             "Content-Length: %zu\r\nX-Hub-Signature-256: sha256=00\r\n 11\r\n\r\n%s",
             strlen(body), body);
    expect_reject_and_close("folded header on a POST", req, 0, ONLY_400);
    still_serves();
}

Test(hostile, unsupported_http_versions_are_505)
{
    store_independent();
    hk_server_start(&srv, NULL);
    expect_reject_and_close("HTTP/1.2", "GET /q/health/live HTTP/1.2\r\nHost: x\r\n\r\n", 0, ONLY_505);
    expect_reject_and_close("HTTP/2.0", "GET /q/health/live HTTP/2.0\r\nHost: x\r\n\r\n", 0, ONLY_505);
    expect_reject_and_close("HTTP/0.9-style request line without a version", "GET /q/health/live\r\n\r\n", 0,
                            BAD_VERSION);
    expect_reject_and_close("broken version HTTP/1.x", "GET /q/health/live HTTP/1.x\r\nHost: x\r\n\r\n", 0,
                            BAD_VERSION);
    expect_reject_and_close("broken version HTTP/11", "GET /q/health/live HTTP/11\r\nHost: x\r\n\r\n", 0,
                            BAD_VERSION);
    still_serves();
}

Test(hostile, long_chunk_extension_is_400)
{
    store_independent();
    hk_server_start(&srv, NULL);
    const char *body = "{\"source\":\"ext\",\"eventType\":\"e\"}";
    char ext[1100];
    memset(ext, 'x', sizeof ext - 1);
    ext[sizeof ext - 1] = 0;
    memcpy(ext, "name=", 5);
    static char req[4096];
    snprintf(req, sizeof req,
             "POST /api/webhooks HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
             "Transfer-Encoding: chunked\r\n\r\n%zx;%s\r\n%s\r\n0\r\n\r\n",
             strlen(body), ext, body);
    expect_reject_and_close("a chunk with a 1.1 KB extension", req, 0, ONLY_400);
    still_serves();
}

/* Two signatures: a proxy or the application may check one and hookd the
 * other. Ambiguous, so 400, whether or not hookd checks signatures. With a
 * secret, `good` says which of the two is the body's true signature. */
static void post_two_signatures(const struct hk_server *s, const char *secret, bool good1, bool good2)
{
    const char *body = "{\"source\":\"sig\",\"eventType\":\"e\"}";
    char good[72], bad[72], req[1024], what[96];
    snprintf(bad, sizeof bad, "sha256=%064d", 0);
    if (secret)
        hk_hub_signature(secret, body, strlen(body), good);
    else
        snprintf(good, sizeof good, "%s", bad);
    snprintf(what, sizeof what, "two X-Hub-Signature-256 headers (%s%s)", secret ? "secret set, " : "no secret",
             secret ? (good1 && good2 ? "both valid" : good2 ? "second valid" : "first valid") : "");
    snprintf(req, sizeof req,
             "POST /api/webhooks HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
             "Content-Length: %zu\r\nX-Hub-Signature-256: %s\r\nX-Hub-Signature-256: %s\r\n\r\n%s",
             strlen(body), good1 ? good : bad, good2 ? good : bad, body);
    int fd = hk_tcp_connect(s);
    cr_assert_eq(hk_tcp_sends(fd, req), 0);
    struct hk_raw raw = {0};
    hk_tcp_read(fd, &raw, 1, 3000);
    const struct hk_raw_resp *rr = hk_raw_final(&raw, 0);
    REPORT("%s: %d", what, rr ? rr->status : 0);
    cr_assert(rr, "%s: no response: %.300s", what, raw.buf);
    cr_assert_eq(rr->status, 400, "%s: got %d:\n%.600s", what, rr->status, raw.buf);
    cr_assert(problem_json(rr->head, rr->head_len), "400 is not problem+json:\n%.*s", (int)rr->head_len, rr->head);
    hk_tcp_close(fd);
    hk_raw_free(&raw);
}

static void assert_nothing_stored(const struct hk_server *s)
{
    struct hk_resp r;
    hk_get(s, "/api/webhooks?source=sig", &r);
    json_t *a = hk_assert_json(&r, 200);
    cr_assert_eq(json_array_size(a), 0, "an ambiguous POST was stored: %s", r.body);
    json_decref(a);
    hk_resp_free(&r);
}

Test(hostile, duplicate_signature_header_is_400)
{
    store_independent();
    hk_server_start(&srv, NULL);
    post_two_signatures(&srv, NULL, false, false);
    assert_nothing_stored(&srv);
    still_serves();

    const char *env[] = {"HOOKD_WEBHOOK_SECRET=s3cret", NULL};
    hk_server_start(&srv2, env);
    post_two_signatures(&srv2, "s3cret", true, true);
    post_two_signatures(&srv2, "s3cret", false, true);
    post_two_signatures(&srv2, "s3cret", true, false);
    assert_nothing_stored(&srv2);
    hk_finish(&srv2);
}
