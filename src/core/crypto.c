/* SPDX-License-Identifier: MIT
 * Digests, HMAC and ed25519 with libcrypto.so.3 resolved by dlopen on the
 * first hk_crypto_init, or linked in when built with -DHK_CRYPTO_STATIC (the
 * lean static build): SHA-1/256/512 through the low-level block functions
 * on contexts the caller owns (HMAC keeps its pad states there, so a MAC per
 * request costs no allocation), ed25519 through EVP. */
#ifdef HK_CRYPTO_STATIC
/* The table below then takes the block functions' addresses, which OpenSSL
 * 3's headers mark deprecated; they are still part of its API (not built
 * with no-deprecated). Must come before the first OpenSSL header. */
#define OPENSSL_SUPPRESS_DEPRECATED 1
#endif
#include "core/crypto.h"

#include <assert.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>

#include <openssl/err.h>
#include <openssl/evp.h>

/* The block functions are deprecated in OpenSSL 3's headers; the symbols
 * stay exported, and pointers of our own types call them without the
 * deprecation warnings (and, dlopen()ed, without linking libcrypto). */
typedef int (*sha1_init_fn)(SHA_CTX *);
typedef int (*sha1_update_fn)(SHA_CTX *, const void *, size_t);
typedef int (*sha1_final_fn)(unsigned char *, SHA_CTX *);
typedef int (*sha256_init_fn)(SHA256_CTX *);
typedef int (*sha256_update_fn)(SHA256_CTX *, const void *, size_t);
typedef int (*sha256_final_fn)(unsigned char *, SHA256_CTX *);
typedef int (*sha512_init_fn)(SHA512_CTX *);
typedef int (*sha512_update_fn)(SHA512_CTX *, const void *, size_t);
typedef int (*sha512_final_fn)(unsigned char *, SHA512_CTX *);
typedef int (*memcmp_fn)(const void *, const void *, size_t);
typedef EVP_PKEY *(*new_raw_key_fn)(int, ENGINE *, const unsigned char *, size_t);
typedef int (*get_raw_key_fn)(const EVP_PKEY *, unsigned char *, size_t *);
typedef void (*pkey_free_fn)(EVP_PKEY *);
typedef EVP_MD_CTX *(*md_ctx_new_fn)(void);
typedef void (*md_ctx_free_fn)(EVP_MD_CTX *);
typedef int (*digest_init_fn)(EVP_MD_CTX *, EVP_PKEY_CTX **, const EVP_MD *, ENGINE *, EVP_PKEY *);
typedef int (*digest_verify_fn)(EVP_MD_CTX *, const unsigned char *, size_t, const unsigned char *, size_t);
typedef int (*digest_sign_fn)(EVP_MD_CTX *, unsigned char *, size_t *, const unsigned char *, size_t);
typedef void (*clear_error_fn)(void);

static struct {
    sha1_init_fn sha1_init;
    sha1_update_fn sha1_update;
    sha1_final_fn sha1_final;
    sha256_init_fn sha256_init;
    sha256_update_fn sha256_update;
    sha256_final_fn sha256_final;
    sha512_init_fn sha512_init;
    sha512_update_fn sha512_update;
    sha512_final_fn sha512_final;
    memcmp_fn memcmp;
    new_raw_key_fn new_raw_public_key, new_raw_private_key;
    get_raw_key_fn get_raw_public_key;
    pkey_free_fn pkey_free;
    md_ctx_new_fn md_ctx_new;
    md_ctx_free_fn md_ctx_free;
    digest_init_fn verify_init, sign_init;
    digest_verify_fn verify;
    digest_sign_fn sign;
    clear_error_fn clear_error;
} fn;

static pthread_once_t once = PTHREAD_ONCE_INIT;
static atomic_bool ready;
static char load_err[200];     /* written once, inside `once` */

#ifdef HK_CRYPTO_STATIC

