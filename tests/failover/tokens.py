#!/usr/bin/env python3
"""Fencing tokens across a promotion whose standby missed the last claims.

Tokens come from a sequence (queue_job_tokens), which PostgreSQL WAL-logs
32 values ahead: a standby knows the sequence as far as the last such WAL
record it received.  Claims whose WAL it never received are lost with the
old primary, and the promoted server hands out the sequence's values again
from where its copy ends.  If such a value goes to the job whose lost claim
had it, a worker still holding that lost claim completes (or fails, or
releases) the new claim's job: fencing is broken.

The run: a primary and an asynchronous standby; one job is pushed and
replicated; the standby is stopped; on the primary the job is claimed and
released 100 times (100 tokens, far past the 32 the standby may know of),
the last claim kept, as a worker would hold it; the primary is killed
(pg_ctl stop -m immediate); the standby is started and promoted: it never
saw those claims.  On it the job is claimed and released again, 140 times,
so that its tokens sweep the whole range of the lost ones, all for the same
job (one job claimed over and over makes every repeated value land on it;
with several jobs a repeat would depend on their order).  After each claim
the worker holding the last lost claim tries to complete the job with its
token; at the end every lost token is tried on the current claim.

Checked: the scenario happened (the promoted server's sequence was behind
the lost tokens); no (id, token) of a lost claim is handed out again; the
lost claim's holder cannot complete the job claimed again, nor can any lost
token; the current claim's token can.  Without tokens that carry the
timeline the second and third checks fail.
Last line: "N passed, N failed".
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
import replica  # noqa: E402
from checks import Checks  # noqa: E402

DB = "fo"
LOST_CLAIMS = 100
NEW_CLAIMS = 140


def claim(cur):
    cur.execute("SELECT id, token FROM queue_reserve('{fo_tokens}', '1 minute', 'tokens')")
    return cur.fetchone()


def release(cur, job, token):
    cur.execute("SELECT queue_release(%s, %s, '0')", (job, token))
    assert cur.fetchone()[0], "release with the current token failed"


def main():
    checks = Checks("failover tokens")
    try:
        primary = replica.init_primary("primary")
        primary.query(f"CREATE DATABASE {DB}")
        primary.query("CREATE EXTENSION jobqueue", dbname=DB)
        job = primary.value("SELECT queue_push('fenced', '{}', 'fo_tokens', max_attempts => 1000)", dbname=DB)
        standby = replica.make_standby(primary, "standby")
        replica.wait_replayed(primary, standby)
        standby.stop()

        conn = primary.connect(DB)
        cur = conn.cursor()
        lost = []
        for i in range(LOST_CLAIMS):
            got = claim(cur)
            assert got and got[0] == job, f"claim {i} on the primary: {got}"
            lost.append(got[1])
            if i < LOST_CLAIMS - 1:
                release(cur, job, got[1])
        conn.close()
        held = lost[-1]
        primary.kill()

        standby.start()
        standby.promote()
        known = standby.value("SELECT last_value FROM queue_job_tokens", dbname=DB)
        timeline = standby.value("SELECT timeline_id FROM pg_control_checkpoint()", dbname=DB)
        print(f"lost claims' tokens {lost[0]}..{lost[-1]} (the worker holds {held});"
              f" the promoted server's token sequence is at {known}, timeline {timeline}")
        checks.check("scenario: the promoted server's token sequence is behind the lost claims' tokens",
                     known < max(lost), f"sequence at {known}, lost tokens up to {max(lost)}")

        conn = standby.connect(DB)
        cur = conn.cursor()
        lost_set = set(lost)
        repeated, completed_by_held, new_tokens = [], [], []
        for i in range(NEW_CLAIMS):
            got = claim(cur)
            if not got:
                break
            new_tokens.append(got[1])
            if got[1] in lost_set:
                repeated.append(got[1])
            # the worker still holding the last lost claim finishes its job
            cur.execute("SELECT queue_delete(%s, %s)", (job, held))
            if cur.fetchone()[0]:
                completed_by_held.append(got[1])
                break   # the job is gone: the lost claim finished the new claim's job
            if i < NEW_CLAIMS - 1:
                release(cur, job, got[1])
        print(f"the promoted server's tokens for the job: {new_tokens[0]}..{new_tokens[-1]}"
              f" ({len(new_tokens)} claims)" if new_tokens else "no claims on the promoted server")
        checks.check("no (id, token) of a lost claim is handed out again", not repeated,
                     f"{len(repeated)} of the lost tokens handed out again for job {job}, e.g. {repeated[:5]}")
        checks.check("the worker holding the lost claim cannot complete the job claimed again",
                     not completed_by_held,
                     f"queue_delete({job}, {held}) returned true after the claim with token {completed_by_held}")
        if not completed_by_held and new_tokens:
            cur.execute("SELECT queue_delete_many(array_fill(%s::bigint, ARRAY[%s]), %s::bigint[])",
                        (job, len(lost), lost))
            checks.check("no lost claim's token completes the current claim", cur.fetchone()[0] == [])
            cur.execute("SELECT queue_delete(%s, %s)", (job, new_tokens[-1]))
            checks.check("the current claim's token completes the job", cur.fetchone()[0] is True)
        conn.close()
    except Exception as e:  # noqa: BLE001 - a step the rest depends on failed: count it, stop
        checks.check("the run went through", False, f"{type(e).__name__}: {e}")
    return checks.finish()


if __name__ == "__main__":
    sys.exit(main())
