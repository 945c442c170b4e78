#!/usr/bin/env python3
"""tests/dashboard/hostile_test.py - the dashboard under hostile requests, over
raw sockets (python3's standard library only): what a client that has no
credentials can do to a dashboard with --auth-file, and NUL bytes in an
action's JSON.

  DASH_AUTH_URL, DASH_AUTH_PID    the dashboard with credentials (run.sh)
  DASH_AUTH_USER, DASH_AUTH_PASSWORD
  DASH_ADMIN_URL                  a read-write dashboard without credentials
  PG* environment                 the main cluster (psql)

Checks:
  slow heads      8 connections sending one header line every 3 s, without
                  credentials, do not delay a request with credentials, and
                  are cut once their head is 10 s late;
  head too large  more than 100 header lines, or more than 64 KiB of head:
                  431 before credentials are looked at; a flood of 32 MB of
                  header lines on 4 connections is cut before its end and leaves the
                  process's resident memory (VmRSS) where it was;
  NUL bytes       {"queue": "q\\u0000 x"} to pause and to clear (confirmed):
                  400, and queue q is neither paused nor cleared.
Last line: "N passed, N failed".
"""
import base64
import json
import os
import re
import socket
import subprocess
import sys
import threading
import time
from urllib.parse import urlparse

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
from checks import Checks  # noqa: E402

checks = Checks("hostile requests")
check = checks.check


def address(url):
    u = urlparse(url)
    return u.hostname, u.port


def psql(query):
    return subprocess.run(["psql", "-X", "-q", "-At", "-v", "ON_ERROR_STOP=1", "-c", query],
                          check=True, capture_output=True, text=True, timeout=20).stdout.strip()


def rss_kib(pid):
    with open("/proc/%d/status" % pid) as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    return -1


def read_answer(sock, timeout):
    """The status and body of one answer (Content-Length or up to EOF), or
    (None, reason) when none came within timeout."""
    sock.settimeout(timeout)
    data = b""
    end = time.monotonic() + timeout
    try:
        while True:
            if b"\r\n\r\n" in data:
                head, _, body = data.partition(b"\r\n\r\n")
                m = re.search(rb"(?i)\r\ncontent-length: *(\d+)", head)
                if m and len(body) >= int(m.group(1)):
                    return int(head.split(b" ")[1]), body[: int(m.group(1))].decode("utf-8", "replace")
            sock.settimeout(max(0.01, end - time.monotonic()))
            chunk = sock.recv(65536)
            if not chunk:
                break
            data += chunk
    except socket.timeout:
        return None, "no answer in %.1f s (got %r)" % (timeout, data[:80])
    except OSError as e:
        return None, "%s (got %r)" % (e, data[:80])
    if data.startswith(b"HTTP/1."):
        head, _, body = data.partition(b"\r\n\r\n")
        return int(head.split(b" ")[1]), body.decode("utf-8", "replace")
    return None, "closed without an answer (got %r)" % data[:80]


def request(url, method, path, headers=(), body=b"", timeout=5.0):
    host, port = address(url)
    sock = socket.create_connection((host, port), timeout=timeout)
    try:
        lines = ["%s %s HTTP/1.1" % (method, path), "Host: %s:%d" % (host, port), "Connection: close"]
        lines += ["%s: %s" % h for h in headers]
        if body:
            lines.append("Content-Length: %d" % len(body))
        sock.sendall(("\r\n".join(lines) + "\r\n\r\n").encode() + body)
        return read_answer(sock, timeout)
    finally:
        sock.close()


def credentials():
    pair = "%s:%s" % (os.environ["DASH_AUTH_USER"], os.environ["DASH_AUTH_PASSWORD"])
    return ("Authorization", "Basic " + base64.b64encode(pair.encode()).decode())


# ------------------------------------------------------------ slow heads

def slow_heads():
    url = os.environ["DASH_AUTH_URL"]
    host, port = address(url)
    stop = threading.Event()
    socks = []
    for _ in range(8):
        s = socket.create_connection((host, port), timeout=5)
        s.sendall(("GET /api/overview HTTP/1.1\r\nHost: %s:%d\r\n" % (host, port)).encode())
        socks.append(s)
    cut = {}

    def drip(i, s):
        n = 0
        started = time.monotonic()
        while not stop.is_set():
            if stop.wait(3):
                return
            try:
                s.sendall(b"X-Slow-%d: %d\r\n" % (n, n))
                n += 1
            except OSError:
                cut[i] = time.monotonic() - started
                return

    threads = [threading.Thread(target=drip, args=(i, s), daemon=True) for i, s in enumerate(socks)]
    for t in threads:
        t.start()
    try:
        time.sleep(1.0)
        worst = 0.0
        statuses = []
        for _ in range(4):  # over about 10 s: while the slow heads hold on
            t0 = time.monotonic()
            status, _ = request(url, "GET", "/api/overview", [credentials()], timeout=4.0)
            worst = max(worst, time.monotonic() - t0)
            statuses.append(status)
            time.sleep(2.0)
        check("slow heads: 8 connections sending a header line every 3 s do not delay a request "
              "with credentials (each answered in under 2 s)",
              statuses == [200] * 4 and worst < 2.0, {"statuses": statuses, "slowest": round(worst, 2)})
        # each slow head is cut once 10 s late: it gets 408, or its next line meets a closed socket
        answers = []
        for s in socks:
            status, _ = read_answer(s, 6.0)
            answers.append(status)
        check("slow heads: each is cut (408) when its head is not complete within 10 s",
              all(a == 408 for a in answers), answers)
    finally:
        stop.set()
        for s in socks:
            s.close()


