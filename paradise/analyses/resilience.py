"""Resilience: what failures cost this training job, and the checkpoint policy that wastes least.

Stage 1 (paradise/sql/resilience_*.sql): per-rank totals of steps, checkpoint stalls, restores,
failures and restarts; every failure/restart/restore row with the first step that followed it.
Stage 2 (here): iteration time, checkpoint and restart cost, job size, failures seen and the MTBF,
each with where it came from (trace / default / option); then hints.generators.checkpoint_policy.plan picks
periodic, jit or jit+periodic and the interval (Daly higher order). Docs: docs/checkpointing.md.
"""

from __future__ import annotations

import json
import math
from typing import Any

import pandas as pd

from hints.generators.checkpoint_policy import (
    CHECKPOINT_S_DEFAULT,
    FAILURES_PER_1000_NODE_DAYS,
    GPUS_PER_NODE,
    HOURS,
    RESTART_S_DEFAULT,
    PolicyInputs,
    default_mtbf_s,
    hint_payload,
    plan,
)
from paradise.analyses.base import AnalysisConfig, AnalysisResult, Characteristic, Evidence
from paradise.analyses.session import Session
from paradise.importers import training_like
from paradise.store import TraceHandle
from paradise.units import count as fmt_count
from paradise.units import seconds as fmt_seconds

INCIDENT_GAP_NS = 60 * 10**9
"""Failure rows closer than this (ns) belong to one incident: every survivor records the same failure."""
JIT_NAMES = ("jit",)
"""Checkpoint row names that are just-in-time saves (the rest are periodic stalls)."""
MIN_FAILURES_CONFIDENT = 10
"""Failures needed before the job's own MTBF estimate gets full confidence (relative error ~1/sqrt(n))."""


def applies(session: Session) -> bool:
    """Training traces: PyTorch runs recorded by the tracer or imported from Kineto."""
    return training_like(session.trace.source)


def _args(text: Any) -> dict[str, Any]:
    if not isinstance(text, str) or not text:
        return {}
    try:
        v = json.loads(text)
    except json.JSONDecodeError:
        return {}
    return v if isinstance(v, dict) else {}


def _mean_s(df: pd.DataFrame) -> float | None:
    n = df["n"].sum()
    return None if n == 0 else float(df["dur_ns"].sum()) / n / 1e9


def _incidents(inc: pd.DataFrame) -> pd.DataFrame:
    """One row per failure incident: first failure time, failed step, restart time, resumed times."""
    fails = inc[inc["kind"] == "failure"].sort_values("t0")
    if fails.empty:
        return pd.DataFrame(columns=["incident", "t_fail", "failed_step", "t_resume", "restored_step", "replayed"])
    fails = fails.assign(incident=(fails["t0"].diff().fillna(INCIDENT_GAP_NS + 1) > INCIDENT_GAP_NS).cumsum())
    out = fails.groupby("incident").agg(t_fail=("t0", "min"), failed_step=("step", "max"),
                                        t_fail_last=("t0", "max")).reset_index()
    after = inc[inc["kind"].isin(["restart", "restore"])]
    rows = []
    for r in out.itertuples():  # loop over incidents (a handful), not events
        nxt = after[after["t0"] > r.t_fail_last]
        upper = out[out["t_fail"] > r.t_fail]["t_fail"].min()
        if not pd.isna(upper):
            nxt = nxt[nxt["t0"] < upper]
        restores = nxt[nxt["kind"] == "restore"]
        restored = restores["step"].min() if not restores.empty else None
        t_resume = nxt["next_step_t0"].max() if not nxt.empty else None
        replayed = None
        if restored is not None and not pd.isna(restored) and not pd.isna(r.failed_step):
            replayed = int(r.failed_step) - int(restored) + 1
        elif not restores.empty:
            vals = [a.get("replayed_steps") for a in map(_args, restores["args"])]
            replayed = max((v for v in vals if v is not None), default=None)
        rows.append({"incident": int(r.incident), "t_fail": int(r.t_fail),
                     "failed_step": None if pd.isna(r.failed_step) else int(r.failed_step),
                     "t_resume": None if t_resume is None or pd.isna(t_resume) else int(t_resume),
                     "restored_step": None if restored is None or pd.isna(restored) else int(restored),
                     "replayed": replayed})
    return pd.DataFrame(rows)


