# SPDX-License-Identifier: MIT
"""What GraphQL costs (docs/graphql.md, issue 14), three figures:

- a page over GraphQL next to the same page over REST: POST /graphql with
  `webhooks(first: 20)` (edges with cursor and node {id source eventType
  payload receivedAt}, pageInfo) and GET /api/webhooks?limit=20, each on a
  fresh server of the same build and store holding the same 1000 envelopes
  (POSTed right after ready, before the load), one right after the other, at
  100 connections for the mix's duration, both through bench/wrk/graphql.lua;
- the first GraphQL query after ready: the server started on a store that
  already holds those rows, its health path polled every 0.1 ms from the
  load CPUs, and at the first 200 the query is timed on a fresh connection,
  connect to EOF, as bench/coldstart times the first GET (-f); then a second
  query and a GET /q/health/live the same way (what the probe itself costs);
- parse + validate of a 2 KB query: bench/gq_parse_bench (its own build
  directory's), pinned to the server CPUs, median ns per pass.

The issue's targets, in the same run: GraphQL req/s >= 0.8x REST's on each
store, the first query <= 2 ms, parse + validate <= 20 us. Before each load
the harness reads the page both ways by hand: the two must name the same 20
rows (the newest first), and GraphQL must answer without "errors". During
the load a GraphQL answer with "errors", or a REST answer that is not a JSON
array, counts as "2xxOther" (in non2xx) and fails the measurement."""

import copy
import http.client
import json
import os
import socket
import statistics
import time

from . import jsonout, measure, parse, procs, system

ROWS = 1000
PAGE = 20
REST_PATH = f"/api/webhooks?limit={PAGE}"
GRAPHQL_PATH = "/graphql"
# Printed as graphql-js's print() prints it, as clients send it.
QUERY = ("query Page {\n  webhooks(first: %d) {\n    edges {\n      cursor\n      node {\n        id\n        source\n"
         "        eventType\n        payload\n        receivedAt\n      }\n    }\n    pageInfo {\n      hasNextPage\n"
         "      endCursor\n    }\n  }\n}" % PAGE)
ACCEPT = "application/graphql-response+json, application/json;q=0.9"
LIMITS = {"rpsRatioMin": 0.8, "firstQueryMsMax": 2.0, "parseValidateUsMax": 20.0}
SOURCES = ("github", "stripe", "gitlab", "stripe", "bitbucket")
EVENTS = {"github": "push", "stripe": "charge.succeeded", "gitlab": "merge_request", "bitbucket": "repo:push"}
PARSE_BENCH = os.path.join("bench", "gq_parse_bench")


def envelope(i):
    """Row i (1-based) of the store's content: a POST /api/webhooks body,
    the same in every run, about 300 bytes."""
    source = SOURCES[(i - 1) % len(SOURCES)]
    payload = json.dumps({"id": f"evt_{i:08d}", "type": EVENTS[source], "created": 1764590400 + i,
                          "data": {"object": {"id": f"obj_{i:08d}", "amount": 100 * (i % 50 + 1), "currency": "eur",
                                              "description": f"Order {1000 + i}", "status": "succeeded"}}},
                         separators=(",", ":"))
    return {"source": source, "eventType": EVENTS[source], "payload": payload}


def graphql_body(query=QUERY):
    return json.dumps({"query": query, "operationName": "Page"}, separators=(",", ":")).encode()


def graphql_target(t):
    """The target under the profile's own name (a scratch dir of its own)."""
    g = copy.copy(t)
    g.name = t.name + "-graphql"
    return g


def _post_json(c, path, body, headers=None):
    h = {"Content-Type": "application/json"}
    h.update(headers or {})
    c.request("POST", path, body=body, headers=h)
    r = c.getresponse()
    return r.status, r.read().decode("utf-8", "replace")


def preload(port, rows=ROWS, timeout=10.0):
    """POST rows 1..rows on one keep-alive connection; each must answer 201."""
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=timeout)
    try:
        for i in range(1, rows + 1):
            status, body = _post_json(c, "/api/webhooks", json.dumps(envelope(i), separators=(",", ":")))
            if status != 201:
                raise RuntimeError(f"preloading row {i}: POST /api/webhooks answered {status}: {body[:200]!r}")
    finally:
        c.close()


