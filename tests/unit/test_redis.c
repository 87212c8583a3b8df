/* SPDX-License-Identifier: MIT
 * Unit tests for redis/redis.c. The URL table and the redaction need no
 * server; the rest runs against a real Redis: the one at
 * HOOKD_TEST_REDIS_URL (scripts/test.sh starts it; the tests skip without
 * it) for the round trips, and, for the tests that halt or pause a server,
 * one of their own from scripts/redis.sh ($HOOKD_REDIS_SH), so that the
 * tests running beside them are not disturbed. Each test ends by proving
 * its loop closes clean. */
#include <criterion/criterion.h>

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <hiredis/hiredis.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <uv.h>

#include "redis/redis.h"

#if defined(__SANITIZE_ADDRESS__)
#include <sanitizer/lsan_interface.h>
#define HAVE_LSAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#include <sanitizer/lsan_interface.h>
#define HAVE_LSAN 1
#endif
#endif

/* ---- harness ---------------------------------------------------------- */

static uv_loop_t loop;
static uv_timer_t guard;        /* wakes uv_run up so that run_until can look at the clock */
static bool loop_open;
static struct hk_redis *cli;
static char own_dir[256];       /* a server of this test's own, "" when none */
static int saved_stderr = -1;
static char log_path[64];
static char prefix[96];         /* keys of this test start with it */

static uint64_t now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

static void on_guard(uv_timer_t *t)
{
    (void)t;
}

static void stop_own(void)
{
    if (!own_dir[0])
        return;
    char cmd[600];
    snprintf(cmd, sizeof cmd, "\"%s\" stop '%s' >/dev/null 2>&1", getenv("HOOKD_REDIS_SH"), own_dir);
    if (system(cmd) != 0)
        fprintf(stderr, "test_redis: could not stop the server in %s\n", own_dir);
    own_dir[0] = 0;
}

static void restore_stderr(void)
{
    if (saved_stderr >= 0) {
        dup2(saved_stderr, 2);
        close(saved_stderr);
        saved_stderr = -1;
    }
    if (log_path[0]) {
        unlink(log_path);
        log_path[0] = 0;
    }
}

static void setup(void)
{
    cr_assert_eq(uv_loop_init(&loop), 0);
    uv_timer_init(&loop, &guard);
    uv_timer_start(&guard, on_guard, 5, 5);
    loop_open = true;
    snprintf(prefix, sizeof prefix, "hookd-test:%d:%" PRIu64 ":", (int)getpid(), now_ms());
}

/* Detach, close the guard, run the loop dry and close it: 0 when nothing
 * was left behind. */
static int close_loop(void)
{
    if (!loop_open)
        return 0;
    if (cli)
        hk_redis_detach(cli);
    cli = NULL;
    uv_close((uv_handle_t *)&guard, NULL);
    uv_run(&loop, UV_RUN_DEFAULT);
    loop_open = false;
    return uv_loop_close(&loop);
}

static void teardown(void)
{
    close_loop();
    restore_stderr();
    stop_own();
}

TestSuite(redis, .init = setup, .fini = teardown, .timeout = 60);

static void finish(void)
{
    cr_assert_eq(close_loop(), 0, "the loop still had handles after detach");
#ifdef HAVE_LSAN
    cr_assert_eq(__lsan_do_recoverable_leak_check(), 0, "LeakSanitizer found leaks (above)");
#endif
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

static void run_for(uint64_t ms)
{
    run_until(never, NULL, ms);
}

static bool is_up(void *arg)
{
    return hk_redis_up(arg);
}

static bool is_down(void *arg)
{
    return !hk_redis_up(arg);
}

/* What one command's callback saw. */
struct res {
    int calls;
    int status;
    char *val;
    size_t len;
    uint64_t at;
};

static bool in_submit;      /* a callback must never run from inside a submit */
static int early_calls;

static void on_res(void *data, int status, const char *val, size_t len)
{
    struct res *r = data;
    if (in_submit)
        early_calls++;
    r->calls++;
    r->status = status;
    free(r->val);
    r->val = NULL;
    r->len = len;
    if (val) {
        r->val = malloc(len + 1);
        memcpy(r->val, val, len);
        r->val[len] = 0;
    }
    r->at = now_ms();
}

static void res_free(struct res *r, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        free(r[i].val);
        r[i].val = NULL;
    }
}

static bool done1(void *arg)
{
    return ((struct res *)arg)->calls > 0;
}

struct many {
    struct res *r;
    size_t n;
};

static bool all_done(void *arg)
{
    struct many *m = arg;
    for (size_t i = 0; i < m->n; i++)
        if (m->r[i].calls == 0)
            return false;
    return true;
}

/* prefix + name, in buf (binary names: n bytes). */
static size_t key_of(char *buf, size_t cap, const char *name, size_t n)
{
    size_t p = strlen(prefix);
    cr_assert(p + n <= cap);
    memcpy(buf, prefix, p);
    memcpy(buf + p, name, n);
    return p + n;
}

static int do_get(const char *k, size_t kn, struct res *r)
{
    in_submit = true;
    int rc = hk_redis_get(cli, k, kn, on_res, r);
    in_submit = false;
    return rc;
}

static int do_set(const char *k, size_t kn, const char *v, size_t vn, uint64_t ttl, struct res *r)
{
    in_submit = true;
    int rc = hk_redis_setex(cli, k, kn, v, vn, ttl, on_res, r);
    in_submit = false;
    return rc;
}

static int do_del(const char *k, size_t kn, struct res *r)
{
    in_submit = true;
    int rc = hk_redis_del(cli, k, kn, on_res, r);
    in_submit = false;
    return rc;
}

/* One command run to its end: its status; *out gets the value. */
static int sync_get(const char *k, size_t kn, struct res *out)
{
    memset(out, 0, sizeof *out);
    cr_assert_eq(do_get(k, kn, out), 0);
    cr_assert(run_until(done1, out, 5000), "GET had no answer");
    cr_assert_eq(out->calls, 1);
    return out->status;
}

static int sync_set(const char *k, size_t kn, const char *v, size_t vn, uint64_t ttl)
{
    struct res r = {0};
    cr_assert_eq(do_set(k, kn, v, vn, ttl, &r), 0);
    cr_assert(run_until(done1, &r, 5000), "SET had no answer");
    cr_assert_eq(r.calls, 1);
    res_free(&r, 1);
    return r.status;
}

static int sync_del(const char *k, size_t kn)
{
    struct res r = {0};
    cr_assert_eq(do_del(k, kn, &r), 0);
    cr_assert(run_until(done1, &r, 5000), "DEL had no answer");
    cr_assert_eq(r.calls, 1);
    res_free(&r, 1);
    return r.status;
}

static const char *shared_url(void)
{
    const char *u = getenv("HOOKD_TEST_REDIS_URL");
    if (!u || !*u)
        cr_skip_test("needs a Redis: HOOKD_TEST_REDIS_URL=redis://... (scripts/test.sh starts one; by hand: "
                     "d=$(scripts/redis.sh start); export HOOKD_TEST_REDIS_URL=$(scripts/redis.sh url $d))");
    return u;
}

