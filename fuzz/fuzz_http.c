/* SPDX-License-Identifier: MIT
 * libFuzzer target: arbitrary bytes through the real request path in memory
 * (llhttp -> router -> handlers -> SQLite store on a temp file -> response).
 * A leading control byte picks how the rest is split into reads, so request
 * boundaries falling inside reads are explored too. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "api/api.h"
#include "core/config.h"
#include "http/memio.h"
#include "store/store.h"

static struct hk_config cfg;
static struct hk_worker w;
static struct hk_api *api;
static struct hk_store *store;

static void setup(void)
{
    char err[256];
    char *argv[] = {"hookd", NULL};
    if (hk_config_load(&cfg, 1, argv, err, sizeof err) != HK_CONFIG_RUN)
        abort();
    cfg.max_header_bytes = 4096;
    cfg.max_body_bytes = 8192;
    static char dir[] = "/tmp/hookd-fuzz-XXXXXX";
    if (!mkdtemp(dir))
        abort();
    char path[64];
    snprintf(path, sizeof path, "%s/fuzz.db", dir);
    store = hk_sqlite_open(&(struct hk_sqlite_opts){.path = path}, err, sizeof err);
    api = hk_api_new(&cfg, store, 0);
    if (!store || hk_worker_init(&w, &cfg, hk_api_app(api)) < 0)
        abort();
    hk_api_init();
    /* The file is reopened by the process only; remove the name at once. */
    char cmd[96];
    snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
    (void)!system(cmd);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (!store)
        setup();
    if (size == 0)
        return 0;
    /* A leading control byte (< 0x20) sets the read size; raw HTTP seeds
     * (starting with a method) are fed in one read. */
    size_t step = size;
    if (data[0] < 0x20) {
        step = (size_t)data[0] + 1;
        data++;
        size--;
    }
    struct hk_memio m;
    hk_memio_init(&m, &w);
    for (size_t off = 0; off < size && !m.closed; off += step) {
        size_t n = size - off < step ? size - off : step;
        hk_memio_feed(&m, data + off, n);
        hk_memio_settle(&m);
    }
    hk_session_eof(&m.s, false);
    hk_memio_free(&m);
    return 0;
}
