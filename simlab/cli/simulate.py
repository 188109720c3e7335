"""``simlab simulate`` (draw tables for a scenario and summarise them) (``simlab bench simulate`` is in bench.py)."""
from __future__ import annotations

import argparse

from simlab.cli._args import (
    add_json,
    add_max_memory,
    add_max_seconds,
    add_scenario_args,
    check_memory,
    check_time,
    nonnegative_int,
    positive_int,
    scenario_from_args,
)
from simlab.cli._output import emit, log_to_stderr, print_table

# int32 tables[R, K, 4] (16 B) plus the summary's int64/float64 temporaries over R*K: peak RSS
# measured 97 B per cluster-replication at R = 1e6, K = 30 (simlab simulate --reps 1000000).
BYTES_PER_CLUSTER_REP = 100


def simulate_memory(reps: int, clusters: int) -> int:
    return BYTES_PER_CLUSTER_REP * reps * clusters


CHUNKS = 20  # progress lines (and chances to stop on a signal) over a long draw
PILOT = 8    # replications that price the draw (one alone is mostly call overhead: 3x too high)


def draw_seconds(generator, reps: int, out) -> tuple[float, int]:
    """``(seconds per replication, replications already in out)`` of ``generator``'s draw, from
    the draw's first ``PILOT`` replications (into ``out``) -- or, over ``PILOT_MAX_PAIRS``
    trial pairs a replication (10^6 clusters of 10^5 trials: 10^11, a replication of 20 min),
    from ``PILOT`` replications of the scenario cut to that many pairs
    (``studies.engine.cost.shrink_scenario``), times the ratio of pairs: the generator draws one
    uniform a trial pair (one more with recording error), linear in the pairs."""
    import time

    import numpy as np

    from studies.engine import PILOT_MAX_PAIRS, scenario_pairs, shrink_scenario

    generator.fill(out[:0], 0)        # loads the kernel: not part of the price
    pairs = scenario_pairs(generator.scenario)
    if pairs <= PILOT_MAX_PAIRS:
        pilot = min(reps, PILOT)
        t0 = time.perf_counter()
        generator.fill(out[:pilot], 0)
        return (time.perf_counter() - t0) / pilot, pilot
    small = shrink_scenario(generator.scenario, PILOT_MAX_PAIRS)
    piloted = type(generator)(small, generator.seed)
    t0 = time.perf_counter()
    piloted.fill(np.empty((PILOT, small.clusters, 4), np.int32), 0)
    return (time.perf_counter() - t0) / PILOT * pairs / scenario_pairs(small), 0


def draw_tables(generator, reps: int, args: argparse.Namespace, what: str):
    """All ``reps`` tables, drawn in chunks into one array after a timed pilot
    (``draw_seconds``) has priced the whole draw against ``--max-seconds``.  The draws are
    counter-based, so the chunks are exactly the tables of one call (``simlab.generate``)."""
    import numpy as np

    say = log_to_stderr(args)
    out = np.empty((reps, generator.scenario.clusters, 4), np.int32)
    per_rep, pilot = draw_seconds(generator, reps, out)
    check_time(args, per_rep * reps, what)
    say(f"{what}: estimated {per_rep * reps:.3g} s")
    bounds = sorted({pilot + (reps - pilot) * i // CHUNKS for i in range(CHUNKS + 1)})
    for start, stop in zip(bounds, bounds[1:]):
        generator.fill(out[start:stop], start)
        say(f"{stop:,}/{reps:,} replications")
    return out


def run_simulate(args: argparse.Namespace) -> None:
    scenario = scenario_from_args(args)
    check_memory(args, simulate_memory(args.reps, scenario.clusters),
                 f"simulate ({args.reps:,} replications x {scenario.clusters:,} clusters, held in memory)")
    from simlab.generate import TableGenerator  # numba: after the scenario and the memory are checked
    from simlab.summary import summarize

    tables = draw_tables(TableGenerator(scenario, args.seed), args.reps, args,
                         f"simulate ({args.reps:,} replications x {scenario.clusters:,} clusters)")
    payload = {"scenario": scenario.model_dump(mode="json"), "scenario_key": scenario.key, "seed": args.seed,
               **summarize(scenario, tables)}

    def render(p: dict) -> None:
        print(f"scenario {p['scenario_key'][:12]}  seed {p['seed']}  {p['replications']} replications "
              f"x {p['clusters']} clusters ({p['trial_pairs']} trial pairs)")
        rows = [[c, p["cell_rates"][c], p["expected_cell_rates"][c]] for c in p["cell_rates"]]
        print_table("cell rates of recorded pairs", ["field", "simulated", "expected"], rows)
        rows = [[k, p[k]] for k in ("mean_trial_weighted_difference", "observed_difference_trial",
                                     "true_difference_trial", "true_difference_cluster",
                                     "baseline_icc_anova", "rho", "mean_trials_per_cluster", "empty_cluster_rate")]
        print_table("estimands and dependence", ["field", "value"], rows)

    emit(args, payload, render)


def register(sub, bench_sub) -> None:
    p = sub.add_parser("simulate", help="draw tables for a scenario and summarise them")
    add_scenario_args(p)
    p.add_argument("--reps", type=positive_int, default=10_000, help="replications (default %(default)s)")
    p.add_argument("--seed", type=nonnegative_int, default=20261129,
                   help="random seed: the same seed gives the same replications (default %(default)s)")
    add_max_memory(p)
    add_max_seconds(p)
    add_json(p)
    p.set_defaults(func=run_simulate)
