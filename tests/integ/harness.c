/* SPDX-License-Identifier: MIT
 * Integration-test harness: the hookd child process, libcurl and raw-socket
 * clients, response checks, and the optional corpus capture that turns what
 * the tests send into fuzz seeds (HK_CORPUS_OUT=<dir>). */
#include "harness.h"

#include <criterion/criterion.h>
#include <libpq-fe.h>

#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <poll.h>
#include <pthread.h>
#include <regex.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

extern char **environ;

/* What the test is doing, appended to every failure from the harness. */
static _Thread_local char context[1024];

void hk_context(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(context, sizeof context, fmt, ap);
    va_end(ap);
}

static void fail(const char *file, int line, const char *fmt, ...)
    __attribute__((format(printf, 3, 4), noreturn));

static void fail(const char *file, int line, const char *fmt, ...)
{
    static char msg[16384];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    if (n < 0)
        n = 0;
    if ((size_t)n < sizeof msg && context[0])
        snprintf(msg + n, sizeof msg - (size_t)n, "\n  [while: %s]", context);
    cr_assert_fail("%s (%s:%d)", msg, file, line);
    abort(); /* not reached: the failed assertion leaves the test */
}

#define CHECK(cond, ...)                             \
    do {                                             \
        if (!(cond))                                 \
            fail(__FILE__, __LINE__, __VA_ARGS__);   \
    } while (0)
#define FAIL(...) fail(__FILE__, __LINE__, __VA_ARGS__)

static bool str_is(json_t *j, const char *s)
{
    return json_is_string(j) && strcmp(json_string_value(j), s) == 0;
}

#define START_TIMEOUT_MS 10000

/* ---- small utilities ---- */

struct dbuf {
    char *p;
    size_t len, cap;
};

static void dbuf_put(struct dbuf *b, const void *p, size_t n)
{
    if (b->len + n + 1 > b->cap) {
        size_t cap = b->cap ? b->cap : 256;
        while (cap < b->len + n + 1)
            cap *= 2;
        char *np = realloc(b->p, cap);
        if (!np)
            abort();
        b->p = np;
        b->cap = cap;
    }
    if (n)
        memcpy(b->p + b->len, p, n);
    b->len += n;
    b->p[b->len] = 0;
}

static char *xstrdup(const char *s)
{
    char *p = strdup(s);
    if (!p)
        abort();
    return p;
}

int64_t hk_now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

void hk_sleep_ms(int ms)
{
    struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};
    while (nanosleep(&ts, &ts) < 0 && errno == EINTR)
        ;
}

static pthread_once_t once = PTHREAD_ONCE_INIT;

static void init_once(void)
{
    signal(SIGPIPE, SIG_IGN);
    curl_global_init(CURL_GLOBAL_DEFAULT);
    /* Seed before worker threads create objects concurrently. */
    json_object_seed(0);
}

static void global_init(void)
{
    pthread_once(&once, init_once);
}

/* ---- corpus capture ---- */

static void write_file(const char *path, int flags, const char *p, size_t n)
{
    int fd = open(path, O_WRONLY | O_CREAT | flags, 0644);
    if (fd < 0)
        return;
    while (n) {
        ssize_t w = write(fd, p, n);
        if (w <= 0)
            break;
        p += w;
        n -= (size_t)w;
    }
    close(fd);
}

/* One file per curl request, named by a hash of its bytes. */
static void corpus_write(const char *prefix, const char *p, size_t n)
{
    const char *dir = getenv("HK_CORPUS_OUT");
    if (!dir || !*dir || n == 0)
        return;
    uint64_t h = 1469598103934665603ULL;
    for (size_t i = 0; i < n; i++)
        h = (h ^ (unsigned char)p[i]) * 1099511628211ULL;
    char path[512];
    snprintf(path, sizeof path, "%s/%s-%016llx", dir, prefix, (unsigned long long)h);
    write_file(path, O_EXCL, p, n);
}

/* Raw connections: everything sent so far on the connection, rewritten on
 * each send so that a test failing half-way still leaves its input behind. */
#define MAX_TRACKED_FD 1024
static struct {
    struct dbuf sent;
    unsigned serial;
} raw_rec[MAX_TRACKED_FD];
static unsigned raw_serial;

static void raw_record(int fd, const void *p, size_t n)
{
    const char *dir = getenv("HK_CORPUS_OUT");
    if (!dir || !*dir || fd < 0 || fd >= MAX_TRACKED_FD)
        return;
    dbuf_put(&raw_rec[fd].sent, p, n);
    char path[512];
    snprintf(path, sizeof path, "%s/raw-%d-%u", dir, (int)getpid(), raw_rec[fd].serial);
    write_file(path, O_TRUNC, raw_rec[fd].sent.p, raw_rec[fd].sent.len);
}

/* ---- the child process ---- */

static const char *hookd_bin(void)
{
    const char *b = getenv("HOOKD_BIN");
    CHECK(b && *b, "HOOKD_BIN is not set: point it at build/hookd");
    CHECK(access(b, X_OK) == 0, "HOOKD_BIN=%s is not executable: %s", b, strerror(errno));
    return b;
}

static const char *tmp_base(void)
{
    const char *t = getenv("HK_TEST_TMPDIR");
    if (t && *t)
        return t;
    /* tmpfs keeps fsync cheap, which matters for the bulk inserts. */
    if (access("/dev/shm", W_OK) == 0)
        return "/dev/shm";
    t = getenv("TMPDIR");
    return t && *t ? t : "/tmp";
}

static bool env_name_eq(const char *entry, const char *name_or_pair)
{
    size_t n = strcspn(name_or_pair, "=");
    return strncmp(entry, name_or_pair, n) == 0 && (entry[n] == '=' || entry[n] == 0);
}

/* The parent's environment minus anything hookd reads, then the defaults,
 * then the extras. Only the array is malloc'd; `db` is the caller's buffer
 * for the database setting. */
static char **build_env(const char *dir, const char *const *extra, char *db, size_t dbn)
{
    size_t n = 0;
    while (environ[n])
        n++;
    size_t nextra = 0;
    while (extra && extra[nextra])
        nextra++;
    char **env = calloc(n + nextra + 8, sizeof *env);
    if (!env)
        abort();
    size_t k = 0;
    for (size_t i = 0; i < n; i++) {
        const char *e = environ[i];
        if (strncmp(e, "HOOKD_", 6) == 0 || strncmp(e, "PORT=", 5) == 0 ||
            strncmp(e, "DATABASE_URL=", 13) == 0)
            continue;
        env[k++] = (char *)e;
    }
    snprintf(db, dbn, "HOOKD_SQLITE_PATH=%s/hookd.db", dir);
    env[k++] = "PORT=0";
    env[k++] = "HOOKD_HOST=127.0.0.1";
    env[k++] = "HOOKD_THREADS=2";
    /* The API's own tests speak to it as the reference's clients do; the
     * access-control tests say HOOKD_AUTH=on themselves. */
    env[k++] = "HOOKD_AUTH=off";
    env[k++] = db;
    for (size_t x = 0; x < nextra; x++) {
        const char *e = extra[x];
        size_t j = 0;
        while (j < k && !env_name_eq(env[j], e))
            j++;
        if (j < k) {
            memmove(&env[j], &env[j + 1], (k - j - 1) * sizeof *env);
            k--;
        }
        if (strchr(e, '='))
            env[k++] = (char *)e;
    }
    env[k] = NULL;
    return env;
}

