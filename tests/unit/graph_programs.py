"""The synthetic programs the exec-graph tests run on (test_critpath, test_execgraph_ranges): their
traces exercise pipelines, fan-out, reductions, periodic grids and multi-part files."""

from __future__ import annotations

from pathlib import Path

from builders import charm_like

from paradise.store import TraceHandle, open_trace
from tests.unit import charm_synth as cs

PROGS = {
    "pipeline": lambda: cs.pipeline(4, 2, 3), "ping_filler": lambda: cs.ping_filler(10, 20),
    "histsort": lambda: cs.histsort(6, 2), "master_worker": lambda: cs.master_worker(5, 2, 25),
    "tree": lambda: cs.binary_tree(4, 2), "scatter_reduce": lambda: cs.scatter_reduce(6, 2, rounds=3),
    "all_to_all": lambda: cs.all_to_all(4, 2, rounds=2), "grid_periodic": lambda: cs.grid2d(4, 4, 2, 3, periodic=True),
}


def program_trace(tmp_path: Path, name: str) -> TraceHandle:
    """The trace of PROGS[name] (or of a charm-like trace written as two parts per PE) under tmp_path/t."""
    if name == "charm_like_parts":
        return open_trace(charm_like(pes=4, steps=3).write(tmp_path / "t", parts_per_pe=2))
    prog, placement = PROGS[name]()
    return open_trace(prog.write(tmp_path / "t", placement))
