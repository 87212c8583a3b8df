/* SPDX-License-Identifier: MIT
 * hookd's GraphQL schema as constant tables (schema.h): the types of the
 * issue (#14) with the ingress fields of a webhook, the built-in scalars,
 * directives and introspection types word for word as graphql-js 16.15
 * defines them, in the order graphql-js's buildSchema puts them in its
 * type map (introspection lists `types` in that order); and the SDL
 * printer, which prints what graphql-js's printSchema prints for the same
 * schema (tests/unit/gq_schema.graphql holds the expected text). */
#include "graphql/schema.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The tables are not const: gq_schema_init writes each `tref` once. */

#define NARGS(a) (unsigned)(sizeof(a) / sizeof((a)[0]))

/* ---- hookd's types ----------------------------------------------------- */

static struct gq_input_value_def query_webhook_args[] = {
    {.name = "id", .type = "ID!", .description = "The id the REST API shows."},
};

static struct gq_input_value_def query_webhooks_args[] = {
    {.name = "first", .type = "Int", .default_value = "20",
     .description = "How many webhooks to return, at most 1000."},
    {.name = "after", .type = "String", .description = "The `endCursor` of the previous page; omitted: the newest."},
    {.name = "source", .type = "String", .description = "Only webhooks from this source."},
    {.name = "eventType", .type = "String", .description = "Only webhooks of this event type."},
    {.name = "deliveryId", .type = "String", .description = "Only the delivery with this provider delivery id."},
    {.name = "receivedAfter", .type = "DateTime", .description = "Only webhooks received after this instant."},
    {.name = "receivedBefore", .type = "DateTime", .description = "Only webhooks received before this instant."},
    {.name = "delivery", .type = "DeliveryState", .description = "Only webhooks in this forwarding state."},
};

static struct gq_field_def query_fields[] = {
    {.name = "webhook", .type = "Webhook", .args = query_webhook_args, .nargs = NARGS(query_webhook_args),
     .description = "One webhook by its id; null when there is none."},
    {.name = "webhooks", .type = "WebhookConnection!", .args = query_webhooks_args,
     .nargs = NARGS(query_webhooks_args),
     .description = "Webhooks, newest first, one page at a time. The cursor rides the id, so paging stays flat "
                    "however large the table."},
    {.name = "sources", .type = "[SourceStats!]!",
     .description = "Every source with stored webhooks, with its count and latest arrival."},
    {.name = "system", .type = "SystemInfo!", .description = "The running server."},
};

static struct gq_input_value_def mutation_delete_args[] = {
    {.name = "id", .type = "ID!", .description = "The id the REST API shows."},
};

static struct gq_field_def mutation_fields[] = {
    {.name = "deleteWebhook", .type = "Boolean!", .args = mutation_delete_args, .nargs = NARGS(mutation_delete_args),
     .description = "Deletes one webhook; true when it existed."},
};

static struct gq_field_def webhook_fields[] = {
    [GQ_WEBHOOK_ID] = {.name = "id", .type = "ID!", .description = "The id the REST API shows."},
    [GQ_WEBHOOK_SOURCE] = {.name = "source", .type = "String!", .description = "The source it came from."},
    [GQ_WEBHOOK_EVENT_TYPE] = {.name = "eventType", .type = "String!", .description = "Its event type; empty when a delivery named none."},
    [GQ_WEBHOOK_PAYLOAD] = {.name = "payload", .type = "String",
     .description = "The payload as JSON text; for a delivery, the raw body when it is text (JSON, `text/*`, XML, "
                    "form) in UTF-8, else null."},
    [GQ_WEBHOOK_RECEIVED_AT] = {.name = "receivedAt", .type = "DateTime!", .description = "When hookd stored it."},
    /* The ingress fields (docs/ingress.md), as GET /api/webhooks shows them. */
    [GQ_WEBHOOK_INGRESS] = {.name = "ingress", .type = "Boolean!",
     .description = "True for a delivery to `POST /hooks/{source}`, false for an envelope."},
    [GQ_WEBHOOK_CONTENT_TYPE] = {.name = "contentType", .type = "String",
     .description = "The delivery's Content-Type as sent; null for an envelope or when absent."},
    [GQ_WEBHOOK_DELIVERY_ID] = {.name = "deliveryId", .type = "String",
     .description = "The provider's delivery id, unique per source; null when there is none."},
    [GQ_WEBHOOK_BODY_BYTES] = {.name = "bodyBytes", .type = "Int",
     .description = "The size of the delivery's raw body in bytes; null for an envelope."},
    [GQ_WEBHOOK_BODY_SHA256] = {.name = "bodySha256", .type = "String",
     .description = "The SHA-256 of the delivery's raw body in lower-case hex; null for an envelope."},
    [GQ_WEBHOOK_CLIENT_ADDRESS] = {.name = "clientAddress", .type = "String",
     .description = "The address the delivery came from (X-Forwarded-For only through the source's trusted "
                    "proxies); null for an envelope."},
    [GQ_WEBHOOK_DELIVERY] = {.name = "delivery", .type = "Delivery",
     .description = "Its forwarding to the sink as a CloudEvent; null when it was stored while forwarding was off."},
};

