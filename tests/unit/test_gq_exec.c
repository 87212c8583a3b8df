/* SPDX-License-Identifier: MIT
 * The GraphQL schema tables, SDL printer and executor. The SDL must be
 * what graphql-js's printSchema prints (gq_schema.graphql); every case of
 * gq_exec_cases.json (written by gq_exec_cases.js with graphql-js 16)
 * must give graphql-js's response byte for byte, and the same root calls
 * with the same coerced arguments, with a fake resolver that answers at
 * once or later in any order. Then what graphql-js cannot say: mutations
 * one at a time, query roots all at once, introspection off, GET, limits,
 * an arena that runs out, and a schema of the test's own (recursion,
 * interfaces, unions, enums, input objects). */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "graphql/graphql.h"

/* ---- files under tests/unit ---------------------------------------------------- */

static char *slurp(const char *name, size_t *len)
{
    const char *dir = getenv("HOOKD_GQ_DATA");
    cr_assert(dir, "HOOKD_GQ_DATA is not set (meson test sets it)");
    char path[4096];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    FILE *f = fopen(path, "rb");
    cr_assert(f, "cannot open %s", path);
    struct hk_buf b = HK_BUF_INIT;
    char chunk[65536];
    size_t n;
    while ((n = fread(chunk, 1, sizeof chunk, f)) > 0)
        hk_buf_put(&b, chunk, n);
    fclose(f);
    hk_buf_putc(&b, '\0');
    if (len)
        *len = b.len - 1;
    return b.p;
}

static json_t *load_cases(void)
{
    char *text = slurp("gq_exec_cases.json", NULL);
    json_error_t e;
    json_t *cases = json_loads(text, 0, &e);
    free(text);
    cr_assert(json_is_array(cases), "gq_exec_cases.json: %s (line %d)", e.text, e.line);
    return cases;
}

/* ---- a fake resolver ------------------------------------------------------------ */

struct fake {
    json_t *root;              /* field name -> value */
    json_t *errors;            /* response key -> message */
    json_t *calls;             /* [{key, field, args}] in the order they were issued */
    bool deferred;             /* queue the calls; the test answers them */
    struct gq_root_call *queue[256];
    unsigned nq;
    unsigned max_queued;
};

static void answer(struct fake *f, struct gq_root_call *call)
{
    json_t *err = json_object_get(f->errors, call->response_key);
    if (err) {
        gq_root_done(call, NULL, json_string_value(err));
        return;
    }
    json_t *v = json_object_get(f->root, call->field->name);
    gq_root_done(call, v ? json_incref(v) : NULL, NULL);
}

static void fake_resolve(void *ctx, struct gq_root_call *call)
{
    struct fake *f = ctx;
    cr_assert(json_is_object(call->args));
    json_array_append_new(f->calls, json_pack("{s:s,s:s,s:O}", "key", call->response_key, "field", call->field->name,
                                              "args", call->args));
    if (f->deferred) {
        cr_assert(f->nq < 256);
        f->queue[f->nq++] = call;
        if (f->nq > f->max_queued)
            f->max_queued = f->nq;
        return;
    }
    answer(f, call);
}

struct done_rec {
    int n;
    struct gq_exec *x;
};

static void on_done(void *ud, struct gq_exec *x)
{
    struct done_rec *d = ud;
    d->n++;
    d->x = x;
}

struct opts {
    json_t *vars;
    const char *opname;
    json_t *root, *errors;
    bool deferred, reverse;
    bool no_introspection, no_mutation;
    const struct gq_schema *schema;
    size_t exec_cap;           /* the executor's own arena, capped; 0: the parse's */
};

struct result {
    char *out;                 /* the response, NUL-terminated (caller frees) */
    json_t *calls;
    bool started;              /* gq_exec_start returned an execution */
    unsigned max_queued;
};

static const struct gq_limits big_limits = {1u << 20, 1000000, 256, 1000000, 1000};

static struct result run(const char *query, const struct opts *o)
{
    struct gq_arena a, xa;
    gq_arena_init(&a, 64u << 20);
    gq_arena_init(&xa, o->exec_cap);
    struct gq_document *doc = NULL;
    struct gq_error perr = {0};
    int rc = gq_parse(&a, query, strlen(query), &big_limits, &doc, &perr);
    cr_assert_eq(rc, 0, "parse failed: %s (%u:%u) in %s", perr.message ? perr.message : "?", perr.locs[0].line,
                 perr.locs[0].column, query);
    struct fake f = {.root = o->root ? o->root : json_object(), .errors = o->errors ? o->errors : json_object(),
                     .calls = json_array(), .deferred = o->deferred};
    if (!o->root)
        json_object_set_new(f.root, "system", json_pack("{s:s,s:s,s:f,s:i}", "version", "0.1.0", "store", "sqlite",
                                                         "uptimeMs", 1.5, "eventLoops", 4));
    struct hk_buf out = HK_BUF_INIT;
    struct done_rec d = {0};
    struct gq_exec_params p = {
        .schema = o->schema ? o->schema : hk_gq_schema(),
        .doc = doc,
        .operation_name = o->opname,
        .variables = o->vars,
        .introspection = !o->no_introspection,
        .allow_mutation = !o->no_mutation,
        .resolve = fake_resolve,
        .resolve_ctx = &f,
        .done = on_done,
        .done_ud = &d,
        .out = &out,
    };
    struct gq_exec *x = gq_exec_start(o->exec_cap ? &xa : &a, &p);
    if (x)
        cr_assert_eq(gq_exec_operation(x), gq_select_operation(doc, o->opname) ?
                     gq_select_operation(doc, o->opname)->op : gq_exec_operation(x));
    while (f.nq > 0) {
        struct gq_root_call *c;
        if (o->reverse) {
            c = f.queue[--f.nq];
        } else {
            c = f.queue[0];
            memmove(f.queue, f.queue + 1, --f.nq * sizeof f.queue[0]);
        }
        cr_assert_eq(d.n, 0, "done before every root field was answered");
        answer(&f, c);
    }
    if (x) {
        cr_assert_eq(d.n, 1, "done called %d times", d.n);
        cr_assert_eq(d.x, x);
        gq_exec_free(x);
        gq_exec_free(x);   /* a second free is harmless */
    } else {
        cr_assert_eq(d.n, 0, "done called for an execution that never started");
    }
    hk_buf_putc(&out, '\0');
    if (!o->root)
        json_decref(f.root);
    if (!o->errors)
        json_decref(f.errors);
    gq_arena_free(&a);
    gq_arena_free(&xa);
    return (struct result){.out = out.p, .calls = f.calls, .started = x != NULL, .max_queued = f.max_queued};
}

