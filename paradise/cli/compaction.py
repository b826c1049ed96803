"""The trace commands' last step: a run's raw spools into its per-PE (per-rank) Parquet files,
with the one line the command's summary shows and the warning when the disk refuses."""

from __future__ import annotations

import sys
import time
from pathlib import Path

from paradise.errors import NotAParadiseTrace


def compact(out: Path, summaries: bool = True) -> str:
    """The run's spools into its per-PE (per-rank) Parquet files with the clocks' refinement and each
    file's summary stored in them (paradise.store.compaction), timed apart from the run: `compacted
    N rows in X s` for the command's summary line ("" when there were none). `summaries` False: the
    files are rewritten after (the charm launcher fills the sends' receivers) and get theirs then."""
    from paradise.engines.summary import SummaryBuilder  # pyarrow and duckdb load only when a command runs
    from paradise.format.compact import SpoolError
    from paradise.store.compaction import compact as compact_trace

    t0 = time.monotonic()
    try:
        files, rows = compact_trace(out, summary=SummaryBuilder if summaries else None)
    except SpoolError as exc:
        raise NotAParadiseTrace(str(exc)) from None
    except OSError as exc:  # a full disk, a file size limit: the run's outcome says the rest
        print(f"paradise: warning: {out}: the raw spools could not be converted to Parquet ({exc.strerror or exc}); "
              f"they are kept (pe-*.rows: the next read converts them)", file=sys.stderr, flush=True)
        return ""
    return f"compacted {rows:,} rows in {time.monotonic() - t0:.3f} s" if files else ""

