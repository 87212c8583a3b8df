/* SPDX-License-Identifier: MIT
 * The Redis client of redis.h: URL parsing and redaction, the blocking
 * start-up check, and the per-loop connection (hiredis async on the loop:
 * a FIFO of commands matched to replies in send order, the handshake
 * pipelined ahead of them, deadlines, idle pings, reconnects with back-off).
 * Keys and values are copied into hiredis's output buffer (or, before the
 * first connection exists, into a formatted command of our own) when a
 * command is submitted; replies are borrowed by the callback for its call. */
#include "redis/redis.h"

#include <arpa/inet.h>
#include <assert.h>
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <netdb.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/un.h>

#include <hiredis/adapters/libuv.h>
#include <hiredis/async.h>
#include <hiredis/hiredis.h>

#include "core/ascii.h"
#include "core/buf.h"
#include "core/log.h"

#define TTL_MS_MAX (UINT64_C(1) << 62)

static void *xmalloc(size_t n)
{
    void *p = calloc(1, n);
    if (!p)
        abort();   /* the process's OOM policy (core/buf.h) */
    return p;
}

static char *xstrndup(const char *s, size_t n)
{
    char *p = xmalloc(n + 1);
    memcpy(p, s, n);
    return p;
}

/* ---- text that may hold the password -------------------------------------- */

/* Copy msg[0..n) into out as one printable line with every occurrence of
 * the password replaced by "***". Error text from the server or from
 * hiredis should never hold it; this makes sure. */
static void scrub(const struct hk_redis_cfg *c, const char *msg, size_t n, char *out, size_t outn)
{
    if (outn == 0)
        return;
    const char *pw = c ? c->password : NULL;
    size_t pwlen = pw ? strlen(pw) : 0;
    size_t o = 0;
    for (size_t i = 0; i < n && msg[i] && o + 1 < outn;) {
        if (pwlen && n - i >= pwlen && memcmp(msg + i, pw, pwlen) == 0) {
            for (const char *s = "***"; *s && o + 1 < outn; s++)
                out[o++] = *s;
            i += pwlen;
            continue;
        }
        unsigned char ch = (unsigned char)msg[i++];
        out[o++] = ch >= 0x20 && ch < 0x7f ? (char)ch : ' ';
    }
    while (o > 0 && out[o - 1] == ' ')
        o--;
    out[o] = '\0';
}

/* ---- URLs --------------------------------------------------------------- */

static int url_error(struct hk_redis_cfg *out, char *err, size_t errlen, const char *msg)
{
    hk_redis_cfg_free(out);
    if (errlen)
        snprintf(err, errlen, "redis: %s", msg);
    return -1;
}

/* Percent-decode p[0..n) into a new string; NULL for a bad escape or %00. */
static char *decode(const char *p, size_t n)
{
    char *s = xmalloc(n + 1);
    size_t o = 0;
    for (size_t i = 0; i < n; i++) {
        if (p[i] != '%') {
            s[o++] = p[i];
            continue;
        }
        if (n - i < 3 || hk_hex_val(p[i + 1]) < 0 || hk_hex_val(p[i + 2]) < 0) {
            free(s);
            return NULL;
        }
        char ch = (char)(hk_hex_val(p[i + 1]) * 16 + hk_hex_val(p[i + 2]));
        if (ch == '\0') {
            free(s);
            return NULL;
        }
        s[o++] = ch;
        i += 2;
    }
    s[o] = '\0';
    return s;
}

/* A decimal number p[0..n) in [lo, hi]: digits only, no sign, no spaces. */
static bool parse_num(const char *p, size_t n, long lo, long hi, long *out)
{
    if (n == 0 || n > 10)
        return false;
    long v = 0;
    for (size_t i = 0; i < n; i++) {
        if (p[i] < '0' || p[i] > '9')
            return false;
        v = v * 10 + (p[i] - '0');
    }
    if (v < lo || v > hi)
        return false;
    *out = v;
    return true;
}

/* user:password from p[0..n) (already cut out of the URL). */
static int parse_userinfo(const char *p, size_t n, struct hk_redis_cfg *out, char *err, size_t errlen)
{
    const char *colon = memchr(p, ':', n);
    if (!colon)
        return url_error(out, err, errlen,
                         "the URL names a user without a password (write user:password@, or :password@ "
                         "for the default user)");
    size_t ulen = (size_t)(colon - p), plen = n - ulen - 1;
    if (ulen > 0 && plen == 0)
        return url_error(out, err, errlen, "the URL names a user with an empty password");
    if (ulen > 0 && !(out->user = decode(p, ulen)))
        return url_error(out, err, errlen, "the user in the URL has a bad %-escape (or %00)");
    if (plen > 0 && !(out->password = decode(colon + 1, plen)))
        return url_error(out, err, errlen, "the password in the URL has a bad %-escape (or %00)");
    return 0;
}

