"""Names that act as layout (bidi overrides, zero-width characters, BOM, NUL/BEL/ESC) are shown as
visible escapes in the terminal and in the HTML report (docs/trust-model.md), never raw."""

from __future__ import annotations

import sys

import pytest
from plotly.offline import get_plotlyjs

from paradise.report.text import LAYOUT_RE
from tests.hostile import make

LAYOUT = {"\u202e": "\\u202e", "\u2066": "\\u2066", "\u200f": "\\u200f", "\u200b": "\\u200b", "\u2060": "\\u2060",
          "\ufeff": "\\ufeff", "\x00": "\\x00", "\x07": "\\x07", "\x1b": "\\x1b", "\u2028": "\\u2028"}
NAME = "Cell." + "".join(f"{c}s{i}" for i, c in enumerate(LAYOUT)) + "exe.txt"


def _trace(tmp_path):
    rows = make.basic_rows(0) + make.basic_rows(1)
    for r in rows:
        r.update(name=NAME, coll="Co\u202ell#0")
    return make.raw_trace(tmp_path, rows, name="w.parquet", pes=2, pe=None, program="p\u202egnp.exe")


def _expected_visible(text: str) -> str:
    return "".join(LAYOUT.get(c, c) for c in text)


def test_terminal_shows_layout_characters_as_escapes(tmp_path, monkeypatch, capsys):
    from paradise.cli.main import main

    path = _trace(tmp_path)
    monkeypatch.setenv("COLUMNS", "400")
    monkeypatch.setattr(sys, "argv", ["paradise", "analyze", str(path), "--only", "overview"])
    with pytest.raises(SystemExit) as exc:
        main()
    out = capsys.readouterr().out
    assert exc.value.code in (0, None)
    assert not [c for c in LAYOUT if c in out], "a layout character reached the terminal raw"
    assert "\\u202e" in out and "Co\\u202ell#0" in out


def test_html_report_shows_layout_characters_as_escapes(tmp_path):
    from paradise.cli.report import build_report

    page = build_report(_trace(tmp_path)).replace(get_plotlyjs(), "")
    raw = sorted({f"U+{ord(c):04X}" for c in LAYOUT_RE.findall(page) if c not in "\t\n"})
    assert not raw, f"raw layout characters in the page: {raw}"
    assert "<title>paradise report: p\\u202egnp.exe</title>" in page
    assert _expected_visible(NAME)[:40] in page  # tables and legends show the escapes
