"""Communication: the pattern of each collection's object graph per phase, message sizes,
and many small messages between the same PEs; comm.json (message combining).

Stage 1: communication_edges (object pairs per entry method, shared with placement through the
run's session), exact size quantiles (communication_size_quantiles), the size histogram (rolled
up from the overview's group table), and
communication_reductions (fan-in edges inferred from the timeline).
Stage 2: networkx heuristics in paradise.events.objgraph; hints.generators.comm picks the streams.
"""

from __future__ import annotations

from typing import Any

import pandas as pd

from hints.generators import comm as comm_gen
from paradise.analyses.base import (
    AnalysisConfig,
    AnalysisResult,
    Characteristic,
    Evidence,
    fmt_s,
    justification,
    provenance_of,
)
from paradise.analyses.session import Session
from paradise.events.objgraph import MIN_NODES, clean_edges, collection_patterns
from paradise.importers import training_like
from paradise.units import count, exact_size

SIZE_QUANTILES = (0.5, 0.9, 0.99)
DEFAULT_PER_MESSAGE_NS = 5_000.0
"""Per-message cost used for the combining gain when the trace has no cross-PE message to fit."""
SAME_PE_SOURCES = frozenset({"charm4py"})
"""Traces whose same-PE streams are proposed too: charm4py pickles and schedules every message, local
or not, which hints.runtime.charm_combine's batches to the PE's own receiver skip."""


def applies(session: Session) -> bool:
    """Charm-style traces with messages between objects."""
    return not training_like(session.trace.source)


def pattern_characteristics(patterns: dict[str, list[dict[str, Any]]]) -> list[Characteristic]:
    """One characteristic per collection: its patterns, phases with most bytes first."""
    out = []
    for coll, phases in sorted(patterns.items()):
        ordered = sorted(phases, key=lambda p: (-p["evidence"]["bytes"], -p["evidence"]["msgs"], p["phase"]))
        names: list[str] = []
        for p in ordered:
            if p["pattern"] not in names:
                names.append(p["pattern"])
        ev = tuple(Evidence(f"phase:{p['phase']}", p["pattern"], "", None, "communication_edges")
                   for p in ordered)
        conf = max(p["confidence"] for p in ordered)
        text = ", ".join(f"{p['pattern']} in {p['phase']}" for p in ordered[:4])
        out.append(Characteristic("communication", f"pattern:{coll}", names, ev, round(conf, 3),
                                  summary=f"Messages to {coll} form: {text}."))
    return out


def withheld_patterns(edges: pd.DataFrame, patterns: dict[str, list[dict[str, Any]]]) -> list[Characteristic]:
    """A pattern verdict withheld, with the reason: for the whole trace when no message names its
    receiver, else for each receiving collection none of whose phases involves MIN_NODES objects."""
    e = clean_edges(edges) if not edges.empty else edges
    if e.empty:
        return [Characteristic(
            "communication", "pattern", None, (Evidence("messages_with_receiver", 0, "count", None,
                                                        "communication_edges"),), 0.0,
            summary="Communication pattern unknown: no message in the trace names its receiving object or PE.")]
    e = e.assign(coll=[d[0] or "(pe)" for d in e["dst"]])
    out = []
    for coll, part in e.groupby("coll", sort=True):
        if coll in patterns:
            continue
        most = max(len(set(g["src"]) | set(g["dst"])) for _, g in part.groupby("entry"))
        out.append(Characteristic(
            "communication", f"pattern:{coll}", None,
            (Evidence("objects", most, "count", MIN_NODES, "communication_edges"),), 0.0,
            summary=f"Pattern of the messages to {coll} unknown: each of its phases involves at most {most} "
                    f"object(s), fewer than the {MIN_NODES} a pattern needs."))
    return out


def size_quantiles(engine: Any) -> dict[str, Any]:
    """Exact message-size quantiles and the small-message count (communication_size_quantiles)."""
    row = engine.query("communication_size_quantiles", small_bytes=comm_gen.COMBINE_MAX_BYTES).to_pylist()
    return row[0] if row else {}


