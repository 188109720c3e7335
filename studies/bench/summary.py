"""``simlab bench all``: every sub-benchmark in one run, ending in one table.

Each row is one workload: simlab's throughput, the throughput of a reference
implementation of the same workload measured in the same run (numpy, the slow
per-replication reference of a method, the trial-level generator, the fused limit
kernel, the per-scenario qualification engine), and their ratio.  The table is written as
JSON (``dataset_kind = "bench"``, ``studies/SCHEMA.md``) under ``results/bench/<machine>.json``
so figures can be compared across machines.  ``scale`` shrinks every workload (e.g. 0.01
for a smoke run).
"""
from __future__ import annotations

import os
import platform
import re
from pathlib import Path
from typing import Any, Callable

from studies.datasets import make_attrs, save_json

DEFAULT_OUT = Path("results") / "bench"
_ROOT = Path(__file__).resolve().parents[2]
# ``../shared/bench/limit_bench.py`` beside the checkout (or beside its worktree folder)
LIMIT_KERNELS = (_ROOT.parent / "shared" / "bench" / "limit_bench.py",
                 _ROOT.parent.parent / "shared" / "bench" / "limit_bench.py")


def machine_key() -> str:
    """A file-name-safe key of this machine: host name, processor architecture, cores."""
    host = re.sub(r"[^A-Za-z0-9_.-]+", "-", platform.node() or "host").strip("-") or "host"
    return f"{host}-{platform.machine() or 'cpu'}-{os.cpu_count() or 1}cores"


def _row(workload: str, unit: str, simlab: float | None, reference: float | None, reference_name: str | None,
         seconds: float | None = None, note: str | None = None) -> dict[str, Any]:
    ratio = simlab / reference if simlab and reference else None
    return {"workload": workload, "unit": unit, "simlab": simlab, "reference": reference,
            "reference_name": reference_name, "ratio": ratio, "seconds": seconds, "note": note}


def _simulate_rows(scale: float) -> list[dict]:
    from .simulate import bench_simulate

    r = bench_simulate(reps=max(2000, int(2_000_000 * scale)), numpy_reps=max(1000, int(200_000 * scale)),
                       progress=False)
    rate = {x["name"]: x for x in r["rows"]}
    s, n = rate["simlab_numba_1thread"], rate["numpy_vectorised"]
    return [_row("simulate: tables of the standard workload (K=30, M=3, rho=0.1), 1 thread", "replications/s",
                 s["replications_per_s"], n["replications_per_s"], "numpy Dirichlet-multinomial",
                 s["seconds"] + n["seconds"])]


def _methods_budgets(scale: float) -> tuple[float, float]:
    """Each method's kernel and reference timing budgets at ``scale``."""
    return max(1.0, 60.0 * scale), max(0.5, 10.0 * scale)


def _methods_rows(scale: float, seconds: float | None = None) -> list[dict]:
    from methods import registry

    from .methods import bench_methods, bench_methods_plan

    kernel, reference = _methods_budgets(scale)
    if seconds is not None:  # the run's time limit leaves the methods this much: their budgets are cut to fit
        plan = bench_methods_plan(len(registry.names("fixed")), kernel, reference, seconds)
        kernel, reference = plan["kernel_seconds"], plan["reference_seconds"]
    r = bench_methods(reps=max(2000, int(1_000_000 * scale)), bootstrap_reps=max(200, int(20_000 * scale)),
                      reference_reps=max(50, int(2_000 * scale)), max_seconds=kernel, reference_seconds=reference,
                      total_seconds=seconds)
    rows = []
    for m in r["rows"]:
        if "error" in m:
            rows.append(_row(f"method {m['method']} ({m['class']})", "decisions/s", None, None, None,
                             note=m["error"]))
            continue
        ref = m.get("reference_decisions_per_s")
        rows.append(_row(f"method {m['method']} ({m['class']}), 1 thread", "decisions/s", m["decisions_per_s"], ref,
                         m.get("reference") if ref else None, m["seconds"],
                         None if ref else f"reference: {m.get('reference')}"))
    return rows


