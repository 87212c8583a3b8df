/* SPDX-License-Identifier: MIT
 * Clocks: monotonic and wall time, and the time since exec as the kernel
 * recorded it (so "started in" counts dynamic loading too). */
#include "core/clock.h"

#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

uint64_t hk_mono_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

int64_t hk_wall_us(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (int64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

/* starttime (field 22 of /proc/self/stat) is in clock ticks since boot; the
 * boot clock (CLOCK_BOOTTIME) is on the same base. Tick resolution (10 ms) is
 * too coarse to be useful for a ~1 ms start, so this is only the fallback:
 * main() takes its own timestamp as early as it can and uses the finer one. */
double hk_since_exec_s(void)
{
    char buf[1024];
    FILE *f = fopen("/proc/self/stat", "r");
    if (!f)
        return 0;
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    buf[n] = 0;
    char *p = strrchr(buf, ')');
    if (!p)
        return 0;
    unsigned long long start = 0;
    /* After ")": state is field 3; starttime is field 22. */
    int field = 2;
    for (p++; *p && field < 21; p++)
        if (*p == ' ')
            field++;
    if (sscanf(p, "%llu", &start) != 1)
        return 0;
    long hz = sysconf(_SC_CLK_TCK);
    struct timespec ts;
    clock_gettime(CLOCK_BOOTTIME, &ts);
    double now = (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
    double d = now - (double)start / (double)hz;
    return d < 0 ? 0 : d;
}
