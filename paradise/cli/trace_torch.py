"""`paradise trace torch`: run an unmodified DDP script under torchrun with the PyTorch tracer on.

Each rank runs `python -P -m paradise.boot.torch SCRIPT ARGS` (hint consumers, then the tracer's bootstrap; `-P` keeps
the current folder off sys.path) and writes one Parquet file (per torchrun attempt) into the
output directory. The script's stdout passes through; worker and torchrun stderr go to
OUT/logs/ so that a failed run ends in one line. torchrun is paradise's child and ends with it.
"""

from __future__ import annotations

import os
import re
import shutil
import sys
import time
from pathlib import Path

import typer

from paradise.cli.compaction import compact
from paradise.cli.run_options import check_run_options
from paradise.cli.torchrun_logs import root_cause
from paradise.errors import InvalidOption, OutputExists, ParadiseError, TraceNotFound

TRACER_MODULE = "paradise.boot.torch"
"""The per-rank bootstrap (hint consumers, then the tracer), named as a module so the analyzer never imports the tracer."""


_NOT_THE_ERROR = re.compile(r"^(At:|Traceback \(most recent call last\):|Exception raised from |frame #\d+|File \"|\S+\(\d+\): \w)")
"""Lines of an exception's text that are stack, not error: torch futures append `At:` and
`file(line): function` frames, c10 errors `Exception raised from` and `frame #N`."""
_CALLBACK = re.compile(r"^Got the following error when running the callback: (?:\w+: )?")


def error_line(message: str) -> str:
    """The error itself from an exception's text: its first line that is not a stack frame."""
    for line in message.splitlines():
        line = line.strip()
        if line and not _NOT_THE_ERROR.match(line):
            return _CALLBACK.sub("", line)
    return ""


class TracedRunFailed(ParadiseError):
    """The traced program exited non-zero; the message says where (rank, step, exception)."""


MAX_RESTARTS = 1000
"""Most torchrun restarts: more is a typing error."""


def _prepare_output(out: Path, force: bool, script: Path) -> None:
    """Refuses a non-empty output directory unless forced; with force, clears only trace outputs."""
    from paradise.format.compact import spools
    from paradise.store.output import prepare_output_folder  # pyarrow loads only when a command runs

    prepare_output_folder(out, inputs=[script])
    if any(out.iterdir()):
        if not force:
            raise OutputExists(f"{out}: already exists and is not empty; pass --force to overwrite it")
        for p in list(out.glob("*.parquet")) + spools(out):
            p.unlink()
        for p in list(out.glob(".*.tmp")) + list(out.glob("*.tmp")):
            p.unlink()
        for sub in ("logs", "kineto"):
            shutil.rmtree(out / sub, ignore_errors=True)


def torchrun_command(nproc: int, script: Path, args: list[str], logs: Path, max_restarts: int) -> list[str]:
    """torchrun (as `python -P -m torch.distributed.run`) running the tracer bootstrap on each rank."""
    return [
        sys.executable, "-P", "-m", "torch.distributed.run",
        "--standalone", "--nproc-per-node", str(nproc),
        "--max-restarts", str(max_restarts),
        "--log-dir", str(logs), "--redirects", "2",
        "--no-python", sys.executable, "-P", "-u", "-m", TRACER_MODULE, str(script), *args,
    ]  # fmt: skip


def say_refused_hints(hints: Path, runtime: str, program: str, pes: int) -> None:
    """Prints, on paradise's own stderr, one line per hint file the run's consumers will refuse
    (hints.kinds: the validation the ranks apply; their own refusal goes to the rank logs)."""
    from hints.kinds import refusals

    for line in refusals(hints, runtime, program=program, pes=pes):
        print(line, file=sys.stderr, flush=True)


def trace_env(out: Path, hints: Path | None, profiler: bool, program: str) -> dict[str, str]:
    env = dict(os.environ)
    env.update(
        PARADISE_TRACE=str(out),
        PARADISE_TRACE_ORIGIN_NS=str(time.time_ns()),
        PARADISE_TRACE_PROGRAM=program,
        TORCH_DISABLE_SHARE_RDZV_TCP_STORE="1",  # restarts reconnect reliably (pytorch#135712)
    )
    env.pop("PARADISE_TRACE_PROFILER", None)
    if profiler:
        env["PARADISE_TRACE_PROFILER"] = "1"
    if hints is not None:
        env["PARADISE_HINTS"] = str(hints)
    return env


def failure_summary(out: Path, rank: int | None = None) -> str | None:
    """`rank R before its first step: Exc: message` from the first failure row (of rank `rank`
    when given), if any."""
    import json

    from paradise.errors import ParadiseError
    from paradise.format.compact import spools
    from paradise.run import open_run

    if not any(out.glob("*.parquet")) and not spools(out):
        return None
    try:
        with open_run(out) as session:
            rows = session.engine.query("torch_first_failure", pe=rank).to_pylist()
            row = rows[0] if rows else None
            steps = session.engine.query("torch_rank_steps", pe=row["pe"] if row else 0).to_pylist()[0]["steps"]
    except ParadiseError:  # files the failed run left unreadable: the exit status says enough
        return None
    if row is None:
        return None
    pe, step, name, args = row["pe"], row["step"], row["name"], row["args"]
    message = error_line(str(json.loads(args).get("message", ""))) if args else ""
    where = "before its first step" if not steps else f"in step {step}"
    return f"rank {pe} failed {where}: {name}" + (f": {message}" if message else "")


