/* SPDX-License-Identifier: MIT
 * Strict UTF-8 validation (RFC 3629: no overlongs, no surrogates, nothing
 * above U+10FFFF), used to refuse text a database would refuse. */
#ifndef HK_UTF8_H
#define HK_UTF8_H

#include <stdbool.h>
#include <stddef.h>

/* True when p[0..n) is valid UTF-8 and, unless `allow_nul`, holds no NUL
 * byte (PostgreSQL's text cannot store U+0000). */
bool hk_utf8_valid(const char *p, size_t n, bool allow_nul);

#endif
