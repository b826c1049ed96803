"""Network waits are bounded and named: a --scheduler port that accepts TCP but never speaks
(a listener of this test that accepts and stays silent) ends in one line naming the wait."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import threading
from pathlib import Path

from paradise.engines.dask_engine import HANDSHAKE_TIMEOUT_S
from tests.hostile import make

ROOT = Path(__file__).resolve().parents[2]


def _silent_listener() -> tuple[socket.socket, list[socket.socket]]:
    srv = socket.socket()
    srv.bind(("127.0.0.1", 0))
    srv.listen(16)
    held: list[socket.socket] = []

    def accept() -> None:
        while True:
            try:
                held.append(srv.accept()[0])
            except OSError:
                return

    threading.Thread(target=accept, daemon=True).start()
    return srv, held


def test_scheduler_that_accepts_but_never_speaks(tmp_path):
    make.charm_trace(tmp_path)
    srv, held = _silent_listener()
    addr = f"tcp://127.0.0.1:{srv.getsockname()[1]}"
    env = dict(os.environ, PYTHONPATH=str(ROOT), TMPDIR=str(tmp_path), TERM="dumb")
    try:
        r = subprocess.run([sys.executable, "-m", "paradise.cli.main", "analyze", "t", "--scheduler", addr],
                           cwd=tmp_path, env=env, capture_output=True, text=True, timeout=HANDSHAKE_TIMEOUT_S + 60)
    finally:
        srv.close()
        for c in held:
            c.close()
    lines = [ln for ln in r.stderr.splitlines() if ln.strip()]
    assert r.returncode == 2 and len(lines) == 1, r.stderr
    assert addr in lines[0] and f"within {HANDSHAKE_TIMEOUT_S} s" in lines[0], lines[0]
    assert held, "the command never connected to the listener"
