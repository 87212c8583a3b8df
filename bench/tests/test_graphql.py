# SPDX-License-Identifier: MIT
"""The GraphQL profile: the query and the rows, reading the page both ways,
the comparison and its targets, the first-query figures, the parse
microbenchmark's output, the section's completeness, goals and summary; and,
against a small stand-in for hookd run here as a process (REST list, POST
/graphql, health), the preload, the first query after ready and a whole
measure_target through wrk and bench/wrk/graphql.lua (skipped without wrk)."""
import json
import os
import shutil
import stat
import subprocess
import sys
import tempfile
import textwrap
import unittest

from hkbench import graphql, jsonout, measure, parse, procs, report, system, targets

from test_output import document, point

WRK_DIR = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "wrk")


def first_runs(n=3, first=0.8):
    return [{"run": i, "firstQueryMs": first + i / 10, "firstStatus": 200, "secondQueryMs": 0.3, "secondStatus": 200,
             "liveMs": 0.1, "liveStatus": 200, "execToFirstQueryMs": 5.0 + i} for i in range(n)]


def parse_result(us=9.5, variant="release"):
    return {"status": "ok", "queryBytes": 2048, "arenaBytes": 30000, "iterations": 20000, "runs": 7,
            "nsPerIteration": [us * 1000] * 7, "parseOnlyNsPerIteration": [us * 400] * 7, "medianNs": us * 1000,
            "minNs": us * 990, "maxNs": us * 1010, "parseOnlyMedianNs": us * 400, "validateMedianNs": us * 600,
            "medianUs": us, "met": us <= 20.0, "binary": f"/b/{variant}/bench/gq_parse_bench"}


def result(ratio=0.9, first=0.8, parse_us=9.5, store="sqlite"):
    rest = point(rps=10000.0, serverCpuUsPerRequest=40.0, p99Ms=6.0, statusClasses={"2xx": 60000, "2xxOther": 0})
    gql = point(rps=10000.0 * ratio, serverCpuUsPerRequest=50.0, p99Ms=8.0,
                statusClasses={"2xx": 54000, "2xxOther": 0})
    fq = graphql.summarize_first(first_runs(first=first - 0.1))
    r = {"status": "ok", "variant": "release", "store": store, "connections": 100, "durationS": 6, "rows": 1000,
         "rest": rest, "graphql": gql, "firstQuery": fq}
    r.update(graphql.summarize(rest, gql, fq, parse_us))
    return r


def doc_with_graphql(**kw):
    doc = document()
    doc["graphql"] = graphql.section(100, 6, "release,given")
    doc["graphql"]["parse"]["release"] = parse_result(kw.pop("parse_us", 9.5))
    doc["graphql"]["targets"]["hookd-release-sqlite"] = result(**kw)
    doc["graphql"] = graphql.finish(doc["graphql"])
    return doc


def rest_body(ids):
    return json.dumps([{"id": i, "source": "github", "eventType": "push", "payload": "{}",
                        "receivedAt": "2026-12-01T12:00:00.000000Z", "processingMode": "event-loop"} for i in ids])


def gql_body(ids, errors=None, end=None):
    edges = [{"cursor": f"c{i}", "node": {"id": str(i), "source": "github", "eventType": "push", "payload": "{}",
                                          "receivedAt": "2026-12-01T12:00:00.000000Z"}} for i in ids]
    doc = {"data": {"webhooks": {"edges": edges, "pageInfo": {"hasNextPage": True,
                                                                "endCursor": end or (edges[-1]["cursor"] if edges
                                                                                     else None)}}}}
    if errors:
        doc["errors"] = [{"message": m, "locations": [{"line": 1, "column": 3}], "path": ["webhooks"]}
                         for m in errors]
    return json.dumps(doc)


