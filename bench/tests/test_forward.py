# SPDX-License-Identifier: MIT
"""The forwarding profile: the sink's log and its latencies, hookd's
metrics and latency histogram, the retention samples, the comparison and
its targets, the section's completeness, goals and summary; the pipelined
preload against a small server here; and bench/wrk/paced.lua and sink.lua
run by wrk against it (the pace holds, the answers are counted)."""
import calendar
import http.server
import json
import os
import shutil
import subprocess
import tempfile
import threading
import time
import unittest

from hkbench import forward, parse, report

from test_output import document, point

WRK_DIR = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "wrk")


def rfc3339(t):
    return time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(int(t))) + ".%06dZ" % round((t - int(t)) * 1e6)


def write_log(lines):
    f = tempfile.NamedTemporaryFile("w", suffix=".log", delete=False)
    f.write("".join(x + "\n" for x in lines))
    f.close()
    return f.name


def fpoint(p99=3.0, missing=0, pending=False, rps=8000.0):
    p = point(rps=rps, statusClasses={"2xx": 1000})
    p.update({"sinkCpuUsPerRequest": 5.0, "serverCpuUsPerRequestWithDrain": 60.0,
              "afterLoad": {"drainS": 0.5, "rowsStored": 1000, "pendingLeft": pending, "failedLeft": False,
                            "latencyHistogram": {"count": 1000, "p99Ms": 4.9}},
              "sink": {"requests": 1000, "distinctIds": 1000 - missing, "missingIds": missing,
                       "latency": {"count": 1000, "p50Ms": 0.5, "p99Ms": p99, "maxMs": p99 + 1}}})
    p["delivery"] = {"allDelivered": not missing and not pending, "missingIds": missing, "problems": []}
    return p


def ppoint(p99, deleted=None, keep=None):
    p = point(p99Ms=p99, statusClasses={"2xx": 1000})
    p.update({"rowsPreloaded": 2000, "maxRows": keep, "samples": [{"t": 0}],
              "retention": {"deletedInWindow": deleted, "intervals": 3, "intervalsWithDeletes": 3 if deleted else 0}})
    return p


def result(ratio=0.8, sink_p99=3.0, purge_ratio=1.3, missing=0, store="sqlite"):
    off = point(rps=10000.0, statusClasses={"2xx": 1000}, serverCpuUsPerRequest=40.0)
    on = fpoint(rps=10000.0 * ratio, missing=missing)
    on["serverCpuUsPerRequest"] = 55.0
    paced = fpoint(p99=sink_p99)
    paced.update({"rateTarget": 4000, "rateAchieved": 0.99})
    po, pn = ppoint(10.0), ppoint(10.0 * purge_ratio, deleted=5000, keep=1000)
    r = {"status": "ok", "variant": "release", "store": store, "connections": 100, "durationS": 6, "rows": 2000,
         "maxRows": 1000, "rateTarget": 4000, "ingest": {"off": off, "on": on}, "latency": paced,
         "purge": {"off": po, "on": pn}}
    r.update(forward.summarize(off, on, paced, po, pn))
    return r


def doc_with_forward(**kw):
    doc = document()
    sec = forward.section(100, 6, "release,given", 2000, [1])
    sec["sink"]["ceiling"] = {"status": "ok", "rps": 60000.0, "p99Ms": 2.0, "connections": 64,
                              "loggedRequests": 120000, "sinkCpuUsPerRequest": 7.5}
    sec["targets"]["hookd-release-sqlite"] = result(**kw)
    doc["forward"] = forward.finish(sec)
    return doc


