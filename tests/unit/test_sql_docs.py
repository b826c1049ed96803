"""Every stage-1 .sql file is documented (grain, columns, merge rule) and used by some module."""

from __future__ import annotations

import re
from pathlib import Path

import pyarrow as pa
import pytest
from builders import charm_like, torch_like

from paradise.engines import load_sql
from paradise.engines.duckdb_engine import DuckDBEngine
from paradise.engines.merge import merge_text, parse_merge_rule
from paradise.events import bucketjoin, execgraph, rangerows
from paradise.store import open_trace

ROOT = Path(__file__).resolve().parents[2]
SQL_DIR = ROOT / "paradise" / "sql"
SQL_FILES = sorted(SQL_DIR.glob("*.sql"))
PY_SOURCES = [p for p in (ROOT / "paradise").rglob("*.py")] + [p for p in (ROOT / "hints").rglob("*.py")]


def _header(text: str) -> str:
    """The leading comment block (every line before the first line of SQL)."""
    lines = []
    for line in text.splitlines():
        if line.strip() and not line.lstrip().startswith("--"):
            break
        lines.append(line)
    return "\n".join(lines)


def _mentions(text: str, word: str) -> bool:
    return re.search(rf"(?<![A-Za-z0-9_]){re.escape(word)}(?![A-Za-z0-9_])", text) is not None


@pytest.fixture(scope="module")
def traces(tmp_path_factory):
    base = tmp_path_factory.mktemp("sqldocs")
    return [open_trace(charm_like(pes=3, steps=2).write(base / "charm")),
            open_trace(torch_like(ranks=2, steps=2).write(base / "torch"))]


def test_there_are_sql_files():
    assert SQL_FILES, f"no .sql files under {SQL_DIR}"


@pytest.mark.parametrize("path", SQL_FILES, ids=lambda p: p.stem)
def test_header_states_grain_columns_and_merge_rule(path):
    text = path.read_text()
    head = _header(text)
    assert head.strip(), f"{path.name}: no header comment"
    assert re.search(r"^--\s*grain:", head, re.MULTILINE), f"{path.name}: header lacks a '-- grain:' line"
    assert re.search(r"^--\s*columns?:", head, re.MULTILINE), f"{path.name}: header lacks a '-- columns:' section"
    assert merge_text(head), f"{path.name}: the '-- merge:' line must be in the header"
    rule = parse_merge_rule(text, path.stem)  # raises on a missing, doubled or malformed rule
    body = text[len(head):]
    for col in list(rule.columns) + list(rule.keys or ()):
        assert _mentions(body, col), f"{path.name}: merge rule names {col!r}, which the query never produces"


@pytest.mark.parametrize("path", SQL_FILES, ids=lambda p: p.stem)
def test_every_sql_file_is_used_by_a_module(path):
    users = [p for p in PY_SOURCES if re.search(rf"[\"']{re.escape(path.stem)}[\"']", p.read_text())]
    assert users, f"{path.name}: no module under paradise/ or hints/ queries {path.stem!r}; delete it or use it"


def _graph_part(eng) -> None:
    """The exec graph, and the view its reader steps read (one bucket: the whole graph)."""
    execgraph.materialize(eng)
    eng.execute(f"CREATE OR REPLACE VIEW graph_part AS SELECT * FROM {execgraph.TABLE}")


def _bucket_deliveries(eng) -> None:
    """The deliveries of one bucket holding the whole trace (paradise.events.bucketjoin), as the view
    communication_edges reads."""
    everything = (-(2**31), 2**31 - 1)
    execs, unended = rangerows.exec_rows(eng.con, *everything, execgraph._pe_table(eng))
    sends = rangerows.send_rows(eng.con, *everything, execs)
    _, deliveries = bucketjoin.join(pa.concat_tables([execs, unended]), sends, 0)
    eng.con.register("bucket_deliveries", deliveries)


EVENT_TABLES = {
    "overview_groups": lambda eng: eng.materialize("overview_groups", "overview_pe"),  # the session's shared result
    "bucket_deliveries": _bucket_deliveries,
    "exec_graph": execgraph.materialize,
    "graph_part": _graph_part,
    "object_step_parts": lambda eng: eng.execute("CREATE OR REPLACE VIEW object_step_parts AS "
                                                 + load_sql("events_object_step_parts")),
    "object_steps": lambda eng: (eng.execute("CREATE OR REPLACE VIEW object_step_parts AS "
                                             + load_sql("events_object_step_parts")),
                                 eng.materialize("object_steps", "events_object_steps")),
    "bucket_part_files": lambda eng: eng.con.execute(  # one bucket of the split rows: the whole trace
        f"CREATE OR REPLACE TABLE bucket_part_files AS WITH object_step_split AS ({load_sql('events_object_step_parts')}) "
        + load_sql("events_object_bucket_split"), {"buckets": 1}),
    "bucket_objects": lambda eng: (EVENT_TABLES["object_steps"](eng), eng.con.execute(  # one bucket's objects
        "CREATE OR REPLACE TABLE bucket_objects AS SELECT DISTINCT 0 AS bucket, oid AS local, coll, index "
        "FROM object_steps WHERE oid IS NOT NULL")),
    "clock_rows": lambda eng: eng.execute(  # the store's view (paradise.store.clockrefine), from the events
        "CREATE OR REPLACE VIEW clock_rows AS SELECT kind, pe, msg, t0 FROM events"),
}
"""The event layer's engine tables, and what builds each."""


MACRO_FILES = [p for p in SQL_FILES if re.search(r"^CREATE OR REPLACE MACRO ", p.read_text(), re.MULTILINE)]
"""Files that define a macro on every connection with the event views (no rows of their own)."""


@pytest.mark.parametrize("path", [p for p in SQL_FILES if "$" not in p.read_text() and p not in MACRO_FILES],
                         ids=lambda p: p.stem)
def test_output_columns_are_documented_and_mergeable(path, traces):
    # Run the query (files without bound parameters) and check its real output columns.
    text = path.read_text()
    head = _header(text)
    rule = parse_merge_rule(text, path.stem)
    for trace in traces:
        with DuckDBEngine(trace) as eng:
            builders = {build for table, build in EVENT_TABLES.items()  # the engine tables the query reads
                        if re.search(rf"\b(FROM|JOIN) {table}\b", text)}
            for build in builders:
                build(eng)
            columns = eng.query(path.stem).column_names
        undocumented = [c for c in columns if not _mentions(head, c)]
        assert not undocumented, f"{path.name}: header does not document column(s) {', '.join(undocumented)}"
        if not rule.client:
            missing = rule.uncovered(columns)
            assert not missing, f"{path.name}: merge rule does not say how to merge {', '.join(missing)}"
