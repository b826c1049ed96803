"""What-if replay: predict the next run's makespan under a proposed mapping and priorities.

The trace's executions and messages are replayed (sim.py) with their measured costs and a
message cost fitted from the trace (model.py). The baseline replay (the run's own placement)
calibrates the prediction: predicted = measured x replay(proposal) / replay(current).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from paradise.whatif.model import ExecGraph, LatencyModel, exec_graph, fit_latency, pe_under, robust_cost
from paradise.whatif.sim import SimResult, simulate

__all__ = ["Replayer", "ExecGraph", "LatencyModel", "SimResult", "load_replayer", "predict_from_hints"]


@dataclass
class Replayer:
    """A trace's exec DAG and latency model, ready to replay proposals against the baseline."""

    graph: ExecGraph
    model: LatencyModel
    pes: int
    _baseline: SimResult | None = None

    @property
    def baseline(self) -> SimResult:
        if self._baseline is None:
            self._baseline = simulate(self.graph, self.graph.pe, self.model, pes=self.pes)
        return self._baseline

    def priorities(self, entries: dict[str, int] | None) -> np.ndarray | None:
        """Per-exec priority (lower runs first) from {"Coll#k.entry" or "entry": prio}."""
        if not entries:
            return None
        out = np.zeros(self.graph.n, np.int64)
        for i, (c, nm) in enumerate(zip(self.graph.coll, self.graph.name)):  # setup lookups
            key = f"{c}.{nm}" if c else str(nm)
            out[i] = entries.get(key, entries.get(str(nm), 0))
        return out

    def replay(self, mapping: dict[str, dict[str, int]] | None = None,
               priorities: dict[str, int] | None = None) -> dict[str, Any]:
        """Predicted makespan and per-PE load of the proposal, with the baseline beside it."""
        g = self.graph
        pe = pe_under(g, mapping)
        if int(pe.max(initial=0)) >= self.pes or int(pe.min(initial=0)) < 0:
            raise ValueError(f"mapping places objects on PEs outside 0..{self.pes - 1}")
        sim = simulate(g, pe, self.model, self.priorities(priorities), pes=self.pes)
        base = self.baseline
        measured = g.makespan_ns
        ratio = sim.makespan_ns / base.makespan_ns if base.makespan_ns else 1.0
        return {
            "measured_makespan_ns": measured,
            "baseline_replay_makespan_ns": base.makespan_ns,
            "replay_makespan_ns": sim.makespan_ns,
            "predicted_makespan_ns": int(round(measured * ratio)),
            "predicted_speedup": round(1.0 / ratio, 4) if ratio else None,
            "pe_load_ns": sim.pe_load(g.cost, self.pes),
            "baseline_pe_load_ns": base.pe_load(g.cost, self.pes),
            "execs": g.n,
            "model": self.model.to_dict(),
        }


REPLAY_MAX_EXECS = 2_000_000
"""Larger traces are not replayed (minutes of simulation): no mapping or schedule candidate is
judged, and the event layer's lean exec graph replaces the replay graph."""

CALIBRATION_SCALES = (0.0, 0.05, 0.1, 0.2, 0.35, 0.5, 0.75, 1.0, 1.5, 2.0, 3.0)
"""Multipliers of the fitted cross-PE latency tried so that the baseline replay matches the
measured makespan: idle-receiver gaps include OS wake-up that busy receivers do not pay.
Not beyond 3x: a replay that needs a 10x message cost to last as long as the run is missing
time that is not messages (seen on a loaded machine: the OS descheduling the busy PE between
executions), and charging it to messages would punish every mapping that cuts an edge."""
CALIBRATION_TOLERANCE = 0.005
"""A scale replaces one nearer to 1 only when its replay is closer to the run by 0.5 % of it."""
CALIBRATE_MAX_EXECS = 200_000
"""Above this many execs the fitted model is used as is (each calibration step is a replay)."""


def calibrate(g: ExecGraph, model: LatencyModel, pes: int) -> LatencyModel:
    """The scaled model whose baseline replay comes closest to the measured makespan.

    Tried: the fitted latency scaled by CALIBRATION_SCALES, with the median gap between
    executions on a busy PE (the scheduler's cost) and then with the mean gap (which also holds
    the time a loaded machine took from a busy PE between executions, and moves with the work)."""
    from dataclasses import replace

    if g.n == 0 or g.n > CALIBRATE_MAX_EXECS or model.samples == 0:
        return model
    best, best_err = model, None
    tolerance = CALIBRATION_TOLERANCE * g.makespan_ns
    overheads = [model.overhead_ns]
    if model.overhead_mean_ns > model.overhead_ns:
        overheads.append(model.overhead_mean_ns)
    for ovh in overheads:
        for k in sorted(CALIBRATION_SCALES, key=lambda k: (abs(k - 1.0), k)):  # the fit first
            m = replace(model, a_ns=model.a_ns * k, ns_per_byte=model.ns_per_byte * k, overhead_ns=ovh)
            err = abs(simulate(g, g.pe, m, pes=pes).makespan_ns - g.makespan_ns)
            if best_err is None or err < best_err - tolerance:
                best, best_err = m, err
            if best_err <= tolerance:
                return best  # the fitted model (or the scale nearest to it) already reproduces the run
    return best


