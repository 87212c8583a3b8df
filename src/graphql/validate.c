/* SPDX-License-Identifier: MIT
 * Validation of an executable GraphQL document: graphql-js 16's
 * specifiedRules that apply to one, run as graphql-js runs them (one visit
 * of the document, every rule at each node in the list's order, with
 * graphql-js's TypeInfo), so that the errors come out in the same order
 * with the same messages and locations; then hookd's own checks (the
 * introspection switch, depth, cost). Every rule is linear or bounded:
 * graphql-js's work budgets (fragment work, overlapping fields) are kept as
 * it keeps them, and recursion that follows fragments is capped. */
#include <setjmp.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "graphql/graphql.h"

#define MAX_ERRORS 100                 /* graphql-js's default maxErrors */
#define FRAGMENT_WORK 50000            /* ValidationContext's fragment work budget */
#define OVERLAP_BUDGET 500000          /* OverlappingFieldsCanBeMerged's complexity budget */
#define CONFLICT_DETAIL_MAX 1000       /* ... its MAX_CONFLICT_DETAIL_LENGTH */
#define CONFLICT_NODES_MAX 20          /* ... its MAX_CONFLICT_NODES */
#define INTRO_LISTS_MAX 3              /* MaxIntrospectionDepthRule's MAX_LISTS_DEPTH */
#define SUGGESTIONS_MAX 5              /* didYouMean's */
/* Recursion that follows fragment spreads (a chain of fragments can be as
 * long as the document allows, unlike nesting, which the parser caps at
 * GQ_NESTING_MAX) stops here with an error rather than run out of stack. */
#define RECURSION_MAX 1000
/* Locations an error can hold; graphql-js's can hold more. */
#define LOCS_MAX (sizeof(((struct gq_error *)0)->locs) / sizeof(struct gq_loc))

static const char MSG_TOO_MANY[] = "Too many validation errors, error limit reached. Validation aborted.";
static const char MSG_ABORTED[] = "Validation aborted.";
static const char MSG_NOMEM[] = "The document needs more memory to validate than allowed. Validation aborted.";
static const char MSG_RECURSION[] = "The document spreads fragments too deeply to validate. Validation aborted.";

/* ---- context ----------------------------------------------------------------- */

enum mode {
    M_PRE,                     /* intern names, collect variable usages; no rule runs */
    M_SPEC,                    /* graphql-js's rules */
    M_INTRO,                   /* NoSchemaIntrospectionCustomRule, when introspection is off */
};

struct vec {
    void *v;
    uint32_t n, cap;
};

/* A variable as ValidationContext.getVariableUsages sees it. */
struct usage {
    uint32_t id;               /* the name */
    struct gq_loc loc;         /* of the '$' */
    const struct gq_tref *type; /* the input type expected there, NULL: unknown */
    bool loc_default;          /* the position has a default value */
};

/* Per definition of the document, filled as needed. */
struct defx {
    struct vec usages;         /* struct usage, in document order (M_PRE) */
    const struct gq_selection **spreads; /* getFragmentSpreads order */
    uint32_t nspreads;
    bool spreads_done;
};

/* Open addressing on a pair of 64-bit keys (pointers, ids). */
struct pent {
    uint64_t a, b;
    uintptr_t v;
    bool used;
};
struct pmap {
    struct pent *t;
    uint32_t cap, n;
};

struct nent {
    const char *p;
    uint32_t n, id;
    uint32_t h;
    bool used;
};

/* One set of fragment names (the direct spreads of some operations) and
 * the fragments it reaches: getRecursivelyReferencedFragmentsForOperations's
 * cache, keyed as its SetMap is by the set's members. */
struct fragset {
    uint32_t *ids;             /* sorted */
    uint32_t nids;
    const struct gq_definition **frags;
    uint32_t nfrags;
    bool usages_done;          /* getRecursiveVariableUsages's cache for `frags` */
    uint32_t nusages;
    uint32_t next;             /* index+1 of the next entry with the same hash */
};

/* A map from 64-bit keys, in malloc'ed memory (see hmap_put). */
struct hent {
    uint64_t k;
    uint32_t v;
    bool used;
};
struct hmap {
    struct hent *t;
    uint32_t cap, n;
};

/* A set or map keyed by name id, emptied in O(1) by a new stamp. */
struct idset {
    uint32_t *stamp, *val;
    uint32_t cur;
};

struct vctx {
    struct gq_arena *a;
    const struct gq_schema *s;
    const struct gq_document *doc;
    struct gq_errors *errs;
    jmp_buf jb;
    enum mode mode;
    uint32_t nspec;            /* errors graphql-js would hold */

    const struct gq_type_def *query, *mutation;
    const struct gq_tref **named;   /* a NAMED tref per schema type (by index) */
    struct gq_field_def meta_typename, meta_schema, meta_type;
    struct gq_input_value_def meta_type_args[1];

    /* Names, interned during M_PRE: an id per distinct name. */
    struct nent *nt;
    uint32_t ntcap;
    struct vec names;          /* struct gq_str by id */
    uint32_t nnames;

    struct defx *dx;           /* by definition index */
    uint32_t cur_def;
    uint32_t nops;

    /* Per name id, allocated after M_PRE. */
    const struct gq_definition **frag_by_id;  /* getFragment: the last definition */
    const struct gq_loc **op_name_seen;       /* UniqueOperationNames */
    const struct gq_loc **frag_name_seen;     /* UniqueFragmentNames */
    struct idset rf;                          /* getRecursivelyReferencedFragments */
    struct idset grp;                         /* groupBy in the Unique*Names rules */
    struct idset obj;                         /* an object value's fields */
    struct idset cf_groups, cf_frags;         /* collectFields */
    struct idset var_defined, var_def, var_used; /* per operation */
    struct idset intro_visited;               /* MaxIntrospectionDepthRule, per check */
    struct idset used_frags;                  /* NoUnusedFragments */
    bool *cycle_visited;                      /* NoFragmentCycles */
    int32_t *cycle_index;
    int8_t *intro_exceeded, *intro_checked;   /* MaxIntrospectionDepthRule; -1: not yet */

    /* getRecursivelyReferencedFragments */
    struct vec fragsets;       /* struct fragset * */
    struct pmap fragset_by_hash;
    int64_t fragment_work;

    /* UniqueDirectivesPerLocation: per schema directive */
    const struct gq_loc **dir_seen;
    uint32_t *dir_seen_stamp;
    uint32_t dir_stamp;

    /* OverlappingFieldsCanBeMerged */
    int64_t overlap_budget;
    struct pmap cfr_cache;     /* (parent type, selection set) -> struct cfr */
    struct pmap sorted_objects; /* object value -> sorted field order */
    uint32_t nfds, ncfrs;
    uint32_t nsets;            /* selection sets in the document */
    struct hmap overlap_seen;  /* (cfr1, cfr2): getOverlappingFields's cache */
    struct hmap comparisons;   /* (fd1, fd2) -> 1 same arguments, 2 differing */
    struct hmap compared_frags; /* (cfr, fragment id) -> 1 + mutually exclusive */
    struct hmap frag_pairs;    /* (id1, id2) -> 1 + mutually exclusive: PairSet */
    uint32_t rec;
};

/* ---- memory and errors --------------------------------------------------------- */

static const char *const location_names[] = {
    "QUERY", "MUTATION", "SUBSCRIPTION", "FIELD", "FRAGMENT_DEFINITION", "FRAGMENT_SPREAD",
    "INLINE_FRAGMENT", "VARIABLE_DEFINITION",
};

static void push_error(struct vctx *c, const char *msg, const struct gq_loc *locs, uint32_t nlocs)
{
    struct gq_errors *e = c->errs;
    if (e->n == GQ_ERRORS_MAX) {
        e->dropped++;
        return;
    }
    struct gq_error *err = &e->v[e->n++];
    memset(err, 0, sizeof *err);
    err->message = msg;
    uint32_t cap = (uint32_t)LOCS_MAX;
    for (uint32_t i = 0; i < nlocs && i < cap; i++)
        err->locs[i] = locs[i];
    err->nlocs = nlocs < cap ? nlocs : cap;
}

/* The error that ends validation: graphql-js appends it after the others
 * (past the cap too, so it takes the last place when the list is full). */
__attribute__((noreturn)) static void abort_with(struct vctx *c, const char *msg)
{
    struct gq_errors *e = c->errs;
    if (e->n == GQ_ERRORS_MAX) {
        e->dropped++;
        e->n--;
    }
    push_error(c, msg, NULL, 0);
    longjmp(c->jb, 1);
}

static void *xalloc(struct vctx *c, size_t n)
{
    void *p = gq_alloc(c->a, n ? n : 1);
    if (!p)
        abort_with(c, MSG_NOMEM);
    return p;
}

/* ValidationContext.reportError with validate()'s onError: past maxErrors,
 * one last error and the end. */
static void report(struct vctx *c, const char *msg, const struct gq_loc *locs, uint32_t nlocs)
{
    if (c->nspec >= MAX_ERRORS)
        abort_with(c, MSG_TOO_MANY);
    c->nspec++;
    push_error(c, msg, locs, nlocs);
}

static void report1(struct vctx *c, const char *msg, struct gq_loc loc)
{
    report(c, msg, &loc, 1);
}

static void *vpush(struct vctx *c, struct vec *v, size_t size)
{
    if (v->n == v->cap) {
        uint32_t cap = v->cap ? v->cap * 2 : 8;
        void *p = xalloc(c, (size_t)cap * size);
        if (v->n)
            memcpy(p, v->v, (size_t)v->n * size);
        v->v = p;
        v->cap = cap;
    }
    return (char *)v->v + (size_t)v->n++ * size;
}

static void rec_enter(struct vctx *c)
{
    if (++c->rec > RECURSION_MAX)
        abort_with(c, MSG_RECURSION);
}

/* ---- messages ----------------------------------------------------------------- */

struct sb {
    struct vctx *c;
    char *p;
    size_t n, cap;
};

static void sb_put(struct sb *b, const char *s, size_t n)
{
    if (b->cap - b->n <= n) {
        size_t cap = b->cap ? b->cap * 2 : 128;
        while (cap - b->n <= n)
            cap *= 2;
        char *p = xalloc(b->c, cap);
        if (b->n)
            memcpy(p, b->p, b->n);
        b->p = p;
        b->cap = cap;
    }
    memcpy(b->p + b->n, s, n);
    b->n += n;
    b->p[b->n] = '\0';
}

static void sb_puts(struct sb *b, const char *s)
{
    sb_put(b, s, strlen(s));
}

static void sb_str(struct sb *b, struct gq_str s)
{
    sb_put(b, s.p ? s.p : "", s.n);
}

static const char *sb_done(struct sb *b)
{
    if (!b->p)
        sb_put(b, "", 0);
    return b->p;
}

static struct sb sb_new(struct vctx *c)
{
    return (struct sb){c, NULL, 0, 0};
}

/* inspect(type): [Int!]! */
static void put_tref(struct sb *b, const struct gq_tref *t)
{
    if (!t)
        return;
    switch (t->kind) {
    case GQ_REF_NAMED:
        sb_puts(b, t->named->name);
        break;
    case GQ_REF_LIST:
        sb_puts(b, "[");
        put_tref(b, t->of);
        sb_puts(b, "]");
        break;
    case GQ_REF_NON_NULL:
        put_tref(b, t->of);
        sb_puts(b, "!");
        break;
    }
}

/* print(typeNode): the type as written. */
static void put_type_ast(struct sb *b, const struct gq_type *t)
{
    switch (t->kind) {
    case GQ_T_NAMED:
        sb_str(b, t->name);
        break;
    case GQ_T_LIST:
        sb_puts(b, "[");
        put_type_ast(b, t->of);
        sb_puts(b, "]");
        break;
    case GQ_T_NON_NULL:
        put_type_ast(b, t->of);
        sb_puts(b, "!");
        break;
    }
}

/* UTF-16 code units in UTF-8 text: JavaScript's String.length. */
static size_t utf16_len(const char *p, size_t n)
{
    size_t units = 0;
    for (size_t i = 0; i < n; i++) {
        unsigned char ch = (unsigned char)p[i];
        if ((ch & 0xc0) != 0x80)
            units += ch >= 0xf0 ? 2 : 1;
    }
    return units;
}

/* printString: a quoted string with graphql-js's escapes (C0, C1, '"', '\'). */
static void put_string(struct sb *b, const char *p, size_t n)
{
    static const char hex[] = "0123456789ABCDEF";
    sb_puts(b, "\"");
    size_t run = 0;
    for (size_t i = 0; i < n; i++) {
        unsigned char ch = (unsigned char)p[i];
        unsigned code = 0x100;
        size_t len = 1;
        if (ch < 0x20 || ch == '"' || ch == '\\' || ch == 0x7f) {
            code = ch;
        } else if (ch == 0xc2 && i + 1 < n && (unsigned char)p[i + 1] >= 0x80 && (unsigned char)p[i + 1] <= 0x9f) {
            code = (unsigned char)p[i + 1];
            len = 2;
        }
        if (code == 0x100)
            continue;
        sb_put(b, p + run, i - run);
        char esc[7];
        const char *e = esc;
        size_t en = 2;
        switch (code) {
        case '\b': e = "\\b"; break;
        case '\t': e = "\\t"; break;
        case '\n': e = "\\n"; break;
        case '\f': e = "\\f"; break;
        case '\r': e = "\\r"; break;
        case '"': e = "\\\""; break;
        case '\\': e = "\\\\"; break;
        default:
            esc[0] = '\\', esc[1] = 'u', esc[2] = '0', esc[3] = '0';
            esc[4] = hex[code >> 4], esc[5] = hex[code & 15];
            en = 6;
        }
        sb_put(b, e, en);
        i += len - 1;
        run = i + 1;
    }
    sb_put(b, p + run, n - run);
    sb_puts(b, "\"");
}

static bool is_ws(char ch)
{
    return ch == ' ' || ch == '\t';
}

/* printBlockString, for a value that came from a block string. */
static void put_block_string(struct sb *b, const char *p, size_t n)
{
    struct sb esc = sb_new(b->c);       /* value with """ escaped */
    size_t run = 0;
    for (size_t i = 0; i + 3 <= n; i++)
        if (memcmp(p + i, "\"\"\"", 3) == 0) {
            sb_put(&esc, p + run, i - run);
            sb_puts(&esc, "\\\"\"\"");
            i += 2;
            run = i + 1;
        }
    sb_put(&esc, p + run, n - run);
    const char *e = esc.p;
    size_t en = esc.n;
    bool single = true, force_leading = false;
    for (size_t i = 0; i < en; i++)
        if (e[i] == '\n' || e[i] == '\r')
            single = false;
    if (!single) {
        force_leading = true;
        for (size_t i = 0; i < en; i++) {
            if (e[i] != '\n' && e[i] != '\r')
                continue;
            size_t j = i + (e[i] == '\r' && i + 1 < en && e[i + 1] == '\n' ? 2 : 1);
            if (j < en && e[j] != '\n' && e[j] != '\r' && !is_ws(e[j]))
                force_leading = false;
        }
    }
    bool trailing_triple = en >= 4 && memcmp(e + en - 4, "\\\"\"\"", 4) == 0;
    bool trailing_quote = n > 0 && p[n - 1] == '"' && !trailing_triple;
    bool trailing_slash = n > 0 && p[n - 1] == '\\';
    bool force_trailing = trailing_quote || trailing_slash;
    bool multiple = !single || utf16_len(p, n) > 70 || force_trailing || force_leading || trailing_triple;
    bool skip_leading = single && n > 0 && is_ws(p[0]);
    sb_puts(b, "\"\"\"");
    if ((multiple && !skip_leading) || force_leading)
        sb_puts(b, "\n");
    sb_put(b, e, en);
    if (multiple || force_trailing)
        sb_puts(b, "\n");
    sb_puts(b, "\"\"\"");
}

