"""Tiny synthetic paradise traces for tests, written with the real tests.trace_writer.TraceWriter.

Build rows with a TraceBuilder (one call per event, times in ns), then `write(dir)`:

    b = TraceBuilder(pes=2)
    b.exec(0, 0, 100, "Cell.work", coll="Cell#0", obj=0)
    m = b.send(0, 50, peer_pe=1, nbytes=64, name="Cell.recv")
    b.exec(1, 120, 200, "Cell.recv", msg=m)
    b.idle(1, 0, 120)
    path = b.write(tmp_path / "trace")

`message()` writes a linked send and exec in one call. Two canned runs cover the common
shapes: `charm_like()` (execs and idles tile every PE's span, neighbour messages each step)
and `torch_like()` (steps, nested CPU ops on two threads, GPU kernels, all_reduce collectives).
"""

from __future__ import annotations

import itertools
import random
from pathlib import Path
from typing import Any

from paradise.format import COLUMN_NAMES, index_text, pack_index
from tests.trace_writer import TraceWriter


class TraceBuilder:
    """Collects event rows per PE and writes them as per-PE paradise files."""

    def __init__(self, pes: int, *, source: str = "synthetic", program: str = "synthetic", **metadata: Any):
        self.pes = pes
        self.metadata = {"source": source, "program": program, "pes": pes, **metadata}
        self.rows: dict[int, list[dict[str, Any]]] = {pe: [] for pe in range(pes)}
        self._msg_ids = itertools.count(1)

    # -- rows ---------------------------------------------------------------------------------
    def add(self, pe: int, kind: str, t0: int, t1: int | None = None, **cols: Any) -> None:
        """Any row: kind and times plus columns by name (index may be a tuple: packed into obj)."""
        unknown = set(cols) - set(COLUMN_NAMES)
        if unknown:
            raise ValueError(f"unknown trace columns: {sorted(unknown)}")
        if isinstance(cols.get("index"), (tuple, list)):
            idx = cols["index"]
            cols["index"] = index_text(idx)
            cols.setdefault("obj", pack_index(idx))
        self.rows.setdefault(pe, []).append({"kind": kind, "pe": pe, "t0": int(t0), "t1": t1, **cols})

    def next_msg(self) -> int:
        return next(self._msg_ids)

    def exec(self, pe: int, t0: int, t1: int, name: str = "work", **cols: Any) -> None:
        """An entry method / op / kernel interval."""
        self.add(pe, "exec", t0, t1, name=name, **cols)

    def idle(self, pe: int, t0: int, t1: int) -> None:
        self.add(pe, "idle", t0, t1)

    def send(self, pe: int, t: int, peer_pe: int, nbytes: int, *, msg: int | None = None, **cols: Any) -> int:
        """A send instant; returns its message id (link it to the receiving exec's `msg`)."""
        msg = self.next_msg() if msg is None else msg
        self.add(pe, "send", t, t, peer_pe=peer_pe, bytes=nbytes, msg=msg, **cols)
        return msg

    def message(
        self,
        src_pe: int,
        t_send: int,
        dst_pe: int,
        t0: int,
        t1: int,
        name: str,
        nbytes: int,
        *,
        src: tuple[str, int] | None = None,
        dst: tuple[str, int] | None = None,
        step: int | None = None,
    ) -> int:
        """A send on src_pe and the exec it causes on dst_pe, linked by one msg id."""
        s_cols = {"coll": src[0], "obj": src[1]} if src else {}
        d_cols = {"coll": dst[0], "obj": dst[1], "index": index_text(dst[1])} if dst else {}
        peer = {"peer_coll": dst[0], "peer_obj": dst[1]} if dst else {}
        msg = self.send(src_pe, t_send, dst_pe, nbytes, name=name, step=step, **s_cols, **peer)
        self.exec(dst_pe, t0, t1, name, msg=msg, bytes=nbytes, peer_pe=src_pe, step=step, **d_cols)
        return msg

    def create(self, pe: int, t: int, coll: str, index: int | tuple[int, ...]) -> None:
        self.add(pe, "create", t, None, coll=coll, index=index if isinstance(index, tuple) else (index,))

    def step(self, pe: int, step: int, t0: int, t1: int, name: str | None = None) -> None:
        self.add(pe, "step", t0, t1, step=step, name=name or f"step#{step}")

    def collective(
        self, pe: int, name: str, t0: int, t1: int, *, nbytes: int, group: str = "world",
        group_size: int | None = None, step: int | None = None, dtype: str = "float32",
    ) -> None:
        self.add(
            pe, "collective", t0, t1, name=name, bytes=nbytes, group=group,
            group_size=group_size or self.pes, step=step, dtype=dtype, coll=group,
        )

    # -- output -------------------------------------------------------------------------------
    def write(self, directory: str | Path, *, parts_per_pe: int = 1, complete: bool = True) -> Path:
        """Writes pe-NNNNN.parquet per PE (rows in t0 order); returns the trace directory.

        parts_per_pe > 1 leaves each PE as that many part files, as a run killed before its
        writers closed does (the trace then reads as not complete)."""
        out = Path(directory)
        for pe, rows in sorted(self.rows.items()):
            rows = sorted(rows, key=lambda r: (r["t0"], r["t1"] if r["t1"] is not None else r["t0"]))
            per_part = max(1, -(-len(rows) // parts_per_pe))
            w = TraceWriter(out, pe, flush_rows=10**9, flush_interval_s=1e9, **self.metadata)
            for i, r in enumerate(rows):
                w.append_dict(**r)
                if parts_per_pe > 1 and (i + 1) % per_part == 0:
                    w.flush()
            if parts_per_pe > 1:
                w.flush()  # leave the parts: no compaction
            else:
                w.close(complete=complete)
        return out


def charm_like(
    pes: int = 4, objs_per_pe: int = 2, steps: int = 3, seed: int = 0, *, program: str = "stencil"
) -> TraceBuilder:
    """A bulk-synchronous Charm-style run: each step every object computes, then messages its
    ring neighbours; a PE idles until the slowest PE ends the step. On every PE, exec and idle
    rows tile [0, end of run] exactly, so busy + idle == span per PE."""
    rng = random.Random(seed)
    b = TraceBuilder(pes, source="synthetic", program=program)
    n_obj = pes * objs_per_pe
    pe_of = [o // objs_per_pe for o in range(n_obj)]
    for o in range(n_obj):
        b.create(pe_of[o], 0, "Cell#0", o)
    t_step = 0
    inbox: dict[int, int] = {}  # object -> msg id that triggers its next compute
    for s in range(steps):
        ends = []
        pending: list[tuple[int, int, int, int]] = []  # (src pe, t, dst obj, bytes)
        for pe in range(pes):
            t = t_step
            lag = rng.randrange(0, 2_000)
            if lag:
                b.idle(pe, t, t + lag)
                t += lag
            for o in range(pe * objs_per_pe, (pe + 1) * objs_per_pe):
                cost = rng.randrange(5_000, 50_000) * (2 if pe == 0 else 1)  # PE 0 is overloaded
                b.exec(pe, t, t + cost, "Cell.compute", coll="Cell#0", obj=o, index=index_text(o),
                       step=s, msg=inbox.get(o))
                for dst in ((o - 1) % n_obj, (o + 1) % n_obj):
                    pending.append((pe, t + cost - 1, dst, 1024 * (1 + dst % 3)))
                t += cost
            ends.append(t)
        t_next = max(ends)
        inbox = {}
        for src_pe, t, dst, nbytes in pending:
            inbox[dst] = b.send(src_pe, t, pe_of[dst], nbytes, name="Cell.compute", coll="Cell#0",
                                peer_coll="Cell#0", peer_obj=dst, step=s)
        for pe in range(pes):
            if ends[pe] < t_next:
                b.idle(pe, ends[pe], t_next)
            b.step(pe, s, t_step, t_next)
        t_step = t_next
    return b


def torch_like(ranks: int = 2, steps: int = 3, seed: int = 0, *, program: str = "train") -> TraceBuilder:
    """A DDP-style run: per rank and step, a step row; nested CPU ops (forward > aten::mm) on the
    main thread, a backward op on the autograd thread overlapping an all_reduce collective, and
    GPU kernels on stream 7 that overlap the CPU ops. Exec rows nest and overlap, so busy is the
    union of intervals, never their sum."""
    rng = random.Random(seed)
    b = TraceBuilder(ranks, source="torch", program=program, world_size=ranks)
    for r in range(ranks):
        t = rng.randrange(0, 1_000)
        for s in range(steps):
            fwd = rng.randrange(40_000, 60_000) * (3 if r == ranks - 1 and ranks > 1 else 2) // 2
            bwd = 2 * fwd
            t_end = t + fwd + bwd + 10_000
            b.step(r, s, t, t_end, name=f"ProfilerStep#{s}")
            b.exec(r, t, t + fwd, "forward", cat="user_annotation", tid=1, step=s)
            b.exec(r, t + 1_000, t + fwd // 2, "aten::mm", cat="cpu_op", tid=1, step=s)
            b.exec(r, t + fwd // 2, t + fwd - 1_000, "aten::relu", cat="cpu_op", tid=1, step=s)
            b.exec(r, t + 2_000, t + fwd + 5_000, "sgemm_kernel", cat="kernel", stream=7, step=s)
            tb = t + fwd
            b.exec(r, tb, tb + bwd, "autograd::backward", cat="cpu_op", tid=2, step=s)
            b.collective(r, "all_reduce", tb + bwd // 2, tb + bwd + 8_000, nbytes=4 << 20, step=s)
            b.exec(r, tb + bwd // 2 + 500, tb + bwd + 7_000, "ncclAllReduce_kernel", cat="kernel",
                   stream=20, step=s)
            t = t_end + rng.randrange(0, 3_000)
    return b
