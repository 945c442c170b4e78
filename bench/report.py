#!/usr/bin/env python3
"""The benchmark's markdown report (used by bench/run.sh).

    report.py RAW_TSV [VERSIONS_TXT]     the tables, from run.sh's raw.tsv
    report.py --explain FILE             one line summing up an auto_explain probe

raw.tsv has one "key<TAB>value" line per measured run; a figure is the
median of its runs.
"""
import functools
import glob
import os
import re
import statistics
import sys
from collections import defaultdict

import queue_watch


# ---------------------------------------------------------------- explain
def explain_summary(path):
    """Summarise the nested plans auto_explain printed for one queue_reserve."""
    text = open(path, encoding="utf-8", errors="replace").read()
    blocks = re.split(r"NOTICE:\s+duration: ", text)[1:]
    parts = []
    total = None
    for block in blocks:
        m = re.match(r"([0-9.]+) ms", block)
        ms = float(m.group(1)) if m else 0.0
        qm = re.search(r"Query Text: (.*)", block)
        # without the leading comment the extension tags its statements with
        query = re.sub(r"^/\*.*?\*/\s*", "", qm.group(1)) if qm else ""
        if "queue_reserve(" in query:
            total = ms
            continue
        if query.startswith("SELECT id, attempts"):
            name = "promote"
        elif query.startswith("SELECT id FROM") and "deadline <=" in query.split("WHERE", 1)[-1][:40]:
            name = "expired"
        elif query.startswith("SELECT least("):
            name = "next-due"
        elif query.startswith("SELECT id"):
            name = "candidates"
        elif query.startswith("UPDATE"):
            name = "claim-update"
        else:
            name = query.split()[0].lower() if query else "?"
        scans = []
        for sm in re.finditer(r"(Seq Scan on \w+|Index Scan using \w+|Index Only Scan using \w+|"
                              r"Bitmap Index Scan on \w+|Bitmap Heap Scan on \w+)", block):
            if sm.group(1) not in scans:
                scans.append(sm.group(1))
        scans = [s for s in scans if "queue_settings" not in s]
        bm = re.search(r"Buffers: shared hit=(\d+)(?: read=(\d+))?", block)
        buf = ""
        if bm:
            buf = f", {int(bm.group(1)) + int(bm.group(2) or 0)} buffers"
        # rows filtered out by a scan of queue_jobs (not of queue_settings)
        rr, on_jobs = [], False
        for line in block.splitlines():
            if "Scan" in line and " on " in line or "Scan using" in line:
                on_jobs = "queue_settings" not in line
            m2 = re.search(r"Rows Removed by Filter: (\d+)", line)
            if m2 and on_jobs:
                rr.append(int(m2.group(1)))
        removed = f", {max(rr)} rows filtered out" if rr else ""
        parts.append(f"{name} {ms:.2f} ms ({'; '.join(scans) or 'no scan'}{buf}{removed})")
    if not blocks:
        return "no plan captured"
    head = f"claim {total:.2f} ms: " if total is not None else ""
    return head + "; ".join(parts)


# ---------------------------------------------------------------- report
def load(path):
    runs = defaultdict(list)
    with open(path, encoding="utf-8") as f:
        for line in f:
            line = line.rstrip("\n")
            if not line:
                continue
            key, _, value = line.partition("\t")
            runs[key].append(value)
    return runs


def num(v):
    try:
        return float(v)
    except (TypeError, ValueError):
        return None


class Figures:
    def __init__(self, runs):
        self.runs = runs

    def values(self, key):
        return [x for x in (num(v) for v in self.runs.get(key, [])) if x is not None]

    def med(self, key):
        vals = self.values(key)
        return statistics.median(vals) if vals else None

    def text(self, key, default=""):
        vals = self.runs.get(key)
        return vals[-1] if vals else default

    def kv(self, key):
        """key=value pairs of a latency line (median over runs per field)."""
        out = defaultdict(list)
        for line in self.runs.get(key, []):
            for part in line.split():
                k, _, v = part.partition("=")
                out[k].append(v)
        return out


def fmt(x, unit=""):
    if x is None:
        return "n/a"
    if unit == "bytes":
        return f"{x / 1048576:.1f} MiB"
    if unit == "B":   # a few bytes: exact
        return f"{x:,.0f} B"
    if unit == "ms":
        return f"{x:.3f} ms" if x < 10 else f"{x:.1f} ms"
    if abs(x) >= 100:
        return f"{x:,.0f}"
    return f"{x:.2f}"


def count_text(x):
    return "n/a" if x is None else f"{x:,.0f}"


def spread(f, key, unit=""):
    vals = f.values(key)
    if len(vals) <= 1:
        return ""
    return f" ({fmt(min(vals), unit)}–{fmt(max(vals), unit)})"


def ratio(a, b):
    if a is None or b is None or b == 0:
        return None
    return a / b


# The figures run.sh measures right beside each other in every round
# (scenario_push's push_pair and batch_pair): their rounds' own ratios are
# printed beside the goal's (which stays the ratio of the medians), since
# they leave out the machine's drift from round to round.
SIDE_BY_SIDE = {(f"push.{ours}.c{c}", f"push.{ref}.c{c}")
                for c in (1, 8) for ours, ref in (("notify", "plain"), ("batch", "batch_plain"))}


def paired_text(f, a, b):
    """ " (rounds: median, min–max)" of a's and b's round-by-round ratios, or "" """
    if (a, b) not in SIDE_BY_SIDE:
        return ""
    va, vb = f.values(a), f.values(b)
    if len(va) != len(vb) or len(va) < 2 or 0 in vb:
        return ""
    rounds = [x / y for x, y in zip(va, vb)]
    return f" (rounds {statistics.median(rounds):.2f}×, {min(rounds):.2f}–{max(rounds):.2f})"


# ---------------------------------------------------------------- new-queue scenarios
STEADY_RUNS = (("quiet", "jobqueue, NOTIFY off"), ("notify", "jobqueue, NOTIFY on"),
               ("plain", "plain-sql SKIP LOCKED"), ("runtime", "jobqueue, worker runtime, NOTIFY off"))
COLD_CASES = (("empty", "table analysed while empty"), ("none", "table never analysed"))
COLD_SESSIONS = (("same", "the session that claimed on the empty table"),
                 ("new", "a new session"),
                 ("analysed", "a new session after ANALYZE"))
# run.sh's STEADY_WINDOW: claim latency of the first and last 10 s
STEADY_WINDOW = 10
# The worker runtime's 8-thread backlog drain before the steady-state work,
# measured on this machine; the goal is 5x it.
WORKER_BEFORE = 5538


def steady_goals():
    goals = []
    for tag, label in STEADY_RUNS[:2]:
        goals.append((f"steady load, {label}: backlog at the end vs 1 s of pushes",
                      f"steady.{tag}.backlog_end", f"steady.{tag}.push_rate", "<=", 1.0))
        goals.append((f"steady load, {label}: claim p50, last 10 s vs first 10 s",
                      f"steady.{tag}.last_p50_ms", f"steady.{tag}.first_p50_ms", "<=", 1.5))
    return goals


