#!/usr/bin/env python3
"""Check the SQL scripts' defaults, and the C statements, against
extension/src/base/contract.h.

The install and upgrade scripts are frozen history: each states the
contract's defaults in its function signatures and table columns.  The C
code reads them from contract.h.  This check fails when a script states a
default that contract.h does not, so the two cannot drift apart.

The C code's own SQL statements (beside their users under extension/src)
quote the contract's numbers with SQL_NUMBER(JQ_...): the check fails on a
SQL_NUMBER of a name contract.h does not define, and on a span written as a
literal (interval '60 seconds') in a C string, where a default would hide.

    python3 scripts/check_contract.py [ROOT]
"""
import re
import sys
from pathlib import Path

ROOT = Path(sys.argv[1] if len(sys.argv) > 1 else Path(__file__).resolve().parent.parent)

# argument or column name -> (contract.h macro, how the SQL spells the value,
#                             whether DEFAULT NULL is allowed for it)
RULES = {
    "max_attempts": ("JQ_DEFAULT_MAX_ATTEMPTS", "{}", False),
    "priority": ("JQ_DEFAULT_PRIORITY", "{}", False),
    "max_jobs": ("JQ_DEFAULT_MAX_JOBS", "{}", False),
    "max_rows": ("JQ_DEFAULT_FAILED_ROWS", "{}", False),
    "count": ("JQ_DEFAULT_CRON_COUNT", "{}", False),
    "queue": ("JQ_DEFAULT_QUEUE", "'{}'", True),        # NULL: every queue
    "queues": ("JQ_DEFAULT_QUEUE", "'{{{}}}'", False),
    "time_zone": ("JQ_DEFAULT_TIME_ZONE", "'{}'", False),
    "lease": ("JQ_DEFAULT_LEASE_SECONDS", "'{} seconds'", True),  # NULL: the queue's
    "on_duplicate": ("JQ_DEFAULT_ON_DUPLICATE", "'{}'", False),
    "after_failed": ("JQ_DEFAULT_AFTER_FAILED", "'{}'", False),
}

# The same, for an argument whose default differs between functions:
# (function, argument) -> rule, looked up before RULES.
FUNCTION_RULES = {
    ("queue_overview", "count_cap"): ("JQ_DEFAULT_COUNT_CAP", "{}", False),
    ("queue_jobs_page", "max_rows"): ("JQ_DEFAULT_PAGE_ROWS", "{}", False),
    ("queue_leases", "max_rows"): ("JQ_DEFAULT_LEASE_ROWS", "{}", False),
}

# The same, for a default that an upgrade script changed:
# (script, function, argument) -> rule, looked up first.
SCRIPT_RULES = {
    ("jobqueue--1.4--1.5.sql", "queue_overview", "count_cap"): ("JQ_DEFAULT_COUNT_CAP_1_5", "{}", False),
}

# The function whose signature an argument belongs to: the last one
# created before it.
FUNCTION_RE = re.compile(r"CREATE\s+(?:OR\s+REPLACE\s+)?FUNCTION\s+@extschema@\.(\w+)")

DEFAULT_RE = re.compile(
    r"(?:^|[(,])\s*(?P<name>[a-z_]+)\s+[a-z\[\]]+(?:\s+NOT NULL)?\s+DEFAULT\s+"
    r"(?P<value>'[^']*'|[^\s,)]+)",
    re.MULTILINE)


def contract_values():
    text = (ROOT / "extension/src/base/contract.h").read_text()
    values = {}
    for m in re.finditer(r'^#define\s+(JQ_DEFAULT_\w+)\s+("[^"]*"|-?\d+)', text, re.MULTILINE):
        values[m.group(1)] = m.group(2).strip('"')
    return values


# A span written out in SQL text: interval '60 seconds'.
C_INTERVAL_RE = re.compile(r"interval\s+'\s*\d")
C_SQL_NUMBER_RE = re.compile(r"SQL_NUMBER\((\w+)\)")
C_STRING_RE = re.compile(r'"(?:[^"\\\n]|\\.)*"')


def check_c_statements(failures):
    """The C statements quote contract.h; returns how many quotes were checked."""
    src = ROOT / "extension/src"
    names = set(re.findall(r"^#define\s+(JQ_\w+)", (src / "base/contract.h").read_text(), re.MULTILINE))
    checked = 0
    for path in sorted(src.rglob("*.[ch]")):
        if path.name == "contract.h":
            continue
        for number, line in enumerate(path.read_text().splitlines(), 1):
            where = f"{path.relative_to(ROOT)}:{number}"
            for name in C_SQL_NUMBER_RE.findall(line):
                if name == "n":
                    continue            # the macro's own definition
                checked += 1
                if name not in names:
                    failures.append(f"{where}: SQL_NUMBER({name}): contract.h has no {name}")
            for literal in C_STRING_RE.findall(line):
                if C_INTERVAL_RE.search(literal):
                    failures.append(f"{where}: a span written in SQL text ({literal}): "
                                    f"quote contract.h with SQL_NUMBER(JQ_...)")
    return checked


def main():
    values = contract_values()
    checked = 0
    failures = []
    c_checked = check_c_statements(failures)
    scripts = sorted((ROOT / "extension/scripts").glob("*.sql"))
    if not scripts:
        failures.append("no SQL scripts found under extension/scripts")
    for script in scripts:
        text = script.read_text()
        for m in DEFAULT_RE.finditer(text):
            functions = FUNCTION_RE.findall(text, 0, m.start())
            function = functions[-1] if functions else None
            rule = SCRIPT_RULES.get((script.name, function, m.group("name")),
                                    FUNCTION_RULES.get((function, m.group("name")), RULES.get(m.group("name"))))
            if rule is None:
                continue
            macro, spelling, null_allowed = rule
            if macro not in values:
                failures.append(f"contract.h has no {macro}")
                continue
            value = m.group("value")
            line = script.read_text().count("\n", 0, m.start("name")) + 1
            if value == "NULL" and null_allowed:
                checked += 1
                continue
            expected = spelling.format(values[macro])
            checked += 1
            if value != expected:
                failures.append(f"{script.name}:{line}: {m.group('name')} DEFAULT {value}, "
                                f"contract.h says {expected} ({macro})")
    for f in failures:
        print("contract-check: " + f, file=sys.stderr)
    if checked == 0:
        print("contract-check: no defaults found to check", file=sys.stderr)
        return 1
    print(f"contract-check: {checked} defaults of the SQL scripts and {c_checked} numbers of the"
          f" C statements agree with contract.h")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
