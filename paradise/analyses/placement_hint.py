"""The mapping hint: candidate placements chosen by the characteristics, judged by what-if replay.

Candidates come from hints.generators.mapping (refine, greedy LPT, METIS); each is replayed and the
best is proposed only when it beats the replayed current mapping by KEEP_MARGIN; otherwise the
hint is 'keep' (the current mapping, so the next run places objects as this one did).
"""

from __future__ import annotations

from typing import Any

import pandas as pd

from hints.generators import mapping as mapping_gen
from paradise.analyses.base import Characteristic, fmt_s, justification, provenance_of
from paradise.analyses.pe_time import IMBALANCE_THRESHOLD
from paradise.units import exact_size, number

IMBALANCE_RATIO = IMBALANCE_THRESHOLD
"""max/mean PE busy time above which the run is called imbalanced: the overview's one threshold."""
COMM_MATTERS_SHARE = 0.1
"""Share of bytes crossing PEs above which a communication-aware partition is tried."""
KEEP_MARGIN = 0.03
"""A new mapping must beat the replayed current one by 3 % (noise of the replay) to be proposed."""

MOVES_TIE = 0.02
"""Candidates within 2 % of the best replay are equal; the one with fewest moves wins."""


def _char(chars: list[Characteristic], name: str) -> Characteristic | None:
    return next((c for c in chars if c.name == name), None)


def _strategies(chars: list[Characteristic]) -> list[tuple[str, str]]:
    """(strategy, characteristic that justifies trying it)."""
    imb, loc = _char(chars, "load_imbalance"), _char(chars, "communication_locality")
    if imb is not None and imb.value is None:  # withheld: busy time unknown
        imb = None
    out: list[tuple[str, str]] = []
    if imb is not None and imb.value > IMBALANCE_RATIO:
        out += [("refine", "load_imbalance"), ("greedy", "load_imbalance")]
    if loc is not None and loc.value >= COMM_MATTERS_SHARE:
        out.append(("metis", "communication_locality"))
    elif imb is not None and imb.value > IMBALANCE_RATIO:
        out.append(("metis", "load_imbalance"))
    return out


def _choose(table: list[dict[str, Any]], base_pred: dict[str, Any] | None) -> str:
    """The candidate that beats the current mapping by KEEP_MARGIN with the shortest replay;
    among those within MOVES_TIE of the shortest, the one that moves fewest objects."""
    if base_pred is None:
        return "keep"
    limit = base_pred["replay_makespan_ns"] * (1 - KEEP_MARGIN)
    ok = [c for c in table if c["replay_makespan_ns"] < limit]
    if not ok:
        return "keep"
    shortest = min(c["replay_makespan_ns"] for c in ok)
    near = [c for c in ok if c["replay_makespan_ns"] <= shortest * (1 + MOVES_TIE)]
    return min(near, key=lambda c: (c["moves"], c["replay_makespan_ns"]))["strategy"]


def fixed_load(objs: pd.DataFrame, movable_keys: set[tuple[str, str]], pes: int) -> list[float]:
    """Per PE, the recurring load of the objects an ArrayMap cannot move (groups, singletons).

    Not busy time minus the movable loads: on a shared machine busy time includes the OS
    preemption of every exec and the one-off start-up (imports, main's setup and checks),
    and charging that to 'load that cannot move' would make the generators flee the
    busiest PE with everything (seen: greedy moved 32 of 64 chares)."""
    out = [0.0] * pes
    for c, i, load, p in zip(objs["coll"].astype(str), objs["index"].astype(str), objs["load_ns"], objs["pe"]):
        if (c, i) not in movable_keys and 0 <= int(p) < pes:
            out[int(p)] += float(load)
    return out


def cross_pe_bytes(edges: pd.DataFrame, plan: dict[tuple[str, str], int]) -> tuple[int, int]:
    """Bytes of the traced messages that crossed PEs, and the bytes that would cross with `plan`
    (object -> PE; objects it does not place stay on the PE the trace shows them on)."""
    if edges.empty:
        return 0, 0
    e = edges[edges["src_pe"].notna() & edges["dst_pe"].notna()]

    def placed(end: str) -> pd.Series:
        keys = list(zip(e[f"{end}_coll"].astype(str), e[f"{end}_index"].astype(str)))
        moved = pd.Series([plan.get(k) for k in keys], index=e.index, dtype="float64")
        return moved.fillna(e[f"{end}_pe"].astype("float64"))

    nbytes = e["bytes"].fillna(0).astype("int64")
    before = int(nbytes[e["src_pe"] != e["dst_pe"]].sum())
    after = int(nbytes[placed("src") != placed("dst")].sum())
    return before, after


