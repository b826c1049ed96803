"""Tiny program with a known message structure, for the tracer tests.

N = ROWS x COLS = 6 elements of a 2-D array `Cell#0`. Each of ITERS steps: main broadcasts
`next_step` (1 send, N execs sharing its msg); every element marks step i and sends one
`token` to its ring successor (N point-to-point sends, with a numpy and a bytes argument,
sent by direct copy); tokens contribute to a reduction into a future. Then main broadcasts
`finish`; each element sends one `bump` to the group `Counter#0` member on PE (k % pes).
Prints `RESULT ok` when every check passed.
"""

import numpy as np
from charm4py import Array, Chare, Group, Reducer, charm

try:
    from tracers.charm import step as mark_step
except ImportError:  # runs without paradise too
    def mark_step(n):
        pass

ROWS, COLS = 2, 3
N = ROWS * COLS


class Counter(Chare):
    def __init__(self):
        self.count = 0

    def bump(self, k):
        self.count += 1


class Cell(Chare):
    def __init__(self):
        r, c = self.thisIndex
        self.k = r * COLS + c

    def next_step(self, i, fut):
        mark_step(i)
        s = (self.k + 1) % N
        self.thisProxy[s // COLS, s % COLS].token(i, np.arange(16, dtype=np.float64) * i, b"xyz" * (i + 1), fut)

    def token(self, i, data, raw, fut):
        assert data.shape == (16,) and len(raw) == 3 * (i + 1)
        self.contribute(i, Reducer.max, fut)

    def finish(self, counter, fut):
        counter[self.k % charm.numPes()].bump(self.k)
        self.contribute(1, Reducer.sum, fut)


def main(args):
    iters = int(args[1]) if len(args) > 1 else 3
    counter = Group(Counter)
    cells = Array(Cell, (ROWS, COLS))
    charm.awaitCreation(cells)
    for i in range(iters):
        f = charm.Future()
        cells.next_step(i, f)
        assert f.get() == i
    f = charm.Future()
    cells.finish(counter, f)
    assert f.get() == N
    print("RESULT ok")
    charm.exit()


if __name__ == "__main__":
    charm.start(main)