def rest_ids(status, body):
    """The ids of a GET /api/webhooks answer, in order (as strings)."""
    if status != 200:
        raise RuntimeError(f"GET {REST_PATH} answered {status}: {body[:200]!r}")
    try:
        rows = json.loads(body)
    except ValueError:
        raise RuntimeError(f"GET {REST_PATH} answered 200 with a body that is not JSON: {body[:200]!r}") from None
    if not isinstance(rows, list) or not all(isinstance(r, dict) and "id" in r for r in rows):
        raise RuntimeError(f"GET {REST_PATH} answered 200 but not with a list of rows: {body[:200]!r}")
    return [str(r["id"]) for r in rows]


def graphql_ids(status, body):
    """The node ids of a webhooks connection in a POST /graphql answer, in
    order; raises with the first error's message when there are errors."""
    try:
        doc = json.loads(body)
    except ValueError:
        raise RuntimeError(f"POST {GRAPHQL_PATH} answered {status} with a body that is not JSON: "
                           f"{body[:200]!r}") from None
    errs = doc.get("errors") if isinstance(doc, dict) else None
    if errs:
        first = errs[0].get("message") if isinstance(errs[0], dict) else errs[0]
        raise RuntimeError(f"POST {GRAPHQL_PATH} answered {status} with {len(errs)} error(s): {str(first)[:200]}")
    if status != 200:
        raise RuntimeError(f"POST {GRAPHQL_PATH} answered {status}: {body[:200]!r}")
    conn = (doc.get("data") or {}).get("webhooks") if isinstance(doc, dict) else None
    if not isinstance(conn, dict) or not isinstance(conn.get("edges"), list) or not isinstance(conn.get("pageInfo"),
                                                                                               dict):
        raise RuntimeError(f"POST {GRAPHQL_PATH} answered 200 without data.webhooks {{edges, pageInfo}}: "
                           f"{body[:200]!r}")
    ids = []
    for e in conn["edges"]:
        node = e.get("node") if isinstance(e, dict) else None
        if not isinstance(node, dict) or not isinstance(node.get("id"), str) or not isinstance(e.get("cursor"), str):
            raise RuntimeError(f"POST {GRAPHQL_PATH}: an edge without a cursor or a node id: {str(e)[:200]}")
        ids.append(node["id"])
    if ids and conn["pageInfo"].get("endCursor") != conn["edges"][-1]["cursor"]:
        raise RuntimeError(f"POST {GRAPHQL_PATH}: pageInfo.endCursor is not the last edge's cursor")
    return ids


def expect_same_page(rest, gql, rows=ROWS, page=PAGE):
    """Both answers name the newest `page` rows of the `rows` preloaded,
    newest first (ids rows, rows-1, ...: the store was empty before)."""
    want = [str(i) for i in range(rows, max(rows - page, 0), -1)]
    if rest != want:
        raise RuntimeError(f"GET {REST_PATH} named rows {rest[:5]}..., expected {want[:5]}... ({len(want)} rows)")
    if gql != rest:
        raise RuntimeError(f"POST {GRAPHQL_PATH} named rows {gql[:5]}... ({len(gql)}), REST {rest[:5]}... "
                           f"({len(rest)}): not the same page")


def read_page(port, timeout=5.0):
    """(REST ids, GraphQL ids) of the first page, each on a fresh connection."""
    out = []
    for kind in ("rest", "graphql"):
        c = http.client.HTTPConnection("127.0.0.1", port, timeout=timeout)
        try:
            if kind == "rest":
                c.request("GET", REST_PATH)
                r = c.getresponse()
                out.append(rest_ids(r.status, r.read().decode("utf-8", "replace")))
            else:
                out.append(graphql_ids(*_post_json(c, GRAPHQL_PATH, graphql_body(), {"Accept": ACCEPT})))
        finally:
            c.close()
    return tuple(out)


def check_point(p, what):
    """A load point counts only when every answer was a good 200 (non2xx
    includes graphql.lua's 2xxOther) and wrk saw no socket error."""
    bad = []
    if p.get("non2xx"):
        bad.append(f"{p['non2xx']} answers that were not a good 200 (status classes {p.get('statusClasses')})")
    if p.get("socketErrorsTotal"):
        bad.append(f"{p['socketErrorsTotal']} socket errors ({p.get('socketErrors')})")
    if p.get("requests", 0) <= 0:
        bad.append("no request completed")
    if bad:
        raise RuntimeError(f"{what}: " + "; ".join(bad))


# ---- the first query after ready ----------------------------------------------

