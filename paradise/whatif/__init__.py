"""What-if replay: predict the next run's makespan under a proposed mapping and priorities.

The trace's executions and messages are replayed (sim.py) with their measured costs and a
message cost fitted from the trace (model.py). The baseline replay (the run's own placement)
calibrates the prediction: predicted = measured x replay(proposal) / replay(current).
"""

from __future__ import annotations

import math
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from paradise.events.execgraph import LatencyModel, view
from paradise.whatif.model import ExecGraph, exec_graph, pe_under, robust_cost
from paradise.whatif.sim import SimResult, simulate

__all__ = ["Replayer", "ExecGraph", "LatencyModel", "SimResult", "load_hints", "not_replayed", "predict",
           "predict_from_hints", "replay_graph", "replay_limit", "replay_room"]


@dataclass
class Replayer:
    """A trace's exec DAG and latency model, ready to replay proposals against the baseline."""

    graph: ExecGraph
    model: LatencyModel
    pes: int
    _baseline: SimResult | None = None

    @classmethod
    def from_session(cls, session: Any) -> Replayer:
        """The replayer of a run: the session's exec graph as arrays and its latency fit, calibrated
        on the run itself (the baseline replay must reproduce the measured makespan)."""
        from dataclasses import replace

        g = replay_graph(session)
        npes = int(max(stated_pes(session.trace), (g.pe.max() + 1) if g.n else 1))
        model = calibrate(g, session.get("latency_fit"), npes)  # on the measured costs
        # proposals are replayed with preemption spikes clipped (robust_cost); the baseline is
        # replayed the same way, so predicted = measured x replay(proposal) / replay(current)
        return cls(graph=replace(g, cost=robust_cost(g)), model=model, pes=npes)

    @property
    def baseline(self) -> SimResult:
        if self._baseline is None:
            self._baseline = simulate(self.graph, self.graph.pe, self.model, pes=self.pes)
        return self._baseline

    def priorities(self, entries: dict[str, int] | None) -> np.ndarray | None:
        """Per-exec priority (lower runs first) from {"Coll#k.entry" or "entry": prio}."""
        if not entries:
            return None
        pairs = self.graph.entries  # looked up once per (collection, entry), not per exec
        per_entry = np.array([entries.get(f"{c}.{nm}" if c else str(nm), entries.get(str(nm), 0))
                              for c, nm in zip(pairs["coll"], pairs["name"])], np.int64)
        return per_entry[self.graph.entry]

    def combined(self, streams: list[dict[str, Any]] | None) -> tuple[np.ndarray | None, dict[str, Any]]:
        """Per-exec scheduler cost when comm.json's streams are combined, and the message counts.

        A combined message is one whose (sending PE, receiving PE, entry) is a listed stream. The
        messages one sending exec puts on a stream leave in ceil(n / batch) batches, and each batch
        pays the fitted per-message cost (the scheduler's dispatch, model.overhead_ns) once."""
        g = self.graph
        if not streams:
            return None, {}
        import pandas as pd

        # entry names as codes: str(None) names an exec without one, as a hint names it
        name_code, names = pd.factorize(g.entries["name"].map(lambda v: str(v) if v is not None else "None"))
        code_of = {str(v): k for k, v in enumerate(names)}
        listed = pd.DataFrame([(int(s["src_pe"]), int(s["dst_pe"]), code_of[str(s["entry"])], int(s["batch"]))
                               for s in streams if str(s["entry"]) in code_of],
                              columns=["src_pe", "pe", "name", "batch"]).astype(np.int64)
        listed = listed.drop_duplicates(["src_pe", "pe", "name"], keep="last")  # a later stream wins
        has = g.src >= 0
        ex = pd.DataFrame({"src_pe": g.src_pe, "pe": g.pe, "name": np.asarray(name_code, np.int64)[g.entry]})
        batch = ex.merge(listed, on=["src_pe", "pe", "name"], how="left")["batch"].fillna(0).to_numpy(np.int64)
        batch[~has] = 0
        hit = batch > 1
        ovh = np.full(g.n, float(self.model.overhead_ns))
        before = int(has.sum())
        after = before
        if hit.any():
            df = pd.DataFrame({"src": g.src[hit], "pe": g.pe[hit], "batch": batch[hit],
                               "name": ex["name"].to_numpy()[hit]})
            grp = df.groupby(["src", "pe", "name", "batch"]).size().rename("n").reset_index()
            grp["batches"] = -(-grp["n"] // grp["batch"])
            share = df.merge(grp, on=["src", "pe", "name", "batch"], how="left")
            ovh[hit] = self.model.overhead_ns * (share["batches"] / share["n"]).to_numpy()
            after = before - int(grp["n"].sum()) + int(grp["batches"].sum())
        info = {"messages_before": before, "messages_after": after, "combined_messages": int(hit.sum()),
                "per_message_ns": round(float(self.model.overhead_ns), 1)}
        return ovh, info

    def replay(self, mapping: dict[str, dict[str, int]] | None = None,
               priorities: dict[str, int] | None = None,
               combine: list[dict[str, Any]] | None = None) -> dict[str, Any]:
        """Predicted makespan and per-PE load of the proposal, with the baseline beside it."""
        g = self.graph
        pe = pe_under(g, mapping)
        if int(pe.max(initial=0)) >= self.pes or int(pe.min(initial=0)) < 0:
            raise ValueError(f"mapping places objects on PEs outside 0..{self.pes - 1}")
        ovh, comm = self.combined(combine)
        sim = simulate(g, pe, self.model, self.priorities(priorities), pes=self.pes, overhead_ns=ovh)
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
            **({"comm": comm} if comm else {}),
        }


