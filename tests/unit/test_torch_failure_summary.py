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


ROOT_CAUSE = """\
torch.distributed.elastic.multiprocessing.errors.ChildFailedError:
======================================================
paradise.boot.torch FAILED
------------------------------------------------------
Failures:
[1]:
  time      : 2026-12-07_03:41:06
  host      : localhost
  rank      : 0 (local_rank: 0)
  exitcode  : -15 (pid: 4168)  (SIGTERM)
  error_file: <N/A>
  traceback : Signal 15 (SIGTERM) received by PID 4168
------------------------------------------------------
Root Cause (first observed failure):
[0]:
  time      : 2026-12-07_03:41:06
  host      : localhost
  rank      : 3 (local_rank: 1)
  exitcode  : {code}
  error_file: <N/A>
  traceback : {traceback}
======================================================
"""


@pytest.mark.parametrize(("code", "traceback", "how"), [
    ("-6 (pid: 4167)  (SIGABRT)", "Signal 6 (SIGABRT) received by PID 4167", "ended by SIGABRT"),
    ("3 (pid: 4167)", "To enable traceback see: https://pytorch.org/docs/stable/elastic/errors.html",
     "exited with status 3"),
])
def test_root_cause_names_the_rank_how_it_ended_and_its_last_stderr_line(tmp_path, code, traceback, how):
    """torchrun's Root Cause block (the layout of torch's elastic error summary), not the other failures;
    the rank's last non-blank stderr line from its latest attempt's log."""
    from paradise.cli.torchrun_logs import root_cause

    (tmp_path / "torchrun.stderr").write_text(ROOT_CAUSE.format(code=code, traceback=traceback))
    for attempt, line in ((0, "first attempt"), (1, "the last words")):
        log = tmp_path / "run_x" / f"attempt_{attempt}" / "1" / "stderr.log"
        log.parent.mkdir(parents=True)
        log.write_text(f"something\n{line}\n\n")
    assert root_cause(tmp_path) == (3, f"rank 3 {how} (its last stderr line: the last words)")
    (tmp_path / "torchrun.stderr").write_text("torchrun: no summary at all\n")
    assert root_cause(tmp_path) is None


def test_the_root_cause_rank_without_a_failure_row_wins_over_a_peers_consequence(tmp_path):
    """Rank 1 aborted (no row); rank 0 then failed on the closed connection (a row): the line names
    rank 1's end. When torchrun names rank 0, its own failure row is the line."""
    from paradise.cli.trace_torch import failed_how

    tr = Tracer(tmp_path, rank=0, world_size=2, program="p")
    tr.failure(RuntimeError("Connection closed by peer [127.0.0.1]:25249"), "script")
    tr.close(complete=False)
    logs = tmp_path / "logs"
    log = logs / "run_x" / "attempt_0" / "1" / "stderr.log"
    log.parent.mkdir(parents=True)
    log.write_text("rank 1 gives up here\n")
    (logs / "torchrun.stderr").write_text(ROOT_CAUSE.format(code="-6 (pid: 4167)  (SIGABRT)", traceback="")
                                          .replace("rank      : 3 (local_rank: 1)", "rank      : 1 (local_rank: 1)"))
    assert failed_how(tmp_path, logs) == "rank 1 ended by SIGABRT (its last stderr line: rank 1 gives up here)"
    (logs / "torchrun.stderr").write_text(ROOT_CAUSE.format(code="1 (pid: 4167)", traceback="")
                                          .replace("rank      : 3 (local_rank: 1)", "rank      : 0 (local_rank: 0)"))
    assert failed_how(tmp_path, logs) == ("rank 0 failed before its first step: RuntimeError: "
                                          "Connection closed by peer [127.0.0.1]:25249")
    (logs / "torchrun.stderr").unlink()
    assert failed_how(tmp_path, logs).startswith("rank 0 failed before its first step")
