"""Every command that reads a whole trace takes --memory-limit, with one help text, and passes it on:
the engine, the clock alignment and the spill stay within what the user gives."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest
import typer

from paradise.cli.main import app

ROOT = Path(__file__).resolve().parents[2]

READERS = (("analyze",), ("report",), ("merge",), ("export", "chrome"), ("export", "projections"), ("whatif",),
           ("compare",), ("info",))
"""The commands whose work reads a trace's rows (trace and tune only start runs)."""


def _command(path: tuple[str, ...]):
    cmd = typer.main.get_command(app)
    for name in path:
        cmd = cmd.commands[name]
    return cmd


@pytest.mark.parametrize("path", READERS, ids=" ".join)
def test_every_trace_reader_takes_the_memory_limit(path: tuple[str, ...]) -> None:
    option = next((p for p in _command(path).params if "--memory-limit" in p.opts), None)
    assert option is not None, f"paradise {' '.join(path)} has no --memory-limit"
    assert option.metavar == "SIZE" and "e.g. 4GiB" in option.help and "half of physical memory" in option.help


READER_MODULES = ("analyze", "report", "merge", "export", "whatif", "compare", "info")


@pytest.mark.parametrize("module", READER_MODULES)
def test_the_limit_is_passed_on(module: str) -> None:
    """Each trace open of these commands (open_run, open_trace, compare_traces, merge_trace, trace_info)
    is given the parsed limit: an option accepted and then dropped would read under the default."""
    opens = {"open_run", "open_trace", "compare_traces", "merge_trace", "trace_info", "build_report", "run_compare"}
    tree = ast.parse((ROOT / "paradise" / "cli" / f"{module}.py").read_text())
    calls = [n for n in ast.walk(tree) if isinstance(n, ast.Call)
             and getattr(n.func, "id", getattr(n.func, "attr", None)) in opens]
    assert calls, module
    for call in calls:
        passed = {k.arg for k in call.keywords} | ({"**"} if any(k.arg is None for k in call.keywords) else set())
        positional_limit = any(isinstance(a, ast.Call) and getattr(a.func, "id", "") == "budget" for a in call.args)
        named = any(isinstance(a, ast.Name) and a.id in ("limit", "memory_limit") for a in call.args[1:])
        assert passed & {"memory_limit", "**"} or positional_limit or named, (
            f"paradise/cli/{module}.py line {call.lineno}: {ast.unparse(call.func)}(...) without the memory limit")
