/* SPDX-License-Identifier: MIT
 * A validating JSON scanner with path lookups (jscan.h): an explicit
 * stack of container kinds, no recursion, no allocation. fuzz_ingress
 * checks it against jansson on the same bytes. */
#include "ingress/jscan.h"

#include <errno.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "core/utf8.h"

#define WANTS_MAX 8

struct want_state {
    const char *seg[HK_JSCAN_SEGS_MAX];
    size_t seg_len[HK_JSCAN_SEGS_MAX];
    int nseg;                  /* 0: finds nothing */
    int matched;               /* leading segments the current key chain matches */
};

struct scan {
    const char *p, *end;
    int depth;                 /* containers open */
    uint8_t is_obj[HK_JSCAN_DEPTH_MAX / 8 + 1];
    struct hk_jscan_want *w;
    struct want_state ws[WANTS_MAX];
    int nw;
};

static void ws_ws(struct scan *s)
{
    while (s->p < s->end && (*s->p == ' ' || *s->p == '\t' || *s->p == '\n' || *s->p == '\r'))
        s->p++;
}

static int hexv(char c)
{
    if (c >= '0' && c <= '9')
        return c - '0';
    if (c >= 'a' && c <= 'f')
        return c - 'a' + 10;
    if (c >= 'A' && c <= 'F')
        return c - 'A' + 10;
    return -1;
}

static int hex4(const char *p)
{
    int v = 0;
    for (int i = 0; i < 4; i++) {
        int h = hexv(p[i]);
        if (h < 0)
            return -1;
        v = v * 16 + h;
    }
    return v;
}

/* A string at s->p (the opening quote). Sets *start and *len to its raw
 * content and *esc when it has escapes. */
static int scan_string(struct scan *s, const char **start, size_t *len, bool *esc)
{
    const char *p = s->p + 1;
    *start = p;
    *esc = false;
    while (p < s->end) {
        unsigned char c = (unsigned char)*p;
        if (c == '"') {
            *len = (size_t)(p - *start);
            s->p = p + 1;
            return 0;
        }
        if (c < 0x20)
            return -1;
        if (c == '\\') {
            *esc = true;
            if (p + 1 >= s->end)
                return -1;
            char e = p[1];
            if (e == 'u') {
                if (s->end - p < 6)
                    return -1;
                int u = hex4(p + 2);
                if (u <= 0)   /* malformed, or \u0000 (no NUL in strings) */
                    return -1;
                p += 6;
                if (u >= 0xdc00 && u <= 0xdfff)
                    return -1;   /* a lone low surrogate */
                if (u >= 0xd800 && u <= 0xdbff) {
                    if (s->end - p < 6 || p[0] != '\\' || p[1] != 'u')
                        return -1;
                    int lo = hex4(p + 2);
                    if (lo < 0xdc00 || lo > 0xdfff)
                        return -1;
                    p += 6;
                }
                continue;
            }
            if (!strchr("\"\\/bfnrt", e) || e == 0)
                return -1;
            p += 2;
            continue;
        }
        uint32_t cp;
        size_t k = hk_utf8_seq((const unsigned char *)p, (size_t)(s->end - p), &cp);
        if (!k)
            return -1;
        p += k;
    }
    return -1;
}

/* A number at s->p: RFC 8259's grammar; an integer must fit int64 and a
 * real must be finite (as jansson). */
static int scan_number(struct scan *s, enum hk_jkind *kind, const char **start, size_t *len)
{
    const char *p = s->p, *b = p;
    bool real = false;
    if (p < s->end && *p == '-')
        p++;
    if (p >= s->end)
        return -1;
    if (*p == '0') {
        p++;
    } else if (*p >= '1' && *p <= '9') {
        while (p < s->end && *p >= '0' && *p <= '9')
            p++;
    } else {
        return -1;
    }
    if (p < s->end && *p == '.') {
        real = true;
        p++;
        if (p >= s->end || *p < '0' || *p > '9')
            return -1;
        while (p < s->end && *p >= '0' && *p <= '9')
            p++;
    }
    if (p < s->end && (*p == 'e' || *p == 'E')) {
        real = true;
        p++;
        if (p < s->end && (*p == '+' || *p == '-'))
            p++;
        if (p >= s->end || *p < '0' || *p > '9')
            return -1;
        while (p < s->end && *p >= '0' && *p <= '9')
            p++;
    }
    size_t n = (size_t)(p - b);
    if (!real && n > 20)
        return -1;   /* more digits than any int64 */
    char small[64];
    char *tmp = n < sizeof small ? small : malloc(n + 1);
    if (!tmp)
        return -1;
    memcpy(tmp, b, n);
    tmp[n] = 0;
    errno = 0;
    int rc = 0;
    if (real) {
        double d = strtod(tmp, NULL);
        if (errno == ERANGE && isinf(d))
            rc = -1;
    } else {
        (void)strtoll(tmp, NULL, 10);
        if (errno == ERANGE)
            rc = -1;
    }
    if (tmp != small)
        free(tmp);
    if (rc < 0)
        return -1;
    *kind = real ? HK_J_REAL : HK_J_INT;
    *start = b;
    *len = n;
    s->p = p;
    return 0;
}

