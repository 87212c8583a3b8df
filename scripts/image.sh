#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Builds hookd's OCI image FROM scratch without a container engine: one layer
# holding the lean hookd (one static executable with libpq, libcurl and
# OpenSSL linked in: scripts/lean.sh), stripped; /etc/passwd and /etc/group
# with user 65532; an empty /data owned by that user; and the CA bundle (for
# libpq's sslrootcert and libcurl's https). No shared library, no loader, no
# /etc/nsswitch.conf: static glibc reads /etc/hosts, then DNS through
# /etc/resolv.conf, with its built-in files and dns modules (docs/image.md).
# umoci assembles the image, skopeo writes the docker-archive.
#
#   scripts/image.sh [--no-build] [--out DIR] [BUILD_DIR]
#   scripts/image.sh [--no-build] --rootfs DIR [BUILD_DIR]
#
# BUILD_DIR (default build-lean/; relative paths are the caller's) is the
# lean build's directory: unless --no-build, scripts/lean.sh builds it
# first. With --no-build, BUILD_DIR/hookd must already be the static binary.
# Writes to DIR (default BUILD_DIR):
#   hookd-image.oci.tar      oci-archive, tagged dev.local/hookd:VERSION
#   hookd-image.docker.tar   docker-archive, same tag (podman load, kind load)
#   hookd-image.digest       the manifest digest
#   hookd-image.files        the layer's entries, one per line (for tests)
#   hookd-image.json         tag, digest and sizes, for the benchmark
# --rootfs DIR only lays the layer's files out in DIR (the Containerfile's
# build stage uses it; no umoci or skopeo needed).
#
# Reproducible: every timestamp is SOURCE_DATE_EPOCH (default: the last
# commit's time), entries are sorted with fixed owners and modes, so the same
# binary gives the same digest. Needs umoci, skopeo (Debian packages;
# scripts/deps.sh image installs them) and Debian's python3.
set -euo pipefail
src=$(cd "$(dirname "$0")/.." && pwd)

build=1 out= rootfs=
while [ $# -gt 0 ]; do
    case $1 in
    --no-build) build=0 ;;
    --out) out=$2; shift ;;
    --rootfs) rootfs=$2; shift ;;
    -h|--help) sed -n '3,30p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    -*) echo "image.sh: unknown option $1" >&2; exit 2 ;;
    *) break ;;
    esac
    shift
done
dir=$(realpath -m "${1:-$src/build-lean}")
out=$(realpath -m "${out:-$dir}")
[ -z "$rootfs" ] || rootfs=$(realpath -m "$rootfs")
cd "$src"

for t in umoci skopeo; do
    if [ -z "$rootfs" ] && ! command -v "$t" >/dev/null; then
        echo "image.sh: $t is missing: run scripts/deps.sh image (as root) or apt-get install umoci skopeo" >&2
        exit 1
    fi
done
py=/usr/bin/python3
[ -x "$py" ] || py=python3

if [ "$build" = 1 ]; then
    bash scripts/lean.sh "$dir" >/dev/null
fi
bin=$dir/hookd
[ -x "$bin" ] || { echo "image.sh: no $bin (build it with scripts/lean.sh, or drop --no-build)" >&2; exit 1; }
# The layer has no loader and no library: a dynamic executable (one that
# names a program interpreter) could not start in it.
if readelf -lW "$bin" | grep -q 'program interpreter'; then
    echo "image.sh: $bin is dynamically linked; the image ships the lean static build (scripts/lean.sh $dir)" >&2
    exit 1
fi
version=$("$bin" --version | awk '{print $2}')
repo=dev.local/hookd
tag=$version
name=hookd-image

export SOURCE_DATE_EPOCH=${SOURCE_DATE_EPOCH:-$(git log -1 --format=%ct 2>/dev/null || echo 0)}
created=$(date -u -d "@$SOURCE_DATE_EPOCH" +%Y-%m-%dT%H:%M:%SZ)
revision=$(git rev-parse HEAD 2>/dev/null || echo unknown)
source_url=${HOOKD_IMAGE_SOURCE:-$(git remote get-url origin 2>/dev/null || echo unknown)}