REPLAY_MAX_EXECS = 2_000_000
"""Larger traces are not replayed: no mapping or schedule candidate is judged, and the event
layer's lean exec graph replaces the replay graph (the replay's copy of the exec graph in the
client's memory, about 2 GiB at this count)."""
REPLAY_BYTES_PER_EXEC = 1024
"""Client memory the replay holds per exec (its graph's arrays and names, the loop's inputs, a
proposal's lookups): 470-700 B measured (peak RSS growth at 2*10^5 and 1.8*10^6 execs under budgets
of 1 and 20 GiB); 1 KiB leaves room."""
CLIENT_RESERVE_BYTES = 256 << 20
"""The part of the client's memory the replay leaves to everything else (libraries, Arrow results)."""


def _budget_parts(engine: Any) -> tuple[int, int]:
    """The memory budget on `engine` and the engine's share of it in this process (the embedded
    engine's; a Dask engine's is on its workers)."""
    from paradise.memory import default_memory_limit

    budget = int(getattr(engine, "memory_limit", None) or default_memory_limit())
    return budget, int(engine.step_memory()) if getattr(engine, "native_steps", False) else 0


def replay_room(engine: Any) -> int:
    """The most execs whose replay the memory budget holds on `engine`: the budget less the
    engine's share in this process and a reserve, at REPLAY_BYTES_PER_EXEC."""
    from paradise.memory import client_room

    return client_room(*_budget_parts(engine), CLIENT_RESERVE_BYTES) // REPLAY_BYTES_PER_EXEC


def replay_limit(engine: Any) -> int:
    """The most execs `analyze` replays on `engine`: REPLAY_MAX_EXECS, or fewer where the memory
    budget holds fewer (replay_room)."""
    return int(min(REPLAY_MAX_EXECS, replay_room(engine)))


def _budget_text(engine: Any) -> str:
    from paradise.units import binary_size

    budget = getattr(engine, "memory_limit", None)
    return f"--memory-limit {binary_size(budget)}" if budget else "the default memory budget"


def not_replayed(execs: int, engine: Any) -> str | None:
    """Why a trace of `execs` executions is not replayed on `engine` (a phrase), None when it is."""
    limit = replay_limit(engine)
    if execs <= limit:
        return None
    if limit == REPLAY_MAX_EXECS:
        return f"the trace is too large to replay ({execs:,} executions, the replay takes up to {limit:,})"
    return (f"the trace is too large to replay under {_budget_text(engine)} ({execs:,} executions, "
            f"it leaves room for {limit:,})")

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


