/* SPDX-License-Identifier: MIT
 * Recursive descent over GraphQL documents (October 2021 specification,
 * section 2 and the type system's grammar), in graphql-js 16's order of
 * reading, so that the first syntax error is the one graphql-js reports,
 * with its message and location. Executable definitions become the tree of
 * graphql/ast.h; type-system definitions and extensions are parsed in full
 * and kept as a name and a location. The lexer is read one token at a time
 * (one more only where graphql-js looks ahead), nothing is read twice, and
 * nesting is bounded by GQ_NESTING_MAX, so the work is linear in the
 * document and the stack is bounded.
 *
 * The grammar, as read here ([Const]: no variables; opt: optional):
 *
 *   Document            Definition+
 *   Definition          OperationDefinition | FragmentDefinition
 *                       | TypeSystemDefinition | TypeSystemExtension
 *   OperationDefinition SelectionSet
 *                       | Description? OperationType Name? VariableDefinitions? Directives? SelectionSet
 *   OperationType       query | mutation | subscription
 *   VariableDefinitions ( VariableDefinition+ )
 *   VariableDefinition  Description? $ Name : Type DefaultValue? Directives[Const]?
 *   DefaultValue        = Value[Const]
 *   SelectionSet        { Selection+ }
 *   Selection           Field | FragmentSpread | InlineFragment
 *   Field               Alias? Name Arguments? Directives? SelectionSet?
 *   Alias               Name :
 *   Arguments           ( Argument+ )
 *   Argument            Name : Value
 *   FragmentSpread      ... FragmentName Directives?
 *   InlineFragment      ... TypeCondition? Directives? SelectionSet
 *   FragmentDefinition  Description? fragment FragmentName TypeCondition Directives? SelectionSet
 *   FragmentName        Name but not `on`
 *   TypeCondition       on NamedType
 *   Value               $ Name | IntValue | FloatValue | StringValue | true | false | null
 *                       | EnumValue | [ Value* ] | { ObjectField* }
 *   ObjectField         Name : Value
 *   Directives          Directive+
 *   Directive           @ Name Arguments?
 *   Type                NamedType | [ Type ] | NamedType ! | [ Type ] !
 *   Description         StringValue
 *
 *   TypeSystemDefinition  Description? then one of
 *     schema Directives[Const]? { OperationType : NamedType ... }
 *     scalar Name Directives[Const]?
 *     type Name ImplementsInterfaces? Directives[Const]? FieldsDefinition?
 *     interface Name ImplementsInterfaces? Directives[Const]? FieldsDefinition?
 *     union Name Directives[Const]? (= |? NamedType (| NamedType)*)?
 *     enum Name Directives[Const]? { (Description? EnumValue Directives[Const]?)+ }?
 *     input Name Directives[Const]? { InputValueDefinition+ }?
 *     directive @ Name ArgumentsDefinition? repeatable? on |? Location (| Location)*
 *   TypeSystemExtension   extend then schema, scalar, type, interface, union, enum or
 *                         input as above, without descriptions, with at least one part
 *   ImplementsInterfaces  implements &? NamedType (& NamedType)*
 *   FieldsDefinition      { (Description? Name ArgumentsDefinition? : Type Directives[Const]?)+ }
 *   ArgumentsDefinition   ( InputValueDefinition+ )
 *   InputValueDefinition  Description? Name : Type DefaultValue? Directives[Const]?
 */
#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#include "graphql/graphql.h"
#include "graphql/lexer.h"

struct parser {
    struct gq_lexer lx;
    struct gq_arena *a;
    struct gq_error *err;
    struct gq_token tok;       /* the current token */
    struct gq_token ahead;     /* the one after it, when has_ahead */
    bool has_ahead;
    uint32_t ntokens, max_tokens;
    uint32_t depth;
};

/* A list being built in the arena: doubled when full, so that a list costs
 * at most about twice its final size. */
struct vec {
    void *v;
    uint32_t n, cap;
};

/* ---- tokens --------------------------------------------------------------- */

#define FAIL(p, pos, ...) \
    gq_syntax_error((p)->a, (const char *)(p)->lx.s, (p)->lx.n, (pos), (p)->err, __VA_ARGS__)

