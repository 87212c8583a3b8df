/* SPDX-License-Identifier: MIT
 * Start-up of the PostgreSQL store: hk_pg_open loads libpq, starts one
 * connection per event loop at once, checks (or migrates, on a blocking
 * connection under an advisory lock) the schema on the first one up, and
 * leaves the connections for the loops to adopt (hk__pg_take_pre). */
#include "store/pg_int.h"

#include <assert.h>
#include <errno.h>
#include <inttypes.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <unistd.h>

#include "core/buf.h"
#include "core/clock.h"

#define PG_MIGRATE_TIMEOUT "60s"   /* statement_timeout of the migration session */
/* pg_advisory_lock key that serializes schema migrations ("hookd" in ASCII). */
#define PG_LOCK_KEY "448345400932"

static void on_notice(void *arg, const char *message)
{
    (void)arg;
    /* "relation already exists, skipping" and the like: not for stderr. */
    struct hk_buf b = HK_BUF_INIT;
    hk_buf_puts(&b, "\"notice\":");
    hk_buf_put_json_str(&b, message, strcspn(message, "\n"));
    hk_buf_putc(&b, '\0');
    hk_log(HK_LOG_DEBUG, "postgresql notice", "%s", b.p);
    hk_buf_free(&b);
}

/* Connection keywords: the URL expanded, then what hookd needs on top. */
PGconn *hk__pg_start_connect(const char *url)
{
    const char *const kw[] = {"dbname", "fallback_application_name", "client_encoding", NULL};
    const char *const val[] = {url, "hookd", "UTF8", NULL};
    PGconn *pc = hk_pq.PQconnectStartParams(kw, val, 1);
    if (!pc)
        abort();   /* libpq could not allocate: process-wide OOM policy */
    hk_pq.PQsetNoticeProcessor(pc, on_notice, NULL);
    return pc;
}

bool hk__pg_take_pre(struct pg_store *st, struct pre_conn *out)
{
    int k = -1;
    pthread_mutex_lock(&st->pre_lock);
    for (unsigned i = 0; i < st->npre; i++)
        if (st->pre[i].state != P_DEAD && (k < 0 || st->pre[i].state > st->pre[k].state))
            k = (int)i;
    if (k >= 0) {
        *out = st->pre[k];
        st->pre[k].pc = NULL;
        st->pre[k].state = P_DEAD;
    }
    pthread_mutex_unlock(&st->pre_lock);
    return k >= 0;
}

bool hk__pg_give_pre(struct pg_store *st, PGconn *pc, uint64_t prepared)
{
    bool kept = false;
    pthread_mutex_lock(&st->pre_lock);
    for (unsigned i = 0; i < st->npre && !kept; i++) {
        if (st->pre[i].state != P_DEAD)
            continue;
        st->pre[i] = (struct pre_conn){.pc = pc, .state = P_READY, .prepared = prepared};
        kept = true;
    }
    pthread_mutex_unlock(&st->pre_lock);
    return kept;
}

void hk__pg_store_free(struct pg_store *st)
{
    for (unsigned i = 0; i < st->npre; i++)
        if (st->pre[i].pc)
            hk_pq.PQfinish(st->pre[i].pc);
    free(st->pre);
    pthread_mutex_destroy(&st->pre_lock);
    free(st->url);
    free(st->safe_url);
    free(st);
}

/* ---- the migration, on a blocking connection ---------------------------- */