/* Forwarding (docs/forwarding.md), as GET /api/webhooks shows it. */
static struct gq_field_def delivery_fields[] = {
    [GQ_DELIVERY_STATE] = {.name = "state", .type = "DeliveryState!", .description = "Where it stands."},
    [GQ_DELIVERY_ATTEMPTS] = {.name = "attempts", .type = "Int!", .description = "Attempts made so far."},
    [GQ_DELIVERY_LAST_STATUS] = {.name = "lastStatus", .type = "Int",
                                 .description = "The sink's last HTTP status; null when none came."},
    [GQ_DELIVERY_LAST_ERROR] = {.name = "lastError", .type = "String",
                                .description = "Why the last attempt did not deliver."},
    [GQ_DELIVERY_NEXT_ATTEMPT_AT] = {.name = "nextAttemptAt", .type = "DateTime",
                                     .description = "A pending webhook's next attempt, not before this instant."},
    [GQ_DELIVERY_LAST_ATTEMPT_AT] = {.name = "lastAttemptAt", .type = "DateTime",
                                     .description = "When the last attempt ended."},
};

static struct gq_enum_value_def delivery_state_values[] = {
    {"NONE", "Stored while forwarding was off: never sent.", NULL},
    {"PENDING", "Waiting for its next attempt, or in one.", NULL},
    {"DELIVERED", "A sink answered 2xx.", NULL},
    {"FAILED", "Dead-lettered: refused for good, or out of attempts or age.", NULL},
};

static struct gq_field_def connection_fields[] = {
    [GQ_CONNECTION_EDGES] = {.name = "edges", .type = "[WebhookEdge!]!", .description = "The webhooks of this page."},
    [GQ_CONNECTION_PAGE_INFO] = {.name = "pageInfo", .type = "PageInfo!", .description = "Where this page ends and whether more follow."},
};

static struct gq_field_def edge_fields[] = {
    [GQ_EDGE_CURSOR] = {.name = "cursor", .type = "String!", .description = "Pass as `after` to read the webhooks older than this one."},
    [GQ_EDGE_NODE] = {.name = "node", .type = "Webhook!", .description = "The webhook."},
};

static struct gq_field_def page_info_fields[] = {
    [GQ_PAGE_INFO_HAS_NEXT_PAGE] = {.name = "hasNextPage", .type = "Boolean!", .description = "True when older webhooks follow this page."},
    [GQ_PAGE_INFO_END_CURSOR] = {.name = "endCursor", .type = "String",
     .description = "The cursor of the page's last edge; null when the page is empty."},
};

static struct gq_field_def source_stats_fields[] = {
    {.name = "source", .type = "String!", .description = "The source's name."},
    {.name = "count", .type = "Int!", .description = "How many webhooks are stored for it."},
    {.name = "lastReceivedAt", .type = "DateTime", .description = "When the latest of them was received."},
};

static struct gq_field_def system_info_fields[] = {
    {.name = "version", .type = "String!", .description = "hookd's version."},
    {.name = "store", .type = "String!", .description = "The store in use: `sqlite` or `postgresql`."},
    {.name = "uptimeMs", .type = "Float!", .description = "Milliseconds since hookd started."},
    {.name = "eventLoops", .type = "Int!", .description = "How many event loops serve requests."},
};

/* ---- introspection (graphql-js 16.15, type/introspection.js) ----------- */

static struct gq_input_value_def include_deprecated_arg[] = {
    {.name = "includeDeprecated", .type = "Boolean", .default_value = "false"},
};

static struct gq_input_value_def include_deprecated_nn_arg[] = {
    {.name = "includeDeprecated", .type = "Boolean!", .default_value = "false"},
};

static struct gq_field_def schema_fields[] = {
    {.name = "description", .type = "String"},
    {.name = "types", .type = "[__Type!]!", .description = "A list of all types supported by this server."},
    {.name = "queryType", .type = "__Type!", .description = "The type that query operations will be rooted at."},
    {.name = "mutationType", .type = "__Type",
     .description = "If this server supports mutation, the type that mutation operations will be rooted at."},
    {.name = "subscriptionType", .type = "__Type",
     .description = "If this server support subscription, the type that subscription operations will be rooted at."},
    {.name = "directives", .type = "[__Directive!]!", .args = include_deprecated_nn_arg, .nargs = 1,
     .description = "A list of all directives supported by this server."},
};

static struct gq_field_def type_fields[] = {
    {.name = "kind", .type = "__TypeKind!"},
    {.name = "name", .type = "String"},
    {.name = "description", .type = "String"},
    {.name = "specifiedByURL", .type = "String"},
    {.name = "fields", .type = "[__Field!]", .args = include_deprecated_arg, .nargs = 1},
    {.name = "interfaces", .type = "[__Type!]"},
    {.name = "possibleTypes", .type = "[__Type!]"},
    {.name = "enumValues", .type = "[__EnumValue!]", .args = include_deprecated_arg, .nargs = 1},
    {.name = "inputFields", .type = "[__InputValue!]", .args = include_deprecated_arg, .nargs = 1},
    {.name = "ofType", .type = "__Type"},
    {.name = "isOneOf", .type = "Boolean"},
};

static struct gq_enum_value_def type_kind_values[] = {
    {"SCALAR", "Indicates this type is a scalar.", NULL},
    {"OBJECT", "Indicates this type is an object. `fields` and `interfaces` are valid fields.", NULL},
    {"INTERFACE", "Indicates this type is an interface. `fields`, `interfaces`, and `possibleTypes` are valid fields.",
     NULL},
    {"UNION", "Indicates this type is a union. `possibleTypes` is a valid field.", NULL},
    {"ENUM", "Indicates this type is an enum. `enumValues` is a valid field.", NULL},
    {"INPUT_OBJECT", "Indicates this type is an input object. `inputFields` is a valid field.", NULL},
    {"LIST", "Indicates this type is a list. `ofType` is a valid field.", NULL},
    {"NON_NULL", "Indicates this type is a non-null. `ofType` is a valid field.", NULL},
};

