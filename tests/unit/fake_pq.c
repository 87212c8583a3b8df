/* SPDX-License-Identifier: MIT
 * The scripted libpq of fake_pq.h. Each fake connection is one end of a
 * socketpair, so the store's uv_poll and poll() see real readiness: the
 * "server" writes a byte to the other end whenever it sends results, and
 * closes it to drop the connection. Messages the store sends wait in the
 * connection's output until PQflush/PQpipelineSync hands them to the
 * server, which answers them in order, following libpq's pipeline rules:
 * each query's result then a NULL, PGRES_PIPELINE_ABORTED for the queries
 * after an error up to the next Sync, PGRES_PIPELINE_SYNC at each Sync
 * (commit, or rollback after an error), and the server's output sent only
 * at a Sync or Flush (or when it stops on a held message). */
#include "fake_pq.h"

#include <assert.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <uv.h>

#include "store/pq_api.h"

/* ---- small containers ---------------------------------------------------- */

/* A FIFO of words: log indices (messages) or result pointers (0 is the
 * NULL that ends a query's results). */
struct dq {
    uintptr_t *v;
    size_t head, n, cap;
};

static void dq_push(struct dq *q, uintptr_t x)
{
    if (q->n == q->cap) {
        size_t cap = q->cap > 0 ? q->cap * 2 : 16;
        uintptr_t *v = malloc(cap * sizeof *v);
        if (v == NULL)
            abort();
        for (size_t i = 0; i < q->n; i++)
            v[i] = q->v[(q->head + i) % q->cap];
        free(q->v);
        q->v = v;
        q->head = 0;
        q->cap = cap;
    }
    q->v[(q->head + q->n) % q->cap] = x;
    q->n++;
}

static uintptr_t dq_pop(struct dq *q)
{
    assert(q->n > 0);
    uintptr_t x = q->v[q->head];
    q->head = (q->head + 1) % q->cap;
    q->n--;
    return x;
}

static void *xcalloc(size_t n, size_t size)
{
    void *p = calloc(n, size);
    if (p == NULL)
        abort();
    return p;
}

static void *xrealloc(void *p, size_t size)
{
    p = realloc(p, size);
    if (p == NULL)
        abort();
    return p;
}

static char *xstrndup(const char *s, size_t n)
{
    char *p = malloc(n + 1);
    if (p == NULL)
        abort();
    memcpy(p, s, n);
    p[n] = '\0';
    return p;
}

static uint64_t now_ms(void)
{
    return uv_hrtime() / 1000000;
}

/* ---- results ------------------------------------------------------------- */

struct fres {
    ExecStatusType status;
    char sqlstate[6];
    char *message;
    char *primary;                 /* the message's first line, no severity */
    char cmd[24];
    int nrows, ncols;
    bool binary;                   /* int8 and bool cells in binary format */
    char **cell;                   /* nrows * ncols; NULL: SQL NULL */
    int *clen;                     /* each cell's length */
};

static char empty[1];

static struct fres *res_new(ExecStatusType status, int nrows, int ncols)
{
    struct fres *r = xcalloc(1, sizeof *r);
    r->status = status;
    r->nrows = nrows;
    r->ncols = ncols;
    if (nrows * ncols > 0) {
        r->cell = xcalloc((size_t)(nrows * ncols), sizeof *r->cell);
        r->clen = xcalloc((size_t)(nrows * ncols), sizeof *r->clen);
    }
    return r;
}

/* n bytes (any, NUL included) into a cell; p NULL: SQL NULL. */
static void res_set_bytes(struct fres *r, int row, int col, const void *p, size_t n)
{
    assert(row < r->nrows && col < r->ncols);
    r->cell[row * r->ncols + col] = p != NULL ? xstrndup(p, n) : NULL;
    r->clen[row * r->ncols + col] = (int)n;
}

static void res_set(struct fres *r, int row, int col, const char *p)
{
    res_set_bytes(r, row, col, p, p != NULL ? strlen(p) : 0);
}

static void res_set_i64(struct fres *r, int row, int col, int64_t v)
{
    if (r->binary) {
        char b[8];
        uint64_t u = (uint64_t)v;
        for (int i = 7; i >= 0; i--, u >>= 8)
            b[i] = (char)(u & 0xff);
        res_set_bytes(r, row, col, b, 8);
        return;
    }
    char b[24];
    snprintf(b, sizeof b, "%" PRId64, v);
    res_set(r, row, col, b);
}

/* An int2 or int4 cell (n bytes when binary). */
static void res_set_int(struct fres *r, int row, int col, int32_t v, int n)
{
    if (r->binary) {
        char b[4];
        uint32_t u = (uint32_t)v;
        for (int i = n - 1; i >= 0; i--, u >>= 8)
            b[i] = (char)(u & 0xff);
        res_set_bytes(r, row, col, b, (size_t)n);
        return;
    }
    char b[16];
    snprintf(b, sizeof b, "%d", v);
    res_set(r, row, col, b);
}

static void res_set_bool(struct fres *r, int row, int col, bool v)
{
    if (r->binary)
        res_set_bytes(r, row, col, v ? "\1" : "\0", 1);
    else
        res_set(r, row, col, v ? "t" : "f");
}

static struct fres *res_error(const char *sqlstate, const char *message)
{
    struct fres *r = res_new(PGRES_FATAL_ERROR, 0, 0);
    if (sqlstate != NULL)
        snprintf(r->sqlstate, sizeof r->sqlstate, "%s", sqlstate);
    r->message = xstrndup(message, strlen(message));
    const char *p = strncmp(message, "ERROR:  ", 8) == 0 ? message + 8 : message;
    r->primary = xstrndup(p, strcspn(p, "\n"));
    return r;
}

static void res_free(struct fres *r)
{
    if (r == NULL)
        return;
    for (int i = 0; i < r->nrows * r->ncols; i++)
        free(r->cell[i]);
    free(r->cell);
    free(r->clen);
    free(r->message);
    free(r->primary);
    free(r);
}

/* ---- state ----------------------------------------------------------------- */

