"""Which processor a study's simulation runs on: ``cpu`` (default) or ``gpu``.

Functions that simulate take ``device=None``, meaning the device selected by the
innermost ``with using(...)`` block (``cpu`` outside any): the command line selects it
once (``--device gpu``) for whatever the command calls.  Results do not depend on the
device (same counter-based streams, same integer tallies; tested), so the device is
not part of a run's identity.
"""
from __future__ import annotations

import contextlib
import contextvars

DEVICES = ("cpu", "gpu")
_selected = contextvars.ContextVar("simlab_device", default="cpu")


def check(device: str) -> str:
    if device not in DEVICES:
        raise ValueError(f"device must be one of {DEVICES}, got {device!r}")
    return device


def resolve(device: str | None) -> str:
    """``device``, or the selected one when it is None."""
    return _selected.get() if device is None else check(device)


@contextlib.contextmanager
def using(device: str):
    """Select ``device`` for the calls inside the block."""
    token = _selected.set(check(device))
    try:
        yield device
    finally:
        _selected.reset(token)
