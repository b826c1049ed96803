"""Placement: load imbalance, object loads and their persistence, locality, creation; mapping.json.

Stage 1: overview_pe_time (busy per PE, shared; its load_imbalance is the overview's, read here for
the mapping hint and not repeated), events_object_steps (object loads per step, through
paradise.events.objloads), communication_edges (shared with communication through the session),
the collection kinds from the overview's group table, and placement_creation/placement_first_work
only when the trace creates or migrates objects. Stage 2: numpy over an object x step matrix of
loads, pandas for the rows per object; candidate mappings
from hints.generators.mapping, each replayed by paradise.whatif, the best kept only when it beats the
current mapping by KEEP_MARGIN.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from paradise.analyses.base import AnalysisConfig, AnalysisResult, Characteristic, Evidence
from paradise.analyses.pe_time import load_imbalance
from paradise.analyses.placement_hint import COMM_MATTERS_SHARE, mapping_hint
from paradise.analyses.session import Session
from paradise.importers import training_like
from paradise.whatif.model import STEP_LOAD_CLIP

HEAVY_OBJECT_RATIO = 1.5
"""An object is heavy when its load is at least this many times the median object load."""
PERSISTENT_CORR = 0.8
"""Step-to-step rank (Spearman) correlation of object loads above which last step predicts the next."""
PERSISTENT_REL_CHANGE = 0.15
"""...or load-weighted relative change (sum |L(k+1) - L(k)| / sum L(k)) below which loads are
persistent: flat loads have no correlation to measure; 15 % is timing noise on a shared machine."""
TRIM_SHARE = 0.1
"""Per step pair, the 10 % of objects (at least one, from 5 objects) whose load changed most are left
out of the change: a PE descheduled in one step makes one object's load jump, not the pattern."""
PERSIST_WINDOWS = 10
"""Runs of more steps are compared in this many windows of consecutive steps."""
TOP_OBJECTS = 10
FIXED_CATS = ("group", "nodegroup", "chare", "mainchare", "main", "runtime")
"""Chare kinds that cannot be placed by an ArrayMap: their load stays on its PE."""

Obj = tuple[str, str]


def applies(session: Session) -> bool:
    """Charm-style traces (objects, entry methods); not PyTorch ranks."""
    return not training_like(session.trace.source)


def _pes(trace: Any, pe_load: pd.DataFrame) -> int:
    seen = int(pe_load["pe"].max()) + 1 if len(pe_load) else 1
    return max(int(trace.metadata.get("pes") or 0), seen)


def object_loads(obj: pd.DataFrame, keys: tuple[str, ...] = ("coll", "index"),
                 stepped: bool | None = None) -> pd.DataFrame:
    """One row per object (`keys`: its text, or the object id of paradise.events.objloads):
    load, execs, and current PE (where it last ran).

    The load is that of the steps when the trace marks steps (the work that recurs and that a
    mapping moves): the median step load times the number of steps, so that one-off costs such
    as the first constructor or first step on a PE (imports, warm-up) do not pass for heavy
    objects. Without steps it is the load of the whole run."""
    if obj.empty:
        return pd.DataFrame(columns=[*keys, "load_ns", "execs", "pe"])
    k = list(keys)
    step_rows = obj[obj["step"] >= 0]
    if stepped is None:
        stepped = bool(len(step_rows) and step_rows["load_ns"].sum() > 0)
    if stepped:
        per = step_rows.groupby([*k, "step"], sort=True).agg(load_ns=("load_ns", "sum"), execs=("execs", "sum"))
        tot = per.groupby(level=k).agg(med=("load_ns", "median"), n=("load_ns", "size"), execs=("execs", "sum"))
        tot["load_ns"] = tot["med"] * tot["n"]  # typical step x steps: a warm-up spike is no load
        tot = tot[["load_ns", "execs"]]
    else:
        tot = obj.groupby(k, sort=True).agg(load_ns=("load_ns", "sum"), execs=("execs", "sum"))
    last = obj.sort_values("last_t1").groupby(k).tail(1).set_index(k)["pe"]
    out = tot.join(last, how="outer").reset_index()
    return out.fillna({"load_ns": 0, "execs": 0}).astype({"load_ns": "int64", "execs": "int64"})


