"""Synthetic traces of any size with a ground truth: what tests and benchmarks check analyses against.

`synth()` writes one Parquet file per PE, as the tracers do, in parallel (a process pool, one
task per PE file) and in bounded memory (each task builds CHUNK_ROWS rows at a time), plus
TRUTH_FILE: the characteristics the design has by construction (pattern, imbalance, heaviest
object, critical path, straggler). The designs are in paradise.synth.charm and .torch.
"""

from __future__ import annotations

import json
import math
import os
import re
import shutil
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path
from typing import Any

from paradise.errors import InvalidOption, OutputExists, OutputUnwritable

KINDS = ("charm", "torch")
TRUTH_FILE = "synth-truth.json"
MAX_PES = 1 << 16
"""Most PEs or ranks of a synthetic trace (each gets a file and its per-step rows)."""
MAX_EVENTS = 10**11
"""Most rows of a synthetic trace (about 1 TB of Parquet): more is a typing error."""
DISK_BYTES_PER_ROW = 8
"""Parquet bytes per synthetic row, a low estimate (11-12 measured): the free-disk check's rate."""
MAX_SEED = (1 << 63) - 1
MAX_JOBS = 256
"""Most writer processes (--jobs): each is a Python interpreter with pyarrow loaded."""
MAX_TIME_NS = 1 << 62
"""Latest time a synthetic row may have: a design past it would overflow int64 nanoseconds."""
_OURS = re.compile(r"^(pe-\d{5,}\.parquet|\.pe-\d{5,}\.parquet\.tmp)$")
"""The files a synthetic trace consists of (besides TRUTH_FILE): all `--force` removes."""


def _charm_pe(args: tuple[Any, int, Path, dict[str, Any]]) -> int:
    from paradise.synth.charm import write_pe

    return write_pe(*args)


def _torch_rank(args: tuple[Any, int, Path, dict[str, Any]]) -> int:
    from paradise.synth.torch import write_rank

    return write_rank(*args)


def _trace_files(out: Path) -> list[Path]:
    """The files of a synthetic trace (or of a tracer's) in `out`: what --force may remove."""
    return sorted(p for p in out.iterdir() if _OURS.match(p.name) or p.name == TRUTH_FILE)


def _prepare(out: Path, force: bool, events: int) -> None:
    """Checks the output folder and the free disk; with --force removes only the files a trace
    consists of (never the folder's other files)."""
    from paradise.store.output import prepare_output_folder

    if str(out) == "":
        raise OutputUnwritable("'': not a folder name; choose an output folder (-o)")
    existed = out.is_dir()
    prepare_output_folder(out)
    try:
        old = _trace_files(out)
        if existed and any(out.iterdir()) and not force:
            raise OutputExists(f"{out}: already exists and is not empty; pass --force to replace the trace in it")
        _check_disk(out, events, sum(p.stat().st_size for p in old))
        for p in old:
            p.unlink()
    except OSError as exc:
        raise OutputUnwritable(f"{out}: cannot clear the old trace ({exc.strerror or exc})") from None


def check_sizes(events: int, pes: int, imbalance: float, seed: int, jobs: int | None = None) -> None:
    """Sizes within bounds before anything is allocated or written (one line naming the option)."""
    if not 1 <= pes <= MAX_PES:
        raise InvalidOption(f"--pes {pes}: must be between 1 and {MAX_PES}")
    if not 1 <= events <= MAX_EVENTS:
        raise InvalidOption(f"--events {events}: must be between 1 and {MAX_EVENTS:.0e}")
    if events < pes:
        raise InvalidOption(f"--events {events}: fewer rows than PEs ({pes})")
    if not math.isfinite(imbalance) or not 1.0 <= imbalance <= max(1.0, pes * (1 - 1e-6)):
        raise InvalidOption(f"--imbalance {imbalance}: must be at least 1 and below the PE count ({pes}); "
                            "1 with one PE")
    if not 0 <= seed <= MAX_SEED:
        raise InvalidOption(f"--seed {seed}: must be between 0 and 2^63-1")
    if jobs is not None and not 1 <= jobs <= MAX_JOBS:
        raise InvalidOption(f"--jobs {jobs}: must be between 1 and {MAX_JOBS}")


