"""Exact (Clopper-Pearson) confidence bounds for a binomial proportion: the one copy.

Clopper & Pearson (1934), Biometrika 26:404-413: with ``x`` successes in ``n`` trials the
lower bound at one-sided level ``a`` is the ``a`` quantile of Beta(x, n - x + 1) (0 when
x = 0) and the upper bound the ``1 - a`` quantile of Beta(x + 1, n - x) (1 when x = n).
A two-sided interval at ``confidence`` uses ``a = (1 - confidence) / 2`` on each side; a
one-sided bound at ``confidence`` uses ``a = 1 - confidence``."""
from __future__ import annotations

from typing import Literal

import numpy as np


def clopper_pearson(x, n, confidence: float = 0.95,
                    sided: Literal["two", "one"] = "two") -> tuple[np.ndarray, np.ndarray]:
    """Vectorised Clopper-Pearson ``(lower, upper)``; ``sided="one"`` gives the one-sided
    bounds at ``confidence`` each.  ``n == 0`` gives ``(nan, nan)``; counts outside
    ``0 <= x <= n`` are an error."""
    from scipy import stats  # heavy: only when bounds are asked for

    if not 0.0 < confidence < 1.0:
        raise ValueError(f"confidence must lie in (0, 1), got {confidence!r}")
    if sided not in ("two", "one"):
        raise ValueError(f"sided must be 'two' or 'one', got {sided!r}")
    x = np.asarray(x, dtype=np.float64)
    n = np.asarray(n, dtype=np.float64)
    if np.any((x < 0) | (x > n)):
        raise ValueError("Clopper-Pearson needs 0 <= x <= n")
    a = (1.0 - confidence) / 2.0 if sided == "two" else 1.0 - confidence
    with np.errstate(invalid="ignore", divide="ignore"):
        lo = np.where(x > 0, stats.beta.ppf(a, np.maximum(x, 1), n - x + 1), 0.0)
        hi = np.where(x < n, stats.beta.ppf(1.0 - a, x + 1, np.maximum(n - x, 1)), 1.0)
    empty = n <= 0
    return np.where(empty, np.nan, lo), np.where(empty, np.nan, hi)
