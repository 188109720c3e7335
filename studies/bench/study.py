"""``simlab bench study``: the study runner end to end against references, same run.

Workload (``../shared/bench/limit_bench.py``): K = 30 clusters x M = 3 trials,
independent arms with baseline pass 0.97 and candidate pass 0.93, rho = 0,
``clustered_normal`` at margin 0.03 and 95%.  Measured, in this order and in one
process:

* ``numpy_vectorised`` -- the textbook numpy implementation of the same workload (two
  uniform arrays per chunk, cluster means, SD, normal bound), one thread;
* ``study_runner_1job`` -- :func:`studies.engine.runner.run_study` on a one-scenario spec with
  ``n_jobs = 1`` (composition sampler: one uniform per group of three clusters; every
  method here decides from cluster moments and the clusters share one size, so the
  runner takes its moment path: each replication's ``(K, sum D, sum D^2)`` is drawn
  without writing tables, then the method's moment kernel, integer tallies, dataset
  assembly);
* ``study_runner_1job_tables`` -- the same run forced onto the table path (``tables[R,
  K, 4]`` filled, then the method's table kernel): what a study pays when one of its
  methods needs the tables;
* ``fused_kernel_1thread`` -- ``cpu_ser`` of the ``limit_kernel`` file (a fused,
  single-purpose numba loop with two draws per trial pair);
* then all cores: ``run_study`` with ``n_jobs = cores`` (joblib worker pool warmed by a
  small run first, so worker start-up is not in the timing) and ``cpu_par`` with
  ``cores`` numba threads.

Each row is the fastest of ``repeat`` runs, as ``timeit`` reports.

The exact pass probability (``studies.exact.fixed``, cluster-moment engine) is reported so
each implementation's pass rate can be checked against it.
"""
from __future__ import annotations

import importlib.util
import math
import os
import time
from pathlib import Path
from typing import Callable

import numpy as np

from methods.protocol import z_value

K, M, PB, PC, MARGIN, ALPHA = 30, 3, 0.97, 0.93, 0.03, 0.025


def numpy_reference(seed: int, R: int, chunk: int = 20_000) -> int:
    """Numpy-vectorised workload; returns the number of passing replications."""
    rng = np.random.default_rng(seed)
    z = z_value(ALPHA)
    c = 0
    for s in range(0, R, chunk):
        n = min(chunk, R - s)
        b = rng.random((n, K, M)) < PB
        cc = rng.random((n, K, M)) < PC
        cm = (cc.astype(np.int8) - b.astype(np.int8)).mean(axis=2)
        mean = cm.mean(axis=1)
        sd = cm.std(axis=1, ddof=1)
        c += int(((mean - z * sd / math.sqrt(K)) >= -MARGIN).sum())
    return c


def bench_spec(reps: int, seed: int):
    from studies.engine.spec import StudySpec

    return StudySpec.model_validate({
        "name": "bench-study", "methods": ["clustered_normal"],
        "scenario": {"clusters": K, "trials": M, "rho": 0.0, "baseline": PB, "candidate": PC},
        "margins": [MARGIN], "alphas": [ALPHA], "replications": reps, "seed": seed})


def load_limit_kernel(path: str | Path):
    """Import ``cpu_ser`` and ``cpu_par`` from the limit-benchmark file at ``path``."""
    p = Path(path)
    if not p.is_file():
        raise ValueError(f"limit_kernel: no such file {p}")
    spec = importlib.util.spec_from_file_location("simlab_limit_kernel", p)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    for name in ("cpu_ser", "cpu_par"):
        if not callable(getattr(mod, name, None)):
            raise ValueError(f"limit_kernel {p} defines no function {name!r}")
    return mod.cpu_ser, mod.cpu_par


def physical_cores() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # pragma: no cover - non-Linux
        return os.cpu_count() or 1


def best_of(fn, repeat: int) -> tuple[float, int]:
    """Fastest of ``repeat`` timed calls (as ``timeit`` reports): on a shared machine the
    minimum is the least disturbed measurement; every row gets the same treatment."""
    best, value = math.inf, 0
    for _ in range(repeat):
        t = time.perf_counter()
        value = fn()
        best = min(best, time.perf_counter() - t)
    return best, value


