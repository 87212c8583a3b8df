/* SPDX-License-Identifier: MIT
 * ingress/sources.c: every key of the sources file and its default, YAML
 * and JSON, every refusal with its exact one-line message (and never a
 * secret in it), secret decoding per scheme (HMAC pads checked against
 * libcrypto's own HMAC), trusted proxies, the forward: and retention:
 * keys (a sink URL's password never in an error), reference counting, a
 * file of HK_SOURCES_MAX sources; and ingress/cli.c: `hookd sign` into
 * `hookd verify` for several schemes, tampering, and usage errors. */
#include <arpa/inet.h>
#include <criterion/criterion.h>
#include <fcntl.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "core/ascii.h"
#include "core/base64.h"
#include "core/buf.h"
#include "core/crypto.h"
#include "ingress/cli.h"
#include "ingress/sources.h"
#include "ingress/verify.h"

/* Recognisable values: none of them may ever appear in an error. */
#define STRIPE_VAL "whsec_RECOGNISABLE_stripe_value_7f3a"
#define CI_VAL "ci-RECOGNISABLE-secret-0042"
#define GH_VAL "It's a Secret to Everybody"
#define TOKEN_VAL "glpat-RECOGNISABLE-token-9911"
#define STD_VAL "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"
#define BAD_STD_VAL "whsec_RECOGNISABLE!!not*base64"
#define META_VAL "meta-RECOGNISABLE-verify"
/* RFC 8032, test 1. */
#define ED_PRIV "9d61b19deffd5a60ba844af492ec2cc44449c5697b326919703bac031cae7f60"
#define ED_PUB "d75a980182b10ab7d54bfed3c964073a0ee172f3daa62325af021a68f707511a"

static char long_val[2100];
static char std_pk[64];

static const char *test_env(const char *name)
{
    static const struct {
        const char *name, *value;
    } env[] = {
        {"STRIPE_SECRET", STRIPE_VAL}, {"CI_SECRET", CI_VAL},      {"GH_SECRET", GH_VAL},
        {"TOKEN", TOKEN_VAL},          {"STD_SECRET", STD_VAL},    {"BAD_STD", BAD_STD_VAL},
        {"META_VERIFY", META_VAL},     {"EMPTY", ""},              {"DISCORD_PK", ED_PUB},
        {"DISCORD_BAD", "RECOGNISABLE0123456789abcdef0123456789abcdef0123456789abcdef0123"},
        {"STD_NOPREFIX", "MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"},
    };
    if (!strcmp(name, "LONG")) {
        memset(long_val, 'R', 1025);
        long_val[1025] = '\0';
        return long_val;
    }
    if (!strcmp(name, "STD_PK")) {
        uint8_t pub[32];
        hk_hex_decode(ED_PUB, pub, 32);
        memcpy(std_pk, "whpk_", 5);
        hk_base64_encode(pub, 32, std_pk + 5);
        return std_pk;
    }
    for (size_t i = 0; i < sizeof env / sizeof env[0]; i++)
        if (!strcmp(env[i].name, name))
            return env[i].value;
    return NULL;
}

static char err[512];

static struct hk_sources *parse(const char *text)
{
    err[0] = '\0';
    return hk_sources_parse(text, strlen(text), "sources.yaml", 1048576, test_env, err, sizeof err);
}

static void expect_error(const char *text, const char *want)
{
    struct hk_sources *s = parse(text);
    cr_expect_null(s, "accepted: %s", text);
    cr_expect_str_eq(err, want, "for: %s\n got: %s\nwant: %s", text, err, want);
    hk_sources_unref(s);
}

static const struct hk_source *find(const struct hk_sources *s, const char *name)
{
    return hk_sources_find(s, name, strlen(name));
}

/* A temporary file holding `content`; the path goes into path (64 bytes). */
static void temp_file(char *path, const char *content, size_t n)
{
    strcpy(path, "/tmp/hk_test_sources_XXXXXX");
    int fd = mkstemp(path);
    cr_assert_geq(fd, 0);
    cr_assert_eq(write(fd, content, n), (ssize_t)n);
    close(fd);
}

static void hmac_ref(enum hk_md md, const void *key, size_t klen, const char *msg, uint8_t *out, unsigned *outlen)
{
    const EVP_MD *m = md == HK_MD_SHA1 ? EVP_sha1() : md == HK_MD_SHA256 ? EVP_sha256() : EVP_sha512();
    cr_assert_not_null(HMAC(m, key, (int)klen, (const unsigned char *)msg, strlen(msg), out, outlen));
}

/* The secret's prepared pads make the same MAC as libcrypto's HMAC over its key. */
static void expect_hmac_prepared(const struct hk_secret *sec, enum hk_md md)
{
    static const char msg[] = "{\"id\":\"evt_1\",\"type\":\"ping\"}";
    uint8_t want[64], got[64];
    unsigned wlen = 0;
    hmac_ref(md, sec->key, sec->len, msg, want, &wlen);
    struct hk_hmac_ctx c;
    hk_hmac_begin(&c, &sec->hmac);
    hk_hmac_update(&c, msg, strlen(msg));
    size_t glen = hk_hmac_final(&c, got);
    cr_expect_eq(glen, wlen);
    cr_expect_eq(memcmp(got, want, wlen), 0, "HMAC pads of %s", sec->ref);
}

/* ------------------------------------------------------------ the format */

Test(sources, the_documented_example)
{
    char old[64];
    temp_file(old, "old-secret-bytes\n\n", 18);
    char text[1024];
    snprintf(text, sizeof text,
             "sources:\n"
             "  - name: stripe\n"
             "    scheme: stripe\n"
             "    secrets: [{env: STRIPE_SECRET}, {file: %s}]\n"
             "    tolerance: 300s\n"
             "    maxBodyBytes: 1048576\n"
             "  - name: ci\n"
             "    scheme: hmac\n"
             "    header: X-Signature\n"
             "    algorithm: sha256\n"
             "    encoding: hex\n"
             "    prefix: \"sha256=\"\n"
             "    secrets: [{env: CI_SECRET}]\n",
             old);
    struct hk_sources *s = parse(text);
    cr_assert_not_null(s, "%s", err);
    cr_expect_eq(s->n, 2);
    cr_expect_str_eq(s->path, "sources.yaml");
    cr_expect_eq(atomic_load(&s->refs), 1);

    const struct hk_source *st = find(s, "stripe");
    cr_assert_not_null(st);
    cr_expect_str_eq(st->name, "stripe");
    cr_expect_eq(st->name_len, 6);
    cr_expect_eq(st->scheme, HK_SCHEME_STRIPE);
    cr_expect_eq(st->tolerance_s, 300);
    cr_expect_eq(st->max_body, 1048576);
    cr_assert_eq(st->nsecrets, 2);
    cr_expect_str_eq(st->secrets[0].ref, "env:STRIPE_SECRET");
    /* Stripe keys with the whole whsec_ string. */
    cr_expect_eq(st->secrets[0].len, strlen(STRIPE_VAL));
    cr_expect_eq(memcmp(st->secrets[0].key, STRIPE_VAL, strlen(STRIPE_VAL)), 0);
    cr_expect_not(st->secrets[0].ed25519);
    expect_hmac_prepared(&st->secrets[0], HK_MD_SHA256);
    char ref[80];
    snprintf(ref, sizeof ref, "file:%s", old);
    cr_expect_str_eq(st->secrets[1].ref, ref);
    /* Both trailing newlines go. */
    cr_expect_eq(st->secrets[1].len, 16);
    cr_expect_eq(memcmp(st->secrets[1].key, "old-secret-bytes", 16), 0);
    expect_hmac_prepared(&st->secrets[1], HK_MD_SHA256);

    const struct hk_source *ci = find(s, "ci");
    cr_assert_not_null(ci);
    cr_expect_eq(ci->scheme, HK_SCHEME_HMAC);
    cr_expect_str_eq(ci->header, "x-signature");
    cr_expect_eq(ci->algorithm, HK_MD_SHA256);
    cr_expect_eq(ci->encoding, HK_ENC_HEX);
    cr_expect_str_eq(ci->prefix, "sha256=");
    cr_expect_str_eq(ci->template, "{body}");
    cr_expect_null(ci->timestamp_header);
    cr_expect_null(ci->id_header);
    cr_expect_eq(ci->nsecrets, 1);
    expect_hmac_prepared(&ci->secrets[0], HK_MD_SHA256);
    hk_sources_unref(s);
    unlink(old);
}

Test(sources, json_is_accepted_too)
{
    struct hk_sources *s = parse("{\"sources\": [\n"
                                 "  {\"name\": \"gh\", \"scheme\": \"github\",\n"
                                 "   \"secrets\": [{\"env\": \"GH_SECRET\"}],\n"
                                 "   \"legacySha1\": true, \"maxBodyBytes\": 25000000, \"tolerance\": 600,\n"
                                 "   \"rateLimit\": {\"rate\": 2.5}, \"contentTypes\": [\"application/json\"]},\n"
                                 "  {\"name\": \"open\", \"scheme\": \"none\"}\n"
                                 "]}");
    cr_assert_not_null(s, "%s", err);
    cr_expect_eq(s->n, 2);
    const struct hk_source *gh = find(s, "gh");
    cr_assert_not_null(gh);
    cr_expect_eq(gh->scheme, HK_SCHEME_GITHUB);
    cr_expect(gh->legacy_sha1);
    cr_expect_eq(gh->max_body, 25000000);
    cr_expect_eq(gh->tolerance_s, 600);
    cr_expect_float_eq(gh->rate, 2.5, 1e-9);
    cr_expect_eq(gh->burst, 3);
    cr_assert_eq(gh->ncontent_types, 1);
    cr_expect_str_eq(gh->content_types[0], "application/json");
    cr_expect_eq(memcmp(gh->secrets[0].key, GH_VAL, strlen(GH_VAL)), 0);
    expect_hmac_prepared(&gh->secrets[0], HK_MD_SHA256);
    const struct hk_source *open = find(s, "open");
    cr_assert_not_null(open);
    cr_expect_eq(open->scheme, HK_SCHEME_NONE);
    cr_expect_eq(open->nsecrets, 0);
    hk_sources_unref(s);
}

Test(sources, defaults)
{
    static const char text[] = "sources: [{name: a, scheme: github, secrets: [{env: GH_SECRET}]},"
                               " {name: h, scheme: hmac, header: x-sig, secrets: [{env: CI_SECRET}]}]";
    struct hk_sources *s = hk_sources_parse(text, sizeof text - 1, "f.yaml", 4096, test_env, err, sizeof err);
    cr_assert_not_null(s, "%s", err);
    const struct hk_source *a = find(s, "a");
    cr_assert_not_null(a);
    cr_expect_eq(a->tolerance_s, 300);
    cr_expect_eq(a->max_body, 4096);
    cr_expect_eq(a->rate, 0);
    cr_expect_eq(a->burst, 0);
    cr_expect_eq(a->ncontent_types, 0);
    cr_expect_eq(a->nheaders, 0);
    cr_expect_eq(a->nproxies, 0);
    cr_expect_not(a->legacy_sha1);
    cr_expect_not(a->graph_validation);
    cr_expect_null(a->event_type_header);
    cr_expect_null(a->event_type_field);
    cr_expect_null(a->delivery_id_header);
    cr_expect_null(a->delivery_id_field);
    cr_expect_null(a->verify_token);
    cr_expect_null(a->verify_token_ref);
    cr_expect_null(a->public_url);
    cr_expect_null(a->header);
    cr_expect_null(a->prefix);
    cr_expect_null(a->template);
    const struct hk_source *h = find(s, "h");
    cr_assert_not_null(h);
    cr_expect_eq(h->algorithm, HK_MD_SHA256);
    cr_expect_eq(h->encoding, HK_ENC_HEX);
    cr_expect_null(h->prefix);
    cr_expect_str_eq(h->template, "{body}");
    hk_sources_unref(s);
}

