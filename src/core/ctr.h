/* SPDX-License-Identifier: MIT
 * Counters with one writer (the loop that owns them) and any number of
 * readers (a scrape on another loop). Relaxed loads and stores compile to
 * plain moves on the platforms hookd targets: no lock prefix and no shared
 * cache line written on the request path. */
#ifndef HK_CTR_H
#define HK_CTR_H

#include <stdatomic.h>
#include <stdint.h>

typedef _Atomic uint64_t hk_ctr;

/* Only the owning thread may add. */
static inline void hk_ctr_add(hk_ctr *c, uint64_t n)
{
    atomic_store_explicit(c, atomic_load_explicit(c, memory_order_relaxed) + n, memory_order_relaxed);
}

static inline uint64_t hk_ctr_get(hk_ctr *c)
{
    return atomic_load_explicit(c, memory_order_relaxed);
}

#endif
