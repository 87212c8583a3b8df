/* SPDX-License-Identifier: MIT
 * Internals of the PostgreSQL store shared by its files: the types of the
 * store, its start-up connections and its per-loop pools, and the helpers
 * one file offers the others. Not for use outside src/store/pg*.c.
 *
 * Ownership: hk_pg_open allocates the pg_store and owns it until close();
 * the pre_conns it starts belong to st->pre (under pre_lock) until a loop
 * takes one over. Each pg_loop, and the pg_conns, the listen connection
 * and the handles in it, belongs to the thread of the loop that attached
 * it; only the atomics of pg_store are touched from several threads. A
 * feed read's rows (PGresult) belong to its E_HORIZON ring entry until the
 * snapshot after them arrives. */
#ifndef HK_PG_INT_H
#define HK_PG_INT_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <uv.h>

#include "core/log.h"
#include "store/pg.h"
#include "store/pq_api.h"

#define PG_PIPELINE_MAX 64         /* ops in flight on one connection */
/* Ops and their feed snapshots, the groups' Syncs, and the Parses of
 * statements on their first use (at most one per statement in flight). */
#define PG_RING (2 * PG_PIPELINE_MAX + 24 + 64)
#define PG_CONNECT_MS 10000        /* one connection attempt, setup included */
#define PG_CLAIM_MAX 1000          /* rows per CLAIM, at most (store.h) */
/* Source names in one text[] parameter (CLAIM's FIFO sources, PURGE's
 * exceptions), at most, and their bytes: far above any sources file. */
#define PG_NAMES_MAX 100000
#define PG_NAMES_BYTES_MAX (64u << 20)

/* ---- the store and its start-up connections (pg_open.c) ---------------- */

/* A connection hk_pg_open started, waiting for a loop to adopt it; ordered
 * from least to most advanced. P_READY: set up and idle, given back by a
 * loop that detached (a start-up task's, such as the first-start token
 * check), so that the next loop does not connect and prepare again. */
enum pre_state { P_DEAD, P_CONNECTING, P_OK, P_CHECK, P_STAGED, P_READY };

struct pre_conn {
    PGconn *pc;
    enum pre_state state;
    PostgresPollingStatusType poll;  /* P_CONNECTING: what PQconnectPoll asked for last */
    int nsetup;                      /* P_CHECK, P_STAGED: setup statements after the check */
    uint64_t prepared;               /* P_STAGED, P_READY: its prepared statements */
};

struct pg_store {
    struct hk_store base;
    char *url;                     /* holds the password: never logged */
    char *safe_url;                /* redacted */
    unsigned pool;
    size_t queue_max;
    uint64_t timeout_ms;
    uint64_t tick_ms;              /* deadline check period while ops are out */
    atomic_int nloops;
    atomic_int ndown;              /* loops whose pool went down: one log line per spell */
    /* Gauges for stats(), summed over the loops. */
    atomic_long ready;             /* connections usable */
    atomic_long busy;              /* connections with ops in flight */
    atomic_long waiting;           /* ops waiting for a connection */
    char token[20];                /* names this store's announcements (hex), so its watchers skip them */
    pthread_mutex_t pre_lock;      /* guards pre: loops attach on their own threads */
    struct pre_conn *pre;
    unsigned npre;
};

/* ---- a loop's pool (pg.c) ------------------------------------------------ */

struct pg_loop;

enum conn_state { C_DOWN, C_CONNECTING, C_SETUP, C_READY };
/* What the connection waits for, in send order. A feed's read (a LIST
 * with `ascending`) is two: its rows (E_OP), then the snapshot after them
 * (E_HORIZON), which holds the op and the rows once they came. A
 * statement's first use on the connection is preceded by its Parse
 * (E_PREP). */
enum ent_kind { E_OP, E_SYNC, E_SETUP, E_PING, E_HORIZON, E_NOTIFY, E_PREP };

struct ent {
    uint8_t kind;
    int8_t stmt;                   /* E_PREP: the statement it prepares */
    bool got;                      /* its result came; the NULL that ends it has not */
    uint64_t deadline;             /* loop time (ms) */
    struct hk_store_op *op;        /* E_OP until the op is completed, held or handed to its E_HORIZON */
    PGresult *res;                 /* E_HORIZON: the read's rows, owned here until delivered */
};

/* An op of the oldest open group whose result came, waiting for the
 * group's Sync. */
struct held {
    struct hk_store_op *op;
    PGresult *res;                 /* a write's result; NULL for an op aborted by the group's failure */
};

/* A poll handle lives until its close callback, which may come after the
 * connection moved to another socket or the loop detached. */
struct pg_poll {
    uv_poll_t h;
    struct pg_loop *pl;
    struct pg_conn *c;             /* NULL once dropped */
    struct pg_listen *l;           /* a listen connection's, instead of c */
};

