"""The memory budget of an analysis: parsing `--memory-limit`, its default, and DuckDB's share of it."""

from __future__ import annotations

import os
import re

from paradise.errors import InvalidOption

DEFAULT_SHARE = 0.5
"""Without --memory-limit an analysis may use half of the machine's physical memory: other jobs
(and the OS file cache that makes repeated scans fast) keep the rest."""
DUCKDB_SHARE = 0.5
"""DuckDB's memory_limit is this share of the budget; the rest is for Arrow results, numpy and
Python on the client, and for what DuckDB allocates beyond its limit (its exec-graph join and
window at 10^8 rows: about 0.5 GiB over a 1 GiB limit, docs/engines.md). Above the limit DuckDB spills joins,
sorts and aggregations to disk."""
MIN_BYTES = 64 << 20
"""Budgets under 64 MiB cannot even hold DuckDB's buffers for one Parquet row group per thread."""
MAX_BYTES = 1 << 50
"""Budgets over 1 PiB are typing errors (and overflow DuckDB's own size parser)."""
_UNITS = {"": 1, "b": 1, "k": 1 << 10, "kb": 10**3, "kib": 1 << 10, "m": 1 << 20, "mb": 10**6, "mib": 1 << 20,
          "g": 1 << 30, "gb": 10**9, "gib": 1 << 30, "t": 1 << 40, "tb": 10**12, "tib": 1 << 40}
_SIZE_RE = re.compile(r"^\s*(?P<num>\d+(\.\d+)?)\s*(?P<unit>[a-zA-Z]*)\s*$")


def parse_size(text: str, option: str = "--memory-limit") -> int:
    """Bytes of a size such as 4GiB, 4G (binary), 500MB (decimal) or 1073741824."""
    m = _SIZE_RE.match(str(text))
    unit = m.group("unit").lower() if m else ""
    if not m or unit not in _UNITS:
        raise InvalidOption(f"{option} {text!r}: not a size (examples: 4GiB, 500MB, 2G)")
    number = float(m.group("num"))
    if not number * _UNITS[unit] <= MAX_BYTES:  # also inf, from a 400-digit number
        raise InvalidOption(f"{option} {text[:40]!r}: at most {MAX_BYTES >> 50} PiB")
    value = int(number * _UNITS[unit])
    if value < MIN_BYTES:
        raise InvalidOption(f"{option} {text!r}: at least {MIN_BYTES >> 20} MiB is needed")
    return value


def client_room(budget: int, engine_share: int, reserve: int) -> int:
    """Bytes of a budget the client may fill with one kind of data: the budget less the engine's share
    in this process and a `reserve` kept for everything else (none when they take it all)."""
    return max(0, int(budget) - int(engine_share) - int(reserve))


def physical_memory() -> int:
    """Bytes of physical memory of this machine."""
    return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")


def address_space_limit() -> int | None:
    """The process' address-space limit (RLIMIT_AS, `ulimit -v`) in bytes, None when unlimited."""
    import resource

    soft, _ = resource.getrlimit(resource.RLIMIT_AS)
    return None if soft == resource.RLIM_INFINITY or soft <= 0 else int(soft)


def default_memory_limit() -> int:
    """The budget when none is given: DEFAULT_SHARE of physical memory, or of the address-space
    limit when that is lower (the libraries loaded already map part of it)."""
    budget = physical_memory()
    limit = address_space_limit()
    if limit is not None:
        budget = min(budget, max(0, limit - _mapped_now()))
    return max(MIN_BYTES, int(budget * DEFAULT_SHARE))


def _mapped_now() -> int:
    """Bytes of address space this process maps now (0 where /proc is not there)."""
    try:
        with open("/proc/self/statm") as fh:
            return int(fh.read().split()[0]) * os.sysconf("SC_PAGE_SIZE")
    except (OSError, ValueError, IndexError):
        return 0

