# SPDX-License-Identifier: MIT
"""The access-control measurements: what coldstart -a reports, the session
answer, the target with access control on, and their place in the JSON, the
completeness check, the goals and the summary."""
import copy
import unittest

from hkbench import auth, jsonout, report, targets

from test_output import document, point


def run(n=0, **kw):
    r = {"run": n, "status": 200, "readyMs": 3.0 + n, "sessionMs": 0.4, "sessionStatus": 201,
         "firstAuthGetMs": 0.30 + n / 10, "firstAuthGetStatus": 200, "secondAuthGetMs": 0.12,
         "secondAuthGetStatus": 200, "execToFirstAuthGetMs": 4.0 + n}
    r.update(kw)
    return r


def auth_section(ratio=0.9, first=0.3, second=0.12):
    return {"status": "ok", "sessions": "redis", "redisVersion": "7.0.15",
            "startup": {"firstAuthGetMs": first, "secondAuthGetMs": second, "execToFirstAuthGetMs": 4.0,
                        "sessionCreateMs": 0.4, "readyMs": 3.0, "runs": [run(0), run(1)]},
            "load": {"connections": 100, "profile": "paged", "off": point(rps=10000.0),
                     "on": point(rps=10000.0 * ratio, redisCpuUsPerRequest=3.0), "rpsRatio": ratio}}


def doc_with_auth(**kw):
    doc = document()
    doc["targets"]["hookd-release-sqlite"]["auth"] = auth_section(**kw)
    return doc


class Startup(unittest.TestCase):
    def test_medians_and_first_run(self):
        s = auth.summarize_start([run(0), run(1), run(2)])
        self.assertAlmostEqual(s["firstAuthGetMs"], 0.4)
        self.assertAlmostEqual(s["secondAuthGetMs"], 0.12)
        self.assertAlmostEqual(s["execToFirstAuthGetMs"], 5.0)
        self.assertAlmostEqual(s["firstRun"]["firstAuthGetMs"], 0.3)
        self.assertEqual(len(s["runs"]), 3)

    def test_a_refused_request_fails_the_measurement(self):
        for bad in (run(1, sessionStatus=401), run(1, firstAuthGetStatus=503), run(1, secondAuthGetStatus=401),
                    run(1, firstAuthGetStatus=-1)):
            with self.assertRaises(RuntimeError):
                auth.summarize_start([run(0), bad])
        with self.assertRaises(RuntimeError):
            auth.summarize_start([])

    def test_session_answer(self):
        body = '{"token":"hks_abc","expiresAt":"2026-12-01T14:00:00Z","csrfToken":"hkc_x","subject":"bench"}'
        self.assertEqual(auth.session_from(body), "hks_abc")
        with self.assertRaises(ValueError):
            auth.session_from('{"token":"hkd_abc"}')
        with self.assertRaises(ValueError):
            auth.session_from('{"csrfToken":"hkc_x"}')


class Target(unittest.TestCase):
    def test_auth_target_turns_access_control_on(self):
        t = targets.hookd("release", "sqlite", "/x/hookd", {})
        a = auth.auth_target(t, "redis://u:p@127.0.0.1:6390/0")
        cmd, env = a.render(8090, "/tmp/a")
        self.assertEqual(env["HOOKD_AUTH"], "on")
        self.assertEqual(env["HOOKD_REDIS_URL"], "redis://u:p@127.0.0.1:6390/0")
        self.assertEqual(a.name, "hookd-release-sqlite-auth")
        # The original keeps the open API the reference's mix needs.
        self.assertEqual(t.render(8090, "/tmp/a")[1]["HOOKD_AUTH"], "off")
        self.assertNotIn("HOOKD_REDIS_URL", t.env)


