/* SPDX-License-Identifier: MIT
 * POST /hooks/{source} end to end (docs/ingress.md): every scheme signed
 * here by an independent implementation (libcrypto's HMAC, SHA-256 and
 * ed25519 called directly, never hookd's own code), the bytes kept exactly,
 * refusals and their reasons, handshakes, dedup (also under concurrency
 * and, on PostgreSQL, across two processes on one schema), limits, SIGHUP
 * reloads, metrics, hostile input, and `hookd sign` / `hookd verify`.
 * What touches the store runs on SQLite and PostgreSQL; what only
 * exercises the transport or the verifier runs on SQLite. */
#include <criterion/criterion.h>

#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <inttypes.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <openssl/evp.h>
#include <openssl/hmac.h>

#include "../prom.h"
#include "harness.h"

static struct hk_server srv, srv2;
static char dir[256];          /* this test's sources files and secret files */

static int rm_entry(const char *path, const struct stat *sb, int flag, struct FTW *ftw)
{
    (void)sb;
    (void)flag;
    (void)ftw;
    remove(path);
    return 0;
}

/* Made on first use rather than by .init: a skipped test runs no .fini. */
static void make_dir(void)
{
    if (dir[0])
        return;
    const char *base = access("/dev/shm", W_OK) == 0 ? "/dev/shm" : "/tmp";
    snprintf(dir, sizeof dir, "%s/hookd-ingress-XXXXXX", base);
    if (!mkdtemp(dir)) {
        int e = errno;
        dir[0] = 0;
        cr_assert_fail("mkdtemp: %s", strerror(e));
    }
}

static void teardown(void)
{
    hk_server_cleanup(&srv);
    hk_server_cleanup(&srv2);
    if (dir[0] && !getenv("HK_KEEP_TMP"))
        nftw(dir, rm_entry, 8, FTW_DEPTH | FTW_PHYS);
    dir[0] = 0;
}

TestSuite(ingress, .fini = teardown, .timeout = 90);

static void sqlite_only(void)
{
    if (hk_store_is_pg())
        cr_skip_test("store-independent: the integ suite runs it on SQLite");
}

/* ---- secrets (distinctive, so that a leak into a response is found) ---- */

#define GH_SECRET "gh-Secret-7c1e94b2a0"
#define GITEA_SECRET "gitea-secret-51d0e8"
#define GITLAB_TOKEN "glpat-token-8e2f61c3"
#define STRIPE_SECRET "whsec_stripeA1b2c3d4e5"
#define STRIPE_OLD "whsec_stripeOld9z8y7x6"
#define SHOPIFY_SECRET "shpss_0a1b2c3d4e5f"
#define SLACK_SECRET "slack-signing-6f7e8d9c"
#define STD_SECRET "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"   /* the Standard Webhooks example */
#define TWITCH_SECRET "twitch-secret-0123456789"
#define ZOOM_SECRET "zoom-secret-token-ab12cd"
#define META_SECRET "meta-app-secret-cd34ef"
#define META_VERIFY "meta-verify-ef56ab"
#define TWILIO_TOKEN "twilio-auth-token-9a8b7c"
#define TWILIO_URL "https://hooks.example.com/hooks/twilio"
#define HMAC_SECRET "generic-hmac-key-77aa11"
#define BIN_SECRET "bin-sha512-key-3c3c5d"
#define TOKEN_SECRET "token-value-1f2e3d4c"
/* Base64 of 32 bytes no key of these tests signs: a well-formed v1. */
#define FORGED_V1 "Zm9yZ2VkIHNpZ25hdHVyZSBvZiAzMiBieXRlcyEhISE="

/* ed25519 private keys (seeds): fixed, so the public keys are too. */
static const unsigned char DISCORD_SEED[32] = {
    0x9d, 0x61, 0xb1, 0x9d, 0xef, 0xfd, 0x5a, 0x60, 0xba, 0x84, 0x4a, 0xf4, 0x92, 0xec, 0x2c, 0xc4,
    0x44, 0x49, 0xc5, 0x69, 0x7b, 0x32, 0x69, 0x19, 0x70, 0x3b, 0xac, 0x03, 0x1c, 0xae, 0x7f, 0x60};
static const unsigned char STD_SEED[32] = {
    0x4c, 0xcd, 0x08, 0x9b, 0x28, 0xff, 0x96, 0xda, 0x9d, 0xb6, 0xc3, 0x46, 0xec, 0x11, 0x4e, 0x0f,
    0x5b, 0x8a, 0x31, 0x9f, 0x35, 0xab, 0xa6, 0x24, 0xda, 0x8c, 0xf6, 0xed, 0x4f, 0xb8, 0xa6, 0xfb};

/* ---- an independent signer: libcrypto directly ---- */

struct bytes {
    unsigned char *p;
    size_t n, cap;
};

static void bput(struct bytes *b, const void *p, size_t n)
{
    if (b->n + n + 1 > b->cap) {
        size_t cap = b->cap ? b->cap : 256;
        while (cap < b->n + n + 1)
            cap *= 2;
        b->p = realloc(b->p, cap);
        cr_assert(b->p != NULL, "out of memory");
        b->cap = cap;
    }
    if (n)
        memcpy(b->p + b->n, p, n);
    b->n += n;
    b->p[b->n] = 0;
}

static void bputs(struct bytes *b, const char *s)
{
    bput(b, s, strlen(s));
}

static void bfree(struct bytes *b)
{
    free(b->p);
    memset(b, 0, sizeof *b);
}

static size_t hmac_of(const EVP_MD *md, const void *key, size_t klen, const void *p, size_t n,
                      unsigned char out[EVP_MAX_MD_SIZE])
{
    unsigned int len = 0;
    cr_assert(HMAC(md, key, (int)klen, p, n, out, &len) != NULL, "HMAC failed");
    return len;
}

static void to_hex(const unsigned char *p, size_t n, char *out)
{
    for (size_t i = 0; i < n; i++)
        sprintf(out + 2 * i, "%02x", p[i]);
    out[2 * n] = 0;
}

static void to_b64(const unsigned char *p, size_t n, char *out)
{
    EVP_EncodeBlock((unsigned char *)out, p, (int)n);
}

/* Standard base64 (with padding) to bytes; the decoded length. */
static size_t from_b64(const char *s, unsigned char *out)
{
    size_t len = strlen(s);
    int n = EVP_DecodeBlock(out, (const unsigned char *)s, (int)len);
    cr_assert(n >= 0, "bad base64 %s", s);
    while (len && s[len - 1] == '=')
        len--, n--;
    return (size_t)n;
}

/* HMAC(md, key, msg) as lower-case hex / standard base64 into out. */
static void hmac_hex(const EVP_MD *md, const char *key, const void *p, size_t n, char *out)
{
    unsigned char m[EVP_MAX_MD_SIZE];
    to_hex(m, hmac_of(md, key, strlen(key), p, n, m), out);
}

static void hmac_b64(const EVP_MD *md, const void *key, size_t klen, const void *p, size_t n, char *out)
{
    unsigned char m[EVP_MAX_MD_SIZE];
    to_b64(m, hmac_of(md, key, klen, p, n, m), out);
}

static void sha256_hex(const void *p, size_t n, char out[65])
{
    unsigned char md[EVP_MAX_MD_SIZE];
    unsigned int len = 0;
    cr_assert(EVP_Digest(p, n, md, &len, EVP_sha256(), NULL) == 1 && len == 32, "SHA-256 failed");
    to_hex(md, 32, out);
}

static EVP_PKEY *ed_key(const unsigned char seed[32])
{
    EVP_PKEY *k = EVP_PKEY_new_raw_private_key(EVP_PKEY_ED25519, NULL, seed, 32);
    cr_assert(k != NULL, "EVP_PKEY_new_raw_private_key(ED25519) failed");
    return k;
}

static void ed_public(const unsigned char seed[32], unsigned char pub[32])
{
    EVP_PKEY *k = ed_key(seed);
    size_t n = 32;
    cr_assert(EVP_PKEY_get_raw_public_key(k, pub, &n) == 1 && n == 32, "ed25519 public key");
    EVP_PKEY_free(k);
}

static void ed_sign(const unsigned char seed[32], const void *msg, size_t n, unsigned char sig[64])
{
    EVP_PKEY *k = ed_key(seed);
    EVP_MD_CTX *c = EVP_MD_CTX_new();
    size_t sl = 64;
    cr_assert(c && EVP_DigestSignInit(c, NULL, NULL, NULL, k) == 1 &&
                  EVP_DigestSign(c, sig, &sl, msg, n) == 1 && sl == 64,
              "ed25519 signing failed");
    EVP_MD_CTX_free(c);
    EVP_PKEY_free(k);
}

/* ---- request headers: a growable NULL-terminated list ---- */

struct hdrs {
    char **v;
    size_t n, cap;
};

__attribute__((format(printf, 2, 3))) static void hadd(struct hdrs *h, const char *fmt, ...)
{
    if (h->n + 2 > h->cap) {
        h->cap = h->cap ? 2 * h->cap : 16;
        h->v = realloc(h->v, h->cap * sizeof *h->v);
        cr_assert(h->v != NULL, "out of memory");
    }
    va_list ap;
    va_start(ap, fmt);
    int rc = vasprintf(&h->v[h->n], fmt, ap);
    va_end(ap);
    cr_assert(rc >= 0, "out of memory");
    h->v[++h->n] = NULL;
}

static void hfree(struct hdrs *h)
{
    for (size_t i = 0; i < h->n; i++)
        free(h->v[i]);
    free(h->v);
    memset(h, 0, sizeof *h);
}

/* The value of header `name` in the list (case-insensitive), or NULL. */
static const char *hval(const struct hdrs *h, const char *name)
{
    size_t n = strlen(name);
    for (size_t i = 0; i < h->n; i++)
        if (strncasecmp(h->v[i], name, n) == 0 && h->v[i][n] == ':')
            return h->v[i] + n + 1 + (h->v[i][n + 1] == ' ');
    return NULL;
}

/* ---- each provider's signature, as the provider computes it ---- */

static void sign_github(struct hdrs *h, const char *secret, const void *body, size_t n)
{
    char hex[EVP_MAX_MD_SIZE * 2 + 1];
    hmac_hex(EVP_sha256(), secret, body, n, hex);
    hadd(h, "X-Hub-Signature-256: sha256=%s", hex);
}

static void sign_github_sha1(struct hdrs *h, const char *secret, const void *body, size_t n)
{
    char hex[EVP_MAX_MD_SIZE * 2 + 1];
    hmac_hex(EVP_sha1(), secret, body, n, hex);
    hadd(h, "X-Hub-Signature: sha1=%s", hex);
}

/* Stripe: v1 = hex HMAC-SHA256(the whole whsec_ string, "<t>.<body>"). */
static void stripe_v1(const char *secret, int64_t t, const void *body, size_t n, char *hex)
{
    struct bytes m = {0};
    char ts[32];
    snprintf(ts, sizeof ts, "%" PRId64 ".", t);
    bputs(&m, ts);
    bput(&m, body, n);
    hmac_hex(EVP_sha256(), secret, m.p, m.n, hex);
    bfree(&m);
}

static void sign_stripe(struct hdrs *h, const char *secret, int64_t t, const void *body, size_t n)
{
    char hex[EVP_MAX_MD_SIZE * 2 + 1];
    stripe_v1(secret, t, body, n, hex);
    hadd(h, "Stripe-Signature: t=%" PRId64 ",v1=%s", t, hex);
}

/* "<prefix><t>:<body>" signed with HMAC-SHA256 in hex: Slack ("v0:") and Zoom ("v0:"). */
static void v0_hex(const char *secret, int64_t t, const void *body, size_t n, char *hex)
{
    struct bytes m = {0};
    char ts[40];
    snprintf(ts, sizeof ts, "v0:%" PRId64 ":", t);
    bputs(&m, ts);
    bput(&m, body, n);
    hmac_hex(EVP_sha256(), secret, m.p, m.n, hex);
    bfree(&m);
}

static void sign_slack(struct hdrs *h, const char *secret, int64_t t, const void *body, size_t n)
{
    char hex[EVP_MAX_MD_SIZE * 2 + 1];
    v0_hex(secret, t, body, n, hex);
    hadd(h, "X-Slack-Request-Timestamp: %" PRId64, t);
    hadd(h, "X-Slack-Signature: v0=%s", hex);
}

static void sign_zoom(struct hdrs *h, const char *secret, int64_t t, const void *body, size_t n)
{
    char hex[EVP_MAX_MD_SIZE * 2 + 1];
    v0_hex(secret, t, body, n, hex);
    hadd(h, "x-zm-request-timestamp: %" PRId64, t);
    hadd(h, "x-zm-signature: v0=%s", hex);
}

/* Standard Webhooks: "<id>.<t>.<body>"; v1 = base64 HMAC-SHA256 keyed with
 * the base64-decoded secret, v1a = base64 ed25519. `prefix` is "webhook"
 * or "svix"; `seed` NULL signs v1. */
static void std_sig(const char *id, int64_t t, const void *body, size_t n, const unsigned char *seed, char *out)
{
    struct bytes m = {0};
    char pre[160];
    snprintf(pre, sizeof pre, "%s.%" PRId64 ".", id, t);
    bputs(&m, pre);
    bput(&m, body, n);
    if (seed) {
        unsigned char sig[64];
        ed_sign(seed, m.p, m.n, sig);
        strcpy(out, "v1a,");
        to_b64(sig, 64, out + 4);
    } else {
        unsigned char key[64];
        size_t klen = from_b64(STD_SECRET + 6, key);
        strcpy(out, "v1,");
        hmac_b64(EVP_sha256(), key, klen, m.p, m.n, out + 3);
    }
    bfree(&m);
}

static void sign_std(struct hdrs *h, const char *prefix, const char *id, int64_t t, const void *body, size_t n,
                     const unsigned char *seed)
{
    char sig[200];
    std_sig(id, t, body, n, seed, sig);
    hadd(h, "%s-id: %s", prefix, id);
    hadd(h, "%s-timestamp: %" PRId64, prefix, t);
    hadd(h, "%s-signature: %s", prefix, sig);
}

/* Discord: hex ed25519 over "<timestamp><body>". */
static void sign_discord(struct hdrs *h, int64_t t, const void *body, size_t n)
{
    struct bytes m = {0};
    char ts[32], hex[129];
    snprintf(ts, sizeof ts, "%" PRId64, t);
    bputs(&m, ts);
    bput(&m, body, n);
    unsigned char sig[64];
    ed_sign(DISCORD_SEED, m.p, m.n, sig);
    to_hex(sig, 64, hex);
    hadd(h, "X-Signature-Ed25519: %s", hex);
    hadd(h, "X-Signature-Timestamp: %s", ts);
    bfree(&m);
}

/* Twitch EventSub: sha256= hex HMAC-SHA256 over id + timestamp + body,
 * the timestamp as Twitch writes it (RFC 3339, nanoseconds). */