Test(sources, every_common_key)
{
    struct hk_sources *s = parse("sources:\n"
                                 "- name: every_key-1\n"
                                 "  scheme: meta\n"
                                 "  secrets:\n"
                                 "    - env: CI_SECRET\n"
                                 "  tolerance: 2d\n"
                                 "  maxBodyBytes: 1073741824\n"
                                 "  contentTypes: [Application/JSON, text/plain]\n"
                                 "  rateLimit: {rate: 10, burst: 20}\n"
                                 "  headers: [X-Request-Id, user-agent]\n"
                                 "  eventTypeHeader: X-Event\n"
                                 "  eventTypeField: entry.changes.field\n"
                                 "  deliveryIdHeader: X-Delivery\n"
                                 "  deliveryIdField: id\n"
                                 "  trustedProxies: [10.0.0.0/8, 192.0.2.7, \"2001:db8::/32\", \"::1\"]\n"
                                 "  verifyToken: {env: META_VERIFY}\n"
                                 "  graphValidation: true\n");
    cr_assert_not_null(s, "%s", err);
    const struct hk_source *m = find(s, "every_key-1");
    cr_assert_not_null(m);
    cr_expect_eq(m->scheme, HK_SCHEME_META);
    cr_expect_eq(m->tolerance_s, 172800);
    cr_expect_eq(m->max_body, 1u << 30);
    cr_assert_eq(m->ncontent_types, 2);
    cr_expect_str_eq(m->content_types[0], "application/json");
    cr_expect_str_eq(m->content_types[1], "text/plain");
    cr_expect_float_eq(m->rate, 10.0, 1e-9);
    cr_expect_eq(m->burst, 20);
    cr_assert_eq(m->nheaders, 2);
    cr_expect_str_eq(m->headers[0], "x-request-id");
    cr_expect_str_eq(m->headers[1], "user-agent");
    cr_expect_str_eq(m->event_type_header, "x-event");
    cr_expect_str_eq(m->event_type_field, "entry.changes.field");
    cr_expect_str_eq(m->delivery_id_header, "x-delivery");
    cr_expect_str_eq(m->delivery_id_field, "id");
    cr_expect_null(m->id_header, "id_header is the generic scheme's");
    cr_assert_eq(m->nproxies, 4);
    static const uint8_t v4net[16] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 10, 0, 0, 0};
    static const uint8_t v4host[16] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 192, 0, 2, 7};
    static const uint8_t v6net[16] = {0x20, 0x01, 0x0d, 0xb8};
    static const uint8_t v6lo[16] = {[15] = 1};
    cr_expect_eq(memcmp(m->proxies[0].addr, v4net, 16), 0);
    cr_expect_eq(m->proxies[0].bits, 104);
    cr_expect_eq(memcmp(m->proxies[1].addr, v4host, 16), 0);
    cr_expect_eq(m->proxies[1].bits, 128);
    cr_expect_eq(memcmp(m->proxies[2].addr, v6net, 16), 0);
    cr_expect_eq(m->proxies[2].bits, 32);
    cr_expect_eq(memcmp(m->proxies[3].addr, v6lo, 16), 0);
    cr_expect_eq(m->proxies[3].bits, 128);
    cr_assert_not_null(m->verify_token);
    cr_expect_eq(m->verify_token_len, strlen(META_VAL));
    cr_expect_eq(memcmp(m->verify_token, META_VAL, strlen(META_VAL)), 0);
    cr_expect_str_eq(m->verify_token_ref, "env:META_VERIFY");
    cr_expect(m->graph_validation);
    expect_hmac_prepared(&m->secrets[0], HK_MD_SHA256);
    hk_sources_unref(s);
}

Test(sources, generic_hmac_keys)
{
    struct hk_sources *s = parse("sources:\n"
                                 "- name: gen\n"
                                 "  scheme: hmac\n"
                                 "  header: X-Hook-Signature\n"
                                 "  algorithm: sha512\n"
                                 "  encoding: base64\n"
                                 "  prefix: v1=\n"
                                 "  timestampHeader: X-Hook-Timestamp\n"
                                 "  deliveryIdHeader: X-Hook-Id\n"
                                 "  template: \"{id}.{timestamp}.{body}\"\n"
                                 "  tolerance: 5m\n"
                                 "  secrets: [{env: CI_SECRET}]\n"
                                 "- name: sha1\n"
                                 "  scheme: hmac\n"
                                 "  header: x-sig\n"
                                 "  algorithm: sha1\n"
                                 "  template: \"{body}\\n\"\n"
                                 "  secrets: [{env: CI_SECRET}]\n"
                                 "- name: tok\n"
                                 "  scheme: token\n"
                                 "  header: X-Gitlab-Token\n"
                                 "  secrets: [{env: TOKEN}]\n");
    cr_assert_not_null(s, "%s", err);
    const struct hk_source *g = find(s, "gen");
    cr_assert_not_null(g);
    cr_expect_str_eq(g->header, "x-hook-signature");
    cr_expect_eq(g->algorithm, HK_MD_SHA512);
    cr_expect_eq(g->encoding, HK_ENC_BASE64);
    cr_expect_str_eq(g->prefix, "v1=");
    cr_expect_str_eq(g->timestamp_header, "x-hook-timestamp");
    cr_expect_str_eq(g->delivery_id_header, "x-hook-id");
    cr_expect_str_eq(g->id_header, "x-hook-id");
    cr_expect_str_eq(g->template, "{id}.{timestamp}.{body}");
    cr_expect_eq(g->tolerance_s, 300);
    expect_hmac_prepared(&g->secrets[0], HK_MD_SHA512);
    const struct hk_source *s1 = find(s, "sha1");
    cr_assert_not_null(s1);
    cr_expect_str_eq(s1->template, "{body}\n");
    expect_hmac_prepared(&s1->secrets[0], HK_MD_SHA1);
    const struct hk_source *t = find(s, "tok");
    cr_assert_not_null(t);
    cr_expect_eq(t->scheme, HK_SCHEME_TOKEN);
    cr_expect_str_eq(t->header, "x-gitlab-token");
    cr_expect_eq(t->secrets[0].len, strlen(TOKEN_VAL));
    cr_expect_eq(memcmp(t->secrets[0].key, TOKEN_VAL, strlen(TOKEN_VAL)), 0);
    hk_sources_unref(s);
}

Test(sources, every_scheme_by_name)
{
    static const char *const names[] = {"github", "gitea", "gitlab", "stripe", "shopify", "slack",
                                        "standard-webhooks", "discord", "twitch", "zoom", "meta", "twilio",
                                        "hmac", "token", "none"};
    cr_assert_eq(sizeof names / sizeof names[0], HK_SCHEME__COUNT);
    for (int i = 0; i < HK_SCHEME__COUNT; i++)
        cr_expect_str_eq(hk_scheme_name((enum hk_scheme)i), names[i]);
    cr_expect_str_eq(hk_scheme_name(HK_SCHEME__COUNT), "unknown");

    struct hk_sources *s = parse("sources:\n"
                                 "- {name: github, scheme: github, secrets: [{env: GH_SECRET}]}\n"
                                 "- {name: gitea, scheme: gitea, secrets: [{env: GH_SECRET}]}\n"
                                 "- {name: gitlab, scheme: gitlab, secrets: [{env: TOKEN}]}\n"
                                 "- {name: stripe, scheme: stripe, secrets: [{env: STRIPE_SECRET}]}\n"
                                 "- {name: shopify, scheme: shopify, secrets: [{env: CI_SECRET}]}\n"
                                 "- {name: slack, scheme: slack, secrets: [{env: CI_SECRET}]}\n"
                                 "- {name: std, scheme: standard-webhooks, secrets: [{env: STD_SECRET}, "
                                 "{env: STD_PK}, {env: STD_NOPREFIX}]}\n"
                                 "- {name: discord, scheme: discord, secrets: [{env: DISCORD_PK}]}\n"
                                 "- {name: twitch, scheme: twitch, secrets: [{env: CI_SECRET}]}\n"
                                 "- {name: zoom, scheme: zoom, secrets: [{env: CI_SECRET}]}\n"
                                 "- {name: meta, scheme: meta, secrets: [{env: CI_SECRET}]}\n"
                                 "- {name: twilio, scheme: twilio, publicUrl: 'https://example.com/hooks/twilio',"
                                 " secrets: [{env: CI_SECRET}]}\n"
                                 "- {name: hmac, scheme: hmac, header: x-sig, secrets: [{env: CI_SECRET}]}\n"
                                 "- {name: token, scheme: token, header: x-token, secrets: [{env: TOKEN}]}\n"
                                 "- {name: none, scheme: none}\n");
    cr_assert_not_null(s, "%s", err);
    cr_expect_eq(s->n, HK_SCHEME__COUNT);
    static const struct {
        const char *name;
        enum hk_scheme scheme;
        enum hk_md md;
    } hm[] = {{"github", HK_SCHEME_GITHUB, HK_MD_SHA256}, {"gitea", HK_SCHEME_GITEA, HK_MD_SHA256},
              {"stripe", HK_SCHEME_STRIPE, HK_MD_SHA256}, {"shopify", HK_SCHEME_SHOPIFY, HK_MD_SHA256},
              {"slack", HK_SCHEME_SLACK, HK_MD_SHA256},   {"twitch", HK_SCHEME_TWITCH, HK_MD_SHA256},
              {"zoom", HK_SCHEME_ZOOM, HK_MD_SHA256},     {"meta", HK_SCHEME_META, HK_MD_SHA256},
              {"twilio", HK_SCHEME_TWILIO, HK_MD_SHA1},   {"hmac", HK_SCHEME_HMAC, HK_MD_SHA256}};
    for (size_t i = 0; i < sizeof hm / sizeof hm[0]; i++) {
        const struct hk_source *src = find(s, hm[i].name);
        cr_assert_not_null(src, "%s", hm[i].name);
        cr_expect_eq(src->scheme, hm[i].scheme, "%s", hm[i].name);
        cr_expect_not(src->secrets[0].ed25519);
        expect_hmac_prepared(&src->secrets[0], hm[i].md);
    }
    const struct hk_source *tw = find(s, "twilio");
    cr_expect_str_eq(tw->public_url, "https://example.com/hooks/twilio");

    /* gitlab: the token itself. */
    const struct hk_source *gl = find(s, "gitlab");
    cr_expect_eq(gl->scheme, HK_SCHEME_GITLAB);
    cr_expect_eq(gl->secrets[0].len, strlen(TOKEN_VAL));
    cr_expect_eq(memcmp(gl->secrets[0].key, TOKEN_VAL, strlen(TOKEN_VAL)), 0);

    /* standard-webhooks: the bytes after whsec_, decoded; whpk_: a public key. */
    const struct hk_source *std = find(s, "std");
    cr_assert_eq(std->nsecrets, 3);
    uint8_t dec[32];
    cr_assert_eq(hk_base64_decode("MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw", 32, dec, sizeof dec), 24);
    cr_expect_eq(std->secrets[0].len, 24);
    cr_expect_eq(memcmp(std->secrets[0].key, dec, 24), 0);
    cr_expect_not(std->secrets[0].ed25519);
    expect_hmac_prepared(&std->secrets[0], HK_MD_SHA256);
    uint8_t pub[32];
    cr_assert_eq(hk_hex_decode(ED_PUB, pub, 32), 0);
    cr_expect(std->secrets[1].ed25519);
    cr_expect_eq(std->secrets[1].len, 32);
    cr_expect_eq(memcmp(std->secrets[1].key, pub, 32), 0);
    cr_expect_eq(std->secrets[2].len, 24, "a secret without whsec_ is base64 too");
    cr_expect_eq(memcmp(std->secrets[2].key, dec, 24), 0);

    const struct hk_source *d = find(s, "discord");
    cr_expect(d->secrets[0].ed25519);
    cr_expect_eq(d->secrets[0].len, 32);
    cr_expect_eq(memcmp(d->secrets[0].key, pub, 32), 0);
    hk_sources_unref(s);
}

Test(sources, tolerances)
{
    static const struct {
        const char *v;
        int64_t s;
    } ok[] = {{"300s", 300},     {"5m", 300},          {"1h", 3600},       {"2d", 172800},
              {"300", 300},      {"'45'", 45},         {"1s", 1},          {"100000d", 8640000000LL},
              {"\"7d\"", 604800}};
    for (size_t i = 0; i < sizeof ok / sizeof ok[0]; i++) {
        char text[256];
        snprintf(text, sizeof text, "sources: [{name: a, scheme: none, tolerance: %s}]", ok[i].v);
        struct hk_sources *s = parse(text);
        cr_assert_not_null(s, "%s: %s", ok[i].v, err);
        cr_expect_eq(s->v[0].tolerance_s, ok[i].s, "%s", ok[i].v);
        hk_sources_unref(s);
    }
    static const char *const bad[] = {"0", "0s", "5x", "-1", "1.5h", "s", "1 h", "[1]", "''", "~",
                                      "99999999999999999d"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        char text[256];
        snprintf(text, sizeof text, "sources: [{name: a, scheme: none, tolerance: %s}]", bad[i]);
        struct hk_sources *s = parse(text);
        cr_expect_null(s, "%s accepted", bad[i]);
        cr_expect(strncmp(err, "sources.yaml: source \"a\": tolerance: ", 37) == 0, "%s: %s", bad[i], err);
        hk_sources_unref(s);
    }
    expect_error("sources: [{name: a, scheme: none, tolerance: 0}]",
                 "sources.yaml: source \"a\": tolerance: at least 1s");
    expect_error("sources: [{name: a, scheme: none, tolerance: 5x}]",
                 "sources.yaml: source \"a\": tolerance: expected a duration such as 300s, 5m, 1h or 2d");
}

Test(sources, rate_limits)
{
    static const struct {
        const char *v;
        double rate;
        uint32_t burst;
    } ok[] = {{"{rate: 10}", 10, 10},       {"{rate: 0.5}", 0.5, 1},           {"{rate: 2.5}", 2.5, 3},
              {"{rate: 10, burst: 20}", 10, 20}, {"{rate: 0.1, burst: 1}", 0.1, 1}, {"{rate: 0}", 0, 0}};
    for (size_t i = 0; i < sizeof ok / sizeof ok[0]; i++) {
        char text[256];
        snprintf(text, sizeof text, "sources: [{name: a, scheme: none, rateLimit: %s}]", ok[i].v);
        struct hk_sources *s = parse(text);
        cr_assert_not_null(s, "%s: %s", ok[i].v, err);
        cr_expect_float_eq(s->v[0].rate, ok[i].rate, 1e-12, "%s", ok[i].v);
        cr_expect_eq(s->v[0].burst, ok[i].burst, "%s", ok[i].v);
        hk_sources_unref(s);
    }
    expect_error("sources: [{name: a, scheme: none, rateLimit: {burst: 3}}]",
                 "sources.yaml: source \"a\": rateLimit.rate: missing");
    expect_error("sources: [{name: a, scheme: none, rateLimit: {rate: -1}}]",
                 "sources.yaml: source \"a\": rateLimit.rate: expected a number such as 10 or 0.5");
    expect_error("sources: [{name: a, scheme: none, rateLimit: {rate: \"5\"}}]",
                 "sources.yaml: source \"a\": rateLimit.rate: expected a number such as 10 or 0.5");
    expect_error("sources: [{name: a, scheme: none, rateLimit: {rate: 1e3}}]",
                 "sources.yaml: source \"a\": rateLimit.rate: expected a number such as 10 or 0.5");
    expect_error("sources: [{name: a, scheme: none, rateLimit: {rate: 5, burst: 0}}]",
                 "sources.yaml: source \"a\": rateLimit.burst: from 1 to 1000000000");
    expect_error("sources: [{name: a, scheme: none, rateLimit: {rate: 5, brust: 2}}]",
                 "sources.yaml: source \"a\": rateLimit: unknown key \"brust\" (expected rate, burst)");
    expect_error("sources: [{name: a, scheme: none, rateLimit: 5}]",
                 "sources.yaml: source \"a\": rateLimit: expected {rate: N, burst: N}, not a scalar");
}