class Rows(unittest.TestCase):
    def test_query(self):
        q = graphql.QUERY
        self.assertTrue(q.startswith("query Page {\n  webhooks(first: 20) {\n    edges {\n      cursor\n"))
        for f in ("id", "source", "eventType", "payload", "receivedAt", "hasNextPage", "endCursor"):
            self.assertIn(f"        {f}\n" if f not in ("hasNextPage", "endCursor") else f"      {f}\n", q)
        self.assertEqual(q.count("{"), q.count("}"))
        body = json.loads(graphql.graphql_body())
        self.assertEqual(body, {"query": q, "operationName": "Page"})
        self.assertEqual(graphql.REST_PATH, "/api/webhooks?limit=20")

    def test_envelopes(self):
        e1, e2, e6 = graphql.envelope(1), graphql.envelope(2), graphql.envelope(6)
        self.assertEqual((e1["source"], e1["eventType"]), ("github", "push"))
        self.assertEqual((e2["source"], e2["eventType"]), ("stripe", "charge.succeeded"))
        self.assertEqual(e6["source"], "github")
        self.assertEqual(json.loads(e1["payload"])["id"], "evt_00000001")
        self.assertEqual(graphql.envelope(1), e1)
        sizes = {len(json.dumps(graphql.envelope(i))) for i in range(1, 1001)}
        self.assertGreater(min(sizes), 250)
        self.assertLess(max(sizes), 400)


class Answers(unittest.TestCase):
    def test_rest(self):
        self.assertEqual(graphql.rest_ids(200, rest_body([3, 2, 1])), ["3", "2", "1"])
        self.assertEqual(graphql.rest_ids(200, "[]"), [])
        with self.assertRaisesRegex(RuntimeError, "answered 404"):
            graphql.rest_ids(404, '{"title":"Not Found"}')
        with self.assertRaisesRegex(RuntimeError, "not JSON"):
            graphql.rest_ids(200, "<html>")
        with self.assertRaisesRegex(RuntimeError, "not with a list of rows"):
            graphql.rest_ids(200, '{"items":[]}')

    def test_graphql(self):
        self.assertEqual(graphql.graphql_ids(200, gql_body([5, 4])), ["5", "4"])
        self.assertEqual(graphql.graphql_ids(200, gql_body([])), [])
        with self.assertRaisesRegex(RuntimeError, r"answered 200 with 1 error\(s\): store unavailable"):
            graphql.graphql_ids(200, gql_body([5], errors=["store unavailable"]))
        with self.assertRaisesRegex(RuntimeError, "answered 400 with 2 error"):
            graphql.graphql_ids(400, json.dumps({"errors": [{"message": "Syntax Error: x"}, {"message": "y"}]}))
        with self.assertRaisesRegex(RuntimeError, "answered 404"):
            graphql.graphql_ids(404, '{"title":"Not Found"}')
        with self.assertRaisesRegex(RuntimeError, "without data.webhooks"):
            graphql.graphql_ids(200, '{"data":{"webhooks":null}}')
        with self.assertRaisesRegex(RuntimeError, "endCursor"):
            graphql.graphql_ids(200, gql_body([5, 4], end="c5"))
        with self.assertRaisesRegex(RuntimeError, "without a cursor"):
            graphql.graphql_ids(200, '{"data":{"webhooks":{"edges":[{"node":{"id":"1"}}],"pageInfo":{}}}}')
        with self.assertRaisesRegex(RuntimeError, "not JSON"):
            graphql.graphql_ids(200, "")

    def test_same_page(self):
        want = [str(i) for i in range(1000, 980, -1)]
        graphql.expect_same_page(want, list(want))
        graphql.expect_same_page(["3", "2", "1"], ["3", "2", "1"], rows=3)
        with self.assertRaisesRegex(RuntimeError, "not the same page"):
            graphql.expect_same_page(want, want[:19])
        with self.assertRaisesRegex(RuntimeError, r"named rows \['999'"):
            graphql.expect_same_page(want[1:] + ["980"], want[1:] + ["980"])

    def test_points(self):
        graphql.check_point(point(statusClasses={"2xx": 60000, "2xxOther": 0}), "x")
        with self.assertRaisesRegex(RuntimeError, "7 answers that were not a good 200"):
            graphql.check_point(point(non2xx=7, statusClasses={"2xx": 1, "2xxOther": 7}), "x")
        with self.assertRaisesRegex(RuntimeError, "2 socket errors"):
            graphql.check_point(point(socketErrorsTotal=2), "x")
        with self.assertRaisesRegex(RuntimeError, "no request completed"):
            graphql.check_point(point(requests=0), "x")


