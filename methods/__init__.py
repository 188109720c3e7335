"""Decision methods: one protocol, one small module per method, a registry.

Public API (the modules below may change; import from here)::

    from methods import get, names
    m = get("cluster_t")                        # a FixedMethod (or SequentialMethod)
    r = m.analyze([[3, 1, 0, 6], [4, 0, 1, 5]], margin=0.03)     # IntervalResult
    r.confidence_interval(), r.status
    m.batch(tables, margin=0.03, alpha=0.025)   # tables[R, K, 4] -> BatchResult

* protocol (``methods.protocol``): ``DecisionMethod``, ``FixedMethod``, ``Status``,
  ``Estimand``, ``BatchResult``, ``IntervalResult``; sequential methods:
  ``SequentialMethod``, ``LookSchedule``, ``SequentialResult`` (``methods.sequential.base``);
* finding methods: ``get``, ``names``, ``reference`` (``methods.registry``), ``MethodRef``;
  ``info`` / ``infos`` describe them (``MethodInfo``) from the catalogue without importing a
  kernel (``methods.catalogue``); the level, margin and option checks need no numpy
  (``methods.conventions``);
* writing your own: ``numpy_method`` (``methods.adapters``), then ``check_method``
  (``methods.checks``: the conformance check every registered method passes);
* single-analysis budgets: ``check_analysis_cost``, ``AnalysisTooCostly``;
* group-sequential boundaries: ``efficacy_boundaries``; ``explain`` (why inconclusive).

``methods.qualification`` (records, certificates, policies, coverage) is its own package.
Importing ``simlab`` first keys numba's cache on the kernel sources before any kernel here
is compiled or loaded.
"""
import lazy_loader as _lazy

import simlab  # noqa: F401

__getattr__, __dir__, __all__ = _lazy.attach(__name__, submodules=["qualification"], submod_attrs={
    "protocol": ["BatchResult", "DecisionMethod", "Estimand", "FixedMethod", "IntervalResult", "MethodIdentity",
                 "Status", "Theorem"],
    "sequential.base": ["LookSchedule", "SequentialBatchResult", "SequentialMethod", "SequentialResult"],
    "registry": ["get", "info", "infos", "names", "reference"],
    "catalogue": ["MethodInfo", "gpu_refusal"],
    "conventions": ["CALIBRATED", "OptionRange", "check_alpha", "check_margin", "option_values"],
    "method_ref": ["MethodRef", "UnknownMethodError", "as_method_refs"],
    "adapters": ["numpy_method"],
    "checks": ["check_method"],
    "analysis_cost": ["AnalysisCost", "AnalysisTooCostly", "analysis_cost", "check_analysis_cost", "first_use_compiles",
                      "fixed_and_per_table"],
    "sequential.boundaries": ["efficacy_boundaries"],
    "explain": ["explain"],
    "bench_speedups": ["bench_speedups"],
})
