"""``betting_cs`` -- anytime-valid lower confidence sequence for the mean cluster difference by
betting (Waudby-Smith & Ramdas 2024, J R Stat Soc B 86:1-27, "Estimating means of bounded
random variables by betting"; arXiv 2010.09686).

Each non-empty cluster's mean difference ``d_i = (n01 - n10) / n_i`` lies in [-1, 1]; it is
mapped to ``x_i = (d_i + 1) / 2`` in [0, 1] (clusters are the independent units; arrival
order is the betting order).  For a candidate mean ``m`` the gambler's capital is

    K_t(m) = prod_{i <= t} (1 + lambda_i(m) (x_i - m)),   lambda_i(m) = min(lambda_i, c / m),

(the "+" half of WSR's hedged capital process: betting only that the mean exceeds ``m``),
with WSR's predictable plug-in bet at the one-sided level (section and equation numbers of
the print were not checked here; the formulas are those of the paper's PrPl / hedged
construction)

    lambda_t = sqrt(2 log(1/alpha) / (sigma2_{t-1} t log(1 + t))),
    mu_t = (1/2 + sum_{i<=t} x_i) / (t + 1),   sigma2_t = (1/4 + sum_{i<=t} (x_i - mu_i)^2) / (t + 1),

``sigma2_0 = 1/4``, truncated only through ``c / m`` (option ``truncation`` = c, default
1/2), which keeps every factor >= 1 - c > 0.  For every
``m >= mu`` the capital is a nonnegative supermartingale with initial value 1, so by
Ville's inequality ``L_t = sup{m : K_t(m) >= 1/alpha}`` is a lower confidence sequence:
P(exists t: mu < L_t) <= alpha (WSR, validity of the hedged capital CS).  ``K_t(m)`` is decreasing in ``m``, so
``L_t`` is found by bisection on ``log K_t``.  The rule promotes at the first look with
``2 L_t - 1 >= -margin`` -- equivalently ``K_t((1 - margin) / 2) >= 1/alpha`` -- evaluated
on the capital at the null value, with the decision as one bisection bracket end so the two
agree exactly.  The bound is the look's own ``2 L_t - 1`` (no running intersection).

The capital depends on the order of the clusters, not only on counts: the method is not
Markov and has no exact path enumeration; studies simulate it.
"""
import math

import numba as nb
import numpy as np

from methods.fixed._bounded import BOUNDED_MEAN_ASSUMPTIONS
from methods.protocol import Estimand, OptionRange, Theorem
from methods.sequential.base import LOOK_CONTINUE, LOOK_PROMOTE, SequentialMethod


@nb.njit(inline="always", cache=True)
def log_capital(xs, lams, t, m, c):
    s = 0.0
    cap = c / m if m > 0.0 else math.inf
    for i in range(t):
        lam = lams[i] if lams[i] < cap else cap
        s += math.log1p(lam * (xs[i] - m))
    return s


@nb.njit(cache=True)
def lower_bound_x(xs, lams, t, c, log_thr, m0, promoted):
    """sup{m in [0, 1] : log K_t(m) >= log_thr}, with m0 on the known side of the root."""
    if promoted:
        lo = m0
        hi = 1.0
    else:
        lo = 0.0
        hi = m0
        if log_capital(xs, lams, t, 0.0, c) < log_thr:
            return 0.0
    for _ in range(200):
        mid = 0.5 * (lo + hi)
        if mid <= lo or mid >= hi:
            break
        if log_capital(xs, lams, t, mid, c) >= log_thr:
            lo = mid
        else:
            hi = mid
    return lo


@nb.njit(cache=True)
def kernel(tables, ends, margin, consts, status, bound, estimate):
    alpha = consts[0]
    c = consts[1]
    all_bounds = consts[2] != 0.0
    log_thr = math.log(1.0 / alpha)
    two_log = 2.0 * log_thr
    m0 = (1.0 - margin) / 2.0
    R, K, _ = tables.shape
    L = ends.shape[1]
    xs = np.empty(K)
    lams = np.empty(K)
    for r in range(R):
        t = 0
        sum_x = 0.0
        sum_sq = 0.0
        sig2 = 0.25
        logk0 = 0.0
        cap0 = c / m0
        k = 0
        done = False
        for j in range(L):
            e = ends[r, j]
            while k < e:
                n = tables[r, k, 0] + tables[r, k, 1] + tables[r, k, 2] + tables[r, k, 3]
                if n > 0:
                    x = 0.5 * ((tables[r, k, 2] - tables[r, k, 1]) / n + 1.0)
                    t += 1
                    lam = math.sqrt(two_log / (sig2 * t * math.log1p(t)))
                    xs[t - 1] = x
                    lams[t - 1] = lam
                    lam0 = lam if lam < cap0 else cap0
                    logk0 += math.log1p(lam0 * (x - m0))
                    sum_x += x
                    mu = (0.5 + sum_x) / (t + 1.0)
                    sum_sq += (x - mu) * (x - mu)
                    sig2 = (0.25 + sum_sq) / (t + 1.0)
                k += 1
            if t == 0:
                status[r, j] = LOOK_CONTINUE
                bound[r, j] = math.nan
                estimate[r, j] = math.nan
                continue
            estimate[r, j] = 2.0 * (sum_x / t) - 1.0
            promoted = logk0 >= log_thr
            status[r, j] = LOOK_PROMOTE if promoted else LOOK_CONTINUE
            if all_bounds or (not done and (promoted or j == L - 1)):
                bound[r, j] = 2.0 * lower_bound_x(xs, lams, t, c, log_thr, m0, promoted) - 1.0
            else:
                bound[r, j] = math.nan
            if promoted:
                done = True


def prepare(method, alpha, margin, schedule):
    c = method.options["truncation"]
    if not (0.0 < c < 1.0):
        raise ValueError(f"betting_cs: option truncation must lie in (0, 1), got {c!r}")
    return np.array([alpha, c, method.options["all_bounds"]], dtype=np.float64)


METHOD = SequentialMethod(
    name="betting_cs",
    version="1",
    estimand=Estimand.CLUSTER,
    citation="Waudby-Smith & Ramdas (2024) J R Stat Soc B 86:1-27, predictable plug-in bet and "
             "hedged capital process (one-sided half); Ville (1939)",
    summary="betting confidence sequence for the mean cluster difference in [-1, 1]; promote when the "
            "lower bound reaches -margin",
    kernel=kernel,
    prepare=prepare,
    options={"truncation": 0.5, "all_bounds": 0.0},
    ranges={"all_bounds": OptionRange(0.0, 1.0, integer=True),  # a flag: 1 = every look's bound
            "truncation": OptionRange(0.0, 1.0)},  # the catalogue's closed check; the code refuses the open ends
    markov=False,
    theorem=Theorem(
        statement="for any law of the cluster differences in [-1, 1] with mean mu, P(the lower bound exceeds mu at "
                  "any look) <= alpha: an anytime-valid confidence sequence (the capital at mu is a nonnegative "
                  "martingale; Ville's inequality), so every look schedule keeps the level",
        assumptions=BOUNDED_MEAN_ASSUMPTIONS[:2] + (
            "the clusters' order does not depend on their outcomes; the look schedule may be anything, even chosen "
            "as the data arrive", BOUNDED_MEAN_ASSUMPTIONS[3]),
        citation="Waudby-Smith & Ramdas (2024) J R Stat Soc B 86:1-27 (betting confidence sequences); Ville (1939)"),
)
