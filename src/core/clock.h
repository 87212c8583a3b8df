/* SPDX-License-Identifier: MIT
 * Clocks: monotonic and wall time in the units hookd uses. */
#ifndef HK_CLOCK_H
#define HK_CLOCK_H

#include <stdint.h>

uint64_t hk_mono_ns(void);     /* CLOCK_MONOTONIC, nanoseconds */
int64_t hk_wall_us(void);      /* CLOCK_REALTIME, unix microseconds */

#endif