/* printForError(value). */
static void put_value(struct sb *b, const struct gq_value *v)
{
    switch (v->kind) {
    case GQ_V_VARIABLE:
        sb_puts(b, "$");
        sb_str(b, v->s);
        break;
    case GQ_V_INT:
    case GQ_V_FLOAT:
    case GQ_V_ENUM:
        sb_str(b, v->s);
        break;
    case GQ_V_STRING:
        if (v->block)
            put_block_string(b, v->s.p ? v->s.p : "", v->s.n);
        else
            put_string(b, v->s.p ? v->s.p : "", v->s.n);
        break;
    case GQ_V_BOOLEAN:
        sb_puts(b, v->b ? "true" : "false");
        break;
    case GQ_V_NULL:
        sb_puts(b, "null");
        break;
    case GQ_V_LIST:
        sb_puts(b, "[");
        for (uint32_t i = 0; i < v->list.n; i++) {
            if (i)
                sb_puts(b, ", ");
            put_value(b, v->list.v[i]);
        }
        sb_puts(b, "]");
        break;
    case GQ_V_OBJECT:
        sb_puts(b, "{");
        for (uint32_t i = 0; i < v->obj.n; i++) {
            if (i)
                sb_puts(b, ", ");
            sb_str(b, v->obj.v[i].name);
            sb_puts(b, ": ");
            put_value(b, v->obj.v[i].value);
        }
        sb_puts(b, "}");
        break;
    }
}

/* ---- suggestions (graphql-js's suggestionList, naturalCompare, didYouMean) ------- */

static int natural_compare(const char *a, size_t an, const char *b, size_t bn)
{
    size_t i = 0, j = 0;
    while (i < an && j < bn) {
        unsigned char ca = (unsigned char)a[i], cb = (unsigned char)b[j];
        if (ca >= '0' && ca <= '9' && cb >= '0' && cb <= '9') {
            /* graphql-js reads a run of digits but stops after a leading
             * zero; numbers that overflow compare as JavaScript's would
             * not, which needs names of more than 300 digits. */
            double na = 0, nb = 0;
            do {
                na = na * 10 + (a[i++] - '0');
            } while (i < an && a[i] >= '0' && a[i] <= '9' && na > 0);
            do {
                nb = nb * 10 + (b[j++] - '0');
            } while (j < bn && b[j] >= '0' && b[j] <= '9' && nb > 0);
            if (na < nb)
                return -1;
            if (na > nb)
                return 1;
        } else {
            if (ca != cb)
                return ca < cb ? -1 : 1;
            i++, j++;
        }
    }
    return (int)((long)an - (long)bn > 0) - (int)((long)an - (long)bn < 0);
}

static char lower(char ch)
{
    return ch >= 'A' && ch <= 'Z' ? (char)(ch - 'A' + 'a') : ch;
}

/* LexicalDistance.measure: Damerau-Levenshtein on lowercased text with a
 * case change as one edit; -1 past the threshold. */
static int lexical_distance(struct vctx *c, const char *in, size_t inn, const char *opt, size_t optn,
                            size_t threshold)
{
    if (inn == optn && memcmp(in, opt, inn) == 0)
        return 0;
    bool same_lower = inn == optn;
    for (size_t i = 0; same_lower && i < inn; i++)
        same_lower = lower(in[i]) == lower(opt[i]);
    if (same_lower)
        return 1;
    const char *a = opt, *b = in;
    size_t an = optn, bn = inn;
    if (an < bn) {
        a = in, an = inn;
        b = opt, bn = optn;
    }
    if (an - bn > threshold)
        return -1;
    size_t *rows = xalloc(c, 3 * (bn + 1) * sizeof *rows);
    size_t *r[3] = {rows, rows + bn + 1, rows + 2 * (bn + 1)};
    for (size_t j = 0; j <= bn; j++)
        r[0][j] = j;
    for (size_t i = 1; i <= an; i++) {
        size_t *up = r[(i - 1) % 3], *cur = r[i % 3];
        size_t smallest = cur[0] = i;
        for (size_t j = 1; j <= bn; j++) {
            size_t cost = lower(a[i - 1]) == lower(b[j - 1]) ? 0 : 1;
            size_t cell = up[j] + 1;
            if (cur[j - 1] + 1 < cell)
                cell = cur[j - 1] + 1;
            if (up[j - 1] + cost < cell)
                cell = up[j - 1] + cost;
            if (i > 1 && j > 1 && lower(a[i - 1]) == lower(b[j - 2]) && lower(a[i - 2]) == lower(b[j - 1])) {
                size_t dd = r[(i - 2) % 3][j - 2] + 1;
                if (dd < cell)
                    cell = dd;
            }
            if (cell < smallest)
                smallest = cell;
            cur[j] = cell;
        }
        if (smallest > threshold)
            return -1;
    }
    size_t d = r[an % 3][bn];
    return d <= threshold ? (int)d : -1;
}

struct sugg {
    const char *name;
    int dist;
};

/* suggestionList(input, options) into out (room for nopt); the count. */
static uint32_t suggestion_list(struct vctx *c, const char *in, size_t inn, const char *const *opts, uint32_t nopt,
                                const char **out)
{
    struct sugg *s = xalloc(c, (nopt ? nopt : 1) * sizeof *s);
    uint32_t n = 0;
    size_t threshold = utf16_len(in, inn) * 2 / 5 + 1;
    for (uint32_t i = 0; i < nopt; i++) {
        bool dup = false;        /* options are object keys in graphql-js */
        for (uint32_t k = 0; k < n && !dup; k++)
            dup = strcmp(s[k].name, opts[i]) == 0;
        if (dup)
            continue;
        int d = lexical_distance(c, in, inn, opts[i], strlen(opts[i]), threshold);
        if (d >= 0)
            s[n++] = (struct sugg){opts[i], d};
    }
    /* Insertion sort: few options (a type's fields, the schema's types). */
    for (uint32_t i = 1; i < n; i++) {
        struct sugg x = s[i];
        uint32_t j = i;
        while (j > 0) {
            int diff = s[j - 1].dist - x.dist;
            if (diff == 0)
                diff = natural_compare(s[j - 1].name, strlen(s[j - 1].name), x.name, strlen(x.name));
            if (diff <= 0)
                break;
            s[j] = s[j - 1];
            j--;
        }
        s[j] = x;
    }
    for (uint32_t i = 0; i < n; i++)
        out[i] = s[i].name;
    return n;
}

static void did_you_mean(struct sb *b, const char *sub, const char *const *list, uint32_t n)
{
    if (n == 0)
        return;
    sb_puts(b, " Did you mean ");
    if (sub) {
        sb_puts(b, sub);
        sb_puts(b, " ");
    }
    if (n > SUGGESTIONS_MAX)
        n = SUGGESTIONS_MAX;
    for (uint32_t i = 0; i < n; i++) {
        if (i > 0)
            sb_puts(b, n == 2 ? " or " : i == n - 1 ? ", or " : ", ");
        sb_puts(b, "\"");
        sb_puts(b, list[i]);
        sb_puts(b, "\"");
    }
    sb_puts(b, "?");
}

/* " Did you mean …?" over names: suggestionList then didYouMean. */
static void suggest(struct sb *b, const char *sub, struct gq_str in, const char *const *opts, uint32_t nopt)
{
    const char **out = xalloc(b->c, (nopt ? nopt : 1) * sizeof *out);
    uint32_t n = suggestion_list(b->c, in.p ? in.p : "", in.n, opts, nopt, out);
    did_you_mean(b, sub, out, n);
}

/* ---- names --------------------------------------------------------------------- */

static uint32_t hash_bytes(const char *p, size_t n)
{
    uint32_t h = 2166136261u;
    for (size_t i = 0; i < n; i++)
        h = (h ^ (unsigned char)p[i]) * 16777619u;
    return h;
}

static bool str_eq(struct gq_str s, const char *z)
{
    size_t n = strlen(z);
    return s.n == n && (n == 0 || memcmp(s.p, z, n) == 0);
}

static bool str_same(struct gq_str a, struct gq_str b)
{
    return a.n == b.n && (a.n == 0 || memcmp(a.p, b.p, a.n) == 0);
}

/* The id of a name: interned while M_PRE walks the document, looked up
 * after (every name asked for later was seen then). */
static uint32_t name_id(struct vctx *c, struct gq_str s)
{
    uint32_t h = hash_bytes(s.p, s.n);
    if (c->mode == M_PRE && (c->nnames + 1) * 2 > c->ntcap) {
        uint32_t cap = c->ntcap ? c->ntcap * 2 : 64;
        struct nent *t = xalloc(c, (size_t)cap * sizeof *t);
        for (uint32_t i = 0; i < c->ntcap; i++) {
            if (!c->nt[i].used)
                continue;
            uint32_t k = c->nt[i].h & (cap - 1);
            while (t[k].used)
                k = (k + 1) & (cap - 1);
            t[k] = c->nt[i];
        }
        c->nt = t;
        c->ntcap = cap;
    }
    uint32_t k = h & (c->ntcap - 1);
    while (c->nt[k].used) {
        struct nent *e = &c->nt[k];
        if (e->h == h && e->n == s.n && (s.n == 0 || memcmp(e->p, s.p, s.n) == 0))
            return e->id;
        k = (k + 1) & (c->ntcap - 1);
    }
    if (c->mode != M_PRE)
        abort_with(c, MSG_ABORTED);  /* not reached: M_PRE saw every name */
    c->nt[k] = (struct nent){s.p, s.n, c->nnames, h, true};
    *(struct gq_str *)vpush(c, &c->names, sizeof(struct gq_str)) = s;
    return c->nnames++;
}

static struct gq_str id_name(const struct vctx *c, uint32_t id)
{
    return ((const struct gq_str *)c->names.v)[id];
}

static void idset_init(struct vctx *c, struct idset *s);

static void idset_clear(struct idset *s)
{
    s->cur++;
}

static bool idset_has(const struct idset *s, uint32_t id)
{
    return s->stamp[id] == s->cur;
}

static void idset_put(struct idset *s, uint32_t id, uint32_t v)
{
    s->stamp[id] = s->cur;
    s->val[id] = v;
}

static uint32_t idset_get(const struct idset *s, uint32_t id)
{
    return s->val[id];
}

/* ---- pair maps --------------------------------------------------------------------- */

static uint32_t hash_pair(uint64_t a, uint64_t b)
{
    uint64_t h = a * 0x9e3779b97f4a7c15ull ^ (b + 0x632be59bd9b4e019ull) * 0xbf58476d1ce4e5b9ull;
    h ^= h >> 31;
    h *= 0x94d049bb133111ebull;
    h ^= h >> 29;
    return (uint32_t)h;
}

static bool pmap_get(const struct pmap *m, uint64_t a, uint64_t b, uintptr_t *v)
{
    if (!m->cap)
        return false;
    uint32_t k = hash_pair(a, b) & (m->cap - 1);
    while (m->t[k].used) {
        if (m->t[k].a == a && m->t[k].b == b) {
            *v = m->t[k].v;
            return true;
        }
        k = (k + 1) & (m->cap - 1);
    }
    return false;
}

static void pmap_set(struct vctx *c, struct pmap *m, uint64_t a, uint64_t b, uintptr_t v)
{
    if ((m->n + 1) * 2 > m->cap) {
        uint32_t cap = m->cap ? m->cap * 2 : 16;
        struct pent *t = xalloc(c, (size_t)cap * sizeof *t);
        for (uint32_t i = 0; i < m->cap; i++) {
            if (!m->t[i].used)
                continue;
            uint32_t k = hash_pair(m->t[i].a, m->t[i].b) & (cap - 1);
            while (t[k].used)
                k = (k + 1) & (cap - 1);
            t[k] = m->t[i];
        }
        m->t = t;
        m->cap = cap;
    }
    uint32_t k = hash_pair(a, b) & (m->cap - 1);
    while (m->t[k].used) {
        if (m->t[k].a == a && m->t[k].b == b) {
            m->t[k].v = v;
            return;
        }
        k = (k + 1) & (m->cap - 1);
    }
    m->t[k] = (struct pent){a, b, v, true};
    m->n++;
}

#define PKEY(p) ((uint64_t)(uintptr_t)(p))

/* Room for n entries without growing (growing leaves the old table in the
 * arena). */
static void pmap_reserve(struct vctx *c, struct pmap *m, uint32_t n)
{
    uint32_t cap = 16;
    while (cap < 2 * n + 2)
        cap *= 2;
    if (m->n || cap <= m->cap)
        return;
    m->t = xalloc(c, (size_t)cap * sizeof *m->t);
    m->cap = cap;
}

/* ---- the schema as graphql-js's type predicates see it --------------------------- */

static bool is_composite(const struct gq_type_def *t)
{
    return t && (t->kind == GQ_OBJECT || t->kind == GQ_INTERFACE || t->kind == GQ_UNION);
}

static bool is_leaf(const struct gq_type_def *t)
{
    return t && (t->kind == GQ_SCALAR || t->kind == GQ_ENUM);
}

static bool is_input(const struct gq_type_def *t)
{
    return t && (t->kind == GQ_SCALAR || t->kind == GQ_ENUM || t->kind == GQ_INPUT_OBJECT);
}

static bool is_output(const struct gq_type_def *t)
{
    return t && t->kind != GQ_INPUT_OBJECT;
}

static bool is_abstract(const struct gq_type_def *t)
{
    return t && (t->kind == GQ_INTERFACE || t->kind == GQ_UNION);
}

static const struct gq_type_def *named_of(const struct gq_tref *t)
{
    while (t && t->kind != GQ_REF_NAMED)
        t = t->of;
    return t ? t->named : NULL;
}

static const struct gq_tref *nullable_of(const struct gq_tref *t)
{
    return t && t->kind == GQ_REF_NON_NULL ? t->of : t;
}

static bool is_non_null(const struct gq_tref *t)
{
    return t && t->kind == GQ_REF_NON_NULL;
}

static bool is_list(const struct gq_tref *t)
{
    return t && t->kind == GQ_REF_LIST;
}

/* Type identity as graphql-js compares type objects: named types are
 * shared, wrappers belong to the definition that wrote them. */
static bool same_type(const struct gq_tref *a, const struct gq_tref *b)
{
    return a == b || (a && b && a->kind == GQ_REF_NAMED && b->kind == GQ_REF_NAMED && a->named == b->named);
}

static bool is_introspection_type(const struct gq_type_def *t)
{
    static const char *const names[] = {"__Schema", "__Type", "__TypeKind", "__Field",
                                        "__InputValue", "__EnumValue", "__Directive", "__DirectiveLocation"};
    for (size_t i = 0; t && i < sizeof names / sizeof names[0]; i++)
        if (strcmp(t->name, names[i]) == 0)
            return true;
    return false;
}

/* A schema name equal to name? The first byte first: most names differ there. */
static bool is_name(const char *z, struct gq_str name)
{
    return name.n && z[0] == name.p[0] && strncmp(z, name.p, name.n) == 0 && z[name.n] == '\0';
}

/* gq_schema_type, gq_type_field and gq_schema_directive, faster on the
 * names that differ (the validator looks up every field it meets). */
static const struct gq_type_def *type_by_name(const struct vctx *c, struct gq_str name)
{
    for (unsigned i = 0; i < c->s->ntypes; i++)
        if (is_name(c->s->types[i].name, name))
            return &c->s->types[i];
    return NULL;
}

