# SPDX-License-Identifier: MIT
"""What forwarding and retention cost (docs/forwarding.md, issue 15's
Performance section), three figures per store, on fresh servers of the same
build:

- ingest with forwarding on vs off: POST /api/webhooks with the ingress
  profile's 2 KB envelope (bench/wrk/envelope2k.lua) at 100 connections for
  the mix's duration, once without a sink and once with HOOKD_FORWARD_URL
  pointing at a local nginx that answers 202 (the sink). After the forwarding
  run the server is left to drain (bounded), and then every row must be
  delivered: nothing pending or failed, and every id the store handed out in
  the sink's log;
- receive -> sink latency at half the forwarding-on maximum: the same POST
  paced by bench/wrk/paced.lua (wrk's delay() hook, since wrk2 is not in
  Debian) and timed by the sink, not by hookd: nginx logs its own clock
  ($msec) and the event's ce-time (hookd's receipt, RFC 3339 with
  microseconds) for every request, same machine and clock; latency = arrival -
  ce-time. hookd's hookd_forward_latency_seconds histogram (receipt -> the
  sink's 2xx) is read before the server stops, as a cross-check;
- the load mix (bench/wrk/mix.lua, paged) at 100 connections on a store
  preloaded with many rows, without retention and then with HOOKD_MAX_ROWS
  below the row count and HOOKD_PURGE_INTERVAL=1s, so that purges run through
  the whole window; hookd_retention_deleted_total, read every second, shows
  that rows were deleted during the window (a purge point without deletions
  fails).

The issue's targets: req/s with forwarding >= 0.7x without, receive -> sink
p99 <= 50 ms, mix p99 with purges <= 2x without.

The sink runs on the load CPUs (with wrk, and PostgreSQL on 2 cores): its CPU
per request is recorded as the sink's, and its ceiling is measured alone
first (wrk on the server CPUs, bench/wrk/sink.lua, as many connections as
hookd's forwarder opens), so a reader can see it was not the bottleneck."""

import calendar
import copy
import http.client
import json
import math
import os
import re
import shutil
import socket
import threading
import time

from . import graphql, ingress, jsonout, measure, parse, procs, system

LIMITS = {"rpsRatioMin": 0.7, "sinkP99MsMax": 50.0, "purgeP99RatioMax": 2.0}
RATE_FRACTION = 0.5               # the paced point's rate, of the forwarding-on maximum
ROWS = 200000                     # rows in the store under the purge points
SMOKE_ROWS = 2000
PURGE_INTERVAL = "1s"
SINK_CONNECTIONS = 64             # HOOKD_FORWARD_CONCURRENCY's default: what the forwarder opens
SINK_RESOLUTION_MS = 1.0          # nginx's $msec
PURGE_METRICS = ("hookd_retention_deleted_total", "hookd_retention_runs_total", "hookd_retention_errors_total")

SINK_CONF = """\
# Written by bench/hkbench/forward.py: the forwarding profile's sink. Every
# POST is answered 202 (return discards the request's body and keeps the
# connection) and logged with nginx's clock at that moment ($msec, ms) and
# the CloudEvent's ce-time and ce-id. The log is buffered and written out at
# exit (SIGTERM and SIGQUIT both flush it) or every second.
daemon off;
master_process off;
worker_processes 1;
pid {tmp}/nginx.pid;
error_log stderr warn;
events {{ worker_connections 4096; }}
http {{
    client_body_temp_path {tmp}/body;
    proxy_temp_path {tmp}/proxy;
    fastcgi_temp_path {tmp}/fastcgi;
    uwsgi_temp_path {tmp}/uwsgi;
    scgi_temp_path {tmp}/scgi;
    keepalive_requests 1000000000;
    keepalive_timeout 75s;
    log_format sink '$msec $http_ce_id $http_ce_time $status $connection';
    access_log off;
    server {{
        listen 127.0.0.1:{port} reuseport;
        location = /ready {{
            return 200;
        }}
        location / {{
            access_log {log} sink buffer=256k flush=1s;
            return 202;
        }}
    }}
}}
"""


# ---- the sink ---------------------------------------------------------------------

class Sink:
    """nginx as the forwarder's target, one process per point (a fresh log),
    pinned to `cpus`. start() returns once it answers; stop() writes out
    its log; read() parses it."""

    def __init__(self, work, name, cpus, binary="nginx"):
        self.dir = os.path.join(work, name)
        self.cpus = cpus
        self.binary = shutil.which(binary) or binary
        self.port = None
        self.proc = None
        self.log = os.path.join(self.dir, "sink.log")

    @property
    def url(self):
        return f"http://127.0.0.1:{self.port}/sink"

    def start(self):
        os.makedirs(self.dir, exist_ok=True)
        if os.path.exists(self.log):
            os.unlink(self.log)
        self.port = system.free_port()
        with open(os.path.join(self.dir, "nginx.conf"), "w") as f:
            f.write(SINK_CONF.format(tmp=self.dir, port=self.port, log=self.log))
        self.proc = procs.start([self.binary, "-p", self.dir, "-c", os.path.join(self.dir, "nginx.conf"),
                                 "-e", "stderr"], log=os.path.join(self.dir, "nginx.out"), cpus=self.cpus)
        procs.wait_ready(self.proc, self.port, "/ready", timeout=15)
        return self

    def pids(self):
        return [self.proc.pid] if self.proc and self.proc.poll() is None else []

    def stop(self):
        if self.proc is not None:
            procs.stop(self.proc)
            self.proc = None

    def read(self):
        return read_sink_log(self.log)


_ID_TAIL = re.compile(r"(\d+)$")


