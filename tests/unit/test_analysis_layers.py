"""The import layout docs/architecture.md states: no import circle among paradise's modules (imports
inside functions included), the event layer below whatif and the analyses, and no analysis that
imports another (they share results through the session)."""

from __future__ import annotations

import ast
from pathlib import Path

import networkx as nx

ROOT = Path(__file__).resolve().parents[2]
ANALYSIS_HELPERS = {"paradise.analyses", "paradise.analyses.base", "paradise.analyses.session",
                    "paradise.analyses.runner", "paradise.analyses.placement_hint",
                    "paradise.analyses.devices", "paradise.analyses.pe_time"}


def _module(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def import_graph() -> nx.DiGraph:
    """Module -> modules of paradise it imports (at top level or in a function)."""
    files = {_module(p): p for p in (ROOT / "paradise").rglob("*.py")}
    g = nx.DiGraph()
    g.add_nodes_from(files)
    for mod, path in files.items():
        for node in ast.walk(ast.parse(path.read_text())):
            names = []
            if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                names = [node.module] + [f"{node.module}.{a.name}" for a in node.names]
            elif isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            for n in names:
                if n in files and n != mod:
                    g.add_edge(mod, n)
    return g


def test_no_import_circle():
    # a package's __init__ importing its own submodules is no layering problem: leave those out
    g = import_graph()
    g.remove_edges_from([(a, b) for a, b in list(g.edges) if b.startswith(a + ".")])
    assert list(nx.simple_cycles(g)) == []


def test_the_event_layer_sits_below_whatif_and_the_analyses():
    g = import_graph()
    layer = [mod for mod in g if mod.startswith("paradise.events.")]
    assert "paradise.events.execgraph" in layer  # the graph holds the layer it checks
    for mod in layer:
        bad = [n for n in g.successors(mod) if n.startswith(("paradise.analyses", "paradise.whatif",
                                                             "paradise.cli", "paradise.report"))]
        assert not bad, f"{mod} imports {bad}"


def test_no_analysis_imports_another():
    g = import_graph()
    analyses = [mod for mod in g if mod.startswith("paradise.analyses.") and mod not in ANALYSIS_HELPERS]
    assert {"paradise.analyses.placement", "paradise.analyses.scheduling"} <= set(analyses)
    for mod in analyses:
        others = [n for n in g.successors(mod) if n.startswith("paradise.analyses") and n not in ANALYSIS_HELPERS]
        assert not others, f"{mod} imports {others}"
