#!/usr/bin/env python3
"""Randomised stress of the storage ring (1.3), bounded in time.

For JQ_RING_STRESS_SECONDS (default 60) several sessions work on three
queues of a database of their own, with jobqueue.ring_period = 1 s so that
the ring turns many times:
  - producers push with random priorities and delays (most due at once, some
    within a period, some several periods ahead, some 5 to 20 periods ahead
    ("long"), and a few 30 days ahead, never due during the run ("never")),
    some with unique keys (from a small pool, so keys are often held), one
    to four jobs per transaction, and roll back some transactions; each job's
    payload carries the producer's own name for it ({"pid": ...});
  - workers claim (queue_reserve, 1 to 4 jobs, leases of 1 to 3 s, each
    claim with a reserved_by of its own) and complete, release (with and
    without delay), fail, extend then complete, or abandon the job (its lease
    runs out and it is claimed again); some claims roll back, and the token
    of a rolled-back claim is tried (it must not work);
  - a holder claims one or two jobs at a time with a 30 s lease, keeps them
    2 to 8 s (over rotations, which move them to queue_jobs_long, and over
    kills), reads their rows (token and lease unchanged) and completes them
    with their tokens (which must work);
  - an admin retries the failed jobs (queue_retry_failed), cancels random
    jobs (queue_cancel; never the "never" ones), and pauses and resumes the
    queues at random (queue_pause / queue_resume, 0.5 to 3 s, at most two
    queues at once): a pause's window starts at a server moment read after
    its commit and ends at one read before the resume;
  - a rotator calls queue_rotate(0), queue_rotate(1) and queue_rotate(NULL)
    at random, every 50-350 ms;
  - a checker samples, each in one statement: ids held by two rows of
    queue_jobs (its partitions), ids in both queue_jobs and the failed
    table, jobs without unique key in queue_jobs_long (moved there by a
    rotation), and whether the queues' claim positions are trusted (the
    library is preloaded, so claims start at them); and where each "long"
    and "never" job is while it still waits for its first claim (partition,
    ctid, xmin, the whole row);
  - with JQ_RING_STRESS_KILLS=N (needs a cluster of the program's own:
    tests/ring/stress.sh), a killer kills the postmaster with SIGKILL N times
    at random moments of the first 80 % of the run, and starts it again
    (crash recovery): one kill in the middle of a rotation that moved jobs
    and truncated its partition but has not committed, one right after a
    rotation that committed having moved jobs, the others at any moment
    (the kinds taken in turn, in a random order); the postmaster alone
    (its backends finish the statement in hand, reply, and exit when they
    notice) or with every server process at once (statements and commits
    in flight cut where they are: a commit may be done with no reply), in
    turn, in a random order.  Just before a kill at any moment, one push
    transaction, one claim (with a 30 s lease) and one completion commit
    with synchronous_commit = on on a cluster whose synchronous standby
    never comes (stress.sh): each is flushed and then waits for ever, a
    commit done with no reply (the killer waits up to 5 s for the three to
    be sent; one whose backend the killer did not see waiting for the standby
    (wait event SyncRep) is an ordinary
    unknown outcome, not one that must be found committed).  Every session
    reconnects
    and resolves what the kill left unknown: a push transaction cut anywhere
    (its commit included) is looked up by its payload ids in queue_jobs, the
    failed table and the jobs claimed so far (committed, counted once, or
    not, all of a transaction's jobs alike); a claim cut by a kill is looked
    up by its reserved_by (its jobs are adopted, tokens and leases, and
    worked on); a fenced call (completion, release, fail, extend) cut by a
    kill is followed by a completion with the same token, which works if the
    job is still there under that token (it must then: a token that is
    still the job's works after a restart) and otherwise finds the job gone
    or claimed again; a pause or resume cut is read back from queue_list().
Then the producers stop, the workers complete everything and the admin
resumes the queues and retries what failed until the backlog (the "never"
jobs aside) is empty.  Checked at the end, from what each session recorded
(times are the server's: a claim's moment is its reserved_until minus its
lease; a call's is clock_timestamp() read in the same statement just before
it; a claim runs from its statement_timestamp() to a clock_timestamp()
read after queue_reserve returned, in the same statement):
  - every job pushed in a committed transaction (or resolved as committed)
    was claimed or cancelled, except the "never" ones;
  - each was completed (a successful queue_delete, or one a kill cut that
    left the job gone with nobody claiming it again) or cancelled exactly
    once, and none but the "never" ones is left in queue_jobs or
    queue_failed_jobs;
  - no job pushed in a rolled-back (or unresolved) transaction was ever
    claimed or completed (by payload id: a kill may hand an uncommitted
    push's id out again);
  - no job was held by two live leases at once (each claim came after the
    previous claim's lease ended: its reserved_until, extended, or the
    moment it was completed, released or failed; claims with a call a kill
    cut are left out), and none was claimed after it was cancelled;
  - every successful call used the token of the job's latest claim, and no
    rolled-back claim's token worked;
  - no claim that ran inside a pause window (it started after the pause
    committed and returned before the resume began) handed out a job of the
    paused queue (a claim still running when the resume commits may see
    it: its statements take their snapshots as they go), and a queue
    paused before a kill was still paused after;
  - no id was ever in two rows or in both tables;
  - every "long" or "never" job moved at most once, from the ring partition
    it was pushed to, to queue_jobs_long, and never back; in
    queue_jobs_long its row (ctid, xmin) was never written again;
  - every committed "never" job is there at the end, in queue_jobs_long,
    with the row first seen (every column but ring), the producer's name,
    queue and payload, and the ctid and xmin it had in queue_jobs_long;
  - the holder's jobs kept token and lease while held (some of them in
    queue_jobs_long), and every one completed with its token, also those
    held over a kill;
  - with kills: every kill happened (the rotation kinds and both ways of
    killing too), every server process exited when the postmaster alone was
    killed, every connection lost was lost to a kill; the push, claim and
    completion left without a reply were each found committed (the push's
    jobs, the claim's jobs adopted, the job gone and counted completed);
  - the ring turned: rotations of ring 0 and 1 truncated many times, moved
    jobs, and some jobs were moved to queue_jobs_long; claim positions were
    in use.
Needs jobqueue preloaded (PG* environment; a superuser).  Knobs:
  JQ_RING_STRESS_SECONDS   length of the working phase (default 60)
  JQ_RING_STRESS_KILLS     kill -9 of the server this many times (default 0;
                           needs JQ_PGDATA, JQ_PGBIN, JQ_SERVER_LOG and
                           JQ_CLUSTER_DIR of a cluster it may kill)
  JQ_RING_STRESS_SEED      seed of the random choices (default: the time)
  JQ_RING_STRESS_SELFTEST  breaks what is checked, the run must fail:
                           truncate  the rotator empties ring partitions with
                                     a plain TRUNCATE, moving nothing;
                           pause     the admin pauses and resumes another
                                     queue than the one it records;
                           lose      after each restart one "never" job and
                                     one due job are deleted (a lossy crash);
                           moveback  the rotator moves some waiting jobs of
                                     queue_jobs_long back to a ring partition;
                           noresolve a push or claim a kill cut is taken as
                                     not committed, without looking
Last line: "N passed, N failed".
"""
import collections
import os
import random
import sys
import threading
import time

