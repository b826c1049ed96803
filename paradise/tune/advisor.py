"""What the analyses propose for a traced run, and what what-if predicts for it. `Advisor` is the
interface the loop uses; CliAdvisor runs `paradise analyze --hints-out` and `paradise whatif` as a
user would, and reads each proposed file through the hint-kind registry (hints.kinds)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any, Protocol

STEP_TIMEOUT_S = 900
TRIED = ("mapping", "comm", "ddp")
"""Kinds whose effect is a run time: tried against the baseline. schedule (no charm4py consumer) and
checkpoint (a policy for failures, not for speed) are recorded as information."""


class AdviceFailed(Exception):
    """`analyze` or `whatif` failed on a traced run; the message is its last lines."""


class Advisor(Protocol):
    def propose(self, trace: Path, out: Path) -> dict[str, Any]:
        """Writes the hint files into `out`; returns {"candidates": {kind: summary}, "information": {kind: summary}}."""
        ...

    def predict(self, trace: Path, hints: Path) -> dict[str, Any] | None:
        """{"ratio": replay(hints) / replay(current), ...} or None when no kind in `hints` has a replay."""
        ...


def _paradise(*args: str) -> str:
    from tracers import job

    proc = job.start([sys.executable, "-P", "-m", "paradise.cli.main", *args], env=dict(os.environ), stdout=subprocess.PIPE,
                     stderr=subprocess.PIPE, text=True)
    with job.owned(proc):
        try:
            out, err = proc.communicate(timeout=STEP_TIMEOUT_S)
        except subprocess.TimeoutExpired:
            job.stop(proc, grace_s=0)
            raise AdviceFailed(f"paradise {args[0]} ran past {STEP_TIMEOUT_S} s") from None
    if proc.returncode != 0:
        raise AdviceFailed(f"paradise {args[0]} failed ({proc.returncode}): {' '.join(err.strip().splitlines()[-2:])}")
    return out


def useful(kind: str, doc: dict[str, Any], payload: Any) -> str | None:
    """A one-line summary of a proposed file that changes something in the next run; None when it
    changes nothing (mapping strategy 'keep', no stream to combine, no bucket size)."""
    if kind == "mapping":
        if doc.get("strategy") == "keep":
            return None
        gain = doc.get("predicted_gain") or {}
        return f"strategy {doc.get('strategy')}, {gain.get('moves', '?')} element(s) move"
    if kind == "comm":
        return f"combine {len(payload)} stream(s)" if payload else None
    if kind == "ddp":
        return f"bucket_cap_mb {payload:g} ({(doc.get('ddp') or {}).get('verdict')})" if payload else None
    return None


def same_hint(kind: str, a: Path, b: Path, program: str | None = None, pes: int | None = None) -> bool:
    """Whether two files of `kind` ask the next run for the same thing (their validated payloads
    are equal, a list in any order: comm's streams are sorted by their message counts, which move
    from run to run): a proposal equal to the file already kept changes nothing. False when either
    is missing or unreadable."""
    from hints.format import HintError
    from hints.kinds import KINDS

    def canonical(payload: Any) -> Any:
        if isinstance(payload, list):
            return sorted(json.dumps(x, sort_keys=True, default=str) for x in payload)
        return payload

    try:
        return canonical(KINDS[kind].read(a, program=program, pes=pes)[1]) == \
            canonical(KINDS[kind].read(b, program=program, pes=pes)[1])
    except (HintError, OSError, ValueError, KeyError):
        return False


class CliAdvisor:
    """The real analyses, through the `paradise` commands."""

    def __init__(self, runtime: str, program: str, procs: int) -> None:
        self.runtime, self.program, self.procs = runtime, program, procs

    def propose(self, trace: Path, out: Path) -> dict[str, Any]:
        from hints.format import HintError
        from hints.kinds import KINDS

        _paradise("analyze", str(trace), "--hints-out", str(out), "--force", "--json")
        cands: dict[str, Any] = {}
        info: dict[str, Any] = {}
        for name, kind in KINDS.items():
            path = out / kind.file
            if not path.is_file():
                continue
            try:
                doc, payload = kind.read(path, program=self.program, pes=self.procs)
            except HintError as exc:
                info[name] = f"refused: {exc}"
                continue
            if name not in TRIED:
                info[name] = f"{kind.file} written (information: tune does not time this kind)"
                continue
            line = useful(name, doc, payload) if kind.runtime == self.runtime else None
            if line:
                cands[name] = {"file": kind.file, "summary": line}
        return {"candidates": cands, "information": info}

    def predict(self, trace: Path, hints: Path) -> dict[str, Any] | None:
        if self.runtime != "charm":
            return None
        try:
            w = json.loads(_paradise("whatif", str(trace), "--hints", str(hints), "--json"))
        except AdviceFailed:
            return None
        p, m = w.get("predicted_makespan_ns"), w.get("measured_makespan_ns")
        if not p or not m:
            return None
        return {"ratio": p / m, "predicted_makespan_ns": p, "measured_makespan_ns": m}