def _raw_get(path):
    return f"GET {path} HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n".encode()


def _raw_graphql():
    body = graphql_body()
    return (f"POST {GRAPHQL_PATH} HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\nAccept: {ACCEPT}\r\n"
            f"Content-Type: application/json\r\nContent-Length: {len(body)}\r\n\r\n").encode() + body


def timed_request(port, raw, timeout=5.0):
    """One whole request on a fresh connection, read to EOF (Connection:
    close): (ms from before connect to EOF, status, body text)."""
    t0 = time.perf_counter()
    s = socket.create_connection(("127.0.0.1", port), timeout=timeout)
    try:
        s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        s.sendall(raw)
        chunks = []
        while True:
            b = s.recv(65536)
            if not b:
                break
            chunks.append(b)
        ms = (time.perf_counter() - t0) * 1000
    finally:
        s.close()
    data = b"".join(chunks)
    head, _, body = data.partition(b"\r\n\r\n")
    try:
        status = int(head.split(b" ", 2)[1])
    except (IndexError, ValueError):
        status = None
    return ms, status, body.decode("utf-8", "replace")


def poll_ready(p, port, path, timeout=30.0, pause_s=0.0001):
    """Poll GET path until 200, pausing 0.1 ms after a refused connection
    (as bench/coldstart does); raises when the process exits first or the
    time is up."""
    raw = _raw_get(path)
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            _, status, _ = timed_request(port, raw, timeout=2.0)
            if status == 200:
                return
        except OSError:
            time.sleep(pause_s)
        if p.poll() is not None:
            raise RuntimeError(f"exited with status {p.returncode} before answering on port {port}")
    raise RuntimeError(f"no 200 from {path} on port {port} within {timeout:.0f} s")


def _median(xs):
    xs = [x for x in xs if x is not None]
    return statistics.median(xs) if xs else None


def summarize_first(runs):
    """The first-query figures over the starts (medians; firstRun: the
    first start's). Raises when a query answered with errors or other than
    200, or named another page than the one preloaded."""
    if not runs:
        raise RuntimeError("no start was measured")
    for r in runs:
        if r.get("firstStatus") != 200 or r.get("secondStatus") != 200 or r.get("liveStatus") != 200:
            raise RuntimeError(f"run {r.get('run')}: the first query, the second and GET /q/health/live answered "
                               f"{r.get('firstStatus')}, {r.get('secondStatus')}, {r.get('liveStatus')}; "
                               "expected 200 each")
    return {
        "firstQueryMs": _median([r["firstQueryMs"] for r in runs]),
        "secondQueryMs": _median([r["secondQueryMs"] for r in runs]),
        "liveMs": _median([r["liveMs"] for r in runs]),
        "execToFirstQueryMs": _median([r["execToFirstQueryMs"] for r in runs]),
        "firstRun": {k: runs[0].get(k) for k in ("firstQueryMs", "secondQueryMs", "liveMs", "execToFirstQueryMs")},
        "runs": runs,
    }


def first_query(cfg, t, db, rows, runs):
    """`runs` starts of the target on a store preloaded with `rows` by a
    server of its own first; each: poll ready, then the first query, a
    second one and GET /q/health/live, each timed on a fresh connection."""
    port = system.free_port()
    tmp, cmd, env = measure._render(cfg, t, port, db)
    if t.fresh_store:
        t.fresh_store(tmp, env, db)
    cwd = t.cwd or tmp
    log = os.path.join(cfg.work, f"{t.name}.first.log")
    p = procs.start(cmd, env=env, cwd=cwd, log=log, cpus=cfg.server_cpus)
    try:
        procs.wait_ready(p, port, t.health, timeout=30)
        preload(port, rows)
    finally:
        procs.stop(p)
    procs.wait_port_free(port)
    q = measure.quiet_check(cfg, f"{t.name} first GraphQL query")
    gql, live = _raw_graphql(), _raw_get("/q/health/live")
    saved = os.sched_getaffinity(0)
    out = []
    try:
        # The probe runs where bench/coldstart runs: on the load CPUs.
        if cfg.load_cpus:
            os.sched_setaffinity(0, cfg.load_cpus)
        for n in range(runs):
            t0 = time.perf_counter()
            p = procs.start(cmd, env=env, cwd=cwd, log=log, cpus=cfg.server_cpus)
            try:
                poll_ready(p, port, t.health)
                first_ms, first_st, first_body = timed_request(port, gql)
                exec_ms = (time.perf_counter() - t0) * 1000
                second_ms, second_st, second_body = timed_request(port, gql)
                live_ms, live_st, _ = timed_request(port, live)
            finally:
                procs.stop(p)
            # The page both times: the same rows as the store holds.
            got = graphql_ids(first_st, first_body)
            want = [str(i) for i in range(rows, max(rows - PAGE, 0), -1)]
            if got != want or graphql_ids(second_st, second_body) != want:
                raise RuntimeError(f"run {n}: the first query named rows {got[:5]}..., expected {want[:5]}...")
            out.append({"run": n, "firstQueryMs": first_ms, "firstStatus": first_st, "secondQueryMs": second_ms,
                        "secondStatus": second_st, "liveMs": live_ms, "liveStatus": live_st,
                        "execToFirstQueryMs": exec_ms})
            procs.wait_port_free(port)
    finally:
        os.sched_setaffinity(0, saved)
    res = summarize_first(out)
    res["rows"] = rows
    res["note"] = ("first POST /graphql after the first 200 of the health path, fresh connection, connect to EOF "
                   "(Python on the load CPUs); liveMs: GET /q/health/live timed the same way; execToFirstQueryMs "
                   "counts from before the server's Popen (taskset included)")
    res.update(q)
    return res