def distribution(objs: pd.DataFrame) -> Characteristic:
    loads = objs["load_ns"].to_numpy(float)
    mean, med = float(loads.mean()), float(np.median(loads))
    cv = float(loads.std() / mean) if mean > 0 else 0.0
    heavy = objs[objs["load_ns"] >= HEAVY_OBJECT_RATIO * med].sort_values("load_ns", ascending=False)
    top = objs.sort_values(["load_ns", "coll", "index"], ascending=[False, True, True]).head(TOP_OBJECTS)
    names = [f"{c}{i}" for c, i in zip(heavy["coll"], heavy["index"])]
    return Characteristic(
        "placement", "object_load_distribution", round(cv, 4),
        (Evidence("objects", len(objs)), Evidence("cv", round(cv, 4)),
         Evidence("max_over_median", round(float(loads.max() / med), 4) if med > 0 else None, "",
                  HEAVY_OBJECT_RATIO, "events_object_steps"),
         Evidence("heavy_objects", names[:50]),
         Evidence("top_objects", [{"object": f"{c}{i}", "load_ns": int(v), "pe": int(p)}
                                  for c, i, v, p in zip(top["coll"], top["index"], top["load_ns"], top["pe"])])),
        confidence=round(min(1.0, len(objs) / 8), 3),
        summary=(f"{len(heavy)} of {len(objs)} objects are heavy (>= {HEAVY_OBJECT_RATIO}x the median load)"
                 + (f", led by {names[0]}" if names else "") + f"; object loads vary with CV {cv:.2f}."))


def step_persistence(per: np.ndarray, med: np.ndarray) -> Characteristic:
    """load_persistence of a matrix of step loads: one row per object, one column per step in
    step order, NaN where an object has no load in a step, no row or column all NaN; `med`: each
    row's median (ObjectSteps.med)."""
    from paradise.events.steploads import windowed

    return persistence(windowed(per, med, STEP_LOAD_CLIP, PERSIST_WINDOWS))


def persistence(per: np.ndarray) -> Characteristic:
    """load_persistence of step loads as steploads.windowed gives them: each object's step loads
    clipped at STEP_LOAD_CLIP x its median step load (a step in which the OS descheduled the PE reads
    10-100x the object's usual load: the spike, not the pattern), in long runs the medians of
    PERSIST_WINDOWS windows of steps (so that timing noise of single steps of tiny objects does not
    pass for changing loads)."""
    present = ~np.isnan(per)
    corrs, changes, weights = [], [], []
    for a in range(per.shape[1] - 1):
        pair = present[:, a] & present[:, a + 1]
        if pair.sum() < 2:
            continue
        x, y = per[pair, a], per[pair, a + 1]
        rx, ry = pd.Series(x).rank().to_numpy(float), pd.Series(y).rank().to_numpy(float)
        # rank (Spearman) correlation: one descheduled step on a shared machine must not hide
        # that heavy objects stay heavy
        corrs.append(float(np.corrcoef(rx, ry)[0, 1]) if rx.std() > 0 and ry.std() > 0 else np.nan)
        d = np.abs(y - x)
        keep = np.argsort(d)[: len(d) - (max(1, int(len(d) * TRIM_SHARE)) if len(d) >= 5 else 0)]
        changes.append(float(d[keep].sum() / max(float(x[keep].sum()), 1.0)))  # load-weighted, trimmed
        weights.append(int(pair.sum()))
    if not weights:
        return Characteristic("placement", "load_persistence", None, (Evidence("step_pairs", 0),),
                              confidence=0.0, summary="No steps in the trace: persistence of loads is unknown.")
    # medians over step pairs: a step in which the machine descheduled a PE is one outlier pair
    corr = float(np.nanmedian(corrs)) if not all(np.isnan(corrs)) else None
    change = float(np.median(changes))
    persistent = (corr is not None and corr >= PERSISTENT_CORR) or change <= PERSISTENT_REL_CHANGE
    return Characteristic(
        "placement", "load_persistence", round(corr, 4) if corr is not None else round(1 - change, 4),
        (Evidence("step_pairs", len(weights)),
         Evidence("mean_step_corr", round(corr, 4) if corr is not None else None, "", PERSISTENT_CORR),
         Evidence("mean_rel_change", round(change, 4), "", PERSISTENT_REL_CHANGE, "events_object_steps"),
         Evidence("persistent", persistent)),
        confidence=round(min(1.0, len(weights) / 5), 3),
        summary=("Object loads persist from step to step: the last step predicts the next."
                 if persistent else "Object loads change from step to step: past loads predict poorly."))