def mapping_hint(session: Any, pes: int, objs: pd.DataFrame, mov: pd.DataFrame,
                 edges: pd.DataFrame, chars: list[Characteristic],
                 busy: list[float]) -> tuple[dict[str, Any] | None, list[dict[str, Any]], str]:
    """The mapping.json document (or None without movable objects) and the candidates table."""
    from hints.format import make_hint

    trace = session.trace
    if mov.empty:
        return None, [], ""
    keys = list(zip(mov["coll"].astype(str), mov["index"].astype(str)))
    loads = dict(zip(keys, mov["load_ns"].astype(float)))
    current = dict(zip(keys, mov["pe"].astype(int)))
    plans: dict[str, tuple[dict, str]] = {}
    rp = None
    unjudged = None
    strategies = _strategies(chars)
    if strategies and session is not None:
        from paradise.events.objgraph import object_graph

        if session.get("replayer") is None:  # too large to replay: no candidate could be judged
            unjudged = session.get("not_replayed")
            strategies = []
        else:
            base = fixed_load(objs, set(keys), pes)
            graph = object_graph(edges, loads, current)  # undirected, bytes summed over both directions
            wedges = [(u, v, d["bytes"]) for u, v, d in graph.edges(data=True)]
        for strat, why in strategies:
            if strat == "refine":
                plans[strat] = (mapping_gen.refine(current, loads, pes, base), why)
            elif strat == "greedy":
                plans[strat] = (mapping_gen.greedy_lpt(loads, pes, base), why)
            else:
                plans[strat] = (mapping_gen.metis_partition(loads, wedges, pes, current), why)
        rp = session.get("replayer") if plans else None  # built once, shared
    table = []
    base_pred = rp.replay(None) if rp is not None else None
    preds: dict[str, dict[str, Any]] = {}
    for strat, (plan, why) in plans.items():
        pred = preds[strat] = rp.replay(mapping_gen.to_payload(plan))
        table.append({"strategy": strat, "justified_by": why, "moves": mapping_gen.moves(current, plan),
                      "replay_makespan_ns": pred["replay_makespan_ns"],
                      "predicted_makespan_ns": pred["predicted_makespan_ns"],
                      "max_pe_load_ns": max(pred["pe_load_ns"])})
    best = _choose(table, base_pred)
    best_pred = preds.get(best, base_pred)
    if base_pred is not None:
        table.insert(0, {"strategy": "keep", "justified_by": "current mapping", "moves": 0,
                         "replay_makespan_ns": base_pred["replay_makespan_ns"],
                         "predicted_makespan_ns": base_pred["predicted_makespan_ns"],
                         "max_pe_load_ns": max(base_pred["pe_load_ns"])})
    plan, why = (current, "load_imbalance") if best == "keep" else plans[best]
    justifying = ([justification(c) for c in chars if c.name == why]
                  + [justification(c) for c in chars if c.name == "load_persistence"])
    gain: dict[str, Any] = {"strategy": best, "moves": mapping_gen.moves(current, plan)}
    gain["cross_pe_bytes_before"], gain["cross_pe_bytes_after"] = cross_pe_bytes(edges, plan)
    if best_pred is not None:
        gain.update({"makespan_ns_before": best_pred["measured_makespan_ns"],
                     "makespan_ns_after": best_pred["predicted_makespan_ns"],
                     "speedup": best_pred["predicted_speedup"],
                     "max_pe_load_ns_after": max(best_pred["pe_load_ns"])})
    doc_text = explain(best, gain, chars, unjudged)
    doc = make_hint("mapping", {"collections": mapping_gen.to_payload(plan), "strategy": best},
                    provenance=provenance_of(trace), justified_by=justifying, predicted_gain=gain)
    return doc, table, doc_text


def explain(best: str, gain: dict[str, Any], chars: list[Characteristic], unjudged: str | None = None) -> str:
    """The mapping hint in one sentence a user understands; `unjudged`: why no candidate was
    replayed (whatif.not_replayed), when none was."""
    imb = _char(chars, "load_imbalance")
    ratio = imb.value if imb is not None and imb.value is not None else 1.0
    if best == "keep":
        if ratio <= IMBALANCE_RATIO:
            return (f"mapping.json: keep the current placement; PE loads are balanced "
                    f"(busiest PE {ratio:.2f}x the mean).")
        if unjudged:
            return (f"mapping.json: keep the current placement; the busiest PE carries {ratio:.2f}x the mean "
                    f"load, but {unjudged}: no candidate (refine, greedy, METIS) was judged.")
        return ("mapping.json: keep the current placement; no candidate (refine, greedy, METIS) beat it by "
                f"{KEEP_MARGIN:.0%} in the what-if replay.")
    what = {"refine": "move a few objects off the busiest PE", "greedy": "re-place objects heaviest first",
            "metis": "partition objects by load and communication (METIS)"}[best]
    return (f"mapping.json: {what} ({gain['moves']} objects move); the busiest PE carries {ratio:.2f}x the mean "
            f"load and the what-if replay predicts the run drops from {fmt_s(gain.get('makespan_ns_before'))} "
            f"to {fmt_s(gain.get('makespan_ns_after'))} ({gain.get('speedup')}x); {cross_pe_text(gain)}.")


def cross_pe_text(gain: dict[str, Any]) -> str:
    """What the mapping does to the bytes that cross PEs, e.g. 'cross-PE bytes x7.4 (156,000 B -> 1,154,400 B)'."""
    b, a = gain.get("cross_pe_bytes_before"), gain.get("cross_pe_bytes_after")
    if b is None or a is None:
        return "cross-PE bytes unknown"
    if not b:
        return f"cross-PE bytes 0 B -> {exact_size(a)}" if a else "no bytes cross PEs before or after"
    return f"cross-PE bytes x{number(a / b, 2)} ({exact_size(b)} -> {exact_size(a)})"