static int fail_nomem(struct parser *p)
{
    return FAIL(p, p->tok.start, "Document needs more memory than allowed. Parsing aborted.");
}

/* graphql-js's getTokenDesc: the kind, then the value quoted if any. */
static const char *tok_text(struct parser *p, const struct gq_token *t)
{
    const char *kind = gq_tok_desc(t->kind);
    if (!t->value.p)
        return kind;
    char *v = gq_printable(p->a, t->value.p, t->value.n);
    size_t kn = strlen(kind), vn = v ? strlen(v) : 0;
    char *s = v ? gq_alloc(p->a, kn + vn + 4) : NULL;
    if (!s)
        return kind;
    memcpy(s, kind, kn);
    memcpy(s + kn, " \"", 2);
    memcpy(s + kn + 2, v, vn);
    memcpy(s + kn + 2 + vn, "\"", 2);
    return s;
}

static int unexpected(struct parser *p, const struct gq_token *t)
{
    return FAIL(p, t->start, "Unexpected %s.", tok_text(p, t));
}

/* The next token becomes current; graphql-js counts every token but EOF
 * (comments are not tokens here) against maxTokens. */
static int advance(struct parser *p)
{
    if (p->has_ahead) {
        p->tok = p->ahead;
        p->has_ahead = false;
    } else if (gq_lex(&p->lx, &p->tok, p->err) < 0) {
        return -1;
    }
    if (p->tok.kind != GQ_TOK_EOF && p->max_tokens && ++p->ntokens > p->max_tokens)
        /* sic: graphql-js 16 words it "more that". */
        return FAIL(p, p->tok.start, "Document contains more that %u tokens. Parsing aborted.", p->max_tokens);
    return 0;
}

/* The token after the current one, without moving (NULL: a lexical error). */
static const struct gq_token *lookahead(struct parser *p)
{
    if (p->tok.kind == GQ_TOK_EOF)
        return &p->tok;
    if (!p->has_ahead) {
        if (gq_lex(&p->lx, &p->ahead, p->err) < 0)
            return NULL;
        p->has_ahead = true;
    }
    return &p->ahead;
}

static bool peek(const struct parser *p, enum gq_tok kind)
{
    return p->tok.kind == kind;
}

static bool value_is(const struct gq_token *t, const char *word)
{
    size_t n = strlen(word);
    return t->value.p && t->value.n == n && memcmp(t->value.p, word, n) == 0;
}

static bool is_keyword(const struct gq_token *t, const char *word)
{
    return t->kind == GQ_TOK_NAME && value_is(t, word);
}

static int expect(struct parser *p, enum gq_tok kind)
{
    if (p->tok.kind != kind)
        return FAIL(p, p->tok.start, "Expected %s, found %s.", gq_tok_desc(kind), tok_text(p, &p->tok));
    return advance(p);
}

/* 1 when the current token is `kind` (then passed), 0 when not, -1 on an error. */
static int expect_optional(struct parser *p, enum gq_tok kind)
{
    if (p->tok.kind != kind)
        return 0;
    return advance(p) < 0 ? -1 : 1;
}

static int expect_keyword(struct parser *p, const char *word)
{
    if (!is_keyword(&p->tok, word))
        return FAIL(p, p->tok.start, "Expected \"%s\", found %s.", word, tok_text(p, &p->tok));
    return advance(p);
}

static int expect_optional_keyword(struct parser *p, const char *word)
{
    if (!is_keyword(&p->tok, word))
        return 0;
    return advance(p) < 0 ? -1 : 1;
}

static void *alloc(struct parser *p, size_t n)
{
    void *v = gq_alloc(p->a, n);
    if (!v)
        fail_nomem(p);
    return v;
}

/* Append a copy of elem (size bytes) to the list. */
static int push(struct parser *p, struct vec *v, const void *elem, size_t size)
{
    if (v->n == v->cap) {
        uint32_t cap = v->cap ? v->cap * 2 : 4;
        char *nv = alloc(p, (size_t)cap * size);
        if (!nv)
            return -1;
        if (v->n)
            memcpy(nv, v->v, (size_t)v->n * size);
        v->v = nv;
        v->cap = cap;
    }
    memcpy((char *)v->v + (size_t)v->n * size, elem, size);
    v->n++;
    return 0;
}

