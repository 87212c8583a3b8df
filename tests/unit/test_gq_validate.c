/* SPDX-License-Identifier: MIT
 * graphql/validate.c against graphql-js 16.15: every rule of specifiedRules
 * that applies to an executable document, on hookd's schema and on a cut-down
 * copy of graphql-js's test schema (interfaces, unions, enums, an input
 * object), with the errors graphql-js gives for the same documents (messages,
 * locations, order; generated with buildSchema + validate and checked in);
 * then hookd's own checks (introspection off, depth, cost) and hostile
 * documents that must end fast with a bounded answer. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "core/buf.h"
#include "graphql/graphql.h"

#define N(a) (unsigned)(sizeof(a) / sizeof((a)[0]))

/* ---- the test schema ------------------------------------------------------ */

/* As graphql-js builds it from this SDL (the types in its type map's order;
 * Float is absent because nothing uses it):
 *
 * enum DogCommand { SIT HEEL DOWN }
 * enum FurColor { BROWN BLACK TAN SPOTTED NO_FUR UNKNOWN }
 * interface Being { name: String }
 * interface Pet implements Being { name: String }
 * type Dog implements Pet & Being {
 *   name: String nickname: String barks: Boolean
 *   isHouseTrained(atOtherHomes: Boolean = true): Boolean doesKnowCommand(dogCommand: DogCommand): Boolean
 * }
 * type Cat implements Pet & Being { name: String nickname: String meows: Boolean furColor: FurColor }
 * union CatOrDog = Cat | Dog
 * type Human implements Being { name(surname: Boolean): String pets: [Pet] relatives: [Human]! iq: Int }
 * type Alien implements Being { name: String iq: Int numEyes: Int }
 * union DogOrHuman = Dog | Human
 * union HumanOrAlien = Human | Alien
 * input ComplexInput {
 *   requiredField: Boolean! nonNullField: Boolean! = false intField: Int stringField: String
 *   booleanField: Boolean stringListField: [String]
 * }
 * type ComplicatedArgs {
 *   intArgField(intArg: Int): String
 *   nonNullIntArgField(nonNullIntArg: Int!): String
 *   stringListArgField(stringListArg: [String]): String
 *   stringListNonNullArgField(stringListNonNullArg: [String!]): String
 *   complexArgField(complexArg: ComplexInput): String
 *   enumArgField(enumArg: FurColor): String
 *   multipleReqs(req1: Int!, req2: Int!): String
 *   multipleOpts(opt1: Int = 0, opt2: Int = 0): String
 *   booleanArgField(booleanArg: Boolean): String
 *   idArgField(idArg: ID): String
 * }
 * type Query {
 *   human(id: ID): Human alien: Alien pet: Pet being: Being dog: Dog cat: Cat catOrDog: CatOrDog
 *   dogOrHuman: DogOrHuman humanOrAlien: HumanOrAlien complicatedArgs: ComplicatedArgs
 * }
 */

static struct gq_enum_value_def dog_command_values[] = {{.name = "SIT"}, {.name = "HEEL"}, {.name = "DOWN"}};
static struct gq_enum_value_def fur_color_values[] = {{.name = "BROWN"}, {.name = "BLACK"}, {.name = "TAN"},
                                                      {.name = "SPOTTED"}, {.name = "NO_FUR"}, {.name = "UNKNOWN"}};
static struct gq_field_def name_fields[] = {{.name = "name", .type = "String"}};
static struct gq_input_value_def at_other_homes[] = {
    {.name = "atOtherHomes", .type = "Boolean", .default_value = "true"},
};
static struct gq_input_value_def dog_command[] = {{.name = "dogCommand", .type = "DogCommand"}};
static struct gq_field_def dog_fields[] = {
    {.name = "name", .type = "String"},
    {.name = "nickname", .type = "String"},
    {.name = "barks", .type = "Boolean"},
    {.name = "isHouseTrained", .type = "Boolean", .args = at_other_homes, .nargs = 1},
    {.name = "doesKnowCommand", .type = "Boolean", .args = dog_command, .nargs = 1},
};
static struct gq_field_def cat_fields[] = {
    {.name = "name", .type = "String"},
    {.name = "nickname", .type = "String"},
    {.name = "meows", .type = "Boolean"},
    {.name = "furColor", .type = "FurColor"},
};
static struct gq_input_value_def surname[] = {{.name = "surname", .type = "Boolean"}};
static struct gq_field_def human_fields[] = {
    {.name = "name", .type = "String", .args = surname, .nargs = 1},
    {.name = "pets", .type = "[Pet]"},
    {.name = "relatives", .type = "[Human]!"},
    {.name = "iq", .type = "Int"},
};
static struct gq_field_def alien_fields[] = {
    {.name = "name", .type = "String"},
    {.name = "iq", .type = "Int"},
    {.name = "numEyes", .type = "Int"},
};
static struct gq_input_value_def complex_inputs[] = {
    {.name = "requiredField", .type = "Boolean!"},
    {.name = "nonNullField", .type = "Boolean!", .default_value = "false"},
    {.name = "intField", .type = "Int"},
    {.name = "stringField", .type = "String"},
    {.name = "booleanField", .type = "Boolean"},
    {.name = "stringListField", .type = "[String]"},
};
static struct gq_input_value_def int_arg[] = {{.name = "intArg", .type = "Int"}};
static struct gq_input_value_def non_null_int_arg[] = {{.name = "nonNullIntArg", .type = "Int!"}};
static struct gq_input_value_def string_list_arg[] = {{.name = "stringListArg", .type = "[String]"}};
static struct gq_input_value_def string_list_nn_arg[] = {{.name = "stringListNonNullArg", .type = "[String!]"}};
static struct gq_input_value_def complex_arg[] = {{.name = "complexArg", .type = "ComplexInput"}};
static struct gq_input_value_def enum_arg[] = {{.name = "enumArg", .type = "FurColor"}};
static struct gq_input_value_def multiple_reqs[] = {{.name = "req1", .type = "Int!"}, {.name = "req2", .type = "Int!"}};
static struct gq_input_value_def multiple_opts[] = {{.name = "opt1", .type = "Int", .default_value = "0"},
                                                    {.name = "opt2", .type = "Int", .default_value = "0"}};
static struct gq_input_value_def boolean_arg[] = {{.name = "booleanArg", .type = "Boolean"}};
static struct gq_input_value_def id_arg[] = {{.name = "idArg", .type = "ID"}};
static struct gq_field_def complicated_fields[] = {
    {.name = "intArgField", .type = "String", .args = int_arg, .nargs = 1},
    {.name = "nonNullIntArgField", .type = "String", .args = non_null_int_arg, .nargs = 1},
    {.name = "stringListArgField", .type = "String", .args = string_list_arg, .nargs = 1},
    {.name = "stringListNonNullArgField", .type = "String", .args = string_list_nn_arg, .nargs = 1},
    {.name = "complexArgField", .type = "String", .args = complex_arg, .nargs = 1},
    {.name = "enumArgField", .type = "String", .args = enum_arg, .nargs = 1},
    {.name = "multipleReqs", .type = "String", .args = multiple_reqs, .nargs = 2},
    {.name = "multipleOpts", .type = "String", .args = multiple_opts, .nargs = 2},
    {.name = "booleanArgField", .type = "String", .args = boolean_arg, .nargs = 1},
    {.name = "idArgField", .type = "String", .args = id_arg, .nargs = 1},
};
static struct gq_input_value_def human_id[] = {{.name = "id", .type = "ID"}};
static struct gq_field_def query_fields[] = {
    {.name = "human", .type = "Human", .args = human_id, .nargs = 1},
    {.name = "alien", .type = "Alien"},
    {.name = "pet", .type = "Pet"},
    {.name = "being", .type = "Being"},
    {.name = "dog", .type = "Dog"},
    {.name = "cat", .type = "Cat"},
    {.name = "catOrDog", .type = "CatOrDog"},
    {.name = "dogOrHuman", .type = "DogOrHuman"},
    {.name = "humanOrAlien", .type = "HumanOrAlien"},
    {.name = "complicatedArgs", .type = "ComplicatedArgs"},
};
static const char *const being[] = {"Being"};
static const char *const pet_being[] = {"Pet", "Being"};
static const char *const cat_or_dog[] = {"Cat", "Dog"};
static const char *const dog_or_human[] = {"Dog", "Human"};
static const char *const human_or_alien[] = {"Human", "Alien"};
/* In the order of graphql-js's type map for the SDL. */
static struct gq_type_def pets_types[] = {
    {.name = "DogCommand", .kind = GQ_ENUM, .values = dog_command_values, .nvalues = N(dog_command_values)},
    {.name = "FurColor", .kind = GQ_ENUM, .values = fur_color_values, .nvalues = N(fur_color_values)},
    {.name = "Being", .kind = GQ_INTERFACE, .fields = name_fields, .nfields = 1},
    {.name = "String", .kind = GQ_SCALAR},
    {.name = "Pet", .kind = GQ_INTERFACE, .fields = name_fields, .nfields = 1, .interfaces = being, .ninterfaces = 1},
    {.name = "Dog", .kind = GQ_OBJECT, .fields = dog_fields, .nfields = N(dog_fields), .interfaces = pet_being,
     .ninterfaces = 2},
    {.name = "Boolean", .kind = GQ_SCALAR},
    {.name = "Cat", .kind = GQ_OBJECT, .fields = cat_fields, .nfields = N(cat_fields), .interfaces = pet_being,
     .ninterfaces = 2},
    {.name = "CatOrDog", .kind = GQ_UNION, .members = cat_or_dog, .nmembers = 2},
    {.name = "Human", .kind = GQ_OBJECT, .fields = human_fields, .nfields = N(human_fields), .interfaces = being,
     .ninterfaces = 1},
    {.name = "Int", .kind = GQ_SCALAR},
    {.name = "Alien", .kind = GQ_OBJECT, .fields = alien_fields, .nfields = N(alien_fields), .interfaces = being,
     .ninterfaces = 1},
    {.name = "DogOrHuman", .kind = GQ_UNION, .members = dog_or_human, .nmembers = 2},
    {.name = "HumanOrAlien", .kind = GQ_UNION, .members = human_or_alien, .nmembers = 2},
    {.name = "ComplexInput", .kind = GQ_INPUT_OBJECT, .inputs = complex_inputs, .ninputs = N(complex_inputs)},
    {.name = "ComplicatedArgs", .kind = GQ_OBJECT, .fields = complicated_fields, .nfields = N(complicated_fields)},
    {.name = "ID", .kind = GQ_SCALAR},
    {.name = "Query", .kind = GQ_OBJECT, .fields = query_fields, .nfields = N(query_fields)},
};
static struct gq_input_value_def if_arg[] = {{.name = "if", .type = "Boolean!"}};
static struct gq_input_value_def reason_arg[] = {
    {.name = "reason", .type = "String", .default_value = "\"No longer supported\""},
};
static struct gq_input_value_def url_arg[] = {{.name = "url", .type = "String!"}};
static const struct gq_directive_def pets_directives[] = {
    {.name = "include", .locations = GQ_DL_FIELD | GQ_DL_FRAGMENT_SPREAD | GQ_DL_INLINE_FRAGMENT,
     .locations_sdl = "FIELD | FRAGMENT_SPREAD | INLINE_FRAGMENT", .args = if_arg, .nargs = 1},
    {.name = "skip", .locations = GQ_DL_FIELD | GQ_DL_FRAGMENT_SPREAD | GQ_DL_INLINE_FRAGMENT,
     .locations_sdl = "FIELD | FRAGMENT_SPREAD | INLINE_FRAGMENT", .args = if_arg, .nargs = 1},
    {.name = "deprecated", .locations = GQ_DL_FIELD_DEFINITION | GQ_DL_ARGUMENT_DEFINITION |
                                        GQ_DL_INPUT_FIELD_DEFINITION | GQ_DL_ENUM_VALUE | GQ_DL_DIRECTIVE_DEFINITION,
     .locations_sdl = "FIELD_DEFINITION | ARGUMENT_DEFINITION | INPUT_FIELD_DEFINITION | ENUM_VALUE | "
                      "DIRECTIVE_DEFINITION",
     .args = reason_arg, .nargs = 1},
    {.name = "specifiedBy", .locations = GQ_DL_SCALAR, .locations_sdl = "SCALAR", .args = url_arg, .nargs = 1},
    {.name = "oneOf", .locations = GQ_DL_INPUT_OBJECT, .locations_sdl = "INPUT_OBJECT"},
};
static const struct gq_schema pets_schema = {
    .types = pets_types,
    .ntypes = N(pets_types),
    .directives = pets_directives,
    .ndirectives = N(pets_directives),
    .query_type = "Query",
};

/* ---- running a document ------------------------------------------------------ */

struct vcase {
    const char *doc;
    const char *want;          /* one error a line: "line:col[,line:col...] message" */
};

/* Parser limits far above anything here: the parser is not under test. */
static const struct gq_limits parse_limits = {1u << 24, 1u << 22, 0, 0, 1000};

static struct gq_errors errs;

/* Validate `doc`; its errors as in struct vcase (malloc'ed, the caller frees).
 * The arena's cap is `cap` bytes past what parsing used (0: the default). */
static char *validate_capped(const struct gq_schema *s, const char *doc, const struct gq_limits *lim, bool intro,
                             size_t cap)
{
    struct gq_arena a;
    gq_arena_init(&a, 0);
    struct gq_document *d = NULL;
    struct gq_error perr;
    int rc = gq_parse(&a, doc, strlen(doc), &parse_limits, &d, &perr);
    cr_assert_eq(rc, 0, "parse: %s", rc ? perr.message : "");
    if (cap)
        a.cap = a.used + cap;
    gq_schema_init(s);
    uint32_t n = gq_validate(&a, s, d, lim, intro, &errs);
    cr_assert_eq(n, errs.n);
    cr_assert_leq(errs.n, GQ_ERRORS_MAX);
    struct hk_buf b = HK_BUF_INIT;
    for (uint32_t i = 0; i < errs.n; i++) {
        for (uint32_t k = 0; k < errs.v[i].nlocs; k++)
            hk_buf_printf(&b, "%s%u:%u", k ? "," : "", errs.v[i].locs[k].line, errs.v[i].locs[k].column);
        hk_buf_printf(&b, " %s\n", errs.v[i].message);
    }
    hk_buf_putc(&b, '\0');
    char *r = strdup(b.p);
    hk_buf_free(&b);
    gq_arena_free(&a);
    return r;
}

static char *validate(const struct gq_schema *s, const char *doc, const struct gq_limits *lim, bool intro)
{
    return validate_capped(s, doc, lim, intro, 0);
}

static void run_cases(const struct gq_schema *s, const struct vcase *v, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        char *got = validate(s, v[i].doc, NULL, true);
        cr_expect_str_eq(got, v[i].want, "case %zu: %s", i, v[i].doc);
        free(got);
    }
}

#define RUN(s, t) run_cases((s), (t), sizeof(t) / sizeof((t)[0]))

/* ---- graphql-js's rules, with its answers ----------------------------------------- */

/* The tables below are graphql-js 16.15's answers (validate(buildSchema(SDL),
 * parse(doc)), locations cut to what struct gq_error holds); the hookd ones
 * use tests/unit/gq_schema.graphql. A document with type-system definitions
 * gets only ExecutableDefinitions' errors here: the parser keeps no more of
 * them, so none of these declares types other rules would look into. */

/* ExecutableDefinitionsRule: type-system definitions are refused, one error each, first. */
static const struct vcase executable_definitions[] = {
    {"{ system { version } }",
     ""},
    {"query Foo { system { version } } type Cow { name: String } extend type Dog { color: String }",
     "1:34 The \"Cow\" definition is not executable.\n1:60 The \"Dog\" definition is not executable.\n"},
    {"schema { query: Query } type Query { test: String }",
     "1:1 The schema definition is not executable.\n1:25 The \"Query\" definition is not executable.\n"},
    {"directive @foo on FIELD { system { version } }",
     "1:1 The \"foo\" definition is not executable.\n"},
    {"\"desc\" type T { a: Int } { nope }",
     "1:1 The \"T\" definition is not executable.\n1:28 Cannot query field \"nope\" on type \"Query\"."
     "\n"},
};