class _Epoch:
    """RFC 3339 UTC times ("2026-12-01T17:57:27.114685Z") to Unix seconds,
    the date and minute converted once per minute seen."""

    def __init__(self):
        self.cache = {}

    def __call__(self, s):
        if len(s) < 20 or s[-1] != "Z" or s[10] != "T":
            raise ValueError(s)
        head = s[:16]
        base = self.cache.get(head)
        if base is None:
            base = calendar.timegm(time.strptime(head, "%Y-%m-%dT%H:%M"))
            self.cache[head] = base
        return base + float(s[17:-1])


def read_sink_log(path):
    """The sink's log: {"requests", "statuses", "withoutCeTime",
    "unreadable", "ids" (the set of numeric ce-ids: a row id, after any
    prefix), "idLines" (lines with such an id), "latenciesMs" (sorted:
    arrival - ce-time)}. A line is "$msec $ce_id $ce_time $status
    $connection"; nginx writes "-" for an absent header."""
    out = {"requests": 0, "statuses": {}, "withoutCeTime": 0, "unreadable": 0, "ids": set(), "idLines": 0,
           "latenciesMs": []}
    epoch = _Epoch()
    lat = out["latenciesMs"]
    if not os.path.exists(path):
        return out
    with open(path, encoding="ascii", errors="replace") as f:
        for line in f:
            parts = line.split()
            if len(parts) < 4:
                out["unreadable"] += 1
                continue
            out["requests"] += 1
            out["statuses"][parts[3]] = out["statuses"].get(parts[3], 0) + 1
            m = _ID_TAIL.search(parts[1])
            if m:
                out["ids"].add(int(m.group(1)))
                out["idLines"] += 1
            if parts[2] == "-":
                out["withoutCeTime"] += 1
                continue
            try:
                lat.append((float(parts[0]) - epoch(parts[2])) * 1000.0)
            except ValueError:
                out["unreadable"] += 1
    lat.sort()
    return out


def percentile(sorted_xs, q):
    """Nearest rank: the smallest value with at least q% of the values at
    or below it; None for no values."""
    if not sorted_xs:
        return None
    k = max(0, min(len(sorted_xs) - 1, math.ceil(q / 100.0 * len(sorted_xs)) - 1))
    return sorted_xs[k]


def latency_summary(sorted_ms):
    """p50/p90/p99/p99.9/max/mean of receive -> sink latencies (ms)."""
    n = len(sorted_ms)
    return {"count": n, "p50Ms": percentile(sorted_ms, 50), "p90Ms": percentile(sorted_ms, 90),
            "p99Ms": percentile(sorted_ms, 99), "p999Ms": percentile(sorted_ms, 99.9),
            "maxMs": sorted_ms[-1] if n else None, "minMs": sorted_ms[0] if n else None,
            "meanMs": sum(sorted_ms) / n if n else None,
            "negative": sum(1 for x in sorted_ms if x < 0),
            "resolutionMs": SINK_RESOLUTION_MS}


def sink_summary(log, rows):
    """What the sink saw, against the `rows` ids the store handed out (1 ..
    rows on a fresh store): every id there at least once."""
    ids = log["ids"]
    seen = sum(1 for i in ids if 1 <= i <= rows) if rows else 0
    return {"requests": log["requests"], "statuses": log["statuses"], "distinctIds": len(ids),
            "duplicates": log["idLines"] - len(ids), "missingIds": max(0, rows - seen) if rows else None,
            "withoutCeTime": log["withoutCeTime"], "unreadable": log["unreadable"],
            "latency": latency_summary(log["latenciesMs"])}


# ---- hookd's metrics and API ---------------------------------------------------------

_SERIES = re.compile(r"^([a-zA-Z_:][a-zA-Z0-9_:]*(?:\{[^}]*\})?)\s+(\S+)")


def parse_metrics(text):
    """Prometheus text -> {'name{labels}': value} (comments skipped)."""
    out = {}
    for line in text.splitlines():
        if not line or line[0] == "#":
            continue
        m = _SERIES.match(line)
        if m:
            try:
                out[m.group(1)] = float(m.group(2))
            except ValueError:
                pass
    return out


def histogram(metrics, name):
    """A histogram's buckets [(le, cumulative count)] (+Inf last), count and
    sum; None when the server does not report it."""
    buckets = []
    pre = name + '_bucket{le="'
    for k, v in metrics.items():
        if k.startswith(pre):
            le = k[len(pre):-2]
            buckets.append((math.inf if le == "+Inf" else float(le), v))
    if not buckets or name + "_count" not in metrics:
        return None
    buckets.sort()
    return {"buckets": buckets, "count": metrics[name + "_count"], "sum": metrics.get(name + "_sum", 0.0)}


def histogram_quantile(h, q):
    """The q-quantile (0..1) of a histogram, interpolated inside its bucket
    as Prometheus's histogram_quantile does, and that bucket's upper bound
    (None for the +Inf bucket): (value, upper)."""
    if not h or h["count"] <= 0:
        return None, None
    rank = q * h["count"]
    lo, below = 0.0, 0.0
    for le, cum in h["buckets"]:
        if cum >= rank:
            if math.isinf(le):
                return lo, None
            inside = cum - below
            return (lo + (le - lo) * ((rank - below) / inside if inside else 1.0)), le
        lo, below = le, cum
    return lo, None


def latency_histogram(metrics, name="hookd_forward_latency_seconds"):
    """hookd's own receive -> sink's 2xx figures, in ms, from its histogram."""
    h = histogram(metrics, name)
    if h is None:
        return None
    p50, p50_le = histogram_quantile(h, 0.50)
    p99, p99_le = histogram_quantile(h, 0.99)
    within = next((cum for le, cum in h["buckets"] if le == LIMITS["sinkP99MsMax"] / 1000.0), None)
    ms = lambda v: None if v is None else v * 1000.0  # noqa: E731
    return {"count": h["count"], "meanMs": ms(h["sum"] / h["count"]) if h["count"] else None,
            "p50Ms": ms(p50), "p50BucketMs": ms(p50_le), "p99Ms": ms(p99), "p99BucketMs": ms(p99_le),
            "within50MsPct": 100.0 * within / h["count"] if within is not None and h["count"] else None,
            "buckets": [[("+Inf" if math.isinf(le) else le * 1000.0), cum] for le, cum in h["buckets"]],
            "note": "interpolated inside the bucket (histogram_quantile); *BucketMs: that bucket's upper bound"}


