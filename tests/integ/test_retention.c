/* SPDX-License-Identifier: MIT
 * Retention through the real server (docs/forwarding.md), on SQLite and,
 * with HOOKD_TEST_STORE=pg, on PostgreSQL: the age rule, the row cap, a
 * source's own rules beside the global ones (and a SIGHUP that changes
 * them), the size cap (the SQLite file shrinks on disk), rows waiting to be
 * forwarded, the metrics and the log line, a stop in the middle of a purge,
 * and requests served on time while 20,000 rows are purged. Rows are made
 * old by waiting past a short HOOKD_RETENTION. */
#include <criterion/criterion.h>

#include <arpa/inet.h>
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../prom.h"
#include "harness.h"

static struct hk_server srv;
static char dir[64];           /* the sources file's directory (the server makes its own) */
static char sources_path[128];

static void teardown(void)
{
    hk_server_cleanup(&srv);
    if (sources_path[0])
        unlink(sources_path);
    if (dir[0])
        rmdir(dir);
    sources_path[0] = dir[0] = 0;
}

TestSuite(retention, .fini = teardown, .timeout = 240);

/* ---- helpers ----------------------------------------------------------- */

/* Write the sources file (atomically, as an operator's deploy would) and
 * return "HOOKD_SOURCES=<path>" (static). */
static const char *write_sources(const char *text)
{
    if (!dir[0]) {
        strcpy(dir, "/tmp/hk_retention_XXXXXX");
        cr_assert(mkdtemp(dir), "mkdtemp: %s", strerror(errno));
        snprintf(sources_path, sizeof sources_path, "%s/sources.yaml", dir);
    }
    char tmp[160];
    snprintf(tmp, sizeof tmp, "%s.tmp", sources_path);
    FILE *f = fopen(tmp, "w");
    cr_assert(f, "fopen %s: %s", tmp, strerror(errno));
    fputs(text, f);
    cr_assert(fclose(f) == 0);
    cr_assert(rename(tmp, sources_path) == 0, "rename: %s", strerror(errno));
    static char env[160];
    snprintf(env, sizeof env, "HOOKD_SOURCES=%s", sources_path);
    return env;
}

/* Set NAME=value in the environment the next hk_server_restart gives
 * hookd (the harness keeps the extras of start for restarts). */
static void set_env(struct hk_server *s, const char *kv)
{
    size_t n = strcspn(kv, "=") + 1;
    size_t i = 0;
    for (; i < HK_MAX_ENV - 1 && s->env[i]; i++) {
        if (strncmp(s->env[i], kv, n) == 0)
            break;
    }
    cr_assert(i < HK_MAX_ENV - 1, "too many env entries");
    free(s->env[i]);
    s->env[i] = strdup(kv);
    cr_assert(s->env[i]);
}

/* The ids of every row (newest first) the list gives for `query` ("" or
 * "&source=x"); *n their count. Caller frees. */
static int64_t *ids_of(const char *query, size_t *n)
{
    char path[256];
    snprintf(path, sizeof path, "/api/webhooks?all=true%s", query);
    struct hk_resp r;
    hk_context("GET %s", path);
    hk_get(&srv, path, &r);
    json_t *a = hk_assert_json(&r, 200);
    cr_assert(json_is_array(a), "GET %s: not an array", path);
    *n = json_array_size(a);
    int64_t *ids = malloc((*n + 1) * sizeof *ids);
    cr_assert(ids);
    for (size_t i = 0; i < *n; i++) {
        json_t *id = json_object_get(json_array_get(a, i), "id");
        cr_assert(json_is_integer(id), "GET %s: item %zu without an id", path, i);
        ids[i] = json_integer_value(id);
        cr_assert(i == 0 || ids[i] < ids[i - 1], "GET %s: ids not descending at %zu", path, i);
    }
    json_decref(a);
    hk_resp_free(&r);
    hk_context("%s", "");
    return ids;
}

static size_t count(const char *query)
{
    size_t n;
    free(ids_of(query, &n));
    return n;
}

