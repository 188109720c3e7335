"""``simlab demo``: the seed's headline findings, exactly and by simulation, the methods the
story needs (``--full``: every registered method) at the seed's design point (30 customers,
margin 0.03), and what a gate can do there and at 100 customers x 3 trials.

1. Headline (evidence-spine chapter, "Three different decisions"): ``clustered_normal``
   with 30 one-trial customers, baseline always passing, candidate losing with
   probability 0.04, margin 0.03, 95%: P(pass) = 0.96^30 = 0.29386 -- computed by the
   exact engine, by the formula, and by simulation (with its MC SE and z-score).
2. Unequal clusters (two estimands, ``simlab.estimands``): 15 customers winning 1/1 and 15 losing 9/9.  The
   trial-weighted difference is -0.8, the cluster-weighted one 0; every method's
   estimate is reported beside the estimand it targets.
3. Method comparison: the ``DEMO_METHODS`` (``full``: every registered fixed-sample method) on
   the same tables, at the
   seed's scenario (false pass, exact where an engine applies) and on a grid of true
   differences at 30 customers x 3 trials (baseline 0.9, discordance 0.1, rho 0.1),
   margin 0.03.  Slow kernels (Bayesian, bootstrap) get fewer replications, chosen from
   their declared cost so the demo stays within its time budget (the same on every machine);
   the MC SE of every figure is
   reported.  The dataset and a plot are written to ``simlab-out/demo/``.
4. ``simlab recommend`` at the same design (rho up to 0.1) over the same methods: those a
   current qualification file covers there, ranked by power at difference 0, the top one
   sized (``full``: also certifying and calibrating on demand, as ``simlab recommend`` does).
5. Design comparison (``studies.demo_designs``): at the seed's design and at 100 x 3, the
   distribution-free limit, the methods valid by theorem, the calibrated ``clustered_score``
   and ``dm_score`` (levels read from certificates in the records directory), ``cluster_t``
   uncertified -- power and false pass side by side -- and a plot of power against K.

Only the kernels of the methods shown are compiled (numba caches them on disk), and every
simulation is a kernel over a ``tables[R, K, 4]`` array: no Python per replication.
"""
from __future__ import annotations

import json
import math
import time
from pathlib import Path
from typing import Callable

import numpy as np

from simlab.sampling import scenario_tables
from simlab.scenario import ExplicitSizes, PairedScenario

from studies.exact.fixed import exact_engine, exact_grid, exact_measures
from studies.engine.chunks import RunInfo, timestamp
from studies.engine.runner import ScenarioCounts, evaluate_scenario
from studies.engine.spec import MethodRef, StudySpec
from studies.demo_designs import DRAW_SLICE

SEED_CELLS = (0.96, 0.04, 0.0, 0.0)
SEED_CLUSTERS = 30
MARGIN = 0.03
ALPHA = 0.025
MIN_REPLICATIONS = 200
DIFFERENCES = (-0.06, -0.04, -0.03, -0.02, 0.0)
# the methods the story needs: the seed's interval and the naive trial-level one, the cluster
# t-test teams run, the score tests that calibrate, and the intervals valid by theorem
DEMO_METHODS = ("clustered_normal", "paired_wald", "cluster_t", "clustered_score", "dm_score", "betting_ci",
                "betting_ci_horizon")
# kernels a second process compiles (into numba's on-disk cache) while this one runs the
# headline and compiles the others: the costliest to compile, about half of the total
BACKGROUND_KERNELS = ("betting_ci", "betting_ci_horizon", "dm_score")


def seed_scenario() -> PairedScenario:
    """30 customers, one trial each, baseline always passes, candidate loses w.p. 0.04."""
    return PairedScenario(cells=SEED_CELLS, clusters=SEED_CLUSTERS)


def unequal_scenario() -> PairedScenario:
    """15 one-trial customers whose candidate wins, 15 nine-trial customers whose candidate loses."""
    win, lose = (0.0, 0.0, 1.0, 0.0), (0.0, 1.0, 0.0, 0.0)
    return PairedScenario(cells=(0.0, 0.9, 0.1, 0.0), clusters=30,
                          cluster_size=ExplicitSizes(sizes=(1,) * 15 + (9,) * 15),
                          cluster_cells=(win,) * 15 + (lose,) * 15)


