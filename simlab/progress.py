"""Progress display for long work (rich), silent when disabled or not on a terminal."""
from __future__ import annotations

import sys
from contextlib import contextmanager
from typing import Callable, Iterator


@contextmanager
def progress_bar(total: int, description: str, enabled: bool = True) -> Iterator[Callable[[int], None]]:
    """Yield ``advance(n)``; draws a rich progress bar on stderr when enabled and interactive."""
    if not enabled or not sys.stderr.isatty():
        yield lambda n: None
        return
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeRemainingColumn

    with Progress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(),
                  TimeRemainingColumn(), transient=True) as bar:
        task = bar.add_task(description, total=total)
        yield lambda n: bar.advance(task, n)
