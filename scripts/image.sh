#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Builds hookd's OCI image FROM scratch without a container engine: one layer
# holding the release binary, exactly the shared libraries it loads (ldd's
# list, plus what it dlopen()s: libcrypto for HOOKD_WEBHOOK_SECRET, libpq for
# DATABASE_URL, libcurl for forwarding (K_SINK), and their own dependencies),
# the dynamic loader, /etc/passwd and /etc/group with user 65532, an empty
# /data owned by that user, and the CA bundle (for libpq's sslrootcert and
# libcurl's https). umoci assembles the image, skopeo
# writes the archives.
#
#   scripts/image.sh [--no-build] [--slim] [--out DIR] [BUILD_DIR]
#   scripts/image.sh --no-build [--slim] --rootfs DIR [BUILD_DIR]
#
# BUILD_DIR (default build/) is a Meson build directory; unless --no-build,
# it is configured as a release build if new and `ninja hookd` runs first.
# Writes to DIR (default BUILD_DIR):
#   hookd-image.oci.tar      oci-archive, tagged dev.local/hookd:VERSION
#   hookd-image.docker.tar   docker-archive, same tag (podman load, kind load)
#   hookd-image.digest       the manifest digest
#   hookd-image.files        the layer's entries, one per line (for tests)
#   hookd-image.json         tag, digest and sizes, for the benchmark
# --rootfs DIR only lays the layer's files out in DIR (the Containerfile's
# build stage uses it; no umoci or skopeo needed). --slim leaves out libcrypto, libpq and their dependencies and the CA
# bundle (hookd-image-slim.*, tag VERSION-slim): HOOKD_WEBHOOK_SECRET and
# DATABASE_URL then fail at start with a message naming the missing library.
#
# Reproducible: every timestamp is SOURCE_DATE_EPOCH (default: the last
# commit's time), entries are sorted with fixed owners and modes, so the same
# binary and libraries give the same digest. Needs umoci, skopeo (Debian
# packages; scripts/deps.sh image installs them) and Debian's python3.
set -euo pipefail
cd "$(dirname "$0")/.."

build=1 slim=0 out= rootfs=
while [ $# -gt 0 ]; do
    case $1 in
    --no-build) build=0 ;;
    --slim) slim=1 ;;
    --out) out=$2; shift ;;
    --rootfs) rootfs=$2; shift ;;
    -h|--help) sed -n '3,31p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    -*) echo "image.sh: unknown option $1" >&2; exit 2 ;;
    *) break ;;
    esac
    shift
done
dir=${1:-build}
out=${out:-$dir}

for t in umoci skopeo; do
    if [ -z "$rootfs" ] && ! command -v "$t" >/dev/null; then
        echo "image.sh: $t is missing: run scripts/deps.sh image (as root) or apt-get install umoci skopeo" >&2
        exit 1
    fi
done
py=/usr/bin/python3
[ -x "$py" ] || py=python3

if [ "$build" = 1 ]; then
    [ -f "$dir/meson-private/coredata.dat" ] || meson setup "$dir" --buildtype=release >/dev/null
    ninja -C "$dir" hookd >/dev/null
fi
bin=$dir/hookd
[ -x "$bin" ] || { echo "image.sh: no $bin (build it, or drop --no-build)" >&2; exit 1; }
version=$("$bin" --version | awk '{print $2}')
repo=dev.local/hookd
tag=$version
name=hookd-image
if [ "$slim" = 1 ]; then
    tag=$version-slim
    name=hookd-image-slim
fi

export SOURCE_DATE_EPOCH=${SOURCE_DATE_EPOCH:-$(git log -1 --format=%ct 2>/dev/null || echo 0)}
created=$(date -u -d "@$SOURCE_DATE_EPOCH" +%Y-%m-%dT%H:%M:%SZ)
revision=$(git rev-parse HEAD 2>/dev/null || echo unknown)
source_url=${HOOKD_IMAGE_SOURCE:-$(git remote get-url origin 2>/dev/null || echo unknown)}

[ -n "$rootfs" ] || mkdir -p "$out"
work=$(mktemp -d "${TMPDIR:-/tmp}/hookd-image.XXXXXX")
trap 'rm -rf "$work"' EXIT

