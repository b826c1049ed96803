"""Trace diff: a known speed-up is found significant; unchanged figures stay within noise."""

from __future__ import annotations

import json
import random

from paradise.compare.perf import compare_traces
from tests.builders import TraceBuilder


def two_pe_run(tmp_path, name: str, pe1_work: int, seed: int, steps: int = 8):
    """Per step: PE0 works ~100 µs, PE1 works pe1_work µs; both wait for the slower one."""
    rng = random.Random(seed)
    b = TraceBuilder(2, program="bsp")
    t = 0
    for s in range(steps):
        w0 = 100_000 + rng.randrange(-3_000, 3_000)
        w1 = pe1_work * 1_000 + rng.randrange(-3_000, 3_000)
        end = t + max(w0, w1)
        b.exec(0, t, t + w0, "Cell.work", coll="Cell#0", obj=0, step=s)
        b.exec(1, t, t + w1, "Cell.work", coll="Cell#0", obj=1, step=s)
        for pe, w in ((0, w0), (1, w1)):
            if w < end - t:
                b.add(pe, "idle", t + w, end, step=s)
        b.message(0, t + w0, 1, end, end + 1_000, "Cell.halo", 512, step=s)
        t = end + 1_000
    return b.write(tmp_path / name)


def test_speedup_is_significant(tmp_path):
    base = two_pe_run(tmp_path, "base", pe1_work=300, seed=1)
    cand = two_pe_run(tmp_path, "cand", pe1_work=150, seed=2)
    r = compare_traces(base, cand)
    step, busy1, busy0 = r.get("step_time"), r.get("pe1.busy"), r.get("pe0.busy")
    # step time ~301 µs -> ~151 µs: half, far beyond a ±3 µs spread
    assert step.significant and step.delta < 0 and abs(step.relative + 0.5) < 0.05
    assert busy1.significant and busy1.delta < 0
    assert not busy0.significant  # PE0's work did not change
    assert r.get("makespan").delta < 0
    assert r.changes[0].significant  # significant changes are listed first
    assert r.steps_base == 8 and r.steps_candidate == 8


def test_cli_json(tmp_path, cli):
    base = two_pe_run(tmp_path, "base", pe1_work=300, seed=1)
    cand = two_pe_run(tmp_path, "cand", pe1_work=300, seed=3)
    rc, out, err = cli("compare", base, cand, "--json")
    assert rc == 0, err
    perf = json.loads(out)["performance"]
    step = next(c for c in perf["changes"] if c["metric"] == "step_time")
    assert not step["significant"]  # same program, other seed: within the run-to-run spread
    rc, out, err = cli("compare", base, cand)
    assert rc == 0 and "step_time" in out


def _raw_ops_per_step(path):
    """(step ordinal, name) -> calls from the raw Kineto JSON: host rows by the ProfilerStep window
    they start in, device work by the step of the runtime call with the same correlation."""
    import collections
    import gzip

    with gzip.open(path) as fh:
        xs = [e for e in json.load(fh)["traceEvents"] if e.get("ph") == "X"]
    steps = sorted((e["ts"], e["ts"] + e["dur"]) for e in xs if e["name"].startswith("ProfilerStep#"))

    def step_of(ts):
        return next((k for k, (a, b) in enumerate(steps) if a <= ts < b), None)

    launch = {e["args"]["correlation"]: step_of(e["ts"]) for e in xs
              if e.get("cat") == "cuda_runtime" and "correlation" in e.get("args", {})}  # fmt: skip
    calls = collections.Counter()
    for e in xs:
        if e["name"].startswith(("ProfilerStep#", "nccl:")) or e.get("cat") in ("gpu_user_annotation", "Trace"):
            continue  # steps, marks, and the collective row (compared as collective.messages)
        dev = e.get("cat") in ("kernel", "gpu_memcpy", "gpu_memset")
        k = launch.get(e.get("args", {}).get("correlation")) if dev else step_of(e["ts"])
        if k is not None:
            calls[(k, e["name"])] += 1
    return calls


def test_per_step_diff_on_real_traces(real_data):
    # HTA's trace_compare pair: 2 steps each, the candidate has 3 more CPU ops, 1 kernel and 1
    # annotation less; the diff per step follows the raw files.
    from paradise.importers.kineto import import_trace

    d = real_data / "hta" / "tests" / "data" / "trace_compare"
    base, cand = d / "base" / "base.json.gz", d / "test" / "test.json.gz"
    import tempfile
    from pathlib import Path

    with tempfile.TemporaryDirectory() as tmp:
        cmp = compare_traces(import_trace(base, Path(tmp) / "b.parquet"), import_trace(cand, Path(tmp) / "c.parquet"))
    rb, rc = _raw_ops_per_step(base), _raw_ops_per_step(cand)
    assert len(cmp.step_diff) == 2
    for s in cmp.step_diff:
        k = s["index"]
        names = {n for (kk, n) in rb | rc if kk == k}
        added = {n for n in names if rb[(k, n)] == 0 < rc[(k, n)]}
        removed = {n for n in names if rc[(k, n)] == 0 < rb[(k, n)]}
        assert {o["name"] for o in s["added"]} == added and {o["name"] for o in s["removed"]} == removed
        for o in s["changed"]:
            assert rb[(k, o["name"])] == o["calls_base"] and rc[(k, o["name"])] == o["calls_candidate"]
    assert sum(s["counts"]["added"] + s["counts"]["removed"] for s in cmp.step_diff) > 0
    st = cmp.get("step_time")
    assert st.statistic == "mean"  # 2 steps: a mean per step, never a sum labelled step_time
    assert st.base < 0.6 * cmp.get("makespan").base