static void free_result(struct result *r)
{
    free(r->out);
    json_decref(r->calls);
}

/* The arguments of root call i, as compact JSON with sorted keys. */
static bool args_are(const struct result *r, size_t i, const char *want)
{
    char *got = json_dumps(json_object_get(json_array_get(r->calls, i), "args"), JSON_COMPACT | JSON_SORT_KEYS);
    bool same = got && strcmp(got, want) == 0;
    if (!same)
        cr_log_error("call %zu: arguments %s, want %s", i, got ? got : "(none)", want);
    free(got);
    return same;
}

/* ---- the SDL --------------------------------------------------------------------- */

Test(gq_schema, sdl_is_graphql_js_print_schema)
{
    size_t n;
    char *want = slurp("gq_schema.graphql", &n);
    struct hk_buf b = HK_BUF_INIT;
    gq_schema_print(hk_gq_schema(), &b);
    hk_buf_putc(&b, '\0');
    cr_expect_str_eq(b.p, want);
    cr_expect_eq(b.len - 1, n);
    hk_buf_free(&b);
    free(want);
}

Test(gq_schema, lookups_and_type_references)
{
    const struct gq_schema *s = hk_gq_schema();
    cr_assert_eq(s, hk_gq_schema());
    cr_expect_eq(s->ntypes, 24);
    cr_expect_eq(s->ndirectives, 5);
    cr_expect_str_eq(s->query_type, "Query");
    cr_expect_str_eq(s->mutation_type, "Mutation");

    const struct gq_type_def *w = gq_schema_type(s, "Webhook", 7);
    cr_assert(w);
    cr_expect_eq(w->kind, GQ_OBJECT);
    cr_expect_eq(w->nfields, 12);
    cr_expect_null(gq_schema_type(s, "Webhoo", 6));
    cr_expect_null(gq_schema_type(s, "Webhooks", 8));
    cr_expect_eq(gq_schema_type(s, "Webhooks", 7), w);   /* by length, not NUL */

    const struct gq_field_def *f = gq_type_field(w, "deliveryId", 10);
    cr_assert(f);
    cr_expect_eq(f->tref->kind, GQ_REF_NAMED);
    cr_expect_str_eq(f->tref->named->name, "String");
    cr_expect_null(gq_type_field(w, "nope", 4));
    cr_expect_not_null(gq_type_field(w, "ingress", 7));
    cr_expect_not_null(gq_type_field(w, "bodySha256", 10));
    cr_expect_not_null(gq_type_field(w, "clientAddress", 13));

    const struct gq_type_def *q = gq_schema_type(s, "Query", 5);
    const struct gq_field_def *src = gq_type_field(q, "sources", 7);
    const struct gq_tref *t = src->tref;
    cr_expect_eq(t->kind, GQ_REF_NON_NULL);
    cr_expect_eq(t->of->kind, GQ_REF_LIST);
    cr_expect_eq(t->of->of->kind, GQ_REF_NON_NULL);
    cr_expect_eq(t->of->of->of->kind, GQ_REF_NAMED);
    cr_expect_eq(t->of->of->of->named, gq_schema_type(s, "SourceStats", 11));
    struct hk_buf b = HK_BUF_INIT;
    gq_tref_print(t, &b);
    hk_buf_putc(&b, '\0');
    cr_expect_str_eq(b.p, "[SourceStats!]!");
    hk_buf_free(&b);

    const struct gq_field_def *ws = gq_type_field(q, "webhooks", 8);
    cr_assert_eq(ws->nargs, 8);
    cr_expect_str_eq(ws->args[0].name, "first");
    cr_expect_str_eq(ws->args[0].default_value, "20");
    cr_expect_str_eq(ws->args[4].name, "deliveryId");
    cr_expect_str_eq(ws->args[6].tref->named->name, "DateTime");

    const struct gq_directive_def *d = gq_schema_directive(s, "skip", 4);
    cr_assert(d);
    cr_expect_eq(d->locations, GQ_DL_FIELD | GQ_DL_FRAGMENT_SPREAD | GQ_DL_INLINE_FRAGMENT);
    cr_expect_eq(d->args[0].tref->kind, GQ_REF_NON_NULL);
    cr_expect(gq_schema_directive(s, "deprecated", 10)->locations & GQ_DL_DIRECTIVE_DEFINITION);
    cr_expect_null(gq_schema_directive(s, "skipp", 5));
    cr_expect_str_eq(gq_schema_type(s, "DateTime", 8)->specified_by, "https://scalars.graphql.org/andimarek/date-time");
}