def cold_plan_goals():
    return [(f"cold plan, {stats_label}: claim at the backlog, {session_label} vs after ANALYZE",
             f"cold.{stats}.{session}", f"cold.{stats}.analysed", "<=", 1.5)
            for stats, stats_label in COLD_CASES for session, session_label in COLD_SESSIONS[:2]]


def worker_goals():
    return [("worker runtime, 8 threads, backlog drain vs the figure before (jobs/s)",
             "worker.drain.t8", WORKER_BEFORE, ">=", 5),
            ("worker runtime, 8 threads vs batched SQL drain, 8 workers",
             "worker.drain.t8", "drainb.ours.w8", ">=", 0.7)]


def read_series(path):
    """A CSV of numbers with a header line (the per-second series of a steady
    run, the soak's size samples), as a list of dicts (empty if missing)."""
    try:
        with open(path, encoding="utf-8") as fh:
            lines = [ln.strip().split(",") for ln in fh if ln.strip()]
    except OSError:
        return []
    if not lines:
        return []
    head, rows = lines[0], lines[1:]
    return [dict(zip(head, (num(x) for x in r))) for r in rows]


def per_window(series, field, width=5):
    """Averages of a per-second field over windows of `width` seconds."""
    out = []
    for i in range(0, len(series), width):
        chunk = series[i:i + width]
        out.append(sum(r[field] for r in chunk) / len(chunk))
    return out


def cold_plan_rows(f, w):
    backlog = f.med("meta.cold_backlog")
    for stats, stats_label in COLD_CASES:
        if not f.values(f"cold.{stats}.analysed"):
            continue
        for session, session_label in COLD_SESSIONS:
            key = f"cold.{stats}.{session}"
            ref = None if session == "analysed" else f"cold.{stats}.analysed"
            row_text = f"claim at {fmt(backlog)}, {stats_label}: {session_label} (median)"
            v, r = f.med(key), ratio(f.med(key), f.med(ref)) if ref else None
            w(f"| 8 cold plan | {row_text} | 1 | {fmt(v, 'ms')}, p90 {fmt(f.med(key + '.p90'), 'ms')} | "
              f"{f'{r:.2f}× after ANALYZE' if r is not None else 'reference'} |")
        w(f"| | reltuples before the ANALYZE: {fmt(f.med(f'cold.{stats}.reltuples_before_analyze'))} | | | |")


def load_rows(f, w, scen, k, label, series_path, window, avg_secs):
    """The rows of one jq_steady run whose summary is under raw.tsv key k:
    claim latency of its first and last `window` seconds, and averages of
    its per-second series over `avg_secs`."""
    secs = int(f.med(f"{k}.secs") or 0)
    clients = f"{f.med(k + '.producers'):.0f}+{f.med(k + '.workers'):.0f}"
    span = f"{window // 60} min" if window % 60 == 0 else f"{window} s"
    w(f"| {scen} | {label}: pushed/s (offered {fmt(f.med(k + '.offered_rate'))}) | {clients} | "
      f"{fmt(f.med(k + '.push_rate'))} | {f.med(k + '.push_ratio'):.2f}× offered |")
    w(f"| | completed/s | | {fmt(f.med(k + '.complete_rate'))} | "
      f"{fmt(ratio(f.med(k + '.completed'), f.med(k + '.pushed')))}× pushed |")
    w(f"| | backlog at the end ({secs} s) / at most | | {fmt(f.med(k + '.backlog_end'))} / "
      f"{fmt(f.med(k + '.max_backlog'))} | {fmt(ratio(f.med(k + '.backlog_end'), f.med(k + '.push_rate')))} s "
      f"of pushes |")
    if f.med(f"{k}.claims"):
        w(f"| | claim, first {span}: p50 / p99 | | {fmt(f.med(k + '.first_p50_ms'), 'ms')} / "
          f"{fmt(f.med(k + '.first_p99_ms'), 'ms')} | {fmt(f.med(k + '.first_claims'))} claims |")
        r50 = ratio(f.med(k + ".last_p50_ms"), f.med(k + ".first_p50_ms"))
        r99 = ratio(f.med(k + ".last_p99_ms"), f.med(k + ".first_p99_ms"))
        w(f"| | claim, last {span}: p50 / p99 | | {fmt(f.med(k + '.last_p50_ms'), 'ms')} / "
          f"{fmt(f.med(k + '.last_p99_ms'), 'ms')} | {fmt(r50)}× / {fmt(r99)}× first {span} |")
    first_analyze = f.med(f"{k}.first_analyze_sec")
    w(f"| | analyses / vacuums of the table during the run | | {count_text(f.med(k + '.analyzes'))} / "
      f"{count_text(f.med(k + '.vacuums'))} | "
      f"{'first analysis seen at ' + fmt(first_analyze) + ' s' if first_analyze is not None and first_analyze >= 0 else 'none'} |")
    series = read_series(series_path)
    if series:
        done = ", ".join(f"{x:,.0f}" for x in per_window(series, "completed", avg_secs))
        w(f"| | completed/s, {avg_secs} s averages | | {done} | |")
        if f.med(f"{k}.claims"):
            p50 = ", ".join(f"{x:.2f}" for x in per_window(series, "claim_p50_ms", avg_secs))
            w(f"| | claim p50 (ms), {avg_secs} s averages of the per-second p50 | | {p50} | |")


def steady_rows(f, w, outdir):
    for tag, label in STEADY_RUNS:
        k = f"steady.{tag}"
        if f.values(f"{k}.pushed"):
            load_rows(f, w, "9 steady", k, label, os.path.join(outdir, f"steady-{tag}.csv"),
                      STEADY_WINDOW, 5)


# ---------------------------------------------------------------- held snapshot
HELD_CLAIMS = (("one", "one-job"), ("batch", "batched"))
HELD_HOLDERS = (("queue", "read queue_jobs"), ("other", "read another table"))


def held_goals():
    """With claim positions on: goals; off: the same ratios, for reference."""
    goals = []
    for positions in ("on", "off"):
        for claims, claims_label in HELD_CLAIMS:
            for holder, holder_label in HELD_HOLDERS:
                label = f"held snapshot ({holder_label}), {claims_label} drain vs clean"
                if positions == "off":
                    label += ", claim positions off"
                goals.append((label, f"held.{holder}.{claims}.{positions}", f"held.clean.{claims}.{positions}",
                              ">=" if positions == "on" else "ref", 0.9))
    return goals


