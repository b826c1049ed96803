"""Cross-view consistency on the real third-party traces under ../shared/data/real (INVENTORY.md):
both Projections runs and every Kineto trace, imported as the golden cases import them."""

from __future__ import annotations

import pytest
from consistency import checks

from tests.golden.cases import KINETO, PROJECTIONS, make

CASES = [*PROJECTIONS, *KINETO]


@pytest.mark.parametrize("case", CASES)
@pytest.mark.parametrize("check", list(checks.ALL))
def test_real_trace_views_agree(trace_cache, real_data, case, check):
    t = trace_cache(case, lambda work: make(case, work, real_data), case in PROJECTIONS)
    if check not in checks.applicable(t):
        pytest.skip(f"{check} does not apply to {case} (Projections logs have no threads or streams)")
    checks.ALL[check](t)