struct pg_conn {
    struct pg_loop *pl;
    PGconn *pc;
    struct pg_poll *poll;
    int events;                    /* what poll watches */
    enum conn_state state;
    struct ent ring[PG_RING];
    unsigned head, n;              /* ring occupancy */
    uint64_t prepared;             /* statements prepared, or their Parse sent (pg_sql.c) */
    bool standby;                  /* not started yet: opened when ops wait for a connection */
    unsigned nops;                 /* E_OP entries in the ring */
    unsigned nsyncs;               /* E_SYNC entries in the ring: groups in flight */
    /* Writes whose result came, waiting for their group's Sync (the commit),
     * and once the group failed, the ops it aborted too: both go out again
     * after the Sync. At most one group's worth: a group is at most
     * PG_PIPELINE_MAX ops. */
    struct held held[PG_PIPELINE_MAX];
    unsigned nheld;
    bool group_failed;             /* the group rolls back at its Sync */
    bool dirty;                    /* sent since the last Sync */
    uint8_t cls;                   /* group_class of the open group's ops */
    bool parses;                   /* the open group holds a Parse */
    uint64_t group_deadline;       /* latest deadline sent in the open group */
    uint64_t connect_deadline;
    uint64_t last_io;              /* loop time of the last send or result */
    unsigned backoff_ms;
    bool failed_once;              /* for loop_attach's initial wait */
    char err[256];                 /* last failure, scrubbed */
    uv_timer_t retry;
};

/* The connection a loop's `watch` LISTENs on: outside the pool, not in
 * pipeline mode, its own back-off and ping. */
enum listen_state { L_OFF, L_DOWN, L_CONNECTING, L_LISTENING, L_READY };

struct pg_listen {
    struct pg_loop *pl;
    enum listen_state state;
    PGconn *pc;
    struct pg_poll *poll;
    int events;
    uv_timer_t timer;              /* reconnect back-off, connect deadline, pings */
    unsigned backoff_ms;
    uint64_t deadline;             /* loop time (ms) the step under way must end by */
    bool ping_out;                 /* a ping's answer is awaited */
    uint64_t last_io;
    void (*cb)(void *ud);
    void *ud;
};

struct pg_loop {
    struct hk_store_loop base;     /* first: the API casts between the two */
    struct pg_store *st;
    uv_loop_t *loop;
    struct pg_conn *conns;
    unsigned nconns;
    unsigned nready;
    struct hk_store_op *wait_head, *wait_tail;
    size_t nwait;
    size_t nops;                   /* waiting + in flight + held */
    size_t streams;                /* streamed lists between batches */
    uv_prepare_t prep;             /* prep and check flush the wait queue: */
    uv_check_t check;              /* before the loop blocks, and after I/O */
    uv_timer_t tick;
    uint64_t tick_period;
    uint64_t next_ping;
    unsigned closing;              /* handles whose close callback is due */
    bool armed;
    bool announce;                 /* an announcement waits for a connection (flush_queue sends it) */
    struct pg_listen listen;       /* state L_OFF until watch() */
    bool up;                       /* for the one-line-per-spell log */
    bool counted_down;
    bool detached;
};

/* ---- pg_sql.c: statements, schema, rows, errors --------------------------- */

/* Migrations: entry i takes the database from version i to i + 1. */
extern const char *const hk__pg_migrations[];
extern const int hk__pg_schema_version;
#define PG_SCHEMA_CHECK "SELECT coalesce(max(version), 0) FROM schema_version"

/* Pipeline mode, then (with `check`, PG_SCHEMA_CHECK and a Flush first)
 * the session set up and the hot statements prepared, all in one group
 * closed by one Sync; *prepared gets the set of those statements. Returns
 * how many setup statements follow the check, or -1. */
int hk__pg_send_setup(PGconn *pc, uint64_t timeout_ms, bool check, uint64_t *prepared);

/* The senders below run a statement prepared on the connection, preparing
 * it first in the same pipeline when `*prepared` (the connection's set of
 * statements, bit = statement) lacks it. Each returns -1 on libpq's error,
 * else the number of Parses sent ahead of the statement (0 or 1): when 1,
 * *prep names the statement, and the caller expects one more result (the
 * Parse's) before the statement's, and calls hk__pg_unprepare if that
 * result is not a success. */

/* Send `op`'s statement with its parameters (binary). */
int hk__pg_send_op(PGconn *pc, const struct hk_store_op *op, uint64_t *prepared, int *prep);
/* Send the ping statement. */
int hk__pg_send_ping(PGconn *pc, uint64_t *prepared, int *prep);
/* Prepare the feed's snapshot statement unless the connection has it:
 * sent ahead of the read it follows, so that nothing comes between the
 * two results. Returns as the senders do. */
