"""Synthetic PyTorch DDP traces with one injected straggler, known exactly by construction.

Per rank and step: forward and backward phases made of back-to-back CPU ops, then DDP bucket
all-reduces that end on every rank when the slowest rank is ready, then the optimizer phase.
The straggler's ops all last `factor` times longer, so it has the most compute in every step;
`factor` is chosen so that its busy time (the union of its op rows, the overview's measure) is
`imbalance` times the mean rank's.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from paradise.errors import InvalidOption
from paradise.format import SCHEMA
from paradise.synth.columns import CHUNK_ROWS, PeFile, dict_col, int_col, table

COMPUTE_NS = 6_000_000
"""Compute per step of an ordinary rank (6 ms): forward 1/3, backward 1/2, optimizer 1/6."""
OPS = {"forward": 40, "backward": 80, "optimizer": 10}
"""CPU ops per phase and step (fewer when the trace is too small for MIN_STEPS steps)."""
BUCKETS = 4
BUCKET_NS = 400_000
"""Duration of one bucket all-reduce once every rank is ready."""
BUCKET_BYTES = 25 << 20
GAP_NS = 100_000
"""Idle time between the slowest rank's step end and the next step's start."""
MIN_STEPS = 8
SLOW_FACTOR = 1.1
"""Below this compute ratio the training analysis calls no rank slow (its SLOW_REL): no straggler in the truth."""
SHARE = {"forward": 2, "backward": 3, "optimizer": 1}
OP_NAMES = ("aten::linear", "aten::relu", "aten::conv2d", "aten::add_", "aten::mul", "aten::mm")
KINDS = ["exec", "step", "phase", "collective"]


@dataclass(frozen=True)
class Design:
    ranks: int
    steps: int
    ops: dict[str, int]
    op_ns: np.ndarray  # (ranks, 3): ns of one op of each phase per rank
    straggler: int | None
    factor: float
    period_ns: int
    seed: int

    def phase_ns(self) -> np.ndarray:
        """(ranks, 3) ns per phase and step."""
        return self.op_ns * np.array([self.ops[p] for p in OPS])


def design(events: int, ranks: int, imbalance: float, seed: int) -> Design:
    """About `events` rows on `ranks` ranks; the straggler's busy time is `imbalance` x the mean."""
    if ranks < 1:
        raise InvalidOption(f"--pes {ranks}: needs at least 1 rank")
    if not (1.0 <= imbalance < ranks or (ranks == 1 and imbalance == 1.0)):
        raise InvalidOption(f"--imbalance {imbalance}: must be at least 1 and below the rank count ({ranks})")
    ops = dict(OPS)
    while events // (ranks * (4 + BUCKETS + sum(ops.values()))) < MIN_STEPS and max(ops.values()) > 1:
        ops = {p: max(1, n // 2) for p, n in ops.items()}
    per_step = ranks * (4 + BUCKETS + sum(ops.values()))
    steps = events // per_step
    if steps < MIN_STEPS:
        raise InvalidOption(f"--events {events}: too few for {MIN_STEPS} steps on {ranks} ranks "
                            f"(needs at least {MIN_STEPS * per_step})")
    rng = np.random.default_rng(seed)
    factor = imbalance * (ranks - 1) / (ranks - imbalance) if ranks > 1 else 1.0
    straggler = int(rng.integers(ranks)) if factor > 1.0 else None
    base = np.array([COMPUTE_NS * SHARE[p] // (6 * ops[p]) for p in OPS], np.int64)
    op_ns = np.tile(base, (ranks, 1))
    if straggler is not None:
        op_ns[straggler] = np.round(base * factor).astype(np.int64)
    d = Design(ranks, int(steps), ops, op_ns, straggler, float(factor), 0, seed)
    ph = d.phase_ns()
    step_max = int(ph[:, :2].sum(axis=1).max()) + BUCKETS * BUCKET_NS + int(ph[:, 2].max())
    return Design(ranks, int(steps), ops, op_ns, straggler, float(factor), step_max + GAP_NS, seed)


def truth(d: Design) -> dict[str, Any]:
    """What the analyses must find, from the design alone."""
    busy = d.phase_ns().sum(axis=1) * d.steps
    compute = d.phase_ns().sum(axis=1)
    med = float(np.median(compute))
    slow = d.straggler is not None and compute[d.straggler] > SLOW_FACTOR * med
    return {
        "kind": "torch", "pattern": None, "pes": d.ranks, "steps": d.steps, "ops_per_step": d.ops,
        "imbalance": float(busy.max() / busy.mean()),
        "pe_busy_ns": [int(b) for b in busy],
        "straggler_rank": d.straggler if slow else None,
        "straggler_factor": d.factor,
        "period_ns": d.period_ns,
        "seed": d.seed,
    }


def _template(d: Design, rank: int) -> dict[str, np.ndarray]:
    """One step of `rank`: time offsets, ends, kind, cat and name codes, rows sorted by start."""
    ph = d.phase_ns()
    sync = int(ph[:, :2].sum(axis=1).max())  # every rank's backward is done
    kinds, t0, t1, cat, name = [], [], [], [], []
    t = 0
    for p_i, p in enumerate(OPS):
        start = t if p != "optimizer" else sync + BUCKETS * BUCKET_NS
        n, dur = d.ops[p], int(d.op_ns[rank, p_i])
        kinds += [2] + [0] * n
        t0 += [start] + [start + i * dur for i in range(n)]
        t1 += [start + n * dur] + [start + (i + 1) * dur for i in range(n)]
        cat += [1] + [0] * n
        name += [len(OP_NAMES) + p_i] + [i % len(OP_NAMES) for i in range(n)]
        t = start + n * dur
        if p == "backward":
            ends = [sync + (b + 1) * BUCKET_NS for b in range(BUCKETS)]
            kinds += [3] * BUCKETS
            t0 += [t] + ends[:-1]
            t1 += ends
            cat += [2] * BUCKETS
            name += [len(OP_NAMES) + 3] * BUCKETS
    kinds = [1, *kinds]
    t0, t1 = [0, *t0], [t, *t1]
    cat, name = [-1, *cat], [len(OP_NAMES) + 4, *name]
    order = np.argsort(np.array(t0), kind="stable")
    return {k: np.array(v, np.int64)[order] for k, v in
            (("kind", kinds), ("t0", t0), ("t1", t1), ("cat", cat), ("name", name))}


def write_rank(d: Design, rank: int, out: Path, meta: dict[str, Any]) -> int:
    """Writes one rank's file in chunks of steps; returns its row count."""
    tp = _template(d, rank)
    r = len(tp["kind"])
    names = [*OP_NAMES, *OPS, "all_reduce", "step"]
    f = PeFile(out, rank, **meta)
    per_chunk = max(1, CHUNK_ROWS // r)
    for k0 in range(0, d.steps, per_chunk):
        k1 = min(d.steps, k0 + per_chunk)
        ks = np.repeat(np.arange(k0, k1, dtype=np.int64), r)
        rows = len(ks)

        def tile(a: np.ndarray, k0: int = k0, k1: int = k1) -> np.ndarray:
            return np.tile(a, k1 - k0)

        kind, cat = tile(tp["kind"]), tile(tp["cat"])
        coll = kind == 3
        cols = {
            "kind": dict_col(kind, KINDS),
            "pe": int_col(np.full(rows, rank), _T["pe"]),
            "t0": int_col(ks * d.period_ns + tile(tp["t0"]), _T["t0"]),
            "t1": int_col(ks * d.period_ns + tile(tp["t1"]), _T["t1"]),
            "tid": int_col(np.where(kind == 0, 1, 0), _T["tid"]),
            "cat": dict_col(np.maximum(cat, 0), ["cpu_op", "compute", "ddp_bucket"], cat >= 0),
            "name": dict_col(tile(tp["name"]), names),
            "bytes": int_col(np.full(rows, BUCKET_BYTES), _T["bytes"], coll),
            "step": int_col(ks, _T["step"]),
            "group": dict_col(np.zeros(rows), ["default_pg"], coll),
            "group_size": int_col(np.full(rows, d.ranks), _T["group_size"], coll),
            "dtype": dict_col(np.zeros(rows), ["float32"], coll),
        }
        f.write(table(cols, rows))
    return f.close()


_T = {f.name: f.type for f in SCHEMA}
