"""The spill directory over time, from a `bench/scale.py --spill-log FILE` log: one line every
--every seconds (and the peak's), the total and each part's MiB (DuckDB's temp files, each partition
directory's parts), for the runs of one command.

Run: .venv/bin/python bench/spill_timeline.py FILE [--command "full charm 1e+08"] [--every 10]
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("log", type=Path)
    ap.add_argument("--command", default="full", help="the log lines whose command starts with this")
    ap.add_argument("--every", type=float, default=10.0, help="seconds between the lines shown")
    args = ap.parse_args()
    rows = [r for r in map(json.loads, args.log.read_text().splitlines()) if r["command"].startswith(args.command)]
    if not rows:
        raise SystemExit(f"{args.log}: no samples of a command starting {args.command!r}")
    keys = sorted({k for r in rows for k in r["bytes"]})
    peak = max(rows, key=lambda r: sum(r["bytes"].values()))
    print(f"{rows[0]['command']}: {len(rows)} samples; MiB")
    print(f"{'s':>7s} {'total':>7s} " + " ".join(f"{k.replace('paradise-spill-*/', ''):>18s}" for k in keys))
    shown = -args.every
    for r in rows:
        if r["s"] - shown >= args.every or r is peak:
            shown = r["s"] if r is not peak else shown
            cells = " ".join(f"{r['bytes'].get(k, 0) / 2**20:18,.0f}" for k in keys)
            print(f"{r['s']:7.1f} {sum(r['bytes'].values()) / 2**20:7,.0f} {cells}" + ("  <- peak" if r is peak else ""))


if __name__ == "__main__":
    main()
