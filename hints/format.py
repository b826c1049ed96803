"""Hint files: the `paradise-hints/1` envelope, atomic writing, and validation on load.

Every hint file is JSON: {"format", "kind", "provenance", "justified_by", "predicted_gain", ...payload}.
Consumers accept the majors they know and refuse others, and refuse hints made for another
program or PE count, with a message naming the file and the problem.
"""

from __future__ import annotations

import datetime as _dt
import json
import os
import tempfile
from importlib import resources
from pathlib import Path
from typing import Any

HINTS_FORMAT = "paradise-hints/1"
KNOWN_MAJORS = ("1",)
KINDS = ("mapping", "schedule", "comm", "checkpoint")


class HintError(Exception):
    """A hint file that cannot be used here; message names the file and the problem.

    hints/ must not import paradise beyond its format module, so the CLI maps this onto
    paradise.errors.HintMismatch.
    """


ADVISORY_KINDS = frozenset({"schedule"})
"""Hint kinds that no paradise runtime consumer reads: schedule.json is advice for runtimes with
message priorities (Charm++ C++); charm4py's Python API has none. Written only on request."""


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
    if kind not in KINDS:
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


def load_hint(
    path: str | os.PathLike,
    kind: str,
    *,
    program: str | None = None,
    pes: int | None = None,
) -> dict[str, Any]:
    """Reads and validates a hint file; refuses other formats, kinds, programs or PE counts."""
    p = Path(path)
    try:
        doc = json.loads(p.read_text())
    except FileNotFoundError:
        raise HintError(f"{p}: no such hint file") from None
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise HintError(f"{p}: damaged hint file (not valid JSON: {exc.msg if hasattr(exc, 'msg') else exc})") from None
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
    if program is not None and prov.get("program") not in (None, "", program):
        raise HintError(f"{p}: made for program {prov.get('program')!r}, not {program!r}")
    if pes is not None and prov.get("pes") not in (None, pes):
        raise HintError(f"{p}: made for {prov.get('pes')} PEs, this run has {pes}")
    return doc