/* UniqueOperationNamesRule */
static const struct vcase unique_operation_names[] = {
    {"query Foo { system { version } } query Bar { system { store } }",
     ""},
    {"query Foo { system { version } } query Foo { sources { source } }",
     "1:7,1:40 There can be only one operation named \"Foo\".\n"},
    {"query Foo { system { version } } mutation Foo { deleteWebhook(id: 1) }",
     "1:7,1:43 There can be only one operation named \"Foo\".\n"},
    {"query Foo { system { version } } query Bar { system { version } } query Foo { system { store } }",
     "1:7,1:73 There can be only one operation named \"Foo\".\n"},
    {"query Foo { system { version } } fragment Foo on Query { system { store } }",
     "1:34 Fragment \"Foo\" is never used.\n"},
};

/* LoneAnonymousOperationRule */
static const struct vcase lone_anonymous_operation[] = {
    {"{ system { version } } fragment F on Query { system { store } }",
     "1:24 Fragment \"F\" is never used.\n"},
    {"{ system { version } } { sources { source } }",
     "1:1 This anonymous operation must be the only defined operation.\n1:24 This anonymous operation "
     "must be the only defined operation.\n"},
    {"{ system { version } } mutation { deleteWebhook(id: 1) }",
     "1:1 This anonymous operation must be the only defined operation.\n1:24 This anonymous operation "
     "must be the only defined operation.\n"},
    {"{ system { version } } query Foo { system { version } }",
     "1:1 This anonymous operation must be the only defined operation.\n"},
    {"query { __typename } query { __typename }",
     "1:1 This anonymous operation must be the only defined operation.\n1:22 This anonymous operation "
     "must be the only defined operation.\n"},
};

/* KnownTypeNamesRule, with graphql-js's suggestions. */
static const struct vcase known_type_names[] = {
    {"query ($a: String, $b: [Int!], $c: DateTime) { webhooks(source: $a, first: $b, receivedAfter: $c"
     ") { edges { cursor } } }",
     "1:20,1:76 Variable \"$b\" of type \"[Int!]\" used in position expecting type \"Int\".\n"},
    {"query ($a: Strin, $b: [Int!], $c: Webhok) { webhooks(source: $a) { edges { cursor } } }",
     "1:12 Unknown type \"Strin\". Did you mean \"String\"?\n1:35 Unknown type \"Webhok\". Did you mea"
     "n \"Webhook\"?\n1:19 Variable \"$b\" is never used.\n1:31 Variable \"$c\" is never used.\n"},
    {"{ webhooks { edges { node { ... on Webhok { id } } } } }",
     "1:36 Unknown type \"Webhok\". Did you mean \"Webhook\"?\n"},
    {"fragment F on Webhok { id } { webhook(id: 1) { ...F } }",
     "1:15 Unknown type \"Webhok\". Did you mean \"Webhook\"?\n"},
    {"query ($x: Datetime, $y: __schema) { system { version } }",
     "1:12 Unknown type \"Datetime\". Did you mean \"DateTime\"?\n1:26 Unknown type \"__schema\". Did "
     "you mean \"__Schema\"?\n1:8 Variable \"$x\" is never used.\n1:22 Variable \"$y\" is never used.\n"},
    {"query ($x: Str, $y: IDD, $z: Ints, $w: Booleans, $q: Webhooks, $r: Float2) { system { version } "
     "}",
     "1:12 Unknown type \"Str\".\n1:21 Unknown type \"IDD\". Did you mean \"ID\" or \"Int\"?\n1:30 Unk"
     "nown type \"Ints\". Did you mean \"Int\"?\n1:40 Unknown type \"Booleans\". Did you mean \"Boolea"
     "n\"?\n1:54 Unknown type \"Webhooks\". Did you mean \"Webhook\" or \"WebhookEdge\"?\n1:68 Unknown"
     " type \"Float2\". Did you mean \"Float\"?\n1:8 Variable \"$x\" is never used.\n1:17 Variable \"$"
     "y\" is never used.\n1:26 Variable \"$z\" is never used.\n1:36 Variable \"$w\" is never used.\n1:"
     "50 Variable \"$q\" is never used.\n1:64 Variable \"$r\" is never used.\n"},
    {"query ($x: webhook, $y: __type) { system { version } }",
     "1:12 Unknown type \"webhook\". Did you mean \"Webhook\"?\n1:25 Unknown type \"__type\". Did you "
     "mean \"__Type\"?\n1:8 Variable \"$x\" is never used.\n1:21 Variable \"$y\" is never used.\n"},
};

/* FragmentsOnCompositeTypesRule */
static const struct vcase fragments_on_composite_types[] = {
    {"{ webhook(id: 1) { ... { id } ... on Webhook { id } } }",
     ""},
    {"{ webhook(id: 1) { ... on String { length } } }",
     "1:27 Fragment cannot condition on non composite type \"String\".\n"},
    {"fragment F on String { x } { system { ...F } }",
     "1:15 Fragment \"F\" cannot condition on non composite type \"String\".\n"},
    {"fragment F on DateTime { x } { system { version } }",
     "1:15 Fragment \"F\" cannot condition on non composite type \"DateTime\".\n1:1 Fragment \"F\" is "
     "never used.\n"},
};

/* VariablesAreInputTypesRule */
static const struct vcase variables_are_input_types[] = {
    {"query ($a: String, $b: [ID!]!, $c: DateTime) { webhooks(source: $a, after: $a, receivedAfter: $c"
     ") { edges { cursor } } webhook(id: 1) { id } }",
     "1:20 Variable \"$b\" is never used.\n"},
    {"query ($a: Webhook, $b: [Webhook!]!, $c: SystemInfo) { system { version } }",
     "1:12 Variable \"$a\" cannot be non-input type \"Webhook\".\n1:25 Variable \"$b\" cannot be non-i"
     "nput type \"[Webhook!]!\".\n1:42 Variable \"$c\" cannot be non-input type \"SystemInfo\".\n1:8 V"
     "ariable \"$a\" is never used.\n1:21 Variable \"$b\" is never used.\n1:38 Variable \"$c\" is neve"
     "r used.\n"},
};

/* ScalarLeafsRule */
static const struct vcase scalar_leafs[] = {
    {"{ system }",
     "1:3 Field \"system\" of type \"SystemInfo!\" must have a selection of subfields. Did you mean \""
     "system { ... }\"?\n"},
    {"{ system { version { x } } }",
     "1:20 Field \"version\" must not have a selection since type \"String!\" has no subfields.\n"},
    {"{ webhooks(first: 1) }",
     "1:3 Field \"webhooks\" of type \"WebhookConnection!\" must have a selection of subfields. Did yo"
     "u mean \"webhooks { ... }\"?\n"},
    {"{ __typename { x } }",
     "1:14 Field \"__typename\" must not have a selection since type \"String!\" has no subfields.\n"},
    {"mutation { deleteWebhook(id: 1) { x } }",
     "1:33 Field \"deleteWebhook\" must not have a selection since type \"Boolean!\" has no subfields."
     "\n"},
    {"{ sources }",
     "1:3 Field \"sources\" of type \"[SourceStats!]!\" must have a selection of subfields. Did you me"
     "an \"sources { ... }\"?\n"},
    {"{ webhook(id: 1) { receivedAt { x } } }",
     "1:31 Field \"receivedAt\" must not have a selection since type \"DateTime!\" has no subfields.\n"},
};

/* FieldsOnCorrectTypeRule, with graphql-js's suggestions (suggestionList, lexical distance). */
static const struct vcase fields_on_correct_type[] = {
    {"{ __typename system { __typename } }",
     ""},
    {"{ sytem { version } }",
     "1:3 Cannot query field \"sytem\" on type \"Query\". Did you mean \"system\"?\n"},
    {"{ system { versoin } }",
     "1:12 Cannot query field \"versoin\" on type \"SystemInfo\". Did you mean \"version\"?\n"},
    {"{ webhook(id: 1) { idd sourse eventtype } }",
     "1:20 Cannot query field \"idd\" on type \"Webhook\". Did you mean \"id\"?\n1:24 Cannot query fie"
     "ld \"sourse\" on type \"Webhook\". Did you mean \"source\"?\n1:31 Cannot query field \"eventtype"
     "\" on type \"Webhook\". Did you mean \"eventType\" or \"contentType\"?\n"},
    {"{ webhooks { edgs { curser } pageinfo { hasNextpage } } }",
     "1:14 Cannot query field \"edgs\" on type \"WebhookConnection\". Did you mean \"edges\"?\n1:30 Ca"
     "nnot query field \"pageinfo\" on type \"WebhookConnection\". Did you mean \"pageInfo\"?\n"},
    {"{ webhook(id: 1) { ... on Webhook { nope } } }",
     "1:37 Cannot query field \"nope\" on type \"Webhook\".\n"},
    {"{ system { __schema { types { name } } } }",
     "1:12 Cannot query field \"__schema\" on type \"SystemInfo\".\n"},
    {"{ zzzzzzzz }",
     "1:3 Cannot query field \"zzzzzzzz\" on type \"Query\".\n"},
    {"{ Webhook }",
     "1:3 Cannot query field \"Webhook\" on type \"Query\". Did you mean \"webhook\" or \"webhooks\"?\n"},
    {"{ webhook(id: 1) { ID i d SOURCE eventTyep } }",
     "1:20 Cannot query field \"ID\" on type \"Webhook\". Did you mean \"id\"?\n1:23 Cannot query fiel"
     "d \"i\" on type \"Webhook\". Did you mean \"id\"?\n1:25 Cannot query field \"d\" on type \"Webho"
     "ok\". Did you mean \"id\"?\n1:27 Cannot query field \"SOURCE\" on type \"Webhook\". Did you mean"
     " \"source\"?\n1:34 Cannot query field \"eventTyep\" on type \"Webhook\". Did you mean \"eventTyp"
     "e\"?\n"},
    {"{ webhooks { edges { node { receivedat } } } }",
     "1:29 Cannot query field \"receivedat\" on type \"Webhook\". Did you mean \"receivedAt\"?\n"},
    {"{ system { verison storee uptime eventloops } }",
     "1:12 Cannot query field \"verison\" on type \"SystemInfo\". Did you mean \"version\"?\n1:20 Cann"
     "ot query field \"storee\" on type \"SystemInfo\". Did you mean \"store\"?\n1:27 Cannot query fie"
     "ld \"uptime\" on type \"SystemInfo\". Did you mean \"uptimeMs\"?\n1:34 Cannot query field \"even"
     "tloops\" on type \"SystemInfo\". Did you mean \"eventLoops\"?\n"},
    {"{ sources { count sourc lastreceivedat } }",
     "1:19 Cannot query field \"sourc\" on type \"SourceStats\". Did you mean \"source\" or \"count\"?"
     "\n1:25 Cannot query field \"lastreceivedat\" on type \"SourceStats\". Did you mean \"lastReceive"
     "dAt\"?\n"},
    {"{ webhooks { pageInfo { hasNext end } } }",
     "1:25 Cannot query field \"hasNext\" on type \"PageInfo\".\n1:33 Cannot query field \"end\" on ty"
     "pe \"PageInfo\".\n"},
    {"mutation { system { version } }",
     "1:12 Cannot query field \"system\" on type \"Mutation\".\n"},
};

/* UniqueFragmentNamesRule */
static const struct vcase unique_fragment_names[] = {
    {"{ system { ...F ...G } } fragment F on SystemInfo { version } fragment G on SystemInfo { store }",
     ""},
    {"{ system { ...F } } fragment F on SystemInfo { version } fragment F on SystemInfo { store }",
     "1:30,1:67 There can be only one fragment named \"F\".\n"},
    {"{ system { ...F ...G } } fragment F on SystemInfo { version } fragment G on SystemInfo { store }"
     " fragment F on SystemInfo { uptimeMs }",
     "1:35,1:107 There can be only one fragment named \"F\".\n"},
};

/* KnownFragmentNamesRule */
static const struct vcase known_fragment_names[] = {
    {"{ system { ...Nope ... on SystemInfo { ...Nope2 } } }",
     "1:15 Unknown fragment \"Nope\".\n1:43 Unknown fragment \"Nope2\".\n"},
    {"{ system { ...F } } fragment F on SystemInfo { ...G }",
     "1:51 Unknown fragment \"G\".\n"},
};

/* NoUnusedFragmentsRule: reported on leaving the document, in definition order. */
static const struct vcase no_unused_fragments[] = {
    {"{ system { version } } fragment F on SystemInfo { version } fragment G on Query { system { ...F "
     "} }",
     "1:24 Fragment \"F\" is never used.\n1:61 Fragment \"G\" is never used.\n"},
    {"{ system { ...F } } fragment F on SystemInfo { ...G } fragment G on SystemInfo { version } fragm"
     "ent H on SystemInfo { ...I } fragment I on SystemInfo { ...H }",
     "1:119,1:153 Cannot spread fragment \"H\" within itself via \"I\".\n1:92 Fragment \"H\" is never "
     "used.\n1:126 Fragment \"I\" is never used.\n"},
    {"query A { system { ...F } } query B { sources { ...G } } fragment F on SystemInfo { version } fr"
     "agment G on SourceStats { source } fragment H on SourceStats { count }",
     "1:132 Fragment \"H\" is never used.\n"},
    {"fragment F on Query { __typename }",
     "1:1 Fragment \"F\" is never used.\n"},
};

/* PossibleFragmentSpreadsRule on hookd's object types. */
static const struct vcase possible_fragment_spreads[] = {
    {"{ ... on Query { system { version } } }",
     ""},
    {"{ system { ...F } } fragment F on Webhook { id }",
     "1:12 Fragment \"F\" cannot be spread here as objects of type \"SystemInfo\" can never be of type"
     " \"Webhook\".\n"},
    {"{ system { ... on Webhook { id } } }",
     "1:12 Fragment cannot be spread here as objects of type \"SystemInfo\" can never be of type \"Web"
     "hook\".\n"},
    {"{ webhook(id: 1) { ... on Query { system { version } } } }",
     "1:20 Fragment cannot be spread here as objects of type \"Webhook\" can never be of type \"Query\""
     ".\n"},
    {"{ ... on Query { system { version } } ... on Mutation { deleteWebhook(id: 1) } }",
     "1:39 Fragment cannot be spread here as objects of type \"Query\" can never be of type \"Mutation"
     "\".\n"},
    {"{ ...F } fragment F on Mutation { deleteWebhook(id: 1) }",
     "1:3 Fragment \"F\" cannot be spread here as objects of type \"Query\" can never be of type \"Mut"
     "ation\".\n"},
};

/* NoFragmentCyclesRule: the spread paths in graphql-js's order (getFragmentSpreads visits nested
 * selection sets last, from the end). */
static const struct vcase no_fragment_cycles[] = {
    {"{ system { ...A } } fragment A on SystemInfo { ...A }",
     "1:48 Cannot spread fragment \"A\" within itself.\n"},
    {"{ system { ...A } } fragment A on SystemInfo { ...B } fragment B on SystemInfo { ...A }",
     "1:48,1:82 Cannot spread fragment \"A\" within itself via \"B\".\n"},
    {"{ system { ...A } } fragment A on SystemInfo { ...B } fragment B on SystemInfo { ...C } fragment"
     " C on SystemInfo { ...A ...B }",
     "1:48,1:82,1:116 Cannot spread fragment \"A\" within itself via \"B\", \"C\".\n1:82,1:121 Cannot "
     "spread fragment \"B\" within itself via \"C\".\n"},
    {"{ system { ...A } } fragment A on SystemInfo { version ...B ... on SystemInfo { ...C } } fragmen"
     "t B on SystemInfo { ...A } fragment C on SystemInfo { ...A }",
     "1:56,1:117 Cannot spread fragment \"A\" within itself via \"B\".\n1:81,1:151 Cannot spread fragm"
     "ent \"A\" within itself via \"C\".\n"},
    {"fragment A on Query { ...B } fragment B on Query { ...C ...A } fragment C on Query { ...A ...B }"
     " { ...A }",
     "1:23,1:52,1:86 Cannot spread fragment \"A\" within itself via \"B\", \"C\".\n1:52,1:91 Cannot sp"
     "read fragment \"B\" within itself via \"C\".\n1:23,1:57 Cannot spread fragment \"A\" within itse"
     "lf via \"B\".\n"},
    {"fragment A on Query { system { ...B } ...C } fragment B on SystemInfo { ...B2 } fragment B2 on S"
     "ystemInfo { ...B } fragment C on Query { ...A } { ...A }",
     "1:39,1:138 Cannot spread fragment \"A\" within itself via \"C\".\n1:73,1:109 Cannot spread fragm"
     "ent \"B\" within itself via \"B2\".\n"},
    {"{ ...A } fragment A on Query { system { ...B } webhooks { ...C } ...D } fragment B on SystemInfo"
     " { ...A1 } fragment C on WebhookConnection { ...A2 } fragment D on Query { ...A } fragment A1 on"
     " SystemInfo { version } fragment A2 on WebhookConnection { edges { ...A3 } } fragment A3 on Webh"
     "ookEdge { ...A4 } fragment A4 on WebhookEdge { node { id } ...A3 }",
     "1:66,1:172 Cannot spread fragment \"A\" within itself via \"D\".\n1:299,1:348 Cannot spread frag"
     "ment \"A3\" within itself via \"A4\".\n"},
};

