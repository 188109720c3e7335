"""``inspect_cluster_se`` -- Inspect AI's clustered standard error on per-sample means, each
model's accuracy with its own standard error, compared with a normal interval (a
practitioner rule, here to be measured, not recommended).

Source read: UKGovernmentBEIS/inspect_ai, ``src/inspect_ai/scorer/_metrics/std.py``, metric
``stderr(cluster=...)`` (inner ``clustered_metric``): with scores ``s_i`` (one per sample,
after the epoch reducer -- the default reduces a sample's epochs to their mean), overall mean
``sbar`` and ``C`` clusters,

    se = sqrt( C / (C - 1) * sum_c ( sum_{i in c} (s_i - sbar) )^2 ) / n_scores,

the CR0 sandwich with the finite-cluster factor ``C / (C - 1)`` (the docstring points to
Miller 2024, arXiv 2411.00640, Appendix A).  Here each table row is one sample (a task) with
``n_k`` epochs and is its own cluster, so each model's score is the mean over samples of its
per-sample pass rate (baseline ``(n11 + n10) / n_k``, candidate ``(n11 + n01) / n_k``) and

    se_arm = sqrt( C / (C - 1) * sum_k (s_k - sbar)^2 ) / C.

An Inspect log reports each model's accuracy and stderr; comparing two logs, the difference
gets ``se = sqrt(se_b^2 + se_c^2)`` (the unpaired combination, as lm-evaluation-harness's
comparator does) and the interval ``(sbar_c - sbar_b) +- z_{1 - alpha} se``.  (Applied instead to
the paired per-sample differences, the same formula is ``cluster_t``'s standard error with a
normal critical value: the library's ``clustered_normal`` with ``min_clusters = 2``.)
Estimand: cluster-weighted (mean of per-sample means).  Empty rows are missing samples and
skipped; fewer than 2 samples -> inconclusive (``C - 1 = 0``).  Every sample all-pass (or
every per-sample rate equal in both arms) -> both standard errors 0, a point interval: the
seed's zero-variance pass, reproduced on purpose.
"""
import math

import numba as nb

from methods.protocol import Estimand, FixedMethod
from methods.fixed._common import decide, no_bounds, write_inconclusive


@nb.njit(cache=True)
def kernel(tables, margin, consts, lower, upper, estimate, status):
    z = consts[0]
    K = tables.shape[1]
    for r in range(tables.shape[0]):
        C = 0
        sb = 0.0
        sc = 0.0
        for k in range(K):
            n = tables[r, k, 0] + tables[r, k, 1] + tables[r, k, 2] + tables[r, k, 3]
            if n == 0:
                continue
            C += 1
            sb += (tables[r, k, 0] + tables[r, k, 1]) / n
            sc += (tables[r, k, 0] + tables[r, k, 2]) / n
        if C == 0:
            write_inconclusive(r, lower, upper, estimate, status)
            continue
        mb = sb / C
        mc = sc / C
        estimate[r] = mc - mb
        if C < 2:
            no_bounds(r, lower, upper, status)
            continue
        vb = 0.0
        vc = 0.0
        for k in range(K):
            n = tables[r, k, 0] + tables[r, k, 1] + tables[r, k, 2] + tables[r, k, 3]
            if n == 0:
                continue
            eb = (tables[r, k, 0] + tables[r, k, 1]) / n - mb
            ec = (tables[r, k, 0] + tables[r, k, 2]) / n - mc
            vb += eb * eb
            vc += ec * ec
        f = C / (C - 1.0) / (float(C) * C)
        half = z * math.sqrt(f * (vb + vc))
        lower[r] = (mc - mb) - half
        upper[r] = (mc - mb) + half
        status[r] = decide(lower[r], margin)


METHOD = FixedMethod(
    name="inspect_cluster_se",
    version="1",
    estimand=Estimand.CLUSTER,
    citation="UK AISI Inspect AI, src/inspect_ai/scorer/_metrics/std.py stderr(cluster=...) (CR0 with C/(C-1), "
             "Miller 2024 arXiv 2411.00640 App. A) on per-sample epoch means; two logs combined as "
             "sqrt(se_b^2 + se_c^2), normal interval",
    summary="practitioner rule: each model's Inspect clustered stderr on per-sample means, unpaired combination, "
            "normal interval",
    kernel=kernel,
)
