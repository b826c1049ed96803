"""Message combining on the particles example: default vs comm.json's combining, and what-if's prediction.

    .venv/bin/python bench/combine_compare.py [--reps 5] [--pes 2] [--args "..."] [--batch-too 8]

1. One traced run without hints; `paradise analyze --hints-out` writes comm.json (only comm.json is
   kept, so the hinted runs change nothing but combining) and `paradise whatif --hints` predicts the
   hinted run's makespan (first to last exec in the trace).
2. REPS rounds, each running, in this order (a busy machine hurts all alike): the default run and
   the hinted run untraced, then both traced.
3. Prints per configuration the medians of the program's own wall_s (its steps) and of PE 0's CPU
   time over the same steps (cpu0_s; charmrun does not hand its PE processes' CPU time back to the
   launcher), of the launcher's wall time; messages on the wire
   (send rows not marked combined) and combined messages in the traced runs; the ratios; and
   what-if's predicted makespan against the median makespan of the traced hinted runs, and its
   predicted speed-up against the median of the rounds' traced default / traced hinted makespans
   (a round's two runs see the same machine load).
4. With --batch-too N, each round also runs comm.json with every stream's batch set to N, untraced,
   right after the hinted run (`hinted_bN`), and prints its per-round ratios beside the hinted run's:
   the generator's batch against another, side by side.
"""

from __future__ import annotations

import argparse
import json
import shlex
import shutil
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tracers.charm.launch import launch  # noqa: E402

APP = ROOT / "examples" / "particles.py"
DEFAULT_ARGS = "--particles 2000 --steps 8"  # paradise demo --example particles'
RUN_TIMEOUT_S = 600


def paradise_cli(*args: str) -> str:
    """stdout of `paradise ARGS` (this checkout's CLI); a failure raises with the end of its stderr."""
    proc = subprocess.run([sys.executable, "-m", "paradise.cli.main", *args], capture_output=True, text=True,
                          timeout=RUN_TIMEOUT_S, cwd=ROOT)
    if proc.returncode != 0:
        raise RuntimeError(f"paradise {' '.join(args[:2])} failed: {proc.stderr[-800:]}")
    return proc.stdout


def run_once(args: list[str], pes: int, trace: Path | None, hints: Path | None) -> dict[str, float]:
    res = launch(APP, args, pes, trace_dir=trace, hints_dir=hints, timeout_s=RUN_TIMEOUT_S, capture=True,
                 bootstrap=True)
    if res.returncode != 0 or "check=" not in (res.stdout or ""):
        raise RuntimeError(f"run failed ({res.returncode}): {(res.stderr or '')[-800:]}")
    fields = dict(kv.split("=", 1) for kv in res.stdout.split("RESULT", 1)[1].split() if "=" in kv)
    if fields.get("out_of_order") != "0":
        raise RuntimeError(f"messages out of order: {res.stdout[-400:]}")
    return {"wall_s": float(fields["wall_s"]), "launch_s": res.wall_s, "cpu_s": float(fields["cpu0_s"])}


def trace_numbers(trace: Path) -> dict[str, int]:
    import duckdb

    con = duckdb.connect()
    con.sql(f"CREATE VIEW ev AS SELECT * FROM read_parquet('{trace}/*.parquet', union_by_name=true)")
    ((span, wire, combined, batches),) = con.sql("""
        SELECT (SELECT max(t1) - min(t0) FROM ev WHERE kind = 'exec'),
               count(*) FILTER (WHERE kind = 'send' AND (args IS NULL OR args NOT LIKE '%combined%')),
               count(*) FILTER (WHERE kind = 'send' AND args LIKE '%combined%'),
               count(*) FILTER (WHERE kind = 'send' AND name = 'deliver') FROM ev""").fetchall()
    return {"makespan_ns": int(span), "wire": int(wire), "combined": int(combined), "batches": int(batches)}


