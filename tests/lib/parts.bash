# The parts of a suite that runs programs, each ending with its own
# "N passed, N failed" line (tests/ring, tests/dashboard, tests/failover):
# source this file, then call add_part for each program's output.  It
# keeps passed and failed (start them at 0).

add_part() { # add_part NAME EXIT-STATUS OUTPUT: prints the output, adds its counts
    local name=$1 rc=$2 out=$3 p f
    echo "$out"
    if [[ $(tail -n 1 <<< "$out") =~ ^([0-9]+)\ passed,\ ([0-9]+)\ failed$ ]]; then
        p=${BASH_REMATCH[1]} f=${BASH_REMATCH[2]}
    else
        p=0 f=1
        echo "FAIL $name did not finish (exit $rc)"
    fi
    # a program that failed without saying so counts once
    (( rc != 0 && f == 0 )) && f=1
    passed=$((passed + p))
    failed=$((failed + f))
}
