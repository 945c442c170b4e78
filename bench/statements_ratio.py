"""bench/statements.sh: medians and ratios of pgbench's per-round latencies.

    python3 statements_ratio.py "NAMED_MS..." "UNNAMED_MS..."

Each argument is the rounds' average latencies in milliseconds, in round
order, separated by blanks; round i of both was measured back to back.
"""
import statistics
import sys

named = [float(x) * 1000 for x in sys.argv[1].split()]
unnamed = [float(x) * 1000 for x in sys.argv[2].split()]
for way, v in (("named", named), ("unnamed", unnamed)):
    print(f"pgbench op=push way={way} rounds={len(v)} median_us={statistics.median(v):.1f} "
          f"min_us={min(v):.1f} max_us={max(v):.1f}")
ratios = [u / n for n, u in zip(named, unnamed)]
print(f"pgbench op=push ratio_unnamed_over_named={statistics.median(unnamed) / statistics.median(named):.3f} "
      f"round_ratio_median={statistics.median(ratios):.3f} round_ratio_min={min(ratios):.3f} "
      f"round_ratio_max={max(ratios):.3f}")
