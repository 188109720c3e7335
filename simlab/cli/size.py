"""``simlab size``: clusters needed for a target power (simulation, analytic start)."""
from __future__ import annotations

import argparse

from simlab.cli._args import (
    DESIGN_TRIALS,
    add_json,
    add_max_seconds,
    first_use_compiles,
    check_methods,
    check_power,
    check_and_say_time,
    check_time,
    checked,
    time_limit,
    finite_float,
    int_at_least,
    int_between,
    nonnegative_int,
    positive_float,
    n_jobs,
    one_sided_alpha,
    positive_int,
    unit_open_top,
)
from simlab.cli._backend import add_backend_arguments
from simlab.cli._output import UsageError, emit, log_to_stderr

_open_unit = checked(float, lambda v: 0.0 < v < 1.0, "in (0, 1)")
# no discordant pairs: every experiment shows a zero difference with zero variance
_discordance = checked(float, lambda v: 0.0 < v <= 1.0, "in (0, 1] (zero discordance is a degenerate design: every "
                       "experiment shows a zero difference with zero variance, power 1 or 0 whatever K)")


def run_size(args: argparse.Namespace) -> None:
    from methods import info

    check_methods(args.method, "--method")  # every input is checked before the studies load
    entry = info(args.method)
    if args.looks is not None and entry.kind != "sequential":
        raise UsageError(f"--looks applies to sequential methods; {entry.name!r} is fixed-sample", "--looks")
    if args.looks is None and entry.kind == "sequential":  # was refused after 7 s of power frames
        raise UsageError(f"method {entry.name!r} is sequential: give --looks (equally spaced looks)", "--looks")
    check_power(args)
    if args.true_difference <= -args.margin:
        raise UsageError(f"--true-difference {args.true_difference:g} must exceed -margin ({-args.margin:g}): power "
                         "is only defined under the alternative", "--true-difference")
    if args.discordance is None and 2.0 * abs(args.true_difference) > 1.0:
        raise UsageError(f"--true-difference {args.true_difference:g} is too large: the default discordance "
                         "max(2 |difference|, margin, 0.1) must be <= 1, so |difference| <= 0.5 (or give "
                         "--discordance)", "--true-difference")
    if args.discordance is not None and args.discordance < abs(args.true_difference):
        raise UsageError(f"--discordance {args.discordance:g} must be >= |--true-difference| = "
                         f"{abs(args.true_difference):g} (the difference is p01 - p10 <= p10 + p01)", "--discordance")
    # the alternative's cells (PairedScenario.from_rates): --true-difference 0.5 at the default baseline
    # 0.9 was blamed on --baseline, a default the user never gave
    q = args.discordance if args.discordance is not None else max(2.0 * abs(args.true_difference), args.margin, 0.1)
    p11 = args.baseline - (q - args.true_difference) / 2.0
    p00 = 1.0 - args.baseline - (q + args.true_difference) / 2.0
    if min(p11, p00) < -1e-12:
        flag = "--discordance" if args.discordance is not None else "--true-difference"
        raise UsageError(f"{flag}: baseline {args.baseline:g}, difference {args.true_difference:g} and discordance "
                         f"{q:g}{'' if args.discordance is not None else ' (the default)'} imply p11 = {p11:.4g}, "
                         f"p00 = {p00:.4g}: the candidate's pass rate (baseline + difference = "
                         f"{args.baseline + args.true_difference:.4g}) and the discordant pairs must fit in [0, 1]",
                         flag)
    if args.rho_max is not None and args.rho_max < args.rho:
        raise UsageError(f"--rho-max {args.rho_max:g} must be >= --rho {args.rho:g}: the certificate's nuisance "
                         "domain holds the design's own correlation", "--rho-max")
    if args.out:
        from simlab.cli.study import check_folder

        check_folder(args.out, "--out")
    from methods import get
    from simlab.cli._backend import executor_from_args
    from studies.sizing import save_sizing, size, size_estimate, sizing_paths

    method = get(args.method)
    if args.out:  # the files --out DIR will hold are named now: a user's file of that name is not replaced
        from simlab.cli.study import check_plot_out, refuse_foreign_file

        nc, png = sizing_paths(args.out, {"method": method.name, "margin": args.margin,
                                          "difference": args.true_difference, "rho": args.rho, "seed": args.seed,
                                          "trials_per_cluster": args.trials_per_cluster})
        refuse_foreign_file(nc, "--out", args.force, kind="sizing")
        check_plot_out(png, "--out", args.force)
    say = log_to_stderr(args)

    def before_preparing(seconds: float, what: str) -> None:
        check_and_say_time(args, seconds, f"sizing {args.method}: preparing {what}", say)

    with first_use_compiles([method], say):   # its pilot loads the kernels
        estimate = size_estimate(method, margin=args.margin, difference=args.true_difference, power=args.power,
                                 alpha=args.alpha, trials=args.trials_per_cluster, baseline=args.baseline,
                                 discordance=args.discordance, rho=args.rho, looks=args.looks, seed=args.seed,
                                 before_preparing=before_preparing)
    if estimate is not None:
        what = f"sizing {args.method}"
        check_time(args, estimate.low, what + "'s first power frame")
        say(f"{what}: the first power frame estimated {estimate.describe()}; the certificate at the answer and any "
            "larger replication count come on top")
    from studies.sizing import SizingStopped, StepBudget

    limit = time_limit(args)
    with executor_from_args(args, args.n_jobs) as ex:
        try:  # the whole power search within --max-seconds (its first frame was the only step checked)
            res = size(method, margin=args.margin, difference=args.true_difference, power=args.power,
                       alpha=args.alpha, trials=args.trials_per_cluster, baseline=args.baseline,
                       discordance=args.discordance, rho=args.rho, rho_max=args.rho_max, looks=args.looks,
                       seed=args.seed, max_reps=args.max_reps, progress=say, executor=ex, budget=StepBudget(limit))
        except SizingStopped as stop:
            found = "; ".join(f"{k} {v:.4g}" if isinstance(v, float) else f"{k} {v}" for k, v in stop.bracket.items())
            raise UsageError(f"sizing {args.method} stopped within --max-seconds {limit:g}: {stop.why}"
                             + (f" (found so far: {found})" if found else "") + "; raise --max-seconds to finish it",
                             "--max-seconds") from None
    if args.out:
        save_sizing(res, args.out)
    payload = res.payload()

    def render(p: dict) -> None:
        a = p["analytic"]
        print(f"analytic start ({a['variance']} variance): {a['pairs']:.1f} independent pairs x design effect "
              f"{a['design_effect']:.4g} / {a['trials']} trials = {a['clusters_real']:.1f} -> K = {a['clusters']}")
        k, km1 = p["power_at_k"], p["power_at_k_minus_1"]
        print(f"chosen K = {p['clusters']} clusters ({p['trials_total']} trial pairs); binding: {p['binding_constraint']}")
        print(f"power at K   = {k['power']:.4f} (MC SE {k['mcse']:.4f}, CI {k['ci_lower']:.4f}..{k['ci_upper']:.4f}, "
              f"{k['n_reps']} reps)")
        if km1:
            print(f"power at K-1 = {km1['power']:.4f} (MC SE {km1['mcse']:.4f}, CI {km1['ci_lower']:.4f}.."
                  f"{km1['ci_upper']:.4f}, {km1['n_reps']} reps)")
        st = p["stretch"]
        print(f"power meets the target at K = {p['clusters']}" + (" (exact)" if k.get("exact") else
              f": CI lower bound >= {p['inputs']['power']} on every K of the verified stretch {st['from']}.."
              f"{st['to']} (lowest {st['min_power_bound']:.4f})"))
        if p["clusters"] != p["power_clusters"]:
            print(f"K raised from {p['power_clusters']} to {p['clusters']} by the false-pass constraint")
        fp = p["false_pass"]
        if fp.get("checked"):
            print(f"false-pass certificate at K={fp['clusters']} ({fp['engine']}, rho <= {fp['rho_max']:g}, "
                  f"{fp['n_scenarios']} nuisance points): {fp['verdict']}; worst case {fp['worst_case']}")
        print(f"power curve: {p['files']['curve']}, {p['files']['png']}" if p["files"] else
              "power curve not saved (--out '')")

    emit(args, payload, render)


