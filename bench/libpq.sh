#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Builds a static libpq without GSSAPI, LDAP, readline or ICU from Debian's own
# source package, for the `static` benchmark variant: Debian's libpq.a needs
# Kerberos and OpenLDAP archives that Debian does not ship.
#
#   bench/libpq.sh PREFIX      -> PREFIX/lib/libpq.a, PREFIX/include, PREFIX/lib/pkgconfig/libpq.pc
#
# The source comes through a private APT configuration (deb-src for bookworm
# main, lists and cache under PREFIX/apt), so the machine's own sources are
# left alone. Idempotent: an existing PREFIX/lib/libpq.a is kept.
set -euo pipefail
prefix=$(realpath -m "${1:?usage: libpq.sh PREFIX}")
[ -f "$prefix/lib/libpq.a" ] && [ -f "$prefix/lib/pkgconfig/libpq.pc" ] && exit 0
mkdir -p "$prefix"/{apt/lists/partial,apt/cache/archives/partial,src,lib/pkgconfig,include}
cat >"$prefix/apt/sources.list" <<'SRC'
deb-src [signed-by=/usr/share/keyrings/debian-archive-keyring.gpg] http://deb.debian.org/debian bookworm main
deb-src [signed-by=/usr/share/keyrings/debian-archive-keyring.gpg] http://deb.debian.org/debian-security bookworm-security main
SRC
apt_opts=(-o "Dir::Etc::SourceList=$prefix/apt/sources.list" -o "Dir::Etc::SourceParts=/nonexistent"
          -o "Dir::State::Lists=$prefix/apt/lists" -o "Dir::Cache=$prefix/apt/cache"
          -o "Debug::NoLocking=1" -o "APT::Sandbox::User=root" -qq)
# The version installed here is the one whose headers hookd is compiled against.
ver=$(dpkg-query -W -f='${Version}' libpq-dev 2>/dev/null || true)
major=$(pg_config --version 2>/dev/null | sed -n 's/^PostgreSQL \([0-9]*\).*/\1/p')
pkg=postgresql-${major:-15}
cd "$prefix/src"
if ! ls -d "$pkg"-*/ >/dev/null 2>&1; then
    timeout 600 apt-get "${apt_opts[@]}" update
    # Prefer the exact installed version; fall back to the newest one listed.
    timeout 600 apt-get "${apt_opts[@]}" source ${ver:+"$pkg=$ver"} ||
        timeout 600 apt-get "${apt_opts[@]}" source "$pkg"
fi
srcdir=$(ls -d "$prefix/src/$pkg"-*/ | head -1)
cd "$srcdir"
mkdir -p build && cd build
if [ ! -f config.status ]; then
    ../configure --prefix="$prefix" --without-gssapi --without-ldap --without-readline \
        --without-icu --without-zlib --without-lz4 --without-zstd --without-llvm \
        --with-openssl --disable-nls --without-systemd --without-pam --without-libxml \
        CFLAGS="-O2 -fPIC" >configure.log 2>&1 || { tail -30 configure.log >&2; exit 1; }
fi
jobs=$(nproc)
make -s -j"$jobs" -C src/include >/dev/null
make -s -j"$jobs" -C src/common >/dev/null
make -s -j"$jobs" -C src/port >/dev/null
make -s -j"$jobs" -C src/interfaces/libpq all-static-lib >/dev/null
cp src/interfaces/libpq/libpq.a src/common/libpgcommon_shlib.a src/port/libpgport_shlib.a "$prefix/lib/"
cp ../src/interfaces/libpq/libpq-fe.h ../src/interfaces/libpq/libpq-events.h \
   ../src/include/postgres_ext.h src/include/pg_config_ext.h "$prefix/include/"
cat >"$prefix/lib/pkgconfig/libpq.pc" <<PC
prefix=$prefix
libdir=\${prefix}/lib
includedir=\${prefix}/include

Name: libpq
Description: PostgreSQL libpq, static, without GSSAPI/LDAP (built by bench/libpq.sh)
Version: $(sed -n 's/^#define PG_VERSION "\(.*\)"/\1/p' src/include/pg_config.h)
Libs: -L\${libdir} -lpq -lpgcommon_shlib -lpgport_shlib
Libs.private: -lssl -lcrypto -lpthread
Cflags: -I\${includedir}
PC
echo "libpq.sh: $prefix/lib/libpq.a ($(du -k "$prefix/lib/libpq.a" | cut -f1) kB)"
