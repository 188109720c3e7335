"""``tango_score`` -- Tango (1998) asymptotic score interval for paired proportions.

Tango T (1998). Equivalence test and confidence interval for the difference in proportions
for the paired-sample design. Stat Med 17:891-908 (correction: Stat Med 1999; 18:3511).
Pooled counts: wins ``w = n01``, losses ``l = n10``, ``n`` pairs.  For a hypothesised
difference ``delta`` the constrained MLE of the loss-cell probability is closed form,

    q(delta) = (sqrt(B^2 - 8 n C) - B) / (4 n),
    B = -(w + l) + (2n - w + l) delta,    C = -l delta (1 - delta),

and the score statistic is ``Z(delta) = (w - l - n delta) / sqrt(n (2 q + delta(1 - delta)))``
(Tango's statistic in our orientation: his ``b`` is our ``n01``, his ``c`` our ``n10``).
The interval is ``{delta : |Z(delta)| <= z}``: the lower bound solves ``Z = z`` on
``(-1, delta_hat)`` and the upper ``Z = -z`` on ``(delta_hat, 1)``, inside the kernel by a
bracketing root finder (Illinois false position with bisection steps, ``_trial._tango_root``;
about 9 score evaluations per bound) to an absolute tolerance of 1e-10 (``_trial.TANGO_TOL``).

Boundaries: no trials -> inconclusive (NaN).  No discordant pairs (all pass, all fail,
...) -> ``+-z^2 / (n + z^2)`` (Z is finite there; the interval is never degenerate).
Every pair a loss -> lower bound -1, fail; every pair a win -> upper bound 1.
"""
import numba as nb

from methods.protocol import Estimand, FixedMethod
from methods.fixed._trial import pooled_kernel, tango_bounds


@nb.njit(cache=True)
def interval(a, b, c, d, n, consts):
    """(lower, upper, estimate) of one pooled table with n > 0 trials; consts = (z,)."""
    lo, hi = tango_bounds(float(c), float(b), float(n), consts[0])
    return lo, hi, (c - b) / n


kernel = pooled_kernel(interval)


METHOD = FixedMethod(
    name="tango_score",
    version="1",
    estimand=Estimand.TRIAL,
    citation="Tango T (1998) Equivalence test and confidence interval for the difference in "
             "proportions for the paired-sample design. Stat Med 17:891-908 (score statistic "
             "with closed-form constrained MLE; bounds by bracketed root finding, tol 1e-10)",
    summary="pooled trial pairs; inverted Tango score test, bounds by root finding inside numba",
    kernel=kernel,
)