static struct gq_field_def field_fields[] = {
    {.name = "name", .type = "String!"},
    {.name = "description", .type = "String"},
    {.name = "args", .type = "[__InputValue!]!", .args = include_deprecated_arg, .nargs = 1},
    {.name = "type", .type = "__Type!"},
    {.name = "isDeprecated", .type = "Boolean!"},
    {.name = "deprecationReason", .type = "String"},
};

static struct gq_field_def input_value_fields[] = {
    {.name = "name", .type = "String!"},
    {.name = "description", .type = "String"},
    {.name = "type", .type = "__Type!"},
    {.name = "defaultValue", .type = "String",
     .description = "A GraphQL-formatted string representing the default value for this input value."},
    {.name = "isDeprecated", .type = "Boolean!"},
    {.name = "deprecationReason", .type = "String"},
};

static struct gq_field_def enum_value_fields[] = {
    {.name = "name", .type = "String!"},
    {.name = "description", .type = "String"},
    {.name = "isDeprecated", .type = "Boolean!"},
    {.name = "deprecationReason", .type = "String"},
};

static struct gq_field_def directive_fields[] = {
    {.name = "name", .type = "String!"},
    {.name = "description", .type = "String"},
    {.name = "isRepeatable", .type = "Boolean!"},
    {.name = "locations", .type = "[__DirectiveLocation!]!"},
    {.name = "args", .type = "[__InputValue!]!", .args = include_deprecated_arg, .nargs = 1},
    {.name = "isDeprecated", .type = "Boolean!"},
    {.name = "deprecationReason", .type = "String"},
};

/* In GQ_DL_* bit order, which is also graphql-js's order of the enum. */
static struct gq_enum_value_def directive_location_values[] = {
    {"QUERY", "Location adjacent to a query operation.", NULL},
    {"MUTATION", "Location adjacent to a mutation operation.", NULL},
    {"SUBSCRIPTION", "Location adjacent to a subscription operation.", NULL},
    {"FIELD", "Location adjacent to a field.", NULL},
    {"FRAGMENT_DEFINITION", "Location adjacent to a fragment definition.", NULL},
    {"FRAGMENT_SPREAD", "Location adjacent to a fragment spread.", NULL},
    {"INLINE_FRAGMENT", "Location adjacent to an inline fragment.", NULL},
    {"VARIABLE_DEFINITION", "Location adjacent to a variable definition.", NULL},
    {"SCHEMA", "Location adjacent to a schema definition.", NULL},
    {"SCALAR", "Location adjacent to a scalar definition.", NULL},
    {"OBJECT", "Location adjacent to an object type definition.", NULL},
    {"FIELD_DEFINITION", "Location adjacent to a field definition.", NULL},
    {"ARGUMENT_DEFINITION", "Location adjacent to an argument definition.", NULL},
    {"INTERFACE", "Location adjacent to an interface definition.", NULL},
    {"UNION", "Location adjacent to a union definition.", NULL},
    {"ENUM", "Location adjacent to an enum definition.", NULL},
    {"ENUM_VALUE", "Location adjacent to an enum value definition.", NULL},
    {"INPUT_OBJECT", "Location adjacent to an input object type definition.", NULL},
    {"INPUT_FIELD_DEFINITION", "Location adjacent to an input object field definition.", NULL},
    {"DIRECTIVE_DEFINITION", "Location adjacent to a directive definition.", NULL},
};

/* ---- the type map ------------------------------------------------------ */

#define FIELDS(a) .fields = (a), .nfields = NARGS(a)

/* The order of graphql-js's getTypeMap() for buildSchema(<hookd's SDL>);
 * a new type or field may move the built-in scalars: the introspection
 * test compares against graphql-js and says so. */