pid_t hk_spawn(const char *dir, const char *const *extra_env, const char *const *args,
               int *out_fd, const char *stderr_path)
{
    global_init();
    const char *bin = hookd_bin();
    int pfd[2];
    CHECK(pipe2(pfd, O_CLOEXEC) == 0, "pipe: %s", strerror(errno));
    char db[512];
    char **env = build_env(dir, extra_env, db, sizeof db);
    const char *argv[HK_MAX_ARGS + 2];
    size_t a = 0;
    argv[a++] = bin;
    for (size_t i = 0; args && args[i] && a < HK_MAX_ARGS + 1; i++)
        argv[a++] = args[i];
    argv[a] = NULL;
    pid_t parent = getpid();
    pid_t pid = fork();
    CHECK(pid >= 0, "fork: %s", strerror(errno));
    if (pid == 0) {
        /* A crashed or timed-out test must not leave a server behind. */
        prctl(PR_SET_PDEATHSIG, SIGKILL);
        if (getppid() != parent)
            _exit(127);
        int err = open(stderr_path, O_WRONLY | O_CREAT | O_APPEND, 0644);
        int nul = open("/dev/null", O_RDONLY);
        if (err < 0 || nul < 0)
            _exit(126);
        dup2(nul, 0);
        dup2(pfd[1], 1);
        dup2(err, 2);
        closefrom(3);
        signal(SIGPIPE, SIG_DFL);
        execve(bin, (char **)argv, env);
        dprintf(2, "exec %s: %s\n", bin, strerror(errno));
        _exit(127);
    }
    close(pfd[1]);
    free(env);
    *out_fd = pfd[0];
    return pid;
}

pid_t hk_spawn_cmd(const char *dir, const char *const *extra_env, const char *const *argv, int listen_fd,
                   int *out_fd, const char *stderr_path)
{
    global_init();
    int pfd[2];
    CHECK(pipe2(pfd, O_CLOEXEC) == 0, "pipe: %s", strerror(errno));
    char db[512];
    char **env = build_env(dir, extra_env, db, sizeof db);
    size_t n = 0;
    while (env[n])
        n++;
    /* Room for LISTEN_PID and LISTEN_FDS, filled in by the child. */
    char **env2 = calloc(n + 3, sizeof *env2);
    CHECK(env2 != NULL, "out of memory");
    memcpy(env2, env, n * sizeof *env2);
    static char listen_pid[32], listen_fds[] = "LISTEN_FDS=1";
    if (listen_fd >= 0) {
        env2[n++] = listen_pid;
        env2[n++] = listen_fds;
    }
    pid_t parent = getpid();
    pid_t pid = fork();
    CHECK(pid >= 0, "fork: %s", strerror(errno));
    if (pid == 0) {
        prctl(PR_SET_PDEATHSIG, SIGKILL);
        if (getppid() != parent)
            _exit(127);
        int err = open(stderr_path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
        int nul = open("/dev/null", O_RDONLY | O_CLOEXEC);
        if (err < 0 || nul < 0)
            _exit(126);
        dup2(nul, 0);
        dup2(pfd[1], 1);
        dup2(err, 2);
        if (listen_fd >= 0) {
            /* The socket goes to fd 3, the protocol's first, replacing
             * whatever the descriptors above left there. */
            int l = fcntl(listen_fd, F_DUPFD, 10);
            if (l < 0 || dup2(l, 3) < 0)
                _exit(125);
            char digits[16];
            int k = 0;
            for (pid_t v = getpid(); v; v /= 10)
                digits[k++] = (char)('0' + v % 10);
            memcpy(listen_pid, "LISTEN_PID=", 11);
            for (int i = 0; i < k; i++)
                listen_pid[11 + i] = digits[k - 1 - i];
            listen_pid[11 + k] = 0;
        }
        closefrom(listen_fd >= 0 ? 4 : 3);
        signal(SIGPIPE, SIG_DFL);
        execvpe(argv[0], (char **)argv, env2);
        dprintf(2, "exec %s: %s\n", argv[0], strerror(errno));
        _exit(127);
    }
    close(pfd[1]);
    free(env);
    free(env2);
    *out_fd = pfd[0];
    return pid;
}

int hk_wait_pid(pid_t pid, int timeout_ms, int *status)
{
    int64_t deadline = hk_now_ms() + timeout_ms;
    for (;;) {
        pid_t r = waitpid(pid, status, WNOHANG);
        if (r == pid)
            return 0;
        if (r < 0 && errno != EINTR)
            return -1;
        if (hk_now_ms() >= deadline)
            return -1;
        hk_sleep_ms(5);
    }
}

char *hk_read_all_fd(int fd, int timeout_ms, size_t *len)
{
    struct dbuf b = {0};
    dbuf_put(&b, "", 0);
    int64_t deadline = hk_now_ms() + timeout_ms;
    for (;;) {
        int64_t left = deadline - hk_now_ms();
        if (left <= 0)
            break;
        struct pollfd p = {fd, POLLIN, 0};
        int rc = poll(&p, 1, (int)left);
        if (rc < 0 && errno == EINTR)
            continue;
        if (rc <= 0)
            break;
        char tmp[4096];
        ssize_t n = read(fd, tmp, sizeof tmp);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            break;
        dbuf_put(&b, tmp, (size_t)n);
    }
    if (len)
        *len = b.len;
    return b.p;
}

static char *read_file(const char *path)
{
    struct dbuf b = {0};
    dbuf_put(&b, "", 0);
    int fd = open(path, O_RDONLY);
    if (fd < 0)
        return b.p;
    char tmp[4096];
    ssize_t n;
    while ((n = read(fd, tmp, sizeof tmp)) > 0)
        dbuf_put(&b, tmp, (size_t)n);
    close(fd);
    return b.p;
}

char *hk_server_stderr(const struct hk_server *s)
{
    return read_file(s->stderr_path);
}

static void make_dir(struct hk_server *s)
{
    snprintf(s->dir, sizeof s->dir, "%s/hookd-integ-XXXXXX", tmp_base());
    CHECK(mkdtemp(s->dir) != NULL, "mkdtemp %s: %s", s->dir, strerror(errno));
    snprintf(s->db_path, sizeof s->db_path, "%s/hookd.db", s->dir);
    snprintf(s->stderr_path, sizeof s->stderr_path, "%s/stderr.log", s->dir);
}

/* Read the ready line and take the port from it. */
static void wait_ready(struct hk_server *s)
{
    char line[sizeof s->started_line];
    size_t n = 0;
    int64_t deadline = hk_now_ms() + START_TIMEOUT_MS;
    const char *why = NULL;
    for (;;) {
        int64_t left = deadline - hk_now_ms();
        if (left <= 0) {
            why = "no ready line within 10 s";
            break;
        }
        struct pollfd p = {s->out_fd, POLLIN, 0};
        int rc = poll(&p, 1, (int)left);
        if (rc < 0 && errno == EINTR)
            continue;
        if (rc == 0)
            continue;
        char c;
        ssize_t r = read(s->out_fd, &c, 1);
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0) {
            why = "stdout closed (hookd exited?) before the ready line";
            break;
        }
        if (c == '\n')
            break;
        if (n + 1 < sizeof line)
            line[n++] = c;
    }
    line[n] = 0;
    if (!why) {
        snprintf(s->started_line, sizeof s->started_line, "%s", line);
        const char *m = strstr(line, "http://127.0.0.1:");
        if (m)
            s->port = atoi(m + strlen("http://127.0.0.1:"));
        if (!m || s->port <= 0 || s->port > 65535)
            why = "ready line without a port";
    }
    if (why) {
        int st = 0;
        if (s->pid > 0) {
            kill(s->pid, SIGKILL);
            hk_wait_pid(s->pid, 2000, &st);
            s->pid = 0;
        }
        char *err = hk_server_stderr(s);
        FAIL("hookd did not start: %s (stdout so far: \"%s\", exit status 0x%x)\nstderr:\n%s",
                why, line, st, err);
        free(err);
    }
}

