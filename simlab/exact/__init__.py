"""Exact distributions of the paired, clustered DGM (no Monte Carlo error).

These engines know nothing of decision methods (layering: simlab <- methods <- studies);
``studies.exact.fixed`` runs a method's own batch kernel on the tables enumerated here and
weights its outputs by their probabilities.

* :mod:`simlab.exact.cluster_pmf` -- the exact law of one cluster's recorded table
  ``(n11, n10, n01, n00)``: multinomial (rho = 0) or Dirichlet-multinomial (rho > 0,
  Mosimann 1962, Biometrika 49:65-82) over the compositions of its size; with judge
  noise or pair loss the recorded law is computed exactly when it is still a
  multinomial (rho = 0, or clusters of one trial, where rho has no effect).
* :mod:`simlab.exact.pooled` -- the law of the *pooled* table (sum over clusters), by
  dynamic programming (successive convolution) over the clusters.  When every cluster
  holds at most one trial pair the pooled table is also the multiset of cluster
  tables, so it determines the full data up to the order of clusters.
* :mod:`simlab.exact.moments` -- the law of the integer sufficient statistics
  ``(sum v_k, sum v_k^2)`` of cluster-mean differences ``d_k / m_k = v_k / L`` (``L`` the
  least common multiple of the cluster sizes), by dynamic programming with one
  representative cluster-difference vector kept per state.  Cluster-moment methods
  (``clustered_normal``, ``cluster_t``) are functions of these statistics only.

What is exact, and when (see ``studies.exact.fixed`` for the method-side checks):

1. Any method whose result depends on the pooled table only ("trial-level" methods:
   Wald, score, Newcombe, exact-conditional ...) is exact through ``pooled`` for every
   scenario whose cluster laws are supported -- any rho, unequal explicit sizes,
   cluster-specific cells.  Clustering still matters for the pooled law through rho.
2. When every cluster has one trial pair (or none), the pooled counts are the counts
   of the four (five, with loss) possible cluster tables, so ANY method that is a
   deterministic function of the multiset of cluster tables -- i.e. invariant to the
   order of clusters -- is exact through ``pooled`` plus one representative table per
   state.  rho is irrelevant there: a Dirichlet-multinomial with one trial is a
   categorical draw with the mean cell probabilities.  A method that resamples with a
   seed tied to cluster order (a bootstrap) is not order-invariant and is not exact.
3. Cluster-moment methods are exact through ``moments`` whenever the clusters' sizes
   are fixed (no loss) and their laws supported.

Exactness is exact arithmetic of the distribution up to float64 rounding of
probabilities (relative 1e-15); the method's decision at a state is its own kernel's
decision on a representative table, so a state whose lower bound equals ``-margin``
to the last bit may be decided differently than a table with the same statistic
summed in another order.  Random cluster sizes (Poisson, geometric) and rho > 0 with
label noise or loss on clusters of several trials are not supported
(:class:`ExactUnsupported`).
"""
from .cluster_pmf import ExactUnsupported, cluster_law, cluster_laws, compositions, scenario_law_tables

__all__ = ["ExactUnsupported", "cluster_law", "cluster_laws", "compositions", "scenario_law_tables"]
