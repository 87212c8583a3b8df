/* SPDX-License-Identifier: MIT
 * Configuration: one table of options, each settable by environment
 * variable or --flag, parsed and range-checked before anything starts. */
#include "core/config.h"

#include <errno.h>
#include <limits.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/log.h"
#include "hk_build.h"

enum opt_type { T_STR, T_INT, T_U32, T_U64, T_SIZE, T_DURATION, T_SYNC, T_LOGLEVEL, T_ONOFF };

struct opt {
    const char *env;
    const char *flag;
    enum opt_type type;
    size_t off;
    int64_t min, max;
    const char *def;
    const char *help;
};

#define OFF(f) offsetof(struct hk_config, f)

static const struct opt opts[] = {
    {"PORT", "port", T_INT, OFF(port), 0, 65535, "8080", "TCP port (0 picks a free one)"},
    {"HOOKD_HOST", "host", T_STR, OFF(host), 0, 0, "0.0.0.0", "address to listen on"},
    {"HOOKD_THREADS", "threads", T_INT, OFF(threads), 1, 1024, NULL,
     "event loops (default: CPUs available, respecting affinity and cgroup quota)"},
    {"HOOKD_SQLITE_PATH", "sqlite-path", T_STR, OFF(sqlite_path), 0, 0, "./hookd.db",
     "SQLite database file (the store when DATABASE_URL is unset)"},
    {"HOOKD_SQLITE_SYNC", "sqlite-sync", T_SYNC, OFF(sqlite_sync_full), 0, 0, "full",
     "full: a 201 survives power loss; normal: survives a process crash"},
    {"HOOKD_SQLITE_QUEUE_MAX", "sqlite-queue-max", T_U32, OFF(sqlite_queue_max), 1, 1 << 24, "65536",
     "writes waiting for the SQLite writer (503 beyond)"},
    {"HOOKD_SQLITE_BUSY_MS", "sqlite-busy-ms", T_U32, OFF(sqlite_busy_ms), 1, 600000, "5000",
     "SQLite busy timeout in ms: how long a write waits for another process's lock"},
    {"DATABASE_URL", "database-url", T_STR, OFF(database_url), 0, 0, NULL,
     "PostgreSQL connection URI (selects the PostgreSQL store)"},
    {"DATABASE_URL_FILE", "database-url-file", T_STR, OFF(database_url_file), 0, 0, NULL,
     "file holding DATABASE_URL (e.g. a mounted secret)"},
    {"HOOKD_DB_POOL", "db-pool", T_U32, OFF(db_pool), 1, 64, "2", "PostgreSQL connections per event loop"},
    {"HOOKD_DB_QUEUE", "db-queue", T_U32, OFF(db_queue), 1, 1 << 20, "1024",
     "requests waiting for PostgreSQL per event loop (503 beyond)"},
    {"HOOKD_DB_TIMEOUT", "db-timeout", T_DURATION, OFF(db_timeout_ms), 1, 3600000, "5s",
     "PostgreSQL query timeout, queueing included (503 beyond)"},
    {"HOOKD_MAX_HEADER_BYTES", "max-header-bytes", T_U32, OFF(max_header_bytes), 256, 1 << 20, "16384",
     "request line + headers limit (431 beyond)"},
    {"HOOKD_MAX_BODY_BYTES", "max-body-bytes", T_U32, OFF(max_body_bytes), 0, 1 << 30, "1048576",
     "request body limit (413 beyond)"},
    {"HOOKD_MAX_CONNECTIONS", "max-connections", T_U32, OFF(max_connections), 1, 1 << 24, "10000",
     "open connections limit (503 beyond)"},
    {"HOOKD_HEADER_TIMEOUT", "header-timeout", T_DURATION, OFF(header_timeout_ms), 1, 3600000, "10s",
     "time to receive a whole request (408 beyond)"},
    {"HOOKD_IDLE_TIMEOUT", "idle-timeout", T_DURATION, OFF(idle_timeout_ms), 1, 86400000, "60s",
     "keep-alive idle time before the server closes"},
    {"HOOKD_DRAIN_TIMEOUT", "drain-timeout", T_DURATION, OFF(drain_timeout_ms), 0, 3600000, "10s",
     "on SIGTERM, how long in-flight requests may take"},
    {"HOOKD_EXIT_IDLE_AFTER", "exit-idle-after", T_DURATION, OFF(exit_idle_after_ms), 0, 86400000, "0",
     "exit 0 after this long without a connection (0: never; for socket activation)"},
    {"HOOKD_WEBHOOK_SECRET", "webhook-secret", T_STR, OFF(webhook_secret), 0, 0, NULL,
     "require X-Hub-Signature-256 (HMAC-SHA256 of the body) on POST"},
    {"HOOKD_SOURCES", "sources", T_STR, OFF(sources_path), 0, 0, NULL,
     "YAML (or JSON) file of ingress sources for POST /hooks/{source}; SIGHUP reloads it"},
    {"HOOKD_INGRESS_INFLIGHT_BYTES", "ingress-inflight-bytes", T_U32, OFF(ingress_inflight_bytes), 1024, 1u << 31,
     "67108864", "ingress body bytes being received or stored at once, all sources (503 beyond)"},
    {"HOOKD_GRAPHQL_INTROSPECTION", "graphql-introspection", T_ONOFF, OFF(graphql_introspection), 0, 0, "on",
     "on: /graphql answers __schema and __type (GraphiQL, codegen); off: refused"},
    {"K_SINK", "k-sink", T_STR, OFF(k_sink), 0, 0, NULL,
     "where to forward every stored webhook as a CloudEvent (set by a Knative SinkBinding)"},
    {"HOOKD_FORWARD_URL", "forward-url", T_STR, OFF(forward_url), 0, 0, NULL,
     "where to forward when K_SINK is unset (http:// or https://)"},
    {"HOOKD_FORWARD_MODE", "forward-mode", T_STR, OFF(forward_mode), 0, 0, "binary",
     "CloudEvents content mode: binary (ce-* headers, the body as it came) or structured"},
    {"HOOKD_FORWARD_CONCURRENCY", "forward-concurrency", T_U32, OFF(forward_concurrency), 1, 4096, "64",
     "requests in flight to one sink, per process"},
    {"HOOKD_FORWARD_CONNECT_TIMEOUT", "forward-connect-timeout", T_DURATION, OFF(forward_connect_timeout_ms), 1,
     600000, "2s", "connecting to a sink (TLS included)"},
    {"HOOKD_FORWARD_TIMEOUT", "forward-timeout", T_DURATION, OFF(forward_timeout_ms), 1, 3600000, "10s",
     "one delivery attempt, connect to last byte"},
    {"HOOKD_FORWARD_MAX_ATTEMPTS", "forward-max-attempts", T_U32, OFF(forward_max_attempts), 1, 1000, "12",
     "attempts before a webhook is dead-lettered (state failed)"},
    {"HOOKD_FORWARD_MAX_AGE", "forward-max-age", T_DURATION, OFF(forward_max_age_ms), 1000, 31536000000, "24h",
     "how long after receipt a webhook is still retried"},
    {"HOOKD_FORWARD_BACKOFF", "forward-backoff", T_DURATION, OFF(forward_backoff_ms), 1, 3600000, "1s",
     "first retry delay; doubles per attempt, with full jitter"},
    {"HOOKD_FORWARD_BACKOFF_MAX", "forward-backoff-max", T_DURATION, OFF(forward_backoff_max_ms), 1, 86400000,
     "5m", "longest retry delay (a sink's Retry-After may ask for more, up to 1h)"},
    {"HOOKD_FORWARD_RETRY_4XX", "forward-retry-4xx", T_ONOFF, OFF(forward_retry_4xx), 0, 0, "off",
     "on: retry every 4xx; off: a 4xx other than 408, 409 and 429 fails the webhook at once"},
    {"HOOKD_FORWARD_LEASE", "forward-lease", T_DURATION, OFF(forward_lease_ms), 1000, 3600000, "60s",
     "how long a replica holds a webhook it is sending before another may take it"},
    {"HOOKD_FORWARD_INFLIGHT_BYTES", "forward-inflight-bytes", T_SIZE, OFF(forward_inflight_bytes), 65536,
     INT64_C(1) << 40, "64MiB", "bodies held in memory for sending, per process (more wait in the store)"},
    {"HOOKD_STREAM_BUFFER", "stream-buffer", T_SIZE, OFF(stream_buffer), 4096, INT64_C(1) << 30, "1MiB",
     "unsent bytes a live-feed client may fall behind by before it is disconnected"},
    {"HOOKD_STREAM_HEARTBEAT", "stream-heartbeat", T_DURATION, OFF(stream_heartbeat_ms), 100, 3600000, "15s",
     "a comment line on an idle live feed this often"},
    {"HOOKD_STREAM_MAX_CLIENTS", "stream-max-clients", T_U32, OFF(stream_max_clients), 1, 1 << 20, "1000",
     "live-feed clients at once, per process (503 beyond)"},
    {"HOOKD_RETENTION", "retention", T_DURATION, OFF(retention_ms), 0, INT64_C(3153600000000), "0",
     "delete webhooks older than this (0: keep them; e.g. 30d)"},
    {"HOOKD_MAX_ROWS", "max-rows", T_U64, OFF(max_rows), 0, INT64_MAX, "0",
     "keep at most this many webhooks, deleting the oldest (0: no cap)"},
    {"HOOKD_MAX_BYTES", "max-bytes", T_SIZE, OFF(max_bytes), 0, INT64_MAX, "0",
     "keep the store under this size, deleting the oldest webhooks (0: no cap; e.g. 2GiB)"},
    {"HOOKD_PURGE_INTERVAL", "purge-interval", T_DURATION, OFF(purge_interval_ms), 100, 86400000, "60s",
     "how often retention runs"},
    {"HOOKD_PURGE_BATCH", "purge-batch", T_U32, OFF(purge_batch), 1, 100000, "500",
     "most rows one purge statement deletes (batches adapt below it to about 2 ms each)"},
    {"HOOKD_RETENTION_KEEP_UNDELIVERED", "retention-keep-undelivered", T_ONOFF, OFF(retention_keep_undelivered), 0,
     0, "on", "on: retention never deletes a webhook still waiting to be forwarded"},
    {"HOOKD_LOG_LEVEL", "log-level", T_LOGLEVEL, OFF(log_level), 0, 0, "info", "debug, info, warn or error"},
    {"HOOKD_ACCESS_LOG", "access-log", T_INT, OFF(access_log), 0, 1, "0",
     "1: one JSON line per request on stderr"},
    {"HOOKD_METRICS_TOP_SOURCES", "metrics-top-sources", T_INT, OFF(metrics_top_sources), 0, 1000, "20",
     "sources labelled in hookd_webhooks_received_total (the rest: source=\"other\")"},
    {"HOOKD_AUTH", "auth", T_ONOFF, OFF(auth_on), 0, 0, "on",
     "on: reading and deleting stored data needs a token or session; off: open (a warning at start)"},
    {"HOOKD_API_TOKENS_FILE", "api-tokens-file", T_STR, OFF(api_tokens_file), 0, 0, NULL,
     "API tokens from a file (NAME SCOPES TOKEN per line; e.g. a mounted secret)"},
    {"HOOKD_SESSION_TTL", "session-ttl", T_DURATION, OFF(session_ttl_ms), 1000, 2592000000, "1h",
     "lifetime of a session made with POST /api/sessions"},
    {"HOOKD_REDIS_URL", "redis-url", T_STR, OFF(redis_url), 0, 0, NULL,
     "Redis for sessions: redis://[user:password@]host[:port][/db] or unix:///path"},
    {"HOOKD_REDIS_URL_FILE", "redis-url-file", T_STR, OFF(redis_url_file), 0, 0, NULL,
     "file holding HOOKD_REDIS_URL (read when that is unset)"},
    {"HOOKD_REDIS_TIMEOUT", "redis-timeout", T_DURATION, OFF(redis_timeout_ms), 1, 60000, "1s",
     "per Redis command (503 beyond)"},
    {"HOOKD_METRICS_TOKEN", "metrics-token", T_STR, OFF(metrics_token), 0, 0, NULL,
     "when set, GET /q/metrics needs Authorization: Bearer <this>"},
};