static void launch(struct hk_server *s)
{
    s->pid = hk_spawn(s->dir, (const char *const *)s->env, (const char *const *)s->args,
                      &s->out_fd, s->stderr_path);
    wait_ready(s);
}

/* ---- PostgreSQL ---- */

bool hk_store_is_pg(void)
{
    const char *v = getenv("HOOKD_TEST_STORE");
    return v && strcmp(v, "pg") == 0;
}

char *hk_pg_url_with_schema(const char *base, const char *schema)
{
    struct dbuf b = {0};
    dbuf_put(&b, base, strlen(base));
    if (strstr(base, "://")) {
        const char *opt = strchr(base, '?') ? "&options=-csearch_path%3D" : "?options=-csearch_path%3D";
        dbuf_put(&b, opt, strlen(opt));
        dbuf_put(&b, schema, strlen(schema));
    } else {
        /* key=value: a repeated keyword takes the last value. */
        dbuf_put(&b, " options='-csearch_path=", 24);
        dbuf_put(&b, schema, strlen(schema));
        dbuf_put(&b, "'", 1);
    }
    return b.p;
}

/* Run one statement on the cluster's maintenance database. Returns 0, or -1
 * with libpq's message in err. Never asserts (cleanup uses it). */
static int pg_admin(const char *sql, char *err, size_t errlen)
{
    const char *base = getenv("HOOKD_TEST_DATABASE_URL");
    if (!base || !*base) {
        snprintf(err, errlen, "HOOKD_TEST_DATABASE_URL is not set");
        return -1;
    }
    PGconn *c = PQconnectdb(base);
    int rc = 0;
    if (PQstatus(c) != CONNECTION_OK) {
        snprintf(err, errlen, "%s", PQerrorMessage(c));
        rc = -1;
    } else {
        PGresult *r = PQexec(c, sql);
        if (PQresultStatus(r) != PGRES_COMMAND_OK && PQresultStatus(r) != PGRES_TUPLES_OK) {
            snprintf(err, errlen, "%s", PQresultErrorMessage(r));
            rc = -1;
        }
        PQclear(r);
    }
    PQfinish(c);
    return rc;
}

static bool names_database_url(const char *const *env)
{
    for (size_t i = 0; env && env[i]; i++)
        if (env_name_eq(env[i], "DATABASE_URL"))
            return true;
    return false;
}

/* A fresh schema for this server (cheaper than a database), as
 * env[k] = "DATABASE_URL=...". */
static void pg_attach_db(struct hk_server *s, size_t k)
{
    const char *base = getenv("HOOKD_TEST_DATABASE_URL");
    if (!base || !*base)
        cr_skip_test("HOOKD_TEST_STORE=pg without HOOKD_TEST_DATABASE_URL: "
                     "scripts/test.sh starts a cluster (scripts/pg.sh) and sets it");
    CHECK(k + 1 < HK_MAX_ENV, "too many extra env entries");
    static unsigned serial;
    snprintf(s->pg_schema, sizeof s->pg_schema, "hk_%d_%u_%ld", (int)getpid(), serial++,
             (long)(hk_now_ms() % 100000));
    char sql[128], err[1024];
    snprintf(sql, sizeof sql, "CREATE SCHEMA %s", s->pg_schema);
    if (pg_admin(sql, err, sizeof err) < 0) {
        s->pg_schema[0] = 0;
        FAIL("cannot create the test schema: %s", err);
    }
    char *url = hk_pg_url_with_schema(base, s->pg_schema);
    struct dbuf e = {0};
    dbuf_put(&e, "DATABASE_URL=", 13);
    dbuf_put(&e, url, strlen(url));
    free(url);
    s->env[k] = e.p;
}

/* A fresh directory and the environment a start gives hookd. */
static void prepare(struct hk_server *s, const char *const *extra_env)
{
    memset(s, 0, sizeof *s);
    s->out_fd = -1;
    make_dir(s);
    size_t k = 0;
    for (size_t i = 0; extra_env && extra_env[i]; i++) {
        CHECK(i + 1 < HK_MAX_ENV, "too many extra env entries");
        s->env[i] = xstrdup(extra_env[i]);
        k = i + 1;
    }
    if (hk_store_is_pg() && !names_database_url(extra_env))
        pg_attach_db(s, k);
}

void hk_server_start_args(struct hk_server *s, const char *const *extra_env,
                          const char *const *args)
{
    prepare(s, extra_env);
    for (size_t i = 0; args && args[i]; i++) {
        CHECK(i + 1 < HK_MAX_ARGS, "too many extra args");
        s->args[i] = xstrdup(args[i]);
    }
    launch(s);
}

void hk_server_start(struct hk_server *s, const char *const *extra_env)
{
    hk_server_start_args(s, extra_env, NULL);
}

void hk_server_restart(struct hk_server *s)
{
    CHECK(s->pid == 0, "restart of a running server");
    if (s->out_fd >= 0)
        close(s->out_fd);
    s->out_fd = -1;
    s->port = 0;
    s->started_line[0] = 0;
    launch(s);
}

int hk_server_stop_within(struct hk_server *s, int timeout_ms)
{
    if (s->pid <= 0)
        return -1;
    int st = 0;
    kill(s->pid, SIGTERM);
    if (hk_wait_pid(s->pid, timeout_ms, &st) < 0) {
        kill(s->pid, SIGKILL);
        hk_wait_pid(s->pid, 5000, &st);
        s->pid = 0;
        return -1;
    }
    s->pid = 0;
    return st;
}

int hk_server_stop(struct hk_server *s)
{
    return hk_server_stop_within(s, 5000);
}

void hk_server_stop_clean(struct hk_server *s)
{
    int st = hk_server_stop(s);
    if (st == -1 || !WIFEXITED(st) || WEXITSTATUS(st) != 0) {
        char *err = hk_server_stderr(s);
        FAIL("hookd did not exit 0 on SIGTERM within 5 s (%s %d)\nstderr:\n%s",
                st == -1 ? "timeout" : WIFSIGNALED(st) ? "signal" : "exit code",
                st == -1 ? 0 : WIFSIGNALED(st) ? WTERMSIG(st) : WEXITSTATUS(st), err);
        free(err);
    }
}

void hk_server_kill9(struct hk_server *s)
{
    if (s->pid <= 0)
        return;
    int st;
    kill(s->pid, SIGKILL);
    hk_wait_pid(s->pid, 5000, &st);
    s->pid = 0;
}

static int rm_entry(const char *path, const struct stat *sb, int flag, struct FTW *ftw)
{
    (void)sb;
    (void)flag;
    (void)ftw;
    remove(path);
    return 0;
}

void hk_server_cleanup(struct hk_server *s)
{
    if (s->pid > 0)
        hk_server_kill9(s);
    if (s->out_fd > 0)
        close(s->out_fd);
    s->out_fd = -1;
    for (size_t i = 0; i < HK_MAX_ENV; i++) {
        free(s->env[i]);
        s->env[i] = NULL;
    }
    for (size_t i = 0; i < HK_MAX_ARGS; i++) {
        free(s->args[i]);
        s->args[i] = NULL;
    }
    if (s->dir[0] && !getenv("HK_KEEP_TMP"))
        nftw(s->dir, rm_entry, 8, FTW_DEPTH | FTW_PHYS);
    s->dir[0] = 0;
    if (s->pg_schema[0]) {
        char sql[128], err[1024];
        snprintf(sql, sizeof sql, "DROP SCHEMA IF EXISTS %s CASCADE", s->pg_schema);
        if (pg_admin(sql, err, sizeof err) < 0)
            fprintf(stderr, "harness: cannot drop schema %s: %s\n", s->pg_schema, err);
        s->pg_schema[0] = 0;
    }
}

