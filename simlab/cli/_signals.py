"""Termination signals as exceptions, so that a stopped command cleans up.

By default SIGTERM (``kill``, a batch scheduler's time limit) and SIGHUP (a closed terminal)
end Python at once: no ``with`` block unwinds, so the loky or dask worker processes of a
long qualification are left running -- measured: still computing minutes after their parent
died -- and a checkpoint lock is never released.  Inside :func:`signals_as_interrupts` these
signals raise :class:`Terminated`, a ``KeyboardInterrupt``, in the main thread: the
executor's ``with`` shuts its workers down, locks are released, temporary files removed, and
the finished batches stay in a ``--checkpoint`` (each is fsynced as it ends).  Ctrl-C
(SIGINT) already raises ``KeyboardInterrupt``; :func:`interrupt_exit_code` maps both to the
shell's ``128 + signal``.
"""
from __future__ import annotations

import contextlib
import signal
import threading

from simlab import interrupts
from simlab.interrupts import Terminated

CAUGHT = (signal.SIGTERM, signal.SIGHUP)


def _raise(signum, frame):
    interrupts.note(signum)
    raise Terminated(signum)


def _interrupt(signum, frame):
    interrupts.note(signum)  # Python's own handler, remembered (``simlab.interrupts``)
    raise KeyboardInterrupt


@contextlib.contextmanager
def signals_as_interrupts():
    """SIGTERM and SIGHUP raise :class:`Terminated` while the block runs, and every signal,
    SIGINT too, is noted in ``simlab.interrupts`` so that one a library call swallowed is
    raised again (main thread only; elsewhere Python cannot install handlers and nothing
    changes)."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    interrupts.clear()
    previous = {s: signal.signal(s, _raise) for s in CAUGHT}
    if signal.getsignal(signal.SIGINT) is signal.default_int_handler:  # not where a caller chose
        previous[signal.SIGINT] = signal.signal(signal.SIGINT, _interrupt)
    try:
        yield
    finally:
        for s, handler in previous.items():
            signal.signal(s, handler)


def interrupt_exit_code(exc: KeyboardInterrupt) -> tuple[str, int]:
    """``(signal name, exit code 128 + signal)`` of an interrupt."""
    signum = exc.signum if isinstance(exc, Terminated) else int(signal.SIGINT)
    return signal.Signals(signum).name, 128 + signum