#define NOPTS (sizeof opts / sizeof opts[0])

int hk_parse_int(const char *s, int64_t min, int64_t max, int64_t *out)
{
    if (!s || !*s)
        return -1;
    const char *p = s;
    if (*p == '-' || *p == '+')
        p++;
    if (*p < '0' || *p > '9')
        return -1;
    errno = 0;
    char *end;
    long long v = strtoll(s, &end, 10);
    if (errno || *end || v < min || v > max)
        return -1;
    *out = v;
    return 0;
}

int hk_parse_int_n(const char *s, size_t n, int64_t min, int64_t max, int64_t *out)
{
    char tmp[24];
    if (n >= sizeof tmp)
        return -1;
    memcpy(tmp, s, n);
    tmp[n] = '\0';
    return hk_parse_int(tmp, min, max, out);
}

struct unit {
    const char *name;
    uint64_t mul;
};

/* A decimal number with one of `units` after it (a name "" allows none):
 * the product, or -1 (no digits first, unknown unit, overflow). */
static int parse_units(const char *s, const struct unit *units, size_t n, uint64_t *out)
{
    if (!s || *s < '0' || *s > '9')
        return -1;
    errno = 0;
    char *end;
    unsigned long long v = strtoull(s, &end, 10);
    if (errno)
        return -1;
    for (size_t i = 0; i < n; i++)
        if (strcmp(end, units[i].name) == 0) {
            if (v > UINT64_MAX / units[i].mul)
                return -1;
            *out = v * units[i].mul;
            return 0;
        }
    return -1;
}