def _inputs(kinds: pd.DataFrame, incidents: pd.DataFrame, trace: TraceHandle,
            config: AnalysisConfig) -> tuple[dict[str, Any], dict[str, str], dict[str, str]]:
    """Values (s, GPUs), where each came from, and a one-line detail per input."""
    opts = config.options or {}
    steps = kinds[kinds["kind"] == "step"]
    ck = kinds[kinds["kind"] == "checkpoint"]
    periodic, jit = ck[~ck["name"].isin(JIT_NAMES)], ck[ck["name"].isin(JIT_NAMES)]
    ranks = int(steps["pe"].nunique()) or int(trace.metadata.get("world_size") or trace.metadata.get("pes") or 1)
    val: dict[str, Any] = {}
    src: dict[str, str] = {}
    det: dict[str, str] = {}

    def put(key: str, option: Any, traced: Any, default: Any, detail: str) -> None:
        if option is not None:
            val[key], src[key], det[key] = option, "option", "given as an option"
        elif traced is not None:
            val[key], src[key], det[key] = traced, "trace", detail
        else:
            val[key], src[key], det[key] = default, "default", "documented default"

    n_steps = int(steps["n"].sum())
    put("iteration_s", opts.get("iteration_s"), _mean_s(steps), None, f"mean of {n_steps} step rows")
    ck_rows = periodic if not periodic.empty else jit  # a JIT save writes the same state
    put("checkpoint_s", opts.get("checkpoint_s"), _mean_s(ck_rows), CHECKPOINT_S_DEFAULT,
        f"mean stall of {int(ck_rows['n'].sum())} {'periodic' if not periodic.empty else 'JIT'} checkpoint rows")
    put("jit_save_s", opts.get("jit_save_s"), _mean_s(jit), None, f"mean of {int(jit['n'].sum())} JIT saves")
    if src["jit_save_s"] == "default":
        val["jit_save_s"] = val["checkpoint_s"]
        src["jit_save_s"], det["jit_save_s"] = src["checkpoint_s"], "no JIT saves seen: taken as the checkpoint stall"
    resumed = incidents.dropna(subset=["t_resume"]) if not incidents.empty else incidents
    restart = None if resumed.empty else float((resumed["t_resume"] - resumed["t_fail"]).mean()) / 1e9
    put("restart_s", opts.get("restart_s"), restart, RESTART_S_DEFAULT,
        f"failure to first step after restart, mean of {len(resumed)} restart(s)")
    put("gpus", config.gpus, ranks, ranks, f"{ranks} ranks in the trace")
    failures = len(incidents)
    span_s = float(kinds["t_last"].max() - kinds["t_first"].min()) / 1e9 if not kinds.empty else 0.0
    own = span_s / failures * ranks / val["gpus"] if failures and span_s > 0 else None
    scaled = f", scaled from {ranks} ranks to {val['gpus']} GPUs" if val["gpus"] != ranks else ""
    put("mtbf_s", None if config.mtbf_hours is None else config.mtbf_hours * HOURS, own,
        default_mtbf_s(val["gpus"]), f"job's own: {failures} failure(s) in {fmt_seconds(span_s)}{scaled}")
    if src["mtbf_s"] == "trace" and failures < 3:
        det["mtbf_s"] += "; few failures, a rough estimate: pass --mtbf-hours to plan with another"
    if src["mtbf_s"] == "default":
        det["mtbf_s"] = (f"{FAILURES_PER_1000_NODE_DAYS:g} failures per 1,000 node-days, "
                         f"{GPUS_PER_NODE} GPUs per node, {val['gpus']} GPUs")
    return val, src, det


