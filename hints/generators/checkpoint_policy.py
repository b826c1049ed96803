"""Checkpoint policy math: optimal intervals, expected waste, and a Monte Carlo check of both.

Pure functions of a few numbers (seconds), so the analyzer, the `paradise policy` command and
tests share one implementation. Formulas and sources: docs/checkpointing.md and
shared/notes/checkpointing-flips-histsort.md. Symbols: C = checkpoint stall, R = restart cost,
M = job mean time between failures, t_it = one iteration, tau = compute time between checkpoints.

Waste is the fraction of wall time not spent on useful training: 1 - useful / E[wall].
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, field
from typing import Any

import numpy as np

HOURS = 3600.0
DAY_S = 86400.0

FAILURES_PER_1000_NODE_DAYS = 5.0
"""Default failure rate: about 5 per 1000 node-days (Kokolis et al., HPCA 2025 measured 2.34-6.50)."""
GPUS_PER_NODE = 8
"""Assumed GPUs per node when scaling the per-node rate to a job's GPU count (DGX/HGX nodes)."""
RESTART_S_DEFAULT = 300.0
"""Restart cost when a trace shows none: relaunch + rendezvous + load is several minutes at scale
(Gupta et al., EuroSys 2024 report recovery of "several minutes" for periodic checkpointing)."""
CHECKPOINT_S_DEFAULT = 60.0
"""Checkpoint stall when a trace shows none: an assumption (about a minute to persist a large model)."""
UNRECOVERABLE_FRACTION = 0.1
"""Share of failures that JIT cannot recover (no healthy replica of a shard survives, or a failure
during the JIT save): an assumption, not a measured value; the periodic safety net covers them."""
JOB_HOURS_DEFAULT = 24.0
"""Horizon used to price pure JIT: an unrecoverable failure loses on average half of it."""

MODES = ("periodic", "jit", "jit+periodic")


# ---------------------------------------------------------------- failure rate


def nodes_for(gpus: int, gpus_per_node: int = GPUS_PER_NODE) -> int:
    """Nodes a job of `gpus` GPUs occupies (at least one)."""
    return max(1, math.ceil(gpus / gpus_per_node))


def default_mtbf_s(gpus: int, *, failures_per_1000_node_days: float = FAILURES_PER_1000_NODE_DAYS,
                   gpus_per_node: int = GPUS_PER_NODE) -> float:
    """Job MTBF from the per-node default rate: one node fails every 1000/rate days, N nodes N times as often."""
    node_mtbf_s = 1000.0 / failures_per_1000_node_days * DAY_S
    return node_mtbf_s / nodes_for(gpus, gpus_per_node)


# ---------------------------------------------------------------- optimal intervals


def young_interval(c: float, m: float) -> float:
    """Young (1974): tau = sqrt(2 C M)."""
    return math.sqrt(2.0 * c * m)


def daly_first_order(c: float, m: float, r: float) -> float:
    """Daly (2006) first order: tau = sqrt(2 C (M + R))."""
    return math.sqrt(2.0 * c * (m + r))


def daly_higher_order(c: float, m: float) -> float:
    """Daly (2006) higher order, as used by LLNL SCR; reproduces Daly's 117, 57 and 9.1 min examples."""
    if c >= 2.0 * m:
        return m
    x = c / (2.0 * m)
    return math.sqrt(2.0 * c * m) * (1.0 + math.sqrt(x) / 3.0 + x / 9.0) - c


# ---------------------------------------------------------------- expected waste


def waste_periodic(tau: float, c: float, r: float, m: float, *, exact: bool = True) -> float:
    """Expected waste of checkpointing every tau seconds of compute.

    exact: Daly's complete model for exponential failures, E[wall]/work = M e^{R/M} (e^{(tau+C)/M} - 1) / tau
    (a failure during compute or save loses the segment; failures during restart restart it).
    Otherwise the first-order C/tau + (tau/2 + R)/M.
    """
    if not exact:
        return c / tau + (tau / 2.0 + r) / m
    ratio = m * math.exp(r / m) * math.expm1((tau + c) / m) / tau
    return 1.0 - 1.0 / ratio


def waste_jit(t_it: float, c_jit: float, r: float, m: float, *, overhead: float = 0.0,
              exact: bool = True) -> float:
    """Expected waste of just-in-time checkpointing when every failure is recoverable.

    A failure loses the iteration in progress (the replayed minibatch), then costs the JIT save and
    the restart. exact: iterations as segments with a recovery block C_jit + R, i.e.
    E[wall]/work = M e^{(C_jit+R)/M} (e^{t_it/M} - 1) / t_it; otherwise (t_it/2 + C_jit + R)/M.
    `overhead` is the steady-state slowdown (failure detection), a fraction.
    """
    if exact:
        ratio = m * math.exp((c_jit + r) / m) * math.expm1(t_it / m) / t_it
        useful = 1.0 / ratio
    else:
        useful = 1.0 - (t_it / 2.0 + c_jit + r) / m
    return 1.0 - useful * (1.0 - overhead)


