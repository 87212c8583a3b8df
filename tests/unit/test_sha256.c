/* SPDX-License-Identifier: MIT
 * core/sha256 against the FIPS 180-4 / NIST example vectors, and against
 * OpenSSL's SHA256 on pseudo-random input of every length from 0 to 300,
 * one-shot and fed in random pieces. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <string.h>

#include <openssl/sha.h>

#include "core/sha256.h"

static void hex(const uint8_t d[32], char out[65])
{
    for (int i = 0; i < 32; i++)
        snprintf(out + 2 * i, 3, "%02x", d[i]);
}

static void expect_digest(const void *p, size_t n, const char *want)
{
    uint8_t d[32];
    char h[65];
    hk_sha256(p, n, d);
    hex(d, h);
    cr_expect_str_eq(h, want, "length %zu", n);
}

Test(sha256, nist_vectors)
{
    expect_digest(NULL, 0, "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
    expect_digest("", 0, "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
    expect_digest("abc", 3, "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
    static const char m448[] = "abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq";
    cr_assert_eq(strlen(m448) * 8, 448);
    expect_digest(m448, strlen(m448), "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");
    static const char m896[] = "abcdefghbcdefghicdefghijdefghijkefghijklfghijklmghijklmnhijklmnoijklmnopjklmnopqklmnopqrlmnopq"
                               "rsmnopqrstnopqrstu";
    cr_assert_eq(strlen(m896) * 8, 896);
    expect_digest(m896, strlen(m896), "cf5b16a778af8380036ce59e7b0492370b249b11e8f07a51afac45037afee9d1");
}

Test(sha256, one_million_a)
{
    static char a[1000000];
    memset(a, 'a', sizeof a);
    expect_digest(a, sizeof a, "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0");

    /* The same, fed 1000 bytes at a time, and in pieces of 1 and 63. */
    struct hk_sha256_ctx c;
    uint8_t d[32];
    char h[65];
    hk_sha256_init(&c);
    for (int i = 0; i < 1000; i++)
        hk_sha256_update(&c, a, 1000);
    hk_sha256_final(&c, d);
    hex(d, h);
    cr_expect_str_eq(h, "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0");
    hk_sha256_init(&c);
    size_t done = 0;
    for (size_t step = 1; done < sizeof a; step = step == 1 ? 63 : 1) {
        size_t k = sizeof a - done < step ? sizeof a - done : step;
        hk_sha256_update(&c, a + done, k);
        done += k;
    }
    hk_sha256_final(&c, d);
    hex(d, h);
    cr_expect_str_eq(h, "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0");
}

static uint64_t rng = 0x9e3779b97f4a7c15u;

static uint64_t next(void)
{
    /* xorshift64*: reproducible input, so a failure can be replayed. */
    rng ^= rng >> 12;
    rng ^= rng << 25;
    rng ^= rng >> 27;
    return rng * 0x2545f4914f6cdd1du;
}

Test(sha256, against_openssl_every_length)
{
    static uint8_t buf[300];
    for (size_t n = 0; n <= 300; n++) {
        for (int round = 0; round < 8; round++) {
            for (size_t i = 0; i < n; i++)
                buf[i] = (uint8_t)next();
            uint8_t want[32], got[32];
            SHA256(buf, n, want);
            hk_sha256(buf, n, got);
            cr_assert(memcmp(want, got, 32) == 0, "length %zu round %d", n, round);

            /* The same bytes in random pieces. */
            struct hk_sha256_ctx c;
            hk_sha256_init(&c);
            for (size_t done = 0; done < n;) {
                size_t k = (size_t)(next() % 80);
                if (k > n - done)
                    k = n - done;
                hk_sha256_update(&c, buf + done, k);
                done += k;
            }
            hk_sha256_update(&c, buf, 0);
            hk_sha256_final(&c, got);
            cr_assert(memcmp(want, got, 32) == 0, "pieces: length %zu round %d", n, round);
        }
    }
}

Test(sha256, final_wipes_the_context)
{
    struct hk_sha256_ctx c;
    uint8_t d[32];
    hk_sha256_init(&c);
    hk_sha256_update(&c, "hkd_secret", 10);
    hk_sha256_final(&c, d);
    static const struct hk_sha256_ctx zero;
    cr_expect(memcmp(&c, &zero, sizeof c) == 0);
}