static const struct gq_field_def *type_field(const struct gq_type_def *t, struct gq_str name)
{
    for (unsigned i = 0; i < t->nfields; i++)
        if (is_name(t->fields[i].name, name))
            return &t->fields[i];
    return NULL;
}

static const struct gq_directive_def *directive_by_name(const struct vctx *c, struct gq_str name)
{
    for (unsigned i = 0; i < c->s->ndirectives; i++)
        if (is_name(c->s->directives[i].name, name))
            return &c->s->directives[i];
    return NULL;
}

static const struct gq_tref *named_tref(const struct vctx *c, const struct gq_type_def *t)
{
    return t ? c->named[t - c->s->types] : NULL;
}

static const struct gq_type_def *by_cname(const struct vctx *c, const char *name)
{
    return name ? gq_schema_type(c->s, name, (unsigned)strlen(name)) : NULL;
}

/* typeFromAST: a new wrapper per call, as graphql-js makes one. */
static const struct gq_tref *type_from_ast(struct vctx *c, const struct gq_type *t)
{
    if (t->kind == GQ_T_NAMED)
        return named_tref(c, type_by_name(c, t->name));
    const struct gq_tref *of = type_from_ast(c, t->of);
    if (!of)
        return NULL;
    struct gq_tref *w = xalloc(c, sizeof *w);
    w->kind = t->kind == GQ_T_LIST ? GQ_REF_LIST : GQ_REF_NON_NULL;
    w->of = of;
    return w;
}

static bool implements(const struct gq_type_def *t, const char *iface)
{
    for (unsigned i = 0; i < t->ninterfaces; i++)
        if (strcmp(t->interfaces[i], iface) == 0)
            return true;
    return false;
}

/* schema.isSubType(abstract, maybeSub). */
static bool is_sub_type(const struct gq_type_def *abstract, const struct gq_type_def *sub)
{
    if (abstract->kind == GQ_UNION) {
        for (unsigned i = 0; i < abstract->nmembers; i++)
            if (strcmp(abstract->members[i], sub->name) == 0)
                return true;
        return false;
    }
    return (sub->kind == GQ_OBJECT || sub->kind == GQ_INTERFACE) && implements(sub, abstract->name);
}

/* schema.getPossibleTypes(abstract)[i] is the i-th object type in it. */
static bool is_possible(const struct gq_type_def *abstract, const struct gq_type_def *t)
{
    return t->kind == GQ_OBJECT && is_sub_type(abstract, t);
}

static bool types_overlap(const struct vctx *c, const struct gq_type_def *a, const struct gq_type_def *b)
{
    if (a == b)
        return true;
    if (is_abstract(a)) {
        if (is_abstract(b)) {
            for (unsigned i = 0; i < c->s->ntypes; i++)
                if (is_possible(a, &c->s->types[i]) && is_sub_type(b, &c->s->types[i]))
                    return true;
            return false;
        }
        return is_sub_type(a, b);
    }
    if (is_abstract(b))
        return is_sub_type(b, a);
    return false;
}

/* isTypeSubTypeOf(maybeSub, super). */
static bool is_type_sub_type_of(const struct gq_tref *sub, const struct gq_tref *super)
{
    for (;;) {
        if (same_type(sub, super))
            return true;
        if (super->kind == GQ_REF_NON_NULL) {
            if (sub->kind != GQ_REF_NON_NULL)
                return false;
            sub = sub->of, super = super->of;
            continue;
        }
        if (sub->kind == GQ_REF_NON_NULL) {
            sub = sub->of;
            continue;
        }
        if (super->kind == GQ_REF_LIST) {
            if (sub->kind != GQ_REF_LIST)
                return false;
            sub = sub->of, super = super->of;
            continue;
        }
        if (sub->kind == GQ_REF_LIST)
            return false;
        return is_abstract(super->named) &&
               (sub->named->kind == GQ_INTERFACE || sub->named->kind == GQ_OBJECT) &&
               is_sub_type(super->named, sub->named);
    }
}

/* TypeInfo's getFieldDef: the meta fields, then the type's own. */
static const struct gq_field_def *field_def(const struct vctx *c, const struct gq_type_def *parent, struct gq_str name)
{
    if (!parent)
        return NULL;
    if (str_eq(name, "__schema") && parent == c->query)
        return &c->meta_schema;
    if (str_eq(name, "__type") && parent == c->query)
        return &c->meta_type;
    if (str_eq(name, "__typename") && is_composite(parent))
        return &c->meta_typename;
    if (parent->kind == GQ_OBJECT || parent->kind == GQ_INTERFACE)
        return type_field(parent, name);
    return NULL;
}

static const struct gq_input_value_def *find_arg(const struct gq_input_value_def *args, unsigned n, struct gq_str name)
{
    for (unsigned i = 0; i < n; i++)
        if (str_eq(name, args[i].name))
            return &args[i];
    return NULL;
}

static bool is_required(const struct gq_input_value_def *a)
{
    return is_non_null(a->tref) && !a->default_value;
}

static struct gq_tref *new_tref(struct vctx *c, int kind, const struct gq_type_def *named, const struct gq_tref *of)
{
    struct gq_tref *t = xalloc(c, sizeof *t);
    t->kind = kind;
    t->named = named;
    t->of = of;
    return t;
}

/* ---- fragments --------------------------------------------------------------------- */

static const struct gq_definition *get_fragment(struct vctx *c, struct gq_str name)
{
    return c->frag_by_id[name_id(c, name)];
}

static uint32_t def_index(const struct vctx *c, const struct gq_definition *d)
{
    return (uint32_t)(d - c->doc->defs);
}

/* getFragmentSpreads: graphql-js walks a stack of selection sets, so the
 * nested ones come last and in reverse; that order shows in messages. */
static void fragment_spreads(struct vctx *c, const struct gq_definition *d, const struct gq_selection ***out,
                             uint32_t *n)
{
    struct defx *x = &c->dx[def_index(c, d)];
    if (!x->spreads_done) {
        struct vec spreads = {0}, stack = {0};
        if (d->sel)
            *(const struct gq_selection_set **)vpush(c, &stack, sizeof(void *)) = d->sel;
        while (stack.n) {
            const struct gq_selection_set *set = ((const struct gq_selection_set **)stack.v)[--stack.n];
            for (uint32_t i = 0; i < set->n; i++) {
                const struct gq_selection *s = &set->v[i];
                if (s->kind == GQ_S_SPREAD)
                    *(const struct gq_selection **)vpush(c, &spreads, sizeof(void *)) = s;
                else if (s->sel)
                    *(const struct gq_selection_set **)vpush(c, &stack, sizeof(void *)) = s->sel;
            }
        }
        x->spreads = spreads.v;
        x->nspreads = spreads.n;
        x->spreads_done = true;
    }
    *out = x->spreads;
    *n = x->nspreads;
}

static void spend_fragment_work(struct vctx *c, uint64_t cost)
{
    c->fragment_work -= (int64_t)cost;
    if (c->fragment_work < 0)
        abort_with(c, MSG_ABORTED);
}

static int cmp_u32(const void *a, const void *b)
{
    uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
    return (x > y) - (x < y);
}

/* getRecursivelyReferencedFragmentsForOperations: the entry for the set
 * of fragments the operations spread directly, computed (and paid for)
 * once per distinct set. */
static struct fragset *recursive_fragments(struct vctx *c, const struct gq_definition *const *ops, uint32_t nops)
{
    idset_clear(&c->rf);
    struct vec names = {0};
    for (uint32_t i = 0; i < nops; i++) {
        const struct gq_selection **sp;
        uint32_t nsp;
        fragment_spreads(c, ops[i], &sp, &nsp);
        for (uint32_t j = 0; j < nsp; j++) {
            uint32_t id = name_id(c, sp[j]->name);
            if (idset_has(&c->rf, id))
                continue;
            idset_put(&c->rf, id, 0);
            *(uint32_t *)vpush(c, &names, sizeof(uint32_t)) = id;
        }
    }
    uint32_t nkey = names.n;
    uint32_t *sorted = xalloc(c, (nkey ? nkey : 1) * sizeof *sorted);
    if (nkey)
        memcpy(sorted, names.v, nkey * sizeof *sorted);
    qsort(sorted, nkey, sizeof *sorted, cmp_u32);
    uint64_t h = 1469598103934665603ull;
    for (uint32_t i = 0; i < nkey; i++)
        h = (h ^ sorted[i]) * 1099511628211ull;
    uintptr_t first = 0;
    if (pmap_get(&c->fragset_by_hash, h, nkey, &first))
        for (uint32_t k = (uint32_t)first; k; k = ((struct fragset **)c->fragsets.v)[k - 1]->next) {
            struct fragset *f = ((struct fragset **)c->fragsets.v)[k - 1];
            if (f->nids == nkey && (nkey == 0 || memcmp(f->ids, sorted, nkey * sizeof *sorted) == 0))
                return f;
        }

    spend_fragment_work(c, nkey);
    struct vec frags = {0};
    /* The set of names grows while it is read, as graphql-js's Set does. */
    for (uint32_t i = 0; i < names.n; i++) {
        const struct gq_definition *frag = c->frag_by_id[((uint32_t *)names.v)[i]];
        if (!frag)
            continue;
        *(const struct gq_definition **)vpush(c, &frags, sizeof(void *)) = frag;
        const struct gq_selection **sp;
        uint32_t nsp;
        fragment_spreads(c, frag, &sp, &nsp);
        spend_fragment_work(c, nsp);
        for (uint32_t j = 0; j < nsp; j++) {
            uint32_t id = name_id(c, sp[j]->name);
            if (idset_has(&c->rf, id))
                continue;
            idset_put(&c->rf, id, 0);
            *(uint32_t *)vpush(c, &names, sizeof(uint32_t)) = id;
        }
    }
    struct fragset *f = xalloc(c, sizeof *f);
    *(struct fragset **)vpush(c, &c->fragsets, sizeof(void *)) = f;
    f->ids = sorted;
    f->nids = nkey;
    f->frags = frags.v;
    f->nfrags = frags.n;
    f->next = (uint32_t)first;
    pmap_set(c, &c->fragset_by_hash, h, nkey, c->fragsets.n);
    return f;
}

/* ---- rules shared by several nodes ---------------------------------------------- */

/* groupBy(nodes, name), then one error per name given more than once, with
 * every node's location, in the order the names first appear. */
static void report_dups(struct vctx *c, uint32_t n, const uint32_t *ids, const struct gq_loc *locs, const char *pre,
                        const char *post)
{
    if (n < 2)
        return;
    uint32_t *next = xalloc(c, n * sizeof *next);
    idset_clear(&c->grp);
    for (uint32_t i = n; i-- > 0;) {
        next[i] = idset_has(&c->grp, ids[i]) ? idset_get(&c->grp, ids[i]) : UINT32_MAX;
        idset_put(&c->grp, ids[i], i);
    }
    for (uint32_t i = 0; i < n; i++) {
        if (idset_get(&c->grp, ids[i]) != i || next[i] == UINT32_MAX)
            continue;
        struct gq_loc l[LOCS_MAX];
        uint32_t nl = 0;
        for (uint32_t k = i; k != UINT32_MAX && nl < LOCS_MAX; k = next[k])
            l[nl++] = locs[k];
        struct sb b = sb_new(c);
        sb_puts(&b, pre);
        sb_str(&b, id_name(c, ids[i]));
        sb_puts(&b, post);
        report(c, sb_done(&b), l, nl);
    }
}

/* UniqueArgumentNamesRule. */
static void unique_arguments(struct vctx *c, const struct gq_argument *args, uint32_t n)
{
    if (n < 2)
        return;
    uint32_t *ids = xalloc(c, n * sizeof *ids);
    struct gq_loc *locs = xalloc(c, n * sizeof *locs);
    for (uint32_t i = 0; i < n; i++) {
        ids[i] = name_id(c, args[i].name);
        locs[i] = args[i].loc;
    }
    report_dups(c, n, ids, locs, "There can be only one argument named \"", "\".");
}

/* UniqueDirectivesPerLocationRule, at a node with directives. */
static void unique_directives(struct vctx *c, const struct gq_directive *dirs, uint32_t n)
{
    if (n < 2)
        return;
    c->dir_stamp++;
    for (uint32_t i = 0; i < n; i++) {
        const struct gq_directive_def *dd = directive_by_name(c, dirs[i].name);
        if (!dd || dd->repeatable)
            continue;
        size_t k = (size_t)(dd - c->s->directives);
        if (c->dir_seen_stamp[k] == c->dir_stamp) {
            struct gq_loc l[2] = {*c->dir_seen[k], dirs[i].loc};
            struct sb b = sb_new(c);
            sb_puts(&b, "The directive \"@");
            sb_str(&b, dirs[i].name);
            sb_puts(&b, "\" can only be used once at this location.");
            report(c, sb_done(&b), l, 2);
        } else {
            c->dir_seen_stamp[k] = c->dir_stamp;
            c->dir_seen[k] = &dirs[i].loc;
        }
    }
}

/* KnownTypeNamesRule, at a NamedType of an executable definition. */
static void known_type(struct vctx *c, struct gq_str name, struct gq_loc loc)
{
    if (type_by_name(c, name))
        return;
    const char **opts = xalloc(c, (c->s->ntypes ? c->s->ntypes : 1) * sizeof *opts);
    for (unsigned i = 0; i < c->s->ntypes; i++)
        opts[i] = c->s->types[i].name;
    struct sb b = sb_new(c);
    sb_puts(&b, "Unknown type \"");
    sb_str(&b, name);
    sb_puts(&b, "\".");
    suggest(&b, NULL, name, opts, c->s->ntypes);
    report1(c, sb_done(&b), loc);
}

/* ---- ValuesOfCorrectTypeRule's literal checks (the scalars' parseLiteral) ---- */

static bool int32_literal(struct gq_str s)
{
    size_t i = s.n && s.p[0] == '-' ? 1 : 0;
    if (s.n - i > 10)
        return false;
    int64_t v = 0;
    for (; i < s.n; i++)
        v = v * 10 + (s.p[i] - '0');
    return s.p[0] == '-' ? v <= 2147483648ll : v <= 2147483647ll;
}

static void literal_error(struct vctx *c, const struct gq_value *v, const char *pre, const char *post)
{
    struct sb b = sb_new(c);
    sb_puts(&b, pre);
    put_value(&b, v);
    sb_puts(&b, post);
    report1(c, sb_done(&b), v->loc);
}

static void enum_suggestions(struct sb *b, const struct gq_type_def *t, const char *value_str)
{
    const char **opts = xalloc(b->c, (t->nvalues ? t->nvalues : 1) * sizeof *opts);
    for (unsigned i = 0; i < t->nvalues; i++)
        opts[i] = t->values[i].name;
    const char **out = xalloc(b->c, (t->nvalues ? t->nvalues : 1) * sizeof *out);
    uint32_t n = suggestion_list(b->c, value_str, strlen(value_str), opts, t->nvalues, out);
    did_you_mean(b, "the enum value", out, n);
}

/* isValidValueNode: a literal (or a list or object where no list or input
 * object is expected) against the type of its position. */
