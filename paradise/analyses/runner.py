"""The analysis runner: runs the analyses of ANALYSES that apply on a run's session (paradise.run
opens it), collects their results and one-line errors, and writes their hint files. The CLI
(`paradise analyze`) only parses options and renders what this returns.

One failing analysis does not hide the others: its error is kept as one line and the others
run. Set PARADISE_DEBUG=1 to let such a failure raise with its traceback.
"""

from __future__ import annotations

import importlib
import os
from pathlib import Path
from typing import TYPE_CHECKING, Any

from paradise.analyses import ANALYSES
from paradise.errors import (
    HintMismatch,
    InvalidOption,
    OutputExists,
    OutputUnwritable,
    ParadiseError,
)

if TYPE_CHECKING:  # pandas and pyarrow load only when a command runs (fast `paradise --help`)
    from paradise.analyses.base import AnalysisConfig, AnalysisResult
    from paradise.analyses.session import Session
    from paradise.store import TraceHandle

CONCURRENT_BYTES_PER_ROW = 64
"""Analyses run two at a time, with the exec graph built beside them, only while the trace has at
most memory limit / CONCURRENT_BYTES_PER_ROW rows: each event-level query holds hash tables and
sort runs of its own; at 10^8 rows under 2 GiB, one of three at once failed to allocate 512 MiB
with 961 MiB of DuckDB's 1.1 GiB held by the others."""


def trace_summary(trace: TraceHandle) -> dict[str, Any]:
    """What --json says about the trace, from its handle alone (no extra scan)."""
    meta = trace.metadata
    return {
        "path": str(trace.path),
        "files": len(trace.files),
        "source": trace.source,
        "program": trace.program,
        "pes": meta.get("pes") or len(meta.get("pes_seen", [])) or None,
        "complete": trace.complete,
        "rows": trace.num_rows,
        "format_version": meta.get("format_version"),
        "fingerprint": trace.fingerprint,
    }


def _one_line(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    return f"{type(exc).__name__}: {text[0]}" if text else type(exc).__name__


def concurrent(session: Session) -> bool:
    """Whether analyses may run two at a time on this session: an engine that allows it, and a
    trace small enough for its memory limit (CONCURRENT_BYTES_PER_ROW)."""
    eng = session.engine
    if not getattr(eng, "thread_safe", False):
        return False
    limit = getattr(eng, "memory_limit", None)
    return limit is None or session.trace.num_rows * CONCURRENT_BYTES_PER_ROW <= limit


def run_analyses(
    session: Session, config: AnalysisConfig, names: tuple[str, ...] = ANALYSES, progress: Any = None
) -> tuple[dict[str, AnalysisResult], dict[str, str]]:
    """Results of every analysis that applies, and a one-line error per analysis that failed.

    On an engine that allows it (`thread_safe`) and a trace small enough for its memory limit
    (concurrent), analyses run two at a time: the overview's SQL
    scans use the cores while another analysis works, and analyses that need the same shared
    result wait for the one that builds it (paradise.analyses.session). Results and errors keep
    the order of `names` whatever order the analyses finish in."""
    from concurrent.futures import ThreadPoolExecutor

    debug = bool(os.environ.get("PARADISE_DEBUG"))

    def one(name: str) -> AnalysisResult | None:
        module = importlib.import_module(f"paradise.analyses.{name}")
        return module.analyze(session, config) if module.applies(session) else None

    workers = 2 if concurrent(session) and len(names) > 1 else 1
    outcomes: dict[str, AnalysisResult | None | BaseException] = {}
    with ThreadPoolExecutor(max_workers=workers, thread_name_prefix="paradise-analysis") as pool:
        futures = {pool.submit(one, name): name for name in names}
        for fut in futures:  # in submission order; each is waited for, so none is left running
            if progress is not None:  # the stage the bar waits on is the analysis waited for
                progress.stage(futures[fut])
            try:
                outcomes[futures[fut]] = fut.result()
            except ParadiseError:  # bad input found while reading (a damaged file): not a bug
                for other in futures:
                    other.cancel()
                raise
            except Exception as exc:  # a bug in one analysis must not hide the others
                if debug:
                    raise
                outcomes[futures[fut]] = exc
            if progress is not None:
                progress.advance(1)
    results = {n: r for n, r in outcomes.items() if r is not None and not isinstance(r, BaseException)}
    errors = {n: _one_line(r) for n, r in outcomes.items() if isinstance(r, BaseException)}
    return results, errors


def needs(session: Session, names: tuple[str, ...]) -> frozenset[str]:
    """The shared results the analyses `names` that apply to the session's trace declare (their NEEDS)."""
    out: set[str] = set()
    for name in names:
        module = importlib.import_module(f"paradise.analyses.{name}")
        if module.applies(session):
            out |= set(getattr(module, "NEEDS", ()))
    return frozenset(out)


def write_hints(results: dict[str, AnalysisResult], directory: Path, force: bool,
                advisory: bool = False) -> tuple[list[str], list[str]]:
    """Writes every hint document; returns (paths written, notes). Refuses to overwrite unforced.
    Advisory kinds (no runtime consumer here) are written only with `advisory`."""
    from hints.format import HintError, advisory_kinds, write_hint

    docs: list[tuple[str, dict[str, Any]]] = []
    warnings: list[str] = []
    seen: dict[str, str] = {}
    for name, result in results.items():
        for doc in result.hints:
            kind = str(doc.get("kind"))
            if kind in advisory_kinds() and not advisory:
                g = doc.get("predicted_gain") or {}
                gain = (f" (what-if: {g['makespan_ns_before'] / 1e9:.3f} s -> {g['makespan_ns_after'] / 1e9:.3f} s)"
                        if "makespan_ns_before" in g and "makespan_ns_after" in g else "")
                warnings.append(f"{kind}.json not written: it is advice for runtimes with message priorities "
                                f"(Charm++ C++), which charm4py lacks{gain}; pass --advisory to write it")
                continue
            if kind in seen:
                warnings.append(f"analysis {name!r} made a second {kind!r} hint (first from {seen[kind]!r}); skipped")
                continue
            seen[kind] = name
            docs.append((name, doc))
    if not force:
        for _, doc in docs:
            target = directory / f"{doc['kind']}.json"
            if target.exists():
                raise OutputExists(f"{target}: already exists; pass --force to overwrite it")
    written = []
    for name, doc in docs:
        try:
            written.append(str(write_hint(directory, doc, force=force)))
        except FileExistsError as exc:
            raise OutputExists(str(exc)) from None
        except HintError as exc:
            raise HintMismatch(f"{directory}: hint from analysis {name!r}: {exc}") from None
        except OSError as exc:
            raise OutputUnwritable(f"{directory}: cannot write hints ({exc.strerror or exc})") from None
    return written, warnings



def select_analyses(only: str | None) -> tuple[str, ...]:
    """The analyses --only names (comma-separated), in report order; all of ANALYSES for None."""
    if only is None:
        return ANALYSES
    wanted = {n.strip() for n in only.split(",") if n.strip()}
    unknown = sorted(wanted - set(ANALYSES))
    if unknown or not wanted:
        what = f"unknown analysis {', '.join(map(repr, unknown))}" if unknown else "no analysis named"
        raise InvalidOption(f"--only {only!r}: {what} (choose from {', '.join(ANALYSES)})")
    return tuple(n for n in ANALYSES if n in wanted)
