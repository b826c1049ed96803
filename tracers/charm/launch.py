"""Launching a charm4py program under charmrun, traced or not (CLI, tests and benchmarks).

The command is `charmrun +pN ++local python -P -m paradise.boot.charm APP.py ARGS...`: the
charmrun binary charm4py ships (what `python -m charmrun.start` runs), started directly so
that it is paradise's own child and dies with it (tracers.job), with this interpreter
(`sys.executable`) so the venv's charm4py runs. `-P` keeps the current folder off sys.path:
a folder there named like paradise's packages is never imported.
"""

from __future__ import annotations

import importlib.util
import os
import socket
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

from tracers import job


@dataclass(frozen=True)
class LaunchResult:
    returncode: int
    timed_out: bool
    wall_s: float
    stdout: str | None = None
    stderr: str | None = None


def charmrun_binary() -> str:
    """The charmrun executable of the installed charm4py (beside charmrun/start.py)."""
    spec = importlib.util.find_spec("charmrun")
    if spec is None or not spec.submodule_search_locations:
        raise FileNotFoundError("charmrun not found: install charm4py (pip install 'paradise[charm]')")
    return str(Path(next(iter(spec.submodule_search_locations))) / "charmrun")


def charm_command(app: str | os.PathLike, app_args: list[str], pes: int, *, bootstrap: bool = True) -> list[str]:
    """charmrun command line; without bootstrap the program runs exactly as a user would run it."""
    from charmrun.start import checkNodeListLocal

    cmd = [charmrun_binary(), f"+p{int(pes)}"]
    if checkNodeListLocal([]):  # as charmrun.start: PEs on this machine unless a nodelist names others
        cmd.append("++local")
    cmd.append(sys.executable)
    if bootstrap:
        cmd += ["-P", "-m", "paradise.boot.charm"]
    return [*cmd, str(app), *map(str, app_args)]


def launch(
    app: str | os.PathLike,
    app_args: list[str],
    pes: int,
    *,
    trace_dir: str | os.PathLike | None = None,
    hints_dir: str | os.PathLike | None = None,
    timeout_s: float | None = None,
    capture: bool = False,
    bootstrap: bool | None = None,
) -> LaunchResult:
    """Runs the program; tracing on when trace_dir is given, mapping hints when hints_dir is."""
    env = dict(os.environ)
    env.pop("PARADISE_TRACE", None)
    env.pop("PARADISE_HINTS", None)
    if trace_dir is not None:
        env["PARADISE_TRACE"] = str(Path(trace_dir).resolve())
    if hints_dir is not None:
        env["PARADISE_HINTS"] = str(Path(hints_dir).resolve())
    env["PARADISE_TRACE_ORIGIN_NS"] = str(time.monotonic_ns())
    env["PARADISE_TRACE_ORIGIN_UNIX_NS"] = str(time.time_ns())
    env["PARADISE_TRACE_ORIGIN_HOST"] = socket.gethostname()  # CLOCK_MONOTONIC is per host
    use_bootstrap = bootstrap if bootstrap is not None else (trace_dir is not None or hints_dir is not None)
    cmd = charm_command(app, app_args, pes, bootstrap=use_bootstrap)
    pipe = subprocess.PIPE if capture else None
    t0 = time.monotonic()
    proc = job.start(cmd, env=env, stdout=pipe, stderr=pipe, text=True)
    with job.owned(proc):  # SIGTERM, SIGHUP or Ctrl-C to paradise end the job too
        try:
            out, err = proc.communicate(timeout=timeout_s)
            timed_out = False
        except subprocess.TimeoutExpired:
            job.stop(proc, grace_s=0)
            out, err = proc.communicate()
            timed_out = True
    return LaunchResult(proc.returncode if not timed_out else 124, timed_out, time.monotonic() - t0, out, err)
