"""Pipelined wavefront over a 1-D chare array: a chain whose speed depends on message order.

Element i processes wave k after receiving block k from element i-1, forwards the result to
element i+1, and queues itself an independent local task for that wave (post-processing that
nothing waits for).  Element 0 produces the blocks; the last element's outputs are the result.

charm4py 1.1 delivers messages in FIFO order per PE (it has no message priorities).  With all
--waves blocks injected at once (--window 0, the default) each PE therefore works breadth-first:
every element on PE 0 handles every wave, and the local tasks spawned on the way, before wave 0
reaches the first element on PE 1, which idles meanwhile.  The critical path runs through
`block` messages that waited in the queue behind `local` tasks and later waves.  Giving `block`
a higher priority (or an earlier wave a higher priority) would let the waves pipeline.  The
application-level knob here is --window K: element 0 keeps at most K waves in flight (the last
element returns a token for each finished wave), which bounds the queue in front of wave k.

The result is checked exactly: every stage is an affine map mod a prime, which main composes
in closed form.

Run:  charmrun +p2 examples/wavefront.py [--elements 16] [--waves 8] [--window 0] [--seed 1]
"""

from __future__ import annotations

import argparse
import time

import numpy as np
from charm4py import Array, Chare, Reducer, charm

try:
    from tracers.charm import step
except ImportError:  # paradise not installed

    def step(n):
        pass


PROG = "wavefront.py"
MOD = 2_147_483_647  # 2**31 - 1: products of two residues fit in int64
MUL = 48_271  # multiplier of every stage's affine map (the MINSTD constant)


def parse_args(argv: list[str]) -> argparse.Namespace:
    p = argparse.ArgumentParser(prog=PROG, description="Chain pipeline over a 1-D chare array.")
    p.add_argument("--elements", type=int, default=16, help="pipeline stages (default 16)")
    p.add_argument("--waves", type=int, default=8, help="blocks sent down the chain (default 8)")
    p.add_argument("--block", type=int, default=100_000, help="int64 values per block (default 100000)")
    p.add_argument("--block-reps", type=int, default=15,
                   help="affine passes per stage on a block: the chain's cost (default 15)")
    p.add_argument("--local-reps", type=int, default=15,
                   help="affine passes of the local task per wave (default 15)")
    p.add_argument("--window", type=int, default=0,
                   help="max waves in flight; 0: inject all at once (default 0)")
    p.add_argument("--seed", type=int, default=1, help="seed of the input blocks (default 1)")
    a = p.parse_args(argv)
    if min(a.elements, a.waves, a.block, a.block_reps, a.local_reps) < 1 or a.window < 0:
        p.error("--elements, --waves, --block, --block-reps, --local-reps must be >= 1, --window >= 0")
    return a


def source_block(seed: int, k: int, size: int) -> np.ndarray:
    return np.random.default_rng([seed, k]).integers(0, MOD, size, dtype=np.int64)


def stage_const(i: int, k: int) -> int:
    """Additive constant of stage i on wave k (the local task uses the negated stage)."""
    return (i * 7919 + k * 104_729 + 1) % MOD


def apply(x: np.ndarray, c: int, reps: int) -> np.ndarray:
    """reps passes of x -> (MUL*x + c) mod MOD, vectorised."""
    for _ in range(reps):
        x = (x * MUL + c) % MOD
    return x


def affine_power(c: int, reps: int) -> tuple[int, int]:
    """(a, b) with apply(x, c, reps) == (a*x + b) mod MOD, in closed form."""
    a = pow(MUL, reps, MOD)
    # b = c * (MUL^reps - 1) / (MUL - 1), mod the prime MOD
    b = c * (a - 1) * pow(MUL - 1, -1, MOD) % MOD
    return a, b


