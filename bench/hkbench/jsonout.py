# SPDX-License-Identifier: MIT
"""The metrics JSON: normalising values (rounded floats, no NaN), writing
atomically, and checking that a result is complete. The completeness rules
are used by the smoke test and by the harness itself before it writes."""

import json
import math
import os
import tempfile


def clean(v, digits=3):
    """A copy that json.dumps can write and a reader can trust: floats
    rounded to `digits` places, NaN/inf as None, tuples as lists, keys as str."""
    if isinstance(v, bool) or v is None or isinstance(v, (int, str)):
        return v
    if isinstance(v, float):
        if math.isnan(v) or math.isinf(v):
            return None
        r = round(v, digits)
        return int(r) if r == int(r) and abs(r) < 1e15 and digits == 0 else r
    if isinstance(v, dict):
        return {str(k): clean(x, digits) for k, x in v.items()}
    if isinstance(v, (list, tuple)):
        return [clean(x, digits) for x in v]
    return str(v)


def dumps(doc):
    return json.dumps(clean(doc), indent=2, sort_keys=False, ensure_ascii=False) + "\n"


def write_json(path, doc):
    """Write `doc` to `path` atomically (a temp file in the same directory,
    then rename), so a reader never sees half a file."""
    d = os.path.dirname(os.path.abspath(path))
    os.makedirs(d, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=".tmp-", suffix=".json", dir=d)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(dumps(doc))
        os.replace(tmp, path)
    except BaseException:
        os.unlink(tmp)
        raise


def get_path(doc, dotted):
    """doc['a']['b'] for 'a.b'; raises KeyError naming the missing part."""
    cur = doc
    for part in dotted.split("."):
        if not isinstance(cur, dict) or part not in cur:
            raise KeyError(dotted)
        cur = cur[part]
    return cur


def is_number(v):
    return isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v)


# What every result holds, whatever ran. "num": a number; "num?": a number
# or null (a figure that may be absent for a stated reason); "str", "bool",
# "dict", "list" as named.
TOP_KEYS = {
    "schema": "str",
    "date": "str",
    "methodology": "str",
    "quick": "bool",
    "noisy": "bool",
    "machine.cpu": "str",
    "machine.cores": "num",
    "machine.memoryGb": "num",
    "machine.kernel": "str",
    "machine.os": "str",
    "machine.compiler": "str",
    "machine.libraries": "dict",
    "machine.pageCacheDrop.worked": "bool",
    "benchmarkConfig.durationS": "num",
    "benchmarkConfig.connections": "list",
    "benchmarkConfig.serverCpus": "str",
    "benchmarkConfig.loadCpus": "str",
    "benchmarkConfig.dbCpus": "str",
    "benchmarkConfig.maxLoad1": "num",
    "loadBefore.load1": "num",
    "targets": "dict",
    "ceilings": "dict",
    "sweep": "dict",
    "skipped": "list",
}

# Every hookd target that ran (not skipped) holds these.
HOOKD_KEYS = {
    "kind": "str",
    "variant": "str",
    "store": "str",
    "binary.sizeBytes": "num",
    "binary.sizeMb": "num",
    "binary.sharedObjects": "num",
    "startup.coldStartMs": "num",
    "startup.appColdStartMs": "num",
    "startup.warmStartMedianMs": "num",
    "startup.medianMs": "num",
    "startup.appStartMedianMs": "num",
    "startup.firstPostMs": "num",
    "startup.firstGetMs": "num",
    "startup.pageCacheDropped": "bool",
    "startup.runs": "list",
    "memory.rssMb": "num",
    "memory.pssMb": "num",
    "memory.ussMb": "num",
    "memory.peakRssMbAfterLoad": "num",
    "imageSizeMb": "num?",
    "wrk.rps": "num",
    "wrk.p50Ms": "num",
    "wrk.p90Ms": "num",
    "wrk.p99Ms": "num",
    "load": "dict",
    "live": "dict",
}

# Every load point (one wrk run) holds these.
POINT_KEYS = {
    "connections": "num",
    "durationS": "num",
    "requests": "num",
    "rps": "num",
    "p50Ms": "num",
    "p90Ms": "num",
    "p99Ms": "num",
    "non2xx": "num",
    "socketErrorsTotal": "num",
    "serverCpuUsPerRequest": "num",
    "load1Before": "num",
    "foreignCpuPct": "num",
    "noisy": "bool",
}

MIX_POINT_KEYS = dict(POINT_KEYS, **{"rpsEarly": "num?", "rpsLate": "num?", "perBucket": "list"})

# A hookd target measured with access control on ("auth", status "ok").
AUTH_KEYS = {
    "sessions": "str",
    "startup.firstAuthGetMs": "num",
    "startup.secondAuthGetMs": "num",
    "startup.execToFirstAuthGetMs": "num",
    "startup.sessionCreateMs": "num",
    "startup.runs": "list",
    "load.connections": "num",
    "load.rpsRatio": "num",
}


def _check(obj, spec, where, problems):
    for key, kind in spec.items():
        try:
            v = get_path(obj, key)
        except KeyError:
            problems.append(f"{where}{key}: missing")
            continue
        ok = {
            "num": is_number(v),
            "num?": v is None or is_number(v),
            "str": isinstance(v, str),
            "bool": isinstance(v, bool),
            "dict": isinstance(v, dict),
            "list": isinstance(v, list),
        }[kind]
        if not ok:
            problems.append(f"{where}{key}: expected {kind}, got {type(v).__name__} {v!r:.60}")


def _sub(d, *path):
    for p in path:
        d = d.get(p) if isinstance(d, dict) else None
    return d if isinstance(d, dict) else {}


def check_complete(doc):
    """Problems with a result document, as strings; [] when complete."""
    problems = []
    _check(doc, TOP_KEYS, "", problems)
    for name, t in (doc.get("targets") or {}).items():
        if t.get("kind") != "hookd":
            continue
        where = f"targets.{name}."
        _check(t, HOOKD_KEYS, where, problems)
        for profile, points in (t.get("load") or {}).items():
            if not isinstance(points, dict) or not points:
                problems.append(f"{where}load.{profile}: no points")
                continue
            for conns, p in points.items():
                _check(p, MIX_POINT_KEYS, f"{where}load.{profile}.{conns}.", problems)
        for conns, p in (t.get("live") or {}).items():
            _check(p, POINT_KEYS, f"{where}live.{conns}.", problems)
        for r in t.get("startup", {}).get("runs", []):
            for k in ("readyMs", "rssKb", "ussKb", "pssKb"):
                if not is_number(r.get(k)):
                    problems.append(f"{where}startup.runs[{r.get('run')}].{k}: not a number")
        au = t.get("auth")
        if au is not None:
            # Optional (Redis may be missing: then "skipped" with a reason),
            # but a measurement that failed, or lacks a figure, is a problem.
            if not isinstance(au, dict):
                problems.append(f"{where}auth: expected dict")
            elif au.get("status") == "ok":
                _check(au, AUTH_KEYS, f"{where}auth.", problems)
                for side in ("off", "on"):
                    _check(_sub(au, "load", side), MIX_POINT_KEYS, f"{where}auth.load.{side}.", problems)
            elif au.get("status") == "skipped" and isinstance(au.get("reason"), str):
                pass
            else:
                problems.append(f"{where}auth: {au.get('status')}: {str(au.get('reason'))[:200]}")
    if not any(t.get("kind") == "hookd" for t in (doc.get("targets") or {}).values()):
        problems.append("targets: no hookd target ran")
    return problems