int hk__pg_prepare_horizon(PGconn *pc, uint64_t *prepared, int *prep);
/* Send the feed's snapshot statement (after an ascending LIST's), which
 * hk__pg_prepare_horizon prepared. 0 or -1. */
int hk__pg_send_horizon(PGconn *pc);
/* Send the NOTIFY of this schema's channel, `token` its payload. */
int hk__pg_send_notify(PGconn *pc, const char *token, uint64_t *prepared, int *prep);
/* The Parse of statement `id` failed or was skipped: not prepared. */
void hk__pg_unprepare(uint64_t *prepared, int id);
/* Send LISTEN on this schema's channel (not in pipeline mode). 0 or -1. */
int hk__pg_send_listen(PGconn *pc);

/* Would the server take every parameter of `op`? */
bool hk__pg_params_ok(const struct hk_store_op *op);

/* Columns of a webhook row (pg_sql.c COLS); an INSERT that returns the row
 * adds one, column PG_NCOLS: whether it inserted the row (false: it was
 * stored already). */
#define PG_NCOLS 18

/* Does the op's INSERT return the whole row (an idempotency key, or an
 * ingress row), or its id only? */
bool hk__pg_insert_returns_row(const struct hk_store_op *op);
/* Row i of a webhook statement's (binary) result; strings and the body
 * borrowed from `res`. False when it does not read as one (the caller
 * answers HK_ESTORE). */
bool hk__pg_row_of(const PGresult *res, int i, struct hk_webhook *row);
/* ins_hook's answer: the stored row's id and time, and whether this
 * statement inserted it (false: the delivery was stored before). */
bool hk__pg_hook_of(const PGresult *res, int64_t *id, int64_t *received_us, bool *inserted);
/* The snapshot statement's answer into *h (valid set). False when it does
 * not read as one. */
bool hk__pg_horizon_of(const PGresult *res, struct hk_feed_horizon *h);
/* SETTLE's answer: 0, HK_ECONFLICT, HK_ENOTFOUND, or HK_ESTORE when it does
 * not read as one; a batch's, 0 with op->fwd.settled set, or HK_ESTORE. */
int hk__pg_settle_of(const PGresult *res, struct hk_store_op *op);
/* The SQL of the statement prepared as `name`, or NULL (for the tests that
 * look at its plan). */
const char *hk__pg_stmt_sql(const char *name);
/* PURGE's answer into pg->deleted and pg->store_bytes. */
bool hk__pg_purge_of(const PGresult *res, struct hk_purge_op *pg);
/* Row i of the stats statement's (binary) result; the name borrowed from
 * `res`. False when it does not read as one (the caller answers HK_ESTORE). */
bool hk__pg_stats_of(const PGresult *res, int i, struct hk_source_stats *out);
/* The id a plain INSERT returned. */
bool hk__pg_id_of(const PGresult *res, int64_t *id);
/* Column PG_NCOLS of an INSERT that returns the row. */
bool hk__pg_inserted_of(const PGresult *res, bool *inserted);
/* Row i of a token or session statement's result, copied into *out. False
 * when it does not read as one (the caller answers HK_ESTORE). */
bool hk__pg_token_of(const PGresult *res, int i, struct hk_token_rec *out);
bool hk__pg_session_of(const PGresult *res, int i, struct hk_session_rec *out);
/* A bigint in PostgreSQL's text form. */
int64_t hk__pg_to_i64(const char *s);

/* A failed statement's HK_E* code; its SQLSTATE (borrowed from res, or
 * NULL) in *sqlstate. */
int hk__pg_map_error(PGconn *pc, const PGresult *res, const char **sqlstate);

/* Log `msg` with a libpq message, scrubbed of st's password, and SQLSTATE. */
void hk__pg_log(enum hk_log_level lvl, const char *msg, struct pg_store *st, const char *pgmsg,
                const char *sqlstate);

/* ---- pg_open.c: start-up ----------------------------------------------------- */

/* A non-blocking connection to `url` started (never NULL: OOM aborts), with
 * hookd's application name, client encoding and notice processor. */
PGconn *hk__pg_start_connect(const char *url);

/* The most advanced connection hk_pg_open started, if one is left: moved
 * into *out (the caller owns its PGconn). Thread-safe. */
bool hk__pg_take_pre(struct pg_store *st, struct pre_conn *out);
/* Keep an idle, set-up connection for the next loop to adopt (P_READY).
 * False when there is no room: the caller closes it. */
bool hk__pg_give_pre(struct pg_store *st, PGconn *pc, uint64_t prepared);

/* Free the store and any start-up connection no loop took. */
void hk__pg_store_free(struct pg_store *st);

/* ---- pg.c: the pool ------------------------------------------------------------ */

extern const struct hk_store_vt hk__pg_vt;

#endif
