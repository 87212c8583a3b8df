/* SPDX-License-Identifier: MIT
 * libFuzzer target: every parser of credentials and their settings, on the
 * same bytes: the Authorization value, the tokens file, scopes, durations,
 * RFC 3339 times and the Redis URL. Each must refuse or accept without
 * reading past its input, and what it accepts must hold its own rules. */
#include <stdlib.h>
#include <string.h>

#include "auth/token.h"
#include "auth/tokens_file.h"
#include "redis/redis.h"

static struct hk_token_rec recs[64];

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const char *p = (const char *)data;
    /* A copy of exactly `size` bytes: ASan sees any read past the end. */
    char *v = malloc(size ? size : 1);
    if (!v)
        return 0;
    memcpy(v, p, size);

    const char *tok;
    size_t len;
    enum hk_token_kind kind;
    if (hk_bearer_parse(v, size, &tok, &len, &kind) == HK_AUTH_OK) {
        enum hk_token_kind k2;
        if (len != HK_TOKEN_LEN || tok < v || tok + len > v + size || hk_token_kind_of(tok, len, &k2) < 0 || k2 != kind)
            abort();
    }
    unsigned scopes;
    if (hk_scopes_parse(v, size, &scopes) == 0 && (scopes == 0 || (scopes & ~7u)))
        abort();
    int64_t us;
    if (hk_duration_parse(v, size, &us) == 0 && (us <= 0 || us > HK_DURATION_MAX_US))
        abort();
    (void)hk_rfc3339_parse(v, size, &us);
    size_t n = 0;
    char err[160];
    if (hk_tokens_file_parse(v, size, recs, sizeof recs / sizeof recs[0], &n, err, sizeof err) == 0 &&
        n > sizeof recs / sizeof recs[0])
        abort();

    /* The URL parser takes a C string. */
    char *s = malloc(size + 1);
    if (s) {
        memcpy(s, p, size);
        s[size] = '\0';
        struct hk_redis_cfg c;
        memset(&c, 0, sizeof c);
        if (hk_redis_parse_url(s, &c, err, sizeof err) == 0)
            hk_redis_cfg_free(&c);
        free(s);
    }
    free(v);
    return 0;
}