def held_rows(f, w):
    one_claims, batch_calls = f.med("meta.held_one_claims"), f.med("meta.batch_calls")
    for claims, claims_label in HELD_CLAIMS:
        if not f.values(f"held.clean.{claims}.on"):
            continue
        work = (f"{fmt(one_claims)} claims of 1" if claims == "one" and one_claims
                else f"{fmt(batch_calls)} claims of 100" if batch_calls else "")
        for positions in ("on", "off"):
            off = "" if positions == "on" else ", claim positions off"
            clean = f"held.clean.{claims}.{positions}"
            row_text = f"{claims_label} drain ({work}), clean{off}"
            figure_row("6 held snapshot", row_text, 8, clean, None, "ref", w=w, f=f)
            for holder, holder_label in HELD_HOLDERS:
                figure_row("6 held snapshot", f"{claims_label} drain, snapshot held ({holder_label}){off}", 8,
                    f"held.{holder}.{claims}.{positions}", clean, "clean", w=w, f=f)
        for holder, holder_label in (("clean", "clean"),) + HELD_HOLDERS:
            r = ratio(f.med(f"held.{holder}.{claims}.on"), f.med(f"held.{holder}.{claims}.off"))
            if r is not None:
                w(f"| | {claims_label} drain, {holder_label}: claim positions on vs off | | | {r:.2f}× off |")
        for positions in ("on", "off"):
            parts = []
            for holder, holder_label in (("clean", "clean"),) + HELD_HOLDERS:
                k = f"held.{holder}.{claims}.{positions}"
                parts.append(f"{holder_label} {count_text(f.med(k + '.dead_tup'))} / "
                             f"{count_text(f.med(k + '.not_removable'))} / "
                             f"{fmt(f.med(k + '.claim_idx_bytes'), 'bytes')} / "
                             f"{fmt(f.med(k + '.total_bytes'), 'bytes')} / "
                             f"{count_text(sum(f.values(k + '.truncations')) if f.values(k + '.truncations') else None)}")
            w(f"| | after the {claims_label} drain, positions {positions}: n_dead_tup / dead rows a VACUUM "
              f"could not remove / claim index / table+indexes (medians) / partitions emptied by rotations "
              f"during the drains (all runs) | | | {'; '.join(parts)} |")


# ---------------------------------------------------------------- soak
SOAK_RUNS = (("on", "claim positions on"), ("off", "claim positions off (reference)"))


def soak_goals():
    goals = []
    for positions, label in SOAK_RUNS:
        op = "<=" if positions == "on" else "ref"
        k = f"soak.{positions}"
        goals.append((f"soak, snapshot held, {label}: backlog at the end vs 1 s of pushes", f"{k}.backlog_end",
                      f"{k}.push_rate", op, 1.0))
        goals.append((f"soak, snapshot held, {label}: claim p50, last vs first minute", f"{k}.last_p50_ms",
                      f"{k}.first_p50_ms", op, 1.5))
    return goals


def soak_held_label(f):
    return {"queue_jobs": "read queue_jobs", "other": "read another table"}.get(f.text("meta.soak_held"),
                                                                              "read another table")


def every(rows, secs):
    """From a watcher's rows (one a second), the first row at or after each
    multiple of secs since the first row."""
    if not rows:
        return []
    t0, picked, due = rows[0]["epoch"], [], 0
    for r in rows:
        if r["epoch"] - t0 >= due - 0.5:
            picked.append((due, r))
            due += secs
    return picked


def soak_rows(f, w, outdir):
    window = int(f.med("meta.soak_window") or 60)
    step = int(f.med("meta.soak_report_secs") or 30)
    for positions, label in SOAK_RUNS:
        k = f"soak.{positions}"
        if not f.values(f"{k}.pushed"):
            continue
        held = f.med(f"{k}.holder_held")
        load_rows(f, w, "soak", k, f"snapshot held ({soak_held_label(f)}), {label}",
                  os.path.join(outdir, f"soak-{positions}.csv"), window, 60)
        w(f"| | the snapshot still held at the end | | {'yes' if held == 1 else '**no**'} | |")
        rows = queue_watch.read_watch(os.path.join(outdir, f"soak-{positions}-watch.csv"))
        if not rows:
            continue
        picked = every(rows, step)
        at = ", ".join(f"{t}" for t, _ in picked)
        w(f"| | queue_jobs n_dead_tup (all partitions) at {at} s | | "
          f"{', '.join(count_text(r['n_dead_tup']) for _, r in picked)} | "
          f"{len(rows)} samples in soak-{positions}-watch.csv |")
        scans = [(r["epoch"] - rows[0]["epoch"], r) for r in rows if r.get("scanned_dead") is not None]
        if scans:
            w(f"| | dead row versions in queue_jobs' heap (pgstattuple, all partitions) at "
              f"{', '.join(f'{t:.0f}' for t, _ in scans)} s | | "
              f"{', '.join(count_text(r['scanned_dead']) for _, r in scans)} | "
              f"n_dead_tup is the statistics' count, which autovacuum goes by |")
            last = scans[-1][1]["scanned_dead_by_leaf"]
            if last:
                w(f"| | the same per partition, last scan | | "
                  f"{'; '.join(f'{leaf} {count_text(num(n))}' for leaf, n in sorted(last.items()))} | |")
        mib = ", ".join(f"{r['total_bytes'] / 1048576:.1f}" for _, r in picked)
        w(f"| | queue_jobs table+indexes (MiB, all partitions) at the same moments | | {mib} | "
          f"peak {fmt(queue_watch.peak(rows, 'total_bytes'), 'bytes')}; claim index at the end "
          f"{fmt(rows[-1]['claim_idx_bytes'], 'bytes')}; autovacuums {count_text(rows[-1]['autovacuums'])} |")
        ticked, vacuuming = f.med(f"{k}.ticked"), f.med(f"{k}.vacuuming")
        w(f"| | partitions emptied by rotations | | {count_text(f.med(k + '.truncations'))} | "
          f"the ticker connected in {'n/a' if ticked is None else f'{ticked:.0%}'} of the samples"
          f"{'' if vacuuming is None else f', a VACUUM on a partition in {vacuuming:.0%}'} |")


# ---------------------------------------------------------------- churn
def churn_rounds(f):
    return int(f.med("meta.churn_rounds") or 2)


# run.sh's churn runs: the default ring period, then (1.3 on) a short one for reference
CHURN_RUNS = (("churn", ""), ("churn_short", "ring period {period}, reference"))


def churn_label(f, prefix, label):
    return label.format(period=f.text(f"{prefix}.ring_period", "?"))


def churn_goals(f):
    last = churn_rounds(f)
    goals = []
    for prefix, label in CHURN_RUNS:
        if prefix != "churn" and not f.values(f"{prefix}.round1.total_bytes"):
            continue
        op = "<=" if prefix == "churn" else "ref"
        tail = f" ({churn_label(f, prefix, label)})" if label else ""

        # the size one second after the round (the figure), and the
        # round's peak (sampled every second): a TRUNCATE may just have
        # emptied a partition at the end of a round, not at its peak
        for what, field in (("size after", "total_bytes"), ("peak size during", "peak_bytes")):
            goals.append((f"churn: {what} round 2 vs round 1{tail}", f"{prefix}.round2.{field}",
                          f"{prefix}.round1.{field}", op, 1.1))
            if last > 2:
                goals.append((f"churn: {what} round {last} vs round 1{tail}", f"{prefix}.round{last}.{field}",
                              f"{prefix}.round1.{field}", op, 1.2))
        # the largest footprint of any later round: what the table needs
        peaks = [f.med(f"{prefix}.round{r}.peak_bytes") for r in range(2, last + 1)]
        if peaks and all(p is not None for p in peaks):
            f.runs[f"{prefix}.later_peak_bytes"] = [str(max(peaks))]
            goals.append((f"churn: largest peak of rounds 2–{last} vs round 1's peak{tail}",
                          f"{prefix}.later_peak_bytes", f"{prefix}.round1.peak_bytes", "ref", 1.2))
    return goals


