"""Terminal pictures: bars fill in eighths of a cell, sparklines scale to the top value, and the
pictures in `paradise analyze` and `paradise compare` fit 80 columns."""

from __future__ import annotations

import sys

import pytest
from builders import charm_like

from paradise.report.pictures import SPARK_BINS, bar, sparkline


def test_bar_fills_in_eighths_and_keeps_its_width():
    assert bar(0.0, 4) == "    "
    assert bar(1.0, 4) == "████"
    assert bar(0.5, 4) == "██  "
    assert bar(1 / 32, 4) == "▏   "  # one eighth of one of four cells
    assert bar(2.0, 3) == "███" and bar(-1.0, 3) == "   "  # clamped


def test_sparkline_scales_to_top():
    assert sparkline([0.0, 0.5, 1.0]) == "▁▄█"
    assert sparkline([]) == ""
    assert sparkline([2.0, 4.0], top=4.0) == "▄█"


def _cli(monkeypatch, capsys, *args):
    from paradise.cli.main import main

    monkeypatch.setattr(sys, "argv", ["paradise", *map(str, args)])
    monkeypatch.setenv("COLUMNS", "80")
    with pytest.raises(SystemExit) as exc:
        main()
    return int(exc.value.code or 0), capsys.readouterr().out


def test_analyze_and_compare_draw_pictures_within_80_columns(tmp_path, monkeypatch, capsys):
    base = charm_like(pes=4, steps=4).write(tmp_path / "a")
    cand = charm_like(pes=4, steps=4, seed=3).write(tmp_path / "b")
    code, out = _cli(monkeypatch, capsys, "analyze", base)
    assert code == 0
    lines = out.splitlines()
    start = [line.strip() for line in lines].index("busy share per PE")
    bars = lines[start + 1: start + 5]
    assert [b.split()[1] for b in bars] == ["0", "1", "2", "3"] and all("█" in b for b in bars)
    assert lines[start + 5].startswith("utilization over time")
    spark = lines[start + 6].strip()
    assert len(spark) == SPARK_BINS and set(spark) <= set("▁▂▃▄▅▆▇█")
    assert all(len(line) <= 80 for line in lines[start: start + 7])
    code, out = _cli(monkeypatch, capsys, "compare", base, cand)
    assert code == 0
    lines = out.splitlines()
    start = next(i for i, line in enumerate(lines) if line.strip() == "before / after")
    pairs = lines[start + 1: start + 3]
    assert pairs[0].split()[:2] == ["makespan", "base"] and pairs[1].split()[0] == "candidate"
    assert all(len(line) <= 80 for line in lines[start:])
