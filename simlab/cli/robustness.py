"""``simlab robustness``: a method's false-pass rate at one design under laws outside the
Dirichlet-multinomial cluster model (``studies.qualify.robustness``)."""
from __future__ import annotations

import argparse

from simlab.cli._args import (SCENARIO_CLUSTERS, add_json, add_max_seconds, check_and_say_time, check_methods,
                             check_time, checked, int_between, n_jobs, nonnegative_int, nonempty_path, positive_int)
from simlab.cli._backend import add_backend_arguments
from simlab.cli._output import UsageError, emit, log_to_stderr, print_table

DEFAULT_REPS = 20_000
FAMILY_HELP = ("logit_normal (random cluster, candidate and case effects), random_sizes (the model with Poisson / "
               "geometric sizes), discordance (gamma heterogeneity per cluster / case), direction (customers "
               "favouring either arm), model (the model's own corner, for reference)")
_open_unit = checked(float, lambda v: 0.0 < v < 1.0, "in (0, 1)")
_rho = checked(float, lambda v: 0.0 <= v < 1.0, "in [0, 1)")
_level = checked(float, lambda v: 0.0 < v < 0.5, "in (0, 0.5)")


def _families(text: str) -> tuple[str, ...]:
    from studies.qualify import FAMILIES

    names = tuple(f.strip() for f in text.split(",") if f.strip())
    if not names or any(f not in FAMILIES for f in names):
        raise argparse.ArgumentTypeError(f"must be a comma-separated list of {', '.join(FAMILIES)}, got {text!r}")
    twice = sorted({f for f in names if names.count(f) > 1})
    if twice:   # was accepted silently (each family is measured once)
        raise argparse.ArgumentTypeError(f"lists {', '.join(twice)} more than once ({text!r}): each family once")
    return names


def render(p: dict) -> None:
    d = p["design"]
    print(f"false-pass rates at K={d['clusters']}, M={d['trials']}, margin {d['margin']:g}, alpha {d['alpha']:g} "
          f"under laws outside the Dirichlet-multinomial model ({p['replications']:,} replications each, seed "
          f"{p['seed']}); verdict: {p['verdict_rule']}")
    rows = [[r["method"], r["label"], f"{r['icc_d']:.4f}" + (" >rho_max" if r["icc_above_rho_max"] else ""),
             f"{r['rate']:.4f}±{r['mc_se']:.4f}", f"{r['cp_upper']:.4f}", r["verdict"]] for r in p["rows"]]
    print_table("law x method", ["method", "law", "ICC of D", "false pass", "CP upper", "verdict"], rows)
    summary = [[s["method"], s["family"], s["laws"], s["holds"], s["fails"], s["undetermined"],
                s["fails_below_rho_max"], s["upper_within_alpha"], f"{s['worst_rate']:.4f}",
                f"{s['worst_cp_upper']:.4f}"] for s in p["summary"]]
    print_table("by family", ["method", "family", "laws", "holds", "fails", "undet.", "fails, ICC <= rho_max",
                              "upper <= alpha", "worst rate", "worst upper"], summary)
    print(f"{p['seconds']:.1f} s" + (f"; report {p['report']}" if p.get("report") else "")
          + (f"; dataset {p['dataset']}" if p.get("dataset") else ""))


