"""Training runs (PyTorch DDP traces from the paradise tracer, Kineto traces): where step time
goes, which ranks straggle, what collectives cost, whether DDP buckets suit the network, how
long input and checkpoints make ranks wait, and for GPU traces kernel time by stream.

Stage 1 is analyses/sql/training_*.sql; stage 2 (here) works on those small tables with pandas.
Definitions, heuristics and thresholds: docs/analyses/training.md.
"""

from __future__ import annotations

import math
from typing import Any

import pandas as pd

from hints.generators.ddp import EXPOSED_COMM_SHARE, FEW_BUCKETS, LATENCY_SHARE_MAX, suggest
from paradise.analyses.base import AnalysisConfig, AnalysisResult, Characteristic, Evidence, json_scalar
from paradise.analyses.session import Session
from paradise.importers import training_like
from paradise.store import TraceHandle

SLOW_REL = 0.10
"""A rank is slow in a step when its compute exceeds the step's median compute by more than 10 %..."""
SLOW_ABS_NS = 200_000
"""...and by more than 0.2 ms: below that, differences are timer and scheduler noise."""
STRAGGLER_SHARE = 0.75
"""A straggler is the slowest rank in at least 75 % of the steps. Chance alone puts one of two
equally fast ranks at >= 75 % of 20 steps with probability ~2 %, an injected slow rank near 100 %."""
MIN_STEPS = 4
"""Fewer common steps than this say nothing about persistence: no straggler verdict."""

SMALL_COLLECTIVE_BYTES = 64 * 1024
"""Collectives up to 64 KiB estimate the per-call latency (their transfer time is negligible)."""

TRANSFER_CATS = ("ddp_bucket", "c10d")
"""Collective rows (besides device kernels and gloo: annotations) whose duration covers the transfer."""

STALL_SHARE = 0.05
"""Input stalls above 5 % of the time in steps are reported as input-bound."""
DEVICE_IDLE_SHARE = 0.20
"""A device idle over 20 % of its span (between its first and last kernel) is reported."""
MIN_MET_CALLS = 3
"""A collective's slowest rank is named only from at least 3 calls that two or more ranks made."""
LAST_SHARE = 0.5
"""...and only when one rank arrived last at more than half of them."""
MAX_STEP_ROWS = 5000
"""Per-step breakdown rows kept in the JSON result (the per-rank summary always covers all)."""


def applies(session: Session) -> bool:
    """PyTorch and Kineto traces; sources no importer declares only when they hold phase rows or
    DDP bucket collectives (training_rows_present.sql, on the run's engine)."""
    source = session.trace.source
    if training_like(source):
        return True
    from paradise.importers import IMPORTERS

    if any(imp.source == source and not imp.training_like for imp in IMPORTERS.values()):
        return False  # an importer declared the source Charm-like
    return bool(session.engine.query("training_rows_present").column("found")[0].as_py())


_py = json_scalar


def _records(df: pd.DataFrame) -> list[dict[str, Any]]:
    return [{k: _py(v) for k, v in row.items()} for row in df.to_dict("records")]


PARTS = ("compute_ns", "comm_ns", "overlap_ns", "idle_ns")


def breakdown_per_rank(steps: pd.DataFrame) -> pd.DataFrame:
    """Sums of the per-step parts per rank, with shares of step time."""
    if steps.empty:
        return pd.DataFrame(columns=["pe", "steps", "step_ns", *PARTS])
    g = steps.groupby("pe").agg(
        steps=("step", "count"), step_ns=("step_ns", "sum"), **{p: (p, "sum") for p in PARTS},
        mean_step_ns=("step_ns", "mean"), max_step_ns=("step_ns", "max"),
    ).reset_index()  # fmt: skip
    for p in PARTS:
        g[p.replace("_ns", "_share")] = (g[p] / g["step_ns"].where(g["step_ns"] > 0)).round(4)
    return g


