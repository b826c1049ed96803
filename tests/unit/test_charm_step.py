"""tracers.charm.step(n) with the native recorder is a compiled hook: the same identity changes
(step, explicit, packed row tails) and the same `step` rows as the Python record_step."""

from __future__ import annotations

import numpy as np
import pytest

import tracers.charm as api
from tracers.charm import hooks, identity
from tracers.charm._state import ST
from tracers.charm.rowbuf import LAYOUT, NULL, make_recorder


def _run(monkeypatch, native: bool) -> tuple[list, np.ndarray]:
    """Steps of one chare (ints, a big int, a numpy int) and one outside any chare: (its record, rows)."""
    monkeypatch.setenv("PARADISE_NATIVE_RECORDER", "1" if native else "0")
    rec, kind = make_recorder()
    if native and kind != "native":
        pytest.skip(f"native recorder not built ({kind})")
    monkeypatch.setattr(ST, "rec", rec)
    monkeypatch.setattr(ST, "cur", [None])
    monkeypatch.setattr(api, "_step_hook", None)
    monkeypatch.setattr(api, "step", api.step)
    monkeypatch.setattr(hooks, "clock", lambda: 10**12)  # the Python path's clock; the native one reads its own
    ST.pe = rec.pe = 0
    ST.origin = rec.origin = 0
    hooks.install_step_api()
    assert (type(api.step).__name__ == "Hook") == native
    ident = identity.record(5, 6, 7, 8, NULL, False, 0)
    ST.cur[0] = [0, 0, None, ident, 0, 3, NULL]
    for n in (7, 2**40, np.int64(9)):
        api.step(n)
    ST.cur[0] = None
    api.step(11)
    rows = np.frombuffer(rec.take(), dtype="<i8").reshape(-1, len(LAYOUT)).copy()
    rows[:, LAYOUT.index("t0")] = 0  # the two clocks differ
    return list(ident), rows


def test_native_step_matches_python(monkeypatch):
    py_ident, py_rows = _run(monkeypatch, native=False)
    c_ident, c_rows = _run(monkeypatch, native=True)
    assert c_ident == py_ident
    assert py_ident[identity.STEP] == 9 and py_ident[identity.EXPLICIT] is True
    assert np.array_equal(c_rows, py_rows)
    step = LAYOUT.index("step")
    assert py_rows[:, step].tolist() == [7, 2**40, 9, 11]
    assert (py_rows[:, LAYOUT.index("kind")] == hooks.K_STEP).all()
    obj = LAYOUT.index("obj")
    assert py_rows[:, obj].tolist() == [6, 6, 6, NULL]  # the last: outside any chare
