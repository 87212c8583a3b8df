/* SPDX-License-Identifier: MIT
 * The arena, lexer and parser of graphql/ against graphql-js 16.15: the
 * tables below are graphql-js's own answers for the same documents (token
 * lists from its Lexer; syntax trees rendered with every location; syntax
 * errors with message, line and column), recorded by running npm
 * graphql@16.15.0 under Node 20 on each document. Then what graphql-js has
 * no opinion on: the limits, the nesting bound, bytes that are not UTF-8,
 * NUL in messages, an arena that runs out, hostile sizes. */
#include <criterion/criterion.h>
#include <stdalign.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "graphql/graphql.h"
#include "graphql/lexer.h"

/* A literal and its length, NUL bytes included. */
#define S(lit) lit, sizeof lit - 1

struct shape_case {
    const char *src;
    size_t n;
    const char *want;
};

struct error_case {
    const char *src;
    size_t n;
    const char *message;
    uint32_t line, column;
};

/* ---- a one-line rendering of tokens and trees, every location included ---- */

struct dbuf {
    char *p;
    size_t n, cap;
};

static void dput(struct dbuf *b, const char *s, size_t n)
{
    if (b->n + n + 1 > b->cap) {
        b->cap = (b->n + n + 1) * 2;
        b->p = realloc(b->p, b->cap);
        cr_assert_not_null(b->p);
    }
    if (n)
        memcpy(b->p + b->n, s, n);
    b->n += n;
    b->p[b->n] = 0;
}

static void dputs(struct dbuf *b, const char *s)
{
    dput(b, s, strlen(s));
}