def failed_how(out: Path, logs: Path) -> str:
    """What the one line says of a failed run: the failure row of the rank torchrun names as the
    root cause; that rank's end (a signal, an abort: no failure row) when it has none, since the
    other ranks' rows are then consequences (a peer's closed connection); else the first failure
    row of any rank."""
    cause = root_cause(logs)
    if cause is not None:
        return failure_summary(out, cause[0]) or cause[1]
    return failure_summary(out) or "no failure recorded in the trace"


def _import_profiles(out: Path, force: bool, program: str) -> str:
    """Imports the ranks' torch.profiler JSON into OUT/kineto/profile.parquet, a trace of its own.

    Kept apart from the tracer's files: both record the same collectives, and the importer
    counts time from the profile's first event (its metadata origin_ns gives the Unix time).
    After restarts only the last attempt is imported (earlier ones stay as JSON).
    """
    by_attempt: dict[int, list[Path]] = {}
    for f in sorted((out / "kineto").glob("rank-*.json")):
        m = re.match(r"^rank-\d+(?:\.restart-(\d+))?\.json$", f.name)
        if m:
            by_attempt.setdefault(int(m.group(1) or 0), []).append(f)
    if not by_attempt:
        return ""
    files = by_attempt[max(by_attempt)]  # one profile per rank: the last torchrun attempt
    try:
        from paradise.importers.kineto import import_trace
    except ImportError:
        return f"; profiler output left as JSON in {out / 'kineto'}"
    target = out / "kineto" / "profile.parquet"
    import_trace([str(f) for f in files], target, force=force, program=program)
    return f"; profiler trace in {target}"


def run_traced(
    script: Path,
    args: list[str],
    *,
    nproc: int,
    out: Path,
    hints: Path | None = None,
    profiler: bool = False,
    max_restarts: int = 0,
    force: bool = False,
) -> str:
    """Runs the script under torchrun with tracing; returns a one-line summary or raises."""
    check_run_options(None, nproc, "--nproc")
    if not 0 <= max_restarts <= MAX_RESTARTS:
        raise InvalidOption(f"--max-restarts: {max_restarts} is out of range (0..{MAX_RESTARTS})")
    if not script.is_file():
        raise TraceNotFound(f"{script}: no such script (or not a regular file)")
    if hints is not None and not hints.is_dir():
        raise TraceNotFound(f"{hints}: hints directory does not exist")
    _prepare_output(out, force, script)
    if hints is not None:
        say_refused_hints(hints, "torch", script.stem, nproc)
    logs = out / "logs"
    logs.mkdir()
    cmd = torchrun_command(nproc, script, args, logs, max_restarts)
    env = trace_env(out.resolve(), hints.resolve() if hints else None, profiler, script.stem)
    from tracers import job

    with open(logs / "torchrun.stderr", "wb") as err:
        proc = job.start(cmd, env=env, stderr=err)
        try:
            with job.owned(proc):  # SIGTERM, SIGHUP or Ctrl-C to paradise end the ranks too
                rc = proc.wait()
        finally:
            compacted = compact(out)  # whatever the end: the ranks' spools into Parquet files
    if rc != 0:
        raise TracedRunFailed(f"{script}: exit status {rc}; {failed_how(out, logs)} (trace: {out}, logs: {logs})")
    extra = _import_profiles(out, force, script.stem) if profiler else ""
    return (f"paradise: traced {nproc} rank(s) of {script} into {out}{extra}"
            + (f" ({compacted} after the run)" if compacted else ""))


def register(app: typer.Typer) -> None:
    """Adds the `torch` subcommand to `paradise trace`."""

    @app.command(
        "torch",
        context_settings={"allow_interspersed_args": False, "ignore_unknown_options": True},
        help="Run a PyTorch DDP script under torchrun with tracing on: paradise trace torch "
        "--nproc N -o DIR SCRIPT.py [ARGS...]",
    )
    def trace_torch_cmd(
        script: Path = typer.Argument(..., help="the training script (run unmodified)"),
        args: list[str] = typer.Argument(None, help="arguments passed to the script"),
        nproc: int = typer.Option(2, "--nproc", help="processes (ranks) on this machine"),
        out: Path = typer.Option(..., "-o", "--out", metavar="DIR", help="trace directory to write"),
        hints: Path = typer.Option(None, "--hints", metavar="DIR", help="hints directory for the run (PARADISE_HINTS)"),
        profiler: bool = typer.Option(False, "--profiler", help="also run torch.profiler and import it"),
        max_restarts: int = typer.Option(0, "--max-restarts", help="torchrun restarts after a failure"),
        force: bool = typer.Option(False, "--force", help="overwrite an existing trace directory"),
    ) -> None:
        from tracers.job import JobTerminated

        try:
            summary = run_traced(
                script, list(args or []), nproc=nproc, out=out, hints=hints,
                profiler=profiler, max_restarts=max_restarts, force=force,
            )  # fmt: skip
        except JobTerminated as exc:
            print(f"paradise: {script} stopped ({exc} to paradise); trace so far in {out}", file=sys.stderr)
            raise typer.Exit(128 + exc.signum) from None
        print(summary, file=sys.stderr)