def stated_pes(trace: Any) -> int:
    """The PE count hint files are judged by and the replay spans at least: the trace's stated
    count, else the PEs it has files of, else 1."""
    return int(trace.metadata.get("pes") or len(trace.metadata.get("pes_seen", [])) or 1)


def replay_graph(session: Any) -> ExecGraph:
    """The session's exec graph (built once per run) as the replay's arrays (whatif_replay_graph)."""
    view(session.engine, session.get("exec_graph"))  # the query reads the whole graph
    return exec_graph(session.engine.query("whatif_replay_graph"))


def _load(d: Path, kind: Any, trace: Any, pes: int) -> Any:
    """The kind's validated payload from d (hints.kinds: the validation the next run's consumer
    uses), None without the file; a file made for another trace is refused."""
    from hints.format import HintError
    from paradise.errors import HintMismatch

    path = d / kind.file
    if not os.path.lexists(path):
        return None
    try:
        doc, payload = kind.read(path, program=trace.program, pes=pes)
    except HintError as exc:
        raise HintMismatch(str(exc)) from None
    fp = doc["provenance"].get("trace_fingerprint") if isinstance(doc.get("provenance"), dict) else None
    if fp and fp != trace.fingerprint:
        raise HintMismatch(f"{path}: made for trace {fp}, not this trace ({trace.fingerprint})")
    return payload


def load_hints(trace: Any, hints_dir: str | Path) -> dict[str, Any]:
    """The validated payloads of the replayable hint files in `hints_dir` (kind name -> payload),
    judged against the open trace as the next run judges them; a missing folder, one without any
    of the files, or a bad or foreign file is refused (HintMismatch). Cheap: commands call it
    before they analyze, so that a bad file costs no analysis."""
    from hints.kinds import KINDS
    from paradise.errors import HintMismatch

    d = Path(hints_dir)
    if not d.is_dir():
        raise HintMismatch(f"{d}: no such hints directory")
    pes = stated_pes(trace)
    replayed = {name: k for name, k in KINDS.items() if callable(k.whatif)}
    found = {name: p for name, k in replayed.items() if (p := _load(d, k, trace, pes)) is not None}
    if not found:
        raise HintMismatch(f"{d}: holds none of {', '.join(k.file for k in replayed.values())}")
    return found


def predict(session: Any, hints: dict[str, Any]) -> dict[str, Any]:
    """Replays the run's trace under the loaded `hints` (load_hints), on the session's replayer
    (the one the analyses used, when they built one)."""
    from hints.kinds import KINDS

    kwargs: dict[str, Any] = {}
    for name, payload in hints.items():
        kwargs.update(KINDS[name].whatif(payload))
    rp = session.get("replayer")  # the analyses' one, when they built one
    if rp is None:  # asked for by name: replayed above REPLAY_MAX_EXECS too, within the budget
        _check_room(session)
        rp = Replayer.from_session(session)
    out = rp.replay(**kwargs)
    out["hints"] = list(hints)
    out["pes"] = rp.pes
    return out


def _check_room(session: Any) -> None:
    """OutOfMemory (one line) when the budget cannot hold the replay of the session's trace."""
    from paradise.errors import OutOfMemory
    from paradise.units import binary_size

    execs, room = session.get("exec_graph").execs, replay_room(session.engine)
    if execs > room:
        budget, in_process = _budget_parts(session.engine)
        need = execs * REPLAY_BYTES_PER_EXEC + CLIENT_RESERVE_BYTES
        at_least = math.ceil(need / (1 - in_process / budget) / (1 << 20)) << 20  # the engine's share grows too
        raise OutOfMemory(f"{session.trace.path}: the what-if replay of {execs:,} executions needs about "
                          f"{binary_size(execs * REPLAY_BYTES_PER_EXEC)}; {_budget_text(session.engine)} leaves "
                          f"room for {room:,}: --memory-limit {binary_size(at_least)} or more holds it")


def predict_from_hints(session: Any, hints_dir: str | Path) -> dict[str, Any]:
    """predict() under the hint files of `hints_dir` (load_hints)."""
    return predict(session, load_hints(session.trace, hints_dir))
