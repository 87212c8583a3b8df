/* SPDX-License-Identifier: MIT
 * libFuzzer target: the signature header parsers (Stripe-Signature,
 * webhook-signature, the generic template) on the raw bytes, then whole
 * verifications with the input's first lines as header values and the
 * rest as the body, for fixed stripe, standard-webhooks, generic hmac,
 * twilio and twitch sources. Spans must lie inside the input and counts
 * within their bounds; a verdict must be one of the reasons, with a
 * matched secret exactly when it is ok; streaming the body in two pieces
 * must give the one-shot verdict; and what hk_sign writes must verify. */
#include <stdlib.h>
#include <string.h>

#include "core/buf.h"
#include "core/crypto.h"
#include "ingress/verify.h"

#define NOW 1700000000
#define FIELDS 3

static struct hk_source src[5];
static uint8_t keys[5][16];

static void hmac_secret(struct hk_source *s, int i, enum hk_md md, const char *key)
{
    size_t n = strlen(key);
    memcpy(keys[i], key, n);
    s->secrets[0].key = keys[i];
    s->secrets[0].len = n;
    hk_hmac_key_init(&s->secrets[0].hmac, md, key, n);
    s->nsecrets = 1;
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc;
    (void)argv;
    if (hk_crypto_init(NULL, 0) < 0)
        abort();
    /* Wide windows: fuzzed timestamps get past the window to the MACs. */
    for (int i = 0; i < 5; i++)
        src[i].tolerance_s = 100000000000;
    src[0].scheme = HK_SCHEME_STRIPE;
    hmac_secret(&src[0], 0, HK_MD_SHA256, "whsec_fuzz");
    src[1].scheme = HK_SCHEME_STANDARD;
    hmac_secret(&src[1], 1, HK_MD_SHA256, "std-fuzz-key");
    /* RFC 8032 TEST 1's public key, beside the HMAC secret. */
    static uint8_t pub[32] = {0xd7, 0x5a, 0x98, 0x01, 0x82, 0xb1, 0x0a, 0xb7, 0xd5, 0x4b, 0xfe,
                              0xd3, 0xc9, 0x64, 0x07, 0x3a, 0x0e, 0xe1, 0x72, 0xf3, 0xda, 0xa6,
                              0x23, 0x25, 0xaf, 0x02, 0x1a, 0x68, 0xf7, 0x07, 0x51, 0x1a};
    src[1].secrets[1].key = pub;
    src[1].secrets[1].len = 32;
    src[1].secrets[1].ed25519 = true;
    src[1].nsecrets = 2;
    src[2].scheme = HK_SCHEME_HMAC;
    src[2].algorithm = HK_MD_SHA512;
    src[2].encoding = HK_ENC_BASE64;
    src[2].header = (char *)"x-sig";
    src[2].prefix = (char *)"v1=";
    src[2].timestamp_header = (char *)"x-ts";
    src[2].id_header = (char *)"x-id";
    src[2].template = (char *)"{id}.{timestamp}.{body}!";
    hmac_secret(&src[2], 2, HK_MD_SHA512, "hmac-fuzz");
    src[3].scheme = HK_SCHEME_TWILIO;
    src[3].public_url = (char *)"https://hooks.example.com/hooks/twilio?x=1";
    hmac_secret(&src[3], 3, HK_MD_SHA1, "twilio-fuzz");
    src[4].scheme = HK_SCHEME_TWITCH;
    hmac_secret(&src[4], 4, HK_MD_SHA256, "twitch-fuzz");
    return 0;
}

/* The header names each source reads, in the order of the input's fields. */
static const char *const names[5][FIELDS] = {
    {"stripe-signature", NULL, NULL},
    {"webhook-id", "webhook-timestamp", "webhook-signature"},
    {"x-sig", "x-ts", "x-id"},
    {"x-twilio-signature", NULL, NULL},
    {"twitch-eventsub-message-id", "twitch-eventsub-message-timestamp", "twitch-eventsub-message-signature"},
};

static void inside(const char *base, size_t n, const struct hk_sig_item *it)
{
    if (it->p < base || it->len > n || it->p + it->len > base + n)
        abort();
}

