"""The one accounting of PE time (overview_pe_time) on every kind of trace: per PE busy + idle +
other = span, none negative, each equal to the oracle computed from the raw rows (tests/accounting.py),
and what `paradise analyze` prints is that same accounting. Synthetic traces of every pattern and
kind, the golden cases, and the real third-party traces in ../shared/data/real."""

from __future__ import annotations

import warnings

import pytest
from accounting import check_accounting as check

from paradise.synth import charm as synth_charm
from paradise.synth import synth
from tests.golden import cases


@pytest.mark.parametrize("pattern", synth_charm.PATTERNS)
def test_synth_charm_every_pattern(tmp_path, pattern):
    synth(tmp_path / "t", kind="charm", events=3000, pes=3, pattern=pattern, jobs=1)
    want = check(tmp_path / "t")
    assert all(w["running"] for w in want.values())


def test_synth_torch(tmp_path):
    synth(tmp_path / "t", kind="torch", events=3000, pes=2, jobs=1)
    check(tmp_path / "t")


@pytest.mark.parametrize("case", [c for c in cases.CASES if "@" not in c])
def test_golden_and_real_traces(tmp_path, case, request):
    real = request.getfixturevalue("real_data") if cases.needs_real_data(case) else None
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        path = cases.make(case, tmp_path, real)
    check(path)
