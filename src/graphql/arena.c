/* SPDX-License-Identifier: MIT
 * The per-request bump allocator: calloc'ed blocks chained newest first,
 * allocations rounded to max_align_t, the cap counted in bytes handed out.
 * Under AddressSanitizer every allocation is followed by a poisoned red
 * zone, so that a read past the end of an AST array is caught even though
 * the arena's memory around it is live. */
#include "graphql/arena.h"

#include <stdalign.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#if defined(__SANITIZE_ADDRESS__)
#define GQ_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define GQ_ASAN 1
#endif
#endif
#ifdef GQ_ASAN
#include <sanitizer/asan_interface.h>
#define REDZONE ALIGN
#define POISON(p, n) ASAN_POISON_MEMORY_REGION((p), (n))
#define UNPOISON(p, n) ASAN_UNPOISON_MEMORY_REGION((p), (n))
#else
#define REDZONE 0
#define POISON(p, n) ((void)(p), (void)(n))
#define UNPOISON(p, n) ((void)(p), (void)(n))
#endif

#define ALIGN alignof(max_align_t)
#define CAP_DEFAULT ((size_t)16 << 20)
#define BLOCK_FIRST ((size_t)4 << 10)
#define BLOCK_MAX ((size_t)64 << 10)

struct gq_arena_block {
    struct gq_arena_block *next;
    size_t size;               /* bytes of data[] */
    size_t used;
    alignas(max_align_t) unsigned char data[];
};

void gq_arena_init(struct gq_arena *a, size_t cap)
{
    a->head = NULL;
    a->used = 0;
    a->cap = cap ? cap : CAP_DEFAULT;
    a->cache = NULL;
}

void gq_arena_init_cached(struct gq_arena *a, size_t cap, struct gq_arena_cache *cache)
{
    gq_arena_init(a, cap);
    a->cache = cache;
}

void gq_arena_cache_free(struct gq_arena_cache *c)
{
    while (c->free) {
        struct gq_arena_block *b = c->free;
        c->free = b->next;
        free(b);
    }
    c->bytes = 0;
}

static struct gq_arena_block *block_new(struct gq_arena *a, size_t size)
{
    /* A cached block is clean (zeroed when it was given back). */
    if (a->cache) {
        for (struct gq_arena_block **pp = &a->cache->free; *pp; pp = &(*pp)->next) {
            struct gq_arena_block *b = *pp;
            if (b->size >= size && b->size <= 2 * size) {
                *pp = b->next;
                a->cache->bytes -= b->size;
                b->next = NULL;
                b->used = 0;
                POISON(b->data, b->size);
                return b;
            }
        }
    }
    struct gq_arena_block *b = calloc(1, sizeof *b + size);
    if (!b)
        return NULL;
    b->size = size;
    POISON(b->data, size);
    return b;
}

void *gq_alloc(struct gq_arena *a, size_t n)
{
    /* Zero bytes still get a distinct, valid pointer: callers tell "absent"
     * (NULL) from "empty" by it. */
    size_t want = n ? n : 1;
    if (want > a->cap)
        return NULL;
    size_t step = (want + ALIGN - 1) / ALIGN * ALIGN;
    if (step > a->cap - a->used)
        return NULL;
    size_t need = step + REDZONE;
    struct gq_arena_block *b = a->head;
    if (!b || b->size - b->used < need) {
        if (need > BLOCK_MAX / 4) {
            /* A large allocation gets a block of its own, put behind the
             * head so that the head's free space stays in use. */
            b = block_new(a, need);
            if (!b)
                return NULL;
            if (a->head) {
                b->next = a->head->next;
                a->head->next = b;
            } else {
                a->head = b;
            }
        } else {
            size_t size = a->head ? a->head->size * 2 : BLOCK_FIRST;
            if (size > BLOCK_MAX)
                size = BLOCK_MAX;
            if (size < need)
                size = need;
            b = block_new(a, size);
            if (!b)
                return NULL;
            b->next = a->head;
            a->head = b;
        }
    }
    unsigned char *p = b->data + b->used;
    b->used += need;
    a->used += step;
    UNPOISON(p, n);
    return p;
}

char *gq_strdup(struct gq_arena *a, const char *p, size_t n)
{
    if (n == SIZE_MAX)
        return NULL;
    char *s = gq_alloc(a, n + 1);
    if (!s)
        return NULL;
    if (n)
        memcpy(s, p, n);
    s[n] = 0;
    return s;
}

bool gq_arena_owns(const struct gq_arena *a, const void *p, size_t n)
{
    uintptr_t x = (uintptr_t)p;
    for (const struct gq_arena_block *b = a->head; b; b = b->next) {
        uintptr_t lo = (uintptr_t)b->data, hi = lo + b->used;
        if (x >= lo && x <= hi && n <= hi - x)
            return true;
    }
    return false;
}

void gq_arena_free(struct gq_arena *a)
{
    struct gq_arena_block *b = a->head;
    while (b) {
        struct gq_arena_block *next = b->next;
        UNPOISON(b->data, b->size);
        struct gq_arena_cache *c = a->cache;
        if (c && b->size <= BLOCK_MAX && c->bytes + b->size <= GQ_ARENA_CACHE_MAX) {
            memset(b->data, 0, b->used < b->size ? b->used : b->size);
            b->next = c->free;
            c->free = b;
            c->bytes += b->size;
        } else {
            free(b);
        }
        b = next;
    }
    a->head = NULL;
    a->used = 0;
}
