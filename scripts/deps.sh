#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Installs the Debian packages one door of the Makefile needs, and only the
# missing ones. Doors are cumulative: test includes run, bench includes test.
# As root it installs; as anyone else it says what is missing and returns 0,
# so the caller can try anyway.
#
# Usage: scripts/deps.sh [run|test|bench|image|image-run|layout]   (default: run)
set -euo pipefail

# libpq-dev: libpq's headers (hookd loads libpq itself only when DATABASE_URL is set).
# libhiredis-dev: Redis for sessions (HOOKD_REDIS_URL), async on the loop.
# libcurl4-openssl-dev: libcurl's headers (hookd loads libcurl itself only
# when it forwards: K_SINK or HOOKD_FORWARD_URL).
run_pkgs=(build-essential pkg-config meson ninja-build libuv1-dev node-llhttp
          libsqlite3-dev libjansson-dev libssl-dev libpq-dev libhiredis-dev
          libcurl4-openssl-dev)
# clang and its runtime are for the libFuzzer smoke run, PostgreSQL for the
# pg store backend, curl for poking a running server by hand, wrk for the
# benchmark harness's smoke run (bench/tests/smoke.py).
test_pkgs=(libcriterion-dev clang libclang-rt-14-dev
           postgresql redis-server curl wrk)
# gnuplot-nox rather than gnuplot: the metapackage picks gnuplot-qt and drags
# in Qt and X11 for a machine that only writes PNGs. runc: make compare's
# container start without podman (bench/hkbench/measure.py, runc_start). The
# static variant is the lean build: its packages come with the test door's.
bench_pkgs=(gnuplot-nox nginx-light hyperfine runc)

# The OCI image (make image) ships the lean static build (scripts/lean.sh):
# dpkg-dev (dpkg-source) and debian-archive-keyring to fetch and unpack
# Debian's postgresql and curl sources, zlib1g-dev for libz.a (SQLite's
# static link line names it), lld to link it in scripts/lean.order's order;
# libssl-dev's libssl.a and libcrypto.a come with the run door. umoci assembles the image, skopeo writes the archives,
# and the CA bundle goes into it for libpq's and libcurl's TLS. The test door
# has them too, as the image test builds images (installing takes about
# 20 s, once), with openssl for the certificates of its TLS servers
# (scripts/pg.sh start --ssl), python3-yaml for the manifest test and
# systemd for systemd-socket-activate.
image_pkgs=(dpkg-dev debian-archive-keyring zlib1g-dev lld umoci skopeo ca-certificates)
test_pkgs+=("${image_pkgs[@]}" openssl python3-yaml systemd)
# The web inspector's tests drive Debian's Chromium headless through
# chromedriver and Selenium; promtool (in prometheus) checks and unit-tests the
# alert rules and parses the dashboard's queries.
test_pkgs+=(chromium chromium-driver python3-selenium prometheus)
# make image-run: podman, with runc (crun cannot start containers here).
podman_pkgs=(podman runc)

case "${1:-run}" in
run)   want=("${run_pkgs[@]}") ;;
test)  want=("${run_pkgs[@]}" "${test_pkgs[@]}") ;;
bench) want=("${run_pkgs[@]}" "${test_pkgs[@]}" "${bench_pkgs[@]}") ;;
image) want=("${run_pkgs[@]}" "${image_pkgs[@]}") ;;
# scripts/layout.sh: the lean build, PostgreSQL, and valgrind's callgrind.
layout) want=("${run_pkgs[@]}" "${image_pkgs[@]}" postgresql curl valgrind) ;;
image-run) want=("${run_pkgs[@]}" "${image_pkgs[@]}" "${podman_pkgs[@]}") ;;
*)     echo "usage: $0 [run|test|bench|image|image-run|layout]" >&2; exit 2 ;;
esac

if ! command -v dpkg-query >/dev/null 2>&1; then
    echo "deps.sh: not a Debian system; make sure the equivalents of these are installed:" >&2
    echo "  ${want[*]}" >&2
    exit 0
fi

# One dpkg-query for the whole list keeps the all-present case fast. Names
# dpkg has never seen print nothing (and make it exit 1, hence the || true);
# the fourth field is the package state, and only "installed" counts, not
# config-files or half-installed.
installed=" $({ dpkg-query -W -f='${Package} ${Status}\n' "${want[@]}" 2>/dev/null || true; } |
              awk '$4 == "installed" { printf "%s ", $1 }')"
missing=()
for p in "${want[@]}"; do
    [[ $installed == *" $p "* ]] || missing+=("$p")
done
[ ${#missing[@]} -eq 0 ] && exit 0

if [ "$(id -u)" -ne 0 ]; then
    echo "deps.sh: missing Debian packages: ${missing[*]}" >&2
    echo "deps.sh: install them with: sudo apt-get install ${missing[*]}" >&2
    echo "deps.sh: not root, so trying anyway" >&2
    exit 0
fi

export DEBIAN_FRONTEND=noninteractive
log=$(mktemp)
trap 'rm -f "$log"' EXIT
echo "deps.sh: installing ${missing[*]}" >&2
# -qq keeps apt's progress out; errors still reach stderr, and dpkg's own
# chatter is kept in $log and shown only if the install fails.
if ! apt-get update -qq >"$log" ||
   ! apt-get install -y -qq --no-install-recommends \
        -o DPkg::Lock::Timeout=300 "${missing[@]}" >>"$log"; then
    cat "$log" >&2
    echo "deps.sh: apt-get failed installing: ${missing[*]}" >&2
    exit 1
fi
