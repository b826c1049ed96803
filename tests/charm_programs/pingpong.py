"""Message-rate microbenchmark: 2 elements bounce one small message HOPS times.

Prints `RESULT ok hops=H elapsed_s=T cpu_s=C` where T (wall) and C (this process's CPU) cover only
the bouncing (used by bench/charm_overhead.py to price the tracer per message).
"""

import time

from charm4py import Array, Chare, charm


class Player(Chare):
    def __init__(self, hops, done):
        self.hops, self.done = hops, done

    def ball(self, n, payload):
        if n >= self.hops:
            self.done.send(n)
            return
        self.thisProxy[1 - self.thisIndex[0]].ball(n + 1, payload)


def main(args):
    hops = int(args[1]) if len(args) > 1 else 20000
    done = charm.Future()
    p = Array(Player, 2, args=[hops, done])
    charm.awaitCreation(p)
    t, c = time.perf_counter(), time.process_time()
    p[0].ball(0, b"x" * 64)
    assert done.get() == hops
    elapsed, cpu = time.perf_counter() - t, time.process_time() - c
    print(f"RESULT ok hops={hops} elapsed_s={elapsed:.4f} cpu_s={cpu:.4f}")
    charm.exit()


if __name__ == "__main__":
    charm.start(main)
