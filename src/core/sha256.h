/* SPDX-License-Identifier: MIT
 * SHA-256 (FIPS 180-4) without libcrypto: every authenticated request hashes
 * its token, and libcrypto is only ever dlopen()ed for HMAC (core/hmac.h). */
#ifndef HK_SHA256_H
#define HK_SHA256_H

#include <stddef.h>
#include <stdint.h>

/* An incremental hash; callers keep it on the stack (no allocation). */
struct hk_sha256_ctx {
    uint32_t h[8];
    uint64_t bytes;            /* message length so far */
    uint8_t block[64];         /* the partial block */
    size_t fill;               /* bytes used in block */
};

/* Start a hash in `c`. */
void hk_sha256_init(struct hk_sha256_ctx *c);
/* Hash n more bytes of p (borrowed for the call; with n 0, p may be NULL). */
void hk_sha256_update(struct hk_sha256_ctx *c, const void *p, size_t n);
/* Write the 32-byte digest to out and wipe `c` (it held message bytes, which
 * may be a secret); init it again before reuse. */
void hk_sha256_final(struct hk_sha256_ctx *c, uint8_t out[32]);
/* One-shot: the digest of p[0..n) into out. Nothing is allocated, and the
 * stack copy of the message's last block is wiped. */
void hk_sha256(const void *p, size_t n, uint8_t out[32]);

#endif
