"""Hint files: the `paradise-hints/1` envelope, atomic writing, and validation on load.

Every hint file is JSON: {"format", "kind", "provenance", "justified_by", "predicted_gain", ...payload}.
Consumers accept the majors they know and refuse others, and refuse hints made for another
program or PE count, with a message naming the file and the problem.
"""

from __future__ import annotations

import datetime as _dt
import json
import os
import stat
import tempfile
from importlib import resources
from pathlib import Path
from typing import Any

HINTS_FORMAT = "paradise-hints/1"
KNOWN_MAJORS = ("1",)
MAX_HINT_BYTES = 64 << 20
"""Largest hint file read (a mapping of a million elements is about 20 MB): reading is bounded."""


class HintError(Exception):
    """A hint file that cannot be used here; message names the file and the problem.

    hints/ must not import paradise beyond its format module, so the CLI maps this onto
    paradise.errors.HintMismatch.
    """




def envelope_kinds() -> tuple[str, ...]:
    """The `kind` values a hint file may hold: those of the registry (hints.kinds)."""
    from hints.kinds import KINDS

    return tuple(dict.fromkeys(k.envelope for k in KINDS.values()))


def advisory_kinds() -> frozenset[str]:
    """Hint files no paradise runtime consumer reads (the registry says why): written only on request."""
    from hints.kinds import KINDS, Absent

    return frozenset(k.file.removesuffix(".json") for k in KINDS.values() if isinstance(k.consumer, Absent))


def provenance(*, trace_fingerprint: str, program: str, pes: int | None, source: str) -> dict[str, Any]:
    from importlib.metadata import PackageNotFoundError, version

    try:
        pv = version("paradise")
    except PackageNotFoundError:
        pv = "unknown"
    return {
        "trace_fingerprint": trace_fingerprint,
        "program": program,
        "pes": pes,
        "source": source,
        "paradise_version": pv,
        "generated_at": _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"),
    }