static struct gq_type_def types[] = {
    {.name = "DateTime", .kind = GQ_SCALAR,
     .description = "A date and time in RFC 3339, always in UTC with microseconds (`2026-11-29T19:03:01.123456Z`), "
                    "as `receivedAt` in the REST API.",
     .specified_by = "https://scalars.graphql.org/andimarek/date-time"},
    {.name = "Query", .kind = GQ_OBJECT, .description = "Reads over the stored webhooks.", FIELDS(query_fields)},
    {.name = "ID", .kind = GQ_SCALAR,
     .description = "The `ID` scalar type represents a unique identifier, often used to refetch an object or as key "
                    "for a cache. The ID type appears in a JSON response as a String; however, it is not intended "
                    "to be human-readable. When expected as an input type, any string (such as `\"4\"`) or integer "
                    "(such as `4`) input value will be accepted as an ID."},
    {.name = "Int", .kind = GQ_SCALAR,
     .description = "The `Int` scalar type represents non-fractional signed whole numeric values. Int can represent "
                    "values between -(2^31) and 2^31 - 1."},
    {.name = "String", .kind = GQ_SCALAR,
     .description = "The `String` scalar type represents textual data, represented as UTF-8 character sequences. "
                    "The String type is most often used by GraphQL to represent free-form human-readable text."},
    {.name = "Mutation", .kind = GQ_OBJECT, .description = "Changes to the stored webhooks.",
     FIELDS(mutation_fields)},
    {.name = "Boolean", .kind = GQ_SCALAR, .description = "The `Boolean` scalar type represents `true` or `false`."},
    {.name = "Webhook", .kind = GQ_OBJECT,
     .description = "A stored webhook: an envelope posted to `POST /api/webhooks`, or a provider's delivery to "
                    "`POST /hooks/{source}` (which carries the ingress fields).",
     FIELDS(webhook_fields)},
    {.name = "Delivery", .kind = GQ_OBJECT,
     .description = "A webhook's forwarding to the sink (K_SINK or HOOKD_FORWARD_URL).", FIELDS(delivery_fields)},
    {.name = "DeliveryState", .kind = GQ_ENUM, .description = "A forwarding state.",
     .values = delivery_state_values, .nvalues = NARGS(delivery_state_values)},
    {.name = "WebhookConnection", .kind = GQ_OBJECT, .description = "A page of webhooks, newest first.",
     FIELDS(connection_fields)},
    {.name = "WebhookEdge", .kind = GQ_OBJECT, .description = "A webhook in a page, with its cursor.",
     FIELDS(edge_fields)},
    {.name = "PageInfo", .kind = GQ_OBJECT, .description = "Where a page ends.", FIELDS(page_info_fields)},
    {.name = "SourceStats", .kind = GQ_OBJECT, .description = "What hookd holds for one source.",
     FIELDS(source_stats_fields)},
    {.name = "SystemInfo", .kind = GQ_OBJECT, .description = "The running hookd.", FIELDS(system_info_fields)},
    {.name = "Float", .kind = GQ_SCALAR,
     .description = "The `Float` scalar type represents signed double-precision fractional values as specified by "
                    "[IEEE 754](https://en.wikipedia.org/wiki/IEEE_floating_point)."},
    {.name = "__Schema", .kind = GQ_OBJECT,
     .description = "A GraphQL Schema defines the capabilities of a GraphQL server. It exposes all available types "
                    "and directives on the server, as well as the entry points for query, mutation, and "
                    "subscription operations.",
     FIELDS(schema_fields)},
    {.name = "__Type", .kind = GQ_OBJECT,
     .description = "The fundamental unit of any GraphQL Schema is the type. There are many kinds of types in "
                    "GraphQL as represented by the `__TypeKind` enum.\n\nDepending on the kind of a type, certain "
                    "fields describe information about that type. Scalar types provide no information beyond a "
                    "name, description and optional `specifiedByURL`, while Enum types provide their values. Object "
                    "and Interface types provide the fields they describe. Abstract types, Union and Interface, "
                    "provide the Object types possible at runtime. List and NonNull types compose other types.",
     FIELDS(type_fields)},
    {.name = "__TypeKind", .kind = GQ_ENUM, .description = "An enum describing what kind of type a given `__Type` is.",
     .values = type_kind_values, .nvalues = NARGS(type_kind_values)},
    {.name = "__Field", .kind = GQ_OBJECT,
     .description = "Object and Interface types are described by a list of Fields, each of which has a name, "
                    "potentially a list of arguments, and a return type.",
     FIELDS(field_fields)},
    {.name = "__InputValue", .kind = GQ_OBJECT,
     .description = "Arguments provided to Fields or Directives and the input fields of an InputObject are "
                    "represented as Input Values which describe their type and optionally a default value.",
     FIELDS(input_value_fields)},
    {.name = "__EnumValue", .kind = GQ_OBJECT,
     .description = "One possible value for a given Enum. Enum values are unique values, not a placeholder for a "
                    "string or numeric value. However an Enum value is returned in a JSON response as a string.",
     FIELDS(enum_value_fields)},
    {.name = "__Directive", .kind = GQ_OBJECT,
     .description = "A Directive provides a way to describe alternate runtime execution and type validation "
                    "behavior in a GraphQL document.\n\nIn some cases, you need to provide options to alter "
                    "GraphQL's execution behavior in ways field arguments will not suffice, such as conditionally "
                    "including or skipping a field. Directives provide this by describing additional information "
                    "to the executor.",
     FIELDS(directive_fields)},
    {.name = "__DirectiveLocation", .kind = GQ_ENUM,
     .description = "A Directive can be adjacent to many parts of the GraphQL language, a __DirectiveLocation "
                    "describes one such possible adjacencies.",
     .values = directive_location_values, .nvalues = NARGS(directive_location_values)},
};

/* ---- directives (graphql-js 16.15, type/directives.js) ----------------- */

static struct gq_input_value_def include_args[] = {
    {.name = "if", .type = "Boolean!", .description = "Included when true."},
};
static struct gq_input_value_def skip_args[] = {
    {.name = "if", .type = "Boolean!", .description = "Skipped when true."},
};
static struct gq_input_value_def deprecated_args[] = {
    {.name = "reason", .type = "String", .default_value = "\"No longer supported\"",
     .description = "Explains why this element was deprecated, usually also including a suggestion for how to "
                    "access supported similar data. Formatted using the Markdown syntax, as specified by "
                    "[CommonMark](https://commonmark.org/)."},
};
static struct gq_input_value_def specified_by_args[] = {
    {.name = "url", .type = "String!", .description = "The URL that specifies the behavior of this scalar."},
};

