"""Real traced runs that several test files read: each is run once per session (the `traced_run`
fixture of tests/conftest.py) and its folder shared. Tests that take one only read it; anything
they make (hints, reports, another trace) goes to their own tmp_path.

A run is keyed by its command line and the PARADISE_* variables that change what the tracer
records, so a module that runs with the pure-Python recorder gets its own run.
"""

from __future__ import annotations

import os
import subprocess
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PROGRAMS = ROOT / "tests" / "charm_programs"
EXAMPLES = ROOT / "examples"
RUN_TIMEOUT_S = 300
RECORDING_ENV = ("PARADISE_NATIVE_RECORDER", "PARADISE_FAKE_CLOCK_SKEW")
"""Environment variables that change what a traced run records."""

RING_ITERS = 3
RING = ("charm", PROGRAMS / "ring.py", str(RING_ITERS))
"""ring.py, 3 steps (test_charm_trace, test_charm_recorders, test_charm_mapping's round trip)."""
THREADED = ("charm", PROGRAMS / "threaded.py")
"""Coroutine entry methods and main (test_time_accounting, the consistency suite)."""
STENCIL_HEAVY = ("charm", EXAMPLES / "stencil2d.py", "--grid", "4", "4", "--block", "512", "--iters", "24",
                 "--heavy", "0:2,0:2", "--heavy-factor", "8")
"""4x4 blocks, the heavy 2x2 corner all on PE 0 (test_characteristics_examples, test_compare_charm)."""
DDP_STEPS = 12
DDP_MODEL_ARGS = ("--hidden", "256", "--layers", "3", "--seed", "3")
"""The model of DDP_STRAGGLER; test_jit_checkpoint trains it too, so the one untraced run of
DDP_STRAGGLER (the `untraced_ddp` fixture) gives both files the uninterrupted run's hash."""
DDP_STRAGGLER = ("torch", EXAMPLES / "ddp_train.py", "--steps", str(DDP_STEPS), *DDP_MODEL_ARGS,
                 "--straggler-rank", "1", "--straggler-ms", "40")
"""Small model (fast steps), 40 ms more in every forward of rank 1: a straggler on any load
(test_torch_trace, test_time_accounting, the consistency suite)."""
DDP_PROFILED_STEPS = 6
DDP_PROFILED = ("torch", EXAMPLES / "ddp_train.py", "--steps", str(DDP_PROFILED_STEPS), "--hidden", "64",
                "--straggler-rank", "1", "--straggler-ms", "20")
"""Run with --profiler (test_torch_trace, the consistency suite)."""
PLAIN_DDP = ROOT / "tests" / "torch_programs" / "plain_ddp.py"
REFUSED_BUCKET_CAP = float("nan")
"""plain_ddp.py is traced once with a comm.json whose ddp.bucket_cap_mb is NaN: the run refuses it and
keeps DDP's default buckets (test_hint_refusals checks the refusal, test_torch_trace counts the buckets)."""


def trace_command(out: Path, kind: str, program: Path, *args: str, opts: tuple[str, ...] = ()) -> list[str]:
    """`paradise trace KIND --pes|--nproc 2 OPTS -o OUT PROGRAM ARGS`."""
    from tests.conftest import bin_path

    n = ["--pes", "2"] if kind == "charm" else ["--nproc", "2"]
    return [bin_path("paradise"), "trace", kind, *n, *opts, "-o", str(out), str(program), *map(str, args)]


def run_cache(mktemp: Callable[[str], Path]) -> Callable[..., tuple[Path, subprocess.CompletedProcess]]:
    """run(kind, program, *args, opts=()) -> (trace folder, finished process), each run once."""
    done: dict[tuple, tuple[Path, subprocess.CompletedProcess]] = {}

    def run(kind: str, program: Path, *args: str, opts: tuple[str, ...] = ()) -> tuple[Path,
                                                                                       subprocess.CompletedProcess]:
        key = (kind, str(program), tuple(map(str, args)), tuple(opts), tuple(os.environ.get(v) for v in RECORDING_ENV))
        if key not in done:
            out = mktemp(f"{kind}-{Path(program).stem}") / "trace"
            proc = subprocess.run(trace_command(out, kind, program, *args, opts=opts), capture_output=True, text=True,
                                  timeout=RUN_TIMEOUT_S, cwd=ROOT)
            done[key] = (out, proc)
        return done[key]

    return run


def analyze_cache() -> Callable[[Path], subprocess.CompletedProcess]:
    """analyze(trace) -> the finished `paradise analyze TRACE --json` (cwd: the repository), each run once."""
    from tests.conftest import bin_path

    done: dict[str, subprocess.CompletedProcess] = {}

    def analyze(trace: Path) -> subprocess.CompletedProcess:
        if str(trace) not in done:
            done[str(trace)] = subprocess.run([bin_path("paradise"), "analyze", str(trace), "--json"],
                                              capture_output=True, text=True, timeout=RUN_TIMEOUT_S, cwd=ROOT)
        return done[str(trace)]

    return analyze


def bucket_hint(d: Path, cap: object, program: str = "plain_ddp") -> Path:
    """d/comm.json with only a ddp section of bucket size `cap`, written as Python's json writes
    NaN and Infinity (no validation: the consumers are the ones to refuse it)."""
    import json

    doc = {"format": "paradise-hints/1", "kind": "comm", "provenance": {"program": program, "pes": 2},
           "justified_by": [], "predicted_gain": {}, "combine": [], "threshold": {},
           "ddp": {"bucket_cap_mb": cap, "verdict": "too_large"}}
    d.mkdir(parents=True, exist_ok=True)
    (d / "comm.json").write_text(json.dumps(doc))
    return d


def torchrun_untraced(program: Path, *args: str, timeout: int = RUN_TIMEOUT_S) -> subprocess.CompletedProcess:
    """`torchrun --standalone --nproc-per-node 2 PROGRAM ARGS` without paradise (cwd: the repository)."""
    import sys

    env = dict(os.environ, TORCH_DISABLE_SHARE_RDZV_TCP_STORE="1", OMP_NUM_THREADS="1")
    cmd = [sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc-per-node", "2", str(program),
           *map(str, args)]
    return subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, env=env, cwd=ROOT)
