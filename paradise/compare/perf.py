"""Did the change help? A trace diff: makespan, step time, per-PE busy/idle, per-entry time, volume.

A change is called significant only from distributions: per-step samples on both sides, or one
sample per run when repeats of each side are given. The test is a two-sided Mann-Whitney U test
at ALPHA (95 % confidence); two single numbers (one run each, no steps) are shown as "one run
each" and never called significant. Significant changes are listed first.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from math import comb
from pathlib import Path
from typing import Any

import pandas as pd

from paradise.compare.stats import mann_whitney_u
from paradise.engines import Engine
from paradise.engines.busy import pe_time
from paradise.store import TraceHandle

ALPHA = 0.05
"""Two-sided significance level of the Mann-Whitney U test: 95 % confidence."""
TEST_NAME = "Mann-Whitney U, two-sided, alpha 0.05"
MIN_STEPS = 3
"""Fewer steps than this on either side: figures are compared per run instead of per step."""
TOP_NAMES = 15
RELATIVE_THRESHOLD = 0.05
"""Per-step diff only: an op's time counts as changed when it differs by more than 5 %."""

SIGNIFICANT, WITHIN_NOISE, TOO_FEW, ONE_RUN_EACH = "significant", "within noise", "too few samples", "one run each"


@dataclass
class Change:
    """One compared figure."""

    metric: str
    base: float
    candidate: float
    unit: str
    delta: float
    relative: float | None
    significant: bool
    statistic: str = "total"
    """What base and candidate are: "total" of the run; "median" of the runs' totals (with repeats);
    step_time: "median" per step, or "mean" per step of each run (fewer than MIN_STEPS steps)."""
    verdict: str = ONE_RUN_EACH
    """significant / within noise / too few samples (no p-value below ALPHA possible) / one run each."""
    basis: str = "one run each"
    """Where the samples come from: "steps" (per-step samples of all runs), "runs", or "one run each"."""
    samples_base: int = 1
    samples_candidate: int = 1
    p_value: float | None = None
    test: str | None = None

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass
class TraceComparison:
    base: str
    candidate: str
    program_base: str
    program_candidate: str
    steps_base: int
    steps_candidate: int
    changes: list[Change] = field(default_factory=list)
    step_diff: list[dict[str, Any]] = field(default_factory=list)
    """Per step (k-th step of each run), the ops added, removed and changed (see step_diff)."""
    runs_base: int = 1
    runs_candidate: int = 1
    repeats_base: list[str] = field(default_factory=list)
    repeats_candidate: list[str] = field(default_factory=list)
    test: str = TEST_NAME

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d["changes"] = [c.to_dict() for c in self.changes]
        return d

    def get(self, metric: str) -> Change | None:
        return next((c for c in self.changes if c.metric == metric), None)


Tables = dict[str, pd.DataFrame]


def _tables(engine: Engine) -> Tables:
    return {
        "pe_step": engine.query("compare_pe_step").to_pandas(),
        "name_step": engine.query("compare_name_step").to_pandas(),
        "comm": engine.query("compare_comm").to_pandas(),
        "pe_time": pe_time(engine).to_pandas(),  # the one accounting of PE time
    }


def step_durations(pe_step: pd.DataFrame) -> pd.Series:
    """Step time per step: from the step's first start (any PE) to the next step's first start; the
    last step ends at the last end of its rows. Steps so defined never overlap and add up to the
    iterations (first step's start to the last step's end), even when a runtime without barriers
    (Charm) runs rows of several steps at once."""
    s = pe_step.dropna(subset=["step"])
    if s.empty:
        return pd.Series(dtype=float)
    g = s.groupby("step")
    start, end = g["t_min"].min().sort_index(), g["t_max"].max().sort_index()
    nxt = start.shift(-1)
    nxt.iloc[-1] = max(float(end.iloc[-1]), float(start.iloc[-1]))
    return (nxt - start).astype(float)