static void check_literal(struct vctx *c, const struct gq_value *v, const struct gq_tref *loc_type)
{
    if (!loc_type)
        return;
    const struct gq_type_def *t = named_of(loc_type);
    if (!is_leaf(t)) {
        struct sb b = sb_new(c);
        sb_puts(&b, "Expected value of type \"");
        put_tref(&b, loc_type);
        sb_puts(&b, "\", found ");
        put_value(&b, v);
        sb_puts(&b, ".");
        report1(c, sb_done(&b), v->loc);
        return;
    }
    if (t->kind == GQ_ENUM) {
        for (unsigned i = 0; v->kind == GQ_V_ENUM && i < t->nvalues; i++)
            if (str_eq(v->s, t->values[i].name))
                return;
        struct sb vs = sb_new(c);
        put_value(&vs, v);
        const char *value_str = sb_done(&vs);
        struct sb b = sb_new(c);
        if (v->kind != GQ_V_ENUM) {
            sb_puts(&b, "Enum \"");
            sb_puts(&b, t->name);
            sb_puts(&b, "\" cannot represent non-enum value: ");
            sb_puts(&b, value_str);
            sb_puts(&b, ".");
        } else {
            sb_puts(&b, "Value \"");
            sb_puts(&b, value_str);
            sb_puts(&b, "\" does not exist in \"");
            sb_puts(&b, t->name);
            sb_puts(&b, "\" enum.");
        }
        enum_suggestions(&b, t, value_str);
        report1(c, sb_done(&b), v->loc);
        return;
    }
    if (strcmp(t->name, "Int") == 0) {
        if (v->kind != GQ_V_INT) {
            literal_error(c, v, "Int cannot represent non-integer value: ", "");
        } else if (!int32_literal(v->s)) {
            literal_error(c, v, "Int cannot represent non 32-bit signed integer value: ", "");
        }
    } else if (strcmp(t->name, "Float") == 0) {
        if (v->kind != GQ_V_INT && v->kind != GQ_V_FLOAT)
            literal_error(c, v, "Float cannot represent non numeric value: ", "");
    } else if (strcmp(t->name, "String") == 0) {
        if (v->kind != GQ_V_STRING)
            literal_error(c, v, "String cannot represent a non string value: ", "");
    } else if (strcmp(t->name, "Boolean") == 0) {
        if (v->kind != GQ_V_BOOLEAN)
            literal_error(c, v, "Boolean cannot represent a non boolean value: ", "");
    } else if (strcmp(t->name, "ID") == 0) {
        if (v->kind != GQ_V_STRING && v->kind != GQ_V_INT)
            literal_error(c, v, "ID cannot represent a non-string and non-integer value: ", "");
    }
    else if (strcmp(t->name, "DateTime") == 0) {
        if (v->kind != GQ_V_STRING)
            literal_error(c, v, "DateTime cannot represent a non-string value: ", "");
        else if (!gq_datetime_valid(v->s.p, v->s.n))
            literal_error(c, v, "DateTime cannot represent an invalid date-time: ", "");
    }
    /* Any other scalar is a custom one: buildSchema's parseLiteral takes
     * every literal (valueFromASTUntyped). */
}

/* ---- the visit (graphql-js's visit with TypeInfo and the rules in parallel) ------- */

enum { DL_QUERY, DL_MUTATION, DL_SUBSCRIPTION, DL_FIELD, DL_FRAGMENT_DEFINITION, DL_FRAGMENT_SPREAD,
       DL_INLINE_FRAGMENT, DL_VARIABLE_DEFINITION };

static void walk_value(struct vctx *c, const struct gq_value *v, const struct gq_tref *t, bool has_default, bool vct,
                       bool record);

/* An object value: t is the input type of its position; vct: the
 * ValuesOfCorrectType rule is still looking (it stops below a value it
 * refused as a whole). */
static void walk_object(struct vctx *c, const struct gq_value *v, const struct gq_tref *t, bool vct, bool record)
{
    bool spec = c->mode == M_SPEC;
    const struct gq_type_def *nt = named_of(t);
    bool io = nt && nt->kind == GQ_INPUT_OBJECT;
    uint32_t n = v->obj.n;
    if (spec && vct) {
        if (!io) {
            check_literal(c, v, t);
            vct = false;
        } else {
            idset_clear(&c->obj);
            for (uint32_t i = 0; i < n; i++)
                idset_put(&c->obj, name_id(c, v->obj.v[i].name), i);
            for (unsigned k = 0; k < nt->ninputs; k++) {
                const struct gq_input_value_def *in = &nt->inputs[k];
                bool given = false;
                for (uint32_t i = 0; i < n && !given; i++)
                    given = str_eq(v->obj.v[i].name, in->name);
                if (given || !is_required(in))
                    continue;
                struct sb b = sb_new(c);
                sb_puts(&b, "Field \"");
                sb_puts(&b, nt->name);
                sb_puts(&b, ".");
                sb_puts(&b, in->name);
                sb_puts(&b, "\" of required type \"");
                put_tref(&b, in->tref);
                sb_puts(&b, "\" was not provided.");
                report1(c, sb_done(&b), v->loc);
            }
        }
    }
    /* UniqueInputFieldNamesRule: the first field of each name, found before
     * the fields' values are visited (they may hold objects of their own). */
    uint32_t *first = NULL;
    if (spec && n > 1) {
        first = xalloc(c, n * sizeof *first);
        idset_clear(&c->obj);
        for (uint32_t i = 0; i < n; i++) {
            uint32_t id = name_id(c, v->obj.v[i].name);
            if (idset_has(&c->obj, id)) {
                first[i] = idset_get(&c->obj, id);
            } else {
                idset_put(&c->obj, id, i);
                first[i] = i;
            }
        }
    }
    for (uint32_t i = 0; i < n; i++) {
        const struct gq_object_field *f = &v->obj.v[i];
        const struct gq_input_value_def *fd = io ? find_arg(nt->inputs, nt->ninputs, f->name) : NULL;
        if (c->mode == M_PRE)
            name_id(c, f->name);
        if (spec) {
            if (vct && !fd && io) {
                const char **opts = xalloc(c, (nt->ninputs ? nt->ninputs : 1) * sizeof *opts);
                for (unsigned k = 0; k < nt->ninputs; k++)
                    opts[k] = nt->inputs[k].name;
                struct sb b = sb_new(c);
                sb_puts(&b, "Field \"");
                sb_str(&b, f->name);
                sb_puts(&b, "\" is not defined by type \"");
                sb_puts(&b, nt->name);
                sb_puts(&b, "\".");
                suggest(&b, NULL, f->name, opts, nt->ninputs);
                report1(c, sb_done(&b), f->loc);
            }
            if (first && first[i] != i) {
                struct gq_loc l[2] = {v->obj.v[first[i]].loc, f->loc};
                struct sb b = sb_new(c);
                sb_puts(&b, "There can be only one input field named \"");
                sb_str(&b, f->name);
                sb_puts(&b, "\".");
                report(c, sb_done(&b), l, 2);
            }
        }
        walk_value(c, f->value, fd ? fd->tref : NULL, fd && fd->default_value, vct, record);
    }
}

/* A value at a position of input type t (NULL: unknown), as TypeInfo types
 * it; has_default: the position has a default (getDefaultValue). record:
 * a variable here is a usage (not inside a variable definition). */
static void walk_value(struct vctx *c, const struct gq_value *v, const struct gq_tref *t, bool has_default, bool vct,
                       bool record)
{
    bool spec = c->mode == M_SPEC;
    switch (v->kind) {
    case GQ_V_VARIABLE:
        if (c->mode == M_PRE) {
            uint32_t id = name_id(c, v->s);
            if (record)
                *(struct usage *)vpush(c, &c->dx[c->cur_def].usages, sizeof(struct usage)) =
                    (struct usage){id, v->loc, t, has_default};
        }
        return;
    case GQ_V_NULL:
        if (spec && vct && is_non_null(t)) {
            struct sb b = sb_new(c);
            sb_puts(&b, "Expected value of type \"");
            put_tref(&b, t);
            sb_puts(&b, "\", found null.");
            report1(c, sb_done(&b), v->loc);
        }
        return;
    case GQ_V_LIST: {
        const struct gq_tref *lt = nullable_of(t);
        const struct gq_tref *item = is_list(lt) ? lt->of : lt;
        if (spec && vct && !is_list(lt)) {
            check_literal(c, v, item);
            vct = false;
        }
        for (uint32_t i = 0; i < v->list.n; i++)
            walk_value(c, v->list.v[i], item, false, vct, record);
        return;
    }
    case GQ_V_OBJECT:
        walk_object(c, v, t, vct, record);
        return;
    default:
        if (spec && vct)
            check_literal(c, v, t);
        return;
    }
}

/* An argument of a field (ddef NULL, in_dir false) or of a directive. Its
 * definition is looked up as TypeInfo does: in the directive's when the
 * directive is known, else in the innermost field's (even for an unknown
 * directive's arguments). */
static void walk_argument(struct vctx *c, const struct gq_argument *arg, const struct gq_directive_def *ddef,
                          bool in_dir, const struct gq_field_def *fdef, const struct gq_type_def *parent, bool record)
{
    const struct gq_input_value_def *adef = NULL;
    if (in_dir && ddef)
        adef = find_arg(ddef->args, ddef->nargs, arg->name);
    else if (fdef)
        adef = find_arg(fdef->args, fdef->nargs, arg->name);
    if (c->mode == M_PRE)
        name_id(c, arg->name);
    if (c->mode == M_SPEC && !in_dir && !adef && fdef && parent) {
        const char **opts = xalloc(c, (fdef->nargs ? fdef->nargs : 1) * sizeof *opts);
        for (unsigned k = 0; k < fdef->nargs; k++)
            opts[k] = fdef->args[k].name;
        struct sb b = sb_new(c);
        sb_puts(&b, "Unknown argument \"");
        sb_str(&b, arg->name);
        sb_puts(&b, "\" on field \"");
        sb_puts(&b, parent->name);
        sb_puts(&b, ".");
        sb_puts(&b, fdef->name);
        sb_puts(&b, "\".");
        suggest(&b, NULL, arg->name, opts, fdef->nargs);
        report1(c, sb_done(&b), arg->loc);
    }
    walk_value(c, arg->value, adef ? adef->tref : NULL, adef && adef->default_value, true, record);
}

static bool arg_given(const struct gq_argument *args, uint32_t n, const char *name)
{
    for (uint32_t i = 0; i < n; i++)
        if (str_eq(args[i].name, name))
            return true;
    return false;
}

/* ProvidedRequiredArguments(OnDirectives): every required argument of
 * `defs` that `given` lacks, named as "<what><name>" (a field or a
 * directive) in graphql-js's words. */
static void required_args(struct vctx *c, const char *what, struct gq_str name, const struct gq_input_value_def *defs,
                          unsigned ndefs, const struct gq_argument *given, uint32_t ngiven, struct gq_loc loc)
{
    for (unsigned k = 0; k < ndefs; k++) {
        const struct gq_input_value_def *a = &defs[k];
        if (!is_required(a) || arg_given(given, ngiven, a->name))
            continue;
        struct sb b = sb_new(c);
        sb_puts(&b, what);
        sb_str(&b, name);
        sb_puts(&b, "\" argument \"");
        sb_puts(&b, a->name);
        sb_puts(&b, "\" of type \"");
        put_tref(&b, a->tref);
        sb_puts(&b, "\" is required, but it was not provided.");
        report1(c, sb_done(&b), loc);
    }
}

static void walk_directive(struct vctx *c, const struct gq_directive *d, unsigned where,
                           const struct gq_field_def *fdef, const struct gq_type_def *parent, bool record)
{
    const struct gq_directive_def *dd = directive_by_name(c, d->name);
    bool spec = c->mode == M_SPEC;
    if (spec) {
        /* KnownDirectivesRule */
        if (!dd || !(dd->locations & (1u << where))) {
            struct sb b = sb_new(c);
            sb_puts(&b, dd ? "Directive \"@" : "Unknown directive \"@");
            sb_str(&b, d->name);
            if (dd) {
                sb_puts(&b, "\" may not be used on ");
                sb_puts(&b, location_names[where]);
                sb_puts(&b, ".");
            } else {
                sb_puts(&b, "\".");
            }
            report1(c, sb_done(&b), d->loc);
        }
        /* KnownArgumentNamesOnDirectivesRule */
        for (uint32_t i = 0; dd && i < d->nargs; i++) {
            if (find_arg(dd->args, dd->nargs, d->args[i].name))
                continue;
            const char **opts = xalloc(c, (dd->nargs ? dd->nargs : 1) * sizeof *opts);
            for (unsigned k = 0; k < dd->nargs; k++)
                opts[k] = dd->args[k].name;
            struct sb b = sb_new(c);
            sb_puts(&b, "Unknown argument \"");
            sb_str(&b, d->args[i].name);
            sb_puts(&b, "\" on directive \"@");
            sb_str(&b, d->name);
            sb_puts(&b, "\".");
            suggest(&b, NULL, d->args[i].name, opts, dd->nargs);
            report1(c, sb_done(&b), d->args[i].loc);
        }
        unique_arguments(c, d->args, d->nargs);
    }
    for (uint32_t i = 0; i < d->nargs; i++)
        walk_argument(c, &d->args[i], dd, true, fdef, parent, record);
    /* ProvidedRequiredArgumentsOnDirectivesRule, on leaving. */
    if (spec && dd)
        required_args(c, "Directive \"@", d->name, dd->args, dd->nargs, d->args, d->nargs, d->loc);
}

static void walk_directives(struct vctx *c, const struct gq_directive *dirs, uint32_t n, unsigned where,
                            const struct gq_field_def *fdef, const struct gq_type_def *parent, bool record)
{
    for (uint32_t i = 0; i < n; i++)
        walk_directive(c, &dirs[i], where, fdef, parent, record);
}

static void overlapping_fields(struct vctx *c, const struct gq_type_def *parent, const struct gq_selection_set *ss);
static bool intro_exceeds(struct vctx *c, const struct gq_selection *f);

static bool is_intro_root(const struct gq_selection *f)
{
    return f->kind == GQ_S_FIELD && (str_eq(f->name, "__schema") || str_eq(f->name, "__type"));
}

static void walk_selection_set(struct vctx *c, const struct gq_selection_set *ss, const struct gq_tref *type,
                               const struct gq_field_def *fdef, bool from_inline, bool in_intro);

/* getSuggestedTypeNames's comparator: more uses first, then an interface
 * before its subtypes, then by name. */
static int suggest_order(const struct gq_type_def *a, uint32_t ua, const struct gq_type_def *b, uint32_t ub)
{
    if (ua != ub)
        return ub > ua ? 1 : -1;
    if (a->kind == GQ_INTERFACE && is_sub_type(a, b))
        return -1;
    if (b->kind == GQ_INTERFACE && is_sub_type(b, a))
        return 1;
    return natural_compare(a->name, strlen(a->name), b->name, strlen(b->name));
}

