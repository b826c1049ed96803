"""Sends a combiner packs two ways on one stream: immutable scalar args and a list the sender changes
right after the send (the message must hold the list as it was at the send).

4 elements, 2 per PE (default block map); each sends K numbered `take` messages to every element,
itself included, so there are same-PE and cross-PE streams. Every third message carries a list
(changed to [-1] after the send), the others a tuple (k, str(k)) and a float. Each receiver checks
per sender the order and the values. Prints `RESULT ok msgs=N out_of_order=M bad=B fast=F` (fast:
whether the array proxy's `take` is a combiner's method, i.e. the run packs unpickled batches).
"""

from charm4py import Array, Chare, Future, Reducer, charm

K = 90
ELEMS = 4


class Node(Chare):
    def __init__(self):
        self.last: dict[int, int] = {}
        self.late = self.bad = self.n = 0
        self.report_to = None  # the `total` future, held until every message addressed here arrived

    def go(self, done):
        me, buf = self.thisIndex[0], [0]
        for k in range(K):
            for dst in range(ELEMS):
                if k % 3 == 2:
                    buf[0] = k
                    self.thisProxy[dst].take(me, k, k / 2, buf)
                    buf[0] = -1  # after the send: must not reach the message
                else:
                    self.thisProxy[dst].take(me, k, k / 2, (k, str(k)))
        self.contribute(None, None, done)

    def take(self, src: int, k: int, half: float, payload) -> None:
        self.n += 1
        if k <= self.last.get(src, -1):
            self.late += 1
        self.last[src] = k
        want = [k] if k % 3 == 2 else (k, str(k))
        if payload != want or half != k / 2:
            self.bad += 1
        if self.report_to is not None and self.n == ELEMS * K:
            self.report()

    def total(self, done):
        """Reports once all ELEMS * K messages addressed here have arrived: a combiner sends a stream's
        last batch when the sending callback (`go`) ends, after its contribution to `done`, so this
        call can overtake it (a lost message leaves the run waiting: the test's timeout fails it)."""
        self.report_to = done
        if self.n >= ELEMS * K:
            self.report()

    def report(self):
        done, self.report_to = self.report_to, None
        self.contribute([self.n, self.late, self.bad], Reducer.sum, done)


def main(args):
    arr = Array(Node, ELEMS)
    charm.awaitCreation(arr)
    done = Future()
    arr.go(done)
    done.get()
    res = Future()
    arr.total(res)
    n, late, bad = res.get()
    fast = type(arr).take.__module__ == "hints.runtime.charm_unpickled"
    ok = n == ELEMS * ELEMS * K and late == 0 and bad == 0
    print(f"RESULT {'ok' if ok else 'FAILED'} msgs={n} out_of_order={late} bad={bad} fast={fast}")
    charm.exit()


if __name__ == "__main__":
    charm.start(main)
