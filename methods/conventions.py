"""The protocol's conventions that need no numpy: the level and margin checks, the name of a
calibrated method, and how option values are read.

They live apart from ``methods.protocol`` so that a front end can check its input against a
method's catalogue entry (``methods.catalogue``) before numpy, numba or scipy are imported
(an input error answers in well under a second).  ``methods.protocol`` re-exports them; a
method's identity hashes this code by content wherever it is defined (``methods.identity``).
"""
from __future__ import annotations

import math
from typing import Any, Mapping, NamedTuple

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


class OptionRange(NamedTuple):
    """The values an option may take: ``low <= v <= high`` (either end may be infinite), and a
    whole number when ``integer``.  Declared by methods whose own code (identity-hashed, so
    left as it is) does not refuse every meaningless value."""
    low: float = -math.inf
    high: float = math.inf
    integer: bool = False

    def admits(self, v: float) -> bool:
        return self.low <= v <= self.high and (not self.integer or v == int(v))

    def describe(self) -> str:
        kind = "a whole number" if self.integer else "a number"
        if math.isinf(self.low) and math.isinf(self.high):
            return kind
        if math.isinf(self.high):
            return f"{kind} >= {self.low:g}"
        if math.isinf(self.low):
            return f"{kind} <= {self.high:g}"
        return f"{kind} in [{self.low:g}, {self.high:g}]"

    def as_json(self) -> list:
        """``[low, high, integer]`` with None for an infinite end (JSON has no infinity)."""
        return [None if math.isinf(self.low) else self.low, None if math.isinf(self.high) else self.high,
                self.integer]

    @classmethod
    def from_json(cls, v) -> "OptionRange":
        low, high, integer = v
        return cls(-math.inf if low is None else float(low), math.inf if high is None else float(high),
                   bool(integer))


def option_values(name: str, known: Mapping[str, float], choices: Mapping[str, Mapping[str, float]],
                  given: Mapping[str, Any], ranges: Mapping[str, OptionRange] | None = None) -> dict[str, float]:
    """The float values of options ``given`` to method ``name`` whose options are ``known``
    (an option with named ``choices`` also accepts the name; one with a declared range must
    lie in it); an unknown option or a value that is not a finite number is a ValueError
    worded option-first (a front end names the field it is about: --option, not --method)."""
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
        allowed = (ranges or {}).get(k)
        if allowed is not None and not allowed.admits(float(v)):
            raise ValueError(f"option {k} of {name!r} must be {allowed.describe()}, got {v!r}")
        values[k] = float(v)
    return values


__all__ = ["CALIBRATED", "OptionRange", "check_alpha", "check_margin", "option_values"]