static void sign_twitch(struct hdrs *h, const char *id, int64_t t, const char *type, const void *body, size_t n)
{
    char ts[64], hex[EVP_MAX_MD_SIZE * 2 + 1];
    time_t tt = (time_t)t;
    struct tm tm;
    gmtime_r(&tt, &tm);
    strftime(ts, sizeof ts, "%Y-%m-%dT%H:%M:%S.634234626Z", &tm);
    struct bytes m = {0};
    bputs(&m, id);
    bputs(&m, ts);
    bput(&m, body, n);
    hmac_hex(EVP_sha256(), TWITCH_SECRET, m.p, m.n, hex);
    hadd(h, "Twitch-Eventsub-Message-Id: %s", id);
    hadd(h, "Twitch-Eventsub-Message-Retry: 0");
    hadd(h, "Twitch-Eventsub-Message-Type: %s", type);
    hadd(h, "Twitch-Eventsub-Message-Timestamp: %s", ts);
    hadd(h, "Twitch-Eventsub-Message-Signature: sha256=%s", hex);
    hadd(h, "Twitch-Eventsub-Subscription-Type: channel.follow");
    hadd(h, "Twitch-Eventsub-Subscription-Version: 2");
    bfree(&m);
}

/* Twilio: base64 HMAC-SHA1 over the URL and then each POST parameter's
 * name and value, decoded, sorted by name. `params` alternates names and
 * values, already sorted. */
static void sign_twilio(struct hdrs *h, const char *const *params)
{
    struct bytes m = {0};
    bputs(&m, TWILIO_URL);
    for (size_t i = 0; params[i]; i++)
        bputs(&m, params[i]);
    char b64[64];
    hmac_b64(EVP_sha1(), TWILIO_TOKEN, strlen(TWILIO_TOKEN), m.p, m.n, b64);
    hadd(h, "X-Twilio-Signature: %s", b64);
    bfree(&m);
}

/* The generic source "generic": prefix v1=, hex HMAC-SHA256 over "<t>.<body>". */
static void sign_generic(struct hdrs *h, int64_t t, const void *body, size_t n)
{
    struct bytes m = {0};
    char ts[32], hex[EVP_MAX_MD_SIZE * 2 + 1];
    snprintf(ts, sizeof ts, "%" PRId64, t);
    bputs(&m, ts);
    bputs(&m, ".");
    bput(&m, body, n);
    hmac_hex(EVP_sha256(), HMAC_SECRET, m.p, m.n, hex);
    hadd(h, "X-Timestamp: %s", ts);
    hadd(h, "X-Signature: v1=%s", hex);
    bfree(&m);
}

/* The generic source "bin": base64 HMAC-SHA512 over the body alone. */
static void sign_bin(struct hdrs *h, const void *body, size_t n)
{
    char b64[EVP_MAX_MD_SIZE * 2];
    hmac_b64(EVP_sha512(), BIN_SECRET, strlen(BIN_SECRET), body, n, b64);
    hadd(h, "X-Bin-Signature: %s", b64);
}

/* ---- the sources file and the server ---- */

static void write_text(const char *path, const char *text)
{
    char tmp[400];
    snprintf(tmp, sizeof tmp, "%s.tmp", path);
    FILE *f = fopen(tmp, "w");
    cr_assert(f != NULL, "fopen %s: %s", tmp, strerror(errno));
    fputs(text, f);
    cr_assert(fclose(f) == 0, "write %s", tmp);
    /* Atomic: a reload never reads half a file. */
    cr_assert(rename(tmp, path) == 0, "rename %s: %s", path, strerror(errno));
}

static const char *in_dir(const char *name)
{
    static char ring[8][320];
    static unsigned k;
    char *p = ring[k++ % 8];
    make_dir();
    snprintf(p, sizeof ring[0], "%s/%s", dir, name);
    return p;
}

/* Every scheme, each on a source named for it. `stripe_old`: the stripe
 * source still holds its old secret (rotation). */
static void write_main_sources(bool stripe_old)
{
    make_dir();
    char *text = NULL;
    int rc = asprintf(&text,
        "# every scheme hookd verifies (tests/integ/test_ingress.c)\n"
        "sources:\n"
        "  - name: gh\n"
        "    scheme: github\n"
        "    secrets: [{env: HKT_GITHUB}]\n"
        "  - name: gh-legacy\n"
        "    scheme: github\n"
        "    legacySha1: true\n"
        "    secrets: [{env: HKT_GITHUB}]\n"
        "  - name: gitea\n"
        "    scheme: gitea\n"
        "    secrets: [{file: \"%s/gitea.key\"}]\n"
        "  - name: gitlab\n"
        "    scheme: gitlab\n"
        "    secrets: [{env: HKT_GITLAB}]\n"
        "  - name: stripe\n"
        "    scheme: stripe\n"
        "    tolerance: 60s\n"
        "    secrets: [{env: HKT_STRIPE}%s]\n"
        "  - name: shopify\n"
        "    scheme: shopify\n"
        "    secrets: [{env: HKT_SHOPIFY}]\n"
        "  - name: slack\n"
        "    scheme: slack\n"
        "    secrets: [{env: HKT_SLACK}]\n"
        "  - name: std\n"
        "    scheme: standard-webhooks\n"
        "    secrets: [{env: HKT_STD}, {env: HKT_STD_PK}]\n"
        "  - name: std-pk\n"
        "    scheme: standard-webhooks\n"
        "    secrets: [{env: HKT_STD_PK}]\n"
        "  - name: discord\n"
        "    scheme: discord\n"
        "    secrets: [{env: HKT_DISCORD}]\n"
        "  - name: twitch\n"
        "    scheme: twitch\n"
        "    secrets: [{env: HKT_TWITCH}]\n"
        "  - name: zoom\n"
        "    scheme: zoom\n"
        "    secrets: [{env: HKT_ZOOM}]\n"
        "  - name: meta\n"
        "    scheme: meta\n"
        "    verifyToken: {env: HKT_META_VERIFY}\n"
        "    secrets: [{env: HKT_META}]\n"
        "  - name: twilio\n"
        "    scheme: twilio\n"
        "    publicUrl: " TWILIO_URL "\n"
        "    secrets: [{env: HKT_TWILIO}]\n"
        "  - name: generic\n"
        "    scheme: hmac\n"
        "    header: X-Signature\n"
        "    prefix: \"v1=\"\n"
        "    timestampHeader: X-Timestamp\n"
        "    template: \"{timestamp}.{body}\"\n"
        "    eventTypeHeader: X-Event-Name\n"
        "    deliveryIdHeader: X-Event-Id\n"
        "    secrets: [{env: HKT_HMAC}]\n"
        "  - name: bin\n"
        "    scheme: hmac\n"
        "    header: X-Bin-Signature\n"
        "    algorithm: sha512\n"
        "    encoding: base64\n"
        "    contentTypes: [application/octet-stream]\n"
        "    secrets: [{file: \"%s/bin.key\"}]\n"
        "  - name: token\n"
        "    scheme: token\n"
        "    header: X-Hook-Token\n"
        "    secrets: [{env: HKT_TOKEN}]\n"
        "  - name: open\n"
        "    scheme: none\n"
        "    trustedProxies: [127.0.0.0/8]\n"
        "    eventTypeField: kind\n"
        "    deliveryIdField: meta.id\n"
        "  - name: graph\n"
        "    scheme: token\n"
        "    header: X-Graph-Token\n"
        "    graphValidation: true\n"
        "    secrets: [{env: HKT_TOKEN}]\n"
        "  - name: small\n"
        "    scheme: none\n"
        "    maxBodyBytes: 1000\n"
        "  - name: rl\n"
        "    scheme: none\n"
        "    rateLimit: {rate: 1, burst: 2}\n",
        dir, stripe_old ? ", {env: HKT_STRIPE_OLD}" : "", dir);
    cr_assert(rc > 0, "out of memory");
    write_text(in_dir("sources.yaml"), text);
    free(text);
    /* File secrets lose their trailing newline. */
    write_text(in_dir("gitea.key"), GITEA_SECRET "\n");
    write_text(in_dir("bin.key"), BIN_SECRET "\n");
}

/* The environment of the main sources file, plus `more` (NULL-terminated,
 * may be NULL); the strings are static or the caller's. */
static void main_env(const char **env, size_t cap, const char *const *more)
{
    static char std_pk[128], discord[128], sources[320];
    unsigned char pub[32];
    char b64[64], hex[65];
    ed_public(STD_SEED, pub);
    to_b64(pub, 32, b64);
    snprintf(std_pk, sizeof std_pk, "HKT_STD_PK=whpk_%s", b64);
    ed_public(DISCORD_SEED, pub);
    to_hex(pub, 32, hex);
    snprintf(discord, sizeof discord, "HKT_DISCORD=%s", hex);
    snprintf(sources, sizeof sources, "HOOKD_SOURCES=%s", in_dir("sources.yaml"));
    static const char *const fixed[] = {
        "HKT_GITHUB=" GH_SECRET,       "HKT_GITLAB=" GITLAB_TOKEN, "HKT_STRIPE=" STRIPE_SECRET,
        "HKT_STRIPE_OLD=" STRIPE_OLD,  "HKT_SHOPIFY=" SHOPIFY_SECRET, "HKT_SLACK=" SLACK_SECRET,
        "HKT_STD=" STD_SECRET,         "HKT_TWITCH=" TWITCH_SECRET, "HKT_ZOOM=" ZOOM_SECRET,
        "HKT_META=" META_SECRET,       "HKT_META_VERIFY=" META_VERIFY, "HKT_TWILIO=" TWILIO_TOKEN,
        "HKT_HMAC=" HMAC_SECRET,       "HKT_TOKEN=" TOKEN_SECRET};
    size_t k = 0;
    for (size_t i = 0; i < sizeof fixed / sizeof fixed[0]; i++)
        env[k++] = fixed[i];
    env[k++] = std_pk;
    env[k++] = discord;
    env[k++] = sources;
    for (size_t i = 0; more && more[i]; i++) {
        cr_assert(k + 1 < cap, "too many env entries");
        env[k++] = more[i];
    }
    env[k] = NULL;
}

static void start_main(struct hk_server *s, const char *const *more)
{
    write_main_sources(true);
    const char *env[HK_MAX_ENV];
    main_env(env, HK_MAX_ENV - 1, more);
    hk_server_start(s, env);
}

/* ---- requests ---- */

static void deliver_from(const struct hk_server *s, const char *path, const struct hdrs *h, const void *body,
                         size_t n, const char *from, struct hk_resp *r)
{
    hk_context("POST %s", path);
    struct hk_req req = {.method = "POST", .path = path, .body = body ? body : "", .body_len = n,
                         .headers = h ? (const char *const *)h->v : NULL, .source = from};
    hk_do(s, NULL, &req, r);
}

static void deliver(const struct hk_server *s, const char *path, const struct hdrs *h, const void *body, size_t n,
                    struct hk_resp *r)
{
    deliver_from(s, path, h, body, n, NULL, r);
}

static json_t *get_json(const struct hk_server *s, const char *path, long status)
{
    hk_context("GET %s", path);
    struct hk_resp r;
    hk_get(s, path, &r);
    json_t *j = hk_assert_json(&r, status);
    hk_resp_free(&r);
    return j;
}

static size_t count_rows(const struct hk_server *s)
{
    json_t *a = get_json(s, "/api/webhooks?all=true", 200);
    cr_assert(json_is_array(a), "GET /api/webhooks?all=true is not an array");
    size_t n = json_array_size(a);
    json_decref(a);
    return n;
}

static bool json_bytes_eq(json_t *v, const void *p, size_t n)
{
    return json_is_string(v) && json_string_length(v) == n && memcmp(json_string_value(v), p, n) == 0;
}

/* {"id":N,"duplicate":dup} with this status (and N == want when want > 0). */
static int64_t expect_accepted(const struct hk_resp *r, long status, bool dup, int64_t want)
{
    json_t *j = hk_assert_json(r, status);
    json_t *id = json_object_get(j, "id"), *d = json_object_get(j, "duplicate");
    cr_assert(json_is_integer(id) && json_integer_value(id) > 0, "no positive id in %s", r->body);
    cr_assert(json_is_boolean(d) && json_boolean_value(d) == dup, "duplicate is not %s in %s",
              dup ? "true" : "false", r->body);
    cr_assert_eq(json_object_size(j), 2, "other members than id and duplicate: %s", r->body);
    int64_t v = json_integer_value(id);
    if (want > 0)
        cr_assert_eq(v, want, "id %" PRId64 ", expected the stored %" PRId64 ": %s", v, want, r->body);
    char loc[128], path[64];
    snprintf(path, sizeof path, "/api/webhooks/%" PRId64, v);
    cr_assert(hk_header(r, "Location", loc, sizeof loc), "%ld without Location:\n%s", status, r->head);
    cr_assert_str_eq(loc, path);
    json_decref(j);
    return v;
}

struct kept {
    const char *name;          /* lower-case */
    const char *value;         /* NULL: must not be kept */
};

struct expect {
    const char *source;
    const char *event_type;    /* "" when the delivery has none */
    const char *delivery_id;   /* NULL: null */
    const char *content_type;  /* as sent; NULL: none sent */
    const char *scheme;        /* NULL: verified is null (scheme none) */
    const char *secret;        /* the reference that verified */
    bool text;                 /* payload is the body as a string (else null) */
    const char *client;        /* NULL: 127.0.0.1 */
    struct kept kept[16];      /* ends at a NULL name */
};