def sizes(hist: pd.DataFrame, q: dict[str, Any]) -> Characteristic:
    """Message sizes: exact quantiles over the send rows whose size is known; the power-of-two
    histogram as evidence of the shape."""
    sized = int(q.get("sized_msgs") or 0)
    msgs = int(q.get("msgs") or 0)
    qs = {f"p{int(x * 100)}_bytes": int(q[f"p{int(x * 100)}_bytes"]) for x in SIZE_QUANTILES
          if q.get(f"p{int(x * 100)}_bytes") is not None}
    small = int(q.get("small_msgs") or 0)
    histogram = [{"bucket_log2": int(b), "msgs": int(m)} for b, m in
                 hist.groupby("bucket_log2")["msgs"].sum().sort_index().items()]
    if not sized:
        summary = f"Message sizes are unknown: none of the {count(msgs)} send rows records its size."
    else:
        unknown = f" ({count(msgs - sized)} of {count(msgs)} send rows without a size left out)" if sized < msgs else ""
        summary = (f"Median message {exact_size(qs['p50_bytes'])}, 99th percentile {exact_size(qs['p99_bytes'])} "
                   f"(exact, over {sized:,} messages){unknown}; {small / sized:.0%} of them are small "
                   f"(<= {exact_size(comm_gen.COMBINE_MAX_BYTES)}).")
    return Characteristic(
        "communication", "message_sizes", qs.get("p50_bytes"),
        (*(Evidence(k, v, "bytes", None, "communication_size_quantiles") for k, v in qs.items()),
         Evidence("msgs", msgs), Evidence("sized_msgs", sized),
         Evidence("small_share", round(small / sized, 4) if sized else None, "", comm_gen.COMBINE_MAX_BYTES,
                  "communication_size_quantiles"),
         Evidence("histogram_log2", histogram)),
        confidence=round(min(1.0, sized / 100), 3),
        summary=summary)


def streams(edges: pd.DataFrame, p2p_only: bool = False) -> list[dict[str, Any]]:
    """Messages per (src_pe, dst_pe, entry) stream; with p2p_only, the streams a combiner can take:
    broadcast deliveries left out (it combines point-to-point sends only), and messages to runtime
    machinery (the combiner's own batches, on a run that already combines: combining those would
    feed each batch back into its own stream)."""
    e = edges[edges["dst_pe"].notna()].astype({"dst_pe": "int64", "src_pe": "int64"})
    if p2p_only and "dst_cat" in e:
        e = e[e["dst_cat"].ne("runtime") | e["dst_cat"].isna()]
    if p2p_only and "bcast_msgs" in e:
        e = e.assign(msgs=e["msgs"] - e["bcast_msgs"].fillna(0).astype("int64"))
        e = e[e["msgs"] > 0]
    g = e.groupby(["src_pe", "dst_pe", "entry"], sort=True).agg(
        msgs=("msgs", "sum"), bytes=("bytes", "sum"), max_bytes=("max_bytes", "max")).reset_index()
    return [{k: (v.item() if hasattr(v, "item") else v) for k, v in r.items()} for r in g.to_dict("records")]


def small_messages(cands: list[dict[str, Any]], all_streams: list[dict[str, Any]]) -> Characteristic:
    n = sum(c["msgs"] for c in cands)
    total = sum(s["msgs"] for s in all_streams if s["src_pe"] != s["dst_pe"])
    top = cands[:5]
    return Characteristic(
        "communication", "many_small_messages", len(cands),
        (Evidence("streams", len(cands), "", comm_gen.COMBINE_MIN_MSGS, "communication_edges"),
         Evidence("msgs_in_streams", n), Evidence("cross_pe_msgs", total),
         Evidence("top_streams", top)),
        confidence=round(min(1.0, total / 200), 3),
        summary=(f"{len(cands)} PE-pair streams carry {n} small messages (>= {comm_gen.COMBINE_MIN_MSGS} "
                 f"messages of <= {comm_gen.COMBINE_MAX_BYTES} bytes each)." if cands else
                 "No PE pair exchanges many small messages."))