# What the binary loads: ldd's closure for hookd itself and for each library
# it dlopen()s (by the same soname it passes to dlopen). Paths are kept as the
# loader resolved them; /lib/x86_64-linux-gnu is in its built-in search path,
# so no ld.so.cache is needed in the image.
dlopened=(libcrypto.so.3 libpq.so.5 libcurl.so.4)
targets=("$bin")
if [ "$slim" = 0 ]; then
    for so in "${dlopened[@]}"; do
        # No early exit in awk: under pipefail, ldconfig would die of SIGPIPE
        # now and then and fail the script without a word.
        path=$(ldconfig -p | awk -v so="$so" '!found && $1 == so && /x86-64|x86_64|lib64/ { print $NF; found = 1 }')
        [ -n "$path" ] || { echo "image.sh: $so is not installed (scripts/deps.sh image installs it)" >&2; exit 1; }
        targets+=("$path")
    done
fi
{
    for t in "${targets[@]}"; do
        [ "$t" = "$bin" ] || echo "$t"
        # A static binary (the benchmark's static variant) loads nothing:
        # ldd says "not a dynamic executable" and exits 1.
        { ldd "$t" 2>/dev/null || true; } | awk '$2 == "=>" && $3 ~ /^\// { print $3 } $1 ~ /^\// { print $1 }'
    done
} | sort -u >"$work/libs"
if grep -q 'not found' <(for t in "${targets[@]}"; do ldd "$t"; done); then
    echo "image.sh: a library is missing on this machine:" >&2
    for t in "${targets[@]}"; do ldd "$t" | grep 'not found' >&2 || true; done
    exit 1
fi
certs=
if [ "$slim" = 0 ]; then
    certs=/etc/ssl/certs/ca-certificates.crt
    [ -f "$certs" ] || { echo "image.sh: $certs is missing (package ca-certificates)" >&2; exit 1; }
fi

# The layer, written by Python's tarfile so that every header field is
# chosen here: names sorted, uid/gid and modes fixed, mtime SOURCE_DATE_EPOCH,
# no atime/ctime/xattrs, GNU format (what container tools all read).
strip --strip-unneeded -o "$work/hookd" "$bin"
"$py" - "$work/layer.tar" "$SOURCE_DATE_EPOCH" "$work/hookd" "$work/libs" "$certs" <<'PY'
import io, os, sys, tarfile
out, epoch, binary, libs, certs = sys.argv[1:6]
epoch = int(epoch)
files = {"hookd": (binary, 0o755)}
for line in open(libs):
    path = line.strip()
    if path:
        files[path.lstrip("/")] = (os.path.realpath(path), 0o755)
if certs:
    files[certs.lstrip("/")] = (certs, 0o644)
text = {
    "etc/passwd": "root:x:0:0:root:/:/sbin/nologin\nhookd:x:65532:65532:hookd:/data:/sbin/nologin\n",
    "etc/group": "root:x:0:\nhookd:x:65532:\n",
}
dirs = {"data": (0o750, 65532)}
for name in list(files) + list(text):
    d = os.path.dirname(name)
    while d:
        dirs.setdefault(d, (0o755, 0))
        d = os.path.dirname(d)
entries = sorted([(n, "dir") for n in dirs] + [(n, "file") for n in files] + [(n, "text") for n in text])
with tarfile.open(out, "w", format=tarfile.GNU_FORMAT) as tar:
    for name, kind in entries:
        ti = tarfile.TarInfo(name)
        ti.mtime = epoch
        ti.uname = ti.gname = ""
        if kind == "dir":
            ti.type = tarfile.DIRTYPE
            ti.mode, ti.uid = dirs[name]
            ti.gid = ti.uid
            tar.addfile(ti)
        elif kind == "file":
            src, ti.mode = files[name]
            ti.size = os.path.getsize(src)
            with open(src, "rb") as f:
                tar.addfile(ti, f)
        else:
            data = text[name].encode()
            ti.mode, ti.size = 0o644, len(data)
            tar.addfile(ti, io.BytesIO(data))
PY
if [ -n "$rootfs" ]; then
    mkdir -p "$rootfs"
    tar -xpf "$work/layer.tar" --numeric-owner -C "$rootfs"
    exit 0
fi
tar -tf "$work/layer.tar" >"$out/$name.files"

oci=$work/oci
umoci init --layout "$oci"
umoci new --image "$oci:$tag"
by="scripts/image.sh"
[ "$slim" = 0 ] || by="$by --slim"
umoci raw add-layer --image "$oci:$tag" --history.created "$created" --history.created_by "$by" "$work/layer.tar"
labels=(--config.label "org.opencontainers.image.title=hookd"
        --config.label "org.opencontainers.image.description=Webhook receiver for scale-to-zero platforms"
        --config.label "org.opencontainers.image.version=$version"
        --config.label "org.opencontainers.image.revision=$revision"
        --config.label "org.opencontainers.image.source=$source_url"
        --config.label "org.opencontainers.image.licenses=MIT"
        --config.label "org.opencontainers.image.created=$created")