/* One more level of nesting, refused past GQ_NESTING_MAX at the token that
 * would open it. */
static int enter(struct parser *p)
{
    if (p->depth >= GQ_NESTING_MAX)
        return FAIL(p, p->tok.start, "Document is nested deeper than %d levels. Parsing aborted.", GQ_NESTING_MAX);
    p->depth++;
    return 0;
}

static int parse_name(struct parser *p, struct gq_str *name, struct gq_loc *loc)
{
    if (p->tok.kind == GQ_TOK_NAME) {
        *name = p->tok.value;
        if (loc)
            *loc = p->tok.loc;
    }
    return expect(p, GQ_TOK_NAME);
}

/* A description before a definition: read past, not kept. */
static int parse_description(struct parser *p)
{
    if (peek(p, GQ_TOK_STRING) || peek(p, GQ_TOK_BLOCK_STRING))
        return advance(p);
    return 0;
}

/* ---- values, directives, types ------------------------------------------------ */

static int parse_value(struct parser *p, bool is_const, struct gq_value **out);

static int parse_object_field(struct parser *p, bool is_const, struct gq_object_field *f)
{
    f->loc = p->tok.loc;
    if (parse_name(p, &f->name, NULL) < 0 || expect(p, GQ_TOK_COLON) < 0)
        return -1;
    return parse_value(p, is_const, &f->value);
}

static int parse_value(struct parser *p, bool is_const, struct gq_value **out)
{
    struct gq_value *v = alloc(p, sizeof *v);
    if (!v)
        return -1;
    struct gq_token t = p->tok;
    v->loc = t.loc;
    *out = v;
    int rc;
    switch (t.kind) {
    case GQ_TOK_BRACKET_L: {
        v->kind = GQ_V_LIST;
        if (enter(p) < 0 || advance(p) < 0)
            return -1;
        struct vec items = {0};
        while ((rc = expect_optional(p, GQ_TOK_BRACKET_R)) == 0) {
            struct gq_value *item;
            if (parse_value(p, is_const, &item) < 0 || push(p, &items, &item, sizeof item) < 0)
                return -1;
        }
        if (rc < 0)
            return -1;
        p->depth--;
        v->list.v = items.v;
        v->list.n = items.n;
        return 0;
    }
    case GQ_TOK_BRACE_L: {
        v->kind = GQ_V_OBJECT;
        if (enter(p) < 0 || advance(p) < 0)
            return -1;
        struct vec fields = {0};
        while ((rc = expect_optional(p, GQ_TOK_BRACE_R)) == 0) {
            struct gq_object_field f = {0};
            if (parse_object_field(p, is_const, &f) < 0 || push(p, &fields, &f, sizeof f) < 0)
                return -1;
        }
        if (rc < 0)
            return -1;
        p->depth--;
        v->obj.v = fields.v;
        v->obj.n = fields.n;
        return 0;
    }
    case GQ_TOK_INT:
    case GQ_TOK_FLOAT:
        v->kind = t.kind == GQ_TOK_INT ? GQ_V_INT : GQ_V_FLOAT;
        v->s = t.value;
        return advance(p);
    case GQ_TOK_STRING:
    case GQ_TOK_BLOCK_STRING:
        v->kind = GQ_V_STRING;
        v->block = t.kind == GQ_TOK_BLOCK_STRING;
        v->s = t.value;
        return advance(p);
    case GQ_TOK_NAME:
        if (advance(p) < 0)
            return -1;
        if (value_is(&t, "true") || value_is(&t, "false")) {
            v->kind = GQ_V_BOOLEAN;
            v->b = value_is(&t, "true");
        } else if (value_is(&t, "null")) {
            v->kind = GQ_V_NULL;
        } else {
            v->kind = GQ_V_ENUM;
            v->s = t.value;
        }
        return 0;
    case GQ_TOK_DOLLAR:
        if (advance(p) < 0)
            return -1;
        if (is_const) {
            if (peek(p, GQ_TOK_NAME))
                return FAIL(p, t.start, "Unexpected variable \"$%.*s\" in constant value.", (int)p->tok.value.n,
                            p->tok.value.p);
            return unexpected(p, &t);
        }
        v->kind = GQ_V_VARIABLE;
        return parse_name(p, &v->s, NULL);
    default:
        return unexpected(p, &p->tok);
    }
}

