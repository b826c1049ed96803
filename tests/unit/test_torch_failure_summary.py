"""The one-line summary of a failed `paradise trace torch` run names the error, never a stack frame."""

from __future__ import annotations

import pytest

from paradise.cli.trace_torch import failure_summary

torch = pytest.importorskip("torch")
from tracers.torch.tracer import Tracer  # noqa: E402


def _failed_callback() -> RuntimeError:
    """The exception DDP sees when a bucket's all-reduce failed: a torch future's callback error."""
    fut = torch.futures.Future()
    done = fut.then(lambda f: f.value())
    fut.set_exception(RuntimeError("[pair.cc:537] Read error [127.0.0.1]:14216: Connection reset by peer"))
    with pytest.raises(RuntimeError) as info:
        done.wait()
    assert "At:" in str(info.value)  # torch appends the callback's frames after the error
    return info.value


def _summary(tmp_path, exc: BaseException) -> str | None:
    tr = Tracer(tmp_path, rank=1, world_size=2, program="p")
    tr.failure(exc, "script")
    tr.close(complete=False)
    return failure_summary(tmp_path)


def test_a_failed_collective_is_summarised_by_its_error(tmp_path):
    summary = _summary(tmp_path, _failed_callback())
    assert summary == (
        "rank 1 failed before its first step: RuntimeError: "
        "[pair.cc:537] Read error [127.0.0.1]:14216: Connection reset by peer"
    )


def test_a_multi_line_message_gives_its_first_line(tmp_path):
    summary = _summary(tmp_path, ValueError("no data found\n  in shard 3\nTraceback (most recent call last):"))
    assert summary == "rank 1 failed before its first step: ValueError: no data found"
