"""Tiny synthetic Charm-style programs for the characteristics and what-if tests.

A `Prog` is a list of executions (object, entry, cost) and messages (sent by an execution at an
offset, causing one or more executions). `write()` times it with a small FIFO-per-PE event
simulation (its own code, independent of paradise.whatif) and writes a paradise trace with
tests.trace_writer.TraceWriter: exec, send and create rows, as the charm4py tracer does.
"""

from __future__ import annotations

import heapq
import itertools
from pathlib import Path

from paradise.format import index_text, pack_index
from tests.trace_writer import TraceWriter

Key = tuple[str, tuple[int, ...]]


class Prog:
    """Executions and messages of a synthetic run; placement decides each object's PE."""

    def __init__(self, pes: int) -> None:
        self.pes = pes
        self.execs: list[dict] = []
        self.msgs: list[dict] = []
        self.cats: dict[str, str] = {}  # chare kind per collection; 'array' when not given

    def send(self, src: int, offset_ns: int, nbytes: int) -> int:
        """A message sent by exec `src` at `offset_ns` after its start; returns its id."""
        self.msgs.append({"src": src, "offset": offset_ns, "bytes": nbytes, "dst": []})
        return len(self.msgs) - 1

    def exec(self, coll: str | None, index, name: str, cost_ns: int, *, msg: int | None = None,
             step: int | None = None, pe: int | None = None, after: tuple[int, ...] = ()) -> int:
        """An execution of `name` on object (coll, index), caused by message `msg` (or a root);
        `after` are execs it waits for without a traced message (e.g. a reduction's contributors)."""
        idx = tuple(index) if isinstance(index, (list, tuple)) else (index,) if index is not None else None
        self.execs.append({"coll": coll, "index": idx, "name": name, "cost": int(cost_ns), "msg": msg,
                           "step": step, "pe": pe, "after": tuple(after)})
        if msg is not None:
            self.msgs[msg]["dst"].append(len(self.execs) - 1)
        return len(self.execs) - 1

    def _pe(self, e: dict, placement: dict[Key, int]) -> int:
        if e["pe"] is not None:
            return e["pe"]
        return placement[(e["coll"], e["index"])]

    def timing(self, placement: dict[Key, int], lat_ns: int = 20_000, ns_per_byte: float = 1.0,
               local_ns: int = 1_000) -> list[tuple[int, int, int]]:
        """(pe, t0, t1) of every exec: FIFO per PE by ready time, objects keep their order."""
        n = len(self.execs)
        pes = [self._pe(e, placement) for e in self.execs]
        pending = [0] * n
        kids: list[list[tuple[int, int]]] = [[] for _ in range(n)]  # exec -> (child, kind 0=finish)
        last: dict[Key, int] = {}
        for i, e in enumerate(self.execs):
            if e["msg"] is not None:
                pending[i] += 1
            for a in e["after"]:
                kids[a].append((i, 0))
                pending[i] += 1
            if e["coll"] is not None:
                k = (e["coll"], e["index"])
                if k in last:
                    kids[last[k]].append((i, 0))
                    pending[i] += 1
                last[k] = i
        ev: list[tuple[int, int, int, int]] = []  # (time, seq, type, who) type 0 release 1 finish
        seq = itertools.count()
        for i in range(n):
            if pending[i] == 0:
                heapq.heappush(ev, (0, next(seq), 0, i))
        ready: list[list[tuple[int, int]]] = [[] for _ in range(self.pes)]
        busy = [False] * self.pes
        out: list[tuple[int, int, int]] = [(0, 0, 0)] * n
        by_src: list[list[dict]] = [[] for _ in range(n)]
        for m in self.msgs:
            by_src[m["src"]].append(m)

        def start(i: int, t: int) -> None:
            p = pes[i]
            busy[p] = True
            out[i] = (p, t, t + self.execs[i]["cost"])
            heapq.heappush(ev, (t + self.execs[i]["cost"], next(seq), 1, i))
            for m in by_src[i]:
                for d in m["dst"]:
                    same = pes[d] == p
                    lat = local_ns if same else lat_ns + int(ns_per_byte * m["bytes"])
                    heapq.heappush(ev, (t + m["offset"] + lat, next(seq), 0, d))

        while ev:
            t, _, typ, i = heapq.heappop(ev)
            if typ == 0:
                pending[i] -= 1
                if pending[i] <= 0:
                    heapq.heappush(ready[pes[i]], (t, i))
                    if not busy[pes[i]]:
                        _, j = heapq.heappop(ready[pes[i]])
                        start(j, t)
                continue
            p = pes[i]
            busy[p] = False
            for c, _ in kids[i]:
                heapq.heappush(ev, (t, next(seq), 0, c))
            if ready[p]:
                _, j = heapq.heappop(ready[p])
                start(j, t)
        return out

    def write(self, directory: Path, placement: dict[Key, int], program: str = "synth", **timing) -> Path:
        """Times the program under `placement` and writes one trace file per PE."""
        times = self.timing(placement, **timing)
        writers = {p: TraceWriter(directory, p, source="synthetic", program=program, pes=self.pes)
                   for p in range(self.pes)}
        for (coll, idx), p in sorted(placement.items()):
            writers[p].append_dict(kind="create", pe=p, t0=0, coll=coll, obj=pack_index(idx),
                                   index=index_text(idx), cat=self.cats.get(coll, "array"))
        for i, e in enumerate(self.execs):
            p, t0, t1 = times[i]
            obj = pack_index(e["index"]) if e["index"] is not None else None
            writers[p].append_dict(kind="exec", pe=p, t0=t0, t1=t1, active=e["cost"], coll=e["coll"],
                                   cat=self.cats.get(e["coll"], "array") if e["coll"] else None,
                                   obj=obj, index=index_text(e["index"]) if e["index"] else None,
                                   name=e["name"], msg=e["msg"], step=e["step"])
        for m_id, m in enumerate(self.msgs):
            s = self.execs[m["src"]]
            p, t0, _ = times[m["src"]]
            d = self.execs[m["dst"][0]] if m["dst"] else None
            one = len(m["dst"]) == 1
            writers[p].append_dict(
                kind="send", pe=p, t0=t0 + m["offset"], coll=s["coll"],
                obj=pack_index(s["index"]) if s["index"] is not None else None,
                index=index_text(s["index"]) if s["index"] else None, msg=m_id, bytes=m["bytes"],
                name=d["name"] if d else None, step=s["step"],
                peer_pe=times[m["dst"][0]][0] if one else None,
                peer_coll=d["coll"] if d else None,
                peer_obj=pack_index(d["index"]) if one and d["index"] is not None else None)
        for w in writers.values():
            w.close()
        return directory


