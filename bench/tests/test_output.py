# SPDX-License-Identifier: MIT
"""The JSON writer, the completeness check, the report and the targets."""
import copy
import json
import math
import os
import tempfile
import unittest

from hkbench import jsonout, report, system, targets


def point(**kw):
    p = {"connections": 100, "durationS": 6.0, "requests": 60000, "rps": 10000.0, "p50Ms": 1.0, "p90Ms": 2.0,
         "p99Ms": 5.0, "non2xx": 0, "socketErrorsTotal": 0, "serverCpuUsPerRequest": 15.0, "load1Before": 0.1,
         "foreignCpuPct": 0.5, "noisy": False, "rpsEarly": 9000.0, "rpsLate": 10500.0, "perBucket": [10000] * 6,
         "serverHwmMb": 12.0}
    p.update(kw)
    return p


def hookd_target(store="sqlite", variant="release"):
    run = {"run": 0, "readyMs": 2.5, "rssKb": 3000, "pssKb": 2500, "ussKb": 2000}
    return {
        "kind": "hookd", "variant": variant, "store": store,
        "binary": {"sizeBytes": 300000, "sizeMb": 0.29, "sharedObjects": 9},
        "startup": {"coldStartMs": 3.1, "appColdStartMs": 1.0, "warmStartMedianMs": 2.4, "medianMs": 2.5,
                    "appStartMedianMs": 0.9, "firstPostMs": 0.8, "firstGetMs": 0.2, "pageCacheDropped": False,
                    "runs": [run, dict(run, run=1)]},
        "memory": {"rssMb": 2.9, "pssMb": 2.4, "ussMb": 1.9, "peakRssMbAfterLoad": 12.0},
        "imageSizeMb": None,
        "wrk": {"rps": 10000.0, "p50Ms": 1.0, "p90Ms": 2.0, "p99Ms": 5.0},
        "load": {"paged": {"100": point(), "500": point(connections=500, serverHwmMb=20.0)}},
        "live": {"100": point(rps=60000.0, serverCpuUsPerRequest=7.0)},
    }


def document():
    return {
        "schema": "hookd-bench/1", "date": "2026-11-29T21:00:00Z", "methodology": "x", "quick": True,
        "noisy": False,
        "machine": {"cpu": "AMD EPYC", "cores": 2, "memoryGb": 23.5, "kernel": "6.1", "os": "Debian 12",
                    "compiler": "gcc 12", "libraries": {"libuv": "1.44"}, "pageCacheDrop": {"worked": False}},
        "benchmarkConfig": {"durationS": 6, "connections": [100, 500], "serverCpus": "0", "loadCpus": "1",
                            "dbCpus": "1", "maxLoad1": 0.5},
        "loadBefore": {"load1": 0.1},
        "targets": {"hookd-release-sqlite": hookd_target(),
                    "nginx": {"kind": "nginx", "startup": {"coldStartMs": 1.0, "medianMs": 1.0},
                              "memory": {"rssMb": 2.0},
                              "live": {"100": point(rps=62000.0, serverCpuUsPerRequest=6.5)}}},
        "ceilings": {"database": {"status": "ok", "tps": 20000.0, "clients": 10, "latencyAvgMs": 0.5}},
        "sweep": {"status": "ok", "variant": "release", "durationS": 3, "serverCpus": [0], "points": [
            {"store": "sqlite", "threads": 1, "pool": None, "connections": 100, "rps": 10000.0, "p99Ms": 5.0,
             "serverCpuUsPerRequest": 15.0},
            {"store": "sqlite", "threads": 2, "pool": None, "connections": 100, "rps": 10100.0, "p99Ms": 6.0,
             "serverCpuUsPerRequest": 16.0}]},
        "skipped": [{"target": "postgresql", "reason": "scripts/pg.sh does not exist yet"}],
    }


class Clean(unittest.TestCase):
    def test_values(self):
        v = jsonout.clean({"a": 1.23456, "b": float("nan"), "c": float("inf"), "d": (1, 2), 3: True, "e": None,
                           "f": [0.1 + 0.2]})
        self.assertEqual(v, {"a": 1.235, "b": None, "c": None, "d": [1, 2], "3": True, "e": None, "f": [0.3]})

    def test_dumps_is_strict_json(self):
        text = jsonout.dumps({"x": float("nan"), "y": "é\"\n"})
        self.assertEqual(json.loads(text, parse_constant=lambda c: self.fail(c)), {"x": None, "y": "é\"\n"})


