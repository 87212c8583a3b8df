/* SPDX-License-Identifier: MIT
 * GraphQL at /graphql through the real server (docs/graphql.md, issue 14),
 * on SQLite and (suite integ-pg) PostgreSQL: POST and GET, the response
 * media type, a mutation by GET, variables and operation names, errors with
 * locations, webhook(id), deleteWebhook, sources and system, the time
 * filters, access control, introspection switched off, the limits (never a
 * hang), garbage cursors, and paging over 10^5 rows that returns each row
 * exactly once. Expected messages and locations are graphql-js 16's. */
#include <criterion/criterion.h>

#include <libpq-fe.h>
#include <sqlite3.h>

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>

#include "harness.h"

static struct hk_server srv;

static void teardown(void)
{
    hk_server_cleanup(&srv);
}

TestSuite(graphql, .fini = teardown, .timeout = 240);

#define HDRS(...) ((const char *const[]){__VA_ARGS__, NULL})
#define GQL_MEDIA "application/graphql-response+json"
#define TOKEN_LEN 47   /* "hkd_" + 43 base64url characters */

/* ---- requests ---------------------------------------------------------------- */

/* One GraphQL request. */
struct gq_call {
    bool get;                  /* GET /graphql?query=…, else POST application/json */
    const char *query;
    const char *variables;     /* JSON text, or NULL */
    const char *operation;     /* operationName, or NULL */
    const char *accept;        /* the Accept header's value, or NULL: none */
    const char *auth;          /* a bearer token, or NULL */
    CURL *h;                   /* a keep-alive handle, or NULL */
};

static char *escape(const char *s)
{
    CURL *h = curl_easy_init();
    cr_assert_not_null(h);
    char *e = curl_easy_escape(h, s, 0);
    cr_assert_not_null(e);
    char *out = strdup(e);
    curl_free(e);
    curl_easy_cleanup(h);
    return out;
}

/* Run `c`; the response in *r (caller frees), its body parsed when it is
 * JSON (caller decrefs), else NULL. */
static json_t *gq_run(const struct hk_server *s, const struct gq_call *c, struct hk_resp *r)
{
    char accept[160], auth[160];
    const char *hdr[4];
    size_t k = 0;
    if (c->accept) {
        snprintf(accept, sizeof accept, "Accept: %s", c->accept);
        hdr[k++] = accept;
    }
    if (c->auth) {
        snprintf(auth, sizeof auth, "Authorization: Bearer %s", c->auth);
        hdr[k++] = auth;
    }
    if (!c->get)
        hdr[k++] = "Content-Type: application/json";
    hdr[k] = NULL;

    char *path = NULL, *body = NULL;
    if (c->get) {
        char *q = escape(c->query);
        char *v = c->variables ? escape(c->variables) : NULL;
        char *o = c->operation ? escape(c->operation) : NULL;
        size_t n = strlen(q) + (v ? strlen(v) : 0) + (o ? strlen(o) : 0) + 64;
        path = malloc(n);
        cr_assert_not_null(path);
        snprintf(path, n, "/graphql?query=%s%s%s%s%s", q, v ? "&variables=" : "", v ? v : "",
                 o ? "&operationName=" : "", o ? o : "");
        free(q);
        free(v);
        free(o);
    } else {
        json_t *b = json_pack("{s:s}", "query", c->query);
        if (c->variables) {
            json_error_t e;
            json_t *v = json_loads(c->variables, 0, &e);
            cr_assert_not_null(v, "the test's variables are not JSON: %s", e.text);
            json_object_set_new(b, "variables", v);
        }
        if (c->operation)
            json_object_set_new(b, "operationName", json_string(c->operation));
        body = json_dumps(b, JSON_COMPACT);
        json_decref(b);
    }
    struct hk_req q = {.method = c->get ? "GET" : "POST", .path = c->get ? path : "/graphql", .body = body,
                       .headers = hdr, .timeout_ms = 20000};
    hk_do(s, c->h, &q, r);
    free(path);
    free(body);
    json_error_t e;
    return json_loadb(r->body, r->body_len, 0, &e);
}

/* A value inside `root` by a dotted path of member names and array
 * indexes ("data.webhooks.edges.0.node.id"); NULL when absent. */
static json_t *at(json_t *root, const char *path)
{
    char buf[256];
    snprintf(buf, sizeof buf, "%s", path);
    json_t *v = root;
    for (char *save = NULL, *p = strtok_r(buf, ".", &save); p && v; p = strtok_r(NULL, ".", &save)) {
        if (json_is_array(v)) {
            char *end;
            unsigned long i = strtoul(p, &end, 10);
            v = *end == '\0' ? json_array_get(v, i) : NULL;
        } else {
            v = json_object_get(v, p);
        }
    }
    return v;
}

static const char *at_str(json_t *root, const char *path)
{
    json_t *v = at(root, path);
    return json_is_string(v) ? json_string_value(v) : "(not a string)";
}

/* A query that runs without errors: 200, application/json (or the GraphQL
 * media type when asked for), no "errors". The body; caller decrefs. */
static json_t *gq_ok(const struct hk_server *s, const struct gq_call *c)
{
    struct hk_resp r;
    json_t *j = gq_run(s, c, &r);
    cr_assert_eq(r.status, 200, "%s -> %ld: %s", c->query, r.status, r.body);
    hk_assert_ctype(&r, c->accept && strstr(c->accept, GQL_MEDIA) ? GQL_MEDIA : "application/json");
    cr_assert_not_null(j, "not JSON: %s", r.body);
    cr_assert_null(json_object_get(j, "errors"), "%s -> errors: %s", c->query, r.body);
    cr_assert(json_is_object(json_object_get(j, "data")), "%s -> no data: %s", c->query, r.body);
    hk_resp_free(&r);
    return j;
}

static json_t *query(const struct hk_server *s, const char *q, const char *vars)
{
    return gq_ok(s, &(struct gq_call){.query = q, .variables = vars});
}

/* A response carrying GraphQL errors (every one with a message): the body;
 * caller decrefs. `status` is what the transport must answer. */
static json_t *gq_err(const struct hk_server *s, const struct gq_call *c, long status)
{
    struct hk_resp r;
    json_t *j = gq_run(s, c, &r);
    cr_assert_eq(r.status, status, "%.200s -> %ld, want %ld: %.500s", c->query, r.status, status, r.body);
    cr_assert_not_null(j, "not JSON: %.500s", r.body);
    json_t *errs = json_object_get(j, "errors");
    cr_assert(json_is_array(errs) && json_array_size(errs) > 0, "%.200s -> no errors: %.500s", c->query, r.body);
    for (size_t i = 0; i < json_array_size(errs); i++)
        cr_assert(json_is_string(json_object_get(json_array_get(errs, i), "message")), "%.500s", r.body);
    hk_resp_free(&r);
    return j;
}

/* The one error of a request that could not run (parse, validation,
 * variables): no data at all, the message and one location as given. */
