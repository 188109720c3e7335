"""Heterogeneous discordance: a gamma multiplier per cluster and/or per case (trial pair).

At discordance ``q`` on the null boundary a trial pair has ``p10 = (q + m)/2``,
``p01 = (q - m)/2`` and concordant pairs ``1 - q``, of which a share ``r`` both pass (``r``
puts the population baseline at ``baseline``).  Here a pair's discordance is ``Lambda q``
with ``Lambda = lambda_k xi_kj``: a cluster multiplier ``lambda_k`` (``cluster_shape``) times
a case multiplier ``xi_kj`` (``case_shape``), each a gamma variable of that shape (the
Poisson-gamma model of overdispersed rates; Johnson, Kemp & Kotz 2005, *Univariate Discrete
Distributions*, sec. 5.3), each of mean 1.  The direction split stays fixed (the pair's
cells are ``Lambda (q + m)/2``, ``Lambda (q - m)/2``, ``(1 - Lambda q) r``,
``(1 - Lambda q)(1 - r)``), so the trial-weighted difference is ``-m E[Lambda] = -m``.

A cell must stay a probability: ``Lambda q <= 1``.  So each multiplier is a gamma capped and
rescaled to mean 1 exactly -- ``lambda = min(G, c) / E[min(G, c)]``, ``G ~ Gamma(shape,
scale 1/shape)`` -- with ``c`` the cap at which ``lambda``'s largest value is ``L = 1/q``
(one multiplier) or ``sqrt(1/q)`` (both): ``c / E[min(G, c)]`` rises from 1 to infinity in
``c``, so Brent's method finds it.  ``E[min(G, c)] = P(shape + 1, shape c) + c Q(shape,
shape c)`` and ``E[min(G, c)^2] = (shape + 1)/shape P(shape + 2, shape c) + c^2 Q(shape, shape c)``
with the regularised incomplete gamma ``P = 1 - Q`` (``scipy.special.gammainc``).

Implied moments: every pair's cells average to the boundary's cells exactly; two trials of
one cluster have ``Cov(D_j, D_j') = m^2 Var(lambda)``, so ``ICC_D = m^2 Var(lambda) / (q -
m^2)`` -- small, because the multiplier scales both discordant cells.  A case multiplier
alone leaves every pair marginally with the boundary's cells and the pairs of a cluster
independent: that law *is* the independent-pairs law (tests check it); beside a cluster
multiplier it changes nothing either (the pairs' cells are linear in ``xi``).  It is kept
as the brief's case-level row, a measured check of that fact rather than an assumption.

Draw order (``DiscordanceSource`` version 1): per cluster ``lambda_k`` (a gamma variate,
only with ``cluster_shape``), then per trial ``xi_kj`` (only with ``case_shape``) and one
uniform for the pair's cell.
"""
from __future__ import annotations

import math
from functools import cached_property
from typing import Literal

import numba as nb
import numpy as np
from pydantic import Field, model_validator

from simlab.rng import uniform

from .base import DRAW_LIMIT, FixedTrialsLaw, RobustSource, null_rates, pair_cell
from .variates import gamma

MIN_SHAPE = 0.05   # below, the capped gamma is mostly its atom at the cap: no longer a gamma law


def capped_gamma(shape: float, largest: float) -> tuple[float, float, float]:
    """``(c, mean, variance)``: the cap ``c`` of ``G ~ Gamma(shape, 1/shape)`` at which
    ``min(G, c) / E[min(G, c)]`` has largest value ``largest``, that mean, and the variance of
    the rescaled multiplier (mean 1)."""
    from scipy.optimize import brentq
    from scipy.special import gammainc

    def moments(c: float) -> tuple[float, float]:
        tail = 1.0 - gammainc(shape, shape * c)
        return (float(gammainc(shape + 1.0, shape * c) + c * tail),
                float((shape + 1.0) / shape * gammainc(shape + 2.0, shape * c) + c * c * tail))

    if not largest > 1.0:
        raise ValueError(f"a mean-1 multiplier needs room above 1, got a largest value of {largest!r}")
    # x - largest * mean(x) is negative near 0 (mean(x) ~ x) and >= 0 at x = largest (mean <= 1);
    # where the tail beyond ``largest`` is below rounding, mean(largest) rounds to 1: no cap binds
    f = lambda x: x - largest * moments(x)[0]  # noqa: E731
    c = largest if f(largest) <= 0.0 else float(brentq(f, 1e-300, largest, xtol=1e-15, rtol=1e-15))
    mean, second = moments(c)
    return c, mean, second / (mean * mean) - 1.0


