# SPDX-License-Identifier: MIT
"""The measurements: cold start (bench/coldstart), one wrk load point on a
freshly started server, the container start (podman run, and runc run on an
OCI bundle), and the machine's quietness around each of them.

Method on a small VM (2 vCPUs that slow each other): the server is pinned to
the server CPUs, wrk and the cold-start poller to the load CPUs, PostgreSQL
to the database CPUs. Before each measurement the harness sits idle for a
moment and measures how busy the machine is without it; a measurement taken
when others were busy is flagged "noisy" (and warned about on stderr)."""

import json
import os
import shutil
import statistics
import sys
import tarfile
import time

from . import parse, procs, system


class Config:
    """Everything a measurement needs to know about the run."""

    def __init__(self, **kw):
        self.server_cpus = [0]
        self.load_cpus = [1]
        self.db_cpus = [1]
        self.duration = 60
        self.cold_runs = 5
        self.settle_ms = 1000
        self.wrk_threads = 1
        self.wrk_timeout = "5s"
        self.early_s = 5
        self.late_from_s = 25
        self.bucket_ms = 1000
        self.noise_pct = 10.0
        self.quiet_wait_s = 30
        self.idle_probe_s = 1.0
        self.bench_dir = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
        self.coldstart = None
        self.work = "/tmp"
        self.log = sys.stderr
        self.__dict__.update(kw)


def warn(cfg, msg):
    print(f"bench: WARNING: {msg}", file=sys.stderr, flush=True)


def quiet_check(cfg, what):
    """Wait (bounded) for the machine to be quiet; returns the figures that
    go with the measurement: load1 and how busy others kept the machine."""
    deadline = time.monotonic() + cfg.quiet_wait_s
    busy = system.idle_busy_pct(cfg.idle_probe_s)
    while busy > cfg.noise_pct and time.monotonic() < deadline:
        time.sleep(2)
        busy = system.idle_busy_pct(cfg.idle_probe_s)
    la = system.loadavg()
    noisy = busy > cfg.noise_pct
    if noisy:
        warn(cfg, f"{what}: others keep {busy:.0f}% of the machine busy (threshold {cfg.noise_pct:.0f}%); "
                  "this figure is flagged noisy")
    return {"load1Before": la["load1"], "idleBusyPctBefore": busy, "noisy": noisy}


def _median(xs):
    xs = [x for x in xs if x is not None]
    return statistics.median(xs) if xs else None


def _prep_tmp(cfg, target):
    tmp = os.path.join(cfg.work, target.name)
    os.makedirs(tmp, exist_ok=True)
    return tmp


def _render(cfg, target, port, db):
    tmp = _prep_tmp(cfg, target)
    if hasattr(target, "write_config"):
        target.write_config(port, tmp)
    cmd, env = target.render(port, tmp, db.url if db else None)
    return tmp, cmd, env


