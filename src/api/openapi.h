/* SPDX-License-Identifier: MIT
 * GET /q/openapi: the OpenAPI 3.1 document of hookd's API. docs/openapi.json
 * is the one written by hand; the build embeds it, and a YAML rendering of
 * it, into the binary (src/obs/openapi_embed.py), so nothing is read from
 * disk at run time. */
#ifndef HK_OPENAPI_H
#define HK_OPENAPI_H

#include <stddef.h>

/* Generated at build time; NUL-terminated, length without the NUL. */
extern const char hk_openapi_json[];
extern const size_t hk_openapi_json_len;
extern const char hk_openapi_yaml[];
extern const size_t hk_openapi_yaml_len;

#define HK_CT_YAML "application/yaml;charset=UTF-8"
#define HK_CT_JSON_UTF8 "application/json;charset=UTF-8"

#endif
