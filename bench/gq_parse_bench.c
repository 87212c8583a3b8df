/* SPDX-License-Identifier: MIT
 * gq_parse_bench: what parsing and validating one GraphQL request costs. A
 * 2 KB dashboard query (variables with defaults, aliases, fragments,
 * @include/@skip, __type, every string form) goes through gq_parse and
 * gq_validate with a fresh arena each time, as a request does; the time of
 * `iterations` passes is divided by their number, `runs` times, and one JSON
 * line gives the median and the spread (bench/compare.py reads it).
 *
 *   gq_parse_bench [-n iterations] [-r runs] [-f query.graphql]
 *   gq_parse_bench --check     the query parses and validates (0 errors; with
 *                              introspection off, graphql-js's 6), in a Synthesis line
 *
 * Exit 0, or 1 when the query does not parse and validate cleanly: a figure
 * for a query that was refused would measure the wrong path. */
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "graphql/graphql.h"

/* The "2 KB query", exactly 2048 bytes; checked against graphql-js
 * 16 and the SDL when it was written (0 errors, 327 tokens). */
static const char QUERY[] =
    "# A dashboard's query: the last Stripe events with their payloads, the last\n"
    "# GitHub pushes, one event by id, each source's count, the server's state\n"
    "# and a type.\n"
    "query Dashboard(\n"
    "  $first: Int = 100\n"
    "  $after: String\n"
    "  $source: String = \"stripe\"\n"
    "  $since: DateTime = \"2026-11-01T00:00:00Z\"\n"
    "  $until: DateTime\n"
    "  $withPayload: Boolean! = true\n"
    "  $brief: Boolean = false\n"
    ") {\n"
    "  stripe: webhooks(first: $first, after: $after, source: $source, receivedAfter: $since,"
    " receivedBefore: $until) {\n"
    "    edges {\n"
    "      cursor\n"
    "      node {\n"
    "        ...WebhookFields\n"
    "        payload @include(if: $withPayload)\n"
    "      }\n"
    "    }\n"
    "    pageInfo {\n"
    "      ...Paging\n"
    "    }\n"
    "  }\n"
    "  pushes: webhooks(first: 10, source: \"github\", eventType: \"push\") {\n"
    "    edges {\n"
    "      node {\n"
    "        ...WebhookFields\n"
    "        ... on Webhook @skip(if: $brief) {\n"
    "          payload\n"
    "        }\n"
    "      }\n"
    "    }\n"
    "    pageInfo {\n"
    "      ...Paging\n"
    "    }\n"
    "  }\n"
    "  refunds: webhooks(first: 5, source: \"stripe\", eventType: \"charge.refunded\","
    " receivedAfter: $since) {\n"
    "    edges {\n"
    "      cursor\n"
    "      node {\n"
    "        id\n"
    "        receivedAt\n"
    "        ...Minimal @skip(if: $brief)\n"
    "      }\n"
    "    }\n"
    "    pageInfo {\n"
    "      hasNextPage\n"
    "    }\n"
    "  }\n"
    "  one: webhook(id: \"4211\") {\n"
    "    ...WebhookFields\n"
    "    body: payload\n"
    "  }\n"
    "  other: webhook(id: 4212) {\n"
    "    ...Minimal\n"
    "  }\n"
    "  sources {\n"
    "    source\n"
    "    count\n"
    "    lastReceivedAt\n"
    "    __typename\n"
    "  }\n"
    "  system {\n"
    "    version\n"
    "    store\n"
    "    uptimeMs\n"
    "    loops: eventLoops\n"
    "    __typename\n"
    "  }\n"
    "  schema: __type(name: \"Webhook\") {\n"
    "    name\n"
    "    fields(includeDeprecated: false) {\n"
    "      name\n"
    "      type { kind name ofType { kind name } }\n"
    "    }\n"
    "  }\n"
    "  __typename\n"
    "}\n"
    "\n"
    "fragment WebhookFields on Webhook {\n"
    "  id\n"
    "  source\n"
    "  eventType\n"
    "  receivedAt\n"
    "  __typename\n"
    "  ...Minimal\n"
    "}\n"
    "\n"
    "fragment Minimal on Webhook {\n"
    "  id\n"
    "  source\n"
    "}\n"
    "\n"
    "fragment Paging on PageInfo {\n"
    "  hasNextPage\n"
    "  endCursor\n"
    "  __typename\n"
    "}\n"
    "\n"
    "query Escapes($note: String = \"caf\\u00e9 \\\"quoted\\\" \\\\ tab\\t\", $limit: Int = 3) {\n"
    "  webhooks(first: $limit, source: \"\"\"\n"
    "    block \"string\"\n"
    "  \"\"\", eventType: $note) {\n"
    "    edges {\n"
    "      node {\n"
    "        id\n"
    "      }\n"
    "    }\n"
    "  }\n"
    "}\n";