static void assert_request_error(json_t *j, const char *message, int line, int column)
{
    char *txt = json_dumps(j, JSON_COMPACT);
    cr_assert_null(json_object_get(j, "data"), "a request error carries no data: %s", txt);
    cr_assert_eq(json_array_size(json_object_get(j, "errors")), 1, "%s", txt);
    cr_assert_str_eq(at_str(j, "errors.0.message"), message, "%s", txt);
    cr_assert_eq(json_integer_value(at(j, "errors.0.locations.0.line")), line, "%s", txt);
    cr_assert_eq(json_integer_value(at(j, "errors.0.locations.0.column")), column, "%s", txt);
    cr_assert_eq(json_array_size(at(j, "errors.0.locations")), 1, "%s", txt);
    free(txt);
}

static int64_t id_of(json_t *v)
{
    cr_assert(json_is_string(v), "an ID is a string");
    return strtoll(json_string_value(v), NULL, 10);
}

/* ---- the store behind hookd's back ---------------------------------------------- */

/* The DATABASE_URL the harness gave this server (PostgreSQL). */
static const char *url_of(const struct hk_server *s)
{
    for (size_t i = 0; i < HK_MAX_ENV && s->env[i]; i++)
        if (strncmp(s->env[i], "DATABASE_URL=", 13) == 0)
            return s->env[i] + 13;
    cr_assert_fail("server has no DATABASE_URL");
    return NULL;
}

/* Run `sql` on the server's database while it runs: SQLite in WAL mode
 * takes a second writer (hookd's is idle), PostgreSQL is PostgreSQL. */
static void store_exec(const struct hk_server *s, const char *sqlite_sql, const char *pg_sql)
{
    if (hk_store_is_pg()) {
        PGconn *c = PQconnectdb(url_of(s));
        cr_assert_eq(PQstatus(c), CONNECTION_OK, "%s", PQerrorMessage(c));
        PGresult *r = PQexec(c, pg_sql);
        cr_assert(PQresultStatus(r) == PGRES_COMMAND_OK || PQresultStatus(r) == PGRES_TUPLES_OK, "%s: %s", pg_sql,
                  PQresultErrorMessage(r));
        PQclear(r);
        PQfinish(c);
        return;
    }
    sqlite3 *db;
    cr_assert_eq(sqlite3_open_v2(s->db_path, &db, SQLITE_OPEN_READWRITE, NULL), SQLITE_OK);
    cr_assert_eq(sqlite3_busy_timeout(db, 10000), SQLITE_OK);
    char *err = NULL;
    int rc = sqlite3_exec(db, sqlite_sql, NULL, NULL, &err);
    cr_assert_eq(rc, SQLITE_OK, "%s: %s", sqlite_sql, err ? err : "?");
    sqlite3_close(db);
}

/* Unix microseconds as RFC 3339 UTC with six decimals, as hookd writes them. */
static void rfc3339(int64_t us, char out[40])
{
    time_t secs = (time_t)(us / 1000000);
    struct tm tm;
    gmtime_r(&secs, &tm);
    size_t n = strftime(out, 40, "%Y-%m-%dT%H:%M:%S", &tm);
    snprintf(out + n, 40 - n, ".%06dZ", (int)(us % 1000000));
}

/* ---- transport ------------------------------------------------------------------ */

#define PAGE_Q \
    "query($n: Int, $after: String) { webhooks(first: $n, after: $after) {" \
    " edges { cursor node { id source eventType payload receivedAt } } pageInfo { hasNextPage endCursor } } }"

Test(graphql, post_and_get_answer_the_same_newest_first)
{
    hk_server_start(&srv, NULL);
    int64_t id[3];
    id[0] = hk_create(&srv, "github", "push", "{\"n\":0}");
    id[1] = hk_create(&srv, "stripe", "charge.succeeded", NULL);
    id[2] = hk_create(&srv, "github", "issues", "{\"n\":2}");

    json_t *j = query(&srv, PAGE_Q, "{\"n\": 2}");
    cr_assert_eq(json_array_size(at(j, "data.webhooks.edges")), 2);
    cr_assert_eq(id_of(at(j, "data.webhooks.edges.0.node.id")), id[2], "newest first");
    cr_assert_eq(id_of(at(j, "data.webhooks.edges.1.node.id")), id[1]);
    cr_assert_str_eq(at_str(j, "data.webhooks.edges.0.node.source"), "github");
    cr_assert_str_eq(at_str(j, "data.webhooks.edges.0.node.eventType"), "issues");
    cr_assert_str_eq(at_str(j, "data.webhooks.edges.0.node.payload"), "{\"n\":2}");
    cr_assert(json_is_null(at(j, "data.webhooks.edges.1.node.payload")), "no payload: null");
    cr_assert(json_is_true(at(j, "data.webhooks.pageInfo.hasNextPage")));
    cr_assert_str_eq(at_str(j, "data.webhooks.pageInfo.endCursor"), at_str(j, "data.webhooks.edges.1.cursor"));
    cr_assert_str_neq(at_str(j, "data.webhooks.edges.0.cursor"), at_str(j, "data.webhooks.edges.1.cursor"));

    /* receivedAt is REST's, to the microsecond. */
    struct hk_resp r;
    char path[64];
    snprintf(path, sizeof path, "/api/webhooks/%" PRId64, id[2]);
    hk_get(&srv, path, &r);
    json_t *rest = hk_assert_json(&r, 200);
    cr_assert_str_eq(at_str(j, "data.webhooks.edges.0.node.receivedAt"), hk_jstr(rest, "receivedAt"));
    json_decref(rest);
    hk_resp_free(&r);

    /* The next page, by the end cursor, ends the list. */
    char vars[256];
    snprintf(vars, sizeof vars, "{\"n\": 2, \"after\": \"%s\"}", at_str(j, "data.webhooks.pageInfo.endCursor"));
    json_t *k = query(&srv, PAGE_Q, vars);
    cr_assert_eq(json_array_size(at(k, "data.webhooks.edges")), 1);
    cr_assert_eq(id_of(at(k, "data.webhooks.edges.0.node.id")), id[0]);
    cr_assert(json_is_false(at(k, "data.webhooks.pageInfo.hasNextPage")));
    cr_assert_str_eq(at_str(k, "data.webhooks.pageInfo.endCursor"), at_str(k, "data.webhooks.edges.0.cursor"));

    /* GET with the same query and variables: the same data, byte for byte
     * once parsed. */
    json_t *g = gq_ok(&srv, &(struct gq_call){.get = true, .query = PAGE_Q, .variables = "{\"n\": 2}"});
    cr_assert(json_equal(g, j), "GET and POST differ");
    json_decref(g);

    /* A page past the end: no rows, no cursor. */
    snprintf(vars, sizeof vars, "{\"n\": 2, \"after\": \"%s\"}", at_str(k, "data.webhooks.pageInfo.endCursor"));
    json_t *e = query(&srv, PAGE_Q, vars);
    cr_assert_eq(json_array_size(at(e, "data.webhooks.edges")), 0);
    cr_assert(json_is_false(at(e, "data.webhooks.pageInfo.hasNextPage")));
    cr_assert(json_is_null(at(e, "data.webhooks.pageInfo.endCursor")), "no rows: endCursor null");
    /* first: 0 asks for nothing but still tells whether rows exist. */
    json_t *z = query(&srv, PAGE_Q, "{\"n\": 0}");
    cr_assert_eq(json_array_size(at(z, "data.webhooks.edges")), 0);
    cr_assert(json_is_true(at(z, "data.webhooks.pageInfo.hasNextPage")));
    json_decref(z);
    json_decref(e);
    json_decref(k);
    json_decref(j);
    hk_finish(&srv);
}

