"""Parity with Holistic Trace Analysis (HTA 0.5.0): the same quantities from both tools on the
same real Kineto traces, side by side, scored strictly.

HTA runs in its own venv under .bench/hta-venv (created here when missing, as
bench/import_vs_hta.py does), one subprocess per trace, on a folder holding only that trace.
paradise runs as a user runs it: `paradise import kineto` then `paradise analyze --json`, one
subprocess each; its figures are read from that JSON. A row agrees when paradise is within 1 %
of HTA, or within the absolute slack its unit states (UNITS: half the step HTA rounds that
quantity to); NaN, a missing figure or an analysis one tool does not build never agrees. The
bench also scores paradise on a copy reduced as HTA reduces its input ("on HTA input") and
prints both scores; rows beyond 1 % are explained by definition in docs/analyses/training.md
("Parity with HTA").

Run: flock /tmp/paradise-bench.lock nice -n 5 .venv/bin/python bench/hta_parity.py [--only NAME]
"""

from __future__ import annotations

import argparse
import functools
import json
import math
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
REAL = Path(os.environ.get("PARADISE_REAL_DATA", ROOT.parent / "shared" / "data" / "real")) / "hta"
HTA_VENV = ROOT / ".bench" / "hta-venv"
HTA_VERSION = "0.5.0"
NOT_KINETO = ("_et.json.gz", "memory_timeline")
"""Files under the HTA test data that are not profiler traces (execution trace, memory timeline)."""
TOLERANCE = 0.01
UNITS = {
    "temporal": ("% (0.01 | 0.01)", (0.01 + 0.01) / 2),
    "overlap": ("% (0.01 | 0.01)", (0.01 + 0.01) / 2),
    "kernels": ("% (0.1 | 0.01)", (0.1 + 0.01) / 2),
    "idle": ("ratio (0.01 | 1e-4)", (0.01 + 0.0001) / 2),
    "queue": ("kernels", 0.0),
    "launches": ("count or us", 0.0),
    "critical_path": ("us", 0.0),
}
"""Per analysis: the unit of its rows, with the step each tool rounds it to (HTA | paradise's
--json), and the absolute slack that unit allows. Both tools round shares before printing them
(HTA: temporal breakdown and overlap to 0.01 points, kernel-type shares to 0.1 points, idle
ratios to 0.01; paradise: shares to 4 decimals, i.e. 0.01 points or 1e-4), so two figures up to
half of each step apart cannot be told apart. Counts, queue lengths and microseconds are not
rounded by either tool: no slack."""
print = functools.partial(print, flush=True)  # noqa: A001 - rows appear as each trace finishes

HTA_SCRIPT = r"""
import json, sys, warnings
warnings.filterwarnings("ignore")
import logging
logging.disable(logging.CRITICAL)
from hta.trace_analysis import TraceAnalysis
out = {}
def run(name, fn):
    try:
        out[name] = fn()
    except Exception as exc:  # HTA refuses some traces; the row says so
        out[name] = {"error": f"{type(exc).__name__}: {str(exc)[:80]}"}
try:
    a = TraceAnalysis(trace_dir=sys.argv[1])
except Exception as exc:
    print(json.dumps({"error": f"{type(exc).__name__}: {str(exc)[:80]}"})); sys.exit(0)
rank = sorted(a.t.traces)[0]
def temporal():
    df = a.get_temporal_breakdown(visualize=False)
    r = df.iloc[0]
    return {k: float(r[k]) for k in ("idle_time_pctg", "compute_time_pctg", "non_compute_time_pctg")}
def kernels():
    kt, _ = a.get_gpu_kernel_breakdown(visualize=False, include_memory_kernels=True)
    return {str(r.kernel_type): float(r.percentage) for r in kt.itertuples()}
def overlap():
    df = a.get_comm_comp_overlap(visualize=False)
    return {"comp_comm_overlap_pctg": float(df.iloc[0]["comp_comm_overlap_pctg"])}
def idle():
    df, _ = a.get_idle_time_breakdown(ranks=[rank], visualize=False)
    return {f"stream {int(r.stream)} {r.idle_category}": float(r.idle_time_ratio) for r in df.itertuples()}
def queue():
    df = a.get_queue_length_summary(ranks=[rank])
    if df is None:
        return {}
    res = {}
    for (rk, stream), r in df.iterrows():
        res[f"stream {int(stream)} mean"] = float(r[("queue_length", "mean")])
        res[f"stream {int(stream)} max"] = float(r[("queue_length", "max")])
    return res
def launches():
    df = a.get_cuda_kernel_launch_stats(ranks=[rank], visualize=False)[rank]
    return {"kernels": float(len(df)), "mean cpu_duration us": float(df["cpu_duration"].mean()),
            "mean gpu_duration us": float(df["gpu_duration"].mean()),
            "mean launch_delay us": float(df["launch_delay"].mean())}
def critical():
    steps = a.get_profiler_steps()
    if not steps:
        return {"error": "no ProfilerStep"}
    cp, ok = a.critical_path_analysis(rank=rank, annotation=f"ProfilerStep#{steps[0]}", instance_id=0)
    if not ok:
        return {"error": "critical_path_analysis failed"}
    s = cp.summary()
    return {"length us": float(s.sum())}
for name, fn in (("temporal", temporal), ("kernels", kernels), ("overlap", overlap), ("idle", idle),
                 ("queue", queue), ("launches", launches), ("critical_path", critical)):
    run(name, fn)
print(json.dumps(out))
"""