/* A blocking connection for the migration, bounded by PG_CONNECT_MS. */
static PGconn *connect_blocking(struct pg_store *st, char *errbuf, size_t errlen)
{
    PGconn *pc = hk__pg_start_connect(st->url);
    uint64_t deadline = hk_mono_ns() / 1000000 + PG_CONNECT_MS;
    PostgresPollingStatusType r = PGRES_POLLING_WRITING;
    if (hk_pq.PQstatus(pc) == CONNECTION_BAD)
        r = PGRES_POLLING_FAILED;
    while (r == PGRES_POLLING_READING || r == PGRES_POLLING_WRITING) {
        int64_t left = (int64_t)(deadline - hk_mono_ns() / 1000000);
        if (left <= 0) {
            snprintf(errbuf, errlen, "postgresql %s: timed out connecting after %d s", st->safe_url,
                     PG_CONNECT_MS / 1000);
            hk_pq.PQfinish(pc);
            return NULL;
        }
        struct pollfd p = {hk_pq.PQsocket(pc), r == PGRES_POLLING_READING ? POLLIN : POLLOUT, 0};
        int n = poll(&p, 1, (int)left);
        if (n < 0 && errno != EINTR)
            break;
        if (n > 0)
            r = hk_pq.PQconnectPoll(pc);
    }
    if (r != PGRES_POLLING_OK) {
        char msg[384];
        hk_pg_scrub(st->url, hk_pq.PQerrorMessage(pc), msg, sizeof msg);
        snprintf(errbuf, errlen, "postgresql %s: %s", st->safe_url, msg);
        hk_pq.PQfinish(pc);
        return NULL;
    }
    return pc;
}

/* Run `sql`; on failure write the reason and return -1. */
static int exec_ok(struct pg_store *st, PGconn *pc, const char *sql, PGresult **keep, char *errbuf,
                   size_t errlen)
{
    PGresult *res = hk_pq.PQexec(pc, sql);
    ExecStatusType s = hk_pq.PQresultStatus(res);
    if (s == PGRES_COMMAND_OK || s == PGRES_TUPLES_OK) {
        if (keep)
            *keep = res;
        else
            hk_pq.PQclear(res);
        return 0;
    }
    char msg[384];
    hk_pg_scrub(st->url, res ? hk_pq.PQresultErrorMessage(res) : hk_pq.PQerrorMessage(pc),
                msg, sizeof msg);
    snprintf(errbuf, errlen, "postgresql schema setup: %s", msg);
    hk_pq.PQclear(res);
    return -1;
}

/* Bring the schema to the current version on a blocking connection of its
 * own, which then joins the pool (returned; NULL on failure, reason in errbuf).
 * The advisory lock serializes replicas starting together; DDL is
 * transactional, so a migration is all or nothing. */
static PGconn *migrate(struct pg_store *st, char *errbuf, size_t errlen)
{
    PGconn *pc = connect_blocking(st, errbuf, errlen);
    PGresult *res = NULL;
    int rc = -1;
    if (!pc)
        return NULL;
    if (exec_ok(st, pc, "SET statement_timeout = '" PG_MIGRATE_TIMEOUT "'", NULL, errbuf, errlen) < 0 ||
        exec_ok(st, pc, "SELECT pg_advisory_lock(" PG_LOCK_KEY ")", NULL, errbuf, errlen) < 0 ||
        exec_ok(st, pc, "CREATE TABLE IF NOT EXISTS schema_version(version integer NOT NULL)", NULL,
                errbuf, errlen) < 0 ||
        exec_ok(st, pc, "BEGIN", NULL, errbuf, errlen) < 0 ||
        exec_ok(st, pc, PG_SCHEMA_CHECK, &res, errbuf, errlen) < 0)
        goto out;
    int version = atoi(hk_pq.PQgetvalue(res, 0, 0));
    hk_pq.PQclear(res);
    if (version > hk__pg_schema_version) {
        snprintf(errbuf, errlen, "database schema version %d is newer than this hookd's (%d)",
                 version, hk__pg_schema_version);
        goto out;
    }
    for (int v = version; v < hk__pg_schema_version; v++)
        if (exec_ok(st, pc, hk__pg_migrations[v], NULL, errbuf, errlen) < 0)
            goto out;
    if (version < hk__pg_schema_version) {
        char sql[128];
        snprintf(sql, sizeof sql, "DELETE FROM schema_version;"
                 "INSERT INTO schema_version(version) VALUES(%d)", hk__pg_schema_version);
        if (exec_ok(st, pc, sql, NULL, errbuf, errlen) < 0)
            goto out;
    }
    if (exec_ok(st, pc, "COMMIT", NULL, errbuf, errlen) < 0 ||
        exec_ok(st, pc, "SELECT pg_advisory_unlock(" PG_LOCK_KEY ")", NULL, errbuf, errlen) < 0)
        goto out;
    if (version < hk__pg_schema_version)
        hk_info("postgresql schema migrated", "\"from\":%d,\"to\":%d", version,
                hk__pg_schema_version);
    rc = 0;
out:
    if (rc < 0) {
        /* Closing the session ends the transaction and releases the lock. */
        hk_pq.PQfinish(pc);
        pc = NULL;
    }
    return pc;
}

