/* SPDX-License-Identifier: MIT
 * A bump allocator for one GraphQL request: the syntax tree, decoded
 * strings, validation's and execution's scratch. Blocks are malloc'ed as
 * needed up to a cap; everything is freed at once. Over the cap an
 * allocation returns NULL (the caller answers with a GraphQL error). */
#ifndef HK_GQ_ARENA_H
#define HK_GQ_ARENA_H

#include <stdbool.h>
#include <stddef.h>

struct gq_arena_block;

/* Blocks kept between requests (one per event loop): a request's arena
 * takes them back instead of growing the heap, which glibc would trim
 * again after every request. Owned by whoever made it; released with
 * gq_arena_cache_free. */
struct gq_arena_cache {
    struct gq_arena_block *free;
    size_t bytes;
};
#define GQ_ARENA_CACHE_MAX ((size_t)256 << 10)

struct gq_arena {
    struct gq_arena_block *head;
    size_t used;               /* bytes handed out, all blocks */
    size_t cap;                /* at most this many (0: 16 MiB) */
    struct gq_arena_cache *cache; /* NULL: none */
};

void gq_arena_init(struct gq_arena *a, size_t cap);
/* The same, taking blocks from `cache` and giving them back at free (the
 * cache must outlive the arena and be used by one thread). */
void gq_arena_init_cached(struct gq_arena *a, size_t cap, struct gq_arena_cache *cache);
void gq_arena_cache_free(struct gq_arena_cache *c);
/* n bytes, aligned for any type, zeroed; NULL past the cap (or when malloc
 * fails). n == 0 still returns a distinct non-NULL pointer. Valid until
 * gq_arena_free. */
void *gq_alloc(struct gq_arena *a, size_t n);
/* A copy of p[0..n) with a NUL after it; NULL past the cap. */
char *gq_strdup(struct gq_arena *a, const char *p, size_t n);
/* True when p[0..n) lies inside memory the arena handed out (for tests and
 * the fuzzer's invariants). */
bool gq_arena_owns(const struct gq_arena *a, const void *p, size_t n);
/* Frees every block; the arena is then empty and usable again. */
void gq_arena_free(struct gq_arena *a);

#endif