int hk_run(const char *const *extra_env, const char *const *args, int timeout_ms,
           char **out, char **err)
{
    char dir[256];
    snprintf(dir, sizeof dir, "%s/hookd-run-XXXXXX", tmp_base());
    CHECK(mkdtemp(dir) != NULL, "mkdtemp: %s", strerror(errno));
    char errpath[300];
    snprintf(errpath, sizeof errpath, "%s/stderr.log", dir);
    int ofd;
    pid_t pid = hk_spawn(dir, extra_env, args, &ofd, errpath);
    int64_t t0 = hk_now_ms();
    *out = hk_read_all_fd(ofd, timeout_ms, NULL);
    close(ofd);
    int st = 0;
    int left = timeout_ms - (int)(hk_now_ms() - t0);
    if (hk_wait_pid(pid, left > 0 ? left : 0, &st) < 0) {
        kill(pid, SIGKILL);
        hk_wait_pid(pid, 5000, &st);
        st = -1;
    }
    *err = read_file(errpath);
    nftw(dir, rm_entry, 8, FTW_DEPTH | FTW_PHYS);
    return st;
}

int hk_server_run(const struct hk_server *s, const char *const *extra_env, const char *const *args,
                  int timeout_ms, char **out, char **err)
{
    /* Later entries win (build_env): the database first, then the server's
     * own extras (a DATABASE_URL among them), then the caller's. */
    const char *env[2 * HK_MAX_ENV + 2];
    size_t k = 0;
    char db[400];
    snprintf(db, sizeof db, "HOOKD_SQLITE_PATH=%s", s->db_path);
    env[k++] = db;
    for (size_t i = 0; i < HK_MAX_ENV && s->env[i]; i++)
        env[k++] = s->env[i];
    for (size_t i = 0; extra_env && extra_env[i]; i++) {
        CHECK(k + 1 < sizeof env / sizeof env[0], "too many extra env entries");
        env[k++] = extra_env[i];
    }
    env[k] = NULL;
    return hk_run(env, args, timeout_ms, out, err);
}

const char *hk_url(const struct hk_server *s, const char *path_fmt, ...)
{
    static _Thread_local char ring[8][4096];
    static _Thread_local unsigned next;
    char *b = ring[next++ % 8];
    int n = snprintf(b, sizeof ring[0], "http://127.0.0.1:%d", s->port);
    va_list ap;
    va_start(ap, path_fmt);
    vsnprintf(b + n, sizeof ring[0] - (size_t)n, path_fmt, ap);
    va_end(ap);
    return b;
}

/* Why a request may have failed: is the server process still there? Peeks
 * without reaping, so the server's owner still sees the exit. */
static void server_diag(const struct hk_server *s, char *out, size_t n)
{
    siginfo_t si = {0};
    if (s->pid <= 0) {
        snprintf(out, n, "server not running");
        return;
    }
    if (waitid(P_PID, (id_t)s->pid, &si, WEXITED | WNOHANG | WNOWAIT) < 0 || si.si_pid == 0) {
        snprintf(out, n, "server pid %d still running", (int)s->pid);
        return;
    }
    char *err = hk_server_stderr(s);
    size_t len = strlen(err);
    const char *tail = len > 2000 ? err + len - 2000 : err;
    if (si.si_code == CLD_EXITED)
        snprintf(out, n, "SERVER EXITED with status %d; stderr tail:\n%s", si.si_status, tail);
    else
        snprintf(out, n, "SERVER KILLED BY SIGNAL %d (%s)%s; stderr tail:\n%s", si.si_status,
                 strsignal(si.si_status), si.si_code == CLD_DUMPED ? ", core dumped" : "", tail);
    free(err);
}

/* ---- libcurl ---- */

struct xfer {
    struct hk_resp *r;
    struct dbuf heads, head, body, sent;
    const char *up;
    size_t up_len, up_pos;
};

static size_t on_header(char *p, size_t size, size_t n, void *ud)
{
    struct xfer *x = ud;
    size_t len = size * n;
    if (len >= 5 && strncmp(p, "HTTP/", 5) == 0) {
        x->head.len = 0;
        const char *sp = memchr(p, ' ', len);
        if (sp && sp + 4 <= p + len && strncmp(sp + 1, "100", 3) == 0)
            x->r->saw_100 = true;
    }
    dbuf_put(&x->heads, p, len);
    dbuf_put(&x->head, p, len);
    return len;
}

static size_t on_body(char *p, size_t size, size_t n, void *ud)
{
    struct xfer *x = ud;
    dbuf_put(&x->body, p, size * n);
    return size * n;
}

/* Small reads make curl send several chunks. */
static size_t on_read(char *p, size_t size, size_t n, void *ud)
{
    struct xfer *x = ud;
    size_t want = size * n;
    if (want > 16)
        want = 16;
    size_t left = x->up_len - x->up_pos;
    if (want > left)
        want = left;
    memcpy(p, x->up + x->up_pos, want);
    x->up_pos += want;
    return want;
}

static int on_debug(CURL *h, curl_infotype type, char *p, size_t n, void *ud)
{
    (void)h;
    struct xfer *x = ud;
    if (type == CURLINFO_HEADER_OUT || type == CURLINFO_DATA_OUT)
        dbuf_put(&x->sent, p, n);
    return 0;
}

CURL *hk_curl_new(void)
{
    global_init();
    CURL *h = curl_easy_init();
    if (!h)
        abort();
    return h;
}

static bool has_header(const char *const *hs, const char *name)
{
    size_t n = strlen(name);
    for (size_t i = 0; hs && hs[i]; i++)
        if (strncasecmp(hs[i], name, n) == 0 && hs[i][n] == ':')
            return true;
    return false;
}