Test(gq_schema, string_printers)
{
    struct hk_buf b = HK_BUF_INIT;
    gq_print_string(&b, "a\"\\\n\x01\x7f\xc2\x85\xc3\xa9", 10);
    hk_buf_putc(&b, '\0');
    cr_expect_str_eq(b.p, "\"a\\\"\\\\\\n\\u0001\\u007F\\u0085\xc3\xa9\"");
    b.len = 0;
    gq_print_block_string(&b, "one\ntwo", 7, "  ");
    hk_buf_putc(&b, '\0');
    cr_expect_str_eq(b.p, "\"\"\"\n  one\n  two\n  \"\"\"");
    b.len = 0;
    gq_print_block_string(&b, "say \"\"\"hi\"\"\"", 12, "");
    hk_buf_putc(&b, '\0');
    cr_expect_str_eq(b.p, "\"\"\"\nsay \\\"\"\"hi\\\"\"\"\n\"\"\"");
    b.len = 0;
    gq_print_block_string(&b, " lead", 5, "");
    hk_buf_putc(&b, '\0');
    cr_expect_str_eq(b.p, "\"\"\" lead\"\"\"");
    hk_buf_free(&b);
}

/* ---- graphql-js's answers ------------------------------------------------------------- */

static void check_cases(bool deferred, bool reverse)
{
    json_t *cases = load_cases();
    cr_assert_gt(json_array_size(cases), 90);
    size_t i;
    json_t *c;
    json_array_foreach(cases, i, c) {
        const char *name = json_string_value(json_object_get(c, "name"));
        const char *query = json_string_value(json_object_get(c, "query"));
        struct opts o = {
            .vars = json_object_get(c, "variables"),
            .opname = json_string_value(json_object_get(c, "operationName")),
            .root = json_object_get(c, "root"),
            .errors = json_object_get(c, "errors"),
            .deferred = deferred,
            .reverse = reverse,
        };
        struct result r = run(query, &o);
        cr_expect_str_eq(r.out, json_string_value(json_object_get(c, "expect")), "case %s", name);
        if (!json_equal(r.calls, json_object_get(c, "calls"))) {
            char *got = json_dumps(r.calls, JSON_COMPACT);
            cr_expect_fail("case %s: root calls differ: %s", name, got);
            free(got);
        }
        free_result(&r);
    }
    json_decref(cases);
}

Test(gq_exec, cases_answered_at_once)
{
    check_cases(false, false);
}

Test(gq_exec, cases_answered_later_in_order)
{
    check_cases(true, false);
}

Test(gq_exec, cases_answered_later_newest_first)
{
    check_cases(true, true);
}

/* The full introspection query graphql-js's getIntrospectionQuery()
 * writes (GraphiQL's), checked above byte for byte; here its shape, so a
 * failure there says what is wrong. */
Test(gq_exec, introspection_shape)
{
    json_t *cases = load_cases();
    size_t i;
    json_t *c;
    bool seen = false;
    json_array_foreach(cases, i, c) {
        if (strcmp(json_string_value(json_object_get(c, "name")), "introspection_full") != 0)
            continue;
        seen = true;
        struct opts o = {.root = json_object_get(c, "root")};
        struct result r = run(json_string_value(json_object_get(c, "query")), &o);
        json_t *got = json_loads(r.out, 0, NULL);
        cr_assert(got, "not JSON: %.200s", r.out);
        json_t *types = json_object_get(json_object_get(json_object_get(got, "data"), "__schema"), "types");
        cr_expect_eq(json_array_size(types), 24);
        json_t *dirs = json_object_get(json_object_get(json_object_get(got, "data"), "__schema"), "directives");
        cr_expect_eq(json_array_size(dirs), 5);
        cr_expect_str_eq(json_string_value(json_object_get(json_array_get(dirs, 2), "name")), "deprecated");
        json_t *locs = json_object_get(json_array_get(dirs, 2), "locations");
        cr_expect_str_eq(json_string_value(json_array_get(locs, 2)), "INPUT_FIELD_DEFINITION");
        cr_expect_str_eq(json_string_value(json_array_get(locs, 3)), "ENUM_VALUE");
        json_decref(got);
        free_result(&r);
    }
    cr_expect(seen);
    json_decref(cases);
}

/* ---- ordering -------------------------------------------------------------------------- */

Test(gq_exec, query_roots_are_issued_at_once)
{
    struct opts o = {.deferred = true};
    struct result r = run("{ a: system { version } b: webhook(id: \"9\") { id } "
                          "c: webhook(id: \"8\") { id } __typename }", &o);
    cr_expect_eq(r.max_queued, 3, "root calls in flight together: %u", r.max_queued);
    cr_expect_eq(json_array_size(r.calls), 3);
    cr_expect_str_eq(r.out, "{\"data\":{\"a\":{\"version\":\"0.1.0\"},\"b\":null,\"c\":null,\"__typename\":\"Q"
                            "uery\"}}");
    free_result(&r);
}

