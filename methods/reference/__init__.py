"""Slow, independent reference implementations of the fixed-sample methods.

Plain Python / numpy / scipy / statsmodels, written from the papers, one function per
method named after it: ``NAME(table_K4, margin, confidence, **options) -> (lower, upper,
estimate, status)`` with ``status`` one of "pass", "fail", "inconclusive".  They exist to
validate the numba kernels (tests) and as the per-replication baseline of
``simlab bench methods``; nothing in the evidence path uses them.
"""
__all__ = ["betting_horizon", "bounded", "cluster", "design_effect", "hierarchical_v1", "practitioner",
           "resample", "trial"]
