"""What the terminal prints tells the truth plainly: every time and size carries a unit, no figure
is in scientific notation, broadcasts are named, `--version` works, an error is prefixed once,
`--help` shows readable option types, and the progress bar names the stage at work."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from typer.testing import CliRunner

from paradise import units
from tests.builders import charm_like

SCIENTIFIC = re.compile(r"(?<![\w.])\d+(?:\.\d+)?[eE][+-]?\d+(?!\w)")
"""2.49e+04, 1e-05: a figure in scientific notation."""
BARE = re.compile(r"(?<![\w.#/:+-])\d{4,}(?![\w.])")
"""Four or more digits with no thousands separator and no unit or name attached: a raw
nanosecond or byte count (6530597890) or an ungrouped count (647394). Grouped counts (2,470),
figures with a decimal point and names holding digits (Cell#0, rank-70, paths) do not match."""


TYPER_LABEL = re.compile(r"<(?:bool|int|float|str|path|file|directory|list\[\w+\]|\w+ range)>|\{\w+\}")
"""typer's own type labels (`<bool>`, `<int range>`) and its `{trace}` argument in usage lines."""


def offending(text: str) -> list[str]:
    """Lines holding a figure in scientific notation or a bare raw number."""
    return [line.strip() for line in text.splitlines() if SCIENTIFIC.search(line) or BARE.search(line)]


def test_the_patterns_catch_what_they_are_for():
    assert offending("scheduling/critical_path  6530597890  0.90") and offending("idled 2.49e+04 ms")
    assert offending("jit+periodic  40 h (647394 steps)") and offending("Median message 16338 bytes")
    assert not offending("busy 6.53 s, 2,470 executions, Cell#0, rank-70.Mar_25_20_48_12.2861, /tmp/x1234/y")


@pytest.mark.parametrize(("call", "text"), [
    (lambda: units.duration(6_530_597_890), "6.53 s"),
    (lambda: units.duration(24_900e6), "24.9 s"),
    (lambda: units.duration(4_800 * 3600e9), "4,800 h"),
    (lambda: units.duration(150e9), "2.5 min"),
    (lambda: units.duration(999.6), "1000 ns"),
    (lambda: units.duration(0), "0 ns"),
    (lambda: units.size(4_174), "4.17 kB"),
    (lambda: units.size(16_338), "16.3 kB"),
    (lambda: units.size(80_737_108), "80.7 MB"),
    (lambda: units.count(647_394), "647,394"),
    (lambda: units.exact_size(4_174), "4,174 B"),
    (lambda: units.number(1.3236, 4), "1.324"),
    (lambda: units.number(1e-5), "0.00001"),
    (lambda: units.number(12_345_678.9), "12,345,679"),
    (lambda: units.seconds(0.0123), "12.3 ms"),
    (lambda: units.binary_size(2 << 30), "2.0 GiB"),
])
def test_units(call, text):
    assert call() == text


def _run(*args: str) -> tuple[int, str, str]:
    r = CliRunner().invoke(__import__("paradise.cli.main", fromlist=["app"]).app, [str(a) for a in args],
                           env={"COLUMNS": "140"})  # fmt: skip
    return r.exit_code, r.stdout, r.stderr


@pytest.fixture(scope="module")
def charm_pair(tmp_path_factory) -> tuple[Path, Path]:
    """Two runs of a 4-PE charm-like program, the first with a broadcast (a send without a
    destination PE, as trace-format.md defines it)."""
    d = tmp_path_factory.mktemp("charm")
    base = charm_like(pes=4, steps=3)
    base.send(0, 1_000, None, 4_174, name="bcast", args='{"bcast": true}')
    return base.write(d / "base"), charm_like(pes=4, steps=3, seed=1).write(d / "candidate")


def test_analyze_output_has_units_and_names_broadcasts(charm_pair):
    rc, out, err = _run("analyze", charm_pair[0])
    assert rc == 0, err
    assert offending(out) == []
    pairs = out[out.index("PE pairs by bytes"):]
    assert "(broadcast)" in pairs and "?" not in pairs.split("\n\n")[0]
    assert "(broadcast): broadcasts and multicasts" in out


def test_compare_whatif_report_output_have_units(charm_pair, tmp_path):
    base, candidate = charm_pair
    rc, out, err = _run("compare", base, candidate)
    assert rc == 0, err
    assert "makespan" in out and offending(out) == []
    rc, out, err = _run("analyze", base, "--hints-out", tmp_path / "hints")
    assert rc == 0, err
    rc, out, err = _run("whatif", base, "--hints", tmp_path / "hints")
    assert rc == 0, err
    assert out.strip() and offending(out) == []
    rc, out, err = _run("report", base, "-o", tmp_path / "r.html", "--compare", candidate)
    assert rc == 0, err
    assert "report written" in out and offending(out.replace(str(tmp_path), "<tmp>")) == []


@pytest.mark.parametrize("case", ["kineto_nccl", "kineto_large_integer", "projections_hello", "projections_pingpong"])
def test_analyze_output_on_real_traces_has_units(case, real_data, tmp_path):
    from tests.golden.cases import make

    rc, out, err = _run("analyze", make(case, tmp_path, real_data))
    assert rc in (0, 1), err
    assert "overview" in out and offending(out.replace(str(tmp_path), "<tmp>")) == []


def test_version():
    from importlib.metadata import version

    rc, out, err = _run("--version")
    assert rc == 0 and out == f"paradise {version('paradise')}\n"


@pytest.mark.parametrize("args", [["--bogus"], ["analyze", "--bogus"], ["analyze"], ["import", "kineto"],
                                  ["compare", "x"]])  # fmt: skip
def test_usage_error_is_prefixed_once(args, cli):
    rc, out, err = cli(*args)
    assert rc == 2 and out == ""
    assert err.count("\n") == 1 and err.startswith("paradise: error: ") and err.count("paradise:") == 1, err
    assert "--help'" in err


def _command_paths() -> list[list[str]]:
    import typer

    from paradise.cli.main import app

    def walk(cmd, path: list[str]) -> list[list[str]]:
        out = [path]
        for name, sub in sorted(getattr(cmd, "commands", {}).items()):
            out += walk(sub, [*path, name])
        return out

    return walk(typer.main.get_command(app), [])


def test_command_tree_is_walked():
    paths = _command_paths()
    assert [] in paths and ["analyze"] in paths and ["import", "kineto"] in paths and len(paths) > 15


@pytest.mark.parametrize("path", _command_paths(), ids=lambda p: " ".join(p) or "paradise")
def test_help_shows_readable_types(path):
    rc, out, err = _run(*path, "--help")
    assert rc == 0, err
    assert "--help" in out
    assert TYPER_LABEL.findall(out) == []  # no <bool>, <int>, <path>, no {trace}
    for line in out.splitlines():  # a flag's row shows no type: `--force   Overwrite ...`
        if re.match(r"\W*(--force|--json|--help)\s", line):
            assert re.match(r"\W*--[\w-]+\s{2,}[A-Za-z][a-z]", line), line


def test_progress_names_the_stage(charm_pair, monkeypatch):
    import paradise.report.progress as progress

    monkeypatch.setattr(progress, "SHOW_AFTER_S", -1.0)  # the bar shows from the first step
    # no timed redraw within the run (one per ~30 years): each stage shows only because naming it
    # draws the bar, however fast the stages pass or however loaded the machine
    monkeypatch.setattr(progress, "REFRESH_PER_SECOND", 1e-9)
    monkeypatch.setenv("FORCE_COLOR", "1")  # rich draws the bar although stderr is not a terminal
    rc, out, err = _run("analyze", charm_pair[0], "--only", "overview,placement,scheduling")
    assert rc == 0
    stages = set(re.findall(r"analyzing: (\w+)", err))
    assert stages == {"overview", "placement", "scheduling"}, err[:500]