Test(graphql, the_media_type_follows_accept)
{
    hk_server_start(&srv, NULL);
    static const struct {
        const char *accept;
        const char *want;
    } cases[] = {
        {NULL, "application/json"},
        {"application/json", "application/json"},
        {"*/*", "application/json"},
        {GQL_MEDIA, GQL_MEDIA},
        {GQL_MEDIA ", application/json;q=0.9", GQL_MEDIA},
        {"application/graphql-response+json;charset=utf-8", GQL_MEDIA},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        for (int get = 0; get < 2; get++) {
            hk_context("Accept: %s, %s", cases[i].accept ? cases[i].accept : "(none)", get ? "GET" : "POST");
            struct hk_resp r;
            struct gq_call c = {.get = get, .query = "{ __typename }", .accept = cases[i].accept};
            json_t *j = gq_run(&srv, &c, &r);
            cr_assert_eq(r.status, 200);
            hk_assert_ctype(&r, cases[i].want);
            cr_assert_str_eq(at_str(j, "data.__typename"), "Query");
            json_decref(j);
            hk_resp_free(&r);
        }
    }
    hk_context("%s", "");
    /* A request error: 200 with application/json (the errors are in the
     * body), 400 with the GraphQL media type. */
    json_t *j = gq_err(&srv, &(struct gq_call){.query = "{ nope }"}, 200);
    assert_request_error(j, "Cannot query field \"nope\" on type \"Query\".", 1, 3);
    json_decref(j);
    j = gq_err(&srv, &(struct gq_call){.query = "{ nope }", .accept = GQL_MEDIA}, 400);
    assert_request_error(j, "Cannot query field \"nope\" on type \"Query\".", 1, 3);
    json_decref(j);
    hk_finish(&srv);
}

Test(graphql, a_mutation_by_get_is_405)
{
    hk_server_start(&srv, NULL);
    int64_t id = hk_create(&srv, "s", "e", NULL);
    char q[128];
    snprintf(q, sizeof q, "mutation { deleteWebhook(id: \"%" PRId64 "\") }", id);
    struct hk_resp r;
    json_t *j = gq_run(&srv, &(struct gq_call){.get = true, .query = q}, &r);
    json_decref(j);
    json_t *p = hk_assert_problem(&r, 405);
    json_decref(p);
    char allow[64];
    cr_assert_not_null(hk_header(&r, "Allow", allow, sizeof allow));
    cr_assert(hk_list_has(allow, "POST"), "Allow: %s", allow);
    hk_resp_free(&r);

    /* The operation GET would run decides: a query beside a mutation runs. */
    char doc[256];
    snprintf(doc, sizeof doc, "query Q { system { store } } mutation M { deleteWebhook(id: \"%" PRId64 "\") }", id);
    j = gq_ok(&srv, &(struct gq_call){.get = true, .query = doc, .operation = "Q"});
    json_decref(j);
    j = gq_run(&srv, &(struct gq_call){.get = true, .query = doc, .operation = "M"}, &r);
    json_decref(j);
    cr_assert_eq(r.status, 405, "%s", r.body);
    hk_resp_free(&r);

    /* Still there: nothing ran. */
    snprintf(q, sizeof q, "{ webhook(id: \"%" PRId64 "\") { id } }", id);
    j = query(&srv, q, NULL);
    cr_assert_eq(id_of(at(j, "data.webhook.id")), id);
    json_decref(j);
    hk_finish(&srv);
}

Test(graphql, variables_and_operation_names)
{
    hk_server_start(&srv, NULL);
    int64_t a = hk_create(&srv, "alpha", "e1", NULL);
    int64_t b = hk_create(&srv, "beta", "e2", NULL);
    hk_create(&srv, "alpha", "e2", NULL);

    const char *q = "query($src: String, $et: String) {"
                    " webhooks(source: $src, eventType: $et) { edges { node { id } } } }";
    json_t *j = query(&srv, q, "{\"src\": \"alpha\", \"et\": \"e1\"}");
    cr_assert_eq(json_array_size(at(j, "data.webhooks.edges")), 1);
    cr_assert_eq(id_of(at(j, "data.webhooks.edges.0.node.id")), a);
    json_decref(j);
    /* GET takes them as JSON in the query string. */
    j = gq_ok(&srv, &(struct gq_call){.get = true, .query = q, .variables = "{\"src\":\"beta\"}"});
    cr_assert_eq(json_array_size(at(j, "data.webhooks.edges")), 1);
    cr_assert_eq(id_of(at(j, "data.webhooks.edges.0.node.id")), b);
    json_decref(j);
    /* An unset variable leaves the argument unset (the default applies). */
    j = query(&srv, q, "{}");
    cr_assert_eq(json_array_size(at(j, "data.webhooks.edges")), 3);
    json_decref(j);

    /* Two operations: operationName picks one. */
    const char *two = "query A { system { store } } query B { sources { source } }";
    j = gq_ok(&srv, &(struct gq_call){.query = two, .operation = "B"});
    cr_assert_null(at(j, "data.system"));
    cr_assert_str_eq(at_str(j, "data.sources.0.source"), "alpha");
    json_decref(j);

    /* Variables coerced as the specification says, with graphql-js's words. */
    const char *need = "query($n: Int!) { webhooks(first: $n) { edges { cursor } } }";
    j = gq_err(&srv, &(struct gq_call){.query = need}, 200);
    assert_request_error(j, "Variable \"$n\" of required type \"Int!\" was not provided.", 1, 7);
    json_decref(j);
    j = gq_err(&srv, &(struct gq_call){.query = need, .variables = "{\"n\": \"abc\"}", .accept = GQL_MEDIA}, 400);
    assert_request_error(j, "Variable \"$n\" got invalid value \"abc\"; Int cannot represent non-integer value:"
                            " \"abc\"", 1, 7);
    json_decref(j);
    j = query(&srv, need, "{\"n\": 1}");
    cr_assert_eq(json_array_size(at(j, "data.webhooks.edges")), 1);
    json_decref(j);
    hk_finish(&srv);
}

