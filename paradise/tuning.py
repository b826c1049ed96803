"""Machine-specific process tuning, off by default: one place for the settings that help on some
machines and not others (docs/benchmarks.md, "Process tuning", measures them with bench/tuning.py).

Switched on with PARADISE_TUNING, a comma-separated list of knob names or `all`:
* `malloc`: glibc's malloc keeps freed memory for reuse (no mmap for large blocks, no trimming; its
  arenas left as glibc makes them, since the event layer's steps allocate from threads side by side).
  On virtual machines that return freed guest pages to the host every fresh page costs a host fault;
  `paradise analyze` frees and reallocates arrays of tens of MB many times. Costs the memory it keeps
  until the process ends. No effect where the C library is not glibc.
* `arrow-pool`: Arrow allocates from the system allocator instead of its default mimalloc pool, which
  adds 30-40 MB of arenas to the peak of a small `paradise import` and hands freed memory back to the
  system within milliseconds (with `malloc`, `paradise analyze`'s Arrow buffers are kept and reused
  too). An ARROW_DEFAULT_MEMORY_POOL already set wins.
Commands call `apply(name)` where the knob matters (`apply_for_analysis()`: analyze and report); without
PARADISE_TUNING nothing changes.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable

ENV = "PARADISE_TUNING"


def _glibc_keep_freed_memory() -> None:
    import ctypes
    import platform

    if platform.libc_ver()[0] != "glibc":
        return
    try:
        mallopt = ctypes.CDLL(None).mallopt
    except (OSError, AttributeError):
        return
    mallopt.argtypes, mallopt.restype = [ctypes.c_int, ctypes.c_int], ctypes.c_int
    m_trim_threshold, m_top_pad, m_mmap_max = -1, -2, -4  # <malloc.h>
    for option, value in ((m_mmap_max, 0), (m_trim_threshold, -1), (m_top_pad, 1 << 27)):
        mallopt(option, value)  # trim threshold -1: never trim


def _system_arrow_pool() -> None:
    os.environ.setdefault("ARROW_DEFAULT_MEMORY_POOL", "system")  # read when pyarrow first allocates
    if os.environ["ARROW_DEFAULT_MEMORY_POOL"] == "system" and "pyarrow" in sys.modules:
        import pyarrow as pa  # loaded already: the pool is switched for what it allocates from now on

        pa.set_memory_pool(pa.system_memory_pool())


KNOBS: dict[str, Callable[[], None]] = {
    "malloc": _glibc_keep_freed_memory,
    "arrow-pool": _system_arrow_pool,
}


def enabled(env: dict[str, str] | None = None) -> frozenset[str]:
    """The knobs PARADISE_TUNING switches on (unknown names are ignored; `all` is every knob)."""
    names = {n.strip() for n in (os.environ if env is None else env).get(ENV, "").split(",") if n.strip()}
    return frozenset(KNOBS) if "all" in names else frozenset(names & set(KNOBS))


def apply(name: str) -> bool:
    """Applies knob `name` to this process when PARADISE_TUNING switches it on; True if applied."""
    if name not in KNOBS:
        raise ValueError(f"unknown tuning knob {name!r}")
    if name not in enabled():
        return False
    KNOBS[name]()
    return True


def apply_for_analysis() -> None:
    """The knobs of a command that runs the analyses and ends (analyze, report): glibc's malloc and
    Arrow's pool keep the memory the event layer frees and reallocates, when switched on."""
    apply("malloc")
    apply("arrow-pool")