# ---- parse + validate -----------------------------------------------------------

def parse_bench_output(text):
    """The JSON line that bench/gq_parse_bench prints; raises ParseError."""
    for line in reversed(text.splitlines()):
        line = line.strip()
        if line.startswith("{"):
            try:
                d = json.loads(line)
            except ValueError as e:
                raise parse.ParseError(f"bad gq_parse_bench line: {e}") from None
            if not jsonout.is_number(d.get("medianNs")):
                raise parse.ParseError("gq_parse_bench printed no medianNs")
            d["medianUs"] = d["medianNs"] / 1000
            return d
    raise parse.ParseError("no JSON line in gq_parse_bench's output")


def parse_bench_path(hookd_path):
    """The microbenchmark beside a hookd binary: its build dir's bench/."""
    return os.path.join(os.path.dirname(os.path.abspath(hookd_path)), PARSE_BENCH)


def run_parse_bench(cfg, path, iterations, runs, limits=LIMITS):
    """{"status": "ok", the figures, "met"} or {"status": "failed"|"skipped", "reason"}."""
    if not os.path.exists(path):
        return {"status": "skipped", "reason": f"no {path} (built with hookd: bench/meson.build)"}
    q = measure.quiet_check(cfg, "gq_parse_bench")
    try:
        r = procs.run([path, "-n", str(iterations), "-r", str(runs)], timeout=300, cpus=cfg.server_cpus)
    except Exception as e:  # noqa: BLE001 - recorded, the run goes on
        return {"status": "failed", "reason": f"{type(e).__name__}: {e}"[:500], "binary": path}
    if r.returncode != 0:
        return {"status": "failed", "reason": f"gq_parse_bench exited {r.returncode}: {r.stderr.strip()[-400:]}",
                "binary": path}
    try:
        out = parse_bench_output(r.stdout)
    except parse.ParseError as e:
        return {"status": "failed", "reason": str(e), "binary": path}
    out.update({"status": "ok", "binary": path})
    out["met"] = out["medianUs"] <= limits["parseValidateUsMax"]
    out.update(q)
    return out


# ---- the comparison ---------------------------------------------------------------

def _num(v):
    return v if jsonout.is_number(v) else None


