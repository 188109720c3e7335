"""Interrupts that a library call swallowed, raised again where the work can stop.

A signal handler raises ``KeyboardInterrupt`` in whatever Python frame runs when the signal
arrives.  Inside a ctypes callback -- numba's LLVM object cache notifies one while it compiles
-- Python cannot propagate it ("Exception ignored on calling ctypes callback function"): the
interrupt is lost, the compile then fails with an unrelated error, and a loop that records
errors and goes on (``simlab bench methods``) finished with exit 0.  The front door's handlers
(``simlab/cli/_signals.py``) therefore also :func:`note` each signal here; progress callbacks
and loops that catch ``Exception`` call :func:`raise_pending`, and so does the front door when
the command returns.
"""
from __future__ import annotations

import signal

_received: list[int] = []


class Terminated(KeyboardInterrupt):
    """The process was asked to stop by ``signum``."""

    def __init__(self, signum: int):
        super().__init__(signal.Signals(signum).name)
        self.signum = signum


def note(signum: int) -> None:
    _received.append(int(signum))


def clear() -> None:
    _received.clear()


def raise_pending() -> None:
    """Raise the interrupt of the first signal noted since :func:`clear` (one a library call
    may have swallowed), if any."""
    if _received:
        signum = _received[0]
        raise KeyboardInterrupt() if signum == signal.SIGINT else Terminated(signum)


__all__ = ["Terminated", "clear", "note", "raise_pending"]