/* A stored ingress row against what was sent. */
static void expect_row(json_t *o, int64_t id, const void *body, size_t n, const struct expect *e)
{
    char *dump = json_dumps(o, JSON_COMPACT);
    cr_assert(json_is_object(o), "not an object: %s", dump);
    cr_assert_eq(json_integer_value(json_object_get(o, "id")), id, "id: %s", dump);
    cr_assert_str_eq(hk_jstr(o, "source"), e->source, "source: %s", dump);
    cr_assert_str_eq(hk_jstr(o, "eventType"), e->event_type, "eventType: %s", dump);
    json_t *p = json_object_get(o, "payload");
    if (e->text)
        cr_assert(json_bytes_eq(p, body, n), "payload is not the body: %s", dump);
    else
        cr_assert(json_is_null(p), "payload of a binary body is not null: %s", dump);
    cr_assert(hk_matches(hk_jstr(o, "receivedAt"),
                         "^[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}\\.[0-9]{6}Z$"),
              "receivedAt: %s", dump);
    cr_assert_str_eq(hk_jstr(o, "processingMode"), "event-loop", "processingMode: %s", dump);
    cr_assert(json_is_true(json_object_get(o, "ingress")), "ingress is not true: %s", dump);
    json_t *ct = json_object_get(o, "contentType");
    if (e->content_type)
        cr_assert(json_is_string(ct) && strcmp(json_string_value(ct), e->content_type) == 0, "contentType: %s",
                  dump);
    else
        cr_assert(json_is_null(ct), "contentType is not null: %s", dump);
    json_t *di = json_object_get(o, "deliveryId");
    if (e->delivery_id)
        cr_assert(json_is_string(di) && strcmp(json_string_value(di), e->delivery_id) == 0,
                  "deliveryId is not \"%s\": %s", e->delivery_id, dump);
    else
        cr_assert(json_is_null(di), "deliveryId is not null: %s", dump);
    json_t *v = json_object_get(o, "verified");
    if (e->scheme) {
        cr_assert(json_is_object(v) && json_object_size(v) == 2, "verified is not {scheme, secret}: %s", dump);
        cr_assert_str_eq(hk_jstr(v, "scheme"), e->scheme, "verified.scheme: %s", dump);
        cr_assert_str_eq(hk_jstr(v, "secret"), e->secret, "verified.secret: %s", dump);
    } else {
        cr_assert(json_is_null(v), "verified is not null for scheme none: %s", dump);
    }
    json_t *h = json_object_get(o, "headers");
    cr_assert(json_is_object(h), "headers is not an object: %s", dump);
    const char *key;
    json_t *val;
    json_object_foreach(h, key, val)
    {
        cr_assert(json_is_string(val), "header %s is not a string: %s", key, dump);
        for (const char *c = key; *c; c++)
            cr_assert(!(*c >= 'A' && *c <= 'Z'), "header name %s is not lower-case: %s", key, dump);
    }
    /* Never kept, whatever the source: the client's credentials. */
    cr_assert(!json_object_get(h, "authorization") && !json_object_get(h, "cookie"),
              "Authorization or Cookie kept: %s", dump);
    for (size_t i = 0; e->kept[i].name; i++) {
        json_t *kv = json_object_get(h, e->kept[i].name);
        if (e->kept[i].value)
            cr_assert(json_is_string(kv) && strcmp(json_string_value(kv), e->kept[i].value) == 0,
                      "headers[\"%s\"] is not \"%s\": %s", e->kept[i].name, e->kept[i].value, dump);
        else
            cr_assert(!kv, "headers has \"%s\", which must not be kept: %s", e->kept[i].name, dump);
    }
    json_t *bb = json_object_get(o, "bodyBytes");
    cr_assert(json_is_integer(bb) && json_integer_value(bb) == (json_int_t)n, "bodyBytes is not %zu: %s", n, dump);
    char sha[65];
    sha256_hex(body, n, sha);
    cr_assert_str_eq(hk_jstr(o, "bodySha256"), sha, "bodySha256: %s", dump);
    cr_assert_str_eq(hk_jstr(o, "clientAddress"), e->client ? e->client : "127.0.0.1", "clientAddress: %s", dump);
    free(dump);
}

/* GET /api/webhooks/{id}/body: exactly the bytes, with the original type. */
static void expect_body(const struct hk_server *s, int64_t id, const void *body, size_t n, const char *ctype)
{
    char path[80];
    snprintf(path, sizeof path, "/api/webhooks/%" PRId64 "/body", id);
    hk_context("GET %s", path);
    struct hk_resp r;
    hk_get(s, path, &r);
    cr_assert_eq(r.status, 200, "GET %s: %ld %s", path, r.status, r.body);
    char ct[512];
    cr_assert(hk_header(&r, "Content-Type", ct, sizeof ct), "GET %s without Content-Type", path);
    cr_assert_str_eq(ct, ctype ? ctype : "application/octet-stream", "GET %s: Content-Type", path);
    cr_assert(r.body_len == n && memcmp(r.body, body, n) == 0, "GET %s: %zu bytes differ from the %zu sent", path,
              r.body_len, n);
    hk_resp_free(&r);
}

/* The whole check of an accepted delivery: 201 and its Location, the row,
 * the raw bytes. Returns the id. */
static int64_t expect_stored(const struct hk_server *s, const struct hk_resp *r, const void *body, size_t n,
                             const struct expect *e)
{
    hk_context("delivery to %s", e->source);
    int64_t id = expect_accepted(r, 201, false, 0);
    char path[64];
    snprintf(path, sizeof path, "/api/webhooks/%" PRId64, id);
    json_t *o = get_json(s, path, 200);
    expect_row(o, id, body, n, e);
    json_decref(o);
    expect_body(s, id, body, n, e->content_type);
    hk_context("%s", "");
    return id;
}

/* A refusal: problem+json with `reason`; none of `never` (secrets, the
 * MAC that would have verified) anywhere in the response. */
static json_t *expect_refused(const struct hk_resp *r, long status, const char *reason, const char *const *never)
{
    json_t *j = hk_assert_problem(r, status);
    cr_assert_str_eq(hk_jstr(j, "reason"), reason, "reason: %s", r->body);
    for (size_t i = 0; never && never[i]; i++) {
        cr_assert(!memmem(r->body, r->body_len, never[i], strlen(never[i])), "the response reveals \"%s\": %s",
                  never[i], r->body);
        cr_assert(!strstr(r->head, never[i]), "the response head reveals \"%s\":\n%s", never[i], r->head);
    }
    return j;
}

static void expect_refused_free(const struct hk_resp *r, long status, const char *reason, const char *const *never)
{
    json_decref(expect_refused(r, status, reason, never));
}

/* ---- metrics ---- */

struct scrape {
    struct hk_resp r;
    struct prom p;
};

static void scrape(const struct hk_server *s, struct scrape *m)
{
    hk_get(s, "/q/metrics", &m->r);
    cr_assert_eq(m->r.status, 200, "GET /q/metrics: %ld", m->r.status);
    char *err = prom_parse(m->r.body, &m->p);
    cr_assert(!err, "/q/metrics does not parse: %s", err ? err : "");
}

static void scrape_free(struct scrape *m)
{
    prom_free(&m->p);
    hk_resp_free(&m->r);
}

static double metric(const struct hk_server *s, const char *name, const char *labels)
{
    struct scrape m;
    scrape(s, &m);
    double v = prom_get(&m.p, name, labels);
    scrape_free(&m);
    return v;
}

/* ---- logs and signals ---- */

static int count_in(const char *hay, const char *needle)
{
    int n = 0;
    for (const char *p = hay; (p = strstr(p, needle)) != NULL; p += strlen(needle))
        n++;
    return n;
}

static int log_count(const struct hk_server *s, const char *needle)
{
    char *err = hk_server_stderr(s);
    int n = count_in(err, needle);
    free(err);
    return n;
}

/* SIGHUP, then wait (5 s at most) for one more `needle` line in stderr. */
static void reload(const struct hk_server *s, const char *needle)
{
    int before = log_count(s, needle);
    cr_assert(kill(s->pid, SIGHUP) == 0, "kill SIGHUP: %s", strerror(errno));
    int64_t deadline = hk_now_ms() + 5000;
    while (log_count(s, needle) == before) {
        if (hk_now_ms() > deadline) {
            char *err = hk_server_stderr(s);
            cr_assert_fail("no \"%s\" line within 5 s of SIGHUP; stderr:\n%s", needle, err);
        }
        hk_sleep_ms(10);
    }
}

/* The one stderr line holding `needle`; caller frees. */
static char *log_line(const struct hk_server *s, const char *needle)
{
    char *err = hk_server_stderr(s);
    char *p = strstr(err, needle);
    cr_assert(p, "no line with \"%s\" in stderr:\n%s", needle, err);
    char *start = p, *end = strchr(p, '\n');
    while (start > err && start[-1] != '\n')
        start--;
    char *line = strndup(start, end ? (size_t)(end - start) : strlen(start));
    free(err);
    return line;
}

/* Wait until the wall clock is early in a second, so that a request sent
 * now is checked within the same second; returns that second. */
static int64_t second_start(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    if (ts.tv_nsec > 200000000L)
        hk_sleep_ms((int)((1000000000L - ts.tv_nsec) / 1000000L) + 10);
    clock_gettime(CLOCK_REALTIME, &ts);
    return (int64_t)ts.tv_sec;
}

/* ==== every scheme: a signed delivery is stored byte-exact ==== */

Test(ingress, github_delivery_is_stored_byte_exact_without_credentials)
{
    start_main(&srv, NULL);
    const char *body = "{\"ref\":\"refs/heads/main\",\"after\":\"8c4a1f\","
                       "\"commits\":[{\"message\":\"h\xc3\xa9llo \xe2\x9c\x93\"}]}";
    size_t n = strlen(body);
    struct hdrs h = {0};
    hadd(&h, "Content-Type: application/json");
    hadd(&h, "User-Agent: GitHub-Hookshot/044aadd");
    hadd(&h, "X-GitHub-Event: push");
    hadd(&h, "X-GitHub-Delivery: 72d3162e-cc78-11e3-81ab-4c9367dc0958");
    hadd(&h, "X-GitHub-Hook-ID: 292430182");
    hadd(&h, "Authorization: Bearer client-credential-0b1c");
    hadd(&h, "Cookie: session=client-cookie-4d5e");
    /* Not a trusted proxy: the header is not believed. */
    hadd(&h, "X-Forwarded-For: 198.51.100.7");
    sign_github(&h, GH_SECRET, body, n);
    struct hk_resp r;
    deliver_from(&srv, "/hooks/gh", &h, body, n, "127.0.0.3", &r);
    struct expect e = {.source = "gh", .event_type = "push",
                       .delivery_id = "72d3162e-cc78-11e3-81ab-4c9367dc0958", .content_type = "application/json",
                       .scheme = "github", .secret = "env:HKT_GITHUB", .text = true, .client = "127.0.0.3",
                       .kept = {{"x-hub-signature-256", hval(&h, "X-Hub-Signature-256")},
                                {"x-github-event", "push"},
                                {"x-github-delivery", "72d3162e-cc78-11e3-81ab-4c9367dc0958"},
                                {"x-github-hook-id", "292430182"},
                                {"user-agent", "GitHub-Hookshot/044aadd"},
                                {"content-type", "application/json"}}};
    expect_stored(&srv, &r, body, n, &e);
    hk_resp_free(&r);
    hfree(&h);
    hk_finish(&srv);
}

Test(ingress, github_legacy_sha1_only_where_enabled)
{
    start_main(&srv, NULL);
    const char *body = "{\"zen\":\"Keep it logically awesome.\",\"hook_id\":1}";
    size_t n = strlen(body);
    struct hdrs h = {0};
    hadd(&h, "Content-Type: application/json");
    hadd(&h, "X-GitHub-Event: ping");
    hadd(&h, "X-GitHub-Delivery: legacy-0001");
    sign_github_sha1(&h, GH_SECRET, body, n);
    struct hk_resp r;
    deliver(&srv, "/hooks/gh-legacy", &h, body, n, &r);
    struct expect e = {.source = "gh-legacy", .event_type = "ping", .delivery_id = "legacy-0001",
                       .content_type = "application/json", .scheme = "github", .secret = "env:HKT_GITHUB",
                       .text = true, .kept = {{"x-hub-signature", hval(&h, "X-Hub-Signature")}}};
    expect_stored(&srv, &r, body, n, &e);
    hk_resp_free(&r);

    /* Without legacySha1 the sha1 header alone is not a signature. */
    deliver(&srv, "/hooks/gh", &h, body, n, &r);
    expect_refused_free(&r, 401, "missing_header", (const char *const[]){GH_SECRET, NULL});
    hk_resp_free(&r);
    cr_assert_eq(count_rows(&srv), 1);
    hfree(&h);
    hk_finish(&srv);
}

Test(ingress, gitea_secret_from_a_file)
{
    start_main(&srv, NULL);
    const char *body = "{\"ref\":\"refs/heads/dev\",\"repository\":{\"full_name\":\"o/r\"}}";
    size_t n = strlen(body);
    char hex[129];
    hmac_hex(EVP_sha256(), GITEA_SECRET, body, n, hex);
    struct hdrs h = {0};
    hadd(&h, "Content-Type: application/json");
    hadd(&h, "X-Gitea-Event: push");
    hadd(&h, "X-Gitea-Delivery: 9b2e3d5c-6f7a-4b8c-9d0e-1f2a3b4c5d6e");
    hadd(&h, "X-Gitea-Signature: %s", hex);
    struct hk_resp r;
    deliver(&srv, "/hooks/gitea", &h, body, n, &r);
    char ref[400];
    snprintf(ref, sizeof ref, "file:%s", in_dir("gitea.key"));
    struct expect e = {.source = "gitea", .event_type = "push", .delivery_id = "9b2e3d5c-6f7a-4b8c-9d0e-1f2a3b4c5d6e",
                       .content_type = "application/json", .scheme = "gitea", .secret = ref, .text = true,
                       .kept = {{"x-gitea-signature", hex}, {"x-gitea-event", "push"}}};
    expect_stored(&srv, &r, body, n, &e);
    hk_resp_free(&r);
    hfree(&h);
    hk_finish(&srv);
}

Test(ingress, gitlab_token_is_never_kept)
{
    start_main(&srv, NULL);
    const char *body = "{\"object_kind\":\"push\",\"ref\":\"refs/heads/main\"}";
    size_t n = strlen(body);
    struct hdrs h = {0};
    hadd(&h, "Content-Type: application/json");
    hadd(&h, "X-Gitlab-Event: Push Hook");
    hadd(&h, "X-Gitlab-Event-UUID: 13792a34-cac6-4fda-95a8-c58e00a3954e");
    hadd(&h, "X-Gitlab-Token: " GITLAB_TOKEN);
    struct hk_resp r;
    deliver(&srv, "/hooks/gitlab", &h, body, n, &r);
    struct expect e = {.source = "gitlab", .event_type = "Push Hook",
                       .delivery_id = "13792a34-cac6-4fda-95a8-c58e00a3954e", .content_type = "application/json",
                       .scheme = "gitlab", .secret = "env:HKT_GITLAB", .text = true,
                       .kept = {{"x-gitlab-token", NULL}, {"x-gitlab-event", "Push Hook"}}};
    int64_t id = expect_stored(&srv, &r, body, n, &e);
    hk_resp_free(&r);
    /* The token appears nowhere a reader of deliveries looks. */
    char path[64];
    snprintf(path, sizeof path, "/api/webhooks/%" PRId64, id);
    struct hk_resp g;
    hk_get(&srv, path, &g);
    cr_assert(!strstr(g.body, GITLAB_TOKEN), "the gitlab token is in %s", g.body);
    hk_resp_free(&g);
    hfree(&h);
    hk_finish(&srv);
}

Test(ingress, stripe_event_type_and_id_from_the_body)
{
    start_main(&srv, NULL);
    const char *body = "{\"id\":\"evt_1NG8Du2eZvKYlo2CUI79vXWy\",\"object\":\"event\",\"type\":"
                       "\"payment_intent.succeeded\",\"data\":{\"object\":{\"id\":\"pi_3\",\"amount\":2000}}}";
    size_t n = strlen(body);
    struct hdrs h = {0};
    hadd(&h, "Content-Type: application/json; charset=utf-8");
    hadd(&h, "User-Agent: Stripe/1.0 (+https://stripe.com/docs/webhooks)");
    sign_stripe(&h, STRIPE_SECRET, (int64_t)time(NULL), body, n);
    struct hk_resp r;
    deliver(&srv, "/hooks/stripe", &h, body, n, &r);
    struct expect e = {.source = "stripe", .event_type = "payment_intent.succeeded",
                       .delivery_id = "evt_1NG8Du2eZvKYlo2CUI79vXWy",
                       .content_type = "application/json; charset=utf-8", .scheme = "stripe",
                       .secret = "env:HKT_STRIPE", .text = true,
                       .kept = {{"stripe-signature", hval(&h, "Stripe-Signature")},
                                {"content-type", "application/json; charset=utf-8"}}};
    expect_stored(&srv, &r, body, n, &e);
    hk_resp_free(&r);
    hfree(&h);
    hk_finish(&srv);
}