Test(gq_exec, mutation_roots_one_after_the_other)
{
    json_t *root = json_pack("{s:b}", "deleteWebhook", 1);
    struct opts o = {.deferred = true, .root = root};
    struct result r = run("mutation { a: deleteWebhook(id: \"1\") b: deleteWebhook(id: 2) "
                          "c: deleteWebhook(id: \"3\") }", &o);
    cr_expect_eq(r.max_queued, 1, "mutation calls in flight together: %u", r.max_queued);
    cr_assert_eq(json_array_size(r.calls), 3);
    for (int i = 0; i < 3; i++) {
        char key[2] = {(char)('a' + i), 0}, id[2] = {(char)('1' + i), 0};
        json_t *call = json_array_get(r.calls, (size_t)i);
        cr_expect_str_eq(json_string_value(json_object_get(call, "key")), key);
        cr_expect_str_eq(json_string_value(json_object_get(json_object_get(call, "args"), "id")), id);
    }
    cr_expect_str_eq(r.out, "{\"data\":{\"a\":true,\"b\":true,\"c\":true}}");
    free_result(&r);

    /* The first fails on its non-null type: the others never run. */
    json_t *errs = json_pack("{s:s}", "a", "the store failed");
    struct opts o2 = {.deferred = true, .root = root, .errors = errs};
    r = run("mutation { a: deleteWebhook(id: \"1\") b: deleteWebhook(id: \"2\") }", &o2);
    cr_expect_eq(json_array_size(r.calls), 1);
    cr_expect_str_eq(r.out, "{\"errors\":[{\"message\":\"the store failed\",\"locations\":[{\"line\":1,\"column\":12}],"
                            "\"path\":[\"a\"]}],\"data\":null}");
    free_result(&r);
    json_decref(errs);
    json_decref(root);
}

Test(gq_exec, get_refuses_a_mutation)
{
    struct opts o = {.no_mutation = true};
    struct result r = run("mutation { deleteWebhook(id: \"1\") }", &o);
    cr_expect_not(r.started);
    cr_expect_eq(json_array_size(r.calls), 0);
    cr_expect_str_eq(r.out, "{\"errors\":[{\"message\":\"Can only perform a mutation operation from a POST reque"
                            "st.\"}]}");
    free_result(&r);
    r = run("query { system { version } } mutation M { deleteWebhook(id: \"1\") }", &(struct opts){.no_mutation = true,
                                                                                            .opname = "M"});
    cr_expect_not(r.started);
    free_result(&r);
}

Test(gq_exec, request_errors_do_not_start)
{
    struct result r = run("query A { system { version } } query B { __typename }", &(struct opts){0});
    cr_expect_not(r.started);
    cr_expect_str_eq(r.out,
                     "{\"errors\":[{\"message\":\"Must provide operation name if query contains multiple operatio"
                     "ns.\"}]}");
    free_result(&r);
    json_t *vars = json_pack("{s:s}", "n", "x");
    r = run("query ($n: Int) { webhooks(first: $n) { pageInfo { hasNextPage } } }", &(struct opts){.vars = vars});
    cr_expect_not(r.started);
    cr_expect_eq(json_array_size(r.calls), 0);
    free_result(&r);
    json_decref(vars);
}

Test(gq_exec, select_operation)
{
    struct gq_arena a;
    gq_arena_init(&a, 0);
    struct gq_document *doc;
    struct gq_error e;
    const char *q = "query A { __typename } fragment F on Query { __typename } mutation B { __typename }";
    cr_assert_eq(gq_parse(&a, q, strlen(q), &big_limits, &doc, &e), 0);
    cr_expect_null(gq_select_operation(doc, NULL));
    cr_expect_eq(gq_select_operation(doc, "A"), &doc->defs[0]);
    cr_expect_eq(gq_select_operation(doc, "B"), &doc->defs[2]);
    cr_expect_null(gq_select_operation(doc, "F"));
    cr_expect_null(gq_select_operation(doc, "C"));
    q = "{ __typename }";
    cr_assert_eq(gq_parse(&a, q, strlen(q), &big_limits, &doc, &e), 0);
    cr_expect_eq(gq_select_operation(doc, NULL), &doc->defs[0]);
    cr_expect_null(gq_select_operation(doc, ""));
    gq_arena_free(&a);
}

/* ---- introspection off ------------------------------------------------------------------ */

Test(gq_exec, introspection_off)
{
    struct opts o = {.no_introspection = true};
    struct result r = run("{ __typename __schema { queryType { name } } }", &o);
    cr_expect_str_eq(r.out, "{\"errors\":[{\"message\":\"GraphQL introspection has been disabled, but the requested "
                            "query contained the field \\\"__schema\\\".\",\"locations\":[{\"line\":1,\"column\":14}],"
                            "\"path\":[\"__schema\"]}],\"data\":null}");
    free_result(&r);
    r = run("{ t: __type(name: \"Query\") { name } system { version } }", &o);
    cr_expect_str_eq(r.out, "{\"errors\":[{\"message\":\"GraphQL introspection has been disabled, but the requested "
                            "query contained the field \\\"__type\\\".\",\"locations\":[{\"line\":1,\"column\":3}],"
                            "\"path\":[\"t\"]}],\"data\":{\"t\":null,\"system\":{\"version\":\"0.1.0\"}}}");
    free_result(&r);
}