struct frow {
    int64_t id;
    char *source, *event_type, *payload, *idem;
    int64_t received_us;
    bool live;
    /* An ingress row (ins_hook): body non-NULL. Texts NUL-terminated. */
    char *body;
    size_t body_len;
    char *content_type, *delivery, *headers, *verified, *client_addr;
    char sha[32];
    bool has_sha;
    /* The delivery columns an insert writes: dstate, dnext_us (0: NULL). */
    int dstate;
    int64_t dnext_us;
};

struct undo {
    size_t row;
    bool was_live;
};

struct fconn {
    unsigned serial;               /* 1 + index in F.cons */
    int a, b;                      /* the store's end, the server's end */
    ConnStatusType status;
    bool will_fail;                /* fails in PQconnectPoll */
    int step;                      /* PQconnectPoll calls so far */
    bool pipeline;
    bool dead;                     /* the server closed its end */
    unsigned groups;               /* Syncs sent */
    struct dq out;                 /* sent, not flushed (log indices) */
    struct dq inbox;               /* at the server, not answered yet */
    struct dq pending;             /* results the server has not sent yet */
    struct dq wire;                /* results sent, not read by PQconsumeInput */
    struct dq input;               /* results read, not taken by PQgetResult */
    bool holding;
    size_t hold;                   /* the held message */
    bool failed;                   /* the open group failed: skip to the Sync */
    struct undo *undo;
    size_t nundo, capundo;
    char prepared[64][16];         /* the names PQsendPrepare sent (the store prepares 45) */
    unsigned nprepared;
    char err[256];
};

static struct {
    struct fpq_stmt *log;
    size_t nlog, caplog;
    struct fpq_connect *cons;
    struct fconn **conns;          /* parallel to cons; NULL once finished */
    unsigned ncons, capcons;
    struct frow *rows;
    size_t nrows, caprows;
    int64_t next_id;
    int schema;
    int server_version;
    unsigned fail_n;
    bool fail_at_start;
    fpq_script_fn script;
    void *arg;
} F;

static struct fconn *find(unsigned serial)
{
    return serial >= 1 && serial <= F.ncons ? F.conns[serial - 1] : NULL;
}

/* The server sent something: the store's end becomes readable. */
static void signal_conn(struct fconn *c)
{
    char x = 0;
    if (c->b >= 0 && write(c->b, &x, 1) != 1)
        abort();
}

/* Read what the socket holds. Returns true at end of file. */
static bool drain_socket(struct fconn *c)
{
    char b[256];
    for (;;) {
        ssize_t n = read(c->a, b, sizeof b);
        if (n > 0)
            continue;
        return n == 0;
    }
}

/* ---- the in-memory database ----------------------------------------------- */

static size_t row_add(struct fconn *c, const char *source, const char *event_type, const char *payload,
                      int64_t received_us, const char *idem)
{
    if (F.nrows == F.caprows) {
        F.caprows = F.caprows > 0 ? F.caprows * 2 : 16;
        F.rows = xrealloc(F.rows, F.caprows * sizeof *F.rows);
    }
    struct frow *r = &F.rows[F.nrows];
    memset(r, 0, sizeof *r);
    r->id = ++F.next_id;
    r->source = xstrndup(source, strlen(source));
    r->event_type = xstrndup(event_type, strlen(event_type));
    r->payload = payload != NULL ? xstrndup(payload, strlen(payload)) : NULL;
    r->idem = idem != NULL ? xstrndup(idem, strlen(idem)) : NULL;
    r->received_us = received_us;
    r->live = true;
    if (c != NULL) {
        if (c->nundo == c->capundo) {
            c->capundo = c->capundo > 0 ? c->capundo * 2 : 16;
            c->undo = xrealloc(c->undo, c->capundo * sizeof *c->undo);
        }
        c->undo[c->nundo++] = (struct undo){F.nrows, false};
    }
    return F.nrows++;
}

static void row_kill(struct fconn *c, size_t i)
{
    if (c->nundo == c->capundo) {
        c->capundo = c->capundo > 0 ? c->capundo * 2 : 16;
        c->undo = xrealloc(c->undo, c->capundo * sizeof *c->undo);
    }
    c->undo[c->nundo++] = (struct undo){i, F.rows[i].live};
    F.rows[i].live = false;
}

static void commit(struct fconn *c)
{
    c->nundo = 0;
}

static void rollback(struct fconn *c)
{
    while (c->nundo > 0) {
        struct undo *u = &c->undo[--c->nundo];
        F.rows[u->row].live = u->was_live;
    }
}

static struct frow *row_by_id(int64_t id)
{
    for (size_t i = 0; i < F.nrows; i++)
        if (F.rows[i].live && F.rows[i].id == id)
            return &F.rows[i];
    return NULL;
}

/* The store's COLS (store/pg_sql.c) [, inserted]. */
#define ROW_COLS 18

static void put_row(struct fres *res, int i, const struct frow *r)
{
    res_set_i64(res, i, 0, r->id);
    res_set(res, i, 1, r->source);
    res_set(res, i, 2, r->event_type);
    res_set(res, i, 3, r->payload);
    res_set_i64(res, i, 4, r->received_us - FPQ_PG_EPOCH_US);   /* a binary timestamptz */
    res_set_bytes(res, i, 5, r->body, r->body_len);
    res_set(res, i, 6, r->content_type);
    res_set(res, i, 7, r->delivery);
    res_set_bytes(res, i, 8, r->has_sha ? r->sha : NULL, 32);
    res_set(res, i, 9, r->headers);
    res_set(res, i, 10, r->verified);
    res_set(res, i, 11, r->client_addr);
    res_set_int(res, i, 12, r->dstate, 2);
    res_set_int(res, i, 13, 0, 4);
    res_set(res, i, 14, NULL);
    res_set(res, i, 15, NULL);
    if (r->dnext_us != 0)
        res_set_i64(res, i, 16, r->dnext_us);
    res_set(res, i, 17, NULL);
}

/* An insert's delivery parameters from i on: dstate, dnext_us (the lease
 * is not kept). */
static void set_delivery(struct frow *r, const struct fpq_stmt *s, int i)
{
    r->dstate = (int)fpq_param_i64(s, i);
    r->dnext_us = s->param[i + 1] != NULL ? fpq_param_i64(s, i + 1) : 0;
}

