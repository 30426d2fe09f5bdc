"""Slow clients for scripts/bench-token-flood: N connections that send a request's headers a
byte a second, and N that send their headers at once (an agent's, with $TOKEN) and then a
declared 1 MiB body a byte a second, for SECONDS. Prints how many connections the server cut (its header and body timeouts)
and how many were still open at the end.

    python3 benches/http/slow_clients.py HOST PORT N SECONDS
"""

import os
import socket
import sys
import threading
import time

host, port, n, seconds = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), float(sys.argv[4])
cut = {"headers": 0, "body": 0}
lock = threading.Lock()


def trickle(kind: str) -> None:
    end = time.monotonic() + seconds
    try:
        s = socket.create_connection((host, port), timeout=5)
    except OSError:
        with lock:
            cut[kind] += 1
        return
    if kind == "headers":
        data = b"GET /healthz HTTP/1.1\r\nHost: x\r\nX-Slow: " + b"a" * 10_000
    else:
        s.sendall(b"POST /api/v1/pre-tool-check HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                  b"Authorization: Bearer " + os.environ["TOKEN"].encode() + b"\r\nContent-Length: 1048576\r\n\r\n")
        data = b"{" + b" " * 1_048_575
    for byte in data:
        if time.monotonic() >= end:
            break
        try:
            s.sendall(bytes([byte]))
        except OSError:
            with lock:
                cut[kind] += 1
            return
        time.sleep(1)
    s.close()


threads = [threading.Thread(target=trickle, args=(k,)) for k in ("headers", "body") for _ in range(n)]
for t in threads:
    t.start()
for t in threads:
    t.join()
print(f"slow: {n} trickling headers, {cut['headers']} cut; {n} trickling bodies, {cut['body']} cut "
      f"(within {seconds:.0f} s)")
