# SPDX-License-Identifier: MIT
"""What a run tells a reader: ratios between targets, the issue's goals met
or missed (and by how much), a summary table for stdout, and SVG plots
drawn with gnuplot."""

import os
import shutil
import subprocess

from . import forward, graphql, ingress, jsonout


def _get(d, *path):
    for p in path:
        if not isinstance(d, dict) or p not in d:
            return None
        d = d[p]
    return d


def _div(a, b):
    return a / b if isinstance(a, (int, float)) and isinstance(b, (int, float)) and b else None


def _first(d):
    return next(iter(d.values())) if isinstance(d, dict) and d else None


def goals(doc):
    """The issue's figures for this 2-core machine, each with the value
    measured, the limit, and whether it was met."""
    T = doc.get("targets", {})
    out = []

    def add(goal, value, limit, better="lower", unit=""):
        if value is None:
            out.append({"goal": goal, "value": None, "limit": limit, "met": None, "note": "not measured"})
            return
        met = value <= limit if better == "lower" else value >= limit
        miss = None if met else (value - limit if better == "lower" else limit - value)
        out.append({"goal": goal, "value": value, "limit": limit, "unit": unit, "met": met, "missBy": miss})

    def pick(*names):
        return next((T[n] for n in names if n in T), {})

    # A run on a given binary (--hookd) stands in for the release variant.
    sq = pick("hookd-release-sqlite", "hookd-given-sqlite")
    pq = pick("hookd-release-postgres", "hookd-given-postgres")
    st = pick("hookd-static-sqlite")
    add("exec -> first 200, SQLite, median (ms)", _get(sq, "startup", "medianMs"), 3.0)
    add("exec -> first 200, PostgreSQL, median (ms)", _get(pq, "startup", "medianMs"), 10.0)
    add("exec -> first 200, static, median (ms)", _get(st, "startup", "medianMs"), 2.0)
    # Context, not a goal: the same figure for a server that does nothing.
    fl = _get(T, "floor", "startup", "medianMs")
    if fl is not None:
        out.append({"goal": "context: exec -> first 200 of bench/floor.c, a trivial static server (ms)",
                    "value": fl, "limit": None, "met": None, "note": "this machine's floor for the figure"})
    add("idle RSS, SQLite (MB)", _get(sq, "memory", "rssMb"), 4.0)
    add("idle RSS, PostgreSQL (MB)", _get(pq, "memory", "rssMb"), 9.0)
    add("idle RSS, static (MB)", _get(st, "memory", "rssMb"), 3.0)
    peak = [_get(t, "load", "paged", c, "serverHwmMb") for t in (sq, pq) for c in ("500",)]
    peak = [p for p in peak if p is not None]
    add("peak RSS after the 500-connection mix (MB)", max(peak) if peak else None, 24.0)
    ng = _first(_get(T, "nginx", "live") or {})
    hl = _first(_get(sq, "live") or {})
    add("GET /q/health/live, share of nginx's req/s", _div(_get(hl, "rps"), _get(ng, "rps")), 0.90, "higher")
    add("GET /q/health/live, server CPU per request (us)", _get(hl, "serverCpuUsPerRequest"), 8.0)
    pg100 = _get(pq, "load", "paged", "100")
    pg500 = _get(pq, "load", "paged", "500")
    dbc = doc.get("ceilings", {}).get("database", {})
    add("mix paged PostgreSQL c=100, share of pgbench's tps", _div(_get(pg100, "rps"), dbc.get("tps")), 0.60, "higher")
    add("mix paged PostgreSQL c=100, p99 (ms)", _get(pg100, "p99Ms"), 20.0)
    add("mix paged PostgreSQL c=500, p99 (ms)", _get(pg500, "p99Ms"), 100.0)
    errs = None if pg500 is None else pg500.get("non2xx", 0) + pg500.get("socketErrorsTotal", 0)
    add("mix paged PostgreSQL c=500, errors + non-2xx", errs, 0)
    add("mix paged PostgreSQL c=100, server CPU per request (us)", _get(pg100, "serverCpuUsPerRequest"), 20.0)
    # Access control, sessions in Redis (the SQLite target's figures).
    au = _get(sq, "auth") if _get(sq, "auth", "status") == "ok" else {}
    add("first GET with a session (Redis) after start, median (ms)", _get(au, "startup", "firstAuthGetMs"), 2.0)
    add("second GET with that session, median (ms)", _get(au, "startup", "secondAuthGetMs"), 0.5)
    add("mix c=100 with sessions in Redis / HOOKD_AUTH=off (req/s)",
        _get(au, "load", "rpsRatio"), 0.85, "higher")
    # Ingress (issue 12): the Stripe-signed 2 KB POST /hooks/stripe against
    # the unsigned 2 KB envelope, on each store.
    lim = ingress.LIMITS
    for store, label in (("sqlite", "SQLite"), ("postgres", "PostgreSQL")):
        r = ingress_result(doc, store)
        what = f"ingress Stripe 2 KB c={r.get('connections', 100)} {label}"
        add(f"{what} / envelope (req/s)", r.get("rpsRatio"), lim["rpsRatioMin"], "higher")
        add(f"{what}, server CPU over envelope (us/req)", r.get("cpuUsDelta"), lim["cpuUsDeltaMax"])
        add(f"{what}, p99 (ms)", r.get("p99Ms"), lim["p99MsMax"])
    # GraphQL (issue 14): a page over GraphQL against the same page over
    # REST and the first query after ready, on each store; parse + validate.
    lim = graphql.LIMITS
    for store, label in (("sqlite", "SQLite"), ("postgres", "PostgreSQL")):
        r = graphql_result(doc, store)
        add(f"GraphQL webhooks(first: 20) c={r.get('connections', 100)} {label} / GET ?limit=20 (req/s)",
            r.get("rpsRatio"), lim["rpsRatioMin"], "higher")
        add(f"first GraphQL query after ready, {label}, median (ms)", r.get("firstQueryMs"), lim["firstQueryMsMax"])
    pv = graphql_parse_result(doc)
    add("GraphQL parse + validate, 2 KB query, median (us)", pv.get("medianUs"), lim["parseValidateUsMax"])
    # Forwarding and retention (issue 15): ingest with a sink vs without,
    # receive -> sink at half that rate, the mix during purges; on each store.
    lim = forward.LIMITS
    for store, label in (("sqlite", "SQLite"), ("postgres", "PostgreSQL")):
        r = forward_result(doc, store)
        c = r.get("connections", 100)
        add(f"POST 2 KB c={c} {label}, forwarding on / off (req/s)", r.get("rpsRatio"), lim["rpsRatioMin"], "higher")
        add(f"receive -> sink at half that rate, {label}, p99 (ms)", r.get("sinkP99Ms"), lim["sinkP99MsMax"])
        add(f"mix c={c} {label}, p99 during purges / without", r.get("purgeP99Ratio"), lim["purgeP99RatioMax"])
        add(f"rows not delivered after the drain, {label}", r.get("undelivered"), 0)
    return out


