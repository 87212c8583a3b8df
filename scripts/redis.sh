#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# A throwaway Redis for the tests: Debian's redis-server in a fresh
# temporary directory, its own free port on 127.0.0.1 (and ::1 where there
# is IPv6) and a unix socket inside the directory, nothing persisted
# (save "", appendonly no), a password for the default user (requirepass)
# and an ACL user `hookd` with the same password, so that tests can check
# authentication. Backgrounded in a session of its own, its pid in
# DIR/redis.pid.
#
#   scripts/redis.sh start          start a server; prints its directory
#                                   (in /dev/shm, or $REDIS_SH_BASE when set)
#   scripts/redis.sh url DIR        redis://hookd:<password>@127.0.0.1:<port>/0
#   scripts/redis.sh url DIR unix   unix://hookd:<password>@DIR/redis.sock?db=0
#   scripts/redis.sh password DIR   the password alone
#   scripts/redis.sh stop DIR       kill it and remove the directory
#   scripts/redis.sh halt DIR       stop the server (its clients see the
#                                   connection close), keep the directory
#   scripts/redis.sh resume DIR     start a halted server again, same port
set -euo pipefail

server=${REDIS_SERVER:-/usr/bin/redis-server}
cli=${REDIS_CLI:-/usr/bin/redis-cli}
if [ ! -x "$server" ] || [ ! -x "$cli" ]; then
    echo "redis.sh: no redis-server/redis-cli (install Debian's redis-server)" >&2
    exit 1
fi

free_port() {
    /usr/bin/python3 -c 'import socket
s = socket.socket()
s.bind(("127.0.0.1", 0))
print(s.getsockname()[1])'
}

# alive PID: the process exists and is not a zombie (in a container the
# reaper may be slow, or missing).
alive() {
    local st
    st=$(awk '{print $3}' "/proc/$1/stat" 2>/dev/null) || return 1
    [ -n "$st" ] && [ "$st" != Z ] && [ "$st" != X ]
}

# is_server PID: PID runs the redis-server binary (a pidfile left behind by a
# server that died may name a process that reused the number).
is_server() {
    [ "$(readlink "/proc/$1/exe" 2>/dev/null)" = "$(readlink -f "$server")" ]
}

# ping DIR: the server answers PING on its socket.
ping_ok() {
    [ "$(REDISCLI_AUTH=$(cat "$1/password") "$cli" -s "$1/redis.sock" ping 2>/dev/null)" = PONG ]
}

# run DIR: start the server of DIR and wait until it answers (10 s). Fails
# when it exits first (its port taken, say) or never answers.
run() {
    local dir=$1 pid
    rm -f "$dir/redis.pid"
    setsid "$server" "$dir/redis.conf" >>"$dir/redis.log" 2>&1 </dev/null &
    pid=$!
    echo "$pid" >"$dir/redis.pid"
    for _ in $(seq 1 200); do
        if ping_ok "$dir"; then
            return 0
        fi
        alive "$pid" || return 1
        sleep 0.05
    done
    kill -KILL "$pid" 2>/dev/null || true
    return 1
}

# halt_server DIR: TERM (Redis closes its clients and exits without saving),
# then KILL after 5 s.
halt_server() {
    local dir=$1 pid
    [ -f "$dir/redis.pid" ] || return 0
    pid=$(cat "$dir/redis.pid")
    if ! is_server "$pid"; then
        rm -f "$dir/redis.pid"
        return 0
    fi
    kill -TERM "$pid" 2>/dev/null || true
    for _ in $(seq 1 100); do
        alive "$pid" || break
        sleep 0.05
    done
    if alive "$pid"; then
        kill -KILL "$pid" 2>/dev/null || true
        for _ in $(seq 1 40); do
            alive "$pid" || break
            sleep 0.05
        done
    fi
    rm -f "$dir/redis.pid"
}

is_ours() {
    case "$1" in
    */hookd-redis-*) [ -f "$1/redis.conf" ] ;;
    *) false ;;
    esac
}

cmd=${1:-}
case "$cmd" in
start)
    base=${REDIS_SH_BASE:-}
    if [ -z "$base" ]; then
        base=/tmp
        [ -w /dev/shm ] && base=/dev/shm
    fi
    dir=$(mktemp -d "$base/hookd-redis-XXXXXX")
    chmod 700 "$dir"
    # URL-safe: no escaping needed in the URL the tests get.
    (umask 077 && head -c 24 /dev/urandom | base64 | tr '+/' '-_' >"$dir/password")
    pw=$(cat "$dir/password")
    # A free port may be taken between the check and the bind: retry.
    for _ in 1 2 3 4 5; do
        port=$(free_port)
        (umask 077 && cat >"$dir/redis.conf" <<EOF
# ::1 too where there is IPv6 ('-': no error where there is none).
bind 127.0.0.1 -::1
port $port
unixsocket $dir/redis.sock
unixsocketperm 700
dir $dir
save ""
appendonly no
daemonize no
loglevel warning
protected-mode yes
requirepass $pw
user hookd on >$pw ~* &* +@all
# DEBUG SLEEP from loopback clients, for fault tests.
enable-debug-command local
EOF
        )
        if run "$dir"; then
            echo "$port" >"$dir/port"
            echo "$dir"
            exit 0
        fi
        halt_server "$dir"
        sleep 0.2
    done
    cat "$dir/redis.log" >&2 || true
    rm -rf "$dir"
    echo "redis.sh: the server did not start" >&2
    exit 1
    ;;
url)
    dir=${2:?usage: redis.sh url DIR [unix]}
    if [ "${3:-}" = unix ]; then
        echo "unix://hookd:$(cat "$dir/password")@$dir/redis.sock?db=0"
    else
        echo "redis://hookd:$(cat "$dir/password")@127.0.0.1:$(cat "$dir/port")/0"
    fi
    ;;
password)
    dir=${2:?usage: redis.sh password DIR}
    cat "$dir/password"
    ;;
halt)
    dir=${2:?usage: redis.sh halt DIR}
    is_ours "$dir" || { echo "redis.sh: $dir is not a server made by redis.sh start" >&2; exit 2; }
    halt_server "$dir"
    ;;
resume)
    dir=${2:?usage: redis.sh resume DIR}
    is_ours "$dir" || { echo "redis.sh: $dir is not a server made by redis.sh start" >&2; exit 2; }
    if [ -f "$dir/redis.pid" ] && is_server "$(cat "$dir/redis.pid")"; then
        echo "redis.sh: the server in $dir is running" >&2
        exit 1
    fi
    if ! run "$dir"; then
        tail -5 "$dir/redis.log" >&2 || true
        echo "redis.sh: the server did not start again" >&2
        exit 1
    fi
    ;;
stop)
    dir=${2:?usage: redis.sh stop DIR}
    is_ours "$dir" || { echo "redis.sh: $dir is not a server made by redis.sh start" >&2; exit 2; }
    halt_server "$dir"
    rm -rf "$dir"
    ;;
*)
    echo "usage: $0 start | url DIR [unix] | password DIR | stop DIR | halt DIR | resume DIR" >&2
    exit 2
    ;;
esac