/* ---- bounds ----------------------------------------------------------------------------- */

Test(gq_exec, too_many_values_stop_the_execution)
{
    json_t *item = json_pack("{s:i}", "count", 1);
    json_t *list = json_array();
    for (int i = 0; i < 1000001; i++)
        json_array_append(list, item);   /* one object, many references */
    json_t *root = json_pack("{s:o}", "sources", list);
    struct result r = run("{ sources { count } }", &(struct opts){.root = root});
    cr_expect_str_eq(r.out, "{\"errors\":[{\"message\":\"The response would hold more values than hookd allows "
                            "(1000000).\",\"locations\":[{\"line\":1,\"column\":13}],\"path\":[\"sources\",499998,"
                            "\"count\"]}],\"data\":null}");
    free_result(&r);
    json_decref(root);
    json_decref(item);
}

Test(gq_exec, too_much_output_stops_the_execution)
{
    size_t n = 1u << 20;
    char *big = malloc(n);
    memset(big, 'x', n);
    json_t *s = json_stringn(big, n);
    free(big);
    json_t *list = json_array();
    for (int i = 0; i < 70; i++)
        json_array_append_new(list, json_pack("{s:O}", "source", s));
    json_decref(s);
    json_t *root = json_pack("{s:o}", "sources", list);
    struct result r = run("{ sources { source } }", &(struct opts){.root = root});
    cr_expect_str_eq(r.out, "{\"errors\":[{\"message\":\"The response would be larger than hookd allows (64 MiB).\","
                            "\"locations\":[{\"line\":1,\"column\":13}],\"path\":[\"sources\",63,\"source\"]}],"
                            "\"data\":null}");
    free_result(&r);
    json_decref(root);
}

Test(gq_exec, arena_cap_is_an_error_not_a_crash)
{
    for (size_t cap = 256; cap <= 65536; cap *= 2) {
        struct result r = run("{ __schema { types { name fields { name type { name ofType { name } } } } } }",
                              &(struct opts){.exec_cap = cap});
        cr_expect(strstr(r.out, "\"data\":") || strstr(r.out, "\"errors\":"), "cap %zu: %s", cap, r.out);
        json_t *j = json_loads(r.out, 0, NULL);
        cr_expect(j, "cap %zu: not JSON: %.300s", cap, r.out);
        if (cap <= 1024)
            cr_expect(strstr(r.out, "The request needs more memory than hookd allows."), "cap %zu: %.300s", cap, r.out);
        json_decref(j);
        free_result(&r);
    }
}

/* ---- a schema of the test's own --------------------------------------------------------- */

static struct gq_input_value_def t_filter_fields[] = {
    {.name = "name", .type = "String!"},
    {.name = "tags", .type = "[String!]", .default_value = "[\"a\"]"},
    {.name = "color", .type = "Color"},
};
static struct gq_input_value_def t_find_args[] = {
    {.name = "filter", .type = "Filter"},
    {.name = "color", .type = "Color", .default_value = "RED"},
};
static struct gq_field_def t_query_fields[] = {
    {.name = "node", .type = "Node"},
    {.name = "pet", .type = "Pet"},
    {.name = "named", .type = "[Named]"},
    {.name = "deep", .type = "[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[["
                             "Int]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]"},
    {.name = "find", .type = "String", .args = t_find_args, .nargs = 2},
    {.name = "color", .type = "Color"},
    {.name = "old", .type = "Int", .deprecation = "use node"},
};
static struct gq_field_def t_node_fields[] = {
    {.name = "name", .type = "String"},
    {.name = "child", .type = "Node"},
};
static struct gq_field_def t_dog_fields[] = {
    {.name = "name", .type = "String"},
    {.name = "barks", .type = "Boolean"},
};
static struct gq_field_def t_cat_fields[] = {
    {.name = "name", .type = "String"},
    {.name = "lives", .type = "Int"},
};
static struct gq_field_def t_named_fields[] = {
    {.name = "name", .type = "String"},
};
static const char *const t_named[] = {"Named"};
static const char *const t_pets[] = {"Dog", "Cat"};
static struct gq_enum_value_def t_colors[] = {{"RED", NULL, NULL}, {"GREEN", "Green.", "too green"}};
/* Just enough of the introspection types for __type on this schema. */
static struct gq_input_value_def t_incl[] = {
    {.name = "includeDeprecated", .type = "Boolean", .default_value = "false"},
};
static struct gq_field_def t_schema_fields[] = {{.name = "queryType", .type = "__Type!"}};
static struct gq_field_def t_type_fields[] = {
    {.name = "name", .type = "String"},
    {.name = "fields", .type = "[__Field!]", .args = t_incl, .nargs = 1},
    {.name = "possibleTypes", .type = "[__Type!]"},
    {.name = "enumValues", .type = "[__EnumValue!]", .args = t_incl, .nargs = 1},
};
static struct gq_field_def t_field_fields[] = {{.name = "name", .type = "String!"}};
static struct gq_field_def t_enum_value_fields[] = {
    {.name = "name", .type = "String!"},
    {.name = "isDeprecated", .type = "Boolean!"},
    {.name = "deprecationReason", .type = "String"},
};
static struct gq_type_def t_types[] = {
    {.name = "Query", .kind = GQ_OBJECT, .fields = t_query_fields, .nfields = 7},
    {.name = "Node", .kind = GQ_OBJECT, .fields = t_node_fields, .nfields = 2},
    {.name = "Named", .kind = GQ_INTERFACE, .fields = t_named_fields, .nfields = 1},
    {.name = "Dog", .kind = GQ_OBJECT, .fields = t_dog_fields, .nfields = 2, .interfaces = t_named, .ninterfaces = 1},
    {.name = "Cat", .kind = GQ_OBJECT, .fields = t_cat_fields, .nfields = 2, .interfaces = t_named, .ninterfaces = 1},
    {.name = "Pet", .kind = GQ_UNION, .members = t_pets, .nmembers = 2},
    {.name = "Color", .kind = GQ_ENUM, .values = t_colors, .nvalues = 2},
    {.name = "Filter", .kind = GQ_INPUT_OBJECT, .inputs = t_filter_fields, .ninputs = 3},
    {.name = "String", .kind = GQ_SCALAR},
    {.name = "Int", .kind = GQ_SCALAR},
    {.name = "Boolean", .kind = GQ_SCALAR},
    {.name = "__Schema", .kind = GQ_OBJECT, .fields = t_schema_fields, .nfields = 1},
    {.name = "__Type", .kind = GQ_OBJECT, .fields = t_type_fields, .nfields = 4},
    {.name = "__Field", .kind = GQ_OBJECT, .fields = t_field_fields, .nfields = 1},
    {.name = "__EnumValue", .kind = GQ_OBJECT, .fields = t_enum_value_fields, .nfields = 3},
};
static const struct gq_schema test_schema = {
    .types = t_types, .ntypes = 15, .query_type = "Query",
};