static void dfmt(struct dbuf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void dfmt(struct dbuf *b, const char *fmt, ...)
{
    char tmp[256];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(tmp, sizeof tmp, fmt, ap);
    va_end(ap);
    dput(b, tmp, (size_t)n);
}

static void dstr(struct dbuf *b, struct gq_str s)
{
    dput(b, s.p, s.n);
}

static void dloc(struct dbuf *b, struct gq_loc l)
{
    dfmt(b, "@%u:%u", l.line, l.column);
}

/* As JavaScript's JSON.stringify writes a string. */
static void djson(struct dbuf *b, struct gq_str s)
{
    dputs(b, "\"");
    for (uint32_t i = 0; i < s.n; i++) {
        unsigned char c = (unsigned char)s.p[i];
        switch (c) {
        case '"': dputs(b, "\\\""); break;
        case '\\': dputs(b, "\\\\"); break;
        case '\b': dputs(b, "\\b"); break;
        case '\f': dputs(b, "\\f"); break;
        case '\n': dputs(b, "\\n"); break;
        case '\r': dputs(b, "\\r"); break;
        case '\t': dputs(b, "\\t"); break;
        default:
            if (c < 0x20)
                dfmt(b, "\\u%04x", c);
            else
                dput(b, (const char *)&c, 1);
        }
    }
    dputs(b, "\"");
}

static void dvalue(struct dbuf *b, const struct gq_value *v)
{
    switch (v->kind) {
    case GQ_V_VARIABLE: dputs(b, "$"); dstr(b, v->s); break;
    case GQ_V_INT: dputs(b, "i"); dstr(b, v->s); break;
    case GQ_V_FLOAT: dputs(b, "f"); dstr(b, v->s); break;
    case GQ_V_STRING: dputs(b, v->block ? "b" : "s"); djson(b, v->s); break;
    case GQ_V_BOOLEAN: dputs(b, v->b ? "true" : "false"); break;
    case GQ_V_NULL: dputs(b, "null"); break;
    case GQ_V_ENUM: dputs(b, "e"); dstr(b, v->s); break;
    case GQ_V_LIST:
        dputs(b, "[");
        for (uint32_t i = 0; i < v->list.n; i++) {
            if (i)
                dputs(b, ",");
            dvalue(b, v->list.v[i]);
        }
        dputs(b, "]");
        break;
    case GQ_V_OBJECT:
        dputs(b, "{");
        for (uint32_t i = 0; i < v->obj.n; i++) {
            if (i)
                dputs(b, ",");
            dstr(b, v->obj.v[i].name);
            dloc(b, v->obj.v[i].loc);
            dputs(b, ":");
            dvalue(b, v->obj.v[i].value);
        }
        dputs(b, "}");
        break;
    }
    dloc(b, v->loc);
}

static void dtype(struct dbuf *b, const struct gq_type *t)
{
    if (t->kind == GQ_T_NAMED) {
        dstr(b, t->name);
    } else if (t->kind == GQ_T_LIST) {
        dputs(b, "[");
        dtype(b, t->of);
        dputs(b, "]");
    } else {
        dtype(b, t->of);
        dputs(b, "!");
    }
    dloc(b, t->loc);
}

static void dargs(struct dbuf *b, const struct gq_argument *a, uint32_t n)
{
    if (!n)
        return;
    dputs(b, "(");
    for (uint32_t i = 0; i < n; i++) {
        if (i)
            dputs(b, ",");
        dstr(b, a[i].name);
        dloc(b, a[i].loc);
        dputs(b, ":");
        dvalue(b, a[i].value);
    }
    dputs(b, ")");
}

static void ddirs(struct dbuf *b, const struct gq_directive *d, uint32_t n)
{
    for (uint32_t i = 0; i < n; i++) {
        dputs(b, " @");
        dstr(b, d[i].name);
        dloc(b, d[i].loc);
        dargs(b, d[i].args, d[i].nargs);
    }
}

static void dsel(struct dbuf *b, const struct gq_selection_set *set)
{
    dputs(b, "{");
    dloc(b, set->loc);
    for (uint32_t i = 0; i < set->n; i++) {
        const struct gq_selection *s = &set->v[i];
        dputs(b, " ");
        if (s->kind == GQ_S_FIELD) {
            if (s->alias.p) {
                dstr(b, s->alias);
                dputs(b, ":");
            }
            dstr(b, s->name);
            dloc(b, s->loc);
            dputs(b, "/");
            dloc(b, s->name_loc);
            dargs(b, s->args, s->nargs);
            ddirs(b, s->dirs, s->ndirs);
            if (s->sel) {
                dputs(b, " ");
                dsel(b, s->sel);
            }
        } else if (s->kind == GQ_S_SPREAD) {
            dputs(b, "...");
            dstr(b, s->name);
            dloc(b, s->loc);
            dputs(b, "/");
            dloc(b, s->name_loc);
            ddirs(b, s->dirs, s->ndirs);
        } else {
            dputs(b, "...");
            dloc(b, s->loc);
            if (s->type_cond.p) {
                dputs(b, " on ");
                dstr(b, s->type_cond);
                dloc(b, s->type_cond_loc);
            }
            ddirs(b, s->dirs, s->ndirs);
            dputs(b, " ");
            dsel(b, s->sel);
        }
    }
    dputs(b, "}");
}

/* Caller frees. */
static char *dump_doc(const struct gq_document *doc)
{
    static const char *const ops[] = {"query", "mutation", "subscription"};
    struct dbuf b = {0};
    dputs(&b, "");
    for (uint32_t i = 0; i < doc->ndefs; i++) {
        const struct gq_definition *d = &doc->defs[i];
        if (i)
            dputs(&b, " ; ");
        if (d->kind == GQ_D_OPERATION) {
            dputs(&b, ops[d->op]);
            if (d->shorthand)
                dputs(&b, "!");
            dloc(&b, d->loc);
            if (d->name.p) {
                dputs(&b, " ");
                dstr(&b, d->name);
                dloc(&b, d->name_loc);
            }
            if (d->nvars) {
                dputs(&b, " (");
                for (uint32_t j = 0; j < d->nvars; j++) {
                    const struct gq_variable_def *v = &d->vars[j];
                    if (j)
                        dputs(&b, ",");
                    dputs(&b, "$");
                    dstr(&b, v->name);
                    dloc(&b, v->loc);
                    dputs(&b, "/");
                    dloc(&b, v->name_loc);
                    dputs(&b, ":");
                    dtype(&b, v->type);
                    if (v->def) {
                        dputs(&b, "=");
                        dvalue(&b, v->def);
                    }
                    ddirs(&b, v->dirs, v->ndirs);
                }
                dputs(&b, ")");
            }
            ddirs(&b, d->dirs, d->ndirs);
            dputs(&b, " ");
            dsel(&b, d->sel);
        } else if (d->kind == GQ_D_FRAGMENT) {
            dputs(&b, "fragment");
            dloc(&b, d->loc);
            dputs(&b, " ");
            dstr(&b, d->name);
            dloc(&b, d->name_loc);
            dputs(&b, " on ");
            dstr(&b, d->type_cond);
            dloc(&b, d->type_cond_loc);
            ddirs(&b, d->dirs, d->ndirs);
            dputs(&b, " ");
            dsel(&b, d->sel);
        } else {
            dputs(&b, "sdl");
            dloc(&b, d->loc);
            if (d->name.p) {
                dputs(&b, " ");
                dstr(&b, d->name);
                dloc(&b, d->name_loc);
            }
        }
    }
    return b.p;
}

/* Tokens as graphql-js's Lexer gives them: kind, JSON value, line:column. */
static char *dump_tokens(const char *src, size_t n)
{
    struct gq_arena a;
    gq_arena_init(&a, 0);
    struct gq_lexer lx;
    gq_lex_init(&lx, &a, src, (uint32_t)n);
    struct dbuf b = {0};
    dputs(&b, "");
    for (int i = 0; i < 1000; i++) {
        struct gq_token t;
        struct gq_error err;
        if (i)
            dputs(&b, " ");
        if (gq_lex(&lx, &t, &err) < 0) {
            dfmt(&b, "ERR %s %u:%u", err.message, err.locs[0].line, err.locs[0].column);
            break;
        }
        const char *kind = gq_tok_desc(t.kind);
        if (kind[0] == '"')
            dput(&b, kind + 1, strlen(kind) - 2);
        else
            dputs(&b, kind);
        if (t.value.p)
            djson(&b, t.value);
        dloc(&b, t.loc);
        if (t.kind == GQ_TOK_EOF)
            break;
    }
    gq_arena_free(&a);
    return b.p;
}

/* ---- helpers ---------------------------------------------------------------- */

static const struct gq_limits no_limits = {0, 0, 0, 0, 0};

/* Parse with the given limits; the arena is the caller's to free. */
static int parse(struct gq_arena *a, const char *src, size_t n, const struct gq_limits *lim, struct gq_document **doc,
                 struct gq_error *err)
{
    gq_arena_init(a, 0);
    int rc = gq_parse(a, src, n, lim, doc, err);
    if (rc < 0) {
        cr_assert_eq(rc, -1);
        cr_assert_null(*doc);
        cr_assert_eq(err->nlocs, 1);
        cr_assert_geq(err->locs[0].line, 1);
        cr_assert_geq(err->locs[0].column, 1);
        cr_assert_not_null(err->message);
    } else {
        cr_assert_eq(rc, 0);
        cr_assert_not_null(*doc);
    }
    return rc;
}

static void expect_error(const char *src, size_t n, const struct gq_limits *lim, const char *message, uint32_t line,
                         uint32_t column)
{
    struct gq_arena a;
    struct gq_document *doc;
    struct gq_error err;
    int rc = parse(&a, src, n, lim, &doc, &err);
    cr_expect_eq(rc, -1, "%.60s: parsed", src);
    if (rc < 0) {
        cr_expect_str_eq(err.message, message, "%.60s", src);
        cr_expect_eq(err.locs[0].line, line, "%.60s: line %u", src, err.locs[0].line);
        cr_expect_eq(err.locs[0].column, column, "%.60s: column %u", src, err.locs[0].column);
    }
    gq_arena_free(&a);
}

static void expect_parses(const char *src, size_t n, const struct gq_limits *lim)
{
    struct gq_arena a;
    struct gq_document *doc;
    struct gq_error err;
    int rc = parse(&a, src, n, lim, &doc, &err);
    cr_expect_eq(rc, 0, "%.60s: %s", src, rc ? err.message : "");
    gq_arena_free(&a);
}

/* ---- graphql-js's answers (recorded, see the top of this file) ---------------------- */

static const struct shape_case token_cases[] = {
    {S("foo"),
     "Name\"foo\"@1:1 <EOF>@1:4"},
    {S("\nfoo"),
     "Name\"foo\"@2:1 <EOF>@2:4"},
    {S("\rfoo"),
     "Name\"foo\"@2:1 <EOF>@2:4"},
    {S("\r\nfoo"),
     "Name\"foo\"@2:1 <EOF>@2:4"},
    {S("\n\rfoo"),
     "Name\"foo\"@3:1 <EOF>@3:4"},
    {S("\r\r\n\nfoo"),
     "Name\"foo\"@4:1 <EOF>@4:4"},
    {S("\n\n\r\rfoo"),
     "Name\"foo\"@5:1 <EOF>@5:4"},
    {S("\n \r\n \r  foo\n"),
     "Name\"foo\"@4:3 <EOF>@5:1"},
    {S("\357\273\277 foo"),
     "Name\"foo\"@1:3 <EOF>@1:6"},
    {S("\n\n    foo\n\n\n"),
     "Name\"foo\"@3:5 <EOF>@6:1"},
    {S("\t\tfoo\t\t"),
     "Name\"foo\"@1:3 <EOF>@1:8"},
    {S("\n    #comment\n    foo#comment\n"),
     "Name\"foo\"@3:5 <EOF>@4:1"},
    {S(",,,foo,,,"),
     "Name\"foo\"@1:4 <EOF>@1:10"},
    {S("! $ & ( ) ... : = @ [ ] { | }"),
     "!@1:1 $@1:3 &@1:5 (@1:7 )@1:9 ...@1:11 :@1:15 =@1:17 @@1:19 [@1:21 ]@1:23 {@1:25 |@1:27 }@1:29 <EOF>@1:30"},
    {S("4 4.123 -4 9 0 -4.123 0.123 123e4 123E4 123e-4 123e+4 -1.123e4 -1.123E4 -1.123e-4 -1.123e+4 -1.123e4567"),
     "Int\"4\"@1:1 Float\"4.123\"@1:3 Int\"-4\"@1:9 Int\"9\"@1:12 Int\"0\"@1:14 Float\"-4.123\"@1:16 Float\"0.1"
     "23\"@1:23 Float\"123e4\"@1:29 Float\"123E4\"@1:35 Float\"123e-4\"@1:41 Float\"123e+4\"@1:48 Float\"-1.123"
     "e4\"@1:55 Float\"-1.123E4\"@1:64 Float\"-1.123e-4\"@1:73 Float\"-1.123e+4\"@1:83 Float\"-1.123e4567\"@1:9"
     "3 <EOF>@1:104"},
    {S("\"\" \"simple\" \" white space \" \"quote \\\"\" \"escaped \\n\\r\\b\\t\\f\" \"slashes \\\\ \\/\""),
     "String\"\"@1:1 String\"simple\"@1:4 String\" white space \"@1:13 String\"quote \\\"\"@1:29 String\"escape"
     "d \\n\\r\\b\\t\\f\"@1:40 String\"slashes \\\\ /\"@1:61 <EOF>@1:76"},
    {S("\"unicode \\u1234\\u5678\\u90AB\\uCDEF\" \"unicode \\u{1234}\\u{5678}\\u{90AB}\\u{CDEF}\" \"\\u{1F600}"
       "\" \"\\u{0}\" \"\\u{10FFFF}\" \"\\u{00000000}\""),
     "String\"unicode \341\210\264\345\231\270\351\202\253\354\267\257\"@1:1 String\"unicode \341\210\264\345"
     "\231\270\351\202\253\354\267\257\"@1:36 String\"\360\237\230\200\"@1:79 String\"\\u0000\"@1:91 String\""
     "\364\217\277\277\"@1:99 String\"\\u0000\"@1:112 <EOF>@1:126"},
    {S("\"\\uD83D\\uDE00\" \"\\uD800\\uDC00\" \"\\uDBFF\\uDFFF\" \"unescaped \360\237\230\200\" \"max \364\217"
       "\277\277\""),
     "String\"\360\237\230\200\"@1:1 String\"\360\220\200\200\"@1:16 String\"\364\217\277\277\"@1:31 String\"un"
     "escaped \360\237\230\200\"@1:46 String\"max \364\217\277\277\"@1:61 <EOF>@1:69"},
    {S("\"\"\"\"\"\" \"\"\"simple\"\"\" \"\"\" white space \"\"\" \"\"\"contains \" quote\"\"\" \"\"\"contains "
       "\\\"\"\" triple quote\"\"\""),
     "BlockString\"\"@1:1 BlockString\"simple\"@1:8 BlockString\" white space \"@1:21 BlockString\"contains \\"
     "\" quote\"@1:41 BlockString\"contains \\\"\\\"\\\" triple quote\"@1:64 <EOF>@1:96"},
    {S("\"\"\"multi\n"
       "line\"\"\" \"\"\"multi\rline\r\n"
       "normalized\"\"\" \"\"\"unescaped \\n\\r\\b\\t\\f\\u1234\"\"\" \"\"\"slashes \\\\ \\/\"\"\""),
     "BlockString\"multi\\nline\"@1:1 BlockString\"multi\\nline\\nnormalized\"@2:9 BlockString\"unescaped \\\\n"
     "\\\\r\\\\b\\\\t\\\\f\\\\u1234\"@4:15 BlockString\"slashes \\\\\\\\ \\\\/\"@4:48 <EOF>@4:67"},
    {S("\"\"\"\n"
       "\n"
       "        spans\n"
       "          multiple\n"
       "            lines\n"
       "\n"
       "        \"\"\""),
     "BlockString\"spans\\n  multiple\\n    lines\"@1:1 <EOF>@7:12"},
    {S("\"\"\"\n"
       "\n"
       "        spans\n"
       "          multiple\n"
       "            lines\n"
       "\n"
       "        \n"
       " \"\"\" second_token"),
     "BlockString\"spans\\n  multiple\\n    lines\"@1:1 Name\"second_token\"@8:6 <EOF>@8:18"},
    {S("\"\"\" \n"
       "spans \r\n"
       "multiple \n"
       "\rlines \n"
       "\n"
       "\"\"\"\n"
       " second_token"),
     "BlockString\"spans \\nmultiple \\n\\nlines \"@1:1 Name\"second_token\"@8:2 <EOF>@8:14"},
    {S("a-b"),
     "Name\"a\"@1:1 ERR Syntax Error: Invalid number, expected digit but got: \"b\". 1:3"},
    {S("\360\237\230\200"),
     "ERR Syntax Error: Unexpected character: U+1F600. 1:1"},
    {S("\303\251 x"),
     "ERR Syntax Error: Unexpected character: U+00E9. 1:1"},
    {S("# Comment \360\237\230\200\nfoo"),
     "Name\"foo\"@2:1 <EOF>@2:4"},
    {S("\"\360\237\230\200\" x"),
     "String\"\360\237\230\200\"@1:1 Name\"x\"@1:6 <EOF>@1:7"},
    {S("x \"\360\237\230\200\360\237\230\200\" y"),
     "Name\"x\"@1:1 String\"\360\237\230\200\360\237\230\200\"@1:3 Name\"y\"@1:10 <EOF>@1:11"},
    {S("\"\"\"\360\237\230\200\n\360\237\230\200\"\"\" z"),
     "BlockString\"\360\237\230\200\\n\360\237\230\200\"@1:1 Name\"z\"@2:7 <EOF>@2:8"},
    {S("\357\273\277\357\273\277 a \357\273\277 b"),
     "Name\"a\"@1:4 Name\"b\"@1:8 <EOF>@1:9"},
    {S("1\303\237"),
     "Int\"1\"@1:1 ERR Syntax Error: Unexpected character: U+00DF. 1:2"},
    {S("abc_123 _ __typename A0"),
     "Name\"abc_123\"@1:1 Name\"_\"@1:9 Name\"__typename\"@1:11 Name\"A0\"@1:22 <EOF>@1:24"},
};

static const struct shape_case shapes[] = {
    {S("{ a }"),
     "query!@1:1 {@1:1 a@1:3/@1:3}"},
    {S("{a}"),
     "query!@1:1 {@1:1 a@1:2/@1:2}"},
    {S("query { a }"),
     "query@1:1 {@1:7 a@1:9/@1:9}"},
    {S("query Q { a }"),
     "query@1:1 Q@1:7 {@1:9 a@1:11/@1:11}"},
    {S("mutation { a }"),
     "mutation@1:1 {@1:10 a@1:12/@1:12}"},
    {S("mutation M { a }"),
     "mutation@1:1 M@1:10 {@1:12 a@1:14/@1:14}"},
    {S("subscription S { a }"),
     "subscription@1:1 S@1:14 {@1:16 a@1:18/@1:18}"},
    {S("\357\273\277{ a }"),
     "query!@1:2 {@1:2 a@1:4/@1:4}"},
    {S("\357\273\277\357\273\277 { a\357\273\277 }"),
     "query!@1:4 {@1:4 a@1:6/@1:6}"},
    {S("{ a }\n"),
     "query!@1:1 {@1:1 a@1:3/@1:3}"},
    {S("\n\r\n\r{ a }"),
     "query!@4:1 {@4:1 a@4:3/@4:3}"},
    {S(",,,{,a,},,,"),
     "query!@1:4 {@1:4 a@1:6/@1:6}"},
    {S("\t{\ta\t}"),
     "query!@1:2 {@1:2 a@1:4/@1:4}"},
    {S("# c\n{ a }"),
     "query!@2:1 {@2:1 a@2:3/@2:3}"},
    {S("{ a } # trailing"),
     "query!@1:1 {@1:1 a@1:3/@1:3}"},
    {S("{ a #c\r b }"),
     "query!@1:1 {@1:1 a@1:3/@1:3 b@2:2/@2:2}"},
    {S("{ a # c\r\n b }"),
     "query!@1:1 {@1:1 a@1:3/@1:3 b@2:2/@2:2}"},
    {S("{ a: b }"),
     "query!@1:1 {@1:1 a:b@1:3/@1:6}"},
    {S("{ a : b }"),
     "query!@1:1 {@1:1 a:b@1:3/@1:7}"},
    {S("{ a { b { c { d } } } }"),
     "query!@1:1 {@1:1 a@1:3/@1:3 {@1:5 b@1:7/@1:7 {@1:9 c@1:11/@1:11 {@1:13 d@1:15/@1:15}}}}"},
    {S("{ a(x: 1) }"),
     "query!@1:1 {@1:1 a@1:3/@1:3(x@1:5:i1@1:8)}"},
    {S("{ a(x: 1, y: 2) }"),
     "query!@1:1 {@1:1 a@1:3/@1:3(x@1:5:i1@1:8,y@1:11:i2@1:14)}"},
    {S("{ a(x: 1 y: 2) }"),
     "query!@1:1 {@1:1 a@1:3/@1:3(x@1:5:i1@1:8,y@1:10:i2@1:13)}"},
    {S("{ a @d }"),
     "query!@1:1 {@1:1 a@1:3/@1:3 @d@1:5}"},
    {S("{ a @d(x: 1) @e }"),
     "query!@1:1 {@1:1 a@1:3/@1:3 @d@1:5(x@1:8:i1@1:11) @e@1:14}"},
    {S("{ a(x: 1) @d { b } }"),
     "query!@1:1 {@1:1 a@1:3/@1:3(x@1:5:i1@1:8) @d@1:11 {@1:14 b@1:16/@1:16}}"},
    {S("{ ...F }"),
     "query!@1:1 {@1:1 ...F@1:3/@1:6}"},
    {S("{ ...F @d }"),
     "query!@1:1 {@1:1 ...F@1:3/@1:6 @d@1:8}"},
    {S("{ ... on T { a } }"),
     "query!@1:1 {@1:1 ...@1:3 on T@1:10 {@1:12 a@1:14/@1:14}}"},
    {S("{ ... @d { a } }"),
     "query!@1:1 {@1:1 ...@1:3 @d@1:7 {@1:10 a@1:12/@1:12}}"},
    {S("{ ... { a } }"),
     "query!@1:1 {@1:1 ...@1:3 {@1:7 a@1:9/@1:9}}"},
    {S("{ ... on T @d(x: $v) { a } }"),
     "query!@1:1 {@1:1 ...@1:3 on T@1:10 @d@1:12(x@1:15:$v@1:18) {@1:22 a@1:24/@1:24}}"},
    {S("{ ... on on { a } }"),
     "query!@1:1 {@1:1 ...@1:3 on on@1:10 {@1:13 a@1:15/@1:15}}"},
    {S("fragment F on T { a }"),
     "fragment@1:1 F@1:10 on T@1:15 {@1:17 a@1:19/@1:19}"},
    {S("fragment F on T @d { a }"),
     "fragment@1:1 F@1:10 on T@1:15 @d@1:17 {@1:20 a@1:22/@1:22}"},
    {S("fragment query on on { on }"),
     "fragment@1:1 query@1:10 on on@1:19 {@1:22 on@1:24/@1:24}"},
    {S("query Q($a: Int) { a }"),
     "query@1:1 Q@1:7 ($a@1:9/@1:10:Int@1:13) {@1:18 a@1:20/@1:20}"},
    {S("query Q($a: Int!) { a }"),
     "query@1:1 Q@1:7 ($a@1:9/@1:10:Int@1:13!@1:13) {@1:19 a@1:21/@1:21}"},
    {S("query Q($a: [Int]) { a }"),
     "query@1:1 Q@1:7 ($a@1:9/@1:10:[Int@1:14]@1:13) {@1:20 a@1:22/@1:22}"},
    {S("query Q($a: [Int!]!) { a }"),
     "query@1:1 Q@1:7 ($a@1:9/@1:10:[Int@1:14!@1:14]@1:13!@1:13) {@1:22 a@1:24/@1:24}"},
    {S("query Q($a: [[Int]!]) { a }"),
     "query@1:1 Q@1:7 ($a@1:9/@1:10:[[Int@1:15]@1:14!@1:14]@1:13) {@1:23 a@1:25/@1:25}"},
    {S("query Q($a: Int = 1) { a }"),
     "query@1:1 Q@1:7 ($a@1:9/@1:10:Int@1:13=i1@1:19) {@1:22 a@1:24/@1:24}"},
    {S("query Q($a: Int = 1 @d) { a }"),
     "query@1:1 Q@1:7 ($a@1:9/@1:10:Int@1:13=i1@1:19 @d@1:21) {@1:25 a@1:27/@1:27}"},
    {S("query Q($a: Int @d @e(x: 1)) { a }"),
     "query@1:1 Q@1:7 ($a@1:9/@1:10:Int@1:13 @d@1:17 @e@1:20(x@1:23:i1@1:26)) {@1:30 a@1:32/@1:32}"},
    {S("query Q($a: Int, $b: String) { a }"),
     "query@1:1 Q@1:7 ($a@1:9/@1:10:Int@1:13,$b@1:18/@1:19:String@1:22) {@1:30 a@1:32/@1:32}"},
    {S("query Q($a:Int$b:String) { a }"),
     "query@1:1 Q@1:7 ($a@1:9/@1:10:Int@1:12,$b@1:15/@1:16:String@1:18) {@1:26 a@1:28/@1:28}"},
    {S("query ($a: Int) { a }"),
     "query@1:1 ($a@1:8/@1:9:Int@1:12) {@1:17 a@1:19/@1:19}"},
    {S("query @d { a }"),
     "query@1:1 @d@1:7 {@1:10 a@1:12/@1:12}"},
    {S("query Q @d(x: 1) { a }"),
     "query@1:1 Q@1:7 @d@1:9(x@1:12:i1@1:15) {@1:18 a@1:20/@1:20}"},
    {S("{ a(x: 1) }"),
     "query!@1:1 {@1:1 a@1:3/@1:3(x@1:5:i1@1:8)}"},
    {S("{ a(x: -1) }"),
     "query!@1:1 {@1:1 a@1:3/@1:3(x@1:5:i-1@1:8)}"},
    {S("{ a(x: 0) }"),
     "query!@1:1 {@1:1 a@1:3/@1:3(x@1:5:i0@1:8)}"},
    {S("{ a(x: -0) }"),
     "query!@1:1 {@1:1 a@1:3/@1:3(x@1:5:i-0@1:8)}"},
    {S("{ a(x: 1.5) }"),
     "query!@1:1 {@1:1 a@1:3/@1:3(x@1:5:f1.5@1:8)}"},
    {S("{ a(x: -1.5) }"),
     "query!@1:1 {@1:1 a@1:3/@1:3(x@1:5:f-1.5@1:8)}"},
    {S("{ a(x: 1e5) }"),
     "query!@1:1 {@1:1 a@1:3/@1:3(x@1:5:f1e5@1:8)}"},
    {S("{ a(x: 1E5) }"),
     "query!@1:1 {@1:1 a@1:3/@1:3(x@1:5:f1E5@1:8)}"},
    {S("{ a(x: 1e+5) }"),
     "query!@1:1 {@1:1 a@1:3/@1:3(x@1:5:f1e+5@1:8)}"},
    {S("{ a(x: 1e-5) }"),
     "query!@1:1 {@1:1 a@1:3/@1:3(x@1:5:f1e-5@1:8)}"},
    {S("{ a(x: 1.5e5) }"),
     "query!@1:1 {@1:1 a@1:3/@1:3(x@1:5:f1.5e5@1:8)}"},
    {S("{ a(x: 0.0) }"),
     "query!@1:1 {@1:1 a@1:3/@1:3(x@1:5:f0.0@1:8)}"},
    {S("{ a(x: 123456789012345678901234567890) }"),
     "query!@1:1 {@1:1 a@1:3/@1:3(x@1:5:i123456789012345678901234567890@1:8)}"},
    {S("{ a(x: \"\") }"),
     "query!@1:1 {@1:1 a@1:3/@1:3(x@1:5:s\"\"@1:8)}"},
    {S("{ a(x: \"s\") }"),
     "query!@1:1 {@1:1 a@1:3/@1:3(x@1:5:s\"s\"@1:8)}"},
    {S("{ a(x: \"\\\"\") }"),
     "query!@1:1 {@1:1 a@1:3/@1:3(x@1:5:s\"\\\"\"@1:8)}"},
    {S("{ a(x: \"\\\\\") }"),
     "query!@1:1 {@1:1 a@1:3/@1:3(x@1:5:s\"\\\\\"@1:8)}"},
    {S("{ a(x: \"\\/\") }"),
     "query!@1:1 {@1:1 a@1:3/@1:3(x@1:5:s\"/\"@1:8)}"},
    {S("{ a(x: \"\\b\\f\\n\\r\\t\") }"),
     "query!@1:1 {@1:1 a@1:3/@1:3(x@1:5:s\"\\b\\f\\n\\r\\t\"@1:8)}"},
    {S("{ a(x: \"\\u0041\") }"),
     "query!@1:1 {@1:1 a@1:3/@1:3(x@1:5:s\"A\"@1:8)}"},
    {S("{ a(x: \"\\u00e9\") }"),
     "query!@1:1 {@1:1 a@1:3/@1:3(x@1:5:s\"\303\251\"@1:8)}"},
    {S("{ a(x: \"\\u20AC\") }"),
     "query!@1:1 {@1:1 a@1:3/@1:3(x@1:5:s\"\342\202\254\"@1:8)}"},
    {S("{ a(x: \"\\uFFFF\") }"),
     "query!@1:1 {@1:1 a@1:3/@1:3(x@1:5:s\"\357\277\277\"@1:8)}"},
    {S("{ a(x: \"\\u0000\") }"),
     "query!@1:1 {@1:1 a@1:3/@1:3(x@1:5:s\"\\u0000\"@1:8)}"},
    {S("{ a(x: \"\\u{0}\") }"),
     "query!@1:1 {@1:1 a@1:3/@1:3(x@1:5:s\"\\u0000\"@1:8)}"},
    {S("{ a(x: \"\\u{41}\") }"),
     "query!@1:1 {@1:1 a@1:3/@1:3(x@1:5:s\"A\"@1:8)}"},
    {S("{ a(x: \"\\u{1F600}\") }"),
     "query!@1:1 {@1:1 a@1:3/@1:3(x@1:5:s\"\360\237\230\200\"@1:8)}"},
    {S("{ a(x: \"\\u{10FFFF}\") }"),
     "query!@1:1 {@1:1 a@1:3/@1:3(x@1:5:s\"\364\217\277\277\"@1:8)}"},
    {S("{ a(x: \"\\u{00000041}\") }"),
     "query!@1:1 {@1:1 a@1:3/@1:3(x@1:5:s\"A\"@1:8)}"},
    {S("{ a(x: \"\\uD83D\\uDE00\") }"),
     "query!@1:1 {@1:1 a@1:3/@1:3(x@1:5:s\"\360\237\230\200\"@1:8)}"},
    {S("{ a(x: \"\\uD800\\uDC00\") }"),
     "query!@1:1 {@1:1 a@1:3/@1:3(x@1:5:s\"\360\220\200\200\"@1:8)}"},
    {S("{ a(x: \"\\uDBFF\\uDFFF\") }"),
     "query!@1:1 {@1:1 a@1:3/@1:3(x@1:5:s\"\364\217\277\277\"@1:8)}"},
    {S("{ a(x: \"\\ud83d\\ude00\") }"),
     "query!@1:1 {@1:1 a@1:3/@1:3(x@1:5:s\"\360\237\230\200\"@1:8)}"},
    {S("{ a(x: \"\303\251\342\202\254\360\237\230\200\") }"),
     "query!@1:1 {@1:1 a@1:3/@1:3(x@1:5:s\"\303\251\342\202\254\360\237\230\200\"@1:8)}"},
    {S("{ a(x: \"tab\there\") }"),
     "query!@1:1 {@1:1 a@1:3/@1:3(x@1:5:s\"tab\\there\"@1:8)}"},
    {S("{ a(x: \"nul\000byte\") }"),
     "query!@1:1 {@1:1 a@1:3/@1:3(x@1:5:s\"nul\\u0000byte\"@1:8)}"},
    {S("{ a(x: \"\001\037\177\") }"),
     "query!@1:1 {@1:1 a@1:3/@1:3(x@1:5:s\"\\u0001\\u001f\177\"@1:8)}"},
    {S("{ a(x: \"\"\"\"\"\") }"),
     "query!@1:1 {@1:1 a@1:3/@1:3(x@1:5:b\"\"@1:8)}"},
    {S("{ a(x: \"\"\"a\"\"\") }"),
     "query!@1:1 {@1:1 a@1:3/@1:3(x@1:5:b\"a\"@1:8)}"},
    {S("{ a(x: \"\"\" a \"\"\") }"),
     "query!@1:1 {@1:1 a@1:3/@1:3(x@1:5:b\" a \"@1:8)}"},
    {S("{ a(x: \"\"\"a\nb\"\"\") }"),
     "query!@1:1 {@1:1 a@1:3/@1:3(x@1:5:b\"a\\nb\"@1:8)}"},
    {S("{ a(x: \"\"\"a\r\nb\rc\"\"\") }"),
     "query!@1:1 {@1:1 a@1:3/@1:3(x@1:5:b\"a\\nb\\nc\"@1:8)}"},
    {S("{ a(x: \"\"\"\n  a\n    b\n  c\n\"\"\") }"),
     "query!@1:1 {@1:1 a@1:3/@1:3(x@1:5:b\"a\\n  b\\nc\"@1:8)}"},
    {S("{ a(x: \"\"\"  a\n  b\"\"\") }"),
     "query!@1:1 {@1:1 a@1:3/@1:3(x@1:5:b\"  a\\nb\"@1:8)}"},
    {S("{ a(x: \"\"\"\n\n  a\n\n\"\"\") }"),
     "query!@1:1 {@1:1 a@1:3/@1:3(x@1:5:b\"a\"@1:8)}"},
    {S("{ a(x: \"\"\"  \n  \n\"\"\") }"),
     "query!@1:1 {@1:1 a@1:3/@1:3(x@1:5:b\"\"@1:8)}"},
    {S("{ a(x: \"\"\"a \\\"\"\" b\"\"\") }"),
     "query!@1:1 {@1:1 a@1:3/@1:3(x@1:5:b\"a \\\"\\\"\\\" b\"@1:8)}"},
    {S("{ a(x: \"\"\"\\\"\"\"\"\"\") }"),
     "query!@1:1 {@1:1 a@1:3/@1:3(x@1:5:b\"\\\"\\\"\\\"\"@1:8)}"},
    {S("{ a(x: \"\"\"\\n\\t\\u1234\"\"\") }"),
     "query!@1:1 {@1:1 a@1:3/@1:3(x@1:5:b\"\\\\n\\\\t\\\\u1234\"@1:8)}"},
    {S("{ a(x: \"\"\" \"\" \" \"\"\") }"),
     "query!@1:1 {@1:1 a@1:3/@1:3(x@1:5:b\" \\\"\\\" \\\" \"@1:8)}"},
    {S("{ a(x: \"\"\"\t\ta\n\t\tb\"\"\") }"),
     "query!@1:1 {@1:1 a@1:3/@1:3(x@1:5:b\"\\t\\ta\\nb\"@1:8)}"},
    {S("{ a(x: \"\"\"a\n\t b\n \tc\"\"\") }"),
     "query!@1:1 {@1:1 a@1:3/@1:3(x@1:5:b\"a\\nb\\nc\"@1:8)}"},
    {S("{ a(x: \"\"\"\n    a\n  b\n      c\"\"\") }"),
     "query!@1:1 {@1:1 a@1:3/@1:3(x@1:5:b\"  a\\nb\\n    c\"@1:8)}"},
    {S("{ a(x: \"\"\"first\n"
       "   \n"
       "  second\n"
       "    third\n"
       "   \"\"\") }"),
     "query!@1:1 {@1:1 a@1:3/@1:3(x@1:5:b\"first\\n \\nsecond\\n  third\"@1:8)}"},
    {S("{ a(x: \"\"\"\303\251\n  \360\237\230\200\"\"\") }"),
     "query!@1:1 {@1:1 a@1:3/@1:3(x@1:5:b\"\303\251\\n\360\237\230\200\"@1:8)}"},
    {S("{ a(x: true) }"),
     "query!@1:1 {@1:1 a@1:3/@1:3(x@1:5:true@1:8)}"},
    {S("{ a(x: false) }"),
     "query!@1:1 {@1:1 a@1:3/@1:3(x@1:5:false@1:8)}"},
    {S("{ a(x: null) }"),
     "query!@1:1 {@1:1 a@1:3/@1:3(x@1:5:null@1:8)}"},
    {S("{ a(x: ENUM) }"),
     "query!@1:1 {@1:1 a@1:3/@1:3(x@1:5:eENUM@1:8)}"},
    {S("{ a(x: on) }"),
     "query!@1:1 {@1:1 a@1:3/@1:3(x@1:5:eon@1:8)}"},
    {S("{ a(x: query) }"),
     "query!@1:1 {@1:1 a@1:3/@1:3(x@1:5:equery@1:8)}"},
    {S("{ a(x: []) }"),
     "query!@1:1 {@1:1 a@1:3/@1:3(x@1:5:[]@1:8)}"},
    {S("{ a(x: [1]) }"),
     "query!@1:1 {@1:1 a@1:3/@1:3(x@1:5:[i1@1:9]@1:8)}"},
    {S("{ a(x: [1, \"2\", [3]]) }"),
     "query!@1:1 {@1:1 a@1:3/@1:3(x@1:5:[i1@1:9,s\"2\"@1:12,[i3@1:18]@1:17]@1:8)}"},
    {S("{ a(x: {}) }"),
     "query!@1:1 {@1:1 a@1:3/@1:3(x@1:5:{}@1:8)}"},
    {S("{ a(x: {b: 1}) }"),
     "query!@1:1 {@1:1 a@1:3/@1:3(x@1:5:{b@1:9:i1@1:12}@1:8)}"},
    {S("{ a(x: {b: {c: [1]}}) }"),
     "query!@1:1 {@1:1 a@1:3/@1:3(x@1:5:{b@1:9:{c@1:13:[i1@1:17]@1:16}@1:12}@1:8)}"},
    {S("{ a(x: $v) }"),
     "query!@1:1 {@1:1 a@1:3/@1:3(x@1:5:$v@1:8)}"},
    {S("{ a(x: [$v]) }"),
     "query!@1:1 {@1:1 a@1:3/@1:3(x@1:5:[$v@1:9]@1:8)}"},
    {S("{ a(x: {b: $v}) }"),
     "query!@1:1 {@1:1 a@1:3/@1:3(x@1:5:{b@1:9:$v@1:12}@1:8)}"},
    {S("{ a(x: $ v) }"),
     "query!@1:1 {@1:1 a@1:3/@1:3(x@1:5:$v@1:8)}"},
    {S("{ __typename }"),
     "query!@1:1 {@1:1 __typename@1:3/@1:3}"},
    {S("{ a { __typename } }"),
     "query!@1:1 {@1:1 a@1:3/@1:3 {@1:5 __typename@1:7/@1:7}}"},
    {S("query Q { a } query R { b }"),
     "query@1:1 Q@1:7 {@1:9 a@1:11/@1:11} ; query@1:15 R@1:21 {@1:23 b@1:25/@1:25}"},
    {S("{ a } fragment F on T { b }"),
     "query!@1:1 {@1:1 a@1:3/@1:3} ; fragment@1:7 F@1:16 on T@1:21 {@1:23 b@1:25/@1:25}"},
    {S("query true { false }"),
     "query@1:1 true@1:7 {@1:12 false@1:14/@1:14}"},
    {S("query fragment { a }"),
     "query@1:1 fragment@1:7 {@1:16 a@1:18/@1:18}"},
    {S("query on { on }"),
     "query@1:1 on@1:7 {@1:10 on@1:12/@1:12}"},
    {S("mutation subscription { query }"),
     "mutation@1:1 subscription@1:10 {@1:23 query@1:25/@1:25}"},
    {S("query queryName($foo: ComplexType, $site: Site = MOBILE) @onQuery {\n"
       "  whoever123is: node(id: [123, 456]) {\n"
       "    id ,\n"
       "    ... on User @onInlineFragment {\n"
       "      field2 {\n"
       "        id ,\n"
       "        alias: field1(first:10, after:$foo,) @include(if: $foo) {\n"
       "          id,\n"
       "          ...frag @onFragmentSpread\n"
       "        }\n"
       "      }\n"
       "    }\n"
       "    ... @skip(unless: $foo) {\n"
       "      id\n"
       "    }\n"
       "    ... {\n"
       "      id\n"
       "    }\n"
       "  }\n"
       "}\n"
       "\n"
       "mutation likeStory @onMutation {\n"
       "  like(story: 123) @onField {\n"
       "    story {\n"
       "      id @onField\n"
       "    }\n"
       "  }\n"
       "}\n"
       "\n"
       "subscription StoryLikeSubscription(\n"
       "  $input: StoryLikeSubscribeInput @onVariableDefinition\n"
       ")\n"
       "  @onSubscription {\n"
       "  storyLikeSubscribe(input: $input) {\n"
       "    story {\n"
       "      likers {\n"
       "        count\n"
       "      }\n"
       "      likeSentence {\n"
       "        text\n"
       "      }\n"
       "    }\n"
       "  }\n"
       "}\n"
       "\n"
       "fragment frag on Friend @onFragmentDefinition {\n"
       "  foo(\n"
       "    size: $size\n"
       "    bar: $b\n"
       "    obj: {key: \"value\", block: \"\"\"\n"
       "      block string uses \\\"\"\"\n"
       "    \"\"\"}\n"
       "  )\n"
       "}\n"
       "\n"
       "{\n"
       "  unnamed(truthy: true, falsy: false, nullish: null),\n"
       "  query\n"
       "}\n"
       "\n"
       "query { __typename }\n"),
     "query@1:1 queryName@1:7 ($foo@1:17/@1:18:ComplexType@1:23,$site@1:36/@1:37:Site@1:43=eMOBILE@1:50) @onQue"
     "ry@1:58 {@1:67 whoever123is:node@2:3/@2:17(id@2:22:[i123@2:27,i456@2:32]@2:26) {@2:38 id@3:5/@3:5 ...@4:5"
     " on User@4:12 @onInlineFragment@4:17 {@4:35 field2@5:7/@5:7 {@5:14 id@6:9/@6:9 alias:field1@7:9/@7:16(fir"
     "st@7:23:i10@7:29,after@7:33:$foo@7:39) @include@7:46(if@7:55:$foo@7:59) {@7:65 id@8:11/@8:11 ...frag@9:11"
     "/@9:14 @onFragmentSpread@9:19}}} ...@13:5 @skip@13:9(unless@13:15:$foo@13:23) {@13:29 id@14:7/@14:7} ...@"
     "16:5 {@16:9 id@17:7/@17:7}}} ; mutation@22:1 likeStory@22:10 @onMutation@22:20 {@22:32 like@23:3/@23:3(st"
     "ory@23:8:i123@23:15) @onField@23:20 {@23:29 story@24:5/@24:5 {@24:11 id@25:7/@25:7 @onField@25:10}}} ; su"
     "bscription@30:1 StoryLikeSubscription@30:14 ($input@31:3/@31:4:StoryLikeSubscribeInput@31:11 @onVariableD"
     "efinition@31:35) @onSubscription@33:3 {@33:19 storyLikeSubscribe@34:3/@34:3(input@34:22:$input@34:29) {@3"
     "4:37 story@35:5/@35:5 {@35:11 likers@36:7/@36:7 {@36:14 count@37:9/@37:9} likeSentence@39:7/@39:7 {@39:20"
     " text@40:9/@40:9}}}} ; fragment@46:1 frag@46:10 on Friend@46:18 @onFragmentDefinition@46:25 {@46:47 foo@4"
     "7:3/@47:3(size@48:5:$size@48:11,bar@49:5:$b@49:10,obj@50:5:{key@50:11:s\"value\"@50:16,block@50:25:b\"blo"
     "ck string uses \\\"\\\"\\\"\"@50:32}@50:10)} ; query!@56:1 {@56:1 unnamed@57:3/@57:3(truthy@57:11:true@57"
     ":19,falsy@57:25:false@57:32,nullish@57:39:null@57:48) query@58:3/@58:3} ; query@61:1 {@61:7 __typename@61"
     ":9/@61:9}"},
    {S("\"\"\"This is a description\n"
       "of the schema as a whole.\"\"\"\n"
       "schema {\n"
       "  query: QueryType\n"
       "  mutation: MutationType\n"
       "}\n"
       "\n"
       "\"\"\"\n"
       "This is a description\n"
       "of the `Foo` type.\n"
       "\"\"\"\n"
       "type Foo implements Bar & Baz & Two {\n"
       "  \"Description of the `one` field.\"\n"
       "  one: Type\n"
       "  \"\"\"This is a description of the `two` field.\"\"\"\n"
       "  two(\n"
       "    \"\"\"This is a description of the `argument` argument.\"\"\"\n"
       "    argument: InputType!\n"
       "  ): Type\n"
       "  three(argument: InputType, other: String): Int\n"
       "  four(argument: String = \"string\"): String\n"
       "  five(argument: [String] = [\"string\", \"string\"]): String\n"
       "  six(argument: InputType = {key: \"value\"}): Type\n"
       "  seven(argument: Int = null): Type\n"
       "}\n"
       "\n"
       "type AnnotatedObject @onObject(arg: \"value\") {\n"
       "  annotatedField(arg: Type = \"default\" @onArgumentDefinition): Type @onField\n"
       "}\n"
       "\n"
       "type UndefinedType\n"
       "\n"
       "extend type Foo {\n"
       "  seven(argument: [String]): Type\n"
       "}\n"
       "\n"
       "extend type Foo @onType\n"
       "\n"
       "interface Bar {\n"
       "  one: Type\n"
       "  four(argument: String = \"string\"): String\n"
       "}\n"
       "\n"
       "interface AnnotatedInterface @onInterface {\n"
       "  annotatedField(arg: Type @onArgumentDefinition): Type @onField\n"
       "}\n"
       "\n"
       "interface UndefinedInterface\n"
       "\n"
       "extend interface Bar implements Two {\n"
       "  two(argument: InputType!): Type\n"
       "}\n"
       "\n"
       "extend interface Bar @onInterface\n"
       "\n"
       "interface Baz implements Bar & Two {\n"
       "  one: Type\n"
       "  two(argument: InputType!): Type\n"
       "  four(argument: String = \"string\"): String\n"
       "}\n"
       "\n"
       "union Feed =\n"
       "  | Story\n"
       "  | Article\n"
       "  | Advert\n"
       "\n"
       "union AnnotatedUnion @onUnion = A | B\n"
       "\n"
       "union AnnotatedUnionTwo @onUnion = | A | B\n"
       "\n"
       "union UndefinedUnion\n"
       "\n"
       "extend union Feed = Photo | Video\n"
       "\n"
       "extend union Feed @onUnion\n"
       "\n"
       "scalar CustomScalar\n"
       "\n"
       "scalar AnnotatedScalar @onScalar\n"
       "\n"
       "extend scalar CustomScalar @onScalar\n"
       "\n"
       "enum Site {\n"
       "  \"\"\"This is a description of the `DESKTOP` value\"\"\"\n"
       "  DESKTOP\n"
       "\n"
       "  \"\"\"This is a description of the `MOBILE` value\"\"\"\n"
       "  MOBILE\n"
       "\n"
       "  \"This is a description of the `WEB` value\"\n"
       "  WEB\n"
       "}\n"
       "\n"
       "enum AnnotatedEnum @onEnum {\n"
       "  ANNOTATED_VALUE @onEnumValue\n"
       "  OTHER_VALUE\n"
       "}\n"
       "\n"
       "enum UndefinedEnum\n"
       "\n"
       "extend enum Site {\n"
       "  VR\n"
       "}\n"
       "\n"
       "extend enum Site @onEnum\n"
       "\n"
       "input InputType {\n"
       "  key: String!\n"
       "  answer: Int = 42\n"
       "}\n"
       "\n"
       "input AnnotatedInput @onInputObject {\n"
       "  annotatedField: Type @onInputFieldDefinition\n"
       "}\n"
       "\n"
       "input UndefinedInput\n"
       "\n"
       "extend input InputType {\n"
       "  other: Float = 1.23e4 @onInputFieldDefinition\n"
       "}\n"
       "\n"
       "extend input InputType @onInputObject\n"
       "\n"
       "\"\"\"\n"
       "This is a description of the `@skip` directive\n"
       "\"\"\"\n"
       "directive @skip(\n"
       "  \"\"\"This is a description of the `if` argument\"\"\"\n"
       "  if: Boolean! @onArgumentDefinition\n"
       ") on FIELD | FRAGMENT_SPREAD | INLINE_FRAGMENT\n"
       "\n"
       "directive @include(if: Boolean!)\n"
       "  on FIELD\n"
       "   | FRAGMENT_SPREAD\n"
       "   | INLINE_FRAGMENT\n"
       "\n"
       "directive @include2(if: Boolean!) on\n"
       "  | FIELD\n"
       "  | FRAGMENT_SPREAD\n"
       "  | INLINE_FRAGMENT\n"
       "\n"
       "directive @myRepeatableDir(name: String!) repeatable on\n"
       "  | OBJECT\n"
       "  | INTERFACE\n"
       "\n"
       "extend schema @onSchema\n"
       "\n"
       "extend schema @onSchema {\n"
       "  subscription: SubscriptionType\n"
       "}\n"),
     "sdl@1:1 ; sdl@8:1 Foo@12:6 ; sdl@27:1 AnnotatedObject@27:6 ; sdl@31:1 UndefinedType@31:6 ; sdl@33:1 Foo@3"
     "3:13 ; sdl@37:1 Foo@37:13 ; sdl@39:1 Bar@39:11 ; sdl@44:1 AnnotatedInterface@44:11 ; sdl@48:1 UndefinedIn"
     "terface@48:11 ; sdl@50:1 Bar@50:18 ; sdl@54:1 Bar@54:18 ; sdl@56:1 Baz@56:11 ; sdl@62:1 Feed@62:7 ; sdl@6"
     "7:1 AnnotatedUnion@67:7 ; sdl@69:1 AnnotatedUnionTwo@69:7 ; sdl@71:1 UndefinedUnion@71:7 ; sdl@73:1 Feed@"
     "73:14 ; sdl@75:1 Feed@75:14 ; sdl@77:1 CustomScalar@77:8 ; sdl@79:1 AnnotatedScalar@79:8 ; sdl@81:1 Custo"
     "mScalar@81:15 ; sdl@83:1 Site@83:6 ; sdl@94:1 AnnotatedEnum@94:6 ; sdl@99:1 UndefinedEnum@99:6 ; sdl@101:"
     "1 Site@101:13 ; sdl@105:1 Site@105:13 ; sdl@107:1 InputType@107:7 ; sdl@112:1 AnnotatedInput@112:7 ; sdl@"
     "116:1 UndefinedInput@116:7 ; sdl@118:1 InputType@118:14 ; sdl@122:1 InputType@122:14 ; sdl@124:1 skip@127"
     ":12 ; sdl@132:1 include@132:12 ; sdl@137:1 include2@137:12 ; sdl@142:1 myRepeatableDir@142:12 ; sdl@146:1"
     " ; sdl@148:1"},
    {S("query V($a: Int = -0, $b: Float = -1.5e-3, $c: [[String!]]! = [[\"x\"], []], $d: In = {a: {b: [1, {c: n"
       "ull}]}, e: ENUM}) {\n"
       "  f(a: 0, b: -12, c: 1.0, d: 1e10, e: 1E+2, f: 0.5e-7, g: \"\", h: \"\\u00e9\\u{1F600}\\uD83D\\uDE00\\"
       "\"\\\\\\/\\b\\f\\n\\r\\t\", i: \"\"\"  x\n"
       "    y\n"
       "  \"\"\", j: true, k: false, l: null, m: ENUM_VALUE, n: [], o: {}, p: [$a, [$b]], q: {r: $c})\n"
       "}\n"),
     "query@1:1 V@1:7 ($a@1:9/@1:10:Int@1:13=i-0@1:19,$b@1:23/@1:24:Float@1:27=f-1.5e-3@1:35,$c@1:44/@1:45:[[St"
     "ring@1:50!@1:50]@1:49]@1:48!@1:48=[[s\"x\"@1:65]@1:64,[]@1:71]@1:63,$d@1:76/@1:77:In@1:80={a@1:86:{b@1:90"
     ":[i1@1:94,{c@1:98:null@1:101}@1:97]@1:93}@1:89,e@1:110:eENUM@1:113}@1:85) {@1:120 f@2:3/@2:3(a@2:5:i0@2:8"
     ",b@2:11:i-12@2:14,c@2:19:f1.0@2:22,d@2:27:f1e10@2:30,e@2:36:f1E+2@2:39,f@2:45:f0.5e-7@2:48,g@2:56:s\"\"@2"
     ":59,h@2:63:s\"\303\251\360\237\230\200\360\237\230\200\\\"\\\\/\\b\\f\\n\\r\\t\"@2:66,i@2:113:b\"  x\\ny"
     "\"@2:116,j@4:8:true@4:11,k@4:17:false@4:20,l@4:27:null@4:30,m@4:36:eENUM_VALUE@4:39,n@4:51:[]@4:54,o@4:58"
     ":{}@4:61,p@4:65:[$a@4:69,[$b@4:74]@4:73]@4:68,q@4:80:{r@4:84:$c@4:87}@4:83)}"},
    {S("\"op description\" query Q(\"var description\" $v: Int, \"\"\"block\"\"\" $w: String) { a }\n"
       "\"\"\"frag description\"\"\" fragment F on T { a }\n"),
     "query@1:1 Q@1:24 ($v@1:26/@1:45:Int@1:48,$w@1:53/@1:66:String@1:69) {@1:77 a@1:79/@1:79} ; fragment@2:1 F"
     "@2:33 on T@2:38 {@2:40 a@2:42/@2:42}"},
    {S("{ a(s: \"caf\303\251 \360\237\230\200 \342\200\250 tab\there\") # comment \360\237\230\200 \303\251\n"
       " b }"),
     "query!@1:1 {@1:1 a@1:3/@1:3(s@1:5:s\"caf\303\251 \360\237\230\200 \342\200\250 tab\\there\"@1:8) b@2:2/@2"
     ":2}"},
    {S("schema { query: Q }"),
     "sdl@1:1"},
    {S("schema @d { query: Q mutation: M subscription: S }"),
     "sdl@1:1"},
    {S("scalar S"),
     "sdl@1:1 S@1:8"},
    {S("scalar S @d"),
     "sdl@1:1 S@1:8"},
    {S("type T"),
     "sdl@1:1 T@1:6"},
    {S("type T { a: Int }"),
     "sdl@1:1 T@1:6"},
    {S("type T implements I { a: Int }"),
     "sdl@1:1 T@1:6"},
    {S("type T implements & I & J { a: Int }"),
     "sdl@1:1 T@1:6"},
    {S("type T { a(b: Int = 1 @d): [Int!]! @e }"),
     "sdl@1:1 T@1:6"},
    {S("interface I"),
     "sdl@1:1 I@1:11"},
    {S("interface I implements J { a: Int }"),
     "sdl@1:1 I@1:11"},
    {S("union U"),
     "sdl@1:1 U@1:7"},
    {S("union U = A"),
     "sdl@1:1 U@1:7"},
    {S("union U = | A | B"),
     "sdl@1:1 U@1:7"},
    {S("union U @d = A"),
     "sdl@1:1 U@1:7"},
    {S("enum E"),
     "sdl@1:1 E@1:6"},
    {S("enum E { A B }"),
     "sdl@1:1 E@1:6"},
    {S("enum E { \"d\" A @d }"),
     "sdl@1:1 E@1:6"},
    {S("input I"),
     "sdl@1:1 I@1:7"},
    {S("input I { a: Int = 1 }"),
     "sdl@1:1 I@1:7"},
    {S("directive @d on FIELD"),
     "sdl@1:1 d@1:12"},
    {S("directive @d(a: Int) repeatable on | FIELD | QUERY"),
     "sdl@1:1 d@1:12"},
    {S("directive @d on VARIABLE_DEFINITION | DIRECTIVE_DEFINITION | SCHEMA"),
     "sdl@1:1 d@1:12"},
    {S("\"d\" scalar S"),
     "sdl@1:1 S@1:12"},
    {S("\"\"\"d\"\"\" type T"),
     "sdl@1:1 T@1:14"},
    {S("\"d\" directive @x on FIELD"),
     "sdl@1:1 x@1:16"},
    {S("extend schema @d"),
     "sdl@1:1"},
    {S("extend schema { query: Q }"),
     "sdl@1:1"},
    {S("extend scalar S @d"),
     "sdl@1:1 S@1:15"},
    {S("extend type T @d"),
     "sdl@1:1 T@1:13"},
    {S("extend type T implements I"),
     "sdl@1:1 T@1:13"},
    {S("extend type T { a: Int }"),
     "sdl@1:1 T@1:13"},
    {S("extend interface I @d"),
     "sdl@1:1 I@1:18"},
    {S("extend union U = A"),
     "sdl@1:1 U@1:14"},
    {S("extend union U @d"),
     "sdl@1:1 U@1:14"},
    {S("extend enum E { A }"),
     "sdl@1:1 E@1:13"},
    {S("extend enum E @d"),
     "sdl@1:1 E@1:13"},
    {S("extend input I { a: Int }"),
     "sdl@1:1 I@1:14"},
    {S("extend input I @d"),
     "sdl@1:1 I@1:14"},
    {S("{ a } type T { b: Int } { c }"),
     "query!@1:1 {@1:1 a@1:3/@1:3} ; sdl@1:7 T@1:12 ; query!@1:25 {@1:25 c@1:27/@1:27}"},
    {S("\"d\" query { a }"),
     "query@1:1 {@1:11 a@1:13/@1:13}"},
    {S("\"d\" mutation M { a }"),
     "mutation@1:1 M@1:14 {@1:16 a@1:18/@1:18}"},
    {S("query (\"d\" $a: Int) { a }"),
     "query@1:1 ($a@1:8/@1:13:Int@1:16) {@1:21 a@1:23/@1:23}"},
    {S("\"d\" fragment F on T { a }"),
     "fragment@1:1 F@1:14 on T@1:19 {@1:21 a@1:23/@1:23}"},
};

static const struct error_case errors[] = {
    {S("{ a(x: \"\"\"\\\\\"\"\") }"),
     "Syntax Error: Unterminated string.", 1, 19},
    {S("type T implements I J { a: Int }"),
     "Syntax Error: Unexpected Name \"J\".", 1, 21},
    {S(""),
     "Syntax Error: Unexpected <EOF>.", 1, 1},
    {S(" "),
     "Syntax Error: Unexpected <EOF>.", 1, 2},
    {S("\n"),
     "Syntax Error: Unexpected <EOF>.", 2, 1},
    {S("# only a comment"),
     "Syntax Error: Unexpected <EOF>.", 1, 17},
    {S("\357\273\277"),
     "Syntax Error: Unexpected <EOF>.", 1, 2},
    {S("{"),
     "Syntax Error: Expected Name, found <EOF>.", 1, 2},
    {S("}"),
     "Syntax Error: Unexpected \"}\".", 1, 1},
    {S("{ }"),
     "Syntax Error: Expected Name, found \"}\".", 1, 3},
    {S("{ a"),
     "Syntax Error: Expected Name, found <EOF>.", 1, 4},
    {S("{ a }}"),
     "Syntax Error: Unexpected \"}\".", 1, 6},
    {S("{ a } }"),
     "Syntax Error: Unexpected \"}\".", 1, 7},
    {S("query"),
     "Syntax Error: Expected \"{\", found <EOF>.", 1, 6},
    {S("query Q"),
     "Syntax Error: Expected \"{\", found <EOF>.", 1, 8},
    {S("query Q ("),
     "Syntax Error: Expected \"$\", found <EOF>.", 1, 10},
    {S("query Q ()"),
     "Syntax Error: Expected \"$\", found \")\".", 1, 10},
    {S("query Q ($a) { a }"),
     "Syntax Error: Expected \":\", found \")\".", 1, 12},
    {S("query Q ($a:) { a }"),
     "Syntax Error: Expected Name, found \")\".", 1, 13},
    {S("query Q (a: Int) { a }"),
     "Syntax Error: Expected \"$\", found Name \"a\".", 1, 10},
    {S("query Q ($a: Int = $b) { a }"),
     "Syntax Error: Unexpected variable \"$b\" in constant value.", 1, 20},
    {S("query Q ($a: Int = [$b]) { a }"),
     "Syntax Error: Unexpected variable \"$b\" in constant value.", 1, 21},
    {S("query Q ($a: Int = {x: $b}) { a }"),
     "Syntax Error: Unexpected variable \"$b\" in constant value.", 1, 24},
    {S("query Q ($a: Int = $) { a }"),
     "Syntax Error: Unexpected \"$\".", 1, 20},
    {S("query Q ($a: [Int) { a }"),
     "Syntax Error: Expected \"]\", found \")\".", 1, 18},
    {S("query Q ($a: Int!!) { a }"),
     "Syntax Error: Expected \"$\", found \"!\".", 1, 18},
    {S("query Q ($a: !Int) { a }"),
     "Syntax Error: Expected Name, found \"!\".", 1, 14},
    {S("query Q ($: Int) { a }"),
     "Syntax Error: Expected Name, found \":\".", 1, 11},
    {S("query Q ($a: Int = ) { a }"),
     "Syntax Error: Unexpected \")\".", 1, 20},
    {S("query Q ($a: Int @) { a }"),
     "Syntax Error: Expected Name, found \")\".", 1, 19},
    {S("query Q @ { a }"),
     "Syntax Error: Expected Name, found \"{\".", 1, 11},
    {S("query Q @d( { a }"),
     "Syntax Error: Expected Name, found \"{\".", 1, 13},
    {S("query Q @d() { a }"),
     "Syntax Error: Expected Name, found \")\".", 1, 12},
    {S("query Q Q { a }"),
     "Syntax Error: Expected \"{\", found Name \"Q\".", 1, 9},
    {S("query 1 { a }"),
     "Syntax Error: Expected \"{\", found Int \"1\".", 1, 7},
    {S("queryy { a }"),
     "Syntax Error: Unexpected Name \"queryy\".", 1, 1},
    {S("Query { a }"),
     "Syntax Error: Unexpected Name \"Query\".", 1, 1},
    {S("fragment"),
     "Syntax Error: Expected Name, found <EOF>.", 1, 9},
    {S("fragment F"),
     "Syntax Error: Expected \"on\", found <EOF>.", 1, 11},
    {S("fragment F on"),
     "Syntax Error: Expected Name, found <EOF>.", 1, 14},
    {S("fragment F on T"),
     "Syntax Error: Expected \"{\", found <EOF>.", 1, 16},
    {S("fragment on on T { a }"),
     "Syntax Error: Unexpected Name \"on\".", 1, 10},
    {S("fragment \"on\" on T { a }"),
     "Syntax Error: Unexpected String \"on\".", 1, 10},
    {S("fragment F T { a }"),
     "Syntax Error: Expected \"on\", found Name \"T\".", 1, 12},
    {S("fragment F on T {}"),
     "Syntax Error: Expected Name, found \"}\".", 1, 18},
    {S("{ ... }"),
     "Syntax Error: Expected \"{\", found \"}\".", 1, 7},
    {S("{ ...on }"),
     "Syntax Error: Expected Name, found \"}\".", 1, 9},
    {S("{ ... on }"),
     "Syntax Error: Expected Name, found \"}\".", 1, 10},
    {S("{ ... on T }"),
     "Syntax Error: Expected \"{\", found \"}\".", 1, 12},
    {S("{ ... @d }"),
     "Syntax Error: Expected \"{\", found \"}\".", 1, 10},
    {S("{ ...F( }"),
     "Syntax Error: Expected Name, found \"(\".", 1, 7},
    {S("{ a: }"),
     "Syntax Error: Expected Name, found \"}\".", 1, 6},
    {S("{ a: b: c }"),
     "Syntax Error: Expected Name, found \":\".", 1, 7},
    {S("{ :a }"),
     "Syntax Error: Expected Name, found \":\".", 1, 3},
    {S("{ a( }"),
     "Syntax Error: Expected Name, found \"}\".", 1, 6},
    {S("{ a() }"),
     "Syntax Error: Expected Name, found \")\".", 1, 5},
    {S("{ a(b) }"),
     "Syntax Error: Expected \":\", found \")\".", 1, 6},
    {S("{ a(b:) }"),
     "Syntax Error: Unexpected \")\".", 1, 7},
    {S("{ a(b: 1 }"),
     "Syntax Error: Expected Name, found \"}\".", 1, 10},
    {S("{ a(b: [) }"),
     "Syntax Error: Unexpected \")\".", 1, 9},
    {S("{ a(b: [1 }"),
     "Syntax Error: Unexpected \"}\".", 1, 11},
    {S("{ a(b: {) }"),
     "Syntax Error: Expected Name, found \")\".", 1, 9},
    {S("{ a(b: {c}) }"),
     "Syntax Error: Expected \":\", found \"}\".", 1, 10},
    {S("{ a(b: {c: }) }"),
     "Syntax Error: Unexpected \"}\".", 1, 12},
    {S("{ a(b: {c: 1) }"),
     "Syntax Error: Expected Name, found \")\".", 1, 13},
    {S("{ a(b: $) }"),
     "Syntax Error: Expected Name, found \")\".", 1, 9},
    {S("{ a(b: $1) }"),
     "Syntax Error: Expected Name, found Int \"1\".", 1, 9},
    {S("{ a(b: ) }"),
     "Syntax Error: Unexpected \")\".", 1, 8},
    {S("{ a(b: :) }"),
     "Syntax Error: Unexpected \":\".", 1, 8},
    {S("{ a(b: !) }"),
     "Syntax Error: Unexpected \"!\".", 1, 8},
    {S("{ a(b: .5) }"),
     "Syntax Error: Unexpected character: \".\".", 1, 8},
    {S("{ a(b: 1.) }"),
     "Syntax Error: Invalid number, expected digit but got: \")\".", 1, 10},
    {S("{ a(b: 1.e1) }"),
     "Syntax Error: Invalid number, expected digit but got: \"e\".", 1, 10},
    {S("{ a(b: 0x10) }"),
     "Syntax Error: Invalid number, expected digit but got: \"x\".", 1, 9},
    {S("{ a(b: 00) }"),
     "Syntax Error: Invalid number, unexpected digit after 0: \"0\".", 1, 9},
    {S("{ a(b: 01) }"),
     "Syntax Error: Invalid number, unexpected digit after 0: \"1\".", 1, 9},
    {S("{ a(b: -01) }"),
     "Syntax Error: Invalid number, unexpected digit after 0: \"1\".", 1, 10},
    {S("{ a(b: 123abc) }"),
     "Syntax Error: Invalid number, expected digit but got: \"a\".", 1, 11},
    {S("{ a(b: 1e) }"),
     "Syntax Error: Invalid number, expected digit but got: \")\".", 1, 10},
    {S("{ a(b: 1e+) }"),
     "Syntax Error: Invalid number, expected digit but got: \")\".", 1, 11},
    {S("{ a(b: 1E-x) }"),
     "Syntax Error: Invalid number, expected digit but got: \"x\".", 1, 11},
    {S("{ a(b: -) }"),
     "Syntax Error: Invalid number, expected digit but got: \")\".", 1, 9},
    {S("{ a(b: - 1) }"),
     "Syntax Error: Invalid number, expected digit but got: \" \".", 1, 9},
    {S("{ a(b: --1) }"),
     "Syntax Error: Invalid number, expected digit but got: \"-\".", 1, 9},
    {S("{ a(b: 1.2.3) }"),
     "Syntax Error: Invalid number, expected digit but got: \".\".", 1, 11},
    {S("{ a(b: 1_000) }"),
     "Syntax Error: Invalid number, expected digit but got: \"_\".", 1, 9},
    {S("{ a(b: 1\303\237) }"),
     "Syntax Error: Unexpected character: U+00DF.", 1, 9},
    {S("{ a(b: 1.5f) }"),
     "Syntax Error: Invalid number, expected digit but got: \"f\".", 1, 11},
    {S("{ a(b: +1) }"),
     "Syntax Error: Unexpected character: \"+\".", 1, 8},
    {S("{ a(b: 1) .. }"),
     "Syntax Error: Unexpected character: \".\".", 1, 11},
    {S("{ a(b: \"unterminated) }"),
     "Syntax Error: Unterminated string.", 1, 24},
    {S("{ a(b: \"multi\nline\") }"),
     "Syntax Error: Unterminated string.", 1, 14},
    {S("{ a(b: \"multi\rline\") }"),
     "Syntax Error: Unterminated string.", 1, 14},
    {S("{ a(b: \"\\x\") }"),
     "Syntax Error: Invalid character escape sequence: \"\\x\".", 1, 9},
    {S("{ a(b: \"\\z\") }"),
     "Syntax Error: Invalid character escape sequence: \"\\z\".", 1, 9},
    {S("{ a(b: \"\\u1\") }"),
     "Syntax Error: Invalid Unicode escape sequence: \"\\u1\") \".", 1, 9},
    {S("{ a(b: \"\\u12\") }"),
     "Syntax Error: Invalid Unicode escape sequence: \"\\u12\")\".", 1, 9},
    {S("{ a(b: \"\\u0XX1\") }"),
     "Syntax Error: Invalid Unicode escape sequence: \"\\u0XX1\".", 1, 9},
    {S("{ a(b: \"\\uXXXX\") }"),
     "Syntax Error: Invalid Unicode escape sequence: \"\\uXXXX\".", 1, 9},
    {S("{ a(b: \"\\u{}\") }"),
     "Syntax Error: Invalid Unicode escape sequence: \"\\u{}\".", 1, 9},
    {S("{ a(b: \"\\u{FXXX}\") }"),
     "Syntax Error: Invalid Unicode escape sequence: \"\\u{FX\".", 1, 9},
    {S("{ a(b: \"\\u{FFFF\") }"),
     "Syntax Error: Invalid Unicode escape sequence: \"\\u{FFFF\"\".", 1, 9},
    {S("{ a(b: \"\\u{FFFF esc\") }"),
     "Syntax Error: Invalid Unicode escape sequence: \"\\u{FFFF \".", 1, 9},
    {S("{ a(b: \"\\u{110000}\") }"),
     "Syntax Error: Invalid Unicode escape sequence: \"\\u{110000}\".", 1, 9},
    {S("{ a(b: \"\\u{12345678}\") }"),
     "Syntax Error: Invalid Unicode escape sequence: \"\\u{12345678}\".", 1, 9},
    {S("{ a(b: \"\\u{000000000}\") }"),
     "Syntax Error: Invalid Unicode escape sequence: \"\\u{000000000\".", 1, 9},
    {S("{ a(b: \"\\u{000000041}\") }"),
     "Syntax Error: Invalid Unicode escape sequence: \"\\u{000000041\".", 1, 9},
    {S("{ a(b: \"\\uDEAD\") }"),
     "Syntax Error: Invalid Unicode escape sequence: \"\\uDEAD\".", 1, 9},
    {S("{ a(b: \"\\u{DEAD}\") }"),
     "Syntax Error: Invalid Unicode escape sequence: \"\\u{DEAD}\".", 1, 9},
    {S("{ a(b: \"\\u{D83D}\\u{DE00}\") }"),
     "Syntax Error: Invalid Unicode escape sequence: \"\\u{D83D}\".", 1, 9},
    {S("{ a(b: \"\\uDEAD\\uDEAD\") }"),
     "Syntax Error: Invalid Unicode escape sequence: \"\\uDEAD\".", 1, 9},
    {S("{ a(b: \"\\uD800\\uD800\") }"),
     "Syntax Error: Invalid Unicode escape sequence: \"\\uD800\".", 1, 9},
    {S("{ a(b: \"\\uD83D\\not\") }"),
     "Syntax Error: Invalid Unicode escape sequence: \"\\uD83D\".", 1, 9},
    {S("{ a(b: \"\\uD83D\") }"),
     "Syntax Error: Invalid Unicode escape sequence: \"\\uD83D\".", 1, 9},
    {S("{ a(b: \"\\uD83D\\u\") }"),
     "Syntax Error: Invalid Unicode escape sequence: \"\\uD83D\".", 1, 9},
    {S("{ a(b: \"\\uD83D\\uZZZZ\") }"),
     "Syntax Error: Invalid Unicode escape sequence: \"\\uD83D\".", 1, 9},
    {S("{ a(b: \"\\"),
     "Syntax Error: Invalid character escape sequence: \"\\\".", 1, 9},
    {S("{ a(b: \"\\u"),
     "Syntax Error: Invalid Unicode escape sequence: \"\\u\".", 1, 9},
    {S("{ a(b: \"\\u{"),
     "Syntax Error: Invalid Unicode escape sequence: \"\\u{\".", 1, 9},
    {S("{ a(b: \"\\u{1"),
     "Syntax Error: Invalid Unicode escape sequence: \"\\u{1\".", 1, 9},
    {S("{ a(b: \"\\u{\303\251}\") }"),
     "Syntax Error: Invalid Unicode escape sequence: \"\\u{\303\251\".", 1, 9},
    {S("{ a(b: \"\\u{1\360\237\230\200}\") }"),
     "Syntax Error: Invalid Unicode escape sequence: \"\\u{1\357\277\275\".", 1, 9},
    {S("{ a(b: \"\\u\303\251\303\251\303\251\303\251\") }"),
     "Syntax Error: Invalid Unicode escape sequence: \"\\u\303\251\303\251\303\251\303\251\".", 1, 9},
    {S("{ a(b: \"\\u12\360\237\230\200\") }"),
     "Syntax Error: Invalid Unicode escape sequence: \"\\u12\360\237\230\200\".", 1, 9},
    {S("{ a(b: \"\\\303\251\") }"),
     "Syntax Error: Invalid character escape sequence: \"\\\303\251\".", 1, 9},
    {S("{ a(b: \"\\\360\237\230\200\") }"),
     "Syntax Error: Invalid character escape sequence: \"\\\357\277\275\".", 1, 9},
    {S("{ a(b: \"\"\"unterminated) }"),
     "Syntax Error: Unterminated string.", 1, 26},
    {S("{ a(b: \"\"\" \"\"\"\" ) }"),
     "Syntax Error: Unterminated string.", 1, 20},
    {S("\""),
     "Syntax Error: Unterminated string.", 1, 2},
    {S("\"\"\""),
     "Syntax Error: Unterminated string.", 1, 4},
    {S("\"\"\"\""),
     "Syntax Error: Unterminated string.", 1, 5},
    {S("\"no end"),
     "Syntax Error: Unterminated string.", 1, 8},
    {S("'single'"),
     "Syntax Error: Unexpected single quote character ('), did you mean to use a double quote (\")\?", 1, 1},
    {S("{ a(b: 'x') }"),
     "Syntax Error: Unexpected single quote character ('), did you mean to use a double quote (\")\?", 1, 8},
    {S("{ a \? }"),
     "Syntax Error: Unexpected character: \"\?\".", 1, 5},
    {S("{ a ~ }"),
     "Syntax Error: Unexpected character: \"~\".", 1, 5},
    {S("{ a % }"),
     "Syntax Error: Unexpected character: \"%\".", 1, 5},
    {S("{ a ^ }"),
     "Syntax Error: Unexpected character: \"^\".", 1, 5},
    {S("{ a * }"),
     "Syntax Error: Unexpected character: \"*\".", 1, 5},
    {S("{ a + }"),
     "Syntax Error: Unexpected character: \"+\".", 1, 5},
    {S("{ a / }"),
     "Syntax Error: Unexpected character: \"/\".", 1, 5},
    {S("{ a < }"),
     "Syntax Error: Unexpected character: \"<\".", 1, 5},
    {S("{ a > }"),
     "Syntax Error: Unexpected character: \">\".", 1, 5},
    {S("{ a ; }"),
     "Syntax Error: Unexpected character: \";\".", 1, 5},
    {S("{ a \\ }"),
     "Syntax Error: Unexpected character: \"\\\".", 1, 5},
    {S("{ a ` }"),
     "Syntax Error: Unexpected character: \"`\".", 1, 5},
    {S("{ a \303\251 }"),
     "Syntax Error: Unexpected character: U+00E9.", 1, 5},
    {S("{ a \360\237\230\200 }"),
     "Syntax Error: Unexpected character: U+1F600.", 1, 5},
    {S("{ a \000 }"),
     "Syntax Error: Unexpected character: U+0000.", 1, 5},
    {S("{ a \007 }"),
     "Syntax Error: Unexpected character: U+0007.", 1, 5},
    {S("{ a \177 }"),
     "Syntax Error: Unexpected character: U+007F.", 1, 5},
    {S("{ a \302\240 }"),
     "Syntax Error: Unexpected character: U+00A0.", 1, 5},
    {S("{ a \342\200\250 }"),
     "Syntax Error: Unexpected character: U+2028.", 1, 5},
    {S("{ a \013 }"),
     "Syntax Error: Unexpected character: U+000B.", 1, 5},
    {S("{ a \014 }"),
     "Syntax Error: Unexpected character: U+000C.", 1, 5},
    {S("{ a . }"),
     "Syntax Error: Unexpected character: \".\".", 1, 5},
    {S("{ a .. }"),
     "Syntax Error: Unexpected character: \".\".", 1, 5},
    {S("{ a .... }"),
     "Syntax Error: Unexpected character: \".\".", 1, 8},
    {S("{ a & }"),
     "Syntax Error: Expected Name, found \"&\".", 1, 5},
    {S("{ a | }"),
     "Syntax Error: Expected Name, found \"|\".", 1, 5},
    {S("{ a = }"),
     "Syntax Error: Expected Name, found \"=\".", 1, 5},
    {S("{ a ! }"),
     "Syntax Error: Expected Name, found \"!\".", 1, 5},
    {S("{ a $ }"),
     "Syntax Error: Expected Name, found \"$\".", 1, 5},
    {S("{ a [ }"),
     "Syntax Error: Expected Name, found \"[\".", 1, 5},
    {S("{ a ] }"),
     "Syntax Error: Expected Name, found \"]\".", 1, 5},
    {S("{ a ) }"),
     "Syntax Error: Expected Name, found \")\".", 1, 5},
    {S("{ a \"s\" }"),
     "Syntax Error: Expected Name, found String \"s\".", 1, 5},
    {S("{ a \"\"\"s\"\"\" }"),
     "Syntax Error: Expected Name, found BlockString \"s\".", 1, 5},
    {S("{ a 1 }"),
     "Syntax Error: Expected Name, found Int \"1\".", 1, 5},
    {S("{ a 1.5 }"),
     "Syntax Error: Expected Name, found Float \"1.5\".", 1, 5},
    {S("{ \"\" }"),
     "Syntax Error: Expected Name, found String \"\".", 1, 3},
    {S("{ 1 }"),
     "Syntax Error: Expected Name, found Int \"1\".", 1, 3},
    {S("notAnOperation Foo { field }"),
     "Syntax Error: Unexpected Name \"notAnOperation\".", 1, 1},
    {S("..."),
     "Syntax Error: Unexpected \"...\".", 1, 1},
    {S("$"),
     "Syntax Error: Unexpected \"$\".", 1, 1},
    {S("1"),
     "Syntax Error: Unexpected Int \"1\".", 1, 1},
    {S("\"s\""),
     "Syntax Error: Unexpected <EOF>.", 1, 4},
    {S("\"\"\"s\"\"\""),
     "Syntax Error: Unexpected <EOF>.", 1, 8},
    {S("\"s\" 1"),
     "Syntax Error: Unexpected Int \"1\".", 1, 5},
    {S("\"s\""),
     "Syntax Error: Unexpected <EOF>.", 1, 4},
    {S("\"d\" { a }"),
     "Syntax Error: Unexpected description, descriptions are not supported on shorthand queries.", 1, 1},
    {S("\"d\" extend type T @d"),
     "Syntax Error: Unexpected description, only GraphQL definitions support descriptions.", 1, 1},
    {S("\"d\" foo"),
     "Syntax Error: Unexpected description, only GraphQL definitions support descriptions.", 1, 1},
    {S("\"d\" \"e\" query { a }"),
     "Syntax Error: Unexpected String \"e\".", 1, 5},
    {S("extend"),
     "Syntax Error: Unexpected <EOF>.", 1, 7},
    {S("extend foo"),
     "Syntax Error: Unexpected Name \"foo\".", 1, 8},
    {S("extend directive @d on FIELD"),
     "Syntax Error: Unexpected Name \"directive\".", 1, 8},
    {S("extend 1"),
     "Syntax Error: Unexpected Int \"1\".", 1, 8},
    {S("extend scalar S"),
     "Syntax Error: Unexpected <EOF>.", 1, 16},
    {S("extend type T"),
     "Syntax Error: Unexpected <EOF>.", 1, 14},
    {S("extend interface I"),
     "Syntax Error: Unexpected <EOF>.", 1, 19},
    {S("extend union U"),
     "Syntax Error: Unexpected <EOF>.", 1, 15},
    {S("extend enum E"),
     "Syntax Error: Unexpected <EOF>.", 1, 14},
    {S("extend input I"),
     "Syntax Error: Unexpected <EOF>.", 1, 15},
    {S("extend schema"),
     "Syntax Error: Unexpected <EOF>.", 1, 14},
    {S("extend schema {}"),
     "Syntax Error: Expected Name, found \"}\".", 1, 16},
    {S("schema"),
     "Syntax Error: Expected \"{\", found <EOF>.", 1, 7},
    {S("schema {}"),
     "Syntax Error: Expected Name, found \"}\".", 1, 9},
    {S("schema { query }"),
     "Syntax Error: Expected \":\", found \"}\".", 1, 16},
    {S("schema { query: }"),
     "Syntax Error: Expected Name, found \"}\".", 1, 17},
    {S("schema { foo: Q }"),
     "Syntax Error: Unexpected Name \"foo\".", 1, 10},
    {S("scalar"),
     "Syntax Error: Expected Name, found <EOF>.", 1, 7},
    {S("type"),
     "Syntax Error: Expected Name, found <EOF>.", 1, 5},
    {S("type T {}"),
     "Syntax Error: Expected Name, found \"}\".", 1, 9},
    {S("type T { a }"),
     "Syntax Error: Expected \":\", found \"}\".", 1, 12},
    {S("type T { a: }"),
     "Syntax Error: Expected Name, found \"}\".", 1, 13},
    {S("type T { a() : Int }"),
     "Syntax Error: Expected Name, found \")\".", 1, 12},
    {S("type T implements"),
     "Syntax Error: Expected Name, found <EOF>.", 1, 18},
    {S("type T implements & { a: Int }"),
     "Syntax Error: Expected Name, found \"{\".", 1, 21},
    {S("type T implements I & { a: Int }"),
     "Syntax Error: Expected Name, found \"{\".", 1, 23},
    {S("interface"),
     "Syntax Error: Expected Name, found <EOF>.", 1, 10},
    {S("union U ="),
     "Syntax Error: Expected Name, found <EOF>.", 1, 10},
    {S("union U = |"),
     "Syntax Error: Expected Name, found <EOF>.", 1, 12},
    {S("union U = A |"),
     "Syntax Error: Expected Name, found <EOF>.", 1, 14},
    {S("union U = A | | B"),
     "Syntax Error: Expected Name, found \"|\".", 1, 15},
    {S("enum E {}"),
     "Syntax Error: Expected Name, found \"}\".", 1, 9},
    {S("enum E { true }"),
     "Syntax Error: Name \"true\" is reserved and cannot be used for an enum value.", 1, 10},
    {S("enum E { false }"),
     "Syntax Error: Name \"false\" is reserved and cannot be used for an enum value.", 1, 10},
    {S("enum E { null }"),
     "Syntax Error: Name \"null\" is reserved and cannot be used for an enum value.", 1, 10},
    {S("enum E { A, null }"),
     "Syntax Error: Name \"null\" is reserved and cannot be used for an enum value.", 1, 13},
    {S("enum E { \"d\" \"true\" }"),
     "Syntax Error: String \"true\" is reserved and cannot be used for an enum value.", 1, 14},
    {S("enum E { 1 }"),
     "Syntax Error: Expected Name, found Int \"1\".", 1, 10},
    {S("input I {}"),
     "Syntax Error: Expected Name, found \"}\".", 1, 10},
    {S("input I { a }"),
     "Syntax Error: Expected \":\", found \"}\".", 1, 13},
    {S("input I { a: Int = $v }"),
     "Syntax Error: Unexpected variable \"$v\" in constant value.", 1, 20},
    {S("directive"),
     "Syntax Error: Expected \"@\", found <EOF>.", 1, 10},
    {S("directive d on FIELD"),
     "Syntax Error: Expected \"@\", found Name \"d\".", 1, 11},
    {S("directive @d"),
     "Syntax Error: Expected \"on\", found <EOF>.", 1, 13},
    {S("directive @d on"),
     "Syntax Error: Expected Name, found <EOF>.", 1, 16},
    {S("directive @d on FOO"),
     "Syntax Error: Unexpected Name \"FOO\".", 1, 17},
    {S("directive @d on FIELD |"),
     "Syntax Error: Expected Name, found <EOF>.", 1, 24},
    {S("directive @d on | | FIELD"),
     "Syntax Error: Expected Name, found \"|\".", 1, 19},
    {S("directive @d repeatable"),
     "Syntax Error: Expected \"on\", found <EOF>.", 1, 24},
    {S("directive @d() on FIELD"),
     "Syntax Error: Expected Name, found \")\".", 1, 14},
    {S("directive @d on field"),
     "Syntax Error: Unexpected Name \"field\".", 1, 17},
    {S("directive @d @e on FIELD"),
     "Syntax Error: Expected \"on\", found \"@\".", 1, 14},
    {S("type T @d(a: $v)"),
     "Syntax Error: Unexpected variable \"$v\" in constant value.", 1, 14},
    {S("{ a } \?"),
     "Syntax Error: Unexpected character: \"\?\".", 1, 7},
    {S("{ a } query"),
     "Syntax Error: Expected \"{\", found <EOF>.", 1, 12},
    {S("{ a } \"d\""),
     "Syntax Error: Unexpected <EOF>.", 1, 10},
    {S("query Q { a } fragment"),
     "Syntax Error: Expected Name, found <EOF>.", 1, 23},
    {S("{ a(x: \"\"\"a\\\"\"\"\") }"),
     "Syntax Error: Unterminated string.", 1, 20},
    {S("{ a(b: {c: 1, c: 2, }) } }"),
     "Syntax Error: Unexpected \"}\".", 1, 26},
    {S("{ a(b: [[[[[1]]]]) }"),
     "Syntax Error: Unexpected \")\".", 1, 18},
};


/* ---- arena ---------------------------------------------------------------------- */

Test(arena, zeroed_aligned_distinct)
{
    struct gq_arena a;
    gq_arena_init(&a, 0);
    cr_expect_eq(a.cap, (size_t)16 << 20);
    unsigned char *prev = NULL;
    for (size_t n = 0; n < 5000; n += 7) {
        unsigned char *p = gq_alloc(&a, n);
        cr_assert_not_null(p);
        cr_expect_eq((uintptr_t)p % alignof(max_align_t), 0);
        for (size_t i = 0; i < n; i++)
            cr_assert_eq(p[i], 0, "byte %zu of %zu", i, n);
        memset(p, 0xab, n);
        cr_expect(gq_arena_owns(&a, p, n));
        cr_expect_neq(p, prev);
        prev = p;
    }
    int local;
    cr_expect_not(gq_arena_owns(&a, &local, sizeof local));
    gq_arena_free(&a);
    cr_expect_null(a.head);
    cr_expect_eq(a.used, 0);
    /* Usable again after gq_arena_free. */
    cr_expect_not_null(gq_alloc(&a, 10));
    gq_arena_free(&a);
}

Test(arena, cap_counts_bytes_handed_out)
{
    struct gq_arena a;
    gq_arena_init(&a, 1000);
    size_t al = alignof(max_align_t), step = (100 + al - 1) / al * al;
    size_t k = 0;
    while (gq_alloc(&a, 100))
        k++;
    cr_expect_eq(k, 1000 / step);
    cr_expect_eq(a.used, k * step);
    cr_expect_leq(a.used, 1000);
    /* What still fits is handed out; nothing more. */
    size_t left = 1000 - a.used;
    cr_expect_null(gq_alloc(&a, left + 1));
    if (left >= al)
        cr_expect_not_null(gq_alloc(&a, left / al * al));
    cr_expect_null(gq_alloc(&a, 1001));
    cr_expect_null(gq_alloc(&a, SIZE_MAX));
    gq_arena_free(&a);
}

Test(arena, large_blocks_and_strdup)
{
    struct gq_arena a;
    gq_arena_init(&a, 0);
    char *small = gq_alloc(&a, 10);
    char *big = gq_alloc(&a, (size_t)1 << 20);
    char *small2 = gq_alloc(&a, 10);
    cr_assert(small && big && small2);
    cr_expect(gq_arena_owns(&a, big, (size_t)1 << 20));
    cr_expect(gq_arena_owns(&a, small2, 10));
    big[((size_t)1 << 20) - 1] = 1;
    /* The small allocations still share a block: the big one went behind it. */
    cr_expect_lt((size_t)(small2 > small ? small2 - small : small - small2), (size_t)4096);
    char *s = gq_strdup(&a, "abc", 3);
    cr_expect_str_eq(s, "abc");
    cr_expect_str_eq(gq_strdup(&a, "", 0), "");
    cr_expect_null(gq_alloc(&a, ((size_t)16 << 20) + 1));
    gq_arena_free(&a);
}

Test(arena, zero_size)
{
    struct gq_arena a;
    gq_arena_init(&a, 0);
    void *p = gq_alloc(&a, 0), *q = gq_alloc(&a, 0);
    cr_expect(p && q && p != q);
    gq_arena_free(&a);
}

/* ---- lexer -------------------------------------------------------------------- */

Test(lexer, tokens_as_graphql_js)
{
    for (size_t i = 0; i < sizeof token_cases / sizeof token_cases[0]; i++) {
        char *got = dump_tokens(token_cases[i].src, token_cases[i].n);
        cr_expect_str_eq(got, token_cases[i].want, "case %zu", i);
        free(got);
    }
}

Test(lexer, offsets_are_bytes)
{
    struct gq_arena a;
    gq_arena_init(&a, 0);
    struct gq_lexer lx;
    struct gq_token t;
    struct gq_error err;
    static const char src[] = "\xef\xbb\xbf foo \"\xc3\xa9\" \"\\n\" 1.5";
    gq_lex_init(&lx, &a, src, sizeof src - 1);
    cr_assert_eq(gq_lex(&lx, &t, &err), 0);
    cr_expect_eq(t.kind, GQ_TOK_NAME);
    cr_expect_eq(t.start, 4);
    cr_expect_eq(t.end, 7);
    cr_expect_eq(t.loc.column, 3);
    cr_expect_eq(t.value.p, src + 4);
    cr_assert_eq(gq_lex(&lx, &t, &err), 0);
    cr_expect_eq(t.kind, GQ_TOK_STRING);
    cr_expect_eq(t.start, 8);
    cr_expect_eq(t.end, 12);
    /* Without escapes the value is the source itself... */
    cr_expect_eq(t.value.p, src + 9);
    cr_expect_eq(t.value.n, 2);
    cr_assert_eq(gq_lex(&lx, &t, &err), 0);
    /* ...with one, a copy in the arena. */
    cr_expect(gq_arena_owns(&a, t.value.p, t.value.n));
    cr_expect_eq(t.value.n, 1);
    cr_expect_eq(t.value.p[0], '\n');
    cr_assert_eq(gq_lex(&lx, &t, &err), 0);
    cr_expect_eq(t.kind, GQ_TOK_FLOAT);
    cr_expect_eq(t.value.n, 3);
    cr_assert_eq(gq_lex(&lx, &t, &err), 0);
    cr_expect_eq(t.kind, GQ_TOK_EOF);
    cr_expect_eq(t.start, sizeof src - 1);
    cr_assert_eq(gq_lex(&lx, &t, &err), 0);
    cr_expect_eq(t.kind, GQ_TOK_EOF);
    gq_arena_free(&a);
}

/* ---- parser: graphql-js's trees and errors ---------------------------------------- */

static void check_str(struct gq_str s, const char *src, size_t n, const struct gq_arena *a, bool may_be_absent)
{
    if (!s.p) {
        cr_expect(may_be_absent);
        cr_expect_eq(s.n, 0);
        return;
    }
    bool inside = s.p >= src && s.n <= n && (size_t)(s.p - src) <= n - s.n;
    cr_expect(inside || gq_arena_owns(a, s.p, s.n), "string %.*s outside", (int)s.n, s.p);
}

static void check_value(const struct gq_value *v, const char *src, size_t n, const struct gq_arena *a)
{
    check_str(v->s, src, n, a, v->kind == GQ_V_BOOLEAN || v->kind == GQ_V_NULL || v->kind == GQ_V_LIST ||
                                   v->kind == GQ_V_OBJECT);
    for (uint32_t i = 0; v->kind == GQ_V_LIST && i < v->list.n; i++)
        check_value(v->list.v[i], src, n, a);
    for (uint32_t i = 0; v->kind == GQ_V_OBJECT && i < v->obj.n; i++) {
        check_str(v->obj.v[i].name, src, n, a, false);
        check_value(v->obj.v[i].value, src, n, a);
    }
}

static void check_dirs(const struct gq_directive *d, uint32_t nd, const char *src, size_t n,
                       const struct gq_arena *a)
{
    for (uint32_t i = 0; i < nd; i++) {
        check_str(d[i].name, src, n, a, false);
        for (uint32_t j = 0; j < d[i].nargs; j++) {
            check_str(d[i].args[j].name, src, n, a, false);
            check_value(d[i].args[j].value, src, n, a);
        }
    }
}

static void check_set(const struct gq_selection_set *set, const char *src, size_t n, const struct gq_arena *a)
{
    cr_assert_not_null(set);
    cr_expect_gt(set->n, 0);
    for (uint32_t i = 0; i < set->n; i++) {
        const struct gq_selection *s = &set->v[i];
        check_str(s->alias, src, n, a, true);
        check_str(s->name, src, n, a, s->kind == GQ_S_INLINE);
        check_str(s->type_cond, src, n, a, true);
        for (uint32_t j = 0; j < s->nargs; j++) {
            check_str(s->args[j].name, src, n, a, false);
            check_value(s->args[j].value, src, n, a);
        }
        check_dirs(s->dirs, s->ndirs, src, n, a);
        if (s->kind == GQ_S_INLINE)
            cr_expect_not_null(s->sel);
        if (s->sel)
            check_set(s->sel, src, n, a);
    }
}

static void check_type(const struct gq_type *t, const char *src, size_t n, const struct gq_arena *a)
{
    for (; t->kind != GQ_T_NAMED; t = t->of)
        cr_assert_not_null(t->of);
    check_str(t->name, src, n, a, false);
}

/* Every string of the tree lies in the document or in the arena. */
static void check_strings(const struct gq_document *doc, const char *src, size_t n, const struct gq_arena *a)
{
    cr_expect_gt(doc->ndefs, 0);
    for (uint32_t i = 0; i < doc->ndefs; i++) {
        const struct gq_definition *d = &doc->defs[i];
        check_str(d->name, src, n, a, true);
        check_str(d->type_cond, src, n, a, d->kind != GQ_D_FRAGMENT);
        for (uint32_t j = 0; j < d->nvars; j++) {
            check_str(d->vars[j].name, src, n, a, false);
            check_type(d->vars[j].type, src, n, a);
            if (d->vars[j].def)
                check_value(d->vars[j].def, src, n, a);
            check_dirs(d->vars[j].dirs, d->vars[j].ndirs, src, n, a);
        }
        check_dirs(d->dirs, d->ndirs, src, n, a);
        if (d->kind != GQ_D_TYPE_SYSTEM)
            check_set(d->sel, src, n, a);
    }
}

Test(parser, trees_as_graphql_js)
{
    for (size_t i = 0; i < sizeof shapes / sizeof shapes[0]; i++) {
        struct gq_arena a;
        struct gq_document *doc;
        struct gq_error err;
        if (parse(&a, shapes[i].src, shapes[i].n, &no_limits, &doc, &err) < 0) {
            cr_expect_fail("case %zu: %s at %u:%u", i, err.message, err.locs[0].line, err.locs[0].column);
        } else {
            char *got = dump_doc(doc);
            cr_expect_str_eq(got, shapes[i].want, "case %zu", i);
            free(got);
            check_strings(doc, shapes[i].src, shapes[i].n, &a);
        }
        gq_arena_free(&a);
    }
}

Test(parser, errors_as_graphql_js)
{
    cr_expect_geq(sizeof errors / sizeof errors[0], 60);
    for (size_t i = 0; i < sizeof errors / sizeof errors[0]; i++)
        expect_error(errors[i].src, errors[i].n, &no_limits, errors[i].message, errors[i].line, errors[i].column);
}

Test(parser, type_system_definitions_kept_as_name_and_location)
{
    static const char src[] = "schema { query: Q }\n\"d\" type T { a: Int }\ndirective @d on FIELD\nextend schema @d\n"
                              "extend input I @d\nquery { a }";
    struct gq_arena a;
    struct gq_document *doc;
    struct gq_error err;
    cr_assert_eq(parse(&a, S(src), &no_limits, &doc, &err), 0);
    cr_assert_eq(doc->ndefs, 6);
    static const struct {
        const char *name;
        uint32_t line, column, name_column;
    } want[] = {{NULL, 1, 1, 0}, {"T", 2, 1, 10}, {"d", 3, 1, 12}, {NULL, 4, 1, 0}, {"I", 5, 1, 14}};
    for (size_t i = 0; i < 5; i++) {
        const struct gq_definition *d = &doc->defs[i];
        cr_expect_eq(d->kind, GQ_D_TYPE_SYSTEM, "def %zu", i);
        cr_expect_eq(d->loc.line, want[i].line);
        cr_expect_eq(d->loc.column, want[i].column);
        if (!want[i].name) {
            cr_expect_null(d->name.p, "def %zu", i);
            continue;
        }
        cr_expect_eq(d->name.n, strlen(want[i].name));
        cr_expect_eq(memcmp(d->name.p, want[i].name, d->name.n), 0);
        cr_expect_eq(d->name_loc.line, want[i].line);
        cr_expect_eq(d->name_loc.column, want[i].name_column);
    }
    cr_expect_eq(doc->defs[5].kind, GQ_D_OPERATION);
    cr_expect_not(doc->defs[5].shorthand);
    cr_expect_eq(doc->defs[5].loc.line, 6);
    gq_arena_free(&a);
}

Test(parser, no_document)
{
    struct gq_arena a;
    struct gq_document *doc;
    struct gq_error err;
    cr_assert_eq(parse(&a, NULL, 0, NULL, &doc, &err), -1);
    cr_expect_str_eq(err.message, "Syntax Error: Unexpected <EOF>.");
    cr_expect_eq(err.locs[0].column, 1);
    gq_arena_free(&a);
}

/* graphql-js puts a NUL of the source into its message; ours are C strings,
 * so it becomes U+FFFD there (and only there). */
Test(parser, nul_in_messages)
{
    expect_error(S("{ a(x \"nul\0byte\") }"), &no_limits,
                 "Syntax Error: Expected \":\", found String \"nul\xef\xbf\xbd" "byte\".", 1, 7);
    expect_error(S("{ a(x: \"\\uF\0FF\") }"), &no_limits,
                 "Syntax Error: Invalid Unicode escape sequence: \"\\uF\xef\xbf\xbd" "FF\".", 1, 9);
    expect_error(S("{ a(x: \"\\\0\") }"), &no_limits,
                 "Syntax Error: Invalid character escape sequence: \"\\\xef\xbf\xbd\".", 1, 9);
    /* In the value itself a NUL is kept. */
    struct gq_arena a;
    struct gq_document *doc;
    struct gq_error err;
    cr_assert_eq(parse(&a, S("{ a(x: \"\\u0000\") }"), &no_limits, &doc, &err), 0);
    const struct gq_value *v = doc->defs[0].sel->v[0].args[0].value;
    cr_expect_eq(v->s.n, 1);
    cr_expect_eq(v->s.p[0], 0);
    gq_arena_free(&a);
}

/* A JavaScript string cannot hold bytes that are not UTF-8: here they are
 * refused where they stand, as graphql-js refuses a lone surrogate, and
 * shown as U+FFFD (an encoded surrogate as itself). */
Test(parser, bytes_that_are_not_utf8)
{
    expect_error(S("{ a \xff }"), &no_limits, "Syntax Error: Invalid character: U+FFFD.", 1, 5);
    expect_error(S("{ a \xc0\xaf }"), &no_limits, "Syntax Error: Invalid character: U+FFFD.", 1, 5);
    expect_error(S("{ a \xf4\x90\x80\x80 }"), &no_limits, "Syntax Error: Invalid character: U+FFFD.", 1, 5);
    expect_error(S("{ a \xed\xa0\x80 }"), &no_limits, "Syntax Error: Invalid character: U+D800.", 1, 5);
    expect_error(S("{ a \xe2\x82 }"), &no_limits, "Syntax Error: Invalid character: U+FFFD.", 1, 5);
    expect_error(S("{ a(x: \"\xff\") }"), &no_limits, "Syntax Error: Invalid character within String: U+FFFD.", 1,
                 9);
    expect_error(S("{ a(x: \"\xed\xb2\x80\") }"), &no_limits,
                 "Syntax Error: Invalid character within String: U+DC80.", 1, 9);
    expect_error(S("{ a(x: \"\"\"ok\n\xc3\"\"\") }"), &no_limits,
                 "Syntax Error: Invalid character within String: U+FFFD.", 2, 1);
    expect_error(S("# \xc3\xa9 then \xff\n{ a }"), &no_limits, "Syntax Error: Invalid character: U+FFFD.", 1, 10);
    expect_error(S("{ a(x: \"\\u\xff\xfe\") }"), &no_limits,
                 "Syntax Error: Invalid Unicode escape sequence: \"\\u\xef\xbf\xbd\xef\xbf\xbd\")\".", 1, 9);
    /* Well-formed UTF-8 of every length passes, in strings and comments. */
    expect_parses(S("# \xc3\xa9\xe2\x82\xac\xf0\x9f\x98\x80\xf4\x8f\xbf\xbf\n"
                    "{ a(x: \"\xc3\xa9\xe2\x82\xac\xf0\x9f\x98\x80\") }"),
                  &no_limits);
}

/* ---- limits ------------------------------------------------------------------------ */

Test(limits, bytes_refused_before_lexing)
{
    struct gq_limits lim = {10, 0, 0, 0, 0};
    expect_parses(S("{ aaaaaa }"), &lim);
    expect_error(S("{ aaaaaaa }"), &lim, "Syntax Error: Document contains more than 10 bytes. Parsing aborted.", 1,
                 11);
    expect_error(S("{\n a\n bbbbb }"), &lim, "Syntax Error: Document contains more than 10 bytes. Parsing aborted.",
                 3, 6);
    /* Never lexed: what lies past the limit does not matter. */
    expect_error(S("{ a }      \xff\"\"\""), &lim,
                 "Syntax Error: Document contains more than 10 bytes. Parsing aborted.", 1, 11);
    /* Without limits, the defaults. */
    size_t n = 16385;
    char *big = malloc(n);
    cr_assert_not_null(big);
    memset(big, ' ', n);
    big[1] = '{';
    big[3] = 'a';
    big[n - 1] = '}';
    expect_error(big, n, NULL, "Syntax Error: Document contains more than 16384 bytes. Parsing aborted.", 1, 16385);
    expect_parses(big + 1, n - 1, NULL);
    free(big);
}

Test(limits, tokens_as_graphql_js)
{
    /* graphql-js 16's wording, "more that" included. */
    struct gq_limits lim = {0, 3, 0, 0, 0};
    expect_error(S("{ a b c }"), &lim, "Syntax Error: Document contains more that 3 tokens. Parsing aborted.", 1, 7);
    /* Comments are not tokens. */
    expect_error(S("# c\n{ a # c\n b c }"), &lim,
                 "Syntax Error: Document contains more that 3 tokens. Parsing aborted.", 3, 4);
    lim.max_tokens = 4;
    expect_error(S("{ a b c }"), &lim, "Syntax Error: Document contains more that 4 tokens. Parsing aborted.", 1, 9);
    /* Nor is the end. */
    lim.max_tokens = 5;
    expect_parses(S("{ a b c }"), &lim);
    expect_parses(S("{ a b c }   # end"), &lim);

    /* The default: 4000. */
    struct dbuf b = {0};
    dputs(&b, "{");
    for (int i = 0; i < 3998; i++)
        dputs(&b, " a");
    dputs(&b, " }");
    expect_parses(b.p, b.n, NULL);
    b.n -= 2;
    dputs(&b, " b }");
    expect_error(b.p, b.n, NULL, "Syntax Error: Document contains more that 4000 tokens. Parsing aborted.", 1,
                 (uint32_t)b.n);
    free(b.p);
}

/* k copies of `open`, then `middle`, then k copies of `close`, between
 * `head` and `tail`. */
static char *nest(const char *head, const char *open, int k, const char *middle, const char *close, const char *tail,
                  size_t *n)
{
    struct dbuf b = {0};
    dputs(&b, head);
    for (int i = 0; i < k; i++)
        dputs(&b, open);
    dputs(&b, middle);
    for (int i = 0; i < k; i++)
        dputs(&b, close);
    dputs(&b, tail);
    *n = b.n;
    return b.p;
}

static void nesting(const char *head, const char *open, const char *middle, const char *close, const char *tail,
                    int ok, uint32_t column)
{
    size_t n;
    char *s = nest(head, open, ok, middle, close, tail, &n);
    expect_parses(s, n, &no_limits);
    free(s);
    s = nest(head, open, ok + 1, middle, close, tail, &n);
    expect_error(s, n, &no_limits, "Syntax Error: Document is nested deeper than 128 levels. Parsing aborted.", 1,
                 column);
    free(s);
}

Test(limits, nesting_bounded)
{
    cr_expect_eq(GQ_NESTING_MAX, 128);
    /* Selection sets: the 129th '{'. */
    nesting("", "{a", "", "}", "", 128, 257);
    /* Lists and objects in an argument, inside one selection set. */
    nesting("{a(x:", "[", "", "]", ")}", 127, 133);
    nesting("{a(x:", "{b:", "1", "}", ")}", 127, 387);
    /* List types (a type is read before any selection set). */
    nesting("query($v:", "[", "Int", "]", "){a}", 128, 138);
    nesting("query($v:", "[", "Int!", "]!", "){a}", 128, 138);
    /* Mixed: they count together, as they share the stack. */
    nesting("{a{b(x:", "[{c:", "1", "}]", ")}}", 63, 260);
}

static double seconds(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

Test(limits, hostile_sizes, .timeout = 60)
{
    size_t n;
    /* A million openings: refused at the bound, without recursing further. */
    char *s = nest("", "{a", 500000, "", "", "", &n);
    expect_error(s, n, &no_limits, "Syntax Error: Document is nested deeper than 128 levels. Parsing aborted.", 1,
                 257);
    free(s);
    s = nest("{a(x:", "[", 1000000, "", "", "", &n);
    expect_error(s, n, &no_limits, "Syntax Error: Document is nested deeper than 128 levels. Parsing aborted.", 1,
                 133);
    free(s);
    s = nest("{a(x:\"", "a", 1000000, "", "", "", &n);
    expect_error(s, n, &no_limits, "Syntax Error: Unterminated string.", 1, 1000007);
    free(s);
    s = nest("{a(x:\"", "\\u{", 100000, "", "", "", &n);
    expect_error(s, n, &no_limits, "Syntax Error: Invalid Unicode escape sequence: \"\\u{\\\".", 1, 7);
    free(s);
    s = nest("{a(x:[", "\"\\n\\u00e9\",", 100000, "", "", "])}", &n);
    expect_parses(s, n, &no_limits);
    free(s);
}

/* Columns on one long line are counted once, not once per token; and
 * parsing a document four times as long takes about four times as long. */
Test(limits, linear_time, .timeout = 120)
{
    double t[2];
    for (int round = 0; round < 2; round++) {
        int k = round ? 200000 : 50000;
        struct dbuf b = {0};
        dputs(&b, "{");
        for (int i = 0; i < k; i++)
            dputs(&b, " a");
        dputs(&b, " }");
        double best = 1e9;
        for (int rep = 0; rep < 3; rep++) {
            struct gq_arena a;
            struct gq_document *doc;
            struct gq_error err;
            gq_arena_init(&a, (size_t)1 << 30);
            double t0 = seconds();
            int rc = gq_parse(&a, b.p, b.n, &no_limits, &doc, &err);
            double dt = seconds() - t0;
            best = dt < best ? dt : best;
            cr_assert_eq(rc, 0);
            const struct gq_selection_set *set = doc->defs[0].sel;
            cr_assert_eq(set->n, (uint32_t)k);
            cr_expect_eq(set->v[k - 1].loc.line, 1);
            cr_expect_eq(set->v[k - 1].loc.column, (uint32_t)(3 + 2 * (k - 1)));
            gq_arena_free(&a);
        }
        t[round] = best;
        free(b.p);
    }
    cr_expect_lt(t[1], 10 * t[0] + 0.05, "50k fields: %.3fs, 200k: %.3fs", t[0], t[1]);
}

Test(limits, columns_count_utf16)
{
    struct gq_arena a;
    struct gq_document *doc;
    struct gq_error err;
    cr_assert_eq(parse(&a, S("{ a(x: \"\xf0\x9f\x98\x80\xf0\x9f\x98\x80\") b }"), &no_limits, &doc, &err), 0);
    cr_expect_eq(doc->defs[0].sel->v[1].loc.column, 16);
    gq_arena_free(&a);
    cr_assert_eq(parse(&a, S("{ a(x: \"\"\"\xf0\x9f\x98\x80\n\xf0\x9f\x98\x80\xf0\x9f\x98\x80\"\"\") b }"), &no_limits,
                       &doc, &err),
                 0);
    cr_expect_eq(doc->defs[0].sel->v[1].loc.line, 2);
    cr_expect_eq(doc->defs[0].sel->v[1].loc.column, 10);
    gq_arena_free(&a);
}

/* Out of arena at every point of a parse: an error, never a crash or a leak. */
Test(limits, arena_exhausted)
{
    static const char src[] = "query Q($a: [Int!] = [1, 2]) { a(x: \"\\n\", y: \"\"\"  b\n  c\"\"\") @d(e: {f: [$a]})"
                              " { ...F ... on T { g } } }\nfragment F on T { h }\ntype X { y(z: Int = 1): [X!] }";
    bool ok = false;
    size_t cap;
    for (cap = 16; cap < 65536 && !ok; cap += 16) {
        struct gq_arena a;
        gq_arena_init(&a, cap);
        struct gq_document *doc;
        struct gq_error err;
        int rc = gq_parse(&a, S(src), &no_limits, &doc, &err);
        if (rc == 0) {
            ok = true;
            char *got = dump_doc(doc);
            cr_expect(strstr(got, "fragment@3:1 F@3:10"));
            free(got);
        } else {
            cr_expect_str_eq(err.message, "Syntax Error: Document needs more memory than allowed. Parsing aborted.",
                             "cap %zu", cap);
            cr_expect_geq(err.locs[0].line, 1);
            cr_expect_geq(err.locs[0].column, 1);
        }
        gq_arena_free(&a);
    }
    cr_expect(ok, "never parsed");
}
