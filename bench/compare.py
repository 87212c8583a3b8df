#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""make compare: build hookd's variants side by side, measure them next to
the HTTP ceiling (nginx, a fixed 200) and the database ceiling (pgbench with
hookd's own statements), and write metrics/<UTC timestamp>.json, SVG plots in
metrics/<timestamp>/ and a summary table on stdout. See bench/README.md."""

import argparse
import atexit
import datetime
import os
import shutil
import subprocess
import sys
import tempfile
import time
import traceback

# No __pycache__ in the source tree.
sys.dont_write_bytecode = True
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from hkbench import (auth, builds, forward, graphql, ingress, jsonout, measure, pg, procs, report,  # noqa: E402
                     system, targets)

BENCH = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(BENCH)


def args_parser():
    a = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    a.add_argument("--quick", action="store_true", help="a short run (a few minutes): short loads, small sweep")
    a.add_argument("--smoke", action="store_true",
                   help="the test suite's run: one hookd binary (--hookd), SQLite, seconds; no builds")
    a.add_argument("--hookd", help="use this hookd binary instead of building variants (variant 'given')")
    a.add_argument("--coldstart", help="the coldstart probe to use (default: the release variant's)")
    a.add_argument("--src", default=ROOT, help="hookd's source tree (default: this checkout)")
    a.add_argument("--build-root", default=os.path.join(ROOT, "build-bench"), help="where variants are built")
    a.add_argument("--out", help="output directory (default metrics/, or bench/out/ with --quick)")
    a.add_argument("--variants", default=",".join(builds.VARIANTS), help="hookd variants to build and run")
    a.add_argument("--stores", default="sqlite,postgres", help="hookd stores to run")
    a.add_argument("--no-nginx", action="store_true", help="leave out the nginx ceiling")
    a.add_argument("--no-pgbench", action="store_true", help="leave out the pgbench ceiling")
    a.add_argument("--no-sweep", action="store_true", help="leave out the threads x pool sweep")
    a.add_argument("--target", action="append", default=[], help="a JSON target file (repeatable)")
    a.add_argument("--peer", action="append", default=[],
                   help="another implementation's source directory, built with its 'build' script and measured "
                        "on PostgreSQL (repeatable; see hkbench/targets.py peer)")
    a.add_argument("--duration", type=int, help="seconds per load point (default 60, quick 6)")
    a.add_argument("--connections", help="load mix connection counts (default 100,500)")
    a.add_argument("--profiles", default="paged,reference", help="list profiles: paged (the server's default limit), limit20 (?limit=20), reference (?all=true)")
    a.add_argument("--reference-variants", default="release",
                   help="variants that also run the 'reference' profile ('all' for every one)")
    a.add_argument("--live-connections", type=int, default=100, help="connections for GET /q/health/live vs nginx")
    a.add_argument("--cold-runs", type=int, default=5)
    a.add_argument("--server-cpus", default="0", help="CPUs for the server (taskset -c)")
    a.add_argument("--load-cpus", default="1", help="CPUs for wrk and the cold-start poller")
    a.add_argument("--db-cpus", default="1", help="CPUs for PostgreSQL")
    a.add_argument("--pgbench-clients", type=int, default=10)
    a.add_argument("--sweep-threads", help="HOOKD_THREADS values (default 1,2,4)")
    a.add_argument("--sweep-pools", help="HOOKD_DB_POOL values (default 1,2,4,8)")
    a.add_argument("--sweep-connections", help="connection counts in the sweep (default 100,500)")
    a.add_argument("--sweep-server-cpus", help="server CPUs during the sweep (default: --server-cpus)")
    a.add_argument("--sweep-duration", type=int, help="seconds per sweep point (default 15, quick 3)")
    a.add_argument("--max-load", type=float, default=0.5,
                   help="refuse to start when the 1-min load average is above this (default 0.5)")
    a.add_argument("--noise-pct", type=float, default=10.0,
                   help="flag a measurement when others use more than this %% of the machine")
    a.add_argument("--allow-noisy", action="store_true",
                   help="run on a busy machine anyway; every figure is then flagged noisy")
    a.add_argument("--no-drop-caches", action="store_true", help="do not try to drop the page cache")
    a.add_argument("--no-images", action="store_true",
                   help="do not build images (scripts/image.sh) or start containers (podman, runc)")
    a.add_argument("--no-runc", action="store_true",
                   help="leave out the container start with runc directly (an OCI bundle unpacked by umoci)")
    a.add_argument("--keep-work", action="store_true", help="keep the scratch directory (logs, databases)")
    a.add_argument("--no-auth", action="store_true",
                   help="leave out access control: exec to the first authenticated GET and the mix with "
                        "sessions in Redis vs HOOKD_AUTH=off")
    a.add_argument("--auth-variants", default="release,given",
                   help="variants measured with access control on ('all' for every one)")
    a.add_argument("--auth-connections", type=int, default=100,
                   help="connections for the authenticated mix and its HOOKD_AUTH=off twin")
    a.add_argument("--no-ingress", action="store_true",
                   help="leave out the ingress profile: a 2 KB Stripe-signed POST /hooks/stripe vs an unsigned "
                        "2 KB POST /api/webhooks")
    a.add_argument("--ingress-variants", default="release,given",
                   help="variants measured with the ingress profile ('all' for every one)")
    a.add_argument("--ingress-connections", type=int, default=100,
                   help="connections for the ingress profile and its envelope baseline")
    a.add_argument("--no-graphql", action="store_true",
                   help="leave out the GraphQL profile: webhooks(first: 20) vs GET /api/webhooks?limit=20, the "
                        "first query after ready, parse + validate of a 2 KB query")
    a.add_argument("--graphql-variants", default="release,given",
                   help="variants measured with the GraphQL profile ('all' for every one)")
    a.add_argument("--graphql-connections", type=int, default=100,
                   help="connections for the GraphQL page and its REST baseline")
    a.add_argument("--graphql-rows", type=int,
                   help=f"envelopes in the store under the GraphQL profile (default {graphql.ROWS}, smoke 100)")
    a.add_argument("--gq-parse-bench",
                   help="the parse + validate microbenchmark to run (default: each variant's bench/gq_parse_bench)")
    a.add_argument("--no-forward", action="store_true",
                   help="leave out the forwarding profile: POST /api/webhooks with forwarding to an nginx sink vs "
                        "without, receive -> sink latency at half that rate, the mix during a retention purge")
    a.add_argument("--forward-variants", default="release,given",
                   help="variants measured with the forwarding profile ('all' for every one)")
    a.add_argument("--forward-connections", type=int, default=100,
                   help="connections for the forwarding profile's loads")
    a.add_argument("--forward-rows", type=int,
                   help=f"rows preloaded under the purge points (default {forward.ROWS}, "
                        f"smoke {forward.SMOKE_ROWS})")
    a.add_argument("--forward-sink-cpus", help="CPUs for the forwarding profile's sink (default: --load-cpus)")
    return a


def csv_ints(s):
    return [int(x) for x in str(s).split(",") if x.strip()]


def fit_cpus(wanted, label, notes):
    """The wanted CPUs that this process may use; all allowed ones otherwise."""
    allowed = system.allowed_cpus()
    ok = [c for c in wanted if c in allowed]
    if ok != wanted:
        notes.append(f"{label} CPUs {wanted} not all available (allowed {allowed}); using {ok or allowed}")
    return ok or allowed


def main(argv=None):
    a = args_parser().parse_args(argv)
    procs.install_signal_handlers()
    quick = a.quick or a.smoke
    stamp = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H-%M-%SZ")
    out_dir = a.out or (os.path.join(ROOT, "bench", "out") if quick else os.path.join(ROOT, "metrics"))
    notes = []
    skipped = []
    doc = {
        "schema": "hookd-bench/1",
        "date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "methodology": "process-based on loopback: exec to first 200 (bench/coldstart; bench/floor.c gives "
                       "the machine's floor), wrk load on a fresh "
                       "server per point, server/load/database pinned to separate CPUs with taskset",
        "quick": bool(quick),
        "smoke": bool(a.smoke),
        "noisy": False,
    }

    la = system.loadavg()
    doc["loadBefore"] = la
    if la["load1"] > a.max_load:
        msg = (f"the 1-min load average is {la['load1']:.2f} (> {a.max_load}): other work would distort "
               "every figure")
        if not a.allow_noisy:
            print(f"bench: refusing to run: {msg}. Wait for a quiet machine, or pass --allow-noisy "
                  "(make compare NOISY=1) to run anyway with every figure flagged.", file=sys.stderr)
            return 3
        print(f"bench: WARNING: {msg}; running anyway (--allow-noisy), results flagged noisy", file=sys.stderr)
        doc["noisy"] = True
        notes.append(msg)

    os.makedirs(out_dir, exist_ok=True)
    work = tempfile.mkdtemp(prefix="hookd-bench-")
    if not a.keep_work:
        # atexit runs this before procs' own handler (registered earlier):
        # stop the servers first, then remove their scratch directory.
        atexit.register(lambda: (procs.cleanup(), shutil.rmtree(work, True)))
    server_cpus = fit_cpus(system.parse_cpulist(a.server_cpus), "server", notes)
    load_cpus = fit_cpus(system.parse_cpulist(a.load_cpus), "load", notes)
    db_cpus = fit_cpus(system.parse_cpulist(a.db_cpus), "database", notes)
    duration = a.duration or (2 if a.smoke else 6 if quick else 60)
    conns = csv_ints(a.connections or ("50" if a.smoke else "100,500"))
    profiles = [p for p in a.profiles.split(",") if p] if not a.smoke else ["paged"]
    early_s, late_s = (5, 25) if duration >= 30 else (max(1, duration // 4), max(1, duration // 2))
    cfg = measure.Config(server_cpus=server_cpus, load_cpus=load_cpus, db_cpus=db_cpus, duration=duration,
                         cold_runs=3 if a.smoke else a.cold_runs, settle_ms=300 if a.smoke else 1000,
                         early_s=early_s, late_from_s=late_s, noise_pct=a.noise_pct,
                         quiet_wait_s=0 if a.smoke else (5 if quick else 60),
                         idle_probe_s=0.3 if a.smoke else 1.0, bench_dir=BENCH, work=work)
    cfg.sink_cpus = (fit_cpus(system.parse_cpulist(a.forward_sink_cpus), "sink", notes) if a.forward_sink_cpus
                     else load_cpus)
    doc["machine"] = system.machine_info()
    doc["benchmarkConfig"] = {
        "durationS": duration,
        "connections": conns,
        "profiles": profiles,
        "liveConnections": a.live_connections,
        "coldRuns": cfg.cold_runs,
        "settleMs": cfg.settle_ms,
        "serverCpus": system.cpulist(server_cpus),
        "loadCpus": system.cpulist(load_cpus),
        "dbCpus": system.cpulist(db_cpus),
        "wrkThreads": cfg.wrk_threads,
        "warmupWindowsS": {"early": [0, early_s], "lateFrom": late_s},
        "maxLoad1": a.max_load,
        "noisePct": a.noise_pct,
        "pgbenchClients": a.pgbench_clients,
        "pinning": "taskset -c; coldstart pins the server itself (the forked child, before its execve)",
    }

    # Page cache: try once now, so the machine section says whether it works.
    if a.no_drop_caches:
        doc["machine"]["pageCacheDrop"] = {"worked": False, "error": "disabled (--no-drop-caches)"}
    else:
        ok, err = system.drop_page_cache()
        doc["machine"]["pageCacheDrop"] = {"worked": ok, "error": err}

    doc["targets"] = {}
    doc["ceilings"] = {}
    doc["sweep"] = {"status": "not run"}
    doc["ingress"] = (ingress.skipped("--no-ingress") if a.no_ingress
                      else ingress.section(a.ingress_connections, duration, a.ingress_variants))
    gq_rows = a.graphql_rows or (100 if a.smoke else graphql.ROWS)
    doc["graphql"] = (graphql.skipped("--no-graphql") if a.no_graphql
                      else graphql.section(a.graphql_connections, duration, a.graphql_variants, gq_rows))
    fwd_rows = a.forward_rows or (forward.SMOKE_ROWS if a.smoke else forward.ROWS)
    if a.no_forward:
        doc["forward"] = forward.skipped("--no-forward")
    elif not shutil.which("nginx"):
        doc["forward"] = forward.skipped("nginx is not installed (the sink; scripts/deps.sh bench)")
    else:
        doc["forward"] = forward.section(a.forward_connections, duration, a.forward_variants, fwd_rows,
                                         cfg.sink_cpus)
    doc["skipped"] = skipped
    doc["notes"] = notes
    pg_log = os.path.join(work, "pg.log")
    cluster = pg.Cluster(a.src, pg_log)
    redis = auth.Redis(a.src, os.path.join(work, "redis.log"))
    stores = [s for s in a.stores.split(",") if s]
    if a.smoke:
        stores = ["sqlite"]

    try:
        # PostgreSQL first: the PGO training and the postgres targets need it.
        db = None
        if not a.smoke and ("postgres" in stores or not a.no_pgbench):
            ok, why = cluster.available()
            if ok:
                try:
                    cluster.start(cpus=db_cpus)
                    db = cluster
                    doc["machine"]["postgresql"] = cluster.settings()
                except Exception as e:  # noqa: BLE001 - recorded, the run goes on
                    why = f"cannot start the PostgreSQL cluster: {e}"
                    ok = False
            if not ok:
                skipped.append({"target": "postgresql", "reason": why})
                print(f"bench: PostgreSQL parts skipped: {why}", file=sys.stderr)

        # Redis, for the sessions of the access-control measurements.
        auth_ctx = {"redis": None, "reason": "--no-auth"}
        if not a.no_auth:
            ok, why = redis.available()
            if ok:
                try:
                    redis.start(cpus=db_cpus)
                    auth_ctx = {"redis": redis, "reason": None}
                except Exception as e:  # noqa: BLE001 - recorded, the run goes on
                    ok, why = False, f"cannot start Redis: {e}"
            if not ok:
                auth_ctx = {"redis": None, "reason": why}
                skipped.append({"target": "auth (sessions in Redis)", "reason": why})
                print(f"bench: access-control parts skipped: {why}", file=sys.stderr)

        # Builds.
        variants = {}
        if a.hookd or a.smoke:
            binpath = os.path.abspath(a.hookd or os.path.join(a.build_root, "release", "hookd"))
            variants["given"] = builds.binary_info(binpath)
            variants["given"]["variant"] = "given"
            coldstart = a.coldstart or os.path.join(os.path.dirname(binpath), "coldstart")
        else:
            b = builds.Builder(a.src, a.build_root, work, quick=quick)
            trainer = make_trainer(cfg, db, quick)
            for v in [v for v in a.variants.split(",") if v]:
                t0 = time.monotonic()
                print(f"bench: building {v} ...", file=sys.stderr, flush=True)
                try:
                    variants[v] = b.build(v, trainer=trainer)
                    variants[v]["buildS"] = time.monotonic() - t0
                except Exception as e:  # noqa: BLE001
                    skipped.append({"target": f"hookd-{v}", "reason": f"build failed: {e}"[:2000]})
                    print(f"bench: variant {v} not built: {str(e)[:500]}", file=sys.stderr)
            coldstart = a.coldstart or os.path.join(b.dir("release"), "coldstart")
            if not os.path.exists(coldstart):
                # The probe is tiny and has no dependency: any variant's will do.
                for v in variants.values():
                    if os.path.exists(v.get("coldstart", "")):
                        coldstart = v["coldstart"]
        # Images (scripts/image.sh) of each built variant, for imageSizeMb and
        # the podman path.
        for v, info in variants.items():
            if v != "given" and not a.no_images:
                # The image ships the static binary only: build_image skips the others.
                info["image"] = builds.build_image(a.src, os.path.dirname(info["path"]))
        cfg.coldstart = os.path.abspath(coldstart)
        if not os.path.exists(cfg.coldstart):
            raise SystemExit(f"bench: no coldstart probe at {cfg.coldstart}")
        doc["builds"] = variants

        # GraphQL parse + validate: once per build, before the servers.
        if not a.no_graphql:
            iters, runs = (1000, 3) if a.smoke else (10000, 5) if quick else (20000, 7)
            for v, info in variants.items():
                if a.graphql_variants != "all" and v not in a.graphql_variants.split(","):
                    continue
                path = os.path.abspath(a.gq_parse_bench or graphql.parse_bench_path(info["path"]))
                print(f"bench: GraphQL parse + validate ({v}, {path}) ...", file=sys.stderr, flush=True)
                r = graphql.run_parse_bench(cfg, path, iters, runs)
                doc["graphql"]["parse"][v] = r
                if r["status"] != "ok":
                    print(f"bench: GraphQL parse + validate ({v}): {r['status']}: {r['reason']}", file=sys.stderr)

        # Targets.
        tlist = []
        floor_bin = os.path.join(os.path.dirname(cfg.coldstart), "floor")
        if not a.smoke:
            if os.path.exists(floor_bin):
                tlist.append(targets.floor(floor_bin))
            else:
                skipped.append({"target": "floor", "reason": f"no {floor_bin} (built next to coldstart)"})
        if not a.no_nginx and not a.smoke:
            if shutil.which("nginx"):
                tlist.append(targets.nginx())
            else:
                skipped.append({"target": "nginx", "reason": "nginx is not installed (scripts/deps.sh bench)"})
        for v, info in variants.items():
            for s in stores:
                if s == "postgres" and db is None:
                    skipped.append({"target": f"hookd-{v}-postgres", "reason": "no PostgreSQL cluster (see above)"})
                    continue
                tlist.append(targets.hookd(v, s, info["path"], info))
        if not a.smoke:
            tlist += targets.custom_targets(os.path.join(BENCH, "targets.d"), a.target)
            for src in a.peer:
                try:
                    tlist.append(targets.peer(src, os.path.join(a.build_root, "peers",
                                                                os.path.basename(os.path.normpath(src)))))
                except (RuntimeError, OSError, subprocess.TimeoutExpired) as e:
                    skipped.append({"target": os.path.basename(os.path.normpath(src)), "reason": str(e)[:300]})

        for t in tlist:
            if t.store == "postgres" and db is None:
                skipped.append({"target": t.name, "reason": "needs PostgreSQL, which is not running"})
                continue
            if t.store == "postgres":
                note = db.ensure(cpus=db_cpus)
                if note:
                    notes.append(note)
            print(f"bench: measuring {t.name} ...", file=sys.stderr, flush=True)
            try:
                doc["targets"][t.name] = run_target(a, cfg, t, db, conns, profiles, duration, auth_ctx)
            except Exception as e:  # noqa: BLE001
                traceback.print_exc()
                skipped.append({"target": t.name, "reason": f"{type(e).__name__}: {e}"[:1000]})
                continue
            if not a.no_ingress and ingress.wanted(t, a.ingress_variants):
                print(f"bench: measuring {t.name} with the ingress profile (Stripe, 2 KB) ...", file=sys.stderr,
                      flush=True)
                r = ingress.measure_target(cfg, t, db if t.store == "postgres" else None, a.ingress_connections,
                                           duration)
                doc["ingress"]["targets"][t.name] = r
                if r["status"] != "ok":
                    print(f"bench: {t.name} ingress profile FAILED: {r['reason']}", file=sys.stderr)
            if not a.no_graphql and graphql.wanted(t, a.graphql_variants):
                print(f"bench: measuring {t.name} with the GraphQL profile ({gq_rows} rows) ...", file=sys.stderr,
                      flush=True)
                parse_us = (doc["graphql"]["parse"].get(t.variant) or {}).get("medianUs")
                r = graphql.measure_target(cfg, t, db if t.store == "postgres" else None, a.graphql_connections,
                                           duration, rows=gq_rows, parse_us=parse_us)
                doc["graphql"]["targets"][t.name] = r
                if r["status"] != "ok":
                    print(f"bench: {t.name} GraphQL profile FAILED: {r['reason']}", file=sys.stderr)
            if doc["forward"].get("status") == "ok" and forward.wanted(t, a.forward_variants):
                c = forward.ensure_ceiling(cfg, doc["forward"], duration)
                if c["status"] != "ok":
                    print(f"bench: the forwarding sink alone FAILED: {c['reason']}", file=sys.stderr)
                print(f"bench: measuring {t.name} with the forwarding profile ({fwd_rows} rows) ...",
                      file=sys.stderr, flush=True)
                r = forward.measure_target(cfg, t, db if t.store == "postgres" else None, a.forward_connections,
                                           duration, rows=fwd_rows)
                doc["forward"]["targets"][t.name] = r
                if r["status"] != "ok":
                    print(f"bench: {t.name} forwarding profile FAILED: {r['reason']}", file=sys.stderr)
        doc["ingress"] = ingress.finish(doc["ingress"])
        doc["graphql"] = graphql.finish(doc["graphql"])
        doc["forward"] = forward.finish(doc["forward"])

        # Ceilings.
        if "nginx" in doc["targets"]:
            doc["ceilings"]["http"] = {"target": "nginx", "rps": first_live(doc["targets"]["nginx"], "rps"),
                                       "serverCpuUsPerRequest": first_live(doc["targets"]["nginx"],
                                                                           "serverCpuUsPerRequest")}
        if not a.no_pgbench and not a.smoke:
            any_hookd = next((v["path"] for v in variants.values()), None)
            doc["ceilings"]["database"] = run_pgbench(a, cfg, db, duration, any_hookd)

        # Sweep.
        if not a.no_sweep and not a.smoke:
            doc["sweep"] = run_sweep(a, cfg, variants, db, quick)
    finally:
        try:
            cluster.stop()
        except Exception as e:  # noqa: BLE001
            notes.append(f"stopping PostgreSQL: {e}")
        try:
            redis.stop()
        except Exception as e:  # noqa: BLE001
            notes.append(f"stopping Redis: {e}")

    doc["noisy"] = doc["noisy"] or any_noisy(doc)
    doc["ratios"] = report.ratios(doc)
    doc["plots"] = []
    json_path = os.path.join(out_dir, stamp + ".json")
    plot_dir = os.path.join(out_dir, stamp)
    try:
        doc["plots"] = report.plots(doc, plot_dir)
    except Exception as e:  # noqa: BLE001
        notes.append(f"plots failed: {e}")
    problems = (jsonout.check_complete(doc) + ingress.check_complete(doc) + graphql.check_complete(doc)
                + forward.check_complete(doc))
    doc["completeness"] = problems
    jsonout.write_json(json_path, doc)
    print(report.summary(doc))
    print(f"\nbench: wrote {json_path}" + (f" and {len(doc['plots'])} plots in {plot_dir}/" if doc["plots"] else ""))
    if doc["noisy"]:
        print("bench: WARNING: taken on a busy machine (flagged noisy in the JSON): do not quote these figures",
              file=sys.stderr)
    if problems:
        print("bench: the result is incomplete:\n  " + "\n  ".join(problems[:30]), file=sys.stderr)
    if a.keep_work:
        print(f"bench: scratch kept in {work}", file=sys.stderr)
    return 1 if problems else 0


def first_live(t, key):
    for p in (t.get("live") or {}).values():
        return p.get(key)
    return None


def any_noisy(doc):
    def walk(v):
        if isinstance(v, dict):
            if v.get("noisy") is True:
                return True
            return any(walk(x) for x in v.values())
        if isinstance(v, list):
            return any(walk(x) for x in v)
        return False

    return (walk(doc.get("targets")) or walk(doc.get("sweep")) or walk(doc.get("ceilings"))
            or walk(doc.get("ingress")) or walk(doc.get("graphql")) or walk(doc.get("forward")))


def make_trainer(cfg, db, quick):
    """The PGO training run: the load mix (and the live probe) on the
    instrumented binary, SQLite and PostgreSQL when it runs; a clean SIGTERM
    exit writes the profile."""

    def train(binpath):
        secs = 4 if quick else 20
        done = []
        stores = ["sqlite"] + (["postgres"] if db else [])
        for s in stores:
            t = targets.hookd("pgo-train", s, binpath, None)
            for profile in ("paged", "reference"):
                try:
                    if s == "postgres":
                        db.ensure(cpus=cfg.db_cpus)
                    p = measure.load_point(cfg, t, "mix.lua", "mix", 100, secs,
                                           db=db if s == "postgres" else None, args=(profile, 1000),
                                           label="pgo-train")
                except Exception as e:  # noqa: BLE001 - train on what works, say what did not
                    if s == "sqlite":
                        raise
                    done.append(f"{s}/{profile} failed: {str(e)[:200]}")
                    continue
                if p.get("serverExit") not in (0, None):
                    raise builds.BuildError(f"the instrumented hookd exited {p['serverExit']}")
                done.append(f"{s}/{profile} {p['requests']} requests")
        return ", ".join(done)

    return train


def run_target(a, cfg, t, db, conns, profiles, duration, auth_ctx=None):
    out = t.describe()
    if t.binary:
        out["binary"] = {k: v for k, v in t.binary.items() if k not in ("mesonOptions", "image")}
        out["build"] = t.binary.get("mesonOptions")
    startup, mem = measure.cold_start(cfg, t, db=db if t.store == "postgres" else None,
                                      drop_caches=not a.no_drop_caches)
    out["startup"] = startup
    out["memory"] = mem
    image = (t.binary or {}).get("image")
    out["imageSizeMb"] = image.get("imageSizeMb") if image else None
    out["image"] = image or {"status": "skipped", "reason": "not a hookd build of this run"}
    if t.kind == "hookd" and t.store == "sqlite" and image and not a.no_images:
        out["container"] = measure.container_start(cfg, t, image)
        out["containerRunc"] = ({"status": "skipped", "reason": "--no-runc"} if a.no_runc
                                else measure.runc_start(cfg, t, image))
    else:
        out["container"] = {"status": "skipped", "reason": "measured for hookd's SQLite targets only"}
        out["containerRunc"] = dict(out["container"])
    tdb = db if t.store == "postgres" else None
    if not t.load:
        return out
    if t.api:
        load = {}
        run_profiles = profiles if (a.reference_variants == "all" or t.variant in a.reference_variants.split(",")
                                    or t.kind != "hookd") else [p for p in profiles if p == "paged"]
        for profile in run_profiles:
            load[profile] = {}
            for c in conns:
                load[profile][str(c)] = measure.load_point(cfg, t, "mix.lua", "mix", c, duration, db=tdb,
                                                           args=(profile, cfg.bucket_ms), label=f"mix/{profile}")
        out["load"] = load
        hwm = [p["serverHwmMb"] for pr in load.values() for p in pr.values()]
        out["memory"]["peakRssMbAfterLoad"] = max(hwm) if hwm else None
        head = load.get("paged", {}).get(str(max(conns))) or next(iter(next(iter(load.values())).values()))
        out["wrk"] = {"rps": head["rps"], "p50Ms": head["p50Ms"], "p90Ms": head["p90Ms"], "p99Ms": head["p99Ms"],
                      "connections": head["connections"], "profile": "paged" if "paged" in load else profile,
                      "note": "the reference's k6 figures: its 500-client mix"}
    live_dur = duration if cfg.duration < 30 else 30
    out["live"] = {str(a.live_connections): measure.load_point(cfg, t, "plain.lua", t.live, a.live_connections,
                                                               live_dur, db=tdb, label="live")}
    if not t.api:
        out["memory"]["peakRssMbAfterLoad"] = out["live"][str(a.live_connections)]["serverHwmMb"]
    if t.kind == "hookd" and t.api and auth_ctx and not a.no_auth and (
            a.auth_variants == "all" or t.variant in a.auth_variants.split(",")):
        if auth_ctx["redis"] is None:
            out["auth"] = {"status": "skipped", "reason": auth_ctx["reason"]}
        else:
            print(f"bench: measuring {t.name} with access control (sessions in Redis) ...", file=sys.stderr,
                  flush=True)
            out["auth"] = auth.measure_target(cfg, t, tdb, auth_ctx["redis"], a.auth_connections, duration)
            if out["auth"]["status"] != "ok":
                print(f"bench: {t.name} with access control: {out['auth']['reason']}", file=sys.stderr)
    return out


def run_pgbench(a, cfg, db, duration, hookd_path=None):
    if db is None:
        return {"status": "skipped", "reason": "no PostgreSQL cluster"}
    try:
        if db.ensure(cpus=cfg.db_cpus) or not db.psql("SELECT to_regclass('webhooks') IS NOT NULL") == "t":
            # A new cluster: hookd creates its schema at start.
            if hookd_path is None:
                raise RuntimeError("no hookd to create the schema with")
            t = targets.hookd("schema", "postgres", hookd_path, None)
            port = system.free_port()
            tmp = tempfile.mkdtemp(dir=cfg.work)
            cmd, env = t.render(port, tmp, db.url)
            p = procs.start(cmd, env=env, cwd=tmp, log=os.path.join(cfg.work, "schema.log"))
            try:
                procs.wait_ready(p, port, t.health, timeout=30)
            finally:
                procs.stop(p)
        db.truncate()
        # A realistic list: as many rows as the mix leaves behind in a few seconds.
        db.psql("INSERT INTO webhooks(source, event_type, payload, received_at) SELECT 'github', 'push', "
                "'{\"ref\":\"refs/heads/main\",\"commits\":3}', now() FROM generate_series(1, 5000)")
        q = measure.quiet_check(cfg, "pgbench")
        r = pg.pgbench(db, BENCH, a.pgbench_clients, min(duration, 60), cpus=cfg.server_cpus)
        r.update(q)
        r["status"] = "ok"
        r["note"] = "pgbench on the server CPUs (it stands in for hookd + wrk), PostgreSQL on the database CPUs"
        return r
    except Exception as e:  # noqa: BLE001
        return {"status": "failed", "reason": str(e)[:1000]}


def run_sweep(a, cfg, variants, db, quick):
    info = variants.get("release") or next(iter(variants.values()), None)
    if info is None:
        return {"status": "skipped", "reason": "no hookd variant built"}
    threads = csv_ints(a.sweep_threads or ("1,2" if quick else "1,2,4"))
    pools = csv_ints(a.sweep_pools or ("1,4" if quick else "1,2,4,8"))
    conns = csv_ints(a.sweep_connections or ("100" if quick else "100,500"))
    dur = a.sweep_duration or (3 if quick else 15)
    points = []
    stores = ["sqlite"] + (["postgres"] if db else [])
    saved = cfg.server_cpus
    if a.sweep_server_cpus:
        cfg.server_cpus = system.parse_cpulist(a.sweep_server_cpus)
    try:
        run_sweep_points(a, cfg, info, db, stores, threads, pools, conns, dur, points)
    finally:
        sweep_cpus = cfg.server_cpus
        cfg.server_cpus = saved
    return {"status": "ok", "variant": info["variant"], "durationS": dur, "serverCpus": sweep_cpus,
            "threads": threads, "pools": pools, "connections": conns, "points": points,
            "knees": report.knees(points),
            "note": "the server stays pinned to the sweep's server CPUs: threads beyond them only share those CPUs"}


def run_sweep_points(a, cfg, info, db, stores, threads, pools, conns, dur, points):
    for s in stores:
        t = targets.hookd(info["variant"], s, info["path"], info)
        for th in threads:
            for pool in (pools if s == "postgres" else [None]):
                for c in conns:
                    env = {"HOOKD_THREADS": th}
                    if pool:
                        env["HOOKD_DB_POOL"] = pool
                    try:
                        if s == "postgres":
                            db.ensure(cpus=cfg.db_cpus)
                        p = measure.load_point(cfg, t, "mix.lua", "mix", c, dur, db=db if s == "postgres" else None,
                                               args=("paged", cfg.bucket_ms), env_extra=env,
                                               label=f"sweep t={th} pool={pool}")
                    except Exception as e:  # noqa: BLE001
                        points.append({"store": s, "threads": th, "pool": pool, "connections": c,
                                       "error": str(e)[:300]})
                        continue
                    points.append({"store": s, "threads": th, "pool": pool, "connections": c,
                                   "rps": p["rps"], "p50Ms": p["p50Ms"], "p99Ms": p["p99Ms"],
                                   "non2xx": p["non2xx"], "socketErrorsTotal": p["socketErrorsTotal"],
                                   "serverCpuUsPerRequest": p["serverCpuUsPerRequest"],
                                   "dbCpuUsPerRequest": p.get("dbCpuUsPerRequest"), "noisy": p["noisy"],
                                   "foreignCpuPct": p["foreignCpuPct"]})


if __name__ == "__main__":
    sys.exit(main())
