"""Checkpointing cost: steady-state step-time ratio of JIT vs no checkpointing, and time lost per failure.

    .venv/bin/python bench/checkpoint_overhead.py [--steps 1000] [--gpus 16384] [--max-interval 200]

Part 1 runs the examples/ddp_train.py model in one process (gloo, world size 1), alternating plain
steps, steps under CheckpointManager(mode="jit") (guard + maybe_save), and plain steps again, one by
one, so all see the same machine load; it compares median step times (goal: ratio < 1.01), prints
the plain-vs-plain ratio as the noise floor, and times the manager's per-step work on its own and
one DCP save (the checkpoint stall C).
Part 2 runs real 2-rank torchrun jobs with an injected failure (--fail-mode exit) and without, for
JIT and for periodic checkpoints at the interval `plan()` gives for a job of --gpus GPUs (default
MTBF), and prints the wall time each failure cost (failed run minus clean run of the same mode).
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "examples"))


def steady_state(steps: int) -> dict[str, float]:
    import ddp_train as ex
    import torch
    import torch.distributed as dist
    import torch.distributed.checkpoint as dcp

    from hints.checkpoint_manager import CheckpointManager

    args = ex.parse_args(["--threads", "1"])
    torch.set_num_threads(1)
    os.environ.setdefault("MASTER_ADDR", "127.0.0.1")
    os.environ.setdefault("MASTER_PORT", "29533")
    dist.init_process_group("gloo", rank=0, world_size=1, timeout=datetime.timedelta(seconds=60))
    model, opt = ex.build(args, 0, torch.device("cpu"))
    tmp = Path(tempfile.mkdtemp(prefix="ckbench-"))
    mgr = CheckpointManager(tmp, mode="jit", model=model, optimizer=opt, handle_sigterm=False)
    times: dict[str, list[float]] = {"none": [], "jit": [], "none_again": []}
    order = ("none", "jit", "none_again")  # rotate every step: all arms see the same machine load
    for step in range(3 * steps):
        kind = order[step % 3]
        x, y = ex.batch_for(args, 0, step, torch.device("cpu"))
        t0 = time.perf_counter()
        if kind == "jit":
            with mgr.guard(step):
                ex.train_step(model, opt, x, y)
            mgr.maybe_save(step)
        else:
            ex.train_step(model, opt, x, y)
        times[kind].append(time.perf_counter() - t0)
    direct = []  # the manager's own work per step, without the step: guard entry/exit + maybe_save
    for i in range(2000):
        t0 = time.perf_counter()
        with mgr.guard(10**6 + i):
            pass
        mgr.maybe_save(10**6 + i)
        direct.append(time.perf_counter() - t0)
    saves = []
    for i in range(3):
        t0 = time.perf_counter()
        dcp.save(mgr._state(), checkpoint_id=str(tmp / f"save-{i}"))
        saves.append(time.perf_counter() - t0)
    dist.destroy_process_group()
    shutil.rmtree(tmp, ignore_errors=True)
    med = {k: statistics.median(v) for k, v in times.items()}
    return {"step_none_s": med["none"], "step_jit_s": med["jit"], "ratio": med["jit"] / med["none"],
            "aa_ratio": med["none_again"] / med["none"], "direct_s": statistics.median(direct),
            "checkpoint_s": statistics.median(saves), "steps_each": len(times["none"])}


def torchrun(ckpt: Path, steps: int, extra: list[str]) -> float:
    env = {**os.environ, "TORCH_DISABLE_SHARE_RDZV_TCP_STORE": "1", "OMP_NUM_THREADS": "1"}
    cmd = [str(Path(sys.executable).parent / "torchrun"), "--nproc_per_node", "2", "--max-restarts", "1",
           str(ROOT / "examples" / "ddp_train.py"), "--steps", str(steps), "--checkpoint-dir", str(ckpt),
           "--pg-timeout-s", "10", *extra]
    t0 = time.perf_counter()
    proc = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=1200)
    wall = time.perf_counter() - t0
    if proc.returncode != 0:
        raise SystemExit(f"torchrun failed ({proc.returncode}):\n{proc.stderr[-2000:]}")
    return wall


def events(ckpt: Path) -> list[dict]:
    return [json.loads(x) for x in (ckpt / "events.jsonl").read_text().splitlines() if x.strip()]


def restart_s(ev: list[dict]) -> float:
    """Failure detected -> restore finished, the first rank's view."""
    fail = min(e["t0_ns"] for e in ev if e["kind"] == "failure")
    restored = max(e["t1_ns"] for e in ev if e["kind"] == "restore")
    return (restored - fail) / 1e9


