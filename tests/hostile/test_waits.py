"""Network waits are bounded and named: a --scheduler port that accepts TCP but never speaks
(a listener of this test that accepts and stays silent) ends in one line naming the wait, and one
that answers in another protocol (an HTTP server's first line) in one line saying so."""

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


def _listener(answer: bytes = b"") -> tuple[socket.socket, list[socket.socket]]:
    """A listener that accepts every connection and holds it, first sending `answer`."""
    srv = socket.socket()
    srv.bind(("127.0.0.1", 0))
    srv.listen(16)
    held: list[socket.socket] = []

    def accept() -> None:
        while True:
            try:
                conn = srv.accept()[0]
                held.append(conn)
                if answer:
                    conn.sendall(answer)
            except OSError:
                return

    threading.Thread(target=accept, daemon=True).start()
    return srv, held


def _analyze_against(tmp_path: Path, answer: bytes = b"") -> tuple[subprocess.CompletedProcess, str, list]:
    make.charm_trace(tmp_path)
    srv, held = _listener(answer)
    addr = f"tcp://127.0.0.1:{srv.getsockname()[1]}"
    env = dict(os.environ, PYTHONPATH=str(ROOT), TMPDIR=str(tmp_path), TERM="dumb")
    try:
        r = subprocess.run([sys.executable, "-m", "paradise.cli.main", "analyze", "t", "--scheduler", addr],
                           cwd=tmp_path, env=env, capture_output=True, text=True, timeout=HANDSHAKE_TIMEOUT_S + 60)
    finally:
        srv.close()
        for c in held:
            c.close()
    return r, addr, held


def test_scheduler_that_accepts_but_never_speaks(tmp_path):
    r, addr, held = _analyze_against(tmp_path)
    lines = [ln for ln in r.stderr.splitlines() if ln.strip()]
    assert r.returncode == 2 and len(lines) == 1, r.stderr
    assert addr in lines[0] and f"within {HANDSHAKE_TIMEOUT_S} s" in lines[0], lines[0]
    assert held, "the command never connected to the listener"


def test_scheduler_address_of_another_protocol(tmp_path):
    """An HTTP answer read as a Dask frame header asks for exabytes: one line, not a MemoryError."""
    r, addr, held = _analyze_against(tmp_path, b"HTTP/1.0 426 Upgrade Required\r\nconnection: close\r\n\r\n")
    lines = [ln for ln in r.stderr.splitlines() if ln.strip()]
    assert r.returncode == 2 and len(lines) == 1, r.stderr
    assert addr in lines[0] and "not in the Dask protocol" in lines[0], lines[0]
    assert held, "the command never connected to the listener"
