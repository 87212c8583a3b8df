# SPDX-License-Identifier: MIT
"""Parsers for what the benchmark reads back: wrk's output (the JSON line
that bench/wrk/*.lua prints, and wrk's own text as a fallback), a server's
"started in" line, /proc files (smaps_rollup, status, stat, loadavg, /proc/stat)
and pgbench's report. Pure functions over strings, so each is unit-tested."""

import json
import re

WRK_MARKER = "HKBENCH_JSON "


class ParseError(ValueError):
    pass


def parse_wrk_json(text):
    """The figures of one wrk run from the HKBENCH_JSON line printed by the
    Lua done() callback. Raises ParseError when the line is missing or bad."""
    for line in reversed(text.splitlines()):
        if line.startswith(WRK_MARKER):
            try:
                raw = json.loads(line[len(WRK_MARKER):])
            except json.JSONDecodeError as e:
                raise ParseError(f"bad {WRK_MARKER.strip()} line: {e}") from None
            return _wrk_figures(raw)
    raise ParseError("no HKBENCH_JSON line in wrk's output")


def _wrk_figures(raw):
    lat = raw["latencyUs"]
    dur_s = raw["durationUs"] / 1e6
    errs = raw["errors"]
    classes = raw.get("statusClasses")

    def ms(v):
        return None if v is None else v / 1000.0

    out = {
        "durationS": dur_s,
        "requests": raw["requests"],
        "rps": raw["requests"] / dur_s if dur_s > 0 else 0.0,
        "bytes": raw["bytes"],
        "p50Ms": ms(lat["p50"]),
        "p75Ms": ms(lat["p75"]),
        "p90Ms": ms(lat["p90"]),
        "p99Ms": ms(lat["p99"]),
        "p999Ms": ms(lat["p999"]),
        "meanMs": ms(lat["mean"]),
        "maxMs": ms(lat["max"]),
        "socketErrors": {k: errs[k] for k in ("connect", "read", "write", "timeout")},
        "socketErrorsTotal": sum(errs[k] for k in ("connect", "read", "write", "timeout")),
    }
    if classes:
        out["statusClasses"] = classes
        out["non2xx"] = sum(v for k, v in classes.items() if k != "2xx")
    else:
        # Without a response() callback wrk only counts status >= 400.
        out["non2xx"] = errs["status"]
    if raw.get("perBucket") is not None:
        out["bucketMs"] = raw["bucketMs"]
        out["perBucket"] = raw["perBucket"]
    return out


_UNITS_MS = {"us": 1e-3, "ms": 1.0, "s": 1e3, "m": 60e3, "h": 3600e3}
_LAT_LINE = re.compile(r"^\s*(50|75|90|99(?:\.\d+)?)%\s+([\d.]+)(us|ms|s|m|h)\s*$")


def _dur_ms(value, unit):
    return float(value) * _UNITS_MS[unit]


def parse_wrk_text(text):
    """wrk's human-readable report (needs --latency for the percentiles):
    the fallback when a script's done() callback did not run."""
    out = {}
    m = re.search(r"(\d+) requests in ([\d.]+)(us|ms|s|m|h)", text)
    if not m:
        raise ParseError("no 'N requests in T' line in wrk's output")
    out["requests"] = int(m.group(1))
    out["durationS"] = _dur_ms(m.group(2), m.group(3)) / 1e3
    m = re.search(r"Requests/sec:\s+([\d.]+)", text)
    if not m:
        raise ParseError("no Requests/sec line in wrk's output")
    out["rps"] = float(m.group(1))
    for line in text.splitlines():
        lm = _LAT_LINE.match(line)
        if lm:
            key = {"50": "p50Ms", "75": "p75Ms", "90": "p90Ms", "99": "p99Ms"}.get(lm.group(1))
            if key:
                out[key] = _dur_ms(lm.group(2), lm.group(3))
    errs = {"connect": 0, "read": 0, "write": 0, "timeout": 0}
    m = re.search(r"Socket errors: connect (\d+), read (\d+), write (\d+), timeout (\d+)", text)
    if m:
        errs = dict(zip(("connect", "read", "write", "timeout"), map(int, m.groups())))
    out["socketErrors"] = errs
    out["socketErrorsTotal"] = sum(errs.values())
    m = re.search(r"Non-2xx or 3xx responses: (\d+)", text)
    out["non2xx"] = int(m.group(1)) if m else 0
    return out


_STARTED = re.compile(r"started in\s+([0-9]*\.?[0-9]+)\s*(ms|s)?\b", re.IGNORECASE)


def parse_started_line(line):
    """Milliseconds from a start-up line: hookd's "hookd 0.1.0 started in
    0.003874s. Listening on: ...", Quarkus's "... started in 0.174s.", or
    "started in 12ms". None when the line has no such figure."""
    if not line:
        return None
    m = _STARTED.search(line)
    if not m:
        return None
    v = float(m.group(1))
    return v if (m.group(2) or "s").lower() == "ms" else v * 1000.0