def stragglers(steps: pd.DataFrame) -> tuple[list[dict[str, Any]], int]:
    """Ranks slowest (compute) in >= STRAGGLER_SHARE of the steps; cost = sum of excess over the median.

    Returns (stragglers, steps compared). A step counts when at least two ranks recorded it.
    """
    if steps.empty:
        return [], 0
    s = steps[["pe", "step", "compute_all_ns"]].copy()
    s["ranks"] = s.groupby("step")["pe"].transform("count")
    s = s[s["ranks"] >= 2]
    if s.empty:
        return [], 0
    s["median"] = s.groupby("step")["compute_all_ns"].transform("median")
    s["excess"] = s["compute_all_ns"] - s["median"]
    s["top"] = s.groupby("step")["compute_all_ns"].transform("max")
    s["is_top"] = s["compute_all_ns"] == s["top"]
    s["n_top"] = s.groupby("step")["is_top"].transform("sum")
    slow = (
        (s["compute_all_ns"] == s["top"]) & (s["n_top"] == 1)
        & (s["excess"] > SLOW_REL * s["median"]) & (s["excess"] > SLOW_ABS_NS)
    )  # fmt: skip
    s["slow"] = slow
    s["slow_excess"] = s["excess"].where(slow, 0)
    n_steps = int(s["step"].nunique())
    per = s.groupby("pe").agg(
        slow_steps=("slow", "sum"), steps=("step", "count"), cost_ns=("slow_excess", "sum"),
        mean_compute_ns=("compute_all_ns", "mean"),
    ).reset_index()  # fmt: skip
    per["share"] = per["slow_steps"] / per["steps"]
    found = per[(per["share"] >= STRAGGLER_SHARE) & (per["steps"] >= MIN_STEPS)]
    found = found.sort_values("cost_ns", ascending=False)
    out = [
        {
            "rank": int(r.pe),
            "cost_ns": int(r.cost_ns),
            "slow_steps": int(r.slow_steps),
            "steps": int(r.steps),
            "share": round(float(r.share), 4),
            "mean_compute_ns": int(r.mean_compute_ns),
        }
        for r in found.itertuples()
    ]
    return out, n_steps


WAIT_RULE_MIN_RANKS = 2
"""Ranking by collective waiting needs at least two ranks in the same steps."""


def waiting_stragglers(steps: pd.DataFrame) -> dict[str, Any] | None:
    """On traces too short for the persistence rule: ranks by time in collectives (HTA's rule).

    A rank that arrives late at each collective waits least in it, while its peers wait for it,
    so the rank with the least collective time over the steps all ranks share is the likely
    straggler; the others' extra time in collectives is what it cost them. Confidence grows with
    the steps compared and with the margin to the next rank. None without two ranks or any
    collective time."""
    if steps.empty:
        return None
    s = steps[["pe", "step", "comm_all_ns"]]
    ranks = s.groupby("step")["pe"].transform("nunique")
    n_ranks = int(s["pe"].nunique())
    s = s[ranks == n_ranks]
    if n_ranks < WAIT_RULE_MIN_RANKS or s.empty or s["comm_all_ns"].sum() <= 0:
        return None
    per = s.groupby("pe")["comm_all_ns"].sum().sort_values(kind="stable")
    n_steps = int(s["step"].nunique())
    low, second = float(per.iloc[0]), float(per.iloc[1])
    margin = (second - low) / float(per.median()) if float(per.median()) > 0 else 0.0
    slowest_each = s.loc[s.groupby("step")["comm_all_ns"].idxmin(), "pe"]
    agree = float((slowest_each == per.index[0]).mean())
    confidence = round(min(0.9, 0.2 + 0.1 * n_steps + 0.3 * min(margin, 1.0)) * agree, 2)
    return {
        "rank": int(per.index[0]),
        "steps": n_steps,
        "margin": round(margin, 4),
        "agreeing_steps": round(agree, 4),
        "confidence": confidence,
        "ranks": [{"rank": int(pe), "collective_ns": int(v), "waited_for_others_ns": int(v - low)}
                  for pe, v in per.items()],
    }


def _latency_ns(coll: pd.DataFrame) -> float | None:
    """Per-call latency: the fastest small collective of the tracer (transfer time negligible)."""
    small = coll[
        coll["cat"].isin(TRANSFER_CATS)
        & (coll["bucket_log2"] >= 0)
        & (coll["max_bytes"] <= SMALL_COLLECTIVE_BYTES)
    ]
    small = small[small["name"] != "barrier"] if (small["name"] != "barrier").any() else small
    if small.empty:
        return None
    v = float(small["min_ns"].min())
    return v if v > 0 else None