/* UniqueVariableNamesRule: every location of a repeated name. */
static const struct vcase unique_variable_names[] = {
    {"query A($x: Int) { webhooks(first: $x) { edges { cursor } } } query B($x: Int) { webhooks(first:"
     " $x) { edges { cursor } } }",
     ""},
    {"query ($x: Int, $x: Int, $y: String, $x: String, $y: Int) { webhooks(first: $x, source: $y) { ed"
     "ges { cursor } } }",
     "1:9,1:18,1:39 There can be only one variable named \"$x\".\n1:27,1:51 There can be only one vari"
     "able named \"$y\".\n1:38,1:77 Variable \"$x\" of type \"String\" used in position expecting type"
     " \"Int\".\n1:50,1:89 Variable \"$y\" of type \"Int\" used in position expecting type \"String\"."
     "\n"},
    {"query Q(\n  $a: Int\n  $a: Int\n) {\n  webhooks(first: $a, first: $b) {\n    edges { cursor }\n "
     " }\n}\n",
     "2:4,3:4 There can be only one variable named \"$a\".\n5:12,5:23 There can be only one argument n"
     "amed \"first\".\n5:30,1:1 Variable \"$b\" is not defined by operation \"Q\".\n"},
};

/* NoUndefinedVariablesRule: each use, the operation's own first, then its fragments' in
 * getRecursivelyReferencedFragments order. */
static const struct vcase no_undefined_variables[] = {
    {"query { webhooks(first: $a, source: $b) { edges { cursor } } }",
     "1:25,1:1 Variable \"$a\" is not defined.\n1:37,1:1 Variable \"$b\" is not defined.\n"},
    {"query Q { webhooks(first: $a, source: $a) { edges { cursor } } }",
     "1:27,1:1 Variable \"$a\" is not defined by operation \"Q\".\n1:39,1:1 Variable \"$a\" is not def"
     "ined by operation \"Q\".\n"},
    {"query Q($a: Int) { webhooks(first: $a) { ...F } } fragment F on WebhookConnection { edges { node"
     " { id } } ... on WebhookConnection { pageInfo @include(if: $b) { hasNextPage } } }",
     "1:156,1:1 Variable \"$b\" is not defined by operation \"Q\".\n"},
    {"query Q { ...F } query R { ...F } fragment F on Query { webhooks(source: $s) { edges { cursor } "
     "} }",
     "1:74,1:1 Variable \"$s\" is not defined by operation \"Q\".\n1:74,1:18 Variable \"$s\" is not de"
     "fined by operation \"R\".\n"},
    {"query Q @skip(if: $x) { system { version } }",
     "1:9 Directive \"@skip\" may not be used on QUERY.\n1:19,1:1 Variable \"$x\" is not defined by op"
     "eration \"Q\".\n"},
    {"query Q { webhooks { ...A } ...B system { ... on SystemInfo { ...C } } ...D } fragment A on Webh"
     "ookConnection { edges { cursor @skip(if: $a) } } fragment B on Query { webhook(id: $b) { id } } "
     "fragment C on SystemInfo { version @include(if: $c) } fragment D on Query { webhooks(first: $d) "
     "{ edges { cursor } } }",
     "1:11,1:269 Fields \"webhooks\" conflict because they have differing arguments. Use different ali"
     "ases on the fields to fetch both if this was intentional.\n1:180,1:1 Variable \"$b\" is not defi"
     "ned by operation \"Q\".\n1:285,1:1 Variable \"$d\" is not defined by operation \"Q\".\n1:241,1:1"
     " Variable \"$c\" is not defined by operation \"Q\".\n1:138,1:1 Variable \"$a\" is not defined by"
     " operation \"Q\".\n"},
    {"{ ...F } { ...F } fragment F on Query { webhooks(first: $a) { edges { cursor } } }",
     "1:1 This anonymous operation must be the only defined operation.\n1:57,1:1 Variable \"$a\" is no"
     "t defined.\n1:10 This anonymous operation must be the only defined operation.\n1:57,1:10 Variabl"
     "e \"$a\" is not defined.\n"},
};

/* NoUnusedVariablesRule */
static const struct vcase no_unused_variables[] = {
    {"query ($a: Int, $b: String) { webhooks(first: $a) { edges { cursor } } }",
     "1:17 Variable \"$b\" is never used.\n"},
    {"query Q($a: Int, $b: String, $c: ID) { ...F } fragment F on Query { webhooks(first: $a) { edges "
     "{ cursor } } }",
     "1:18 Variable \"$b\" is never used in operation \"Q\".\n1:30 Variable \"$c\" is never used in op"
     "eration \"Q\".\n"},
    {"query Q($a: Int) { system { version } } query R($a: Int) { ...F } fragment F on Query { webhooks"
     "(first: $a) { edges { cursor } } }",
     "1:9 Variable \"$a\" is never used in operation \"Q\".\n"},
    {"query Q($a: Boolean, $b: ID, $c: Boolean, $d: Int, $e: Int) { webhooks { ...A } ...B system { .."
     ". on SystemInfo { ...C } } ...D } fragment A on WebhookConnection { edges { cursor @skip(if: $a)"
     " } } fragment B on Query { webhook(id: $b) { id } } fragment C on SystemInfo { version @include("
     "if: $c) } fragment D on Query { webhooks(first: $d) { edges { cursor } } }",
     "1:63,1:321 Fields \"webhooks\" conflict because they have differing arguments. Use different ali"
     "ases on the fields to fetch both if this was intentional.\n1:52 Variable \"$e\" is never used in"
     " operation \"Q\".\n1:22,1:232 Variable \"$b\" of type \"ID\" used in position expecting type \"I"
     "D!\".\n1:30,1:293 Variable \"$c\" of type \"Boolean\" used in position expecting type \"Boolean!"
     "\".\n1:9,1:190 Variable \"$a\" of type \"Boolean\" used in position expecting type \"Boolean!\"."
     "\n"},
};

/* KnownDirectivesRule: unknown directives and misplaced ones. */
static const struct vcase known_directives[] = {
    {"{ system @nope { version @skip(if: true) } }",
     "1:10 Unknown directive \"@nope\".\n"},
    {"query Q @skip(if: true) { system { version } }",
     "1:9 Directive \"@skip\" may not be used on QUERY.\n"},
    {"query Q($x: Int @skip(if: true)) { webhooks(first: $x) @deprecated { edges { cursor } } }",
     "1:17 Directive \"@skip\" may not be used on VARIABLE_DEFINITION.\n1:56 Directive \"@deprecated\""
     " may not be used on FIELD.\n"},
    {"{ system { ...F @include(if: true) ... @skip(if: false) { version } } } fragment F on SystemInfo"
     " @skip(if: true) { store }",
     "1:98 Directive \"@skip\" may not be used on FRAGMENT_DEFINITION.\n"},
    {"mutation M @include(if: true) { deleteWebhook(id: 1) }",
     "1:12 Directive \"@include\" may not be used on MUTATION.\n"},
    {"subscription S @include(if: true) { system { version } }",
     "1:16 Directive \"@include\" may not be used on SUBSCRIPTION.\n"},
    {"{ system @specifiedBy(url: \"x\") @oneOf { version } }",
     "1:10 Directive \"@specifiedBy\" may not be used on FIELD.\n1:33 Directive \"@oneOf\" may not be "
     "used on FIELD.\n"},
};

/* UniqueDirectivesPerLocationRule */
static const struct vcase unique_directives_per_location[] = {
    {"{ system @skip(if: true) @skip(if: false) { version @include(if: true) @skip(if: true) @include("
     "if: false) } }",
     "1:10,1:26 The directive \"@skip\" can only be used once at this location.\n1:53,1:88 The directi"
     "ve \"@include\" can only be used once at this location.\n"},
    {"{ system @nope @nope { version } }",
     "1:10 Unknown directive \"@nope\".\n1:16 Unknown directive \"@nope\".\n"},
    {"query Q($v: Int @skip(if: true) @skip(if: true)) @skip(if: true) @skip(if: true) { webhooks(firs"
     "t: $v) { edges { cursor } } }",
     "1:50,1:66 The directive \"@skip\" can only be used once at this location.\n1:17,1:33 The directi"
     "ve \"@skip\" can only be used once at this location.\n1:17 Directive \"@skip\" may not be used o"
     "n VARIABLE_DEFINITION.\n1:33 Directive \"@skip\" may not be used on VARIABLE_DEFINITION.\n1:50 D"
     "irective \"@skip\" may not be used on QUERY.\n1:66 Directive \"@skip\" may not be used on QUERY."
     "\n"},
    {"{ system { ...F @skip(if: true) @skip(if: true) ... @include(if: true) @include(if: true) { stor"
     "e } } } fragment F on SystemInfo @skip(if: true) @skip(if: true) { version }",
     "1:17,1:33 The directive \"@skip\" can only be used once at this location.\n1:53,1:72 The directi"
     "ve \"@include\" can only be used once at this location.\n1:130,1:146 The directive \"@skip\" can"
     " only be used once at this location.\n1:130 Directive \"@skip\" may not be used on FRAGMENT_DEFI"
     "NITION.\n1:146 Directive \"@skip\" may not be used on FRAGMENT_DEFINITION.\n"},
};

/* KnownArgumentNamesRule, on fields and on directives, with suggestions. */
static const struct vcase known_argument_names[] = {
    {"{ webhook(idd: 1) { id } }",
     "1:11 Unknown argument \"idd\" on field \"Query.webhook\". Did you mean \"id\"?\n1:3 Field \"webh"
     "ook\" argument \"id\" of type \"ID!\" is required, but it was not provided.\n"},
    {"{ webhooks(frist: 1, source: \"x\", sorce: \"y\", eventtype: \"z\") { edges { cursor } } }",
     "1:12 Unknown argument \"frist\" on field \"Query.webhooks\". Did you mean \"first\"?\n1:35 Unkno"
     "wn argument \"sorce\" on field \"Query.webhooks\". Did you mean \"source\"?\n1:47 Unknown argume"
     "nt \"eventtype\" on field \"Query.webhooks\". Did you mean \"eventType\"?\n"},
    {"{ system(x: 1) { version } }",
     "1:10 Unknown argument \"x\" on field \"Query.system\".\n"},
    {"{ system @skip(iff: true, if: true) { version } }",
     "1:16 Unknown argument \"iff\" on directive \"@skip\". Did you mean \"if\"?\n"},
    {"{ system @nope(if: true) { version } }",
     "1:10 Unknown directive \"@nope\".\n"},
    {"{ system { nope(x: 1) } }",
     "1:12 Cannot query field \"nope\" on type \"SystemInfo\".\n"},
    {"{ __type(name: \"Query\", nme: 1) { name } }",
     "1:25 Unknown argument \"nme\" on field \"Query.__type\". Did you mean \"name\"?\n"},
    {"{ __typename(x: 1) }",
     "1:14 Unknown argument \"x\" on field \"Query.__typename\".\n"},
    {"{ webhook(ID: 1) { id } }",
     "1:11 Unknown argument \"ID\" on field \"Query.webhook\". Did you mean \"id\"?\n1:3 Field \"webho"
     "ok\" argument \"id\" of type \"ID!\" is required, but it was not provided.\n"},
    {"{ webhooks(recievedAfter: 1, receivedBefor: 2, receved: 3) { edges { cursor } } }",
     "1:12 Unknown argument \"recievedAfter\" on field \"Query.webhooks\". Did you mean \"receivedAfte"
     "r\" or \"receivedBefore\"?\n1:30 Unknown argument \"receivedBefor\" on field \"Query.webhooks\"."
     " Did you mean \"receivedBefore\" or \"receivedAfter\"?\n1:48 Unknown argument \"receved\" on fie"
     "ld \"Query.webhooks\".\n"},
};

/* UniqueArgumentNamesRule */
static const struct vcase unique_argument_names[] = {
    {"{ webhooks(first: 1, first: 2, source: \"a\", first: 3, source: \"b\") { edges { cursor } } }",
     "1:12,1:22,1:45 There can be only one argument named \"first\".\n1:32,1:55 There can be only one "
     "argument named \"source\".\n"},
    {"{ system @skip(if: true, if: false) { version } }",
     "1:16,1:26 There can be only one argument named \"if\".\n"},
    {"{ webhook(id: 1, nope: 1, nope: 2) { id } }",
     "1:18,1:27 There can be only one argument named \"nope\".\n1:18 Unknown argument \"nope\" on fiel"
     "d \"Query.webhook\".\n1:27 Unknown argument \"nope\" on field \"Query.webhook\".\n"},
};

/* ValuesOfCorrectTypeRule: the built-in scalars' parseLiteral messages, printed values (printString,
 * printBlockString). */
