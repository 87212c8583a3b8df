# SPDX-License-Identifier: MIT
"""The operations kit (docs/operations.md): the alert rules under promtool
(check rules, and test rules with tests/ops/alerts_test.yaml, which must
cover every alert), their runbooks, and the Grafana dashboard, whose
queries, like the alerts', must name only metrics and labels a real hookd
exposes. That hookd runs here on a temporary SQLite database with a signed
ingress source, forwarding to tests/forward/sink.py, retention on and an
admin token, under a short mixed load; its /q/metrics is then the reference.

Environment: HOOKD_BIN (the binary), SRC (the source tree). Exit 77 (skip)
when promtool (Debian's prometheus package) is missing."""
import hashlib
import hmac
import http.client
import json
import os
import re
import secrets
import shutil
import subprocess
import sys
import tempfile
import time
import unittest

sys.dont_write_bytecode = True
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import promql  # noqa: E402

import yaml  # noqa: E402

BIN = os.environ["HOOKD_BIN"]
SRC = os.environ["SRC"]
PROMTOOL = shutil.which("promtool")
ALERTS = os.path.join(SRC, "deploy/prometheus/alerts.yaml")
ALERT_TESTS = os.path.join(SRC, "tests/ops/alerts_test.yaml")
DASHBOARD = os.path.join(SRC, "deploy/grafana/hookd.json")
RUNBOOKS = os.path.join(SRC, "docs/operations.md")
SINK = os.path.join(SRC, "tests/forward/sink.py")
PY = "/usr/bin/python3" if os.path.exists("/usr/bin/python3") else sys.executable

# What the dashboard must show (issue #18): at least these families.
REQUIRED_FAMILIES = {
    "http_server_requests_seconds", "hookd_ingress_total", "hookd_ingress_rejected_total",
    "hookd_store_query_seconds", "hookd_store_queue_depth", "hookd_store_queue_capacity",
    "hookd_connections_open", "hookd_auth_total", "hookd_forward_attempts_total",
    "hookd_forward_latency_seconds", "hookd_forward_inflight", "hookd_forward_dead_letters_total",
    "hookd_retention_deleted_total", "hookd_store_bytes", "process_resident_memory_bytes",
    "process_cpu_seconds_total",
}

# Grafana's variables, as a query would see them.
GRAFANA_VARS = {"__rate_interval": "1m", "__interval": "1m", "__range": "1h", "job": ".+", "instance": ".+"}

GH_SECRET = "ops-" + secrets.token_hex(16)


def grafana_expand(expr):
    def sub(m):
        name = m.group(1) or m.group(2)
        if name not in GRAFANA_VARS:
            raise KeyError(f"unknown Grafana variable ${name} in: {expr}")
        return GRAFANA_VARS[name]
    return re.sub(r"\$\{(\w+)\}|\$(\w+)", sub, expr)


def promtool_check_exprs(exprs):
    """promtool's parser on each expression, as recording rules in a temporary
    file. Returns (ok, output)."""
    rules = [{"record": f"ops_check:expr_{i}", "expr": e} for i, e in enumerate(exprs)]
    with tempfile.NamedTemporaryFile("w", suffix=".yaml", delete=False) as f:
        yaml.safe_dump({"groups": [{"name": "ops_check", "rules": rules}]}, f, sort_keys=False)
        path = f.name
    try:
        p = subprocess.run([PROMTOOL, "check", "rules", path], capture_output=True, text=True, timeout=60)
        return p.returncode == 0, p.stdout + p.stderr
    finally:
        os.unlink(path)


# ---- the server under a mixed load ---------------------------------------------


