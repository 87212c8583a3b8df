/* SPDX-License-Identifier: MIT
 * ingress/provider.c: event types and delivery ids for every scheme (the
 * defaults, the source's overrides, numbers, nested paths, values that are
 * missing, too long or not printable, bodies that are not JSON or nested
 * past jansson's limit), and every handshake: the right shape answered
 * byte for byte, the wrong shapes not answered, zoom's encryptedToken
 * checked against `openssl dgst -hmac`, the query handshakes' decoding. */
#include <criterion/criterion.h>
#include <jansson.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include "core/crypto.h"
#include "ingress/provider.h"

/* ---- Fixtures ------------------------------------------------------------ */

/* A header getter of our own (verify.c has hk_hdr_list_get; this copy
 * keeps the test independent of it): first value, case-insensitive name,
 * count of occurrences. */
static const char *hdr_get(const void *ctx, const char *name, size_t *len, unsigned *count)
{
    const struct hk_hdr_list *l = ctx;
    const char *first = NULL;
    unsigned c = 0;
    size_t nlen = strlen(name);
    for (size_t i = 0; i < l->n; i++) {
        if (l->v[i].name_len == nlen && strncasecmp(l->v[i].name, name, nlen) == 0) {
            if (c++ == 0) {
                first = l->v[i].value;
                *len = l->v[i].value_len;
            }
        }
    }
    if (count)
        *count = c;
    return first;
}

#define HMAX 8
struct req {
    struct hk_hdr v[HMAX];
    struct hk_hdr_list list;
    struct hk_hdrs h;
};

/* Headers from "Name", "value" pairs, NULL-terminated. */
static void req_init(struct req *r, ...)
{
    va_list ap;
    va_start(ap, r);
    size_t n = 0;
    for (const char *name; (name = va_arg(ap, const char *)) != NULL;) {
        const char *value = va_arg(ap, const char *);
        cr_assert(n < HMAX);
        r->v[n] = (struct hk_hdr){name, value, strlen(name), strlen(value)};
        n++;
    }
    va_end(ap);
    r->list = (struct hk_hdr_list){r->v, n};
    r->h = (struct hk_hdrs){hdr_get, &r->list};
}

static struct hk_source src_of(enum hk_scheme s)
{
    struct hk_source src;
    memset(&src, 0, sizeof src);
    strcpy(src.name, "test");
    src.name_len = 4;
    src.scheme = s;
    return src;
}

static const char JSON[] = "application/json";

static void extract(const struct hk_source *src, const struct req *r, const char *ctype, const char *body,
                    struct hk_meta *m)
{
    hk_meta_extract(src, &r->h, ctype, ctype ? strlen(ctype) : 0, body, body ? strlen(body) : 0, m);
}

/* Expect a value (or none, when want is NULL). */
static void expect_val(const char *what, const char *p, size_t n, const char *want)
{
    if (!want) {
        cr_expect_null(p, "%s: expected none, got \"%.*s\"", what, p ? (int)n : 0, p ? p : "");
        return;
    }
    cr_assert_not_null(p, "%s: expected \"%s\", got none", what, want);
    cr_expect_eq(n, strlen(want), "%s: length %zu, expected %zu (\"%.*s\")", what, n, strlen(want), (int)n, p);
    cr_expect(n == strlen(want) && memcmp(p, want, n) == 0, "%s: \"%.*s\", expected \"%s\"", what, (int)n, p, want);
}

#define EXPECT_META(m, type, id)                                                                                   \
    do {                                                                                                           \
        expect_val("event type", (m).event_type, (m).event_type_len, type);                                        \
        expect_val("delivery id", (m).delivery_id, (m).delivery_id_len, id);                                       \
    } while (0)

static void crypto_up(void)
{
    char err[256];
    cr_assert_eq(hk_crypto_init(err, sizeof err), 0, "hk_crypto_init: %s", err);
}

/* ---- Scheme defaults ------------------------------------------------------- */

Test(meta, github)
{
    struct hk_source s = src_of(HK_SCHEME_GITHUB);
    struct req r;
    struct hk_meta m;
    req_init(&r, "X-GitHub-Event", "push", "X-GitHub-Delivery", "72d3162e-cc78-11e3-81ab-4c9367dc0958", NULL);
    extract(&s, &r, JSON, "{\"type\":\"ignored\",\"id\":\"ignored\"}", &m);
    EXPECT_META(m, "push", "72d3162e-cc78-11e3-81ab-4c9367dc0958");
    /* Header values are borrowed, not copied. */
    cr_expect_eq(m.event_type, r.v[0].value);

    req_init(&r, "x-github-event", "ping", NULL);
    extract(&s, &r, JSON, "{}", &m);
    EXPECT_META(m, "ping", NULL);
}

Test(meta, gitea_and_its_forks)
{
    struct hk_source s = src_of(HK_SCHEME_GITEA);
    struct req r;
    struct hk_meta m;
    req_init(&r, "X-Gitea-Event", "push", "X-Gitea-Delivery", "d1", "X-Forgejo-Event", "issues",
             "X-Forgejo-Delivery", "d2", NULL);
    extract(&s, &r, NULL, NULL, &m);
    EXPECT_META(m, "push", "d1");
    req_init(&r, "X-Forgejo-Event", "issues", "X-Forgejo-Delivery", "d2", NULL);
    extract(&s, &r, NULL, NULL, &m);
    EXPECT_META(m, "issues", "d2");
    req_init(&r, "X-Gogs-Event", "create", "X-Gogs-Delivery", "d3", NULL);
    extract(&s, &r, NULL, NULL, &m);
    EXPECT_META(m, "create", "d3");
    /* Mixed: each value from the first header present. */
    req_init(&r, "X-Gogs-Event", "create", "X-Forgejo-Delivery", "d2", NULL);
    extract(&s, &r, NULL, NULL, &m);
    EXPECT_META(m, "create", "d2");
}

Test(meta, gitlab)
{
    struct hk_source s = src_of(HK_SCHEME_GITLAB);
    struct req r;
    struct hk_meta m;
    req_init(&r, "X-Gitlab-Event", "Push Hook", "X-Gitlab-Event-UUID", "13792a34-cac6-4fda-95a8-c58e00a3954e",
             "X-Gitlab-Webhook-UUID", "other", NULL);
    extract(&s, &r, JSON, "{\"object_kind\":\"push\"}", &m);
    EXPECT_META(m, "Push Hook", "13792a34-cac6-4fda-95a8-c58e00a3954e");
    req_init(&r, "X-Gitlab-Event", "Merge Request Hook", "X-Gitlab-Webhook-UUID", "w-1", NULL);
    extract(&s, &r, JSON, "{}", &m);
    EXPECT_META(m, "Merge Request Hook", "w-1");
}

Test(meta, stripe_from_the_body)
{
    struct hk_source s = src_of(HK_SCHEME_STRIPE);
    struct req r;
    struct hk_meta m;
    req_init(&r, NULL);
    const char *body = "{\"id\":\"evt_1NG8Du2eZvKYlo2CUI79vXWy\",\"object\":\"event\","
                       "\"type\":\"payment_intent.succeeded\",\"data\":{\"object\":{\"id\":\"pi_1\"}}}";
    extract(&s, &r, JSON, body, &m);
    EXPECT_META(m, "payment_intent.succeeded", "evt_1NG8Du2eZvKYlo2CUI79vXWy");
    /* Body values are copied into buf and NUL-terminated. */
    cr_expect(m.event_type >= m.buf && m.event_type < m.buf + sizeof m.buf);
    cr_expect_eq(m.event_type[m.event_type_len], '\0');
    cr_expect_eq(m.delivery_id[m.delivery_id_len], '\0');

    extract(&s, &r, "application/json; charset=utf-8", body, &m);
    EXPECT_META(m, "payment_intent.succeeded", "evt_1NG8Du2eZvKYlo2CUI79vXWy");
    /* The same bytes under a non-JSON content type are not parsed. */
    extract(&s, &r, "text/plain", body, &m);
    EXPECT_META(m, NULL, NULL);
    extract(&s, &r, NULL, body, &m);
    EXPECT_META(m, NULL, NULL);
}

