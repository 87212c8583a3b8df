# SPDX-License-Identifier: MIT
"""Starting and stopping the processes under test. Every process started
here is registered and stopped at exit (normal, exception or SIGINT/SIGTERM),
so a benchmark never leaves a server behind. Every wait is bounded."""

import atexit
import http.client
import os
import signal
import subprocess
import time

_live = []


def cleanup():
    """Stop every process started here that is still running."""
    for p in list(_live):
        stop(p, timeout=5)


atexit.register(cleanup)


def _on_signal(signum, frame):
    cleanup()
    raise SystemExit(128 + signum)


def install_signal_handlers():
    signal.signal(signal.SIGTERM, _on_signal)
    signal.signal(signal.SIGINT, _on_signal)


def taskset(cpus, cmd):
    """cmd pinned to `cpus` (a list) with taskset; cmd unchanged when None."""
    if not cpus:
        return list(cmd)
    return ["taskset", "-c", ",".join(map(str, cpus))] + list(cmd)


def start(cmd, env=None, cwd=None, log=None, cpus=None):
    """Start cmd (pinned to cpus), stdout+stderr to `log` (a path) or
    /dev/null. Returns the Popen, registered for cleanup."""
    full_env = dict(os.environ)
    if env:
        full_env.update({k: str(v) for k, v in env.items()})
    out = open(log, "ab") if log else subprocess.DEVNULL
    try:
        # exec'd by taskset: the Popen's pid is the server's own pid.
        p = subprocess.Popen(taskset(cpus, cmd), env=full_env, cwd=cwd, stdout=out,
                             stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, start_new_session=True)
    finally:
        if log:
            out.close()
    _live.append(p)
    return p


def stop(p, timeout=10):
    """SIGTERM, then SIGKILL after `timeout` s; the whole process group."""
    if p.poll() is None:
        try:
            os.killpg(p.pid, signal.SIGTERM)
        except ProcessLookupError:
            pass
        try:
            p.wait(timeout)
        except subprocess.TimeoutExpired:
            try:
                os.killpg(p.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            p.wait(5)
    if p in _live:
        _live.remove(p)
    return p.returncode


def http_status(port, path, method="GET", body=None, timeout=2.0, host="127.0.0.1"):
    """Status of one request, or None when nothing answers."""
    try:
        c = http.client.HTTPConnection(host, port, timeout=timeout)
        headers = {"Content-Type": "application/json"} if body is not None else {}
        c.request(method, path, body=body, headers=headers)
        r = c.getresponse()
        r.read()
        c.close()
        return r.status
    except (OSError, http.client.HTTPException):
        return None


def wait_ready(p, port, path, timeout=30.0):
    """Poll until GET path answers 200; raises RuntimeError when the process
    exits first or the time is up."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if p.poll() is not None:
            raise RuntimeError(f"exited with status {p.returncode} before answering on port {port}")
        if http_status(port, path, timeout=1.0) == 200:
            return
        time.sleep(0.02)
    raise RuntimeError(f"no 200 from {path} on port {port} within {timeout:.0f} s")


def wait_port_free(port, timeout=10.0):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline and http_status(port, "/", timeout=0.5) is not None:
        time.sleep(0.05)


def run(cmd, timeout, env=None, cwd=None, cpus=None, check=False):
    """Run a bounded command; returns CompletedProcess (text). On timeout the
    process group is killed and TimeoutExpired re-raised."""
    full_env = dict(os.environ)
    if env:
        full_env.update({k: str(v) for k, v in env.items()})
    p = subprocess.Popen(taskset(cpus, cmd), env=full_env, cwd=cwd, stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, stdin=subprocess.DEVNULL, text=True, start_new_session=True)
    _live.append(p)
    try:
        out, err = p.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        os.killpg(p.pid, signal.SIGKILL)
        p.communicate()
        raise
    finally:
        if p in _live:
            _live.remove(p)
    cp = subprocess.CompletedProcess(p.args, p.returncode, out, err)
    if check and p.returncode != 0:
        raise subprocess.CalledProcessError(p.returncode, p.args, out, err)
    return cp