def failures(ss: dict[str, float], gpus: int, max_interval: int) -> None:
    from hints.checkpoint_policy import PolicyInputs, default_mtbf_s, plan

    base = Path(tempfile.mkdtemp(prefix="ckfail-"))
    try:
        probe = 40
        w_clean = torchrun(base / "j0", probe, ["--checkpoint-mode", "jit"])
        w_fail = torchrun(base / "j1", probe, ["--checkpoint-mode", "jit", "--fail-at-step", str(probe // 2)])
        r = restart_s(events(base / "j1"))
        policy = plan(PolicyInputs(iteration_s=ss["step_none_s"], checkpoint_s=ss["checkpoint_s"], restart_s=r,
                                   mtbf_s=default_mtbf_s(gpus), gpus=gpus, unrecoverable_fraction=1.0))
        k0 = policy.interval_steps
        k = min(k0, max_interval)
        steps = 2 * k + 2
        fail_at = k + k // 2  # half-way through the second interval: the mean loss of a random failure
        print(f"policy for {gpus} GPUs (MTBF {policy.mtbf_s / 3600:.3g} h, t_it {ss['step_none_s'] * 1e3:.1f} ms, "
              f"C {ss['checkpoint_s'] * 1e3:.0f} ms, R {r:.2f} s): periodic every {k0} steps"
              + (f", capped to {k} for run time" if k != k0 else ""))
        lost = {}
        for mode, extra in (("jit", ["--checkpoint-mode", "jit"]),
                            ("periodic", ["--checkpoint-mode", "periodic", "--checkpoint-every", str(k)])):
            clean = torchrun(base / f"{mode}-clean", steps, extra)
            failed = torchrun(base / f"{mode}-fail", steps, [*extra, "--fail-at-step", str(fail_at)])
            ev = events(base / f"{mode}-fail")
            rs = [e for e in ev if e["kind"] == "restore"]
            replayed = rs[0]["replayed_steps"] if rs else None
            lost[mode] = failed - clean
            print(f"{mode:>8}: {steps} steps, failure in step {fail_at}: clean {clean:.2f} s, with failure "
                  f"{failed:.2f} s, lost {lost[mode]:.2f} s (restart {restart_s(ev):.2f} s, replayed {replayed} steps)")
        print(f"lost per failure, periodic / jit: {lost['periodic'] / lost['jit']:.2f}x "
              f"(probe: jit {probe} steps, clean {w_clean:.2f} s, with failure {w_fail:.2f} s)")
        extra_s = (k0 / 2) * ss["step_none_s"]
        print(f"at the uncapped interval ({k0} steps) periodic would replay about {k0 // 2} more steps "
              f"({extra_s:.2f} s) per failure than JIT")
    finally:
        shutil.rmtree(base, ignore_errors=True)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--steps", type=int, default=1000, help="steps per mode in part 1")
    p.add_argument("--gpus", type=int, default=16384, help="job size the periodic interval is planned for")
    p.add_argument("--max-interval", type=int, default=200, help="cap on the periodic interval (run time)")
    p.add_argument("--skip-failures", action="store_true", help="part 1 only")
    a = p.parse_args()
    ss = steady_state(a.steps)
    print(f"steady state ({ss['steps_each']} steps each, median): no checkpointing {ss['step_none_s'] * 1e3:.2f} ms, "
          f"jit {ss['step_jit_s'] * 1e3:.2f} ms, ratio jit/none {ss['ratio']:.4f} (goal < 1.01); "
          f"noise floor: the same plain step against itself {ss['aa_ratio']:.4f}")
    print(f"manager work per step alone (guard + RNG snapshot + maybe_save): {ss['direct_s'] * 1e6:.1f} us = "
          f"{ss['direct_s'] / ss['step_none_s']:.4%} of a step; one DCP save {ss['checkpoint_s'] * 1e3:.0f} ms")
    if not a.skip_failures:
        failures(ss, a.gpus, a.max_interval)


if __name__ == "__main__":
    main()