def summarize(rest, gql, first=None, parse_us=None, limits=LIMITS):
    """rpsRatio = GraphQL/REST, cpuUsDelta = GraphQL - REST (server CPU per
    request), the GraphQL p99, the first query's median, the variant's
    parse + validate median, and which targets they meet (None: not
    measured)."""
    r_rps, g_rps = _num(rest.get("rps")), _num(gql.get("rps"))
    r_cpu, g_cpu = _num(rest.get("serverCpuUsPerRequest")), _num(gql.get("serverCpuUsPerRequest"))
    ratio = g_rps / r_rps if r_rps and g_rps is not None else None
    first_ms = _num((first or {}).get("firstQueryMs"))
    parse_us = _num(parse_us)
    met = {
        "rpsRatio": None if ratio is None else ratio >= limits["rpsRatioMin"],
        "firstQueryMs": None if first_ms is None else first_ms <= limits["firstQueryMsMax"],
        "parseValidateUs": None if parse_us is None else parse_us <= limits["parseValidateUsMax"],
    }
    met["all"] = None if None in met.values() else all(met.values())
    out = {"rpsRatio": ratio, "cpuUsDelta": g_cpu - r_cpu if r_cpu is not None and g_cpu is not None else None,
           "p99Ms": _num(gql.get("p99Ms")), "restP99Ms": _num(rest.get("p99Ms")), "firstQueryMs": first_ms,
           "parseValidateUs": parse_us, "limits": dict(limits), "targetsMet": met}
    r_db, g_db = _num(rest.get("dbCpuUsPerRequest")), _num(gql.get("dbCpuUsPerRequest"))
    if r_db is not None and g_db is not None:
        out["dbCpuUsDelta"] = g_db - r_db
    return out


def measure_target(cfg, t, db, conns, duration, rows=ROWS, parse_us=None):
    """The profile on target `t`: {"status": "ok", "rest": POINT, "graphql":
    POINT, "firstQuery": {...}, the summary}, or {"status": "failed",
    "reason", and what was measured before the failure}."""
    out = {"status": "ok", "variant": t.variant, "store": t.store, "connections": conns, "durationS": duration,
           "rows": rows}
    try:
        gt = graphql_target(t)
        body_file = os.path.join(cfg.work, "graphql-page.json")
        with open(body_file, "wb") as f:
            f.write(graphql_body())

        def ready(port):
            preload(port, rows)
            expect_same_page(*read_page(port), rows=rows)
            return ()

        rest = measure.load_point(cfg, gt, "graphql.lua", "mix", conns, duration, db=db,
                                  args=("rest", REST_PATH, cfg.bucket_ms), label=f"graphql baseline/GET {REST_PATH}",
                                  post_ready=ready)
        rest["path"] = REST_PATH
        out["rest"] = rest
        check_point(rest, f"GET {REST_PATH}")
        gql = measure.load_point(cfg, gt, "graphql.lua", "mix", conns, duration, db=db,
                                 args=("graphql", body_file, cfg.bucket_ms), label=f"graphql/webhooks(first: {PAGE})",
                                 post_ready=ready)
        gql["path"] = GRAPHQL_PATH
        out["graphql"] = gql
        check_point(gql, f"POST {GRAPHQL_PATH} webhooks(first: {PAGE})")
        out["firstQuery"] = first_query(cfg, gt, db, rows, cfg.cold_runs)
    except Exception as e:  # noqa: BLE001 - recorded, the run goes on
        out["status"] = "failed"
        out["reason"] = f"{type(e).__name__}: {e}"[:1000]
        return out
    out.update(summarize(rest, gql, out["firstQuery"], parse_us))
    return out


def wanted(t, variants):
    """Is target `t` one the profile runs on (a hookd serving the API, of
    the given variants: a comma list, or 'all')?"""
    return t.kind == "hookd" and t.api and (variants == "all" or t.variant in variants.split(","))


def section(conns, duration, variants, rows=ROWS):
    """doc["graphql"] before anything ran."""
    return {"status": "ok", "path": GRAPHQL_PATH, "restPath": REST_PATH, "query": QUERY, "rows": rows,
            "pageSize": PAGE, "connections": conns, "durationS": duration, "variants": variants,
            "limits": dict(LIMITS), "parse": {}, "targets": {},
            "note": f"POST {GRAPHQL_PATH} webhooks(first: {PAGE}) vs GET {REST_PATH} (bench/wrk/graphql.lua), "
                    f"fresh servers of the same build and store, each preloaded with the same {rows} envelopes; "
                    "the first query after ready on a preloaded store; parse + validate of a 2 KB query "
                    "(bench/gq_parse_bench)"}


def skipped(reason):
    return {"status": "skipped", "reason": reason}


def overall(sec):
    """The section's targetsMet: every store's ratio and first query, and
    the parse figure of every variant measured (None: none measured)."""
    met = {"rpsRatio": [], "firstQueryMs": [], "parseValidateUs": []}
    for r in (sec.get("targets") or {}).values():
        if isinstance(r, dict) and r.get("status") == "ok":
            for k in ("rpsRatio", "firstQueryMs"):
                if (r.get("targetsMet") or {}).get(k) is not None:
                    met[k].append(r["targetsMet"][k])
    for p in (sec.get("parse") or {}).values():
        if isinstance(p, dict) and p.get("status") == "ok":
            met["parseValidateUs"].append(p["met"])
    out = {k: (all(v) if v else None) for k, v in met.items()}
    out["all"] = None if None in out.values() else all(out.values())
    return out


