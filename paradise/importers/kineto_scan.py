"""Streaming split of a Chrome-trace JSON into batches of whole `traceEvents` items.

Why: a profiler trace can be gigabytes; parsing it as one JSON document builds a Python
object tree many times its size. This scanner reads fixed-size byte chunks, finds the
structure of the JSON with vectorised numpy passes (unescaped quotes give the string
mask, braces/brackets outside strings give the nesting depth), and hands out the bytes of
complete events as small JSON arrays for a fast C decoder (msgspec). Everything outside
the events array (distributedInfo, baseTimeNanoseconds, ...) is kept as the header.
Memory stays at a few chunks whatever the file size.
"""

from __future__ import annotations

import gzip
import json
import re
import zlib
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, BinaryIO

import numpy as np

from paradise.errors import ImportFormatError, TraceNotFound, TruncatedTrace

CHUNK_BYTES = 4 << 20
"""Bytes read per step: large enough that numpy and msgspec dominate, small enough for memory."""
MAX_HEADER_BYTES = 64 << 20
"""Bytes outside traceEvents we are willing to hold; more means this is not a profiler trace."""
KEY_LOOKBACK = 512
"""Bytes kept before a chunk to recognise the `"traceEvents":` key that opens the array."""

FAST_PATH_TRIES = 3
"""Failed guesses of an event boundary after which a file is scanned exactly throughout."""

_QUOTE, _BACKSLASH = 34, 92
_LBRACE, _RBRACE, _LBRACKET, _RBRACKET = b"{}[]"
_DELTA = np.zeros(256, dtype=np.int64)
_DELTA[[ord("{"), ord("[")]] = 1
_DELTA[[ord("}"), ord("]")]] = -1
_KEY = b'"traceEvents"'
_KEY_RE = re.compile(rb'"traceEvents"\s*:\s*$')
_WS = b" \t\r\n"

_BEFORE, _EVENTS, _AFTER = 0, 1, 2


class _Counting:
    """A raw file wrapper counting bytes read, so progress follows the file on disk (.gz too)."""

    def __init__(self, fh: BinaryIO, on_bytes: Callable[[int], None] | None) -> None:
        self.fh = fh
        self.on_bytes = on_bytes

    def read(self, n: int = -1) -> bytes:
        data = self.fh.read(n)
        if self.on_bytes is not None and data:
            self.on_bytes(len(data))
        return data

    def readable(self) -> bool:
        return True

    def close(self) -> None:
        self.fh.close()


class TraceReader:
    """Reads a .json or gzip-compressed trace (detected by magic bytes) in chunks."""

    def __init__(self, path: Path, on_bytes: Callable[[int], None] | None = None) -> None:
        self.path = path
        try:
            raw = open(path, "rb")
        except FileNotFoundError:
            raise TraceNotFound(f"{path}: no such file") from None
        except IsADirectoryError:
            raise ImportFormatError(f"{path}: is a directory, not a trace file") from None
        magic = raw.read(2)
        raw.seek(0)
        self._counting = _Counting(raw, on_bytes)
        self.gzipped = magic == b"\x1f\x8b"
        self._fh: Any = gzip.GzipFile(fileobj=self._counting, mode="rb") if self.gzipped else self._counting

    def read(self, n: int) -> bytes:
        try:
            return self._fh.read(n)
        except EOFError:
            raise TruncatedTrace(f"{self.path}: gzip stream ends early (truncated .gz file)") from None
        except (gzip.BadGzipFile, zlib.error, OSError) as exc:
            raise ImportFormatError(f"{self.path}: damaged gzip data ({exc})") from None

    def close(self) -> None:
        if self.gzipped:
            self._fh.close()
        self._counting.close()


