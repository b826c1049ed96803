"""Critical path of one training step across ranks (Kineto traces): which rank, CPU op and kernel
the step waited for. HTA's critical path covers one rank; here collectives join the ranks.

Stage 1 is paradise/sql/critical_path_rows.sql (the slowest step's launches, syncs and device
rows on every rank); stage 2 walks back from the step's last device row, at each node to the
predecessor that became ready last: the previous row on the same stream, the launch call, the
latest peer of a collective, the previous call on the launching thread, or the device row a
synchronisation waited for. The walk visits each row at most once. Definitions:
docs/analyses/step_critical_path.md.
"""

from __future__ import annotations

from collections import defaultdict
from typing import Any

import numpy as np
import pandas as pd

from paradise.analyses.base import AnalysisConfig, AnalysisResult, Characteristic, Evidence
from paradise.analyses.devices import has_device_rows, records
from paradise.analyses.session import Session
from paradise.engines import Engine
from paradise.units import duration

TOP = 10
"""Kernels and ops listed by their time on the path."""
PEER_SLACK_NS = 1_000
"""A collective waited for a peer when the peer's matching row started this much later or more."""


def applies(session: Session) -> bool:
    """Training traces with device rows (launches link the host to the device)."""
    return has_device_rows(session.trace)


class _Rows:
    """The step's rows as arrays, with per-lane orders for predecessor lookups."""

    def __init__(self, df: pd.DataFrame) -> None:
        self.df = df.reset_index(drop=True)
        self.t0 = self.df["t0"].to_numpy(np.int64)
        self.t1 = self.df["t1"].to_numpy(np.int64)
        self.role = self.df["role"].to_numpy(object)
        self.pe = self.df["pe"].to_numpy(np.int64)
        self.prev: dict[int, int] = {}
        for _, g in self.df.groupby(["role_side", "pe", "lane"]):
            idx = g.sort_values(["t0", "t1"]).index.to_numpy()
            self.prev.update(zip(idx[1:].tolist(), idx[:-1].tolist()))
        host = self.df[self.df["role"] == "launch"].dropna(subset=["msg"])
        self.launch_of = dict(zip(host["msg"].astype("int64"), host.index))
        dev = self.df[self.df["role"] == "device"]
        self.dev_by_pe = {pe: (g.sort_values("t1")["t1"].to_numpy(np.int64), g.sort_values("t1").index.to_numpy())
                          for pe, g in dev.groupby("pe")}  # fmt: skip
        self.peers = _match_collectives(self.df)

    def device_before(self, pe: int, t: int) -> int | None:
        ends, idx = self.dev_by_pe.get(pe, (np.zeros(0, np.int64), np.zeros(0, np.int64)))
        k = int(np.searchsorted(ends, t, side="right")) - 1
        return int(idx[k]) if k >= 0 else None


def _match_collectives(df: pd.DataFrame) -> dict[int, list[int]]:
    """Each device collective's counterparts on the other ranks: the overlapping collective with
    the nearest end (collectives end together, whatever the ranks' trace windows hold)."""
    coll = df[df["coll_seq"].notna()]
    by_pe = {pe: g for pe, g in coll.groupby("pe")}
    out: dict[int, list[int]] = defaultdict(list)
    for pe, g in by_pe.items():
        for i, r in g.iterrows():  # a handful of collectives per step
            for other, h in by_pe.items():
                if other == pe:
                    continue
                ov = h[(h["t0"] < r["t1"]) & (h["t1"] > r["t0"])]
                if not ov.empty:
                    out[i].append(int((ov["t1"] - r["t1"]).abs().idxmin()))
    return out


