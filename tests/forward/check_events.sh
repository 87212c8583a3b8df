#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Every event a sink recorded (tests/forward/sink.py --ledger FILE) checked
# with the CloudEvents JavaScript SDK (check.mjs beside this file says
# what is checked): cloudevents from the npm registry, one pinned version
# installed once into the build directory. Skipped (exit 77) where node or
# npm is missing.
#
#   check_events.sh LEDGER [--min N] [--mode binary|structured] [--verbose]
#
# BUILD names the build directory (meson sets it; otherwise a cache under
# $TMPDIR is used). Exit 0 when every event is valid, 1 when one is not
# (each named on stderr), 2 on a usage error.
set -euo pipefail
# 8.0.3: the newest release whose engines range (node 16 to 22) covers
# Debian 12's nodejs (18) as well as newer ones; 10.x wants node >= 20.
version=8.0.3
self=${BASH_SOURCE[0]}
if [[ $self == */* ]]; then here=$(cd "${self%/*}" && pwd); else here=$PWD; fi

if [ $# -lt 1 ] || [ "${1#-}" != "$1" ]; then
    echo "usage: check_events.sh LEDGER [--min N] [--mode binary|structured] [--verbose]" >&2
    exit 2
fi
ledger=$1
shift
if [ ! -r "$ledger" ]; then
    echo "check_events.sh: cannot read $ledger" >&2
    exit 2
fi

for tool in node npm; do
    if ! command -v "$tool" >/dev/null 2>&1; then
        echo "cloudevents check: no $tool on this machine; skipped" >&2
        exit 77
    fi
done

build=${BUILD:-${TMPDIR:-/tmp}/hookd-npm-cache}
# npm once per build directory; several tests may ask at once, hence the lock.
npmdir=$build/npm-cloudevents-$version
mkdir -p "$npmdir"
(
    flock 9
    if [ ! -f "$npmdir/node_modules/cloudevents/package.json" ]; then
        cd "$npmdir" && npm install --no-audit --no-fund --loglevel=error "cloudevents@$version" >/dev/null
    fi
) 9>"$npmdir.lock"
got=$(node -p "require('$npmdir/node_modules/cloudevents/package.json').version")
if [ "$got" != "$version" ]; then
    echo "cloudevents check: $npmdir has cloudevents $got, not $version" >&2
    exit 1
fi

exec node "$here/check.mjs" --sdk "$npmdir" "$@" "$ledger"