/* ---- the start-up connections ------------------------------------------- */

/* Give up on a connection hk_pg_open started; the first failure is the one
 * reported if none succeeds. */
static void pre_fail(struct pg_store *st, struct pre_conn *p, char *why, size_t whylen)
{
    if (why[0] == '\0')
        hk_pg_scrub(st->url, hk_pq.PQerrorMessage(p->pc), why, whylen);
    hk_pq.PQfinish(p->pc);
    p->pc = NULL;
    p->state = P_DEAD;
}

/* Read what the schema check sent back. Returns 1 when the schema is
 * current (p is P_STAGED, or P_OK after a migration), 0 while waiting,
 * -1 when the connection failed (p is P_DEAD), -2 when hookd cannot use
 * this database (reason in errbuf). */
static int check_step(struct pg_store *st, struct pre_conn *p, char *why, size_t whylen, char *errbuf,
                      size_t errlen)
{
    int version = -1;
    if (hk_pq.PQflush(p->pc) < 0 || !hk_pq.PQconsumeInput(p->pc)) {
        pre_fail(st, p, why, whylen);
        return -1;
    }
    if (hk_pq.PQisBusy(p->pc))
        return 0;
    PGresult *res = hk_pq.PQgetResult(p->pc);
    if (!res) {
        pre_fail(st, p, why, whylen);
        return -1;
    }
    if (hk_pq.PQresultStatus(res) == PGRES_TUPLES_OK && hk_pq.PQntuples(res) == 1)
        version = atoi(hk_pq.PQgetvalue(res, 0, 0));
    hk_pq.PQclear(res);
    if (version == hk__pg_schema_version) {
        /* The NULL that ends the check's results; the setup's follow. */
        if (hk_pq.PQisBusy(p->pc) || (res = hk_pq.PQgetResult(p->pc))) {
            hk_pq.PQclear(res);
            if (why[0] == '\0')
                snprintf(why, whylen, "pipeline out of step (schema check)");
            pre_fail(st, p, why, whylen);
            return -1;
        }
        p->state = P_STAGED;
        return 1;
    }
    if (version > hk__pg_schema_version) {
        snprintf(errbuf, errlen, "database schema version %d is newer than this hookd's (%d)",
                 version, hk__pg_schema_version);
        return -2;
    }
    /* No schema yet (the check failed), or an older one: this connection's
     * pipeline is spoilt; migrate on a fresh one, which takes its place. */
    hk_pq.PQfinish(p->pc);
    p->pc = migrate(st, errbuf, errlen);
    if (!p->pc) {
        p->state = P_DEAD;
        return -2;
    }
    p->state = P_OK;
    return 1;
}

/* Start one connection per loop, all at once. */
static void pre_start_all(struct pg_store *st, char *why, size_t whylen)
{
    for (unsigned i = 0; i < st->npre; i++) {
        struct pre_conn *p = &st->pre[i];
        p->pc = hk__pg_start_connect(st->url);
        p->state = P_CONNECTING;
        p->poll = PGRES_POLLING_WRITING;   /* libpq's rule for a fresh connection */
        if (hk_pq.PQstatus(p->pc) == CONNECTION_BAD)
            pre_fail(st, p, why, whylen);
    }
}

