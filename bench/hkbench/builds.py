# SPDX-License-Identifier: MIT
"""hookd's build variants, side by side under one root (build-bench/):

  release          -O2 (meson buildtype=release, optimization=2)
  release-lto-pgo  the same with b_lto=true, b_pgo=generate, trained on the
                   load mix, then rebuilt with b_pgo=use
  static           the lean static build the image ships (scripts/lean.sh,
                   meson -Dlean=true): one static executable with libpq and
                   libcurl built from Debian's sources and OpenSSL linked in

Each variant is its own meson build directory, so nothing here touches the
project's build/ or build-asan/. A variant is rebuilt only when the sources
changed (a fingerprint of src/ and the meson files), PGO training included."""

import glob
import hashlib
import json
import os
import re
import shutil
import subprocess

from . import procs, system

VARIANTS = ("release", "release-lto-pgo", "static")
COMMON = ["-Dbuildtype=release", "-Doptimization=2", "-Db_ndebug=true", "-Dtests=disabled",
          "-Dfuzz=disabled"]


class BuildError(RuntimeError):
    pass


def fingerprint(src):
    h = hashlib.sha256()
    files = sorted(glob.glob(os.path.join(src, "src", "**", "*.[ch]"), recursive=True))
    files += [os.path.join(src, f) for f in ("meson.build", "meson_options.txt", "meson.options",
                                            "scripts/lean.order", "bench/coldstart.c")]
    for f in files:
        if os.path.exists(f):
            h.update(f.encode())
            with open(f, "rb") as fh:
                h.update(fh.read())
    return h.hexdigest()[:16]


def _log_run(cmd, log, timeout=1800, env=None, cwd=None):
    with open(log, "a") as lf:
        lf.write("$ " + " ".join(cmd) + "\n")
        lf.flush()
        full_env = dict(os.environ, **(env or {}))
        r = subprocess.run(cmd, stdout=lf, stderr=subprocess.STDOUT, timeout=timeout, env=full_env, cwd=cwd)
    if r.returncode != 0:
        tail = "".join(open(log, errors="replace").readlines()[-25:])
        raise BuildError(f"{' '.join(cmd[:3])}... failed (exit {r.returncode}); log {log}:\n{tail}")


def _options(builddir):
    out = subprocess.run(["meson", "introspect", builddir, "--buildoptions"], stdout=subprocess.PIPE,
                         text=True, check=True).stdout
    return {o["name"]: o["value"] for o in json.loads(out)}


def meson_list(items):
    """A meson array option value: ['a','b']."""
    return "[" + ",".join("'" + i.replace("'", "\\'") + "'" for i in items) + "]"


def setup(src, builddir, opts, log):
    """meson setup, or meson configure when the directory exists."""
    if os.path.exists(os.path.join(builddir, "meson-private", "coredata.dat")):
        _log_run(["meson", "configure", builddir] + opts, log)
    else:
        _log_run(["meson", "setup", builddir, src] + opts, log)


def binary_info(path):
    """Size, stripped size, linkage and shared objects loaded at start."""
    st = os.stat(path)
    info = {"path": path, "sizeBytes": st.st_size, "sizeMb": st.st_size / 1048576}
    tmp = path + ".stripped"
    try:
        shutil.copy(path, tmp)
        subprocess.run(["strip", tmp], check=True, stderr=subprocess.DEVNULL)
        info["strippedBytes"] = os.stat(tmp).st_size
    except (OSError, subprocess.CalledProcessError):
        info["strippedBytes"] = None
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)
    ldd = system.run_out(["ldd", path]) or ""
    static = "not a dynamic executable" in ldd or "statically linked" in ldd
    info["static"] = static
    libs = [] if static else [l.split()[0] for l in ldd.splitlines() if "=>" in l or l.strip().startswith("/")]
    info["sharedObjects"] = len(libs)
    info["sharedObjectNames"] = libs
    return info


