"""Oracle for the event layer's exec graph (its columns: paradise.events.bucketjoin; built a range of
PEs at a time, then a msg-hash bucket at a time, by paradise.events.execgraph): the same rows from a plain Python walk over the trace's
exec and send events, written from the column definitions, not from the production code.

Definitions (one row per exec with an end, ordered by PE, start, end):
* id: the exec's position in that order; pe_prev: the exec before it on its PE;
* cost_ns: `active`, else t1 - t0; pe_prev_t1: the previous exec's t0 + cost_ns; pe_prev_end: its t1;
* a message's send is its earliest send row (its PE, time, sender object), with the largest byte count
  of its send rows;
* the sending exec: the sender object's latest exec on the sending PE that started at or before the send,
  when the send falls within that exec's active time; otherwise the sending PE's latest exec started at
  or before the send, when it was still running (send <= t1); otherwise unknown;
* send_offset_ns: send time minus the start of the exec found by that search (the sender object's
  exec, else the PE's latest), whether or not the send fell in it;
* crit_pred: the sending exec when its message came after the PE's previous exec ended (or there is
  none) and it is not the exec itself, else pe_prev; wait_msg_ns: in that case, the idle time since
  the previous exec ended (since the run's first exec for a PE's first), else 0.
"""

from __future__ import annotations

import bisect
from collections import defaultdict
from typing import Any

COLUMNS = ("id", "pe", "t0", "t1", "cost_ns", "coll", "obj", "index", "name", "step", "prio", "pe_prev",
           "pe_prev_t1", "pe_prev_end", "src_id", "src_pe", "send_t0", "send_offset_ns", "bytes", "crit_pred",
           "wait_msg_ns")
GRAPH_SQL = "SELECT " + ", ".join(f'"{c}"' for c in COLUMNS) + " FROM exec_graph ORDER BY id"
"""The production graph's rows in the oracle's column order."""
EVENTS_SQL = ("SELECT kind, pe, t0, t1, active, coll, obj, index, name, step, prio, msg, bytes FROM events "
              "WHERE kind IN ('exec', 'send')")


class _Latest:
    """Execs grouped by a key, each group sorted by start: the latest one started at or before t."""

    def __init__(self) -> None:
        self.starts: dict[Any, list[int]] = defaultdict(list)
        self.rows: dict[Any, list[dict]] = defaultdict(list)

    def add(self, key: Any, row: dict) -> None:
        self.starts[key].append(row["t0"])
        self.rows[key].append(row)

    def at(self, key: Any, t: int) -> dict | None:
        k = bisect.bisect_right(self.starts.get(key, []), t)
        return self.rows[key][k - 1] if k else None


def _messages(sends: list[dict]) -> dict[int, dict]:
    """msg -> its earliest send row, with `bytes` the largest of its send rows."""
    out: dict[int, dict] = {}
    for s in sends:
        first = out.get(s["msg"])
        if first is None:
            out[s["msg"]] = dict(s)
            continue
        sizes = [b for b in (first["bytes"], s["bytes"]) if b is not None]
        if s["t0"] < first["t0"]:
            out[s["msg"]] = dict(s)
        out[s["msg"]]["bytes"] = max(sizes) if sizes else None
    return out


def _sender(send: dict, by_pe: _Latest, by_obj: _Latest) -> tuple[int | None, int | None]:
    """(id of the sending exec or None, start of the exec the offset is measured from or None)."""
    t = send["t0"]
    own = by_obj.at((send["pe"], send["coll"], send["obj"]), t) if send["coll"] is not None else None
    if own is not None and t - own["t0"] <= own["cost_ns"]:
        return own["id"], own["t0"]
    latest = by_pe.at(send["pe"], t)
    if latest is None:
        return None, None
    return (latest["id"] if t <= latest["t1"] else None), (own or latest)["t0"]


def exec_graph_rows(events: list[dict]) -> list[tuple]:
    """The exec graph's rows (COLUMNS) from the trace's exec and send events."""
    execs = sorted((e for e in events if e["kind"] == "exec" and e["t1"] is not None),
                   key=lambda e: (e["pe"], e["t0"], e["t1"]))
    by_pe, by_obj = _Latest(), _Latest()
    prev_on_pe: dict[int, dict] = {}
    rows = []
    for i, e in enumerate(execs):
        cost = e["active"] if e["active"] is not None else e["t1"] - e["t0"]
        r = {**e, "id": i, "cost_ns": cost, "prev": prev_on_pe.get(e["pe"])}
        prev_on_pe[e["pe"]] = r
        by_pe.add(e["pe"], r)
        if e["coll"] is not None and e["obj"] is not None:
            by_obj.add((e["pe"], e["coll"], e["obj"]), r)
        rows.append(r)
    msgs = _messages([e for e in events if e["kind"] == "send" and e["msg"] is not None])
    run_t0 = min((r["t0"] for r in rows), default=None)
    out = []
    for r in rows:
        p = r["prev"]
        prev_t1 = p["t0"] + p["cost_ns"] if p else None
        send = msgs.get(r["msg"]) if r["msg"] is not None else None
        src_id = offset = src_pe = send_t0 = nbytes = None
        if send is not None:
            src_id, start = _sender(send, by_pe, by_obj)
            src_pe, send_t0, nbytes = send["pe"], send["t0"], send["bytes"]
            offset = None if start is None else send_t0 - start
        came_last = src_id is not None and (p is None or send_t0 > prev_t1)
        crit = src_id if came_last and src_id != r["id"] else (p["id"] if p else None)
        wait = max(r["t0"] - (prev_t1 if p else run_t0), 0) if came_last else 0
        out.append((r["id"], r["pe"], r["t0"], r["t1"], r["cost_ns"], r["coll"], r["obj"], r["index"], r["name"],
                    r["step"], r["prio"], p["id"] if p else None, prev_t1, p["t1"] if p else None, src_id, src_pe,
                    send_t0, offset, nbytes, crit, wait))
    return out
