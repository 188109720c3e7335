"""Input handling and the decision rule shared by the slow reference implementations."""
from __future__ import annotations

import math

import numpy as np


def cluster_rows(table, keep_empty: bool = False) -> np.ndarray:
    """A (K, 4) or (4,) table of non-negative counts as int64[K, 4]; empty (missing)
    clusters are dropped unless ``keep_empty``."""
    t = np.asarray(table, dtype=np.int64)
    if t.ndim == 1:
        t = t[None, :]
    if t.ndim != 2 or t.shape[1] != 4:
        raise ValueError(f"a table must have shape (K, 4), got {t.shape}")
    if np.any(t < 0):
        raise ValueError("counts must be >= 0")
    return t if keep_empty else t[t.sum(axis=1) > 0]


def decide(lower: float, margin: float) -> str:
    """Non-inferiority: pass iff lower >= -margin; no bound -> inconclusive."""
    if math.isnan(lower):
        return "inconclusive"
    return "pass" if lower >= -margin else "fail"