class SinkLog(unittest.TestCase):
    def test_epoch(self):
        e = forward._Epoch()
        for t in (1796147840.123456, 1796147879.999999, 1796147880.000001, 0.5, 1700000000.0):
            self.assertAlmostEqual(e(rfc3339(t)), t, places=5)
        self.assertEqual(e("2026-12-01T17:57:27Z"), calendar.timegm((2026, 12, 1, 17, 57, 27)))
        for bad in ("2026-12-01 17:57:27.1Z", "2026-12-01T17:57:27.1", "-", "x" * 30):
            with self.assertRaises(ValueError):
                e(bad)

    def test_read(self):
        t = 1796147840.0
        path = write_log([
            f"{t + 0.002:.3f} 1 {rfc3339(t)} 202 5",           # 2 ms
            f"{t + 0.010:.3f} 2 {rfc3339(t + 0.0005)} 202 5",  # 9.5 ms
            f"{t + 0.010:.3f} 2 {rfc3339(t + 0.0005)} 202 6",  # a duplicate delivery
            f"{t + 0.000:.3f} db7:3 {rfc3339(t + 0.0004)} 202 6",  # a prefixed id; -0.4 ms (ms resolution)
            f"{t:.3f} - - 200 7",                               # no CloudEvent
            "garbage",
        ])
        self.addCleanup(os.unlink, path)
        log = forward.read_sink_log(path)
        self.assertEqual((log["requests"], log["unreadable"], log["withoutCeTime"]), (5, 1, 1))
        self.assertEqual(log["statuses"], {"202": 4, "200": 1})
        self.assertEqual(log["ids"], {1, 2, 3})
        self.assertEqual(log["idLines"], 4)
        self.assertEqual([round(x, 1) for x in log["latenciesMs"]], [-0.4, 2.0, 9.5, 9.5])
        s = forward.sink_summary(log, 4)
        self.assertEqual((s["distinctIds"], s["duplicates"], s["missingIds"]), (3, 1, 1))
        self.assertEqual(s["latency"]["negative"], 1)
        self.assertAlmostEqual(s["latency"]["maxMs"], 9.5, places=1)
        self.assertEqual(forward.sink_summary(log, 3)["missingIds"], 0)
        self.assertEqual(forward.read_sink_log(path + ".none")["requests"], 0)

    def test_percentile(self):
        xs = list(range(1, 101))
        self.assertEqual(forward.percentile(xs, 50), 50)
        self.assertEqual(forward.percentile(xs, 99), 99)
        self.assertEqual(forward.percentile(xs, 100), 100)
        self.assertEqual(forward.percentile([7.0], 99), 7.0)
        self.assertIsNone(forward.percentile([], 50))
        s = forward.latency_summary([])
        self.assertEqual((s["count"], s["p99Ms"], s["maxMs"]), (0, None, None))


METRICS = """# HELP hookd_forward_attempts_total Delivery attempts.
# TYPE hookd_forward_attempts_total counter
hookd_forward_attempts_total{result="delivered"} 1000
hookd_forward_attempts_total{result="retry"} 2
hookd_forward_inflight 0
hookd_forward_latency_seconds_bucket{le="0.005"} 900
hookd_forward_latency_seconds_bucket{le="0.01"} 980
hookd_forward_latency_seconds_bucket{le="0.025"} 995
hookd_forward_latency_seconds_bucket{le="0.05"} 1000
hookd_forward_latency_seconds_bucket{le="+Inf"} 1000
hookd_forward_latency_seconds_sum 2.5
hookd_forward_latency_seconds_count 1000
hookd_retention_deleted_total 4500
"""


