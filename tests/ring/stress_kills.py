"""tests/ring/stress.py's kills and rotations: kill -9 of the server and its
restart, the killer that times them, and the rotator (which also kills in
or right after a rotation that moved jobs)."""
import datetime
import time

import psycopg2
import psycopg2.errors

from ringlib import kill_server, one, start_server
from stress_state import (
    KILLS, LIMBO, RUN_S, SELFTEST, Session, errors, kill_began, kill_done, kill_epoch, kill_how, kill_lock,
    kill_request, kills, limbo_sent, record_error, rotations, see_limbo_waiting, server_up, stop, stop_producing,
)


def kill(kind, moved=None):
    """kill -9 of the postmaster (alone, or with every server process: the
    next in kill_how), then start it again (crash recovery)."""
    every = kill_how[len(kills) % len(kill_how)] == "every process"
    with kill_lock:
        started = time.monotonic()
        at = datetime.datetime.now(datetime.timezone.utc)
        kill_began[0] = time.monotonic()
        kill_epoch[0] += 1
        server_up.clear()
        try:
            stuck = kill_server(every_process=every)
            start_server()
            if SELFTEST == "lose":
                conn = wait_for_db()
                one(conn, """DELETE FROM queue_jobs WHERE id IN
                               ((SELECT id FROM queue_jobs WHERE payload ? 'never' LIMIT 1)
                                UNION ALL (SELECT id FROM queue_jobs WHERE NOT payload ? 'never' LIMIT 1))""")
                conn.close()
        except Exception as e:  # noqa: BLE001 (a server that does not come back ends the run)
            record_error("killer", e)
            stop_producing.set()
            stop.set()
            raise
        finally:
            server_up.set()
        kills.append({"kind": kind, "every": every, "moved": moved, "stuck": stuck,
                      "down": time.monotonic() - started, "at": at})


def wait_for_db():
    deadline = time.monotonic() + 60
    while True:
        try:
            return DB[0].connect()
        except psycopg2.OperationalError:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.2)


DB = [None]


def killer(rng):
    """KILLS kills, one in each of KILLS equal spans of the first 80 % of
    the run (after its first 10 %), in kinds taken in turn."""
    kinds = rng.sample(["open rotation", "after rotation", "any moment"], 3)
    kill_how[:] = rng.sample(["postmaster", "every process"], 2)
    started = time.monotonic()
    span = RUN_S * 0.7 / max(KILLS, 1)
    for i in range(KILLS):
        at = RUN_S * 0.1 + span * i + rng.uniform(0.1, 0.9) * span
        while time.monotonic() - started < at and not stop.is_set():
            time.sleep(0.05)
        if stop.is_set():
            return
        kind = kinds[i % 3]
        if kind == "any moment":
            limbo_sent.clear()
            for event in LIMBO.values():
                event.set()
            deadline = time.monotonic() + 5   # until each kind's statement is sent
            while len(limbo_sent) < len(LIMBO) and time.monotonic() < deadline:
                time.sleep(0.05)
            see_limbo_waiting()
            kill(kind)
            for event in LIMBO.values():
                event.clear()
            continue
        kill_done.clear()
        kill_request[0] = kind
        if not kill_done.wait(30):
            kill_request[0] = None
            errors.append(f"killer: no rotation moved jobs within 30 s for the kill '{kind}'")


def rotate_and_kill(db, s, rng, kind):
    """The rotator's part of a kill in a rotation: in an open rotation (moved
    and truncated, not committed) or right after one that committed."""
    ring = rng.choice((0, 1))
    if kind == "open rotation":
        conn = db.connect(autocommit=False)
        cur = conn.cursor()
        cur.execute("SELECT moved, outcome FROM queue_rotate(%s)", (ring,))
        moved, outcome = cur.fetchone()
        if outcome == "truncated" and moved > 0:
            kill_request[0] = None
            kill(kind, moved)
            kill_done.set()
            try:
                conn.close()
            except psycopg2.Error:
                pass
        else:
            conn.rollback()
            conn.close()
    else:
        _, moved, _, outcome = rotations.rotate(s.cur, ring)
        if outcome == "truncated" and moved > 0:
            kill_request[0] = None
            kill(kind, moved)
            kill_done.set()


def rotator(db, rng):
    s = Session(db, "rotator")
    while not stop.is_set():
        time.sleep(rng.uniform(0.05, 0.35))
        ring = rng.choice((0, 1, None))
        try:
            if kill_request[0]:
                rotate_and_kill(db, s, rng, kill_request[0])
            elif SELFTEST == "truncate" and ring is not None:
                # the seeded bug: empty the partition without moving its jobs
                s.cur.execute("SET lock_timeout = '20ms'")
                try:
                    s.cur.execute(f"TRUNCATE queue_jobs_ring{ring}")
                    rotations.outcomes[(ring, "truncated")] += 1
                except psycopg2.errors.LockNotAvailable:
                    rotations.outcomes[(ring, "busy")] += 1
            else:
                rotations.rotate(s.cur, ring)
                if SELFTEST == "moveback" and rng.random() < 0.2:
                    # the seeded bug: waiting jobs go back from long to the ring
                    s.cur.execute("""UPDATE queue_jobs SET ring = queue_current_ring() WHERE id IN
                                       (SELECT id FROM queue_jobs_long WHERE unique_key IS NULL
                                        AND (payload ? 'long' OR payload ? 'never') AND NOT ready LIMIT 3)""")
        except psycopg2.Error as e:
            if not s.lost(e):
                record_error("rotator", e)
    s.conn.close()
