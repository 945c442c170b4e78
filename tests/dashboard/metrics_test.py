#!/usr/bin/env python3
"""tests/dashboard/metrics_test.py - the /metrics page of `jobqueue dashboard`,
read with Prometheus's own parser (Debian's python3-prometheus-client).

Against the dashboards run.sh started (DASH_ADMIN_URL on the preloaded
cluster, DASH_PLAIN_URL on one without preload) and the preloaded cluster
(PG* environment): jobs pushed, claimed, completed and failed here must show
as exactly those counts in the counters, the gauges must equal what
queue_overview() and queue_failed_count() say (past the overview's cap:
queue_overview's estimate, marked not exact), a queue name with a quote, a
backslash and a line break must come back from the parser unchanged, and
without preload the counter families must be absent while the rest is there.
Last line: "N passed, N failed".
"""
import os
import sys
import urllib.request

import psycopg2
from prometheus_client.parser import text_string_to_metric_families

passed = failed = 0


def check(name, ok, detail=""):
    global passed, failed
    if ok:
        passed += 1
        print("ok   " + name)
    else:
        failed += 1
        print("FAIL " + name + (": " + str(detail) if detail else ""))


def scrape(url):
    with urllib.request.urlopen(url + "/metrics", timeout=10) as answer:
        return answer.headers.get("Content-Type", ""), answer.read().decode("utf-8")


def samples(text):
    """{(sample name, frozenset of labels): value}, and {family name: type}."""
    values, types = {}, {}
    for family in text_string_to_metric_families(text):
        types[family.name] = family.type
        for s in family.samples:
            values[(s.name, frozenset(s.labels.items()))] = s.value
    return values, types


def value(values, name, **labels):
    return values.get((name, frozenset(labels.items())))


