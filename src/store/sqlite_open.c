/* SPDX-License-Identifier: MIT
 * Opening the SQLite store: the write connection in WAL mode, the schema
 * and its migrations, SQLite's process-wide memory settings, and freeing
 * it all again. The writer thread itself starts later (sqlite_writer.c). */
#include "store/sqlite_int.h"

#include <assert.h>
#include <fcntl.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/log.h"

#define HK_SQLITE_LOOKASIDE_SZ 256     /* lookaside slot size, bytes */
#define HK_SQLITE_LOOKASIDE_N 64       /* lookaside slots per connection */

/* Schema migrations; entry i takes the database from version i to i + 1.
 * Never edit an entry once released: append a new one. */
static const char *const migrations[] = {
    "CREATE TABLE webhooks("
    " id INTEGER PRIMARY KEY AUTOINCREMENT,"
    " source TEXT NOT NULL,"
    " event_type TEXT NOT NULL,"
    " payload TEXT,"
    " received_us INTEGER NOT NULL,"
    " idem_key TEXT);"
    "CREATE UNIQUE INDEX webhooks_idem ON webhooks(source, idem_key)"
    " WHERE idem_key IS NOT NULL;"
    "CREATE INDEX webhooks_source_id ON webhooks(source, id);"
    "CREATE INDEX webhooks_event_type_id ON webhooks(event_type, id);",
    /* 2: credentials (docs/auth.md). Hashes are SHA-256, times unix
     * microseconds; NULL expires_us: never, NULL revoked_us: live. */
    "CREATE TABLE api_tokens("
    " name TEXT NOT NULL PRIMARY KEY CHECK (length(name) BETWEEN 1 AND 64),"
    " hash BLOB NOT NULL UNIQUE CHECK (length(hash) = 32),"
    " scopes INTEGER NOT NULL,"
    " created_us INTEGER NOT NULL,"
    " expires_us INTEGER,"
    " revoked_us INTEGER);"
    "CREATE TABLE sessions("
    " hash BLOB NOT NULL PRIMARY KEY CHECK (length(hash) = 32),"
    " subject TEXT NOT NULL,"
    " scopes INTEGER NOT NULL,"
    " csrf_hash BLOB NOT NULL CHECK (length(csrf_hash) = 32),"
    " expires_us INTEGER NOT NULL);"
    "CREATE INDEX sessions_expires ON sessions(expires_us);",
    /* 3: ingress deliveries (docs/ingress.md). `body` is NULL for an
     * envelope row and never NULL for an ingress row (an empty body is a
     * zero-length blob). ADD COLUMN rewrites nothing: old rows read NULL. */
    "ALTER TABLE webhooks ADD COLUMN body BLOB;"
    "ALTER TABLE webhooks ADD COLUMN content_type TEXT;"
    "ALTER TABLE webhooks ADD COLUMN delivery_id TEXT;"
    "ALTER TABLE webhooks ADD COLUMN body_sha256 BLOB CHECK (length(body_sha256) = 32);"
    "ALTER TABLE webhooks ADD COLUMN headers TEXT;"
    "ALTER TABLE webhooks ADD COLUMN verified TEXT;"
    "ALTER TABLE webhooks ADD COLUMN client_addr TEXT;"
    /* One index for both the dedup (delivery_id, source) and the
     * deliveryId filter (its prefix; a handful of rows per id at most):
     * every ingress insert maintains one index fewer. */
    "CREATE UNIQUE INDEX webhooks_delivery ON webhooks(delivery_id, source)"
    " WHERE delivery_id IS NOT NULL;",
    /* 4: forwarding (docs/forwarding.md). The outbox is the row: dstate 0
     * none, 1 pending, 2 delivered, 3 failed; times unix microseconds. The
     * partial indexes hold pending and failed rows only: claims walk the
     * due ones, FIFO sources find their oldest pending row, the failed
     * filter its rows, and none of them grows with delivered history. */
    "ALTER TABLE webhooks ADD COLUMN dstate INTEGER NOT NULL DEFAULT 0;"
    "ALTER TABLE webhooks ADD COLUMN dattempts INTEGER NOT NULL DEFAULT 0;"
    "ALTER TABLE webhooks ADD COLUMN dnext_us INTEGER;"
    "ALTER TABLE webhooks ADD COLUMN dlast_status INTEGER;"
    "ALTER TABLE webhooks ADD COLUMN dlast_error TEXT;"
    "ALTER TABLE webhooks ADD COLUMN dupdated_us INTEGER;"
    "ALTER TABLE webhooks ADD COLUMN dlease_owner INTEGER;"
    "ALTER TABLE webhooks ADD COLUMN dlease_us INTEGER;"
    "CREATE INDEX webhooks_due ON webhooks(dnext_us, id) WHERE dstate = 1;"
    "CREATE INDEX webhooks_pending_source ON webhooks(source, id) WHERE dstate = 1;"
    "CREATE INDEX webhooks_failed ON webhooks(id) WHERE dstate = 3;",
};
#define SCHEMA_VERSION ((int)(sizeof migrations / sizeof migrations[0]))