def locality(edges: pd.DataFrame) -> Characteristic:
    e = edges[edges["dst_pe"].notna()]
    total_b, total_m = float(e["bytes"].sum()), float(e["msgs"].sum())
    cross = e[e["src_pe"] != e["dst_pe"]]
    share_b = float(cross["bytes"].sum() / total_b) if total_b else 0.0
    share_m = float(cross["msgs"].sum() / total_m) if total_m else 0.0
    obj_e = e[e["src_index"].notna() & e["dst_index"].notna()]
    pairs = obj_e.groupby(["src_coll", "src_index", "dst_coll", "dst_index"]).ngroups
    cut_edges = obj_e[obj_e["src_pe"] != obj_e["dst_pe"]].groupby(
        ["src_coll", "src_index", "dst_coll", "dst_index"]).ngroups
    return Characteristic(
        "placement", "communication_locality", round(share_b, 4),
        (Evidence("cross_pe_bytes_share", round(share_b, 4), "", COMM_MATTERS_SHARE, "communication_edges"),
         Evidence("cross_pe_msgs_share", round(share_m, 4)), Evidence("bytes", int(total_b), "bytes"),
         Evidence("msgs", int(total_m)), Evidence("edge_cut", int(cut_edges)),
         Evidence("object_edges", int(pairs))),
        confidence=round(min(1.0, total_m / 100), 3),
        summary=f"{share_b:.0%} of message bytes ({share_m:.0%} of messages) cross PEs; "
                f"{cut_edges} of {pairs} object edges are cut.")


def creation(cr: pd.DataFrame) -> Characteristic:
    arrays = cr[(cr["creates"] > 0) & ~cr["cat"].fillna("").isin(FIXED_CATS)]
    dyn = arrays[(arrays["create_last_t0"] > arrays["work_first_t0"]) | (arrays["migrations"] > 0)]
    value = "dynamic" if len(dyn) else ("static" if len(arrays) else "unknown")
    return Characteristic(
        "placement", "object_creation", value,
        (Evidence("collections", sorted(arrays["coll"].astype(str))),
         Evidence("dynamic_collections", sorted(dyn["coll"].astype(str))),
         Evidence("creates", int(arrays["creates"].sum())), Evidence("migrations", int(cr["migrations"].sum()))),
        confidence=0.9 if len(arrays) else 0.0,
        summary={"dynamic": "Objects are created or migrated while the program works: placement changes at run time.",
                 "static": "All objects are created before work starts and never migrate: placement is static.",
                 "unknown": "The trace records no object creation."}[value])


def movable(objs: pd.DataFrame, cr: pd.DataFrame) -> pd.DataFrame:
    """Objects an ArrayMap can place: array elements (chare kind not group/singleton)."""
    cats = dict(zip(cr["coll"], cr["cat"].fillna("")))
    counts = objs.groupby("coll")["index"].transform("size")
    ok = [(cats.get(c, "") not in FIXED_CATS) and (cats.get(c, "") != "" or n > 1)
          for c, n in zip(objs["coll"], counts)]
    return objs[np.asarray(ok, bool)] if len(objs) else objs


def creation_table(session: Any) -> pd.DataFrame:
    """Per collection with create, exec or migrate rows: cat, creates, create_first_t0,
    create_last_t0, migrations and work_first_t0 (its first exec of an entry method other than
    __init__). placement_creation and placement_first_work run only when the trace has create
    or migrate rows; without them work_first_t0 is null (creation() reads it for created
    collections only)."""
    import pyarrow as pa
    import pyarrow.compute as pc

    cats = collection_kinds(session.get("overview_groups"))
    colls = [str(c) for c in cats.column("coll").to_pylist()]
    n = len(colls)
    cols: dict[str, list[Any]] = {k: [None] * n for k in ("create_first_t0", "create_last_t0", "work_first_t0")}
    cols["creates"], cols["migrations"] = [0] * n, [0] * n
    if n and pc.sum(cats.column("lifecycle")).as_py():
        at = {c: i for i, c in enumerate(colls)}
        for r in session.engine.query("placement_creation").to_pylist():
            i = at[str(r["coll"])]
            for k in ("creates", "create_first_t0", "create_last_t0", "migrations"):
                cols[k][i] = r[k]
        for r in session.engine.query("placement_first_work").to_pylist():
            if str(r["coll"]) in at:
                cols["work_first_t0"][at[str(r["coll"])]] = r["work_first_t0"]
    return pa.table({"coll": pa.array(colls, pa.string()), "cat": cats.column("cat").cast(pa.string()),
                     "creates": pa.array(cols["creates"], pa.int64()),
                     "create_first_t0": pa.array(cols["create_first_t0"], pa.int64()),
                     "create_last_t0": pa.array(cols["create_last_t0"], pa.int64()),
                     "migrations": pa.array(cols["migrations"], pa.int64()),
                     "work_first_t0": pa.array(cols["work_first_t0"], pa.int64())}).to_pandas()


