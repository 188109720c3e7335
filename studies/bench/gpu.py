"""``simlab bench gpu``: the study runner on a GPU against the CPU path and a hand-written
CUDA C kernel, measured in one run.

Workload: the standard one (``studies.bench``: K = 30 clusters x M = 3 trials,
independent arms 0.97 / 0.93, rho = 0, ``clustered_normal`` at margin 0.03 and one-sided alpha 0.025).
Rows, each the fastest of ``repeat`` timed runs after a warm-up:

* ``gpu_study_runner`` -- :func:`studies.engine.runner.run_study` with ``device='gpu'``: moment
  draws, decisions and integer tallies on the device, the dataset on the host;
* ``gpu_evaluate_scenario`` -- the same without the dataset (``evaluate_scenario``);
  ``gpu_kernels`` times the two launches alone;
* ``cpu_study_runner_1job`` and ``cpu_study_runner_<cores>jobs`` -- the same spec on the
  CPU's moment path (one process; a warmed joblib pool over every core);
* ``cuda_c_limit_kernel`` -- ``limit_cupy.py`` (``--limit-cupy``), a fused single-purpose
  CUDA C kernel of the same workload with its own generator, run as a subprocess (its
  own figure, parsed from its output).

Equality: the GPU's dataset for ``check_reps`` replications is compared, variable by
variable, with the CPU's for the same seed (``same_counts_as_cpu``).
"""
from __future__ import annotations

import math
import platform
import re
import subprocess
import sys
from pathlib import Path
from typing import Callable

from .study import ALPHA, MARGIN, best_of, physical_cores, same_measures, bench_spec


def _limit_cupy(path: str | Path, reps: int) -> dict:
    p = Path(path)
    if not p.is_file():
        raise ValueError(f"--limit-cupy: no such file {p}")
    run = subprocess.run([sys.executable, str(p), str(reps)], capture_output=True, text=True, timeout=600)
    rows = re.findall(r"reps=\s*([\d,]+)\s+time=\s*([\d.]+)s\s+reps/s=\s*([\d,]+).*pass_rate=([\d.]+)", run.stdout)
    if run.returncode != 0 or not rows:
        raise ValueError(f"--limit-cupy {p} failed (exit {run.returncode}): {(run.stderr or run.stdout)[-300:]}")
    n, t, rate, pr = rows[-1]
    return {"name": "cuda_c_limit_kernel", "threads": None, "replications": int(n.replace(",", "")),
            "seconds": float(t), "replications_per_s": float(rate.replace(",", "")), "pass_rate": float(pr)}


