"""A logit-normal random-effects law of paired outcomes (outside the Dirichlet-multinomial family).

Cluster ``k`` draws ``u_k ~ N(0, cluster_sd^2)``, shared by both arms, and
``v_k ~ N(0, candidate_sd^2)``, the candidate's alone; trial pair ``j`` of the cluster draws a
case effect ``e_kj ~ N(0, case_sd^2)`` shared by its two outcomes.  Given the effects the
outcomes are independent Bernoulli variables,

    P(baseline passes) = expit(mu_b + u_k + e_kj),   P(candidate passes) = expit(mu_c + u_k + v_k + e_kj),

the generalised linear mixed model of paired binary outcomes (Agresti 2013, *Categorical
Data Analysis*, 3rd ed., sec. 13.1 and 13.3: the logit-normal "subject-specific" model).
The intercepts are solved so that the *population-averaged* pass rates are ``baseline`` and
``baseline - margin``: the trial-weighted difference is exactly ``-margin`` (the null
boundary; the marginal rate of a logit-normal is not ``expit`` of its intercept).  The
expectations over normal effects are trapezoidal sums on a uniform grid of step ``h`` over
``[-9, 9]`` standard deviations: for an integrand analytic in the strip ``|Im z| < d`` the
error falls like ``exp(-2 pi d / h)`` (Trefethen & Weideman 2014, "The exponentially
convergent trapezoidal rule", SIAM Review 56:385-458, sec. 5), and ``expit(mu + s z)``
has its nearest poles at ``|Im z| = pi / s`` -- so at the largest sd here (``s = 4 sqrt(2)``)
and ``h = 0.05`` the error is below 1e-30, and the cut tails weigh 2e-19.  (Gauss-Hermite
needs hundreds of nodes at such sds, beyond what ``hermegauss`` computes.)  Tests compare
the sums with ``scipy.integrate.quad``.

The law states its pair cells (``p11`` by a two-dimensional sum over ``u + e`` and ``v``),
and the ICC of ``D``: with ``g(u, v) = E_e[expit(mu_c + u + v + e) - expit(mu_b + u + e)]``,
two trials of one cluster have ``Cov(D_j, D_j') = Var g(u_k, v_k)``, so
``ICC_D = (E g^2 - margin^2) / (q - margin^2)`` (a three-dimensional sum).

Draw order in a replication (the contract of ``LogitNormalSource``, version 1): per cluster
in order, ``u`` then ``v`` (two uniforms each, only when that sd is positive), then per trial
``e`` (two uniforms, only when ``case_sd > 0``), the baseline's uniform and the candidate's.
"""
from __future__ import annotations

import math
from functools import cached_property, lru_cache
from typing import Literal

import numba as nb
import numpy as np
from pydantic import Field, model_validator

from simlab.rng import uniform

from .base import FixedTrialsLaw, RobustSource
from .variates import normal

MAX_SD = 4.0      # effects' sds (logit scale)
HALF_WIDTH = 9.0  # the grid covers +-9 standard deviations
STEP = 0.05       # grid step of the one- and two-dimensional sums
ICC_STEP = 0.1    # of the three-dimensional ICC sum: each sd <= 4, error ~ exp(-2 pi (pi / 4) / 0.1) < 1e-21


@lru_cache(maxsize=None)
def _grid(step: float) -> tuple[np.ndarray, np.ndarray]:
    x = np.linspace(-HALF_WIDTH, HALF_WIDTH, int(round(2 * HALF_WIDTH / step)) + 1)
    return x, step * np.exp(-0.5 * x * x) / math.sqrt(2.0 * math.pi)   # E f(Z) ~ sum w f(x)


def _nodes(sd: float, step: float = STEP) -> tuple[np.ndarray, np.ndarray]:
    """``(sd * x, w)``: nodes and weights of ``E f(sd Z)`` (one node when ``sd = 0``)."""
    if sd == 0.0:
        return np.zeros(1), np.ones(1)
    x, w = _grid(step)
    return sd * x, w


def _expit(x):
    from scipy.special import expit

    return expit(x)


def mean_expit(mu: float, sd: float) -> float:
    """``E expit(mu + sd Z)``, ``Z ~ N(0, 1)`` (trapezoidal sum, module docstring)."""
    x, w = _nodes(sd)
    return float(np.sum(w * _expit(mu + x)))


def solve_intercept(rate: float, sd: float) -> float:
    """The ``mu`` with ``E expit(mu + sd Z) = rate`` (increasing in ``mu``; Brent's method)."""
    from scipy.optimize import brentq

    if not 0.0 < rate < 1.0:
        raise ValueError(f"a pass rate must lie in (0, 1), got {rate!r}")
    return float(brentq(lambda mu: mean_expit(mu, sd) - rate, -60.0, 60.0, xtol=1e-14, rtol=1e-15))


