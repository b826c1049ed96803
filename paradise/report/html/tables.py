"""Any analysis dict as HTML: characteristics with their evidence, then every other section as
a table or list, so a new analysis appears in the report without code here. Every value is
escaped: strings from a trace are data.
"""

from __future__ import annotations

import json
from typing import Any

from paradise.report.text import escape_html as escape

MAX_ROWS = 50
"""Rows shown per table; the rest are counted below it (the JSON of `paradise analyze --json` has all)."""
MAX_CELL_CHARS = 120


def _cell(value: Any) -> str:
    if value is None:
        return "<td class=none>-</td>"
    if isinstance(value, bool):
        return f"<td>{'yes' if value else 'no'}</td>"
    if isinstance(value, (int, float)):
        shown = f"{value:,}" if isinstance(value, int) else f"{value:,.4g}"
        return f"<td class=num>{escape(shown)}</td>"
    text = value if isinstance(value, str) else json.dumps(value, sort_keys=True, default=str)
    if len(text) > MAX_CELL_CHARS:
        text = text[: MAX_CELL_CHARS - 1] + "…"
    return f"<td>{escape(text)}</td>"


def table(rows: list[dict[str, Any]], caption: str = "") -> str:
    """Rows of dicts as one table; columns are the union of keys, in first-seen order."""
    cols: list[str] = []
    for r in rows[:MAX_ROWS]:
        cols += [k for k in r if k not in cols]
    head = "".join(f"<th>{escape(str(c))}</th>" for c in cols)
    body = "".join("<tr>" + "".join(_cell(r.get(c)) for c in cols) + "</tr>" for r in rows[:MAX_ROWS])
    more = f"<p class=note>{len(rows) - MAX_ROWS:,} more rows in --json</p>" if len(rows) > MAX_ROWS else ""
    cap = f"<caption>{escape(caption)}</caption>" if caption else ""
    return f"<table>{cap}<thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>{more}"


def value(v: Any, caption: str = "") -> str:
    """Any JSON value: lists of dicts as a table, dicts as key / value rows, lists as items."""
    if isinstance(v, list) and v and all(isinstance(x, dict) for x in v):
        return table(v, caption)
    if isinstance(v, list):
        items = "".join(f"<li>{escape(x if isinstance(x, str) else json.dumps(x, default=str))}</li>" for x in v[:MAX_ROWS])
        return (f"<p class=cap>{escape(caption)}</p>" if caption else "") + f"<ul>{items}</ul>"
    if isinstance(v, dict) and any(isinstance(x, list) and x and isinstance(x[0], dict) for x in v.values()):
        return "".join(value(x, f"{caption} {k}".strip()) for k, x in v.items())
    if isinstance(v, dict):
        return table([{"field": k, "value": x} for k, x in v.items()], caption)
    return f"<p>{escape(caption)}: {escape(str(v))}</p>"


def characteristics(chars: list[dict[str, Any]]) -> str:
    """One row per characteristic (its summary is the terminal report's sentence) and its evidence."""
    rows = []
    for c in chars:
        ev = "; ".join(
            f"{e.get('metric')} = {e.get('value')}{(' ' + e['unit']) if e.get('unit') else ''}"
            + (f" (threshold {e['threshold']})" if e.get("threshold") is not None else "")
            for e in c.get("evidence") or [] if isinstance(e, dict))
        rows.append(
            "<tr>" + _cell(f"{c.get('category')}/{c.get('name')}") + _cell(c.get("value"))
            + _cell(c.get("confidence")) + f"<td class=summary>{escape(str(c.get('summary', '')))}</td>"
            + f"<td class=evidence>{escape(ev)}</td></tr>")
    return ("<table class=chars><thead><tr><th>characteristic</th><th>value</th><th>confidence</th>"
            f"<th>summary</th><th>evidence</th></tr></thead><tbody>{''.join(rows)}</tbody></table>")


def analysis(result: dict[str, Any]) -> str:
    """An analysis's whole dict: characteristics, hint explanations, then the other sections."""
    parts = [characteristics(result.get("characteristics") or [])]
    for key in ("hint_explanations", "notes"):
        if result.get(key):
            parts.append(value(result[key], key.replace("_", " ")))
    for key, v in sorted(result.items()):
        if key in ("name", "characteristics", "hint_explanations", "notes") or v in (None, [], {}):
            continue
        parts.append(value(v, key.replace("_", " ")))
    return "".join(parts)
