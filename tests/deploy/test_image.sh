#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# The OCI image (scripts/image.sh) of the lean static hookd, built here by
# scripts/lean.sh into $LEAN_DIR (default $BUILD/lean): the layer holds
# exactly the expected files and stays under the size targets (10 MB raw,
# 4 MB compressed), two builds give the same digest and the same archive
# bytes, the config carries the user, entrypoint and labels
# (org.opencontainers.image.created is the source date: SOURCE_DATE_EPOCH,
# else the last commit's time, as a build with another SOURCE_DATE_EPOCH
# shows). Then, from the unpacked rootfs (chroot, as user 65532, env -i,
# with /etc/hosts and /etc/resolv.conf added as Kubernetes mounts them):
# --version; SQLite POST and GET; signed deliveries (HOOKD_WEBHOOK_SECRET
# and a sources file: the static libcrypto); forwarding to sinks named in
# /etc/hosts, in DNS through resolv.conf's search list (a DNS server of the
# test's, tests/deploy/dns.py) and over https with the image's CA bundle
# (the static libcurl and glibc's resolver); PostgreSQL over TLS
# (scripts/pg.sh start --ssl) by host name with sslmode=require and
# verify-full, and clear errors without a root certificate or with the wrong
# one; SIGTERM -> exit 0 each time.
#
# Environment: SRC (the source tree), BUILD (a build directory, for the
# default LEAN_DIR). Exit 77 (skip) when umoci or skopeo is missing; the
# chroot part needs root and is skipped with a message otherwise, the
# PostgreSQL part when PostgreSQL's server binaries are absent, the DNS part
# when 127.0.0.77:53 cannot be bound.
set -uo pipefail

