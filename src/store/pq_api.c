/* SPDX-License-Identifier: MIT
 * Fills the libpq function table: dlopen + dlsym at run time, or the real
 * symbols when built with -DHK_PQ_STATIC (see pq_api.h). */
#include "store/pq_api.h"

#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>

/* Set by hk_pq_use: the table came from a test, libpq is not loaded. */
static bool given;

void hk_pq_use(const struct hk_pq_api *api)
{
    hk_pq = *api;
    given = true;
}

#ifdef HK_PQ_STATIC

#define HK_PQ_INIT(ret, name, params) .name = name,
struct hk_pq_api hk_pq = {HK_PQ_FUNCS(HK_PQ_INIT)};
#undef HK_PQ_INIT

int hk_pq_load(char *err, size_t errlen)
{
    (void)err;
    (void)errlen;
    (void)given;   /* the table is always there */
    return 0;
}

#else

#include <dlfcn.h>

struct hk_pq_api hk_pq;

/* Debian's libpq5 ships libpq.so.5; the unversioned name needs libpq-dev. */
static const char *const libnames[] = {"libpq.so.5", "libpq.so"};

static char load_err[256];
static int load_rc;

static void load_once(void)
{
    void *h = NULL;
    for (size_t i = 0; i < sizeof libnames / sizeof libnames[0] && !h; i++)
        h = dlopen(libnames[i], RTLD_NOW | RTLD_LOCAL);
    if (!h) {
        const char *e = dlerror();
        snprintf(load_err, sizeof load_err, "cannot load libpq (install libpq5): %s",
                 e ? e : "not found");
        load_rc = -1;
        return;
    }
    /* The handle is never closed: connections live as long as the process. */
#define HK_PQ_SYM(ret, name, params)                                                   \
    *(void **)&hk_pq.name = dlsym(h, #name);                                           \
    if (!hk_pq.name) {                                                          \
        snprintf(load_err, sizeof load_err, "libpq has no %s (libpq 14 or newer is "   \
                 "needed for pipeline mode)", #name);                                  \
        load_rc = -1;                                                                  \
        return;                                                                        \
    }
    HK_PQ_FUNCS(HK_PQ_SYM)
#undef HK_PQ_SYM
}

int hk_pq_load(char *err, size_t errlen)
{
    static pthread_once_t once = PTHREAD_ONCE_INIT;
    if (given)
        return 0;
    pthread_once(&once, load_once);
    if (load_rc < 0)
        snprintf(err, errlen, "%s", load_err);
    return load_rc;
}

#endif