/* Poll (every 50 ms) until `query` lists exactly `want` rows, for at most
 * `ms`; fails with what it saw. */
static void wait_count(const char *query, size_t want, int ms)
{
    int64_t deadline = hk_now_ms() + ms;
    size_t n = count(query);
    while (n != want && hk_now_ms() < deadline) {
        hk_sleep_ms(50);
        n = count(query);
    }
    cr_assert_eq(n, want, "GET /api/webhooks?all=true%s: %zu rows after %d ms, expected %zu", query, n, ms, want);
}

static int cmp_desc(const void *a, const void *b)
{
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return x < y ? 1 : x > y ? -1 : 0;
}

/* The bodies hk_parallel_posts sends: source `post_source`, a payload of
 * `post_pad` letters that do not compress (PostgreSQL stores payloads
 * with lz4), never "pppppppp". */
static const char *post_source = "misc";
static int post_pad = 16;

static void post_body(int i, char *buf, size_t n)
{
    char pad[4096];
    int k = post_pad < (int)sizeof pad - 1 ? post_pad : (int)sizeof pad - 1;
    uint32_t x = 2463534242u ^ (uint32_t)i * 2654435761u;
    for (int j = 0; j < k; j++) {
        x ^= x << 13, x ^= x >> 17, x ^= x << 5;
        pad[j] = (char)('a' + x % 15);     /* a..o */
    }
    pad[k] = 0;
    snprintf(buf, n, "{\"source\":\"%s\",\"eventType\":\"e%d\",\"payload\":\"%s\"}", post_source, i, pad);
}

/* POST n webhooks from 4 threads; their ids, newest first (caller frees). */
static int64_t *post_many(const char *source, int n, int pad)
{
    post_source = source;
    post_pad = pad;
    int64_t *ids = calloc((size_t)n, sizeof *ids);
    cr_assert(ids);
    int ok = hk_parallel_posts(&srv, 4, n, post_body, ids);
    for (int i = 0; i < n && ok != n; i++)
        cr_assert(ids[i] > 0, "insert %d/%d of %s failed: %" PRId64, i, n, source, ids[i]);
    qsort(ids, (size_t)n, sizeof *ids, cmp_desc);
    return ids;
}

/* /q/metrics, strictly parsed. */
static void scrape(struct prom *p)
{
    struct hk_resp r;
    hk_get(&srv, "/q/metrics", &r);
    cr_assert_eq(r.status, 200, "/q/metrics: %ld", r.status);
    memset(p, 0, sizeof *p);
    char *err = prom_parse(r.body, p);
    cr_assert_null(err, "exposition rejected: %s", err);
    hk_resp_free(&r);
}

/* One value of /q/metrics; fails when the sample is absent. */
static double metric(const char *name)
{
    struct prom p;
    scrape(&p);
    double v = prom_get(&p, name, NULL);
    int present = prom_count(&p, name);
    prom_free(&p);
    cr_assert(present == 1, "%s is not in /q/metrics (api/metrics.c renders hk_retention_metrics)", name);
    return v;
}

/* Wait until metric `name` is at least `min`, for at most `ms`. */
static double wait_metric(const char *name, double min, int ms)
{
    int64_t deadline = hk_now_ms() + ms;
    double v = metric(name);
    while (v < min && hk_now_ms() < deadline) {
        hk_sleep_ms(50);
        v = metric(name);
    }
    cr_assert(v >= min, "%s = %g after %d ms, expected at least %g", name, v, ms, min);
    return v;
}

static long long file_size(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0 ? (long long)st.st_size : -1;
}

static int count_in(const char *hay, const char *needle)
{
    int n = 0;
    for (const char *p = hay; (p = strstr(p, needle)); p += strlen(needle))
        n++;
    return n;
}

/* SIGHUP, and wait for the reload's log line. */
static void reload(void)
{
    char *e = hk_server_stderr(&srv);
    int before = count_in(e, "sources reloaded");
    free(e);
    cr_assert(kill(srv.pid, SIGHUP) == 0);
    int64_t deadline = hk_now_ms() + 5000;
    for (;;) {
        e = hk_server_stderr(&srv);
        int n = count_in(e, "sources reloaded");
        free(e);
        if (n > before)
            return;
        cr_assert(hk_now_ms() < deadline, "no \"sources reloaded\" within 5 s of SIGHUP");
        hk_sleep_ms(20);
    }
}