def _kernel_split(source, reps: int, repeat: int) -> dict:
    """Seconds per 1e9 replications of each GPU launch alone (sampling; deciding and
    tallying), each the fastest of ``repeat`` synchronised runs over ``reps`` replications."""
    import numpy as np
    from numba import cuda

    from methods import registry
    from simlab.gpu import launch_shape, simulated
    from simlab.gpu.moments import GpuMomentSampler, ptx_of_fill_kernel

    from studies.engine.gpu import GPU_BATCH, ITEMS_PER_THREAD, fused_kernel

    sampler = GpuMomentSampler(source.k1, source.k2, *source.moment_tables())
    n = min(reps, GPU_BATCH)
    buf = cuda.device_array((n, 3), np.int64)
    crit = cuda.to_device(registry.get("clustered_normal").moment_consts(ALPHA, MARGIN, source.clusters))
    acc = cuda.to_device(np.zeros((1, 17), np.int64))
    blocks, threads = launch_shape(n, ITEMS_PER_THREAD)

    def sample():
        for s in range(0, reps, n):
            sampler.fill(buf, s)
        cuda.synchronize()

    def decide():
        for _ in range(0, reps, n):
            fused_kernel()[blocks, threads](buf, np.int64(source.moment_size), np.float64(MARGIN), crit, -0.04, acc,
                                       np.int64(0))
        cuda.synchronize()

    sample(), decide()  # warm
    reps = -(-reps // n) * n
    ptx = {} if simulated() else {"fill": ptx_of_fill_kernel(),
                                  "decide_tally": "\n".join(fused_kernel().inspect_asm().values())}
    return {"ptx_fma_instructions": {k: v.count("fma.") for k, v in ptx.items()},
            "ptx_rounded_mul_add_sub": {k: sum(v.count(f"{op}.rn.f64") for op in ("mul", "add", "sub"))
                                        for k, v in ptx.items()},
            "sample_s_per_1e9": best_of(sample, repeat)[0] * 1e9 / reps,
            "decide_tally_s_per_1e9": best_of(decide, repeat)[0] * 1e9 / reps, "batch": n}


def _device_name() -> str:
    from simlab.gpu import simulated

    if simulated():
        return "numba CUDA simulator"
    from numba import cuda

    name = cuda.get_current_device().name
    return name.decode() if isinstance(name, bytes) else str(name)


PILOT_SECONDS = 0.5      # a device's pilot doubles its replications (x16) until a run takes this long
PILOT_MAX_REPS = 1 << 26


def _rate(run, start: int, most: int) -> float:
    """Replications per second of ``run(n)``, timed at n = start, 16 start, ... until a run takes
    :data:`PILOT_SECONDS` or n reaches ``most`` (small runs are dominated by fixed costs: the
    rate is then under-stated, and the estimate errs long)."""
    import time

    n = max(1, min(start, most))
    while True:
        t0 = time.perf_counter()
        run(n)
        took = max(time.perf_counter() - t0, 1e-9)
        if took >= PILOT_SECONDS or n >= most:
            return n / took
        n = min(16 * n, most)


def gpu_work_seconds(reps: int, cpu_reps: int, check_reps: int, cores: int, repeat: int, limit_cupy: bool,
                     gpu_rate: float, cpu_rate: float) -> float:
    """What the rows cost at the pilots' rates (replications per second on the GPU, and on one
    CPU core): the equality check on both devices, ``repeat`` timed runs of each row after the
    warm-ups, the two launches of ``_kernel_split`` (each about a replication's work), and the
    CUDA C kernel's own run."""
    gpu = check_reps + 2 * repeat * reps + 2 * (repeat + 1) * min(reps, 1 << 30) \
        + (min(reps, 1_000_000_000) if limit_cupy else 0)
    cpu = check_reps / cores + repeat * cpu_reps * (2 if cores > 1 else 1) + 4000
    return gpu / gpu_rate + cpu / cpu_rate


def bench_gpu(reps: int = 1 << 31, cpu_reps: int = 32_000_000, check_reps: int = 1 << 27,
              limit_cupy: str | Path | None = None, n_jobs: int | None = None, seed: int = 1,
              repeat: int = 3, before_work: Callable[[float], None] | None = None,
              before_step: Callable[[str], None] | None = None, compiled: Callable[[], None] | None = None) -> dict:
    """The rows of the module docstring.  ``compiled()`` is told once the kernels are compiled
    (a first use: not the work a time limit is for); then a pilot on each device prices the
    rest (:func:`gpu_work_seconds`), told to ``before_work(seconds)``, which may raise to
    refuse; ``before_step(what)`` is told before each row (it may raise to stop at a time
    limit)."""
    from methods import registry
    from simlab.gpu import require

    from simlab.sampling import table_source

    from studies.exact.fixed import exact_measures
    from studies.engine.runner import evaluate_scenario, run_study
    from studies.engine.spec import parse_spec

    require()
    cores = n_jobs or physical_cores()
    rows = []

    def row(name, threads, n, seconds, ds):
        p = int(ds.n_pass.values.ravel()[0])
        rows.append({"name": name, "threads": threads, "replications": n, "seconds": seconds,
                     "replications_per_s": n / seconds, "pass_rate": p / n})

    def spec(n):
        return parse_spec({**bench_spec(n, seed).model_dump(mode="json"), "replications": n})

    def step(what: str) -> None:
        if before_step is not None:
            before_step(what)

    step("compiling the GPU kernels")
    run_study(spec(4096), chunk_size=4096, progress=False, device="gpu")  # compile the kernels
    run_study(spec(4096), chunk_size=4096, progress=False)  # numba caches, registry
    if compiled is not None:
        compiled()
    if before_work is not None:
        step("the pilots")
        gpu_rate = _rate(lambda n: run_study(spec(n), chunk_size=n, progress=False, device="gpu"), 4096,
                         min(reps, PILOT_MAX_REPS))
        cpu_rate = _rate(lambda n: run_study(spec(n), chunk_size=n, progress=False), 4096,
                         min(cpu_reps, PILOT_MAX_REPS))
        before_work(gpu_work_seconds(reps, cpu_reps, check_reps, cores, repeat, limit_cupy is not None,
                                     gpu_rate, cpu_rate))

    # equality first: the same seed and replications on both devices
    step(f"the equality check ({check_reps:,} replications on each device)")
    cpu_ds = run_study(spec(check_reps), n_jobs=cores, chunk_size=max(1, check_reps // (4 * cores)), progress=False)
    gpu_ds = run_study(spec(check_reps), chunk_size=check_reps, progress=False, device="gpu")
    same = same_measures(cpu_ds, gpu_ds)

    s = spec(reps)
    step("gpu_study_runner")
    dt, ds = best_of(lambda: run_study(s, chunk_size=reps, progress=False, device="gpu"), repeat)
    row("gpu_study_runner", None, reps, dt, ds)
    sc = s.points()[0][1]
    step("gpu_evaluate_scenario")
    dt, c = best_of(lambda: evaluate_scenario(sc, ["clustered_normal"], [MARGIN], [ALPHA], reps, seed,
                                            device="gpu"), repeat)
    rows.append({"name": "gpu_evaluate_scenario", "threads": None, "replications": reps, "seconds": dt,
                 "replications_per_s": reps / dt, "pass_rate": c.count("n_pass", "clustered_normal") / reps})
    step("gpu_kernels")
    split = _kernel_split(table_source(sc, seed, "auto"), min(reps, 1 << 30), repeat)
    s = spec(cpu_reps)
    step("cpu_study_runner_1job")
    dt, ds = best_of(lambda: run_study(s, n_jobs=1, chunk_size=max(1, cpu_reps // 8), progress=False), repeat)
    row("cpu_study_runner_1job", 1, cpu_reps, dt, ds)
    if cores > 1:
        big = cpu_reps * cores
        s = spec(big)
        step(f"cpu_study_runner_{cores}jobs")
        run_study(spec(4000 * cores), n_jobs=cores, chunk_size=1000, progress=False)  # warm the pool
        dt, ds = best_of(lambda: run_study(s, n_jobs=cores, chunk_size=max(1, big // (4 * cores)), progress=False),
                       repeat)
        row(f"cpu_study_runner_{cores}jobs", cores, big, dt, ds)
    limit_error = None
    if limit_cupy is not None:
        step("cuda_c_limit_kernel")
        try:
            rows.append(_limit_cupy(limit_cupy, min(reps, 1_000_000_000)))
        except (ValueError, subprocess.TimeoutExpired) as exc:  # reported, not fatal: the other rows stand
            limit_error = str(exc)

    rate = {r["name"]: r["replications_per_s"] for r in rows}
    g = rate["gpu_study_runner"]
    ratios = {"gpu_vs_cpu_1job": g / rate["cpu_study_runner_1job"]}
    if f"cpu_study_runner_{cores}jobs" in rate:
        ratios["gpu_vs_cpu_all_cores"] = g / rate[f"cpu_study_runner_{cores}jobs"]
    if "cuda_c_limit_kernel" in rate:
        ratios["gpu_vs_cuda_c_limit_kernel"] = g / rate["cuda_c_limit_kernel"]
    exact = exact_measures(s.points()[0][1], registry.get("clustered_normal"), MARGIN, ALPHA)
    return {"workload": {"clusters": 30, "trials": 3, "baseline": 0.97, "candidate": 0.93, "rho": 0.0,
                         "method": "clustered_normal", "margin": MARGIN, "alpha": ALPHA},
            "machine": {"gpu": _device_name(), "cpu_cores": cores, "python": platform.python_version()},
            "repeat": repeat, "timing": f"fastest of {repeat} runs per row", "rows": rows, "ratios": ratios, "gpu_kernels": split,
            "targets": {"gpu_replications_per_s": 1e9},
            "target_met": bool(g >= 1e9), "exact_pass_rate": exact.pass_rate,
            "same_counts_as_cpu": {"replications": check_reps, "seed": seed, "identical": bool(same)},
            "limit_cupy": None if limit_cupy is None else str(limit_cupy), "limit_cupy_error": limit_error}


def rate_ok(payload: dict) -> bool:
    """Every row's pass rate within 5 binomial SEs of the exact pass probability."""
    p = payload["exact_pass_rate"]
    return all(abs(r["pass_rate"] - p) <= 5 * math.sqrt(p * (1 - p) / r["replications"]) + 1e-12
               for r in payload["rows"] if r["name"] != "cuda_c_limit_kernel")