[ -n "$rootfs" ] || mkdir -p "$out"
work=$(mktemp -d "${TMPDIR:-/tmp}/hookd-image.XXXXXX")
trap 'rm -rf "$work"' EXIT

certs=/etc/ssl/certs/ca-certificates.crt
[ -f "$certs" ] || { echo "image.sh: $certs is missing (package ca-certificates)" >&2; exit 1; }

# The layer, written by Python's tarfile so that every header field is
# chosen here: names sorted, uid/gid and modes fixed, mtime SOURCE_DATE_EPOCH,
# no atime/ctime/xattrs, GNU format (what container tools all read).
# strip is deterministic: the same binary gives the same bytes.
strip --strip-all -o "$work/hookd" "$bin"
"$py" - "$work/layer.tar" "$SOURCE_DATE_EPOCH" "$work/hookd" "$certs" <<'PY'
import io, os, sys, tarfile
out, epoch, binary, certs = sys.argv[1:5]
epoch = int(epoch)
files = {"hookd": (binary, 0o755), certs.lstrip("/"): (certs, 0o644)}
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
umoci raw add-layer --image "$oci:$tag" --history.created "$created" --history.created_by "scripts/image.sh" \
    "$work/layer.tar"
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
# umoci compresses the layer with pgzip (independent blocks, 5 % larger than
# zlib's best); the same tar, gzip -9 with no name or time in its header,
# takes its place, and the manifest and the index are rewritten to match.
"$py" - "$oci" "$work/layer.tar" <<'PY'
import gzip, hashlib, json, os, sys
oci, layer = sys.argv[1], sys.argv[2]
def path(digest):
    return os.path.join(oci, "blobs", *digest.split(":"))
def put(data):
    digest = "sha256:" + hashlib.sha256(data).hexdigest()
    with open(path(digest), "wb") as f:
        f.write(data)
    return digest
index = json.load(open(os.path.join(oci, "index.json")))
desc = index["manifests"][0]
manifest = json.load(open(path(desc["digest"])))
config = json.load(open(path(manifest["config"]["digest"])))
tar = open(layer, "rb").read()
assert config["rootfs"]["diff_ids"] == ["sha256:" + hashlib.sha256(tar).hexdigest()], "layer is not the config's"
gz = gzip.compress(tar, 9, mtime=0)
old = [desc["digest"], manifest["layers"][0]["digest"]]
manifest["layers"][0].update(digest=put(gz), size=len(gz))
data = json.dumps(manifest, separators=(",", ":")).encode()
desc.update(digest=put(data), size=len(data))
for d in old:
    os.unlink(path(d))
with open(os.path.join(oci, "index.json"), "w") as f:
    json.dump(index, f, separators=(",", ":"))
PY

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
    "$(wc -l <"$out/$name.files")" "$(stat -c %s "$work/hookd")" <<'PY'
import json, os, sys
path, ref, digest, raw, gz, oci, docker, n, binary = sys.argv[1:10]
json.dump({"image": ref, "digest": digest, "layerRawBytes": int(raw), "layerCompressedBytes": int(gz),
           "ociArchiveBytes": os.path.getsize(oci), "dockerArchiveBytes": os.path.getsize(docker),
           "entries": int(n), "binaryBytes": int(binary)}, open(path, "w"), indent=1)
PY
mib() { awk -v b="$1" 'BEGIN { printf "%.2f MiB", b / 1048576 }'; }
echo "image $repo:$tag  $digest"
echo "  layer: $(wc -l <"$out/$name.files") entries, raw $raw bytes ($(mib "$raw")), compressed $layer_gz bytes ($(mib "$layer_gz"))"
echo "  /hookd: $(stat -c %s "$work/hookd") bytes, static, stripped"
echo "  $out/$name.oci.tar    $(stat -c %s "$out/$name.oci.tar") bytes"
echo "  $out/$name.docker.tar $(stat -c %s "$out/$name.docker.tar") bytes"
