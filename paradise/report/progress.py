"""Progress bars that appear only when work takes longer than a second (rich, on stderr); the bar
names the stage at work ("analyzing: placement"), so a bar that waits on one long stage says which."""

from __future__ import annotations

import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # rich loads only once a bar shows: short commands start faster without it
    from rich.progress import Progress

SHOW_AFTER_S = 1.0
"""Short imports stay silent; a bar appears once work has run this long."""
REFRESH_PER_SECOND = 10.0
"""Timed redraws of a shown bar (its time column moves between steps); a new stage is drawn at once."""


class _LazyBar:
    def __init__(self, description: str, total: float | None) -> None:
        self.label = description
        self.description = description
        self.total = total
        self.done = 0.0
        self.start = time.monotonic()
        self.progress: Progress | None = None
        self.task = None

    def stage(self, name: str) -> None:
        """Names the stage now at work: the bar reads `label: name`."""
        self.description = f"{self.label}: {name}"
        self.advance(0.0)
        if self.progress is not None:  # drawn now, not at the next timed redraw: a short stage shows too
            self.progress.refresh()

    def advance(self, amount: float = 1.0) -> None:
        self.done += amount
        if self.progress is None and time.monotonic() - self.start > SHOW_AFTER_S:
            from rich.console import Console
            from rich.progress import BarColumn, Progress, TaskProgressColumn, TextColumn, TimeRemainingColumn

            self.progress = Progress(
                TextColumn("{task.description}"),
                BarColumn(),
                TaskProgressColumn(),
                TimeRemainingColumn(),
                console=Console(stderr=True),
                transient=True,
                refresh_per_second=REFRESH_PER_SECOND,
            )
            self.progress.start()
            self.task = self.progress.add_task(self.description, total=self.total, completed=self.done)
        elif self.progress is not None:
            self.progress.update(self.task, completed=self.done, description=self.description)

    def close(self) -> None:
        if self.progress is not None:
            self.progress.stop()


@contextmanager
def progress_bar(description: str, total: float | None) -> Iterator[_LazyBar]:
    """Yields an object with advance(n) and stage(name); the bar shows only after SHOW_AFTER_S."""
    bar = _LazyBar(description, total)
    try:
        yield bar
    finally:
        bar.close()
