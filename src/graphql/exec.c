/* SPDX-License-Identifier: MIT
 * The executor (graphql.h; the specification's section 6 with graphql-js
 * 16's semantics and messages): operation selection, variable and
 * argument coercion, CollectFields with @skip/@include and fragments, root
 * fields resolved by the caller (all at once for a query, one after the
 * other for a mutation), value completion with null propagation written
 * straight into the response text, __typename, and introspection answered
 * from the schema tables. Work, output and nesting are bounded here, not
 * trusted to the validator. */
#include "graphql/graphql.h"

#include <assert.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Past these the execution stops with one error and "data": null: a
 * validated document stays far below them, so only a huge list from a
 * resolver or a document that escaped validation reaches them. */
#define EXEC_WORK_MAX 1000000u          /* values completed + selections collected */
#define EXEC_OUT_MAX (64u << 20)        /* bytes of "data" */
#define EXEC_DEPTH_MAX 64               /* objects and lists nested in the response */
#define COLLECT_DEPTH_MAX 128           /* fragments nested while collecting fields */
#define VALUE_DEPTH_MAX 64              /* lists and objects nested in an input value */
#define VAR_ERRORS_MAX 50               /* graphql-js's maxCoercionErrors */
#define PATH_MAX_SEGS (2 * EXEC_DEPTH_MAX + 8)

/* ---- small helpers ------------------------------------------------------------ */

static bool str_is(struct gq_str s, const char *z)
{
    size_t n = strlen(z);
    return s.n == n && (n == 0 || memcmp(s.p, z, n) == 0);
}

static bool str_eq(struct gq_str a, struct gq_str b)
{
    return a.n == b.n && (a.n == 0 || memcmp(a.p, b.p, a.n) == 0);
}

static void put_str(struct hk_buf *b, struct gq_str s)
{
    hk_buf_put(b, s.p, s.n);
}

static uint32_t hash_str(const char *p, uint32_t n)
{
    uint32_t h = 2166136261u;
    for (uint32_t i = 0; i < n; i++)
        h = (h ^ (uint8_t)p[i]) * 16777619u;
    return h;
}

/* ---- JavaScript's numbers, as graphql-js's messages and serializers see them -- */

/* Number.prototype.toString(): the shortest digits that read back the
 * same double, in JavaScript's choice of plain or exponent form. */
static void js_num(double d, char out[40])
{
    if (d != d) {
        strcpy(out, "NaN");
        return;
    }
    if (isinf(d)) {
        strcpy(out, d < 0 ? "-Infinity" : "Infinity");
        return;
    }
    if (d == 0) {
        strcpy(out, "0");
        return;
    }
    char buf[40];
    for (int prec = 1; prec <= 17; prec++) {
        snprintf(buf, sizeof buf, "%.*e", prec - 1, d);
        if (strtod(buf, NULL) == d)
            break;
    }
    char dig[24];
    int k = 0;
    const char *p = buf;
    bool neg = false;
    if (*p == '-') {
        neg = true;
        p++;
    }
    for (; *p && *p != 'e' && k < 20; p++)
        if (*p >= '0' && *p <= '9')
            dig[k++] = *p;
    int e = *p == 'e' ? atoi(p + 1) : 0;
    while (k > 1 && dig[k - 1] == '0')
        k--;
    int n = e + 1;
    char *o = out;
    if (neg)
        *o++ = '-';
    if (k <= n && n <= 21) {
        memcpy(o, dig, (size_t)k);
        o += k;
        for (int i = k; i < n; i++)
            *o++ = '0';
    } else if (0 < n && n <= 21) {
        memcpy(o, dig, (size_t)n);
        o += n;
        *o++ = '.';
        memcpy(o, dig + n, (size_t)(k - n));
        o += k - n;
    } else if (-6 < n && n <= 0) {
        *o++ = '0';
        *o++ = '.';
        for (int i = 0; i < -n; i++)
            *o++ = '0';
        memcpy(o, dig, (size_t)k);
        o += k;
    } else {
        *o++ = dig[0];
        if (k > 1) {
            *o++ = '.';
            memcpy(o, dig + 1, (size_t)(k - 1));
            o += k - 1;
        }
        o += sprintf(o, "e%c%d", n - 1 >= 0 ? '+' : '-', abs(n - 1));
    }
    *o = '\0';
}

/* The leading/trailing white space Number() ignores, as UTF-8. */
static size_t js_space(const unsigned char *p, const unsigned char *end)
{
    size_t left = (size_t)(end - p);
    if (left >= 1 && (p[0] == ' ' || (p[0] >= '\t' && p[0] <= '\r')))
        return 1;
    if (left >= 2 && p[0] == 0xc2 && p[1] == 0xa0)
        return 2;
    if (left >= 3 && p[0] == 0xef && p[1] == 0xbb && p[2] == 0xbf)
        return 3;
    if (left >= 3 && p[0] == 0xe1 && p[1] == 0x9a && p[2] == 0x80)
        return 3;
    if (left >= 3 && p[0] == 0xe2 && p[1] == 0x80 && (p[2] <= 0x8a || p[2] == 0xa8 || p[2] == 0xa9 || p[2] == 0xaf))
        return 3;
    if (left >= 3 && p[0] == 0xe2 && p[1] == 0x81 && p[2] == 0x9f)
        return 3;
    if (left >= 3 && p[0] == 0xe3 && p[1] == 0x80 && p[2] == 0x80)
        return 3;
    return 0;
}

/* Number(string): false for NaN. */
static bool js_to_number(const char *s, size_t n, double *out)
{
    const unsigned char *p = (const unsigned char *)s, *end = p + n;
    for (size_t w; p < end && (w = js_space(p, end)) > 0;)
        p += w;
    const unsigned char *last = p;   /* just past the last byte that is not white space */
    for (const unsigned char *q = p; q < end;) {
        size_t w = js_space(q, end);
        if (w) {
            q += w;
        } else {
            q++;
            last = q;
        }
    }
    size_t len = (size_t)(last - p);
    if (len == 0) {
        *out = 0;
        return true;
    }
    const char *t = (const char *)p;
    if (len > 400)
        return false;   /* no number of ours is that long; NaN is the safe reading */
    char buf[408];
    memcpy(buf, t, len);
    buf[len] = '\0';
    if (strcmp(buf, "Infinity") == 0 || strcmp(buf, "+Infinity") == 0) {
        *out = INFINITY;
        return true;
    }
    if (strcmp(buf, "-Infinity") == 0) {
        *out = -INFINITY;
        return true;
    }
    if (len > 2 && buf[0] == '0' && strchr("xXoObB", buf[1])) {
        int base = (buf[1] == 'x' || buf[1] == 'X') ? 16 : (buf[1] == 'o' || buf[1] == 'O') ? 8 : 2;
        double v = 0;
        for (size_t i = 2; i < len; i++) {
            int c = buf[i], d;
            if (c >= '0' && c <= '9')
                d = c - '0';
            else if (c >= 'a' && c <= 'f')
                d = c - 'a' + 10;
            else if (c >= 'A' && c <= 'F')
                d = c - 'A' + 10;
            else
                return false;
            if (d >= base)
                return false;
            v = v * base + d;
        }
        *out = v;
        return true;
    }
    /* [+-]? (D+ (. D*)? | . D+) ([eE] [+-]? D+)? */
    size_t i = 0, digits = 0;
    if (buf[i] == '+' || buf[i] == '-')
        i++;
    while (buf[i] >= '0' && buf[i] <= '9')
        i++, digits++;
    if (buf[i] == '.') {
        i++;
        while (buf[i] >= '0' && buf[i] <= '9')
            i++, digits++;
    }
    if (digits == 0)
        return false;
    if (buf[i] == 'e' || buf[i] == 'E') {
        i++;
        if (buf[i] == '+' || buf[i] == '-')
            i++;
        if (!(buf[i] >= '0' && buf[i] <= '9'))
            return false;
        while (buf[i] >= '0' && buf[i] <= '9')
            i++;
    }
    if (i != len)
        return false;
    *out = strtod(buf, NULL);
    return true;
}

/* A JSON number as a double, and whether it is an integer in JavaScript's
 * sense (Number.isInteger). */
static double json_num(const json_t *j)
{
    return json_is_integer(j) ? (double)json_integer_value(j) : json_real_value(j);
}

static bool json_is_int_value(const json_t *j, int64_t *v)
{
    if (json_is_integer(j)) {
        *v = json_integer_value(j);
        return true;
    }
    double d = json_real_value(j);
    if (!isfinite(d) || d < -9.2e18 || d > 9.2e18 || d != (double)(int64_t)d)
        return false;
    *v = (int64_t)d;
    return true;
}

static void put_json_number(struct hk_buf *b, const json_t *j)
{
    if (json_is_integer(j)) {
        hk_buf_put_i64(b, json_integer_value(j));
        return;
    }
    char t[40];
    js_num(json_real_value(j), t);
    hk_buf_puts(b, t);
}

/* JSON.stringify of a string: JavaScript's escapes, which differ from
 * hk_buf_put_json_str's only in leaving U+2028/U+2029 as they are. */
static void js_stringify(struct hk_buf *b, const char *s, size_t n)
{
    static const char hex[] = "0123456789abcdef";
    hk_buf_putc(b, '"');
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)s[i];
        switch (c) {
        case '"': hk_buf_puts(b, "\\\""); break;
        case '\\': hk_buf_puts(b, "\\\\"); break;
        case '\b': hk_buf_puts(b, "\\b"); break;
        case '\f': hk_buf_puts(b, "\\f"); break;
        case '\n': hk_buf_puts(b, "\\n"); break;
        case '\r': hk_buf_puts(b, "\\r"); break;
        case '\t': hk_buf_puts(b, "\\t"); break;
        default:
            if (c < 0x20) {
                char e[6] = {'\\', 'u', '0', '0', hex[c >> 4], hex[c & 15]};
                hk_buf_put(b, e, 6);
            } else {
                hk_buf_putc(b, (char)c);
            }
        }
    }
    hk_buf_putc(b, '"');
}

/* jsutils/inspect.js over a JSON value; `seen` counts the containers
 * around it, itself included. */
static void inspect_at(struct hk_buf *b, const json_t *j, int seen)
{
    switch (json_typeof(j)) {
    case JSON_STRING:
        js_stringify(b, json_string_value(j), json_string_length(j));
        return;
    case JSON_INTEGER:
    case JSON_REAL:
        put_json_number(b, j);
        return;
    case JSON_TRUE:
        hk_buf_puts(b, "true");
        return;
    case JSON_FALSE:
        hk_buf_puts(b, "false");
        return;
    case JSON_NULL:
        hk_buf_puts(b, "null");
        return;
    case JSON_ARRAY: {
        size_t n = json_array_size(j);
        if (n == 0) {
            hk_buf_puts(b, "[]");
            return;
        }
        if (seen > 2) {
            hk_buf_puts(b, "[Array]");
            return;
        }
        size_t shown = n < 10 ? n : 10;
        hk_buf_putc(b, '[');
        for (size_t i = 0; i < shown; i++) {
            if (i)
                hk_buf_puts(b, ", ");
            inspect_at(b, json_array_get(j, i), seen + 1);
        }
        if (n - shown == 1)
            hk_buf_puts(b, ", ... 1 more item");
        else if (n > shown)
            hk_buf_printf(b, ", ... %zu more items", n - shown);
        hk_buf_putc(b, ']');
        return;
    }
    case JSON_OBJECT: {
        if (json_object_size(j) == 0) {
            hk_buf_puts(b, "{}");
            return;
        }
        if (seen > 2) {
            hk_buf_puts(b, "[Object]");
            return;
        }
        hk_buf_puts(b, "{ ");
        bool first = true;
        const char *k;
        size_t kn;
        json_t *v;
        json_object_keylen_foreach((json_t *)j, k, kn, v) {
            if (!first)
                hk_buf_puts(b, ", ");
            first = false;
            hk_buf_put(b, k, kn);
            hk_buf_puts(b, ": ");
            inspect_at(b, v, seen + 1);
        }
        hk_buf_puts(b, " }");
        return;
    }
    }
}

static void inspect(struct hk_buf *b, const json_t *j)
{
    inspect_at(b, j, 1);
}

/* ---- the execution's state --------------------------------------------------- */

/* An error before it has its path: its message, and its own locations
 * (an argument's value) or none (then the field's). */
struct rawerr {
    const char *msg;
    struct gq_loc locs[4];
    uint32_t nlocs;
};

struct fields;

struct sub {                               /* one collection of subfields, cached */
    const struct gq_type_def *type;
    struct fields *f;                      /* NULL: collecting failed with err */
    struct rawerr err;
    struct sub *next;
};

struct group {                             /* every field node of one response key */
    struct gq_str key;
    const struct gq_selection **nodes;
    uint32_t n, cap;
    struct sub *subs;
    const struct gq_type_def *def_of;      /* the parent type def was looked up on */
    const struct gq_field_def *def;
    bool str_leaf;                         /* def takes no arguments and is a String, ID or custom scalar */
};