/* Linked in: the same table, filled with the real functions, so the rest of
 * this file is one code path; the compiler checks each type against
 * OpenSSL's own declaration, which dlsym cannot. */
static void load(void)
{
    fn.sha1_init = SHA1_Init;
    fn.sha1_update = SHA1_Update;
    fn.sha1_final = SHA1_Final;
    fn.sha256_init = SHA256_Init;
    fn.sha256_update = SHA256_Update;
    fn.sha256_final = SHA256_Final;
    fn.sha512_init = SHA512_Init;
    fn.sha512_update = SHA512_Update;
    fn.sha512_final = SHA512_Final;
    fn.memcmp = CRYPTO_memcmp;
    fn.new_raw_public_key = EVP_PKEY_new_raw_public_key;
    fn.new_raw_private_key = EVP_PKEY_new_raw_private_key;
    fn.get_raw_public_key = EVP_PKEY_get_raw_public_key;
    fn.pkey_free = EVP_PKEY_free;
    fn.md_ctx_new = EVP_MD_CTX_new;
    fn.md_ctx_free = EVP_MD_CTX_free;
    fn.verify_init = EVP_DigestVerifyInit;
    fn.sign_init = EVP_DigestSignInit;
    fn.verify = EVP_DigestVerify;
    fn.sign = EVP_DigestSign;
    fn.clear_error = ERR_clear_error;
    atomic_store_explicit(&ready, true, memory_order_release);
}

#else

#include <dlfcn.h>

/* One symbol into the slot `p` points to; false (and the reason noted)
 * when libcrypto lacks it. */
static bool sym(void *h, void *p, const char *name)
{
    void *s = dlsym(h, name);
    if (!s) {
        snprintf(load_err, sizeof load_err, "libcrypto.so.3 lacks %s", name);
        return false;
    }
    memcpy(p, &s, sizeof s);   /* object pointer to function pointer, as POSIX allows */
    return true;
}

static void load(void)
{
    void *h = dlopen("libcrypto.so.3", RTLD_NOW | RTLD_LOCAL);
    if (!h) {
        snprintf(load_err, sizeof load_err, "cannot load libcrypto.so.3: %s", dlerror());
        return;
    }
    bool ok = sym(h, &fn.sha1_init, "SHA1_Init") && sym(h, &fn.sha1_update, "SHA1_Update") &&
              sym(h, &fn.sha1_final, "SHA1_Final") && sym(h, &fn.sha256_init, "SHA256_Init") &&
              sym(h, &fn.sha256_update, "SHA256_Update") && sym(h, &fn.sha256_final, "SHA256_Final") &&
              sym(h, &fn.sha512_init, "SHA512_Init") && sym(h, &fn.sha512_update, "SHA512_Update") &&
              sym(h, &fn.sha512_final, "SHA512_Final") && sym(h, &fn.memcmp, "CRYPTO_memcmp") &&
              sym(h, &fn.new_raw_public_key, "EVP_PKEY_new_raw_public_key") &&
              sym(h, &fn.new_raw_private_key, "EVP_PKEY_new_raw_private_key") &&
              sym(h, &fn.get_raw_public_key, "EVP_PKEY_get_raw_public_key") &&
              sym(h, &fn.pkey_free, "EVP_PKEY_free") && sym(h, &fn.md_ctx_new, "EVP_MD_CTX_new") &&
              sym(h, &fn.md_ctx_free, "EVP_MD_CTX_free") && sym(h, &fn.verify_init, "EVP_DigestVerifyInit") &&
              sym(h, &fn.sign_init, "EVP_DigestSignInit") && sym(h, &fn.verify, "EVP_DigestVerify") &&
              sym(h, &fn.sign, "EVP_DigestSign") && sym(h, &fn.clear_error, "ERR_clear_error");
    if (!ok) {
        /* Keep the handle: a half-resolved table is never used (ready stays
         * false), and dlclose could run library destructors for nothing. */
        return;
    }
    atomic_store_explicit(&ready, true, memory_order_release);
}

