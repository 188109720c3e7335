"""Sequential non-inferiority methods, one module each (see methods.sequential.base).

The public names are the method modules, ``base`` (the sequential protocol and result class)
and ``boundaries`` (the look schedules' boundaries); a method object is reached through
``methods.registry.get(name)``.  Modules starting with ``_`` are shared kernels.
"""
__all__ = ["alpha_spending", "base", "betting_cs", "bonferroni", "boundaries", "fixed_final",
           "likelihood_ratio", "msprt", "repeated_fixed"]
