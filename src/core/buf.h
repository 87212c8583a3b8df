/* SPDX-License-Identifier: MIT
 * Growable byte buffer with append helpers, including JSON string escaping.
 * OOM policy for the whole process: abort (hk_buf never returns failure). */
#ifndef HK_BUF_H
#define HK_BUF_H

#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

struct hk_buf {
    char *p;
    size_t len;
    size_t cap;
};

#define HK_BUF_INIT {NULL, 0, 0}

/* The slow path of hk_buf_reserve: grow. */
char *hk_buf_grow(struct hk_buf *b, size_t extra);

/* Ensure room for `extra` more bytes; aborts on OOM. Returns b->p + b->len.
 * Inline: responses are built from many small appends. */
static inline char *hk_buf_reserve(struct hk_buf *b, size_t extra)
{
    /* Also grow when p is NULL, so the returned pointer is always valid
     * (NULL + 0 is undefined behaviour, and callers write through it). */
    if (b->p && b->cap - b->len >= extra)
        return b->p + b->len;
    return hk_buf_grow(b, extra);
}

static inline void hk_buf_put(struct hk_buf *b, const void *p, size_t n)
{
    if (n == 0)
        return;
    __builtin_memcpy(hk_buf_reserve(b, n), p, n);
    b->len += n;
}

static inline void hk_buf_putc(struct hk_buf *b, char c)
{
    *hk_buf_reserve(b, 1) = c;
    b->len++;
}

void hk_buf_puts(struct hk_buf *b, const char *s);
void hk_buf_put_u64(struct hk_buf *b, uint64_t v);
void hk_buf_put_i64(struct hk_buf *b, int64_t v);
void hk_buf_printf(struct hk_buf *b, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
/* Append `s` (n bytes, assumed valid UTF-8) as a quoted JSON string, escaping
 * quotes, backslashes and every control character. */
void hk_buf_put_json_str(struct hk_buf *b, const char *s, size_t n);
/* Append `p` (n bytes) as a quoted JSON string of lowercase hex, or `null`
 * when p is NULL. */
void hk_buf_put_json_hex(struct hk_buf *b, const unsigned char *p, size_t n);
/* Append unix microseconds as RFC 3339 UTC with 6 decimals:
 * 2026-11-29T19:03:01.123456Z (27 bytes). */
void hk_buf_put_iso_us(struct hk_buf *b, int64_t unix_us);
/* Drop the contents; free the memory if it grew past `keep` bytes so one large
 * request does not pin memory on an idle connection. */
void hk_buf_reset(struct hk_buf *b, size_t keep);
void hk_buf_free(struct hk_buf *b);

#endif