def forward_result(doc, store):
    """The forwarding profile's figures for the release variant (or the
    given binary) on `store`, when they were measured; {} otherwise."""
    T = _get(doc, "forward", "targets") or {}
    for name in (f"hookd-release-{store}", f"hookd-given-{store}"):
        r = T.get(name)
        if isinstance(r, dict) and r.get("status") == "ok":
            return r
    return {}


def graphql_result(doc, store):
    """The GraphQL profile's figures for the release variant (or the given
    binary) on `store`, when they were measured; {} otherwise."""
    T = _get(doc, "graphql", "targets") or {}
    for name in (f"hookd-release-{store}", f"hookd-given-{store}"):
        r = T.get(name)
        if isinstance(r, dict) and r.get("status") == "ok":
            return r
    return {}


def graphql_parse_result(doc):
    """The parse + validate figures of the release variant's (or the given
    build's) microbenchmark; {} when not measured."""
    P = _get(doc, "graphql", "parse") or {}
    for v in ("release", "given"):
        if isinstance(P.get(v), dict) and P[v].get("status") == "ok":
            return P[v]
    return {}


def ingress_result(doc, store):
    """The ingress profile's figures for the release variant (or the given
    binary) on `store`, when they were measured; {} otherwise."""
    T = _get(doc, "ingress", "targets") or {}
    for name in (f"hookd-release-{store}", f"hookd-given-{store}"):
        r = T.get(name)
        if isinstance(r, dict) and r.get("status") == "ok":
            return r
    return {}


def ratios(doc):
    T = doc.get("targets", {})
    r = {}
    ng = _first(_get(T, "nginx", "live") or {})
    for name, t in T.items():
        if t.get("kind") == "nginx":
            continue
        lv = _first(t.get("live") or {})
        if ng and lv:
            r.setdefault("liveVsNginx", {})[name] = {
                "rpsRatio": _div(lv.get("rps"), ng.get("rps")),
                "cpuPerRequestRatio": _div(lv.get("serverCpuUsPerRequest"), ng.get("serverCpuUsPerRequest")),
            }
    dbc = doc.get("ceilings", {}).get("database", {})
    for name, t in T.items():
        if t.get("store") == "postgres" and dbc.get("tps"):
            for c, p in (_get(t, "load", "paged") or {}).items():
                r.setdefault("mixVsPgbench", {}).setdefault(name, {})[c] = _div(p.get("rps"), dbc["tps"])
    for store in ("sqlite", "postgres"):
        base = T.get(f"hookd-release-{store}")
        if not base:
            continue
        for name, t in T.items():
            if t.get("kind") != "hookd" or t.get("store") != store or t is base:
                continue
            r.setdefault("vsRelease", {})[name] = {
                "coldStartMedian": _div(_get(t, "startup", "medianMs"), _get(base, "startup", "medianMs")),
                "rss": _div(_get(t, "memory", "rssMb"), _get(base, "memory", "rssMb")),
                "mixRps": _div(_get(t, "wrk", "rps"), _get(base, "wrk", "rps")),
                "binarySize": _div(_get(t, "binary", "sizeBytes"), _get(base, "binary", "sizeBytes")),
            }
    for name, t in T.items():
        if _get(t, "auth", "status") == "ok":
            r.setdefault("authVsOff", {})[name] = _get(t, "auth", "load", "rpsRatio")
    for name, x in (_get(doc, "ingress", "targets") or {}).items():
        if isinstance(x, dict) and x.get("status") == "ok":
            r.setdefault("ingressVsEnvelope", {})[name] = {"rpsRatio": x.get("rpsRatio"),
                                                           "cpuUsDelta": x.get("cpuUsDelta")}
    for name, x in (_get(doc, "graphql", "targets") or {}).items():
        if isinstance(x, dict) and x.get("status") == "ok":
            r.setdefault("graphqlVsRest", {})[name] = {"rpsRatio": x.get("rpsRatio"),
                                                       "cpuUsDelta": x.get("cpuUsDelta")}
    for name, x in (_get(doc, "forward", "targets") or {}).items():
        if isinstance(x, dict) and x.get("status") == "ok":
            r.setdefault("forwardVsOff", {})[name] = {"rpsRatio": x.get("rpsRatio"),
                                                      "cpuUsDelta": x.get("cpuUsDelta"),
                                                      "purgeP99Ratio": x.get("purgeP99Ratio")}
    r["goals"] = goals(doc)
    return r


