#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# The OCI image (scripts/image.sh), built from the binary under test into a
# scratch directory: its layer holds exactly the expected files, two builds
# give the same digest and the same archive bytes, the config carries the
# user, entrypoint and labels (org.opencontainers.image.created is the
# source date: SOURCE_DATE_EPOCH, else the last commit's time, as a build
# with another SOURCE_DATE_EPOCH shows), and the binary runs from the unpacked rootfs
# (chroot, as user 65532): --version, every library resolvable (the
# dlopen()ed ones included), a request served, SIGTERM → exit 0.
#
# Environment: HOOKD_BIN (the binary), SRC (the source tree). Exit 77 (skip)
# when umoci or skopeo is missing; the chroot part needs root and is skipped
# with a message otherwise.
set -uo pipefail

: "${HOOKD_BIN:?HOOKD_BIN must point at the hookd binary}"
: "${SRC:?SRC must point at the source tree}"
for t in umoci skopeo; do
    if ! command -v "$t" >/dev/null; then
        echo "SKIP: $t is not installed (scripts/deps.sh test installs umoci and skopeo)"
        exit 77
    fi
done
py=/usr/bin/python3
[ -x "$py" ] || py=python3
chroot=$(command -v chroot || echo /usr/sbin/chroot)

tmp=$(mktemp -d "${TMPDIR:-/tmp}/hookd-image-test.XXXXXX")
pids=()
cleanup() {
    for p in "${pids[@]}"; do kill -9 "$p" 2>/dev/null; done
    rm -rf "$tmp"
}
trap cleanup EXIT

failed=0 passed=0
ok() { echo "ok - $*"; passed=$((passed + 1)); }
not_ok() { echo "not ok - $*"; failed=$((failed + 1)); }
check() { # check DESCRIPTION COMMAND...
    local what=$1
    shift
    if "$@"; then ok "$what"; else not_ok "$what"; fi
}

bindir=$(dirname "$HOOKD_BIN")
version=$("$HOOKD_BIN" --version | awk '{print $2}')
# The source date the image must carry, worked out as image.sh documents it.
epoch=${SOURCE_DATE_EPOCH:-$(git -C "$SRC" log -1 --format=%ct 2>/dev/null || echo 0)}
created=$(date -u -d "@$epoch" +%Y-%m-%dT%H:%M:%SZ)

build() { # build OUTDIR [--slim]
    local outdir=$1
    shift
    if ! bash "$SRC/scripts/image.sh" --no-build "$@" --out "$outdir" "$bindir" >"$outdir.log" 2>&1; then
        cat "$outdir.log"
        return 1
    fi
}
t0=$(date +%s%N)
check "image builds" build "$tmp/a" || { echo "cannot go on without an image"; exit 1; }
t1=$(date +%s%N)
echo "# image build: $(( (t1 - t0) / 1000000 )) ms"
cat "$tmp/a.log"
check "second build" build "$tmp/b"
check "slim image builds" build "$tmp/a" --slim

# ---- reproducibility ----
check "same inputs, same digest ($(cat "$tmp/a/hookd-image.digest"))" \
    cmp -s "$tmp/a/hookd-image.digest" "$tmp/b/hookd-image.digest"
check "same inputs, same oci-archive bytes" cmp -s "$tmp/a/hookd-image.oci.tar" "$tmp/b/hookd-image.oci.tar"
check "same inputs, same docker-archive bytes" cmp -s "$tmp/a/hookd-image.docker.tar" "$tmp/b/hookd-image.docker.tar"

# ---- the layer: exactly this, for Debian 12 on amd64 ----
# (libuv, SQLite and jansson are linked in: meson's deps_link=static.)
base=(data/ etc/ etc/group etc/passwd hookd lib/ lib/x86_64-linux-gnu/
      lib/x86_64-linux-gnu/libc.so.6 lib/x86_64-linux-gnu/libm.so.6
      lib64/ lib64/ld-linux-x86-64.so.2)
