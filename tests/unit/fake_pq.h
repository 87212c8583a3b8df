/* SPDX-License-Identifier: MIT
 * A scripted stand-in for libpq, installed with hk_pq_use(): just enough of
 * the connection, pipeline-mode and blocking-exec contract for the
 * PostgreSQL store, over a small in-memory table, with every message the
 * store sends recorded and a test's script deciding each answer (rows,
 * an error with a SQLSTATE, held back, or the connection dropped).
 * The webhook statements answer in the result format the store asks for
 * (binary for rows: int8 as 8 bytes, bytea as its bytes, bool as one byte);
 * ins_hook stores an ingress row, deduplicated on (source, delivery id) as
 * the unique index does; inserts keep the delivery state and due time they
 * write; the lists (newest first, or oldest first from $9) apply the time
 * bounds ($6, $7, binary timestamptz) and the delivery filter, and stats
 * counts the live rows per source. The outbox, purge, feed-snapshot and
 * notify statements are prepared only: executed, they fail. The credential statements (tok_*, ses_*) keep no
 * state: the fake answers as if their tables took every insert and held
 * nothing to read, revoke or delete. An error's primary message field is
 * its first line without the "ERROR:  " prefix, as libpq's. Single-threaded:
 * one loop per test. */
#ifndef HK_FAKE_PQ_H
#define HK_FAKE_PQ_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* What the store sent, one record per message. */
enum fpq_msg {
    FPQ_PREPARE,   /* PQsendPrepare */
    FPQ_QUERY,     /* PQsendQueryParams */
    FPQ_EXECUTE,   /* PQsendQueryPrepared */
    FPQ_FLUSH,     /* PQsendFlushRequest */
    FPQ_SYNC,      /* PQpipelineSync */
    FPQ_EXEC,      /* PQexec (blocking, outside pipeline mode) */
};

/* What the fake server did with it. */
enum fpq_outcome {
    FPQ_UNSEEN,    /* not at the server yet (not flushed) */
    FPQ_HELD,      /* the script holds its answer back */
    FPQ_ANSWERED,  /* a result (rows, command tag, or the Sync) */
    FPQ_FAILED,    /* an error result */
    FPQ_ABORTED,   /* PGRES_PIPELINE_ABORTED: an earlier statement of its group failed */
    FPQ_LOST,      /* the connection dropped before it was answered */
};

#define FPQ_MAX_PARAMS 16
/* timestamptz's binary form counts microseconds from 2000-01-01 UTC. */
#define FPQ_PG_EPOCH_US INT64_C(946684800000000)
/* The store's schema version (store/pg_sql.c: hk__pg_migrations). */
#define FPQ_SCHEMA_CURRENT 5

struct fpq_stmt {
    unsigned conn;            /* connection serial, from 1 in connect order */
    unsigned group;           /* Syncs that connection had sent before this message */
    enum fpq_msg msg;
    char name[16];            /* FPQ_PREPARE, FPQ_EXECUTE: the statement name */
    char *sql;                /* FPQ_PREPARE, FPQ_QUERY, FPQ_EXEC */
    int nparams;
    char *param[FPQ_MAX_PARAMS];   /* NULL: SQL NULL; else a NUL-terminated copy */
    int len[FPQ_MAX_PARAMS];
    int result_format;        /* FPQ_EXECUTE: 1 when the store asked for binary results */
    uint64_t sent_ms;         /* uv_hrtime() in ms when the store sent it */
    enum fpq_outcome outcome;
};

/* A script's answer to one message. */
enum fpq_act {
    FPQ_ANSWER,   /* what the in-memory database says (the default) */
    FPQ_FAIL,     /* an error result with `sqlstate` (NULL: none) */
    FPQ_HOLD,     /* no answer until fpq_release; the server stops there (what it
                     produced before is sent), as behind a lock */
    FPQ_DROP,     /* the server closes the connection: what it had not sent is
                     lost, the open transaction rolls back */
};

struct fpq_reply {
    enum fpq_act act;
    const char *sqlstate;
    const char *message;
};

/* Called for each message when the server reaches it, except Flush requests
 * and the statements a failed group skips; `r` comes set to FPQ_ANSWER. */
typedef void (*fpq_script_fn)(const struct fpq_stmt *s, struct fpq_reply *r, void *arg);

/* Install the fake as hk_pq and start over: no connections, an empty
 * table, schema version FPQ_SCHEMA_CURRENT, server version 16, no script. */
void fpq_reset(void);
/* Free what the fake holds. Returns how many connections were never
 * PQfinish'ed (each one a leak of the store's). */
unsigned fpq_cleanup(void);

void fpq_script(fpq_script_fn fn, void *arg);
/* The database's schema_version; -1: no schema_version table at all. */
void fpq_set_schema(int version);
int fpq_schema(void);
/* The next `n` connection attempts fail: at once (PQconnectStartParams
 * returns a CONNECTION_BAD connection) or, with at_start false, in
 * PQconnectPoll after one round trip. */
void fpq_fail_connects(unsigned n, bool at_start);

/* The script's held message on connection `conn` gets `r` now and the
 * server goes on. Returns false when nothing is held there. */
bool fpq_release(unsigned conn, const struct fpq_reply *r);
/* The server side of connection `conn` closes now (as FPQ_DROP). Returns
 * false when there is no such open connection. */
bool fpq_drop(unsigned conn);
/* The first connection (serial) holding a message, or 0. */
unsigned fpq_holding(void);
/* The message held on connection `conn`, or NULL. */
const struct fpq_stmt *fpq_held(unsigned conn);
/* Results of connection `conn` the store has not taken with PQgetResult. */
size_t fpq_unread(unsigned conn);

/* A committed row, as if inserted earlier. Returns its id. */
int64_t fpq_seed(const char *source, const char *event_type, const char *payload, int64_t received_us,
                 const char *idem_key);
/* Live rows with this source (committed, or in a transaction still open). */
unsigned fpq_rows(const char *source);
/* The id of the first live row with this source, or 0. */
int64_t fpq_row_id(const char *source);

/* The record. Pointers are valid until the store sends again. */
size_t fpq_nstmts(void);
const struct fpq_stmt *fpq_stmt_at(size_t i);
/* Executions of prepared statement `name` sent, whose first parameter is
 * the text `p0` (NULL: any). */
unsigned fpq_sends(const char *name, const char *p0);
/* The record of the n-th (from 0) such execution, or NULL. */
const struct fpq_stmt *fpq_send_at(const char *name, const char *p0, unsigned n);
/* EXECUTE messages in group `group` of connection `conn`. */
unsigned fpq_group_size(unsigned conn, unsigned group);
/* Big-endian int8 parameter i of s. */
int64_t fpq_param_i64(const struct fpq_stmt *s, int i);

/* Connection attempts, in order. */
struct fpq_connect {
    unsigned serial;
    uint64_t start_ms;        /* PQconnectStartParams, uv_hrtime() in ms */
    uint64_t drop_ms;         /* the server closed it (0: never) */
    bool failed;              /* the attempt failed */
    bool finished;            /* PQfinish'ed */
};
unsigned fpq_nconnects(void);
const struct fpq_connect *fpq_connect_at(unsigned i);   /* i from 0 */
/* Connections not PQfinish'ed yet. */
unsigned fpq_open_conns(void);

/* The record, one line per message, on stderr (for debugging a test). */
void fpq_dump(void);

#endif
