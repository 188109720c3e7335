"""``cluster_robust`` -- trial-weighted difference with a CR2 cluster-robust variance and a
t(K - 1) reference.

Model: the per-pair difference ``y = candidate - baseline`` (in {-1, 0, 1}) regressed on a
constant by OLS, so the estimate is the trial-weighted difference

    dhat = sum_k D_k / N,   D_k = n01_k - n10_k,  N = sum_k n_k.

Its cluster-robust ("sandwich") variance with the CR2 bias-reduced-linearisation
correction of Bell & McCaffrey (2002, Survey Methodology 28:169-181: their bias-reduced
linearisation, BRL; restated as "CR2" by Pustejovsky & Tipton 2018, J Bus Econ Stat
36:672-683) is

    V = (X'X)^-1 [sum_k X_k' A_k e_k e_k' A_k X_k] (X'X)^-1,   A_k = (I - H_kk)^(-1/2),

with ``H_kk = X_k (X'X)^-1 X_k'`` the cluster's block of the hat matrix.  For the
intercept-only model ``X'X = N`` and ``H_kk = J / N`` (J the all-ones matrix), whose only
non-unit eigenvalue is ``1 - n_k / N`` on the ones vector, so ``1' A_k e_k =
(1 - n_k/N)^(-1/2) 1'e_k`` and the estimator reduces exactly to

    V = sum_k (D_k - n_k dhat)^2 / (1 - n_k / N) / N^2.

Why CR2: the plain sandwich (CR0) is biased downwards with few clusters; CR2 is unbiased
when the working model (iid pairs) holds, and with equal cluster sizes it equals ``s^2 / K``
of the cluster means, so the interval then coincides with ``cluster_t``.  (Mancl & DeRouen
2001, Biometrics 57:126-134, use ``A_k = (I - H_kk)^-1``, a larger correction; not used
here.)  Reference distribution: t with ``K - 1`` df (K = non-empty clusters), a common
simple choice for few clusters (Cameron & Miller 2015, J Human Resources 50:317-372,
sec. VI) rather than the Bell-McCaffrey Satterthwaite df.  Interval
``dhat +- t_{1-alpha/2, K-1} sqrt(V)``, unclipped.  Empty clusters are missing; fewer
than ``max(2, min_clusters)`` non-empty clusters -> inconclusive.  When every cluster has
the same ratio D_k / n_k the residuals vanish and the interval is a point, as for every
moment-based cluster method.

Estimand: trial-weighted (a ratio estimator).
"""
import math

import numba as nb

from methods.conventions import OptionRange
from methods.protocol import Estimand, FixedMethod
from methods.fixed._cluster import ratio_kernel, t_consts


@nb.njit(inline="always", cache=True)
def cr2_term(num, n, Nf):
    """Cluster k's CR2 term times N^3: the residual is e_k = I_k / N with I_k = ``num`` an
    integer, and e_k^2 / (1 - n_k/N) = I_k^2 / (N (N - n_k))."""
    return num * num / (Nf - n)


@nb.njit(cache=True)
def half_width(acc, k_used, Nf, consts):
    """``t_{K-1} sqrt(V)``, V the CR2 variance (module docstring) from the summed terms;
    consts = ``t_consts``."""
    var = acc / (Nf * Nf * Nf)
    return consts[k_used - 1] * math.sqrt(var)


kernel = ratio_kernel(cr2_term, half_width)


METHOD = FixedMethod(
    name="cluster_robust",
    version="1",
    estimand=Estimand.TRIAL,
    citation="Bell & McCaffrey (2002) Survey Methodology 28:169-181, bias-reduced linearisation (CR2: "
             "A_k = (I - H_kk)^-1/2); Pustejovsky & Tipton (2018) J Bus Econ Stat 36:672-683; t(K-1) "
             "reference as in Cameron & Miller (2015) J Human Resources 50:317-372, sec. VI",
    summary="trial-weighted difference, CR2 cluster-robust sandwich variance, t critical value on K-1 df",
    kernel=kernel,
    prepare=t_consts,
    options={"min_clusters": 2.0},
    ranges={"min_clusters": OptionRange(0.0, integer=True)},  # a count of clusters
)