Test(meta, shopify)
{
    struct hk_source s = src_of(HK_SCHEME_SHOPIFY);
    struct req r;
    struct hk_meta m;
    req_init(&r, "X-Shopify-Topic", "orders/create", "X-Shopify-Webhook-Id", "b54557e4-bdd9-4b37-8a5f-bf7d70bcd043",
             "X-Shopify-Event-Id", "98880550-7158-44d4-b7cd-2c97c8a091b5", NULL);
    extract(&s, &r, JSON, "{}", &m);
    EXPECT_META(m, "orders/create", "b54557e4-bdd9-4b37-8a5f-bf7d70bcd043");
    req_init(&r, "X-Shopify-Topic", "orders/create", "X-Shopify-Event-Id", "98880550", NULL);
    extract(&s, &r, JSON, "{}", &m);
    EXPECT_META(m, "orders/create", "98880550");
}

Test(meta, slack)
{
    struct hk_source s = src_of(HK_SCHEME_SLACK);
    struct req r;
    struct hk_meta m;
    req_init(&r, NULL);
    /* An Events API envelope (api.slack.com/apis/events-api, "Callback field overview"). */
    extract(&s, &r, JSON,
            "{\"token\":\"XXYYZZ\",\"team_id\":\"T123ABC456\",\"event\":{\"type\":\"app_mention\",\"user\":\"U1\"},"
            "\"type\":\"event_callback\",\"event_id\":\"Ev123ABC456\",\"event_time\":1234567890}",
            &m);
    EXPECT_META(m, "app_mention", "Ev123ABC456");
    /* No inner event: the outer type. */
    extract(&s, &r, JSON, "{\"token\":\"t\",\"challenge\":\"c\",\"type\":\"url_verification\"}", &m);
    EXPECT_META(m, "url_verification", NULL);
    /* An inner event without a string type falls back to the outer one. */
    extract(&s, &r, JSON, "{\"event\":{\"type\":null},\"type\":\"event_callback\",\"event_id\":\"Ev1\"}", &m);
    EXPECT_META(m, "event_callback", "Ev1");
    /* Interactivity payloads are form-encoded: nothing read. */
    extract(&s, &r, "application/x-www-form-urlencoded", "payload=%7B%22type%22%3A%22block_actions%22%7D", &m);
    EXPECT_META(m, NULL, NULL);
}

Test(meta, standard_webhooks)
{
    struct hk_source s = src_of(HK_SCHEME_STANDARD);
    struct req r;
    struct hk_meta m;
    const char *body = "{\"type\":\"contact.created\",\"timestamp\":\"2022-11-03T20:26:10.344522Z\","
                       "\"data\":{\"id\":\"1f81eb52\"}}";
    req_init(&r, "webhook-id", "msg_2KWPBgLlAfxdpx2AI54pPJ85f4W", "svix-id", "msg_other", NULL);
    extract(&s, &r, JSON, body, &m);
    EXPECT_META(m, "contact.created", "msg_2KWPBgLlAfxdpx2AI54pPJ85f4W");
    req_init(&r, "svix-id", "msg_svix", NULL);
    extract(&s, &r, "application/cloudevents+json", body, &m);
    EXPECT_META(m, "contact.created", "msg_svix");
}

Test(meta, discord_interactions)
{
    struct hk_source s = src_of(HK_SCHEME_DISCORD);
    struct req r;
    struct hk_meta m;
    static const char *const names[] = {"PING", "APPLICATION_COMMAND", "MESSAGE_COMPONENT",
                                        "APPLICATION_COMMAND_AUTOCOMPLETE", "MODAL_SUBMIT"};
    req_init(&r, NULL);
    for (int t = 1; t <= 5; t++) {
        char body[200];
        snprintf(body, sizeof body, "{\"id\":\"786008729715212338\",\"application_id\":\"1\",\"type\":%d,"
                                    "\"token\":\"A_UNIQUE_TOKEN\",\"version\":1}", t);
        extract(&s, &r, JSON, body, &m);
        EXPECT_META(m, names[t - 1], "786008729715212338");
    }
    extract(&s, &r, JSON, "{\"id\":\"1\",\"type\":6}", &m);
    EXPECT_META(m, NULL, "1");
    extract(&s, &r, JSON, "{\"id\":\"1\",\"type\":\"2\"}", &m);
    EXPECT_META(m, NULL, "1");
}

Test(meta, discord_webhook_events)
{
    struct hk_source s = src_of(HK_SCHEME_DISCORD);
    struct req r;
    struct hk_meta m;
    req_init(&r, NULL);
    /* discord.com/developers/docs/events/webhook-events, "Webhook Event Payloads". */
    extract(&s, &r, JSON,
            "{\"version\":1,\"application_id\":\"1234560123453231555\",\"type\":1,\"event\":{\"type\":"
            "\"APPLICATION_AUTHORIZED\",\"timestamp\":\"2024-10-18T14:42:53.064834\",\"data\":{}}}",
            &m);
    EXPECT_META(m, "APPLICATION_AUTHORIZED", NULL);
    extract(&s, &r, JSON, "{\"version\":1,\"application_id\":\"1\",\"type\":0}", &m);
    EXPECT_META(m, "PING", NULL);
    /* An event without a usable type, or an `event` that is not an object. */
    extract(&s, &r, JSON, "{\"type\":1,\"event\":{\"timestamp\":\"x\"}}", &m);
    EXPECT_META(m, NULL, NULL);
    extract(&s, &r, JSON, "{\"type\":1,\"event\":null}", &m);
    EXPECT_META(m, NULL, NULL);
}

Test(meta, twitch)
{
    struct hk_source s = src_of(HK_SCHEME_TWITCH);
    struct req r;
    struct hk_meta m;
    req_init(&r, "Twitch-Eventsub-Message-Id", "e76c6bd4-55c9-4987-8304-da1588d8988b",
             "Twitch-Eventsub-Subscription-Type", "channel.follow.header", NULL);
    extract(&s, &r, JSON, "{\"subscription\":{\"id\":\"f1c2\",\"type\":\"channel.follow\",\"version\":\"2\"},"
                          "\"event\":{}}", &m);
    EXPECT_META(m, "channel.follow", "e76c6bd4-55c9-4987-8304-da1588d8988b");
    extract(&s, &r, JSON, "{\"challenge\":\"x\"}", &m);
    EXPECT_META(m, "channel.follow.header", "e76c6bd4-55c9-4987-8304-da1588d8988b");
}

Test(meta, zoom_meta_twilio)
{
    struct hk_source s = src_of(HK_SCHEME_ZOOM);
    struct req r;
    struct hk_meta m;
    req_init(&r, "x-zm-request-timestamp", "1", NULL);
    extract(&s, &r, JSON, "{\"event\":\"meeting.started\",\"event_ts\":1626230691572,\"payload\":{}}", &m);
    EXPECT_META(m, "meeting.started", NULL);

    s = src_of(HK_SCHEME_META);
    extract(&s, &r, JSON, "{\"object\":\"whatsapp_business_account\",\"entry\":[{\"id\":\"1\"}]}", &m);
    EXPECT_META(m, "whatsapp_business_account", NULL);

    s = src_of(HK_SCHEME_TWILIO);
    req_init(&r, "I-Twilio-Idempotency-Token", "1a3c0b5e-a2c0-4e0e-9d7c-ea1b2b0c9b21", NULL);
    extract(&s, &r, JSON, "{\"type\":\"not read\",\"id\":\"not read\"}", &m);
    EXPECT_META(m, NULL, "1a3c0b5e-a2c0-4e0e-9d7c-ea1b2b0c9b21");
}

