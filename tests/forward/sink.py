#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""A CloudEvents sink for the forwarding tests: records what it is sent and
answers as it is told (Python 3 standard library only).

    python3 tests/forward/sink.py [--host 127.0.0.1] [--port 0] [--ledger FILE]
                                  [--status 200] [--max-body BYTES]

An HTTP/1.1 server (keep-alive, one thread per connection) that records every
request other than its own /_ endpoints, oldest first, in memory and, with
--ledger, as JSON lines in FILE (appended and flushed one line at a time, so
a test may read it while the sink runs). The first line on stdout is the
port it listens on (useful with --port 0); it exits on SIGTERM or SIGINT.

A record:

    {"seq": 1, "time": 1764612181.123456, "method": "POST", "path": "/x",
     "headers": [["Host", "127.0.0.1:4000"], ["ce-id", "42"], ...],
     "body": "<base64>", "answer": {"status": 503} | {"action": "stall"} | ...}

Headers keep the order, spelling and repetitions they came with.

Control, over HTTP on the same port:

    POST /_control   a JSON object, or a list of them, each appended to the
                     queue of rules; the next request takes the first rule,
                     which is used up after "count" requests (omitted or
                     null: until a reset). With no rule, --status answers.
        {"status": 503, "count": 2, "headers": {"Retry-After": "1"}}
        {"status": 400, "body": "no thanks"}
        {"action": "stall", "count": 1}   accept, read, never answer (the
                                          connection stays open until the
                                          client leaves or the sink stops)
        {"action": "close", "count": 1}   read, then close without answering
        {"action": "reset", "count": 1}   the same with a TCP RST (SO_LINGER 0)
        {"delayMs": 1500, "count": 1}     answer (status as given, else
                                          --status) after a delay
        {"reset": true}                   drop every rule first
        {"clearLedger": true}             forget the records (and truncate FILE)
    GET /_ledger[?since=SEQ]   the records (seq > SEQ) as a JSON array
    GET /_rules                the queue of rules
    GET /_health               200

Example (bash):

    python3 tests/forward/sink.py --port 0 --ledger /tmp/ledger.jsonl > /tmp/sink.out &
    sleep 0.5; port=$(head -1 /tmp/sink.out)
    curl -s -XPOST localhost:$port/_control -d '{"status":503,"count":2,"headers":{"Retry-After":"1"}}'
    ...   # point hookd at http://127.0.0.1:$port/events
    curl -s localhost:$port/_ledger
