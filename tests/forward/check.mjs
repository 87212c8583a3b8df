// SPDX-License-Identifier: MIT
// Every request a sink recorded (tests/forward/sink.py's ledger, JSON lines)
// read back as a CloudEvent by the CloudEvents JavaScript SDK, and checked:
//
//   - the mode by Content-Type (application/cloudevents+json: structured;
//     anything else: binary; batches are refused, hookd sends none);
//   - binary: each ce- header once, its value percent-encoded as the HTTP
//     binding 3.1.3.2 says (printable ASCII, no space or '"', '%' only as
//     %XY) and decoding to UTF-8 without control characters; no
//     ce-datacontenttype header; then HTTP.toEvent and event.validate();
//     the data the SDK hands over matches the body;
//   - structured: the body one UTF-8 JSON object, data_base64 canonical
//     base64 and never beside data; then HTTP.toEvent and event.validate();
//   - specversion 1.0, and ce-id unique per row: requests with the same
//     (source, id) carry the same event (retries), attributes and data.
//
// The SDK (8.x) leaves header values percent-encoded and runs a JSON body
// that does not start with [, { or " through JSON.parse as a quoted
// string; the script decodes headers itself and hands such bodies over as
// bytes, so that it judges hookd and not those shortcuts.
//
//   node check.mjs --sdk DIR [--min N] [--mode binary|structured] [--verbose] LEDGER
//
// DIR holds node_modules/cloudevents. Exit 0 when every event is valid (and
// at least N, default 1, were recorded), 1 otherwise, naming each bad one.
import { readFileSync } from "node:fs";
import { createRequire } from "node:module";
import { isDeepStrictEqual } from "node:util";
import path from "node:path";

function usage(msg) {
  if (msg) console.error(`check.mjs: ${msg}`);
  console.error("usage: node check.mjs --sdk DIR [--min N] [--mode binary|structured] [--verbose] LEDGER");
  process.exit(2);
}

const opts = { sdk: null, min: 1, mode: null, verbose: false, ledger: null };
const argv = process.argv.slice(2);
for (let i = 0; i < argv.length; i++) {
  const a = argv[i];
  if (a === "--sdk") opts.sdk = argv[++i];
  else if (a === "--min") opts.min = Number(argv[++i]);
  else if (a === "--mode") opts.mode = argv[++i];
  else if (a === "--verbose") opts.verbose = true;
  else if (a.startsWith("--")) usage(`unknown option ${a}`);
  else if (opts.ledger === null) opts.ledger = a;
  else usage("one ledger");
}
if (!opts.sdk || !opts.ledger) usage();
if (!Number.isInteger(opts.min) || opts.min < 0) usage("--min: a count");
if (opts.mode !== null && opts.mode !== "binary" && opts.mode !== "structured") usage("--mode: binary or structured");

const require = createRequire(path.resolve(opts.sdk) + "/");
const { HTTP, CloudEvent } = require("cloudevents");
const sdkVersion = require("cloudevents/package.json").version;

const utf8 = new TextDecoder("utf-8", { fatal: true });
const CONTROL = /[\u0000-\u001f\u007f-\u009f]/;

class Invalid extends Error {}
function fail(msg) {
  throw new Invalid(msg);
}

// A ce- header value as the binding encodes it, decoded; throws Invalid.
function decodeHeader(name, v) {
  if (!/^[\x21-\x7e]*$/.test(v)) fail(`${name}: a byte outside printable ASCII (or a space): ${JSON.stringify(v)}`);
  if (v.includes('"')) fail(`${name}: an unencoded '"': ${v}`);
  const bytes = [];
  for (let i = 0; i < v.length; i++) {
    if (v[i] !== "%") {
      bytes.push(v.charCodeAt(i));
      continue;
    }
    const hex = v.slice(i + 1, i + 3);
    if (!/^[0-9A-Fa-f]{2}$/.test(hex)) fail(`${name}: '%' not followed by two hex digits: ${v}`);
    bytes.push(parseInt(hex, 16));
    i += 2;
  }
  let s;
  try {
    s = utf8.decode(Uint8Array.from(bytes));
  } catch {
    fail(`${name}: percent-decodes to invalid UTF-8: ${v}`);
  }
  if (CONTROL.test(s)) fail(`${name}: decodes to a control character: ${v}`);
  return s;
}

// Keys sorted at every level: one spelling per JSON value.
function stable(v) {
  if (Array.isArray(v)) return `[${v.map(stable).join(",")}]`;
  if (v && typeof v === "object")
    return `{${Object.keys(v)
      .sort()
      .map((k) => `${JSON.stringify(k)}:${stable(v[k])}`)
      .join(",")}}`;
  return JSON.stringify(v);
}

