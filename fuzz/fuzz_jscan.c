/* SPDX-License-Identifier: MIT
 * libFuzzer target: the JSON scanner (ingress/jscan.h) against jansson on
 * the same bytes. Both must agree on whether the bytes are one JSON object
 * (json_loadb with no flags), and on every value found at a few paths:
 * its kind, a string's unescaped bytes, a number's value. One exception:
 * jansson's reader skips raw NUL bytes (its refill loop takes a NUL for
 * the end of its buffer), the scanner refuses them as RFC 8259 does, so
 * inputs with a NUL byte are only run, not compared. */
#include <jansson.h>
#include <stdint.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "ingress/jscan.h"

static const char *const paths[] = {"type", "id", "event.type", "a.b", "data.object.id", "", "x..y"};
#define NPATHS ((int)(sizeof paths / sizeof paths[0]))

static json_t *path_get(json_t *v, const char *path)
{
    if (!*path)
        return NULL;
    const char *p = path;
    for (;;) {
        if (!json_is_object(v))
            return NULL;
        const char *dot = strchr(p, '.');
        size_t len = dot ? (size_t)(dot - p) : strlen(p);
        if (!len)
            return NULL;
        v = json_object_getn(v, p, len);
        if (!v || !dot)
            return v;
        p = dot + 1;
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *v = malloc(size ? size : 1);
    if (!v)
        return 0;
    memcpy(v, data, size);
    struct hk_jscan_want w[NPATHS];
    for (int i = 0; i < NPATHS; i++)
        w[i].path = paths[i];
    int rc = hk_jscan(v, size, w, NPATHS > 8 ? 8 : NPATHS);
    json_error_t err;
    json_t *root = json_loadb(v, size, 0, &err);
    bool valid = root && json_is_object(root);
    if (memchr(v, 0, size)) {
        json_decref(root);
        free(v);
        return 0;
    }
    if ((rc == 0) != valid)
        abort();
    if (valid) {
        for (int i = 0; i < NPATHS; i++) {
            json_t *j = path_get(root, paths[i]);
            const struct hk_jval *o = &w[i].out;
            if (!j) {
                if (o->kind != HK_J_NONE)
                    abort();
            } else if (json_is_string(j)) {
                if (o->kind != HK_J_STRING)
                    abort();
                size_t n = json_string_length(j);
                char *buf = malloc(n + 1);
                long got = hk_jscan_string(o, buf, n);
                if (got < 0 || (size_t)got != n || memcmp(buf, json_string_value(j), n) != 0)
                    abort();
                /* One byte short never fits. */
                if (n > 0 && hk_jscan_string(o, buf, n - 1) >= 0)
                    abort();
                free(buf);
            } else if (json_is_integer(j)) {
                char num[64];
                if (o->kind != HK_J_INT || o->n >= sizeof num)
                    abort();
                memcpy(num, o->p, o->n);
                num[o->n] = 0;
                if (strtoll(num, NULL, 10) != json_integer_value(j))
                    abort();
            } else if (json_is_real(j)) {
                if (o->kind != HK_J_REAL)
                    abort();
            } else if (o->kind != HK_J_OTHER) {
                abort();
            }
        }
    }
    json_decref(root);
    free(v);
    return 0;
}