/* ---- the age rule ------------------------------------------------------ */

Test(retention, the_age_rule_removes_old_rows_and_keeps_new_ones)
{
    hk_server_start(&srv, (const char *const[]){"HOOKD_RETENTION=4s", "HOOKD_PURGE_INTERVAL=200ms", NULL});
    int64_t *old = post_many("misc", 30, 16);
    int64_t t_old = hk_now_ms();
    hk_sleep_ms(2000);
    int64_t *young = post_many("misc", 10, 16);
    /* The 30 turn 4 s old by t_old + 4 s; the 10 no sooner than t_old +
     * 6 s. In between, the list holds exactly the 10. */
    wait_count("", 10, 8000);
    size_t n;
    int64_t *left = ids_of("", &n);
    cr_assert_lt(hk_now_ms() - t_old, 5900, "checked too late: the new rows may have aged out too");
    cr_assert_eq(n, 10);
    for (size_t i = 0; i < n; i++)
        cr_expect_eq(left[i], young[i], "row %zu: id %" PRId64 ", expected %" PRId64, i, left[i], young[i]);
    cr_expect_eq(metric("hookd_retention_deleted_total"), 30);
    cr_expect_eq(metric("hookd_retention_errors_total"), 0);
    cr_expect_geq(metric("hookd_retention_runs_total"), 2);
    /* Then those age out too. */
    wait_count("", 0, 8000);
    cr_expect_eq(metric("hookd_retention_deleted_total"), 40);
    free(left);
    free(old);
    free(young);
    hk_finish(&srv);
}

/* ---- the row cap ------------------------------------------------------- */

Test(retention, the_row_cap_keeps_the_newest)
{
    /* Batches of 20: 150 rows to delete take several, one after another. */
    hk_server_start(&srv, (const char *const[]){"HOOKD_MAX_ROWS=50", "HOOKD_PURGE_BATCH=20",
                                                "HOOKD_PURGE_INTERVAL=200ms", NULL});
    int64_t *ids = post_many("misc", 200, 16);
    wait_count("", 50, 10000);
    size_t n;
    int64_t *left = ids_of("", &n);
    for (size_t i = 0; i < n; i++)
        cr_expect_eq(left[i], ids[i], "row %zu: id %" PRId64 ", expected %" PRId64, i, left[i], ids[i]);
    free(left);
    /* Nothing more goes in later runs, and every deletion was counted once. */
    double runs = metric("hookd_retention_runs_total");
    wait_metric("hookd_retention_runs_total", runs + 3, 5000);
    cr_expect_eq(count(""), 50);
    cr_expect_eq(metric("hookd_retention_deleted_total"), 150);
    cr_expect_eq(metric("hookd_retention_errors_total"), 0);
    double secs = metric("hookd_retention_run_seconds");
    cr_expect(secs >= 0 && secs < 5, "hookd_retention_run_seconds %g", secs);
    cr_expect_gt(metric("hookd_store_bytes"), 0);
    /* One info line per run that deleted something, with counts only. */
    char body0[4200];
    char *err = hk_server_stderr(&srv);
    int lines = 0;
    long sum = 0;
    for (const char *p = err; (p = strstr(p, "retention: webhooks deleted")); p++) {
        const char *d = strstr(p, "\"deleted\":");
        cr_assert(d && d < strchr(p, '\n'), "a deletion line without its count:\n%s", err);
        sum += strtol(d + 10, NULL, 10);
        lines++;
    }
    cr_expect_geq(lines, 1, "no deletion line:\n%s", err);
    cr_expect_eq(sum, 150, "the lines count %ld deletions:\n%s", sum, err);
    post_body(0, body0, sizeof body0);
    char *payload = strstr(body0, "\"payload\":\"") + 11;
    payload[16] = 0;
    cr_expect_null(strstr(err, payload), "a payload reached the log:\n%s", err);
    cr_expect_eq(count_in(err, "retention: purge failed"), 0, "%s", err);
    free(err);
    free(ids);
    hk_finish(&srv);
}