Test(graphql, errors_carry_their_locations)
{
    hk_server_start(&srv, NULL);
    static const struct {
        const char *q;
        const char *message;
        int line, column;
    } cases[] = {
        {"{ webhooks(first: 1) { edges }", "Syntax Error: Expected Name, found <EOF>.", 1, 31},
        {"{\n  webhooks(first: 1) {\n    edges { node { nope } }\n  }\n}",
         "Cannot query field \"nope\" on type \"Webhook\".", 3, 20},
        {"query Q($x: Int) { system { version } }", "Variable \"$x\" is never used in operation \"Q\".", 1, 9},
        {"{ webhooks(first: \"x\") { edges { cursor } } }", "Int cannot represent non-integer value: \"x\"", 1, 19},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        for (int media = 0; media < 2; media++) {
            hk_context("%s (%s)", cases[i].q, media ? GQL_MEDIA : "application/json");
            json_t *j = gq_err(&srv, &(struct gq_call){.query = cases[i].q, .accept = media ? GQL_MEDIA : NULL},
                               media ? 400 : 200);
            assert_request_error(j, cases[i].message, cases[i].line, cases[i].column);
            json_decref(j);
        }
    }
    hk_context("%s", "");
    /* Two locations for one error. */
    json_t *j = gq_err(&srv, &(struct gq_call){.query = "{ webhook(id: 1) { id } webhook(id: 2) { id } }"}, 200);
    cr_assert_str_eq(at_str(j, "errors.0.message"),
                     "Fields \"webhook\" conflict because they have differing arguments. Use different aliases on the "
                     "fields to fetch both if this was intentional.");
    cr_assert_eq(json_integer_value(at(j, "errors.0.locations.0.column")), 3);
    cr_assert_eq(json_integer_value(at(j, "errors.0.locations.1.column")), 25);
    json_decref(j);
    /* Not a JSON object, or no query: errors too, never a crash. */
    struct hk_resp r;
    hk_post_json(&srv, "/graphql", "[1, 2]", &r);
    cr_assert(r.status == 200 || r.status == 400, "%ld", r.status);
    cr_assert_not_null(strstr(r.body, "\"errors\""), "%s", r.body);
    hk_resp_free(&r);
    hk_post_json(&srv, "/graphql", "{\"variables\": {}}", &r);
    cr_assert(r.status == 200 || r.status == 400, "%ld", r.status);
    cr_assert_not_null(strstr(r.body, "\"errors\""), "%s", r.body);
    hk_resp_free(&r);
    hk_finish(&srv);
}

/* ---- the root fields ------------------------------------------------------------- */

Test(graphql, webhook_by_id_and_delete_webhook)
{
    hk_server_start(&srv, NULL);
    int64_t id = hk_create(&srv, "github", "push", "{\"ref\":\"main\"}");
    hk_create(&srv, "github", "push", NULL);
    char q[256], vars[64];
    snprintf(vars, sizeof vars, "{\"id\": \"%" PRId64 "\"}", id);
    const char *get = "query($id: ID!) { webhook(id: $id) { id source eventType payload receivedAt } }";
    json_t *j = query(&srv, get, vars);
    cr_assert_eq(id_of(at(j, "data.webhook.id")), id);
    cr_assert_str_eq(at_str(j, "data.webhook.source"), "github");
    cr_assert_str_eq(at_str(j, "data.webhook.eventType"), "push");
    cr_assert_str_eq(at_str(j, "data.webhook.payload"), "{\"ref\":\"main\"}");
    cr_assert(hk_parse_rfc3339(at_str(j, "data.webhook.receivedAt")) > 0);
    json_decref(j);
    /* An ID literal may be an integer too; an unknown or absurd id is null. */
    snprintf(q, sizeof q, "{ a: webhook(id: %" PRId64 ") { id } b: webhook(id: \"999999\") { id }"
             " c: webhook(id: \"x\") { id } }", id);
    j = query(&srv, q, NULL);
    cr_assert_eq(id_of(at(j, "data.a.id")), id);
    cr_assert(json_is_null(at(j, "data.b")));
    cr_assert(json_is_null(at(j, "data.c")));
    json_decref(j);

    const char *del = "mutation($id: ID!) { deleteWebhook(id: $id) }";
    j = query(&srv, del, vars);
    cr_assert(json_is_true(at(j, "data.deleteWebhook")));
    json_decref(j);
    j = query(&srv, get, vars);
    cr_assert(json_is_null(at(j, "data.webhook")), "deleted: gone");
    json_decref(j);
    j = query(&srv, del, vars);
    cr_assert(json_is_false(at(j, "data.deleteWebhook")), "a second delete finds nothing");
    json_decref(j);
    struct hk_resp r;
    snprintf(q, sizeof q, "/api/webhooks/%" PRId64, id);
    hk_get(&srv, q, &r);
    cr_assert_eq(r.status, 404);
    hk_resp_free(&r);
    j = query(&srv, "{ webhooks { edges { node { id } } } }", NULL);
    cr_assert_eq(json_array_size(at(j, "data.webhooks.edges")), 1);
    json_decref(j);
    hk_finish(&srv);
}

Test(graphql, sources_and_system)
{
    hk_server_start(&srv, NULL);
    json_t *j = query(&srv, "{ sources { source count lastReceivedAt } }", NULL);
    cr_assert_eq(json_array_size(at(j, "data.sources")), 0);
    json_decref(j);
    const char *src[6] = {"zeta", "Alpha", "zeta", "beta", "zeta", "beta"};
    for (int i = 0; i < 6; i++)
        hk_create(&srv, src[i], "e", NULL);
    j = query(&srv, "{ sources { source count lastReceivedAt } }", NULL);
    cr_assert_eq(json_array_size(at(j, "data.sources")), 3);
    cr_assert_str_eq(at_str(j, "data.sources.0.source"), "Alpha", "byte order of name");
    cr_assert_str_eq(at_str(j, "data.sources.1.source"), "beta");
    cr_assert_str_eq(at_str(j, "data.sources.2.source"), "zeta");
    cr_assert_eq(json_integer_value(at(j, "data.sources.0.count")), 1);
    cr_assert_eq(json_integer_value(at(j, "data.sources.1.count")), 2);
    cr_assert_eq(json_integer_value(at(j, "data.sources.2.count")), 3);
    /* lastReceivedAt: the newest row's receivedAt. */
    for (int i = 0; i < 3; i++) {
        char q[160], path[64];
        snprintf(path, sizeof path, "data.sources.%d.source", i);
        snprintf(q, sizeof q, "{ webhooks(first: 1, source: \"%s\") { edges { node { receivedAt } } } }",
                 at_str(j, path));
        json_t *k = query(&srv, q, NULL);
        snprintf(path, sizeof path, "data.sources.%d.lastReceivedAt", i);
        cr_assert_str_eq(at_str(j, path), at_str(k, "data.webhooks.edges.0.node.receivedAt"));
        json_decref(k);
    }
    json_decref(j);

    j = query(&srv, "{ system { version store uptimeMs eventLoops } }", NULL);
    cr_assert_str_eq(at_str(j, "data.system.store"), hk_store_is_pg() ? "postgresql" : "sqlite");
    cr_assert_eq(json_integer_value(at(j, "data.system.eventLoops")), 2, "HOOKD_THREADS=2");
    cr_assert(json_is_number(at(j, "data.system.uptimeMs")) && json_number_value(at(j, "data.system.uptimeMs")) > 0);
    cr_assert(strlen(at_str(j, "data.system.version")) > 0);
    /* The same version /q/info or the build reports: at least a digit. */
    cr_assert(hk_matches(at_str(j, "data.system.version"), "[0-9]"), "%s", at_str(j, "data.system.version"));
    json_decref(j);
    hk_finish(&srv);
}

