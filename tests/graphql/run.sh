#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# The differential test of /graphql against graphql-js (difftest.mjs beside
# this file): graphql from the npm registry, one pinned version installed
# once into the build directory; hookd started on a loopback port with a
# temporary SQLite database, or with HOOKD_TEST_STORE=pg on a fresh schema of
# the cluster at $HOOKD_TEST_DATABASE_URL (a cluster of its own from
# scripts/pg.sh when that is unset); the fixture posted through the REST API;
# then every document of corpus/ compared. Skipped (exit 77) where node or
# npm is missing.
#
#   run.sh           with HOOKD_BIN, SRC and BUILD set (meson does)
#   run.sh --self    graphql-js against itself, no hookd: checks the script
#                    and the corpus (SRC and BUILD only)
# Extra arguments go to difftest.mjs (--only SUBSTR, --verbose).
set -euo pipefail
: "${SRC:?SRC names the source tree}" "${BUILD:?BUILD names the build directory}"
# The newest 16.x when hookd's GraphQL was written against it: it has @oneOf
# and descriptions on operations, which hookd follows too.
version=16.15.0
here=$SRC/tests/graphql

for tool in node npm; do
    if ! command -v "$tool" >/dev/null 2>&1; then
        echo "graphql difftest: no $tool on this machine; skipped" >&2
        exit 77
    fi
done

# npm once per build directory; the SQLite and PostgreSQL runs start
# together, hence the lock.
npmdir=$BUILD/npm-graphql-$version
mkdir -p "$npmdir"
(
    flock 9
    if [ ! -f "$npmdir/node_modules/graphql/package.json" ]; then
        cd "$npmdir" && npm install --no-audit --no-fund --loglevel=error "graphql@$version" >/dev/null
    fi
) 9>"$npmdir.lock"
gqljs=$npmdir/node_modules/graphql
got=$(node -p "require('$gqljs/package.json').version")
if [ "$got" != "$version" ]; then
    echo "graphql difftest: $gqljs is graphql $got, not $version" >&2
    exit 1
fi

self=false
args=()
for a in "$@"; do
    if [ "$a" = --self ]; then self=true; else args+=("$a"); fi
done
if $self; then
    exec node "$here/difftest.mjs" --graphql-js "$gqljs" --corpus "$here/corpus" --self "${args[@]}"
fi
: "${HOOKD_BIN:?HOOKD_BIN names the hookd binary}"

base=/tmp
[ -w /dev/shm ] && base=/dev/shm
tmp=$(mktemp -d "$base/hookd-gqd-XXXXXX")
pid=
pg_dir=
pg_url=
schema=
# shellcheck disable=SC2317  # run by the EXIT trap
cleanup() {
    if [ -n "$pid" ] && kill -0 "$pid" 2>/dev/null; then
        kill -KILL "$pid" 2>/dev/null || true
        wait "$pid" 2>/dev/null || true
    fi
    if [ -n "$schema" ]; then
        psql "$pg_url" -qAt -c "DROP SCHEMA IF EXISTS $schema CASCADE" >/dev/null 2>&1 || true
    fi
    [ -z "$pg_dir" ] || bash "$SRC/scripts/pg.sh" stop "$pg_dir"
    rm -rf "$tmp"
}
trap cleanup EXIT
trap 'exit 130' INT TERM HUP

# hookd's environment: the caller's minus anything hookd reads.
unset_args=()
while IFS= read -r name; do
    unset_args+=(-u "$name")
done < <(compgen -e | grep -E '^(HOOKD_|PORT$|DATABASE_URL)' || true)
hookd_env=(PORT=0 HOOKD_HOST=127.0.0.1 HOOKD_THREADS=2 HOOKD_AUTH=off
           "HOOKD_SQLITE_PATH=$tmp/hookd.db" "HOOKD_SOURCES=$tmp/sources.yaml")

if [ "${HOOKD_TEST_STORE:-}" = pg ]; then
    if ! command -v psql >/dev/null 2>&1; then
        echo "graphql difftest: HOOKD_TEST_STORE=pg needs psql (Debian's postgresql-client); skipped" >&2
        exit 77
    fi
    pg_url=${HOOKD_TEST_DATABASE_URL:-}
    if [ -z "$pg_url" ]; then
        pg_dir=$(bash "$SRC/scripts/pg.sh" start)
        pg_url=$(bash "$SRC/scripts/pg.sh" url "$pg_dir")
    fi
    schema=hk_gqd_$$_$RANDOM
    psql "$pg_url" -v ON_ERROR_STOP=1 -qAt -c "CREATE SCHEMA $schema" >/dev/null
    case "$pg_url" in
    *\?*) hookd_env+=("DATABASE_URL=$pg_url&options=-csearch_path%3D$schema") ;;
    *) hookd_env+=("DATABASE_URL=$pg_url?options=-csearch_path%3D$schema") ;;
    esac
fi

# An ingress source without verification, so that a few rows are deliveries
# (delivery ids, content types, a body that is not text).
cat >"$tmp/sources.yaml" <<'EOF'
sources:
  - name: open
    scheme: none
    eventTypeField: kind
    deliveryIdField: meta.id
EOF

env "${unset_args[@]}" "${hookd_env[@]}" "$HOOKD_BIN" </dev/null >"$tmp/stdout" 2>"$tmp/stderr" &
pid=$!
port=
for _ in $(seq 100); do
    port=$(sed -n 's|.*http://127\.0\.0\.1:\([0-9][0-9]*\).*|\1|p' "$tmp/stdout" | head -1)
    [ -n "$port" ] && break
    kill -0 "$pid" 2>/dev/null || break
    sleep 0.1
done
if [ -z "$port" ]; then
    echo "graphql difftest: hookd did not start (stdout: $(cat "$tmp/stdout"))" >&2
    tail -20 "$tmp/stderr" >&2
    exit 1
fi

rc=0
node "$here/difftest.mjs" --graphql-js "$gqljs" --corpus "$here/corpus" --url "http://127.0.0.1:$port" --load \
    "${args[@]}" || rc=$?

# hookd must still be there, and stop cleanly (a sanitizer build reports
# leaks and errors at exit).
broken=false
if ! kill -TERM "$pid" 2>/dev/null; then
    echo "graphql difftest: hookd died during the run" >&2
    broken=true
fi
st=0
wait "$pid" || st=$?
pid=
if [ "$st" -ne 0 ]; then
    echo "graphql difftest: hookd exited with status $st" >&2
    broken=true
fi
if $broken || grep -qE 'Sanitizer|runtime error:' "$tmp/stderr"; then
    echo "--- hookd's stderr (last 60 lines):" >&2
    tail -60 "$tmp/stderr" >&2
    rc=1
fi
exit "$rc"