def cold_start(cfg, target, db=None, drop_caches=True):
    """cfg.cold_runs starts of the target, the first after dropping the page
    cache (when the machine allows it), the others warm."""
    port = system.free_port()
    tmp, cmd, env = _render(cfg, target, port, db)
    if target.fresh_store:
        target.fresh_store(tmp, env, db)
    base = [cfg.coldstart, "-p", str(port), "-u", target.health, "-s", str(cfg.settle_ms),
            "-c", str(cfg.server_cpus[0]), "-t", "30000", "-o"]
    if target.api:
        base.append("-f")
    q = quiet_check(cfg, f"{target.name} cold start")
    dropped, drop_err = (False, "not attempted")
    if drop_caches:
        dropped, drop_err = system.drop_page_cache()
    runs = []
    for n, label in ((1, "cold"), (cfg.cold_runs - 1, "warm")):
        if n <= 0:
            continue
        argv = procs.taskset(cfg.load_cpus, base[:1] + ["-n", str(n)] + base[1:] + ["--"] + cmd)
        r = procs.run(argv, timeout=60 + n * 40, env=env, cwd=target.cwd or tmp)
        if r.returncode != 0:
            raise RuntimeError(f"coldstart failed: {r.stderr.strip()[-300:]}")
        for run in parse.parse_coldstart(r.stdout):
            run["run"] = len(runs)
            run["kind"] = label
            # The harness's own parser decides what the line means.
            run["appStartMs"] = parse.parse_started_line(run.get("startedLine"))
            runs.append(run)
    cold = runs[0]
    warm = runs[1:]
    out = {
        "coldStartMs": cold["readyMs"],
        "appColdStartMs": cold.get("appStartMs"),
        "warmStartMedianMs": _median([r["readyMs"] for r in warm]) if warm else None,
        "medianMs": _median([r["readyMs"] for r in runs]),
        "minMs": min(r["readyMs"] for r in runs),
        "appStartMedianMs": _median([r.get("appStartMs") for r in runs]),
        "pageCacheDropped": dropped,
        "pageCacheDropError": drop_err,
        "healthPath": target.health,
        "runs": runs,
    }
    out.update(q)
    if target.api:
        out["firstPostMs"] = cold.get("firstPostMs")
        out["firstPostStatus"] = cold.get("firstPostStatus")
        out["firstGetMs"] = cold.get("firstGetMs")
        out["firstGetStatus"] = cold.get("firstGetStatus")
        out["firstPostMedianMs"] = _median([r.get("firstPostMs") for r in runs])
        out["firstGetMedianMs"] = _median([r.get("firstGetMs") for r in runs])
        # The same requests in steady state (nine more after the first, per
        # run): what the first one costs beyond them.
        out["steadyPostMs"] = _median([r.get("steadyPostMs") for r in runs])
        out["steadyGetMs"] = _median([r.get("steadyGetMs") for r in runs])
    mem = {
        "rssMb": _median([r["rssKb"] for r in runs]) / 1024,
        "pssMb": _median([r["pssKb"] for r in runs]) / 1024,
        "ussMb": _median([r["ussKb"] for r in runs]) / 1024,
        "afterMs": cfg.settle_ms,
    }
    return out, mem


def _exit_str(code):
    return f"signal {-code}" if code is not None and code < 0 else f"status {code}"


def _proc_kb(pid, field):
    return parse.parse_kb_fields(system.read(f"/proc/{pid}/status", "")).get(field)


def point_figures(cfg, name, label, p, m, conns, path, duration, db, extra_pids, q, rss, alive, code, log):
    """A load point's figures, added to wrk's parsed output `p` from the
    machine measurement `m`: CPU per request (server, database, extra
    processes), memory, noise flags, warm-up windows. Raises when the
    server died during the load."""
    rss_before, rss_after, hwm = rss
    n = max(p["requests"], 1)
    p.update({
        "connections": conns,
        "path": path,
        "serverCpuS": m["procCpuS"].get("server", 0.0),
        "serverCpuUsPerRequest": m["procCpuS"].get("server", 0.0) / n * 1e6,
        "machineBusyPct": m["machineBusyPct"],
        "foreignCpuPct": m["foreignCpuPct"],
        "stealPct": m["stealPct"],
        "serverRssMbBefore": (rss_before or 0) / 1024,
        "serverRssMbAfter": (rss_after or 0) / 1024,
        "serverHwmMb": (hwm or 0) / 1024,
        "serverAliveAfter": alive,
        "serverExit": code,
    })
    if db:
        p["dbCpuS"] = m["procCpuS"].get("db", 0.0)
        p["dbCpuUsPerRequest"] = p["dbCpuS"] / n * 1e6
    for pname in (extra_pids() if extra_pids else {}):
        p[f"{pname}CpuS"] = m["procCpuS"].get(pname, 0.0)
        p[f"{pname}CpuUsPerRequest"] = p[f"{pname}CpuS"] / n * 1e6
    p.update(q)
    if m["foreignCpuPct"] > cfg.noise_pct * 2:
        p["noisy"] = True
        warn(cfg, f"{name} {label} c={conns}: {m['foreignCpuPct']:.0f}% of the machine went to other "
                  "processes during the run; flagged noisy")
    if "perBucket" in p:
        e, late = parse.warmup_windows(p["perBucket"], p["bucketMs"], p["durationS"], cfg.early_s, cfg.late_from_s)
        p["rpsEarly"], p["rpsLate"] = e, late
        p["earlyWindowS"] = [0, cfg.early_s]
        p["lateWindowS"] = [cfg.late_from_s, duration]
    if not alive:
        raise RuntimeError(f"{name} died during the load (exit {code}); log {log}")


