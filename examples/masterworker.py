"""Master-worker with dynamic self-scheduling: a star of point-to-point messages.

A Master (a one-element chare array on PE 0) owns a seeded list of tasks of varied cost
(lognormal). It hands --prefetch tasks to each element of a Worker array, and every time a
worker returns a result it sends that worker the next task, until all are done.  All traffic
goes master -> worker -> master (a star centred on the master).  A task (t, m, q) computes
sum_{k < m} (k mod q) with numpy, repeated `reps` times; the master checks every result
against the closed form and the total against the sum of the closed forms.

Run:  charmrun +p2 examples/masterworker.py [--workers 8] [--tasks 200] [--seed 1]
"""

from __future__ import annotations

import argparse
import time

import numpy as np
from charm4py import Array, Chare, charm

PROG = "masterworker.py"
CHUNK = 1 << 16  # vector length of one unit of task work (one numpy pass)
COST_SIGMA = 1.0  # lognormal sigma of task costs: a few tasks are 5-10x the median


def parse_args(argv: list[str]) -> argparse.Namespace:
    p = argparse.ArgumentParser(prog=PROG, description="Master-worker task farm on a chare array.")
    p.add_argument("--workers", type=int, default=8, help="worker chares (default 8)")
    p.add_argument("--tasks", type=int, default=200, help="number of tasks (default 200)")
    p.add_argument("--mean-units", type=float, default=15.0,
                   help=f"median task cost in units of {CHUNK} numpy elements (default 15)")
    p.add_argument("--prefetch", type=int, default=1,
                   help="tasks outstanding per worker (default 1)")
    p.add_argument("--seed", type=int, default=1, help="seed of the task costs (default 1)")
    a = p.parse_args(argv)
    if a.workers < 1 or a.tasks < 1 or a.prefetch < 1 or a.mean_units <= 0:
        p.error("--workers, --tasks and --prefetch must be >= 1 and --mean-units > 0")
    return a


def make_tasks(seed: int, count: int, mean_units: float) -> list[tuple[int, int, int]]:
    """(task id, m, q): work is proportional to m; the answer has a closed form."""
    rng = np.random.default_rng(seed)
    units = np.maximum(1, np.rint(rng.lognormal(np.log(mean_units), COST_SIGMA, count))).astype(int)
    qs = rng.integers(2, 1000, count)
    return [(t, int(u) * CHUNK + int(q), int(q)) for t, (u, q) in enumerate(zip(units, qs))]


def expected(m: int, q: int) -> int:
    """sum_{k < m} (k mod q) in closed form."""
    full, rest = divmod(m, q)
    return full * q * (q - 1) // 2 + rest * (rest - 1) // 2


def compute(m: int, q: int) -> int:
    """The same sum, the slow way: one numpy pass per CHUNK keys."""
    total = 0
    for start in range(0, m, CHUNK):
        k = np.arange(start, min(start + CHUNK, m), dtype=np.int64)
        total += int(np.sum(k % q))
    return total


class Worker(Chare):
    def __init__(self, master):
        self.master = master

    def task(self, tid: int, m: int, q: int):
        self.master.result(self.thisIndex[0], tid, compute(m, q))


class Master(Chare):
    """Hands out tasks one at a time to whichever worker reports back (self-scheduling)."""

    def __init__(self, tasks: list, done):
        self.tasks = tasks
        self.done = done
        self.next = 0
        self.results: dict[int, int] = {}
        self.per_worker: dict[int, int] = {}

    def run(self, workers, nworkers: int, prefetch: int):
        self.workers = workers
        for _ in range(prefetch):
            for w in range(nworkers):
                self.hand_out(w)

    def hand_out(self, w: int):
        if self.next < len(self.tasks):
            tid, m, q = self.tasks[self.next]
            self.next += 1
            self.workers[w].task(tid, m, q)

    def result(self, w: int, tid: int, value: int):
        self.results[tid] = value
        self.per_worker[w] = self.per_worker.get(w, 0) + 1
        self.hand_out(w)
        if len(self.results) == len(self.tasks):
            self.done.send((self.results, self.per_worker))


def main(args):
    a = parse_args(args[1:])  # main's args: argv without the +options Charm++ consumed
    tasks = make_tasks(a.seed, a.tasks, a.mean_units)
    done = charm.Future()
    master = Array(Master, 1, args=[tasks, done])
    workers = Array(Worker, a.workers, args=[master[0]])
    charm.awaitCreation(master, workers)
    t0 = time.perf_counter()
    master[0].run(workers, a.workers, a.prefetch)
    results, per_worker = done.get()
    elapsed = time.perf_counter() - t0
    wrong = [tid for tid, m, q in tasks if results.get(tid) != expected(m, q)]
    total = sum(results.values())
    if wrong or total != sum(expected(m, q) for _, m, q in tasks):
        raise SystemExit(f"{PROG}: RESULT FAIL: {len(wrong)} wrong task results (first: {wrong[:5]})")
    counts = [per_worker.get(w, 0) for w in range(a.workers)]
    units = sum((m - q) // CHUNK for _, m, q in tasks)
    print(f"RESULT ok program=masterworker workers={a.workers} tasks={a.tasks} work_units={units} "
          f"tasks_per_worker_min={min(counts)} tasks_per_worker_max={max(counts)} "
          f"checksum={total} pes={charm.numPes()} elapsed_s={elapsed:.3f}")
    charm.exit()


charm.start(main)
