# The checks of the script suites (tests/dump, tests/search_path,
# tests/examples, tests/package): source
# this file after setting CHECKS_SUITE (the name the summary lines print),
# then call check for each claim and finish at the end.  The last line a
# suite prints is "N passed, N failed"; its exit status is non-zero when a
# check failed.
started=$SECONDS
passed=0
failed=0

# q ARGS...: psql, quiet, unaligned, stopping at the first error
q() { psql -X -q -At -v ON_ERROR_STOP=1 "$@"; }

check() { # check NAME t|f [detail]
    if [[ $2 == t || $2 == true ]]; then
        passed=$((passed + 1))
        echo "ok   $1"
    else
        failed=$((failed + 1))
        echo "FAIL $1${3:+: $3}"
    fi
}

finish() {
    echo "$CHECKS_SUITE: $((SECONDS - started))s"
    echo "$passed passed, $failed failed"
    (( failed == 0 ))
    exit
}

# die NAME [detail]: a step the rest depends on failed; count it and stop
die() { check "$1" f "${2:-}"; finish; }
