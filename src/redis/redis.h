/* SPDX-License-Identifier: MIT
 * A Redis client per event loop: one pipelined connection through hiredis's
 * asynchronous API on the loop (libuv adapter), with AUTH/SELECT first,
 * per-command timeouts, a bound on commands in flight, and reconnection with
 * back-off. Also the Redis URL (parsing, a redacted form for logs) and a
 * blocking check for start-up. Everything but hk_redis_check runs on the
 * loop's thread and never blocks it. */
#ifndef HK_REDIS_H
#define HK_REDIS_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <uv.h>

#include "core/err.h"

#define HK_REDIS_PORT_DEFAULT 6379
#define HK_REDIS_TIMEOUT_MS_DEFAULT 1000u   /* timeout_ms 0 means this */
#define HK_REDIS_INFLIGHT_DEFAULT 1024u     /* max_inflight 0 means this */
#define HK_REDIS_BACKOFF_MIN_MS 100u        /* first reconnect after a loss */
#define HK_REDIS_BACKOFF_MAX_MS 5000u       /* doubling up to this */
#define HK_REDIS_PING_MS 5000u              /* an idle connection is checked this often */

/* Where Redis is and how to log in. The strings are owned by the struct:
 * hk_redis_parse_url allocates them, hk_redis_cfg_free frees them. Exactly
 * one of host and unix_path is set. */
struct hk_redis_cfg {
    char *host;                /* name, IPv4 or IPv6 address (without brackets) */
    int port;                  /* 1..65535 */
    char *unix_path;           /* a unix socket instead of host:port */
    char *user;                /* NULL: AUTH <password> (the default user) */
    char *password;            /* NULL: no AUTH */
    int db;                    /* SELECT db when not 0 */
    uint64_t timeout_ms;       /* per command, from submit to its reply; 0: the default */
    uint32_t max_inflight;     /* commands in flight per loop before HK_EBUSY; 0: the default */
};

/* Parse a Redis URL into *out (whose previous contents are ignored; on
 * success free it with hk_redis_cfg_free). Two forms:
 *
 *   redis://[[user]:password@]host[:port][/db]
 *       host a name, an IPv4 address or [IPv6]; port 6379 by default; db 0.
 *       The user information ends at the LAST '@', the user at the first
 *       ':', so a password may hold '@', ':' and '/' as they are.
 *   unix://[[user]:password@]/path/to/redis.sock[?db=N]
 *       The user information ends at the FIRST "@/": a password holding
 *       "@/" must percent-encode it.
 *
 * User and password are percent-decoded (%40 is '@'); no NUL may result.
 * A user needs a password. rediss:// (TLS) is refused: hiredis 0.14 cannot
 * speak it. Sets timeout_ms and max_inflight to 0 (the defaults).
 * Returns 0, or -1 with one line in err that never holds the password (nor
 * the URL, which may). */
int hk_redis_parse_url(const char *url, struct hk_redis_cfg *out, char *err, size_t errlen);

/* Free the strings of *c (not c itself) and zero it. NULL is fine. */
void hk_redis_cfg_free(struct hk_redis_cfg *c);

/* The configuration as a URL for logs, the password as "***":
 * "redis://hookd:***@127.0.0.1:6379/0", "unix:///run/redis.sock?db=0".
 * Always NUL-terminated, truncated to n. */
void hk_redis_redact(const struct hk_redis_cfg *c, char *out, size_t n);

/* At start, blocking: connect, AUTH, SELECT, PING, each step bounded by
 * timeout_ms (the name lookup is not). Returns 0, or -1 with one line in
 * err that never holds the password: "redis: WRONGPASS invalid
 * username-password pair or user is disabled. (127.0.0.1:6379, user
 * \"hookd\")", "redis: cannot connect to 127.0.0.1:6379: Connection refused",
 * "redis: no answer from 127.0.0.1:6379 to PING within 1000 ms". */
int hk_redis_check(const struct hk_redis_cfg *c, char *err, size_t errlen);

/* For the CLI (hookd token revoke), blocking: connect as hk_redis_check
 * does (AUTH, SELECT, each step bounded by timeout_ms), SMEMBERS `set` (a
 * subject's index of session keys, hk_redis_sadd_px), then DEL every
 * member, in batches, and the set itself, all pipelined. Returns the
 * number of members that existed and were deleted (0 for a missing or
 * empty set), or -1 with one line in err that never holds the password
 * (as hk_redis_check's; a key of another type gives "redis: SMEMBERS:
 * WRONGTYPE ..."). A session indexed between the SMEMBERS and the DEL of
 * the set is not deleted (it expires by its TTL). */
int hk_redis_drop_subject(const struct hk_redis_cfg *c, const char *set, char *err, size_t errlen);