/* receivedAfter and receivedBefore: exclusive, to the microsecond. */
Test(graphql, time_filters_are_exclusive)
{
    hk_server_start(&srv, NULL);
    int64_t id[4];
    char at_[4][40];
    for (int i = 0; i < 4; i++) {
        id[i] = hk_create(&srv, "t", "e", NULL);
        hk_sleep_ms(2);
        char q[128];
        snprintf(q, sizeof q, "{ webhook(id: \"%" PRId64 "\") { receivedAt } }", id[i]);
        json_t *j = query(&srv, q, NULL);
        snprintf(at_[i], sizeof at_[i], "%s", at_str(j, "data.webhook.receivedAt"));
        json_decref(j);
    }
    const char *q = "query($a: DateTime, $b: DateTime) { webhooks(receivedAfter: $a, receivedBefore: $b)"
                    " { edges { node { id } } } }";
    char vars[160];
    snprintf(vars, sizeof vars, "{\"a\": \"%s\", \"b\": \"%s\"}", at_[0], at_[3]);
    json_t *j = query(&srv, q, vars);
    cr_assert_eq(json_array_size(at(j, "data.webhooks.edges")), 2, "both ends left out");
    cr_assert_eq(id_of(at(j, "data.webhooks.edges.0.node.id")), id[2]);
    cr_assert_eq(id_of(at(j, "data.webhooks.edges.1.node.id")), id[1]);
    json_decref(j);
    snprintf(vars, sizeof vars, "{\"a\": \"%s\"}", at_[2]);
    j = query(&srv, q, vars);
    cr_assert_eq(json_array_size(at(j, "data.webhooks.edges")), 1);
    cr_assert_eq(id_of(at(j, "data.webhooks.edges.0.node.id")), id[3]);
    json_decref(j);
    snprintf(vars, sizeof vars, "{\"b\": \"%s\"}", at_[1]);
    j = query(&srv, q, vars);
    cr_assert_eq(json_array_size(at(j, "data.webhooks.edges")), 1);
    cr_assert_eq(id_of(at(j, "data.webhooks.edges.0.node.id")), id[0]);
    json_decref(j);
    j = query(&srv, q, "{\"a\": \"1970-01-01T00:00:00.000001Z\", \"b\": \"9999-12-31T23:59:59Z\"}");
    cr_assert_eq(json_array_size(at(j, "data.webhooks.edges")), 4);
    json_decref(j);
    /* Not a date-time: an error for the field, never a crash. */
    j = gq_err(&srv, &(struct gq_call){.query = q, .variables = "{\"a\": \"yesterday\"}"}, 200);
    json_decref(j);
    hk_finish(&srv);
}

/* ---- access control and introspection --------------------------------------------- */

static void create_token(const struct hk_server *s, const char *name, const char *scope, char tok[TOKEN_LEN + 1])
{
    char *out, *err;
    int st = hk_server_run(s, NULL, HDRS("token", "create", "--name", name, "--scope", scope), 20000, &out, &err);
    cr_assert(st != -1 && WIFEXITED(st) && WEXITSTATUS(st) == 0, "token create: %s", err);
    cr_assert(hk_matches(out, "^hkd_[A-Za-z0-9_-]{43}\n$"), "token create printed \"%s\"", out);
    snprintf(tok, TOKEN_LEN + 1, "%.*s", TOKEN_LEN, out);
    free(out);
    free(err);
}

Test(graphql, access_control_read_queries_delete_mutates)
{
    hk_server_start(&srv, HDRS("HOOKD_AUTH=on"));
    char rd[TOKEN_LEN + 1], rdl[TOKEN_LEN + 1];
    create_token(&srv, "reader", "read", rd);
    create_token(&srv, "deleter", "read,delete", rdl);
    int64_t id = hk_create(&srv, "s", "e", NULL);
    char vars[64];
    snprintf(vars, sizeof vars, "{\"id\": \"%" PRId64 "\"}", id);
    const char *get = "query($id: ID!) { webhook(id: $id) { id } }";
    const char *del = "mutation($id: ID!) { deleteWebhook(id: $id) }";

    /* No credential, or a wrong one: 401, by POST and by GET. */
    for (int g = 0; g < 2; g++) {
        struct hk_resp r;
        json_decref(gq_run(&srv, &(struct gq_call){.get = g, .query = get, .variables = vars}, &r));
        json_decref(hk_assert_problem(&r, 401));
        hk_resp_free(&r);
        json_decref(gq_run(&srv, &(struct gq_call){.get = g, .query = get, .variables = vars,
                                                  .auth = "hkd_AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA"}, &r));
        cr_assert_eq(r.status, 401, "%s", r.body);
        hk_resp_free(&r);
    }
    /* read: queries, by POST and GET. */
    json_t *j = gq_ok(&srv, &(struct gq_call){.query = get, .variables = vars, .auth = rd});
    cr_assert_eq(id_of(at(j, "data.webhook.id")), id);
    json_decref(j);
    j = gq_ok(&srv, &(struct gq_call){.get = true, .query = get, .variables = vars, .auth = rd});
    cr_assert_eq(id_of(at(j, "data.webhook.id")), id);
    json_decref(j);
    /* read cannot delete: refused before anything runs. */
    struct hk_resp r;
    json_decref(gq_run(&srv, &(struct gq_call){.query = del, .variables = vars, .auth = rd}, &r));
    cr_assert_eq(r.status, 403, "%s", r.body);
    hk_resp_free(&r);
    j = gq_ok(&srv, &(struct gq_call){.query = get, .variables = vars, .auth = rd});
    cr_assert_eq(id_of(at(j, "data.webhook.id")), id, "still there");
    json_decref(j);
    /* read + delete can. */
    j = gq_ok(&srv, &(struct gq_call){.query = del, .variables = vars, .auth = rdl});
    cr_assert(json_is_true(at(j, "data.deleteWebhook")));
    json_decref(j);
    j = gq_ok(&srv, &(struct gq_call){.query = get, .variables = vars, .auth = rd});
    cr_assert(json_is_null(at(j, "data.webhook")));
    json_decref(j);
    /* The schema is published to anyone (codegen needs no token). */
    hk_get(&srv, "/graphql/schema.graphql", &r);
    cr_assert_eq(r.status, 200);
    cr_assert_not_null(strstr(r.body, "type Query"), "%s", r.body);
    cr_assert_not_null(strstr(r.body, "type Mutation {"), "%s", r.body);
    cr_assert_not_null(strstr(r.body, "deleteWebhook("), "%s", r.body);
    hk_resp_free(&r);
    hk_finish(&srv);
}