def run_robustness(args: argparse.Namespace) -> None:
    check_methods(args.method, "--method", "fixed")  # before the studies load: a typo answers at once
    twice = sorted({m for m in args.method if args.method.count(m) > 1})
    if twice:   # was refused by the library with no field ("duplicate methods")
        raise UsageError(f"--method {', '.join(twice)} is given more than once: give each method once", "--method")
    from pathlib import Path

    from simlab.cli.study import check_writable, refuse_foreign_file

    if args.report and args.dataset and Path(args.report).resolve() == Path(args.dataset).resolve():
        raise UsageError(f"--dataset {args.dataset} is also --report: the dataset would replace the report; give "
                         "two paths", "--dataset")
    for flag, path in (("--report", args.report), ("--dataset", args.dataset)):
        if path:   # before the studies load and any work (an unwritable --report failed after the whole run)
            check_writable(path, flag)
            refuse_foreign_file(path, flag, args.force, "robustness" if flag == "--report" else None,
                                kind=None if flag == "--report" else "robustness")
    from simlab.cli._backend import executor_from_args
    from studies import save_dataset, save_json
    from studies.qualify import robustness, robustness_estimate

    kw = dict(alpha=args.alpha, rho_max=args.rho_max, baseline=args.baseline, replications=args.reps)
    kw.update({k: v for k, v in (("families", args.laws), ("seed", args.seed)) if v is not None})
    say = log_to_stderr(args)
    what = f"robustness of {', '.join(args.method)} at K={args.clusters}, M={args.trials}"
    from methods import get
    from studies.engine import design_preparation

    for name in args.method:  # what a method builds per design, before the pilot pays it unannounced
        for cost in design_preparation(get(name), args.clusters, args.trials):
            check_and_say_time(args, cost.seconds, f"{what}: {cost.driver}", say)
    with executor_from_args(args, args.n_jobs) as ex:
        estimate = robustness_estimate(args.method, args.clusters, args.trials, args.margin, workers=ex.workers, **kw)
        check_time(args, estimate.low, what)
        say(f"{what}: estimated {estimate.describe()} on {ex.describe()}")
        report = robustness(args.method, args.clusters, args.trials, args.margin, executor=ex, progress=say, **kw)
    payload = report.as_dict()
    if args.report:
        payload["report"] = str(save_json(payload, args.report))
    if args.dataset:
        payload["dataset"] = str(save_dataset(report.dataset(), args.dataset))
    emit(args, payload, render)


def register(subparsers, bench_subparsers) -> None:
    p = subparsers.add_parser("robustness", help="false-pass rates of a method at one design under laws outside the "
                                                 "Dirichlet-multinomial cluster model its certificate assumes")
    p.add_argument("--method", required=True, action="append",
                   help="fixed-sample method, e.g. cluster_t or a calibrated clustered_score@alpha=0.0200482 "
                        "(repeat for several: all decide the same tables)")
    p.add_argument("--clusters", type=SCENARIO_CLUSTERS, required=True, help="K, independent clusters")
    p.add_argument("--trials", type=int_between(1, 10_000), required=True, help="M, trials (pairs) per cluster, at most 10,000 (at most 500 with the random_sizes "
                        "laws, whose cluster sizes have mean M)")
    p.add_argument("--margin", type=_open_unit, required=True, help="non-inferiority margin")
    p.add_argument("--alpha", type=_level, default=0.025, help="one-sided level the claim is for (default %(default)s)")
    p.add_argument("--rho-max", type=_rho, default=0.1,
                   help="the claim's largest ICC: the random-size and model laws use it, and rows say whether a "
                        "law's ICC of D exceeds it (default %(default)s)")
    p.add_argument("--laws", type=_families, default=None, metavar="FAMILY,...",
                   help=f"law families to measure (default all): {FAMILY_HELP}")
    p.add_argument("--baseline", type=_open_unit, default=0.9,
                   help="population baseline pass rate of every law (default %(default)s)")
    p.add_argument("--reps", type=positive_int, default=DEFAULT_REPS,
                   help="replications per law (default %(default)s)")
    p.add_argument("--seed", type=nonnegative_int, default=None,
                   help="seed of the laws' counter-based streams (default: the library's fixed seed)")
    p.add_argument("--report", type=nonempty_path, default=None, metavar="FILE", help="also write the JSON report here")
    p.add_argument("--dataset", type=nonempty_path, default=None, metavar="FILE",
                   help="also write the netCDF dataset here")
    p.add_argument("--force", action="store_true",
                   help="replace --report / --dataset even when the file is not one simlab wrote")
    p.add_argument("--n-jobs", type=n_jobs, default=1, help="local worker processes, -1 = all cores (default 1)")
    add_backend_arguments(p)
    add_max_seconds(p)
    add_json(p)
    p.set_defaults(func=run_robustness)

