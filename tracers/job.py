"""A launched job (charmrun and its PEs, torchrun and its ranks) ends when paradise ends.

The launcher runs in a session of its own (one process group to signal) and dies with
paradise through PR_SET_PDEATHSIG, so even SIGKILL of paradise takes it along; SIGTERM and
SIGHUP to paradise are forwarded to that group, which gets SIGKILL after a grace period.
The bootstraps call `die_with_parent()` first thing, so a PE or rank ends with its launcher
(torchrun starts each rank in a session of its own, out of reach of the group's signals).
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import signal
import subprocess
import sys
import threading
from collections.abc import Callable, Iterator
from typing import Any

ENV_LAUNCHER = "PARADISE_LAUNCHER_PID"
"""paradise's pid, set in the job's environment: a PE or rank not descended from it exits."""
GRACE_S = 5.0
"""How long a job has after a forwarded SIGTERM before its group gets SIGKILL."""
_PR_SET_PDEATHSIG = 1


class JobTerminated(BaseException):
    """paradise got SIGTERM or SIGHUP while a job ran; the job has been ended."""

    def __init__(self, signum: int) -> None:
        super().__init__(signal.Signals(signum).name)
        self.signum = signum


def _set_pdeathsig(sig: int) -> bool:
    """Asks the kernel to send `sig` to this process when its parent thread exits (Linux)."""
    if not sys.platform.startswith("linux"):
        return False
    try:
        return ctypes.CDLL(None, use_errno=True).prctl(_PR_SET_PDEATHSIG, int(sig), 0, 0, 0) == 0
    except (OSError, AttributeError):
        return False


def _parent_of(pid: int) -> int | None:
    try:
        with open(f"/proc/{pid}/stat", "rb") as fh:
            stat = fh.read()
    except OSError:
        return None
    return int(stat[stat.rindex(b")") + 2 :].split()[1])  # fields after "(comm)": state, ppid


def _descends_from(ancestor: int) -> bool:
    pid: int | None = os.getpid()
    for _ in range(64):
        pid = _parent_of(pid) if pid else None
        if pid is None or pid <= 1:
            return False
        if pid == ancestor:
            return True
    return False


def die_with_parent() -> None:
    """In a PE or rank: SIGKILL when the launcher dies; exits at once if paradise is gone already."""
    if not _set_pdeathsig(signal.SIGKILL):
        return
    launcher = os.environ.get(ENV_LAUNCHER, "")
    if launcher.isdigit() and not _descends_from(int(launcher)):
        os._exit(137)  # the launcher died before the death signal was armed


def _arm(parent: int) -> Callable[[], None]:
    def preexec() -> None:  # in the child, between fork and exec
        _set_pdeathsig(signal.SIGKILL)
        if os.getppid() != parent:
            os._exit(137)

    return preexec


def start(cmd: list[str], *, env: dict[str, str], **popen_kw: Any) -> subprocess.Popen:
    """Starts the launcher in its own session, armed to die with this process."""
    env = {**env, ENV_LAUNCHER: str(os.getpid())}
    return subprocess.Popen(cmd, env=env, start_new_session=True, preexec_fn=_arm(os.getpid()), **popen_kw)


def _signal_group(proc: subprocess.Popen, sig: int) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(proc.pid, sig)


def stop(proc: subprocess.Popen, grace_s: float = GRACE_S) -> None:
    """SIGTERM to the job's group, SIGKILL when it has not ended within grace_s; reaps it."""
    if grace_s > 0 and proc.poll() is None:
        _signal_group(proc, signal.SIGTERM)
        with contextlib.suppress(subprocess.TimeoutExpired):
            proc.wait(timeout=grace_s)
    _signal_group(proc, signal.SIGKILL)  # also whatever of the group outlived the launcher
    proc.wait()


def _raise_terminated(signum: int, _frame: Any) -> None:
    raise JobTerminated(signum)


@contextlib.contextmanager
def owned(proc: subprocess.Popen) -> Iterator[subprocess.Popen]:
    """While inside, SIGTERM/SIGHUP to paradise raise JobTerminated; leaving the block by any
    exception (that one, Ctrl-C, an error) ends the job before the exception goes on."""
    saved: dict[int, Any] = {}
    if threading.current_thread() is threading.main_thread():
        for sig in (signal.SIGTERM, signal.SIGHUP):
            saved[sig] = signal.signal(sig, _raise_terminated)
    try:
        yield proc
    except BaseException:
        for sig in saved:  # a second signal must not cut the stop short
            signal.signal(sig, signal.SIG_IGN)
        stop(proc)
        raise
    finally:
        for sig, old in saved.items():
            signal.signal(sig, old)
