/* SPDX-License-Identifier: MIT
 * Message digests, HMAC and ed25519 from libcrypto, resolved at run time
 * (dlopen) by hk_crypto_init: a process that verifies nothing never maps
 * libcrypto; or linked in with -DHK_CRYPTO_STATIC (the lean build). Digests use libcrypto's low-level block functions (the fast
 * assembly, SHA-NI where the CPU has it) on contexts the caller keeps, so
 * a streaming HMAC allocates nothing: the key's inner and outer pad states
 * are hashed once (hk_hmac_key_init) and copied per message. */
#ifndef HK_CRYPTO_H
#define HK_CRYPTO_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <openssl/sha.h>

enum hk_md { HK_MD_SHA1, HK_MD_SHA256, HK_MD_SHA512 };

#define HK_MD_MAX 64               /* largest digest (SHA-512) */

/* Digest length of `md` in bytes (20, 32, 64). */
size_t hk_md_len(enum hk_md md);
/* "sha1", "sha256", "sha512". */
const char *hk_md_name(enum hk_md md);

/* Load libcrypto once (thread-safe, idempotent). 0, or -1 with a one-line
 * reason in err. Every other function here needs it to have succeeded. */
int hk_crypto_init(char *err, size_t errlen);
bool hk_crypto_ready(void);

/* A running digest: plain memory, copyable with `=`. */
struct hk_md_ctx {
    enum hk_md md;
    union {
        SHA_CTX sha1;
        SHA256_CTX sha256;
        SHA512_CTX sha512;
    } u;
};
void hk_md_init(struct hk_md_ctx *c, enum hk_md md);
void hk_md_update(struct hk_md_ctx *c, const void *p, size_t n);
/* Writes hk_md_len(c->md) bytes to out. */
void hk_md_final(struct hk_md_ctx *c, uint8_t *out);

/* An HMAC key, prepared once: the pad states after one block. Holds no
 * pointer to the key bytes; wipe it (hk_hmac_key_wipe) when done. */
struct hk_hmac_key {
    struct hk_md_ctx inner, outer;
};
void hk_hmac_key_init(struct hk_hmac_key *k, enum hk_md md, const void *key, size_t klen);
void hk_hmac_key_wipe(struct hk_hmac_key *k);

/* One message's HMAC, streamed. */
struct hk_hmac_ctx {
    struct hk_md_ctx inner;
    const struct hk_hmac_key *key;     /* borrowed until final */
};
void hk_hmac_begin(struct hk_hmac_ctx *c, const struct hk_hmac_key *k);
void hk_hmac_update(struct hk_hmac_ctx *c, const void *p, size_t n);
/* Writes hk_md_len bytes to out; returns that length. */
size_t hk_hmac_final(struct hk_hmac_ctx *c, uint8_t *out);
/* One-shot. */
size_t hk_hmac(enum hk_md md, const void *key, size_t klen, const void *p, size_t n, uint8_t *out);

/* Constant-time: 0 when the n bytes are equal. */
int hk_crypto_memeq(const void *a, const void *b, size_t n);

/* ed25519 (PureEdDSA: the whole message at once). 0 when `sig` (64 bytes)
 * is a valid signature of msg under the 32-byte public key; -1 otherwise
 * (a malformed key included). May allocate inside libcrypto. */
int hk_ed25519_verify(const uint8_t pub[32], const void *msg, size_t n, const uint8_t sig[64]);
/* Sign with a 32-byte private key (tests, `hookd sign`); 0 or -1. */
int hk_ed25519_sign(const uint8_t priv[32], const void *msg, size_t n, uint8_t sig[64]);
/* The public key of a private key; 0 or -1. */
int hk_ed25519_public(const uint8_t priv[32], uint8_t pub[32]);

#endif
