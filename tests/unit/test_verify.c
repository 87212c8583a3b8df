/* SPDX-License-Identifier: MIT
 * ingress/verify: every scheme against the vectors its provider publishes
 * (GitHub, Slack, Standard Webhooks, Twilio) and against signatures made
 * here by independent implementations: Python's hmac module and the
 * openssl command (dgst -mac HMAC; genpkey/pkeyutl for ed25519). Then the
 * refusals (tampered body or header, the timestamp window at its edges,
 * rotation, several signatures, uppercase hex, missing prefix, repeated,
 * missing and garbage headers), streaming split at every byte, the header
 * parsers, and hk_sign round-tripping through hk_verify_all. */
#include <criterion/criterion.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "core/base64.h"
#include "core/crypto.h"
#include "ingress/verify.h"

static void setup(void)
{
    char err[200] = "";
    cr_assert_eq(hk_crypto_init(err, sizeof err), 0, "%s", err);
}

TestSuite(verify, .init = setup);

/* ---- sources, built the way the loader builds them -------------------- */

static struct hk_source *source(enum hk_scheme scheme)
{
    struct hk_source *s = calloc(1, sizeof *s);
    cr_assert(s);
    s->scheme = scheme;
    strcpy(s->name, "test");
    s->name_len = 4;
    s->tolerance_s = 300;
    s->algorithm = HK_MD_SHA256;
    s->encoding = HK_ENC_HEX;
    return s;
}

/* The digest the loader prepares secrets[i].hmac with. */
static enum hk_md scheme_md(const struct hk_source *s)
{
    return s->scheme == HK_SCHEME_TWILIO ? HK_MD_SHA1 : s->scheme == HK_SCHEME_HMAC ? s->algorithm : HK_MD_SHA256;
}

static void secret(struct hk_source *s, const void *key, size_t len)
{
    cr_assert_lt(s->nsecrets, HK_SOURCE_SECRETS_MAX);
    struct hk_secret *x = &s->secrets[s->nsecrets];
    x->key = malloc(len + 1);
    memcpy(x->key, key, len);
    x->len = len;
    snprintf(x->ref, sizeof x->ref, "env:SECRET_%zu", s->nsecrets);
    hk_hmac_key_init(&x->hmac, scheme_md(s), key, len);
    s->nsecrets++;
}

static void secret_str(struct hk_source *s, const char *key)
{
    secret(s, key, strlen(key));
}

static void ed_key(struct hk_source *s, const uint8_t pub[32])
{
    cr_assert_lt(s->nsecrets, HK_SOURCE_SECRETS_MAX);
    struct hk_secret *x = &s->secrets[s->nsecrets];
    x->key = malloc(32);
    memcpy(x->key, pub, 32);
    x->len = 32;
    x->ed25519 = true;
    snprintf(x->ref, sizeof x->ref, "env:PUBLIC_%zu", s->nsecrets);
    s->nsecrets++;
}

/* Rotation: secret i is no longer configured. */
static void drop_secret(struct hk_source *s, size_t i)
{
    free(s->secrets[i].key);
    memmove(&s->secrets[i], &s->secrets[i + 1], (s->nsecrets - i - 1) * sizeof s->secrets[0]);
    s->nsecrets--;
    memset(&s->secrets[s->nsecrets], 0, sizeof s->secrets[0]);
}

static void source_free(struct hk_source *s)
{
    for (size_t i = 0; i < s->nsecrets; i++) {
        hk_hmac_key_wipe(&s->secrets[i].hmac);
        free(s->secrets[i].key);
    }
    free(s);
}

/* ---- headers ---------------------------------------------------------- */

struct hdrs {
    struct hk_hdr v[32];
    struct hk_hdr_list list;
    struct hk_hdrs h;
    char buf[16384];
    size_t used;
};

static struct hdrs *hdrs_new(void)
{
    struct hdrs *x = calloc(1, sizeof *x);
    cr_assert(x);
    x->list.v = x->v;
    x->h.get = hk_hdr_list_get;
    x->h.ctx = &x->list;
    return x;
}

static const char *keep(struct hdrs *x, const char *p, size_t n)
{
    cr_assert_lt(x->used + n + 1, sizeof x->buf);
    char *d = x->buf + x->used;
    memcpy(d, p, n);
    d[n] = '\0';
    x->used += n + 1;
    return d;
}

static void hdr_addn(struct hdrs *x, const char *name, const char *value, size_t n)
{
    cr_assert_lt(x->list.n, 32);
    struct hk_hdr *h = &x->v[x->list.n++];
    h->name = keep(x, name, strlen(name));
    h->name_len = strlen(name);
    h->value = keep(x, value, n);
    h->value_len = n;
}

static void hdr_add(struct hdrs *x, const char *name, const char *value)
{
    hdr_addn(x, name, value, strlen(value));
}

static struct hk_hdr *hdr_find(struct hdrs *x, const char *name)
{
    for (size_t i = 0; i < x->list.n; i++)
        if (strcasecmp(x->v[i].name, name) == 0)
            return &x->v[i];
    return NULL;
}

static const char *hdr_val(struct hdrs *x, const char *name)
{
    struct hk_hdr *h = hdr_find(x, name);
    cr_assert(h, "no header %s", name);
    return h->value;
}

static void hdr_set(struct hdrs *x, const char *name, const char *value)
{
    struct hk_hdr *h = hdr_find(x, name);
    cr_assert(h, "no header %s", name);
    h->value = keep(x, value, strlen(value));
    h->value_len = strlen(value);
}

static void hdr_del(struct hdrs *x, const char *name)
{
    struct hk_hdr *h = hdr_find(x, name);
    cr_assert(h, "no header %s", name);
    size_t i = (size_t)(h - x->v);
    memmove(&x->v[i], &x->v[i + 1], (x->list.n - i - 1) * sizeof x->v[0]);
    x->list.n--;
}

/* hk_sign's "Name: value\r\n" lines. */
static struct hdrs *hdrs_parse(const char *text, size_t len)
{
    struct hdrs *x = hdrs_new();
    const char *p = text, *end = text + len;
    while (p < end) {
        const char *eol = strstr(p, "\r\n"), *colon = memchr(p, ':', (size_t)(end - p));
        cr_assert(eol && colon && colon < eol, "bad line in %.*s", (int)len, text);
        char name[128];
        cr_assert_lt((size_t)(colon - p), sizeof name);
        memcpy(name, p, (size_t)(colon - p));
        name[colon - p] = '\0';
        cr_assert_eq(colon[1], ' ');
        hdr_addn(x, name, colon + 2, (size_t)(eol - colon - 2));
        p = eol + 2;
    }
    return x;
}

static struct hk_verify vv;    /* the last verdict's details */

static enum hk_vreason check(const struct hk_source *s, struct hdrs *x, const void *body, size_t n, int64_t now)
{
    return hk_verify_all(&vv, s, &x->h, body, n, now);
}

static enum hk_vreason checks(const struct hk_source *s, struct hdrs *x, const char *body, int64_t now)
{
    return check(s, x, body, strlen(body), now);
}

/* ---- independent implementations -------------------------------------- */

static const char *python(void)
{
    return access("/usr/bin/python3", X_OK) == 0 ? "/usr/bin/python3" : "python3";
}

static void run(const char *cmd, char *out, size_t cap)
{
    FILE *f = popen(cmd, "r");
    cr_assert(f, "popen %s", cmd);
    size_t n = fread(out, 1, cap - 1, f);
    out[n] = '\0';
    cr_assert_eq(pclose(f), 0, "failed: %.300s", cmd);
    while (n && (out[n - 1] == '\n' || out[n - 1] == '\r'))
        out[--n] = '\0';
}

static char *hexdup(const void *p, size_t n)
{
    char *h = malloc(2 * n + 1);
    for (size_t i = 0; i < n; i++)
        snprintf(h + 2 * i, 3, "%02x", ((const uint8_t *)p)[i]);
    h[2 * n] = '\0';
    return h;
}

/* HMAC by Python's hmac module; enc "hex" or "b64". */
static void py_hmac(const char *md, const void *key, size_t klen, const void *msg, size_t n, const char *enc,
                    char *out, size_t cap)
{
    char *kh = hexdup(key, klen), *mh = hexdup(msg, n);
    size_t cl = strlen(kh) + strlen(mh) + 512;
    char *cmd = malloc(cl);
    snprintf(cmd, cl,
             "%s -c 'import base64,hmac,sys\n"
             "d = hmac.new(bytes.fromhex(sys.argv[1]), bytes.fromhex(sys.argv[2]), sys.argv[3]).digest()\n"
             "print(d.hex() if sys.argv[4] == \"hex\" else base64.b64encode(d).decode())' '%s' '%s' %s %s",
             python(), kh, mh, md, enc);
    run(cmd, out, cap);
    free(cmd);
    free(kh);
    free(mh);
}

static void tmpname(char *path)
{
    strcpy(path, "/tmp/hk-verify-XXXXXX");
    int fd = mkstemp(path);
    cr_assert_geq(fd, 0);
    close(fd);
}

static void write_file(const char *path, const void *p, size_t n)
{
    FILE *f = fopen(path, "wb");
    cr_assert(f);
    cr_assert_eq(fwrite(p, 1, n, f), n);
    fclose(f);
}

static size_t read_file(const char *path, uint8_t *out, size_t cap)
{
    FILE *f = fopen(path, "rb");
    cr_assert(f, "%s", path);
    size_t n = fread(out, 1, cap, f);
    fclose(f);
    return n;
}

/* HMAC (hex) by `openssl dgst -mac HMAC`, over msg written to a file. */
static void openssl_hmac(const char *md, const char *key, const void *msg, size_t n, char *out, size_t cap)
{
    char path[64], cmd[1024];
    char *kh = hexdup(key, strlen(key));
    tmpname(path);
    write_file(path, msg, n);
    snprintf(cmd, sizeof cmd, "openssl dgst -%s -mac HMAC -macopt hexkey:%s -r %s", md, kh, path);
    run(cmd, out, cap);
    unlink(path);
    free(kh);
    char *sp = strchr(out, ' ');
    cr_assert(sp, "openssl dgst said %s", out);
    *sp = '\0';
}

struct edkey {
    char pem[64];
    uint8_t priv[32], pub[32];
};

/* A fresh ed25519 key by `openssl genpkey`, its raw halves from the DER
 * forms (the key is their last 32 bytes). */
