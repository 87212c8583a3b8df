/* SPDX-License-Identifier: MIT
 * A strict reader of the Prometheus text exposition format 0.0.4 for tests:
 * every sample belongs to a family introduced by exactly one HELP and one
 * TYPE line before its first sample, families are not interleaved, names,
 * labels and values have the exact syntax, no labelset repeats, and every
 * histogram has cumulative buckets in increasing `le` order ending with
 * +Inf, a _count equal to its +Inf bucket and a _sum. prom_parse() returns
 * NULL on success or a malloc'd description of the first problem.
 * Header-only: include it in one file per test program. */
#ifndef HK_TEST_PROM_H
#define HK_TEST_PROM_H

#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct prom_sample {
    char name[128];
    char labels[1024];        /* canonical: sorted by name, a="x",b="y" (values re-escaped) */
    char le[32];              /* the le label of a _bucket (also in labels) */
    char nole[1024];          /* labels without le */
    double value;
};

struct prom_family {
    char name[128];
    char type[16];
    bool help, has_type, had_samples;
};

struct prom {
    struct prom_sample *s;
    int n, cap;
    struct prom_family *f;
    int nf, capf;
};

static char *prom__err(int line, const char *fmt, const char *a, const char *b)
{
    a = a ? a : "";
    b = b ? b : "";
    size_t n = strlen(fmt) + strlen(a) + strlen(b) + 32;
    char *m = malloc(n);
    int k = snprintf(m, n, "line %d: ", line);
    if (k < 0)
        k = 0;
    memcpy(m + k, fmt, strlen(fmt) + 1);
    /* fmt has exactly two %s: splice a and b in place of them. */
    char *out = malloc(n);
    char *p1 = strstr(m, "%s");
    char *p2 = p1 ? strstr(p1 + 2, "%s") : NULL;
    if (!p1 || !p2) {
        free(out);
        return m;
    }
    *p1 = 0;
    *p2 = 0;
    size_t o = 0;
    o += (size_t)sprintf(out + o, "%s", m);
    o += (size_t)sprintf(out + o, "%s", a);
    o += (size_t)sprintf(out + o, "%s", p1 + 2);
    o += (size_t)sprintf(out + o, "%s", b);
    sprintf(out + o, "%s", p2 + 2);
    free(m);
    return out;
}

static bool prom__name_ok(const char *p, size_t n, bool colon)
{
    if (n == 0)
        return false;
    for (size_t i = 0; i < n; i++) {
        char c = p[i];
        bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_' || (colon && c == ':') ||
                  (i > 0 && c >= '0' && c <= '9');
        if (!ok)
            return false;
    }
    return true;
}

static struct prom_family *prom__family(struct prom *p, const char *name)
{
    for (int i = 0; i < p->nf; i++)
        if (strcmp(p->f[i].name, name) == 0)
            return &p->f[i];
    return NULL;
}

static bool prom__value(const char *v, double *out)
{
    if (strcmp(v, "+Inf") == 0) {
        *out = INFINITY;
        return true;
    }
    if (strcmp(v, "-Inf") == 0) {
        *out = -INFINITY;
        return true;
    }
    if (strcmp(v, "NaN") == 0) {
        *out = NAN;
        return true;
    }
    if (!*v)
        return false;
    for (const char *c = v; *c; c++)
        if (!strchr("0123456789+-.eE", *c))
            return false;
    char *end;
    *out = strtod(v, &end);
    return *end == 0;
}

struct prom__label {
    char name[64];
    char value[512];
};

static int prom__cmp_label(const void *a, const void *b)
{
    return strcmp(((const struct prom__label *)a)->name, ((const struct prom__label *)b)->name);
}

static void prom__canon(struct prom__label *l, int n, const char *skip, char *out, size_t cap)
{
    size_t k = 0;
    out[0] = 0;
    for (int i = 0; i < n; i++) {
        if (skip && strcmp(l[i].name, skip) == 0)
            continue;
        k += (size_t)snprintf(out + k, cap - k, "%s%s=\"", k ? "," : "", l[i].name);
        for (const char *c = l[i].value; *c && k + 4 < cap; c++) {
            if (*c == '\\' || *c == '"')
                out[k++] = '\\', out[k++] = *c;
            else if (*c == '\n')
                out[k++] = '\\', out[k++] = 'n';
            else
                out[k++] = *c;
        }
        k += (size_t)snprintf(out + k, cap - k, "\"");
    }
}

