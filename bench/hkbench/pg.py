# SPDX-License-Identifier: MIT
"""The throwaway PostgreSQL cluster, through the project's scripts/pg.sh
(start -> DIR, url DIR, stop DIR), and the database ceiling: pgbench running hookd's own
statements (bench/pgbench/*.sql). The cluster's processes are pinned to the
database CPUs, and their CPU time is summed for the CPU-per-request figures."""

import os
import subprocess

from . import parse, procs, system


class Cluster:
    def __init__(self, src, log):
        self.src = src
        self.script = os.path.join(src, "scripts", "pg.sh")
        self.log = log
        self.url = None
        self.postmaster = None
        self.started = False
        self.dir = None

    def available(self):
        """(True, None) or (False, why)."""
        if not os.path.exists(self.script):
            return False, "scripts/pg.sh does not exist yet (issue 3)"
        for tool in ("psql", "pgbench"):
            if not system.run_out(["which", tool]):
                return False, f"{tool} is not installed"
        return True, None

    def _sh(self, *args, timeout=180):
        r = procs.run(["bash", self.script] + list(args), timeout=timeout, cwd=self.src)
        with open(self.log, "a") as f:
            f.write(f"$ pg.sh {' '.join(args)} -> {r.returncode}\n{r.stdout}{r.stderr}\n")
        if r.returncode != 0:
            raise RuntimeError(f"scripts/pg.sh {' '.join(args)} failed: {(r.stderr or r.stdout).strip()[-300:]}")
        return r.stdout

    def start(self, cpus=None):
        # pg.sh start prints the cluster's directory; url/stop take it.
        out = self._sh("start").strip().splitlines()
        if not out:
            raise RuntimeError("scripts/pg.sh start printed no directory")
        self.dir = out[-1].strip()
        self.started = True
        out = self._sh("url", self.dir).strip().splitlines()
        self.url = out[-1].strip() if out else None
        if not self.url:
            raise RuntimeError("scripts/pg.sh url printed nothing")
        self.postmaster = self._find_postmaster()
        if cpus and self.postmaster:
            self.pin(cpus)
        return self.url

    def ensure(self, cpus=None):
        """Start the cluster again if it went away (on a shared machine
        something may stop it); returns a note when it had to."""
        try:
            self.psql("SELECT 1", timeout=20)
            return None
        except (RuntimeError, OSError, subprocess.SubprocessError):
            pass
        old = self.url
        try:
            self.stop()
        except RuntimeError:
            pass
        self.start(cpus=cpus)
        return f"PostgreSQL at {old} went away; restarted at {self.url}"

    def stop(self):
        if self.started:
            try:
                self._sh("stop", self.dir)
            finally:
                self.started = False

    def psql(self, sql, timeout=60):
        r = procs.run(["psql", "-X", "-v", "ON_ERROR_STOP=1", "-Atq", "-d", self.url, "-c", sql], timeout=timeout)
        if r.returncode != 0:
            raise RuntimeError(f"psql: {r.stderr.strip()[-300:]}")
        return r.stdout.strip()

    def _find_postmaster(self):
        # Any backend's parent is the postmaster; ours is the simplest to find.
        try:
            pid = int(self.psql("SELECT pg_backend_pid()"))
        except (RuntimeError, ValueError):
            return None
        s = system.read(f"/proc/{pid}/stat")
        return parse.parse_proc_stat(s)["ppid"] if s else None

    def pids(self):
        """The postmaster and every process it forked (backends, walwriter...)."""
        if not self.postmaster:
            return []
        return [self.postmaster] + system.children_of(self.postmaster)

    def pin(self, cpus):
        """Pin the postmaster and its children; backends forked later inherit."""
        for pid in self.pids():
            subprocess.run(["taskset", "-a", "-p", "-c", system.cpulist(cpus), str(pid)],
                           stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)

    def settings(self):
        out = {}
        for k in ("server_version", "synchronous_commit", "fsync", "shared_buffers", "max_connections",
                  "wal_level"):
            try:
                out[k] = self.psql(f"SHOW {k}")
            except RuntimeError:
                out[k] = None
        return out

    def truncate(self):
        """Empty hookd's table between load points (the schema stays)."""
        # A new cluster has no table yet: hookd creates it when it starts.
        self.psql("DO $$ BEGIN IF to_regclass('webhooks') IS NOT NULL THEN "
                  "TRUNCATE webhooks RESTART IDENTITY; END IF; END $$")


def pgbench(cluster, bench_dir, clients, duration_s, cpus=None, threads=1):
    """hookd's own statements at `clients` clients: 60 list : 25 insert, the
    database part of the load mix (system/info never reaches the database)."""
    insert = os.path.join(bench_dir, "pgbench", "insert.sql")
    listq = os.path.join(bench_dir, "pgbench", "list.sql")
    cmd = ["pgbench", "-n", "-M", "prepared", "-c", str(clients), "-j", str(threads), "-T", str(duration_s),
           "-f", f"{listq}@60", "-f", f"{insert}@25", cluster.url]
    meter = system.CpuMeter(lambda: {"db": cluster.pids()}).start()
    r = procs.run(cmd, timeout=duration_s + 60, cpus=cpus)
    m = meter.stop()
    if r.returncode != 0:
        raise RuntimeError(f"pgbench failed: {(r.stderr or r.stdout).strip()[-400:]}")
    out = parse.parse_pgbench(r.stdout)
    out["clients"] = clients
    out["durationS"] = duration_s
    out["command"] = " ".join(cmd)
    if out.get("transactions"):
        out["dbCpuUsPerTransaction"] = m["procCpuS"].get("db", 0) / out["transactions"] * 1e6
    out["foreignCpuPct"] = m["foreignCpuPct"]
    return out
