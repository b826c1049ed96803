"""The default memory budget respects the address-space limit (ulimit -v), and --memory-limit
values past any machine are one line, not a DuckDB parser error."""

from __future__ import annotations

import subprocess
import sys

import pytest

from paradise.errors import InvalidOption
from paradise.memory import MAX_BYTES, parse_size, physical_memory


def test_default_budget_under_an_address_space_limit():
    limit = 3 << 30
    code = (f"import resource; resource.setrlimit(resource.RLIMIT_AS, ({limit}, {limit})); "
            "from paradise.memory import default_memory_limit; print(default_memory_limit())")
    budget = int(subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout)
    assert budget <= limit // 2 < physical_memory() // 2


@pytest.mark.parametrize("text", ["99999999999999999999TiB", "9" * 400, "1e400", "2048TiB"])
def test_sizes_past_the_cap_are_refused(text):
    with pytest.raises(InvalidOption, match="at most 1 PiB|not a size"):
        parse_size(text)
    assert parse_size("1024TiB") == MAX_BYTES