Test(sources, max_body_bounds)
{
    expect_error("sources: [{name: a, scheme: none, maxBodyBytes: 1073741825}]",
                 "sources.yaml: source \"a\": maxBodyBytes: from 1 to 1073741824");
    expect_error("sources: [{name: a, scheme: none, maxBodyBytes: 0}]",
                 "sources.yaml: source \"a\": maxBodyBytes: from 1 to 1073741824");
    expect_error("sources: [{name: a, scheme: none, maxBodyBytes: \"1048576\"}]",
                 "sources.yaml: source \"a\": maxBodyBytes: expected a whole number");
    expect_error("sources: [{name: a, scheme: none, maxBodyBytes: 1MiB}]",
                 "sources.yaml: source \"a\": maxBodyBytes: expected a whole number");
    expect_error("sources: [{name: a, scheme: none, maxBodyBytes: 99999999999999999999999}]",
                 "sources.yaml: source \"a\": maxBodyBytes: at most 1073741824");
}

/* ---------------------------------------------------------- refusals */

Test(sources, errors_name_the_file_the_source_and_the_field)
{
    expect_error("sources: [{name: stripe, scheme: stripe, secrets: [{env: STRIPE_SECRET}, {file: "
                 "/nonexistent/stripe-old}]}]",
                 "sources.yaml: source \"stripe\": secrets[1]: file /nonexistent/stripe-old: No such file or "
                 "directory");
    expect_error("sources: [{name: stripe, scheme: stripe, secrets: [{env: NOT_SET_ANYWHERE}]}]",
                 "sources.yaml: source \"stripe\": secrets[0]: env NOT_SET_ANYWHERE is not set");
    expect_error("sources: [{name: stripe, scheme: stripe, secrets: [{env: EMPTY}]}]",
                 "sources.yaml: source \"stripe\": secrets[0]: env EMPTY is empty");
    expect_error("sources: [{name: stripe, scheme: stripe, secret: [{env: STRIPE_SECRET}]}]",
                 "sources.yaml: source \"stripe\": unknown key \"secret\"");
    expect_error("sources: [{scheme: stripe, secrets: [{env: STRIPE_SECRET}]}]",
                 "sources.yaml: sources[0]: name: missing");
    expect_error("sources: [{name: ok, scheme: none}, {name: Stripe, scheme: none}]",
                 "sources.yaml: sources[1]: name: 1 to 64 characters of a-z 0-9 _ -");
    expect_error("sources: [{name: [a], scheme: none}]",
                 "sources.yaml: sources[0]: name: expected a string, not a list");
    expect_error("sources: [{name: '', scheme: none}]", "sources.yaml: sources[0]: name: empty");
    expect_error("sources: [{name: ~, scheme: none}]",
                 "sources.yaml: sources[0]: name: expected a string, not null");
    expect_error("sources: [{name: a, scheme: none}, {name: b, scheme: none}, {name: a, scheme: none}]",
                 "sources.yaml: source \"a\": name: used by two sources");
    expect_error("sources: [{name: a, name: b, scheme: none}]", "sources.yaml: source \"a\": name: given twice");
    expect_error("sources: [{name: a, scheme: none, scheme: github}]",
                 "sources.yaml: source \"a\": scheme: given twice");
    expect_error("sources: [{name: a}]",
                 "sources.yaml: source \"a\": scheme: missing (write scheme: none to accept unsigned deliveries)");
    expect_error("sources: [{name: a, scheme: githu8}]",
                 "sources.yaml: source \"a\": scheme: unknown \"githu8\" (github, gitea, gitlab, stripe, shopify, "
                 "slack, standard-webhooks, discord, twitch, zoom, meta, twilio, hmac, token, none)");
    expect_error("sources: [{name: a, scheme: none, secrets: [{env: CI_SECRET}]}]",
                 "sources.yaml: source \"a\": secrets: scheme none verifies nothing, so it takes no secrets");
    expect_error("sources: [{name: a, scheme: github}]",
                 "sources.yaml: source \"a\": secrets: at least one {env: NAME} or {file: PATH} (scheme github)");
    expect_error("sources: [{name: a, scheme: github, secrets: []}]",
                 "sources.yaml: source \"a\": secrets: at least one {env: NAME} or {file: PATH} (scheme github)");
    expect_error("sources: [{name: a, scheme: github, secrets: [{env: A}, {env: B}, {env: C}, {env: D}, {env: E},"
                 " {env: F}, {env: G}, {env: H}, {env: I}]}]",
                 "sources.yaml: source \"a\": secrets: more than 8");
    expect_error("sources: [{name: a, scheme: github, secrets: [{env: GH_SECRET}, {env: GH_SECRET}]}]",
                 "sources.yaml: source \"a\": secrets[1]: env:GH_SECRET is also secrets[0]");
    expect_error("sources: [{name: a, scheme: github, secrets: [{env: GH_SECRET, file: /x}]}]",
                 "sources.yaml: source \"a\": secrets[0]: expected {env: NAME} or {file: PATH}");
    expect_error("sources: [{name: a, scheme: github, secrets: [{path: /x}]}]",
                 "sources.yaml: source \"a\": secrets[0]: unknown key \"path\" (expected env or file)");
    expect_error("sources: [{name: a, scheme: github, secrets: [GH_SECRET]}]",
                 "sources.yaml: source \"a\": secrets[0]: expected {env: NAME} or {file: PATH}");
    expect_error("sources: [{name: a, scheme: github, secrets: [{env: 'X Y'}]}]",
                 "sources.yaml: source \"a\": secrets[0]: env X Y: not a variable name");
    expect_error("sources: [{name: a, scheme: github, secrets: [{env: ''}]}]",
                 "sources.yaml: source \"a\": secrets[0]: env: empty");
    expect_error("sources: [{name: a, scheme: github, secrets: {env: GH_SECRET}}]",
                 "sources.yaml: source \"a\": secrets: expected a list of {env: NAME} or {file: PATH}, not a "
                 "mapping");
    expect_error("sources: [{name: a, scheme: github, secrets: [{env: LONG}]}]",
                 "sources.yaml: source \"a\": secrets[0]: env:LONG: longer than 1024 bytes");
    expect_error("sources: [{name: a, scheme: standard-webhooks, secrets: [{env: BAD_STD}]}]",
                 "sources.yaml: source \"a\": secrets[0]: env:BAD_STD: not whsec_<base64> (a signing secret) or "
                 "whpk_<base64> (a 32-byte public key)");
    expect_error("sources: [{name: a, scheme: discord, secrets: [{env: DISCORD_BAD}]}]",
                 "sources.yaml: source \"a\": secrets[0]: env:DISCORD_BAD: not 64 hex digits (the application's "
                 "public key)");
    expect_error("sources: [{name: a, scheme: discord, secrets: [{env: GH_SECRET}]}]",
                 "sources.yaml: source \"a\": secrets[0]: env:GH_SECRET: not 64 hex digits (the application's "
                 "public key)");
}

Test(sources, scheme_specific_keys)
{
    expect_error("sources: [{name: a, scheme: stripe, legacySha1: true, secrets: [{env: CI_SECRET}]}]",
                 "sources.yaml: source \"a\": legacySha1: not a setting of scheme stripe");
    expect_error("sources: [{name: a, scheme: github, legacySha1: yes, secrets: [{env: CI_SECRET}]}]",
                 "sources.yaml: source \"a\": legacySha1: expected true or false");
    expect_error("sources: [{name: a, scheme: github, legacySha1: 'true', secrets: [{env: CI_SECRET}]}]",
                 "sources.yaml: source \"a\": legacySha1: expected true or false");
    expect_error("sources: [{name: a, scheme: github, verifyToken: {env: META_VERIFY}, secrets: [{env: CI_SECRET}]}]",
                 "sources.yaml: source \"a\": verifyToken: not a setting of scheme github");
    expect_error("sources: [{name: a, scheme: meta, verifyToken: {env: NOPE}, secrets: [{env: CI_SECRET}]}]",
                 "sources.yaml: source \"a\": verifyToken: env NOPE is not set");
    expect_error("sources: [{name: a, scheme: github, header: x-sig, secrets: [{env: CI_SECRET}]}]",
                 "sources.yaml: source \"a\": header: not a setting of scheme github");
    expect_error("sources: [{name: a, scheme: token, algorithm: sha1, header: x, secrets: [{env: CI_SECRET}]}]",
                 "sources.yaml: source \"a\": algorithm: not a setting of scheme token");
    expect_error("sources: [{name: a, scheme: twilio, secrets: [{env: CI_SECRET}]}]",
                 "sources.yaml: source \"a\": publicUrl: missing (Twilio signs the URL it posts to)");
    expect_error("sources: [{name: a, scheme: twilio, publicUrl: 'ftp://x/y', secrets: [{env: CI_SECRET}]}]",
                 "sources.yaml: source \"a\": publicUrl: the URL Twilio posts to, http(s)://host/path as configured "
                 "in Twilio");
    expect_error("sources: [{name: a, scheme: twilio, publicUrl: 'https://', secrets: [{env: CI_SECRET}]}]",
                 "sources.yaml: source \"a\": publicUrl: the URL Twilio posts to, http(s)://host/path as configured "
                 "in Twilio");
    expect_error("sources: [{name: a, scheme: hmac, secrets: [{env: CI_SECRET}]}]",
                 "sources.yaml: source \"a\": header: missing (the header the signature comes in)");
    expect_error("sources: [{name: a, scheme: token, secrets: [{env: CI_SECRET}]}]",
                 "sources.yaml: source \"a\": header: missing (the header the token comes in)");
    expect_error("sources: [{name: a, scheme: hmac, header: 'X Sig', secrets: [{env: CI_SECRET}]}]",
                 "sources.yaml: source \"a\": header: not a header name");
    expect_error("sources: [{name: a, scheme: hmac, header: '', secrets: [{env: CI_SECRET}]}]",
                 "sources.yaml: source \"a\": header: empty");
    expect_error("sources: [{name: a, scheme: hmac, header: x, algorithm: md5, secrets: [{env: CI_SECRET}]}]",
                 "sources.yaml: source \"a\": algorithm: sha1, sha256 or sha512");
    expect_error("sources: [{name: a, scheme: hmac, header: x, encoding: base32, secrets: [{env: CI_SECRET}]}]",
                 "sources.yaml: source \"a\": encoding: hex or base64");
    expect_error("sources: [{name: a, scheme: hmac, header: x, prefix: 'a b', secrets: [{env: CI_SECRET}]}]",
                 "sources.yaml: source \"a\": prefix: printable ASCII without spaces");
}

