"""Merge rules of stage-1 queries: how partial results from groups of files combine.

Each .sql file states its rule in its header, for example

    -- merge: keys(pe, peer_pe) sum(messages, bytes) min(t_first) max(t_last)

keys(...) (or `group by a, b;`) are the group-by columns; every other output column is named in
exactly one of sum(...), min(...), max(...), any(...) (a value equal in every partial of a key),
or arg_min(x, by) / arg_max(x, by) (x from the partial row with the least / greatest `by`);
`sum x, sum y` and `x: max` are read the same way.
Counts merge by sum. Comment lines indented by two or more spaces after `--` continue the rule.
`-- merge: client` or `none`, or a rule saying the query needs "all files of a trace" or "all
files at once", marks a query that cannot be split by files (e.g. a join of sends on one PE
with execs on another); distributed engines run it over all files at once (Dask: in the event tables on a worker).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

import pyarrow as pa

from paradise.store.connection import connect

MERGE_FUNCS = ("sum", "min", "max", "any")
CLIENT_WORDS = ("none", "client")
"""A merge line starting with one of these (or saying the query needs `all files` at once)
(or a rule saying it needs "all files of a trace" / "all files at once")
marks a query that cannot be split by files."""
_LINE_RE = re.compile(r"^--\s*merge:\s*(?P<rule>.*)$")
_CONT_RE = re.compile(r"^--\s{2,}(?P<more>\S.*)$")
_FUNC_RE = re.compile(r"\b(?P<func>keys|sum|min|max|any|arg_min|arg_max)\(\s*(?P<cols>[^)]*)\)")
_COLON_RE = re.compile(r"\b(?P<col>[A-Za-z_][A-Za-z0-9_]*): (?P<func>sum|min|max|any)\b")
_WHOLE_TRACE_RE = re.compile(r"all files (of (a|the) trace|at once)")
_BARE_RE = re.compile(r"\b(?P<func>sum|min|max|any) (?P<col>[A-Za-z_][A-Za-z0-9_]*)\b")
_GROUP_BY_RE = re.compile(r"\bgroup by (?P<keys>[^;.]+)", re.IGNORECASE)
_IDENT_RE = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


class MergeRuleError(ValueError):
    """A .sql file whose merge line is missing or malformed (a bug in the query file)."""


@dataclass(frozen=True)
class MergeRule:
    """Parsed `-- merge:` rule: group-by keys and the merge function of each other column.

    keys None means "every column the rule does not name" (`group by the key columns`)."""

    keys: tuple[str, ...] | None = ()
    columns: dict[str, str] = field(default_factory=dict)  # column -> sum|min|max|any|arg_min:<by>
    client: bool = False
    text: str = ""

    def key_columns(self, names: list[str]) -> list[str]:
        """The group-by columns among a partial's output columns."""
        if self.keys is None:
            return [n for n in names if n not in self.columns]
        return list(self.keys)

    def uncovered(self, names: list[str]) -> list[str]:
        """Output columns the rule says nothing about (should be empty)."""
        known = set(self.key_columns(names)) | set(self.columns)
        return [n for n in names if n not in known]


def merge_text(text: str) -> list[str]:
    """The `-- merge:` rules of a query file, each with its continuation lines joined."""
    rules: list[str] = []
    lines = text.splitlines()
    for i, line in enumerate(lines):
        m = _LINE_RE.match(line.strip())
        if not m:
            continue
        parts = [m.group("rule").strip()]
        for nxt in lines[i + 1 :]:
            c = _CONT_RE.match(nxt.rstrip())
            if not c or _LINE_RE.match(nxt.strip()):
                break
            parts.append(c.group("more").strip())
        rules.append(" ".join(p for p in parts if p))
    return rules


