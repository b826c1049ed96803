"""A hint value the next run cannot use, in real runs (charm4py under charmrun +p2, torchrun with
gloo): `paradise trace` prints one refusal line on its terminal, the run goes on unhinted and
writes a complete trace, and `whatif` refuses the same file for the same reason (hints.kinds)."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from hints.kinds import refusals
from paradise.store import open_trace
from tests.conftest import bin_path
from tests.integration.charm_helpers import PROGRAMS, trace_charm
from tests.shared_runs import bucket_hint

NAN, INF = float("nan"), float("inf")


def _write(d: Path, name: str, doc: dict) -> Path:
    d.mkdir(parents=True, exist_ok=True)
    (d / name).write_text(json.dumps(doc))  # NaN and Infinity as Python's json writes and reads them
    return d


def _envelope(kind: str, program: str, **payload) -> dict:
    return {"format": "paradise-hints/1", "kind": kind, "provenance": {"program": program, "pes": 2},
            "justified_by": [], "predicted_gain": {}, **payload}


def _refusals(stderr: str, file: str) -> list[str]:
    return [ln for ln in stderr.splitlines() if f"{file} refused" in ln]


def _problem(line: str, file: str) -> str:
    """The refusal's reason, without the path (the run and whatif may spell the folder differently)."""
    return line.split(f"{file}: ", 1)[1].split("; ")[0]


def _whatif_refusal(trace: Path, hints: Path) -> str:
    proc = subprocess.run([bin_path("paradise"), "whatif", str(trace), "--hints", str(hints)],
                          capture_output=True, text=True, timeout=120)
    lines = proc.stderr.strip().splitlines()
    assert proc.returncode == 2 and len(lines) == 1, proc.stderr
    return lines[0]


STREAM = {"src_pe": 0, "dst_pe": 1, "entry": "token", "msgs": 12, "batch": 8}
CHARM_CASES = {
    "batch-infinity": ("comm.json", {"batch": INF}, "combine[0].batch should be an integer in 2..65536, not Infinity"),
    "src-pe-infinity": ("comm.json", {"src_pe": INF}, "combine[0].src_pe should be an integer in 0..1, not Infinity"),
    "batch-text": ("comm.json", {"batch": "8"}, "combine[0].batch should be an integer in 2..65536, not '8'"),
    "src-pe-fraction": ("comm.json", {"src_pe": 0.9}, "combine[0].src_pe should be an integer in 0..1, not 0.9"),
    "batch-2-63": ("comm.json", {"batch": 2**63}, "combine[0].batch should be an integer in 2..65536"),
    "mapping-pe-nan": ("mapping.json", None, "the PE should be an integer in 0..1, not NaN"),
}
CHARM_RUNS = ("batch-infinity", "mapping-pe-nan")
"""Real runs, one per consumer (the comm combiner, the mapping); every value of CHARM_CASES goes
through the same kind validation (hints.kinds), checked against the run's own trace below."""


def _charm_hints(d: Path, label: str) -> Path:
    file, stream, _ = CHARM_CASES[label]
    if file == "comm.json":
        doc = _envelope("comm", "ring", combine=[{**STREAM, **stream}], threshold={})
    else:
        doc = _envelope("mapping", "ring", collections={"Cell#0": {"[0, 0]": NAN, "[0, 1]": 1}})
    return _write(d, file, doc)


@pytest.fixture(scope="module")
def charm_runs(tmp_path_factory) -> dict[str, tuple[Path, Path, subprocess.CompletedProcess]]:
    """label -> (hints, trace, finished run): ring.py traced once per consumer with its unusable file."""
    runs = {}
    for label in CHARM_RUNS:
        base = tmp_path_factory.mktemp(f"refused-{label}")
        hints = _charm_hints(base / "h", label)
        runs[label] = (hints, base / "t", trace_charm(base / "t", PROGRAMS / "ring.py", hints=hints))
    return runs