int hk_parse_duration_ms(const char *s, uint64_t *out)
{
    static const struct unit units[] = {{"", 1}, {"ms", 1}, {"s", 1000}, {"m", 60000}, {"h", 3600000},
                                        {"d", 86400000}};
    return parse_units(s, units, sizeof units / sizeof units[0], out);
}

int hk_parse_size(const char *s, uint64_t *out)
{
    static const struct unit units[] = {{"", 1}, {"B", 1}, {"K", 1024}, {"KiB", 1024}, {"M", 1 << 20},
                                        {"MiB", 1 << 20}, {"G", 1 << 30}, {"GiB", 1 << 30},
                                        {"T", UINT64_C(1) << 40}, {"TiB", UINT64_C(1) << 40}};
    return parse_units(s, units, sizeof units / sizeof units[0], out);
}

/* cgroup v2 cpu.max is "max 100000" or "<quota> <period>"; v1 has two files. */
static int cgroup_cpu_limit(void)
{
    long long quota = -1, period = 0;
    FILE *f = fopen("/sys/fs/cgroup/cpu.max", "r");
    if (f) {
        char q[32];
        if (fscanf(f, "%31s %lld", q, &period) == 2 && strcmp(q, "max") != 0)
            quota = atoll(q);
        fclose(f);
    } else {
        f = fopen("/sys/fs/cgroup/cpu/cpu.cfs_quota_us", "r");
        if (f) {
            if (fscanf(f, "%lld", &quota) != 1)
                quota = -1;
            fclose(f);
        }
        f = fopen("/sys/fs/cgroup/cpu/cpu.cfs_period_us", "r");
        if (f) {
            if (fscanf(f, "%lld", &period) != 1)
                period = 0;
            fclose(f);
        }
    }
    if (quota <= 0 || period <= 0)
        return 0;
    long long n = (quota + period - 1) / period;
    return n < 1 ? 1 : (int)n;
}