def _combine(*wastes: float) -> float:
    """Waste of independent loss processes: useful fractions multiply."""
    useful = 1.0
    for w in wastes:
        useful *= 1.0 - min(max(w, 0.0), 1.0)
    return 1.0 - useful


# ---------------------------------------------------------------- the policy


@dataclass(frozen=True)
class PolicyInputs:
    """What a policy is computed from, in seconds, with where each number came from."""

    iteration_s: float
    checkpoint_s: float
    restart_s: float
    mtbf_s: float
    gpus: int = 1
    jit_save_s: float | None = None  # defaults to checkpoint_s
    jit_overhead: float = 0.0
    unrecoverable_fraction: float = UNRECOVERABLE_FRACTION
    job_s: float = JOB_HOURS_DEFAULT * HOURS
    sources: dict[str, str] = field(default_factory=dict)

    def validate(self) -> None:
        """Raises ValueError naming the first bad input (the CLI maps it to one line)."""
        for name in ("iteration_s", "checkpoint_s", "mtbf_s", "job_s"):
            v = getattr(self, name)
            if not (isinstance(v, (int, float)) and math.isfinite(v) and v > 0):
                raise ValueError(f"{name} must be a positive number, got {v!r}")
        for name in ("restart_s", "jit_overhead"):
            v = getattr(self, name)
            if not (math.isfinite(v) and v >= 0):
                raise ValueError(f"{name} must be >= 0, got {v!r}")
        if self.jit_save_s is not None and not (math.isfinite(self.jit_save_s) and self.jit_save_s >= 0):
            raise ValueError(f"jit_save_s must be >= 0, got {self.jit_save_s!r}")
        if not 0.0 <= self.unrecoverable_fraction <= 1.0:
            raise ValueError(f"unrecoverable_fraction must be within [0, 1], got {self.unrecoverable_fraction!r}")
        if self.gpus < 1:
            raise ValueError(f"gpus must be >= 1, got {self.gpus!r}")
        if self.jit_overhead >= 1.0:
            raise ValueError(f"jit_overhead must be below 1, got {self.jit_overhead!r}")


@dataclass(frozen=True)
class Policy:
    """A recommended checkpoint policy and the comparison behind it."""

    mode: str
    interval_s: float | None
    interval_steps: int | None
    mtbf_s: float
    expected_waste: dict[str, float]
    intervals: dict[str, float]
    safety_net_interval_s: float | None
    safety_net_interval_steps: int | None
    inputs: PolicyInputs

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d["inputs"] = asdict(self.inputs)
        return d


def _steps(tau: float, t_it: float) -> int:
    return max(1, round(tau / t_it))


def plan(inp: PolicyInputs) -> Policy:
    """Compares periodic, jit and jit+periodic and picks the least expected waste.

    Periodic: Daly higher-order interval, rounded to whole steps; waste from Daly's exact model.
    jit: recoverable failures (1 - q) cost an iteration + JIT save + restart; an unrecoverable one
    (q) loses on average half the job horizon. jit+periodic: the same, but a safety-net periodic
    checkpoint at Daly's interval for the unrecoverable failures' MTBF M/q bounds that loss.
    """
    inp.validate()
    t_it, c, r, m, q = inp.iteration_s, inp.checkpoint_s, inp.restart_s, inp.mtbf_s, inp.unrecoverable_fraction
    c_jit = c if inp.jit_save_s is None else inp.jit_save_s
    tau = daly_higher_order(c, m)
    steps = _steps(tau, t_it)
    tau_r = steps * t_it
    w_periodic = waste_periodic(tau_r, c, r, m)
    m_rec = m / (1.0 - q) if q < 1.0 else math.inf
    w_rec = 0.0 if math.isinf(m_rec) else waste_jit(t_it, c_jit, r, m_rec)
    w_rec = _combine(w_rec, inp.jit_overhead)
    w_jit = _combine(w_rec, min(1.0, q * (inp.job_s / 2.0 + r) / m))
    if q > 0.0:
        m_net = m / q
        tau_net = daly_higher_order(c, m_net)
        net_steps = _steps(tau_net, t_it)
        w_net = waste_periodic(net_steps * t_it, c, r, m_net)
    else:
        tau_net, net_steps, w_net = None, None, 0.0
    w_both = _combine(w_rec, w_net)
    waste = {"periodic": w_periodic, "jit": w_jit, "jit+periodic": w_both}
    mode = min(MODES, key=lambda k: (waste[k], MODES.index(k)))
    if mode == "periodic":
        interval_s, interval_steps = tau_r, steps
    elif mode == "jit+periodic":
        interval_s, interval_steps = net_steps * t_it, net_steps
    else:
        interval_s, interval_steps = None, None
    return Policy(
        mode=mode,
        interval_s=interval_s,
        interval_steps=interval_steps,
        mtbf_s=m,
        expected_waste=waste,
        intervals={
            "young_s": young_interval(c, m),
            "daly_first_order_s": daly_first_order(c, m, r),
            "daly_higher_order_s": tau,
        },
        safety_net_interval_s=None if net_steps is None else net_steps * t_it,
        safety_net_interval_steps=net_steps,
        inputs=inp,
    )


