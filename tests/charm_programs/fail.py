"""Tiny program that fails mid-run: the element on PE (pes-1) raises in step 2 of 4.

Structure: 4 elements of `Worker#0`; each step main broadcasts `work(i)` and waits for a
reduction. In step 2 the last element raises ValueError("planned failure in step 2"), so
the run ends by charm4py's abort with that message; steps 0 and 1 completed before.
"""

import time

from charm4py import Array, Chare, Reducer, charm

try:
    from tracers.charm import step as mark_step
except ImportError:
    def mark_step(n):
        pass


class Worker(Chare):
    def work(self, i, fut):
        mark_step(i)
        if i == 2 and self.thisIndex[0] == 3:
            raise ValueError("planned failure in step 2")
        self.contribute(i, Reducer.max, fut)


def main(args):
    a = Array(Worker, 4)
    charm.awaitCreation(a)
    for i in range(4):
        f = charm.Future()
        a.work(i, f)
        f.get()
        if i == 0:
            time.sleep(1.2)  # let a periodic flush happen before the failure
    print("RESULT not reached")
    charm.exit()


if __name__ == "__main__":
    charm.start(main)
