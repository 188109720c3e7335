"""Peak memory of a study run, from its data structures (``studies.engine.runner.run_study`` and
``run_sequential_study``): what ``study run`` and ``sequential run`` check against --max-memory
before any work."""
from __future__ import annotations

import math

# Memory model of studies.engine.runner.run_study (bytes), from its data structures: every grid
# point is a (coords, PairedScenario) pair built up front (2.9 KiB each, measured with
# tracemalloc on a 10^4-point 3-field grid); each task keeps an int64 tally [methods, margins,
# alphas, NF] plus its dict entry; the dataset holds 53 variables, 417 B per (point,
# method, margin, alpha) measured, built and then serialised (x3); each worker holds one
# chunk of int32 tables [chunk, K, 4].
POINT_BYTES = 4 * 1024
TASK_OVERHEAD_BYTES = 400
DATASET_BYTES_PER_CELL = 420 * 3


def _largest_clusters(spec) -> int:
    return max([int(k) for k in spec.grid.get("clusters", [])] or [int(spec.scenario.clusters or 1)])


def study_memory(spec, chunk: int, workers: int) -> float:
    """Peak bytes of ``run_study(spec)`` with ``chunk`` replications per task on ``workers``."""
    from studies.engine.tally import NF

    points = math.prod(spec.shape) if spec.shape else 1
    cells = len(spec.methods) * len(spec.margins) * len(spec.alphas)
    n = spec.n_replications
    tasks = points * math.ceil(n / chunk)
    per_chunk_tables = min(chunk, n) * _largest_clusters(spec) * 4 * 4
    return (points * POINT_BYTES + tasks * (cells * NF * 8 + TASK_OVERHEAD_BYTES)
            + points * cells * DATASET_BYTES_PER_CELL + max(workers, 1) * per_chunk_tables)


def sequential_study_memory(spec, workers: int) -> float:
    """Peak bytes of ``run_sequential_study(spec)``: the grid points and each worker's tables
    (int32 plus the per-look arrays, 32 B per cluster row)."""
    points = math.prod(spec.shape) if spec.shape else 1
    return points * POINT_BYTES + max(workers, 1) * min(spec.replications, spec.chunk_size) * _largest_clusters(spec) * 32



__all__ = ["sequential_study_memory", "study_memory"]