_Static_assert(sizeof QUERY - 1 == 2048, "the query is 2 KB");

#define RUNS_MAX 101
#define QUERY_FILE_MAX (1u << 20)

static const struct gq_limits limits = GQ_LIMITS_DEFAULT;

static double now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e9 + (double)ts.tv_nsec;
}

static void print_errors(const struct gq_errors *errs)
{
    for (uint32_t i = 0; i < errs->n && i < GQ_ERRORS_MAX; i++)
        fprintf(stderr, "gq_parse_bench:   %u:%u: %s\n", errs->v[i].nlocs ? errs->v[i].locs[0].line : 0,
                errs->v[i].nlocs ? errs->v[i].locs[0].column : 0, errs->v[i].message ? errs->v[i].message : "");
}

/* One request's worth: parse, and validate when `validate`; the arena is
 * freed before returning. The messages live in it, so they are printed
 * here when the outcome is not `expect` (a count of errors; -1: a syntax
 * error; below -1: never print). Returns the validation errors (0 when
 * parsing only), or -1 when the document does not parse; *used gets the
 * arena's bytes and *first the first error's location. */
static int once(const char *src, size_t n, bool validate, bool introspection, int expect, size_t *used,
                struct gq_loc *first, struct gq_errors *errs)
{
    struct gq_arena a;
    struct gq_document *doc = NULL;
    struct gq_error err = {0};
    gq_arena_init(&a, 0);
    int rc = gq_parse(&a, src, n, &limits, &doc, &err);
    if (rc < 0) {
        if (expect >= 0)
            fprintf(stderr, "gq_parse_bench:   %u:%u: %s\n", err.nlocs ? err.locs[0].line : 0,
                    err.nlocs ? err.locs[0].column : 0, err.message ? err.message : "(no message)");
        rc = -1;
    } else if (validate) {
        errs->n = 0;
        errs->dropped = 0;
        rc = (int)gq_validate(&a, hk_gq_schema(), doc, &limits, introspection, errs);
        if (expect >= -1 && rc != expect)
            print_errors(errs);
        if (first && rc > 0 && errs->v[0].nlocs)
            *first = errs->v[0].locs[0];
    }
    if (used)
        *used = a.used;
    gq_arena_free(&a);
    return rc;
}

