"""`paradise import kineto`."""

from __future__ import annotations

import os
from pathlib import Path

import typer

from paradise.errors import InvalidOption

MAX_RANK = 1 << 31
"""Ranks are int32 in the trace format."""


def register(app: typer.Typer) -> None:
    """Adds the `kineto` subcommand to `paradise import`."""

    @app.command("kineto")
    def kineto_cmd(
        files: list[Path] = typer.Argument(
            ..., help="PyTorch profiler trace files (.json or .json.gz), one per rank."
        ),
        out: Path = typer.Option(..., "-o", "--out", help="Output Parquet trace file."),
        rank: int | None = typer.Option(
            None, "--rank", help="Rank of a single file whose trace lacks distributedInfo.rank."
        ),
        program: str | None = typer.Option(
            None, "--program", help="Program name (default: the output's stem)."
        ),
        force: bool = typer.Option(False, "--force", help="Overwrite OUT if it exists."),
    ) -> None:
        """Import PyTorch profiler (Kineto) Chrome-trace JSON into one paradise trace."""
        # Arrow holds little here (decoding is numpy/msgspec work); its default mimalloc pool
        # still adds 30-40 MB of arenas to the peak of a small import. Read when pyarrow first
        # allocates, which in this command is below; an explicit setting wins.
        if rank is not None and not 0 <= rank < MAX_RANK:
            raise InvalidOption(f"--rank: {rank} is out of range (0..{MAX_RANK - 1})")
        os.environ.setdefault("ARROW_DEFAULT_MEMORY_POOL", "system")
        from paradise.importers.kineto import import_trace

        path = import_trace(files, out, rank=rank, force=force, program=program, progress=True)
        import pyarrow.parquet as pq

        from paradise.format import read_metadata

        pf = pq.ParquetFile(path)
        meta = read_metadata(pf.schema_arrow.metadata) or {}
        ranks = sorted(int(r) for r in meta.get("extra", {}).get("ranks", {}))
        typer.echo(
            f"wrote {path}: {pf.metadata.num_rows} events from {len(files)} file(s), "
            f"rank(s) {', '.join(map(str, ranks))}, clock {meta.get('clock', {}).get('method')}"
        )
