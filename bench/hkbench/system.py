# SPDX-License-Identifier: MIT
"""Facts about the machine and how busy it is: CPU model, memory, kernel,
OS, tool and library versions, the load average, how much CPU time others
used during a measurement, and dropping the page cache."""

import os
import platform
import re
import resource
import shutil
import socket
import subprocess
import time

from . import parse

CLK_TCK = os.sysconf("SC_CLK_TCK")


def read(path, default=None):
    try:
        with open(path, encoding="utf-8", errors="replace") as f:
            return f.read()
    except OSError:
        return default


def run_out(cmd, timeout=20):
    """stdout+stderr of a short command, or None if it could not run."""
    try:
        r = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                           text=True, timeout=timeout)
        return r.stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return None


def first_line(s):
    return s.splitlines()[0].strip() if s else None


def loadavg():
    return parse.parse_loadavg(read("/proc/loadavg", "0 0 0"))


def allowed_cpus():
    return sorted(os.sched_getaffinity(0))


def cpulist(cpus):
    return ",".join(str(c) for c in cpus)


def parse_cpulist(s):
    """'0', '0,1', '0-3' -> [0, 1, 2, 3]."""
    out = []
    for part in str(s).split(","):
        part = part.strip()
        if not part:
            continue
        if "-" in part:
            a, b = part.split("-", 1)
            out.extend(range(int(a), int(b) + 1))
        else:
            out.append(int(part))
    return out


def free_port():
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def pkg_version(name):
    out = run_out(["dpkg-query", "-W", "-f=${Version}", name])
    return out if out and "no packages found" not in out else None


def machine_info(cc="cc"):
    cpuinfo = read("/proc/cpuinfo", "")
    m = re.search(r"^model name\s*:\s*(.+)$", cpuinfo, re.M)
    mem_kb = parse.parse_kb_fields(read("/proc/meminfo", "")).get("MemTotal", 0)
    osr = read("/etc/os-release", "")
    m_os = re.search(r'^PRETTY_NAME="?([^"\n]+)"?', osr, re.M)
    hyper = "hypervisor" in (re.search(r"^flags\s*:(.*)$", cpuinfo, re.M) or [None, ""])[1]
    libs = {}
    for lib, pkg in (("libuv", "libuv1-dev"), ("sqlite3", "libsqlite3-dev"), ("jansson", "libjansson-dev"),
                     ("libpq", "libpq-dev"), ("llhttp", "node-llhttp"), ("openssl", "libssl-dev"),
                     ("wrk", "wrk"), ("nginx", "nginx-light"), ("gnuplot", "gnuplot-nox"),
                     ("meson", "meson"), ("ninja", "ninja-build")):
        libs[lib] = pkg_version(pkg)
    pgv = first_line(run_out(["pg_config", "--version"]) or "")
    libs["postgresql"] = pgv
    libs["pgbench"] = first_line(run_out(["pgbench", "--version"]) or "")
    libs["podman"] = first_line(run_out(["podman", "--version"]) or "") if shutil.which("podman") else None
    return {
        "cpu": m.group(1).strip() if m else platform.processor() or "unknown",
        "cores": os.cpu_count() or 1,
        "allowedCpus": cpulist(allowed_cpus()),
        "memoryGb": round(mem_kb / 1048576, 1),
        "kernel": platform.release(),
        "os": m_os.group(1) if m_os else platform.system(),
        "virtualMachine": hyper,
        "compiler": first_line(run_out([cc, "--version"]) or "") or cc,
        "python": platform.python_version(),
        "libraries": libs,
    }


def drop_page_cache():
    """sync, then echo 3 > /proc/sys/vm/drop_caches. Returns (worked, error)."""
    os.sync()
    try:
        with open("/proc/sys/vm/drop_caches", "w") as f:
            f.write("3\n")
        return True, None
    except OSError as e:
        return False, f"{type(e).__name__}: {e.strerror or e}"


def proc_cpu_ticks(pid, children=True):
    """utime+stime of a process, all its threads included (and the
    children it has reaped when `children`); None if it is gone."""
    s = read(f"/proc/{pid}/stat")
    if s is None:
        return None
    st = parse.parse_proc_stat(s)
    t = st["utime"] + st["stime"]
    if children:
        t += st["cutime"] + st["cstime"]
    return t


def children_of(pid):
    """Direct children of pid, from /proc/*/stat."""
    kids = []
    for d in os.listdir("/proc"):
        if not d.isdigit():
            continue
        s = read(f"/proc/{d}/stat")
        if s:
            try:
                if parse.parse_proc_stat(s)["ppid"] == pid:
                    kids.append(int(d))
            except (ValueError, IndexError, parse.ParseError):
                pass
    return kids


class CpuMeter:
    """CPU time over an interval: the whole machine's (from /proc/stat), the
    processes we watch (server, database), the harness's children (wrk,
    reaped when done) and the harness itself. What remains of the machine's
    busy time is foreign: another process's work that disturbed the run."""

    def __init__(self, pids_fn=lambda: {}):
        self.pids_fn = pids_fn

    def _snap(self):
        busy, total, steal = parse.parse_cpu_times(read("/proc/stat", ""))
        procs = {}
        for name, pids in self.pids_fn().items():
            procs[name] = sum(proc_cpu_ticks(p) or 0 for p in pids)
        ch = resource.getrusage(resource.RUSAGE_CHILDREN)
        me = resource.getrusage(resource.RUSAGE_SELF)
        return {"t": time.monotonic(), "busy": busy, "total": total, "steal": steal, "procs": procs,
                "ours": ch.ru_utime + ch.ru_stime + me.ru_utime + me.ru_stime}

    def start(self):
        self.a = self._snap()
        return self

    def stop(self):
        b = self._snap()
        a = self.a
        wall = max(b["t"] - a["t"], 1e-9)
        ncpu = os.cpu_count() or 1
        procs_s = {k: (b["procs"].get(k, 0) - a["procs"].get(k, 0)) / CLK_TCK for k in b["procs"]}
        busy_s = (b["busy"] - a["busy"]) / CLK_TCK
        ours_s = sum(procs_s.values()) + (b["ours"] - a["ours"])
        foreign_s = max(0.0, busy_s - ours_s)
        return {
            "wallS": wall,
            "procCpuS": procs_s,
            "machineBusyPct": 100.0 * busy_s / (wall * ncpu),
            "foreignCpuPct": 100.0 * foreign_s / (wall * ncpu),
            "stealPct": 100.0 * (b["steal"] - a["steal"]) / CLK_TCK / (wall * ncpu),
        }


def idle_busy_pct(seconds=1.0):
    """How busy the machine is while the harness does nothing: the CPU that
    others are using right now, in percent of the whole machine."""
    m = CpuMeter().start()
    time.sleep(seconds)
    return m.stop()["foreignCpuPct"]
