"""Group-sequential boundaries from alpha-spending functions by recursive numerical
integration.

Spending functions (Lan & DeMets 1983, Biometrika 70:659-663; one-sided level ``alpha``,
information fraction ``t`` in (0, 1]):

* ``obf``    O'Brien-Fleming-like  ``alpha(t) = 2 - 2 Phi(z_{1 - alpha/2} / sqrt(t))``
* ``pocock`` Pocock-like           ``alpha(t) = alpha log(1 + (e - 1) t)``
* ``hsd``    Hwang, Shih & DeCani (1990, Stat Med 9:1439-1445), parameter gamma:
             ``alpha(t) = alpha (1 - exp(-gamma t)) / (1 - exp(-gamma))``, ``alpha t`` at gamma = 0.

Boundaries ``b_1..b_K`` on the Z scale solve, look by look,
``P_0(Z_1 < b_1, ..., Z_{k-1} < b_{k-1}, Z_k >= b_k) = alpha(t_k) - alpha(t_{k-1})`` for the
canonical joint distribution of the Z statistics (independent increments, information
proportional to t).  The probabilities are computed by the recursion of Armitage,
McPherson & Rowe (1969, J R Stat Soc A 132:235-244) in the numerical form of Jennison &
Turnbull (2000, *Group Sequential Methods with Applications to Clinical Trials*, ch. 19):
the sub-density of ``Z_k`` on the continuation region is carried on their grid of
``6r - 1`` points concentrated near the centre (trimmed to the region, with the boundary
added and midpoints inserted) and integrated by Simpson's rule (equation numbers of the
book not checked here):

    h_1(z) = phi(z),
    h_k(z) = int h_{k-1}(u) sqrt(I_k / D_k) phi((z sqrt(I_k) - u sqrt(I_{k-1})) / sqrt(D_k)) du,
    P(cross at k) = int h_{k-1}(u) Phi_bar((b_k sqrt(I_k) - u sqrt(I_{k-1})) / sqrt(D_k)) du,

with ``D_k = I_k - I_{k-1}``.  Each ``b_k`` is root-found (Brent) on the exact crossing
probability of the discretised recursion.
"""
from __future__ import annotations

import math
from functools import lru_cache

import numpy as np

SPENDING = ("obf", "pocock", "hsd")
# the hsd gamma's range, as gsDesign's sfHSD (checkScalar(param, "numeric", c(-40, 40))): by
# t = 0.5, gamma = 40 has spent all but 2e-9 of alpha and gamma = -40 only 2e-9 of it; from
# |gamma| ~ 709 the exponential overflows
HSD_GAMMA_LIMIT = 40.0


def spending(kind: str, alpha: float, t: np.ndarray, gamma: float = 0.0) -> np.ndarray:
    """Cumulative alpha spent at information fractions ``t``."""
    from scipy import stats  # heavy: imported when used
    t = np.asarray(t, dtype=np.float64)
    if np.any(t <= 0) or np.any(t > 1 + 1e-12):
        raise ValueError(f"information fractions must lie in (0, 1], got {t.tolist()}")
    if kind == "obf":
        z = stats.norm.isf(alpha / 2.0)
        return 2.0 * stats.norm.sf(z / np.sqrt(t))
    if kind == "pocock":
        return alpha * np.log1p((math.e - 1.0) * t)
    if kind == "hsd":
        if gamma == 0.0:
            return alpha * t
        return alpha * (-np.expm1(-gamma * t)) / (-math.expm1(-gamma))
    raise ValueError(f"unknown spending function {kind!r}; choose one of {', '.join(SPENDING)}")


def _grid(r: int) -> np.ndarray:
    """Jennison & Turnbull (2000, ch. 19): the 6r - 1 standard grid points (mean 0)."""
    i = np.arange(1, 6 * r)
    x = np.empty(i.size)
    lo = i <= r - 1
    mid = (i >= r) & (i <= 5 * r)
    hi = i >= 5 * r + 1
    x[lo] = -3.0 - 4.0 * np.log(r / i[lo])
    x[mid] = -3.0 + 3.0 * (i[mid] - r) / (2.0 * r)
    x[hi] = 3.0 + 4.0 * np.log(r / (6.0 * r - i[hi]))
    return x


def _simpson_nodes(base: np.ndarray, upper: float) -> tuple[np.ndarray, np.ndarray]:
    """Grid points below ``upper`` plus ``upper`` itself (when inside the grid), midpoints
    inserted, with composite Simpson weights (J&T ch. 19)."""
    pts = base[base < upper]
    if math.isfinite(upper) and upper > base[0]:
        if upper < base[-1]:
            pts = np.append(pts, upper)
    if pts.size < 2:
        pts = np.array([base[0], min(upper, base[0] + 1e-9)]) if pts.size == 0 else np.append(pts, pts[-1] + 1e-9)
    m = pts.size
    z = np.empty(2 * m - 1)
    z[0::2] = pts
    z[1::2] = 0.5 * (pts[:-1] + pts[1:])
    w = np.zeros(2 * m - 1)
    d = np.diff(pts)  # panel widths
    w[0:-1:2] += d / 6.0
    w[2::2] += d / 6.0
    w[1::2] += 4.0 * d / 6.0
    return z, w