Test(graphql, introspection_on_by_default_and_off_when_told)
{
    const char *schema_q = "{ __schema { queryType { name } mutationType { name } types { name } } }";
    const char *type_q = "{ __type(name: \"Webhook\") { name fields { name } } }";
    hk_server_start(&srv, NULL);
    json_t *j = query(&srv, schema_q, NULL);
    cr_assert_str_eq(at_str(j, "data.__schema.queryType.name"), "Query");
    cr_assert_str_eq(at_str(j, "data.__schema.mutationType.name"), "Mutation");
    bool webhook = false;
    json_t *types = at(j, "data.__schema.types");
    for (size_t i = 0; i < json_array_size(types); i++)
        webhook |= strcmp(at_str(json_array_get(types, i), "name"), "Webhook") == 0;
    cr_assert(webhook, "no Webhook among the types");
    json_decref(j);
    j = query(&srv, type_q, NULL);
    cr_assert_str_eq(at_str(j, "data.__type.name"), "Webhook");
    json_decref(j);
    hk_server_stop_clean(&srv);
    hk_server_cleanup(&srv);

    hk_server_start(&srv, HDRS("HOOKD_GRAPHQL_INTROSPECTION=off"));
    j = gq_err(&srv, &(struct gq_call){.query = schema_q}, 200);
    cr_assert_null(at(j, "data"), "refused before it runs");
    json_decref(j);
    j = gq_err(&srv, &(struct gq_call){.query = type_q, .accept = GQL_MEDIA}, 400);
    json_decref(j);
    /* __typename is not introspection of the schema. */
    j = query(&srv, "{ __typename system { __typename store } }", NULL);
    cr_assert_str_eq(at_str(j, "data.__typename"), "Query");
    cr_assert_str_eq(at_str(j, "data.system.__typename"), "SystemInfo");
    json_decref(j);
    hk_finish(&srv);
}

/* ---- limits and hostile input ---------------------------------------------------- */

/* A GraphQL error, quickly. */
static json_t *refused_fast(const struct hk_server *s, const char *q, const char *what)
{
    int64_t t0 = hk_now_ms();
    hk_context("%s", what);
    json_t *j = gq_err(s, &(struct gq_call){.query = q}, 200);
    int64_t ms = hk_now_ms() - t0;
    cr_assert_lt(ms, 3000, "%s took %" PRId64 " ms", what, ms);
    hk_context("%s", "");
    return j;
}

Test(graphql, limits_are_errors_never_hangs)
{
    hk_server_start(&srv, NULL);
    hk_create(&srv, "s", "e", NULL);
    /* A 100 KB document. */
    size_t n = 100 * 1024, len = 1;
    char *big = malloc(n + 16);
    cr_assert_not_null(big);
    big[0] = '{';
    while (len < n) {
        memcpy(big + len, " __typename", 11);
        len += 11;
    }
    memcpy(big + len, " }", 3);
    json_t *j = refused_fast(&srv, big, "a 100 KB document");
    cr_assert_null(at(j, "data"));
    json_decref(j);
    free(big);

    /* Depth 50 of selections. */
    char deep[1024] = "{ webhooks { edges { node { id";
    for (int i = 0; i < 46; i++)
        strcat(deep, " a {");
    strcat(deep, " b");
    for (int i = 0; i < 46 + 4; i++)
        strcat(deep, " }");
    j = refused_fast(&srv, deep, "depth 50");
    cr_assert_null(at(j, "data"));
    json_decref(j);
    /* Introspection nests as deep as a client asks: graphql-js's rule. */
    j = refused_fast(&srv, "{ __schema { types { fields { type { fields { type { fields { name } } } } } } } }",
                     "introspection depth");
    assert_request_error(j, "Maximum introspection depth exceeded", 1, 3);
    json_decref(j);
    /* As deep as the size limit allows: refused, and no stack overflows. */
    char *nest = malloc(16384);
    cr_assert_not_null(nest);
    strcpy(nest, "{ webhooks(source: ");
    size_t at0 = strlen(nest);
    for (size_t i = 0; i < 8000; i++) {
        nest[at0 + i] = '[';
        nest[at0 + 8000 + i] = ']';
    }
    strcpy(nest + at0 + 16000, ") { edges { cursor } } }");
    j = refused_fast(&srv, nest, "lists 8000 deep");
    json_decref(j);
    free(nest);

    /* Depth 50 in a list value. */
    char lists[512] = "{ webhooks(source: ";
    for (int i = 0; i < 50; i++)
        strcat(lists, "[");
    strcat(lists, "\"s\"");
    for (int i = 0; i < 50; i++)
        strcat(lists, "]");
    strcat(lists, ") { edges { cursor } } }");
    j = refused_fast(&srv, lists, "lists 50 deep");
    json_decref(j);

    /* Many fields: the cost. */
    char *wide = malloc(16 * 1024);
    cr_assert_not_null(wide);
    strcpy(wide, "{");
    for (int i = 0; i < 600; i++)
        sprintf(wide + strlen(wide), " a%d: __typename", i);
    strcat(wide, " }");
    cr_assert_lt(strlen(wide), 16384, "under the size limit: the cost refuses it");
    j = refused_fast(&srv, wide, "600 fields");
    json_decref(j);
    free(wide);

    /* Fragments that spread each other out exponentially (the
     * "billion laughs" of GraphQL) are refused, not expanded. */
    char laughs[2048] = "{ ...F0 }";
    for (int i = 0; i < 30; i++)
        sprintf(laughs + strlen(laughs), " fragment F%d on Query { a: __typename ...F%d ...F%d }", i, i + 1, i + 1);
    strcat(laughs, " fragment F30 on Query { __typename }");
    j = refused_fast(&srv, laughs, "fragments doubling 30 times");
    json_decref(j);

    /* first: 5000 is an error for the field; webhooks is non-null, so data
     * is null. */
    j = refused_fast(&srv, "{ webhooks(first: 5000) { edges { cursor } } }", "first: 5000");
    cr_assert(json_is_null(at(j, "data")), "a non-null field failed: data is null");
    cr_assert_str_eq(at_str(j, "errors.0.path.0"), "webhooks");
    cr_assert_not_null(strstr(at_str(j, "errors.0.message"), "first"), "%s", at_str(j, "errors.0.message"));
    json_decref(j);
    j = refused_fast(&srv, "{ webhooks(first: -1) { edges { cursor } } }", "first: -1");
    json_decref(j);
    /* first: 1000 is allowed. */
    j = query(&srv, "{ webhooks(first: 1000) { edges { cursor } } }", NULL);
    cr_assert_eq(json_array_size(at(j, "data.webhooks.edges")), 1);
    json_decref(j);
    hk_finish(&srv);
}