def parse_merge_rule(text: str, name: str = "<sql>") -> MergeRule:
    """The merge rule of a query's text; raises MergeRuleError when absent or malformed.

    Accepted forms: `keys(a, b) sum(x, y) min(t) max(u) any(v)`; `group by a, b; sum(x), ...`;
    `group by the key columns; ...` (keys = every column not named); `client` or `none ...`
    (not splittable by files; so is a rule saying it needs `all files` at once)."""
    found = merge_text(text)
    if len(found) != 1:
        raise MergeRuleError(f"{name}.sql: expected exactly one '-- merge:' line, found {len(found)}")
    rule = found[0]
    low = rule.lower()
    if not rule:
        raise MergeRuleError(f"{name}.sql: empty merge rule")
    if low.split()[0].strip(".;:,") in CLIENT_WORDS or _WHOLE_TRACE_RE.search(low):
        return MergeRule(client=True, text=rule)
    keys: tuple[str, ...] | None = None
    columns: dict[str, str] = {}
    for m in _FUNC_RE.finditer(rule):
        func = m.group("func")
        cols = tuple(c.strip() for c in m.group("cols").split(",") if c.strip())
        bad = [c for c in cols if not _IDENT_RE.match(c)]
        if bad:
            raise MergeRuleError(f"{name}.sql: merge line names {bad[0]!r}, not a column name")
        if func == "keys":
            keys = (keys or ()) + cols
            continue
        if func in ("arg_min", "arg_max"):  # arg_min(x, by): x of the partial row with the least `by`
            if len(cols) != 2:
                raise MergeRuleError(f"{name}.sql: {func} needs two columns, got {', '.join(cols)}")
            cols, func = cols[:1], f"{func}:{cols[1]}"
        for c in cols:
            if c in columns:
                raise MergeRuleError(f"{name}.sql: column {c!r} appears twice in the merge line")
            columns[c] = func
    rest = _FUNC_RE.sub("", rule)
    bare = [(m.group("col"), m.group("func")) for m in _BARE_RE.finditer(rest)]  # `sum messages`
    bare += [(m.group("col"), m.group("func")) for m in _COLON_RE.finditer(rest)]  # `dur_med_ns: max`
    for c, func in bare:
        if c in columns:
            raise MergeRuleError(f"{name}.sql: column {c!r} appears twice in the merge line")
        columns[c] = func
    g = _GROUP_BY_RE.search(rule)
    if g and keys is None:
        text_keys = g.group("keys").strip()
        if not text_keys.lower().startswith("the "):
            keys = tuple(k.strip() for k in text_keys.split(",") if k.strip())
            bad = [k for k in keys if not _IDENT_RE.match(k)]
            if bad:
                raise MergeRuleError(f"{name}.sql: group-by key {bad[0]!r} is not a column name")
    elif keys is None and not g:
        keys = ()  # no keys: one row, every column aggregated
    if not columns and not keys:
        raise MergeRuleError(f"{name}.sql: merge rule {rule!r} names no merge function (sum, min, max, any)")
    return MergeRule(keys=keys, columns=columns, text=rule)


def _ident(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


def merge_partials(partials: list[pa.Table], rule: MergeRule, name: str = "<sql>") -> pa.Table:
    """Combines per-group partial tables into the table one query over all files returns.

    Rows come back sorted by the keys (engines promise no other order)."""
    if rule.client:
        raise MergeRuleError(f"{name}.sql: a client-side query has no partials to merge")
    if not partials:
        raise MergeRuleError(f"{name}.sql: no partial results to merge")
    table = pa.concat_tables(partials, promote_options="permissive")
    missing = rule.uncovered(table.column_names)
    if missing:
        raise MergeRuleError(f"{name}.sql: merge line does not say how to merge {', '.join(missing)}")
    select = []
    for col in table.column_names:
        func = rule.columns.get(col)
        if func is None:
            select.append(_ident(col))
        elif func == "any":
            select.append(f"any_value({_ident(col)}) AS {_ident(col)}")
        elif func.startswith("arg_"):
            agg, by = func.split(":", 1)
            select.append(f"{agg}({_ident(col)}, {_ident(by)}) AS {_ident(col)}")
        else:
            select.append(f"{func}({_ident(col)}) AS {_ident(col)}")
    keys = rule.key_columns(table.column_names)
    group = f" GROUP BY {', '.join(map(_ident, keys))}" if keys else ""
    order = f" ORDER BY {', '.join(_ident(k) + ' NULLS FIRST' for k in keys)}" if keys else ""
    con = connect()
    try:
        con.register("partials", table)
        merged = con.sql(f"SELECT {', '.join(select)} FROM partials{group}{order}").to_arrow_table()
    finally:
        con.close()
    return merged.cast(table.schema)


def query_tables(tables: dict[str, pa.Table], text: str, **params: Any) -> pa.Table:
    """SQL `text` over small Arrow tables (named by `tables`) on a connection of its own: the last
    step of a merge that is more than a rule's sums (the critical path's entries over the rows the
    exec graph's buckets gave)."""
    con = connect()
    try:
        for name, table in tables.items():
            con.register(name, table)
        return con.sql(text, params=params or None).to_arrow_table()
    finally:
        con.close()