def _get(port, path, timeout=5.0):
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=timeout)
    try:
        c.request("GET", path)
        r = c.getresponse()
        return r.status, r.read().decode("utf-8", "replace")
    finally:
        c.close()


def scrape(port):
    status, body = _get(port, "/q/metrics")
    if status != 200:
        raise RuntimeError(f"GET /q/metrics answered {status}")
    return parse_metrics(body)


def rows_of(port, query):
    """The rows GET /api/webhooks?<query> answers with."""
    status, body = _get(port, "/api/webhooks?" + query, timeout=30.0)
    if status != 200:
        raise RuntimeError(f"GET /api/webhooks?{query} answered {status}: {body[:200]!r}")
    rows = json.loads(body)
    if not isinstance(rows, list):
        raise RuntimeError(f"GET /api/webhooks?{query} answered 200 but not with a list: {body[:200]!r}")
    return rows


def newest_id(port):
    """The newest row's id (0 on an empty store): on a fresh store, the
    number of rows stored (ids 1, 2, ...)."""
    rows = rows_of(port, "limit=1")
    return int(rows[0]["id"]) if rows else 0


def _counter(m, key):
    return m.get(key, 0.0)


def delivery_metrics(m):
    return {"delivered": _counter(m, 'hookd_forward_attempts_total{result="delivered"}'),
            "retries": _counter(m, 'hookd_forward_attempts_total{result="retry"}'),
            "failed": _counter(m, 'hookd_forward_attempts_total{result="failed"}'),
            "deadLetters": _counter(m, "hookd_forward_dead_letters_total"),
            "inflight": _counter(m, "hookd_forward_inflight"),
            "claimed": _counter(m, "hookd_forward_claimed_total"),
            "settleErrors": _counter(m, "hookd_forward_settle_errors_total")}


def drain(port, pid, timeout_s, poll_s=0.1):
    """After the load, with the server still up: the backlog at the end of
    the window, then wait (at most timeout_s) until nothing is pending or in
    flight; what is left then, the server's CPU meanwhile, and its metrics."""
    t0 = time.monotonic()
    cpu0 = system.proc_cpu_ticks(pid, children=False) or 0
    m = scrape(port)
    stored_at_end = newest_id(port)
    at_end = delivery_metrics(m)
    pending = rows_of(port, "delivery=pending&limit=1")
    while (pending or delivery_metrics(m)["inflight"]) and time.monotonic() - t0 < timeout_s:
        time.sleep(poll_s)
        pending = rows_of(port, "delivery=pending&limit=1")
        m = scrape(port)
    drain_s = time.monotonic() - t0
    cpu1 = system.proc_cpu_ticks(pid, children=False) or 0
    failed = rows_of(port, "delivery=failed&limit=1")
    d = delivery_metrics(m)
    return {"rowsStoredAtEnd": stored_at_end, "deliveredAtEnd": at_end["delivered"],
            "backlogAtEnd": max(0, stored_at_end - at_end["delivered"]), "drainS": drain_s,
            "drainTimeoutS": timeout_s, "drainServerCpuS": (cpu1 - cpu0) / system.CLK_TCK,
            "rowsStored": newest_id(port), "pendingLeft": bool(pending), "failedLeft": bool(failed),
            "metrics": d, "latencyHistogram": latency_histogram(m)}


# ---- preloading ------------------------------------------------------------------

def _post_bytes(body):
    return (b"POST /api/webhooks HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
            b"Content-Length: %d\r\n\r\n" % len(body)) + body


class _Responses:
    """Counts whole HTTP/1.1 responses (Content-Length bodies) on a socket."""

    def __init__(self, sock):
        self.sock = sock
        self.buf = b""

    def take(self, n, want=201):
        got = 0
        while got < n:
            i = self.buf.find(b"\r\n\r\n")
            if i >= 0:
                head = self.buf[:i].decode("latin-1")
                lines = head.split("\r\n")
                try:
                    status = int(lines[0].split(" ", 2)[1])
                except (IndexError, ValueError):
                    raise RuntimeError(f"preload: not an HTTP response: {lines[0][:100]!r}") from None
                length = None
                for h in lines[1:]:
                    k, _, v = h.partition(":")
                    if k.strip().lower() == "content-length":
                        length = int(v)
                    elif k.strip().lower() == "transfer-encoding":
                        raise RuntimeError("preload: a chunked answer (expected Content-Length)")
                if length is None:
                    raise RuntimeError("preload: an answer without Content-Length")
                if len(self.buf) >= i + 4 + length:
                    body = self.buf[i + 4:i + 4 + length]
                    self.buf = self.buf[i + 4 + length:]
                    if status != want:
                        raise RuntimeError(f"preload: POST /api/webhooks answered {status}: {body[:200]!r}")
                    got += 1
                    continue
            chunk = self.sock.recv(1 << 20)
            if not chunk:
                raise RuntimeError("preload: the server closed the connection")
            self.buf += chunk