struct hk_redis;

/* Make this loop's client and start connecting (asynchronously: a host name
 * is resolved with uv_getaddrinfo). Call on the loop's thread. Copies *c:
 * the caller may free it afterwards. Commands may be submitted at once;
 * they are pipelined behind AUTH/SELECT. Never NULL (OOM aborts). */
struct hk_redis *hk_redis_attach(uv_loop_t *loop, const struct hk_redis_cfg *c);
/* Keep *count, the caller's, as the number of clients up: this one adds 1
 * when it comes up and takes 1 away when it goes down or is detached. Call
 * right after hk_redis_attach, on the loop's thread; *count must outlive
 * the client and may be read from any thread. */
void hk_redis_count_up(struct hk_redis *r, atomic_int *count);

/* Stop the client: every command still in flight has its callback run,
 * from inside this call, with HK_EUNAVAIL (a callback may submit again: it
 * gets HK_EUNAVAIL back, but must not call hk_redis_detach). May be called
 * from a command's callback. Closes the client's handles: the loop must
 * then run until they are closed, which frees the client. `r` is invalid
 * once this returns. NULL is fine. */
void hk_redis_detach(struct hk_redis *r);

/* A command's result, run exactly once per command that was accepted
 * (submit returned 0), on the loop, never from inside the submit call:
 *   0              GET: the value, in val/len, borrowed for the call.
 *                  SET, SADD_PX: done. DEL: the key was deleted.
 *   HK_ENOTFOUND   GET: no such key. DEL: there was no such key.
 *   HK_ESTORE      Redis answered with an error: val/len is its message
 *                  (SADD_PX: the first of its two commands' errors).
 *   HK_EUNAVAIL    the connection was lost with the command in flight, or
 *                  hk_redis_detach ran first (the command may or may not
 *                  have taken effect).
 *   HK_ETIMEDOUT   no reply within timeout_ms; every command behind it on
 *                  the connection gets HK_ETIMEDOUT too, since the replies
 *                  cannot be matched any more, and the connection is made
 *                  again (the command may or may not have taken effect).
 * val is NULL, len 0 unless said otherwise. */
typedef void (*hk_redis_cb)(void *data, int status, const char *val, size_t len);

/* GET key, SET key val PX ttl_ms, DEL key. Keys and values are binary-safe
 * (any bytes, CR/LF and NUL included) and are copied before these return:
 * the caller's buffers are only borrowed for the call. `data` is passed to
 * cb as it is. Return 0 (cb will run), or without running cb:
 *   HK_EUNAVAIL  Redis is down (not connected and the last attempt failed):
 *                fail fast rather than wait;
 *   HK_EBUSY     max_inflight commands are already in flight on this loop;
 *   HK_EINVAL    setex with ttl_ms 0 or above 2^62.
 * Commands submitted while the first connection is still being made are
 * accepted and sent once it is. */
int hk_redis_get(struct hk_redis *r, const char *key, size_t klen, hk_redis_cb cb, void *data);
int hk_redis_setex(struct hk_redis *r, const char *key, size_t klen, const char *val, size_t vlen,
                   uint64_t ttl_ms, hk_redis_cb cb, void *data);
int hk_redis_del(struct hk_redis *r, const char *key, size_t klen, hk_redis_cb cb, void *data);

/* SADD set member, then PEXPIRE set ttl_ms, pipelined back to back: the
 * index of a subject's sessions (hk_redis_drop_subject), its TTL renewed
 * by every session added (the application passes the session TTL, so the
 * set outlives its members). Not atomic (no MULTI): an error or a lost
 * connection may leave the member added with the old TTL. One command as
 * far as the rules above go (copies, HK_EUNAVAIL, HK_EBUSY, HK_EINVAL for
 * ttl_ms as setex's, one slot of max_inflight): cb runs exactly once,
 * after both replies, with 0 or the first error. */
int hk_redis_sadd_px(struct hk_redis *r, const char *set, size_t setlen, const char *member, size_t mlen,
                     uint64_t ttl_ms, hk_redis_cb cb, void *data);

/* Connected, logged in and answering (for readiness). No I/O. Any thread. */
bool hk_redis_up(const struct hk_redis *r);

struct hk_redis_stats {
    bool connected;            /* hk_redis_up */
    uint32_t in_flight;        /* commands submitted and not yet answered */
    uint32_t capacity;         /* max_inflight */
    uint64_t reconnects;       /* connections made after the first */
    uint64_t timeouts;         /* commands answered HK_ETIMEDOUT */
};

/* Gauges and counters of this loop's client. No I/O; any thread (relaxed
 * atomic reads: each field is current, the set is not a snapshot). */
void hk_redis_stats(const struct hk_redis *r, struct hk_redis_stats *out);

#endif
