"""``simlab bench methods``: decisions per second of every registered fixed method's batch
kernel, next to its slow per-replication reference (``methods.reference``) measured in the
same run, on one thread.

Workload: simlab's standard scenario (``studies.bench.simulate.standard_scenario``: K = 30
clusters x 3 trials, rho = 0.1, cells 0.90/0.04/0.03/0.03), tables streamed from the
counter-based generator in chunks; only the ``method.batch`` calls are timed (table
generation is excluded).  Methods are discovered from the registry at run time, so
methods added later are benchmarked without changes here; a method without a reference
function is reported as such.
"""
from __future__ import annotations

import importlib
import math
import pkgutil
import time
from typing import Callable

import numpy as np

from methods import registry
from methods.protocol import STATUS_NAMES
from simlab.interrupts import raise_pending
from simlab.threads import numba_threads

# Speed targets per core from the issue (decisions / s), by kind of computation.
TARGETS = {"closed_form": 2e6, "root_found": 2e5, "bootstrap": 2e3}
_CLOSED_FORM = {"paired_wald", "agresti_min", "bonett_price", "clustered_normal", "cluster_t",
                "cluster_robust", "obuchowski"}
_ROOT_FOUND = {"tango_score", "newcombe_hybrid", "exact_discordant"}


def method_class(name: str) -> str:
    """closed_form / root_found / bootstrap, or ``other`` (no target in the issue)."""
    if "bootstrap" in name:
        return "bootstrap"
    if name in _ROOT_FOUND:
        return "root_found"
    if name in _CLOSED_FORM:
        return "closed_form"
    return "other"


def reference_functions() -> dict[str, Callable]:
    """Reference implementations by method name: a callable named after the method in any
    module of the ``methods.reference`` package."""
    try:
        pkg = importlib.import_module("methods.reference")
    except ModuleNotFoundError:
        return {}
    found: dict[str, Callable] = {}
    names = set(registry.names())
    for info in pkgutil.iter_modules(pkg.__path__):
        if info.name.startswith("_"):
            continue
        mod = importlib.import_module(f"methods.reference.{info.name}")
        for name in names:
            fn = getattr(mod, name, None)
            if callable(fn) and name not in found:
                found[name] = fn
    return found


def _time_kernel(method, gen, n: int, margin: float, alpha: float, chunk_size: int) -> tuple[float, int]:
    seconds = 0.0
    passes = 0
    for _, tables in gen.chunks(n, chunk_size):
        t0 = time.perf_counter()
        res = method.batch(tables, margin, alpha)
        seconds += time.perf_counter() - t0
        passes += res.pass_count()
    return seconds, passes


def _time_reference(fn, method, tables: np.ndarray, margin: float, alpha: float,
                    max_seconds: float) -> dict:
    """Run the reference one replication at a time until all of ``tables`` or the time
    budget is used; compare with the kernel on the same replications."""
    out = []
    confidence = 1.0 - 2.0 * alpha  # the references follow their papers: two-sided confidence
    t0 = time.perf_counter()
    for table in tables:
        out.append(fn(table, margin, confidence))
        if time.perf_counter() - t0 > max_seconds:
            break
    seconds = time.perf_counter() - t0
    n = len(out)
    kern = method.batch(tables[:n], margin, alpha)
    lo = np.array([o[0] for o in out], dtype=float)
    both = np.isfinite(lo) & np.isfinite(kern.lower)
    status_ref = [o[3] for o in out]
    mismatches = sum(STATUS_NAMES[int(s)] != r for s, r in zip(kern.status, status_ref))
    return {"reference_replications": n, "reference_seconds": seconds,
            "reference_decisions_per_s": n / seconds if seconds > 0 else math.inf,
            "max_abs_lower_difference": float(np.max(np.abs(lo[both] - kern.lower[both]))) if both.any() else None,
            "status_mismatches": int(mismatches)}


# Per method, beyond its timed kernel and reference: loading its cached kernel, the pilot, the
# reference's check against the kernel (about 0.5-1 s each on a loaded 2-core machine).
METHOD_OVERHEAD_SECONDS = 1.0
# the least a method's kernel and reference are timed for when a run's time limit cuts them
MIN_KERNEL_SECONDS = 0.5
MIN_REFERENCE_SECONDS = 0.25


def bench_methods_plan(count: int, max_seconds: float, reference_seconds: float, total_seconds: float) -> dict:
    """Each method's kernel and reference timing budgets so ``count`` methods fit in
    ``total_seconds`` (with a tenth spare): ``max_seconds`` / ``reference_seconds`` as asked
    when they fit, else both cut in proportion (``cut``), never below
    ``MIN_KERNEL_SECONDS`` / ``MIN_REFERENCE_SECONDS``.  ``seconds``: the run's planned
    wall time (at most, compiling aside); ``least``: the planned time at the smallest budgets
    (over ``total_seconds``: the run cannot fit)."""
    asked = count * (max_seconds + reference_seconds + METHOD_OVERHEAD_SECONDS)
    least = count * (MIN_KERNEL_SECONDS + MIN_REFERENCE_SECONDS + METHOD_OVERHEAD_SECONDS)
    room = 0.9 * total_seconds
    kernel, reference = max_seconds, reference_seconds
    if asked > room:
        scale = max(0.0, room / count - METHOD_OVERHEAD_SECONDS) / (max_seconds + reference_seconds)
        kernel = max(min(max_seconds, MIN_KERNEL_SECONDS), max_seconds * scale)
        reference = max(min(reference_seconds, MIN_REFERENCE_SECONDS), reference_seconds * scale)
    return {"methods": count, "kernel_seconds": kernel, "reference_seconds": reference, "cut": asked > room,
            "asked_seconds": asked, "seconds": count * (kernel + reference + METHOD_OVERHEAD_SECONDS),
            "least": least}