def same_measures(a, b) -> bool:
    """Every data variable of two study datasets bitwise equal (NaN equal to NaN)."""
    if set(a.data_vars) != set(b.data_vars):
        return False
    for v in a.data_vars:
        x, y = a[v].values, b[v].values
        if x.dtype.kind == "f" and not np.array_equal(x, y, equal_nan=True):
            return False
        if x.dtype.kind != "f" and not np.array_equal(x, y):
            return False
    return True


def _pilot_line(run: Callable[[int], object]):
    """``(a, b)`` of ``t(R) = a + b R`` for ``run(R)`` (``studies.engine.cost``'s two-count pilot,
    which warms the kernels first)."""
    from studies.engine.cost import pilot_model

    run(256)  # kernels of every batch size loaded (a compile inside a timing read as a per-replication cost)
    model = pilot_model(lambda pairs: (run, pairs), float(K * M))
    return model.seconds(K * M, 0), model.seconds(K * M, 1) - model.seconds(K * M, 0)


def bench_study_estimate(reps: int = 32_000_000, numpy_reps: int = 400_000, n_jobs: int | None = None,
                         seed: int = 1, repeat: int = 3, fused: bool = False):
    """Wall seconds of :func:`bench_study` (``studies.engine.cost.TimeEstimate``) from pilots of
    its rows: the numpy reference and the runner's moment and table paths on one job, each
    ``repeat`` times; the fused kernel's rows at the table path's rate (the fused kernel is that
    workload's speed limit), the all-cores rows at the one-job rates over the cores."""
    from studies.engine.cost import TimeEstimate
    from studies.engine.runner import run_study

    cores = n_jobs or physical_cores()

    def runner(moments: bool) -> Callable[[int], object]:
        return lambda r: run_study(bench_spec(max(r, 1), seed), n_jobs=1, chunk_size=max(1, r // 8),
                                   progress=False, moments=moments)

    np_a, np_b = _pilot_line(lambda r: numpy_reference(seed, max(r, 1)))
    m_a, m_b = _pilot_line(runner(True))
    t_a, t_b = _pilot_line(runner(False))
    one = (np_a + np_b * numpy_reps) + (m_a + m_b * reps) + (t_a + t_b * reps) + (t_b * reps if fused else 0.0)
    if cores > 1:
        one += m_a + m_b * reps / cores + (t_b * reps / cores if fused else 0.0)
    wall = repeat * one + (m_a + m_b * 2000)  # plus the warm-up run
    return TimeEstimate(wall, wall, 1)


def bench_study(reps: int = 32_000_000, numpy_reps: int = 400_000, limit_kernel: str | Path | None = None,
                n_jobs: int | None = None, seed: int = 1, repeat: int = 3,
                progress: Callable[[str], object] | None = None) -> dict:
    """``progress(label)`` is told each timing as it starts (the defaults take about a minute)."""
    import numba

    from methods import registry
    from simlab.sampling import table_source

    from studies.exact.fixed import exact_measures
    from studies.engine.evaluate import moment_path
    from studies.engine.runner import run_study
    from studies.engine.spec import parse_spec

    cores = n_jobs or physical_cores()
    spec = bench_spec(reps, seed)
    z = z_value(ALPHA)
    rows = []

    def say(label: str) -> None:
        if progress is not None:
            progress(label)

    def row(name, threads, n, seconds, passes):
        rows.append({"name": name, "threads": threads, "replications": n, "seconds": seconds,
                     "replications_per_s": n / seconds, "pass_rate": passes / n})

    # warm-ups: numba caches, the registry, kernels (never timed)
    say("warming up (kernels, caches)")
    numpy_reference(seed, 1000)
    small = parse_spec({**spec.model_dump(mode="json"), "replications": 2000})
    run_study(small, n_jobs=1)

    say(f"timing the numpy reference: {numpy_reps:,} replications, best of {repeat}")
    dt, c = best_of(lambda: numpy_reference(seed, numpy_reps), repeat)
    row("numpy_vectorised", 1, numpy_reps, dt, c)

    chunk = max(1, reps // 8)
    say(f"timing the study runner, 1 job (moment and table paths): {reps:,} replications, best of {repeat} each")
    dt, ds = best_of(lambda: run_study(spec, n_jobs=1, chunk_size=chunk, progress=False), repeat)
    row("study_runner_1job", 1, reps, dt, int(ds.n_pass.values.ravel()[0]))
    dt, dt_tables = best_of(lambda: run_study(spec, n_jobs=1, chunk_size=chunk, progress=False, moments=False), repeat)
    row("study_runner_1job_tables", 1, reps, dt, int(dt_tables.n_pass.values.ravel()[0]))

    fused = None
    if limit_kernel is not None:
        cpu_ser, cpu_par = load_limit_kernel(limit_kernel)
        say("timing the fused limit kernel, 1 thread")
        cpu_ser(seed, 1000, K, M, PB, PC, MARGIN, z)
        dt, v = best_of(lambda: int(cpu_ser(seed, reps, K, M, PB, PC, MARGIN, z)), repeat)
        row("fused_kernel_1thread", 1, reps, dt, v)
        fused = cpu_par

    if cores > 1:
        say(f"timing the study runner, {cores} jobs")
        run_study(parse_spec({**spec.model_dump(mode="json"), "replications": 4000}), n_jobs=cores,
                  chunk_size=1000, progress=False)  # start and warm the worker pool
        dt, ds = best_of(lambda: run_study(spec, n_jobs=cores, chunk_size=max(1, reps // (4 * cores)),
                                         progress=False), repeat)
        row(f"study_runner_{cores}jobs", cores, reps, dt, int(ds.n_pass.values.ravel()[0]))
        if fused is not None:
            old = numba.get_num_threads()
            numba.set_num_threads(min(cores, numba.config.NUMBA_NUM_THREADS))
            try:
                fused(seed, 1000, K, M, PB, PC, MARGIN, z)
                dt, v = best_of(lambda: int(fused(seed, reps, K, M, PB, PC, MARGIN, z)), repeat)
                row(f"fused_kernel_{numba.get_num_threads()}threads", numba.get_num_threads(), reps, dt, v)
            finally:
                numba.set_num_threads(old)

    rate = {r["name"]: r["replications_per_s"] for r in rows}
    eng1 = rate["study_runner_1job"]
    ratios = {"runner_vs_numpy_per_core": eng1 / rate["numpy_vectorised"],
              "table_path_vs_numpy_per_core": rate["study_runner_1job_tables"] / rate["numpy_vectorised"]}
    if "fused_kernel_1thread" in rate:
        ratios["runner_vs_fused_per_core"] = eng1 / rate["fused_kernel_1thread"]
    if f"study_runner_{cores}jobs" in rate:
        ratios["runner_scaling"] = rate[f"study_runner_{cores}jobs"] / eng1
    par = [r for r in rows if r["name"].startswith("fused_kernel_") and r["threads"] > 1]
    if par and "fused_kernel_1thread" in rate:
        ratios["fused_scaling"] = par[0]["replications_per_s"] / rate["fused_kernel_1thread"]
        all_cores = rate.get(f"study_runner_{cores}jobs", math.nan)
        ratios["runner_vs_fused_all_cores"] = all_cores / par[0]["replications_per_s"]
    source = table_source(spec.points()[0][1], seed, spec.sampler)
    exact = exact_measures(spec.points()[0][1], registry.get("clustered_normal"), MARGIN, ALPHA)
    return {"workload": {"clusters": K, "trials": M, "baseline": PB, "candidate": PC, "rho": 0.0,
                         "method": "clustered_normal", "margin": MARGIN, "alpha": ALPHA},
            "cores": cores, "repeat": repeat, "timing": f"fastest of {repeat} runs per row", "rows": rows,
            "ratios": ratios,
            "targets": {"runner_vs_numpy_per_core": 10.0, "runner_vs_fused_per_core": 1.0, "runner_scaling": 1.8},
            "exact_pass_rate": exact.pass_rate, "sampler": str(ds.sampler.values.ravel()[0]),
            "path": "moments" if moment_path(source, [registry.get("clustered_normal")]) else "tables",
            "same_results_both_paths": same_measures(ds, dt_tables),
            "limit_kernel": None if limit_kernel is None else str(limit_kernel)}
