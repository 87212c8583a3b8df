# SPDX-License-Identifier: MIT
"""The ingress profile: the 2 KB bodies, the Stripe signature, the sources
file, the comparison of the two points and its targets, the refusal of a
point with a response other than 201, the section's completeness, goals and
summary; and bench/wrk/ingress.lua and envelope2k.lua run by wrk against a
small server here that checks what they send."""
import hashlib
import hmac
import http.server
import json
import os
import shutil
import subprocess
import tempfile
import threading
import unittest

from hkbench import ingress, jsonout, parse, report, targets

from test_output import document, point

WRK_DIR = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "wrk")


def result(rps_ratio=0.95, delta=3.0, p99=8.0, store="sqlite"):
    env = point(rps=10000.0, serverCpuUsPerRequest=40.0, p99Ms=6.0, statusClasses={"2xx": 60000})
    ing = point(rps=10000.0 * rps_ratio, serverCpuUsPerRequest=40.0 + delta, p99Ms=p99,
                statusClasses={"2xx": 57000, "2xxOther": 0})
    r = {"status": "ok", "variant": "release", "store": store, "connections": 100, "durationS": 6,
         "envelope": env, "ingress": ing}
    r.update(ingress.summarize(env, ing))
    return r


def doc_with_ingress(**kw):
    doc = document()
    doc["ingress"] = ingress.section(100, 6, "release,given")
    doc["ingress"]["targets"]["hookd-release-sqlite"] = result(**kw)
    return doc


class Bodies(unittest.TestCase):
    def test_stripe_body(self):
        b = ingress.stripe_body()
        self.assertEqual(len(b), 2048)
        ev = json.loads(b)
        self.assertEqual(ev["type"], "charge.succeeded")
        self.assertEqual(ev["object"], "event")
        self.assertEqual(ev["data"]["object"]["amount"], 2000)
        # Pretty-printed as Stripe sends it, and the same every time.
        self.assertTrue(b.startswith(b'{\n  "id": "evt_'))
        self.assertEqual(b, ingress.stripe_body())
        self.assertEqual(len(ingress.stripe_body(4096)), 4096)

    def test_envelope_body(self):
        b = ingress.envelope_body()
        self.assertEqual(len(b), 2048)
        env = json.loads(b)
        self.assertEqual((env["source"], env["eventType"]), ("stripe", "charge.succeeded"))
        self.assertIsInstance(env["payload"], str)
        # The payload is the same event, as a string.
        self.assertTrue(env["payload"].startswith('{"id":"evt_3QbEnchHookd0000000001","object":"event"'))

    def test_too_small(self):
        with self.assertRaises(ValueError):
            ingress.stripe_body(1024)
        with self.assertRaises(ValueError):
            ingress.envelope_body(1000)


class Signature(unittest.TestCase):
    def test_known_vector(self):
        # openssl dgst -sha256 -hmac whsec_0123456789abcdef over "1700000000.<body>"
        sig = ingress.stripe_signature("whsec_0123456789abcdef", 1700000000,
                                       b'{"id":"evt_1","type":"charge.succeeded"}')
        self.assertEqual(sig, "t=1700000000,v1=847fa8b9a32e9be88b5ab28e8016bb65fe54b5125b38f09c6cc0e8d097279195")

    def test_covers_timestamp_and_body(self):
        a = ingress.stripe_signature("whsec_x", 1, b"{}")
        self.assertNotEqual(a.split("v1=")[1], ingress.stripe_signature("whsec_x", 2, b"{}").split("v1=")[1])
        self.assertNotEqual(a, ingress.stripe_signature("whsec_x", 1, b"{ }"))
        self.assertNotEqual(a, ingress.stripe_signature("whsec_y", 1, b"{}"))