def churn_rows(f, w):
    for prefix, label in CHURN_RUNS:
        if not f.values(f"{prefix}.round1.total_bytes"):
            continue
        scen = "5 churn" + (f" ({churn_label(f, prefix, label)})" if label else "")
        for rnd in range(1, churn_rounds(f) + 1):
            k = f"{prefix}.round{rnd}"
            row_ref = f"{prefix}.round1.total_bytes" if rnd > 1 else None
            figure_row(scen, f"after round {rnd}: queue_jobs table+indexes", "", f"{k}.total_bytes", row_ref,
                       "round 1" if rnd > 1 else "ref", "bytes", w=w, f=f)
            peak_ratio = ratio(f.med(f"{k}.peak_bytes"), f.med(f"{prefix}.round1.peak_bytes"))
            w(f"| | heap {fmt(f.med(f'{k}.heap_bytes'), 'bytes')}, "
              f"claim index {fmt(f.med(f'{k}.claim_idx_bytes'), 'bytes')}, "
              f"n_dead_tup {count_text(f.med(f'{k}.dead_tup'))}, "
              f"autovacuums so far {count_text(f.med(f'{k}.autovacuums'))}, "
              f"partitions emptied by rotations {count_text(f.med(f'{k}.truncations'))}, "
              f"round took {fmt(f.med(f'{k}.secs'))} s, jobs left {count_text(f.med(f'{k}.left'))} | | "
              f"peak {fmt(f.med(f'{k}.peak_bytes'), 'bytes')} | "
              f"{'' if rnd == 1 or peak_ratio is None else f'{peak_ratio:.2f}× round 1 peak'} |")
        ticked, vacuuming = f.med(f"{prefix}.ticked"), f.med(f"{prefix}.vacuuming")
        if ticked is not None:
            w(f"| | the ticker connected to the database in {ticked:.0%} of the watcher's samples"
              f"{'' if vacuuming is None else f'; a VACUUM on a partition in {vacuuming:.0%} of them'} | | | |")


# ---------------------------------------------------------------- idle and waiting (issue 30)
IDLE_WAL_GOAL = 20 * 1024   # bytes of WAL a minute an idle queue may cost
IDLE_RUNS = (("plain", "plain_jobs with the same rows, no extension (reference)"),
             ("ours", "jobqueue: paused queue of 5,000, 40 delayed 1 h, 5 unclaimed, ticked every second"))


def storage_goals():
    return [("idle: WAL a minute, idle queue ticked every second vs 20 KB",
             "idle.ours.wal_per_min", IDLE_WAL_GOAL, "<=", 1),
            ("idle: WAL a minute, idle queue vs plain table without the extension",
             "idle.ours.wal_per_min", "idle.plain.wal_per_min", "ref", 1),
            ("waiting: job tables at the end vs at 20 s", "waiting.size_end", "waiting.size_at_ref", "<=", 2),
            # the size saws once a ring period: the highest of a period does not depend on where in it a sample falls
            ("waiting: the highest size of the last ring period vs of the period up to 20 s",
             "waiting.period_peak_end", "waiting.period_peak_at_ref", "ref", 2)]


def storage_zero_goals(f):
    """Goals of a count that must be 0: (label, value)."""
    if not f.values("idle.ours.wal_bytes"):
        return []
    return [("idle: pg_class row versions written in the window", f.med("idle.ours.pg_class_versions")),
            ("idle: job tables given a new relfilenode in the window", f.med("idle.ours.filenode_changes"))]


def idle_rows(f, w):
    for run, label in IDLE_RUNS:
        k = f"idle.{run}"
        if not f.values(f"{k}.wal_bytes"):
            continue
        secs = f.med(f"{k}.seconds")
        r = ratio(f.med(f"{k}.wal_per_min"), f.med("idle.plain.wal_per_min")) if run == "ours" else None
        w(f"| 13 idle | {label}: WAL over {count_text(secs)} s (a minute) | | {count_text(f.med(k + '.wal_bytes'))} B "
          f"({count_text(f.med(k + '.wal_per_min'))} B) | "
          f"{'reference' if run == 'plain' else ('n/a (reference 0)' if r is None else f'{r:.2f}× plain')} |")
        w(f"| | WAL records / not the server's running-transactions snapshot / of this database's relations | | "
          f"{f.text(k + '.records')} / {f.text(k + '.other_records')} / {f.text(k + '.db_records')} | "
          f"{'' if f.text(k + '.other_kinds', '-') == '-' else 'others: ' + f.text(k + '.other_kinds') + '; by database: ' + f.text(k + '.other_databases')} |")
        w(f"| | pg_class row versions written (new xmin/ctid) / by the statistics / relfilenodes changed | | "
          f"{f.text(k + '.pg_class_versions')} / {f.text(k + '.pg_class_stat')} / "
          f"{f.text(k + '.filenode_changes')} | {f.text(k + '.rows')} rows at the end |")


def waiting_rows(f, w):
    if not f.values("waiting.pushed"):
        return
    k = "waiting"
    clients = f"{f.text(k + '.workers')}+{f.text(k + '.producers')}"
    offered = f.med(f"{k}.offered_rate")
    w(f"| 14 waiting | workers in queue_reserve(wait 1 s) + producers, one job per transaction: pushed/s "
      f"(offered {fmt(offered)}) | {clients} | {fmt(f.med(k + '.push_rate'))} | "
      f"{fmt(ratio(f.med(k + '.push_rate'), offered))}× offered |")
    w(f"| | delivered/s (claimed and deleted) | | {fmt(f.med(k + '.delivered_rate'))} | "
      f"{fmt(ratio(f.med(k + '.delivered_rate'), offered))}× offered; {count_text(f.med(k + '.left'))} left, "
      f"{count_text(f.med(k + '.errors'))} errors |")
    ref_at, secs = f.text(k + ".reference_at"), f.med(k + ".seconds")
    w(f"| | job tables (queue_jobs' leaves, indexes, TOAST) at {ref_at} s / at the end ({count_text(secs)} s) / peak | | "
      f"{fmt(f.med(k + '.size_at_ref'), 'bytes')} / {fmt(f.med(k + '.size_end'), 'bytes')} / "
      f"{fmt(f.med(k + '.size_peak'), 'bytes')} | "
      f"{fmt(ratio(f.med(k + '.size_end'), f.med(k + '.size_at_ref')))}× at {ref_at} s |")
    if f.values(f"{k}.period_peak_end"):
        w(f"| | the highest size of the ring period ({f.text(k + '.period')} s) up to {ref_at} s / up to the end | | "
          f"{fmt(f.med(k + '.period_peak_at_ref'), 'bytes')} / {fmt(f.med(k + '.period_peak_end'), 'bytes')} | "
          f"{fmt(ratio(f.med(k + '.period_peak_end'), f.med(k + '.period_peak_at_ref')))}× |")
    ticked = f.med(f"{k}.ticked")
    w(f"| | partitions emptied by rotations (the ticker's and queue_rotate(NULL)'s) / queue_rotate(NULL) every "
      f"0.5 s: outcomes | | {count_text(f.med(k + '.truncations'))} / {f.text(k + '.rotate_outcomes')} | "
      f"the ticker connected in {'n/a' if ticked is None else f'{ticked:.0%}'} of the samples |")


