/* SPDX-License-Identifier: MIT
 * The forwarding retry policy (outbound/retry.h): status classes, full
 * jitter backoff without overflow, Retry-After in its four spellings, and
 * the reason text an attempt leaves behind. */
#include "outbound/retry.h"

#include <stdio.h>
#include <string.h>

#include "core/clock.h"
#include "core/err.h"

uint64_t hk_retry_backoff_cap(const struct hk_retry_policy *p, uint32_t attempts)
{
    uint32_t shift = attempts > 0 ? attempts - 1 : 0;
    /* base * 2^shift overflows exactly when base > UINT64_MAX >> shift; the
     * cap is reached long before, so stop there. */
    if (shift >= 64 || p->base_ms > (UINT64_MAX >> shift))
        return p->max_ms;
    uint64_t v = p->base_ms << shift;
    return v < p->max_ms ? v : p->max_ms;
}

/* Uniform in [0, cap]: the high half of rnd * (cap + 1), which has no
 * modulo bias worth the name and needs no division. */
static uint64_t jitter(uint64_t cap, uint64_t rnd)
{
    if (cap == UINT64_MAX)
        return rnd;
    __extension__ typedef unsigned __int128 u128;
    return (uint64_t)(((u128)rnd * (cap + 1)) >> 64);
}

enum hk_retry_verdict hk_retry_decide(const struct hk_retry_policy *p, uint32_t attempts, uint64_t age_ms,
                                      int status, int64_t retry_after_ms, uint64_t rnd, uint64_t *delay_ms)
{
    *delay_ms = 0;
    if (status >= 200 && status < 300)
        return HK_RETRY_DELIVERED;
    bool refused = (status >= 300 && status < 400) ||
                   (status >= 400 && status < 500 && status != 408 && status != 409 && status != 429);
    if (refused && !p->retry_4xx)
        return HK_RETRY_FAIL;
    if (p->max_attempts > 0 && attempts >= p->max_attempts)
        return HK_RETRY_FAIL;
    uint64_t delay;
    if (retry_after_ms >= 0 && (status == 429 || status == 503))
        delay = (uint64_t)retry_after_ms < HK_RETRY_AFTER_MAX_MS ? (uint64_t)retry_after_ms : HK_RETRY_AFTER_MAX_MS;
    else
        delay = jitter(hk_retry_backoff_cap(p, attempts), rnd);
    /* age + delay >= max_age, written so that neither side can overflow. */
    if (p->max_age_ms > 0 && (age_ms >= p->max_age_ms || delay >= p->max_age_ms - age_ms))
        return HK_RETRY_FAIL;
    *delay_ms = delay;
    return HK_RETRY_AGAIN;
}

/* ---- Retry-After ------------------------------------------------------------- */

/* The year of a day count (the inverse's year only). */
static int64_t year_of_days(int64_t z)
{
    z += 719468;
    int64_t era = (z >= 0 ? z : z - 146096) / 146097;
    int64_t doe = z - era * 146097;
    int64_t yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
    int64_t doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    int64_t mp = (5 * doy + 2) / 153;
    return yoe + era * 400 + (mp >= 10);
}

static bool leap(int64_t y)
{
    return (y % 4 == 0 && y % 100 != 0) || y % 400 == 0;
}

struct cur {
    const char *p, *end;
};

static bool lit(struct cur *c, const char *s)
{
    size_t n = strlen(s);
    if ((size_t)(c->end - c->p) < n || memcmp(c->p, s, n) != 0)
        return false;
    c->p += n;
    return true;
}

/* Exactly n digits. */
static bool num(struct cur *c, int n, int *out)
{
    if (c->end - c->p < n)
        return false;
    int v = 0;
    for (int i = 0; i < n; i++) {
        if (c->p[i] < '0' || c->p[i] > '9')
            return false;
        v = v * 10 + (c->p[i] - '0');
    }
    c->p += n;
    *out = v;
    return true;
}

/* One of the names; its index, or -1. */
static int name(struct cur *c, const char *const *names, int count)
{
    for (int i = 0; i < count; i++)
        if (lit(c, names[i]))
            return i;
    return -1;
}

static const char *const days3[] = {"Mon", "Tue", "Wed", "Thu", "Fri", "Sat", "Sun"};
static const char *const days_long[] = {"Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday",
                                        "Sunday"};
static const char *const months[] = {"Jan", "Feb", "Mar", "Apr", "May", "Jun",
                                     "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"};

/* "HH:MM:SS"; a leap second (60) is read as the next second. */
static bool clock_time(struct cur *c, int *h, int *m, int *s)
{
    return num(c, 2, h) && lit(c, ":") && num(c, 2, m) && lit(c, ":") && num(c, 2, s) && *h < 24 && *m < 60 &&
           *s <= 60;
}

