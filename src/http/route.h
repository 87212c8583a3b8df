/* SPDX-License-Identifier: MIT
 * Route matching over a table the application owns: path templates (exact,
 * or one trailing {param} segment) and one method each. Matching returns
 * the entry, the {param} segment, or why nothing matched (404, or 405 with
 * the Allow list). */
#ifndef HK_ROUTE_H
#define HK_ROUTE_H

#include <stddef.h>
#include <stdint.h>

struct hk_req;
typedef void (*hk_handler)(struct hk_req *r);

/* One entry. Entries with the same template must be adjacent, their
 * methods in alphabetical order (Allow lists them in table order). */
struct hk_route {
    uint8_t method;            /* llhttp_method_t */
    const char *tmpl;
    hk_handler handler;
    unsigned need;             /* the application's: what a caller needs (api/: scopes) */
};

/* NONE: no route matches the path (404); UNROUTED: the request was
 * answered before routing (parse error, limit, timeout, overload). */
enum { HK_ROUTE_NONE = -1, HK_ROUTE_UNROUTED = -2 };

struct hk_match {
    int route;                 /* index, or HK_ROUTE_NONE */
    int status;                /* 0 match, 404, 405 */
    const char *param;         /* {param} segment (not decoded) */
    size_t param_len;
    char allow[64];            /* for 405: "DELETE, GET" */
};

/* Match `path` (no query) for llhttp `method` against `table` (n entries).
 * HEAD matches GET routes. */
void hk_route_match(const struct hk_route *table, int n, const char *path, size_t len, uint8_t method,
                    struct hk_match *m);
/* The name of route i's method ("GET", ...). */
const char *hk_route_method_name(const struct hk_route *route);

#endif