static bool key_is(const char *k, size_t klen, bool esc, const char *seg, size_t slen)
{
    if (!esc)
        return klen == slen && memcmp(k, seg, slen) == 0;
    char buf[256];
    struct hk_jval v = {HK_J_STRING, k, klen, true};
    long n = hk_jscan_string(&v, buf, sizeof buf);
    return n >= 0 && (size_t)n == slen && memcmp(buf, seg, slen) == 0;
}

/* A member with key k starts at depth d (1: the root's members). */
static void member(struct scan *s, const char *k, size_t klen, bool esc, int d)
{
    for (int i = 0; i < s->nw; i++) {
        struct want_state *ws = &s->ws[i];
        if (ws->matched >= d)
            ws->matched = d - 1;
        if (ws->matched == d - 1 && d <= ws->nseg && key_is(k, klen, esc, ws->seg[d - 1], ws->seg_len[d - 1])) {
            ws->matched = d;
            /* Last one wins: a repeated key replaces what the earlier
             * one held, found or not. */
            s->w[i].out.kind = HK_J_NONE;
        }
    }
}

/* The value that starts now belongs to the member just seen at depth d. */
static void found(struct scan *s, int d, enum hk_jkind kind, const char *p, size_t n, bool esc)
{
    for (int i = 0; i < s->nw; i++)
        if (s->ws[i].nseg == d && s->ws[i].matched == d)
            s->w[i].out = (struct hk_jval){kind, p, n, esc};
}

static bool top_is_obj(const struct scan *s)
{
    int d = s->depth - 1;
    return s->is_obj[d / 8] & (1u << (d % 8));
}

static int push(struct scan *s, bool obj)
{
    if (s->depth >= HK_JSCAN_DEPTH_MAX)
        return -1;
    int d = s->depth++;
    if (obj)
        s->is_obj[d / 8] |= (uint8_t)(1u << (d % 8));
    else
        s->is_obj[d / 8] &= (uint8_t)~(1u << (d % 8));
    return 0;
}

/* After a container closes at depth d+1: members below it no longer match. */
static void left(struct scan *s, int d)
{
    for (int i = 0; i < s->nw; i++)
        if (s->ws[i].matched > d)
            s->ws[i].matched = d;
}

static int run(struct scan *s)
{
    ws_ws(s);
    if (s->p >= s->end || *s->p != '{')
        return -1;
    s->p++;
    push(s, true);
    /* State: after an opening bracket (expect a key/value or the close),
     * or after a value (expect a comma or the close). */
    bool after_open = true;
    for (;;) {
        ws_ws(s);
        if (s->p >= s->end)
            return -1;
        bool obj = top_is_obj(s);
        char c = *s->p;
        if (c == (obj ? '}' : ']') && after_open) {
            s->p++;
            goto closed;
        }
        if (!after_open) {
            if (c == (obj ? '}' : ']')) {
                s->p++;
                goto closed;
            }
            if (c != ',')
                return -1;
            s->p++;
            ws_ws(s);
            if (s->p >= s->end)
                return -1;
            c = *s->p;
        }
        if (obj) {
            const char *k;
            size_t klen;
            bool esc;
            if (c != '"' || scan_string(s, &k, &klen, &esc) < 0)
                return -1;
            member(s, k, klen, esc, s->depth);
            ws_ws(s);
            if (s->p >= s->end || *s->p != ':')
                return -1;
            s->p++;
            ws_ws(s);
            if (s->p >= s->end)
                return -1;
            c = *s->p;
        }
        /* A value. Its member's depth (for path matches) is s->depth
         * when the parent is an object; array elements match nothing. */
        int md = obj ? s->depth : -1;
        after_open = false;
        if (c == '{' || c == '[') {
            if (md > 0)
                found(s, md, HK_J_OTHER, s->p, 0, false);
            s->p++;
            if (push(s, c == '{') < 0)
                return -1;
            after_open = true;
            continue;
        }
        if (c == '"') {
            const char *v;
            size_t vlen;
            bool esc;
            if (scan_string(s, &v, &vlen, &esc) < 0)
                return -1;
            if (md > 0)
                found(s, md, HK_J_STRING, v, vlen, esc);
        } else if (c == '-' || (c >= '0' && c <= '9')) {
            enum hk_jkind kind;
            const char *v;
            size_t vlen;
            if (scan_number(s, &kind, &v, &vlen) < 0)
                return -1;
            if (md > 0)
                found(s, md, kind, v, vlen, false);
        } else {
            static const char *const lit[] = {"true", "false", "null"};
            size_t i = 0;
            for (; i < 3; i++) {
                size_t l = strlen(lit[i]);
                if ((size_t)(s->end - s->p) >= l && memcmp(s->p, lit[i], l) == 0) {
                    s->p += l;
                    break;
                }
            }
            if (i == 3)
                return -1;
            if (md > 0)
                found(s, md, HK_J_OTHER, NULL, 0, false);
        }
        continue;
    closed:
        s->depth--;
        left(s, s->depth);
        if (s->depth == 0) {
            ws_ws(s);
            return s->p == s->end ? 0 : -1;
        }
        after_open = false;
    }
}