def _verdict(b: Sequence[float], c: Sequence[float]) -> tuple[str, float | None]:
    """The verdict for two samples, and the test's p-value."""
    if len(b) < 2 and len(c) < 2:
        return ONE_RUN_EACH, None
    if min(len(b), len(c)) < 1:
        return TOO_FEW, None
    p = mann_whitney_u(list(b), list(c)).p_value
    if 2 / comb(len(b) + len(c), len(b)) >= ALPHA:  # the smallest p these sizes allow
        return TOO_FEW, p
    return (SIGNIFICANT if p < ALPHA else WITHIN_NOISE), p


def _change(metric: str, unit: str, b: Sequence[float], c: Sequence[float], basis: str) -> Change:
    """Compares two samples (per-step values, one value per run, or one value each)."""
    sb, sc = pd.Series(list(b), dtype=float), pd.Series(list(c), dtype=float)
    single = len(sb) == 1 and len(sc) == 1
    vb = float(sb.iloc[0]) if single else float(sb.median()) if len(sb) else 0.0
    vc = float(sc.iloc[0]) if single else float(sc.median()) if len(sc) else 0.0
    verdict, p = _verdict(sb.tolist(), sc.tolist())
    delta = vc - vb
    stat = "total" if single else "median"
    return Change(metric, vb, vc, unit, delta, delta / vb if vb else None, verdict == SIGNIFICANT, stat, verdict,
                  basis if not single else ONE_RUN_EACH, len(sb), len(sc), p,
                  TEST_NAME if verdict != ONE_RUN_EACH else None)


def _steps_of(df: pd.DataFrame, key: str, value: str, k: Any) -> list[float]:
    rows = df[(df[key] == k)]
    return rows.dropna(subset=["step"]).groupby("step")[value].sum().astype(float).tolist()


def _pooled(runs: list[Tables], table: str, key: str, value: str, k: Any) -> list[float]:
    """Per-step values of one figure, from every run of a side."""
    return [v for t in runs for v in _steps_of(t[table], key, value, k)]


def _totals(runs: list[Tables], table: str, key: str, value: str, k: Any) -> list[float]:
    """One total per run."""
    return [float(t[table].loc[t[table][key] == k, value].sum()) for t in runs]


STEPPED_SHARE = 0.5
"""A per-PE or per-entry figure is tested on per-step samples only when rows inside steps hold at
least this share (most) of its total on both sides; else the steps would test too small a part of it."""


def _figure(metric: str, rb: list[Tables], rc: list[Tables], table: str, key: str, value: str, k: Any,
            use_steps: bool, totals: str | None = None) -> Change:
    """A per-PE or per-entry figure: base and candidate are run totals (median over runs), the
    figure every other view shows (from table `totals` when given: a PE's busy and idle time as
    overview_pe_time accounts them); the test runs on per-step samples when the steps hold the
    figure on both sides, else on one total per run."""
    tb, tc = _totals(rb, totals or table, key, value, k), _totals(rc, totals or table, key, value, k)
    pb, pc = (_pooled(rb, table, key, value, k), _pooled(rc, table, key, value, k)) if use_steps else ([], [])

    def stepped(samples: list[float], totals: list[float]) -> bool:
        return len(samples) >= MIN_STEPS and sum(samples) >= STEPPED_SHARE * sum(totals)

    ch = _change(metric, "ns", pb, pc, "steps") if stepped(pb, tb) and stepped(pc, tc) else _change(
        metric, "ns", tb, tc, "runs")
    vb, vc = float(pd.Series(tb).median()), float(pd.Series(tc).median())
    ch.base, ch.candidate, ch.delta, ch.relative = vb, vc, vc - vb, (vc - vb) / vb if vb else None
    ch.statistic = "total" if len(tb) == len(tc) == 1 else "median"
    return ch


def _makespan(t: Tables) -> float:
    p = t["pe_step"]
    return float(p["t_max"].max() - p["t_min"].min()) if len(p) else 0.0