static bool host_char(char ch)
{
    return (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9') || ch == '.' ||
           ch == '-' || ch == '_';
}

static int parse_tcp(const char *rest, struct hk_redis_cfg *out, char *err, size_t errlen)
{
    /* The last '@' ends the user information: '@', ':' and '/' may then
     * stand unescaped in a password. */
    const char *at = strrchr(rest, '@');
    if (at && parse_userinfo(rest, (size_t)(at - rest), out, err, errlen) < 0)
        return -1;
    const char *hp = at ? at + 1 : rest;
    if (strchr(hp, '?') || strchr(hp, '#'))
        return url_error(out, err, errlen,
                         "redis:// URLs take no parameters: the database is the path (redis://host:port/N)");
    const char *slash = strchr(hp, '/');
    const char *hend = slash ? slash : hp + strlen(hp);
    const char *h = hp, *hstop, *port = NULL;
    if (*h == '[') {
        const char *close = memchr(h, ']', (size_t)(hend - h));
        if (!close)
            return url_error(out, err, errlen, "an IPv6 address in the URL lacks its ']'");
        struct in6_addr a6;
        char tmp[INET6_ADDRSTRLEN + 1];
        size_t n = (size_t)(close - h - 1);
        if (n == 0 || n >= sizeof tmp)
            return url_error(out, err, errlen, "the IPv6 address in the URL is not one");
        memcpy(tmp, h + 1, n);
        tmp[n] = '\0';
        if (inet_pton(AF_INET6, tmp, &a6) != 1)
            return url_error(out, err, errlen, "the IPv6 address in the URL is not one");
        out->host = xstrndup(tmp, n);
        hstop = close + 1;
        if (hstop < hend && *hstop != ':')
            return url_error(out, err, errlen, "something follows the IPv6 address in the URL");
    } else {
        hstop = h;
        while (hstop < hend && *hstop != ':')
            hstop++;
        if (hstop == h)
            return url_error(out, err, errlen, "the URL has no host (redis://host[:port][/db])");
        for (const char *q = h; q < hstop; q++)
            if (!host_char(*q))
                return url_error(out, err, errlen,
                                 "the host in the URL is not a name or an address (a password with '@' "
                                 "before the host?)");
        if (hstop - h > 253)
            return url_error(out, err, errlen, "the host in the URL is too long");
        out->host = xstrndup(h, (size_t)(hstop - h));
    }
    long v = HK_REDIS_PORT_DEFAULT;
    if (hstop < hend) {   /* *hstop == ':' */
        port = hstop + 1;
        if (!parse_num(port, (size_t)(hend - port), 1, 65535, &v))
            return url_error(out, err, errlen, "the port in the URL must be a number 1..65535");
    }
    out->port = (int)v;
    v = 0;
    if (slash && slash[1] && !parse_num(slash + 1, strlen(slash + 1), 0, INT_MAX, &v))
        return url_error(out, err, errlen, "the database in the URL must be a number 0..2147483647 (/N)");
    out->db = (int)v;
    return 0;
}

static int parse_unix(const char *rest, struct hk_redis_cfg *out, char *err, size_t errlen)
{
    const char *path = rest;
    if (*rest != '/') {
        /* The first "@/" ends the user information. */
        const char *at = strstr(rest, "@/");
        if (!at)
            return url_error(out, err, errlen, "unix:// URLs are unix://[user:password@]/path/to.sock[?db=N]");
        if (parse_userinfo(rest, (size_t)(at - rest), out, err, errlen) < 0)
            return -1;
        path = at + 1;
    }
    const char *q = strchr(path, '?');
    size_t plen = q ? (size_t)(q - path) : strlen(path);
    if (plen < 2)
        return url_error(out, err, errlen, "the URL has no socket path (unix:///path/to.sock)");
    if (plen >= sizeof(((struct sockaddr_un *)0)->sun_path))
        return url_error(out, err, errlen, "the socket path in the URL is longer than a unix socket allows");
    out->unix_path = xstrndup(path, plen);
    long v = 0;
    while (q && q[1]) {
        const char *p = q + 1;
        q = strchr(p, '&');
        size_t n = q ? (size_t)(q - p) : strlen(p);
        if (n < 3 || memcmp(p, "db=", 3) != 0)
            return url_error(out, err, errlen, "unix:// URLs take one parameter, db=N");
        if (!parse_num(p + 3, n - 3, 0, INT_MAX, &v))
            return url_error(out, err, errlen, "the database in the URL must be a number 0..2147483647 (?db=N)");
    }
    out->db = (int)v;
    return 0;
}

int hk_redis_parse_url(const char *url, struct hk_redis_cfg *out, char *err, size_t errlen)
{
    memset(out, 0, sizeof *out);
    if (!url || !*url)
        return url_error(out, err, errlen, "the URL is empty");
    for (const char *p = url; *p; p++)
        if ((unsigned char)*p < 0x20 || *p == 0x7f)
            return url_error(out, err, errlen, "the URL holds a control character");
    if (strncasecmp(url, "rediss://", 9) == 0)
        return url_error(out, err, errlen,
                         "rediss:// (TLS) is not supported: this build's hiredis 0.14 has no TLS; reach Redis "
                         "over a unix socket, a private network or a TLS tunnel (stunnel) with redis://");
    if (strncasecmp(url, "redis://", 8) == 0)
        return parse_tcp(url + 8, out, err, errlen);
    if (strncasecmp(url, "unix://", 7) == 0)
        return parse_unix(url + 7, out, err, errlen);
    return url_error(out, err, errlen, "the URL must start with redis:// or unix://");
}

void hk_redis_cfg_free(struct hk_redis_cfg *c)
{
    if (!c)
        return;
    if (c->password)
        explicit_bzero(c->password, strlen(c->password));
    free(c->host);
    free(c->unix_path);
    free(c->user);
    free(c->password);
    memset(c, 0, sizeof *c);
}

static void cfg_copy(struct hk_redis_cfg *dst, const struct hk_redis_cfg *src)
{
    *dst = *src;
    dst->host = src->host ? xstrndup(src->host, strlen(src->host)) : NULL;
    dst->unix_path = src->unix_path ? xstrndup(src->unix_path, strlen(src->unix_path)) : NULL;
    dst->user = src->user ? xstrndup(src->user, strlen(src->user)) : NULL;
    dst->password = src->password ? xstrndup(src->password, strlen(src->password)) : NULL;
    if (dst->timeout_ms == 0)
        dst->timeout_ms = HK_REDIS_TIMEOUT_MS_DEFAULT;
    if (dst->max_inflight == 0)
        dst->max_inflight = HK_REDIS_INFLIGHT_DEFAULT;
}

/* Percent-encode what a user name needs in a URL. */
static void put_user(struct hk_buf *b, const char *u)
{
    for (; *u; u++) {
        if (host_char(*u) || *u == '~')
            hk_buf_putc(b, *u);
        else
            hk_buf_printf(b, "%%%02X", (unsigned char)*u);
    }
}

void hk_redis_redact(const struct hk_redis_cfg *c, char *out, size_t n)
{
    if (n == 0)
        return;
    struct hk_buf b = HK_BUF_INIT;
    hk_buf_puts(&b, c->unix_path ? "unix://" : "redis://");
    if (c->user || c->password) {
        if (c->user)
            put_user(&b, c->user);
        hk_buf_puts(&b, c->password ? ":***@" : "@");
    }
    if (c->unix_path) {
        hk_buf_puts(&b, c->unix_path);
        hk_buf_printf(&b, "?db=%d", c->db);
    } else if (c->host) {
        bool v6 = strchr(c->host, ':') != NULL;
        hk_buf_printf(&b, "%s%s%s:%d/%d", v6 ? "[" : "", c->host, v6 ? "]" : "", c->port, c->db);
    }
    hk_buf_putc(&b, '\0');
    snprintf(out, n, "%s", b.p);
    hk_buf_free(&b);
}

/* "host:port" or the socket path, for messages. */
static void where(const struct hk_redis_cfg *c, char *out, size_t n)
{
    if (c->unix_path)
        snprintf(out, n, "%s", c->unix_path);
    else if (strchr(c->host, ':'))
        snprintf(out, n, "[%s]:%d", c->host, c->port);
    else
        snprintf(out, n, "%s:%d", c->host, c->port);
}

/* ---- the blocking check at start ----------------------------------------- */

/* Argument vectors for the session set-up, shared by the check and the
 * loop's connections. Returns argc (0: nothing to send). */
static int auth_argv(const struct hk_redis_cfg *c, const char *argv[3], size_t lens[3])
{
    if (!c->password)
        return 0;
    int n = 0;
    argv[n] = "AUTH";
    lens[n++] = 4;
    if (c->user) {
        argv[n] = c->user;
        lens[n++] = strlen(c->user);
    }
    argv[n] = c->password;
    lens[n++] = strlen(c->password);
    return n;
}

static int select_argv(const struct hk_redis_cfg *c, char num[16], const char *argv[2], size_t lens[2])
{
    if (c->db == 0)
        return 0;
    snprintf(num, 16, "%d", c->db);
    argv[0] = "SELECT";
    lens[0] = 6;
    argv[1] = num;
    lens[1] = strlen(num);
    return 2;
}

/* Judge a reply `rep` (NULL: hiredis failed, see rc->err) to `what` on the
 * blocking context: 0, or -1 with err filled. Does not free rep. */
static int check_reply(const redisContext *rc, const struct hk_redis_cfg *c, uint64_t timeout_ms, const char *what,
                       const redisReply *rep, char *err, size_t errlen)
{
    char w[160], msg[256];
    where(c, w, sizeof w);
    if (!rep) {
        /* hiredis reports a read timeout as the I/O error EAGAIN. */
        if (rc->err == REDIS_ERR_IO &&
            (errno == EAGAIN || errno == EWOULDBLOCK || strcmp(rc->errstr, strerror(EAGAIN)) == 0))
            snprintf(err, errlen, "redis: no answer from %s to %s within %" PRIu64 " ms", w, what, timeout_ms);
        else {
            scrub(c, rc->errstr, strlen(rc->errstr), msg, sizeof msg);
            snprintf(err, errlen, "redis: %s: %s failed: %s", w, what, msg);
        }
        return -1;
    }
    if (rep->type != REDIS_REPLY_ERROR)
        return 0;
    scrub(c, rep->str, rep->len, msg, sizeof msg);
    if (strcmp(what, "AUTH") == 0)
        snprintf(err, errlen, "redis: %s (%s, %s%s%s)", msg, w, c->user ? "user \"" : "the default user",
                 c->user ? c->user : "", c->user ? "\"" : "");
    else if (strncmp(msg, "NOAUTH", 6) == 0)
        snprintf(err, errlen, "redis: %s (%s; the URL has no password)", msg, w);
    else
        snprintf(err, errlen, "redis: %s: %s (%s)", what, msg, w);
    return -1;
}

/* Run one command on the blocking context; 0, or -1 with err filled. */
static int check_cmd(redisContext *rc, const struct hk_redis_cfg *c, uint64_t timeout_ms, const char *what, int argc,
                     const char **argv, const size_t *lens, char *err, size_t errlen)
{
    redisReply *rep = redisCommandArgv(rc, argc, argv, lens);
    int ret = check_reply(rc, c, timeout_ms, what, rep, err, errlen);
    if (rep)
        freeReplyObject(rep);
    return ret;
}

/* A blocking connection, logged in and on its database, each step bounded
 * by timeout_ms (returned in *ms_out). NULL with err filled. */
static redisContext *blocking_open(const struct hk_redis_cfg *c, uint64_t *ms_out, char *err, size_t errlen)
{
    assert(c->host || c->unix_path);
    uint64_t ms = c->timeout_ms ? c->timeout_ms : HK_REDIS_TIMEOUT_MS_DEFAULT;
    *ms_out = ms;
    struct timeval tv = {.tv_sec = (time_t)(ms / 1000), .tv_usec = (suseconds_t)(ms % 1000) * 1000};
    char w[160], msg[256];
    where(c, w, sizeof w);
    redisContext *rc =
        c->unix_path ? redisConnectUnixWithTimeout(c->unix_path, tv) : redisConnectWithTimeout(c->host, c->port, tv);
    if (!rc)
        abort();
    if (rc->err) {
        scrub(c, rc->errstr, strlen(rc->errstr), msg, sizeof msg);
        snprintf(err, errlen, "redis: cannot connect to %s: %s", w, msg);
        goto fail;
    }
    if (redisSetTimeout(rc, tv) != REDIS_OK) {
        snprintf(err, errlen, "redis: cannot set a timeout on the connection to %s", w);
        goto fail;
    }
    const char *argv[3];
    size_t lens[3];
    char num[16];
    int n = auth_argv(c, argv, lens);
    if (n && check_cmd(rc, c, ms, "AUTH", n, argv, lens, err, errlen) < 0)
        goto fail;
    n = select_argv(c, num, argv, lens);
    if (n && check_cmd(rc, c, ms, "SELECT", n, argv, lens, err, errlen) < 0)
        goto fail;
    return rc;
fail:
    redisFree(rc);
    return NULL;
}

int hk_redis_check(const struct hk_redis_cfg *c, char *err, size_t errlen)
{
    uint64_t ms;
    redisContext *rc = blocking_open(c, &ms, err, errlen);
    if (!rc)
        return -1;
    const char *argv[1] = {"PING"};
    size_t lens[1] = {4};
    int ret = check_cmd(rc, c, ms, "PING", 1, argv, lens, err, errlen);
    redisFree(rc);
    return ret;
}

#define DROP_BATCH 256   /* keys per DEL */

int hk_redis_drop_subject(const struct hk_redis_cfg *c, const char *set, char *err, size_t errlen)
{
    uint64_t ms;
    redisContext *rc = blocking_open(c, &ms, err, errlen);
    if (!rc)
        return -1;
    int ret = -1;
    const char *argv[DROP_BATCH + 1];
    size_t lens[DROP_BATCH + 1];
    argv[0] = "SMEMBERS";
    lens[0] = 8;
    argv[1] = set;
    lens[1] = strlen(set);
    redisReply *members = redisCommandArgv(rc, 2, argv, lens);
    if (check_reply(rc, c, ms, "SMEMBERS", members, err, errlen) < 0)
        goto out;
    if (members->type != REDIS_REPLY_ARRAY) {
        snprintf(err, errlen, "redis: SMEMBERS: unexpected reply type %d", members->type);
        goto out;
    }
    for (size_t i = 0; i < members->elements; i++)
        if (members->element[i]->type != REDIS_REPLY_STRING) {
            snprintf(err, errlen, "redis: SMEMBERS: a member of unexpected reply type %d",
                     members->element[i]->type);
            goto out;
        }
    /* Every batch of members, then the set itself, pipelined; then the
     * replies, in the same order. */
    size_t nbatch = 0;
    argv[0] = "DEL";
    lens[0] = 3;
    for (size_t i = 0; i < members->elements; nbatch++) {
        int argc = 1;
        for (; i < members->elements && argc <= DROP_BATCH; i++) {
            argv[argc] = members->element[i]->str;
            lens[argc++] = members->element[i]->len;
        }
        if (redisAppendCommandArgv(rc, argc, argv, lens) != REDIS_OK)
            abort();   /* only out of memory */
    }
    argv[1] = set;
    lens[1] = strlen(set);
    if (redisAppendCommandArgv(rc, 2, argv, lens) != REDIS_OK)
        abort();
    long long deleted = 0;
    bool failed = false;
    for (size_t b = 0; b <= nbatch; b++) {
        void *p = NULL;
        if (redisGetReply(rc, &p) != REDIS_OK)
            p = NULL;
        redisReply *rep = p;
        if (!failed && check_reply(rc, c, ms, "DEL", rep, err, errlen) < 0) {
            failed = true;
        } else if (!failed && rep->type != REDIS_REPLY_INTEGER) {
            snprintf(err, errlen, "redis: DEL: unexpected reply type %d", rep->type);
            failed = true;
        } else if (!failed && b < nbatch) {
            deleted += rep->integer;
        }
        if (!rep)
            goto out;   /* the connection broke: no more replies */
        freeReplyObject(rep);
    }
    if (!failed)
        ret = deleted > INT_MAX ? INT_MAX : (int)deleted;
out:
    if (members)
        freeReplyObject(members);
    redisFree(rc);
    return ret;
}

/* ---- the loop's client ---------------------------------------------------- */

/* K_SADD and K_PEXPIRE are the two halves of hk_redis_sadd_px, always
 * queued back to back: the SADD has no callback, the PEXPIRE has the
 * caller's and reports the SADD's error, if any, before its own. */
enum kind { K_GET, K_SET, K_DEL, K_SADD, K_PEXPIRE, K_AUTH, K_SELECT, K_SETUP_PING, K_IDLE_PING };

/* One command in the FIFO, in the order hiredis will see its reply. */
struct cmd {
    struct cmd *next;
    hk_redis_cb cb;             /* user commands only */
    void *data;
    uint64_t deadline;          /* loop time (ms) by which the reply must be in */
    enum kind kind;
    char *fmt;                  /* formatted, while no connection exists yet */
    int fmtlen;
    char *prev_err;             /* K_PEXPIRE: the SADD's error reply, if any */
    size_t prev_errlen;
};

enum state {
    S_IDLE,         /* no connection; the retry timer runs */
    S_RESOLVING,    /* uv_getaddrinfo in flight */
    S_CONNECTING,   /* a hiredis context exists, the handshake is not answered yet */
    S_UP,           /* handshake answered */
    S_CLOSED,       /* detached */
};

struct hk_redis {
    uv_loop_t *loop;
    struct hk_redis_cfg cfg;
    redisAsyncContext *ac;      /* NULL unless S_CONNECTING or S_UP */
    enum state state;
    bool down;                  /* logged as down: submissions fail fast */
    bool been_up;               /* a connection was up before (the next is a reconnect) */
    struct cmd *head, *tail;    /* in send order; all formatted-only while S_RESOLVING */
    uint32_t nuser;             /* user commands in the FIFO */
    uv_timer_t tick;            /* the head's deadline, or the idle ping */
    uint64_t tick_due;          /* when tick fires, 0 when stopped */
    uv_timer_t retry;           /* back-off */
    uint64_t backoff_ms;
    uv_getaddrinfo_t gai;
    bool gai_busy;
    uint64_t last_io;           /* loop time of the last reply */
    int nopen;                  /* after detach: handles and requests still to finish */
    atomic_bool up;
    atomic_int *up_count;   /* the caller's count of clients up (hk_redis_count_up); NULL: none */
    atomic_uint inflight;
    atomic_uint_fast64_t reconnects, timeouts;
};

static void on_retry(uv_timer_t *t);
static void arm_tick(struct hk_redis *r);

/* hiredis 0.14's libuv adapter ignores a poll callback with an error
 * status. libuv reports POLLERR that way (UV_EBADF, no events, the handle
 * stopped): a refused connect (on loopback too: test nobody_listening), a
 * connection reset. hiredis would then wait forever for readiness. These hooks replace the adapter's
 * four, keeping its handle, attach and cleanup: an error is passed on as
 * readiness for whatever hiredis waits for, so that its read, write or
 * connect check meets the error (what hiredis 1.0 does). */
static void on_poll(uv_poll_t *h, int status, int events)
{
    redisLibuvEvents *p = h->data;
    int ev = status < 0 ? p->events : events;
    if (p->context && (ev & UV_READABLE))
        redisAsyncHandleRead(p->context);
    if (p->context && (ev & UV_WRITABLE))
        redisAsyncHandleWrite(p->context);
}

static void poll_update(redisLibuvEvents *p)
{
    if (p->events)
        uv_poll_start(&p->handle, p->events, on_poll);
    else
        uv_poll_stop(&p->handle);
}

static void ev_add_read(void *privdata)
{
    redisLibuvEvents *p = privdata;
    p->events |= UV_READABLE;
    poll_update(p);
}

static void ev_del_read(void *privdata)
{
    redisLibuvEvents *p = privdata;
    p->events &= ~UV_READABLE;
    poll_update(p);
}

static void ev_add_write(void *privdata)
{
    redisLibuvEvents *p = privdata;
    p->events |= UV_WRITABLE;
    poll_update(p);
}

static void ev_del_write(void *privdata)
{
    redisLibuvEvents *p = privdata;
    p->events &= ~UV_WRITABLE;
    poll_update(p);
}

static void push(struct hk_redis *r, struct cmd *c)
{
    c->next = NULL;
    if (r->tail)
        r->tail->next = c;
    else
        r->head = c;
    r->tail = c;
}

static struct cmd *take_all(struct hk_redis *r)
{
    struct cmd *list = r->head;
    r->head = r->tail = NULL;
    atomic_fetch_sub_explicit(&r->inflight, r->nuser, memory_order_relaxed);
    r->nuser = 0;
    return list;
}

/* Run the callbacks of a list taken off the FIFO with `status`. Nothing of
 * the client is touched: a callback may submit, or detach. */
static void complete_all(struct cmd *c, int status)
{
    while (c) {
        struct cmd *next = c->next;
        hk_redis_cb cb = c->cb;
        void *data = c->data;
        if (c->fmt)
            redisFreeCommand(c->fmt);
        free(c->prev_err);
        free(c);
        if (cb)
            cb(data, status, NULL, 0);
        c = next;
    }
}

static uint32_t count_user(const struct cmd *c)
{
    uint32_t n = 0;
    for (; c; c = c->next)
        n += c->cb != NULL;
    return n;
}

/* Let go of the hiredis context without hearing from it again: its pending
 * replies come back as NULL, which on_reply ignores once ac->data is NULL.
 * Inside a hiredis callback the free is deferred by hiredis until the
 * callback returns. */
static void drop_context(redisAsyncContext *ac)
{
    ac->data = NULL;
    ac->onConnect = NULL;
    ac->onDisconnect = NULL;
    redisAsyncFree(ac);
}

/* The client's state for hk_redis_up, and the caller's count with it. */
static void set_up(struct hk_redis *r, bool up)
{
    bool was = atomic_exchange_explicit(&r->up, up, memory_order_relaxed);
    if (was != up && r->up_count)
        atomic_fetch_add_explicit(r->up_count, up ? 1 : -1, memory_order_relaxed);
}

/* The connection (or the attempt at one) failed: `status` for every command
 * in flight, one log line if Redis was not already down, a reconnect after
 * the back-off. `own_ac`: whether the context is ours to free (false inside
 * hiredis's connect and disconnect callbacks, which free it themselves).
 * The callbacks run last, so whatever they do finds the client consistent. */
static void conn_fail(struct hk_redis *r, int status, const char *why, bool own_ac)
{
    redisAsyncContext *ac = r->ac;
    r->ac = NULL;
    if (ac) {
        if (own_ac)
            drop_context(ac);
        else
            ac->data = NULL;
    }
    r->state = S_IDLE;
    set_up(r, false);
    if (!r->down) {
        r->down = true;
        char line[320];
        scrub(&r->cfg, why, strlen(why), line, sizeof line);
        char w[160];
        where(&r->cfg, w, sizeof w);
        struct hk_buf b = HK_BUF_INIT;
        hk_buf_puts(&b, "\"redis\":");
        hk_buf_put_json_str(&b, w, strlen(w));
        hk_buf_puts(&b, ",\"error\":");
        hk_buf_put_json_str(&b, line, strlen(line));
        hk_buf_putc(&b, '\0');
        hk_warn("redis unavailable, reconnecting", "%s", b.p);
        hk_buf_free(&b);
    }
    uv_timer_start(&r->retry, on_retry, r->backoff_ms, 0);
    r->backoff_ms = r->backoff_ms * 2 > HK_REDIS_BACKOFF_MAX_MS ? HK_REDIS_BACKOFF_MAX_MS : r->backoff_ms * 2;
    struct cmd *list = take_all(r);
    if (status == HK_ETIMEDOUT)
        atomic_fetch_add_explicit(&r->timeouts, count_user(list), memory_order_relaxed);
    arm_tick(r);
    complete_all(list, status);
}

static void conn_up(struct hk_redis *r)
{
    r->state = S_UP;
    r->backoff_ms = HK_REDIS_BACKOFF_MIN_MS;
    set_up(r, true);
    if (r->been_up)
        atomic_fetch_add_explicit(&r->reconnects, 1, memory_order_relaxed);
    r->been_up = true;
    if (r->down) {
        r->down = false;
        char w[160];
        where(&r->cfg, w, sizeof w);
        struct hk_buf b = HK_BUF_INIT;
        hk_buf_puts(&b, "\"redis\":");
        hk_buf_put_json_str(&b, w, strlen(w));
        hk_buf_putc(&b, '\0');
        hk_info("redis available again", "%s", b.p);
        hk_buf_free(&b);
    }
}

/* A reply for the FIFO's head. hiredis matches replies to commands in send
 * order, and the FIFO holds exactly what was sent on this context, in the
 * same order. A NULL reply is hiredis giving up on a command while freeing
 * the context; whoever made it give up has already answered the FIFO. */
static void on_reply(redisAsyncContext *ac, void *reply_, void *privdata)
{
    (void)privdata;
    struct hk_redis *r = ac->data;
    redisReply *rep = reply_;
    if (!r || !rep)
        return;
    struct cmd *c = r->head;
    assert(c && r->ac == ac);
    r->head = c->next;
    if (!r->head)
        r->tail = NULL;
    r->last_io = uv_now(r->loop);
    hk_redis_cb cb = c->cb;
    void *data = c->data;
    enum kind kind = c->kind;
    char *prev_err = c->prev_err;   /* K_PEXPIRE only */
    size_t prev_errlen = c->prev_errlen;
    free(c);
    if (cb) {
        r->nuser--;
        atomic_fetch_sub_explicit(&r->inflight, 1, memory_order_relaxed);
    }
    const char *what = kind == K_AUTH ? "AUTH" : kind == K_SELECT ? "SELECT" : "PING";
    char why[320];
    switch (kind) {
    case K_AUTH:
    case K_SELECT:
    case K_SETUP_PING:
        if (rep->type == REDIS_REPLY_ERROR) {
            char msg[256];
            scrub(&r->cfg, rep->str, rep->len, msg, sizeof msg);
            snprintf(why, sizeof why, "%s: %s", what, msg);
            conn_fail(r, HK_EUNAVAIL, why, true);
            return;
        }
        if (kind == K_SETUP_PING)
            conn_up(r);
        return;
    case K_IDLE_PING:
        return;
    case K_GET:
        if (rep->type == REDIS_REPLY_STRING)
            cb(data, 0, rep->str, rep->len);
        else if (rep->type == REDIS_REPLY_NIL)
            cb(data, HK_ENOTFOUND, NULL, 0);
        else if (rep->type == REDIS_REPLY_ERROR)
            cb(data, HK_ESTORE, rep->str, rep->len);
        else
            cb(data, HK_ESTORE, "unexpected reply type", 21);
        return;
    case K_SET:
        if (rep->type == REDIS_REPLY_STATUS)
            cb(data, 0, NULL, 0);
        else if (rep->type == REDIS_REPLY_ERROR)
            cb(data, HK_ESTORE, rep->str, rep->len);
        else
            cb(data, HK_ESTORE, "unexpected reply type", 21);
        return;
    case K_DEL:
        if (rep->type == REDIS_REPLY_INTEGER)
            cb(data, rep->integer > 0 ? 0 : HK_ENOTFOUND, NULL, 0);
        else if (rep->type == REDIS_REPLY_ERROR)
            cb(data, HK_ESTORE, rep->str, rep->len);
        else
            cb(data, HK_ESTORE, "unexpected reply type", 21);
        return;
    case K_SADD:
        /* Its PEXPIRE is next in the FIFO (unless it could not be queued:
         * then nobody waits for this reply). */
        if (r->head && r->head->kind == K_PEXPIRE) {
            if (rep->type == REDIS_REPLY_ERROR) {
                r->head->prev_err = xstrndup(rep->str, rep->len);
                r->head->prev_errlen = rep->len;
            } else if (rep->type != REDIS_REPLY_INTEGER) {
                r->head->prev_err = xstrndup("unexpected reply type", 21);
                r->head->prev_errlen = 21;
            }
        }
        return;
    case K_PEXPIRE:
        if (prev_err) {   /* the SADD's error: the first one is reported */
            cb(data, HK_ESTORE, prev_err, prev_errlen);
            free(prev_err);
        } else if (rep->type == REDIS_REPLY_INTEGER)
            cb(data, 0, NULL, 0);
        else if (rep->type == REDIS_REPLY_ERROR)
            cb(data, HK_ESTORE, rep->str, rep->len);
        else
            cb(data, HK_ESTORE, "unexpected reply type", 21);
        return;
    }
}

/* hiredis's connect callback: only failure matters (success is the
 * handshake's answer). hiredis frees the context after this returns. */
static void on_connect(const redisAsyncContext *ac, int status)
{
    struct hk_redis *r = ac->data;
    if (!r || status == REDIS_OK)
        return;
    char why[320];
    snprintf(why, sizeof why, "cannot connect: %s", ac->c.errstr[0] ? ac->c.errstr : "connect failed");
    conn_fail(r, HK_EUNAVAIL, why, false);
}

/* hiredis's disconnect callback: the connection broke (our own frees clear
 * the callback first). hiredis frees the context after this returns. */
static void on_disconnect(const redisAsyncContext *ac, int status)
{
    (void)status;
    struct hk_redis *r = ac->data;
    if (!r)
        return;
    char why[320];
    snprintf(why, sizeof why, "connection lost: %s", ac->c.errstr[0] ? ac->c.errstr : "closed");
    conn_fail(r, HK_EUNAVAIL, why, false);
}

/* Queue one command on the context and the FIFO. */
static int send_argv(struct hk_redis *r, struct cmd *c, int argc, const char **argv, const size_t *lens)
{
    if (redisAsyncCommandArgv(r->ac, on_reply, NULL, argc, argv, lens) != REDIS_OK)
        return -1;
    push(r, c);
    return 0;
}

static struct cmd *cmd_new(struct hk_redis *r, enum kind kind, hk_redis_cb cb, void *data)
{
    struct cmd *c = xmalloc(sizeof *c);
    c->kind = kind;
    c->cb = cb;
    c->data = data;
    c->deadline = uv_now(r->loop) + r->cfg.timeout_ms;
    return c;
}

/* A context exists: the handshake goes first, then whatever waited for
 * the connection (formatted while resolving). */
static void open_conn(struct hk_redis *r, const char *ip)
{
    char why[320];
    redisAsyncContext *ac = r->cfg.unix_path ? redisAsyncConnectUnix(r->cfg.unix_path)
                                             : redisAsyncConnect(ip, r->cfg.port);
    if (!ac)
        abort();
    if (ac->err) {
        snprintf(why, sizeof why, "cannot connect: %s", ac->errstr ? ac->errstr : "error");
        redisAsyncFree(ac);
        conn_fail(r, HK_EUNAVAIL, why, false);
        return;
    }
    if (redisLibuvAttach(ac, r->loop) != REDIS_OK) {
        /* The adapter set its hooks before failing, with no data behind them. */
        memset(&ac->ev, 0, sizeof ac->ev);
        redisAsyncFree(ac);
        conn_fail(r, HK_EUNAVAIL, "cannot watch the connection's socket", false);
        return;
    }
    ac->ev.addRead = ev_add_read;
    ac->ev.delRead = ev_del_read;
    ac->ev.addWrite = ev_add_write;
    ac->ev.delWrite = ev_del_write;
    if (!r->cfg.unix_path)
        redisEnableKeepAlive(&ac->c);
    ac->data = r;
    redisAsyncSetConnectCallback(ac, on_connect);
    redisAsyncSetDisconnectCallback(ac, on_disconnect);
    r->ac = ac;
    r->state = S_CONNECTING;

    struct cmd *waiting = r->head;
    r->head = r->tail = NULL;
    const char *argv[3];
    size_t lens[3];
    char num[16];
    int n = auth_argv(&r->cfg, argv, lens);
    bool ok = true;
    if (n)
        ok = send_argv(r, cmd_new(r, K_AUTH, NULL, NULL), n, argv, lens) == 0;
    n = select_argv(&r->cfg, num, argv, lens);
    if (ok && n)
        ok = send_argv(r, cmd_new(r, K_SELECT, NULL, NULL), n, argv, lens) == 0;
    argv[0] = "PING";
    lens[0] = 4;
    if (ok)
        ok = send_argv(r, cmd_new(r, K_SETUP_PING, NULL, NULL), 1, argv, lens) == 0;
    while (ok && waiting) {
        struct cmd *c = waiting;
        waiting = c->next;
        ok = redisAsyncFormattedCommand(ac, on_reply, NULL, c->fmt, (size_t)c->fmtlen) == REDIS_OK;
        redisFreeCommand(c->fmt);
        c->fmt = NULL;
        push(r, c);
    }
    /* The commands that could not be queued stay in the FIFO until
     * conn_fail answers them. */
    while (waiting) {
        struct cmd *c = waiting;
        waiting = c->next;
        push(r, c);
    }
    if (!ok)
        conn_fail(r, HK_EUNAVAIL, "cannot queue commands on a new connection", true);
    else
        arm_tick(r);
}

static void on_resolved(uv_getaddrinfo_t *req, int status, struct addrinfo *res)
{
    struct hk_redis *r = req->data;
    r->gai_busy = false;
    if (r->state == S_CLOSED) {
        uv_freeaddrinfo(res);
        if (--r->nopen == 0) {
            hk_redis_cfg_free(&r->cfg);
            free(r);
        }
        return;
    }
    if (r->state != S_RESOLVING) {   /* given up on meanwhile (a timeout) */
        uv_freeaddrinfo(res);
        return;
    }
    char ip[INET6_ADDRSTRLEN] = "";
    const struct addrinfo *pick = NULL;
    for (const struct addrinfo *a = status == 0 ? res : NULL; a; a = a->ai_next)
        if (a->ai_family == AF_INET && !pick)
            pick = a;
    for (const struct addrinfo *a = status == 0 ? res : NULL; a && !pick; a = a->ai_next)
        if (a->ai_family == AF_INET6)
            pick = a;
    if (pick && pick->ai_family == AF_INET)
        uv_ip4_name((const struct sockaddr_in *)pick->ai_addr, ip, sizeof ip);
    else if (pick)
        uv_ip6_name((const struct sockaddr_in6 *)pick->ai_addr, ip, sizeof ip);
    uv_freeaddrinfo(res);
    if (!ip[0]) {
        char why[320];
        snprintf(why, sizeof why, "cannot resolve %s: %s", r->cfg.host,
                 status < 0 ? uv_strerror(status) : "no IPv4 or IPv6 address");
        conn_fail(r, HK_EUNAVAIL, why, false);
        return;
    }
    open_conn(r, ip);
}

/* Connect: directly to a socket path or an address (hiredis then does no
 * name lookup worth the name), through uv_getaddrinfo for a name. */
static void connect_start(struct hk_redis *r)
{
    if (r->state == S_CLOSED)
        return;
    assert(!r->ac);
    if (r->cfg.unix_path) {
        open_conn(r, NULL);
        return;
    }
    struct in6_addr a;
    if (inet_pton(AF_INET, r->cfg.host, &a) == 1 || inet_pton(AF_INET6, r->cfg.host, &a) == 1) {
        open_conn(r, r->cfg.host);
        return;
    }
    r->state = S_RESOLVING;
    if (r->gai_busy)
        return;   /* an earlier lookup is still out: its answer will do */
    char port[8];
    snprintf(port, sizeof port, "%d", r->cfg.port);
    struct addrinfo hints = {.ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM};
    r->gai.data = r;
    int rc = uv_getaddrinfo(r->loop, &r->gai, on_resolved, r->cfg.host, port, &hints);
    if (rc < 0) {
        char why[320];
        snprintf(why, sizeof why, "cannot resolve %s: %s", r->cfg.host, uv_strerror(rc));
        conn_fail(r, HK_EUNAVAIL, why, false);
        return;
    }
    r->gai_busy = true;
}


static void on_retry(uv_timer_t *t)
{
    connect_start(t->data);
}

static void on_tick(uv_timer_t *t);

/* Arm the timer for the head's deadline, or for the idle ping. It may stay
 * armed earlier than needed (the head it was armed for has been answered):
 * on_tick then looks again, which costs a wakeup instead of a timer restart
 * per command. */
static void arm_tick(struct hk_redis *r)
{
    if (r->state == S_CLOSED)
        return;
    uint64_t due;
    if (r->head) {
        due = r->head->deadline;
    } else if (r->state == S_UP) {
        due = r->last_io + HK_REDIS_PING_MS;
    } else {
        uv_timer_stop(&r->tick);
        r->tick_due = 0;
        return;
    }
    if (r->tick_due && r->tick_due <= due)
        return;
    uint64_t now = uv_now(r->loop);
    r->tick_due = due;
    uv_timer_start(&r->tick, on_tick, due > now ? due - now : 0, 0);
}

static void on_tick(uv_timer_t *t)
{
    struct hk_redis *r = t->data;
    r->tick_due = 0;
    uint64_t now = uv_now(r->loop);
    if (r->head && r->head->deadline <= now) {
        /* Replies can no longer be matched to commands once one is given
         * up on: everything on this connection goes, and a new one is made. */
        char why[160];
        snprintf(why, sizeof why, "%s within %" PRIu64 " ms",
                 r->state == S_UP ? "a command had no reply" : "no answer to the connection's set-up",
                 r->cfg.timeout_ms);
        conn_fail(r, HK_ETIMEDOUT, why, true);
        return;
    }
    if (!r->head && r->state == S_UP && now >= r->last_io + HK_REDIS_PING_MS) {
        /* An idle connection whose server vanished without a word (a host
         * gone, a partition) would otherwise look up until the next
         * command times out: readiness would lie meanwhile. */
        const char *argv[1] = {"PING"};
        size_t lens[1] = {4};
        struct cmd *c = cmd_new(r, K_IDLE_PING, NULL, NULL);
        if (send_argv(r, c, 1, argv, lens) < 0) {
            free(c);
            conn_fail(r, HK_EUNAVAIL, "cannot queue a ping", true);
            return;
        }
    }
    arm_tick(r);
}

struct hk_redis *hk_redis_attach(uv_loop_t *loop, const struct hk_redis_cfg *c)
{
    assert(c && (c->host || c->unix_path));
    struct hk_redis *r = xmalloc(sizeof *r);
    r->loop = loop;
    cfg_copy(&r->cfg, c);
    r->backoff_ms = HK_REDIS_BACKOFF_MIN_MS;
    uv_timer_init(loop, &r->tick);
    r->tick.data = r;
    uv_timer_init(loop, &r->retry);
    r->retry.data = r;
    atomic_init(&r->up, false);
    r->up_count = NULL;
    atomic_init(&r->inflight, 0);
    atomic_init(&r->reconnects, 0);
    atomic_init(&r->timeouts, 0);
    r->state = S_IDLE;
    r->last_io = uv_now(loop);
    connect_start(r);
    return r;
}

static void on_closed(uv_handle_t *h)
{
    struct hk_redis *r = h->data;
    if (--r->nopen == 0) {
        hk_redis_cfg_free(&r->cfg);
        free(r);
    }
}

void hk_redis_detach(struct hk_redis *r)
{
    if (!r)
        return;
    assert(r->state != S_CLOSED);
    if (r->ac)
        drop_context(r->ac);
    r->ac = NULL;
    r->state = S_CLOSED;
    set_up(r, false);
    struct cmd *list = take_all(r);
    r->nopen = 2 + (r->gai_busy ? 1 : 0);
    uv_close((uv_handle_t *)&r->tick, on_closed);
    uv_close((uv_handle_t *)&r->retry, on_closed);
    if (r->gai_busy)
        uv_cancel((uv_req_t *)&r->gai);   /* on_resolved runs either way and lets go */
    complete_all(list, HK_EUNAVAIL);
}

/* One command of a submission. */
struct argv_cmd {
    enum kind kind;
    int argc;
    const char **argv;
    const size_t *lens;
};

/* Queue n commands back to back (nothing can come between them: all of
 * this runs on the loop's thread) as ONE user command: the last carries
 * cb, the others none, and it counts once against max_inflight. */
static int submit_n(struct hk_redis *r, const struct argv_cmd *cmds, int n, hk_redis_cb cb, void *data)
{
    assert(cb && n >= 1);
    if (r->state == S_CLOSED || r->down)
        return HK_EUNAVAIL;
    if (r->nuser >= r->cfg.max_inflight)
        return HK_EBUSY;
    for (int i = 0; i < n; i++) {
        bool last = i == n - 1;
        struct cmd *c = cmd_new(r, cmds[i].kind, last ? cb : NULL, last ? data : NULL);
        if (r->ac) {
            if (send_argv(r, c, cmds[i].argc, cmds[i].argv, cmds[i].lens) < 0) {
                /* hiredis refuses only a context being torn down, which
                 * then answers the FIFO; commands queued before this one
                 * carry no callback and are simply dropped then. */
                free(c);
                return HK_EUNAVAIL;
            }
        } else {
            /* Only the first connection is waited for (a name being looked
             * up): later ones are made while down, when submit fails fast. */
            assert(r->state == S_RESOLVING);
            c->fmtlen = redisFormatCommandArgv(&c->fmt, cmds[i].argc, cmds[i].argv, cmds[i].lens);
            if (c->fmtlen < 0)
                abort();
            push(r, c);
        }
    }
    r->nuser++;
    atomic_fetch_add_explicit(&r->inflight, 1, memory_order_relaxed);
    arm_tick(r);
    return 0;
}

static int submit(struct hk_redis *r, enum kind kind, int argc, const char **argv, const size_t *lens,
                  hk_redis_cb cb, void *data)
{
    const struct argv_cmd c = {kind, argc, argv, lens};
    return submit_n(r, &c, 1, cb, data);
}

int hk_redis_get(struct hk_redis *r, const char *key, size_t klen, hk_redis_cb cb, void *data)
{
    const char *argv[2] = {"GET", key ? key : ""};
    size_t lens[2] = {3, klen};
    return submit(r, K_GET, 2, argv, lens, cb, data);
}

int hk_redis_setex(struct hk_redis *r, const char *key, size_t klen, const char *val, size_t vlen,
                   uint64_t ttl_ms, hk_redis_cb cb, void *data)
{
    if (ttl_ms == 0 || ttl_ms > TTL_MS_MAX)
        return HK_EINVAL;
    char ttl[24];
    int n = snprintf(ttl, sizeof ttl, "%" PRIu64, ttl_ms);
    const char *argv[5] = {"SET", key ? key : "", val ? val : "", "PX", ttl};
    size_t lens[5] = {3, klen, vlen, 2, (size_t)n};
    return submit(r, K_SET, 5, argv, lens, cb, data);
}

int hk_redis_del(struct hk_redis *r, const char *key, size_t klen, hk_redis_cb cb, void *data)
{
    const char *argv[2] = {"DEL", key ? key : ""};
    size_t lens[2] = {3, klen};
    return submit(r, K_DEL, 2, argv, lens, cb, data);
}

int hk_redis_sadd_px(struct hk_redis *r, const char *set, size_t setlen, const char *member, size_t mlen,
                     uint64_t ttl_ms, hk_redis_cb cb, void *data)
{
    if (ttl_ms == 0 || ttl_ms > TTL_MS_MAX)
        return HK_EINVAL;
    char ttl[24];
    int n = snprintf(ttl, sizeof ttl, "%" PRIu64, ttl_ms);
    const char *sadd[3] = {"SADD", set ? set : "", member ? member : ""};
    size_t sadd_lens[3] = {4, setlen, mlen};
    const char *pexpire[3] = {"PEXPIRE", set ? set : "", ttl};
    size_t pexpire_lens[3] = {7, setlen, (size_t)n};
    const struct argv_cmd cmds[2] = {{K_SADD, 3, sadd, sadd_lens}, {K_PEXPIRE, 3, pexpire, pexpire_lens}};
    return submit_n(r, cmds, 2, cb, data);
}

void hk_redis_count_up(struct hk_redis *r, atomic_int *count)
{
    assert(!atomic_load_explicit(&r->up, memory_order_relaxed) && !r->up_count);
    r->up_count = count;
}

bool hk_redis_up(const struct hk_redis *r)
{
    return atomic_load_explicit(&r->up, memory_order_relaxed);
}

void hk_redis_stats(const struct hk_redis *r, struct hk_redis_stats *out)
{
    out->connected = atomic_load_explicit(&r->up, memory_order_relaxed);
    out->in_flight = atomic_load_explicit(&r->inflight, memory_order_relaxed);
    out->capacity = r->cfg.max_inflight;
    out->reconnects = atomic_load_explicit(&r->reconnects, memory_order_relaxed);
    out->timeouts = atomic_load_explicit(&r->timeouts, memory_order_relaxed);
}
