# shellcheck shell=bash
# bench/run.sh's parameters: run lengths, backlogs and loads of every scenario,
# by mode (--quick or full; MODE is set by run.sh before it sources this).

if [[ $MODE == quick ]]; then
    SECS=1            # pgbench -T of each timed run
    REPS=1            # runs per figure (median of REPS)
    DEEP_READY=200000 # ready jobs of the deep backlog
    CHURN_JOBS=30000  # jobs per churn round
    BACKLOG=30000     # drain scenarios start from this many jobs
    SUSTAINED_SECS=5  # sustained one-job drain: its length
    SUSTAINED_BACKLOG=60000 # and its backlog (more than 8 workers drain in that time)
    BATCH_CALLS=200   # claim calls of 100 in a batched drain
    HELD_ONE_CLAIMS=4000 # held snapshot: claims of one job in a one-job drain
    STEADY_SECS=20    # length of each steady load
    WORKER_JOBS=10000 # jobs the worker runtime drains from the backlog
    COLD_CLAIMS=50    # claims timed per cold-plan case and session
    DASH_CALLS=10     # dashboard: timed calls per read, size and round
    DASH_DRAIN_SECS=2 # dashboard: each drain, with and without a poller
    IDLE_SECS=20      # idle: the window measured (each: the queue's, the reference's)
    WAITING_SECS=40   # waiting: the load's length
    PEER_BACKLOG=10000 # peers: the one-job drains' backlog (pg-boss and jobqueue each)
else
    SECS=3
    REPS=3
    DEEP_READY=1000000
    CHURN_JOBS=200000
    BACKLOG=100000
    SUSTAINED_SECS=15
    SUSTAINED_BACKLOG=300000
    BATCH_CALLS=800
    HELD_ONE_CLAIMS=8000
    STEADY_SECS=60
    WORKER_JOBS=80000
    COLD_CLAIMS=200
    DASH_CALLS=30
    DASH_DRAIN_SECS=3
    IDLE_SECS=60
    WAITING_SECS=120
    PEER_BACKLOG=20000
fi
CHURN_ROUNDS=10       # churn: rounds back to back (sizes after 1, 2 and 10 compared)
SHALLOW=10000         # depth: the shallow backlog
DEEP_DELAYED=100000   # depth: delayed jobs, higher priority than the ready ones
DEEP_HELD=10000       # depth: held (claimed, 1 h lease) jobs at the head
SHALLOW_CLAIMS=1000   # depth: claims per run at the shallow backlog (-t)
FLOW_CLAIMS=2000      # flow: claims of free jobs per run (-t)
LAT_JOBS=1000
LAT_RATE=500
LAT_POLL_MS=100
STEADY_RATE=1500      # steady load: jobs per second offered, in all
STEADY_PRODUCERS=4    #   producers sharing that rate, one job per transaction
STEADY_WORKERS=4      #   SQL workers (or worker runtime threads)
STEADY_WINDOW=10      #   claim latency compared between the first and last 10 s
COLD_BACKLOG=50000    # cold plan: claims timed at this backlog
DASH_SMALL=10000      # dashboard: jobs in queue_jobs, small and big
DASH_BIG=${DASH_BIG:-1000000}
DASH_ROUNDS=${DASH_ROUNDS:-3}   # dashboard: rounds of each comparison (in --quick too: a ratio needs them)
DASH_PORT=${DASH_PORT:-7071}   # dashboard: the first of the three ports its dashboards listen on
JQ_DASHBOARD_BIN=${JQ_DASHBOARD_BIN:-}   # the jobqueue tool (with "dashboard"); empty: SQL only
FLOW_BLOCKED=${FLOW_BLOCKED:-1000000}   # flow: jobs held back (in --quick too: the goal names this many)
FLOW_BUSY_KEYS=1000   # flow: busy keys, half the held-back jobs waiting behind them
FLOW_PARENTS=10000    # flow: held parents, the other half waiting for them
FLOW_FREE=10000       # flow: free jobs (a key each) at the start of each round
FLOW_DRAIN_KEYS=1000  # flow: keys of the drain's backlog (limit 1 each)
FLOW_ROUNDS=${FLOW_ROUNDS:-3}   # flow: rounds of each comparison (in --quick too: a ratio needs them)
WAITING_WORKERS=32    # waiting: sessions in queue_reserve(wait => '1 second')
WAITING_RATE=800      #   jobs/s offered, one per transaction,
WAITING_PRODUCERS=4   #   by this many paced producers (sessions), sharing that rate
WAITING_REF_AT=20     #   the size at the end compared with the size this many s into the load
SOAK_SECS=${SOAK_SECS:-600}   # --soak: length of each steady load
if ! [[ $SOAK_SECS =~ ^[0-9]+$ ]] || (( SOAK_SECS < 2 )); then echo "run.sh: SOAK_SECS must be a whole number >= 2" >&2; exit 2; fi
# claim latency compared between the first and last minute (half the run
# when it is shorter than two minutes)
SOAK_WINDOW=$(( SOAK_SECS >= 120 ? 60 : (SOAK_SECS + 1) / 2 ))
SOAK_HELD=${SOAK_HELD:-other}   # --soak: what the held transaction has read
case $SOAK_HELD in
    other) SOAK_HELD_TABLE=bench_other ;;
    queue_jobs) SOAK_HELD_TABLE=queue_jobs ;;
    *) echo "run.sh: SOAK_HELD must be other or queue_jobs" >&2; exit 2 ;;
esac
SOAK_REPORT_SECS=30   # --soak: queue_jobs' size and dead rows reported this often