int hk_cpus_available(void)
{
    cpu_set_t set;
    int n = 1;
    if (sched_getaffinity(0, sizeof set, &set) == 0)
        n = CPU_COUNT(&set);
    int q = cgroup_cpu_limit();
    if (q > 0 && q < n)
        n = q;
    return n < 1 ? 1 : n;
}

/* A flag spelled as one of two words: `yes` sets it, `no` clears it. */
static int set_word(const char *v, const char *yes, const char *no, bool *out, const char *env, char *err,
                    size_t errlen)
{
    if (strcmp(v, yes) == 0 || strcmp(v, no) == 0) {
        *out = strcmp(v, yes) == 0;
        return 0;
    }
    snprintf(err, errlen, "invalid %s=\"%s\": expected %s or %s", env, v, yes, no);
    return -1;
}

static int set_opt(struct hk_config *c, const struct opt *o, const char *v, char *err, size_t errlen)
{
    char *field = (char *)c + o->off;
    int64_t i;
    switch (o->type) {
    case T_STR: {
        char **dst = (char **)field;
        free(*dst);
        *dst = strdup(v);
        if (!*dst)
            abort();
        return 0;
    }
    case T_INT:
        if (hk_parse_int(v, o->min, o->max, &i) < 0)
            goto bad_range;
        *(int *)field = (int)i;
        return 0;
    case T_U32:
        if (hk_parse_int(v, o->min, o->max, &i) < 0)
            goto bad_range;
        *(uint32_t *)field = (uint32_t)i;
        return 0;
    case T_U64:
        if (hk_parse_int(v, o->min, o->max, &i) < 0)
            goto bad_range;
        *(uint64_t *)field = (uint64_t)i;
        return 0;
    case T_SIZE: {
        uint64_t bytes;
        if (hk_parse_size(v, &bytes) < 0 || bytes > (uint64_t)o->max || (int64_t)bytes < o->min) {
            snprintf(err, errlen, "invalid %s=\"%s\": expected a size such as 65536, 512KiB, 64MiB or 2GiB", o->env,
                     v);
            return -1;
        }
        *(uint64_t *)field = bytes;
        return 0;
    }
    case T_DURATION: {
        uint64_t ms;
        if (hk_parse_duration_ms(v, &ms) < 0 || (int64_t)ms < o->min || (int64_t)ms > o->max) {
            snprintf(err, errlen, "invalid %s=\"%s\": expected a duration such as 500ms, 10s or 2m", o->env, v);
            return -1;
        }
        *(uint64_t *)field = ms;
        return 0;
    }
    case T_ONOFF:
        return set_word(v, "on", "off", (bool *)field, o->env, err, errlen);
    case T_SYNC:
        return set_word(v, "full", "normal", (bool *)field, o->env, err, errlen);
    case T_LOGLEVEL: {
        enum hk_log_level lvl;
        if (hk_log_parse_level(v, &lvl) < 0) {
            snprintf(err, errlen, "invalid %s=\"%s\": expected debug, info, warn or error", o->env, v);
            return -1;
        }
        *(int *)field = (int)lvl;
        return 0;
    }
    }
    return 0;
bad_range:
    snprintf(err, errlen, "invalid %s=\"%s\": expected an integer from %lld to %lld", o->env, v,
             (long long)o->min, (long long)o->max);
    return -1;
}