# ---------------------------------------------------------------- dashboard
# run.sh's dashboard reads (name, label); the figures are keyed
# dashboard.NAME.0 (the small backlog) and dashboard.NAME.1 (the big one)
DASH_READS = (("overview", "queue_overview() (SQL)"),
              ("http_overview", "GET /api/overview"),
              ("http_metrics", "GET /metrics"),
              ("overview_cap10000", "queue_overview(10000) (SQL), 1.4's cap, for reference"),
              ("page_tiny", "queue_jobs_page('dash_tiny') (SQL), 5 % of the jobs"),
              ("page_bulk", "queue_jobs_page('dash_bulk') (SQL), 40 % of the jobs"),
              ("page_mail_reserved", "queue_jobs_page('dash_mail', 'reserved') (SQL)"),
              ("leases", "queue_leases() (SQL), 200 rows at most"))


def dash_sizes(f):
    sizes = f.text("meta.dash_sizes", "10000 1000000").split()
    return [f"{int(x):,}" for x in sizes] if len(sizes) == 2 else ["small", "big"]


def dashboard_goals(f):
    small, big = dash_sizes(f)
    goals = [(f"dashboard: {label}, {big} vs {small} jobs (time)", f"dashboard.{name}.1", f"dashboard.{name}.0",
              "<=", 2) for name, label in DASH_READS[:3]]
    goals.append((f"dashboard: queue_overview(10000), {big} vs {small} jobs (time)", "dashboard.overview_cap10000.1",
                  "dashboard.overview_cap10000.0", "ref", 2))
    goals.append(("dashboard: one-job drain, 8 workers, a dashboard polling every second vs none",
                  "dashboard.drain.polled", "dashboard.drain.quiet", ">=", 0.97))
    return goals


def dashboard_rows(f, w):
    if not f.values("dashboard.drain.quiet") and not f.values("dashboard.overview.0"):
        return
    small, big = dash_sizes(f)
    jobs = [f.med(f"dashboard.jobs.{i}") for i in (0, 1)]
    failed = [f.med(f"dashboard.failed_rows.{i}") for i in (0, 1)]
    w(f"| 11 dashboard | backlogs: jobs in queue_jobs / failed rows (5 queues; built in "
      f"{fmt(f.med('dashboard.fill_secs'))} s) | | {count_text(jobs[0])} / {count_text(failed[0])}; "
      f"{count_text(jobs[1])} / {count_text(failed[1])} | medians of {f.text('meta.dash_rounds')} rounds of "
      f"{f.text('meta.dash_calls')} calls, (min–max) of the rounds' medians |")
    for name, label in DASH_READS:
        k0, k1 = f"dashboard.{name}.0", f"dashboard.{name}.1"
        if not f.values(k0):
            continue
        for k, size in ((k0, small), (k1, big)):
            w(f"| 11 dashboard | {label} at {size} jobs (ms) | 1 | {fmt(f.med(k), 'ms')}{spread(f, k, 'ms')}, "
              f"p90 {fmt(f.med(k + '.p90_ms'), 'ms')} | "
              f"{'' if k == k0 else f'{fmt(ratio(f.med(k1), f.med(k0)))}× {small}'} |")
    if f.med("dashboard.http") == 0:
        w("| 11 dashboard | GET /api/overview, /metrics | | n/a | no JQ_DASHBOARD_BIN: SQL only |")
    for i, size in ((0, small), (1, big)):
        n = f.med(f"dashboard.plans.seq_or_bitmap.{i}")
        if n is not None:
            w(f"| 11 dashboard | sequential or bitmap scans of queue_jobs / queue_failed_jobs in the reads' "
              f"plans at {size} jobs | | {count_text(n)} | "
              f"{count_text(f.med(f'dashboard.plans.statements.{i}'))} statements explained |")
    problems = f.values("dashboard.stop_problems")
    if problems:
        w(f"| 11 dashboard | dashboards that did not end cleanly on SIGTERM (status ≠ 0, or still there after 5 s) | | "
          f"{count_text(sum(problems))} | see run.sh's output and dashboard-*.log |")
    quiet, polled = f.values("dashboard.drain.quiet"), f.values("dashboard.drain.polled")
    if quiet:
        figure_row("11 dashboard", "one-job drain, no dashboard", 8, "dashboard.drain.quiet", None, "ref", w=w, f=f)
        figure_row("11 dashboard", "one-job drain, a dashboard polling every second", 8, "dashboard.drain.polled",
                   "dashboard.drain.quiet", "no dashboard", w=w, f=f)
        per_round = [p / q for q, p in zip(quiet, polled) if q]
        w(f"| | polled vs none, per round (median {fmt(statistics.median(per_round)) if per_round else 'n/a'}) | | | "
          f"{', '.join(f'{r:.2f}' for r in per_round)} |")
        poll = "dashboard.poll"
        if f.values(poll):
            w(f"| | the poller's requests during the drains (ms) | | {fmt(f.med(poll), 'ms')}"
              f"{spread(f, poll, 'ms')}, p90 {fmt(f.med(poll + '.p90_ms'), 'ms')} | "
              f"{count_text(sum(f.values(poll + '.n')))} requests |")


# ---------------------------------------------------------------- flow control
# run.sh's scenario flow records each round's ratio (flow.claim.ratio,
# flow.drain.ratio): the goals are their medians against 1.
def flow_goals(f):
    blocked = dict(kv.partition("=")[::2] for kv in f.text("meta.flow", "blocked=1000000").split()).get("blocked")
    blocked = f"{int(blocked):,}" if blocked and blocked.isdigit() else "n/a"
    return [(f"flow: claim+complete of free keys, {blocked} jobs held back (busy keys, parents) vs none (time)",
             "flow.claim.ratio", 1, "<=", 1.2),
            ("flow: one-job drain, 8 workers, 1,000 keys of limit 1 vs no keys",
             "flow.drain.ratio", 1, ">=", 0.9)]


def flow_rows(f, w):
    if not f.values("flow.claim.ratio") and not f.values("flow.drain.ratio"):
        return
    w(f"| 12 flow | held back: {count_text(f.med('flow.blocked_rows'))} jobs (filled in "
      f"{fmt(f.med('flow.fill_secs'))} s) | | {f.text('meta.flow')} | |")
    figure_row("12 flow", "claim+complete of a free key, nothing held back (ms)", 1, "flow.claim.ref", None, "ref",
               "ms", w=w, f=f)
    figure_row("12 flow", "claim+complete of a free key, jobs held back (ms)", 1, "flow.claim.deep",
               "flow.claim.ref", "nothing held back", "ms", w=w, f=f)
    figure_row("12 flow", "one-job drain, no keys", 8, "flow.drain.k0", None, "ref", w=w, f=f)
    keys = sorted(k for k in f.runs if k.startswith("flow.drain.k") and k != "flow.drain.k0")
    for k in keys:
        figure_row("12 flow", f"one-job drain, {k[len('flow.drain.k'):]} keys of limit 1", 8, k, "flow.drain.k0",
                   "no keys", w=w, f=f)


