/* SPDX-License-Identifier: MIT
 * Credentials as the stores keep them: API tokens and sessions, by the
 * SHA-256 of the token (the token itself is never stored). Shared by auth/,
 * store/, redis/ users and api/. */
#ifndef HK_CREDENTIAL_H
#define HK_CREDENTIAL_H

#include <stdint.h>

/* Scope bits; admin implies the others (auth/token.h: hk_scopes_allow). */
enum { HK_SCOPE_READ = 1, HK_SCOPE_DELETE = 2, HK_SCOPE_ADMIN = 4, HK_SCOPE_ALL = 7 };

#define HK_TOKEN_NAME_MAX 64   /* bytes: [A-Za-z0-9._-] */

/* An API token. */
struct hk_token_rec {
    char name[HK_TOKEN_NAME_MAX + 1];
    uint8_t hash[32];          /* SHA-256 of the whole token text */
    unsigned scopes;
    int64_t created_us;        /* unix microseconds */
    int64_t expires_us;        /* 0: never */
    int64_t revoked_us;        /* 0: live */
};

/* A session, made from an API token by POST /api/sessions. */
struct hk_session_rec {
    uint8_t hash[32];          /* SHA-256 of the session token */
    char subject[HK_TOKEN_NAME_MAX + 1]; /* the API token's name */
    unsigned scopes;
    uint8_t csrf_hash[32];     /* SHA-256 of its CSRF token */
    int64_t expires_us;
};

#endif