def _study_rows(scale: float, limit_kernel: Path | None, n_jobs: int | None) -> list[dict]:
    from .study import bench_study

    r = bench_study(reps=max(20_000, int(32_000_000 * scale)), numpy_reps=max(5_000, int(400_000 * scale)),
                    limit_kernel=limit_kernel, n_jobs=n_jobs, repeat=1 if scale < 1 else 3)
    rate = {x["name"]: x for x in r["rows"]}
    numpy = rate["numpy_vectorised"]["replications_per_s"]
    fused = rate.get("fused_kernel_1thread", {}).get("replications_per_s")
    rows = []
    for name, x in rate.items():
        if name in ("numpy_vectorised",) or name.startswith("fused_kernel"):
            continue
        label = f"study runner ({name.removeprefix('study_runner_')}): clustered_normal, K=30, M=3"
        rows.append(_row(label, "replications/s", x["replications_per_s"], numpy, "numpy vectorised",
                         x["seconds"]))
        if fused and x["threads"] == 1:
            rows.append(_row(label, "replications/s", x["replications_per_s"], fused, "fused limit kernel, 1 thread",
                             x["seconds"]))
    par = [x for n, x in rate.items() if n.startswith("fused_kernel_") and x["threads"] > 1]
    multi = [x for n, x in rate.items() if n.startswith("study_runner_") and x["threads"] > 1]
    if par and multi:
        rows.append(_row(f"study runner, {multi[0]['threads']} jobs", "replications/s", multi[0]["replications_per_s"],
                         par[0]["replications_per_s"], f"fused limit kernel, {par[0]['threads']} threads",
                         multi[0]["seconds"]))
    return rows


def _sequential_rows(scale: float) -> list[dict]:
    from .sequential import bench_exact, bench_simulated

    rows = []
    ex = bench_exact(repeats=1 if scale < 1 else 5)
    rows.append(_row("sequential exact: seed design, 10 looks, 4 rules", "designs/s", 1.0 / ex["warm_seconds_best"],
                     None, None, ex["warm_seconds_best"], "no reference implementation: exact enumeration"))
    sim = bench_simulated(reps=max(2_000, int(200_000 * scale)))
    by = {(x["method"], x["sampler"]): x for x in sim["rows"]}
    for (method, sampler), x in by.items():
        if sampler != "composition":
            continue
        ref = by.get((method, "trial"))
        rows.append(_row(f"sequential simulated: {method}, K=200, M=4, composition sampler", "replication-looks/s",
                         x["replication_looks_per_s"], ref and ref["replication_looks_per_s"],
                         "same rule on the trial-level generator" if ref else None, x["seconds_total"]))
    return rows


def _qualify_clusters(scale: float) -> tuple[int, ...]:
    return tuple(k for k in (10, 20, 30, 50, 100, 200, 500) if k <= max(10.0, 500 * scale))


def _qualify_rows(scale: float) -> list[dict]:
    from .qualify import bench_qualify

    r = bench_qualify(clusters=_qualify_clusters(scale))
    per, batched = r["rows"]
    return [_row(f"qualify: first round of the standard grid at K {r['clusters']}, {', '.join(r['methods'])}, "
                 "batched engine", "replications/s", batched["replications_per_s"], per["replications_per_s"],
                 "per-scenario engine, same run", per["seconds"] + batched["seconds"],
                 f"{batched['scenarios']} scenarios; counts identical")]