HTA_LABEL = {1: "COMPUTATION", 2: "COMMUNICATION", 4: "MEMORY"}


def ensure_hta() -> tuple[Path | None, str]:
    """The HTA venv's python, creating it with HTA 0.5.0 on first use; (None, reason) if impossible."""
    py = HTA_VENV / "bin" / "python"
    if not py.exists():
        base = getattr(sys, "_base_executable", sys.executable)
        r = subprocess.run([base, "-m", "venv", str(HTA_VENV)], capture_output=True, text=True)
        if r.returncode != 0:
            return None, f"venv creation failed: {r.stderr.strip()[-300:]}"
        r = subprocess.run([str(py), "-m", "pip", "install", "-q", "--no-cache-dir",
                            f"holistictraceanalysis=={HTA_VERSION}"], capture_output=True, text=True)
        if r.returncode != 0:
            return None, f"pip install holistictraceanalysis failed: {r.stderr.strip()[-500:]}"
    r = subprocess.run([str(py), "-c", "import importlib.metadata as m; print(m.version('HolisticTraceAnalysis'))"],
                       capture_output=True, text=True)  # fmt: skip
    if r.returncode != 0:
        return None, f"HTA does not import: {r.stderr.strip()[-300:]}"
    return py, r.stdout.strip()


def traces() -> list[Path]:
    found = sorted(p for p in REAL.rglob("*.json*") if p.suffix in (".json", ".gz") and p.is_file())
    return [p for p in found if not any(x in p.name for x in NOT_KINETO) and "critical_path/end_to_end" not in str(p)]


def run_hta(py: Path, trace: Path, tmp: Path) -> dict:
    d = tmp / "hta"
    shutil.rmtree(d, ignore_errors=True)
    d.mkdir()
    shutil.copy(trace, d / trace.name)
    r = subprocess.run([str(py), "-c", HTA_SCRIPT, str(d)], capture_output=True, text=True, timeout=600)
    try:
        return json.loads(r.stdout.strip().splitlines()[-1])
    except (ValueError, IndexError):
        return {"error": (r.stderr.strip().splitlines() or ["no output"])[-1][:100]}


def hta_window(src: Path, dst: Path) -> None:
    """A copy of an imported trace reduced as HTA reduces its input before every analysis, so that
    remaining differences are definitions, not inputs: with two or more ProfilerSteps, host rows
    from the start of the last step on are dropped, and device rows whose launch was dropped;
    every start is rounded up and every end down to a whole microsecond of the file's clock."""
    import duckdb
    import pyarrow.parquet as pq

    from paradise.format import read_metadata

    meta = read_metadata(pq.read_schema(src).metadata)
    rank = next(iter(meta["extra"]["ranks"].values()))
    base = rank.get("baseTimeNanoseconds") if rank.get("clock") == "baseTimeNanoseconds" else 0
    shift = (meta["extra"]["trace_origin_ns"] - (base or 0)) % 1000  # t + shift is on the file's µs grid
    con = duckdb.connect()
    con.execute(f"CREATE VIEW e AS SELECT * FROM read_parquet('{src}')")
    steps = con.execute("SELECT count(*), max(t0) FROM e WHERE kind = 'step'").fetchall()[0]
    keep = "TRUE"
    if steps[0] >= 2:
        keep = (f"(stream IS NULL AND t0 < {steps[1]}) OR (stream IS NOT NULL AND msg IN "
                f"(SELECT msg FROM e WHERE stream IS NULL AND msg IS NOT NULL AND t0 < {steps[1]}))")
    cols = ", ".join(f'"{c}"' for c in pq.read_schema(src).names if c not in ("t0", "t1"))
    con.execute(f"""COPY (
        SELECT {cols},
               (ceil((t0 + {shift}) / 1000.0) * 1000 - {shift})::BIGINT AS t0,
               greatest((floor((t1 + {shift}) / 1000.0) * 1000 - {shift})::BIGINT,
                        (ceil((t0 + {shift}) / 1000.0) * 1000 - {shift})::BIGINT) AS t1
        FROM e WHERE {keep}) TO '{dst}' (FORMAT PARQUET)""")
    con.close()
    table = pq.read_table(dst)
    from paradise.format import SCHEMA, conform

    pq.write_table(conform(table.select([n for n in SCHEMA.names if n in table.column_names]))
                   .replace_schema_metadata(pq.read_schema(src).metadata), dst)