class Server:
    """hookd plus the sink, started once for the module."""

    def __init__(self):
        self.dir = tempfile.mkdtemp(prefix="hookd-ops-")
        self.procs = []
        self.token = "hkd_" + secrets.token_urlsafe(32)
        assert len(self.token) == 47

    def start(self):
        sink_out = os.path.join(self.dir, "sink.out")
        with open(sink_out, "w") as out, open(os.path.join(self.dir, "sink.err"), "w") as err:
            self.sink = subprocess.Popen([PY, SINK, "--port", "0"], stdout=out, stderr=err)
        self.procs.append(self.sink)
        self.sink_port = int(self._wait_line(sink_out, re.compile(r"^(\d+)$"), self.sink))

        with open(os.path.join(self.dir, "tokens"), "w") as f:
            f.write(f"ops admin {self.token}\n")
        with open(os.path.join(self.dir, "sources.yaml"), "w") as f:
            f.write("sources:\n  - {name: github, scheme: github, secrets: [{env: OPS_GH_SECRET}]}\n")
        env = {k: v for k, v in os.environ.items()
               if not k.startswith("HOOKD_") and k not in ("DATABASE_URL", "K_SINK", "PORT")}
        env.update({
            "PORT": "0", "HOOKD_HOST": "127.0.0.1", "HOOKD_THREADS": "2",
            "HOOKD_SQLITE_PATH": os.path.join(self.dir, "hookd.db"),
            "HOOKD_SOURCES": os.path.join(self.dir, "sources.yaml"), "OPS_GH_SECRET": GH_SECRET,
            "HOOKD_API_TOKENS_FILE": os.path.join(self.dir, "tokens"),
            "HOOKD_FORWARD_URL": f"http://127.0.0.1:{self.sink_port}/events",
            "HOOKD_RETENTION": "30d", "HOOKD_PURGE_INTERVAL": "1s",
        })
        out_path = os.path.join(self.dir, "hookd.out")
        with open(out_path, "w") as out, open(os.path.join(self.dir, "hookd.err"), "w") as err:
            self.hookd = subprocess.Popen([BIN], env=env, stdout=out, stderr=err, cwd=self.dir)
        self.procs.append(self.hookd)
        self.port = int(self._wait_line(out_path, re.compile(r"Listening on: http://127\.0\.0\.1:(\d+)"),
                                        self.hookd))

    def _wait_line(self, path, rx, proc, timeout=60):
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            with open(path) as f:
                for line in f:
                    m = rx.search(line.strip())
                    if m:
                        return m.group(1)
            if proc.poll() is not None:
                break
            time.sleep(0.05)
        errs = ""
        for name in ("hookd.err", "sink.err"):
            p = os.path.join(self.dir, name)
            if os.path.exists(p):
                errs += open(p).read()[-2000:]
        raise RuntimeError(f"{proc.args[0]} did not start (status {proc.poll()}): {errs}")

    def request(self, method, path, body=None, headers=None, port=None):
        c = http.client.HTTPConnection("127.0.0.1", port or self.port, timeout=15)
        try:
            c.request(method, path, body=body, headers=headers or {})
            r = c.getresponse()
            return r.status, r.read()
        finally:
            c.close()

    def auth(self):
        return {"Authorization": f"Bearer {self.token}"}

    def metrics(self):
        st, body = self.request("GET", "/q/metrics")
        assert st == 200, st
        return body.decode()

    def stop(self):
        for p in reversed(self.procs):
            if p.poll() is None:
                p.terminate()
                try:
                    p.wait(timeout=15)
                except subprocess.TimeoutExpired:
                    p.kill()
                    p.wait()
        shutil.rmtree(self.dir, ignore_errors=True)


def github_headers(body, secret, delivery):
    sig = hmac.new(secret.encode(), body, hashlib.sha256).hexdigest()
    return {"Content-Type": "application/json", "X-GitHub-Event": "push", "X-GitHub-Delivery": delivery,
            "X-Hub-Signature-256": "sha256=" + sig}


def mixed_load(s):
    """The load the dashboard's queries are checked against; returns what
    the sink received."""
    expect = []

    def do(want, method, path, body=None, headers=None):
        st, out = s.request(method, path, body, headers)
        expect.append((method, path, want, st))
        return st, out

    do(200, "GET", "/q/health/ready")
    st, out = do(201, "POST", "/api/webhooks",
                 json.dumps({"source": "ops", "eventType": "check", "payload": "{\"n\":1}"}).encode(),
                 {"Content-Type": "application/json"})
    wid = json.loads(out)["id"] if st == 201 else 1
    do(200, "GET", "/api/webhooks", headers=s.auth())                 # list
    do(200, "GET", f"/api/webhooks/{wid}", headers=s.auth())           # one
    do(200, "GET", "/api/system/info")                                 # info
    body = b'{"ref":"refs/heads/main","commits":[]}'
    do(201, "POST", "/hooks/github", body, github_headers(body, GH_SECRET, "ops-1"))
    do(401, "POST", "/hooks/github", body, github_headers(body, "not-the-secret", "ops-2"))
    do(401, "POST", "/hooks/github", body, {"Content-Type": "application/json", "X-GitHub-Event": "push"})
    do(401, "GET", "/api/webhooks")                                    # no credential
    do(401, "GET", "/api/webhooks", headers={"Authorization": "Bearer hkd_" + "A" * 43})
    do(404, "GET", "/no/such/route")
    # The live feed: opened, then left (its request is recorded when it ends).
    c = http.client.HTTPConnection("127.0.0.1", s.port, timeout=15)
    c.request("GET", "/api/webhooks/stream", headers=s.auth())
    r = c.getresponse()
    expect.append(("GET", "/api/webhooks/stream", 200, r.status))
    r.close()     # the response holds the socket too
    c.close()
    bad = [e for e in expect if e[2] != e[3]]
    assert not bad, f"unexpected answers (method, path, wanted, got): {bad}"

    # Both stored webhooks reach the sink; a retention run reports the
    # store's size; the stream's end is counted.
    deadline = time.monotonic() + 30
    ledger = []
    while time.monotonic() < deadline:
        _, out = s.request("GET", "/_ledger", port=s.sink_port)
        ledger = json.loads(out)
        m = s.metrics()
        if (len(ledger) >= 2 and "\nhookd_store_bytes " in m
                and 'uri="/api/webhooks/stream"' in m):
            return ledger
        time.sleep(0.2)
    raise AssertionError(f"after 30 s: {len(ledger)} forwarded (want 2), hookd_store_bytes "
                         f"{'present' if 'hookd_store_bytes ' in m else 'absent'}, stream "
                         f"{'recorded' if 'api/webhooks/stream' in m else 'not recorded'}")