def auth_lines(doc):
    """The access-control section of the summary: one row per target that
    was measured with sessions in Redis, and why the others were not."""
    rows, other = [], []
    for name, t in doc.get("targets", {}).items():
        au = t.get("auth")
        if not isinstance(au, dict):
            continue
        if au.get("status") != "ok":
            other.append(f"  {name}: {au.get('status')}: {str(au.get('reason', ''))[:140]}")
            continue
        st, ld = au.get("startup", {}), au.get("load", {})
        on, off = ld.get("on", {}), ld.get("off", {})
        rows.append([name, _f(st.get("firstAuthGetMs"), "{:.3f}"), _f(st.get("secondAuthGetMs"), "{:.3f}"),
                     _f(st.get("execToFirstAuthGetMs"), "{:.2f}"), _f(st.get("sessionCreateMs"), "{:.3f}"),
                     _f(off.get("rps"), "{:.0f}"), _f(on.get("rps"), "{:.0f}"), _f(ld.get("rpsRatio"), "{:.3f}"),
                     _f(on.get("p99Ms"), "{:.2f}"), str(on.get("non2xx", "-")),
                     _f(on.get("redisCpuUsPerRequest"), "{:.1f}")])
    if not rows and not other:
        return []
    conns = next((_get(t, "auth", "load", "connections") for t in doc.get("targets", {}).values()
                  if _get(t, "auth", "load", "connections")), 100)
    lines = ["", "access control, sessions in Redis: the 1st and 2nd GET /api/webhooks?limit=20 with a new session "
                 "(fresh connections, medians over the starts);",
             f"the paged mix at {conns} connections with every GET carrying the session, vs HOOKD_AUTH=off:"]
    if rows:
        cols = ["target", "1st GET ms", "2nd GET ms", "exec->1st ms", "session ms", "rps off", "rps on",
                "on/off", "p99 on", "non2xx on", "redis us/req"]
        widths = [max(len(str(x)) for x in col) for col in zip(cols, *rows)]
        lines.append("  " + "  ".join(c.rjust(w) if i else c.ljust(w) for i, (c, w) in enumerate(zip(cols, widths))))
        for row in rows:
            lines.append("  " + "  ".join(str(x).rjust(w) if i else str(x).ljust(w)
                                          for i, (x, w) in enumerate(zip(row, widths))))
    return lines + other


def ingress_lines(doc):
    """The ingress section of the summary: one row per target measured with
    the Stripe-signed 2 KB POST /hooks/stripe and its envelope baseline, and
    why the others were not."""
    sec = doc.get("ingress")
    if not isinstance(sec, dict):
        return []
    if sec.get("status") != "ok":
        return ["", f"ingress profile: {sec.get('status')}: {str(sec.get('reason', ''))[:160]}"]
    rows, other = [], []
    for name, x in (sec.get("targets") or {}).items():
        if not isinstance(x, dict) or x.get("status") != "ok":
            x = x if isinstance(x, dict) else {}
            other.append(f"  {name}: {x.get('status')}: {str(x.get('reason', ''))[:160]}")
            continue
        e, i, met = x.get("envelope") or {}, x.get("ingress") or {}, x.get("targetsMet") or {}

        def mark(k):
            return "" if met.get(k) is None else ("" if met[k] else " MISSED")

        rows.append([name, _f(e.get("rps"), "{:.0f}"), _f(i.get("rps"), "{:.0f}"),
                     _f(x.get("rpsRatio"), "{:.3f}") + mark("rpsRatio"),
                     _f(e.get("serverCpuUsPerRequest")), _f(i.get("serverCpuUsPerRequest")),
                     _f(x.get("cpuUsDelta"), "{:+.1f}") + mark("cpuUsDelta"),
                     _f(e.get("p50Ms"), "{:.2f}"), _f(i.get("p50Ms"), "{:.2f}"), _f(e.get("p99Ms"), "{:.2f}"),
                     _f(i.get("p99Ms"), "{:.2f}") + mark("p99Ms"),
                     f"{e.get('non2xx', '-')}/{i.get('non2xx', '-')}",
                     {True: "yes", False: "NO", None: "-"}[met.get("all")]])
    lim = sec.get("limits") or ingress.LIMITS
    lines = ["", f"ingress: POST /hooks/stripe, {sec.get('bodyBytes')} B Stripe-signed, a new delivery id per "
                 f"request, vs unsigned POST /api/webhooks with a {sec.get('bodyBytes')} B envelope, "
                 f"{sec.get('connections')} connections, {sec.get('durationS')} s each, fresh servers;",
             f"targets: hooks/envelope req/s >= {lim['rpsRatioMin']}, server CPU +{lim['cpuUsDeltaMax']} us/req "
             f"at most, p99 <= {lim['p99MsMax']} ms:"]
    if rows:
        cols = ["target", "rps env", "rps hooks", "ratio", "us/req env", "us/req hooks", "delta us",
                "p50 env", "p50 hooks", "p99 env", "p99 hooks", "non2xx", "met"]
        widths = [max(len(str(v)) for v in col) for col in zip(cols, *rows)]
        lines.append("  " + "  ".join(c.rjust(w) if k else c.ljust(w) for k, (c, w) in enumerate(zip(cols, widths))))
        for row in rows:
            lines.append("  " + "  ".join(str(v).rjust(w) if k else str(v).ljust(w)
                                          for k, (v, w) in enumerate(zip(row, widths))))
    return lines + other


