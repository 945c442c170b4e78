"""tests/ring/stress.py's checks: the checker's samples during the run, and
what is worked out at the end from the sessions' records (lease overlaps,
stale tokens, completions a kill cut, the "never" jobs)."""
import collections
import json
import time

import psycopg2

from ringlib import JOB_COLUMNS, one
from stress_state import (
    QUEUES, Session, calls, cancels, claims, extends, first_rows, long_rows, never_pushed, places, record_error,
    redos, rewritten, samples, stop, tracked, uncertain,
)


CHECK_SQL = """
SELECT (SELECT count(*) FROM (SELECT id FROM queue_jobs GROUP BY id HAVING count(*) > 1) d),
       (SELECT count(*) FROM queue_jobs j JOIN queue_failed_jobs f ON f.id = j.id),
       (SELECT count(*) FROM queue_jobs_long WHERE unique_key IS NULL),
       (SELECT count(*) FROM unnest(%s::text[]) q, LATERAL claim_position(q) p WHERE p.trusted)
"""
# the "long" and "never" jobs still waiting for their first claim
WAITING_SQL = f"""
SELECT tableoid::regclass::text, ctid::text, xmin::text, {JOB_COLUMNS} FROM queue_jobs
 WHERE id = ANY (%s) AND attempts = 0 AND NOT ready AND available_at > clock_timestamp()
"""


def look_at_waiting(cur):
    cur.execute(WAITING_SQL, (list(tracked),))
    for place, ctid, xmin, *row in cur.fetchall():
        job_id = row[0]
        first_rows.setdefault(job_id, tuple(row))
        if not places[job_id] or places[job_id][-1] != place:
            places[job_id].append(place)
        if place == "queue_jobs_long":
            if job_id in long_rows and long_rows[job_id] != (ctid, xmin):
                rewritten.append((job_id, long_rows[job_id], (ctid, xmin)))
            long_rows[job_id] = (ctid, xmin)


def checker(db):
    s = Session(db, "checker")
    while not stop.is_set():
        try:
            s.cur.execute(CHECK_SQL, (QUEUES,))
            samples.append(s.cur.fetchone())
            look_at_waiting(s.cur)
        except psycopg2.Error as e:
            if not s.lost(e):
                record_error("checker", e)
        time.sleep(0.5)
    s.conn.close()


def backlog(conn):
    return one(conn, """SELECT (SELECT count(*) FROM queue_jobs WHERE queue = ANY (%s) AND NOT payload ? 'never')
                             + (SELECT count(*) FROM queue_failed_jobs WHERE queue = ANY (%s))""",
               (QUEUES, QUEUES))


def lease_overlaps(cut):
    """Claims that came while the previous claim of the job still held it,
    and claims after a successful cancel.  A claim with a call a kill cut
    (cut: its (id, token)s) may have ended at an unknown moment: left out."""
    ends = collections.defaultdict(list)       # (id, token) -> moments the claim ended
    for job_id, token, kind, moment, ok in calls:
        if ok and kind in ("delete", "release", "fail"):
            ends[(job_id, token)].append(moment)
    extended = collections.defaultdict(list)
    for job_id, token, until in extends:
        extended[(job_id, token)].append(until)
    by_job = collections.defaultdict(list)
    for job_id, token, moment, until in claims:
        by_job[job_id].append((moment, token, until))
    overlaps = []
    for job_id, claimed in by_job.items():
        claimed.sort()
        for (m1, t1, u1), (m2, t2, _) in zip(claimed, claimed[1:]):
            if (job_id, t1) in cut:
                continue
            end = min([max([u1] + extended[(job_id, t1)])] + ends[(job_id, t1)])
            if m2 < end:
                overlaps.append((job_id, t1, t2, str(m2), str(end)))
    cancelled_at = {job_id: moment for job_id, moment, ok in cancels if ok}
    after_cancel = [(job_id, str(m)) for job_id, claimed in by_job.items() if job_id in cancelled_at
                    for m, _, _ in claimed if m > cancelled_at[job_id]]
    return overlaps, after_cancel, by_job


def stale_successes(by_job):
    """Successful calls whose token was not the job's latest claim's at the call."""
    bad = []
    for job_id, token, kind, moment, ok in calls:
        if not ok or kind == "stale":
            continue
        earlier = [(m, t) for m, t, _ in by_job.get(job_id, []) if m <= moment]
        if not earlier or max(earlier)[1] != token:
            bad.append((job_id, token, kind))
    return bad


def cut_completions(by_job):
    """Completions a kill cut that committed: the completion with the same
    token after the restart did not work, and nobody claimed or cancelled
    the job after that claim (had the cut one not committed, the job would
    have stayed, to be claimed again or cancelled)."""
    redone = {(i, t): ok for i, t, ok in redos}
    cancelled_at = collections.defaultdict(list)
    for job_id, moment, ok in cancels:
        if ok:
            cancelled_at[job_id].append(moment)
    done = collections.Counter()
    for job_id, token, kind, moment in uncertain:
        if kind != "delete" or redone.get((job_id, token)) is not False or moment is None:
            continue
        later = [m for m, t, _ in by_job.get(job_id, []) if m > moment] + \
            [m for m in cancelled_at[job_id] if m > moment]
        if not later:
            done[job_id] += 1
    return done


def never_checks(checks, conn):
    """The "never" jobs at the end: all there, untouched, in queue_jobs_long."""
    with conn.cursor() as cur:
        cur.execute(f"""SELECT tableoid::regclass::text, ctid::text, xmin::text, {JOB_COLUMNS}
                          FROM queue_jobs WHERE payload ? 'never'""")
        final = {row[3]: row for row in cur.fetchall()}
    expected = set(never_pushed)
    missing = sorted(expected - set(final))
    extra = sorted(set(final) - expected)
    checks.check(f"every committed \"never\" job is there at the end ({len(expected)} jobs)",
                 expected and not missing and not extra,
                 f"{len(missing)} missing, e.g. {missing[:10]}; {len(extra)} nobody committed, e.g. {extra[:10]}")
    changed, moved_again, not_long, unseen = [], [], [], []
    for job_id in expected & set(final):
        place, ctid, xmin, *row = final[job_id]
        name, queue, payload = never_pushed[job_id]
        if job_id not in first_rows:
            unseen.append(job_id)
        elif tuple(row[:-1]) != first_rows[job_id][:-1] or (row[1], row[2], json.loads(row[3])) != (
                queue, name, json.loads(payload)):
            changed.append(job_id)
        if place != "queue_jobs_long":
            not_long.append((job_id, place))
        elif job_id in long_rows and long_rows[job_id] != (ctid, xmin):
            moved_again.append((job_id, long_rows[job_id], (ctid, xmin)))
    checks.check("each was seen waiting by the checker", not unseen, unseen[:10])
    checks.check("each has the row first seen (every column but ring) and what the producer wrote",
                 not changed, changed[:10])
    checks.check("each is in queue_jobs_long, with the ctid and xmin it had there", not not_long and not moved_again,
                 f"not in long: {not_long[:5]}; written again: {moved_again[:5]}")