static void log_sqlite(const char *msg, int rc)
{
    /* sqlite3_errstr() strings are fixed English text without quotes, safe to
     * put in a JSON field as they are; sqlite3_errmsg() may quote names. */
    hk_error(msg, "\"rc\":%d,\"err\":\"%s\"", rc, sqlite3_errstr(rc));
}

/* Bring the schema to SCHEMA_VERSION in one transaction. BEGIN IMMEDIATE
 * serializes two processes opening the same new file. */
static int migrate(sqlite3 *db, char *errbuf, size_t errlen)
{
    sqlite3_stmt *stmt = NULL;
    int version = 0;
    int rc = sqlite3_exec(db, "BEGIN IMMEDIATE;"
                          "CREATE TABLE IF NOT EXISTS schema_version(version INTEGER NOT NULL);",
                          NULL, NULL, NULL);
    if (rc != SQLITE_OK)
        goto out;
    rc = sqlite3_prepare_v2(db, "SELECT max(version) FROM schema_version", -1, &stmt, NULL);
    if (rc != SQLITE_OK)
        goto out;
    rc = sqlite3_step(stmt);
    if (rc != SQLITE_ROW)
        goto out;
    version = sqlite3_column_int(stmt, 0);   /* NULL (empty table) reads as 0 */
    sqlite3_finalize(stmt);
    stmt = NULL;
    if (version > SCHEMA_VERSION) {
        snprintf(errbuf, errlen, "database schema version %d is newer than this hookd's (%d)",
                 version, SCHEMA_VERSION);
        rc = SQLITE_ERROR;
        goto out;
    }
    for (int v = version; v < SCHEMA_VERSION; v++) {
        rc = sqlite3_exec(db, migrations[v], NULL, NULL, NULL);
        if (rc != SQLITE_OK)
            goto out;
    }
    if (version < SCHEMA_VERSION) {
        char sql[96];
        snprintf(sql, sizeof sql, "DELETE FROM schema_version;"
                 "INSERT INTO schema_version(version) VALUES(%d);", SCHEMA_VERSION);
        rc = sqlite3_exec(db, sql, NULL, NULL, NULL);
        if (rc != SQLITE_OK)
            goto out;
    }
    rc = sqlite3_exec(db, "COMMIT", NULL, NULL, NULL);
out:
    sqlite3_finalize(stmt);
    if (rc != SQLITE_OK) {
        if (errbuf[0] == '\0')
            snprintf(errbuf, errlen, "schema migration from version %d: %s",
                     version, sqlite3_errmsg(db));
        if (!sqlite3_get_autocommit(db))
            sqlite3_exec(db, "ROLLBACK", NULL, NULL, NULL);
        return HK_ESTORE;
    }
    return 0;
}

/* SQLite's process-wide memory settings, before its first use. By default
 * every connection carves 20 cache pages in one block and a 120 KB lookaside
 * arena, writing into all of it at open: some 60 page faults per connection,
 * which on a VM cost more than the rest of a cold start. Cache pages come
 * one at a time instead, and lookaside stays, smaller. Once SQLite is
 * initialised (a second store in the same process) the calls are refused
 * and the first settings stand. */
static void sqlite_memory_settings(void)
{
    static bool done;
    if (done)
        return;
    done = true;
    (void)sqlite3_config(SQLITE_CONFIG_PAGECACHE, NULL, 0, 0);
    (void)sqlite3_config(SQLITE_CONFIG_LOOKASIDE, HK_SQLITE_LOOKASIDE_SZ, HK_SQLITE_LOOKASIDE_N);
}

void hk__sq_store_free(struct sq_store *st)
{
    hk__sq_writer_finalize(st);
    int rc = sqlite3_close(st->db);
    if (rc != SQLITE_OK)
        log_sqlite("sqlite close failed", rc);
    uv_cond_destroy(&st->cv);
    uv_mutex_destroy(&st->mu);
    free(st->path);
    free(st->dir);
    free(st);
}

/* The limits `opts` asks for, zero meaning the default. 0, or HK_EINVAL
 * with the reason in errbuf. */
