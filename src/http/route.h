/* SPDX-License-Identifier: MIT
 * Routing: a fixed table of path templates and methods. Matching returns
 * the route, the {id} segment, or why nothing matched (404, or 405 + Allow). */
#ifndef HK_ROUTE_H
#define HK_ROUTE_H

#include <stddef.h>
#include <stdint.h>

struct hk_req;
typedef void (*hk_handler)(struct hk_req *r);

/* NONE: no route matches the path (404); UNROUTED: the request was
 * answered before routing (parse error, limit, timeout, overload). */
enum { HK_ROUTE_NONE = -1, HK_ROUTE_UNROUTED = -2 };

/* Route table entries, in order; exposed for the OpenAPI check and metrics. */
extern const char *const hk_route_templates[];
extern const int hk_route_count;
/* The method of route `i` ("GET", "POST", ...). */
const char *hk_route_method(int i);

struct hk_match {
    int route;                 /* index, or HK_ROUTE_NONE */
    hk_handler handler;        /* NULL when status != 0 */
    int status;                /* 0 match, 404, 405 */
    const char *param;         /* {id} segment (not decoded) */
    size_t param_len;
    char allow[64];            /* for 405: "DELETE, GET" */
};

/* Match `path` (no query) for llhttp `method`. HEAD matches GET routes. */
void hk_route_match(const char *path, size_t len, uint8_t method, struct hk_match *m);

#endif
