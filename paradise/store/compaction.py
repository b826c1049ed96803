"""A trace directory's spools into its per-PE Parquet files, with the clock refinement by the
messages (paradise.store.clockrefine) measured once on the way and stored in every file's
`clock.refinement`, so that no read measures it again (docs/trace-format.md, Refinement by the
messages). The launcher runs it after the run, open_trace for a directory whose launcher never did.
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
from paradise.store.clock import clock_summary, file_corrections, refinable
from paradise.store.clockrefine import measure


def compact(directory: str | os.PathLike, *, wait_s: float = LOCK_WAIT_S) -> tuple[int, int]:
    """(spools converted, rows) of a trace directory, each file with the trace's clock refinement
    where its PEs measured offsets."""
    try:
        refinement = refinement_of_spools(Path(directory), wait_s=wait_s)
    except (ParadiseError, SpoolError, OSError):  # damaged metadata, a full disk, too little memory:
        refinement = None  # converted as before, and the reader refuses the damage or measures
    return convert_all(directory, wait_s=wait_s, clock={"refinement": refinement} if refinement else None)


def refinement_of_spools(directory: Path, *, wait_s: float = LOCK_WAIT_S) -> dict[str, Any] | None:
    """The `clock.refinement` of the trace the directory's spools make, measured from their message
    rows (written to a scratch folder inside it, removed after); None where there is nothing to
    refine, or the trace is not all spools (a PE's file converted before: the reader measures)."""
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
        names = [str(f) for f in files]
        return measure(names, file_corrections(files, metas), clock)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