static void usage(void)
{
    printf("Usage: hookd [--flag value]...\n"
           "hookd %s: a webhook receiver for scale-to-zero platforms.\n\n"
           "Every option is an environment variable or a flag (the flag wins):\n",
           HK_VERSION);
    for (size_t i = 0; i < NOPTS; i++)
        printf("  --%-18s %-24s %s%s%s%s\n", opts[i].flag, opts[i].env, opts[i].help,
               opts[i].def ? " [" : "", opts[i].def ? opts[i].def : "", opts[i].def ? "]" : "");
    printf("  --help, --version\n");
}

/* *_FILE variables (Kubernetes secrets): the value is the file's content
 * without trailing newlines or spaces. Replaces *dst. */
static int read_value_file(const char *var, const char *path, char **dst, char *err, size_t errlen)
{
    FILE *f = fopen(path, "r");
    if (!f) {
        snprintf(err, errlen, "invalid %s=\"%s\": %s", var, path, strerror(errno));
        return -1;
    }
    char buf[8192];
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    int full = !feof(f);
    fclose(f);
    if (full) {
        snprintf(err, errlen, "invalid %s=\"%s\": longer than %zu bytes", var, path, sizeof buf - 1);
        return -1;
    }
    while (n && (buf[n - 1] == '\n' || buf[n - 1] == '\r' || buf[n - 1] == ' '))
        n--;
    buf[n] = 0;
    free(*dst);
    *dst = strdup(buf);
    if (!*dst)
        abort();
    return 0;
}

