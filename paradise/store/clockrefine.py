"""The ping offsets refined by the messages themselves: every message sent on one PE and executed on
another bounds the difference of their offsets (its exec cannot start before its send), and each
PE's offset lies within its ping's stated error. The refined offset of a PE is the middle of the
interval all those bounds leave it (as Jezequel's and Projections' tachyon corrections do, here as a
constant shift per PE on top of the ping's linear correction); where no offsets satisfy them all,
the trace says so and keeps the ping offsets (never a silent shift).

Measured once where the trace is written (paradise.store.compaction; stored in the per-PE files'
`clock.refinement` as paradise.store.clockstore says) and applied by open_trace from there; only a
trace with offsets and no stored outcome (written before) is measured at read time. One aggregate per PE pair over
the send -> exec join (paradise/sql/clock_message_bounds.sql), then shortest paths over the pairs'
difference constraints (numpy Bellman-Ford, one pass per PE at most).
"""

from __future__ import annotations

import shutil
from importlib import resources
from pathlib import Path
from typing import Any

import numpy as np

from paradise.errors import OutOfMemory, TruncatedTrace
from paradise.memory import DUCKDB_SHARE, default_memory_limit
from paradise.scratch import make_spill_dir
from paradise.store.clock import Correction, corrected_sql

METHOD = "message_bounds"
"""`clock.refinement.method`: offsets moved to the middle of what the messages and the pings allow."""
BOUNDS_SQL = "clock_message_bounds"
"""paradise/sql/<this>.sql: the per-pair aggregate over the send -> exec join."""
MIN_LATENCY_NS = 1
"""Least time from a send to its exec: with 1 ns, the shifts rounded to whole ns keep every bound."""


def message_bounds(files: list[str], corrections: dict[str, Correction], memory_limit: int | None = None
                   ) -> list[dict[str, int]]:
    """Per (sender, receiver) PE pair: messages, lead_ns and backward, after the ping correction
    (clock_message_bounds.sql). DuckDB holds to `memory_limit` bytes (default: the engines' share
    of the default budget) and spills into a temporary directory of its own."""
    import duckdb

    from paradise.store.connection import database
    from paradise.units import binary_size

    sql = resources.files("paradise.sql").joinpath(f"{BOUNDS_SQL}.sql").read_text()
    con = database()
    spill = make_spill_dir()
    try:
        con.execute("SET memory_limit = $m", {"m": f"{int((memory_limit or default_memory_limit()) * DUCKDB_SHARE)}B"})
        con.execute("SET temp_directory = $d", {"d": spill})
        rows = ("SELECT r.kind, r.pe, r.msg, " + corrected_sql(files, corrections, ("t0",))
                + " FROM (SELECT kind, pe, msg, t0, file_index::BIGINT AS _file FROM read_parquet($files, "
                "union_by_name = true) WHERE kind IN ('send', 'exec') AND msg IS NOT NULL) r")
        cur = con.execute(f"WITH clock_rows AS ({rows})\n{sql}", {"files": files})
        names = [d[0] for d in cur.description]
        return [dict(zip(names, r)) for r in cur.fetchall()]  # one row per PE pair
    except duckdb.OutOfMemoryException as exc:
        raise OutOfMemory(f"{Path(files[0]).parent}: aligning the clocks by the messages needs more memory than "
                          f"{binary_size(memory_limit or default_memory_limit())} (--memory-limit) allows, even "
                          f"spilling to disk ({str(exc).splitlines()[0][:120]})") from None
    except duckdb.Error as exc:
        raise TruncatedTrace(f"{Path(files[0]).parent}: unreadable data while aligning clocks "
                             f"({str(exc).splitlines()[0][:120]})") from None
    finally:
        con.close()
        shutil.rmtree(spill, ignore_errors=True)


def _shortest(n: int, u: np.ndarray, v: np.ndarray, w: np.ndarray) -> np.ndarray | None:
    """Shortest path lengths from node 0 over edges u -> v of weight w; None on a negative cycle."""
    dist = np.full(n, np.inf)
    dist[0] = 0.0
    for _ in range(n):
        new = dist.copy()
        np.minimum.at(new, v, dist[u] + w)
        if np.array_equal(new, dist):
            return dist
        dist = new
    return None


