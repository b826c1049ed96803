"""The one accounting of PE time as the analyses read it (the session's `pe_time`: paradise.engines.busy
over the rows of paradise/sql/overview_pe_time.sql): whether busy time is known, and the run's one
load_imbalance, which the overview reports and placement reads for its mapping hint."""

from __future__ import annotations

import numpy as np
import pyarrow as pa

from paradise.analyses.base import Characteristic, Evidence

IMBALANCE_THRESHOLD = 1.10
"""max/mean PE busy above which load is called imbalanced: under 10 % lost to the slowest PE,
moving objects rarely repays its own cost (Charm++ load-balancing practice; a heuristic)."""
BUSY_UNKNOWN = "the trace has no rows that measure busy time (no exec, piece or phase rows with an end)"
QUERY = "overview_pe_time"


def busy_known(pe_time: pa.Table) -> bool:
    """True when some PE has running intervals: without any, busy (and other) time is unknown."""
    return bool(sum(pe_time.column("busy_rows").to_pylist()))


def load_imbalance(pe_time: pa.Table) -> Characteristic:
    """The run's one load_imbalance (max / mean busy over the PEs that have rows), from the one
    accounting of PE time; withheld (value None) when busy time is unknown or there is one PE.
    The placement analysis reads this same result for its mapping hint."""
    busy = np.array(pe_time.column("busy_ns").to_pylist(), np.float64)
    pes = pe_time.column("pe").to_pylist()
    query = QUERY
    withheld = None
    if not busy_known(pe_time):
        withheld = f"Load balance is unknown: {BUSY_UNKNOWN}."
    elif len(busy) < 2:
        withheld = "Only one PE in the trace: load imbalance across PEs cannot be measured."
    elif busy.mean() <= 0:
        withheld = "Load balance is unknown: no PE has busy time."
    if withheld is not None:
        return Characteristic(category="overview", name="load_imbalance", value=None,
                              evidence=(Evidence("pes", len(busy), "count", None, query),
                                        Evidence("pes_with_busy_rows", int(sum(
                                            1 for n in pe_time.column("busy_rows").to_pylist() if n)),
                                                 "count", None, query)),
                              confidence=0.0, summary=withheld)
    mean = float(busy.mean())
    ratio = float(busy.max()) / mean
    pe_max = int(pes[int(busy.argmax())])
    verdict = "imbalanced" if ratio > IMBALANCE_THRESHOLD else "balanced"
    return Characteristic(
        category="overview",
        name="load_imbalance",
        value=round(ratio, 4),
        evidence=(
            Evidence("max_pe_busy", int(busy.max()), "ns", None, query),
            Evidence("max_pe", pe_max, "pe", None, query),
            Evidence("mean_pe_busy", round(mean, 1), "ns", None, query),
            Evidence("max_over_mean", round(ratio, 4), "ratio", IMBALANCE_THRESHOLD, query),
            Evidence("pes", len(busy), "count", None, query),
        ),
        confidence=1.0,
        summary=(f"Load is {verdict}: the busiest PE ({pe_max}) worked {ratio:.2f}x the mean "
                 f"(threshold {IMBALANCE_THRESHOLD})."),
    )
