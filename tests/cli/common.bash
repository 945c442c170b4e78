# Helpers shared by the bats files of the jobqueue tool (load common).

cli() { "$JOBQUEUE_BIN" "$@"; }

sql() { psql -X -q -At -v ON_ERROR_STOP=1 -c "$1"; }

# Checks JSON with a Python expression: d is the parsed JSON, a the extra
# arguments.   jcheck JSON EXPRESSION [ARGS...]
jcheck() {
    "$PYTHON" -c '
import json, sys
d = json.loads(sys.argv[1])
a = sys.argv[3:]
if not eval("(" + sys.argv[2] + ")"):
    sys.exit("jcheck failed: %s\n  on: %s\n  args: %s" % (sys.argv[2], sys.argv[1], a))
' "$@"
}

# After `run --separate-stderr`: a failure prints nothing on stdout and
# exactly one line on stderr, "jobqueue: error: ...", containing $1 if given.
assert_error_line() {
    if [ -n "$output" ]; then
        echo "expected no stdout, got: $output" >&2
        return 1
    fi
    if [ "${#stderr_lines[@]}" -ne 1 ]; then
        echo "expected one line on stderr, got ${#stderr_lines[@]}: $stderr" >&2
        return 1
    fi
    if [[ "$stderr" != "jobqueue: error: "* ]]; then
        echo "stderr does not start with 'jobqueue: error: ': $stderr" >&2
        return 1
    fi
    if [ -n "${1:-}" ] && [[ "$stderr" != *"$1"* ]]; then
        echo "stderr does not contain '$1': $stderr" >&2
        return 1
    fi
}
