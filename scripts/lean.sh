#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Builds the lean hookd: one static executable with libpq, libcurl and
# OpenSSL linked in (meson -Dlean=true), what the image ships (docs/image.md).
#
#   scripts/lean.sh [BUILD_DIR] [-- MESON_OPTION...]
#
# 1. The static libraries Debian does not ship usable, built from Debian's
#    own source packages into a cache shared by every lean build directory:
#    $HOOKD_DEPS_DIR, default build-deps/ in the source tree (make clean
#    removes it). libpq without GSSAPI/LDAP (scripts/libpq.sh), libcurl with
#    HTTP/HTTPS only (scripts/libcurl.sh); the sources come through a private
#    APT configuration (scripts/debsrc.sh), so the first build needs
#    deb.debian.org and takes a minute or two; after that the cache is
#    reused (a lock keeps concurrent builds apart, and a library is rebuilt
#    only when its Debian version or its script changes).
# 2. A Meson release build in BUILD_DIR (default build-lean/; relative paths
#    are the caller's): -Dlean=true -Dtests=disabled -Dwerror=true, -O2 and
#    no PIC (0.2 MB less than release's -O3 with PIC, for the image's size
#    targets), the cache's pkg-config directory, and any MESON_OPTION given
#    after -- (the benchmark's static variant adds its own). An existing
#    directory is reconfigured with the same options; `ninja hookd` then
#    builds only what changed.
#
# LEAN_JOBS caps the parallel jobs of every step (default: make's nproc,
# ninja's own default). Prints the binary's absolute path on stdout
# (progress goes to stderr).
# Needs, beyond `make run`'s packages: dpkg-dev, zlib1g-dev, lld and
# debian-archive-keyring (scripts/deps.sh image installs them).
set -euo pipefail
src=$(cd "$(dirname "$0")/.." && pwd)

dir=
extra=()
while [ $# -gt 0 ]; do
    case $1 in
    --) shift; extra=("$@"); break ;;
    -h|--help) sed -n '3,29p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    -*) echo "lean.sh: unknown option $1 (meson options go after --)" >&2; exit 2 ;;
    *) [ -z "$dir" ] || { echo "lean.sh: one build directory only" >&2; exit 2; }; dir=$1 ;;
    esac
    shift
done
dir=$(realpath -m "${dir:-$src/build-lean}")
deps=$(realpath -m "${HOOKD_DEPS_DIR:-$src/build-deps}")

missing=()
for t in cc ld.lld meson ninja pkg-config dpkg-source readelf flock; do
    command -v "$t" >/dev/null || missing+=("$t")
done
multiarch=$(cc -print-multiarch 2>/dev/null || echo x86_64-linux-gnu)
for a in libssl.a libcrypto.a libz.a libuv_a.a libsqlite3.a libjansson.a libhiredis.a libyaml.a libc.a; do
    [ -f "/usr/lib/$multiarch/$a" ] || missing+=("$a")
done
if [ ${#missing[@]} -gt 0 ]; then
    echo "lean.sh: missing: ${missing[*]} (scripts/deps.sh image installs what the lean build needs)" >&2
    exit 1
fi

t0=$(date +%s)
mkdir -p "$deps"
(
    # One builder at a time per cache: the others wait, then find it built.
    flock 9
    bash "$src/scripts/libpq.sh" "$deps"
    bash "$src/scripts/libcurl.sh" "$deps"
) 9>"$deps/.lock"

opts=(-Dbuildtype=release -Dwerror=true -Dlean=true -Dtests=disabled -Ddeps_link=static
      -Doptimization=2 -Db_staticpic=false
      "-Dpkg_config_path=$deps/lib/pkgconfig" "${extra[@]}")
# An existing directory is reconfigured only when the options changed:
# meson configure regenerates the whole build even for the same values.
if [ -f "$dir/meson-private/coredata.dat" ]; then
    if [ "$(cat "$dir/lean-options" 2>/dev/null)" != "${opts[*]}" ]; then
        meson configure "$dir" "${opts[@]}" >"$dir/lean-configure.log" 2>&1 ||
            { cat "$dir/lean-configure.log" >&2; exit 1; }
    fi
else
    mkdir -p "$dir"
    meson setup "$dir" "$src" "${opts[@]}" >"$dir/lean-configure.log" 2>&1 ||
        { rm -rf "$dir/meson-private"; cat "$dir/lean-configure.log" >&2; exit 1; }
fi
echo "${opts[*]}" >"$dir/lean-options"
ninja -C "$dir" ${LEAN_JOBS:+-j"$LEAN_JOBS"} hookd >&2
bin=$dir/hookd
# A dynamic executable names its loader (PT_INTERP); the lean one must not.
if readelf -lW "$bin" | grep -q 'program interpreter'; then
    echo "lean.sh: $bin came out dynamically linked" >&2
    exit 1
fi
echo "lean.sh: $bin, $(stat -c %s "$bin") bytes, static ($(($(date +%s) - t0)) s)" >&2
echo "$bin"