def main():
    conn = psycopg2.connect("")
    conn.autocommit = True
    cur = conn.cursor()
    queue = "jq_dash_metrics"
    weird = 'jq_dash_we"ird\\name\nline'

    # 25 pushed, 12 claimed: 10 completed, 2 failed; 3 pushed to the odd name, 1 of them delayed
    cur.execute("SELECT count(queue_push('m', '{}', %s)) FROM generate_series(1, 25)", (queue,))
    cur.execute("SELECT id, token FROM queue_reserve(ARRAY[%s], '5 minutes', 'metrics-test', 12)", (queue,))
    claims = cur.fetchall()
    check("the test claimed 12 jobs", len(claims) == 12, len(claims))
    for job_id, token in claims[:10]:
        cur.execute("SELECT queue_delete(%s, %s)", (job_id, token))
    for job_id, token in claims[10:]:
        cur.execute("SELECT queue_fail(%s, %s, 'metrics test')", (job_id, token))
    cur.execute("SELECT queue_push('m', '{}', %s), queue_push('m', '{}', %s), "
                "queue_push('m', '{}', %s, delay => '1 hour')", (weird, weird, weird))

    content_type, text = scrape(os.environ["DASH_ADMIN_URL"])
    check("Content-Type is the text format 0.0.4", content_type.startswith("text/plain; version=0.0.4"), content_type)
    try:
        values, types = samples(text)
    except Exception as e:  # the parser refused the page
        check("prometheus_client parses /metrics", False, e)
        return
    check("prometheus_client parses /metrics", True)
    check("jobqueue_up is 1", value(values, "jobqueue_up") == 1, value(values, "jobqueue_up"))

    expected = {"pushed": 25, "claimed": 12, "completed": 10, "failed": 2, "released": 0, "retried": 0}
    for counter, count in expected.items():
        got = value(values, "jobqueue_jobs_%s_total" % counter, queue=queue)
        check("jobqueue_jobs_%s_total{queue=%s} is %d" % (counter, queue, count), got == count, got)
    check("the counter families are of type counter",
          all(types.get("jobqueue_jobs_%s" % c) == "counter" for c in expected), types)
    got = value(values, "jobqueue_jobs_pushed_total", queue=weird)
    check("a queue name with a quote, a backslash and a line break survives the parser", got == 3, got)

    cur.execute("SELECT queue, pending, delayed, reserved, failed FROM queue_overview() WHERE queue IN (%s, %s)",
                (queue, weird))
    rows = cur.fetchall()
    check("queue_overview() has both queues", len(rows) == 2, rows)
    for q, pending, delayed, reserved, failed_count in rows:
        for state, count in (("pending", pending), ("delayed", delayed), ("reserved", reserved),
                             ("failed", failed_count)):
            got = value(values, "jobqueue_jobs", queue=q, state=state)
            check("jobqueue_jobs{queue=%r,state=%s} is queue_overview's %d" % (q, state, count), got == count, got)
    check("jobqueue_jobs is a gauge", types.get("jobqueue_jobs") == "gauge", types.get("jobqueue_jobs"))
    cur.execute("SELECT queue_failed_count()")
    failed_total = cur.fetchone()[0]
    check("jobqueue_failed_jobs is queue_failed_count()", value(values, "jobqueue_failed_jobs") == failed_total,
          value(values, "jobqueue_failed_jobs"))

    check("jobqueue_failed_jobs is exact", value(values, "jobqueue_failed_jobs_exact") == 1,
          value(values, "jobqueue_failed_jobs_exact"))
    for q in (queue, weird):
        for state in ("pending", "delayed", "reserved", "failed"):
            got = value(values, "jobqueue_jobs_exact", queue=q, state=state)
            check("jobqueue_jobs_exact{queue=%r,state=%s} is 1 (below the cap)" % (q, state), got == 1, got)

    # past the overview's cap (1,000): jobqueue_jobs is queue_overview's estimate, marked not exact
    big = "jq_dash_metrics_big"
    cur.execute("SELECT count(queue_push('m', '{}', %s)) FROM generate_series(1, 1500)", (big,))
    cur.execute("ANALYZE queue_jobs")
    cur.execute("SELECT pending, pending_estimate FROM queue_overview(1000) WHERE queue = %s", (big,))
    counted, estimate = cur.fetchone()
    check("1,500 pending: queue_overview(1000) counted 1,000 and estimates about 1,500",
          counted == 1000 and estimate is not None and abs(estimate - 1500) <= 150, (counted, estimate))
    values, types = samples(scrape(os.environ["DASH_ADMIN_URL"])[1])
    got = value(values, "jobqueue_jobs", queue=big, state="pending")
    check("jobqueue_jobs{state=pending} past the cap is the estimate", got is not None and abs(got - 1500) <= 150, got)
    got = value(values, "jobqueue_jobs_exact", queue=big, state="pending")
    check("jobqueue_jobs_exact{state=pending} past the cap is 0", got == 0, got)
    got = value(values, "jobqueue_jobs_exact", queue=big, state="delayed")
    check("jobqueue_jobs_exact{state=delayed} below the cap is 1", got == 1, got)
    check("jobqueue_jobs_exact is a gauge", types.get("jobqueue_jobs_exact") == "gauge", types.get("jobqueue_jobs_exact"))
    cur.execute("DELETE FROM queue_jobs WHERE queue = %s", (big,))

    _, plain = scrape(os.environ["DASH_PLAIN_URL"])
    plain_values, plain_types = samples(plain)
    check("without preload: jobqueue_up is 1", value(plain_values, "jobqueue_up") == 1)
    check("without preload: no counter family", not any(name.endswith("_total") or t == "counter"
                                                         for name, t in plain_types.items()), plain_types)
    check("without preload: the gauges are there", "jobqueue_jobs" in plain_types, plain_types)


if __name__ == "__main__":
    try:
        main()
    except Exception as e:
        check("the metrics test ran to its end", False, repr(e))
    print("%d passed, %d failed" % (passed, failed))
    sys.exit(1 if failed else 0)