static int parse_arguments(struct parser *p, bool is_const, struct gq_argument **args, uint32_t *nargs)
{
    int rc = expect_optional(p, GQ_TOK_PAREN_L);
    if (rc <= 0)
        return rc;
    struct vec v = {0};
    do {
        struct gq_argument arg = {0};
        arg.loc = p->tok.loc;
        if (parse_name(p, &arg.name, NULL) < 0 || expect(p, GQ_TOK_COLON) < 0 ||
            parse_value(p, is_const, &arg.value) < 0 || push(p, &v, &arg, sizeof arg) < 0)
            return -1;
    } while ((rc = expect_optional(p, GQ_TOK_PAREN_R)) == 0);
    *args = v.v;
    *nargs = v.n;
    return rc < 0 ? -1 : 0;
}

static int parse_directives(struct parser *p, bool is_const, struct gq_directive **dirs, uint32_t *ndirs)
{
    struct vec v = {0};
    while (peek(p, GQ_TOK_AT)) {
        struct gq_directive d = {0};
        d.loc = p->tok.loc;
        if (advance(p) < 0 || parse_name(p, &d.name, NULL) < 0 || parse_arguments(p, is_const, &d.args, &d.nargs) < 0 ||
            push(p, &v, &d, sizeof d) < 0)
            return -1;
    }
    *dirs = v.v;
    *ndirs = v.n;
    return 0;
}

static int parse_named_type(struct parser *p, struct gq_str *name, struct gq_loc *loc)
{
    return parse_name(p, name, loc);
}

static int parse_type(struct parser *p, struct gq_type **out)
{
    struct gq_type *t = alloc(p, sizeof *t);
    if (!t)
        return -1;
    struct gq_loc start = p->tok.loc;
    t->loc = start;
    if (peek(p, GQ_TOK_BRACKET_L)) {
        t->kind = GQ_T_LIST;
        if (enter(p) < 0 || advance(p) < 0 || parse_type(p, &t->of) < 0 || expect(p, GQ_TOK_BRACKET_R) < 0)
            return -1;
        p->depth--;
    } else {
        t->kind = GQ_T_NAMED;
        if (parse_named_type(p, &t->name, NULL) < 0)
            return -1;
    }
    int rc = expect_optional(p, GQ_TOK_BANG);
    if (rc < 0)
        return -1;
    if (rc) {
        struct gq_type *nn = alloc(p, sizeof *nn);
        if (!nn)
            return -1;
        nn->kind = GQ_T_NON_NULL;
        nn->loc = start;
        nn->of = t;
        t = nn;
    }
    *out = t;
    return 0;
}

/* ---- executable definitions --------------------------------------------------- */

static int parse_selection_set(struct parser *p, struct gq_selection_set **out);

static int parse_field(struct parser *p, struct gq_selection *s)
{
    s->kind = GQ_S_FIELD;
    s->loc = p->tok.loc;
    struct gq_str first;
    struct gq_loc first_loc;
    if (parse_name(p, &first, &first_loc) < 0)
        return -1;
    int rc = expect_optional(p, GQ_TOK_COLON);
    if (rc < 0)
        return -1;
    if (rc) {
        s->alias = first;
        if (parse_name(p, &s->name, &s->name_loc) < 0)
            return -1;
    } else {
        s->name = first;
        s->name_loc = first_loc;
    }
    if (parse_arguments(p, false, &s->args, &s->nargs) < 0 || parse_directives(p, false, &s->dirs, &s->ndirs) < 0)
        return -1;
    if (peek(p, GQ_TOK_BRACE_L))
        return parse_selection_set(p, &s->sel);
    return 0;
}

/* "..." then a fragment spread, or an inline fragment. */
static int parse_fragment(struct parser *p, struct gq_selection *s)
{
    s->loc = p->tok.loc;
    if (expect(p, GQ_TOK_SPREAD) < 0)
        return -1;
    int on = expect_optional_keyword(p, "on");
    if (on < 0)
        return -1;
    if (!on && peek(p, GQ_TOK_NAME)) {
        s->kind = GQ_S_SPREAD;
        return parse_name(p, &s->name, &s->name_loc) < 0 ? -1 : parse_directives(p, false, &s->dirs, &s->ndirs);
    }
    s->kind = GQ_S_INLINE;
    if (on && parse_named_type(p, &s->type_cond, &s->type_cond_loc) < 0)
        return -1;
    if (parse_directives(p, false, &s->dirs, &s->ndirs) < 0)
        return -1;
    return parse_selection_set(p, &s->sel);
}

