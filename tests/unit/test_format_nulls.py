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


def test_one_array_keeps_a_single_chunk_and_joins_several():
    """one_array: a one-chunk column is that chunk (its buffers, not a copy); several chunks are
    concatenated in order; no chunk gives an empty array of the type."""
    chunk = pa.array(list(range(1000)), pa.int64())
    one = arrays.one_array(pa.chunked_array([chunk]))
    assert one.buffers()[1].address == chunk.buffers()[1].address
    assert one.to_pylist() == list(range(1000))
    several = arrays.one_array(pa.chunked_array([chunk.slice(0, 10), pa.array([None, 7], pa.int64())]))
    assert several.to_pylist() == list(range(10)) + [None, 7]
    empty = arrays.one_array(pa.chunked_array([], pa.string()))
    assert len(empty) == 0 and empty.type == pa.string()