/* FieldsOnCorrectTypeRule's getSuggestedTypeNames. */
static uint32_t suggested_types(struct vctx *c, const struct gq_type_def *type, struct gq_str field,
                                const char **out)
{
    if (!is_abstract(type))
        return 0;
    unsigned nt = c->s->ntypes;
    const struct gq_type_def **set = xalloc(c, (nt ? nt : 1) * sizeof *set);
    uint32_t *usage = xalloc(c, (nt ? nt : 1) * sizeof *usage);
    uint32_t n = 0;
    /* The possible types in graphql-js's order: a union's members as
     * declared, an interface's implementations in type map order. */
    unsigned np = type->kind == GQ_UNION ? type->nmembers : nt;
    for (unsigned i = 0; i < np; i++) {
        const struct gq_type_def *pt = type->kind == GQ_UNION ? by_cname(c, type->members[i]) : &c->s->types[i];
        if (!pt || !is_possible(type, pt) || !type_field(pt, field))
            continue;
        uint32_t k = 0;
        while (k < n && set[k] != pt)
            k++;
        if (k == n)
            set[n++] = pt;
        usage[k] = 1;
        for (unsigned j = 0; j < pt->ninterfaces; j++) {
            const struct gq_type_def *it = by_cname(c, pt->interfaces[j]);
            if (!it || !type_field(it, field))
                continue;
            uint32_t m = 0;
            while (m < n && set[m] != it)
                m++;
            if (m == n) {
                set[n] = it;
                usage[n++] = 0;
            }
            usage[m]++;
        }
    }
    /* The comparator is not transitive (an interface goes before the
     * types implementing it, the rest by name), so the order depends on
     * the algorithm: V8's, which for fewer than 64 elements takes the
     * leading run (reversed when descending) and inserts the others by
     * binary search. */
    if (n > 1) {
        uint32_t run = 2;
        bool desc = suggest_order(set[1], usage[1], set[0], usage[0]) < 0;
        while (run < n) {
            int order = suggest_order(set[run], usage[run], set[run - 1], usage[run - 1]);
            if (desc ? order >= 0 : order < 0)
                break;
            run++;
        }
        for (uint32_t a = 0, b = run - 1; desc && a < b; a++, b--) {
            const struct gq_type_def *t = set[a];
            uint32_t u = usage[a];
            set[a] = set[b], usage[a] = usage[b];
            set[b] = t, usage[b] = u;
        }
        for (uint32_t k = run; k < n; k++) {
            const struct gq_type_def *pivot = set[k];
            uint32_t pu = usage[k], left = 0, right = k;
            while (left < right) {
                uint32_t mid = left + ((right - left) >> 1);
                if (suggest_order(pivot, pu, set[mid], usage[mid]) < 0)
                    right = mid;
                else
                    left = mid + 1;
            }
            for (uint32_t p = k; p > left; p--)
                set[p] = set[p - 1], usage[p] = usage[p - 1];
            set[left] = pivot;
            usage[left] = pu;
        }
    }
    for (uint32_t i = 0; i < n; i++)
        out[i] = set[i]->name;
    return n;
}

static void fields_on_correct_type(struct vctx *c, const struct gq_selection *f, const struct gq_type_def *parent)
{
    struct sb b = sb_new(c);
    sb_puts(&b, "Cannot query field \"");
    sb_str(&b, f->name);
    sb_puts(&b, "\" on type \"");
    sb_puts(&b, parent->name);
    sb_puts(&b, "\".");
    const char **types = xalloc(c, (c->s->ntypes ? c->s->ntypes : 1) * sizeof *types);
    uint32_t nt = suggested_types(c, parent, f->name, types);
    if (nt) {
        did_you_mean(&b, "to use an inline fragment on", types, nt);
    } else if (parent->kind == GQ_OBJECT || parent->kind == GQ_INTERFACE) {
        const char **opts = xalloc(c, (parent->nfields ? parent->nfields : 1) * sizeof *opts);
        for (unsigned k = 0; k < parent->nfields; k++)
            opts[k] = parent->fields[k].name;
        suggest(&b, NULL, f->name, opts, parent->nfields);
    }
    report1(c, sb_done(&b), f->loc);
}

static void scalar_leafs(struct vctx *c, const struct gq_selection *f, const struct gq_tref *ft)
{
    bool leaf = ft && is_leaf(named_of(ft));
    if (!ft || (leaf && !f->sel) || (!leaf && f->sel && f->sel->n > 0))
        return;
    struct sb b = sb_new(c);
    sb_puts(&b, "Field \"");
    sb_str(&b, f->name);
    if (leaf) {
        sb_puts(&b, "\" must not have a selection since type \"");
        put_tref(&b, ft);
        sb_puts(&b, "\" has no subfields.");
        report1(c, sb_done(&b), f->sel->loc);
        return;
    }
    sb_puts(&b, "\" of type \"");
    put_tref(&b, ft);
    if (!f->sel) {
        sb_puts(&b, "\" must have a selection of subfields. Did you mean \"");
        sb_str(&b, f->name);
        sb_puts(&b, " { ... }\"?");
    } else {
        sb_puts(&b, "\" must have at least one field selected.");
    }
    report1(c, sb_done(&b), f->loc);
}

static void walk_field(struct vctx *c, const struct gq_selection *f, const struct gq_type_def *parent, bool in_intro)
{
    const struct gq_field_def *fd = field_def(c, parent, f->name);
    const struct gq_tref *ft = fd ? fd->tref : NULL;
    bool intro_root = is_intro_root(f);
    if (c->mode == M_PRE) {
        name_id(c, f->alias.p ? f->alias : f->name);
    } else if (c->mode == M_SPEC) {
        scalar_leafs(c, f, ft);
        if (parent && !fd)
            fields_on_correct_type(c, f, parent);
        unique_directives(c, f->dirs, f->ndirs);
        unique_arguments(c, f->args, f->nargs);
        /* MaxIntrospectionDepthRule: an introspection field inside one that
         * passed cannot fail (its paths are a part of the outer one's), and
         * graphql-js skips those inside one that failed. */
        if (!in_intro && intro_root && intro_exceeds(c, f))
            report1(c, "Maximum introspection depth exceeded", f->loc);
    } else if (ft && is_introspection_type(named_of(ft))) {
        struct sb b = sb_new(c);
        sb_puts(&b, "GraphQL introspection has been disabled, but the requested query contained the field \"");
        sb_str(&b, f->name);
        sb_puts(&b, "\".");
        report1(c, sb_done(&b), f->loc);
    }
    for (uint32_t i = 0; i < f->nargs; i++)
        walk_argument(c, &f->args[i], NULL, false, fd, parent, true);
    walk_directives(c, f->dirs, f->ndirs, DL_FIELD, fd, parent, true);
    if (f->sel)
        walk_selection_set(c, f->sel, ft, fd, false, in_intro || intro_root);
    /* ProvidedRequiredArgumentsRule, on leaving the field. */
    if (c->mode == M_SPEC && fd)
        required_args(c, "Field \"", (struct gq_str){fd->name, (uint32_t)strlen(fd->name)}, fd->args, fd->nargs,
                      f->args, f->nargs, f->loc);
}

static void walk_spread(struct vctx *c, const struct gq_selection *sp, const struct gq_type_def *parent,
                        const struct gq_field_def *fdef)
{
    if (c->mode == M_PRE) {
        name_id(c, sp->name);
    } else if (c->mode == M_SPEC) {
        const struct gq_definition *frag = get_fragment(c, sp->name);
        if (!frag) {
            struct sb b = sb_new(c);
            sb_puts(&b, "Unknown fragment \"");
            sb_str(&b, sp->name);
            sb_puts(&b, "\".");
            report1(c, sb_done(&b), sp->name_loc);
        }
        const struct gq_type_def *ft = frag ? type_by_name(c, frag->type_cond) : NULL;
        if (is_composite(ft) && parent && !types_overlap(c, ft, parent)) {
            struct sb b = sb_new(c);
            sb_puts(&b, "Fragment \"");
            sb_str(&b, sp->name);
            sb_puts(&b, "\" cannot be spread here as objects of type \"");
            sb_puts(&b, parent->name);
            sb_puts(&b, "\" can never be of type \"");
            sb_puts(&b, ft->name);
            sb_puts(&b, "\".");
            report1(c, sb_done(&b), sp->loc);
        }
        unique_directives(c, sp->dirs, sp->ndirs);
    }
    walk_directives(c, sp->dirs, sp->ndirs, DL_FRAGMENT_SPREAD, fdef, parent, true);
}

static void walk_inline(struct vctx *c, const struct gq_selection *in, const struct gq_type_def *parent,
                        const struct gq_tref *owner, const struct gq_field_def *fdef, bool in_intro)
{
    const struct gq_type_def *td = in->type_cond.p ? type_by_name(c, in->type_cond) : NULL;
    const struct gq_tref *it;
    if (in->type_cond.p)
        it = is_output(td) ? named_tref(c, td) : NULL;
    else
        it = named_tref(c, named_of(owner));
    if (c->mode == M_SPEC) {
        if (td && !is_composite(td)) {
            struct sb b = sb_new(c);
            sb_puts(&b, "Fragment cannot condition on non composite type \"");
            sb_str(&b, in->type_cond);
            sb_puts(&b, "\".");
            report1(c, sb_done(&b), in->type_cond_loc);
        }
        const struct gq_type_def *ft = named_of(it);
        if (is_composite(ft) && is_composite(parent) && !types_overlap(c, ft, parent)) {
            struct sb b = sb_new(c);
            sb_puts(&b, "Fragment cannot be spread here as objects of type \"");
            sb_puts(&b, parent->name);
            sb_puts(&b, "\" can never be of type \"");
            sb_puts(&b, ft->name);
            sb_puts(&b, "\".");
            report1(c, sb_done(&b), in->loc);
        }
        unique_directives(c, in->dirs, in->ndirs);
        if (in->type_cond.p)
            known_type(c, in->type_cond, in->type_cond_loc);
    }
    walk_directives(c, in->dirs, in->ndirs, DL_INLINE_FRAGMENT, fdef, parent, true);
    walk_selection_set(c, in->sel, it, fdef, true, in_intro);
}

static void walk_selection_set(struct vctx *c, const struct gq_selection_set *ss, const struct gq_tref *type,
                               const struct gq_field_def *fdef, bool from_inline, bool in_intro)
{
    const struct gq_type_def *parent = named_of(type);
    if (!is_composite(parent))
        parent = NULL;
    if (c->mode == M_PRE)
        c->nsets++;
    /* OverlappingFieldsCanBeMergedRule: an inline fragment's fields are
     * compared with its enclosing set's; a lone field has nothing to
     * compare with. */
    if (c->mode == M_SPEC && !from_inline && (ss->n > 1 || (ss->n == 1 && ss->v[0].kind == GQ_S_INLINE)))
        overlapping_fields(c, parent, ss);
    for (uint32_t i = 0; i < ss->n; i++) {
        const struct gq_selection *s = &ss->v[i];
        switch (s->kind) {
        case GQ_S_FIELD:
            walk_field(c, s, parent, in_intro);
            break;
        case GQ_S_SPREAD:
            walk_spread(c, s, parent, fdef);
            break;
        case GQ_S_INLINE:
            walk_inline(c, s, parent, type, fdef, in_intro);
            break;
        }
    }
}

static void walk_variable_def(struct vctx *c, const struct gq_variable_def *vd, uint32_t index)
{
    const struct gq_tref *vt = type_from_ast(c, vd->type);
    const struct gq_tref *in = vt && is_input(named_of(vt)) ? vt : NULL;
    uint32_t id = name_id(c, vd->name);
    if (c->mode == M_SPEC) {
        if (vt && !in) {
            struct sb b = sb_new(c);
            sb_puts(&b, "Variable \"$");
            sb_str(&b, vd->name);
            sb_puts(&b, "\" cannot be non-input type \"");
            put_type_ast(&b, vd->type);
            sb_puts(&b, "\".");
            report1(c, sb_done(&b), vd->type->loc);
        }
        idset_put(&c->var_defined, id, 0);
        unique_directives(c, vd->dirs, vd->ndirs);
        idset_put(&c->var_def, id, index);
        const struct gq_type *t = vd->type;
        while (t->kind != GQ_T_NAMED)
            t = t->of;
        known_type(c, t->name, t->loc);
    }
    if (vd->def)
        walk_value(c, vd->def, in, false, true, false);
    walk_directives(c, vd->dirs, vd->ndirs, DL_VARIABLE_DEFINITION, NULL, NULL, false);
}

/* getRecursiveVariableUsages: the operation's own, then its fragments'. */
static uint32_t recursive_usages(struct vctx *c, const struct gq_definition *op, struct fragset **fsp)
{
    struct fragset *fs = recursive_fragments(c, &op, 1);
    if (!fs->usages_done) {
        spend_fragment_work(c, fs->nfrags);
        uint32_t total = 0;
        for (uint32_t i = 0; i < fs->nfrags; i++) {
            uint32_t n = c->dx[def_index(c, fs->frags[i])].usages.n;
            spend_fragment_work(c, n);
            total += n;
        }
        fs->nusages = total;
        fs->usages_done = true;
    }
    spend_fragment_work(c, fs->nusages);
    *fsp = fs;
    return c->dx[def_index(c, op)].usages.n + fs->nusages;
}

/* The i-th usage of recursive_usages's list. */
struct usage_iter {
    const struct vctx *c;
    const struct fragset *fs;
    const struct usage *v;
    uint32_t n, i, frag;
};

static void usage_iter_init(struct usage_iter *it, const struct vctx *c, const struct gq_definition *op,
                            const struct fragset *fs)
{
    const struct vec *own = &c->dx[def_index(c, op)].usages;
    *it = (struct usage_iter){c, fs, own->v, own->n, 0, 0};
}

static const struct usage *usage_next(struct usage_iter *it)
{
    while (it->i == it->n) {
        if (it->frag == it->fs->nfrags)
            return NULL;
        const struct vec *u = &it->c->dx[def_index(it->c, it->fs->frags[it->frag++])].usages;
        it->v = u->v;
        it->n = u->n;
        it->i = 0;
    }
    return &it->v[it->i++];
}

/* VariablesInAllowedPositionRule's allowedVariableUsage. */
static bool allowed_usage(const struct gq_tref *var_type, const struct gq_value *var_default,
                          const struct gq_tref *loc_type, bool loc_default)
{
    if (is_non_null(loc_type) && !is_non_null(var_type)) {
        bool non_null_default = var_default && var_default->kind != GQ_V_NULL;
        if (!non_null_default && !loc_default)
            return false;
        return is_type_sub_type_of(var_type, loc_type->of);
    }
    return is_type_sub_type_of(var_type, loc_type);
}

/* Leaving an operation: NoUndefinedVariables, NoUnusedVariables,
 * VariablesInAllowedPosition, in that order. */
static void operation_leave(struct vctx *c, const struct gq_definition *op)
{
    struct fragset *fs;
    recursive_usages(c, op, &fs);
    struct usage_iter it;
    const struct usage *u;

    usage_iter_init(&it, c, op, fs);
    while ((u = usage_next(&it))) {
        if (idset_has(&c->var_defined, u->id))
            continue;
        struct gq_loc l[2] = {u->loc, op->loc};
        struct sb b = sb_new(c);
        sb_puts(&b, "Variable \"$");
        sb_str(&b, id_name(c, u->id));
        sb_puts(&b, op->name.p ? "\" is not defined by operation \"" : "\" is not defined.");
        if (op->name.p) {
            sb_str(&b, op->name);
            sb_puts(&b, "\".");
        }
        report(c, sb_done(&b), l, 2);
    }

    idset_clear(&c->var_used);
    usage_iter_init(&it, c, op, fs);
    while ((u = usage_next(&it)))
        idset_put(&c->var_used, u->id, 0);
    for (uint32_t i = 0; i < op->nvars; i++) {
        const struct gq_variable_def *vd = &op->vars[i];
        if (idset_has(&c->var_used, name_id(c, vd->name)))
            continue;
        struct sb b = sb_new(c);
        sb_puts(&b, "Variable \"$");
        sb_str(&b, vd->name);
        sb_puts(&b, op->name.p ? "\" is never used in operation \"" : "\" is never used.");
        if (op->name.p) {
            sb_str(&b, op->name);
            sb_puts(&b, "\".");
        }
        report1(c, sb_done(&b), vd->loc);
    }

    usage_iter_init(&it, c, op, fs);
    while ((u = usage_next(&it))) {
        if (!u->type || !idset_has(&c->var_def, u->id))
            continue;
        const struct gq_variable_def *vd = &op->vars[idset_get(&c->var_def, u->id)];
        const struct gq_tref *vt = type_from_ast(c, vd->type);
        if (!vt || allowed_usage(vt, vd->def, u->type, u->loc_default))
            continue;
        struct gq_loc l[2] = {vd->loc, u->loc};
        struct sb b = sb_new(c);
        sb_puts(&b, "Variable \"$");
        sb_str(&b, vd->name);
        sb_puts(&b, "\" of type \"");
        put_tref(&b, vt);
        sb_puts(&b, "\" used in position expecting type \"");
        put_tref(&b, u->type);
        sb_puts(&b, "\".");
        report(c, sb_done(&b), l, 2);
    }
}