def preload(port, rows, conns=8, depth=64, timeout=30.0):
    """POST `rows` envelopes (graphql.envelope: about 300 bytes, five
    sources in turn) on `conns` keep-alive connections, `depth` requests
    pipelined on each at a time; every answer must be 201. Returns the
    seconds it took."""
    t0 = time.monotonic()
    socks = [socket.create_connection(("127.0.0.1", port), timeout=timeout) for _ in range(conns)]
    try:
        readers = [_Responses(s) for s in socks]
        i = 0
        while i < rows:
            batch = []
            for s in socks:
                n = min(depth, rows - i)
                if n <= 0:
                    break
                s.sendall(b"".join(_post_bytes(json.dumps(graphql.envelope(i + k + 1), separators=(",", ":"))
                                               .encode()) for k in range(n)))
                batch.append(n)
                i += n
            for r, n in zip(readers, batch):
                r.take(n)
    finally:
        for s in socks:
            s.close()
    return time.monotonic() - t0


# ---- one point -----------------------------------------------------------------------

class Sampler:
    """Reads /q/metrics every `every` s in a thread (and once at start and
    once at stop): [{"t": seconds since start, name: value, ...}]."""

    def __init__(self, port, names, every=1.0):
        self.port, self.names, self.every = port, names, every
        self.samples = []
        self.errors = 0
        self.t0 = None
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _take(self):
        try:
            m = scrape(self.port)
        except (OSError, RuntimeError, http.client.HTTPException):
            self.errors += 1
            return
        s = {"t": time.monotonic() - self.t0}
        s.update({n: m.get(n) for n in self.names})
        self.samples.append(s)

    def _run(self):
        while not self._stop.wait(self.every):
            self._take()

    def start(self):
        self.t0 = time.monotonic()
        self._take()
        self._thread.start()
        return self

    def stop(self):
        if not self._stop.is_set():
            self._stop.set()
            self._thread.join(10)
            self._take()
        return self.samples


def run_point(cfg, t, script, conns, duration, db=None, args=(), env_extra=None, label="", prepare=None,
              post_ready=None, post_load=None, extra_pids=None, sample=None):
    """One wrk run on a freshly started server, as measure.load_point
    (the same figures), with what this profile needs around it:
    prepare(cmd, env, cwd) fills the store before the measured server starts
    (the preload, with a server of its own); the quiet check comes before
    that server starts, so that a purge due 1 s after its start falls inside
    the window instead of the idle probe; sample (metric names) reads
    /q/metrics every second through the window ("samples"); post_load(port,
    pid) runs after wrk while the server still serves ("afterLoad": the
    drain and what is left)."""
    port = system.free_port()
    tmp, cmd, env = measure._render(cfg, t, port, db)
    env.update({k: str(v) for k, v in (env_extra or {}).items()})
    if t.fresh_store:
        t.fresh_store(tmp, env, db)
    cwd = t.cwd or tmp
    if prepare:
        prepare(cmd, env, cwd)
    q = measure.quiet_check(cfg, f"{t.name} {label} c={conns}")
    log = os.path.join(cfg.work, f"{t.name}.server.log")
    server = procs.start(cmd, env=env, cwd=cwd, log=log, cpus=cfg.server_cpus)
    sampler = None
    try:
        procs.wait_ready(server, port, t.health, timeout=30)
        if post_ready:
            args = tuple(args) + tuple(post_ready(port) or ())
        rss_before = measure._proc_kb(server.pid, "VmRSS")
        wrk = ["wrk", "-t", str(min(cfg.wrk_threads, conns)), "-c", str(conns), "-d", f"{duration}s",
               "--timeout", cfg.wrk_timeout, "--latency", "-s", os.path.join(cfg.bench_dir, "wrk", script),
               f"http://127.0.0.1:{port}/"]
        if args:
            wrk += ["--"] + [str(a) for a in args]
        pids = lambda: dict({"server": [server.pid], "db": db.pids() if db else []},  # noqa: E731
                            **(extra_pids() if extra_pids else {}))
        if sample:
            sampler = Sampler(port, sample).start()
        meter = system.CpuMeter(pids).start()
        r = procs.run(wrk, timeout=duration + 60, cpus=cfg.load_cpus)
        m = meter.stop()
        samples = sampler.stop() if sampler else None
        after = post_load(port, server.pid) if post_load and r.returncode == 0 else None
        hwm = measure._proc_kb(server.pid, "VmHWM")
        rss_after = measure._proc_kb(server.pid, "VmRSS")
        alive = server.poll() is None
    except BaseException as e:
        if sampler:
            sampler.stop()
        gone = server.poll()
        procs.stop(server)
        if gone is not None and isinstance(e, Exception):  # not an interrupt
            raise RuntimeError(f"{t.name} exited (status {gone}) before or during the load; log {log}") from None
        raise
    code = procs.stop(server)
    if r.returncode != 0:
        raise RuntimeError(f"wrk exited {r.returncode}: {r.stderr.strip()[-300:]}; the server "
                           + ("was still running" if alive else f"had exited (status {code})"))
    try:
        p = parse.parse_wrk_json(r.stdout)
        p["parsedFrom"] = "lua"
    except parse.ParseError:
        p = parse.parse_wrk_text(r.stdout)
        p["parsedFrom"] = "text"
    measure.point_figures(cfg, t.name, label, p, m, conns, "mix", duration, db, extra_pids, q,
                          (rss_before, rss_after, hwm), alive, code, log)
    if samples is not None:
        p["samples"] = samples
    if after is not None:
        p["afterLoad"] = after
    return p


def check_point(p, what, want="201"):
    """A point counts only when every answer was the one expected (non2xx
    includes the scripts' 2xxOther) and wrk saw no socket error."""
    bad = []
    if p.get("non2xx"):
        bad.append(f"{p['non2xx']} answers other than {want} (status classes {p.get('statusClasses')})")
    if p.get("socketErrorsTotal"):
        bad.append(f"{p['socketErrorsTotal']} socket errors ({p.get('socketErrors')})")
    if p.get("requests", 0) <= 0:
        bad.append("no request completed")
    if bad:
        raise RuntimeError(f"{what}: " + "; ".join(bad))