SERVER = None
SCRAPE = None
LEDGER = None


def setUpModule():
    global SERVER, SCRAPE, LEDGER
    SERVER = Server()
    try:
        SERVER.start()
        LEDGER = mixed_load(SERVER)
        SCRAPE = promql.Scrape(SERVER.metrics())
    except BaseException:
        SERVER.stop()
        raise


def tearDownModule():
    if SERVER:
        SERVER.stop()


def load_alerts():
    with open(ALERTS) as f:
        doc = yaml.safe_load(f)
    return [r for g in doc["groups"] for r in g["rules"] if "alert" in r]


def load_dashboard():
    with open(DASHBOARD) as f:
        return json.load(f)


def dashboard_queries(d):
    """(where, expression) for every panel target and query variable."""
    out = []
    for p in d["panels"]:
        for t in p.get("targets", []):
            out.append((f"panel {p['id']} \"{p['title']}\" {t['refId']}", t["expr"]))
    for v in d["templating"]["list"]:
        if v["type"] == "query":
            q = v["query"]["query"] if isinstance(v["query"], dict) else v["query"]
            m = re.fullmatch(r"\s*label_values\((.*),\s*(\w+)\)\s*", q)
            assert m, f"variable {v['name']}: expected label_values(SELECTOR, LABEL), got {q}"
            # The label must be on the selector's metric: check it as `by`.
            out.append((f"variable {v['name']}", f"group by ({m.group(2)}) ({m.group(1)})"))
    return out


# ---- the tests -------------------------------------------------------------------


class Load(unittest.TestCase):
    """The scrape the other checks rely on reflects the load."""

    def test_the_load_is_in_the_scrape(self):
        s = SCRAPE
        self.assertGreaterEqual(s.value("hookd_ingress_total", result="stored", source="github"), 1)
        self.assertGreaterEqual(s.value("hookd_ingress_rejected_total", reason="no_matching_signature",
                                        source="github"), 1)
        self.assertGreaterEqual(s.value("hookd_ingress_rejected_total", reason="missing_header",
                                        source="github"), 1)
        self.assertGreaterEqual(s.value("hookd_auth_total", result="missing"), 1)
        self.assertGreaterEqual(s.value("hookd_auth_total", result="unknown"), 1)
        self.assertGreaterEqual(s.value("hookd_forward_attempts_total", result="delivered"), 2)
        self.assertGreaterEqual(s.value("http_server_requests_seconds_count", method="GET",
                                        outcome="CLIENT_ERROR", status="404", uri="NOT_FOUND"), 1)
        self.assertIsNotNone(s.value("hookd_store_bytes"))
        self.assertGreaterEqual(len(LEDGER), 2)
        self.assertEqual({r["path"] for r in LEDGER}, {"/events"})

    def test_every_ingress_reason_is_spelled_in_src(self):
        text = ""
        for root, _, files in os.walk(os.path.join(SRC, "src")):
            for n in files:
                if n.endswith(".c"):
                    with open(os.path.join(root, n), errors="replace") as f:
                        text += f.read()
        for r in sorted(promql.INGRESS_REASONS):
            self.assertIn(f'"{r}"', text, f"ingress reason {r} no longer in src/: update promql.py")


