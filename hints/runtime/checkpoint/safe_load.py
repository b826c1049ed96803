"""Loading a checkpoint as data, never as code, and checking it before use.

DCP keeps its `.metadata` as a pickle and loads non-tensor items with torch.load(weights_only=False):
a checkpoint folder could run code. Here the metadata goes through an unpickler that builds only
DCP's metadata classes (an allow-list), non-tensor items and RNG files load with
torch.load(weights_only=True), and `problem()` checks that every data file the metadata names is
there and long enough, so a COMPLETE marker over missing or truncated data is caught before loading.
"""

from __future__ import annotations

import io
import os
import pickle
from pathlib import Path
from typing import Any

import numpy as np
import torch
from torch.distributed.checkpoint import FileSystemReader
from torch.distributed.checkpoint import metadata as dcp_md
from torch.distributed.checkpoint.default_planner import DefaultLoadPlanner
from torch.distributed.checkpoint.filesystem import _StorageInfo

METADATA = ".metadata"
_ALLOWED = {
    **{("torch.distributed.checkpoint.metadata", n): getattr(dcp_md, n) for n in (
        "Metadata", "MetadataIndex", "StorageMeta", "TensorStorageMetadata", "BytesStorageMetadata",
        "ChunkStorageMetadata", "TensorProperties", "_MEM_FORMAT_ENCODING")},
    ("torch.distributed.checkpoint.filesystem", "_StorageInfo"): _StorageInfo,
    ("torch", "Size"): torch.Size,
    ("torch.serialization", "_get_layout"): torch.serialization._get_layout,
    ("pathlib", "PosixPath"): Path,
    ("pathlib", "PurePosixPath"): Path,
}  # fmt: skip
"""What DCP's metadata pickle may build (seen in torch 2.13's `.metadata`); dtypes are added below."""
_OLD_RNG_GLOBALS = [np.ndarray, np.dtype, np.dtype(np.uint32).__class__]
"""numpy's RNG state as earlier versions saved it (an ndarray); see _reconstruct below."""


class CheckpointUnusable(Exception):
    """A checkpoint that cannot be loaded; the message says which and why."""


class _MetadataUnpickler(pickle.Unpickler):
    def find_class(self, module: str, name: str) -> Any:
        if (module, name) in _ALLOWED:
            return _ALLOWED[(module, name)]
        if module == "torch" and isinstance(getattr(torch, name, None), torch.dtype):
            return getattr(torch, name)
        raise pickle.UnpicklingError(f"{module}.{name} is not allowed in checkpoint metadata")


def read_metadata(path: Path) -> dcp_md.Metadata:
    """The DCP metadata of checkpoint folder `path`, built from the allow-list only."""
    try:
        with open(path / METADATA, "rb") as fh:
            md = _MetadataUnpickler(fh).load()
    except FileNotFoundError:
        raise CheckpointUnusable(f"{path}: no DCP metadata") from None
    except Exception as exc:  # noqa: BLE001 - any damage to the pickle means the same: unusable
        raise CheckpointUnusable(f"{path}: damaged DCP metadata ({type(exc).__name__}: {exc})") from None
    if not isinstance(md, dcp_md.Metadata) or not isinstance(md.storage_data, dict):
        raise CheckpointUnusable(f"{path}: damaged DCP metadata (not DCP's Metadata)")
    return md


def problem(path: Path) -> str | None:
    """Why checkpoint folder `path` cannot be loaded (metadata, data files, their lengths), or None."""
    try:
        md = read_metadata(path)
    except CheckpointUnusable as exc:
        return str(exc)
    need: dict[str, int] = {}
    for info in md.storage_data.values():
        rel = getattr(info, "relative_path", None)
        if not isinstance(rel, str) or os.path.basename(rel) != rel or rel in ("", ".", ".."):
            return f"{path}: damaged DCP metadata (data file {rel!r})"
        need[rel] = max(need.get(rel, 0), int(info.offset) + int(info.length))
    for rel, size in sorted(need.items()):
        f = path / rel
        if not f.is_file():
            return f"{path}: data file {rel} is missing"
        if f.stat().st_size < size:
            return f"{path}: data file {rel} is truncated ({f.stat().st_size} of {size} bytes)"
    return None


class SafeReader(FileSystemReader):
    """DCP's file reader with the allow-listed metadata unpickler."""

    def read_metadata(self, *args: Any, **kwargs: Any) -> dcp_md.Metadata:
        md = read_metadata(Path(self.path))
        if getattr(md, "storage_meta", None) is None:
            md.storage_meta = dcp_md.StorageMeta()
        md.storage_meta.load_id = self.load_id
        return md


class SafePlanner(DefaultLoadPlanner):
    """DCP's load planner with non-tensor items read by torch.load(weights_only=True)."""

    def load_bytes(self, read_item: Any, value: io.BytesIO) -> None:
        torch.load(value, weights_only=True)  # refuses anything but plain data and tensors
        value.seek(0)
        super().load_bytes(read_item, value)  # the same bytes, which hold plain data only


def plain_rng(st: dict[str, Any]) -> dict[str, Any]:
    """An RNG state (rng.rng_state()) with numpy's key as a list: loadable with weights_only=True."""
    name, key, pos, has_gauss, cached = st["numpy"]
    return {**st, "numpy": (str(name), np.asarray(key).tolist(), int(pos), int(has_gauss), float(cached))}


def load_rng_file(path: Path) -> dict[str, Any]:
    """A saved {"rng", "step"} file, as plain data (numpy arrays of earlier files allowed)."""
    reconstruct = (np._core if hasattr(np, "_core") else np.core).multiarray._reconstruct
    try:
        with torch.serialization.safe_globals([*_OLD_RNG_GLOBALS, reconstruct]):
            doc = torch.load(path, weights_only=True)
    except FileNotFoundError:
        raise CheckpointUnusable(f"{path}: missing") from None
    except Exception as exc:  # noqa: BLE001 - unreadable or refused: the checkpoint is unusable
        raise CheckpointUnusable(f"{path}: unreadable ({type(exc).__name__})") from None
    if not isinstance(doc, dict) or not isinstance(doc.get("rng"), dict):
        raise CheckpointUnusable(f"{path}: not an RNG state file")
    return doc
