/* SPDX-License-Identifier: MIT
 * Configuration: environment variables with matching --flags, validated at
 * start. A bad value fails fast with one line naming the variable. */
#ifndef HK_CONFIG_H
#define HK_CONFIG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct hk_config {
    char *host;
    int port;                  /* 0 = pick a free port */
    int threads;               /* event loops; 0 = CPUs available */
    char *sqlite_path;
    bool sqlite_sync_full;
    uint32_t sqlite_queue_max; /* writes waiting for the SQLite writer (503 beyond) */
    uint32_t sqlite_busy_ms;   /* SQLite busy timeout: another process's write lock */
    char *database_url;        /* NULL: SQLite */
    char *database_url_file;   /* file holding DATABASE_URL (read when that is unset) */
    uint32_t db_pool;          /* PostgreSQL connections per event loop */
    uint32_t db_queue;         /* requests waiting for PostgreSQL per loop (503 beyond) */
    uint64_t db_timeout_ms;    /* per PostgreSQL query, queueing included */
    uint32_t max_header_bytes;
    uint32_t max_body_bytes;
    uint32_t max_connections;  /* whole process */
    uint64_t header_timeout_ms;
    uint64_t idle_timeout_ms;
    uint64_t drain_timeout_ms;
    uint64_t exit_idle_after_ms;  /* 0: never exit for lack of connections */
    char *webhook_secret;      /* NULL: signatures not required */
    char *sources_path;        /* HOOKD_SOURCES: NULL, no ingress sources (POST /hooks/x is 404) */
    uint32_t ingress_inflight_bytes;
    bool graphql_introspection;
    bool auth_on;              /* HOOKD_AUTH: reads and deletes need a credential */
    char *api_tokens_file;     /* NULL: tokens only from the store */
    uint64_t session_ttl_ms;
    char *redis_url;           /* NULL: sessions in the store */
    char *redis_url_file;
    uint64_t redis_timeout_ms; /* per Redis command */
    char *metrics_token;       /* NULL: /q/metrics is open */
    /* Forwarding, the live feed and retention (docs/forwarding.md). */
    char *k_sink;              /* K_SINK: NULL, see forward_url */
    char *forward_url;         /* HOOKD_FORWARD_URL: NULL and no K_SINK: no forwarding */
    char *forward_mode;        /* "binary" or "structured" (checked by api/forward.c) */
    uint32_t forward_concurrency;
    uint64_t forward_connect_timeout_ms;
    uint64_t forward_timeout_ms;
    uint32_t forward_max_attempts;
    uint64_t forward_max_age_ms;
    uint64_t forward_backoff_ms;
    uint64_t forward_backoff_max_ms;
    bool forward_retry_4xx;
    uint64_t forward_lease_ms;
    uint64_t forward_inflight_bytes;
    uint64_t stream_buffer;
    uint64_t stream_heartbeat_ms;
    uint32_t stream_max_clients;
    uint64_t retention_ms;     /* 0: no age limit */
    uint64_t max_rows;         /* 0: no row cap */
    uint64_t max_bytes;        /* 0: no size cap */
    uint64_t purge_interval_ms;
    uint32_t purge_batch;
    bool retention_keep_undelivered;
    /* The service manager's environment (systemd's protocol), read here
     * so that nothing else reads the environment: NULL when unset. */
    const char *listen_pid_env;    /* LISTEN_PID */
    const char *listen_fds_env;    /* LISTEN_FDS */
    const char *notify_socket;     /* NOTIFY_SOCKET */
    char env_copy[3][128];         /* what those point into */
    const char *secret_flag;   /* a flag that carried a secret on the command line ("webhook-secret"), or NULL */
    size_t webhook_secret_len;
    int log_level;             /* enum hk_log_level */
    int access_log;            /* 1: JSON access log on stderr */
    int metrics_top_sources;   /* source labels per worker in /q/metrics */
    /* Listening sockets inherited through socket activation (not an option:
     * main fills these from LISTEN_FDS); when n_listen_fds > 0, host and
     * port are not bound. */
    int listen_fds[16];
    int n_listen_fds;
};

enum { HK_CONFIG_RUN = 0, HK_CONFIG_EXIT = 1, HK_CONFIG_ERROR = -1 };

/* Fill `c` from defaults, then the environment, then argv (flags win).
 * Returns HK_CONFIG_RUN, HK_CONFIG_EXIT (--help/--version printed on stdout),
 * or HK_CONFIG_ERROR with a one-line message in err. */
int hk_config_load(struct hk_config *c, int argc, char **argv, char *err, size_t errlen);
void hk_config_free(struct hk_config *c);

/* "250ms", "10s", "2m", "1h", "30d", or a plain number of milliseconds. 0 or -1. */
int hk_parse_duration_ms(const char *s, uint64_t *out);
/* "65536", "512KiB" (or K), "64MiB" (M), "2GiB" (G), "1TiB" (T): bytes. 0 or -1. */
int hk_parse_size(const char *s, uint64_t *out);
/* Decimal integer in [min, max], nothing else. 0 or -1. */
int hk_parse_int(const char *s, int64_t min, int64_t max, int64_t *out);
/* hk_parse_int on n bytes that are not NUL-terminated (a query value). */
int hk_parse_int_n(const char *s, size_t n, int64_t min, int64_t max, int64_t *out);
/* An environment variable the configuration refers to by name (a secret
 * given as {env: NAME} in the sources file). The one reader of the
 * environment besides hk_config_load. NULL when unset. */
const char *hk_env(const char *name);
/* CPUs this process may use: affinity mask, capped by the cgroup v2/v1 CPU quota. */
int hk_cpus_available(void);

#endif
