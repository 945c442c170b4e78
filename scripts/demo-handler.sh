#!/bin/sh
# The demo's job handler: the payload arrives on stdin, the job in
# JOBQUEUE_JOB_* variables. Exit 0 completes the job; any other status fails
# it with what was written to stderr.
payload=$(cat)
case $payload in
    *'"broken": true'*|*'"broken":true'*)
        echo "cannot decode image in $payload" >&2
        exit 1 ;;
esac
sleep 0.01   # the "work"
exit 0
