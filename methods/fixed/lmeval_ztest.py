"""``lmeval_ztest`` -- the unpaired two-proportion z-test that lm-evaluation-harness's
model-comparison script applies to two models' pass rates (a practitioner rule, here to be
measured, not recommended).

Source read: EleutherAI/lm-evaluation-harness, ``scripts/model_comparator.py``, function
``calculate_z_value``: ``Z = (acc1 - acc2) / sqrt(se1^2 + se2^2)`` with each model's
``acc_stderr`` from ``lm_eval/api/metrics.py`` ``mean_stderr`` (sample standard deviation,
ddof = 1, over sqrt(n)); for 0/1 scores ``se = sqrt(p (1 - p) / (n - 1))``; two-sided p-value
compared with alpha.  As a non-inferiority interval: every trial of every cluster is one
"document", clusters and pairing are ignored,

    p_b = (n11 + n10) / N,  p_c = (n11 + n01) / N,
    (p_c - p_b) +- z_{1 - alpha} sqrt(p_b (1 - p_b) / (N - 1) + p_c (1 - p_c) / (N - 1)),

unclipped (the z-test's Wald form; ``alpha`` one-sided, i.e. the script's two-sided test at
``2 alpha``).  Estimand: trial-weighted.  Boundaries: fewer than 2 trials -> inconclusive
(``mean_stderr`` divides by n - 1 = 0); both arms all-pass or all-fail -> both standard errors
0, the interval is the point 0, *pass* (the rule's flaw, reproduced on purpose); the seed's
sample with no losses has p_b = p_c = 1 and passes the same way.
"""
import math

import numba as nb

from methods.protocol import Estimand, FixedMethod
from methods.fixed._trial import pooled_kernel


@nb.njit(cache=True)
def interval(a, b, c, d, n, consts):
    """(lower, upper, estimate) of one pooled table with n > 0 trials (no bounds, NaN, from
    a single trial); consts = (z,)."""
    nf = float(n)
    pb = (a + b) / nf
    pc = (a + c) / nf
    if nf < 2.0:
        return math.nan, math.nan, pc - pb
    half = consts[0] * math.sqrt((pb * (1.0 - pb) + pc * (1.0 - pc)) / (nf - 1.0))
    return (pc - pb) - half, (pc - pb) + half, pc - pb


kernel = pooled_kernel(interval)


METHOD = FixedMethod(
    name="lmeval_ztest",
    version="1",
    estimand=Estimand.TRIAL,
    citation="EleutherAI lm-evaluation-harness, scripts/model_comparator.py calculate_z_value (unpaired z on two "
             "accuracies) with lm_eval/api/metrics.py mean_stderr (ddof = 1); Wald form of the two-proportion test",
    summary="practitioner rule: unpaired two-proportion z on pooled pass rates, clusters and pairing ignored",
    kernel=kernel,
)
