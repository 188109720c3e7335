"""Fixed-sample non-inferiority methods, one module each (see methods.protocol).

The public names are the method modules; a method object is reached through
``methods.registry.get(name)`` (which imports only the module it needs), never by importing
this package's modules wholesale.  Modules starting with ``_`` are shared kernels.
"""
__all__ = ["agresti_min", "bayes_hierarchical", "bayes_paired", "betting_ci", "betting_ci_horizon",
           "binomial_loss", "bonett_price", "cluster_bootstrap", "cluster_bootstrap_bca", "cluster_robust",
           "cluster_t", "clustered_normal", "clustered_score", "dm_likelihood_ratio", "dm_score", "em_table", "empirical_bernstein",
           "exact_discordant", "inspect_cluster_se", "judge_corrected", "lmeval_ztest", "newcombe_hybrid",
           "obuchowski", "paired_wald", "pass_hat_k", "tango_score", "trial_bootstrap"]
