"""paradise runs its own code, never the working folder's: `trace charm` and `trace torch`
started from a folder of decoy modules named like paradise's (tests/decoys.py), on a program
whose own folder holds a `hints/` of hint files (what `--hints-out hints/` makes), still run
paradise's tracer and hint consumer, and no decoy is ever imported (demo: tests/integration/test_demo.py)."""

from __future__ import annotations

import os
import shutil
import subprocess

import pytest

from tests.conftest import ROOT, bin_path
from tests.decoys import plant

TIMEOUT_S = 300


@pytest.fixture
def hostile(tmp_path):
    """(working folder with decoys, marker, program folder with hints/ beside the program)."""
    work = tmp_path / "work"
    marker = plant(work)
    app = tmp_path / "app"
    (app / "hints").mkdir(parents=True)
    return work, marker, app


def _paradise(cwd, *args) -> subprocess.CompletedProcess:
    return subprocess.run([bin_path("paradise"), *map(str, args)], capture_output=True, text=True,
                          timeout=TIMEOUT_S, cwd=cwd)


def test_trace_charm_runs_paradise_bootstrap_and_mapping_consumer(hostile):
    work, marker, app = hostile
    program = app / "pingpong.py"
    shutil.copy(ROOT / "tests" / "charm_programs" / "pingpong.py", program)
    os.mkfifo(app / "hints" / "mapping.json")  # paradise's consumer refuses it in one line, without blocking
    proc = _paradise(work, "trace", "charm", "--pes", "2", "--hints", app / "hints", "-o", work / "t", program, "200")
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert sorted(p.name for p in (work / "t").glob("pe-*.parquet")) == ["pe-00000.parquet", "pe-00001.parquet"]
    refused = [line for line in proc.stderr.splitlines() if "mapping" in line]
    assert refused == [f"paradise: mapping.json refused: {app / 'hints' / 'mapping.json'}: not a regular file; "
                       "using the default map"]
    assert not marker.exists(), marker.read_text()


def test_trace_torch_runs_paradise_bootstrap_and_checkpoint_manager(hostile):
    pytest.importorskip("torch")
    work, marker, app = hostile
    script = app / "ddp_train.py"
    shutil.copy(ROOT / "examples" / "ddp_train.py", script)
    # the script imports hints.checkpoint_manager while its own folder, holding hints/, is first on sys.path
    proc = _paradise(work, "trace", "torch", "--nproc", "2", "-o", work / "t", script,
                     "--steps", "3", "--hidden", "32", "--layers", "1", "--checkpoint-dir", app / "ckpt", "--checkpoint-every", "2",
                     "--checkpoint-mode", "periodic")
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert len(list((work / "t").glob("*.parquet"))) == 2
    assert (app / "ckpt" / "step-00000002" / "COMPLETE").is_file()  # paradise's CheckpointManager saved
    assert not marker.exists(), marker.read_text()