static int parse_selection_set(struct parser *p, struct gq_selection_set **out)
{
    struct gq_selection_set *set = alloc(p, sizeof *set);
    if (!set)
        return -1;
    set->loc = p->tok.loc;
    if (!peek(p, GQ_TOK_BRACE_L))
        return expect(p, GQ_TOK_BRACE_L);
    if (enter(p) < 0 || advance(p) < 0)
        return -1;
    struct vec v = {0};
    int rc;
    do {
        struct gq_selection s = {0};
        if (peek(p, GQ_TOK_SPREAD) ? parse_fragment(p, &s) < 0 : parse_field(p, &s) < 0)
            return -1;
        if (push(p, &v, &s, sizeof s) < 0)
            return -1;
    } while ((rc = expect_optional(p, GQ_TOK_BRACE_R)) == 0);
    if (rc < 0)
        return -1;
    p->depth--;
    set->v = v.v;
    set->n = v.n;
    *out = set;
    return 0;
}

/* query | mutation | subscription; graphql-js reads the name first, then
 * complains about it. */
static int parse_operation_type(struct parser *p, enum gq_op *op)
{
    struct gq_token t = p->tok;
    if (expect(p, GQ_TOK_NAME) < 0)
        return -1;
    if (value_is(&t, "query"))
        *op = GQ_OP_QUERY;
    else if (value_is(&t, "mutation"))
        *op = GQ_OP_MUTATION;
    else if (value_is(&t, "subscription"))
        *op = GQ_OP_SUBSCRIPTION;
    else
        return unexpected(p, &t);
    return 0;
}

static int parse_variable_definitions(struct parser *p, struct gq_definition *d)
{
    int rc = expect_optional(p, GQ_TOK_PAREN_L);
    if (rc <= 0)
        return rc;
    struct vec v = {0};
    do {
        struct gq_variable_def var = {0};
        var.loc = p->tok.loc;
        if (parse_description(p) < 0 || expect(p, GQ_TOK_DOLLAR) < 0 || parse_name(p, &var.name, &var.name_loc) < 0 ||
            expect(p, GQ_TOK_COLON) < 0 || parse_type(p, &var.type) < 0)
            return -1;
        if ((rc = expect_optional(p, GQ_TOK_EQUALS)) < 0 || (rc && parse_value(p, true, &var.def) < 0))
            return -1;
        if (parse_directives(p, true, &var.dirs, &var.ndirs) < 0 || push(p, &v, &var, sizeof var) < 0)
            return -1;
    } while ((rc = expect_optional(p, GQ_TOK_PAREN_R)) == 0);
    d->vars = v.v;
    d->nvars = v.n;
    return rc < 0 ? -1 : 0;
}

static int parse_operation(struct parser *p, struct gq_definition *d)
{
    d->kind = GQ_D_OPERATION;
    d->loc = p->tok.loc;
    if (peek(p, GQ_TOK_BRACE_L)) {
        d->op = GQ_OP_QUERY;
        d->shorthand = true;
        return parse_selection_set(p, &d->sel);
    }
    if (parse_description(p) < 0 || parse_operation_type(p, &d->op) < 0)
        return -1;
    if (peek(p, GQ_TOK_NAME) && parse_name(p, &d->name, &d->name_loc) < 0)
        return -1;
    if (parse_variable_definitions(p, d) < 0 || parse_directives(p, false, &d->dirs, &d->ndirs) < 0)
        return -1;
    return parse_selection_set(p, &d->sel);
}

