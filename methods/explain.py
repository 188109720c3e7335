"""Why a fixed-sample method's single analysis is inconclusive, in words.

A kernel says only ``status = inconclusive`` with NaN bounds.  The reasons are rules of
each method (documented in its module docstring) that depend on the method's options and
the table alone, so they are restated here as plain checks and can be printed beside the
result: no trials at all; fewer non-empty clusters than ``min_clusters`` (or than the 2 a
variance needs); fewer than 2 non-empty clusters to resample.  Pure Python, no numba.
"""
from __future__ import annotations

from typing import Any, Callable, Sequence

INCONCLUSIVE_NAMES = ("inconclusive", 2)

# Methods whose interval needs a between-cluster variance: at least max(2, min_clusters)
# non-empty clusters (methods/fixed/_moments.py, cluster_robust.py, obuchowski.py).
_MIN_CLUSTER_METHODS = ("clustered_normal", "cluster_t", "cluster_robust", "obuchowski")
_RESAMPLING_METHODS = ("cluster_bootstrap", "cluster_bootstrap_bca")


def _rows(table: Any) -> list[list[int]]:
    rows = table.tolist() if hasattr(table, "tolist") else [list(r) for r in table]
    if rows and not isinstance(rows[0], (list, tuple)):
        rows = [rows]
    return [[int(v) for v in r] for r in rows]


def _min_clusters(method, rows: list[list[int]]) -> list[str]:
    k_used = sum(1 for r in rows if sum(r) > 0)
    opt = float(method.options.get("min_clusters", 0.0))
    need = max(2.0, opt)
    if k_used >= need:
        return []
    why = (f"min_clusters={opt:g}" if opt >= 2.0 else "a between-cluster variance needs at least 2")
    return [f"{k_used} non-empty cluster{'s' if k_used != 1 else ''}, fewer than {need:g} ({why}; "
            "set the min_clusters option to change the method's registered minimum)"]


def _resampling(method, rows: list[list[int]]) -> list[str]:
    k_used = sum(1 for r in rows if sum(r) > 0)
    if k_used >= 2:
        return []
    return [f"{k_used} non-empty cluster{'s' if k_used != 1 else ''}: resampling clusters needs at least 2"]


_RULES: dict[str, Callable[[Any, list[list[int]]], list[str]]] = {
    **{name: _min_clusters for name in _MIN_CLUSTER_METHODS},
    **{name: _resampling for name in _RESAMPLING_METHODS},
}


def explain(method, table: Sequence, status: str | int) -> list[str]:
    """Reasons (one sentence each) why ``method`` is inconclusive on ``table`` (rows
    ``n11, n10, n01, n00`` per cluster); empty when ``status`` is not inconclusive."""
    if status not in INCONCLUSIVE_NAMES:
        return []
    rows = _rows(table)
    if sum(sum(r) for r in rows) == 0:
        return [f"no trials: all {len(rows)} cluster{'s are' if len(rows) != 1 else ' is'} empty"]
    rule = _RULES.get(method.name)
    reasons = rule(method, rows) if rule else []
    return reasons or [f"{method.name} gives no interval for this table (NaN bounds); its module docstring "
                       "lists when that happens"]
