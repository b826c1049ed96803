"""Threaded entry methods that wait on futures for replies to small messages they just sent.

Each of 4 elements runs `talk` as a coroutine: it sends K numbered `note` messages to its partner
on the other PE, then suspends on a future that the partner fulfils once it has all K. With message
combining, the notes must leave before the sender suspends or the run deadlocks; the partner
checks that they arrive in sending order. Prints `RESULT ok notes=N out_of_order=M`.
"""

from charm4py import Array, Chare, Future, Reducer, charm, coro

K = 20
ROUNDS = 3


class Talker(Chare):
    def __init__(self):
        self.got: list[int] = []
        self.waiter: Future | None = None
        self.late = 0

    def partner(self) -> int:
        return (self.thisIndex[0] + 2) % 4  # default block map on 2 PEs: 0,1 on PE 0; 2,3 on PE 1

    @coro
    def talk(self, done):
        for r in range(ROUNDS):
            f = Future()
            for k in range(K):
                self.thisProxy[self.partner()].note(r * K + k, f if k == K - 1 else None)
            assert f.get() == K  # suspends: the notes must already be on their way
        self.contribute(None, None, done)

    def note(self, n: int, reply) -> None:
        if self.got and n <= self.got[-1]:
            self.late += 1
        self.got.append(n)
        if reply is not None:
            reply.send(sum(1 for g in self.got if g // K == n // K))

    def total(self, done):
        self.contribute([len(self.got), self.late], Reducer.sum, done)


def main(args):
    arr = Array(Talker, 4)
    charm.awaitCreation(arr)
    done = Future()
    arr.talk(done)
    done.get()
    res = Future()
    arr.total(res)
    notes, late = res.get()
    print(f"RESULT {'ok' if notes == 4 * K * ROUNDS else 'FAILED'} notes={notes} out_of_order={late}")
    charm.exit()


if __name__ == "__main__":
    charm.start(main)