# libcrypto for HOOKD_WEBHOOK_SECRET; libpq and what it links for DATABASE_URL
# (OpenSSL, Kerberos, OpenLDAP and, through it, GnuTLS); the CA bundle.
extra=(etc/ssl/ etc/ssl/certs/ etc/ssl/certs/ca-certificates.crt)
# libcurl and what it links beyond those, for forwarding (K_SINK,
# HOOKD_FORWARD_URL).
for l in libcom_err.so.2 libcrypto.so.3 libffi.so.8 libgmp.so.10 libgnutls.so.30 libgssapi_krb5.so.2 \
         libhogweed.so.6 libidn2.so.0 libk5crypto.so.3 libkeyutils.so.1 libkrb5.so.3 libkrb5support.so.0 \
         liblber-2.5.so.0 libldap-2.5.so.0 libnettle.so.8 libp11-kit.so.0 libpq.so.5 libresolv.so.2 \
         libsasl2.so.2 libssl.so.3 libtasn1.so.6 libunistring.so.2 \
         libcurl.so.4 libbrotlicommon.so.1 libbrotlidec.so.1 libnghttp2.so.14 libpsl.so.5 librtmp.so.1 \
         libssh2.so.1 libz.so.1 libzstd.so.1; do
    extra+=("lib/x86_64-linux-gnu/$l")
done
same_list() { # same_list FILE ENTRY...: the archive's entries are exactly these
    local f=$1
    shift
    if diff <(printf '%s\n' "$@" | sort) <(sort "$f") >"$tmp/diff"; then
        return 0
    fi
    echo "  layer differs from the expected list (< expected, > in the image):"
    sed 's/^/    /' "$tmp/diff"
    return 1
}
check "full layer holds exactly the expected ${#base[@]}+${#extra[@]} entries" \
    same_list "$tmp/a/hookd-image.files" "${base[@]}" "${extra[@]}"
check "slim layer holds exactly the expected ${#base[@]} entries" \
    same_list "$tmp/a/hookd-image-slim.files" "${base[@]}"
# The list written by image.sh is the layer's own: compare with the blob.
layer_list() {
    mkdir -p "$tmp/x"
    tar -xf "$tmp/a/hookd-image.oci.tar" -C "$tmp/x" || return 1
    local m
    m=$("$py" -c 'import json,sys; print(json.load(open(sys.argv[1]))["manifests"][0]["digest"].split(":")[1])' \
        "$tmp/x/index.json") || return 1
    local l
    l=$("$py" -c 'import json,sys; m=json.load(open(sys.argv[1])); assert len(m["layers"])==1; print(m["layers"][0]["digest"].split(":")[1])' \
        "$tmp/x/blobs/sha256/$m") || return 1
    tar -tzf "$tmp/x/blobs/sha256/$l" | diff - "$tmp/a/hookd-image.files"
}
check "one layer, and its entries are the listed ones" layer_list
owners() {
    tar -tvzf "$(ls -S "$tmp"/x/blobs/sha256/* | head -1)" >"$tmp/tv" || return 1
    grep -q '^drwxr-x--- 65532/65532 .* data/$' "$tmp/tv" || { grep ' data/' "$tmp/tv"; return 1; }
    [ "$(grep -vc ' 0/0 ' "$tmp/tv")" = 1 ] || { grep -v ' 0/0 ' "$tmp/tv"; return 1; }
}
check "/data owned by 65532, everything else by root" owners