Test(meta, hmac_token_none_read_only_overrides)
{
    static const enum hk_scheme schemes[] = {HK_SCHEME_HMAC, HK_SCHEME_TOKEN, HK_SCHEME_NONE};
    struct req r;
    struct hk_meta m;
    req_init(&r, "X-GitHub-Event", "push", "X-GitHub-Delivery", "d", "webhook-id", "w", NULL);
    for (size_t i = 0; i < 3; i++) {
        struct hk_source s = src_of(schemes[i]);
        extract(&s, &r, JSON, "{\"type\":\"t\",\"id\":\"i\",\"event\":\"e\",\"object\":\"o\"}", &m);
        EXPECT_META(m, NULL, NULL);
        s.event_type_header = "x-github-event";
        s.delivery_id_field = "id";
        extract(&s, &r, JSON, "{\"type\":\"t\",\"id\":\"i\"}", &m);
        EXPECT_META(m, "push", "i");
    }
    /* hmac: the header a template signs as {id} is the delivery id. */
    struct hk_source s = src_of(HK_SCHEME_HMAC);
    s.id_header = "webhook-id";
    extract(&s, &r, NULL, NULL, &m);
    EXPECT_META(m, NULL, "w");
}

/* ---- Overrides, numbers, paths ------------------------------------------------ */

Test(meta, overrides_win_and_fall_back)
{
    struct hk_source s = src_of(HK_SCHEME_GITHUB);
    struct req r;
    struct hk_meta m;
    req_init(&r, "X-GitHub-Event", "push", "X-GitHub-Delivery", "gh-1", "x-my-type", "custom", "x-my-id", "my-1",
             NULL);
    s.event_type_header = "x-my-type";
    s.delivery_id_header = "x-my-id";
    extract(&s, &r, NULL, NULL, &m);
    EXPECT_META(m, "custom", "my-1");
    /* The override finds nothing: the scheme's default. */
    s.event_type_header = "x-absent";
    s.delivery_id_header = "x-absent-too";
    extract(&s, &r, NULL, NULL, &m);
    EXPECT_META(m, "push", "gh-1");
    /* A header override comes before a field override. */
    s.event_type_header = "x-my-type";
    s.event_type_field = "kind";
    extract(&s, &r, JSON, "{\"kind\":\"from-body\"}", &m);
    EXPECT_META(m, "custom", "gh-1");
    s.event_type_header = NULL;
    extract(&s, &r, JSON, "{\"kind\":\"from-body\"}", &m);
    EXPECT_META(m, "from-body", "gh-1");
}

Test(meta, nested_paths)
{
    struct hk_source s = src_of(HK_SCHEME_STRIPE);
    struct req r;
    struct hk_meta m;
    req_init(&r, NULL);
    s.event_type_field = "event.meta.kind";
    s.delivery_id_field = "data.object.id";
    extract(&s, &r, JSON, "{\"event\":{\"meta\":{\"kind\":\"deep\"}},\"data\":{\"object\":{\"id\":\"obj_9\"}}}", &m);
    EXPECT_META(m, "deep", "obj_9");
    /* A step through an array, a missing step, an empty segment: none,
     * then the scheme's default (stripe: type, id). */
    s.event_type_field = "event.0.kind";
    extract(&s, &r, JSON, "{\"event\":[{\"kind\":\"x\"}],\"type\":\"dflt\"}", &m);
    EXPECT_META(m, "dflt", NULL);
    s.event_type_field = "event..kind";
    extract(&s, &r, JSON, "{\"event\":{\"\":{\"kind\":\"x\"}},\"type\":\"dflt\"}", &m);
    EXPECT_META(m, "dflt", NULL);
    s.event_type_field = "event.kind.";
    extract(&s, &r, JSON, "{\"event\":{\"kind\":\"x\"}}", &m);
    EXPECT_META(m, NULL, NULL);

    /* HK_META_PATH_MAX segments are followed; one more is not. */
    char path[128] = "", body[256] = "", tail[64] = "";
    for (int i = 0; i < HK_META_PATH_MAX; i++) {
        strcat(path, i ? ".a" : "a");
        strcat(body, "{\"a\":");
        strcat(tail, "}");
    }
    char full[400];
    snprintf(full, sizeof full, "%s\"leaf\"%s", body, tail);
    s.event_type_field = path;
    extract(&s, &r, JSON, full, &m);
    EXPECT_META(m, "leaf", NULL);
    strcat(path, ".a");
    snprintf(full, sizeof full, "%s{\"a\":\"leaf\"}%s", body, tail);
    extract(&s, &r, JSON, full, &m);
    EXPECT_META(m, NULL, NULL);
}

Test(meta, numbers_as_decimal_text)
{
    struct hk_source s = src_of(HK_SCHEME_NONE);
    struct req r;
    struct hk_meta m;
    req_init(&r, NULL);
    s.event_type_field = "t";
    s.delivery_id_field = "id";
    extract(&s, &r, JSON, "{\"t\":2,\"id\":9007199254740993}", &m);
    EXPECT_META(m, "2", "9007199254740993");
    extract(&s, &r, JSON, "{\"t\":-17,\"id\":9223372036854775807}", &m);
    EXPECT_META(m, "-17", "9223372036854775807");
    extract(&s, &r, JSON, "{\"t\":1.5,\"id\":0.1}", &m);
    EXPECT_META(m, "1.5", "0.1");
    extract(&s, &r, JSON, "{\"t\":1e3,\"id\":-2.5e-7}", &m);
    EXPECT_META(m, "1000", "-2.5e-07");
    /* Past int64: jansson refuses the whole body, so nothing is read. */
    extract(&s, &r, JSON, "{\"t\":\"x\",\"id\":9223372036854775808}", &m);
    EXPECT_META(m, NULL, NULL);
}

Test(meta, other_json_values_are_none)
{
    struct hk_source s = src_of(HK_SCHEME_NONE);
    struct req r;
    struct hk_meta m;
    req_init(&r, NULL);
    s.event_type_field = "t";
    s.delivery_id_field = "id";
    static const char *const bodies[] = {
        "{\"t\":true,\"id\":false}", "{\"t\":null,\"id\":null}", "{\"t\":{},\"id\":[]}",
        "{\"t\":[\"a\"],\"id\":{\"x\":1}}", "{\"t\":\"\",\"id\":\"\"}", "{}",
    };
    for (size_t i = 0; i < sizeof bodies / sizeof bodies[0]; i++) {
        extract(&s, &r, JSON, bodies[i], &m);
        EXPECT_META(m, NULL, NULL);
    }
}

Test(meta, bodies_that_are_not_a_json_object)
{
    struct hk_source s = src_of(HK_SCHEME_STRIPE);
    struct req r;
    struct hk_meta m;
    req_init(&r, NULL);
    static const char *const bodies[] = {
        "", "not json", "[{\"type\":\"x\",\"id\":\"y\"}]", "\"type\"", "42", "{\"type\":\"x\",\"id\":\"y\"",
        "{\"type\":\"x\",\"id\":\"y\"} trailing", "{\"type\":\"x\",\"id\":\"y\"}{}", "{'type':'x'}",
    };
    for (size_t i = 0; i < sizeof bodies / sizeof bodies[0]; i++) {
        extract(&s, &r, JSON, bodies[i], &m);
        EXPECT_META(m, NULL, NULL);
    }
    /* A NUL byte inside the body, within the length given. */
    static const char nul[] = "{\"type\":\"x\",\0\"id\":\"y\"}";
    hk_meta_extract(&s, &r.h, JSON, strlen(JSON), nul, sizeof nul - 1, &m);
    EXPECT_META(m, NULL, NULL);
    /* Bytes past `n` are not read: the same body cut before its end. */
    static const char cut[] = "{\"type\":\"x\"}, and then garbage";
    hk_meta_extract(&s, &r.h, JSON, strlen(JSON), cut, 12, &m);
    EXPECT_META(m, "x", NULL);
}

