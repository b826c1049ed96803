"""The object communication graph (stage 2) and the heuristics that name its pattern.

Built from the stage-1 aggregate `communication_edges` (one row per object pair and entry
method), never from events. Nodes are (collection, index text); objects outside any
collection (main, runtime) are ("", "pe<N>"). Graphs are plain networkx graphs.
"""

from __future__ import annotations

import functools
import json
from enum import Enum
from typing import Any

import networkx as nx
import numpy as np
import pandas as pd

GRID_EDGE_SHARE = 0.9
"""Share of edges that must join lattice neighbours (Manhattan distance 1) to call it a grid."""
ALL_TO_ALL_DENSITY = 0.8
"""Directed density (edges / n(n-1)) above which a phase is all-to-all; 1 is a complete graph."""
HUB_EDGE_SHARE = 0.8
"""Share of edges touching one node above which the phase is hub-shaped (star or tree)."""
ONE_WAY_RECIPROCITY = 0.1
"""Lattice phases with fewer reciprocated edges than this flow one way: a pipeline (chain)."""
BCAST_SHARE = 0.5
"""Share of a hub's deliveries that came from broadcasts above which the fan-out is a tree."""
MIN_NODES = 3
"""Below this many objects no pattern is meaningful."""
PHASE_EDGES_MAX = 200_000
"""Phases with more object pairs than this are not built as networkx graphs (a Python graph of
that size costs seconds and hundreds of MB per phase): their pattern is decided from counts
alone, all-to-all by density or else irregular with confidence 0 and `bounded` in the evidence."""


class Pattern(str, Enum):
    """Communication patterns; the value is the JSON string."""

    GRID = "grid"
    ALL_TO_ALL = "all-to-all"
    TREE = "tree"
    STAR = "star"
    CHAIN = "chain"
    IRREGULAR = "irregular"


Node = tuple[str, str]


def parse_index(text: Any) -> tuple[int, ...] | None:
    """'[3,4]' -> (3, 4); None when there is no index."""
    if text is None or (isinstance(text, float) and pd.isna(text)):
        return None
    return _parse_index_text(str(text))


@functools.lru_cache(maxsize=1 << 16)
def _parse_index_text(text: str) -> tuple[int, ...] | None:
    """parse_index of a text, once per text: every phase's lattice test parses the same objects."""
    try:
        v = json.loads(text)
    except json.JSONDecodeError:
        return None
    return tuple(int(i) for i in v) if isinstance(v, list) else (int(v),)


def _node(coll: Any, index: Any, pe: Any) -> Node:
    if coll is None or (isinstance(coll, float) and pd.isna(coll)) or index is None or pd.isna(index):
        return ("", f"pe{int(pe) if pe is not None and not pd.isna(pe) else -1}")
    return (str(coll), str(index))


def clean_edges(edges: pd.DataFrame) -> pd.DataFrame:
    """Edges with both ends known, with `src`/`dst` node columns added."""
    e = edges[edges["dst_pe"].notna() | edges["dst_coll"].notna()].copy()
    e = e[e["dst_coll"].notna() | e["dst_pe"].notna()]
    for end in ("src", "dst"):  # lists, not Series iteration: the same Python scalars, faster
        cols = (e[f"{end}_coll"].tolist(), e[f"{end}_index"].tolist(), e[f"{end}_pe"].tolist())
        e[end] = [_node(c, i, p) for c, i, p in zip(*cols)]
    return e.reset_index(drop=True)


def object_graph(edges: pd.DataFrame, loads: dict[Node, float] | None = None,
                 placement: dict[Node, int] | None = None) -> nx.Graph:
    """Undirected object graph: edge weights bytes and msgs summed over both directions."""
    g = nx.Graph()
    for node, load in (loads or {}).items():
        g.add_node(node, load_ns=float(load), pe=(placement or {}).get(node))
    e = clean_edges(edges)
    agg = e.groupby(["src", "dst"], sort=True)[["msgs", "bytes"]].sum()
    for (s, d), m, b in zip(agg.index, agg["msgs"].tolist(), agg["bytes"].tolist()):
        if s == d:
            continue
        if g.has_edge(s, d):
            g[s][d]["bytes"] += int(b)
            g[s][d]["msgs"] += int(m)
        else:
            g.add_edge(s, d, bytes=int(b), msgs=int(m))
    return g


def phase_digraph(e: pd.DataFrame) -> nx.DiGraph:
    """Directed graph of one phase's edges (src/dst node columns), weights msgs and bytes."""
    g = nx.DiGraph()
    rows = (e[c].tolist() for c in ("src", "dst", "msgs", "bytes", "bcast_msgs"))
    for s, d, m, b, bc in zip(*rows):
        if s == d:
            continue
        if g.has_edge(s, d):
            g[s][d]["msgs"] += int(m)
            g[s][d]["bcast"] += int(bc)
        else:
            g.add_edge(s, d, msgs=int(m), bytes=int(b), bcast=int(bc))
    return g