int hk_request(const struct hk_server *s, CURL *h, const struct hk_req *req, struct hk_resp *r)
{
    global_init();
    memset(r, 0, sizeof *r);
    bool own = h == NULL;
    if (own)
        h = curl_easy_init();
    if (!h)
        abort();
    curl_easy_reset(h);
    struct xfer x = {.r = r};
    dbuf_put(&x.heads, "", 0);
    dbuf_put(&x.head, "", 0);
    dbuf_put(&x.body, "", 0);
    struct curl_slist *hl = NULL;
    for (size_t i = 0; req->headers && req->headers[i]; i++)
        hl = curl_slist_append(hl, req->headers[i]);
    if (!has_header(req->headers, "Content-Type"))
        hl = curl_slist_append(hl, "Content-Type:");
    if (!req->expect_100 && !has_header(req->headers, "Expect"))
        hl = curl_slist_append(hl, "Expect:");
    const char *method = req->method ? req->method : req->body ? "POST" : "GET";
    size_t blen = req->body ? (req->body_len ? req->body_len : strlen(req->body)) : 0;

    curl_easy_setopt(h, CURLOPT_URL, hk_url(s, "%s", req->path));
    curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(h, CURLOPT_TIMEOUT_MS, req->timeout_ms ? req->timeout_ms : 10000L);
    curl_easy_setopt(h, CURLOPT_CONNECTTIMEOUT_MS, 5000L);
    curl_easy_setopt(h, CURLOPT_HTTP_VERSION,
                     req->http10 ? CURL_HTTP_VERSION_1_0 : CURL_HTTP_VERSION_1_1);
    curl_easy_setopt(h, CURLOPT_HEADERFUNCTION, on_header);
    curl_easy_setopt(h, CURLOPT_HEADERDATA, &x);
    curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, on_body);
    curl_easy_setopt(h, CURLOPT_WRITEDATA, &x);
    curl_easy_setopt(h, CURLOPT_EXPECT_100_TIMEOUT_MS, 3000L);
    char iface[80];
    if (req->source) {
        snprintf(iface, sizeof iface, "host!%s", req->source);
        curl_easy_setopt(h, CURLOPT_INTERFACE, iface);
    }
    if (getenv("HK_CORPUS_OUT")) {
        curl_easy_setopt(h, CURLOPT_DEBUGFUNCTION, on_debug);
        curl_easy_setopt(h, CURLOPT_DEBUGDATA, &x);
        curl_easy_setopt(h, CURLOPT_VERBOSE, 1L);
    }
    if (strcmp(method, "HEAD") == 0) {
        curl_easy_setopt(h, CURLOPT_NOBODY, 1L);
        r->head_request = true;
    } else if (req->body && req->chunked) {
        x.up = req->body;
        x.up_len = blen;
        curl_easy_setopt(h, CURLOPT_POST, 1L);
        curl_easy_setopt(h, CURLOPT_READFUNCTION, on_read);
        curl_easy_setopt(h, CURLOPT_READDATA, &x);
        if (!has_header(req->headers, "Transfer-Encoding"))
            hl = curl_slist_append(hl, "Transfer-Encoding: chunked");
        if (strcmp(method, "POST") != 0)
            curl_easy_setopt(h, CURLOPT_CUSTOMREQUEST, method);
    } else if (req->body) {
        curl_easy_setopt(h, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)blen);
        curl_easy_setopt(h, CURLOPT_COPYPOSTFIELDS, req->body);
        if (strcmp(method, "POST") != 0)
            curl_easy_setopt(h, CURLOPT_CUSTOMREQUEST, method);
    } else if (strcmp(method, "GET") != 0) {
        curl_easy_setopt(h, CURLOPT_CUSTOMREQUEST, method);
    }
    curl_easy_setopt(h, CURLOPT_HTTPHEADER, hl);

    r->curl_rc = (int)curl_easy_perform(h);
    curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &r->status);
    curl_easy_getinfo(h, CURLINFO_NUM_CONNECTS, &r->num_connects);
    curl_slist_free_all(hl);
    if (own)
        curl_easy_cleanup(h);
    corpus_write("curl", x.sent.p, x.sent.len);
    free(x.sent.p);
    r->heads = x.heads.p;
    r->heads_len = x.heads.len;
    r->head = x.head.p;
    r->head_len = x.head.len;
    r->body = x.body.p;
    r->body_len = x.body.len;
    return r->curl_rc;
}

void hk_resp_free(struct hk_resp *r)
{
    free(r->heads);
    free(r->head);
    free(r->body);
    memset(r, 0, sizeof *r);
}

void hk_do(const struct hk_server *s, CURL *h, const struct hk_req *req, struct hk_resp *r)
{
    hk_request(s, h, req, r);
    if (r->curl_rc != CURLE_OK) {
        char diag[4096];
        server_diag(s, diag, sizeof diag);
        FAIL("%s %s: curl error %d (%s); %s", req->method ? req->method : req->body ? "POST" : "GET",
             req->path, r->curl_rc, curl_easy_strerror((CURLcode)r->curl_rc), diag);
    }
    hk_assert_common(r->head, r->head_len, r->status, r->body_len, r->head_request);
}

void hk_get(const struct hk_server *s, const char *path, struct hk_resp *r)
{
    struct hk_req req = {.path = path};
    hk_do(s, NULL, &req, r);
}

void hk_post_json(const struct hk_server *s, const char *path, const char *body, struct hk_resp *r)
{
    const char *hs[] = {"Content-Type: application/json", NULL};
    struct hk_req req = {.method = "POST", .path = path, .body = body, .headers = hs};
    hk_do(s, NULL, &req, r);
}

/* ---- headers ---- */

int hk_head_get(const char *head, size_t head_len, const char *name, char *out, size_t outn)
{
    size_t nlen = strlen(name);
    int count = 0;
    if (outn)
        out[0] = 0;
    const char *p = head, *end = head + head_len;
    /* Skip the status line. */
    const char *nl = memchr(p, '\n', (size_t)(end - p));
    p = nl ? nl + 1 : end;
    while (p < end) {
        nl = memchr(p, '\n', (size_t)(end - p));
        const char *le = nl ? nl : end;
        const char *colon = memchr(p, ':', (size_t)(le - p));
        if (colon && (size_t)(colon - p) == nlen && strncasecmp(p, name, nlen) == 0) {
            if (count == 0 && outn) {
                const char *v = colon + 1;
                const char *ve = le;
                while (v < ve && (*v == ' ' || *v == '\t'))
                    v++;
                while (ve > v && (ve[-1] == '\r' || ve[-1] == ' ' || ve[-1] == '\t'))
                    ve--;
                size_t vn = (size_t)(ve - v);
                if (vn >= outn)
                    vn = outn - 1;
                memcpy(out, v, vn);
                out[vn] = 0;
            }
            count++;
        }
        p = nl ? nl + 1 : end;
    }
    return count;
}

const char *hk_header(const struct hk_resp *r, const char *name, char *out, size_t outn)
{
    return hk_head_get(r->head, r->head_len, name, out, outn) ? out : NULL;
}

bool hk_list_has(const char *list, const char *token)
{
    size_t tn = strlen(token);
    const char *p = list;
    while (*p) {
        while (*p == ' ' || *p == ',' || *p == '\t')
            p++;
        const char *e = p;
        while (*e && *e != ',')
            e++;
        const char *te = e;
        while (te > p && (te[-1] == ' ' || te[-1] == '\t'))
            te--;
        if ((size_t)(te - p) == tn && strncasecmp(p, token, tn) == 0)
            return true;
        p = e;
    }
    return false;
}

const char *hk_jstr(json_t *o, const char *key)
{
    const char *s = json_string_value(json_object_get(o, key));
    return s ? s : "(not a string)";
}

bool hk_matches(const char *s, const char *re)
{
    regex_t rx;
    if (regcomp(&rx, re, REG_EXTENDED | REG_NOSUB) != 0)
        abort();
    bool m = regexec(&rx, s, 0, NULL, 0) == 0;
    regfree(&rx);
    return m;
}

double hk_parse_rfc3339(const char *s)
{
    if (!hk_matches(s, "^[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}(\\.[0-9]+)?(Z|\\+00:00)$"))
        return -1;
    struct tm tm = {0};
    int y, mo, d, h, mi, se;
    if (sscanf(s, "%4d-%2d-%2dT%2d:%2d:%2d", &y, &mo, &d, &h, &mi, &se) != 6)
        return -1;
    tm.tm_year = y - 1900;
    tm.tm_mon = mo - 1;
    tm.tm_mday = d;
    tm.tm_hour = h;
    tm.tm_min = mi;
    tm.tm_sec = se;
    double t = (double)timegm(&tm);
    const char *dot = strchr(s, '.');
    if (dot)
        t += strtod(dot, NULL);
    return t;
}

static double wall_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

#define IMF_FIXDATE_RE \
    "^(Mon|Tue|Wed|Thu|Fri|Sat|Sun), [0-9]{2} (Jan|Feb|Mar|Apr|May|Jun|Jul|Aug|Sep|Oct|Nov|Dec) " \
    "[0-9]{4} [0-9]{2}:[0-9]{2}:[0-9]{2} GMT$"

