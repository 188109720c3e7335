"""Benchmarks, one module per workload, each measuring simlab beside a reference
implementation in the same run:

* ``simulate``   -- the table generator against a numpy Dirichlet-multinomial reference;
* ``methods``    -- every fixed method's batch kernel against its slow reference;
* ``study``      -- the study runner end to end against numpy and a fused limit kernel;
* ``sequential`` -- exact sequential enumeration and simulated sequential studies;
* ``gpu``        -- the study runner's moment path on a CUDA device against the CPU runner;
* ``qualify``    -- the batched qualification engine against the per-scenario engine;
* ``latency``    -- the interactive commands (``methods``, ``interval``, input errors) in fresh
  processes against the interpreter's start-up;
* ``power``      -- power of the candidate methods at a design on the same tables, with exact
  certified worst cases and calibrate / certify times (issue 26);
* ``summary``    -- ``bench_all``: every one of them, ending in one table written under
  ``results/bench/``.

Each module is imported only when its benchmark is asked for (each pulls in its own layer).
"""
import lazy_loader as _lazy

__getattr__, __dir__, __all__ = _lazy.attach(__name__, submod_attrs={
    "methods": ["bench_methods", "bench_methods_plan"],
    "sequential": ["bench_sequential", "bench_sequential_estimate"],
    "simulate": ["bench_simulate", "bench_simulate_estimate", "standard_scenario"],
    "study": ["bench_study", "bench_study_estimate"], "summary": ["bench_all", "bench_all_estimate"],
    "gpu": ["bench_gpu"], "qualify": ["bench_qualify", "bench_qualify_estimate"], "power": ["bench_power", "render_power"],
    "latency": ["bench_latency"],
})
