/* SPDX-License-Identifier: MIT
 * Content-Type values: the media type without its parameters, and whether
 * it is JSON. One reading for every layer (the API, ingress, the row
 * encoder), so that they agree on what a delivery is. */
#ifndef HK_MEDIATYPE_H
#define HK_MEDIATYPE_H

#include <stdbool.h>
#include <stddef.h>

/* The "type/subtype" part of ct[0..n): parameters (";…") and the
 * whitespace around it cut off. Returns its length and sets *base (into
 * ct). ct may be NULL (returns 0). */
size_t hk_media_base(const char *ct, size_t n, const char **base);
/* Is the base exactly `type` (case-insensitive)? */
bool hk_media_is(const char *ct, size_t n, const char *type);
/* application/json, or any structured-syntax "+json" type (RFC 6839),
 * with non-empty type and subtype names; case-insensitive. */
bool hk_media_is_json(const char *ct, size_t n);

#endif