class FirstQuery(unittest.TestCase):
    def test_medians(self):
        s = graphql.summarize_first(first_runs(3, first=0.8))
        self.assertAlmostEqual(s["firstQueryMs"], 0.9)
        self.assertAlmostEqual(s["secondQueryMs"], 0.3)
        self.assertAlmostEqual(s["liveMs"], 0.1)
        self.assertAlmostEqual(s["execToFirstQueryMs"], 6.0)
        self.assertAlmostEqual(s["firstRun"]["firstQueryMs"], 0.8)
        self.assertEqual(len(s["runs"]), 3)

    def test_a_bad_answer_fails(self):
        for k in ("firstStatus", "secondStatus", "liveStatus"):
            runs = first_runs(2)
            runs[1][k] = 503
            with self.assertRaisesRegex(RuntimeError, "run 1"):
                graphql.summarize_first(runs)
        with self.assertRaises(RuntimeError):
            graphql.summarize_first([])


class Summary(unittest.TestCase):
    def test_met(self):
        fq = {"firstQueryMs": 1.2}
        s = graphql.summarize(point(rps=10000.0, serverCpuUsPerRequest=40.0, p99Ms=6.0),
                              point(rps=8500.0, serverCpuUsPerRequest=47.5, p99Ms=7.0), fq, 12.0)
        self.assertAlmostEqual(s["rpsRatio"], 0.85)
        self.assertAlmostEqual(s["cpuUsDelta"], 7.5)
        self.assertEqual((s["p99Ms"], s["restP99Ms"], s["firstQueryMs"], s["parseValidateUs"]), (7.0, 6.0, 1.2, 12.0))
        self.assertEqual(s["targetsMet"], {"rpsRatio": True, "firstQueryMs": True, "parseValidateUs": True,
                                           "all": True})
        self.assertNotIn("dbCpuUsDelta", s)

    def test_missed_one_by_one(self):
        r = point(rps=10000.0, dbCpuUsPerRequest=20.0)
        s = graphql.summarize(r, point(rps=7900.0, dbCpuUsPerRequest=22.5), {"firstQueryMs": 1.0}, 5.0)
        self.assertEqual(s["targetsMet"], {"rpsRatio": False, "firstQueryMs": True, "parseValidateUs": True,
                                           "all": False})
        self.assertAlmostEqual(s["dbCpuUsDelta"], 2.5)
        s = graphql.summarize(r, point(rps=8000.0), {"firstQueryMs": 2.01}, 5.0)
        self.assertEqual(s["targetsMet"]["firstQueryMs"], False)
        self.assertEqual(s["targetsMet"]["rpsRatio"], True)
        s = graphql.summarize(r, point(rps=8000.0), {"firstQueryMs": 2.0}, 20.5)
        self.assertEqual(s["targetsMet"], {"rpsRatio": True, "firstQueryMs": True, "parseValidateUs": False,
                                           "all": False})

    def test_unmeasured(self):
        s = graphql.summarize(point(rps=0.0), point(rps=None, p99Ms=float("nan")))
        self.assertIsNone(s["rpsRatio"])
        self.assertIsNone(s["p99Ms"])
        self.assertEqual(s["targetsMet"], {"rpsRatio": None, "firstQueryMs": None, "parseValidateUs": None,
                                           "all": None})


