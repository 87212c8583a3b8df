/* SPDX-License-Identifier: MIT
 * A GraphQL schema as constant tables: what validation, execution and
 * introspection read, and what the SDL printer prints. hk_gq_schema() is
 * hookd's (graphql/schema.c); the built-in scalars and the introspection
 * types are in it. Type references are written as in SDL ("ID!",
 * "[SourceStats!]!") and parsed once by gq_schema_init. */
#ifndef HK_GQ_SCHEMA_H
#define HK_GQ_SCHEMA_H

#include <stdbool.h>
#include <stddef.h>

#include "core/buf.h"

enum gq_type_kind { GQ_SCALAR, GQ_OBJECT, GQ_INTERFACE, GQ_UNION, GQ_ENUM, GQ_INPUT_OBJECT };

/* A type reference, resolved: [Int!]! is NON_NULL -> LIST -> NON_NULL -> Int. */
struct gq_type_def;
struct gq_tref {
    enum { GQ_REF_NAMED, GQ_REF_LIST, GQ_REF_NON_NULL } kind;
    const struct gq_type_def *named;   /* NAMED */
    const struct gq_tref *of;          /* LIST, NON_NULL */
};

struct gq_input_value_def {            /* an argument or an input field */
    const char *name;
    const char *type;                  /* SDL text */
    const char *default_value;         /* SDL literal text, or NULL */
    const char *description;
    const struct gq_tref *tref;        /* set by gq_schema_init */
};

struct gq_field_def {
    const char *name;
    const char *type;
    const struct gq_input_value_def *args;
    unsigned nargs;
    const char *description;
    const char *deprecation;           /* reason, or NULL: not deprecated */
    const struct gq_tref *tref;        /* set by gq_schema_init */
};

struct gq_enum_value_def {
    const char *name;
    const char *description;
    const char *deprecation;
};

struct gq_type_def {
    const char *name;
    enum gq_type_kind kind;
    const char *description;
    const struct gq_field_def *fields;         /* OBJECT, INTERFACE */
    unsigned nfields;
    const struct gq_input_value_def *inputs;   /* INPUT_OBJECT */
    unsigned ninputs;
    const struct gq_enum_value_def *values;    /* ENUM */
    unsigned nvalues;
    const char *const *interfaces;             /* OBJECT: names */
    unsigned ninterfaces;
    const char *const *members;                /* UNION: names */
    unsigned nmembers;
    const char *specified_by;                  /* SCALAR */
};

/* Directive locations, as in __DirectiveLocation. */
enum {
    GQ_DL_QUERY = 1u << 0,
    GQ_DL_MUTATION = 1u << 1,
    GQ_DL_SUBSCRIPTION = 1u << 2,
    GQ_DL_FIELD = 1u << 3,
    GQ_DL_FRAGMENT_DEFINITION = 1u << 4,
    GQ_DL_FRAGMENT_SPREAD = 1u << 5,
    GQ_DL_INLINE_FRAGMENT = 1u << 6,
    GQ_DL_VARIABLE_DEFINITION = 1u << 7,
    GQ_DL_SCHEMA = 1u << 8,
    GQ_DL_SCALAR = 1u << 9,
    GQ_DL_OBJECT = 1u << 10,
    GQ_DL_FIELD_DEFINITION = 1u << 11,
    GQ_DL_ARGUMENT_DEFINITION = 1u << 12,
    GQ_DL_INTERFACE = 1u << 13,
    GQ_DL_UNION = 1u << 14,
    GQ_DL_ENUM = 1u << 15,
    GQ_DL_ENUM_VALUE = 1u << 16,
    GQ_DL_INPUT_OBJECT = 1u << 17,
    GQ_DL_INPUT_FIELD_DEFINITION = 1u << 18,
    GQ_DL_DIRECTIVE_DEFINITION = 1u << 19,
};

