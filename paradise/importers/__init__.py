"""Importers of foreign trace formats: one contract and one registry.

Every importer module exposes `import_trace(sources, out, *, force, on_progress, **options) -> Path`
and is listed once in IMPORTERS, which also declares the source it writes and whether that source
is training-like; `paradise import FORMAT` is built from this registry (cli/import_cmd.py).
"""

from __future__ import annotations

import os
import stat
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from importlib import import_module
from pathlib import Path
from typing import TYPE_CHECKING, Any

from paradise.errors import ImportFormatError, TraceNotFound

ProgressCallback = Callable[[int, int], None]
"""on_progress(done, total): units of work done so far and in all (bytes or files)."""

Sources = Sequence[str | os.PathLike] | str | os.PathLike

if TYPE_CHECKING:
    from paradise.format.summary import SummaryWriter


def output_summary(rows: int) -> SummaryWriter | None:
    """The summary builder (paradise.format.summary) for an import's output of `rows` rows: none
    below MIN_ROWS, where building it would load DuckDB into an import kept light at start-up."""
    from paradise.format.summary import MIN_ROWS

    if rows < MIN_ROWS:
        return None
    from paradise.engines.summary import SummaryBuilder

    return SummaryBuilder()


@dataclass(frozen=True)
class Option:
    """One format-specific option of `paradise import FORMAT` (a keyword of import_trace)."""

    name: str
    type: type
    help: str


@dataclass(frozen=True)
class Importer:
    """A registry entry: the format's command name, module and what its traces are."""

    format: str
    module: str
    source: str
    """The `source` metadata value the importer writes."""
    training_like: bool
    """True: ranks, ops and collectives of a training job; False: Charm-like objects and messages."""
    help: str
    sources_help: str
    sources_name: str = "sources"
    """The argument's name in the command's help (`files`, `path`)."""
    options: tuple[Option, ...] = ()
    many: bool = True
    """Whether the command takes several sources (one per rank) or exactly one."""

    def import_trace(self, sources: Sources, out: str | os.PathLike, **kwargs: Any) -> Path:
        """Runs the importer (its module is imported only now)."""
        return import_module(self.module).import_trace(sources, out, **kwargs)


IMPORTERS: dict[str, Importer] = {
    "projections": Importer(
        format="projections",
        module="paradise.importers.projections",
        source="projections",
        training_like=False,
        help="Import Charm++ Projections logs (.sts + per-PE .log/.log.gz) into one paradise Parquet file.",
        sources_help="The run's .sts file or the folder holding it and its logs.",
        sources_name="path",
        many=False,
    ),
    "kineto": Importer(
        format="kineto",
        module="paradise.importers.kineto",
        source="kineto",
        training_like=True,
        help="Import PyTorch profiler (Kineto) Chrome-trace JSON into one paradise trace.",
        sources_help="PyTorch profiler trace files (.json or .json.gz), one per rank.",
        sources_name="files",
        options=(
            Option("rank", int, "Rank of a single file whose trace lacks distributedInfo.rank."),
            Option("program", str, "Program name (default: the output's stem)."),
        ),
    ),
    "nsys": Importer(
        format="nsys",
        module="paradise.importers.nsys",
        source="nsys",
        training_like=True,
        help="Import Nsight Systems SQLite exports (nsys export --type sqlite) into one paradise trace.",
        sources_help="Nsight Systems .sqlite exports (or .nsys-rep reports, exported with nsys when on PATH), "
        "one per rank or one holding several processes.",
        sources_name="files",
        options=(
            Option("rank", int, "Rank of the one traced process of a single export (default: MPI rank thread "
                   "names, else 0, 1, ... in the order given)."),
            Option("program", str, "Program name (default: the output's stem)."),
            Option("step_pattern", str, "Regular expression for NVTX ranges that are steps, one group capturing "
                   "the step number (default: ProfilerStep#(\\d+))."),
        ),
    ),
}
"""Every importer, by the FORMAT name of `paradise import FORMAT`."""


def training_like(source: str | None) -> bool:
    """Whether traces of this `source` are PyTorch training traces (ranks, ops, collectives), as
    the tracer (paradise.format.TRACER_SOURCES) or the importer (IMPORTERS) that writes it
    declares; any other source is Charm-style."""
    from paradise.format import TRACER_SOURCES  # pyarrow: not at `paradise --help` time

    if source in TRACER_SOURCES:
        return TRACER_SOURCES[source]
    return any(imp.source == source and imp.training_like for imp in IMPORTERS.values())


def source_paths(sources: Sources) -> list[Path]:
    """The sources as a list of paths (one path alone is accepted too)."""
    if isinstance(sources, (str, os.PathLike)):
        return [Path(sources)]
    return [Path(s) for s in sources]


def rank_files(sources: Sources, files: str, what: str, rank: int | None = None, *,
               rank_needs_one: bool = False) -> list[Path]:
    """The sources as paths, after the checks that importers of one file per rank make first: some
    `files` given; --rank within 0..MAX_RANK (and, `rank_needs_one`, with a single file); each a
    regular file (`what`: one of them, for the message)."""
    from paradise.format import MAX_RANK  # pyarrow: not at `paradise --help` time

    paths = source_paths(sources)
    if not paths:
        raise ImportFormatError(f"no {files} given")
    if rank is not None and rank_needs_one and len(paths) > 1:
        raise ImportFormatError(
            f"--rank applies to a single file, got {len(paths)} files (each must carry distributedInfo.rank)"
        )
    if rank is not None and not 0 <= rank <= MAX_RANK:
        raise ImportFormatError(f"{paths[0]}: --rank {rank} is out of range (0 to {MAX_RANK})")
    for p in paths:
        regular_file(p, what)
    return paths


def regular_file(path: Path, what: str) -> Path:
    """Refuses what is not a regular file (a FIFO or a device would block or never end)."""
    try:
        mode = path.stat().st_mode
    except FileNotFoundError:
        raise TraceNotFound(f"{path}: no such file") from None
    except OSError as exc:
        raise ImportFormatError(f"{path}: cannot read ({exc.strerror or exc})") from None
    if stat.S_ISDIR(mode):
        raise ImportFormatError(f"{path}: is a directory, not {what}")
    if not stat.S_ISREG(mode):
        raise ImportFormatError(f"{path}: not a regular file (a pipe or device), not {what}")
    return path
