#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""The forwarding test tools tested: sink.py's answers and ledger, and
check_events.sh's verdicts on hand-made CloudEvents (spec-valid ones that
must pass, each kind of broken one that must fail with its reason).

    BUILD=build-dir python3 tests/forward/selftest.py

Exit 0 when all holds, 1 otherwise; 77 (skipped) when node or npm is
missing, after the sink's own checks have passed.
"""
import base64
import http.client
import json
import os
import socket
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
failures = []


def expect(cond, what):
    if not cond:
        failures.append(what)
        print("FAIL: " + what, file=sys.stderr)


class Sink:
    def __init__(self, tmp, *extra):
        self.ledger = os.path.join(tmp, "ledger.jsonl")
        self.proc = subprocess.Popen([sys.executable, os.path.join(HERE, "sink.py"), "--port", "0",
                                      "--ledger", self.ledger, *extra], stdout=subprocess.PIPE, text=True)
        self.port = int(self.proc.stdout.readline())

    def conn(self, timeout=5):
        return http.client.HTTPConnection("127.0.0.1", self.port, timeout=timeout)

    def call(self, method, path, body=None, headers=None, timeout=5):
        c = self.conn(timeout)
        try:
            c.request(method, path, body=body, headers=headers or {})
            r = c.getresponse()
            return r.status, dict(r.getheaders()), r.read()
        finally:
            c.close()

    def control(self, obj):
        status, _, body = self.call("POST", "/_control", json.dumps(obj))
        assert status == 200, body
        return json.loads(body)

    def records(self, since=0):
        status, _, body = self.call("GET", "/_ledger?since=%d" % since)
        assert status == 200
        return json.loads(body)

    def stop(self):
        self.proc.terminate()
        try:
            self.proc.wait(5)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        expect(self.proc.returncode == 0, "the sink exits 0 on SIGTERM (got %s)" % self.proc.returncode)


def sink_checks(s):
    # Default answer, keep-alive on one connection, the record's fields.
    c = s.conn()
    ports = set()
    for i in range(3):
        c.request("POST", "/ev?i=%d" % i, body=b"\x00\xff" * i, headers={"ce-id": str(i), "X-Dup": "a"})
        r = c.getresponse()
        r.read()
        expect(r.status == 200, "default answer 200")
        ports.add(c.sock.getsockname()[1])
    c.close()
    expect(len(ports) == 1, "keep-alive: three requests on one connection")
    recs = s.records()
    expect([r["path"] for r in recs] == ["/ev?i=0", "/ev?i=1", "/ev?i=2"], "records in order")
    expect(base64.b64decode(recs[2]["body"]) == b"\x00\xff\x00\xff", "the body byte for byte")
    expect(["ce-id", "2"] in recs[2]["headers"], "headers as sent")
    expect(recs[2]["answer"] == {"status": 200}, "the answer recorded")
    with open(s.ledger) as f:
        expect(len(f.readlines()) == 3, "the ledger file has a line per request")
    expect(s.records(since=2)[0]["seq"] == 3 and len(s.records(since=2)) == 1, "?since")

    # A fixed status for N requests, with headers and a body; then the default again.
    s.control({"status": 503, "count": 2, "headers": {"Retry-After": "1"}})
    s.control({"status": 400, "count": 1, "body": "no thanks"})
    got = [s.call("POST", "/ev", b"x") for _ in range(4)]
    expect([g[0] for g in got] == [503, 503, 400, 200], "rules in order, each for its count: %s" % [g[0] for g in got])
    expect(got[0][1].get("Retry-After") == "1", "the rule's headers")
    expect(got[2][2] == b"no thanks", "the rule's body")

    # Until reset.
    s.control({"status": 500})
    expect([s.call("POST", "/ev", b"x")[0] for _ in range(3)] == [500] * 3, "a rule without count stays")
    s.control({"reset": True})
    expect(s.call("POST", "/ev", b"x")[0] == 200, "reset drops it")

    # Close and reset: no answer at all.
    for action in ("close", "reset"):
        s.control({"action": action, "count": 1})
        try:
            s.call("POST", "/ev", b"x")
            expect(False, action + ": an answer came")
        except (http.client.RemoteDisconnected, ConnectionResetError, BrokenPipeError):
            pass
    # Stall: the connection stays open, no answer.
    s.control({"action": "stall", "count": 1})
    t0 = time.monotonic()
    try:
        s.call("POST", "/ev", b"x", timeout=0.8)
        expect(False, "stall: an answer came")
    except socket.timeout:
        expect(time.monotonic() - t0 >= 0.7, "stall holds the request")
    # Slow.
    s.control({"delayMs": 400, "count": 1, "status": 202})
    t0 = time.monotonic()
    status = s.call("POST", "/ev", b"x")[0]
    expect(status == 202 and time.monotonic() - t0 >= 0.39, "delayMs answers late")

    # Chunked request bodies are read and recorded whole.
    c = s.conn()
    c.putrequest("POST", "/chunked")
    c.putheader("Transfer-Encoding", "chunked")
    c.endheaders()
    c.send(b"3\r\nabc\r\n4\r\ndefg\r\n0\r\n\r\n")
    r = c.getresponse()
    r.read()
    c.close()
    expect(r.status == 200 and base64.b64decode(s.records()[-1]["body"]) == b"abcdefg", "chunked body")

    # Refusals of the control API and of its own paths.
    for bad in ({"bogus": 1}, {"status": "x"}, {"count": 0}, {"action": "explode"}, {"headers": {"a": "b\r\nc: d"}}):
        expect(s.call("POST", "/_control", json.dumps(bad))[0] == 400, "control refuses %s" % bad)
    expect(s.call("POST", "/_control", b"{not json")[0] == 400, "control refuses bad JSON")
    expect(s.call("GET", "/_nothing")[0] == 404, "unknown /_ path")
    n = len(s.records())
    expect(s.call("GET", "/_health")[0] == 200, "health")
    expect(len(s.records()) == n, "the sink's own endpoints are not recorded")
    answers = [r["answer"] for r in s.records()]
    for a in ("close", "reset", "stall"):
        expect({"action": a} in answers, "the %s request is recorded" % a)

    # Too large.
    expect(s.call("POST", "/big", b"x" * 2048)[0] == 413, "413 past --max-body")
    s.control({"clearLedger": True})
    expect(s.records() == [] and os.path.getsize(s.ledger) == 0, "clearLedger empties both")


# ---- CloudEvents ---------------------------------------------------------

T = "2025-12-01T18:03:01.123456Z"


def binary(id_, data=b'{"a":1}', ct="application/json", **attrs):
    h = {"ce-specversion": "1.0", "ce-id": id_, "ce-source": "/hooks/gh", "ce-type": "com.github.push", "ce-time": T}
    h.update({"ce-" + k: v for k, v in attrs.items()})
    if ct is not None:
        h["Content-Type"] = ct
    return h, data


def structured(obj):
    ev = {"specversion": "1.0", "id": "s", "source": "/api/webhooks", "type": "dev.hookd.webhook.x", "time": T}
    ev.update(obj)
    ev = {k: v for k, v in ev.items() if v is not None}
    return {"Content-Type": "application/cloudevents+json; charset=utf-8"}, json.dumps(ev).encode()


GOOD = [
    binary("1"),
    binary("1"),                                            # a retry: same id, same event
    binary("2", b"\x00\x01\xfe\xff", "application/octet-stream"),
    binary("3", b"raw", None, subject="a%20b%22%25%C3%A9", hookddeliveryid="x%0Ay".replace("%0A", "%EF%BF%BD")),
    binary("4", b"", "text/plain"),
    binary("5", b" [1, 2]", "application/json"),            # JSON the SDK's shortcut cannot read as text
    binary("6", b"plain", "text/plain; charset=utf-8"),
    structured({"id": "7", "datacontenttype": "application/json", "data": {"k": [1, None]}}),
    structured({"id": "8", "datacontenttype": "application/octet-stream", "data_base64": "AAH+/w=="}),
    structured({"id": "9", "subject": "b\u00e9", "hookddeliveryid": "d-1"}),
]

BAD = [
    (binary("b1", subject="a b"), "a byte outside printable ASCII"),
    (binary("b2", subject="%C0%A0"), "invalid UTF-8"),
    (binary("b3", subject="%0D%0A"), "control character"),
    (binary("b4", subject="100%"), "'%' not followed"),
    (binary("b5", time="yesterday"), "not RFC 3339"),
    (binary("b6", time="2025-02-30T00:00:00Z"), "no such moment"),
    (binary("b7", datacontenttype="text/plain"), "binary mode takes Content-Type"),
    (binary("b8", specversion="0.3"), "ce-specversion 0.3"),
    (({"ce-specversion": "1.0", "ce-id": "b9", "ce-source": "/x", "Content-Type": "text/plain"}, b"x"), "no ce-type"),
    (binary("1", b'{"a":2}'), "already named another event"),
    (structured({"id": "b11", "data": {}, "data_base64": "AA=="}), "both data and data_base64"),
    (structured({"id": "b12", "data_base64": "AA"}), "not canonical base64"),
    (structured({"id": "b13", "type": None}), "invalid"),
    (structured({"id": "b14", "specversion": "0.3"}), "specversion"),
    (({"Content-Type": "application/cloudevents+json"}, b"[1]"), "not a JSON object"),
    (({"Content-Type": "application/cloudevents-batch+json"}, b"[]"), "a batch"),
]


def run_check(ledger, *args):
    p = subprocess.run(["bash", os.path.join(HERE, "check_events.sh"), ledger, *args], capture_output=True,
                       text=True)
    return p.returncode, p.stdout + p.stderr


def post(s, ev):
    headers, body = ev
    return s.call("POST", "/events", body, headers)[0]


def check_checks(s):
    for ev in GOOD:
        post(s, ev)
    rc, out = run_check(s.ledger, "--min", str(len(GOOD)))
    if rc == 77:
        print("selftest: " + out.strip(), file=sys.stderr)
        return 77
    expect(rc == 0, "the valid events pass: " + out)
    expect("10 events" in out and "1 repeats" in out, "the summary counts them: " + out)
    rc, out = run_check(s.ledger, "--mode", "binary")
    expect(rc == 1 and "structured mode where binary was expected" in out, "--mode binary refuses structured")
    for ev, reason in BAD:
        s.control({"clearLedger": True})
        post(s, GOOD[0])
        post(s, ev)
        rc, out = run_check(s.ledger)
        expect(rc == 1 and reason in out and "ledger.jsonl:2 " in out and "1 invalid" in out,
               "caught (%s): rc %d: %s" % (reason, rc, out.strip()))
    s.control({"clearLedger": True})
    rc, out = run_check(s.ledger)
    expect(rc == 1 and "at least 1 expected" in out, "an empty ledger fails")
    return 0


def main():
    with tempfile.TemporaryDirectory(prefix="hookd-sinktest-") as tmp:
        s = Sink(tmp, "--max-body", "1024")
        try:
            sink_checks(s)
            rc = check_checks(s)
        finally:
            s.stop()
    if failures:
        print("selftest: %d failed" % len(failures), file=sys.stderr)
        return 1
    if rc == 77:
        return 77
    print("selftest: sink and CloudEvents check OK")
    return 0


if __name__ == "__main__":
    sys.exit(main())
