"""Mapping generators: candidate object -> PE placements from per-object loads and edges.

Pure functions over plain data (no paradise imports): objects are hashable keys, loads are
numbers (ns), placements are dicts object -> PE. The analysis compares candidates by what-if
replay and writes the winner as mapping.json ({"collections": {coll: {index: pe}}}).
"""

from __future__ import annotations

import heapq
from collections.abc import Hashable, Iterable

REFINE_MAX_MOVES_SHARE = 0.1
"""Refine moves at most this share of the objects (few migrations), at least one."""
METIS_LOAD_UNIT_NS = 1_000
"""pymetis needs integer weights: loads are given in µs (and at least 1)."""


def pe_loads(placement: dict[Hashable, int], loads: dict[Hashable, float], pes: int,
             base: list[float] | None = None) -> list[float]:
    """Sum of object loads per PE, on top of the load that cannot move (base)."""
    out = list(base) if base else [0.0] * pes
    for o, p in placement.items():
        out[p] += loads.get(o, 0.0)
    return out


def greedy_lpt(loads: dict[Hashable, float], pes: int, base: list[float] | None = None) -> dict[Hashable, int]:
    """Longest processing time first: heaviest object to the least loaded PE."""
    heap = [(b, p) for p, b in enumerate(base or [0.0] * pes)]
    heapq.heapify(heap)
    out: dict[Hashable, int] = {}
    for o in sorted(loads, key=lambda k: (-loads[k], str(k))):
        load, p = heapq.heappop(heap)
        out[o] = p
        heapq.heappush(heap, (load + loads[o], p))
    return out


def refine(current: dict[Hashable, int], loads: dict[Hashable, float], pes: int,
           base: list[float] | None = None, max_moves: int | None = None) -> dict[Hashable, int]:
    """Greedy refinement: move single objects off the most loaded PE while the maximum drops."""
    out = dict(current)
    tot = pe_loads(out, loads, pes, base)
    limit = max_moves if max_moves is not None else max(1, int(len(out) * REFINE_MAX_MOVES_SHARE))
    for _ in range(limit):
        src = max(range(pes), key=lambda p: tot[p])
        dst = min(range(pes), key=lambda p: tot[p])
        gap = tot[src] - tot[dst]
        # the object whose move best evens the two PEs, if it lowers the maximum
        best, best_max = None, tot[src]
        for o, p in out.items():
            if p != src:
                continue
            w = loads.get(o, 0.0)
            new_max = max(tot[src] - w, tot[dst] + w)
            if 0 < w < gap and new_max < best_max:
                best, best_max = o, new_max
        if best is None:
            break
        w = loads.get(best, 0.0)
        out[best] = dst
        tot[src] -= w
        tot[dst] += w
    return out


def _relabel(parts: list[int], objs: list[Hashable], current: dict[Hashable, int], pes: int) -> dict[Hashable, int]:
    """Renames partitions to PEs so that as many objects as possible stay where they are."""
    overlap: dict[tuple[int, int], int] = {}
    for o, part in zip(objs, parts):
        key = (part, current.get(o, -1))
        overlap[key] = overlap.get(key, 0) + 1
    rename: dict[int, int] = {}
    used: set[int] = set()
    for (part, pe), _ in sorted(overlap.items(), key=lambda kv: -kv[1]):
        if part not in rename and pe not in used and pe >= 0:
            rename[part] = pe
            used.add(pe)
    free = [p for p in range(pes) if p not in used]
    for part in sorted(set(parts)):
        if part not in rename:
            rename[part] = free.pop(0)
    return {o: rename[part] for o, part in zip(objs, parts)}


def metis_partition(loads: dict[Hashable, float], edges: Iterable[tuple[Hashable, Hashable, float]],
                    pes: int, current: dict[Hashable, int] | None = None) -> dict[Hashable, int]:
    """Communication-aware partition (pymetis): vertex weight = load, edge weight = bytes."""
    import pymetis

    objs = sorted(loads, key=str)
    if pes <= 1 or len(objs) <= pes:
        return greedy_lpt(loads, pes)
    pos = {o: i for i, o in enumerate(objs)}
    adj: list[dict[int, int]] = [{} for _ in objs]
    for a, b, w in edges:
        if a in pos and b in pos and a != b:
            i, j, wi = pos[a], pos[b], max(1, int(w))
            adj[i][j] = adj[i].get(j, 0) + wi
            adj[j][i] = adj[j].get(i, 0) + wi
    xadj, adjncy, eweights = [0], [], []
    for nb in adj:
        for j in sorted(nb):
            adjncy.append(j)
            eweights.append(nb[j])
        xadj.append(len(adjncy))
    vweights = [max(1, int(loads[o] / METIS_LOAD_UNIT_NS)) for o in objs]
    if hasattr(pymetis, "CSRAdjacency"):  # pymetis >= 2025.2
        adjacency = pymetis.CSRAdjacency(adj_starts=xadj, adjacent=adjncy)
        _, parts = pymetis.part_graph(pes, adjacency, vweights=vweights, eweights=eweights)
    else:
        _, parts = pymetis.part_graph(pes, xadj=xadj, adjncy=adjncy, vweights=vweights, eweights=eweights)
    return _relabel(list(parts), objs, current or {}, pes)


def moves(a: dict[Hashable, int], b: dict[Hashable, int]) -> int:
    """Objects placed differently in b than in a."""
    return sum(1 for o, p in b.items() if a.get(o) != p)


def to_payload(placement: dict[tuple[str, str], int]) -> dict[str, dict[str, int]]:
    """{(coll, index text): pe} -> {"collections": {coll: {index: pe}}}'s inner object."""
    out: dict[str, dict[str, int]] = {}
    for (coll, idx), pe in sorted(placement.items()):
        out.setdefault(coll, {})[idx] = int(pe)
    return out