def solve(pairs: list[dict[str, int]], errors: dict[int, int]) -> dict[int, tuple[int, int]] | None:
    """Per PE with a ping error > 0 (errors: PE -> error_ns; 0 for the reference, PE 0): the interval
    [lo, hi] of shifts that keeps it within its error and puts every exec at least MIN_LATENCY_NS after
    its send, given such shifts for all of them at once; None when there are none. Pairs with a PE
    not in `errors` (no offset measured, or no error stated) bound nothing.
    x_r - x_s >= lead + MIN_LATENCY_NS per pair and |x_p| <= error are difference constraints: hi is
    the shortest path from the reference node, lo minus the shortest path to it; both extremes are
    solutions, so their middle (each PE's middle) is one too."""
    node = {pe: i + 1 for i, pe in enumerate(sorted(pe for pe, err in errors.items() if err > 0))}
    u: list[int] = []
    v: list[int] = []
    w: list[float] = []
    for pe, i in node.items():
        u += [0, i]
        v += [i, 0]
        w += [float(errors[pe])] * 2
    for p in pairs:  # x_src - x_dst <= -(lead + MIN_LATENCY_NS): an edge dst -> src
        if p["src_pe"] in errors and p["dst_pe"] in errors:
            u.append(node.get(p["dst_pe"], 0))
            v.append(node.get(p["src_pe"], 0))
            w.append(-float(p["lead_ns"] + MIN_LATENCY_NS))
    ua, va, wa = np.array(u, dtype=np.int64), np.array(v, dtype=np.int64), np.array(w)
    hi = _shortest(len(node) + 1, ua, va, wa)
    to_reference = _shortest(len(node) + 1, va, ua, wa)
    if hi is None or to_reference is None:
        return None
    return {pe: (int(-to_reference[i]), int(hi[i])) for pe, i in node.items()}


def measure(files: list[str], corrections: dict[str, Correction], clock: dict[str, Any],
            memory_limit: int | None = None) -> dict[str, Any]:
    """The trace's `clock.refinement` entry: what the message bounds allow given the ping
    corrections (`status` refined, no_messages or inconsistent; per PE shift and bounds)."""
    errors = {int(pe): int(e["error_ns"]) for pe, e in clock["offsets"].items()
              if e.get("error_ns") is not None and pe.isdigit()}
    pairs = message_bounds(files, corrections, memory_limit)
    out: dict[str, Any] = {"method": METHOD, "min_latency_ns": MIN_LATENCY_NS,
                           "messages": sum(p["messages"] for p in pairs),
                           "backward_before": sum(p["backward"] for p in pairs)}
    bounds = solve(pairs, errors) if pairs and any(errors.values()) else {}
    if bounds is None:
        out["status"] = "inconsistent"
        out["detail"] = (f"no offsets within the pings' stated errors put every exec after its send "
                         f"({out['backward_before']:,} of {out['messages']:,} messages backward): "
                         f"ping offsets kept, times not shifted")
        return out
    if not bounds:
        out["status"] = "no_messages"
        return out
    per_pe: dict[str, dict[str, int]] = {}
    for pe, (lo, hi) in bounds.items():
        shift = (lo + hi + 1) // 2  # whole ns; with MIN_LATENCY_NS every bound still holds
        per_pe[str(pe)] = {"shift_ns": shift, "lo_ns": lo, "hi_ns": hi, "error_ns": max(hi - shift, shift - lo)}
    out.update(status="refined", pes=per_pe, residual_ns=max(e["error_ns"] for e in per_pe.values()))
    return out


def apply(refinement: dict[str, Any], files: list[str], file_pes: list[Any], corrections: dict[str, Correction],
          clock: dict[str, Any]) -> tuple[dict[str, Correction], dict[str, Any]]:
    """The ping corrections moved by a refinement (measured or stored), and the trace's `clock`
    summary with it as `refinement` and the `final_method`; unchanged unless it is `refined`."""
    if refinement.get("status") != "refined":
        return corrections, {**clock, "refinement": refinement, "final_method": clock.get("method")}
    moved = dict(corrections)
    for f, pe in zip(files, file_pes):
        entry = refinement["pes"].get(str(pe))
        if entry is None or not entry["shift_ns"]:
            continue
        t_start, offset, drift = corrections.get(f) or (int(clock["offsets"].get(str(pe), {}).get("t_start") or 0), 0, 0.0)
        moved[f] = (t_start, offset + entry["shift_ns"], drift)
    return moved, {**clock, "refinement": refinement, "final_method": f"{clock.get('method')}+{METHOD}"}