Test(ingress, shopify_base64_signature)
{
    start_main(&srv, NULL);
    const char *body = "{\"id\":820982911946154508,\"email\":\"jon@example.com\",\"total_price\":\"199.00\"}";
    size_t n = strlen(body);
    char b64[100];
    hmac_b64(EVP_sha256(), SHOPIFY_SECRET, strlen(SHOPIFY_SECRET), body, n, b64);
    struct hdrs h = {0};
    hadd(&h, "Content-Type: application/json");
    hadd(&h, "X-Shopify-Topic: orders/create");
    hadd(&h, "X-Shopify-Webhook-Id: b54557e4-bdd9-4b37-8a5f-bf7d70bcd043");
    hadd(&h, "X-Shopify-Shop-Domain: example.myshopify.com");
    hadd(&h, "X-Shopify-Hmac-Sha256: %s", b64);
    struct hk_resp r;
    deliver(&srv, "/hooks/shopify", &h, body, n, &r);
    struct expect e = {.source = "shopify", .event_type = "orders/create",
                       .delivery_id = "b54557e4-bdd9-4b37-8a5f-bf7d70bcd043", .content_type = "application/json",
                       .scheme = "shopify", .secret = "env:HKT_SHOPIFY", .text = true,
                       .kept = {{"x-shopify-hmac-sha256", b64}, {"x-shopify-shop-domain", "example.myshopify.com"}}};
    expect_stored(&srv, &r, body, n, &e);
    hk_resp_free(&r);
    hfree(&h);
    hk_finish(&srv);
}

Test(ingress, slack_event_callback)
{
    start_main(&srv, NULL);
    const char *body = "{\"token\":\"z26uFbvR1xHJEdHE1OQiO6t8\",\"team_id\":\"T061EG9RZ\",\"type\":\"event_callback\","
                       "\"event_id\":\"Ev0PV52K21\",\"event\":{\"type\":\"app_mention\",\"text\":\"hi <@U0LAN0Z89>\"}}";
    size_t n = strlen(body);
    struct hdrs h = {0};
    hadd(&h, "Content-Type: application/json");
    sign_slack(&h, SLACK_SECRET, (int64_t)time(NULL), body, n);
    struct hk_resp r;
    deliver(&srv, "/hooks/slack", &h, body, n, &r);
    struct expect e = {.source = "slack", .event_type = "app_mention", .delivery_id = "Ev0PV52K21",
                       .content_type = "application/json", .scheme = "slack", .secret = "env:HKT_SLACK",
                       .text = true,
                       .kept = {{"x-slack-signature", hval(&h, "X-Slack-Signature")},
                                {"x-slack-request-timestamp", hval(&h, "X-Slack-Request-Timestamp")}}};
    expect_stored(&srv, &r, body, n, &e);
    hk_resp_free(&r);
    hfree(&h);
    hk_finish(&srv);
}

Test(ingress, standard_webhooks_hmac_ed25519_and_svix_names)
{
    start_main(&srv, NULL);
    int64_t now = (int64_t)time(NULL);
    struct hk_resp r;
    {
        const char *body = "{\"type\":\"invoice.paid\",\"timestamp\":\"2024-01-01T00:00:00Z\",\"data\":{\"n\":1}}";
        size_t n = strlen(body);
        struct hdrs h = {0};
        hadd(&h, "Content-Type: application/json");
        sign_std(&h, "webhook", "msg_2KWPBgLlAfxdpx2AI54pPJ85f4W", now, body, n, NULL);
        deliver(&srv, "/hooks/std", &h, body, n, &r);
        struct expect e = {.source = "std", .event_type = "invoice.paid",
                           .delivery_id = "msg_2KWPBgLlAfxdpx2AI54pPJ85f4W",
                           .content_type = "application/json", .scheme = "standard-webhooks", .secret = "env:HKT_STD",
                           .text = true,
                           .kept = {{"webhook-id", "msg_2KWPBgLlAfxdpx2AI54pPJ85f4W"},
                                    {"webhook-signature", hval(&h, "webhook-signature")}}};
        expect_stored(&srv, &r, body, n, &e);
        hk_resp_free(&r);
        hfree(&h);
    }
    {
        /* v1a: the asymmetric signature, checked with the whpk_ key. */
        const char *body = "{\"type\":\"invoice.voided\",\"data\":{\"n\":2}}";
        size_t n = strlen(body);
        struct hdrs h = {0};
        hadd(&h, "Content-Type: application/json");
        sign_std(&h, "webhook", "msg_ed25519_0001", now, body, n, STD_SEED);
        deliver(&srv, "/hooks/std", &h, body, n, &r);
        struct expect e = {.source = "std", .event_type = "invoice.voided", .delivery_id = "msg_ed25519_0001",
                           .content_type = "application/json", .scheme = "standard-webhooks",
                           .secret = "env:HKT_STD_PK", .text = true};
        expect_stored(&srv, &r, body, n, &e);
        hk_resp_free(&r);
        hfree(&h);
    }
    {
        /* Svix's names for the same headers; two signatures, the first
         * from a rotated-out key. */
        const char *body = "{\"type\":\"user.created\",\"data\":{\"id\":\"u_1\"}}";
        size_t n = strlen(body);
        char good[200];
        std_sig("msg_svix_0001", now, body, n, NULL, good);
        struct hdrs h = {0};
        hadd(&h, "Content-Type: application/json");
        hadd(&h, "svix-id: msg_svix_0001");
        hadd(&h, "svix-timestamp: %" PRId64, now);
        hadd(&h, "svix-signature: v1," FORGED_V1 " %s", good);
        deliver(&srv, "/hooks/std", &h, body, n, &r);
        struct expect e = {.source = "std", .event_type = "user.created", .delivery_id = "msg_svix_0001",
                           .content_type = "application/json", .scheme = "standard-webhooks", .secret = "env:HKT_STD",
                           .text = true, .kept = {{"svix-id", "msg_svix_0001"}}};
        expect_stored(&srv, &r, body, n, &e);
        hk_resp_free(&r);
        hfree(&h);
    }
    hk_finish(&srv);
}

Test(ingress, discord_ed25519_interaction)
{
    start_main(&srv, NULL);
    const char *body = "{\"type\":2,\"id\":\"1094230811562188800\",\"application_id\":\"1094230700000000000\","
                       "\"data\":{\"name\":\"ping\"}}";
    size_t n = strlen(body);
    struct hdrs h = {0};
    hadd(&h, "Content-Type: application/json");
    hadd(&h, "User-Agent: Discord-Interactions/1.0 (+https://discord.com)");
    sign_discord(&h, (int64_t)time(NULL), body, n);
    struct hk_resp r;
    deliver(&srv, "/hooks/discord", &h, body, n, &r);
    struct expect e = {.source = "discord", .event_type = "APPLICATION_COMMAND", .delivery_id = "1094230811562188800",
                       .content_type = "application/json", .scheme = "discord", .secret = "env:HKT_DISCORD",
                       .text = true, .kept = {{"x-signature-ed25519", hval(&h, "X-Signature-Ed25519")}}};
    expect_stored(&srv, &r, body, n, &e);
    hk_resp_free(&r);
    hfree(&h);
    hk_finish(&srv);
}

Test(ingress, twitch_notification)
{
    start_main(&srv, NULL);
    const char *body = "{\"subscription\":{\"id\":\"f1c2a387-161a-49f9-a165-0f21d7a4e1c4\",\"type\":\"channel.follow\","
                       "\"version\":\"2\",\"status\":\"enabled\"},\"event\":{\"user_id\":\"1337\",\"user_login\":"
                       "\"awesome_user\",\"broadcaster_user_id\":\"12826\"}}";
    size_t n = strlen(body);
    struct hdrs h = {0};
    hadd(&h, "Content-Type: application/json");
    sign_twitch(&h, "befa7b53-d79d-478f-86b9-120f112b044e", (int64_t)time(NULL), "notification", body, n);
    struct hk_resp r;
    deliver(&srv, "/hooks/twitch", &h, body, n, &r);
    struct expect e = {.source = "twitch", .event_type = "channel.follow",
                       .delivery_id = "befa7b53-d79d-478f-86b9-120f112b044e", .content_type = "application/json",
                       .scheme = "twitch", .secret = "env:HKT_TWITCH", .text = true,
                       .kept = {{"twitch-eventsub-message-signature", hval(&h, "Twitch-Eventsub-Message-Signature")},
                                {"twitch-eventsub-message-type", "notification"}}};
    expect_stored(&srv, &r, body, n, &e);
    hk_resp_free(&r);
    hfree(&h);
    hk_finish(&srv);
}

Test(ingress, zoom_and_meta_deliveries)
{
    start_main(&srv, NULL);
    struct hk_resp r;
    {
        const char *body = "{\"event\":\"meeting.started\",\"event_ts\":1626230691572,\"payload\":{\"account_id\":"
                           "\"AAAAAABBBB\",\"object\":{\"id\":\"1234567890\"}}}";
        size_t n = strlen(body);
        struct hdrs h = {0};
        hadd(&h, "Content-Type: application/json; charset=utf-8");
        hadd(&h, "x-zm-trackingid: v=2.0;clid=aw1;rid=4e2d");
        sign_zoom(&h, ZOOM_SECRET, (int64_t)time(NULL), body, n);
        deliver(&srv, "/hooks/zoom", &h, body, n, &r);
        struct expect e = {.source = "zoom", .event_type = "meeting.started", .delivery_id = NULL,
                           .content_type = "application/json; charset=utf-8", .scheme = "zoom",
                           .secret = "env:HKT_ZOOM", .text = true,
                           .kept = {{"x-zm-signature", hval(&h, "x-zm-signature")},
                                    {"x-zm-trackingid", "v=2.0;clid=aw1;rid=4e2d"}}};
        expect_stored(&srv, &r, body, n, &e);
        hk_resp_free(&r);
        hfree(&h);
    }
    {
        const char *body = "{\"object\":\"page\",\"entry\":[{\"id\":\"0\",\"time\":1712345678,\"changes\":[{\"field\":"
                           "\"feed\",\"value\":{\"item\":\"status\"}}]}]}";
        size_t n = strlen(body);
        struct hdrs h = {0};
        hadd(&h, "Content-Type: application/json");
        sign_github(&h, META_SECRET, body, n);
        deliver(&srv, "/hooks/meta", &h, body, n, &r);
        struct expect e = {.source = "meta", .event_type = "page", .delivery_id = NULL,
                           .content_type = "application/json", .scheme = "meta", .secret = "env:HKT_META",
                           .text = true, .kept = {{"x-hub-signature-256", hval(&h, "X-Hub-Signature-256")}}};
        expect_stored(&srv, &r, body, n, &e);
        hk_resp_free(&r);
        hfree(&h);
    }
    hk_finish(&srv);
}

Test(ingress, twilio_form_body)
{
    start_main(&srv, NULL);
    const char *body = "AccountSid=AC0123456789abcdef&Body=Hello+w%C3%B6rld+%26+more&From=%2B15551234567"
                       "&MessageSid=SM0001&To=%2B15557654321";
    size_t n = strlen(body);
    struct hdrs h = {0};
    hadd(&h, "Content-Type: application/x-www-form-urlencoded");
    hadd(&h, "I-Twilio-Idempotency-Token: 5c0b6c2e-1f0e-4a4e-8d52-6f1c2b3a4d5e");
    sign_twilio(&h, (const char *const[]){"AccountSid", "AC0123456789abcdef", "Body", "Hello w\xc3\xb6rld & more",
                                          "From", "+15551234567", "MessageSid", "SM0001", "To", "+15557654321", NULL});
    struct hk_resp r;
    deliver(&srv, "/hooks/twilio", &h, body, n, &r);
    struct expect e = {.source = "twilio", .event_type = "", .delivery_id = "5c0b6c2e-1f0e-4a4e-8d52-6f1c2b3a4d5e",
                       .content_type = "application/x-www-form-urlencoded", .scheme = "twilio",
                       .secret = "env:HKT_TWILIO", .text = true,
                       .kept = {{"x-twilio-signature", hval(&h, "X-Twilio-Signature")}}};
    expect_stored(&srv, &r, body, n, &e);
    hk_resp_free(&r);
    hfree(&h);
    hk_finish(&srv);
}

Test(ingress, generic_hmac_with_template_and_prefix)
{
    start_main(&srv, NULL);
    const char *body = "{\"order\":{\"id\":42,\"state\":\"created\"}}";
    size_t n = strlen(body);
    struct hdrs h = {0};
    hadd(&h, "Content-Type: application/json");
    hadd(&h, "X-Event-Name: order.created");
    hadd(&h, "X-Event-Id: ord-evt-0001");
    sign_generic(&h, (int64_t)time(NULL), body, n);
    struct hk_resp r;
    deliver(&srv, "/hooks/generic", &h, body, n, &r);
    struct expect e = {.source = "generic", .event_type = "order.created", .delivery_id = "ord-evt-0001",
                       .content_type = "application/json", .scheme = "hmac", .secret = "env:HKT_HMAC", .text = true,
                       .kept = {{"x-signature", hval(&h, "X-Signature")},
                                {"x-timestamp", hval(&h, "X-Timestamp")},
                                {"x-event-name", "order.created"},
                                {"x-event-id", "ord-evt-0001"}}};
    expect_stored(&srv, &r, body, n, &e);
    hk_resp_free(&r);

    /* The same signature without its prefix is not what the source sends. */
    struct hdrs h2 = {0};
    hadd(&h2, "Content-Type: application/json");
    hadd(&h2, "X-Event-Id: ord-evt-0002");
    const char *ts = hval(&h, "X-Timestamp"), *sig = hval(&h, "X-Signature");
    cr_assert(ts && sig && strlen(sig) > 3);
    hadd(&h2, "X-Timestamp: %s", ts);
    hadd(&h2, "X-Signature: %s", sig + 3);
    deliver(&srv, "/hooks/generic", &h2, body, n, &r);
    cr_assert_eq(r.status, 401, "a signature without its prefix: %ld %s", r.status, r.body);
    hk_resp_free(&r);
    hfree(&h2);
    hfree(&h);
    hk_finish(&srv);
}