static const struct vcase values_of_correct_type[] = {
    {"{ webhook(id: 1.5) { id } }",
     "1:15 ID cannot represent a non-string and non-integer value: 1.5\n"},
    {"{ webhook(id: true) { id } }",
     "1:15 ID cannot represent a non-string and non-integer value: true\n"},
    {"{ webhook(id: null) { id } }",
     "1:15 Expected value of type \"ID!\", found null.\n"},
    {"{ webhook(id: ABC) { id } }",
     "1:15 ID cannot represent a non-string and non-integer value: ABC\n"},
    {"{ webhook(id: [1]) { id } }",
     "1:15 ID cannot represent a non-string and non-integer value: [1]\n"},
    {"{ webhook(id: {a: 1}) { id } }",
     "1:15 ID cannot represent a non-string and non-integer value: {a: 1}\n"},
    {"{ webhook(id: \"abc\") { id } webhooks(first: \"10\") { edges { cursor } } }",
     "1:45 Int cannot represent non-integer value: \"10\"\n"},
    {"{ webhooks(first: 1.0) { edges { cursor } } }",
     "1:19 Int cannot represent non-integer value: 1.0\n"},
    {"{ webhooks(first: 2147483648) { edges { cursor } } }",
     "1:19 Int cannot represent non 32-bit signed integer value: 2147483648\n"},
    {"{ webhooks(first: -2147483649) { edges { cursor } } }",
     "1:19 Int cannot represent non 32-bit signed integer value: -2147483649\n"},
    {"{ webhooks(first: -2147483648) { edges { cursor } } }",
     ""},
    {"{ webhooks(first: 2147483647) { edges { cursor } } }",
     ""},
    {"{ webhooks(first: 99999999999999999999999) { edges { cursor } } }",
     "1:19 Int cannot represent non 32-bit signed integer value: 99999999999999999999999\n"},
    {"{ webhooks(first: null, source: null, after: 1) { edges { cursor } } }",
     "1:46 String cannot represent a non string value: 1\n"},
    {"{ webhooks(source: true, eventType: ENUM, after: [1, 2], receivedAfter: 1, receivedBefore: {x: ["
     "1, {y: 2}]}) { edges { cursor } } }",
     "1:20 String cannot represent a non string value: true\n1:37 String cannot represent a non string value: ENUM\n1:50 String cannot represent a non string value: [1, 2]\n1:73 DateTime cannot represent a non-string value: 1\n1:92 DateTime cannot represent a non-string value: {x: [1, {y: 2}]}\n"},
    {"{ webhooks(source: \"\"\"block\"\"\") { edges { cursor } } webhook(id: \"\"\"block\"\"\") { id }"
     " }",
     ""},
    {"{ webhooks(first: \"\"\"block\"\"\") { edges { cursor } } }",
     "1:19 Int cannot represent non-integer value: \"\"\"block\"\"\"\n"},
    {"{ webhooks(first: \"a\\nb\\u0001\\\"\\\\c\") { edges { cursor } } }",
     "1:19 Int cannot represent non-integer value: \"a\\nb\\u0001\\\"\\\\c\"\n"},
    {"{ webhooks(first: \"\302\200\302\237\302\240\177\") { edges { cursor } } }",
     "1:19 Int cannot represent non-integer value: \"\\u0080\\u009F\302\240\\u007F\"\n"},
    {"{ webhooks(first: \"\"\"  a\n  b\n\"\"\") { edges { cursor } } }",
     "1:19 Int cannot represent non-integer value: \"\"\"\n  a\nb\n\"\"\"\n"},
    {"{ webhooks(first: \"\"\"x\\\"\"\"y\"\"\") { edges { cursor } } }",
     "1:19 Int cannot represent non-integer value: \"\"\"x\\\"\"\"y\"\"\"\n"},
    {"{ webhooks(first: \"\"\"xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx"
     "xxxxxxxx\"\"\") { edges { cursor } } }",
     "1:19 Int cannot represent non-integer value: \"\"\"\nxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx"
     "xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx\n\"\"\"\n"},
    {"{ webhooks(first: \"\"\"x\n y\"\"\") { edges { cursor } } }",
     "1:19 Int cannot represent non-integer value: \"\"\"\nx\ny\n\"\"\"\n"},
    {"{ webhooks(first: \"\"\" x\"\"\") { edges { cursor } } }",
     "1:19 Int cannot represent non-integer value: \"\"\" x\"\"\"\n"},
    {"{ webhooks(first: \"\"\"\ty\"\"\") { edges { cursor } } }",
     "1:19 Int cannot represent non-integer value: \"\"\"\ty\"\"\"\n"},
    {"{ webhooks(first: \"\"\"x\ny\\ \"\"\") { edges { cursor } } }",
     "1:19 Int cannot represent non-integer value: \"\"\"\nx\ny\\ \n\"\"\"\n"},
    {"{ webhooks(first: [[1], [2, 3]]) { edges { cursor } } }",
     "1:19 Int cannot represent non-integer value: [[1], [2, 3]]\n"},
    {"{ webhooks(first: [null]) { edges { cursor } } }",
     "1:19 Int cannot represent non-integer value: [null]\n"},
    {"{ webhooks(first: 1e5, source: 1.5e-3, after: -0) { edges { cursor } } }",
     "1:19 Int cannot represent non-integer value: 1e5\n1:32 String cannot represent a non string valu"
     "e: 1.5e-3\n1:47 String cannot represent a non string value: -0\n"},
    {"{ system @skip(if: 1) { version } }",
     "1:20 Boolean cannot represent a non boolean value: 1\n"},
    {"{ system @skip(if: \"true\") { version } }",
     "1:20 Boolean cannot represent a non boolean value: \"true\"\n"},
    {"{ system @skip(if: null) { version } }",
     "1:20 Expected value of type \"Boolean!\", found null.\n"},
    {"{ system @skip(if: [true]) { version } }",
     "1:20 Boolean cannot represent a non boolean value: [true]\n"},
    {"{ system @include(if: {a: true}) { version } }",
     "1:23 Boolean cannot represent a non boolean value: {a: true}\n"},
    {"{ __type(name: 1) { name } }",
     "1:16 String cannot represent a non string value: 1\n"},
    {"{ __type(name: \"Query\") { fields(includeDeprecated: 1) { name } } }",
     "1:53 Boolean cannot represent a non boolean value: 1\n"},
    {"query ($x: Int = \"a\", $y: [Int] = [1, \"b\"], $z: Int! = null, $w: String = 1.5) { webhooks(fi"
     "rst: $x) { edges { cursor } } }",
     "1:18 Int cannot represent non-integer value: \"a\"\n1:39 Int cannot represent non-integer value:"
     " \"b\"\n1:56 Expected value of type \"Int!\", found null.\n1:75 String cannot represent a non st"
     "ring value: 1.5\n1:23 Variable \"$y\" is never used.\n1:45 Variable \"$z\" is never used.\n1:62 "
     "Variable \"$w\" is never used.\n"},
    {"{ webhooks(receivedAfter: \"2020\", receivedBefore: [1, 2, {a: $x}]) { edges { cursor } } }",
     "1:27 DateTime cannot represent an invalid date-time: \"2020\"\n1:51 DateTime cannot represent a non-string value: [1, 2, {a: $x}]\n1:62,1:1 Variable \"$x\" is not defined.\n"},
    {"{ webhook(id: 1) @nope(id: 1.5) { id } }",
     "1:18 Unknown directive \"@nope\".\n1:28 ID cannot represent a non-string and non-integer value: "
     "1.5\n"},
    {"{ system @nope(id: 1.5) { version } }",
     "1:10 Unknown directive \"@nope\".\n"},
    {"# comment \342\230\203 \360\235\204\236\n{\n  webhooks(source: \"\342\230\203\360\235\204\236\","
     " first: \"\360\235\204\236\") {\n edges { nope }\n  }\n}\n",
     "3:34 Int cannot represent non-integer value: \"\360\235\204\236\"\n4:10 Cannot query field \"nop"
     "e\" on type \"WebhookEdge\". Did you mean \"node\"?\n"},
};

/* ProvidedRequiredArgumentsRule: on leaving the field or directive. */
static const struct vcase provided_required_arguments[] = {
    {"{ webhook { id } }",
     "1:3 Field \"webhook\" argument \"id\" of type \"ID!\" is required, but it was not provided.\n"},
    {"{ webhook(nope: 1) { id } __type { name } }",
     "1:11 Unknown argument \"nope\" on field \"Query.webhook\".\n1:3 Field \"webhook\" argument \"id\""
     " of type \"ID!\" is required, but it was not provided.\n1:27 Field \"__type\" argument \"name\" "
     "of type \"String!\" is required, but it was not provided.\n"},
    {"mutation { deleteWebhook }",
     "1:12 Field \"deleteWebhook\" argument \"id\" of type \"ID!\" is required, but it was not provide"
     "d.\n"},
    {"{ system @skip { version } }",
     "1:10 Directive \"@skip\" argument \"if\" of type \"Boolean!\" is required, but it was not provid"
     "ed.\n"},
    {"{ system @include(iff: true) { version } }",
     "1:19 Unknown argument \"iff\" on directive \"@include\". Did you mean \"if\"?\n1:10 Directive \""
     "@include\" argument \"if\" of type \"Boolean!\" is required, but it was not provided.\n"},
    {"{ system @skip @include { version } }",
     "1:10 Directive \"@skip\" argument \"if\" of type \"Boolean!\" is required, but it was not provid"
     "ed.\n1:16 Directive \"@include\" argument \"if\" of type \"Boolean!\" is required, but it was no"
     "t provided.\n"},
};

/* VariablesInAllowedPositionRule */
static const struct vcase variables_in_allowed_position[] = {
    {"query ($x: Int) { webhook(id: $x) { id } }",
     "1:8,1:31 Variable \"$x\" of type \"Int\" used in position expecting type \"ID!\".\n"},
    {"query ($x: ID) { webhook(id: $x) { id } }",
     "1:8,1:30 Variable \"$x\" of type \"ID\" used in position expecting type \"ID!\".\n"},
    {"query ($x: ID = 1) { webhook(id: $x) { id } }",
     ""},
    {"query ($x: ID = null) { webhook(id: $x) { id } }",
     "1:8,1:37 Variable \"$x\" of type \"ID\" used in position expecting type \"ID!\".\n"},
    {"query ($x: ID!) { webhook(id: $x) { id } }",
     ""},
    {"query ($x: String!) { webhook(id: $x) { id } }",
     "1:8,1:35 Variable \"$x\" of type \"String!\" used in position expecting type \"ID!\".\n"},
    {"query ($x: [ID]) { webhook(id: $x) { id } }",
     "1:8,1:32 Variable \"$x\" of type \"[ID]\" used in position expecting type \"ID!\".\n"},
    {"query ($x: Int) { webhooks(first: $x) { edges { cursor } } }",
     ""},
    {"query ($x: String) { webhooks(first: $x) { edges { cursor } } }",
     "1:8,1:38 Variable \"$x\" of type \"String\" used in position expecting type \"Int\".\n"},
    {"query ($x: Boolean) { system @skip(if: $x) { version } }",
     "1:8,1:40 Variable \"$x\" of type \"Boolean\" used in position expecting type \"Boolean!\".\n"},
    {"query ($x: Boolean = true) { system @skip(if: $x) { version } }",
     ""},
    {"query ($x: String) { webhooks(first: [$x], source: [$x]) { edges { cursor } } }",
     "1:38 Int cannot represent non-integer value: [$x]\n1:52 String cannot represent a non string val"
     "ue: [$x]\n1:8,1:39 Variable \"$x\" of type \"String\" used in position expecting type \"Int\".\n"},
    {"query ($x: Webhook) { webhooks(source: $x) { edges { cursor } } }",
     "1:12 Variable \"$x\" cannot be non-input type \"Webhook\".\n1:8,1:40 Variable \"$x\" of type \"W"
     "ebhook\" used in position expecting type \"String\".\n"},
    {"query ($x: Int) { ...F } fragment F on Query { webhooks(source: $x) { edges { cursor } } webhook"
     "(id: $x) { id } }",
     "1:8,1:65 Variable \"$x\" of type \"Int\" used in position expecting type \"String\".\n1:8,1:102 "
     "Variable \"$x\" of type \"Int\" used in position expecting type \"ID!\".\n"},
    {"query Q($x: Int, $x: String) { webhooks(source: $x) { edges { cursor } } }",
     "1:10,1:19 There can be only one variable named \"$x\".\n"},
    {"query ($x: DateTime) { webhooks(receivedAfter: $x, source: $x) { edges { cursor } } }",
     "1:8,1:60 Variable \"$x\" of type \"DateTime\" used in position expecting type \"String\".\n"},
    {"query ($x: Boolean) { __type(name: \"Query\") { fields(includeDeprecated: $x) { name } } }",
     ""},
    {"query ($x: String) { __type(name: $x) { name } }",
     "1:8,1:35 Variable \"$x\" of type \"String\" used in position expecting type \"String!\".\n"},
    {"mutation M($id: ID) { deleteWebhook(id: $id) }",
     "1:12,1:41 Variable \"$id\" of type \"ID\" used in position expecting type \"ID!\".\n"},
    {"mutation M($id: ID = \"1\") { deleteWebhook(id: $id) }",
     ""},
};

