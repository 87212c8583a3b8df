/* SPDX-License-Identifier: MIT
 * Credential text: the token format (hkd_/hks_/hkc_ + 43 base64url
 * characters), generation, the Authorization: Bearer value, hashing and
 * constant-time comparison, scopes, durations and RFC 3339 expiry times.
 * Pure functions over caller memory: nothing here allocates. */
#ifndef HK_AUTH_TOKEN_H
#define HK_AUTH_TOKEN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/credential.h"

#define HK_TOKEN_PREFIX_LEN 4      /* "hkd_" */
#define HK_TOKEN_B64_LEN 43        /* 32 bytes, base64url, no padding */
#define HK_TOKEN_LEN 47            /* "hkd_" + 43 */
#define HK_BEARER_MAX 256          /* longest Authorization value looked at */
#define HK_SCOPES_TEXT_MAX 18      /* "read,delete,admin" + NUL */
#define HK_DURATION_MAX_US (INT64_C(3653) * 86400 * 1000000)   /* 10 years */

enum hk_token_kind { HK_TOKEN_API, HK_TOKEN_SESSION, HK_TOKEN_CSRF };

/* Why a request is not let in, for the problem document's `reason`. */
enum hk_auth_reason {
    HK_AUTH_OK,
    HK_AUTH_MISSING,
    HK_AUTH_MALFORMED,
    HK_AUTH_UNKNOWN,
    HK_AUTH_EXPIRED,
    HK_AUTH_REVOKED,
    HK_AUTH_INSUFFICIENT_SCOPE,
    HK_AUTH__COUNT
};

/* A new token of kind k in out (HK_TOKEN_LEN characters and a NUL): the
 * prefix and 32 bytes from getrandom(2), non-blocking first, then blocking
 * when the kernel's pool is not yet initialised. Returns 0, or -1 (errno
 * set) when no randomness could be had; out is then an empty string. */
int hk_token_new(enum hk_token_kind k, char out[HK_TOKEN_LEN + 1]);

/* Whether tok[0..n) is a well-formed token: exactly HK_TOKEN_LEN bytes, a
 * known prefix, base64url characters that encode exactly 32 bytes (the last
 * one's two spare bits zero). Returns 0 and sets *kind (may be NULL), or -1.
 * Reads at most HK_TOKEN_LEN bytes. */
int hk_token_kind_of(const char *tok, size_t n, enum hk_token_kind *kind);

/* The prefix of kind k ("hkd_", "hks_", "hkc_"); a static string. */
const char *hk_token_prefix(enum hk_token_kind k);

/* SHA-256 of the whole token text (what the stores keep). */
void hk_token_hash(const char *tok, size_t n, uint8_t out[32]);

/* Constant-time comparison of n bytes (time depends on n only): true when
 * equal. For hashes and CSRF tokens; needs no libcrypto. */
bool hk_ct_equal(const void *a, const void *b, size_t n);

/* The lowercase name of r ("ok", "missing", "malformed", "unknown",
 * "expired", "revoked", "insufficient_scope"); "unknown" for values out of
 * range. A static string. */
const char *hk_auth_reason_name(enum hk_auth_reason r);

/* Read an Authorization header value v[0..n) (not necessarily
 * NUL-terminated; never read past n). HK_AUTH_MISSING when v is NULL or
 * holds nothing but optional whitespace (SP, HTAB: RFC 9110's OWS around a
 * field value). HK_AUTH_OK for exactly: the scheme "Bearer" in any case,
 * one or more SP, one well-formed hkd_ or hks_ token, then nothing but OWS;
 * *tok points into v (borrowed from the caller), *len is HK_TOKEN_LEN and
 * *kind its kind. Everything else is HK_AUTH_MALFORMED (an hkc_ token,
 * another scheme, a tab between scheme and token, a list, control bytes,
 * padding, a value longer than HK_BEARER_MAX). tok, len, kind may be NULL;
 * they are set only on HK_AUTH_OK. */
enum hk_auth_reason hk_bearer_parse(const char *v, size_t n, const char **tok, size_t *len,
                                    enum hk_token_kind *kind);

/* Parse scope text s[0..n): "read", "delete", "admin", comma-separated,
 * optional SP/HTAB around each word, a word may repeat. Returns 0 with the
 * bits in *out, or -1 (an unknown or empty word, empty text); *out is left
 * alone on -1. */
int hk_scopes_parse(const char *s, size_t n, unsigned *out);

/* Write the scope bits as text ("read,delete,admin" order; "" for none;
 * unknown bits ignored) into out, NUL-terminated, truncated to outlen - 1
 * bytes (HK_SCOPES_TEXT_MAX is always enough). Nothing is written when
 * outlen is 0. */
void hk_scopes_format(unsigned scopes, char *out, size_t outlen);

/* Whether a credential with scopes `have` may do what needs `need`: admin
 * allows everything; otherwise every bit of need must be in have. need 0 is
 * always allowed. */
bool hk_scopes_allow(unsigned have, unsigned need);

/* Parse a duration s[0..n): decimal digits and one unit, s, m, h or d
 * ("45s", "90m", "12h", "30d"). Returns 0 with microseconds in *us, or -1
 * (empty, no unit, another unit, zero, longer than HK_DURATION_MAX_US). */
int hk_duration_parse(const char *s, size_t n, int64_t *us);

/* Whether s[0..n) is a token name: 1 to HK_TOKEN_NAME_MAX bytes of
 * [A-Za-z0-9._-]. */
bool hk_token_name_ok(const char *s, size_t n);

/* Parse an RFC 3339 date-time s[0..n) ("2027-01-31T23:59:59Z",
 * "2027-01-31t23:59:59.5+02:00"; fractions beyond microseconds are
 * truncated; years 0001-9999) into unix microseconds. Returns 0, or -1. */
int hk_rfc3339_parse(const char *s, size_t n, int64_t *us);

#endif