/* HOOKD_WEBHOOK_SECRET wins over HOOKD_WEBHOOK_SECRET_FILE. */
static int read_secret_file(struct hk_config *c, char *err, size_t errlen)
{
    const char *path = getenv("HOOKD_WEBHOOK_SECRET_FILE");
    if (!path || c->webhook_secret)
        return 0;
    return read_value_file("HOOKD_WEBHOOK_SECRET_FILE", path, &c->webhook_secret, err, errlen);
}

/* DATABASE_URL_FILE and HOOKD_REDIS_URL_FILE: the URL (password included)
 * from a file, such as a Kubernetes secret; the variable itself wins when
 * both are set. HOOKD_METRICS_TOKEN_FILE likewise. */
static int read_url_files(struct hk_config *c, char *err, size_t errlen)
{
    const char *path = c->database_url_file;
    if (path && *path && !(c->database_url && *c->database_url) &&
        read_value_file("DATABASE_URL_FILE", path, &c->database_url, err, errlen) < 0)
        return -1;
    path = c->redis_url_file;
    if (path && *path && !(c->redis_url && *c->redis_url) &&
        read_value_file("HOOKD_REDIS_URL_FILE", path, &c->redis_url, err, errlen) < 0)
        return -1;
    path = getenv("HOOKD_METRICS_TOKEN_FILE");
    if (path && *path && !c->metrics_token &&
        read_value_file("HOOKD_METRICS_TOKEN_FILE", path, &c->metrics_token, err, errlen) < 0)
        return -1;
    return 0;
}

/* LISTEN_PID, LISTEN_FDS and NOTIFY_SOCKET, copied: socket activation
 * removes the first two from the environment once it has read them. A
 * value too long for its copy is taken as absent. */
static void read_service_env(struct hk_config *c)
{
    static const char *const names[3] = {"LISTEN_PID", "LISTEN_FDS", "NOTIFY_SOCKET"};
    const char **dst[3] = {&c->listen_pid_env, &c->listen_fds_env, &c->notify_socket};
    for (int i = 0; i < 3; i++) {
        const char *v = getenv(names[i]);
        *dst[i] = NULL;
        if (v && strlen(v) < sizeof c->env_copy[i]) {
            memcpy(c->env_copy[i], v, strlen(v) + 1);
            *dst[i] = c->env_copy[i];
        }
    }
}

/* A connection string with a password in it: "password" anywhere (the
 * key=value form, or ?password= in a URI), or user:secret@ in a URI. */