def bucket_sizing(
    buckets: pd.DataFrame, coll: pd.DataFrame, steps: pd.DataFrame, phases: pd.DataFrame
) -> dict[str, Any] | None:
    """DDP bucket verdict (ok / too_small / too_large) with the numbers behind it."""
    if buckets.empty:
        return None
    latency = _latency_ns(coll)
    # Bandwidth from each step's fastest bucket (least waiting for peers), the best 25 % of them.
    fast = buckets[buckets["min_ns"] > 0]
    bw = (fast["min_ns_bytes"] / fast["min_ns"]).quantile(0.75) if not fast.empty else None  # bytes/ns
    per_step = buckets.groupby(["pe", "step"]).agg(n=("buckets", "sum"), b=("bytes", "sum")).reset_index()
    # Step 0 uses DDP's initial single bucket layout; judge the rebuilt layout when there is one.
    later = per_step[per_step["step"] > per_step["step"].min()]
    use = later if not later.empty else per_step
    buckets_per_step = float(use["n"].median())
    bytes_per_step = float(use["b"].median())
    mean_bucket = bytes_per_step / buckets_per_step if buckets_per_step else 0.0
    exposed = (
        float(steps["comm_ns"].sum() / steps["step_ns"].sum())
        if not steps.empty and steps["step_ns"].sum()
        else 0.0
    )
    bwd = phases[phases["name"] == "backward"] if not phases.empty else phases
    backward_per_step = (
        float(bwd["dur_ns"].sum() / bwd["calls"].sum()) if not bwd.empty and bwd["calls"].sum() else 0.0
    )
    min_good = 4.0 * latency * bw if latency and bw else None  # latency share <= 20 %: b >= 4 * alpha * beta
    info: dict[str, Any] = {
        "buckets_per_step": buckets_per_step,
        "bytes_per_step": int(bytes_per_step),
        "mean_bucket_bytes": int(mean_bucket),
        "latency_ns": None if latency is None else int(latency),
        "bandwidth_bytes_per_s": None if bw is None or not math.isfinite(bw) else round(bw * 1e9, 1),
        "latency_share": None
        if latency is None or not bw
        else round(latency / (latency + mean_bucket / bw), 4),
        "exposed_comm_share": round(exposed, 4),
        "backward_ns_per_step": int(backward_per_step),
    }
    mean_step = float(steps["step_ns"].mean()) if not steps.empty else 0.0
    info.update(suggest(latency_ns=latency, latency_share=info["latency_share"], min_good_bytes=min_good,
                        buckets_per_step=buckets_per_step, bytes_per_step=bytes_per_step, exposed=exposed,
                        backward_per_step=backward_per_step, mean_step_ns=mean_step))
    return info


def _bucket_hint(trace: TraceHandle, info: dict[str, Any], char: Characteristic) -> dict[str, Any]:
    from hints.format import make_hint, provenance

    pes = trace.metadata.get("pes") or len(trace.metadata.get("pes_seen", [])) or None
    return make_hint(
        "comm",
        {
            "combine": [],
            "threshold": {"latency_share_max": LATENCY_SHARE_MAX, "exposed_comm_share": EXPOSED_COMM_SHARE},
            "ddp": {"bucket_cap_mb": info["suggested_bucket_cap_mb"], "verdict": info["verdict"]},
        },
        provenance=provenance(
            trace_fingerprint=trace.fingerprint, program=trace.program, pes=pes, source=trace.source
        ),
        justified_by=[char.to_dict()],
        predicted_gain={"step_ns_saved_per_step": info["predicted_gain_ns_per_step"]},
    )


def _collectives(coll: pd.DataFrame) -> pd.DataFrame:
    c = coll.copy()
    c["bandwidth_bytes_per_s"] = (c["bytes"] / c["dur_ns"].where(c["dur_ns"] > 0) * 1e9).round(1)
    # Only rows whose duration is the transfer: device kernels, the tracer's rows, gloo worker
    # annotations. Kineto's CPU ops (c10d::*, record_param_comms) and nccl: annotations only launch.
    timed = c["on_device"] | c["cat"].isin(TRANSFER_CATS) | c["name"].str.startswith("gloo:")
    c.loc[(c["bucket_log2"] < 0) | (c["bytes"] <= 0) | ~timed, "bandwidth_bytes_per_s"] = None
    c["mean_ns"] = (c["dur_ns"] / c["calls"]).round(1)
    return c