/* ---- a source's own rules -------------------------------------------- */

Test(retention, a_source_with_its_own_rules_and_the_global_ones_for_the_rest)
{
    const char *src = write_sources("sources:\n"
                                    "  - name: own\n"
                                    "    scheme: none\n"
                                    "    retention: {maxRows: 5}\n"
                                    "  - name: forever\n"
                                    "    scheme: none\n"
                                    "    retention: {maxAge: 0}\n"
                                    "  - name: plain\n"
                                    "    scheme: none\n");
    hk_server_start(&srv, (const char *const[]){src, "HOOKD_MAX_ROWS=20", "HOOKD_PURGE_INTERVAL=200ms", NULL});
    int64_t *own = post_many("own", 30, 16);
    int64_t *forever = post_many("forever", 30, 16);
    int64_t *plain = post_many("plain", 15, 16);
    int64_t *misc = post_many("misc", 15, 16);
    /* own keeps its newest 5; forever keeps all 30 (its own rule replaces
     * HOOKD_MAX_ROWS); plain and misc share the global 20, the newest. */
    wait_count("&source=own", 5, 10000);
    wait_count("&source=plain", 5, 10000);
    wait_count("&source=misc", 15, 10000);
    cr_expect_eq(count("&source=forever"), 30);
    size_t n;
    int64_t *left = ids_of("&source=own", &n);
    for (size_t i = 0; i < n; i++)
        cr_expect_eq(left[i], own[i]);
    free(left);
    left = ids_of("&source=plain", &n);
    for (size_t i = 0; i < n; i++)
        cr_expect_eq(left[i], plain[i]);
    free(left);
    cr_expect_eq(metric("hookd_retention_deleted_total"), 25 + 10);

    /* A reload changes the rules: own now keeps 2, plain joins forever's
     * side, and the global cap is left with misc alone. */
    write_sources("sources:\n"
                  "  - {name: own, scheme: none, retention: {maxRows: 2}}\n"
                  "  - {name: forever, scheme: none, retention: {maxAge: 0}}\n"
                  "  - {name: plain, scheme: none, retention: {maxAge: 0}}\n");
    reload();
    int64_t *more = post_many("plain", 20, 16);
    wait_count("&source=own", 2, 10000);
    double runs = metric("hookd_retention_runs_total");
    wait_metric("hookd_retention_runs_total", runs + 3, 5000);
    cr_expect_eq(count("&source=plain"), 25, "plain's rows are kept for good now");
    cr_expect_eq(count("&source=misc"), 15);
    cr_expect_eq(count("&source=forever"), 30);
    free(more);
    free(own);
    free(forever);
    free(plain);
    free(misc);
    hk_finish(&srv);
}

Test(retention, a_rule_added_by_a_reload_applies)
{
    /* No rule at start: only the sources file. */
    const char *src = write_sources("sources:\n  - {name: late, scheme: none}\n");
    hk_server_start(&srv, (const char *const[]){src, "HOOKD_PURGE_INTERVAL=200ms", NULL});
    int64_t *ids = post_many("late", 12, 16);
    hk_sleep_ms(600);
    cr_expect_eq(count(""), 12);
    write_sources("sources:\n  - {name: late, scheme: none, retention: {maxRows: 3}}\n");
    reload();
    wait_count("", 3, 10000);
    size_t n;
    int64_t *left = ids_of("", &n);
    for (size_t i = 0; i < n; i++)
        cr_expect_eq(left[i], ids[i]);
    free(left);
    free(ids);
    hk_finish(&srv);
}

/* ---- the size cap ------------------------------------------------------ */

