#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Builds hookd twice, release in build/ and debug with ASan+UBSan in
# build-asan/ (warnings are errors in both), runs the unit and integ suites in
# each, and ends with one line "N passed, N failed". Called by `make test`
# after scripts/deps.sh test.
#
# The count is of test cases: Criterion prints "Synthesis: Tested: T |
# Passing: P | Failing: F | Crashing: C" per program, read back from
# meson-logs/testlog.json. A program without that line counts as one case.
set -euo pipefail
cd "$(dirname "$0")/.."

suites=(unit integ integ-pg)
rel_dir=build
rel_opts=(-Dbuildtype=release -Dwerror=true -Dtests=enabled)
asan_dir=build-asan
# shellcheck disable=SC2054  # the comma is meson's list syntax
asan_opts=(-Dbuildtype=debug -Dwerror=true -Dtests=enabled
           -Db_sanitize=address,undefined -Db_lundef=false)
asan_env=(ASAN_OPTIONS=detect_leaks=1:abort_on_error=1
          LSAN_OPTIONS=suppressions=$PWD/tests/lsan.supp:print_suppressions=0
          UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1)

# Meson's own interpreter: always there when meson is, unlike a python3
# first on PATH that may be someone's virtualenv.
py=/usr/bin/python3
[ -x "$py" ] || py=python3

# configure DIR OPTION...: set DIR up, or change the options that differ. An
# unchanged directory is left alone, so ninja has nothing to regenerate.
configure() {
    local dir=$1
    shift
    if [ ! -f "$dir/meson-private/coredata.dat" ]; then
        meson setup "$dir" "$@"
        return
    fi
    meson introspect "$dir" --buildoptions | "$py" -c '
import json, sys
have = {o["name"]: o["value"] for o in json.load(sys.stdin)}
def norm(v):
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, list):
        return ",".join(map(str, v))
    return str(v)
for arg in sys.argv[1:]:
    k, v = arg[2:].split("=", 1)
    if norm(have.get(k)) != v:
        sys.exit(1)
' "$@" || meson configure "$dir" "$@"
}

# libFuzzer needs clang: a third directory, fuzz targets only, each run for
# a bounded time over its seed corpus (FUZZ_SECONDS, default 20).
fuzz_dir=build-fuzz
# shellcheck disable=SC2054
fuzz_opts=(-Dbuildtype=debug -Dwerror=true -Dtests=disabled -Dfuzz=enabled
           -Dfuzz_seconds="${FUZZ_SECONDS:-20}"
           -Db_sanitize=address,undefined -Db_lundef=false)

configure "$rel_dir" "${rel_opts[@]}"
configure "$asan_dir" "${asan_opts[@]}"
if [ ! -f "$fuzz_dir/meson-private/coredata.dat" ]; then
    CC=clang meson setup "$fuzz_dir" "${fuzz_opts[@]}"
else
    configure "$fuzz_dir" "${fuzz_opts[@]}"
fi
for dir in "$rel_dir" "$asan_dir" "$fuzz_dir"; do
    if ! ninja -C "$dir"; then
        echo "test.sh: build failed in $dir/, no tests run" >&2
        exit 1
    fi
done

suite_args=()
for s in "${suites[@]}"; do
    suite_args+=(--suite "$s")
done

# run_tests DIR [VAR=VALUE...]: sets test_rc to meson's exit code. A stale
# testlog.json would be counted as this run's, so it goes first.
run_tests() {
    local dir=$1
    shift
    rm -f "$dir/meson-logs/testlog.json"
    test_rc=0
    env "$@" meson test -C "$dir" --no-rebuild --print-errorlogs \
        "${suite_args[@]}" || test_rc=$?
}
# The integ-pg suite runs against a throwaway PostgreSQL cluster, and the
# Redis tests against a throwaway Redis, both torn down however this script
# ends.
redis_dir=
pg_dir=$(bash scripts/pg.sh start) || { echo "test.sh: cannot start PostgreSQL (scripts/pg.sh)" >&2; exit 1; }
trap 'bash scripts/pg.sh stop "$pg_dir"; [ -z "$redis_dir" ] || bash scripts/redis.sh stop "$redis_dir"' EXIT
trap 'exit 130' INT TERM HUP
HOOKD_TEST_DATABASE_URL=$(bash scripts/pg.sh url "$pg_dir")
export HOOKD_TEST_DATABASE_URL
redis_dir=$(bash scripts/redis.sh start) || { echo "test.sh: cannot start Redis (scripts/redis.sh)" >&2; exit 1; }
HOOKD_TEST_REDIS_URL=$(bash scripts/redis.sh url "$redis_dir")
export HOOKD_TEST_REDIS_URL

