"""The Arrow side of the trace format: SCHEMA and the columns' Arrow types (paradise.format has the names)."""

from __future__ import annotations

import pyarrow as pa
from pyarrow._compute import CastOptions, call_function

from paradise.format import COLUMN_SPECS

ARROW_TYPES = {"dict": lambda: pa.dictionary(pa.int32(), pa.string()), "int32": pa.int32, "int64": pa.int64,
               "string": pa.string}
"""Arrow type of each type name of COLUMN_SPECS."""

COLUMNS: tuple[tuple[str, pa.DataType, str], ...] = tuple((n, ARROW_TYPES[t](), m) for n, t, m in COLUMN_SPECS)
"""(name, Arrow type, meaning), in the on-disk column order."""
SCHEMA = pa.schema([pa.field(n, t) for n, t, _ in COLUMNS])


def empty_table() -> pa.Table:
    return SCHEMA.empty_table()


def conform(table: pa.Table) -> pa.Table:
    """Adds missing columns as nulls and casts to SCHEMA (importers build partial tables)."""
    cols = []
    for name, typ, _ in COLUMNS:
        if name in table.column_names:
            col = table.column(name)
            if col.type != typ:
                col = call_function("cast", [col], CastOptions.safe(typ))
        else:
            col = pa.nulls(table.num_rows, typ)
        cols.append(col)
    return pa.Table.from_arrays(cols, schema=SCHEMA)


def _tuple_column(values: tuple | None, typ: pa.DataType, n: int) -> pa.Array:
    """One column. Built from a list (pyarrow converts a tuple of str ~500x slower), and
    dictionary columns as strings then encoded (a dictionary type directly: ~15 us/value)."""
    if values is None or values.count(None) == n:  # a column no row fills (most, for rare rows)
        return pa.nulls(n, typ)
    if pa.types.is_dictionary(typ):
        return pa.array(list(values), type=typ.value_type).dictionary_encode().cast(typ)
    return pa.array(list(values), type=typ)


def tuple_rows_table(rows: list[tuple] | list[list]) -> pa.Table:
    """Rows given as tuples in COLUMN_NAMES order (a missing tail is null) as a SCHEMA table."""
    import itertools

    columns = list(itertools.zip_longest(*rows)) if rows else []  # pads short rows with None
    n = len(rows)
    arrays = [_tuple_column(columns[i] if i < len(columns) else None, field.type, n) for i, field in enumerate(SCHEMA)]
    return pa.Table.from_arrays(arrays, schema=SCHEMA)