Test(meta, json_content_types)
{
    struct hk_source s = src_of(HK_SCHEME_STRIPE);
    struct req r;
    struct hk_meta m;
    req_init(&r, NULL);
    const char *body = "{\"type\":\"t\"}";
    static const char *const yes[] = {
        "application/json", "APPLICATION/JSON", "Application/Json;charset=UTF-8", " application/json ; x=y",
        "application/vnd.api+json", "application/merge-patch+json; charset=utf-8", "text/x+JSON",
    };
    static const char *const no[] = {
        "application/jsonx", "application/x-json", "text/plain", "+json", "application/+json", "/x+json",
        "application/json-seq", "", "multipart/form-data; boundary=+json", "json",
    };
    for (size_t i = 0; i < sizeof yes / sizeof yes[0]; i++) {
        extract(&s, &r, yes[i], body, &m);
        cr_expect_not_null(m.event_type, "\"%s\" should count as JSON", yes[i]);
    }
    for (size_t i = 0; i < sizeof no / sizeof no[0]; i++) {
        extract(&s, &r, no[i], body, &m);
        cr_expect_null(m.event_type, "\"%s\" should not count as JSON", no[i]);
    }
}

/* ---- Bounds and hostile values ------------------------------------------------ */

Test(meta, length_bound)
{
    struct hk_source s = src_of(HK_SCHEME_STRIPE);
    struct req r;
    struct hk_meta m;
    char at[HK_META_MAX + 2], over[HK_META_MAX + 2];
    memset(at, 'a', HK_META_MAX);
    at[HK_META_MAX] = '\0';
    memset(over, 'b', HK_META_MAX + 1);
    over[HK_META_MAX + 1] = '\0';

    char body[1024];
    snprintf(body, sizeof body, "{\"type\":\"%s\",\"id\":\"%s\"}", at, over);
    req_init(&r, NULL);
    extract(&s, &r, JSON, body, &m);
    EXPECT_META(m, at, NULL);
    cr_expect_eq(m.event_type_len, HK_META_MAX);
    /* Both halves of buf at the limit at once. */
    snprintf(body, sizeof body, "{\"type\":\"%s\",\"id\":\"%s\"}", at, at);
    extract(&s, &r, JSON, body, &m);
    EXPECT_META(m, at, at);

    s = src_of(HK_SCHEME_GITHUB);
    req_init(&r, "X-GitHub-Event", at, "X-GitHub-Delivery", over, NULL);
    extract(&s, &r, NULL, NULL, &m);
    EXPECT_META(m, at, NULL);
}

Test(meta, non_printable_values_are_none)
{
    struct hk_source s = src_of(HK_SCHEME_GITHUB);
    struct req r;
    struct hk_meta m;
    static const char *const bad[] = {
        "pu\x01sh", "push\r\nX-Injected: 1", "tab\there", "del\x7f", "c1\xc2\x85next", "c1\xc2\x9f",
        "bad\xff", "trunc\xe2\x82", "overlong\xc0\xaf", "surrogate\xed\xa0\x80",
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        req_init(&r, "X-GitHub-Event", bad[i], "X-GitHub-Delivery", bad[i], NULL);
        extract(&s, &r, NULL, NULL, &m);
        EXPECT_META(m, NULL, NULL);
    }
    /* Printable non-ASCII is kept, NBSP (C2 A0) included; surrounding
     * spaces are trimmed, inner ones kept. */
    req_init(&r, "X-GitHub-Event", "caf\xc3\xa9 \xe2\x82\xac", "X-GitHub-Delivery", "  a\xc2\xa0" "b \t", NULL);
    extract(&s, &r, NULL, NULL, &m);
    EXPECT_META(m, "caf\xc3\xa9 \xe2\x82\xac", "a\xc2\xa0" "b");
    /* Only spaces: empty after trimming, none. */
    req_init(&r, "X-GitHub-Event", "   ", NULL);
    extract(&s, &r, NULL, NULL, &m);
    EXPECT_META(m, NULL, NULL);

    /* The same through JSON escapes. */
    s = src_of(HK_SCHEME_STRIPE);
    req_init(&r, NULL);
    extract(&s, &r, JSON, "{\"type\":\"a\\u0007b\",\"id\":\"x\\u0085y\"}", &m);
    EXPECT_META(m, NULL, NULL);
    extract(&s, &r, JSON, "{\"type\":\"a\\nb\",\"id\":\"\\u00e9\\u20ac\"}", &m);
    EXPECT_META(m, NULL, "\xc3\xa9\xe2\x82\xac");
    /* U+0000 makes jansson refuse the body. */
    extract(&s, &r, JSON, "{\"type\":\"ok\",\"id\":\"a\\u0000b\"}", &m);
    EXPECT_META(m, NULL, NULL);
}

Test(meta, header_sent_twice_is_none)
{
    struct hk_source s = src_of(HK_SCHEME_GITHUB);
    struct req r;
    struct hk_meta m;
    req_init(&r, "X-GitHub-Event", "push", "X-GitHub-Delivery", "d-1", "x-github-delivery", "d-2", NULL);
    extract(&s, &r, NULL, NULL, &m);
    EXPECT_META(m, "push", NULL);
}

static char *nested(size_t depth, const char *inner_fmt)
{
    size_t cap = 2 * depth + 64;
    char *p = malloc(cap);
    cr_assert(p);
    size_t o = (size_t)snprintf(p, cap, "{\"type\":\"top\",\"id\":\"i\",\"x\":");
    for (size_t i = 0; i < depth; i++)
        p[o++] = '[';
    o += (size_t)snprintf(p + o, cap - o, "%s", inner_fmt);
    for (size_t i = 0; i < depth; i++)
        p[o++] = ']';
    p[o++] = '}';
    p[o] = '\0';
    return p;
}

Test(meta, deep_nesting)
{
    struct hk_source s = src_of(HK_SCHEME_STRIPE);
    struct req r;
    struct hk_meta m;
    req_init(&r, NULL);
    /* Within jansson's limit (JSON_PARSER_MAX_DEPTH, 2048): parsed. */
    cr_assert_eq(JSON_PARSER_MAX_DEPTH, 2048);
    char *b = nested(1000, "1");
    extract(&s, &r, JSON, b, &m);
    EXPECT_META(m, "top", "i");
    free(b);
    /* Past it: refused, nothing read, no crash. */
    b = nested(JSON_PARSER_MAX_DEPTH + 10, "1");
    extract(&s, &r, JSON, b, &m);
    EXPECT_META(m, NULL, NULL);
    free(b);
    /* A million unclosed brackets. */
    size_t n = 1000000;
    char *open = malloc(n);
    cr_assert(open);
    memset(open, '[', n);
    hk_meta_extract(&s, &r.h, JSON, strlen(JSON), open, n, &m);
    EXPECT_META(m, NULL, NULL);
    memset(open, '{', n);
    hk_meta_extract(&s, &r.h, JSON, strlen(JSON), open, n, &m);
    EXPECT_META(m, NULL, NULL);
    /* And deep objects under a key a path follows. */
    for (size_t i = 0; i + 5 < n; i += 5)
        memcpy(open + i, "{\"a\":", 5);
    hk_meta_extract(&s, &r.h, JSON, strlen(JSON), open, n - n % 5, &m);
    EXPECT_META(m, NULL, NULL);
    free(open);
}