static char *param_dup(const struct fpq_stmt *s, int i)
{
    return s->param[i] != NULL ? xstrndup(s->param[i], (size_t)s->len[i]) : NULL;
}

/* ins_hook: $1 source, $2 event_type, $3 received_us, $4 body, $5
 * content_type, $6 delivery_id, $7 body_sha256, $8 headers, $9 verified,
 * $10 client_addr, $11-$14 the delivery. */
static struct fres *answer_hook(struct fconn *c, const struct fpq_stmt *s)
{
    assert(s->nparams == 14);
    if (s->param[0] == NULL || s->param[1] == NULL || s->param[3] == NULL)
        return res_error("23502", "ERROR:  null value violates not-null constraint\n"
                                  "DETAIL:  Failing row contains (...).");
    if (s->param[6] != NULL && s->len[6] != 32)
        return res_error("23514", "ERROR:  new row for relation \"webhooks\" violates check constraint"
                                  " \"webhooks_body_sha256_len\"\nDETAIL:  Failing row contains (...).");
    /* RETURNING id, received_us, xmax = 0. */
    struct fres *res = res_new(PGRES_TUPLES_OK, 1, 3);
    res->binary = s->result_format == 1;
    if (s->param[5] != NULL) {
        for (size_t i = 0; i < F.nrows; i++) {
            struct frow *r = &F.rows[i];
            if (r->live && r->delivery != NULL && strcmp(r->source, s->param[0]) == 0 &&
                strcmp(r->delivery, s->param[5]) == 0) {
                res_set_i64(res, 0, 0, r->id);
                res_set_i64(res, 0, 1, r->received_us - FPQ_PG_EPOCH_US);
                res_set_bool(res, 0, 2, false);
                return res;
            }
        }
    }
    size_t k = row_add(c, s->param[0], s->param[1], NULL, fpq_param_i64(s, 2), NULL);
    struct frow *r = &F.rows[k];
    r->body = param_dup(s, 3);
    r->body_len = (size_t)s->len[3];
    r->content_type = param_dup(s, 4);
    r->delivery = param_dup(s, 5);
    if (s->param[6] != NULL) {
        memcpy(r->sha, s->param[6], 32);
        r->has_sha = true;
    }
    r->headers = param_dup(s, 7);
    r->verified = param_dup(s, 8);
    r->client_addr = param_dup(s, 9);
    set_delivery(r, s, 10);
    res_set_i64(res, 0, 0, r->id);
    res_set_i64(res, 0, 1, r->received_us - FPQ_PG_EPOCH_US);
    res_set_bool(res, 0, 2, true);
    return res;
}

int64_t fpq_param_i64(const struct fpq_stmt *s, int i)
{
    assert(i < s->nparams && s->param[i] != NULL && s->len[i] == 8);
    uint64_t v = 0;
    for (int k = 0; k < 8; k++)
        v = v << 8 | (unsigned char)s->param[i][k];
    return (int64_t)v;
}

static bool is_prepared(const struct fconn *c, const char *name)
{
    for (unsigned i = 0; i < c->nprepared; i++)
        if (strcmp(c->prepared[i], name) == 0)
            return true;
    return false;
}