struct fields {                            /* CollectFields' ordered map */
    struct group *v;
    uint32_t n, cap;
    uint32_t *index;                       /* open addressing over v (1-based), when large */
    uint32_t icap;
};

enum vkind { V_NULL, V_JSON, V_STR, V_BOOL, V_SCHEMA, V_TYPE, V_TREF, V_FIELD, V_INPUT, V_ENUMV, V_DIR, V_LIST, V_EXT };

/* A value being completed: the resolver's JSON, or a part of the schema
 * that introspection describes. */
struct val {
    enum vkind k;
    uint32_t n;                            /* V_STR: bytes; V_LIST: items */
    union {
        json_t *j;
        const char *s;
        bool b;
        const struct gq_type_def *t;
        const struct gq_tref *r;
        const struct gq_field_def *f;
        const struct gq_input_value_def *iv;
        const struct gq_enum_value_def *ev;
        const struct gq_directive_def *d;
        struct val *items;
        const struct gq_ext *e;
    } u;
};

enum { R_OK, R_NULL, R_RAW, R_PROP, R_ABORT };

enum slot_kind { SLOT_CALL, SLOT_TYPENAME, SLOT_SCHEMA, SLOT_TYPE, SLOT_SKIP };

struct slot {                              /* one root field */
    struct gq_root_call call;              /* first: gq_root_done finds its slot from it */
    struct group *g;
    enum slot_kind kind;
    bool resolved;
    bool has_raw;                          /* its arguments did not coerce */
    struct rawerr raw;
    json_t *value;                         /* the resolver's, owned */
    const struct gq_ext *ext;              /* or an external object (gq_root_done_ext) */
    const char *error;                     /* the resolver's message, in the arena */
};

struct pseg {
    const char *key;                       /* NULL: an index */
    uint32_t n;
    uint32_t index;
};

struct frag_table {
    const struct gq_definition **v;
    uint32_t n;
    uint32_t *index;                       /* open addressing, 1-based */
    uint32_t cap;
};

struct gq_exec {
    struct gq_arena *a;
    const struct gq_schema *s;
    const struct gq_document *doc;
    const struct gq_definition *op;
    const struct gq_type_def *root;
    const struct gq_type_def *query;
    bool introspection;
    gq_resolve_fn resolve;
    void *resolve_ctx;
    gq_done_fn done;
    void *done_ud;
    struct hk_buf *out;

    json_t *vars;                          /* coerced variables, owned */
    struct frag_table frags;

    /* Built-in types and introspection's own references, looked up once. */
    const struct gq_type_def *t_int, *t_float, *t_string, *t_boolean, *t_id, *mutation;
    const struct gq_type_def *t_schema, *t_type;
    const struct gq_tref *r_schema_nn, *r_type;
    struct gq_input_value_def type_name_arg;

    struct slot *slots;
    uint32_t nslots, nissued, ncompleted, inflight;
    bool pumping, repump, stop, finished, freed;

    struct hk_buf data;
    struct hk_buf errs;
    uint32_t nerrs, dropped;
    struct hk_buf tmp;                     /* messages being built */

    struct rawerr raw;                     /* R_RAW's error */
    const char *pend;                      /* R_PROP's and R_ABORT's error, as JSON */
    uint32_t pend_len;

    uint64_t work;
    uint32_t depth;
    struct pseg path[PATH_MAX_SEGS];
    uint32_t npath;
};

static const char OOM_MSG[] = "The request needs more memory than hookd allows.";

/* ---- errors -------------------------------------------------------------------- */

static void raw_set(struct gq_exec *x, const char *msg, const struct gq_loc *loc)
{
    x->raw.msg = msg;
    x->raw.nlocs = 0;
    if (loc) {
        x->raw.locs[0] = *loc;
        x->raw.nlocs = 1;
    }
}

/* The message in x->tmp, copied into the arena. */
static const char *tmp_msg(struct gq_exec *x)
{
    const char *m = gq_strdup(x->a, x->tmp.p ? x->tmp.p : "", x->tmp.len);
    return m ? m : OOM_MSG;
}

static void put_loc(struct hk_buf *b, struct gq_loc l, bool first)
{
    hk_buf_printf(b, "%s{\"line\":%" PRIu32 ",\"column\":%" PRIu32 "}", first ? "" : ",", l.line, l.column);
}

/* The error as the response shows it: message, locations (its own, or the
 * field nodes of g), and the current path when `with_path`. */
static void locate(struct gq_exec *x, const struct rawerr *e, const struct group *g, bool with_path)
{
    struct hk_buf *b = &x->tmp;
    b->len = 0;
    hk_buf_puts(b, "{\"message\":");
    hk_buf_put_json_str(b, e->msg, strlen(e->msg));
    uint32_t nl = e->nlocs ? e->nlocs : (g ? (g->n < 4 ? g->n : 4) : 0);
    if (nl) {
        hk_buf_puts(b, ",\"locations\":[");
        for (uint32_t i = 0; i < nl; i++)
            put_loc(b, e->nlocs ? e->locs[i] : g->nodes[i]->loc, i == 0);
        hk_buf_putc(b, ']');
    }
    if (with_path && x->npath) {
        hk_buf_puts(b, ",\"path\":[");
        for (uint32_t i = 0; i < x->npath; i++) {
            if (i)
                hk_buf_putc(b, ',');
            if (x->path[i].key)
                hk_buf_put_json_str(b, x->path[i].key, x->path[i].n);
            else
                hk_buf_put_u64(b, x->path[i].index);
        }
        hk_buf_putc(b, ']');
    }
    hk_buf_putc(b, '}');
    char *p = gq_strdup(x->a, b->p, b->len);
    if (!p) {
        static const char oom[] = "{\"message\":\"The request needs more memory than hookd allows.\"}";
        x->pend = oom;
        x->pend_len = sizeof oom - 1;
        return;
    }
    x->pend = p;
    x->pend_len = (uint32_t)b->len;
}

static void record(struct gq_exec *x)
{
    if (x->nerrs >= GQ_ERRORS_MAX) {
        x->dropped++;
        return;
    }
    if (x->nerrs++)
        hk_buf_putc(&x->errs, ',');
    hk_buf_put(&x->errs, x->pend, x->pend_len);
}

/* Stop everything: one error at the current field, "data": null. */
static int abort_with(struct gq_exec *x, const char *msg, const struct group *g)
{
    struct rawerr e = {.msg = msg};
    locate(x, &e, g, true);
    return R_ABORT;
}

static int spend(struct gq_exec *x, const struct group *g)
{
    if (++x->work > EXEC_WORK_MAX)
        return abort_with(x, "The response would hold more values than hookd allows (1000000).", g);
    return R_OK;
}

static bool path_push_key(struct gq_exec *x, struct gq_str key)
{
    if (x->npath >= PATH_MAX_SEGS)
        return false;
    x->path[x->npath++] = (struct pseg){.key = key.p ? key.p : "", .n = key.n};
    return true;
}

static bool path_push_index(struct gq_exec *x, uint32_t i)
{
    if (x->npath >= PATH_MAX_SEGS)
        return false;
    x->path[x->npath++] = (struct pseg){.key = NULL, .index = i};
    return true;
}

/* ---- types -------------------------------------------------------------------- */

static const struct gq_type_def *named_of(const struct gq_tref *t)
{
    while (t->kind != GQ_REF_NAMED)
        t = t->of;
    return t->named;
}

static bool is_input_type(const struct gq_tref *t)
{
    enum gq_type_kind k = named_of(t)->kind;
    return k == GQ_SCALAR || k == GQ_ENUM || k == GQ_INPUT_OBJECT;
}

/* typeFromAST: NULL when a named type is unknown (or the wrappers nest
 * past any sense). */
static const struct gq_tref *tref_from_ast(struct gq_exec *x, const struct gq_type *t, bool *oom, int depth)
{
    if (!t || depth > VALUE_DEPTH_MAX)
        return NULL;
    struct gq_tref *r = gq_alloc(x->a, sizeof *r);
    if (!r) {
        *oom = true;
        return NULL;
    }
    switch (t->kind) {
    case GQ_T_NAMED:
        r->kind = GQ_REF_NAMED;
        r->named = gq_schema_type(x->s, t->name.p, t->name.n);
        return r->named ? r : NULL;
    case GQ_T_LIST:
        r->kind = GQ_REF_LIST;
        break;
    case GQ_T_NON_NULL:
        r->kind = GQ_REF_NON_NULL;
        break;
    }
    r->of = tref_from_ast(x, t->of, oom, depth + 1);
    return r->of ? r : NULL;
}

static void print_ast_type(struct hk_buf *b, const struct gq_type *t, int depth)
{
    if (!t || depth > VALUE_DEPTH_MAX)
        return;
    switch (t->kind) {
    case GQ_T_NAMED:
        put_str(b, t->name);
        break;
    case GQ_T_LIST:
        hk_buf_putc(b, '[');
        print_ast_type(b, t->of, depth + 1);
        hk_buf_putc(b, ']');
        break;
    case GQ_T_NON_NULL:
        print_ast_type(b, t->of, depth + 1);
        hk_buf_putc(b, '!');
        break;
    }
}

/* An object type is a possible type of an abstract one (isSubType). */
static bool possible_type(const struct gq_type_def *abstract, const struct gq_type_def *obj)
{
    if (abstract->kind == GQ_UNION) {
        for (unsigned i = 0; i < abstract->nmembers; i++)
            if (strcmp(abstract->members[i], obj->name) == 0)
                return true;
    } else if (abstract->kind == GQ_INTERFACE) {
        for (unsigned i = 0; i < obj->ninterfaces; i++)
            if (strcmp(obj->interfaces[i], abstract->name) == 0)
                return true;
    }
    return false;
}

/* ---- printing values (graphql-js's print, for messages) ---------------------- */

static void print_value(struct hk_buf *b, const struct gq_value *v, int depth)
{
    if (depth > VALUE_DEPTH_MAX) {
        hk_buf_puts(b, "…");
        return;
    }
    switch (v->kind) {
    case GQ_V_VARIABLE:
        hk_buf_putc(b, '$');
        put_str(b, v->s);
        return;
    case GQ_V_INT:
    case GQ_V_FLOAT:
    case GQ_V_ENUM:
        put_str(b, v->s);
        return;
    case GQ_V_STRING:
        if (v->block)
            gq_print_block_string(b, v->s.p, v->s.n, "");
        else
            gq_print_string(b, v->s.p, v->s.n);
        return;
    case GQ_V_BOOLEAN:
        hk_buf_puts(b, v->b ? "true" : "false");
        return;
    case GQ_V_NULL:
        hk_buf_puts(b, "null");
        return;
    case GQ_V_LIST:
        hk_buf_putc(b, '[');
        for (uint32_t i = 0; i < v->list.n; i++) {
            if (i)
                hk_buf_puts(b, ", ");
            print_value(b, v->list.v[i], depth + 1);
        }
        hk_buf_putc(b, ']');
        return;
    case GQ_V_OBJECT:
        hk_buf_putc(b, '{');
        for (uint32_t i = 0; i < v->obj.n; i++) {
            if (i)
                hk_buf_puts(b, ", ");
            put_str(b, v->obj.v[i].name);
            hk_buf_puts(b, ": ");
            print_value(b, v->obj.v[i].value, depth + 1);
        }
        hk_buf_putc(b, '}');
        return;
    }
}

/* ---- default values: the tables' SDL literals ---------------------------------- */

static void skip_ws(const char **pp)
{
    while (**pp == ' ' || **pp == ',' || **pp == '\n' || **pp == '\t')
        (*pp)++;
}

/* An SDL constant ("20", "false", "\"No longer supported\"", "[1, 2]")
 * as JSON; the tables are ours, so only the forms they use are read, and
 * anything else is NULL (a programming error the unit tests catch). */
static json_t *parse_default(const char **pp, int depth)
{
    const char *p = *pp;
    skip_ws(&p);
    json_t *v = NULL;
    if (depth > 8)
        return NULL;
    if (*p == '"') {
        struct hk_buf b = HK_BUF_INIT;
        for (p++; *p && *p != '"'; p++) {
            if (*p == '\\' && p[1]) {
                p++;
                static const char from[] = "ntrbf", to[] = "\n\t\r\b\f";
                const char *e = strchr(from, *p);
                hk_buf_putc(&b, e ? to[e - from] : *p);
            } else {
                hk_buf_putc(&b, *p);
            }
        }
        if (*p == '"') {
            p++;
            v = json_stringn(b.p ? b.p : "", b.len);
        }
        hk_buf_free(&b);
    } else if (*p == '[') {
        v = json_array();
        for (p++, skip_ws(&p); *p && *p != ']'; skip_ws(&p)) {
            json_t *item = parse_default(&p, depth + 1);
            if (!item) {
                json_decref(v);
                return NULL;
            }
            json_array_append_new(v, item);
        }
        if (*p != ']') {
            json_decref(v);
            return NULL;
        }
        p++;
    } else if (*p == '-' || (*p >= '0' && *p <= '9')) {
        char *end;
        const char *start = p;
        long long iv = strtoll(start, &end, 10);
        if (*end == '.' || *end == 'e' || *end == 'E') {
            double d = strtod(start, &end);
            v = json_real(d);
        } else {
            v = json_integer(iv);
        }
        p = end;
    } else {
        const char *start = p;
        while ((*p >= 'A' && *p <= 'Z') || (*p >= 'a' && *p <= 'z') || (*p >= '0' && *p <= '9') || *p == '_')
            p++;
        size_t n = (size_t)(p - start);
        if (n == 4 && memcmp(start, "true", 4) == 0)
            v = json_true();
        else if (n == 5 && memcmp(start, "false", 5) == 0)
            v = json_false();
        else if (n == 4 && memcmp(start, "null", 4) == 0)
            v = json_null();
        else if (n > 0)
            v = json_stringn(start, n);   /* an enum value */
    }
    *pp = p;
    return v;
}

