# Job handler of tests/stress/chaos.sh. Not executed but sourced by the
# worker's /bin/sh (`--exec ". tests/stress/chaos-handler.sh"`): one process
# per job instead of two, and only shell builtins, since spawning processes
# is most of a job's cost on a small machine.
#
# Appends one line per run to $CHAOS_OUT (a file of the worker incarnation
# named $CHAOS_WID, inherited from the worker's environment):
#   job id <TAB> incarnation <TAB> attempt <TAB> /proc/uptime seconds <TAB> payload
# A short line written with O_APPEND is one write(2), so the two handlers of
# a worker can share the file. The line is written before the command exits,
# i.e. before the worker completes the job: a run whose completion is lost
# (worker killed, server restarted) shows up as a second line of the job.
# The payload arrives on stdin; it is empty when the worker was killed between
# starting the command and writing to it (the command runs on, orphaned).
IFS= read -r chaos_payload || [ -n "$chaos_payload" ] || chaos_payload=null
read -r chaos_now _ < /proc/uptime
printf '%s\t%s\t%s\t%s\t%s\n' "$JOBQUEUE_JOB_ID" "$CHAOS_WID" "$JOBQUEUE_JOB_ATTEMPT" "$chaos_now" "$chaos_payload" >> "$CHAOS_OUT" || exit 3
exit 0
