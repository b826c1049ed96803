"""User-facing failures. Each message names the file and the problem; the CLI prints it on one line."""

from __future__ import annotations


class ParadiseError(Exception):
    """Base of every error the CLI reports as one line with exit code 2."""


class TraceNotFound(ParadiseError):
    """A path that does not exist or holds no trace files."""


class NotAParadiseTrace(ParadiseError):
    """A file that is not Parquet, or Parquet without paradise metadata or columns."""


class TruncatedTrace(ParadiseError):
    """A file cut short (a killed writer's tmp file, a truncated .gz)."""


class SchemaVersionError(ParadiseError):
    """A trace or hint file of a format version this paradise does not read."""


class ImportFormatError(ParadiseError):
    """Input to an importer that is not of the format it reads."""


class OutputExists(ParadiseError):
    """An output that would be overwritten without --force."""


class OutputUnwritable(ParadiseError):
    """An output that cannot or must not be written: a folder, a device, one of the inputs, a
    read-only or full file system, a path under a regular file."""


class HintMismatch(ParadiseError):
    """A hint file made for another program, PE count or trace, or a damaged one."""


class EngineUnavailable(ParadiseError):
    """An engine that cannot start (e.g. an unreachable Dask scheduler)."""


class OutOfMemory(ParadiseError):
    """A trace that needs more memory than --memory-limit allows even when DuckDB spills to disk."""


class InvalidOption(ParadiseError):
    """A command-line value outside its allowed range; the message names the option and the value."""


DISK_FULL_MARKS = ("No space left", "File too large", "Disk quota exceeded")
"""The OS's words (ENOSPC, EFBIG, EDQUOT) in a write error: the disk refused the file."""


def disk_full(exc: BaseException) -> bool:
    """Whether a write failed because the disk (or a file size limit) refused it."""
    return any(mark in str(exc) for mark in DISK_FULL_MARKS)


def visible(text: str) -> str:
    """Untrusted text in a message (a file or entry name) with control characters shown as
    escapes (`\\x1b`), so that a message can neither drive the terminal nor span lines."""
    if text.isprintable():
        return text
    return "".join(ch if ch.isprintable() else ch.encode("unicode_escape").decode("ascii") for ch in text)