class Stage(Chare):
    def __init__(self, cfg: dict, done):
        self.cfg = cfg
        self.n = cfg["elements"]
        self.done = done
        self.blocks_done = 0
        self.locals_done = 0
        self.chain_sum = 0  # last element: sum over waves of (sum of output block mod MOD)
        self.local_sum = 0
        self.injected = 0

    def start(self):
        """Element 0 injects the first waves (all of them when --window is 0)."""
        w = self.cfg["window"] or self.cfg["waves"]
        for _ in range(min(w, self.cfg["waves"])):
            self.inject()

    def inject(self):
        k = self.injected
        self.injected += 1
        self.thisProxy[0].block(k, source_block(self.cfg["seed"], k, self.cfg["block"]))

    def block(self, k: int, data: np.ndarray):
        """Wave k at this stage: compute, queue the local task, forward (critical path)."""
        step(k)
        i = self.thisIndex[0]
        out = apply(data, stage_const(i, k), self.cfg["block_reps"])
        self.thisProxy[i].local(k, int(out[0]))  # independent work, queued before the forward
        if i + 1 < self.n:
            self.thisProxy[i + 1].block(k, out)
        else:
            self.chain_sum += int(out.sum() % MOD)
            if self.cfg["window"]:
                self.thisProxy[0].wave_done(k)
        self.blocks_done += 1
        self.maybe_finish()

    def wave_done(self, k: int):
        if self.injected < self.cfg["waves"]:
            self.inject()

    def local(self, k: int, seed_value: int):
        """Post-processing of wave k that nothing waits for."""
        i = self.thisIndex[0]
        x = np.arange(self.cfg["block"], dtype=np.int64) + seed_value
        y = apply(x % MOD, stage_const(self.n + i, k), self.cfg["local_reps"])
        self.local_sum = (self.local_sum + int(y.sum() % MOD)) % MOD
        self.locals_done += 1
        self.maybe_finish()

    def maybe_finish(self):
        if self.blocks_done == self.locals_done == self.cfg["waves"]:
            self.contribute(np.array([self.chain_sum, self.local_sum], dtype=np.int64),
                            Reducer.sum, self.done)


def expected(a: argparse.Namespace) -> tuple[int, int]:
    """(chain_sum, local_sum) computed from the composed affine maps: one pass per wave."""
    chain, local = 0, 0
    idx = np.arange(a.block, dtype=np.int64)
    for k in range(a.waves):
        x = source_block(a.seed, k, a.block)
        for i in range(a.elements):
            ca, cb = affine_power(stage_const(i, k), a.block_reps)
            first = (ca * int(x[0]) + cb) % MOD  # the value element i hands its local task
            x = (x * ca + cb) % MOD
            la, lb = affine_power(stage_const(a.elements + i, k), a.local_reps)
            y = (((idx + first) % MOD) * la + lb) % MOD
            local = (local + int(y.sum() % MOD)) % MOD
        chain += int(x.sum() % MOD)
    return chain, local


def main(args):
    a = parse_args(args[1:])  # main's args: argv without the +options Charm++ consumed
    cfg = {"elements": a.elements, "waves": a.waves, "block": a.block, "block_reps": a.block_reps,
           "local_reps": a.local_reps, "window": a.window, "seed": a.seed}
    done = charm.Future()
    stages = Array(Stage, a.elements, args=[cfg, done])
    charm.awaitCreation(stages)
    t0 = time.perf_counter()
    stages[0].start()
    chain_sum, local_sum = (int(v) for v in done.get())
    elapsed = time.perf_counter() - t0
    want = expected(a)
    if (chain_sum, local_sum % MOD) != want:
        raise SystemExit(f"{PROG}: RESULT FAIL: (chain, local) checksums {(chain_sum, local_sum % MOD)}, "
                         f"expected {want}")
    print(f"RESULT ok program=wavefront elements={a.elements} waves={a.waves} window={a.window} "
          f"chain_sum={chain_sum} local_sum={local_sum % MOD} pes={charm.numPes()} "
          f"elapsed_s={elapsed:.3f}")
    charm.exit()


charm.start(main)