def register(sub, bench_sub) -> None:
    p = sub.add_parser("size", help="clusters needed for a target power (simulation, analytic start)")
    p.add_argument("--method", required=True, help="registered method to size (see `simlab methods`)")
    p.add_argument("--margin", type=positive_float, required=True, help="non-inferiority margin m > 0")
    p.add_argument("--true-difference", type=finite_float, required=True, help="candidate - baseline under the alternative")
    p.add_argument("--power", type=_open_unit, default=0.8, help="target power (default %(default)s)")
    p.add_argument("--alpha", type=one_sided_alpha, default=0.025,
                   help="one-sided level (default %(default)s)")
    p.add_argument("--trials-per-cluster", type=DESIGN_TRIALS, default=1,
                   help="paired trials in each cluster (default %(default)s)")
    p.add_argument("--baseline", type=_open_unit, default=0.9,
                   help="baseline pass rate under the alternative (default %(default)s)")
    p.add_argument("--discordance", type=_discordance, default=None,
                   help="P(outcomes differ), in (0, 1] (default max(2|difference|, margin, 0.1))")
    p.add_argument("--rho", type=unit_open_top, default=0.0, help="intra-cluster correlation in [0, 1)")
    p.add_argument("--rho-max", type=unit_open_top, default=None,
                   help="largest rho of the false-pass certificate over the nuisance domain (default: --rho)")
    p.add_argument("--looks", type=int_between(1, 10_000), default=None,
                   help="sequential methods: number of equally spaced looks (at most 10,000)")
    p.add_argument("--seed", type=nonnegative_int, default=20261129,
                   help="random seed: the same seed gives the same replications (default %(default)s)")
    p.add_argument("--max-reps", type=int_at_least(2000), default=1 << 20,
                   help="replication cap of the root search (at least its first round, 2000)")
    p.add_argument("--out", default="simlab-out/sizing", help="where the power curve (.nc, .png) goes; '' for none")
    p.add_argument("--force", action="store_true",
                   help="replace the power curve's files in --out even when they are not files simlab wrote")
    p.add_argument("--n-jobs", type=n_jobs, default=1,
                   help="worker processes for the false-pass certificate's simulation (default %(default)s)")
    add_backend_arguments(p)
    add_max_seconds(p)
    add_json(p)
    p.set_defaults(func=run_size)