void hk_assert_common(const char *head, size_t head_len, long status,
                      size_t body_len, bool head_request)
{
    char v[256];
    CHECK(hk_head_get(head, head_len, "Date", v, sizeof v) == 1,
              "%ld response without exactly one Date header:\n%s", status, head);
    CHECK(hk_matches(v, IMF_FIXDATE_RE), "Date is not an IMF-fixdate: \"%s\"", v);
    char te[128] = "", cl[64] = "";
    int nte = hk_head_get(head, head_len, "Transfer-Encoding", te, sizeof te);
    int ncl = hk_head_get(head, head_len, "Content-Length", cl, sizeof cl);
    if (status == 204 || status == 304 || (status >= 100 && status < 200)) {
        CHECK(nte == 0, "%ld response with Transfer-Encoding:\n%s", status, head);
        CHECK(ncl == 0 || strcmp(cl, "0") == 0, "%ld response with Content-Length %s", status, cl);
        CHECK(body_len == 0, "%ld response with a %zu-byte body", status, body_len);
        return;
    }
    if (nte) {
        CHECK(strcasecmp(te, "chunked") == 0, "unexpected Transfer-Encoding \"%s\"", te);
        CHECK(ncl == 0, "both Transfer-Encoding and Content-Length in:\n%s", head);
        return;
    }
    CHECK(ncl == 1, "%ld response without exactly one Content-Length (or chunked):\n%s",
              status, head);
    CHECK(hk_matches(cl, "^[0-9]+$"), "bad Content-Length \"%s\"", cl);
    if (!head_request)
        CHECK(strtoull(cl, NULL, 10) == body_len,
                     "Content-Length %s but %zu body bytes received", cl, body_len);
}

void hk_assert_ctype(const struct hk_resp *r, const char *type)
{
    char v[256];
    CHECK(hk_header(r, "Content-Type", v, sizeof v), "no Content-Type in:\n%s", r->head);
    size_t n = strlen(type);
    CHECK(strncasecmp(v, type, n) == 0 && (v[n] == 0 || v[n] == ';' || v[n] == ' '),
              "Content-Type \"%s\", expected \"%s\"", v, type);
}

static json_t *parse_body(const struct hk_resp *r)
{
    json_error_t e;
    json_t *j = json_loadb(r->body, r->body_len, JSON_DECODE_ANY, &e);
    CHECK(j, "body is not JSON (%s at position %d): %.*s", e.text, e.position,
              (int)(r->body_len > 500 ? 500 : r->body_len), r->body);
    return j;
}

json_t *hk_assert_json(const struct hk_resp *r, long status)
{
    CHECK(r->status == status, "status %ld, expected %ld; body: %s", r->status, status, r->body);
    hk_assert_ctype(r, "application/json");
    return parse_body(r);
}

static json_t *problem(const struct hk_resp *r, long status, bool need_detail)
{
    CHECK(r->status == status, "status %ld, expected %ld; body: %s", r->status, status, r->body);
    hk_assert_ctype(r, "application/problem+json");
    json_t *j = parse_body(r);
    CHECK(json_is_object(j), "problem is not an object: %s", r->body);
    CHECK(json_is_string(json_object_get(j, "type")), "problem without string type: %s", r->body);
    CHECK(json_is_string(json_object_get(j, "title")), "problem without string title: %s", r->body);
    json_t *st = json_object_get(j, "status");
    CHECK(json_is_integer(st) && json_integer_value(st) == status,
              "problem status is not %ld: %s", status, r->body);
    json_t *d = json_object_get(j, "detail");
    if (need_detail)
        CHECK(json_is_string(d), "problem without string detail: %s", r->body);
    else
        CHECK(!d || json_is_string(d) || json_is_null(d), "problem detail not a string: %s", r->body);
    return j;
}

json_t *hk_assert_problem(const struct hk_resp *r, long status)
{
    return problem(r, status, true);
}

void hk_assert_violations(const struct hk_resp *r, int n, ...)
{
    json_t *j = problem(r, 400, false);
    CHECK(str_is(json_object_get(j, "title"), "Constraint Violation"),
          "title is not \"Constraint Violation\": %s", r->body);
    json_t *vs = json_object_get(j, "violations");
    CHECK(json_is_array(vs), "no violations array: %s", r->body);
    CHECK((int)json_array_size(vs) == n, "expected %d violations: %s", n, r->body);
    va_list ap;
    va_start(ap, n);
    for (int i = 0; i < n; i++) {
        const char *field = va_arg(ap, const char *);
        const char *msg = va_arg(ap, const char *);
        json_t *v = json_array_get(vs, (size_t)i);
        const char *f = json_string_value(json_object_get(v, "field"));
        const char *m = json_string_value(json_object_get(v, "message"));
        CHECK(f && strcmp(f, field) == 0, "violation %d: field is not \"%s\": %s", i, field, r->body);
        CHECK(m && strcmp(m, msg) == 0, "violation %d: message is not \"%s\": %s", i, msg, r->body);
    }
    va_end(ap);
    json_decref(j);
}

int64_t hk_assert_webhook(json_t *o, const char *source, const char *event_type,
                          const char *payload)
{
    char *dump = json_dumps(o, JSON_COMPACT);
    CHECK(json_is_object(o), "not an object: %s", dump);
    json_t *id = json_object_get(o, "id");
    CHECK(json_is_integer(id) && json_integer_value(id) > 0, "bad id: %s", dump);
    CHECK(str_is(json_object_get(o, "source"), source), "source is not \"%.80s\": %s", source, dump);
    CHECK(str_is(json_object_get(o, "eventType"), event_type), "eventType is not \"%.80s\": %s",
          event_type, dump);
    json_t *p = json_object_get(o, "payload");
    if (payload)
        CHECK(json_is_string(p) && strcmp(json_string_value(p), payload) == 0,
                  "payload is not \"%.80s\": %s", payload, dump);
    else
        CHECK(json_is_null(p), "payload is not null: %s", dump);
    const char *at = json_string_value(json_object_get(o, "receivedAt"));
    CHECK(at && hk_matches(at, "^[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}\\.[0-9]{6}Z$"),
              "receivedAt is not RFC 3339 UTC with 6 decimals: %s", dump);
    double t = hk_parse_rfc3339(at), now = wall_now();
    CHECK(t > now - 60 && t < now + 5, "receivedAt %s is not close to now (%.3f)", at, now);
    CHECK(str_is(json_object_get(o, "processingMode"), "event-loop"),
          "processingMode is not \"event-loop\": %s", dump);
    CHECK(json_object_size(o) == 6, "WebhookResponse has other members than the six: %s", dump);
    free(dump);
    return json_integer_value(id);
}

int64_t hk_create(const struct hk_server *s, const char *source, const char *event_type,
                  const char *payload)
{
    json_t *b = json_pack("{s:s, s:s, s:o}", "source", source, "eventType", event_type,
                          "payload", payload ? json_string(payload) : json_null());
    char *body = json_dumps(b, JSON_COMPACT);
    json_decref(b);
    struct hk_resp r;
    hk_post_json(s, "/api/webhooks", body, &r);
    free(body);
    json_t *j = hk_assert_json(&r, 201);
    int64_t id = hk_assert_webhook(j, source, event_type, payload);
    json_decref(j);
    hk_resp_free(&r);
    return id;
}

void hk_assert_alive(const struct hk_server *s)
{
    struct hk_resp r;
    struct hk_req req = {.path = "/q/health/live", .timeout_ms = 5000};
    hk_request(s, NULL, &req, &r);
    if (r.curl_rc != CURLE_OK || r.status != 200) {
        char diag[4096];
        server_diag(s, diag, sizeof diag);
        FAIL("server no longer serving: GET /q/health/live -> curl %d, status %ld; %s", r.curl_rc,
             r.status, diag);
    }
    hk_resp_free(&r);
}