/* OverlappingFieldsCanBeMergedRule: aliases, arguments, types, sub-selections, fragments. */
static const struct vcase overlapping_fields_can_be_merged[] = {
    {"{ system { version version } }",
     ""},
    {"{ system { a: version a: store } }",
     "1:12,1:23 Fields \"a\" conflict because \"version\" and \"store\" are different fields. Use diff"
     "erent aliases on the fields to fetch both if this was intentional.\n"},
    {"{ system { version: store version } }",
     "1:12,1:27 Fields \"version\" conflict because \"store\" and \"version\" are different fields. Us"
     "e different aliases on the fields to fetch both if this was intentional.\n"},
    {"{ webhooks(first: 1) { edges { cursor } } webhooks(first: 2) { pageInfo { endCursor } } }",
     "1:3,1:43 Fields \"webhooks\" conflict because they have differing arguments. Use different alias"
     "es on the fields to fetch both if this was intentional.\n"},
    {"{ webhooks(first: 1) { edges { cursor } } webhooks { pageInfo { endCursor } } }",
     "1:3,1:43 Fields \"webhooks\" conflict because they have differing arguments. Use different alias"
     "es on the fields to fetch both if this was intentional.\n"},
    {"query ($a: Int, $b: Int) { webhooks(first: $a) { edges { cursor } } webhooks(first: $b) { edges "
     "{ cursor } } }",
     "1:28,1:69 Fields \"webhooks\" conflict because they have differing arguments. Use different alia"
     "ses on the fields to fetch both if this was intentional.\n"},
    {"query ($a: Int) { webhooks(first: $a) { edges { cursor } } webhooks(first: $a) { edges { cursor "
     "} } }",
     ""},
    {"{ webhooks { edges { x: cursor } } webhooks { edges { x: node { id } } pageInfo { x: endCursor x"
     ": hasNextPage } } }",
     "1:3,1:14,1:22,1:36,1:47,1:55 Fields \"webhooks\" conflict because subfields \"edges\" conflict b"
     "ecause subfields \"x\" conflict because \"cursor\" and \"node\" are different fields. Use differ"
     "ent aliases on the fields to fetch both if this was intentional.\n1:83,1:96 Fields \"x\" conflic"
     "t because \"endCursor\" and \"hasNextPage\" are different fields. Use different aliases on the f"
     "ields to fetch both if this was intentional.\n"},
    {"{ system { ...F ...G } } fragment F on SystemInfo { v: version } fragment G on SystemInfo { v: s"
     "tore }",
     "1:53,1:93 Fields \"v\" conflict because \"version\" and \"store\" are different fields. Use diff"
     "erent aliases on the fields to fetch both if this was intentional.\n"},
    {"{ system { ... on SystemInfo { v: version } v: store } }",
     "1:32,1:45 Fields \"v\" conflict because \"version\" and \"store\" are different fields. Use diff"
     "erent aliases on the fields to fetch both if this was intentional.\n"},
    {"{ webhook(id: 1) { x: id x: receivedAt } }",
     "1:20,1:26 Fields \"x\" conflict because \"id\" and \"receivedAt\" are different fields. Use diff"
     "erent aliases on the fields to fetch both if this was intentional.\n"},
    {"{ sources { x: count x: source } }",
     "1:13,1:22 Fields \"x\" conflict because \"count\" and \"source\" are different fields. Use diffe"
     "rent aliases on the fields to fetch both if this was intentional.\n"},
    {"{ system { uptimeMs: eventLoops } system { uptimeMs } }",
     "1:3,1:12,1:35,1:44 Fields \"system\" conflict because subfields \"uptimeMs\" conflict because \""
     "eventLoops\" and \"uptimeMs\" are different fields. Use different aliases on the fields to fetch"
     " both if this was intentional.\n"},
    {"{ x: sources { source } x: system { version } }",
     "1:3,1:25 Fields \"x\" conflict because \"sources\" and \"system\" are different fields. Use diff"
     "erent aliases on the fields to fetch both if this was intentional.\n"},
    {"{ x: __typename x: __typename system { __typename } }",
     ""},
    {"{ webhooks(source: \"a\") { edges { cursor } } webhooks(source: \"\"\"a\"\"\") { edges { cursor "
     "} } }",
     "1:3,1:46 Fields \"webhooks\" conflict because they have differing arguments. Use different alias"
     "es on the fields to fetch both if this was intentional.\n"},
    {"{ webhooks(receivedAfter: {a: 1, b: 2}) { edges { cursor } } webhooks(receivedAfter: {b: 2, a: 1"
     "}) { edges { cursor } } }",
     "1:27 DateTime cannot represent a non-string value: {a: 1, b: 2}\n1:86 DateTime cannot represent a non-string value: {b: 2, a: 1}\n"},
    {"{ webhooks(receivedAfter: {a: 1, b: 2}) { edges { cursor } } webhooks(receivedAfter: {b: 2, a: 1"
     ".0}) { edges { cursor } } }",
     "1:3,1:62 Fields \"webhooks\" conflict because they have differing arguments. Use different aliases on the fields to fetch both if this was intentional.\n1:27 DateTime cannot represent a non-string value: {a: 1, b: 2}\n1:86 DateTime cannot represent a non-string value: {b: 2, a: 1.0}\n"},
    {"{ webhooks(first: 1, source: \"a\") { edges { cursor } } webhooks(source: \"a\", first: 1) { edg"
     "es { cursor } } }",
     ""},
    {"{ a: system { version } a: system { version: store } a: system { version: uptimeMs } }",
     "1:3,1:15,1:25,1:37 Fields \"a\" conflict because subfields \"version\" conflict because \"versio"
     "n\" and \"store\" are different fields. Use different aliases on the fields to fetch both if thi"
     "s was intentional.\n1:3,1:15,1:54,1:66 Fields \"a\" conflict because subfields \"version\" confl"
     "ict because \"version\" and \"uptimeMs\" are different fields. Use different aliases on the fiel"
     "ds to fetch both if this was intentional.\n1:25,1:37,1:54,1:66 Fields \"a\" conflict because sub"
     "fields \"version\" conflict because \"store\" and \"uptimeMs\" are different fields. Use differe"
     "nt aliases on the fields to fetch both if this was intentional.\n"},
    {"{ webhooks { edges { node { id x: source } } } webhooks { edges { node { id x: eventType } curso"
     "r } pageInfo { hasNextPage } } webhooks { edges { node { x: id } } } }",
     "1:3,1:14,1:22,1:32,1:48,1:59,1:67,1:77 Fields \"webhooks\" conflict because subfields \"edges\" "
     "conflict because subfields \"node\" conflict because subfields \"x\" conflict because \"source\""
     " and \"eventType\" are different fields. Use different aliases on the fields to fetch both if th"
     "is was intentional.\n1:3,1:14,1:22,1:32,1:128,1:139,1:147,1:154 Fields \"webhooks\" conflict bec"
     "ause subfields \"edges\" conflict because subfields \"node\" conflict because subfields \"x\" co"
     "nflict because \"source\" and \"id\" are different fields. Use different aliases on the fields t"
     "o fetch both if this was intentional.\n1:48,1:59,1:67,1:77,1:128,1:139,1:147,1:154 Fields \"webh"
     "ooks\" conflict because subfields \"edges\" conflict because subfields \"node\" conflict because"
     " subfields \"x\" conflict because \"eventType\" and \"id\" are different fields. Use different a"
     "liases on the fields to fetch both if this was intentional.\n"},
    {"{ ...A ...B } fragment A on Query { x: system { version } } fragment B on Query { x: sources { s"
     "ource } }",
     "1:37,1:83 Fields \"x\" conflict because \"system\" and \"sources\" are different fields. Use dif"
     "ferent aliases on the fields to fetch both if this was intentional.\n"},
    {"{ ...A ...A } fragment A on Query { x: system { version } y: system { store } }",
     ""},
    {"query { ...A } fragment A on Query { system { ...B } } fragment B on SystemInfo { v: version ..."
     "C } fragment C on SystemInfo { v: store }",
     "1:83,1:128 Fields \"v\" conflict because \"version\" and \"store\" are different fields. Use dif"
     "ferent aliases on the fields to fetch both if this was intentional.\n"},
    {"{ system { ...A ...B } } fragment A on SystemInfo { ...C } fragment B on SystemInfo { ...D } fra"
     "gment C on SystemInfo { x: version } fragment D on SystemInfo { x: store }",
     "1:121,1:161 Fields \"x\" conflict because \"version\" and \"store\" are different fields. Use di"
     "fferent aliases on the fields to fetch both if this was intentional.\n"},
    {"{ webhooks { edges { node { ...W } } } webhooks { edges { node { ...V } } } } fragment W on Webh"
     "ook { x: id } fragment V on Webhook { x: source }",
     "1:3,1:14,1:22,1:103,1:40,1:51,1:59,1:135 Fields \"webhooks\" conflict because subfields \"edges\""
     " conflict because subfields \"node\" conflict because subfields \"x\" conflict because \"id\" an"
     "d \"source\" are different fields. Use different aliases on the fields to fetch both if this was"
     " intentional.\n"},
    {"{ webhook(id: 1) { ...on Nope { x: id } ...on Nope2 { x: source } } }",
     "1:33,1:55 Fields \"x\" conflict because \"id\" and \"source\" are different fields. Use differen"
     "t aliases on the fields to fetch both if this was intentional.\n1:26 Unknown type \"Nope\".\n1:4"
     "7 Unknown type \"Nope2\".\n"},
    {"{ webhook(id: 1) { x: nope(a: 1) x: nope(a: 2) } }",
     "1:20,1:34 Fields \"x\" conflict because they have differing arguments. Use different aliases on "
     "the fields to fetch both if this was intentional.\n1:20 Cannot query field \"nope\" on type \"We"
     "bhook\".\n1:34 Cannot query field \"nope\" on type \"Webhook\".\n"},
    {"{ webhook(id: 1) { nope(a: 1) nope(a: 1) } }",
     "1:20 Cannot query field \"nope\" on type \"Webhook\".\n1:31 Cannot query field \"nope\" on type "
     "\"Webhook\".\n"},
    {"query Q { ...F ...F ...G } fragment F on Query { a: webhooks(first: 1) { edges { cursor } } ...G"
     " } fragment G on Query { a: webhooks(first: 2) { edges { cursor } } ...F }",
     "1:50,1:122 Fields \"a\" conflict because they have differing arguments. Use different aliases on"
     " the fields to fetch both if this was intentional.\n1:93,1:165 Cannot spread fragment \"F\" with"
     "in itself via \"G\".\n1:50,1:122 Fields \"a\" conflict because they have differing arguments. Us"
     "e different aliases on the fields to fetch both if this was intentional.\n1:122,1:50 Fields \"a\""
     " conflict because they have differing arguments. Use different aliases on the fields to fetch bo"
     "th if this was intentional.\n"},
    {"{ webhooks { edges { x: cursor } } webhooks { edges { x: node { id } } } webhooks { edges { x: c"
     "ursor } } }",
     "1:3,1:14,1:22,1:36,1:47,1:55 Fields \"webhooks\" conflict because subfields \"edges\" conflict b"
     "ecause subfields \"x\" conflict because \"cursor\" and \"node\" are different fields. Use differ"
     "ent aliases on the fields to fetch both if this was intentional.\n1:36,1:47,1:55,1:74,1:85,1:93 "
     "Fields \"webhooks\" conflict because subfields \"edges\" conflict because subfields \"x\" confli"
     "ct because \"node\" and \"cursor\" are different fields. Use different aliases on the fields to "
     "fetch both if this was intentional.\n"},
    {"{ aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"
     "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"
     "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"
     "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"
     "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"
     "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"
     "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"
     "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"
     "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"
     "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"
     "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"
     "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"
     "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa: system { version } aaaaaaaaaaaaaaaaaaaaaaaaa"
     "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"
     "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"
     "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"
     "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"
     "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"
     "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"
     "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"
     "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"
     "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"
     "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"
     "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"
     "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"
     "aaaaaaaaaaaaaaaaaaaaaaa: sources { source } }",
     "1:3,1:1224 Fields \"aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"
     "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"
     "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"
     "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"
     "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"
     "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"
     "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"
     "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"
     "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"
     "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"
     "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa...\" conflict because \"system\" an"
     "d \"sources\" are different fields. Use different aliases on the fields to fetch both if this wa"
     "s intentional.\n"},
    {"{ a: system { v0: version v1: version v2: version v3: version v4: version v5: version v6: versio"
     "n v7: version v8: version v9: version v10: version v11: version v12: version v13: version v14: v"
     "ersion v15: version v16: version v17: version v18: version v19: version v20: version v21: versio"
     "n v22: version v23: version v24: version v25: version v26: version v27: version v28: version v29"
     ": version v30: version v31: version v32: version v33: version v34: version v35: version v36: ver"
     "sion v37: version v38: version v39: version v40: version v41: version v42: version v43: version "
     "v44: version v45: version v46: version v47: version v48: version v49: version v50: version v51: "
     "version v52: version v53: version v54: version v55: version v56: version v57: version v58: versi"
     "on v59: version } a: system { v0: store v1: store v2: store v3: store v4: store v5: store v6: st"
     "ore v7: store v8: store v9: store v10: store v11: store v12: store v13: store v14: store v15: st"
     "ore v16: store v17: store v18: store v19: store v20: store v21: store v22: store v23: store v24:"
     " store v25: store v26: store v27: store v28: store v29: store v30: store v31: store v32: store v"
     "33: store v34: store v35: store v36: store v37: store v38: store v39: store v40: store v41: stor"
     "e v42: store v43: store v44: store v45: store v46: store v47: store v48: store v49: store v50: s"
     "tore v51: store v52: store v53: store v54: store v55: store v56: store v57: store v58: store v59"
     ": store } }",
     "1:3,1:15,1:27,1:39,1:51,1:63,1:75,1:87,1:99,1:111,1:123,1:135,1:148,1:161,1:174,1:187 Fields \"a"
     "\" conflict because subfields \"v0\" conflict because \"version\" and \"store\" are different fi"
     "elds and subfields \"v1\" conflict because \"version\" and \"store\" are different fields and su"
     "bfields \"v2\" conflict because \"version\" and \"store\" are different fields and subfields \"v"
     "3\" conflict because \"version\" and \"store\" are different fields and subfields \"v4\" conflic"
     "t because \"version\" and \"store\" are different fields and subfields \"v5\" conflict because \""
     "version\" and \"store\" are different fields and subfields \"v6\" conflict because \"version\" a"
     "nd \"store\" are different fields and subfields \"v7\" conflict because \"version\" and \"store\""
     " are different fields and subfields \"v8\" conflict because \"version\" and \"store\" are differ"
     "ent fields and subfields \"v9\" conflict because \"version\" and \"store\" are different fields "
     "and subfields \"v10\" conflict because \"version\" and \"store\" are different fields and subfie"
     "lds \"v11\" conflict because \"version\" and \"store\" are different fields and subfields \"v12\""
     " conflict because \"version\" and \"st.... Use different aliases on the fields to fetch both if "
     "this was intentional.\n"},
    {"{ a: webhooks { edges { v0: cursor v1: cursor v2: cursor v3: cursor v4: cursor v5: cursor v6: cu"
     "rsor v7: cursor v8: cursor v9: cursor v10: cursor v11: cursor v12: cursor v13: cursor v14: curso"
     "r v15: cursor v16: cursor v17: cursor v18: cursor v19: cursor v20: cursor v21: cursor v22: curso"
     "r v23: cursor v24: cursor v25: cursor v26: cursor v27: cursor v28: cursor v29: cursor } } a: web"
     "hooks { edges { v0: node { id } v1: node { id } v2: node { id } v3: node { id } v4: node { id } "
     "v5: node { id } v6: node { id } v7: node { id } v8: node { id } v9: node { id } v10: node { id }"
     " v11: node { id } v12: node { id } v13: node { id } v14: node { id } v15: node { id } v16: node "
     "{ id } v17: node { id } v18: node { id } v19: node { id } v20: node { id } v21: node { id } v22:"
     " node { id } v23: node { id } v24: node { id } v25: node { id } v26: node { id } v27: node { id "
     "} v28: node { id } v29: node { id } } } }",
     "1:3,1:25,1:36,1:47,1:58,1:69,1:80,1:91,1:102,1:113,1:124,1:135,1:147,1:159,1:171,1:183 Fields \""
     "a\" conflict because subfields \"edges\" conflict because subfields \"v0\" conflict because \"cu"
     "rsor\" and \"node\" are different fields and subfields \"v1\" conflict because \"cursor\" and \""
     "node\" are different fields and subfields \"v2\" conflict because \"cursor\" and \"node\" are di"
     "fferent fields and subfields \"v3\" conflict because \"cursor\" and \"node\" are different field"
     "s and subfields \"v4\" conflict because \"cursor\" and \"node\" are different fields and subfiel"
     "ds \"v5\" conflict because \"cursor\" and \"node\" are different fields and subfields \"v6\" con"
     "flict because \"cursor\" and \"node\" are different fields and subfields \"v7\" conflict because"
     " \"cursor\" and \"node\" are different fields and subfields \"v8\" conflict because \"cursor\" a"
     "nd \"node\" are different fields and subfields \"v9\" conflict because \"cursor\" and \"node\" a"
     "re different fields and subfields \"v10\" conflict because \"cursor\" and \"node\" are different"
     " fields and subfields \"v11\" conflict because \"cursor\" and \"node\" are different fields and "
     "subfields \"v12\" conflict because \"curso.... Use different aliases on the fields to fetch both"
     " if this was intentional.\n"},
};

/* UniqueInputFieldNamesRule (DateTime takes any literal, so objects reach it). */
static const struct vcase unique_input_field_names[] = {
    {"{ webhooks(receivedAfter: {a: 1, b: {a: 2}}) { edges { cursor } } }",
     "1:27 DateTime cannot represent a non-string value: {a: 1, b: {a: 2}}\n"},
    {"{ webhooks(receivedAfter: {a: 1, a: 2, b: {c: 1, c: 2}, b: 3}) { edges { cursor } } }",
     "1:27 DateTime cannot represent a non-string value: {a: 1, a: 2, b: {c: 1, c: 2}, b: 3}\n1:28,1:34 There can be only one input field named \"a\".\n1:44,1:50 There can be only one input field named \"c\".\n1:40,1:57 There can be only one input field named \"b\".\n"},
    {"{ webhooks(first: {a: 1, a: 2}) { edges { cursor } } }",
     "1:19 Int cannot represent non-integer value: {a: 1, a: 2}\n1:20,1:26 There can be only one input"
     " field named \"a\".\n"},
    {"{ webhooks(first: 1) { edges { cursor(x: {a: 1, a: 1}) } } }",
     "1:39 Unknown argument \"x\" on field \"WebhookEdge.cursor\".\n1:43,1:49 There can be only one in"
     "put field named \"a\".\n"},
};

/* MaxIntrospectionDepthRule (in 16.15's specifiedRules, as one of its recommendedRules). */
static const struct vcase max_introspection_depth[] = {
    {"{ __schema { types { fields { type { fields { name } } } } } }",
     ""},
    {"{ __schema { types { fields { type { fields { type { fields { name } } } } } } } }",
     "1:3 Maximum introspection depth exceeded\n"},
    {"{ __type(name: \"Query\") { fields { type { fields { type { fields { name } } } } } } }",
     "1:3 Maximum introspection depth exceeded\n"},
    {"{ __schema { types { ...F } } } fragment F on __Type { fields { type { ...F } } }",
     "1:3 Maximum introspection depth exceeded\n1:72 Cannot spread fragment \"F\" within itself.\n"},
    {"{ __schema { types { ...F } } } fragment F on __Type { name possibleTypes { name } inputFields {"
     " name } interfaces { name } }",
     ""},
    {"{ a: __type(name: \"Query\") { fields { type { fields { type { fields { name } } } } } } b: __ty"
     "pe(name: \"Query\") { fields { type { fields { type { fields { name } } } } } } }",
     "1:3 Maximum introspection depth exceeded\n1:88 Maximum introspection depth exceeded\n"},
    {"{ ...F } fragment F on Query { __schema { types { fields { type { fields { type { fields { name "
     "} } } } } } } }",
     "1:32 Maximum introspection depth exceeded\n"},
    {"{ __schema { queryType { ...F } } } fragment F on __Type { fields { type { ...G } } } fragment G"
     " on __Type { fields { type { ...F } } }",
     "1:3 Maximum introspection depth exceeded\n1:76,1:126 Cannot spread fragment \"F\" within itself "
     "via \"G\".\n"},
    {"{ __schema { types { ...F ...G } } } fragment F on __Type { fields { name } } fragment G on __Ty"
     "pe { fields { type { fields { type { fields { name } } } } } }",
     "1:3 Maximum introspection depth exceeded\n"},
};

/* Documents clients send, valid as they are. */
static const struct vcase valid_documents[] = {
    {"query ($first: Int = 10, $after: String, $source: String) { webhooks(first: $first, after: $afte"
     "r, source: $source) { edges { cursor node { id source eventType payload receivedAt } } pageInfo "
     "{ hasNextPage endCursor } } }",
     ""},
    {"{ sources { source count lastReceivedAt } system { version store uptimeMs eventLoops } }",
     ""},
    {"{ webhook(id: \"42\") { id source eventType payload receivedAt __typename } }",
     ""},
    {"mutation M($id: ID!) { deleteWebhook(id: $id) }",
     ""},
    {"query IntrospectionQuery { __schema { queryType { name } mutationType { name } subscriptionType "
     "{ name } types { ...FullType } directives { name description locations args { ...InputValue } } "
     "} } fragment FullType on __Type { kind name description fields(includeDeprecated: true) { name d"
     "escription args { ...InputValue } type { ...TypeRef } isDeprecated deprecationReason } inputFiel"
     "ds { ...InputValue } interfaces { ...TypeRef } enumValues(includeDeprecated: true) { name descri"
     "ption isDeprecated deprecationReason } possibleTypes { ...TypeRef } } fragment InputValue on __I"
     "nputValue { name description type { ...TypeRef } defaultValue } fragment TypeRef on __Type { kin"
     "d name ofType { kind name ofType { kind name ofType { kind name ofType { kind name ofType { kind"
     " name ofType { kind name ofType { kind name } } } } } } } }",
     ""},
    {"query Q($a: Int, $b: Boolean) { ...F @skip(if: $b) } fragment F on Query @include(if: $b) { webh"
     "ooks(first: $a) { edges { cursor } } }",
     "1:18,1:48 Variable \"$b\" of type \"Boolean\" used in position expecting type \"Boolean!\".\n1:1"
     "8,1:87 Variable \"$b\" of type \"Boolean\" used in position expecting type \"Boolean!\".\n1:74 D"
     "irective \"@include\" may not be used on FRAGMENT_DEFINITION.\n"},
    {"\"desc\" query Q($a: Int) { webhooks(first: $a) { edges { cursor } } }",
     ""},
};

/* FieldsOnCorrectTypeRule on interfaces and unions: "to use an inline fragment on" suggestions in V8's
 * sort order. */