def undirected(g: nx.DiGraph) -> nx.Graph:
    """The structure of g without directions (nodes in g's order, no edge data): what degrees,
    connectivity and trees need; DiGraph.to_undirected deep-copies every edge's data."""
    und = nx.Graph()
    und.add_nodes_from(g)
    und.add_edges_from(g.edges())
    return und


def _lattice(g: nx.DiGraph, und: nx.Graph) -> dict[str, Any] | None:
    """Lattice statistics when every node is an object of one collection with same-rank indices;
    und: undirected(g)."""
    idx = {n: parse_index(n[1]) for n in g.nodes}
    colls = {n[0] for n in g.nodes}
    dims = {len(v) for v in idx.values() if v is not None}
    if len(colls) != 1 or "" in colls or len(dims) != 1 or any(v is None for v in idx.values()):
        return None
    ndim = dims.pop()
    ext = [max(v[k] for v in idx.values()) + 1 for k in range(ndim)]
    edges = list(g.edges)
    near, near_wrap = _near_edges([idx[s] for s, _ in edges], [idx[d] for _, d in edges], ext)
    periodic = near_wrap > near
    present = set(idx.values())
    match = 0
    for n in g.nodes:
        expect = 0
        for k in range(ndim):
            for step in (-1, 1):
                c = list(idx[n])
                c[k] += step
                if periodic:
                    c[k] %= ext[k]
                if tuple(c) in present and tuple(c) != idx[n]:
                    expect += 1
        match += und.degree(n) == expect
    recip = sum(1 for s, d in edges if g.has_edge(d, s)) / max(len(edges), 1)
    return {"ndim": ndim, "extents": ext, "periodic": periodic,
            "near_share": (near_wrap if periodic else near) / max(len(edges), 1),
            "degree_match": match / max(g.number_of_nodes(), 1), "reciprocity": recip}


def _near_edges(a: list[tuple[int, ...]], b: list[tuple[int, ...]], ext: list[int]) -> tuple[int, int]:
    """How many edges (a[i], b[i]) join lattice neighbours: Manhattan distance 1, plain and with
    each axis wrapped around its extent. numpy where int64 holds every sum, else Python ints."""
    if max((abs(c) for v in (*a, *b, ext) for c in v), default=0) < 1 << 58 and len(ext) <= 16:
        diff = np.abs(np.array(a, np.int64).reshape(-1, len(ext)) - np.array(b, np.int64).reshape(-1, len(ext)))
        wrapped = np.minimum(diff, np.array(ext, np.int64) - diff)
        return int(np.count_nonzero(diff.sum(axis=1) == 1)), int(np.count_nonzero(wrapped.sum(axis=1) == 1))
    diffs = [[abs(x - y) for x, y in zip(u, v)] for u, v in zip(a, b)]
    return (sum(sum(d) == 1 for d in diffs),
            sum(sum(min(x, e - x) for x, e in zip(d, ext)) == 1 for d in diffs))


def _tree_depth(und: nx.Graph) -> int:
    root = max(und.degree, key=lambda kv: (kv[1], kv[0]))[0]
    return max(nx.single_source_shortest_path_length(und, root).values())


