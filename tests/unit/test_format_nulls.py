"""paradise.format.arrays.nulls: n nulls of a type, whatever the order of the sizes asked."""

from __future__ import annotations

import pyarrow as pa
import pytest

from paradise.format import arrays


@pytest.mark.parametrize("typ", [pa.int64(), pa.int32(), pa.string(), pa.dictionary(pa.int32(), pa.string())])
def test_nulls_are_n_nulls_of_the_type(typ):
    for n in (0, 3, 1000, 7, arrays.NULLS_HELD, arrays.NULLS_HELD + 5, 10):
        col = arrays.nulls(n, typ)
        assert len(col) == n and col.null_count == n and col.type == typ
        assert pa.Table.from_arrays([col], names=["c"]).column("c").to_pylist() == [None] * n
