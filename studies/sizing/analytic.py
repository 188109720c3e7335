"""Analytic start of the sample-size search (``studies.sizing.size``), and what no K can reach.

Difference estimands.  For one trial pair the difference ``D = 1{01} - 1{10}`` has mean
``delta = p01 - p10`` and variance ``sigma1^2 = q - delta^2`` (``q = p10 + p01``, the
discordance).  The score test of ``H0: delta <= -m`` (Nam 1997, Biometrics 53:1422-1430;
Tango 1998, Stat Med 17:891-908) standardises by the variance at the restricted MLE under
``delta0 = -m``, whose large-sample limit solves Tango's quadratic with the expected cell
probabilities in place of the counts:

    p~10 = (sqrt(B^2 - 8 C) - B) / 4,   B = -q + (2 - p01 + p10) delta0,   C = -p10 delta0 (1 - delta0),
    sigma0^2 = 2 p~10 + delta0 (1 - delta0),

and the number of independent pairs for power ``1 - beta`` at one-sided level ``alpha`` is

    n = ((z_alpha sigma0 + z_beta sigma1) / (delta + m))^2

(Nam 1997's score-test sample size; the same construction as Farrington & Manning 1990,
Stat Med 9:1447-1454, for two independent proportions.  Wald-type tests use
``sigma0 = sigma1``: ``n = (z_alpha + z_beta)^2 sigma1^2 / (delta + m)^2``).  The equation
numbers of the papers could not be checked here; the formula is validated in
tests/studies/test_sizing.py by inverting the normal power function, by a numerical maximisation
of the constrained likelihood, and against simulation and exact enumeration.
Clustering: ``M`` trials per cluster with intra-cluster correlation ``rho`` inflate the
variance of the mean difference by the design effect ``1 + (M - 1) rho`` (Kish 1965,
*Survey Sampling*, sec. 5.4; Donner & Klar 2000, ch. 5) -- exact for any linear function of
the cell indicators under the Dirichlet-multinomial DGM -- so ``K = n (1 + (M - 1) rho) / M``.

Loss-rate estimand (``binomial_loss`` and its sequential wrappers: ``H0: p_loss >= m``,
pass iff the upper bound of the loss rate is at most ``m``).  The one-sample binomial
test of ``p`` against ``m`` needs

    n = ((z_alpha sqrt(m (1 - m)) + z_beta sqrt(p1 (1 - p1))) / (m - p1))^2

pairs at the alternative loss rate ``p1 = p10`` (Chow, Shao & Wang 2008, *Sample Size
Calculations in Clinical Research*, 2nd ed., sec. 4.1, one-sample proportion), with the
same design effect (the loss indicator is a binary function of a trial pair, so it has
ICC ``rho`` under the Dirichlet-multinomial DGM).  When ``p1 >= m`` the alternative lies in
the loss-rate null: the test's power stays at most about ``alpha`` and tends to 0 as K
grows, so no K reaches the target -- refused before any simulation.
"""
from __future__ import annotations

import math

from scipy import stats


def restricted_p10(p10: float, p01: float, delta0: float) -> float:
    """Large-sample limit of the restricted MLE of p10 under ``p01 - p10 = delta0``: Tango's
    (1998) closed-form quadratic (as in methods/fixed/tango_score.py) with the expected cell
    probabilities in place of the counts (n = 1)."""
    B = -(p01 + p10) + (2.0 - p01 + p10) * delta0
    C = -p10 * delta0 * (1.0 - delta0)
    return (math.sqrt(max(B * B - 8.0 * C, 0.0)) - B) / 4.0


def analytic_pairs(margin: float, difference: float, discordance: float, alpha: float, power: float,
                   variance: str = "score") -> dict[str, float]:
    """Independent trial pairs needed (real-valued) and the variances used."""
    if not 0.0 < margin < 1.0:
        raise ValueError(f"margin must lie in (0, 1), got {margin!r}")
    if difference <= -margin:
        raise ValueError(f"true difference {difference!r} must exceed -margin ({-margin}): power is only "
                         "defined under the alternative")
    if abs(difference) > discordance + 1e-12:
        raise ValueError(f"|difference| ({abs(difference)}) cannot exceed the discordance ({discordance})")
    if not 0.0 < alpha < 0.5 or not 0.0 < power < 1.0:
        raise ValueError(f"need 0 < alpha < 0.5 and 0 < power < 1, got alpha={alpha!r}, power={power!r}")
    if variance not in ("score", "wald"):
        raise ValueError(f"variance must be 'score' or 'wald', got {variance!r}")
    p10 = (discordance - difference) / 2.0
    p01 = (discordance + difference) / 2.0
    d0 = -margin
    s1 = discordance - difference ** 2
    if variance == "score":
        pt = restricted_p10(p10, p01, d0)
        s0 = 2.0 * pt + d0 * (1.0 - d0)
    else:
        pt, s0 = p10, s1
    za, zb = stats.norm.ppf(1.0 - alpha), stats.norm.ppf(power)
    n = ((za * math.sqrt(max(s0, 0.0)) + zb * math.sqrt(max(s1, 0.0))) / (difference + margin)) ** 2
    return {"pairs": n, "sigma0_sq": s0, "sigma1_sq": s1, "restricted_p10": pt, "z_alpha": za, "z_beta": zb}