Test(meta, no_source_or_no_headers)
{
    struct hk_meta m;
    memset(&m, 0x5a, sizeof m);
    hk_meta_extract(NULL, NULL, NULL, 0, NULL, 0, &m);
    EXPECT_META(m, NULL, NULL);
    struct hk_source s = src_of(HK_SCHEME_GITHUB);
    hk_meta_extract(&s, NULL, JSON, strlen(JSON), "{}", 2, &m);
    EXPECT_META(m, NULL, NULL);
}

/* ---- POST handshakes ------------------------------------------------------- */

struct hs {
    struct hk_buf resp;
    const char *ctype;
    enum hk_handshake k;
};

static struct hs post(const struct hk_source *s, const struct req *r, const char *body, int matched)
{
    struct hs o = {HK_BUF_INIT, NULL, HK_HS_NONE};
    o.k = hk_handshake_post(s, &r->h, body, body ? strlen(body) : 0, matched, &o.resp, &o.ctype);
    if (o.k == HK_HS_NONE) {
        cr_expect_eq(o.resp.len, 0, "no handshake, yet %zu bytes of answer", o.resp.len);
        cr_expect_null(o.ctype);
    }
    return o;
}

static void expect_answer(struct hs *o, enum hk_handshake k, const char *ctype, const char *body)
{
    cr_expect_eq(o->k, k, "kind %s, expected %s", hk_handshake_name(o->k), hk_handshake_name(k));
    cr_expect_str_eq(o->ctype ? o->ctype : "(null)", ctype);
    cr_expect_eq(o->resp.len, strlen(body), "answer \"%.*s\", expected \"%s\"", (int)o->resp.len,
                 o->resp.p ? o->resp.p : "", body);
    cr_expect(o->resp.len == strlen(body) && (o->resp.len == 0 || memcmp(o->resp.p, body, o->resp.len) == 0),
              "answer \"%.*s\"", (int)o->resp.len, o->resp.p ? o->resp.p : "");
    hk_buf_free(&o->resp);
}

static void expect_none(struct hs *o)
{
    cr_expect_eq(o->k, HK_HS_NONE, "kind %s, expected none", hk_handshake_name(o->k));
    hk_buf_free(&o->resp);
}

Test(handshake, names)
{
    static const char *const want[] = {"none", "slack", "discord", "twitch", "zoom", "meta", "graph"};
    for (int k = 0; k < HK_HS__COUNT; k++)
        cr_expect_str_eq(hk_handshake_name((enum hk_handshake)k), want[k]);
    cr_expect_str_eq(hk_handshake_name(HK_HS__COUNT), "none");
}

Test(handshake, slack)
{
    struct hk_source s = src_of(HK_SCHEME_SLACK);
    struct req r;
    req_init(&r, NULL);
    /* The payload from api.slack.com/events/url_verification. */
    struct hs o = post(&s, &r,
                       "{\"token\":\"Jhj5dZrVaK7ZwHHjRyZWjbDl\",\"challenge\":"
                       "\"3eZbrw1aBm2rZgRNFdxV2595E9CY3gmdALWMmHkvFXO7tYXAYM8P\",\"type\":\"url_verification\"}",
                       0);
    expect_answer(&o, HK_HS_SLACK, "application/json",
                  "{\"challenge\":\"3eZbrw1aBm2rZgRNFdxV2595E9CY3gmdALWMmHkvFXO7tYXAYM8P\"}");

    /* Whatever the challenge holds, the answer is JSON with the same string. */
    o = post(&s, &r, "{\"type\":\"url_verification\",\"challenge\":\"a\\\"b\\\\c\\n</script>\\u2028\"}", 0);
    cr_assert_eq(o.k, HK_HS_SLACK);
    json_error_t err;
    json_t *j = json_loadb(o.resp.p, o.resp.len, 0, &err);
    cr_assert_not_null(j, "answer is not JSON: %s", err.text);
    cr_expect_eq(json_object_size(j), 1);
    cr_expect_str_eq(json_string_value(json_object_get(j, "challenge")), "a\"b\\c\n</script>\xe2\x80\xa8");
    json_decref(j);
    hk_buf_free(&o.resp);
}

Test(handshake, slack_wrong_shapes)
{
    struct hk_source s = src_of(HK_SCHEME_SLACK);
    struct req r;
    req_init(&r, NULL);
    char big[HK_HANDSHAKE_ECHO_MAX + 64];
    memset(big, 'c', sizeof big);
    char body[2 * HK_HANDSHAKE_ECHO_MAX];
    static const char *const bodies[] = {
        "{\"type\":\"event_callback\",\"challenge\":\"x\"}", "{\"challenge\":\"x\"}",
        "{\"type\":\"url_verification\"}", "{\"type\":\"url_verification\",\"challenge\":42}",
        "{\"type\":\"url_verification\",\"challenge\":\"\"}", "{\"type\":\"url_verification\",\"challenge\":null}",
        "[\"url_verification\"]", "type=url_verification&challenge=x", "",
        "{\"type\":\"URL_VERIFICATION\",\"challenge\":\"x\"}",
    };
    for (size_t i = 0; i < sizeof bodies / sizeof bodies[0]; i++) {
        struct hs o = post(&s, &r, bodies[i], 0);
        expect_none(&o);
    }
    /* HK_HANDSHAKE_ECHO_MAX bytes are echoed; one more is not. */
    snprintf(body, sizeof body, "{\"type\":\"url_verification\",\"challenge\":\"%.*s\"}", HK_HANDSHAKE_ECHO_MAX, big);
    struct hs o = post(&s, &r, body, 0);
    cr_expect_eq(o.k, HK_HS_SLACK);
    cr_expect_eq(o.resp.len, HK_HANDSHAKE_ECHO_MAX + strlen("{\"challenge\":\"\"}"));
    hk_buf_free(&o.resp);
    snprintf(body, sizeof body, "{\"type\":\"url_verification\",\"challenge\":\"%.*s\"}", HK_HANDSHAKE_ECHO_MAX + 1,
             big);
    o = post(&s, &r, body, 0);
    expect_none(&o);
    /* The same body to a source of another scheme. */
    struct hk_source gh = src_of(HK_SCHEME_GITHUB);
    o = post(&gh, &r, "{\"type\":\"url_verification\",\"challenge\":\"x\"}", 0);
    expect_none(&o);
}

Test(handshake, body_over_the_cap_is_not_parsed)
{
    struct hk_source s = src_of(HK_SCHEME_SLACK);
    struct req r;
    req_init(&r, NULL);
    size_t n = HK_HANDSHAKE_BODY_MAX + 1;
    char *b = malloc(n + 1);
    cr_assert(b);
    const char *head = "{\"type\":\"url_verification\",\"challenge\":\"x\",\"pad\":\"";
    memcpy(b, head, strlen(head));
    memset(b + strlen(head), 'p', n - strlen(head) - 2);
    memcpy(b + n - 2, "\"}", 3);
    cr_assert_eq(strlen(b), n);
    struct hs o = post(&s, &r, b, 0);
    expect_none(&o);
    /* One byte shorter fits. */
    memcpy(b + n - 3, "\"}", 3);
    o = post(&s, &r, b, 0);
    cr_expect_eq(o.k, HK_HS_SLACK);
    hk_buf_free(&o.resp);
    free(b);
}