Test(ingress, binary_body_is_kept_exactly_and_other_types_are_415)
{
    start_main(&srv, NULL);
    /* NUL bytes, invalid UTF-8 (a lone continuation byte, an overlong
     * form, a truncated sequence), and every byte value. */
    unsigned char body[300];
    static const unsigned char head[] = {0x00, 0xff, 0xfe, 'a', 0x00, 0xc0, 0xaf, 0x80, 0xe2, 0x82};
    memcpy(body, head, sizeof head);
    for (size_t i = sizeof head; i < sizeof body; i++)
        body[i] = (unsigned char)(i * 7);
    size_t n = sizeof body;
    struct hdrs h = {0};
    hadd(&h, "Content-Type: application/octet-stream");
    sign_bin(&h, body, n);
    struct hk_resp r;
    deliver(&srv, "/hooks/bin", &h, body, n, &r);
    char ref[400];
    snprintf(ref, sizeof ref, "file:%s", in_dir("bin.key"));
    struct expect e = {.source = "bin", .event_type = "", .delivery_id = NULL,
                       .content_type = "application/octet-stream", .scheme = "hmac", .secret = ref, .text = false,
                       .kept = {{"x-bin-signature", hval(&h, "X-Bin-Signature")}}};
    expect_stored(&srv, &r, body, n, &e);
    hk_resp_free(&r);
    hfree(&h);

    /* contentTypes: [application/octet-stream]: JSON is refused, signed or not. */
    const char *json = "{\"a\":1}";
    struct hdrs j = {0};
    hadd(&j, "Content-Type: application/json");
    sign_bin(&j, json, strlen(json));
    deliver(&srv, "/hooks/bin", &j, json, 0, &r);
    expect_refused_free(&r, 415, "unsupported_media_type", NULL);
    hk_resp_free(&r);
    hfree(&j);
    cr_assert_eq(count_rows(&srv), 1);
    hk_finish(&srv);
}

Test(ingress, token_scheme_and_scheme_none)
{
    start_main(&srv, NULL);
    struct hk_resp r;
    {
        const char *body = "plain text delivery\nsecond line\n";
        size_t n = strlen(body);
        struct hdrs h = {0};
        hadd(&h, "Content-Type: text/plain; charset=utf-8");
        hadd(&h, "X-Hook-Token: " TOKEN_SECRET);
        deliver(&srv, "/hooks/token", &h, body, n, &r);
        struct expect e = {.source = "token", .event_type = "", .delivery_id = NULL,
                           .content_type = "text/plain; charset=utf-8", .scheme = "token",
                           .secret = "env:HKT_TOKEN", .text = true, .kept = {{"x-hook-token", NULL}}};
        expect_stored(&srv, &r, body, n, &e);
        hk_resp_free(&r);
        hfree(&h);
    }
    {
        /* scheme none: nothing verified; event type and id from body
         * fields; the client behind a trusted proxy. */
        const char *body = "{\"kind\":\"thing.happened\",\"meta\":{\"id\":\"open-0001\"}}";
        size_t n = strlen(body);
        struct hdrs h = {0};
        hadd(&h, "Content-Type: application/json");
        hadd(&h, "X-Forwarded-For: 198.51.100.7, 127.0.0.9");
        deliver(&srv, "/hooks/open", &h, body, n, &r);
        struct expect e = {.source = "open", .event_type = "thing.happened", .delivery_id = "open-0001",
                           .content_type = "application/json", .scheme = NULL, .text = true,
                           .client = "198.51.100.7"};
        expect_stored(&srv, &r, body, n, &e);
        hk_resp_free(&r);
        hfree(&h);
    }
    {
        /* No Content-Type at all: stored as null, served as octet-stream. */
        const char *body = "no type";
        deliver(&srv, "/hooks/open", NULL, body, 0, &r);
        struct expect e = {.source = "open", .event_type = "", .delivery_id = NULL, .content_type = NULL,
                           .scheme = NULL, .text = false};
        expect_stored(&srv, &r, body, strlen(body), &e);
        hk_resp_free(&r);
    }
    {
        /* An envelope post keeps its old shape (six members) and has no
         * raw body. */
        int64_t id = hk_create(&srv, "envelope", "created", "{\"a\":1}");
        char path[80];
        snprintf(path, sizeof path, "/api/webhooks/%" PRId64 "/body", id);
        hk_get(&srv, path, &r);
        json_decref(expect_refused(&r, 404, "no_raw_body", NULL));
        hk_resp_free(&r);
    }
    hk_finish(&srv);
}

/* ==== refusals ==== */

Test(ingress, refusals_name_a_reason_and_never_the_secret_or_the_mac)
{
    sqlite_only();
    start_main(&srv, NULL);
    const char *body = "{\"ref\":\"refs/heads/main\"}";
    size_t n = strlen(body);
    char right[129];
    hmac_hex(EVP_sha256(), GH_SECRET, body, n, right);
    const char *never[] = {GH_SECRET, right, NULL};
    struct hk_resp r;

    hk_context("no signature header");
    struct hdrs h = {0};
    hadd(&h, "Content-Type: application/json");
    hadd(&h, "X-GitHub-Delivery: ref-1");
    deliver(&srv, "/hooks/gh", &h, body, n, &r);
    expect_refused_free(&r, 401, "missing_header", never);
    hk_resp_free(&r);
    hfree(&h);

    hk_context("a signature that is not sha256=<64 hex>");
    hadd(&h, "Content-Type: application/json");
    hadd(&h, "X-Hub-Signature-256: sha256=not-hex-at-all");
    deliver(&srv, "/hooks/gh", &h, body, n, &r);
    expect_refused_free(&r, 401, "malformed_header", never);
    hk_resp_free(&r);
    hfree(&h);

    hk_context("signed with another secret");
    hadd(&h, "Content-Type: application/json");
    sign_github(&h, "not-the-secret", body, n);
    deliver(&srv, "/hooks/gh", &h, body, n, &r);
    expect_refused_free(&r, 401, "no_matching_signature", never);
    hk_resp_free(&r);
    hfree(&h);

    hk_context("a tampered body");
    const char *tampered = "{\"ref\":\"refs/heads/evil\"}";
    char right2[129];
    hmac_hex(EVP_sha256(), GH_SECRET, tampered, strlen(tampered), right2);
    hadd(&h, "Content-Type: application/json");
    sign_github(&h, GH_SECRET, body, n);
    deliver(&srv, "/hooks/gh", &h, tampered, 0, &r);
    expect_refused_free(&r, 401, "no_matching_signature", (const char *const[]){GH_SECRET, right2, NULL});
    hk_resp_free(&r);
    hfree(&h);

    hk_context("stripe: a header without t= and v1=");
    hadd(&h, "Content-Type: application/json");
    hadd(&h, "Stripe-Signature: garbage");
    deliver(&srv, "/hooks/stripe", &h, body, n, &r);
    expect_refused_free(&r, 401, "malformed_header", (const char *const[]){STRIPE_SECRET, STRIPE_OLD, NULL});
    hk_resp_free(&r);
    hfree(&h);

    hk_context("stripe: an hour old");
    int64_t old = (int64_t)time(NULL) - 3600;
    char sright[129];
    stripe_v1(STRIPE_SECRET, old, body, n, sright);
    hadd(&h, "Content-Type: application/json");
    sign_stripe(&h, STRIPE_SECRET, old, body, n);
    deliver(&srv, "/hooks/stripe", &h, body, n, &r);
    json_t *j = expect_refused(&r, 401, "timestamp_out_of_tolerance", (const char *const[]){STRIPE_SECRET, NULL});
    json_t *skew = json_object_get(j, "skewSeconds");
    cr_assert(json_is_integer(skew) && json_integer_value(skew) >= 3600 && json_integer_value(skew) <= 3605,
              "skewSeconds is not about 3600: %s", r.body);
    json_decref(j);
    hk_resp_free(&r);
    hfree(&h);

    hk_context("stripe: a good MAC of another body");
    hadd(&h, "Content-Type: application/json");
    int64_t now = (int64_t)time(NULL);
    stripe_v1(STRIPE_SECRET, now, tampered, strlen(tampered), sright);
    sign_stripe(&h, STRIPE_SECRET, now, body, n);
    deliver(&srv, "/hooks/stripe", &h, tampered, 0, &r);
    expect_refused_free(&r, 401, "no_matching_signature", (const char *const[]){STRIPE_SECRET, sright, NULL});
    hk_resp_free(&r);
    hfree(&h);

    hk_context("standard webhooks: a wrong v1; the right base64 is not revealed");
    char good[200];
    std_sig("msg_bad_0001", now, body, n, NULL, good);
    hadd(&h, "Content-Type: application/json");
    hadd(&h, "webhook-id: msg_bad_0001");
    hadd(&h, "webhook-timestamp: %" PRId64, now);
    hadd(&h, "webhook-signature: v1," FORGED_V1 "");
    deliver(&srv, "/hooks/std", &h, body, n, &r);
    expect_refused_free(&r, 401, "no_matching_signature", (const char *const[]){STD_SECRET, good + 3, NULL});
    hk_resp_free(&r);
    hfree(&h);

    hk_context("standard webhooks: an HMAC signature on a source with only a public key");
    hadd(&h, "Content-Type: application/json");
    sign_std(&h, "webhook", "msg_nosecret_1", now, body, n, NULL);
    deliver(&srv, "/hooks/std-pk", &h, body, n, &r);
    expect_refused_free(&r, 401, "no_secret", NULL);
    hk_resp_free(&r);
    hfree(&h);

    hk_context("gitlab and token: a wrong token; the right one is not revealed");
    hadd(&h, "Content-Type: application/json");
    hadd(&h, "X-Gitlab-Token: glpat-wrong");
    deliver(&srv, "/hooks/gitlab", &h, body, n, &r);
    expect_refused_free(&r, 401, "no_matching_signature", (const char *const[]){GITLAB_TOKEN, NULL});
    hk_resp_free(&r);
    hfree(&h);
    hadd(&h, "X-Hook-Token: token-value-1f2e3d4");
    deliver(&srv, "/hooks/token", &h, body, n, &r);
    expect_refused_free(&r, 401, "no_matching_signature", (const char *const[]){TOKEN_SECRET, NULL});
    hk_resp_free(&r);
    hfree(&h);

    hk_context("discord: a signature by another key");
    static const unsigned char other_seed[32] = {7};
    struct bytes m = {0};
    char ts[32], hex[129];
    snprintf(ts, sizeof ts, "%" PRId64, now);
    bputs(&m, ts);
    bputs(&m, body);
    unsigned char sig[64];
    ed_sign(other_seed, m.p, m.n, sig);
    to_hex(sig, 64, hex);
    bfree(&m);
    hadd(&h, "Content-Type: application/json");
    hadd(&h, "X-Signature-Ed25519: %s", hex);
    hadd(&h, "X-Signature-Timestamp: %s", ts);
    deliver(&srv, "/hooks/discord", &h, body, n, &r);
    expect_refused_free(&r, 401, "no_matching_signature", NULL);
    hk_resp_free(&r);
    hfree(&h);

    hk_context("an unknown source");
    deliver(&srv, "/hooks/nosuchsource", NULL, body, n, &r);
    expect_refused_free(&r, 404, "unknown_source", NULL);
    hk_resp_free(&r);

    hk_context("%s", "");
    cr_assert_eq(count_rows(&srv), 0, "a refused delivery was stored");
    hk_finish(&srv);
}

Test(ingress, timestamp_tolerance_boundaries)
{
    sqlite_only();
    start_main(&srv, NULL);
    /* stripe has tolerance: 60s. Each request starts early in a second,
     * so hookd reads the same clock second as the signer. */
    static const struct {
        int off;               /* the signed timestamp minus now */
        long status;
    } cases[] = {{-59, 201}, {-61, 401}, {59, 201}, {61, 401}};
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        hk_context("stripe timestamp now%+d", cases[i].off);
        char body[128];
        snprintf(body, sizeof body, "{\"id\":\"evt_tol_%zu\",\"type\":\"charge.succeeded\"}", i);
        int64_t now = second_start();
        struct hdrs h = {0};
        hadd(&h, "Content-Type: application/json");
        sign_stripe(&h, STRIPE_SECRET, now + cases[i].off, body, strlen(body));
        struct hk_resp r;
        deliver(&srv, "/hooks/stripe", &h, body, 0, &r);
        if (cases[i].status == 201) {
            expect_accepted(&r, 201, false, 0);
        } else {
            json_t *j = expect_refused(&r, 401, "timestamp_out_of_tolerance", NULL);
            json_t *skew = json_object_get(j, "skewSeconds");
            cr_assert(json_is_integer(skew) && json_integer_value(skew) == -cases[i].off,
                      "skewSeconds is not %d: %s", -cases[i].off, r.body);
            json_decref(j);
        }
        hk_resp_free(&r);
        hfree(&h);
    }
    hk_context("%s", "");
    hk_finish(&srv);
}

Test(ingress, rotation_accepts_both_secrets_until_a_reload_drops_one)
{
    sqlite_only();
    start_main(&srv, NULL);
    const char *body = "{\"id\":\"evt_rot_%d\",\"type\":\"customer.created\"}";
    char b[128];
    struct hk_resp r;
    const char *secrets[] = {STRIPE_SECRET, STRIPE_OLD};
    const char *refs[] = {"env:HKT_STRIPE", "env:HKT_STRIPE_OLD"};
    for (int i = 0; i < 2; i++) {
        snprintf(b, sizeof b, body, i);
        struct hdrs h = {0};
        hadd(&h, "Content-Type: application/json");
        sign_stripe(&h, secrets[i], (int64_t)time(NULL), b, strlen(b));
        deliver(&srv, "/hooks/stripe", &h, b, 0, &r);
        int64_t id = expect_accepted(&r, 201, false, 0);
        hk_resp_free(&r);
        char path[64];
        snprintf(path, sizeof path, "/api/webhooks/%" PRId64, id);
        json_t *o = get_json(&srv, path, 200);
        cr_assert_str_eq(hk_jstr(json_object_get(o, "verified"), "secret"), refs[i]);
        json_decref(o);
        hfree(&h);
    }
    /* One header with both signatures, as Stripe sends while rolling a
     * secret: the first is by a secret hookd does not hold. */
    {
        int64_t now = (int64_t)time(NULL);
        snprintf(b, sizeof b, body, 2);
        char v_other[129], v_old[129];
        stripe_v1("whsec_someoneElse", now, b, strlen(b), v_other);
        stripe_v1(STRIPE_OLD, now, b, strlen(b), v_old);
        struct hdrs h = {0};
        hadd(&h, "Content-Type: application/json");
        hadd(&h, "Stripe-Signature: t=%" PRId64 ",v1=%s,v0=ignored,v1=%s", now, v_other, v_old);
        deliver(&srv, "/hooks/stripe", &h, b, 0, &r);
        expect_accepted(&r, 201, false, 0);
        hk_resp_free(&r);
        hfree(&h);
    }

    /* The old secret is retired: reload without it. */
    write_main_sources(false);
    reload(&srv, "sources reloaded");
    for (int i = 0; i < 2; i++) {
        snprintf(b, sizeof b, body, 10 + i);
        struct hdrs h = {0};
        hadd(&h, "Content-Type: application/json");
        sign_stripe(&h, secrets[i], (int64_t)time(NULL), b, strlen(b));
        deliver(&srv, "/hooks/stripe", &h, b, 0, &r);
        if (i == 0)
            expect_accepted(&r, 201, false, 0);
        else
            expect_refused_free(&r, 401, "no_matching_signature", (const char *const[]){STRIPE_OLD, NULL});
        hk_resp_free(&r);
        hfree(&h);
    }
    cr_assert_eq(count_rows(&srv), 4);
    hk_finish(&srv);
}

