"""Launching a charm4py program under charmrun, traced or not (CLI, tests and benchmarks).

The command is `python -m charmrun.start +pN python -m paradise.boot.charm APP.py ARGS...`
with this interpreter (`sys.executable`) on both sides, so the venv's charm4py runs even
when charmrun's default python is another one.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class LaunchResult:
    returncode: int
    timed_out: bool
    wall_s: float
    stdout: str | None = None
    stderr: str | None = None


def charm_command(app: str | os.PathLike, app_args: list[str], pes: int, *, bootstrap: bool = True) -> list[str]:
    """charmrun command line; without bootstrap the program runs exactly as a user would run it."""
    cmd = [sys.executable, "-m", "charmrun.start", f"+p{int(pes)}", sys.executable]
    if bootstrap:
        cmd += ["-m", "paradise.boot.charm"]
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
    use_bootstrap = bootstrap if bootstrap is not None else (trace_dir is not None or hints_dir is not None)
    cmd = charm_command(app, app_args, pes, bootstrap=use_bootstrap)
    pipe = subprocess.PIPE if capture else None
    t0 = time.monotonic()
    proc = subprocess.Popen(cmd, env=env, stdout=pipe, stderr=pipe, text=True, start_new_session=True)
    try:
        out, err = proc.communicate(timeout=timeout_s)
        timed_out = False
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        out, err = proc.communicate()
        timed_out = True
    except KeyboardInterrupt:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
        raise
    return LaunchResult(proc.returncode if not timed_out else 124, timed_out, time.monotonic() - t0, out, err)
