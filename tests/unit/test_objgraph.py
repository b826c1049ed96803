"""Bounds of the object-graph heuristics (paradise.analyses.objgraph)."""

from __future__ import annotations

import pandas as pd

from paradise.analyses import objgraph


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