/* ns per pass of `iters` passes. */
static double timed(const char *src, size_t n, bool validate, long iters, struct gq_errors *errs)
{
    double t0 = now_ns();
    for (long i = 0; i < iters; i++)
        once(src, n, validate, true, -2, NULL, NULL, errs);
    return (now_ns() - t0) / (double)iters;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static double median(double *v, int n)
{
    qsort(v, (size_t)n, sizeof *v, cmp_double);
    return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

static char *read_file(const char *path, size_t *n)
{
    FILE *f = fopen(path, "rb");
    if (!f) {
        fprintf(stderr, "gq_parse_bench: %s: %s\n", path, strerror(errno));
        return NULL;
    }
    char *buf = malloc(QUERY_FILE_MAX);
    size_t got = buf ? fread(buf, 1, QUERY_FILE_MAX, f) : 0;
    int bad = ferror(f) || !feof(f);
    fclose(f);
    if (!buf || bad) {
        fprintf(stderr, "gq_parse_bench: %s: unreadable, or larger than %u bytes\n", path, QUERY_FILE_MAX);
        free(buf);
        return NULL;
    }
    *n = got;
    return buf;
}

/* The unit test's mode: concrete outcomes, counted as Criterion counts. */
static int check(void)
{
    static struct gq_errors errs;
    int failed = 0, tested = 0;
    size_t used = 0;

    tested++;
    int rc = once(QUERY, sizeof QUERY - 1, true, true, 0, &used, NULL, &errs);
    if (rc != 0) {
        fprintf(stderr, "gq_parse_bench: the 2 KB query: %d validation errors (-1: a syntax error), expected 0\n",
                rc);
        failed++;
    }
    /* With introspection off, graphql-js (NoSchemaIntrospectionCustomRule)
     * refuses every field of an introspection type: __type at 71:3, then
     * fields, type, kind, ofType and kind inside it. */
    tested++;
    struct gq_loc at = {0, 0};
    rc = once(QUERY, sizeof QUERY - 1, true, false, 6, NULL, &at, &errs);
    if (rc != 6 || at.line != 71 || at.column != 3) {
        fprintf(stderr, "gq_parse_bench: introspection off: %d errors, the first at %u:%u; expected 6, at 71:3\n",
                rc, at.line, at.column);
        failed++;
    }
    /* The timing loop itself: a few passes give a positive figure. */
    tested++;
    double ns = timed(QUERY, sizeof QUERY - 1, true, 20, &errs);
    if (!(ns > 0)) {
        fprintf(stderr, "gq_parse_bench: 20 passes timed at %.1f ns each\n", ns);
        failed++;
    }
    printf("gq_parse_bench: %zu bytes, %zu arena bytes, %.0f ns per pass (unoptimised figures mean nothing)\n",
           sizeof QUERY - 1, used, ns);
    printf("Synthesis: Tested: %d | Passing: %d | Failing: %d | Crashing: 0\n", tested, tested - failed, failed);
    return failed ? 1 : 0;
}

int main(int argc, char **argv)
{
    long iters = 20000;
    int runs = 7;
    const char *file = NULL;
    gq_schema_init(hk_gq_schema());
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--check") == 0)
            return check();
        if (i + 1 < argc && strcmp(argv[i], "-n") == 0)
            iters = strtol(argv[++i], NULL, 10);
        else if (i + 1 < argc && strcmp(argv[i], "-r") == 0)
            runs = (int)strtol(argv[++i], NULL, 10);
        else if (i + 1 < argc && strcmp(argv[i], "-f") == 0)
            file = argv[++i];
        else {
            fprintf(stderr, "usage: gq_parse_bench [-n iterations] [-r runs] [-f query.graphql] | --check\n");
            return 2;
        }
    }
    if (iters < 1 || iters > 100000000 || runs < 1 || runs > RUNS_MAX) {
        fprintf(stderr, "gq_parse_bench: -n takes 1 to 100000000, -r 1 to %d\n", RUNS_MAX);
        return 2;
    }
    size_t n = sizeof QUERY - 1;
    const char *src = QUERY;
    char *owned = NULL;
    if (file) {
        owned = read_file(file, &n);
        if (!owned)
            return 1;
        src = owned;
    }
    static struct gq_errors errs;
    size_t used = 0;
    int rc = once(src, n, true, true, 0, &used, NULL, &errs);
    if (rc != 0) {
        if (rc < 0)
            fprintf(stderr, "gq_parse_bench: the query does not parse: no figure\n");
        else
            fprintf(stderr, "gq_parse_bench: the query does not validate (%d errors): no figure\n", rc);
        free(owned);
        return 1;
    }
    /* Warm the caches and the allocator: a tenth of a run, at least 100 passes. */
    timed(src, n, true, iters / 10 > 100 ? iters / 10 : 100, &errs);
    double pv[RUNS_MAX], p[RUNS_MAX];
    for (int r = 0; r < runs; r++) {
        pv[r] = timed(src, n, true, iters, &errs);
        p[r] = timed(src, n, false, iters, &errs);
    }
    printf("{\"queryBytes\":%zu,\"arenaBytes\":%zu,\"iterations\":%ld,\"runs\":%d,\"nsPerIteration\":[", n, used, iters,
           runs);
    for (int r = 0; r < runs; r++)
        printf("%s%.1f", r ? "," : "", pv[r]);
    printf("],\"parseOnlyNsPerIteration\":[");
    for (int r = 0; r < runs; r++)
        printf("%s%.1f", r ? "," : "", p[r]);
    double lo = pv[0], hi = pv[0];
    for (int r = 1; r < runs; r++) {
        lo = pv[r] < lo ? pv[r] : lo;
        hi = pv[r] > hi ? pv[r] : hi;
    }
    /* Validation's share: the difference of the medians, an estimate
     * (noise can make it negative when validation costs little). */
    double mpv = median(pv, runs), mp = median(p, runs);
    printf("],\"medianNs\":%.1f,\"minNs\":%.1f,\"maxNs\":%.1f,\"parseOnlyMedianNs\":%.1f,\"validateMedianNs\":%.1f}\n",
           mpv, lo, hi, mp, mpv - mp);
    free(owned);
    return 0;
}