static int parse_fragment_definition(struct parser *p, struct gq_definition *d)
{
    d->kind = GQ_D_FRAGMENT;
    d->loc = p->tok.loc;
    if (parse_description(p) < 0 || expect_keyword(p, "fragment") < 0)
        return -1;
    /* graphql-js compares the value whatever the token's kind. */
    if (value_is(&p->tok, "on"))
        return unexpected(p, &p->tok);
    if (parse_name(p, &d->name, &d->name_loc) < 0 || expect_keyword(p, "on") < 0 ||
        parse_named_type(p, &d->type_cond, &d->type_cond_loc) < 0)
        return -1;
    if (parse_directives(p, false, &d->dirs, &d->ndirs) < 0)
        return -1;
    return parse_selection_set(p, &d->sel);
}

/* ---- type-system definitions and extensions (parsed, then dropped) ------------ */

/* Parsed for their errors; what they build stays in the arena unused. */
static int skip_directives(struct parser *p, uint32_t *n)
{
    struct gq_directive *dirs;
    uint32_t k = 0;
    if (parse_directives(p, true, &dirs, &k) < 0)
        return -1;
    if (n)
        *n = k;
    return 0;
}

/* &? NamedType (& NamedType)*, or |? NamedType (| NamedType)*. */
static int delimited_named_types(struct parser *p, enum gq_tok delim)
{
    if (expect_optional(p, delim) < 0)
        return -1;
    int rc;
    do {
        struct gq_str name;
        if (parse_named_type(p, &name, NULL) < 0)
            return -1;
    } while ((rc = expect_optional(p, delim)) == 1);
    return rc;
}

/* 1 when there was an `implements` clause. */
static int skip_implements(struct parser *p)
{
    int rc = expect_optional_keyword(p, "implements");
    if (rc <= 0)
        return rc;
    return delimited_named_types(p, GQ_TOK_AMP) < 0 ? -1 : 1;
}

/* OperationType : NamedType */
static int skip_operation_type_def(struct parser *p)
{
    enum gq_op op;
    struct gq_str name;
    if (parse_operation_type(p, &op) < 0 || expect(p, GQ_TOK_COLON) < 0)
        return -1;
    return parse_named_type(p, &name, NULL);
}

/* open item+ close, when `open` is there: 1 if it was, 0 if not, -1. */
static int optional_many(struct parser *p, enum gq_tok open, int (*item)(struct parser *), enum gq_tok close)
{
    int rc = expect_optional(p, open);
    if (rc <= 0)
        return rc;
    do {
        if (item(p) < 0)
            return -1;
    } while ((rc = expect_optional(p, close)) == 0);
    return rc < 0 ? -1 : 1;
}

/* Description? Name : Type DefaultValue? Directives[Const]? */
static int skip_input_value_def(struct parser *p)
{
    struct gq_str name;
    struct gq_type *type;
    struct gq_value *def;
    if (parse_description(p) < 0 || parse_name(p, &name, NULL) < 0 || expect(p, GQ_TOK_COLON) < 0 ||
        parse_type(p, &type) < 0)
        return -1;
    int rc = expect_optional(p, GQ_TOK_EQUALS);
    if (rc < 0 || (rc && parse_value(p, true, &def) < 0))
        return -1;
    return skip_directives(p, NULL);
}

/* Description? Name ArgumentsDefinition? : Type Directives[Const]? */
static int skip_field_def(struct parser *p)
{
    struct gq_str name;
    struct gq_type *type;
    if (parse_description(p) < 0 || parse_name(p, &name, NULL) < 0 ||
        optional_many(p, GQ_TOK_PAREN_L, skip_input_value_def, GQ_TOK_PAREN_R) < 0 ||
        expect(p, GQ_TOK_COLON) < 0 || parse_type(p, &type) < 0)
        return -1;
    return skip_directives(p, NULL);
}

/* Description? EnumValue Directives[Const]? */
static int skip_enum_value_def(struct parser *p)
{
    if (parse_description(p) < 0)
        return -1;
    /* graphql-js compares the value whatever the token's kind. */
    if (value_is(&p->tok, "true") || value_is(&p->tok, "false") || value_is(&p->tok, "null"))
        return FAIL(p, p->tok.start, "%s is reserved and cannot be used for an enum value.", tok_text(p, &p->tok));
    struct gq_str name;
    if (parse_name(p, &name, NULL) < 0)
        return -1;
    return skip_directives(p, NULL);
}

