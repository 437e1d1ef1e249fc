#!/usr/bin/python3
"""link_check: raw TCP throughput of one stream between two namespace hosts, the shaped link's
real ceiling for bench/cluster/run.sh (independent of every library benchmarked).

    link_check.py recv PORT MIB        on one host: accepts one connection, reads MIB MiB,
                                       prints {"link_check": {"mib": M, "gbs": G}} (GB/s = 1e9
                                       B/s, from the first byte to the last)
    link_check.py send HOST PORT MIB   on the other: connects (retrying up to 20 s) and writes

Every socket has a 60 s timeout, so a stuck peer ends the run with an error.
"""
import json
import socket
import sys
import time


def recv(port, mib):
    with socket.socket() as ls:
        ls.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        ls.bind(("0.0.0.0", port))
        ls.listen(1)
        ls.settimeout(60)
        c, _ = ls.accept()
        with c:
            c.settimeout(60)
            want, got, t0 = mib << 20, 0, None
            buf = bytearray(1 << 20)
            while got < want:
                k = c.recv_into(buf)
                if not k:
                    sys.exit("link_check: the sender closed after %d bytes" % got)
                if t0 is None:
                    t0 = time.perf_counter()
                got += k
            dt = time.perf_counter() - t0
    print(json.dumps({"link_check": {"mib": mib, "gbs": round(want / dt / 1e9, 6)}}))


def send(host, port, mib):
    deadline = time.time() + 20
    while True:
        try:
            c = socket.create_connection((host, port), timeout=60)
            break
        except OSError:
            if time.time() > deadline:
                raise
            time.sleep(0.1)
    with c:
        block = b"\x5a" * (1 << 20)
        for _ in range(mib):
            c.sendall(block)


def main():
    a = sys.argv[1:]
    if len(a) == 3 and a[0] == "recv":
        recv(int(a[1]), int(a[2]))
    elif len(a) == 4 and a[0] == "send":
        send(a[1], int(a[2]), int(a[3]))
    else:
        sys.exit(__doc__)


if __name__ == "__main__":
    main()
