#!/bin/sh
# Job handler for cli.bats, run by `jobqueue work --exec`.
#   - appends "start <id>" to $HANDLER_OUT.start when it starts;
#   - with HANDLER_BARRIER=N, waits (at most 10 s) until N handlers have
#     started, and exits 9 if they never do (proves N ran at once);
#   - with HANDLER_SLEEP=S, sleeps S seconds;
#   - appends "<payload> <JOBQUEUE_JOB_ID> <JOBQUEUE_JOB_NAME> <JOBQUEUE_JOB_ATTEMPT>"
#     to $HANDLER_OUT;
#   - writes $HANDLER_STDERR (printf %b escapes) to stderr and exits
#     $HANDLER_EXIT (default 0).
payload=$(cat)
echo "start $JOBQUEUE_JOB_ID" >> "$HANDLER_OUT.start"
if [ -n "${HANDLER_BARRIER:-}" ]; then
    n=0
    while [ "$(grep -c '^start ' "$HANDLER_OUT.start")" -lt "$HANDLER_BARRIER" ]; do
        n=$((n + 1))
        if [ "$n" -gt 100 ]; then
            echo "barrier of $HANDLER_BARRIER never reached" >&2
            exit 9
        fi
        sleep 0.1
    done
fi
if [ -n "${HANDLER_SLEEP:-}" ]; then
    sleep "$HANDLER_SLEEP"
fi
printf '%s %s %s %s\n' "$payload" "$JOBQUEUE_JOB_ID" "$JOBQUEUE_JOB_NAME" "$JOBQUEUE_JOB_ATTEMPT" >> "$HANDLER_OUT"
if [ -n "${HANDLER_STDERR:-}" ]; then
    printf '%b' "$HANDLER_STDERR" >&2
fi
exit "${HANDLER_EXIT:-0}"
