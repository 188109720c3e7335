"""``simlab bench sequential``: the two speed figures of the sequential layer, measured here.

1. Exact enumeration of the seed's ten-look design (looks 50..500, margin 0.03, alpha 0.05,
   true loss 0.03) for the four seed rules -- decision regions from each rule's own kernel
   plus the absorbing-state propagation.  Timed warm (numba caches loaded by one untimed
   run) and also reported for that first run.
2. Simulated clustered sequential studies: ``repeated_fixed`` (wrapping ``binomial_loss``,
   the seed's test, and ``clustered_normal``) and ``msprt`` on a clustered scenario,
   tables drawn in chunks by the studies' table source (``auto`` = the composition sampler,
   and ``trial`` = the trial-level generator) and every look evaluated, on one thread.
   Throughput is replication-looks per second: replications x looks of the schedule /
   wall seconds, with and without drawing the tables.  The 1-minute load average is
   reported: on a shared machine the figures are lower bounds of an idle core's.
"""
from __future__ import annotations

import os
import time
from typing import Callable

import numpy as np

from methods.sequential.base import LookSchedule
from simlab.scenario import FixedSize, PairedScenario

from studies.exact.sequential import (SEED_ALPHA, SEED_CASES, SEED_LOOKS, SEED_MARGIN, SEED_METHODS, exact_for_scenario,
                               seed_method, seed_scenario)

EXACT_TARGET_S = 1.0
SIM_TARGET = 1e6


def bench_exact(repeats: int = 5) -> dict:
    schedule = LookSchedule(looks=SEED_LOOKS)
    scenario = seed_scenario(SEED_CASES[0])
    methods = [seed_method(n) for n in SEED_METHODS]

    def once():
        return [exact_for_scenario(m, scenario, schedule, SEED_MARGIN, SEED_ALPHA) for m in methods]

    t0 = time.perf_counter()
    res = once()
    first = time.perf_counter() - t0
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        once()
        times.append(time.perf_counter() - t0)
    per = {}
    for m in methods:
        t0 = time.perf_counter()
        exact_for_scenario(m, scenario, schedule, SEED_MARGIN, SEED_ALPHA)
        per[m.name] = time.perf_counter() - t0
    best = min(times)
    return {"design": {"looks": list(SEED_LOOKS), "margin": SEED_MARGIN, "alpha": SEED_ALPHA, "true_loss": 0.03},
            "methods": list(SEED_METHODS), "promote": {m.name: r.promote for m, r in zip(methods, res)},
            "first_run_seconds": first, "warm_seconds_best": best, "warm_seconds_median": float(np.median(times)),
            "per_method_seconds": per, "target_seconds": EXACT_TARGET_S, "meets_target": best < EXACT_TARGET_S}


def clustered_scenario(clusters: int = 200, trials: int = 4, rho: float = 0.1) -> PairedScenario:
    """Null boundary of a clustered design: baseline 0.9, difference -0.03, discordance 0.1."""
    return PairedScenario.from_rates(0.9, -0.03, 0.1, clusters=clusters, cluster_size=FixedSize(trials=trials),
                                     rho=rho)


def bench_simulated(reps: int = 200_000, clusters: int = 200, trials: int = 4, rho: float = 0.1, step: int = 20,
                    chunk: int = 16_384, margin: float = 0.03, alpha: float = 0.05,
                    samplers: tuple[str, ...] = ("auto", "trial")) -> dict:
    """Replication-looks/s of a simulated clustered sequential study, per method and table
    source (``auto``: the studies' composition sampler where it applies; ``trial``: the
    trial-level reference generator), tables and decisions on one thread."""
    from methods import registry

    from simlab.sampling import table_source

    scenario = clustered_scenario(clusters, trials, rho)
    schedule = LookSchedule.every(step, clusters)
    L = schedule.n_looks
    cases = [("repeated_fixed[binomial_loss]", registry.get("repeated_fixed")),
             ("repeated_fixed[clustered_normal]",
              registry.get("repeated_fixed").with_inner(registry.get("clustered_normal").with_options(min_clusters=2))),
             ("msprt", registry.get("msprt"))]
    rows = []
    gen_seconds = {}
    for sampler in samplers:
        source = table_source(scenario, 20261129, sampler)
        warm = source.tables(0, 64)
        for _, m in cases:
            m.batch(warm, schedule, margin, alpha)
        buf = np.empty((min(chunk, reps), clusters, 4), np.int32)
        t0 = time.perf_counter()
        for s in range(0, reps, chunk):
            n = min(chunk, reps - s)
            source.fill(buf[:n], s)
        gen_seconds[source.name] = time.perf_counter() - t0
        for label, m in cases:
            method_s = 0.0
            promoted = 0
            t0 = time.perf_counter()
            for s in range(0, reps, chunk):
                n = min(chunk, reps - s)
                tables = source.fill(buf[:n], s)
                t1 = time.perf_counter()
                promoted += m.batch(tables, schedule, margin, alpha).promote_count()
                method_s += time.perf_counter() - t1
            total = time.perf_counter() - t0
            rows.append({"method": label, "sampler": source.name, "replications": reps, "looks": L,
                         "seconds_total": total, "seconds_method_only": method_s,
                         "replication_looks_per_s": reps * L / total,
                         "replication_looks_per_s_method_only": reps * L / method_s,
                         "promote_rate": promoted / reps,
                         "meets_target": reps * L / total >= SIM_TARGET})
    return {"scenario": {"clusters": clusters, "trials_per_cluster": trials, "rho": rho,
                         "cells": list(scenario.cells), "looks": list(schedule.looks)},
            "generation_seconds": gen_seconds, "rows": rows, "target_replication_looks_per_s": SIM_TARGET,
            "threads": 1, "cpu_count": os.cpu_count(), "load_average_1min": os.getloadavg()[0]}


def bench_sequential_estimate(reps: int = 200_000, repeats: int = 5):
    """Wall seconds of :func:`bench_sequential` (``studies.engine.cost.TimeEstimate``): one run of
    the exact part timed here (its kernels warmed first) times its ``repeats + 2`` runs, plus the
    simulated part's ``t(R) = a + b R`` from ``studies.engine.cost``'s two-count pilot of it."""
    from studies.engine.cost import TimeEstimate, pilot_model

    bench_exact(1)  # loads the kernels
    t0 = time.perf_counter()
    bench_exact(1)  # the design three times: first, the repeat, then once per method
    exact = (time.perf_counter() - t0) / 3.0 * (repeats + 2)
    model = pilot_model(lambda pairs: (lambda r: bench_simulated(max(r, 1)), pairs), 800.0)
    wall = exact + model.seconds(800.0, reps)
    return TimeEstimate(wall, wall, 1)


def bench_sequential(reps: int = 200_000, repeats: int = 5, progress: Callable[[str], object] | None = None) -> dict:
    """``progress(label)`` is told each part as it starts."""
    import numba

    numba.set_num_threads(1)
    if progress is not None:
        progress(f"timing exact enumeration of the seed design ({repeats} runs after the first)")
    exact = bench_exact(repeats)
    if progress is not None:
        progress(f"timing the simulated clustered study: {reps:,} replications")
    return {"exact": exact, "simulated": bench_simulated(reps)}