def _comm_figures(t: Tables) -> dict[str, float]:
    cb = t["comm"]
    out: dict[str, float] = {}
    for kind in ("send", "collective"):
        rows = cb[cb["kind"] == kind]
        if len(rows):
            out[f"{kind}.messages"] = float(rows["messages"].sum())
            out[f"{kind}.bytes"] = float(rows["bytes"].sum())
            if kind == "send" and rows["wire_messages"].sum() != rows["messages"].sum():
                # comm.json combining: the program's messages travelled in fewer runtime messages
                out["send.messages_on_wire"] = float(rows["wire_messages"].sum())
    if len(cb):
        cross = cb[(cb["kind"] == "send") & cb["peer_pe"].notna() & (cb["peer_pe"] != cb["pe"])]["bytes"].sum()
        if cross:
            out["send.bytes_cross_pe"] = float(cross)
    return out


def _comm_changes(rb: list[Tables], rc: list[Tables]) -> list[Change]:
    fb, fc = [_comm_figures(t) for t in rb], [_comm_figures(t) for t in rc]
    names = dict.fromkeys(k for f in fb + fc for k in f)
    if "send.messages_on_wire" in names:  # shown for both sides when either combined
        for f in fb + fc:
            f.setdefault("send.messages_on_wire", f.get("send.messages", 0.0))
    out = []
    for name in names:
        unit = "bytes" if name.endswith("bytes") or name.endswith("bytes_cross_pe") else "count"
        out.append(_change(name, unit, [f.get(name, 0.0) for f in fb], [f.get(name, 0.0) for f in fc], "runs"))
    return out


def diff_runs(rb: list[Tables], rc: list[Tables]) -> list[Change]:
    """All changes between the runs of two sides (each a list of stage-1 tables), significant first."""
    changes = [_change("makespan", "ns", [_makespan(t) for t in rb], [_makespan(t) for t in rc], "runs")]
    sb = [d for t in rb for d in step_durations(t["pe_step"]).tolist()]
    sc = [d for t in rc for d in step_durations(t["pe_step"]).tolist()]
    use_steps = min(len(sb), len(sc)) >= MIN_STEPS
    if use_steps:
        changes.append(_change("step_time", "ns", sb, sc, "steps"))
    elif sb and sc:  # too few steps for a distribution: the mean step per run, judged per run
        mean = _change("step_time", "ns", [step_durations(t["pe_step"]).mean() for t in rb],
                       [step_durations(t["pe_step"]).mean() for t in rc], "runs")
        mean.statistic = "mean"
        changes.append(mean)
    pes = sorted(set().union(*(set(t["pe_step"]["pe"]) for t in rb + rc)))
    for pe in pes:
        for col, label in (("busy_ns", "busy"), ("idle_ns", "idle")):
            changes.append(_figure(f"pe{int(pe)}.{label}", rb, rc, "pe_step", "pe", col, pe, use_steps, "pe_time"))
    totals = pd.concat([t["name_step"].groupby("name")["total_ns"].sum() for t in rb + rc], axis=1).fillna(0)
    for name in totals.max(axis=1).sort_values(ascending=False).head(TOP_NAMES).index:
        changes.append(_figure(f"entry:{name}", rb, rc, "name_step", "name", "total_ns", name, use_steps))
    changes.extend(_comm_changes(rb, rc))
    changes.sort(key=lambda ch: (not ch.significant, -abs(ch.relative or 0.0)))
    return changes


def diff_tables(tb: Tables, tc: Tables) -> list[Change]:
    """All changes between one run of each side."""
    return diff_runs([tb], [tc])


STEP_DIFF_STEPS = 50
"""Steps listed in the per-step diff (the first ones of each run, paired in order)."""
STEP_DIFF_OPS = 20
"""Ops listed per step and list (added, removed, changed), largest time first."""


