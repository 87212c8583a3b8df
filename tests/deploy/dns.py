#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""A tiny authoritative DNS server over UDP for the image test: answers A
queries for the names it is given, NODATA for their other types, NXDOMAIN
for every other name (like a cluster's DNS for a name it does not know).
Python 3 standard library only.

    python3 tests/deploy/dns.py --host 127.0.0.77 [--port 53] --log FILE NAME=IPV4...

NAME is fully qualified without the trailing dot (e.g.
sink.default.svc.cluster.local=127.0.0.1); matching ignores case. Each
query is appended to --log as "NAME TYPE RCODE" (so a test can tell a name
answered here from one read in /etc/hosts). Prints "ready" on stdout once
bound; exits on SIGTERM."""
import argparse
import signal
import socket
import struct
import sys

TYPES = {1: "A", 28: "AAAA", 5: "CNAME", 15: "MX", 16: "TXT", 33: "SRV", 12: "PTR"}


def parse_name(msg, off):
    labels = []
    while True:
        n = msg[off]
        if n == 0:
            return ".".join(labels), off + 1
        if n & 0xC0:
            raise ValueError("compressed name in a question")
        labels.append(msg[off + 1:off + 1 + n].decode("ascii", "replace"))
        off += 1 + n


def answer(msg, names):
    """The reply to one query (None when it cannot be read), and what to log."""
    if len(msg) < 12:
        return None, None
    qid, flags, qd = struct.unpack("!HHH", msg[:6])
    if flags & 0x8000 or qd != 1:
        return None, None
    try:
        name, off = parse_name(msg, 12)
        qtype, qclass = struct.unpack("!HH", msg[off:off + 4])
    except (ValueError, IndexError, struct.error):
        return None, None
    question = msg[12:off + 4]
    ip = names.get(name.lower())
    rd = flags & 0x0100
    if ip is None:
        rcode, answers = 3, []
    elif qtype == 1 and qclass == 1:
        rcode, answers = 0, [b"\xc0\x0c" + struct.pack("!HHIH", 1, 1, 5, 4) + socket.inet_aton(ip)]
    else:
        rcode, answers = 0, []
    head = struct.pack("!HHHHHH", qid, 0x8400 | rd | rcode, 1, len(answers), 0, 0)
    what = f"{name} {TYPES.get(qtype, qtype)} {['NOERROR', 'FORMERR', 'SERVFAIL', 'NXDOMAIN'][rcode]}"
    return head + question + b"".join(answers), what


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--host", default="127.0.0.77")
    ap.add_argument("--port", type=int, default=53)
    ap.add_argument("--log", required=True)
    ap.add_argument("names", nargs="+", help="NAME=IPV4")
    a = ap.parse_args()
    names = {}
    for item in a.names:
        n, _, ip = item.partition("=")
        socket.inet_aton(ip)
        names[n.lower().rstrip(".")] = ip
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    s.bind((a.host, a.port))
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
    log = open(a.log, "a", buffering=1)
    print("ready", flush=True)
    while True:
        msg, peer = s.recvfrom(4096)
        reply, what = answer(msg, names)
        if reply is not None:
            log.write(what + "\n")
            s.sendto(reply, peer)


if __name__ == "__main__":
    main()
