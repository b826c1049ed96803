"""Times `paradise compare` on model outputs against a bare DuckDB pass over the same data.

Both sides read two outputs.parquet files of N items x K options, align them on `item`, and
compute accuracies, flips and mean KL. Two candidates: one listing the items in the base's
order (rows pair by position, the usual case) and one shuffled (paradise must join on item). The bare pass is the shortest DuckDB query doing that;
paradise also validates schemas and uniqueness, normalises log-probabilities, and finds KL
quantiles, margins and the flipped items. Runs alternate in one process; prints medians and
the ratio (goal: at most 2x). Then, as a user runs them, fresh processes alternate:
`paradise compare --json` against `python -c` running the bare query (each pays its start-up
and its first touch of memory, which on this kind of virtual machine costs more than in a
process that already freed memory of that size).

    python bench/compare_speed.py [--items 10000000] [--options 4] [--reps 3]
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import time
from pathlib import Path

import duckdb
import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from paradise.compare.outputs import compare_outputs
from paradise.format import OUTPUTS_FILE

CACHE = Path(__file__).resolve().parents[1] / ".bench" / "compare"


def make(path: Path, n: int, k: int, seed: int, base: np.ndarray | None = None) -> np.ndarray:
    rng = np.random.default_rng(seed)
    logits = rng.normal(size=(n, k)).astype(np.float32) if base is None else base + rng.normal(
        scale=0.3, size=(n, k)).astype(np.float32)
    lp = logits - np.log(np.exp(logits).sum(1, keepdims=True))
    labels = np.random.default_rng(0).integers(0, k, n).astype(np.int32)
    items = pa.array([f"q{i}" for i in range(n)]) if n <= 1_000_000 else pc.binary_join_element_wise(
        "q", pa.array(np.arange(n)).cast(pa.string()), "")
    values = pa.FixedSizeListArray.from_arrays(pa.array(lp.reshape(-1)), k).cast(pa.list_(pa.float32()))
    pq.write_table(pa.table({"item": items, "label": labels, "logprobs": values}), path, row_group_size=1 << 20)
    return logits


def bare_sql(b: Path, c: Path) -> str:
    return f"""
        WITH j AS (SELECT b.label, b.logprobs bl, c.logprobs cl
                   FROM read_parquet('{b}') b JOIN read_parquet('{c}') c USING (item))
        SELECT count(*),
               avg((list_position(bl, list_max(bl)) - 1 = label)::INT),
               avg((list_position(cl, list_max(cl)) - 1 = label)::INT),
               sum(((list_position(bl, list_max(bl)) - 1 = label) <> (list_position(cl, list_max(cl)) - 1 = label))::INT),
               avg(list_sum(list_transform(list_zip(bl, cl), lambda z: exp(z[1]) * (z[1] - z[2]))))
        FROM j
        """


def bare(con: duckdb.DuckDBPyConnection, b: Path, c: Path) -> tuple:
    return con.execute(bare_sql(b, c)).fetchall()[0]


def fresh(cmd: list[str]) -> float:
    """Seconds of one subprocess, start-up included."""
    t = time.perf_counter()
    subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL)
    return time.perf_counter() - t


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--items", type=int, default=10_000_000)
    ap.add_argument("--options", type=int, default=4)
    ap.add_argument("--reps", type=int, default=3)
    args = ap.parse_args()
    CACHE.mkdir(parents=True, exist_ok=True)
    b = CACHE / f"base_{args.items}x{args.options}.parquet"
    c = CACHE / f"cand_{args.items}x{args.options}.parquet"
    shuffled = CACHE / f"cand_shuffled_{args.items}x{args.options}.parquet"
    if not (b.exists() and c.exists()):
        logits = make(b, args.items, args.options, 1)
        make(c, args.items, args.options, 2, base=logits)
    if not shuffled.exists():
        t = pq.read_table(c)
        perm = np.random.default_rng(3).permutation(t.num_rows)
        pq.write_table(t.take(pa.array(perm)), shuffled, row_group_size=1 << 20)
    con = duckdb.connect()
    con.execute("SET enable_progress_bar = false")
    print(f"items={args.items:,} options={args.options} reps={args.reps} (same answers: accuracy, flips, mean KL)")
    for label, cand in (("same order", c), ("shuffled", shuffled)):
        t_bare, t_ours = [], []
        for _ in range(args.reps):
            t = time.perf_counter()
            n, acc_b, acc_c, flips, kl = bare(con, b, cand)
            t_bare.append(time.perf_counter() - t)
            t = time.perf_counter()
            r = compare_outputs(b, cand)
            t_ours.append(time.perf_counter() - t)
        assert r.items_common == n and abs(r.accuracy_base - acc_b) < 1e-9
        assert r.flips_correct_to_incorrect + r.flips_incorrect_to_correct == flips
        assert abs(r.kl_mean - kl) < 1e-4 * max(kl, 1e-9) + 1e-6
        mb, mo = statistics.median(t_bare), statistics.median(t_ours)
        print(f"[{label}] bare DuckDB pass     median {mb:7.2f} s   runs {', '.join(f'{x:.2f}' for x in t_bare)}")
        print(f"[{label}] paradise compare     median {mo:7.2f} s   runs {', '.join(f'{x:.2f}' for x in t_ours)}")
        print(f"[{label}] ratio paradise/bare  {mo / mb:.2f}x   (goal: <= 2x)")
    paradise = str(Path(sys.executable).parent / "paradise")

    def run_dir(f: Path) -> Path:  # `paradise compare` reads outputs.parquet in a run folder
        d = CACHE / "runs" / f.stem
        d.mkdir(parents=True, exist_ok=True)
        if not (d / OUTPUTS_FILE).exists():
            (d / OUTPUTS_FILE).symlink_to(f)
        return d

    for label, cand in (("same order", c), ("shuffled", shuffled)):
        code = f"import duckdb; duckdb.connect().execute('SET enable_progress_bar = false').execute({bare_sql(b, cand)!r}).fetchall()"
        cmds = {"bare DuckDB (python -c)": [sys.executable, "-c", code],
                "paradise compare --json": [paradise, "compare", "--json", str(run_dir(b)), str(run_dir(cand))]}
        times: dict[str, list[float]] = {k: [] for k in cmds}
        for _ in range(args.reps):
            for k, cmd in cmds.items():
                times[k].append(fresh(cmd))
        med = {k: statistics.median(v) for k, v in times.items()}
        for k, v in times.items():
            print(f"[{label}, fresh processes] {k:24s} median {med[k]:6.2f} s   runs {', '.join(f'{x:.2f}' for x in v)}")
        ratio = med["paradise compare --json"] / med["bare DuckDB (python -c)"]
        print(f"[{label}, fresh processes] ratio paradise/bare  {ratio:.2f}x   (goal: <= 2x)")


if __name__ == "__main__":
    main()