static struct fres *answer_execute(struct fconn *c, const struct fpq_stmt *s)
{
    struct fres *res;
    if (!is_prepared(c, s->name))
        return res_error("26000", "ERROR:  prepared statement does not exist");
    if (strcmp(s->name, "ins_hook") == 0)
        return answer_hook(c, s);
    if (strcmp(s->name, "ins") == 0 || strcmp(s->name, "ins_idem") == 0) {
        bool idem = s->name[3] == '_';
        assert(s->nparams == (idem ? 9 : 8));
        if (s->param[0] == NULL || s->param[1] == NULL)
            return res_error("23502", "ERROR:  null value violates not-null constraint");
        if (idem && s->param[4] != NULL) {
            for (size_t i = 0; i < F.nrows; i++) {
                struct frow *r = &F.rows[i];
                if (r->live && r->idem != NULL && strcmp(r->source, s->param[0]) == 0 &&
                    strcmp(r->idem, s->param[4]) == 0) {
                    res = res_new(PGRES_TUPLES_OK, 1, ROW_COLS + 1);
                    res->binary = s->result_format == 1;
                    put_row(res, 0, r);
                    res_set_bool(res, 0, ROW_COLS, false);
                    return res;
                }
            }
        }
        size_t k = row_add(c, s->param[0], s->param[1], s->param[2], fpq_param_i64(s, 3),
                           idem ? s->param[4] : NULL);
        set_delivery(&F.rows[k], s, idem ? 5 : 4);
        if (!idem) {
            res = res_new(PGRES_TUPLES_OK, 1, 1);
            res->binary = s->result_format == 1;
            res_set_i64(res, 0, 0, F.rows[k].id);
            return res;
        }
        res = res_new(PGRES_TUPLES_OK, 1, ROW_COLS + 1);
        res->binary = s->result_format == 1;
        put_row(res, 0, &F.rows[k]);
        res_set_bool(res, 0, ROW_COLS, true);
        return res;
    }
    if (strcmp(s->name, "get") == 0) {
        struct frow *r = row_by_id(fpq_param_i64(s, 0));
        res = res_new(PGRES_TUPLES_OK, r != NULL, ROW_COLS);
        res->binary = s->result_format == 1;
        if (r != NULL)
            put_row(res, 0, r);
        return res;
    }
    if (strcmp(s->name, "del") == 0) {
        struct frow *r = row_by_id(fpq_param_i64(s, 0));
        res = res_new(PGRES_COMMAND_OK, 0, 0);
        if (r != NULL)
            row_kill(c, (size_t)(r - F.rows));
        snprintf(res->cmd, sizeof res->cmd, "%d", r != NULL);
        return res;
    }
    /* The lists: listN (newest first), lfailN and lpendN (a delivery state
     * written in), lascN (oldest first, from $9). */
    bool asc = strncmp(s->name, "lasc", 4) == 0;
    int state = strncmp(s->name, "lfail", 5) == 0 ? 3 : strncmp(s->name, "lpend", 5) == 0 ? 1 : -2;
    if (strncmp(s->name, "list", 4) == 0 || asc || state != -2) {
        int bits = s->name[strlen(s->name) - 1] - '0';
        assert(bits >= 0 && bits < 8 && s->nparams == 9);
        int64_t before = fpq_param_i64(s, 2);
        int64_t limit = s->param[3] != NULL ? fpq_param_i64(s, 3) : INT64_MAX;
        int64_t after = fpq_param_i64(s, 8);
        if (state == -2)
            state = (int)fpq_param_i64(s, 7);
        /* $6, $7: the time bounds, exclusive, binary timestamptz (from
         * 2000-01-01; -infinity and infinity at the ends of int8). */
        int64_t after_us = fpq_param_i64(s, 5), before_us = fpq_param_i64(s, 6);
        if (after_us != INT64_MIN)
            after_us += FPQ_PG_EPOCH_US;
        if (before_us != INT64_MAX)
            before_us += FPQ_PG_EPOCH_US;
        const struct frow *hit[256];
        int n = 0;
        for (size_t k = 0; k < F.nrows && n < limit && n < 256; k++) {
            size_t i = asc ? k : F.nrows - 1 - k;
            const struct frow *r = &F.rows[i];
            if (!r->live || r->id >= before || r->received_us <= after_us || r->received_us >= before_us)
                continue;
            if (asc && r->id <= after)
                continue;
            if (state >= 0 && r->dstate != state)
                continue;
            if ((bits & 1) && strcmp(r->source, s->param[0]) != 0)
                continue;
            if ((bits & 2) && strcmp(r->event_type, s->param[1]) != 0)
                continue;
            if ((bits & 4) && (r->delivery == NULL || strcmp(r->delivery, s->param[4]) != 0))
                continue;
            hit[n++] = r;
        }
        res = res_new(PGRES_TUPLES_OK, n, ROW_COLS);
        res->binary = s->result_format == 1;
        for (int i = 0; i < n; i++)
            put_row(res, i, hit[i]);
        return res;
    }
    if (strcmp(s->name, "stats") == 0) {
        /* Each live source once, in byte order: count and the time of
         * its newest row. Rows are in id order, so the last one seen wins. */
        assert(s->nparams == 0);
        size_t ns = 0;
        const struct frow **first = xcalloc(F.nrows + 1, sizeof *first);
        for (size_t i = 0; i < F.nrows; i++) {
            if (!F.rows[i].live)
                continue;
            size_t k = 0;
            while (k < ns && strcmp(first[k]->source, F.rows[i].source) != 0)
                k++;
            if (k == ns)
                first[ns++] = &F.rows[i];
        }
        for (size_t a = 1; a < ns; a++)
            for (size_t b = a; b > 0 && strcmp(first[b - 1]->source, first[b]->source) > 0; b--) {
                const struct frow *t = first[b];
                first[b] = first[b - 1];
                first[b - 1] = t;
            }
        res = res_new(PGRES_TUPLES_OK, (int)ns, 3);
        res->binary = s->result_format == 1;
        for (size_t k = 0; k < ns; k++) {
            int64_t count = 0, last = 0;
            for (size_t i = 0; i < F.nrows; i++)
                if (F.rows[i].live && strcmp(F.rows[i].source, first[k]->source) == 0) {
                    count++;
                    last = F.rows[i].received_us;
                }
            res_set(res, (int)k, 0, first[k]->source);
            res_set_i64(res, (int)k, 1, count);
            res_set_i64(res, (int)k, 2, last - FPQ_PG_EPOCH_US);
        }
        free(first);
        return res;
    }
    /* Credentials, stateless: inserts take, reads find nothing, revokes
     * and deletes match no row. */
    if (strcmp(s->name, "tok_put") == 0 || strcmp(s->name, "ses_put") == 0) {
        res = res_new(PGRES_COMMAND_OK, 0, 0);
        snprintf(res->cmd, sizeof res->cmd, "1");
        return res;
    }
    if (strncmp(s->name, "tok_", 4) == 0 || strncmp(s->name, "ses_", 4) == 0) {
        bool token = s->name[0] == 't';
        return res_new(PGRES_TUPLES_OK, 0, token ? 6 : 5);
    }
    if (strcmp(s->name, "ping") == 0) {
        res = res_new(PGRES_TUPLES_OK, 1, 1);
        res_set(res, 0, 0, "1");
        return res;
    }
    return res_error("26000", "ERROR:  prepared statement does not exist");
}

#define SCHEMA_CHECK "SELECT coalesce(max(version), 0) FROM schema_version"

static struct fres *answer_sql(const char *sql, int nparams, char *const *param)
{
    struct fres *res;
    if (strncmp(sql, SCHEMA_CHECK, strlen(SCHEMA_CHECK)) == 0) {
        if (F.schema < 0)
            return res_error("42P01", "ERROR:  relation \"schema_version\" does not exist");
        res = res_new(PGRES_TUPLES_OK, 1, 1);
        res_set_i64(res, 0, 0, F.schema);
        return res;
    }
    if (strncmp(sql, "SELECT set_config(", 18) == 0 || strncmp(sql, "SELECT pg_advisory", 18) == 0) {
        res = res_new(PGRES_TUPLES_OK, 1, 1);
        res_set(res, 0, 0, nparams > 0 ? param[0] : "");
        return res;
    }
    if (strncmp(sql, "CREATE TABLE IF NOT EXISTS schema_version", 41) == 0 && F.schema < 0)
        F.schema = 0;
    const char *ins = strstr(sql, "INSERT INTO schema_version(version) VALUES(");
    if (ins != NULL)
        F.schema = atoi(strchr(ins, '(') + strlen("(version) VALUES("));
    return res_new(PGRES_COMMAND_OK, 0, 0);
}

/* ---- the server ------------------------------------------------------------- */

static void emit(struct fconn *c, struct fres *r)
{
    dq_push(&c->pending, (uintptr_t)r);
}

/* Send what the server produced. */
static void flush_out(struct fconn *c)
{
    if (c->pending.n == 0)
        return;
    while (c->pending.n > 0)
        dq_push(&c->wire, dq_pop(&c->pending));
    signal_conn(c);
}