# The pieces, next to this file: stress_state (knobs, records, sessions that
# survive kills), stress_workload (producers, workers, holder, admin),
# stress_kills (the killer, the rotator), stress_checks (the checker, the
# analyses at the end).
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from ringlib import Checks, Database, one  # noqa: E402
from stress_checks import (  # noqa: E402
    backlog, checker, cut_completions, lease_overlaps, never_checks, stale_successes,
)
from stress_kills import DB, killer, rotator, wait_for_db  # noqa: E402
from stress_state import (  # noqa: E402
    DRAIN_S, KILLS, LIMBO, PRODUCERS, RUN_S, SEED, SELFTEST, WORKERS, adopted, calls, cancels, claim_info,
    claimed_pids, claims, committed, draining, errors, held, kills, limbo, limbo_on, never_pushed, pause_kept,
    places, redos, retried, rewritten, rolled_back, rolled_back_claims, rotations, samples, stop, stop_producing,
    token_refused, tracked, uncertain, unknown_pushes, windows,
)
from stress_workload import admin, holder, producer, worker  # noqa: E402


def main():
    checks = Checks("ring stress")
    rng = random.Random(SEED)
    print(f"ring stress: {RUN_S:.0f} s of work, {KILLS} kills, seed {SEED}"
          f"{', SELFTEST ' + SELFTEST if SELFTEST else ''}")
    if KILLS:
        for name in ("JQ_PGDATA", "JQ_PGBIN", "JQ_SERVER_LOG", "JQ_CLUSTER_DIR"):
            if not os.environ.get(name):
                print(f"stress.py: {name} is not set (kills need a cluster of their own: tests/ring/stress.sh)",
                      file=sys.stderr)
                return 2
    with Database(f"jq_ring_stress_{os.getpid()}", {"jobqueue.ring_period": 1}) as db:
        DB[0] = db
        conn = db.connect()
        if "jobqueue" not in one(conn, "SHOW shared_preload_libraries"):
            checks.check("jobqueue is preloaded (claim positions need it)", False)
            return checks.finish()
        one(conn, """CREATE FUNCTION claim_position(text)
                       RETURNS TABLE (trusted boolean, priority integer, id bigint)
                       AS 'jobqueue', 'jobqueue_claim_position' LANGUAGE C STRICT""")
        limbo_on[0] = bool(KILLS and one(conn, "SHOW synchronous_standby_names")
                           and one(conn, "SHOW synchronous_commit") == "local")
        conn.close()
        threads = [threading.Thread(target=producer, args=(db, n, random.Random(rng.random())))
                   for n in range(PRODUCERS)]
        threads += [threading.Thread(target=worker, args=(db, n, random.Random(rng.random())))
                    for n in range(WORKERS)]
        threads += [threading.Thread(target=holder, args=(db, random.Random(rng.random()))),
                    threading.Thread(target=admin, args=(db, random.Random(rng.random()))),
                    threading.Thread(target=rotator, args=(db, random.Random(rng.random()))),
                    threading.Thread(target=checker, args=(db,))]
        killing = threading.Thread(target=killer, args=(random.Random(rng.random()),), daemon=True)
        for t in threads:
            t.daemon = True
            t.start()
        killing.start()
        time.sleep(RUN_S)
        stop_producing.set()
        killing.join(timeout=40)
        draining.set()
        conn = wait_for_db()
        drained_at = None
        deadline = time.monotonic() + DRAIN_S
        while time.monotonic() < deadline:
            if backlog(conn) == 0:
                if drained_at is not None and time.monotonic() - drained_at > 1.5:
                    break
                drained_at = drained_at or time.monotonic()
            else:
                drained_at = None
            time.sleep(0.3)
        stop.set()
        for t in threads:
            t.join(timeout=30)
        left = backlog(conn)
        in_ring = one(conn, "SELECT count(*) FROM queue_jobs WHERE NOT payload ? 'never'")
        never_checks(checks, conn)
        conn.close()

    overlaps, after_cancel, by_job = lease_overlaps({(i, t) for i, t, _, _ in uncertain})
    completed = collections.Counter(c[0] for c in calls if c[2] == "delete" and c[4])
    cut_done = cut_completions(by_job)
    completed.update(cut_done)
    cancelled = collections.Counter(c[0] for c in cancels if c[2])
    claimed = {c[0] for c in claims}
    due = committed - set(never_pushed)
    print(f"pushed {len(committed)} committed jobs ({len(rolled_back)} rolled back, {len(tracked)} long or never, "
          f"{len(never_pushed)} never), {len(claims)} claims ({len(rolled_back_claims)} rolled back), "
          f"{sum(completed.values())} completions, {sum(cancelled.values())} cancels, "
          f"{sum(1 for c in calls if c[2] == 'release' and c[4])} releases, "
          f"{sum(1 for c in calls if c[2] == 'fail' and c[4])} fails, {sum(retried)} retried, "
          f"{sum(1 for c in calls if c[2] == 'extend' and c[4])} extends")
    print(f"rotations: {rotations.summary()}; jobs moved {rotations.moved}")
    print(f"checker: {len(samples)} samples, at most {max((s[2] for s in samples), default=0)} "
          f"jobs without key in queue_jobs_long, trusted positions in {sum(1 for s in samples if s[3])}")
    print(f"pauses: {len(windows)} windows, {sum((e - s).total_seconds() for _, s, e, _ in windows):.1f} s in all; "
          f"holder: {len(held)} jobs, {sum(1 for h in held if h[4])} in long, "
          f"{sum(1 for h in held if h[5] != h[6])} over a kill")
    for k in kills:
        print(f"kill ({k['kind']}, {'every process' if k['every'] else 'the postmaster'}): "
              f"{k['moved'] if k['moved'] is not None else '-'} jobs in the open or last "
              f"rotation, server back after {k['down']:.1f} s")
    if KILLS:
        print(f"after the kills: {len(unknown_pushes)} push transactions unknown "
              f"({sum(1 for _, r in unknown_pushes if r == 'committed')} committed), {len(adopted)} claims "
              f"unknown ({sum(1 for _, n in adopted if n)} committed, {sum(n for _, n in adopted)} jobs adopted), "
              f"{len(uncertain)} fenced calls unknown ({sum(cut_done.values())} completions that committed), "
              f"{sum(1 for r in redos if r[2])} completed after the restart with their tokens")
        print(f"commits left without a reply at a kill: {', '.join(f'{k} {w}' for k, w, _ in limbo) or 'none'}")

    checks.check("no session hit an error", not errors, "; ".join(errors[:5]))
    checks.check("the queues drained (nothing but the \"never\" jobs left in queue_jobs or queue_failed_jobs)",
                 left == 0 and in_ring == 0, f"{left} left in the stress queues, {in_ring} rows in queue_jobs")
    never = sorted(j for j in due if j not in claimed and not cancelled[j])
    checks.check(f"every committed job was claimed or cancelled ({len(due)} jobs, the \"never\" ones aside)",
                 not never, f"{len(never)} never claimed, e.g. {never[:10]}")
    wrong = sorted(j for j in due if completed[j] + cancelled[j] != 1)
    checks.check("each committed job was completed or cancelled exactly once", not wrong,
                 f"{len(wrong)} jobs, e.g. {[(j, completed[j], cancelled[j]) for j in wrong[:10]]}")
    ghost_pids = rolled_back & set(claimed_pids)
    ghosts = sorted(set(completed) - due) + sorted(ghost_pids)
    checks.check("no job of a rolled-back push was claimed or completed", not ghosts, ghosts[:10])
    checks.check("no job was held by two live leases at once", not overlaps,
                 f"{len(overlaps)}, e.g. {overlaps[:5]}")
    checks.check("no job was claimed after it was cancelled", not after_cancel, after_cancel[:5])
    stale = stale_successes(by_job)
    checks.check("every successful call used the job's current token", not stale,
                 f"{len(stale)}, e.g. {stale[:5]}")
    stale_ok = [c for c in calls if c[2] == "stale" and c[4]]
    checks.check(f"no token of a rolled-back claim worked "
                 f"({sum(1 for c in calls if c[2] == 'stale')} tried)", not stale_ok, stale_ok[:5])
    checks.check("no id was in two rows of queue_jobs, nor in both tables (checker samples)",
                 samples and all(s[0] == 0 and s[1] == 0 for s in samples),
                 [s for s in samples if s[0] or s[1]][:5])

    in_pause = []
    for (job_id, token), (_, queue, started, ended) in claim_info.items():
        inside = [(str(s), str(e), h) for q, s, e, h in windows if q == queue and s < started and ended < e] \
            if started is not None else []
        if inside:
            in_pause.append((job_id, queue, str(started), str(ended), inside))
    checks.check(f"no claim that ran while its queue was paused handed out its job ({len(windows)} pauses)",
                 not in_pause, f"{len(in_pause)}, e.g. {in_pause[:5]}; kills at {[str(k['at']) for k in kills]}")
    checks.check(f"the queues paused before a kill were still paused after it ({len(pause_kept)})",
                 all(k for _, k in pause_kept), [q for q, k in pause_kept if not k])
    checks.check("pauses were exercised (at least 5 windows, 5 s in all)",
                 len(windows) >= 5 and sum((e - s).total_seconds() for _, s, e, _ in windows) >= 5)

    bad_moves = {j: p for j, p in places.items()
                 if len(p) > 2 or "queue_jobs_long" in p[:-1] or len(p) == 2 and p[1] != "queue_jobs_long"}
    in_long = sum(1 for p in places.values() if p[-1] == "queue_jobs_long")
    checks.check(f"\"long\" and \"never\" jobs moved at most once, to queue_jobs_long, and never back "
                 f"({len(places)} seen waiting, {in_long} in long)", not bad_moves,
                 f"{len(bad_moves)}, e.g. {list(bad_moves.items())[:5]}")
    checks.check("no waiting row of queue_jobs_long was written again (ctid, xmin)", not rewritten, rewritten[:5])
    checks.check("some \"long\" jobs were moved to queue_jobs_long while they waited",
                 any(p[-1] == "queue_jobs_long" for j, p in places.items() if j not in never_pushed))
    checks.check(f"the holder's jobs kept their token and lease while held ({len(held)})",
                 held and all(h[3] for h in held), [h for h in held if not h[3]][:5])
    checks.check("the holder completed every job with its token", all(h[2] for h in held),
                 [h for h in held if not h[2]][:5])
    checks.check("some held jobs were in queue_jobs_long (moved by a rotation, token and lease kept)",
                 any(h[4] for h in held))
    if KILLS:
        checks.check(f"the server was killed {KILLS} times and came back "
                     f"({', '.join(k['kind'] for k in kills)})", len(kills) == KILLS,
                     f"{len(kills)} kills")
        checks.check("a kill hit an open rotation that had moved jobs",
                     KILLS < 3 or any(k["kind"] == "open rotation" for k in kills))
        checks.check(f"every push, claim and completion left without a reply at a kill was found committed "
                     f"({len(limbo)}: {sorted({k for k, _, _ in limbo})})",
                     not limbo_on[0] or not any(k["kind"] == "any moment" for k in kills)
                     or ({k for k, _, _ in limbo} == set(LIMBO) and all(c for _, _, c in limbo)),
                     [x for x in limbo if not x[2]] or "not every kind was left waiting"
                     if limbo_on[0] else "")
        checks.check("the postmaster was killed alone, and with every server process",
                     KILLS < 2 or {k["every"] for k in kills} == {False, True})
        checks.check("every server process exited when the postmaster alone was killed",
                     not any(k["stuck"] for k in kills), [k["stuck"] for k in kills if k["stuck"]])
        checks.check("a completion with its token after a restart worked whenever the job still had that token",
                     not token_refused, token_refused[:5])
        checks.check("some held jobs were completed with their tokens after a kill",
                     any(h[5] != h[6] and h[2] for h in held))
    explicit = rotations.count("truncated", 0) + rotations.count("truncated", 1)
    checks.check(f"rotations of ring 0 and 1 truncated at least 20 times ({explicit})", explicit >= 20)
    checks.check(f"rotations moved jobs ({rotations.moved})", SELFTEST == "truncate" or rotations.moved > 0)
    checks.check("some jobs without unique key were moved to queue_jobs_long",
                 any(s[2] > 0 for s in samples))
    checks.check("claim positions were in use (trusted in the checker's samples)",
                 any(s[3] > 0 for s in samples))
    exercised = (sum(retried) > 0 and rolled_back_claims and any(c[2] == "release" and c[4] for c in calls)
                 and any(c[2] for c in cancels) and len(claims) > len(claimed))
    checks.check("every kind of call was exercised (retries, rolled-back claims, releases, cancels, re-claims)",
                 exercised)
    return checks.finish()


if __name__ == "__main__":
    sys.exit(main())