/* The family a sample name belongs to, given the families declared. */
static struct prom_family *prom__owner(struct prom *p, const char *name)
{
    struct prom_family *f = prom__family(p, name);
    if (f && strcmp(f->type, "histogram") != 0 && strcmp(f->type, "summary") != 0)
        return f;
    static const char *const suffix[] = {"_bucket", "_count", "_sum"};
    for (int i = 0; i < 3; i++) {
        size_t n = strlen(name), sl = strlen(suffix[i]);
        if (n > sl && strcmp(name + n - sl, suffix[i]) == 0) {
            char base[128];
            snprintf(base, sizeof base, "%.*s", (int)(n - sl), name);
            struct prom_family *g = prom__family(p, base);
            if (g && (strcmp(g->type, "histogram") == 0 || (strcmp(g->type, "summary") == 0 && i > 0)))
                return g;
        }
    }
    return NULL;
}

static char *prom__check_histograms(struct prom *p)
{
    for (int fi = 0; fi < p->nf; fi++) {
        struct prom_family *f = &p->f[fi];
        if (strcmp(f->type, "histogram") != 0)
            continue;
        char bucket[160], count[160], sum[160];
        snprintf(bucket, sizeof bucket, "%s_bucket", f->name);
        snprintf(count, sizeof count, "%s_count", f->name);
        snprintf(sum, sizeof sum, "%s_sum", f->name);
        for (int i = 0; i < p->n; i++) {
            struct prom_sample *c = &p->s[i];
            if (strcmp(c->name, count) != 0)
                continue;
            double prev_le = -INFINITY, prev = 0, inf = -1;
            int nb = 0;
            for (int j = 0; j < p->n; j++) {
                struct prom_sample *b = &p->s[j];
                if (strcmp(b->name, bucket) != 0 || strcmp(b->nole, c->labels) != 0)
                    continue;
                double le;
                if (!prom__value(b->le, &le))
                    return prom__err(0, "%s: bad le in {%s}", f->name, b->labels);
                if (le <= prev_le)
                    return prom__err(0, "%s: le not increasing at {%s}", f->name, b->labels);
                if (b->value < prev)
                    return prom__err(0, "%s: buckets not cumulative at {%s}", f->name, b->labels);
                prev_le = le;
                prev = b->value;
                nb++;
                if (isinf(le))
                    inf = b->value;
            }
            if (nb == 0 || !isinf(prev_le))
                return prom__err(0, "%s: {%s} has no buckets or does not end with +Inf", f->name, c->labels);
            if (inf != c->value)
                return prom__err(0, "%s: _count differs from the +Inf bucket for {%s}", f->name, c->labels);
            bool has_sum = false;
            for (int j = 0; j < p->n; j++)
                if (strcmp(p->s[j].name, sum) == 0 && strcmp(p->s[j].labels, c->labels) == 0)
                    has_sum = true;
            if (!has_sum)
                return prom__err(0, "%s: no _sum for {%s}", f->name, c->labels);
        }
        /* And every bucket set has its _count. */
        for (int j = 0; j < p->n; j++) {
            if (strcmp(p->s[j].name, bucket) != 0)
                continue;
            bool found = false;
            for (int i = 0; i < p->n && !found; i++)
                found = strcmp(p->s[i].name, count) == 0 && strcmp(p->s[i].labels, p->s[j].nole) == 0;
            if (!found)
                return prom__err(0, "%s: buckets {%s} without _count", f->name, p->s[j].nole);
        }
    }
    return NULL;
}

static void prom_free(struct prom *p)
{
    free(p->s);
    free(p->f);
    memset(p, 0, sizeof *p);
}

