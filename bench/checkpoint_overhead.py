"""Checkpointing cost: steady-state step-time ratio of JIT vs no checkpointing, and time lost per failure.

    .venv/bin/python bench/checkpoint_overhead.py [--steps 2000] [--gpus 16384] [--max-interval 200]

Part 1 runs the examples/ddp_train.py model in one process (gloo, world size 1, one thread) in
rounds: each round runs a plain step, a step under CheckpointManager(mode="jit") (guard + maybe_save)
and a second plain step, in a fresh random order, so all arms see the same machine load and cache
state. It times each step in CPU time of the training thread, splits the rounds into blocks, and
reports the median over blocks of the ratio of the arms' median step times (goal: jit/none < 1.01),
with quartiles, next to the same ratio for plain against plain (the noise floor). All arms share
one model and optimizer (which carries the manager's two step hooks); the manager's own per-step
work, hooks included, is also timed alone in a tight loop, and one DCP save (the checkpoint stall C).
Part 2 runs real 2-rank torchrun jobs with an injected failure (--fail-mode exit) and without, for
JIT and for periodic checkpoints at the interval `plan()` gives for a job of --gpus GPUs (default
MTBF), and prints the wall time each failure cost (failed run minus clean run of the same mode).
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import random
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "examples"))


def _block_ratios(times: dict[str, list[int]], arm: str, base: str, block: int) -> list[float]:
    """Per block of `block` rounds, 1 + the median of the paired per-round differences arm - base
    (steps of one round run within milliseconds of each other) over base's median step time."""
    a, b = times[arm], times[base]
    return sorted(1 + statistics.median(x - y for x, y in zip(a[i:i + block], b[i:i + block], strict=True))
                  / statistics.median(b[i:i + block]) for i in range(0, len(a) - block + 1, block))


def steady_state(steps: int, block: int = 100) -> dict[str, Any]:
    import ddp_train as ex
    import torch
    import torch.distributed as dist
    import torch.distributed.checkpoint as dcp

    from hints.runtime.checkpoint import CheckpointManager

    args = ex.parse_args(["--threads", "1"])
    torch.set_num_threads(1)
    os.environ.setdefault("MASTER_ADDR", "127.0.0.1")
    os.environ.setdefault("MASTER_PORT", "29533")
    dist.init_process_group("gloo", rank=0, world_size=1, timeout=datetime.timedelta(seconds=60))
    model, opt = ex.build(args, 0, torch.device("cpu"))
    tmp = Path(tempfile.mkdtemp(prefix="ckbench-"))
    mgr = CheckpointManager(tmp, mode="jit", model=model, optimizer=opt, handle_sigterm=False)
    clock = time.thread_time_ns  # CPU time of the training thread: other processes' load barely moves it
    arms = ["none", "jit", "none_again"]
    times: dict[str, list[int]] = {k: [] for k in arms}
    order = random.Random(0)  # a private generator: the global ones belong to the training loop
    for _ in range(20):  # warm-up
        ex.train_step(model, opt, *ex.batch_for(args, 0, 0, torch.device("cpu")))
    step = 0
    for _ in range(steps):  # one round = each arm once, in a fresh random order
        order.shuffle(arms)
        for kind in arms:
            x, y = ex.batch_for(args, 0, step, torch.device("cpu"))
            if kind == "jit":
                t0 = clock()
                with mgr.guard(step):
                    ex.train_step(model, opt, x, y)
                mgr.maybe_save(step)
                t1 = clock()
            else:
                t0 = clock()
                ex.train_step(model, opt, x, y)
                t1 = clock()
            times[kind].append(t1 - t0)
            step += 1
    direct = []  # the manager's own work per step without the step: guard, both optimizer hooks, maybe_save
    for _ in range(5):
        t0 = clock()
        for j in range(2000):
            with mgr.guard(10**6 + j):
                mgr._opt_started()
                mgr._opt_done()
            mgr.maybe_save(10**6 + j)
        direct.append((clock() - t0) / 2000)
    saves = []
    for i in range(3):
        t0 = time.perf_counter()
        dcp.save(mgr._state(), checkpoint_id=str(tmp / f"save-{i}"))
        saves.append(time.perf_counter() - t0)
    dist.destroy_process_group()
    shutil.rmtree(tmp, ignore_errors=True)
    med = {k: statistics.median(v) / 1e9 for k, v in times.items()}
    jit, aa = _block_ratios(times, "jit", "none", block), _block_ratios(times, "none_again", "none", block)
    return {"step_none_s": med["none"], "step_jit_s": med["jit"], "ratio": statistics.median(jit),
            "ratio_q": (jit[len(jit) // 4], jit[(3 * len(jit)) // 4]), "aa_ratio": statistics.median(aa),
            "aa_q": (aa[len(aa) // 4], aa[(3 * len(aa)) // 4]), "blocks": len(jit), "block": block,
            "direct_s": statistics.median(direct) / 1e9, "checkpoint_s": statistics.median(saves),
            "steps_each": len(times["none"])}


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
    from hints.generators.checkpoint_policy import PolicyInputs, default_mtbf_s, plan

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
    p.add_argument("--steps", type=int, default=2000, help="steps per arm in part 1")
    p.add_argument("--gpus", type=int, default=16384, help="job size the periodic interval is planned for")
    p.add_argument("--max-interval", type=int, default=200, help="cap on the periodic interval (run time)")
    p.add_argument("--skip-failures", action="store_true", help="part 1 only")
    a = p.parse_args()
    load = " / ".join(f"{x:.2f}" for x in os.getloadavg())
    ss = steady_state(a.steps)
    print(f"load average at start: {load}; at the end of part 1: {' / '.join(f'{x:.2f}' for x in os.getloadavg())}")
    print(f"steady state, CPU time per step ({ss['steps_each']} steps per arm, interleaved in shuffled rounds): "
          f"no checkpointing {ss['step_none_s'] * 1e3:.3f} ms, jit {ss['step_jit_s'] * 1e3:.3f} ms")
    print(f"ratio jit/none {ss['ratio']:.4f} (goal < 1.01; median of {ss['blocks']} blocks of {ss['block']} rounds, "
          f"quartiles {ss['ratio_q'][0]:.4f}-{ss['ratio_q'][1]:.4f}); noise floor, plain against plain: "
          f"{ss['aa_ratio']:.4f} ({ss['aa_q'][0]:.4f}-{ss['aa_q'][1]:.4f})")
    print(f"manager work per step alone, warm (guard + RNG snapshot + optimizer hooks + maybe_save): "
          f"{ss['direct_s'] * 1e6:.2f} us = {ss['direct_s'] / ss['step_none_s']:.3%} of a step; "
          f"one DCP save {ss['checkpoint_s'] * 1e3:.0f} ms")
    if not a.skip_failures:
        failures(ss, a.gpus, a.max_interval)


if __name__ == "__main__":
    main()
