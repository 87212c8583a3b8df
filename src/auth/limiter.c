/* SPDX-License-Identifier: MIT
 * The failed-authentication limiter: a fixed table of slots, each holding
 * one address's last max_fails failure times (so "more than N in the
 * window" is exact, not a rate estimate) and its block. Slots are found by
 * a keyed hash and a short linear probe; when the probe window is full the
 * least useful slot in it is replaced, so a flood of addresses costs
 * nothing but the evicted entries. */
#include "auth/limiter.h"

#include <netinet/in.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <time.h>

#define PROBE 8                 /* slots looked at per address */
#define MAX_FAILS_CAP 64        /* failure times kept per slot, at most */
#define WINDOW_MAX_MS 3600000u  /* keeps uint32 time offsets unambiguous */

/* One address. `t` is a ring of the last `count` failure times, as the low
 * 32 bits of now_ms: differences are exact while the ring spans less than
 * 49 days, and it spans at most max_fails windows (older entries are
 * dropped when a window passes without failures). */
struct slot {
    uint8_t addr[16];
    uint64_t last_ms;          /* last failure */
    uint64_t blocked_until;    /* 0: never blocked */
    uint8_t used;
    uint8_t strikes;           /* blocks earned; each one doubles the next */
    uint8_t head;              /* next ring position */
    uint8_t count;             /* failure times held */
    uint32_t t[];
};

struct hk_limiter {
    struct hk_limiter_cfg cfg;
    uint64_t k0, k1;           /* hash key: where an address lands is not guessable */
    size_t mask;               /* slots - 1 */
    size_t stride;             /* bytes per slot */
    unsigned char *table;
};

static inline struct slot *at(const struct hk_limiter *l, size_t i)
{
    return (struct slot *)(void *)(l->table + (i & l->mask) * l->stride);
}

static inline uint64_t fmix64(uint64_t x)
{
    x ^= x >> 33;
    x *= UINT64_C(0xff51afd7ed558ccd);
    x ^= x >> 33;
    x *= UINT64_C(0xc4ceb9fe1a85ec53);
    x ^= x >> 33;
    return x;
}

static size_t hash(const struct hk_limiter *l, const uint8_t addr[16])
{
    uint64_t a, b;
    memcpy(&a, addr, 8);
    memcpy(&b, addr + 8, 8);
    a = fmix64(a ^ l->k0);
    b = fmix64(b ^ l->k1 ^ a);
    return (size_t)fmix64(a + (b << 31 | b >> 33));
}

/* The key of an address: IPv6 outside ::ffff:0:0/96 by its /64, since
 * one subscriber gets at least that much and could otherwise walk through
 * 2^64 addresses, each with its own budget. */
static void key_of(const uint8_t addr[16], uint8_t key[16])
{
    static const uint8_t v4mapped[12] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff};
    memcpy(key, addr, 16);
    if (memcmp(addr, v4mapped, sizeof v4mapped) != 0)
        memset(key + 8, 0, 8);
}

static struct slot *find(const struct hk_limiter *l, const uint8_t addr[16])
{
    size_t h = hash(l, addr);
    /* No early stop at an empty slot: hk_limiter_ok empties slots in the
     * middle of runs, and the window is short. */
    for (size_t i = 0; i < PROBE; i++) {
        struct slot *s = at(l, h + i);
        if (s->used && memcmp(s->addr, addr, 16) == 0)
            return s;
    }
    return NULL;
}

/* Which slot of addr's window to give up, lower first: empty; not blocked
 * and quiet for a window (by age); not blocked (by age); blocked (soonest
 * released first). An attacker with many addresses thus evicts idle
 * entries before anyone's block. */
static void rank(const struct hk_limiter *l, const struct slot *s, uint64_t now, unsigned *cls, uint64_t *when)
{
    if (!s->used) {
        *cls = 0;
        *when = 0;
    } else if (now >= s->blocked_until) {
        *cls = now - s->last_ms >= l->cfg.window_ms ? 1 : 2;
        *when = s->last_ms;
    } else {
        *cls = 3;
        *when = s->blocked_until;
    }
}

static struct slot *take(struct hk_limiter *l, const uint8_t addr[16], uint64_t now)
{
    size_t h = hash(l, addr);
    struct slot *victim = NULL;
    unsigned vcls = 4;
    uint64_t vwhen = 0;
    for (size_t i = 0; i < PROBE; i++) {
        struct slot *s = at(l, h + i);
        if (s->used && memcmp(s->addr, addr, 16) == 0)
            return s;
        unsigned cls;
        uint64_t when;
        rank(l, s, now, &cls, &when);
        if (cls < vcls || (cls == vcls && when < vwhen)) {
            victim = s;
            vcls = cls;
            vwhen = when;
        }
    }
    memset(victim, 0, l->stride);
    memcpy(victim->addr, addr, 16);
    victim->used = 1;
    return victim;
}

struct hk_limiter *hk_limiter_new(void)
{
    return hk_limiter_new_cfg(NULL);
}