def _check_disk(out: Path, events: int, freed: int) -> None:
    """Refuses a trace that cannot fit the free space of the output's disk (at DISK_BYTES_PER_ROW)."""
    need = events * DISK_BYTES_PER_ROW
    try:
        free = shutil.disk_usage(out).free + freed
    except OSError:
        return
    if need > free:
        raise InvalidOption(f"--events {events}: needs about {need / 1e9:,.1f} GB on disk, "
                            f"{free / 1e9:,.1f} GB free under {out}")


def _check_span(period_ns: int, steps: int, imbalance: float) -> None:
    if not (0 < period_ns and period_ns * (steps + 1) <= MAX_TIME_NS):
        raise InvalidOption(f"--imbalance {imbalance}: makes the run too long for int64 nanoseconds "
                            f"({steps} steps of {period_ns} ns); choose a value further below the PE count")


def _cleanup(out: Path) -> None:
    """After a failed write: removes this run's files (the old trace's went before it started)."""
    for p in _trace_files(out):
        p.unlink(missing_ok=True)


def synth(
    out: Path, *, kind: str = "charm", events: int = 1_000_000, pes: int = 8, pattern: str = "grid",
    imbalance: float = 1.5, seed: int = 0, jobs: int | None = None, force: bool = False,
) -> dict[str, Any]:
    """Writes a synthetic trace of about `events` rows into `out`; returns its ground truth."""
    if kind not in KINDS:
        raise InvalidOption(f"--kind {kind!r}: choose one of {', '.join(KINDS)}")
    check_sizes(events, pes, imbalance, seed, jobs)
    if kind == "charm":
        from paradise.synth import charm as mod

        d = mod.design(pattern, events, pes, imbalance, seed)
        task, program, source = _charm_pe, f"synth-{pattern}", "charm4py"
    else:
        from paradise.synth import torch as mod  # type: ignore[no-redef]

        d = mod.design(events, pes, imbalance, seed)  # type: ignore[call-arg]
        task, program, source = _torch_rank, "synth-ddp", "torch"
    _check_span(d.period_ns, d.steps, imbalance)
    truth = mod.truth(d)  # type: ignore[arg-type]
    _prepare(out, force, events)
    meta: dict[str, Any] = {"source": source, "program": program, "pes": pes,
                            "clock": {"method": "synthetic", "residual_ns": 0}, "origin_ns": 0,
                            "extra": {"synth": {k: truth[k] for k in ("kind", "pattern", "seed")}}}
    if kind == "torch":
        meta["world_size"] = pes
    work = [(d, pe, out, meta) for pe in range(pes)]
    jobs = max(1, min(jobs or os.cpu_count() or 1, pes))
    try:
        if jobs == 1:
            rows = [task(w) for w in work]
        else:
            with ProcessPoolExecutor(max_workers=jobs) as pool:
                rows = list(pool.map(task, work))
        truth["rows"] = int(sum(rows))
        from paradise.store.output import atomic_output

        with atomic_output(out / TRUTH_FILE) as (_, fh):
            fh.write((json.dumps(truth, indent=1, sort_keys=True) + "\n").encode())
    except OSError as exc:
        _cleanup(out)
        raise OutputUnwritable(f"{out}: cannot write ({exc.strerror or exc}); nothing written") from None
    except BaseException:
        _cleanup(out)
        raise
    return truth


def read_truth(trace: Path) -> dict[str, Any]:
    """The ground truth written beside a synthetic trace."""
    return json.loads((Path(trace) / TRUTH_FILE).read_text())