def make_hint(
    kind: str,
    payload: dict[str, Any],
    *,
    provenance: dict[str, Any],
    justified_by: list[dict[str, Any]],
    predicted_gain: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """The envelope around a hint payload."""
    if kind not in envelope_kinds():
        raise ValueError(f"unknown hint kind {kind!r}")
    return {
        "format": HINTS_FORMAT,
        "kind": kind,
        "provenance": provenance,
        "justified_by": justified_by,
        "predicted_gain": predicted_gain or {},
        **payload,
    }


def write_hint(directory: str | os.PathLike, doc: dict[str, Any], *, force: bool = False) -> Path:
    """Writes <dir>/<kind>.json atomically with sorted keys; never replaces without force."""
    d = Path(directory)
    d.mkdir(parents=True, exist_ok=True)
    target = d / f"{doc['kind']}.json"
    if target.exists() and not force:
        raise FileExistsError(f"{target}: already exists; pass --force to overwrite it")
    fd, tmp = tempfile.mkstemp(dir=d, prefix=f".{doc['kind']}.", suffix=".tmp")
    with os.fdopen(fd, "w") as fh:
        json.dump(doc, fh, indent=1, sort_keys=True)
        fh.write("\n")
    os.replace(tmp, target)
    return target


def schema(kind: str) -> dict[str, Any]:
    return json.loads(resources.files("hints").joinpath("schemas", f"{kind}-1.json").read_text())


def _check_required(path: Path, doc: dict[str, Any], sch: dict[str, Any]) -> None:
    """Checks the schema's required keys and top-level types (no jsonschema dependency)."""
    types = {"object": dict, "array": list, "string": str, "integer": int, "number": (int, float), "boolean": bool}
    for key in sch.get("required", []):
        if key not in doc:
            raise HintError(f"{path}: missing required field {key!r}")
    for key, spec in sch.get("properties", {}).items():
        t = spec.get("type")
        if key in doc and isinstance(t, str) and t in types and not isinstance(doc[key], types[t]):
            raise HintError(f"{path}: field {key!r} should be of type {t}")


def index_tuple(key: str) -> tuple[int, ...] | None:
    """An element's index text ('[0,1]') as a tuple; None unless a short JSON list of
    non-negative integers."""
    if not isinstance(key, str) or len(key) > 200:
        return None
    try:
        idx = json.loads(key)
    except (ValueError, RecursionError):
        return None
    if not isinstance(idx, list) or not idx or any(type(i) is not int or i < 0 for i in idx):
        return None
    return tuple(idx)


def load_hint(
    path: str | os.PathLike,
    kind: str,
    *,
    program: str | None = None,
    pes: int | None = None,
) -> dict[str, Any]:
    """Reads and validates a hint file; refuses other formats, kinds, programs or PE counts."""
    p = Path(path)
    doc = _read_json(p)
    if not isinstance(doc, dict) or "format" not in doc:
        raise HintError(f"{p}: not a paradise hint file (no 'format' field)")
    fmt = str(doc["format"])
    name, _, major = fmt.partition("/")
    if name != "paradise-hints" or major not in KNOWN_MAJORS:
        raise HintError(f"{p}: hint format {fmt!r} is not supported (this paradise reads {HINTS_FORMAT})")
    if doc.get("kind") != kind:
        raise HintError(f"{p}: is a {doc.get('kind')!r} hint, expected {kind!r}")
    try:
        _check_required(p, doc, schema(kind))
    except FileNotFoundError:
        pass
    prov = doc.get("provenance", {})
    if not isinstance(prov, dict):
        raise HintError(f"{p}: field 'provenance' should be an object")
    for where in (prov, doc):  # the payload's own `program` / `pes` are checked like provenance's
        if program is not None and where.get("program") not in (None, "", program):
            raise HintError(f"{p}: made for program {where.get('program')!r}, not {program!r}")
        made_for = where.get("pes")
        if pes is not None and made_for is not None and (type(made_for) is not int or made_for != pes):
            raise HintError(f"{p}: made for {made_for!r} PEs, this run has {pes}")
    return doc


def _read_json(p: Path) -> Any:
    """The file's JSON, read without blocking (a FIFO) or reading without end (/dev/zero): regular
    files up to MAX_HINT_BYTES only; any damage is a HintError naming the file."""
    try:
        fd = os.open(p, os.O_RDONLY | os.O_NONBLOCK)
    except FileNotFoundError:
        raise HintError(f"{p}: no such hint file") from None
    except OSError as exc:
        raise HintError(f"{p}: cannot read hint file ({exc.strerror})") from None
    st = os.fstat(fd)
    if not stat.S_ISREG(st.st_mode):
        os.close(fd)
        raise HintError(f"{p}: not a regular file")
    with os.fdopen(fd, "rb") as fh:
        if st.st_size > MAX_HINT_BYTES:
            raise HintError(f"{p}: {st.st_size} bytes, larger than any hint file ({MAX_HINT_BYTES} at most)")
        try:
            data = fh.read(MAX_HINT_BYTES + 1)
        except OSError as exc:
            raise HintError(f"{p}: cannot read hint file ({exc.strerror})") from None
    if len(data) > MAX_HINT_BYTES:
        raise HintError(f"{p}: larger than any hint file ({MAX_HINT_BYTES} bytes at most)")
    try:
        return json.loads(data.decode("utf-8"))
    except json.JSONDecodeError as exc:
        raise HintError(f"{p}: damaged hint file (not valid JSON: {exc.msg})") from None
    except UnicodeDecodeError:
        raise HintError(f"{p}: damaged hint file (not UTF-8 text)") from None
    except RecursionError:
        raise HintError(f"{p}: damaged hint file (JSON nested too deeply)") from None
    except ValueError as exc:  # e.g. an integer of more digits than Python converts
        raise HintError(f"{p}: damaged hint file ({exc})") from None