#endif

int hk_crypto_init(char *err, size_t errlen)
{
    pthread_once(&once, load);
    if (hk_crypto_ready())
        return 0;
    if (err && errlen)
        snprintf(err, errlen, "%s", load_err);
    return -1;
}

bool hk_crypto_ready(void)
{
    return atomic_load_explicit(&ready, memory_order_acquire);
}

size_t hk_md_len(enum hk_md md)
{
    switch (md) {
    case HK_MD_SHA1:
        return 20;
    case HK_MD_SHA256:
        return 32;
    case HK_MD_SHA512:
        return 64;
    }
    return 0;
}

const char *hk_md_name(enum hk_md md)
{
    switch (md) {
    case HK_MD_SHA1:
        return "sha1";
    case HK_MD_SHA256:
        return "sha256";
    case HK_MD_SHA512:
        return "sha512";
    }
    return "?";
}

/* The HMAC block size of each digest (RFC 2104's B). */
static size_t md_block(enum hk_md md)
{
    return md == HK_MD_SHA512 ? 128 : 64;
}

void hk_md_init(struct hk_md_ctx *c, enum hk_md md)
{
    assert(hk_crypto_ready());
    c->md = md;
    switch (md) {
    case HK_MD_SHA1:
        fn.sha1_init(&c->u.sha1);
        break;
    case HK_MD_SHA256:
        fn.sha256_init(&c->u.sha256);
        break;
    case HK_MD_SHA512:
        fn.sha512_init(&c->u.sha512);
        break;
    }
}

void hk_md_update(struct hk_md_ctx *c, const void *p, size_t n)
{
    if (n == 0)
        return;            /* p may be NULL */
    switch (c->md) {
    case HK_MD_SHA1:
        fn.sha1_update(&c->u.sha1, p, n);
        break;
    case HK_MD_SHA256:
        fn.sha256_update(&c->u.sha256, p, n);
        break;
    case HK_MD_SHA512:
        fn.sha512_update(&c->u.sha512, p, n);
        break;
    }
}

void hk_md_final(struct hk_md_ctx *c, uint8_t *out)
{
    switch (c->md) {
    case HK_MD_SHA1:
        fn.sha1_final(out, &c->u.sha1);
        break;
    case HK_MD_SHA256:
        fn.sha256_final(out, &c->u.sha256);
        break;
    case HK_MD_SHA512:
        fn.sha512_final(out, &c->u.sha512);
        break;
    }
}

void hk_hmac_key_init(struct hk_hmac_key *k, enum hk_md md, const void *key, size_t klen)
{
    /* RFC 2104: a key longer than the block is replaced by its digest, then
     * zero-padded to the block; the pads are hashed once here, and every
     * message starts from copies of the two states. */
    uint8_t block[128], pad[128];
    size_t b = md_block(md);
    memset(block, 0, sizeof block);
    if (klen > b) {
        struct hk_md_ctx c;
        hk_md_init(&c, md);
        hk_md_update(&c, key, klen);
        hk_md_final(&c, block);
        explicit_bzero(&c, sizeof c);
    } else if (klen) {
        memcpy(block, key, klen);
    }
    for (size_t i = 0; i < b; i++)
        pad[i] = block[i] ^ 0x36;
    hk_md_init(&k->inner, md);
    hk_md_update(&k->inner, pad, b);
    for (size_t i = 0; i < b; i++)
        pad[i] = block[i] ^ 0x5c;
    hk_md_init(&k->outer, md);
    hk_md_update(&k->outer, pad, b);
    explicit_bzero(block, sizeof block);
    explicit_bzero(pad, sizeof pad);
}

void hk_hmac_key_wipe(struct hk_hmac_key *k)
{
    explicit_bzero(k, sizeof *k);
}

void hk_hmac_begin(struct hk_hmac_ctx *c, const struct hk_hmac_key *k)
{
    c->inner = k->inner;
    c->key = k;
}