static char *prom_parse(const char *text, struct prom *p)
{
    memset(p, 0, sizeof *p);
    const char *line = text;
    int lineno = 0;
    struct prom_family *cur = NULL;
    if (!*text)
        return prom__err(0, "empty exposition%s%s", NULL, NULL);
    while (*line) {
        lineno++;
        const char *nl = strchr(line, '\n');
        if (!nl)
            return prom__err(lineno, "last line lacks its newline%s%s", NULL, NULL);
        char buf[4096];
        size_t len = (size_t)(nl - line);
        if (len >= sizeof buf)
            return prom__err(lineno, "line too long%s%s", NULL, NULL);
        memcpy(buf, line, len);
        buf[len] = 0;
        line = nl + 1;
        if (len == 0)
            return prom__err(lineno, "empty line%s%s", NULL, NULL);
        if (buf[0] == '#') {
            char kind[8], name[256];
            int off = 0;
            if (sscanf(buf, "# %7s %255s %n", kind, name, &off) < 2)
                return prom__err(lineno, "bad comment: %s%s", buf, NULL);
            if (strcmp(kind, "HELP") != 0 && strcmp(kind, "TYPE") != 0)
                continue; /* other comments are allowed */
            if (!prom__name_ok(name, strlen(name), true) || strlen(name) >= sizeof p->f[0].name)
                return prom__err(lineno, "bad metric name %s%s", name, NULL);
            struct prom_family *f = prom__family(p, name);
            if (!f) {
                if (p->nf == p->capf) {
                    p->capf = p->capf ? 2 * p->capf : 32;
                    p->f = realloc(p->f, (size_t)p->capf * sizeof *p->f);
                }
                f = &p->f[p->nf++];
                memset(f, 0, sizeof *f);
                memcpy(f->name, name, strlen(name) + 1);
                cur = f;
            } else if (f != cur || f->had_samples) {
                return prom__err(lineno, "%s %s after its samples or another family", kind, name);
            }
            if (strcmp(kind, "HELP") == 0) {
                if (f->help)
                    return prom__err(lineno, "second HELP for %s%s", name, NULL);
                if (!buf[off])
                    return prom__err(lineno, "empty HELP for %s%s", name, NULL);
                f->help = true;
            } else {
                if (f->has_type)
                    return prom__err(lineno, "second TYPE for %s%s", name, NULL);
                const char *t = buf + off;
                if (strcmp(t, "counter") && strcmp(t, "gauge") && strcmp(t, "histogram") &&
                    strcmp(t, "summary") && strcmp(t, "untyped"))
                    return prom__err(lineno, "unknown TYPE %s%s", t, NULL);
                snprintf(f->type, sizeof f->type, "%s", t);
                f->has_type = true;
            }
            continue;
        }
        /* A sample: name[{labels}] value */
        char *c = buf;
        while (*c && *c != '{' && *c != ' ')
            c++;
        struct prom_sample smp;
        memset(&smp, 0, sizeof smp);
        size_t nlen = (size_t)(c - buf);
        if (!prom__name_ok(buf, nlen, true) || nlen >= sizeof smp.name)
            return prom__err(lineno, "bad sample name in: %s%s", buf, NULL);
        memcpy(smp.name, buf, nlen);
        struct prom__label labels[16];
        int nl2 = 0;
        if (*c == '{') {
            c++;
            while (*c != '}') {
                char *eq = strchr(c, '=');
                if (!eq || nl2 == 16)
                    return prom__err(lineno, "bad labels in: %s%s", buf, NULL);
                if (!prom__name_ok(c, (size_t)(eq - c), false) || eq - c >= 64 || (eq - c >= 2 && c[0] == '_' && c[1] == '_'))
                    return prom__err(lineno, "bad label name in: %s%s", buf, NULL);
                struct prom__label *l = &labels[nl2++];
                memset(l, 0, sizeof *l);
                memcpy(l->name, c, (size_t)(eq - c));
                c = eq + 1;
                if (*c++ != '"')
                    return prom__err(lineno, "label value not quoted in: %s%s", buf, NULL);
                size_t k = 0;
                while (*c != '"') {
                    if (!*c || k + 1 >= sizeof l->value)
                        return prom__err(lineno, "unterminated label value in: %s%s", buf, NULL);
                    if (*c == '\\') {
                        c++;
                        if (*c == 'n')
                            l->value[k++] = '\n';
                        else if (*c == '\\' || *c == '"')
                            l->value[k++] = *c;
                        else
                            return prom__err(lineno, "bad escape in: %s%s", buf, NULL);
                        c++;
                    } else {
                        l->value[k++] = *c++;
                    }
                }
                c++;
                if (*c == ',')
                    c++;
                else if (*c != '}')
                    return prom__err(lineno, "expected , or } in: %s%s", buf, NULL);
            }
            c++;
        }
        if (*c != ' ')
            return prom__err(lineno, "expected one space before the value in: %s%s", buf, NULL);
        c++;
        if (strchr(c, ' '))
            return prom__err(lineno, "timestamps or extra fields in: %s%s", buf, NULL);
        if (!prom__value(c, &smp.value))
            return prom__err(lineno, "bad value in: %s%s", buf, NULL);
        qsort(labels, (size_t)nl2, sizeof labels[0], prom__cmp_label);
        for (int i = 1; i < nl2; i++)
            if (strcmp(labels[i].name, labels[i - 1].name) == 0)
                return prom__err(lineno, "duplicate label in: %s%s", buf, NULL);
        prom__canon(labels, nl2, NULL, smp.labels, sizeof smp.labels);
        prom__canon(labels, nl2, "le", smp.nole, sizeof smp.nole);
        for (int i = 0; i < nl2; i++)
            if (strcmp(labels[i].name, "le") == 0)
                memcpy(smp.le, labels[i].value, strnlen(labels[i].value, sizeof smp.le - 1));
        struct prom_family *f = prom__owner(p, smp.name);
        if (!f || !f->help || !f->has_type)
            return prom__err(lineno, "sample %s without HELP and TYPE before it%s", smp.name, NULL);
        if (f != cur)
            return prom__err(lineno, "sample %s outside its family's block%s", smp.name, NULL);
        f->had_samples = true;
        bool is_bucket = strlen(smp.name) > 7 && strcmp(smp.name + strlen(smp.name) - 7, "_bucket") == 0 &&
                         strcmp(f->type, "histogram") == 0;
        if (is_bucket && !smp.le[0])
            return prom__err(lineno, "bucket without le: %s%s", buf, NULL);
        if (!is_bucket && smp.le[0] && strcmp(f->type, "histogram") == 0)
            return prom__err(lineno, "le on a non-bucket sample: %s%s", buf, NULL);
        if (strcmp(f->type, "counter") == 0 && !(smp.value >= 0))
            return prom__err(lineno, "negative or NaN counter: %s%s", buf, NULL);
        for (int i = 0; i < p->n; i++)
            if (strcmp(p->s[i].name, smp.name) == 0 && strcmp(p->s[i].labels, smp.labels) == 0)
                return prom__err(lineno, "repeated sample: %s%s", buf, NULL);
        if (p->n == p->cap) {
            p->cap = p->cap ? 2 * p->cap : 256;
            p->s = realloc(p->s, (size_t)p->cap * sizeof *p->s);
        }
        p->s[p->n++] = smp;
    }
    for (int i = 0; i < p->nf; i++)
        if (!p->f[i].help || !p->f[i].has_type)
            return prom__err(0, "family %s lacks HELP or TYPE%s", p->f[i].name, NULL);
    return prom__check_histograms(p);
}

/* The value of sample `name` with exactly the labels `labels` (canonical
 * form: sorted by label name, e.g. method="GET",status="200"); -1 when absent. */
static double prom_get(const struct prom *p, const char *name, const char *labels)
{
    for (int i = 0; i < p->n; i++)
        if (strcmp(p->s[i].name, name) == 0 && strcmp(p->s[i].labels, labels ? labels : "") == 0)
            return p->s[i].value;
    return -1;
}

/* How many samples are named `name`. */
static int prom_count(const struct prom *p, const char *name)
{
    int n = 0;
    for (int i = 0; i < p->n; i++)
        n += strcmp(p->s[i].name, name) == 0;
    return n;
}

#endif