def demo_methods(full: bool = False) -> list[str]:
    """The methods the demo compares: ``DEMO_METHODS``, or every registered fixed-sample method."""
    from methods import registry

    registered = registry.names("fixed")
    missing = [n for n in DEMO_METHODS if n not in registered]
    if missing:
        raise KeyError(f"demo methods not registered: {missing}")
    return list(registered) if full else list(DEMO_METHODS)


def background_kernels(full: bool = False) -> list[str]:
    """The methods whose kernels :func:`warm_kernels` may compile in another process while
    :func:`study_demo` starts: ``BACKGROUND_KERNELS`` (``full``: also every registered method
    the default demo does not show)."""
    return [n for n in demo_methods(full) if n in BACKGROUND_KERNELS or n not in DEMO_METHODS]


def warm_kernels(names: list[str], seed: int = 20261129,
                 before_each: Callable[[str], None] | None = None) -> list[str]:
    """Compile the batch kernels of ``names`` for the tables the demo passes them (int32
    ``tables[R, K, 4]``, C order), so that numba's on-disk cache holds them: run in a worker
    process, the demo's own process then loads them instead of compiling them (once, not once
    per process).  ``before_each(what)`` is told before each.  Returns ``names``."""
    from methods import registry

    table = scenario_tables(unequal_scenario(), seed, 0, 1)
    for name in names:
        if before_each is not None:
            before_each(f"loading {name}'s kernel")
        registry.get(name).batch(table, MARGIN, ALPHA)
    return list(names)


def demo_floor_seconds(replications: int = 10_000, design_replications: int = 10_000,
                       curve_replications: int = 3000, headline_replications: int = 400_000,
                       method_seconds: float = 3.0, full: bool = False) -> float:
    """The least the demo's simulations can take, from the methods' declared costs per table
    (``methods.fixed_and_per_table`` on probe tables of each design; no kernel runs): the
    headline, the method comparison (each method capped at ``method_seconds`` as its plan caps
    it), both designs' two scenarios and the power curve.  One-off constructions, start-up and
    kernel loading come on top, so the demo can be refused on it before anything runs."""
    from methods import fixed_and_per_table, registry
    from studies.exact.probes import probe_tables

    from .demo_designs import BUILD_SECONDS, CALIBRATED_METHODS, CURVE_CLUSTERS, CURVE_TRIALS, DESIGNS, \
        THEOREM_METHODS, UNCERTIFIED_METHOD

    def per_table(name: str, clusters: int, trials: int) -> float:
        once, per = fixed_and_per_table(registry.get(name), probe_tables(np.full(clusters, trials), False))
        return 0.0 if once - per > BUILD_SECONDS else per   # a construction that long: the demo may skip it

    total = headline_replications * per_table("clustered_normal", SEED_CLUSTERS, 1)
    points = len(DIFFERENCES) + 1
    for name in demo_methods(full):
        total += min(replications * per_table(name, SEED_CLUSTERS, 3) * points, method_seconds)
    designed = (*THEOREM_METHODS, *CALIBRATED_METHODS, UNCERTIFIED_METHOD)
    for clusters, trials, _ in DESIGNS:
        total += 2 * design_replications * sum(per_table(n, clusters, trials) for n in designed)
    for clusters in CURVE_CLUSTERS:
        total += curve_replications * sum(per_table(n, clusters, CURVE_TRIALS) for n in designed)
    return total


def demo_spec(methods: list[str], replications: int, seed: int) -> StudySpec:
    return StudySpec.model_validate({
        "name": "demo", "description": "30 customers x 3 trials, rho 0.1, baseline 0.9, discordance 0.1, margin 0.03",
        "methods": methods,
        "scenario": {"clusters": SEED_CLUSTERS, "trials": 3, "rho": 0.1, "baseline": 0.9, "discordance": 0.1,
                     "difference": 0.0},
        "grid": {"difference": list(DIFFERENCES)},
        "margins": [MARGIN], "alphas": [ALPHA], "replications": replications, "seed": seed,
        "exact": True})