class Metrics(unittest.TestCase):
    def test_parse(self):
        m = forward.parse_metrics(METRICS)
        self.assertEqual(m['hookd_forward_attempts_total{result="delivered"}'], 1000)
        self.assertEqual(m["hookd_retention_deleted_total"], 4500)
        d = forward.delivery_metrics(m)
        self.assertEqual((d["delivered"], d["retries"], d["failed"], d["inflight"]), (1000, 2, 0, 0))

    def test_histogram(self):
        m = forward.parse_metrics(METRICS)
        h = forward.histogram(m, "hookd_forward_latency_seconds")
        self.assertEqual(h["count"], 1000)
        self.assertEqual(h["buckets"][0], (0.005, 900))
        # Rank 500 of 900 in [0, 5 ms]; rank 990 of the 15 in (10, 25 ms].
        v, le = forward.histogram_quantile(h, 0.5)
        self.assertAlmostEqual(v, 0.005 * 500 / 900)
        self.assertEqual(le, 0.005)
        v, le = forward.histogram_quantile(h, 0.99)
        self.assertAlmostEqual(v, 0.01 + 0.015 * 10 / 15)
        self.assertEqual(le, 0.025)
        lh = forward.latency_histogram(m)
        self.assertAlmostEqual(lh["meanMs"], 2.5)
        self.assertAlmostEqual(lh["p99Ms"], 20.0)
        self.assertEqual(lh["p99BucketMs"], 25.0)
        self.assertEqual(lh["within50MsPct"], 100.0)
        self.assertIsNone(forward.latency_histogram({}))
        self.assertEqual(forward.histogram_quantile(None, 0.5), (None, None))

    def test_retention_window(self):
        s = [{"t": 0.0, "hookd_retention_deleted_total": 0.0, "hookd_retention_runs_total": 0.0},
             {"t": 1.0, "hookd_retention_deleted_total": 1000.0, "hookd_retention_runs_total": 1.0},
             {"t": 2.0, "hookd_retention_deleted_total": 1000.0, "hookd_retention_runs_total": 1.0},
             {"t": 3.0, "hookd_retention_deleted_total": 1600.0, "hookd_retention_runs_total": 3.0}]
        w = forward.retention_window(s)
        self.assertEqual((w["deletedInWindow"], w["intervals"], w["intervalsWithDeletes"], w["runsInWindow"]),
                         (1600.0, 3, 2, 3.0))
        self.assertEqual(w["perInterval"], [1000.0, 0.0, 600.0])
        # Retention off: hookd has no such counter.
        w = forward.retention_window([{"t": 0.0, "hookd_retention_deleted_total": None}] * 3)
        self.assertIsNone(w["deletedInWindow"])


class Comparison(unittest.TestCase):
    def test_met(self):
        r = result()
        self.assertAlmostEqual(r["rpsRatio"], 0.8)
        self.assertAlmostEqual(r["cpuUsDelta"], 15.0)
        self.assertAlmostEqual(r["purgeP99Ratio"], 1.3)
        self.assertEqual(r["sinkP99Ms"], 3.0)
        self.assertEqual(r["undelivered"], 0)
        self.assertEqual(r["targetsMet"], {"rpsRatio": True, "sinkP99Ms": True, "purgeP99Ratio": True,
                                           "allDelivered": True, "all": True})

    def test_missed(self):
        r = result(ratio=0.6, sink_p99=60.0, purge_ratio=2.5, missing=3)
        self.assertEqual(r["targetsMet"], {"rpsRatio": False, "sinkP99Ms": False, "purgeP99Ratio": False,
                                           "allDelivered": False, "all": False})
        self.assertEqual(r["undelivered"], 3)
        # A pending row left whose id did reach the sink still counts.
        on = fpoint(pending=True)
        r = forward.summarize(point(), on, fpoint(), ppoint(10.0), ppoint(11.0, 10, 5))
        self.assertEqual((r["undelivered"], r["targetsMet"]["allDelivered"]), (1, False))

    def test_not_measured(self):
        r = forward.summarize(None, None, None, None, None)
        self.assertEqual(set(r["targetsMet"].values()), {None})
        self.assertIsNone(r["undelivered"])


