"""paradise's own spill directories under the system temporary directory ($TMPDIR), named for the
host, PID namespace and process that made them, so that a later run removes those of runs killed
before they could (SIGKILL, the kernel's OOM killer): at 10^8 rows one holds gigabytes.

A directory is stale only when all of these hold: its name carries this host and PID namespace,
its process no longer exists, and it belongs to the current user. Anything else (another host on a
shared TMPDIR, another namespace, a name without owner, a process alive or not ours to signal) is
left alone.
"""

from __future__ import annotations

import os
import re
import shutil
import socket
import stat
import tempfile
from pathlib import Path

SPILL_PREFIX = "paradise-spill-"
"""Name prefix of every spill directory paradise makes under $TMPDIR."""
_OWNED = re.compile(r"^(?P<where>.+)-(?P<pid>[0-9]+)-[a-z0-9_]+$")
"""The rest of an owned name: `HOST.NS-PID-` and tempfile's random suffix (no '-' in it)."""


def _where() -> str:
    """This host and PID namespace, as they go into a name (no '/', no '-' at its end)."""
    host = re.sub(r"[^A-Za-z0-9_.-]", "_", socket.gethostname() or "host")
    try:
        ns = os.stat("/proc/self/ns/pid").st_ino
    except OSError:
        ns = 0
    return f"{host}.{ns}"


def process_alive(pid: int) -> bool:
    """Whether a process `pid` exists here (one we may not signal counts as alive)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except (PermissionError, OverflowError, ValueError):
        return True
    return True


def stale_spill_dirs(root: str | Path | None = None) -> list[Path]:
    """The spill directories under `root` (default $TMPDIR) that killed runs of this host left."""
    base = Path(root if root is not None else tempfile.gettempdir())
    where, uid = _where(), os.getuid()
    found = []
    try:
        entries = list(os.scandir(base))
    except OSError:
        return []
    for entry in entries:
        if not entry.name.startswith(SPILL_PREFIX):
            continue
        m = _OWNED.match(entry.name[len(SPILL_PREFIX):])
        if m is None or m["where"] != where or process_alive(int(m["pid"])):
            continue
        try:
            st = entry.stat(follow_symlinks=False)
        except OSError:
            continue
        if stat.S_ISDIR(st.st_mode) and st.st_uid == uid:  # a link is not followed, nor removed
            found.append(Path(entry.path))
    return found


def make_spill_dir() -> str:
    """A new spill directory of this process under $TMPDIR, after removing the stale ones."""
    for path in stale_spill_dirs():
        shutil.rmtree(path, ignore_errors=True)
    return tempfile.mkdtemp(prefix=f"{SPILL_PREFIX}{_where()}-{os.getpid()}-")