# ------------------------------------------------------------ heads too large

def raw_head(url, header_lines, timeout=5.0):
    host, port = address(url)
    sock = socket.create_connection((host, port), timeout=timeout)
    try:
        head = "GET /api/overview HTTP/1.1\r\nHost: %s:%d\r\n" % (host, port)
        sock.sendall(head.encode() + b"".join(header_lines) + b"\r\n")
        return read_answer(sock, timeout)
    finally:
        sock.close()


def heads_too_large():
    url = os.environ["DASH_AUTH_URL"]
    pid = int(os.environ["DASH_AUTH_PID"])
    status, body = raw_head(url, [b"X-Many-%d: x\r\n" % i for i in range(150)])
    check("150 header lines without credentials: 431", status == 431, (status, body[:100]))
    status, body = raw_head(url, [b"X-Long-%d: %s\r\n" % (i, b"y" * 7000) for i in range(10)])
    check("70 KB of head in lines under 8 KB each, without credentials: 431", status == 431, (status, body[:100]))
    status, _ = raw_head(url, [b"X-Few-%d: x\r\n" % i for i in range(90)] + [("%s: %s\r\n" % credentials()).encode()])
    check("90 header lines with credentials: still served (200)", status == 200, status)

    before = rss_kib(pid)
    host, port = address(url)
    line = b"X-Flood: " + b"z" * 90 + b"\r\n"  # 101 bytes, far below the 8 KB line limit
    chunk = line * 10000  # about 1 MB
    results = {}

    def flood(i):
        sock = socket.create_connection((host, port), timeout=10)
        sent = 0
        try:
            sock.sendall(("GET / HTTP/1.1\r\nHost: %s:%d\r\n" % (host, port)).encode())
            while sent < 8 * 1024 * 1024:
                sock.sendall(chunk)
                sent += len(chunk)
            sock.sendall(b"\r\n")
            results[i] = ("all sent", sent, read_answer(sock, 10.0)[0])
        except OSError as e:
            results[i] = ("cut", sent, str(e))
        finally:
            sock.close()

    threads = [threading.Thread(target=flood, args=(i,)) for i in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    time.sleep(0.5)
    after = rss_kib(pid)
    cut_early = len(results) == 4 and all(r[0] == "cut" for r in results.values())
    check("a flood of 32 MB of header lines on 4 connections is cut before its end",
          cut_early, results)
    check("and the process's resident memory stays put (VmRSS grew by less than 8 MB)",
          before > 0 and after - before < 8 * 1024, {"before_kib": before, "after_kib": after})
    status, _ = request(url, "GET", "/api/overview", [credentials()])
    check("and a request with credentials is served after it", status == 200, status)


# ------------------------------------------------------------ NUL bytes

def nul_bytes():
    url = os.environ["DASH_ADMIN_URL"]
    host, port = address(url)
    status, page = request(url, "GET", "/")
    m = re.search(r'name="jobqueue-token" content="([0-9a-f]+)"', page or "")
    check("the page carries its token", status == 200 and m is not None, status)
    if m is None:
        return
    token = m.group(1)
    queue = "jq_dash_nul"
    psql("SELECT count(queue_push('job', '{}', '%s')) FROM generate_series(1, 3)" % queue)
    headers = [("Content-Type", "application/json"), ("Origin", "http://%s:%d" % (host, port)),
               ("X-Jobqueue-Token", token)]

    def act(name, body):
        # the JSON text holds the escape \u0000, as a browser's JSON.stringify sends it
        return request(url, "POST", "/api/actions/" + name, headers, json.dumps(body).encode())

    status, body = act("pause", {"queue": queue + "\u0000 (a different queue)"})
    paused = psql("SELECT coalesce((SELECT paused FROM queue_list() WHERE queue = '%s'), false)" % queue)
    check("pause with a NUL in the queue name: 400, naming the NUL", status == 400 and "NUL" in body, (status, body))
    check("and the queue before the NUL is not paused", paused == "f", paused)
    status, body = act("clear", {"queue": queue + "\u0000 x", "confirm": True})
    left = psql("SELECT count(*) FROM queue_jobs WHERE queue = '%s'" % queue)
    check("clear (confirmed) with a NUL in the queue name: 400", status == 400 and "NUL" in body, (status, body))
    check("and the queue before the NUL keeps its jobs", left == "3", left)
    psql("DELETE FROM queue_jobs WHERE queue = '%s'" % queue)


def main():
    for part in (slow_heads, heads_too_large, nul_bytes):
        try:
            part()
        except Exception as e:  # a part that broke counts as one failure, the others still run
            check(part.__name__ + " ran to its end", False, repr(e))


if __name__ == "__main__":
    main()
    sys.exit(checks.finish())