def load_point(cfg, target, script, path, conns, duration, db=None, args=(), env_extra=None, label="",
               pre_start=None, post_ready=None, extra_pids=None):
    """One wrk run of `duration` s at `conns` connections on a freshly
    started server with an empty store. Returns the point's figures.
    pre_start(cmd, env, tmp) runs on the empty store before the server
    starts; post_ready(port) once it answers, returning more script
    arguments; extra_pids() -> {name: [pid...]}: other processes the run
    uses (Redis), whose CPU is theirs, not foreign."""
    port = system.free_port()
    tmp, cmd, env = _render(cfg, target, port, db)
    env.update(env_extra or {})
    if target.fresh_store:
        target.fresh_store(tmp, env, db)
    if pre_start:
        pre_start(cmd, env, target.cwd or tmp)
    log = os.path.join(cfg.work, f"{target.name}.server.log")
    server = procs.start(cmd, env=env, cwd=target.cwd or tmp, log=log, cpus=cfg.server_cpus)
    try:
        procs.wait_ready(server, port, target.health, timeout=30)
        if post_ready:
            args = tuple(args) + tuple(post_ready(port))
        q = quiet_check(cfg, f"{target.name} {label} c={conns}")
        rss_before = _proc_kb(server.pid, "VmRSS")
        # "mix": the script picks every request's path itself.
        url = f"http://127.0.0.1:{port}{'/' if path == 'mix' else path}"
        wrk = ["wrk", "-t", str(min(cfg.wrk_threads, conns)), "-c", str(conns), "-d", f"{duration}s",
               "--timeout", cfg.wrk_timeout, "--latency", "-s", os.path.join(cfg.bench_dir, "wrk", script), url]
        if args:
            wrk += ["--"] + [str(a) for a in args]
        pids = lambda: dict({"server": [server.pid], "db": db.pids() if db else []},
                            **(extra_pids() if extra_pids else {}))
        meter = system.CpuMeter(pids).start()
        r = procs.run(wrk, timeout=duration + 60, cpus=cfg.load_cpus)
        m = meter.stop()
        hwm = _proc_kb(server.pid, "VmHWM")
        rss_after = _proc_kb(server.pid, "VmRSS")
        alive = server.poll() is None
    except BaseException as e:
        gone = server.poll()
        procs.stop(server)
        if gone is not None and isinstance(e, Exception):  # not an interrupt
            raise RuntimeError(f"{target.name} exited ({_exit_str(gone)}) before or during the load; "
                               f"log {log}") from None
        raise
    code = procs.stop(server)
    if r.returncode != 0:
        raise RuntimeError(f"wrk exited {r.returncode}: {r.stderr.strip()[-300:]}; the server "
                           + ("was still running" if alive else f"had exited ({_exit_str(code)})"))
    try:
        p = parse.parse_wrk_json(r.stdout)
        p["parsedFrom"] = "lua"
    except parse.ParseError:
        p = parse.parse_wrk_text(r.stdout)
        p["parsedFrom"] = "text"
    point_figures(cfg, target.name, label, p, m, conns, path, duration, db, extra_pids, q,
                  (rss_before, rss_after, hwm), alive, code, log)
    return p


