"""Oracle for paradise.events.objloads.object_steps, written plainly in pandas over the fetched
placement_obj_load table (tests/oracles/sql: one row per object, PE and step); the event layer
rolls it up in the engine instead (events_object_steps), without a Python object per row."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

ORACLE_SQL = Path(__file__).resolve().parent / "sql"


def object_steps(engine: object) -> tuple[pd.DataFrame, pd.DataFrame, bool]:
    """(rows of oid, pe, step, load_ns, execs, last_t1, sorted by (oid, step); one row per oid with
    its coll and index text, in oid order; whether any exec with a step carries load). An
    object's rows on several PEs in one step are summed; its PE in a step is that of its latest
    exec (the highest PE on a tie). Rows without an index text are no object of the table."""
    t = engine.sql((ORACLE_SQL / "placement_obj_load.sql").read_text())  # type: ignore[attr-defined]
    df = t.select(["coll", "index", "pe", "step", "load_ns", "execs", "last_t1"]).to_pandas()
    has_step = df["step"].to_numpy() >= 0
    stepped = bool(has_step.any() and df["load_ns"].to_numpy()[has_step].sum() > 0)
    df = df[df["index"].notna()]
    if df.empty:
        empty = pd.DataFrame({c: pd.Series(dtype="int64") for c in ("oid", "pe", "step", "load_ns", "execs", "last_t1")})
        return empty, pd.DataFrame({"coll": pd.Series(dtype=object), "index": pd.Series(dtype=object)}), stepped
    df = df.sort_values(["coll", "index", "step", "last_t1", "pe"], kind="stable")
    keys = ["coll", "index", "step"]
    g = df.groupby(keys, sort=False)
    out = g.agg(load_ns=("load_ns", "sum"), execs=("execs", "sum")).reset_index()
    last = g.tail(1)  # the latest exec of each object and step (sorted by last_t1, then pe)
    out["last_t1"] = last["last_t1"].to_numpy(np.int64)
    out["pe"] = last["pe"].to_numpy(np.int64)
    new = (out["coll"] != out["coll"].shift()) | (out["index"] != out["index"].shift())
    out["oid"] = np.cumsum(new.to_numpy()) - 1
    labels = out.loc[new.to_numpy(), ["coll", "index"]].reset_index(drop=True)
    table = out[["oid", "pe", "step", "load_ns", "execs", "last_t1"]].astype("int64").reset_index(drop=True)
    return table, labels, stepped



def step_matrix(obj: pd.DataFrame) -> tuple[np.ndarray, np.ndarray]:
    """The step loads of the rows' table as a float matrix, one row per oid (0..max oid), one
    column per step >= 0 in step order, NaN where an object has no row for that step (pandas'
    unstack of (oid, step), reindexed to every oid)."""
    n_obj = int(obj["oid"].max()) + 1 if len(obj) else 0
    st = obj[obj["step"] >= 0]
    per = st.groupby(["oid", "step"])["load_ns"].sum().unstack("step").reindex(range(n_obj))
    steps = np.asarray(per.columns, dtype=np.int64)
    return per.to_numpy(float).reshape(n_obj, len(steps)), steps
