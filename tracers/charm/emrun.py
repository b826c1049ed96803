"""The parts of charm4py 1.1's `EntryMethod._run` that the compiled exec hook hands back to Python.

With the native recorder the exec hook does `_run`'s own work in compiled code (no Python frame
per execution: `charm.last_em_exec = em`, the entry method called with the message's args); its
except clauses and a blocking call's reply are rare and stay here, as charm4py 1.1 writes them.
"""

from __future__ import annotations

from typing import Any

CHARM4PY_VERSION = "1.1"
"""The only charm4py whose `_run` the compiled hook replaces (pinned in pyproject.toml)."""


def replaces(run: Any) -> dict | None:
    """The globals of `run` when it is charm4py 1.1's EntryMethod._run (the compiled hook does its
    work), else None (the hook calls it)."""
    if getattr(run, "__module__", None) != "charm4py.entry_method" or getattr(run, "__name__", None) != "_run":
        return None
    try:
        from charm4py._version import version
    except ImportError:  # pragma: no cover
        return None
    return run.__globals__ if version == CHARM4PY_VERSION else None


def em_failed(charm: Any, obj: Any, header: dict, exc: BaseException) -> None:
    """`_run`'s except clauses, run while `exc` is being handled as there (charm4py reads
    sys.exc_info() to send a blocked remote caller the stack trace)."""
    try:
        raise exc
    except SystemExit:
        exit_code = exc.code
        if exit_code is None:
            exit_code = 0
        if not isinstance(exit_code, int):
            print(exit_code)
            exit_code = 1
        charm.exit(exit_code)
    except Exception as e:
        charm.process_em_exc(e, obj, header)


def em_block(charm: Any, obj: Any, header: dict, ret: Any) -> None:
    """`_run`'s reply to a blocking call (header[b'block']): the return value to its future."""
    blockFuture = header[b"block"]
    if b"bcast" in header:
        sid = header[b"sid"] if b"sid" in header else None
        if b"bcastret" in header:
            charm.contribute(ret, charm.reducers.gather, blockFuture, obj, sid)
        else:
            charm.contribute(None, None, blockFuture, obj, sid)
    else:
        blockFuture.send(ret)


__all__ = ["CHARM4PY_VERSION", "em_block", "em_failed", "replaces"]