Test(retention, the_size_cap_shrinks_the_store)
{
    /* A cap no store reaches: retention runs, deletes nothing, and reports
     * the size. */
    hk_server_start(&srv, (const char *const[]){"HOOKD_MAX_BYTES=1TiB", "HOOKD_PURGE_INTERVAL=200ms", NULL});
    int64_t *ids = post_many("misc", 3000, 2000);
    double runs = metric("hookd_retention_runs_total");
    wait_metric("hookd_retention_runs_total", runs + 2, 5000);
    double before = metric("hookd_store_bytes");
    cr_assert_gt(before, 3000.0 * 2000, "hookd_store_bytes %g for 3000 rows of 2 KB", before);
    hk_server_stop_clean(&srv);
    long long file_before = hk_store_is_pg() ? 0 : file_size(srv.db_path);

    /* A third of that: the oldest rows go until the store is under it. */
    char cap[64];
    snprintf(cap, sizeof cap, "HOOKD_MAX_BYTES=%.0f", before / 3);
    set_env(&srv, cap);
    /* Batches of 50 at most (below the adaptive start, so exactly 50). */
    set_env(&srv, "HOOKD_PURGE_BATCH=50");
    hk_server_restart(&srv);
    if (hk_store_is_pg()) {
        /* PostgreSQL gives a deleted row's space to later rows (VACUUM),
         * not back to the file system: one batch goes, the size stays,
         * and the cap then waits for the store to grow rather than
         * deleting every row for nothing. */
        wait_metric("hookd_retention_deleted_total", 50, 10000);
        double runs = metric("hookd_retention_runs_total");
        wait_metric("hookd_retention_runs_total", runs + 5, 5000);
        cr_expect_eq(metric("hookd_retention_deleted_total"), 50);
        size_t n;
        int64_t *left = ids_of("", &n);
        cr_expect_eq(n, 2950);
        for (size_t i = 0; i < n; i++)
            cr_expect_eq(left[i], ids[i]);
        free(left);
        char *err = hk_server_stderr(&srv);
        cr_expect_eq(count_in(err, "did not shrink the store"), 1, "%s", err);
        free(err);
        /* 3 MB of new rows grow it past that size (by more than the 1 MiB
         * margin VACUUM's own pages may take): the cap deletes again, the
         * oldest first. */
        int64_t *more = post_many("misc", 1500, 2000);
        wait_metric("hookd_retention_deleted_total", 51, 10000);
        runs = metric("hookd_retention_runs_total");
        wait_metric("hookd_retention_runs_total", runs + 3, 5000);
        double deleted = metric("hookd_retention_deleted_total");
        left = ids_of("", &n);
        cr_expect_eq(n, 4500 - (size_t)deleted, "%zu rows left, %g deleted", n, deleted);
        cr_expect_geq(n, 1500, "%zu rows left", n);
        for (size_t i = 0; i < n && i < 1500; i++)
            cr_expect_eq(left[i], more[i]);
        for (size_t i = 1500; i < n; i++)
            cr_expect_eq(left[i], ids[i - 1500]);
        free(left);
        free(more);
        free(ids);
        hk_finish(&srv);
        return;
    }
    int64_t deadline = hk_now_ms() + 30000;
    double after = -1;
    for (;;) {
        struct prom p;
        scrape(&p);
        after = prom_get(&p, "hookd_store_bytes", NULL);
        prom_free(&p);
        if ((after >= 0 && after <= before / 3) || hk_now_ms() > deadline)
            break;
        hk_sleep_ms(100);
    }
    cr_assert(after >= 0 && after <= before / 3,
              "hookd_store_bytes %g, cap %.0f (was %g): deleting the oldest rows did not shrink the store", after,
              before / 3, before);
    size_t n;
    int64_t *left = ids_of("", &n);
    cr_expect(n > 0 && n < 3000 * 2 / 3, "%zu rows left of 3000", n);
    /* The newest ones. */
    for (size_t i = 0; i < n; i++)
        cr_expect_eq(left[i], ids[i]);
    free(left);
    cr_expect_geq(metric("hookd_retention_deleted_total"), 3000 - (double)n);
    hk_server_stop_clean(&srv);
    /* The file itself, not only its live pages (incremental vacuum). */
    long long file_after = file_size(srv.db_path);
    cr_expect(file_after > 0 && file_after < file_before / 2, "hookd.db: %lld bytes before, %lld after", file_before,
              file_after);
    hk_server_restart(&srv);
    free(ids);
    hk_finish(&srv);
}

