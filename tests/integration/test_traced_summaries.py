"""paradise's own tracers write each file's summary (paradise.format.summary) on one host: the charm
launcher when it fills the sends' receivers, the torch launcher at the spool conversion; the overview
then reads the footers, and what it reads equals overview_pe over the files' rows."""

from __future__ import annotations

from pathlib import Path

import pytest

from paradise.engines import load_sql
from paradise.engines.duckdb_engine import DuckDBEngine
from paradise.store import open_trace
from tests import shared_runs


@pytest.mark.parametrize("run", [shared_runs.RING, shared_runs.DDP_STRAGGLER], ids=["charm ring", "torch ddp"])
def test_a_traced_runs_files_carry_summaries_equal_to_their_rows(traced_run, run):
    out, proc = traced_run(*run)
    assert proc.returncode == 0, proc.stderr[-2000:]
    trace = open_trace(out)
    assert trace.corrections == {}  # one host: no clock to correct
    assert trace.summaries(trace.sql_files()) is not None
    with DuckDBEngine(trace) as eng:
        got, want = eng.query("overview_pe"), eng.sql(load_sql("overview_pe"))
    assert want.num_rows > 3
    assert got.equals(want)


def test_charm_send_receivers_are_in_the_summary(traced_run):
    """An array message's receiver is filled after the spools were converted (its sender cannot know
    it): the summary holds the filled rows."""
    out: Path = traced_run(*shared_runs.RING)[0]
    trace = open_trace(out)
    rows = [r for s in trace.summaries(trace.sql_files()) or [] for r in s.to_pylist()]
    array_sends = [r for r in rows if r["kind"] == "send" and r["coll"] == "Cell#0"]
    assert array_sends and all(r["peer_pe"] is not None for r in array_sends)