@pytest.mark.parametrize("label", CHARM_RUNS)
def test_charm_run_refuses_unusable_hint_on_the_terminal(charm_runs, label):
    file, _, why = CHARM_CASES[label]
    hints, trace_dir, proc = charm_runs[label]
    assert proc.returncode == 0, proc.stderr[-3000:]
    lines = _refusals(proc.stderr, file)
    assert len(lines) == 1 and why in lines[0], proc.stderr[-3000:]
    assert "RESULT ok" in proc.stdout and "combining messages" not in proc.stderr
    trace = open_trace(trace_dir)
    assert trace.complete and sorted(trace.metadata["pes_seen"]) == [0, 1]
    assert _problem(_whatif_refusal(trace_dir, hints), file) == _problem(lines[0], file)
    # the PE's refusal is the kind's one validation, as `refusals` gives it for this folder
    assert [_problem(ln, file) for ln in refusals(hints, "charm", program="ring", pes=2)] == [_problem(lines[0], file)]


@pytest.mark.parametrize("label", list(CHARM_CASES))
def test_charm_hint_value_refused_by_the_kind_and_whatif(charm_runs, tmp_path, label):
    """Each value: the one line a charm run prints for it (the consumers' validation, hints.kinds),
    and whatif refuses the file on the run's trace for the same reason."""
    file, _, why = CHARM_CASES[label]
    hints = _charm_hints(tmp_path / "h", label)
    lines = refusals(hints, "charm", program="ring", pes=2)
    assert len(lines) == 1 and lines[0].startswith(f"paradise: {file} refused: ") and why in lines[0], lines
    _, trace_dir, proc = charm_runs[CHARM_RUNS[0]]
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert _problem(_whatif_refusal(trace_dir, hints), file) == _problem(lines[0], file)


TORCH_CASES = {"infinity": (INF, "not Infinity"), "1e308": (1e308, "not 1e+308"),
               "1e13": (1e13, "at most 1048576, not 10000000000000.0"), "nan": (NAN, "not NaN"),
               "text": ("8", "not '8'")}


def test_torch_run_refuses_unusable_bucket_size_on_the_terminal(refused_bucket_run):
    """The real torchrun job (shared: tests/conftest.py) with a NaN bucket size; the line it prints is
    `refusals` of its hint folder, made before the run."""
    hints, trace_dir, proc = refused_bucket_run
    assert proc.returncode == 0, proc.stderr[-3000:]
    lines = _refusals(proc.stderr, "comm.json")
    assert len(lines) == 1 and "ddp.bucket_cap_mb" in lines[0] and TORCH_CASES["nan"][1] in lines[0], proc.stderr
    assert lines[0].endswith("DDP keeps its bucket size")
    assert lines == refusals(hints, "torch", program="plain_ddp", pes=2)
    trace = open_trace(trace_dir)
    assert trace.complete and sorted(trace.metadata["pes_seen"]) == [0, 1]
    assert _problem(_whatif_refusal(trace_dir, hints), "comm.json") == _problem(lines[0], "comm.json")


@pytest.mark.parametrize("label", list(TORCH_CASES))
def test_torch_bucket_size_refused_by_the_kind_and_whatif(refused_bucket_run, tmp_path, label):
    """Each value: the line `paradise trace torch` prints for it, and whatif's refusal on the run's trace."""
    cap, why = TORCH_CASES[label]
    hints = bucket_hint(tmp_path / "h", cap)
    lines = refusals(hints, "torch", program="plain_ddp", pes=2)
    assert len(lines) == 1 and "ddp.bucket_cap_mb" in lines[0] and why in lines[0], lines
    assert lines[0].endswith("DDP keeps its bucket size")
    _, trace_dir, proc = refused_bucket_run
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert _problem(_whatif_refusal(trace_dir, hints), "comm.json") == _problem(lines[0], "comm.json")