static int opts_check(const struct hk_sqlite_opts *opts, size_t *queue_max, int *busy_ms,
                      char *errbuf, size_t errlen)
{
    if (!opts->path || *opts->path == '\0') {
        snprintf(errbuf, errlen, "sqlite: no database path");
        return HK_EINVAL;
    }
    if (opts->queue_max > HK_SQLITE_QUEUE_MAX_LIMIT) {
        snprintf(errbuf, errlen, "sqlite: queue_max %u: want at most %u", (unsigned)opts->queue_max,
                 HK_SQLITE_QUEUE_MAX_LIMIT);
        return HK_EINVAL;
    }
    if (opts->busy_ms > HK_SQLITE_BUSY_MS_LIMIT) {
        snprintf(errbuf, errlen, "sqlite: busy_ms %u: want at most %u", (unsigned)opts->busy_ms,
                 HK_SQLITE_BUSY_MS_LIMIT);
        return HK_EINVAL;
    }
    *queue_max = opts->queue_max > 0 ? opts->queue_max : HK_SQLITE_QUEUE_MAX;
    *busy_ms = opts->busy_ms > 0 ? (int)opts->busy_ms : HK_SQLITE_BUSY_MS;
    return 0;
}

/* The store with its settings; nothing opened yet. */
static struct sq_store *store_new(const char *path, size_t queue_max, int busy_ms)
{
    struct sq_store *st = calloc(1, sizeof *st);
    if (!st || !(st->path = strdup(path)) || !(st->dir = strdup(path)))
        abort();
    char *slash = strrchr(st->dir, '/');
    if (!slash)
        strcpy(st->dir, ".");
    else if (slash == st->dir)
        slash[1] = '\0';
    else
        *slash = '\0';
    st->base.vt = &hk__sq_vt;
    st->queue_max = queue_max;
    st->busy_ms = busy_ms;
    atomic_init(&st->health, 0);
    atomic_init(&st->read_spell, 0);
    if (uv_mutex_init(&st->mu) < 0 || uv_cond_init(&st->cv) < 0)
        abort();
    return st;
}

/* The integer a PRAGMA query `sql` returns, into *out (left as it is when
 * it returns no row). SQLITE_OK or the error. */
static int pragma_int(sqlite3 *db, const char *sql, int *out)
{
    sqlite3_stmt *stmt = NULL;
    int rc = sqlite3_prepare_v2(db, sql, -1, &stmt, NULL);
    if (rc == SQLITE_OK && (rc = sqlite3_step(stmt)) == SQLITE_ROW)
        *out = sqlite3_column_int(stmt, 0);
    sqlite3_finalize(stmt);
    return rc == SQLITE_ROW || rc == SQLITE_DONE ? SQLITE_OK : rc;
}

/* The write connection, in WAL mode; the synchronous level asked for is
 * set by hk_sqlite_open once the schema is there (set_sync). A new file
 * (`fresh`: none, or empty) is made with synchronous=OFF: there is nothing
 * to lose in it yet, and its making (a rollback-journal transaction to
 * switch it to WAL, then the schema) synced the disk eleven times;
 * set_sync makes it durable with one checkpoint instead. SQLITE_OK,
 * or the error (errbuf set when SQLite's message would not say enough). */
static int open_writer_db(struct sq_store *st, bool fresh, char *errbuf, size_t errlen)
{
    sqlite3_stmt *stmt = NULL;
    int rc = sqlite3_open_v2(st->path, &st->db,
                             SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX, NULL);
    /* Extended codes say which I/O failed in the logs; hk__sq_store_err()
     * maps them by their primary code. */
    if (rc == SQLITE_OK)
        rc = sqlite3_extended_result_codes(st->db, 1);
    if (rc == SQLITE_OK)
        rc = sqlite3_busy_timeout(st->db, st->busy_ms);
    if (rc == SQLITE_OK && fresh)
        rc = sqlite3_exec(st->db, "PRAGMA synchronous=OFF", NULL, NULL, NULL);
    /* Retention's deletes give their pages back to the file system
     * (PRAGMA incremental_vacuum after each batch). Set before anything
     * is written, this makes a new file so; an older file is converted
     * once, after the migration (vacuum_convert). Only when not set
     * already: on a file that has it, setting it again rewrites page 1,
     * which starts a new WAL and syncs the disk three times at every
     * start. */
    int av = -1;
    if (rc == SQLITE_OK)
        rc = pragma_int(st->db, "PRAGMA auto_vacuum", &av);
    if (rc == SQLITE_OK && av != 2)
        rc = sqlite3_exec(st->db, "PRAGMA auto_vacuum=INCREMENTAL", NULL, NULL, NULL);
    if (rc != SQLITE_OK)
        goto out;
    /* Readers on other connections need WAL; it is not optional. */
    rc = sqlite3_prepare_v2(st->db, "PRAGMA journal_mode=WAL", -1, &stmt, NULL);
    if (rc == SQLITE_OK)
        rc = sqlite3_step(stmt);
    if (rc != SQLITE_ROW)
        goto out;
    if (strcmp((const char *)sqlite3_column_text(stmt, 0), "wal") != 0) {
        snprintf(errbuf, errlen, "sqlite %s: cannot use WAL (journal_mode is %s)",
                 st->path, (const char *)sqlite3_column_text(stmt, 0));
        rc = SQLITE_ERROR;
        goto out;
    }
    rc = SQLITE_OK;
out:
    sqlite3_finalize(stmt);
    return rc;
}

