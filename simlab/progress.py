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
    """Yield ``advance(n)``; writes ``description: done/total (pct), elapsed, eta`` at most
    every ``interval`` seconds, and once at the end."""
    out = stream if stream is not None else sys.stderr
    every = _log_interval() if interval is None else interval
    t0 = time.monotonic()
    state = {"done": 0, "last": t0}

    def line(now: float) -> None:
        done, el = state["done"], now - t0
        pct = 100.0 * done / total if total else 100.0
        eta = f", about {el * (total - done) / done:.0f} s left" if 0 < done < total else ""
        print(f"{description}: {done:,}/{total:,} ({pct:.0f}%), {el:.0f} s{eta}", file=out, flush=True)

    def advance(n: int) -> None:
        raise_pending()  # a swallowed interrupt stops the work here (simlab.interrupts)
        state["done"] += n
        now = time.monotonic()
        if now - state["last"] >= every:
            state["last"] = now
            line(now)

    yield advance
    line(time.monotonic())


@contextmanager
def progress_bar(total: int, description: str, enabled: bool = True) -> Iterator[Callable[[int], None]]:
    """Yield ``advance(n)``: a rich progress bar on stderr when it is a terminal, periodic
    plain lines when it is not (every ``$SIMLAB_PROGRESS_SECONDS``, default 10 s)."""
    if not enabled:
        yield lambda n: None
        return
    if not sys.stderr.isatty():
        with progress_lines(total, description) as advance:
            yield advance
        return
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeRemainingColumn

    with Progress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(),
                  TimeRemainingColumn(), transient=True) as bar:
        task = bar.add_task(description, total=total)

        def advance(n: int) -> None:
            raise_pending()
            bar.advance(task, n)

        yield advance