def collection_kinds(groups: Any) -> Any:
    """placement_cats (coll, cat, lifecycle) rolled up from the overview's group table (one
    scan for both)."""
    import pyarrow as pa
    import pyarrow.compute as pc

    kind = groups.column("kind").cast(pa.string())
    g = groups.filter(pc.and_(pc.is_in(kind, pa.array(["create", "exec", "migrate"])),
                              pc.is_valid(groups.column("coll"))))
    lifecycle = pc.if_else(pc.equal(g.column("kind").cast(pa.string()), "exec"), 0, g.column("rows")).cast(pa.int64())
    t = pa.table({"coll": g.column("coll").cast(pa.string()), "cat": g.column("cat").cast(pa.string()),
                  "lifecycle": lifecycle})
    out = t.group_by("coll").aggregate([("cat", "max"), ("lifecycle", "sum")])
    out = out.rename_columns([{"cat_max": "cat", "lifecycle_sum": "lifecycle"}.get(c, c) for c in out.column_names])
    return out.select(["coll", "cat", "lifecycle"]).sort_by("coll")


NEEDS = frozenset({"overview_groups", "pe_time", "object_steps", "communication_edges", "exec_graph", "replayer",
                   "not_replayed"})
"""Shared results placement reads (paradise.analyses.session.SHARED); the replayer only when
the trace is small enough to replay."""


def analyze(session: Session, config: AnalysisConfig | None = None) -> AnalysisResult:
    """Placement characteristics and the mapping hint."""
    from paradise.events import objloads

    trace = session.trace
    pe_time = session.get("pe_time")
    pe_load = pe_time.select(["pe", "busy_ns"]).to_pandas()
    obj = session.get("object_steps")
    cr = creation_table(session)
    edges = session.get("communication_edges").to_pandas()
    pes = _pes(trace, pe_load)
    result = AnalysisResult("placement")
    if pe_load.empty:
        return result
    by_oid = objloads.oid_loads(obj, obj.med)
    if by_oid is None:  # an object's latest end is tied: its PE as object_loads picks it
        by_oid = object_loads(obj.rows, ("oid",), obj.stepped)
    labels = obj.labels
    objs = pd.concat([labels.iloc[by_oid["oid"].to_numpy(int)].reset_index(drop=True), by_oid],
                     axis=1)  # coll, index, oid, load_ns, execs, pe: oid order is (coll, index) text order
    mov = movable(objs, cr)
    app = mov if len(mov) else objs  # runtime and main chares are not the application's objects
    chars: list[Characteristic] = []
    if len(app):
        rows = np.unique(app["oid"].to_numpy(np.int64))
        rows = rows[obj.ran[rows] > 0]  # objects with step loads
        chars += [distribution(app), persistence(obj.windows(rows, STEP_LOAD_CLIP, PERSIST_WINDOWS))]
    chars += [locality(edges), creation(cr)]
    result.characteristics = chars
    result.sections["pe_load_ns"] = [int(x) for x in _busy(pe_load, pes)]
    doc, candidates, text = mapping_hint(session, pes, objs, mov, edges, [load_imbalance(pe_time), *chars],
                                         _busy(pe_load, pes))
    result.sections["mapping_candidates"] = candidates
    if doc is not None:
        result.hints.append(doc)
        result.sections["hint_explanations"] = [text]
    return result


def _busy(pe_load: pd.DataFrame, pes: int) -> list[float]:
    busy = np.zeros(pes)
    busy[pe_load["pe"].to_numpy(int)] = pe_load["busy_ns"].to_numpy(float)
    return busy.tolist()
