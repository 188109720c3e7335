"""Efficacy boundaries of one-sided group-sequential designs: the design surface of
``simlab sequential boundaries``.

Spending families (one-sided level ``alpha``, information fraction ``t`` in (0, 1]):

* ``obf``, ``pocock``, ``hsd`` -- Lan & DeMets (1983, Biometrika 70:659-663) and Hwang, Shih
  & DeCani (1990, Stat Med 9:1439-1445), exactly as ``methods.sequential._spending.spending``;
* ``power`` -- Kim & DeMets (1987, Biometrics 43:857-864) power family
  ``alpha(t) = alpha * t^rho``, ``rho > 0`` (rho = 1 spends linearly, rho = 3 is close to
  O'Brien-Fleming; Jennison & Turnbull 2000, sec. 7.2.2).

The family parameter is ``gamma`` (HSD gamma, or the power exponent rho).  Boundary ``b_k``
solves ``P_0(Z_1 < b_1, ..., Z_{k-1} < b_{k-1}, Z_k >= b_k) = alpha(t_k) - alpha(t_{k-1})``;
the first-crossing probabilities are those of ``_spending.crossing_upper`` (the recursive
numerical integration of Armitage, McPherson & Rowe 1969 on the grid of Jennison & Turnbull
2000, ch. 19), so this module reuses that recursion and only adds the family and a look-by-look
Brent root search on it.  The nominal p-value of look k is ``1 - Phi(b_k)``.
"""
from __future__ import annotations

import math

import numpy as np

from methods.sequential import _spending

FAMILIES = ("obf", "pocock", "hsd", "power")
DEFAULT_PARAMETER = {"hsd": -4.0, "power": 3.0}  # gsDesign's sfHSD default; J&T's OBF-like rho


def check_design(family: str, alpha: float, information, parameter: float | None) -> tuple[np.ndarray, float]:
    """Validated ``(t, parameter)``; errors name the offending field."""
    if family not in FAMILIES:
        raise ValueError(f"spending: unknown family {family!r}; choose one of {', '.join(FAMILIES)}")
    if not (isinstance(alpha, (int, float)) and 0.0 < alpha < 0.5):
        raise ValueError(f"alpha must lie in (0, 0.5), got {alpha!r}")
    t = np.asarray(information, dtype=np.float64).ravel()
    if t.size == 0 or not np.all(np.isfinite(t)):
        raise ValueError(f"information: need finite fractions, got {t.tolist()}")
    if np.any(np.diff(t) <= 0) or t[0] <= 0.0 or abs(t[-1] - 1.0) > 1e-12:
        raise ValueError(f"information: fractions must increase strictly in (0, 1] and end at 1, got {t.tolist()}")
    if family in ("obf", "pocock"):
        if parameter is not None:
            raise ValueError(f"gamma: the {family} family has no parameter (got {parameter!r})")
        return t, 0.0
    p = DEFAULT_PARAMETER[family] if parameter is None else float(parameter)
    if not math.isfinite(p) or (family == "power" and p <= 0.0):
        raise ValueError(f"gamma: the {family} family needs a finite parameter"
                         f"{' > 0 (rho)' if family == 'power' else ''}, got {parameter!r}")
    if family == "hsd" and abs(p) > _spending.HSD_GAMMA_LIMIT:
        raise ValueError(f"gamma: the hsd family's gamma must lie in [-{_spending.HSD_GAMMA_LIMIT:g}, "
                         f"{_spending.HSD_GAMMA_LIMIT:g}] (gsDesign's sfHSD range), got {parameter!r}")
    return t, p


def cumulative_alpha(family: str, alpha: float, t: np.ndarray, parameter: float = 0.0) -> np.ndarray:
    """Cumulative one-sided alpha spent at fractions ``t``."""
    if family == "power":
        return alpha * np.asarray(t, dtype=np.float64) ** parameter
    return _spending.spending(family, alpha, t, parameter)


def efficacy_boundaries(family: str, alpha: float, information, parameter: float | None = None,
                        grid: int = 32) -> dict:
    """The design table: per look the information fraction, Z boundary, nominal one-sided
    p-value, cumulative and incremental alpha spent (``inf`` / 0 where a look spends nothing)."""
    from scipy import optimize, stats  # heavy: imported when used
    t, p = check_design(family, alpha, information, parameter)
    cum = cumulative_alpha(family, alpha, t, p)
    inc = np.diff(np.concatenate([[0.0], cum]))
    # the sub-density on the continuation region is carried from look to look (the recursion of
    # the module docstring): each look's root-finding integrates one step, not the whole path
    # again (that was O(K^3): 20 looks took 13 s, 40 did not finish in 30 s)
    b = np.empty(t.size)
    sq = np.sqrt(t)
    nodes = _spending.integration_grid(grid)
    z = h = None
    for k in range(t.size):
        if k == 0:
            b[0] = stats.norm.isf(inc[0]) if inc[0] > 1e-300 else math.inf
            z, w = _spending.simpson_nodes(nodes, b[0])
            h = stats.norm.pdf(z) * w
            continue
        sd = math.sqrt(t[k] - t[k - 1])

        def excess(bk, k=k, z=z, h=h, sd=sd):
            return float(np.sum(h * stats.norm.sf((bk * sq[k] - z * sq[k - 1]) / sd))) - inc[k]

        if inc[k] <= 1e-300:
            b[k] = math.inf
        elif excess(-10.0) < 0.0:
            raise ValueError(f"information: look {k + 1} would have to spend {inc[k]:.3g}, more than "
                             "the probability of reaching it")
        else:
            b[k] = optimize.brentq(excess, -10.0, 40.0, xtol=1e-12, rtol=1e-14, maxiter=500)
        if k < t.size - 1:
            z_new, w_new = _spending.simpson_nodes(nodes, b[k])
            kern = stats.norm.pdf((z_new[:, None] * sq[k] - z[None, :] * sq[k - 1]) / sd) * (sq[k] / sd)
            with np.errstate(over="ignore", invalid="ignore"):
                z, h = z_new, (kern @ h) * w_new
            if not np.all(np.isfinite(h)):  # brentq then said only "the function value at x=-10.0 is NaN"
                raise ValueError(f"information: the numerical integration breaks down after look {k + 1} of "
                                 f"{t.size} (looks this close together are beyond its grid of {grid}); use fewer "
                                 "looks")
    return {"family": family, "alpha": float(alpha), "parameter": None if family in ("obf", "pocock") else p,
            "information": t.tolist(), "z": b.tolist(), "nominal_p": stats.norm.sf(b).tolist(),
            "cumulative_alpha": cum.tolist(), "incremental_alpha": inc.tolist()}
