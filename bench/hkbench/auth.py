# SPDX-License-Identifier: MIT
"""What access control costs (docs/auth.md), with sessions in Redis:

- exec -> the first authenticated request: an API token made with
  `hookd token create` on the empty store before the server starts, a
  session made with POST /api/sessions right after ready, then two
  GET /api/webhooks?limit=20 with the session token, each on a fresh
  connection (bench/coldstart -a): firstAuthGetMs (the first lookup in
  Redis on a new server) and secondAuthGetMs;
- the load mix with every read authenticated through Redis
  (bench/wrk/mix_auth.lua) next to the same mix with HOOKD_AUTH=off, on
  fresh servers one after the other: both req/s and their ratio.

The Redis is a throwaway one from scripts/redis.sh (start -> DIR, url DIR,
stop DIR), pinned to the database CPUs like PostgreSQL; its CPU time is
counted as its own during the loads, not as foreign noise."""

import copy
import http.client
import json
import os
import shutil
import statistics
import uuid

from . import measure, parse, procs, system


class Redis:
    def __init__(self, src, log):
        self.src = src
        self.script = os.path.join(src, "scripts", "redis.sh")
        self.log = log
        self.dir = None
        self.url = None
        self.pid = None

    def available(self):
        """(True, None) or (False, why)."""
        if not os.path.exists(self.script):
            return False, "scripts/redis.sh does not exist"
        for tool in ("redis-server", "redis-cli"):
            if not (os.access(f"/usr/bin/{tool}", os.X_OK) or shutil.which(tool)):
                return False, f"{tool} is not installed (Debian's redis-server package)"
        return True, None

    def _sh(self, *args, timeout=60):
        r = procs.run(["bash", self.script] + list(args), timeout=timeout, cwd=self.src)
        with open(self.log, "a") as f:
            # `url` prints the password: the log keeps the exit status only.
            f.write(f"$ redis.sh {args[0]} -> {r.returncode}\n{r.stderr}\n")
        if r.returncode != 0:
            raise RuntimeError(f"scripts/redis.sh {args[0]} failed: {r.stderr.strip()[-300:]}")
        return r.stdout

    def start(self, cpus=None):
        out = self._sh("start").strip().splitlines()
        if not out:
            raise RuntimeError("scripts/redis.sh start printed no directory")
        self.dir = out[-1].strip()
        url = self._sh("url", self.dir).strip().splitlines()
        self.url = url[-1].strip() if url else None
        if not self.url:
            raise RuntimeError("scripts/redis.sh url printed nothing")
        try:
            with open(os.path.join(self.dir, "redis.pid")) as f:
                self.pid = int(f.read().strip())
        except (OSError, ValueError):
            self.pid = None
        if cpus and self.pid:
            procs.run(["taskset", "-a", "-p", "-c", system.cpulist(cpus), str(self.pid)], timeout=10)
        return self.url

    def pids(self):
        return [self.pid] if self.pid and os.path.exists(f"/proc/{self.pid}") else []

    def version(self):
        out = system.run_out(["redis-server", "--version"]) or ""
        for word in out.split():
            if word.startswith("v="):
                return word[2:]
        return out.strip() or None

    def stop(self):
        if self.dir:
            try:
                self._sh("stop", self.dir)
            finally:
                self.dir = None
                self.pid = None


def create_token(cmd, env, cwd, name=None):
    """`hookd token create` on the store the rendered env names; the token."""
    name = name or f"bench-{uuid.uuid4().hex[:12]}"
    r = procs.run([cmd[0], "token", "create", "--name", name, "--scope", "read"], timeout=60, env=env, cwd=cwd)
    tok = r.stdout.strip()
    if r.returncode != 0 or not tok.startswith("hkd_"):
        raise RuntimeError(f"hookd token create exited {r.returncode}: {r.stderr.strip()[-300:]}")
    return tok


def session_from(body):
    """The session token in POST /api/sessions' JSON answer."""
    tok = json.loads(body).get("token")
    if not isinstance(tok, str) or not tok.startswith("hks_"):
        raise ValueError(f"no session token in {body[:120]!r}")
    return tok


def new_session(port, api_token, timeout=5.0):
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=timeout)
    try:
        c.request("POST", "/api/sessions", body=b"", headers={"Authorization": f"Bearer {api_token}"})
        r = c.getresponse()
        body = r.read().decode("utf-8", "replace")
    finally:
        c.close()
    if r.status != 201:
        raise RuntimeError(f"POST /api/sessions answered {r.status}: {body[:200]}")
    return session_from(body)