static const struct gq_directive_def directives[] = {
    {.name = "include",
     .description = "Directs the executor to include this field or fragment only when the `if` argument is true.",
     .locations = GQ_DL_FIELD | GQ_DL_FRAGMENT_SPREAD | GQ_DL_INLINE_FRAGMENT, .args = include_args, .nargs = 1,
     .locations_sdl = "FIELD | FRAGMENT_SPREAD | INLINE_FRAGMENT"},
    {.name = "skip",
     .description = "Directs the executor to skip this field or fragment when the `if` argument is true.",
     .locations = GQ_DL_FIELD | GQ_DL_FRAGMENT_SPREAD | GQ_DL_INLINE_FRAGMENT, .args = skip_args, .nargs = 1,
     .locations_sdl = "FIELD | FRAGMENT_SPREAD | INLINE_FRAGMENT"},
    {.name = "deprecated", .description = "Marks an element of a GraphQL schema as no longer supported.",
     .locations = GQ_DL_FIELD_DEFINITION | GQ_DL_ARGUMENT_DEFINITION | GQ_DL_INPUT_FIELD_DEFINITION |
                  GQ_DL_ENUM_VALUE | GQ_DL_DIRECTIVE_DEFINITION,
     .args = deprecated_args, .nargs = 1,
     .locations_sdl = "FIELD_DEFINITION | ARGUMENT_DEFINITION | INPUT_FIELD_DEFINITION | ENUM_VALUE | "
                      "DIRECTIVE_DEFINITION"},
    {.name = "specifiedBy", .description = "Exposes a URL that specifies the behavior of this scalar.",
     .locations = GQ_DL_SCALAR, .args = specified_by_args, .nargs = 1, .locations_sdl = "SCALAR"},
    /* graphql-js 16.9 and later list @oneOf among the specified directives,
     * so introspection of the same SDL shows it. */
    {.name = "oneOf", .description = "Indicates exactly one field must be supplied and this field must not be `null`.",
     .locations = GQ_DL_INPUT_OBJECT, .locations_sdl = "INPUT_OBJECT"},
};

static const struct gq_schema hookd_schema = {
    .types = types,
    .ntypes = NARGS(types),
    .directives = directives,
    .ndirectives = NARGS(directives),
    .query_type = "Query",
    .mutation_type = "Mutation",
};

/* ---- initialization ---------------------------------------------------- */

__attribute__((noreturn)) static void die(const char *what, const char *name)
{
    fprintf(stderr, "graphql schema: %s: %s\n", what, name);
    abort();
}

/* Parse an SDL type reference; the wrappers are allocated once for the
 * life of the process and reachable from the tables. */
static const struct gq_tref *parse_tref(const struct gq_schema *s, const char **pp, const char *whole)
{
    const char *p = *pp;
    struct gq_tref *t = calloc(1, sizeof *t);
    if (!t)
        abort();
    if (*p == '[') {
        p++;
        t->kind = GQ_REF_LIST;
        t->of = parse_tref(s, &p, whole);
        if (*p != ']')
            die("bad type reference", whole);
        p++;
    } else {
        const char *start = p;
        while ((*p >= 'A' && *p <= 'Z') || (*p >= 'a' && *p <= 'z') || (*p >= '0' && *p <= '9') || *p == '_')
            p++;
        if (p == start)
            die("bad type reference", whole);
        t->kind = GQ_REF_NAMED;
        t->named = gq_schema_type(s, start, (unsigned)(p - start));
        if (!t->named)
            die("unknown type", whole);
    }
    if (*p == '!') {
        p++;
        struct gq_tref *nn = calloc(1, sizeof *nn);
        if (!nn)
            abort();
        nn->kind = GQ_REF_NON_NULL;
        nn->of = t;
        t = nn;
    }
    *pp = p;
    return t;
}

static const struct gq_tref *resolve(const struct gq_schema *s, const char *text)
{
    const char *p = text;
    const struct gq_tref *t = parse_tref(s, &p, text);
    if (*p)
        die("bad type reference", text);
    return t;
}

static void init_inputs(const struct gq_schema *s, const struct gq_input_value_def *v, unsigned n)
{
    /* An argument list may be shared (includeDeprecated): resolved once. */
    for (unsigned i = 0; i < n; i++)
        if (!v[i].tref)
            ((struct gq_input_value_def *)&v[i])->tref = resolve(s, v[i].type);
}

static unsigned location_bit(const char *p, size_t n)
{
    for (unsigned i = 0; i < NARGS(directive_location_values); i++)
        if (strlen(directive_location_values[i].name) == n && memcmp(directive_location_values[i].name, p, n) == 0)
            return 1u << i;
    return 0;
}

static void check_locations(const struct gq_directive_def *d)
{
    unsigned seen = 0;
    const char *p = d->locations_sdl;
    if (!p)
        die("directive without locations_sdl", d->name);
    while (*p) {
        size_t n = strcspn(p, " |");
        unsigned bit = location_bit(p, n);
        if (!bit || (seen & bit))
            die("bad directive location", d->name);
        seen |= bit;
        p += n;
        while (*p == ' ' || *p == '|')
            p++;
    }
    if (seen != d->locations)
        die("locations_sdl disagrees with locations", d->name);
}

/* The schemas already initialized: few (hookd's, and tests' own). */
#define INITED_MAX 16
static const struct gq_schema *inited[INITED_MAX];
static unsigned ninited;
static pthread_mutex_t init_mu = PTHREAD_MUTEX_INITIALIZER;
/* The last schema initialized: every request passes hookd's, which then
 * costs one load instead of the mutex. */
static _Atomic(const struct gq_schema *) last_inited;

