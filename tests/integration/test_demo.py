"""`paradise demo` is a short real `paradise tune` of stencil2d (heavy region) under charmrun +p2:
it runs end to end, every verdict follows from the recorded times, and running the same tune
again resumes from tune.json without measuring anything again.

Structure only (a shared machine makes timings meaningless): whether a hint is kept depends on
the machine; that the decision follows the stated test does not."""

from __future__ import annotations

import json
import os
import subprocess

import pytest

from tests.conftest import bin_path
from tests.decoys import plant
from tests.integration.tune_checks import check_record

pytestmark = pytest.mark.timeout(660)

# 4x4 blocks: the default map puts rows 0-1 on PE 0, so the heavy 2x2 corner (x16) is all there
ARGS = "--grid 4 4 --block 128 --iters 30 --heavy 0:2,0:2 --heavy-factor 16 --check-blocks 1"


@pytest.fixture(scope="module")
def demo(tmp_path_factory):
    """The demo run from a working folder of decoy modules named like paradise's (tests/decoys.py)."""
    base = tmp_path_factory.mktemp("demo")
    out, work, tmp = base / "d", base / "work", base / "tmp"
    marker = plant(work)
    tmp.mkdir()
    proc = subprocess.run([bin_path("paradise"), "demo", "-o", str(out), "--args", ARGS, "--json"],
                          capture_output=True, text=True, timeout=600, cwd=work, env={**os.environ, "TMPDIR": str(tmp)})
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert not marker.exists(), marker.read_text()  # every step ran paradise's code, none of the folder's
    assert not list(tmp.iterdir())  # nothing left outside the chosen output
    return out, json.loads(proc.stdout), proc.stderr, work


def test_the_tune_ran_and_its_verdicts_follow_the_test(demo):
    out, data, err, _ = demo
    assert "iteration 1: traced run of the baseline" in err
    assert data["runs"]["it1/traced"]["outcome"]["ok"] and (out / "it1" / "trace").is_dir()
    assert data["stopped"]
    cands = check_record(out, data, "stencil2d", 2)
    proposed = data["iterations"][0]["proposed"]["candidates"]
    first = data["iterations"][0]["trials"]
    assert ({c["name"] for c in first[0]["candidates"]} == set(proposed)) if proposed else first == []
    for c in cands:  # every hinted run was predicted (replayed kinds) and the prediction recorded beside it
        assert len(c["runs"]) == len(c["times"])
        assert all(r["predicted_s"] is not None for r in c["runs"]) == (c["replay_ratio"] is not None)


def test_a_rerun_resumes_without_measuring_again(demo):
    out, data, _, work = demo
    cmd = json.loads((out / "tune.json").read_text())["command"]
    proc = subprocess.run([bin_path("paradise"), "tune", "charm", "--pes", "2", "-o", str(out), "--rounds", "4",
                           "--confidence", "0.95", "--iterations", "2", "--check", cmd["check"], "--time-regex",
                           cmd["time_regex"], "--json", cmd["program"], *cmd["args"]],
                          capture_output=True, text=True, timeout=300, cwd=work)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "resuming the tune" in proc.stderr
    again = json.loads(proc.stdout)
    assert again["runs"] == data["runs"] and again["best"] == data["best"]  # no run measured twice
    assert [e.get("chosen") for e in again["iterations"]] == [e.get("chosen") for e in data["iterations"]]