def _replication_plan(methods, refs, scenario, replications: int, seconds: float, seed: int) -> dict[str, int]:
    """Replications per method: all of ``replications`` unless the method's declared cost of them
    (``methods.analysis_cost`` on 400 of the scenario's tables) is over ``seconds`` (then fewer,
    >= MIN_REPLICATIONS).  Declared, not timed: the demo's figures are the same on every machine
    and at any load (a timed pilot planned fewer replications on a busy one)."""
    from methods import fixed_and_per_table

    tables = scenario_tables(scenario, seed, 0, 400)
    plan = {}
    for ref, m in zip(refs, methods):
        once, per = fixed_and_per_table(m, tables)
        n = replications if once + per * (replications - 1) <= seconds else int((seconds - once) / max(per, 1e-12))
        plan[ref.key] = int(max(MIN_REPLICATIONS, min(replications, n // 100 * 100)))
    return plan


def _grouped_counts(scenario, refs, plan, seed) -> ScenarioCounts:
    groups: dict[int, list] = {}
    for ref in refs:
        groups.setdefault(plan[ref.key], []).append(ref)
    parts = [evaluate_scenario(scenario, grp, [MARGIN], [ALPHA], n, seed, chunks=-(-n // DRAW_SLICE))
             for n, grp in sorted(groups.items())]
    c = ScenarioCounts.concat(parts)
    order = [c.methods.index(r.key) for r in refs]
    return ScenarioCounts(tuple(c.methods[i] for i in order), c.margins, c.alphas, c.theta[order],
                          c.tally[order], c.sampler, c.ranges)


def study_demo(out_dir: str | Path = "simlab-out/demo", replications: int = 10_000,
               headline_replications: int = 400_000,
               seed: int = 20261129, method_seconds: float = 3.0, exact_seconds: float = 1.0, full: bool = False,
               design_replications: int = 10_000, curve_replications: int = 3000,
               progress: Callable[[str], None] | None = None, background=None,
               before_designs: Callable[[float], None] | None = None,
               before_step: Callable[[str], None] | None = None) -> dict:
    """Run the demo; returns the payload the CLI prints (and writes dataset + plots).
    ``full``: every registered fixed-sample method, and certificates / calibrations made on
    demand in the recommendation.  ``progress(message)`` is told as each of its stages starts.
    ``before_designs(seconds)`` is told the designs' section's estimated time (the one part that
    grows with ``design_replications``) once the kernels are loaded, before anything else that
    grows with the replications runs; it may raise to stop the demo there.  ``before_step(what)``
    is told before each section and each kernel it loads or waits for (each a bounded step); it may
    raise to stop the demo at a time limit, so that the fixed sections do not run past it either.

    ``background``: a process pool with one worker (``multiprocessing`` ``Pool(1)``, spawned).
    Its worker compiles the kernels of :func:`background_kernels` into numba's on-disk cache
    (:func:`warm_kernels`) while this process runs the headline and compiles the others, then
    makes the recommendation (:func:`demo_recommendation`) while this process, having loaded
    those kernels from the cache, runs the other sections.  Every figure is the same with or
    without it; without it all runs here."""
    from methods import registry

    from studies.plots.study import plot_dataset
    from studies.datasets import save_dataset
    from studies.engine.study_dataset import build_study_dataset

    t_start = time.perf_counter()
    started = timestamp()
    names = demo_methods(full)
    out = Path(out_dir)
    if background is not None:  # queued in this order: the worker runs them one after another
        warmed = background.apply_async(warm_kernels, (background_kernels(full), seed))
        advised = background.apply_async(demo_recommendation, (names, seed, str(out), full))
    refs = [MethodRef(name=n) for n in names]
    methods = [r.resolve() for r in refs]

    def step(what: str) -> None:
        if before_step is not None:
            before_step(what)

    def say(message: str) -> None:
        step(message)
        if progress is not None:
            progress(message)

    def wait(result, what: str):   # a background result, checking the limit while it comes
        while not result.ready():
            step(what)
            result.wait(0.5)
        return result.get()

    # 1. headline ---------------------------------------------------------------
    say(f"1/5 headline: exact and {headline_replications:,} simulated replications of clustered_normal")
    s0 = seed_scenario()
    cn = registry.get("clustered_normal")
    ex = exact_measures(s0, cn, MARGIN, ALPHA)
    sim = evaluate_scenario(s0, ["clustered_normal"], [MARGIN], [ALPHA], headline_replications, seed,
                            chunks=-(-headline_replications // DRAW_SLICE))
    sm = sim.measures()
    p_sim, se_sim = float(sm["pass_rate"].ravel()[0]), float(sm["pass_rate_mcse"].ravel()[0])
    headline = {"scenario": "30 customers x 1 trial, cells (p11, p10, p01, p00) = (0.96, 0.04, 0, 0), "
                            "margin 0.03, 95%",
                "formula": 0.96 ** 30, "exact": ex.pass_rate, "exact_engine": ex.engine,
                "simulated": p_sim, "mc_se": se_sim, "replications": headline_replications,
                "z": (p_sim - ex.pass_rate) / se_sim if se_sim > 0 else math.nan,
                "true_difference": s0.true_difference_trial()}

    # 2. unequal clusters ---------------------------------------------------------
    certificates: dict = {}  # each certificate is verified once in this run
    if background is not None:  # compile ours, then load the worker's from the cache
        warm_kernels([n for n in names if n not in background_kernels(full)], seed, before_each=step)
        wait(warmed, "the kernels compiled in the background")
    if before_designs is not None:    # priced on loaded kernels, before the parts that grow with the replications
        from .demo_designs import designs_seconds
        before_designs(designs_seconds(design_replications, seed + 1, cache=certificates))
    say(f"2/5 unequal clusters: {len(methods)} methods on one deterministic table")
    su = unequal_scenario()
    table = scenario_tables(su, seed, 0, 1)
    unequal_rows = []
    for ref, m in zip(refs, methods):
        r = m.batch(table, MARGIN, ALPHA)
        est = str(getattr(m.estimand, "value", m.estimand))
        unequal_rows.append({"method": ref.key, "estimand": est, "target": m.true_value(su),
                             "estimate": float(r.estimate[0]), "lower": float(r.lower[0]),
                             "upper": float(r.upper[0]),
                             "status": {0: "fail", 1: "pass", 2: "inconclusive"}[int(r.status[0])]})
    unequal = {"scenario": "15 customers win 1/1, 15 customers lose 9/9 (deterministic)",
               "true_difference_trial": su.true_difference_trial(),
               "true_difference_cluster": su.true_difference_cluster(), "rows": unequal_rows}

    # 3. library comparison -----------------------------------------------------------
    spec = demo_spec(names, replications, seed)
    points = spec.points()
    say(f"3/5 method comparison: {len(methods)} methods x {len(points)} scenarios (replications per method "
        "planned by their declared cost)")
    plan = _replication_plan(methods, refs, points[0][1], replications,
                             method_seconds / (len(points) + 1), seed)
    counts = [_grouped_counts(sc, refs, plan, seed) for _, sc in points]
    exact_rows = exact_grid(points, refs, methods, spec.margins, spec.alphas, max_seconds=exact_seconds)
    seed_counts = _grouped_counts(s0, refs, plan, seed)
    seed_meas = seed_counts.measures()
    info = RunInfo(tasks=len(points), computed=len(points), started=started)
    info.finished = timestamp()
    info.seconds = time.perf_counter() - t_start
    ds = build_study_dataset(spec, points, counts, methods, refs, exact_rows, info, kind="demo")
    ds.attrs["replications_by_method"] = json.dumps(plan, sort_keys=True)
    say(f"3/5 exact seed false-pass rates; writing {out / 'demo.nc'} and {out / 'demo.png'}")
    nc = save_dataset(ds, out / "demo.nc")
    png = plot_dataset(ds, out / "demo.png")

    sel = ds.sel(margin=MARGIN, alpha=ALPHA)
    rows = []
    for i, (ref, m) in enumerate(zip(refs, methods)):
        engine, _ = exact_engine(s0, m, ALPHA)
        seed_fp = {"value": float(seed_meas["pass_rate"][i, 0, 0]),
                   "mc_se": float(seed_meas["pass_rate_mcse"][i, 0, 0]),
                   "exact": False}
        if engine is not None:
            e = exact_measures(s0, m, MARGIN, ALPHA, engine, max_seconds=exact_seconds * 5)
            seed_fp = {"value": e.pass_rate, "mc_se": 0.0, "exact": True}
        pm = sel.isel(method=i)

        def at(d, var, pm=pm):
            return float(pm[var].sel(difference=d).values)

        rows.append({
            "method": ref.key, "estimand": str(getattr(m.estimand, "value", m.estimand)),
            "replications": plan[ref.key],
            "seed_false_pass": seed_fp,
            # scored against the method's own estimand: a rate is a false pass where its true
            # value is in the null (binomial_loss: loss rate >= margin, also at difference 0), else power
            "false_pass_boundary": {"value": at(-0.03, "false_pass_rate"), "mc_se": at(-0.03, "false_pass_rate_mcse"),
                                    "exact": at(-0.03, "exact_pass_rate")},
            "false_pass_-0.04": {"value": at(-0.04, "false_pass_rate"), "mc_se": at(-0.04, "false_pass_rate_mcse")},
            "power_0": {"value": at(0.0, "power"), "mc_se": at(0.0, "power_mcse")},
            "coverage_boundary": {"value": at(-0.03, "coverage"), "mc_se": at(-0.03, "coverage_mcse")},
            "inconclusive_boundary": at(-0.03, "inconclusive_rate"),
            "mean_width_boundary": at(-0.03, "mean_width"),
        })
    # 5. the gate at the seed's design and at 100 x 3, and power against K (studies.demo_designs)
    from studies.plots.power_k import plot_power_k
    from .demo_designs import compare_designs, power_against_k
    say(f"4/5 designs 30 x 1 and 100 x 3 ({design_replications:,} tables each); power against K "
        f"({curve_replications:,} tables per K)")
    designs = compare_designs(design_replications, seed + 1, cache=certificates)
    curve = power_against_k(curve_replications, seed + 2, cache=certificates)
    power_png = plot_power_k(curve, designs["distribution_free_limit"]["clusters"], out / "power_k.png")
    # 4. which methods may decide at the seed's design, ranked by power (studies.recommend); collected
    # last: the worker makes it while this process runs the rest
    say("5/5 recommendation at 30 x 3" + (" (certifying and calibrating on demand)" if full else ""))
    advice = wait(advised, "the recommendation") if background is not None else \
        demo_recommendation(names, seed, str(out), full)
    return {"headline": headline, "unequal": unequal, "recommend": advice, "full": full, "methods": names,
            "designs": designs, "power_curve": curve,
            "comparison": {"design": spec.description, "margin": MARGIN, "alpha": ALPHA,
                           "differences": list(DIFFERENCES),
                           "rows": rows},
            "files": {"dataset": str(nc), "plot": str(png), "power_plot": str(power_png)}, "spec_hash": spec.hash,
            "seconds": time.perf_counter() - t_start}


def demo_recommendation(names: list[str], seed: int, out_dir: str, full: bool = False) -> dict:
    """``simlab recommend`` at the seed's design (30 x 3, rho up to 0.1) over the demo's
    methods: those a current file covers there, ranked by power (``full``: also certifying
    and calibrating on demand -- into ``out_dir/certificates``, never into the shipped
    records -- and the K for the target power of the best one valid at every K)."""
    from .recommend import recommend

    return recommend(clusters=SEED_CLUSTERS, trials=3, margin=MARGIN, rho_max=0.1, alpha=ALPHA, top=1 if full else 0,
                     methods=names, size_reps=8000, seed=seed, certify_dir=Path(out_dir) / "certificates",
                     certify_missing=full, calibrate_missing=full)


__all__ = ["BACKGROUND_KERNELS", "DEMO_METHODS", "background_kernels", "demo_methods", "demo_recommendation",
           "study_demo", "seed_scenario", "unequal_scenario", "demo_spec", "warm_kernels"]