class ParseBench(unittest.TestCase):
    LINE = ('{"queryBytes":2048,"arenaBytes":31264,"iterations":20000,"runs":3,'
            '"nsPerIteration":[9512.5,9498.0,9730.1],"parseOnlyNsPerIteration":[4100.0,4090.2,4200.9],'
            '"medianNs":9512.5,"minNs":9498.0,"maxNs":9730.1,"parseOnlyMedianNs":4100.0,"validateMedianNs":5412.5}')

    def test_output(self):
        d = graphql.parse_bench_output("warming up\n" + self.LINE + "\n")
        self.assertEqual(d["queryBytes"], 2048)
        self.assertAlmostEqual(d["medianUs"], 9.5125)
        self.assertEqual(d["nsPerIteration"], [9512.5, 9498.0, 9730.1])
        with self.assertRaisesRegex(parse.ParseError, "no JSON line"):
            graphql.parse_bench_output("gq_parse_bench: 3:1: Syntax Error\n")
        with self.assertRaisesRegex(parse.ParseError, "bad gq_parse_bench line"):
            graphql.parse_bench_output('{"medianNs":')
        with self.assertRaisesRegex(parse.ParseError, "no medianNs"):
            graphql.parse_bench_output('{"medianNs":null}')

    def test_path(self):
        self.assertEqual(graphql.parse_bench_path("/w/build-gqb/hookd"), "/w/build-gqb/bench/gq_parse_bench")

    def fake(self, d, text, code=0):
        path = os.path.join(d, "gq_parse_bench")
        with open(path, "w") as f:
            f.write(f"#!/bin/sh\necho '{text}'\nprintf '%s\\n' \"$@\" > {d}/args\nexit {code}\n")
        os.chmod(path, os.stat(path).st_mode | stat.S_IXUSR)
        return path

    def test_run(self):
        cfg = measure.Config(server_cpus=None, quiet_wait_s=0, idle_probe_s=0.05, noise_pct=100.0)
        with tempfile.TemporaryDirectory() as d:
            r = graphql.run_parse_bench(cfg, self.fake(d, self.LINE), 500, 3)
            self.assertEqual(r["status"], "ok", r)
            self.assertTrue(r["met"])
            self.assertEqual(r["binary"], os.path.join(d, "gq_parse_bench"))
            self.assertIn("load1Before", r)
            with open(os.path.join(d, "args")) as f:
                self.assertEqual(f.read().split(), ["-n", "500", "-r", "3"])
            slow = self.LINE.replace('"medianNs":9512.5', '"medianNs":20100.0')
            self.assertFalse(graphql.run_parse_bench(cfg, self.fake(d, slow), 500, 3)["met"])
            r = graphql.run_parse_bench(cfg, self.fake(d, "refused", code=1), 500, 3)
            self.assertEqual(r["status"], "failed")
            self.assertIn("exited 1", r["reason"])
            r = graphql.run_parse_bench(cfg, self.fake(d, "nothing"), 500, 3)
            self.assertEqual((r["status"], r["reason"]), ("failed", "no JSON line in gq_parse_bench's output"))
            r = graphql.run_parse_bench(cfg, os.path.join(d, "none"), 500, 3)
            self.assertEqual(r["status"], "skipped")


