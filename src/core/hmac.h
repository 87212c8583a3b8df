/* SPDX-License-Identifier: MIT
 * HMAC-SHA256 through OpenSSL's libcrypto, loaded only when a webhook
 * secret is configured: the default path never maps libcrypto (1.4 MB of
 * RSS and a good share of start-up time); or linked in with
 * -DHK_CRYPTO_STATIC (the lean build). */
#ifndef HK_HMAC_H
#define HK_HMAC_H

#include <stddef.h>

/* Load libcrypto. 0, or -1 with a one-line reason in err. */
int hk_hmac_init(char *err, size_t errlen);
/* out receives 32 bytes. 0, or -1 (not initialised, or libcrypto failed). */
int hk_hmac_sha256(const void *key, size_t klen, const void *data, size_t n, unsigned char out[32]);
/* Constant-time comparison: 0 when equal. */
int hk_hmac_equal(const void *a, const void *b, size_t n);

#endif
