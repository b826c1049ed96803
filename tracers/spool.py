"""The traced process's side of a spool (paradise.format.spool): one file per PE or rank, appended
with one write() per flush, converted to Parquet after the run (paradise.format.compact).

No pyarrow and no numpy here: a flush hands the recorder's packed rows to the kernel as they are.
The writer holds an exclusive lock on its file while it lives (the kernel drops it when the process
dies), so a converter never takes a spool that is still being written.
"""

from __future__ import annotations

import fcntl
import os
from pathlib import Path
from typing import Any

from paradise.format.spool import HEAD, META, ROWS, STRS, SUFFIX, TUPL, head_payload, json_payload, record


class Spool:
    """Appends records to `STEM.rows` (STEM: pe-NNNNN, or pe-NNNNN.restart-RR for a torchrun
    restart): each flush is one writev() of whole records."""

    def __init__(self, directory: str | os.PathLike, stem: str, columns: tuple[str, ...], fill: dict[str, int],
                 metadata: dict[str, Any]) -> None:
        Path(directory).mkdir(parents=True, exist_ok=True)
        self.path = Path(directory) / f"{stem}{SUFFIX}"  # pe-00003.rows -> pe-00003.parquet
        flags = os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_APPEND | getattr(os, "O_NOFOLLOW", 0) | os.O_CLOEXEC
        self.fd = os.open(self.path, flags, 0o644)
        fcntl.flock(self.fd, fcntl.LOCK_EX)
        self.bytes = 0
        self.failed: OSError | None = None
        self._write([(HEAD, head_payload(columns, fill, metadata))])

    def _write(self, records: list[tuple[bytes, Any]]) -> None:
        if self.failed is not None:  # after a torn record nothing more is appended: readers stop there
            raise OSError(self.failed.errno, f"{self.path}: an earlier write failed ({self.failed.strerror})")
        parts: list[Any] = []
        for tag, payload in records:
            parts += (record(tag, payload), payload)
        want = sum(len(p) for p in parts)
        try:
            done = os.writev(self.fd, parts)
            if done < want:  # a short write (a signal, a full disk's last bytes): the rest, in order
                rest = memoryview(b"".join(bytes(p) for p in parts))
                while done < want:
                    done += os.write(self.fd, rest[done:])
        except OSError as exc:
            self.failed = exc
            raise
        self.bytes += want

    def write(self, rows: Any, new_strings: list[str], tuples: list) -> None:
        """One flush: strings interned since the last, packed rows, then rare rows, in one write."""
        records: list[tuple[bytes, Any]] = []
        if new_strings:
            records.append((STRS, json_payload(new_strings)))
        if len(rows):
            records.append((ROWS, rows))
        if tuples:
            records.append((TUPL, json_payload(tuples)))
        if records:
            self._write(records)

    def meta(self, fields: dict[str, Any]) -> None:
        self._write([(META, json_payload(fields))])

    def close(self, complete: bool) -> None:
        if self.fd < 0:
            return
        try:
            if self.failed is None:
                self.meta({"complete": complete})
        finally:
            os.close(self.fd)  # the lock goes with it
            self.fd = -1