run_tests "$rel_dir"
rel_rc=$test_rc
run_tests "$asan_dir" "${asan_env[@]}"
asan_rc=$test_rc
suite_args=(--suite fuzz)
run_tests "$fuzz_dir" "${asan_env[@]}"
fuzz_rc=$test_rc
bash scripts/pg.sh stop "$pg_dir"
bash scripts/redis.sh stop "$redis_dir"
trap - EXIT INT TERM HUP

exec "$py" - "release:$rel_dir:$rel_rc" "asan:$asan_dir:$asan_rc" "fuzz:$fuzz_dir:$fuzz_rc" <<'PY'
import json, os, re, sys

ANSI = re.compile(r"\x1b\[[0-9;]*m")
SYNTH = re.compile(r"Synthesis: Tested: (\d+) \| Passing: (\d+) \| "
                   r"Failing: (\d+) \| Crashing: (\d+)")
# Criterion counts a case as passing when its body passed even if the child
# then died in teardown, which is where LeakSanitizer reports a leak.
BROKEN = re.compile(r"Warning! The test `([^`]+)` crashed during its "
                    r"setup or teardown")
GOOD = {"OK", "EXPECTEDFAIL"}

FAILCASE = re.compile(r"^\[FAIL\] (\S+?):? ", re.M)
ASSERT = re.compile(r"^\[----\] (\S+:\d+): Assertion Failed\n((?:\[----\]   .*\n?)*)", re.M)

passed = failed = skipped = 0
failures = []  # (label, program, case or "", first assertion message)
print("\ntest programs (cases counted from Criterion's Synthesis line):")
for arg in sys.argv[1:]:
    label, d, rc = arg.split(":")
    rc = int(rc)
    path = os.path.join(d, "meson-logs", "testlog.json")
    tests = []
    if os.path.exists(path):
        with open(path, encoding="utf-8", errors="replace") as f:
            tests = [json.loads(line) for line in f if line.strip()]
    tests.sort(key=lambda t: t["name"])
    dir_failed = 0
    for t in tests:
        res = t.get("result", "?")
        name = t["name"].split(":", 1)[-1].replace(" / ", "/")
        if res == "SKIP":
            skipped += 1
            print(f"  {label:8} {name:28} SKIP")
            continue
        out = ANSI.sub("", (t.get("stdout") or "") + (t.get("stderr") or ""))
        m = SYNTH.findall(out)
        note = ""
        if m and res != "EXPECTEDFAIL":
            tested, p, f, _ = map(int, m[-1])
            broken = min(len(set(BROKEN.findall(out))), p)
            p, f = p - broken, max(f, tested - p) + broken
            if broken:
                note = f" ({broken} died in teardown)"
        else:
            p, f = (1, 0) if res in GOOD else (0, 1)
        if res not in GOOD and f == 0:
            f = 1
            note = f" (+1: {res}, exit status {t.get('returncode')}, after every case passed)"
        passed += p
        failed += f
        dir_failed += f
        if f:
            cases = FAILCASE.findall(out) or [""]
            asserts = ASSERT.findall(out)
            why = ""
            if asserts:
                where, msg = asserts[0]
                why = where + ": " + " ".join(l[len("[----]   "):].strip() for l in msg.splitlines()).strip()[:300]
            for c in cases[:5]:
                failures.append((label, name, c, why))
        print(f"  {label:8} {name:28} {res:8} cases {p + f:4}  failed {f}{note}")
    if rc != 0 and dir_failed == 0:
        failed += 1
        print(f"  {label:8} meson test exited {rc} with no failing test: counted as 1 failed")
    elif not tests:
        print(f"  {label:8} no tests ran in {d}/")

if skipped:
    print(f"{skipped} test programs skipped")
# The failing cases again, last, so a log's tail names them.
if failures:
    print("failed:")
    for label, prog, case, why in failures[:20]:
        print(f"  {label:8} {prog} {case}".rstrip())
        if why:
            print(f"           {why}")
if passed + failed == 0:
    print("test.sh: no test ran; that is a failure too")
print(f"{passed} passed, {failed} failed")
sys.exit(1 if failed or passed == 0 else 0)
PY