class Files(unittest.TestCase):
    def test_files_and_no_secret_on_disk(self):
        with tempfile.TemporaryDirectory() as d:
            f = ingress.Files(os.path.join(d, "x"))
            self.assertTrue(f.secret.startswith("whsec_"))
            self.assertGreaterEqual(len(f.secret), 6 + 48)
            for path in (f.stripe, f.envelope, f.sources):
                with open(path, "rb") as fh:
                    self.assertNotIn(f.secret.encode(), fh.read())
            with open(f.sources) as fh:
                text = fh.read()
            for want in ("name: stripe", "scheme: stripe", "secrets: [{env: BENCH_STRIPE_SECRET}]",
                         "deliveryIdHeader: x-bench-delivery", "tolerance: 1h"):
                self.assertIn(want, text)
            with open(f.stripe, "rb") as fh:
                self.assertEqual(fh.read(), ingress.stripe_body())
            sig = f.signature()
            t = int(sig.split(",")[0][2:])
            want = hmac.new(f.secret.encode(), f"{t}.".encode() + ingress.stripe_body(), hashlib.sha256).hexdigest()
            self.assertEqual(sig, f"t={t},v1={want}")
            # A new secret per run.
            self.assertNotEqual(f.secret, ingress.Files(os.path.join(d, "y")).secret)

    def test_target(self):
        t = targets.hookd("release", "sqlite", "/x/hookd", {})
        with tempfile.TemporaryDirectory() as d:
            f = ingress.Files(d)
            it = ingress.ingress_target(t, f)
            cmd, env = it.render(8090, "/tmp/a")
            self.assertEqual(env["HOOKD_SOURCES"], f.sources)
            self.assertEqual(env["BENCH_STRIPE_SECRET"], f.secret)
            self.assertEqual(env["HOOKD_AUTH"], "off")
            self.assertEqual(it.name, "hookd-release-sqlite-ingress")
            self.assertNotIn("HOOKD_SOURCES", t.env)
            self.assertEqual(t.name, "hookd-release-sqlite")

    def test_wanted(self):
        rel = targets.hookd("release", "sqlite", "/x", {})
        st = targets.hookd("static", "postgres", "/x", {})
        self.assertTrue(ingress.wanted(rel, "release,given"))
        self.assertFalse(ingress.wanted(st, "release,given"))
        self.assertTrue(ingress.wanted(st, "all"))
        self.assertFalse(ingress.wanted(targets.nginx(), "all"))


class Answers(unittest.TestCase):
    def test_created(self):
        ingress.expect_created("x", 201, '{"id":7,"duplicate":false}')
        ingress.expect_created("x", 201, '{"id":7,"source":"stripe"}')

    def test_refusals_name_the_reason(self):
        with self.assertRaisesRegex(RuntimeError, r"answered 401 \(no_matching_signature\)"):
            ingress.expect_created("POST /hooks/stripe", 401,
                                   '{"title":"Unauthorized","status":401,"reason":"no_matching_signature"}')
        with self.assertRaisesRegex(RuntimeError, "answered 404"):
            ingress.expect_created("x", 404, "not json")
        with self.assertRaisesRegex(RuntimeError, "not with a new row"):
            ingress.expect_created("x", 201, '{"id":7,"duplicate":true}')
        with self.assertRaisesRegex(RuntimeError, "answered 200"):
            ingress.expect_created("x", 200, '{"id":7,"duplicate":true}')
        with self.assertRaisesRegex(RuntimeError, "not JSON"):
            ingress.expect_created("x", 201, "created")