# ---- the sink alone -------------------------------------------------------------------

def sink_cpus(cfg):
    """Where the sink runs: cfg.sink_cpus (--forward-sink-cpus), else the load CPUs."""
    return getattr(cfg, "sink_cpus", None) or cfg.load_cpus


def sink_ceiling(cfg, body_file, duration, conns=SINK_CONNECTIONS):
    """What the sink takes alone: bench/wrk/sink.lua (a forwarded
    CloudEvent with the same body) at the forwarder's connections, wrk on
    the server CPUs (hookd's place), the sink on its own. Every request must
    be answered 202 and be in the sink's log."""
    sink = Sink(cfg.work, "forward-sink-ceiling", sink_cpus(cfg))
    q = measure.quiet_check(cfg, "forward sink alone")
    sink.start()
    try:
        wrk = ["wrk", "-t", "1", "-c", str(conns), "-d", f"{duration}s", "--timeout", cfg.wrk_timeout, "--latency",
               "-s", os.path.join(cfg.bench_dir, "wrk", "sink.lua"), f"http://127.0.0.1:{sink.port}/", "--",
               body_file, str(cfg.bucket_ms)]
        meter = system.CpuMeter(lambda: {"sink": sink.pids()}).start()
        r = procs.run(wrk, timeout=duration + 60, cpus=cfg.server_cpus)
        m = meter.stop()
    finally:
        sink.stop()
    if r.returncode != 0:
        raise RuntimeError(f"wrk on the sink exited {r.returncode}: {r.stderr.strip()[-300:]}")
    p = parse.parse_wrk_json(r.stdout)
    check_point(p, "the sink alone (bench/wrk/sink.lua)", want="202")
    log = sink.read()
    if log["requests"] < p["requests"]:
        raise RuntimeError(f"the sink logged {log['requests']} requests of the {p['requests']} it answered")
    n = max(p["requests"], 1)
    out = {k: p.get(k) for k in ("durationS", "requests", "rps", "p50Ms", "p90Ms", "p99Ms", "maxMs", "non2xx",
                                 "socketErrorsTotal", "statusClasses")}
    out.update({"connections": conns, "loggedRequests": log["requests"],
                "sinkCpuUsPerRequest": m["procCpuS"].get("sink", 0.0) / n * 1e6,
                "foreignCpuPct": m["foreignCpuPct"], "wrkCpus": system.cpulist(cfg.server_cpus),
                "sinkCpus": system.cpulist(sink_cpus(cfg))})
    out.update(q)
    if m["foreignCpuPct"] > cfg.noise_pct * 2:
        out["noisy"] = True
    return out


def ensure_ceiling(cfg, sec, duration):
    """sec["sink"]["ceiling"], measured once per run (the first target
    that runs the profile): the figures with "status": "ok", or "failed"
    and the reason."""
    sink = sec.setdefault("sink", {})
    if "ceiling" not in sink:
        try:
            body_file = os.path.join(cfg.work, "forward-envelope-2k.json")
            with open(body_file, "wb") as f:
                f.write(ingress.envelope_body())
            c = sink_ceiling(cfg, body_file, min(duration, 10))
            c["status"] = "ok"
        except Exception as e:  # noqa: BLE001 - recorded, the run goes on
            c = {"status": "failed", "reason": f"{type(e).__name__}: {e}"[:1000]}
        sink["ceiling"] = c
    return sink["ceiling"]


# ---- the profile on one target ------------------------------------------------------------

def _post_envelope(port, body):
    return ingress.post(port, "/api/webhooks", body, {"Content-Type": "application/json"})


def forward_target(t, suffix):
    """The target under the profile's own name (a scratch dir of its own)."""
    f = copy.copy(t)
    f.env = dict(t.env)
    f.name = f"{t.name}-forward-{suffix}"
    return f


def _wait_delivered(port, rows, timeout=10.0):
    """Until `rows` rows are delivered (the probe before a load), or raise
    with what the last attempt says."""
    deadline = time.monotonic() + timeout
    while True:
        d = delivery_metrics(scrape(port))
        if d["delivered"] >= rows:
            return
        if time.monotonic() > deadline:
            last = rows_of(port, "limit=1")
            state = (last[0].get("delivery") if last else None) or {}
            raise RuntimeError(f"the probe row was not delivered to the sink within {timeout:.0f} s "
                               f"(attempts {d}, its delivery state {state})")
        time.sleep(0.05)


def _delivery_check(after, sink):
    """Every row delivered: nothing pending or failed after the drain, and
    every id the store handed out in the sink's log."""
    problems = []
    if after["pendingLeft"]:
        problems.append(f"rows still pending {after['drainS']:.1f} s after the load")
    if after["failedLeft"]:
        problems.append("rows failed (dead-lettered)")
    if sink["missingIds"]:
        problems.append(f"{sink['missingIds']} of {after['rowsStored']} row ids never reached the sink")
    return {"allDelivered": not problems, "problems": problems, "rowsStored": after["rowsStored"],
            "sinkDistinctIds": sink["distinctIds"], "duplicates": sink["duplicates"],
            "missingIds": sink["missingIds"], "drainS": after["drainS"], "backlogAtEnd": after["backlogAtEnd"]}