static json_t *default_json(const char *text)
{
    const char *p = text;
    json_t *v = parse_default(&p, 0);
    skip_ws(&p);
    if (v && *p) {
        json_decref(v);
        v = NULL;
    }
    return v;
}

/* ---- coercing literals: valueFromAST -------------------------------------------- */

static bool missing_variable(struct gq_exec *x, const struct gq_value *v)
{
    return v->kind == GQ_V_VARIABLE && !json_object_getn(x->vars, v->s.p, v->s.n);
}

/* valueFromASTUntyped, for custom scalars. */
static json_t *untyped(struct gq_exec *x, const struct gq_value *v, int depth)
{
    if (depth > VALUE_DEPTH_MAX)
        return NULL;
    switch (v->kind) {
    case GQ_V_NULL:
        return json_null();
    case GQ_V_INT:
    case GQ_V_FLOAT: {
        /* parseInt / parseFloat: a double; exact integers stay integers. */
        const char *t = gq_strdup(x->a, v->s.p, v->s.n);
        if (!t)
            return NULL;
        double d = strtod(t, NULL);
        if (v->kind == GQ_V_INT && d > -9e15 && d < 9e15)
            return json_integer(strtoll(t, NULL, 10));
        return json_real(isfinite(d) ? d : 0);
    }
    case GQ_V_STRING:
    case GQ_V_ENUM:
        return json_stringn(v->s.p ? v->s.p : "", v->s.n);
    case GQ_V_BOOLEAN:
        return json_boolean(v->b);
    case GQ_V_LIST: {
        json_t *a = json_array();
        for (uint32_t i = 0; i < v->list.n; i++) {
            json_t *item = untyped(x, v->list.v[i], depth + 1);
            if (!item) {
                json_decref(a);
                return NULL;
            }
            json_array_append_new(a, item);
        }
        return a;
    }
    case GQ_V_OBJECT: {
        json_t *o = json_object();
        for (uint32_t i = 0; i < v->obj.n; i++) {
            json_t *item = untyped(x, v->obj.v[i].value, depth + 1);
            if (!item) {
                json_decref(o);
                return NULL;
            }
            json_object_setn_new(o, v->obj.v[i].name.p, v->obj.v[i].name.n, item);
        }
        return o;
    }
    case GQ_V_VARIABLE: {
        json_t *j = json_object_getn(x->vars, v->s.p, v->s.n);
        return json_incref(j ? j : json_null());
    }
    }
    return NULL;
}

/* A literal's text as a C string on the stack (numbers are short; a
 * longer one is refused, as no Int fits it anyway). */
static bool num_text(const struct gq_value *v, char *t, size_t cap)
{
    if (v->s.n == 0 || v->s.n >= cap)
        return false;
    memcpy(t, v->s.p, v->s.n);
    t[v->s.n] = '\0';
    return true;
}

static json_t *leaf_literal(struct gq_exec *x, const struct gq_value *v, const struct gq_type_def *t)
{
    if (t->kind == GQ_ENUM) {
        if (v->kind != GQ_V_ENUM)
            return NULL;
        for (unsigned i = 0; i < t->nvalues; i++)
            if (str_is(v->s, t->values[i].name))
                return json_string(t->values[i].name);
        return NULL;
    }
    char num[64];
    if (t == x->t_int) {
        if (v->kind != GQ_V_INT || !num_text(v, num, sizeof num))
            return NULL;
        double d = strtod(num, NULL);
        if (d > 2147483647.0 || d < -2147483648.0)
            return NULL;
        return json_integer(strtoll(num, NULL, 10));
    }
    if (t == x->t_float) {
        if (v->kind != GQ_V_INT && v->kind != GQ_V_FLOAT)
            return NULL;
        const char *t2 = gq_strdup(x->a, v->s.p, v->s.n);
        if (!t2)
            return NULL;
        double d = strtod(t2, NULL);
        if (v->kind == GQ_V_INT && d > -9e15 && d < 9e15)
            return json_integer(strtoll(t2, NULL, 10));
        return isfinite(d) ? json_real(d) : NULL;
    }
    if (t == x->t_string)
        return v->kind == GQ_V_STRING ? json_stringn(v->s.p ? v->s.p : "", v->s.n) : NULL;
    if (t == x->t_boolean)
        return v->kind == GQ_V_BOOLEAN ? json_boolean(v->b) : NULL;
    if (t == x->t_id)
        return v->kind == GQ_V_STRING || v->kind == GQ_V_INT ? json_stringn(v->s.p ? v->s.p : "", v->s.n) : NULL;
    return untyped(x, v, 0);
}

/* valueFromAST: NULL when the value is invalid for the type ("undefined"). */
static json_t *value_from_ast(struct gq_exec *x, const struct gq_value *v, const struct gq_tref *t, int depth)
{
    if (depth > VALUE_DEPTH_MAX)
        return NULL;
    if (v->kind == GQ_V_VARIABLE) {
        json_t *j = json_object_getn(x->vars, v->s.p, v->s.n);
        if (!j || (json_is_null(j) && t->kind == GQ_REF_NON_NULL))
            return NULL;
        return json_incref(j);
    }
    if (t->kind == GQ_REF_NON_NULL) {
        if (v->kind == GQ_V_NULL)
            return NULL;
        return value_from_ast(x, v, t->of, depth);
    }
    if (v->kind == GQ_V_NULL)
        return json_null();
    if (t->kind == GQ_REF_LIST) {
        if (v->kind != GQ_V_LIST) {
            json_t *one = value_from_ast(x, v, t->of, depth + 1);
            if (!one)
                return NULL;
            json_t *a = json_array();
            json_array_append_new(a, one);
            return a;
        }
        json_t *a = json_array();
        for (uint32_t i = 0; i < v->list.n; i++) {
            const struct gq_value *item = v->list.v[i];
            json_t *c;
            if (missing_variable(x, item)) {
                if (t->of->kind == GQ_REF_NON_NULL) {
                    json_decref(a);
                    return NULL;
                }
                c = json_null();
            } else {
                c = value_from_ast(x, item, t->of, depth + 1);
                if (!c) {
                    json_decref(a);
                    return NULL;
                }
            }
            json_array_append_new(a, c);
        }
        return a;
    }
    const struct gq_type_def *nt = t->named;
    if (nt->kind == GQ_INPUT_OBJECT) {
        if (v->kind != GQ_V_OBJECT)
            return NULL;
        json_t *o = json_object();
        for (unsigned i = 0; i < nt->ninputs; i++) {
            const struct gq_input_value_def *fd = &nt->inputs[i];
            const struct gq_object_field *fnode = NULL;
            for (uint32_t k = 0; k < v->obj.n; k++)
                if (str_is(v->obj.v[k].name, fd->name))
                    fnode = &v->obj.v[k];
            if (!fnode || missing_variable(x, fnode->value)) {
                if (fd->default_value) {
                    json_t *d = default_json(fd->default_value);
                    if (d)
                        json_object_set_new(o, fd->name, d);
                } else if (fd->tref->kind == GQ_REF_NON_NULL) {
                    json_decref(o);
                    return NULL;
                }
                continue;
            }
            json_t *c = value_from_ast(x, fnode->value, fd->tref, depth + 1);
            if (!c) {
                json_decref(o);
                return NULL;
            }
            json_object_set_new(o, fd->name, c);
        }
        return o;
    }
    if (nt->kind == GQ_SCALAR || nt->kind == GQ_ENUM)
        return leaf_literal(x, v, nt);
    return NULL;
}

/* ---- arguments: getArgumentValues --------------------------------------------- */

/* The arguments of a field or directive, coerced, as a new JSON object in
 * *out. R_OK, or R_RAW with graphql-js's message (or abort on memory). */
static int get_args(struct gq_exec *x, const struct gq_input_value_def *defs, unsigned ndefs,
                    const struct gq_argument *args, uint32_t nargs, struct gq_loc node_loc, json_t **out)
{
    json_t *o = json_object();
    struct hk_buf *m = &x->tmp;
    for (unsigned i = 0; i < ndefs; i++) {
        const struct gq_input_value_def *d = &defs[i];
        const struct gq_argument *an = NULL;
        for (uint32_t k = 0; k < nargs; k++)
            if (str_is(args[k].name, d->name))
                an = &args[k];
        bool nonnull = d->tref->kind == GQ_REF_NON_NULL;
        if (!an) {
            if (d->default_value) {
                json_t *dv = default_json(d->default_value);
                if (dv)
                    json_object_set_new(o, d->name, dv);
            } else if (nonnull) {
                m->len = 0;
                hk_buf_printf(m, "Argument \"%s\" of required type \"", d->name);
                gq_tref_print(d->tref, m);
                hk_buf_puts(m, "\" was not provided.");
                raw_set(x, tmp_msg(x), &node_loc);
                goto fail;
            }
            continue;
        }
        const struct gq_value *v = an->value;
        bool is_null = v->kind == GQ_V_NULL;
        if (v->kind == GQ_V_VARIABLE) {
            json_t *vv = json_object_getn(x->vars, v->s.p, v->s.n);
            if (!vv) {
                if (d->default_value) {
                    json_t *dv = default_json(d->default_value);
                    if (dv)
                        json_object_set_new(o, d->name, dv);
                } else if (nonnull) {
                    m->len = 0;
                    hk_buf_printf(m, "Argument \"%s\" of required type \"", d->name);
                    gq_tref_print(d->tref, m);
                    hk_buf_puts(m, "\" was provided the variable \"$");
                    put_str(m, v->s);
                    hk_buf_puts(m, "\" which was not provided a runtime value.");
                    raw_set(x, tmp_msg(x), &v->loc);
                    goto fail;
                }
                continue;
            }
            is_null = json_is_null(vv);
        }
        if (is_null && nonnull) {
            m->len = 0;
            hk_buf_printf(m, "Argument \"%s\" of non-null type \"", d->name);
            gq_tref_print(d->tref, m);
            hk_buf_puts(m, "\" must not be null.");
            raw_set(x, tmp_msg(x), &v->loc);
            goto fail;
        }
        json_t *c = value_from_ast(x, v, d->tref, 0);
        if (!c) {
            m->len = 0;
            hk_buf_printf(m, "Argument \"%s\" has invalid value ", d->name);
            print_value(m, v, 0);
            hk_buf_putc(m, '.');
            raw_set(x, tmp_msg(x), &v->loc);
            goto fail;
        }
        json_object_set_new(o, d->name, c);
    }
    *out = o;
    return R_OK;
fail:
    json_decref(o);
    *out = NULL;
    return R_RAW;
}

/* shouldIncludeNode: 1 include, 0 skip, -1 R_RAW (a directive's argument). */
static int should_include(struct gq_exec *x, const struct gq_directive *dirs, uint32_t ndirs)
{
    static const char *const names[2] = {"skip", "include"};
    for (int w = 0; w < 2; w++) {
        const struct gq_directive *dn = NULL;
        for (uint32_t i = 0; i < ndirs && !dn; i++)
            if (str_is(dirs[i].name, names[w]))
                dn = &dirs[i];
        if (!dn)
            continue;
        const struct gq_directive_def *dd = gq_schema_directive(x->s, names[w], (unsigned)strlen(names[w]));
        if (!dd)
            continue;
        json_t *args;
        if (get_args(x, dd->args, dd->nargs, dn->args, dn->nargs, dn->loc, &args) != R_OK)
            return -1;
        json_t *c = json_object_get(args, "if");
        bool skip = w == 0 ? json_is_true(c) : json_is_false(c);
        json_decref(args);
        if (skip)
            return 0;
    }
    return 1;
}

/* ---- CollectFields -------------------------------------------------------------- */

static const struct gq_definition *fragment(struct gq_exec *x, struct gq_str name, uint32_t *idx)
{
    const struct frag_table *ft = &x->frags;
    if (!ft->cap)
        return NULL;
    for (uint32_t h = hash_str(name.p, name.n) & (ft->cap - 1);; h = (h + 1) & (ft->cap - 1)) {
        uint32_t e = ft->index[h];
        if (!e)
            return NULL;
        if (str_eq(ft->v[e - 1]->name, name)) {
            *idx = e - 1;
            return ft->v[e - 1];
        }
    }
}