Test(sources, templates)
{
    static const struct {
        const char *tpl, *msg;
    } bad[] = {
        {"'{timestamp}'", "template: must hold {body} exactly once"},
        {"'{body}{body}'", "template: must hold {body} exactly once"},
        {"'{body}.{foo}'", "template: an unknown placeholder (only {body}, {timestamp}, {id})"},
        {"'{body'", "template: an unknown placeholder (only {body}, {timestamp}, {id})"},
        {"'body}'", "template: a '}' outside a placeholder ({body}, {timestamp}, {id})"},
        {"'{timestamp}.{body}'", "template: {timestamp} needs timestampHeader"},
        {"'{id}.{body}'", "template: {id} needs deliveryIdHeader"},
        {"\"\\x01{body}\"", "template: printable ASCII, tabs and newlines only"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        char text[256], want[256];
        snprintf(text, sizeof text, "sources: [{name: a, scheme: hmac, header: x, template: %s, secrets: [{env: "
                 "CI_SECRET}]}]", bad[i].tpl);
        snprintf(want, sizeof want, "sources.yaml: source \"a\": %s", bad[i].msg);
        expect_error(text, want);
    }
    expect_error("sources: [{name: a, scheme: hmac, header: x, timestampHeader: x-ts, secrets: [{env: CI_SECRET}]}]",
                 "sources.yaml: source \"a\": timestampHeader: the template must sign {timestamp}, or a replayed "
                 "delivery passes");
}

Test(sources, lists)
{
    char text[4096];
    int k = snprintf(text, sizeof text, "sources: [{name: a, scheme: none, contentTypes: [");
    for (int i = 0; i < HK_SOURCE_LIST_MAX + 1; i++)
        k += snprintf(text + k, sizeof text - (size_t)k, "%sapplication/x%d", i ? ", " : "", i);
    snprintf(text + k, sizeof text - (size_t)k, "]}]");
    expect_error(text, "sources.yaml: source \"a\": contentTypes: more than 32 entries");
    /* Exactly the maximum is fine. */
    k = snprintf(text, sizeof text, "sources: [{name: a, scheme: none, headers: [");
    for (int i = 0; i < HK_SOURCE_LIST_MAX; i++)
        k += snprintf(text + k, sizeof text - (size_t)k, "%sX-H%d", i ? ", " : "", i);
    snprintf(text + k, sizeof text - (size_t)k, "]}]");
    struct hk_sources *s = parse(text);
    cr_assert_not_null(s, "%s", err);
    cr_expect_eq(s->v[0].nheaders, HK_SOURCE_LIST_MAX);
    cr_expect_str_eq(s->v[0].headers[31], "x-h31");
    hk_sources_unref(s);

    expect_error("sources: [{name: a, scheme: none, contentTypes: []}]",
                 "sources.yaml: source \"a\": contentTypes: an empty list (leave the key out instead)");
    expect_error("sources: [{name: a, scheme: none, contentTypes: application/json}]",
                 "sources.yaml: source \"a\": contentTypes: expected a list, not a scalar");
    expect_error("sources: [{name: a, scheme: none, contentTypes: ['application/json; charset=utf-8']}]",
                 "sources.yaml: source \"a\": contentTypes[0]: not a media type without parameters, such as "
                 "application/json");
    expect_error("sources: [{name: a, scheme: none, contentTypes: [application/json, Application/Json]}]",
                 "sources.yaml: source \"a\": contentTypes[1]: the same as contentTypes[0]");
    expect_error("sources: [{name: a, scheme: none, contentTypes: [json]}]",
                 "sources.yaml: source \"a\": contentTypes[0]: not a media type without parameters, such as "
                 "application/json");
    expect_error("sources: [{name: a, scheme: none, headers: [x-a, Authorization]}]",
                 "sources.yaml: source \"a\": headers[1]: authorization is never kept (it carries credentials)");
    expect_error("sources: [{name: a, scheme: none, headers: [COOKIE]}]",
                 "sources.yaml: source \"a\": headers[0]: cookie is never kept (it carries credentials)");
    expect_error("sources: [{name: a, scheme: none, headers: [proxy-authorization]}]",
                 "sources.yaml: source \"a\": headers[0]: proxy-authorization is never kept (it carries "
                 "credentials)");
    expect_error("sources: [{name: a, scheme: none, headers: [x-a, X-A]}]",
                 "sources.yaml: source \"a\": headers[1]: the same as headers[0]");
    expect_error("sources: [{name: a, scheme: none, headers: ['x:a']}]",
                 "sources.yaml: source \"a\": headers[0]: not a header name");
    expect_error("sources: [{name: a, scheme: none, eventTypeField: 'a..b'}]",
                 "sources.yaml: source \"a\": eventTypeField: a dotted path of keys such as event.type");
    expect_error("sources: [{name: a, scheme: none, deliveryIdField: '.id'}]",
                 "sources.yaml: source \"a\": deliveryIdField: a dotted path of keys such as event.type");
    expect_error("sources: [{name: a, scheme: none, eventTypeHeader: [x]}]",
                 "sources.yaml: source \"a\": eventTypeHeader: expected a string, not a list");
}

Test(sources, trusted_proxies)
{
    static const char *const bad[] = {"10.0.0.1/8", "300.1.1.1", "::1/129", "10.0.0.0/33", "10.0.0.0/", "/8",
                                      "10.0.0.0/08", "fe80::1%eth0", "example.com", "10.0.0.0/-1"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        char text[256], want[256];
        snprintf(text, sizeof text, "sources: [{name: a, scheme: none, trustedProxies: [\"%s\"]}]", bad[i]);
        snprintf(want, sizeof want,
                 "sources.yaml: source \"a\": trustedProxies[0]: \"%s\" is not an IPv4 or IPv6 address or CIDR "
                 "block (host bits must be zero)",
                 bad[i]);
        expect_error(text, want);
    }
    expect_error("sources: [{name: a, scheme: none, trustedProxies: [10.0.0.0/8, 10.0.0.0/8]}]",
                 "sources.yaml: source \"a\": trustedProxies[1]: the same as trustedProxies[0]");

    struct hk_sources *s = parse("sources: [{name: a, scheme: none, trustedProxies: [10.0.0.0/8, 192.0.2.7,"
                                 " \"2001:db8::/32\", \"::1\", 172.16.0.0/12]},"
                                 " {name: all, scheme: none, trustedProxies: [0.0.0.0/0, \"::/0\"]},"
                                 " {name: b, scheme: none}]");
    cr_assert_not_null(s, "%s", err);
    const struct hk_source *a = find(s, "a");
    static const struct {
        const char *addr;
        bool v6, trusted;
    } cases[] = {
        {"10.0.0.1", false, true},         {"10.255.255.255", false, true}, {"11.0.0.0", false, false},
        {"9.255.255.255", false, false},   {"192.0.2.7", false, true},      {"192.0.2.8", false, false},
        {"172.16.0.1", false, true},       {"172.31.255.255", false, true}, {"172.32.0.0", false, false},
        {"2001:db8::1", true, true},       {"2001:db8:ffff::", true, true}, {"2001:db9::", true, false},
        {"::1", true, true},               {"::2", true, false},            {"::ffff:10.1.2.3", true, true},
        {"::10.1.2.3", true, false},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        uint8_t addr[16] = {0};
        if (cases[i].v6) {
            cr_assert_eq(inet_pton(AF_INET6, cases[i].addr, addr), 1);
        } else {
            addr[10] = addr[11] = 0xff;
            cr_assert_eq(inet_pton(AF_INET, cases[i].addr, addr + 12), 1);
        }
        cr_expect_eq(hk_source_trusts(a, addr), cases[i].trusted, "%s", cases[i].addr);
    }
    uint8_t any[16] = {0x20, 0x01, 0x0d, 0xb8, 9, 9, 9};
    cr_expect(hk_source_trusts(find(s, "all"), any));
    cr_expect_eq(find(s, "all")->proxies[0].bits, 96);
    cr_expect_eq(find(s, "all")->proxies[1].bits, 0);
    cr_expect_not(hk_source_trusts(find(s, "b"), any));
    hk_sources_unref(s);
}

Test(sources, yaml_structure)
{
    expect_error("", "sources.yaml: empty (expected a mapping with a sources: list)");
    expect_error("# nothing\n", "sources.yaml: empty (expected a mapping with a sources: list)");
    expect_error("[]", "sources.yaml: expected a mapping with a sources: list, not a list");
    expect_error("sources", "sources.yaml: expected a mapping with a sources: list, not a scalar");
    expect_error("{}", "sources.yaml: sources: missing");
    expect_error("sources:", "sources.yaml: sources: expected a list, not null");
    expect_error("sources: []\nversion: 2", "sources.yaml: unknown key \"version\" (expected sources)");
    expect_error("sources: []\nsources: []", "sources.yaml: sources: given twice");
    expect_error("sources: [a]", "sources.yaml: sources[0]: expected a mapping (name, scheme, secrets, ...), not a "
                                 "scalar");
    expect_error("sources: []\n---\nsources: []\n", "sources.yaml: line 2: more than one YAML document");
    expect_error("sources: [{name: a, scheme: !!str none}]", "sources.yaml: line 1: YAML tags are not accepted");
    expect_error("sources: [{name: &n a, scheme: none}]", "sources.yaml: line 1: YAML anchors are not accepted");
    expect_error("sources: [{name: *n, scheme: none}]", "sources.yaml: line 1: YAML aliases are not accepted");
    /* Billion laughs stops at the first anchor. */
    expect_error("a: &a [\"lol\",\"lol\",\"lol\"]\nb: &b [*a,*a,*a]\nc: &c [*b,*b,*b]\nsources: []\n",
                 "sources.yaml: line 1: YAML anchors are not accepted");
    expect_error("sources: [{name: a, scheme: github, secrets: [{env: [[x]]}]}]",
                 "sources.yaml: line 1: a list nested deeper than the format has");
    expect_error("sources: [{name: a, scheme: none, rateLimit: {rate: {x: {y: 1}}}}]",
                 "sources.yaml: line 1: a mapping nested deeper than the format has");
    expect_error("sources: [{[a]: b}]", "sources.yaml: line 1: a mapping key must be a string, not a list");
    /* A NUL inside a key must not make it "name". */
    expect_error("sources: [{name: a, scheme: none, \"name\\0x\": b}]",
                 "sources.yaml: source \"a\": unknown key \"name?x\"");
    expect_error("sources: [{name: \"a\\0b\", scheme: none}]", "sources.yaml: sources[0]: name: contains a NUL byte");

    struct hk_sources *s = parse("sources: [{name: a, scheme: none}\n");
    cr_expect_null(s);
    cr_expect(strncmp(err, "sources.yaml: line 2, column 1: ", 32) == 0, "%s", err);
    s = parse("sources:\n  - name: a\n   scheme: none\n");
    cr_expect_null(s);
    cr_expect(strncmp(err, "sources.yaml: line 3, column ", 29) == 0, "%s", err);
    s = parse("sources: [\x01]");
    cr_expect_null(s);
    cr_expect(strstr(err, "control characters are not allowed") != NULL, "%s", err);

    /* An empty list of sources is a valid file: every /hooks/x is 404. */
    s = parse("sources: []");
    cr_assert_not_null(s, "%s", err);
    cr_expect_eq(s->n, 0);
    cr_expect_null(find(s, "a"));
    hk_sources_unref(s);
}

Test(sources, size_limits)
{
    size_t n = HK_SOURCES_FILE_MAX + 1;
    char *big = malloc(n);
    cr_assert_not_null(big);
    memset(big, '#', n);
    struct hk_sources *s = hk_sources_parse(big, n, "big.yaml", 1024, test_env, err, sizeof err);
    cr_expect_null(s);
    cr_expect_str_eq(err, "big.yaml: larger than 1048576 bytes");

    char path[64];
    temp_file(path, big, n);
    s = hk_sources_load(path, 1024, test_env, err, sizeof err);
    cr_expect_null(s);
    char want[128];
    snprintf(want, sizeof want, "%s: larger than 1048576 bytes", path);
    cr_expect_str_eq(err, want);
    unlink(path);
    free(big);

    /* HK_SOURCES_MAX + 1 sources. */
    struct hk_buf b = HK_BUF_INIT;
    hk_buf_puts(&b, "sources:\n");
    for (int i = 0; i <= HK_SOURCES_MAX; i++)
        hk_buf_printf(&b, "- {name: s%d, scheme: none}\n", i);
    s = hk_sources_parse(b.p, b.len, "sources.yaml", 1024, test_env, err, sizeof err);
    cr_expect_null(s);
    cr_expect_str_eq(err, "sources.yaml: sources: more than 1024 sources");
    hk_buf_free(&b);

    /* Keys beyond any source's. */
    hk_buf_puts(&b, "sources: [{name: a, scheme: none");
    for (int i = 0; i < 70; i++)
        hk_buf_printf(&b, ", k%d: 1", i);
    hk_buf_puts(&b, "}]");
    s = hk_sources_parse(b.p, b.len, "sources.yaml", 1024, test_env, err, sizeof err);
    cr_expect_null(s);
    cr_expect_str_eq(err, "sources.yaml: line 1: a mapping of more than 64 keys");
    hk_buf_free(&b);

    /* A long string: refused without being quoted. */
    hk_buf_puts(&b, "sources: [{name: a, scheme: hmac, header: x, prefix: ");
    for (int i = 0; i < 5000; i++)
        hk_buf_putc(&b, 'p');
    hk_buf_puts(&b, ", secrets: [{env: CI_SECRET}]}]");
    s = hk_sources_parse(b.p, b.len, "sources.yaml", 1024, test_env, err, sizeof err);
    cr_expect_null(s);
    cr_expect_str_eq(err, "sources.yaml: source \"a\": prefix: longer than 64 bytes");
    hk_buf_free(&b);
}

Test(sources, load_from_a_file)
{
    char path[64];
    const char *text = "sources:\n  - name: gh\n    scheme: github\n    secrets: [{env: GH_SECRET}]\n";
    temp_file(path, text, strlen(text));
    struct hk_sources *s = hk_sources_load(path, 777, test_env, err, sizeof err);
    cr_assert_not_null(s, "%s", err);
    cr_expect_str_eq(s->path, path);
    cr_expect_eq(find(s, "gh")->max_body, 777);
    hk_sources_unref(s);
    unlink(path);

    s = hk_sources_load("/nonexistent/sources.yaml", 1, test_env, err, sizeof err);
    cr_expect_null(s);
    cr_expect_str_eq(err, "/nonexistent/sources.yaml: No such file or directory");
    s = hk_sources_load("/tmp", 1, test_env, err, sizeof err);
    cr_expect_null(s);
    cr_expect_str_eq(err, "/tmp: not a regular file");

    /* A secret file that is a directory, or too long. */
    expect_error("sources: [{name: a, scheme: github, secrets: [{file: /tmp}]}]",
                 "sources.yaml: source \"a\": secrets[0]: file /tmp: not a regular file");
    char big[3000];
    memset(big, 'R', sizeof big);
    temp_file(path, big, sizeof big);
    char t2[256], want[256];
    snprintf(t2, sizeof t2, "sources: [{name: a, scheme: github, secrets: [{file: %s}]}]", path);
    snprintf(want, sizeof want, "sources.yaml: source \"a\": secrets[0]: file %s: longer than 2048 bytes", path);
    expect_error(t2, want);
    unlink(path);
    temp_file(path, "\n\r\n", 3);
    snprintf(t2, sizeof t2, "sources: [{name: a, scheme: github, secrets: [{file: %s}]}]", path);
    snprintf(want, sizeof want, "sources.yaml: source \"a\": secrets[0]: file %s is empty", path);
    expect_error(t2, want);
    unlink(path);
}

/* The value of no secret, nor any 8-byte piece of one, may reach err. */
static void expect_no_secret_in(const char *e)
{
    static const char *const vals[] = {STRIPE_VAL, CI_VAL, GH_VAL, TOKEN_VAL, BAD_STD_VAL, META_VAL, STD_VAL,
                                       "RECOGNISABLE", "RRRRRRRR"};
    for (size_t i = 0; i < sizeof vals / sizeof vals[0]; i++) {
        size_t n = strlen(vals[i]);
        for (size_t k = 0; k + 8 <= n; k++) {
            char piece[9];
            memcpy(piece, vals[i] + k, 8);
            piece[8] = '\0';
            cr_expect_null(strstr(e, piece), "\"%s\" in: %s", piece, e);
        }
    }
}

Test(sources, a_secret_never_reaches_the_error)
{
    char fpath[64];
    temp_file(fpath, "RECOGNISABLE-file-secret\n", 25);
    char text[512];
    static const char *const broken[] = {
        /* Secrets loaded, then a later field fails. */
        "sources: [{name: stripe, scheme: stripe, secrets: [{env: STRIPE_SECRET}, {file: %s}], unknownKey: 1}]",
        "sources: [{name: stripe, scheme: stripe, secrets: [{env: STRIPE_SECRET}, {file: %s}]}, {name: stripe, "
        "scheme: none}]",
        "sources: [{name: ci, scheme: hmac, header: x, secrets: [{env: CI_SECRET}, {file: %s}]}, 5]",
        /* The secret itself is wrong. */
        "sources: [{name: std, scheme: standard-webhooks, secrets: [{file: %s}]}]",
        "sources: [{name: d, scheme: discord, secrets: [{file: %s}]}]",
        "sources: [{name: d, scheme: discord, secrets: [{env: TOKEN}, {file: %s}]}]",
        "sources: [{name: std, scheme: standard-webhooks, secrets: [{env: BAD_STD}, {file: %s}]}]",
        "sources: [{name: g, scheme: github, secrets: [{env: LONG}, {file: %s}]}]",
        "sources: [{name: m, scheme: meta, verifyToken: {env: META_VERIFY}, secrets: [{file: %s}], x: 1}]",
        /* The operator wrote the value where a name goes: never echoed as a value. */
        "sources: [{name: g, scheme: github, secrets: [{file: %s}, \"" CI_VAL "\"]}]",
        "sources: [{name: g, scheme: github, secrets: [{file: %s}, {secret: \"" CI_VAL "\"}]}]",
        "sources: [{name: g, scheme: github, secrets: [{file: %s}], legacySha1: \"" CI_VAL "\"}]",
        "sources: [{name: g, scheme: github, secrets: [{file: %s}], tolerance: \"" CI_VAL "\"}]",
        "sources: [{name: g, scheme: github, secrets: [{file: %s}], maxBodyBytes: \"" CI_VAL "\"}]",
        "sources: [{name: g, scheme: github, secrets: [{file: %s}], eventTypeField: \"a.." CI_VAL "\"}]",
        "sources: [{name: g, scheme: hmac, header: x, prefix: \"a " CI_VAL "\", secrets: [{file: %s}]}]",
        "sources: [{name: g, scheme: hmac, header: x, template: \"{" CI_VAL "}{body}\", secrets: [{file: %s}]}]",
        "sources: [{name: g, scheme: hmac, header: \"" CI_VAL "!@\", secrets: [{file: %s}]}]",
        "sources: [{name: g, scheme: twilio, publicUrl: \"ftp://" CI_VAL "\", secrets: [{file: %s}]}]",
    };
    for (size_t i = 0; i < sizeof broken / sizeof broken[0]; i++) {
        snprintf(text, sizeof text, broken[i], fpath);
        struct hk_sources *s = parse(text);
        cr_expect_null(s, "accepted: %s", text);
        cr_expect_neq(err[0], '\0');
        expect_no_secret_in(err);
        hk_sources_unref(s);
    }
    unlink(fpath);
}

/* ------------------------------------------ forwarding and retention keys */

Test(sources, forward_and_retention_defaults)
{
    struct hk_sources *s = parse("sources: [{name: a, scheme: none}]");
    cr_assert_not_null(s, "%s", err);
    const struct hk_source *a = find(s, "a");
    cr_assert_not_null(a);
    cr_expect_not(a->forward.off);
    cr_expect_null(a->forward.url);
    cr_expect_null(a->forward.type);
    cr_expect_eq(a->forward.mode, -1);
    cr_expect_not(a->forward.fifo);
    cr_expect_not(a->retention.set);
    cr_expect_eq(a->retention.max_age_ms, 0);
    cr_expect_eq(a->retention.max_rows, 0);
    hk_sources_unref(s);
}

Test(sources, every_forward_and_retention_key)
{
    struct hk_sources *s = parse("sources:\n"
                                 "- name: shop\n"
                                 "  scheme: none\n"
                                 "  forward:\n"
                                 "    url: https://user:pa%40ss@sink.example:8443/in?x=1#f\n"
                                 "    type: \"com.example.{source}.{event}\"\n"
                                 "    mode: structured\n"
                                 "    fifo: true\n"
                                 "  retention:\n"
                                 "    maxAge: 30d\n"
                                 "    maxRows: 100000\n"
                                 "- name: quiet\n"
                                 "  scheme: none\n"
                                 "  forward: false\n"
                                 "  retention: {maxRows: 5}\n"
                                 "- name: bin\n"
                                 "  scheme: none\n"
                                 "  forward: {mode: binary, fifo: false}\n"
                                 "  retention: {maxAge: 0}\n"
                                 "- name: plain\n"
                                 "  scheme: none\n"
                                 "  forward: {url: 'http://[::1]:9/x'}\n"
                                 "  retention: {maxAge: \"500ms\", maxRows: 0}\n");
    cr_assert_not_null(s, "%s", err);
    const struct hk_source *a = find(s, "shop");
    cr_assert_not_null(a);
    cr_expect_not(a->forward.off);
    cr_expect_str_eq(a->forward.url, "https://user:pa%40ss@sink.example:8443/in?x=1#f");
    cr_expect_str_eq(a->forward.type, "com.example.{source}.{event}");
    cr_expect_eq(a->forward.mode, 1);
    cr_expect(a->forward.fifo);
    cr_expect(a->retention.set);
    cr_expect_eq(a->retention.max_age_ms, UINT64_C(30) * 86400000);
    cr_expect_eq(a->retention.max_rows, 100000);
    const struct hk_source *q = find(s, "quiet");
    cr_assert_not_null(q);
    cr_expect(q->forward.off);
    cr_expect_null(q->forward.url);
    cr_expect_eq(q->forward.mode, -1);
    cr_expect(q->retention.set);
    cr_expect_eq(q->retention.max_age_ms, 0);
    cr_expect_eq(q->retention.max_rows, 5);
    const struct hk_source *b = find(s, "bin");
    cr_assert_not_null(b);
    cr_expect_not(b->forward.off);
    cr_expect_null(b->forward.url);
    cr_expect_null(b->forward.type);
    cr_expect_eq(b->forward.mode, 0);
    cr_expect_not(b->forward.fifo);
    cr_expect(b->retention.set, "maxAge: 0 is a rule of its own: keep forever");
    cr_expect_eq(b->retention.max_age_ms, 0);
    cr_expect_eq(b->retention.max_rows, 0);
    const struct hk_source *p = find(s, "plain");
    cr_assert_not_null(p);
    cr_expect_str_eq(p->forward.url, "http://[::1]:9/x");
    cr_expect_eq(p->forward.mode, -1);
    cr_expect_eq(p->retention.max_age_ms, 500);
    hk_sources_unref(s);
}

Test(sources, retention_durations)
{
    static const struct {
        const char *v;
        uint64_t ms;
    } ok[] = {{"500ms", 500}, {"10s", 10000}, {"2m", 120000}, {"1h", 3600000}, {"30d", UINT64_C(2592000000)},
              {"0", 0},       {"0s", 0},      {"36500d", UINT64_C(3153600000000)}};
    for (size_t i = 0; i < sizeof ok / sizeof ok[0]; i++) {
        char text[160];
        snprintf(text, sizeof text, "sources: [{name: a, scheme: none, retention: {maxAge: %s}}]", ok[i].v);
        struct hk_sources *s = parse(text);
        cr_assert_not_null(s, "%s: %s", ok[i].v, err);
        cr_expect_eq(s->v[0].retention.max_age_ms, ok[i].ms, "%s", ok[i].v);
        hk_sources_unref(s);
    }
    struct hk_sources *s = parse("sources: [{name: a, scheme: none, retention: {maxRows: 9223372036854775807}}]");
    cr_assert_not_null(s, "%s", err);
    cr_expect_eq(s->v[0].retention.max_rows, (uint64_t)INT64_MAX);
    hk_sources_unref(s);
}

Test(sources, forward_and_retention_refusals)
{
#define SRC(x) "sources: [{name: a, scheme: none, " x "}]"
#define ERR(x) "sources.yaml: source \"a\": " x
    static const char *const cases[][2] = {
        {SRC("forward: true"),
         ERR("forward: true is the default (leave the key out), or give a mapping (url, type, mode, fifo)")},
        {SRC("forward: off"), ERR("forward: expected false or a mapping (url, type, mode, fifo), not a scalar")},
        {SRC("forward: 'false'"), ERR("forward: expected false or a mapping (url, type, mode, fifo), not a scalar")},
        {SRC("forward: ~"), ERR("forward: expected false or a mapping (url, type, mode, fifo), not null")},
        {SRC("forward: [http://x]"), ERR("forward: expected false or a mapping (url, type, mode, fifo), not a list")},
        {SRC("forward: {}"), ERR("forward: an empty mapping (leave the key out instead)")},
        {SRC("forward: {uri: http://x}"), ERR("forward: unknown key \"uri\" (expected url, type, mode, fifo)")},
        {SRC("forward: {url: http://x, url: http://y}"), ERR("forward.url: given twice")},
        {SRC("forward: {mode: binary, mode: binary}"), ERR("forward.mode: given twice")},
        {SRC("forward: {url: ftp://sink.example/x}"),
         ERR("forward.url: expected http:// or https://, a host, and no spaces or control characters")},
        {SRC("forward: {url: 'http://sink.example/a b'}"),
         ERR("forward.url: expected http:// or https://, a host, and no spaces or control characters")},
        {SRC("forward: {url: \"http://sink.example/\\ta\"}"),
         ERR("forward.url: expected http:// or https://, a host, and no spaces or control characters")},
        {SRC("forward: {url: \"http://sink.example/\\u00e9\"}"),
         ERR("forward.url: expected http:// or https://, a host, and no spaces or control characters")},
        {SRC("forward: {url: 'http://'}"),
         ERR("forward.url: expected http:// or https://, a host, and no spaces or control characters")},
        {SRC("forward: {url: 'http:///path'}"),
         ERR("forward.url: expected http:// or https://, a host, and no spaces or control characters")},
        {SRC("forward: {url: 'https://user:pw@/path'}"),
         ERR("forward.url: expected http:// or https://, a host, and no spaces or control characters")},
        {SRC("forward: {url: 'http://:8080/x'}"),
         ERR("forward.url: expected http:// or https://, a host, and no spaces or control characters")},
        {SRC("forward: {url: 'HTTP://sink.example/'}"),
         ERR("forward.url: expected http:// or https://, a host, and no spaces or control characters")},
        {SRC("forward: {url: ''}"), ERR("forward.url: empty")},
        {SRC("forward: {url: {env: X}}"), ERR("forward.url: expected a string, not a mapping")},
        {SRC("forward: {type: ''}"), ERR("forward.type: empty")},
        {SRC("forward: {type: [a]}"), ERR("forward.type: expected a string, not a list")},
        {SRC("forward: {type: 'com.{type}'}"),
         ERR("forward.type: an unknown placeholder (only {event} and {source})")},
        {SRC("forward: {type: 'com.{event'}"),
         ERR("forward.type: an unknown placeholder (only {event} and {source})")},
        {SRC("forward: {type: 'com.x}'}"), ERR("forward.type: a '}' outside a placeholder ({event}, {source})")},
        {SRC("forward: {type: \"com.\\u00e9\"}"),
         ERR("forward.type: printable ASCII, not starting or ending with a space")},
        {SRC("forward: {type: \"com.\\nx\"}"),
         ERR("forward.type: printable ASCII, not starting or ending with a space")},
        {SRC("forward: {type: ' com.x'}"),
         ERR("forward.type: printable ASCII, not starting or ending with a space")},
        {SRC("forward: {mode: Binary}"), ERR("forward.mode: binary or structured")},
        {SRC("forward: {mode: 1}"), ERR("forward.mode: binary or structured")},
        {SRC("forward: {mode: ''}"), ERR("forward.mode: empty")},
        {SRC("forward: {fifo: yes}"), ERR("forward.fifo: expected true or false")},
        {SRC("forward: {fifo: 'true'}"), ERR("forward.fifo: expected true or false")},
        {SRC("retention: 30d"), ERR("retention: expected a mapping (maxAge, maxRows), not a scalar")},
        {SRC("retention: false"), ERR("retention: expected a mapping (maxAge, maxRows), not a scalar")},
        {SRC("retention: ~"), ERR("retention: expected a mapping (maxAge, maxRows), not null")},
        {SRC("retention: {}"), ERR("retention: an empty mapping (leave the key out instead)")},
        {SRC("retention: {maxage: 1d}"), ERR("retention: unknown key \"maxage\" (expected maxAge, maxRows)")},
        {SRC("retention: {maxAge: 1d, maxAge: 2d}"), ERR("retention.maxAge: given twice")},
        {SRC("retention: {maxRows: 1, maxRows: 2}"), ERR("retention.maxRows: given twice")},
        {SRC("retention: {maxAge: 30}"),
         ERR("retention.maxAge: expected a duration such as 30d, 12h, 90m or 500ms (0: keep forever)")},
        {SRC("retention: {maxAge: 30w}"),
         ERR("retention.maxAge: expected a duration such as 30d, 12h, 90m or 500ms (0: keep forever)")},
        {SRC("retention: {maxAge: -1d}"),
         ERR("retention.maxAge: expected a duration such as 30d, 12h, 90m or 500ms (0: keep forever)")},
        {SRC("retention: {maxAge: 1.5h}"),
         ERR("retention.maxAge: expected a duration such as 30d, 12h, 90m or 500ms (0: keep forever)")},
        {SRC("retention: {maxAge: 99999999999999999999d}"),
         ERR("retention.maxAge: expected a duration such as 30d, 12h, 90m or 500ms (0: keep forever)")},
        {SRC("retention: {maxAge: 36501d}"), ERR("retention.maxAge: at most 36500d")},
        {SRC("retention: {maxAge: ''}"), ERR("retention.maxAge: empty")},
        {SRC("retention: {maxAge: [1d]}"), ERR("retention.maxAge: expected a string, not a list")},
        {SRC("retention: {maxRows: -1}"), ERR("retention.maxRows: expected a whole number")},
        {SRC("retention: {maxRows: '5'}"), ERR("retention.maxRows: expected a whole number")},
        {SRC("retention: {maxRows: 1e3}"), ERR("retention.maxRows: expected a whole number")},
        {SRC("retention: {maxRows: 9223372036854775808}"),
         ERR("retention.maxRows: from 0 to 9223372036854775807")},
        {SRC("forward: false, forward: false"), ERR("forward: given twice")},
        {SRC("retention: {maxRows: 1}, retention: {maxRows: 1}"), ERR("retention: given twice")},
    };
#undef SRC
#undef ERR
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
        expect_error(cases[i][0], cases[i][1]);
    /* A type of 256 bytes is the most. */
    char text[512], type[260];
    memset(type, 'x', 257);
    type[256] = '\0';
    snprintf(text, sizeof text, "sources: [{name: a, scheme: none, forward: {type: %s}}]", type);
    struct hk_sources *s = parse(text);
    cr_expect_not_null(s, "%s", err);
    hk_sources_unref(s);
    type[256] = 'x';
    type[257] = '\0';
    snprintf(text, sizeof text, "sources: [{name: a, scheme: none, forward: {type: %s}}]", type);
    expect_error(text, "sources.yaml: source \"a\": forward.type: longer than 256 bytes");
}

/* The sink's URL may carry a password: no refusal of the URL, nor a later
 * error of the same source, quotes any of it. */
Test(sources, a_forward_url_never_reaches_the_error)
{
    static const char *const broken[] = {
        "sources: [{name: a, scheme: none, forward: {url: 'https://u:RECOGNISABLEpw@sink example/'}}]",
        "sources: [{name: a, scheme: none, forward: {url: 'ftp://u:RECOGNISABLEpw@sink.example/'}}]",
        "sources: [{name: a, scheme: none, forward: {url: \"https://u:RECOGNISABLEpw@sink.example/\\u0001\"}}]",
        "sources: [{name: a, scheme: none, forward: {url: 'https://u:RECOGNISABLEpw@/'}}]",
        "sources: [{name: a, scheme: none, forward: {url: 'https://u:RECOGNISABLEpw@sink.example/', x: 1}}]",
        "sources: [{name: a, scheme: none, forward: {url: 'https://u:RECOGNISABLEpw@sink.example/', mode: x}}]",
        "sources: [{name: a, scheme: none, forward: {url: 'https://u:RECOGNISABLEpw@sink.example/'}, bad: 1}]",
        "sources: [{name: a, scheme: none, forward: {url: 'https://u:RECOGNISABLEpw@sink.example/'}},"
        " {name: a, scheme: none}]",
    };
    for (size_t i = 0; i < sizeof broken / sizeof broken[0]; i++) {
        struct hk_sources *s = parse(broken[i]);
        cr_expect_null(s, "accepted: %s", broken[i]);
        cr_expect_neq(err[0], '\0');
        expect_no_secret_in(err);
        cr_expect_null(strstr(err, "sink"), "the URL in: %s", err);
        hk_sources_unref(s);
    }
}

Test(sources, forward_and_retention_in_json)
{
    struct hk_sources *s = parse("{\"sources\": [\n"
                                 "  {\"name\": \"gh\", \"scheme\": \"github\",\n"
                                 "   \"secrets\": [{\"env\": \"GH_SECRET\"}],\n"
                                 "   \"forward\": {\"url\": \"http://127.0.0.1:9/in\", \"type\": \"gh.{event}\",\n"
                                 "                 \"mode\": \"binary\", \"fifo\": true},\n"
                                 "   \"retention\": {\"maxAge\": \"12h\", \"maxRows\": 250}},\n"
                                 "  {\"name\": \"off\", \"scheme\": \"none\", \"forward\": false,\n"
                                 "   \"retention\": {\"maxAge\": 0}}\n"
                                 "]}");
    cr_assert_not_null(s, "%s", err);
    const struct hk_source *gh = find(s, "gh");
    cr_assert_not_null(gh);
    cr_expect_str_eq(gh->forward.url, "http://127.0.0.1:9/in");
    cr_expect_str_eq(gh->forward.type, "gh.{event}");
    cr_expect_eq(gh->forward.mode, 0);
    cr_expect(gh->forward.fifo);
    cr_expect(gh->retention.set);
    cr_expect_eq(gh->retention.max_age_ms, 12 * 3600000);
    cr_expect_eq(gh->retention.max_rows, 250);
    const struct hk_source *off = find(s, "off");
    cr_assert_not_null(off);
    cr_expect(off->forward.off);
    cr_expect(off->retention.set);
    cr_expect_eq(off->retention.max_age_ms, 0);
    hk_sources_unref(s);
    expect_error("{\"sources\": [{\"name\": \"a\", \"scheme\": \"none\", \"forward\": true}]}",
                 "sources.yaml: source \"a\": forward: true is the default (leave the key out), or give a mapping "
                 "(url, type, mode, fifo)");
    expect_error("{\"sources\": [{\"name\": \"a\", \"scheme\": \"none\", \"retention\": {\"maxAge\": 86400}}]}",
                 "sources.yaml: source \"a\": retention.maxAge: expected a duration such as 30d, 12h, 90m or 500ms "
                 "(0: keep forever)");
    expect_error("{\"sources\": [{\"name\": \"a\", \"scheme\": \"none\", \"retention\": {\"maxRows\": 5.0}}]}",
                 "sources.yaml: source \"a\": retention.maxRows: expected a whole number");
    expect_error("{\"sources\": [{\"name\": \"a\", \"scheme\": \"none\", \"forward\": {\"fifo\": 1}}]}",
                 "sources.yaml: source \"a\": forward.fifo: expected true or false");
}

/* ------------------------------------------------- lookups and lifetime */

Test(sources, names)
{
    cr_expect(hk_source_name_ok("a", 1));
    cr_expect(hk_source_name_ok("stripe-live_2", 13));
    char n64[65];
    memset(n64, 'z', 64);
    n64[64] = '\0';
    cr_expect(hk_source_name_ok(n64, 64));
    cr_expect_not(hk_source_name_ok(n64, 65));
    cr_expect_not(hk_source_name_ok("", 0));
    cr_expect_not(hk_source_name_ok("A", 1));
    cr_expect_not(hk_source_name_ok("a.b", 3));
    cr_expect_not(hk_source_name_ok("a/b", 3));
    cr_expect_not(hk_source_name_ok("a b", 3));
    cr_expect_not(hk_source_name_ok("a\0b", 3));
    char text[128];
    snprintf(text, sizeof text, "sources: [{name: %sz, scheme: none}]", n64);
    expect_error(text, "sources.yaml: sources[0]: name: 1 to 64 characters of a-z 0-9 _ -");
}

Test(sources, find_takes_a_length)
{
    struct hk_sources *s = parse("sources: [{name: ab, scheme: none}, {name: a, scheme: none},"
                                 " {name: abc, scheme: none}, {name: b, scheme: none}]");
    cr_assert_not_null(s, "%s", err);
    /* "/hooks/abc/x": a name that is a prefix of the path segment's buffer. */
    const char *path = "abcdef";
    cr_expect_str_eq(hk_sources_find(s, path, 1)->name, "a");
    cr_expect_str_eq(hk_sources_find(s, path, 2)->name, "ab");
    cr_expect_str_eq(hk_sources_find(s, path, 3)->name, "abc");
    cr_expect_null(hk_sources_find(s, path, 4));
    cr_expect_null(hk_sources_find(s, path, 0));
    cr_expect_null(hk_sources_find(s, "c", 1));
    cr_expect_null(hk_sources_find(s, "", 0));
    cr_expect_null(hk_sources_find(NULL, "a", 1));
    cr_expect_null(hk_sources_find(s, "aa", 2));
    hk_sources_unref(s);
}

Test(sources, references)
{
    struct hk_sources *s = parse("sources: [{name: gh, scheme: github, secrets: [{env: GH_SECRET}]}]");
    cr_assert_not_null(s, "%s", err);
    cr_expect_eq(atomic_load(&s->refs), 1);
    hk_sources_ref(s);                 /* a request takes one */
    cr_expect_eq(atomic_load(&s->refs), 2);
    hk_sources_unref(s);               /* the reload drops the process-wide one */
    cr_expect_eq(atomic_load(&s->refs), 1);
    /* The request's reference still finds its source, key intact (ASan
     * would report a use after free). */
    const struct hk_source *gh = find(s, "gh");
    cr_assert_not_null(gh);
    cr_expect_eq(memcmp(gh->secrets[0].key, GH_VAL, strlen(GH_VAL)), 0);
    expect_hmac_prepared(&gh->secrets[0], HK_MD_SHA256);
    hk_sources_unref(s);
    hk_sources_unref(NULL);
}

static void *take_and_drop(void *p)
{
    struct hk_sources *s = p;
    for (int i = 0; i < 10000; i++) {
        hk_sources_ref(s);
        cr_assert_not_null(hk_sources_find(s, "gh", 2));
        hk_sources_unref(s);
    }
    return NULL;
}

Test(sources, references_across_threads)
{
    struct hk_sources *s = parse("sources: [{name: gh, scheme: github, secrets: [{env: GH_SECRET}]}]");
    cr_assert_not_null(s, "%s", err);
    pthread_t t[4];
    for (int i = 0; i < 4; i++) {
        hk_sources_ref(s);
        cr_assert_eq(pthread_create(&t[i], NULL, take_and_drop, s), 0);
    }
    for (int i = 0; i < 4; i++) {
        pthread_join(t[i], NULL);
        hk_sources_unref(s);
    }
    cr_expect_eq(atomic_load(&s->refs), 1);
    hk_sources_unref(s);
}

/* The best of five runs of 200000 lookups spread over the snapshot's names. */
static double lookup_time(const struct hk_sources *s)
{
    double best = 1e9;
    for (int run = 0; run < 5; run++) {
        struct timespec t0, t1;
        size_t hits = 0;
        clock_gettime(CLOCK_MONOTONIC, &t0);
        for (int i = 0; i < 200000; i++) {
            const struct hk_source *src = &s->v[((size_t)i * 7) % s->n];
            hits += hk_sources_find(s, src->name, src->name_len) == src;
        }
        clock_gettime(CLOCK_MONOTONIC, &t1);
        cr_assert_eq(hits, 200000u);
        double secs = (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) / 1e9;
        if (secs < best)
            best = secs;
    }
    return best;
}

Test(sources, the_most_sources_a_file_holds)
{
    /* Written in a scrambled order; the snapshot sorts them. */
    struct hk_buf b = HK_BUF_INIT;
    hk_buf_puts(&b, "sources:\n");
    for (int i = 0; i < HK_SOURCES_MAX; i++)
        hk_buf_printf(&b, "  - {name: src-%04d, scheme: github, secrets: [{env: GH_SECRET}]}\n",
                      (i * 389) % HK_SOURCES_MAX);
    struct hk_sources *s = hk_sources_parse(b.p, b.len, "sources.yaml", 1024, test_env, err, sizeof err);
    hk_buf_free(&b);
    cr_assert_not_null(s, "%s", err);
    cr_assert_eq(s->n, HK_SOURCES_MAX);
    for (size_t i = 1; i < s->n; i++)
        cr_assert_lt(strcmp(s->v[i - 1].name, s->v[i].name), 0, "sorted at %zu", i);
    char name[16];
    for (int i = 0; i < HK_SOURCES_MAX; i++) {
        snprintf(name, sizeof name, "src-%04d", i);
        const struct hk_source *src = find(s, name);
        cr_assert_not_null(src, "%s", name);
        cr_assert_str_eq(src->name, name);
        /* Its position is the binary search's: the array is ordered. */
        cr_assert_eq(src, &s->v[i]);
        snprintf(name, sizeof name, "src-%04d-", i);
        cr_assert_null(find(s, name));
    }
    cr_expect_null(find(s, "src-1024"));
    cr_expect_null(find(s, "a"));
    cr_expect_null(find(s, "zzz"));

    /* O(log n): the same number of lookups over 1024 names and over 16
     * costs about 10/4 as much by binary search, 64 times as much by a
     * scan. The best of five runs each, to keep a busy machine out of it. */
    struct hk_buf b16 = HK_BUF_INIT;
    hk_buf_puts(&b16, "sources:\n");
    for (int i = 0; i < 16; i++)
        hk_buf_printf(&b16, "  - {name: src-%04d, scheme: none}\n", i * 64);
    struct hk_sources *small = hk_sources_parse(b16.p, b16.len, "small.yaml", 1024, test_env, err, sizeof err);
    hk_buf_free(&b16);
    cr_assert_not_null(small, "%s", err);
    double t_big = lookup_time(s), t_small = lookup_time(small);
    cr_expect_lt(t_big, 10 * t_small, "1024 names: %.4fs, 16 names: %.4fs", t_big, t_small);
    hk_sources_unref(small);
    hk_sources_unref(s);
}

/* ------------------------------------------------------------------ CLI */

#define T0 "1700000000"

struct run {
    int rc;
    char out[8192];
    char err[2048];
};

static void slurp(FILE *f, char *buf, size_t cap)
{
    fflush(f);
    rewind(f);
    size_t n = fread(buf, 1, cap - 1, f);
    buf[n] = '\0';
    fclose(f);
}

/* hookd ARGV... < body, with HOOKD_SOURCES = path. */
static struct run *cli_run(const char *path, const void *body, size_t n, const char *const *argv)
{
    static struct run r;
    int argc = 0;
    char *args[32];
    while (argv[argc]) {
        cr_assert_lt(argc, 31);
        args[argc] = (char *)argv[argc];
        argc++;
    }
    args[argc] = NULL;
    FILE *in = tmpfile(), *out = tmpfile(), *err_f = tmpfile();
    cr_assert(in && out && err_f);
    if (n)
        cr_assert_eq(fwrite(body, 1, n, in), n);
    rewind(in);
    r.rc = hk_ingress_cli_io(argc, args, path, in, out, err_f);
    fclose(in);
    slurp(out, r.out, sizeof r.out);
    slurp(err_f, r.err, sizeof r.err);
    return &r;
}

static char cli_sources[64];

/* The sources file of the CLI tests, and the environment it names. */
static void cli_setup(void)
{
    setenv("GH_SECRET", GH_VAL, 1);
    setenv("STRIPE_SECRET", STRIPE_VAL, 1);
    setenv("CI_SECRET", CI_VAL, 1);
    setenv("TOKEN", TOKEN_VAL, 1);
    setenv("STD_SECRET", STD_VAL, 1);
    setenv("STD_PK", test_env("STD_PK"), 1);
    setenv("DISCORD_PK", ED_PUB, 1);
    setenv("HOOKD_MAX_BODY_BYTES", "4096", 1);
    static const char text[] =
        "sources:\n"
        "- {name: gh, scheme: github, secrets: [{env: CI_SECRET}, {env: GH_SECRET}]}\n"
        "- {name: stripe, scheme: stripe, secrets: [{env: STRIPE_SECRET}]}\n"
        "- {name: slack, scheme: slack, secrets: [{env: CI_SECRET}]}\n"
        "- {name: shopify, scheme: shopify, secrets: [{env: CI_SECRET}]}\n"
        "- {name: std, scheme: standard-webhooks, secrets: [{env: STD_SECRET}]}\n"
        "- {name: std-ed, scheme: standard-webhooks, secrets: [{env: STD_PK}]}\n"
        "- {name: discord, scheme: discord, secrets: [{env: DISCORD_PK}]}\n"
        "- {name: gl, scheme: gitlab, secrets: [{env: TOKEN}]}\n"
        "- {name: tw, scheme: twilio, publicUrl: 'https://example.com/hooks/tw', secrets: [{env: CI_SECRET}]}\n"
        "- {name: gen, scheme: hmac, header: X-Sig, algorithm: sha512, encoding: base64, prefix: 'v1=',"
        " timestampHeader: X-Ts, deliveryIdHeader: X-Id, template: '{id}.{timestamp}.{body}',"
        " secrets: [{env: CI_SECRET}]}\n"
        "- {name: small, scheme: github, maxBodyBytes: 16, secrets: [{env: GH_SECRET}]}\n"
        "- {name: open, scheme: none}\n";
    temp_file(cli_sources, text, sizeof text - 1);
}

static void cli_teardown(void)
{
    unlink(cli_sources);
}

static void expect_no_secret_printed(const struct run *r)
{
    static const char *const vals[] = {GH_VAL, STRIPE_VAL, CI_VAL, STD_VAL, ED_PRIV, TOKEN_VAL};
    for (size_t i = 0; i < sizeof vals / sizeof vals[0]; i++) {
        cr_expect_null(strstr(r->out, vals[i]), "a secret on stdout: %s", r->out);
        cr_expect_null(strstr(r->err, vals[i]), "a secret on stderr: %s", r->err);
    }
}

/* Sign `body` with source `name` at T0, then verify it as given in `vbody`. */
static struct run *sign_then_verify(const char *name, const char *body, const char *vbody, const char *when,
                                    const char *const *extra)
{
    const char *sargv[16] = {"sign", "--source", name, "--timestamp", T0};
    int k = 5;
    for (; extra && *extra; extra++)
        sargv[k++] = *extra;
    struct run *r = cli_run(cli_sources, body, strlen(body), sargv);
    cr_assert_eq(r->rc, 0, "sign %s: %s", name, r->err);
    char hdrs[64];
    temp_file(hdrs, r->out, strlen(r->out));
    const char *vargv[] = {"verify", "--source", name, "--headers", hdrs, "--timestamp", when, NULL};
    r = cli_run(cli_sources, vbody, strlen(vbody), vargv);
    unlink(hdrs);
    expect_no_secret_printed(r);
    return r;
}

TestSuite(cli, .init = cli_setup, .fini = cli_teardown);

Test(cli, sign_prints_the_provider_headers)
{
    static const char body[] = "{\"zen\":\"Keep it logically awesome.\"}";
    const char *argv[] = {"sign", "--source", "gh", NULL};
    struct run *r = cli_run(cli_sources, body, sizeof body - 1, argv);
    cr_assert_eq(r->rc, 0, "%s", r->err);
    /* Signed with the first secret (CI_SECRET); checked against libcrypto. */
    uint8_t mac[32];
    unsigned len;
    char hex[65], want[256];
    hmac_ref(HK_MD_SHA256, CI_VAL, strlen(CI_VAL), body, mac, &len);
    for (int i = 0; i < 32; i++)
        sprintf(hex + 2 * i, "%02x", mac[i]);
    snprintf(want, sizeof want, "Content-Type: application/json\nX-Hub-Signature-256: sha256=%s\n", hex);
    cr_expect_str_eq(r->out, want);
    cr_expect_str_eq(r->err, "");
}

Test(cli, round_trips)
{
    static const char body[] = "{\"id\":\"evt_1\",\"type\":\"ping\"}";
    static const struct {
        const char *source, *ref, *scheme;
    } cases[] = {
        {"gh", "env:CI_SECRET", "github"},
        {"stripe", "env:STRIPE_SECRET", "stripe"},
        {"slack", "env:CI_SECRET", "slack"},
        {"shopify", "env:CI_SECRET", "shopify"},
        {"std", "env:STD_SECRET", "standard-webhooks"},
        {"gl", "env:TOKEN", "gitlab"},
        {"gen", "env:CI_SECRET", "hmac"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        struct run *r = sign_then_verify(cases[i].source, body, body, T0, NULL);
        char want[160];
        snprintf(want, sizeof want, "ok: verified with secret %s (scheme %s)\n", cases[i].ref, cases[i].scheme);
        cr_expect_eq(r->rc, 0, "%s: %s %s", cases[i].source, r->out, r->err);
        cr_expect_str_eq(r->out, want);
    }
    struct run *r = sign_then_verify("tw", "Body=hi&From=%2B15551234567", "Body=hi&From=%2B15551234567", T0, NULL);
    cr_expect_eq(r->rc, 0, "%s %s", r->out, r->err);
    cr_expect_str_eq(r->out, "ok: verified with secret env:CI_SECRET (scheme twilio)\n");
    const char *id[] = {"--id", "msg_2KWPBgLlAfxdpx2AI54pPJ85f4W", NULL};
    r = sign_then_verify("gen", body, body, T0, id);
    cr_expect_eq(r->rc, 0, "%s %s", r->out, r->err);
    r = sign_then_verify("open", body, body, T0, NULL);
    cr_expect_eq(r->rc, 0, "%s %s", r->out, r->err);
    cr_expect_str_eq(r->out, "ok: nothing to verify (scheme none)\n");
}

Test(cli, ed25519_round_trips)
{
    char key[64];
    temp_file(key, ED_PRIV "\n", strlen(ED_PRIV) + 1);
    static const char body[] = "{\"type\":1}";
    const char *extra[] = {"--ed25519-key", key, NULL};
    struct run *r = sign_then_verify("discord", body, body, T0, extra);
    cr_expect_eq(r->rc, 0, "%s %s", r->out, r->err);
    cr_expect_str_eq(r->out, "ok: verified with secret env:DISCORD_PK (scheme discord)\n");
    r = sign_then_verify("std-ed", body, body, T0, extra);
    cr_expect_eq(r->rc, 0, "%s %s", r->out, r->err);
    cr_expect_str_eq(r->out, "ok: verified with secret env:STD_PK (scheme standard-webhooks)\n");
    r = sign_then_verify("discord", body, "{\"type\":2}", T0, extra);
    cr_expect_eq(r->rc, 1);
    cr_expect(strncmp(r->out, "failed: no_matching_signature", 29) == 0, "%s", r->out);

    /* Without the key, or with one for an HMAC source: usage errors. */
    const char *argv[] = {"sign", "--source", "discord", NULL};
    r = cli_run(cli_sources, body, sizeof body - 1, argv);
    cr_expect_eq(r->rc, 2);
    cr_expect_str_eq(r->err, "hookd sign: source \"discord\" holds an ed25519 public key (env:DISCORD_PK): pass "
                             "the private key with --ed25519-key FILE\n");
    const char *argv2[] = {"sign", "--source", "gh", "--ed25519-key", key, NULL};
    r = cli_run(cli_sources, body, sizeof body - 1, argv2);
    cr_expect_eq(r->rc, 2);
    cr_expect_str_eq(r->err, "hookd sign: --ed25519-key: source \"gh\" signs with an HMAC secret, not an ed25519 "
                             "key\n");
    unlink(key);

    /* Another key (RFC 8032 test 2): signed, with a warning, and refused
     * by verify. */
    temp_file(key, "4ccd089b28ff96da9db6c346ec114e0f5b8a319f35aba624da8cf6ed4fb8a6fb", 64);
    const char *argv3[] = {"sign", "--source", "discord", "--ed25519-key", key, NULL};
    r = cli_run(cli_sources, body, sizeof body - 1, argv3);
    cr_expect_eq(r->rc, 0);
    cr_expect_str_eq(r->err, "hookd sign: warning: this key's public half is not env:DISCORD_PK, the source's first "
                             "key: hookd will refuse the signature\n");
    const char *other[] = {"--ed25519-key", key, NULL};
    r = sign_then_verify("discord", body, body, T0, other);
    cr_expect_eq(r->rc, 1);
    cr_expect(strncmp(r->out, "failed: no_matching_signature", 29) == 0, "%s", r->out);
    unlink(key);

    /* A base64 key works as well as hex; garbage does not. */
    uint8_t priv[32];
    char b64[64];
    cr_assert_eq(hk_hex_decode(ED_PRIV, priv, 32), 0);
    hk_base64_encode(priv, 32, b64);
    temp_file(key, b64, strlen(b64));
    r = sign_then_verify("discord", body, body, T0, extra);
    cr_expect_eq(r->rc, 0, "%s %s", r->out, r->err);
    unlink(key);
    temp_file(key, "not a key", 9);
    r = cli_run(cli_sources, body, sizeof body - 1, argv3);
    cr_expect_eq(r->rc, 2);
    char want[256];
    snprintf(want, sizeof want, "hookd sign: --ed25519-key %s: not a private key (64 hex digits, or base64 of 32 or "
             "64 bytes)\n", key);
    cr_expect_str_eq(r->err, want);
    unlink(key);
}

Test(cli, a_tampered_body_fails_with_the_reason)
{
    struct run *r = sign_then_verify("gh", "{\"a\":1}", "{\"a\":2}", T0, NULL);
    cr_expect_eq(r->rc, 1);
    cr_expect_str_eq(r->out, "failed: no_matching_signature (header x-hub-signature-256)\n"
                             "tried: env:CI_SECRET, env:GH_SECRET\n"
                             "hint: the body must be the exact bytes received; a trailing newline changes the MAC\n"
                             "hint: a rotated secret? list both old and new under secrets\n");
    /* The usual mistake: echo's newline. */
    r = sign_then_verify("stripe", "{\"a\":1}", "{\"a\":1}\n", T0, NULL);
    cr_expect_eq(r->rc, 1);
    cr_expect(strstr(r->out, "failed: no_matching_signature (header stripe-signature)\n") == r->out, "%s", r->out);
    cr_expect(strstr(r->out, "hint: this body ends with a newline") != NULL, "%s", r->out);
    cr_expect(strstr(r->out, "tried: env:STRIPE_SECRET\n") != NULL, "%s", r->out);
    r = sign_then_verify("gen", "{\"a\":1}", "", T0, NULL);
    cr_expect_eq(r->rc, 1);
    cr_expect(strstr(r->out, "hint: the body is empty") != NULL, "%s", r->out);
    cr_expect(strstr(r->out, "hint: check algorithm (sha512), encoding (base64) and prefix") != NULL, "%s", r->out);
    r = sign_then_verify("tw", "Body=hi", "Body=ho", T0, NULL);
    cr_expect_eq(r->rc, 1);
    cr_expect(strstr(r->out, "publicUrl must be exactly https://example.com/hooks/tw") != NULL, "%s", r->out);
}

Test(cli, timestamps_outside_the_tolerance)
{
    struct run *r = sign_then_verify("stripe", "{}", "{}", "1700001000", NULL);
    cr_expect_eq(r->rc, 1);
    cr_expect_str_eq(r->out, "failed: timestamp_out_of_tolerance (header stripe-signature)\n"
                             "skew: 1000s (the signed time is in the past); tolerance is 300s\n"
                             "hint: to check an old delivery, pass --timestamp 1700000000 (the signed time)\n");
    r = sign_then_verify("slack", "{}", "{}", "1699999000", NULL);
    cr_expect_eq(r->rc, 1);
    cr_expect(strstr(r->out, "skew: 1000s (the signed time is in the future); tolerance is 300s\n") != NULL, "%s",
              r->out);
    /* Inside the window: fine. */
    r = sign_then_verify("slack", "{}", "{}", "1700000299", NULL);
    cr_expect_eq(r->rc, 0, "%s", r->out);
}

Test(cli, the_headers_file)
{
    static const char body[] = "{\"x\":true}";
    const char *sargv[] = {"sign", "--source", "gh", NULL};
    struct run *r = cli_run(cli_sources, body, sizeof body - 1, sargv);
    cr_assert_eq(r->rc, 0);
    /* As copied from a delivery log: a request line, CRLF, other headers,
     * a trailing blank line, spacing around the value. */
    const char *at = strstr(r->out, "X-Hub-Signature-256: ");
    cr_assert_not_null(at);
    char sig[128];
    snprintf(sig, sizeof sig, "%.*s", (int)(strchr(at, '\n') - at - 21), at + 21);
    char text[1024];
    snprintf(text, sizeof text,
             "POST /hooks/gh HTTP/1.1\r\nHost: hooks.example.com\r\nUser-Agent: GitHub-Hookshot/abc\r\n"
             "x-hub-signature-256:   %s  \r\n\r\n",
             sig);
    char hdrs[64];
    temp_file(hdrs, text, strlen(text));
    const char *vargv[] = {"verify", "--source", "gh", "--headers", hdrs, NULL};
    r = cli_run(cli_sources, body, sizeof body - 1, vargv);
    cr_expect_eq(r->rc, 0, "%s %s", r->out, r->err);
    cr_expect_str_eq(r->out, "ok: verified with secret env:CI_SECRET (scheme github)\n");
    unlink(hdrs);

    /* curl -v's "> " prefix, and a status line first. */
    snprintf(text, sizeof text, "HTTP/1.1 200 OK\n> X-Hub-Signature-256: %s\n", sig);
    temp_file(hdrs, text, strlen(text));
    r = cli_run(cli_sources, body, sizeof body - 1, vargv);
    cr_expect_eq(r->rc, 0, "%s %s", r->out, r->err);
    unlink(hdrs);

    /* No signature at all. */
    temp_file(hdrs, "Host: x\n", 8);
    r = cli_run(cli_sources, body, sizeof body - 1, vargv);
    cr_expect_eq(r->rc, 1);
    cr_expect_str_eq(r->out, "failed: missing_header (header x-hub-signature-256)\n"
                             "hint: scheme github needs x-hub-signature-256; the headers file gave 1 header(s)\n");
    unlink(hdrs);

    /* Malformed. */
    temp_file(hdrs, "X-Hub-Signature-256: sha256=zz\n", 31);
    r = cli_run(cli_sources, body, sizeof body - 1, vargv);
    cr_expect_eq(r->rc, 1);
    cr_expect(strncmp(r->out, "failed: malformed_header (header x-hub-signature-256)\n", 54) == 0, "%s", r->out);
    unlink(hdrs);

    /* A line that is no header is a usage error, and is not quoted. */
    snprintf(text, sizeof text, "Host: x\n%s\n", TOKEN_VAL);
    temp_file(hdrs, text, strlen(text));
    r = cli_run(cli_sources, body, sizeof body - 1, vargv);
    cr_expect_eq(r->rc, 2);
    char want[256];
    snprintf(want, sizeof want, "hookd verify: --headers %s: line 2 is not \"Name: value\"\n", hdrs);
    cr_expect_str_eq(r->err, want);
    expect_no_secret_printed(r);
    unlink(hdrs);

    /* Bounded: lines and bytes. */
    struct hk_buf b = HK_BUF_INIT;
    for (int i = 0; i < 1001; i++)
        hk_buf_puts(&b, "X-A: b\n");
    temp_file(hdrs, b.p, b.len);
    r = cli_run(cli_sources, body, sizeof body - 1, vargv);
    cr_expect_eq(r->rc, 2);
    snprintf(want, sizeof want, "hookd verify: --headers %s: more than 1000 lines\n", hdrs);
    cr_expect_str_eq(r->err, want);
    unlink(hdrs);
    hk_buf_free(&b);
    char *big = malloc((1 << 20) + 1);
    memset(big, 'a', (1 << 20) + 1);
    temp_file(hdrs, big, (1 << 20) + 1);
    free(big);
    r = cli_run(cli_sources, body, sizeof body - 1, vargv);
    cr_expect_eq(r->rc, 2);
    snprintf(want, sizeof want, "hookd verify: --headers %s: larger than 1048576 bytes\n", hdrs);
    cr_expect_str_eq(r->err, want);
    unlink(hdrs);
}

/* Run the printed command through sh with a curl that prints its arguments. */
static void expect_curl_args(const char *line, const char *want)
{
    char script[64];
    struct hk_buf b = HK_BUF_INIT;
    hk_buf_puts(&b, "curl() { for a; do printf '<%s>\\n' \"$a\"; done; }\n");
    hk_buf_puts(&b, line);
    temp_file(script, b.p, b.len);
    hk_buf_free(&b);
    char cmd[128];
    snprintf(cmd, sizeof cmd, "sh %s", script);
    FILE *p = popen(cmd, "r");
    cr_assert_not_null(p);
    char got[4096];
    size_t n = fread(got, 1, sizeof got - 1, p);
    got[n] = '\0';
    cr_expect_eq(pclose(p), 0);
    cr_expect_str_eq(got, want);
    unlink(script);
}

Test(cli, sign_curl)
{
    static const char body[] = "{\"a\":1}";
    const char *argv[] = {"sign", "--source", "stripe", "--timestamp", T0, "--curl", NULL};
    struct run *r = cli_run(cli_sources, body, sizeof body - 1, argv);
    cr_assert_eq(r->rc, 0, "%s", r->err);
    uint8_t mac[32];
    unsigned len;
    char hex[65], want[1024];
    hmac_ref(HK_MD_SHA256, STRIPE_VAL, strlen(STRIPE_VAL), T0 ".{\"a\":1}", mac, &len);
    for (int i = 0; i < 32; i++)
        sprintf(hex + 2 * i, "%02x", mac[i]);
    snprintf(want, sizeof want,
             "curl -sS --data-binary @- -H 'Content-Type: application/json' -H 'Stripe-Signature: t=" T0
             ",v1=%s' http://localhost:8080/hooks/stripe\n",
             hex);
    cr_expect_str_eq(r->out, want);
    snprintf(want, sizeof want,
             "<-sS>\n<--data-binary>\n<@->\n<-H>\n<Content-Type: application/json>\n<-H>\n"
             "<Stripe-Signature: t=" T0 ",v1=%s>\n<http://localhost:8080/hooks/stripe>\n",
             hex);
    expect_curl_args(r->out, want);

    /* A URL that needs quoting, quote included. */
    const char *argv2[] = {"sign", "--source", "gh", "--curl", "--url", "http://h:1/hooks/gh?a=1&b='x' $HOME", NULL};
    r = cli_run(cli_sources, body, sizeof body - 1, argv2);
    cr_assert_eq(r->rc, 0, "%s", r->err);
    cr_expect(strstr(r->out, " 'http://h:1/hooks/gh?a=1&b='\\''x'\\'' $HOME'\n") != NULL, "%s", r->out);
    const char *sig = strstr(r->out, "X-Hub-Signature-256: ");
    cr_assert_not_null(sig);
    snprintf(want, sizeof want,
             "<-sS>\n<--data-binary>\n<@->\n<-H>\n<Content-Type: application/json>\n<-H>\n<%.*s>\n"
             "<http://h:1/hooks/gh?a=1&b='x' $HOME>\n",
             (int)(strchr(sig, '\'') - sig), sig);
    expect_curl_args(r->out, want);
}

Test(cli, usage_errors)
{
    static const struct {
        const char *argv[8];
        const char *err;
    } cases[] = {
        {{"sign", NULL}, "hookd sign: --source NAME is required\n"},
        {{"verify", "--source", "gh", NULL}, "hookd verify: --headers FILE is required\n"},
        {{"sign", "--source", NULL}, "hookd sign: --source needs a value\n"},
        {{"sign", "--source=", NULL}, "hookd sign: --source needs a value\n"},
        {{"sign", "--source", "gh", "--frobnicate", NULL},
         "hookd sign: unknown argument \"--frobnicate\" (see hookd sign --help)\n"},
        {{"verify", "--source", "gh", "--curl", NULL},
         "hookd verify: unknown argument \"--curl\" (see hookd verify --help)\n"},
        {{"sign", "--source", "gh", "--timestamp", "yesterday", NULL},
         "hookd sign: --timestamp: unix seconds, such as 1700000000\n"},
        {{"sign", "--source", "Bad/Name", NULL}, "hookd sign: --source: 1 to 64 characters of a-z 0-9 _ -\n"},
        {{"sign", "--source", "gh", "--id", "has space", NULL},
         "hookd sign: the delivery id must be 1 to 200 printable characters without spaces\n"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        struct run *r = cli_run(cli_sources, "{}", 2, cases[i].argv);
        cr_expect_eq(r->rc, 2, "%s", cases[i].err);
        cr_expect_str_eq(r->err, cases[i].err);
        cr_expect_str_eq(r->out, "");
    }
    const char *argv[] = {"sign", "--source=nope", NULL};
    struct run *r = cli_run(cli_sources, "{}", 2, argv);
    char want[256];
    snprintf(want, sizeof want, "hookd sign: no source \"nope\" in %s\n", cli_sources);
    cr_expect_eq(r->rc, 2);
    cr_expect_str_eq(r->err, want);

    r = cli_run(NULL, "{}", 2, (const char *const[]){"sign", "--source", "gh", NULL});
    cr_expect_eq(r->rc, 2);
    cr_expect_str_eq(r->err, "hookd sign: HOOKD_SOURCES is not set (the sources file that names the source)\n");

    r = cli_run("/nonexistent/s.yaml", "{}", 2, (const char *const[]){"sign", "--source", "gh", NULL});
    cr_expect_eq(r->rc, 2);
    cr_expect_str_eq(r->err, "hookd sign: /nonexistent/s.yaml: No such file or directory\n");

    r = cli_run(cli_sources, "{}", 2,
                (const char *const[]){"verify", "--source", "gh", "--headers", "/nonexistent/h", NULL});
    cr_expect_eq(r->rc, 2);
    cr_expect_str_eq(r->err, "hookd verify: --headers /nonexistent/h: No such file or directory\n");

    /* The body is bounded by the source's maxBodyBytes (16 here). */
    r = cli_run(cli_sources, "01234567890123456", 17, (const char *const[]){"sign", "--source", "small", NULL});
    cr_expect_eq(r->rc, 2);
    cr_expect_str_eq(r->err, "hookd sign: the body is larger than the source's maxBodyBytes (16)\n");
    r = cli_run(cli_sources, "0123456789012345", 16, (const char *const[]){"sign", "--source", "small", NULL});
    cr_expect_eq(r->rc, 0, "%s", r->err);

    r = cli_run(cli_sources, "", 0, (const char *const[]){"sign", "--help", NULL});
    cr_expect_eq(r->rc, 0);
    cr_expect(strncmp(r->out, "usage: hookd sign --source NAME", 31) == 0, "%s", r->out);
    r = cli_run(cli_sources, "", 0, (const char *const[]){"verify", "-h", NULL});
    cr_expect_eq(r->rc, 0);
    cr_expect(strncmp(r->out, "usage: hookd verify --source NAME --headers FILE", 48) == 0, "%s", r->out);
    r = cli_run(cli_sources, "", 0, (const char *const[]){"frob", NULL});
    cr_expect_eq(r->rc, 2);
}

Test(cli, on_the_process_streams)
{
    /* hk_ingress_cli itself: stdin and stdout, as main.c calls it. */
    char body[64], outp[64];
    temp_file(body, "{\"a\":1}", 7);
    temp_file(outp, "", 0);
    int in = open(body, O_RDONLY), out = open(outp, O_WRONLY | O_TRUNC);
    cr_assert(in >= 0 && out >= 0);
    int saved_in = dup(0), saved_out = dup(1);
    dup2(in, 0);
    dup2(out, 1);
    char *argv[] = {"sign", "--source", "gh", NULL};
    int rc = hk_ingress_cli(3, argv, cli_sources);
    fflush(stdout);
    dup2(saved_in, 0);
    dup2(saved_out, 1);
    close(in);
    close(out);
    cr_expect_eq(rc, 0);
    FILE *f = fopen(outp, "r");
    char got[512];
    size_t n = fread(got, 1, sizeof got - 1, f);
    got[n] = '\0';
    fclose(f);
    cr_expect(strncmp(got, "Content-Type: application/json\nX-Hub-Signature-256: sha256=", 59) == 0, "%s", got);
    unlink(body);
    unlink(outp);
}
