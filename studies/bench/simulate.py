"""``simlab bench simulate``: generator speed against a numpy-vectorised reference of the
same DGM, both measured in the same run on one thread."""
from __future__ import annotations

import resource
import time

import numpy as np

from simlab.generate import TableGenerator
from simlab.progress import progress_bar
from simlab.scenario import PairedScenario
from simlab.standard import STANDARD_CELLS, standard_scenario  # noqa: F401  (re-exported for the benches)

def numpy_reference(scenario: PairedScenario, seed: int, n_reps: int, chunk: int = 20_000) -> np.ndarray:
    """The same Dirichlet-multinomial DGM the textbook way: Dirichlet cluster probabilities,
    then a multinomial draw, vectorised over replications and clusters.  Returns pooled cell
    counts (so the work cannot be optimised away)."""
    rng = np.random.default_rng(seed)
    K = scenario.clusters
    m = scenario.cluster_size.trials
    alpha = scenario.concentration * np.asarray(scenario.cells)
    pooled = np.zeros(4, np.int64)
    for s in range(0, n_reps, chunk):
        n = min(chunk, n_reps - s)
        q = rng.dirichlet(alpha, size=(n, K))
        counts = rng.multinomial(m, q)
        pooled += counts.sum(axis=(0, 1))
    return pooled


def _rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0


def _time(fn, *args):
    t = time.perf_counter()
    out = fn(*args)
    return time.perf_counter() - t, out


def _per_rep(run, start: int, at_least: float = 0.2, most: int = 1 << 22) -> float:
    """Seconds a replication of ``run(n)``, timed at growing ``n`` (x4) until a timing takes
    ``at_least`` seconds (or ``n`` reaches ``most``)."""
    n = start
    while True:
        t = time.perf_counter()
        run(n)
        seconds = time.perf_counter() - t
        if seconds >= at_least or n >= most:
            return seconds / n
        n *= 4


def bench_simulate_estimate(reps: int = 2_000_000, numpy_reps: int = 200_000, memory_reps: int = 0,
                            seed: int = 1, chunk_size: int = 65_536, numpy_chunk: int = 20_000):
    """Wall seconds of :func:`bench_simulate` (``studies.engine.cost.TimeEstimate``): each
    side's seconds a replication from a short pilot (kernels loaded first; the pilot grows
    until a timing takes 0.2 s), times its replications (``reps + memory_reps`` for the
    engine)."""
    from studies.engine.cost import TimeEstimate

    scenario = standard_scenario()
    gen = TableGenerator(scenario, seed)
    gen.tables(0, 100)
    numpy_reference(scenario, seed, 100)

    def engine(n):
        for _, t in gen.chunks(n, chunk_size):
            pass

    wall = (_per_rep(engine, 4096) * (reps + memory_reps)
            + _per_rep(lambda n: numpy_reference(scenario, seed, n, numpy_chunk), 256) * numpy_reps)
    return TimeEstimate(wall, wall, 1)


def bench_simulate(reps: int = 2_000_000, numpy_reps: int = 200_000, memory_reps: int = 0,
                   seed: int = 1, chunk_size: int = 65_536, progress: bool = True, numpy_chunk: int = 20_000,
                   log=None) -> dict:
    """Both sides stream: the engine ``chunk_size`` replications at a time, the numpy
    reference ``numpy_chunk`` at a time (what is held in memory at once).  ``log(label)`` is
    told each timing as it starts."""
    say = log or (lambda message: None)
    scenario = standard_scenario()
    K, M = scenario.clusters, scenario.cluster_size.trials
    gen = TableGenerator(scenario, seed)
    gen.tables(0, 100)  # compile / load the cached kernel outside the timing
    numpy_reference(scenario, seed, 100)

    def run_engine(n):
        pooled = np.zeros(4, np.int64)
        for _, t in gen.chunks(n, chunk_size):
            pooled += t.sum(axis=(0, 1), dtype=np.int64)
        return pooled

    say(f"timing the numpy reference: {numpy_reps:,} replications")
    t_np, _ = _time(numpy_reference, scenario, seed, numpy_reps, numpy_chunk)
    say(f"timing the engine: {reps:,} replications")
    t_sl, _ = _time(run_engine, reps)
    # draws: one uniform per trial pair (Polya urn) for simlab; numpy draws 4 gammas per cluster
    # plus a multinomial (3 binomials) per cluster -- reported as the DGM's trial pairs per second.
    rows = [
        {"name": "numpy_vectorised", "replications": numpy_reps, "seconds": t_np,
         "replications_per_s": numpy_reps / t_np, "draws_per_s": numpy_reps * K * M / t_np},
        {"name": "simlab_numba_1thread", "replications": reps, "seconds": t_sl,
         "replications_per_s": reps / t_sl, "draws_per_s": reps * K * M / t_sl},
    ]
    out = {"clusters": K, "trials": M, "rho": scenario.rho, "cells": list(scenario.cells),
           "draws_are": "trial pairs generated per second", "rows": rows,
           "ratio_vs_numpy": (reps / t_sl) / (numpy_reps / t_np)}
    if memory_reps:
        say(f"streaming {memory_reps:,} replications for peak memory")
        before = _rss_mb()
        t0 = time.perf_counter()
        with progress_bar(memory_reps, "streaming replications", enabled=progress) as advance:
            pooled = np.zeros(4, np.int64)
            for start, t in gen.chunks(memory_reps, chunk_size):
                pooled += t.sum(axis=(0, 1), dtype=np.int64)
                advance(t.shape[0])
        out["memory"] = {"replications": memory_reps, "seconds": time.perf_counter() - t0,
                         "rss_before_mb": before, "peak_rss_mb": _rss_mb(), "chunk_size": chunk_size,
                         "pooled_cell_rates": (pooled / pooled.sum()).tolist()}
    return out
