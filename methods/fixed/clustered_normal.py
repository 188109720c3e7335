"""``clustered_normal`` -- the seed's teaching interval, reproduced flaw and all.

Each independent cluster contributes the mean of its paired differences
``d_k = (n01 - n10) / n_k``; the interval is ``mean(d) +- z * sd(d) / sqrt(K)`` with the
sample SD (ddof = 1) and a normal critical value.  Clusters without trials are missing.
Fewer non-empty clusters than the registered minimum (option ``min_clusters``, the seed's
``minimum_independent_clusters = 30``) -> inconclusive.  When every cluster has the same
difference the SD is zero and the interval collapses to a point: the seed's false pass
(30 customers, loss probability 0.04, margin 0.03: P(pass) = 0.96**30 = 0.29386).

With equal cluster sizes the mean and variance are computed from the integer moments
``(K, sum D_k, sum D_k^2)`` (``methods.fixed._moments``), which is also what the studies
engine's moment path samples.

Source: cx_eval_lab evidence-spine chapter, "Statistical non-inferiority" (the chapter this project grew from);
the interval is the textbook large-sample z interval for a mean of cluster summaries
(Donner & Klar 2000, *Design and Analysis of Cluster Randomization Trials*, sec. 6.2).
"""
import numpy as np

from methods.conventions import OptionRange
from methods.protocol import Estimand, z_value
from methods.fixed._cluster import check_min_clusters
from methods.fixed._moments import MomentMethod, cluster_mean_kernel, cluster_mean_moments_kernel


def prepare(method, alpha, margin, tables):
    """``[min_clusters, z, ..., z]``: the normal critical value for every cluster count."""
    K = max(int(tables.shape[1]), 1)
    return np.concatenate([[check_min_clusters(method)], np.full(K, z_value(alpha))])


METHOD = MomentMethod(
    name="clustered_normal",
    version="1",
    estimand=Estimand.CLUSTER,
    citation="cx_eval_lab evidence spine (seed chapter), clustered normal interval; "
             "Donner & Klar (2000) Design and Analysis of Cluster Randomization Trials, sec. 6.2",
    summary="mean of cluster-mean differences, sample SD over clusters, normal critical value",
    kernel=cluster_mean_kernel,
    prepare=prepare,
    options={"min_clusters": 30.0},
    ranges={"min_clusters": OptionRange(0.0, integer=True)},  # a count of clusters
    moments_kernel=cluster_mean_moments_kernel,
)