class Output(unittest.TestCase):
    def test_complete(self):
        doc = doc_with_graphql()
        self.assertEqual(graphql.check_complete(doc), [])
        self.assertEqual(jsonout.check_complete(doc), [])
        self.assertEqual(doc["graphql"]["targetsMet"], {"rpsRatio": True, "firstQueryMs": True,
                                                        "parseValidateUs": True, "all": True})
        self.assertEqual(graphql.check_complete({"graphql": graphql.skipped("--no-graphql")}), [])

    def test_problems(self):
        self.assertEqual(graphql.check_complete(document()), ["graphql: missing"])
        self.assertEqual(graphql.check_complete({"graphql": {"status": "skipped"}}),
                         ["graphql: skipped without a reason"])
        doc = doc_with_graphql()
        r = doc["graphql"]["targets"]["hookd-release-sqlite"]
        del r["rpsRatio"]
        r["graphql"]["p99Ms"] = None
        r["rest"]["non2xx"] = 3
        r["firstQuery"]["liveMs"] = "x"
        doc["graphql"]["parse"]["given"] = {"status": "failed", "reason": "gq_parse_bench exited 1"}
        del doc["graphql"]["parse"]["release"]["medianNs"]
        problems = "\n".join(graphql.check_complete(doc))
        for want in ("graphql.targets.hookd-release-sqlite.rpsRatio: missing",
                     "graphql.targets.hookd-release-sqlite.graphql.p99Ms: expected num",
                     "graphql.targets.hookd-release-sqlite.rest.non2xx: 3, expected 0",
                     "graphql.targets.hookd-release-sqlite.firstQuery.liveMs: expected num",
                     "graphql.parse.given: failed: gq_parse_bench exited 1",
                     "graphql.parse.release.medianNs: missing"):
            self.assertIn(want, problems)
        doc["graphql"]["targets"]["hookd-release-postgres"] = {"status": "failed",
                                                               "reason": "RuntimeError: POST /graphql answered 404"}
        self.assertIn("graphql.targets.hookd-release-postgres: failed: RuntimeError: POST /graphql answered 404",
                      graphql.check_complete(doc))

    def test_finish_and_overall(self):
        sec = graphql.section(100, 6, "static")
        self.assertEqual(graphql.check_complete({"graphql": sec}),
                         ["graphql.targets: none", "graphql.parse: none", "graphql.targetsMet: missing"])
        done = graphql.finish(sec)
        self.assertEqual(done["status"], "skipped")
        self.assertIn("'static'", done["reason"])
        self.assertEqual(graphql.check_complete({"graphql": done}), [])
        # One store misses the ratio: the section misses it.
        doc = doc_with_graphql()
        sec = doc["graphql"]
        sec["targets"]["hookd-release-postgres"] = result(ratio=0.7, store="postgres")
        self.assertEqual(graphql.overall(sec), {"rpsRatio": False, "firstQueryMs": True, "parseValidateUs": True,
                                                "all": False})
        # Nothing measured for a figure: unknown, not met.
        sec["parse"] = {}
        self.assertIsNone(graphql.overall(sec)["parseValidateUs"])
        self.assertIsNone(graphql.overall(sec)["all"])

    def test_written_json_keeps_the_figures(self):
        back = json.loads(jsonout.dumps(doc_with_graphql(ratio=0.8123456)))
        r = back["graphql"]["targets"]["hookd-release-sqlite"]
        self.assertEqual(r["rpsRatio"], 0.812)
        self.assertEqual(r["targetsMet"]["all"], True)
        self.assertEqual(back["graphql"]["limits"], {"rpsRatioMin": 0.8, "firstQueryMsMax": 2.0,
                                                     "parseValidateUsMax": 20.0})
        self.assertEqual(back["graphql"]["parse"]["release"]["medianUs"], 9.5)