def forward_point(cfg, t, db, script, conns, duration, args, label, drain_s):
    """One forwarding-on point: a fresh sink, the server sending to it,
    a probe row delivered before the load, the drain after it, then the
    sink's log against the store."""
    sink = Sink(cfg.work, f"{t.name}-sink", sink_cpus(cfg)).start()
    try:
        body = ingress.envelope_body()

        def ready(port):
            ingress.expect_created("POST /api/webhooks (2 KB envelope)", *_post_envelope(port, body))
            _wait_delivered(port, 1)
            return ()

        p = run_point(cfg, t, script, conns, duration, db=db, args=args, label=label,
                      env_extra={"HOOKD_FORWARD_URL": sink.url}, post_ready=ready,
                      post_load=lambda port, pid: drain(port, pid, drain_s),
                      extra_pids=lambda: {"sink": sink.pids()})
    finally:
        sink.stop()
    p["path"] = "/api/webhooks"
    after = p["afterLoad"]
    s = sink_summary(sink.read(), after["rowsStored"])
    p["sink"] = s
    p["delivery"] = _delivery_check(after, s)
    n = max(p["requests"], 1)
    # What forwarding costs per request, the rows sent after the window included.
    p["serverCpuUsPerRequestWithDrain"] = (p["serverCpuS"] + after["drainServerCpuS"]) / n * 1e6
    p["forwardRps"] = after["deliveredAtEnd"] / p["durationS"] if p["durationS"] else None
    return p


def purge_point(cfg, t, db, conns, duration, rows, keep):
    """The paged mix on a store preloaded with `rows` envelopes (by a server
    of its own, without retention), with HOOKD_MAX_ROWS=keep (None: retention
    off). The retention counters are read every second."""
    state = {}

    def prepare(cmd, env, cwd):
        port = system.free_port()
        penv = {k: v for k, v in env.items() if k not in ("HOOKD_MAX_ROWS", "HOOKD_PURGE_INTERVAL")}
        penv[t.port_env or "PORT"] = str(port)
        p = procs.start(cmd, env=penv, cwd=cwd, log=os.path.join(cfg.work, f"{t.name}.preload.log"),
                        cpus=cfg.server_cpus)
        try:
            procs.wait_ready(p, port, t.health, timeout=30)
            state["preloadS"] = preload(port, rows)
            state["rowsBefore"] = newest_id(port)
        finally:
            procs.stop(p)
        procs.wait_port_free(port)
        if state["rowsBefore"] != rows:
            raise RuntimeError(f"preloaded {rows} rows but the newest id is {state['rowsBefore']}")

    env = {"HOOKD_MAX_ROWS": keep, "HOOKD_PURGE_INTERVAL": PURGE_INTERVAL} if keep is not None else {}
    label = f"forward/mix with {'purges' if keep is not None else 'no retention'}, {rows} rows"
    p = run_point(cfg, t, "mix.lua", conns, duration, db=db, args=("paged", cfg.bucket_ms), env_extra=env,
                  label=label, prepare=prepare, sample=list(PURGE_METRICS),
                  post_load=lambda port, pid: {"newestIdAtEnd": newest_id(port)})
    p.update({"rowsPreloaded": rows, "preloadS": state.get("preloadS"), "maxRows": keep})
    p["retention"] = retention_window(p.get("samples") or [])
    return p


def retention_window(samples):
    """From the samples: rows deleted during the window (first sample, just
    before wrk, to the last, just after), and in how many of its 1 s
    intervals something was deleted."""
    name = "hookd_retention_deleted_total"
    vals = [(s["t"], s.get(name)) for s in samples if jsonout.is_number(s.get(name))]
    runs = [s.get("hookd_retention_runs_total") for s in samples
            if jsonout.is_number(s.get("hookd_retention_runs_total"))]
    if len(vals) < 2:
        return {"deletedInWindow": None, "intervals": 0, "intervalsWithDeletes": 0, "deletedBefore": None,
                "runsInWindow": None, "perInterval": []}
    steps = [b[1] - a[1] for a, b in zip(vals, vals[1:])]
    return {"deletedBefore": vals[0][1], "deletedInWindow": vals[-1][1] - vals[0][1], "intervals": len(steps),
            "intervalsWithDeletes": sum(1 for d in steps if d > 0), "perInterval": steps,
            "runsInWindow": runs[-1] - runs[0] if len(runs) >= 2 else None}


def _num(v):
    return v if jsonout.is_number(v) else None


def summarize(off, on, paced, purge_off, purge_on, limits=LIMITS):
    """The three figures and their verdicts (None: not measured), and the
    delivery check of both forwarding points."""
    r_off, r_on = _num((off or {}).get("rps")), _num((on or {}).get("rps"))
    ratio = r_on / r_off if r_off and r_on is not None else None
    c_off, c_on = _num((off or {}).get("serverCpuUsPerRequest")), _num((on or {}).get("serverCpuUsPerRequest"))
    sink_p99 = _num((((paced or {}).get("sink") or {}).get("latency") or {}).get("p99Ms"))
    p_off, p_on = _num((purge_off or {}).get("p99Ms")), _num((purge_on or {}).get("p99Ms"))
    purge_ratio = p_on / p_off if p_off and p_on is not None else None
    checks = [((x or {}).get("delivery") or {}).get("allDelivered") for x in (on, paced)]
    delivered = None if None in checks else all(checks)
    met = {
        "rpsRatio": None if ratio is None else ratio >= limits["rpsRatioMin"],
        "sinkP99Ms": None if sink_p99 is None else sink_p99 <= limits["sinkP99MsMax"],
        "purgeP99Ratio": None if purge_ratio is None else purge_ratio <= limits["purgeP99RatioMax"],
        "allDelivered": delivered,
    }
    met["all"] = None if None in met.values() else all(met.values())
    # Ids the sink never saw; a point left with a pending or failed row
    # counts at least one even when its ids all arrived (a lost settle).
    undelivered = None
    if delivered is not None:
        undelivered = sum(max((x["delivery"].get("missingIds") or 0),
                              1 if not x["delivery"]["allDelivered"] else 0) for x in (on, paced))
    out = {"rpsRatio": ratio, "cpuUsDelta": c_on - c_off if c_on is not None and c_off is not None else None,
           "sinkP99Ms": sink_p99, "sinkP50Ms": _num((((paced or {}).get("sink") or {}).get("latency") or {})
                                                     .get("p50Ms")),
           "sinkMaxMs": _num((((paced or {}).get("sink") or {}).get("latency") or {}).get("maxMs")),
           "hookdP99Ms": _num((((paced or {}).get("afterLoad") or {}).get("latencyHistogram") or {}).get("p99Ms")),
           "purgeP99Ratio": purge_ratio, "purgeP99Ms": p_on, "noPurgeP99Ms": p_off,
           "undelivered": undelivered, "limits": dict(limits), "targetsMet": met}
    d_off, d_on = _num((off or {}).get("dbCpuUsPerRequest")), _num((on or {}).get("dbCpuUsPerRequest"))
    if d_off is not None and d_on is not None:
        out["dbCpuUsDelta"] = d_on - d_off
    return out