static const struct vcase pets_fields_on_correct_type[] = {
    {"{ pet { name meow } }",
     "1:14 Cannot query field \"meow\" on type \"Pet\".\n"},
    {"{ pet { nickname } }",
     "1:9 Cannot query field \"nickname\" on type \"Pet\". Did you mean to use an inline fragment on \""
     "Cat\" or \"Dog\"?\n"},
    {"{ being { nickname } }",
     "1:11 Cannot query field \"nickname\" on type \"Being\". Did you mean to use an inline fragment o"
     "n \"Cat\" or \"Dog\"?\n"},
    {"{ being { iq } }",
     "1:11 Cannot query field \"iq\" on type \"Being\". Did you mean to use an inline fragment on \"Al"
     "ien\" or \"Human\"?\n"},
    {"{ catOrDog { name } }",
     "1:14 Cannot query field \"name\" on type \"CatOrDog\". Did you mean to use an inline fragment on"
     " \"Being\", \"Pet\", \"Cat\", or \"Dog\"?\n"},
    {"{ catOrDog { nickname __typename } }",
     "1:14 Cannot query field \"nickname\" on type \"CatOrDog\". Did you mean to use an inline fragmen"
     "t on \"Cat\" or \"Dog\"?\n"},
    {"{ dogOrHuman { name barks } }",
     "1:16 Cannot query field \"name\" on type \"DogOrHuman\". Did you mean to use an inline fragment "
     "on \"Being\", \"Human\", \"Pet\", or \"Dog\"?\n1:21 Cannot query field \"barks\" on type \"DogOr"
     "Human\". Did you mean to use an inline fragment on \"Dog\"?\n"},
    {"{ humanOrAlien { iq name } }",
     "1:18 Cannot query field \"iq\" on type \"HumanOrAlien\". Did you mean to use an inline fragment "
     "on \"Alien\" or \"Human\"?\n1:21 Cannot query field \"name\" on type \"HumanOrAlien\". Did you m"
     "ean to use an inline fragment on \"Being\", \"Alien\", or \"Human\"?\n"},
    {"{ pet { ... on Dog { barks meows } ... on Cat { meows barkz } } }",
     "1:28 Cannot query field \"meows\" on type \"Dog\".\n1:55 Cannot query field \"barkz\" on type \""
     "Cat\".\n"},
    {"{ dog { nam nme nickName } }",
     "1:9 Cannot query field \"nam\" on type \"Dog\". Did you mean \"name\"?\n1:13 Cannot query field "
     "\"nme\" on type \"Dog\". Did you mean \"name\"?\n1:17 Cannot query field \"nickName\" on type \""
     "Dog\". Did you mean \"nickname\" or \"name\"?\n"},
    {"{ human { pets { nickname } relatives { iq } } }",
     "1:18 Cannot query field \"nickname\" on type \"Pet\". Did you mean to use an inline fragment on "
     "\"Cat\" or \"Dog\"?\n"},
};

/* PossibleFragmentSpreadsRule with interfaces and unions. */
static const struct vcase pets_possible_fragment_spreads[] = {
    {"{ dog { ...dogFragment } } fragment dogFragment on Dog { barks }",
     ""},
    {"{ dog { ...petFragment } } fragment petFragment on Pet { name }",
     ""},
    {"{ pet { ...dogFragment } } fragment dogFragment on Dog { barks }",
     ""},
    {"{ catOrDog { ...dogFragment } } fragment dogFragment on Dog { barks }",
     ""},
    {"{ dog { ...catOrDogFragment } } fragment catOrDogFragment on CatOrDog { __typename }",
     ""},
    {"{ pet { ...catOrDogFragment } } fragment catOrDogFragment on CatOrDog { __typename }",
     ""},
    {"{ catOrDog { ...petFragment } } fragment petFragment on Pet { name }",
     ""},
    {"{ being { ...pet } } fragment pet on Pet { name }",
     ""},
    {"{ dogOrHuman { ...catOrDog } } fragment catOrDog on CatOrDog { __typename }",
     ""},
    {"{ dog { ...catFragment } } fragment catFragment on Cat { meows }",
     "1:9 Fragment \"catFragment\" cannot be spread here as objects of type \"Dog\" can never be of ty"
     "pe \"Cat\".\n"},
    {"{ dog { ... on Cat { meows } } }",
     "1:9 Fragment cannot be spread here as objects of type \"Dog\" can never be of type \"Cat\".\n"},
    {"{ dog { ...humanOrAlien } } fragment humanOrAlien on HumanOrAlien { __typename }",
     "1:9 Fragment \"humanOrAlien\" cannot be spread here as objects of type \"Dog\" can never be of t"
     "ype \"HumanOrAlien\".\n"},
    {"{ human { ...pet } } fragment pet on Pet { name }",
     "1:11 Fragment \"pet\" cannot be spread here as objects of type \"Human\" can never be of type \""
     "Pet\".\n"},
    {"{ catOrDog { ...humanFragment } } fragment humanFragment on Human { name }",
     "1:14 Fragment \"humanFragment\" cannot be spread here as objects of type \"CatOrDog\" can never "
     "be of type \"Human\".\n"},
    {"{ catOrDog { ... on Human { name } } }",
     "1:14 Fragment cannot be spread here as objects of type \"CatOrDog\" can never be of type \"Human"
     "\".\n"},
    {"{ humanOrAlien { ...pet } } fragment pet on Pet { name }",
     "1:18 Fragment \"pet\" cannot be spread here as objects of type \"HumanOrAlien\" can never be of "
     "type \"Pet\".\n"},
    {"{ humanOrAlien { ... on Pet { name } } }",
     "1:18 Fragment cannot be spread here as objects of type \"HumanOrAlien\" can never be of type \"P"
     "et\".\n"},
    {"{ humanOrAlien { ...catOrDog } } fragment catOrDog on CatOrDog { __typename }",
     "1:18 Fragment \"catOrDog\" cannot be spread here as objects of type \"HumanOrAlien\" can never b"
     "e of type \"CatOrDog\".\n"},
    {"{ pet { ... on Human { iq } ... on Alien { numEyes } } }",
     "1:9 Fragment cannot be spread here as objects of type \"Pet\" can never be of type \"Human\".\n1"
     ":29 Fragment cannot be spread here as objects of type \"Pet\" can never be of type \"Alien\".\n"},
    {"{ dog { ... on DogOrHuman { __typename } ... on HumanOrAlien { __typename } } }",
     "1:42 Fragment cannot be spread here as objects of type \"Dog\" can never be of type \"HumanOrAli"
     "en\".\n"},
};

/* ScalarLeafsRule and FragmentsOnCompositeTypesRule with enums and input objects. */
static const struct vcase pets_leafs_and_conditions[] = {
    {"{ dog { ... on DogCommand { x } } }",
     "1:16 Fragment cannot condition on non composite type \"DogCommand\".\n"},
    {"{ dog { ...F } } fragment F on FurColor { x }",
     "1:32 Fragment \"F\" cannot condition on non composite type \"FurColor\".\n"},
    {"{ dog { ... on ComplexInput { x } } }",
     "1:16 Fragment cannot condition on non composite type \"ComplexInput\".\n"},
    {"{ dog { ...F } } fragment F on ComplexInput { x }",
     "1:32 Fragment \"F\" cannot condition on non composite type \"ComplexInput\".\n"},
    {"{ cat { furColor { x } } }",
     "1:18 Field \"furColor\" must not have a selection since type \"FurColor\" has no subfields.\n"},
    {"{ human { relatives } }",
     "1:11 Field \"relatives\" of type \"[Human]!\" must have a selection of subfields. Did you mean \""
     "relatives { ... }\"?\n"},
    {"{ catOrDog }",
     "1:3 Field \"catOrDog\" of type \"CatOrDog\" must have a selection of subfields. Did you mean \"c"
     "atOrDog { ... }\"?\n"},
};

/* ValuesOfCorrectTypeRule with enums (parseLiteral's suggestions) and input objects. */
static const struct vcase pets_values_of_correct_type[] = {
    {"{ complicatedArgs { enumArgField(enumArg: BROWN) } }",
     ""},
    {"{ complicatedArgs { enumArgField(enumArg: brown) } }",
     "1:43 Value \"brown\" does not exist in \"FurColor\" enum. Did you mean the enum value \"BROWN\"?"
     "\n"},
    {"{ complicatedArgs { enumArgField(enumArg: \"BROWN\") } }",
     "1:43 Enum \"FurColor\" cannot represent non-enum value: \"BROWN\". Did you mean the enum value \""
     "BROWN\"?\n"},
    {"{ complicatedArgs { enumArgField(enumArg: 1) } }",
     "1:43 Enum \"FurColor\" cannot represent non-enum value: 1.\n"},
    {"{ complicatedArgs { enumArgField(enumArg: BLAK) } }",
     "1:43 Value \"BLAK\" does not exist in \"FurColor\" enum. Did you mean the enum value \"BLACK\"?\n"},
    {"{ complicatedArgs { enumArgField(enumArg: null) } }",
     ""},
    {"{ complicatedArgs { enumArgField(enumArg: [BROWN]) } }",
     "1:43 Enum \"FurColor\" cannot represent non-enum value: [BROWN]. Did you mean the enum value \"B"
     "ROWN\"?\n"},
    {"{ complicatedArgs { enumArgField(enumArg: {a: BROWN}) } }",
     "1:43 Enum \"FurColor\" cannot represent non-enum value: {a: BROWN}. Did you mean the enum value "
     "\"BROWN\"?\n"},
    {"{ dog { doesKnowCommand(dogCommand: SITT) } }",
     "1:37 Value \"SITT\" does not exist in \"DogCommand\" enum. Did you mean the enum value \"SIT\"?\n"},
    {"{ dog { doesKnowCommand(dogCommand: \"sit\") } }",
     "1:37 Enum \"DogCommand\" cannot represent non-enum value: \"sit\". Did you mean the enum value \""
     "SIT\"?\n"},
    {"{ complicatedArgs { complexArgField(complexArg: { requiredField: true }) } }",
     ""},
    {"{ complicatedArgs { complexArgField(complexArg: { intField: 4 }) } }",
     "1:49 Field \"ComplexInput.requiredField\" of required type \"Boolean!\" was not provided.\n"},
    {"{ complicatedArgs { complexArgField(complexArg: {}) } }",
     "1:49 Field \"ComplexInput.requiredField\" of required type \"Boolean!\" was not provided.\n"},
    {"{ complicatedArgs { complexArgField(complexArg: { requiredField: true, nonNullField: null }) } }",
     "1:86 Expected value of type \"Boolean!\", found null.\n"},
    {"{ complicatedArgs { complexArgField(complexArg: { requiredField: true, unknownField: \"value\" }"
     ") } }",
     "1:72 Field \"unknownField\" is not defined by type \"ComplexInput\".\n"},
    {"{ complicatedArgs { complexArgField(complexArg: { requiredField: true, intfield: 1, stringfield:"
     " \"x\", booleanfeild: true }) } }",
     "1:72 Field \"intfield\" is not defined by type \"ComplexInput\". Did you mean \"intField\" or \""
     "stringField\"?\n1:85 Field \"stringfield\" is not defined by type \"ComplexInput\". Did you mean"
     " \"stringField\", \"intField\", or \"stringListField\"?\n1:103 Field \"booleanfeild\" is not def"
     "ined by type \"ComplexInput\". Did you mean \"booleanField\"?\n"},
    {"{ complicatedArgs { complexArgField(complexArg: { stringListField: [\"one\", 2], requiredField: "
     "true }) } }",
     "1:76 String cannot represent a non string value: 2\n"},
    {"{ complicatedArgs { complexArgField(complexArg: { requiredField: true, stringListField: \"one\" "
     "}) } }",
     ""},
    {"{ complicatedArgs { complexArgField(complexArg: { requiredField: true, stringListField: [[\"one\""
     "]] }) } }",
     "1:90 String cannot represent a non string value: [\"one\"]\n"},
    {"{ complicatedArgs { complexArgField(complexArg: [{ requiredField: true }]) } }",
     "1:49 Expected value of type \"ComplexInput\", found [{requiredField: true}].\n"},
    {"{ complicatedArgs { complexArgField(complexArg: \"x\") } }",
     "1:49 Expected value of type \"ComplexInput\", found \"x\".\n"},
    {"{ complicatedArgs { complexArgField(complexArg: { requiredField: true, requiredField: false }) }"
     " }",
     "1:51,1:72 There can be only one input field named \"requiredField\".\n"},
    {"{ complicatedArgs { complexArgField(complexArg: { requiredField: 1, intField: \"x\", stringField"
     ": 1, booleanField: \"x\" }) } }",
     "1:66 Boolean cannot represent a non boolean value: 1\n1:79 Int cannot represent non-integer valu"
     "e: \"x\"\n1:97 String cannot represent a non string value: 1\n1:114 Boolean cannot represent a n"
     "on boolean value: \"x\"\n"},
    {"{ complicatedArgs { stringListArgField(stringListArg: [\"one\", null, \"two\"]) } }",
     ""},
    {"{ complicatedArgs { stringListArgField(stringListArg: [1, \"2\", true]) } }",
     "1:56 String cannot represent a non string value: 1\n1:64 String cannot represent a non string va"
     "lue: true\n"},
    {"{ complicatedArgs { stringListNonNullArgField(stringListNonNullArg: [\"x\", null]) } }",
     "1:75 Expected value of type \"String!\", found null.\n"},
    {"{ complicatedArgs { nonNullIntArgField(nonNullIntArg: null) } }",
     "1:55 Expected value of type \"Int!\", found null.\n"},
    {"{ complicatedArgs { multipleReqs(req1: \"one\", req2: \"two\") } }",
     "1:40 Int cannot represent non-integer value: \"one\"\n1:53 Int cannot represent non-integer valu"
     "e: \"two\"\n"},
    {"{ complicatedArgs { multipleReqs } }",
     "1:21 Field \"multipleReqs\" argument \"req1\" of type \"Int!\" is required, but it was not provi"
     "ded.\n1:21 Field \"multipleReqs\" argument \"req2\" of type \"Int!\" is required, but it was not"
     " provided.\n"},
    {"{ complicatedArgs { idArgField(idArg: 1.0) booleanArgField(booleanArg: 0) intArgField(intArg: 1."
     "0) } }",
     "1:39 ID cannot represent a non-string and non-integer value: 1.0\n1:72 Boolean cannot represent "
     "a non boolean value: 0\n1:95 Int cannot represent non-integer value: 1.0\n"},
    {"query ($a: ComplexInput = {intField: 1}) { complicatedArgs { complexArgField(complexArg: $a) } }",
     "1:27 Field \"ComplexInput.requiredField\" of required type \"Boolean!\" was not provided.\n"},
    {"query ($a: FurColor = BROWNN, $b: [FurColor!] = [BLACK, null], $c: DogCommand = \"SIT\") { compl"
     "icatedArgs { enumArgField(enumArg: $a) } dog { doesKnowCommand(dogCommand: $c) } }",
     "1:23 Value \"BROWNN\" does not exist in \"FurColor\" enum. Did you mean the enum value \"BROWN\""
     "?\n1:57 Expected value of type \"FurColor!\", found null.\n1:81 Enum \"DogCommand\" cannot repre"
     "sent non-enum value: \"SIT\". Did you mean the enum value \"SIT\"?\n1:31 Variable \"$b\" is neve"
     "r used.\n"},
};

