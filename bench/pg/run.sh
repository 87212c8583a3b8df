#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# hookd on PostgreSQL next to PostgreSQL's own ceiling, on a throwaway
# cluster (scripts/pg.sh): exec -> first 200 on /q/health/ready and idle RSS
# (coldstart), wrk POST and GET /api/webhooks at 100 connections (hookd with
# one loop on CPU 0, wrk on CPU 1), then pgbench running the same INSERT and
# SELECT at 10 clients. Prints the load average with each figure.
#
#   bench/pg/run.sh [BUILD_DIR]      (default build/; needs hookd, coldstart)
#   HOOKD=path/to/hookd overrides the binary; SECS (10) the run length.
set -euo pipefail
cd "$(dirname "$0")/../.."
build=${1:-build}
hookd=${HOOKD:-$build/hookd}
secs=${SECS:-10}
port=${PORT:-18090}
here=bench/pg

dir=$(bash scripts/pg.sh start)
hk=
log=$(mktemp)
cleanup() {
    [ -n "$hk" ] && kill "$hk" 2>/dev/null && wait "$hk" 2>/dev/null
    bash scripts/pg.sh stop "$dir"
    rm -f "$log"
}
trap cleanup EXIT
trap 'exit 130' INT TERM
url=$(bash scripts/pg.sh url "$dir")
psql -qX "$url" -c "CREATE DATABASE bench"
db=${url%/postgres}/bench
load() { echo "load average: $(cut -d' ' -f1-3 /proc/loadavg)"; }

start_hookd() {
    HOOKD_AUTH=off HOOKD_THREADS=1 PORT=$port DATABASE_URL=$db taskset -c 0 "$hookd" >/dev/null 2>"$log" &
    hk=$!
    for _ in $(seq 100); do
        curl -sf "http://127.0.0.1:$port/q/health/ready" >/dev/null && return 0
        sleep 0.05
    done
    echo "hookd did not become ready" >&2
    cat "$log" >&2
    exit 1
}
stop_hookd() {
    kill "$hk"
    wait "$hk" || true
    hk=
}

# The schema, and rows for GET to return.
start_hookd
stop_hookd
psql -qX "$db" -c "INSERT INTO webhooks(source, event_type, payload, received_at)
  SELECT 'github', 'push', '{\"ref\":\"refs/heads/main\",\"commits\":3}', now()
  FROM generate_series(1, 10000)"

echo "== coldstart (5 runs, server on CPU 0) -- $(load)"
PORT=$port DATABASE_URL=$db HOOKD_THREADS=1 taskset -c 1 "$build/coldstart" -c 0 -p "$port" -n 5 -- "$hookd"

start_hookd
echo "== wrk POST /api/webhooks, 100 connections -- $(load)"
taskset -c 1 wrk -t1 -c100 -d"${secs}s" --latency -s "$here/post.lua" "http://127.0.0.1:$port"
echo "== wrk GET /api/webhooks, 100 connections -- $(load)"
taskset -c 1 wrk -t1 -c100 -d"${secs}s" --latency "http://127.0.0.1:$port/api/webhooks"
stop_hookd

echo "== pgbench INSERT, 10 clients -- $(load)"
pgbench -n -c10 -j1 -T"$secs" -M prepared -f "$here/insert.sql" "$db" | grep -E "tps|latency"
echo "== pgbench SELECT (list, limit 100), 10 clients -- $(load)"
pgbench -n -c10 -j1 -T"$secs" -M prepared -f "$here/list.sql" "$db" | grep -E "tps|latency"