def collective_arrivals(arr: pd.DataFrame) -> list[dict[str, Any]]:
    """Per collective, the rank that arrived last (latest start: the one the others waited for),
    from training_collective_arrivals; `slowest_rank` is None, with `withheld` saying why, when
    the calls are too few or no rank arrived last at most of them."""
    out = []
    for name, g in arr.groupby("name", sort=True):
        met = int(g["calls"].max())
        top = g.sort_values(["last", "wait_ns"], ascending=False).iloc[0]
        row: dict[str, Any] = {"name": str(name), "ranks": int(len(g)), "met_calls": met,
                               "last_rank": int(top["pe"]), "last_calls": int(top["last"]),
                               "wait_ns": int(top["wait_ns"]), "slowest_rank": None, "withheld": None}
        if met < MIN_MET_CALLS:
            row["withheld"] = f"{met} call(s) met by two or more ranks (at least {MIN_MET_CALLS} needed)"
        elif top["last"] <= LAST_SHARE * met:
            row["withheld"] = (f"no rank arrived last at most calls (at most {int(top['last'])} of {met}, "
                               f"more than {LAST_SHARE:.0%} needed)")
        else:
            row["slowest_rank"] = int(top["pe"])
        out.append(row)
    return out


def _arrival_characteristic(rows: list[dict[str, Any]]) -> Characteristic:
    """The slowest-rank verdict for collectives, or the reason it is withheld."""
    named = [r for r in rows if r["slowest_rank"] is not None]
    ev = tuple(Evidence(f"{r['name']}:last_calls", r["last_calls"], "calls", round(LAST_SHARE * r["met_calls"], 1),
                        "training_collective_arrivals") for r in rows[:20])  # fmt: skip
    if not rows:
        summary = ("Slowest rank of collectives unknown: no collective call was made by two or more ranks "
                   "(a one-rank trace, or ranks whose calls do not match).")
    elif not named:
        why = "; ".join(f"{r['name']}: {r['withheld']}" for r in rows[:3])
        summary = f"No rank arrived last at most collectives ({why})."
    else:
        summary = "Arrived last (the others waited for it): " + "; ".join(
            f"rank {r['slowest_rank']} at {r['last_calls']} of {r['met_calls']} {r['name']} calls, "
            f"{r['wait_ns'] / 1e6:.1f} ms of waiting for it" for r in named[:4]) + "."
    value = [{"name": r["name"], "rank": r["slowest_rank"]} for r in named] or None
    return Characteristic("training", "collective_slowest_rank", value, ev,
                          1.0 if named else 0.0, summary)


def _stalls(stalls: pd.DataFrame, steps: pd.DataFrame) -> pd.DataFrame:
    if stalls.empty:
        return pd.DataFrame(columns=["pe", "gaps", "stall_ns", "io_ns", "max_stall_ns", "stall_share"])
    g = stalls.groupby("pe").agg(
        gaps=("step", "count"), stall_ns=("stall_ns", "sum"), io_ns=("io_ns", "sum"), max_stall_ns=("stall_ns", "max"),
        median_stall_ns=("stall_ns", "median"),
    ).reset_index()  # fmt: skip
    in_steps = steps.groupby("pe")["step_ns"].sum() if not steps.empty else pd.Series(dtype="int64")
    g["stall_share"] = (g["stall_ns"] / (g["pe"].map(in_steps).fillna(0) + g["stall_ns"])).round(4)
    return g