def walk(rows: _Rows) -> list[dict[str, Any]]:
    """Segments of the critical path, last first: (rank, what, name, op, t0, t1)."""
    df = rows.df
    dev = np.flatnonzero(rows.role == "device")
    if dev.size == 0:
        return []
    node = int(dev[np.argmax(rows.t1[dev])])
    segs: list[dict[str, Any]] = []
    seen: set[int] = set()
    run_from: int | None = None

    def seg(i: int, what: str, a: int, b: int) -> None:
        if b > a:
            segs.append({"pe": int(rows.pe[i]), "what": what, "name": df.at[i, "name"], "op": df.at[i, "op"],
                         "t0": int(a), "t1": int(b)})  # fmt: skip

    while node is not None and node not in seen:
        seen.add(node)
        role, t0, t1 = rows.role[node], int(rows.t0[node]), int(rows.t1[node])
        end = t1 if run_from is None else run_from
        run_from = None
        if role == "device":
            peers = [p for p in rows.peers.get(node, []) if p not in seen]
            late = max(peers, key=lambda p: rows.t0[p], default=None)
            if late is not None and rows.t0[late] > t0 + PEER_SLACK_NS:
                seg(node, "collective", int(rows.t0[late]), end)
                seg(node, "wait_for_peer", t0, int(rows.t0[late]))
                node, run_from = late, int(rows.t0[late])
                seen.discard(late)
                continue
            seg(node, "collective" if pd.notna(df.at[node, "coll_seq"]) else "kernel", t0, end)
            cands = [c for c in (rows.prev.get(node), rows.launch_of.get(df.at[node, "msg"])) if c is not None]
        elif role == "launch":
            seg(node, "launch", t0, end)
            cands = [c for c in (rows.prev.get(node),) if c is not None]
        else:  # sync: waited for the device row that ended last before it returned
            seg(node, "sync", t0, end)
            waited = rows.device_before(int(rows.pe[node]), t1)
            cands = [c for c in (waited, rows.prev.get(node)) if c is not None]
        if not cands:
            break
        best = max(cands, key=lambda c: rows.t1[c])
        ready = int(rows.t1[best])
        if ready < t0:
            gap = "cpu" if role != "device" else ("launch_delay" if rows.role[best] != "device" else "stream_gap")
            seg(node, gap, ready, t0)
        elif rows.role[best] == "device" and role == "sync":
            run_from = min(ready, t1)
        node = best
    return segs


def _summary(segs: pd.DataFrame) -> dict[str, Any]:
    segs = segs.assign(dur_ns=segs["t1"] - segs["t0"])
    by_what = segs.groupby("what")["dur_ns"].sum().sort_values(ascending=False)
    work = segs[segs["what"] != "wait_for_peer"]  # waiting is the peer's time, not this rank's work
    by_pe = work.groupby("pe")["dur_ns"].sum().sort_values(ascending=False)
    on_dev = segs[segs["what"].isin(["kernel", "collective"])]
    kernels = on_dev.groupby(["pe", "name"])["dur_ns"].sum().sort_values(ascending=False).head(TOP)
    ops = segs.dropna(subset=["op"]).groupby(["pe", "op"])["dur_ns"].sum().sort_values(ascending=False).head(TOP)
    return {
        "length_ns": int(segs["t1"].max() - segs["t0"].min()),
        "by_kind": [{"what": k, "dur_ns": int(v)} for k, v in by_what.items()],
        "by_rank": [{"pe": int(k), "dur_ns": int(v)} for k, v in by_pe.items()],
        "kernels": [{"pe": int(p), "name": str(n), "dur_ns": int(v)} for (p, n), v in kernels.items()],
        "ops": [{"pe": int(p), "op": str(o), "dur_ns": int(v)} for (p, o), v in ops.items()],
    }


def _slowest_step(engine: Engine) -> int | None:
    steps = engine.query("training_breakdown").to_pandas()
    if steps.empty:
        return None
    return int(steps.groupby("step")["step_ns"].max().idxmax())


def analyze(session: Session, config: AnalysisConfig | None = None) -> AnalysisResult:
    """Builds the slowest step's critical path across ranks and says what it waited for."""
    engine = session.engine
    config = config or AnalysisConfig()
    result = AnalysisResult(name="step_critical_path")
    step = _slowest_step(engine)
    if step is None:
        return result
    df = engine.query("critical_path_rows", step=step).to_pandas()
    if df.empty:
        return result
    df["role_side"] = np.where(df["role"] == "device", "device", "host")
    segs = pd.DataFrame(walk(_Rows(df)))
    if segs.empty:
        return result
    s = _summary(segs)
    top_k = s["kernels"][0] if s["kernels"] else None
    top_op = s["ops"][0] if s["ops"] else None
    rank = s["by_rank"][0]
    waits = next((r["dur_ns"] for r in s["by_kind"] if r["what"] == "wait_for_peer"), 0)
    result.characteristics.append(Characteristic(
        "training", "step_critical_path", rank["pe"],
        (Evidence("step", step, "step", None, "critical_path_rows"),
         Evidence("length", s["length_ns"], "ns", None, "critical_path_rows"),
         Evidence("rank_time", rank["dur_ns"], "ns", None, "critical_path_rows"),
         Evidence("wait_for_peer", int(waits), "ns", None, "critical_path_rows")),
        0.7,
        f"Step {step}'s critical path ({duration(s['length_ns'])}) runs mostly on rank {rank['pe']} "
        f"({duration(rank['dur_ns'])})"
        + (f"; its longest kernel time is {top_k['name'][:60]!r} ({duration(top_k['dur_ns'])})" if top_k else "")
        + (f", its costliest CPU op {top_op['op']!r} ({duration(top_op['dur_ns'])})" if top_op else "")
        + (f"; collectives waited {duration(waits)} for peers." if waits else "."),
    ))  # fmt: skip
    result.sections.update(step=step, summary=s, path=records(segs.iloc[::-1].reset_index(drop=True)))
    return result
