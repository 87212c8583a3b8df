/* SPDX-License-Identifier: MIT
 * The PostgreSQL store (store.h) and the helpers that keep a connection
 * string's password out of every log line and error message. */
#ifndef HK_PG_H
#define HK_PG_H

#include <stddef.h>
#include <stdint.h>

#include "store/store.h"

struct hk_pg_config {
    const char *url;           /* libpq URI (postgres://, postgresql://) or key=value string */
    unsigned pool;             /* connections per event loop, >= 1 */
    unsigned queue_max;        /* ops waiting for the database per loop before HK_EBUSY */
    uint64_t timeout_ms;       /* per op, from submit to its answer */
    unsigned loops;            /* event loops that will attach (0: 1) */
};

/* Load libpq, check the connection string, start one connection per loop,
 * all at once, and return as soon as the first one is up and has checked
 * the schema (creating or migrating it under an advisory lock, so replicas
 * may start together). That connection's session setup is already on its
 * way; each loop_attach adopts one of these connections, returns once it is
 * ready, and then connects the rest of its pool. On failure returns NULL
 * with a one-line reason, password redacted, in errbuf. */
struct hk_store *hk_pg_open(const struct hk_pg_config *cfg, char *errbuf, size_t errlen);

/* Copy `url` into out (always NUL-terminated, truncated to outlen) with every
 * password replaced by "***": the user:password@ of a URI, its ?password=
 * parameter, and password=... of a key=value string. A key=value string that
 * does not parse is cut at the first token it cannot read, which is "***". */
void hk_pg_redact(const char *url, char *out, size_t outlen);

/* Copy a libpq message into out as one line (newlines and tabs become
 * spaces, trailing space dropped) with every password that `url` holds,
 * as written or percent-decoded, replaced by "***". A server error's
 * DETAIL and CONTEXT, which may quote a row (a body, headers) or bind
 * parameters, are dropped with everything after them. */
void hk_pg_scrub(const char *url, const char *msg, char *out, size_t outlen);

#endif
