/* SPDX-License-Identifier: MIT
 * SHA-256 written from FIPS 180-4 (sections 4.1.2, 4.2.2, 5.1.1, 5.3.3 and
 * 6.2.2), portable C with no tables beyond the round constants. */
#include "core/sha256.h"

#include <string.h>

static const uint32_t K[64] = {
    0x428a2f98, 0x71374491, 0xb5c0fbcf, 0xe9b5dba5, 0x3956c25b, 0x59f111f1, 0x923f82a4, 0xab1c5ed5,
    0xd807aa98, 0x12835b01, 0x243185be, 0x550c7dc3, 0x72be5d74, 0x80deb1fe, 0x9bdc06a7, 0xc19bf174,
    0xe49b69c1, 0xefbe4786, 0x0fc19dc6, 0x240ca1cc, 0x2de92c6f, 0x4a7484aa, 0x5cb0a9dc, 0x76f988da,
    0x983e5152, 0xa831c66d, 0xb00327c8, 0xbf597fc7, 0xc6e00bf3, 0xd5a79147, 0x06ca6351, 0x14292967,
    0x27b70a85, 0x2e1b2138, 0x4d2c6dfc, 0x53380d13, 0x650a7354, 0x766a0abb, 0x81c2c92e, 0x92722c85,
    0xa2bfe8a1, 0xa81a664b, 0xc24b8b70, 0xc76c51a3, 0xd192e819, 0xd6990624, 0xf40e3585, 0x106aa070,
    0x19a4c116, 0x1e376c08, 0x2748774c, 0x34b0bcb5, 0x391c0cb3, 0x4ed8aa4a, 0x5b9cca4f, 0x682e6ff3,
    0x748f82ee, 0x78a5636f, 0x84c87814, 0x8cc70208, 0x90befffa, 0xa4506ceb, 0xbef9a3f7, 0xc67178f2,
};

static inline uint32_t ror(uint32_t x, unsigned n)
{
    return x >> n | x << (32 - n);
}

static inline uint32_t load_be32(const uint8_t *p)
{
    return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

static inline void store_be32(uint8_t *p, uint32_t v)
{
    p[0] = (uint8_t)(v >> 24);
    p[1] = (uint8_t)(v >> 16);
    p[2] = (uint8_t)(v >> 8);
    p[3] = (uint8_t)v;
}

/* The compression function over one 64-byte block (6.2.2). The schedule is
 * kept as a 16-word ring rather than 64 words: W[t] needs only W[t-16..t-1]. */
static void compress(uint32_t h[8], const uint8_t *blk)
{
    uint32_t w[16];
    uint32_t a = h[0], b = h[1], c = h[2], d = h[3], e = h[4], f = h[5], g = h[6], hh = h[7];
    for (unsigned t = 0; t < 64; t++) {
        uint32_t wt;
        if (t < 16) {
            wt = load_be32(blk + 4 * t);
        } else {
            uint32_t w15 = w[(t - 15) & 15], w2 = w[(t - 2) & 15];
            uint32_t s0 = ror(w15, 7) ^ ror(w15, 18) ^ (w15 >> 3);
            uint32_t s1 = ror(w2, 17) ^ ror(w2, 19) ^ (w2 >> 10);
            wt = w[t & 15] + s0 + w[(t - 7) & 15] + s1;
        }
        w[t & 15] = wt;
        uint32_t t1 = hh + (ror(e, 6) ^ ror(e, 11) ^ ror(e, 25)) + ((e & f) ^ (~e & g)) + K[t] + wt;
        uint32_t t2 = (ror(a, 2) ^ ror(a, 13) ^ ror(a, 22)) + ((a & b) ^ (a & c) ^ (b & c));
        hh = g;
        g = f;
        f = e;
        e = d + t1;
        d = c;
        c = b;
        b = a;
        a = t1 + t2;
    }
    h[0] += a;
    h[1] += b;
    h[2] += c;
    h[3] += d;
    h[4] += e;
    h[5] += f;
    h[6] += g;
    h[7] += hh;
}

void hk_sha256_init(struct hk_sha256_ctx *c)
{
    static const uint32_t iv[8] = {0x6a09e667, 0xbb67ae85, 0x3c6ef372, 0xa54ff53a,
                                   0x510e527f, 0x9b05688c, 0x1f83d9ab, 0x5be0cd19};
    memcpy(c->h, iv, sizeof iv);
    c->bytes = 0;
    c->fill = 0;
}

void hk_sha256_update(struct hk_sha256_ctx *c, const void *p, size_t n)
{
    const uint8_t *s = p;
    if (!n)
        return;            /* p may be NULL */
    c->bytes += n;
    if (c->fill) {
        size_t take = 64 - c->fill < n ? 64 - c->fill : n;
        memcpy(c->block + c->fill, s, take);
        c->fill += take;
        s += take;
        n -= take;
        if (c->fill < 64)
            return;
        compress(c->h, c->block);
        c->fill = 0;
    }
    for (; n >= 64; s += 64, n -= 64)
        compress(c->h, s);
    if (n) {
        memcpy(c->block, s, n);
        c->fill = n;
    }
}

void hk_sha256_final(struct hk_sha256_ctx *c, uint8_t out[32])
{
    /* Padding (5.1.1): 0x80, zeros up to 56 mod 64, the bit length. */
    uint64_t bits = c->bytes * 8;
    c->block[c->fill++] = 0x80;
    if (c->fill > 56) {
        memset(c->block + c->fill, 0, 64 - c->fill);
        compress(c->h, c->block);
        c->fill = 0;
    }
    memset(c->block + c->fill, 0, 56 - c->fill);
    for (unsigned i = 0; i < 8; i++)
        c->block[56 + i] = (uint8_t)(bits >> (56 - 8 * i));
    compress(c->h, c->block);
    for (unsigned i = 0; i < 8; i++)
        store_be32(out + 4 * i, c->h[i]);
    explicit_bzero(c, sizeof *c);
}

void hk_sha256(const void *p, size_t n, uint8_t out[32])
{
    struct hk_sha256_ctx c;
    hk_sha256_init(&c);
    hk_sha256_update(&c, p, n);
    hk_sha256_final(&c, out);
}