class Rules(unittest.TestCase):
    def test_promtool_check_rules(self):
        p = subprocess.run([PROMTOOL, "check", "rules", ALERTS], capture_output=True, text=True, timeout=60)
        self.assertEqual(p.returncode, 0, p.stdout + p.stderr)
        self.assertIn(f"SUCCESS: {len(load_alerts())} rules found", p.stdout)

    def test_promtool_test_rules(self):
        p = subprocess.run([PROMTOOL, "test", "rules", ALERT_TESTS], capture_output=True, text=True,
                           timeout=120)
        self.assertEqual(p.returncode, 0, p.stdout + p.stderr)
        self.assertIn("SUCCESS", p.stdout)

    def test_every_alert_fires_and_stays_quiet_in_the_unit_tests(self):
        with open(ALERT_TESTS) as f:
            t = yaml.safe_load(f)
        fired, quiet, neighbours = set(), set(), set()
        for group in t["tests"]:
            silent = [s for s in group["input_series"]
                      if re.search(r'(instance|source)="(ok|quiet)-', s["series"])]
            for case in group["alert_rule_test"]:
                if case.get("exp_alerts"):
                    fired.add(case["alertname"])
                    if silent:
                        neighbours.add(case["alertname"])
                else:
                    quiet.add(case["alertname"])
        names = {r["alert"] for r in load_alerts()}
        self.assertEqual(names - fired, set(), "alerts never seen firing in alerts_test.yaml")
        self.assertEqual(names - quiet, set(), "alerts never checked silent at a quiet time")
        self.assertEqual(names - neighbours, set(), "alerts with no ok-/quiet- series beside the firing one")
        self.assertEqual((fired | quiet) - names, set(), "tests of alerts that do not exist")

    def test_unit_test_series_are_shaped_like_hookd_s(self):
        with open(ALERT_TESTS) as f:
            t = yaml.safe_load(f)
        errors = []
        for group in t["tests"]:
            for s in group["input_series"]:
                errors += promql.check_series(s["series"], SCRAPE)
        self.assertEqual(errors, [])

    def test_labels_annotations_and_runbooks(self):
        with open(RUNBOOKS) as f:
            doc = f.read()
        slugs = set()
        for h in re.findall(r"^#{1,6}\s+(.+?)\s*$", doc, re.M):
            slugs.add(re.sub(r"[^\w\- ]", "", h.strip().lower()).replace(" ", "-"))
        for r in load_alerts():
            with self.subTest(alert=r["alert"]):
                self.assertIn(r["labels"]["severity"], ("critical", "warning"))
                a = r["annotations"]
                self.assertTrue(a.get("summary") and a.get("description"))
                m = re.fullmatch(r"\S+/operations\.md#([a-z0-9-]+)", a["runbook_url"])
                self.assertTrue(m, a["runbook_url"])
                self.assertEqual(m.group(1), r["alert"].lower())
                self.assertIn(m.group(1), slugs, "no runbook section in docs/operations.md")

    def test_alert_selectors_name_only_what_hookd_exposes(self):
        errors = []
        for r in load_alerts():
            errors += [f"{r['alert']}: {e}" for e in promql.check(r["expr"], SCRAPE)]
        self.assertEqual(errors, [])


class Dashboard(unittest.TestCase):
    def setUp(self):
        self.d = load_dashboard()

    def test_shape(self):
        d = self.d
        self.assertGreaterEqual(d["schemaVersion"], 36)
        v = {x["name"]: x for x in d["templating"]["list"]}
        self.assertEqual((v["datasource"]["type"], v["datasource"]["query"]), ("datasource", "prometheus"))
        for name in ("job", "instance"):
            self.assertEqual(v[name]["type"], "query")
            self.assertEqual(v[name]["datasource"], {"type": "prometheus", "uid": "${datasource}"})
        ids = [p["id"] for p in d["panels"]]
        self.assertEqual(len(ids), len(set(ids)), "panel ids repeat")
        boxes = []
        for p in d["panels"]:
            g = p["gridPos"]
            self.assertTrue(0 <= g["x"] and g["x"] + g["w"] <= 24, p["title"])
            for q in boxes:
                overlap = (g["x"] < q["x"] + q["w"] and q["x"] < g["x"] + g["w"] and
                           g["y"] < q["y"] + q["h"] and q["y"] < g["y"] + g["h"])
                self.assertFalse(overlap, f"panel {p['title']} overlaps another")
            boxes.append(g)
            if p["type"] == "row":
                continue
            self.assertEqual(p["datasource"], {"type": "prometheus", "uid": "${datasource}"}, p["title"])
            self.assertTrue(p["targets"], p["title"])
            for t in p["targets"]:
                self.assertEqual(t["datasource"]["uid"], "${datasource}", p["title"])
                self.assertIn('job=~"$job"', t["expr"], p["title"])
                self.assertIn('instance=~"$instance"', t["expr"], p["title"])

    def test_covers_what_the_issue_lists(self):
        used = set()
        for _, e in dashboard_queries(self.d):
            for s in promql.read(grafana_expand(e))[0]:
                used.add(re.sub(r"_(bucket|sum|count)$", "", s.name)
                         if SCRAPE.types.get(re.sub(r"_(bucket|sum|count)$", "", s.name)) == "histogram"
                         else s.name)
        self.assertEqual(REQUIRED_FAMILIES - used, set())
        self.assertEqual(REQUIRED_FAMILIES - SCRAPE.families(), set(), "required families hookd lacks")

    def test_queries_parse_with_promtool(self):
        q = dashboard_queries(self.d)
        ok, out = promtool_check_exprs([grafana_expand(e) for _, e in q])
        self.assertTrue(ok, out)
        self.assertIn(f"SUCCESS: {len(q)} rules found", out)

    def test_selectors_name_only_what_hookd_exposes(self):
        errors = []
        for where, e in dashboard_queries(self.d):
            errors += [f"{where}: {x}" for x in promql.check(grafana_expand(e), SCRAPE)]
        self.assertEqual(errors, [])