void gq_schema_init(const struct gq_schema *s)
{
    if (atomic_load_explicit(&last_inited, memory_order_acquire) == s)
        return;
    pthread_mutex_lock(&init_mu);
    for (unsigned i = 0; i < ninited; i++)
        if (inited[i] == s) {
            atomic_store_explicit(&last_inited, s, memory_order_release);
            pthread_mutex_unlock(&init_mu);
            return;
        }
    if (ninited == INITED_MAX)
        die("too many schemas", "");
    for (unsigned i = 0; i < s->ntypes; i++) {
        const struct gq_type_def *t = &s->types[i];
        for (unsigned j = 0; j < i; j++)
            if (strcmp(s->types[j].name, t->name) == 0)
                die("duplicate type", t->name);
        for (unsigned j = 0; j < t->nfields; j++) {
            struct gq_field_def *f = (struct gq_field_def *)&t->fields[j];
            if (!f->name)   /* a hole in a table indexed by GQ_WEBHOOK_* and kin */
                die("unnamed field in", t->name);
            if (!f->tref)
                f->tref = resolve(s, f->type);
            init_inputs(s, f->args, f->nargs);
        }
        init_inputs(s, t->inputs, t->ninputs);
        for (unsigned j = 0; j < t->ninterfaces; j++)
            if (!gq_schema_type(s, t->interfaces[j], (unsigned)strlen(t->interfaces[j])))
                die("unknown interface", t->interfaces[j]);
        for (unsigned j = 0; j < t->nmembers; j++)
            if (!gq_schema_type(s, t->members[j], (unsigned)strlen(t->members[j])))
                die("unknown union member", t->members[j]);
    }
    for (unsigned i = 0; i < s->ndirectives; i++) {
        init_inputs(s, s->directives[i].args, s->directives[i].nargs);
        check_locations(&s->directives[i]);
    }
    if (!s->query_type || !gq_schema_type(s, s->query_type, (unsigned)strlen(s->query_type)))
        die("no query type", s->query_type ? s->query_type : "");
    if (s->mutation_type && !gq_schema_type(s, s->mutation_type, (unsigned)strlen(s->mutation_type)))
        die("unknown mutation type", s->mutation_type);
    inited[ninited++] = s;
    atomic_store_explicit(&last_inited, s, memory_order_release);
    pthread_mutex_unlock(&init_mu);
}

static pthread_once_t hookd_once = PTHREAD_ONCE_INIT;

static void init_hookd(void)
{
    gq_schema_init(&hookd_schema);
}

const struct gq_schema *hk_gq_schema(void)
{
    pthread_once(&hookd_once, init_hookd);
    return &hookd_schema;
}

/* ---- lookups ------------------------------------------------------------ */

static bool name_eq(const char *z, const char *p, unsigned n)
{
    return n && z[0] == p[0] && strncmp(z, p, n) == 0 && z[n] == '\0';
}

const struct gq_type_def *gq_schema_type(const struct gq_schema *s, const char *name, unsigned len)
{
    for (unsigned i = 0; i < s->ntypes; i++)
        if (name_eq(s->types[i].name, name, len))
            return &s->types[i];
    return NULL;
}

const struct gq_field_def *gq_type_field(const struct gq_type_def *t, const char *name, unsigned len)
{
    for (unsigned i = 0; i < t->nfields; i++)
        if (name_eq(t->fields[i].name, name, len))
            return &t->fields[i];
    return NULL;
}

const struct gq_directive_def *gq_schema_directive(const struct gq_schema *s, const char *name, unsigned len)
{
    for (unsigned i = 0; i < s->ndirectives; i++)
        if (name_eq(s->directives[i].name, name, len))
            return &s->directives[i];
    return NULL;
}

void gq_tref_print(const struct gq_tref *t, struct hk_buf *out)
{
    switch (t->kind) {
    case GQ_REF_NAMED:
        hk_buf_puts(out, t->named->name);
        break;
    case GQ_REF_LIST:
        hk_buf_putc(out, '[');
        gq_tref_print(t->of, out);
        hk_buf_putc(out, ']');
        break;
    case GQ_REF_NON_NULL:
        gq_tref_print(t->of, out);
        hk_buf_putc(out, '!');
        break;
    }
}

/* ---- the SDL printer (graphql-js's utilities/printSchema.js) ------------ */

static bool is_ws(char c)
{
    return c == ' ' || c == '\t';
}

/* blockString.js isPrintableAsBlockString. */
static bool printable_as_block(const char *s)
{
    if (!*s)
        return true;
    bool empty_line = true, has_indent = false, common_indent = true, seen_non_empty = false;
    for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
        unsigned c = *p;
        if ((c < 0x20 && c != '\t' && c != '\n') || c == 0x0d)
            return false;
        if (c == '\n') {
            if (empty_line && !seen_non_empty)
                return false;
            seen_non_empty = true;
            empty_line = true;
            has_indent = false;
        } else if (c == '\t' || c == ' ') {
            has_indent = has_indent || empty_line;
        } else {
            common_indent = common_indent && has_indent;
            empty_line = false;
        }
    }
    if (empty_line)
        return false;
    if (common_indent && seen_non_empty)
        return false;
    return true;
}

/* printString.js: a quoted string with graphql-js's escapes. */
void gq_print_string(struct hk_buf *b, const char *str, size_t n)
{
    static const char hex[] = "0123456789ABCDEF";
    const unsigned char *p = (const unsigned char *)str, *end = p + n;
    hk_buf_putc(b, '"');
    for (; p < end; p++) {
        unsigned c = *p;
        if (c == '"' || c == '\\') {
            hk_buf_putc(b, '\\');
            hk_buf_putc(b, (char)c);
        } else if (c == '\b') {
            hk_buf_puts(b, "\\b");
        } else if (c == '\t') {
            hk_buf_puts(b, "\\t");
        } else if (c == '\n') {
            hk_buf_puts(b, "\\n");
        } else if (c == '\f') {
            hk_buf_puts(b, "\\f");
        } else if (c == '\r') {
            hk_buf_puts(b, "\\r");
        } else if (c < 0x20 || c == 0x7f) {
            char e[6] = {'\\', 'u', '0', '0', hex[c >> 4], hex[c & 15]};
            hk_buf_put(b, e, 6);
        } else if (c == 0xc2 && end - p > 1 && p[1] >= 0x80 && p[1] <= 0x9f) {
            /* U+0080..U+009F, escaped like the C0 controls. */
            char e[6] = {'\\', 'u', '0', '0', hex[p[1] >> 4], hex[p[1] & 15]};
            hk_buf_put(b, e, 6);
            p++;
        } else {
            hk_buf_putc(b, (char)c);
        }
    }
    hk_buf_putc(b, '"');
}