static void ed_gen(struct edkey *k)
{
    char der[64], cmd[512];
    uint8_t buf[128];
    tmpname(k->pem);
    tmpname(der);
    snprintf(cmd, sizeof cmd, "openssl genpkey -algorithm ed25519 -out %s 2>&1", k->pem);
    run(cmd, (char *)buf, sizeof buf);
    snprintf(cmd, sizeof cmd, "openssl pkey -in %s -outform DER -out %s 2>&1", k->pem, der);
    run(cmd, (char *)buf, sizeof buf);
    size_t n = read_file(der, buf, sizeof buf);
    cr_assert_eq(n, 48);
    memcpy(k->priv, buf + 16, 32);
    snprintf(cmd, sizeof cmd, "openssl pkey -in %s -pubout -outform DER -out %s 2>&1", k->pem, der);
    run(cmd, (char *)buf, sizeof buf);
    n = read_file(der, buf, sizeof buf);
    cr_assert_eq(n, 44);
    memcpy(k->pub, buf + 12, 32);
    unlink(der);
}

/* An ed25519 signature by `openssl pkeyutl -sign -rawin`. */
static void ed_sign(const struct edkey *k, const void *msg, size_t n, uint8_t sig[64])
{
    char in[64], out[64], cmd[512], said[256];
    tmpname(in);
    tmpname(out);
    write_file(in, msg, n);
    snprintf(cmd, sizeof cmd, "openssl pkeyutl -sign -inkey %s -rawin -in %s -out %s 2>&1", k->pem, in, out);
    run(cmd, said, sizeof said);
    cr_assert_eq(read_file(out, sig, 64), 64);
    unlink(in);
    unlink(out);
}

static void ed_free(struct edkey *k)
{
    unlink(k->pem);
}

/* Concatenate up to four pieces (NULL ends) into a malloc'ed message. */
static char *cat(size_t *n, const char *a, const char *b, const char *c, const char *d)
{
    const char *v[4] = {a, b, c, d};
    size_t len = 0;
    for (int i = 0; i < 4 && v[i]; i++)
        len += strlen(v[i]);
    char *m = malloc(len + 1);
    m[0] = '\0';
    for (int i = 0; i < 4 && v[i]; i++)
        strcat(m, v[i]);
    *n = len;
    return m;
}

static int64_t now(void)
{
    return (int64_t)time(NULL);
}

static void upper(char *s)
{
    for (; *s; s++)
        if (*s >= 'a' && *s <= 'f')
            *s = (char)(*s - 32);
}

/* Change one hex digit of a signature in place (keeps it well-formed). */
static void flip_hex(char *s)
{
    size_t n = strlen(s);
    s[n - 1] = s[n - 1] == '0' ? '1' : '0';
}

/* ---- names and headers ------------------------------------------------ */

Test(verify, reason_names_are_stable)
{
    cr_expect_str_eq(hk_vreason_name(HK_VR_OK), "ok");
    cr_expect_str_eq(hk_vreason_name(HK_VR_MISSING_HEADER), "missing_header");
    cr_expect_str_eq(hk_vreason_name(HK_VR_MALFORMED_HEADER), "malformed_header");
    cr_expect_str_eq(hk_vreason_name(HK_VR_TIMESTAMP), "timestamp_out_of_tolerance");
    cr_expect_str_eq(hk_vreason_name(HK_VR_NO_MATCH), "no_matching_signature");
    cr_expect_str_eq(hk_vreason_name(HK_VR_NO_SECRET), "no_secret");
    cr_expect_str_eq(hk_vreason_name(HK_VR__COUNT), "?");
}

Test(verify, header_list_lookup)
{
    struct hdrs *x = hdrs_new();
    hdr_add(x, "X-Hub-Signature-256", "one");
    hdr_add(x, "Content-Type", "text/plain");
    hdr_add(x, "x-hub-signature-256", "two");
    size_t len = 0;
    unsigned count = 0;
    const char *p = hk_hdr_list_get(&x->list, "x-hub-signature-256", &len, &count);
    cr_expect_str_eq(p, "one");
    cr_expect_eq(len, 3);
    cr_expect_eq(count, 2);
    cr_expect_null(hk_hdr_list_get(&x->list, "x-hub-signature", &len, &count));
    cr_expect_eq(count, 0);
    p = hk_hdr_list_get(&x->list, "content-type", &len, &count);
    cr_expect_str_eq(p, "text/plain");
    cr_expect_eq(count, 1);
    free(x);
}

/* ---- github / meta ---------------------------------------------------- */

Test(verify, github_published_vector)
{
    /* docs.github.com, "Validating webhook deliveries". */
    struct hk_source *s = source(HK_SCHEME_GITHUB);
    secret_str(s, "It's a Secret to Everybody");
    struct hdrs *x = hdrs_new();
    hdr_add(x, "X-Hub-Signature-256", "sha256=757107ea0eb2509fc211221cce984b8a37570b6d7586c22c46f4379c8b043e17");
    cr_expect_eq(checks(s, x, "Hello, World!", now()), HK_VR_OK);
    cr_expect_eq(vv.matched, 0);
    cr_expect_eq(checks(s, x, "Hello, World?", now()), HK_VR_NO_MATCH);
    cr_expect_eq(vv.matched, -1);
    cr_expect_str_eq(vv.header, "x-hub-signature-256");
    free(x);
    source_free(s);
}

Test(verify, github_independent_and_refusals)
{
    static const char body[] = "{\"action\":\"opened\",\"number\":7,\"text\":\"caf\xc3\xa9\\n\"}";
    char mac[200], hdr[256];
    struct hk_source *s = source(HK_SCHEME_GITHUB);
    secret_str(s, "gh-secret-1");
    py_hmac("sha256", "gh-secret-1", 11, body, strlen(body), "hex", mac, sizeof mac);
    snprintf(hdr, sizeof hdr, "sha256=%s", mac);

    struct hdrs *x = hdrs_new();
    hdr_add(x, "X-Hub-Signature-256", hdr);
    cr_expect_eq(checks(s, x, body, now()), HK_VR_OK);
    cr_expect_eq(vv.matched, 0);
    cr_expect_null(vv.header);

    /* Tampered body: one byte more, one byte changed. */
    cr_expect_eq(checks(s, x, "{\"action\":\"opened\",\"number\":8,\"text\":\"caf\xc3\xa9\\n\"}", now()),
                 HK_VR_NO_MATCH);
    cr_expect_eq(check(s, x, body, strlen(body) - 1, now()), HK_VR_NO_MATCH);

    /* Tampered header. */
    char bad[256];
    strcpy(bad, hdr);
    flip_hex(bad);
    hdr_set(x, "x-hub-signature-256", bad);
    cr_expect_eq(checks(s, x, body, now()), HK_VR_NO_MATCH);
    cr_expect_str_eq(vv.header, "x-hub-signature-256");

    /* Uppercase hex is the same signature. */
    char up[256];
    snprintf(up, sizeof up, "sha256=%s", mac);
    upper(up + 7);
    hdr_set(x, "x-hub-signature-256", up);
    cr_expect_eq(checks(s, x, body, now()), HK_VR_OK);

    /* Missing prefix, wrong prefix, short, garbage, empty. */
    static const char *const malformed[] = {NULL, "sha1=", "sha256=abc", "garbage", "", "sha256="};
    for (size_t i = 0; i < sizeof malformed / sizeof malformed[0]; i++) {
        char v[300];
        if (!malformed[i])
            snprintf(v, sizeof v, "%s", mac);
        else if (!strcmp(malformed[i], "sha1="))
            snprintf(v, sizeof v, "sha1=%s", mac);
        else
            snprintf(v, sizeof v, "%s", malformed[i]);
        hdr_set(x, "x-hub-signature-256", v);
        cr_expect_eq(checks(s, x, body, now()), HK_VR_MALFORMED_HEADER, "\"%s\"", v);
        cr_expect_str_eq(vv.header, "x-hub-signature-256");
    }
    /* A non-hex digit in the right length. */
    char nonhex[256];
    snprintf(nonhex, sizeof nonhex, "sha256=%s", mac);
    nonhex[20] = 'g';
    hdr_set(x, "x-hub-signature-256", nonhex);
    cr_expect_eq(checks(s, x, body, now()), HK_VR_MALFORMED_HEADER);

    /* Sent twice (even the same value): malformed. */
    hdr_set(x, "x-hub-signature-256", hdr);
    hdr_add(x, "x-hub-signature-256", hdr);
    cr_expect_eq(checks(s, x, body, now()), HK_VR_MALFORMED_HEADER);
    cr_expect_str_eq(vv.header, "x-hub-signature-256");
    free(x);

    /* Missing. */
    x = hdrs_new();
    hdr_add(x, "Content-Type", "application/json");
    cr_expect_eq(checks(s, x, body, now()), HK_VR_MISSING_HEADER);
    cr_expect_str_eq(vv.header, "x-hub-signature-256");
    cr_expect_eq(vv.matched, -1);
    free(x);
    source_free(s);
}

Test(verify, github_legacy_sha1)
{
    static const char body[] = "{\"zen\":\"Keep it logically awesome.\"}";
    char mac1[100], mac256[100], h[200];
    struct hk_source *s = source(HK_SCHEME_GITHUB);
    secret_str(s, "legacy");
    py_hmac("sha1", "legacy", 6, body, strlen(body), "hex", mac1, sizeof mac1);
    py_hmac("sha256", "legacy", 6, body, strlen(body), "hex", mac256, sizeof mac256);

    struct hdrs *x = hdrs_new();
    snprintf(h, sizeof h, "sha1=%s", mac1);
    hdr_add(x, "X-Hub-Signature", h);
    /* Not enabled: the SHA-1 header is not read. */
    cr_expect_eq(checks(s, x, body, now()), HK_VR_MISSING_HEADER);
    cr_expect_str_eq(vv.header, "x-hub-signature-256");
    s->legacy_sha1 = true;
    cr_expect_eq(checks(s, x, body, now()), HK_VR_OK);
    cr_expect_eq(vv.matched, 0);
    cr_expect_eq(checks(s, x, "{}", now()), HK_VR_NO_MATCH);
    cr_expect_str_eq(vv.header, "x-hub-signature");
    /* Streamed in pieces, like the others. */
    struct hk_verify v;
    cr_assert_eq(hk_verify_begin(&v, s, &x->h, now()), HK_VR_OK);
    for (size_t i = 0; body[i]; i++)
        hk_verify_update(&v, body + i, 1);
    cr_expect_eq(hk_verify_finish(&v, body, strlen(body)), HK_VR_OK);
    hk_verify_end(&v);

    /* The SHA-256 header wins when both are sent; a wrong one is not
     * rescued by a right SHA-1. */
    snprintf(h, sizeof h, "sha256=%s", mac256);
    hdr_add(x, "X-Hub-Signature-256", h);
    cr_expect_eq(checks(s, x, body, now()), HK_VR_OK);
    flip_hex(h);
    hdr_set(x, "x-hub-signature-256", h);
    cr_expect_eq(checks(s, x, body, now()), HK_VR_NO_MATCH);
    cr_expect_str_eq(vv.header, "x-hub-signature-256");
    free(x);
    source_free(s);
}