/* The synchronous level asked for. A file made by this start (`fresh`)
 * is then made durable once: a checkpoint (which syncs the WAL and the
 * database) and a sync of the directory that holds the new file. */
static int set_sync(struct sq_store *st, bool sync_full, bool fresh)
{
    st->sync_full = sync_full;
    int rc = sqlite3_exec(st->db, sync_full ? "PRAGMA synchronous=FULL" : "PRAGMA synchronous=NORMAL",
                          NULL, NULL, NULL);
    if (rc != SQLITE_OK || !fresh)
        return rc;
    rc = sqlite3_wal_checkpoint_v2(st->db, NULL, SQLITE_CHECKPOINT_FULL, NULL, NULL);
    if (rc != SQLITE_OK)
        return rc;
    int fd = open(st->dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0 || fsync(fd) != 0)
        rc = SQLITE_IOERR_DIR_FSYNC;
    if (fd >= 0)
        close(fd);
    return rc;
}

/* A file made before hookd set auto_vacuum keeps its freed pages: one
 * VACUUM (it rewrites the file, so it takes a while on a large one, once)
 * makes it incremental. SQLITE_OK or the error. */
static int vacuum_convert(struct sq_store *st)
{
    sqlite3_stmt *stmt = NULL;
    int rc = sqlite3_prepare_v2(st->db, "PRAGMA auto_vacuum", -1, &stmt, NULL);
    if (rc == SQLITE_OK && (rc = sqlite3_step(stmt)) == SQLITE_ROW) {
        int mode = sqlite3_column_int(stmt, 0);
        sqlite3_finalize(stmt);
        stmt = NULL;
        if (mode == 2)
            return SQLITE_OK;
        hk_info("sqlite: converting the database to incremental vacuum (once)", NULL);
        rc = sqlite3_exec(st->db, "PRAGMA auto_vacuum=INCREMENTAL; VACUUM", NULL, NULL, NULL);
    } else if (rc == SQLITE_DONE) {
        rc = SQLITE_OK;
    }
    sqlite3_finalize(stmt);
    return rc;
}

/* Whether the WAL beside `path` holds a frame (more than its 32-byte
 * header): then the next write appends to it. */
static bool wal_has_frames(const char *path)
{
    size_t n = strlen(path) + sizeof "-wal";
    char *p = malloc(n);
    if (!p)
        return false;
    snprintf(p, n, "%s-wal", path);
    struct stat sb;
    bool yes = stat(p, &sb) == 0 && sb.st_size > 32;
    free(p);
    return yes;
}

struct hk_store *hk_sqlite_open(const struct hk_sqlite_opts *opts, char *errbuf, size_t errlen)
{
    size_t queue_max;
    int busy_ms;

    assert(errlen > 0);
    errbuf[0] = '\0';
    if (opts_check(opts, &queue_max, &busy_ms, errbuf, errlen) < 0)
        return NULL;
    sqlite_memory_settings();
    struct sq_store *st = store_new(opts->path, queue_max, busy_ms);
    struct stat sb;
    bool fresh = stat(opts->path, &sb) != 0 || sb.st_size == 0;
    int rc = open_writer_db(st, fresh, errbuf, errlen);
    if (rc == SQLITE_OK && migrate(st->db, errbuf, errlen) < 0)
        rc = SQLITE_ERROR;
    if (rc == SQLITE_OK)
        rc = vacuum_convert(st);
    if (rc == SQLITE_OK)
        rc = set_sync(st, opts->sync_full, fresh);
    if (rc == SQLITE_OK)
        rc = hk__sq_writer_prepare(st);
    if (rc == SQLITE_OK && !fresh)
        st->wal_going = wal_has_frames(st->path);
    if (rc == SQLITE_OK) {
        /* Now, so that it readies the WAL beside the rest of the start
         * (sqlite_writer.c: prime_wal). Retried by the first write. */
        uv_mutex_lock(&st->mu);
        if (hk__sq_writer_start_locked(st) < 0)
            hk_warn("sqlite: cannot start the writer thread", NULL);
        uv_mutex_unlock(&st->mu);
        /* The writer's first steps start the WAL's syncs (prime_wal): let
         * it take them now, so that they run beside the rest of the start
         * rather than after it, when the first webhook may be here. */
        sched_yield();
    }
    if (rc != SQLITE_OK) {
        if (errbuf[0] == '\0')
            snprintf(errbuf, errlen, "sqlite %s: %s", opts->path,
                     st->db ? sqlite3_errmsg(st->db) : sqlite3_errstr(rc));
        hk__sq_store_free(st);
        return NULL;
    }
    return &st->base;
}