def parse_kb_fields(text):
    """'Name:   1234 kB' lines (smaps_rollup, status) -> {name: kB}. Fields of
    smaps_rollup that repeat are summed."""
    out = {}
    for line in text.splitlines():
        name, sep, rest = line.partition(":")
        if not sep:
            continue
        parts = rest.split()
        if len(parts) == 2 and parts[1] == "kB" and parts[0].isdigit():
            out[name.strip()] = out.get(name.strip(), 0) + int(parts[0])
    return out


def parse_smaps_rollup(text):
    """RSS, PSS and USS (private clean + private dirty) in kB."""
    f = parse_kb_fields(text)
    if "Rss" not in f:
        raise ParseError("no Rss line in smaps_rollup")
    return {
        "rssKb": f["Rss"],
        "pssKb": f.get("Pss", 0),
        "ussKb": f.get("Private_Clean", 0) + f.get("Private_Dirty", 0),
        "swapKb": f.get("Swap", 0),
    }


def parse_proc_stat(text):
    """/proc/PID/stat -> dict with utime, stime, cutime, cstime (clock ticks),
    ppid, num_threads, state. The command name may hold spaces and ')'."""
    close = text.rfind(")")
    if close < 0:
        raise ParseError("no ')' in /proc/PID/stat")
    fields = text[close + 2:].split()
    # fields[0] is field 3 (state) of proc(5).
    return {
        "state": fields[0],
        "ppid": int(fields[1]),
        "utime": int(fields[11]),
        "stime": int(fields[12]),
        "cutime": int(fields[13]),
        "cstime": int(fields[14]),
        "num_threads": int(fields[17]),
        "comm": text[text.find("(") + 1:close],
    }


def parse_cpu_times(text):
    """The aggregate 'cpu' line of /proc/stat -> (busy_ticks, total_ticks).
    iowait counts as idle; guest time is already inside user."""
    for line in text.splitlines():
        if line.startswith("cpu "):
            v = [int(x) for x in line.split()[1:]]
            v += [0] * (8 - len(v))
            idle = v[3] + v[4]
            total = sum(v[:8])
            return total - idle, total, v[7]
    raise ParseError("no aggregate cpu line in /proc/stat")


def parse_loadavg(text):
    p = text.split()
    return {"load1": float(p[0]), "load5": float(p[1]), "load15": float(p[2])}


def parse_pgbench(text):
    """pgbench's summary: tps (without initial connection time), average
    latency, transactions, failures, and per-script latency when -r is given."""
    out = {}
    m = re.search(r"tps = ([\d.]+) \(without initial connection time\)", text)
    if not m:
        raise ParseError("no tps line in pgbench's output")
    out["tps"] = float(m.group(1))
    m = re.search(r"latency average = ([\d.]+) ms", text)
    out["latencyAvgMs"] = float(m.group(1)) if m else None
    m = re.search(r"latency stddev = ([\d.]+) ms", text)
    out["latencyStddevMs"] = float(m.group(1)) if m else None
    m = re.search(r"number of transactions actually processed: (\d+)", text)
    out["transactions"] = int(m.group(1)) if m else None
    m = re.search(r"number of failed transactions: (\d+)", text)
    out["failed"] = int(m.group(1)) if m else 0
    scripts = []
    for sm in re.finditer(r"SQL script \d+: (\S+)\n - weight: (\d+).*?\n - (\d+) transactions.*?tps = ([\d.]+)\)", text, re.S):
        scripts.append({"script": sm.group(1), "weight": int(sm.group(2)),
                        "transactions": int(sm.group(3)), "tps": float(sm.group(4))})
    if scripts:
        out["scripts"] = scripts
    return out


def warmup_windows(per_bucket, bucket_ms, duration_s, early_s, late_from_s):
    """req/s in [0, early_s) and in [late_from_s, end) from per-bucket counts
    (bucket 0 starts when wrk set up its threads). The last bucket is partial
    and left out of the late window; None where the run is too short."""
    if not per_bucket or not bucket_ms:
        return None, None
    bs = bucket_ms / 1000.0
    full = int(duration_s / bs)  # buckets wholly inside the run
    n_early = int(round(early_s / bs))
    early = None
    if 0 < n_early <= full:
        early = sum(per_bucket[:n_early]) / (n_early * bs)
    first_late = int(round(late_from_s / bs))
    late = None
    if first_late < full:
        late = sum(per_bucket[first_late:full]) / ((full - first_late) * bs)
    return early, late


def parse_coldstart(text):
    """bench/coldstart prints one JSON object per run."""
    runs = []
    for line in text.splitlines():
        line = line.strip()
        if line.startswith("{"):
            runs.append(json.loads(line))
    if not runs:
        raise ParseError("coldstart printed no run")
    return runs