function isJsonType(ct) {
  if (!ct) return false;
  const base = ct.split(";")[0].trim().toLowerCase();
  return base === "application/json" || /^[^/]+\/[^/]+\+json$/.test(base);
}

// The data as a comparable string: parsed JSON when the type says JSON and
// the bytes are, else the bytes.
function dataKey(ct, bytes) {
  if (bytes === null) return "none";
  if (isJsonType(ct)) {
    try {
      return "json:" + stable(JSON.parse(utf8.decode(bytes)));
    } catch {
      /* not JSON after all: bytes */
    }
  }
  return "b64:" + Buffer.from(bytes).toString("base64");
}

// RFC 3339, as CloudEvents' Timestamp type requires; the SDK replaces a
// time it cannot read with the current one, so it is checked here.
function checkTime(t) {
  if (t === undefined) return;
  const m = typeof t === "string" &&
    /^(\d{4})-(\d{2})-(\d{2})[Tt](\d{2}):(\d{2}):(\d{2})(\.\d+)?([Zz]|[+-](\d{2}):(\d{2}))$/.exec(t);
  if (!m) fail(`time ${JSON.stringify(t)}: not RFC 3339`);
  const [y, mo, d, h, mi, s] = m.slice(1, 7).map(Number);
  const days = new Date(Date.UTC(y, mo, 0)).getUTCDate();
  if (mo < 1 || mo > 12 || d < 1 || d > days || h > 23 || mi > 59 || s > 60 ||
      (m[9] !== undefined && (Number(m[9]) > 23 || Number(m[10]) > 59)))
    fail(`time ${t}: no such moment`);
}

function errText(e) {
  return String(e.message).replace(/\s+/g, " ").trim();
}

function sdkValidate(message) {
  let event;
  try {
    event = HTTP.toEvent(message);
  } catch (e) {
    fail(`the SDK cannot read it: ${errText(e)}`);
  }
  if (Array.isArray(event)) fail("a batch");
  if (!(event instanceof CloudEvent)) fail("the SDK did not return a CloudEvent");
  try {
    event.validate();
  } catch (e) {
    fail(`invalid: ${errText(e)}`);
  }
  if (event.specversion !== "1.0") fail(`specversion ${event.specversion}`);
  return event;
}

