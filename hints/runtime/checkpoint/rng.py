"""RNG state of torch, numpy and Python's `random`: full capture/restore, and a cheap per-step snapshot.

The snapshot is taken at every training step (a failure before the optimizer step restores it), so
it reads numpy's Mersenne Twister state through the documented BitGenerator.ctypes view where its layout
checks out at start-up; Python's `random` state is taken with random.getstate() (portable: no reading
of CPython's object layout).
"""

from __future__ import annotations

import ctypes
import random
import sys
from typing import Any

import numpy as np
import torch


def rng_state() -> dict[str, Any]:
    st: dict[str, Any] = {"torch": torch.get_rng_state(), "numpy": np.random.get_state(), "python": random.getstate()}
    if torch.cuda.is_available():
        st["cuda"] = torch.cuda.get_rng_state_all()
    return st


_MT_BYTES = 624 * 4 + 4
"""sizeof(mt19937_state) in numpy (uint32_t key[624]; int pos)."""


def _numpy_random_view() -> Any:
    """A ctypes view of the raw MT19937 state of numpy's global RandomState (the one np.random.*
    functions are bound to), through the documented BitGenerator.ctypes, or None when it does not
    read exactly what get_state() reports."""
    try:
        view = (ctypes.c_char * _MT_BYTES).from_address(np.random.mtrand._rand._bit_generator.ctypes.state_address)
        _, key, pos = np.random.get_state()[:3]
        raw = view.raw
        ok = raw[:-4] == key.tobytes() and int.from_bytes(raw[-4:], sys.byteorder, signed=True) == pos
    except Exception:  # noqa: BLE001 - another numpy: take get_state() at every step
        return None
    return view if ok else None


class RngSnapshot:
    """The RNG states at a step's start, taken at every step (a failure before the optimizer step
    restores them), so it must touch little: right after a step's compute the caches are cold and
    every Python-level operation costs several times what it does in a tight loop (the plain
    torch.get_rng_state() + np.random.get_state() + random.getstate() cost 35 us in a tight loop and
    about 150 us a step in the example's training loop). So the torch CPU state is one 5 KB copy;
    Python's is random.getstate() (about 10 us: a 625-item tuple); numpy's legacy get_state() (25 us warm: a Python loop over 624 words) is
    re-read only when its raw state, readable through the documented BitGenerator.ctypes, changed
    or a cached gaussian was pending. A view whose layout does not check out at start-up falls back
    to the full call. take() returns a compact tuple; full() turns it into rng_state()'s dict."""

    def __init__(self) -> None:
        self.cuda = torch.cuda.is_available()
        self._torch = torch.default_generator.get_state
        self._np_view = _numpy_random_view()  # None: no fast path
        self._np_raw: bytes | None = None  # raw state when _np_state was read
        self._np_state: tuple | None = None

    def take(self) -> tuple:
        return (self._torch(), self._numpy(), random.getstate(),
                torch.cuda.get_rng_state_all() if self.cuda else None)

    @staticmethod
    def full(snap: tuple) -> dict[str, Any]:
        t, n, p, c = snap
        st = {"torch": t, "numpy": n, "python": p}
        if c is not None:
            st["cuda"] = c
        return st

    def _numpy(self) -> tuple:
        view = self._np_view
        if view is None:
            return np.random.get_state()
        raw = view.raw
        # unchanged raw state and no cached gaussian (consuming one leaves the raw state as it is)
        if raw == self._np_raw and self._np_state[3] == 0:  # type: ignore[index]
            return self._np_state  # type: ignore[return-value]
        state = np.random.get_state()
        self._np_state, self._np_raw = state, (raw if view.raw == raw else None)  # None: drawn meanwhile
        return state


def set_rng_state(st: dict[str, Any]) -> None:
    torch.set_rng_state(st["torch"])
    np.random.set_state(st["numpy"])
    random.setstate(st["python"])
    if "cuda" in st and torch.cuda.is_available():
        torch.cuda.set_rng_state_all(st["cuda"])


