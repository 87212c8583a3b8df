/* SPDX-License-Identifier: MIT
 * HMAC-SHA256 with libcrypto resolved at run time (dlopen), so that only a
 * process configured with a secret pays for loading it; built with
 * -DHK_CRYPTO_STATIC (the lean static build), libcrypto is linked in and the
 * table points at its functions. */
#include "core/hmac.h"

#include <stdio.h>

#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>

struct fns {
    const EVP_MD *(*sha256)(void);
    unsigned char *(*hmac)(const EVP_MD *, const void *, int, const unsigned char *, size_t, unsigned char *,
                           unsigned int *);
    int (*memcmp)(const void *, const void *, size_t);
};

#ifdef HK_CRYPTO_STATIC

/* Linked in: filled by the compiler, which checks each type against
 * OpenSSL's declaration. */
static const struct fns fn = {.sha256 = EVP_sha256, .hmac = HMAC, .memcmp = CRYPTO_memcmp};

int hk_hmac_init(char *err, size_t errlen)
{
    (void)err;
    (void)errlen;
    return 0;
}

#else

#include <dlfcn.h>

static struct fns fn;

int hk_hmac_init(char *err, size_t errlen)
{
    if (fn.hmac)
        return 0;
    void *h = dlopen("libcrypto.so.3", RTLD_NOW | RTLD_LOCAL);
    if (!h) {
        snprintf(err, errlen, "HOOKD_WEBHOOK_SECRET needs libcrypto.so.3: %s", dlerror());
        return -1;
    }
    *(void **)&fn.sha256 = dlsym(h, "EVP_sha256");
    *(void **)&fn.memcmp = dlsym(h, "CRYPTO_memcmp");
    *(void **)&fn.hmac = dlsym(h, "HMAC");
    if (!fn.sha256 || !fn.memcmp || !fn.hmac) {
        snprintf(err, errlen, "libcrypto.so.3 lacks HMAC/EVP_sha256/CRYPTO_memcmp");
        fn.hmac = NULL;
        return -1;
    }
    return 0;
}

#endif

int hk_hmac_sha256(const void *key, size_t klen, const void *data, size_t n, unsigned char out[32])
{
    unsigned int len = 0;
    if (!fn.hmac || klen > 0x7fffffff)
        return -1;
    if (!fn.hmac(fn.sha256(), key, (int)klen, data, n, out, &len) || len != 32)
        return -1;
    return 0;
}

int hk_hmac_equal(const void *a, const void *b, size_t n)
{
    return fn.memcmp ? fn.memcmp(a, b, n) : -1;
}
