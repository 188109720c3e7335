"""``simlab bench speedups``: the rewritten slow methods against their previous algorithm."""
from __future__ import annotations

import argparse


def cmd_bench_speedups(args: argparse.Namespace) -> None:
    from methods import bench_speedups
    from simlab.cli._output import emit, print_table

    payload = bench_speedups(reps=args.reps, bayes_reps=args.bayes_reps, seed=args.seed, repeat=args.repeat)

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
    from simlab.cli._args import add_json, nonnegative_int, positive_int

    p = bench_sub.add_parser("speedups", help="bayes_hierarchical and the bootstraps vs their previous algorithm")
    p.add_argument("--reps", type=positive_int, default=2000, help="bootstrap replications per design (%(default)s)")
    p.add_argument("--bayes-reps", type=positive_int, default=6, help="bayes_hierarchical replications per design (%(default)s)")
    p.add_argument("--repeat", type=positive_int, default=3, help="time each row this often, keep the fastest (%(default)s)")
    p.add_argument("--seed", type=nonnegative_int, default=1, help="random seed: the same seed gives the same replications (default %(default)s)")
    add_json(p)
    p.set_defaults(func=cmd_bench_speedups)
