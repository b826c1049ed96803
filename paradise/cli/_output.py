"""Output files of the report and export commands: refused when they exist (without --force) or
cannot be written, and written through a temporary file renamed into place, so a failed or
interrupted command leaves no half-written output."""

from __future__ import annotations

import os
import tempfile
from collections.abc import Callable
from pathlib import Path

from paradise.errors import OutputUnwritable, require_new_output


def check_output(out: Path, force: bool) -> None:
    """Refuses an existing output without --force and a folder that cannot take the file, before any work."""
    require_new_output(out, force)
    parent = out.parent if str(out.parent) else Path(".")
    if out.is_dir():
        raise OutputUnwritable(f"{out}: is a directory; name the output file")
    if not parent.is_dir():
        raise OutputUnwritable(f"{out}: cannot write: folder {parent} does not exist")
    if not os.access(parent, os.W_OK):
        raise OutputUnwritable(f"{out}: cannot write: no permission in {parent}")


def write_via_temp(out: Path, write: Callable[[Path], object]) -> None:
    """Calls write(tmp) on a temporary path beside `out` (same suffix), then renames it to `out`."""
    parent = out.parent if str(out.parent) else Path(".")
    suffix = ".gz" if out.name.endswith(".gz") else ""
    try:
        fd, name = tempfile.mkstemp(prefix=f".{out.name}.", suffix=suffix, dir=parent)
    except OSError as exc:
        raise OutputUnwritable(f"{out}: cannot write ({exc.strerror or exc})") from None
    os.close(fd)
    tmp = Path(name)
    try:
        write(tmp)
        umask = os.umask(0)
        os.umask(umask)
        os.chmod(tmp, 0o666 & ~umask)  # mkstemp makes 0600; an output is as readable as any new file
        os.replace(tmp, out)
    except OSError as exc:
        raise OutputUnwritable(f"{out}: cannot write ({exc.strerror or exc})") from None
    finally:
        tmp.unlink(missing_ok=True)


def write_bytes(out: Path, data: bytes) -> None:
    """`data` into `out`, through a temporary file."""
    write_via_temp(out, lambda tmp: tmp.write_bytes(data))