def graphql_lines(doc):
    """The GraphQL section of the summary: the parse microbenchmark per
    variant, one row per target measured with the page both ways and the
    first query, and why the others were not."""
    sec = doc.get("graphql")
    if not isinstance(sec, dict):
        return []
    if sec.get("status") != "ok":
        return ["", f"GraphQL profile: {sec.get('status')}: {str(sec.get('reason', ''))[:160]}"]
    lim = sec.get("limits") or graphql.LIMITS
    yes = {True: "yes", False: "NO", None: "-"}
    lines = ["", f"GraphQL: POST {sec.get('path')} webhooks(first: {sec.get('pageSize')}) vs GET "
                 f"{sec.get('restPath')}, {sec.get('rows')} rows in the store, {sec.get('connections')} connections, "
                 f"{sec.get('durationS')} s each, fresh servers; the first query after ready on a preloaded store;",
             f"targets: GraphQL/REST req/s >= {lim['rpsRatioMin']}, first query <= {lim['firstQueryMsMax']} ms, "
             f"parse + validate of a 2 KB query <= {lim['parseValidateUsMax']} us:"]
    for v, p in (sec.get("parse") or {}).items():
        if isinstance(p, dict) and p.get("status") == "ok":
            po = p.get("parseOnlyMedianNs")
            po = po / 1000 if jsonout.is_number(po) else None
            lines.append(f"  parse + validate ({v}): {_f(p.get('medianUs'), '{:.2f}')} us median ({_f(po, '{:.2f}')} "
                         f"us of it parsing), {p.get('queryBytes')} B, {p.get('runs')} runs of "
                         f"{p.get('iterations')}, {p.get('arenaBytes')} arena bytes"
                         + ("" if p.get("met") else " MISSED"))
        else:
            p = p if isinstance(p, dict) else {}
            lines.append(f"  parse + validate ({v}): {p.get('status')}: {str(p.get('reason', ''))[:140]}")
    rows, other = [], []
    for name, x in (sec.get("targets") or {}).items():
        if not isinstance(x, dict) or x.get("status") != "ok":
            x = x if isinstance(x, dict) else {}
            other.append(f"  {name}: {x.get('status')}: {str(x.get('reason', ''))[:160]}")
            continue
        rs, gq, fq = x.get("rest") or {}, x.get("graphql") or {}, x.get("firstQuery") or {}
        met = x.get("targetsMet") or {}

        def mark(k):
            return "" if met.get(k) is None else ("" if met[k] else " MISSED")

        rows.append([name, _f(rs.get("rps"), "{:.0f}"), _f(gq.get("rps"), "{:.0f}"),
                     _f(x.get("rpsRatio"), "{:.3f}") + mark("rpsRatio"),
                     _f(rs.get("serverCpuUsPerRequest")), _f(gq.get("serverCpuUsPerRequest")),
                     _f(rs.get("p99Ms"), "{:.2f}"), _f(gq.get("p99Ms"), "{:.2f}"),
                     _f(x.get("firstQueryMs"), "{:.3f}") + mark("firstQueryMs"), _f(fq.get("secondQueryMs"), "{:.3f}"),
                     _f(fq.get("liveMs"), "{:.3f}"), f"{rs.get('non2xx', '-')}/{gq.get('non2xx', '-')}",
                     yes[met.get("all")]])
    if rows:
        cols = ["target", "rps REST", "rps GraphQL", "ratio", "us/req REST", "us/req GraphQL", "p99 REST",
                "p99 GraphQL", "1st query ms", "2nd ms", "live ms", "non2xx", "met"]
        widths = [max(len(str(v)) for v in col) for col in zip(cols, *rows)]
        lines.append("  " + "  ".join(c.rjust(w) if k else c.ljust(w) for k, (c, w) in enumerate(zip(cols, widths))))
        for row in rows:
            lines.append("  " + "  ".join(str(v).rjust(w) if k else str(v).ljust(w)
                                          for k, (v, w) in enumerate(zip(row, widths))))
    tm = sec.get("targetsMet")
    if isinstance(tm, dict):
        lines.append("  targetsMet: " + ", ".join(f"{k} {yes[v]}" for k, v in tm.items()))
    return lines + other