struct gq_directive_def {
    const char *name;
    const char *description;
    unsigned locations;
    const struct gq_input_value_def *args;
    unsigned nargs;
    bool repeatable;
    /* The locations in their definition's order, as SDL writes them
     * ("FIELD | FRAGMENT_SPREAD"): introspection lists them in this order,
     * which a bit mask cannot keep. gq_schema_init checks it against
     * `locations`. */
    const char *locations_sdl;
};

struct gq_schema {
    const struct gq_type_def *types;   /* user types, built-in scalars and introspection types */
    unsigned ntypes;
    const struct gq_directive_def *directives; /* @include, @skip, @deprecated, @specifiedBy, @oneOf */
    unsigned ndirectives;
    const char *query_type;            /* "Query" */
    const char *mutation_type;         /* "Mutation", or NULL */
    const char *description;
};

/* Is s[0..n) a DateTime as hookd reads one: RFC 3339 in UTC,
 * YYYY-MM-DDTHH:MM:SS with 0 to 6 fraction digits and a final Z, a real
 * date and time (no leap second)? The scalar's input check, at validation
 * (literals) and at variable coercion. */
bool gq_datetime_valid(const char *s, size_t n);

/* The fields of hookd's object types that api/ serves as external objects
 * (graphql.h), by their index in the type's field table: an external
 * object's getter switches on these rather than comparing names. */
enum {
    GQ_WEBHOOK_ID, GQ_WEBHOOK_SOURCE, GQ_WEBHOOK_EVENT_TYPE, GQ_WEBHOOK_PAYLOAD, GQ_WEBHOOK_RECEIVED_AT,
    GQ_WEBHOOK_INGRESS, GQ_WEBHOOK_CONTENT_TYPE, GQ_WEBHOOK_DELIVERY_ID, GQ_WEBHOOK_BODY_BYTES,
    GQ_WEBHOOK_BODY_SHA256, GQ_WEBHOOK_CLIENT_ADDRESS, GQ_WEBHOOK_DELIVERY,
};
enum {
    GQ_DELIVERY_STATE, GQ_DELIVERY_ATTEMPTS, GQ_DELIVERY_LAST_STATUS, GQ_DELIVERY_LAST_ERROR,
    GQ_DELIVERY_NEXT_ATTEMPT_AT, GQ_DELIVERY_LAST_ATTEMPT_AT,
};
enum { GQ_CONNECTION_EDGES, GQ_CONNECTION_PAGE_INFO };
enum { GQ_EDGE_CURSOR, GQ_EDGE_NODE };
enum { GQ_PAGE_INFO_HAS_NEXT_PAGE, GQ_PAGE_INFO_END_CURSOR };

/* hookd's schema, initialized. gq_schema_init resolves every type
 * reference of a schema (once, thread-safe; gq_exec_start and
 * gq_schema_print call it); it aborts on a table that names an unknown
 * type: a programming error, caught by the unit tests. */
const struct gq_schema *hk_gq_schema(void);
void gq_schema_init(const struct gq_schema *s);

const struct gq_type_def *gq_schema_type(const struct gq_schema *s, const char *name, unsigned len);
const struct gq_field_def *gq_type_field(const struct gq_type_def *t, const char *name, unsigned len);
const struct gq_directive_def *gq_schema_directive(const struct gq_schema *s, const char *name, unsigned len);

/* A type reference as SDL writes it ("[SourceStats!]!"). */
void gq_tref_print(const struct gq_tref *t, struct hk_buf *out);

/* A string value as graphql-js's printer writes it: quoted with its
 * escapes (printString), or as a block string (printBlockString, every
 * line after the first prefixed by `indent`). */
void gq_print_string(struct hk_buf *out, const char *s, size_t n);
void gq_print_block_string(struct hk_buf *out, const char *s, size_t n, const char *indent);

/* The schema as SDL, printed as graphql-js's printSchema prints it (the
 * built-in scalars, directives and introspection types left out). */
void gq_schema_print(const struct gq_schema *s, struct hk_buf *out);

#endif
