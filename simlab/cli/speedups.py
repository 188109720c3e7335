"""``simlab bench speedups``: the rewritten slow methods against their previous algorithm."""
from __future__ import annotations

import argparse
import time

# Memory: the largest design's tables (K = 100 clusters x 4 int64 cells a replication) held with
# the kernels' working copies (about 3x), beside the interpreter with numba and the methods loaded.
BASE_BYTES = 300 << 20
BYTES_PER_REPLICATION = 3 * 100 * 4 * 8
PILOT_REPS = 20        # bootstrap replications of the pilot run
PILOT_EXTRA_REPS = 200  # added in the second pilot: the bootstraps' seconds a replication


def estimate_seconds(bench, reps: int, bayes_reps: int, repeat: int, seed: int) -> float:
    """Wall seconds of ``bench(reps, bayes_reps, seed, repeat)`` (``methods.bench_speedups``),
    linear in its work: after one untimed run (kernels loaded), three timed pilots of one
    repeat -- (20, 1), (220, 1), (20, 2) -- give the fixed part and the seconds of a bootstrap
    and of a bayes_hierarchical replication; the timed part runs ``repeat`` times."""
    def timed(r: int, b: int) -> float:
        t = time.perf_counter()
        bench(reps=r, bayes_reps=b, seed=seed, repeat=1)
        return time.perf_counter() - t

    timed(PILOT_REPS, 1)  # loads (or compiles) the kernels
    base = timed(PILOT_REPS, 1)
    per_rep = max(0.0, timed(PILOT_REPS + PILOT_EXTRA_REPS, 1) - base) / PILOT_EXTRA_REPS
    per_bayes = max(0.0, timed(PILOT_REPS, 2) - base)
    fixed = max(0.0, base - PILOT_REPS * per_rep - per_bayes)
    return fixed + repeat * (reps * per_rep + bayes_reps * per_bayes)


def cmd_bench_speedups(args: argparse.Namespace) -> None:
    from simlab.cli._args import check_and_say_time
    from simlab.cli._output import UsageError, emit, log_to_stderr, print_table
    from simlab.cli.bench import check_memory_of

    for flag, n in (("--reps", args.reps), ("--bayes-reps", args.bayes_reps)):  # before anything runs
        check_memory_of(args, BASE_BYTES + BYTES_PER_REPLICATION * n,
                        f"bench speedups ({n:,} replications of each design held in memory)", flag)
    from methods import bench_speedups

    say = log_to_stderr(args)
    say("estimating (three short pilot runs) ...")
    seconds = estimate_seconds(bench_speedups, args.reps, args.bayes_reps, args.repeat, args.seed)
    check_and_say_time(args, seconds, f"bench speedups ({args.reps:,} bootstrap and {args.bayes_reps:,} "
                                      f"bayes_hierarchical replications, best of {args.repeat})", say)
    say(f"timing old and new algorithms ({args.repeat} run(s) each, two designs) ...")
    try:
        payload = bench_speedups(reps=args.reps, bayes_reps=args.bayes_reps, seed=args.seed, repeat=args.repeat)
    except MemoryError:
        raise UsageError("bench speedups ran out of memory; lower --reps or --bayes-reps", "--reps") from None

    def render(p: dict) -> None:
        print_table(f"old vs new ({p['timing']})", ["name", "replications", "old /s", "new /s", "ratio"],
                    [[r["workload"], r["replications"], r["old_per_s"], r["new_per_s"], r["ratio"]]
                     for r in p["rows"]])
        for r in p["rows"]:
            if "max_abs_bound_difference" in r:
                print(f"{r['workload']}: largest bound difference {r['max_abs_bound_difference']:.2e}")
            if "same_results" in r:
                print(f"{r['workload']}: identical statistics {r['same_results']}")
        t = p["bayes_hierarchical_target"]
        print(f"bayes_hierarchical >= {t['ratio']:g}x at 100 x 10: {'met' if t['met'] else 'NOT met'}; "
              f"bounds within {t['bound_tolerance']:g}: {t['within_tolerance']}")

    emit(args, payload, render)


def register(sub, bench_sub) -> None:
    from simlab.cli._args import add_json, add_max_memory, add_max_seconds, nonnegative_int, positive_int

    p = bench_sub.add_parser("speedups", help="bayes_hierarchical and the bootstraps vs their previous algorithm")
    p.add_argument("--reps", type=positive_int, default=2000, help="bootstrap replications per design (%(default)s)")
    p.add_argument("--bayes-reps", type=positive_int, default=6, help="bayes_hierarchical replications per design (%(default)s)")
    p.add_argument("--repeat", type=positive_int, default=3, help="time each row this often, keep the fastest (%(default)s)")
    p.add_argument("--seed", type=nonnegative_int, default=1, help="random seed: the same seed gives the same replications (default %(default)s)")
    add_max_seconds(p)
    add_max_memory(p)
    add_json(p)
    p.set_defaults(func=cmd_bench_speedups)