def measure_target(cfg, t, db, conns, duration, rows=ROWS, keep=None, drain_s=None):
    """The profile on target `t`: {"status": "ok", "ingest": {"off", "on"},
    "latency": POINT, "purge": {"off", "on"}, the summary}, or {"status":
    "failed", "reason", and what was measured before the failure}."""
    keep = rows // 2 if keep is None else keep
    drain_s = drain_s if drain_s is not None else max(10.0, float(duration))
    out = {"status": "ok", "variant": t.variant, "store": t.store, "connections": conns, "durationS": duration,
           "rows": rows, "maxRows": keep}
    off = on = paced = purge_off = purge_on = None
    try:
        body_file = os.path.join(cfg.work, "forward-envelope-2k.json")
        with open(body_file, "wb") as f:
            f.write(ingress.envelope_body())
        body = ingress.envelope_body()

        def ready(port):
            ingress.expect_created("POST /api/webhooks (2 KB envelope)", *_post_envelope(port, body))
            return ()

        out["ingest"] = {}
        off = run_point(cfg, forward_target(t, "off"), "envelope2k.lua", conns, duration, db=db,
                        args=(body_file, cfg.bucket_ms), label="forward/ingest, no sink", post_ready=ready)
        off["path"] = "/api/webhooks"
        out["ingest"]["off"] = off
        check_point(off, "POST /api/webhooks without forwarding")
        on = forward_point(cfg, forward_target(t, "on"), db, "envelope2k.lua", conns, duration,
                           (body_file, cfg.bucket_ms), "forward/ingest, forwarding on", drain_s)
        out["ingest"]["on"] = on
        check_point(on, "POST /api/webhooks with forwarding on")

        rate = max(1, int(round(on["rps"] * RATE_FRACTION)))
        out["rateTarget"] = rate
        paced = forward_point(cfg, forward_target(t, "paced"), db, "paced.lua", conns, duration,
                              (body_file, rate, cfg.wrk_threads, cfg.bucket_ms),
                              f"forward/paced {rate} req/s", drain_s)
        paced["rateTarget"] = rate
        paced["rateAchieved"] = paced["rps"] / rate
        out["latency"] = paced
        check_point(paced, f"POST /api/webhooks at {rate} req/s")
        if not paced["sink"]["latency"]["count"]:
            raise RuntimeError("the sink logged no ce-time during the paced point")

        out["purge"] = {}
        purge_off = purge_point(cfg, forward_target(t, "purge-off"), db, conns, duration, rows, None)
        out["purge"]["off"] = purge_off
        check_point(purge_off, "the mix without retention", want="2xx")
        purge_on = purge_point(cfg, forward_target(t, "purge-on"), db, conns, duration, rows, keep)
        out["purge"]["on"] = purge_on
        check_point(purge_on, f"the mix with HOOKD_MAX_ROWS={keep}", want="2xx")
        if not purge_on["retention"]["deletedInWindow"]:
            raise RuntimeError(f"no row was deleted during the window with HOOKD_MAX_ROWS={keep} on {rows} rows "
                               f"(samples {purge_on.get('samples', [])[:3]}): the purge point measured nothing")
    except Exception as e:  # noqa: BLE001 - recorded, the run goes on
        out["status"] = "failed"
        out["reason"] = f"{type(e).__name__}: {e}"[:1000]
        return out
    out.update(summarize(off, on, paced, purge_off, purge_on))
    return out


def wanted(t, variants):
    """Is target `t` one the profile runs on (a hookd serving the API, of
    the given variants: a comma list, or 'all')?"""
    return t.kind == "hookd" and t.api and (variants == "all" or t.variant in variants.split(","))


def section(conns, duration, variants, rows, cpus):
    """doc["forward"] before any target ran."""
    return {"status": "ok", "path": "/api/webhooks", "bodyBytes": ingress.BODY_BYTES, "connections": conns,
            "durationS": duration, "variants": variants, "rows": rows, "rateFraction": RATE_FRACTION,
            "purgeInterval": PURGE_INTERVAL, "limits": dict(LIMITS), "targets": {},
            "sink": {"kind": "nginx", "version": system.first_line(system.run_out(["nginx", "-v"]) or ""),
                     "cpus": system.cpulist(cpus), "answer": 202, "clock": "$msec (ms) at the sink",
                     "config": "return 202 (body discarded, keep-alive), log_format '$msec $http_ce_id "
                               "$http_ce_time $status $connection' buffer=256k flush=1s"},
            "note": "POST /api/webhooks with a 2 KB envelope (bench/wrk/envelope2k.lua) without and with "
                    "HOOKD_FORWARD_URL at an nginx sink, each row then checked delivered; the same POST at "
                    f"{RATE_FRACTION}x the forwarding maximum (bench/wrk/paced.lua), receive -> sink from the "
                    "sink's clock and ce-time; the paged mix on a preloaded store without and with "
                    f"HOOKD_MAX_ROWS (half the rows), HOOKD_PURGE_INTERVAL={PURGE_INTERVAL}"}


