/* SPDX-License-Identifier: MIT
 * Clocks: monotonic and wall time in the units hookd uses. */
#ifndef HK_CLOCK_H
#define HK_CLOCK_H

#include <stdint.h>

uint64_t hk_mono_ns(void);     /* CLOCK_MONOTONIC, nanoseconds */
int64_t hk_wall_us(void);      /* CLOCK_REALTIME, unix microseconds */
/* Days since 1970-01-01 of a proleptic Gregorian date (month 1..12, day
 * 1..31, not checked): the era-based algorithm of 400-year cycles of
 * 146097 days, years starting in March (H. Hinnant's days_from_civil). */
int64_t hk_days_from_civil(int64_t y, unsigned m, unsigned d);

/* The UTC calendar fields of unix time `sec` (tm_year, tm_mon, tm_mday,
 * tm_wday, tm_hour, tm_min, tm_sec; the rest 0), by arithmetic: glibc's
 * gmtime_r takes the timezone lock and, the first time, reads
 * /etc/localtime, for a time that is always UTC (H. Hinnant's
 * civil_from_days). */
struct tm;
void hk_utc_tm(int64_t sec, struct tm *tm);

#endif
