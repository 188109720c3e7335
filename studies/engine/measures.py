"""Performance measures and their Monte Carlo standard errors from integer tallies.

Definitions follow Morris, White & Crowther (2019), "Using simulation studies to
evaluate statistical methods", Stat Med 38:2074-2102, Table 6, with ``n`` the number of
replications that yield the quantity:

* rates (pass, false pass, power, inconclusive, coverage, lower-bound miss):
  ``p = count / n``, MC SE ``sqrt(p (1 - p) / n)``, and exact Clopper-Pearson bounds
  (Clopper & Pearson 1934, Biometrika 26:404-413): ``Beta(a/2; x, n - x + 1)`` and
  ``Beta(1 - a/2; x + 1, n - x)`` at ``a = 1 - mc_confidence``;
* bias ``mean(est) - theta``, MC SE ``empSE / sqrt(n)``;
* empirical SE ``sqrt(sum (est - mean)^2 / (n - 1))``, MC SE ``empSE / sqrt(2 (n - 1))``;
* mean interval width, MC SE ``sd(width) / sqrt(n)``.

``theta`` is the true value of the estimand the method targets (trial- or
cluster-weighted difference of the *true* outcomes).  A replication counts towards the
false-pass rate when ``theta <= -margin`` (the null of non-inferiority, boundary
included) and towards power otherwise; the other rate is NaN.  Coverage, bias, width are
over the replications where the method produced the quantity (counts reported).
"""
from __future__ import annotations

import numpy as np

from simlab.proportions import clopper_pearson

from studies.engine.tally import SCALE_BITS, F, fixed_sum

NULL_TOL = 1e-12  # theta within this of -margin counts as the boundary (null)

RATE_MEASURES = ("pass_rate", "false_pass_rate", "power", "fail_rate", "inconclusive_rate",
                 "coverage", "lower_miss_rate")
MEASURES = RATE_MEASURES + ("bias", "empirical_se", "mean_width")
COUNTS = ("n_reps", "n_pass", "n_fail", "n_inconclusive", "n_estimate", "n_interval", "n_cover",
          "n_lower_above", "n_width")


def rate(x, n):
    """Proportion x / n and its binomial MC SE sqrt(p (1 - p) / n); NaN where n = 0."""
    x = np.asarray(x, dtype=np.float64)
    n = np.asarray(n, dtype=np.float64)
    with np.errstate(invalid="ignore", divide="ignore"):
        p = np.where(n > 0, x / n, np.nan)
        se = np.where(n > 0, np.sqrt(p * (1 - p) / n), np.nan)
    return p, se


def put_rate(out: dict, name: str, x, n, mc_confidence: float) -> None:
    """Store ``name`` (= x / n), ``name_mcse`` and its Clopper-Pearson ``name_cp_lower/upper``."""
    p, se = rate(x, n)
    lo, hi = clopper_pearson(x, n, mc_confidence)
    out[name], out[f"{name}_mcse"] = p, se
    out[f"{name}_cp_lower"], out[f"{name}_cp_upper"] = lo, hi


def _moments(t: np.ndarray, name: str, count: str) -> tuple[np.ndarray, np.ndarray]:
    """Exact mean and sample variance (ddof = 1) of a fixed-point summed quantity."""
    s1 = fixed_sum(t, name)
    s2 = fixed_sum(t, f"{name}2")
    n = t[..., F[count]]
    mean = np.full(n.shape, np.nan)
    var = np.full(n.shape, np.nan)
    scale = 1 << SCALE_BITS
    for idx in np.ndindex(n.shape):
        k = int(n[idx])
        if k == 0:
            continue
        a = int(s1[idx])
        b = int(s2[idx])
        mean[idx] = a / (k * scale)
        if k >= 2:
            # sum (x - mean)^2 = (k * sum x^2 - (sum x)^2) / k, in units of 2^-64 (exact integers)
            num = k * b * scale - a * a
            var[idx] = max(num, 0) / (k * (k - 1) * scale * scale)
    return mean, var


def measures(t: np.ndarray, theta: np.ndarray, margin: np.ndarray,
             mc_confidence: float = 0.95) -> dict[str, np.ndarray]:
    """All measures for tally array ``t[..., NF]``; ``theta`` and ``margin`` broadcast to
    ``t.shape[:-1]``.  Returns name -> float64 array (counts as int64)."""
    t = np.asarray(t, dtype=np.int64)
    shape = t.shape[:-1]
    theta = np.broadcast_to(np.asarray(theta, dtype=np.float64), shape)
    margin = np.broadcast_to(np.asarray(margin, dtype=np.float64), shape)
    out: dict[str, np.ndarray] = {c: t[..., F[c]].copy() for c in COUNTS}
    n = out["n_reps"]
    null = theta <= -margin + NULL_TOL
    out["is_null"] = null.astype(np.int8)
    out["true_value"] = np.array(theta, dtype=np.float64)

    def put(name, x, m):
        put_rate(out, name, x, m, mc_confidence)

    put("pass_rate", out["n_pass"], n)
    put("fail_rate", out["n_fail"], n)
    put("inconclusive_rate", out["n_inconclusive"], n)
    put("coverage", out["n_cover"], out["n_interval"])
    put("lower_miss_rate", out["n_lower_above"], out["n_interval"])
    for name, keep in (("false_pass_rate", null), ("power", ~null)):
        for suffix in ("", "_mcse", "_cp_lower", "_cp_upper"):
            out[f"{name}{suffix}"] = np.where(keep, out[f"pass_rate{suffix}"], np.nan)

    mean, var = _moments(t, "est", "n_estimate")
    ne = out["n_estimate"].astype(np.float64)
    emp = np.sqrt(var)
    with np.errstate(invalid="ignore", divide="ignore"):
        out["mean_estimate"] = mean
        out["bias"] = mean - theta
        out["bias_mcse"] = np.where(ne >= 2, emp / np.sqrt(ne), np.nan)
        out["empirical_se"] = emp
        out["empirical_se_mcse"] = np.where(ne >= 2, emp / np.sqrt(2.0 * (ne - 1.0)), np.nan)
        wmean, wvar = _moments(t, "wid", "n_width")
        nw = out["n_width"].astype(np.float64)
        out["mean_width"] = wmean
        out["mean_width_mcse"] = np.where(nw >= 2, np.sqrt(wvar) / np.sqrt(nw), np.nan)
    return out


def rate_summary(count: int, n: int, mc_confidence: float = 0.95) -> dict[str, float]:
    """One rate with its MC SE and Clopper-Pearson bounds, as plain floats."""
    p, se = rate(count, n)
    lo, hi = clopper_pearson(count, n, mc_confidence)
    return {"value": float(p), "mc_se": float(se), "cp_lower": float(lo), "cp_upper": float(hi),
            "count": int(count), "n": int(n)}