class DiscordanceLaw(FixedTrialsLaw):
    """Gamma multipliers of the discordance per cluster and/or per case (module docstring).
    A shape left out is a multiplier left out (both out: the independent-pairs law)."""
    kind: Literal["gamma_discordance"] = "gamma_discordance"
    discordance: float = Field(gt=0.0, lt=1.0)
    cluster_shape: float | None = Field(default=None, ge=MIN_SHAPE, le=1e6)
    case_shape: float | None = Field(default=None, ge=MIN_SHAPE, le=1e6)

    @model_validator(mode="after")
    def _on_boundary(self):
        null_rates(self.baseline, self.discordance, self.margin)
        return self

    @cached_property
    def multipliers(self) -> tuple[tuple[float, float, float], tuple[float, float, float]]:
        """``(cap, mean of the capped gamma, variance of the multiplier)`` of the cluster and the
        case multiplier (``(0, 1, 0)`` for one left out)."""
        shapes = [s for s in (self.cluster_shape, self.case_shape) if s is not None]
        largest = (1.0 / self.discordance) ** (1.0 / max(len(shapes), 1))
        return tuple(capped_gamma(s, largest) if s is not None else (0.0, 1.0, 0.0)
                     for s in (self.cluster_shape, self.case_shape))

    def cells(self) -> tuple[float, float, float, float]:
        q = self.discordance
        p10, p01, r = null_rates(self.baseline, q, self.margin)
        return (1.0 - q) * r, p10, p01, (1.0 - q) * (1.0 - r)

    def icc_d(self) -> float:
        m2 = self.margin ** 2
        return m2 * self.multipliers[0][2] / (self.discordance - m2)

    def source(self, seed: int) -> "DiscordanceSource":
        return DiscordanceSource(self, seed)

    def parameters(self) -> dict[str, float | str]:
        return {"baseline": self.baseline, "discordance": self.discordance,
                "cluster_shape": "none" if self.cluster_shape is None else self.cluster_shape,
                "case_shape": "none" if self.case_shape is None else self.case_shape}


@nb.njit(inline="always", cache=True)
def _multiplier(k1, k2, rep, draw, shape, cap, mean):
    g, draw = gamma(k1, k2, rep, draw, shape)
    return min(g / shape, cap) / mean, draw   # Gamma(shape, 1/shape) capped, rescaled to mean 1


@nb.njit(cache=True)
def fill_discordance(k1, k2, rep_start, out, trials, q, margin, r, cluster_shape, cluster_cap, cluster_mean,
                     case_shape, case_cap, case_mean):
    """Replications ``rep_start ..`` into ``out[R, K, 4]``; a shape of 0 leaves its multiplier out."""
    R, K, _ = out.shape
    s10 = (q + margin) / (2.0 * q)   # share of a discordant pair that the baseline wins
    for i in range(R):
        rep = rep_start + i
        draw = 0
        for k in range(K):
            lam = 1.0
            if cluster_shape > 0.0:
                lam, draw = _multiplier(k1, k2, rep, draw, cluster_shape, cluster_cap, cluster_mean)
            out[i, k, :] = 0
            for _ in range(trials):
                xi = 1.0
                if case_shape > 0.0:
                    xi, draw = _multiplier(k1, k2, rep, draw, case_shape, case_cap, case_mean)
                d = lam * xi * q           # this pair's discordance, <= 1 by the caps
                out[i, k, pair_cell(uniform(k1, k2, rep, draw), d * s10, d, r)] += 1
                draw += 1
            if draw >= DRAW_LIMIT:
                raise ValueError("a replication used more draws than its counter holds")


class DiscordanceSource(RobustSource):
    """Tables of a :class:`DiscordanceLaw`, one pure function of ``(seed, law, replication)``."""
    name = "gamma_discordance"
    version = "1"

    def kernel(self, out, rep_start):
        law = self.law
        (cc, cm, _), (tc, tm, _) = law.multipliers
        _, _, r = null_rates(law.baseline, law.discordance, law.margin)
        fill_discordance(self.k1, self.k2, rep_start, out, law.trials, law.discordance, law.margin, r,
                         law.cluster_shape or 0.0, cc, cm, law.case_shape or 0.0, tc, tm)