# Entrypoint in exec form: hookd is PID 1 and receives SIGTERM itself (it
# installs a handler, which PID 1 needs: the kernel drops unhandled signals).
umoci config --image "$oci:$tag" --no-history --created "$created" \
    --author "hookd" --architecture amd64 --os linux \
    --config.entrypoint /hookd --config.user 65532:65532 --config.workingdir /data \
    --config.env HOOKD_SQLITE_PATH=/data/hookd.db --config.env SQLITE_TMPDIR=/data \
    --config.exposedports 8080/tcp --config.stopsignal SIGTERM \
    "${labels[@]}" \
    --manifest.annotation "org.opencontainers.image.version=$version" \
    --manifest.annotation "org.opencontainers.image.revision=$revision" \
    --manifest.annotation "org.opencontainers.image.created=$created"
umoci gc --layout "$oci"

digest=$("$py" -c 'import json,sys; print(json.load(open(sys.argv[1]))["manifests"][0]["digest"])' "$oci/index.json")
rm -f "$out/$name.oci.tar" "$out/$name.docker.tar"
skopeo copy --quiet "oci:$oci:$tag" "docker-archive:$out/$name.docker.tar:$repo:$tag"
# The oci-archive is the layout itself in a tar, written here rather than by
# skopeo so that the archive file, not just the digest, is the same each time.
"$py" - "$oci" "$out/$name.oci.tar" "$SOURCE_DATE_EPOCH" "$repo:$tag" <<'PY'
import json, os, sys, tarfile
src, out, epoch, ref = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4]
index = json.load(open(os.path.join(src, "index.json")))
for m in index["manifests"]:
    m.setdefault("annotations", {})["org.opencontainers.image.ref.name"] = ref
with open(os.path.join(src, "index.json"), "w") as f:
    json.dump(index, f, separators=(",", ":"), sort_keys=True)
names = []
for root, dirs, files in os.walk(src):
    for n in dirs + files:
        names.append(os.path.relpath(os.path.join(root, n), src))
with tarfile.open(out, "w", format=tarfile.GNU_FORMAT) as tar:
    for name in sorted(names):
        p = os.path.join(src, name)
        ti = tar.gettarinfo(p, name)
        ti.mtime, ti.uid, ti.gid, ti.uname, ti.gname = epoch, 0, 0, "", ""
        ti.mode = 0o755 if ti.isdir() else 0o644
        if ti.isfile():
            with open(p, "rb") as f:
                tar.addfile(ti, f)
        else:
            tar.addfile(ti)
PY
echo "$digest" >"$out/$name.digest"

raw=$(stat -c %s "$work/layer.tar")
layer_gz=$("$py" -c '
import json, sys
m = json.load(open(sys.argv[1] + "/blobs/" + sys.argv[2].replace(":", "/")))
print(sum(l["size"] for l in m["layers"]))' "$oci" "$digest")
"$py" - "$out/$name.json" "$repo:$tag" "$digest" "$raw" "$layer_gz" "$out/$name.oci.tar" "$out/$name.docker.tar" \
    "$(wc -l <"$out/$name.files")" <<'PY'
import json, os, sys
path, ref, digest, raw, gz, oci, docker, n = sys.argv[1:9]
json.dump({"image": ref, "digest": digest, "layerRawBytes": int(raw), "layerCompressedBytes": int(gz),
           "ociArchiveBytes": os.path.getsize(oci), "dockerArchiveBytes": os.path.getsize(docker),
           "entries": int(n)}, open(path, "w"), indent=1)
PY
mib() { awk -v b="$1" 'BEGIN { printf "%.2f MiB", b / 1048576 }'; }
echo "image $repo:$tag  $digest"
echo "  layer: $(wc -l <"$out/$name.files") entries, raw $raw bytes ($(mib "$raw")), compressed $layer_gz bytes ($(mib "$layer_gz"))"
echo "  $out/$name.oci.tar    $(stat -c %s "$out/$name.oci.tar") bytes"
echo "  $out/$name.docker.tar $(stat -c %s "$out/$name.docker.tar") bytes"
