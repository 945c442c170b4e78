#!/usr/bin/python3
"""Response times of the dashboard's reads (bench/run.sh, scenario dashboard).

    dashboard_probe.py time --calls N (--sql QUERY | --url URL)
        N calls one after the other (after 3 not timed), each timed from
        the request to the last byte of its answer; prints one line
        "n=.. median_ms=.. p10_ms=.. p90_ms=.. min_ms=.. max_ms=.. bytes=.."
    dashboard_probe.py poll --every SECS (--sql QUERY | --url URL)...
        what a dashboard page (or a Prometheus scrape) does: every SECS
        each request once, until SIGTERM or SIGINT; then the same line
        for all the requests made

--sql runs on one connection from the PG* environment (a statement
prepared once, as a long-lived dashboard connection runs it); --url is
an HTTP GET (a new connection each time, as a browser poll or a scrape
makes it).  An answer other than HTTP 200 or an SQL error ends the probe
with status 1.
"""
import argparse
import signal
import statistics
import sys
import time
import urllib.request

import psycopg2


class Sql:
    def __init__(self, query):
        self.conn = psycopg2.connect("")
        self.conn.autocommit = True
        self.cur = self.conn.cursor()
        self.cur.execute("PREPARE probe AS " + query)

    def __call__(self):
        self.cur.execute("EXECUTE probe")
        rows = self.cur.fetchall()
        return sum(len(str(r)) for r in rows)


class Http:
    def __init__(self, url):
        self.url = url

    def __call__(self):
        with urllib.request.urlopen(self.url, timeout=60) as answer:
            if answer.status != 200:
                raise RuntimeError(f"{self.url}: HTTP {answer.status}")
            return len(answer.read())


def summary(times_ms, sizes):
    if not times_ms:
        return "n=0"
    qs = statistics.quantiles(times_ms, n=10) if len(times_ms) >= 2 else [times_ms[0]] * 9
    return (f"n={len(times_ms)} median_ms={statistics.median(times_ms):.3f} p10_ms={qs[0]:.3f} "
            f"p90_ms={qs[-1]:.3f} min_ms={min(times_ms):.3f} max_ms={max(times_ms):.3f} "
            f"bytes={int(statistics.median(sizes))}")


def timed(request):
    t0 = time.perf_counter()
    size = request()
    return (time.perf_counter() - t0) * 1000.0, size


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("mode", choices=("time", "poll"))
    p.add_argument("--calls", type=int, default=30)
    p.add_argument("--every", type=float, default=1.0)
    p.add_argument("--sql", action="append", default=[])
    p.add_argument("--url", action="append", default=[])
    a = p.parse_args()
    requests = [Sql(q) for q in a.sql] + [Http(u) for u in a.url]
    if not requests:
        p.error("give --sql or --url")
    times, sizes = [], []
    try:
        if a.mode == "time":
            for _ in range(3):
                for r in requests:
                    r()
            for _ in range(a.calls):
                for r in requests:
                    ms, size = timed(r)
                    times.append(ms)
                    sizes.append(size)
        else:
            stop = []
            for sig in (signal.SIGTERM, signal.SIGINT):
                signal.signal(sig, lambda *_: stop.append(True))
            next_at = time.monotonic()
            while not stop:
                for r in requests:
                    ms, size = timed(r)
                    times.append(ms)
                    sizes.append(size)
                next_at += a.every
                while not stop and time.monotonic() < next_at:
                    time.sleep(min(0.05, max(0.0, next_at - time.monotonic())))
    except Exception as e:  # an error answer, a refused connection: the figure would be wrong
        print(f"dashboard_probe: {e}", file=sys.stderr)
        print(summary(times, sizes) + " error=1")
        return 1
    print(summary(times, sizes))
    return 0


if __name__ == "__main__":
    sys.exit(main())