static void parse_ok(const char *url, struct hk_redis_cfg *c)
{
    char err[256];
    cr_assert_eq(hk_redis_parse_url(url, c, err, sizeof err), 0, "parse: %s", err);
}

/* Run the server script; its first output line into out (may be NULL). */
static void own_sh(const char *args, char *out, size_t n)
{
    const char *sh = getenv("HOOKD_REDIS_SH");
    char cmd[700];
    snprintf(cmd, sizeof cmd, "\"%s\" %s", sh, args);
    FILE *f = popen(cmd, "r");
    cr_assert(f, "popen %s", cmd);
    char line[512] = "";
    if (!fgets(line, sizeof line, f))
        line[0] = 0;
    int rc = pclose(f);
    cr_assert_eq(rc, 0, "%s failed", cmd);
    line[strcspn(line, "\n")] = 0;
    if (out)
        snprintf(out, n, "%s", line);
}

/* A server of this test's own; its URL (TCP, or the unix socket). */
static void own_start(char *url, size_t n, bool unix_socket)
{
    shared_url();   /* the same opt-in as every server test */
    if (!getenv("HOOKD_REDIS_SH"))
        cr_skip_test("needs HOOKD_REDIS_SH (tests/meson.build passes scripts/redis.sh)");
    own_sh("start", own_dir, sizeof own_dir);
    cr_assert(own_dir[0], "scripts/redis.sh start printed no directory");
    char args[400];
    snprintf(args, sizeof args, "url '%s'%s", own_dir, unix_socket ? " unix" : "");
    own_sh(args, url, n);
}

static void own_do(const char *verb)
{
    char args[400];
    snprintf(args, sizeof args, "%s '%s'", verb, own_dir);
    own_sh(args, NULL, 0);
}

/* A blocking connection beside the client under test, for set-up. */
static redisContext *side_conn(const struct hk_redis_cfg *c)
{
    redisContext *rc = c->unix_path ? redisConnectUnix(c->unix_path) : redisConnect(c->host, c->port);
    cr_assert(rc && !rc->err, "side connection failed");
    if (c->password) {
        redisReply *rep = c->user ? redisCommand(rc, "AUTH %s %s", c->user, c->password)
                                  : redisCommand(rc, "AUTH %s", c->password);
        cr_assert(rep && rep->type != REDIS_REPLY_ERROR);
        freeReplyObject(rep);
    }
    return rc;
}

static void side_cmd(redisContext *rc, const char *fmt, const char *arg)
{
    redisReply *rep = redisCommand(rc, fmt, arg);
    cr_assert(rep && rep->type != REDIS_REPLY_ERROR, "side command %s: %s", fmt,
              rep ? rep->str : rc->errstr);
    freeReplyObject(rep);
}

/* stderr into a file, to count log lines. */
static void capture_stderr(void)
{
    snprintf(log_path, sizeof log_path, "/tmp/test_redis_log_XXXXXX");
    int fd = mkstemp(log_path);
    cr_assert(fd >= 0);
    fflush(stderr);
    saved_stderr = dup(2);
    dup2(fd, 2);
    close(fd);
}

static char *captured(void)
{
    fflush(stderr);
    FILE *f = fopen(log_path, "r");
    cr_assert(f);
    static char buf[65536];
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    buf[n] = 0;
    fclose(f);
    return buf;
}

static int count(const char *hay, const char *needle)
{
    int n = 0;
    for (const char *p = hay; (p = strstr(p, needle)); p += strlen(needle))
        n++;
    return n;
}

/* ---- URLs ----------------------------------------------------------------- */

struct url_case {
    const char *url;
    const char *host;       /* NULL: expect unix_path */
    int port;
    const char *unix_path;
    const char *user;
    const char *password;
    int db;
};

static const struct url_case good_urls[] = {
    {"redis://127.0.0.1", "127.0.0.1", 6379, NULL, NULL, NULL, 0},
    {"redis://localhost:6380/2", "localhost", 6380, NULL, NULL, NULL, 2},
    {"REDIS://Cache.Example-1.internal:1/0", "Cache.Example-1.internal", 1, NULL, NULL, NULL, 0},
    {"redis://h:65535/", "h", 65535, NULL, NULL, NULL, 0},
    {"redis://:secret@h", "h", 6379, NULL, NULL, "secret", 0},
    {"redis://hookd:secret@h:7000/15", "h", 7000, NULL, "hookd", "secret", 15},
    /* '@', ':' and '/' in a password, as they are: the last '@' ends it */
    {"redis://hookd:p@ss:w@rd/x@10.0.0.1:6379/3", "10.0.0.1", 6379, NULL, "hookd", "p@ss:w@rd/x", 3},
    {"redis://u%3Ax:p%40%2F%25@h/1", "h", 6379, NULL, "u:x", "p@/%", 1},
    {"redis://[::1]:7001/4", "::1", 7001, NULL, NULL, NULL, 4},
    {"redis://[fe80::1]", "fe80::1", 6379, NULL, NULL, NULL, 0},
    {"redis://h/2147483647", "h", 6379, NULL, NULL, NULL, 2147483647},
    {"unix:///run/redis/redis.sock", NULL, 0, "/run/redis/redis.sock", NULL, NULL, 0},
    {"unix:///tmp/r.sock?db=5", NULL, 0, "/tmp/r.sock", NULL, NULL, 5},
    {"unix://hookd:se@cret:x@/tmp/r@x.sock?db=1", NULL, 0, "/tmp/r@x.sock", "hookd", "se@cret:x", 1},
    {"unix://:pw%2F@/tmp/r.sock", NULL, 0, "/tmp/r.sock", NULL, "pw/", 0},
};

#define SECRET "Sup3rS3cret"

/* Each bad URL and a word its message must hold. Every one that can hold a
 * password holds SECRET, which no message may repeat. */
static const struct {
    const char *url;
    const char *want;
} bad_urls[] = {
    {"", "empty"},
    {"http://u:" SECRET "@h/0", "redis:// or unix://"},
    {"rediss://u:" SECRET "@h:6380/0", "TLS"},
    {"redis://", "no host"},
    {"redis://u:" SECRET "@", "no host"},
    {"redis://:" SECRET "@:6379", "no host"},
    {"redis://u:" SECRET "@h:", "port"},
    {"redis://u:" SECRET "@h:0", "port"},
    {"redis://u:" SECRET "@h:65536", "port"},
    {"redis://u:" SECRET "@h:99999999999999999999", "port"},
    {"redis://u:" SECRET "@h:+1", "port"},
    {"redis://u:" SECRET "@h:12ab/0", "port"},
    {"redis://u:" SECRET "@h/abc", "database"},
    {"redis://u:" SECRET "@h/-1", "database"},
    {"redis://u:" SECRET "@h/ 1", "database"},
    {"redis://u:" SECRET "@h/2147483648", "database"},
    {"redis://u:" SECRET "@h/99999999999999999999", "database"},
    {"redis://u:" SECRET "@h/1/2", "database"},
    {"redis://u:" SECRET "@h?db=1", "parameters"},
    {"redis://hookd@h", "without a password"},
    {"redis://hookd:@h", "empty password"},
    {"redis://u:" SECRET "%4@h", "escape"},
    {"redis://u:" SECRET "%zz@h", "escape"},
    {"redis://u:" SECRET "%00@h", "escape"},
    {"redis://u%00:" SECRET "@h", "escape"},
    {"redis://u:" SECRET "@[::1", "]"},
    {"redis://u:" SECRET "@[zz::1]:1", "IPv6"},
    {"redis://u:" SECRET "@[::1]x", "IPv6"},
    {"redis://u:" SECRET "@ho st", "host"},
    {"redis://u:" SECRET "@h\r\n/0", "control"},
    {"redis://u:" SECRET "/x", "port"},   /* no '@': the password would be the port */
    {"unix://", "unix://[user:password@]/path"},
    {"unix://relative.sock", "unix://"},
    {"unix:///", "socket path"},
    {"unix://u:" SECRET "@/tmp/r.sock?db=x", "database"},
    {"unix://u:" SECRET "@/tmp/r.sock?password=" SECRET, "db=N"},
    {"unix://u:" SECRET "@/tmp/r.sock?db=99999999999999", "database"},
};

