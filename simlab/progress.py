"""Progress of long work on stderr: a rich bar on a terminal, periodic plain log lines
otherwise (pipes, CI logs), nothing when disabled."""
from __future__ import annotations

import os
import sys
import time
from contextlib import contextmanager
from typing import Callable, Iterator

from simlab.interrupts import raise_pending

LOG_INTERVAL_ENV = "SIMLAB_PROGRESS_SECONDS"
DEFAULT_LOG_INTERVAL = 10.0


def _log_interval() -> float:
    try:
        v = float(os.environ.get(LOG_INTERVAL_ENV, DEFAULT_LOG_INTERVAL))
    except ValueError:
        return DEFAULT_LOG_INTERVAL
    return v if v >= 0 else DEFAULT_LOG_INTERVAL


@contextmanager
def progress_lines(total: int, description: str, interval: float | None = None,
                   stream=None) -> Iterator[Callable[[int], None]]:
    """Yield ``advance(n, resumed=False)``; writes ``description: done/total (pct), elapsed,
    eta`` at most every ``interval`` seconds, and once at the end (unless the last line already
    said it).  Work advanced with ``resumed=True`` (found done, as a resumed run's chunks) counts
    as done but not towards the rate the time left is projected from: a run resumed at half way
    said "about 14 s left" when 42 s remained."""
    out = stream if stream is not None else sys.stderr
    every = _log_interval() if interval is None else interval
    t0 = time.monotonic()
    state = {"done": 0, "resumed": 0, "last": t0, "said": None}

    def line(now: float) -> None:
        done, el = state["done"], now - t0
        pct = 100.0 * done / total if total else 100.0
        worked = done - state["resumed"]
        eta = f", about {el * (total - done) / worked:.0f} s left" if 0 < worked and done < total else ""
        print(f"{description}: {done:,}/{total:,} ({pct:.0f}%), {el:.0f} s{eta}", file=out, flush=True)
        state["said"] = done

    def advance(n: int, resumed: bool = False) -> None:
        raise_pending()  # a swallowed interrupt stops the work here (simlab.interrupts)
        state["done"] += n
        if resumed:
            state["resumed"] += n
        now = time.monotonic()
        if now - state["last"] >= every:
            state["last"] = now
            line(now)

    yield advance
    if state["said"] != state["done"]:   # the final count, once
        line(time.monotonic())


@contextmanager
def progress_bar(total: int, description: str, enabled: bool = True) -> Iterator[Callable[[int], None]]:
    """Yield ``advance(n, resumed=False)``: a rich progress bar on stderr when it is a terminal,
    periodic plain lines when it is not (every ``$SIMLAB_PROGRESS_SECONDS``, default 10 s).
    ``resumed``: work found done (``progress_lines``), given before any other."""
    if not enabled:
        yield lambda n, resumed=False: None
        return
    if not sys.stderr.isatty():
        with progress_lines(total, description) as advance:
            yield advance
        return
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeRemainingColumn

    with Progress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(),
                  TimeRemainingColumn(), transient=True) as bar:
        task = bar.add_task(description, total=total)

        def advance(n: int, resumed: bool = False) -> None:
            raise_pending()
            if resumed:   # its speed samples start after it (rich projects the time left from them)
                bar.reset(task, completed=bar.tasks[task].completed + n)
            else:
                bar.advance(task, n)

        yield advance
