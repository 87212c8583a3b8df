// SPDX-License-Identifier: MIT
// The differential test of hookd's /graphql against graphql-js, the reference
// implementation: every document of the corpus goes to graphql-js (parse,
// validate against the SDL hookd serves, execute with root resolvers that
// implement issue #14 over the fixture rows read back through the REST API)
// and to hookd (POST /graphql), and the two answers are compared: the same
// syntax error (message and location), the same validation error count and
// locations (messages only warned about), and for executed documents equal
// data and the same error count and paths. Cursors are opaque: each side
// follows its own, and a cursor of hookd's must always stand for the row the
// reference's cursor at the same place stands for.
//
//   node difftest.mjs --graphql-js DIR --corpus DIR --url http://127.0.0.1:PORT [--load] [--only SUBSTR]
//   node difftest.mjs --graphql-js DIR --corpus DIR --self
//   (and --dump FILE: graphql-js's first answer to each document, a JSON line each)
//
// --load posts the fixture rows first (a fresh, empty store); --self checks
// the script and the corpus with graphql-js on both sides (a second model
// with other cursors standing in for hookd), no server needed. Prints one
// line per difference, then "N documents: N agree, N differ"; exits 1 on
// any difference, 2 on a setup failure.
//
// The corpus: NAME.graphql, and optionally NAME.json with "variables",
// "operationName" and "follow" (a paging sequence: {"var", "path" to the
// pageInfo, "minSteps"}). The name says what graphql-js must make of the
// document, so that a document cannot silently test nothing: syntax-* does
// not parse, invalid-* does not validate, anything else does; mutation-*
// run last, as they delete rows.