def bench_all_estimate(scale: float = 1.0, limit_kernel: str | Path | None = None, n_jobs: int | None = None,
                       stop_over: float | None = None) -> dict:
    """Wall seconds of :func:`bench_all`: ``{"estimate": TimeEstimate, "methods_seconds": ...}``.
    The parts other than the methods from their benchmarks' pilots (``bench_simulate_estimate``,
    ``bench_sequential_estimate``, ``bench_study_estimate``, ``bench_qualify_estimate``), cheapest
    first; the methods part from its timing budgets (``bench_methods_plan``, no pilot).  With
    ``stop_over`` (the run's time limit) the methods get what the other parts leave of it
    (``methods_seconds``, for :func:`bench_all`): their timings are cut to fit, and the
    estimate counts their least (over the limit: the run cannot fit); the pilots stop once
    the sum passes it (the estimate is then a lower bound)."""
    from methods import registry
    from studies.engine.cost import TimeEstimate

    from .methods import bench_methods_plan
    from .qualify import bench_qualify_estimate
    from .sequential import bench_sequential_estimate
    from .simulate import bench_simulate_estimate
    from .study import bench_study_estimate

    if limit_kernel is None:
        limit_kernel = next((p for p in LIMIT_KERNELS if p.exists()), None)
    kernel, reference = _methods_budgets(scale)
    count = len(registry.names("fixed"))
    least = bench_methods_plan(count, kernel, reference, float("inf"))["least"]
    low = high = 0.0
    parts = [lambda: bench_simulate_estimate(max(2000, int(2_000_000 * scale)), max(1000, int(200_000 * scale))),
             lambda: bench_sequential_estimate(max(2_000, int(200_000 * scale)), 1 if scale < 1 else 5),
             lambda: bench_study_estimate(max(20_000, int(32_000_000 * scale)), max(5_000, int(400_000 * scale)),
                                          n_jobs, repeat=1 if scale < 1 else 3, fused=limit_kernel is not None),
             lambda: bench_qualify_estimate(clusters=_qualify_clusters(scale))]
    for part in parts:
        if stop_over is not None and low + least > stop_over:
            break
        est = part()
        low, high = low + est.low, high + est.high
    share = None if stop_over is None else max(0.0, stop_over - low)
    plan = bench_methods_plan(count, kernel, reference, float("inf") if share is None else share)
    methods = plan["seconds"] if share is None or plan["least"] <= share else plan["least"]
    return {"estimate": TimeEstimate(low + methods, high + methods, 1), "methods_seconds": share,
            "methods_cut": plan["cut"], "methods_kernel_seconds": plan["kernel_seconds"],
            "methods_reference_seconds": plan["reference_seconds"]}


def bench_all(scale: float = 1.0, limit_kernel: str | Path | None = None, n_jobs: int | None = None,
              out_dir: str | Path | None = DEFAULT_OUT, progress: Callable[[str], None] | None = None,
              methods_seconds: float | None = None) -> dict:
    """Run every sub-benchmark once at ``scale`` x its default size and return (and,
    with ``out_dir``, write) the one table; ``limit_kernel`` defaults to
    ``../shared/bench/limit_bench.py`` when it exists."""
    import time

    if not 0 < scale <= 1:
        raise ValueError(f"scale must lie in (0, 1], got {scale}")
    if limit_kernel is None:
        limit_kernel = next((p for p in LIMIT_KERNELS if p.exists()), None)
    if out_dir is not None:
        from studies.datasets import check_output_path
        check_output_path(Path(out_dir) / f"{machine_key()}.json")
    t0 = time.perf_counter()
    rows: list[dict] = []
    parts = [("simulate", lambda: _simulate_rows(scale)), ("methods", lambda: _methods_rows(scale, methods_seconds)),
             ("study", lambda: _study_rows(scale, None if limit_kernel is None else Path(limit_kernel), n_jobs)),
             ("sequential", lambda: _sequential_rows(scale)), ("qualify", lambda: _qualify_rows(scale))]
    for name, run in parts:
        if progress:
            progress(f"bench {name} ...")
        rows.extend(run())
    settings = {"scale": scale, "limit_kernel": None if limit_kernel is None else str(limit_kernel),
                "n_jobs": n_jobs, "methods_seconds": methods_seconds}
    import json

    payload = {**make_attrs("bench", title="simlab bench all", spec_json=json.dumps(settings, sort_keys=True)),
               "machine": machine_key(), "processor": platform.processor() or platform.machine(),
               "cpu_count": os.cpu_count(), "load_average_1min": os.getloadavg()[0],
               "seconds": time.perf_counter() - t0, "rows": rows}
    if out_dir is not None:
        payload["file"] = str(save_json(payload, Path(out_dir) / f"{machine_key()}.json"))
    return payload


__all__ = ["bench_all", "bench_all_estimate", "machine_key"]
