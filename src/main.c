/* SPDX-License-Identifier: MIT
 * hookd's entry point: read the configuration, open the store, start one
 * event loop per thread, print the "started in" line, and stop cleanly on
 * SIGTERM/SIGINT. */
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>
#include <uv.h>

#include "api/api.h"
#include "core/config.h"
#include "core/buf.h"
#include "core/clock.h"
#include "core/hmac.h"
#include "core/log.h"
#include "core/sd.h"
#include "hk_build.h"
#include "http/server.h"
#include "ingress/cli.h"
#include "json/webhook_json.h"
#include "manifest.h"
#include "store/pg.h"
#include "store/store.h"

/* The earliest moment hookd's own code can observe: constructors run right
 * after the dynamic loader has mapped and relocated the shared libraries. */
static uint64_t t_start;
__attribute__((constructor(101))) static void mark_start(void)
{
    t_start = hk_mono_ns();
}

static struct hk_server *server;

/* HOOKD_EXIT_IDLE_AFTER: the main loop samples the server's connection
 * counters; a spell with none open and none accepted that lasts the
 * configured time ends the process like SIGTERM does. */
static uv_timer_t idle_timer;
static bool idle_timer_on, idle_exit;
static uint64_t idle_after_ms, idle_since_ms;
static unsigned long idle_accepted;
static uv_signal_t *signals[2];
static uv_signal_t *hup;           /* SIGHUP: reload HOOKD_SOURCES */
static struct hk_api *the_api;

/* Block SIGTERM and SIGINT on the calling thread; *old gets the mask before. */
static void block_stop_signals(sigset_t *old)
{
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, SIGTERM);
    sigaddset(&set, SIGINT);
    pthread_sigmask(SIG_BLOCK, &set, old);
}

/* The backstop of a stop: whatever still runs when the drain timeout and
 * one more second have passed (a store call stuck behind a lock, work in
 * the thread pool) does not hold the exit up. Nothing acknowledged is
 * lost: a 2xx goes out only after its commit. */
static uint64_t stop_deadline_ms;

static void *stop_watchdog(void *arg)
{
    (void)arg;
    struct timespec ts = {(time_t)(stop_deadline_ms / 1000), (long)(stop_deadline_ms % 1000) * 1000000L};
    while (nanosleep(&ts, &ts) != 0)
        ;
    hk_error("stopping took longer than the drain timeout allows, exiting now",
             "\"drainTimeoutMs\":%llu", (unsigned long long)(stop_deadline_ms - 1000));
    _exit(1);
    return NULL;
}

static void start_watchdog(uint64_t drain_timeout_ms)
{
    pthread_t t;
    pthread_attr_t a;
    stop_deadline_ms = drain_timeout_ms + 1000;
    pthread_attr_init(&a);
    pthread_attr_setdetachstate(&a, PTHREAD_CREATE_DETACHED);
    pthread_attr_setstacksize(&a, 64 * 1024);
    if (pthread_create(&t, &a, stop_watchdog, NULL) != 0)
        hk_warn("cannot start the stop watchdog", NULL);
    pthread_attr_destroy(&a);
}

static uint64_t drain_timeout_ms;

static void begin_stop(void)
{
    /* Closing the handles restores the default action, and a second SIGTERM
     * (a supervisor repeating itself) must not cut the drain short and turn
     * exit 0 into death by signal: the signals wait, blocked, until SIGTERM
     * is ignored. The other threads keep them blocked from their start.
     * SIGINT keeps its default, so a second Ctrl-C still ends an
     * interactive run at once. */
    sigset_t old;
    block_stop_signals(&old);
    for (int i = 0; i < 2; i++)
        if (signals[i] && !uv_is_closing((uv_handle_t *)signals[i]))
            uv_close((uv_handle_t *)signals[i], NULL);
    if (hup && !uv_is_closing((uv_handle_t *)hup))
        uv_close((uv_handle_t *)hup, NULL);
    signal(SIGTERM, SIG_IGN);
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    hk_sd_notify("STOPPING=1");
    if (idle_timer_on && !uv_is_closing((uv_handle_t *)&idle_timer))
        uv_close((uv_handle_t *)&idle_timer, NULL);
    start_watchdog(drain_timeout_ms);
    hk_server_shutdown(server, idle_exit);
}

static void on_signal(uv_signal_t *h, int signum)
{
    (void)h;
    hk_info("stopping", "\"signal\":\"%s\"", strsignal(signum));
    begin_stop();
}

