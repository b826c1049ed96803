"""Just-in-time and periodic checkpointing of examples/ddp_train.py under torchrun (gloo, CPU).

Each run is a real 2-rank torchrun job (10-40 s): a failure is injected in step FAIL_AT on the
first attempt only, torchrun --max-restarts 1 relaunches the job, the manager restores the newest
complete checkpoint, and the final parameters must hash like an uninterrupted run's.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import ROOT, bin_path
from tests.shared_runs import DDP_MODEL_ARGS, DDP_STEPS

pytest.importorskip("torch")

STEPS = DDP_STEPS  # the model and steps of shared_runs.DDP_STRAGGLER: its untraced run gives the hash
FAIL_AT = 6
SCRIPT = ROOT / "examples" / "ddp_train.py"
ENV = {**os.environ, "TORCH_DISABLE_SHARE_RDZV_TCP_STORE": "1", "OMP_NUM_THREADS": "1"}


def _torchrun(*args: str, restarts: int = 1, timeout: int = 300) -> subprocess.CompletedProcess:
    cmd = [bin_path("torchrun"), "--standalone", "--nproc_per_node", "2", "--max-restarts", str(restarts),
           str(SCRIPT), "--pg-timeout-s", "5", *DDP_MODEL_ARGS, *args]
    return subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, env=ENV, cwd=ROOT)


def _traced(out: Path, *args: str, timeout: int = 300) -> subprocess.CompletedProcess:
    cmd = [bin_path("paradise"), "trace", "torch", "--nproc", "2", "--max-restarts", "1", "-o", str(out),
           str(SCRIPT), "--pg-timeout-s", "5", *DDP_MODEL_ARGS, *args]
    return subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, env=ENV, cwd=ROOT)


def _sha(proc: subprocess.CompletedProcess) -> str:
    lines = [x for x in proc.stdout.splitlines() if x.startswith("param_sha256=")]
    assert lines, f"no param_sha256 line\nstdout:\n{proc.stdout}\nstderr:\n{proc.stderr[-3000:]}"
    return lines[-1].split("=", 1)[1]


def _events(ckpt: Path) -> list[dict]:
    return [json.loads(x) for x in (ckpt / "events.jsonl").read_text().splitlines() if x.strip()]


@pytest.fixture(scope="module")
def baseline_sha(untraced_ddp) -> str:
    """The hash of an uninterrupted, untraced run of the same model and steps (its straggler's sleep
    changes nothing it computes; the run is shared with test_torch_trace)."""
    assert untraced_ddp.returncode == 0, untraced_ddp.stderr[-3000:]
    return _sha(untraced_ddp)


def _trace_steps(trace: Path) -> tuple[set[int], set[int], set[int]]:
    """(steps completed before the restart, steps run after it, steps that failed before it)."""
    import duckdb

    rows = duckdb.sql(
        f"SELECT kind, step, t0, filename LIKE '%restart-%' AS after FROM read_parquet('{trace}/*.parquet', "
        "union_by_name = true, filename = true) WHERE kind IN ('step', 'failure')"
    ).fetchall()
    before = {s for k, s, _, a in rows if k == "step" and not a}
    after = {s for k, s, _, a in rows if k == "step" and a}
    failed = {s for k, s, _, a in rows if k == "failure" and not a and s is not None}
    return before, after, failed


@pytest.mark.timeout(600)
@pytest.mark.parametrize("mode", ["exit", "kill", "raise", "hang"])
def test_jit_recovers_bit_identical(tmp_path, baseline_sha, mode):
    ckpt, trace = tmp_path / "ckpt", tmp_path / "trace"
    proc = _traced(trace, "--steps", str(STEPS), "--checkpoint-dir", str(ckpt),
                   "--fail-at-step", str(FAIL_AT), "--fail-rank", "1", "--fail-mode", mode)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert _sha(proc) == baseline_sha
    ev = _events(ckpt)
    saves = [e for e in ev if e["kind"] == "checkpoint" and e["name"] == "jit"]
    # the survivor (rank 0) always saves; with `raise` the failing rank saves its own copy too
    assert {e["rank"] for e in saves} >= {0} and all(e["step"] == FAIL_AT for e in saves)
    restores = [e for e in ev if e["kind"] == "restore"]
    assert sorted(e["rank"] for e in restores) == [0, 1]
    # restored to the start of the failed step: exactly that one step runs again
    assert all(e["step"] == FAIL_AT and e["replayed_steps"] == 1 for e in restores)
    assert not list(ckpt.glob("step-*")), "jit mode must not save periodically"
    before, after, failed = _trace_steps(trace)
    assert before == set(range(FAIL_AT)) or mode == "hang" and before <= set(range(FAIL_AT))
    assert after == set(range(FAIL_AT, STEPS))
    assert not before & after  # no completed step ran twice
    replayed = after & (failed | {FAIL_AT})
    assert len(replayed) <= 1
    if mode == "exit":
        _check_analysis(trace, tmp_path / "hints")


def _check_analysis(trace: Path, hints: Path) -> None:
    """The resilience analysis of the traced run sees the failure, the restart and the JIT save."""
    proc = subprocess.run([bin_path("paradise"), "analyze", str(trace), "--json", "--hints-out", str(hints)],
                          capture_output=True, text=True, timeout=300, env=ENV, cwd=ROOT)
    assert proc.returncode == 0, proc.stderr[-3000:]
    res = json.loads(proc.stdout)["analyses"]["resilience"]
    inputs = {r["input"]: r for r in res["inputs"]}
    for key in ("iteration_s", "jit_save_s", "restart_s", "gpus", "mtbf_s"):
        assert inputs[key]["source"] == "trace", inputs[key]
    assert inputs["gpus"]["value"] == 2
    (incident,) = res["incidents"]
    assert incident["failed_step"] == FAIL_AT and incident["restored_step"] == FAIL_AT
    assert incident["replayed"] == 1
    assert (hints / "checkpoint.json").exists()


def _periodic_hint(directory: Path) -> int:
    """A checkpoint.json for mode periodic; returns its interval in steps."""
    from hints.format import make_hint, provenance, write_hint
    from hints.generators.checkpoint_policy import PolicyInputs, hint_payload, plan

    # C = 1 s, M = 8 s: tau = sqrt(16) * (1 + sqrt(1/16)/3 + (1/16)/9) - 1 = 3.36 s -> 3 steps of 1 s;
    # JIT covers nothing (fraction 1), so periodic wins.
    policy = plan(PolicyInputs(iteration_s=1, checkpoint_s=1, restart_s=1, mtbf_s=8, unrecoverable_fraction=1.0))
    assert policy.mode == "periodic" and policy.interval_steps == 3
    doc = make_hint("checkpoint", hint_payload(policy), justified_by=[],
                    provenance=provenance(trace_fingerprint="test", program="ddp_train", pes=2, source="test"))
    write_hint(directory, doc)
    return policy.interval_steps


@pytest.mark.timeout(600)
def test_periodic_interval_and_partial_checkpoint_never_loaded(tmp_path, baseline_sha):
    hints, ckpt = tmp_path / "hints", tmp_path / "ckpt"
    every = _periodic_hint(hints)
    proc = _torchrun("--steps", "7", "--checkpoint-dir", str(ckpt), "--hints", str(hints), restarts=0)
    assert proc.returncode == 0, proc.stderr[-3000:]
    saved = sorted({e["step"] for e in _events(ckpt) if e["kind"] == "checkpoint"})
    assert saved == [3, 6] == [k for k in range(1, 8) if k % every == 0]
    assert all((ckpt / f"step-{k:08d}" / "COMPLETE").exists() for k in saved)
    # a crash during later saves: newer directories without their completion marker
    partial = ckpt / "step-00000009"
    shutil.copytree(ckpt / "step-00000006", partial)
    (partial / "COMPLETE").unlink()
    for f in partial.glob("*.distcp"):
        f.write_bytes(b"torn")
    jit = ckpt / "jit-00000010-a0" / "rank-0"
    jit.mkdir(parents=True)
    (jit / ".metadata").write_bytes(b"torn")
    proc = _torchrun("--steps", str(STEPS), "--checkpoint-dir", str(ckpt), "--hints", str(hints), restarts=0)
    assert proc.returncode == 0, proc.stderr[-3000:]
    restores = [e for e in _events(ckpt) if e["kind"] == "restore"]
    assert [e["step"] for e in restores] == [6, 6]  # both ranks, from the newest complete one
    assert _sha(proc) == baseline_sha


def test_manager_skips_marker_less_directories(tmp_path):
    """Without torchrun: the newest complete checkpoint wins, partial ones are invisible."""
    import torch

    from hints.runtime.checkpoint import MARKER, CheckpointManager

    model = torch.nn.Linear(4, 2)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    mgr = CheckpointManager(tmp_path, mode="periodic", interval_steps=2, model=model, optimizer=opt,
                            handle_sigterm=False)
    for step in range(4):
        with mgr.guard(step):
            model(torch.ones(1, 4)).sum().backward()
            opt.step()
        mgr.maybe_save(step)
        if step == 1:
            at_2 = [p.detach().clone() for p in model.parameters()]
    assert mgr.latest()[:2] == (4, "periodic")
    (tmp_path / "step-00000006").mkdir()
    (tmp_path / "jit-00000008-a0" / "rank-0").mkdir(parents=True)
    assert mgr.latest()[:2] == (4, "periodic")
    (tmp_path / "step-00000004" / MARKER).unlink()
    assert mgr.latest()[:2] == (2, "periodic")
    fresh = torch.nn.Linear(4, 2)
    mgr2 = CheckpointManager(tmp_path, mode="periodic", interval_steps=2, model=fresh,
                             optimizer=torch.optim.SGD(fresh.parameters(), lr=0.1), handle_sigterm=False)
    assert mgr2.restore() == 2
    assert all(torch.equal(a, b) for a, b in zip(at_2, fresh.parameters(), strict=True))


if __name__ == "__main__":
    sys.exit(pytest.main([__file__, "-q"]))


_SIGTERM_LOOP = """
import sys, time, torch
from hints.runtime.checkpoint import CheckpointManager
model = torch.nn.Linear(8, 8)
opt = torch.optim.Adam(model.parameters())
mgr = CheckpointManager(sys.argv[1], mode="jit", model=model, optimizer=opt)
for step in range(100000):
    with mgr.guard(step):
        model(torch.ones(2, 8)).sum().backward()
        opt.step()
        opt.zero_grad()
        if step == 5:
            print("ready", flush=True)
        time.sleep(0.01)
    mgr.maybe_save(step)
"""


@pytest.mark.timeout(120)
def test_sigterm_while_healthy_saves_at_the_step_boundary(tmp_path):
    """Preemption: SIGTERM to a healthy rank -> JIT save of a consistent state, exit 17, not 143."""
    import signal

    from hints.runtime.checkpoint import JIT_EXIT_CODE, MARKER

    proc = subprocess.Popen([sys.executable, "-c", _SIGTERM_LOOP, str(tmp_path)], stdout=subprocess.PIPE,
                            text=True, cwd=ROOT, env=ENV)
    assert proc.stdout.readline().strip() == "ready"
    proc.send_signal(signal.SIGTERM)
    assert proc.wait(timeout=60) == JIT_EXIT_CODE
    (saved,) = [e for e in _events(tmp_path) if e["kind"] == "checkpoint"]
    (failure,) = [e for e in _events(tmp_path) if e["kind"] == "failure"]
    assert failure["name"] == "SIGTERM"
    # the step in progress finished (its optimizer step ran), so the save holds step + 1 steps
    assert saved["step"] == failure["step"] + 1
    assert (tmp_path / f"jit-{saved['step']:08d}-a0" / "rank-0" / MARKER).exists()
