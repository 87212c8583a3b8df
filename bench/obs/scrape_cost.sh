#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# What a 1 kHz scraper costs hookd, independent of machine noise: the CPU
# time the server process spends (process_cpu_seconds_total) while only the
# scraper runs, per scrape and as a share of one core.
# usage: bench/obs/scrape_cost.sh [HOOKD_BIN] [SECONDS]
set -euo pipefail
cd "$(dirname "$0")/../.."
BIN=${1:-build/hookd}
DUR=${2:-10}
PORT=${PORT:-18092}
dir=$(mktemp -d)
cc -O2 -D_GNU_SOURCE -pthread -o "$dir/scraper" bench/obs/scraper.c
PORT=$PORT HOOKD_AUTH=off HOOKD_HOST=127.0.0.1 HOOKD_THREADS=1 HOOKD_SQLITE_PATH="$dir/hookd.db" \
    taskset -c 0 "$BIN" >"$dir/out" 2>"$dir/err" &
pid=$!
trap 'kill "$pid" 2>/dev/null || true; wait "$pid" 2>/dev/null || true; rm -rf "$dir"' EXIT
for _ in $(seq 100); do curl -sf "http://127.0.0.1:$PORT/q/health/live" >/dev/null && break; sleep 0.05; done
# A few series, as under the load mix.
for i in $(seq 20); do
    curl -sf -o /dev/null -H 'Content-Type: application/json' -d '{"source":"s","eventType":"e"}' \
        "http://127.0.0.1:$PORT/api/webhooks"
    curl -sf -o /dev/null "http://127.0.0.1:$PORT/api/webhooks?limit=5"
    curl -sf -o /dev/null "http://127.0.0.1:$PORT/api/system/info"
done
cpu() { curl -s "http://127.0.0.1:$PORT/q/metrics" | awk '$1 == "process_cpu_seconds_total" { print $2 }'; }
c0=$(cpu)
taskset -c 1 "$dir/scraper" 127.0.0.1 "$PORT" 1000 "$DUR" 4
c1=$(cpu)
awk -v a="$c0" -v b="$c1" -v d="$DUR" 'BEGIN { printf "server CPU %.3fs over %ss of 1 kHz scraping: %.1f us per scrape, %.1f%% of one core\n", b - a, d, (b - a) / (d * 1000) * 1e6, (b - a) / d * 100 }'
