/* SPDX-License-Identifier: MIT
 * Integration-test harness: runs $HOOKD_BIN as a child process on a loopback
 * port in a fresh temporary directory, and talks to it through libcurl or a
 * raw TCP socket. Every wait is bounded, so a broken server fails a test
 * instead of hanging it. Functions named hk_assert_* and most helpers fail
 * the current Criterion test on error; the few that must be usable from
 * worker threads say so and never assert. */
#ifndef HK_HARNESS_H
#define HK_HARNESS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include <curl/curl.h>
#include <jansson.h>

#define HK_MAX_ENV 32
#define HK_MAX_ARGS 16

struct hk_server {
    pid_t pid;                 /* 0 when not running */
    int port;
    int out_fd;                /* read end of the child's stdout, -1 when closed */
    char dir[256];             /* temporary directory, removed by hk_server_cleanup */
    char db_path[300];
    char stderr_path[300];
    char started_line[512];    /* the ready line, without its newline */
    char *env[HK_MAX_ENV];     /* extras given to start, kept for restart */
    char *args[HK_MAX_ARGS];   /* extra argv, kept for restart */
    char pg_schema[64];        /* HOOKD_TEST_STORE=pg: this server's schema, dropped by cleanup */
};

/* True when the suite runs against PostgreSQL (HOOKD_TEST_STORE=pg). Then
 * hk_server_start gives each server a fresh schema on the cluster at
 * $HOOKD_TEST_DATABASE_URL (DATABASE_URL=... with that schema as its
 * search_path; kept across restarts) unless extra_env names DATABASE_URL
 * itself; without that variable the test is skipped. Tests that only make
 * sense with SQLite skip themselves. */
bool hk_store_is_pg(void);
/* The URL `base` (a URI or key=value string) with `schema` as the
 * search_path; caller frees. */
char *hk_pg_url_with_schema(const char *base, const char *schema);

/* Describe what the test is doing now (printf-style); harness failures quote
 * it, so a loop over cases reports which case failed. "" clears it. */