/* Fragments by name, the last of a name winning as in graphql-js. */
static bool build_fragments(struct gq_exec *x)
{
    struct frag_table *ft = &x->frags;
    uint32_t n = 0;
    for (uint32_t i = 0; i < x->doc->ndefs; i++)
        n += x->doc->defs[i].kind == GQ_D_FRAGMENT;
    if (!n)
        return true;
    ft->v = gq_alloc(x->a, n * sizeof *ft->v);
    ft->cap = 16;
    while (ft->cap < 2 * n)
        ft->cap *= 2;
    ft->index = gq_alloc(x->a, ft->cap * sizeof *ft->index);
    if (!ft->v || !ft->index)
        return false;
    for (uint32_t i = 0; i < x->doc->ndefs; i++) {
        const struct gq_definition *d = &x->doc->defs[i];
        if (d->kind != GQ_D_FRAGMENT)
            continue;
        for (uint32_t h = hash_str(d->name.p, d->name.n) & (ft->cap - 1);; h = (h + 1) & (ft->cap - 1)) {
            uint32_t e = ft->index[h];
            if (!e) {
                ft->v[ft->n++] = d;
                ft->index[h] = ft->n;
                break;
            }
            if (str_eq(ft->v[e - 1]->name, d->name)) {
                ft->v[e - 1] = d;
                break;
            }
        }
    }
    return true;
}

static bool condition_matches(struct gq_exec *x, struct gq_str cond, const struct gq_type_def *rt)
{
    if (!cond.p && !cond.n)
        return true;
    const struct gq_type_def *ct = gq_schema_type(x->s, cond.p, cond.n);
    if (!ct)
        return false;
    if (ct == rt)
        return true;
    return (ct->kind == GQ_UNION || ct->kind == GQ_INTERFACE) && possible_type(ct, rt);
}

static struct group *group_for(struct gq_exec *x, struct fields *f, struct gq_str key)
{
    if (f->index) {
        for (uint32_t h = hash_str(key.p, key.n) & (f->icap - 1);; h = (h + 1) & (f->icap - 1)) {
            uint32_t e = f->index[h];
            if (!e)
                break;
            if (str_eq(f->v[e - 1].key, key))
                return &f->v[e - 1];
        }
    } else {
        for (uint32_t i = 0; i < f->n; i++)
            if (str_eq(f->v[i].key, key))
                return &f->v[i];
    }
    if (f->n == f->cap) {
        uint32_t cap = f->cap ? f->cap * 2 : 8;
        struct group *v = gq_alloc(x->a, cap * sizeof *v);
        if (!v)
            return NULL;
        if (f->n)
            memcpy(v, f->v, f->n * sizeof *v);
        f->v = v;
        f->cap = cap;
    }
    struct group *g = &f->v[f->n++];
    memset(g, 0, sizeof *g);
    g->key = key;
    /* Past a handful of keys, index them: a selection set of thousands of
     * distinct aliases stays linear. */
    if (f->n > 8 && f->n * 2 > f->icap) {
        uint32_t icap = f->icap ? f->icap * 2 : 32;
        while (icap < f->n * 2)
            icap *= 2;
        uint32_t *idx = gq_alloc(x->a, icap * sizeof *idx);
        if (!idx)
            return NULL;
        for (uint32_t i = 0; i < f->n; i++)
            for (uint32_t h = hash_str(f->v[i].key.p, f->v[i].key.n) & (icap - 1);; h = (h + 1) & (icap - 1))
                if (!idx[h]) {
                    idx[h] = i + 1;
                    break;
                }
        f->index = idx;
        f->icap = icap;
    } else if (f->index) {
        for (uint32_t h = hash_str(key.p, key.n) & (f->icap - 1);; h = (h + 1) & (f->icap - 1))
            if (!f->index[h]) {
                f->index[h] = f->n;
                break;
            }
    }
    return g;
}

static bool group_add(struct gq_exec *x, struct group *g, const struct gq_selection *sel)
{
    if (g->n == g->cap) {
        uint32_t cap = g->cap ? g->cap * 2 : 2;
        const struct gq_selection **v = gq_alloc(x->a, cap * sizeof *v);
        if (!v)
            return false;
        if (g->n)
            memcpy(v, g->nodes, g->n * sizeof *v);
        g->nodes = v;
        g->cap = cap;
    }
    g->nodes[g->n++] = sel;
    return true;
}

/* collectFieldsImpl. R_OK, R_RAW (a directive's argument) or R_ABORT. */
static int collect(struct gq_exec *x, const struct gq_type_def *rt, const struct gq_selection_set *ss, struct fields *f,
                   uint8_t *visited, uint32_t depth, const struct group *at)
{
    if (!ss)
        return R_OK;
    if (depth > COLLECT_DEPTH_MAX)
        return abort_with(x, "Fragments nest deeper than hookd allows.", at);
    for (uint32_t i = 0; i < ss->n; i++) {
        const struct gq_selection *sel = &ss->v[i];
        if (spend(x, at) != R_OK)
            return R_ABORT;
        int inc;
        switch (sel->kind) {
        case GQ_S_FIELD: {
            if ((inc = should_include(x, sel->dirs, sel->ndirs)) < 0)
                return R_RAW;
            if (!inc)
                continue;
            struct group *g = group_for(x, f, sel->alias.p || sel->alias.n ? sel->alias : sel->name);
            if (!g || !group_add(x, g, sel))
                return abort_with(x, OOM_MSG, at);
            break;
        }
        case GQ_S_INLINE: {
            if ((inc = should_include(x, sel->dirs, sel->ndirs)) < 0)
                return R_RAW;
            if (!inc || !condition_matches(x, sel->type_cond, rt))
                continue;
            int r = collect(x, rt, sel->sel, f, visited, depth + 1, at);
            if (r != R_OK)
                return r;
            break;
        }
        case GQ_S_SPREAD: {
            uint32_t idx = 0;
            const struct gq_definition *fd = fragment(x, sel->name, &idx);
            if (fd && (visited[idx / 8] & (1u << (idx % 8))))
                continue;
            if ((inc = should_include(x, sel->dirs, sel->ndirs)) < 0)
                return R_RAW;
            if (!inc || !fd)
                continue;
            visited[idx / 8] |= (uint8_t)(1u << (idx % 8));
            if (!condition_matches(x, fd->type_cond, rt))
                continue;
            int r = collect(x, rt, fd->sel, f, visited, depth + 1, at);
            if (r != R_OK)
                return r;
            break;
        }
        }
    }
    return R_OK;
}

static uint8_t *new_visited(struct gq_exec *x)
{
    return gq_alloc(x->a, x->frags.n / 8 + 1);
}

/* collectSubfields for the runtime type, once per group and type: every
 * item of a list reuses it. R_OK with *out, R_RAW or R_ABORT. */
static int subfields(struct gq_exec *x, struct group *g, const struct gq_type_def *rt, struct fields **out)
{
    for (struct sub *s = g->subs; s; s = s->next)
        if (s->type == rt) {
            if (!s->f) {
                x->raw = s->err;
                return R_RAW;
            }
            *out = s->f;
            return R_OK;
        }
    struct sub *s = gq_alloc(x->a, sizeof *s);
    struct fields *f = gq_alloc(x->a, sizeof *f);
    uint8_t *visited = new_visited(x);
    if (!s || !f || !visited)
        return abort_with(x, OOM_MSG, g);
    s->type = rt;
    for (uint32_t i = 0; i < g->n; i++) {
        int r = collect(x, rt, g->nodes[i]->sel, f, visited, 0, g);
        if (r == R_ABORT)
            return r;
        if (r == R_RAW) {
            s->err = x->raw;
            f = NULL;
            break;
        }
    }
    s->f = f;
    s->next = g->subs;
    g->subs = s;
    if (!f)
        return R_RAW;
    *out = f;
    return R_OK;
}

/* ---- variables: coerceVariableValues ------------------------------------------- */

struct var_ctx {
    struct gq_exec *x;
    const struct gq_variable_def *def;
    uint32_t nerr;
    bool too_many;
    struct hk_buf *errs;
    struct pseg path[VALUE_DEPTH_MAX + 2];
    uint32_t npath;
};

/* One more variable error (the message in x->tmp, located at `loc`); the
 * 51st is graphql-js's "Too many errors", which ends the coercion. */
static void var_push(struct var_ctx *c, const struct gq_loc *loc)
{
    if (c->too_many)
        return;
    struct hk_buf *m = &c->x->tmp;
    if (c->nerr >= VAR_ERRORS_MAX) {
        m->len = 0;
        hk_buf_puts(m, "Too many errors processing variables, error limit reached. Execution aborted.");
        c->too_many = true;
        loc = NULL;
    }
    if (c->nerr++)
        hk_buf_putc(c->errs, ',');
    hk_buf_puts(c->errs, "{\"message\":");
    hk_buf_put_json_str(c->errs, m->p, m->len);
    if (loc) {
        hk_buf_puts(c->errs, ",\"locations\":[");
        put_loc(c->errs, *loc, true);
        hk_buf_putc(c->errs, ']');
    }
    hk_buf_putc(c->errs, '}');
}

static void var_error(struct var_ctx *c, const json_t *invalid, const char *msg)
{
    if (c->too_many)
        return;
    struct hk_buf *m = &c->x->tmp;
    m->len = 0;
    {
        hk_buf_puts(m, "Variable \"$");
        put_str(m, c->def->name);
        hk_buf_puts(m, "\" got invalid value ");
        if (invalid)
            inspect(m, invalid);
        else
            hk_buf_puts(m, "undefined");
        if (c->npath) {
            hk_buf_puts(m, " at \"");
            put_str(m, c->def->name);
            for (uint32_t i = 0; i < c->npath; i++) {
                if (c->path[i].key) {
                    hk_buf_putc(m, '.');
                    hk_buf_put(m, c->path[i].key, c->path[i].n);
                } else {
                    hk_buf_printf(m, "[%" PRIu32 "]", c->path[i].index);
                }
            }
            hk_buf_putc(m, '"');
        }
        hk_buf_puts(m, "; ");
        hk_buf_puts(m, msg);
    }
    var_push(c, &c->def->loc);
}

/* The message of a leaf that does not coerce, after "; ". */
static void leaf_msg(struct var_ctx *c, const json_t *v, const char *what)
{
    struct hk_buf msg = HK_BUF_INIT;
    hk_buf_puts(&msg, what);
    inspect(&msg, v);
    hk_buf_putc(&msg, '\0');
    var_error(c, v, msg.p);
    hk_buf_free(&msg);
}

/* coerceInputValue: the coerced value (new reference), or NULL after
 * reporting through var_error. */