def _characteristics(
    per_rank: pd.DataFrame,
    found: list[dict[str, Any]],
    n_compared: int,
    sizing: dict[str, Any] | None,
    stalls: pd.DataFrame,
    streams: pd.DataFrame,
    events: pd.DataFrame,
    waiting: dict[str, Any] | None = None,
) -> list[Characteristic]:
    out: list[Characteristic] = []
    if not per_rank.empty and per_rank["step_ns"].sum() > 0:
        tot = per_rank[list(PARTS)].sum()
        shares = {p.replace("_ns", ""): round(float(tot[p] / per_rank["step_ns"].sum()), 4) for p in PARTS}
        dominant = max(shares, key=shares.get)
        out.append(Characteristic(
            "training", "step_breakdown", dominant,
            tuple(Evidence(f"{k}_share", v, "fraction", None, "training_breakdown") for k, v in shares.items())
            + (Evidence("steps", int(per_rank["steps"].sum()), "rank-steps", None, "training_breakdown"),),
            1.0,
            f"Steps are mostly {dominant}: compute {shares['compute']:.0%}, exposed communication "
            f"{shares['comm']:.0%}, overlapped {shares['overlap']:.0%}, idle {shares['idle']:.0%} of step time.",
        ))  # fmt: skip
    if not per_rank.empty and n_compared < MIN_STEPS:
        ev = [Evidence("steps_compared", n_compared, "steps", MIN_STEPS, "training_breakdown")]
        why = ("no step was recorded by two or more ranks" if not n_compared
               else f"only {n_compared} step(s) recorded by two or more ranks, at least {MIN_STEPS} needed")
        out.append(Characteristic("training", "stragglers", None, tuple(ev), 0.0,
                                  f"Straggler unknown: {why}."))
    elif n_compared:
        ranks = [s["rank"] for s in found]
        ev = [Evidence("steps_compared", n_compared, "steps", MIN_STEPS, "training_breakdown")]
        ev += [
            Evidence(f"rank_{s['rank']}_cost", s["cost_ns"], "ns", None, "training_breakdown") for s in found
        ]
        ev += [Evidence(f"rank_{s['rank']}_slow_share", s["share"], "fraction", STRAGGLER_SHARE, "training_breakdown")
               for s in found]  # fmt: skip
        summary = (
            "No straggler: no rank was the slowest in most steps."
            if not found
            else "Straggler(s): " + ", ".join(
                f"rank {s['rank']} slowest in {s['slow_steps']}/{s['steps']} steps, costing "
                f"{s['cost_ns'] / 1e6:.1f} ms" for s in found) + "."
        )  # fmt: skip
        out.append(Characteristic("training", "stragglers", ranks, tuple(ev),
                                  1.0 if n_compared >= 10 else 0.6, summary))  # fmt: skip
    if waiting is not None and n_compared < MIN_STEPS:
        w = waiting
        out.append(Characteristic(
            "training", "stragglers_by_waiting", w["rank"],
            (Evidence("steps_compared", w["steps"], "steps", MIN_STEPS, "training_breakdown"),
             Evidence("margin", w["margin"], "fraction of the median rank's collective time", None,
                      "training_breakdown"),
             Evidence("agreeing_steps", w["agreeing_steps"], "fraction", None, "training_breakdown"),
             Evidence(f"rank_{w['rank']}_collective", w["ranks"][0]["collective_ns"], "ns", None,
                      "training_breakdown")),
            w["confidence"],
            f"Too few steps ({w['steps']}) for the persistence rule; by time in collectives (a late rank waits "
            f"least), rank {w['rank']} is the likely straggler (lowest in {w['agreeing_steps']:.0%} of the steps, "
            f"margin {w['margin']:.0%}; confidence {w['confidence']:.2f}).",
        ))  # fmt: skip
    if sizing is not None:
        out.append(Characteristic(
            "training", "ddp_bucket_size", sizing["verdict"],
            (
                Evidence("buckets_per_step", sizing["buckets_per_step"], "count", FEW_BUCKETS, "training_buckets"),
                Evidence("mean_bucket_bytes", sizing["mean_bucket_bytes"], "bytes", None, "training_buckets"),
                Evidence("latency_ns", sizing["latency_ns"], "ns", None, "training_collectives"),
                Evidence("bandwidth", sizing["bandwidth_bytes_per_s"], "bytes/s", None, "training_buckets"),
                Evidence("latency_share", sizing["latency_share"], "fraction", LATENCY_SHARE_MAX, "training_buckets"),
                Evidence("exposed_comm_share", sizing["exposed_comm_share"], "fraction", EXPOSED_COMM_SHARE,
                         "training_breakdown"),
            ),
            0.7,
            {
                "ok": "DDP bucket size suits the measured latency and bandwidth.",
                "too_small": f"DDP buckets are too small: latency is {sizing['latency_share'] or 0:.0%} of each "
                             f"all-reduce; try bucket_cap_mb={sizing['suggested_bucket_cap_mb']}.",
                "too_large": f"DDP buckets are too large: {sizing['buckets_per_step']:.0f} per step leave "
                             f"{sizing['exposed_comm_share']:.0%} of step time in exposed communication; try "
                             f"bucket_cap_mb={sizing['suggested_bucket_cap_mb']} to overlap it with backward.",
            }[sizing["verdict"]],
        ))  # fmt: skip
    if not stalls.empty:
        worst = stalls.sort_values("stall_share", ascending=False).iloc[0]
        share = float(worst["stall_share"])
        out.append(Characteristic(
            "training", "input_stall", "input_bound" if share > STALL_SHARE else "ok",
            (Evidence("max_rank_stall_share", round(share, 4), "fraction", STALL_SHARE, "training_stalls"),
             Evidence("rank", int(worst["pe"]), "pe", None, "training_stalls"),
             Evidence("median_stall", _py(worst["median_stall_ns"]), "ns", None, "training_stalls")),
            0.8,
            f"Between steps, rank {int(worst['pe'])} waited {share:.1%} of its time for the next batch"
            + (" (input-bound)." if share > STALL_SHARE else "."),
        ))  # fmt: skip
    dev = streams[streams["stream"] == -1] if not streams.empty else streams
    if not dev.empty:
        span = (dev["last_ns"] - dev["first_ns"]).clip(lower=1)
        idle_share = float((dev["idle_ns"] / span).max())
        out.append(Characteristic(
            "training", "device_idle", "idle" if idle_share > DEVICE_IDLE_SHARE else "busy",
            (Evidence("max_device_idle_share", round(idle_share, 4), "fraction", DEVICE_IDLE_SHARE, "training_streams"),
             Evidence("streams", int((streams["stream"] >= 0).sum()), "count", None, "training_streams")),
            0.9,
            f"The most idle device had no kernel running {idle_share:.0%} of the time between its first and last kernel.",
        ))  # fmt: skip
    if not events.empty:
        fails = events[events["kind"] == "failure"]
        ck = events[events["kind"] == "checkpoint"]
        restarts = events[events["kind"] == "restart"]
        out.append(Characteristic(
            "training", "resilience_events", int(fails["count"].sum()),
            (Evidence("failures", int(fails["count"].sum()), "count", None, "training_events"),
             Evidence("restarts", int(restarts["count"].sum()), "count", None, "training_events"),
             Evidence("checkpoints", int(ck["count"].sum()), "count", None, "training_events"),
             Evidence("checkpoint_time", int(ck["dur_ns"].sum()), "ns", None, "training_events")),
            1.0,
            f"{int(fails['count'].sum())} failure row(s), {int(restarts['count'].sum())} restart(s), "
            f"{int(ck['count'].sum())} checkpoint save(s) seen.",
        ))  # fmt: skip
    return out


