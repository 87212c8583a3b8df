/* SPDX-License-Identifier: MIT
 * Base64 (RFC 4648): the standard alphabet with padding, and base64url. */
#ifndef HK_BASE64_H
#define HK_BASE64_H

#include <stddef.h>
#include <stdint.h>

/* Characters hk_base64_encode writes for n bytes (padding included), without the NUL. */
#define HK_BASE64_LEN(n) ((((n) + 2) / 3) * 4)

/* Standard alphabet, padded. Writes HK_BASE64_LEN(n) characters and a NUL
 * to out (HK_BASE64_LEN(n) + 1 bytes). Returns the length. */
size_t hk_base64_encode(const void *p, size_t n, char *out);
/* base64url without padding; out gets ceil(4n/3) characters and a NUL. */
size_t hk_base64url_encode(const void *p, size_t n, char *out);

/* Strict decoding of the standard alphabet: padding required where the
 * length needs it, no whitespace, the unused bits of the last character
 * zero. Writes at most `cap` bytes; returns the decoded length, or -1 when
 * the text is not base64 or needs more than `cap` bytes. */
long hk_base64_decode(const char *s, size_t n, uint8_t *out, size_t cap);

/* Strict base64url without padding (RFC 4648 section 5): the unused bits
 * of the last character zero, so each value has one spelling. Returns the
 * decoded length, or -1 (not base64url, or more than `cap` bytes). */
long hk_base64url_decode(const char *s, size_t n, uint8_t *out, size_t cap);

#endif
