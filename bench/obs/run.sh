#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Does a 1 kHz Prometheus scraper move the p99 of the load mix? Runs hookd
# with one event loop pinned to CPU 0, wrk (100 connections, bench/obs/mix.lua)
# pinned to CPU 1, alternating runs without and with bench/obs/scraper.c
# (1000 scrapes/s of /q/metrics, also on CPU 1), and prints each run's
# percentiles with the load average at its start. The database lives in
# /dev/shm when there is one, so fsync noise from other work on the machine
# does not drown the difference being measured.
#
# usage: bench/obs/run.sh [HOOKD_BIN] [SECONDS] [ROUNDS]
set -euo pipefail
cd "$(dirname "$0")/../.."
BIN=${1:-build/hookd}
DUR=${2:-20}
ROUNDS=${3:-2}
PORT=${PORT:-18090}
command -v wrk >/dev/null || { echo "wrk missing: apt-get install -y wrk" >&2; exit 2; }
base=/tmp
[ -w /dev/shm ] && base=/dev/shm
dir=$(mktemp -d "$base/hookd-obs-bench.XXXXXX")
cc -O2 -D_GNU_SOURCE -pthread -o "$dir/scraper" bench/obs/scraper.c

PORT=$PORT HOOKD_AUTH=off HOOKD_HOST=127.0.0.1 HOOKD_THREADS=1 HOOKD_SQLITE_PATH="$dir/hookd.db" \
    taskset -c 0 "$BIN" >"$dir/out" 2>"$dir/err" &
pid=$!
cleanup() { kill "$pid" 2>/dev/null || true; wait "$pid" 2>/dev/null || true; rm -rf "$dir"; }
trap cleanup EXIT
for _ in $(seq 100); do
    curl -sf "http://127.0.0.1:$PORT/q/health/live" >/dev/null && break
    sleep 0.05
done
# 200 rows so that GET /api/webhooks returns a full page of 100.
for i in $(seq 200); do
    curl -sf -o /dev/null -H 'Content-Type: application/json' \
        -d "{\"source\":\"seed\",\"eventType\":\"e$i\",\"payload\":\"x\"}" "http://127.0.0.1:$PORT/api/webhooks"
done
url="http://127.0.0.1:$PORT"
wrk_run() { taskset -c 1 wrk -t1 -c100 -d"${1}s" -s bench/obs/mix.lua "$url" | grep '^requests'; }
echo "warm-up: $(wrk_run 5)"
for r in $(seq "$ROUNDS"); do
    echo "round $r without scraper  load $(cut -d' ' -f1-3 /proc/loadavg): $(wrk_run "$DUR")"
    taskset -c 1 "$dir/scraper" 127.0.0.1 "$PORT" 1000 "$((DUR + 1))" >"$dir/scraper.out" &
    spid=$!
    sleep 0.5
    echo "round $r with 1 kHz scraper load $(cut -d' ' -f1-3 /proc/loadavg): $(wrk_run "$DUR")"
    wait "$spid"
    echo "  scraper: $(cat "$dir/scraper.out")"
done
curl -s "$url/q/metrics" >"${SCRAPE_OUT:-/dev/null}"
