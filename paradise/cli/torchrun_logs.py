"""The root cause torchrun names in its logs for a failed run: which rank ended first, how (a
signal, an abort, an exit status: what a rank that left no failure row in the trace tells), and
the last line it wrote to stderr.

torchrun (`--log-dir OUT/logs --redirects 2`) ends its stderr with a "Root Cause (first observed
failure)" block (rank, exitcode with the signal's name) and keeps each rank's stderr under
OUT/logs/<run id>/attempt_<n>/<local rank>/stderr.log (one node: `paradise trace torch` runs
torchrun --standalone, so the local rank finds the rank's log).
"""

from __future__ import annotations

import re
from pathlib import Path

_ROOT = re.compile(r"Root Cause \(first observed failure\):.*?rank\s*:\s*(\d+) \(local_rank: (\d+)\).*?"
                   r"exitcode\s*:\s*(-?\d+)[^\n]*?(?:\((SIG\w+)\))?\s*\n", re.S)
_TAIL_BYTES = 16384
"""How much of a rank's stderr.log is read for its last line."""


def _last_line(path: Path) -> str:
    """The last non-blank line of a text file (its final 16 KiB), stripped; '' when unreadable."""
    try:
        with path.open("rb") as f:
            f.seek(max(0, path.stat().st_size - _TAIL_BYTES))
            text = f.read().decode("utf-8", "replace")
    except OSError:
        return ""
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    return lines[-1] if lines else ""


def root_cause(logs: Path) -> tuple[int, str] | None:
    """(R, `rank R ended by SIGABRT (its last stderr line: ...)`) from torchrun's logs, or None."""
    try:
        text = (logs / "torchrun.stderr").read_text(errors="replace")
    except OSError:
        return None
    found = list(_ROOT.finditer(text))
    if not found:
        return None
    rank, local_rank, code, signal = found[-1].groups()  # the last attempt's
    how = f"ended by {signal}" if signal else f"exited with status {code}"
    attempts = sorted((p for p in logs.glob(f"*/attempt_*/{local_rank}/stderr.log")
                       if p.parent.parent.name.removeprefix("attempt_").isdigit()),
                      key=lambda p: int(p.parent.parent.name.removeprefix("attempt_")))
    last = _last_line(attempts[-1]) if attempts else ""
    return int(rank), f"rank {rank} {how}" + (f" (its last stderr line: {last})" if last else "")
