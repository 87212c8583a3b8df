#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Writes scripts/lean.order: the functions the lean hookd runs to start and
# to answer its first requests, in the order they first run. The lean build
# links them first (lld --symbol-ordering-file, meson.build), so that the
# pages they sit on are few and together: the kernel maps every code page
# with its neighbours (fault-around, 64 KB), and scattered over 5 MB of text
# those first calls kept 1.8 MB of it resident (docs/image.md).
#
#   scripts/layout.sh [BUILD_DIR]      (default: build-lean/)
#
# Builds the lean binary (scripts/lean.sh), then runs it under valgrind's
# callgrind, once per case: PostgreSQL (throwaway clusters, scripts/pg.sh)
# with access control off and on (the first start makes a token) and over
# TLS (sslmode=require), and SQLite. Each run gets ready, takes a POST, the lists, one webhook by id,
# the health checks and a metrics scrape, and stops on SIGTERM. Every
# function callgrind saw goes into the file once, in order of appearance.
# Valgrind's CPU has no AVX-512, so glibc picks the AVX2 string functions
# under it: their EVEX and AVX-512 siblings are listed beside them, as are
# the ifunc resolvers. The file is a hint: a name the binary lacks is
# skipped, a function the file lacks is laid out after the listed ones. Run
# it again when start-up or the request path changes much; commit the file.
# Needs scripts/deps.sh layout (valgrind, PostgreSQL, the lean build's).
set -euo pipefail
src=$(cd "$(dirname "$0")/.." && pwd)
dir=${1:-$src/build-lean}
command -v valgrind >/dev/null || { echo "layout.sh: needs valgrind (scripts/deps.sh layout)" >&2; exit 1; }
bin=$(bash "$src/scripts/lean.sh" "$dir")

work=$(mktemp -d)
pg=
pgtls=
pid=
cleanup() {
    [ -z "$pid" ] || kill -KILL "$pid" 2>/dev/null || true
    [ -z "$pg" ] || bash "$src/scripts/pg.sh" stop "$pg"
    [ -z "$pgtls" ] || bash "$src/scripts/pg.sh" stop "$pgtls"
    rm -rf "$work"
}
trap cleanup EXIT
pg=$(bash "$src/scripts/pg.sh" start)
pgurl=$(bash "$src/scripts/pg.sh" url "$pg")
# And one with TLS (a managed database wants sslmode=require).
pgtls=$(bash "$src/scripts/pg.sh" start --ssl)
tlsurl=$(bash "$src/scripts/pg.sh" url "$pgtls")
port=$((20000 + RANDOM % 20000))

# one_case NAME VAR=VALUE...: run the binary under callgrind with that
# environment, drive it, stop it; its profile is $work/NAME.cg.
one_case() {
    local name=$1
    shift
    env "$@" PORT=$port HOOKD_HOST=127.0.0.1 HOOKD_LOG_LEVEL=warn \
        valgrind --tool=callgrind --callgrind-out-file="$work/$name.cg" "$bin" \
        >"$work/$name.log" 2>&1 &
    pid=$!
    local i
    for i in $(seq 1 200); do
        [ "$(curl -s -o /dev/null -w '%{http_code}' "http://127.0.0.1:$port/q/health/ready")" = 200 ] && break
        kill -0 "$pid" 2>/dev/null || { cat "$work/$name.log" >&2; echo "layout.sh: $name: hookd exited" >&2; exit 1; }
        sleep 0.1
    done
    local auth=()
    local tok
    tok=$(grep -o 'Bearer hkd_[A-Za-z0-9_-]*' "$work/$name.log" | head -n 1 | cut -d' ' -f2 || true)
    [ -z "$tok" ] || auth=(-H "Authorization: Bearer $tok")
    local u="http://127.0.0.1:$port"
    curl -s -o /dev/null "${auth[@]}" -X POST "$u/api/webhooks" -H 'Content-Type: application/json' \
        -d '{"source":"layout","eventType":"probe","payload":"{\"n\":1}"}'
    curl -s -o /dev/null "${auth[@]}" "$u/api/webhooks"
    curl -s -o /dev/null "${auth[@]}" "$u/api/webhooks?limit=20"
    curl -s -o /dev/null "${auth[@]}" "$u/api/webhooks/1"
    curl -s -o /dev/null "$u/q/health/live"
    curl -s -o /dev/null "$u/q/health/ready"
    curl -s -o /dev/null "${auth[@]}" "$u/q/metrics"
    kill -TERM "$pid"
    wait "$pid" || true
    pid=
    [ -s "$work/$name.cg" ] || { cat "$work/$name.log" >&2; echo "layout.sh: $name: no profile" >&2; exit 1; }
}

psql -q "$pgurl" -c 'CREATE DATABASE layout_open' -c 'CREATE DATABASE layout_auth'
base=${pgurl%/*}
one_case pg DATABASE_URL="$base/layout_open" HOOKD_AUTH=off
one_case pg-auth DATABASE_URL="$base/layout_auth"
one_case sqlite HOOKD_SQLITE_PATH="$work/hookd.db" HOOKD_AUTH=off
one_case pg-tls DATABASE_URL="$tlsurl?sslmode=require" HOOKD_AUTH=off

# In this order: what a case adds comes after what the ones before it ran,
# so the plain PostgreSQL and SQLite paths are the densest.
/usr/bin/python3 - "$src/scripts/lean.order" "$work/pg.cg" "$work/pg-auth.cg" "$work/sqlite.cg" \
    "$work/pg-tls.cg" <<'PY'
import re, sys
out, seen = [], set()

def add(name):
    if name not in seen:
        seen.add(name)
        out.append(name)

# "fn=(12) name" and "cfn=(12) name" name a function the first time its id
# appears; later lines give the id only.
NAMED = re.compile(r"^c?fn=\(\d+\) (.+)$")
for path in sys.argv[2:]:
    with open(path, encoding="utf-8", errors="replace") as f:
        for line in f:
            m = NAMED.match(line.rstrip("\n"))
            if not m:
                continue
            name = re.sub(r"'\d+$", "", m.group(1))   # callgrind's recursion depth
            if name.startswith("0x") or name.startswith("("):
                continue   # no symbol, or "(below main)"
            add(name)
            v = re.match(r"^(__\w+?)_avx2(_\w+)?$", name)
            if v:
                for isa in ("_evex", "_avx512"):
                    add(v.group(1) + isa + (v.group(2) or ""))
            v = re.match(r"^(__\w+?)_avx_unaligned(_erms)?$", name)
            if v:
                for isa in ("_evex_unaligned", "_avx512_unaligned"):
                    add(v.group(1) + isa + (v.group(2) or ""))
            if re.match(r"^[a-z]\w*$", name):
                add(name + "_ifunc")   # glibc's resolver, beside its IFUNC
                add("__" + name)
with open(sys.argv[1], "w") as f:
    f.write("\n".join(out) + "\n")
print(f"layout.sh: {len(out)} names in {sys.argv[1]}", file=sys.stderr)
PY
