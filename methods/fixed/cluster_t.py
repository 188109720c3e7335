"""``cluster_t`` -- the seed's clustered interval with a Student t critical value.

Each independent cluster contributes the mean of its paired differences
``d_k = (n01 - n10) / n_k``; with ``K`` non-empty clusters, mean ``dbar`` and sample SD
``s`` (ddof = 1) the interval is

    dbar +- t_{1 - alpha/2, K - 1} * s / sqrt(K)

the one-sample t interval on cluster summaries (Student 1908, Biometrika 6:1-25; for
cluster-level analysis of clustered data: Donner & Klar 2000, *Design and Analysis of
Cluster Randomization Trials*, sec. 6.2, the t-test applied to cluster means).
Everything else is ``clustered_normal``: missing (empty) clusters are skipped, fewer
non-empty clusters than ``min_clusters`` (default 2, the least a t interval needs) ->
inconclusive.  The t quantile widens the interval for few clusters but does not remove
the seed's flaw: when every cluster has the same difference the SD is zero and the
interval is a point (30 customers who all tie still pass).  Estimand: cluster-weighted.
"""
from methods.conventions import OptionRange
from methods.protocol import Estimand
from methods.fixed._cluster import t_consts
from methods.fixed._moments import MomentMethod, cluster_mean_kernel, cluster_mean_moments_kernel

METHOD = MomentMethod(
    name="cluster_t",
    version="1",
    estimand=Estimand.CLUSTER,
    citation="Student (1908) Biometrika 6:1-25, one-sample t interval, applied to cluster means as in "
             "Donner & Klar (2000) Design and Analysis of Cluster Randomization Trials, sec. 6.2",
    summary="mean of cluster-mean differences, sample SD over clusters, t critical value on K-1 df",
    kernel=cluster_mean_kernel,
    prepare=t_consts,
    options={"min_clusters": 2.0},
    ranges={"min_clusters": OptionRange(0.0, integer=True)},  # a count of clusters
    moments_kernel=cluster_mean_moments_kernel,
)
