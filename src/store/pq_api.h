/* SPDX-License-Identifier: MIT
 * libpq behind a table of function pointers. hookd does not link libpq: the
 * table is filled with dlopen("libpq.so.5") + dlsym only when PostgreSQL is
 * used, so the SQLite path never maps libpq and what it drags in (Kerberos,
 * LDAP, GnuTLS). Built with -DHK_PQ_STATIC, the table points at the real
 * functions instead and the binary must link libpq itself. */
#ifndef HK_PQ_API_H
#define HK_PQ_API_H

#include <stddef.h>

#include <libpq-fe.h>

/* X(return type, name, parameter list): every libpq function hookd calls. */
#define HK_PQ_FUNCS(X)                                                                           \
    X(PGconn *, PQconnectStartParams,                                                            \
      (const char *const *keywords, const char *const *values, int expand_dbname))               \
    X(PostgresPollingStatusType, PQconnectPoll, (PGconn *conn))                                 \
    X(ConnStatusType, PQstatus, (const PGconn *conn))                                            \
    X(int, PQsocket, (const PGconn *conn))                                                       \
    X(char *, PQerrorMessage, (const PGconn *conn))                                              \
    X(int, PQserverVersion, (const PGconn *conn))                                                \
    X(void, PQfinish, (PGconn *conn))                                                            \
    X(int, PQsetnonblocking, (PGconn *conn, int arg))                                            \
    X(int, PQenterPipelineMode, (PGconn *conn))                                                  \
    X(int, PQpipelineSync, (PGconn *conn))                                                       \
    X(int, PQsendFlushRequest, (PGconn *conn))                                                   \
    X(int, PQsendPrepare,                                                                        \
      (PGconn *conn, const char *stmtName, const char *query, int nParams,                       \
       const Oid *paramTypes))                                                                   \
    X(int, PQsendQueryPrepared,                                                                  \
      (PGconn *conn, const char *stmtName, int nParams, const char *const *paramValues,          \
       const int *paramLengths, const int *paramFormats, int resultFormat))                      \
    X(int, PQsendQueryParams,                                                                    \
      (PGconn *conn, const char *command, int nParams, const Oid *paramTypes,                    \
       const char *const *paramValues, const int *paramLengths, const int *paramFormats,         \
       int resultFormat))                                                                        \
    X(int, PQflush, (PGconn *conn))                                                              \
    X(int, PQconsumeInput, (PGconn *conn))                                                       \
    X(int, PQisBusy, (PGconn *conn))                                                             \
    X(PGresult *, PQgetResult, (PGconn *conn))                                                   \
    X(PGresult *, PQexec, (PGconn *conn, const char *query))                                     \
    X(ExecStatusType, PQresultStatus, (const PGresult *res))                                     \
    X(char *, PQresultErrorField, (const PGresult *res, int fieldcode))                          \
    X(char *, PQresultErrorMessage, (const PGresult *res))                                       \
    X(int, PQntuples, (const PGresult *res))                                                     \
    X(int, PQnfields, (const PGresult *res))                                                     \
    X(char *, PQgetvalue, (const PGresult *res, int tup_num, int field_num))                     \
    X(int, PQgetlength, (const PGresult *res, int tup_num, int field_num))                       \
    X(int, PQgetisnull, (const PGresult *res, int tup_num, int field_num))                       \
    X(char *, PQcmdTuples, (PGresult *res))                                                      \
    X(void, PQclear, (PGresult *res))                                                            \
    X(PQconninfoOption *, PQconninfoParse, (const char *conninfo, char **errmsg))                \
    X(void, PQconninfoFree, (PQconninfoOption *connOptions))                                     \
    X(void, PQfreemem, (void *ptr))                                                              \
    X(PGnotify *, PQnotifies, (PGconn *conn))                                                    \
    X(PQnoticeProcessor, PQsetNoticeProcessor,                                                   \
      (PGconn *conn, PQnoticeProcessor proc, void *arg))                                         \
    X(int, PQlibVersion, (void))

#define HK_PQ_FIELD(ret, name, params) ret(*name) params;
struct hk_pq_api {
    HK_PQ_FUNCS(HK_PQ_FIELD)
};
#undef HK_PQ_FIELD

/* The table. Valid (non-NULL entries) once hk_pq_load() returned 0. */
extern struct hk_pq_api hk_pq;

/* Fill hk_pq, once per process; later calls return the first result.
 * Thread-safe. Returns 0, or -1 with a one-line reason in err. */
int hk_pq_load(char *err, size_t errlen);

/* For tests: fill hk_pq from `api` (copied; every entry must be set) and make
 * hk_pq_load return 0 from then on without loading libpq, so that the store
 * runs on a stand-in (tests/unit/fake_pq.c). Call it before any thread uses
 * the table; it may be called again to install another table. */
void hk_pq_use(const struct hk_pq_api *api);

#endif