def analyze(session: Session, config: AnalysisConfig) -> AnalysisResult:
    """Runs the training_* queries and derives the breakdown, stragglers, sizing and stalls."""
    engine, trace = session.engine, session.trace
    steps = engine.query("training_breakdown").to_pandas()
    coll = engine.query("training_collectives").to_pandas()
    buckets = engine.query("training_buckets").to_pandas()
    phases = engine.query("training_phases").to_pandas()
    stalls_raw = engine.query("training_stalls").to_pandas()
    streams = engine.query("training_streams").to_pandas()
    events = engine.query("training_events").to_pandas()
    arrivals = engine.query("training_collective_arrivals").to_pandas()

    per_rank = breakdown_per_rank(steps)
    found, n_compared = stragglers(steps)
    sizing = bucket_sizing(buckets, coll, steps, phases)
    stalls = _stalls(stalls_raw, steps)
    waiting = waiting_stragglers(steps) if n_compared < MIN_STEPS else None
    chars = _characteristics(per_rank, found, n_compared, sizing, stalls, streams, events, waiting)
    arrived = collective_arrivals(arrivals)
    if not coll.empty:
        chars.append(_arrival_characteristic(arrived))

    result = AnalysisResult(name="training", characteristics=chars)
    result.sections.update(
        breakdown=_records(per_rank),
        breakdown_steps=_records(steps.head(MAX_STEP_ROWS)),
        breakdown_steps_total=int(len(steps)),
        stragglers=found,
        stragglers_by_waiting=waiting,
        collectives=_records(_collectives(coll)) if not coll.empty else [],
        collective_arrivals=arrived,
        ddp_buckets=sizing,
        phases=_records(phases),
        stalls=_records(stalls),
        streams=_records(streams),
        events=_records(events),
    )
    if sizing is not None and sizing["verdict"] != "ok":
        char = next(c for c in chars if c.name == "ddp_bucket_size")
        result.hints.append(_bucket_hint(trace, sizing, char))
    return result