def container_start(cfg, target, image):
    """exec of `podman run` to the first 200, like the reference's docker
    run: the image is copied into podman's storage under a tag of the
    harness's own (localhost/hookd-bench:VARIANT), run cfg.cold_runs times,
    and removed again. Returns a dict with status and, when it ran,
    coldStartMs (first run) and medianMs."""
    if not shutil.which("podman"):
        return {"status": "skipped", "reason": "podman not installed"}
    if not image or image.get("status") != "built":
        return {"status": "skipped", "reason": (image or {}).get("reason", "image not built")}
    tag = f"localhost/hookd-bench:{target.variant}"
    # runc (crun fails here) and ulimits under the sandbox's hard limit: the
    # project's containers.conf, unless the caller chose one.
    conf = os.environ.get("CONTAINERS_CONF") or os.path.join(
        os.path.dirname(os.path.abspath(__file__)), "..", "..", "deploy", "podman", "containers.conf")
    penv = {"CONTAINERS_CONF": os.path.normpath(conf)}
    r = procs.run(["skopeo", "copy", "--quiet", f"docker-archive:{image['dockerArchive']}",
                   f"containers-storage:{tag}"], timeout=300, env=penv)
    if r.returncode != 0:
        return {"status": "failed", "reason": "skopeo copy: " + (r.stderr or r.stdout).strip()[-300:]}
    try:
        cpu = str(cfg.server_cpus[0])
        pre = procs.run(["podman", "run", "--rm", "--cpuset-cpus", cpu, tag, "--version"], timeout=120, env=penv)
        if pre.returncode != 0:
            return {"status": "failed", "reason": "podman run: " + (pre.stderr or pre.stdout).strip()[-300:]}
        port = system.free_port()
        cmd = ["podman", "run", "--rm", "--cpuset-cpus", cpu, "-p", f"127.0.0.1:{port}:8080",
               "-e", "HOOKD_SQLITE_PATH=/data/hookd.db", tag]
        argv = procs.taskset(cfg.load_cpus, [cfg.coldstart, "-p", str(port), "-u", target.health, "-n",
                                             str(cfg.cold_runs), "-s", "200", "-t", "60000", "--"] + cmd)
        r = procs.run(argv, timeout=120 + cfg.cold_runs * 60, env=penv)
        if r.returncode != 0:
            return {"status": "failed", "reason": "coldstart: " + r.stderr.strip()[-300:]}
        runs = parse.parse_coldstart(r.stdout)
        return {"status": "ok", "tag": tag, "coldStartMs": runs[0]["readyMs"],
                "medianMs": _median([x["readyMs"] for x in runs]),
                "runs": [{"run": x["run"], "readyMs": x["readyMs"]} for x in runs],
                "note": "podman run --rm --cpuset-cpus SERVER_CPU to the first 200; memory is the native figure"}
    finally:
        procs.run(["podman", "rmi", "-f", tag], timeout=120, env=penv)


# The descriptor limits deploy/podman/containers.conf gives podman's
# containers, so that both container figures start hookd alike.
RUNC_NOFILE = 16384


def runc_config(config, port, data_dir, cpus):
    """The config.json umoci unpack wrote, changed for the measurement (a new
    dict): no network namespace, so hookd listens on the host's loopback at
    `port` (a namespace would need a veth and routes set up by hand, which
    is podman's work, not the container's start); `data_dir` bind-mounted
    at /data (a fresh SQLite directory per run, as podman's --rm container
    gets); no terminal (coldstart reads nothing from it); pinned to `cpus`
    like podman's --cpuset-cpus; the image's user, entrypoint, env and
    working directory kept."""
    c = json.loads(json.dumps(config))
    proc = c["process"]
    proc["terminal"] = False
    env = [e for e in proc.get("env", []) if not e.startswith(("PORT=", "HOOKD_HOST="))]
    proc["env"] = env + [f"PORT={port}", "HOOKD_HOST=127.0.0.1"]
    proc["rlimits"] = [r for r in proc.get("rlimits", []) if r.get("type") != "RLIMIT_NOFILE"] + [
        {"type": "RLIMIT_NOFILE", "hard": RUNC_NOFILE, "soft": RUNC_NOFILE}]
    linux = c.setdefault("linux", {})
    linux["namespaces"] = [n for n in linux.get("namespaces", []) if n.get("type") != "network"]
    linux.setdefault("resources", {})["cpu"] = {"cpus": ",".join(map(str, cpus))}
    c["mounts"] = [m for m in c.get("mounts", []) if m.get("destination") != "/data"] + [
        {"destination": "/data", "type": "bind", "source": data_dir, "options": ["rbind", "rw"]}]
    return c


def _oci_archive(image):
    """The oci-archive beside the image's docker-archive (scripts/image.sh
    writes both), or None."""
    docker = image.get("dockerArchive") or ""
    oci = docker[: -len(".docker.tar")] + ".oci.tar" if docker.endswith(".docker.tar") else None
    return oci if oci and os.path.exists(oci) else None