Test(redis, url_table)
{
    for (size_t i = 0; i < sizeof good_urls / sizeof good_urls[0]; i++) {
        const struct url_case *w = &good_urls[i];
        struct hk_redis_cfg c;
        char err[256] = "";
        int rc = hk_redis_parse_url(w->url, &c, err, sizeof err);
        cr_expect_eq(rc, 0, "%s: %s", w->url, err);
        if (rc < 0)
            continue;
        if (w->host) {
            cr_expect(c.host && strcmp(c.host, w->host) == 0, "%s: host %s", w->url, c.host);
            cr_expect_null(c.unix_path);
        } else {
            cr_expect_null(c.host, "%s", w->url);
            cr_expect(c.unix_path && strcmp(c.unix_path, w->unix_path) == 0, "%s: path %s", w->url, c.unix_path);
        }
        cr_expect_eq(c.port, w->port, "%s: port", w->url);
        cr_expect_eq(c.db, w->db, "%s: db", w->url);
        cr_expect(w->user ? c.user && strcmp(c.user, w->user) == 0 : !c.user, "%s: user %s", w->url, c.user);
        cr_expect(w->password ? c.password && strcmp(c.password, w->password) == 0 : !c.password,
                  "%s: password", w->url);
        cr_expect_eq(c.timeout_ms, 0);
        cr_expect_eq(c.max_inflight, 0u);
        hk_redis_cfg_free(&c);
        cr_expect_null(c.password);
    }
    for (size_t i = 0; i < sizeof bad_urls / sizeof bad_urls[0]; i++) {
        struct hk_redis_cfg c;
        char err[256] = "";
        cr_expect_eq(hk_redis_parse_url(bad_urls[i].url, &c, err, sizeof err), -1, "accepted: %s",
                     bad_urls[i].url);
        cr_expect(strncmp(err, "redis: ", 7) == 0, "%s: %s", bad_urls[i].url, err);
        cr_expect(strstr(err, bad_urls[i].want), "%s: %s (wanted \"%s\")", bad_urls[i].url, err, bad_urls[i].want);
        cr_expect(!strstr(err, SECRET), "the password leaked: %s", err);
        cr_expect(!strchr(err, '\n') && !strchr(err, '\r'), "not one line: %s", err);
        cr_expect_null(c.host);
        cr_expect_null(c.password);
    }
    /* The socket path must fit a sockaddr_un. */
    char url[300] = "unix:///";
    memset(url + 8, 'a', 200);
    struct hk_redis_cfg c;
    char err[256];
    cr_expect_eq(hk_redis_parse_url(url, &c, err, sizeof err), -1);
    /* NULL, and a tiny error buffer, are survived. */
    cr_expect_eq(hk_redis_parse_url(NULL, &c, err, sizeof err), -1);
    char tiny[4];
    cr_expect_eq(hk_redis_parse_url("x", &c, tiny, sizeof tiny), -1);
    cr_expect_eq(tiny[3], 0);
}