def _cli(*args: str) -> subprocess.CompletedProcess:
    """`paradise ARGS` as a user runs it (this checkout's package, in a subprocess)."""
    return subprocess.run([sys.executable, "-m", "paradise.cli.main", *args], capture_output=True, text=True,
                          cwd=ROOT, timeout=900)  # fmt: skip


def _import(trace: Path, out: Path) -> str | None:
    """`paradise import kineto`, with --rank 0 where the file names no rank; the error or None."""
    r = _cli("import", "kineto", str(trace), "-o", str(out), "--force")
    if r.returncode != 0:
        r = _cli("import", "kineto", str(trace), "-o", str(out), "--force", "--rank", "0")
    return None if r.returncode == 0 else (r.stderr.strip().splitlines() or ["import failed"])[-1][:100]


def run_paradise(trace: Path, tmp: Path, window: bool = False) -> dict:
    """paradise's figures for HTA's quantities, from `paradise analyze --json` on the imported
    trace (window: on a copy reduced as HTA reduces its input)."""
    out = tmp / "p.parquet"
    error = _import(trace, out)
    if error:
        return {"error": error}
    if window:
        hta_window(out, tmp / "w.parquet")
        out = tmp / "w.parquet"
    r = _cli("analyze", str(out), "--json")
    try:
        doc = json.loads(r.stdout)["analyses"]
    except (ValueError, KeyError):
        return {"error": (r.stderr.strip().splitlines() or ["analyze failed"])[-1][:100]}
    if "gpu_kernels" not in doc:
        return {"error": "no device rows"}
    res: dict[str, dict] = {}
    k = doc["gpu_kernels"]
    if k.get("ranks"):
        r0 = k["ranks"][0]
        res["temporal"] = {"idle_time_pctg": 100 * r0["idle_share"], "compute_time_pctg": 100 * r0["computation_share"],
                           "non_compute_time_pctg": 100 * r0["non_computation_share"]}  # fmt: skip
        if r0["comm_comp_overlap_share"] is not None:
            res["overlap"] = {"comp_comm_overlap_pctg": 100 * r0["comm_comp_overlap_share"]}
        res["kernels"] = {" overlapping ".join(v for b, v in HTA_LABEL.items() if row["mask"] & b): 100 * row["share"]
                          for row in k["types"]}  # fmt: skip
    i = doc.get("gpu_idle", {})
    res["idle"] = {f"stream {s['stream']} {c}": s[f"{c}_share"] for s in i.get("streams", [])
                   for c in ("host_wait", "kernel_wait", "other") if s[f"{c}_share"] is not None}  # fmt: skip
    res["queue"] = {}
    for s in doc.get("gpu_queue", {}).get("streams", []):
        res["queue"][f"stream {s['stream']} mean"] = s["mean"]
        res["queue"][f"stream {s['stream']} max"] = s["max"]
    lc = doc.get("gpu_launches", {})
    if lc.get("ranks"):
        r0 = lc["ranks"][0]
        res["launches"] = {"kernels": r0["launches"], "mean cpu_duration us": r0["cpu_mean_ns"] / 1e3,
                           "mean gpu_duration us": r0["gpu_mean_ns"] / 1e3,
                           "mean launch_delay us": r0["delay_mean_ns"] / 1e3}  # fmt: skip
    return res


def agrees(hta: float | None, par: float | None, slack: float) -> tuple[bool, str]:
    """Whether paradise's figure agrees with HTA's (within TOLERANCE relative, or `slack`
    absolute), and the relative difference as text. NaN or a missing figure never agrees."""
    if hta is None or par is None:
        return False, "only one"
    if math.isnan(hta) or math.isnan(par):
        return False, "nan"
    diff = abs(par - hta)
    rel = diff / abs(hta) if hta else (0.0 if diff == 0 else math.inf)
    return rel <= TOLERANCE or diff <= slack + 1e-12, ("inf" if math.isinf(rel) else f"{rel:.2%}")


def _fmt(v: object) -> str:
    from paradise.units import number

    if isinstance(v, float):
        return number(v, 4)
    return str(v)