class Write(unittest.TestCase):
    def test_roundtrip_and_no_leftovers(self):
        with tempfile.TemporaryDirectory() as d:
            path = os.path.join(d, "metrics", "2026-11-29T21-00-00Z.json")
            jsonout.write_json(path, document())
            with open(path) as f:
                back = json.load(f)
            self.assertEqual(back["targets"]["hookd-release-sqlite"]["startup"]["coldStartMs"], 3.1)
            self.assertEqual(os.listdir(os.path.dirname(path)), ["2026-11-29T21-00-00Z.json"])

    def test_failed_write_leaves_nothing(self):
        with tempfile.TemporaryDirectory() as d:
            path = os.path.join(d, "out.json")
            real = jsonout.dumps

            def broken(doc):
                raise RuntimeError("disk full")

            jsonout.dumps = broken
            try:
                with self.assertRaises(RuntimeError):
                    jsonout.write_json(path, document())
            finally:
                jsonout.dumps = real
            self.assertEqual(os.listdir(d), [])

    def test_unknown_values_become_strings(self):
        self.assertEqual(jsonout.clean({"p": ValueError("x")}), {"p": "x"})


class Complete(unittest.TestCase):
    def test_complete(self):
        self.assertEqual(jsonout.check_complete(document()), [])

    def test_missing_and_wrong_types(self):
        doc = document()
        t = doc["targets"]["hookd-release-sqlite"]
        del t["startup"]["coldStartMs"]
        t["memory"]["rssMb"] = "2.9"
        t["load"]["paged"]["100"]["p99Ms"] = None
        t["live"]["100"]["rps"] = float("nan")
        t["startup"]["runs"][1]["readyMs"] = None
        del doc["machine"]["cpu"]
        problems = "\n".join(jsonout.check_complete(doc))
        for want in ("machine.cpu: missing", "startup.coldStartMs: missing", "memory.rssMb: expected num",
                     "load.paged.100.p99Ms: expected num", "live.100.rps: expected num",
                     "startup.runs[1].readyMs"):
            self.assertIn(want, problems)

    def test_optional_numbers_may_be_null(self):
        doc = document()
        doc["targets"]["hookd-release-sqlite"]["load"]["paged"]["100"]["rpsLate"] = None
        self.assertEqual(jsonout.check_complete(doc), [])

    def test_no_hookd(self):
        doc = document()
        del doc["targets"]["hookd-release-sqlite"]
        self.assertIn("targets: no hookd target ran", jsonout.check_complete(doc))

    def test_bool_is_not_a_number(self):
        doc = document()
        doc["targets"]["hookd-release-sqlite"]["wrk"]["rps"] = True
        self.assertTrue(jsonout.check_complete(doc))

    def test_empty_profile(self):
        doc = document()
        doc["targets"]["hookd-release-sqlite"]["load"]["reference"] = {}
        self.assertIn("targets.hookd-release-sqlite.load.reference: no points", jsonout.check_complete(doc))


