/* SPDX-License-Identifier: MIT
 * Query strings: find a parameter, percent-decode a value. */
#ifndef HK_QUERY_H
#define HK_QUERY_H

#include <stddef.h>

/* The raw (still encoded) value of the first `name` in q (without '?'),
 * or NULL when absent. "name" without '=' has an empty value. */
const char *hk_query_raw(const char *q, size_t qlen, const char *name, size_t *vlen);

/* Percent-decode (and '+' to space) into dst of size cap. Returns the
 * decoded length, or -1 on a bad escape or when it does not fit. */
long hk_url_decode(const char *src, size_t n, char *dst, size_t cap);

#endif