static struct result run_own(const char *query, json_t *root, json_t *vars)
{
    return run(query, &(struct opts){.schema = &test_schema, .root = root, .vars = vars});
}

Test(gq_exec, own_schema_sdl)
{
    struct hk_buf b = HK_BUF_INIT;
    gq_schema_print(&test_schema, &b);
    hk_buf_putc(&b, '\0');
    /* What graphql-js's printSchema prints for the same types, and a newline. */
    cr_expect_str_eq(b.p,
                     "type Query {\n"
                     "  node: Node\n"
                     "  pet: Pet\n"
                     "  named: [Named]\n"
                     "  deep: [[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[Int]]]]]]]]]]]]]]]]"
                     "]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]\n"
                     "  find(filter: Filter, color: Color = RED): String\n"
                     "  color: Color\n"
                     "  old: Int @deprecated(reason: \"use node\")\n"
                     "}\n"
                     "\n"
                     "type Node {\n"
                     "  name: String\n"
                     "  child: Node\n"
                     "}\n"
                     "\n"
                     "interface Named {\n"
                     "  name: String\n"
                     "}\n"
                     "\n"
                     "type Dog implements Named {\n"
                     "  name: String\n"
                     "  barks: Boolean\n"
                     "}\n"
                     "\n"
                     "type Cat implements Named {\n"
                     "  name: String\n"
                     "  lives: Int\n"
                     "}\n"
                     "\n"
                     "union Pet = Dog | Cat\n"
                     "\n"
                     "enum Color {\n"
                     "  RED\n"
                     "\n"
                     "  \"\"\"Green.\"\"\"\n"
                     "  GREEN @deprecated(reason: \"too green\")\n"
                     "}\n"
                     "\n"
                     "input Filter {\n"
                     "  name: String!\n"
                     "  tags: [String!] = [\"a\"]\n"
                     "  color: Color\n"
                     "}\n");
    hk_buf_free(&b);
}

Test(gq_exec, own_schema_recursion_is_bounded)
{
    /* A chain 80 deep, and a query that asks for all of it. */
    json_t *node = json_pack("{s:s}", "name", "leaf");
    for (int i = 0; i < 80; i++)
        node = json_pack("{s:s,s:o}", "name", "n", "child", node);
    json_t *root = json_pack("{s:o}", "node", node);
    struct hk_buf q = HK_BUF_INIT;
    hk_buf_puts(&q, "{ node { ");
    for (int i = 0; i < 70; i++)
        hk_buf_puts(&q, "child { ");
    hk_buf_puts(&q, "name ");
    for (int i = 0; i < 71; i++)
        hk_buf_puts(&q, "} ");
    hk_buf_puts(&q, "}");
    hk_buf_putc(&q, '\0');
    struct result r = run_own(q.p, root, NULL);
    cr_expect(strstr(r.out, "{\"errors\":[{\"message\":\"The response nests deeper than hookd allows.\""), "%.300s",
              r.out);
    cr_expect(strstr(r.out, "\"data\":null}"), "%.300s", r.out);
    free_result(&r);
    hk_buf_free(&q);
    json_decref(root);

    /* Lists nested past the bound in the type itself. */
    json_t *deep = json_integer(1);
    for (int i = 0; i < 70; i++)
        deep = json_pack("[o]", deep);
    root = json_pack("{s:o}", "deep", deep);
    r = run_own("{ deep }", root, NULL);
    cr_expect(strstr(r.out, "The response nests deeper than hookd allows."), "%.300s", r.out);
    free_result(&r);
    json_decref(root);
}