class Points(unittest.TestCase):
    LINE = ('HKBENCH_JSON {"durationUs":6000000,"requests":60000,"bytes":9000000,'
            '"errors":{"connect":0,"read":0,"write":0,"status":%d,"timeout":0},'
            '"latencyUs":{"min":100.000,"max":9000.000,"mean":900.000,"stdev":50.000,"p50":800.000,'
            '"p75":900.000,"p90":1100.000,"p99":4000.000,"p999":8000.000},'
            '"statusClasses":{"1xx":0,"2xx":%d,"2xxOther":%d,"3xx":0,"4xx":%d,"5xx":0},"bucketMs":1000,'
            '"perBucket":[10000,10000,10000,10000,10000,10000]}')

    def test_lua_line_counts_other_2xx_as_non2xx(self):
        p = parse.parse_wrk_json(self.LINE % (0, 60000, 0, 0))
        self.assertEqual(p["non2xx"], 0)
        self.assertAlmostEqual(p["rps"], 10000.0)
        self.assertAlmostEqual(p["p99Ms"], 4.0)
        ingress.check_point(p, "x")
        p = parse.parse_wrk_json(self.LINE % (0, 59990, 10, 0))
        self.assertEqual(p["non2xx"], 10)
        self.assertEqual(p["statusClasses"]["2xxOther"], 10)
        with self.assertRaisesRegex(RuntimeError, "10 responses other than 201"):
            ingress.check_point(p, "x")
        p = parse.parse_wrk_json(self.LINE % (5, 59995, 0, 5))
        with self.assertRaisesRegex(RuntimeError, "5 responses other than 201"):
            ingress.check_point(p, "x")

    def test_socket_errors_and_nothing_fail(self):
        with self.assertRaisesRegex(RuntimeError, "3 socket errors"):
            ingress.check_point(point(socketErrorsTotal=3, socketErrors={"read": 3}), "x")
        with self.assertRaisesRegex(RuntimeError, "no request completed"):
            ingress.check_point(point(requests=0), "x")


class Summary(unittest.TestCase):
    def test_met(self):
        s = ingress.summarize(point(rps=10000.0, serverCpuUsPerRequest=40.0, p99Ms=6.0),
                              point(rps=9500.0, serverCpuUsPerRequest=44.5, p99Ms=8.0))
        self.assertAlmostEqual(s["rpsRatio"], 0.95)
        self.assertAlmostEqual(s["cpuUsDelta"], 4.5)
        self.assertEqual(s["p99Ms"], 8.0)
        self.assertEqual(s["envelopeP99Ms"], 6.0)
        self.assertEqual(s["targetsMet"], {"rpsRatio": True, "cpuUsDelta": True, "p99Ms": True, "all": True})
        self.assertNotIn("dbCpuUsDelta", s)

    def test_missed_one_by_one(self):
        e = point(rps=10000.0, serverCpuUsPerRequest=40.0, dbCpuUsPerRequest=30.0)
        s = ingress.summarize(e, point(rps=8900.0, serverCpuUsPerRequest=44.0, p99Ms=5.0, dbCpuUsPerRequest=31.5))
        self.assertEqual(s["targetsMet"], {"rpsRatio": False, "cpuUsDelta": True, "p99Ms": True, "all": False})
        self.assertAlmostEqual(s["dbCpuUsDelta"], 1.5)
        s = ingress.summarize(e, point(rps=9000.0, serverCpuUsPerRequest=45.5, p99Ms=5.0))
        self.assertEqual(s["targetsMet"], {"rpsRatio": True, "cpuUsDelta": False, "p99Ms": True, "all": False})
        s = ingress.summarize(e, point(rps=9000.0, serverCpuUsPerRequest=30.0, p99Ms=20.5))
        self.assertEqual(s["targetsMet"], {"rpsRatio": True, "cpuUsDelta": True, "p99Ms": False, "all": False})
        self.assertAlmostEqual(s["cpuUsDelta"], -10.0)

    def test_unmeasured(self):
        s = ingress.summarize(point(rps=0.0), point(rps=None, p99Ms=float("nan")))
        self.assertIsNone(s["rpsRatio"])
        self.assertIsNone(s["p99Ms"])
        self.assertIsNone(s["targetsMet"]["all"])
        self.assertIsNone(s["targetsMet"]["rpsRatio"])
        self.assertTrue(s["targetsMet"]["cpuUsDelta"])