class Report(unittest.TestCase):
    def goals(self, doc):
        return {x["goal"]: x for x in report.ratios(doc)["goals"]}

    def test_goals_met(self):
        g = self.goals(doc_with_graphql())
        ratio = g["GraphQL webhooks(first: 20) c=100 SQLite / GET ?limit=20 (req/s)"]
        first = g["first GraphQL query after ready, SQLite, median (ms)"]
        pv = g["GraphQL parse + validate, 2 KB query, median (us)"]
        self.assertEqual((ratio["met"], first["met"], pv["met"]), (True, True, True))
        self.assertEqual((ratio["limit"], first["limit"], pv["limit"]), (0.8, 2.0, 20.0))
        self.assertAlmostEqual(ratio["value"], 0.9)
        self.assertAlmostEqual(first["value"], 0.8)
        self.assertAlmostEqual(pv["value"], 9.5)
        self.assertIsNone(g["GraphQL webhooks(first: 20) c=100 PostgreSQL / GET ?limit=20 (req/s)"]["met"])

    def test_goals_missed(self):
        g = self.goals(doc_with_graphql(ratio=0.75, first=2.5, parse_us=25.0))
        self.assertAlmostEqual(g["GraphQL webhooks(first: 20) c=100 SQLite / GET ?limit=20 (req/s)"]["missBy"], 0.05)
        self.assertAlmostEqual(g["first GraphQL query after ready, SQLite, median (ms)"]["missBy"], 0.5)
        self.assertAlmostEqual(g["GraphQL parse + validate, 2 KB query, median (us)"]["missBy"], 5.0)

    def test_goals_from_given_and_not_from_failures(self):
        doc = doc_with_graphql()
        sec = doc["graphql"]
        sec["targets"]["hookd-given-postgres"] = result(ratio=0.6, store="postgres")
        sec["targets"]["hookd-release-sqlite"] = {"status": "failed", "reason": "x"}
        sec["parse"] = {"release": {"status": "failed", "reason": "x"}, "given": parse_result(30.0, "given")}
        g = self.goals(doc)
        self.assertIsNone(g["GraphQL webhooks(first: 20) c=100 SQLite / GET ?limit=20 (req/s)"]["met"])
        self.assertFalse(g["GraphQL webhooks(first: 20) c=100 PostgreSQL / GET ?limit=20 (req/s)"]["met"])
        self.assertFalse(g["GraphQL parse + validate, 2 KB query, median (us)"]["met"])
        self.assertEqual(g["GraphQL parse + validate, 2 KB query, median (us)"]["value"], 30.0)

    def test_summary(self):
        doc = doc_with_graphql(ratio=0.75)
        doc["graphql"]["targets"]["hookd-release-postgres"] = {"status": "failed",
                                                               "reason": "RuntimeError: POST /graphql answered 404"}
        doc["graphql"]["targetsMet"] = graphql.overall(doc["graphql"])
        doc["ratios"] = report.ratios(doc)
        self.assertAlmostEqual(doc["ratios"]["graphqlVsRest"]["hookd-release-sqlite"]["rpsRatio"], 0.75)
        self.assertAlmostEqual(doc["ratios"]["graphqlVsRest"]["hookd-release-sqlite"]["cpuUsDelta"], 10.0)
        text = report.summary(doc)
        self.assertIn("GraphQL: POST /graphql webhooks(first: 20) vs GET /api/webhooks?limit=20, 1000 rows", text)
        self.assertIn("parse + validate (release): 9.50 us median (3.80 us of it parsing), 2048 B, 7 runs of 20000, "
                      "30000 arena bytes", text)
        line = next(x for x in text.splitlines() if x.strip().startswith("hookd-release-sqlite") and "0.750" in x)
        for want in ("10000", "7500", "0.750 MISSED", "40.0", "50.0", "6.00", "8.00", "0.800", "0.300", "0.100",
                     "0/0", "NO"):
            self.assertIn(want, line)
        self.assertIn("hookd-release-postgres: failed: RuntimeError: POST /graphql answered 404", text)
        self.assertIn("targetsMet: rpsRatio NO, firstQueryMs yes, parseValidateUs yes, all NO", text)

    def test_summary_skipped(self):
        doc = document()
        doc["graphql"] = graphql.skipped("--no-graphql")
        doc["ratios"] = report.ratios(doc)
        self.assertIn("GraphQL profile: skipped: --no-graphql", report.summary(doc))
        del doc["graphql"]
        self.assertNotIn("GraphQL profile", report.summary(doc))