Test(handshake, discord)
{
    struct hk_source s = src_of(HK_SCHEME_DISCORD);
    struct req r;
    req_init(&r, NULL);
    /* Interactions PING -> PONG. */
    struct hs o = post(&s, &r,
                       "{\"id\":\"1\",\"application_id\":\"2\",\"type\":1,\"token\":\"t\",\"version\":1,"
                       "\"user\":{\"id\":\"3\"}}",
                       -1);
    expect_answer(&o, HK_HS_DISCORD, "application/json", "{\"type\":1}");
    /* Webhook-events PING: 204, empty, with a content type. */
    o = post(&s, &r, "{\"version\":1,\"application_id\":\"1234560123453231555\",\"type\":0}", -1);
    expect_answer(&o, HK_HS_DISCORD, "application/json", "");

    static const char *const not_ping[] = {
        "{\"version\":1,\"application_id\":\"1\",\"type\":1,\"event\":{\"type\":\"ENTITLEMENT_CREATE\"}}",
        "{\"type\":0,\"event\":{}}", "{\"type\":2,\"id\":\"1\"}", "{\"type\":\"1\"}", "{\"type\":1.0}",
        "{\"type\":true}", "{}", "[1]", "1",
    };
    for (size_t i = 0; i < sizeof not_ping / sizeof not_ping[0]; i++) {
        o = post(&s, &r, not_ping[i], -1);
        expect_none(&o);
    }
}

Test(handshake, twitch)
{
    struct hk_source s = src_of(HK_SCHEME_TWITCH);
    struct req r;
    /* dev.twitch.tv/docs/eventsub/handling-webhook-events, "Responding to a challenge request". */
    const char *body = "{\"challenge\":\"pogchamp-kappa-360noscope-vohiyo\",\"subscription\":{\"id\":"
                       "\"f1c2a387-161a-49f9-a165-0f21d7a4e1c4\",\"status\":\"webhook_callback_verification_pending\","
                       "\"type\":\"channel.follow\",\"version\":\"2\"}}";
    req_init(&r, "Twitch-Eventsub-Message-Type", "webhook_callback_verification", NULL);
    struct hs o = post(&s, &r, body, 0);
    expect_answer(&o, HK_HS_TWITCH, "text/plain", "pogchamp-kappa-360noscope-vohiyo");

    /* Not a verification message: not a handshake, whatever the body. */
    req_init(&r, "Twitch-Eventsub-Message-Type", "notification", NULL);
    o = post(&s, &r, body, 0);
    expect_none(&o);
    req_init(&r, NULL);
    o = post(&s, &r, body, 0);
    expect_none(&o);
    req_init(&r, "Twitch-Eventsub-Message-Type", "webhook_callback_verification", "Twitch-Eventsub-Message-Type",
             "webhook_callback_verification", NULL);
    o = post(&s, &r, body, 0);
    expect_none(&o);
    req_init(&r, "Twitch-Eventsub-Message-Type", "Webhook_Callback_Verification", NULL);
    o = post(&s, &r, body, 0);
    expect_none(&o);

    /* A text/plain echo refuses control characters (C0, DEL, C1). */
    req_init(&r, "Twitch-Eventsub-Message-Type", "webhook_callback_verification", NULL);
    static const char *const bad[] = {
        "{\"challenge\":\"a\\nb\"}", "{\"challenge\":\"a\\rContent-Type: text/html\"}",
        "{\"challenge\":\"a\\u007fb\"}", "{\"challenge\":\"a\\u0085b\"}", "{\"challenge\":\"\"}",
        "{\"challenge\":7}", "{\"subscription\":{}}", "not json",
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        o = post(&s, &r, bad[i], 0);
        expect_none(&o);
    }
    /* Printable non-ASCII is echoed as it is. */
    o = post(&s, &r, "{\"challenge\":\"caf\\u00e9\"}", 0);
    expect_answer(&o, HK_HS_TWITCH, "text/plain", "caf\xc3\xa9");
}

/* HMAC-SHA256(key, msg) in hex, from the openssl command line. */
static void openssl_hmac(const char *key, const char *msg, char out[65])
{
    char path[] = "/tmp/test_provider_XXXXXX";
    int fd = mkstemp(path);
    cr_assert(fd >= 0);
    cr_assert_eq(write(fd, msg, strlen(msg)), (ssize_t)strlen(msg));
    close(fd);
    char cmd[512];
    snprintf(cmd, sizeof cmd, "openssl dgst -sha256 -hmac '%s' -r '%s'", key, path);
    FILE *f = popen(cmd, "r");
    cr_assert(f, "popen %s", cmd);
    char line[256] = "";
    cr_assert(fgets(line, sizeof line, f), "no output from %s", cmd);
    cr_assert_eq(pclose(f), 0, "%s failed", cmd);
    unlink(path);
    memcpy(out, line, 64);
    out[64] = '\0';
    for (int i = 0; i < 64; i++)
        cr_assert(strchr("0123456789abcdef", out[i]), "unexpected openssl output: %s", line);
}

static void zoom_secret(struct hk_source *s, size_t i, const char *key)
{
    s->secrets[i].key = (uint8_t *)key;
    s->secrets[i].len = strlen(key);
    if (s->nsecrets < i + 1)
        s->nsecrets = i + 1;
}

Test(handshake, zoom, .init = crypto_up)
{
    struct hk_source s = src_of(HK_SCHEME_ZOOM);
    zoom_secret(&s, 0, "old-secret-token");
    zoom_secret(&s, 1, "jSnU4QvfT-q9z0rA7S4xAA");
    struct req r;
    req_init(&r, NULL);
    /* developers.zoom.us/docs/api/webhooks, "Validate your webhook endpoint". */
    const char *body = "{\"payload\":{\"plainToken\":\"qgg8vlvZRS6UYooatFL8Aw\"},\"event_ts\":1654503849680,"
                       "\"event\":\"endpoint.url_validation\"}";
    char want_hex[65], want[256];
    /* Keyed with the secret that verified: here the second one. */
    openssl_hmac("jSnU4QvfT-q9z0rA7S4xAA", "qgg8vlvZRS6UYooatFL8Aw", want_hex);
    snprintf(want, sizeof want, "{\"plainToken\":\"qgg8vlvZRS6UYooatFL8Aw\",\"encryptedToken\":\"%s\"}", want_hex);
    struct hs o = post(&s, &r, body, 1);
    expect_answer(&o, HK_HS_ZOOM, "application/json", want);

    openssl_hmac("old-secret-token", "qgg8vlvZRS6UYooatFL8Aw", want_hex);
    snprintf(want, sizeof want, "{\"plainToken\":\"qgg8vlvZRS6UYooatFL8Aw\",\"encryptedToken\":\"%s\"}", want_hex);
    o = post(&s, &r, body, 0);
    expect_answer(&o, HK_HS_ZOOM, "application/json", want);
    /* The answer never holds the secret. */
    o = post(&s, &r, body, 1);
    cr_assert_eq(o.k, HK_HS_ZOOM);
    cr_expect_null(memmem(o.resp.p, o.resp.len, "jSnU4QvfT", 9));
    hk_buf_free(&o.resp);

    /* A token that needs escaping: escaped in the answer, HMAC'd as sent. */
    o = post(&s, &r, "{\"event\":\"endpoint.url_validation\",\"payload\":{\"plainToken\":\"a\\\"b\\\\c<d>\"}}", 1);
    cr_assert_eq(o.k, HK_HS_ZOOM);
    json_error_t err;
    json_t *j = json_loadb(o.resp.p, o.resp.len, 0, &err);
    cr_assert_not_null(j, "%s", err.text);
    cr_expect_str_eq(json_string_value(json_object_get(j, "plainToken")), "a\"b\\c<d>");
    openssl_hmac("jSnU4QvfT-q9z0rA7S4xAA", "a\"b\\c<d>", want_hex);
    cr_expect_str_eq(json_string_value(json_object_get(j, "encryptedToken")), want_hex);
    json_decref(j);
    hk_buf_free(&o.resp);
}