static int skip_directive_location(struct parser *p)
{
    static const char *const locations[] = {
        "QUERY", "MUTATION", "SUBSCRIPTION", "FIELD", "FRAGMENT_DEFINITION", "FRAGMENT_SPREAD",
        "INLINE_FRAGMENT", "VARIABLE_DEFINITION", "SCHEMA", "SCALAR", "OBJECT", "FIELD_DEFINITION",
        "ARGUMENT_DEFINITION", "INTERFACE", "UNION", "ENUM", "ENUM_VALUE", "INPUT_OBJECT",
        "INPUT_FIELD_DEFINITION", "DIRECTIVE_DEFINITION",
    };
    struct gq_token t = p->tok;
    struct gq_str name;
    if (parse_name(p, &name, NULL) < 0)
        return -1;
    for (size_t i = 0; i < sizeof locations / sizeof locations[0]; i++)
        if (value_is(&t, locations[i]))
            return 0;
    return unexpected(p, &t);
}

/* The parts after a type-system keyword and the type's name, shared by
 * definitions and extensions. Sets *any when a part is present (an
 * extension needs one). */
static int skip_type_body(struct parser *p, const struct gq_token *kw, bool *any)
{
    uint32_t ndirs = 0;
    int rc = 0, more = 0;
    if (is_keyword(kw, "type") || is_keyword(kw, "interface")) {
        if ((rc = skip_implements(p)) < 0 || skip_directives(p, &ndirs) < 0 ||
            (more = optional_many(p, GQ_TOK_BRACE_L, skip_field_def, GQ_TOK_BRACE_R)) < 0)
            return -1;
    } else if (is_keyword(kw, "union")) {
        if (skip_directives(p, &ndirs) < 0 || (rc = expect_optional(p, GQ_TOK_EQUALS)) < 0 ||
            (rc && delimited_named_types(p, GQ_TOK_PIPE) < 0))
            return -1;
    } else if (is_keyword(kw, "enum")) {
        if (skip_directives(p, &ndirs) < 0 ||
            (more = optional_many(p, GQ_TOK_BRACE_L, skip_enum_value_def, GQ_TOK_BRACE_R)) < 0)
            return -1;
    } else if (is_keyword(kw, "input")) {
        if (skip_directives(p, &ndirs) < 0 ||
            (more = optional_many(p, GQ_TOK_BRACE_L, skip_input_value_def, GQ_TOK_BRACE_R)) < 0)
            return -1;
    } else {                       /* scalar */
        if (skip_directives(p, &ndirs) < 0)
            return -1;
    }
    *any = rc > 0 || more > 0 || ndirs > 0;
    return 0;
}

static int parse_type_system_definition(struct parser *p, struct gq_definition *d)
{
    d->kind = GQ_D_TYPE_SYSTEM;
    d->loc = p->tok.loc;
    if (parse_description(p) < 0)
        return -1;
    struct gq_token kw = p->tok;
    if (advance(p) < 0)
        return -1;
    if (is_keyword(&kw, "schema")) {
        if (skip_directives(p, NULL) < 0 || expect(p, GQ_TOK_BRACE_L) < 0)
            return -1;
        int rc;
        do {
            if (skip_operation_type_def(p) < 0)
                return -1;
        } while ((rc = expect_optional(p, GQ_TOK_BRACE_R)) == 0);
        return rc < 0 ? -1 : 0;
    }
    if (is_keyword(&kw, "directive")) {
        if (expect(p, GQ_TOK_AT) < 0 || parse_name(p, &d->name, &d->name_loc) < 0 ||
            optional_many(p, GQ_TOK_PAREN_L, skip_input_value_def, GQ_TOK_PAREN_R) < 0 ||
            expect_optional_keyword(p, "repeatable") < 0 || expect_keyword(p, "on") < 0 ||
            expect_optional(p, GQ_TOK_PIPE) < 0)
            return -1;
        int rc;
        do {
            if (skip_directive_location(p) < 0)
                return -1;
        } while ((rc = expect_optional(p, GQ_TOK_PIPE)) == 1);
        return rc;
    }
    bool any;
    if (parse_name(p, &d->name, &d->name_loc) < 0)
        return -1;
    return skip_type_body(p, &kw, &any);
}

