"""bench/hta_parity.py scores strictly: within 1 % relative, or within the absolute slack of a
unit whose figures both tools round; NaN and one-sided figures never agree."""

from __future__ import annotations

import importlib.util
import math

import pytest

from tests.conftest import ROOT


@pytest.fixture(scope="module")
def parity():
    spec = importlib.util.spec_from_file_location("hta_parity", ROOT / "bench" / "hta_parity.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_relative_tolerance_is_one_percent(parity):
    assert parity.agrees(100.0, 101.0, 0.0)[0] and not parity.agrees(100.0, 101.5, 0.0)[0]
    assert not parity.agrees(10.0, 10.2, 0.0)[0]  # 2 %: no absolute slack without a rounded unit


def test_slack_only_where_the_unit_states_it(parity):
    slack = {a: s for a, (_, s) in parity.UNITS.items()}
    assert slack["queue"] == slack["launches"] == slack["critical_path"] == 0.0
    assert math.isclose(slack["kernels"], (0.1 + 0.01) / 2) and math.isclose(slack["temporal"], 0.01)
    assert parity.agrees(0.2, 0.23, slack["kernels"])[0]  # HTA prints 0.1-point steps
    assert not parity.agrees(0.2, 0.23, slack["queue"])[0]
    assert parity.agrees(0.06, 0.07, slack["temporal"])[0] and not parity.agrees(0.06, 0.08, slack["temporal"])[0]


def test_nan_and_missing_never_agree(parity):
    nan = float("nan")
    for hta, par in ((nan, None), (None, nan), (nan, nan), (nan, 0.0), (None, 1.0), (1.0, None)):
        assert not parity.agrees(hta, par, 1.0)[0]


def test_an_omitted_category_equals_an_empty_one_but_nan_does_not(parity):
    assert parity._pair({}, {"q": 0}, "q") == (0.0, 0.0)
    a, b = parity._pair({"q": float("nan")}, {}, "q")
    assert math.isnan(a) and b is None
