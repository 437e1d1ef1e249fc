"""Attacks every listening TCP port of the given processes (found through /proc) with three
connections each: random bytes, a stranger's handshake (well formed, proof made with a wrong
secret) and a replayed handshake (a hello that is valid for another connection's challenge,
made with the real job secret). Used by garbage_check.sh; prints one line per connection
and exits 0 when every port took all three and closed each (refused) within the deadline.

usage: garbage_probe.py SECRET_HEX PID[,PID...] EXPECTED_PORTS
       garbage_probe.py --count PID[,PID...]    (prints how many ports they listen on)
"""
import hashlib
import hmac
import os
import socket
import struct
import sys
import threading
import time

CHALLENGE_BYTES = 40  # magic, version/pad, 32-byte nonce (rendezvous and data listeners)
HELLO_MAGIC = 0x74747463  # "tttc", the data listener's hello (src/transport/tcp.c)
DEADLINE_S = 60
KNOCK_MAGIC = 0x7474746B  # "tttk": a tcp data connection asks for its challenge


def listening_ports(pids):
    """(port, pid) of every socket in LISTEN state held by one of pids."""
    found = []
    for pid in pids:
        inodes = set()
        try:
            for fd in os.listdir(f"/proc/{pid}/fd"):
                try:
                    link = os.readlink(f"/proc/{pid}/fd/{fd}")
                except OSError:
                    continue
                if link.startswith("socket:["):
                    inodes.add(link[8:-1])
            with open(f"/proc/{pid}/net/tcp") as f:
                next(f)
                for line in f:
                    cols = line.split()
                    if cols[3] == "0A" and cols[9] in inodes:  # 0A: LISTEN
                        found.append((int(cols[1].split(":")[1], 16), pid))
        except OSError:
            continue
    return sorted(set(found))


def proof(key, na, nc, ident):
    return hmac.new(key, b"tutti-c" + na + nc + ident, hashlib.sha256).digest()


def hello(key, na, rank=1, job_id=0, sock=0, nsocks=1):
    # tcp_ident_t (src/transport/tcp_conn.c): magic, rank, job id, socket, sockets per pair.
    # A short hello would be refused only as "closed before its hello", testing nothing.
    ident = struct.pack("<IiQii", HELLO_MAGIC, rank, job_id, sock, nsocks)
    nc = os.urandom(32)
    return ident + nc + proof(key, na, nc, ident)


def recv_exact(s, n):
    buf = b""
    while len(buf) < n:
        part = s.recv(n - len(buf))
        if not part:
            break
        buf += part
    return buf


def wait_closed(s):
    """True once the listener closes the connection (it refused us)."""
    try:
        while s.recv(4096):
            pass
        return True
    except OSError:
        return True  # reset: refused as well


def attack(port, kind, secret, results, first_challenge):
    s = socket.create_connection(("127.0.0.1", port), timeout=DEADLINE_S)
    try:
        if kind == "garbage":
            s.sendall(os.urandom(4096))
        else:
            # The rendezvous and tree listeners challenge at once; a tcp data listener waits
            # for the connecting side's knock (src/transport/tcp_conn.c) before it does.
            s.settimeout(1.0)
            try:
                first = s.recv(CHALLENGE_BYTES)
            except socket.timeout:
                s.sendall(struct.pack("<II", KNOCK_MAGIC, 0))
                first = b""
            s.settimeout(DEADLINE_S)
            ch = first + recv_exact(s, CHALLENGE_BYTES - len(first)) if first else \
                recv_exact(s, CHALLENGE_BYTES)
            if len(ch) != CHALLENGE_BYTES:
                results.append((port, kind, "closed before its challenge"))
                return
            na = ch[8:]
            if kind == "stranger":
                first_challenge[port] = na
                s.sendall(hello(os.urandom(32), na))
            else:  # replay: a hello valid for the stranger's challenge, not this one
                while port not in first_challenge:
                    time.sleep(0.01)
                if first_challenge[port] == na:
                    results.append((port, kind, "FAIL: the listener reused a challenge"))
                    return
                s.sendall(hello(secret, first_challenge[port]))
        s.shutdown(socket.SHUT_WR)
        results.append((port, kind, "refused" if wait_closed(s) else "accepted?"))
    except OSError as e:
        results.append((port, kind, f"refused ({e.__class__.__name__})"))
    finally:
        s.close()


def main():
    if sys.argv[1] == "--count":
        print(len(listening_ports([int(p) for p in sys.argv[2].split(",")])))
        return 0
    secret = bytes.fromhex(sys.argv[1])
    pids = [int(p) for p in sys.argv[2].split(",")]
    expected = int(sys.argv[3])
    ports = []
    end = time.time() + DEADLINE_S
    while time.time() < end:
        ports = listening_ports(pids)
        if len(ports) >= expected:
            break
        time.sleep(0.05)
    print(f"garbage_probe: listening ports {ports}", flush=True)
    if len(ports) < expected:
        print(f"garbage_probe: FAIL: found {len(ports)} listening ports, want {expected}")
        return 1
    results, first_challenge, threads = [], {}, []
    for port, _ in ports:
        for kind in ("garbage", "stranger", "replay"):
            t = threading.Thread(target=attack,
                                 args=(port, kind, secret, results, first_challenge))
            t.start()
            threads.append(t)
            time.sleep(0.05)  # queue them in this order at each listener
    print("garbage_probe: attacks queued", flush=True)
    for t in threads:
        t.join(DEADLINE_S)
    ok = True
    for port, kind, what in sorted(results):
        print(f"garbage_probe: port {port}: {kind}: {what}")
        ok &= what.startswith("refused")
    if len(results) != 3 * len(ports):
        print(f"garbage_probe: FAIL: {len(results)} of {3 * len(ports)} connections finished")
        ok = False
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
