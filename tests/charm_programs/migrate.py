"""Tiny program that migrates: 4 elements of `Mover#0` each move to the other PE once.

Structure: the default map puts [0],[1] on PE 0 and [2],[3] on PE 1 (2 PEs). main calls
`go(dest)` on each element with dest = 1 - current PE; the element calls migrate(dest) and
its `migrated()` runs on the new PE. Then each element works, calls AtSync (the array uses
AtSync), and its resumeFromSync contributes to a future: 2 LB steps. Prints `RESULT ok`.
"""

from charm4py import Array, Chare, Reducer, charm


class Mover(Chare):
    def __init__(self):
        self.moves = 0
        self.fut = None

    def where(self):
        return charm.myPe()

    def go(self, dest):
        self.migrate(dest)

    def migrated(self):
        self.moves += 1

    def work(self, fut):
        self.fut = fut
        sum(range(2000 * (self.thisIndex[0] + 1)))
        self.AtSync()

    def resumeFromSync(self):
        self.contribute(self.moves, Reducer.sum, self.fut)


def main(args):
    n = 4
    a = Array(Mover, n, useAtSync=True)
    charm.awaitCreation(a)
    before = [a[i].where(ret=True).get() for i in range(n)]
    for i in range(n):
        a[i].go((before[i] + 1) % charm.numPes())
    charm.waitQD()
    after = [a[i].where(ret=True).get() for i in range(n)]
    if charm.numPes() > 1:
        assert all(x != y for x, y in zip(before, after)), (before, after)
    for _ in range(2):
        f = charm.Future()
        a.work(f)
        moved = f.get()
    assert moved == (n if charm.numPes() > 1 else n), moved
    print("RESULT ok", before, after)
    charm.exit()


if __name__ == "__main__":
    charm.start(main)
