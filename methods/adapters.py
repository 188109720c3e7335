"""Adapters that turn a team's own decision rule into a simlab method.

:func:`numpy_method` wraps a plain vectorised numpy function over ``tables[R, K, 4]``
(cell order of ``simlab.scenario``: ``n11, n10, n01, n00``; a cluster with zero trials is missing)::

    def my_interval(tables, margin, alpha, **options):
        ...                      # numpy over the whole batch, no Python per replication
        return lower, upper, estimate        # float arrays of shape (R,); NaN = inconclusive

    METHOD = numpy_method(my_interval, name="my_rule", version="1",
                          estimand=Estimand.TRIAL, citation="...", summary="...")

The adapter runs the function once per batch, then applies the protocol's decision rule
(pass iff ``lower >= -margin``; NaN lower bound -> inconclusive).  It is slower than a numba
kernel (numpy temporaries per batch instead of one fused pass) but needs no compiler; for
speed write a numba kernel like ``methods/fixed/paired_wald.py``.  The method's identity
hashes the code of the function, of what it calls, of this adapter and of the protocol
(``methods.identity``).
"""
from __future__ import annotations

from typing import Callable

import numpy as np

from methods.protocol import FAIL, INCONCLUSIVE, PASS, Estimand, FixedMethod


def _decide(lower: np.ndarray, margin: float, status: np.ndarray) -> None:
    status[:] = np.where(np.isnan(lower), INCONCLUSIVE, np.where(lower >= -margin, PASS, FAIL))


def numpy_method(func: Callable, *, name: str, version: str, estimand: Estimand, citation: str,
                 summary: str, options: dict[str, float] | None = None) -> FixedMethod:
    """A :class:`FixedMethod` running ``func(tables, margin, alpha, **options) -> (lower,
    upper, estimate)`` once per batch."""
    option_names = tuple(sorted(options or {}))

    def prepare(method: FixedMethod, alpha: float, margin: float, tables: np.ndarray) -> np.ndarray:
        return np.array([alpha, *(method.options[k] for k in option_names)], dtype=np.float64)

    def kernel(tables, margin, consts, lower, upper, estimate, status):
        kwargs = dict(zip(option_names, (float(c) for c in consts[1:])))
        out = func(tables, margin, float(consts[0]), **kwargs)
        if not (isinstance(out, tuple) and len(out) == 3):
            raise ValueError(f"method {name!r}: the function must return (lower, upper, estimate)")
        R = tables.shape[0]
        for label, src, dst in zip(("lower", "upper", "estimate"), out, (lower, upper, estimate)):
            arr = np.asarray(src, dtype=np.float64)
            if arr.shape != (R,):
                raise ValueError(f"method {name!r}: {label} has shape {arr.shape}, expected ({R},)")
            dst[:] = arr
        bad = ~np.isnan(lower) & (lower > upper)
        if bad.any():
            raise ValueError(f"method {name!r}: lower > upper in replication {int(np.argmax(bad))}")
        _decide(lower, margin, status)

    return FixedMethod(name=name, version=version, estimand=Estimand(estimand), citation=citation,
                       summary=summary, options=dict(options or {}), kernel=kernel, prepare=prepare)