static void drop(struct fconn *c)
{
    if (c->dead)
        return;
    c->dead = true;
    rollback(c);
    while (c->pending.n > 0)
        res_free((struct fres *)dq_pop(&c->pending));
    if (c->holding)
        F.log[c->hold].outcome = FPQ_LOST;
    c->holding = false;
    while (c->inbox.n > 0)
        F.log[dq_pop(&c->inbox)].outcome = FPQ_LOST;
    if (c->b >= 0)
        close(c->b);
    c->b = -1;
    F.cons[c->serial - 1].drop_ms = now_ms();
}

/* Answer message i as `r` says. */
static void act(struct fconn *c, size_t i, const struct fpq_reply *r)
{
    struct fpq_stmt *s = &F.log[i];
    if (r->act == FPQ_HOLD) {
        c->holding = true;
        c->hold = i;
        s->outcome = FPQ_HELD;
        flush_out(c);
        return;
    }
    if (r->act == FPQ_DROP) {
        s->outcome = FPQ_LOST;
        drop(c);
        return;
    }
    if (s->msg == FPQ_FLUSH) {
        s->outcome = FPQ_ANSWERED;
        flush_out(c);
        return;
    }
    if (s->msg == FPQ_SYNC) {
        /* The group's implicit transaction ends here. */
        if (c->failed || r->act == FPQ_FAIL)
            rollback(c);
        else
            commit(c);
        c->failed = false;
        emit(c, res_new(PGRES_PIPELINE_SYNC, 0, 0));
        s->outcome = FPQ_ANSWERED;
        flush_out(c);
        return;
    }
    struct fres *res;
    if (c->failed) {
        res = res_new(PGRES_PIPELINE_ABORTED, 0, 0);
        s->outcome = FPQ_ABORTED;
    } else {
        if (r->act == FPQ_FAIL)
            res = res_error(r->sqlstate, r->message != NULL ? r->message : "ERROR:  scripted failure");
        else if (s->msg == FPQ_EXECUTE)
            res = answer_execute(c, s);
        else if (s->msg == FPQ_PREPARE)
            res = res_new(PGRES_COMMAND_OK, 0, 0);
        else
            res = answer_sql(s->sql, s->nparams, s->param);
        if (res->status == PGRES_FATAL_ERROR) {
            c->failed = true;
            s->outcome = FPQ_FAILED;
        } else {
            s->outcome = FPQ_ANSWERED;
            if (s->msg == FPQ_PREPARE && c->nprepared < 64)
                snprintf(c->prepared[c->nprepared++], sizeof c->prepared[0], "%s", s->name);
        }
    }
    emit(c, res);
    emit(c, NULL);
}

/* Work through what reached the server, up to a held message. */
static void serve(struct fconn *c)
{
    while (!c->dead && !c->holding && c->inbox.n > 0) {
        size_t i = dq_pop(&c->inbox);
        struct fpq_reply r = {FPQ_ANSWER, NULL, NULL};
        const struct fpq_stmt *s = &F.log[i];
        bool skipped = s->msg == FPQ_FLUSH || (c->failed && s->msg != FPQ_SYNC);
        if (!skipped && F.script != NULL)
            F.script(s, &r, F.arg);
        act(c, i, &r);
    }
}

/* ---- libpq --------------------------------------------------------------- */

#define C(pc) ((struct fconn *)(pc))
#define R(res) ((struct fres *)(res))

static PGconn *f_PQconnectStartParams(const char *const *keywords, const char *const *values,
                                      int expand_dbname)
{
    (void)keywords;
    (void)values;
    (void)expand_dbname;
    int sv[2];
    struct fconn *c = xcalloc(1, sizeof *c);
    if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0, sv) < 0)
        abort();
    c->a = sv[0];
    c->b = sv[1];
    if (F.ncons == F.capcons) {
        F.capcons = F.capcons > 0 ? F.capcons * 2 : 16;
        F.cons = xrealloc(F.cons, F.capcons * sizeof *F.cons);
        F.conns = xrealloc(F.conns, F.capcons * sizeof *F.conns);
    }
    c->serial = ++F.ncons;
    F.conns[c->serial - 1] = c;
    F.cons[c->serial - 1] = (struct fpq_connect){.serial = c->serial, .start_ms = now_ms()};
    c->status = CONNECTION_STARTED;
    if (F.fail_n > 0) {
        F.fail_n--;
        if (F.fail_at_start) {
            c->status = CONNECTION_BAD;
            F.cons[c->serial - 1].failed = true;
            snprintf(c->err, sizeof c->err, "could not translate host name \"db.invalid\" to address\n");
        } else {
            c->will_fail = true;
        }
    }
    return (PGconn *)c;
}

static PostgresPollingStatusType f_PQconnectPoll(PGconn *pc)
{
    struct fconn *c = C(pc);
    if (c->status == CONNECTION_BAD)
        return PGRES_POLLING_FAILED;
    if (c->status == CONNECTION_OK)
        return PGRES_POLLING_OK;
    /* One round trip: the server's answer makes the socket readable. */
    if (c->step++ == 0) {
        signal_conn(c);
        return PGRES_POLLING_READING;
    }
    drain_socket(c);
    if (c->will_fail) {
        c->status = CONNECTION_BAD;
        F.cons[c->serial - 1].failed = true;
        snprintf(c->err, sizeof c->err,
                 "connection to server at \"db.invalid\" (192.0.2.1), port 5432 failed: "
                 "Connection refused\n\tIs the server running on that host?\n");
        return PGRES_POLLING_FAILED;
    }
    c->status = CONNECTION_OK;
    return PGRES_POLLING_OK;
}

static ConnStatusType f_PQstatus(const PGconn *pc)
{
    return pc != NULL ? ((const struct fconn *)pc)->status : CONNECTION_BAD;
}

static int f_PQsocket(const PGconn *pc)
{
    const struct fconn *c = (const struct fconn *)pc;
    return c->status == CONNECTION_BAD ? -1 : c->a;
}

static char *f_PQerrorMessage(const PGconn *pc)
{
    return pc != NULL ? ((struct fconn *)(uintptr_t)pc)->err : empty;
}