Test(verify, meta_app_secret)
{
    static const char body[] = "{\"object\":\"page\",\"entry\":[]}";
    char mac[100], h[200];
    struct hk_source *s = source(HK_SCHEME_META);
    secret_str(s, "app-secret");
    s->legacy_sha1 = true;     /* ignored: meta has no legacy header */
    openssl_hmac("sha256", "app-secret", body, strlen(body), mac, sizeof mac);
    struct hdrs *x = hdrs_new();
    snprintf(h, sizeof h, "sha256=%s", mac);
    hdr_add(x, "X-Hub-Signature-256", h);
    cr_expect_eq(checks(s, x, body, now()), HK_VR_OK);
    cr_expect_eq(checks(s, x, "{\"object\":\"page\",\"entry\":[1]}", now()), HK_VR_NO_MATCH);
    free(x);
    x = hdrs_new();
    py_hmac("sha1", "app-secret", 10, body, strlen(body), "hex", mac, sizeof mac);
    snprintf(h, sizeof h, "sha1=%s", mac);
    hdr_add(x, "X-Hub-Signature", h);
    cr_expect_eq(checks(s, x, body, now()), HK_VR_MISSING_HEADER);
    free(x);
    source_free(s);
}

/* ---- gitea / gitlab / token ------------------------------------------- */

Test(verify, gitea_forgejo_gogs)
{
    static const char body[] = "{\"ref\":\"refs/heads/main\"}";
    char mac[100];
    struct hk_source *s = source(HK_SCHEME_GITEA);
    secret_str(s, "forge-secret");
    openssl_hmac("sha256", "forge-secret", body, strlen(body), mac, sizeof mac);
    static const char *const names[] = {"X-Gitea-Signature", "X-Forgejo-Signature", "X-Gogs-Signature"};
    for (size_t i = 0; i < 3; i++) {
        struct hdrs *x = hdrs_new();
        hdr_add(x, names[i], mac);
        cr_expect_eq(checks(s, x, body, now()), HK_VR_OK, "%s", names[i]);
        cr_expect_eq(checks(s, x, "{}", now()), HK_VR_NO_MATCH, "%s", names[i]);
        free(x);
    }
    struct hdrs *x = hdrs_new();
    char h[200];
    snprintf(h, sizeof h, "sha256=%s", mac);
    hdr_add(x, "X-Gitea-Signature", h);
    cr_expect_eq(checks(s, x, body, now()), HK_VR_MALFORMED_HEADER);
    cr_expect_str_eq(vv.header, "x-gitea-signature");
    upper(strcpy(h, mac));
    hdr_set(x, "x-gitea-signature", h);
    cr_expect_eq(checks(s, x, body, now()), HK_VR_OK);
    hdr_del(x, "x-gitea-signature");
    cr_expect_eq(checks(s, x, body, now()), HK_VR_MISSING_HEADER);
    cr_expect_str_eq(vv.header, "x-gitea-signature");
    free(x);
    source_free(s);
}

Test(verify, gitlab_token_and_rotation)
{
    struct hk_source *s = source(HK_SCHEME_GITLAB);
    secret_str(s, "old-token-1234");
    secret_str(s, "new-token-5678");
    struct hdrs *x = hdrs_new();
    hdr_add(x, "X-Gitlab-Token", "old-token-1234");
    cr_expect_eq(checks(s, x, "{}", now()), HK_VR_OK);
    cr_expect_eq(vv.matched, 0);
    hdr_set(x, "x-gitlab-token", "new-token-5678");
    cr_expect_eq(checks(s, x, "{}", now()), HK_VR_OK);
    cr_expect_eq(vv.matched, 1);
    hdr_set(x, "x-gitlab-token", "new-token-5679");   /* same length */
    cr_expect_eq(checks(s, x, "{}", now()), HK_VR_NO_MATCH);
    cr_expect_str_eq(vv.header, "x-gitlab-token");
    hdr_set(x, "x-gitlab-token", "new-token-567");    /* a prefix */
    cr_expect_eq(checks(s, x, "{}", now()), HK_VR_NO_MATCH);
    hdr_set(x, "x-gitlab-token", "new-token-56789");
    cr_expect_eq(checks(s, x, "{}", now()), HK_VR_NO_MATCH);
    hdr_set(x, "x-gitlab-token", "");
    cr_expect_eq(checks(s, x, "{}", now()), HK_VR_MALFORMED_HEADER);
    /* Removed from the source: refused. */
    hdr_set(x, "x-gitlab-token", "old-token-1234");
    drop_secret(s, 0);
    cr_expect_eq(checks(s, x, "{}", now()), HK_VR_NO_MATCH);
    hdr_set(x, "x-gitlab-token", "new-token-5678");
    cr_expect_eq(checks(s, x, "{}", now()), HK_VR_OK);
    cr_expect_eq(vv.matched, 0);
    hdr_add(x, "X-GitLab-Token", "new-token-5678");
    cr_expect_eq(checks(s, x, "{}", now()), HK_VR_MALFORMED_HEADER);
    free(x);
    x = hdrs_new();
    cr_expect_eq(checks(s, x, "{}", now()), HK_VR_MISSING_HEADER);
    cr_expect_str_eq(vv.header, "x-gitlab-token");
    free(x);
    source_free(s);
}

Test(verify, token_scheme_and_none)
{
    struct hk_source *s = source(HK_SCHEME_TOKEN);
    s->header = (char *)"x-api-key";
    secret_str(s, "k-123");
    struct hdrs *x = hdrs_new();
    hdr_add(x, "X-Api-Key", "k-123");
    cr_expect_eq(checks(s, x, "anything", now()), HK_VR_OK);
    cr_expect_eq(vv.matched, 0);
    hdr_set(x, "x-api-key", "k-124");
    cr_expect_eq(checks(s, x, "anything", now()), HK_VR_NO_MATCH);
    cr_expect_str_eq(vv.header, "x-api-key");
    hdr_set(x, "x-api-key", "  k-123\t");   /* optional whitespace is not part of a value */
    cr_expect_eq(checks(s, x, "anything", now()), HK_VR_OK);
    source_free(s);

    s = source(HK_SCHEME_NONE);
    cr_expect_eq(checks(s, x, "anything", now()), HK_VR_OK);
    cr_expect_eq(vv.matched, -1);
    free(x);
    x = hdrs_new();
    cr_expect_eq(checks(s, x, "", now()), HK_VR_OK);
    cr_expect_eq(vv.matched, -1);
    free(x);
    source_free(s);
}

/* ---- stripe ----------------------------------------------------------- */

static void stripe_header(const char *key, int64_t t, const char *body, char *out, size_t cap)
{
    char ts[24], mac[100];
    size_t n;
    snprintf(ts, sizeof ts, "%lld", (long long)t);
    char *m = cat(&n, ts, ".", body, NULL);
    openssl_hmac("sha256", key, m, n, mac, sizeof mac);
    free(m);
    snprintf(out, cap, "t=%s,v1=%s", ts, mac);
}

Test(verify, stripe_independent)
{
    static const char key[] = "whsec_test_secret_8fUVuQ3nA";
    static const char body[] = "{\n  \"id\": \"evt_1\",\n  \"object\": \"event\"\n}";
    char h[400], good[100];
    int64_t t = now();
    struct hk_source *s = source(HK_SCHEME_STRIPE);
    secret_str(s, key);
    stripe_header(key, t, body, h, sizeof h);
    strcpy(good, strstr(h, "v1=") + 3);

    struct hdrs *x = hdrs_new();
    hdr_add(x, "Stripe-Signature", h);
    cr_expect_eq(checks(s, x, body, t), HK_VR_OK);
    cr_expect_eq(vv.ts, t);
    cr_expect_eq(vv.skew_s, 0);
    cr_expect_eq(checks(s, x, "{}", t), HK_VR_NO_MATCH);
    cr_expect_str_eq(vv.header, "stripe-signature");

    /* Several v1 (a rotated secret's first), v0 and unknown keys ignored,
     * uppercase. */
    char v[600], bad[100];
    strcpy(bad, good);
    flip_hex(bad);
    snprintf(v, sizeof v, "t=%lld,v1=%s,v1=%s,v0=6ffbb59b2300aae63f272406069a9788598b792a944a07aba816edb039989a39",
             (long long)t, bad, good);
    hdr_set(x, "stripe-signature", v);
    cr_expect_eq(checks(s, x, body, t), HK_VR_OK);
    char up[100];
    upper(strcpy(up, good));
    snprintf(v, sizeof v, "v1=%s,t=%lld,x=y", up, (long long)t);
    hdr_set(x, "stripe-signature", v);
    cr_expect_eq(checks(s, x, body, t), HK_VR_OK);
    /* A v1 of the wrong size beside a good one is skipped. */
    snprintf(v, sizeof v, "t=%lld,v1=abc,v1=%s", (long long)t, good);
    hdr_set(x, "stripe-signature", v);
    cr_expect_eq(checks(s, x, body, t), HK_VR_OK);
    /* Tampered timestamp: signed, so no match. */
    snprintf(v, sizeof v, "t=%lld,v1=%s", (long long)t + 1, good);
    hdr_set(x, "stripe-signature", v);
    cr_expect_eq(checks(s, x, body, t), HK_VR_NO_MATCH);

    /* Malformed. */
    char m1[300], m2[300], m3[300], m4[300];
    snprintf(m1, sizeof m1, "v1=%s", good);                          /* no t */
    snprintf(m2, sizeof m2, "t=%lld", (long long)t);                 /* no v1 */
    snprintf(m3, sizeof m3, "t=12x,v1=%s", good);                    /* t not a number */
    snprintf(m4, sizeof m4, "t=%lld,t=%lld,v1=%s", (long long)t, (long long)t, good);
    const char *const malformed[] = {m1, m2, m3, m4, "", "t=,v1=", "garbage", ",,,", "t=1,v1=zz"};
    for (size_t i = 0; i < sizeof malformed / sizeof malformed[0]; i++) {
        hdr_set(x, "stripe-signature", malformed[i]);
        cr_expect_eq(checks(s, x, body, t), HK_VR_MALFORMED_HEADER, "\"%s\"", malformed[i]);
    }
    free(x);

    /* The key is the whole whsec_ string: without the prefix it is another key. */
    source_free(s);
    s = source(HK_SCHEME_STRIPE);
    secret_str(s, key + 6);
    x = hdrs_new();
    hdr_add(x, "Stripe-Signature", h);
    cr_expect_eq(checks(s, x, body, t), HK_VR_NO_MATCH);
    free(x);
    source_free(s);
}