class Checker(unittest.TestCase):
    """The checks above can fail: wrong queries are caught, right ones pass."""

    WRONG = [
        ("rate(hookd_ingres_total[5m])", "no such metric"),
        ('hookd_ingress_total{reson="stored"}', "no label reson"),
        ("sum by (route) (rate(http_server_requests_seconds_count[5m]))", "label route"),
        ('hookd_auth_total{result="denied"}', 'no result="denied"'),
        ('hookd_forward_attempts_total{result=~"delivered|retried"}', 'no result="retried"'),
        ('http_server_requests_seconds{uri="/api/webhooks"}', "a histogram"),
        ("histogram_quantile(0.99, sum by (le) (rate(hookd_store_query_seconds_count[5m])))", "label le"),
        ('http_server_requests_seconds_count{status=~"6.."}', "matches no status"),
        ('http_server_requests_seconds_count{uri="/api/webhook"}', 'no uri="/api/webhook"'),
        ('hookd_store_queue_depth{backend="mysql"}', 'no backend="mysql"'),
        ('hookd_ingress_rejected_total{reason="bad_signature"}', 'no reason="bad_signature"'),
        ('hookd_store_errors_total{le="1"}', "no label le"),
        ('label_replace(hookd_build_info, "v", "$1", "version", "(.*)")', "label_replace"),
        ('{__name__="hookd_nope"}', "no such metric"),
        ('hookd_forward_inflight{job="hookd"} offset 5m > on (source) hookd_forward_inflight', "label source"),
    ]
    RIGHT = [
        'sum by (uri, status) (rate(http_server_requests_seconds_count{job=~"$job", status=~"5.."}[$__rate_interval]))',
        'histogram_quantile(0.99, sum by (le, operation) (rate(hookd_store_query_seconds_bucket[5m])))',
        'hookd_store_queue_depth / hookd_store_queue_capacity > 0.8',
        'up{job="hookd"} == 0',
        'sum by (source, reason) '
        '(increase(hookd_ingress_rejected_total{reason=~"no_matching_signature|no_secret"}[10m]))',
        'process_resident_memory_bytes > 100 * 1024 * 1024 and on (job, instance) hookd_build_info',
        'hookd_forward_inflight offset 5m',
    ]

    def test_wrong_selectors_are_caught(self):
        for expr, why in self.WRONG:
            with self.subTest(expr=expr):
                errors = promql.check(grafana_expand(expr) if "$__" in expr else expr, SCRAPE)
                self.assertTrue(any(why in e for e in errors), f"not caught ({why}): {errors}")

    def test_right_selectors_pass(self):
        for expr in self.RIGHT:
            with self.subTest(expr=expr):
                self.assertEqual(promql.check(grafana_expand(expr), SCRAPE), [])

    def test_promtool_catches_bad_syntax(self):
        ok, out = promtool_check_exprs(["sum(rate(hookd_auth_total[5m])"])
        self.assertFalse(ok, out)
        ok, out = promtool_check_exprs([grafana_expand(e) for e in self.RIGHT])
        self.assertTrue(ok, out)

    def test_unknown_grafana_variable_is_refused(self):
        with self.assertRaises(KeyError):
            grafana_expand('hookd_connections_open{job=~"$jobb"}')


if __name__ == "__main__":
    if not PROMTOOL:
        print("SKIP: promtool is not installed (Debian's prometheus package; scripts/deps.sh test)")
        sys.exit(77)
    unittest.main(verbosity=2)
