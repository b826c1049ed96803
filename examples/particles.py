"""Particles moving between cells: many small point-to-point messages (one per particle that leaves its cell).

A periodic unit square is cut into GX x GY cells, one chare per cell. Every step, main broadcasts
`step(n)`; each cell moves its particles (x += v, wrapped), and every particle that left the cell
is sent to its new cell as one small message (`arrive`: id, position, velocity). Velocities are large
against the cell size, so particles land anywhere and about half the messages cross PEs. main waits for
quiescence between steps (all arrivals delivered), then starts the next one. Each message also carries
its sender PE and a per-(sender PE, receiver PE) sequence number; every receiver checks that these
arrive in order (a `RESULT ... out_of_order=` count), which is what message combining must preserve.

--check recomputes all steps serially and compares every particle's final position and cell exactly.

Run:  charmrun +p2 examples/particles.py [--grid 8 8] [--particles 4000] [--steps 10] [--check]
"""

from __future__ import annotations

import argparse
import time

from charm4py import Array, Chare, Reducer, charm

PROG = "particles.py"


def parse_args(argv: list[str]) -> argparse.Namespace:
    p = argparse.ArgumentParser(prog=PROG, description="Particles moving between cells (many small messages).")
    p.add_argument("--grid", nargs=2, type=int, default=[8, 8], metavar=("GX", "GY"), help="cells per side (default 8 8)")
    p.add_argument("--particles", type=int, default=4000, help="particles in all (default 4000)")
    p.add_argument("--steps", type=int, default=10, help="steps (default 10)")
    p.add_argument("--speed", type=float, default=0.37, help="largest speed, in domain widths per step (default 0.37)")
    p.add_argument("--seed", type=int, default=1, help="seed of the initial state (default 1)")
    p.add_argument("--check", action="store_true", help="verify the final state against a serial run")
    a = p.parse_args(argv)
    if min(a.grid) < 1 or a.particles < 1 or a.steps < 1:
        p.error("--grid, --particles and --steps must be >= 1")
    return a


def _lcg(state: int) -> tuple[int, float]:
    """A tiny deterministic generator (same numbers on every PE and in the serial check)."""
    state = (state * 6364136223846793005 + 1442695040888963407) % (1 << 64)
    return state, (state >> 11) / float(1 << 53)


def initial_particles(n: int, speed: float, seed: int) -> list[tuple[int, float, float, float, float]]:
    """(id, x, y, vx, vy) of every particle."""
    s, out = seed * 7919 + 1, []
    for pid in range(n):
        vals = []
        for _ in range(4):
            s, r = _lcg(s)
            vals.append(r)
        out.append((pid, vals[0], vals[1], (vals[2] * 2 - 1) * speed, (vals[3] * 2 - 1) * speed))
    return out


def cell_of(x: float, y: float, gx: int, gy: int) -> tuple[int, int]:
    return min(int(x * gx), gx - 1), min(int(y * gy), gy - 1)


def move(p: tuple, step: int) -> tuple:
    """One step of one particle: constant velocity, a small step-dependent kick, periodic walls."""
    pid, x, y, vx, vy = p
    kick = ((pid * 31 + step * 17) % 13 - 6) * 1e-3
    return pid, (x + vx + kick) % 1.0, (y + vy - kick) % 1.0, vx, vy


def serial(args: argparse.Namespace) -> dict[int, tuple]:
    gx, gy = args.grid
    parts = initial_particles(args.particles, args.speed, args.seed)
    for step in range(args.steps):
        parts = [move(p, step) for p in parts]
    return {p[0]: (*p, cell_of(p[1], p[2], gx, gy)) for p in parts}


class Cell(Chare):
    """One cell: owns the particles inside it; sends leavers to their new cells one message each."""

    sent_to: dict = {}
    """Per PE: destination cell -> messages sent to it from this PE (its sequence numbers)."""

    def __init__(self, grid: tuple[int, int]):
        self.gx, self.gy = grid
        self.parts: list[tuple] = []
        self.arrived: dict[int, list[tuple]] = {}  # step -> particles that moved here in that step
        self.seen: dict[int, int] = {}  # sender PE -> last sequence number received from it
        self.late = 0  # messages that arrived after a later one of the same stream

    def load(self, parts: list[tuple]) -> None:
        self.parts.extend(parts)

    def step(self, n: int) -> None:
        me, pe, sent = self.thisIndex, charm.myPe(), Cell.sent_to
        keep = []
        for p in sorted(self.parts + self.arrived.pop(n - 1, [])):
            q = move(p, n)
            c = cell_of(q[1], q[2], self.gx, self.gy)
            if c == me:
                keep.append(q)
                continue
            k = sent[c] = sent.get(c, 0) + 1
            self.thisProxy[c].arrive(pe, k, n, *q)
        self.parts = keep

    def arrive(self, src_pe: int, k: int, n: int, pid: int, x: float, y: float, vx: float, vy: float) -> None:
        if k <= self.seen.get(src_pe, 0):
            self.late += 1
        self.seen[src_pe] = k
        self.arrived.setdefault(n, []).append((pid, x, y, vx, vy))

    def final(self, target) -> None:
        parts = self.parts + [p for n in sorted(self.arrived) for p in self.arrived[n]]
        self.contribute([(*p, self.thisIndex) for p in sorted(parts)], Reducer.gather, target)

    def late_count(self, target) -> None:
        self.contribute(self.late, Reducer.sum, target)


def main(argv: list[str]) -> None:
    args = parse_args(argv[1:])
    gx, gy = args.grid
    buckets: dict[tuple[int, int], list] = {}
    for p in initial_particles(args.particles, args.speed, args.seed):
        buckets.setdefault(cell_of(p[1], p[2], gx, gy), []).append(p)
    cells = Array(Cell, (gx, gy), args=[(gx, gy)])
    charm.awaitCreation(cells)
    for c, parts in buckets.items():  # setup: one message per cell, before the timed steps
        cells[c].load(parts)
    charm.waitQD()
    t0, c0 = time.perf_counter(), time.process_time()
    for n in range(args.steps):
        cells.step(n)
        charm.waitQD()
    wall, cpu = time.perf_counter() - t0, time.process_time() - c0
    f = charm.Future()
    cells.final(f)
    rows = [r for part in f.get() for r in part]
    g = charm.Future()
    cells.late_count(g)
    late = g.get()
    ok = True
    if args.check:
        want = serial(args)
        got = {r[0]: (*r[:5], tuple(r[5])) for r in rows}
        ok = got == want
    print(f"RESULT program=particles particles={len(rows)} steps={args.steps} wall_s={wall:.3f} cpu0_s={cpu:.3f} "
          f"out_of_order={late} check={'ok' if ok else 'FAILED'}" + ("" if args.check else " (not checked)"))
    charm.exit(0 if ok and len(rows) == args.particles else 1)


if __name__ == "__main__":
    charm.start(main)
