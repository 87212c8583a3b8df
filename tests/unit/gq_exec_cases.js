// SPDX-License-Identifier: MIT
// Writes tests/unit/gq_exec_cases.json: what graphql-js (npm graphql 16.x)
// answers for each case below over hookd's SDL (gq_schema.graphql), with
// root resolvers that hand back the case's fixture values, so that
// test_gq_exec.c can hold hookd's executor to the same bytes. Documents are
// executed without validation, as the unit test runs the executor alone.
// The resolvers answer through promises, as hookd's store does: graphql-js
// then calls every root field of a query before any completes, as hookd
// does (with plain values it would stop calling at a failed non-null one).
//   NODE_PATH=<dir with graphql@16>/node_modules node gq_exec_cases.js > gq_exec_cases.json
'use strict';
const fs = require('fs');
const path = require('path');
const g = require('graphql');

const sdl = fs.readFileSync(path.join(__dirname, 'gq_schema.graphql'), 'utf8');
const schema = g.buildSchema(sdl);

const W1 = {
  id: '1', source: 'stripe', eventType: 'charge.succeeded', payload: '{"a":1}',
  receivedAt: '2026-11-29T19:03:01.123456Z', ingress: false, contentType: null, deliveryId: null,
  bodyBytes: null, bodySha256: null, clientAddress: null, delivery: null,
};
const W2 = {
  id: '2', source: 'github', eventType: 'push', payload: 'caf\u00e9 \u2713 \u0001 "q" \\ \n',
  receivedAt: '2026-11-29T19:04:00.000001Z', ingress: true, contentType: 'application/json',
  deliveryId: 'd-2', bodyBytes: 17, bodySha256: 'ab'.repeat(32), clientAddress: '10.0.0.1',
  delivery: { state: 'FAILED', attempts: 3, lastStatus: 410, lastError: 'HTTP 410', nextAttemptAt: null,
              lastAttemptAt: '2026-11-29T19:05:00.000001Z' },
};
const ROOT = {
  webhook: W1,
  webhooks: { edges: [{ cursor: 'c1', node: W1 }, { cursor: 'c2', node: W2 }],
              pageInfo: { hasNextPage: true, endCursor: 'c2' } },
  sources: [{ source: 'stripe', count: 3, lastReceivedAt: '2026-11-29T19:03:01.123456Z' },
            { source: 'github', count: 1, lastReceivedAt: null }],
  system: { version: '0.1.0', store: 'sqlite', uptimeMs: 1234.5, eventLoops: 4 },
  deleteWebhook: true,
};
const with_ = (over) => Object.assign({}, ROOT, over);