static int parse_type_system_extension(struct parser *p, struct gq_definition *d)
{
    d->kind = GQ_D_TYPE_SYSTEM;
    d->loc = p->tok.loc;
    const struct gq_token *next = lookahead(p);
    if (!next)
        return -1;
    static const char *const kinds[] = {"schema", "scalar", "type", "interface", "union", "enum", "input"};
    bool known = false;
    for (size_t i = 0; i < sizeof kinds / sizeof kinds[0]; i++)
        known = known || is_keyword(next, kinds[i]);
    if (!known)
        return unexpected(p, next);
    struct gq_token kw = *next;
    if (advance(p) < 0 || advance(p) < 0)
        return -1;
    bool any;
    if (is_keyword(&kw, "schema")) {
        uint32_t ndirs;
        int more;
        if (skip_directives(p, &ndirs) < 0 ||
            (more = optional_many(p, GQ_TOK_BRACE_L, skip_operation_type_def, GQ_TOK_BRACE_R)) < 0)
            return -1;
        any = ndirs > 0 || more > 0;
    } else if (parse_name(p, &d->name, &d->name_loc) < 0 || skip_type_body(p, &kw, &any) < 0) {
        return -1;
    }
    if (!any)
        return unexpected(p, &p->tok);
    return 0;
}

/* ---- document ----------------------------------------------------------------- */

static int parse_definition(struct parser *p, struct gq_definition *d)
{
    if (peek(p, GQ_TOK_BRACE_L))
        return parse_operation(p, d);
    bool described = peek(p, GQ_TOK_STRING) || peek(p, GQ_TOK_BLOCK_STRING);
    const struct gq_token *kw = described ? lookahead(p) : &p->tok;
    if (!kw)
        return -1;
    if (described && kw->kind == GQ_TOK_BRACE_L)
        return FAIL(p, p->tok.start, "Unexpected description, descriptions are not supported on shorthand queries.");
    if (kw->kind == GQ_TOK_NAME) {
        static const char *const type_system[] = {"schema", "scalar", "type",  "interface",
                                                  "union",  "enum",   "input", "directive"};
        for (size_t i = 0; i < sizeof type_system / sizeof type_system[0]; i++)
            if (is_keyword(kw, type_system[i]))
                return parse_type_system_definition(p, d);
        if (is_keyword(kw, "query") || is_keyword(kw, "mutation") || is_keyword(kw, "subscription"))
            return parse_operation(p, d);
        if (is_keyword(kw, "fragment"))
            return parse_fragment_definition(p, d);
        if (described)
            return FAIL(p, p->tok.start, "Unexpected description, only GraphQL definitions support descriptions.");
        if (is_keyword(kw, "extend"))
            return parse_type_system_extension(p, d);
    }
    return unexpected(p, kw);
}

int gq_parse(struct gq_arena *a, const char *src, size_t n, const struct gq_limits *lim, struct gq_document **doc,
             struct gq_error *err)
{
    static const struct gq_limits defaults = GQ_LIMITS_DEFAULT;
    if (!lim)
        lim = &defaults;
    if (!src)
        src = "";
    *doc = NULL;
    memset(err, 0, sizeof *err);
    /* Offsets are 32-bit; a size limit applies before any byte is read. */
    uint32_t max_bytes = lim->max_bytes && lim->max_bytes < INT32_MAX ? lim->max_bytes : INT32_MAX;
    if (n > max_bytes)
        return gq_syntax_error(a, src, max_bytes, max_bytes, err,
                               "Document contains more than %u bytes. Parsing aborted.", max_bytes);

    struct parser p = {.a = a, .err = err, .max_tokens = lim->max_tokens};
    gq_lex_init(&p.lx, a, src, (uint32_t)n);
    p.tok.kind = GQ_TOK_SOF;
    p.tok.loc = (struct gq_loc){1, 1};
    struct gq_document *d = alloc(&p, sizeof *d);
    if (!d || advance(&p) < 0)
        return -1;
    struct vec defs = {0};
    int rc;
    do {
        struct gq_definition def = {0};
        if (parse_definition(&p, &def) < 0 || push(&p, &defs, &def, sizeof def) < 0)
            return -1;
    } while ((rc = expect_optional(&p, GQ_TOK_EOF)) == 0);
    if (rc < 0)
        return -1;
    d->defs = defs.v;
    d->ndefs = defs.n;
    *doc = d;
    return 0;
}