class LogitNormalLaw(FixedTrialsLaw):
    """Logit-normal cluster, candidate and case effects at the null boundary (module docstring)."""
    kind: Literal["logit_normal"] = "logit_normal"
    cluster_sd: float = Field(ge=0.0, le=MAX_SD)
    candidate_sd: float = Field(default=0.0, ge=0.0, le=MAX_SD)
    case_sd: float = Field(default=0.0, ge=0.0, le=MAX_SD)

    @model_validator(mode="after")
    def _candidate_rate(self):
        if self.baseline - self.margin <= 0.0:
            raise ValueError(f"baseline ({self.baseline:g}) must exceed margin ({self.margin:g}): the candidate's "
                             "pass rate baseline - margin must be positive")
        return self

    @cached_property
    def intercepts(self) -> tuple[float, float]:
        """``(mu_b, mu_c)``: population pass rates ``baseline`` and ``baseline - margin``."""
        shared = math.hypot(self.cluster_sd, self.case_sd)
        return (solve_intercept(self.baseline, shared),
                solve_intercept(self.baseline - self.margin, math.hypot(shared, self.candidate_sd)))

    def cells(self) -> tuple[float, float, float, float]:
        mu_b, mu_c = self.intercepts
        x, wx = _nodes(math.hypot(self.cluster_sd, self.case_sd))   # u + e, shared by both arms
        v, wv = _nodes(self.candidate_sd)
        pc = _expit(mu_c + x[:, None] + v[None, :]) @ wv           # P(candidate passes | u + e)
        p11 = float(np.sum(wx * _expit(mu_b + x) * pc))
        b, c = self.baseline, self.baseline - self.margin
        return p11, b - p11, c - p11, 1.0 - b - c + p11

    def icc_d(self) -> float:
        mu_b, mu_c = self.intercepts
        u, wu = _nodes(self.cluster_sd, ICC_STEP)
        v, wv = _nodes(self.candidate_sd, ICC_STEP)
        e, we = _nodes(self.case_sd, ICC_STEP)
        eg2 = 0.0
        for ui, wi in zip(u, wu):   # g(u, v) = E_e[...], one u at a time (memory stays two-dimensional)
            g = (_expit(mu_c + ui + v[:, None] + e[None, :]) - _expit(mu_b + ui + e)) @ we
            eg2 += wi * float(wv @ (g * g))
        m2 = self.margin ** 2
        q = self.implied_discordance()
        return (eg2 - m2) / (q - m2)

    def source(self, seed: int) -> "LogitNormalSource":
        return LogitNormalSource(self, seed)

    def parameters(self) -> dict[str, float | str]:
        return {"baseline": self.baseline, "cluster_sd": self.cluster_sd, "candidate_sd": self.candidate_sd,
                "case_sd": self.case_sd}


@nb.njit(inline="always", cache=True)
def _expit_nb(x):
    return 1.0 / (1.0 + math.exp(-x))


@nb.njit(cache=True)
def fill_logit_normal(k1, k2, rep_start, out, trials, mu_b, mu_c, cluster_sd, candidate_sd, case_sd):
    """Replications ``rep_start ..`` of the law into ``out[R, K, 4]`` (draw order: module docstring)."""
    R, K, _ = out.shape
    for i in range(R):
        rep = rep_start + i
        draw = 0
        for k in range(K):
            u = 0.0
            v = 0.0
            if cluster_sd > 0.0:
                z, draw = normal(k1, k2, rep, draw)
                u = cluster_sd * z
            if candidate_sd > 0.0:
                z, draw = normal(k1, k2, rep, draw)
                v = candidate_sd * z
            out[i, k, :] = 0
            for _ in range(trials):
                e = 0.0
                if case_sd > 0.0:
                    z, draw = normal(k1, k2, rep, draw)
                    e = case_sd * z
                base_fails = uniform(k1, k2, rep, draw) >= _expit_nb(mu_b + u + e)
                cand_fails = uniform(k1, k2, rep, draw + 1) >= _expit_nb(mu_c + u + v + e)
                draw += 2
                out[i, k, 2 * base_fails + cand_fails] += 1   # simlab.scenario order: n11, n10, n01, n00


class LogitNormalSource(RobustSource):
    """Tables of a :class:`LogitNormalLaw`, one pure function of ``(seed, law, replication)``."""
    name = "logit_normal"
    version = "1"

    def kernel(self, out, rep_start):
        law = self.law
        mu_b, mu_c = law.intercepts
        fill_logit_normal(self.k1, self.k2, rep_start, out, law.trials, mu_b, mu_c, law.cluster_sd,
                          law.candidate_sd, law.case_sd)