Test(gq_exec, own_schema_abstract_types)
{
    json_t *root = json_pack("{s:{s:s,s:s,s:b},s:[{s:s,s:s,s:i},{s:s,s:s},{s:s},{s:s}]}", "pet", "__typename", "Dog",
                             "name", "rex", "barks", 1, "named", "__typename", "Cat", "name", "tom", "lives", 9,
                             "__typename", "Dog", "name", "fido", "name", "ghost", "__typename", "Node");
    struct result r = run_own("{ pet { __typename ... on Dog { barks } ... on Named { name } ... on Cat { lives } } "
                              "named { __typename name ... on Cat { lives } } }",
                              root, NULL);
    cr_expect_str_eq(r.out,
                     "{\"errors\":[{\"message\":\"Abstract type \\\"Named\\\" must resolve to an Object type at "
                     "runtime "
                     "for field \\\"Query.named\\\". Either the \\\"Named\\\" type should provide a \\\"resolveT"
                     "ype\\\" "
                     "function or each possible type should provide an \\\"isTypeOf\\\" function.\",\"locations\":[{"
                     "\"line\":1,\"column\":86}],\"path\":[\"named\",2]},{\"message\":\"Runtime Object type \\\"N"
                     "ode\\\" "
                     "is not a possible type for \\\"Named\\\".\",\"locations\":[{\"line\":1,\"column\":86}],\"path\":["
                     "\"named\",3]}],\"data\":{\"pet\":{\"__typename\":\"Dog\",\"barks\":true,\"name\":\"rex\"},\""
                     "named\":"
                     "[{\"__typename\":\"Cat\",\"name\":\"tom\",\"lives\":9},{\"__typename\":\"Dog\",\"name\":\""
                     "fido\"},"
                     "null,null]}}");
    free_result(&r);
    json_decref(root);
}

Test(gq_exec, own_schema_enums_and_input_objects)
{
    json_t *root = json_pack("{s:s,s:s}", "color", "GREEN", "find", "found");
    struct result r = run_own("{ color find(filter: {name: \"n\", color: GREEN}) }", root, NULL);
    cr_expect_str_eq(r.out, "{\"data\":{\"color\":\"GREEN\",\"find\":\"found\"}}");
    cr_expect(args_are(&r, 1, "{\"color\":\"RED\",\"filter\":{\"color\":\"GREEN\",\"name\":\"n\",\"tags\":[\"a\"]}}"));
    free_result(&r);

    json_object_set_new(root, "color", json_string("BLUE"));
    r = run_own("{ color }", root, NULL);
    cr_expect_str_eq(r.out, "{\"errors\":[{\"message\":\"Enum \\\"Color\\\" cannot represent value: \\\"BLUE\\\"\","
                            "\"locations\":[{\"line\":1,\"column\":3}],\"path\":[\"color\"]}],\"data\":{\"color"
                            "\":null}}");
    free_result(&r);

    json_t *vars = json_pack("{s:{s:s,s:s,s:i},s:i}", "f", "name", "n", "color", "BLUE", "zzz", 1, "c", 3);
    r = run_own("query ($f: Filter, $c: Color) { find(filter: $f, color: $c) }", root, vars);
    cr_expect_not(r.started);
    cr_expect_str_eq(r.out, "{\"errors\":[{\"message\":\"Variable \\\"$f\\\" got invalid value \\\"BLUE\\\" at "
                            "\\\"f.color\\\"; Value \\\"BLUE\\\" does not exist in \\\"Color\\\" enum.\",\"locati"
                            "ons\":[{"
                            "\"line\":1,\"column\":8}]},{\"message\":\"Variable \\\"$f\\\" got invalid value { name: "
                            "\\\"n\\\", color: \\\"BLUE\\\", zzz: 1 }; Field \\\"zzz\\\" is not defined by type "
                            "\\\"Filter\\\".\",\"locations\":[{\"line\":1,\"column\":8}]},{\"message\":\"Variable "
                            "\\\"$c\\\" got invalid value 3; Enum \\\"Color\\\" cannot represent non-string valu"
                            "e: 3.\","
                            "\"locations\":[{\"line\":1,\"column\":20}]}]}");
    free_result(&r);
    json_decref(vars);

    vars = json_pack("{s:{s:s,s:s}}", "f", "name", "n", "tags", "one");
    r = run_own("query ($f: Filter) { find(filter: $f) }", root, vars);
    cr_expect_str_eq(r.out, "{\"data\":{\"find\":\"found\"}}");
    cr_expect(args_are(&r, 0, "{\"color\":\"RED\",\"filter\":{\"name\":\"n\",\"tags\":[\"one\"]}}"));
    free_result(&r);
    json_decref(vars);

    r = run_own("{ __type(name: \"Color\") { enumValues { name } all: enumValues(includeDeprecated: true) { name "
                "isDeprecated deprecationReason } } q: __type(name: \"Query\") { fields { name } } n: __type(name: "
                "\"Named\") { possibleTypes { name } } }",
                root, NULL);
    cr_expect_str_eq(r.out, "{\"data\":{\"__type\":{\"enumValues\":[{\"name\":\"RED\"}],\"all\":[{\"name\":\"RED\","
                            "\"isDeprecated\":false,\"deprecationReason\":null},{\"name\":\"GREEN\",\"isDeprecated"
                            "\":true,"
                            "\"deprecationReason\":\"too green\"}]},\"q\":{\"fields\":[{\"name\":\"node\"},{\"name\":"
                            "\"pet\"},{\"name\":\"named\"},{\"name\":\"deep\"},{\"name\":\"find\"},{\"name\":\"col"
                            "or\"}]},"
                            "\"n\":{\"possibleTypes\":[{\"name\":\"Dog\"},{\"name\":\"Cat\"}]}}}");
    free_result(&r);
    json_decref(root);
}

