/* SPDX-License-Identifier: MIT
 * The syntax tree of a GraphQL executable document (October 2021
 * specification, section 2), as graphql/parser.c builds it: every node in
 * one arena (graphql/arena.h) that lives as long as the request, strings
 * pointing into the document or, when decoded (escapes, block strings),
 * into the arena. Locations are 1-based line and column as graphql-js
 * reports them (columns count UTF-16 code units); a node's location is
 * where graphql-js's node starts (its first token: the description, when
 * a definition has one). Descriptions themselves are not kept. */
#ifndef HK_GQ_AST_H
#define HK_GQ_AST_H

#include <stdbool.h>
#include <stdint.h>

/* The parser refuses a document that nests selection sets, list and object
 * values or list types deeper than this (graphql-js has no such bound; the
 * validator's max_depth is far smaller), so recursion stays bounded. */
#define GQ_NESTING_MAX 128

struct gq_loc {
    uint32_t line, column;
};

/* A string: a name, a decoded string value, a number's text. Not
 * NUL-terminated. n == 0 with p == NULL: absent (no alias, no name). */
struct gq_str {
    const char *p;
    uint32_t n;
};

enum gq_vkind {
    GQ_V_VARIABLE,             /* s: the name without '$' */
    GQ_V_INT,                  /* s: the token text */
    GQ_V_FLOAT,                /* s: the token text */
    GQ_V_STRING,               /* s: decoded; block: it was a block string */
    GQ_V_BOOLEAN,              /* b */
    GQ_V_NULL,
    GQ_V_ENUM,                 /* s */
    GQ_V_LIST,                 /* list */
    GQ_V_OBJECT,               /* obj */
};

struct gq_value;

struct gq_object_field {
    struct gq_str name;
    struct gq_loc loc;
    struct gq_value *value;
};

struct gq_value {
    enum gq_vkind kind;
    struct gq_loc loc;
    bool block;                /* GQ_V_STRING from a block string */
    bool b;
    struct gq_str s;
    struct {
        struct gq_value **v;
        uint32_t n;
    } list;
    struct {
        struct gq_object_field *v;
        uint32_t n;
    } obj;
};

enum gq_tkind { GQ_T_NAMED, GQ_T_LIST, GQ_T_NON_NULL };

/* A type reference: [Int!]! is NON_NULL(LIST(NON_NULL(NAMED Int))). */
struct gq_type {
    enum gq_tkind kind;
    struct gq_loc loc;         /* of its first token: '[' or the name (NON_NULL: where its inner type starts) */
    struct gq_str name;        /* NAMED */
    struct gq_type *of;        /* LIST, NON_NULL */
};

struct gq_argument {
    struct gq_str name;
    struct gq_loc loc;
    struct gq_value *value;
};

struct gq_directive {
    struct gq_str name;
    struct gq_loc loc;         /* of the '@' */
    struct gq_argument *args;
    uint32_t nargs;
};

struct gq_selection_set;

enum gq_skind { GQ_S_FIELD, GQ_S_SPREAD, GQ_S_INLINE };

struct gq_selection {
    enum gq_skind kind;
    struct gq_loc loc;         /* field: of its alias or name; spread, inline: of the "..." */
    struct gq_str alias;       /* FIELD; absent when none */
    struct gq_str name;        /* FIELD: the field; SPREAD: the fragment */
    struct gq_loc name_loc;
    struct gq_argument *args;  /* FIELD */
    uint32_t nargs;
    struct gq_directive *dirs;
    uint32_t ndirs;
    struct gq_str type_cond;   /* INLINE: absent when none */
    struct gq_loc type_cond_loc;
    struct gq_selection_set *sel; /* FIELD (NULL: a leaf), INLINE */
};

struct gq_selection_set {
    struct gq_loc loc;         /* of the '{' */
    struct gq_selection *v;
    uint32_t n;
};

struct gq_variable_def {
    struct gq_str name;        /* without '$' */
    struct gq_loc loc;         /* of the '$' (of the description before it, if any) */
    struct gq_loc name_loc;    /* of the name after the '$' */
    struct gq_type *type;
    struct gq_value *def;      /* NULL: no default */
    struct gq_directive *dirs;
    uint32_t ndirs;
};

enum gq_op { GQ_OP_QUERY, GQ_OP_MUTATION, GQ_OP_SUBSCRIPTION };

enum gq_dkind {
    GQ_D_OPERATION,
    GQ_D_FRAGMENT,
    /* A type-system definition or extension ("type", "schema", "extend",
     * …) seen at the top level: parsed in full (so that its syntax errors
     * are found), kept only as a location and a name, so that validation
     * can refuse it as graphql-js's ExecutableDefinitions rule does. */
    GQ_D_TYPE_SYSTEM,
};

struct gq_definition {
    enum gq_dkind kind;
    struct gq_loc loc;         /* of its first token: keyword, '{' of a shorthand, or description */
    enum gq_op op;             /* OPERATION */
    bool shorthand;            /* OPERATION: the anonymous "{ … }" form */
    /* OPERATION (absent: anonymous), FRAGMENT; TYPE_SYSTEM: the type's or
     * directive's name, absent for a schema definition or extension. */
    struct gq_str name;
    struct gq_loc name_loc;
    struct gq_variable_def *vars;
    uint32_t nvars;
    struct gq_str type_cond;   /* FRAGMENT */
    struct gq_loc type_cond_loc;
    struct gq_directive *dirs;
    uint32_t ndirs;
    struct gq_selection_set *sel;
};

struct gq_document {
    struct gq_definition *defs;
    uint32_t ndefs;
};

#endif