const cases = [
  // shapes, aliases, __typename, merging
  ['system', '{ system { version store uptimeMs eventLoops } }'],
  ['aliases', '{ a: system { v: version } b: system { store } __typename t2: __typename }'],
  ['typename_nested', '{ webhook(id: "1") { __typename id } webhooks { __typename edges { __typename } } }'],
  ['merge', '{ system { version } system { store } ... on Query { system { version eventLoops } } }'],
  ['webhook_all', `{ webhook(id: "2") { id source eventType payload receivedAt ingress contentType deliveryId
     bodyBytes bodySha256 clientAddress } }`, { root: with_({ webhook: W2 }) }],
  ['connection', '{ webhooks(first: 2, source: "stripe") { edges { cursor node { id source } } pageInfo { hasNextPage endCursor } } }'],
  ['sources', '{ sources { source count lastReceivedAt } }'],
  ['delivery', '{ webhook(id: "2") { delivery { state attempts lastStatus lastError nextAttemptAt lastAttemptAt __typename } } }',
    { root: with_({ webhook: W2 }) }],
  ['delivery_none', '{ webhook(id: "1") { id delivery { state } } }'],
  ['delivery_bad_enum', '{ webhook(id: "1") { delivery { state } } }',
    { root: with_({ webhook: Object.assign({}, W1, { delivery: { state: 'LOST', attempts: 0 } }) }) }],
  ['unknown_field_left_out', '{ system { version nope } nope2 }'],
  ['object_without_selection', '{ system }'],
  // fragments
  ['fragments', `query { ...Q webhook(id: "1") { ...W ... on Webhook { source } ... { eventType } } }
     fragment Q on Query { system { ...S } }
     fragment S on SystemInfo { version ... on SystemInfo { store } }
     fragment W on Webhook { id ...W2 }
     fragment W2 on Webhook { receivedAt }`],
  ['fragment_wrong_type', '{ system { ... on Webhook { id } version } ...F } fragment F on Mutation { deleteWebhook(id: "1") }'],
  ['fragment_spread_twice', '{ system { ...S ...S } } fragment S on SystemInfo { version }'],
  ['fragment_unknown', '{ system { ...Nope version } }'],
  // directives
  ['skip_include_literal', '{ system { version @skip(if: true) store @include(if: false) eventLoops @skip(if: false) @include(if: true) } }'],
  ['skip_include_vars', 'query ($s: Boolean!, $i: Boolean = true) { system { version @skip(if: $s) store @include(if: $i) ... @skip(if: $s) { eventLoops } } }',
    { variables: { s: true } }],
  ['skip_include_vars2', 'query ($s: Boolean!, $i: Boolean = true) { system { version @skip(if: $s) store @include(if: $i) ... @include(if: $i) { eventLoops } } }',
    { variables: { s: false, i: false } }],
  ['skip_on_spread', 'query ($s: Boolean!) { system { ...S @skip(if: $s) store } } fragment S on SystemInfo { version }', { variables: { s: true } }],
  ['directive_null_root', 'query ($v: Boolean = true) { system @skip(if: $v) { version } }', { variables: { v: null } }],
  ['directive_null_nested', 'query ($v: Boolean = true) { webhook(id: "1") { id @include(if: $v) } system { version } }', { variables: { v: null } }],
  // arguments
  ['args_defaults', '{ webhooks { pageInfo { endCursor } } }'],
  ['args_all', `{ webhooks(first: 5, after: "c1", source: "s", eventType: "e", deliveryId: "d",
     receivedAfter: "2026-01-01T00:00:00Z", receivedBefore: [1, {a: true}]) { pageInfo { endCursor } } }`],
  ['args_literals', `{ a: webhook(id: 12) { id } b: webhook(id: """  block
      string""") { id } c: webhook(id: "\\u00e9\\n\\"") { id } }`],
  ['args_vars', 'query ($id: ID!, $n: Int, $s: String) { webhook(id: $id) { id } webhooks(first: $n, source: $s) { pageInfo { hasNextPage } } }',
    { variables: { id: 7, n: 3 } }],
  ['args_var_null', 'query ($n: Int) { webhooks(first: $n) { pageInfo { hasNextPage } } }', { variables: { n: null } }],
  ['arg_required_missing', '{ webhook { id } system { version } }'],
  ['arg_invalid_literal', '{ webhook(id: 1.5) { id } }'],
  ['arg_invalid_list', '{ webhooks(first: [1, 2]) { pageInfo { hasNextPage } } }'],
  ['arg_null_nonnull', '{ webhook(id: null) { id } }'],
  ['arg_var_not_provided', 'query ($id: ID) { webhook(id: $id) { id } }'],
  ['arg_var_null_nonnull', 'query ($id: ID) { webhook(id: $id) { id } }', { variables: { id: null } }],
  ['arg_int_range', '{ webhooks(first: 2147483648) { pageInfo { hasNextPage } } }'],
  // variables
  ['var_missing', 'query ($id: ID!) { webhook(id: $id) { id } }'],
  ['var_null', 'query ($id: ID!) { webhook(id: $id) { id } }', { variables: { id: null } }],
  ['var_int_string', 'query ($n: Int) { webhooks(first: $n) { pageInfo { hasNextPage } } }', { variables: { n: 'a' } }],
  ['var_int_float', 'query ($n: Int) { webhooks(first: $n) { pageInfo { hasNextPage } } }', { variables: { n: 1.5 } }],
  ['var_int_whole_float', 'query ($n: Int) { webhooks(first: $n) { pageInfo { hasNextPage } } }', { variables: { n: 3.0 } }],
  ['var_int_range', 'query ($n: Int) { webhooks(first: $n) { pageInfo { hasNextPage } } }', { variables: { n: 2147483648 } }],
  ['var_kinds', `query ($a: Float, $b: String, $c: Boolean, $d: ID, $e: Int, $f: ID, $g: String) { system { version } }`,
    { variables: { a: 'x', b: 1, c: 1, d: 1.5, e: { x: [1, { y: { z: 1 } }] }, f: [1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12], g: {} } }],
  ['var_list', 'query ($l: [Int!], $m: [[String]!], $o: [Int]) { system { version } }',
    { variables: { l: [1, 'x', null], m: [['a', null], null, [3]], o: 5 } }],
  ['var_not_input', 'query ($w: Webhook, $u: Nope) { system { version } }', { variables: { w: {} } }],
  ['var_too_many', 'query (' + Array.from({ length: 55 }, (_, i) => `$v${i}: Int!`).join(', ') + ') { system { version } }'],
  ['var_default_used', 'query ($n: Int = 7, $s: String = "x") { webhooks(first: $n, source: $s) { pageInfo { hasNextPage } } }'],
  ['var_extra_ignored', 'query ($n: Int) { webhooks(first: $n) { pageInfo { hasNextPage } } }', { variables: { n: 2, zzz: 'x' } }],
  // operations
  ['op_multiple', 'query A { system { version } } query B { system { store } }'],
  ['op_named', 'query A { system { version } } query B { system { store } }', { operationName: 'B' }],
  ['op_unknown', 'query A { system { version } }', { operationName: 'C' }],
  ['op_none', 'fragment F on Query { system { version } }'],
  ['op_subscription', 'subscription S { system { version } }'],
  ['op_mutation', 'mutation { a: deleteWebhook(id: "1") b: deleteWebhook(id: 2) __typename }'],
  ['op_mutation_fail', 'mutation { a: deleteWebhook(id: "1") b: deleteWebhook(id: "2") }', { errors: { a: 'the store failed' } }],
  ['op_mutation_null', 'mutation { a: deleteWebhook(id: "1") b: deleteWebhook(id: "2") }', { root: with_({ deleteWebhook: null }) }],
  ['mutation_no_intro', 'mutation { __schema { queryType { name } } deleteWebhook(id: "1") }'],
  // errors and null propagation
  ['resolver_error_nullable', '{ webhook(id: "1") { id } system { version } }', { errors: { webhook: 'the store failed' } }],
  ['resolver_error_nonnull', '{ webhook(id: "1") { id } system { version } }', { errors: { system: 'the store is busy; retry later' } }],
  ['resolver_errors_two', '{ a: webhook(id: "1") { id } b: webhook(id: "2") { id } }', { errors: { a: 'one', b: 'two' } }],
  ['null_in_nonnull_leaf', '{ webhook(id: "1") { id source } }', { root: with_({ webhook: Object.assign({}, W1, { source: null }) }) }],
  ['null_in_nonnull_root', '{ webhook(id: "1") { id } system { version } }', { root: with_({ system: null }) }],
  ['null_in_list_item', '{ sources { source count } system { version } }',
    { root: with_({ sources: [{ source: 'a', count: 1 }, { source: 'b', count: null }, { source: 'c', count: 2 }] }) }],
  ['null_deep_edge', '{ webhooks { edges { cursor node { id eventType } } } }',
    { root: with_({ webhooks: { edges: [{ cursor: 'c1', node: W1 }, { cursor: 'c2', node: { id: '2', eventType: null } }, { cursor: 'c3', node: null }], pageInfo: null } }) }],
  ['not_iterable', '{ sources { source } }', { root: with_({ sources: { source: 'x' } }) }],
  ['list_missing', '{ webhooks { edges { cursor } pageInfo { hasNextPage } } }', { root: with_({ webhooks: { pageInfo: { hasNextPage: false } } }) }],
  ['object_is_scalar', '{ webhook(id: "1") { id payload } }', { root: with_({ webhook: 'a string' }) }],
  ['errors_in_nulled_parent', '{ webhook(id: "1") { a: bodyBytes id: source b: bodyBytes } }',
    { root: with_({ webhook: Object.assign({}, W1, { bodyBytes: 'x', source: null }) }) }],
  // serialization
  ['serialize_ok', '{ system { version store uptimeMs eventLoops } sources { source count } webhook(id: "1") { id ingress bodyBytes } }',
    { root: with_({ system: { version: 12, store: true, uptimeMs: '1.5', eventLoops: '12' },
                    sources: [{ source: 1.5, count: 3.0 }, { source: -0.000001, count: true }, { source: 1e21, count: -2147483648 }],
                    webhook: { id: 12, ingress: 0, bodyBytes: '  7 ' } }) }],
  ['serialize_float', '{ system { uptimeMs } }', { root: with_({ system: { uptimeMs: 1e21 } }) }],
  ['serialize_float2', '{ system { uptimeMs } }', { root: with_({ system: { uptimeMs: 0.1 } }) }],
  ['serialize_float3', '{ system { uptimeMs } }', { root: with_({ system: { uptimeMs: 123.0 } }) }],
  ['serialize_float4', '{ system { uptimeMs } }', { root: with_({ system: { uptimeMs: 1.5e-7 } }) }],
  ['serialize_int_range', '{ system { eventLoops } }', { root: with_({ system: { eventLoops: 2147483648 } }) }],
  ['serialize_int_frac', '{ webhook(id: "1") { bodyBytes } }', { root: with_({ webhook: { bodyBytes: 1.5 } }) }],
  ['serialize_int_str', '{ webhook(id: "1") { bodyBytes } }', { root: with_({ webhook: { bodyBytes: 'abc' } }) }],
  ['serialize_int_empty', '{ webhook(id: "1") { bodyBytes } }', { root: with_({ webhook: { bodyBytes: '' } }) }],
  ['serialize_int_obj', '{ webhook(id: "1") { bodyBytes } }', { root: with_({ webhook: { bodyBytes: { a: [1, 2] } } }) }],
  ['serialize_int_hex', '{ webhook(id: "1") { bodyBytes } }', { root: with_({ webhook: { bodyBytes: '0x10' } }) }],
  ['serialize_float_str', '{ system { uptimeMs } }', { root: with_({ system: { uptimeMs: 'abc' } }) }],
  ['serialize_string_obj', '{ webhook(id: "1") { payload } }', { root: with_({ webhook: { payload: { a: 1 } } }) }],
  ['serialize_string_arr', '{ webhook(id: "1") { payload } }', { root: with_({ webhook: { payload: [1, 'a', [2, [3, [4]]]] } }) }],
  ['serialize_bool_str', '{ webhook(id: "1") { ingress } }', { root: with_({ webhook: { ingress: 'yes' } }) }],
  ['serialize_id_float', '{ webhook(id: "1") { id } }', { root: with_({ webhook: { id: 1.5 } }) }],
  ['serialize_id_bool', '{ webhook(id: "1") { id } }', { root: with_({ webhook: { id: true } }) }],
  ['serialize_datetime', '{ webhook(id: "1") { receivedAt } sources { lastReceivedAt } }',
    { root: with_({ webhook: { receivedAt: 'not checked' }, sources: [{ lastReceivedAt: 5 }, { lastReceivedAt: true }] }) }],
  ['list_many', '{ sources { count } }',
    { root: with_({ sources: Array.from({ length: 30 }, (_, i) => ({ count: i * 1000 })) }) }],
  // introspection
  ['type_webhook', '{ __type(name: "Webhook") { kind name description fields { name args { name } type { kind name ofType { kind name } } isDeprecated deprecationReason } interfaces { name } possibleTypes { name } enumValues { name } inputFields { name } ofType { name } specifiedByURL isOneOf } }'],
  ['type_unknown', '{ __type(name: "Nope") { name } }'],
  ['type_scalar', '{ __type(name: "DateTime") { kind name specifiedByURL fields { name } } i: __type(name: "Int") { name description specifiedByURL } }'],
  ['type_enum', '{ __type(name: "__TypeKind") { kind enumValues { name description isDeprecated } e2: enumValues(includeDeprecated: true) { name } } }'],
  ['type_query_args', '{ __type(name: "Query") { fields { name args { name type { kind name ofType { name } } defaultValue description } } } }'],
  ['type_missing_arg', '{ __type { name } }'],
  ['schema_small', '{ __schema { description queryType { name } mutationType { name kind } subscriptionType { name } directives { name locations isRepeatable args { name defaultValue type { kind ofType { name } } } } } }'],
  ['schema_types_names', '{ __schema { types { name kind } } }'],
  ['schema_dir_deprecated', '{ __schema { directives(includeDeprecated: true) { name isDeprecated deprecationReason } } }'],
  ['schema_typename', '{ __schema { __typename types { __typename } queryType { fields { __typename type { __typename } } } } }'],
  ['introspection_default', g.getIntrospectionQuery()],
  ['introspection_full', g.getIntrospectionQuery({ descriptions: true, specifiedByUrl: true, directiveIsRepeatable: true,
    schemaDescription: true, inputValueDeprecation: true, experimentalDirectiveDeprecation: true, oneOf: true })],
];

async function main() {
const out = [];
for (const [name, query, opts = {}] of cases) {
  const root = opts.root || ROOT;
  const errors = opts.errors || {};
  const calls = [];
  const rootValue = {};
  for (const t of [schema.getQueryType(), schema.getMutationType()]) {
    for (const f of Object.keys(t.getFields())) {
      rootValue[f] = (args, ctx, info) => {
        calls.push({ key: info.path.key, field: f, args: Object.assign({}, args) });
        if (errors[info.path.key]) return Promise.reject(new Error(errors[info.path.key]));
        return Promise.resolve(root[f]);
      };
    }
  }
  const res = await g.execute({ schema, document: g.parse(query), rootValue, variableValues: opts.variables,
                          operationName: opts.operationName });
  const c = { name, query };
  if (opts.variables !== undefined) c.variables = opts.variables;
  if (opts.operationName !== undefined) c.operationName = opts.operationName;
  c.root = root;
  c.errors = errors;
  c.calls = calls;
  c.expect = JSON.stringify(res);
  out.push(c);
}
process.stdout.write(JSON.stringify(out, null, 1) + '\n');
}
main();