def analyze(session: Session, config: AnalysisConfig | None = None) -> AnalysisResult:
    """Inputs from the trace, defaults or options; the policy comparison and checkpoint.json."""
    engine, trace = session.engine, session.trace
    config = config or AnalysisConfig()
    kinds = engine.query("resilience_kinds").to_pandas()
    inc = engine.query("resilience_incidents").to_pandas()
    result = AnalysisResult(name="resilience")
    if kinds[kinds["kind"] == "step"].empty and "iteration_s" not in (config.options or {}):
        result.sections["notes"] = ["no step rows: the checkpoint policy needs the iteration time"]
        return result
    incidents = _incidents(inc)
    val, src, det = _inputs(kinds, incidents, trace, config)
    if config.mtbf_hours is not None and config.mtbf_hours <= 0:
        raise ValueError("--mtbf-hours must be > 0")
    policy = plan(PolicyInputs(
        iteration_s=val["iteration_s"], checkpoint_s=val["checkpoint_s"], restart_s=val["restart_s"],
        mtbf_s=val["mtbf_s"], gpus=int(val["gpus"]), jit_save_s=val["jit_save_s"],
        sources={**src, "unrecoverable_fraction": "default", "job_s": "default"},
    ))
    failures = len(incidents)
    units = {"gpus": "GPUs"}
    inputs = [{"input": k, "value": _round(v), "unit": units.get(k, "s"), "source": src[k], "detail": det[k]}
              for k, v in val.items()]
    evidence = tuple(Evidence(f"{r['input']} ({r['source']})", r["value"], r["unit"]) for r in inputs) + tuple(
        Evidence(f"expected_waste_{m}", _round(w), "fraction") for m, w in policy.expected_waste.items())
    conf = min(1.0, failures / MIN_FAILURES_CONFIDENT) if src["mtbf_s"] == "trace" else 0.5
    w = policy.expected_waste
    every = f" every {fmt_count(policy.interval_steps)} steps ({fmt_seconds(policy.interval_s)})" if policy.interval_steps else ""
    summary = (f"checkpoint policy {policy.mode}{every}: expected waste {100 * w[policy.mode]:.2f}% of job time "
               f"(periodic {100 * w['periodic']:.2f}%, jit {100 * w['jit']:.2f}%), job MTBF "
               f"{fmt_seconds(policy.mtbf_s)} ({src['mtbf_s']})")
    result.characteristics.append(Characteristic(
        "resilience", "checkpoint_policy", policy.mode, evidence, conf, summary))
    replayed = [int(x) for x in incidents.get("replayed", pd.Series(dtype=object)).dropna()]
    result.characteristics.append(Characteristic(
        "resilience", "failures_seen", failures,
        (Evidence("failures", failures, "count"), Evidence("max_replayed_steps", max(replayed, default=None), "steps")),
        1.0, f"{failures} failure(s) seen in the trace"
        + (f", at most {max(replayed)} step(s) replayed after a restore" if replayed else "")))
    result.sections.update({
        "inputs": inputs,
        "incidents": [{k: _round(v) for k, v in row.items()} for row in incidents.to_dict("records")],
        "policy": _json_safe(policy.to_dict()),
        "notes": [f"{r['input']}: {r['source']} ({r['detail']})" for r in inputs],
    })
    result.hints.append(_hint(trace, policy, inputs, summary))
    return result


def _hint(trace: TraceHandle, policy: Any, inputs: list[dict[str, Any]], summary: str) -> dict[str, Any]:
    from hints.format import make_hint, provenance

    w = policy.expected_waste
    return make_hint(
        "checkpoint", _json_safe(hint_payload(policy)),
        provenance=provenance(trace_fingerprint=trace.fingerprint, program=trace.program,
                              pes=trace.metadata.get("pes"), source=trace.source),
        justified_by=[{"analysis": "resilience", "label": policy.mode, "summary": summary, "evidence": inputs}],
        predicted_gain={"expected_waste": _round(w[policy.mode]),
                        "waste_saved_vs_periodic": _round(w["periodic"] - w[policy.mode])},
    )


def _round(v: Any) -> Any:
    if v is None or (isinstance(v, float) and not math.isfinite(v)):
        return None
    if hasattr(v, "item"):
        v = v.item()
    return round(v, 6) if isinstance(v, float) else v


def _json_safe(d: Any) -> Any:
    if isinstance(d, dict):
        return {k: _json_safe(v) for k, v in d.items()}
    if isinstance(d, (list, tuple)):
        return [_json_safe(v) for v in d]
    return _round(d)
