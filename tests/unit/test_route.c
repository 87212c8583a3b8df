/* SPDX-License-Identifier: MIT
 * Routing: exact paths, the {id} template, 404 and 405 with Allow. */
#include <criterion/criterion.h>
#include <llhttp.h>
#include <string.h>

#include "api/api.h"
#include "http/query.h"
#include "http/route.h"

static struct hk_match match(const char *path, uint8_t method)
{
    struct hk_match m;
    hk_route_match(hk_api_routes, hk_api_nroutes, path, strlen(path), method, &m);
    return m;
}

Test(route, exact_paths)
{
    cr_expect_eq(match("/api/webhooks", HTTP_GET).status, 0);
    cr_expect_eq(match("/api/webhooks", HTTP_POST).status, 0);
    cr_expect_eq(match("/q/health/ready", HTTP_GET).status, 0);
    cr_expect_eq(match("/q/health/ready", HTTP_HEAD).status, 0, "HEAD matches GET routes");
    cr_expect_str_eq(hk_api_routes[match("/api/system/info", HTTP_GET).route].tmpl, "/api/system/info");
}

Test(route, id_template)
{
    struct hk_match m = match("/api/webhooks/42", HTTP_GET);
    cr_assert_eq(m.status, 0);
    cr_expect_eq(m.param_len, 2);
    cr_expect_eq(memcmp(m.param, "42", 2), 0);
    cr_expect_str_eq(hk_api_routes[m.route].tmpl, "/api/webhooks/{id}");
    cr_expect_eq(match("/api/webhooks/42/x", HTTP_GET).status, 404);
    cr_expect_eq(match("/api/webhooks/", HTTP_GET).status, 404);
}

Test(route, not_found)
{
    cr_expect_eq(match("/", HTTP_GET).status, 404);
    cr_expect_eq(match("/api/webhook", HTTP_GET).status, 404);
    cr_expect_eq(match("/api/webhooksX", HTTP_GET).status, 404);
    cr_expect_eq(match("/q/health/", HTTP_GET).status, 404);
    cr_expect_eq(match("", HTTP_GET).status, 404);
}

Test(route, method_not_allowed_lists_allow)
{
    struct hk_match m = match("/api/webhooks", HTTP_PUT);
    cr_assert_eq(m.status, 405);
    cr_expect_str_eq(m.allow, "GET, POST");
    m = match("/api/webhooks/7", HTTP_POST);
    cr_assert_eq(m.status, 405);
    cr_expect_str_eq(m.allow, "DELETE, GET");
    m = match("/q/health", HTTP_DELETE);
    cr_assert_eq(m.status, 405);
    cr_expect_str_eq(m.allow, "GET");
}

Test(query, find_and_decode)
{
    const char *q = "limit=5&source=a%20b+c&flag&eventType=";
    size_t n;
    const char *v = hk_query_raw(q, strlen(q), "source", &n);
    cr_assert_not_null(v);
    char out[32];
    long d = hk_url_decode(v, n, out, sizeof out);
    cr_assert_eq(d, 5);
    cr_expect_eq(memcmp(out, "a b c", 5), 0);
    v = hk_query_raw(q, strlen(q), "flag", &n);
    cr_expect_not_null(v);
    cr_expect_eq(n, 0);
    v = hk_query_raw(q, strlen(q), "eventType", &n);
    cr_expect_not_null(v);
    cr_expect_eq(n, 0);
    cr_expect_null(hk_query_raw(q, strlen(q), "lim", &n));
    cr_expect_null(hk_query_raw(NULL, 0, "limit", &n));
    cr_expect_eq(hk_url_decode("%zz", 3, out, sizeof out), -1);
    cr_expect_eq(hk_url_decode("%4", 2, out, sizeof out), -1);
    cr_expect_eq(hk_url_decode("abc", 3, out, 2), -1);
}