class Builder:
    def __init__(self, src, root, log_dir, quick=False):
        self.src = os.path.abspath(src)
        self.root = os.path.abspath(root)
        self.log_dir = log_dir
        self.quick = quick
        os.makedirs(self.root, exist_ok=True)
        self.fp = fingerprint(self.src)

    def _stamp(self, d):
        return os.path.join(d, ".bench-stamp")

    def _fresh(self, d, extra=""):
        try:
            return open(self._stamp(d)).read().strip() == self.fp + extra
        except OSError:
            return False

    def _mark(self, d, extra=""):
        with open(self._stamp(d), "w") as f:
            f.write(self.fp + extra + "\n")

    def dir(self, variant):
        return os.path.join(self.root, variant)

    def build(self, variant, trainer=None):
        """Build one variant; returns a dict with the binary's path and info,
        or raises BuildError. trainer(hookd_path) runs the PGO training load."""
        d = self.dir(variant)
        log = os.path.join(self.log_dir, f"build-{variant}.log")
        opts = COMMON + [f"-Dvariant={variant}"]
        notes = []
        if variant == "release":
            setup(self.src, d, opts, log)
            _log_run(["ninja", "-C", d], log)
        elif variant == "release-lto-pgo":
            if not self._fresh(d, "+pgo"):
                for f in glob.glob(os.path.join(d, "**", "*.gcda"), recursive=True):
                    os.unlink(f)
                setup(self.src, d, opts + ["-Db_lto=true", "-Db_pgo=generate"], log)
                _log_run(["ninja", "-C", d], log)
                if trainer is None:
                    raise BuildError("PGO needs a training run")
                trained = trainer(os.path.join(d, "hookd"))
                n = len(glob.glob(os.path.join(d, "**", "*.gcda"), recursive=True))
                if n == 0:
                    raise BuildError("PGO training wrote no .gcda profile")
                notes.append(f"trained: {trained}; {n} profile files")
                setup(self.src, d, opts + ["-Db_lto=true", "-Db_pgo=use"], log)
                _log_run(["ninja", "-C", d], log)
                self._mark(d, "+pgo")
                with open(os.path.join(d, ".bench-pgo-notes"), "w") as f:
                    f.write("; ".join(notes))
            else:
                _log_run(["ninja", "-C", d], log)
                try:
                    notes.append(open(os.path.join(d, ".bench-pgo-notes")).read().strip() + " (cached)")
                except OSError:
                    pass
        elif variant == "static":
            # The image's build, by the same script (one definition of the
            # lean build: its dependencies' cache, its options), with the
            # benchmark's variant name; then ninja for coldstart and the
            # GraphQL bench.
            lean = os.path.join(self.src, "scripts", "lean.sh")
            _log_run(["bash", lean, d, "--", f"-Dvariant={variant}", "-Db_ndebug=true", "-Dfuzz=disabled"], log)
            _log_run(["ninja", "-C", d], log)
            notes.append("scripts/lean.sh: libpq and libcurl built from Debian's sources (libpq without "
                         "GSSAPI/LDAP, libcurl HTTP/HTTPS only), OpenSSL linked in, -O2, -static")
        else:
            raise BuildError(f"unknown variant {variant}")
        binpath = os.path.join(d, "hookd")
        info = binary_info(binpath)
        o = _options(d)
        info["variant"] = variant
        info["mesonOptions"] = {k: o.get(k) for k in ("buildtype", "optimization", "debug", "b_lto", "b_pgo",
                                                      "b_ndebug", "prefer_static", "c_args", "c_link_args")}
        info["notes"] = notes
        info["coldstart"] = os.path.join(d, "coldstart")
        if variant == "static" and not info["static"]:
            raise BuildError("the static variant came out dynamically linked")
        return info


def build_image(src, builddir, timeout=600):
    """hookd's OCI image of this variant's binary, by the project's
    scripts/image.sh (no container engine needed). The image holds a static
    binary and nothing it could load, so only the static variant has one;
    the others are skipped. Returns a dict with status, and imageSizeMb
    (the docker-archive's size: the uncompressed image, what `podman images`
    shows) when built."""
    script = os.path.join(src, "scripts", "image.sh")
    if not os.path.exists(script):
        return {"status": "skipped", "reason": "image not built: scripts/image.sh does not exist"}
    if not binary_info(os.path.join(builddir, "hookd"))["static"]:
        return {"status": "skipped", "reason": "image not built: it ships the static binary only (the static variant)"}
    for tool in ("umoci", "skopeo"):
        if not shutil.which(tool):
            return {"status": "skipped", "reason": f"image not built: {tool} is not installed (scripts/deps.sh image)"}
    out = os.path.join(builddir, "image")
    os.makedirs(out, exist_ok=True)
    try:
        r = subprocess.run(["bash", script, "--no-build", "--out", out, builddir],
                           cwd=src, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        return {"status": "failed", "reason": f"scripts/image.sh took more than {timeout} s"}
    name = "hookd-image"
    docker = os.path.join(out, name + ".docker.tar")
    if r.returncode != 0 or not os.path.exists(docker):
        return {"status": "failed", "reason": "scripts/image.sh: " + r.stdout.strip()[-300:]}
    oci = os.path.join(out, name + ".oci.tar")
    m = re.search(r"image (\S+)", r.stdout)
    return {"status": "built", "imageSizeMb": os.path.getsize(docker) / 1048576,
            "ociArchiveMb": os.path.getsize(oci) / 1048576 if os.path.exists(oci) else None,
            "tag": m.group(1) if m else None, "dockerArchive": docker}