/* ==== handshakes: answered, counted, never stored ==== */

Test(ingress, handshakes_are_answered_and_not_stored)
{
    sqlite_only();
    start_main(&srv, NULL);
    struct hk_resp r;
    int64_t now = (int64_t)time(NULL);

    hk_context("slack url_verification");
    {
        const char *body = "{\"token\":\"Jhj5dZrVaK7ZwHHjRyZWjbDl\",\"challenge\":"
                           "\"3eZbrw1aBm2rZgRNFdxV2595E9CY3gmdALWMmHkvFXO7tYXAYM8P\",\"type\":\"url_verification\"}";
        struct hdrs h = {0};
        hadd(&h, "Content-Type: application/json");
        sign_slack(&h, SLACK_SECRET, now, body, strlen(body));
        deliver(&srv, "/hooks/slack", &h, body, 0, &r);
        json_t *j = hk_assert_json(&r, 200);
        cr_assert_str_eq(hk_jstr(j, "challenge"), "3eZbrw1aBm2rZgRNFdxV2595E9CY3gmdALWMmHkvFXO7tYXAYM8P", "%s", r.body);
        json_decref(j);
        hk_resp_free(&r);
        /* Unsigned, it is just a refused delivery. */
        struct hdrs u = {0};
        hadd(&u, "Content-Type: application/json");
        deliver(&srv, "/hooks/slack", &u, body, 0, &r);
        cr_assert_eq(r.status, 401, "an unsigned url_verification: %ld %s", r.status, r.body);
        hk_resp_free(&r);
        hfree(&u);
        hfree(&h);
    }
    hk_context("discord PING");
    {
        const char *body = "{\"type\":1,\"id\":\"1094230811562188801\",\"application_id\":\"1094230700000000000\","
                           "\"version\":1}";
        struct hdrs h = {0};
        hadd(&h, "Content-Type: application/json");
        sign_discord(&h, now, body, strlen(body));
        deliver(&srv, "/hooks/discord", &h, body, 0, &r);
        json_t *j = hk_assert_json(&r, 200);
        json_t *want = json_pack("{s:i}", "type", 1);
        cr_assert(json_equal(j, want), "PING answered %s, not {\"type\":1}", r.body);
        json_decref(want);
        json_decref(j);
        hk_resp_free(&r);
        hfree(&h);
    }
    hk_context("twitch webhook_callback_verification");
    {
        const char *body = "{\"challenge\":\"pogchamp-kappa-360noscope-vohiyo\",\"subscription\":{\"id\":"
                           "\"f1c2a387-161a-49f9-a165-0f21d7a4e1c4\",\"type\":\"channel.follow\",\"version\":\"2\","
                           "\"status\":\"webhook_callback_verification_pending\"}}";
        struct hdrs h = {0};
        hadd(&h, "Content-Type: application/json");
        sign_twitch(&h, "e76c6bd4-55c9-4987-8304-da1588d8988b", now, "webhook_callback_verification", body,
                    strlen(body));
        deliver(&srv, "/hooks/twitch", &h, body, 0, &r);
        cr_assert_eq(r.status, 200, "%ld %s", r.status, r.body);
        hk_assert_ctype(&r, "text/plain");
        cr_assert_str_eq(r.body, "pogchamp-kappa-360noscope-vohiyo");
        hk_resp_free(&r);
        hfree(&h);
    }
    hk_context("zoom endpoint.url_validation");
    {
        const char *body = "{\"payload\":{\"plainToken\":\"qgg8vlvZRS6UYooatFL8Aw\"},\"event_ts\":1654503849680,"
                           "\"event\":\"endpoint.url_validation\"}";
        struct hdrs h = {0};
        hadd(&h, "Content-Type: application/json");
        sign_zoom(&h, ZOOM_SECRET, now, body, strlen(body));
        deliver(&srv, "/hooks/zoom", &h, body, 0, &r);
        json_t *j = hk_assert_json(&r, 200);
        char want[129];
        hmac_hex(EVP_sha256(), ZOOM_SECRET, "qgg8vlvZRS6UYooatFL8Aw", 22, want);
        cr_assert_str_eq(hk_jstr(j, "plainToken"), "qgg8vlvZRS6UYooatFL8Aw", "%s", r.body);
        cr_assert_str_eq(hk_jstr(j, "encryptedToken"), want, "%s", r.body);
        json_decref(j);
        hk_resp_free(&r);
        hfree(&h);
    }
    hk_context("meta GET subscribe");
    {
        struct hk_resp g;
        hk_get(&srv, "/hooks/meta?hub.mode=subscribe&hub.verify_token=" META_VERIFY "&hub.challenge=1158201444", &g);
        cr_assert_eq(g.status, 200, "%ld %s", g.status, g.body);
        hk_assert_ctype(&g, "text/plain");
        cr_assert_str_eq(g.body, "1158201444");
        hk_resp_free(&g);
        hk_get(&srv, "/hooks/meta?hub.mode=subscribe&hub.verify_token=meta-verify-wrong&hub.challenge=1158201444",
               &g);
        cr_assert_eq(g.status, 403, "a wrong verify token: %ld %s", g.status, g.body);
        cr_assert(!strstr(g.body, "1158201444") && !strstr(g.body, META_VERIFY), "403 echoes: %s", g.body);
        hk_resp_free(&g);
    }
    hk_context("microsoft graph validationToken");
    {
        /* Before any signature exists: the token source answers it unsigned. */
        struct hdrs h = {0};
        hadd(&h, "Content-Type: text/plain");
        deliver(&srv, "/hooks/graph?validationToken=Validation%3A%20Testing%20client+application", &h, "", 0, &r);
        cr_assert_eq(r.status, 200, "%ld %s", r.status, r.body);
        hk_assert_ctype(&r, "text/plain");
        cr_assert_str_eq(r.body, "Validation: Testing client application");
        hk_resp_free(&r);
        hfree(&h);
    }
    hk_context("%s", "");
    cr_assert_eq(count_rows(&srv), 0, "a handshake was stored");

    struct scrape m;
    scrape(&srv, &m);
    static const char *const kinds[][2] = {{"slack", "slack"}, {"discord", "discord"}, {"twitch", "twitch"},
                                           {"zoom", "zoom"},   {"meta", "meta"},       {"graph", "graph"}};
    for (size_t i = 0; i < sizeof kinds / sizeof kinds[0]; i++) {
        char l[128];
        snprintf(l, sizeof l, "provider=\"%s\"", kinds[i][0]);
        cr_assert_eq(prom_get(&m.p, "hookd_ingress_handshakes_total", l), 1, "hookd_ingress_handshakes_total{%s}", l);
        snprintf(l, sizeof l, "result=\"handshake\",source=\"%s\"", kinds[i][1]);
        cr_assert_eq(prom_get(&m.p, "hookd_ingress_total", l), 1, "hookd_ingress_total{%s}", l);
        snprintf(l, sizeof l, "result=\"stored\",source=\"%s\"", kinds[i][1]);
        cr_assert_eq(prom_get(&m.p, "hookd_ingress_total", l), 0, "hookd_ingress_total{%s}", l);
    }
    cr_assert(prom_count(&m.p, "hookd_ingress_handshakes_total") >= 6);
    scrape_free(&m);
    hk_finish(&srv);
}

Test(ingress, discord_webhook_event_ping_is_204_with_a_content_type)
{
    sqlite_only();
    start_main(&srv, NULL);
    /* Discord's webhook events (not interactions): PING is type 0, and is
     * acknowledged with 204, no body, and a Content-Type. */
    const char *body = "{\"version\":1,\"application_id\":\"1094230700000000000\",\"type\":0}";
    struct hdrs h = {0};
    hadd(&h, "Content-Type: application/json");
    sign_discord(&h, (int64_t)time(NULL), body, strlen(body));
    struct hk_resp r;
    deliver(&srv, "/hooks/discord", &h, body, 0, &r);
    cr_assert_eq(r.status, 204, "%ld %s", r.status, r.body);
    char ct[128];
    cr_assert(hk_header(&r, "Content-Type", ct, sizeof ct), "204 without Content-Type:\n%s", r.head);
    hk_resp_free(&r);
    hfree(&h);
    cr_assert_eq(count_rows(&srv), 0, "a PING was stored");
    cr_assert_eq(metric(&srv, "hookd_ingress_handshakes_total", "provider=\"discord\""), 1);
    hk_finish(&srv);
}

/* ==== duplicates ==== */

Test(ingress, a_redelivery_is_answered_200_with_the_first_id)
{
    start_main(&srv, NULL);
    const char *first = "{\"action\":\"opened\",\"number\":1}";
    const char *second = "{\"action\":\"opened\",\"number\":1,\"redelivered\":true}";
    struct hk_resp r;
    struct hdrs h = {0};
    hadd(&h, "Content-Type: application/json");
    hadd(&h, "X-GitHub-Event: pull_request");
    hadd(&h, "X-GitHub-Delivery: dup-0001");
    sign_github(&h, GH_SECRET, first, strlen(first));
    deliver(&srv, "/hooks/gh", &h, first, 0, &r);
    int64_t id = expect_accepted(&r, 201, false, 0);
    hk_resp_free(&r);
    deliver(&srv, "/hooks/gh", &h, first, 0, &r);
    expect_accepted(&r, 200, true, id);
    hk_resp_free(&r);
    hfree(&h);

    /* Another body under the same id is still the same delivery: the
     * first bytes stay. */
    hadd(&h, "Content-Type: application/json");
    hadd(&h, "X-GitHub-Event: pull_request");
    hadd(&h, "X-GitHub-Delivery: dup-0001");
    sign_github(&h, GH_SECRET, second, strlen(second));
    deliver(&srv, "/hooks/gh", &h, second, 0, &r);
    expect_accepted(&r, 200, true, id);
    hk_resp_free(&r);
    expect_body(&srv, id, first, strlen(first), "application/json");

    /* The id is unique per source: another source may use it. */
    deliver(&srv, "/hooks/gh-legacy", &h, second, 0, &r);
    int64_t other = expect_accepted(&r, 201, false, 0);
    cr_assert_neq(other, id);
    hk_resp_free(&r);
    hfree(&h);

    json_t *a = get_json(&srv, "/api/webhooks?deliveryId=dup-0001", 200);
    cr_assert_eq(json_array_size(a), 2, "two sources, one row each");
    json_decref(a);
    a = get_json(&srv, "/api/webhooks?deliveryId=dup-0001&source=gh", 200);
    cr_assert_eq(json_array_size(a), 1);
    cr_assert_eq(json_integer_value(json_object_get(json_array_get(a, 0), "id")), id);
    json_decref(a);
    cr_assert_eq(count_rows(&srv), 2);
    hk_finish(&srv);
}

#define RACERS 8

struct racer {
    const struct hk_server *s;
    pthread_barrier_t *bar;
    const char *const *headers;
    const char *body;
    int curl_rc;
    long status;
    int64_t id;
    int dup;                   /* 1 true, 0 false, -1 neither */
};

/* One delivery, sent when every racer is ready. Never asserts. */
static void *race(void *arg)
{
    struct racer *x = arg;
    CURL *h = hk_curl_new();
    /* Connect first, so that the POSTs leave together. */
    struct hk_req warm = {.path = "/q/health/live"};
    struct hk_resp w;
    hk_request(x->s, h, &warm, &w);
    hk_resp_free(&w);
    pthread_barrier_wait(x->bar);
    struct hk_req req = {.method = "POST", .path = "/hooks/gh", .body = x->body, .headers = x->headers};
    struct hk_resp r;
    x->curl_rc = hk_request(x->s, h, &req, &r);
    x->status = r.status;
    x->id = -1;
    x->dup = -1;
    json_t *j = json_loadb(r.body ? r.body : "", r.body_len, 0, NULL);
    json_t *id = json_object_get(j, "id"), *d = json_object_get(j, "duplicate");
    if (json_is_integer(id))
        x->id = json_integer_value(id);
    if (json_is_boolean(d))
        x->dup = json_is_true(d);
    json_decref(j);
    hk_resp_free(&r);
    curl_easy_cleanup(h);
    return NULL;
}

/* RACERS clients post the same delivery at once, spread over `servers`:
 * exactly one 201, the rest 200 duplicates of the same id, one row. */
static void race_round(struct hk_server *const *servers, int nservers, int round)
{
    char body[128], delivery[64];
    snprintf(body, sizeof body, "{\"round\":%d,\"action\":\"created\"}", round);
    snprintf(delivery, sizeof delivery, "race-%d-%d", nservers, round);
    struct hdrs h = {0};
    hadd(&h, "Content-Type: application/json");
    hadd(&h, "X-GitHub-Event: issues");
    hadd(&h, "X-GitHub-Delivery: %s", delivery);
    sign_github(&h, GH_SECRET, body, strlen(body));
    pthread_barrier_t bar;
    pthread_barrier_init(&bar, NULL, RACERS);
    struct racer x[RACERS];
    pthread_t th[RACERS];
    for (int i = 0; i < RACERS; i++) {
        x[i] = (struct racer){.s = servers[i % nservers], .bar = &bar, .headers = (const char *const *)h.v,
                              .body = body};
        cr_assert(pthread_create(&th[i], NULL, race, &x[i]) == 0);
    }
    for (int i = 0; i < RACERS; i++)
        pthread_join(th[i], NULL);
    pthread_barrier_destroy(&bar);
    int created = 0, dups = 0;
    int64_t id = -1;
    for (int i = 0; i < RACERS; i++) {
        cr_assert_eq(x[i].curl_rc, CURLE_OK, "round %d racer %d: curl %d", round, i, x[i].curl_rc);
        cr_assert(x[i].id > 0, "round %d racer %d: status %ld without an id", round, i, x[i].status);
        if (id < 0)
            id = x[i].id;
        cr_assert_eq(x[i].id, id, "round %d: racer %d got id %" PRId64 ", another got %" PRId64, round, i, x[i].id,
                     id);
        if (x[i].status == 201 && x[i].dup == 0)
            created++;
        else if (x[i].status == 200 && x[i].dup == 1)
            dups++;
        else
            cr_assert_fail("round %d racer %d: status %ld duplicate %d", round, i, x[i].status, x[i].dup);
    }
    cr_assert_eq(created, 1, "round %d: %d answers of 201", round, created);
    cr_assert_eq(dups, RACERS - 1, "round %d: %d duplicates", round, dups);
    for (int k = 0; k < nservers; k++) {
        char path[128];
        snprintf(path, sizeof path, "/api/webhooks?deliveryId=%s", delivery);
        json_t *a = get_json(servers[k], path, 200);
        cr_assert_eq(json_array_size(a), 1, "round %d: %zu rows for %s", round, json_array_size(a), delivery);
        cr_assert_eq(json_integer_value(json_object_get(json_array_get(a, 0), "id")), id);
        json_decref(a);
    }
    hfree(&h);
}

