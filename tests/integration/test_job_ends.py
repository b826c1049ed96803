"""Ending paradise ends the job it launched: after SIGKILL or SIGTERM of `paradise trace charm`
(charmrun and its PEs) or SIGKILL of `paradise trace torch` (torchrun and its ranks, each in a
session of its own), no process of the job survives. Checked by polling the job's pids."""

from __future__ import annotations

import signal
import subprocess

import pytest

from tests.conftest import ROOT, bin_path

psutil = pytest.importorskip("psutil")

END_S = 30
"""How long the job may take to notice (a PE notices charmrun's death within about 2 s here)."""


def _start_and_wait(args: list[str], ready: str, cwd) -> tuple[subprocess.Popen, list]:
    """Starts paradise, waits for the program's `ready` line, returns it and the job's processes."""
    proc = subprocess.Popen([bin_path("paradise"), *args], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True, cwd=cwd)
    seen = []
    for line in proc.stdout:
        seen.append(line)
        if ready in line:
            break
    else:
        proc.wait()
        pytest.fail(f"the job never printed {ready!r}: {''.join(seen)[-2000:]}{proc.stderr.read()[-2000:]}")
    job = psutil.Process(proc.pid).children(recursive=True)
    return proc, job


def _survivors(job: list) -> list:
    _, alive = psutil.wait_procs(job, timeout=END_S)
    return [p for p in alive if p.status() != psutil.STATUS_ZOMBIE]


def _stop(proc: subprocess.Popen, job: list, sig: int) -> tuple[list, str]:
    proc.send_signal(sig)
    left = _survivors(job)
    for p in left:  # never leave a stray job behind, even when the test fails
        p.kill()
    proc.wait(timeout=END_S)
    return left, proc.stderr.read()


def _charm(tmp_path) -> tuple[subprocess.Popen, list]:
    program = ROOT / "tests" / "charm_programs" / "hang.py"
    proc, job = _start_and_wait(["trace", "charm", "--pes", "2", "-o", str(tmp_path / "t"), str(program)],
                                "waiting forever", tmp_path)
    pes = [p for p in job if p.name() != "charmrun" and "paradise.boot.charm" in p.cmdline()]
    assert len(pes) == 2  # both PEs are in the job
    return proc, job


def test_sigkill_of_trace_charm_ends_charmrun_and_pes(tmp_path):
    proc, job = _charm(tmp_path)
    left, _ = _stop(proc, job, signal.SIGKILL)
    assert left == []


def test_sigterm_of_trace_charm_ends_the_job_and_says_so(tmp_path):
    proc, job = _charm(tmp_path)
    left, err = _stop(proc, job, signal.SIGTERM)
    assert left == []
    assert proc.returncode == 128 + signal.SIGTERM
    assert err.strip().splitlines()[-1].startswith("paradise: hang.py stopped (SIGTERM to paradise);")


def test_sigkill_of_trace_torch_ends_torchrun_and_ranks(tmp_path):
    pytest.importorskip("torch")
    script = ROOT / "examples" / "ddp_train.py"
    proc, job = _start_and_wait(["trace", "torch", "--nproc", "2", "-o", str(tmp_path / "t"), str(script),
                                 "--steps", "1000000", "--hidden", "32", "--layers", "1", "--log-every", "1"],
                                "step 1 loss", tmp_path)
    ranks = [p for p in job if "paradise.boot.torch" in p.cmdline() and "torch.distributed.run" not in p.cmdline()]
    assert len(ranks) == 2  # both ranks are in the job
    left, _ = _stop(proc, job, signal.SIGKILL)
    assert left == []