def skipped(reason):
    return {"status": "skipped", "reason": reason}


def overall(sec):
    """The section's targetsMet: every store's (None: none measured)."""
    met = {"rpsRatio": [], "sinkP99Ms": [], "purgeP99Ratio": [], "allDelivered": []}
    for r in (sec.get("targets") or {}).values():
        if isinstance(r, dict) and r.get("status") == "ok":
            for k in met:
                if (r.get("targetsMet") or {}).get(k) is not None:
                    met[k].append(r["targetsMet"][k])
    out = {k: (all(v) if v else None) for k, v in met.items()}
    out["all"] = None if None in out.values() else all(out.values())
    return out


def finish(sec):
    """After the targets: a profile that ran on nothing says why; else its
    targetsMet."""
    if sec.get("status") != "ok":
        return sec
    if not sec.get("targets"):
        return skipped(f"no hookd target of the variants {sec.get('variants')!r} ran")
    sec["targetsMet"] = overall(sec)
    return sec


POINT_KEYS = dict(jsonout.MIX_POINT_KEYS, statusClasses="dict")
FORWARD_POINT_KEYS = dict(POINT_KEYS, **{
    "sinkCpuUsPerRequest": "num",
    "serverCpuUsPerRequestWithDrain": "num",
    "afterLoad.drainS": "num",
    "afterLoad.rowsStored": "num",
    "afterLoad.pendingLeft": "bool",
    "afterLoad.failedLeft": "bool",
    "afterLoad.latencyHistogram.count": "num",
    "sink.requests": "num",
    "sink.distinctIds": "num",
    "sink.missingIds": "num",
    "sink.latency.count": "num",
    "sink.latency.p50Ms": "num",
    "sink.latency.p99Ms": "num",
    "sink.latency.maxMs": "num",
    "delivery.allDelivered": "bool",
})
PURGE_POINT_KEYS = dict(POINT_KEYS, **{"rowsPreloaded": "num", "retention.intervals": "num", "samples": "list"})
PURGING_POINT_KEYS = dict(PURGE_POINT_KEYS, **{"maxRows": "num", "retention.deletedInWindow": "num",
                                               "retention.intervalsWithDeletes": "num"})
TARGET_KEYS = {
    "store": "str",
    "connections": "num",
    "rows": "num",
    "maxRows": "num",
    "rateTarget": "num",
    "rpsRatio": "num",
    "cpuUsDelta": "num",
    "sinkP99Ms": "num",
    "purgeP99Ratio": "num",
    "undelivered": "num",
    "latency.rateAchieved": "num",
    "targetsMet.rpsRatio": "bool",
    "targetsMet.sinkP99Ms": "bool",
    "targetsMet.purgeP99Ratio": "bool",
    "targetsMet.allDelivered": "bool",
    "targetsMet.all": "bool",
}


def check_complete(doc):
    """Problems with doc["forward"], as strings ([] when complete): it may
    be skipped with a reason; a failed target, a missing figure, a point
    with an unexpected answer or a purge point without deletions is a
    problem."""
    sec = doc.get("forward")
    if not isinstance(sec, dict):
        return ["forward: missing"]
    if sec.get("status") == "skipped":
        return [] if isinstance(sec.get("reason"), str) else ["forward: skipped without a reason"]
    if sec.get("status") != "ok":
        return [f"forward: {sec.get('status')}: {str(sec.get('reason'))[:200]}"]
    problems = []
    ceiling = (sec.get("sink") or {}).get("ceiling")
    if not isinstance(ceiling, dict) or ceiling.get("status") != "ok":
        c = ceiling if isinstance(ceiling, dict) else {}
        problems.append(f"forward.sink.ceiling: {c.get('status')}: {str(c.get('reason'))[:200]}")
    else:
        jsonout._check(ceiling, {"rps": "num", "p99Ms": "num", "connections": "num", "loggedRequests": "num"},
                       "forward.sink.ceiling.", problems)
    if not isinstance(sec.get("targets"), dict) or not sec["targets"]:
        problems.append("forward.targets: none")
    for name, r in (sec.get("targets") or {}).items():
        where = f"forward.targets.{name}."
        if not isinstance(r, dict) or r.get("status") != "ok":
            r = r if isinstance(r, dict) else {}
            problems.append(f"forward.targets.{name}: {r.get('status')}: {str(r.get('reason'))[:200]}")
            continue
        jsonout._check(r, TARGET_KEYS, where, problems)
        points = [("ingest.off", POINT_KEYS), ("ingest.on", FORWARD_POINT_KEYS), ("latency", FORWARD_POINT_KEYS),
                  ("purge.off", PURGE_POINT_KEYS), ("purge.on", PURGING_POINT_KEYS)]
        for path, keys in points:
            try:
                p = jsonout.get_path(r, path)
            except KeyError:
                p = None
            if not isinstance(p, dict):
                problems.append(f"{where}{path}: missing")
                continue
            jsonout._check(p, keys, f"{where}{path}.", problems)
            if jsonout.is_number(p.get("non2xx")) and p["non2xx"] != 0:
                problems.append(f"{where}{path}.non2xx: {p['non2xx']}, expected 0")
        dw = (((r.get("purge") or {}).get("on") or {}).get("retention") or {}).get("deletedInWindow")
        if jsonout.is_number(dw) and dw <= 0:
            problems.append(f"{where}purge.on.retention.deletedInWindow: {dw}, expected rows deleted")
    if "targetsMet" not in sec:
        problems.append("forward.targetsMet: missing")
    return problems