static int f_PQserverVersion(const PGconn *pc)
{
    return f_PQstatus(pc) == CONNECTION_OK ? F.server_version : 0;
}

static void f_PQfinish(PGconn *pc)
{
    struct fconn *c = C(pc);
    if (c == NULL)
        return;
    /* The session ends: its transaction rolls back. */
    rollback(c);
    if (c->holding)
        F.log[c->hold].outcome = FPQ_LOST;
    struct dq *msgs[] = {&c->out, &c->inbox};
    for (int k = 0; k < 2; k++) {
        while (msgs[k]->n > 0)
            F.log[dq_pop(msgs[k])].outcome = FPQ_LOST;
        free(msgs[k]->v);
    }
    struct dq *results[] = {&c->pending, &c->wire, &c->input};
    for (int k = 0; k < 3; k++) {
        while (results[k]->n > 0)
            res_free((struct fres *)dq_pop(results[k]));
        free(results[k]->v);
    }
    close(c->a);
    if (c->b >= 0)
        close(c->b);
    F.cons[c->serial - 1].finished = true;
    F.conns[c->serial - 1] = NULL;
    free(c->undo);
    free(c);
}

static int f_PQsetnonblocking(PGconn *pc, int arg)
{
    (void)pc;
    (void)arg;
    return 0;
}

static int f_PQenterPipelineMode(PGconn *pc)
{
    struct fconn *c = C(pc);
    if (c->status != CONNECTION_OK)
        return 0;
    c->pipeline = true;
    return 1;
}

/* A new record for a message the store sends on c, or -1 when libpq would
 * refuse to send it. */
static long record(struct fconn *c, enum fpq_msg m)
{
    if (c->status != CONNECTION_OK) {
        snprintf(c->err, sizeof c->err, "no connection to the server\n");
        return -1;
    }
    if ((m == FPQ_EXEC) == c->pipeline) {
        snprintf(c->err, sizeof c->err, m == FPQ_EXEC
                 ? "synchronous command execution functions are not allowed in pipeline mode\n"
                 : "another command is already in progress\n");
        return -1;
    }
    if (F.nlog == F.caplog) {
        F.caplog = F.caplog > 0 ? F.caplog * 2 : 256;
        F.log = xrealloc(F.log, F.caplog * sizeof *F.log);
    }
    struct fpq_stmt *s = &F.log[F.nlog];
    memset(s, 0, sizeof *s);
    s->conn = c->serial;
    s->group = c->groups;
    s->msg = m;
    s->sent_ms = now_ms();
    s->outcome = FPQ_UNSEEN;
    return (long)F.nlog++;
}

static void set_params(struct fpq_stmt *s, int n, const char *const *values, const int *lengths,
                       const int *formats)
{
    assert(n <= FPQ_MAX_PARAMS);
    s->nparams = n;
    for (int i = 0; i < n; i++) {
        if (values == NULL || values[i] == NULL)
            continue;
        bool binary = formats != NULL && formats[i] == 1;
        s->len[i] = binary ? lengths[i] : (int)strlen(values[i]);
        s->param[i] = xstrndup(values[i], (size_t)s->len[i]);
    }
}

static int f_PQsendPrepare(PGconn *pc, const char *stmtName, const char *query, int nParams,
                           const Oid *paramTypes)
{
    (void)nParams;
    (void)paramTypes;
    long i = record(C(pc), FPQ_PREPARE);
    if (i < 0)
        return 0;
    snprintf(F.log[i].name, sizeof F.log[i].name, "%s", stmtName);
    F.log[i].sql = xstrndup(query, strlen(query));
    dq_push(&C(pc)->out, (uintptr_t)i);
    return 1;
}

static int f_PQsendQueryPrepared(PGconn *pc, const char *stmtName, int nParams,
                                 const char *const *paramValues, const int *paramLengths,
                                 const int *paramFormats, int resultFormat)
{
    long i = record(C(pc), FPQ_EXECUTE);
    if (i < 0)
        return 0;
    F.log[i].result_format = resultFormat;
    snprintf(F.log[i].name, sizeof F.log[i].name, "%s", stmtName);
    set_params(&F.log[i], nParams, paramValues, paramLengths, paramFormats);
    dq_push(&C(pc)->out, (uintptr_t)i);
    return 1;
}

static int f_PQsendQueryParams(PGconn *pc, const char *command, int nParams, const Oid *paramTypes,
                               const char *const *paramValues, const int *paramLengths,
                               const int *paramFormats, int resultFormat)
{
    (void)paramTypes;
    (void)resultFormat;
    long i = record(C(pc), FPQ_QUERY);
    if (i < 0)
        return 0;
    F.log[i].sql = xstrndup(command, strlen(command));
    set_params(&F.log[i], nParams, paramValues, paramLengths, paramFormats);
    dq_push(&C(pc)->out, (uintptr_t)i);
    return 1;
}

static int f_PQsendFlushRequest(PGconn *pc)
{
    long i = record(C(pc), FPQ_FLUSH);
    if (i < 0)
        return 0;
    dq_push(&C(pc)->out, (uintptr_t)i);
    return 1;
}

static int f_PQflush(PGconn *pc)
{
    struct fconn *c = C(pc);
    if (c->status == CONNECTION_BAD) {
        snprintf(c->err, sizeof c->err, "connection not open\n");
        return -1;
    }
    /* After a drop the write "succeeds" (libpq reports a write failure
     * only once it has read what the server said last): nothing arrives. */
    while (c->out.n > 0) {
        uintptr_t i = dq_pop(&c->out);
        if (c->dead)
            F.log[i].outcome = FPQ_LOST;
        else
            dq_push(&c->inbox, i);
    }
    serve(c);
    return 0;
}

static int f_PQpipelineSync(PGconn *pc)
{
    struct fconn *c = C(pc);
    long i = record(c, FPQ_SYNC);
    if (i < 0)
        return 0;
    c->groups++;
    dq_push(&c->out, (uintptr_t)i);
    /* libpq flushes at a Sync. */
    return f_PQflush(pc) < 0 ? 0 : 1;
}