static json_t *coerce_input(struct var_ctx *c, json_t *v, const struct gq_tref *t)
{
    struct gq_exec *x = c->x;
    if (t->kind == GQ_REF_NON_NULL) {
        if (v && !json_is_null(v))
            return coerce_input(c, v, t->of);
        struct hk_buf m = HK_BUF_INIT;
        hk_buf_puts(&m, "Expected non-nullable type \"");
        gq_tref_print(t, &m);
        hk_buf_puts(&m, "\" not to be null.");
        hk_buf_putc(&m, '\0');
        var_error(c, v, m.p);
        hk_buf_free(&m);
        return NULL;
    }
    if (!v || json_is_null(v))
        return json_null();
    if (t->kind == GQ_REF_LIST) {
        if (!json_is_array(v)) {
            /* A single value stands for a list of one. */
            json_t *one = coerce_input(c, v, t->of);
            if (!one)
                return NULL;
            json_t *a = json_array();
            json_array_append_new(a, one);
            return a;
        }
        if (c->npath >= VALUE_DEPTH_MAX) {
            var_error(c, v, "The value nests deeper than hookd allows.");
            return NULL;
        }
        json_t *a = json_array();
        bool ok = true;
        for (size_t i = 0; i < json_array_size(v); i++) {
            c->path[c->npath++] = (struct pseg){.key = NULL, .index = (uint32_t)i};
            json_t *item = coerce_input(c, json_array_get(v, i), t->of);
            c->npath--;
            if (!item)
                ok = false;
            else
                json_array_append_new(a, item);
            if (c->too_many)
                break;
        }
        if (!ok) {
            json_decref(a);
            return NULL;
        }
        return a;
    }
    const struct gq_type_def *nt = t->named;
    int64_t iv;
    switch (nt->kind) {
    case GQ_INPUT_OBJECT: {
        if (!json_is_object(v)) {
            struct hk_buf m = HK_BUF_INIT;
            hk_buf_printf(&m, "Expected type \"%s\" to be an object.", nt->name);
            hk_buf_putc(&m, '\0');
            var_error(c, v, m.p);
            hk_buf_free(&m);
            return NULL;
        }
        if (c->npath >= VALUE_DEPTH_MAX) {
            var_error(c, v, "The value nests deeper than hookd allows.");
            return NULL;
        }
        json_t *o = json_object();
        bool ok = true;
        for (unsigned i = 0; i < nt->ninputs && !c->too_many; i++) {
            const struct gq_input_value_def *fd = &nt->inputs[i];
            json_t *fv = json_object_get(v, fd->name);
            if (!fv) {
                if (fd->default_value) {
                    json_t *d = default_json(fd->default_value);
                    if (d)
                        json_object_set_new(o, fd->name, d);
                } else if (fd->tref->kind == GQ_REF_NON_NULL) {
                    struct hk_buf m = HK_BUF_INIT;
                    hk_buf_printf(&m, "Field \"%s\" of required type \"", fd->name);
                    gq_tref_print(fd->tref, &m);
                    hk_buf_puts(&m, "\" was not provided.");
                    hk_buf_putc(&m, '\0');
                    var_error(c, v, m.p);
                    hk_buf_free(&m);
                    ok = false;
                }
                continue;
            }
            c->path[c->npath++] = (struct pseg){.key = fd->name, .n = (uint32_t)strlen(fd->name)};
            json_t *cv = coerce_input(c, fv, fd->tref);
            c->npath--;
            if (!cv)
                ok = false;
            else
                json_object_set_new(o, fd->name, cv);
        }
        const char *k;
        size_t kn;
        json_t *kv;
        json_object_keylen_foreach(v, k, kn, kv) {
            bool known = false;
            for (unsigned i = 0; i < nt->ninputs && !known; i++)
                known = strlen(nt->inputs[i].name) == kn && memcmp(nt->inputs[i].name, k, kn) == 0;
            if (!known && !c->too_many) {
                struct hk_buf m = HK_BUF_INIT;
                hk_buf_puts(&m, "Field \"");
                hk_buf_put(&m, k, kn);
                hk_buf_printf(&m, "\" is not defined by type \"%s\".", nt->name);
                hk_buf_putc(&m, '\0');
                var_error(c, v, m.p);
                hk_buf_free(&m);
                ok = false;
            }
        }
        if (!ok) {
            json_decref(o);
            return NULL;
        }
        return o;
    }
    case GQ_ENUM: {
        if (!json_is_string(v)) {
            struct hk_buf m = HK_BUF_INIT;
            hk_buf_printf(&m, "Enum \"%s\" cannot represent non-string value: ", nt->name);
            inspect(&m, v);
            hk_buf_puts(&m, ".");
            hk_buf_putc(&m, '\0');
            var_error(c, v, m.p);
            hk_buf_free(&m);
            return NULL;
        }
        for (unsigned i = 0; i < nt->nvalues; i++)
            if (strcmp(nt->values[i].name, json_string_value(v)) == 0)
                return json_incref(v);
        struct hk_buf m = HK_BUF_INIT;
        /* graphql-js adds "Did you mean …?" from its suggestion list; no
         * enum of hookd's is an input, so the suggestions are left out. */
        hk_buf_puts(&m, "Value \"");
        hk_buf_put(&m, json_string_value(v), json_string_length(v));
        hk_buf_printf(&m, "\" does not exist in \"%s\" enum.", nt->name);
        hk_buf_putc(&m, '\0');
        var_error(c, v, m.p);
        hk_buf_free(&m);
        return NULL;
    }
    case GQ_SCALAR:
        if (nt == x->t_int) {
            if (!json_is_number(v) || !json_is_int_value(v, &iv)) {
                leaf_msg(c, v, "Int cannot represent non-integer value: ");
                return NULL;
            }
            if (iv > 2147483647 || iv < -2147483648LL) {
                leaf_msg(c, v, "Int cannot represent non 32-bit signed integer value: ");
                return NULL;
            }
            return json_integer(iv);
        }
        if (nt == x->t_float) {
            if (!json_is_number(v) || !isfinite(json_num(v))) {
                leaf_msg(c, v, "Float cannot represent non numeric value: ");
                return NULL;
            }
            return json_incref(v);
        }
        if (nt == x->t_string) {
            if (!json_is_string(v)) {
                leaf_msg(c, v, "String cannot represent a non string value: ");
                return NULL;
            }
            return json_incref(v);
        }
        if (nt == x->t_boolean) {
            if (!json_is_boolean(v)) {
                leaf_msg(c, v, "Boolean cannot represent a non boolean value: ");
                return NULL;
            }
            return json_incref(v);
        }
        if (nt == x->t_id) {
            if (json_is_string(v))
                return json_incref(v);
            if (json_is_number(v) && json_is_int_value(v, &iv)) {
                char t2[40];
                snprintf(t2, sizeof t2, "%" PRId64, iv);
                return json_string(t2);
            }
            leaf_msg(c, v, "ID cannot represent value: ");
            return NULL;
        }
        if (strcmp(nt->name, "DateTime") == 0) {
            if (!json_is_string(v) || !gq_datetime_valid(json_string_value(v), json_string_length(v))) {
                leaf_msg(c, v, "DateTime cannot represent an invalid date-time: ");
                return NULL;
            }
            return json_incref(v);
        }
        /* Any other custom scalar: taken as it is. */
        return json_incref(v);
    case GQ_OBJECT:
    case GQ_INTERFACE:
    case GQ_UNION:
        break;
    }
    return NULL;
}

/* coerceVariableValues into x->vars; false with the errors in *errs. */
static bool coerce_variables(struct gq_exec *x, json_t *inputs, struct hk_buf *errs, uint32_t *nerr)
{
    struct var_ctx c = {.x = x, .errs = errs};
    x->vars = json_object();
    if (!json_is_object(inputs))
        inputs = NULL;
    for (uint32_t i = 0; i < x->op->nvars && !c.too_many; i++) {
        const struct gq_variable_def *vd = &x->op->vars[i];
        c.def = vd;
        c.npath = 0;
        bool oom = false;
        const struct gq_tref *t = tref_from_ast(x, vd->type, &oom, 0);
        if (oom) {
            x->tmp.len = 0;
            hk_buf_puts(&x->tmp, OOM_MSG);
            var_push(&c, NULL);
            break;
        }
        struct hk_buf *m = &x->tmp;
        if (!t || !is_input_type(t)) {
            m->len = 0;
            hk_buf_puts(m, "Variable \"$");
            put_str(m, vd->name);
            hk_buf_puts(m, "\" expected value of type \"");
            print_ast_type(m, vd->type, 0);
            hk_buf_puts(m, "\" which cannot be used as an input type.");
            var_push(&c, vd->type ? &vd->type->loc : &vd->loc);
            continue;
        }
        json_t *in = inputs ? json_object_getn(inputs, vd->name.p, vd->name.n) : NULL;
        if (!in) {
            if (vd->def) {
                json_t *dv = value_from_ast(x, vd->def, t, 0);
                if (dv)
                    json_object_setn_new(x->vars, vd->name.p, vd->name.n, dv);
            } else if (t->kind == GQ_REF_NON_NULL) {
                m->len = 0;
                hk_buf_puts(m, "Variable \"$");
                put_str(m, vd->name);
                hk_buf_puts(m, "\" of required type \"");
                gq_tref_print(t, m);
                hk_buf_puts(m, "\" was not provided.");
                var_push(&c, &vd->loc);
            }
            continue;
        }
        if (json_is_null(in) && t->kind == GQ_REF_NON_NULL) {
            m->len = 0;
            hk_buf_puts(m, "Variable \"$");
            put_str(m, vd->name);
            hk_buf_puts(m, "\" of non-null type \"");
            gq_tref_print(t, m);
            hk_buf_puts(m, "\" must not be null.");
            var_push(&c, &vd->loc);
            continue;
        }
        json_t *cv = coerce_input(&c, in, t);
        if (cv)
            json_object_setn_new(x->vars, vd->name.p, vd->name.n, cv);
    }
    *nerr = c.nerr;
    return c.nerr == 0;
}

/* ---- introspection ---------------------------------------------------------------- */

static struct val v_null(void)
{
    return (struct val){.k = V_NULL};
}

static struct val v_str(const char *s)
{
    if (!s)
        return v_null();
    return (struct val){.k = V_STR, .n = (uint32_t)strlen(s), .u.s = s};
}

static struct val v_bool(bool b)
{
    return (struct val){.k = V_BOOL, .u.b = b};
}

static struct val v_tref(const struct gq_tref *r)
{
    if (r->kind == GQ_REF_NAMED)
        return (struct val){.k = V_TYPE, .u.t = r->named};
    return (struct val){.k = V_TREF, .u.r = r};
}

static struct val v_type(const struct gq_type_def *t)
{
    return t ? (struct val){.k = V_TYPE, .u.t = t} : v_null();
}

static bool list_alloc(struct gq_exec *x, struct val *out, uint32_t n)
{
    out->k = V_LIST;
    out->n = 0;
    out->u.items = gq_alloc(x->a, (n ? n : 1) * sizeof *out->u.items);
    return out->u.items != NULL;
}

static bool want_deprecated(json_t *args)
{
    return json_is_true(json_object_get(args, "includeDeprecated"));
}

static bool inputs_list(struct gq_exec *x, struct val *out, const struct gq_input_value_def *v, unsigned n)
{
    if (!list_alloc(x, out, n))
        return false;
    for (unsigned i = 0; i < n; i++)
        out->u.items[out->n++] = (struct val){.k = V_INPUT, .u.iv = &v[i]};
    return true;
}

/* A field of an introspection type on a part of the schema. false: out of
 * memory. */
static bool intro_resolve(struct gq_exec *x, struct val src, const char *f, json_t *args, struct val *out)
{
    *out = v_null();
    const struct gq_schema *s = x->s;
    switch (src.k) {
    case V_SCHEMA:
        if (!strcmp(f, "description")) {
            *out = v_str(s->description);
        } else if (!strcmp(f, "types")) {
            if (!list_alloc(x, out, s->ntypes))
                return false;
            for (unsigned i = 0; i < s->ntypes; i++)
                out->u.items[out->n++] = v_type(&s->types[i]);
        } else if (!strcmp(f, "queryType")) {
            *out = v_type(x->query);
        } else if (!strcmp(f, "mutationType")) {
            if (s->mutation_type)
                *out = v_type(gq_schema_type(s, s->mutation_type, (unsigned)strlen(s->mutation_type)));
        } else if (!strcmp(f, "directives")) {
            if (!list_alloc(x, out, s->ndirectives))
                return false;
            for (unsigned i = 0; i < s->ndirectives; i++)
                out->u.items[out->n++] = (struct val){.k = V_DIR, .u.d = &s->directives[i]};
        }
        return true;
    case V_TREF:
        if (!strcmp(f, "kind"))
            *out = v_str(src.u.r->kind == GQ_REF_LIST ? "LIST" : "NON_NULL");
        else if (!strcmp(f, "ofType"))
            *out = v_tref(src.u.r->of);
        /* name, description and the rest: null for a wrapper */
        return true;
    case V_TYPE: {
        const struct gq_type_def *t = src.u.t;
        static const char *const kinds[] = {"SCALAR", "OBJECT", "INTERFACE", "UNION", "ENUM", "INPUT_OBJECT"};
        bool has_fields = t->kind == GQ_OBJECT || t->kind == GQ_INTERFACE;
        if (!strcmp(f, "kind")) {
            *out = v_str(kinds[t->kind]);
        } else if (!strcmp(f, "name")) {
            *out = v_str(t->name);
        } else if (!strcmp(f, "description")) {
            *out = v_str(t->description);
        } else if (!strcmp(f, "specifiedByURL")) {
            if (t->kind == GQ_SCALAR)
                *out = v_str(t->specified_by);
        } else if (!strcmp(f, "fields")) {
            if (!has_fields)
                return true;
            if (!list_alloc(x, out, t->nfields))
                return false;
            bool all = want_deprecated(args);
            for (unsigned i = 0; i < t->nfields; i++)
                if (all || !t->fields[i].deprecation)
                    out->u.items[out->n++] = (struct val){.k = V_FIELD, .u.f = &t->fields[i]};
        } else if (!strcmp(f, "interfaces")) {
            if (!has_fields)
                return true;
            if (!list_alloc(x, out, t->ninterfaces))
                return false;
            for (unsigned i = 0; i < t->ninterfaces; i++)
                out->u.items[out->n++] =
                    v_type(gq_schema_type(s, t->interfaces[i], (unsigned)strlen(t->interfaces[i])));
        } else if (!strcmp(f, "possibleTypes")) {
            if (t->kind == GQ_UNION) {
                if (!list_alloc(x, out, t->nmembers))
                    return false;
                for (unsigned i = 0; i < t->nmembers; i++)
                    out->u.items[out->n++] = v_type(gq_schema_type(s, t->members[i], (unsigned)strlen(t->members[i])));
            } else if (t->kind == GQ_INTERFACE) {
                if (!list_alloc(x, out, s->ntypes))
                    return false;
                for (unsigned i = 0; i < s->ntypes; i++)
                    if (s->types[i].kind == GQ_OBJECT && possible_type(t, &s->types[i]))
                        out->u.items[out->n++] = v_type(&s->types[i]);
            }
        } else if (!strcmp(f, "enumValues")) {
            if (t->kind != GQ_ENUM)
                return true;
            if (!list_alloc(x, out, t->nvalues))
                return false;
            bool all = want_deprecated(args);
            for (unsigned i = 0; i < t->nvalues; i++)
                if (all || !t->values[i].deprecation)
                    out->u.items[out->n++] = (struct val){.k = V_ENUMV, .u.ev = &t->values[i]};
        } else if (!strcmp(f, "inputFields")) {
            if (t->kind == GQ_INPUT_OBJECT)
                return inputs_list(x, out, t->inputs, t->ninputs);
        } else if (!strcmp(f, "isOneOf")) {
            if (t->kind == GQ_INPUT_OBJECT)
                *out = v_bool(false);
        }
        return true;
    }
    case V_FIELD: {
        const struct gq_field_def *fd = src.u.f;
        if (!strcmp(f, "name"))
            *out = v_str(fd->name);
        else if (!strcmp(f, "description"))
            *out = v_str(fd->description);
        else if (!strcmp(f, "args"))
            return inputs_list(x, out, fd->args, fd->nargs);
        else if (!strcmp(f, "type"))
            *out = v_tref(fd->tref);
        else if (!strcmp(f, "isDeprecated"))
            *out = v_bool(fd->deprecation != NULL);
        else if (!strcmp(f, "deprecationReason"))
            *out = v_str(fd->deprecation);
        return true;
    }
    case V_INPUT: {
        const struct gq_input_value_def *iv = src.u.iv;
        if (!strcmp(f, "name"))
            *out = v_str(iv->name);
        else if (!strcmp(f, "description"))
            *out = v_str(iv->description);
        else if (!strcmp(f, "type"))
            *out = v_tref(iv->tref);
        else if (!strcmp(f, "defaultValue"))
            *out = v_str(iv->default_value);
        else if (!strcmp(f, "isDeprecated"))
            *out = v_bool(false);
        return true;
    }
    case V_ENUMV: {
        const struct gq_enum_value_def *ev = src.u.ev;
        if (!strcmp(f, "name"))
            *out = v_str(ev->name);
        else if (!strcmp(f, "description"))
            *out = v_str(ev->description);
        else if (!strcmp(f, "isDeprecated"))
            *out = v_bool(ev->deprecation != NULL);
        else if (!strcmp(f, "deprecationReason"))
            *out = v_str(ev->deprecation);
        return true;
    }
    case V_DIR: {
        const struct gq_directive_def *d = src.u.d;
        if (!strcmp(f, "name")) {
            *out = v_str(d->name);
        } else if (!strcmp(f, "description")) {
            *out = v_str(d->description);
        } else if (!strcmp(f, "isRepeatable")) {
            *out = v_bool(d->repeatable);
        } else if (!strcmp(f, "locations")) {
            if (!list_alloc(x, out, 20))
                return false;
            for (const char *p = d->locations_sdl; p && *p && out->n < 20;) {
                size_t n = strcspn(p, " |");
                out->u.items[out->n++] = (struct val){.k = V_STR, .n = (uint32_t)n, .u.s = p};
                p += n;
                while (*p == ' ' || *p == '|')
                    p++;
            }
        } else if (!strcmp(f, "args")) {
            return inputs_list(x, out, d->args, d->nargs);
        } else if (!strcmp(f, "isDeprecated")) {
            *out = v_bool(false);
        }
        return true;
    }
    case V_NULL:
    case V_JSON:
    case V_STR:
    case V_BOOL:
    case V_LIST:
    case V_EXT:
        break;
    }
    return true;
}