class Report(unittest.TestCase):
    def test_ratios_and_goals(self):
        doc = document()
        r = report.ratios(doc)
        self.assertAlmostEqual(r["liveVsNginx"]["hookd-release-sqlite"]["rpsRatio"], 60000 / 62000)
        goals = {g["goal"]: g for g in r["goals"]}
        g = goals["exec -> first 200, SQLite, median (ms)"]
        self.assertTrue(g["met"])
        g = goals["GET /q/health/live, share of nginx's req/s"]
        self.assertTrue(g["met"])
        g = goals["idle RSS, PostgreSQL (MB)"]
        self.assertIsNone(g["met"])
        doc["targets"]["hookd-release-sqlite"]["startup"]["medianMs"] = 4.5
        g = {g["goal"]: g for g in report.ratios(doc)["goals"]}["exec -> first 200, SQLite, median (ms)"]
        self.assertFalse(g["met"])
        self.assertAlmostEqual(g["missBy"], 1.5)

    def test_summary_mentions_every_target(self):
        doc = document()
        doc["ratios"] = report.ratios(doc)
        text = report.summary(doc)
        self.assertIn("hookd-release-sqlite", text)
        self.assertIn("nginx", text)
        self.assertIn("pgbench", text)
        self.assertIn("where more stops helping", text)

    def test_floor_is_context_not_a_goal(self):
        doc = document()
        doc["targets"]["floor"] = {"kind": "floor", "startup": {"medianMs": 2.4}, "memory": {"rssMb": 0.7}}
        r = report.ratios(doc)
        g = [x for x in r["goals"] if "floor" in x["goal"]]
        self.assertEqual(len(g), 1)
        self.assertEqual(g[0]["value"], 2.4)
        self.assertIsNone(g[0]["met"])
        doc["ratios"] = r
        text = report.summary(doc)
        self.assertIn("this machine's floor", text)
        # Not a hookd target: its missing load and live are not problems.
        self.assertEqual(jsonout.check_complete(doc), [])

    def test_floor_target_gets_no_load(self):
        t = targets.floor("/x/floor")
        self.assertFalse(t.load)
        self.assertFalse(t.api)
        cmd, env = t.render(18000, "/tmp")
        self.assertEqual(cmd, ["/x/floor"])
        self.assertEqual(env["PORT"], "18000")

    def test_knees(self):
        pts = [{"store": "postgres", "threads": t, "pool": p, "connections": 100, "rps": r}
               for t, p, r in [(1, 1, 1000), (2, 1, 1800), (4, 1, 1850), (1, 2, 1500), (2, 2, 1550)]]
        k = report.knees(pts)
        self.assertIn("postgres pool=1 c=100: threads 2 (1800 req/s); 4 gives 1850", k)
        self.assertIn("postgres threads=1 c=100: still rising at pool 2 (1500 req/s)", k)
        self.assertIn("postgres threads=2 c=100: pool 1 (1800 req/s); 2 gives 1550", k)


class Targets(unittest.TestCase):
    def test_render(self):
        t = targets.hookd("release", "postgres", "/x/hookd", {}, pool=4)
        cmd, env = t.render(8081, "/tmp/t", "postgresql://u@127.0.0.1:5999/db")
        self.assertEqual(cmd, ["/x/hookd"])
        self.assertEqual(env["PORT"], "8081")
        self.assertEqual(env["DATABASE_URL"], "postgresql://u@127.0.0.1:5999/db")
        self.assertEqual(env["HOOKD_DB_POOL"], "4")

    def test_custom(self):
        with tempfile.TemporaryDirectory() as d:
            with open(os.path.join(d, "svc.json"), "w") as f:
                json.dump({"name": "quarkus-native", "command": ["./app", "-Dquarkus.http.port={port}"],
                           "env": {"TMPDIR": "{tmp}"}, "healthPath": "/q/health"}, f)
            with open(os.path.join(d, "svc.json.example"), "w") as f:
                f.write("not read")
            (t,) = targets.custom_targets(d)
            cmd, env = t.render(9000, "/tmp/q")
            self.assertEqual(cmd, ["./app", "-Dquarkus.http.port=9000"])
            self.assertEqual(env, {"TMPDIR": "/tmp/q"})
            self.assertEqual((t.health, t.api, t.kind), ("/q/health", True, "custom"))

    def test_custom_needs_a_command(self):
        with tempfile.TemporaryDirectory() as d:
            p = os.path.join(d, "bad.json")
            with open(p, "w") as f:
                json.dump({"name": "x", "command": []}, f)
            with self.assertRaises(ValueError):
                targets.load_custom(p)

    def test_nginx_config(self):
        t = targets.nginx("nginx")
        with tempfile.TemporaryDirectory() as d:
            t.write_config(8082, d)
            conf = open(os.path.join(d, "nginx.conf")).read()
            self.assertIn("listen 127.0.0.1:8082", conf)
            self.assertIn("master_process off;", conf)
            self.assertIn("return 200", conf)


class Cpus(unittest.TestCase):
    def test_cpulist(self):
        self.assertEqual(system.parse_cpulist("0"), [0])
        self.assertEqual(system.parse_cpulist("0,2-4"), [0, 2, 3, 4])
        self.assertEqual(system.cpulist([0, 1]), "0,1")


if __name__ == "__main__":
    unittest.main()
