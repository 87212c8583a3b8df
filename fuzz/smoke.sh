#!/bin/sh
# SPDX-License-Identifier: MIT
# Bounded fuzz run for `meson test --suite fuzz`: new inputs go to a scratch
# corpus in the build directory, the committed seeds are only read. A
# finding exits 1: libFuzzer's default, 77, is what meson calls a skip.
# usage: smoke.sh FUZZER SECONDS DICT SEEDS SCRATCH
set -eu
mkdir -p "$5"
exec "$1" -max_total_time="$2" -timeout=10 -rss_limit_mb=2048 -print_final_stats=1 -error_exitcode=1 \
    -artifact_prefix="$5/" -dict="$3" "$5" "$4"