# ---------------------------------------------------------------- Monte Carlo


_WORK, _CKPT, _RECOVER = 0, 1, 2


def simulate(
    *,
    work_s: float,
    mtbf_s: float,
    restart_s: float,
    interval_s: float | None = None,
    checkpoint_s: float = 0.0,
    jit: bool = False,
    iteration_s: float = 1.0,
    jit_save_s: float = 0.0,
    unrecoverable_fraction: float = 0.0,
    trials: int = 2000,
    seed: int = 0,
    max_rounds: int = 1_000_000,
) -> dict[str, float]:
    """Simulates jobs of `work_s` useful seconds under exponential failures; returns mean waste.

    Vectorised over trials; each round advances every unfinished trial to its next event (end of a
    compute segment, end of a save, end of a recovery, or a failure at an absolute time drawn from
    exponential inter-failure times). Periodic checkpoints every `interval_s` of compute take
    `checkpoint_s`; without jit a failure rolls back to the last completed checkpoint and costs
    `restart_s` (a failure during recovery restarts it). With jit, a recoverable failure keeps every
    completed iteration and costs `jit_save_s + restart_s`; a share `unrecoverable_fraction` behaves
    as without jit. Returns {"waste", "waste_stderr", "failures_per_job", "wall_s"}.
    """
    rng = np.random.default_rng(seed)
    seg = interval_s if interval_s is not None else work_s
    t = np.zeros(trials)
    done = np.zeros(trials)  # completed compute (s)
    durable = np.zeros(trials)  # compute covered by a completed periodic checkpoint
    next_fail = rng.exponential(mtbf_s, trials)
    phase = np.full(trials, _WORK)
    rec_len = np.zeros(trials)
    failures = np.zeros(trials)
    eps = 1e-9 * max(1.0, work_s)
    for _ in range(max_rounds):
        active = done < work_s - eps
        if not active.any():
            break
        seg_end = np.minimum((np.floor(done / seg + eps / seg) + 1.0) * seg, work_s)
        length = np.where(phase == _WORK, seg_end - done, np.where(phase == _CKPT, checkpoint_s, rec_len))
        ok = active & (t + length <= next_fail)
        bad = active & ~ok
        # events that complete
        w = ok & (phase == _WORK)
        t = np.where(ok, t + length, t)
        done = np.where(w, seg_end, done)
        needs_ckpt = w & (interval_s is not None) & (seg_end < work_s - eps) & (checkpoint_s > 0)
        durable = np.where(w & ~needs_ckpt & (interval_s is not None), done, durable)
        ck = ok & (phase == _CKPT)
        durable = np.where(ck, done, durable)
        phase = np.where(needs_ckpt, _CKPT, np.where(ok, _WORK, phase))
        # failures
        if bad.any():
            elapsed = next_fail - t
            t = np.where(bad, next_fail, t)
            failures += bad
            recoverable = bad & jit & (rng.random(trials) >= unrecoverable_fraction)
            in_work = phase == _WORK
            kept = np.where(in_work, np.floor(elapsed / iteration_s + 1e-12) * iteration_s, 0.0)
            first = bad & (phase != _RECOVER)
            done = np.where(recoverable & first & in_work, done + kept, done)
            lost = bad & ~recoverable & first
            done = np.where(lost, durable, done)
            rec_len = np.where(first, np.where(recoverable, jit_save_s + restart_s, restart_s), rec_len)
            phase = np.where(bad, _RECOVER, phase)
            next_fail = np.where(bad, t + rng.exponential(mtbf_s, trials), next_fail)
    else:
        raise RuntimeError("simulation did not finish within max_rounds")
    waste = 1.0 - work_s / t
    return {
        "waste": float(1.0 - work_s / t.mean()),
        "waste_stderr": float(waste.std(ddof=1) / math.sqrt(trials)) if trials > 1 else 0.0,
        "failures_per_job": float(failures.mean()),
        "wall_s": float(t.mean()),
    }


def hint_payload(policy: Policy) -> dict[str, Any]:
    """The checkpoint.json fields (hints/schemas/checkpoint-1.json) of a policy, JSON-safe."""
    d = policy.to_dict()
    return {k: d[k] for k in ("mode", "interval_s", "interval_steps", "mtbf_s", "expected_waste", "intervals",
                              "safety_net_interval_s", "safety_net_interval_steps", "inputs")}