def crossing_upper(b: np.ndarray, info: np.ndarray, r: int = 32, theta: float = 0.0) -> np.ndarray:
    """P(first crossing of the upper boundary at look k), one-sided design, drift theta."""
    from scipy import stats  # heavy: imported when used
    base = _grid(r)
    K = len(b)
    out = np.zeros(K)
    sq = np.sqrt(info)
    out[0] = stats.norm.sf(b[0] - theta * sq[0])
    if K == 1:
        return out
    z, w = _simpson_nodes(base + theta * sq[0], b[0])
    h = stats.norm.pdf(z - theta * sq[0]) * w
    for k in range(1, K):
        dk = info[k] - info[k - 1]
        sd = math.sqrt(dk)
        out[k] = float(np.sum(h * stats.norm.sf((b[k] * sq[k] - z * sq[k - 1] - theta * dk) / sd)))
        if k < K - 1:
            z_new, w_new = _simpson_nodes(base + theta * sq[k], b[k])
            kern = stats.norm.pdf((z_new[:, None] * sq[k] - z[None, :] * sq[k - 1] - theta * dk) / sd) * (sq[k] / sd)
            h = (kern @ h) * w_new
            z = z_new
    return out


@lru_cache(maxsize=256)
def _bounds_cached(kind: str, alpha: float, t: tuple[float, ...], gamma: float, r: int) -> tuple[float, ...]:
    from scipy import optimize, stats  # heavy: imported when used
    tt = np.asarray(t)
    cum = spending(kind, alpha, tt, gamma)
    inc = np.diff(np.concatenate([[0.0], cum]))
    base = _grid(r)
    b = np.empty(len(t))
    sq = np.sqrt(tt)
    h = z = None
    for k in range(len(t)):
        target = inc[k]
        if k == 0:
            b[0] = stats.norm.isf(target) if target > 0 else math.inf
            z, w = _simpson_nodes(base, b[0])
            h = stats.norm.pdf(z) * w
            continue
        dk = tt[k] - tt[k - 1]
        sd = math.sqrt(dk)
        zk, hk = z, h

        def excess(bk):
            return float(np.sum(hk * stats.norm.sf((bk * sq[k] - zk * sq[k - 1]) / sd))) - target

        if target <= 1e-300:
            b[k] = math.inf
        else:
            lo, hi = -10.0, 40.0
            if excess(lo) < 0.0:
                raise ValueError(f"spending increment {target:.3g} at look {k + 1} exceeds the probability of "
                                 "reaching that look; the design spends more than is left")
            b[k] = optimize.brentq(excess, lo, hi, xtol=1e-14, rtol=1e-15, maxiter=500)
        if k < len(t) - 1:
            z_new, w_new = _simpson_nodes(base, b[k])
            kern = stats.norm.pdf((z_new[:, None] * sq[k] - zk[None, :] * sq[k - 1]) / sd) * (sq[k] / sd)
            h = (kern @ hk) * w_new
            z = z_new
    return tuple(float(x) for x in b)


# the recursion's grid and Simpson nodes for methods.sequential.boundaries (aliases: the kernels'
# own functions stay as they are, their source being part of alpha_spending's identity)
integration_grid = _grid
simpson_nodes = _simpson_nodes


def upper_bounds(kind: str, alpha: float, t, gamma: float = 0.0, r: int = 32) -> np.ndarray:
    """Efficacy boundaries (Z scale) of a one-sided design spending ``alpha`` at fractions ``t``
    (strictly increasing, in (0, 1])."""
    if not (0.0 < alpha < 0.5):
        raise ValueError(f"alpha must lie in (0, 0.5), got {alpha!r}")
    t = tuple(float(x) for x in np.asarray(t, dtype=np.float64).ravel())
    if len(t) == 0 or any(b <= a for a, b in zip(t, t[1:])):
        raise ValueError(f"information fractions must be strictly increasing, got {list(t)}")
    if kind not in SPENDING:
        raise ValueError(f"unknown spending function {kind!r}; choose one of {', '.join(SPENDING)}")
    if not math.isfinite(gamma):
        raise ValueError(f"gamma must be finite, got {gamma!r}")
    return np.asarray(_bounds_cached(kind, float(alpha), t, float(gamma), int(r)))
