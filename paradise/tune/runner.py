"""How a run is executed and timed. `Runner` is the interface the loop uses (a test replays recorded
times through it); CharmRunner and TorchRunner run the real program, untraced or traced, with or
without a hints folder, and read its time and its check lines from its output."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import tempfile
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Protocol

RUN_TIMEOUT_S = 900
"""A run longer than this is ended and counted as failed (a hinted run that hangs)."""
TAIL_CHARS = 800
UNITS = {"s": 1.0, "ms": 1e-3, "us": 1e-6, "ns": 1e-9}


@dataclass
class Outcome:
    """One measured run: its time (seconds; None when it failed), its check lines, how it ended."""

    ok: bool
    seconds: float | None
    wall_s: float
    check: str | None = None
    error: str | None = None
    rc: int = 0

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> Outcome:
        return cls(**{k: d.get(k) for k in ("ok", "seconds", "wall_s", "check", "error", "rc")})


class Runner(Protocol):
    """Runs the program once; `hints` is a hints folder or None, `trace` a trace folder or None."""

    runtime: str
    """'charm' or 'torch': which hint kinds the program's launch reads."""

    def command(self, hints: Path | None, trace: Path | None) -> list[str]: ...

    def run(self, key: str, hints: Path | None, trace: Path | None, timeout_s: float | None = None) -> Outcome:
        """`key` names the run in tune.json (a replaying runner looks its time up by it); a run
        past `timeout_s` (or the runner's own limit, whichever is shorter) is ended and failed."""
        ...


@dataclass
class Measure:
    """How a run's time and check are read from its stdout."""

    time_regex: str | None = None
    """A regex whose first group is the run's time (the program's own measured region); None: wall time."""
    time_unit: str = "s"
    check_regex: str | None = None
    """The program's result lines: every match, joined, must equal the baseline's."""

    def outcome(self, rc: int, timed_out: bool, wall_s: float, out: str, err: str) -> Outcome:
        """The run as the loop sees it: failed (with why), or its time and check lines."""
        check = None
        if self.check_regex:
            check = " | ".join(m.group(0) for m in re.finditer(self.check_regex, out, re.MULTILINE))
        if timed_out:
            return Outcome(False, None, wall_s, check, f"ran past {wall_s:.0f} s (the hang limit or --timeout) and was ended", 124)
        if rc != 0:
            tail = " ".join((err or out or "").strip().splitlines()[-3:])[-TAIL_CHARS:]
            return Outcome(False, None, wall_s, check, f"exit status {rc}: {tail}", rc)
        seconds = wall_s
        if self.time_regex:
            found = re.findall(self.time_regex, out)
            if not found:
                return Outcome(False, None, wall_s, check, f"no match of --time-regex {self.time_regex!r} in the output", rc)
            last = found[-1]
            seconds = float(last[0] if isinstance(last, tuple) else last) * UNITS[self.time_unit]
        return Outcome(True, seconds, wall_s, check, None, rc)


@dataclass
class ProgramRunner:
    """A real program: `command` builds the launch, `run` executes it as paradise's child (tracers.job)."""

    program: Path
    args: list[str]
    procs: int
    measure: Measure = field(default_factory=Measure)
    timeout_s: float = RUN_TIMEOUT_S
    runtime: str = "charm"

    def _paradise(self) -> list[str]:
        return [sys.executable, "-P", "-m", "paradise.cli.main"]

    def _traced(self, procs_flag: str, hints: Path | None, trace: Path) -> list[str]:
        """`paradise trace RUNTIME` of the program into `trace` (overwritten: the tune owns it)."""
        return [*self._paradise(), "trace", self.runtime, procs_flag, str(self.procs), "--force", "-o", str(trace),
                *(["--hints", str(hints)] if hints is not None else []), str(self.program), *self.args]

    def env(self, hints: Path | None) -> dict[str, str]:
        env = dict(os.environ)
        for k in ("PARADISE_TRACE", "PARADISE_HINTS"):
            env.pop(k, None)
        if hints is not None:
            env["PARADISE_HINTS"] = str(hints.resolve())
        return env

    def command(self, hints: Path | None, trace: Path | None, scratch: Path | None = None) -> list[str]:
        """The launch of one run (traced into `trace` when given); `scratch`: a directory the run
        may leave files in, removed after it (None: the command as recorded, for a person)."""
        raise NotImplementedError

    def run(self, key: str, hints: Path | None, trace: Path | None, timeout_s: float | None = None) -> Outcome:
        """Runs the program once, with a scratch directory of the run's own for what its launcher
        would leave in the user's temporary directory (torchrun's log directory), removed after it."""
        from tracers import job

        with tempfile.TemporaryDirectory(prefix="paradise-run-") as scratch:
            cmd = self.command(hints, trace, Path(scratch))
            t0 = time.monotonic()
            proc = job.start(cmd, env=self.env(hints if trace is None else None), stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE, text=True)
            with job.owned(proc):
                try:
                    out, err = proc.communicate(timeout=min(self.timeout_s, timeout_s or self.timeout_s))
                    timed_out = False
                except subprocess.TimeoutExpired:
                    job.stop(proc, grace_s=0)
                    out, err = proc.communicate()
                    timed_out = True
            wall_s = time.monotonic() - t0
        return self.measure.outcome(proc.returncode, timed_out, wall_s, out or "", err or "")


@dataclass
class CharmRunner(ProgramRunner):
    """charmrun +pN; untraced runs go through the same bootstrap as hinted ones, so both pay its start-up."""

    runtime: str = "charm"

    def command(self, hints: Path | None, trace: Path | None, scratch: Path | None = None) -> list[str]:
        if trace is not None:
            return self._traced("--pes", hints, trace)
        from tracers.charm.launch import charm_command

        return charm_command(self.program, self.args, self.procs, bootstrap=True)


@dataclass
class TorchRunner(ProgramRunner):
    """torchrun --standalone --nproc-per-node N with paradise's per-rank bootstrap (hint consumers)."""

    runtime: str = "torch"

    def command(self, hints: Path | None, trace: Path | None, scratch: Path | None = None) -> list[str]:
        """An untraced run's torchrun writes its log directory into `scratch` (without --log-dir it
        makes `torchelastic_*` in $TMPDIR and leaves it); a traced one's goes into the trace."""
        if trace is not None:
            return self._traced("--nproc", hints, trace)
        logs = ["--log-dir", str(scratch / "torchrun-logs")] if scratch is not None else []
        return [sys.executable, "-P", "-m", "torch.distributed.run", "--standalone",
                "--nproc-per-node", str(self.procs), *logs, "--no-python", sys.executable, "-P", "-u", "-m",
                "paradise.boot.torch", str(self.program), *self.args]

    def env(self, hints: Path | None) -> dict[str, str]:
        env = super().env(hints)
        env["TORCH_DISABLE_SHARE_RDZV_TCP_STORE"] = "1"
        env["PARADISE_TRACE_PROGRAM"] = self.program.stem
        return env