static const char *cursor_b64(const char *raw, char out[64])
{
    static const char tbl[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
    size_t n = strlen(raw), k = 0;
    for (size_t i = 0; i < n; i += 3) {
        unsigned v = (unsigned char)raw[i] << 16;
        if (i + 1 < n)
            v |= (unsigned char)raw[i + 1] << 8;
        if (i + 2 < n)
            v |= (unsigned char)raw[i + 2];
        out[k++] = tbl[v >> 18 & 63];
        out[k++] = tbl[v >> 12 & 63];
        if (i + 1 < n)
            out[k++] = tbl[v >> 6 & 63];
        if (i + 2 < n)
            out[k++] = tbl[v & 63];
    }
    out[k] = '\0';
    return out;
}

Test(graphql, garbage_cursors_are_errors)
{
    hk_server_start(&srv, NULL);
    int64_t id = hk_create(&srv, "s", "e", NULL);
    hk_create(&srv, "s", "e", NULL);
    char b[5][64];
    const char *bad[] = {
        "", "!!!", "not a cursor", "djE6", cursor_b64("v1:", b[0]), cursor_b64("v1:abc", b[1]),
        cursor_b64("v2:5", b[2]), cursor_b64("v1:-5", b[3]), cursor_b64("v1:99999999999999999999999", b[4]),
        "dj\xc3\xa9", "AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA",
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        hk_context("after: \"%s\"", bad[i]);
        json_t *v = json_pack("{s:s}", "after", bad[i]);
        char *vars = json_dumps(v, JSON_COMPACT);
        json_decref(v);
        json_t *j = gq_err(&srv, &(struct gq_call){.query = PAGE_Q, .variables = vars}, 200);
        free(vars);
        cr_assert(json_is_null(at(j, "data")), "webhooks is non-null: data is null");
        cr_assert_str_eq(at_str(j, "errors.0.path.0"), "webhooks");
        json_decref(j);
    }
    hk_context("%s", "");
    /* A well-formed cursor for a row gone since still pages on. */
    char vars[128], c[64];
    char raw[32];
    snprintf(raw, sizeof raw, "v1:%" PRId64, id + 1);
    snprintf(vars, sizeof vars, "{\"after\": \"%s\"}", cursor_b64(raw, c));
    json_t *j = query(&srv, PAGE_Q, vars);
    cr_assert_eq(json_array_size(at(j, "data.webhooks.edges")), 1);
    cr_assert_eq(id_of(at(j, "data.webhooks.edges.0.node.id")), id);
    json_decref(j);
    hk_finish(&srv);
}

/* ---- paging at scale ----------------------------------------------------------- */

#define BULK_N 100000
#define BULK_T0 INT64_C(1750000000000000)   /* 2025-06-15T15:06:40Z */

/* BULK_N rows behind hookd's back in one statement: row i (1..BULK_N) has
 * source "p<i % 7>", event type "bulk", payload "<i>", received at
 * BULK_T0 + 10 i microseconds. */
static void bulk_insert(const struct hk_server *s)
{
    char lite[512], pg[512];
    snprintf(lite, sizeof lite,
             "WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < %d)"
             " INSERT INTO webhooks(source, event_type, payload, received_us)"
             " SELECT 'p' || (i %% 7), 'bulk', i, %" PRId64 " + i * 10 FROM n",
             BULK_N, BULK_T0);
    snprintf(pg, sizeof pg,
             "INSERT INTO webhooks(source, event_type, payload, received_at)"
             " SELECT 'p' || (i %% 7), 'bulk', i::text,"
             " timestamptz 'epoch' + (%" PRId64 " + i * 10) * interval '1 microsecond'"
             " FROM generate_series(1, %d) AS i ORDER BY i",
             BULK_T0, BULK_N);
    store_exec(s, lite, pg);
}

/* Page through `q` (variables `base` plus "after"), `first` rows a page:
 * every id once, strictly newest first, endCursor the last edge's cursor,
 * hasNextPage until the last page. Marks each row's payload number in
 * `seen` (which must be 0 there). Returns the rows. */
static long page_all(const struct hk_server *s, CURL *h, const char *q, const char *base, long first, uint8_t *seen,
                     long *pages)
{
    long rows = 0;
    int64_t last_id = INT64_MAX;
    char after[128] = "";
    *pages = 0;
    for (;;) {
        cr_assert_lt(*pages, BULK_N / first + 3, "paging does not end");
        char vars[512];
        snprintf(vars, sizeof vars, "{%s%s\"n\": %ld%s%s%s}", base, *base ? ", " : "", first,
                 after[0] ? ", \"after\": \"" : "", after, after[0] ? "\"" : "");
        json_t *j = gq_ok(s, &(struct gq_call){.query = q, .variables = vars, .h = h});
        (*pages)++;
        json_t *edges = at(j, "data.webhooks.edges");
        size_t n = json_array_size(edges);
        bool next = json_is_true(at(j, "data.webhooks.pageInfo.hasNextPage"));
        cr_assert(n == (size_t)first || !next, "page %ld: %zu rows and more to come", *pages, n);
        for (size_t i = 0; i < n; i++) {
            json_t *e = json_array_get(edges, i);
            int64_t id = id_of(at(e, "node.id"));
            cr_assert_lt(id, last_id, "page %ld row %zu: id %" PRId64 " after %" PRId64, *pages, i, id, last_id);
            last_id = id;
            long k = strtol(at_str(e, "node.payload"), NULL, 10);
            cr_assert(k >= 1 && k <= BULK_N, "payload %s", at_str(e, "node.payload"));
            cr_assert_eq(seen[k], 0, "row %ld came twice", k);
            seen[k] = 1;
            rows++;
        }
        if (n > 0)
            cr_assert_str_eq(at_str(j, "data.webhooks.pageInfo.endCursor"),
                             at_str(json_array_get(edges, n - 1), "cursor"));
        else
            cr_assert(json_is_null(at(j, "data.webhooks.pageInfo.endCursor")));
        if (!next) {
            json_decref(j);
            return rows;
        }
        snprintf(after, sizeof after, "%s", at_str(j, "data.webhooks.pageInfo.endCursor"));
        json_decref(j);
    }
}

Test(graphql, paging_over_100000_rows_returns_each_row_once)
{
    hk_server_start(&srv, NULL);
    bulk_insert(&srv);
    uint8_t *seen = calloc(BULK_N + 1, 1);
    cr_assert_not_null(seen);
    CURL *h = hk_curl_new();
    const char *q = "query($n: Int, $after: String) { webhooks(first: $n, after: $after) {"
                    " edges { cursor node { id payload } } pageInfo { hasNextPage endCursor } } }";
    long pages;
    int64_t t0 = hk_now_ms();
    long rows = page_all(&srv, h, q, "", 1000, seen, &pages);
    cr_assert_eq(rows, BULK_N);
    cr_assert_eq(pages, BULK_N / 1000, "an exact multiple ends without an empty page");
    for (long k = 1; k <= BULK_N; k++)
        cr_assert_eq(seen[k], 1, "row %ld never came", k);
    int64_t ms = hk_now_ms() - t0;

    /* A source and a time window, 333 a page: the rows with i % 7 == 3 and
     * 20000 < i < 80000, each once. */
    memset(seen, 0, BULK_N + 1);
    char a[40], b[40], base[160];
    rfc3339(BULK_T0 + 20000 * 10, a);
    rfc3339(BULK_T0 + 80000 * 10, b);
    snprintf(base, sizeof base, "\"a\": \"%s\", \"b\": \"%s\"", a, b);
    const char *fq = "query($n: Int, $after: String, $a: DateTime, $b: DateTime) {"
                     " webhooks(first: $n, after: $after, source: \"p3\", receivedAfter: $a, receivedBefore: $b) {"
                     " edges { cursor node { id payload } } pageInfo { hasNextPage endCursor } } }";
    rows = page_all(&srv, h, fq, base, 333, seen, &pages);
    long want = 0;
    for (long k = 20001; k < 80000; k++) {
        bool in = k % 7 == 3;
        want += in;
        cr_assert_eq(seen[k], in, "row %ld", k);
    }
    cr_assert_eq(rows, want);
    cr_assert_eq(pages, (want + 332) / 333);
    curl_easy_cleanup(h);
    free(seen);

    /* The counts agree. */
    json_t *j = query(&srv, "{ sources { source count } }", NULL);
    long total = 0;
    for (size_t i = 0; i < json_array_size(at(j, "data.sources")); i++)
        total += (long)json_integer_value(at(json_array_get(at(j, "data.sources"), i), "count"));
    cr_assert_eq(total, BULK_N);
    cr_assert_eq(json_array_size(at(j, "data.sources")), 7);
    json_decref(j);
    fprintf(stderr, "graphql: %d rows in %ld pages of 1000 in %" PRId64 " ms\n", BULK_N, (long)(BULK_N / 1000), ms);
    hk_finish(&srv);
}

/* A loop keeps documents that validated: repeats, evictions and a
 * document in use by another request must all answer as the first time. */
Test(graphql, repeated_documents_answer_alike)
{
    hk_server_start(&srv, (const char *const[]){"HOOKD_THREADS=1", NULL});
    for (int i = 0; i < 3; i++) {
        hk_post_json(&srv, "/api/webhooks", "{\"source\":\"gh\",\"eventType\":\"push\",\"payload\":\"x\"}", &(struct hk_resp){0});
    }
    const char *q = "{ __typename webhooks(first: 2) { edges { node { source } } pageInfo { hasNextPage } } }";
    for (int round = 0; round < 3; round++) {
        hk_context("round %d", round);
        json_t *j = query(&srv, q, NULL);
        cr_assert_str_eq(at_str(j, "data.__typename"), "Query");
        cr_assert_eq(json_array_size(at(j, "data.webhooks.edges")), 2);
        cr_assert(json_is_true(at(j, "data.webhooks.pageInfo.hasNextPage")));
        json_decref(j);
        /* 20 other documents in between: the first is evicted and parsed again. */
        for (int k = 0; k < 20 && round == 1; k++) {
            char other[96];
            snprintf(other, sizeof other, "{ a%d: __typename }", k);
            json_t *o = query(&srv, other, NULL);
            char key[16];
            snprintf(key, sizeof key, "data.a%d", k);
            cr_assert_str_eq(at_str(o, key), "Query");
            json_decref(o);
        }
    }
    hk_finish(&srv);
}

/* Forwarding's state (docs/forwarding.md) as `delivery`, and the filter.
 * The sink is a port nothing listens on: each row is tried, fails to
 * connect and waits for its retry, pending with its error. */
Test(graphql, delivery_shows_forwarding_and_filters)
{
    hk_server_start(&srv, NULL);
    hk_create(&srv, "s", "e", NULL);   /* stored while forwarding is off */
    char url[96];
    snprintf(url, sizeof url, "HOOKD_FORWARD_URL=http://127.0.0.1:%d/nowhere", srv.port);
    hk_server_stop_clean(&srv);
    /* The same database, now forwarding (to the port it had: nothing there). */
    size_t n = 0;
    while (srv.env[n])
        n++;
    cr_assert_lt(n + 2, (size_t)HK_MAX_ENV);
    srv.env[n] = strdup(url);
    srv.env[n + 1] = strdup("HOOKD_FORWARD_BACKOFF=1h");
    hk_server_restart(&srv);
    struct hk_resp r;
    hk_post_json(&srv, "/api/webhooks", "{\"source\":\"f\",\"eventType\":\"e\",\"payload\":null}", &r);
    json_t *j = hk_assert_json(&r, 201);
    int64_t fwd = json_integer_value(json_object_get(j, "id"));
    json_decref(j);
    hk_resp_free(&r);
    char q[256];
    snprintf(q, sizeof q, "{ webhook(id: \"%" PRId64 "\") { delivery { state attempts lastStatus lastError "
                          "nextAttemptAt lastAttemptAt } } }", fwd);
    for (int tries = 0;; tries++) {
        j = query(&srv, q, NULL);
        if (json_integer_value(at(j, "data.webhook.delivery.attempts")) >= 1)
            break;
        cr_assert_lt(tries, 200, "no attempt was made");
        json_decref(j);
        usleep(25 * 1000);
    }
    cr_expect_str_eq(at_str(j, "data.webhook.delivery.state"), "PENDING");
    cr_expect(json_is_null(at(j, "data.webhook.delivery.lastStatus")));
    cr_expect(json_is_string(at(j, "data.webhook.delivery.lastError")));
    cr_expect(hk_parse_rfc3339(at_str(j, "data.webhook.delivery.nextAttemptAt")) > 0);
    cr_expect(hk_parse_rfc3339(at_str(j, "data.webhook.delivery.lastAttemptAt")) > 0);
    json_decref(j);
    /* The same as REST. */
    char path[64];
    snprintf(path, sizeof path, "/api/webhooks/%" PRId64, fwd);
    hk_get(&srv, path, &r);
    j = hk_assert_json(&r, 200);
    cr_expect_str_eq(hk_jstr(json_object_get(j, "delivery"), "state"), "pending");
    json_decref(j);
    hk_resp_free(&r);
    /* A row stored before forwarding was on has none; the filter. */
    j = query(&srv, "{ p: webhooks(delivery: PENDING) { edges { node { id } } }"
                    " n: webhooks(delivery: NONE) { edges { node { id source delivery { state } } } }"
                    " f: webhooks(delivery: FAILED) { edges { node { id } } } }", NULL);
    cr_expect_eq(json_array_size(at(j, "data.p.edges")), 1);
    cr_expect_eq(id_of(at(j, "data.p.edges.0.node.id")), fwd);
    cr_expect_eq(json_array_size(at(j, "data.n.edges")), 1);
    cr_expect(json_is_null(at(j, "data.n.edges.0.node.delivery")));
    cr_expect_eq(json_array_size(at(j, "data.f.edges")), 0);
    json_decref(j);
    j = gq_err(&srv, &(struct gq_call){.query = "{ webhooks(delivery: LOST) { edges { cursor } } }"}, 200);
    json_decref(j);
    hk_finish(&srv);
}
