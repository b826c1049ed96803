"""The JIT manager's per-step RNG snapshot equals the full RNG state at every step start, also when
it reuses numpy's state (unchanged raw MT19937 state) across steps."""

from __future__ import annotations

import random

import pytest

np = pytest.importorskip("numpy")
torch = pytest.importorskip("torch")

from hints.runtime.checkpoint.rng import RngSnapshot, rng_state  # noqa: E402


def _same(a: dict, b: dict) -> bool:
    na, nb = a["numpy"], b["numpy"]
    return (torch.equal(a["torch"], b["torch"]) and a["python"] == b["python"] and na[0] == nb[0]
            and np.array_equal(na[1], nb[1]) and tuple(na[2:]) == tuple(nb[2:]))


STEPS = [
    lambda: None,  # no draws: numpy's state is reused
    lambda: np.random.normal(),  # draws two words, caches a gaussian
    lambda: np.random.normal(),  # consumes the cached gaussian: raw state unchanged, state changed
    lambda: None,
    lambda: np.random.normal(size=3),
    lambda: np.random.rand(700),  # wraps the 624-word key
    lambda: (random.random(), torch.rand(2)),
    lambda: np.random.seed(7),
    lambda: None,
    lambda: np.random.set_state(("MT19937", np.arange(624, dtype=np.uint32), 5, 1, 0.25)),
    lambda: None,
    lambda: np.random.standard_normal(),
    lambda: None,
    lambda: random.gauss(0, 1),  # Python's cached gaussian, drawn then consumed
    lambda: random.gauss(0, 1),
    lambda: random.seed(5),
    lambda: random.getrandbits(20000),
    lambda: None,
]


def test_snapshot_matches_the_full_state_at_every_step_start():
    snap = RngSnapshot()
    np.random.seed(0)
    for i, step in enumerate(STEPS):
        assert _same(snap.full(snap.take()), rng_state()), f"step {i}"
        assert snap._np_view is not None  # numpy's fast path is in use
        step()


def test_restoring_the_snapshot_replays_the_same_draws():
    snap = RngSnapshot()
    np.random.seed(1)
    np.random.normal()  # a cached gaussian is pending
    snap.take()
    st = snap.full(snap.take())  # reused numpy state
    first = (np.random.normal(size=5).tolist(), random.random(), torch.rand(3).tolist())
    torch.set_rng_state(st["torch"])
    np.random.set_state(st["numpy"])
    random.setstate(st["python"])
    assert (np.random.normal(size=5).tolist(), random.random(), torch.rand(3).tolist()) == first
