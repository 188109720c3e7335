"""The protocol's conventions that need no numpy: the level and margin checks, the name of a
calibrated method, and how option values are read.

They live apart from ``methods.protocol`` so that a front end can check its input against a
method's catalogue entry (``methods.catalogue``) before numpy, numba or scipy are imported
(an input error answers in well under a second).  ``methods.protocol`` re-exports them; a
method's identity hashes this code by content wherever it is defined (``methods.identity``).
"""
from __future__ import annotations

import math
from typing import Any, Mapping

CALIBRATED = "@alpha="  # a calibrated method's name: base@alpha=<nominal level>


def check_alpha(alpha: float) -> None:
    """``alpha`` is the one-sided level: it must lie in (0, 0.25]."""
    if not (isinstance(alpha, (float, int)) and not isinstance(alpha, bool)
            and math.isfinite(alpha) and 0.0 < alpha <= 0.25):
        raise ValueError(f"alpha (the one-sided level) must lie in (0, 0.25], got {alpha!r}")


def check_margin(margin: float) -> None:
    if not (isinstance(margin, (float, int)) and not isinstance(margin, bool)
            and math.isfinite(margin) and 0.0 < margin < 1.0):
        raise ValueError(f"margin must lie in (0, 1), got {margin!r}")


def option_values(name: str, known: Mapping[str, float], choices: Mapping[str, Mapping[str, float]],
                  given: Mapping[str, Any]) -> dict[str, float]:
    """The float values of options ``given`` to method ``name`` whose options are ``known``
    (an option with named ``choices`` also accepts the name); an unknown option or a value
    that is not a finite number is a ValueError worded option-first (a front end names the
    field it is about: --option, not --method)."""
    unknown = set(given) - set(known)
    if unknown:
        raise ValueError(f"no option(s) {sorted(unknown)} in method {name!r}; known: {sorted(known)}")
    values = {}
    for k, v in given.items():
        if isinstance(v, str) and k in choices:
            if v not in choices[k]:
                raise ValueError(f"option {k} of {name!r} must be one of {', '.join(choices[k])}, got {v!r}")
            v = choices[k][v]
        if not isinstance(v, (int, float)) or isinstance(v, bool) or not math.isfinite(v):
            raise ValueError(f"option {k} of {name!r} must be a finite number, got {v!r}")
        values[k] = float(v)
    return values


__all__ = ["CALIBRATED", "check_alpha", "check_margin", "option_values"]
