#!/usr/bin/env python3
"""Parse and check a table printed by the jobqueue CLI (for cli.bats).

Reads the table on stdin: a header line, a rule of dash groups, data rows.
The rule gives each column's span; every line must keep its cells inside the
spans with only spaces between them, and each column must be consistently
left-aligned (cells start at the span's start) or right-aligned (cells end at
the span's end), header included.

Prints three kinds of lines:
  header cells joined by '|'
  the alignment of each column, L or R (e.g. LRRRRLLL), or ? when every
  cell fills its column so that it cannot be told
  each data row's cells joined by '|' (only rows whose first cell is KEY,
  when KEY is given)
Exits 1 with a message on stderr if the table is malformed or misaligned.
"""
import re
import sys


def fail(message):
    sys.stderr.write("table.py: " + message + "\n")
    sys.exit(1)


def main():
    lines = sys.stdin.read().split("\n")
    while lines and lines[-1] == "":
        lines.pop()
    if len(lines) < 2:
        fail("fewer than two lines: %r" % lines)
    header, rule, rows = lines[0], lines[1], lines[2:]
    if not re.fullmatch(r"-+(  -+)*", rule):
        fail("second line is not a rule of dashes: %r" % rule)
    spans = [(m.start(), m.end()) for m in re.finditer(r"-+", rule)]

    def cells_of(line):
        if len(line) > spans[-1][1]:
            fail("line longer than the rule: %r" % line)
        padded = line.ljust(spans[-1][1])
        previous_end = 0
        cells = []
        for start, end in spans:
            gap = padded[previous_end:start]
            if gap.strip():
                fail("text between columns in %r" % line)
            cells.append(padded[start:end])
            previous_end = end
        return cells

    table = [cells_of(header)] + [cells_of(r) for r in rows]
    alignment = ""
    for c in range(len(spans)):
        column = [row[c] for row in table if row[c].strip()]
        left = all(not cell.startswith(" ") for cell in column)
        right = all(not cell.endswith(" ") for cell in column)
        if left and right:
            alignment += "?"  # every cell fills the column: cannot tell
        elif left:
            alignment += "L"
        elif right:
            alignment += "R"
        else:
            fail("column %d is neither left- nor right-aligned: %r" % (c, column))
    print("|".join(cell.strip() for cell in table[0]))
    print(alignment)
    key = sys.argv[1] if len(sys.argv) > 1 else None
    for row in table[1:]:
        cells = [cell.strip() for cell in row]
        if key is None or cells[0] == key:
            print("|".join(cells))


main()