# A stand-in for hookd: the REST list, POST /graphql over the same rows, the
# health paths; rows kept in $HOOKD_SQLITE_PATH (JSON) so that a restart keeps
# them. GRAPHQL_ERRORS=1 answers every query with an error in the body.
FAKE = textwrap.dedent(r'''
    import http.server, json, os, sys
    path = os.environ["HOOKD_SQLITE_PATH"]
    rows = json.load(open(path)) if os.path.exists(path) else []
    def save():
        json.dump(rows, open(path, "w"))
    class H(http.server.BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"
        def log_message(self, *a):
            pass
        def answer(self, status, doc):
            out = json.dumps(doc).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(out)))
            self.end_headers()
            self.wfile.write(out)
        def do_GET(self):
            if self.path in ("/q/health/ready", "/q/health/live"):
                return self.answer(200, {"status": "UP"})
            if self.path == "/api/webhooks?limit=20":
                return self.answer(200, rows[::-1][:20])
            self.answer(404, {"title": "Not Found"})
        def do_POST(self):
            body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
            if self.path == "/api/webhooks":
                rows.append(dict(body, id=len(rows) + 1, receivedAt="2026-12-01T12:00:00.000000Z"))
                save()
                return self.answer(201, rows[-1])
            if self.path != "/graphql" or "webhooks(first: 20)" not in body.get("query", ""):
                return self.answer(404, {"title": "Not Found"})
            edges = [{"cursor": "v1:%d" % r["id"], "node": dict(r, id=str(r["id"]))} for r in rows[::-1][:20]]
            doc = {"data": {"webhooks": {"edges": edges, "pageInfo": {"hasNextPage": len(rows) > 20,
                   "endCursor": edges[-1]["cursor"] if edges else None}}}}
            if os.environ.get("GRAPHQL_ERRORS"):
                doc["errors"] = [{"message": "boom", "path": ["webhooks"]}]
            self.answer(200, doc)
    class S(http.server.ThreadingHTTPServer):
        daemon_threads = True
        def handle_error(self, *a):
            pass
    S(("127.0.0.1", int(os.environ["PORT"])), H).serve_forever()
''')


class StandIn(unittest.TestCase):
    def setUp(self):
        d = tempfile.TemporaryDirectory()
        self.addCleanup(d.cleanup)
        self.dir = d.name
        script = os.path.join(d.name, "fake-hookd")
        with open(script, "w") as f:
            f.write(f"#!{sys.executable}\n" + FAKE)
        os.chmod(script, 0o755)
        self.target = targets.hookd("release", "sqlite", script, {})
        self.cfg = measure.Config(server_cpus=None, load_cpus=None, quiet_wait_s=0, idle_probe_s=0.05,
                                  noise_pct=100.0, duration=1, cold_runs=2, bucket_ms=250, work=d.name,
                                  bench_dir=os.path.dirname(WRK_DIR))

    def start(self, env_extra=None):
        port = system.free_port()
        tmp, cmd, env = measure._render(self.cfg, self.target, port, None)
        env.update(env_extra or {})
        p = procs.start(cmd, env=env, cwd=tmp)
        self.addCleanup(procs.stop, p)
        procs.wait_ready(p, port, "/q/health/ready", timeout=20)
        return port

    def test_preload_and_page(self):
        port = self.start()
        graphql.preload(port, 25)
        rest, gql = graphql.read_page(port)
        self.assertEqual(rest, [str(i) for i in range(25, 5, -1)])
        graphql.expect_same_page(rest, gql, rows=25)
        with self.assertRaisesRegex(RuntimeError, "named rows"):
            graphql.expect_same_page(rest, gql, rows=26)
        ms, status, body = graphql.timed_request(port, graphql._raw_graphql())
        self.assertEqual(status, 200)
        self.assertGreater(ms, 0)
        self.assertEqual(graphql.graphql_ids(status, body)[0], "25")

    def test_errors_in_the_body_are_caught(self):
        port = self.start({"GRAPHQL_ERRORS": "1"})
        graphql.preload(port, 3)
        with self.assertRaisesRegex(RuntimeError, r"1 error\(s\): boom"):
            graphql.read_page(port)

    def test_first_query(self):
        r = graphql.first_query(self.cfg, self.target, None, 30, 2)
        self.assertEqual(len(r["runs"]), 2)
        self.assertEqual(r["rows"], 30)
        for run in r["runs"]:
            self.assertEqual((run["firstStatus"], run["secondStatus"], run["liveStatus"]), (200, 200, 200))
            self.assertGreater(run["execToFirstQueryMs"], run["firstQueryMs"])
        for k in ("firstQueryMs", "secondQueryMs", "liveMs", "execToFirstQueryMs"):
            self.assertTrue(jsonout.is_number(r[k]) and r[k] > 0, k)
        # The probe itself, on the harness's side, is far below the target.
        self.assertLess(r["liveMs"], 50)

    @unittest.skipUnless(shutil.which("wrk"), "wrk is not installed")
    def test_measure_target(self):
        r = graphql.measure_target(self.cfg, self.target, None, 2, 1, rows=40, parse_us=9.0)
        self.assertEqual(r["status"], "ok", r.get("reason"))
        for side, path in (("rest", "/api/webhooks?limit=20"), ("graphql", "/graphql")):
            p = r[side]
            self.assertEqual(p["path"], path)
            self.assertGreater(p["requests"], 5)
            self.assertEqual(p["non2xx"], 0)
            self.assertEqual(p["statusClasses"]["2xx"], p["requests"])
            self.assertEqual(p["bucketMs"], 250)
        self.assertTrue(jsonout.is_number(r["rpsRatio"]))
        self.assertEqual(r["targetsMet"]["parseValidateUs"], True)
        doc = document()
        doc["graphql"] = graphql.section(2, 1, "release")
        doc["graphql"]["parse"]["release"] = parse_result()
        doc["graphql"]["targets"]["hookd-release-sqlite"] = r
        doc["graphql"] = graphql.finish(doc["graphql"])
        self.assertEqual(graphql.check_complete(json.loads(jsonout.dumps(doc))), [])


