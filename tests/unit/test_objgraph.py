"""Bounds of the object-graph heuristics (paradise.events.objgraph)."""

from __future__ import annotations

import pandas as pd

from paradise.events import objgraph


def test_huge_phase_is_classified_from_counts_without_a_graph(monkeypatch):
    monkeypatch.setattr(objgraph, "PHASE_EDGES_MAX", 10)
    n = 6  # complete directed graph on 6 objects: 30 pairs > the bound of 10
    pairs = [(i, j) for i in range(n) for j in range(n) if i != j]
    edges = pd.DataFrame({
        "src_coll": ["P#0"] * len(pairs), "src_index": [f"[{i}]" for i, _ in pairs], "src_pe": [0] * len(pairs),
        "dst_coll": ["P#0"] * len(pairs), "dst_index": [f"[{j}]" for _, j in pairs], "dst_pe": [1] * len(pairs),
        "src_obj": [i for i, _ in pairs], "dst_obj": [j for _, j in pairs], "entry": ["x"] * len(pairs),
        "msgs": [1] * len(pairs), "bytes": [8] * len(pairs), "bcast_msgs": [0] * len(pairs)})
    (p,) = objgraph.collection_patterns(edges)["P#0"]
    assert p["pattern"] == "all-to-all" and p["evidence"]["bounded"] == 10 and p["evidence"]["edges"] == 30


def test_near_edges_count_as_python_ints_do():
    """Lattice neighbours are counted in numpy; indices beyond int64 sums fall back to Python ints."""
    import random

    rng = random.Random(1)
    for trial in range(300):
        nd = rng.randint(1, 3)
        scale = 10**20 if trial % 3 == 0 else 1
        pts = [tuple(rng.randint(-2 if trial % 5 == 0 else 0, 5) * (scale if rng.random() < 0.1 else 1)
                     for _ in range(nd)) for _ in range(20)]
        a, b = [rng.choice(pts) for _ in range(30)], [rng.choice(pts) for _ in range(30)]
        ext = [max(v[k] for v in pts) + 1 for k in range(nd)]

        def dist(u, v, wrap, ext=ext, nd=nd):
            return sum(min(abs(u[k] - v[k]), ext[k] - abs(u[k] - v[k])) if wrap else abs(u[k] - v[k])
                       for k in range(nd))

        expect = (sum(dist(u, v, False) == 1 for u, v in zip(a, b)), sum(dist(u, v, True) == 1 for u, v in zip(a, b)))
        assert objgraph._near_edges(a, b, ext) == expect
