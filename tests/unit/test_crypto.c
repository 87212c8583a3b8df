/* SPDX-License-Identifier: MIT
 * core/crypto and core/base64: the published vectors (FIPS 180 digests,
 * RFC 2202 and RFC 4231 HMAC, RFC 8032 ed25519, RFC 4648 base64), then
 * pseudo-random keys and messages streamed in random pieces against
 * libcrypto's own HMAC() and EVP_Digest(), linked directly here. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <string.h>

#include <openssl/evp.h>
#include <openssl/hmac.h>

#include "core/base64.h"
#include "core/crypto.h"
#include "core/mediatype.h"

static void setup(void)
{
    char err[200] = "";
    cr_assert_eq(hk_crypto_init(err, sizeof err), 0, "%s", err);
}

TestSuite(crypto, .init = setup);
TestSuite(base64);

static void unhex(const char *h, uint8_t *out, size_t *n)
{
    size_t len = strlen(h) / 2;
    for (size_t i = 0; i < len; i++) {
        unsigned v;
        cr_assert_eq(sscanf(h + 2 * i, "%2x", &v), 1);
        out[i] = (uint8_t)v;
    }
    *n = len;
}

static void tohex(const uint8_t *p, size_t n, char *out)
{
    for (size_t i = 0; i < n; i++)
        snprintf(out + 2 * i, 3, "%02x", p[i]);
}

static uint64_t rng = 0x2545f4914f6cdd1du;

static uint64_t next(void)
{
    /* xorshift64*: reproducible input, so a failure can be replayed. */
    rng ^= rng >> 12;
    rng ^= rng << 25;
    rng ^= rng >> 27;
    return rng * 0x2545f4914f6cdd1du;
}

static void fill(uint8_t *p, size_t n)
{
    for (size_t i = 0; i < n; i++)
        p[i] = (uint8_t)(next() >> 32);
}

Test(crypto, init_is_idempotent_and_names)
{
    char err[200];
    cr_expect_eq(hk_crypto_init(err, sizeof err), 0);
    cr_expect_eq(hk_crypto_init(NULL, 0), 0);
    cr_expect(hk_crypto_ready());
    cr_expect_eq(hk_md_len(HK_MD_SHA1), 20);
    cr_expect_eq(hk_md_len(HK_MD_SHA256), 32);
    cr_expect_eq(hk_md_len(HK_MD_SHA512), 64);
    cr_expect_str_eq(hk_md_name(HK_MD_SHA1), "sha1");
    cr_expect_str_eq(hk_md_name(HK_MD_SHA256), "sha256");
    cr_expect_str_eq(hk_md_name(HK_MD_SHA512), "sha512");
}

static void expect_md(enum hk_md md, const char *msg, const char *want)
{
    struct hk_md_ctx c;
    uint8_t d[HK_MD_MAX];
    char h[2 * HK_MD_MAX + 1];
    hk_md_init(&c, md);
    hk_md_update(&c, msg, strlen(msg));
    hk_md_final(&c, d);
    tohex(d, hk_md_len(md), h);
    cr_expect_str_eq(h, want, "%s(\"%s\")", hk_md_name(md), msg);
}