def _mwu_brute(x, y):
    """Two-sided exact p of the Mann-Whitney U test by enumerating every split of the pooled values."""
    import itertools

    pooled, n1 = sorted(x + y), len(x)

    def u(a, b):
        return sum((p > q) + 0.5 * (p == q) for p in a for q in b)

    mid, seen = len(x) * len(y) / 2, abs(u(x, y) - len(x) * len(y) / 2)
    hits = total = 0
    for idx in itertools.combinations(range(len(pooled)), n1):
        a = [pooled[i] for i in idx]
        b = [pooled[i] for i in range(len(pooled)) if i not in idx]
        total += 1
        hits += abs(u(a, b) - mid) >= seen - 1e-9
    return hits / total


def test_mann_whitney_exact_matches_enumeration():
    from paradise.compare.stats import mann_whitney_u

    rng = random.Random(7)
    for _ in range(25):
        x = [rng.random() + 0.2 for _ in range(rng.randint(1, 6))]
        y = [rng.random() for _ in range(rng.randint(1, 6))]
        t = mann_whitney_u(x, y)
        assert t.method == "exact" and abs(t.p_value - _mwu_brute(x, y)) < 1e-12


def test_mann_whitney_normal_with_ties():
    from paradise.compare.stats import mann_whitney_u

    same = mann_whitney_u([5.0] * 120, [5.0] * 130)
    assert same.p_value == 1.0  # all equal: no evidence of a shift
    rng = random.Random(3)
    x = [float(rng.randrange(10)) for _ in range(150)]
    shifted = mann_whitney_u(x, [v + 3 for v in x])
    assert shifted.method == "normal" and shifted.p_value < 1e-6


def test_one_run_each_is_never_significant(tmp_path):
    # makespan 20 % shorter, but one number per side: shown, never called significant
    base = two_pe_run(tmp_path, "base", pe1_work=300, seed=1, steps=2)
    cand = two_pe_run(tmp_path, "cand", pe1_work=240, seed=2, steps=2)
    r = compare_traces(base, cand)
    mk = r.get("makespan")
    assert mk.relative < -0.15
    assert mk.verdict == "one run each" and not mk.significant and mk.p_value is None
    st = r.get("step_time")  # 2 steps each: a mean per run, one number per side
    assert st.statistic == "mean" and st.verdict == "one run each"
    assert not any(c.significant for c in r.changes)


def test_repeats_give_run_level_figures_a_distribution(tmp_path):
    base = [two_pe_run(tmp_path, f"b{i}", pe1_work=300, seed=10 + i, steps=2) for i in range(4)]
    cand = [two_pe_run(tmp_path, f"c{i}", pe1_work=200, seed=20 + i, steps=2) for i in range(4)]
    r = compare_traces(base[0], cand[0], base_repeats=base[1:], candidate_repeats=cand[1:])
    mk = r.get("makespan")
    assert r.runs_base == 4 and r.runs_candidate == 4
    assert mk.basis == "runs" and mk.samples_base == 4 and mk.samples_candidate == 4
    # every candidate run is shorter than every base run: exact p = 2 / C(8, 4)
    assert mk.significant and abs(mk.p_value - 2 / 70) < 1e-12
    same = compare_traces(base[0], base[1], base_repeats=base[2:3], candidate_repeats=base[3:])
    assert same.get("makespan").verdict == "too few samples"  # 2 vs 2 runs cannot reach p < 0.05
    assert not same.get("makespan").significant


def test_step_time_of_overlapping_steps(tmp_path):
    # Charm-like: step s starts every 150 µs on PE 0, but each step's last row ends 800 µs later on
    # PE 1, so the span of a step's rows overlaps 5 others. Step time is start to next start.
    b = TraceBuilder(2, program="async")
    starts = [s * 150_000 for s in range(10)]
    for s, t in enumerate(starts):
        b.exec(0, t, t + 100_000, "Cell.work", coll="Cell#0", obj=0, step=s)
        b.exec(1, t + 700_000, t + 800_000, "Cell.work", coll="Cell#0", obj=1, step=s)
    path = b.write(tmp_path / "t")
    r = compare_traces(path, path)
    from paradise.compare.perf import _tables, step_durations
    from paradise.engines import get_engine
    from paradise.store import open_trace

    eng = get_engine(open_trace(path), "duckdb")
    steps = step_durations(_tables(eng)["pe_step"])
    eng.close()
    assert list(steps.iloc[:-1]) == [150_000.0] * 9
    assert steps.iloc[-1] == 800_000  # the last step: its start to its last end
    # the steps add up to the iterations: first step's start to the last step's end
    assert steps.sum() == starts[-1] + 800_000 - starts[0]
    assert r.get("step_time").base == 150_000


def test_cli_repeats(tmp_path, cli):
    base = [two_pe_run(tmp_path, f"b{i}", pe1_work=300, seed=30 + i, steps=2) for i in range(4)]
    cand = [two_pe_run(tmp_path, f"c{i}", pe1_work=200, seed=40 + i, steps=2) for i in range(4)]
    rep = [a for p in base[1:] for a in ("--baseline-repeat", p)] + [a for p in cand[1:] for a in ("--candidate-repeat", p)]
    rc, out, err = cli("compare", base[0], cand[0], *rep, "--json")
    assert rc == 0, err
    perf = json.loads(out)["performance"]
    mk = next(c for c in perf["changes"] if c["metric"] == "makespan")
    assert perf["runs_base"] == perf["runs_candidate"] == 4
    assert mk["verdict"] == "significant" and mk["basis"] == "runs" and mk["samples_base"] == 4
    rc, out, err = cli("compare", base[0], cand[0], "--candidate-repeat", tmp_path / "nope")
    assert rc == 2 and "nope" in err and len(err.strip().splitlines()) == 1