static void walk_operation(struct vctx *c, const struct gq_definition *d)
{
    const struct gq_type_def *root = d->op == GQ_OP_QUERY ? c->query : d->op == GQ_OP_MUTATION ? c->mutation : NULL;
    if (root && root->kind != GQ_OBJECT)
        root = NULL;
    if (c->mode == M_PRE && d->name.p)
        name_id(c, d->name);
    if (c->mode == M_SPEC) {
        if (d->name.p) {
            uint32_t id = name_id(c, d->name);
            if (c->op_name_seen[id]) {
                struct gq_loc l[2] = {*c->op_name_seen[id], d->name_loc};
                struct sb b = sb_new(c);
                sb_puts(&b, "There can be only one operation named \"");
                sb_str(&b, d->name);
                sb_puts(&b, "\".");
                report(c, sb_done(&b), l, 2);
            } else {
                c->op_name_seen[id] = &d->name_loc;
            }
        }
        if (!d->name.p && c->nops > 1)
            report1(c, "This anonymous operation must be the only defined operation.", d->loc);
        if (d->nvars > 1) {
            uint32_t *ids = xalloc(c, d->nvars * sizeof *ids);
            struct gq_loc *locs = xalloc(c, d->nvars * sizeof *locs);
            for (uint32_t i = 0; i < d->nvars; i++) {
                ids[i] = name_id(c, d->vars[i].name);
                locs[i] = d->vars[i].name_loc;
            }
            report_dups(c, d->nvars, ids, locs, "There can be only one variable named \"$", "\".");
        }
        idset_clear(&c->var_defined);
        idset_clear(&c->var_def);
        unique_directives(c, d->dirs, d->ndirs);
    }
    for (uint32_t i = 0; i < d->nvars; i++)
        walk_variable_def(c, &d->vars[i], i);
    unsigned where = d->op == GQ_OP_QUERY ? DL_QUERY : d->op == GQ_OP_MUTATION ? DL_MUTATION : DL_SUBSCRIPTION;
    walk_directives(c, d->dirs, d->ndirs, where, NULL, NULL, true);
    walk_selection_set(c, d->sel, named_tref(c, root), NULL, false, false);
    if (c->mode == M_SPEC)
        operation_leave(c, d);
}

struct cframe {
    uint32_t id;
    const struct gq_selection **sp;
    uint32_t nsp, i;
};

/* NoFragmentCyclesRule's depth-first search, with a stack of its own: a
 * chain of fragments may be as long as the document. */
static void detect_cycles(struct vctx *c, const struct gq_definition *root)
{
    uint32_t rid = name_id(c, root->name);
    if (c->cycle_visited[rid])
        return;
    c->cycle_visited[rid] = true;
    const struct gq_selection **sp;
    uint32_t nsp;
    fragment_spreads(c, root, &sp, &nsp);
    if (!nsp)
        return;
    struct vec path = {0}, frames = {0};
    c->cycle_index[rid] = 0;
    *(struct cframe *)vpush(c, &frames, sizeof(struct cframe)) = (struct cframe){rid, sp, nsp, 0};
    while (frames.n) {
        struct cframe *f = &((struct cframe *)frames.v)[frames.n - 1];
        if (f->i == f->nsp) {
            c->cycle_index[f->id] = -1;
            if (--frames.n)
                path.n--;
            continue;
        }
        const struct gq_selection *s = f->sp[f->i++];
        uint32_t sid = name_id(c, s->name);
        int32_t ci = c->cycle_index[sid];
        *(const struct gq_selection **)vpush(c, &path, sizeof(void *)) = s;
        if (ci < 0) {
            const struct gq_definition *g = c->frag_by_id[sid];
            if (g && !c->cycle_visited[sid]) {
                c->cycle_visited[sid] = true;
                fragment_spreads(c, g, &sp, &nsp);
                if (nsp) {
                    c->cycle_index[sid] = (int32_t)path.n;
                    *(struct cframe *)vpush(c, &frames, sizeof(struct cframe)) = (struct cframe){sid, sp, nsp, 0};
                    continue;
                }
            }
        } else {
            const struct gq_selection **cyc = (const struct gq_selection **)path.v + ci;
            uint32_t ncyc = path.n - (uint32_t)ci;
            struct sb b = sb_new(c);
            sb_puts(&b, "Cannot spread fragment \"");
            sb_str(&b, s->name);
            sb_puts(&b, "\" within itself");
            for (uint32_t k = 0; k + 1 < ncyc; k++) {
                sb_puts(&b, k ? ", \"" : " via \"");
                sb_str(&b, cyc[k]->name);
                sb_puts(&b, "\"");
            }
            sb_puts(&b, ".");
            struct gq_loc l[LOCS_MAX];
            uint32_t nl = 0;
            for (uint32_t k = 0; k < ncyc && nl < LOCS_MAX; k++)
                l[nl++] = cyc[k]->loc;
            report(c, sb_done(&b), l, nl);
        }
        path.n--;
    }
}

static void walk_fragment(struct vctx *c, const struct gq_definition *d)
{
    const struct gq_type_def *td = type_by_name(c, d->type_cond);
    const struct gq_tref *ft = is_output(td) ? named_tref(c, td) : NULL;
    uint32_t id = name_id(c, d->name);
    if (c->mode == M_SPEC) {
        if (td && !is_composite(td)) {
            struct sb b = sb_new(c);
            sb_puts(&b, "Fragment \"");
            sb_str(&b, d->name);
            sb_puts(&b, "\" cannot condition on non composite type \"");
            sb_str(&b, d->type_cond);
            sb_puts(&b, "\".");
            report1(c, sb_done(&b), d->type_cond_loc);
        }
        if (c->frag_name_seen[id]) {
            struct gq_loc l[2] = {*c->frag_name_seen[id], d->name_loc};
            struct sb b = sb_new(c);
            sb_puts(&b, "There can be only one fragment named \"");
            sb_str(&b, d->name);
            sb_puts(&b, "\".");
            report(c, sb_done(&b), l, 2);
        } else {
            c->frag_name_seen[id] = &d->name_loc;
        }
        detect_cycles(c, d);
        unique_directives(c, d->dirs, d->ndirs);
        known_type(c, d->type_cond, d->type_cond_loc);
    }
    walk_directives(c, d->dirs, d->ndirs, DL_FRAGMENT_DEFINITION, NULL, NULL, true);
    walk_selection_set(c, d->sel, ft, NULL, false, false);
}

static void walk_document(struct vctx *c)
{
    const struct gq_document *doc = c->doc;
    if (c->mode == M_SPEC) {
        /* ExecutableDefinitionsRule reports them all on entering the document. */
        for (uint32_t i = 0; i < doc->ndefs; i++) {
            const struct gq_definition *d = &doc->defs[i];
            if (d->kind != GQ_D_TYPE_SYSTEM)
                continue;
            struct sb b = sb_new(c);
            sb_puts(&b, "The ");
            if (d->name.p) {
                sb_puts(&b, "\"");
                sb_str(&b, d->name);
                sb_puts(&b, "\"");
            } else {
                sb_puts(&b, "schema");
            }
            sb_puts(&b, " definition is not executable.");
            report1(c, sb_done(&b), d->loc);
        }
    }
    for (uint32_t i = 0; i < doc->ndefs; i++) {
        const struct gq_definition *d = &doc->defs[i];
        c->cur_def = i;
        c->rec = 0;
        if (d->kind == GQ_D_OPERATION)
            walk_operation(c, d);
        else if (d->kind == GQ_D_FRAGMENT)
            walk_fragment(c, d);
    }
    if (c->mode != M_SPEC)
        return;
    /* NoUnusedFragmentsRule, on leaving the document. */
    const struct gq_definition **ops = xalloc(c, (c->nops ? c->nops : 1) * sizeof *ops);
    uint32_t nops = 0;
    for (uint32_t i = 0; i < doc->ndefs; i++)
        if (doc->defs[i].kind == GQ_D_OPERATION)
            ops[nops++] = &doc->defs[i];
    struct fragset *fs = recursive_fragments(c, ops, nops);
    idset_clear(&c->used_frags);
    for (uint32_t i = 0; i < fs->nfrags; i++)
        idset_put(&c->used_frags, name_id(c, fs->frags[i]->name), 0);
    for (uint32_t i = 0; i < doc->ndefs; i++) {
        const struct gq_definition *d = &doc->defs[i];
        if (d->kind != GQ_D_FRAGMENT || idset_has(&c->used_frags, name_id(c, d->name)))
            continue;
        struct sb b = sb_new(c);
        sb_puts(&b, "Fragment \"");
        sb_str(&b, d->name);
        sb_puts(&b, "\" is never used.");
        report1(c, sb_done(&b), d->loc);
    }
}

/* ---- MaxIntrospectionDepthRule ------------------------------------------------------ */

static bool intro_set(struct vctx *c, const struct gq_selection_set *ss, int depth);

/* checkDepth for one selection: fragments are memoized by the depth they
 * were entered at, for the whole document, as graphql-js does. */
static bool intro_sel(struct vctx *c, const struct gq_selection *s, int depth)
{
    if (s->kind == GQ_S_SPREAD) {
        uint32_t id = name_id(c, s->name);
        if (c->intro_exceeded[id] >= 0 && c->intro_exceeded[id] <= depth)
            return true;
        if ((idset_has(&c->intro_visited, id) && (int)idset_get(&c->intro_visited, id) >= depth) ||
            (c->intro_checked[id] >= 0 && c->intro_checked[id] >= depth))
            return false;
        const struct gq_definition *f = c->frag_by_id[id];
        if (!f)
            return false;
        idset_put(&c->intro_visited, id, (uint32_t)depth);
        if (intro_set(c, f->sel, depth)) {
            c->intro_exceeded[id] = (int8_t)depth;
            return true;
        }
        c->intro_checked[id] = (int8_t)depth;
        return false;
    }
    if (s->kind == GQ_S_FIELD && (str_eq(s->name, "fields") || str_eq(s->name, "interfaces") ||
                                  str_eq(s->name, "possibleTypes") || str_eq(s->name, "inputFields"))) {
        if (++depth >= INTRO_LISTS_MAX)
            return true;
    }
    return s->sel && intro_set(c, s->sel, depth);
}

static bool intro_set(struct vctx *c, const struct gq_selection_set *ss, int depth)
{
    rec_enter(c);
    bool r = false;
    for (uint32_t i = 0; i < ss->n && !r; i++)
        r = intro_sel(c, &ss->v[i], depth);
    c->rec--;
    return r;
}

static bool intro_exceeds(struct vctx *c, const struct gq_selection *f)
{
    idset_clear(&c->intro_visited);
    return f->sel && intro_set(c, f->sel, 0);
}

/* ---- OverlappingFieldsCanBeMergedRule --------------------------------------------- */

/* graphql-js's field details; `amap` is its getFieldInfo's argument map
 * (name id -> index of the last argument of that name), made when the
 * field is first compared. */
struct fd {
    const struct gq_type_def *parent;
    const struct gq_selection *node;
    const struct gq_field_def *def;
    bool simple_leaf;
    uint32_t idx;              /* identity, for the memo tables */
    uint32_t *amap;            /* pairs: id, index + 1 (0: empty slot) */
    uint32_t amask;
};

struct grp {
    uint32_t name;
    uint32_t n;
    struct fd **v;
};

/* collectFields's result for (parent type, selection set). */
struct cfr {
    struct grp *g;
    uint32_t ng;
    uint32_t *frags;           /* fragment names spread, first appearance order */
    uint32_t nfrags;
    uint32_t *slot;            /* name id -> group index + 1 */
    uint32_t mask;
    uint32_t idx;
};

struct conflict {
    uint32_t name;
    const char *reason;
    const struct gq_selection **f1, **f2;
    uint32_t n1, n2;
};

/* Conflicts as found. Only the first `keep` are built: a message uses at
 * most CONFLICT_NODES_MAX sub-conflicts (each adds a node to each side and
 * more than 50 characters to a detail cut at CONFLICT_DETAIL_MAX), and the
 * errors stop after MAX_ERRORS; the rest are counted, which is all that
 * graphql-js makes of them, so the memory stays bounded. */
struct clist {
    struct conflict **v;
    uint32_t n, keep, total;
};

static struct conflict unbuilt;        /* a conflict that nobody will read */

static void spend_overlap(struct vctx *c, int64_t cost)
{
    c->overlap_budget -= cost;
    if (c->overlap_budget < 0)
        abort_with(c, MSG_ABORTED);
}

static uint32_t hash_u32(uint32_t x)
{
    x ^= x >> 16;
    x *= 0x7feb352du;
    x ^= x >> 15;
    x *= 0x846ca68bu;
    x ^= x >> 16;
    return x;
}

static uint32_t pow2_above(uint32_t n)
{
    uint32_t cap = 8;
    while (cap < 2 * n)
        cap *= 2;
    return cap;
}

/* The memo tables of the rule grow with the work it does (each entry is
 * paid for from its budget), not with the document; they live in malloc'ed
 * memory, freed when validation ends, so that growing them leaves nothing
 * in the request's arena. */
static bool hmap_get(const struct hmap *m, uint64_t k, uint32_t *v)
{
    if (!m->cap)
        return false;
    for (uint32_t h = hash_pair(k, 0) & (m->cap - 1); m->t[h].used; h = (h + 1) & (m->cap - 1))
        if (m->t[h].k == k) {
            *v = m->t[h].v;
            return true;
        }
    return false;
}

static void hmap_put(struct vctx *c, struct hmap *m, uint64_t k, uint32_t v)
{
    if ((m->n + 1) * 2 > m->cap) {
        uint32_t cap = m->cap ? m->cap * 2 : 256;
        struct hent *t = cap <= (1u << 26) ? calloc(cap, sizeof *t) : NULL;
        if (!t)
            abort_with(c, MSG_NOMEM);
        for (uint32_t i = 0; i < m->cap; i++) {
            if (!m->t[i].used)
                continue;
            uint32_t h = hash_pair(m->t[i].k, 0) & (cap - 1);
            while (t[h].used)
                h = (h + 1) & (cap - 1);
            t[h] = m->t[i];
        }
        free(m->t);
        m->t = t;
        m->cap = cap;
    }
    uint32_t h = hash_pair(k, 0) & (m->cap - 1);
    while (m->t[h].used && m->t[h].k != k)
        h = (h + 1) & (m->cap - 1);
    if (!m->t[h].used)
        m->n++;
    m->t[h] = (struct hent){k, v, true};
}

static uint64_t key2(uint32_t a, uint32_t b)
{
    return (uint64_t)a << 32 | b;
}

/* collectFields's scratch: sized by a first count, so that a collection
 * costs a handful of allocations whatever its size. */
struct collect {
    struct fd *fds;            /* in document order */
    uint32_t *gidx;            /* the group of each */
    uint32_t nfds;
    uint32_t *gnames;          /* the name of each group */
    uint32_t ng;
    uint32_t *frags;
    uint32_t nfrags;
};

static void count_selections(const struct gq_selection_set *ss, uint32_t *fields, uint32_t *spreads)
{
    for (uint32_t i = 0; i < ss->n; i++) {
        if (ss->v[i].kind == GQ_S_FIELD)
            ++*fields;
        else if (ss->v[i].kind == GQ_S_SPREAD)
            ++*spreads;
        else
            count_selections(ss->v[i].sel, fields, spreads);
    }
}