/* The first connection up sends the schema check with its session setup
 * pipelined right behind. Returns its index, or -1 when none is up yet. */
static int pre_send_check(struct pg_store *st, char *why, size_t whylen)
{
    for (unsigned i = 0; i < st->npre; i++) {
        struct pre_conn *p = &st->pre[i];
        if (p->state != P_OK)
            continue;
        int k = hk__pg_send_setup(p->pc, st->timeout_ms, true, &p->prepared);
        if (k < 0) {
            pre_fail(st, p, why, whylen);
            continue;
        }
        p->state = P_CHECK;
        p->nsetup = k;
        return (int)i;
    }
    return -1;
}

/* What to poll for: fds[j] watches st->pre[idx[j]]. Returns how many
 * connections are still alive; *nfds is set. */
static unsigned pre_poll_set(struct pg_store *st, struct pollfd *fds, unsigned *idx, unsigned *nfds)
{
    unsigned live = 0;
    *nfds = 0;
    for (unsigned i = 0; i < st->npre; i++) {
        struct pre_conn *p = &st->pre[i];
        short ev = 0;
        if (p->state == P_CONNECTING)
            ev = p->poll == PGRES_POLLING_READING ? POLLIN : POLLOUT;
        else if (p->state == P_CHECK)
            ev = POLLIN | (hk_pq.PQflush(p->pc) != 0 ? POLLOUT : 0);
        live += p->state != P_DEAD;
        if (ev == 0)
            continue;
        fds[*nfds] = (struct pollfd){hk_pq.PQsocket(p->pc), ev, 0};
        idx[(*nfds)++] = i;
    }
    return live;
}

static void pre_connect_step(struct pg_store *st, struct pre_conn *p, char *why, size_t whylen)
{
    p->poll = hk_pq.PQconnectPoll(p->pc);
    if (p->poll == PGRES_POLLING_OK)
        p->state = P_OK;
    else if (p->poll != PGRES_POLLING_READING && p->poll != PGRES_POLLING_WRITING)
        pre_fail(st, p, why, whylen);
}

/* Start one connection per loop, all at once, and drive them (poll,
 * bounded by PG_CONNECT_MS) until the first one up has checked the schema,
 * with its session setup pipelined right behind the check. The rest are
 * left where they are for the loops to adopt. Returns 0, or -1 with errbuf
 * set. */
static int open_pool(struct pg_store *st, char *errbuf, size_t errlen)
{
    struct pollfd *fds = calloc(st->npre, sizeof *fds);
    unsigned *idx = calloc(st->npre, sizeof *idx);
    uint64_t deadline = hk_mono_ns() / 1000000 + PG_CONNECT_MS;
    char why[384] = "";
    int checking = -1;   /* the connection running the schema check */
    int rc = -1;
    if (!fds || !idx)
        abort();
    pre_start_all(st, why, sizeof why);
    for (;;) {
        unsigned nfds;
        if (checking < 0)
            checking = pre_send_check(st, why, sizeof why);
        if (pre_poll_set(st, fds, idx, &nfds) == 0) {
            snprintf(errbuf, errlen, "postgresql %s: %s", st->safe_url, why);
            goto out;
        }
        int64_t left = (int64_t)(deadline - hk_mono_ns() / 1000000);
        if (left <= 0) {
            snprintf(errbuf, errlen, "postgresql %s: timed out connecting after %d s", st->safe_url,
                     PG_CONNECT_MS / 1000);
            goto out;
        }
        int r = poll(fds, nfds, (int)left);
        if (r < 0 && errno != EINTR) {
            snprintf(errbuf, errlen, "postgresql %s: poll: %s", st->safe_url, strerror(errno));
            goto out;
        }
        for (unsigned j = 0; r > 0 && j < nfds; j++) {
            struct pre_conn *p = &st->pre[idx[j]];
            if (fds[j].revents == 0)
                continue;
            if (p->state == P_CONNECTING) {
                pre_connect_step(st, p, why, sizeof why);
                continue;
            }
            int c = check_step(st, p, why, sizeof why, errbuf, errlen);
            if (c == 1 || c == -2) {
                rc = c == 1 ? 0 : -1;
                goto out;
            }
            if (c == -1)
                checking = -1;
        }
    }
out:
    free(fds);
    free(idx);
    return rc;
}

