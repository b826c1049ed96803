"""Import direction between the runtime-side packages: tracers import only paradise.format, hints
import nothing from tracers and from paradise only the format (the bootstraps join them)."""

from __future__ import annotations

import ast
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def _imports(package: str) -> dict[str, set[str]]:
    out: dict[str, set[str]] = {}
    for py in sorted((ROOT / package).rglob("*.py")):
        names: set[str] = set()
        for node in ast.walk(ast.parse(py.read_text())):
            if isinstance(node, ast.Import):
                names.update(a.name for a in node.names)
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                names.add(node.module)
        out[str(py.relative_to(ROOT))] = names
    return out


def _offending(package: str, banned: tuple[str, ...], allowed: tuple[str, ...] = ()) -> list[str]:
    return [f"{f}: {m}" for f, mods in _imports(package).items() for m in sorted(mods)
            if m.split(".")[0] in banned and not m.startswith(allowed)]


def test_tracers_import_only_the_format() -> None:
    assert _offending("tracers", ("hints", "paradise"), ("paradise.format",)) == []


def test_hints_import_neither_tracers_nor_paradise_beyond_the_format() -> None:
    assert _offending("hints", ("tracers", "paradise"), ("paradise.format",)) == []


def test_generators_are_pure() -> None:
    """Generators take plain data: no runtime (charm4py, torch) and no consumer imports."""
    assert _offending("hints/generators", ("charm4py", "torch", "hints"), ("hints.format",)) == []


ENGINE_CONSTRUCTORS = frozenset({"DuckDBEngine", "DaskEngine", "get_engine", "make_engine"})
"""Calls that build an engine: outside paradise/engines only paradise/run/ (open_run) makes them."""
SQL_RE = re.compile(r"\b(SELECT\b[\s\S]*\bFROM|INSERT INTO|CREATE (OR REPLACE )?(TEMP )?(TABLE|VIEW)|COPY \()")
"""SQL text in a string literal (keywords as the house style writes them: upper case)."""


def engine_constructions(source: str) -> list[str]:
    """The engine-building calls in a module's source, by name and line."""
    out = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Call):
            f = node.func
            name = f.id if isinstance(f, ast.Name) else f.attr if isinstance(f, ast.Attribute) else None
            if name in ENGINE_CONSTRUCTORS:
                out.append(f"{name} (line {node.lineno})")
    return out


def database_connections(source: str) -> list[str]:
    """Calls that open a DuckDB database of the module's own: duckdb.connect(...), or a `connect`
    imported from duckdb or from paradise's DuckDB engine."""
    tree = ast.parse(source)
    imported = {a.asname or a.name for node in ast.walk(tree) if isinstance(node, ast.ImportFrom)
                and node.module in ("duckdb", "paradise.engines.duckdb_engine") for a in node.names if a.name == "connect"}
    out = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Call):
            f = node.func
            if (isinstance(f, ast.Attribute) and f.attr == "connect" and isinstance(f.value, ast.Name)
                    and f.value.id == "duckdb") or (isinstance(f, ast.Name) and f.id in imported):
                out.append(f"connect (line {node.lineno})")
    return out


def sql_in(source: str) -> list[str]:
    """String literals that hold SQL, and imports of duckdb, in a module's source."""
    out = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and SQL_RE.search(node.value):
            out.append(f"SQL text (line {node.lineno})")
        elif isinstance(node, ast.Import) and any(a.name == "duckdb" for a in node.names):
            out.append(f"import duckdb (line {node.lineno})")
    return out


def _sources(package: str) -> dict[str, str]:
    return {str(p.relative_to(ROOT)): p.read_text() for p in sorted((ROOT / package).rglob("*.py"))}


def test_the_checks_find_what_they_look_for() -> None:
    bad = ('import duckdb\nfrom paradise.engines import get_engine\nQ = "SELECT kind\\nFROM events"\n'
           'def f(t):\n    with DuckDBEngine(t) as e:\n        return e.sql(Q), get_engine(t)\n')
    assert engine_constructions(bad) == ["DuckDBEngine (line 5)", "get_engine (line 6)"]
    assert sql_in(bad) == ["import duckdb (line 1)", "SQL text (line 3)"]
    assert engine_constructions("from paradise.run import open_run\nopen_run('t')\n") == []
    assert database_connections(bad + "def g():\n    return duckdb.connect(':memory:')\n") == ["connect (line 8)"]
    assert database_connections("from duckdb import connect as c\nc()\nimport sqlite3\nsqlite3.connect('x')\n") \
        == ["connect (line 2)"]
    assert sql_in('HELP = "select the events to keep from a trace"\n') == []


def test_only_the_run_package_and_the_engines_construct_engines() -> None:
    found = {f: hits for f, src in _sources("paradise").items()
             if not f.startswith(("paradise/run/", "paradise/engines/")) and (hits := engine_constructions(src))}
    assert found == {}


def test_no_analysis_opens_a_database_of_its_own() -> None:
    """An analysis reads the trace through the run's engine (session.engine), and rolls up a shared
    result through the session (session.rollups), never a connection it opens."""
    found = {f: hits for f, src in _sources("paradise/analyses").items() if (hits := database_connections(src))}
    assert found == {}


def test_the_cli_holds_no_sql() -> None:
    found = {f: hits for f, src in _sources("paradise/cli").items() if (hits := sql_in(src))}
    assert found == {}


def test_the_bottom_imports_nothing_above_it() -> None:
    """The trace format imports no other paradise package; the store only the format and the
    bottom modules (errors, units, the memory budget, the spill directories): engines, the event layer and everything
    above read traces through the store, never the other way round."""
    assert _offending("paradise/format", ("paradise",), ("paradise.format",)) == []
    assert _offending("paradise/store", ("paradise",), ("paradise.format", "paradise.store", "paradise.errors",
                                                       "paradise.units", "paradise.memory",
                                                       "paradise.scratch")) == []