void hk_hmac_update(struct hk_hmac_ctx *c, const void *p, size_t n)
{
    hk_md_update(&c->inner, p, n);
}

size_t hk_hmac_final(struct hk_hmac_ctx *c, uint8_t *out)
{
    uint8_t ih[HK_MD_MAX];
    size_t len = hk_md_len(c->inner.md);
    hk_md_final(&c->inner, ih);
    struct hk_md_ctx o = c->key->outer;
    hk_md_update(&o, ih, len);
    hk_md_final(&o, out);
    explicit_bzero(&o, sizeof o);
    explicit_bzero(ih, sizeof ih);
    explicit_bzero(&c->inner, sizeof c->inner);
    c->key = NULL;
    return len;
}

size_t hk_hmac(enum hk_md md, const void *key, size_t klen, const void *p, size_t n, uint8_t *out)
{
    struct hk_hmac_key k;
    struct hk_hmac_ctx c;
    hk_hmac_key_init(&k, md, key, klen);
    hk_hmac_begin(&c, &k);
    hk_hmac_update(&c, p, n);
    size_t len = hk_hmac_final(&c, out);
    hk_hmac_key_wipe(&k);
    return len;
}

int hk_crypto_memeq(const void *a, const void *b, size_t n)
{
    assert(hk_crypto_ready());
    return fn.memcmp(a, b, n) != 0;
}

/* libcrypto reads the message even when it is empty; give it a byte to
 * point at rather than NULL. */
static const unsigned char *msg_ptr(const void *msg, size_t n)
{
    static const unsigned char none[1];
    return n && msg ? msg : none;
}

int hk_ed25519_verify(const uint8_t pub[32], const void *msg, size_t n, const uint8_t sig[64])
{
    if (!hk_crypto_ready())
        return -1;
    int rc = -1;
    EVP_MD_CTX *m = NULL;
    EVP_PKEY *k = fn.new_raw_public_key(EVP_PKEY_ED25519, NULL, pub, 32);
    if (!k)
        goto out;
    m = fn.md_ctx_new();
    if (!m)
        goto out;
    if (fn.verify_init(m, NULL, NULL, NULL, k) == 1 && fn.verify(m, sig, 64, msg_ptr(msg, n), n) == 1)
        rc = 0;
out:
    if (m)
        fn.md_ctx_free(m);
    if (k)
        fn.pkey_free(k);
    if (rc)
        fn.clear_error();  /* a refused signature is an answer, not an error to keep queued */
    return rc;
}

int hk_ed25519_sign(const uint8_t priv[32], const void *msg, size_t n, uint8_t sig[64])
{
    if (!hk_crypto_ready())
        return -1;
    int rc = -1;
    size_t len = 64;
    EVP_MD_CTX *m = NULL;
    EVP_PKEY *k = fn.new_raw_private_key(EVP_PKEY_ED25519, NULL, priv, 32);
    if (!k)
        goto out;
    m = fn.md_ctx_new();
    if (!m)
        goto out;
    if (fn.sign_init(m, NULL, NULL, NULL, k) == 1 && fn.sign(m, sig, &len, msg_ptr(msg, n), n) == 1 && len == 64)
        rc = 0;
out:
    if (m)
        fn.md_ctx_free(m);
    if (k)
        fn.pkey_free(k);
    if (rc)
        fn.clear_error();
    return rc;
}

int hk_ed25519_public(const uint8_t priv[32], uint8_t pub[32])
{
    if (!hk_crypto_ready())
        return -1;
    size_t len = 32;
    EVP_PKEY *k = fn.new_raw_private_key(EVP_PKEY_ED25519, NULL, priv, 32);
    if (!k) {
        fn.clear_error();
        return -1;
    }
    int rc = fn.get_raw_public_key(k, pub, &len) == 1 && len == 32 ? 0 : -1;
    fn.pkey_free(k);
    if (rc)
        fn.clear_error();
    return rc;
}