Test(verify, stripe_tolerance_edges)
{
    static const char key[] = "whsec_edges";
    static const char body[] = "{\"id\":\"evt_2\"}";
    char h[400];
    int64_t t = 1700000000;
    struct hk_source *s = source(HK_SCHEME_STRIPE);
    secret_str(s, key);
    s->tolerance_s = 300;
    stripe_header(key, t, body, h, sizeof h);
    struct hdrs *x = hdrs_new();
    hdr_add(x, "Stripe-Signature", h);
    cr_expect_eq(checks(s, x, body, t + 300), HK_VR_OK);
    cr_expect_eq(vv.skew_s, 300);
    cr_expect_eq(checks(s, x, body, t - 300), HK_VR_OK);
    cr_expect_eq(vv.skew_s, -300);
    cr_expect_eq(checks(s, x, body, t + 301), HK_VR_TIMESTAMP);
    cr_expect_eq(vv.skew_s, 301);
    cr_expect_eq(vv.ts, t);
    cr_expect_str_eq(vv.header, "stripe-signature");
    cr_expect_eq(checks(s, x, body, t - 301), HK_VR_TIMESTAMP);
    cr_expect_eq(vv.skew_s, -301);
    free(x);
    source_free(s);
}

/* ---- shopify ---------------------------------------------------------- */

Test(verify, shopify_base64)
{
    static const char body[] = "{\"id\":820982911946154508,\"email\":\"jon@example.com\"}";
    char mac[100];
    struct hk_source *s = source(HK_SCHEME_SHOPIFY);
    secret_str(s, "shpss_0123456789abcdef");
    py_hmac("sha256", "shpss_0123456789abcdef", 22, body, strlen(body), "b64", mac, sizeof mac);
    struct hdrs *x = hdrs_new();
    hdr_add(x, "X-Shopify-Hmac-Sha256", mac);
    cr_expect_eq(checks(s, x, body, now()), HK_VR_OK);
    cr_expect_eq(checks(s, x, "{\"id\":820982911946154509,\"email\":\"jon@example.com\"}", now()), HK_VR_NO_MATCH);
    /* The same MAC as hex, without padding, or with a space: malformed. */
    char hex[100], v[256];
    py_hmac("sha256", "shpss_0123456789abcdef", 22, body, strlen(body), "hex", hex, sizeof hex);
    hdr_set(x, "x-shopify-hmac-sha256", hex);
    cr_expect_eq(checks(s, x, body, now()), HK_VR_MALFORMED_HEADER);
    strcpy(v, mac);
    v[strlen(v) - 1] = '\0';
    hdr_set(x, "x-shopify-hmac-sha256", v);
    cr_expect_eq(checks(s, x, body, now()), HK_VR_MALFORMED_HEADER);
    snprintf(v, sizeof v, "%.10s %s", mac, mac + 10);
    hdr_set(x, "x-shopify-hmac-sha256", v);
    cr_expect_eq(checks(s, x, body, now()), HK_VR_MALFORMED_HEADER);
    free(x);
    source_free(s);
}

/* ---- slack / zoom ----------------------------------------------------- */

static const char slack_body[] =
    "token=xyzz0WbapA4vBCDEFasx0q6G&team_id=T1DC2JH3J&team_domain=testteamnow&channel_id=G8PSS9T3V&channel_name=foobar"
    "&user_id=U2CERLKJA&user_name=roadrunner&command=%2Fwebhook-collect&text=&response_url=https%3A%2F%2Fhooks.slack"
    ".com%2Fcommands%2FT1DC2JH3J%2F397700885554%2F96rGlfmibIGlgcZRskXaIFfN&trigger_id=398738663015.47445629121.803a0b"
    "c887a14d10d2c447fce8b6703c";

Test(verify, slack_published_vector)
{
    /* api.slack.com, "Verifying requests from Slack"; the vector is from
     * 2018, so the window is made wide enough to include it. */
    struct hk_source *s = source(HK_SCHEME_SLACK);
    secret_str(s, "8f742231b10e8888abcd99yyyzzz85a5");
    s->tolerance_s = 30LL * 365 * 86400;
    struct hdrs *x = hdrs_new();
    hdr_add(x, "X-Slack-Request-Timestamp", "1531420618");
    hdr_add(x, "X-Slack-Signature", "v0=a2114d57b48eac39b9ad189dd8316235a7b4a8d21a10bd27519666489c69b503");
    cr_expect_eq(checks(s, x, slack_body, now()), HK_VR_OK);
    cr_expect_eq(vv.ts, 1531420618);
    cr_expect_eq(vv.skew_s, now() - 1531420618);
    cr_expect_eq(checks(s, x, slack_body, 1531420618), HK_VR_OK);
    /* The timestamp is signed. */
    hdr_set(x, "x-slack-request-timestamp", "1531420619");
    cr_expect_eq(checks(s, x, slack_body, now()), HK_VR_NO_MATCH);
    cr_expect_str_eq(vv.header, "x-slack-signature");
    /* With the default window, the vector is far too old. */
    hdr_set(x, "x-slack-request-timestamp", "1531420618");
    s->tolerance_s = 300;
    cr_expect_eq(checks(s, x, slack_body, now()), HK_VR_TIMESTAMP);
    cr_expect_str_eq(vv.header, "x-slack-request-timestamp");
    cr_expect_gt(vv.skew_s, 300);
    free(x);
    source_free(s);
}

Test(verify, slack_and_zoom_independent)
{
    static const char body[] = "{\"event\":\"meeting.started\",\"payload\":{\"object\":{\"id\":\"1\"}}}";
    static const char *const sig_names[] = {"X-Slack-Signature", "x-zm-signature"};
    static const char *const ts_names[] = {"X-Slack-Request-Timestamp", "x-zm-request-timestamp"};
    enum hk_scheme schemes[] = {HK_SCHEME_SLACK, HK_SCHEME_ZOOM};
    for (int k = 0; k < 2; k++) {
        char ts[24], mac[100], h[200];
        size_t n;
        int64_t t = now();
        snprintf(ts, sizeof ts, "%lld", (long long)t);
        struct hk_source *s = source(schemes[k]);
        secret_str(s, "v0-secret");
        char *m = cat(&n, "v0:", ts, ":", body);
        py_hmac("sha256", "v0-secret", 9, m, n, "hex", mac, sizeof mac);
        free(m);
        snprintf(h, sizeof h, "v0=%s", mac);
        struct hdrs *x = hdrs_new();
        hdr_add(x, sig_names[k], h);
        hdr_add(x, ts_names[k], ts);
        cr_expect_eq(checks(s, x, body, t), HK_VR_OK, "%s", sig_names[k]);
        cr_expect_eq(checks(s, x, "{}", t), HK_VR_NO_MATCH);
        /* Missing prefix, malformed timestamp, missing timestamp. */
        hdr_set(x, sig_names[k], mac);
        cr_expect_eq(checks(s, x, body, t), HK_VR_MALFORMED_HEADER);
        hdr_set(x, sig_names[k], h);
        static const char *const bad_ts[] = {"", "12a", "-5", "0123", "1e9", "99999999999999"};
        for (size_t i = 0; i < sizeof bad_ts / sizeof bad_ts[0]; i++) {
            hdr_set(x, ts_names[k], bad_ts[i]);
            cr_expect_eq(checks(s, x, body, t), HK_VR_MALFORMED_HEADER, "\"%s\"", bad_ts[i]);
        }
        hdr_del(x, ts_names[k]);
        cr_expect_eq(checks(s, x, body, t), HK_VR_MISSING_HEADER);
        free(x);
        source_free(s);
    }
}

/* ---- standard webhooks ------------------------------------------------ */

static struct hk_source *std_vector_source(void)
{
    /* The Standard Webhooks / Svix libraries' test vector. */
    struct hk_source *s = source(HK_SCHEME_STANDARD);
    uint8_t key[64];
    long n = hk_base64_decode("MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw", 32, key, sizeof key);
    cr_assert_eq(n, 24);
    secret(s, key, (size_t)n);
    s->tolerance_s = 30LL * 365 * 86400;
    return s;
}

Test(verify, standard_webhooks_published_vector)
{
    static const char body[] = "{\"test\": 2432232314}";
    struct hk_source *s = std_vector_source();
    static const char *const fam[][3] = {{"webhook-id", "webhook-timestamp", "webhook-signature"},
                                         {"svix-id", "svix-timestamp", "svix-signature"}};
    for (int f = 0; f < 2; f++) {
        struct hdrs *x = hdrs_new();
        hdr_add(x, fam[f][0], "msg_p5jXN8AQM9LWM0D4loKWxJek");
        hdr_add(x, fam[f][1], "1614265330");
        hdr_add(x, fam[f][2], "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE=");
        cr_expect_eq(checks(s, x, body, now()), HK_VR_OK, "%s", fam[f][2]);
        cr_expect_eq(vv.matched, 0);
        cr_expect(!vv.need_body);
        cr_expect_eq(checks(s, x, "{\"test\": 2432232315}", now()), HK_VR_NO_MATCH);
        cr_expect_str_eq(vv.header, fam[f][2]);
        /* Several signatures, space-separated, one of them right. */
        hdr_set(x, fam[f][2],
                "v1,bm9wZQ== v2,whatever v1,Ki9ZyZmQb1kH9l3Vbcd7mgm1ZqD+X1sJk5+dMkyVqO4= "
                "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE=");
        cr_expect_eq(checks(s, x, body, now()), HK_VR_OK);
        /* The id is signed. */
        hdr_set(x, fam[f][0], "msg_p5jXN8AQM9LWM0D4loKWxJeK");
        cr_expect_eq(checks(s, x, body, now()), HK_VR_NO_MATCH);
        /* Only unknown versions, or no comma: malformed. */
        hdr_set(x, fam[f][0], "msg_p5jXN8AQM9LWM0D4loKWxJek");
        hdr_set(x, fam[f][2], "v2,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE=");
        cr_expect_eq(checks(s, x, body, now()), HK_VR_MALFORMED_HEADER);
        hdr_set(x, fam[f][2], "g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE=");
        cr_expect_eq(checks(s, x, body, now()), HK_VR_MALFORMED_HEADER);
        hdr_set(x, fam[f][2], "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE=");
        hdr_del(x, fam[f][0]);
        cr_expect_eq(checks(s, x, body, now()), HK_VR_MISSING_HEADER);
        cr_expect_str_eq(vv.header, fam[f][0]);
        free(x);
    }
    source_free(s);
}

