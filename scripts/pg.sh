#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# A throwaway PostgreSQL cluster for the tests: initdb in a fresh temporary
# directory, its own free port on 127.0.0.1, unix socket inside the
# directory, fsync on. Run as root, the server runs as the `postgres` user
# (PostgreSQL refuses to run as root); otherwise as the caller.
#
#   scripts/pg.sh start        start a cluster; prints its directory
#                              (in /dev/shm, or $PG_SH_BASE when set)
#   scripts/pg.sh start --ssl [--ssl-name NAME]...
#                              the same with TLS: a self-signed server
#                              certificate (openssl CLI) for localhost,
#                              127.0.0.1 and each NAME, ssl = on, and TCP
#                              connections without TLS refused (hostssl);
#                              DIR/root.crt is the certificate, for a
#                              client's sslrootcert (sslmode=verify-full)
#   scripts/pg.sh url DIR      the connection URL (no password: trust auth)
#   scripts/pg.sh stop DIR     stop it (fast) and remove the directory
#   scripts/pg.sh halt DIR     stop the server, keep the data (fault tests)
#   scripts/pg.sh resume DIR   start a halted server again on the same port
set -euo pipefail

bindir=${PG_BINDIR:-}
if [ -z "$bindir" ]; then
    for v in 17 16 15 14; do
        if [ -x "/usr/lib/postgresql/$v/bin/pg_ctl" ]; then
            bindir=/usr/lib/postgresql/$v/bin
            break
        fi
    done
fi
if [ -z "$bindir" ] || [ ! -x "$bindir/initdb" ]; then
    echo "pg.sh: no PostgreSQL server binaries (install Debian's postgresql)" >&2
    exit 1
fi

# as_owner CMD...: run as the cluster's owner.
as_owner() {
    if [ "$(id -u)" -eq 0 ]; then
        runuser -u postgres -- "$@"
    else
        "$@"
    fi
}

free_port() {
    /usr/bin/python3 -c 'import socket
s = socket.socket()
s.bind(("127.0.0.1", 0))
print(s.getsockname()[1])'
}

pg_start() {
    local dir=$1 port=$2
    as_owner "$bindir/pg_ctl" -D "$dir/data" -l "$dir/log" -w -t 30 -s \
        -o "-p $port -k $dir -c listen_addresses=127.0.0.1" start >/dev/null
}

cmd=${1:-}
case "$cmd" in
start)
    shift
    ssl=0 names=()
    while [ $# -gt 0 ]; do
        case $1 in
        --ssl) ssl=1 ;;
        --ssl-name) names+=("${2:?pg.sh: --ssl-name needs a host name}"); shift ;;
        *) echo "pg.sh: unknown option $1 (start [--ssl [--ssl-name NAME]...])" >&2; exit 2 ;;
        esac
        shift
    done
    if [ "$ssl" = 1 ] && ! command -v openssl >/dev/null; then
        echo "pg.sh: --ssl needs the openssl command (package openssl)" >&2
        exit 1
    fi
    # tmpfs by default (fast fsync for the tests); PG_SH_BASE=/var/tmp puts
    # the cluster on a disk, for benchmarks.
    base=${PG_SH_BASE:-}
    if [ -z "$base" ]; then
        base=/tmp
        [ -w /dev/shm ] && base=/dev/shm
    fi
    dir=$(mktemp -d "$base/hookd-pg-XXXXXX")
    chmod 755 "$dir"
    [ "$(id -u)" -eq 0 ] && chown postgres: "$dir"
    # --no-sync: nobody needs this cluster to survive a power cut; the
    # server itself runs with fsync on.
    if ! as_owner "$bindir/initdb" -D "$dir/data" -U postgres -A trust -E UTF8 --no-locale \
            --no-sync >"$dir/initdb.log" 2>&1; then
        cat "$dir/initdb.log" >&2
        rm -rf "$dir"
        echo "pg.sh: initdb failed" >&2
        exit 1
    fi
    cat >>"$dir/data/postgresql.conf" <<EOF
fsync = on
synchronous_commit = on
max_connections = 300
shared_buffers = 64MB
log_min_messages = warning
log_connections = off
EOF
    if [ "$ssl" = 1 ]; then
        # A P-256 key (quick to make), valid for a day: the cluster is
        # throwaway. The server reads the key only if its owner alone can.
        san="DNS:localhost,IP:127.0.0.1"
        for n in "${names[@]}"; do san="$san,DNS:$n"; done
        if ! openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -days 1 \
                -subj "/CN=hookd-test-pg" -addext "subjectAltName=$san" \
                -keyout "$dir/data/server.key" -out "$dir/data/server.crt" >"$dir/openssl.log" 2>&1; then
            cat "$dir/openssl.log" >&2
            rm -rf "$dir"
            echo "pg.sh: openssl could not make the server certificate" >&2
            exit 1
        fi
        chmod 600 "$dir/data/server.key"
        [ "$(id -u)" -ne 0 ] || chown postgres: "$dir/data/server.key" "$dir/data/server.crt"
        cp "$dir/data/server.crt" "$dir/root.crt"
        chmod 644 "$dir/root.crt"
        printf "ssl = on\nssl_cert_file = 'server.crt'\nssl_key_file = 'server.key'\n" >>"$dir/data/postgresql.conf"
        # TCP only with TLS (the unix socket stays as it is): a client that
        # gets in has spoken TLS.
        sed -i 's/^host /hostssl /' "$dir/data/pg_hba.conf"
    fi
    # A free port may be taken between the check and the bind: retry.
    for attempt in 1 2 3 4 5; do
        port=$(free_port)
        if pg_start "$dir" "$port"; then
            echo "$port" >"$dir/port"
            echo "$dir"
            exit 0
        fi
        sleep 0.2
    done
    cat "$dir/log" >&2 || true
    rm -rf "$dir"
    echo "pg.sh: the server did not start" >&2
    exit 1
    ;;
url)
    dir=${2:?usage: pg.sh url DIR}
    echo "postgresql://postgres@127.0.0.1:$(cat "$dir/port")/postgres"
    ;;
halt)
    dir=${2:?usage: pg.sh halt DIR}
    as_owner "$bindir/pg_ctl" -D "$dir/data" -m fast -w -s stop
    ;;
resume)
    dir=${2:?usage: pg.sh resume DIR}
    pg_start "$dir" "$(cat "$dir/port")"
    ;;
stop)
    dir=${2:?usage: pg.sh stop DIR}
    case "$dir" in
    */hookd-pg-*) ;;
    *) echo "pg.sh: $dir is not a cluster made by pg.sh start" >&2; exit 2 ;;
    esac
    if [ -f "$dir/data/postmaster.pid" ]; then
        as_owner "$bindir/pg_ctl" -D "$dir/data" -m immediate -w -s stop >/dev/null 2>&1 || true
    fi
    rm -rf "$dir"
    ;;
*)
    echo "usage: $0 start [--ssl [--ssl-name NAME]...] | url DIR | stop DIR | halt DIR | resume DIR" >&2
    exit 2
    ;;
esac