class Output(unittest.TestCase):
    def test_complete(self):
        self.assertEqual(ingress.check_complete(doc_with_ingress()), [])
        self.assertEqual(jsonout.check_complete(doc_with_ingress()), [])
        self.assertEqual(ingress.check_complete({"ingress": ingress.skipped("--no-ingress")}), [])

    def test_problems(self):
        self.assertEqual(ingress.check_complete(document()), ["ingress: missing"])
        self.assertEqual(ingress.check_complete({"ingress": {"status": "skipped"}}),
                         ["ingress: skipped without a reason"])
        doc = doc_with_ingress()
        r = doc["ingress"]["targets"]["hookd-release-sqlite"]
        del r["cpuUsDelta"]
        r["ingress"]["p99Ms"] = None
        r["envelope"]["non2xx"] = 4
        problems = "\n".join(ingress.check_complete(doc))
        for want in ("ingress.targets.hookd-release-sqlite.cpuUsDelta: missing",
                     "ingress.targets.hookd-release-sqlite.ingress.p99Ms: expected num",
                     "ingress.targets.hookd-release-sqlite.envelope.non2xx: 4, expected 0"):
            self.assertIn(want, problems)
        why = "RuntimeError: POST /hooks/stripe answered 404"
        doc["ingress"]["targets"]["hookd-release-postgres"] = {"status": "failed", "reason": why}
        self.assertIn("ingress.targets.hookd-release-postgres: failed: RuntimeError: POST /hooks/stripe answered 404",
                      ingress.check_complete(doc))

    def test_finish(self):
        sec = ingress.section(100, 6, "static")
        self.assertEqual(ingress.check_complete({"ingress": sec}), ["ingress.targets: none"])
        done = ingress.finish(sec)
        self.assertEqual(done["status"], "skipped")
        self.assertIn("'static'", done["reason"])
        self.assertEqual(ingress.check_complete({"ingress": done}), [])
        full = doc_with_ingress()["ingress"]
        self.assertIs(ingress.finish(full), full)

    def test_written_json_keeps_the_figures(self):
        back = json.loads(jsonout.dumps(doc_with_ingress(rps_ratio=0.9123456)))
        r = back["ingress"]["targets"]["hookd-release-sqlite"]
        self.assertEqual(r["rpsRatio"], 0.912)
        self.assertEqual(r["targetsMet"]["all"], True)
        self.assertEqual(back["ingress"]["limits"], {"rpsRatioMin": 0.9, "cpuUsDeltaMax": 5.0, "p99MsMax": 20.0})


