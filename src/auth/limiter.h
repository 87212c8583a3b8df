/* SPDX-License-Identifier: MIT
 * Failed authentications per client address, one table per event loop (no
 * locks): more than max_fails in a sliding window blocks the address, for a
 * time that doubles each time it is earned again. Memory is fixed at
 * creation whatever clients do. */
#ifndef HK_AUTH_LIMITER_H
#define HK_AUTH_LIMITER_H

#include <stdint.h>

struct sockaddr;

/* Knobs; zero fields take the defaults in brackets. */
struct hk_limiter_cfg {
    uint32_t slots;            /* addresses tracked, rounded up to a power of two [1024] */
    uint32_t max_fails;        /* failures allowed per window [10] */
    uint32_t window_ms;        /* [10000]: more than max_fails in it blocks */
    uint32_t block_ms;         /* first block [30000], doubled each time again */
    uint32_t block_max_ms;     /* longest block [960000] */
};

struct hk_limiter;

/* A limiter with the default knobs (see struct hk_limiter_cfg). Its table
 * is the one allocation; nothing else is ever allocated. Returns NULL when
 * out of memory. Caller frees with hk_limiter_free, on the loop that uses
 * it. */
struct hk_limiter *hk_limiter_new(void);
/* The same with cfg's knobs (zero fields: defaults; max_fails is capped at
 * 64, window_ms at one hour). cfg is read during the call only. */
struct hk_limiter *hk_limiter_new_cfg(const struct hk_limiter_cfg *cfg);
/* Free l (NULL is fine). */
void hk_limiter_free(struct hk_limiter *l);

/* Before authenticating a request from addr (16 bytes: IPv6, or IPv4 as
 * v4-mapped IPv6; an IPv6 address outside ::ffff:0:0/96 counts for its
 * whole /64, which one client usually holds) at now_ms (a monotonic clock,
 * e.g. uv_now): 0 to go on, or the milliseconds until addr may try again
 * (answer 429 with Retry-After, in seconds rounded up). Never allocates or
 * inserts. */
uint64_t hk_limiter_check(struct hk_limiter *l, const uint8_t addr[16], uint64_t now_ms);
/* Count one failed authentication from addr at now_ms. Returns the
 * milliseconds addr is now blocked for (0: not blocked). When the table is
 * full, the least useful entry near addr's slot is replaced. */
uint64_t hk_limiter_fail(struct hk_limiter *l, const uint8_t addr[16], uint64_t now_ms);
/* A successful authentication from addr: forget its failures and blocks. */
void hk_limiter_ok(struct hk_limiter *l, const uint8_t addr[16]);

/* A peer address as the 16 bytes the limiter takes: an IPv4 address as
 * v4-mapped IPv6 (::ffff:a.b.c.d), an IPv6 address as is. Returns 0, or -1
 * with out all zeros for other families (AF_UNIX: every local client
 * shares that key). */
int hk_limiter_addr(const struct sockaddr *sa, uint8_t out[16]);

#endif