def load_replayer(engine: Any, pes: int | None = None) -> Replayer:
    """Runs the exec-graph query, fits the message cost and calibrates it on the run itself."""
    from dataclasses import replace

    g = exec_graph(engine.query("scheduling_exec_graph"))
    npes = int(max(pes or 0, (g.pe.max() + 1) if g.n else 1))
    model = calibrate(g, fit_latency(g), npes)  # on the measured costs: it must reproduce the run
    # proposals are replayed with preemption spikes clipped (robust_cost); the baseline is
    # replayed the same way, so predicted = measured x replay(proposal) / replay(current)
    return Replayer(graph=replace(g, cost=robust_cost(g)), model=model, pes=npes)


def _load(path: Path, kind: str, trace: Any, pes: int) -> dict[str, Any] | None:
    from hints.format import HintError, load_hint
    from paradise.errors import HintMismatch

    if not path.exists():
        return None
    try:
        doc = load_hint(path, kind, program=trace.program, pes=pes)
    except HintError as exc:
        raise HintMismatch(str(exc)) from None
    fp = doc.get("provenance", {}).get("trace_fingerprint")
    if fp and fp != trace.fingerprint:
        raise HintMismatch(f"{path}: made for trace {fp}, not this trace ({trace.fingerprint})")
    return doc


def _check_mapping(path: Path, doc: dict[str, Any], pes: int) -> dict[str, dict[str, int]]:
    from paradise.errors import HintMismatch

    colls = doc.get("collections")
    if not isinstance(colls, dict):
        raise HintMismatch(f"{path}: damaged mapping hint ('collections' is not an object)")
    for coll, objs in colls.items():
        if not isinstance(objs, dict):
            raise HintMismatch(f"{path}: damaged mapping hint (collection {coll!r} is not an object)")
        for idx, pe in objs.items():
            if not isinstance(pe, int) or isinstance(pe, bool) or not 0 <= pe < pes:
                raise HintMismatch(f"{path}: {coll} {idx} mapped to PE {pe!r}, not one of 0..{pes - 1}")
    return colls


def _check_schedule(path: Path, doc: dict[str, Any]) -> dict[str, int]:
    from paradise.errors import HintMismatch

    prios = doc.get("priorities")
    if not isinstance(prios, list):
        raise HintMismatch(f"{path}: damaged schedule hint ('priorities' is not a list)")
    out: dict[str, int] = {}
    for p in prios:
        if not isinstance(p, dict) or not isinstance(p.get("prio"), int) or "entry" not in p:
            raise HintMismatch(f"{path}: damaged schedule hint (entry without 'entry' and integer 'prio')")
        key = f"{p['coll']}.{p['entry']}" if p.get("coll") else str(p["entry"])
        out[key] = int(p["prio"])
    return out


def predict_from_hints(engine: Any, trace: Any, hints_dir: str | Path) -> dict[str, Any]:
    """Replays the trace under the mapping.json / schedule.json found in `hints_dir`."""
    from paradise.errors import HintMismatch

    d = Path(hints_dir)
    if not d.is_dir():
        raise HintMismatch(f"{d}: no such hints directory")
    pes = int(trace.metadata.get("pes") or len(trace.metadata.get("pes_seen", [])) or 1)
    mdoc = _load(d / "mapping.json", "mapping", trace, pes)
    sdoc = _load(d / "schedule.json", "schedule", trace, pes)
    if mdoc is None and sdoc is None:
        raise HintMismatch(f"{d}: holds neither mapping.json nor schedule.json")
    mapping = _check_mapping(d / "mapping.json", mdoc, pes) if mdoc else None
    prios = _check_schedule(d / "schedule.json", sdoc) if sdoc else None
    rp = load_replayer(engine, pes)
    out = rp.replay(mapping, prios)
    out["hints"] = [k for k, doc in (("mapping", mdoc), ("schedule", sdoc)) if doc]
    out["pes"] = rp.pes
    return out