Test(handshake, zoom_wrong_shapes, .init = crypto_up)
{
    struct hk_source s = src_of(HK_SCHEME_ZOOM);
    zoom_secret(&s, 0, "secret");
    struct req r;
    req_init(&r, NULL);
    const char *body = "{\"payload\":{\"plainToken\":\"tok\"},\"event\":\"endpoint.url_validation\"}";
    /* No secret verified it, or an index out of range. */
    static const int bad_matched[] = {-1, 1, HK_SOURCE_SECRETS_MAX, 1000};
    for (size_t i = 0; i < sizeof bad_matched / sizeof bad_matched[0]; i++) {
        struct hs o = post(&s, &r, body, bad_matched[i]);
        expect_none(&o);
    }
    static const char *const bodies[] = {
        "{\"payload\":{\"plainToken\":\"tok\"},\"event\":\"meeting.started\"}",
        "{\"payload\":{},\"event\":\"endpoint.url_validation\"}",
        "{\"plainToken\":\"tok\",\"event\":\"endpoint.url_validation\"}",
        "{\"payload\":{\"plainToken\":\"\"},\"event\":\"endpoint.url_validation\"}",
        "{\"payload\":{\"plainToken\":123},\"event\":\"endpoint.url_validation\"}",
        "{\"payload\":\"tok\",\"event\":\"endpoint.url_validation\"}",
    };
    for (size_t i = 0; i < sizeof bodies / sizeof bodies[0]; i++) {
        struct hs o = post(&s, &r, bodies[i], 0);
        expect_none(&o);
    }
    /* An ed25519 key cannot key an HMAC. */
    s.secrets[0].ed25519 = true;
    struct hs o = post(&s, &r, body, 0);
    expect_none(&o);
}

Test(handshake, other_schemes_have_none)
{
    static const enum hk_scheme schemes[] = {HK_SCHEME_GITHUB, HK_SCHEME_STRIPE, HK_SCHEME_STANDARD, HK_SCHEME_META,
                                             HK_SCHEME_HMAC, HK_SCHEME_NONE};
    struct req r;
    req_init(&r, "Twitch-Eventsub-Message-Type", "webhook_callback_verification", NULL);
    static const char *const bodies[] = {
        "{\"type\":\"url_verification\",\"challenge\":\"x\"}", "{\"type\":1}", "{\"challenge\":\"x\"}",
        "{\"event\":\"endpoint.url_validation\",\"payload\":{\"plainToken\":\"x\"}}",
    };
    for (size_t i = 0; i < sizeof schemes / sizeof schemes[0]; i++) {
        struct hk_source s = src_of(schemes[i]);
        for (size_t j = 0; j < sizeof bodies / sizeof bodies[0]; j++) {
            struct hs o = post(&s, &r, bodies[j], 0);
            expect_none(&o);
        }
    }
}

/* ---- Query handshakes -------------------------------------------------------- */

struct qr {
    int status;
    struct hk_buf resp;
    const char *ctype;
    enum hk_handshake kind;
};

static struct qr query(const struct hk_source *s, const char *q)
{
    struct qr o = {0, HK_BUF_INIT, NULL, HK_HS__COUNT};
    o.status = hk_handshake_query(s, q, strlen(q), &o.resp, &o.ctype, &o.kind);
    if (o.status != 200) {
        cr_expect_eq(o.resp.len, 0, "status %d, yet an answer: %.*s", o.status, (int)o.resp.len, o.resp.p);
        cr_expect_null(o.ctype);
    }
    return o;
}

static void expect_q(const struct hk_source *s, const char *q, int status, enum hk_handshake kind, const char *body)
{
    struct qr o = query(s, q);
    cr_expect_eq(o.status, status, "%s: status %d, expected %d", q, o.status, status);
    cr_expect_eq(o.kind, kind, "%s: kind %s, expected %s", q, hk_handshake_name(o.kind), hk_handshake_name(kind));
    if (status == 200) {
        cr_expect_str_eq(o.ctype ? o.ctype : "(null)", "text/plain");
        cr_expect(o.resp.len == strlen(body) && memcmp(o.resp.p, body, o.resp.len) == 0,
                  "%s: answer \"%.*s\", expected \"%s\"", q, (int)o.resp.len, o.resp.p, body);
    }
    hk_buf_free(&o.resp);
}

static struct hk_source meta_src(const char *token)
{
    struct hk_source s = src_of(HK_SCHEME_META);
    s.verify_token = (uint8_t *)token;
    s.verify_token_len = token ? strlen(token) : 0;
    return s;
}

Test(query, meta, .init = crypto_up)
{
    struct hk_source s = meta_src("meatyhamhock");
    /* developers.facebook.com/docs/graph-api/webhooks/getting-started, "Verification Requests". */
    expect_q(&s, "hub.mode=subscribe&hub.challenge=1158201444&hub.verify_token=meatyhamhock", 200, HK_HS_META,
             "1158201444");
    expect_q(&s, "?hub.verify_token=meatyhamhock&hub.mode=subscribe&hub.challenge=abc&other=1", 200, HK_HS_META,
             "abc");
    /* Wrong tokens: 403, and nothing echoed. */
    expect_q(&s, "hub.mode=subscribe&hub.challenge=1&hub.verify_token=meatyhamhocK", 403, HK_HS_META, NULL);
    expect_q(&s, "hub.mode=subscribe&hub.challenge=1&hub.verify_token=meatyhamhoc", 403, HK_HS_META, NULL);
    expect_q(&s, "hub.mode=subscribe&hub.challenge=1&hub.verify_token=meatyhamhockx", 403, HK_HS_META, NULL);
    expect_q(&s, "hub.mode=subscribe&hub.challenge=1&hub.verify_token=", 403, HK_HS_META, NULL);
    expect_q(&s, "hub.mode=subscribe&hub.challenge=1&hub.verify_token", 403, HK_HS_META, NULL);
    expect_q(&s, "hub.mode=subscribe&hub.challenge=1", 403, HK_HS_META, NULL);
    /* The token is checked before the challenge is looked at. */
    expect_q(&s, "hub.mode=subscribe&hub.verify_token=nope", 403, HK_HS_META, NULL);
    /* A source without a verify token answers no one. */
    struct hk_source none = meta_src(NULL);
    expect_q(&none, "hub.mode=subscribe&hub.challenge=1&hub.verify_token=", 403, HK_HS_META, NULL);
    expect_q(&none, "hub.mode=subscribe&hub.challenge=1&hub.verify_token=meatyhamhock", 403, HK_HS_META, NULL);
}