/* ---- odd values from a resolver, odd variables from a client ------------------------------ */

static uint64_t rng = 88172645463325252u;

static unsigned rnd(unsigned n)
{
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return (unsigned)(rng % n);
}

static json_t *random_json(int depth)
{
    static const char *const strs[] = {"", "1", " 7 ", "0x1f", "abc", "1e400", "-0", "RED", "\xc3\xa9\n\"",
                                       "2147483648", "Infinity", "NaN", "true", "1.5"};
    switch (rnd(depth > 3 ? 7 : 9)) {
    case 0: return json_null();
    case 1: return json_boolean(rnd(2));
    case 2: return json_integer((json_int_t)rnd(5) - 2 + (rnd(4) == 0 ? 2147483647 : 0));
    case 3: return json_real((double)rnd(1000) / 7.0 - 50);
    case 4: return json_real(rnd(2) ? 1e21 : 1e-7);
    case 5:
    case 6: return json_string(strs[rnd(sizeof strs / sizeof strs[0])]);
    case 7: {
        json_t *a = json_array();
        for (unsigned i = rnd(4); i > 0; i--)
            json_array_append_new(a, random_json(depth + 1));
        return a;
    }
    default: {
        static const char *const keys[] = {"id", "source", "count", "edges", "node", "cursor", "pageInfo",
                                           "version", "uptimeMs", "payload", "ingress", "bodyBytes", "x"};
        json_t *o = json_object();
        for (unsigned i = rnd(6); i > 0; i--)
            json_object_set_new(o, keys[rnd(sizeof keys / sizeof keys[0])], random_json(depth + 1));
        return o;
    }
    }
}

Test(gq_exec, random_values_give_json)
{
    json_t *cases = load_cases();
    size_t i;
    json_t *c;
    unsigned runs = 0;
    json_array_foreach(cases, i, c) {
        const char *name = json_string_value(json_object_get(c, "name"));
        if (strncmp(name, "introspection", 13) == 0)
            continue;
        for (int k = 0; k < 12; k++) {
            json_t *root = json_object();
            const char *fields[] = {"webhook", "webhooks", "sources", "system", "deleteWebhook"};
            for (int f = 0; f < 5; f++)
                json_object_set_new(root, fields[f], random_json(0));
            json_t *vars = random_json(2);
            if (rnd(2)) {
                json_decref(vars);
                vars = json_pack("{s:o,s:o,s:o,s:o}", "n", random_json(1), "id", random_json(1), "l",
                                 random_json(1), "s", random_json(1));
            }
            struct opts o = {.root = root, .vars = vars, .deferred = k % 3 == 1, .reverse = k % 3 == 2,
                             .opname = json_string_value(json_object_get(c, "operationName"))};
            struct result r = run(json_string_value(json_object_get(c, "query")), &o);
            json_error_t e;
            json_t *j = json_loads(r.out, 0, &e);
            cr_expect(j, "case %s/%d: not JSON (%s): %.300s", name, k, e.text, r.out);
            cr_expect(json_object_get(j, "data") || json_object_get(j, "errors"), "case %s/%d: %.300s", name, k,
                      r.out);
            json_decref(j);
            free_result(&r);
            json_decref(root);
            json_decref(vars);
            runs++;
        }
    }
    cr_expect_gt(runs, 1000);
    json_decref(cases);
}

Test(gq_exec, errors_past_the_cap_are_counted)
{
    json_t *edges = json_array();
    for (int i = 0; i < 150; i++)
        json_array_append_new(edges, json_pack("{s:s,s:{s:s}}", "cursor", "c", "node", "bodyBytes", "x"));
    json_t *root = json_pack("{s:{s:o}}", "webhooks", "edges", edges);
    struct result r = run("{ webhooks { edges { node { bodyBytes } } } }", &(struct opts){.root = root});
    json_t *j = json_loads(r.out, 0, NULL);
    cr_assert(j, "%.300s", r.out);
    json_t *errs = json_object_get(j, "errors");
    cr_expect_eq(json_array_size(errs), GQ_ERRORS_MAX + 1);
    cr_expect_str_eq(json_string_value(json_object_get(json_array_get(errs, GQ_ERRORS_MAX - 1), "message")),
                     "Int cannot represent non-integer value: \"x\"");
    char want[64];
    snprintf(want, sizeof want, "%d more errors were left out.", 150 - GQ_ERRORS_MAX);
    cr_expect_str_eq(json_string_value(json_object_get(json_array_get(errs, GQ_ERRORS_MAX), "message")), want);
    json_t *data_edges = json_object_get(json_object_get(json_object_get(j, "data"), "webhooks"), "edges");
    cr_expect_eq(json_array_size(data_edges), 150);
    cr_expect(json_is_null(json_object_get(json_object_get(json_array_get(data_edges, 149), "node"), "bodyBytes")));
    json_decref(j);
    free_result(&r);
    json_decref(root);
}
