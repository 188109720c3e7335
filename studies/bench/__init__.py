"""Benchmarks, one module per workload, each measuring simlab beside a reference
implementation in the same run:

* ``simulate``   -- the table generator against a numpy Dirichlet-multinomial reference;
* ``methods``    -- every fixed method's batch kernel against its slow reference;
* ``study``      -- the study runner end to end against numpy and a fused limit kernel;
* ``sequential`` -- exact sequential enumeration and simulated sequential studies;
* ``gpu``        -- the study runner's moment path on a CUDA device against the CPU runner;
* ``qualify``    -- the batched qualification engine against the per-scenario engine;
* ``summary``    -- ``bench_all``: every one of them, ending in one table written under
  ``results/bench/``.
"""
import importlib

_HOME = {"bench_methods": "methods", "bench_sequential": "sequential", "bench_simulate": "simulate",
         "standard_scenario": "simulate", "bench_study": "study", "bench_all": "summary",
         "bench_gpu": "gpu", "bench_qualify": "qualify"}


def __getattr__(name: str):
    """Import a benchmark's module only when it is asked for (each pulls in its own layer)."""
    if name in _HOME:
        return getattr(importlib.import_module(f"{__name__}.{_HOME[name]}"), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = sorted(_HOME)