/* ---- rows waiting to be forwarded -------------------------------------- */

/* A port where nothing listens: bound, never listening, kept for the test. */
static int dead_port(int *fd_out)
{
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    cr_assert(fd >= 0);
    struct sockaddr_in a = {.sin_family = AF_INET};
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    cr_assert(bind(fd, (struct sockaddr *)&a, sizeof a) == 0);
    socklen_t len = sizeof a;
    cr_assert(getsockname(fd, (struct sockaddr *)&a, &len) == 0);
    *fd_out = fd;
    return ntohs(a.sin_port);
}

/* The delivery state of a row as GET shows it, or NULL when rows carry
 * none (a build without forwarding). */
static char *delivery_state(int64_t id)
{
    char path[64];
    snprintf(path, sizeof path, "/api/webhooks/%" PRId64, id);
    struct hk_resp r;
    hk_get(&srv, path, &r);
    json_t *o = hk_assert_json(&r, 200);
    json_t *d = json_object_get(o, "delivery");
    json_t *st = json_is_object(d) ? json_object_get(d, "state") : NULL;
    char *s = json_is_string(st) ? strdup(json_string_value(st)) : NULL;
    json_decref(o);
    hk_resp_free(&r);
    return s;
}

static void pending_rows(bool keep)
{
    int fd;
    int port = dead_port(&fd);
    char url[96];
    snprintf(url, sizeof url, "HOOKD_FORWARD_URL=http://127.0.0.1:%d/sink", port);
    hk_server_start(&srv, (const char *const[]){url, "HOOKD_RETENTION=1s", "HOOKD_PURGE_INTERVAL=200ms",
                                                keep ? "HOOKD_RETENTION_KEEP_UNDELIVERED=on"
                                                     : "HOOKD_RETENTION_KEEP_UNDELIVERED=off",
                                                NULL});
    int64_t *ids = post_many("misc", 10, 16);
    char *state = delivery_state(ids[0]);
    if (!state) {
        close(fd);
        free(ids);
        hk_finish(&srv);
        cr_skip_test("rows carry no delivery state: forwarding (api/forward.c) is not in this build yet");
    }
    cr_assert_str_eq(state, "pending", "a row to a sink that refuses connections");
    free(state);
    if (keep) {
        /* Well past the age, several runs: all still there. */
        double runs = metric("hookd_retention_runs_total");
        hk_sleep_ms(1500);
        wait_metric("hookd_retention_runs_total", runs + 5, 5000);
        cr_expect_eq(count(""), 10, "pending rows are kept");
        cr_expect_eq(metric("hookd_retention_deleted_total"), 0);
    } else {
        wait_count("", 0, 10000);
        cr_expect_eq(metric("hookd_retention_deleted_total"), 10);
    }
    close(fd);
    free(ids);
    hk_finish(&srv);
}

Test(retention, rows_waiting_to_be_forwarded_are_kept)
{
    pending_rows(true);
}

Test(retention, rows_waiting_to_be_forwarded_go_when_told)
{
    pending_rows(false);
}

/* ---- stopping and load -------------------------------------------------- */

Test(retention, a_stop_in_the_middle_of_a_purge_is_clean_and_the_next_start_goes_on)
{
    hk_server_start(&srv, NULL);
    int64_t *ids = post_many("misc", 12000, 1000);
    hk_server_stop_clean(&srv);
    /* Large batches, back to back: the loop spends most of the purge
     * waiting for one, so a stop right after the first lands while the
     * next is in flight. */
    set_env(&srv, "HOOKD_MAX_ROWS=10");
    set_env(&srv, "HOOKD_PURGE_BATCH=1000");
    set_env(&srv, "HOOKD_PURGE_INTERVAL=100ms");
    hk_server_restart(&srv);
    int64_t deadline = hk_now_ms() + 10000;
    double deleted = 0;
    while ((deleted = metric("hookd_retention_deleted_total")) < 1 && hk_now_ms() < deadline)
        hk_sleep_ms(2);
    cr_assert_gt(deleted, 0, "no purge within 10 s");
    /* SIGTERM while batches are going: exit 0, promptly. */
    hk_server_stop_clean(&srv);
    hk_server_restart(&srv);
    wait_count("", 10, 60000);
    size_t k;
    int64_t *left = ids_of("", &k);
    for (size_t i = 0; i < k; i++)
        cr_expect_eq(left[i], ids[i]);
    free(left);
    free(ids);
    hk_finish(&srv);
}

