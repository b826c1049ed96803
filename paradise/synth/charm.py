"""Synthetic Charm-style traces whose characteristics are known exactly by construction.

Objects of one array `Cell#0` are block-mapped to PEs and talk along a fixed set of directed
edges (the pattern). The run is bulk-synchronous with a fixed step period T: at t0 = k*T every PE
runs a kickoff exec (no object, no message), then each of its objects' execs back to back, one
per edge into the object (one self-driven exec for objects nothing sends to). Every exec sends its
share of the object's out-edge messages at its middle; each message is consumed one step later.
T exceeds every PE's step work, so no message arrives after its receiver's PE is free: the
critical path is every exec of the busiest PE, of length (K-1)*T + its step work, with no
message hop. An object's step load is the same in every step; one object carries the extra load
that gives the requested max/mean PE imbalance.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from paradise.errors import InvalidOption
from paradise.format import SCHEMA, index_text, pack_index
from paradise.synth.columns import CHUNK_ROWS, PeFile, dict_col, int_col, table

PATTERNS = ("grid", "all-to-all", "star", "tree", "chain")
COLL = "Cell#0"
OBJS_PER_PE = 16
"""Objects per PE (fewer when the trace is too small for MIN_STEPS steps of them)."""
ALL_TO_ALL_MAX_OBJECTS = 128
"""All-to-all has n(n-1) messages per step: n is capped so a step stays a small share of the trace."""
MIN_STEPS = 8
"""Fewer steps make per-step medians (placement's object loads) meaningless."""
MIN_OBJECTS = {"grid": 9, "all-to-all": 3, "star": 4, "tree": 5, "chain": 3}
"""Below these the pattern is not recognisable (a 3x3 torus; a hub with 3 spokes; a tree with a fork)."""
OBJ_STEP_NS = 100_000
"""Step load of an ordinary object (100 us), split evenly over its execs."""
KICK_NS = 1_000
"""Duration of the per-PE kickoff exec that starts each step."""
BYTES_RANGE = (64, 16_384)
"""Message sizes (bytes) are drawn per edge from this range and kept over the steps."""
ENTRIES = {"grid": ("ghost",), "all-to-all": ("exchange",), "star": ("work", "result"), "tree": ("down",),
           "chain": ("next",)}
SELF_ENTRY = "iterate"
"""Entry of the execs of objects that no edge feeds (tree root, chain head)."""
NAMES = ("step", SELF_ENTRY, *sorted({e for v in ENTRIES.values() for e in v}))
"""The `name` vocabulary of every file: the kickoff, the self-driven entry, the pattern entries."""


@dataclass(frozen=True)
class Design:
    """The static shape of a charm synth run (small: objects and edges, not events)."""

    pattern: str
    pes: int
    steps: int
    dims: tuple[int, ...]  # grid (W, H); else (n,)
    obj_pe: np.ndarray  # PE of each object
    src: np.ndarray  # edge source object
    dst: np.ndarray  # edge destination object
    entry: np.ndarray  # edge entry, index into NAMES
    nbytes: np.ndarray  # edge message size
    nexec: np.ndarray  # execs per object and step
    dur: np.ndarray  # ns per exec of each object
    period_ns: int
    seed: int

    @property
    def n(self) -> int:
        return len(self.obj_pe)

    def index_of(self, o: np.ndarray) -> list[tuple[int, ...]]:
        if len(self.dims) == 2:
            return [(int(i) % self.dims[0], int(i) // self.dims[0]) for i in o]
        return [(int(i),) for i in o]

    def pe_work(self) -> np.ndarray:
        """ns of work per PE and step: kickoff plus its objects' loads."""
        load = self.nexec * self.dur
        return KICK_NS + np.bincount(self.obj_pe, weights=load, minlength=self.pes).astype(np.int64)


def _edges(pattern: str, n: int, dims: tuple[int, ...]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(src, dst, entry index into NAMES) of the pattern's directed edges over n objects."""
    o = np.arange(n)
    e0 = NAMES.index(ENTRIES[pattern][0])
    if pattern == "grid":
        w, h = dims
        x, y = o % w, o // w
        dst = np.concatenate([y * w + (x - 1) % w, y * w + (x + 1) % w, ((y - 1) % h) * w + x, ((y + 1) % h) * w + x])
        src = np.tile(o, 4)
        ent = np.full(len(src), e0)
    elif pattern == "all-to-all":
        src, dst = np.repeat(o, n), np.tile(o, n)
        keep = src != dst
        src, dst = src[keep], dst[keep]
        ent = np.full(len(src), e0)
    elif pattern == "star":  # master 0 dispatches work, workers reply
        w = o[1:]
        src, dst = np.concatenate([np.zeros_like(w), w]), np.concatenate([w, np.zeros_like(w)])
        ent = np.concatenate([np.full(len(w), e0), np.full(len(w), NAMES.index(ENTRIES["star"][1]))])
    elif pattern == "tree":  # binary heap: parent -> children
        src, dst = (o[1:] - 1) // 2, o[1:]
        ent = np.full(len(src), e0)
    else:  # chain: i -> i + 1
        src, dst = o[:-1], o[1:]
        ent = np.full(len(src), e0)
    order = np.lexsort((dst, src))
    return src[order].astype(np.int64), dst[order].astype(np.int64), ent[order].astype(np.int64)


def _grid_dims(n: int) -> tuple[int, int] | None:
    for w in range(int(np.sqrt(n)), 2, -1):
        if n % w == 0 and n // w >= 3:
            return (w, n // w)
    return None


def _shape(pattern: str, n: int) -> tuple[tuple[int, ...], int]:
    """(dims, n) for about n objects: the grid takes the nearest n <= given that makes a torus."""
    if pattern != "grid":
        return (n,), n
    while n >= MIN_OBJECTS["grid"]:
        d = _grid_dims(n)
        if d:
            return d, n
        n -= 1
    return (3, 3), 9


def _rows_per_step(pes: int, n_edges: int, nexec: np.ndarray) -> int:
    return pes + int(nexec.sum()) + n_edges


def design(pattern: str, events: int, pes: int, imbalance: float, seed: int) -> Design:
    """The run with about `events` rows on `pes` PEs whose max/mean PE load is `imbalance`."""
    if pattern not in PATTERNS:
        raise InvalidOption(f"--pattern {pattern!r}: choose one of {', '.join(PATTERNS)}")
    if pes < 1:
        raise InvalidOption(f"--pes {pes}: needs at least 1 PE")
    if not (1.0 <= imbalance < pes or (pes == 1 and imbalance == 1.0)):
        raise InvalidOption(f"--imbalance {imbalance}: must be at least 1 and below the PE count ({pes})")
    rng = np.random.default_rng(seed)
    per_pe = OBJS_PER_PE
    while True:
        n = per_pe * pes if pattern != "all-to-all" else min(per_pe * pes, ALL_TO_ALL_MAX_OBJECTS)
        dims, n = _shape(pattern, max(n, MIN_OBJECTS[pattern]))
        src, dst, ent = _edges(pattern, n, dims)
        nexec = np.maximum(np.bincount(dst, minlength=n), 1)
        per_step = _rows_per_step(pes, len(src), nexec)
        if events // per_step >= MIN_STEPS or n <= MIN_OBJECTS[pattern]:
            break
        per_pe = max(1, per_pe // 2) if per_pe > 1 else 0
        if per_pe == 0:
            break
    steps = events // per_step
    if steps < MIN_STEPS:
        raise InvalidOption(f"--events {events}: too few for {MIN_STEPS} steps of a {pattern} on {pes} PEs "
                            f"(needs at least {MIN_STEPS * per_step})")
    obj_pe = (np.arange(n) * pes // n).astype(np.int64)  # block mapping
    dur = np.maximum(OBJ_STEP_NS // nexec, 1).astype(np.int64)
    work = KICK_NS + np.bincount(obj_pe, weights=nexec * dur, minlength=pes)
    heavy = int(rng.integers(n))
    hp = obj_pe[heavy]
    extra = (imbalance * work.sum() / pes - work[hp]) / (1 - imbalance / pes) if pes > 1 else 0.0
    if extra > 0:  # the heavy object's step load grows by `extra`, rounded to whole ns per exec
        dur[heavy] += int(round(extra / nexec[heavy]))
    work = KICK_NS + np.bincount(obj_pe, weights=nexec * dur, minlength=pes)
    w_max = int(work.max())
    period = w_max + max(w_max // 2, 20_000)
    nbytes = rng.integers(*BYTES_RANGE, len(src))
    return Design(pattern=pattern, pes=pes, steps=int(steps), dims=dims, obj_pe=obj_pe, src=src, dst=dst,
                  entry=ent, nbytes=nbytes, nexec=nexec.astype(np.int64), dur=dur, period_ns=int(period), seed=seed)


def truth(d: Design) -> dict[str, Any]:
    """What the analyses must find, from the design alone (no rows read)."""
    work = d.pe_work()
    busy = work * d.steps
    load = d.nexec * d.dur
    top = int(load.argmax())
    unique = int((load == load[top]).sum()) == 1
    pe = int(work.argmax())
    mine = d.obj_pe == pe
    execs = d.steps * (1 + int(d.nexec[mine].sum()))
    (idx,) = d.index_of(np.array([top]))
    return {
        "kind": "charm", "pattern": d.pattern, "pes": d.pes, "objects": d.n, "steps": d.steps,
        "collection": COLL, "dims": list(d.dims), "edges_per_step": len(d.src),
        "imbalance": float(busy.max() / busy.mean()),
        "pe_busy_ns": [int(b) for b in busy],
        "heaviest_object": f"{COLL}{index_text(idx)}" if unique else None,
        "heaviest_object_load_ns": int(load[top]) * d.steps,
        "heaviest_object_pe": int(d.obj_pe[top]),
        "critical_path": {"length_ns": (d.steps - 1) * d.period_ns + int(work[pe]), "hops": 0,
                          "execs": execs, "pe": pe},
        "makespan_ns": (d.steps - 1) * d.period_ns + int(work.max()),
        "period_ns": d.period_ns,
        "seed": d.seed,
    }


def _template(d: Design, pe: int) -> dict[str, np.ndarray]:
    """One step of PE `pe`: exec rows (kickoff first), then send rows, sorted by time offset."""
    objs = np.flatnonzero(d.obj_pe == pe)
    ne = d.nexec[objs]
    x_obj = np.concatenate([[-1], np.repeat(objs, ne)])
    j = np.concatenate([[0], np.arange(int(ne.sum())) - np.repeat(np.cumsum(ne) - ne, ne)])
    x_dur = np.concatenate([[KICK_NS], np.repeat(d.dur[objs], ne)])
    x_off = np.cumsum(x_dur) - x_dur
    in_order = np.lexsort((d.src, d.dst))  # edges by receiver, then sender
    indeg = np.bincount(d.dst, minlength=d.n)
    first_in = np.cumsum(indeg) - indeg
    xo = np.maximum(x_obj, 0)
    has_in = (x_obj >= 0) & (indeg[xo] > 0)
    x_edge = np.where(has_in, in_order[np.minimum(first_in[xo] + j, len(in_order) - 1)], -1)
    x_name = np.where(x_obj < 0, NAMES.index("step"),
                      np.where(has_in, d.entry[np.maximum(x_edge, 0)], NAMES.index(SELF_ENTRY)))
    # sends: out-edge i of an object goes out from its exec i mod nexec
    out = np.flatnonzero(d.obj_pe[d.src] == pe)  # edges are sorted by src
    s_obj = d.src[out]
    first_out = np.searchsorted(d.src, s_obj)
    exec_start = np.concatenate([[1], 1 + np.cumsum(ne)])[:-1]
    start = exec_start[np.searchsorted(objs, s_obj)]
    row = start + (out - first_out) % d.nexec[s_obj]
    s_off = x_off[row] + x_dur[row] // 2
    kind = np.concatenate([np.zeros(len(x_obj), np.int8), np.ones(len(out), np.int8)])
    off = np.concatenate([x_off, s_off])
    order = np.argsort(off, kind="stable")
    obj = np.concatenate([x_obj, s_obj])
    return {
        "kind": kind[order], "off": off[order], "dur": np.concatenate([x_dur, np.zeros(len(out), np.int64)])[order],
        "obj": obj[order], "edge": np.concatenate([x_edge, out])[order],
        "name": np.concatenate([x_name, d.entry[out]])[order],
    }


def write_pe(d: Design, pe: int, out: Path, meta: dict[str, Any]) -> int:
    """Writes PE `pe`'s file in chunks of steps; returns its row count."""
    tp = _template(d, pe)
    r = len(tp["kind"])
    objs = np.unique(tp["obj"][tp["obj"] >= 0])
    idx = d.index_of(objs)
    vocab = [index_text(i) for i in idx]
    code = np.full(d.n, -1, np.int64)
    code[objs] = np.arange(len(objs))
    packed = np.zeros(d.n, np.int64)
    packed[objs] = [pack_index(i) for i in idx]
    peers = np.unique(d.dst[tp["edge"][tp["kind"] == 1]])
    packed[peers] = [pack_index(i) for i in d.index_of(peers)]
    is_send = tp["kind"] == 1
    has_obj = tp["obj"] >= 0
    n_edges = len(d.src)
    f = PeFile(out, pe, **meta)
    steps_per_chunk = max(1, CHUNK_ROWS // max(r, 1))
    for k0 in range(0, d.steps, steps_per_chunk):
        k1 = min(d.steps, k0 + steps_per_chunk)
        ks = np.repeat(np.arange(k0, k1, dtype=np.int64), r)
        keep = ~(np.tile(is_send, k1 - k0) & (ks == d.steps - 1))  # the last step's messages go nowhere
        ks = ks[keep]

        def tile(a: np.ndarray, keep: np.ndarray = keep, reps: int = k1 - k0) -> np.ndarray:
            return np.tile(a, reps)[keep]

        send, obj, edge, dur = tile(is_send), tile(tp["obj"]), tile(tp["edge"]), tile(tp["dur"])
        t0 = ks * d.period_ns + tile(tp["off"])
        msg = np.where(send, ks * n_edges + edge + 1, (ks - 1) * n_edges + edge + 1)
        peer = np.where(send, d.dst[np.maximum(edge, 0)], 0)
        rows = len(ks)
        has = tile(has_obj)
        cols = {
            "kind": dict_col(send.astype(np.int32) * 2, ["exec", "idle", "send"]),
            "pe": int_col(np.full(rows, pe), _T["pe"]),
            "t0": int_col(t0, _T["t0"]),
            "t1": int_col(t0 + dur, _T["t1"], ~send),
            "tid": int_col(np.zeros(rows), _T["tid"]),
            "cat": dict_col(has.astype(np.int32), ["runtime", "array"]),
            "coll": dict_col(np.zeros(rows), [COLL], has),
            "obj": int_col(packed[np.maximum(obj, 0)], _T["obj"], has),
            "index": dict_col(code[np.maximum(obj, 0)], vocab, has),
            "name": dict_col(tile(tp["name"]), list(NAMES)),
            "msg": int_col(msg, _T["msg"], (edge >= 0) & (send | (ks > 0))),
            "peer_pe": int_col(d.obj_pe[peer], _T["peer_pe"], send),
            "peer_coll": dict_col(np.zeros(rows), [COLL], send),
            "peer_obj": int_col(packed[peer], _T["peer_obj"], send),
            "bytes": int_col(d.nbytes[np.maximum(edge, 0)], _T["bytes"], send),
            "step": int_col(ks, _T["step"]),
        }
        f.write(table(cols, rows))
    return f.close()


_T = {f.name: f.type for f in SCHEMA}
