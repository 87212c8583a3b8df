#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# docs/openapi.json through Redocly's recommended lint (@redocly/cli from the
# npm registry, a pinned version installed once into the build directory):
# errors fail the test, warnings are printed. Skipped (exit 77) where npm is
# missing.
set -euo pipefail
: "${SRC:?SRC names the source tree}" "${BUILD:?BUILD names the build directory}"
version=1.25.0
if ! command -v npm >/dev/null 2>&1; then
    echo "lint_openapi: no npm on this machine; skipped" >&2
    exit 77
fi
dir=$BUILD/npm-redocly-$version
if [ ! -x "$dir/node_modules/.bin/redocly" ]; then
    mkdir -p "$dir"
    (cd "$dir" && npm install --no-audit --no-fund --loglevel=error "@redocly/cli@$version" >/dev/null)
fi
out=$("$dir/node_modules/.bin/redocly" lint --format=stylish "$SRC/docs/openapi.json" 2>&1) || {
    echo "$out"
    echo "lint_openapi: docs/openapi.json fails Redocly's recommended rules" >&2
    exit 1
}
echo "$out" | tail -5