/* blockString.js printBlockString, with printDescription's indentation
 * of every line after the first. */
void gq_print_block_string(struct hk_buf *b, const char *s, size_t len, const char *indent)
{
    const char *end = s + len;
    bool single_line = len == 0 || memchr(s, '\n', len) == NULL;
    bool force_leading = false;
    if (!single_line) {
        force_leading = true;
        for (const char *l = memchr(s, '\n', len); l; l = memchr(l + 1, '\n', (size_t)(end - l - 1)))
            if (l + 1 < end && l[1] != '\n' && !is_ws(l[1]))
                force_leading = false;
    }
    bool trailing_triple = len >= 3 && memcmp(end - 3, "\"\"\"", 3) == 0;
    bool trailing_quote = len > 0 && end[-1] == '"' && !trailing_triple;
    bool trailing_slash = len > 0 && end[-1] == '\\';
    bool force_trailing = trailing_quote || trailing_slash;
    bool multiple = !single_line || len > 70 || force_trailing || force_leading || trailing_triple;
    bool skip_leading = single_line && len > 0 && is_ws(s[0]);

    hk_buf_puts(b, "\"\"\"");
    if ((multiple && !skip_leading) || force_leading) {
        hk_buf_putc(b, '\n');
        hk_buf_puts(b, indent);
    }
    for (const char *p = s; p < end; p++) {
        if (end - p >= 3 && p[0] == '"' && p[1] == '"' && p[2] == '"') {
            hk_buf_puts(b, "\\\"\"\"");
            p += 2;
        } else if (*p == '\n') {
            hk_buf_putc(b, '\n');
            hk_buf_puts(b, indent);
        } else {
            hk_buf_putc(b, *p);
        }
    }
    if (multiple || force_trailing) {
        hk_buf_putc(b, '\n');
        hk_buf_puts(b, indent);
    }
    hk_buf_puts(b, "\"\"\"");
}

static void print_description(struct hk_buf *b, const char *desc, const char *indent, bool first_in_block)
{
    if (!desc)
        return;
    if (*indent && !first_in_block) {
        hk_buf_putc(b, '\n');
        hk_buf_puts(b, indent);
    } else {
        hk_buf_puts(b, indent);
    }
    if (printable_as_block(desc))
        gq_print_block_string(b, desc, strlen(desc), indent);
    else
        gq_print_string(b, desc, strlen(desc));
    hk_buf_putc(b, '\n');
}

static void print_deprecated(struct hk_buf *b, const char *reason)
{
    if (!reason)
        return;
    if (strcmp(reason, "No longer supported") == 0) {
        hk_buf_puts(b, " @deprecated");
        return;
    }
    hk_buf_puts(b, " @deprecated(reason: ");
    gq_print_string(b, reason, strlen(reason));
    hk_buf_putc(b, ')');
}

static void print_input_value(struct hk_buf *b, const struct gq_input_value_def *a)
{
    hk_buf_puts(b, a->name);
    hk_buf_puts(b, ": ");
    gq_tref_print(a->tref, b);
    if (a->default_value) {
        hk_buf_puts(b, " = ");
        hk_buf_puts(b, a->default_value);
    }
}

static void print_args(struct hk_buf *b, const struct gq_input_value_def *args, unsigned n, const char *indent)
{
    if (n == 0)
        return;
    bool described = false;
    for (unsigned i = 0; i < n; i++)
        described = described || (args[i].description && *args[i].description);
    if (!described) {
        hk_buf_putc(b, '(');
        for (unsigned i = 0; i < n; i++) {
            if (i)
                hk_buf_puts(b, ", ");
            print_input_value(b, &args[i]);
        }
        hk_buf_putc(b, ')');
        return;
    }
    const char *inner = *indent ? "    " : "  ";   /* indent is "" (directives) or "  " (fields) */
    hk_buf_puts(b, "(\n");
    for (unsigned i = 0; i < n; i++) {
        if (i)
            hk_buf_putc(b, '\n');
        print_description(b, args[i].description, inner, i == 0);
        hk_buf_puts(b, inner);
        print_input_value(b, &args[i]);
    }
    hk_buf_putc(b, '\n');
    hk_buf_puts(b, indent);
    hk_buf_putc(b, ')');
}

static bool specified_scalar(const char *name)
{
    static const char *const names[] = {"String", "Int", "Float", "Boolean", "ID"};
    for (unsigned i = 0; i < NARGS(names); i++)
        if (strcmp(names[i], name) == 0)
            return true;
    return false;
}

static bool specified_directive(const char *name)
{
    static const char *const names[] = {"include", "skip", "deprecated", "specifiedBy", "oneOf"};
    for (unsigned i = 0; i < NARGS(names); i++)
        if (strcmp(names[i], name) == 0)
            return true;
    return false;
}

