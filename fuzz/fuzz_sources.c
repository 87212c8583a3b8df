/* SPDX-License-Identifier: MIT
 * libFuzzer target: the sources file parser (ingress/sources.c) on arbitrary
 * bytes. Secrets come from a fake environment and a fake file reader, so a
 * path in the input never reaches the file system. What it accepts must
 * hold the snapshot's rules (sorted unique names, bounded lists, a secret
 * per signed source, lookups that find every source), and what it refuses
 * must say so without quoting a secret. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "ingress/sources.h"

/* In every fake secret: an error that holds it leaked a secret. */
#define MARK "Zq8SeCrEtMaRk"

static const char *fake_env(const char *name)
{
    /* The name picks a shape, so that every scheme's decoding runs. */
    if (!strncmp(name, "UNSET", 5))
        return NULL;
    if (!strncmp(name, "EMPTY", 5))
        return "";
    if (!strncmp(name, "HEX", 3))      /* discord: a public key (RFC 8032 test 1) */
        return "d75a980182b10ab7d54bfed3c964073a0ee172f3daa62325af021a68f707511a";
    if (!strncmp(name, "WHSEC", 5))
        return "whsec_" MARK "AAA";
    if (!strncmp(name, "WHPK", 4))     /* 32 bytes of base64 */
        return "whpk_11qYAYKxCrfVS/7TyWQHOg7hcvPapiMlrwIaaPcHURo=";
    if (!strncmp(name, "LONG", 4)) {
        static char long_val[3000];
        memset(long_val, 'L', sizeof long_val - 1);
        memcpy(long_val, MARK, sizeof MARK - 1);
        return long_val;
    }
    return "env-" MARK;
}

static int fake_file(const char *path, void *buf, size_t cap, size_t *len)
{
    static const char content[] = "file-" MARK "\n\n";
    *len = 0;
    if (!strncmp(path, "/missing", 8))
        return ENOENT;
    if (!strncmp(path, "/dir", 4))
        return EINVAL;
    if (!strncmp(path, "/big", 4))
        return EFBIG;
    size_t n = sizeof content - 1 < cap ? sizeof content - 1 : cap;
    memcpy(buf, content, n);
    *len = n;
    return 0;
}

static void check(const struct hk_sources *s)
{
    if (s->n > HK_SOURCES_MAX || (s->n && !s->v))
        abort();
    for (size_t i = 0; i < s->n; i++) {
        const struct hk_source *src = &s->v[i];
        if (!hk_source_name_ok(src->name, src->name_len) || strlen(src->name) != src->name_len)
            abort();
        if (i && strcmp(s->v[i - 1].name, src->name) >= 0)
            abort();
        if (hk_sources_find(s, src->name, src->name_len) != src)
            abort();
        if (src->scheme >= HK_SCHEME__COUNT || src->nsecrets > HK_SOURCE_SECRETS_MAX)
            abort();
        if ((src->scheme == HK_SCHEME_NONE) != (src->nsecrets == 0))
            abort();
        for (size_t k = 0; k < src->nsecrets; k++) {
            const struct hk_secret *sec = &src->secrets[k];
            if (!sec->key || sec->len == 0 || sec->len > HK_SECRET_MAX || (sec->ed25519 && sec->len != 32))
                abort();
            if (strncmp(sec->ref, "env:", 4) != 0 && strncmp(sec->ref, "file:", 5) != 0)
                abort();
        }
        if (src->ncontent_types > HK_SOURCE_LIST_MAX || src->nheaders > HK_SOURCE_LIST_MAX ||
            src->nproxies > HK_SOURCE_LIST_MAX)
            abort();
        for (size_t k = 0; k < src->nproxies; k++)
            if (src->proxies[k].bits > 128 || !hk_source_trusts(src, src->proxies[k].addr))
                abort();
        if (src->max_body == 0 || src->max_body > (1u << 30) || src->tolerance_s <= 0)
            abort();
        if (src->rate < 0 || (src->rate > 0 && src->burst == 0))
            abort();
        if ((src->scheme == HK_SCHEME_HMAC || src->scheme == HK_SCHEME_TOKEN) && !src->header)
            abort();
        if (src->scheme == HK_SCHEME_HMAC && (!src->template || !strstr(src->template, "{body}")))
            abort();
        if (src->scheme == HK_SCHEME_TWILIO && !src->public_url)
            abort();
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    /* A copy of exactly `size` bytes: ASan sees any read past the end. */
    char *text = malloc(size ? size : 1);
    if (!text)
        return 0;
    memcpy(text, data, size);
    char err[512];
    struct hk_sources *s =
        hk_sources_parse_with(text, size, "fuzz.yaml", 1 << 20, fake_env, fake_file, err, sizeof err);
    if (s) {
        check(s);
        hk_sources_ref(s);
        hk_sources_unref(s);
        hk_sources_find(s, text, size < 80 ? size : 80);
        hk_sources_unref(s);
    } else {
        if (err[0] == '\0' || strchr(err, '\n'))
            abort();
        /* Unless the input spells the mark itself (or could, by an escape). */
        if (strstr(err, MARK) && !memmem(text, size, MARK, sizeof MARK - 1) && !memchr(text, '\\', size))
            abort();
    }
    free(text);
    return 0;
}