Test(query, meta_malformed, .init = crypto_up)
{
    struct hk_source s = meta_src("meatyhamhock");
    static const char *const bad[] = {
        "hub.mode=unsubscribe&hub.challenge=1&hub.verify_token=meatyhamhock",
        "hub.mode=&hub.challenge=1&hub.verify_token=meatyhamhock",
        "hub.mode=SUBSCRIBE&hub.challenge=1&hub.verify_token=meatyhamhock",
        "hub.mode=subscribe&hub.mode=subscribe&hub.challenge=1&hub.verify_token=meatyhamhock",
        "hub.mode=subscribe&hub.challenge=1&hub.verify_token=meatyhamhock&hub.verify_token=meatyhamhock",
        "hub.mode=subscribe&hub.challenge=1&hub.challenge=2&hub.verify_token=meatyhamhock",
        "hub.mode=subscribe&hub.verify_token=meatyhamhock",
        "hub.mode=subscribe&hub.challenge=&hub.verify_token=meatyhamhock",
        "hub.mode=subscribe&hub.challenge=a%0Ab&hub.verify_token=meatyhamhock",
        "hub.mode=subscribe&hub.challenge=a%0D%0ASet-Cookie:x&hub.verify_token=meatyhamhock",
        "hub.mode=subscribe&hub.challenge=a%00b&hub.verify_token=meatyhamhock",
        "hub.mode=subscribe&hub.challenge=a%7Fb&hub.verify_token=meatyhamhock",
        "hub.mode=subscribe&hub.challenge=a%C2%85b&hub.verify_token=meatyhamhock",
        "hub.mode=subscribe&hub.challenge=a%FFb&hub.verify_token=meatyhamhock",
        "hub.mode=subscribe&hub.challenge=a%zzb&hub.verify_token=meatyhamhock",
        "hub.mode=subscribe&hub.challenge=ab%4&hub.verify_token=meatyhamhock",
        "hub.mode=subscribe&hub.challenge=ab%&hub.verify_token=meatyhamhock",
        "hub.mode=subscribe&hub.challenge=1&hub.verify_token=meaty%g0",
        "hub.mode=sub%scribe&hub.challenge=1&hub.verify_token=meatyhamhock",
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
        expect_q(&s, bad[i], 400, HK_HS_META, NULL);
}

Test(query, meta_decoding, .init = crypto_up)
{
    struct hk_source s = meta_src("a b&c=d/é");
    /* The token and the challenge are percent-decoded, '+' is a space. */
    expect_q(&s, "hub.mode=subscribe&hub.verify_token=a+b%26c%3Dd%2F%C3%A9&hub.challenge=x%20y+z%2B", 200,
             HK_HS_META, "x y z+");
    expect_q(&s, "hub.mode=subscribe&hub.verify_token=a%20b%26c%3dd/%c3%a9&hub.challenge=1", 200, HK_HS_META, "1");
    /* The raw (undecoded) token is not the token. */
    expect_q(&s, "hub.mode=subscribe&hub.verify_token=a b&c=d/é&hub.challenge=1", 403, HK_HS_META, NULL);
    /* Names are decoded too. */
    expect_q(&s, "hub%2Emode=subscribe&hub.verify_token=a+b%26c%3Dd%2F%C3%A9&hub%2echallenge=7", 200, HK_HS_META,
             "7");
    /* Empty pairs and stray separators are skipped. */
    expect_q(&s, "&&hub.mode=subscribe&&=x&hub.verify_token=a+b%26c%3Dd%2F%C3%A9&&hub.challenge=q&", 200,
             HK_HS_META, "q");
}

Test(query, meta_challenge_bound, .init = crypto_up)
{
    struct hk_source s = meta_src("t");
    char q[4 * HK_HANDSHAKE_ECHO_MAX], ch[3 * HK_HANDSHAKE_ECHO_MAX + 4];
    memset(ch, 'z', HK_HANDSHAKE_ECHO_MAX);
    ch[HK_HANDSHAKE_ECHO_MAX] = '\0';
    snprintf(q, sizeof q, "hub.mode=subscribe&hub.verify_token=t&hub.challenge=%s", ch);
    expect_q(&s, q, 200, HK_HS_META, ch);
    snprintf(q, sizeof q, "hub.mode=subscribe&hub.verify_token=t&hub.challenge=%sz", ch);
    expect_q(&s, q, 400, HK_HS_META, NULL);
    /* The bound is on decoded bytes: 1024 escapes decode to 1024 bytes. */
    for (int i = 0; i < HK_HANDSHAKE_ECHO_MAX; i++)
        memcpy(ch + 3 * i, "%41", 3);
    ch[3 * HK_HANDSHAKE_ECHO_MAX] = '\0';
    snprintf(q, sizeof q, "hub.mode=subscribe&hub.verify_token=t&hub.challenge=%s", ch);
    struct qr o = query(&s, q);
    cr_expect_eq(o.status, 200);
    cr_expect_eq(o.resp.len, HK_HANDSHAKE_ECHO_MAX);
    cr_expect(o.resp.len > 0 && o.resp.p[0] == 'A' && o.resp.p[o.resp.len - 1] == 'A');
    hk_buf_free(&o.resp);
    /* A huge token is simply not the token. */
    char *big = malloc(20000);
    cr_assert(big);
    strcpy(big, "hub.mode=subscribe&hub.challenge=1&hub.verify_token=");
    size_t l = strlen(big);
    memset(big + l, 't', 19000 - l);
    big[19000] = '\0';
    expect_q(&s, big, 403, HK_HS_META, NULL);
    free(big);
}

Test(query, meta_applies_to)
{
    /* No hub.mode: not a handshake. */
    struct hk_source s = meta_src("tok");
    expect_q(&s, "", 0, HK_HS_NONE, NULL);
    expect_q(&s, "hub.challenge=1&hub.verify_token=tok", 0, HK_HS_NONE, NULL);
    expect_q(&s, "hub.modex=subscribe&hub.challenge=1&hub.verify_token=tok", 0, HK_HS_NONE, NULL);
    /* Another scheme without a verify token does not answer hub.* at all;
     * with one, it does. */
    struct hk_source gh = src_of(HK_SCHEME_GITHUB);
    expect_q(&gh, "hub.mode=subscribe&hub.challenge=1&hub.verify_token=tok", 0, HK_HS_NONE, NULL);
    gh.verify_token = (uint8_t *)"tok";
    gh.verify_token_len = 3;
    char err[256];
    cr_assert_eq(hk_crypto_init(err, sizeof err), 0, "%s", err);
    expect_q(&gh, "hub.mode=subscribe&hub.challenge=1&hub.verify_token=tok", 200, HK_HS_META, "1");
    /* NULL source or query. */
    struct qr o = {0, HK_BUF_INIT, NULL, HK_HS__COUNT};
    cr_expect_eq(hk_handshake_query(NULL, "hub.mode=subscribe", 18, &o.resp, &o.ctype, &o.kind), 0);
    cr_expect_eq(o.kind, HK_HS_NONE);
    cr_expect_eq(hk_handshake_query(&s, NULL, 0, &o.resp, &o.ctype, &o.kind), 0);
}

Test(query, graph)
{
    struct hk_source s = src_of(HK_SCHEME_HMAC);
    s.graph_validation = true;
    /* learn.microsoft.com/graph/change-notifications-delivery-webhooks: the
     * token arrives URL-encoded and goes back decoded, as text/plain. */
    expect_q(&s,
             "validationToken=Validation%3A+Testing+client+application+reachability+for+subscription+Request-Id%3A"
             "+9a8b1c2d-3e4f",
             200, HK_HS_GRAPH,
             "Validation: Testing client application reachability for subscription Request-Id: 9a8b1c2d-3e4f");
    expect_q(&s, "?validationToken=%3Cscript%3Ealert(1)%3C%2Fscript%3E", 200, HK_HS_GRAPH,
             "<script>alert(1)</script>");
    expect_q(&s, "validationToken=", 400, HK_HS_GRAPH, NULL);
    expect_q(&s, "validationToken", 400, HK_HS_GRAPH, NULL);
    expect_q(&s, "validationToken=a%0d%0ab", 400, HK_HS_GRAPH, NULL);
    expect_q(&s, "validationToken=a%2", 400, HK_HS_GRAPH, NULL);
    expect_q(&s, "validationToken=a&validationToken=b", 400, HK_HS_GRAPH, NULL);
    expect_q(&s, "validationtoken=a", 0, HK_HS_NONE, NULL);
    expect_q(&s, "other=1", 0, HK_HS_NONE, NULL);
    expect_q(&s, "", 0, HK_HS_NONE, NULL);
    /* Off unless the source asks for it. */
    s.graph_validation = false;
    expect_q(&s, "validationToken=abc", 0, HK_HS_NONE, NULL);
}

Test(query, graph_bound)
{
    struct hk_source s = src_of(HK_SCHEME_NONE);
    s.graph_validation = true;
    char q[HK_HANDSHAKE_ECHO_MAX + 64], tok[HK_HANDSHAKE_ECHO_MAX + 2];
    memset(tok, 'v', HK_HANDSHAKE_ECHO_MAX);
    tok[HK_HANDSHAKE_ECHO_MAX] = '\0';
    snprintf(q, sizeof q, "validationToken=%s", tok);
    expect_q(&s, q, 200, HK_HS_GRAPH, tok);
    snprintf(q, sizeof q, "validationToken=%sv", tok);
    expect_q(&s, q, 400, HK_HS_GRAPH, NULL);
}
