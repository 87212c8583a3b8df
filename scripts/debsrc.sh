#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Fetches and unpacks a Debian 12 source package through a private APT
# configuration, for the static libraries the lean build makes from Debian's
# own sources (scripts/libpq.sh, scripts/libcurl.sh).
#
#   scripts/debsrc.sh PREFIX PACKAGE [VERSION]    -> prints the unpacked source directory
#
# deb-src lines for bookworm, bookworm-updates and bookworm-security (main),
# with their lists and cache under PREFIX/apt: the machine's own APT sources
# are neither read nor changed, and no root is needed. The source lands in
# PREFIX/src/PACKAGE-UPSTREAM/ (Debian's patches applied by dpkg-source).
# VERSION, when given and listed, is fetched exactly, else the newest one
# listed. Idempotent: an unpacked tree of that package is kept (a tree of
# another version is removed first). Needs dpkg-dev (dpkg-source) and
# debian-archive-keyring.
set -euo pipefail
prefix=$(realpath -m "${1:?usage: debsrc.sh PREFIX PACKAGE [VERSION]}")
pkg=${2:?usage: debsrc.sh PREFIX PACKAGE [VERSION]}
ver=${3:-}
keyring=/usr/share/keyrings/debian-archive-keyring.gpg
[ -f "$keyring" ] || { echo "debsrc.sh: $keyring is missing (package debian-archive-keyring)" >&2; exit 1; }
command -v dpkg-source >/dev/null || { echo "debsrc.sh: dpkg-source is missing (package dpkg-dev)" >&2; exit 1; }

mkdir -p "$prefix"/{apt/lists/partial,apt/cache/archives/partial,src}
cat >"$prefix/apt/sources.list" <<SRC
deb-src [signed-by=$keyring] http://deb.debian.org/debian bookworm main
deb-src [signed-by=$keyring] http://deb.debian.org/debian bookworm-updates main
deb-src [signed-by=$keyring] http://deb.debian.org/debian-security bookworm-security main
SRC
apt_opts=(-o "Dir::Etc::SourceList=$prefix/apt/sources.list" -o "Dir::Etc::SourceParts=/nonexistent"
          -o "Dir::State::Lists=$prefix/apt/lists" -o "Dir::Cache=$prefix/apt/cache"
          -o "Debug::NoLocking=1" -o "APT::Sandbox::User=$(id -un)" -qq)

# What is unpacked is recorded beside the tree, so a cached tree is reused
# only for the version asked for.
stamp=$prefix/src/$pkg.version
tree() { ls -d "$prefix/src/$pkg"-*/ 2>/dev/null | head -1; }
if [ -n "$(tree)" ] && [ -f "$stamp" ] && { [ -z "$ver" ] || [ "$(cat "$stamp")" = "$ver" ]; }; then
    realpath "$(tree)"
    exit 0
fi
rm -rf "$prefix/src/$pkg"-*/ "$prefix/src/$pkg"_* "$stamp"
cd "$prefix/src"
timeout 600 apt-get "${apt_opts[@]}" update >&2
# The exact version when the archive still lists it; else the newest one.
got=
if [ -n "$ver" ] && timeout 600 apt-get "${apt_opts[@]}" --download-only source "$pkg=$ver" >&2 2>/dev/null; then
    got=$ver
else
    [ -z "$ver" ] || echo "debsrc.sh: $pkg $ver is no longer listed; taking the newest" >&2
    timeout 600 apt-get "${apt_opts[@]}" --download-only source "$pkg" >&2
fi
dsc=$(ls "$prefix/src/$pkg"_*.dsc | head -1)
[ -n "$got" ] || got=$(sed -n 's/^Version: //p' "$dsc")
# --no-check: APT has checked every file against the signed Release file.
dpkg-source --no-check -x "$dsc" >"$prefix/src/$pkg.unpack.log" 2>&1 ||
    { cat "$prefix/src/$pkg.unpack.log" >&2; exit 1; }
rm -f "$prefix/src/$pkg"_*
[ -n "$(tree)" ] || { echo "debsrc.sh: unpacking $dsc made no $pkg-*/ directory" >&2; exit 1; }
echo "$got" >"$stamp"
realpath "$(tree)"
