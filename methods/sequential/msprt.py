"""``msprt`` -- mixture sequential probability ratio test on the cluster-mean differences
(normal mixture; Johari, Koomen, Pekelis & Walsh 2017, KDD "Peeking at A/B tests";
Johari, Koomen, Pekelis & Walsh 2022, Oper Res 70:1806-1821, "Always valid inference").

The non-empty clusters' mean differences ``d_1, d_2, ...`` (arrival order) are treated as
i.i.d. with mean ``Delta`` and variance ``sigma^2``.  With ``n`` clusters, mean ``dbar``
and a normal mixing distribution ``N(theta_0, tau^2)`` over the alternative, the mixture
likelihood ratio against ``theta_0`` is the closed-form normal-mixture mSPRT statistic of
Johari et al. (2022; Robbins 1970, the normal mixture of likelihood ratios -- the equation
number in the print was not checked here)

    Lambda_n(theta_0) = sqrt(sigma^2 / (sigma^2 + n tau^2))
                        * exp(n^2 tau^2 (dbar - theta_0)^2 / (2 sigma^2 (sigma^2 + n tau^2))).

``{theta_0 : Lambda_n(theta_0) < 1/alpha}`` is the always-valid confidence sequence
``dbar -+ w_n`` with

    w_n = sqrt(2 sigma^2 (sigma^2 + n tau^2) / (n^2 tau^2) * log(sqrt((sigma^2 + n tau^2) / sigma^2) / alpha)),

and the rule promotes at the first look where the lower end ``dbar - w_n >= -margin``
(i.e. ``Lambda_n(-margin) >= 1/alpha`` with ``dbar > -margin``).  The one-sided level is at
most alpha (the two-sided sequence's miscoverage; conservative).  As in Johari et al. the
unknown variance is replaced by the running sample variance ``s^2`` (ddof = 1): validity
is then asymptotic.  ``tau`` (option; 0 = use the margin) sets the mixture scale.  Looks
with fewer than ``min_clusters`` (option, default 2) non-empty clusters or zero sample
variance cannot cross.
"""
import math

import numba as nb
import numpy as np

from methods.protocol import Estimand, OptionRange
from methods.sequential._clusterstats import welford_kernel
from methods.sequential.base import LOOK_CONTINUE, LOOK_PROMOTE, SequentialMethod


@nb.njit(inline="always", cache=True)
def half_width(n, s2, tau2, alpha):
    v = s2 + n * tau2
    return math.sqrt(2.0 * s2 * v / (n * n * tau2) * (0.5 * math.log(v / s2) - math.log(alpha)))


@nb.njit(cache=True)
def look(j, L, count, mean, m2, margin, consts):
    """(status, bound) of a look; consts = (min_clusters, alpha, tau^2)."""
    s2 = m2 / (count - 1)
    low = mean - half_width(count, s2, consts[2], consts[1])
    return (LOOK_PROMOTE if low >= -margin else LOOK_CONTINUE), low


kernel = welford_kernel(look)


def prepare(method, alpha, margin, schedule):
    """consts = (min_clusters, alpha, tau^2); ``welford_kernel`` reads min_clusters first."""
    tau = method.options["tau"]
    if tau < 0.0:
        raise ValueError(f"msprt: option tau must be >= 0 (0 = the margin), got {tau!r}")
    tau = margin if tau == 0.0 else tau
    return np.array([method.options["min_clusters"], alpha, tau * tau], dtype=np.float64)


METHOD = SequentialMethod(
    name="msprt",
    version="1",
    estimand=Estimand.CLUSTER,
    citation="Johari, Koomen, Pekelis & Walsh (2022) Oper Res 70:1806-1821, normal-mixture mSPRT; "
             "Johari et al. (2017) KDD; Robbins (1970) Ann Math Stat 41:1397-1409",
    summary="normal-mixture SPRT / always-valid confidence sequence on cluster-mean differences, "
            "plug-in variance; promote when the lower end reaches -margin",
    kernel=kernel,
    prepare=prepare,
    options={"tau": 0.0, "min_clusters": 2.0},
    # tau is a scale on differences in [-1, 1]: beyond 100 its mixture lies far outside them, and
    # near 1e154 tau^2 overflows and the bound is NaN
    ranges={"min_clusters": OptionRange(0.0, integer=True), "tau": OptionRange(0.0, 100.0)},
)