/* The mix: GETs and POSTs on keep-alive connections while the purge runs. */
struct mix {
    _Atomic bool stop;
    long requests, errors, worst_ms;
    long status_5xx;
    char first_error[200];
};

static void *mix_worker(void *p)
{
    struct mix *m = p;
    CURL *h = hk_curl_new();
    static const char *const ct[] = {"Content-Type: application/json", NULL};
    for (long i = 0; !atomic_load(&m->stop); i++) {
        struct hk_req q = {.path = "/api/webhooks?limit=20", .timeout_ms = 10000};
        if (i % 3 == 0) {
            q.method = "POST";
            q.path = "/api/webhooks";
            q.body = "{\"source\":\"mix\",\"eventType\":\"e\",\"payload\":\"x\"}";
            q.headers = ct;
        } else if (i % 3 == 1) {
            q.path = "/api/webhooks?limit=20&source=mix";
        }
        struct hk_resp r;
        int64_t t0 = hk_now_ms();
        int rc = hk_request(&srv, h, &q, &r);
        long ms = (long)(hk_now_ms() - t0);
        m->requests++;
        if (ms > m->worst_ms)
            m->worst_ms = ms;
        long want = q.body ? 201 : 200;
        if (rc != CURLE_OK || r.status != want) {
            m->errors++;
            m->status_5xx += r.status >= 500;
            if (!m->first_error[0])
                snprintf(m->first_error, sizeof m->first_error, "%s %s: curl %d, status %ld", q.body ? "POST" : "GET",
                         q.path, rc, r.status);
        }
        hk_resp_free(&r);
    }
    curl_easy_cleanup(h);
    return NULL;
}

Test(retention, requests_are_served_on_time_while_20000_rows_are_purged)
{
    hk_server_start(&srv, NULL);
    int64_t *ids = post_many("bulk", 20000, 200);
    free(ids);
    hk_server_stop_clean(&srv);
    set_env(&srv, "HOOKD_MAX_ROWS=100");
    set_env(&srv, "HOOKD_PURGE_INTERVAL=200ms");
    hk_server_restart(&srv);
    struct mix m[2];
    memset(m, 0, sizeof m);
    pthread_t th[2];
    for (int i = 0; i < 2; i++)
        cr_assert(pthread_create(&th[i], NULL, mix_worker, &m[i]) == 0);
    int64_t t0 = hk_now_ms();
    double deleted = 0;
    while ((deleted = metric("hookd_retention_deleted_total")) < 19900 && hk_now_ms() - t0 < 120000)
        hk_sleep_ms(200);
    for (int i = 0; i < 2; i++) {
        atomic_store(&m[i].stop, true);
        pthread_join(th[i], NULL);
    }
    cr_assert_geq(deleted, 19900, "deleted %g of 19900+ in %" PRId64 " ms", deleted, hk_now_ms() - t0);
    for (int i = 0; i < 2; i++) {
        cr_expect_gt(m[i].requests, 10, "thread %d made %ld requests", i, m[i].requests);
        cr_expect_eq(m[i].errors, 0, "thread %d: %ld errors (%ld 5xx), first: %s", i, m[i].errors, m[i].status_5xx,
                     m[i].first_error);
        cr_expect_lt(m[i].worst_ms, 2000, "thread %d: a request took %ld ms during the purge", i, m[i].worst_ms);
    }
    wait_count("", 100, 10000);
    cr_expect_eq(metric("hookd_retention_errors_total"), 0);
    hk_finish(&srv);
}
