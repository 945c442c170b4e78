"""Named checks of the Python suites (tests/ring, tests/failover): each check
prints "ok   NAME" or "FAIL NAME: detail"; finish() prints the suite's time and
"N passed, N failed" (the last line, which tests/ring/run.sh and
tests/failover/run.sh read) and returns the exit status.
"""
import sys
import time


class Checks:
    """Named checks; finish() prints "N passed, N failed" and the exit status."""

    def __init__(self, suite):
        self.suite = suite
        self.passed = 0
        self.failed = 0
        self.started = time.monotonic()

    def check(self, name, ok, detail=""):
        if ok:
            self.passed += 1
            print(f"ok   {name}")
        else:
            self.failed += 1
            print(f"FAIL {name}{': ' + str(detail) if detail else ''}")
        sys.stdout.flush()
        return ok

    def finish(self):
        print(f"{self.suite}: {time.monotonic() - self.started:.0f}s")
        print(f"{self.passed} passed, {self.failed} failed")
        return 1 if self.failed else 0
