/* SPDX-License-Identifier: MIT
 * Clocks: monotonic and wall time in the units hookd uses. */
#ifndef HK_CLOCK_H
#define HK_CLOCK_H

#include <stdint.h>

uint64_t hk_mono_ns(void);     /* CLOCK_MONOTONIC, nanoseconds */
int64_t hk_wall_us(void);      /* CLOCK_REALTIME, unix microseconds */
/* Seconds since process start as the kernel saw it (exec), from
 * /proc/self/stat starttime; falls back to 0 when unreadable. */
double hk_since_exec_s(void);

#endif