def figure_row(scen, system, clients, key, ref=None, ref_name="", unit="", *, w, f):
    """A Figures row: the figure (median, spread) and its ratio to ref."""
    v = f.med(key)
    r = ratio(v, f.med(ref)) if ref else None
    rtext = f"{r:.2f}× {ref_name}" if r is not None else ("reference" if ref is None and ref_name == "ref" else "")
    w(f"| {scen} | {system} | {clients} | {fmt(v, unit)}{spread(f, key, unit)} | {rtext} |")


# ---------------------------------------------------------------- peers via Node
# bench/peers/pgboss.mjs: pg-boss and jobqueue through node-postgres, one Node
# process, C clients each with its own connection.
PEER_OPS = (("push", "one-job push", "send(queue, data)", "queue_push($1, $2)"),
            ("batch", "batch push of 100", "insert([100 jobs])", "queue_push_many($1::jsonb)"),
            ("drain1", "one-job drain", "fetch(queue) + complete(queue, id)",
             "queue_reserve(ARRAY[$1], ..., 1) + queue_delete(id, token)"))


def peer_goals():
    return [("peers via Node: push, 1 client, queue_push vs pg-boss send", "peer.ours_node.push.c1",
             "peer.pgboss.push.c1", ">=", 1.0),
            ("peers via Node: push, 8 clients, queue_push vs pg-boss send", "peer.ours_node.push.c8",
             "peer.pgboss.push.c8", ">=", 1.0),
            ("peers via Node: batch push (100/call), 8 clients, queue_push_many vs pg-boss insert",
             "peer.ours_node.batch.c8", "peer.pgboss.batch.c8", ">=", 1.0),
            ("peers via Node: one-job drain, 8 clients, reserve+delete vs pg-boss fetch+complete",
             "peer.ours_node.drain1.c8", "peer.pgboss.drain1.c8", ">=", 1.0)]


def peer_rows(f, w):
    status = f.text("peer.status")
    if status and status != "ok":
        w(f"| 15 peers via Node | pg-boss | | {status} | |")
        return
    for op, label, boss_call, ours_call in PEER_OPS:
        for c in (1, 8):
            ref = f"peer.pgboss.{op}.c{c}"
            if not f.values(ref):
                continue
            figure_row("15 peers via Node", f"{label}: pg-boss {f.text('peer.meta.pgboss')} {boss_call}", c,
                       ref, None, "ref", w=w, f=f)
            figure_row("15 peers via Node", f"{label}: jobqueue {ours_call}", c, f"peer.ours_node.{op}.c{c}",
                       ref, "pg-boss", w=w, f=f)


def worker_rows(f, w):
    for t in (2, 8):
        key = f"worker.drain.t{t}"
        if not f.values(key):
            continue
        w(f"| 10 worker runtime | backlog drain, no-op handler | {t} | {fmt(f.med(key))}{spread(f, key)} | "
          f"{fmt(ratio(f.med(key), f.med(f'drainb.ours.w{t}')))}× batched SQL drain, "
          f"{fmt(ratio(f.med(key), f.med(f'drain1.ours.w{t}')))}× one-job drain"
          f"{f', {ratio(f.med(key), WORKER_BEFORE):.2f}× {WORKER_BEFORE:,}' if t == 8 else ''} |")