class Report(unittest.TestCase):
    def goals(self, doc):
        return {x["goal"]: x for x in report.ratios(doc)["goals"]}

    def test_goals_met(self):
        g = self.goals(doc_with_ingress())
        ratio = g["ingress Stripe 2 KB c=100 SQLite / envelope (req/s)"]
        cpu = g["ingress Stripe 2 KB c=100 SQLite, server CPU over envelope (us/req)"]
        p99 = g["ingress Stripe 2 KB c=100 SQLite, p99 (ms)"]
        self.assertEqual((ratio["met"], cpu["met"], p99["met"]), (True, True, True))
        self.assertEqual((ratio["limit"], cpu["limit"], p99["limit"]), (0.9, 5.0, 20.0))
        self.assertAlmostEqual(ratio["value"], 0.95)
        self.assertIsNone(g["ingress Stripe 2 KB c=100 PostgreSQL, p99 (ms)"]["met"])

    def test_goals_missed(self):
        g = self.goals(doc_with_ingress(rps_ratio=0.8, delta=7.0, p99=25.0))
        self.assertAlmostEqual(g["ingress Stripe 2 KB c=100 SQLite / envelope (req/s)"]["missBy"], 0.1)
        self.assertAlmostEqual(g["ingress Stripe 2 KB c=100 SQLite, server CPU over envelope (us/req)"]["missBy"], 2.0)
        self.assertAlmostEqual(g["ingress Stripe 2 KB c=100 SQLite, p99 (ms)"]["missBy"], 5.0)

    def test_goals_from_given_binary_and_not_from_failures(self):
        doc = doc_with_ingress()
        T = doc["ingress"]["targets"]
        T["hookd-given-postgres"] = result(rps_ratio=0.7, store="postgres")
        T["hookd-release-sqlite"] = {"status": "failed", "reason": "x"}
        g = self.goals(doc)
        self.assertIsNone(g["ingress Stripe 2 KB c=100 SQLite / envelope (req/s)"]["met"])
        self.assertFalse(g["ingress Stripe 2 KB c=100 PostgreSQL / envelope (req/s)"]["met"])

    def test_summary(self):
        doc = doc_with_ingress(rps_ratio=0.85)
        doc["ingress"]["targets"]["hookd-release-postgres"] = {"status": "failed",
                                                               "reason": "RuntimeError: 12 responses other than 201"}
        doc["ratios"] = report.ratios(doc)
        self.assertAlmostEqual(doc["ratios"]["ingressVsEnvelope"]["hookd-release-sqlite"]["rpsRatio"], 0.85)
        text = report.summary(doc)
        self.assertIn("ingress: POST /hooks/stripe, 2048 B Stripe-signed", text)
        line = next(x for x in text.splitlines() if x.strip().startswith("hookd-release-sqlite") and "0.850" in x)
        for want in ("10000", "8500", "0.850 MISSED", "40.0", "43.0", "+3.0", "6.00", "8.00", "0/0", "NO"):
            self.assertIn(want, line)
        self.assertIn("hookd-release-postgres: failed: RuntimeError: 12 responses other than 201", text)

    def test_summary_skipped(self):
        doc = document()
        doc["ingress"] = ingress.skipped("--no-ingress")
        doc["ratios"] = report.ratios(doc)
        text = report.summary(doc)
        self.assertIn("ingress profile: skipped: --no-ingress", text)
        del doc["ingress"]
        self.assertNotIn("ingress profile", report.summary(doc))


class _Hooks(http.server.BaseHTTPRequestHandler):
    """Checks what the scripts send as hookd would (the Stripe MAC over
    t.body, the delivery id, the body) and answers 201, or `answer` when set."""
    protocol_version = "HTTP/1.1"

    def log_message(self, *a):
        pass

    def do_POST(self):
        st = self.server.state
        body = self.rfile.read(int(self.headers["Content-Length"]))
        status = 201
        with st["lock"]:
            st["posts"] += 1
            st["paths"].add(self.path)
            st["sizes"].add(len(body))
            if self.path == "/hooks/stripe":
                t, v1 = (kv.split("=", 1)[1] for kv in self.headers["Stripe-Signature"].split(","))
                want = hmac.new(st["secret"].encode(), t.encode() + b"." + body, hashlib.sha256).hexdigest()
                if not hmac.compare_digest(v1, want):
                    status = 401
                d = self.headers["X-Bench-Delivery"]
                if d in st["ids"]:
                    st["dups"] += 1
                st["ids"].add(d)
                st["types"].add(json.loads(body)["type"])
            else:
                st["types"].add(json.loads(body)["eventType"])
            status = st.get("answer") or status
        out = b'{"id":1,"duplicate":false}'
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(out)))
        self.end_headers()
        self.wfile.write(out)


class _Server(http.server.ThreadingHTTPServer):
    daemon_threads = True

    def handle_error(self, request, client_address):
        pass  # wrk closes its connections at the end of the run, mid-request


