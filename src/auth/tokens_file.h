/* SPDX-License-Identifier: MIT
 * The text of HOOKD_API_TOKENS_FILE: one API token a line,
 * `NAME SCOPES TOKEN [expires=<RFC 3339>]`, where TOKEN is an hkd_ token
 * (hashed here; its text is never copied) or sha256:<64 hex>. The caller
 * reads the file; this parses the bytes. */
#ifndef HK_AUTH_TOKENS_FILE_H
#define HK_AUTH_TOKENS_FILE_H

#include <stddef.h>

#include "core/credential.h"

/* Parse text[0..n) into out[0..max), setting *count. Blank lines and lines
 * whose first non-blank byte is '#' are skipped; fields are separated by
 * spaces or tabs; LF or CRLF line ends. Each record gets its name, scopes,
 * the SHA-256 of the token text (or the given hash), expires_us (0 without
 * expires=), created_us and revoked_us 0. Returns 0, or -1 with *count 0
 * and "line N: what is wrong" in err (never any of the line's text, which
 * may be a secret): a malformed field, a NUL byte, a duplicate name or
 * token, more than max tokens. The text is borrowed for the call; the
 * caller should wipe its copy afterwards (explicit_bzero). out's entries
 * may hold partial results on -1. */
int hk_tokens_file_parse(const char *text, size_t n, struct hk_token_rec *out, size_t max, size_t *count,
                         char *err, size_t errlen);

#endif