def main(raw, versions=None):
    f = Figures(load(raw))
    mode = f.text("meta.mode")
    quick = mode == "quick"
    out = []
    w = out.append

    w(f"# jobqueue benchmark ({ {'quick': '--quick', 'soak': '--soak'}.get(mode, 'full')} run)")
    w("")
    if versions:
        try:
            for line in open(versions, encoding="utf-8"):
                if line.strip():
                    w(f"- {line.strip()}")
        except OSError:
            pass
    reps = f.text("meta.reps")
    runs_text = ("" if mode == "soak" else
                 f"figures are medians of {reps} run(s) of {f.text('meta.secs')} s (timed runs) "
                 f"with the spread (min–max) in brackets; ")
    w(f"- {runs_text}{f.text('meta.nproc')} CPUs; "
      f"load average {f.text('meta.load_start')} at start, {f.text('meta.load_end')} at end; "
      f"whole run {f.text('meta.total_secs')} s")
    w("- settings: shared_buffers=512MB, max_connections=50, fsync=on, synchronous_commit=off, "
      "wal_buffers=16MB, max_wal_size=4GB, checkpoint_timeout=30min, jit=off, autovacuum default; "
      f"the background ticker every {f.text('meta.tick_interval', '?')} in the scenario's database; "
      f"ring period {f.text('meta.ring_period') or 'n/a (no ring before 1.3)'}; "
      "pgbench -n -M prepared, one thread per client")
    if quick:
        w(f"- **--quick**: one run per figure; drain backlogs of {int(num(f.text('meta.backlog')) or 0):,} jobs "
          f"(not 100,000); deep backlog {int(num(f.text('meta.deep_ready')) or 0):,} ready jobs "
          f"(not 1,000,000); churn {int(num(f.text('meta.churn_jobs')) or 0):,} jobs per round (not 200,000); "
          f"steady loads of {f.text('meta.steady_secs')} s (not 60); idle windows of "
          f"{f.text('meta.idle_secs', 'n/a')} s (not 60); waiting workers for "
          f"{dict(kv.partition('=')[::2] for kv in f.text('meta.waiting').split()).get('secs', 'n/a')} s (not 120)")
    if mode == "soak":
        w(f"- **--soak**: steady loads of {f.text('meta.soak_secs')} s, a REPEATABLE READ transaction open "
          f"throughout that has {soak_held_label(f)} (SOAK_HELD={f.text('meta.soak_held', 'other')}); "
          f"claim latency of the first and last {f.text('meta.soak_window')} s")
    elif f.text("meta.only"):
        w(f"- **only the scenarios {f.text('meta.only')}** (run.sh --only)")
    if f.text("peer.meta.pgboss"):
        w(f"- peers via Node (scenario 15): pg-boss {f.text('peer.meta.pgboss')}, node-postgres "
          f"{f.text('peer.meta.pg')}, Node {f.text('peer.meta.node')}, one Node process for all clients; "
          f"one-job drains from a backlog of {int(num(f.text('peer.meta.backlog')) or 0):,} jobs")
    times = [(k[len("time."):], f.text(k)) for k in f.runs if k.startswith("time.") and k != "time.end"]
    if times:
        w("- time per part (s): " + ", ".join(f"{k} {v}" for k, v in times))
    w("")

    def latency(mode, field):
        kv = f.kv(f"latency.{mode}")
        return statistics.median(map(float, kv[field])) if kv.get(field) else None

    lat_p50, lat_p99 = latency("notify", "p50_ms"), latency("notify", "p99_ms")
    shm_p50, shm_p99 = latency("shmem", "p50_ms"), latency("shmem", "p99_ms")

    # ------------------------------------------------ goals
    goals = [
        ("push, 8 clients, wake-ups on (default) vs floor INSERT", "push.notify.c8", "push.floor.c8", ">=", 0.9),
        ("push, 8 clients, wake-ups off vs floor INSERT", "push.quiet.c8", "push.floor.c8", ">=", 0.9),
        ("batch push (100/call), 8 clients vs floor batched INSERT", "push.batch.c8", "push.batch_floor.c8", ">=", 0.8),
        ("batch push (100/call), 1 client vs floor batched INSERT", "push.batch.c1", "push.batch_floor.c1", ">=", 0.8),
        ("drain one job/claim, 8 workers vs floor UPDATE+DELETE", "drain1.ours.w8", "drain1.floor.w8", ">=", 0.85),
        ("drain one job/claim, 8 workers vs plain-sql", "drain1.ours.w8", "drain1.plain.w8", ">=", 1.25),
        ("sustained one-job drain, 8 workers vs floor UPDATE+DELETE", "drain1s.ours.w8", "drain1s.floor.w8",
         ">=", 0.85),
        ("sustained one-job drain, 8 workers vs plain-sql", "drain1s.ours.w8", "drain1s.plain.w8", ">=", 1.25),
        ("batched drain, 8 workers vs our one-job drain, 8 workers", "drainb.ours.w8", "drain1.ours.w8", ">=", 8),
        ("batched drain, 8 workers vs PgQ consumer (issue 31)", "drainb.ours.w8", "drainb.pgq.c1", ">=", 0.5),
        ("depth: claim+complete at deep backlog vs shallow (time)", "depth.deep", "depth.shallow", "<=", 1.2),
        ("push, 8 clients, wake-ups on vs wake-ups off", "push.notify.c8", "push.quiet.c8", ">=", 0.8),
        ("push, 1 client, wake-ups on vs hand-written INSERT ... RETURNING id", "push.notify.c1",
         "push.plain.c1", ">=", 1.0),
        ("push, 8 clients, wake-ups on vs hand-written INSERT ... RETURNING id", "push.notify.c8",
         "push.plain.c8", ">=", 1.0),
        ("batch push (100/call), 8 clients vs hand-written batched INSERT (send_batch's shape)",
         "push.batch.c8", "push.batch_plain.c8", ">=", 1.0),
    ]
    # the pgmq-shaped reference (sql/setup.sql): pgmq 1.x's table and functions
    # as its documentation describes them, not pgmq itself
    for c in (1, 8):
        goals.append((f"push, {c} client{'s' if c > 1 else ''}, wake-ups on vs pgmq-shaped send",
                      f"push.notify.c{c}", f"push.pgmqref.c{c}", ">=", 1.0))
    for c in (1, 8):
        goals.append((f"batch push (100/call), {c} client{'s' if c > 1 else ''} vs pgmq-shaped send_batch",
                      f"push.batch.c{c}", f"push.batch_pgmqref.c{c}", ">=", 1.0))
    goals += churn_goals(f)
    goals += held_goals()
    goals += steady_goals()
    goals += cold_plan_goals()
    goals += worker_goals()
    goals += soak_goals()
    goals += dashboard_goals(f)
    goals += flow_goals(f)
    goals += storage_goals()
    goals += peer_goals()
    w("## Goals")
    w("")
    w("| goal | measured | reference | ratio | target | |")
    w("|---|---:|---:|---:|---:|---|")
    units = {"depth.deep": "ms", "depth.shallow": "ms", "waiting.size_end": "bytes", "waiting.size_at_ref": "bytes",
             "waiting.period_peak_end": "bytes", "waiting.period_peak_at_ref": "bytes",
             "idle.ours.wal_per_min": "B", "idle.plain.wal_per_min": "B", IDLE_WAL_GOAL: "B"}
    units.update({k: "bytes" for _, a, b, _, _ in goals for k in (a, b)
                  if isinstance(k, str) and k.endswith("_bytes")})
    units.update({k: "ms" for _, a, b, _, _ in goals for k in (a, b)
                  if isinstance(k, str) and (k.endswith("_ms") or k.startswith("cold.")
                                             or (k.startswith("dashboard.") and not k.startswith("dashboard.drain")))})
    for label, a, b, op, target in goals:
        # the reference is a key of raw.tsv, or a fixed figure
        va, vb = f.med(a), (b if isinstance(b, (int, float)) else f.med(b))
        r = ratio(va, vb)
        if op == "ref":   # the same ratio in a comparison run, for reference: no goal
            if r is None:
                continue
            ok, mark, target_text = None, "reference", ""
        else:
            ok = None if r is None else (r >= target if op == ">=" else r <= target)
            mark = "n/a" if ok is None else ("met" if ok else "**missed**")
            target_text = f"{op} {target}×"
        ratio_text = "n/a" if r is None else f"{r:.2f}×{paired_text(f, a, b)}"
        w(f"| {label} | {fmt(va, units.get(a, ''))} | {fmt(vb, units.get(b, ''))} | "
          f"{ratio_text} | {target_text} | {mark} |")
    for label, v, target in (("latency with NOTIFY wake-ups, p50", lat_p50, 2.0),
                             ("latency with NOTIFY wake-ups, p99", lat_p99, 10.0),
                             ("latency with the shared-memory wait, p50", shm_p50, 1.0),
                             ("latency with the shared-memory wait, p99", shm_p99, 10.0)):
        ok = None if v is None else v < target
        mark = "n/a" if ok is None else ("met" if ok else "**missed**")
        w(f"| {label} | {fmt(v, 'ms')} | | | < {target:g} ms | {mark} |")
    for label, v in storage_zero_goals(f):
        mark = "n/a" if v is None else ("met" if v == 0 else "**missed**")
        w(f"| {label} | {count_text(v)} | | | = 0 | {mark} |")
    w("")

    # ------------------------------------------------ all figures
    w("## Figures")
    w("")
    w("Throughput in jobs (rows, events) per second unless marked; ratio = figure / the reference named.")
    w("")
    w("| scenario | system | clients | figure | ratio |")
    w("|---|---|---:|---:|---|")

    row = functools.partial(figure_row, w=w, f=f)

    def same_shape_rows(c, label, key, floor_key, ours_key, ours_label, ref_name):
        """The plain-sql INSERT into a table of our shape, and queue_push against it."""
        if not f.values(key):
            return
        row("1 push", label, c, key, floor_key, ref_name)
        r = ratio(f.med(ours_key), f.med(key))
        if r is not None:
            w(f"| | {ours_label} vs {label} | | | {r:.2f}× plain-sql |")

    def pgmqref_rows(scen, c, label, key, ours_key, ours_label):
        """A pgmq-shaped figure (a reference), and ours against it."""
        if not f.values(key):
            return
        row(scen, label, c, key, None, "ref")
        r = ratio(f.med(ours_key), f.med(key))
        if r is not None:
            w(f"| | {ours_label} vs {label} | | | {r:.2f}× pgmq-shaped |")

    for c in (1, 8):
        row("1 push", "SELECT 1 (transactions/s)", c, f"push.select1.c{c}")
        row("1 push", "floor INSERT", c, f"push.floor.c{c}", None, "ref")
        row("1 push", "queue_push, wake-ups on", c, f"push.notify.c{c}", f"push.floor.c{c}", "floor")
        row("1 push", "queue_push, wake-ups off", c, f"push.quiet.c{c}", f"push.floor.c{c}", "floor")
        same_shape_rows(c, "plain-sql INSERT (our shape, claim index)", f"push.plain.c{c}",
                        f"push.floor.c{c}", f"push.quiet.c{c}", "queue_push (wake-ups off)", "floor")
        pgmqref_rows("1 push", c, "pgmq-shaped send", f"push.pgmqref.c{c}", f"push.notify.c{c}",
                     "queue_push (wake-ups on)")
    for c in (1, 8):
        row("1 push", "floor batched INSERT of 100", c, f"push.batch_floor.c{c}", None, "ref")
        row("1 push", "queue_push_many of 100", c, f"push.batch.c{c}", f"push.batch_floor.c{c}", "floor batch")
        same_shape_rows(c, "plain-sql batched INSERT of 100", f"push.batch_plain.c{c}",
                        f"push.batch_floor.c{c}", f"push.batch.c{c}", "queue_push_many", "floor batch")
        pgmqref_rows("1 push", c, "pgmq-shaped send_batch of 100", f"push.batch_pgmqref.c{c}",
                     f"push.batch.c{c}", "queue_push_many")
    if f.values("push.sync_floor.c8"):
        row("1 push, synchronous_commit=on", "floor INSERT", 8, "push.sync_floor.c8", None, "ref")
        row("1 push, synchronous_commit=on", "queue_push, wake-ups on", 8, "push.sync_notify.c8",
            "push.sync_floor.c8", "floor")
        row("1 push, synchronous_commit=on", "queue_push, wake-ups off", 8, "push.sync_quiet.c8",
            "push.sync_floor.c8", "floor")
    def one_job_drain_rows(scen, prefix, wk):
        """A one-job drain's figures: the floor, plain-sql and ours against both, the pgmq-shaped one."""
        row(scen, "floor UPDATE+DELETE", wk, f"{prefix}.floor.w{wk}", None, "ref")
        row(scen, "plain-sql SKIP LOCKED", wk, f"{prefix}.plain.w{wk}", f"{prefix}.floor.w{wk}", "floor")
        row(scen, "jobqueue reserve+delete", wk, f"{prefix}.ours.w{wk}", f"{prefix}.floor.w{wk}", "floor")
        r = ratio(f.med(f"{prefix}.ours.w{wk}"), f.med(f"{prefix}.plain.w{wk}"))
        if r is not None:
            w(f"| | | | | {r:.2f}× plain-sql |")
        pgmqref_rows(scen, wk, "pgmq-shaped read(qty 1)+delete", f"{prefix}.pgmqref.w{wk}",
                     f"{prefix}.ours.w{wk}", "jobqueue reserve+delete")

    for wk in (2, 8):
        one_job_drain_rows("2 drain 1/claim", "drain1", wk)
    one_job_drain_rows("2s drain 1/claim, sustained", "drain1s", 8)
    row("3 drain batched", "PgQ consumer (batches of 100)", 1, "drainb.pgq.c1", None, "ref")
    for wk in (2, 8):
        row("3 drain batched", "jobqueue reserve 100 + delete_many", wk, f"drainb.ours.w{wk}",
            f"drain1.ours.w{wk}", "our one-job drain")
        r = ratio(f.med(f"drainb.ours.w{wk}"), f.med("drainb.pgq.c1"))
        if r is not None:
            w(f"| | | | | {r:.2f}× PgQ |")
    deep_rows = f.med("depth.deep_rows")
    row("4 depth", "claim+complete, 10,000 ready (ms)", 1, "depth.shallow", None, "ref", "ms")
    row("4 depth", f"claim+complete, {fmt(deep_rows)} rows (ms)", 1, "depth.deep", "depth.shallow", "shallow", "ms")
    churn_rows(f, w)
    held_rows(f, w)
    for mode, label in (("notify", "NOTIFY wake-ups"), ("poll", "polling every 100 ms"),
                        ("shmem", "shared-memory wait in queue_reserve")):
        kv = f.kv(f"latency.{mode}")
        if kv.get("status"):
            w(f"| 7 latency | {label} | 1 | {kv['status'][-1]} (slot reserved) | |")
            continue
        if not kv.get("p50_ms"):
            w(f"| 7 latency | {label} | 1 | n/a | |")
            continue
        p50 = statistics.median(map(float, kv["p50_ms"]))
        p99 = statistics.median(map(float, kv["p99_ms"]))
        mx = max(map(float, kv["max_ms"]))
        extra = ""
        if kv.get("p50_from_send_ms"):
            extra = (f"; from the push call: p50 {float(kv['p50_from_send_ms'][-1]):.3f} ms, "
                     f"p99 {float(kv['p99_from_send_ms'][-1]):.3f} ms")
        w(f"| 7 latency | {label} | 1 | p50 {p50:.3f} ms, p99 {p99:.3f} ms, max {mx:.1f} ms | "
          f"handled {kv['handled'][-1]}/{kv['jobs'][-1]}{extra} |")
    cold_plan_rows(f, w)
    steady_rows(f, w, os.path.dirname(os.path.abspath(raw)))
    worker_rows(f, w)
    soak_rows(f, w, os.path.dirname(os.path.abspath(raw)))
    dashboard_rows(f, w)
    flow_rows(f, w)
    idle_rows(f, w)
    waiting_rows(f, w)
    peer_rows(f, w)
    w("")

    # ------------------------------------------------ plans
    probes = sorted(glob.glob(os.path.join(os.path.dirname(os.path.abspath(raw)), "explain-*.txt")),
                    key=os.path.getmtime)
    if probes:
        w("## The claim's plans (auto_explain of one queue_reserve, 6th call in a session)")
        w("")
        for p in probes:
            tag = os.path.basename(p)[len("explain-"):-len(".txt")]
            w(f"- **{tag}**: {explain_summary(p)}")
        w("")
    extra = f.med("depth.fill_secs")
    if extra is not None:
        w(f"Deep backlog built in {extra:.0f} s ({fmt(deep_rows)} rows).")
    if f.text("meta.only"):
        out = drop_unmeasured(out)
    return "\n".join(out)


def drop_unmeasured(lines):
    """For a run of some scenarios only (run.sh --only): the table rows of
    the others, whose measured figure is n/a (or empty, with an n/a)."""
    kept, column = [], None
    for line in lines:
        if line.startswith("| goal |"):
            column = 2
        elif line.startswith("| scenario |"):
            column = 4
        elif not line.startswith("|"):
            column = None
        if column and line.startswith("|") and not line.startswith("|---"):
            cells = [c.strip() for c in line.split("|")]
            if len(cells) > column and cells[column] in ("n/a", "") and "n/a" in line:
                continue
        kept.append(line)
    return kept


if __name__ == "__main__":
    if len(sys.argv) >= 3 and sys.argv[1] == "--explain":
        print(explain_summary(sys.argv[2]))
    elif len(sys.argv) >= 2:
        print(main(sys.argv[1], sys.argv[2] if len(sys.argv) > 2 else None))
    else:
        print(__doc__)
        sys.exit(2)