struct hk_limiter *hk_limiter_new_cfg(const struct hk_limiter_cfg *cfg)
{
    struct hk_limiter_cfg c = cfg ? *cfg : (struct hk_limiter_cfg){0};
    if (!c.slots)
        c.slots = 1024;
    if (!c.max_fails)
        c.max_fails = 10;
    if (!c.window_ms)
        c.window_ms = 10000;
    if (!c.block_ms)
        c.block_ms = 30000;
    if (!c.block_max_ms)
        c.block_max_ms = 960000;
    if (c.max_fails > MAX_FAILS_CAP)
        c.max_fails = MAX_FAILS_CAP;
    if (c.window_ms > WINDOW_MAX_MS)
        c.window_ms = WINDOW_MAX_MS;
    if (c.block_max_ms < c.block_ms)
        c.block_max_ms = c.block_ms;
    size_t slots = PROBE;
    while (slots < c.slots && slots < ((size_t)1 << 24))
        slots <<= 1;
    c.slots = (uint32_t)slots;

    struct hk_limiter *l = calloc(1, sizeof *l);
    if (!l)
        return NULL;
    l->cfg = c;
    l->mask = slots - 1;
    l->stride = (offsetof(struct slot, t) + c.max_fails * sizeof(uint32_t) + 7) & ~(size_t)7;
    l->table = calloc(slots, l->stride);
    if (!l->table) {
        free(l);
        return NULL;
    }
    uint64_t key[2];
    if (getrandom(key, sizeof key, GRND_NONBLOCK) != (ssize_t)sizeof key) {
        /* No entropy yet (early boot): the key only spreads addresses, so
         * the clock and the heap address are an acceptable fallback. */
        struct timespec ts;
        clock_gettime(CLOCK_MONOTONIC, &ts);
        key[0] = fmix64((uint64_t)ts.tv_nsec ^ (uint64_t)(uintptr_t)l);
        key[1] = fmix64((uint64_t)ts.tv_sec ^ key[0]);
    }
    l->k0 = key[0];
    l->k1 = key[1];
    return l;
}

void hk_limiter_free(struct hk_limiter *l)
{
    if (!l)
        return;
    free(l->table);
    free(l);
}

uint64_t hk_limiter_check(struct hk_limiter *l, const uint8_t addr[16], uint64_t now_ms)
{
    uint8_t key[16];
    key_of(addr, key);
    const struct slot *s = find(l, key);
    if (!s || now_ms >= s->blocked_until)
        return 0;
    return s->blocked_until - now_ms;
}

uint64_t hk_limiter_fail(struct hk_limiter *l, const uint8_t addr[16], uint64_t now_ms)
{
    const struct hk_limiter_cfg *c = &l->cfg;
    uint8_t key[16];
    key_of(addr, key);
    struct slot *s = take(l, key, now_ms);
    bool blocked = now_ms < s->blocked_until;
    if (s->count && now_ms - s->last_ms >= c->window_ms)
        s->count = 0;          /* every time held is out of the window */
    /* Quiet for the longest block since both the last failure and the end
     * of the last block (a blocked address cannot fail): start over. */
    uint64_t since = s->last_ms > s->blocked_until ? s->last_ms : s->blocked_until;
    if (!blocked && s->strikes && now_ms - since >= c->block_max_ms)
        s->strikes = 0;
    s->last_ms = now_ms;

    /* With the ring full, its oldest entry is the failure max_fails ago:
     * if that is inside the window, this one is one too many. */
    bool over = false;
    if (s->count == c->max_fails) {
        uint32_t oldest = s->t[s->head];
        over = (uint32_t)now_ms - oldest < c->window_ms;
    }
    s->t[s->head] = (uint32_t)now_ms;
    s->head = (uint8_t)((s->head + 1) % c->max_fails);
    if (s->count < c->max_fails)
        s->count++;

    /* Failures landing during a block (requests already past the check)
     * are recorded but do not lengthen it. */
    if (blocked)
        return s->blocked_until - now_ms;
    if (!over)
        return 0;
    uint64_t ms = c->block_ms;
    for (unsigned i = 0; i < s->strikes && ms < c->block_max_ms; i++)
        ms <<= 1;
    if (ms > c->block_max_ms)
        ms = c->block_max_ms;
    if (s->strikes < UINT8_MAX)
        s->strikes++;
    s->blocked_until = now_ms + ms;
    return ms;
}

void hk_limiter_ok(struct hk_limiter *l, const uint8_t addr[16])
{
    uint8_t key[16];
    key_of(addr, key);
    struct slot *s = find(l, key);
    if (s)
        memset(s, 0, l->stride);
}

int hk_limiter_addr(const struct sockaddr *sa, uint8_t out[16])
{
    memset(out, 0, 16);
    if (!sa)
        return -1;
    if (sa->sa_family == AF_INET) {
        const struct sockaddr_in *in = (const struct sockaddr_in *)(const void *)sa;
        out[10] = out[11] = 0xff;
        memcpy(out + 12, &in->sin_addr, 4);
        return 0;
    }
    if (sa->sa_family == AF_INET6) {
        const struct sockaddr_in6 *in6 = (const struct sockaddr_in6 *)(const void *)sa;
        memcpy(out, &in6->sin6_addr, 16);
        return 0;
    }
    return -1;
}
