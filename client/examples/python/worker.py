#!/usr/bin/env python3
"""Worker: claim a job, run it, then complete, retry or fail it, until SIGINT or SIGTERM.

    python3 worker.py [--queue QUEUE] [--lease SECONDS]     (connection from the PG* environment)

Prints one line per job run: "job ID NAME attempt N: OUTCOME".

Most handlers run outside any transaction and the job is completed afterwards. The
transactional one (record_delivery) writes its row and completes the job with
queue_delete(id, token) in one transaction, on a second connection: both commit, or
neither does, so a job whose lease was lost meanwhile leaves no row behind.
"""
import argparse
import os
import signal
import socket
import time
from datetime import timedelta

import psycopg2


class RetryLater(Exception):
    """A transient error: run the job again after `delay` seconds."""

    def __init__(self, message, delay):
        super().__init__(message)
        self.delay = delay


class PermanentError(Exception):
    """Running the job again cannot help: it goes to queue_failed_jobs."""


class LeaseLost(Exception):
    """The lease ran out and another worker claimed the job: stop working on it."""


class Job:
    """One claimed job; every call about it carries the claim's fencing token."""

    def __init__(self, conn, tx, lease, id, token, name, payload, attempts):
        self.conn, self.tx, self.lease = conn, tx, lease
        self.id, self.token, self.name, self.payload, self.attempts = id, token, name, payload, attempts

    def _call(self, sql, *args):
        # Each returns false when the token is no longer the current claim's.
        with self.conn.cursor() as cur:
            cur.execute(sql, (self.id, self.token) + args)
            return cur.fetchone()[0]

    def complete(self):
        return self._call("SELECT queue_delete(%s, %s)")

    def release(self, delay, error):  # delay None: the server's exponential backoff
        return self._call("SELECT queue_release(%s, %s, delay => %s, error => %s)", delay, error)

    def fail(self, error):
        return self._call("SELECT queue_fail(%s, %s, error => %s)", error)

    def extend(self):
        """Heartbeat for long jobs: the lease ends `lease` from now again."""
        if not self._call("SELECT queue_extend(%s, %s, %s)", self.lease):
            raise LeaseLost()


# ---- the application's handlers, by job name

def send_receipt(job):
    if "order" not in job.payload:
        raise PermanentError('payload has no "order"')


def charge_card(job):
    if job.attempts == 1:  # simulated: the payment gateway times out on the first try
        raise RetryLater("payment gateway timed out", delay=timedelta(seconds=1))


def build_report(job):
    for _ in range(job.payload.get("seconds", 5)):
        time.sleep(1)  # one step of a job that outlives its lease
        job.extend()


HANDLERS = {"send_receipt": send_receipt, "charge_card": charge_card, "build_report": build_report}


# ---- handlers whose writes commit with the job's completion, or not at all

def record_delivery(job, cur):
    """The application's write, in the transaction that also completes the job."""
    cur.execute("INSERT INTO example_deliveries (order_id, job_id, worker) VALUES (%s, %s, %s)",
                (job.payload["order"], job.id, f"{socket.gethostname()}:{os.getpid()}"))
    time.sleep(job.payload.get("stall", 0))  # simulated: a slow step, during which the lease may be lost


TX_HANDLERS = {"record_delivery": record_delivery}


def complete_in_transaction(job, handler):
    """handler(job, cursor) and queue_delete(id, token) in one transaction on job.tx."""
    try:
        with job.tx.cursor() as cur:  # psycopg2 opens the transaction (BEGIN) at the first statement
            handler(job, cur)
            cur.execute("SELECT queue_delete(%s, %s)", (job.id, job.token))
            if not cur.fetchone()[0]:  # another worker holds the job now: our writes must go
                job.tx.rollback()
                return "lease lost, rolled back"
        job.tx.commit()  # raises if the COMMIT fails: then nothing was written, nor the job completed
    except BaseException:
        if not job.tx.closed:
            job.tx.rollback()
        raise
    return "done"


def unknown_name(job):
    raise PermanentError(f"no handler for job name {job.name!r}")


def run(job):
    """Run the job's handler and tell the queue how it went; returns the outcome."""
    try:
        if job.name in TX_HANDLERS:
            return complete_in_transaction(job, TX_HANDLERS[job.name])
        HANDLERS.get(job.name, unknown_name)(job)
    except LeaseLost:
        return "lease lost while running"
    except RetryLater as e:
        kept, outcome = job.release(e.delay, str(e)), f"retry in {e.delay.total_seconds():g}s: {e}"
    except PermanentError as e:
        kept, outcome = job.fail(str(e)), f"failed: {e}"
    except Exception as e:  # a bug or an unforeseen error: let the server's backoff pace the retries
        kept, outcome = job.release(None, f"{type(e).__name__}: {e}"), f"released with backoff: {e!r}"
    else:
        kept, outcome = job.complete(), "done"
    return outcome if kept else "lease lost, outcome dropped"


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--queue", default="mail")
    parser.add_argument("--lease", type=int, default=30, help="seconds")
    args = parser.parse_args()
    lease = timedelta(seconds=args.lease)

    stopping = False

    def stop(signum, frame):  # graceful: finish the job in hand, claim no more
        nonlocal stopping
        stopping = True

    signal.signal(signal.SIGINT, stop)
    signal.signal(signal.SIGTERM, stop)

    conn = psycopg2.connect("")
    conn.autocommit = True  # every statement its own transaction: a claim commits at once
    tx = psycopg2.connect("")  # the transactional handlers' connection (not autocommit)
    with tx, tx.cursor() as cur:  # two workers may start at once: one creates the table
        cur.execute("SELECT pg_advisory_xact_lock(4711)")
        cur.execute("CREATE TABLE IF NOT EXISTS example_deliveries"
                    " (order_id bigint NOT NULL, job_id bigint NOT NULL, worker text NOT NULL)")
    worker = f"{socket.gethostname()}:{os.getpid()}"
    while not stopping:
        with conn.cursor() as cur:
            # Waits in the server up to 1 s for a job to be due, so a stop is seen within a second.
            cur.execute("SELECT id, token, name, payload, attempts"
                        " FROM queue_reserve(%s, lease => %s, worker => %s, max_jobs => 1, wait => '1 second')",
                        ([args.queue], lease, worker))
            claimed = cur.fetchall()
        for row in claimed:
            job = Job(conn, tx, lease, *row)
            print(f"job {job.id} {job.name} attempt {job.attempts}: {run(job)}", flush=True)
    tx.close()
    conn.close()
    print("worker stopped", flush=True)


if __name__ == "__main__":
    main()