/* Unix seconds of an HTTP-date (RFC 9110 5.6.7), or false. */
static bool http_date(const char *v, size_t n, int64_t now_s, int64_t *out)
{
    struct cur c = {v, v + n};
    int day, mon, year, h, m, s;
    if (name(&c, days3, 7) >= 0 && lit(&c, ", ")) {
        /* IMF-fixdate: Sun, 06 Nov 1994 08:49:37 GMT */
        if (!(num(&c, 2, &day) && lit(&c, " ") && (mon = name(&c, months, 12)) >= 0 && lit(&c, " ") &&
              num(&c, 4, &year) && lit(&c, " ") && clock_time(&c, &h, &m, &s) && lit(&c, " GMT")))
            return false;
    } else if ((c.p = v, name(&c, days_long, 7) >= 0) && lit(&c, ", ")) {
        /* RFC 850: Sunday, 06-Nov-94 08:49:37 GMT. A two-digit year more
         * than 50 years ahead is the latest past year ending so (RFC 9110). */
        int yy;
        if (!(num(&c, 2, &day) && lit(&c, "-") && (mon = name(&c, months, 12)) >= 0 && lit(&c, "-") &&
              num(&c, 2, &yy) && lit(&c, " ") && clock_time(&c, &h, &m, &s) && lit(&c, " GMT")))
            return false;
        int64_t now_year = year_of_days(now_s >= 0 ? now_s / 86400 : (now_s - 86399) / 86400);
        int64_t y = now_year - now_year % 100 + yy;
        if (y > now_year + 50)
            y -= 100;
        year = (int)y;
    } else if ((c.p = v, name(&c, days3, 7) >= 0) && lit(&c, " ")) {
        /* asctime: Sun Nov  6 08:49:37 1994 */
        if (!((mon = name(&c, months, 12)) >= 0 && lit(&c, " ")))
            return false;
        if (lit(&c, " ")) {
            if (!num(&c, 1, &day))
                return false;
        } else if (!num(&c, 2, &day)) {
            return false;
        }
        if (!(lit(&c, " ") && clock_time(&c, &h, &m, &s) && lit(&c, " ") && num(&c, 4, &year)))
            return false;
    } else {
        return false;
    }
    if (c.p != c.end)
        return false;
    static const int mdays[] = {31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
    int last = mdays[mon] + (mon == 1 && leap(year));
    if (day < 1 || day > last)
        return false;
    *out = hk_days_from_civil(year, (unsigned)mon + 1, (unsigned)day) * 86400 + h * 3600 + m * 60 + s;
    return true;
}

int64_t hk_retry_after_ms(const char *v, size_t n, int64_t now_s)
{
    if (!v)
        return -1;
    while (n > 0 && (*v == ' ' || *v == '\t')) {
        v++;
        n--;
    }
    while (n > 0 && (v[n - 1] == ' ' || v[n - 1] == '\t'))
        n--;
    if (n == 0)
        return -1;
    if (v[0] >= '0' && v[0] <= '9') {
        /* delta-seconds: 1*DIGIT, saturating (RFC 9110 asks recipients to
         * take an overflowing value as the largest they can hold). */
        int64_t ms = 0;
        for (size_t i = 0; i < n; i++) {
            if (v[i] < '0' || v[i] > '9')
                return -1;
            int d = v[i] - '0';
            if (ms > (INT64_MAX - d * 1000) / 10)
                ms = INT64_MAX;
            else if (ms != INT64_MAX)
                ms = ms * 10 + d * 1000;
        }
        return ms;
    }
    int64_t at;
    if (!http_date(v, n, now_s, &at))
        return -1;
    if (at <= now_s)
        return 0;
    int64_t s = at - now_s;   /* dates are 4-digit years: no overflow below */
    return s * 1000;
}

/* ---- reasons ------------------------------------------------------------------ */

size_t hk_retry_reason(int status, int err, const char *error, char *out, size_t cap)
{
    if (cap == 0)
        return 0;
    if (cap > HK_RETRY_REASON_MAX)
        cap = HK_RETRY_REASON_MAX;
    int n;
    if (status > 0)
        n = snprintf(out, cap, "HTTP %d", status);
    else
        n = snprintf(out, cap, "%s", err == HK_ETIMEDOUT ? "timed out" : err == HK_EUNAVAIL ? "unreachable"
                                                                     : err == 0          ? "no answer"
                                                                                         : "failed");
    size_t len = n < 0 ? 0 : (size_t)n < cap ? (size_t)n : cap - 1;
    if (error && *error && len + 3 < cap) {
        out[len++] = ':';
        out[len++] = ' ';
        /* Printable ASCII only: the text goes into a row and into logs. */
        for (const char *s = error; *s && len + 1 < cap; s++)
            out[len++] = (*s >= 0x20 && *s < 0x7f) ? *s : '?';
    }
    out[len] = '\0';
    return len;
}

const char *hk_retry_verdict_name(enum hk_retry_verdict v)
{
    switch (v) {
    case HK_RETRY_DELIVERED:
        return "delivered";
    case HK_RETRY_AGAIN:
        return "retry";
    case HK_RETRY_FAIL:
        return "failed";
    }
    return "unknown";
}