/* ---- completing values ------------------------------------------------------------- */

struct fctx {                              /* the field whose value is being completed */
    const struct gq_type_def *parent;
    const char *name;
    struct group *g;
};

static int complete_value(struct gq_exec *x, const struct fctx *fc, const struct gq_tref *t, struct val v);

static int out_check(struct gq_exec *x, const struct group *g)
{
    if (x->data.len > EXEC_OUT_MAX)
        return abort_with(x, "The response would be larger than hookd allows (64 MiB).", g);
    return R_OK;
}

/* A custom scalar's value as graphql-js's identity serializer leaves it. */
static bool put_json_value(struct hk_buf *b, const json_t *j, int depth)
{
    if (depth > VALUE_DEPTH_MAX)
        return false;
    switch (json_typeof(j)) {
    case JSON_STRING:
        hk_buf_put_json_str(b, json_string_value(j), json_string_length(j));
        return true;
    case JSON_INTEGER:
    case JSON_REAL:
        if (!isfinite(json_num(j))) {
            hk_buf_puts(b, "null");
            return true;
        }
        put_json_number(b, j);
        return true;
    case JSON_TRUE:
        hk_buf_puts(b, "true");
        return true;
    case JSON_FALSE:
        hk_buf_puts(b, "false");
        return true;
    case JSON_NULL:
        hk_buf_puts(b, "null");
        return true;
    case JSON_ARRAY:
        hk_buf_putc(b, '[');
        for (size_t i = 0; i < json_array_size(j); i++) {
            if (i)
                hk_buf_putc(b, ',');
            if (!put_json_value(b, json_array_get(j, i), depth + 1))
                return false;
        }
        hk_buf_putc(b, ']');
        return true;
    case JSON_OBJECT: {
        hk_buf_putc(b, '{');
        bool first = true;
        const char *k;
        size_t kn;
        json_t *v;
        json_object_keylen_foreach((json_t *)j, k, kn, v) {
            if (!first)
                hk_buf_putc(b, ',');
            first = false;
            hk_buf_put_json_str(b, k, kn);
            hk_buf_putc(b, ':');
            if (!put_json_value(b, v, depth + 1))
                return false;
        }
        hk_buf_putc(b, '}');
        return true;
    }
    }
    return false;
}

/* A leaf's message: what, then inspect(value). */
static int leaf_error(struct gq_exec *x, const char *what, struct val v)
{
    struct hk_buf *m = &x->tmp;
    m->len = 0;
    hk_buf_puts(m, what);
    if (v.k == V_JSON)
        inspect(m, v.u.j);
    else if (v.k == V_STR)
        js_stringify(m, v.u.s, v.n);
    else if (v.k == V_BOOL)
        hk_buf_puts(m, v.u.b ? "true" : "false");
    else
        hk_buf_puts(m, "{}");
    raw_set(x, tmp_msg(x), NULL);
    return R_RAW;
}

/* The leaf's text for a scalar value: strings, numbers, booleans. */
static int serialize_leaf(struct gq_exec *x, const struct gq_type_def *t, struct val v)
{
    struct hk_buf *b = &x->data;
    const json_t *j = v.k == V_JSON ? v.u.j : NULL;
    bool is_str = v.k == V_STR || json_is_string(j);
    const char *sp = v.k == V_STR ? v.u.s : j && json_is_string(j) ? json_string_value(j) : NULL;
    size_t sn = v.k == V_STR ? v.n : j && json_is_string(j) ? json_string_length(j) : 0;
    bool is_bool = v.k == V_BOOL || json_is_boolean(j);
    bool bval = v.k == V_BOOL ? v.u.b : json_is_true(j);
    bool is_num = j && json_is_number(j);
    char t2[40];

    if (t->kind == GQ_ENUM) {
        if (is_str)
            for (unsigned i = 0; i < t->nvalues; i++)
                if (strlen(t->values[i].name) == sn && memcmp(t->values[i].name, sp, sn) == 0) {
                    hk_buf_put_json_str(b, sp, sn);
                    return R_OK;
                }
        char what[200];
        snprintf(what, sizeof what, "Enum \"%s\" cannot represent value: ", t->name);
        return leaf_error(x, what, v);
    }
    if (t == x->t_int || t == x->t_float) {
        bool is_int = t == x->t_int;
        double d;
        if (is_bool) {
            hk_buf_putc(b, bval ? '1' : '0');
            return R_OK;
        }
        if (is_num) {
            d = json_num(j);
        } else if (is_str && sn > 0) {
            if (!js_to_number(sp, sn, &d))
                d = NAN;
        } else {
            return leaf_error(x, is_int ? "Int cannot represent non-integer value: " :
                                          "Float cannot represent non numeric value: ", v);
        }
        if (is_int) {
            int64_t iv;
            if (is_num && json_is_integer(j)) {
                iv = json_integer_value(j);
            } else if (isfinite(d) && d >= -9.2e18 && d <= 9.2e18 && d == (double)(int64_t)d) {
                iv = (int64_t)d;
            } else {
                return leaf_error(x, "Int cannot represent non-integer value: ", v);
            }
            if (iv > 2147483647 || iv < -2147483648LL)
                return leaf_error(x, "Int cannot represent non 32-bit signed integer value: ", v);
            hk_buf_put_i64(b, iv);
            return R_OK;
        }
        if (!isfinite(d))
            return leaf_error(x, "Float cannot represent non numeric value: ", v);
        if (is_num && json_is_integer(j)) {
            hk_buf_put_i64(b, json_integer_value(j));
            return R_OK;
        }
        js_num(d, t2);
        hk_buf_puts(b, t2);
        return R_OK;
    }
    if (t == x->t_string) {
        if (is_str) {
            hk_buf_put_json_str(b, sp, sn);
        } else if (is_bool) {
            hk_buf_puts(b, bval ? "\"true\"" : "\"false\"");
        } else if (is_num && isfinite(json_num(j))) {
            hk_buf_putc(b, '"');
            put_json_number(b, j);
            hk_buf_putc(b, '"');
        } else {
            return leaf_error(x, "String cannot represent value: ", v);
        }
        return R_OK;
    }
    if (t == x->t_boolean) {
        if (is_bool) {
            hk_buf_puts(b, bval ? "true" : "false");
        } else if (is_num && isfinite(json_num(j))) {
            hk_buf_puts(b, json_num(j) != 0 ? "true" : "false");
        } else {
            return leaf_error(x, "Boolean cannot represent a non boolean value: ", v);
        }
        return R_OK;
    }
    if (t == x->t_id) {
        int64_t iv;
        if (is_str) {
            hk_buf_put_json_str(b, sp, sn);
        } else if (is_num && json_is_int_value(j, &iv)) {
            hk_buf_putc(b, '"');
            hk_buf_put_i64(b, iv);
            hk_buf_putc(b, '"');
        } else {
            return leaf_error(x, "ID cannot represent value: ", v);
        }
        return R_OK;
    }
    /* A custom scalar (DateTime): graphql-js's buildSchema serializes it as
     * it is; hookd's resolver gives RFC 3339 strings. */
    if (v.k == V_STR) {
        hk_buf_put_json_str(b, sp, sn);
    } else if (v.k == V_BOOL) {
        hk_buf_puts(b, bval ? "true" : "false");
    } else if (!j || !put_json_value(b, j, 0)) {
        char what[200];
        snprintf(what, sizeof what, "%s cannot represent value: ", t->name);
        return leaf_error(x, what, v);
    }
    return R_OK;
}

static int complete_object(struct gq_exec *x, const struct fctx *fc, const struct gq_type_def *ot, struct val v);

/* completeValue. Writes the value, or leaves the text for the caller to
 * cut back: R_OK, R_NULL (wrote null), R_RAW (x->raw, to be located at
 * this field), R_PROP (x->pend, propagating), R_ABORT. */
