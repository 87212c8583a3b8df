/* SPDX-License-Identifier: MIT
 * Fills the libcurl function table: dlopen + dlsym at run time, or the real
 * symbols when built with -DHK_CURL_STATIC (see curl_api.h); then libcurl's
 * global init, once per process. */
#include "outbound/curl_api.h"

#include <pthread.h>
#include <stdio.h>

static char load_err[256];
static int load_rc;

#ifdef HK_CURL_STATIC

#define HK_CURL_INIT(ret, name, params) .name = name,
struct hk_curl_api hk_curl = {HK_CURL_FUNCS(HK_CURL_INIT)};
#undef HK_CURL_INIT

static int load_symbols(void)
{
    return 0;
}

#else

#include <dlfcn.h>

struct hk_curl_api hk_curl;

/* Debian's libcurl4 (the OpenSSL flavour) ships libcurl.so.4; the
 * unversioned name needs a -dev package. */
static const char *const libnames[] = {"libcurl.so.4", "libcurl.so"};

static int load_symbols(void)
{
    void *h = NULL;
    for (size_t i = 0; i < sizeof libnames / sizeof libnames[0] && !h; i++)
        h = dlopen(libnames[i], RTLD_NOW | RTLD_LOCAL);
    if (!h) {
        const char *e = dlerror();
        snprintf(load_err, sizeof load_err, "cannot load libcurl (install libcurl4): %s",
                 e ? e : "not found");
        return -1;
    }
    /* The handle is never closed: libcurl's global state and its cached
     * connections live as long as the process. */
#define HK_CURL_SYM(ret, name, params)                                                 \
    *(void **)&hk_curl.name = dlsym(h, #name);                                         \
    if (!hk_curl.name) {                                                               \
        snprintf(load_err, sizeof load_err, "libcurl has no %s", #name);               \
        return -1;                                                                     \
    }
    HK_CURL_FUNCS(HK_CURL_SYM)
#undef HK_CURL_SYM
    return 0;
}

#endif

static void load_once(void)
{
    if (load_symbols() < 0) {
        load_rc = -1;
        return;
    }
    const curl_version_info_data *v = hk_curl.curl_version_info(CURLVERSION_NOW);
    if (!v || v->version_num < HK_CURL_MIN_VERSION) {
        snprintf(load_err, sizeof load_err, "libcurl %s is too old (7.85 or newer is needed)",
                 v && v->version ? v->version : "(unknown)");
        load_rc = -1;
        return;
    }
    /* Not thread-safe in older libcurls and slow (it loads OpenSSL's
     * configuration), hence once per process, here. */
    CURLcode rc = hk_curl.curl_global_init(CURL_GLOBAL_DEFAULT);
    if (rc != CURLE_OK) {
        snprintf(load_err, sizeof load_err, "curl_global_init failed: %s",
                 hk_curl.curl_easy_strerror(rc));
        load_rc = -1;
    }
}

int hk_curl_load(char *err, size_t errlen)
{
    static pthread_once_t once = PTHREAD_ONCE_INIT;
    pthread_once(&once, load_once);
    if (load_rc < 0 && err && errlen)
        snprintf(err, errlen, "%s", load_err);
    return load_rc;
}