static void collect_impl(struct vctx *c, const struct gq_type_def *parent, const struct gq_selection_set *ss,
                         struct collect *k)
{
    for (uint32_t i = 0; i < ss->n; i++) {
        const struct gq_selection *s = &ss->v[i];
        if (s->kind == GQ_S_FIELD) {
            const struct gq_field_def *def = NULL;
            if (parent && (parent->kind == GQ_OBJECT || parent->kind == GQ_INTERFACE))
                def = type_field(parent, s->name);
            uint32_t id = name_id(c, s->alias.p ? s->alias : s->name);
            if (!idset_has(&c->cf_groups, id)) {
                idset_put(&c->cf_groups, id, k->ng);
                k->gnames[k->ng++] = id;
            }
            struct fd *f = &k->fds[k->nfds];
            f->parent = parent;
            f->node = s;
            f->def = def;
            f->simple_leaf = s->nargs == 0 && !s->sel;
            f->idx = c->nfds++;
            k->gidx[k->nfds++] = idset_get(&c->cf_groups, id);
        } else if (s->kind == GQ_S_SPREAD) {
            uint32_t id = name_id(c, s->name);
            if (!idset_has(&c->cf_frags, id)) {
                idset_put(&c->cf_frags, id, 0);
                k->frags[k->nfrags++] = id;
            }
        } else {
            const struct gq_type_def *t = s->type_cond.p ? type_by_name(c, s->type_cond) : parent;
            collect_impl(c, t, s->sel, k);
        }
    }
}

static const struct cfr *collect_fields(struct vctx *c, const struct gq_type_def *parent,
                                        const struct gq_selection_set *ss)
{
    uintptr_t cached;
    if (pmap_get(&c->cfr_cache, PKEY(parent), PKEY(ss), &cached))
        return (const struct cfr *)cached;
    uint32_t nfields = 0, nspreads = 0;
    count_selections(ss, &nfields, &nspreads);
    struct collect k = {0};
    k.fds = xalloc(c, nfields * sizeof *k.fds);
    k.gidx = xalloc(c, nfields * sizeof *k.gidx);
    k.gnames = xalloc(c, nfields * sizeof *k.gnames);
    k.frags = xalloc(c, nspreads * sizeof *k.frags);
    idset_clear(&c->cf_groups);
    idset_clear(&c->cf_frags);
    collect_impl(c, parent, ss, &k);

    /* The groups share one array of pointers, each its slice. */
    struct cfr *r = xalloc(c, sizeof *r);
    r->idx = c->ncfrs++;
    r->ng = k.ng;
    r->g = xalloc(c, k.ng * sizeof *r->g);
    struct fd **ptrs = xalloc(c, nfields * sizeof *ptrs);
    for (uint32_t i = 0; i < k.nfds; i++)
        r->g[k.gidx[i]].n++;
    for (uint32_t g = 0, at = 0; g < k.ng; g++) {
        r->g[g].name = k.gnames[g];
        r->g[g].v = ptrs + at;
        at += r->g[g].n;
        r->g[g].n = 0;
    }
    for (uint32_t i = 0; i < k.nfds; i++) {
        struct grp *g = &r->g[k.gidx[i]];
        g->v[g->n++] = &k.fds[i];
    }
    r->frags = k.frags;
    r->nfrags = k.nfrags;
    uint32_t cap = pow2_above(r->ng);
    r->mask = cap - 1;
    r->slot = xalloc(c, cap * sizeof *r->slot);
    for (uint32_t g = 0; g < r->ng; g++) {
        uint32_t h = hash_u32(r->g[g].name) & r->mask;
        while (r->slot[h])
            h = (h + 1) & r->mask;
        r->slot[h] = g + 1;
    }
    pmap_set(c, &c->cfr_cache, PKEY(parent), PKEY(ss), (uintptr_t)r);
    return r;
}

static const struct grp *find_group(const struct cfr *r, uint32_t name)
{
    for (uint32_t h = hash_u32(name) & r->mask; r->slot[h]; h = (h + 1) & r->mask)
        if (r->g[r->slot[h] - 1].name == name)
            return &r->g[r->slot[h] - 1];
    return NULL;
}

struct sortent {
    const char *p;
    uint32_t n, i;
};

static int cmp_sortent(const void *a, const void *b)
{
    const struct sortent *x = a, *y = b;
    uint32_t n = x->n < y->n ? x->n : y->n;
    int r = n ? memcmp(x->p, y->p, n) : 0;
    if (r == 0)
        r = (x->n > y->n) - (x->n < y->n);
    return r ? r : (x->i > y->i) - (x->i < y->i);
}

/* An object value's fields sorted by name, stably, as stringifyValue
 * sorts them. */
static const uint32_t *sorted_fields(struct vctx *c, const struct gq_value *v)
{
    uintptr_t cached;
    if (pmap_get(&c->sorted_objects, PKEY(v), 0, &cached))
        return (const uint32_t *)cached;
    uint32_t n = v->obj.n;
    struct sortent *e = xalloc(c, (n ? n : 1) * sizeof *e);
    for (uint32_t i = 0; i < n; i++)
        e[i] = (struct sortent){v->obj.v[i].name.p, v->obj.v[i].name.n, i};
    qsort(e, n, sizeof *e, cmp_sortent);
    uint32_t *order = xalloc(c, (n ? n : 1) * sizeof *order);
    for (uint32_t i = 0; i < n; i++)
        order[i] = e[i].i;
    pmap_set(c, &c->sorted_objects, PKEY(v), 0, (uintptr_t)order);
    return order;
}

/* stringifyValue(a) === stringifyValue(b). */
static bool same_value(struct vctx *c, const struct gq_value *a, const struct gq_value *b)
{
    if (a->kind != b->kind)
        return false;
    switch (a->kind) {
    case GQ_V_VARIABLE:
    case GQ_V_INT:
    case GQ_V_FLOAT:
    case GQ_V_ENUM:
        return str_same(a->s, b->s);
    case GQ_V_STRING:
        return a->block == b->block && str_same(a->s, b->s);
    case GQ_V_BOOLEAN:
        return a->b == b->b;
    case GQ_V_NULL:
        return true;
    case GQ_V_LIST:
        if (a->list.n != b->list.n)
            return false;
        for (uint32_t i = 0; i < a->list.n; i++)
            if (!same_value(c, a->list.v[i], b->list.v[i]))
                return false;
        return true;
    case GQ_V_OBJECT: {
        if (a->obj.n != b->obj.n)
            return false;
        const uint32_t *oa = sorted_fields(c, a), *ob = sorted_fields(c, b);
        for (uint32_t i = 0; i < a->obj.n; i++) {
            const struct gq_object_field *fa = &a->obj.v[oa[i]], *fb = &b->obj.v[ob[i]];
            if (!str_same(fa->name, fb->name) || !same_value(c, fa->value, fb->value))
                return false;
        }
        return true;
    }
    }
    return false;
}

static void arg_map(struct vctx *c, struct fd *f)
{
    if (f->amap)
        return;
    uint32_t cap = pow2_above(f->node->nargs);
    f->amask = cap - 1;
    f->amap = xalloc(c, 2 * cap * sizeof *f->amap);
    for (uint32_t i = 0; i < f->node->nargs; i++) {
        uint32_t id = name_id(c, f->node->args[i].name);
        uint32_t h = hash_u32(id) & f->amask;
        while (f->amap[2 * h + 1] && f->amap[2 * h] != id)
            h = (h + 1) & f->amask;
        f->amap[2 * h] = id;
        f->amap[2 * h + 1] = i + 1;
    }
}

static const struct gq_value *arg_value(const struct fd *f, uint32_t id)
{
    for (uint32_t h = hash_u32(id) & f->amask; f->amap[2 * h + 1]; h = (h + 1) & f->amask)
        if (f->amap[2 * h] == id)
            return f->node->args[f->amap[2 * h + 1] - 1].value;
    return NULL;
}

/* sameArguments, for two fields with as many arguments (at least one). */
static bool same_arguments(struct vctx *c, struct fd *f1, struct fd *f2)
{
    arg_map(c, f2);
    for (uint32_t i = 0; i < f1->node->nargs; i++) {
        spend_overlap(c, 1);
        const struct gq_value *v2 = arg_value(f2, name_id(c, f1->node->args[i].name));
        if (!v2 || !same_value(c, f1->node->args[i].value, v2))
            return false;
    }
    return true;
}

/* doTypesConflict. */
static bool types_conflict(struct vctx *c, const struct gq_tref *t1, const struct gq_tref *t2)
{
    for (;;) {
        if (same_type(t1, t2))
            return false;
        spend_overlap(c, 1);
        if (is_list(t1)) {
            if (!is_list(t2))
                return true;
        } else if (is_list(t2)) {
            return true;
        } else if (is_non_null(t1)) {
            if (!is_non_null(t2))
                return true;
        } else if (is_non_null(t2)) {
            return true;
        } else {
            if (is_leaf(t1->named) || is_leaf(t2->named))
                return t1->named != t2->named;
            return false;
        }
        t1 = t1->of;
        t2 = t2->of;
    }
}

static void put_abbrev(struct sb *b, const char *p, size_t n)
{
    if (n > CONFLICT_DETAIL_MAX) {
        sb_put(b, p, CONFLICT_DETAIL_MAX);
        sb_puts(b, "...");
    } else {
        sb_put(b, p, n);
    }
}

static struct conflict *new_conflict(struct vctx *c, uint32_t name, const char *reason,
                                     const struct gq_selection *n1, const struct gq_selection *n2)
{
    struct conflict *k = xalloc(c, sizeof *k);
    k->name = name;
    k->reason = reason;
    k->f1 = xalloc(c, 2 * sizeof *k->f1);
    k->f2 = k->f1 + 1;
    k->f1[0] = n1;
    k->f2[0] = n2;
    k->n1 = k->n2 = 1;
    return k;
}

/* collectConflictNodes: the field, then the nodes of the sub-conflicts
 * taken from their ends, at most CONFLICT_NODES_MAX. */
static void conflict_nodes(struct vctx *c, const struct gq_selection *node, const struct clist *l, bool second,
                           const struct gq_selection ***out, uint32_t *nout)
{
    const struct gq_selection *nodes[CONFLICT_NODES_MAX];
    uint32_t m = 0;
    nodes[m++] = node;
    for (uint32_t i = 0; i < l->n; i++) {
        uint32_t remaining = CONFLICT_NODES_MAX - m;
        const struct gq_selection **src = second ? l->v[i]->f2 : l->v[i]->f1;
        uint32_t sn = second ? l->v[i]->n2 : l->v[i]->n1;
        uint32_t take = sn < remaining ? sn : remaining;
        for (uint32_t k = sn - take; k < sn; k++)
            nodes[m++] = src[k];
        if (m == CONFLICT_NODES_MAX)
            break;
    }
    *out = xalloc(c, m * sizeof **out);
    memcpy(*out, nodes, m * sizeof *nodes);
    *nout = m;
}

static struct conflict *subfield_conflicts(struct vctx *c, const struct clist *l, uint32_t name,
                                           const struct gq_selection *n1, const struct gq_selection *n2, bool want)
{
    if (l->total == 0)
        return NULL;
    if (!want)
        return &unbuilt;
    struct sb m = sb_new(c);
    for (uint32_t i = 0; i < l->n; i++) {
        struct gq_str sub = id_name(c, l->v[i]->name);
        if (i)
            sb_puts(&m, " and ");
        sb_puts(&m, "subfields \"");
        put_abbrev(&m, sub.p, sub.n);
        sb_puts(&m, "\" conflict because ");
        sb_puts(&m, l->v[i]->reason);
        if (m.n > CONFLICT_DETAIL_MAX)
            break;
    }
    struct sb r = sb_new(c);
    put_abbrev(&r, sb_done(&m), m.n);
    struct conflict *k = xalloc(c, sizeof *k);
    k->name = name;
    k->reason = sb_done(&r);
    conflict_nodes(c, n1, l, false, &k->f1, &k->n1);
    conflict_nodes(c, n2, l, true, &k->f2, &k->n2);
    return k;
}

static void between_sub_selection_sets(struct vctx *c, struct clist *out, bool excl, const struct gq_type_def *pt1,
                                       const struct gq_selection_set *ss1, const struct gq_type_def *pt2,
                                       const struct gq_selection_set *ss2);

/* findConflict. Only a wanted conflict is built (else &unbuilt). */
static struct conflict *find_conflict(struct vctx *c, bool parents_excl, uint32_t name, struct fd *f1, struct fd *f2,
                                      bool want)
{
    bool excl = parents_excl || (f1->parent != f2->parent && f1->parent && f2->parent &&
                                 f1->parent->kind == GQ_OBJECT && f2->parent->kind == GQ_OBJECT);
    spend_overlap(c, 2);
    const struct gq_tref *t1 = f1->def ? f1->def->tref : NULL, *t2 = f2->def ? f2->def->tref : NULL;
    const struct gq_selection *n1 = f1->node, *n2 = f2->node;
    if (f1->simple_leaf && f2->simple_leaf && same_type(t1, t2) && str_same(n1->name, n2->name))
        return NULL;
    if (!excl) {
        if (!str_same(n1->name, n2->name)) {
            if (!want)
                return &unbuilt;
            struct sb b = sb_new(c);
            sb_puts(&b, "\"");
            put_abbrev(&b, n1->name.p, n1->name.n);
            sb_puts(&b, "\" and \"");
            put_abbrev(&b, n2->name.p, n2->name.n);
            sb_puts(&b, "\" are different fields");
            return new_conflict(c, name, sb_done(&b), n1, n2);
        }
        /* Only comparing arguments costs budget, so only it is memoized
         * (graphql-js memoizes every reason, to the same effect). */
        uint32_t n1a = n1->nargs, n2a = n2->nargs;
        bool differ;
        if (n1a == 0 || n1a != n2a) {
            differ = n1a != n2a;
        } else {
            uint32_t memo;
            if (!hmap_get(&c->comparisons, key2(f1->idx, f2->idx), &memo)) {
                memo = same_arguments(c, f1, f2) ? 1 : 2;
                hmap_put(c, &c->comparisons, key2(f1->idx, f2->idx), memo);
            }
            differ = memo == 2;
        }
        if (differ)
            return want ? new_conflict(c, name, "they have differing arguments", n1, n2) : &unbuilt;
    }
    if (t1 && t2 && types_conflict(c, t1, t2)) {
        if (!want)
            return &unbuilt;
        struct sb b = sb_new(c);
        sb_puts(&b, "they return conflicting types \"");
        put_tref(&b, t1);
        sb_puts(&b, "\" and \"");
        put_tref(&b, t2);
        sb_puts(&b, "\"");
        return new_conflict(c, name, sb_done(&b), n1, n2);
    }
    if (n1->sel && n2->sel) {
        struct clist sub = {NULL, 0, want ? CONFLICT_NODES_MAX : 0, 0};
        rec_enter(c);
        between_sub_selection_sets(c, &sub, excl, named_of(t1), n1->sel, named_of(t2), n2->sel);
        c->rec--;
        return subfield_conflicts(c, &sub, name, n1, n2, want);
    }
    return NULL;
}

static void compare(struct vctx *c, struct clist *out, bool excl, uint32_t name, struct fd *f1, struct fd *f2)
{
    bool want = out->n < out->keep;
    struct conflict *k = find_conflict(c, excl, name, f1, f2, want);
    if (!k)
        return;
    out->total++;
    if (want) {
        if (!out->v)
            out->v = xalloc(c, out->keep * sizeof *out->v);
        out->v[out->n++] = k;
    }
}