def finish(sec):
    """After the targets: a profile that ran on nothing says why; else its
    targetsMet."""
    if sec.get("status") != "ok":
        return sec
    if not sec.get("targets") and not any(isinstance(p, dict) and p.get("status") == "ok"
                                          for p in (sec.get("parse") or {}).values()):
        return skipped(f"no hookd target of the variants {sec.get('variants')!r} ran")
    sec["targetsMet"] = overall(sec)
    return sec


POINT_KEYS = dict(jsonout.MIX_POINT_KEYS, statusClasses="dict")
TARGET_KEYS = {
    "store": "str",
    "connections": "num",
    "rows": "num",
    "rpsRatio": "num",
    "cpuUsDelta": "num",
    "p99Ms": "num",
    "firstQueryMs": "num",
    "firstQuery.secondQueryMs": "num",
    "firstQuery.liveMs": "num",
    "firstQuery.execToFirstQueryMs": "num",
    "firstQuery.runs": "list",
    "targetsMet.rpsRatio": "bool",
    "targetsMet.firstQueryMs": "bool",
    "targetsMet.all": "bool?",
}
PARSE_KEYS = {"queryBytes": "num", "iterations": "num", "runs": "num", "medianNs": "num", "medianUs": "num",
              "minNs": "num", "maxNs": "num", "parseOnlyMedianNs": "num", "nsPerIteration": "list", "met": "bool"}


def _check(obj, spec, where, problems):
    # jsonout._check with one more kind: "bool?", a bool or null.
    plain = {k: v for k, v in spec.items() if v != "bool?"}
    jsonout._check(obj, plain, where, problems)
    for key, kind in spec.items():
        if kind != "bool?":
            continue
        try:
            v = jsonout.get_path(obj, key)
        except KeyError:
            problems.append(f"{where}{key}: missing")
            continue
        if v is not None and not isinstance(v, bool):
            problems.append(f"{where}{key}: expected bool or null, got {type(v).__name__}")


def check_complete(doc):
    """Problems with doc["graphql"], as strings ([] when complete): it may
    be skipped with a reason; a failed target or parse run, a missing
    figure or a point with an answer that was not a good 200 is a problem."""
    sec = doc.get("graphql")
    if not isinstance(sec, dict):
        return ["graphql: missing"]
    if sec.get("status") == "skipped":
        return [] if isinstance(sec.get("reason"), str) else ["graphql: skipped without a reason"]
    if sec.get("status") != "ok":
        return [f"graphql: {sec.get('status')}: {str(sec.get('reason'))[:200]}"]
    problems = []
    if not isinstance(sec.get("targets"), dict) or not sec["targets"]:
        problems.append("graphql.targets: none")
    if not isinstance(sec.get("parse"), dict) or not sec["parse"]:
        problems.append("graphql.parse: none")
    for name, p in (sec.get("parse") or {}).items():
        where = f"graphql.parse.{name}."
        if not isinstance(p, dict) or p.get("status") != "ok":
            p = p if isinstance(p, dict) else {}
            problems.append(f"graphql.parse.{name}: {p.get('status')}: {str(p.get('reason'))[:200]}")
            continue
        _check(p, PARSE_KEYS, where, problems)
    for name, r in (sec.get("targets") or {}).items():
        where = f"graphql.targets.{name}."
        if not isinstance(r, dict) or r.get("status") != "ok":
            r = r if isinstance(r, dict) else {}
            problems.append(f"graphql.targets.{name}: {r.get('status')}: {str(r.get('reason'))[:200]}")
            continue
        _check(r, TARGET_KEYS, where, problems)
        for side in ("rest", "graphql"):
            p = r.get(side) if isinstance(r.get(side), dict) else {}
            jsonout._check(p, POINT_KEYS, f"{where}{side}.", problems)
            if jsonout.is_number(p.get("non2xx")) and p["non2xx"] != 0:
                problems.append(f"{where}{side}.non2xx: {p['non2xx']}, expected 0")
    if "targetsMet" not in sec:
        problems.append("graphql.targetsMet: missing")
    return problems
