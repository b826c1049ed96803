"""`paradise analyze --json` of one trace by this tree and by another source tree, side by side: each
run a process of its own with this tree's interpreter and `python -P` (bench/summary_write_cost.py's
`command`: the working folder never shadows the tree), in alternating rounds (the order flips each
round), timed from wait4 (bench/tuning.py's `run`: wall, user and system CPU, peak RSS, minor page
faults); prints each run, the medians and the ratios this / other, and each side's verdicts against
the trace's ground truth (a synth trace's synth-truth.json; bench/scale.py's `check`).

Made for issue 26's line "under the default budget, at least as fast as the in-memory event layer
of commit 3939861 on the same trace": `git archive 3939861 | tar -x -C DIR`, then

    flock /tmp/paradise-bench.lock nice -n 5 .venv/bin/python bench/analyze_vs_tree.py TRACE --other DIR
        [--label 3939861] [--rounds 3] [-- EXTRA ANALYZE OPTIONS]

The other tree's event layer may hold the whole trace in memory (3939861: 20 GiB at 10^8 rows):
run it on a machine with room for it, alone.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

from scale import check  # noqa: E402
from summary_write_cost import command  # noqa: E402
from tuning import run  # noqa: E402

KEYS = ("wall_s", "cpu_s", "user_s", "sys_s", "rss_mib", "minflt_k")


def verdicts(tree: Path, trace: Path, extra: list[str], truth: dict | None) -> tuple[dict, str]:
    """One run of `tree` and its verdicts against `truth`."""
    r = run(command(tree, "analyze", str(trace), "--json", *extra), dict(os.environ), keep_output=True)
    return r, check(json.loads(r.pop("output")), truth) if truth else "no ground truth"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("trace", type=Path)
    ap.add_argument("--other", type=Path, required=True, help="the other source tree")
    ap.add_argument("--label", default=None, help="the other tree's name in the output (default: its folder)")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("extra", nargs="*", help="options given to both analyze commands (after --)")
    args = ap.parse_args()
    truth_file = args.trace / "synth-truth.json"
    truth = json.loads(truth_file.read_text()) if truth_file.exists() else None
    sides = {"this": ROOT, args.label or args.other.name: args.other}
    runs: dict[str, list[dict]] = {name: [] for name in sides}
    print(f"{' '.join(['paradise analyze --json', *args.extra, str(args.trace)])}: this tree ({ROOT}) and "
          f"{list(sides)[1]} ({args.other}), {args.rounds} alternating rounds")
    for i in range(args.rounds):
        for name in (list(sides) if i % 2 else list(sides)[::-1]):  # the other tree first in round 1
            r, said = verdicts(sides[name], args.trace, args.extra, truth)
            runs[name].append(r)
            print(f"  round {i + 1} {name:>10}: wall {r['wall_s']:7.1f} s  user {r['user_s']:7.1f} s  "
                  f"sys {r['sys_s']:6.1f} s  peak RSS {r['rss_mib']:8,.0f} MiB  | {said}", flush=True)
    this, other = list(sides)
    print(f"medians of {args.rounds}:")
    print(f"  {'':10} {this:>10} {other:>10} {'ratio':>8}")
    for key in KEYS:
        a = statistics.median(r[key] for r in runs[this])
        b = statistics.median(r[key] for r in runs[other])
        print(f"  {key:10} {a:10.2f} {b:10.2f} {a / b if b else float('nan'):8.3f}")


if __name__ == "__main__":
    main()
