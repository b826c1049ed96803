"""2-D Jacobi relaxation over a 2-D chare array, with a heavy region that unbalances the default map.

Each chare (i, j) owns a BxB block plus a one-cell ghost ring.  Every iteration it sends its
four edges to its (up to four, non-periodic) neighbours with point-to-point messages, waits
for their edges of the same iteration, and relaxes its block.  Chares inside the --heavy
region relax the block K times per iteration (the same update recomputed, so the numbers do
not change, only the cost): that makes the run imbalanced under charm4py's default block map,
which puts whole rows of chares on one PE.  Iterations are message-driven (no barrier, no array
broadcast), so charm4py's load balancer sees each chare's work as object load; with
--lb-period K the array is created with useAtSync=True and every chare calls AtSync() every K
iterations, so that `+balancer GreedyRefineLB` can move chares.

The result is checked against a serial numpy computation of the same iterations.

Run:  charmrun +p2 examples/stencil2d.py [--grid 8 8] [--block 96] [--iters 60] ...
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


PROG = "stencil2d.py"
TOP_BOUNDARY = 1.0  # value held on the global top edge; the other edges are held at 0
REL_TOL = 1e-9  # parallel and serial sweeps do identical float ops; any drift is a bug
CHECK_RANDOM_BLOCKS = 3  # blocks verified serially besides corners, centre and heavy box

# side of the *receiver's* ghost ring that a message fills
NORTH, SOUTH, WEST, EAST = 0, 1, 2, 3


def parse_args(argv: list[str]) -> argparse.Namespace:
    p = argparse.ArgumentParser(prog=PROG, description="2-D Jacobi stencil on a 2-D chare array.")
    p.add_argument("--grid", nargs=2, type=int, default=[8, 8], metavar=("GX", "GY"),
                   help="chares along each dimension (default 8 8)")
    p.add_argument("--block", type=int, default=256, help="cells per chare side (default 256)")
    p.add_argument("--iters", type=int, default=80, help="iterations (default 80)")
    p.add_argument("--heavy", default=None,
                   help='chare region "x0:x1,y0:y1" (half-open) doing K times the work, or "none" '
                        "(default: the top-left quarter, 0:GX/2,0:GY/2, which charm4py's default "
                        "map puts on PE 0 of 2)")
    p.add_argument("--heavy-factor", type=int, default=8, help="K (default 8)")
    p.add_argument("--lb-period", type=int, default=0,
                   help="call AtSync every K iterations (0: never; default 0)")
    p.add_argument("--seed", type=int, default=1, help="seed of the initial grid (default 1)")
    p.add_argument("--check-blocks", type=int, default=None, metavar="N",
                   help="verify only the first N of the chosen blocks against serial numpy (default: all)")
    p.add_argument("--show-placement", action="store_true",
                   help="print which PE holds each chare before the run")
    a = p.parse_args(argv)
    gx, gy = a.grid
    if gx < 1 or gy < 1:
        p.error(f"--grid must be positive, got {gx} {gy}")
    if a.block < 1 or a.iters < 1 or a.heavy_factor < 1 or a.lb_period < 0:
        p.error("--block, --iters and --heavy-factor must be >= 1 and --lb-period >= 0")
    if a.heavy is None:
        a.heavy = f"0:{gx // 2},0:{gy // 2}" if gx > 1 and gy > 1 else "none"
    a.heavy_box = parse_heavy(p, a.heavy, gx, gy)
    return a


def parse_heavy(p: argparse.ArgumentParser, text: str, gx: int, gy: int) -> tuple[int, int, int, int]:
    """'x0:x1,y0:y1' -> (x0, x1, y0, y1), half-open, inside the grid; 'none' -> empty box."""
    if text.strip().lower() in ("none", ""):
        return (0, 0, 0, 0)
    try:
        xs, ys = text.split(",")
        x0, x1 = (int(v) for v in xs.split(":"))
        y0, y1 = (int(v) for v in ys.split(":"))
    except ValueError:
        p.error(f'--heavy must look like "x0:x1,y0:y1", got {text!r}')
    if not (0 <= x0 < x1 <= gx and 0 <= y0 < y1 <= gy):
        p.error(f"--heavy {text!r} is not a non-empty region inside the {gx}x{gy} grid")
    return (x0, x1, y0, y1)


def is_heavy(box: tuple[int, int, int, int], i: int, j: int) -> bool:
    x0, x1, y0, y1 = box
    return x0 <= i < x1 and y0 <= j < y1


def initial_block(seed: int, i: int, j: int, b: int) -> np.ndarray:
    """The interior of chare (i, j) at iteration 0: depends only on (seed, i, j)."""
    return np.random.default_rng([seed, i, j]).random((b, b))


def relax(u: np.ndarray, out: np.ndarray | None = None) -> np.ndarray:
    """One Jacobi sweep of the interior of a ghost-padded array into `out` (no temporaries).

    The parallel and serial runs both use this, so they do identical float operations.
    """
    if out is None:
        out = np.empty((u.shape[0] - 2, u.shape[1] - 2))
    np.add(u[:-2, 1:-1], u[2:, 1:-1], out=out)
    np.add(out, u[1:-1, :-2], out=out)
    np.add(out, u[1:-1, 2:], out=out)
    np.multiply(out, 0.25, out=out)
    return out


class Block(Chare):
    """One BxB block of the grid; iteration n is driven by the four halo messages of n."""

    def __init__(self, cfg: dict):
        i, j = self.thisIndex
        gx, gy = cfg["grid"]
        b = cfg["block"]
        self.iters = cfg["iters"]
        self.lb_period = cfg["lb_period"]
        self.done = cfg["done"]
        self.reps = cfg["heavy_factor"] if is_heavy(cfg["heavy_box"], i, j) else 1
        self.u = np.zeros((b + 2, b + 2))
        self.u[1:-1, 1:-1] = initial_block(cfg["seed"], i, j, b)
        if i == 0:
            self.u[0, :] = TOP_BOUNDARY
        # (neighbour index, side of *its* ghost ring that our edge fills)
        self.nbrs = []
        if i > 0:
            self.nbrs.append(((i - 1, j), SOUTH))
        if i < gx - 1:
            self.nbrs.append(((i + 1, j), NORTH))
        if j > 0:
            self.nbrs.append(((i, j - 1), EAST))
        if j < gy - 1:
            self.nbrs.append(((i, j + 1), WEST))
        self.it = 0
        self.inbox: dict[int, dict[int, np.ndarray]] = {}
        # True until start() and from AtSync() until resumeFromSync(): neighbours that started
        # (or resumed) earlier may already send halos, which must wait until this chare has sent
        # its own for the iteration (else its halos of that iteration are never sent: deadlock)
        self.paused = True

    def where(self):
        return charm.myPe()

    def start(self):
        self.paused = False
        self.send_halos()
        self.advance()

    def send_halos(self):
        u = self.u
        for idx, side in self.nbrs:
            if side == SOUTH:  # our top row becomes the upper neighbour's bottom ghost row
                edge = u[1, 1:-1]
            elif side == NORTH:
                edge = u[-2, 1:-1]
            elif side == EAST:
                edge = u[1:-1, 1]
            else:
                edge = u[1:-1, -2]
            # copy: local sends pass the object itself, and u changes next iteration
            self.thisProxy[idx].halo(self.it, side, np.ascontiguousarray(edge).copy())

    def halo(self, it: int, side: int, edge: np.ndarray):
        self.inbox.setdefault(it, {})[side] = edge
        if it == self.it and not self.paused:
            self.advance()

    def advance(self):
        """Run every iteration whose halos are all here; stop at AtSync or the end."""
        while self.it < self.iters and len(self.inbox.get(self.it, ())) == len(self.nbrs):
            self.compute(self.inbox.pop(self.it, {}))
            self.it += 1
            if self.it == self.iters:
                self.finish()
                return
            if self.lb_period and self.it % self.lb_period == 0:
                self.paused = True
                self.AtSync()
                return
            self.send_halos()

    def compute(self, halos: dict[int, np.ndarray]):
        step(self.it)
        u = self.u
        for side, edge in halos.items():
            if side == NORTH:
                u[0, 1:-1] = edge
            elif side == SOUTH:
                u[-1, 1:-1] = edge
            elif side == WEST:
                u[1:-1, 0] = edge
            else:
                u[1:-1, -1] = edge
        new = np.empty((u.shape[0] - 2, u.shape[1] - 2))
        for _ in range(self.reps):  # heavy chares recompute the same sweep K times
            relax(u, new)
        u[1:-1, 1:-1] = new

    def resumeFromSync(self):
        self.paused = False
        self.send_halos()
        self.advance()

    def finish(self):
        inner = self.u[1:-1, 1:-1]
        row = (self.thisIndex, charm.myPe(), self.reps, float(inner.min()), float(inner.max()))
        self.contribute(row, Reducer.gather, self.done)

    def block(self):
        return self.u[1:-1, 1:-1].copy()


def check_blocks(a: argparse.Namespace) -> list[tuple[int, int]]:
    """Blocks to verify: corners, centre, the heavy box's corner, and a few seeded picks."""
    gx, gy = a.grid
    picks = {(0, 0), (0, gy - 1), (gx - 1, 0), (gx - 1, gy - 1), (gx // 2, gy // 2)}
    x0, x1, y0, y1 = a.heavy_box
    if x1 > x0:
        picks.add((x1 - 1, y1 - 1))
    rng = np.random.default_rng(a.seed)
    picks.update((int(rng.integers(gx)), int(rng.integers(gy))) for _ in range(CHECK_RANDOM_BLOCKS))
    return sorted(picks)[: a.check_blocks] if a.check_blocks else sorted(picks)


def serial_block(a: argparse.Namespace, i: int, j: int) -> np.ndarray:
    """Block (i, j) after --iters sweeps, computed serially on its domain of dependence.

    A cell after n sweeps depends only on cells within n of it, so a window of the block grown
    by iters+1 cells (clipped at the global edge, where the boundary is exact) gives the exact
    block at a fraction of the cost of the whole grid.
    """
    gx, gy = a.grid
    b, n = a.block, a.iters
    rows = (max(0, i * b - n - 1), min(gx * b, (i + 1) * b + n + 1))  # global interior cells
    cols = (max(0, j * b - n - 1), min(gy * b, (j + 1) * b + n + 1))
    w = np.zeros((rows[1] - rows[0] + 2, cols[1] - cols[0] + 2))
    if rows[0] == 0:
        w[0, :] = TOP_BOUNDARY
    for bi in range(rows[0] // b, (rows[1] - 1) // b + 1):
        for bj in range(cols[0] // b, (cols[1] - 1) // b + 1):
            blk = initial_block(a.seed, bi, bj, b)
            r0, r1 = max(rows[0], bi * b), min(rows[1], (bi + 1) * b)
            c0, c1 = max(cols[0], bj * b), min(cols[1], (bj + 1) * b)
            w[1 + r0 - rows[0]:1 + r1 - rows[0], 1 + c0 - cols[0]:1 + c1 - cols[0]] = \
                blk[r0 - bi * b:r1 - bi * b, c0 - bj * b:c1 - bj * b]
    new = np.empty((w.shape[0] - 2, w.shape[1] - 2))
    for _ in range(n):
        w[1:-1, 1:-1] = relax(w, new)
    r, c = 1 + i * b - rows[0], 1 + j * b - cols[0]
    return w[r:r + b, c:c + b]


def work_ratio(pe_units: dict[int, int], npes: int) -> float:
    """max/mean of per-PE work units (a chare's units = its sweeps per iteration)."""
    loads = [pe_units.get(pe, 0) for pe in range(npes)]
    return max(loads) / (sum(loads) / npes)


def show_placement(arr, a: argparse.Namespace) -> None:
    gx, gy = a.grid
    pes = {(i, j): arr[i, j].where(ret=True) for i in range(gx) for j in range(gy)}
    units: dict[int, int] = {}
    print(f"placement (PE of chare (i, j); * = heavy x{a.heavy_factor}):")
    for i in range(gx):
        cells = []
        for j in range(gy):
            pe = pes[(i, j)].get()
            heavy = is_heavy(a.heavy_box, i, j)
            units[pe] = units.get(pe, 0) + (a.heavy_factor if heavy else 1)
            cells.append(f"{pe}{'*' if heavy else ' '}")
        print("  " + " ".join(cells))
    print(f"work units per PE: {dict(sorted(units.items()))}  "
          f"max/mean={work_ratio(units, charm.numPes()):.2f}")


def main(args):
    a = parse_args(args[1:])  # main's args: argv without the +options Charm++ consumed
    gx, gy = a.grid
    done = charm.Future()
    cfg = {"grid": (gx, gy), "block": a.block, "iters": a.iters, "heavy_box": a.heavy_box,
           "heavy_factor": a.heavy_factor, "lb_period": a.lb_period, "seed": a.seed, "done": done}
    arr = Array(Block, (gx, gy), args=[cfg], useAtSync=a.lb_period > 0)
    charm.awaitCreation(arr)
    if a.show_placement:
        show_placement(arr, a)
    t0, c0 = time.perf_counter(), time.process_time()
    for i in range(gx):
        for j in range(gy):
            arr[i, j].start()
    rows = done.get()
    elapsed, cpu = time.perf_counter() - t0, time.process_time() - c0  # cpu: this process (PE 0), all threads

    units: dict[int, int] = {}
    lo, hi = np.inf, -np.inf
    for _idx, pe, reps, bmin, bmax in rows:
        units[pe] = units.get(pe, 0) + reps
        lo, hi = min(lo, bmin), max(hi, bmax)
    if len(rows) != gx * gy or lo < 0.0 or hi > 1.0:  # maximum principle: data and edges in [0, 1]
        raise SystemExit(f"{PROG}: RESULT FAIL: {len(rows)} of {gx * gy} blocks finished, "
                         f"values in [{lo}, {hi}] (must stay in [0, 1])")
    picks = check_blocks(a)
    got = {idx: arr[idx].block(ret=True) for idx in picks}
    worst = 0.0
    for idx in picks:
        want = serial_block(a, *idx)
        worst = max(worst, float(np.max(np.abs(got[idx].get() - want))))
    if worst > REL_TOL:
        raise SystemExit(f"{PROG}: RESULT FAIL: blocks {picks} differ from serial numpy by up to "
                         f"{worst:.3g} (tolerance {REL_TOL})")
    x0, x1, y0, y1 = a.heavy_box
    heavy = f"{x0}:{x1},{y0}:{y1}" if x1 > x0 else "none"
    print(f"RESULT ok program=stencil2d grid={gx}x{gy} block={a.block} iters={a.iters} "
          f"heavy={heavy} heavy_factor={a.heavy_factor} lb_period={a.lb_period} "
          f"pes={charm.numPes()} final_work_ratio={work_ratio(units, charm.numPes()):.2f} "
          f"checked_blocks={len(picks)} max_err={worst:.1e} elapsed_s={elapsed:.3f} cpu_s={cpu:.3f}")
    charm.exit()


charm.start(main)
