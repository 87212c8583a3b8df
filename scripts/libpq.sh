#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Builds a static libpq without GSSAPI, LDAP, readline or ICU from Debian's own
# source package, for the lean static hookd (scripts/lean.sh): Debian's
# libpq.a needs Kerberos and OpenLDAP archives that Debian does not ship.
# TLS is OpenSSL's (Debian's libssl.a and libcrypto.a, linked by hookd).
#
#   scripts/libpq.sh PREFIX    -> PREFIX/lib/libpq.a (+ libpgcommon_shlib.a, libpgport_shlib.a),
#                                 PREFIX/include, PREFIX/lib/pkgconfig/libpq.pc
#
# The source comes from scripts/debsrc.sh (a private APT configuration under
# PREFIX/apt): the version of the installed libpq-dev, whose headers the
# dynamic build uses, when the archive still lists it. Built with
# --prefix=/usr and Debian's --sysconfdir, so the paths compiled into libpq
# (pg_service.conf) are Debian's and not PREFIX: the archive does not depend
# on where it was built. Idempotent: PREFIX/lib/libpq.stamp records the
# version and this script's hash; a match keeps what is there.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
prefix=$(realpath -m "${1:?usage: libpq.sh PREFIX}")
major=$(pg_config --version 2>/dev/null | sed -n 's/^PostgreSQL \([0-9]*\).*/\1/p')
pkg=postgresql-${major:-15}
ver=$(dpkg-query -W -f='${Version}' libpq-dev 2>/dev/null || true)
want="$pkg ${ver:-newest} $(sha256sum "$0" | cut -c1-16)"
stamp=$prefix/lib/libpq.stamp
if [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$want" ] && [ -f "$prefix/lib/libpq.a" ]; then
    exit 0
fi
srcdir=$(bash "$here/debsrc.sh" "$prefix" "$pkg" "$ver")
mkdir -p "$prefix"/{lib/pkgconfig,include}
rm -rf "$srcdir/build-lean"
mkdir -p "$srcdir/build-lean"
cd "$srcdir/build-lean"
# -ffile-prefix-map: OpenSSL's macros put __FILE__ into the code, and the
# archive must not depend on where the cache is (the image is reproducible).
# -ffunction-sections/-fdata-sections: hookd links with --gc-sections, which
# then drops what of libpq it never calls.
../configure --prefix=/usr --sysconfdir=/etc/postgresql-common --without-gssapi --without-ldap \
    --without-readline --without-icu --without-zlib --without-lz4 --without-zstd --without-llvm \
    --with-openssl --disable-nls --without-systemd --without-pam --without-libxml --without-libxslt \
    CFLAGS="-O2 -ffunction-sections -fdata-sections -ffile-prefix-map=$srcdir=${srcdir##*/}" >configure.log 2>&1 ||
    { tail -30 configure.log >&2; exit 1; }
jobs=${LEAN_JOBS:-$(nproc)}
# A make of our own, not a sub-make of whoever called us (`make test` runs
# this through meson): PostgreSQL's makefiles generate their headers
# (utils/errcodes.h and the like) only at MAKELEVEL 0, and a caller's
# MAKEFLAGS would bring its jobserver and options.
unset MAKELEVEL MAKEFLAGS MFLAGS
make -s -C src/backend generated-headers >make.log 2>&1 &&
    make -s -j"$jobs" -C src/include >>make.log 2>&1 &&
    make -s -j"$jobs" -C src/common >>make.log 2>&1 &&
    make -s -j"$jobs" -C src/port >>make.log 2>&1 &&
    make -s -j"$jobs" -C src/interfaces/libpq all-static-lib >>make.log 2>&1 ||
    { tail -30 make.log >&2; exit 1; }
cp src/interfaces/libpq/libpq.a src/common/libpgcommon_shlib.a src/port/libpgport_shlib.a "$prefix/lib/"
cp ../src/interfaces/libpq/libpq-fe.h ../src/interfaces/libpq/libpq-events.h \
   ../src/include/postgres_ext.h src/include/pg_config_ext.h "$prefix/include/"
# hookd_lean=1 lets meson.build tell this file from Debian's libpq.pc, whose
# static link line wants Kerberos and LDAP archives.
cat >"$prefix/lib/pkgconfig/libpq.pc" <<PC
prefix=$prefix
libdir=\${prefix}/lib
includedir=\${prefix}/include
hookd_lean=1

Name: libpq
Description: PostgreSQL libpq, static, without GSSAPI/LDAP (built by scripts/libpq.sh)
Version: $(sed -n 's/^#define PG_VERSION "\(.*\)"/\1/p' src/include/pg_config.h)
Libs: -L\${libdir} -lpq -lpgcommon_shlib -lpgport_shlib
Libs.private: -lssl -lcrypto -lpthread
Cflags: -I\${includedir}
PC
echo "$want" >"$stamp"
echo "libpq.sh: $prefix/lib/libpq.a ($(du -k "$prefix/lib/libpq.a" | cut -f1) kB, $pkg ${ver:-newest})" >&2