def auth_target(t, redis_url):
    """The target with access control on and sessions in Redis."""
    a = copy.copy(t)
    a.env = dict(t.env, HOOKD_AUTH="on", HOOKD_REDIS_URL=redis_url)
    a.name = t.name + "-auth"
    return a


def _median(xs):
    xs = [x for x in xs if x is not None]
    return statistics.median(xs) if xs else None


def summarize_start(runs):
    """The startup figures from bench/coldstart -a runs: medians over the
    runs, and the first run's (cold) values. Raises RuntimeError when a run
    did not get its session and two 200s."""
    if not runs:
        raise RuntimeError("coldstart -a printed no run")
    for r in runs:
        got = (r.get("sessionStatus"), r.get("firstAuthGetStatus"), r.get("secondAuthGetStatus"))
        if got != (201, 200, 200):
            raise RuntimeError(f"run {r.get('run')}: POST /api/sessions, GET, GET answered {got}, "
                               "expected (201, 200, 200)")
    first = runs[0]
    return {
        "firstAuthGetMs": _median([r.get("firstAuthGetMs") for r in runs]),
        "secondAuthGetMs": _median([r.get("secondAuthGetMs") for r in runs]),
        "execToFirstAuthGetMs": _median([r.get("execToFirstAuthGetMs") for r in runs]),
        "sessionCreateMs": _median([r.get("sessionMs") for r in runs]),
        "readyMs": _median([r.get("readyMs") for r in runs]),
        "firstRun": {k: first.get(k) for k in ("readyMs", "sessionMs", "firstAuthGetMs", "secondAuthGetMs",
                                                  "execToFirstAuthGetMs")},
        "runs": runs,
    }


def start_figures(cfg, t, db, redis):
    """cfg.cold_runs starts of the target with access control on (one API
    token made before the first), each timed by coldstart -a."""
    port = system.free_port()
    tmp, cmd, env = measure._render(cfg, t, port, db)
    if t.fresh_store:
        t.fresh_store(tmp, env, db)
    token = create_token(cmd, env, t.cwd or tmp)
    q = measure.quiet_check(cfg, f"{t.name} start to the first authenticated GET")
    argv = procs.taskset(cfg.load_cpus, [cfg.coldstart, "-p", str(port), "-u", t.health, "-s", "100",
                                         "-c", str(cfg.server_cpus[0]), "-t", "30000", "-o",
                                         "-n", str(cfg.cold_runs), "-a", token, "--"] + cmd)
    r = procs.run(argv, timeout=60 + cfg.cold_runs * 40, env=env, cwd=t.cwd or tmp)
    if r.returncode != 0:
        raise RuntimeError(f"coldstart -a failed: {r.stderr.strip()[-300:]}")
    out = summarize_start(parse.parse_coldstart(r.stdout))
    out["path"] = "/api/webhooks?limit=20"
    out.update(q)
    return out


def load_pair(cfg, t, db, redis, conns, duration):
    """The paged mix at `conns` connections: HOOKD_AUTH=off, then every read
    with a session in Redis; fresh servers, one right after the other."""
    off = measure.load_point(cfg, t, "mix.lua", "mix", conns, duration, db=db, args=("paged", cfg.bucket_ms),
                             label="auth off/mix")
    at = auth_target(t, redis.url)
    state = {}

    def pre_start(cmd, env, cwd):
        state["token"] = create_token(cmd, env, cwd)

    def post_ready(port):
        return [new_session(port, state["token"])]

    on = measure.load_point(cfg, at, "mix_auth.lua", "mix", conns, duration, db=db,
                            args=("paged", cfg.bucket_ms), label="auth on (Redis)/mix", pre_start=pre_start,
                            post_ready=post_ready, extra_pids=lambda: {"redis": redis.pids()})
    ratio = on["rps"] / off["rps"] if off.get("rps") else None
    return {"connections": conns, "profile": "paged", "off": off, "on": on, "rpsRatio": ratio,
            "note": "on: HOOKD_AUTH=on, HOOKD_REDIS_URL, every GET with Authorization: Bearer <session> "
                    "(bench/wrk/mix_auth.lua); off: HOOKD_AUTH=off, bench/wrk/mix.lua"}


def measure_target(cfg, t, db, redis, conns, duration):
    """targets[...]["auth"]: status ok with the figures, or failed with why."""
    out = {"status": "ok", "sessions": "redis", "redisVersion": redis.version()}
    try:
        out["startup"] = start_figures(cfg, auth_target(t, redis.url), db, redis)
        out["load"] = load_pair(cfg, t, db, redis, conns, duration)
    except Exception as e:  # noqa: BLE001 - recorded, the run goes on
        return {"status": "failed", "reason": f"{type(e).__name__}: {e}"[:1000], "sessions": "redis"}
    return out
