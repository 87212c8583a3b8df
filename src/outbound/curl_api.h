/* SPDX-License-Identifier: MIT
 * libcurl behind a table of function pointers. hookd does not link libcurl:
 * the table is filled with dlopen("libcurl.so.4") + dlsym the first time a
 * client is opened, so a hookd that forwards nothing never maps libcurl and
 * what it drags in (OpenSSL's libssl, nghttp2, libssh2, LDAP, ...). Built with
 * -DHK_CURL_STATIC, the table points at the real functions instead and the
 * binary must link libcurl itself. */
#ifndef HK_CURL_API_H
#define HK_CURL_API_H

#include <stddef.h>

/* curl.h's type-checking macros rewrite every call spelled
 * curl_easy_setopt(...), which a call through the table
 * (hk_curl.curl_easy_setopt(...)) also is. Without them curl.h keeps plain
 * three-argument macros, which leave such calls alone; outbound/client.c
 * passes option values through typed helpers instead. */
#ifndef CURL_DISABLE_TYPECHECK
#define CURL_DISABLE_TYPECHECK 1
#endif
#include <curl/curl.h>

/* The oldest libcurl the client works with: CURLOPT_PROTOCOLS_STR (7.85). */
#define HK_CURL_MIN_VERSION 0x075500

/* X(return type, name, parameter list): every libcurl function hookd calls. */
#define HK_CURL_FUNCS(X)                                                                         \
    X(CURLcode, curl_global_init, (long flags))                                                  \
    X(curl_version_info_data *, curl_version_info, (CURLversion age))                            \
    X(const char *, curl_easy_strerror, (CURLcode code))                                         \
    X(CURL *, curl_easy_init, (void))                                                            \
    X(void, curl_easy_cleanup, (CURL *curl))                                                     \
    X(CURLcode, curl_easy_setopt, (CURL *curl, CURLoption option, ...))                          \
    X(CURLcode, curl_easy_getinfo, (CURL *curl, CURLINFO info, ...))                             \
    X(CURLM *, curl_multi_init, (void))                                                          \
    X(CURLMcode, curl_multi_cleanup, (CURLM *multi))                                             \
    X(CURLMcode, curl_multi_setopt, (CURLM *multi, CURLMoption option, ...))                     \
    X(CURLMcode, curl_multi_add_handle, (CURLM *multi, CURL *curl))                              \
    X(CURLMcode, curl_multi_remove_handle, (CURLM *multi, CURL *curl))                           \
    X(CURLMcode, curl_multi_socket_action,                                                       \
      (CURLM *multi, curl_socket_t s, int ev_bitmask, int *running_handles))                     \
    X(CURLMsg *, curl_multi_info_read, (CURLM *multi, int *msgs_in_queue))                       \
    X(CURLMcode, curl_multi_assign, (CURLM *multi, curl_socket_t sockfd, void *sockp))           \
    X(struct curl_slist *, curl_slist_append, (struct curl_slist *list, const char *string))     \
    X(void, curl_slist_free_all, (struct curl_slist *list))

#define HK_CURL_FIELD(ret, name, params) ret(*name) params;
struct hk_curl_api {
    HK_CURL_FUNCS(HK_CURL_FIELD)
};
#undef HK_CURL_FIELD

/* The table. Valid (non-NULL entries) once hk_curl_load() returned 0. */
extern struct hk_curl_api hk_curl;

/* Fill hk_curl and run curl_global_init, once per process; later calls
 * return the first result. Thread-safe. Returns 0, or -1 with a one-line
 * reason in err (libcurl missing, too old, or its global init failed). */
int hk_curl_load(char *err, size_t errlen);

#endif