def forward_lines(doc):
    """The forwarding section of the summary: the sink alone, then per
    target the three comparisons, and why the others were not measured."""
    sec = doc.get("forward")
    if not isinstance(sec, dict):
        return []
    if sec.get("status") != "ok":
        return ["", f"forwarding profile: {sec.get('status')}: {str(sec.get('reason', ''))[:160]}"]
    lim = sec.get("limits") or forward.LIMITS
    yes = {True: "yes", False: "NO", None: "-"}
    sink = sec.get("sink") or {}
    lines = ["", f"forwarding: POST /api/webhooks, {sec.get('bodyBytes')} B envelope, {sec.get('connections')} "
                 f"connections, {sec.get('durationS')} s each, fresh servers, sink nginx on CPUs {sink.get('cpus')} "
                 "(answers 202, logs its clock and ce-time);",
             f"targets: forwarding on/off req/s >= {lim['rpsRatioMin']}, receive -> sink p99 <= "
             f"{lim['sinkP99MsMax']} ms at {sec.get('rateFraction')}x the forwarding rate, mix p99 during purges <= "
             f"{lim['purgeP99RatioMax']}x without ({sec.get('rows')} rows preloaded, HOOKD_PURGE_INTERVAL="
             f"{sec.get('purgeInterval')}); every row delivered:"]
    c = sink.get("ceiling") or {}
    if c.get("status") == "ok":
        lines.append(f"  the sink alone: {_f(c.get('rps'), '{:.0f}')} req/s at {c.get('connections')} connections, "
                     f"p99 {_f(c.get('p99Ms'), '{:.2f}')} ms, {_f(c.get('sinkCpuUsPerRequest'))} us/req")
    elif c:
        lines.append(f"  the sink alone: {c.get('status')}: {str(c.get('reason', ''))[:140]}")
    ingest, later, other = [], [], []
    for name, x in (sec.get("targets") or {}).items():
        if not isinstance(x, dict) or x.get("status") != "ok":
            x = x if isinstance(x, dict) else {}
            other.append(f"  {name}: {x.get('status')}: {str(x.get('reason', ''))[:160]}")
            continue
        off, on = _get(x, "ingest", "off") or {}, _get(x, "ingest", "on") or {}
        pa, po, pn = x.get("latency") or {}, _get(x, "purge", "off") or {}, _get(x, "purge", "on") or {}
        met = x.get("targetsMet") or {}

        def mark(k):
            return "" if met.get(k) is None else ("" if met[k] else " MISSED")

        ingest.append([name, _f(off.get("rps"), "{:.0f}"), _f(on.get("rps"), "{:.0f}"),
                       _f(x.get("rpsRatio"), "{:.3f}") + mark("rpsRatio"),
                       _f(off.get("serverCpuUsPerRequest")), _f(on.get("serverCpuUsPerRequest")),
                       _f(on.get("serverCpuUsPerRequestWithDrain")), _f(on.get("sinkCpuUsPerRequest")),
                       _f(on.get("forwardRps"), "{:.0f}"), _f(_get(on, "afterLoad", "backlogAtEnd"), "{:.0f}"),
                       _f(_get(on, "afterLoad", "drainS"), "{:.1f}"),
                       str(x.get("undelivered", "-")) + mark("allDelivered"), yes[met.get("all")]])
        later.append([name, f"{_f(pa.get('rps'), '{:.0f}')}/{x.get('rateTarget', '-')}",
                      _f(_get(pa, "sink", "latency", "p50Ms"), "{:.2f}"),
                      _f(x.get("sinkP99Ms"), "{:.2f}") + mark("sinkP99Ms"),
                      _f(_get(pa, "sink", "latency", "maxMs"), "{:.1f}"),
                      _f(_get(pa, "afterLoad", "latencyHistogram", "meanMs"), "{:.2f}"),
                      _f(x.get("hookdP99Ms"), "{:.2f}"), _f(po.get("p99Ms"), "{:.2f}"), _f(pn.get("p99Ms"), "{:.2f}"),
                      _f(x.get("purgeP99Ratio"), "{:.2f}") + mark("purgeP99Ratio"),
                      _f(_get(pn, "retention", "deletedInWindow"), "{:.0f}"),
                      f"{_get(pn, 'retention', 'intervalsWithDeletes')}/{_get(pn, 'retention', 'intervals')}"])
    for rows, cols in ((ingest, ["target", "rps off", "rps on", "ratio", "us/req off", "us/req on", "+drain",
                                 "sink us/req", "fwd rps", "backlog", "drain s", "undelivered", "met"]),
                       (later, ["target", "paced rps", "sink p50", "sink p99", "sink max", "hookd mean",
                                "hookd p99", "mix p99", "purging p99", "ratio", "deleted", "seconds"])):
        if not rows:
            continue
        widths = [max(len(str(v)) for v in col) for col in zip(cols, *rows)]
        lines.append("  " + "  ".join(c.rjust(w) if k else c.ljust(w) for k, (c, w) in enumerate(zip(cols, widths))))
        for row in rows:
            lines.append("  " + "  ".join(str(v).rjust(w) if k else str(v).ljust(w)
                                          for k, (v, w) in enumerate(zip(row, widths))))
    if ingest:
        lines.append("  (us/req: server CPU per request; +drain: with the forwarding done after the window; fwd rps: "
                     "deliveries during the window; backlog: rows not yet delivered when it ended; sink: nginx's "
                     "clock, 1 ms resolution, minus ce-time; hookd: its latency histogram, interpolated; seconds: "
                     "1 s intervals of the window with rows deleted)")
    tm = sec.get("targetsMet")
    if isinstance(tm, dict):
        lines.append("  targetsMet: " + ", ".join(f"{k} {yes[v]}" for k, v in tm.items()))
    return lines + other


