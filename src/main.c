/* SPDX-License-Identifier: MIT
 * hookd's entry point: read the configuration, open the store, start one
 * event loop per thread, print the "started in" line, and stop cleanly on
 * SIGTERM/SIGINT. */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <uv.h>

#include "api/api.h"
#include "config.h"
#include "core/clock.h"
#include "core/hmac.h"
#include "core/log.h"
#include "hk_build.h"
#include "http/server.h"
#include "store/store.h"

/* The earliest moment hookd's own code can observe: constructors run right
 * after the dynamic loader has mapped and relocated the shared libraries. */
static uint64_t t_start;
__attribute__((constructor(101))) static void mark_start(void)
{
    t_start = hk_mono_ns();
}

static struct hk_server *server;
static int stop_signal;

static void on_signal(uv_signal_t *h, int signum)
{
    stop_signal = signum;
    hk_info("stopping", "\"signal\":\"%s\"", strsignal(signum));
    uv_close((uv_handle_t *)h->data, NULL);
    uv_close((uv_handle_t *)h, NULL);
}

int main(int argc, char **argv)
{
    struct hk_config cfg;
    struct hk_store *store = NULL;
    char err[512];
    int rc = 1;
    int cr = hk_config_load(&cfg, argc, argv, err, sizeof err);
    if (cr == HK_CONFIG_EXIT) {
        rc = 0;
        goto out;
    }
    if (cr == HK_CONFIG_ERROR) {
        fprintf(stderr, "hookd: %s\n", err);
        rc = 2;
        goto out;
    }
    hk_log_set_level((enum hk_log_level)cfg.log_level);
    signal(SIGPIPE, SIG_IGN);
    if (cfg.database_url) {
        fprintf(stderr, "hookd: DATABASE_URL is set, but this build has no PostgreSQL store yet\n");
        rc = 2;
        goto out;
    }
    if (cfg.webhook_secret && hk_hmac_init(err, sizeof err) < 0) {
        fprintf(stderr, "hookd: %s\n", err);
        rc = 2;
        goto out;
    }
    store = hk_sqlite_open(cfg.sqlite_path, cfg.sqlite_sync_full, err, sizeof err);
    if (!store) {
        hk_error("cannot open the store", "\"backend\":\"sqlite\",\"path\":\"%s\",\"error\":\"%s\"",
                 cfg.sqlite_path, err);
        goto out;
    }
    uv_loop_t *loop = uv_default_loop();
    uv_signal_t sigterm, sigint;
    uv_signal_init(loop, &sigterm);
    uv_signal_init(loop, &sigint);
    sigterm.data = &sigint;
    sigint.data = &sigterm;
    uv_signal_start(&sigterm, on_signal, SIGTERM);
    uv_signal_start(&sigint, on_signal, SIGINT);

    int port = 0;
    if (hk_server_start(&server, &cfg, store, t_start, &port, err, sizeof err) < 0) {
        hk_error("cannot start", "\"error\":\"%s\"", err);
        uv_close((uv_handle_t *)&sigterm, NULL);
        uv_close((uv_handle_t *)&sigint, NULL);
        uv_run(loop, UV_RUN_DEFAULT);
        goto out;
    }
    double secs = (double)(hk_mono_ns() - t_start) / 1e9;
    int v6 = strchr(cfg.host, ':') != NULL;
    printf("hookd %s started in %.6fs. Listening on: http://%s%s%s:%d\n", HK_VERSION, secs, v6 ? "[" : "",
           cfg.host, v6 ? "]" : "", port);
    fflush(stdout);
    hk_info("started", "\"version\":\"%s\",\"port\":%d,\"eventLoops\":%d,\"store\":\"sqlite\",\"startedInMs\":%.3f",
            HK_VERSION, port, cfg.threads, secs * 1000);

    uv_run(loop, UV_RUN_DEFAULT);
    hk_server_stop(server);
    hk_server_free(server);
    rc = 0;
    hk_info("stopped", NULL);
out:
    if (store)
        store->vt->close(store);
    uv_loop_close(uv_default_loop());
    hk_config_free(&cfg);
    return rc;
}
