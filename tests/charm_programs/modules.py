"""Prints which heavy modules this traced process imported (the tracer must not import pyarrow)."""

import sys

from charm4py import Chare, Group, charm


class Worker(Chare):
    def ping(self, fut):
        self.contribute(None, None, fut)


def main(args):
    g = Group(Worker)
    f = charm.Future()
    g.ping(f)
    f.get()
    heavy = [m for m in ("pyarrow", "pandas", "duckdb", "paradise.store") if m in sys.modules]
    print(f"HEAVY {heavy}", flush=True)
    charm.exit()


charm.start(main)