static void log_failure(const char *msg, const char *const *fields);

/* SIGHUP: read the sources file again. A bad file keeps the sources in
 * use; either way one line says what happened. */
static void on_hup(uv_signal_t *h, int signum)
{
    (void)h;
    (void)signum;
    char err[512];
    if (hk_api_sources_load(the_api, err, sizeof err) < 0)
        log_failure("sources not reloaded; the previous ones stay in use", (const char *const[]){"error", err, NULL});
    else
        hk_info("sources reloaded", NULL);
}

static void on_idle_check(uv_timer_t *t)
{
    unsigned open;
    unsigned long accepted;
    uint64_t now = uv_now(t->loop);
    hk_server_activity(server, &open, &accepted);
    if (open || accepted != idle_accepted) {
        idle_accepted = accepted;
        idle_since_ms = now;
        return;
    }
    if (now - idle_since_ms < idle_after_ms)
        return;
    idle_exit = true;
    hk_info("stopping", "\"reason\":\"idle\",\"idleMs\":%llu", (unsigned long long)(now - idle_since_ms));
    begin_stop();
}

/* One error line; `fields` are key/value string pairs ending with NULL,
 * each value JSON-escaped (paths and messages may hold quotes). */
static void log_failure(const char *msg, const char *const *fields)
{
    struct hk_buf b = HK_BUF_INIT;
    for (int i = 0; fields[i] && fields[i + 1]; i += 2) {
        hk_buf_puts(&b, i ? ",\"" : "\"");
        hk_buf_puts(&b, fields[i]);
        hk_buf_puts(&b, "\":");
        hk_buf_put_json_str(&b, fields[i + 1], strlen(fields[i + 1]));
    }
    hk_buf_putc(&b, 0);
    hk_error(msg, "%s", b.p);
    hk_buf_free(&b);
}

/* Descriptors: the soft limit goes up to the hard one, and the connection
 * limit comes down to what is left after a reserve for everything else
 * (listeners, loops, store connections and files, logs). Returns true
 * when max_connections was lowered. */
static bool fit_fd_limit(struct hk_config *cfg, rlim_t *limit)
{
    struct rlimit rl;
    *limit = 0;
    if (getrlimit(RLIMIT_NOFILE, &rl) != 0)
        return false;
    if (rl.rlim_cur < rl.rlim_max) {
        struct rlimit want = rl;
        /* An unlimited hard limit is not a value the kernel takes here. */
        want.rlim_cur = rl.rlim_max == RLIM_INFINITY ? 1048576 : rl.rlim_max;
        if (setrlimit(RLIMIT_NOFILE, &want) == 0)
            rl.rlim_cur = want.rlim_cur;
    }
    *limit = rl.rlim_cur;
    unsigned loops = (unsigned)(cfg->threads > cfg->n_listen_fds ? cfg->threads : cfg->n_listen_fds);
    rlim_t reserve = 32 + (rlim_t)loops * (8 + (cfg->database_url ? cfg->db_pool : 0));
    rlim_t room = rl.rlim_cur > reserve + 1 ? rl.rlim_cur - reserve : 1;
    if (cfg->max_connections <= room)
        return false;
    cfg->max_connections = (unsigned)room;
    return true;
}

/* The PostgreSQL store; on failure, one log line (password redacted). */
static struct hk_store *open_pg(const struct hk_config *cfg, char *err, size_t errlen)
{
    /* hk_server_start runs at least one loop per inherited socket. */
    int loops = cfg->threads > cfg->n_listen_fds ? cfg->threads : cfg->n_listen_fds;
    struct hk_pg_config pc = {cfg->database_url, cfg->db_pool, cfg->db_queue, cfg->db_timeout_ms,
                              (unsigned)loops};
    struct hk_store *store = hk_pg_open(&pc, err, errlen);
    if (store)
        return store;
    log_failure("cannot open the store", (const char *const[]){"backend", "postgresql", "error", err, NULL});
    return NULL;
}

/* PostgreSQL when DATABASE_URL is set, else SQLite; NULL after one log line. */
static struct hk_store *open_store(const struct hk_config *cfg, char *err, size_t errlen)
{
    if (cfg->database_url)
        return open_pg(cfg, err, errlen);
    struct hk_sqlite_opts so = {.path = cfg->sqlite_path, .sync_full = cfg->sqlite_sync_full,
                                .queue_max = cfg->sqlite_queue_max, .busy_ms = cfg->sqlite_busy_ms};
    struct hk_store *store = hk_sqlite_open(&so, err, errlen);
    if (!store)
        log_failure("cannot open the store",
                    (const char *const[]){"backend", "sqlite", "path", cfg->sqlite_path, "error", err, NULL});
    return store;
}