Test(crypto, fips_digests)
{
    expect_md(HK_MD_SHA1, "abc", "a9993e364706816aba3e25717850c26c9cd0d89d");
    expect_md(HK_MD_SHA256, "abc", "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
    expect_md(HK_MD_SHA512, "abc",
              "ddaf35a193617abacc417349ae20413112e6fa4e89a97ea20a9eeee64b55d39a2192992a274fc1a836ba3c23a3feebbd454d"
              "4423643ce80e2a9ac94fa54ca49f");
    expect_md(HK_MD_SHA256, "", "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
    expect_md(HK_MD_SHA1, "", "da39a3ee5e6b4b0d3255bfef95601890afd80709");
}

struct hmac_vec {
    enum hk_md md;
    uint8_t kbyte;             /* key: klen bytes of kbyte, unless key is set */
    size_t klen;
    const char *key;
    const char *msg;
    const char *want;
};

static void expect_hmac(const struct hmac_vec *t)
{
    uint8_t key[200], d[HK_MD_MAX];
    char h[2 * HK_MD_MAX + 1];
    size_t klen = t->key ? strlen(t->key) : t->klen;
    if (t->key)
        memcpy(key, t->key, klen);
    else
        memset(key, t->kbyte, klen);
    size_t n = hk_hmac(t->md, key, klen, t->msg, strlen(t->msg), d);
    cr_assert_eq(n, hk_md_len(t->md));
    tohex(d, n, h);
    cr_expect_str_eq(h, t->want, "one-shot %s, key %zu bytes", hk_md_name(t->md), klen);

    /* The same through a prepared key, a byte at a time. */
    struct hk_hmac_key k;
    struct hk_hmac_ctx c;
    hk_hmac_key_init(&k, t->md, key, klen);
    hk_hmac_begin(&c, &k);
    for (const char *p = t->msg; *p; p++)
        hk_hmac_update(&c, p, 1);
    hk_hmac_final(&c, d);
    tohex(d, n, h);
    cr_expect_str_eq(h, t->want, "streamed %s, key %zu bytes", hk_md_name(t->md), klen);
    hk_hmac_key_wipe(&k);
}

static const char big_key_msg[] = "Test Using Larger Than Block-Size Key - Hash Key First";
static const char big_data_msg[] = "This is a test using a larger than block-size key and a larger than "
                                   "block-size data. The key needs to be hashed before being used by the HMAC "
                                   "algorithm.";

Test(crypto, rfc2202_hmac_sha1)
{
    static const struct hmac_vec v[] = {
        {HK_MD_SHA1, 0x0b, 20, NULL, "Hi There", "b617318655057264e28bc0b6fb378c8ef146be00"},
        {HK_MD_SHA1, 0, 0, "Jefe", "what do ya want for nothing?", "effcdf6ae5eb2fa2d27416d5f184df9c259a7c79"},
        /* Test case 6: an 80-byte key, longer than SHA-1's block, hashed first. */
        {HK_MD_SHA1, 0xaa, 80, NULL, big_key_msg, "aa4ae5e15272d00e95705637ce8a3b55ed402112"},
    };
    for (size_t i = 0; i < sizeof v / sizeof v[0]; i++)
        expect_hmac(&v[i]);
}

Test(crypto, rfc4231_hmac_sha256_sha512)
{
    static const struct hmac_vec v[] = {
        {HK_MD_SHA256, 0x0b, 20, NULL, "Hi There",
         "b0344c61d8db38535ca8afceaf0bf12b881dc200c9833da726e9376c2e32cff7"},
        {HK_MD_SHA256, 0, 0, "Jefe", "what do ya want for nothing?",
         "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843"},
        {HK_MD_SHA256, 0xaa, 131, NULL, big_key_msg,
         "60e431591ee0b67f0d8a26aacbf5b77f8e0bc6213728c5140546040f0ee37f54"},
        {HK_MD_SHA256, 0xaa, 131, NULL, big_data_msg,
         "9b09ffa71b942fcb27635fbcd5b0e944bfdc63644f0713938a7f51535c3a35e2"},
        {HK_MD_SHA512, 0x0b, 20, NULL, "Hi There",
         "87aa7cdea5ef619d4ff0b4241a1d6cb02379f4e2ce4ec2787ad0b30545e17cdedaa833b7d6b8a702038b274eaea3f4e4be9d914e"
         "eb61f1702e696c203a126854"},
        {HK_MD_SHA512, 0, 0, "Jefe", "what do ya want for nothing?",
         "164b7a7bfcf819e2e395fbe73b56e0a387bd64222e831fd610270cd7ea2505549758bf75c05a994a6d034f65f8f0e6fdcaeab1a3"
         "4d4a6b4b636e070a38bce737"},
        {HK_MD_SHA512, 0xaa, 131, NULL, big_key_msg,
         "80b24263c7c1a3ebb71493c1dd7be8b49b46d1f41b4aeec1121b013783f8f3526b56d037e05f2598bd0fd2215d6a1e5295e64f73"
         "f63f0aec8b915a985d786598"},
        {HK_MD_SHA512, 0xaa, 131, NULL, big_data_msg,
         "e37b6a775dc87dbaa4dfa9f96e5e3ffddebd71f8867289865df5a32d20cdc944b6022cac3c4982b10d5eeb55c3e4de15134676fb"
         "6de0446065c97440fa8c6a58"},
    };
    for (size_t i = 0; i < sizeof v / sizeof v[0]; i++)
        expect_hmac(&v[i]);
}

static const EVP_MD *evp(enum hk_md md)
{
    return md == HK_MD_SHA1 ? EVP_sha1() : md == HK_MD_SHA256 ? EVP_sha256() : EVP_sha512();
}

Test(crypto, random_streams_match_libcrypto)
{
    static uint8_t msg[3000], key[400];
    for (int iter = 0; iter < 600; iter++) {
        enum hk_md md = (enum hk_md)(iter % 3);
        size_t n = next() % sizeof msg;
        /* Keys from empty to well past the 128-byte SHA-512 block. */
        size_t klen = iter % 7 == 0 ? 129 + next() % 200 : next() % 150;
        fill(msg, n);
        fill(key, klen);

        uint8_t want[EVP_MAX_MD_SIZE], got[HK_MD_MAX];
        unsigned wl = 0;
        cr_assert(HMAC(evp(md), key, (int)klen, msg, n, want, &wl));
        struct hk_hmac_key k;
        struct hk_hmac_ctx c;
        hk_hmac_key_init(&k, md, key, klen);
        hk_hmac_begin(&c, &k);
        for (size_t done = 0; done < n;) {
            size_t piece = 1 + next() % 200;
            if (piece > n - done)
                piece = n - done;
            hk_hmac_update(&c, msg + done, piece);
            done += piece;
        }
        cr_assert_eq(hk_hmac_final(&c, got), wl);
        cr_assert_eq(memcmp(got, want, wl), 0, "HMAC %s: key %zu, message %zu bytes", hk_md_name(md), klen, n);

        /* The key is reusable: a second message from the same pads. */
        hk_hmac_begin(&c, &k);
        hk_hmac_update(&c, msg, n / 2);
        hk_hmac_final(&c, got);
        cr_assert(HMAC(evp(md), key, (int)klen, msg, n / 2, want, &wl));
        cr_assert_eq(memcmp(got, want, wl), 0);
        hk_hmac_key_wipe(&k);

        /* The plain digest, in pieces, against EVP_Digest. */
        struct hk_md_ctx d;
        hk_md_init(&d, md);
        for (size_t done = 0; done < n;) {
            size_t piece = 1 + next() % 300;
            if (piece > n - done)
                piece = n - done;
            hk_md_update(&d, msg + done, piece);
            done += piece;
        }
        hk_md_final(&d, got);
        cr_assert(EVP_Digest(msg, n, want, &wl, evp(md), NULL));
        cr_assert_eq(wl, hk_md_len(md));
        cr_assert_eq(memcmp(got, want, wl), 0, "%s of %zu bytes", hk_md_name(md), n);
    }
}

Test(crypto, key_wipe_clears_state)
{
    struct hk_hmac_key k;
    hk_hmac_key_init(&k, HK_MD_SHA256, "secret", 6);
    hk_hmac_key_wipe(&k);
    static const struct hk_hmac_key zero;
    cr_expect_eq(memcmp(&k, &zero, sizeof k), 0);
}

Test(crypto, memeq)
{
    cr_expect_eq(hk_crypto_memeq("abcdef", "abcdef", 6), 0);
    cr_expect_neq(hk_crypto_memeq("abcdef", "abcdeg", 6), 0);
    cr_expect_neq(hk_crypto_memeq("Abcdef", "abcdef", 6), 0);
    cr_expect_eq(hk_crypto_memeq("a", "b", 0), 0);
}

/* RFC 8032 section 7.1, TEST 1 to 3: secret key, public key, message, signature. */
static const char *const rfc8032[][4] = {
    {"9d61b19deffd5a60ba844af492ec2cc44449c5697b326919703bac031cae7f60",
     "d75a980182b10ab7d54bfed3c964073a0ee172f3daa62325af021a68f707511a", "",
     "e5564300c360ac729086e2cc806e828a84877f1eb8e5d974d873e065224901555fb8821590a33bacc61e39701cf9b46bd25bf5f0595bbe"
     "24655141438e7a100b"},
    {"4ccd089b28ff96da9db6c346ec114e0f5b8a319f35aba624da8cf6ed4fb8a6fb",
     "3d4017c3e843895a92b70aa74d1b7ebc9c982ccf2ec4968cc0cd55f12af4660c", "72",
     "92a009a9f0d4cab8720e820b5f642540a2b27b5416503f8fb3762223ebdb69da085ac1e43e15996e458f3613d0f11d8c387b2eaeb430"
     "2aeeb00d291612bb0c00"},
    {"c5aa8df43f9f837bedb7442f31dcb7b166d38535076f094b85ce3a2e0b4458f7",
     "fc51cd8e6218a1a38da47ed00230f0580816ed13ba3303ac5deb911548908025", "af82",
     "6291d657deec24024827e69c3abe01a30ce548a284743a445e3680d7db5ac3ac18ff9b538d16f290ae67f760984dc6594a7c15e9716e"
     "d28dc027beceea1ec40a"},
};

Test(crypto, rfc8032_ed25519)
{
    for (size_t t = 0; t < 3; t++) {
        uint8_t priv[32], pub[32], msg[8], sig[64], got[64], gpub[32];
        size_t n;
        unhex(rfc8032[t][0], priv, &n);
        unhex(rfc8032[t][1], pub, &n);
        unhex(rfc8032[t][2], msg, &n);
        size_t mlen = n;
        unhex(rfc8032[t][3], sig, &n);

        cr_assert_eq(hk_ed25519_public(priv, gpub), 0);
        cr_expect_eq(memcmp(gpub, pub, 32), 0, "TEST %zu public key", t + 1);
        cr_assert_eq(hk_ed25519_sign(priv, mlen ? msg : NULL, mlen, got), 0);
        cr_expect_eq(memcmp(got, sig, 64), 0, "TEST %zu signature", t + 1);
        cr_expect_eq(hk_ed25519_verify(pub, mlen ? msg : NULL, mlen, sig), 0, "TEST %zu verifies", t + 1);

        /* Tampered message: one more byte, or one bit changed. */
        uint8_t longer[9];
        memcpy(longer, msg, mlen);
        longer[mlen] = 0;
        cr_expect_eq(hk_ed25519_verify(pub, longer, mlen + 1, sig), -1);
        if (mlen) {
            msg[0] ^= 1;
            cr_expect_eq(hk_ed25519_verify(pub, msg, mlen, sig), -1);
            msg[0] ^= 1;
        }
        /* Tampered signature: each byte in turn. */
        for (int i = 0; i < 64; i++) {
            sig[i] ^= 0x40;
            cr_expect_eq(hk_ed25519_verify(pub, msg, mlen, sig), -1, "TEST %zu, byte %d", t + 1, i);
            sig[i] ^= 0x40;
        }
        /* Another test's key. */
        uint8_t other[32];
        unhex(rfc8032[(t + 1) % 3][1], other, &n);
        cr_expect_eq(hk_ed25519_verify(other, msg, mlen, sig), -1);
    }
}

Test(crypto, ed25519_malformed_key_refused)
{
    uint8_t sig[64], bad[32] = {2};    /* y = 2: no x on the curve for it */
    size_t n;
    unhex(rfc8032[0][3], sig, &n);
    cr_expect_eq(hk_ed25519_verify(bad, NULL, 0, sig), -1);
    memset(bad, 0xff, sizeof bad);     /* y >= p: not a canonical encoding */
    cr_expect_eq(hk_ed25519_verify(bad, NULL, 0, sig), -1);
    memset(bad, 0, sizeof bad);
    cr_expect_eq(hk_ed25519_verify(bad, NULL, 0, sig), -1);
}

Test(crypto, ed25519_random_round_trips)
{
    static uint8_t msg[5000];
    for (int i = 0; i < 40; i++) {
        uint8_t priv[32], pub[32], sig[64];
        size_t n = next() % sizeof msg;
        fill(priv, 32);
        fill(msg, n);
        cr_assert_eq(hk_ed25519_public(priv, pub), 0);
        cr_assert_eq(hk_ed25519_sign(priv, msg, n, sig), 0);
        cr_expect_eq(hk_ed25519_verify(pub, msg, n, sig), 0);

        /* libcrypto's own EVP verification agrees. */
        EVP_PKEY *k = EVP_PKEY_new_raw_public_key(EVP_PKEY_ED25519, NULL, pub, 32);
        EVP_MD_CTX *m = EVP_MD_CTX_new();
        cr_assert(k && m);
        cr_assert_eq(EVP_DigestVerifyInit(m, NULL, NULL, NULL, k), 1);
        cr_expect_eq(EVP_DigestVerify(m, sig, 64, n ? msg : (const uint8_t *)"", n), 1);
        EVP_MD_CTX_free(m);
        EVP_PKEY_free(k);
        if (n) {
            msg[next() % n] ^= 0x80;
            cr_expect_eq(hk_ed25519_verify(pub, msg, n, sig), -1);
        }
    }
}

/* ---- base64 ----------------------------------------------------------- */

Test(base64, rfc4648_vectors)
{
    static const char *const v[][2] = {
        {"", ""},         {"f", "Zg=="},         {"fo", "Zm8="},         {"foo", "Zm9v"},
        {"foob", "Zm9vYg=="}, {"fooba", "Zm9vYmE="}, {"foobar", "Zm9vYmFy"},
    };
    for (size_t i = 0; i < sizeof v / sizeof v[0]; i++) {
        char out[32];
        uint8_t dec[16];
        size_t n = strlen(v[i][0]);
        cr_expect_eq(hk_base64_encode(v[i][0], n, out), strlen(v[i][1]));
        cr_expect_str_eq(out, v[i][1]);
        cr_expect_eq(HK_BASE64_LEN(n), strlen(v[i][1]));
        long d = hk_base64_decode(v[i][1], strlen(v[i][1]), dec, sizeof dec);
        cr_expect_eq(d, (long)n, "decode \"%s\"", v[i][1]);
        cr_expect_eq(memcmp(dec, v[i][0], n), 0);
    }
}

Test(base64, url_alphabet_unpadded)
{
    static const uint8_t b[] = {0xfb, 0xff, 0xbf};
    char out[16];
    cr_expect_eq(hk_base64_encode(b, 3, out), 4);
    cr_expect_str_eq(out, "+/+/");
    cr_expect_eq(hk_base64url_encode(b, 3, out), 4);
    cr_expect_str_eq(out, "-_-_");
    cr_expect_eq(hk_base64url_encode(b, 2, out), 3);
    cr_expect_str_eq(out, "-_8");
    cr_expect_eq(hk_base64url_encode(b, 1, out), 2);
    cr_expect_str_eq(out, "-w");
    cr_expect_eq(hk_base64url_encode(b, 0, out), 0);
    cr_expect_str_eq(out, "");
}

Test(base64, strict_decoding)
{
    uint8_t out[16];
    static const char *const bad[] = {
        "Zg",       /* padding missing */
        "Zg=",      /* length not a multiple of 4 */
        "Zh==",     /* non-canonical: 'h' has low bits set */
        "Zm9=",     /* non-canonical: '9' has low bits set */
        "Z===",     /* three '=' */
        "====",     /* only padding */
        "Zg==Zm8=", /* padding before the end */
        "Zm 9v",    /* whitespace */
        "Zm9v\n",   /* a newline */
        "Zm9v====", /* padding as a whole quantum */
        "Zm-_",     /* URL alphabet */
        "Zm9\x80",  /* not ASCII */
        "=m9v",     /* padding first */
        "Zm=v",     /* padding inside a quantum */
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
        cr_expect_eq(hk_base64_decode(bad[i], strlen(bad[i]), out, sizeof out), -1, "\"%s\"", bad[i]);
    /* A NUL inside the text is not base64 either. */
    cr_expect_eq(hk_base64_decode("Zm\0v", 4, out, sizeof out), -1);
    /* The capacity is a hard limit. */
    cr_expect_eq(hk_base64_decode("Zm9v", 4, out, 2), -1);
    cr_expect_eq(hk_base64_decode("Zm9v", 4, out, 3), 3);
    cr_expect_eq(hk_base64_decode("Zm8=", 4, out, 2), 2);
    cr_expect_eq(hk_base64_decode("Zm8=", 4, out, 1), -1);
    cr_expect_eq(hk_base64_decode("", 0, out, 0), 0);
}

Test(base64, random_round_trips)
{
    static uint8_t in[300], dec[300];
    static char enc[HK_BASE64_LEN(300) + 1];
    for (int i = 0; i < 2000; i++) {
        size_t n = next() % sizeof in;
        fill(in, n);
        size_t el = hk_base64_encode(in, n, enc);
        cr_assert_eq(el, HK_BASE64_LEN(n));
        cr_assert_eq(strlen(enc), el);
        cr_assert_eq(hk_base64_decode(enc, el, dec, sizeof dec), (long)n);
        cr_assert_eq(memcmp(in, dec, n), 0);
        /* Exactly the needed capacity is enough; one less is not. */
        if (n) {
            cr_assert_eq(hk_base64_decode(enc, el, dec, n), (long)n);
            cr_assert_eq(hk_base64_decode(enc, el, dec, n - 1), -1);
        }
    }
}

Test(base64, url_decoding_is_strict_and_round_trips)
{
    uint8_t out[64];
    char enc[128];
    for (size_t n = 0; n <= 40; n++) {
        uint8_t in[40];
        for (size_t i = 0; i < n; i++)
            in[i] = (uint8_t)(i * 37 + n);
        size_t k = hk_base64url_encode(in, n, enc);
        cr_assert_eq(hk_base64url_decode(enc, k, out, sizeof out), (long)n, "n=%zu", n);
        cr_assert(n == 0 || memcmp(in, out, n) == 0);
        if (n)
            cr_assert_eq(hk_base64url_decode(enc, k, out, n - 1), -1, "one byte short never fits");
    }
    /* RFC 4648 section 10, unpadded, and the URL alphabet only. */
    cr_assert_eq(hk_base64url_decode("Zm9vYg", 6, out, sizeof out), 4);
    cr_assert_arr_eq(out, "foob", 4);
    cr_assert_eq(hk_base64url_decode("-_8", 3, out, sizeof out), 2);
    cr_assert_eq(out[0], 0xfb);
    cr_assert_eq(out[1], 0xff);
    cr_assert_eq(hk_base64url_decode("+/8", 3, out, sizeof out), -1, "standard alphabet");
    cr_assert_eq(hk_base64url_decode("Zm9vYg==", 8, out, sizeof out), -1, "padding");
    cr_assert_eq(hk_base64url_decode("Zm9vY", 5, out, sizeof out), -1, "a lone character");
    cr_assert_eq(hk_base64url_decode("Zh", 2, out, sizeof out), -1, "non-zero unused bits");
    cr_assert_eq(hk_base64url_decode("Zm8", 3, out, sizeof out), 2);
    cr_assert_arr_eq(out, "fo", 2);
    cr_assert_eq(hk_base64url_decode("Zm9", 3, out, sizeof out), -1, "non-zero unused bits");
}

Test(mediatype, base_and_json)
{
    const char *b;
    size_t n = hk_media_base(" Application/JSON ; charset=utf-8", 33, &b);
    cr_assert_eq(n, 16);
    cr_assert(strncmp(b, "Application/JSON", 16) == 0);
    cr_assert(hk_media_is("application/json;x=1", 20, "application/json"));
    cr_assert_not(hk_media_is("application/jsonx", 17, "application/json"));
    cr_assert_not(hk_media_is(NULL, 0, "application/json"));
    cr_assert(hk_media_is_json("application/cloudevents+json; charset=utf-8", 43));
    cr_assert(hk_media_is_json("APPLICATION/JSON", 16));
    cr_assert_not(hk_media_is_json("application/+json", 17));
    cr_assert_not(hk_media_is_json("/x+json", 7));
    cr_assert_not(hk_media_is_json("text/plain", 10));
    cr_assert_not(hk_media_is_json(NULL, 0));
    cr_assert_not(hk_media_is_json("", 0));
}
