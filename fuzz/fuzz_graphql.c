/* SPDX-License-Identifier: MIT
 * libFuzzer target: the GraphQL parser (graphql/parser.c, lexer.c) on
 * arbitrary bytes, with small limits and then with an arena too small for
 * most documents. Invariants: no crash, leak or hang; an error is one
 * location at line and column >= 1 with a "Syntax Error: " message; a
 * parsed document's strings lie inside the input or the arena, its
 * locations are >= 1, its lists are as long as they say, and parsing the
 * same bytes again gives the same answer. */
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "graphql/graphql.h"

struct ctx {
    const char *src;
    size_t n;
    const struct gq_arena *a;
    uint32_t strings;          /* strings seen, to compare two parses */
};

static void check_loc(struct gq_loc l)
{
    if (l.line < 1 || l.column < 1)
        abort();
}

static void check_str(struct ctx *c, struct gq_str s, bool may_be_absent)
{
    if (!s.p) {
        if (!may_be_absent || s.n)
            abort();
        return;
    }
    bool inside = s.p >= c->src && s.n <= c->n && (size_t)(s.p - c->src) <= c->n - s.n;
    if (!inside && !gq_arena_owns(c->a, s.p, s.n))
        abort();
    /* Touch every byte, so that ASan sees a read out of bounds. */
    volatile unsigned sum = 0;
    for (uint32_t i = 0; i < s.n; i++)
        sum += (unsigned char)s.p[i];
    (void)sum;
    c->strings++;
}

static void check_value(struct ctx *c, const struct gq_value *v, int depth)
{
    if (!v || depth > GQ_NESTING_MAX + 1)
        abort();
    check_loc(v->loc);
    switch (v->kind) {
    case GQ_V_VARIABLE:
    case GQ_V_INT:
    case GQ_V_FLOAT:
    case GQ_V_STRING:
    case GQ_V_ENUM:
        check_str(c, v->s, false);
        break;
    case GQ_V_BOOLEAN:
    case GQ_V_NULL:
        break;
    case GQ_V_LIST:
        for (uint32_t i = 0; i < v->list.n; i++)
            check_value(c, v->list.v[i], depth + 1);
        break;
    case GQ_V_OBJECT:
        for (uint32_t i = 0; i < v->obj.n; i++) {
            check_str(c, v->obj.v[i].name, false);
            check_loc(v->obj.v[i].loc);
            check_value(c, v->obj.v[i].value, depth + 1);
        }
        break;
    default:
        abort();
    }
}

static void check_args(struct ctx *c, const struct gq_argument *a, uint32_t n)
{
    for (uint32_t i = 0; i < n; i++) {
        check_str(c, a[i].name, false);
        check_loc(a[i].loc);
        check_value(c, a[i].value, 0);
    }
}

static void check_dirs(struct ctx *c, const struct gq_directive *d, uint32_t n)
{
    for (uint32_t i = 0; i < n; i++) {
        check_str(c, d[i].name, false);
        check_loc(d[i].loc);
        check_args(c, d[i].args, d[i].nargs);
    }
}

static void check_type(struct ctx *c, const struct gq_type *t)
{
    for (int depth = 0; t->kind != GQ_T_NAMED; depth++) {
        check_loc(t->loc);
        if (!t->of || depth > 2 * GQ_NESTING_MAX + 2)
            abort();
        t = t->of;
    }
    check_loc(t->loc);
    check_str(c, t->name, false);
}

static void check_set(struct ctx *c, const struct gq_selection_set *set, int depth)
{
    if (!set || !set->n || depth > GQ_NESTING_MAX)
        abort();
    check_loc(set->loc);
    for (uint32_t i = 0; i < set->n; i++) {
        const struct gq_selection *s = &set->v[i];
        check_loc(s->loc);
        check_str(c, s->alias, true);
        check_str(c, s->name, s->kind == GQ_S_INLINE);
        check_str(c, s->type_cond, true);
        check_args(c, s->args, s->nargs);
        check_dirs(c, s->dirs, s->ndirs);
        if (s->kind == GQ_S_INLINE && !s->sel)
            abort();
        if (s->sel)
            check_set(c, s->sel, depth + 1);
    }
}

static void check_doc(struct ctx *c, const struct gq_document *doc)
{
    if (!doc || !doc->ndefs)
        abort();
    for (uint32_t i = 0; i < doc->ndefs; i++) {
        const struct gq_definition *d = &doc->defs[i];
        check_loc(d->loc);
        check_str(c, d->name, true);
        check_str(c, d->type_cond, d->kind != GQ_D_FRAGMENT);
        for (uint32_t j = 0; j < d->nvars; j++) {
            check_str(c, d->vars[j].name, false);
            check_loc(d->vars[j].loc);
            check_loc(d->vars[j].name_loc);
            check_type(c, d->vars[j].type);
            if (d->vars[j].def)
                check_value(c, d->vars[j].def, 0);
            check_dirs(c, d->vars[j].dirs, d->vars[j].ndirs);
        }
        check_dirs(c, d->dirs, d->ndirs);
        if (d->kind == GQ_D_TYPE_SYSTEM) {
            if (d->sel)
                abort();
        } else {
            check_set(c, d->sel, 1);
        }
    }
}

/* Parse once; returns the outcome as (rc, strings seen or error position). */
static void run(const char *src, size_t n, size_t cap, const struct gq_limits *lim, int *rc, uint64_t *sig)
{
    struct gq_arena a;
    gq_arena_init(&a, cap);
    struct gq_document *doc;
    struct gq_error err;
    *rc = gq_parse(&a, src, n, lim, &doc, &err);
    if (*rc == 0) {
        struct ctx c = {src, n, &a, 0};
        check_doc(&c, doc);
        *sig = ((uint64_t)doc->ndefs << 32) | c.strings;
    } else {
        if (*rc != -1 || doc || err.nlocs != 1 || !err.message)
            abort();
        check_loc(err.locs[0]);
        if (strncmp(err.message, "Syntax Error: ", 14) != 0)
            abort();
        *sig = ((uint64_t)err.locs[0].line << 32) | err.locs[0].column;
    }
    gq_arena_free(&a);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    /* A copy of exactly `size` bytes, so that a read past the end is seen. */
    char *src = malloc(size ? size : 1);
    if (!src)
        return 0;
    memcpy(src, data, size);
    struct gq_limits lim = {4096, 400, 12, 500, 1000};
    int rc1, rc2, rc3;
    uint64_t sig1, sig2, sig3;
    run(src, size, 0, &lim, &rc1, &sig1);
    run(src, size, 0, &lim, &rc2, &sig2);
    if (rc1 != rc2 || sig1 != sig2)
        abort();
    /* A small arena: out of memory anywhere must still be an error. */
    run(src, size, 2048, &lim, &rc3, &sig3);
    if (rc3 == 0 && (rc1 != 0 || sig3 != sig1))
        abort();
    free(src);
    return 0;
}