# ---- the image config ----
config_ok() { # config_ok DOCKER_ARCHIVE CREATED
    skopeo inspect --config "docker-archive:$1" >"$tmp/config.json" || return 1
    "$py" - "$tmp/config.json" "$version" "$2" <<'PY'
import json, sys
c = json.load(open(sys.argv[1]))
cfg, version, created = c["config"], sys.argv[2], sys.argv[3]
errors = []
def want(cond, what):
    if not cond:
        errors.append(what)
want(cfg.get("User") == "65532:65532", "User 65532:65532")
want(cfg.get("Entrypoint") == ["/hookd"], "Entrypoint [\"/hookd\"] (exec form)")
want(not cfg.get("Cmd"), "no Cmd")
want("8080/tcp" in cfg.get("ExposedPorts", {}), "ExposedPorts 8080/tcp")
want("HOOKD_SQLITE_PATH=/data/hookd.db" in cfg.get("Env", []), "HOOKD_SQLITE_PATH=/data/hookd.db")
labels = cfg.get("Labels", {})
want(labels.get("org.opencontainers.image.version") == version, "version label")
for k in ("source", "revision", "created"):
    want(labels.get("org.opencontainers.image." + k), k + " label")
want(labels.get("org.opencontainers.image.created") == created, "created label " + created)
want(c.get("created") == created, "config created " + created)
want(all(h.get("created") == created for h in c.get("history", [])), "history created " + created)
want(len(c["rootfs"]["diff_ids"]) == 1, "one layer")
if errors:
    print("  config lacks: " + "; ".join(errors))
    print("  " + json.dumps(cfg))
    sys.exit(1)
PY
}
check "config: user 65532, entrypoint /hookd, port, labels, created $created" \
    config_ok "$tmp/a/hookd-image.docker.tar" "$created"
# Another source date gives that date, everywhere, and a different digest.
other_date() {
    SOURCE_DATE_EPOCH=1700000000 build "$tmp/c" || return 1
    config_ok "$tmp/c/hookd-image.docker.tar" 2023-11-14T22:13:20Z || return 1
    tar -xOf "$tmp/c/hookd-image.oci.tar" index.json >"$tmp/c.index" || return 1
    local m
    m=$("$py" -c 'import json,sys; print(json.load(open(sys.argv[1]))["manifests"][0]["digest"].split(":")[1])' \
        "$tmp/c.index") || return 1
    tar -xOf "$tmp/c/hookd-image.oci.tar" "blobs/sha256/$m" |
        grep -q '"org.opencontainers.image.created":"2023-11-14T22:13:20Z"' || { echo "  manifest annotation"; return 1; }
    ! cmp -s "$tmp/a/hookd-image.digest" "$tmp/c/hookd-image.digest" || { echo "  same digest"; return 1; }
}
check "SOURCE_DATE_EPOCH=1700000000: created 2023-11-14T22:13:20Z in label, config, history, annotation" other_date
check "docker-archive names dev.local/hookd:$version" \
    bash -c "tar -xOf '$tmp/a/hookd-image.docker.tar' manifest.json | grep -q '\"dev.local/hookd:$version\"'"

# ---- run it from the unpacked rootfs ----
if [ "$(id -u)" -ne 0 ]; then
    echo "SKIP (chroot part): not root, so the rootfs cannot be entered; the layer checks above ran"