def _f(v, fmt="{:.1f}"):
    if v is None:
        return "-"
    return fmt.format(v)


def container_lines(T):
    """Container start to the first 200: through podman (what a user runs)
    and with runc directly on the unpacked bundle (the container's own start,
    without podman's), per hookd SQLite target."""
    lines = []
    for key, title in (("container", "podman run"), ("containerRunc", "runc run (OCI bundle, no podman)")):
        cont = [(n, t[key]) for n, t in T.items()
                if t.get("kind") == "hookd" and t.get("store") == "sqlite" and isinstance(t.get(key), dict)]
        if not cont:
            continue
        lines.append("")
        lines.append(f"{title} -> first 200:")
        for n, c in cont:
            if c.get("status") == "ok":
                lines.append(f"  {n:32} first {c['coldStartMs']:.1f} ms, median {c['medianMs']:.1f} ms"
                             + (" (noisy)" if c.get("noisy") else ""))
            else:
                lines.append(f"  {n:32} {c.get('status')}: {str(c.get('reason', ''))[:120]}")
    return lines


def summary(doc):
    T = doc.get("targets", {})
    conns = doc.get("benchmarkConfig", {}).get("connections", [])
    cols = ["target", "cold ms", "warm ms", "app ms", "1st POST", "RSS MB", "USS MB", "peak MB", "bin MB",
            "image MB", "live rps", "live us/req"]
    for c in conns:
        cols += [f"mix rps c{c}", f"p99 c{c}"]
    cols += ["mix us/req"]
    rows = []
    for name, t in T.items():
        st, mem = t.get("startup", {}), t.get("memory", {})
        lv = _first(t.get("live") or {}) or {}
        row = [name, _f(st.get("coldStartMs"), "{:.2f}"), _f(st.get("warmStartMedianMs"), "{:.2f}"),
               _f(st.get("appColdStartMs"), "{:.2f}"), _f(st.get("firstPostMs"), "{:.2f}"),
               _f(mem.get("rssMb")), _f(mem.get("ussMb")), _f(mem.get("peakRssMbAfterLoad")),
               _f(_get(t, "binary", "sizeMb")), _f(t.get("imageSizeMb")), _f(lv.get("rps"), "{:.0f}"),
               _f(lv.get("serverCpuUsPerRequest"))]
        paged = _get(t, "load", "paged") or {}
        for c in conns:
            p = paged.get(str(c)) or {}
            row += [_f(p.get("rps"), "{:.0f}"), _f(p.get("p99Ms"))]
        p = paged.get(str(conns[0])) if conns else None
        row += [_f((p or {}).get("serverCpuUsPerRequest"))]
        rows.append(row)
    widths = [max(len(str(x)) for x in col) for col in zip(cols, *rows)] if rows else [len(c) for c in cols]
    lines = []
    flag = " (NOISY: taken on a busy machine)" if doc.get("noisy") else ""
    lines.append(f"hookd benchmark {doc.get('date')}{' QUICK' if doc.get('quick') else ''}{flag}")
    m = doc.get("machine", {})
    lines.append(f"{m.get('cpu')}, {m.get('cores')} CPUs, {m.get('memoryGb')} GB, {m.get('os')}, "
                 f"kernel {m.get('kernel')}; server CPUs {doc['benchmarkConfig']['serverCpus']}, "
                 f"load CPUs {doc['benchmarkConfig']['loadCpus']}, load1 before {doc['loadBefore']['load1']}")
    lines.append("")
    lines.append("  ".join(c.rjust(w) if i else c.ljust(w) for i, (c, w) in enumerate(zip(cols, widths))))
    for row in rows:
        lines.append("  ".join(str(x).rjust(w) if i else str(x).ljust(w) for i, (x, w) in enumerate(zip(row, widths))))
    r = doc.get("ratios", {})
    if r.get("liveVsNginx"):
        lines.append("")
        lines.append("GET live vs nginx's fixed 200 (req/s ratio, CPU/request ratio):")
        for n, v in r["liveVsNginx"].items():
            lines.append(f"  {n:32} {_f(v['rpsRatio'], '{:.2f}')}x  {_f(v['cpuPerRequestRatio'], '{:.2f}')}x")
    lines += container_lines(T)
    lines += auth_lines(doc)
    lines += ingress_lines(doc)
    lines += graphql_lines(doc)
    lines += forward_lines(doc)
    dbc = doc.get("ceilings", {}).get("database", {})
    lines.append("")
    if dbc.get("status") == "ok":
        lines.append(f"pgbench (hookd's statements, {dbc.get('clients')} clients): {dbc.get('tps'):.0f} tps, "
                     f"{_f(dbc.get('latencyAvgMs'), '{:.2f}')} ms average")
        for n, v in (r.get("mixVsPgbench") or {}).items():
            lines.append(f"  {n:32} mix/pgbench " + ", ".join(f"c{c}: {_f(x, '{:.2f}')}" for c, x in v.items()))
    else:
        lines.append(f"pgbench: {dbc.get('status', 'not run')}: {dbc.get('reason', '')}")
    if r.get("vsRelease"):
        lines.append("")
        lines.append("variants vs release (cold start median, RSS, mix req/s, binary size):")
        for n, v in r["vsRelease"].items():
            lines.append(f"  {n:32} " + "  ".join(f"{k} {_f(x, '{:.2f}')}x" for k, x in v.items()))
    sw = doc.get("sweep", {})
    if sw.get("status") == "ok":
        lines.append("")
        lines.append(f"sweep ({sw['variant']}, {sw['durationS']} s per point, server CPUs {sw['serverCpus']}):")
        lines.append(f"  {'store':9}{'threads':>8}{'pool':>6}{'conns':>7}{'req/s':>10}{'p99 ms':>9}{'us/req':>8}")
        for p in sw["points"]:
            if "error" in p:
                lines.append(f"  {p['store']:9}{p['threads']:>8}{str(p['pool'] or '-'):>6}{p['connections']:>7}  error: {p['error'][:60]}")
                continue
            lines.append(f"  {p['store']:9}{p['threads']:>8}{str(p['pool'] or '-'):>6}{p['connections']:>7}"
                         f"{p['rps']:>10.0f}{_f(p['p99Ms']):>9}{_f(p['serverCpuUsPerRequest']):>8}"
                         + ("  noisy" if p.get("noisy") else ""))
        for k in sw.get("knees") or knees(sw["points"]):
            lines.append(f"  where more stops helping: {k}")
    g = r.get("goals") or []
    if g:
        lines.append("")
        lines.append("the issues' goals (met / MISSED by / not measured):")
        for x in g:
            if x.get("limit") is None:
                lines.append(f"  {x['goal']:58} {_f(x['value'], '{:.3g}'):>8}  ({x.get('note', '')})")
                continue
            state = "not measured" if x["met"] is None else ("met" if x["met"] else f"MISSED by {x['missBy']:.3g}")
            lines.append(f"  {x['goal']:58} {_f(x['value'], '{:.3g}'):>8}  limit {x['limit']:<6} {state}")
    if doc.get("skipped"):
        lines.append("")
        lines.append("skipped:")
        for s in doc["skipped"]:
            lines.append(f"  {s['target']}: {str(s['reason']).splitlines()[0][:160]}")
    return "\n".join(lines)