@unittest.skipUnless(shutil.which("wrk"), "wrk is not installed")
class Scripts(unittest.TestCase):
    def serve(self, answer=None):
        srv = _Server(("127.0.0.1", 0), _Hooks)
        srv.state = {"lock": threading.Lock(), "posts": 0, "ids": set(), "dups": 0, "paths": set(), "sizes": set(),
                     "types": set(), "secret": self.files.secret, "answer": answer}
        threading.Thread(target=srv.serve_forever, daemon=True).start()
        self.addCleanup(srv.server_close)
        self.addCleanup(srv.shutdown)
        return srv

    def wrk(self, srv, script, *args):
        r = subprocess.run(["wrk", "-t1", "-c2", "-d1s", "--latency", "-s", os.path.join(WRK_DIR, script),
                            f"http://127.0.0.1:{srv.server_port}/", "--"] + [str(a) for a in args],
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, timeout=30)
        return r, (parse.parse_wrk_json(r.stdout) if r.returncode == 0 else None)

    def setUp(self):
        d = tempfile.TemporaryDirectory()
        self.addCleanup(d.cleanup)
        self.files = ingress.Files(d.name)

    def test_ingress_script(self):
        srv = self.serve()
        r, p = self.wrk(srv, "ingress.lua", self.files.signature(), self.files.stripe, 250)
        self.assertEqual(r.returncode, 0, r.stderr)
        st = srv.state
        self.assertGreater(p["requests"], 10)
        self.assertEqual(p["non2xx"], 0)
        self.assertEqual(p["statusClasses"]["2xx"], p["requests"])
        self.assertEqual(p["bucketMs"], 250)
        self.assertEqual(sum(p["perBucket"]), p["requests"])
        ingress.check_point(p, "ingress.lua")
        # Every request reached the server signed, with the whole body and a delivery id of its own.
        self.assertEqual((st["paths"], st["sizes"], st["types"], st["dups"]),
                         ({"/hooks/stripe"}, {2048}, {"charge.succeeded"}, 0))
        self.assertEqual(len(st["ids"]), st["posts"])
        self.assertGreaterEqual(st["posts"], p["requests"])
        self.assertTrue(all(x.startswith("1-") for x in st["ids"]))

    def test_envelope_script(self):
        srv = self.serve()
        r, p = self.wrk(srv, "envelope2k.lua", self.files.envelope)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertGreater(p["requests"], 10)
        self.assertEqual(p["non2xx"], 0)
        self.assertEqual(p["bucketMs"], 1000)
        self.assertEqual((srv.state["paths"], srv.state["sizes"], srv.state["types"]),
                         ({"/api/webhooks"}, {2048}, {"charge.succeeded"}))

    def test_duplicates_and_refusals_count_as_non2xx(self):
        srv = self.serve(answer=200)
        _, p = self.wrk(srv, "ingress.lua", self.files.signature(), self.files.stripe)
        self.assertGreater(p["statusClasses"]["2xxOther"], 0)
        self.assertEqual(p["statusClasses"]["2xx"], 0)
        self.assertEqual(p["non2xx"], p["requests"])
        with self.assertRaises(RuntimeError):
            ingress.check_point(p, "x")
        # A signature made with another secret: the server here refuses it.
        srv = self.serve()
        bad = ingress.stripe_signature("whsec_other", 1700000000, ingress.stripe_body())
        _, p = self.wrk(srv, "ingress.lua", bad, self.files.stripe)
        self.assertEqual(p["statusClasses"]["4xx"], p["requests"])
        self.assertEqual(p["non2xx"], p["requests"])

    def test_bad_arguments_stop_wrk(self):
        srv = self.serve()
        r, _ = self.wrk(srv, "ingress.lua", "v1=abc", self.files.stripe)
        self.assertNotEqual(r.returncode, 0)
        self.assertIn("Stripe-Signature", r.stdout + r.stderr)
        r, _ = self.wrk(srv, "envelope2k.lua", os.path.join(os.path.dirname(self.files.envelope), "none"))
        self.assertNotEqual(r.returncode, 0)
        self.assertEqual(srv.state["posts"], 0)


if __name__ == "__main__":
    unittest.main()