def comm_hint(session: Any, cands: list[dict[str, Any]], why: Characteristic) -> dict[str, Any]:
    from hints.format import make_hint

    per_msg, local = DEFAULT_PER_MESSAGE_NS, None
    if session is not None:
        model = session.get("latency_model")
        if model.samples:
            per_msg, local = model.a_ns, model.overhead_ns
    saved = comm_gen.saving_ns(cands, per_msg, local)
    payload = {"combine": cands, "threshold": {"min_msgs": comm_gen.COMBINE_MIN_MSGS,
                                               "max_bytes": comm_gen.COMBINE_MAX_BYTES,
                                               "batch_bytes": comm_gen.BATCH_BYTES}}
    gain = {"msgs_before": sum(c["msgs"] for c in cands),
            "msgs_after": sum(-(-c["msgs"] // c["batch"]) for c in cands),
            "per_message_ns": round(per_msg, 1), "overhead_ns_saved": int(saved)}
    return make_hint("comm", payload, provenance=provenance_of(session.trace), justified_by=[justification(why)],
                     predicted_gain=gain)


def inferred_reductions(engine: Any) -> pd.DataFrame:
    """Reduction fan-in edges inferred from the timeline (communication_reductions), in the
    shape of communication_edges, flagged `inferred`; bytes are unknown (0)."""
    red = engine.query("communication_reductions").to_pandas()
    if red.empty:
        return pd.DataFrame(columns=["inferred"])
    keys = ["src_coll", "src_obj", "src_index", "src_pe", "dst_coll", "dst_obj", "dst_index", "dst_pe", "entry"]
    out = red.groupby(keys, sort=True, dropna=False).size().rename("msgs").reset_index()
    out["bytes"] = 0
    out["bcast_msgs"] = 0
    out["inferred"] = True
    return out


def size_histogram(groups: Any) -> Any:
    """communication_sizes rolled up from the overview's group table (its send rows carry the
    size bucket): one scan for both."""
    import pyarrow as pa
    import pyarrow.compute as pc

    g = groups.filter(pc.equal(groups.column("kind").cast(pa.string()), "send"))
    t = pa.table({"src_pe": g.column("pe"), "dst_pe": g.column("peer_pe"), "bucket_log2": g.column("size_log2"),
                  "msgs": g.column("rows"), "bytes": pc.fill_null(g.column("bytes"), 0),
                  "min_bytes": g.column("min_bytes"), "max_bytes": g.column("max_bytes")})
    keys = ["src_pe", "dst_pe", "bucket_log2"]
    out = t.group_by(keys, use_threads=False).aggregate(
        [("msgs", "sum"), ("bytes", "sum"), ("min_bytes", "min"), ("max_bytes", "max")])
    out = out.rename_columns([c.rsplit("_", 1)[0] if c.endswith(("_sum", "_min", "_max")) else c
                              for c in out.column_names])
    return out.select(keys + ["msgs", "bytes", "min_bytes", "max_bytes"]).sort_by(
        [(k, "ascending", "at_end") for k in keys])  # as communication_sizes' ORDER BY (nulls last)


NEEDS = frozenset({"communication_edges", "overview_groups", "exec_graph", "latency_model"})
"""Shared results communication reads (paradise.analyses.session.SHARED); the latency model
only when a comm hint is written."""


def analyze(session: Session, config: AnalysisConfig | None = None) -> AnalysisResult:
    """Patterns per collection, message sizes, small-message streams and the comm hint."""
    engine = session.engine
    edges = session.get("communication_edges").to_pandas()
    hist = size_histogram(session.get("overview_groups")).to_pandas()
    result = AnalysisResult("communication")
    if edges.empty:
        result.characteristics = withheld_patterns(edges, {})
        return result
    patterns = collection_patterns(pd.concat([edges, inferred_reductions(engine)], ignore_index=True))
    all_streams = streams(edges)
    cands = comm_gen.combine_candidates(streams(edges, p2p_only=True), same_pe=session.trace.source in SAME_PE_SOURCES)
    small = small_messages(cands, all_streams)
    result.characteristics = [*pattern_characteristics(patterns), *withheld_patterns(edges, patterns),
                              sizes(hist, size_quantiles(engine)), small]
    result.sections["patterns"] = patterns
    result.sections["streams"] = sorted(all_streams, key=lambda s: -s["msgs"])[:20]
    if cands:
        doc = comm_hint(session, cands, small)
        result.hints.append(doc)
        c0, g = cands[0], doc["predicted_gain"]
        result.sections["hint_explanations"] = [
            f"comm.json: combine small messages on {len(cands)} PE-pair stream(s), e.g. PE {c0['src_pe']} -> "
            f"PE {c0['dst_pe']} '{c0['entry']}' ({count(c0['msgs'])} messages of <= {exact_size(c0['max_bytes'])}), in batches "
            f"of {c0['batch']}: {count(g['msgs_before'])} messages become {count(g['msgs_after'])}, saving about "
            f"{fmt_s(g['overhead_ns_saved'])} of per-message cost."]
    return result