def knees(points):
    """For each (store, pool, connections) line of the sweep, the smallest
    thread count past which req/s rises by less than 5%; and likewise for
    pool size at each (store, threads, connections)."""
    ok = [p for p in points if "rps" in p]
    out = []

    def knee(series, label, axis):
        series = sorted(series)
        if len(series) < 2:
            return
        best = series[0]
        for x, rps in series[1:]:
            if rps < best[1] * 1.05:
                out.append(f"{label}: {axis} {best[0]} ({best[1]:.0f} req/s); {x} gives {rps:.0f}")
                return
            best = (x, rps)
        out.append(f"{label}: still rising at {axis} {best[0]} ({best[1]:.0f} req/s)")

    keys = {(p["store"], p["pool"], p["connections"]) for p in ok}
    for s, pool, c in sorted(keys, key=str):
        knee([(p["threads"], p["rps"]) for p in ok if (p["store"], p["pool"], p["connections"]) == (s, pool, c)],
             f"{s} pool={pool or '-'} c={c}", "threads")
    keys = {(p["store"], p["threads"], p["connections"]) for p in ok if p["pool"]}
    for s, th, c in sorted(keys, key=str):
        knee([(p["pool"], p["rps"]) for p in ok if (p["store"], p["threads"], p["connections"]) == (s, th, c)
              and p["pool"]], f"{s} threads={th} c={c}", "pool")
    return out


# ---- plots -------------------------------------------------------------

HEAD = """set terminal svg size 960,540 dynamic noenhanced font 'sans,11' background '#ffffff'
set output '{out}'
set title '{title}'
set grid ytics
set key top left
"""

BARS = HEAD + """set style data histograms
set style histogram clustered gap 1
set style fill solid 0.85 border -1
set boxwidth 0.9
set xtics rotate by -20 noenhanced
set key outside top center horizontal noenhanced
set ylabel '{ylabel}'
set yrange [0:*]
plot {series}
"""


def _q(s):
    return '"' + str(s).replace('"', "'") + '"'


def _num(v):
    return "NaN" if v is None else f"{v:.4f}"


def _gnuplot(script, path):
    with open(path + ".gp", "w") as f:
        f.write(script)
    r = subprocess.run(["gnuplot", path + ".gp"], stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                       timeout=60)
    if r.returncode != 0:
        raise RuntimeError(f"gnuplot {path}.gp: {r.stdout.strip()[-300:]}")


def _bars(d, name, title, ylabel, rows, cols):
    """rows: [(label, [values...])], cols: series titles."""
    if not rows:
        return None
    dat = os.path.join(d, name + ".dat")
    with open(dat, "w") as f:
        f.write("# target " + " ".join(_q(c) for c in cols) + "\n")
        for label, vals in rows:
            f.write(_q(label) + " " + " ".join(_num(v) for v in vals) + "\n")
    series = ", ".join(f"'{dat}' using {i + 2}{':xtic(1)' if i == 0 else ''} title {_q(c)}"
                       for i, c in enumerate(cols))
    out = os.path.join(d, name + ".svg")
    _gnuplot(BARS.format(out=out, title=title, ylabel=ylabel, series=series), os.path.join(d, name))
    return out