static bool url_has_password(const char *u)
{
    if (strstr(u, "password"))
        return true;
    const char *p = strstr(u, "://");
    if (!p)
        return false;
    p += 3;
    const char *at = strrchr(p, '@');
    return at && memchr(p, ':', (size_t)(at - p));
}

const char *hk_env(const char *name)
{
    return getenv(name);
}

int hk_config_load(struct hk_config *c, int argc, char **argv, char *err, size_t errlen)
{
    memset(c, 0, sizeof *c);
    for (size_t i = 0; i < NOPTS; i++)
        if (opts[i].def && set_opt(c, &opts[i], opts[i].def, err, errlen) < 0)
            return HK_CONFIG_ERROR;
    for (size_t i = 0; i < NOPTS; i++) {
        const char *v = getenv(opts[i].env);
        if (v && set_opt(c, &opts[i], v, err, errlen) < 0)
            return HK_CONFIG_ERROR;
    }
    for (int a = 1; a < argc; a++) {
        const char *arg = argv[a];
        if (strcmp(arg, "--help") == 0 || strcmp(arg, "-h") == 0) {
            usage();
            return HK_CONFIG_EXIT;
        }
        if (strcmp(arg, "--version") == 0) {
            printf("hookd %s\n", HK_VERSION);
            return HK_CONFIG_EXIT;
        }
        if (strncmp(arg, "--", 2) != 0) {
            snprintf(err, errlen, "unexpected argument \"%s\" (see --help)", arg);
            return HK_CONFIG_ERROR;
        }
        const char *name = arg + 2;
        const char *eq = strchr(name, '=');
        size_t nlen = eq ? (size_t)(eq - name) : strlen(name);
        const struct opt *o = NULL;
        for (size_t i = 0; i < NOPTS; i++)
            if (strlen(opts[i].flag) == nlen && strncmp(opts[i].flag, name, nlen) == 0)
                o = &opts[i];
        if (!o) {
            snprintf(err, errlen, "unknown flag \"%s\" (see --help)", arg);
            return HK_CONFIG_ERROR;
        }
        const char *v = eq ? eq + 1 : NULL;
        if (!v) {
            if (a + 1 >= argc) {
                snprintf(err, errlen, "flag --%s (%s) needs a value", o->flag, o->env);
                return HK_CONFIG_ERROR;
            }
            v = argv[++a];
        }
        if (set_opt(c, o, v, err, errlen) < 0)
            return HK_CONFIG_ERROR;
        /* Everyone on the host can read a command line (ps, /proc). The
         * value is copied by now: blank it in argv, which shortens the
         * window, and let main warn once the log is set up. */
        if (o->off == OFF(webhook_secret) || o->off == OFF(metrics_token) ||
            ((o->off == OFF(database_url) || o->off == OFF(redis_url)) && url_has_password(v))) {
            c->secret_flag = o->flag;
            memset((char *)v, '*', strlen(v));
        }
    }
    if (read_secret_file(c, err, errlen) < 0 || read_url_files(c, err, errlen) < 0)
        return HK_CONFIG_ERROR;
    if (c->webhook_secret)
        c->webhook_secret_len = strlen(c->webhook_secret);
    if (c->database_url && !*c->database_url) {
        free(c->database_url);
        c->database_url = NULL;
    }
    if (c->redis_url && !*c->redis_url) {
        free(c->redis_url);
        c->redis_url = NULL;
    }
    if (c->metrics_token && !*c->metrics_token) {
        free(c->metrics_token);
        c->metrics_token = NULL;
    }
    if (c->threads == 0)
        c->threads = hk_cpus_available();
    read_service_env(c);
    return HK_CONFIG_RUN;
}

void hk_config_free(struct hk_config *c)
{
    for (size_t i = 0; i < NOPTS; i++)
        if (opts[i].type == T_STR) {
            char **p = (char **)((char *)c + opts[i].off);
            free(*p);
            *p = NULL;
        }
}