import { Buffer } from 'node:buffer';
import { readFileSync, readdirSync, existsSync, writeFileSync } from 'node:fs';
import http from 'node:http';
import { join, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';

// ---- command line ----------------------------------------------------------------

const opts = { url: null, self: false, load: false, only: null, corpus: null, graphqlJs: null, verbose: false,
    dump: null };
{
    const argv = process.argv.slice(2);
    for (let i = 0; i < argv.length; i++) {
        const a = argv[i];
        const next = () => {
            if (i + 1 >= argv.length)
                die(`${a} needs a value`);
            return argv[++i];
        };
        if (a === '--url') opts.url = next().replace(/\/+$/, '');
        else if (a === '--self') opts.self = true;
        else if (a === '--load') opts.load = true;
        else if (a === '--only') opts.only = next();
        else if (a === '--corpus') opts.corpus = next();
        else if (a === '--graphql-js') opts.graphqlJs = next();
        else if (a === '--verbose') opts.verbose = true;
        else if (a === '--dump') opts.dump = next();
        else die(`unknown argument ${a}`);
    }
    if (!opts.corpus || !opts.graphqlJs || (!opts.url && !opts.self))
        die('usage: difftest.mjs --graphql-js DIR --corpus DIR (--url URL [--load] | --self) [--only SUBSTR]');
}

function die(msg) {
    console.error(`difftest: ${msg}`);
    process.exit(2);
}

const gql = await import(pathToFileURL(join(resolve(opts.graphqlJs), 'index.mjs')).href);
const { parse, validate, execute, buildSchema, getOperationAST, GraphQLError, Kind } = gql;

// ---- HTTP ----------------------------------------------------------------------------

const agent = new http.Agent({ keepAlive: true, maxSockets: 4 });

// One request; resolves {status, headers, body} (body a string). Bounded:
// a server that does not answer in 20 s fails the request, not the run.
function request(method, path, body, headers = {}) {
    return new Promise((resolvePromise, reject) => {
        const u = new URL(opts.url + path);
        const data = body === undefined ? undefined : Buffer.isBuffer(body) ? body : Buffer.from(body, 'utf8');
        const req = http.request({
            method, host: u.hostname, port: u.port, path: u.pathname + u.search, agent,
            headers: data ? { ...headers, 'Content-Length': data.length } : headers,
            timeout: 20000,
        }, res => {
            const chunks = [];
            res.on('data', c => chunks.push(c));
            res.on('end', () => resolvePromise({
                status: res.statusCode, headers: res.headers, body: Buffer.concat(chunks).toString('utf8'),
            }));
            res.on('error', reject);
        });
        req.on('timeout', () => req.destroy(new Error(`${method} ${path}: no answer within 20 s`)));
        req.on('error', reject);
        if (data)
            req.write(data);
        req.end();
    });
}

async function getJson(path) {
    const r = await request('GET', path, undefined, { Accept: 'application/json' });
    if (r.status !== 200)
        throw new Error(`GET ${path}: HTTP ${r.status}: ${r.body.slice(0, 300)}`);
    return JSON.parse(r.body);
}

// ---- the fixture ---------------------------------------------------------------------

// Envelopes for POST /api/webhooks, in the order they are stored (ids
// ascending, so the last one is the newest). Several sources and event types
// interleaved, so that filters and pages cut across each other; payloads
// with escapes, non-ASCII text (astral too), U+2028, empty and null.
const big = JSON.stringify({ items: Array.from({ length: 120 }, (_, i) => ({ n: i, label: `item ${i} — ü` })) });
const ENVELOPES = [
    ['github', 'push', '{"ref":"refs/heads/main","commits":3}'],
    ['stripe', 'invoice.paid', '{"id":"in_1","amount":1200,"currency":"eur"}'],
    ['github', 'pull_request', '{"action":"opened","number":17}'],
    ['gitlab', 'Push Hook', '{"object_kind":"push","ref":"main"}'],
    ['github', 'push', null],
    ['stripe', 'charge.refunded', '{"id":"ch_9","refunded":true}'],
    ['Zoom', 'meeting.started', '{"meeting":{"id":81234567890,"topic":"Réunion"}}'],
    ['ünïcödé 源', 'événement', 'texte accentué: àéîõü, 漢字, 😀 and \u2028 line separator'],
    ['github', 'issues', '{"action":"closed"}'],
    ['stripe', 'invoice.paid', '{"id":"in_2","amount":0}'],
    ['github', 'push', ''],
    ['shop/ify "quoted"', 'orders/create', 'quote " backslash \\ slash / tab \t newline \n done'],
    ['gitlab', 'Merge Request Hook', '{"object_kind":"merge_request"}'],
    ['github', 'pull_request', '{"action":"closed","merged":true}'],
    ['stripe', 'customer.created', '{"id":"cus_1","email":"a@example.com"}'],
    ['emoji 😀', 'party 🎉', '🎉🎊 \u{1F600}\u{1F680}'],
    ['github', 'push', big],
    ['stripe', 'invoice.paid', '{"id":"in_3"}'],
    ['ünïcödé 源', 'événement', null],
    ['github', 'issues', '{"action":"opened","title":"<b>html</b> & entities &amp;"}'],
    ['gitlab', 'Push Hook', '{"object_kind":"push","ref":"dev"}'],
    ['Zoom', 'meeting.ended', '{}'],
    ['stripe', 'charge.refunded', '{"id":"ch_10"}'],
    ['github', 'push', '{"ref":"refs/tags/v1.0.0"}'],
    ['github', 'pull_request', '{"action":"reopened"}'],
    ['stripe', 'invoice.paid', '{"id":"in_4","lines":[1,2,3]}'],
    ['shop/ify "quoted"', 'orders/paid', '\u0001\u001f control characters'],
    ['github', 'push', '{"ref":"refs/heads/feature/ü"}'],
    ['gitlab', 'Push Hook', null],
    ['stripe', 'customer.created', '{"id":"cus_2"}'],
    ['github', 'issues', '{"action":"labeled"}'],
    ['ünïcödé 源', 'évènement 2', '{"clé":"valeur"}'],
    ['stripe', 'invoice.paid', '{"id":"in_5"}'],
    ['github', 'push', '{"ref":"refs/heads/main","commits":1}'],
    ['gitlab', 'Merge Request Hook', '{"object_kind":"merge_request","action":"merge"}'],
    ['github', 'pull_request', '{"action":"synchronize"}'],
    ['stripe', 'charge.refunded', '{"id":"ch_11"}'],
    ['Zoom', 'meeting.started', '{"meeting":{"id":1}}'],
    ['github', 'push', '{"ref":"refs/heads/main","commits":7}'],
    ['stripe', 'invoice.paid', '{"id":"in_6"}'],
    ['github', 'issues', null],
    ['gitlab', 'Push Hook', '{"object_kind":"push","ref":"release"}'],
    ['github', 'push', '{"ref":"refs/heads/hotfix"}'],
    ['stripe', 'invoice.paid', '{"id":"in_7"}'],
];
// Then a few deliveries through POST /hooks/open (scheme none, event type
// from `kind`, delivery id from `meta.id`) when hookd has that source, and
// a last batch of envelopes after them.
const DELIVERIES = [
    ['application/json', '{"kind":"order.created","meta":{"id":"d-1"},"total":10}'],
    ['application/json', '{"kind":"order.paid","meta":{"id":"d-2"},"total":10}'],
    ['application/octet-stream', '\u00ff\u00fe binary body'],
    ['application/json', '{"kind":"order.created","meta":{"id":"d-3"},"note":"ünï"}'],
];
const ENVELOPES_AFTER = [
    ['github', 'push', '{"ref":"refs/heads/main","commits":2}'],
    ['stripe', 'invoice.paid', '{"id":"in_8"}'],
    ['github', 'pull_request', '{"action":"opened","number":18}'],
    ['gitlab', 'Push Hook', '{"object_kind":"push"}'],
    ['github', 'push', '{"ref":"refs/heads/main","commits":4}'],
    ['stripe', 'customer.created', null],
    ['github', 'issues', '{"action":"assigned"}'],
    ['github', 'push', '{"ref":"refs/heads/main","commits":5}'],
];

async function loadFixture() {
    const post = async ([source, eventType, payload]) => {
        const r = await request('POST', '/api/webhooks', JSON.stringify({ source, eventType, payload }),
            { 'Content-Type': 'application/json' });
        if (r.status !== 201)
            throw new Error(`POST /api/webhooks ${source}/${eventType}: HTTP ${r.status}: ${r.body.slice(0, 300)}`);
    };
    // One at a time: each row gets its own, later receivedAt.
    for (const e of ENVELOPES)
        await post(e);
    let delivered = 0;
    for (const [type, body] of DELIVERIES) {
        // The octet-stream body is bytes that are not UTF-8 (its payload is null).
        const bytes = Buffer.from(body, type === 'application/json' ? 'utf8' : 'latin1');
        const r = await request('POST', '/hooks/open', bytes, { 'Content-Type': type });
        if (r.status === 404 && delivered === 0)
            break; // no ingress source configured: envelopes only
        if (r.status !== 201)
            throw new Error(`POST /hooks/open: HTTP ${r.status}: ${r.body.slice(0, 300)}`);
        delivered++;
    }
    for (const e of ENVELOPES_AFTER)
        await post(e);
    return delivered;
}

// The rows --self makes up: what GET /api/webhooks?all=true would answer
// after loadFixture on a fresh store (newest first).
function selfRows() {
    const rows = [];
    let id = 0;
    let us = Date.UTC(2026, 10, 29, 19, 3, 1) * 1000 + 123456;
    const stamp = () => {
        us += 1789 + (id % 7) * 311;
        return isoMicros(BigInt(us));
    };
    for (const [source, eventType, payload] of ENVELOPES)
        rows.push({ id: ++id, source, eventType, payload, receivedAt: stamp(), processingMode: 'event-loop' });
    for (const [type, body] of DELIVERIES) {
        const json = type === 'application/json' ? JSON.parse(body) : null;
        rows.push({
            id: ++id, source: 'open', eventType: json ? json.kind : '', payload: json ? body : null,
            receivedAt: stamp(), processingMode: 'event-loop', ingress: true, contentType: type,
            deliveryId: json ? json.meta.id : null, verified: null, headers: { 'content-type': type },
            bodyBytes: Buffer.byteLength(body, json ? 'utf8' : 'latin1'), bodySha256: null,
            clientAddress: '127.0.0.1',
        });
    }
    for (const [source, eventType, payload] of ENVELOPES_AFTER)
        rows.push({ id: ++id, source, eventType, payload, receivedAt: stamp(), processingMode: 'event-loop' });
    return rows.reverse();
}

// The schema --self uses: the issue's, with the ingress fields hookd adds.
const SELF_SDL = `
"""An RFC 3339 date-time in UTC"""
scalar DateTime @specifiedBy(url: "https://scalars.graphql.org/andimarek/date-time")

type Query {
  webhook(id: ID!): Webhook
  webhooks(first: Int = 20, after: String, source: String, eventType: String, receivedAfter: DateTime,
           receivedBefore: DateTime, deliveryId: String): WebhookConnection!
  sources: [SourceStats!]!
  system: SystemInfo!
}
type Mutation { deleteWebhook(id: ID!): Boolean! }
type Webhook {
  id: ID!
  source: String!
  eventType: String!
  payload: String
  receivedAt: DateTime!
  ingress: Boolean!
  contentType: String
  deliveryId: String
  bodyBytes: Int
  bodySha256: String
  clientAddress: String
}
type WebhookConnection { edges: [WebhookEdge!]! pageInfo: PageInfo! }
type WebhookEdge { cursor: String! node: Webhook! }
type PageInfo { hasNextPage: Boolean! endCursor: String }
type SourceStats { source: String! count: Int! lastReceivedAt: DateTime }
type SystemInfo { version: String! store: String! uptimeMs: Float! eventLoops: Int! }
`;

// ---- DateTime ----------------------------------------------------------------------------

const DATETIME_RE = /^(\d{4})-(\d{2})-(\d{2})T(\d{2}):(\d{2}):(\d{2})(?:\.(\d{1,6}))?Z$/;

// Microseconds since the epoch of an RFC 3339 UTC date-time, or null.
function parseDateTime(s) {
    const m = typeof s === 'string' ? DATETIME_RE.exec(s) : null;
    if (!m)
        return null;
    const [y, mo, d, h, mi, se] = m.slice(1, 7).map(Number);
    const days = new Date(Date.UTC(y, mo, 0)).getUTCDate();
    if (mo < 1 || mo > 12 || d < 1 || d > days || h > 23 || mi > 59 || se > 59)
        return null;
    const frac = BigInt((m[7] || '').padEnd(6, '0'));
    return BigInt(Date.UTC(y, mo - 1, d, h, mi, se)) * 1000n + frac;
}

function isoMicros(us) {
    const ms = Number(us / 1000n);
    const frac = String(us % 1000000n).padStart(6, '0');
    return new Date(ms).toISOString().slice(0, 19) + '.' + frac + 'Z';
}

function installDateTime(schema) {
    const t = schema.getType('DateTime');
    if (!t)
        return;
    const check = v => {
        if (parseDateTime(v) === null)
            throw new GraphQLError(`DateTime cannot represent an invalid date-time: ${JSON.stringify(v)}`);
        return v;
    };
    t.serialize = v => v;
    t.parseValue = check;
    // As the built-in scalars do: a literal's error names its node.
    t.parseLiteral = ast => {
        if (ast.kind !== Kind.STRING)
            throw new GraphQLError(`DateTime cannot represent a non-string value: ${gql.print(ast)}`, { nodes: ast });
        if (parseDateTime(ast.value) === null)
            throw new GraphQLError(`DateTime cannot represent an invalid date-time: ${gql.print(ast)}`, { nodes: ast });
        return ast.value;
    };
}

// ---- the reference's resolvers -------------------------------------------------------------

// Stand-ins for values that are not compared as they are.
const UPTIME_SENTINEL = 987654.321;

// A model of the store: the rows (newest first) and what the resolvers of
// issue #14 answer over them. `prefix` makes its cursors its own.
class Model {
    constructor(rows, system, prefix) {
        this.rows = rows.map(r => ({ ...r }));
        this.system = system;
        this.prefix = prefix;
        this.cursors = new Map();  // cursor string -> row id
    }

    cursorOf(id) {
        const c = Buffer.from(`${this.prefix}:${id}`).toString('base64url');
        this.cursors.set(c, id);
        return c;
    }

    // A Webhook as the REST row has it (so that fields joining both read
    // alike), with the GraphQL types' own forms where they differ.
    node(r) {
        return {
            ...r,
            id: String(r.id), source: r.source, eventType: r.eventType, payload: r.payload ?? null,
            receivedAt: r.receivedAt, ingress: r.ingress === true, contentType: r.contentType ?? null,
            deliveryId: r.deliveryId ?? null, bodyBytes: r.bodyBytes ?? null, bodySha256: r.bodySha256 ?? null,
            clientAddress: r.clientAddress ?? null,
        };
    }

    root() {
        return {
            webhook: ({ id }) => {
                const r = this.rows.find(x => String(x.id) === id);
                return r ? this.node(r) : null;
            },
            webhooks: args => this.webhooks(args),
            sources: () => this.sources(),
            system: () => ({ ...this.system }),
            deleteWebhook: ({ id }) => {
                const i = this.rows.findIndex(x => String(x.id) === id);
                if (i < 0)
                    return false;
                this.rows.splice(i, 1);
                return true;
            },
        };
    }

    webhooks({ first, after, source, eventType, receivedAfter, receivedBefore, deliveryId }) {
        let rows = this.rows;
        if (after != null) {
            const id = this.cursors.get(after);
            if (id === undefined)
                throw new GraphQLError('invalid cursor');
            rows = rows.filter(r => r.id < id);
        }
        if (source != null)
            rows = rows.filter(r => r.source === source);
        if (eventType != null)
            rows = rows.filter(r => r.eventType === eventType);
        if (deliveryId != null)
            rows = rows.filter(r => r.deliveryId === deliveryId);
        // Both bounds exclusive (docs/store-*.md).
        if (receivedAfter != null) {
            const t = parseDateTime(receivedAfter);
            rows = rows.filter(r => parseDateTime(r.receivedAt) > t);
        }
        if (receivedBefore != null) {
            const t = parseDateTime(receivedBefore);
            rows = rows.filter(r => parseDateTime(r.receivedAt) < t);
        }
        const page = rows.slice(0, first);
        return {
            edges: page.map(r => ({ cursor: this.cursorOf(r.id), node: this.node(r) })),
            pageInfo: {
                hasNextPage: rows.length > page.length,
                endCursor: page.length ? this.cursorOf(page[page.length - 1].id) : null,
            },
        };
    }

    sources() {
        const by = new Map();
        for (const r of this.rows) {
            const s = by.get(r.source) || { source: r.source, count: 0, lastReceivedAt: null };
            s.count++;
            if (s.lastReceivedAt === null || parseDateTime(r.receivedAt) > parseDateTime(s.lastReceivedAt))
                s.lastReceivedAt = r.receivedAt;
            by.set(r.source, s);
        }
        // By source name as the stores order text: UTF-8 bytes.
        return [...by.values()].sort((a, b) => Buffer.compare(Buffer.from(a.source), Buffer.from(b.source)));
    }
}

// What graphql-js answers for a document: {kind: 'syntax'|'invalid'|'exec', errors, result, op}.
async function reference(schema, model, source, variables, operationName) {
    let document;
    try {
        document = parse(source);
    } catch (e) {
        if (!(e instanceof GraphQLError))
            throw e;
        return { kind: 'syntax', errors: [e.toJSON()] };
    }
    const errors = validate(schema, document);
    if (errors.length)
        return { kind: 'invalid', errors: errors.map(e => e.toJSON()) };
    const op = getOperationAST(document, operationName ?? undefined);
    const result = await execute({
        schema, document, rootValue: model.root(), variableValues: variables ?? undefined,
        operationName: operationName ?? undefined,
    });
    return { kind: 'exec', result: JSON.parse(JSON.stringify(result)), op: op ? op.operation : null };
}

// ---- the side under test ------------------------------------------------------------

// hookd: POST /graphql. Resolves the parsed response, or {httpError}.
async function hookd(source, variables, operationName) {
    const body = { query: source };
    if (variables !== undefined)
        body.variables = variables;
    if (operationName !== undefined)
        body.operationName = operationName;
    let r;
    try {
        r = await request('POST', '/graphql', JSON.stringify(body), {
            'Content-Type': 'application/json', Accept: 'application/graphql-response+json, application/json',
        });
    } catch (e) {
        return { httpError: String(e.message || e) };
    }
    const ct = String(r.headers['content-type'] || '');
    if (!/^application\/(graphql-response\+)?json/.test(ct))
        return { httpError: `HTTP ${r.status}, Content-Type ${ct || '(none)'}: ${r.body.slice(0, 300)}` };
    try {
        const j = JSON.parse(r.body);
        if (j === null || typeof j !== 'object' || Array.isArray(j) || (!('data' in j) && !('errors' in j)))
            return { httpError: `HTTP ${r.status}: not a GraphQL response: ${r.body.slice(0, 300)}` };
        return j;
    } catch (e) {
        return { httpError: `HTTP ${r.status}: invalid JSON (${e.message}): ${r.body.slice(0, 300)}` };
    }
}

// ---- comparison ----------------------------------------------------------------------

const locKey = e => JSON.stringify((e.locations || []).map(l => [l.line, l.column]));
const pathKey = e => JSON.stringify(e.path ?? null);
const multiset = (errs, key) => errs.map(key).sort();
const sameList = (a, b) => a.length === b.length && a.every((x, i) => x === b[i]);

// The state shared by every comparison: which row each of the server's
// cursors stands for, learnt where the reference put a cursor of its own.
class Comparer {
    constructor(refModel) {
        this.refModel = refModel;
        this.serverCursors = new Map();
    }

    // Differences between the reference's data and the server's, as
    // "path: what" strings (at most a few).
    data(ref, got, path = 'data', out = []) {
        if (out.length >= 5)
            return out;
        if (typeof ref === 'string' && this.refModel.cursors.has(ref)) {
            const id = this.refModel.cursors.get(ref);
            if (typeof got !== 'string' || got === '') {
                out.push(`${path}: a cursor expected, got ${JSON.stringify(got)}`);
                return out;
            }
            const known = this.serverCursors.get(got);
            if (known === undefined)
                this.serverCursors.set(got, id);
            else if (known !== id)
                out.push(`${path}: cursor ${JSON.stringify(got)} stood for row ${known}, here for row ${id}`);
            return out;
        }
        if (ref === UPTIME_SENTINEL) {
            if (typeof got !== 'number' || !Number.isFinite(got) || got < 0)
                out.push(`${path}: uptimeMs should be a number, got ${JSON.stringify(got)}`);
            return out;
        }
        if (Array.isArray(ref)) {
            if (!Array.isArray(got)) {
                out.push(`${path}: expected a list of ${ref.length}, got ${brief(got)}`);
                return out;
            }
            if (ref.length !== got.length)
                out.push(`${path}: expected ${ref.length} items, got ${got.length}`);
            for (let i = 0; i < Math.min(ref.length, got.length); i++)
                this.data(ref[i], got[i], `${path}[${i}]`, out);
            return out;
        }
        if (ref !== null && typeof ref === 'object') {
            if (got === null || typeof got !== 'object' || Array.isArray(got)) {
                out.push(`${path}: expected an object, got ${brief(got)}`);
                return out;
            }
            const rk = Object.keys(ref), gk = Object.keys(got);
            if (!sameList(rk, gk)) {
                if (sameList([...rk].sort(), [...gk].sort()))
                    out.push(`${path}: keys in another order: expected ${rk.join(',')}, got ${gk.join(',')}`);
                else
                    out.push(`${path}: expected keys ${rk.join(',')}, got ${gk.join(',')}`);
            }
            for (const k of rk)
                if (k in got)
                    this.data(ref[k], got[k], `${path}.${k}`, out);
            return out;
        }
        if (ref !== got)
            out.push(`${path}: expected ${brief(ref)}, got ${brief(got)}`);
        return out;
    }
}

function brief(v) {
    const s = JSON.stringify(v);
    return s === undefined ? 'nothing' : s.length > 120 ? s.slice(0, 117) + '...' : s;
}

// Compare one answer pair. Returns {fail: [..], warn: [..]}.
function compare(cmp, ref, got) {
    const fail = [], warn = [];
    if (got.httpError) {
        fail.push(`no GraphQL response: ${got.httpError}`);
        return { fail, warn };
    }
    const gerrs = Array.isArray(got.errors) ? got.errors : [];
    if ('errors' in got && (!Array.isArray(got.errors) || got.errors.length === 0))
        fail.push('"errors" present but not a non-empty list');
    if (ref.kind === 'syntax' || ref.kind === 'invalid') {
        const what = ref.kind === 'syntax' ? 'syntax error' : 'validation errors';
        if ('data' in got)
            fail.push(`graphql-js reports ${what}, hookd answered with "data"`);
        if (gerrs.length !== ref.errors.length)
            fail.push(`${ref.errors.length} ${what} expected, got ${gerrs.length}`);
        else if (!sameList(multiset(ref.errors, locKey), multiset(gerrs, locKey)))
            fail.push(`error locations differ: expected ${multiset(ref.errors, locKey).join(' ')}, got ` +
                multiset(gerrs, locKey).join(' '));
        const rm = ref.errors.map(e => e.message).sort(), gm = gerrs.map(e => String(e.message)).sort();
        if (!sameList(rm, gm))
            (ref.kind === 'syntax' ? fail : warn).push(`messages differ: expected ${JSON.stringify(rm)}, got ` +
                JSON.stringify(gm));
        return { fail, warn };
    }
    const rr = ref.result;
    const rerrs = rr.errors || [];
    if (('data' in rr) !== ('data' in got))
        fail.push('data' in rr ? 'hookd answered without "data"' : 'hookd answered with "data", graphql-js without');
    else if ('data' in rr)
        fail.push(...cmp.data(rr.data, got.data));
    if (rerrs.length !== gerrs.length)
        fail.push(`${rerrs.length} errors expected, got ${gerrs.length}: ${brief(gerrs.map(e => e.message))}`);
    else if (!sameList(multiset(rerrs, pathKey), multiset(gerrs, pathKey)))
        fail.push(`error paths differ: expected ${multiset(rerrs, pathKey).join(' ')}, got ` +
            multiset(gerrs, pathKey).join(' '));
    else {
        if (!sameList(multiset(rerrs, locKey), multiset(gerrs, locKey)))
            warn.push(`error locations differ: expected ${multiset(rerrs, locKey).join(' ')}, got ` +
                multiset(gerrs, locKey).join(' '));
        const rm = rerrs.map(e => e.message).sort(), gm = gerrs.map(e => String(e.message)).sort();
        if (!sameList(rm, gm))
            warn.push(`messages differ: expected ${JSON.stringify(rm)}, got ${JSON.stringify(gm)}`);
    }
    return { fail, warn };
}

// ---- the corpus ------------------------------------------------------------------------

// A document's class, by the start of its file name: syntax-* must fail to
// parse, invalid-* must fail validation, mutation-* are executed last (they
// delete rows), anything else must be valid.
function expectedKind(name) {
    if (name.startsWith('syntax-'))
        return 'syntax';
    if (name.startsWith('invalid-'))
        return 'invalid';
    return 'exec';
}

function loadCorpus(dir) {
    const names = readdirSync(dir).filter(f => f.endsWith('.graphql')).map(f => f.slice(0, -8)).sort();
    const docs = names.map(name => {
        const source = readFileSync(join(dir, name + '.graphql'), 'utf8');
        const side = join(dir, name + '.json');
        let meta = {};
        if (existsSync(side)) {
            try {
                meta = JSON.parse(readFileSync(side, 'utf8'));
            } catch (e) {
                die(`${name}.json: ${e.message}`);
            }
            for (const k of Object.keys(meta))
                if (!['variables', 'operationName', 'follow', 'note'].includes(k))
                    die(`${name}.json: unknown key "${k}"`);
        }
        return { name, source, meta };
    });
    // Deletions last, so that every query sees the whole fixture.
    return [...docs.filter(d => !d.name.startsWith('mutation-')), ...docs.filter(d => d.name.startsWith('mutation-'))];
}

// Variables with placeholders for values only the running fixture knows:
// {"$idOf": k}, {"$timeOf": k}, {"$timeBetween": [k, j]}, {"$cursorOf": k}
// (k: the k-th newest row of the fixture as loaded, from 0; -1 is the
// oldest). A cursor is each side's own.
function substitute(v, fixture, cursorOf) {
    if (Array.isArray(v))
        return v.map(x => substitute(x, fixture, cursorOf));
    if (v === null || typeof v !== 'object')
        return v;
    const keys = Object.keys(v);
    const row = k => {
        const i = Number.isInteger(k) && k < 0 ? fixture.length + k : k;
        if (!Number.isInteger(i) || i < 0 || i >= fixture.length)
            die(`placeholder row ${k} is not in the fixture (${fixture.length} rows)`);
        return fixture[i];
    };
    if (keys.length === 1 && keys[0] === '$idOf')
        return String(row(v.$idOf).id);
    if (keys.length === 1 && keys[0] === '$timeOf')
        return row(v.$timeOf).receivedAt;
    if (keys.length === 1 && keys[0] === '$timeBetween') {
        const [a, b] = v.$timeBetween.map(k => parseDateTime(row(k).receivedAt));
        return isoMicros((a + b) / 2n);
    }
    if (keys.length === 1 && keys[0] === '$cursorOf')
        return cursorOf(row(v.$cursorOf).id);
    return Object.fromEntries(keys.map(k => [k, substitute(v[k], fixture, cursorOf)]));
}

function dig(obj, path) {
    let v = obj;
    for (const k of path)
        v = v == null ? undefined : v[k];
    return v;
}

// ---- main -------------------------------------------------------------------------------

const CALIBRATE = 'query Calibrate($after: String) { webhooks(first: 25, after: $after) { ' +
    'edges { cursor node { id } } pageInfo { hasNextPage endCursor } } }';

async function main() {
    let sdl, rows, system, server, serverCursorOf;
    const setupFail = [];
    if (opts.self) {
        sdl = SELF_SDL;
        rows = selfRows();
        system = { version: '0.0.0-self', store: 'sqlite', uptimeMs: UPTIME_SENTINEL, eventLoops: 2 };
    } else {
        if (opts.load) {
            const n = await loadFixture();
            console.log(`fixture: ${ENVELOPES.length + ENVELOPES_AFTER.length} envelopes and ${n} deliveries posted`);
        }
        const r = await request('GET', '/graphql/schema.graphql', undefined, {});
        if (r.status !== 200)
            die(`GET /graphql/schema.graphql: HTTP ${r.status}: ${r.body.slice(0, 300)}`);
        sdl = r.body;
        rows = await getJson('/api/webhooks?all=true');
        const info = await getJson('/api/system/info');
        system = { version: info.version, store: info.store, uptimeMs: UPTIME_SENTINEL, eventLoops: info.eventLoops };
    }
    let schema;
    try {
        schema = buildSchema(sdl);
    } catch (e) {
        die(`the SDL does not build in graphql-js: ${e.message}`);
    }
    installDateTime(schema);
    const fixture = rows.map(r => ({ ...r }));
    const refModel = new Model(rows, system, 'ref');

    if (opts.self) {
        // The stand-in for hookd: graphql-js over a model of its own whose
        // cursors differ from the reference's.
        const other = new Model(rows, system, 'v1');
        const otherSchema = buildSchema(sdl);
        installDateTime(otherSchema);
        server = async (source, variables, operationName) => {
            const a = await reference(otherSchema, other, source, variables, operationName);
            if (a.kind === 'exec')
                return a.result;
            return { errors: a.errors };
        };
    } else {
        server = hookd;
    }

    // Learn the server's cursor of every row by paging through all of them,
    // which also checks that paging returns each row once, newest first.
    const serverCursor = new Map();
    {
        const seen = [];
        let after = null;
        for (let page = 0; page < 1000; page++) {
            const got = await server(CALIBRATE, { after }, undefined);
            const conn = got && got.data && got.data.webhooks;
            if (!conn || got.errors) {
                setupFail.push(`paging through every row: page ${page}: ${brief(got)}`);
                break;
            }
            for (const e of conn.edges) {
                seen.push(e.node.id);
                serverCursor.set(e.node.id, e.cursor);
            }
            if (!conn.pageInfo.hasNextPage)
                break;
            after = conn.pageInfo.endCursor;
        }
        const want = rows.map(r => String(r.id));
        if (!setupFail.length && JSON.stringify(seen) !== JSON.stringify(want))
            setupFail.push(`paging through every row gave ${seen.length} rows (${brief(seen)}), ` +
                `the REST list ${want.length} (${brief(want)})`);
    }
    serverCursorOf = id => {
        const c = serverCursor.get(String(id));
        if (c === undefined)
            die(`no cursor of the server for row ${id}`);
        return c;
    };

    const cmp = new Comparer(refModel);
    for (const [id, c] of serverCursor)
        cmp.serverCursors.set(c, Number(id));
    const docs = loadCorpus(opts.corpus).filter(d => !opts.only || d.name.includes(opts.only));
    let agree = 0, differ = 0;
    const warnings = [];
    const details = [];
    const dumped = [];
    for (const doc of docs) {
        const fails = [];
        const { meta } = doc;
        const vars = cursorOf => meta.variables === undefined ? undefined
            : substitute(meta.variables, fixture, cursorOf);
        const refVars = vars(id => refModel.cursorOf(id));
        const gotVars = vars(serverCursorOf);
        let ref = await reference(schema, refModel, doc.source, refVars, meta.operationName);
        const want = expectedKind(doc.name);
        if (ref.kind !== want)
            fails.push(`corpus: graphql-js finds this document ${ref.kind === 'exec' ? 'valid' : ref.kind === 'syntax'
                ? 'syntactically wrong' : 'invalid'}, its name says ${want === 'exec' ? 'valid' : want}` +
                (ref.errors ? `: ${ref.errors[0].message}` : ''));
        if (ref.kind === 'exec' && ref.op === 'mutation' && !doc.name.startsWith('mutation-'))
            fails.push('corpus: a mutation that runs must be named mutation-* (they run last)');
        if (opts.dump)
            dumped.push(JSON.stringify({ name: doc.name,
                graphqljs: ref.kind === 'exec' ? ref.result : { errors: ref.errors } }));
        let got = await server(doc.source, gotVars, meta.operationName);
        let steps = 1;
        let r = compare(cmp, ref, got);
        fails.push(...r.fail);
        warnings.push(...r.warn.map(w => `${doc.name}: ${w}`));
        // A paging sequence: each side follows its own endCursor.
        if (meta.follow && ref.kind === 'exec' && !r.fail.length) {
            const f = meta.follow;
            let refVarsN = { ...refVars }, gotVarsN = { ...gotVars };
            while (steps < (f.maxSteps || 100)) {
                const rp = dig(ref.result.data, f.path), gp = dig(got.data, f.path);
                if (!rp || !rp.hasNextPage)
                    break;
                refVarsN = { ...refVarsN, [f.var]: rp.endCursor };
                gotVarsN = { ...gotVarsN, [f.var]: gp && gp.endCursor };
                ref = await reference(schema, refModel, doc.source, refVarsN, meta.operationName);
                got = await server(doc.source, gotVarsN, meta.operationName);
                steps++;
                r = compare(cmp, ref, got);
                if (r.fail.length) {
                    fails.push(...r.fail.map(x => `page ${steps}: ${x}`));
                    break;
                }
            }
            if (f.minSteps && steps < f.minSteps && !fails.length)
                fails.push(`corpus: the sequence took ${steps} pages, fewer than the ${f.minSteps} it is meant to`);
        }
        if (fails.length) {
            differ++;
            console.log(`DIFFER ${doc.name}: ${fails.join('; ')}`);
            details.push(`--- ${doc.name}${steps > 1 ? ` (page ${steps})` : ''}\n` +
                `document: ${brief(doc.source)}\n` +
                (refVars !== undefined ? `variables: ${brief(refVars)}\n` : '') +
                `graphql-js: ${clip(ref.kind === 'exec' ? ref.result : { errors: ref.errors })}\n` +
                `hookd:      ${clip(got)}`);
        } else {
            agree++;
            if (opts.verbose)
                console.log(`agree  ${doc.name}`);
        }
    }

    // After the deletions: the server's rows are the model's.
    if (!opts.self && docs.some(d => d.name.startsWith('mutation-'))) {
        const after = (await getJson('/api/webhooks?all=true')).map(r => r.id);
        const model = refModel.rows.map(r => r.id);
        if (JSON.stringify(after) !== JSON.stringify(model))
            setupFail.push(`after the mutations the store holds ${brief(after)}, the model ${brief(model)}`);
    }

    if (opts.dump)
        writeFileSync(opts.dump, dumped.join('\n') + '\n');
    for (const s of setupFail)
        console.log(`DIFFER (setup): ${s}`);
    if (warnings.length) {
        console.log(`\n${warnings.length} warnings (messages or execution error locations differ; not failures):`);
        for (const w of warnings.slice(0, 200))
            console.log(`  warn ${w}`);
    }
    if (details.length) {
        console.log('\nthe answers that differ:');
        for (const d of details.slice(0, 60))
            console.log(d);
    }
    console.log(`\n${docs.length} documents: ${agree} agree, ${differ} differ` +
        (setupFail.length ? ` (and ${setupFail.length} setup checks failed)` : ''));
    agent.destroy();
    process.exit(differ || setupFail.length ? 1 : 0);
}

function clip(v) {
    const s = JSON.stringify(v);
    return s.length > 2000 ? s.slice(0, 2000) + '...' : s;
}

main().catch(e => {
    console.error(`difftest: ${e.stack || e}`);
    process.exit(2);
});
