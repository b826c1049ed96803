"""Runs the user's unmodified program as `__main__` from a bootstrap, as `python PROGRAM` would.

The bootstraps start with `python -P`, so the current folder is not on sys.path. The program's
folder goes first on it (the program imports its own modules), but only after paradise's own
packages are imported: a folder there named like one of them (`hints/` holding hint files,
say) cannot take their place for imports made later.
"""

from __future__ import annotations

import contextlib
import importlib
import os
import runpy
import sys
from pathlib import Path

OWN_PACKAGES = ("paradise", "tracers", "hints")


def prepare(program: str, args: list[str]) -> None:
    """sys.argv and sys.path as `python PROGRAM ARGS` sets them, with paradise's packages pinned."""
    for name in OWN_PACKAGES:
        with contextlib.suppress(ImportError):
            importlib.import_module(name)
    sys.argv = [program, *args]
    folder = str(Path(program).resolve().parent)
    if sys.path and not sys.flags.safe_path and sys.path[0] in ("", os.getcwd()):
        sys.path[0] = folder  # started with -m but without -P: the current folder gives way
    else:
        sys.path.insert(0, folder)


def run_program(program: str, args: list[str]) -> None:
    """Runs PROGRAM as __main__ (its chare classes, pickling and sys.argv as if run directly)."""
    prepare(program, args)
    runpy.run_path(program, run_name="__main__")
