"""``alpha_spending`` -- group-sequential test of the standardised clustered difference with
Lan--DeMets alpha-spending boundaries.

At look ``j`` with ``k_j`` non-empty clusters, cluster-mean differences ``d`` (mean
``dbar``, sample SD ``s``, ddof = 1) and ``se = s / sqrt(k_j)``, the non-inferiority
statistic is ``Z_j = (dbar + margin) / se``.  The rule promotes at the first look with
``Z_j >= b_j``, where ``b_1..b_L`` spend the one-sided ``alpha`` over the information
fractions ``t_j = looks[j] / looks[-1]`` (information measured in clusters) with the
spending function of option ``spending``: 0 = O'Brien--Fleming-like, 1 = Pocock-like
(Lan & DeMets 1983, Biometrika 70:659-663), 2 = Hwang--Shih--DeCani with option ``gamma``
(Hwang, Shih & DeCani 1990, Stat Med 9:1439-1445).  Boundaries come from the recursive
numerical integration of Armitage, McPherson & Rowe (1969) as laid out by Jennison &
Turnbull (2000, ch. 19) -- see ``methods.sequential._spending``.

Bound: the repeated confidence bound ``dbar - b_j se`` (Jennison & Turnbull 2000, ch. 9),
so promotion is ``bound >= -margin``.  Optional harm boundary (option ``harm_alpha`` > 0,
default 0 = none): non-binding boundaries ``h_j`` from the same spending function at level
``harm_alpha`` for the reverse hypothesis; the rule stops for harm when
``dbar + h_j se < -margin`` (the candidate is worse than the margin allows).  Being
non-binding it does not change the promotion boundaries.

A look with fewer than ``min_clusters`` (option, default 2) non-empty clusters, or with
zero sample variance, cannot cross (the statistic is undefined there; this is where the
clustered normal interval's zero-variance false pass would come from).  The Z statistic
with an estimated variance is only asymptotically normal: studies measure the real level.
"""
import math

import numba as nb
import numpy as np

from methods.protocol import Estimand, OptionRange
from methods.sequential import _spending
from methods.sequential._clusterstats import welford_kernel
from methods.sequential.base import LOOK_CONTINUE, LOOK_HARM, LOOK_PROMOTE, SequentialMethod

SPENDING_CODES = {"obf": 0.0, "pocock": 1.0, "hsd": 2.0}
_KIND = {0: "obf", 1: "pocock", 2: "hsd"}


@nb.njit(cache=True)
def look(j, L, count, mean, m2, margin, consts):
    """(status, bound) of look j of L; consts = (min_clusters, efficacy[L], harm[L])."""
    se = math.sqrt(m2 / (count - 1) / count)
    b = consts[1 + j]
    h = consts[1 + L + j]
    low = mean - b * se
    if low >= -margin:
        return LOOK_PROMOTE, low
    if mean + h * se < -margin:
        return LOOK_HARM, low
    return LOOK_CONTINUE, low


kernel = welford_kernel(look)


def boundaries(method, alpha, schedule):
    """``(efficacy, harm)`` Z boundaries of this design for ``schedule`` (harm = +inf when off)."""
    kind = _KIND.get(int(method.options["spending"]))
    if kind is None or method.options["spending"] != int(method.options["spending"]):
        raise ValueError(f"alpha_spending: option spending must be 0 (obf), 1 (pocock) or 2 (hsd), "
                         f"got {method.options['spending']!r}")
    t = schedule.information_fractions()
    gamma = method.options["gamma"]
    eff = _spending.upper_bounds(kind, alpha, t, gamma)
    ha = method.options["harm_alpha"]
    if ha < 0.0 or ha >= 0.5:
        raise ValueError(f"alpha_spending: option harm_alpha must lie in [0, 0.5), got {ha!r}")
    harm = _spending.upper_bounds(kind, ha, t, gamma) if ha > 0.0 else np.full(len(t), math.inf)
    return eff, harm


def prepare(method, alpha, margin, schedule):
    eff, harm = boundaries(method, alpha, schedule)
    return np.concatenate([[method.options["min_clusters"]], eff, harm]).astype(np.float64)


METHOD = SequentialMethod(
    name="alpha_spending",
    version="1",
    estimand=Estimand.CLUSTER,
    citation="Lan & DeMets (1983) Biometrika 70:659-663; Hwang, Shih & DeCani (1990) Stat Med 9:1439-1445; "
             "Armitage, McPherson & Rowe (1969) J R Stat Soc A 132:235-244; Jennison & Turnbull (2000) "
             "Group Sequential Methods with Applications to Clinical Trials, ch. 7, 9 and 19",
    summary="standardised clustered difference vs Lan-DeMets spending boundaries (obf / pocock / hsd gamma), "
            "information in clusters; optional non-binding harm boundary",
    kernel=kernel,
    prepare=prepare,
    options={"spending": 0.0, "gamma": -4.0, "harm_alpha": 0.0, "min_clusters": 2.0},
    stops_for_harm=True,
    units=("clusters",),
    choices={"spending": SPENDING_CODES},
    ranges={"gamma": OptionRange(-_spending.HSD_GAMMA_LIMIT, _spending.HSD_GAMMA_LIMIT),
            "min_clusters": OptionRange(0.0, integer=True), "harm_alpha": OptionRange(0.0, 0.5)},
)
