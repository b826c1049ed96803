"""DIR/tune.json: every run (hints, command, time, prediction) and every step's result, written
atomically after each, so that a killed tune resumes where it stopped without measuring again."""

from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path
from typing import Any

VERSION = 1
FILE = "tune.json"


class Record:
    """The tune's record; `runs` and `steps` are keyed by the loop's deterministic run keys."""

    def __init__(self, folder: Path, data: dict[str, Any]) -> None:
        self.folder, self.data = folder, data

    @classmethod
    def open(cls, folder: Path, command: dict[str, Any]) -> Record:
        """The record in `folder` (resumed when it holds one for the same command) or a new one."""
        path = folder / FILE
        if path.is_file():
            data = json.loads(path.read_text())
            return cls(folder, data)
        return cls(folder, {"version": VERSION, "command": command, "runs": {}, "steps": {},
                            "iterations": [], "best": {"kinds": [], "files": []}, "stopped": None})

    @property
    def path(self) -> Path:
        return self.folder / FILE

    @property
    def runs(self) -> dict[str, Any]:
        return self.data["runs"]

    @property
    def steps(self) -> dict[str, Any]:
        return self.data["steps"]

    def spent_s(self) -> float:
        """Seconds of runs and steps so far, this session and the ones before it."""
        return sum(r["outcome"]["wall_s"] for r in self.runs.values()) + sum(
            s.get("seconds", 0.0) for s in self.steps.values())

    def save(self) -> None:
        """Written to a temporary file beside it and renamed: a kill leaves the old or the new record."""
        fd, tmp = tempfile.mkstemp(prefix=".tune.", suffix=".tmp", dir=self.folder)
        try:
            with os.fdopen(fd, "w") as fh:
                json.dump(self.data, fh, indent=1, sort_keys=True, default=float)
            os.replace(tmp, self.path)
        except BaseException:
            Path(tmp).unlink(missing_ok=True)
            raise
