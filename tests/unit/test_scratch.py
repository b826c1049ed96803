"""Spill directories left by killed runs (paradise/scratch.py): a real process killed by SIGKILL
while its engine holds a spill directory leaves it; the next run on the host removes it, and
nothing that is not provably a dead run's of this host and user."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
from pathlib import Path

from builders import charm_like

from paradise.scratch import SPILL_PREFIX, make_spill_dir, stale_spill_dirs
from tests.conftest import ROOT, bin_path

KILLED = """
import os, signal, sys
from paradise.engines.duckdb_engine import DuckDBEngine
from paradise.store import open_trace
eng = DuckDBEngine(open_trace(sys.argv[1]))
eng.sql("SELECT count(*) FROM events")
open(os.path.join(sys.argv[2], "spill.txt"), "w").write(eng.spill_dir)
with open(os.path.join(eng.spill_dir, "duckdb_temp_block"), "wb") as f:
    f.write(b"x" * 4096)
os.kill(os.getpid(), signal.SIGKILL)
"""


def _dead_pid() -> int:
    """The PID of a process that has ended (and been reaped)."""
    proc = subprocess.Popen([sys.executable, "-c", "pass"])
    proc.wait()
    return proc.pid


def _env(tmp: Path) -> dict[str, str]:
    return {**os.environ, "TMPDIR": str(tmp)}


def test_a_killed_runs_spill_directory_is_removed_by_the_next_run(tmp_path):
    tmp = tmp_path / "tmp"
    tmp.mkdir()
    trace = charm_like(pes=2, steps=2, seed=1).write(tmp_path / "t")
    killed = subprocess.run([sys.executable, "-c", KILLED, str(trace), str(tmp_path)], env=_env(tmp),
                            capture_output=True, text=True, timeout=120, cwd=ROOT)
    assert killed.returncode == -signal.SIGKILL, killed.stderr[-2000:]
    left = Path((tmp_path / "spill.txt").read_text())
    assert left.parent == tmp and left.name.startswith(SPILL_PREFIX) and (left / "duckdb_temp_block").exists()

    # beside it: a live process's, another host's, and one named without an owner
    live = tmp / f"{left.name.rsplit('-', 2)[0]}-{os.getpid()}-abc123"
    other_host = tmp / f"{SPILL_PREFIX}not-{socket.gethostname()}.1-{_dead_pid()}-abc123"
    unnamed = tmp / f"{SPILL_PREFIX}k2j3h4g5"
    for d in (live, other_host, unnamed):
        d.mkdir()

    proc = subprocess.run([bin_path("paradise"), "analyze", str(trace), "--json"], env=_env(tmp),
                          capture_output=True, text=True, timeout=300, cwd=ROOT)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert sorted(p.name for p in tmp.iterdir()) == sorted(d.name for d in (live, other_host, unnamed))


def test_only_dead_processes_directories_of_this_host_are_stale(tmp_path):
    mine = make_spill_dir()  # this process's: alive
    try:
        where = Path(mine).name[len(SPILL_PREFIX):].rsplit("-", 2)[0]
        dead = _dead_pid()
        (tmp_path / f"{SPILL_PREFIX}{where}-{dead}-a1b2c3").mkdir()
        (tmp_path / f"{SPILL_PREFIX}{where}-{os.getpid()}-a1b2c3").mkdir()
        (tmp_path / f"{SPILL_PREFIX}{where}.9-{dead}-a1b2c3").mkdir()  # another PID namespace
        (tmp_path / f"{SPILL_PREFIX}{where}-{dead}-a1b2c3.txt").write_text("a file, not a directory")
        (tmp_path / f"unrelated-{where}-{dead}-a1b2c3").mkdir()
        assert [p.name for p in stale_spill_dirs(tmp_path)] == [f"{SPILL_PREFIX}{where}-{dead}-a1b2c3"]
        assert Path(mine) not in stale_spill_dirs()
    finally:
        os.rmdir(mine)
