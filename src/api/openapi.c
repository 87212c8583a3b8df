/* SPDX-License-Identifier: MIT
 * Serving the embedded OpenAPI document in the format asked for. */
#include "api/openapi.h"

#include <string.h>
#include <strings.h>

#include "api/api_int.h"
#include "http/query.h"

int hk_api_accepts(const char *v, size_t n, const char *type)
{
    size_t tl = strlen(type);
    size_t i = 0;
    while (i < n) {
        while (i < n && (v[i] == ' ' || v[i] == '\t' || v[i] == ','))
            i++;
        size_t start = i;
        while (i < n && v[i] != ',' && v[i] != ';' && v[i] != ' ' && v[i] != '\t')
            i++;
        if (i - start == tl && strncasecmp(v + start, type, tl) == 0)
            return 1;
        while (i < n && v[i] != ',')
            i++;
    }
    return 0;
}

/* YAML by default; JSON with ?format=json or when Accept names
 * application/json (and not YAML), as Quarkus serves it. */
void hk_api_openapi(struct hk_req *r)
{
    size_t flen;
    const char *f = hk_query_raw(r->query, r->query_len, "format", &flen);
    int json;
    if (f && flen == 4 && strncasecmp(f, "json", 4) == 0)
        json = 1;
    else if (f && ((flen == 4 && strncasecmp(f, "yaml", 4) == 0) || (flen == 3 && strncasecmp(f, "yml", 3) == 0)))
        json = 0;
    else if (f) {
        hk_resp_problem(r, 400, NULL, "query parameter format must be json or yaml");
        return;
    } else {
        json = r->accept && hk_api_accepts(r->accept, r->accept_len, "application/json") &&
               !hk_api_accepts(r->accept, r->accept_len, "application/yaml");
    }
    struct hk_buf *b = hk_resp_body(r);
    if (json)
        hk_buf_put(b, hk_openapi_json, hk_openapi_json_len);
    else
        hk_buf_put(b, hk_openapi_yaml, hk_openapi_yaml_len);
    hk_resp_send(r, 200, json ? HK_CT_JSON_UTF8 : HK_CT_YAML);
}