function checkBinary(headers, body) {
  const attrs = {};
  const plain = {};
  for (const [name, value] of Object.entries(headers)) {
    if (!name.startsWith("ce-")) {
      plain[name] = value;
      continue;
    }
    const attr = name.slice(3);
    if (!/^[a-z0-9]+$/.test(attr)) fail(`${name}: not a CloudEvents attribute name`);
    if (attr === "datacontenttype") fail("ce-datacontenttype: binary mode takes Content-Type");
    attrs[attr] = decodeHeader(name, value);
  }
  for (const a of ["specversion", "id", "source", "type"])
    if (!(a in attrs)) fail(`no ce-${a}`);
  if (attrs.specversion !== "1.0") fail(`ce-specversion ${attrs.specversion}`);
  checkTime(attrs.time);
  const ct = plain["content-type"];
  const msgHeaders = { ...plain };
  for (const [a, v] of Object.entries(attrs)) msgHeaders["ce-" + a] = v;
  // Text the SDK's JSON path reads as it is, bytes otherwise (see the top).
  let text = null;
  try {
    text = utf8.decode(body);
  } catch {
    /* not text */
  }
  const jsonPath = text !== null && (ct === "application/json" || ct === "application/json; charset=utf-8");
  const asText = text !== null && body.length > 0 && (!jsonPath || /^[[{"]/.test(text));
  const event = sdkValidate({ headers: msgHeaders, body: asText ? text : Buffer.from(body) });
  if (body.length === 0) {
    if (event.data !== undefined && event.data !== "" && !(ArrayBuffer.isView(event.data) && event.data.length === 0))
      fail("data where the body is empty");
  } else if (asText && jsonPath) {
    if (!isDeepStrictEqual(event.data, JSON.parse(text))) fail("data differs from the body (JSON)");
  } else if (asText) {
    if (event.data !== text) fail("data differs from the body (text)");
  } else if (!ArrayBuffer.isView(event.data) || Buffer.compare(Buffer.from(event.data), Buffer.from(body)) !== 0) {
    fail("data differs from the body (bytes)");
  }
  if (ct !== undefined) attrs.datacontenttype = ct;
  return { attrs, data: dataKey(ct, body.length ? body : null) };
}

function checkStructured(headers, body) {
  for (const name of Object.keys(headers))
    if (name.startsWith("ce-")) decodeHeader(name, headers[name]);   // optional in this mode, but well-formed
  let text, obj;
  try {
    text = utf8.decode(body);
  } catch {
    fail("the body is not UTF-8");
  }
  try {
    obj = JSON.parse(text);
  } catch (e) {
    fail(`the body is not JSON: ${e.message}`);
  }
  if (!obj || typeof obj !== "object" || Array.isArray(obj)) fail("the body is not a JSON object");
  if (obj.specversion !== "1.0") fail(`specversion ${JSON.stringify(obj.specversion)}`);
  checkTime(obj.time);
  for (const [k, v] of Object.entries(obj)) {
    if (k !== "data" && k !== "data_base64" && !/^[a-z0-9]+$/.test(k)) fail(`attribute name ${JSON.stringify(k)}`);
    if (k !== "data" && typeof v === "string" && CONTROL.test(v)) fail(`${k}: a control character`);
  }
  let bytes = null;
  if ("data_base64" in obj) {
    if ("data" in obj) fail("both data and data_base64");
    const b = obj.data_base64;
    if (typeof b !== "string" || Buffer.from(b, "base64").toString("base64") !== b)
      fail("data_base64 is not canonical base64");
    bytes = Buffer.from(b, "base64");
  }
  sdkValidate({ headers: { "content-type": headers["content-type"] }, body: text });
  const attrs = {};
  for (const [k, v] of Object.entries(obj)) if (k !== "data" && k !== "data_base64") attrs[k] = v;
  let data;
  if ("data" in obj) data = isJsonType(obj.datacontenttype) ? "json:" + stable(obj.data) : "value:" + stable(obj.data);
  else data = dataKey(obj.datacontenttype, bytes);
  return { attrs, data };
}

const lines = readFileSync(opts.ledger, "utf8").split("\n");
const byId = new Map();   // source + " " + id -> { key, where }
let n = 0, bad = 0, binary = 0, structured = 0, repeats = 0;
for (let ln = 0; ln < lines.length; ln++) {
  if (lines[ln].trim() === "") continue;
  let rec;
  try {
    rec = JSON.parse(lines[ln]);
  } catch {
    console.error(`${opts.ledger}:${ln + 1}: not a JSON line`);
    bad++;
    continue;
  }
  n++;
  const where = `${opts.ledger}:${ln + 1} (seq ${rec.seq}, ${rec.method} ${rec.path})`;
  try {
    if (rec.method !== "POST") fail(`method ${rec.method}`);
    const headers = {};
    for (const [k, v] of rec.headers) {
      const name = k.toLowerCase();
      if (name in headers && (name.startsWith("ce-") || name === "content-type")) fail(`${name} sent twice`);
      headers[name] = v;
    }
    const body = Buffer.from(rec.body, "base64");
    const ct = headers["content-type"] || "";
    let r;
    if (ct.toLowerCase().startsWith("application/cloudevents-batch")) fail("a batch");
    if (ct.toLowerCase().startsWith("application/cloudevents")) {
      structured++;
      if (opts.mode === "binary") fail("structured mode where binary was expected");
      r = checkStructured(headers, body);
    } else {
      binary++;
      if (opts.mode === "structured") fail("binary mode where structured was expected");
      r = checkBinary(headers, body);
    }
    const id = `${r.attrs.source} ${r.attrs.id}`;
    const key = stable(r.attrs) + "\n" + r.data;
    const seen = byId.get(id);
    if (seen) {
      if (seen.key !== key) fail(`ce-id ${r.attrs.id} (source ${r.attrs.source}) already named another event at ${seen.where}`);
      repeats++;
    } else {
      byId.set(id, { key, where });
    }
    if (opts.verbose) console.log(`${where}: ok ${r.attrs.type} id ${r.attrs.id}`);
  } catch (e) {
    if (!(e instanceof Invalid)) throw e;
    console.error(`${where}: ${e.message}`);
    bad++;
  }
}
const summary = `${n} events (${binary} binary, ${structured} structured), ${byId.size} ids, ${repeats} repeats; cloudevents ${sdkVersion}`;
if (bad) {
  console.error(`check.mjs: ${bad} invalid of ${summary}`);
  process.exit(1);
}
if (n < opts.min) {
  console.error(`check.mjs: ${n} events recorded, at least ${opts.min} expected`);
  process.exit(1);
}
console.log(`check.mjs: all valid: ${summary}`);