static int f_PQconsumeInput(PGconn *pc)
{
    struct fconn *c = C(pc);
    if (c->status == CONNECTION_BAD)
        return 0;
    bool eof = drain_socket(c);
    if (c->wire.n > 0) {
        while (c->wire.n > 0)
            dq_push(&c->input, dq_pop(&c->wire));
        return 1;   /* the end of file, if any, shows on the next read */
    }
    if (eof) {
        c->status = CONNECTION_BAD;
        snprintf(c->err, sizeof c->err,
                 "server closed the connection unexpectedly\n\tThis probably means the server "
                 "terminated abnormally\n\tbefore or while processing the request.\n");
        return 0;
    }
    return 1;
}

static int f_PQisBusy(PGconn *pc)
{
    struct fconn *c = C(pc);
    if (c->status == CONNECTION_BAD || c->input.n > 0)
        return 0;
    return c->out.n + c->inbox.n + c->pending.n + c->wire.n > 0 || c->holding;
}

static PGresult *f_PQgetResult(PGconn *pc)
{
    struct fconn *c = C(pc);
    if (c->input.n == 0)
        return NULL;
    return (PGresult *)dq_pop(&c->input);
}

static PGresult *f_PQexec(PGconn *pc, const char *query)
{
    struct fconn *c = C(pc);
    long i = record(c, FPQ_EXEC);
    if (i < 0)
        return NULL;
    F.log[i].sql = xstrndup(query, strlen(query));
    struct fpq_reply r = {FPQ_ANSWER, NULL, NULL};
    if (F.script != NULL)
        F.script(&F.log[i], &r, F.arg);
    if (r.act == FPQ_DROP) {
        F.log[i].outcome = FPQ_LOST;
        drop(c);
        c->status = CONNECTION_BAD;
        snprintf(c->err, sizeof c->err, "server closed the connection unexpectedly\n");
        return NULL;
    }
    struct fres *res = r.act == FPQ_FAIL
                           ? res_error(r.sqlstate, r.message != NULL ? r.message : "ERROR:  scripted failure")
                           : answer_sql(query, 0, NULL);
    F.log[i].outcome = res->status == PGRES_FATAL_ERROR ? FPQ_FAILED : FPQ_ANSWERED;
    return (PGresult *)res;
}

static ExecStatusType f_PQresultStatus(const PGresult *res)
{
    return res != NULL ? ((const struct fres *)res)->status : PGRES_FATAL_ERROR;
}

static char *f_PQresultErrorField(const PGresult *res, int fieldcode)
{
    struct fres *r = (struct fres *)(uintptr_t)res;
    if (r == NULL)
        return NULL;
    if (fieldcode == PG_DIAG_SQLSTATE)
        return r->sqlstate[0] != '\0' ? r->sqlstate : NULL;
    if (fieldcode == PG_DIAG_MESSAGE_PRIMARY)
        return r->primary;
    return NULL;
}

static char *f_PQresultErrorMessage(const PGresult *res)
{
    struct fres *r = (struct fres *)(uintptr_t)res;
    return r != NULL && r->message != NULL ? r->message : empty;
}

static int f_PQntuples(const PGresult *res)
{
    return ((const struct fres *)res)->nrows;
}

static int f_PQnfields(const PGresult *res)
{
    return ((const struct fres *)res)->ncols;
}

static char *cell(const PGresult *res, int row, int col)
{
    const struct fres *r = (const struct fres *)res;
    assert(row >= 0 && row < r->nrows && col >= 0 && col < r->ncols);
    return r->cell[row * r->ncols + col];
}

static char *f_PQgetvalue(const PGresult *res, int tup_num, int field_num)
{
    char *p = cell(res, tup_num, field_num);
    return p != NULL ? p : empty;
}

static int f_PQgetlength(const PGresult *res, int tup_num, int field_num)
{
    const struct fres *r = (const struct fres *)res;
    char *p = cell(res, tup_num, field_num);
    return p != NULL ? r->clen[tup_num * r->ncols + field_num] : 0;
}

static int f_PQgetisnull(const PGresult *res, int tup_num, int field_num)
{
    return cell(res, tup_num, field_num) == NULL;
}

static char *f_PQcmdTuples(PGresult *res)
{
    return R(res)->cmd;
}

static void f_PQclear(PGresult *res)
{
    res_free(R(res));
}

static PQconninfoOption *f_PQconninfoParse(const char *conninfo, char **errmsg)
{
    if (strncmp(conninfo, "postgres", 8) != 0 && strchr(conninfo, '=') == NULL) {
        const char *m = "missing \"=\" after the keyword in connection info string\n";
        *errmsg = xstrndup(m, strlen(m));
        return NULL;
    }
    *errmsg = NULL;
    return xcalloc(1, sizeof(PQconninfoOption));
}

static void f_PQconninfoFree(PQconninfoOption *connOptions)
{
    free(connOptions);
}

static void f_PQfreemem(void *ptr)
{
    free(ptr);
}

/* The scripted connections carry no LISTEN: never a notification. */
static PGnotify *f_PQnotifies(PGconn *conn)
{
    (void)conn;
    return NULL;
}

static PQnoticeProcessor f_PQsetNoticeProcessor(PGconn *conn, PQnoticeProcessor proc, void *arg)
{
    (void)conn;
    (void)proc;
    (void)arg;
    return NULL;
}

static int f_PQlibVersion(void)
{
    return 160000;
}

/* Every entry of HK_PQ_FUNCS: one missing here is a compile error. */
#define FPQ_ENTRY(ret, name, params) .name = f_##name,
static const struct hk_pq_api fake_api = {HK_PQ_FUNCS(FPQ_ENTRY)};
#undef FPQ_ENTRY

/* ---- control and inspection ------------------------------------------------ */

void fpq_reset(void)
{
    (void)fpq_cleanup();
    memset(&F, 0, sizeof F);
    F.server_version = 160000;
    F.schema = FPQ_SCHEMA_CURRENT;
    hk_pq_use(&fake_api);
}

