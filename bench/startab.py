#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Start-up A/B: several servers started in turn, round after round, with
bench/coldstart (exec -> first 200 of the health path, "started in", the
first POST and GET after ready and their steady-state medians, RSS/PSS/USS),
so that a slow spell of the machine falls on all of them alike. Medians per
server over every run.

  bench/startab.py --coldstart build/coldstart --rounds 4 --runs 5 \\
      [--database-url URL] NAME=BINARY [NAME=BINARY ...]

Without --database-url each hookd gets a SQLite file of its own (kept across
its runs, as a restarted service keeps its volume); a NAME starting with
"floor" is started as bench/floor.c is (health path /, no API requests).
Servers get PORT, HOOKD_HOST=127.0.0.1, HOOKD_AUTH=off and, with a URL,
DATABASE_URL. The server runs pinned to --server-cpu, the probe to
--load-cpu."""

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile

FIELDS = [("ready", "readyMs"), ("app", "appStartMs"), ("post", "firstPostMs"), ("get", "firstGetMs"),
          ("stPost", "steadyPostMs"), ("stGet", "steadyGetMs")]


def main(argv=None):
    a = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    a.add_argument("--coldstart", default="build/coldstart")
    a.add_argument("--rounds", type=int, default=4)
    a.add_argument("--runs", type=int, default=5, help="starts per server per round")
    a.add_argument("--database-url")
    a.add_argument("--port", type=int, default=18099)
    a.add_argument("--server-cpu", default="0")
    a.add_argument("--load-cpu", default="1")
    a.add_argument("--json", help="write every run here")
    a.add_argument("servers", nargs="+", metavar="NAME=BINARY")
    args = a.parse_args(argv)
    servers = []
    for s in args.servers:
        name, _, path = s.partition("=")
        if not path or not os.access(path, os.X_OK):
            a.error(f"{s}: want NAME=BINARY, an executable")
        servers.append((name, path))
    tmp = tempfile.mkdtemp(prefix="hookd-startab-")
    runs = {name: [] for name, _ in servers}
    for _ in range(args.rounds):
        for name, path in servers:
            env = dict(os.environ, PORT=str(args.port), HOOKD_HOST="127.0.0.1", HOOKD_AUTH="off",
                       HOOKD_LOG_LEVEL="info")
            floor = name.startswith("floor")
            if args.database_url:
                env["DATABASE_URL"] = args.database_url
            else:
                env["HOOKD_SQLITE_PATH"] = os.path.join(tmp, name + ".db")
            probe = ["-u", "/", "-o"] if floor else ["-u", "/q/health/ready", "-o", "-f"]
            cmd = ["taskset", "-c", args.load_cpu, args.coldstart, "-p", str(args.port)] + probe + \
                ["-s", "300", "-c", args.server_cpu, "-t", "30000", "-n", str(args.runs), "--", path]
            r = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=600)
            if r.returncode != 0:
                print(f"startab: {name}: {r.stderr.strip()[-300:]}", file=sys.stderr)
            for line in r.stdout.splitlines():
                if line.startswith("{"):
                    runs[name].append(json.loads(line))

    def med(name, key):
        xs = [x[key] for x in runs[name] if isinstance(x.get(key), (int, float)) and x[key] >= 0]
        return statistics.median(xs) if xs else None

    def cell(v, w=7):
        return f"{v:{w}.2f}" if v is not None else f"{'-':>{w}}"

    print(f"{'':12}" + "".join(f"{h:>7}" for h, _ in FIELDS) + f"{'rssMB':>7}{'pssMB':>7}{'ussMB':>7}{'n':>4}")
    for name, _ in servers:
        mem = [med(name, k) for k in ("rssKb", "pssKb", "ussKb")]
        print(f"{name:12}" + "".join(cell(med(name, k)) for _, k in FIELDS) +
              "".join(cell(m / 1024 if m is not None else None) for m in mem) + f"{len(runs[name]):4}")
    if args.json:
        with open(args.json, "w") as f:
            json.dump(runs, f)
    return 0


if __name__ == "__main__":
    sys.exit(main())