static void parsers(const char *v, size_t n)
{
    struct hk_sig_item items[HK_VERIFY_SIGS_MAX];
    uint8_t kinds[HK_VERIFY_SIGS_MAX];
    int64_t t = -1;
    int k = hk_parse_stripe(v, n, &t, items, HK_VERIFY_SIGS_MAX);
    if (k < -1 || k > HK_VERIFY_SIGS_MAX)
        abort();
    for (int i = 0; i < k; i++) {
        inside(v, n, &items[i]);
        if (!items[i].len)
            abort();
    }
    if (k >= 0 && (t < 0 || t > 999999999999))
        abort();
    k = hk_parse_std_sigs(v, n, items, kinds, HK_VERIFY_SIGS_MAX);
    if (k < -1 || k > HK_VERIFY_SIGS_MAX)
        abort();
    for (int i = 0; i < k; i++) {
        inside(v, n, &items[i]);
        if (!items[i].len || (kinds[i] != 1 && kinds[i] != 2) || memchr(items[i].p, ' ', items[i].len))
            abort();
    }

    /* The template is a C string: up to the first NUL. */
    char *tpl = malloc(n + 1);
    if (!tpl)
        return;
    memcpy(tpl, v, n);
    tpl[n] = '\0';
    char pre[64], post[64];
    size_t pl = 0, ql = 0;
    for (int caps = 0; caps < 2; caps++) {
        size_t cap = caps ? 8 : sizeof pre;
        if (hk_template_expand(tpl, "1700000000", 10, "id-7", 4, pre, cap, &pl, post, cap, &ql) == 0) {
            if (pl >= cap || ql >= cap || strlen(pre) != pl || strlen(post) != ql || !strstr(tpl, "{body}"))
                abort();
        }
    }
    free(tpl);
}

static void verify(const struct hk_source *s, const struct hk_hdrs *h, const char *body, size_t n, size_t cut)
{
    struct hk_verify v;
    enum hk_vreason r = hk_verify_all(&v, s, h, body, n, NOW);
    if ((unsigned)r >= HK_VR__COUNT || r != v.reason)
        abort();
    if (r == HK_VR_OK ? v.matched < 0 || (size_t)v.matched >= s->nsecrets : v.matched != -1)
        abort();
    if (r == HK_VR_TIMESTAMP && v.skew_s <= s->tolerance_s && v.skew_s >= -s->tolerance_s)
        abort();
    if (v.header && !*v.header)
        abort();
    /* The same, streamed in two pieces. */
    struct hk_verify w;
    if (hk_verify_begin(&w, s, h, NOW) == HK_VR_OK) {
        hk_verify_update(&w, body, cut);
        hk_verify_update(&w, body + cut, n - cut);
    }
    if (hk_verify_finish(&w, body, n) != r || w.matched != v.matched)
        abort();
    hk_verify_end(&w);
}

/* hk_sign's output, as headers, must verify. */
static void round_trip(const struct hk_source *s, const char *body, size_t n)
{
    struct hk_buf out = HK_BUF_INIT;
    char err[160];
    if (hk_sign(s, body, n, NOW, "fuzz-id", NULL, &out, err, sizeof err) == 0) {
        struct hk_hdr hv[8];
        size_t nh = 0;
        for (size_t i = 0; i < out.len && nh < 8;) {
            const char *line = out.p + i, *eol = memmem(line, out.len - i, "\r\n", 2), *colon;
            if (!eol || !(colon = memchr(line, ':', (size_t)(eol - line))))
                abort();
            hv[nh].name = line;
            hv[nh].name_len = (size_t)(colon - line);
            hv[nh].value = colon + 2;
            hv[nh].value_len = (size_t)(eol - colon - 2);
            nh++;
            i = (size_t)(eol - out.p) + 2;
        }
        struct hk_hdr_list l = {hv, nh};
        struct hk_hdrs h = {hk_hdr_list_get, &l};
        struct hk_verify v;
        if (hk_verify_all(&v, s, &h, body, n, NOW) != HK_VR_OK || v.matched != 0)
            abort();
    }
    hk_buf_free(&out);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    /* A copy of exactly `size` bytes: ASan sees any read past the end. */
    char *v = malloc(size ? size : 1);
    if (!v)
        return 0;
    memcpy(v, data, size);
    parsers(v, size);

    /* Lines 1..FIELDS are header values, the rest is the body. */
    const char *field[FIELDS];
    size_t flen[FIELDS], at = 0;
    for (int i = 0; i < FIELDS; i++) {
        const char *nl = memchr(v + at, '\n', size - at);
        size_t end = nl ? (size_t)(nl - v) : size;
        field[i] = v + at;
        flen[i] = end - at;
        at = nl ? end + 1 : size;
    }
    const char *body = v + at;
    size_t n = size - at, cut = n ? (size_t)data[0] % (n + 1) : 0;
    for (int s = 0; s < 5; s++) {
        struct hk_hdr hv[FIELDS + 1];
        size_t nh = 0;
        for (int i = 0; i < FIELDS; i++) {
            if (!names[s][i])
                continue;
            hv[nh] = (struct hk_hdr){names[s][i], field[i], strlen(names[s][i]), flen[i]};
            nh++;
        }
        /* Input starting with '!': the first header also sent twice. */
        if (size && data[0] == '!' && nh)
            hv[nh++] = hv[0];
        struct hk_hdr_list l = {hv, nh};
        struct hk_hdrs h = {hk_hdr_list_get, &l};
        verify(&src[s], &h, body, n, cut);
        round_trip(&src[s], body, n);
    }
    free(v);
    return 0;
}
