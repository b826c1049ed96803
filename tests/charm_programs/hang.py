"""Tiny program that never ends: after 2 steps main waits on a future nobody sends to.

Used with `paradise trace charm --timeout`: the run is killed, and the part files flushed
every second while the PEs sat in the scheduler must still be readable.
"""

from charm4py import Array, Chare, Reducer, charm

try:
    from tracers.charm import step as mark_step
except ImportError:
    def mark_step(n):
        pass


class Sleeper(Chare):
    def work(self, i, fut):
        mark_step(i)
        self.contribute(i, Reducer.max, fut)


def main(args):
    a = Array(Sleeper, 4)
    charm.awaitCreation(a)
    for i in range(2):
        f = charm.Future()
        a.work(i, f)
        f.get()
    print("waiting forever", flush=True)
    charm.Future().get()


if __name__ == "__main__":
    charm.start(main)