def classify(g: nx.DiGraph, fanout_hubs: set[Node] | None = None) -> tuple[Pattern, float, dict[str, Any]]:
    """The pattern of one phase's directed graph, a confidence in [0, 1], and the numbers behind it.

    `fanout_hubs` are nodes that send point-to-point (non-broadcast) messages to many objects in
    some phase of the run: fan-in to such a hub is a master-worker reply (star), else a reduction.
    """
    n, m = g.number_of_nodes(), g.number_of_edges()
    ev: dict[str, Any] = {"objects": n, "edges": m}
    if n < MIN_NODES or m == 0:
        return Pattern.IRREGULAR, 0.0, ev
    density = m / (n * (n - 1))
    ev["density"] = round(density, 4)
    if density >= ALL_TO_ALL_DENSITY and len({x[0] for x in g.nodes}) == 1:
        return Pattern.ALL_TO_ALL, min(1.0, density), ev
    und = undirected(g)
    lat = _lattice(g, und)
    if lat is not None and lat["near_share"] >= GRID_EDGE_SHARE:
        ev.update({k: (round(v, 4) if isinstance(v, float) else v) for k, v in lat.items()})
        if lat["reciprocity"] <= ONE_WAY_RECIPROCITY and (
                lat["ndim"] == 1 or max(d for _, d in und.degree) <= 2):
            return Pattern.CHAIN, lat["near_share"], ev  # a pipeline along the lattice
        return Pattern.GRID, (lat["near_share"] + lat["degree_match"]) / 2, ev
    hub, hub_deg = max(und.degree, key=lambda kv: (kv[1], kv[0]))
    share = hub_deg / max(und.number_of_edges(), 1)
    ev["hub"] = list(hub)
    ev["hub_edge_share"] = round(share, 4)
    if share >= HUB_EDGE_SHARE:
        out_msgs = sum(d["msgs"] for _, _, d in g.out_edges(hub, data=True))
        out_bcast = sum(d["bcast"] for _, _, d in g.out_edges(hub, data=True))
        in_msgs = sum(d["msgs"] for _, _, d in g.in_edges(hub, data=True))
        ev.update({"hub_out_msgs": out_msgs, "hub_in_msgs": in_msgs, "hub_bcast_msgs": out_bcast})
        if out_msgs >= in_msgs:
            if out_msgs and out_bcast / out_msgs >= BCAST_SHARE:
                return Pattern.TREE, share, ev  # broadcast from a root
            return Pattern.STAR, share, ev  # point-to-point dispatch from a master
        if hub in (fanout_hubs or set()):
            return Pattern.STAR, share, ev  # replies to a master that dispatched work
        return Pattern.TREE, share, ev  # fan-in to a root: a reduction
    if nx.is_connected(und) and nx.is_tree(und):
        if max(d for _, d in und.degree) <= 2:
            return Pattern.CHAIN, 1.0, ev
        ev["depth"] = _tree_depth(und)
        return Pattern.TREE, 0.9, ev
    return Pattern.IRREGULAR, 1.0 - max(density, share), ev


def fanout_hubs(e: pd.DataFrame) -> set[Node]:
    """Nodes that send point-to-point messages to at least MIN_NODES distinct objects in a phase."""
    p2p = e[(e["bcast_msgs"] < e["msgs"]) & (e["src"] != e["dst"])]
    if "inferred" in p2p.columns:
        p2p = p2p[~p2p["inferred"].fillna(False).astype(bool)]
    counts = p2p.groupby(["src", "entry"])["dst"].nunique()
    return {s for (s, _), k in counts.items() if k >= MIN_NODES}


def collection_patterns(edges: pd.DataFrame) -> dict[str, list[dict[str, Any]]]:
    """Per receiving collection, the pattern of each phase (one phase = one entry method)."""
    e = clean_edges(edges)
    if e.empty:
        return {}
    e["dst_coll_s"] = [d[0] or "(pe)" for d in e["dst"]]
    hubs = fanout_hubs(e)
    out: dict[str, list[dict[str, Any]]] = {}
    if "inferred" not in e.columns:
        e["inferred"] = False
    e["inferred"] = e["inferred"].fillna(False).astype(bool)
    for (coll, entry), part in e.groupby(["dst_coll_s", "entry"], sort=True):
        if len(part) > PHASE_EDGES_MAX:
            out.setdefault(coll, []).append(_bounded_phase(part, str(entry)))
            continue
        g = phase_digraph(part)
        if g.number_of_nodes() < MIN_NODES:
            continue
        if part["inferred"].all():  # reductions inferred from the timeline: a spanning tree by construction
            pattern, conf = Pattern.TREE, 0.7
            ev = {"objects": g.number_of_nodes(), "edges": g.number_of_edges(), "inferred_reduction": True,
                  "reductions": int(part["msgs"].max())}
        else:
            pattern, conf, ev = classify(g, hubs)
        ev["msgs"] = int(part["msgs"].sum())
        ev["bytes"] = int(part["bytes"].sum())
        out.setdefault(coll, []).append(
            {"pattern": pattern.value, "phase": str(entry), "confidence": round(float(conf), 3),
             "evidence": ev})
    return out


def _bounded_phase(part: pd.DataFrame, entry: str) -> dict[str, Any]:
    """The pattern of a phase above PHASE_EDGES_MAX object pairs, from counts (no graph)."""
    p = part[part["src"] != part["dst"]]
    n = len(set(p["src"]) | set(p["dst"]))
    m = int(p.groupby(["src", "dst"]).ngroups)
    density = m / (n * (n - 1)) if n > 1 else 0.0
    ev: dict[str, Any] = {"objects": n, "edges": m, "density": round(density, 4), "bounded": PHASE_EDGES_MAX,
                          "msgs": int(part["msgs"].sum()), "bytes": int(part["bytes"].sum())}
    a2a = density >= ALL_TO_ALL_DENSITY
    return {"pattern": (Pattern.ALL_TO_ALL if a2a else Pattern.IRREGULAR).value, "phase": entry,
            "confidence": round(min(1.0, density), 3) if a2a else 0.0, "evidence": ev}
