#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Builds a static libcurl from Debian's own curl source package, for the lean
# static hookd (scripts/lean.sh), with only what forwarding uses: HTTP and
# HTTPS through OpenSSL (Debian's libssl.a, linked by hookd), the threaded
# resolver, proxies (hookd sets CURLOPT_PROXY to "" to ignore http_proxy),
# Basic and Digest auth for a sink URL's credentials, IPv6. Left out: every
# other protocol, HTTP/2 and HTTP/3, LDAP, SSH, RTMP, GSSAPI, NTLM, PSL, IDN,
# brotli, zstd and zlib (hookd asks for no content encoding), cookies, HSTS,
# alt-svc, DoH, netrc, MIME, unix sockets.
#
#   scripts/libcurl.sh PREFIX    -> PREFIX/lib/libcurl.a, PREFIX/include/curl/,
#                                   PREFIX/lib/pkgconfig/libcurl.pc
#
# The source comes from scripts/debsrc.sh (a private APT configuration under
# PREFIX/apt): the version of the installed libcurl4-openssl-dev when the
# archive still lists it. Debian's last two patches (90_gnutls, 99_nss) make
# the GnuTLS and NSS flavours and are taken back out, as Debian's own
# OpenSSL build does. The CA bundle is /etc/ssl/certs/ca-certificates.crt
# (the image ships it; no CA directory). Idempotent:
# PREFIX/lib/libcurl.stamp records the version and this script's hash.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
prefix=$(realpath -m "${1:?usage: libcurl.sh PREFIX}")
ver=$(dpkg-query -W -f='${Version}' libcurl4-openssl-dev 2>/dev/null || true)
want="curl ${ver:-newest} $(sha256sum "$0" | cut -c1-16)"
stamp=$prefix/lib/libcurl.stamp
if [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$want" ] && [ -f "$prefix/lib/libcurl.a" ]; then
    exit 0
fi
srcdir=$(bash "$here/debsrc.sh" "$prefix" curl "$ver")
cd "$srcdir"
if [ ! -f .hookd-openssl-flavour ]; then
    for p in 99_nss 90_gnutls; do
        patch -R -p1 -s <"debian/patches/$p.patch"
    done
    touch .hookd-openssl-flavour
fi
mkdir -p "$prefix"/{lib/pkgconfig,include/curl}
rm -rf build-lean
mkdir build-lean
cd build-lean
# -ffile-prefix-map: OpenSSL's macros put __FILE__ into the code, and the
# archive must not depend on where the cache is (the image is reproducible).
# -ffunction-sections/-fdata-sections: hookd links with --gc-sections, which
# then drops what of libcurl it never calls.
../configure --prefix=/usr --disable-shared --enable-static --disable-dependency-tracking \
    --with-openssl --with-ca-bundle=/etc/ssl/certs/ca-certificates.crt --without-ca-path \
    --enable-threaded-resolver --enable-ipv6 --enable-proxy --enable-http --enable-http-auth \
    --disable-ftp --disable-file --disable-ldap --disable-ldaps --disable-rtsp --disable-dict \
    --disable-telnet --disable-tftp --disable-pop3 --disable-imap --disable-smb --disable-smtp \
    --disable-gopher --disable-mqtt --disable-manual --disable-libcurl-option --disable-ntlm \
    --disable-ntlm-wb --disable-tls-srp --disable-unix-sockets --disable-cookies --disable-doh \
    --disable-mime --disable-netrc --disable-progress-meter --disable-alt-svc --disable-hsts \
    --disable-websockets --disable-versioned-symbols --disable-get-easy-options \
    --without-zlib --without-brotli --without-zstd --without-libpsl --without-libidn2 \
    --without-librtmp --without-libssh2 --without-libssh --without-wolfssh --without-nghttp2 \
    --without-ngtcp2 --without-nghttp3 --without-quiche --without-msh3 --without-hyper \
    --without-libgsasl --without-gssapi --without-zsh-functions-dir --without-fish-functions-dir \
    CFLAGS="-O2 -ffunction-sections -fdata-sections -ffile-prefix-map=$srcdir=${srcdir##*/}" >configure.log 2>&1 ||
    { tail -30 configure.log >&2; exit 1; }
unset MAKELEVEL MAKEFLAGS MFLAGS   # our own make, not a sub-make of the caller's (libpq.sh)
make -s -j"${LEAN_JOBS:-$(nproc)}" -C lib libcurl.la >make.log 2>&1 || { tail -30 make.log >&2; exit 1; }
cp lib/.libs/libcurl.a "$prefix/lib/"
cp ../include/curl/*.h "$prefix/include/curl/"
# The link line configure worked out (OpenSSL and pthread, nothing else with
# the options above). hookd_lean=1 lets meson.build tell this file from
# Debian's libcurl.pc.
private=$(sed -n 's/^Libs.private: //p' libcurl.pc)
cat >"$prefix/lib/pkgconfig/libcurl.pc" <<PC
prefix=$prefix
libdir=\${prefix}/lib
includedir=\${prefix}/include
hookd_lean=1

Name: libcurl
Description: libcurl, static, HTTP/HTTPS with OpenSSL only (built by scripts/libcurl.sh)
Version: $(sed -n 's/^#define LIBCURL_VERSION "\(.*\)"/\1/p' ../include/curl/curlver.h)
Libs: -L\${libdir} -lcurl
Libs.private: $private
Cflags: -I\${includedir}
PC
echo "$want" >"$stamp"
echo "libcurl.sh: $prefix/lib/libcurl.a ($(du -k "$prefix/lib/libcurl.a" | cut -f1) kB, curl ${ver:-newest})" >&2