/* Configuration, logging, inherited sockets and descriptor limits. Returns
 * -1 to go on, else the exit status (0 after --help or --version). */
static int configure(struct hk_config *cfg, int argc, char **argv, bool *capped)
{
    char err[512];
    int cr = hk_config_load(cfg, argc, argv, err, sizeof err);
    if (cr == HK_CONFIG_EXIT)
        return 0;
    if (cr == HK_CONFIG_ERROR) {
        fprintf(stderr, "hookd: %s\n", err);
        return 2;
    }
    hk_log_set_level((enum hk_log_level)cfg->log_level);
    hk_sd_notify_socket(cfg->notify_socket);
    if (cfg->secret_flag)
        hk_warn("a secret was given on the command line, where other users can read it (ps, /proc): "
                "use the environment or a file instead (HOOKD_WEBHOOK_SECRET_FILE, DATABASE_URL_FILE)",
                "\"flag\":\"--%s\"", cfg->secret_flag);
    cfg->n_listen_fds = hk_sd_listen_fds(cfg->listen_pid_env, cfg->listen_fds_env, cfg->listen_fds,
                                         HK_SD_MAX_LISTEN_FDS, err, sizeof err);
    if (cfg->n_listen_fds < 0) {
        fprintf(stderr, "hookd: %s\n", err);
        cfg->n_listen_fds = 0;
        return 2;
    }
    rlim_t fd_limit;
    unsigned max_conn_asked = cfg->max_connections;
    *capped = fit_fd_limit(cfg, &fd_limit);
    if (*capped)
        hk_warn("max connections lowered to fit the file descriptor limit",
                "\"maxConnections\":%u,\"configured\":%u,\"fdLimit\":%llu", cfg->max_connections, max_conn_asked,
                (unsigned long long)fd_limit);
    if (cfg->webhook_secret && hk_hmac_init(err, sizeof err) < 0) {
        fprintf(stderr, "hookd: %s\n", err);
        return 2;
    }
    return -1;
}

/* SIGTERM and SIGINT on loop 0. The handles live in main's frame until
 * hk_server_run returns. */
static void watch_signals(uv_loop_t *loop, uv_signal_t sig[2], bool reload_on_hup)
{
    uv_signal_init(loop, &sig[0]);
    uv_signal_init(loop, &sig[1]);
    signals[0] = &sig[0];
    signals[1] = &sig[1];
    uv_signal_start(&sig[0], on_signal, SIGTERM);
    uv_signal_start(&sig[1], on_signal, SIGINT);
    if (reload_on_hup) {
        static uv_signal_t h;
        uv_signal_init(loop, &h);
        uv_signal_start(&h, on_hup, SIGHUP);
        hup = &h;
    }
}

/* HOOKD_EXIT_IDLE_AFTER: sample the connection counters on loop 0. */
static void watch_idle(uv_loop_t *loop, uint64_t after_ms)
{
    idle_after_ms = after_ms;
    uv_update_time(loop);
    idle_since_ms = uv_now(loop);
    uint64_t every = idle_after_ms / 10;
    every = every < 10 ? 10 : every > 1000 ? 1000 : every;
    uv_timer_init(loop, &idle_timer);
    uv_timer_start(&idle_timer, on_idle_check, every, every);
    idle_timer_on = true;
}

/* The ready line on stdout, READY=1 for a service manager, the started
 * log line: in that order, so that whoever waits for one sees the others. */