def _pair(hv: dict, pv: dict, q: str) -> tuple[float | None, float | None]:
    """HTA's and paradise's figure for quantity q; a category one tool omits and the other
    gives as 0 is the same empty category (NaN is not: it never agrees)."""
    a, b = hv.get(q), pv.get(q)
    if (a is None and b == 0) or (b is None and a == 0):
        a, b = a or 0.0, b or 0.0
    return a, b


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--only", default="", help="only traces whose path contains this text")
    args = ap.parse_args()
    py, version = ensure_hta()
    if py is None:
        print(f"HTA unavailable: {version}")
        sys.exit(1)
    print(f"HTA {version} vs paradise on {REAL}; rel diff = |paradise - HTA| / |HTA|; '*' marks a row that does "
          f"not agree: beyond {TOLERANCE:.0%} and beyond the slack its unit states; NaN or a missing figure never agrees")
    print("paradise: `paradise import kineto` + `paradise analyze --json`, as a user runs it (scored); "
          "'on HTA input': the same on the trace reduced as HTA reduces it (last ProfilerStep dropped, "
          "times rounded inward to µs), scored apart")
    print("unit (rounding step HTA | paradise) and the slack it allows: "
          + "; ".join(f"{a}: {u} ±{sl:g}" for a, (u, sl) in UNITS.items() if sl) + "; every other row: none")
    print("'-' in a rel diff column: neither tool gives that figure on that input (the row belongs to the other "
          "comparison only)")
    print(f"{'trace':<40} {'analysis':<9} {'quantity':<34} {'unit':<19} {'HTA':>9} {'paradise':>9} {'rel diff':>9} "
          f"{'on HTA input':>12} {'rel diff':>9}")
    own = [0, 0]  # agree, disagree
    red = [0, 0]
    unscored = 0
    t_hta = t_par = 0.0
    with tempfile.TemporaryDirectory(prefix="hta-parity-") as tmpname:
        tmp = Path(tmpname)
        for trace in traces():
            if args.only not in str(trace):
                continue
            name = str(trace.relative_to(REAL)).replace("tests/data/", "")
            s = time.perf_counter()
            h = run_hta(py, trace, tmp)
            t_hta += time.perf_counter() - s
            s = time.perf_counter()
            p = run_paradise(trace, tmp)
            t_par += time.perf_counter() - s
            w = run_paradise(trace, tmp, window=True) if "error" not in p else {}
            if "error" in h or "error" in p:
                print(f"{name[:40]:<40} {'-':<9} {'(not scored)':<34} HTA: {h.get('error', 'ok')[:40]}; "
                      f"paradise: {p.get('error', 'ok')[:40]}")
                unscored += 1
                continue
            for analysis in ("temporal", "kernels", "overlap", "idle", "queue", "launches", "critical_path"):
                hv, pv, wv = h.get(analysis, {}), p.get(analysis, {}), w.get(analysis, {})
                unit, slack = UNITS[analysis]
                if "error" in hv:
                    print(f"{name[:40]:<40} {analysis:<9} {'(HTA: ' + hv['error'][:27] + ')':<34} (not scored)")
                    unscored += 1
                    continue
                for q in sorted(set(hv) | set(pv) | set(wv)):
                    a, b = _pair(hv, pv, q)
                    a2, c = _pair(hv, wv, q)
                    rel = rel2 = "-"  # a row of the other comparison only: neither tool has it here
                    if a is not None or b is not None:
                        ok, rel = agrees(a, b, slack)
                        own[not ok] += 1
                        rel += "" if ok else "*"
                    if a2 is not None or c is not None:
                        ok2, rel2 = agrees(a2, c, slack)
                        red[not ok2] += 1
                        rel2 += "" if ok2 else "*"
                    shown_b = "not built" if b is None and not pv else _fmt(b)
                    print(f"{name[:40]:<40} {analysis:<9} {q[:34]:<34} {unit:<19} {_fmt(a):>9} {shown_b:>9} "
                          f"{rel:>9} {_fmt(c):>12} {rel2:>9}")
    total = sum(own)
    print(f"paradise as a user gets it: {own[0]} of {total} rows agree ({own[0] / max(total, 1):.1%}), {own[1]} do not")
    print(f"on HTA input (reduced copy): {red[0]} of {sum(red)} rows agree ({red[0] / max(sum(red), 1):.1%}), "
          f"{red[1]} do not")
    print(f"not scored (a tool failed on the whole trace or HTA's analysis raised): {unscored}; "
          f"wall time HTA {t_hta:.1f} s, paradise (import + analyze) {t_par:.1f} s")


if __name__ == "__main__":
    main()
