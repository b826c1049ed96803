"""One run per command: the trace, its engine and its session, opened together and closed together.

Every command that reads a trace through an engine opens one run (`open_run`) and hands its
Session to whatever needs the engine (analyses, the report's queries, what-if, exports), so a
command builds one engine, honours --memory-limit/--workers once, and shares one exec graph.
Outside paradise/engines this is the only package that constructs an engine
(tests/unit/test_layers.py).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

from paradise.analyses import ANALYSES
from paradise.errors import EngineUnavailable

if TYPE_CHECKING:  # pandas and pyarrow load only when a command runs (fast `paradise --help`)
    from paradise.analyses.base import AnalysisConfig, AnalysisResult
    from paradise.analyses.session import Session
    from paradise.store import TraceHandle

ENGINES = ("duckdb", "dask")
PREFETCH = ("exec_graph",)
"""Shared results started on a thread of their own as soon as the engine is open, when an analysis
that applies needs them: the exec graph is the run's longest query, and it proceeds while the
analyses import and the overview scans."""


def make_engine(trace: TraceHandle, engine: str = "duckdb", scheduler: str | None = None, **options: Any) -> Any:
    """The engine by name; a scheduler address (or `local`) implies the Dask engine. Options
    (memory_limit; spill_dir for DuckDB; workers and worker_memory for Dask) go to the engine;
    None values mean the engine's default."""
    from paradise.engines import get_engine

    if scheduler:
        engine = "dask"
    if engine not in ENGINES:
        raise EngineUnavailable(f"unknown engine {engine!r} (choose {' or '.join(ENGINES)})")
    keep = ("memory_limit", "spill_dir") if engine == "duckdb" else ("memory_limit", "workers", "worker_memory")
    return get_engine(trace, engine, scheduler=scheduler, **{k: v for k, v in options.items()
                                                             if k in keep and v is not None})


@contextmanager
def open_run(path: str | Path | TraceHandle, *, engine: str = "duckdb", scheduler: str | None = None,
             memory_limit: int | None = None, workers: int | None = None, worker_memory: int | None = None,
             spill_dir: str | Path | None = None) -> Iterator[Session]:
    """Opens the trace at `path` (or takes an open handle), its engine and the run's Session.

    On exit the session settles (results still being built on threads finish) and the engine
    closes, on success and on failure. An engine error that a damaged trace file explains becomes
    one line naming the file (TruncatedTrace), whichever part of the command read it."""
    from paradise.analyses.session import Session
    from paradise.store import TraceHandle, open_trace

    trace = path if isinstance(path, TraceHandle) else open_trace(path, memory_limit)
    eng = make_engine(trace, engine, scheduler, memory_limit=memory_limit, workers=workers,
                      worker_memory=worker_memory, spill_dir=spill_dir)
    session = Session(eng, trace)
    try:
        yield session
    except Exception as exc:
        bad = _damaged(exc, trace)
        if bad is exc:
            raise
        raise bad from None
    finally:
        session.settle()
        eng.close()


def _damaged(exc: BaseException, trace: TraceHandle) -> BaseException:
    """The damaged-file error for a DuckDB error raised outside the engine's guard (a stream read
    by the caller); any other error unchanged."""
    import duckdb

    if not isinstance(exc, duckdb.Error):
        return exc
    from paradise.engines.duckdb_engine import damaged_file_error

    return damaged_file_error(exc, trace.files)


def analyze_run(session: Session, config: AnalysisConfig | None = None, names: tuple[str, ...] = ANALYSES,
                progress: Callable[[str, int], Any] | None = None, bar: Any = None,
                ) -> tuple[dict[str, AnalysisResult], dict[str, str]]:
    """Runs the analyses `names` (default: all) that apply on the run's session, prefetching the
    shared results they need when analyses may run two at a time. Progress goes to `bar` (a bar the
    caller holds open) or to one made by `progress(label, total)`: its `stage(name)` is called as
    each analysis is waited for and `advance(1)` as it ends."""
    from paradise.analyses.base import AnalysisConfig
    from paradise.analyses.runner import concurrent, needs, run_analyses

    if concurrent(session):
        session.prefetch(k for k in PREFETCH if k in needs(session, names))
    if bar is not None or progress is None:
        return run_analyses(session, config or AnalysisConfig(), names, progress=bar)
    with progress("analyzing", len(names)) as made:
        return run_analyses(session, config or AnalysisConfig(), names, progress=made)