/* ---- parallel POSTs ---- */

struct post_job {
    const struct hk_server *s;
    int nthreads, n, t;
    void (*body_fn)(int, char *, size_t);
    int64_t *ids;
    int ok;
};

static void *post_worker(void *arg)
{
    struct post_job *j = arg;
    CURL *h = hk_curl_new();
    const char *hs[] = {"Content-Type: application/json", NULL};
    char body[4096];
    for (int i = j->t; i < j->n; i += j->nthreads) {
        j->body_fn(i, body, sizeof body);
        struct hk_req req = {.method = "POST", .path = "/api/webhooks", .body = body, .headers = hs};
        struct hk_resp r;
        int rc = hk_request(j->s, h, &req, &r);
        if (rc != CURLE_OK) {
            j->ids[i] = -1000 - rc;
        } else if (r.status != 201) {
            j->ids[i] = -r.status;
        } else {
            json_t *o = json_loadb(r.body, r.body_len, 0, NULL);
            json_t *id = json_object_get(o, "id");
            j->ids[i] = json_is_integer(id) ? json_integer_value(id) : -2;
            if (j->ids[i] > 0)
                j->ok++;
            json_decref(o);
        }
        hk_resp_free(&r);
    }
    curl_easy_cleanup(h);
    return NULL;
}

int hk_parallel_posts(const struct hk_server *s, int nthreads, int n,
                      void (*body_fn)(int i, char *buf, size_t bufn), int64_t *ids)
{
    global_init();
    pthread_t th[16];
    struct post_job jobs[16];
    CHECK(nthreads >= 1 && nthreads <= 16, "nthreads %d", nthreads);
    for (int t = 0; t < nthreads; t++) {
        jobs[t] = (struct post_job){s, nthreads, n, t, body_fn, ids, 0};
        CHECK(pthread_create(&th[t], NULL, post_worker, &jobs[t]) == 0, "pthread_create");
    }
    int ok = 0;
    for (int t = 0; t < nthreads; t++) {
        pthread_join(th[t], NULL);
        ok += jobs[t].ok;
    }
    return ok;
}

void hk_hub_signature(const char *key, const void *data, size_t n, char out[72])
{
    unsigned char md[EVP_MAX_MD_SIZE];
    unsigned int mdlen = 0;
    HMAC(EVP_sha256(), key, (int)strlen(key), data, n, md, &mdlen);
    strcpy(out, "sha256=");
    for (unsigned i = 0; i < mdlen && i < 32; i++)
        sprintf(out + 7 + 2 * i, "%02x", md[i]);
}

/* ---- raw TCP ---- */

int hk_tcp_try_connect(int port)
{
    global_init();
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0)
        return -errno;
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (connect(fd, (struct sockaddr *)&a, sizeof a) < 0) {
        int e = errno;
        close(fd);
        return -e;
    }
    int one = 1;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    if (fd < MAX_TRACKED_FD) {
        raw_rec[fd].sent.len = 0;
        raw_rec[fd].serial = ++raw_serial;
    }
    return fd;
}

int hk_tcp_connect_from(const struct hk_server *s, const char *source)
{
    if (!source)
        return hk_tcp_connect(s);
    global_init();
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    CHECK(fd >= 0, "socket: %s", strerror(errno));
    struct sockaddr_in l = {.sin_family = AF_INET};
    CHECK(inet_pton(AF_INET, source, &l.sin_addr) == 1, "not an IPv4 address: %s", source);
    CHECK(bind(fd, (struct sockaddr *)&l, sizeof l) == 0, "bind %s: %s", source, strerror(errno));
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((uint16_t)s->port)};
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (connect(fd, (struct sockaddr *)&a, sizeof a) < 0) {
        int e = errno;
        close(fd);
        char diag[4096];
        server_diag(s, diag, sizeof diag);
        FAIL("connect from %s to 127.0.0.1:%d: %s; %s", source, s->port, strerror(e), diag);
    }
    int one = 1;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    if (fd < MAX_TRACKED_FD) {
        raw_rec[fd].sent.len = 0;
        raw_rec[fd].serial = ++raw_serial;
    }
    return fd;
}

int hk_tcp_connect(const struct hk_server *s)
{
    int fd = hk_tcp_try_connect(s->port);
    if (fd < 0) {
        char diag[4096];
        server_diag(s, diag, sizeof diag);
        FAIL("connect to 127.0.0.1:%d: %s; %s", s->port, strerror(-fd), diag);
    }
    return fd;
}

int hk_tcp_send(int fd, const void *p, size_t n)
{
    raw_record(fd, p, n);
    const char *c = p;
    while (n) {
        ssize_t w = send(fd, c, n, MSG_NOSIGNAL);
        if (w < 0 && errno == EINTR)
            continue;
        if (w < 0)
            return -errno;
        c += w;
        n -= (size_t)w;
    }
    return 0;
}

int hk_tcp_sends(int fd, const char *s)
{
    return hk_tcp_send(fd, s, strlen(s));
}

void hk_tcp_close(int fd)
{
    if (fd < 0)
        return;
    if (fd < MAX_TRACKED_FD)
        raw_rec[fd].sent.len = 0;
    close(fd);
}

static void raw_clear_parsed(struct hk_raw *raw)
{
    for (int i = 0; i < raw->n; i++)
        free(raw->r[i].body);
    memset(raw->r, 0, sizeof raw->r);
    raw->n = raw->nfinal = 0;
    raw->malformed = false;
}

static const char *find_crlf(const char *p, const char *end)
{
    for (; p + 1 < end; p++)
        if (p[0] == '\r' && p[1] == '\n')
            return p;
    return NULL;
}

/* Decode a chunked body at p; returns bytes consumed, 0 if incomplete, -1 if bad. */
static long parse_chunked(const char *p, const char *end, struct dbuf *out)
{
    const char *q = p;
    for (;;) {
        const char *le = find_crlf(q, end);
        if (!le)
            return 0;
        char *x;
        unsigned long sz = strtoul(q, &x, 16);
        if (x == q || (x != le && *x != ';'))
            return -1;
        q = le + 2;
        if (sz == 0) {
            /* Trailers until an empty line. */
            for (;;) {
                const char *te = find_crlf(q, end);
                if (!te)
                    return 0;
                bool empty = te == q;
                q = te + 2;
                if (empty)
                    return q - p;
            }
        }
        if ((size_t)(end - q) < sz + 2)
            return 0;
        dbuf_put(out, q, sz);
        if (q[sz] != '\r' || q[sz + 1] != '\n')
            return -1;
        q += sz + 2;
    }
}