class Section(unittest.TestCase):
    def test_complete(self):
        doc = doc_with_forward()
        self.assertEqual(forward.check_complete(doc), [])
        self.assertEqual(doc["forward"]["targetsMet"]["all"], True)

    def test_problems(self):
        doc = doc_with_forward()
        x = doc["forward"]["targets"]["hookd-release-sqlite"]
        x["purge"]["on"]["retention"]["deletedInWindow"] = 0
        x["ingest"]["on"]["non2xx"] = 3
        del x["latency"]["sink"]["latency"]["p99Ms"]
        doc["forward"]["sink"]["ceiling"] = {"status": "failed", "reason": "wrk exited 1"}
        p = "\n".join(forward.check_complete(doc))
        for want in ("purge.on.retention.deletedInWindow", "ingest.on.non2xx: 3", "latency.sink.latency.p99Ms",
                     "forward.sink.ceiling: failed: wrk exited 1"):
            self.assertIn(want, p)
        doc["forward"]["targets"]["hookd-release-postgres"] = {"status": "failed", "reason": "boom"}
        self.assertIn("forward.targets.hookd-release-postgres: failed: boom", forward.check_complete(doc))

    def test_skipped_and_missing(self):
        doc = document()
        self.assertEqual(forward.check_complete(doc), ["forward: missing"])
        doc["forward"] = forward.skipped("--no-forward")
        self.assertEqual(forward.check_complete(doc), [])
        doc["forward"] = {"status": "skipped"}
        self.assertEqual(forward.check_complete(doc), ["forward: skipped without a reason"])
        self.assertEqual(forward.finish(forward.section(100, 6, "release", 10, [1]))["status"], "skipped")

    def test_goals(self):
        g = {x["goal"]: x for x in report.ratios(doc_with_forward())["goals"]}
        self.assertTrue(g["POST 2 KB c=100 SQLite, forwarding on / off (req/s)"]["met"])
        self.assertTrue(g["receive -> sink at half that rate, SQLite, p99 (ms)"]["met"])
        self.assertTrue(g["mix c=100 SQLite, p99 during purges / without"]["met"])
        self.assertTrue(g["rows not delivered after the drain, SQLite"]["met"])
        self.assertIsNone(g["POST 2 KB c=100 PostgreSQL, forwarding on / off (req/s)"]["met"])
        g = {x["goal"]: x for x in report.ratios(doc_with_forward(ratio=0.5, sink_p99=80.0, purge_ratio=3.0,
                                                                  missing=2))["goals"]}
        self.assertAlmostEqual(g["POST 2 KB c=100 SQLite, forwarding on / off (req/s)"]["missBy"], 0.2)
        self.assertAlmostEqual(g["receive -> sink at half that rate, SQLite, p99 (ms)"]["missBy"], 30.0)
        self.assertAlmostEqual(g["mix c=100 SQLite, p99 during purges / without"]["missBy"], 1.0)
        self.assertEqual(g["rows not delivered after the drain, SQLite"]["value"], 2)

    def test_summary(self):
        doc = doc_with_forward(ratio=0.6)
        doc["forward"]["targets"]["hookd-release-postgres"] = {"status": "failed", "reason": "RuntimeError: x"}
        doc["ratios"] = report.ratios(doc)
        self.assertAlmostEqual(doc["ratios"]["forwardVsOff"]["hookd-release-sqlite"]["rpsRatio"], 0.6)
        text = report.summary(doc)
        self.assertIn("the sink alone: 60000 req/s at 64 connections", text)
        line = next(x for x in text.splitlines() if x.strip().startswith("hookd-release-sqlite") and "0.600" in x)
        for want in ("10000", "6000", "0.600 MISSED", "40.0", "55.0", "NO"):
            self.assertIn(want, line)
        self.assertIn("hookd-release-postgres: failed: RuntimeError: x", text)
        doc["forward"] = forward.skipped("nginx is not installed")
        self.assertIn("forwarding profile: skipped: nginx is not installed", report.summary(doc))


class _Hookd(http.server.BaseHTTPRequestHandler):
    """POST /api/webhooks as hookd answers it: 201 with the row (or
    `answer` from the `fail_at`-th POST on); counts what arrives."""
    protocol_version = "HTTP/1.1"

    def log_message(self, *a):
        pass

    def do_POST(self):
        st = self.server.state
        body = self.rfile.read(int(self.headers["Content-Length"]))
        with st["lock"]:
            st["posts"] += 1
            st["times"].append(time.monotonic())
            n = st["posts"]
            try:
                st["sources"].add(json.loads(body)["source"])
            except (ValueError, KeyError):
                st["bad"] += 1
        status = st["answer"] if st["fail_at"] and n >= st["fail_at"] else 201
        out = json.dumps({"id": n}).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(out)))
        self.end_headers()
        self.wfile.write(out)