/* VariablesInAllowedPositionRule with lists, input objects and defaults. */
static const struct vcase pets_variables_in_allowed_position[] = {
    {"query ($x: Boolean) { complicatedArgs { booleanArgField(booleanArg: $x) } }",
     ""},
    {"query ($x: Int) { complicatedArgs { nonNullIntArgField(nonNullIntArg: $x) } }",
     "1:8,1:71 Variable \"$x\" of type \"Int\" used in position expecting type \"Int!\".\n"},
    {"query ($x: Int = 1) { complicatedArgs { nonNullIntArgField(nonNullIntArg: $x) } }",
     ""},
    {"query ($x: [String!]) { complicatedArgs { stringListArgField(stringListArg: $x) } }",
     ""},
    {"query ($x: String) { complicatedArgs { stringListNonNullArgField(stringListNonNullArg: [$x]) } }",
     "1:8,1:89 Variable \"$x\" of type \"String\" used in position expecting type \"String!\".\n"},
    {"query ($x: String!) { complicatedArgs { stringListArgField(stringListArg: $x) } }",
     "1:8,1:75 Variable \"$x\" of type \"String!\" used in position expecting type \"[String]\".\n"},
    {"query ($x: [String]) { complicatedArgs { stringListNonNullArgField(stringListNonNullArg: $x) } }",
     "1:8,1:90 Variable \"$x\" of type \"[String]\" used in position expecting type \"[String!]\".\n"},
    {"query ($x: Boolean) { complicatedArgs { complexArgField(complexArg: {requiredField: $x}) } }",
     "1:8,1:85 Variable \"$x\" of type \"Boolean\" used in position expecting type \"Boolean!\".\n"},
    {"query ($x: Boolean) { complicatedArgs { complexArgField(complexArg: {nonNullField: $x, requiredF"
     "ield: true}) } }",
     ""},
    {"query ($x: Boolean) { dog { isHouseTrained(atOtherHomes: $x) } }",
     ""},
    {"query ($x: DogCommand) { complicatedArgs { enumArgField(enumArg: $x) } }",
     "1:8,1:66 Variable \"$x\" of type \"DogCommand\" used in position expecting type \"FurColor\".\n"},
    {"query ($x: CatOrDog) { complicatedArgs { enumArgField(enumArg: $x) } }",
     "1:12 Variable \"$x\" cannot be non-input type \"CatOrDog\".\n1:8,1:64 Variable \"$x\" of type \""
     "CatOrDog\" used in position expecting type \"FurColor\".\n"},
    {"query ($x: [[String]]) { complicatedArgs { stringListArgField(stringListArg: $x) } }",
     "1:8,1:78 Variable \"$x\" of type \"[[String]]\" used in position expecting type \"[String]\".\n"},
    {"query ($boolVar: Boolean = false) { dog @include(if: $boolVar) { name } }",
     ""},
};

/* OverlappingFieldsCanBeMergedRule with parents that exclude each other. */
static const struct vcase pets_overlapping_fields[] = {
    {"{ pet { ... on Dog { name: nickname } ... on Cat { name } } }",
     ""},
    {"{ catOrDog { ... on Dog { x: barks } ... on Cat { x: meows } } }",
     ""},
    {"{ catOrDog { ... on Dog { x: barks } ... on Cat { x: furColor } } }",
     "1:27,1:51 Fields \"x\" conflict because they return conflicting types \"Boolean\" and \"FurColor"
     "\". Use different aliases on the fields to fetch both if this was intentional.\n"},
    {"{ human { ... on Human { x: name(surname: true) } x: name(surname: false) } }",
     "1:26,1:51 Fields \"x\" conflict because they have differing arguments. Use different aliases on "
     "the fields to fetch both if this was intentional.\n"},
    {"{ pet { ... on Being { x: name } ... on Pet { x: nickname } } }",
     "1:24,1:47 Fields \"x\" conflict because \"name\" and \"nickname\" are different fields. Use diff"
     "erent aliases on the fields to fetch both if this was intentional.\n1:47 Cannot query field \"ni"
     "ckname\" on type \"Pet\". Did you mean to use an inline fragment on \"Cat\" or \"Dog\"?\n"},
    {"{ dogOrHuman { ... on Dog { x: name } ... on Human { x: pets { name } } } }",
     "1:29,1:54 Fields \"x\" conflict because they return conflicting types \"String\" and \"[Pet]\". "
     "Use different aliases on the fields to fetch both if this was intentional.\n"},
    {"{ dogOrHuman { ... on Human { x: relatives { name } } ... on Human { x: pets { name } } } }",
     "1:31,1:70 Fields \"x\" conflict because \"relatives\" and \"pets\" are different fields. Use dif"
     "ferent aliases on the fields to fetch both if this was intentional.\n"},
    {"{ humanOrAlien { ... on Human { x: relatives { name } } ... on Alien { x: iq } } }",
     "1:33,1:72 Fields \"x\" conflict because they return conflicting types \"[Human]!\" and \"Int\". "
     "Use different aliases on the fields to fetch both if this was intentional.\n"},
    {"{ human { relatives { name } } human { relatives { name: iq } } }",
     "1:3,1:11,1:23,1:32,1:40,1:52 Fields \"human\" conflict because subfields \"relatives\" conflict "
     "because subfields \"name\" conflict because \"name\" and \"iq\" are different fields. Use differ"
     "ent aliases on the fields to fetch both if this was intentional.\n"},
    {"{ being { ... on Human { pets { ... on Dog { x: name } } } ... on Human { pets { ... on Cat { x:"
     " meows } } } } }",
     "1:26,1:46,1:75,1:95 Fields \"pets\" conflict because subfields \"x\" conflict because they retur"
     "n conflicting types \"String\" and \"Boolean\". Use different aliases on the fields to fetch bot"
     "h if this was intentional.\n"},
    {"{ dog { doesKnowCommand(dogCommand: SIT) doesKnowCommand(dogCommand: HEEL) } }",
     "1:9,1:42 Fields \"doesKnowCommand\" conflict because they have differing arguments. Use differen"
     "t aliases on the fields to fetch both if this was intentional.\n"},
    {"{ dog { doesKnowCommand(dogCommand: SIT) doesKnowCommand(dogCommand: SIT) } }",
     ""},
    {"{ dog { isHouseTrained(atOtherHomes: true) isHouseTrained } }",
     "1:9,1:44 Fields \"isHouseTrained\" conflict because they have differing arguments. Use different"
     " aliases on the fields to fetch both if this was intentional.\n"},
    {"{ catOrDog { ...A ...B } } fragment A on Dog { x: barks } fragment B on Cat { x: furColor }",
     "1:48,1:79 Fields \"x\" conflict because they return conflicting types \"Boolean\" and \"FurColor"
     "\". Use different aliases on the fields to fetch both if this was intentional.\n"},
    {"{ humanOrAlien { ...A ... on Alien { ...B } } } fragment A on Human { x: relatives { name } } fr"
     "agment B on Alien { x: numEyes }",
     "1:71,1:117 Fields \"x\" conflict because they return conflicting types \"[Human]!\" and \"Int\"."
     " Use different aliases on the fields to fetch both if this was intentional.\n"},
};

Test(gq_validate, executable_definitions)
{
    RUN(hk_gq_schema(), executable_definitions);
}

Test(gq_validate, unique_operation_names)
{
    RUN(hk_gq_schema(), unique_operation_names);
}

Test(gq_validate, lone_anonymous_operation)
{
    RUN(hk_gq_schema(), lone_anonymous_operation);
}

Test(gq_validate, known_type_names)
{
    RUN(hk_gq_schema(), known_type_names);
}

Test(gq_validate, fragments_on_composite_types)
{
    RUN(hk_gq_schema(), fragments_on_composite_types);
}

Test(gq_validate, variables_are_input_types)
{
    RUN(hk_gq_schema(), variables_are_input_types);
}

Test(gq_validate, scalar_leafs)
{
    RUN(hk_gq_schema(), scalar_leafs);
}

Test(gq_validate, fields_on_correct_type)
{
    RUN(hk_gq_schema(), fields_on_correct_type);
}

Test(gq_validate, unique_fragment_names)
{
    RUN(hk_gq_schema(), unique_fragment_names);
}

Test(gq_validate, known_fragment_names)
{
    RUN(hk_gq_schema(), known_fragment_names);
}

Test(gq_validate, no_unused_fragments)
{
    RUN(hk_gq_schema(), no_unused_fragments);
}

Test(gq_validate, possible_fragment_spreads)
{
    RUN(hk_gq_schema(), possible_fragment_spreads);
}

Test(gq_validate, no_fragment_cycles)
{
    RUN(hk_gq_schema(), no_fragment_cycles);
}

Test(gq_validate, unique_variable_names)
{
    RUN(hk_gq_schema(), unique_variable_names);
}

Test(gq_validate, no_undefined_variables)
{
    RUN(hk_gq_schema(), no_undefined_variables);
}

Test(gq_validate, no_unused_variables)
{
    RUN(hk_gq_schema(), no_unused_variables);
}

Test(gq_validate, known_directives)
{
    RUN(hk_gq_schema(), known_directives);
}

Test(gq_validate, unique_directives_per_location)
{
    RUN(hk_gq_schema(), unique_directives_per_location);
}

Test(gq_validate, known_argument_names)
{
    RUN(hk_gq_schema(), known_argument_names);
}

Test(gq_validate, unique_argument_names)
{
    RUN(hk_gq_schema(), unique_argument_names);
}

Test(gq_validate, values_of_correct_type)
{
    RUN(hk_gq_schema(), values_of_correct_type);
}

Test(gq_validate, provided_required_arguments)
{
    RUN(hk_gq_schema(), provided_required_arguments);
}

Test(gq_validate, variables_in_allowed_position)
{
    RUN(hk_gq_schema(), variables_in_allowed_position);
}

Test(gq_validate, overlapping_fields_can_be_merged)
{
    RUN(hk_gq_schema(), overlapping_fields_can_be_merged);
}

Test(gq_validate, unique_input_field_names)
{
    RUN(hk_gq_schema(), unique_input_field_names);
}

Test(gq_validate, max_introspection_depth)
{
    RUN(hk_gq_schema(), max_introspection_depth);
}

Test(gq_validate, valid_documents)
{
    RUN(hk_gq_schema(), valid_documents);
}

Test(gq_validate, pets_fields_on_correct_type)
{
    RUN(&pets_schema, pets_fields_on_correct_type);
}

Test(gq_validate, pets_possible_fragment_spreads)
{
    RUN(&pets_schema, pets_possible_fragment_spreads);
}

Test(gq_validate, pets_leafs_and_conditions)
{
    RUN(&pets_schema, pets_leafs_and_conditions);
}

Test(gq_validate, pets_values_of_correct_type)
{
    RUN(&pets_schema, pets_values_of_correct_type);
}

Test(gq_validate, pets_variables_in_allowed_position)
{
    RUN(&pets_schema, pets_variables_in_allowed_position);
}

Test(gq_validate, pets_overlapping_fields)
{
    RUN(&pets_schema, pets_overlapping_fields);
}

/* graphql-js stops at its 101st error with one more: "Too many validation
 * errors". struct gq_errors holds GQ_ERRORS_MAX; when that is not more than
 * graphql-js's 100, the last place goes to the final error. */
Test(gq_validate, too_many_errors)
{
    struct hk_buf doc = HK_BUF_INIT, want = HK_BUF_INIT;
    unsigned keep = GQ_ERRORS_MAX > 100 ? 100 : GQ_ERRORS_MAX - 1, col = 3;
    hk_buf_puts(&doc, "{");
    for (unsigned i = 0; i < 150; i++) {
        hk_buf_printf(&doc, " a%u", i);
        if (i < keep)
            hk_buf_printf(&want, "1:%u Cannot query field \"a%u\" on type \"Query\".\n", col, i);
        col += (unsigned)snprintf(NULL, 0, "a%u", i) + 1;
    }
    hk_buf_puts(&doc, " }");
    hk_buf_puts(&want, " Too many validation errors, error limit reached. Validation aborted.\n");
    hk_buf_putc(&doc, '\0');
    hk_buf_putc(&want, '\0');
    char *got = validate(hk_gq_schema(), doc.p, NULL, true);
    cr_expect_str_eq(got, want.p);
    free(got);
    hk_buf_free(&doc);
    hk_buf_free(&want);
}

/* ---- introspection off (NoSchemaIntrospectionCustomRule, after the spec's) ---- */

static const struct vcase introspection_off[] = {
    {"{ system { version } webhooks { __typename } }", ""},
    {"{ __schema { types { name } } }",
     "1:3 GraphQL introspection has been disabled, but the requested query contained the field \"__schema\".\n"
     "1:14 GraphQL introspection has been disabled, but the requested query contained the field \"types\".\n"},
    {"{ __type(name: \"Query\") { name fields { name type { name } } } system { version } }",
     "1:3 GraphQL introspection has been disabled, but the requested query contained the field \"__type\".\n"
     "1:32 GraphQL introspection has been disabled, but the requested query contained the field \"fields\".\n"
     "1:46 GraphQL introspection has been disabled, but the requested query contained the field \"type\".\n"},
    {"{ ...F } fragment F on Query { __schema { queryType { name } } }",
     "1:32 GraphQL introspection has been disabled, but the requested query contained the field \"__schema\".\n"
     "1:43 GraphQL introspection has been disabled, but the requested query contained the field \"queryType\".\n"},
    /* hookd's errors come after the specification's (graphql-js would
     * interleave a custom rule's in document order). */
    {"{ __schema { types { name } } nope }",
     "1:31 Cannot query field \"nope\" on type \"Query\".\n"
     "1:3 GraphQL introspection has been disabled, but the requested query contained the field \"__schema\".\n"
     "1:14 GraphQL introspection has been disabled, but the requested query contained the field \"types\".\n"},
};

Test(gq_validate, introspection_off)
{
    for (size_t i = 0; i < N(introspection_off); i++) {
        char *got = validate(hk_gq_schema(), introspection_off[i].doc, NULL, false);
        cr_expect_str_eq(got, introspection_off[i].want, "case %zu", i);
        free(got);
        /* and with it on, the same documents are valid but for "nope" */
        got = validate(hk_gq_schema(), introspection_off[i].doc, NULL, true);
        cr_expect_str_eq(got, i == 4 ? "1:31 Cannot query field \"nope\" on type \"Query\".\n" : "", "case %zu", i);
        free(got);
    }
}

/* ---- hookd's limits: depth and cost --------------------------------------------- */

static const char introspection_query[] =
    "query IntrospectionQuery { __schema { queryType { name } mutationType { name } subscriptionType { name } "
    "types { ...FullType } directives { name description locations args(includeDeprecated: true) { ...InputValue } "
    "} } } fragment FullType on __Type { kind name description specifiedByURL fields(includeDeprecated: true) { "
    "name description args(includeDeprecated: true) { ...InputValue } type { ...TypeRef } isDeprecated "
    "deprecationReason } inputFields(includeDeprecated: true) { ...InputValue } interfaces { ...TypeRef } "
    "enumValues(includeDeprecated: true) { name description isDeprecated deprecationReason } possibleTypes { "
    "...TypeRef } } fragment InputValue on __InputValue { name description type { ...TypeRef } defaultValue "
    "isDeprecated deprecationReason } fragment TypeRef on __Type { kind name ofType { name kind ofType { name kind "
    "ofType { name kind ofType { name kind ofType { name kind ofType { name kind ofType { name kind ofType { name "
    "kind ofType { name kind } } } } } } } } } }";

Test(gq_validate, depth_limit)
{
    struct gq_limits lim = GQ_LIMITS_DEFAULT;
    lim.max_depth = 3;
    char *got = validate(hk_gq_schema(), "{ system { version } webhooks { edges { cursor } } }", &lim, true);
    cr_expect_str_eq(got, "");
    free(got);
    /* the error points at the first field past the limit */
    got = validate(hk_gq_schema(), "{ system { version } webhooks { edges { cursor node { id } } } }", &lim, true);
    cr_expect_str_eq(got, "1:55 The operation nests fields 4 levels deep, more than the limit of 3.\n");
    free(got);
    /* fragments expanded: the field is in one */
    got = validate(hk_gq_schema(),
                   "query Q { ...F } fragment F on Query { webhooks { ...E } }\n"
                   "fragment E on WebhookConnection { pageInfo { endCursor } edges { node { id } } }",
                   &lim, true);
    cr_expect_str_eq(got, "2:73 The operation nests fields 4 levels deep, more than the limit of 3.\n");
    free(got);
    /* each operation on its own */
    got = validate(hk_gq_schema(),
                   "query A { webhooks { edges { node { id } } } } query B { system { version } }"
                   " query C { sources { source } webhooks { edges { node { source } } } }",
                   &lim, true);
    cr_expect_str_eq(got, "1:37 The operation nests fields 4 levels deep, more than the limit of 3.\n"
                          "1:134 The operation nests fields 4 levels deep, more than the limit of 3.\n");
    free(got);
    lim.max_depth = 4;
    got = validate(hk_gq_schema(), "{ webhooks { edges { node { id } } } }", &lim, true);
    cr_expect_str_eq(got, "");
    free(got);
    /* 0: no limit */
    lim.max_depth = 0;
    got = validate(hk_gq_schema(), "{ webhooks { edges { node { id } } } }", &lim, true);
    cr_expect_str_eq(got, "");
    free(got);
}

/* Introspection counts one level: GraphiQL's introspection query nests 15
 * deep, and graphql-js's MaxIntrospectionDepthRule and the cost bound it. */
