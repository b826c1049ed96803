"""The traces of the consistency suite, each built once per session, with its views cached
(tests/consistency/checks.py: Trace)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest
from consistency.checks import Trace

_TRACES: dict[str, Trace] = {}


@pytest.fixture(scope="session")
def trace_cache(tmp_path_factory) -> Callable[[str, Callable[[Path], Path], bool], Trace]:
    """trace_cache(name, build, charm_style): the Trace of `name`, built by build(folder) once."""

    def get(name: str, build: Callable[[Path], Path], charm_style: bool) -> Trace:
        if name not in _TRACES:
            work = tmp_path_factory.mktemp(name.replace("/", "_"))
            _TRACES[name] = Trace(name, build(work), work, charm_style)
        return _TRACES[name]

    return get