static void print_type(struct hk_buf *b, const struct gq_type_def *t)
{
    print_description(b, t->description, "", true);
    switch (t->kind) {
    case GQ_SCALAR:
        hk_buf_printf(b, "scalar %s", t->name);
        if (t->specified_by) {
            hk_buf_puts(b, " @specifiedBy(url: ");
            gq_print_string(b, t->specified_by, strlen(t->specified_by));
            hk_buf_putc(b, ')');
        }
        return;
    case GQ_UNION:
        hk_buf_printf(b, "union %s", t->name);
        for (unsigned i = 0; i < t->nmembers; i++) {
            hk_buf_puts(b, i ? " | " : " = ");
            hk_buf_puts(b, t->members[i]);
        }
        return;
    case GQ_OBJECT:
    case GQ_INTERFACE:
        hk_buf_printf(b, "%s %s", t->kind == GQ_OBJECT ? "type" : "interface", t->name);
        for (unsigned i = 0; i < t->ninterfaces; i++) {
            hk_buf_puts(b, i ? " & " : " implements ");
            hk_buf_puts(b, t->interfaces[i]);
        }
        if (t->nfields == 0)
            return;
        hk_buf_puts(b, " {\n");
        for (unsigned i = 0; i < t->nfields; i++) {
            const struct gq_field_def *f = &t->fields[i];
            if (i)
                hk_buf_putc(b, '\n');
            print_description(b, f->description, "  ", i == 0);
            hk_buf_puts(b, "  ");
            hk_buf_puts(b, f->name);
            print_args(b, f->args, f->nargs, "  ");
            hk_buf_puts(b, ": ");
            gq_tref_print(f->tref, b);
            print_deprecated(b, f->deprecation);
        }
        hk_buf_puts(b, "\n}");
        return;
    case GQ_ENUM:
        hk_buf_printf(b, "enum %s", t->name);
        if (t->nvalues == 0)
            return;
        hk_buf_puts(b, " {\n");
        for (unsigned i = 0; i < t->nvalues; i++) {
            if (i)
                hk_buf_putc(b, '\n');
            print_description(b, t->values[i].description, "  ", i == 0);
            hk_buf_puts(b, "  ");
            hk_buf_puts(b, t->values[i].name);
            print_deprecated(b, t->values[i].deprecation);
        }
        hk_buf_puts(b, "\n}");
        return;
    case GQ_INPUT_OBJECT:
        hk_buf_printf(b, "input %s", t->name);
        if (t->ninputs == 0)
            return;
        hk_buf_puts(b, " {\n");
        for (unsigned i = 0; i < t->ninputs; i++) {
            if (i)
                hk_buf_putc(b, '\n');
            print_description(b, t->inputs[i].description, "  ", i == 0);
            hk_buf_puts(b, "  ");
            print_input_value(b, &t->inputs[i]);
        }
        hk_buf_puts(b, "\n}");
        return;
    }
}

void gq_schema_print(const struct gq_schema *s, struct hk_buf *out)
{
    gq_schema_init(s);
    bool any = false;
    bool common = strcmp(s->query_type, "Query") == 0 &&
                  (!s->mutation_type || strcmp(s->mutation_type, "Mutation") == 0);
    if (s->description || !common) {
        print_description(out, s->description, "", true);
        hk_buf_printf(out, "schema {\n  query: %s\n", s->query_type);
        if (s->mutation_type)
            hk_buf_printf(out, "  mutation: %s\n", s->mutation_type);
        hk_buf_putc(out, '}');
        any = true;
    }
    for (unsigned i = 0; i < s->ndirectives; i++) {
        const struct gq_directive_def *d = &s->directives[i];
        if (specified_directive(d->name))
            continue;
        if (any)
            hk_buf_puts(out, "\n\n");
        any = true;
        print_description(out, d->description, "", true);
        hk_buf_printf(out, "directive @%s", d->name);
        print_args(out, d->args, d->nargs, "");
        hk_buf_printf(out, "%s on %s", d->repeatable ? " repeatable" : "", d->locations_sdl);
    }
    for (unsigned i = 0; i < s->ntypes; i++) {
        const struct gq_type_def *t = &s->types[i];
        if (specified_scalar(t->name) || strncmp(t->name, "__", 2) == 0)
            continue;
        if (any)
            hk_buf_puts(out, "\n\n");
        any = true;
        print_type(out, t);
    }
    /* printSchema's text has no final newline; a file does. */
    hk_buf_putc(out, '\n');
}

static bool digits(const char *s, size_t n, int *out)
{
    int v = 0;
    for (size_t i = 0; i < n; i++) {
        if (s[i] < '0' || s[i] > '9')
            return false;
        v = v * 10 + (s[i] - '0');
    }
    *out = v;
    return true;
}

bool gq_datetime_valid(const char *s, size_t n)
{
    int y, mo, d, h, mi, se;
    if (n < 20 || s[n - 1] != 'Z' || s[4] != '-' || s[7] != '-' || s[10] != 'T' || s[13] != ':' || s[16] != ':' ||
        !digits(s, 4, &y) || !digits(s + 5, 2, &mo) || !digits(s + 8, 2, &d) || !digits(s + 11, 2, &h) ||
        !digits(s + 14, 2, &mi) || !digits(s + 17, 2, &se))
        return false;
    size_t rest = n - 20;   /* between the seconds and the Z */
    if (rest) {
        int frac;
        if (s[19] != '.' || rest < 2 || rest > 7 || !digits(s + 20, rest - 1, &frac))
            return false;
    }
    static const int mdays[12] = {31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
    if (mo < 1 || mo > 12 || d < 1 || h > 23 || mi > 59 || se > 59)
        return false;
    bool leap = (y % 4 == 0 && y % 100 != 0) || y % 400 == 0;
    return d <= mdays[mo - 1] + (mo == 2 && leap);
}
