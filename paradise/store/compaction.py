"""A trace directory's spools into its per-PE Parquet files, with the clock refinement by the
messages (paradise.store.clockrefine) measured once on the way and stored in the files'
`clock.refinement`: the trace-wide outcome and each file's own PE's entry (paradise.store.clockstore),
so that no read measures it again (docs/trace-format.md, Refinement by the messages). The launcher
runs it after the run, open_trace for a directory whose launcher never did.

The spools are read twice where offsets were measured: once for their message rows (the
refinement needs every PE's before any file is written, and a file's metadata is written with
it), once to convert them.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from pathlib import Path
from typing import Any

from paradise.errors import ParadiseError
from paradise.format import OUTPUTS_FILE
from paradise.format.compact import LOCK_WAIT_S, SpoolError, convert_all, spools
from paradise.format.spool_scan import final_metadata, write_messages
from paradise.format.summary import SummaryFactory
from paradise.store.clock import clock_summary, file_corrections, refinable
from paradise.store.clockrefine import measure
from paradise.store.clockstore import for_file


def compact(directory: str | os.PathLike, *, wait_s: float = LOCK_WAIT_S, summary: SummaryFactory | None = None
            ) -> tuple[int, int]:
    """(spools converted, rows) of a trace directory, each file with its part of the trace's clock
    refinement where its PEs measured offsets, and its summary where `summary` makes one
    (paradise.format.compact.convert)."""
    try:
        clocks = refinement_of_spools(Path(directory), wait_s=wait_s)
    except (ParadiseError, SpoolError, OSError):  # damaged metadata, a full disk, too little memory:
        clocks = None  # converted as before, and the reader refuses the damage or measures
    return convert_all(directory, wait_s=wait_s, clocks=clocks, summary=summary)


def refinement_of_spools(directory: Path, *, wait_s: float = LOCK_WAIT_S) -> dict[str, dict[str, Any]] | None:
    """Spool name -> the `clock` fields its file adds (its part of the trace's `clock.refinement`),
    measured from the spools' message rows (written to a scratch folder inside the directory,
    removed after); None where there is nothing to refine, or the trace is not all spools (a PE's
    file converted before: the reader measures)."""
    found = spools(directory)
    converted = [p for p in directory.glob("*.parquet") if p.name != OUTPUTS_FILE and not p.name.startswith(".")]
    if not found or converted:
        return None
    metas = [final_metadata(s) for s in found]
    clock = clock_summary(found, metas)
    if clock is None or not clock["offsets"] or not refinable(clock):
        return None
    scratch = Path(tempfile.mkdtemp(prefix=".clock-", dir=directory))
    try:
        files = [scratch / f"{s.name}.parquet" for s in found]
        for spool, out in zip(found, files):
            if not write_messages(spool, out, wait_s=wait_s):
                return None  # another process converted it meanwhile (with its own refinement)
        refinement = measure([str(f) for f in files], file_corrections(files, metas), clock)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    return {s.name: {"refinement": for_file(refinement, meta.get("pe"))} for s, meta in zip(found, metas)}