int hk_jscan(const char *p, size_t n, struct hk_jscan_want *w, int nw)
{
    struct scan s;
    s.p = p;
    s.end = p + n;
    s.depth = 0;
    s.w = w;
    s.nw = nw < WANTS_MAX ? nw : WANTS_MAX;
    for (int i = 0; i < s.nw; i++) {
        struct want_state *ws = &s.ws[i];
        w[i].out = (struct hk_jval){HK_J_NONE, NULL, 0, false};
        ws->matched = 0;
        ws->nseg = 0;
        const char *q = w[i].path;
        int k = 0;
        bool ok = q && *q;
        while (ok && k < HK_JSCAN_SEGS_MAX) {
            const char *dot = strchr(q, '.');
            size_t len = dot ? (size_t)(dot - q) : strlen(q);
            if (len == 0)
                ok = false;
            ws->seg[k] = q;
            ws->seg_len[k++] = len;
            if (!dot)
                break;
            q = dot + 1;
            if (k == HK_JSCAN_SEGS_MAX)
                ok = false;
        }
        ws->nseg = ok ? k : 0;
    }
    if (!p || run(&s) < 0)
        return -1;
    for (int i = 0; i < s.nw; i++)
        if (!s.ws[i].nseg)
            w[i].out.kind = HK_J_NONE;
    return 0;
}

static size_t put_utf8(char *d, unsigned cp)
{
    if (cp < 0x80) {
        d[0] = (char)cp;
        return 1;
    }
    if (cp < 0x800) {
        d[0] = (char)(0xc0 | (cp >> 6));
        d[1] = (char)(0x80 | (cp & 0x3f));
        return 2;
    }
    if (cp < 0x10000) {
        d[0] = (char)(0xe0 | (cp >> 12));
        d[1] = (char)(0x80 | ((cp >> 6) & 0x3f));
        d[2] = (char)(0x80 | (cp & 0x3f));
        return 3;
    }
    d[0] = (char)(0xf0 | (cp >> 18));
    d[1] = (char)(0x80 | ((cp >> 12) & 0x3f));
    d[2] = (char)(0x80 | ((cp >> 6) & 0x3f));
    d[3] = (char)(0x80 | (cp & 0x3f));
    return 4;
}

long hk_jscan_string(const struct hk_jval *v, char *dst, size_t cap)
{
    if (!v->escaped) {
        if (v->n > cap)
            return -1;
        memcpy(dst, v->p, v->n);
        return (long)v->n;
    }
    /* The scanner validated the escapes: decode without checking again,
     * but never past the span or the buffer. */
    size_t o = 0;
    const char *p = v->p, *end = v->p + v->n;
    while (p < end) {
        char tmp[4];
        size_t k;
        if (*p != '\\') {
            tmp[0] = *p++;
            k = 1;
        } else if (end - p >= 2 && p[1] != 'u') {
            static const char from[] = "\"\\/bfnrt", to[] = "\"\\/\b\f\n\r\t";
            const char *f = strchr(from, p[1]);
            if (!f)
                return -1;
            tmp[0] = to[f - from];
            k = 1;
            p += 2;
        } else {
            if (end - p < 6)
                return -1;
            int u = hex4(p + 2);
            if (u < 0)
                return -1;
            p += 6;
            unsigned cp = (unsigned)u;
            if (u >= 0xd800 && u <= 0xdbff) {
                if (end - p < 6)
                    return -1;
                int lo = hex4(p + 2);
                if (lo < 0xdc00 || lo > 0xdfff)
                    return -1;
                cp = 0x10000 + (((unsigned)u - 0xd800) << 10) + ((unsigned)lo - 0xdc00);
                p += 6;
            }
            k = put_utf8(tmp, cp);
        }
        if (o + k > cap)
            return -1;
        memcpy(dst + o, tmp, k);
        o += k;
    }
    return (long)o;
}
