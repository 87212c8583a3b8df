/* SPDX-License-Identifier: MIT
 * A validating, single-pass JSON scanner that finds the values at a few
 * dotted paths ("type", "event.type") without building a tree: reading a
 * delivery's event type and id costs one pass over the body and no
 * allocation. It accepts exactly what jansson's json_loadb(…, 0) accepts
 * for a document whose root is an object (RFC 8259 with UTF-8, no NUL in
 * strings, integers within int64, finite reals, nesting up to 2048), and
 * where a key repeats, the last one wins, as in jansson. */
#ifndef HK_JSCAN_H
#define HK_JSCAN_H

#include <stdbool.h>
#include <stddef.h>

enum hk_jkind { HK_J_NONE, HK_J_STRING, HK_J_INT, HK_J_REAL, HK_J_OTHER };

/* A value found: a string's raw content between its quotes (`escaped`:
 * it holds backslash escapes), or a number's text. Points into the body. */
struct hk_jval {
    enum hk_jkind kind;
    const char *p;
    size_t n;
    bool escaped;
};

#define HK_JSCAN_SEGS_MAX 16   /* segments of one path */
#define HK_JSCAN_DEPTH_MAX 2048

struct hk_jscan_want {
    const char *path;          /* dotted; NUL-terminated; borrowed for the call */
    struct hk_jval out;
};

/* Scan n bytes. Returns 0 when they are one valid JSON object (each
 * want's `out` then holds its value, HK_J_NONE when absent), -1 otherwise
 * (the outs mean nothing). A path with an empty segment or more than
 * HK_JSCAN_SEGS_MAX of them finds nothing. At most 8 wants. */
int hk_jscan(const char *p, size_t n, struct hk_jscan_want *w, int nw);

/* A found string, unescaped, into dst (at most cap bytes). Returns the
 * length, or -1 when it does not fit. */
long hk_jscan_string(const struct hk_jval *v, char *dst, size_t cap);

#endif
