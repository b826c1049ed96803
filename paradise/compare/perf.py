"""Did the change help? A trace diff: makespan, step time, per-PE busy/idle, per-entry time, volume.

Per-PE busy / idle and per-entry time are the overview's own figures (the ones `paradise
analyze` prints), totals over the run. Changes are ranked significant first. Where a figure's
time lies in steps (several on both sides), the change counts as significant when its median
per step moves by more than the run-to-run spread (|Δmedian| > SIGNIFICANCE_Z · standard error
of the difference, from each run's MAD, so that a few preempted steps do not hide a real
change); otherwise when the total moves by more than RELATIVE_THRESHOLD.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, field
from typing import Any

import pandas as pd

from paradise.engines import Engine, get_engine
from paradise.store import TraceHandle, open_trace

SIGNIFICANCE_Z = 2.0
"""About a 95% two-sided band for a normal difference of step medians."""
RELATIVE_THRESHOLD = 0.05
"""Without per-step samples, changes under 5% are treated as noise (run-to-run spread seen here: 2-5%)."""
MIN_STEPS = 3
"""Fewer steps than this give no usable spread."""
MAD_TO_SIGMA = 1.4826
"""MAD x 1.4826 estimates the standard deviation of a normal sample."""
MEDIAN_SE_FACTOR = 1.2533
"""sqrt(pi/2): standard error of the median relative to that of the mean, for normal samples."""
TOP_NAMES = 15
STEP_COVERAGE = 0.9
"""Per-step samples judge a total only when the steps hold at least this share of it (time
outside steps, such as idle rows or a coroutine main, would otherwise be judged by zeros)."""


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
    spread: float | None = None  # standard error of the difference, when steps give one
    statistic: str = "total"
    """What base and candidate are: "total" over the run, "median" or "mean" per step."""

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

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d["changes"] = [c.to_dict() for c in self.changes]
        return d

    def get(self, metric: str) -> Change | None:
        return next((c for c in self.changes if c.metric == metric), None)


def run_totals(engine: Engine, trace: TraceHandle) -> dict[str, pd.DataFrame]:
    """Per-PE busy / idle and per-entry-name time of the run, from the overview analysis itself
    (paradise.analyses.overview): one result read by analyze, report and compare alike."""
    from paradise.analyses import overview
    from paradise.analyses.base import AnalysisConfig
    from paradise.analyses.session import Session

    r = overview.analyze(Session(engine, trace), AnalysisConfig(options={"top": 1 << 62})).sections
    pe = pd.DataFrame(r["per_pe"], columns=["pe", "busy_ns", "idle_ns"]).dropna(subset=["pe"])
    ent = pd.DataFrame(r["top_entries"], columns=["name", "total_ns"]).dropna(subset=["name"])
    return {"pe_totals": pe.groupby("pe")[["busy_ns", "idle_ns"]].sum().astype(float),
            "name_totals": ent.groupby("name")["total_ns"].sum().astype(float)}


def _tables(engine: Engine, trace: TraceHandle) -> dict[str, pd.DataFrame]:
    return {
        "pe_step": engine.query("compare_pe_step").to_pandas(),
        "name_step": engine.query("compare_name_step").to_pandas(),
        "comm": engine.query("compare_comm").to_pandas(),
        **run_totals(engine, trace),
    }


def _step_durations(pe_step: pd.DataFrame) -> pd.Series:
    s = pe_step.dropna(subset=["step"])
    if s.empty:
        return pd.Series(dtype=float)
    g = s.groupby("step")
    return (g["t_max"].max() - g["t_min"].min()).astype(float)


def _median_se(x: pd.Series) -> float:
    """Standard error of a median from the MAD: robust to the preemption spikes of shared machines."""
    mad = float((x - x.median()).abs().median())
    return MEDIAN_SE_FACTOR * MAD_TO_SIGMA * mad / math.sqrt(len(x))


def _change(metric: str, unit: str, b: pd.Series | float, c: pd.Series | float, per_step: bool) -> Change:
    """Compares totals (or step medians) and decides significance from the step spread."""
    if per_step and isinstance(b, pd.Series) and isinstance(c, pd.Series) and min(len(b), len(c)) >= MIN_STEPS:
        mb, mc = float(b.median()), float(c.median())
        se = math.sqrt(_median_se(b) ** 2 + _median_se(c) ** 2)
        delta = mc - mb
        sig = abs(delta) > SIGNIFICANCE_Z * se if se > 0 else delta != 0
        return Change(metric, mb, mc, unit, delta, delta / mb if mb else None, bool(sig), se, "median")
    vb = float(b.sum()) if isinstance(b, pd.Series) else float(b)
    vc = float(c.sum()) if isinstance(c, pd.Series) else float(c)
    delta = vc - vb
    rel = delta / vb if vb else None
    sig = (abs(rel) > RELATIVE_THRESHOLD) if rel is not None else delta != 0
    return Change(metric, vb, vc, unit, delta, rel, bool(sig))


def _per_step(df: pd.DataFrame, key: str, value: str, k: Any) -> pd.Series:
    rows = df[(df[key] == k)]
    return rows.dropna(subset=["step"]).groupby("step")[value].sum().astype(float)


def _total_change(metric: str, b: float, c: float, sb: pd.Series, sc: pd.Series) -> Change:
    """A run total compared: base and candidate are the totals; the per-step samples decide
    significance when there are enough of them and the steps hold the total (STEP_COVERAGE)."""
    total = _change(metric, "ns", b, c, per_step=False)
    in_steps = (min(len(sb), len(sc)) >= MIN_STEPS and float(sb.sum()) >= STEP_COVERAGE * b
                and float(sc.sum()) >= STEP_COVERAGE * c)
    if not in_steps:
        return total
    med = _change(metric, "ns", sb, sc, per_step=True)
    total.significant, total.spread = med.significant, med.spread
    return total


def _total(table: pd.DataFrame | pd.Series, key: Any, col: str | None = None) -> float:
    if key not in table.index:
        return 0.0
    return float(table.loc[key, col] if col is not None else table.loc[key])


def diff_tables(tb: dict[str, pd.DataFrame], tc: dict[str, pd.DataFrame]) -> list[Change]:
    """All changes between two sets of stage-1 tables, significant ones first, then by size."""
    changes: list[Change] = []
    pb, pc = tb["pe_step"], tc["pe_step"]
    span_b = float(pb["t_max"].max() - pb["t_min"].min()) if len(pb) else 0.0
    span_c = float(pc["t_max"].max() - pc["t_min"].min()) if len(pc) else 0.0
    changes.append(_change("makespan", "ns", span_b, span_c, per_step=False))
    sb, sc = _step_durations(pb), _step_durations(pc)
    use_steps = min(len(sb), len(sc)) >= MIN_STEPS
    if use_steps:
        changes.append(_change("step_time", "ns", sb, sc, per_step=True))
    elif len(sb) and len(sc):  # too few steps for a spread: the mean step, judged like a total
        mean = _change("step_time", "ns", float(sb.mean()), float(sc.mean()), per_step=False)
        mean.statistic = "mean"
        changes.append(mean)
    none = pd.Series(dtype=float)
    ptb, ptc = tb["pe_totals"], tc["pe_totals"]
    for pe in sorted(set(ptb.index) | set(ptc.index)):
        for col, label in (("busy_ns", "busy"), ("idle_ns", "idle")):
            sb, sc = (_per_step(pb, "pe", col, pe), _per_step(pc, "pe", col, pe)) if use_steps else (none, none)
            changes.append(_total_change(f"pe{int(pe)}.{label}", _total(ptb, pe, col), _total(ptc, pe, col), sb, sc))
    nb, nc = tb["name_step"], tc["name_step"]
    totals = pd.concat([tb["name_totals"], tc["name_totals"]], axis=1).fillna(0)
    top = totals.max(axis=1).sort_values(ascending=False, kind="stable").head(TOP_NAMES).index
    for name in top:
        sb, sc = (_per_step(nb, "name", "total_ns", name), _per_step(nc, "name", "total_ns", name)) if use_steps \
            else (none, none)
        changes.append(_total_change(f"entry:{name}", _total(tb["name_totals"], name), _total(tc["name_totals"], name),
                                     sb, sc))
    for kind in ("send", "collective"):
        cb, cc = tb["comm"], tc["comm"]
        b_rows, c_rows = cb[cb["kind"] == kind], cc[cc["kind"] == kind]
        if len(b_rows) or len(c_rows):
            changes.append(_change(f"{kind}.messages", "count", b_rows["messages"].sum(), c_rows["messages"].sum(), False))
            changes.append(_change(f"{kind}.bytes", "bytes", b_rows["bytes"].sum(), c_rows["bytes"].sum(), False))
            wb, wc = b_rows["wire_messages"].sum(), c_rows["wire_messages"].sum()
            if kind == "send" and (wb != b_rows["messages"].sum() or wc != c_rows["messages"].sum()):
                # comm.json combining: the program's messages travelled in fewer runtime messages
                changes.append(_change("send.messages_on_wire", "count", wb, wc, False))
    if len(cb := tb["comm"]) or len(tc["comm"]):
        cross_b = cb[(cb["kind"] == "send") & cb["peer_pe"].notna() & (cb["peer_pe"] != cb["pe"])]["bytes"].sum()
        cc = tc["comm"]
        cross_c = cc[(cc["kind"] == "send") & cc["peer_pe"].notna() & (cc["peer_pe"] != cc["pe"])]["bytes"].sum()
        if cross_b or cross_c:
            changes.append(_change("send.bytes_cross_pe", "bytes", cross_b, cross_c, False))
    changes.sort(key=lambda ch: (not ch.significant, -abs(ch.relative or 0.0)))
    return changes


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


def compare_traces(base: str | TraceHandle, candidate: str | TraceHandle, *, engine: str = "duckdb") -> TraceComparison:
    """Diff of two traces of the same program."""
    tb_h = base if isinstance(base, TraceHandle) else open_trace(base)
    tc_h = candidate if isinstance(candidate, TraceHandle) else open_trace(candidate)
    eb, ec = get_engine(tb_h, engine), get_engine(tc_h, engine)
    try:
        tb, tc = _tables(eb, tb_h), _tables(ec, tc_h)
    finally:
        eb.close()
        ec.close()
    return TraceComparison(
        base=str(tb_h.path),
        candidate=str(tc_h.path),
        program_base=tb_h.program,
        program_candidate=tc_h.program,
        steps_base=int(tb["pe_step"]["step"].nunique()),
        steps_candidate=int(tc["pe_step"]["step"].nunique()),
        changes=diff_tables(tb, tc),
        step_diff=step_diff(tb["name_step"], tc["name_step"]),
    )