Test(ingress, concurrent_redeliveries_store_one_row)
{
    /* The harness runs HOOKD_THREADS=2: the racers land on both loops. */
    start_main(&srv, NULL);
    struct hk_server *one[] = {&srv};
    for (int round = 0; round < 4; round++)
        race_round(one, 1, round);
    cr_assert_eq(count_rows(&srv), 4);
    hk_finish(&srv);
}

/* DATABASE_URL=... of a running server (its schema on PostgreSQL). */
static const char *database_url_of(const struct hk_server *s)
{
    for (size_t i = 0; i < HK_MAX_ENV && s->env[i]; i++)
        if (strncmp(s->env[i], "DATABASE_URL=", 13) == 0)
            return s->env[i];
    cr_assert_fail("the server has no DATABASE_URL");
    return NULL;
}

Test(ingress, two_replicas_on_one_database_store_each_delivery_once)
{
    if (!hk_store_is_pg())
        cr_skip_test("two hookd processes on one database: the integ-pg suite");
    start_main(&srv, NULL);
    /* The second replica: the same schema (the first one's cleanup drops it). */
    const char *more[] = {database_url_of(&srv), NULL};
    const char *env[HK_MAX_ENV];
    main_env(env, HK_MAX_ENV - 1, more);
    hk_server_start(&srv2, env);
    struct hk_server *both[] = {&srv, &srv2};
    for (int round = 0; round < 4; round++)
        race_round(both, 2, round);
    cr_assert_eq(count_rows(&srv), 4);
    cr_assert_eq(count_rows(&srv2), 4);
    hk_finish(&srv2);
    hk_finish(&srv);
}

/* ==== limits ==== */

/* Send `head` (and `body`, may be NULL) on a fresh connection and read the
 * first final response into raw. Returns the connection. */
static int raw_send(const struct hk_server *s, const char *head, const char *body, struct hk_raw *raw, int timeout_ms)
{
    int fd = hk_tcp_connect(s);
    cr_assert_eq(hk_tcp_sends(fd, head), 0, "send");
    if (body)
        cr_assert_eq(hk_tcp_sends(fd, body), 0, "send");
    memset(raw, 0, sizeof *raw);
    if (timeout_ms)
        hk_tcp_read(fd, raw, 1, timeout_ms);
    return fd;
}

static json_t *raw_problem(const struct hk_raw *raw, int status, const char *reason)
{
    const struct hk_raw_resp *rr = hk_raw_final(raw, 0);
    cr_assert(rr, "no response (closed %d, timed out %d): %.300s", raw->closed, raw->timed_out, raw->buf);
    cr_assert_eq(rr->status, status, "status %d, expected %d: %.300s", rr->status, status, raw->buf);
    char ct[128];
    cr_assert(hk_head_get(rr->head, rr->head_len, "Content-Type", ct, sizeof ct) &&
                  strncmp(ct, "application/problem+json", 24) == 0,
              "not problem+json: %.300s", raw->buf);
    json_t *j = json_loadb(rr->body, rr->body_len, 0, NULL);
    cr_assert(json_is_object(j), "problem does not parse: %s", rr->body);
    if (reason)
        cr_assert_str_eq(hk_jstr(j, "reason"), reason, "%s", rr->body);
    return j;
}

Test(ingress, body_caps_and_rate_limits)
{
    sqlite_only();
    start_main(&srv, NULL);
    struct hk_raw raw;

    hk_context("Content-Length over maxBodyBytes: 413 before the body is sent");
    int fd = raw_send(&srv,
                      "POST /hooks/small HTTP/1.1\r\nHost: t\r\nContent-Type: application/octet-stream\r\n"
                      "Content-Length: 100000\r\n\r\n",
                      NULL, &raw, 3000);
    json_decref(raw_problem(&raw, 413, "body_too_large"));
    cr_assert(hk_tcp_wait_closed(fd, &raw, 3000), "the connection stays open after an early 413");
    hk_raw_free(&raw);
    hk_tcp_close(fd);

    hk_context("a chunked body that grows past maxBodyBytes");
    char chunk[700];
    memset(chunk, 'x', 600);
    snprintf(chunk + 600, sizeof chunk - 600, "\r\n");
    fd = raw_send(&srv,
                  "POST /hooks/small HTTP/1.1\r\nHost: t\r\nContent-Type: text/plain\r\n"
                  "Transfer-Encoding: chunked\r\n\r\n258\r\n",
                  chunk, &raw, 0);
    hk_sleep_ms(100);
    cr_assert_eq(hk_tcp_sends(fd, "258\r\n"), 0);
    cr_assert_eq(hk_tcp_sends(fd, chunk), 0);
    hk_tcp_read(fd, &raw, 1, 3000);
    json_decref(raw_problem(&raw, 413, "body_too_large"));
    hk_raw_free(&raw);
    hk_tcp_close(fd);

    hk_context("exactly maxBodyBytes is accepted");
    char full[1001];
    memset(full, 'y', 1000);
    full[1000] = 0;
    struct hdrs h = {0};
    hadd(&h, "Content-Type: text/plain");
    struct hk_resp r;
    deliver(&srv, "/hooks/small", &h, full, 1000, &r);
    expect_accepted(&r, 201, false, 0);
    hk_resp_free(&r);

    hk_context("rateLimit {rate: 1, burst: 2}: the third quick request");
    long st[3];
    char ra[32] = "";
    for (int i = 0; i < 3; i++) {
        deliver(&srv, "/hooks/rl", &h, "tick", 0, &r);
        st[i] = r.status;
        if (i == 2 && r.status == 429) {
            expect_refused_free(&r, 429, "rate_limited", NULL);
            cr_assert(hk_header(&r, "Retry-After", ra, sizeof ra), "429 without Retry-After:\n%s", r.head);
        }
        hk_resp_free(&r);
    }
    cr_assert(st[0] == 201 && st[1] == 201 && st[2] == 429, "statuses %ld %ld %ld, expected 201 201 429", st[0],
              st[1], st[2]);
    cr_assert(hk_matches(ra, "^[1-9][0-9]*$") && atoi(ra) <= 2, "Retry-After \"%s\"", ra);
    /* The bucket refills at one per second. */
    hk_sleep_ms(1100);
    deliver(&srv, "/hooks/rl", &h, "tock", 0, &r);
    expect_accepted(&r, 201, false, 0);
    hk_resp_free(&r);
    hfree(&h);
    hk_context("%s", "");
    cr_assert_eq(count_rows(&srv), 4);
    hk_finish(&srv);
}

Test(ingress, bytes_in_flight_are_capped_across_clients)
{
    sqlite_only();
    /* (gh is there so that this test does not depend on a file of
     * scheme-none sources only: none_only_sources_file_serves.) */
    write_text(in_dir("sources.yaml"), "sources:\n"
                                       "  - name: big\n"
                                       "    scheme: none\n"
                                       "    maxBodyBytes: 10000\n"
                                       "  - {name: gh, scheme: github, secrets: [{env: HKT_GITHUB}]}\n");
    char sources[320];
    snprintf(sources, sizeof sources, "HOOKD_SOURCES=%s", in_dir("sources.yaml"));
    hk_server_start(&srv, (const char *const[]){sources, "HKT_GITHUB=" GH_SECRET, "HOOKD_INGRESS_INFLIGHT_BYTES=4096",
                                                NULL});
    struct hk_raw raw;

    hk_context("one delivery larger than the global cap");
    int fd = raw_send(&srv,
                      "POST /hooks/big HTTP/1.1\r\nHost: t\r\nContent-Type: text/plain\r\nContent-Length: 5000\r\n\r\n",
                      NULL, &raw, 3000);
    json_decref(raw_problem(&raw, 503, "ingress_busy"));
    char ra[32];
    cr_assert(hk_raw_header(&raw, 0, "Retry-After", ra, sizeof ra) && hk_matches(ra, "^[1-9][0-9]*$"),
              "503 without Retry-After: %.300s", raw.buf);
    hk_raw_free(&raw);
    hk_tcp_close(fd);

    hk_context("two slow clients hold the cap; a third is refused");
    char half[1025];
    memset(half, 'h', 1024);
    half[1024] = 0;
    const char *head =
        "POST /hooks/big HTTP/1.1\r\nHost: t\r\nContent-Type: text/plain\r\nContent-Length: 2048\r\n\r\n";
    struct hk_raw ra1, ra2;
    int a = raw_send(&srv, head, half, &ra1, 0);
    int b = raw_send(&srv, head, half, &ra2, 0);
    /* Until hookd has read both heads, the third may race them. */
    int64_t deadline = hk_now_ms() + 5000;
    double inflight;
    while ((inflight = metric(&srv, "hookd_ingress_inflight_bytes", NULL)) < 4096 && hk_now_ms() < deadline)
        hk_sleep_ms(20);
    cr_assert_eq(inflight, 4096, "hookd_ingress_inflight_bytes %.0f with two 2048-byte deliveries under way", inflight);
    int c = raw_send(&srv, head, NULL, &raw, 3000);
    json_decref(raw_problem(&raw, 503, "ingress_busy"));
    hk_raw_free(&raw);
    hk_tcp_close(c);

    hk_context("the slow clients finish; room again");
    cr_assert_eq(hk_tcp_sends(a, half), 0);
    cr_assert_eq(hk_tcp_sends(b, half), 0);
    hk_tcp_read(a, &ra1, 1, 5000);
    hk_tcp_read(b, &ra2, 1, 5000);
    cr_assert(hk_raw_final(&ra1, 0) && hk_raw_final(&ra1, 0)->status == 201, "slow client 1: %.300s", ra1.buf);
    cr_assert(hk_raw_final(&ra2, 0) && hk_raw_final(&ra2, 0)->status == 201, "slow client 2: %.300s", ra2.buf);
    hk_raw_free(&ra1);
    hk_raw_free(&ra2);
    hk_tcp_close(a);
    hk_tcp_close(b);
    c = raw_send(&srv, head, NULL, &raw, 0);
    char full[2049];
    memset(full, 'f', 2048);
    full[2048] = 0;
    cr_assert_eq(hk_tcp_sends(c, full), 0);
    hk_tcp_read(c, &raw, 1, 5000);
    cr_assert(hk_raw_final(&raw, 0) && hk_raw_final(&raw, 0)->status == 201, "after the slow ones: %.300s", raw.buf);
    hk_raw_free(&raw);
    hk_tcp_close(c);
    cr_assert_eq(metric(&srv, "hookd_ingress_inflight_bytes", NULL), 0);
    hk_context("%s", "");
    cr_assert_eq(count_rows(&srv), 3);
    hk_finish(&srv);
}

/* ==== the sources file: SIGHUP and start ==== */

Test(ingress, none_only_sources_file_serves)
{
    /* No source needs a key, yet every delivery's body is hashed. */
    write_text(in_dir("sources.yaml"), "sources:\n"
                                       "  - {name: plain, scheme: none}\n");
    char sources[320];
    snprintf(sources, sizeof sources, "HOOKD_SOURCES=%s", in_dir("sources.yaml"));
    hk_server_start(&srv, (const char *const[]){sources, NULL});
    const char *body = "{\"hello\":\"world\"}";
    struct hdrs h = {0};
    hadd(&h, "Content-Type: application/json");
    struct hk_resp r;
    deliver(&srv, "/hooks/plain", &h, body, 0, &r);
    struct expect e = {.source = "plain", .event_type = "", .content_type = "application/json", .text = true};
    expect_stored(&srv, &r, body, strlen(body), &e);
    hk_resp_free(&r);
    hfree(&h);
    hk_finish(&srv);
}

Test(ingress, sighup_reloads_a_good_file_and_keeps_the_old_on_a_bad_one)
{
    sqlite_only();
    write_text(in_dir("sources.yaml"), "sources:\n"
                                       "  - {name: keep, scheme: github, secrets: [{env: HKT_GITHUB}]}\n"
                                       "  - {name: gone, scheme: none}\n");
    char sources[320];
    snprintf(sources, sizeof sources, "HOOKD_SOURCES=%s", in_dir("sources.yaml"));
    hk_server_start(&srv, (const char *const[]){sources, "HKT_GITHUB=" GH_SECRET, NULL});
    struct hk_resp r;
    deliver(&srv, "/hooks/gone", NULL, "a", 0, &r);
    cr_assert_eq(r.status, 201);
    hk_resp_free(&r);
    deliver(&srv, "/hooks/fresh", NULL, "a", 0, &r);
    expect_refused_free(&r, 404, "unknown_source", NULL);
    hk_resp_free(&r);

    write_text(in_dir("sources.yaml"), "sources:\n"
                                       "  - {name: keep, scheme: github, secrets: [{env: HKT_GITHUB}]}\n"
                                       "  - name: fresh\n"
                                       "    scheme: github\n"
                                       "    secrets: [{env: HKT_GITHUB}]\n");
    reload(&srv, "sources reloaded");
    struct hdrs h = {0};
    hadd(&h, "Content-Type: application/json");
    hadd(&h, "X-GitHub-Event: push");
    sign_github(&h, GH_SECRET, "{}", 2);
    deliver(&srv, "/hooks/fresh", &h, "{}", 0, &r);
    cr_assert_eq(r.status, 201, "a source added by SIGHUP: %ld %s", r.status, r.body);
    hk_resp_free(&r);
    deliver(&srv, "/hooks/gone", NULL, "a", 0, &r);
    expect_refused_free(&r, 404, "unknown_source", NULL);
    hk_resp_free(&r);

    /* A bad file: one line naming the source and the field; the old
     * sources stay. */
    write_text(in_dir("sources.yaml"), "sources:\n"
                                       "  - {name: keep, scheme: github, secrets: [{env: HKT_GITHUB}]}\n"
                                       "  - name: broken\n"
                                       "    scheme: github\n"
                                       "    secrets: [{env: HKT_NOT_SET_ANYWHERE}]\n");
    reload(&srv, "sources not reloaded");
    char *line = log_line(&srv, "sources not reloaded");
    cr_assert(strstr(line, "broken") && strstr(line, "secrets[0]"), "the line does not name the source and the "
              "field: %s", line);
    cr_assert(strstr(line, "\"level\":\"warn\"") || strstr(line, "\"level\":\"error\""),
              "not a warning or an error: %s", line);
    free(line);
    deliver(&srv, "/hooks/fresh", &h, "{}", 0, &r);
    cr_assert_eq(r.status, 201, "the sources before the bad file: %ld %s", r.status, r.body);
    hk_resp_free(&r);
    deliver(&srv, "/hooks/broken", NULL, "a", 0, &r);
    cr_assert_eq(r.status, 404);
    hk_resp_free(&r);
    hfree(&h);

    struct scrape m;
    scrape(&srv, &m);
    cr_assert_eq(prom_get(&m.p, "hookd_sources_reloads_total", NULL), 2, "loads: at start and one SIGHUP");
    cr_assert_eq(prom_get(&m.p, "hookd_sources_reload_failures_total", NULL), 1);
    scrape_free(&m);
    hk_finish(&srv);
}