static int complete_value(struct gq_exec *x, const struct fctx *fc, const struct gq_tref *t, struct val v)
{
    if (t->kind == GQ_REF_NON_NULL) {
        int r = complete_value(x, fc, t->of, v);
        if (r != R_NULL)
            return r;
        struct hk_buf *m = &x->tmp;
        m->len = 0;
        hk_buf_printf(m, "Cannot return null for non-nullable field %s.%s.", fc->parent->name, fc->name);
        raw_set(x, tmp_msg(x), NULL);
        return R_RAW;
    }
    if (spend(x, fc->g) != R_OK)
        return R_ABORT;
    if (v.k == V_NULL || (v.k == V_JSON && json_is_null(v.u.j))) {
        hk_buf_puts(&x->data, "null");
        return R_NULL;
    }
    if (t->kind == GQ_REF_LIST) {
        bool is_list = v.k == V_LIST || (v.k == V_JSON && json_is_array(v.u.j));
        if (!is_list) {
            struct hk_buf *m = &x->tmp;
            m->len = 0;
            hk_buf_printf(m, "Expected Iterable, but did not find one for field \"%s.%s\".", fc->parent->name,
                          fc->name);
            raw_set(x, tmp_msg(x), NULL);
            return R_RAW;
        }
        if (x->depth >= EXEC_DEPTH_MAX)
            return abort_with(x, "The response nests deeper than hookd allows.", fc->g);
        x->depth++;
        size_t n = v.k == V_LIST ? v.n : json_array_size(v.u.j);
        hk_buf_putc(&x->data, '[');
        int rc = R_OK;
        for (size_t i = 0; i < n; i++) {
            if (i)
                hk_buf_putc(&x->data, ',');
            size_t mark = x->data.len;
            struct val item;
            if (v.k == V_LIST) {
                item = v.u.items[i];
            } else {
                json_t *j = json_array_get(v.u.j, i);
                item = json_is_null(j) ? v_null() : (struct val){.k = V_JSON, .u.j = j};
            }
            path_push_index(x, (uint32_t)i);
            int r = complete_value(x, fc, t->of, item);
            if (r == R_RAW) {
                locate(x, &x->raw, fc->g, true);
                r = R_PROP;
            }
            if (r == R_PROP) {
                if (t->of->kind == GQ_REF_NON_NULL) {
                    x->npath--;
                    rc = R_PROP;
                    break;
                }
                record(x);
                x->data.len = mark;
                hk_buf_puts(&x->data, "null");
            }
            x->npath--;
            if (r == R_ABORT) {
                rc = R_ABORT;
                break;
            }
        }
        x->depth--;
        if (rc != R_OK)
            return rc;
        hk_buf_putc(&x->data, ']');
        return R_OK;
    }
    const struct gq_type_def *nt = t->named;
    switch (nt->kind) {
    case GQ_SCALAR:
    case GQ_ENUM: {
        int r = serialize_leaf(x, nt, v);
        if (r != R_OK)
            return r;
        return out_check(x, fc->g);
    }
    case GQ_OBJECT:
        return complete_object(x, fc, nt, v);
    case GQ_INTERFACE:
    case GQ_UNION: {
        /* graphql-js's defaultTypeResolver: the value's own __typename. */
        json_t *tn = v.k == V_JSON ? json_object_get(v.u.j, "__typename") : NULL;
        struct hk_buf *m = &x->tmp;
        m->len = 0;
        if (!json_is_string(tn)) {
            hk_buf_printf(m,
                          "Abstract type \"%s\" must resolve to an Object type at runtime for field \"%s.%s\". "
                          "Either the \"%s\" type should provide a \"resolveType\" function or each possible type "
                          "should provide an \"isTypeOf\" function.",
                          nt->name, fc->parent->name, fc->name, nt->name);
            raw_set(x, tmp_msg(x), NULL);
            return R_RAW;
        }
        const struct gq_type_def *rt = gq_schema_type(x->s, json_string_value(tn), (unsigned)json_string_length(tn));
        if (!rt) {
            hk_buf_printf(m,
                          "Abstract type \"%s\" was resolved to a type \"%s\" that does not exist inside the schema.",
                          nt->name, json_string_value(tn));
        } else if (rt->kind != GQ_OBJECT) {
            hk_buf_printf(m, "Abstract type \"%s\" was resolved to a non-object type \"%s\".", nt->name, rt->name);
        } else if (!possible_type(nt, rt)) {
            hk_buf_printf(m, "Runtime Object type \"%s\" is not a possible type for \"%s\".", rt->name, nt->name);
        } else {
            return complete_object(x, fc, rt, v);
        }
        raw_set(x, tmp_msg(x), NULL);
        return R_RAW;
    }
    case GQ_INPUT_OBJECT:
        break;
    }
    hk_buf_puts(&x->data, "null");
    return R_NULL;
}

/* A response key is a GraphQL name ([_A-Za-z][_0-9A-Za-z]*): nothing to
 * escape, one reservation. */
static void put_key(struct gq_exec *x, struct gq_str key, bool *first)
{
    struct hk_buf *b = &x->data;
    char *w = hk_buf_reserve(b, key.n + 4);
    size_t k = 0;
    if (!*first)
        w[k++] = ',';
    *first = false;
    w[k++] = '"';
    if (key.n)
        memcpy(w + k, key.p, key.n);
    k += key.n;
    w[k++] = '"';
    w[k++] = ':';
    b->len += k;
}

/* True when a field's value is written as a JSON string as it comes: a
 * String, an ID or a custom scalar (DateTime), nullable or not, with no
 * arguments. Completing such a field of an external object takes the short
 * way in complete_field. */
static bool str_leaf(const struct gq_exec *x, const struct gq_field_def *def)
{
    if (!def || def->nargs)
        return false;
    const struct gq_tref *t = def->tref->kind == GQ_REF_NON_NULL ? def->tref->of : def->tref;
    if (t->kind != GQ_REF_NAMED || t->named->kind != GQ_SCALAR)
        return false;
    const struct gq_type_def *n = t->named;
    return n != x->t_int && n != x->t_float && n != x->t_boolean;
}

/* executeField on a nested object: R_OK (written, maybe null with an error
 * recorded), R_PROP or R_ABORT. */
/* A field of an external object as a value to complete; false when the
 * arena is out of room (a list's items). */
static bool ext_field(struct gq_exec *x, const struct gq_ext *e, unsigned index, struct val *out)
{
    struct gq_xval xv = {.kind = GQ_X_NULL};
    e->vt->field(e, index, &xv);
    switch (xv.kind) {
    case GQ_X_STRING:
    case GQ_X_INT:   /* decimal text: Int's serializer reads numbers in strings, as graphql-js's does */
        *out = (struct val){.k = V_STR, .n = (uint32_t)xv.n, .u.s = xv.s ? xv.s : ""};
        return true;
    case GQ_X_BOOL:
        *out = v_bool(xv.b);
        return true;
    case GQ_X_OBJECT:
        *out = xv.obj ? (struct val){.k = V_EXT, .u.e = xv.obj} : v_null();
        return true;
    case GQ_X_LIST: {
        struct val *items = gq_alloc(x->a, (xv.n ? xv.n : 1) * sizeof *items);
        if (!items)
            return false;
        for (size_t i = 0; i < xv.n; i++)
            items[i] = xv.items[i] ? (struct val){.k = V_EXT, .u.e = xv.items[i]} : v_null();
        *out = (struct val){.k = V_LIST, .n = (uint32_t)xv.n, .u.items = items};
        return true;
    }
    case GQ_X_JSON:
        *out = xv.json && !json_is_null(xv.json) ? (struct val){.k = V_JSON, .u.j = xv.json} : v_null();
        return true;
    default:
        *out = v_null();
        return true;
    }
}

static int complete_field(struct gq_exec *x, const struct gq_type_def *pt, struct val src, struct group *g,
                          bool *first)
{
    const struct gq_selection *node = g->nodes[0];
    if (str_is(node->name, "__typename")) {
        put_key(x, g->key, first);
        hk_buf_put_json_str(&x->data, pt->name, strlen(pt->name));
        return spend(x, g);
    }
    if (g->def_of != pt) {   /* once per group and type, not once per list item */
        g->def = gq_type_field(pt, node->name.p, node->name.n);
        g->def_of = pt;
        g->str_leaf = str_leaf(x, g->def);
    }
    const struct gq_field_def *def = g->def;
    if (!def)
        return R_OK;   /* not a field of this type: graphql-js leaves it out */
    put_key(x, g->key, first);
    size_t mark = x->data.len;
    if (!path_push_key(x, g->key))
        return abort_with(x, "The response nests deeper than hookd allows.", g);
    if (g->str_leaf && src.k == V_EXT) {
        /* The short way for the common leaf (a row's id, source, time):
         * what complete_value would do for a string, without the detour. */
        struct gq_xval xv = {.kind = GQ_X_NULL};
        src.u.e->vt->field(src.u.e, (unsigned)(def - pt->fields), &xv);
        if (xv.kind == GQ_X_STRING) {
            int r = spend(x, g);
            if (r == R_OK) {
                hk_buf_put_json_str(&x->data, xv.s ? xv.s : "", xv.n);
                r = out_check(x, g);
            }
            x->npath--;
            return r;
        }
    }
    struct fctx fc = {.parent = pt, .name = def->name, .g = g};
    int r = R_OK;
    json_t *args = NULL;
    if (def->nargs)
        r = get_args(x, def->args, def->nargs, node->args, node->nargs, node->loc, &args);
    if (r == R_OK) {
        struct val v = v_null();
        if (src.k == V_JSON) {
            json_t *j = json_is_object(src.u.j) ? json_object_get(src.u.j, def->name) : NULL;
            if (j && !json_is_null(j))
                v = (struct val){.k = V_JSON, .u.j = j};
        } else if (src.k == V_EXT) {
            if (!ext_field(x, src.u.e, (unsigned)(def - pt->fields), &v)) {
                json_decref(args);
                x->npath--;
                return abort_with(x, OOM_MSG, g);
            }
        } else if (!intro_resolve(x, src, def->name, args, &v)) {
            json_decref(args);
            x->npath--;
            return abort_with(x, OOM_MSG, g);
        }
        r = complete_value(x, &fc, def->tref, v);
    }
    json_decref(args);
    if (r == R_RAW) {
        locate(x, &x->raw, g, true);
        r = R_PROP;
    }
    if (r == R_PROP && def->tref->kind != GQ_REF_NON_NULL) {
        record(x);
        x->data.len = mark;
        hk_buf_puts(&x->data, "null");
        r = R_OK;
    }
    x->npath--;
    return r == R_NULL ? R_OK : r;
}

static int complete_object(struct gq_exec *x, const struct fctx *fc, const struct gq_type_def *ot, struct val v)
{
    struct fields *f;
    int r = subfields(x, fc->g, ot, &f);
    if (r != R_OK)
        return r;
    if (x->depth >= EXEC_DEPTH_MAX)
        return abort_with(x, "The response nests deeper than hookd allows.", fc->g);
    x->depth++;
    hk_buf_putc(&x->data, '{');
    bool first = true;
    for (uint32_t i = 0; i < f->n; i++) {
        r = complete_field(x, ot, v, &f->v[i], &first);
        if (r != R_OK)
            break;
    }
    x->depth--;
    if (r != R_OK)
        return r;
    hk_buf_putc(&x->data, '}');
    return R_OK;
}

/* ---- root fields ------------------------------------------------------------------ */

static void finish(struct gq_exec *x);

/* Complete root slot i into "data". Sets x->stop when data turns null. */
static void complete_slot(struct gq_exec *x, uint32_t i)
{
    struct slot *sl = &x->slots[i];
    if (sl->kind == SLOT_SKIP)
        return;
    bool first = x->data.len == 1;   /* just the '{' */
    put_key(x, sl->g->key, &first);
    size_t mark = x->data.len;
    path_push_key(x, sl->g->key);
    struct fctx fc = {.parent = x->root, .name = sl->call.field ? sl->call.field->name : "", .g = sl->g};
    const struct gq_tref *t = sl->call.field ? sl->call.field->tref : NULL;
    int r = R_OK;
    switch (sl->kind) {
    case SLOT_TYPENAME:
        hk_buf_put_json_str(&x->data, x->root->name, strlen(x->root->name));
        r = spend(x, sl->g);
        break;
    case SLOT_CALL:
        if (sl->has_raw) {
            x->raw = sl->raw;
            r = R_RAW;
        } else if (sl->error) {
            raw_set(x, sl->error, NULL);
            r = R_RAW;
        } else if (sl->ext) {
            r = complete_value(x, &fc, t, (struct val){.k = V_EXT, .u.e = sl->ext});
        } else {
            struct val v = sl->value && !json_is_null(sl->value) ? (struct val){.k = V_JSON, .u.j = sl->value}
                                                                  : v_null();
            r = complete_value(x, &fc, t, v);
        }
        break;
    case SLOT_SCHEMA:
    case SLOT_TYPE:
        fc.name = sl->kind == SLOT_SCHEMA ? "__schema" : "__type";
        t = sl->kind == SLOT_SCHEMA ? x->r_schema_nn : x->r_type;
        if (sl->has_raw) {
            x->raw = sl->raw;
            r = R_RAW;
        } else if (!x->introspection) {
            struct hk_buf *m = &x->tmp;
            m->len = 0;
            hk_buf_printf(m, "GraphQL introspection has been disabled, but the requested query contained the field "
                             "\"%s\".", fc.name);
            raw_set(x, tmp_msg(x), NULL);
            r = R_RAW;
        } else if (sl->kind == SLOT_SCHEMA) {
            r = complete_value(x, &fc, t, (struct val){.k = V_SCHEMA});
        } else {
            json_t *name = json_object_get(sl->call.args, "name");
            const struct gq_type_def *td =
                json_is_string(name)
                    ? gq_schema_type(x->s, json_string_value(name), (unsigned)json_string_length(name))
                    : NULL;
            r = complete_value(x, &fc, t, v_type(td));
        }
        break;
    case SLOT_SKIP:
        break;
    }
    if (r == R_RAW) {
        locate(x, &x->raw, sl->g, true);
        r = R_PROP;
    }
    if (r == R_PROP && t && t->kind != GQ_REF_NON_NULL) {
        record(x);
        x->data.len = mark;
        hk_buf_puts(&x->data, "null");
        r = R_OK;
    }
    x->npath--;
    if (r == R_PROP || r == R_ABORT) {
        record(x);
        x->stop = true;
    }
}

static void issue(struct gq_exec *x, uint32_t i)
{
    struct slot *sl = &x->slots[i];
    const struct gq_selection *node = sl->g->nodes[0];
    if (sl->kind == SLOT_TYPE) {
        json_t *args;
        if (get_args(x, &x->type_name_arg, 1, node->args, node->nargs, node->loc, &args) == R_OK) {
            sl->call.args = args;
        } else {
            sl->has_raw = true;
            sl->raw = x->raw;
        }
    }
    if (sl->kind != SLOT_CALL) {
        sl->resolved = true;
        return;
    }
    json_t *args = NULL;
    const struct gq_field_def *def = sl->call.field;
    if (get_args(x, def->args, def->nargs, node->args, node->nargs, node->loc, &args) != R_OK) {
        sl->has_raw = true;
        sl->raw = x->raw;
        sl->resolved = true;
        return;
    }
    sl->call.args = args;
    x->inflight++;
    x->resolve(x->resolve_ctx, &sl->call);
}

