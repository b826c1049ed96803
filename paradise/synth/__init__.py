"""Synthetic traces of any size with a ground truth: what tests and benchmarks check analyses against.

`synth()` writes one Parquet file per PE, as the tracers do, in parallel (a process pool, one
task per PE file) and in bounded memory (each task builds CHUNK_ROWS rows at a time), plus
TRUTH_FILE: the characteristics the design has by construction (pattern, imbalance, heaviest
object, critical path, straggler). The designs are in paradise.synth.charm and .torch.
"""

from __future__ import annotations

import json
import os
import shutil
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path
from typing import Any

from paradise.errors import InvalidOption, OutputExists

KINDS = ("charm", "torch")
TRUTH_FILE = "synth-truth.json"


def _charm_pe(args: tuple[Any, int, Path, dict[str, Any]]) -> int:
    from paradise.synth.charm import write_pe

    return write_pe(*args)


def _torch_rank(args: tuple[Any, int, Path, dict[str, Any]]) -> int:
    from paradise.synth.torch import write_rank

    return write_rank(*args)


def _prepare(out: Path, force: bool) -> None:
    if out.exists() and (not out.is_dir() or any(out.iterdir())):
        if not force:
            raise OutputExists(f"{out}: already exists; pass --force to overwrite it")
        if out.is_dir():
            shutil.rmtree(out)
        else:
            out.unlink()
    out.mkdir(parents=True, exist_ok=True)


def synth(
    out: Path, *, kind: str = "charm", events: int = 1_000_000, pes: int = 8, pattern: str = "grid",
    imbalance: float = 1.5, seed: int = 0, jobs: int | None = None, force: bool = False,
) -> dict[str, Any]:
    """Writes a synthetic trace of about `events` rows into `out`; returns its ground truth."""
    if kind not in KINDS:
        raise InvalidOption(f"--kind {kind!r}: choose one of {', '.join(KINDS)}")
    if events < 1:
        raise InvalidOption(f"--events {events}: must be positive")
    if kind == "charm":
        from paradise.synth import charm as mod

        d = mod.design(pattern, events, pes, imbalance, seed)
        task, program, source = _charm_pe, f"synth-{pattern}", "charm4py"
    else:
        from paradise.synth import torch as mod  # type: ignore[no-redef]

        d = mod.design(events, pes, imbalance, seed)  # type: ignore[call-arg]
        task, program, source = _torch_rank, "synth-ddp", "torch"
    truth = mod.truth(d)  # type: ignore[arg-type]
    _prepare(out, force)
    meta: dict[str, Any] = {"source": source, "program": program, "pes": pes,
                            "clock": {"method": "synthetic", "residual_ns": 0}, "origin_ns": 0,
                            "extra": {"synth": {k: truth[k] for k in ("kind", "pattern", "seed")}}}
    if kind == "torch":
        meta["world_size"] = pes
    work = [(d, pe, out, meta) for pe in range(pes)]
    jobs = max(1, min(jobs or os.cpu_count() or 1, pes))
    if jobs == 1:
        rows = [task(w) for w in work]
    else:
        with ProcessPoolExecutor(max_workers=jobs) as pool:
            rows = list(pool.map(task, work))
    truth["rows"] = int(sum(rows))
    (out / TRUTH_FILE).write_text(json.dumps(truth, indent=1, sort_keys=True) + "\n")
    return truth


def read_truth(trace: Path) -> dict[str, Any]:
    """The ground truth written beside a synthetic trace."""
    return json.loads((Path(trace) / TRUTH_FILE).read_text())