@unittest.skipUnless(shutil.which("wrk"), "wrk is not installed")
class Script(unittest.TestCase):
    """graphql.lua's verdicts, against the stand-in."""

    def wrk(self, port, *args):
        r = subprocess.run(["wrk", "-t1", "-c2", "-d1s", "--latency", "-s", os.path.join(WRK_DIR, "graphql.lua"),
                            f"http://127.0.0.1:{port}/", "--"] + [str(a) for a in args],
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, timeout=30)
        return r, (parse.parse_wrk_json(r.stdout) if r.returncode == 0 else None)

    def setUp(self):
        StandIn.setUp(self)
        self.body = os.path.join(self.dir, "page.json")
        with open(self.body, "wb") as f:
            f.write(graphql.graphql_body())

    start = StandIn.start

    def test_errors_and_non_arrays_are_not_good(self):
        port = self.start({"GRAPHQL_ERRORS": "1"})
        graphql.preload(port, 3)
        _, p = self.wrk(port, "graphql", self.body)
        self.assertGreater(p["requests"], 5)
        self.assertEqual(p["statusClasses"]["2xx"], 0)
        self.assertEqual(p["non2xx"], p["statusClasses"]["2xxOther"])
        self.assertGreaterEqual(p["non2xx"], p["requests"])
        with self.assertRaises(RuntimeError):
            graphql.check_point(p, "x")
        # A 200 that is not a list (the health document) is not a page.
        _, p = self.wrk(port, "rest", "/q/health/live")
        self.assertEqual(p["statusClasses"]["2xx"], 0)
        self.assertGreater(p["statusClasses"]["2xxOther"], 5)
        # And a 404 is a 4xx.
        _, p = self.wrk(port, "rest", "/api/nothing")
        self.assertGreater(p["statusClasses"]["4xx"], 5)

    def test_bad_arguments_stop_wrk(self):
        port = self.start()
        for args in (("graphql", os.path.join(self.dir, "none")), ("rest", "api/webhooks"), ("soap", "/")):
            r, _ = self.wrk(port, *args)
            self.assertNotEqual(r.returncode, 0, args)
            self.assertIn("graphql.lua", r.stdout + r.stderr)


if __name__ == "__main__":
    unittest.main()