class EventScanner:
    """Yields `[...]` JSON texts of complete trace events; `header` holds the rest afterwards."""

    def __init__(
        self,
        path: Path,
        on_bytes: Callable[[int], None] | None = None,
        decode: Callable[[bytes], Any] = bytes,
        retry_on: tuple[type[Exception], ...] = (),
    ) -> None:
        self.path = path
        self.on_bytes = on_bytes
        self.decode = decode
        self.retry_on = retry_on
        self._fast = bool(retry_on)
        self._fast_failures = 0
        self._carry = b""
        self.header: dict[str, Any] = {}
        self.early_header: dict[str, Any] | None = None
        """Keys written before traceEvents (Kineto puts distributedInfo there), once the array opens."""
        self._in_str = 0
        self._bs_run = 0  # backslashes ending the previous chunk (escape carried over)
        self._depth = 0
        self._phase = _BEFORE
        self._head: list[bytes] = []
        self._head_bytes = 0
        self._tail = b""
        self._pending: list[bytes] = []
        self._seen_any = False
        self.total_bytes = 0

    # -- public ---------------------------------------------------------------------------------
    def batches(self) -> Iterator[Any]:
        """decode() of each batch of whole events, in file order."""
        reader = TraceReader(self.path, self.on_bytes)
        try:
            while True:
                chunk = reader.read(CHUNK_BYTES)
                if not chunk:
                    break
                self.total_bytes += len(chunk)
                if not self._seen_any:
                    self._check_start(chunk)
                yield from self._step(chunk)
            if self._carry:  # the tail the fast path left: last events, `]`, trailing keys
                data, self._carry = self._carry, b""
                yield from self._robust(data)
        finally:
            reader.close()
        self._finish()

    # -- internals ------------------------------------------------------------------------------
    def _step(self, chunk: bytes) -> Iterator[Any]:
        """Fast path inside traceEvents: cut after the last `},` and let the decoder judge.

        The carried bytes start at an event boundary, so if `[` + text + `]` decodes, the text
        is whole events and the cut was a boundary too; otherwise (a `},` inside an event or
        a string, or the array's end) the same bytes go through the exact scan.
        """
        if self._phase == _BEFORE and self._fast:
            # scan exactly only up to the events array (found by its key), not the whole chunk:
            # in a small trace the first chunk is nearly the whole file
            key = chunk.find(_KEY)
            if 0 <= key < len(chunk) - KEY_LOOKBACK:
                head, chunk = chunk[: key + KEY_LOOKBACK], chunk[key + KEY_LOOKBACK :]
                yield from self._robust(head)
        if not (self._phase == _EVENTS and self._fast):
            yield from self._robust(chunk)
            return
        carry, self._carry = self._carry, b""
        cut = chunk.rfind(b"},")
        if cut < 0 and carry:  # no boundary in the chunk: one may straddle carry and chunk
            chunk, carry = carry + chunk, b""
            cut = chunk.rfind(b"},")
        if cut >= 0:
            try:  # one copy: the batch text is built from the carry and a view of the chunk
                out = self.decode(b"".join((b"[", carry, memoryview(chunk)[: cut + 1], b"]")))
            except self.retry_on:
                self._fast_failures += 1
                self._fast = self._fast_failures < FAST_PATH_TRIES
            else:
                self._carry = chunk[cut + 2 :]
                yield out
                return
        yield from self._robust(carry + chunk if carry else chunk)

    def _robust(self, data: bytes) -> Iterator[Any]:
        text = self._feed(data)
        if text is not None:
            yield self.decode(text)
        if self._phase == _EVENTS and self._fast:
            # what is pending starts at an event boundary: rescan it from there next time
            carry = b"".join(self._pending).lstrip(_WS)
            self._carry = carry[1:] if carry.startswith(b",") else carry
            self._pending = []
            self._in_str, self._bs_run, self._depth = 0, 0, 2

    def _check_start(self, chunk: bytes) -> None:
        stripped = chunk.lstrip(_WS + b"\xef\xbb\xbf")
        if not stripped:
            return
        self._seen_any = True
        first = stripped[:1]
        if first == b"{":
            return
        if first == b"[":
            raise ImportFormatError(
                f"{self.path}: a JSON array, not a PyTorch profiler (Kineto) trace "
                "(a memory-timeline export or a bare event list?)"
            )
        raise ImportFormatError(f"{self.path}: not JSON (starts with {stripped[:16]!r}), not a Kineto trace")

    def _structure(self, a: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Positions of braces/brackets outside strings, their byte, and the depth after each."""
        q = np.flatnonzero(a == _QUOTE)
        bs = np.flatnonzero(a == _BACKSLASH)
        if q.size and (bs.size or self._bs_run):
            cand = np.flatnonzero(np.isin(q, bs + 1))
            if q[0] == 0 and self._bs_run % 2 == 1:
                cand = np.union1d(cand, [0])
            if cand.size:
                keep = np.ones(q.size, dtype=np.bool_)
                for ci in cand.tolist():  # rare: a quote right after a backslash
                    p = int(q[ci])
                    i = p - 1
                    while i >= 0 and a[i] == _BACKSLASH:
                        i -= 1
                    run = p - 1 - i + (self._bs_run if i < 0 else 0)
                    if run % 2 == 1:
                        keep[ci] = False
                q = q[keep]
        s = np.flatnonzero((a == _LBRACE) | (a == _RBRACE) | (a == _LBRACKET) | (a == _RBRACKET))
        if s.size and q.size:
            before = np.searchsorted(q, s)
            s = s[((before + self._in_str) & 1) == 0]
        elif s.size and self._in_str:
            s = s[:0]
        chars = a[s]
        depth = self._depth + np.cumsum(_DELTA[chars])
        # carry-over state
        self._in_str = (self._in_str + int(q.size)) & 1
        n = a.size
        i = n - 1
        while i >= 0 and a[i] == _BACKSLASH:
            i -= 1
        run = n - 1 - i
        self._bs_run = run + (self._bs_run if i < 0 else 0)
        if depth.size:
            if int(depth.min()) < 0:
                raise ImportFormatError(f"{self.path}: malformed JSON (unbalanced brackets)")
            self._depth = int(depth[-1])
        return s, chars, depth

    def _add_head(self, piece: bytes) -> None:
        self._head.append(piece)
        self._head_bytes += len(piece)
        if self._head_bytes > MAX_HEADER_BYTES:
            raise ImportFormatError(
                f"{self.path}: no traceEvents array in the first {MAX_HEADER_BYTES >> 20} MiB "
                "outside events; not a PyTorch profiler (Kineto) trace"
            )

    def _feed(self, chunk: bytes) -> bytes | None:
        a = np.frombuffer(chunk, dtype=np.uint8)
        s, chars, depth = self._structure(a)
        start = 0
        if self._phase == _BEFORE:
            opens = np.flatnonzero((chars == ord("[")) & (depth == 2))
            found = -1
            for k in opens.tolist():
                p = int(s[k])
                look = (self._tail + chunk[max(0, p - KEY_LOOKBACK) : p])[-KEY_LOOKBACK:]
                if _KEY_RE.search(look):
                    found = p
                    break
            if found < 0:
                self._add_head(chunk)
                self._tail = (self._tail + chunk[-KEY_LOOKBACK:])[-KEY_LOOKBACK:]
                if depth.size and int(depth[-1]) == 0 and self._seen_any:
                    self._phase = _AFTER  # object closed without traceEvents; _finish reports it
                return None
            self._add_head(chunk[: found + 1])
            self._phase = _EVENTS
            try:
                early = json.loads(b"".join(self._head) + b"]}")
                self.early_header = early if isinstance(early, dict) else None
            except (ValueError, RecursionError):
                self.early_header = None
            start = found + 1
            sel = s > found
            s, chars, depth = s[sel], chars[sel], depth[sel]
        if self._phase == _EVENTS:
            closes = np.flatnonzero((chars == ord("]")) & (depth == 1))
            if closes.size:
                c = int(s[closes[0]])
                self._pending.append(chunk[start:c])
                self._phase = _AFTER
                self._add_head(chunk[c:])
                return self._take_pending()
            ends = np.flatnonzero((chars == ord("}")) & (depth == 2))
            if not ends.size:
                self._pending.append(chunk[start:])
                return None
            last = int(s[ends[-1]])
            self._pending.append(chunk[start : last + 1])
            out = self._take_pending()
            self._pending = [chunk[last + 1 :]]
            return out
        self._add_head(chunk)  # _AFTER
        return None

    def _take_pending(self) -> bytes | None:
        body = b"".join(self._pending)
        self._pending = []
        body = body.lstrip(_WS)
        if body.startswith(b","):
            body = body[1:]
        if not body.strip(_WS):
            return None
        return b"[" + body + b"]"

    def _finish(self) -> None:
        if not self._seen_any:
            raise ImportFormatError(f"{self.path}: empty file, not a Kineto trace")
        if self._phase == _EVENTS:
            raise TruncatedTrace(f"{self.path}: file ends inside traceEvents (truncated?)")
        text = b"".join(self._head)
        try:
            header = json.loads(text)
        except (ValueError, RecursionError):
            if self._depth > 0 or self._in_str:
                raise TruncatedTrace(
                    f"{self.path}: JSON ends before its closing brace (truncated?)"
                ) from None
            raise ImportFormatError(f"{self.path}: malformed JSON outside traceEvents") from None
        if isinstance(header, dict) and "traceEvents" in header and not isinstance(header["traceEvents"], list):
            kind = type(header["traceEvents"]).__name__
            raise ImportFormatError(f"{self.path}: traceEvents is a {kind}, not an array of events")
        if self._phase == _BEFORE or "traceEvents" not in header:
            if isinstance(header, dict) and "nodes" in header:
                raise ImportFormatError(
                    f"{self.path}: a PyTorch execution trace (has 'nodes'), not a profiler (Kineto) trace"
                )
            raise ImportFormatError(f"{self.path}: JSON without a traceEvents array, not a Kineto trace")
        header.pop("traceEvents", None)
        self.header = header