Test(redis, redact)
{
    static const struct {
        const char *url, *want;
    } cases[] = {
        {"redis://127.0.0.1", "redis://127.0.0.1:6379/0"},
        {"redis://:" SECRET "@h:1/2", "redis://:***@h:1/2"},
        {"redis://hookd:" SECRET "@h/3", "redis://hookd:***@h:6379/3"},
        {"redis://a%40b:" SECRET "@[::1]:7/0", "redis://a%40b:***@[::1]:7/0"},
        {"unix://hookd:" SECRET "@/tmp/r.sock?db=4", "unix://hookd:***@/tmp/r.sock?db=4"},
        {"unix:///tmp/r.sock", "unix:///tmp/r.sock?db=0"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        struct hk_redis_cfg c;
        parse_ok(cases[i].url, &c);
        char out[128];
        hk_redis_redact(&c, out, sizeof out);
        cr_expect_str_eq(out, cases[i].want);
        cr_expect(!strstr(out, SECRET));
        hk_redis_cfg_free(&c);
    }
    struct hk_redis_cfg c;
    parse_ok("redis://hookd:" SECRET "@h/3", &c);
    char small[12];
    hk_redis_redact(&c, small, sizeof small);
    cr_expect_str_eq(small, "redis://hoo");
    hk_redis_cfg_free(&c);
}

/* ---- the start-up check ------------------------------------------------------ */

Test(redis, check_right_and_wrong)
{
    struct hk_redis_cfg c;
    parse_ok(shared_url(), &c);
    char err[256] = "";
    cr_assert_eq(hk_redis_check(&c, err, sizeof err), 0, "%s", err);
    char *right = strdup(c.password);

    /* A wrong password: one line, WRONGPASS, neither password in it. */
    free(c.password);
    c.password = strdup("Wr0ng-" SECRET);
    cr_expect_eq(hk_redis_check(&c, err, sizeof err), -1);
    cr_expect(strncmp(err, "redis: WRONGPASS", 16) == 0, "%s", err);
    cr_expect(!strstr(err, SECRET) && !strstr(err, right), "a password leaked: %s", err);
    cr_expect(!strchr(err, '\n'));

    /* The right password for a user that does not exist. */
    free(c.password);
    c.password = strdup(right);
    char *user = c.user;
    c.user = strdup("nobody");
    cr_expect_eq(hk_redis_check(&c, err, sizeof err), -1);
    cr_expect(strstr(err, "WRONGPASS"), "%s", err);
    cr_expect(!strstr(err, right), "the password leaked: %s", err);
    free(c.user);

    /* The default user has the same password (requirepass). */
    c.user = NULL;
    cr_expect_eq(hk_redis_check(&c, err, sizeof err), 0, "%s", err);
    c.user = user;

    /* No password at all. */
    char *pw = c.password;
    c.password = NULL;
    cr_expect_eq(hk_redis_check(&c, err, sizeof err), -1);
    cr_expect(strstr(err, "NOAUTH"), "%s", err);
    c.password = pw;

    /* A database the server does not have. */
    c.db = 100000;
    cr_expect_eq(hk_redis_check(&c, err, sizeof err), -1);
    cr_expect(strstr(err, "SELECT") && strstr(err, "out of range"), "%s", err);
    c.db = 0;

    /* Nobody listening. */
    int port = c.port;
    c.port = 1;
    cr_expect_eq(hk_redis_check(&c, err, sizeof err), -1);
    cr_expect(strstr(err, "cannot connect to"), "%s", err);
    cr_expect(!strstr(err, right));
    c.port = port;
    free(right);
    hk_redis_cfg_free(&c);
}

/* ---- commands ---------------------------------------------------------------- */

static void attach_shared(uint64_t timeout_ms, uint32_t max_inflight, bool wait_up)
{
    struct hk_redis_cfg c;
    parse_ok(shared_url(), &c);
    c.timeout_ms = timeout_ms;
    c.max_inflight = max_inflight;
    cli = hk_redis_attach(&loop, &c);
    hk_redis_cfg_free(&c);   /* attach copied it */
    cr_assert_not_null(cli);
    if (wait_up)
        cr_assert(run_until(is_up, cli, 5000), "never connected");
}

Test(redis, round_trips_binary)
{
    /* Not waited for: the first commands go behind AUTH on the first connection. */
    attach_shared(0, 0, false);
    char k[512];
    size_t kn = key_of(k, sizeof k, "plain", 5);
    cr_expect_eq(sync_set(k, kn, "v1", 2, 60000), 0);
    cr_expect(hk_redis_up(cli));
    struct res r;
    cr_expect_eq(sync_get(k, kn, &r), 0);
    cr_expect_eq(r.len, 2);
    cr_expect_str_eq(r.val, "v1");
    res_free(&r, 1);
    cr_expect_eq(sync_del(k, kn), 0);
    cr_expect_eq(sync_get(k, kn, &r), HK_ENOTFOUND);
    cr_expect_null(r.val);
    cr_expect_eq(sync_del(k, kn), HK_ENOTFOUND);

    /* Values that look like the protocol, NULs, every byte, the empty
     * string, and a large one. */
    static const char proto[] = "*3\r\n$3\r\nDEL\r\n$1\r\nx\r\n";
    char all[256];
    for (int i = 0; i < 256; i++)
        all[i] = (char)i;
    size_t big_n = 1u << 20;
    char *big = malloc(big_n);
    for (size_t i = 0; i < big_n; i++)
        big[i] = (char)(i * 131 + 7);
    struct {
        const char *v;
        size_t n;
    } vals[] = {
        {proto, sizeof proto - 1}, {"a\r\nb\r\n", 6}, {"\0\0x\0", 4}, {all, 256}, {"", 0}, {big, big_n},
    };
    for (size_t i = 0; i < sizeof vals / sizeof vals[0]; i++) {
        char name[16];
        int nn = snprintf(name, sizeof name, "v%zu", i);
        kn = key_of(k, sizeof k, name, (size_t)nn);
        cr_expect_eq(sync_set(k, kn, vals[i].v, vals[i].n, 60000), 0);
        cr_expect_eq(sync_get(k, kn, &r), 0);
        cr_expect_eq(r.len, vals[i].n, "value %zu: %zu bytes back", i, r.len);
        cr_expect(r.len == vals[i].n && memcmp(r.val, vals[i].v, r.len) == 0, "value %zu differs", i);
        res_free(&r, 1);
        cr_expect_eq(sync_del(k, kn), 0);
    }
    free(big);

    /* Keys that look like commands must stay keys: the victim survives. */
    char victim[256];
    size_t vn = key_of(victim, sizeof victim, "victim", 6);
    cr_expect_eq(sync_set(victim, vn, "alive", 5, 60000), 0);
    char evil[600];
    int en = snprintf(evil, sizeof evil, "x\r\n*2\r\n$3\r\nDEL\r\n$%zu\r\n", vn);
    memcpy(evil + en, victim, vn);
    en += (int)vn;
    memcpy(evil + en, "\r\n", 2);
    en += 2;
    kn = key_of(k, sizeof k, evil, (size_t)en);
    cr_expect_eq(sync_set(k, kn, proto, sizeof proto - 1, 60000), 0);
    cr_expect_eq(sync_del(k, kn), 0);
    cr_expect_eq(sync_get(victim, vn, &r), 0);
    cr_expect_str_eq(r.val, "alive");
    res_free(&r, 1);
    /* "a\0b" and "a" are two keys. */
    kn = key_of(k, sizeof k, "a\0b", 3);
    cr_expect_eq(sync_set(k, kn, "nul", 3, 60000), 0);
    char k1[256];
    size_t k1n = key_of(k1, sizeof k1, "a", 1);
    cr_expect_eq(sync_get(k1, k1n, &r), HK_ENOTFOUND);
    cr_expect_eq(sync_get(k, kn, &r), 0);
    cr_expect_str_eq(r.val, "nul");
    res_free(&r, 1);
    sync_del(k, kn);
    sync_del(victim, vn);
    cr_expect_eq(early_calls, 0);
    finish();
}

Test(redis, pipelined_in_order)
{
    attach_shared(0, 0, true);
    enum { N = 500 };
    static struct res set[N], get[N];
    char k[256];
    for (int i = 0; i < N; i++) {
        char name[16], v[16];
        int nn = snprintf(name, sizeof name, "p%d", i);
        int vn = snprintf(v, sizeof v, "value-%d", i);
        size_t kn = key_of(k, sizeof k, name, (size_t)nn);
        cr_assert_eq(do_set(k, kn, v, (size_t)vn, 60000, &set[i]), 0);
        cr_assert_eq(do_get(k, kn, &get[i]), 0);
    }
    struct hk_redis_stats st;
    hk_redis_stats(cli, &st);
    cr_expect_eq(st.in_flight, 2 * N);
    cr_expect_eq(st.capacity, HK_REDIS_INFLIGHT_DEFAULT);
    struct many m = {get, N};
    cr_assert(run_until(all_done, &m, 10000));
    for (int i = 0; i < N; i++) {
        char v[16];
        snprintf(v, sizeof v, "value-%d", i);
        cr_expect_eq(set[i].calls, 1);
        cr_expect_eq(get[i].calls, 1);
        cr_expect_eq(get[i].status, 0);
        cr_expect_str_eq(get[i].val, v);
        cr_expect(set[i].at <= get[i].at);
    }
    hk_redis_stats(cli, &st);
    cr_expect_eq(st.in_flight, 0);
    cr_expect(st.connected);
    for (int i = 0; i < N; i++) {
        char name[16];
        int nn = snprintf(name, sizeof name, "p%d", i);
        size_t kn = key_of(k, sizeof k, name, (size_t)nn);
        memset(&set[i], 0, sizeof set[i]);
        cr_assert_eq(do_del(k, kn, &set[i]), 0);
    }
    m.r = set;
    cr_assert(run_until(all_done, &m, 10000));
    res_free(get, N);
    res_free(set, N);
    cr_expect_eq(early_calls, 0);
    finish();
}

Test(redis, bounded_in_flight)
{
    attach_shared(0, 8, true);
    static struct res r[9];
    char k[256];
    size_t kn = key_of(k, sizeof k, "busy", 4);
    for (int i = 0; i < 8; i++)
        cr_assert_eq(do_get(k, kn, &r[i]), 0);
    cr_expect_eq(do_get(k, kn, &r[8]), HK_EBUSY);
    cr_expect_eq(do_set(k, kn, "x", 1, 1000, &r[8]), HK_EBUSY);
    cr_expect_eq(do_del(k, kn, &r[8]), HK_EBUSY);
    struct many m = {r, 8};
    cr_assert(run_until(all_done, &m, 5000));
    cr_expect_eq(r[8].calls, 0, "a refused command's callback ran");
    for (int i = 0; i < 8; i++)
        cr_expect_eq(r[i].status, HK_ENOTFOUND);
    cr_expect_eq(do_get(k, kn, &r[8]), 0);
    cr_assert(run_until(done1, &r[8], 5000));
    cr_expect_eq(do_set(k, kn, "x", 1, 0, &r[0]), HK_EINVAL, "a TTL of 0 would be forever");
    cr_expect_eq(do_set(k, kn, "x", 1, UINT64_MAX, &r[0]), HK_EINVAL);
    res_free(r, 9);
    finish();
}

static bool after_ms(void *arg)
{
    return now_ms() >= *(uint64_t *)arg;
}

Test(redis, ttl_expires)
{
    attach_shared(0, 0, true);
    char k[256];
    size_t kn = key_of(k, sizeof k, "ttl", 3);
    cr_expect_eq(sync_set(k, kn, "short", 5, 100), 0);
    struct res r;
    cr_expect_eq(sync_get(k, kn, &r), 0);
    res_free(&r, 1);
    uint64_t until = now_ms() + 200;
    run_until(after_ms, &until, 1000);
    cr_expect_eq(sync_get(k, kn, &r), HK_ENOTFOUND, "still there after its TTL");
    finish();
}

Test(redis, error_reply)
{
    attach_shared(0, 0, true);
    struct hk_redis_cfg c;
    parse_ok(shared_url(), &c);
    redisContext *side = side_conn(&c);
    char k[256];
    size_t kn = key_of(k, sizeof k, "list", 4);
    k[kn] = 0;
    side_cmd(side, "RPUSH %s x", k);
    struct res r;
    cr_expect_eq(sync_get(k, kn, &r), HK_ESTORE);
    cr_expect(r.val && strstr(r.val, "WRONGTYPE"), "%s", r.val);
    res_free(&r, 1);
    /* The connection goes on. */
    cr_expect_eq(sync_del(k, kn), 0);
    cr_expect(hk_redis_up(cli));
    redisFree(side);
    hk_redis_cfg_free(&c);
    finish();
}

Test(redis, wrong_password_at_run_time)
{
    struct hk_redis_cfg c;
    parse_ok(shared_url(), &c);
    capture_stderr();
    char *right = strdup(c.password);
    free(c.password);
    c.password = strdup("Wr0ng-" SECRET);
    cli = hk_redis_attach(&loop, &c);
    hk_redis_cfg_free(&c);
    /* Accepted behind AUTH, then failed with the connection. */
    struct res r = {0};
    char k[256];
    size_t kn = key_of(k, sizeof k, "x", 1);
    cr_assert_eq(do_get(k, kn, &r), 0);
    cr_assert(run_until(done1, &r, 5000));
    cr_expect_eq(r.status, HK_EUNAVAIL);
    cr_expect(!hk_redis_up(cli));
    /* Down now: fail fast. */
    struct res r2 = {0};
    cr_expect_eq(do_get(k, kn, &r2), HK_EUNAVAIL);
    run_for(400);   /* a few reconnects */
    cr_expect_eq(r.calls, 1);
    cr_expect_eq(r2.calls, 0);
    char *log = captured();
    cr_expect_eq(count(log, "redis unavailable"), 1, "%s", log);
    cr_expect(strstr(log, "WRONGPASS"), "%s", log);
    cr_expect(!strstr(log, SECRET) && !strstr(log, right), "a password leaked: %s", log);
    free(right);
    res_free(&r, 1);
    finish();
}

/* ---- faults ----------------------------------------------------------------- */

Test(redis, halted_mid_flight_then_back)
{
    char url[512];
    own_start(url, sizeof url, false);
    struct hk_redis_cfg c;
    parse_ok(url, &c);
    capture_stderr();
    cli = hk_redis_attach(&loop, &c);
    cr_assert(run_until(is_up, cli, 5000));
    char k[256];
    size_t kn = key_of(k, sizeof k, "k", 1);
    cr_assert_eq(sync_set(k, kn, "before", 6, 60000), 0);

    /* Hold the commands in flight: the server reads them but answers none. */
    redisContext *side = side_conn(&c);
    side_cmd(side, "CLIENT PAUSE %s ALL", "10000");
    redisFree(side);
    enum { N = 64 };
    static struct res r[N];
    for (int i = 0; i < N; i++)
        cr_assert_eq(i % 2 ? do_get(k, kn, &r[i]) : do_set(k, kn, "during", 6, 60000, &r[i]), 0);
    run_for(100);
    for (int i = 0; i < N; i++)
        cr_assert_eq(r[i].calls, 0, "answered during the pause");
    own_do("halt");
    struct many m = {r, N};
    cr_assert(run_until(all_done, &m, 5000), "in-flight commands were not failed");
    run_for(300);   /* and never again */
    for (int i = 0; i < N; i++) {
        cr_expect_eq(r[i].calls, 1, "command %d: %d callbacks", i, r[i].calls);
        cr_expect_eq(r[i].status, HK_EUNAVAIL, "command %d: %d", i, r[i].status);
    }
    cr_expect(!hk_redis_up(cli));
    struct hk_redis_stats st;
    hk_redis_stats(cli, &st);
    cr_expect_eq(st.in_flight, 0);
    cr_expect(!st.connected);

    /* Down: every command fails at once, without a callback. */
    struct res x = {0};
    uint64_t t0 = now_ms();
    cr_expect_eq(do_get(k, kn, &x), HK_EUNAVAIL);
    cr_expect_eq(do_set(k, kn, "v", 1, 1000, &x), HK_EUNAVAIL);
    cr_expect_eq(do_del(k, kn, &x), HK_EUNAVAIL);
    cr_expect(now_ms() - t0 < 50);
    run_for(500);
    cr_expect_eq(x.calls, 0);

    /* Back on the same port: the same client reconnects by itself. */
    own_do("resume");
    cr_assert(run_until(is_up, cli, 10000), "did not reconnect");
    cr_expect_eq(sync_set(k, kn, "after", 5, 60000), 0);
    struct res g;
    cr_expect_eq(sync_get(k, kn, &g), 0);
    cr_expect_str_eq(g.val, "after");
    res_free(&g, 1);
    hk_redis_stats(cli, &st);
    cr_expect_eq(st.reconnects, 1);

    char *log = captured();
    cr_expect_eq(count(log, "redis unavailable"), 1, "%s", log);
    cr_expect_eq(count(log, "redis available again"), 1, "%s", log);
    cr_expect(!strstr(log, c.password), "the password leaked: %s", log);
    hk_redis_cfg_free(&c);
    res_free(r, N);
    cr_expect_eq(early_calls, 0);
    finish();
}

Test(redis, timeout_fails_the_connection_and_recovers)
{
    char url[512];
    own_start(url, sizeof url, false);
    struct hk_redis_cfg c;
    parse_ok(url, &c);
    c.timeout_ms = 300;
    capture_stderr();
    cli = hk_redis_attach(&loop, &c);
    cr_assert(run_until(is_up, cli, 5000));
    char k[256];
    size_t kn = key_of(k, sizeof k, "t", 1);

    redisContext *side = side_conn(&c);
    /* Long enough for the timeouts and the start-up check below to land
     * inside it on a loaded machine; the bounds below are as loose. */
    side_cmd(side, "CLIENT PAUSE %s ALL", "3000");
    redisFree(side);
    static struct res r[3];
    uint64_t t0 = now_ms();
    cr_assert_eq(do_get(k, kn, &r[0]), 0);
    cr_assert_eq(do_set(k, kn, "v", 1, 60000, &r[1]), 0);
    cr_assert_eq(do_del(k, kn, &r[2]), 0);
    struct many m = {r, 3};
    cr_assert(run_until(all_done, &m, 5000));
    for (int i = 0; i < 3; i++) {
        cr_expect_eq(r[i].calls, 1);
        cr_expect_eq(r[i].status, HK_ETIMEDOUT, "command %d: %d", i, r[i].status);
        cr_expect(r[i].at - t0 >= 250 && r[i].at - t0 < 2000, "answered after %" PRIu64 " ms", r[i].at - t0);
    }
    cr_expect(!hk_redis_up(cli));
    struct hk_redis_stats st;
    hk_redis_stats(cli, &st);
    cr_expect_eq(st.timeouts, 3);
    /* The start-up check gives up just as clearly. */
    char err[256];
    struct hk_redis_cfg c2 = c;
    c2.timeout_ms = 200;
    cr_expect_eq(hk_redis_check(&c2, err, sizeof err), -1);
    cr_expect(strstr(err, "no answer from") && strstr(err, "within 200 ms"), "%s", err);
    cr_expect(!strstr(err, c.password));
    cr_expect_eq(st.in_flight, 0);

    /* Once the pause is over, the client is back by itself. */
    cr_assert(run_until(is_up, cli, 10000), "did not recover");
    cr_expect_eq(sync_set(k, kn, "v", 1, 60000), 0);
    struct res g;
    cr_expect_eq(sync_get(k, kn, &g), 0);
    cr_expect_str_eq(g.val, "v");
    res_free(&g, 1);
    run_for(200);
    for (int i = 0; i < 3; i++)
        cr_expect_eq(r[i].calls, 1);
    char *log = captured();
    cr_expect_eq(count(log, "redis unavailable"), 1, "%s", log);
    cr_expect_eq(count(log, "redis available again"), 1, "%s", log);
    cr_expect(strstr(log, "no reply within 300 ms"), "%s", log);
    hk_redis_cfg_free(&c);
    res_free(r, 3);
    finish();
}

/* A server that stops answering while the connection is idle (a host
 * gone, a partition): the idle ping finds out, so readiness does not lie. */
Test(redis, idle_ping_notices_a_frozen_server, .timeout = 60)
{
    char url[512];
    own_start(url, sizeof url, false);
    struct hk_redis_cfg c;
    parse_ok(url, &c);
    c.timeout_ms = 300;
    cli = hk_redis_attach(&loop, &c);
    hk_redis_cfg_free(&c);
    cr_assert(run_until(is_up, cli, 5000));
    char pidfile[300], line[32] = "";
    snprintf(pidfile, sizeof pidfile, "%s/redis.pid", own_dir);
    FILE *f = fopen(pidfile, "r");
    cr_assert(f && fgets(line, sizeof line, f));
    fclose(f);
    pid_t pid = (pid_t)atoi(line);
    cr_assert(pid > 1);
    cr_assert_eq(kill(pid, SIGSTOP), 0);
    uint64_t t0 = now_ms();
    bool noticed = run_until(is_down, cli, HK_REDIS_PING_MS + 3000);
    uint64_t took = now_ms() - t0;
    kill(pid, SIGCONT);
    cr_assert(noticed, "still up %" PRIu64 " ms after the server froze", took);
    cr_expect(took >= 250, "down after %" PRIu64 " ms, before any ping could time out", took);
    cr_assert(run_until(is_up, cli, 10000), "did not come back");
    char k[256];
    size_t kn = key_of(k, sizeof k, "f", 1);
    cr_expect_eq(sync_set(k, kn, "thawed", 6, 60000), 0);
    finish();
}

Test(redis, ipv6_loopback)
{
    char url[512];
    own_start(url, sizeof url, false);
    struct hk_redis_cfg c;
    parse_ok(url, &c);
    free(c.host);
    c.host = strdup("::1");
    char err[256];
    if (hk_redis_check(&c, err, sizeof err) < 0) {
        hk_redis_cfg_free(&c);
        cr_skip_test("no IPv6 loopback here: %s", err);
    }
    cli = hk_redis_attach(&loop, &c);
    hk_redis_cfg_free(&c);
    char k[256];
    size_t kn = key_of(k, sizeof k, "6", 1);
    cr_expect_eq(sync_set(k, kn, "v6", 2, 60000), 0);
    struct res g;
    cr_expect_eq(sync_get(k, kn, &g), 0);
    cr_expect_str_eq(g.val, "v6");
    res_free(&g, 1);
    finish();
}

Test(redis, unix_socket)
{
    char url[512];
    own_start(url, sizeof url, true);
    struct hk_redis_cfg c;
    parse_ok(url, &c);
    cr_assert_not_null(c.unix_path);
    cr_assert_str_eq(c.user, "hookd");
    char err[256];
    cr_expect_eq(hk_redis_check(&c, err, sizeof err), 0, "%s", err);
    cli = hk_redis_attach(&loop, &c);
    char k[256];
    size_t kn = key_of(k, sizeof k, "u", 1);
    cr_expect_eq(sync_set(k, kn, "over a socket", 13, 60000), 0);
    struct res g;
    cr_expect_eq(sync_get(k, kn, &g), 0);
    cr_expect_str_eq(g.val, "over a socket");
    res_free(&g, 1);
    /* Halted: the socket is gone, the client fails fast and comes back. */
    own_do("halt");
    cr_assert(run_until(is_down, cli, 5000));
    cr_expect_eq(do_get(k, kn, &g), HK_EUNAVAIL);
    own_do("resume");
    cr_assert(run_until(is_up, cli, 10000));
    cr_expect_eq(sync_get(k, kn, &g), HK_ENOTFOUND);   /* nothing persisted */
    hk_redis_cfg_free(&c);
    finish();
}

Test(redis, host_name_is_resolved)
{
    struct hk_redis_cfg c;
    parse_ok(shared_url(), &c);
    free(c.host);
    c.host = strdup("localhost");
    char err[256];
    if (hk_redis_check(&c, err, sizeof err) < 0) {
        hk_redis_cfg_free(&c);
        cr_skip_test("localhost does not reach 127.0.0.1 here: %s", err);
    }
    cli = hk_redis_attach(&loop, &c);
    hk_redis_cfg_free(&c);
    /* Submitted while the name is being looked up. */
    char k[256];
    size_t kn = key_of(k, sizeof k, "n", 1);
    cr_expect_eq(sync_set(k, kn, "resolved", 8, 60000), 0);
    struct res g;
    cr_expect_eq(sync_get(k, kn, &g), 0);
    cr_expect_str_eq(g.val, "resolved");
    res_free(&g, 1);
    sync_del(k, kn);
    finish();
}

Test(redis, nobody_listening)
{
    struct hk_redis_cfg c;
    parse_ok(shared_url(), &c);
    c.port = 1;
    capture_stderr();
    cli = hk_redis_attach(&loop, &c);
    hk_redis_cfg_free(&c);
    struct res r = {0};
    /* Refused at once on loopback (down: fail fast), or accepted and
     * failed when the refusal arrives. */
    int rc = do_get("k", 1, &r);
    if (rc == 0)
        cr_assert(run_until(done1, &r, 5000));
    cr_expect(rc == HK_EUNAVAIL || r.status == HK_EUNAVAIL);
    cr_expect(!hk_redis_up(cli));
    run_for(400);
    cr_expect_eq(count(captured(), "redis unavailable"), 1);
    finish();
}

/* ---- detach ---------------------------------------------------------------- */

Test(redis, detach_with_commands_in_flight)
{
    attach_shared(0, 0, true);
    enum { N = 100 };
    static struct res r[N];
    char k[256];
    size_t kn = key_of(k, sizeof k, "d", 1);
    for (int i = 0; i < N; i++)
        cr_assert_eq(do_set(k, kn, "x", 1, 60000, &r[i]), 0);
    uv_run(&loop, UV_RUN_NOWAIT);   /* sent, perhaps partly answered */
    hk_redis_detach(cli);
    cli = NULL;
    for (int i = 0; i < N; i++) {
        cr_expect_eq(r[i].calls, 1, "command %d: %d callbacks", i, r[i].calls);
        cr_expect(r[i].status == 0 || r[i].status == HK_EUNAVAIL);
    }
    finish();
    for (int i = 0; i < N; i++)
        cr_expect_eq(r[i].calls, 1);
}

Test(redis, detach_while_connecting_and_resolving)
{
    /* Before the connection exists (name lookup in flight). */
    struct hk_redis_cfg c;
    parse_ok(shared_url(), &c);
    free(c.host);
    c.host = strdup("localhost");
    cli = hk_redis_attach(&loop, &c);
    struct res r[2] = {0};
    cr_assert_eq(do_set("k", 1, "v", 1, 1000, &r[0]), 0);
    hk_redis_detach(cli);
    cli = NULL;
    cr_expect_eq(r[0].calls, 1);
    cr_expect_eq(r[0].status, HK_EUNAVAIL);
    /* And with the connect itself in flight. */
    free(c.host);
    c.host = strdup("127.0.0.1");
    cli = hk_redis_attach(&loop, &c);
    hk_redis_cfg_free(&c);
    cr_assert_eq(do_get("k", 1, &r[1]), 0);
    hk_redis_detach(cli);
    cli = NULL;
    cr_expect_eq(r[1].calls, 1);
    cr_expect_eq(r[1].status, HK_EUNAVAIL);
    cr_expect_eq(early_calls, 0);
    finish();
}

/* A callback that detaches the client it was called by: the rest of the
 * commands get their callbacks from inside detach, once each. */
static struct res nested[10];

static void on_res_detach(void *data, int status, const char *val, size_t len)
{
    on_res(data, status, val, len);
    if (cli) {
        struct hk_redis *c = cli;
        cli = NULL;
        hk_redis_detach(c);
    }
}

Test(redis, detach_from_a_callback)
{
    attach_shared(0, 0, true);
    char k[256];
    size_t kn = key_of(k, sizeof k, "cb", 2);
    cr_assert_eq(hk_redis_get(cli, k, kn, on_res_detach, &nested[0]), 0);
    for (int i = 1; i < 10; i++)
        cr_assert_eq(do_get(k, kn, &nested[i]), 0);
    struct many m = {nested, 10};
    cr_assert(run_until(all_done, &m, 5000));
    cr_expect_eq(nested[0].status, HK_ENOTFOUND);
    for (int i = 1; i < 10; i++)
        cr_expect_eq(nested[i].status, HK_EUNAVAIL);
    for (int i = 0; i < 10; i++)
        cr_expect_eq(nested[i].calls, 1, "command %d: %d callbacks", i, nested[i].calls);
    run_for(100);
    for (int i = 0; i < 10; i++)
        cr_expect_eq(nested[i].calls, 1);
    finish();
}

/* ---- a subject's index of sessions ------------------------------------------- */

static int do_sadd(const char *set, size_t sn, const char *m, size_t mn, uint64_t ttl, struct res *r)
{
    in_submit = true;
    int rc = hk_redis_sadd_px(cli, set, sn, m, mn, ttl, on_res, r);
    in_submit = false;
    return rc;
}

static long long side_int(redisContext *rc, const char *fmt, const char *a, size_t an, const char *b, size_t bn)
{
    redisReply *rep = redisCommand(rc, fmt, a, an, b, bn);
    cr_assert(rep && rep->type == REDIS_REPLY_INTEGER, "side command %s: %s", fmt,
              rep ? (rep->str ? rep->str : "not an integer") : rc->errstr);
    long long v = rep->integer;
    freeReplyObject(rep);
    return v;
}

Test(redis, sadd_px)
{
    struct hk_redis_cfg c;
    parse_ok(shared_url(), &c);
    redisContext *side = side_conn(&c);
    hk_redis_cfg_free(&c);
    /* Not waited for: the pair goes behind AUTH on the first connection. */
    attach_shared(0, 0, false);
    char set[256], m1[256], m2[256];
    size_t sn = key_of(set, sizeof set, "subject", 7);
    size_t m1n = key_of(m1, sizeof m1, "s\0\r\n1", 5);   /* binary-safe */
    size_t m2n = key_of(m2, sizeof m2, "s2", 2);
    struct res r[2] = {{0}};
    cr_assert_eq(do_sadd(set, sn, m1, m1n, 60000, &r[0]), 0);
    cr_assert_eq(do_sadd(set, sn, m2, m2n, 120000, &r[1]), 0);
    struct many all = {r, 2};
    cr_assert(run_until(all_done, &all, 5000), "SADD/PEXPIRE had no answer");
    run_for(50);
    for (int i = 0; i < 2; i++) {
        cr_expect_eq(r[i].calls, 1, "%d callbacks", r[i].calls);
        cr_expect_eq(r[i].status, 0);
    }
    cr_expect_eq(side_int(side, "SISMEMBER %b %b", set, sn, m1, m1n), 1);
    cr_expect_eq(side_int(side, "SISMEMBER %b %b", set, sn, m2, m2n), 1);
    cr_expect_eq(side_int(side, "SCARD %b", set, sn, NULL, 0), 2);
    long long pttl = side_int(side, "PTTL %b", set, sn, NULL, 0);
    cr_expect(pttl > 60000 && pttl <= 120000, "PTTL %lld: the last PEXPIRE wins", pttl);

    /* The same member again: still one, TTL renewed. */
    res_free(r, 2);
    memset(r, 0, sizeof r);
    cr_assert_eq(do_sadd(set, sn, m2, m2n, 30000, &r[0]), 0);
    cr_assert(run_until(done1, &r[0], 5000));
    cr_expect_eq(r[0].status, 0);
    cr_expect_eq(side_int(side, "SCARD %b", set, sn, NULL, 0), 2);
    pttl = side_int(side, "PTTL %b", set, sn, NULL, 0);
    cr_expect(pttl > 0 && pttl <= 30000, "PTTL %lld", pttl);

    /* A key of another type: SADD's error, once, and the TTL untouched by
     * a failed SADD still set by PEXPIRE (not atomic, as documented). */
    char str[256];
    size_t stn = key_of(str, sizeof str, "string", 6);
    cr_expect_eq(sync_set(str, stn, "x", 1, 60000), 0);
    memset(r, 0, sizeof r);
    cr_assert_eq(do_sadd(str, stn, m1, m1n, 60000, &r[0]), 0);
    cr_assert(run_until(done1, &r[0], 5000));
    run_for(50);
    cr_expect_eq(r[0].calls, 1);
    cr_expect_eq(r[0].status, HK_ESTORE);
    cr_expect(r[0].val && strncmp(r[0].val, "WRONGTYPE", 9) == 0, "%s", r[0].val ? r[0].val : "(null)");
    res_free(r, 2);

    /* A bad TTL is refused at submit. */
    memset(r, 0, sizeof r);
    cr_expect_eq(hk_redis_sadd_px(cli, set, sn, m1, m1n, 0, on_res, &r[0]), HK_EINVAL);
    cr_expect_eq(hk_redis_sadd_px(cli, set, sn, m1, m1n, (UINT64_C(1) << 62) + 1, on_res, &r[0]), HK_EINVAL);
    cr_expect_eq(r[0].calls, 0);

    /* The pair takes one slot of max_inflight, and gives it back. */
    hk_redis_detach(cli);
    cli = NULL;
    attach_shared(0, 1, true);
    memset(r, 0, sizeof r);
    cr_assert_eq(do_sadd(set, sn, m1, m1n, 60000, &r[0]), 0);
    cr_expect_eq(do_sadd(set, sn, m2, m2n, 60000, &r[1]), HK_EBUSY);
    struct hk_redis_stats st;
    hk_redis_stats(cli, &st);
    cr_expect_eq(st.in_flight, 1);
    cr_assert(run_until(done1, &r[0], 5000));
    cr_expect_eq(r[0].status, 0);
    hk_redis_stats(cli, &st);
    cr_expect_eq(st.in_flight, 0);
    cr_assert_eq(do_sadd(set, sn, m2, m2n, 60000, &r[1]), 0);
    cr_assert(run_until(done1, &r[1], 5000));
    cr_expect_eq(r[1].status, 0);
    cr_expect_eq(early_calls, 0);

    side_int(side, "DEL %b %b", set, sn, str, stn);
    redisFree(side);
    finish();
}

Test(redis, drop_subject)
{
    struct hk_redis_cfg c;
    parse_ok(shared_url(), &c);
    redisContext *side = side_conn(&c);
    char set[256];
    size_t sn = key_of(set, sizeof set, "subject", 7);
    set[sn] = 0;
    /* More members than one DEL batch, and one whose session is already
     * gone (not counted). */
    enum { N = 600 };
    char k[256];
    for (int i = 0; i <= N; i++) {
        char name[32];
        int nn = snprintf(name, sizeof name, "session:%d", i);
        size_t kn = key_of(k, sizeof k, name, (size_t)nn);
        if (i < N)
            redisAppendCommand(side, "SET %b v PX 60000", k, kn);
        redisAppendCommand(side, "SADD %s %b", set, k, kn);
    }
    for (int i = 0; i < 2 * N + 1; i++) {
        void *rep = NULL;
        cr_assert_eq(redisGetReply(side, &rep), REDIS_OK);
        cr_assert(((redisReply *)rep)->type != REDIS_REPLY_ERROR);
        freeReplyObject(rep);
    }
    char other[256];
    size_t on = key_of(other, sizeof other, "other", 5);
    side_int(side, "SADD %b %b", other, on, "x", 1);   /* not this subject's */

    char err[256] = "";
    cr_expect_eq(hk_redis_drop_subject(&c, set, err, sizeof err), N, "%s", err);
    cr_expect_eq(side_int(side, "EXISTS %b", set, sn, NULL, 0), 0);
    for (int i = 0; i < N; i++) {
        char name[32];
        int nn = snprintf(name, sizeof name, "session:%d", i);
        size_t kn = key_of(k, sizeof k, name, (size_t)nn);
        cr_expect_eq(side_int(side, "EXISTS %b", k, kn, NULL, 0), 0, "session %d survived", i);
    }
    cr_expect_eq(side_int(side, "EXISTS %b", other, on, NULL, 0), 1);

    /* Again, and a set that never existed: nothing to do. */
    cr_expect_eq(hk_redis_drop_subject(&c, set, err, sizeof err), 0, "%s", err);
    char none[256];
    size_t nn = key_of(none, sizeof none, "nobody", 6);
    none[nn] = 0;
    cr_expect_eq(hk_redis_drop_subject(&c, none, err, sizeof err), 0, "%s", err);

    /* A key of another type is an error, and left alone. */
    other[on] = 0;
    side_int(side, "DEL %b", other, on, NULL, 0);
    side_cmd(side, "SET %s x", other);
    cr_expect_eq(hk_redis_drop_subject(&c, other, err, sizeof err), -1);
    cr_expect(strstr(err, "SMEMBERS") && strstr(err, "WRONGTYPE"), "%s", err);
    cr_expect_eq(side_int(side, "EXISTS %b", other, on, NULL, 0), 1);
    side_int(side, "DEL %b", other, on, NULL, 0);

    /* A wrong password: -1, one line, neither password in it, nothing done. */
    side_int(side, "SADD %b %b", set, sn, "x", 1);
    char *right = strdup(c.password);
    free(c.password);
    c.password = strdup("Wr0ng-" SECRET);
    err[0] = 0;
    cr_expect_eq(hk_redis_drop_subject(&c, set, err, sizeof err), -1);
    cr_expect(strncmp(err, "redis: WRONGPASS", 16) == 0, "%s", err);
    cr_expect(!strstr(err, SECRET) && !strstr(err, right), "a password leaked: %s", err);
    cr_expect(!strchr(err, '\n'));
    cr_expect_eq(side_int(side, "EXISTS %b", set, sn, NULL, 0), 1);
    side_int(side, "DEL %b", set, sn, NULL, 0);

    free(right);
    redisFree(side);
    hk_redis_cfg_free(&c);
    finish();
}
