"""``simlab bench qualify``: the batched qualification engine against the per-scenario
engine, in the same run, on the same workload, with the same counts.

Workload (default): the first round of the standard grid -- every scenario of the
``standard`` policy's domain (7 K x 3 cluster sizes x 5 rho x 4 margins x 12 (baseline,
discordance) points = 5040 scenarios) at its ``min_replications`` (2000), without
escalation or refinement -- for ``clustered_normal`` (cluster-moment path).  ``rounds``
takes more rounds of the replication schedule (0: the policy's whole qualification,
refinement included).  ``clusters`` keeps only those K of the grid (a sub-grid).

Both engines run :func:`studies.qualify.run.qualify` in this process on one worker (``n_jobs``:
more), after a warm-up of both on the grid's first cell (numba caches, the registry), the
per-scenario engine first.  The two runs must give equal records -- every scenario's
``n_reps``, ``n_pass``, ``n_inconclusive``, bounds and verdict, and every cell -- or the
benchmark raises.  Ratio = per-scenario seconds / batched seconds (the issue's target: >= 5).
"""
from __future__ import annotations

import os
import time
from pathlib import Path
from typing import Callable

TARGET_RATIO = 5.0


def workload_policy(policy: str = "standard", rounds: int = 1, clusters: tuple[int, ...] | None = None):
    """The policy the benchmark qualifies under: ``policy`` (a built-in name or a JSON/TOML
    file) cut to its first ``rounds`` replication stages without refinement (``rounds = 0``:
    unchanged), its K grid cut to ``clusters``."""
    from methods.qualification import IntAxis, QualificationPolicy, named_policy

    pol = QualificationPolicy.load(policy) if Path(policy).suffix.lower() in (".json", ".toml") \
        else named_policy(policy)
    data = pol.model_dump()
    if rounds < 0:
        raise ValueError(f"rounds must be >= 0, got {rounds}")
    if rounds:
        sched = pol.replication_schedule()
        data.update(max_replications=sched[min(rounds, len(sched)) - 1], refine_evaluations=0)
    if clusters:
        grid = tuple(k for k in pol.domain.clusters.grid if k in set(clusters))
        if not grid:
            raise ValueError(f"clusters {list(clusters)}: none is on the policy's K grid "
                             f"{list(pol.domain.clusters.grid)}")
        data["domain"]["clusters"] = IntAxis(lo=grid[0], hi=grid[-1], grid=grid).model_dump()
        if pol.domain.looks is not None and pol.domain.looks > grid[0]:
            raise ValueError(f"clusters {list(clusters)}: the policy's {pol.domain.looks} looks need K >= "
                             f"{pol.domain.looks}")
    return QualificationPolicy.model_validate(data)


def _first_cell(policy):
    """``policy`` cut to its first cell and first round: the warm-up."""
    from methods.qualification import Axis, IntAxis, QualificationPolicy

    d = policy.domain
    k, m, r = d.clusters.grid[0], d.margin.grid[0], d.rho.grid[0]
    dom = d.model_copy(update={"clusters": IntAxis(lo=k, hi=k, grid=(k,)), "margin": Axis(lo=m, hi=m, grid=(m,)),
                               "rho": Axis(lo=r, hi=r, grid=(r,)), "cluster_sizes": d.cluster_sizes[:1],
                               "label_noise": d.label_noise[:1]})
    return QualificationPolicy.model_validate({**policy.model_dump(), "domain": dom.model_dump(),
                                               "max_replications": policy.min_replications, "refine_evaluations": 0})


def bench_qualify_estimate(policy: str = "standard", methods: tuple[str, ...] = ("clustered_normal",),
                           rounds: int = 1, clusters: tuple[int, ...] | None = None, n_jobs: int = 1,
                           before_preparing: Callable[[float, str], object] | None = None):
    """Wall seconds of :func:`bench_qualify` (``studies.engine.cost.TimeEstimate``):
    ``studies.engine.qualify_estimate`` of the workload, whose pilot runs the per-scenario
    engine -- the benchmark's first (and slower) run -- so ``low`` is that run's first round
    (what the benchmark certainly costs), ``high`` both engines at every scenario escalated to
    the workload's largest replication count.  ``before_preparing`` as there (may refuse)."""
    from methods import registry

    from studies.engine.cost import TimeEstimate, qualify_estimate

    pol = workload_policy(policy, rounds, clusters)
    est = qualify_estimate([registry.get(n) for n in methods], pol, n_jobs, (), before_preparing)
    return TimeEstimate(est.low, 2.0 * est.high, est.workers)


def bench_qualify(policy: str = "standard", methods: tuple[str, ...] = ("clustered_normal",), rounds: int = 1,
                  clusters: tuple[int, ...] | None = None, n_jobs: int = 1,
                  progress: Callable[[str], None] | None = None) -> dict:
    """Time both engines on the workload (module docstring); raises if their records differ."""
    from methods import registry

    from studies.qualify.run import qualify

    pol = workload_policy(policy, rounds, clusters)
    ms = [registry.get(n) for n in methods]
    for batched in (False, True):  # warm-up: numba caches, the registry (never timed)
        qualify(ms, _first_cell(pol), out_dir=None, batched=batched)
    runs, rows = {}, []
    for path, batched in (("per-scenario", False), ("batched", True)):
        if progress:
            progress(f"qualify on the {path} engine ...")
        t = time.perf_counter()
        run = qualify(ms, pol, n_jobs=n_jobs, out_dir=None, batched=batched)
        seconds = time.perf_counter() - t
        runs[path] = run
        st = run.stats()
        rows.append({"path": path, "scenarios": st["scenarios"], "replications": st["replications"],
                     "method_replications": st["method_replications"], "seconds": seconds,
                     "replications_per_s": st["replications"] / seconds})
    for a, b in zip(runs["per-scenario"].outcomes, runs["batched"].outcomes):
        ra, rb = a.record, b.record
        if ra.scenarios != rb.scenarios or ra.cells != rb.cells:
            raise RuntimeError(f"{ra.method.name}: the batched engine's counts differ from the per-scenario "
                               "engine's (a bug: they must be identical)")
    ratio = rows[0]["seconds"] / rows[1]["seconds"]
    sched = pol.replication_schedule()
    what = (f"the whole qualification ({sched} replications, refinement)" if not rounds
            else f"the first {len(sched)} round(s) of the grid ({sched} replications, no refinement)")
    dom = pol.domain
    return {"policy": policy, "policy_sha256": pol.sha256, "methods": list(methods), "rounds": rounds,
            "workload": f"{what}: K {list(dom.clusters.grid)}, {len(dom.cluster_sizes)} cluster sizes, "
                        f"rho {list(dom.rho.grid)}, margins {list(dom.margin.grid)}",
            "clusters": list(dom.clusters.grid), "n_jobs": n_jobs, "rows": rows, "ratio": ratio,
            "target_ratio": TARGET_RATIO,
            "meets_target": ratio >= TARGET_RATIO, "identical": True,
            "cells_qualified": {o.record.method.name: o.record.qualified.cells_qualified
                                for o in runs["batched"].outcomes},
            "cells_total": runs["batched"].outcomes[0].record.qualified.cells_total,
            "cpu_count": os.cpu_count(), "load_average_1min": os.getloadavg()[0]}


__all__ = ["bench_qualify", "bench_qualify_estimate", "workload_policy", "TARGET_RATIO"]
