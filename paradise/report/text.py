"""Untrusted text (names from a trace, a hint file, an outputs file) made inert for every view:
characters that act as layout rather than as text are shown as visible escapes.

Those are the C0 and C1 controls (ANSI escapes, NUL, BEL, carriage returns; tab and newline are
kept), the bidirectional controls (U+202A-U+202E embeddings and overrides such as RLO, U+2066-U+2069
isolates, U+200E/U+200F/U+061C marks), zero-width characters (U+200B-U+200D, U+2060-U+2064), the
byte order mark U+FEFF, and the line and paragraph separators U+2028/U+2029. The terminal
(paradise.report.console) and the HTML report (paradise.report.html) both use `visible`.
"""

from __future__ import annotations

import html
import re
from typing import Any

LAYOUT_RE = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u061c\u200b-\u200f\u2028-\u202e\u2060-\u2064\u2066-\u2069\ufeff]")


def _escape(m: re.Match[str]) -> str:
    ch = m.group()
    return f"\\x{ord(ch):02x}" if ord(ch) < 0x100 else f"\\u{ord(ch):04x}"


def visible(text: str) -> str:
    """Layout characters as visible escapes: ESC becomes `\\x1b`, RLO `\\u202e`, BOM `\\ufeff`."""
    return LAYOUT_RE.sub(_escape, text)


def escape_html(value: Any, quote: bool = True) -> str:
    """Text for an HTML page: layout characters made visible, then HTML-escaped."""
    return html.escape(visible(str(value)), quote=quote)