"""
import argparse
import base64
import io
import json
import select
import signal
import socket
import struct
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, urlsplit

REASONS = {200: "OK", 201: "Created", 202: "Accepted", 204: "No Content", 301: "Moved Permanently",
           302: "Found", 307: "Temporary Redirect", 308: "Permanent Redirect", 400: "Bad Request",
           401: "Unauthorized", 403: "Forbidden", 404: "Not Found", 408: "Request Timeout", 409: "Conflict",
           410: "Gone", 413: "Content Too Large", 429: "Too Many Requests", 500: "Internal Server Error",
           502: "Bad Gateway", 503: "Service Unavailable", 504: "Gateway Timeout"}
ACTIONS = ("answer", "stall", "close", "reset")


class BadRule(ValueError):
    pass


def parse_rule(obj):
    """A control object as a rule, checked; raises BadRule with the reason."""
    if not isinstance(obj, dict):
        raise BadRule("a rule is a JSON object")
    known = {"status", "count", "headers", "body", "action", "delayMs", "reset", "clearLedger"}
    extra = set(obj) - known
    if extra:
        raise BadRule("unknown keys: " + ", ".join(sorted(extra)))
    rule = {"action": obj.get("action", "answer"), "count": obj.get("count"), "status": obj.get("status"),
            "headers": obj.get("headers") or {}, "body": obj.get("body", ""), "delayMs": obj.get("delayMs", 0)}
    if rule["action"] not in ACTIONS:
        raise BadRule("action: one of " + ", ".join(ACTIONS))
    if rule["count"] is not None and (not isinstance(rule["count"], int) or rule["count"] < 1):
        raise BadRule("count: a positive integer or null")
    if rule["status"] is not None and (not isinstance(rule["status"], int) or not 100 <= rule["status"] <= 999):
        raise BadRule("status: an integer from 100 to 999")
    if not isinstance(rule["headers"], dict) or not all(
            isinstance(k, str) and isinstance(v, str) and "\n" not in k + v and "\r" not in k + v
            for k, v in rule["headers"].items()):
        raise BadRule("headers: an object of strings without CR or LF")
    if not isinstance(rule["body"], str):
        raise BadRule("body: a string")
    if not isinstance(rule["delayMs"], (int, float)) or not 0 <= rule["delayMs"] <= 600000:
        raise BadRule("delayMs: 0 to 600000")
    return rule


class Sink:
    """The records and the rules, shared by every connection's thread."""

    def __init__(self, ledger_path, default_status):
        self.lock = threading.Lock()
        self.records = []
        self.rules = []
        self.seq = 0
        self.default_status = default_status
        self.ledger_path = ledger_path
        self.ledger = open(ledger_path, "a", encoding="utf-8") if ledger_path else None
        self.stopping = threading.Event()

    def take_rule(self):
        with self.lock:
            if not self.rules:
                return {"action": "answer", "status": None, "headers": {}, "body": "", "delayMs": 0, "count": None}
            rule = self.rules[0]
            if rule["count"] is not None:
                rule["count"] -= 1
                if rule["count"] == 0:
                    self.rules.pop(0)
            return dict(rule)

    def record(self, method, path, headers, body, answer):
        with self.lock:
            self.seq += 1
            rec = {"seq": self.seq, "time": time.time(), "method": method, "path": path,
                   "headers": [[k, v] for k, v in headers], "body": base64.b64encode(body).decode("ascii"),
                   "answer": answer}
            self.records.append(rec)
            if self.ledger:
                self.ledger.write(json.dumps(rec, separators=(",", ":")) + "\n")
                self.ledger.flush()
            return rec

    def control(self, objs):
        rules = []
        reset = clear = False
        for obj in objs:
            if isinstance(obj, dict) and (obj.get("reset") or obj.get("clearLedger")):
                reset = reset or bool(obj.get("reset"))
                clear = clear or bool(obj.get("clearLedger"))
                if not set(obj) - {"reset", "clearLedger"}:
                    continue
            rules.append(parse_rule(obj))
        with self.lock:
            if reset:
                self.rules.clear()
            if clear:
                self.records.clear()
                if self.ledger:
                    self.ledger.truncate(0)
                    self.ledger.seek(0)
            self.rules.extend(rules)
            return [dict(r) for r in self.rules]


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server_version = "hookd-test-sink"
    sys_version = ""

    def log_message(self, fmt, *args):   # quiet: the ledger is the log
        pass

    def read_body(self):
        """The request body (Content-Length or chunked), or None after a 413/400."""
        limit = self.server.max_body
        te = self.headers.get("Transfer-Encoding", "")
        if te.lower() == "chunked":
            out = bytearray()
            while True:
                line = self.rfile.readline(1024)
                try:
                    size = int(line.split(b";")[0].strip(), 16)
                except ValueError:
                    self.plain(400, "bad chunk size")
                    return None
                if size == 0:
                    while self.rfile.readline(8192) not in (b"\r\n", b"\n", b""):
                        pass   # trailers
                    return bytes(out)
                if len(out) + size > limit:
                    self.plain(413, "body too large")
                    return None
                out += self.rfile.read(size)
                self.rfile.readline(8)
        try:
            n = int(self.headers.get("Content-Length", "0"))
        except ValueError:
            self.plain(400, "bad Content-Length")
            return None
        if n < 0:
            self.plain(400, "bad Content-Length")
            return None
        if n > limit:
            self.plain(413, "body too large")
            return None
        return self.rfile.read(n) if n else b""

    def plain(self, status, text, headers=None, ctype="text/plain; charset=utf-8"):
        data = text.encode("utf-8")
        self.send_response_only(status, REASONS.get(status, "Status"))
        self.send_header("Date", self.date_time_string())
        for k, v in (headers or {}).items():
            self.send_header(k, v)
        if status in (204, 304):
            data = b""
        if data:
            self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        if data:
            self.wfile.write(data)
        self.wfile.flush()

    def json_answer(self, status, obj):
        self.plain(status, json.dumps(obj), ctype="application/json")

    # -- the sink's own endpoints --------------------------------------------

    def own(self, method):
        url = urlsplit(self.path)
        sink = self.server.sink
        if url.path == "/_control" and method == "POST":
            body = self.read_body()
            if body is None:
                return True
            try:
                obj = json.loads(body or b"null")
                rules = sink.control(obj if isinstance(obj, list) else [obj])
            except (ValueError, BadRule) as e:
                self.json_answer(400, {"error": str(e)})
                return True
            self.json_answer(200, {"ok": True, "rules": rules})
            return True
        if url.path == "/_ledger" and method == "GET":
            since = parse_qs(url.query).get("since", ["0"])[0]
            try:
                since = int(since)
            except ValueError:
                self.json_answer(400, {"error": "since: an integer"})
                return True
            with sink.lock:
                recs = [r for r in sink.records if r["seq"] > since]
            self.json_answer(200, recs)
            return True
        if url.path == "/_rules" and method == "GET":
            with sink.lock:
                self.json_answer(200, [dict(r) for r in sink.rules])
            return True
        if url.path == "/_health" and method == "GET":
            self.plain(200, "ok")
            return True
        return False   # other /_ paths get a 404 from handle_any

    # -- everything else is recorded ----------------------------------------

    def handle_any(self, method):
        if self.own(method):
            return
        if urlsplit(self.path).path.startswith("/_"):
            self.plain(404, "no such sink endpoint")
            return
        body = self.read_body()
        if body is None:
            return
        sink = self.server.sink
        rule = sink.take_rule()
        action = rule["action"]
        status = rule["status"] or sink.default_status
        answer = {"action": action} if action != "answer" else {"status": status}
        if rule["delayMs"]:
            answer["delayMs"] = rule["delayMs"]
        sink.record(method, self.path, self.headers.items(), body, answer)
        if action == "stall":
            self.stall()
            return
        if action in ("close", "reset"):
            self.close_connection = True
            if action == "reset":
                # Linger 0 and a close of every reference to the socket (the
                # server's own close would shut down, sending a FIN first).
                self.connection.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
                self.rfile.close()
                self.wfile.close()
                self.connection.close()
                # What the base class still flushes and closes afterwards.
                self.rfile, self.wfile = io.BytesIO(), io.BytesIO()
            return
        if rule["delayMs"] and sink.stopping.wait(rule["delayMs"] / 1000.0):
            self.close_connection = True
            return
        self.plain(status, rule["body"], rule["headers"])

    def stall(self):
        """Hold the connection without answering until the peer leaves or the
        sink stops; what the peer sends meanwhile is read and dropped."""
        self.close_connection = True
        sock = self.connection
        while not self.server.sink.stopping.is_set():
            r, _, _ = select.select([sock], [], [], 0.2)
            if r:
                try:
                    if not sock.recv(65536):
                        return
                except OSError:
                    return

    def do_POST(self):
        self.handle_any("POST")

    def do_PUT(self):
        self.handle_any("PUT")

    def do_PATCH(self):
        self.handle_any("PATCH")

    def do_DELETE(self):
        self.handle_any("DELETE")

    def do_GET(self):
        self.handle_any("GET")


class Server(ThreadingHTTPServer):
    daemon_threads = True
    allow_reuse_address = True
    request_queue_size = 128


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--host", default="127.0.0.1")
    ap.add_argument("--port", type=int, default=0)
    ap.add_argument("--ledger", help="append every record to this file as a JSON line")
    ap.add_argument("--status", type=int, default=200, help="the answer when no rule says otherwise")
    ap.add_argument("--max-body", type=int, default=64 << 20, help="larger bodies get 413")
    args = ap.parse_args()

    srv = Server((args.host, args.port), Handler)
    srv.sink = Sink(args.ledger, args.status)
    srv.max_body = args.max_body

    def stop(signum, frame):
        srv.sink.stopping.set()
        threading.Thread(target=srv.shutdown, daemon=True).start()

    signal.signal(signal.SIGTERM, stop)
    signal.signal(signal.SIGINT, stop)
    print(srv.server_address[1], flush=True)
    try:
        srv.serve_forever(poll_interval=0.2)
    finally:
        srv.server_close()
        if srv.sink.ledger:
            srv.sink.ledger.close()


if __name__ == "__main__":
    main()