static void raw_parse(struct hk_raw *raw)
{
    raw_clear_parsed(raw);
    const char *p = raw->buf, *end = raw->buf + raw->len;
    while (p < end && raw->n < HK_RAW_MAX) {
        const char *he = memmem(p, (size_t)(end - p), "\r\n\r\n", 4);
        if (!he)
            break;
        he += 4;
        if (end - p < 12 || strncmp(p, "HTTP/1.", 7) != 0 || p[8] != ' ' ||
            p[9] < '1' || p[9] > '5' || p[10] < '0' || p[10] > '9' || p[11] < '0' || p[11] > '9') {
            raw->malformed = true;
            break;
        }
        struct hk_raw_resp *rr = &raw->r[raw->n];
        rr->status = atoi(p + 9);
        rr->head = p;
        rr->head_len = (size_t)(he - p);
        rr->interim = rr->status < 200;
        struct dbuf body = {0};
        dbuf_put(&body, "", 0);
        const char *q = he;
        if (!rr->interim) {
            char te[64], cl[64];
            bool is_head = raw->nfinal < 32 && (raw->head_mask >> raw->nfinal) & 1;
            bool has_te = hk_head_get(p, rr->head_len, "Transfer-Encoding", te, sizeof te) > 0;
            bool has_cl = hk_head_get(p, rr->head_len, "Content-Length", cl, sizeof cl) > 0;
            if (is_head || rr->status == 204 || rr->status == 304) {
                /* no body */
            } else if (has_te && strcasecmp(te, "chunked") == 0) {
                rr->chunked = true;
                long used = parse_chunked(he, end, &body);
                if (used < 0) {
                    raw->malformed = true;
                    free(body.p);
                    break;
                }
                if (used == 0) {
                    free(body.p);
                    break;
                }
                q = he + used;
            } else if (has_cl) {
                size_t n = strtoull(cl, NULL, 10);
                if ((size_t)(end - he) < n) {
                    free(body.p);
                    break;
                }
                dbuf_put(&body, he, n);
                q = he + n;
            } else {
                /* Delimited by close. */
                if (!raw->closed) {
                    free(body.p);
                    break;
                }
                dbuf_put(&body, he, (size_t)(end - he));
                q = end;
            }
            raw->nfinal++;
        }
        rr->body = body.p;
        rr->body_len = body.len;
        raw->n++;
        p = q;
    }
}

static void raw_read(int fd, struct hk_raw *raw, int nfinal, const char *needle, int timeout_ms)
{
    int64_t deadline = hk_now_ms() + timeout_ms;
    raw->timed_out = false;
    if (!raw->buf) {
        raw->buf = malloc(1);
        raw->buf[0] = 0;
    }
    size_t cap = raw->len + 1;
    for (;;) {
        raw_parse(raw);
        if (nfinal > 0 && raw->nfinal >= nfinal)
            break;
        if (needle && memmem(raw->buf, raw->len, needle, strlen(needle)))
            break;
        if (raw->closed)
            break;
        int64_t left = deadline - hk_now_ms();
        if (left <= 0) {
            raw->timed_out = true;
            break;
        }
        struct pollfd pf = {fd, POLLIN, 0};
        int rc = poll(&pf, 1, (int)left);
        if (rc < 0 && errno == EINTR)
            continue;
        if (rc == 0)
            continue;
        if (raw->len + 65536 + 1 > cap) {
            cap = raw->len + 65536 + 1;
            raw->buf = realloc(raw->buf, cap);
            if (!raw->buf)
                abort();
        }
        ssize_t n = recv(fd, raw->buf + raw->len, 65536, 0);
        if (n < 0 && (errno == EINTR || errno == EAGAIN))
            continue;
        if (n < 0) {
            raw->reset = errno == ECONNRESET;
            raw->closed = true;
        } else if (n == 0) {
            raw->closed = true;
        } else {
            raw->len += (size_t)n;
        }
        raw->buf[raw->len] = 0;
    }
    raw_parse(raw);
}

void hk_tcp_read(int fd, struct hk_raw *raw, int nfinal, int timeout_ms)
{
    raw_read(fd, raw, nfinal, NULL, timeout_ms);
}

bool hk_tcp_read_until(int fd, struct hk_raw *raw, const char *needle, int timeout_ms)
{
    raw_read(fd, raw, 0, needle, timeout_ms);
    return raw->buf && memmem(raw->buf, raw->len, needle, strlen(needle)) != NULL;
}

bool hk_tcp_wait_closed(int fd, struct hk_raw *raw, int timeout_ms)
{
    raw_read(fd, raw, 0, NULL, timeout_ms);
    return raw->closed;
}

void hk_raw_free(struct hk_raw *raw)
{
    raw_clear_parsed(raw);
    free(raw->buf);
    memset(raw, 0, sizeof *raw);
}

const char *hk_raw_header(const struct hk_raw *raw, int i, const char *name, char *out, size_t outn)
{
    if (i < 0 || i >= raw->n)
        return NULL;
    return hk_head_get(raw->r[i].head, raw->r[i].head_len, name, out, outn) ? out : NULL;
}

const struct hk_raw_resp *hk_raw_final(const struct hk_raw *raw, int i)
{
    for (int k = 0; k < raw->n; k++) {
        if (raw->r[k].interim)
            continue;
        if (i-- == 0)
            return &raw->r[k];
    }
    return NULL;
}

void hk_finish(struct hk_server *s)
{
    hk_assert_alive(s);
    hk_server_stop_clean(s);
}

/* ---- the child process seen from /proc ---- */

void hk_server_start_wrapped(struct hk_server *s, const char *const *extra_env,
                             const char *const *wrapper)
{
    prepare(s, extra_env);
    const char *argv[HK_MAX_ARGS + 2];
    size_t a = 0;
    for (size_t i = 0; wrapper && wrapper[i]; i++) {
        CHECK(a < HK_MAX_ARGS, "wrapper command too long");
        argv[a++] = wrapper[i];
    }
    argv[a++] = hookd_bin();
    argv[a] = NULL;
    s->pid = hk_spawn_cmd(s->dir, (const char *const *)s->env, argv, -1, &s->out_fd, s->stderr_path);
    wait_ready(s);
}

/* Small /proc files in one read; returns the length or -1. */
static ssize_t read_small(const char *path, char *buf, size_t n)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return -1;
    size_t len = 0;
    while (len + 1 < n) {
        ssize_t r = read(fd, buf + len, n - 1 - len);
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0)
            break;
        len += (size_t)r;
    }
    close(fd);
    buf[len] = 0;
    return (ssize_t)len;
}

long hk_proc_rss_kb(pid_t pid)
{
    char path[64], buf[4096];
    snprintf(path, sizeof path, "/proc/%d/status", (int)pid);
    if (pid <= 0 || read_small(path, buf, sizeof buf) < 0)
        return -1;
    const char *p = strstr(buf, "\nVmRSS:");
    return p ? strtol(p + 7, NULL, 10) : -1;
}

double hk_proc_cpu_s(pid_t pid)
{
    char path[64], buf[4096];
    snprintf(path, sizeof path, "/proc/%d/stat", (int)pid);
    if (pid <= 0 || read_small(path, buf, sizeof buf) < 0)
        return -1;
    /* The command name may hold spaces and parentheses: fields count from
     * the last ')'. utime and stime are fields 14 and 15. */
    const char *p = strrchr(buf, ')');
    if (!p)
        return -1;
    unsigned long long ut = 0, st = 0;
    if (sscanf(p + 2, "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %llu %llu", &ut, &st) != 2)
        return -1;
    long hz = sysconf(_SC_CLK_TCK);
    return (double)(ut + st) / (double)(hz > 0 ? hz : 100);
}

int hk_proc_nofile(pid_t pid, long *soft, long *hard)
{
    char path[64], buf[8192];
    snprintf(path, sizeof path, "/proc/%d/limits", (int)pid);
    if (pid <= 0 || read_small(path, buf, sizeof buf) < 0)
        return -1;
    const char *p = strstr(buf, "Max open files");
    if (!p)
        return -1;
    char s1[32], s2[32];
    if (sscanf(p + strlen("Max open files"), "%31s %31s", s1, s2) != 2)
        return -1;
    *soft = strcmp(s1, "unlimited") == 0 ? -1 : strtol(s1, NULL, 10);
    *hard = strcmp(s2, "unlimited") == 0 ? -1 : strtol(s2, NULL, 10);
    return 0;
}

long long hk_server_stderr_size(const struct hk_server *s)
{
    struct stat st;
    return stat(s->stderr_path, &st) == 0 ? (long long)st.st_size : -1;
}