else
    unpack() { # unpack OCI_TAR TAG DIR
        mkdir -p "$3.oci" && tar -xf "$1" -C "$3.oci" &&
            umoci unpack --image "$3.oci:$2" "$3" >/dev/null
    }
    check "unpack (umoci)" unpack "$tmp/a/hookd-image.oci.tar" "dev.local/hookd:$version" "$tmp/full"
    check "unpack slim (umoci)" unpack "$tmp/a/hookd-image-slim.oci.tar" "dev.local/hookd:$version-slim" "$tmp/slim"
    root=$tmp/full/rootfs
    run_in() { # run_in ROOTFS CMD...: as the image's user, with nothing from the host's environment
        local r=$1
        shift
        env -i "$chroot" --userspec=65532:65532 "$r" "$@"
    }
    version_ok() {
        local v
        v=$(run_in "$root" /hookd --version) && [ "$v" = "hookd $version" ] || { echo "  got: $v"; return 1; }
    }
    check "/hookd --version in the rootfs, as 65532" version_ok
    resolves() { # resolves ROOTFS PATH: the loader finds every dependency inside the rootfs
        local o
        o=$(run_in "$1" /lib64/ld-linux-x86-64.so.2 --list "$2" 2>&1) || { echo "$o"; return 1; }
        ! grep -q 'not found' <<<"$o" || { echo "$o" | grep 'not found'; return 1; }
    }
    for f in /hookd /lib/x86_64-linux-gnu/libcrypto.so.3 /lib/x86_64-linux-gnu/libpq.so.5; do
        check "every library of $f resolves inside the image" resolves "$root" "$f"
    done
    check "slim: every library of /hookd resolves" resolves "$tmp/slim/rootfs" /hookd

    # serve ROOTFS [VAR=VALUE...]: start it, GET /q/health/ready, SIGTERM, exit 0.
    serve() {
        local r=$1
        shift
        rm -f "$tmp/out" "$tmp/err"
        env -i PORT=0 HOOKD_HOST=127.0.0.1 HOOKD_THREADS=2 HOOKD_SQLITE_PATH=/data/hookd.db "$@" \
            "$chroot" --userspec=65532:65532 "$r" /hookd >"$tmp/out" 2>"$tmp/err" &
        local pid=$! port= i
        pids+=("$pid")
        for i in $(seq 100); do
            port=$(sed -n 's|.*Listening on: http://127.0.0.1:\([0-9]*\)$|\1|p' "$tmp/out")
            [ -n "$port" ] && break
            kill -0 "$pid" 2>/dev/null || break
            sleep 0.05
        done
        if [ -z "$port" ]; then
            echo "  no ready line; stderr:"; sed 's/^/    /' "$tmp/err"
            kill -9 "$pid" 2>/dev/null; wait "$pid" 2>/dev/null
            return 1
        fi
        local code
        code=$(curl -s -o /dev/null -w '%{http_code}' --max-time 5 "http://127.0.0.1:$port/q/health/ready")
        kill -TERM "$pid"
        local st=0
        for i in $(seq 100); do kill -0 "$pid" 2>/dev/null || break; sleep 0.05; done
        wait "$pid" || st=$?
        [ "$code" = 200 ] || { echo "  /q/health/ready answered $code"; return 1; }
        [ "$st" = 0 ] || { echo "  exit status $st after SIGTERM"; sed 's/^/    /' "$tmp/err"; return 1; }
        [ -s "$r/data/hookd.db" ] || { echo "  no database in /data"; return 1; }
    }
    check "serves /q/health/ready from the rootfs as 65532, SQLite in /data, SIGTERM -> exit 0" serve "$root"
    check "with HOOKD_WEBHOOK_SECRET (libcrypto dlopen()ed inside the image)" \
        serve "$root" HOOKD_WEBHOOK_SECRET=s3cret
    slim_secret_fails() {
        local o st=0
        o=$(env -i PORT=0 HOOKD_WEBHOOK_SECRET=x timeout 5 "$chroot" --userspec=65532:65532 "$tmp/slim/rootfs" /hookd 2>&1) ||
            st=$?
        [ "$st" != 0 ] && [ "$st" != 124 ] && grep -q 'libcrypto' <<<"$o" || { echo "  status $st: $o"; return 1; }
    }
    check "slim: HOOKD_WEBHOOK_SECRET fails fast naming libcrypto" slim_secret_fails
    # DATABASE_URL to a port nobody listens on: the full image gets as far
    # as libpq's own "connection refused" (libpq and its dependencies loaded
    # inside the image); the slim one stops at loading libpq.
    pg_attempt() { # pg_attempt ROOTFS PATTERN
        local o st=0
        o=$(env -i PORT=0 DATABASE_URL=postgresql://127.0.0.1:1/hookd timeout 10 "$chroot" --userspec=65532:65532 \
            "$1/rootfs" /hookd 2>&1) || st=$?
        [ "$st" != 0 ] && [ "$st" != 124 ] && grep -q "$2" <<<"$o" || { echo "  status $st: $o"; return 1; }
    }
    check "DATABASE_URL: libpq loads inside the image and tries the server" pg_attempt "$tmp/full" 'Connection refused'
    check "slim: DATABASE_URL fails fast naming libpq" pg_attempt "$tmp/slim" 'cannot load libpq'
fi

echo "$passed passed, $failed failed"
[ "$failed" = 0 ]