Test(ingress, an_invalid_file_at_start_exits_2_with_one_line)
{
    sqlite_only();
    write_text(in_dir("bad.yaml"), "sources:\n"
                                   "  - {name: fine, scheme: none}\n"
                                   "  - name: broken\n"
                                   "    scheme: stripe\n"
                                   "    tolerance: 5 minutes\n"
                                   "    secrets: [{env: HKT_STRIPE}]\n");
    char sources[320];
    snprintf(sources, sizeof sources, "HOOKD_SOURCES=%s", in_dir("bad.yaml"));
    char *out = NULL, *err = NULL;
    int st = hk_run((const char *const[]){sources, "HKT_STRIPE=" STRIPE_SECRET, NULL}, NULL, 10000, &out, &err);
    cr_assert(st != -1 && WIFEXITED(st) && WEXITSTATUS(st) == 2, "exit status 0x%x, expected 2; stderr:\n%s", st, err);
    size_t len = strlen(err);
    cr_assert(len > 0 && err[len - 1] == '\n' && count_in(err, "\n") == 1, "stderr is not one line:\n%s", err);
    cr_assert(strstr(err, "\"level\":\"error\""), "not an error: %s", err);
    cr_assert(strstr(err, "source \\\"broken\\\"") && strstr(err, "tolerance"),
              "the line does not name the source and the field: %s", err);
    cr_assert(!strstr(err, STRIPE_SECRET), "stderr holds the secret:\n%s", err);
    cr_assert(!strstr(out, "http://"), "hookd announced itself: %s", out);
    free(out);
    free(err);
}

/* ==== metrics ==== */

Test(ingress, stored_duplicate_and_rejected_deliveries_are_counted)
{
    sqlite_only();
    start_main(&srv, NULL);
    struct hk_resp r;
    for (int i = 0; i < 3; i++) {
        char body[64];
        snprintf(body, sizeof body, "{\"n\":%d}", i);
        struct hdrs h = {0};
        hadd(&h, "Content-Type: application/json");
        hadd(&h, "X-GitHub-Delivery: count-%d", i < 2 ? i : 0);
        sign_github(&h, GH_SECRET, body, strlen(body));
        deliver(&srv, "/hooks/gh", &h, body, 0, &r);
        cr_assert_eq(r.status, i < 2 ? 201 : 200, "delivery %d: %ld %s", i, r.status, r.body);
        hk_resp_free(&r);
        hfree(&h);
    }
    struct hdrs h = {0};
    hadd(&h, "Content-Type: application/json");
    sign_github(&h, "wrong", "{}", 2);
    deliver(&srv, "/hooks/gh", &h, "{}", 0, &r);
    cr_assert_eq(r.status, 401);
    hk_resp_free(&r);
    hfree(&h);

    struct scrape m;
    scrape(&srv, &m);
    cr_assert_eq(prom_get(&m.p, "hookd_ingress_total", "result=\"stored\",source=\"gh\""), 2);
    cr_assert_eq(prom_get(&m.p, "hookd_ingress_total", "result=\"duplicate\",source=\"gh\""), 1);
    cr_assert_eq(prom_get(&m.p, "hookd_ingress_total", "result=\"rejected\",source=\"gh\""), 1);
    cr_assert_eq(prom_get(&m.p, "hookd_ingress_rejected_total", "reason=\"no_matching_signature\",source=\"gh\""), 1);
    scrape_free(&m);
    hk_finish(&srv);
}

/* ==== hostile input ==== */

Test(ingress, hostile_headers_paths_and_stalled_bodies)
{
    sqlite_only();
    /* Room for the big headers, so that they reach the verifier. */
    start_main(&srv, (const char *const[]){"HOOKD_MAX_HEADER_BYTES=1048576", NULL});
    struct hk_resp r;
    const char *body = "{\"id\":\"evt_hostile\",\"type\":\"charge.failed\"}";
    size_t n = strlen(body);

    hk_context("a Stripe-Signature of 10,000 v1= entries");
    {
        int64_t now = (int64_t)time(NULL);
        char good[129];
        stripe_v1(STRIPE_SECRET, now, body, n, good);
        for (int valid_first = 0; valid_first < 2; valid_first++) {
            struct bytes v = {0};
            char t[40];
            snprintf(t, sizeof t, "Stripe-Signature: t=%" PRId64, now);
            bputs(&v, t);
            if (valid_first) {
                bputs(&v, ",v1=");
                bputs(&v, good);
            }
            for (int i = valid_first; i < 10000; i++)
                bputs(&v, ",v1=0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef");
            const char *hs[] = {"Content-Type: application/json", (const char *)v.p, NULL};
            struct hk_req req = {.method = "POST", .path = "/hooks/stripe", .body = body, .headers = hs};
            int64_t t0 = hk_now_ms();
            hk_do(&srv, NULL, &req, &r);
            int64_t took = hk_now_ms() - t0;
            if (valid_first)
                expect_accepted(&r, 201, false, 0);
            else
                expect_refused_free(&r, 401, "no_matching_signature", (const char *const[]){good, NULL});
            cr_assert(took < 3000, "%" PRId64 " ms for one request", took);
            hk_resp_free(&r);
            bfree(&v);
        }
    }
    hk_context("a 16 KB X-Hub-Signature-256");
    {
        struct bytes v = {0};
        bputs(&v, "X-Hub-Signature-256: sha256=");
        for (int i = 0; i < 16384; i++)
            bputs(&v, "a");
        const char *hs[] = {"Content-Type: application/json", (const char *)v.p, NULL};
        struct hk_req req = {.method = "POST", .path = "/hooks/gh", .body = body, .headers = hs};
        hk_do(&srv, NULL, &req, &r);
        expect_refused_free(&r, 401, "malformed_header", NULL);
        hk_resp_free(&r);
        bfree(&v);
    }
    hk_context("2,000 other headers around a good signature");
    {
        struct hdrs h = {0};
        for (int i = 0; i < 2000; i++)
            hadd(&h, "X-Filler-%d: value %d", i, i);
        hadd(&h, "Content-Type: application/json");
        hadd(&h, "X-GitHub-Event: push");
        hadd(&h, "X-GitHub-Delivery: hostile-many-headers");
        sign_github(&h, GH_SECRET, body, n);
        deliver(&srv, "/hooks/gh", &h, body, n, &r);
        struct expect e = {.source = "gh", .event_type = "push", .delivery_id = "hostile-many-headers",
                           .content_type = "application/json", .scheme = "github", .secret = "env:HKT_GITHUB",
                           .text = true, .kept = {{"x-filler-0", NULL}, {"x-filler-1999", NULL}}};
        expect_stored(&srv, &r, body, n, &e);
        hk_resp_free(&r);
        hfree(&h);
    }
    hk_context("names no source can have");
    {
        char longname[80];
        memset(longname, 'a', 65);
        longname[65] = 0;
        char lp[100];
        snprintf(lp, sizeof lp, "/hooks/%s", longname);
        const char *paths[] = {"/hooks/../x", "/hooks/UPPER", lp, "/hooks/", "/hooks/gh/extra", NULL};
        for (int i = 0; paths[i]; i++) {
            hk_context("POST %s", paths[i]);
            char req[512];
            snprintf(req, sizeof req,
                     "POST %s HTTP/1.1\r\nHost: t\r\nContent-Type: text/plain\r\nContent-Length: 2\r\n\r\nhi",
                     paths[i]);
            struct hk_raw raw;
            int fd = raw_send(&srv, req, NULL, &raw, 3000);
            const struct hk_raw_resp *rr = hk_raw_final(&raw, 0);
            cr_assert(rr && rr->status == 404, "POST %s: %.300s", paths[i], raw.buf);
            hk_raw_free(&raw);
            hk_tcp_close(fd);
        }
    }
    hk_context("a client that stalls mid-body blocks nobody");
    {
        struct hk_raw stalled;
        int fd = raw_send(&srv,
                          "POST /hooks/open HTTP/1.1\r\nHost: t\r\nContent-Type: application/json\r\n"
                          "Content-Length: 100\r\n\r\n",
                          "{\"kind\":\"stall", &stalled, 0);
        for (int i = 0; i < 4; i++) {
            char b[64], d[64];
            snprintf(b, sizeof b, "{\"after\":%d}", i);
            snprintf(d, sizeof d, "X-GitHub-Delivery: after-stall-%d", i);
            struct hdrs h = {0};
            hadd(&h, "Content-Type: application/json");
            hadd(&h, "%s", d);
            sign_github(&h, GH_SECRET, b, strlen(b));
            int64_t t0 = hk_now_ms();
            deliver(&srv, "/hooks/gh", &h, b, 0, &r);
            expect_accepted(&r, 201, false, 0);
            cr_assert(hk_now_ms() - t0 < 2000, "a delivery took %" PRId64 " ms beside a stalled one",
                      hk_now_ms() - t0);
            hk_resp_free(&r);
            hfree(&h);
        }
        hk_raw_free(&stalled);
        hk_tcp_close(fd);
    }
    hk_context("%s", "");
    hk_finish(&srv);
}

/* ==== hookd sign / hookd verify: the real binary ==== */

/* Run `hookd <args...>` with stdin from `in_path` and the main sources'
 * environment. Returns the exit status (-1: timeout); *out gets stdout. */
static int run_cli(const char *in_path, const char *const *args, char **out, char **err)
{
    const char *bin = getenv("HOOKD_BIN");
    cr_assert(bin && *bin, "HOOKD_BIN is not set");
    /* sh opens stdin: the harness's spawn gives children /dev/null. */
    const char *argv[16] = {"/bin/sh", "-c", "in=$1; shift; exec \"$@\" < \"$in\"", "sh", in_path, bin};
    size_t k = 6;
    for (size_t i = 0; args[i]; i++) {
        cr_assert(k + 1 < 16);
        argv[k++] = args[i];
    }
    argv[k] = NULL;
    const char *env[HK_MAX_ENV];
    main_env(env, HK_MAX_ENV - 1, NULL);
    int ofd;
    const char *errpath = in_dir("cli.err");
    unlink(errpath);
    pid_t pid = hk_spawn_cmd(dir, env, argv, -1, &ofd, errpath);
    *out = hk_read_all_fd(ofd, 10000, NULL);
    close(ofd);
    int st = 0;
    if (hk_wait_pid(pid, 10000, &st) < 0) {
        kill(pid, SIGKILL);
        hk_wait_pid(pid, 5000, &st);
        st = -1;
    }
    FILE *f = fopen(errpath, "r");
    struct bytes e = {0};
    bputs(&e, "");
    if (f) {
        char buf[4096];
        size_t got;
        while ((got = fread(buf, 1, sizeof buf, f)) > 0)
            bput(&e, buf, got);
        fclose(f);
    }
    *err = (char *)e.p;
    return st;
}

/* "Name: value" lines of `hookd sign`'s output as request headers. */
static void parse_signed(const char *out, struct hdrs *h)
{
    const char *p = out;
    while (*p) {
        const char *nl = strchr(p, '\n');
        size_t len = nl ? (size_t)(nl - p) : strlen(p);
        while (len && (p[len - 1] == '\r' || p[len - 1] == ' '))
            len--;
        const char *colon = memchr(p, ':', len);
        if (colon && colon > p && !memchr(p, ' ', (size_t)(colon - p)))
            hadd(h, "%.*s", (int)len, p);
        p = nl ? nl + 1 : p + strlen(p);
    }
}

Test(ingress, hookd_sign_and_verify_round_trip)
{
    sqlite_only();
    start_main(&srv, NULL);
    const char *body = "{\"id\":\"evt_cli_0001\",\"type\":\"invoice.created\"}";
    write_text(in_dir("body.json"), body);
    write_text(in_dir("tampered.json"), "{\"id\":\"evt_cli_0001\",\"type\":\"invoice.deleted\"}");
    static const char *const sources[] = {"gh", "stripe"};
    for (size_t s = 0; s < 2; s++) {
        hk_context("hookd sign --source %s", sources[s]);
        char *out, *err;
        int st = run_cli(in_dir("body.json"), (const char *const[]){"sign", "--source", sources[s], NULL}, &out, &err);
        cr_assert(st != -1 && WIFEXITED(st) && WEXITSTATUS(st) == 0, "hookd sign: status 0x%x\n%s\n%s", st, out, err);
        cr_assert(!strstr(out, GH_SECRET) && !strstr(out, STRIPE_SECRET) && !strstr(err, GH_SECRET) &&
                      !strstr(err, STRIPE_SECRET),
                  "hookd sign prints a secret:\n%s\n%s", out, err);
        struct hdrs h = {0};
        parse_signed(out, &h);
        cr_assert(h.n > 0, "no headers in hookd sign's output:\n%s", out);
        if (!hval(&h, "Content-Type"))
            hadd(&h, "Content-Type: application/json");
        struct hk_resp r;
        char path[64];
        snprintf(path, sizeof path, "/hooks/%s", sources[s]);
        deliver(&srv, path, &h, body, 0, &r);
        cr_assert_eq(r.status, 201, "headers from hookd sign:\n%s\n-> %ld %s", out, r.status, r.body);
        hk_resp_free(&r);

        /* The same headers from a file, for hookd verify. */
        struct bytes f = {0};
        for (size_t i = 0; i < h.n; i++) {
            bputs(&f, h.v[i]);
            bputs(&f, "\n");
        }
        write_text(in_dir("headers.txt"), (const char *)f.p);
        bfree(&f);
        free(out);
        free(err);
        hk_context("hookd verify --source %s", sources[s]);
        st = run_cli(in_dir("body.json"),
                     (const char *const[]){"verify", "--source", sources[s], "--headers", in_dir("headers.txt"), NULL},
                     &out, &err);
        cr_assert(st != -1 && WIFEXITED(st) && WEXITSTATUS(st) == 0, "hookd verify: status 0x%x\n%s\n%s", st, out,
                  err);
        free(out);
        free(err);
        st = run_cli(in_dir("tampered.json"),
                     (const char *const[]){"verify", "--source", sources[s], "--headers", in_dir("headers.txt"), NULL},
                     &out, &err);
        cr_assert(st != -1 && WIFEXITED(st) && WEXITSTATUS(st) == 1,
                  "hookd verify of a tampered body: status 0x%x\n%s\n%s", st, out, err);
        cr_assert(!strstr(out, GH_SECRET) && !strstr(out, STRIPE_SECRET) && !strstr(err, GH_SECRET) &&
                      !strstr(err, STRIPE_SECRET),
                  "hookd verify prints a secret:\n%s\n%s", out, err);
        free(out);
        free(err);
        hfree(&h);
    }
    hk_context("%s", "");
    cr_assert_eq(count_rows(&srv), 2);
    hk_finish(&srv);
}