def design_effect(trials: float, rho: float) -> float:
    return 1.0 + (trials - 1.0) * rho


def analytic_clusters(margin: float, difference: float, discordance: float, alpha: float, power: float,
                      trials: int = 1, rho: float = 0.0, variance: str = "score") -> dict[str, float]:
    a = analytic_pairs(margin, difference, discordance, alpha, power, variance)
    deff = design_effect(trials, rho)
    k = a["pairs"] * deff / trials
    return {**a, "design_effect": deff, "clusters_real": k, "clusters": max(2, int(math.ceil(k - 1e-9))),
            "trials": trials, "variance": variance}


def variance_kind(method) -> str:
    """Score variance for score / likelihood-type methods, Wald otherwise."""
    name = getattr(method, "name", "")
    return "score" if name in ("tango_score", "newcombe_hybrid", "exact_discordant") else "wald"


def analytic_loss_pairs(margin: float, loss_rate: float, alpha: float, power: float) -> dict[str, float]:
    """Independent trial pairs for the one-sample binomial test of the loss rate."""
    if loss_rate >= margin:
        raise ValueError(f"unreachable power: the alternative's loss rate p10 = {loss_rate:.6g} is not below the "
                         f"margin {margin:g}, so a loss-rate method's power does not grow with K (it tends to 0); "
                         "no number of clusters reaches the target")
    za, zb = stats.norm.ppf(1.0 - alpha), stats.norm.ppf(power)
    s0, s1 = margin * (1.0 - margin), loss_rate * (1.0 - loss_rate)
    n = ((za * math.sqrt(s0) + zb * math.sqrt(s1)) / (margin - loss_rate)) ** 2
    return {"pairs": n, "sigma0_sq": s0, "sigma1_sq": s1, "loss_rate": loss_rate, "z_alpha": za, "z_beta": zb}


def analytic_start(method, margin: float, difference: float, discordance: float, alpha: float, power: float,
                   trials: int = 1, rho: float = 0.0) -> dict[str, float]:
    """The analytic K for ``method``'s estimand; ValueError when no K can reach the power."""
    est = str(getattr(method.estimand, "value", method.estimand))
    if est != "loss_rate":
        return analytic_clusters(margin, difference, discordance, alpha, power, trials, rho, variance_kind(method))
    analytic_pairs(margin, difference, discordance, alpha, power, "wald")  # validates the inputs
    a = analytic_loss_pairs(margin, (discordance - difference) / 2.0, alpha, power)
    deff = design_effect(trials, rho)
    k = a["pairs"] * deff / trials
    return {**a, "design_effect": deff, "clusters_real": k, "clusters": max(2, int(math.ceil(k - 1e-9))),
            "trials": trials, "variance": "binomial"}


__all__ = ["analytic_pairs", "analytic_clusters", "analytic_loss_pairs", "analytic_start", "restricted_p10",
           "design_effect", "variance_kind"]


def distribution_free_floor(margin: float, alpha: float) -> int:
    """The fewest clusters at which any test valid for every law of cluster differences in
    [-1, 1] can pass an all-ties sample at margin ``m``: the two-point law {-1 w.p. m, 0 w.p.
    1 - m} has mean -m (on the null boundary) and gives every cluster difference 0 with
    probability (1 - m)^K, so a level-alpha test may pass that sample only once
    (1 - m)^K <= alpha, i.e. K >= log(1/alpha) / -log(1 - m) (122 at m = 0.03, alpha = 0.025).
    Below it every distribution-free method has power near zero whatever the data."""
    if not 0.0 < margin < 1.0 or not 0.0 < alpha < 1.0:
        raise ValueError(f"margin and alpha must lie in (0, 1), got {margin!r}, {alpha!r}")
    return int(math.ceil(math.log(1.0 / alpha) / -math.log1p(-margin) - 1e-12))