Test(verify, standard_webhooks_hmac_and_ed25519)
{
    static const char body[] = "{\"type\":\"invoice.paid\",\"data\":{\"id\":\"in_1\"}}";
    static const uint8_t k1[] = "0123456789abcdef0123456789abcdef", k2[] = "another key, rotated in 2025!!";
    struct edkey ed;
    ed_gen(&ed);
    uint8_t derived[32];
    cr_assert_eq(hk_ed25519_public(ed.priv, derived), 0);
    cr_expect_eq(memcmp(derived, ed.pub, 32), 0, "our public key is openssl's");

    int64_t t = now();
    char ts[24], mac1[100], mac2[100], sighdr[600];
    size_t n;
    snprintf(ts, sizeof ts, "%lld", (long long)t);
    char *m = cat(&n, "msg_2Lh9kLcZ8rPZ.", ts, ".", body);
    py_hmac("sha256", k1, 32, m, n, "b64", mac1, sizeof mac1);
    py_hmac("sha256", k2, 30, m, n, "b64", mac2, sizeof mac2);
    uint8_t sig[64];
    ed_sign(&ed, m, n, sig);
    char sig64[100];
    hk_base64_encode(sig, 64, sig64);

    struct hk_source *s = source(HK_SCHEME_STANDARD);
    secret(s, k1, 32);
    secret(s, k2, 30);
    ed_key(s, ed.pub);
    struct hdrs *x = hdrs_new();
    hdr_add(x, "webhook-id", "msg_2Lh9kLcZ8rPZ");
    hdr_add(x, "webhook-timestamp", ts);
    snprintf(sighdr, sizeof sighdr, "v1,%s", mac1);
    hdr_add(x, "webhook-signature", sighdr);
    cr_expect_eq(checks(s, x, body, t), HK_VR_OK);
    cr_expect_eq(vv.matched, 0);
    cr_expect(vv.need_body);
    snprintf(sighdr, sizeof sighdr, "v1,%s", mac2);
    hdr_set(x, "webhook-signature", sighdr);
    cr_expect_eq(checks(s, x, body, t), HK_VR_OK);
    cr_expect_eq(vv.matched, 1);
    snprintf(sighdr, sizeof sighdr, "v1a,%s", sig64);
    hdr_set(x, "webhook-signature", sighdr);
    cr_expect_eq(checks(s, x, body, t), HK_VR_OK);
    cr_expect_eq(vv.matched, 2);
    cr_expect_eq(checks(s, x, "{\"type\":\"invoice.paid\",\"data\":{\"id\":\"in_2\"}}", t), HK_VR_NO_MATCH);
    /* Both kinds in one header, the v1 one stale. */
    char stale[100];
    strcpy(stale, mac1);
    stale[3] = stale[3] == 'A' ? 'B' : 'A';
    snprintf(sighdr, sizeof sighdr, "v1,%s v1a,%s", stale, sig64);
    hdr_set(x, "webhook-signature", sighdr);
    cr_expect_eq(checks(s, x, body, t), HK_VR_OK);
    cr_expect_eq(vv.matched, 2);

    /* Rotation: the first secret removed, its signature refused. */
    drop_secret(s, 0);
    snprintf(sighdr, sizeof sighdr, "v1,%s", mac1);
    hdr_set(x, "webhook-signature", sighdr);
    cr_expect_eq(checks(s, x, body, t), HK_VR_NO_MATCH);
    snprintf(sighdr, sizeof sighdr, "v1,%s", mac2);
    hdr_set(x, "webhook-signature", sighdr);
    cr_expect_eq(checks(s, x, body, t), HK_VR_OK);
    cr_expect_eq(vv.matched, 0);

    /* Kinds the source has no key for. */
    drop_secret(s, 1);     /* only the HMAC secret left */
    snprintf(sighdr, sizeof sighdr, "v1a,%s", sig64);
    hdr_set(x, "webhook-signature", sighdr);
    cr_expect_eq(checks(s, x, body, t), HK_VR_NO_SECRET);
    cr_expect_str_eq(vv.header, "webhook-signature");
    source_free(s);
    s = source(HK_SCHEME_STANDARD);
    ed_key(s, ed.pub);
    snprintf(sighdr, sizeof sighdr, "v1,%s", mac2);
    hdr_set(x, "webhook-signature", sighdr);
    cr_expect_eq(checks(s, x, body, t), HK_VR_NO_SECRET);
    /* A v1a that is not 64 bytes is skipped; none left: malformed. */
    hdr_set(x, "webhook-signature", "v1a,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE=");
    cr_expect_eq(checks(s, x, body, t), HK_VR_MALFORMED_HEADER);
    free(x);
    free(m);
    source_free(s);
    ed_free(&ed);
}

/* ---- discord ---------------------------------------------------------- */

Test(verify, discord_ed25519)
{
    static const char body[] = "{\"type\":1,\"id\":\"1000\",\"application_id\":\"2000\"}";
    struct edkey a, b;
    ed_gen(&a);
    ed_gen(&b);
    int64_t t = now();
    char ts[24], sighex[200];
    size_t n;
    snprintf(ts, sizeof ts, "%lld", (long long)t);
    char *m = cat(&n, ts, body, NULL, NULL);
    uint8_t sig[64];
    ed_sign(&b, m, n, sig);
    char *h = hexdup(sig, 64);
    strcpy(sighex, h);
    free(h);

    struct hk_source *s = source(HK_SCHEME_DISCORD);
    ed_key(s, a.pub);
    ed_key(s, b.pub);
    struct hdrs *x = hdrs_new();
    hdr_add(x, "X-Signature-Ed25519", sighex);
    hdr_add(x, "X-Signature-Timestamp", ts);
    struct hk_verify v;
    cr_assert_eq(hk_verify_begin(&v, s, &x->h, t), HK_VR_OK);
    cr_expect(v.need_body);
    hk_verify_end(&v);
    cr_expect_eq(checks(s, x, body, t), HK_VR_OK);
    cr_expect_eq(vv.matched, 1);
    cr_expect_eq(checks(s, x, "{\"type\":2,\"id\":\"1000\",\"application_id\":\"2000\"}", t), HK_VR_NO_MATCH);
    cr_expect_str_eq(vv.header, "x-signature-ed25519");
    /* A body of more than the stack copy's 2 KiB. */
    char *big = malloc(5000);
    memset(big, 'x', 4999);
    big[4999] = '\0';
    char *bm = cat(&n, ts, big, NULL, NULL);
    uint8_t bsig[64];
    ed_sign(&a, bm, n, bsig);
    h = hexdup(bsig, 64);
    hdr_set(x, "x-signature-ed25519", h);
    free(h);
    cr_expect_eq(checks(s, x, big, t), HK_VR_OK);
    cr_expect_eq(vv.matched, 0);
    big[100] = 'y';
    cr_expect_eq(checks(s, x, big, t), HK_VR_NO_MATCH);
    free(big);
    free(bm);
    hdr_set(x, "x-signature-ed25519", sighex);

    /* The timestamp is signed, and windowed. */
    char ts2[24];
    snprintf(ts2, sizeof ts2, "%lld", (long long)t - 1);
    hdr_set(x, "x-signature-timestamp", ts2);
    cr_expect_eq(checks(s, x, body, t), HK_VR_NO_MATCH);
    hdr_set(x, "x-signature-timestamp", ts);
    cr_expect_eq(checks(s, x, body, t + 301), HK_VR_TIMESTAMP);
    cr_expect_str_eq(vv.header, "x-signature-timestamp");
    cr_expect_eq(vv.skew_s, 301);
    cr_expect_eq(checks(s, x, body, t - 300), HK_VR_OK);
    /* Uppercase hex; wrong lengths. */
    char up[200];
    upper(strcpy(up, sighex));
    hdr_set(x, "x-signature-ed25519", up);
    cr_expect_eq(checks(s, x, body, t), HK_VR_OK);
    up[126] = '\0';
    hdr_set(x, "x-signature-ed25519", up);
    cr_expect_eq(checks(s, x, body, t), HK_VR_MALFORMED_HEADER);
    hdr_set(x, "x-signature-ed25519", "zz");
    cr_expect_eq(checks(s, x, body, t), HK_VR_MALFORMED_HEADER);
    /* Removed key. */
    hdr_set(x, "x-signature-ed25519", sighex);
    drop_secret(s, 1);
    cr_expect_eq(checks(s, x, body, t), HK_VR_NO_MATCH);
    drop_secret(s, 0);
    cr_expect_eq(checks(s, x, body, t), HK_VR_NO_SECRET);
    free(x);
    free(m);
    source_free(s);
    ed_free(&a);
    ed_free(&b);
}

/* ---- twitch ----------------------------------------------------------- */

Test(verify, twitch_eventsub)
{
    static const char body[] = "{\"subscription\":{\"type\":\"channel.follow\"},\"event\":{\"user_id\":\"1234\"}}";
    static const char id[] = "e76c6bd4-55c9-4987-8304-da1588d8988b";
    static const char stamp[] = "2023-01-24T19:04:09.123456789Z";
    const int64_t t = 1674587049;      /* the stamp, in unix seconds */
    char mac[100], h[200];
    size_t n;
    char *m = cat(&n, id, stamp, body, NULL);
    py_hmac("sha256", "twitch-secret-10-100", 20, m, n, "hex", mac, sizeof mac);
    free(m);
    struct hk_source *s = source(HK_SCHEME_TWITCH);
    secret_str(s, "twitch-secret-10-100");
    snprintf(h, sizeof h, "sha256=%s", mac);
    struct hdrs *x = hdrs_new();
    hdr_add(x, "Twitch-Eventsub-Message-Id", id);
    hdr_add(x, "Twitch-Eventsub-Message-Timestamp", stamp);
    hdr_add(x, "Twitch-Eventsub-Message-Signature", h);
    cr_expect_eq(checks(s, x, body, t), HK_VR_OK);
    cr_expect_eq(vv.ts, t);
    cr_expect_eq(checks(s, x, body, t + 300), HK_VR_OK);
    cr_expect_eq(checks(s, x, body, t - 300), HK_VR_OK);
    cr_expect_eq(checks(s, x, body, t + 301), HK_VR_TIMESTAMP);
    cr_expect_str_eq(vv.header, "twitch-eventsub-message-timestamp");
    cr_expect_eq(checks(s, x, body, t - 301), HK_VR_TIMESTAMP);
    cr_expect_eq(vv.skew_s, -301);
    cr_expect_eq(checks(s, x, "{}", t), HK_VR_NO_MATCH);
    /* The text is signed: the same instant spelled otherwise does not match. */
    hdr_set(x, "twitch-eventsub-message-timestamp", "2023-01-24T20:04:09.123456789+01:00");
    cr_expect_eq(checks(s, x, body, t), HK_VR_NO_MATCH);
    cr_expect_eq(vv.ts, t);
    hdr_set(x, "twitch-eventsub-message-timestamp", "2023-01-24T19:04:09Z");
    cr_expect_eq(checks(s, x, body, t), HK_VR_NO_MATCH);
    cr_expect_eq(vv.ts, t);
    static const char *const bad[] = {"2023-01-24 19:04:09Z", "2023-02-30T19:04:09Z", "2023-01-24T24:00:00Z",
                                      "2023-01-24T19:04:09", "2023-01-24T19:04:09.Z", "1674587049",
                                      "2023-01-24T19:04:09.123Zjunk", "2023-13-01T00:00:00Z"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        hdr_set(x, "twitch-eventsub-message-timestamp", bad[i]);
        cr_expect_eq(checks(s, x, body, t), HK_VR_MALFORMED_HEADER, "\"%s\"", bad[i]);
        cr_expect_str_eq(vv.header, "twitch-eventsub-message-timestamp");
    }
    /* A leap day parses. */
    hdr_set(x, "twitch-eventsub-message-timestamp", "2024-02-29T00:00:00Z");
    cr_expect_eq(checks(s, x, body, 1709164800), HK_VR_NO_MATCH);
    cr_expect_eq(vv.ts, 1709164800);
    hdr_set(x, "twitch-eventsub-message-timestamp", stamp);
    hdr_set(x, "twitch-eventsub-message-id", "e76c6bd4-55c9-4987-8304-da1588d8988c");
    cr_expect_eq(checks(s, x, body, t), HK_VR_NO_MATCH);
    hdr_set(x, "twitch-eventsub-message-id", id);
    hdr_set(x, "twitch-eventsub-message-signature", mac);
    cr_expect_eq(checks(s, x, body, t), HK_VR_MALFORMED_HEADER);
    free(x);
    source_free(s);
}