/* Complete what has arrived, in order; issue what may be issued; finish
 * when nothing is left in flight. Re-entered from a resolver that answers
 * at once, it only asks the outer loop to go round again. */
static void pump(struct gq_exec *x)
{
    if (x->pumping) {
        x->repump = true;
        return;
    }
    x->pumping = true;
    do {
        x->repump = false;
        while (!x->stop && x->ncompleted < x->nissued && x->slots[x->ncompleted].resolved)
            complete_slot(x, x->ncompleted++);
        if (x->stop)
            break;
        if (x->op->op == GQ_OP_MUTATION) {
            if (x->nissued == x->ncompleted && x->nissued < x->nslots) {
                issue(x, x->nissued++);
                x->repump = true;
            }
        } else {
            while (x->nissued < x->nslots && !x->stop)
                issue(x, x->nissued++);
            if (x->ncompleted < x->nissued && x->slots[x->ncompleted].resolved)
                x->repump = true;
        }
    } while (x->repump);
    x->pumping = false;
    if (!x->finished && x->inflight == 0 && (x->stop || x->ncompleted == x->nslots))
        finish(x);
}

void gq_root_done_ext(struct gq_root_call *call, const struct gq_ext *value, const char *error)
{
    struct slot *sl = (struct slot *)call;
    struct gq_exec *x = call->x;
    assert(!sl->resolved && x->inflight > 0);
    if (sl->resolved || x->freed)
        return;
    sl->ext = value;
    if (error) {
        sl->error = gq_strdup(x->a, error, strlen(error));
        if (!sl->error)
            sl->error = OOM_MSG;
    }
    sl->resolved = true;
    x->inflight--;
    pump(x);
}

void gq_root_done(struct gq_root_call *call, json_t *value, const char *error)
{
    struct slot *sl = (struct slot *)call;
    struct gq_exec *x = call->x;
    assert(!sl->resolved && x->inflight > 0);
    if (sl->resolved || x->freed) {
        json_decref(value);
        return;
    }
    sl->value = value;
    if (error) {
        sl->error = gq_strdup(x->a, error, strlen(error));
        if (!sl->error)
            sl->error = OOM_MSG;
    }
    sl->resolved = true;
    x->inflight--;
    pump(x);
}

/* ---- the response --------------------------------------------------------------------- */

static void finish(struct gq_exec *x)
{
    x->finished = true;
    struct hk_buf *out = x->out;
    if (x->nerrs) {
        hk_buf_puts(out, "{\"errors\":[");
        hk_buf_put(out, x->errs.p, x->errs.len);
        if (x->dropped)
            hk_buf_printf(out, ",{\"message\":\"%" PRIu32 " more errors were left out.\"}", x->dropped);
        hk_buf_puts(out, "],\"data\":");
    } else {
        hk_buf_puts(out, "{\"data\":");
    }
    if (x->stop) {
        hk_buf_puts(out, "null");
    } else {
        hk_buf_put(out, x->data.p, x->data.len);
        hk_buf_putc(out, '}');
    }
    hk_buf_putc(out, '}');
    hk_buf_free(&x->data);
    hk_buf_free(&x->errs);
    hk_buf_free(&x->tmp);
    /* Last: `done` may end the request and free the arena x lives in. */
    if (x->done)
        x->done(x->done_ud, x);
}

static void request_error(struct hk_buf *out, const char *msg, const struct gq_loc *loc)
{
    hk_buf_puts(out, "{\"errors\":[{\"message\":");
    hk_buf_put_json_str(out, msg, strlen(msg));
    if (loc) {
        hk_buf_puts(out, ",\"locations\":[");
        put_loc(out, *loc, true);
        hk_buf_putc(out, ']');
    }
    hk_buf_puts(out, "}]}");
}

const struct gq_definition *gq_select_operation(const struct gq_document *doc, const char *name)
{
    const struct gq_definition *op = NULL;
    for (uint32_t i = 0; i < doc->ndefs; i++) {
        const struct gq_definition *d = &doc->defs[i];
        if (d->kind != GQ_D_OPERATION)
            continue;
        if (!name) {
            if (op)
                return NULL;
            op = d;
        } else if (str_is(d->name, name) && d->name.p) {
            op = d;
        }
    }
    return op;
}

static const struct gq_tref *wrap(struct gq_exec *x, int kind, const struct gq_tref *of, const struct gq_type_def *t)
{
    struct gq_tref *r = gq_alloc(x->a, sizeof *r);
    if (r) {
        r->kind = kind;
        r->of = of;
        r->named = t;
    }
    return r;
}

/* Everything before the root fields are issued: false when execution
 * cannot begin (then the request error is in p->out). */
/* The types the executor names, looked up once per thread and schema
 * rather than once per request. */
static void known_types(struct gq_exec *x)
{
    static _Thread_local const struct gq_schema *of;
    static _Thread_local const struct gq_type_def *t[9];
    const struct gq_schema *s = x->s;
    if (of != s) {
        t[0] = gq_schema_type(s, "Int", 3);
        t[1] = gq_schema_type(s, "Float", 5);
        t[2] = gq_schema_type(s, "String", 6);
        t[3] = gq_schema_type(s, "Boolean", 7);
        t[4] = gq_schema_type(s, "ID", 2);
        t[5] = gq_schema_type(s, "__Schema", 8);
        t[6] = gq_schema_type(s, "__Type", 6);
        t[7] = gq_schema_type(s, s->query_type, (unsigned)strlen(s->query_type));
        t[8] = s->mutation_type ? gq_schema_type(s, s->mutation_type, (unsigned)strlen(s->mutation_type)) : NULL;
        of = s;
    }
    x->t_int = t[0], x->t_float = t[1], x->t_string = t[2], x->t_boolean = t[3], x->t_id = t[4];
    x->t_schema = t[5], x->t_type = t[6], x->query = t[7], x->mutation = t[8];
}

static bool prepare(struct gq_exec *x, const struct gq_exec_params *p)
{
    /* buildExecutionContext: the operation. */
    const struct gq_definition *op = NULL;
    for (uint32_t i = 0; i < x->doc->ndefs; i++) {
        const struct gq_definition *d = &x->doc->defs[i];
        if (d->kind != GQ_D_OPERATION)
            continue;
        if (!p->operation_name) {
            if (op) {
                request_error(p->out, "Must provide operation name if query contains multiple operations.", NULL);
                return false;
            }
            op = d;
        } else if (d->name.p && str_is(d->name, p->operation_name)) {
            op = d;
        }
    }
    if (!op) {
        if (p->operation_name) {
            struct hk_buf m = HK_BUF_INIT;
            hk_buf_printf(&m, "Unknown operation named \"%s\".", p->operation_name);
            hk_buf_putc(&m, '\0');
            request_error(p->out, m.p, NULL);
            hk_buf_free(&m);
        } else {
            request_error(p->out, "Must provide an operation.", NULL);
        }
        return false;
    }
    x->op = op;
    if (op->op == GQ_OP_MUTATION && !p->allow_mutation) {
        request_error(p->out, "Can only perform a mutation operation from a POST request.", NULL);
        return false;
    }
    known_types(x);
    if (x->t_schema && x->t_type && x->t_string) {
        x->r_schema_nn = wrap(x, GQ_REF_NON_NULL, wrap(x, GQ_REF_NAMED, NULL, x->t_schema), NULL);
        x->r_type = wrap(x, GQ_REF_NAMED, NULL, x->t_type);
        const struct gq_tref *string = wrap(x, GQ_REF_NAMED, NULL, x->t_string);
        x->type_name_arg = (struct gq_input_value_def){
            .name = "name", .type = "String!", .tref = wrap(x, GQ_REF_NON_NULL, string, NULL)};
        if (!x->r_schema_nn || !x->r_type || !x->type_name_arg.tref || !x->r_schema_nn->of ||
            !x->type_name_arg.tref->of) {
            request_error(p->out, OOM_MSG, NULL);
            return false;
        }
    }
    if (!build_fragments(x)) {
        request_error(p->out, OOM_MSG, NULL);
        return false;
    }
    struct hk_buf errs = HK_BUF_INIT;
    uint32_t nerr = 0;
    if (!coerce_variables(x, p->variables, &errs, &nerr)) {
        hk_buf_puts(p->out, "{\"errors\":[");
        hk_buf_put(p->out, errs.p, errs.len);
        hk_buf_puts(p->out, "]}");
        hk_buf_free(&errs);
        return false;
    }
    hk_buf_free(&errs);
    return true;
}

/* executeOperation up to the root fields. */
static void start_root(struct gq_exec *x)
{
    x->root = x->op->op == GQ_OP_QUERY ? x->query : x->op->op == GQ_OP_MUTATION ? x->mutation : NULL;
    hk_buf_putc(&x->data, '{');
    if (!x->root) {
        struct hk_buf *m = &x->tmp;
        m->len = 0;
        hk_buf_printf(m, "Schema is not configured to execute %s operation.",
                      x->op->op == GQ_OP_MUTATION ? "mutation" : "subscription");
        struct rawerr e = {.msg = tmp_msg(x), .nlocs = 1, .locs = {x->op->loc}};
        locate(x, &e, NULL, false);
        record(x);
        x->stop = true;
        return;
    }
    struct fields *f = gq_alloc(x->a, sizeof *f);
    uint8_t *visited = new_visited(x);
    if (!f || !visited) {
        abort_with(x, OOM_MSG, NULL);
        record(x);
        x->stop = true;
        return;
    }
    int r = collect(x, x->root, x->op->sel, f, visited, 0, NULL);
    if (r != R_OK) {
        if (r == R_RAW)
            locate(x, &x->raw, NULL, false);
        record(x);
        x->stop = true;
        return;
    }
    x->slots = gq_alloc(x->a, (f->n ? f->n : 1) * sizeof *x->slots);
    if (!x->slots) {
        abort_with(x, OOM_MSG, NULL);
        record(x);
        x->stop = true;
        return;
    }
    x->nslots = f->n;
    for (uint32_t i = 0; i < f->n; i++) {
        struct slot *sl = &x->slots[i];
        struct group *g = &f->v[i];
        const struct gq_selection *node = g->nodes[0];
        sl->g = g;
        sl->call.x = x;
        sl->call.response_key = gq_strdup(x->a, g->key.p ? g->key.p : "", g->key.n);
        if (!sl->call.response_key) {
            abort_with(x, OOM_MSG, g);
            record(x);
            x->stop = true;
            return;
        }
        bool on_query = x->root == x->query && x->r_schema_nn;
        if (str_is(node->name, "__typename")) {
            sl->kind = SLOT_TYPENAME;
        } else if (on_query && str_is(node->name, "__schema")) {
            sl->kind = SLOT_SCHEMA;
        } else if (on_query && str_is(node->name, "__type")) {
            sl->kind = SLOT_TYPE;
        } else {
            sl->call.field = gq_type_field(x->root, node->name.p, node->name.n);
            sl->kind = sl->call.field ? SLOT_CALL : SLOT_SKIP;
        }
    }
}

/* The execution lives in the arena `a` (with its collected fields and
 * messages); what it holds outside it (coerced variables and arguments,
 * the resolvers' values, the text buffers) gq_exec_free releases. */
struct gq_exec *gq_exec_start(struct gq_arena *a, const struct gq_exec_params *p)
{
    gq_schema_init(p->schema);
    struct gq_exec *x = gq_alloc(a, sizeof *x);
    if (!x) {
        request_error(p->out, OOM_MSG, NULL);
        return NULL;
    }
    x->a = a;
    x->s = p->schema;
    x->doc = p->doc;
    x->introspection = p->introspection;
    x->resolve = p->resolve;
    x->resolve_ctx = p->resolve_ctx;
    x->done = p->done;
    x->done_ud = p->done_ud;
    x->out = p->out;
    if (!prepare(x, p)) {
        json_decref(x->vars);
        x->vars = NULL;
        hk_buf_free(&x->tmp);
        return NULL;
    }
    start_root(x);
    /* done may run inside pump (every root field at hand at once): x is not
     * touched after it. */
    pump(x);
    return x;
}

enum gq_op gq_exec_operation(const struct gq_exec *x)
{
    return x->op->op;
}

/* Not before every root call has been answered: a late gq_root_done
 * would find its execution gone. A second call does nothing. */
void gq_exec_free(struct gq_exec *x)
{
    if (!x || x->freed)
        return;
    x->freed = true;
    for (uint32_t i = 0; i < x->nslots; i++) {
        json_decref(x->slots[i].value);
        json_decref(x->slots[i].call.args);
        x->slots[i].value = NULL;
        x->slots[i].call.args = NULL;
    }
    json_decref(x->vars);
    x->vars = NULL;
    hk_buf_free(&x->data);
    hk_buf_free(&x->errs);
    hk_buf_free(&x->tmp);
}
