"""Shared helpers for the charm4py tracer tests: run `paradise trace charm`, query the trace."""

from __future__ import annotations

import subprocess
from pathlib import Path

import duckdb
import pytest

from tests.conftest import bin_path

ROOT = Path(__file__).resolve().parents[2]
PROGRAMS = ROOT / "tests" / "charm_programs"
RUN_TIMEOUT_S = 240


def trace_charm(out: Path, program: Path, *args: str, pes: int = 2, hints: Path | None = None,
                timeout: float | None = None) -> subprocess.CompletedProcess:
    """`paradise trace charm` as a user runs it (a real charmrun subprocess)."""
    cmd = [bin_path("paradise"), "trace", "charm", "--pes", str(pes), "-o", str(out)]
    if hints is not None:
        cmd += ["--hints", str(hints)]
    if timeout is not None:
        cmd += ["--timeout", str(timeout)]
    cmd += [str(program), *args]
    return subprocess.run(cmd, capture_output=True, text=True, timeout=RUN_TIMEOUT_S, cwd=ROOT)


def events(trace_dir: Path) -> duckdb.DuckDBPyConnection:
    """A fresh DuckDB connection with an `ev` view over the trace's Parquet files."""
    con = duckdb.connect()
    con.sql(f"CREATE VIEW ev AS SELECT * FROM read_parquet('{trace_dir}/*.parquet', union_by_name=true)")
    return con


def rows(con: duckdb.DuckDBPyConnection, sql: str, **params) -> list[tuple]:
    return con.sql(sql, params=params or None).fetchall()


def require_ok(proc: subprocess.CompletedProcess) -> None:
    if proc.returncode != 0:
        pytest.fail(f"traced run failed ({proc.returncode}):\n{proc.stdout[-3000:]}\n{proc.stderr[-3000:]}")