static void announce(const struct hk_config *cfg, int port, const char *backend, bool capped)
{
    double secs = (double)(hk_mono_ns() - t_start) / 1e9;
    /* With inherited sockets, the address is the service manager's choice. */
    char host[64];
    snprintf(host, sizeof host, "%s", cfg->host);
    if (cfg->n_listen_fds > 0 && hk_sd_sockname(cfg->listen_fds[0], host, sizeof host, &port) < 0)
        snprintf(host, sizeof host, "%s", "unknown");
    bool v6 = strchr(host, ':');
    printf("hookd %s started in %.6fs. Listening on: http://%s%s%s:%d\n", HK_VERSION, secs, v6 ? "[" : "", host,
           v6 ? "]" : "", port);
    fflush(stdout);
    char status[160];
    snprintf(status, sizeof status, "READY=1\nSTATUS=Listening on http://%s%s%s:%d%s", v6 ? "[" : "", host,
             v6 ? "]" : "", port, cfg->n_listen_fds > 0 ? " (socket activation)" : "");
    hk_sd_notify(status);
    hk_info("started",
            "\"version\":\"%s\",\"port\":%d,\"eventLoops\":%d,\"store\":\"%s\",\"startedInMs\":%.3f,"
            "\"maxConnections\":%u%s",
            HK_VERSION, port, cfg->threads, backend, secs * 1000, cfg->max_connections,
            capped ? ",\"maxConnectionsCapped\":\"file descriptor limit\"" : "");
}

/* `hookd token ...`: the configuration from the environment only (the
 * verb's flags are its own), the store it names, the command. */
static int token_main(int argc, char **argv)
{
    struct hk_config cfg;
    char err[512];
    char *none[] = {argv[0], NULL};
    int rc = hk_config_load(&cfg, 1, none, err, sizeof err);
    if (rc != HK_CONFIG_RUN) {
        fprintf(stderr, "hookd: %s\n", err);
        hk_config_free(&cfg);
        return 2;
    }
    hk_log_set_level((enum hk_log_level)cfg.log_level);
    struct hk_store *store = open_store(&cfg, err, sizeof err);
    if (!store) {
        hk_config_free(&cfg);
        return 1;
    }
    rc = hk_api_token_cli(&cfg, store, argc - 2, argv + 2);
    store->vt->close(store);
    hk_config_free(&cfg);
    return rc;
}

int main(int argc, char **argv)
{
    struct hk_config cfg;
    struct hk_store *store = NULL;
    struct hk_api *api = NULL;
    char err[512];
    bool capped = false;
    if (argc > 1 && strcmp(argv[1], "manifest") == 0)
        return hk_manifest_main(argc - 1, argv + 1, stdout);
    if (argc > 1 && strcmp(argv[1], "token") == 0)
        return token_main(argc, argv);
    if (argc > 1 && (strcmp(argv[1], "sign") == 0 || strcmp(argv[1], "verify") == 0))
        return hk_ingress_cli(argc - 1, argv + 1, hk_env("HOOKD_SOURCES"));
    int rc = configure(&cfg, argc, argv, &capped);
    if (rc >= 0)
        goto out;
    rc = 1;
    signal(SIGPIPE, SIG_IGN);
    /* SIGTERM/SIGINT wait until the loop can take them; the threads started
     * meanwhile inherit the mask, so the main thread gets them. */
    sigset_t old_mask;
    block_stop_signals(&old_mask);
    hk_json_init();
    store = open_store(&cfg, err, sizeof err);
    if (!store)
        goto out;
    int port = 0;
    api = hk_api_new(&cfg, store, t_start);
    the_api = api;
    if (hk_api_prepare(api, err, sizeof err) < 0 || hk_api_sources_load(api, err, sizeof err) < 0 ||
        hk_api_start_outbound(api, err, sizeof err) < 0) {
        log_failure("cannot start", (const char *const[]){"error", err, NULL});
        rc = 2;
        goto out;
    }
    if (hk_server_start(&server, &cfg, hk_api_app(api), &port, err, sizeof err) < 0) {
        log_failure("cannot start", (const char *const[]){"error", err, NULL});
        goto out;
    }
    drain_timeout_ms = cfg.drain_timeout_ms;
    uv_loop_t *loop = hk_server_loop(server);
    uv_signal_t sig[2];
    watch_signals(loop, sig, cfg.sources_path != NULL);
    pthread_sigmask(SIG_SETMASK, &old_mask, NULL);
    announce(&cfg, port, store->vt->name, capped);
    if (!cfg.auth_on)
        hk_warn("access control is off (HOOKD_AUTH=off): anyone who reaches hookd can read and delete webhooks",
                NULL);
    if (cfg.exit_idle_after_ms > 0)
        watch_idle(loop, cfg.exit_idle_after_ms);
    hk_server_run(server);
    hk_server_join(server);
    hk_server_free(server);
    rc = 0;
    hk_info("stopped", NULL);
out:
    if (api)
        hk_api_free(api);
    if (store)
        store->vt->close(store);
    hk_config_free(&cfg);
    return rc;
}