def runc_start(cfg, target, image):
    """`runc run` to the first 200, without a container engine: the image's
    oci-archive unpacked by umoci into an OCI bundle (once), its config
    changed by runc_config, then cfg.cold_runs runs of
    `runc run --bundle BUNDLE ID` under bench/coldstart, each with a fresh
    /data. What podman adds on top of this (its own start, storage,
    conmon, the network namespace and port forwarding) is the difference
    from the podman figure. Returns a dict with status and, when it ran,
    coldStartMs (first run), medianMs and the runs."""
    for tool in ("runc", "umoci"):
        if not shutil.which(tool):
            return {"status": "skipped", "reason": f"{tool} not installed (scripts/deps.sh bench)"}
    if os.geteuid() != 0:
        return {"status": "skipped", "reason": "runc runs a bundle unpacked by root only here (no rootless "
                                               "bundle: umoci unpack --rootless and a user namespace)"}
    if not image or image.get("status") != "built":
        return {"status": "skipped", "reason": (image or {}).get("reason", "image not built")}
    archive = _oci_archive(image)
    if not archive or not image.get("tag"):
        return {"status": "skipped", "reason": "no oci-archive beside the image's docker-archive"}
    work = os.path.join(cfg.work, f"runc-{target.variant}")
    shutil.rmtree(work, ignore_errors=True)
    layout, bundle, data = (os.path.join(work, x) for x in ("layout", "bundle", "data"))
    os.makedirs(layout)
    with tarfile.open(archive) as tar:
        # The archive is scripts/image.sh's own; "data" where Python has it.
        tar.extractall(layout, **({"filter": "data"} if hasattr(tarfile, "data_filter") else {}))
    r = procs.run(["umoci", "unpack", "--image", f"{layout}:{image['tag']}", bundle], timeout=300)
    if r.returncode != 0:
        return {"status": "failed", "reason": "umoci unpack: " + (r.stderr or r.stdout).strip()[-300:]}
    cid = f"hookd-bench-{os.getpid()}-{target.variant}"
    path = os.path.join(bundle, "config.json")
    with open(path) as f:
        base = json.load(f)
    q = quiet_check(cfg, f"{target.name} runc run")
    runs = []
    try:
        for n in range(cfg.cold_runs):
            # A fresh /data per run: owned by the image's user, as in the image.
            shutil.rmtree(data, ignore_errors=True)
            os.makedirs(data, mode=0o750)
            user = base["process"].get("user", {})
            os.chown(data, user.get("uid", 0), user.get("gid", 0))
            port = system.free_port()
            with open(path, "w") as f:
                json.dump(runc_config(base, port, data, cfg.server_cpus), f, indent=1)
            argv = procs.taskset(cfg.load_cpus, [cfg.coldstart, "-p", str(port), "-u", target.health, "-n", "1",
                                                 "-s", "200", "-t", "60000", "--", "runc", "run", "--bundle",
                                                 bundle, cid])
            try:
                r = procs.run(argv, timeout=120)
            finally:
                # runc run removes the container when hookd exits (it
                # forwards SIGTERM); after a SIGKILL of runc it would stay.
                procs.run(["runc", "delete", "--force", cid], timeout=60)
            if r.returncode != 0:
                return {"status": "failed", "reason": "coldstart: " + r.stderr.strip()[-300:]}
            run = parse.parse_coldstart(r.stdout)[0]
            runs.append({"run": n, "readyMs": run["readyMs"], "exit": run.get("exit")})
    finally:
        shutil.rmtree(work, ignore_errors=True)
    out = {"status": "ok", "bundle": "umoci unpack of " + os.path.basename(archive),
           "coldStartMs": runs[0]["readyMs"], "medianMs": _median([x["readyMs"] for x in runs]), "runs": runs,
           "note": "runc run --bundle to the first 200, pinned to SERVER_CPU; no network namespace (hookd on "
                   "the host's loopback), a fresh /data per run; memory is the native figure"}
    out.update(q)
    return out