: "${SRC:?SRC must point at the source tree}"
lean=${LEAN_DIR:-${BUILD:?BUILD or LEAN_DIR must be set}/lean}
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
pgdir=
cleanup() {
    for p in "${pids[@]}"; do kill -9 "$p" 2>/dev/null; done
    [ -z "$pgdir" ] || bash "$SRC/scripts/pg.sh" stop "$pgdir"
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

# ---- the lean binary ----
t0=$(date +%s)
if ! bin=$(bash "$SRC/scripts/lean.sh" "$lean" 2>"$tmp/lean.log"); then
    tail -40 "$tmp/lean.log"
    echo "not ok - scripts/lean.sh $lean failed; cannot go on"
    exit 1
fi
echo "# lean build: $(($(date +%s) - t0)) s ($bin)"
static_bin() {
    ! readelf -lW "$bin" | grep -q 'program interpreter' && ! readelf -dW "$bin" | grep -q NEEDED
}
check "scripts/lean.sh made a static executable (no loader, no NEEDED)" static_bin
# scripts/lean.order took effect: what start-up runs sits at the start of
# .text (linked in archive order, glibc's start is 4.5 MB in and libpq's
# connect 3.8 MB; laid out, 0.4 MB both).
laid_out() {
    local text sym addr rc=0
    text=$(readelf -SW "$bin" | sed -n 's/^ *\[ *[0-9]*\] \.text  *PROGBITS  *\([0-9a-f]*\) .*/\1/p')
    [ -n "$text" ] || { echo "  no .text in $bin"; return 1; }
    for sym in __libc_start_main PQconnectStartParams; do
        addr=$(nm "$bin" | awk -v s="$sym" '$3 == s {print $1; exit}')
        [ -n "$addr" ] || { echo "  $sym: not in $bin"; rc=1; continue; }
        if [ $((0x$addr - 0x$text)) -ge $((1024 * 1024)) ]; then
            echo "  $sym at .text + $(((0x$addr - 0x$text) / 1024)) KB, not within the first 1 MB"
            rc=1
        fi
    done
    return $rc
}
check "start-up's functions first in .text (scripts/lean.order)" laid_out
version=$("$bin" --version | awk '{print $2}')
# The source date the image must carry, worked out as image.sh documents it.
epoch=${SOURCE_DATE_EPOCH:-$(git -C "$SRC" log -1 --format=%ct 2>/dev/null || echo 0)}
created=$(date -u -d "@$epoch" +%Y-%m-%dT%H:%M:%SZ)

build() { # build OUTDIR [image.sh option...]
    local outdir=$1
    shift
    if ! bash "$SRC/scripts/image.sh" --no-build "$@" --out "$outdir" "$lean" >"$outdir.log" 2>&1; then
        cat "$outdir.log"
        return 1
    fi
}
t1=$(date +%s%N)
check "image builds" build "$tmp/a" || { echo "cannot go on without an image"; exit 1; }
echo "# image build: $((($(date +%s%N) - t1) / 1000000)) ms"
cat "$tmp/a.log"
check "second build" build "$tmp/b"
dynamic_refused() {
    mkdir -p "$tmp/dyn" && cp /bin/true "$tmp/dyn/hookd" || return 1
    local o
    o=$(bash "$SRC/scripts/image.sh" --no-build --out "$tmp/dyn/out" "$tmp/dyn" 2>&1) && { echo "  built: $o"; return 1; }
    grep -q 'dynamically linked' <<<"$o" || { echo "  $o"; return 1; }
}
check "a dynamic binary is refused, with the reason" dynamic_refused

# ---- reproducibility ----
check "same inputs, same digest ($(cat "$tmp/a/hookd-image.digest"))" \
    cmp -s "$tmp/a/hookd-image.digest" "$tmp/b/hookd-image.digest"
check "same inputs, same oci-archive bytes" cmp -s "$tmp/a/hookd-image.oci.tar" "$tmp/b/hookd-image.oci.tar"
check "same inputs, same docker-archive bytes" cmp -s "$tmp/a/hookd-image.docker.tar" "$tmp/b/hookd-image.docker.tar"

# ---- the layer: exactly this ----
expected=(data/ etc/ etc/group etc/passwd etc/ssl/ etc/ssl/certs/ etc/ssl/certs/ca-certificates.crt hookd)
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
check "layer holds exactly the expected ${#expected[@]} entries (no library, no loader)" \
    same_list "$tmp/a/hookd-image.files" "${expected[@]}"
mkdir -p "$tmp/x"
tar -xf "$tmp/a/hookd-image.oci.tar" -C "$tmp/x"
blob() { # blob MANIFEST_KEY...: the path of the manifest's layer (or config) blob
    "$py" - "$tmp/x" "$1" <<'PY'
import json, sys
root, what = sys.argv[1], sys.argv[2]
idx = json.load(open(root + "/index.json"))
m = json.load(open(root + "/blobs/" + idx["manifests"][0]["digest"].replace(":", "/")))
assert len(m["layers"]) == 1, "layers: %d" % len(m["layers"])
d = m["layers"][0] if what == "layer" else m["config"]
print(root + "/blobs/" + d["digest"].replace(":", "/"))
PY
}
layer=$(blob layer)
layer_list() {
    [ -f "$layer" ] || return 1
    tar -tzf "$layer" | diff - "$tmp/a/hookd-image.files"
}
check "one layer, and its entries are the listed ones" layer_list
owners() {
    tar -tvzf "$layer" >"$tmp/tv" || return 1
    grep -q '^drwxr-x--- 65532/65532 .* data/$' "$tmp/tv" || { grep ' data/' "$tmp/tv"; return 1; }
    [ "$(grep -vc ' 0/0 ' "$tmp/tv")" = 1 ] || { grep -v ' 0/0 ' "$tmp/tv"; return 1; }
}
check "/data owned by 65532, everything else by root" owners

# ---- sizes: the issue's targets, on the layer blob itself ----
raw_max=10000000 gz_max=4000000
sizes_ok() {
    local raw gz json_raw json_gz
    raw=$(gzip -dc "$layer" | wc -c)
    gz=$(stat -c %s "$layer")
    read -r json_raw json_gz < <("$py" -c 'import json,sys; j=json.load(open(sys.argv[1])); print(j["layerRawBytes"], j["layerCompressedBytes"])' \
        "$tmp/a/hookd-image.json") || return 1
    echo "# layer: raw $raw bytes (limit $raw_max), compressed $gz bytes (limit $gz_max)"
    [ "$raw" = "$json_raw" ] && [ "$gz" = "$json_gz" ] ||
        { echo "  hookd-image.json says raw $json_raw, compressed $json_gz"; return 1; }
    [ "$raw" -le "$raw_max" ] && [ "$gz" -le "$gz_max" ]
}
check "layer <= 10 MB raw and <= 4 MB compressed (hookd-image.json says the same)" sizes_ok
stripped() {
    tar -xzf "$layer" -C "$tmp/x" hookd || return 1
    ! readelf -SW "$tmp/x/hookd" | grep -q '\.symtab\|\.debug_'
}
check "/hookd in the layer is stripped" stripped

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
want(cfg.get("WorkingDir") == "/data", "WorkingDir /data")
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
# The layer blob was recompressed after umoci: the config's diff_id must
# still be the uncompressed layer's digest.
diff_id_ok() {
    local cfg want
    cfg=$(blob config) || return 1
    want=sha256:$(gzip -dc "$layer" | sha256sum | cut -d' ' -f1)
    grep -q "\"diff_ids\":\[\"$want\"\]" "$cfg" || { echo "  diff_id is not $want"; return 1; }
}
check "config diff_id is the uncompressed layer's digest" diff_id_ok
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
    echo "$passed passed, $failed failed"
    [ "$failed" = 0 ]
    exit
fi

unpack() { # unpack OCI_TAR TAG DIR
    mkdir -p "$3.oci" && tar -xf "$1" -C "$3.oci" &&
        umoci unpack --image "$3.oci:$2" "$3" >/dev/null
}
check "unpack (umoci)" unpack "$tmp/a/hookd-image.oci.tar" "dev.local/hookd:$version" "$tmp/img" ||
    { echo "$passed passed, $failed failed"; exit 1; }
root=$tmp/img/rootfs
# What Kubernetes mounts into every container: /etc/hosts (with the pod's
# names and hostAliases) and /etc/resolv.conf (the cluster DNS and the
# namespace's search list, ndots:5). The names: sink-hosts and pg-tls only
# in /etc/hosts; sink in DNS only, as sink.default.svc.cluster.local, found
# through the search list; tls-sink (whose certificate names it) and
# tls-wrong (whose certificate does not) in /etc/hosts.
dns_ip=127.0.0.77
cat >"$root/etc/hosts" <<'HOSTS'
127.0.0.1 localhost
127.0.0.1 sink-hosts pg-tls tls-sink tls-wrong
HOSTS
cat >"$root/etc/resolv.conf" <<RESOLV
nameserver $dns_ip
search default.svc.cluster.local svc.cluster.local cluster.local
options ndots:5
RESOLV

run_in() { # run_in CMD...: as the image's user, with nothing from the host's environment
    env -i "$chroot" --userspec=65532:65532 "$root" "$@"
}
version_ok() {
    local v
    v=$(run_in /hookd --version) && [ "$v" = "hookd $version" ] || { echo "  got: $v"; return 1; }
}
check "/hookd --version in the rootfs, as 65532" version_ok

# start VAR=VALUE...: hookd in the rootfs as 65532 with only these variables
# (and the image's own); sets $hport and $hpid once it listens.
hpid='' hport=''
start() {
    rm -f "$tmp/out" "$tmp/err"
    env -i PORT=0 HOOKD_HOST=127.0.0.1 HOOKD_THREADS=2 HOOKD_AUTH=off HOOKD_SQLITE_PATH=/data/hookd.db \
        SQLITE_TMPDIR=/data "$@" "$chroot" --userspec=65532:65532 "$root" /hookd >"$tmp/out" 2>"$tmp/err" &
    hpid=$!
    pids+=("$hpid")
    hport=
    local i
    for i in $(seq 200); do
        hport=$(sed -n 's|.*Listening on: http://127.0.0.1:\([0-9]*\)$|\1|p' "$tmp/out")
        [ -n "$hport" ] && return 0
        kill -0 "$hpid" 2>/dev/null || break
        sleep 0.05
    done
    echo "  no ready line; stderr:"
    sed 's/^/    /' "$tmp/err"
    kill -9 "$hpid" 2>/dev/null
    wait "$hpid" 2>/dev/null
    return 1
}
stop() { # SIGTERM, then exit status 0 within 5 s
    kill -TERM "$hpid"
    local st=0 i
    for i in $(seq 100); do kill -0 "$hpid" 2>/dev/null || break; sleep 0.05; done
    wait "$hpid" || st=$?
    [ "$st" = 0 ] || { echo "  exit status $st after SIGTERM"; sed 's/^/    /' "$tmp/err"; return 1; }
}
http() { # http METHOD PATH [curl args...]: prints the status, the body in $tmp/body
    local m=$1 p=$2
    shift 2
    curl -s -o "$tmp/body" -w '%{http_code}' --max-time 10 -X "$m" "http://127.0.0.1:$hport$p" "$@"
}
post_envelope() { # post_envelope SOURCE: 201, and prints the new id
    local code
    code=$(http POST /api/webhooks -H 'Content-Type: application/json' \
        -d "{\"source\":\"$1\",\"eventType\":\"image.test\",\"payload\":\"hello from $1\"}")
    [ "$code" = 201 ] || { echo "  POST /api/webhooks: $code $(cat "$tmp/body")" >&2; return 1; }
    "$py" -c 'import json,sys; print(json.load(open(sys.argv[1]))["id"])' "$tmp/body"
}
get_has() { # get_has ID TEXT: GET /api/webhooks/ID answers 200 with TEXT in it
    local code
    code=$(http GET "/api/webhooks/$1")
    [ "$code" = 200 ] && grep -qF "$2" "$tmp/body" || { echo "  GET /api/webhooks/$1: $code $(cat "$tmp/body")"; return 1; }
}

sqlite_serves() {
    start || return 1
    local code id rc=0
    code=$(http GET /q/health/ready)
    [ "$code" = 200 ] || { echo "  /q/health/ready: $code"; rc=1; }
    id=$(post_envelope sqlite) && get_has "$id" '"payload":"hello from sqlite"' || rc=1
    stop || rc=1
    [ -s "$root/data/hookd.db" ] || { echo "  no database in /data"; rc=1; }
    return $rc
}
check "SQLite in /data: health, POST and GET from the rootfs as 65532, SIGTERM -> exit 0" sqlite_serves
# Resident memory after ready, a POST and a GET: most of it is code pages,
# mapped with their neighbours around the ones start-up touches, so it
# says whether scripts/lean.order took effect. Linked in archive order:
# 4.7 MB on SQLite, 3.7 MB on PostgreSQL (below); laid out, 3.5 and 2.5.
# small_rss NAME MAX_KB VAR=VALUE...
small_rss() {
    local name=$1 max=$2 id rss rc=0
    shift 2
    start "$@" || return 1
    http GET /q/health/ready >/dev/null
    id=$(post_envelope "$name") && get_has "$id" "\"payload\":\"hello from $name\"" || rc=1
    rss=$(awk '$1 == "Rss:" {print $2}' "/proc/$hpid/smaps_rollup")
    echo "# RSS after ready, a POST and a GET ($name): $rss kB"
    [ -n "$rss" ] && [ "$rss" -le "$max" ] || { echo "  RSS $rss kB, more than $max"; rc=1; }
    stop || rc=1
    return $rc
}
check "RSS after ready, a POST and a GET on SQLite <= 4 MB" small_rss sqlite 4096

# ---- signatures: the static libcrypto ----
hmac_hex() { # hmac_hex KEY FILE
    "$py" -c 'import hmac, hashlib, sys; print(hmac.new(sys.argv[1].encode(), open(sys.argv[2], "rb").read(), hashlib.sha256).hexdigest())' "$1" "$2"
}
printf '{"source":"signed","eventType":"push","payload":"signed body"}' >"$tmp/signed.json"
secret_signed() {
    start HOOKD_WEBHOOK_SECRET=image-test-secret || return 1
    local rc=0 code
    code=$(http POST /api/webhooks -H 'Content-Type: application/json' --data-binary @"$tmp/signed.json")
    [ "$code" = 401 ] || { echo "  unsigned POST: $code"; rc=1; }
    code=$(http POST /api/webhooks -H 'Content-Type: application/json' --data-binary @"$tmp/signed.json" \
        -H "X-Hub-Signature-256: sha256=$(hmac_hex wrong-secret "$tmp/signed.json")")
    [ "$code" = 401 ] || { echo "  POST signed with another secret: $code"; rc=1; }
    code=$(http POST /api/webhooks -H 'Content-Type: application/json' --data-binary @"$tmp/signed.json" \
        -H "X-Hub-Signature-256: sha256=$(hmac_hex image-test-secret "$tmp/signed.json")")
    [ "$code" = 201 ] || { echo "  signed POST: $code $(cat "$tmp/body")"; rc=1; }
    stop || rc=1
    return $rc
}
check "HOOKD_WEBHOOK_SECRET: unsigned and wrongly signed -> 401, signed -> 201 (HMAC by the static libcrypto)" \
    secret_signed

# ---- sinks: by /etc/hosts, by DNS, over https ----
# (The helpers are disowned: killed at the end, they die without a word.)
"$py" "$SRC/tests/forward/sink.py" --host 127.0.0.1 --port 0 --ledger "$tmp/ledger.jsonl" >"$tmp/sink.out" 2>&1 &
pids+=($!)
disown $!
"$py" "$SRC/tests/deploy/dns.py" --host "$dns_ip" --log "$tmp/dns.log" \
    sink.default.svc.cluster.local=127.0.0.1 >"$tmp/dns.out" 2>&1 &
pids+=($!)
disown $!
# An https sink: a certificate for tls-sink only, added to the CA bundle of
# the test's rootfs (the image's own bundle is the public CAs').
openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -days 1 -subj /CN=tls-sink \
    -addext subjectAltName=DNS:tls-sink -keyout "$tmp/tls.key" -out "$tmp/tls.crt" >/dev/null 2>&1
cat "$tmp/tls.crt" >>"$root/etc/ssl/certs/ca-certificates.crt"
"$py" - "$tmp/tls.crt" "$tmp/tls.key" "$tmp/tls.log" >"$tmp/tls.out" 2>&1 <<'PY' &
import http.server, ssl, sys
crt, key, log = sys.argv[1:4]
class H(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    def do_POST(self):
        self.rfile.read(int(self.headers.get("Content-Length", 0)))
        with open(log, "a") as f:
            f.write(self.path + " " + self.headers.get("ce-id", "") + "\n")
        self.send_response(200)
        self.send_header("Content-Length", "0")
        self.end_headers()
    def log_message(self, *a):
        pass
s = http.server.ThreadingHTTPServer(("127.0.0.1", 0), H)
ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
ctx.load_cert_chain(crt, key)
s.socket = ctx.wrap_socket(s.socket, server_side=True)
print(s.server_address[1], flush=True)
s.serve_forever()
PY
pids+=($!)
disown $!
sport='' tport='' dns_up=''
for _ in $(seq 100); do
    sport=$(head -1 "$tmp/sink.out" 2>/dev/null)
    tport=$(head -1 "$tmp/tls.out" 2>/dev/null)
    grep -q ready "$tmp/dns.out" 2>/dev/null && dns_up=1
    [[ $sport =~ ^[0-9]+$ && $tport =~ ^[0-9]+$ && -n $dns_up ]] && break
    sleep 0.05
done
[ -n "$dns_up" ] || { echo "# the DNS server did not start on $dns_ip:53:"; sed 's/^/#   /' "$tmp/dns.out"; }
cat >"$root/data/sources.yaml" <<YAML
sources:
  - name: signed
    scheme: github
    secrets: [{env: GH_SECRET}]
    forward: false
  - name: byhosts
    scheme: none
    forward: {url: "http://sink-hosts:$sport/byhosts"}
  - name: bydns
    scheme: none
    forward: {url: "http://sink:$sport/bydns"}
  - name: tls
    scheme: none
    forward: {url: "https://tls-sink:$tport/tls"}
  - name: tlswrong
    scheme: none
    forward: {url: "https://tls-wrong:$tport/tlswrong"}
YAML
chown 65532:65532 "$root/data/sources.yaml"

wait_for() { # wait_for SECONDS COMMAND...: until COMMAND succeeds (quiet until the last try)
    local n=$(($1 * 20))
    shift
    for _ in $(seq "$n"); do "$@" >/dev/null 2>&1 && return 0; sleep 0.05; done
    "$@"
}
delivered_to() { grep -q "\"path\": *\"/$1\"" "$tmp/ledger.jsonl" 2>/dev/null; }
row_state() { # row_state ID: the delivery's state and last error, from GET
    http GET "/api/webhooks/$1" >/dev/null
    "$py" -c 'import json,sys; d=json.load(open(sys.argv[1]))["delivery"]; print(d["state"], d.get("lastError"))' "$tmp/body"
}
post_hook() { # post_hook SOURCE [curl args]: POST /hooks/SOURCE; prints the row id
    local s=$1 code
    shift
    code=$(http POST "/hooks/$s" -H 'Content-Type: application/json' --data-binary @"$tmp/signed.json" "$@")
    [[ $code == 20[01] ]] || { echo "  POST /hooks/$s: $code $(cat "$tmp/body")" >&2; return 1; }
    "$py" -c 'import json,sys; print(json.load(open(sys.argv[1]))["id"])' "$tmp/body"
}
ids=()
sources_serve() {
    start HOOKD_SOURCES=/data/sources.yaml GH_SECRET=image-gh-secret HOOKD_FORWARD_BACKOFF=100ms \
        HOOKD_FORWARD_URL="http://sink-hosts:$sport/default" || return 1
    local rc=0 code id
    code=$(http POST /hooks/signed -H 'Content-Type: application/json' --data-binary @"$tmp/signed.json" \
        -H 'X-GitHub-Event: push' -H "X-Hub-Signature-256: sha256=$(hmac_hex not-it "$tmp/signed.json")")
    [ "$code" = 401 ] || { echo "  /hooks/signed with a wrong signature: $code"; rc=1; }
    id=$(post_hook signed -H 'X-GitHub-Event: push' \
        -H "X-Hub-Signature-256: sha256=$(hmac_hex image-gh-secret "$tmp/signed.json")") &&
        get_has "$id" '"verified":{"scheme":"github"' || rc=1
    for s in byhosts bydns tls tlswrong; do
        id=$(post_hook "$s") || { rc=1; id=; }
        ids+=("$s:$id")
    done
    return $rc
}
check "sources file: github signature verified (the static libcrypto), wrong one -> 401" sources_serve
row_of() { local e; for e in "${ids[@]}"; do [ "${e%%:*}" = "$1" ] && echo "${e#*:}"; done; }
check "forwarded to http://sink-hosts (a name only /etc/hosts knows)" wait_for 10 delivered_to byhosts
hosts_first() {
    ! grep -q '^sink-hosts' "$tmp/dns.log" 2>/dev/null || { echo "  sink-hosts was asked of DNS:"; cat "$tmp/dns.log"; return 1; }
}
check "/etc/hosts is read before DNS (sink-hosts never reached the DNS server)" hosts_first
if [ -n "$dns_up" ]; then
    check "forwarded to http://sink (DNS: sink.default.svc.cluster.local through the search list)" \
        wait_for 10 delivered_to bydns
    dns_asked() { grep -q '^sink.default.svc.cluster.local A NOERROR' "$tmp/dns.log" || { cat "$tmp/dns.log"; return 1; }; }
    check "the DNS server answered sink.default.svc.cluster.local" dns_asked
else
    # Something else holds port 53 on every address (a dnsmasq on 0.0.0.0):
    # the /etc/hosts checks above still ran.
    echo "SKIP (DNS part): the test's DNS server could not bind $dns_ip:53"
fi
tls_delivered() { grep -q '^/tls ' "$tmp/tls.log" 2>/dev/null; }
check "forwarded over https to tls-sink (the static libcurl and OpenSSL, the image's CA bundle path)" \
    wait_for 10 tls_delivered
tls_refused() {
    local st
    st=$(row_state "$(row_of tlswrong)") || return 1
    ! grep -q '^/tlswrong ' "$tmp/tls.log" 2>/dev/null || { echo "  tls-wrong got a delivery"; return 1; }
    [[ $st == @(pending|failed)\ *"TLS certificate not trusted"* ]] ||
        { echo "  tls-wrong's row: $st"; return 1; }
}
check "https to a name the certificate does not hold: not sent, 'TLS certificate not trusted'" \
    wait_for 10 tls_refused
check "SIGTERM -> exit 0 (after forwarding)" stop

# ---- PostgreSQL without TLS: the issue's idle memory target ----
if plain=$(bash "$SRC/scripts/pg.sh" start 2>"$tmp/pg.err"); then
    check "RSS after ready, a POST and a GET on PostgreSQL <= 3 MB" small_rss postgresql 3072 \
        "DATABASE_URL=postgresql://postgres@127.0.0.1:$(cat "$plain/port")/postgres"
    bash "$SRC/scripts/pg.sh" stop "$plain"
elif ! grep -q 'no PostgreSQL server binaries' "$tmp/pg.err"; then
    not_ok "scripts/pg.sh start: $(cat "$tmp/pg.err")"
fi

# ---- PostgreSQL over TLS ----
if ! pgdir=$(bash "$SRC/scripts/pg.sh" start --ssl --ssl-name pg-tls 2>"$tmp/pg.err"); then
    pgdir=
    if grep -q 'no PostgreSQL server binaries' "$tmp/pg.err"; then
        echo "SKIP (PostgreSQL part): $(cat "$tmp/pg.err")"
    else
        not_ok "scripts/pg.sh start --ssl: $(cat "$tmp/pg.err")"
    fi
else
    pgport=$(cat "$pgdir/port")
    pw=Pa55-not-for-logs
    url="postgresql://postgres:$pw@pg-tls:$pgport/postgres"
    pg_require() {
        start "DATABASE_URL=$url?sslmode=require" || return 1
        local rc=0 id
        grep -q '"store":"postgresql"' "$tmp/err" || { echo "  not on PostgreSQL:"; cat "$tmp/err"; rc=1; }
        id=$(post_envelope pgtls) && get_has "$id" '"payload":"hello from pgtls"' || rc=1
        stop || rc=1
        ! grep -qF "$pw" "$tmp/out" "$tmp/err" || { echo "  the password reached the output"; rc=1; }
        return $rc
    }
    # pg.sh --ssl refuses TCP without TLS (hostssl): getting in proves TLS.
    check "PostgreSQL at pg-tls (/etc/hosts), sslmode=require: POST and GET, SIGTERM -> exit 0" pg_require
    cp "$pgdir/root.crt" "$root/data/pg-root.crt"
    pg_verify_full() {
        start "DATABASE_URL=$url?sslmode=verify-full&sslrootcert=/data/pg-root.crt" || return 1
        local rc=0 id
        id=$(post_envelope pgverified) && get_has "$id" '"payload":"hello from pgverified"' || rc=1
        stop || rc=1
        return $rc
    }
    check "sslmode=verify-full with the server's root certificate: connects, POST and GET" pg_verify_full
    pg_fails() { # pg_fails QUERY PATTERN: start fails at once, clearly, without the password
        local o st=0
        o=$(env -i PORT=0 HOOKD_SQLITE_PATH=/data/hookd.db "DATABASE_URL=$url?$1" timeout 20 \
            "$chroot" --userspec=65532:65532 "$root" /hookd 2>&1) || st=$?
        # 1: a clean exit; 124 would be a hang, above 128 a signal (a crash).
        [ "$st" = 1 ] || { echo "  exit status $st: $o"; return 1; }
        grep -qF "$2" <<<"$o" || { echo "  no '$2' in: $o"; return 1; }
        ! grep -qF "$pw" <<<"$o" || { echo "  the password is in: $o"; return 1; }
    }
    check "sslmode=verify-full, no root certificate: exit 1, says the root certificate is missing" \
        pg_fails "sslmode=verify-full" 'root certificate file \"/data/.postgresql/root.crt\" does not exist'
    check "sslmode=verify-full, the public CAs as root: exit 1, certificate verify failed" \
        pg_fails "sslmode=verify-full&sslrootcert=/etc/ssl/certs/ca-certificates.crt" 'certificate verify failed'
fi

echo "$passed passed, $failed failed"
[ "$failed" = 0 ]
