/* SPDX-License-Identifier: MIT
 * GraphQL for hookd, knowing nothing of HTTP or the store: parse
 * (graphql/parser.c), validate (graphql/validate.c), execute
 * (graphql/exec.c) over a schema (graphql/schema.h). The caller supplies
 * the root fields' values through an asynchronous resolver; execution
 * writes the response ({"data":…,"errors":[…]}) into a buffer. */
#ifndef HK_GRAPHQL_H
#define HK_GRAPHQL_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/buf.h"
#include "graphql/arena.h"
#include "graphql/ast.h"
#include "graphql/schema.h"

/* ---- errors ------------------------------------------------------------ */

#define GQ_ERRORS_MAX 101          /* graphql-js: 100, then "Too many validation errors" */

struct gq_error {
    const char *message;           /* in the arena, NUL-terminated; worded as graphql-js words it */
    struct gq_loc locs[16];        /* a conflict deep in fragments names two per level */
    uint32_t nlocs;
};

struct gq_errors {
    struct gq_error v[GQ_ERRORS_MAX];
    uint32_t n;
    uint32_t dropped;
};

/* ---- limits -------------------------------------------------------------- */

struct gq_limits {
    uint32_t max_bytes;        /* document size; refused before parsing */
    uint32_t max_tokens;       /* parser: tokens (graphql-js's maxTokens) */
    uint32_t max_depth;        /* nesting of selection sets, lists, objects */
    uint32_t max_fields;       /* fields selected, fragments expanded (the cost) */
    uint32_t max_first;        /* the `first` argument of connections */
};
#define GQ_LIMITS_DEFAULT {16384, 4000, 12, 500, 1000}

/* ---- parse and validate ------------------------------------------------------- */

/* Parse n bytes into *doc (in the arena). 0, or -1 with one error in
 * *err whose message starts "Syntax Error: " (graphql-js's wording and
 * location for the same input), or names the limit that was passed. */
int gq_parse(struct gq_arena *a, const char *src, size_t n, const struct gq_limits *lim, struct gq_document **doc,
             struct gq_error *err);

/* The specification's validation rules that apply to an executable
 * document, in graphql-js's specifiedRules order, with graphql-js's
 * messages and locations. Returns the number of errors (also errs->n). */
uint32_t gq_validate(struct gq_arena *a, const struct gq_schema *s, const struct gq_document *doc,
                     const struct gq_limits *lim, bool introspection, struct gq_errors *errs);

/* The operation a request runs: the one named `name`, or the only one
 * when name is NULL. NULL when there is none such (the executor then
 * answers with graphql-js's error). */
const struct gq_definition *gq_select_operation(const struct gq_document *doc, const char *name);

/* ---- execute ----------------------------------------------------------------- */

struct gq_exec;

/* One root field to resolve (a Query or Mutation field). */
struct gq_root_call {
    struct gq_exec *x;
    const struct gq_field_def *field;
    json_t *args;              /* coerced arguments, an object (borrowed until gq_root_done) */
    const char *response_key;  /* alias or name */
    void *data;                /* the resolver's, free for it to use */
};

/* An object the resolver describes field by field instead of as a JSON
 * tree (a store row read where it lies): completion asks `field` for each
 * field the query selects. The object, and whatever its values point
 * to, must live until the execution is freed (the request's arena). */
struct gq_ext;
enum gq_xkind { GQ_X_NULL, GQ_X_STRING, GQ_X_INT, GQ_X_BOOL, GQ_X_OBJECT, GQ_X_LIST, GQ_X_JSON };
struct gq_xval {
    enum gq_xkind kind;
    const char *s;             /* STRING (s[0..n)); INT: decimal text */
    size_t n;                  /* STRING, INT: bytes; LIST: items */
    bool b;                    /* BOOL */
    const struct gq_ext *obj;  /* OBJECT */
    const struct gq_ext *const *items; /* LIST: objects */
    json_t *json;              /* JSON: borrowed, owned by the object */
};
struct gq_ext_vt {
    /* The value of the field at `index` in the object type's field table
     * (for hookd's schema, schema.h's GQ_WEBHOOK_* and kin). */
    void (*field)(const struct gq_ext *e, unsigned index, struct gq_xval *out);
};
struct gq_ext {
    const struct gq_ext_vt *vt;
};

/* Resolve call->field (asynchronously or not): end with exactly one
 * gq_root_done or gq_root_done_ext. */
typedef void (*gq_resolve_fn)(void *ctx, struct gq_root_call *call);

/* The field's value: a JSON value shaped as the schema says (objects
 * keyed by field name, e.g. a Webhook {"id":"1","source":…}; a
 * connection {"edges":[…],"pageInfo":{…}}), stolen by the executor; NULL
 * for null. With `error` (a message, copied) the field is null and the
 * error is reported with its path. */
void gq_root_done(struct gq_root_call *call, json_t *value, const char *error);
/* The same with an external object as the field's value (NULL: null). */
void gq_root_done_ext(struct gq_root_call *call, const struct gq_ext *value, const char *error);

typedef void (*gq_done_fn)(void *ud, struct gq_exec *x);

struct gq_exec_params {
    const struct gq_schema *schema;
    const struct gq_document *doc;     /* parsed and validated */
    const char *operation_name;        /* NULL: the only operation */
    json_t *variables;                 /* an object or NULL (borrowed) */
    bool introspection;                /* __schema and __type allowed */
    bool allow_mutation;               /* false (GET): a mutation is an error (the caller answers 405 first) */
    gq_resolve_fn resolve;
    void *resolve_ctx;
    gq_done_fn done;                   /* called once, after the response is written */
    void *done_ud;
    struct hk_buf *out;                /* the response document is appended here */
};

/* Start executing. Query root fields are resolved concurrently, mutation
 * root fields one after the other (the specification's order). Returns
 * the execution (freed by gq_exec_free after `done`), or NULL when the
 * request fails before execution (unknown operation, bad variables): then
 * the error response is already in `out` and `done` is not called. */
struct gq_exec *gq_exec_start(struct gq_arena *a, const struct gq_exec_params *p);
/* The operation being executed (after gq_exec_start). */
enum gq_op gq_exec_operation(const struct gq_exec *x);
void gq_exec_free(struct gq_exec *x);

#endif