def med(xs: list[float]) -> float:
    return statistics.median(xs) if xs else float("nan")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--pes", type=int, default=2)
    ap.add_argument("--args", default=DEFAULT_ARGS)
    ap.add_argument("--batch-too", type=int, default=None, help="also run comm.json with this batch (untraced)")
    a = ap.parse_args()
    args = shlex.split(a.args)
    work = Path(tempfile.mkdtemp(prefix="combine-bench-"))
    try:
        base, all_hints, hints = work / "base", work / "all-hints", work / "hints"
        run_once(args, a.pes, base, None)
        paradise_cli("analyze", str(base), "--hints-out", str(all_hints))
        if not (all_hints / "comm.json").exists():
            raise SystemExit("no comm.json: the traced run has no small-message streams to combine")
        hints.mkdir()
        shutil.copy(all_hints / "comm.json", hints / "comm.json")
        comm = json.loads((hints / "comm.json").read_text())
        pred = json.loads(paradise_cli("whatif", str(base), "--hints", str(hints), "--json"))
        base_n = trace_numbers(base)
        untraced = [("default", None), ("hinted", hints)]
        if a.batch_too:
            other = work / "hints-batch"
            other.mkdir()
            (other / "comm.json").write_text(json.dumps(
                {**comm, "combine": [{**c, "batch": a.batch_too} for c in comm["combine"]]}))
            untraced.append((f"hinted_b{a.batch_too}", other))
        runs: dict[str, list[dict[str, float]]] = {k: [] for k, _ in untraced}
        runs.update({"default_traced": [], "hinted_traced": []})
        traced: dict[str, list[dict[str, int]]] = {"default_traced": [], "hinted_traced": []}
        for r in range(a.reps):
            for name, h in untraced:
                runs[name].append(run_once(args, a.pes, None, h))
            for name, h in (("default_traced", None), ("hinted_traced", hints)):
                t = work / f"{name}-{r}"
                runs[name].append(run_once(args, a.pes, t, h))
                traced[name].append(trace_numbers(t))
                shutil.rmtree(t, ignore_errors=True)
        print(f"program: examples/particles.py {a.args}  PEs: {a.pes}  rounds: {a.reps}")
        print(f"comm.json: {len(comm['combine'])} stream(s), batch {comm['combine'][0]['batch']}; "
              f"whatif per-message cost {pred['comm']['per_message_ns'] / 1e3:.1f} us")
        print(f"{'configuration':<16} {'wall_s (steps)':>15} {'launch_s':>9} {'cpu0_s':>7} {'wire msgs':>10} "
              f"{'combined':>9} {'makespan_s':>11}")  # cpu_s: PE 0's CPU time over the steps
        for name, rs in runs.items():
            tn = traced.get(name, [])
            wire = f"{med([t['wire'] for t in tn]):>10.0f}" if tn else f"{'':>10}"
            comb = f"{med([t['combined'] for t in tn]):>9.0f}" if tn else f"{'':>9}"
            span = f"{med([t['makespan_ns'] for t in tn]) / 1e9:>11.3f}" if tn else f"{'':>11}"
            print(f"{name:<16} {med([x['wall_s'] for x in rs]):>15.3f} {med([x['launch_s'] for x in rs]):>9.2f} "
                  f"{med([x['cpu_s'] for x in rs]):>7.2f} {wire} {comb} {span}")
        d, h = med([x["wall_s"] for x in runs["default"]]), med([x["wall_s"] for x in runs["hinted"]])
        dt = med([t["wire"] for t in traced["default_traced"]])
        ht = med([t["wire"] for t in traced["hinted_traced"]])
        print(f"hinted / default, untraced wall_s: {h / d:.3f}  (speed-up {d / h:.2f}x)")
        for name, _ in untraced[1:]:
            per = [x["wall_s"] / y["wall_s"] for x, y in zip(runs[name], runs["default"])]
            print(f"  {name} / default per round: {' '.join(f'{r:.3f}' for r in per)}; median {med(per):.3f}")
        print(f"messages on the wire, traced: {dt:.0f} -> {ht:.0f}  ({dt / ht:.2f}x fewer; the rest are same-PE "
              "messages, which are never combined)")
        cm = med([t["combined"] for t in traced["hinted_traced"]])
        bm = med([t["batches"] for t in traced["hinted_traced"]])
        print(f"listed cross-PE streams: {cm:.0f} messages travelled in {bm:.0f} batches ({cm / bm:.2f} per batch; "
              f"batch size {comm['combine'][0]['batch']})")
        measured = med([t["makespan_ns"] for t in traced["hinted_traced"]])
        print(f"what-if: base traced makespan {base_n['makespan_ns'] / 1e9:.3f} s, predicted hinted "
              f"{pred['predicted_makespan_ns'] / 1e9:.3f} s (messages {pred['comm']['messages_before']} -> "
              f"{pred['comm']['messages_after']}); measured hinted traced median {measured / 1e9:.3f} s; "
              f"error {(pred['predicted_makespan_ns'] - measured) / measured:+.1%}")
        dm = med([t["makespan_ns"] for t in traced["default_traced"]])
        print(f"what-if speed-up {pred['predicted_speedup']:.2f}x vs measured (median traced default / hinted "
              f"makespan) {dm / measured:.2f}x; predicted hinted makespan from the median traced default: "
              f"{dm / pred['predicted_speedup'] / 1e9:.3f} s vs measured {measured / 1e9:.3f} s, error "
              f"{(dm / pred['predicted_speedup'] - measured) / measured:+.1%}")
        paired = [d["makespan_ns"] / h["makespan_ns"] for d, h in zip(traced["default_traced"],
                                                                      traced["hinted_traced"])]
        pr = med(paired)
        print(f"  measured per round (traced default / traced hinted of the same round, median of {len(paired)}): "
              f"{pr:.2f}x; what-if speed-up error {(pred['predicted_speedup'] - pr) / pr:+.1%}")
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