unsigned fpq_cleanup(void)
{
    unsigned open = 0;
    for (unsigned i = 0; i < F.ncons; i++)
        if (F.conns[i] != NULL) {
            open++;
            f_PQfinish((PGconn *)F.conns[i]);
        }
    for (size_t i = 0; i < F.nlog; i++) {
        free(F.log[i].sql);
        for (int k = 0; k < FPQ_MAX_PARAMS; k++)
            free(F.log[i].param[k]);
    }
    for (size_t i = 0; i < F.nrows; i++) {
        free(F.rows[i].source);
        free(F.rows[i].event_type);
        free(F.rows[i].payload);
        free(F.rows[i].idem);
        free(F.rows[i].body);
        free(F.rows[i].content_type);
        free(F.rows[i].delivery);
        free(F.rows[i].headers);
        free(F.rows[i].verified);
        free(F.rows[i].client_addr);
    }
    free(F.log);
    free(F.cons);
    free(F.conns);
    free(F.rows);
    memset(&F, 0, sizeof F);
    F.server_version = 160000;
    F.schema = FPQ_SCHEMA_CURRENT;
    return open;
}

void fpq_script(fpq_script_fn fn, void *arg)
{
    F.script = fn;
    F.arg = arg;
}

void fpq_set_schema(int version)
{
    F.schema = version;
}

int fpq_schema(void)
{
    return F.schema;
}

void fpq_fail_connects(unsigned n, bool at_start)
{
    F.fail_n = n;
    F.fail_at_start = at_start;
}

bool fpq_release(unsigned conn, const struct fpq_reply *r)
{
    struct fconn *c = find(conn);
    if (c == NULL || !c->holding)
        return false;
    c->holding = false;
    act(c, c->hold, r);
    serve(c);
    return true;
}

bool fpq_drop(unsigned conn)
{
    struct fconn *c = find(conn);
    if (c == NULL || c->dead)
        return false;
    drop(c);
    return true;
}

unsigned fpq_holding(void)
{
    for (unsigned i = 0; i < F.ncons; i++)
        if (F.conns[i] != NULL && F.conns[i]->holding)
            return i + 1;
    return 0;
}

const struct fpq_stmt *fpq_held(unsigned conn)
{
    struct fconn *c = find(conn);
    return c != NULL && c->holding ? &F.log[c->hold] : NULL;
}

size_t fpq_unread(unsigned conn)
{
    struct fconn *c = find(conn);
    return c != NULL ? c->wire.n + c->input.n : 0;
}

int64_t fpq_seed(const char *source, const char *event_type, const char *payload, int64_t received_us,
                 const char *idem_key)
{
    size_t k = row_add(NULL, source, event_type, payload, received_us, idem_key);
    return F.rows[k].id;
}

unsigned fpq_rows(const char *source)
{
    unsigned n = 0;
    for (size_t i = 0; i < F.nrows; i++)
        n += F.rows[i].live && strcmp(F.rows[i].source, source) == 0;
    return n;
}

int64_t fpq_row_id(const char *source)
{
    for (size_t i = 0; i < F.nrows; i++)
        if (F.rows[i].live && strcmp(F.rows[i].source, source) == 0)
            return F.rows[i].id;
    return 0;
}

size_t fpq_nstmts(void)
{
    return F.nlog;
}

const struct fpq_stmt *fpq_stmt_at(size_t i)
{
    return i < F.nlog ? &F.log[i] : NULL;
}

static bool send_matches(const struct fpq_stmt *s, const char *name, const char *p0)
{
    return s->msg == FPQ_EXECUTE && strcmp(s->name, name) == 0 &&
           (p0 == NULL || (s->nparams > 0 && s->param[0] != NULL && strcmp(s->param[0], p0) == 0));
}

unsigned fpq_sends(const char *name, const char *p0)
{
    unsigned n = 0;
    for (size_t i = 0; i < F.nlog; i++)
        n += send_matches(&F.log[i], name, p0);
    return n;
}

const struct fpq_stmt *fpq_send_at(const char *name, const char *p0, unsigned n)
{
    for (size_t i = 0; i < F.nlog; i++)
        if (send_matches(&F.log[i], name, p0) && n-- == 0)
            return &F.log[i];
    return NULL;
}

unsigned fpq_group_size(unsigned conn, unsigned group)
{
    unsigned n = 0;
    for (size_t i = 0; i < F.nlog; i++)
        n += F.log[i].conn == conn && F.log[i].group == group && F.log[i].msg == FPQ_EXECUTE;
    return n;
}

unsigned fpq_nconnects(void)
{
    return F.ncons;
}

const struct fpq_connect *fpq_connect_at(unsigned i)
{
    return i < F.ncons ? &F.cons[i] : NULL;
}

unsigned fpq_open_conns(void)
{
    unsigned n = 0;
    for (unsigned i = 0; i < F.ncons; i++)
        n += F.conns[i] != NULL;
    return n;
}

void fpq_dump(void)
{
    static const char *const msgs[] = {"prepare", "query", "execute", "flush", "sync", "exec"};
    static const char *const outcomes[] = {"unseen", "held", "answered", "failed", "aborted", "lost"};
    uint64_t t0 = F.nlog > 0 ? F.log[0].sent_ms : 0;
    for (unsigned i = 0; i < F.ncons; i++)
        fprintf(stderr, "conn %u: start +%" PRIu64 " ms%s%s%s\n", F.cons[i].serial,
                F.cons[i].start_ms - t0, F.cons[i].failed ? ", failed" : "",
                F.cons[i].drop_ms ? ", dropped" : "", F.cons[i].finished ? ", finished" : "");
    for (size_t i = 0; i < F.nlog; i++) {
        const struct fpq_stmt *s = &F.log[i];
        fprintf(stderr, "%4zu +%5" PRIu64 " conn %u group %u %-7s %-8s %-9s", i, s->sent_ms - t0, s->conn,
                s->group, msgs[s->msg], s->name, outcomes[s->outcome]);
        if (s->msg == FPQ_EXECUTE && s->nparams > 0 && s->param[0] != NULL)
            fprintf(stderr, " %s", s->len[0] == 8 && strcmp(s->name, "get") == 0
                                       ? "(id)" : s->param[0]);
        if (s->sql != NULL)
            fprintf(stderr, " %.50s", s->sql);
        fputc('\n', stderr);
    }
}
