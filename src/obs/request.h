/* SPDX-License-Identifier: MIT
 * A finished request as observability records it: plain values only. */
#ifndef HK_OBS_REQUEST_H
#define HK_OBS_REQUEST_H

#include <stddef.h>
#include <stdint.h>

/* A finished request, in plain values. */
struct hk_obs_request {
    unsigned uri;              /* label index (above) */
    const char *uri_name;      /* its label, for the access log */
    unsigned method;           /* enum hk_obs_method */
    int status;
    uint64_t bytes;            /* body bytes sent */
    uint64_t dur_ns;
    const char *path;          /* as sent, or NULL (not logged) */
    size_t path_len;
    const char *req_id;
    size_t req_id_len;
};

#endif