/* collectConflictsBetween; getOverlappingFields's cost is paid the first
 * time a pair of collections meets, as its cache does. */
static void between(struct vctx *c, struct clist *out, bool excl, const struct cfr *r1, const struct cfr *r2)
{
    if (!r1->ng || !r2->ng)
        return;
    uint32_t seen;
    if (!hmap_get(&c->overlap_seen, key2(r1->idx, r2->idx), &seen)) {
        hmap_put(c, &c->overlap_seen, key2(r1->idx, r2->idx), 1);
        spend_overlap(c, r1->ng);
    }
    for (uint32_t i = 0; i < r1->ng; i++) {
        const struct grp *g1 = &r1->g[i], *g2 = find_group(r2, g1->name);
        for (uint32_t a = 0; g2 && a < g1->n; a++)
            for (uint32_t b = 0; b < g2->n; b++)
                compare(c, out, excl, g1->name, g1->v[a], g2->v[b]);
    }
}

static const struct cfr *fragment_fields(struct vctx *c, const struct gq_definition *frag)
{
    return collect_fields(c, type_by_name(c, frag->type_cond), frag->sel);
}

/* collectConflictsBetweenFieldsAndFragment. */
static void fields_and_fragment(struct vctx *c, struct clist *out, bool excl, const struct cfr *r, uint32_t frag_id)
{
    spend_overlap(c, 1);
    if (!r->ng)
        return;
    uint32_t compared;
    if (hmap_get(&c->compared_frags, key2(r->idx, frag_id), &compared) && (compared == 1 || (excl && compared == 2)))
        return;
    hmap_put(c, &c->compared_frags, key2(r->idx, frag_id), 1 + excl);
    const struct gq_definition *frag = c->frag_by_id[frag_id];
    if (!frag)
        return;
    const struct cfr *r2 = fragment_fields(c, frag);
    if (r == r2)
        return;
    between(c, out, excl, r, r2);
    rec_enter(c);
    for (uint32_t i = 0; i < r2->nfrags; i++)
        fields_and_fragment(c, out, excl, r, r2->frags[i]);
    c->rec--;
}

/* PairSet.has(a, b, weaklyPresent) */
static bool pair_seen(const struct vctx *c, uint32_t a, uint32_t b, bool excl)
{
    uint32_t v;
    if (hmap_get(&c->frag_pairs, key2(a, b), &v) && (excl || v == 1))
        return true;
    return hmap_get(&c->frag_pairs, key2(b, a), &v) && (excl || v == 1);
}

/* collectConflictsBetweenFragments. */
static void between_fragments(struct vctx *c, struct clist *out, bool excl, uint32_t a, uint32_t b)
{
    spend_overlap(c, 2);
    if (a == b || pair_seen(c, a, b, excl))
        return;
    hmap_put(c, &c->frag_pairs, key2(a, b), 1 + excl);
    const struct gq_definition *fa = c->frag_by_id[a], *fb = c->frag_by_id[b];
    if (!fa || !fb)
        return;
    const struct cfr *r1 = fragment_fields(c, fa), *r2 = fragment_fields(c, fb);
    between(c, out, excl, r1, r2);
    rec_enter(c);
    for (uint32_t i = 0; i < r2->nfrags; i++)
        between_fragments(c, out, excl, a, r2->frags[i]);
    for (uint32_t i = 0; i < r1->nfrags; i++)
        between_fragments(c, out, excl, r1->frags[i], b);
    c->rec--;
}

static void between_sub_selection_sets(struct vctx *c, struct clist *out, bool excl, const struct gq_type_def *pt1,
                                       const struct gq_selection_set *ss1, const struct gq_type_def *pt2,
                                       const struct gq_selection_set *ss2)
{
    const struct cfr *r1 = collect_fields(c, pt1, ss1), *r2 = collect_fields(c, pt2, ss2);
    between(c, out, excl, r1, r2);
    for (uint32_t i = 0; i < r2->nfrags; i++)
        fields_and_fragment(c, out, excl, r1, r2->frags[i]);
    for (uint32_t i = 0; i < r1->nfrags; i++)
        fields_and_fragment(c, out, excl, r2, r1->frags[i]);
    for (uint32_t i = 0; i < r1->nfrags; i++)
        for (uint32_t j = 0; j < r2->nfrags; j++)
            between_fragments(c, out, excl, r1->frags[i], r2->frags[j]);
}

/* findConflictsWithinSelectionSet, then the errors. */
static void overlapping_fields(struct vctx *c, const struct gq_type_def *parent, const struct gq_selection_set *ss)
{
    struct clist out = {NULL, 0, MAX_ERRORS + 1, 0};
    const struct cfr *r = collect_fields(c, parent, ss);
    for (uint32_t g = 0; g < r->ng; g++)
        for (uint32_t i = 0; i < r->g[g].n; i++)
            for (uint32_t j = i + 1; j < r->g[g].n; j++)
                compare(c, &out, false, r->g[g].name, r->g[g].v[i], r->g[g].v[j]);
    if (r->nfrags && (r->ng || r->nfrags > 1))
        for (uint32_t i = 0; i < r->nfrags; i++) {
            fields_and_fragment(c, &out, false, r, r->frags[i]);
            for (uint32_t j = i + 1; j < r->nfrags; j++)
                between_fragments(c, &out, false, r->frags[i], r->frags[j]);
        }
    for (uint32_t i = 0; i < out.n; i++) {
        const struct conflict *k = out.v[i];
        struct gq_str name = id_name(c, k->name);
        struct sb b = sb_new(c);
        sb_puts(&b, "Fields \"");
        put_abbrev(&b, name.p, name.n);
        sb_puts(&b, "\" conflict because ");
        sb_puts(&b, k->reason);
        sb_puts(&b, ". Use different aliases on the fields to fetch both if this was intentional.");
        struct gq_loc l[2 * CONFLICT_NODES_MAX];
        uint32_t nl = 0;
        for (uint32_t j = 0; j < k->n1; j++)
            l[nl++] = k->f1[j]->loc;
        for (uint32_t j = 0; j < k->n2; j++)
            l[nl++] = k->f2[j]->loc;
        report(c, sb_done(&b), l, nl);
    }
}

/* ---- hookd's limits: depth and cost, fragments expanded ------------------------------ */

struct measure {
    uint32_t cost;             /* fields, saturating */
    uint32_t height;           /* deepest field nesting */
};

static uint32_t sat_add(uint32_t a, uint32_t b)
{
    return a > UINT32_MAX - b ? UINT32_MAX : a + b;
}

/* Introspection (__schema, __type) counts one level of depth: graphql-js's
 * MaxIntrospectionDepthRule and the cost bound what is below, and a
 * client's introspection query is deeper than any limit on data. */
static struct measure measure_set(struct vctx *c, const struct gq_selection_set *ss, struct pmap *memo)
{
    uintptr_t cached;
    if (pmap_get(memo, PKEY(ss), 0, &cached))
        return *(const struct measure *)cached;
    rec_enter(c);
    struct measure m = {0, 0};
    for (uint32_t i = 0; i < ss->n; i++) {
        const struct gq_selection *s = &ss->v[i];
        const struct gq_selection_set *sub = s->sel;
        if (s->kind == GQ_S_SPREAD) {
            const struct gq_definition *f = c->frag_by_id[name_id(c, s->name)];
            sub = f ? f->sel : NULL;
        }
        struct measure k = sub ? measure_set(c, sub, memo) : (struct measure){0, 0};
        if (s->kind == GQ_S_FIELD) {
            m.cost = sat_add(m.cost, sat_add(1, k.cost));
            uint32_t h = is_intro_root(s) || !sub ? 1 : k.height + 1;
            if (h > m.height)
                m.height = h;
        } else {
            m.cost = sat_add(m.cost, k.cost);
            if (k.height > m.height)
                m.height = k.height;
        }
    }
    c->rec--;
    struct measure *p = xalloc(c, sizeof *p);
    *p = m;
    pmap_set(c, memo, PKEY(ss), 0, (uintptr_t)p);
    return m;
}

/* The first field, in document order with fragments expanded, nested
 * deeper than max: it is where the depth error points. */
static const struct gq_selection *too_deep(struct vctx *c, const struct gq_selection_set *ss, uint32_t depth,
                                           uint32_t max, struct pmap *memo)
{
    for (uint32_t i = 0; i < ss->n; i++) {
        const struct gq_selection *s = &ss->v[i];
        const struct gq_selection_set *sub = s->sel;
        if (s->kind == GQ_S_SPREAD) {
            const struct gq_definition *f = c->frag_by_id[name_id(c, s->name)];
            sub = f ? f->sel : NULL;
        }
        if (s->kind == GQ_S_FIELD) {
            if (depth + 1 > max)
                return s;
            if (!sub || is_intro_root(s))
                continue;
            if (depth + 1 + measure_set(c, sub, memo).height > max)
                return too_deep(c, sub, depth + 1, max, memo);
        } else if (sub && depth + measure_set(c, sub, memo).height > max) {
            return too_deep(c, sub, depth, max, memo);
        }
    }
    return NULL;
}

static void check_limits(struct vctx *c, const struct gq_limits *lim)
{
    struct pmap memo = {0};
    pmap_reserve(c, &memo, c->nsets);
    for (uint32_t i = 0; i < c->doc->ndefs; i++) {
        const struct gq_definition *d = &c->doc->defs[i];
        if (d->kind != GQ_D_OPERATION)
            continue;
        c->rec = 0;
        struct measure m = measure_set(c, d->sel, &memo);
        if (lim->max_depth && m.height > lim->max_depth) {
            const struct gq_selection *s = too_deep(c, d->sel, 0, lim->max_depth, &memo);
            struct sb b = sb_new(c);
            char num[64];
            snprintf(num, sizeof num, "%u levels deep, more than the limit of %u.", m.height, lim->max_depth);
            sb_puts(&b, "The operation nests fields ");
            sb_puts(&b, num);
            push_error(c, sb_done(&b), s ? &s->loc : &d->loc, 1);
        }
        if (lim->max_fields && m.cost > lim->max_fields) {
            struct sb b = sb_new(c);
            char num[96];
            snprintf(num, sizeof num, "%u fields once fragments are expanded, more than the limit of %u.", m.cost,
                     lim->max_fields);
            sb_puts(&b, "The operation selects ");
            sb_puts(&b, num);
            push_error(c, sb_done(&b), &d->loc, 1);
        }
    }
}

/* ---- entry ------------------------------------------------------------------------- */

static void idset_init(struct vctx *c, struct idset *s)
{
    uint32_t n = c->nnames ? c->nnames : 1;
    s->stamp = xalloc(c, n * sizeof *s->stamp);
    s->val = xalloc(c, n * sizeof *s->val);
    s->cur = 1;
}

static void init_meta(struct vctx *c)
{
    const struct gq_type_def *string = by_cname(c, "String");
    const struct gq_tref *str = named_tref(c, string);
    c->meta_typename = (struct gq_field_def){.name = "__typename", .type = "String!"};
    c->meta_typename.tref = str ? new_tref(c, GQ_REF_NON_NULL, NULL, str) : NULL;
    const struct gq_tref *schema = named_tref(c, by_cname(c, "__Schema"));
    c->meta_schema = (struct gq_field_def){.name = "__schema", .type = "__Schema!"};
    c->meta_schema.tref = schema ? new_tref(c, GQ_REF_NON_NULL, NULL, schema) : NULL;
    c->meta_type_args[0] = (struct gq_input_value_def){.name = "name", .type = "String!"};
    c->meta_type_args[0].tref = str ? new_tref(c, GQ_REF_NON_NULL, NULL, str) : NULL;
    c->meta_type = (struct gq_field_def){.name = "__type", .type = "__Type", .args = c->meta_type_args, .nargs = 1};
    c->meta_type.tref = named_tref(c, by_cname(c, "__Type"));
}

static void run(struct vctx *c, const struct gq_limits *lim, bool introspection)
{
    const struct gq_schema *s = c->s;
    const struct gq_document *doc = c->doc;
    c->named = xalloc(c, (s->ntypes ? s->ntypes : 1) * sizeof *c->named);
    for (unsigned i = 0; i < s->ntypes; i++)
        c->named[i] = new_tref(c, GQ_REF_NAMED, &s->types[i], NULL);
    c->query = by_cname(c, s->query_type);
    c->mutation = by_cname(c, s->mutation_type);
    init_meta(c);
    c->fragment_work = FRAGMENT_WORK;
    c->overlap_budget = OVERLAP_BUDGET;
    c->dx = xalloc(c, (doc->ndefs ? doc->ndefs : 1) * sizeof *c->dx);
    for (uint32_t i = 0; i < doc->ndefs; i++)
        c->nops += doc->defs[i].kind == GQ_D_OPERATION;

    c->ntcap = 64;
    c->nt = xalloc(c, c->ntcap * sizeof *c->nt);
    c->mode = M_PRE;
    walk_document(c);

    uint32_t n = c->nnames ? c->nnames : 1;
    c->frag_by_id = xalloc(c, n * sizeof *c->frag_by_id);
    c->op_name_seen = xalloc(c, n * sizeof *c->op_name_seen);
    c->frag_name_seen = xalloc(c, n * sizeof *c->frag_name_seen);
    c->cycle_visited = xalloc(c, n * sizeof *c->cycle_visited);
    c->cycle_index = xalloc(c, n * sizeof *c->cycle_index);
    c->intro_exceeded = xalloc(c, n);
    c->intro_checked = xalloc(c, n);
    for (uint32_t i = 0; i < n; i++) {
        c->cycle_index[i] = -1;
        c->intro_exceeded[i] = c->intro_checked[i] = -1;
    }
    struct idset *sets[] = {&c->rf, &c->grp, &c->obj, &c->cf_groups, &c->cf_frags,
                            &c->var_defined, &c->var_def, &c->var_used, &c->intro_visited, &c->used_frags};
    for (size_t i = 0; i < sizeof sets / sizeof sets[0]; i++)
        idset_init(c, sets[i]);
    c->dir_seen = xalloc(c, (s->ndirectives ? s->ndirectives : 1) * sizeof *c->dir_seen);
    c->dir_seen_stamp = xalloc(c, (s->ndirectives ? s->ndirectives : 1) * sizeof *c->dir_seen_stamp);
    for (uint32_t i = 0; i < doc->ndefs; i++)
        if (doc->defs[i].kind == GQ_D_FRAGMENT)
            c->frag_by_id[name_id(c, doc->defs[i].name)] = &doc->defs[i];

    pmap_reserve(c, &c->cfr_cache, c->nsets);
    c->mode = M_SPEC;
    walk_document(c);
    bool valid = c->nspec == 0;
    if (!introspection) {
        c->mode = M_INTRO;
        walk_document(c);
    }
    if (valid && lim)
        check_limits(c, lim);
}

uint32_t gq_validate(struct gq_arena *a, const struct gq_schema *s, const struct gq_document *doc,
                     const struct gq_limits *lim, bool introspection, struct gq_errors *errs)
{
    /* The schema's type references are resolved (gq_schema_init, done by
     * hk_gq_schema): not here, where it would take a lock per request. */
    errs->n = 0;
    errs->dropped = 0;
    struct vctx *c = gq_alloc(a, sizeof *c);
    if (!c) {
        errs->v[0] = (struct gq_error){.message = MSG_NOMEM};
        errs->n = 1;
        return 1;
    }
    c->a = a;
    c->s = s;
    c->doc = doc;
    c->errs = errs;
    if (setjmp(c->jb) == 0)
        run(c, lim, introspection);
    free(c->overlap_seen.t);
    free(c->comparisons.t);
    free(c->compared_frags.t);
    free(c->frag_pairs.t);
    return errs->n;
}