/* ---- twilio ----------------------------------------------------------- */

Test(verify, twilio_published_vectors)
{
    /* Twilio's request-validation examples (TwilioDevEd/api-snippets): the
     * older snippet with +14158675309, the newer with +14158675310. The
     * parameters are sent out of order and percent-encoded, as a form. */
    struct hk_source *s = source(HK_SCHEME_TWILIO);
    s->public_url = (char *)"https://mycompany.com/myapp.php?foo=1&bar=2";
    secret_str(s, "12345");
    struct hdrs *x = hdrs_new();
    hdr_add(x, "X-Twilio-Signature", "RSOYDt4T1cUTdK1PDd93/VVr8B8=");
    static const char b1[] = "To=%2B18005551212&Digits=1234&From=%2B14158675309&CallSid=CA1234567890ABCDE"
                             "&Caller=%2B14158675309";
    cr_expect_eq(checks(s, x, b1, now()), HK_VR_OK);
    cr_expect_eq(vv.matched, 0);
    struct hk_verify v;
    cr_assert_eq(hk_verify_begin(&v, s, &x->h, now()), HK_VR_OK);
    cr_expect(v.need_body);
    hk_verify_end(&v);
    hdr_set(x, "x-twilio-signature", "GvWf1cFY/Q7PnoempGyD5oXAezc=");
    static const char b2[] = "Caller=%2b14158675310&CallSid=CA1234567890ABCDE&Digits=1234&From=%2B14158675310"
                             "&To=%2B18005551212";
    cr_expect_eq(checks(s, x, b2, now()), HK_VR_OK);
    /* '+' in a form is a space, not a plus: another message. */
    static const char b3[] = "Caller=+14158675310&CallSid=CA1234567890ABCDE&Digits=1234&From=%2B14158675310"
                             "&To=%2B18005551212";
    cr_expect_eq(checks(s, x, b3, now()), HK_VR_NO_MATCH);
    cr_expect_eq(checks(s, x, "Caller=%2B14158675310", now()), HK_VR_NO_MATCH);
    /* The URL is signed. */
    s->public_url = (char *)"https://mycompany.com/myapp.php?foo=1&bar=3";
    cr_expect_eq(checks(s, x, b2, now()), HK_VR_NO_MATCH);
    free(x);
    source_free(s);
}

static void py_twilio(const char *token, const char *url, const char *body, char *out, size_t cap)
{
    char *bh = hexdup(body, strlen(body));
    size_t cl = strlen(bh) + strlen(url) + 600;
    char *cmd = malloc(cl);
    snprintf(cmd, cl,
             "%s -c 'import base64,hashlib,hmac,sys,urllib.parse as u\n"
             "b = bytes.fromhex(sys.argv[3]).decode()\n"
             "s = sys.argv[2] + \"\".join(k + v for k, v in sorted(u.parse_qsl(b, keep_blank_values=True)))\n"
             "print(base64.b64encode(hmac.new(sys.argv[1].encode(), s.encode(), hashlib.sha1).digest()).decode())'"
             " '%s' '%s' '%s'",
             python(), token, url, bh);
    run(cmd, out, cap);
    free(cmd);
    free(bh);
}

Test(verify, twilio_independent)
{
    static const char url[] = "https://hooks.example.com/hooks/twilio";
    static const char body[] = "MessageSid=SM1&Body=Hello+there%21+%E2%9C%93&From=%2B15551230000&To=%2B15559870000"
                               "&NumMedia=0&Empty=&Body=A+second+body&AccountSid=AC1";
    char sig[100], sig2[100];
    py_twilio("token-one", url, body, sig, sizeof sig);
    py_twilio("token-two", url, body, sig2, sizeof sig2);
    struct hk_source *s = source(HK_SCHEME_TWILIO);
    s->public_url = (char *)url;
    secret_str(s, "token-one");
    secret_str(s, "token-two");
    struct hdrs *x = hdrs_new();
    hdr_add(x, "X-Twilio-Signature", sig);
    cr_expect_eq(checks(s, x, body, now()), HK_VR_OK);
    cr_expect_eq(vv.matched, 0);
    hdr_set(x, "x-twilio-signature", sig2);
    cr_expect_eq(checks(s, x, body, now()), HK_VR_OK);
    cr_expect_eq(vv.matched, 1);
    drop_secret(s, 1);
    cr_expect_eq(checks(s, x, body, now()), HK_VR_NO_MATCH);
    cr_expect_str_eq(vv.header, "x-twilio-signature");
    hdr_set(x, "x-twilio-signature", sig);
    cr_expect_eq(checks(s, x, "MessageSid=SM1", now()), HK_VR_NO_MATCH);

    /* A broken escape, and more than 1000 parameters: malformed. */
    cr_expect_eq(checks(s, x, "Body=%E2%9", now()), HK_VR_MALFORMED_HEADER);
    cr_expect_null(vv.header);
    char *many = malloc(1001 * 4 + 1);
    many[0] = '\0';
    for (int i = 0; i < 1001; i++)
        strcat(many, "a=1&");
    cr_expect_eq(checks(s, x, many, now()), HK_VR_MALFORMED_HEADER);
    many[1000 * 4] = '\0';     /* exactly 1000: fine, just not signed so */
    cr_expect_eq(checks(s, x, many, now()), HK_VR_NO_MATCH);
    free(many);
    /* The signature is base64 of 20 bytes. */
    hdr_set(x, "x-twilio-signature", "bm9wZQ==");
    cr_expect_eq(checks(s, x, body, now()), HK_VR_MALFORMED_HEADER);
    free(x);
    source_free(s);
}

Test(verify, twilio_json_body_sha256)
{
    static const char body[] = "{\"CallSid\":\"CA1\",\"CallStatus\":\"completed\"}";
    char cmd[1024], hash[100], url[300], sig[100];
    char *bh = hexdup(body, strlen(body));
    snprintf(cmd, sizeof cmd,
             "%s -c 'import hashlib,sys; print(hashlib.sha256(bytes.fromhex(sys.argv[1])).hexdigest())' %s",
             python(), bh);
    run(cmd, hash, sizeof hash);
    free(bh);
    snprintf(url, sizeof url, "https://hooks.example.com/hooks/twilio?bodySHA256=%s", hash);
    py_twilio("tok", url, "", sig, sizeof sig);     /* the URL alone */
    struct hk_source *s = source(HK_SCHEME_TWILIO);
    s->public_url = url;
    secret_str(s, "tok");
    struct hdrs *x = hdrs_new();
    hdr_add(x, "X-Twilio-Signature", sig);
    cr_expect_eq(checks(s, x, body, now()), HK_VR_OK);
    cr_expect_eq(checks(s, x, "{\"CallSid\":\"CA2\",\"CallStatus\":\"completed\"}", now()), HK_VR_NO_MATCH);
    free(x);
    source_free(s);
}

/* ---- generic hmac ----------------------------------------------------- */

Test(verify, generic_hmac_templates)
{
    static const char body[] = "{\"event\":\"build.finished\"}";
    int64_t t = now();
    char ts[24], mac[200], h[300];
    size_t n;
    snprintf(ts, sizeof ts, "%lld", (long long)t);

    /* sha512, base64, a prefix, "{timestamp}.{body}". */
    struct hk_source *s = source(HK_SCHEME_HMAC);
    s->algorithm = HK_MD_SHA512;
    s->encoding = HK_ENC_BASE64;
    s->header = (char *)"x-signature";
    s->prefix = (char *)"v1=";
    s->timestamp_header = (char *)"x-timestamp";
    s->template = (char *)"{timestamp}.{body}";
    secret_str(s, "generic-512");
    char *m = cat(&n, ts, ".", body, NULL);
    py_hmac("sha512", "generic-512", 11, m, n, "b64", mac, sizeof mac);
    free(m);
    snprintf(h, sizeof h, "v1=%s", mac);
    struct hdrs *x = hdrs_new();
    hdr_add(x, "X-Signature", h);
    hdr_add(x, "X-Timestamp", ts);
    cr_expect_eq(checks(s, x, body, t), HK_VR_OK);
    cr_expect_eq(checks(s, x, body, t + 301), HK_VR_TIMESTAMP);
    cr_expect_str_eq(vv.header, "x-timestamp");
    cr_expect_eq(checks(s, x, body, t - 300), HK_VR_OK);
    cr_expect_eq(checks(s, x, "{}", t), HK_VR_NO_MATCH);
    hdr_set(x, "x-signature", mac);
    cr_expect_eq(checks(s, x, body, t), HK_VR_MALFORMED_HEADER);
    hdr_set(x, "x-signature", h);
    hdr_del(x, "x-timestamp");
    cr_expect_eq(checks(s, x, body, t), HK_VR_MISSING_HEADER);
    cr_expect_str_eq(vv.header, "x-timestamp");
    free(x);
    source_free(s);

    /* sha1, hex, text after the body, the id. */
    s = source(HK_SCHEME_HMAC);
    s->algorithm = HK_MD_SHA1;
    s->header = (char *)"x-hook-sig";
    s->id_header = (char *)"x-hook-id";
    s->template = (char *)"{id}:{body}:end";
    secret_str(s, "sha1-key");
    m = cat(&n, "d-42:", body, ":end", NULL);
    py_hmac("sha1", "sha1-key", 8, m, n, "hex", mac, sizeof mac);
    free(m);
    x = hdrs_new();
    hdr_add(x, "X-Hook-Sig", mac);
    hdr_add(x, "X-Hook-Id", "d-42");
    cr_expect_eq(checks(s, x, body, t), HK_VR_OK);
    cr_expect_eq(vv.ts, 0);
    hdr_set(x, "x-hook-id", "d-43");
    cr_expect_eq(checks(s, x, body, t), HK_VR_NO_MATCH);
    hdr_del(x, "x-hook-id");
    cr_expect_eq(checks(s, x, body, t), HK_VR_MISSING_HEADER);
    cr_expect_str_eq(vv.header, "x-hook-id");
    free(x);
    source_free(s);
}