def step_diff(nb: pd.DataFrame, nc: pd.DataFrame) -> list[dict[str, Any]]:
    """Ops added, removed and changed per step: the k-th step of each run is paired (step numbers
    may differ between runs); changed = a different call count, or time off by > RELATIVE_THRESHOLD."""
    sb = sorted(nb["step"].dropna().unique())[:STEP_DIFF_STEPS]
    sc = sorted(nc["step"].dropna().unique())[:STEP_DIFF_STEPS]
    out = []
    for k, (b_step, c_step) in enumerate(zip(sb, sc)):
        b = nb[nb["step"] == b_step].groupby("name")[["calls", "total_ns"]].sum()
        c = nc[nc["step"] == c_step].groupby("name")[["calls", "total_ns"]].sum()
        m = b.add_suffix("_base").join(c.add_suffix("_candidate"), how="outer").fillna(0)
        added = m[(m["calls_base"] == 0) & (m["calls_candidate"] > 0)]
        removed = m[(m["calls_candidate"] == 0) & (m["calls_base"] > 0)]
        both = m[(m["calls_base"] > 0) & (m["calls_candidate"] > 0)]
        rel = (both["total_ns_candidate"] - both["total_ns_base"]).abs() / both["total_ns_base"].where(
            both["total_ns_base"] > 0)
        changed = both[(both["calls_base"] != both["calls_candidate"]) | (rel > RELATIVE_THRESHOLD)]

        def rows(df: pd.DataFrame, key: str) -> list[dict[str, Any]]:
            df = df.assign(_k=df[key].abs()).sort_values(["_k"], ascending=False).head(STEP_DIFF_OPS)
            return [{"name": str(n), "calls_base": int(r.calls_base), "calls_candidate": int(r.calls_candidate),
                     "total_ns_base": int(r.total_ns_base), "total_ns_candidate": int(r.total_ns_candidate)}
                    for n, r in df.iterrows()]  # fmt: skip

        delta = changed["total_ns_candidate"] - changed["total_ns_base"]
        out.append({
            "index": k, "step_base": int(b_step), "step_candidate": int(c_step),
            "added": rows(added, "total_ns_candidate"), "removed": rows(removed, "total_ns_base"),
            "changed": rows(changed.assign(delta=delta), "delta"),
            "counts": {"added": len(added), "removed": len(removed), "changed": len(changed)},
        })  # fmt: skip
    return out


def _run_tables(trace: str | Path | TraceHandle, engine: str,
                memory_limit: int | None) -> tuple[TraceHandle, Tables]:
    from paradise.run import open_run

    with open_run(trace, engine=engine, memory_limit=memory_limit) as session:
        return session.trace, _tables(session.engine)


def compare_traces(base: str | Path | TraceHandle, candidate: str | Path | TraceHandle, *, engine: str = "duckdb",
                   base_repeats: Sequence[str | Path] = (),
                   candidate_repeats: Sequence[str | Path] = (),
                   memory_limit: int | None = None) -> TraceComparison:
    """Diff of two traces of the same program; repeats are further runs of each side, which give
    run-level figures (makespan, totals, volume) a distribution. Each trace is read in turn within
    `memory_limit` (bytes; the engines' default when None)."""
    tb_h, tb = _run_tables(base, engine, memory_limit)
    tc_h, tc = _run_tables(candidate, engine, memory_limit)
    rb = [tb] + [_run_tables(p, engine, memory_limit)[1] for p in base_repeats]
    rc = [tc] + [_run_tables(p, engine, memory_limit)[1] for p in candidate_repeats]
    return TraceComparison(
        base=str(tb_h.path),
        candidate=str(tc_h.path),
        program_base=tb_h.program,
        program_candidate=tc_h.program,
        steps_base=int(tb["pe_step"]["step"].nunique()),
        steps_candidate=int(tc["pe_step"]["step"].nunique()),
        changes=diff_runs(rb, rc),
        step_diff=step_diff(tb["name_step"], tc["name_step"]),
        runs_base=len(rb),
        runs_candidate=len(rc),
        repeats_base=[str(p) for p in base_repeats],
        repeats_candidate=[str(p) for p in candidate_repeats],
    )