/* ---- hk_pg_open ------------------------------------------------------------ */

/* The store, its settings and its (not yet started) pre-connections. */
static struct pg_store *store_new(const struct hk_pg_config *cfg)
{
    struct pg_store *st = calloc(1, sizeof *st);
    if (!st || !(st->url = strdup(cfg->url)))
        abort();
    size_t n = strlen(cfg->url) + 64;
    st->safe_url = malloc(n);
    if (!st->safe_url)
        abort();
    hk_pg_redact(cfg->url, st->safe_url, n);
    st->base.vt = &hk__pg_vt;
    st->pool = cfg->pool > 0 ? cfg->pool : 2;
    st->queue_max = cfg->queue_max > 0 ? cfg->queue_max : 1024;
    st->timeout_ms = cfg->timeout_ms > 0 ? cfg->timeout_ms : 5000;
    st->tick_ms = st->timeout_ms / 8;
    st->tick_ms = st->tick_ms < 5 ? 5 : st->tick_ms > 250 ? 250 : st->tick_ms;
    atomic_init(&st->nloops, 0);
    atomic_init(&st->ndown, 0);
    atomic_init(&st->ready, 0);
    atomic_init(&st->busy, 0);
    atomic_init(&st->waiting, 0);
    /* Names this store's announcements: its own watchers skip them. */
    uint64_t r;
    if (getrandom(&r, sizeof r, GRND_NONBLOCK) != (ssize_t)sizeof r)
        r = (uint64_t)hk_wall_us() ^ ((uint64_t)getpid() << 40);
    snprintf(st->token, sizeof st->token, "%016" PRIx64, r);
    pthread_mutex_init(&st->pre_lock, NULL);
    /* One per loop: see pg_loop_attach (pg.c). */
    st->npre = cfg->loops > 0 ? cfg->loops : 1;
    st->pre = calloc(st->npre, sizeof *st->pre);
    if (!st->pre)
        abort();
    return st;
}

/* libpq's own check of the connection string, before anything connects. */
static int check_url(struct pg_store *st, char *errbuf, size_t errlen)
{
    char *perr = NULL;
    PQconninfoOption *opts = hk_pq.PQconninfoParse(st->url, &perr);
    if (!opts) {
        char msg[384];
        hk_pg_scrub(st->url, perr ? perr : "out of memory", msg, sizeof msg);
        snprintf(errbuf, errlen, "DATABASE_URL is not a valid connection string: %s", msg);
        if (perr)
            hk_pq.PQfreemem(perr);
        return -1;
    }
    hk_pq.PQconninfoFree(opts);
    return 0;
}

struct hk_store *hk_pg_open(const struct hk_pg_config *cfg, char *errbuf, size_t errlen)
{
    assert(errlen > 0);
    errbuf[0] = '\0';
    if (!cfg->url || cfg->url[0] == '\0') {
        snprintf(errbuf, errlen, "postgresql: empty DATABASE_URL");
        return NULL;
    }
    if (hk_pq_load(errbuf, errlen) < 0)
        return NULL;
    struct pg_store *st = store_new(cfg);
    if (check_url(st, errbuf, errlen) < 0 || open_pool(st, errbuf, errlen) < 0) {
        hk__pg_store_free(st);
        return NULL;
    }
    return &st->base;
}