class _Server(http.server.ThreadingHTTPServer):
    daemon_threads = True

    def handle_error(self, request, client_address):
        pass


class Live(unittest.TestCase):
    def serve(self, fail_at=None, answer=503):
        srv = _Server(("127.0.0.1", 0), _Hookd)
        srv.state = {"lock": threading.Lock(), "posts": 0, "times": [], "sources": set(), "bad": 0,
                     "fail_at": fail_at, "answer": answer}
        threading.Thread(target=srv.serve_forever, daemon=True).start()
        self.addCleanup(srv.server_close)
        self.addCleanup(srv.shutdown)
        return srv

    def test_preload(self):
        srv = self.serve()
        forward.preload(srv.server_port, 1000, conns=4, depth=32)
        st = srv.state
        self.assertEqual((st["posts"], st["bad"]), (1000, 0))
        self.assertEqual(st["sources"], {"github", "stripe", "gitlab", "bitbucket"})

    def test_preload_refused(self):
        srv = self.serve(fail_at=50, answer=503)
        with self.assertRaisesRegex(RuntimeError, "answered 503"):
            forward.preload(srv.server_port, 200, conns=2, depth=16)

    @unittest.skipUnless(shutil.which("wrk"), "wrk is not installed")
    def test_paced_script(self):
        srv = self.serve()
        d = tempfile.TemporaryDirectory()
        self.addCleanup(d.cleanup)
        body = os.path.join(d.name, "body.json")
        with open(body, "wb") as f:
            f.write(b'{"source":"github","eventType":"push","payload":"x"}')
        r = subprocess.run(["wrk", "-t1", "-c20", "-d2s", "--latency", "-s", os.path.join(WRK_DIR, "paced.lua"),
                            f"http://127.0.0.1:{srv.server_port}/", "--", body, "100", "1", "500"],
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, timeout=30)
        self.assertEqual(r.returncode, 0, r.stderr)
        p = parse.parse_wrk_json(r.stdout)
        self.assertEqual(p["non2xx"], 0)
        # 100/s for 2 s, whatever the 20 connections could do unpaced.
        self.assertGreaterEqual(p["requests"], 150)
        self.assertLessEqual(srv.state["posts"], 230)
        self.assertEqual(p["bucketMs"], 500)
        r = subprocess.run(["wrk", "-t1", "-c2", "-d1s", "-s", os.path.join(WRK_DIR, "paced.lua"),
                            f"http://127.0.0.1:{srv.server_port}/", "--", body, "0"],
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, timeout=30)
        self.assertNotEqual(r.returncode, 0)
        self.assertIn("rate", r.stdout + r.stderr)

    @unittest.skipUnless(shutil.which("wrk") and shutil.which("nginx"), "wrk or nginx is not installed")
    def test_sink(self):
        d = tempfile.TemporaryDirectory()
        self.addCleanup(d.cleanup)
        sink = forward.Sink(d.name, "sink", None).start()
        try:
            body = os.path.join(d.name, "body.json")
            with open(body, "wb") as f:
                f.write(b"x" * 2048)
            r = subprocess.run(["wrk", "-t1", "-c4", "-d1s", "-s", os.path.join(WRK_DIR, "sink.lua"),
                                f"http://127.0.0.1:{sink.port}/", "--", body],
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, timeout=30)
        finally:
            sink.stop()
        self.assertEqual(r.returncode, 0, r.stderr)
        p = parse.parse_wrk_json(r.stdout)
        self.assertEqual((p["non2xx"], p["socketErrorsTotal"]), (0, 0))
        self.assertEqual(p["statusClasses"]["2xx"], p["requests"])
        log = sink.read()
        # Every answered request is in the log (written out at the stop),
        # with its own ce-id and a ce-time.
        self.assertGreaterEqual(log["requests"], p["requests"])
        self.assertEqual(log["statuses"], {"202": log["requests"]})
        self.assertEqual(log["withoutCeTime"], 0)
        self.assertEqual(len(log["ids"]), log["requests"])


if __name__ == "__main__":
    unittest.main()