Test(gq_validate, introspection_within_limits)
{
    const struct gq_limits lim = GQ_LIMITS_DEFAULT;
    char *got = validate(hk_gq_schema(), introspection_query, &lim, true);
    cr_expect_str_eq(got, "");
    free(got);
    struct hk_buf doc = HK_BUF_INIT;
    hk_buf_puts(&doc, "{ __type(name: \"Query\") {");
    for (int i = 0; i < 100; i++)
        hk_buf_puts(&doc, " ofType {");
    hk_buf_puts(&doc, " name");
    for (int i = 0; i < 101; i++)
        hk_buf_puts(&doc, " }");
    hk_buf_puts(&doc, " }");
    hk_buf_putc(&doc, '\0');
    got = validate(hk_gq_schema(), doc.p, &lim, true);
    cr_expect_str_eq(got, "");
    free(got);
    struct gq_limits small = lim;
    small.max_fields = 100;
    got = validate(hk_gq_schema(), doc.p, &small, true);
    cr_expect_str_eq(got, "1:1 The operation selects 102 fields once fragments are expanded, more than the limit of "
                          "100.\n");
    free(got);
    hk_buf_free(&doc);
}

Test(gq_validate, cost_limit)
{
    const struct gq_limits lim = GQ_LIMITS_DEFAULT;
    struct hk_buf doc = HK_BUF_INIT;
    /* 100 times 5 fields: at the limit */
    hk_buf_puts(&doc, "{");
    for (int i = 0; i < 100; i++)
        hk_buf_printf(&doc, " a%d: webhooks { edges { node { id source } } }", i);
    hk_buf_puts(&doc, " }");
    hk_buf_putc(&doc, '\0');
    char *got = validate(hk_gq_schema(), doc.p, &lim, true);
    cr_expect_str_eq(got, "");
    free(got);
    doc.len -= 3;
    hk_buf_puts(&doc, " __typename }");
    hk_buf_putc(&doc, '\0');
    got = validate(hk_gq_schema(), doc.p, &lim, true);
    cr_expect_str_eq(got, "1:1 The operation selects 501 fields once fragments are expanded, more than the limit of "
                          "500.\n");
    free(got);
    hk_buf_free(&doc);

    /* Fragments spread twice at each of 40 levels: counted once per level,
     * not walked 2^40 times; the count saturates. */
    struct hk_buf frag = HK_BUF_INIT;
    hk_buf_puts(&frag, "query Q { ...F0 }");
    for (int i = 0; i < 40; i++)
        hk_buf_printf(&frag, " fragment F%d on Query { ...F%d ...F%d }", i, i + 1, i + 1);
    hk_buf_puts(&frag, " fragment F40 on Query { a: __typename b: __typename }");
    hk_buf_putc(&frag, '\0');
    got = validate(hk_gq_schema(), frag.p, &lim, true);
    cr_expect_str_eq(got, "1:1 The operation selects 4294967295 fields once fragments are expanded, more than the "
                          "limit of 500.\n");
    free(got);
    hk_buf_free(&frag);

    /* 8 copies of 80 fields through fragments */
    got = validate(hk_gq_schema(),
                   "query A { system { version } } query B { ...F } fragment F on Query { ...G ...G }"
                   " fragment G on Query { ...H ...H } fragment H on Query { ...I ...I } fragment I on Query {"
                   " a0: system { version } a1: system { version } a2: system { version } a3: system { version }"
                   " a4: system { version } a5: system { version } a6: system { version } a7: system { version }"
                   " a8: system { version } a9: system { version } a10: system { version } a11: system { version }"
                   " a12: system { version } a13: system { version } a14: system { version } a15: system { version }"
                   " a16: system { version } a17: system { version } a18: system { version } a19: system { version }"
                   " a20: system { version } a21: system { version } a22: system { version } a23: system { version }"
                   " a24: system { version } a25: system { version } a26: system { version } a27: system { version }"
                   " a28: system { version } a29: system { version } a30: system { version } a31: system { version }"
                   " }",
                   &lim, true);
    cr_expect_str_eq(got, "1:32 The operation selects 512 fields once fragments are expanded, more than the limit of "
                          "500.\n");
    free(got);
}

/* The limits are checked on valid documents only (an invalid one is already
 * refused, and may have cycles), and not at all without limits. */
Test(gq_validate, limits_after_the_rules)
{
    struct gq_limits lim = GQ_LIMITS_DEFAULT;
    lim.max_depth = 2;
    lim.max_fields = 2;
    char *got = validate(hk_gq_schema(), "{ nope webhooks { edges { node { id } } } }", &lim, true);
    cr_expect_str_eq(got, "1:3 Cannot query field \"nope\" on type \"Query\".\n");
    free(got);
    got = validate(hk_gq_schema(), "{ webhooks { edges { node { id } } } }", NULL, true);
    cr_expect_str_eq(got, "");
    free(got);
    got = validate(hk_gq_schema(), "{ webhooks { edges { node { id } } } }", &lim, true);
    cr_expect_str_eq(got, "1:22 The operation nests fields 4 levels deep, more than the limit of 2.\n"
                          "1:1 The operation selects 4 fields once fragments are expanded, more than the limit "
                          "of 2.\n");
    free(got);
}

/* ---- hostile documents ----------------------------------------------------------- */

static double now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

/* Parse and validate under the sanitizers in well under the time a request
 * may take; the answer as validate()'s. Takes the document (an hk_buf). */
static char *hostile(struct hk_buf *doc, const struct gq_limits *lim)
{
    hk_buf_putc(doc, '\0');
    double t0 = now();
    char *got = validate(hk_gq_schema(), doc->p, lim, true);
    double dt = now() - t0;
    cr_expect_lt(dt, 2.0, "took %.3f s for %zu bytes", dt, doc->len);
    hk_buf_free(doc);
    return got;
}

static void repeat(struct hk_buf *b, const char *s, int n)
{
    for (int i = 0; i < n; i++)
        hk_buf_puts(b, s);
}

/* OverlappingFieldsCanBeMerged compares every pair of fields of a name:
 * graphql-js's budget (which hookd keeps) ends it with "Validation aborted."
 * where the work would grow with the square of the document. */
Test(gq_validate, hostile_many_fields)
{
    struct hk_buf b = HK_BUF_INIT;
    hk_buf_puts(&b, "{ ");
    repeat(&b, "__typename ", 10000);
    hk_buf_puts(&b, "}");
    char *got = hostile(&b, NULL);
    cr_expect_str_eq(got, " Validation aborted.\n");
    free(got);

    /* 707 copies make 249,571 pairs, within the budget; 708 do not */
    hk_buf_puts(&b, "{ ");
    repeat(&b, "__typename ", 707);
    hk_buf_puts(&b, "}");
    got = hostile(&b, NULL);
    cr_expect_str_eq(got, "");
    free(got);
    hk_buf_puts(&b, "{ ");
    repeat(&b, "__typename ", 708);
    hk_buf_puts(&b, "}");
    got = hostile(&b, NULL);
    cr_expect_str_eq(got, " Validation aborted.\n");
    free(got);

    /* 10,000 distinct names: nothing to compare */
    hk_buf_puts(&b, "{");
    for (int i = 0; i < 10000; i++)
        hk_buf_printf(&b, " a%d: __typename", i);
    hk_buf_puts(&b, " }");
    got = hostile(&b, NULL);
    cr_expect_str_eq(got, "");
    free(got);

    /* pairs with sub-selections, arguments, list arguments */
    hk_buf_puts(&b, "{ ");
    repeat(&b, "system { version } ", 5000);
    hk_buf_puts(&b, "}");
    got = hostile(&b, NULL);
    cr_expect_str_eq(got, " Validation aborted.\n");
    free(got);
    hk_buf_puts(&b, "{");
    for (int i = 0; i < 3000; i++)
        hk_buf_printf(&b, " x: webhooks(first: %d) { edges { cursor } }", i);
    hk_buf_puts(&b, " }");
    got = hostile(&b, NULL);
    cr_expect_str_eq(got, " Validation aborted.\n");
    free(got);
    hk_buf_puts(&b, "{ ");
    repeat(&b, "x: webhooks(receivedAfter: [1, 2, 3, {a: [4, 5]}, 6]) { edges { cursor } } ", 3000);
    hk_buf_puts(&b, "}");
    got = hostile(&b, NULL);
    cr_expect_str_eq(got, " Validation aborted.\n");
    free(got);
    /* one field against 3000 that differ below it */
    hk_buf_puts(&b, "{ a: webhooks { edges { node { id } } }");
    for (int i = 0; i < 3000; i++)
        hk_buf_printf(&b, " a: webhooks { edges { node { id x%d: id } } }", i);
    hk_buf_puts(&b, " }");
    got = hostile(&b, NULL);
    cr_expect_str_eq(got, " Validation aborted.\n");
    free(got);
}

Test(gq_validate, hostile_fragments)
{
    /* 2000 fragments spread side by side: every pair is compared */
    struct hk_buf b = HK_BUF_INIT;
    hk_buf_puts(&b, "{");
    for (int i = 0; i < 2000; i++)
        hk_buf_printf(&b, " ...F%d", i);
    hk_buf_puts(&b, " }");
    for (int i = 0; i < 2000; i++)
        hk_buf_printf(&b, " fragment F%d on Query { system { version } }", i);
    char *got = hostile(&b, NULL);
    cr_expect_str_eq(got, " Validation aborted.\n");
    free(got);

    /* 2000 operations, each reaching a fragment of 2000 spreads: the
     * fragment work budget (ValidationContext's) ends it */
    for (int i = 0; i < 2000; i++)
        hk_buf_printf(&b, "query Q%d { ...F%d } ", i, i);
    for (int i = 0; i < 2000; i++)
        hk_buf_printf(&b, "fragment F%d on Query { ...G } ", i);
    hk_buf_puts(&b, "fragment G on Query { ");
    repeat(&b, "...H ", 2000);
    hk_buf_puts(&b, "} fragment H on Query { __typename }");
    got = hostile(&b, NULL);
    cr_expect_str_eq(got, " Validation aborted.\n");
    free(got);

    /* a cycle through 3000 fragments: one error, its path in full in the
     * message, its first 16 spreads located */
    hk_buf_puts(&b, "{ ...F0 }");
    for (int i = 0; i < 3000; i++)
        hk_buf_printf(&b, "\nfragment F%d on Query { ...F%d }", i, (i + 1) % 3000);
    got = hostile(&b, NULL);
    struct hk_buf want = HK_BUF_INIT;
    for (int i = 0; i < 16; i++)
        hk_buf_printf(&want, "%s%d:%d", i ? "," : "", i + 2, i < 10 ? 24 : 25);
    hk_buf_puts(&want, " Cannot spread fragment \"F0\" within itself via");
    for (int i = 1; i < 3000; i++)
        hk_buf_printf(&want, "%s \"F%d\"", i > 1 ? "," : "", i);
    hk_buf_puts(&want, ".\n");
    hk_buf_putc(&want, '\0');
    cr_expect_str_eq(got, want.p);
    free(got);
    hk_buf_free(&want);

    /* every fragment also spreads the first: 3000 cycles, 100 errors */
    hk_buf_puts(&b, "{ ...F0 }");
    for (int i = 0; i < 3000; i++)
        hk_buf_printf(&b, " fragment F%d on Query { ...F%d ...F0 }", i, (i + 1) % 3000);
    got = hostile(&b, NULL);
    const char *first = strstr(got, " Cannot spread fragment \"F0\" within itself via \"F1\", \"F2\", ");
    cr_expect(first && first < strchr(got, '\n'), "%.200s", got);
    cr_expect(strstr(got, "\n Too many validation errors, error limit reached. Validation aborted.\n") != NULL);
    free(got);

    /* A chain of fragments deeper than the validator follows: refused, not
     * a stack overflow (graphql-js, recursing, would go on). */
    hk_buf_puts(&b, "{ __schema { types { ...F0 } } }");
    for (int i = 0; i < 2000; i++)
        hk_buf_printf(&b, " fragment F%d on __Type { ofType { ...F%d } }", i, i + 1);
    hk_buf_puts(&b, " fragment F2000 on __Type { name }");
    got = hostile(&b, NULL);
    cr_expect_str_eq(got, " The document spreads fragments too deeply to validate. Validation aborted.\n");
    free(got);
}

Test(gq_validate, hostile_nesting)
{
    /* as deep as the parser allows (GQ_NESTING_MAX): lists, objects, selections */
    struct hk_buf b = HK_BUF_INIT, want = HK_BUF_INIT;
    int depth = GQ_NESTING_MAX - 1;
    hk_buf_puts(&b, "{ webhooks(first: ");
    repeat(&b, "[", depth);
    hk_buf_puts(&b, "1");
    repeat(&b, "]", depth);
    hk_buf_puts(&b, ") { edges { cursor } } }");
    char *got = hostile(&b, NULL);
    hk_buf_puts(&want, "1:19 Int cannot represent non-integer value: ");
    repeat(&want, "[", depth);
    hk_buf_puts(&want, "1");
    repeat(&want, "]", depth);
    hk_buf_puts(&want, "\n");
    hk_buf_putc(&want, '\0');
    cr_expect_str_eq(got, want.p);
    free(got);
    hk_buf_free(&want);

    hk_buf_puts(&b, "{ webhooks(receivedAfter: ");
    repeat(&b, "{a: ", depth);
    hk_buf_puts(&b, "1");
    repeat(&b, "}", depth);
    hk_buf_puts(&b, ") { edges { cursor } } }");
    got = hostile(&b, NULL);
    /* DateTime takes strings only: one error naming the literal. */
    cr_expect(strncmp(got, "1:27 DateTime cannot represent a non-string value: {a: {a: ", 59) == 0 &&
                  strchr(got, '\n') == got + strlen(got) - 1,
              "%.200s", got);
    free(got);

    hk_buf_puts(&b, "{ __type(name: \"Query\") {");
    repeat(&b, " ofType {", depth - 2);
    hk_buf_puts(&b, " name");
    repeat(&b, " }", depth - 1);
    hk_buf_puts(&b, " }");
    got = hostile(&b, NULL);
    cr_expect_str_eq(got, "");
    free(got);

    /* 5000 fields of one input object, all named alike */
    hk_buf_puts(&b, "{ webhooks(receivedAfter: {");
    for (int i = 0; i < 5000; i++)
        hk_buf_printf(&b, "%s a: %d", i ? "," : "", i);
    hk_buf_puts(&b, " }) { edges { cursor } } }");
    got = hostile(&b, NULL);
    cr_expect(strncmp(got, "1:27 DateTime cannot represent a non-string value: {", 52) == 0, "%.200s", got);
    cr_expect(strstr(got, "\n1:29,1:35 There can be only one input field named \"a\".\n"
                          "1:29,1:41 There can be only one input field named \"a\".\n") != NULL, "%.200s", got);
    cr_expect(strstr(got, "\n Too many validation errors, error limit reached. Validation aborted.\n") != NULL);
    free(got);

    /* 3000 variables, each used */
    hk_buf_puts(&b, "query (");
    for (int i = 0; i < 3000; i++)
        hk_buf_printf(&b, " $v%d: Int", i);
    hk_buf_puts(&b, ") {");
    for (int i = 0; i < 3000; i++)
        hk_buf_printf(&b, " a%d: webhooks(first: $v%d) { edges { cursor } }", i, i);
    hk_buf_puts(&b, " }");
    got = hostile(&b, NULL);
    cr_expect_str_eq(got, "");
    free(got);
}

/* Past the arena's cap, validation ends with an error, never a crash. */
Test(gq_validate, arena_cap)
{
    struct hk_buf b = HK_BUF_INIT;
    hk_buf_puts(&b, "{");
    for (int i = 0; i < 300; i++)
        hk_buf_printf(&b, " x: webhooks(first: %d) { edges { cursor } }", i % 7);
    hk_buf_puts(&b, " }");
    hk_buf_putc(&b, '\0');
    static const size_t caps[] = {64, 1024, 8192, 65536};
    for (size_t i = 0; i < N(caps); i++) {
        char *got = validate_capped(hk_gq_schema(), b.p, NULL, true, caps[i]);
        const char *nomem = " The document needs more memory to validate than allowed. Validation aborted.\n";
        cr_expect(strstr(got, nomem) != NULL, "cap %zu: %.200s", caps[i], got);
        free(got);
    }
    char *got = validate(hk_gq_schema(), b.p, NULL, true);
    const char *first = "1:3,1:46 Fields \"x\" conflict because they have differing arguments.";
    cr_expect(strncmp(got, first, strlen(first)) == 0, "%.200s", got);
    free(got);
    hk_buf_free(&b);
}
