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
from methods.fixed import _common
from methods.fixed._common import decide, no_bounds, pooled_counts, write_inconclusive


@nb.njit(cache=True)
def kernel(tables, margin, consts, lower, upper, estimate, status):
    z = consts[0]
    for r in range(tables.shape[0]):
        a, b, c, d = pooled_counts(tables, r)
        n = float(a + b + c + d)
        if n == 0.0:
            write_inconclusive(r, lower, upper, estimate, status)
            continue
        pb = (a + b) / n
        pc = (a + c) / n
        estimate[r] = pc - pb
        if n < 2.0:
            no_bounds(r, lower, upper, status)
            continue
        half = z * math.sqrt((pb * (1.0 - pb) + pc * (1.0 - pc)) / (n - 1.0))
        lower[r] = (pc - pb) - half
        upper[r] = (pc - pb) + half
        status[r] = decide(lower[r], margin)


METHOD = FixedMethod(
    name="lmeval_ztest",
    version="1",
    estimand=Estimand.TRIAL,
    citation="EleutherAI lm-evaluation-harness, scripts/model_comparator.py calculate_z_value (unpaired z on two "
             "accuracies) with lm_eval/api/metrics.py mean_stderr (ddof = 1); Wald form of the two-proportion test",
    summary="practitioner rule: unpaired two-proportion z on pooled pass rates, clusters and pairing ignored",
    kernel=kernel,
)