def grid2d(nx: int, ny: int, pes: int, steps: int, *, periodic: bool = False, cost=None,
           nbytes: int = 4096) -> tuple[Prog, dict[Key, int]]:
    """A 2-D Jacobi-like stencil: each step every cell computes, then sends to its 4 neighbours."""
    p = Prog(pes)
    cost = cost or (lambda i, j, s: 100_000)
    cells = [(i, j) for i in range(nx) for j in range(ny)]
    main = p.exec(None, None, "main", 1_000 * len(cells), pe=0)  # main starts every cell
    prev_msgs: dict[tuple[int, int], list[int]] = {c: [p.send(main, 1_000 * (k + 1), 64)]
                                                   for k, c in enumerate(cells)}
    for s in range(steps):
        new_msgs: dict[tuple[int, int], list[int]] = {c: [] for c in cells}
        for c in cells:
            ins = prev_msgs[c]
            for m in ins[:-1]:  # every ghost is received by `recv`; the last one computes
                p.exec("Cell#0", c, "recv", 5_000, msg=m, step=s)
            e = p.exec("Cell#0", c, "recv" if s else "start", cost(c[0], c[1], s), msg=ins[-1], step=s)
            for di, dj in ((1, 0), (-1, 0), (0, 1), (0, -1)):
                a, b = c[0] + di, c[1] + dj
                if periodic:
                    a, b = a % nx, b % ny
                elif not (0 <= a < nx and 0 <= b < ny):
                    continue
                new_msgs[(a, b)].append(p.send(e, cost(c[0], c[1], s), nbytes))
        prev_msgs = new_msgs
    placement = {("Cell#0", c): (k * pes) // len(cells) for k, c in enumerate(cells)}
    return p, placement


def master_worker(workers: int, pes: int, tasks: int) -> tuple[Prog, dict[Key, int]]:
    """Master#0[0] hands tasks to Worker#0[i] point to point; each result brings the next task."""
    p = Prog(pes)
    m = p.exec("Master#0", (0,), "start", 10_000)
    free: list[int] = []
    for w in range(workers):
        free.append(p.exec("Worker#0", (w,), "work", 200_000 + 50_000 * (w % 3), msg=p.send(m, 1_000 * w, 256)))
    for t in range(workers, tasks):
        w = t % workers
        r = p.exec("Master#0", (0,), "result", 5_000, msg=p.send(free[w], 100_000, 128))
        free[w] = p.exec("Worker#0", (w,), "work", 200_000, msg=p.send(r, 1_000, 256))
    placement = {("Master#0", (0,)): 0} | {("Worker#0", (w,)): w % pes for w in range(workers)}
    return p, placement


def pipeline(stages: int, pes: int, items: int, cost: int = 100_000) -> tuple[Prog, dict[Key, int]]:
    """Stage#0[i] passes each item to Stage#0[i+1]: a chain."""
    p = Prog(pes)
    for it in range(items):
        e = p.exec("Stage#0", (0,), "item", cost, step=it)
        for s in range(1, stages):
            e = p.exec("Stage#0", (s,), "item", cost, msg=p.send(e, cost, 1024), step=it)
    return p, {("Stage#0", (s,)): (s * pes) // stages for s in range(stages)}


def histsort(buckets: int, pes: int) -> tuple[Prog, dict[Key, int]]:
    """Main broadcasts to Bucket#0 (a tree), buckets reduce counts to Main (a tree), then every
    bucket sends data to every other bucket (all-to-all)."""
    p = Prog(pes)
    main = p.exec(None, None, "main", 10_000, pe=0)
    b = p.send(main, 5_000, 64)
    hist = [p.exec("Bucket#0", (i,), "histogram", 50_000, msg=b) for i in range(buckets)]
    red = p.send(hist[0], 50_000, 64)
    p.exec(None, None, "reduced", 5_000, msg=red, pe=0)
    for i in range(1, buckets):  # each bucket contributes to the root
        p.exec(None, None, "reduced", 5_000, msg=p.send(hist[i], 50_000, 64), pe=0)
    sends = {i: [p.send(hist[i], 50_000, 8_000) for _ in range(buckets - 1)] for i in range(buckets)}
    for i in range(buckets):
        k = 0
        for j in range(buckets):
            if i != j:
                p.exec("Bucket#0", (j,), "exchange", 20_000, msg=sends[i][k])
                k += 1
    return p, {("Bucket#0", (i,)): i % pes for i in range(buckets)}


def binary_tree(levels: int, pes: int) -> tuple[Prog, dict[Key, int]]:
    """Node#0[i] forwards to children 2i+1 and 2i+2: a spanning tree of depth `levels`."""
    p = Prog(pes)
    n = 2 ** levels - 1
    ex = {0: p.exec("Node#0", (0,), "down", 10_000)}
    for i in range(1, n):
        ex[i] = p.exec("Node#0", (i,), "down", 10_000, msg=p.send(ex[(i - 1) // 2], 10_000, 100))
    return p, {("Node#0", (i,)): i % pes for i in range(n)}


def all_to_all(k: int, pes: int, nbytes: int = 100, rounds: int = 1) -> tuple[Prog, dict[Key, int]]:
    """Every Peer#0[i] sends `rounds` messages to every other peer."""
    p = Prog(pes)
    src = [p.exec("Peer#0", (i,), "start", 10_000) for i in range(k)]
    for _ in range(rounds):
        for i in range(k):
            for j in range(k):
                if i != j:
                    p.exec("Peer#0", (j,), "data", 2_000, msg=p.send(src[i], 5_000, nbytes))
    return p, {("Peer#0", (i,)): i % pes for i in range(k)}


def ping_filler(pings: int, fillers: int) -> tuple[Prog, dict[Key, int]]:
    """A ping-pong between PE 0 and PE 1 while PE 0 also has a queue of ready filler work:
    FIFO delivery makes each ping wait behind the fillers; a priority on `ping` does not."""
    p = Prog(2)
    e = p.exec("Ping#0", (0,), "ping", 50_000)
    for f in range(fillers):  # queued on PE 0 by local messages sent at the ping's start
        p.exec("Fill#0", (f,), "fill", 100_000, msg=p.send(e, 0, 64))
    for k in range(1, pings):
        e = p.exec("Ping#0", (k % 2,), "ping", 50_000, msg=p.send(e, 50_000, 64))
    return p, {("Ping#0", (0,)): 0, ("Ping#0", (1,)): 1} | {("Fill#0", (f,)): 0 for f in range(fillers)}


def scatter_reduce(elements: int, pes: int, rounds: int = 2) -> tuple[Prog, dict[Key, int]]:
    """Coord#0 (a singleton chare) sends work to every Elem#0[i]; the elements reduce to Coord#0's
    `done` through contribute(), which leaves no message in the trace."""
    p = Prog(pes)
    p.cats["Coord#0"] = "chare"
    e = p.exec("Coord#0", (0,), "start", 10_000)
    for _ in range(rounds):
        works = [p.exec("Elem#0", (i,), "work", 100_000, msg=p.send(e, 1_000 * i, 128)) for i in range(elements)]
        e = p.exec("Coord#0", (0,), "done", 5_000, after=tuple(works))
    return p, {("Coord#0", (0,)): 0} | {("Elem#0", (i,)): i % pes for i in range(elements)}