/* ---- the parsers ------------------------------------------------------ */

Test(verify, parse_stripe)
{
    struct hk_sig_item v[4];
    int64_t t = 0;
    static const char h[] = "t=1492774577,v1=5257a869,v0=6ffbb59b,v1=abc";
    cr_expect_eq(hk_parse_stripe(h, strlen(h), &t, v, 4), 2);
    cr_expect_eq(t, 1492774577);
    cr_expect_eq(v[0].p, h + 16);
    cr_expect_eq(v[0].len, 8);
    cr_expect_eq(v[1].len, 3);
    cr_expect_eq(memcmp(v[1].p, "abc", 3), 0);
    cr_expect_eq(hk_parse_stripe(h, strlen(h), &t, v, 1), 1);
    cr_expect_eq(hk_parse_stripe("t=5", 3, &t, v, 4), 0);
    cr_expect_eq(t, 5);
    static const char *const bad[] = {"", "v1=a", "t=1,", ",t=1", "t=1,,v1=a", "t=a", "t=1,t=1", "t=1,v1=",
                                      "t=1,=x", "t=1,v1", "t=-1", "t=0012"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
        cr_expect_eq(hk_parse_stripe(bad[i], strlen(bad[i]), &t, v, 4), -1, "\"%s\"", bad[i]);
}

Test(verify, parse_std_sigs)
{
    struct hk_sig_item v[4];
    uint8_t k[4];
    static const char h[] = "v1,AAA=  v1a,BBBB v2,CC v1,DD";
    cr_expect_eq(hk_parse_std_sigs(h, strlen(h), v, k, 4), 3);
    cr_expect_eq(k[0], 1);
    cr_expect_eq(v[0].len, 4);
    cr_expect_eq(memcmp(v[0].p, "AAA=", 4), 0);
    cr_expect_eq(k[1], 2);
    cr_expect_eq(memcmp(v[1].p, "BBBB", 4), 0);
    cr_expect_eq(k[2], 1);
    cr_expect_eq(memcmp(v[2].p, "DD", 2), 0);
    cr_expect_eq(hk_parse_std_sigs(h, strlen(h), v, k, 2), 2);
    cr_expect_eq(hk_parse_std_sigs("", 0, v, k, 4), 0);
    cr_expect_eq(hk_parse_std_sigs("   ", 3, v, k, 4), 0);
    static const char *const bad[] = {"v1", "v1,", ",abc", "v1,a b", "v1,a v1"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
        cr_expect_eq(hk_parse_std_sigs(bad[i], strlen(bad[i]), v, k, 4), -1, "\"%s\"", bad[i]);
}

Test(verify, template_expand)
{
    char pre[32], post[32];
    size_t pl = 99, ql = 99;
    cr_assert_eq(hk_template_expand("{body}", NULL, 0, NULL, 0, pre, sizeof pre, &pl, post, sizeof post, &ql), 0);
    cr_expect_eq(pl, 0);
    cr_expect_eq(ql, 0);
    cr_assert_eq(hk_template_expand("v0:{timestamp}:{body}", "17", 2, NULL, 0, pre, sizeof pre, &pl, post,
                                    sizeof post, &ql),
                 0);
    cr_expect_str_eq(pre, "v0:17:");
    cr_expect_eq(pl, 6);
    cr_expect_str_eq(post, "");
    cr_assert_eq(hk_template_expand("{id}.{timestamp}.{body}|{id}{x", "9", 1, "abc", 3, pre, sizeof pre, &pl, post,
                                    sizeof post, &ql),
                 0);
    cr_expect_str_eq(pre, "abc.9.");
    cr_expect_str_eq(post, "|abc{x");
    cr_expect_eq(ql, 6);
    /* JSON-looking braces are literal. */
    cr_assert_eq(hk_template_expand("{\"a\":{body}}", NULL, 0, NULL, 0, pre, sizeof pre, &pl, post, sizeof post, &ql),
                 0);
    cr_expect_str_eq(pre, "{\"a\":");
    cr_expect_str_eq(post, "}");
    static const char *const bad[] = {"", "no body", "{body}{body}", "{timestamp}{body}", "{id}{body}",
                                      "{bod}{body}", "{body}{timestamps}"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
        cr_expect_eq(hk_template_expand(bad[i], NULL, 0, NULL, 0, pre, sizeof pre, &pl, post, sizeof post, &ql), -1,
                     "\"%s\"", bad[i]);
    /* Too long for the buffers (the NUL counts). */
    cr_expect_eq(hk_template_expand("{id}{body}", NULL, 0, "0123456789", 10, pre, 10, &pl, post, sizeof post, &ql),
                 -1);
    cr_expect_eq(hk_template_expand("{id}{body}", NULL, 0, "012345678", 9, pre, 10, &pl, post, sizeof post, &ql), 0);
    cr_expect_eq(hk_template_expand("{body}123", NULL, 0, NULL, 0, pre, sizeof pre, &pl, post, 3, &ql), -1);
}

/* ---- hk_sign round trips, streaming, the window for every scheme ------ */

static const char *scheme_label(enum hk_scheme s)
{
    static const char *const names[HK_SCHEME__COUNT] = {
        "github", "gitea", "gitlab", "stripe", "shopify", "slack", "standard-webhooks",
        "discord", "twitch", "zoom", "meta", "twilio", "hmac", "token", "none",
    };
    return (unsigned)s < HK_SCHEME__COUNT ? names[s] : "?";
}

struct signer {
    struct hk_source *src;
    struct edkey ed;
    bool has_ed;
};

/* A source of each scheme with a secret (or an openssl ed25519 key). */
static void signer_make(struct signer *g, enum hk_scheme scheme, bool ed)
{
    memset(g, 0, sizeof *g);
    g->src = source(scheme);
    struct hk_source *s = g->src;
    switch (scheme) {
    case HK_SCHEME_TWILIO:
        s->public_url = (char *)"https://hooks.example.com/hooks/sms";
        break;
    case HK_SCHEME_HMAC:
        s->header = (char *)"x-sig";
        s->prefix = (char *)"sha256=";
        s->timestamp_header = (char *)"x-ts";
        s->id_header = (char *)"x-id";
        s->template = (char *)"{id}|{timestamp}|{body}|";
        break;
    case HK_SCHEME_TOKEN:
        s->header = (char *)"x-token";
        break;
    default:
        break;
    }
    if (scheme == HK_SCHEME_DISCORD || ed) {
        ed_gen(&g->ed);
        g->has_ed = true;
        ed_key(s, g->ed.pub);
    } else if (scheme != HK_SCHEME_NONE) {
        secret_str(s, scheme == HK_SCHEME_STRIPE ? "whsec_round_trip" : "round-trip-secret");
    }
}

static void signer_free(struct signer *g)
{
    if (g->has_ed)
        ed_free(&g->ed);
    source_free(g->src);
}

static struct hdrs *sign(struct signer *g, const char *body, int64_t t)
{
    struct hk_buf out = HK_BUF_INIT;
    char err[200] = "";
    int rc = hk_sign(g->src, body, strlen(body), t, NULL, g->has_ed ? g->ed.priv : NULL, &out, err, sizeof err);
    cr_assert_eq(rc, 0, "%s: %s", scheme_label(g->src->scheme), err);
    struct hdrs *x = hdrs_parse(out.p, out.len);
    hk_buf_free(&out);
    return x;
}

/* Does the scheme's signature cover the body? */
static bool signs_body(enum hk_scheme s)
{
    return s != HK_SCHEME_GITLAB && s != HK_SCHEME_TOKEN && s != HK_SCHEME_NONE;
}

static const char round_body[] = "{\"id\":\"evt_round\",\"n\":[1,2,3],\"s\":\"caf\xc3\xa9\"}";
static const char round_form[] = "Body=Hi+there%21&From=%2B15551230000&To=%2B15559870000&AccountSid=AC1";

Test(verify, sign_round_trips_every_scheme, .timeout = 60)
{
    for (int sc = 0; sc < HK_SCHEME__COUNT; sc++) {
        for (int ed = 0; ed < (sc == HK_SCHEME_STANDARD ? 2 : 1); ed++) {
            struct signer g;
            signer_make(&g, (enum hk_scheme)sc, ed);
            const char *body = sc == HK_SCHEME_TWILIO ? round_form : round_body;
            int64_t t = now();
            struct hdrs *x = sign(&g, body, t);
            const char *label = scheme_label((enum hk_scheme)sc);
            const char *ct = hdr_val(x, "content-type");
            cr_expect_str_eq(ct, sc == HK_SCHEME_TWILIO ? "application/x-www-form-urlencoded" : "application/json",
                             "%s", label);
            cr_expect_eq(checks(g.src, x, body, t), HK_VR_OK, "%s%s: %s", label, ed ? " (ed25519)" : "",
                         hk_vreason_name(vv.reason));
            cr_expect_eq(vv.matched, sc == HK_SCHEME_NONE ? -1 : 0, "%s", label);
            if (signs_body((enum hk_scheme)sc)) {
                char tampered[sizeof round_form > sizeof round_body ? sizeof round_form : sizeof round_body];
                strcpy(tampered, body);
                tampered[10] ^= 1;
                cr_expect_eq(checks(g.src, x, tampered, t), HK_VR_NO_MATCH, "%s tampered", label);
            }

            /* Streaming: split at every byte, and a byte at a time, gives
             * the one-shot verdict, for a right and for a wrong body. */
            size_t n = strlen(body);
            for (size_t cut = 0; cut <= n; cut++) {
                struct hk_verify v;
                cr_assert_eq(hk_verify_begin(&v, g.src, &x->h, t), HK_VR_OK, "%s", label);
                hk_verify_update(&v, body, cut);
                hk_verify_update(&v, body + cut, n - cut);
                cr_expect_eq(hk_verify_finish(&v, body, n), HK_VR_OK, "%s split at %zu", label, cut);
                hk_verify_end(&v);
                hk_verify_end(&v);     /* twice is safe */
            }
            struct hk_verify v;
            cr_assert_eq(hk_verify_begin(&v, g.src, &x->h, t), HK_VR_OK);
            for (size_t i = 0; i < n; i++)
                hk_verify_update(&v, body + i, 1);
            hk_verify_update(&v, NULL, 0);
            cr_expect_eq(hk_verify_finish(&v, body, n), HK_VR_OK, "%s bytewise", label);
            cr_expect_eq(hk_verify_finish(&v, body, n), HK_VR_OK, "%s finish twice", label);
            hk_verify_end(&v);
            if (signs_body((enum hk_scheme)sc) && sc != HK_SCHEME_TWILIO) {
                /* The streamed bytes are what count, not a body handed to
                 * finish afterwards (ed25519 excepted: it needs the body). */
                bool ed_only = sc == HK_SCHEME_DISCORD || (sc == HK_SCHEME_STANDARD && ed);
                cr_assert_eq(hk_verify_begin(&v, g.src, &x->h, t), HK_VR_OK);
                hk_verify_update(&v, body, n - 1);
                hk_verify_update(&v, "#", 1);
                cr_expect_eq(hk_verify_finish(&v, body, n), ed_only ? HK_VR_OK : HK_VR_NO_MATCH, "%s", label);
                hk_verify_end(&v);
            }
            free(x);
            signer_free(&g);
        }
    }
}

Test(verify, sign_matches_independent_values)
{
    struct signer g;
    char mac[200], want[300];
    signer_make(&g, HK_SCHEME_GITHUB, false);
    struct hdrs *x = sign(&g, round_body, 1700000000);
    py_hmac("sha256", "round-trip-secret", 17, round_body, strlen(round_body), "hex", mac, sizeof mac);
    snprintf(want, sizeof want, "sha256=%s", mac);
    cr_expect_str_eq(hdr_val(x, "x-hub-signature-256"), want);
    free(x);
    signer_free(&g);

    signer_make(&g, HK_SCHEME_STRIPE, false);
    x = sign(&g, round_body, 1700000000);
    stripe_header("whsec_round_trip", 1700000000, round_body, want, sizeof want);
    cr_expect_str_eq(hdr_val(x, "stripe-signature"), want);
    free(x);
    signer_free(&g);

    /* Standard webhooks with the published vector's key, id and time. */
    struct hk_source *s = std_vector_source();
    struct hk_buf out = HK_BUF_INIT;
    char err[200];
    static const char body[] = "{\"test\": 2432232314}";
    cr_assert_eq(hk_sign(s, body, strlen(body), 1614265330, "msg_p5jXN8AQM9LWM0D4loKWxJek", NULL, &out, err,
                         sizeof err),
                 0, "%s", err);
    x = hdrs_parse(out.p, out.len);
    cr_expect_str_eq(hdr_val(x, "webhook-signature"), "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE=");
    cr_expect_str_eq(hdr_val(x, "webhook-id"), "msg_p5jXN8AQM9LWM0D4loKWxJek");
    cr_expect_str_eq(hdr_val(x, "webhook-timestamp"), "1614265330");
    hk_buf_free(&out);
    free(x);
    source_free(s);

    /* Discord: openssl verifies what hk_sign wrote. */
    signer_make(&g, HK_SCHEME_DISCORD, true);
    x = sign(&g, round_body, 1700000000);
    uint8_t sig[64];
    const char *sh = hdr_val(x, "x-signature-ed25519");
    cr_assert_eq(strlen(sh), 128);
    for (int i = 0; i < 64; i++) {
        unsigned v;
        sscanf(sh + 2 * i, "%2x", &v);
        sig[i] = (uint8_t)v;
    }
    uint8_t mine[64];
    size_t n;
    char *m = cat(&n, "1700000000", round_body, NULL, NULL);
    ed_sign(&g.ed, m, n, mine);
    cr_expect_eq(memcmp(sig, mine, 64), 0, "ed25519 is deterministic: openssl signs the same bytes");
    free(m);
    free(x);
    signer_free(&g);

    /* Twitch: the id given is used, the stamp is RFC 3339. */
    signer_make(&g, HK_SCHEME_TWITCH, false);
    cr_assert_eq(hk_sign(g.src, round_body, strlen(round_body), 1674587049, "id-1", NULL, &out, err, sizeof err), 0);
    x = hdrs_parse(out.p, out.len);
    cr_expect_str_eq(hdr_val(x, "twitch-eventsub-message-id"), "id-1");
    cr_expect_str_eq(hdr_val(x, "twitch-eventsub-message-timestamp"), "2023-01-24T19:04:09.000000000Z");
    hk_buf_free(&out);
    free(x);
    signer_free(&g);
}

Test(verify, sign_refusals)
{
    struct hk_buf out = HK_BUF_INIT;
    char err[200];
    struct hk_source *s = source(HK_SCHEME_DISCORD);
    cr_expect_eq(hk_sign(s, "{}", 2, 1, NULL, NULL, &out, err, sizeof err), -1);
    cr_expect(strstr(err, "private key"), "%s", err);
    source_free(s);
    s = source(HK_SCHEME_GITHUB);
    cr_expect_eq(hk_sign(s, "{}", 2, 1, NULL, NULL, &out, err, sizeof err), -1);
    cr_expect(strstr(err, "no secret"), "%s", err);
    secret_str(s, "a secret never printed");
    cr_expect_eq(hk_sign(s, "{}", 2, 1, NULL, NULL, &out, err, sizeof err), 0);
    cr_expect(memmem(out.p, out.len, "X-Hub-Signature-256: sha256=", 28), "%.*s", (int)out.len, out.p);
    cr_expect(!memmem(out.p, out.len, "never printed", 13));
    /* An id that cannot be a header value, even where none is signed. */
    cr_expect_eq(hk_sign(s, "{}", 2, 1, "bad id", NULL, &out, err, sizeof err), -1);
    cr_expect(strstr(err, "delivery id"), "%s", err);
    source_free(s);
    s = source(HK_SCHEME_TOKEN);
    s->header = (char *)"x-token";
    secret_str(s, "two\r\nlines");
    cr_expect_eq(hk_sign(s, "{}", 2, 1, NULL, NULL, &out, err, sizeof err), -1);
    cr_expect(!strstr(err, "two"), "the secret stays out of errors: %s", err);
    source_free(s);
    s = source(HK_SCHEME_STANDARD);
    secret_str(s, "k");
    cr_expect_eq(hk_sign(s, "{}", 2, 1, "has space", NULL, &out, err, sizeof err), -1);
    source_free(s);
    hk_buf_free(&out);
}

/* The window at its edges, for every scheme that signs a time. */
Test(verify, tolerance_edges_every_timestamped_scheme, .timeout = 60)
{
    static const enum hk_scheme timed[] = {HK_SCHEME_STRIPE, HK_SCHEME_SLACK,   HK_SCHEME_ZOOM, HK_SCHEME_STANDARD,
                                           HK_SCHEME_DISCORD, HK_SCHEME_TWITCH, HK_SCHEME_HMAC};
    for (size_t i = 0; i < sizeof timed / sizeof timed[0]; i++) {
        struct signer g;
        signer_make(&g, timed[i], false);
        g.src->tolerance_s = 120;
        int64_t t = 1700000000;
        struct hdrs *x = sign(&g, round_body, t);
        const char *label = scheme_label(timed[i]);
        cr_expect_eq(checks(g.src, x, round_body, t + 120), HK_VR_OK, "%s +tol", label);
        cr_expect_eq(checks(g.src, x, round_body, t - 120), HK_VR_OK, "%s -tol", label);
        cr_expect_eq(checks(g.src, x, round_body, t + 121), HK_VR_TIMESTAMP, "%s +tol+1", label);
        cr_expect_eq(vv.skew_s, 121, "%s", label);
        cr_expect_eq(vv.ts, t, "%s", label);
        cr_expect_not_null(vv.header, "%s", label);
        cr_expect_eq(checks(g.src, x, round_body, t - 121), HK_VR_TIMESTAMP, "%s -tol-1", label);
        cr_expect_eq(vv.skew_s, -121, "%s", label);
        free(x);
        signer_free(&g);
    }
}

/* Headers sent twice are malformed whichever one the scheme reads. */
Test(verify, duplicated_headers_every_scheme, .timeout = 60)
{
    for (int sc = 0; sc < HK_SCHEME__COUNT; sc++) {
        if (sc == HK_SCHEME_NONE)
            continue;
        struct signer g;
        signer_make(&g, (enum hk_scheme)sc, false);
        const char *body = sc == HK_SCHEME_TWILIO ? round_form : round_body;
        int64_t t = now();
        struct hdrs *x = sign(&g, body, t);
        size_t nh = x->list.n;
        for (size_t i = 0; i < nh; i++) {
            if (!strcasecmp(x->v[i].name, "content-type"))
                continue;
            struct hdrs *y = sign(&g, body, t);
            hdr_addn(y, x->v[i].name, x->v[i].value, x->v[i].value_len);
            cr_expect_eq(checks(g.src, y, body, t), HK_VR_MALFORMED_HEADER, "%s: %s twice",
                         scheme_label((enum hk_scheme)sc), x->v[i].name);
            free(y);
            /* And without it: missing. */
            y = sign(&g, body, t);
            hdr_del(y, x->v[i].name);
            cr_expect_eq(checks(g.src, y, body, t), HK_VR_MISSING_HEADER, "%s: no %s",
                         scheme_label((enum hk_scheme)sc), x->v[i].name);
            free(y);
        }
        free(x);
        signer_free(&g);
    }
}

/* Garbage in every header a scheme reads: refused, never accepted. */
Test(verify, garbage_headers_every_scheme, .timeout = 60)
{
    static const char *const junk[] = {
        "", " ", "=", ",", "v1,", "sha256=", "t=", "\x01\x02", "\xff\xfe", "AAAA", "v0=",
        "0000000000000000000000000000000000000000000000000000000000000000",
    };
    for (int sc = 0; sc < HK_SCHEME__COUNT; sc++) {
        if (sc == HK_SCHEME_NONE)
            continue;
        struct signer g;
        signer_make(&g, (enum hk_scheme)sc, false);
        const char *body = sc == HK_SCHEME_TWILIO ? round_form : round_body;
        int64_t t = now();
        struct hdrs *x = sign(&g, body, t);
        for (size_t i = 0; i < x->list.n; i++) {
            if (!strcasecmp(x->v[i].name, "content-type"))
                continue;
            for (size_t j = 0; j < sizeof junk / sizeof junk[0]; j++) {
                struct hdrs *y = sign(&g, body, t);
                hdr_set(y, x->v[i].name, junk[j]);
                enum hk_vreason r = checks(g.src, y, body, t);
                cr_expect_neq(r, HK_VR_OK, "%s: %s = \"%s\"", scheme_label((enum hk_scheme)sc), x->v[i].name,
                              junk[j]);
                cr_expect_eq(vv.matched, -1);
                free(y);
            }
        }
        free(x);
        signer_free(&g);
    }
}