def plots(doc, d):
    if not shutil.which("gnuplot"):
        return []
    os.makedirs(d, exist_ok=True)
    T = doc.get("targets", {})
    made = []
    rows = [(n, [_get(t, "startup", "coldStartMs"), _get(t, "startup", "warmStartMedianMs"),
                 _get(t, "startup", "appStartMedianMs")]) for n, t in T.items()]
    made.append(_bars(d, "coldstart", "exec to first 200 (ms)", "ms", rows,
                      ["first run (cold)", "warm median", "app-reported median"]))
    rows = [(n, [_get(t, "memory", "rssMb"), _get(t, "memory", "pssMb"), _get(t, "memory", "ussMb"),
                 _get(t, "memory", "peakRssMbAfterLoad")]) for n, t in T.items()]
    made.append(_bars(d, "memory", "memory: 1 s after ready, and peak after load (MB)", "MB", rows,
                      ["RSS", "PSS", "USS", "peak RSS (VmHWM) after load"]))
    # Throughput vs connections, one line per target and profile.
    dat = os.path.join(d, "throughput.dat")
    series = []
    idx = 0
    with open(dat, "w") as f:
        for n, t in T.items():
            for profile, pts in (t.get("load") or {}).items():
                f.write(f"# {n} {profile}\n")
                for c, p in sorted(pts.items(), key=lambda kv: int(kv[0])):
                    f.write(f"{c} {_num(p.get('rps'))} {_num(p.get('p99Ms'))}\n")
                f.write("\n\n")
                series.append(f"'{dat}' index {idx} using 1:2 with linespoints title {_q(n + ' ' + profile)}")
                idx += 1
            for c, p in (t.get("live") or {}).items():
                f.write(f"# {n} live\n{c} {_num(p.get('rps'))} {_num(p.get('p99Ms'))}\n\n\n")
                series.append(f"'{dat}' index {idx} using 1:2 with points pt 7 ps 1.5 title {_q(n + ' live')}")
                idx += 1
    if series:
        out = os.path.join(d, "throughput.svg")
        _gnuplot(HEAD.format(out=out, title="throughput vs connections (req/s)") +
                 "set xlabel 'connections'\nset ylabel 'req/s'\nset logscale y\nset key outside right noenhanced\n"
                 "set offsets graph 0.05, graph 0.05, 0, 0\n"
                 "plot " + ", ".join(series) + "\n", os.path.join(d, "throughput"))
        made.append(out)
    # Warm-up: req/s per second through each target's first paged point.
    dat = os.path.join(d, "warmup.dat")
    series = []
    with open(dat, "w") as f:
        idx = 0
        for n, t in T.items():
            pts = _get(t, "load", "paged") or {}
            if not pts:
                continue
            c, p = sorted(pts.items(), key=lambda kv: int(kv[0]))[0]
            bs = (p.get("bucketMs") or 1000) / 1000
            full = int(p.get("durationS", 0) / bs)
            f.write(f"# {n} c={c}\n")
            for i, v in enumerate((p.get("perBucket") or [])[:full]):
                f.write(f"{i * bs:.2f} {v / bs:.1f}\n")
            f.write("\n\n")
            series.append(f"'{dat}' index {idx} using 1:2 with lines title {_q(n + ' c=' + c)}")
            idx += 1
    if series:
        out = os.path.join(d, "warmup.svg")
        _gnuplot(HEAD.format(out=out, title="warm-up: req/s through the first mix run (fresh server)") +
                 "set xlabel 'seconds'\nset ylabel 'req/s'\nset yrange [0:*]\nset key noenhanced\n"
                 "plot " + ", ".join(series) + "\n", os.path.join(d, "warmup"))
        made.append(out)
    sw = doc.get("sweep", {})
    if sw.get("status") == "ok":
        dat = os.path.join(d, "sweep.dat")
        series = []
        ok = [p for p in sw["points"] if "rps" in p]
        lines_ = sorted({(p["store"], p["pool"], p["connections"]) for p in ok}, key=str)
        with open(dat, "w") as f:
            for i, (s, pool, c) in enumerate(lines_):
                f.write(f"# {s} pool={pool} c={c}\n")
                for p in sorted((p for p in ok if (p["store"], p["pool"], p["connections"]) == (s, pool, c)),
                                key=lambda p: p["threads"]):
                    f.write(f"{p['threads']} {_num(p['rps'])} {_num(p['p99Ms'])}\n")
                f.write("\n\n")
                series.append(f"'{dat}' index {i} using 1:2 with linespoints title "
                              f"{_q(f'{s} pool={pool or chr(45)} c={c}')}")
        if series:
            out = os.path.join(d, "sweep.svg")
            _gnuplot(HEAD.format(out=out, title="sweep: req/s vs HOOKD_THREADS (lines: store, HOOKD_DB_POOL, connections)")
                     + "set xlabel 'HOOKD_THREADS'\nset ylabel 'req/s'\nset yrange [0:*]\nset xtics 1\n"
                       "set key outside right noenhanced\nplot " + ", ".join(series) + "\n", os.path.join(d, "sweep"))
            made.append(out)
    return [m for m in made if m]