def bench_methods(reps: int = 1_000_000, bootstrap_reps: int = 20_000, reference_reps: int = 2_000,
                  names: list[str] | None = None, seed: int = 1, margin: float = 0.03,
                  alpha: float = 0.025, chunk_size: int = 65_536, max_seconds: float = 60.0,
                  reference_seconds: float = 10.0, progress: Callable[[str], None] | None = None,
                  total_seconds: float | None = None) -> dict:
    """Benchmark the batch kernels of ``names`` (default: every registered fixed method).

    ``reps`` replications per method (``bootstrap_reps`` for bootstrap methods); when a
    pilot run predicts more than ``max_seconds`` the count is reduced and the row says so.
    The reference runs on the first ``reference_reps`` replications (at most
    ``reference_seconds``).  With ``total_seconds``, each method also gets at most its share of
    what is left of that (the rest divided by the methods still to time), so a run that falls
    behind cuts the later methods' timings instead of overrunning.  Runs with one numba
    thread and restores the previous count."""
    if reps < 1 or bootstrap_reps < 1 or reference_reps < 0:
        raise ValueError("reps and bootstrap_reps must be >= 1 and reference_reps >= 0")
    threads_before = numba_threads(1)
    try:
        return _bench(reps, bootstrap_reps, reference_reps, names, seed, margin, alpha, chunk_size,
                      max_seconds, reference_seconds, progress, total_seconds)
    finally:
        numba_threads(threads_before)


def _bench(reps, bootstrap_reps, reference_reps, names, seed, margin, alpha, chunk_size,
           max_seconds_asked, reference_seconds_asked, progress, total_seconds=None) -> dict:
    from .simulate import standard_scenario
    from simlab.generate import TableGenerator

    threads = numba_threads()
    scenario = standard_scenario()
    gen = TableGenerator(scenario, seed)
    all_fixed = registry.names("fixed")
    names = all_fixed if names is None else list(names)
    for n in names:
        registry.get(n)  # unknown name -> KeyError listing the registered ones
    refs = reference_functions()
    ref_tables = gen.tables(0, reference_reps) if reference_reps else None
    rows = []
    deadline = None if total_seconds is None else time.perf_counter() + total_seconds
    for i, name in enumerate(names):
        max_seconds, reference_seconds = max_seconds_asked, reference_seconds_asked
        if deadline is not None:  # this method's share of what is left
            share = max(0.0, (deadline - time.perf_counter()) / (len(names) - i) - METHOD_OVERHEAD_SECONDS)
            part = share / (max_seconds_asked + reference_seconds_asked)
            max_seconds = min(max_seconds_asked, max(MIN_KERNEL_SECONDS, max_seconds_asked * part))
            reference_seconds = min(reference_seconds_asked, max(MIN_REFERENCE_SECONDS, reference_seconds_asked * part))
        if progress:
            progress(f"{name}: compiling or loading its kernel")
        method = registry.get(name)
        cls = method_class(name)
        requested = bootstrap_reps if cls == "bootstrap" else reps
        row = {"method": name, "class": cls, "target_decisions_per_s": TARGETS.get(cls),
               "requested_replications": requested}
        try:
            method.batch(gen.tables(0, 64), margin, alpha)          # compile / load cache
            pilot = min(requested, 1_000)
            t_pilot, _ = _time_kernel(method, gen, pilot, margin, alpha, chunk_size)
            n = requested
            if t_pilot / pilot * requested > max_seconds:
                n = max(pilot, int(max_seconds * pilot / t_pilot))
            if progress:
                progress(f"{name}: timing {n:,} replications (about {t_pilot / pilot * n:.3g} s)")
            seconds, passes = _time_kernel(method, gen, n, margin, alpha, chunk_size)
            rate = n / seconds
            note = "bootstrap: bootstrap_reps" if cls == "bootstrap" else None
            if n < requested:
                note = f"reduced from {requested:,}: pilot predicted more than {max_seconds:.3g} s"
            row.update({"replications": n, "reduced": n < requested, "replications_note": note, "seconds": seconds,
                        "decisions_per_s": rate, "pass_rate": passes / n,
                        "meets_target": None if row["target_decisions_per_s"] is None
                        else bool(rate >= row["target_decisions_per_s"])})
        except Exception as exc:  # a method under construction must not stop the others
            raise_pending()  # but an interrupt numba's compile swallowed must (simlab.interrupts)
            row.update({"error": f"kernel: {type(exc).__name__}: {exc}"})
            rows.append(row)
            continue
        fn = refs.get(name)
        if fn is None:
            row["reference"] = "none"
        elif ref_tables is None:
            row["reference"] = "skipped"
        else:
            if progress:
                progress(f"{name}: timing its reference implementation (at most about {reference_seconds:.3g} s)")
            try:
                row.update(_time_reference(fn, method, ref_tables, margin, alpha, reference_seconds))
                row["reference"] = f"{fn.__module__}.{fn.__name__}"
                row["speedup_vs_reference"] = row["decisions_per_s"] / row["reference_decisions_per_s"]
            except Exception as exc:
                row["reference"] = f"error: {type(exc).__name__}: {exc}"
        rows.append(row)
    return {"clusters": scenario.clusters, "trials": scenario.cluster_size.trials, "rho": scenario.rho,
            "cells": list(scenario.cells), "margin": margin, "alpha": alpha, "seed": seed,
            "numba_threads": threads, "targets": TARGETS, "kernel_seconds": max_seconds_asked,
            "reference_seconds": reference_seconds_asked, "total_seconds": total_seconds,
            "timing": "batch kernel calls only (table generation excluded); reference: one table at a time",
            "rows": rows}