class Output(unittest.TestCase):
    def test_complete_with_auth(self):
        self.assertEqual(jsonout.check_complete(doc_with_auth()), [])

    def test_auth_is_optional_and_may_be_skipped(self):
        doc = document()
        self.assertEqual(jsonout.check_complete(doc), [])
        doc["targets"]["hookd-release-sqlite"]["auth"] = {"status": "skipped",
                                                          "reason": "redis-server is not installed"}
        self.assertEqual(jsonout.check_complete(doc), [])

    def test_missing_figures_and_failures_are_problems(self):
        doc = doc_with_auth()
        au = doc["targets"]["hookd-release-sqlite"]["auth"]
        del au["startup"]["secondAuthGetMs"]
        au["load"]["on"]["rps"] = None
        problems = "\n".join(jsonout.check_complete(doc))
        self.assertIn("auth.startup.secondAuthGetMs: missing", problems)
        self.assertIn("auth.load.on.rps: expected num", problems)
        doc["targets"]["hookd-release-sqlite"]["auth"] = {"status": "failed", "reason": "coldstart -a failed"}
        self.assertIn("targets.hookd-release-sqlite.auth: failed: coldstart -a failed", jsonout.check_complete(doc))
        doc["targets"]["hookd-release-sqlite"]["auth"] = {"status": "skipped"}
        self.assertTrue(jsonout.check_complete(doc))

    def test_goals(self):
        g = {x["goal"]: x for x in report.ratios(doc_with_auth())["goals"]}
        first = g["first GET with a session (Redis) after start, median (ms)"]
        second = g["second GET with that session, median (ms)"]
        ratio = g["mix c=100 with sessions in Redis / HOOKD_AUTH=off (req/s)"]
        self.assertEqual((first["met"], second["met"], ratio["met"]), (True, True, True))
        self.assertEqual((first["limit"], second["limit"], ratio["limit"]), (2.0, 0.5, 0.85))
        g = {x["goal"]: x for x in report.ratios(doc_with_auth(ratio=0.8, first=2.5, second=0.6))["goals"]}
        self.assertFalse(g["first GET with a session (Redis) after start, median (ms)"]["met"])
        self.assertAlmostEqual(g["second GET with that session, median (ms)"]["missBy"], 0.1)
        r = g["mix c=100 with sessions in Redis / HOOKD_AUTH=off (req/s)"]
        self.assertFalse(r["met"])
        self.assertAlmostEqual(r["missBy"], 0.05)

    def test_goals_not_measured_without_auth(self):
        for doc in (document(), copy.deepcopy(doc_with_auth())):
            if "auth" in doc["targets"]["hookd-release-sqlite"]:
                doc["targets"]["hookd-release-sqlite"]["auth"] = {"status": "skipped", "reason": "no Redis"}
            g = {x["goal"]: x for x in report.ratios(doc)["goals"]}
            self.assertIsNone(g["second GET with that session, median (ms)"]["met"])

    def test_summary(self):
        doc = doc_with_auth()
        doc["targets"]["hookd-release-postgres"] = copy.deepcopy(doc["targets"]["hookd-release-sqlite"])
        doc["targets"]["hookd-release-postgres"]["store"] = "postgres"
        doc["targets"]["hookd-release-postgres"]["auth"] = {"status": "skipped", "reason": "no Redis here"}
        doc["ratios"] = report.ratios(doc)
        self.assertAlmostEqual(doc["ratios"]["authVsOff"]["hookd-release-sqlite"], 0.9)
        text = report.summary(doc)
        self.assertIn("access control, sessions in Redis", text)
        self.assertIn("at 100 connections", text)
        line = next(x for x in text.splitlines() if x.strip().startswith("hookd-release-sqlite") and "0.900" in x)
        for want in ("0.300", "0.120", "10000", "9000"):
            self.assertIn(want, line)
        self.assertIn("hookd-release-postgres: skipped: no Redis here", text)
        self.assertIn("HOOKD_AUTH=off (req/s)", text)

    def test_summary_without_auth_has_no_section(self):
        doc = document()
        doc["ratios"] = report.ratios(doc)
        self.assertNotIn("access control", report.summary(doc))


if __name__ == "__main__":
    unittest.main()
