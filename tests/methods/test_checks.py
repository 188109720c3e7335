"""The method conformance check: every registered method passes it, and it catches the
faults it names (a wrong estimand, a pass that is not ``lower >= -margin``, rows that leak
into each other, an analysis that differs from the batch)."""
from __future__ import annotations

import numpy as np
import pytest

from methods import check_method, get, names, numpy_method
from methods.checks import MethodCheckError
from methods.protocol import Estimand

# Their estimands are checked elsewhere, on cheaper runs of the same code: bayes_hierarchical in
# tests/studies/test_estimands.py; dm_likelihood_ratio (whose mixture at the check's 100 x 3,
# margin 0.1, takes about 40 s to build) by check_method with a small construction in
# tests/methods/test_dm_likelihood_ratio.py.
SLOW = {"bayes_hierarchical", "dm_likelihood_ratio"}


@pytest.mark.parametrize("name", names())
def test_every_registered_method_conforms(name):
    report = check_method(get(name), estimand=name not in SLOW)
    assert {"protocol", "edge cases", "status codes", "analyze", "decide", "identity"} <= set(report.passed)
    if not get(name).sequential and name not in SLOW:
        assert "estimand" in report.passed


def _trial_wald(tables, margin, alpha):
    n = tables.sum(axis=(1, 2)).astype(float)
    with np.errstate(invalid="ignore", divide="ignore"):
        d = (tables[:, :, 2].sum(axis=1) - tables[:, :, 1].sum(axis=1)) / n
    half = 1.96 * np.sqrt(np.maximum(0.25 / np.where(n > 0, n, np.nan), 0.0))
    return d - half, d + half, d


def _method(func, estimand=Estimand.TRIAL, name="toy"):
    return numpy_method(func, name=name, version="1", estimand=estimand, citation="test", summary="test")


def test_a_sound_plugin_passes():
    assert "estimand" in check_method(_method(_trial_wald)).passed


def test_a_wrong_declared_estimand_is_caught():
    with pytest.raises(MethodCheckError, match="estimand"):
        check_method(_method(_trial_wald, Estimand.CLUSTER))


def test_rows_that_depend_on_each_other_are_caught():
    def leaky(tables, margin, alpha):
        lo, up, d = _trial_wald(tables, margin, alpha)
        with np.errstate(invalid="ignore"):
            shift = np.nan_to_num(np.mean(d[np.isfinite(d)])) * 0.5 if np.isfinite(d).any() else 0.0
        return lo + shift, up + shift, d
    with pytest.raises(MethodCheckError, match="analyze"):
        check_method(_method(leaky))


def test_a_method_that_raises_on_an_edge_case_is_caught():
    def fragile(tables, margin, alpha):
        if tables.shape[1] == 1:
            raise ZeroDivisionError("one cluster")
        return _trial_wald(tables, margin, alpha)
    with pytest.raises(MethodCheckError, match="edge cases: one cluster"):
        check_method(_method(fragile))


def test_a_kernel_that_passes_against_the_rule_is_caught():
    m = get("paired_wald")

    def kernel(tables, margin, consts, lower, upper, estimate, status):
        m.kernel(tables, margin, consts, lower, upper, estimate, status)
        status[:] = np.where(status == 0, 1, status)   # promote every fail
    import dataclasses
    with pytest.raises(MethodCheckError, match="status codes"):
        check_method(dataclasses.replace(m, name="always_pass", kernel=kernel))