void hk_context(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* Start hookd with PORT=0, HOOKD_HOST=127.0.0.1, HOOKD_THREADS=2, HOOKD_AUTH=off and
 * HOOKD_SQLITE_PATH=<dir>/hookd.db, overridden by `extra_env` (NULL or a
 * NULL-terminated list of "NAME=value"; a bare "NAME" removes the variable).
 * Waits up to 10 s for the ready line and fails the test (quoting stderr)
 * if it does not come. */
void hk_server_start(struct hk_server *s, const char *const *extra_env);
/* Same, with extra command-line arguments (NULL-terminated, may be NULL). */
void hk_server_start_args(struct hk_server *s, const char *const *extra_env,
                          const char *const *args);
/* Start again on the same directory, database and configuration; the server
 * must be stopped. The port usually changes. */
void hk_server_restart(struct hk_server *s);
/* SIGTERM, then wait up to `timeout_ms`. Returns the wait status, or -1 if it
 * did not exit in time (it is then SIGKILLed and reaped). */
int hk_server_stop_within(struct hk_server *s, int timeout_ms);
/* hk_server_stop_within(s, 5000). */
int hk_server_stop(struct hk_server *s);
/* Stop, and fail the test unless hookd exited normally with status 0. */
void hk_server_stop_clean(struct hk_server *s);
/* The end of most tests: the server still answers /q/health/live, then
 * exits 0 on SIGTERM. */
void hk_finish(struct hk_server *s);
/* SIGKILL and reap. */
void hk_server_kill9(struct hk_server *s);
/* Kill if still running, close descriptors and remove the directory (kept
 * when HK_KEEP_TMP is set in the environment), and drop the server's
 * PostgreSQL schema if it has one. Safe on a zeroed struct. */
void hk_server_cleanup(struct hk_server *s);
/* Contents of the server's stderr log so far; caller frees. */
char *hk_server_stderr(const struct hk_server *s);

/* Spawn $HOOKD_BIN with exactly the base environment plus `extra_env` (as
 * hk_server_start) and `args`, without waiting for anything. stdout goes to
 * *out_fd (a pipe), stderr to `stderr_path`. Returns the pid. */
pid_t hk_spawn(const char *dir, const char *const *extra_env, const char *const *args,
               int *out_fd, const char *stderr_path);
/* Like hk_spawn, but runs the program argv[0] (looked up in PATH) with the
 * same environment. With listen_fd >= 0, that socket becomes the child's
 * fd 3 and LISTEN_FDS=1, LISTEN_PID=<the child's pid> are set: socket
 * activation, as a service manager does it. Returns the pid. */
pid_t hk_spawn_cmd(const char *dir, const char *const *extra_env, const char *const *argv, int listen_fd,
                   int *out_fd, const char *stderr_path);
/* waitpid with a deadline. Returns 0 and sets *status, or -1 on timeout
 * (the process is left running). */
int hk_wait_pid(pid_t pid, int timeout_ms, int *status);
/* Read everything from `fd` until EOF or `timeout_ms`; caller frees. */
char *hk_read_all_fd(int fd, int timeout_ms, size_t *len);
/* Run $HOOKD_BIN with `args` (environment as hk_spawn) and wait up to
 * `timeout_ms`. Returns the wait status (-1 on timeout, after killing it);
 * *out and *err receive stdout and stderr (caller frees). */
int hk_run(const char *const *extra_env, const char *const *args, int timeout_ms,
           char **out, char **err);

/* hk_run on the server's store: its HOOKD_SQLITE_PATH (or the DATABASE_URL
 * with its schema on PostgreSQL) and the rest of its extra environment,
 * then `extra_env` (may be NULL). For `hookd token ...` while it runs. */
int hk_server_run(const struct hk_server *s, const char *const *extra_env, const char *const *args,
                  int timeout_ms, char **out, char **err);

/* "http://127.0.0.1:<port><path>", printf-style path. The string lives in a
 * small per-thread ring of buffers: use it before calling hk_url 8 more times. */
const char *hk_url(const struct hk_server *s, const char *path_fmt, ...)
    __attribute__((format(printf, 2, 3)));

/* ---- libcurl requests ---- */

struct hk_req {
    const char *method;           /* NULL: "GET", or "POST" when body is set */
    const char *path;             /* e.g. "/api/webhooks?limit=5" */
    const char *body;             /* NULL: no body */
    size_t body_len;              /* 0 with a body: strlen(body) */
    const char *const *headers;   /* NULL-terminated "Name: value" list, may be NULL */
    bool chunked;                 /* send the body with Transfer-Encoding: chunked */
    bool expect_100;              /* let curl send Expect: 100-continue */
    bool http10;                  /* send HTTP/1.0 */
    long timeout_ms;              /* 0: 10 s */
    const char *source;           /* NULL: any; else the local IPv4 address to connect from,
                                   * e.g. "127.0.0.2" (each of 127/8 is a distinct client
                                   * address on loopback) */
};

struct hk_resp {
    int curl_rc;                  /* CURLcode */
    long status;
    char *heads;                  /* every header block received, status lines included */
    size_t heads_len;
    char *head;                   /* the final response's header block only */
    size_t head_len;
    char *body;                   /* NUL-terminated */
    size_t body_len;
    long num_connects;            /* CURLINFO_NUM_CONNECTS: 0 when a connection was reused */
    bool saw_100;                 /* an HTTP/1.1 100 came before the final response */
    bool head_request;
};

/* A keep-alive capable handle; curl_easy_cleanup() it. */
CURL *hk_curl_new(void);
/* Perform `req` on `h` (NULL: a fresh handle, closed afterwards). Never
 * asserts; thread-safe. Returns the CURLcode (also in r->curl_rc). Unless the
 * request says otherwise, curl's automatic Content-Type and Expect headers
 * are suppressed. */
int hk_request(const struct hk_server *s, CURL *h, const struct hk_req *req, struct hk_resp *r);
/* hk_request, then assert the transfer worked and the response carries the
 * headers every response must have (see hk_assert_common). */
void hk_do(const struct hk_server *s, CURL *h, const struct hk_req *req, struct hk_resp *r);
void hk_get(const struct hk_server *s, const char *path, struct hk_resp *r);
/* POST with Content-Type: application/json. */
void hk_post_json(const struct hk_server *s, const char *path, const char *body, struct hk_resp *r);
void hk_resp_free(struct hk_resp *r);

/* Find header `name` (case-insensitive) in a header block; copies the value,
 * trimmed, into out. Returns the number of occurrences (0: not found, out ""). */
int hk_head_get(const char *head, size_t head_len, const char *name, char *out, size_t outn);
/* hk_head_get on the final response; returns out, or NULL when absent. */
const char *hk_header(const struct hk_resp *r, const char *name, char *out, size_t outn);
/* Does a comma-separated header value list contain `token` (case-insensitive)? */
bool hk_list_has(const char *list, const char *token);

/* Every response has a valid IMF-fixdate Date header, and either
 * Transfer-Encoding: chunked (no Content-Length) or a Content-Length equal to
 * the body received (not checked for HEAD); a 204 has no body. */
void hk_assert_common(const char *head, size_t head_len, long status,
                      size_t body_len, bool head_request);
/* Content-Type is `type` (parameters such as charset allowed). */
void hk_assert_ctype(const struct hk_resp *r, const char *type);
/* status == `status`, application/json, and the body parses. Caller decrefs. */
json_t *hk_assert_json(const struct hk_resp *r, long status);
/* A problem+json error: the status, and type, title, detail strings plus
 * "status" equal to the HTTP status. Caller decrefs. */
json_t *hk_assert_problem(const struct hk_resp *r, long status);
/* A 400 Constraint Violation listing exactly the fields and messages given
 * as n (field, message) pairs, in order. */
void hk_assert_violations(const struct hk_resp *r, int n, ...);
/* A WebhookResponse with these values (payload NULL: JSON null), receivedAt
 * RFC 3339 UTC with 6 decimals within 60 s of now. Returns the id. */
int64_t hk_assert_webhook(json_t *o, const char *source, const char *event_type,
                          const char *payload);
/* o[key] when it is a string, else "(not a string)": for string assertions. */
const char *hk_jstr(json_t *o, const char *key);
/* Does `s` match the POSIX extended regular expression `re`? */
bool hk_matches(const char *s, const char *re);
/* RFC 3339 UTC timestamp ("Z" or "+00:00", any number of decimals) to unix
 * seconds; -1 when malformed. */
double hk_parse_rfc3339(const char *s);

/* POST a webhook and assert 201; returns its id. payload NULL: null. */
int64_t hk_create(const struct hk_server *s, const char *source, const char *event_type,
                  const char *payload);
/* GET /q/health/live on a fresh connection answers 200. */
void hk_assert_alive(const struct hk_server *s);

/* POST `n` webhooks from `nthreads` threads, each on its own keep-alive
 * handle. body_fn(i, buf, bufn) writes the JSON body of webhook i. ids[i]
 * receives the id of a 201, or -status / -1000-CURLcode on failure.
 * Returns the number of 201s. */
int hk_parallel_posts(const struct hk_server *s, int nthreads, int n,
                      void (*body_fn)(int i, char *buf, size_t bufn), int64_t *ids);

/* HMAC-SHA256(key, data) as "sha256=<64 lowercase hex>" into out (72 bytes). */
void hk_hub_signature(const char *key, const void *data, size_t n, char out[72]);

/* ---- raw TCP ---- */

/* Connect to the server (TCP_NODELAY); fails the test on error. */
int hk_tcp_connect(const struct hk_server *s);
/* Connect to 127.0.0.1:port; returns the fd or -errno. Never asserts. */
int hk_tcp_try_connect(int port);
/* hk_tcp_connect from the local address `source` (as hk_req.source; NULL:
 * any); fails the test on error. */
int hk_tcp_connect_from(const struct hk_server *s, const char *source);
/* Send all of it (MSG_NOSIGNAL); returns 0 or -errno. */
int hk_tcp_send(int fd, const void *p, size_t n);
int hk_tcp_sends(int fd, const char *s);
/* Close. (With HK_CORPUS_OUT=<dir> in the environment, the bytes each raw
 * connection sent are saved in <dir>, one file per connection, as fuzz seeds;
 * so is each curl request.) */
void hk_tcp_close(int fd);

#define HK_RAW_MAX 256

struct hk_raw_resp {
    int status;
    const char *head;         /* into hk_raw.buf, head_len bytes incl. the blank line */
    size_t head_len;
    char *body;               /* decoded (de-chunked), NUL-terminated, owned */
    size_t body_len;
    bool chunked;
    bool interim;             /* 1xx */
};

struct hk_raw {
    char *buf;                /* everything read, NUL-terminated */
    size_t len;
    bool closed;              /* EOF or connection reset seen */
    bool reset;               /* ECONNRESET seen */
    bool timed_out;
    bool malformed;           /* bytes that are not a valid response */
    int n;                    /* responses parsed (1xx included) */
    int nfinal;               /* final (non-1xx) responses */
    struct hk_raw_resp r[HK_RAW_MAX];
    unsigned head_mask;       /* bit i: final response i answers a HEAD */
};

/* Read from `fd` into `raw` (appending) until `nfinal` final responses have
 * been parsed (0: until the peer closes), the peer closes, or `timeout_ms`
 * passes. Responses are re-parsed from the start of raw->buf each time.
 * Set raw->head_mask before the first read when HEAD requests are involved. */
void hk_tcp_read(int fd, struct hk_raw *raw, int nfinal, int timeout_ms);
/* Read until raw->buf contains `needle`, close or timeout. Returns true if found. */
bool hk_tcp_read_until(int fd, struct hk_raw *raw, const char *needle, int timeout_ms);
/* Keep reading (appending to raw) until the peer closes; true when it closes
 * (EOF or reset) within `timeout_ms`. */
bool hk_tcp_wait_closed(int fd, struct hk_raw *raw, int timeout_ms);
void hk_raw_free(struct hk_raw *raw);
/* Header of response i (see hk_head_get); NULL when absent. */
const char *hk_raw_header(const struct hk_raw *raw, int i, const char *name, char *out, size_t outn);
/* The i-th final response (skipping 1xx); NULL if not parsed. */
const struct hk_raw_resp *hk_raw_final(const struct hk_raw *raw, int i);

/* Milliseconds on the monotonic clock. */
int64_t hk_now_ms(void);
void hk_sleep_ms(int ms);

/* ---- the child process seen from /proc (hostile-client tests) ---- */

/* Start hookd like hk_server_start, but through `wrapper`, a command that
 * ends by exec'ing the program given after it (NULL-terminated, e.g.
 * {"prlimit", "--nofile=256:256", "--", NULL}); $HOOKD_BIN is appended. The
 * wrapper must exec, not fork, so s->pid is hookd's own pid. Fails the test
 * when hookd does not start. hk_server_restart runs hookd without it. */
void hk_server_start_wrapped(struct hk_server *s, const char *const *extra_env,
                             const char *const *wrapper);
/* Resident set size of `pid` in KiB (VmRSS in /proc/<pid>/status); -1 when
 * it cannot be read. Never asserts; thread-safe. */
long hk_proc_rss_kb(pid_t pid);
/* CPU time `pid` has used, user plus system, in seconds (/proc/<pid>/stat);
 * -1 when it cannot be read. Never asserts. */
double hk_proc_cpu_s(pid_t pid);
/* "Max open files" of `pid` (/proc/<pid>/limits): 0 and *soft, *hard
 * (-1 for unlimited), or -1 when it cannot be read. Never asserts. */
int hk_proc_nofile(pid_t pid, long *soft, long *hard);
/* Size of the server's stderr log in bytes (-1 when missing). */
long long hk_server_stderr_size(const struct hk_server *s);

#endif
