"""Import direction between the runtime-side packages: tracers import only paradise.format, hints
import nothing from tracers and from paradise only the format (the bootstraps join them)."""

from __future__ import annotations

import ast
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
