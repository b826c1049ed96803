"""Where a command's output file may go, and writing it so that nothing else is harmed.

An output may never be one of the inputs, nor sit inside an input trace folder (it would be read
as part of it next time). It is written to a temporary file created exclusively beside it
(O_EXCL: a planted symlink is never followed) and renamed into place, so a failed or killed
write leaves the old file as it was; temporaries of a dead writer are removed by the next run
to the same output.
"""

from __future__ import annotations

import errno
import os
import shutil
import stat
import tempfile
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import BinaryIO

from paradise.errors import OutputExists, OutputUnwritable
from paradise.scratch import process_alive

TMP_TAG = "paradise-tmp"
"""Temporaries are named `.<output name>.paradise-tmp-<pid>-<random>`: the pid tells stale ones."""


def _same(a: Path, b: Path) -> bool:
    try:
        return os.path.samefile(a, b)
    except OSError:
        return os.path.abspath(a) == os.path.abspath(b)


def check_output(out: str | os.PathLike, *, force: bool, inputs: Iterable[Path] = (),
                 input_dirs: Iterable[Path] = ()) -> Path:
    """Refuses an output file that cannot or must not be written (one line naming it)."""
    p = Path(out)
    if str(out) == "" or p.name in ("", ".", ".."):
        raise OutputUnwritable(f"{str(out)!r}: not a file name; choose an output file")
    for f in inputs:
        if _same(p, f) or os.path.abspath(os.path.realpath(p)) == os.path.abspath(os.path.realpath(f)):
            raise OutputUnwritable(f"{p}: is one of the inputs; choose another output")
    real_parent = Path(os.path.realpath(p.parent))
    for d in input_dirs:
        real_d = Path(os.path.realpath(d))
        if real_parent == real_d or real_d in real_parent.parents:
            raise OutputUnwritable(f"{p}: inside the input folder {d} (it would be read as part of the trace); "
                                   "choose an output outside it")
    for anc in (p.parent, *p.parent.parents):
        if anc.exists() or anc.is_symlink():
            if not anc.is_dir():
                raise OutputUnwritable(f"{p}: {anc} is not a folder")
            break
    if p.is_symlink() or p.exists():
        try:
            mode = p.lstat().st_mode
        except OSError as exc:
            raise OutputUnwritable(f"{p}: cannot check ({exc.strerror or exc})") from None
        if stat.S_ISDIR(mode) or p.is_dir():
            raise OutputUnwritable(f"{p}: is a folder; choose an output file name")
        if not (stat.S_ISREG(mode) or stat.S_ISLNK(mode)) or (p.exists() and not p.is_file()):
            raise OutputUnwritable(f"{p}: not a regular file (a device, FIFO or socket)")
        if not force:
            raise OutputExists(f"{p}: already exists; pass --force to overwrite it")
    return p


def _tmp_prefix(out: Path) -> str:
    return f".{out.name}.{TMP_TAG}-"


def remove_stale(out: Path) -> None:
    """Removes temporaries of earlier writers of `out` that are no longer running."""
    prefix = _tmp_prefix(out)
    try:
        entries = list(out.parent.iterdir())
    except OSError:
        return
    for e in entries:
        if not e.name.startswith(prefix):
            continue
        try:
            pid = int(e.name[len(prefix):].split("-", 1)[0])
        except ValueError:
            continue
        if pid == os.getpid() or process_alive(pid):
            continue
        if e.is_dir() and not e.is_symlink():
            shutil.rmtree(e, ignore_errors=True)
        else:
            e.unlink(missing_ok=True)


_FULL_ERRNOS = frozenset({errno.ENOSPC, errno.EFBIG, errno.EROFS, errno.EDQUOT})
_FULL_TEXTS = ("No space left", "File too large", "Read-only file system", "quota exceeded")


def disk_full(exc: OSError) -> bool:
    """An OSError of the writing side: no space, file size limit, read-only file system, quota."""
    return exc.errno in _FULL_ERRNOS or any(t in str(exc) for t in _FULL_TEXTS)


def _unwritable(out: Path, exc: OSError) -> OutputUnwritable:
    return OutputUnwritable(f"{out}: cannot write ({exc.strerror or exc}); nothing written")


def prepare_parent(out: Path) -> None:
    """Creates the output's folder and clears stale temporaries; a failure is one line."""
    try:
        out.parent.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise _unwritable(out, exc) from None
    remove_stale(out)


@contextmanager
def scratch_dir(out: Path) -> Iterator[Path]:
    """A private folder beside `out` for spill and intermediate files, removed on any exit."""
    prepare_parent(out)
    try:
        d = Path(tempfile.mkdtemp(prefix=f"{_tmp_prefix(out)}{os.getpid()}-", dir=out.parent))
    except OSError as exc:
        raise _unwritable(out, exc) from None
    try:
        yield d
    finally:
        shutil.rmtree(d, ignore_errors=True)


@contextmanager
def atomic_output(out: Path) -> Iterator[tuple[Path, BinaryIO]]:
    """Yields (temporary path, its open binary file); on success renames it onto `out`.

    The temporary is created exclusively (never through a planted link) and removed on any
    failure; an OSError while writing (full disk, read-only file system) becomes one line."""
    prepare_parent(out)
    try:
        fd, name = tempfile.mkstemp(prefix=f"{_tmp_prefix(out)}{os.getpid()}-", suffix=".tmp", dir=out.parent)
    except OSError as exc:
        raise _unwritable(out, exc) from None
    tmp = Path(name)
    try:
        umask = os.umask(0)
        os.umask(umask)
        os.fchmod(fd, 0o666 & ~umask)
        with os.fdopen(fd, "wb") as fh:
            yield tmp, fh
        os.replace(tmp, out)
    except OSError as exc:
        raise _unwritable(out, exc) from None
    finally:
        tmp.unlink(missing_ok=True)


def prepare_output_folder(out: Path, *, inputs: Iterable[Path] = ()) -> None:
    """Checks that OUT can be a folder of outputs (not a file, not under a file, not holding an
    input such as the traced program) and creates it; any failure is one line."""
    if out.is_symlink() and not out.is_dir():
        raise OutputUnwritable(f"{out}: a link to something that is not a folder")
    if out.exists() and not out.is_dir():
        raise OutputUnwritable(f"{out}: exists and is not a folder")
    for anc in out.parents:
        if anc.exists() or anc.is_symlink():
            if not anc.is_dir():
                raise OutputUnwritable(f"{out}: {anc} is not a folder")
            break
    real = Path(os.path.realpath(out))
    for f in inputs:
        real_f = Path(os.path.realpath(f))
        if real in (real_f, real_f.parent):  # --force would clear trace outputs beside the input
            raise OutputUnwritable(f"{out}: holds the input {f}; choose an output folder of its own")
    try:
        out.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise OutputUnwritable(f"{out}: cannot create the folder ({exc.strerror or exc})") from None
