"""``simlab power-bound``: the most power any test valid over a null grid can have at a design."""
from __future__ import annotations

import argparse

from simlab.cli._args import (add_json, add_max_memory, add_max_seconds, check_memory, check_time, checked,
                              float_at_least, int_at_least, nonnegative_int, positive_int)
from simlab.cli._output import UsageError, emit, log_to_stderr

_open_unit = checked(float, lambda v: 0.0 < v < 1.0, "in (0, 1)")
_unit = checked(float, lambda v: 0.0 < v <= 1.0, "in (0, 1]")

# Cost model (measured on 2 busy cores at 100 x 3, 300 x 3 and 30 x 3, the default grid): EMW's
# 600 iterations over the distinct importance-sampling draws (at most grid points x draws rows,
# two products with the grid each), then the fresh draws of the mixture and the alternative.
SECONDS_PER_ROW_POINT = 1.0e-9 * 1200
SECONDS_PER_CLUSTER_DRAW = 3.0e-8
BYTES_PER_ROW_POINT = 2 * 8


def run_power_bound(args: argparse.Namespace) -> None:
    if not args.margin < args.q_hi:
        raise UsageError(f"--q-hi {args.q_hi:g} must exceed --margin {args.margin:g} (the null grid spans "
                         "discordances [margin, q_hi])", "--q-hi")
    rho = args.rho_max if args.rho is None else args.rho
    if rho > args.rho_max:
        raise UsageError(f"--rho {rho:g} must be <= --rho-max {args.rho_max:g}", "--rho")
    rhos = 1 if (args.trials == 1 or args.rho_max == 0.0) else args.n_rho
    rows = args.n_q * rhos * args.draws
    check_memory(args, BYTES_PER_ROW_POINT * rows * args.n_q * rhos, "the least-favourable mixture's search")
    check_time(args, SECONDS_PER_ROW_POINT * rows * args.n_q * rhos
               + SECONDS_PER_CLUSTER_DRAW * args.clusters * (rows + 2 * args.replications), "the power bound")
    from studies.sizing import power_bound

    b = power_bound(args.clusters, args.trials, args.margin, args.rho_max, discordance=args.discordance,
                    alpha=args.alpha, rho=args.rho, q_hi=args.q_hi, n_q=args.n_q, n_rho=args.n_rho,
                    draws=args.draws, replications=args.replications, seed=args.seed,
                    progress=log_to_stderr(args))

    def render(p: dict) -> None:
        print(f"power ceiling at {p['clusters']} clusters x {p['trials']} trials, margin {p['margin']:g}, "
              f"true difference 0, discordance {p['discordance']:g}, rho {p['rho']:g}: {p['bound']:.4f}")
        print(f"  no test whose false-pass rate is <= {p['alpha']:g} at every one of the {p['grid_points']} null laws "
              f"(rho 0..{p['rho_max']:g}, discordance margin..{args.q_hi:g}) has more power there")
        print(f"  (Neyman-Pearson power against the mixture below {p['estimate']:.4f}, MC SE "
              f"{p['standard_error']:.4f}, plus 2 SE; {p['replications']:,} draws each; {p['seconds']:.1f} s)")
        for m in p["mixture"]:
            print(f"  least-favourable weight {m['weight']:.3f} at discordance {m['discordance']:.4g}, rho {m['rho']:g}")
        if p["tied"] >= DISCRETE_TIES:
            print(f"  the likelihood ratio is discrete here: {p['tied']:.4f} of the alternative's probability sits "
                  "on the critical value's own atom, of which the ceiling counts only what a level-alpha test can "
                  "reject (the randomised Neyman-Pearson test)")

    emit(args, b.as_dict(), render)


DISCRETE_TIES = 0.01   # the alternative's mass on the critical atom beyond which the text explains the ceiling


def register(sub, bench_sub) -> None:
    p = sub.add_parser("power-bound", help="the most power any test valid over a null grid can have at a design "
                                           "(Neyman-Pearson against a least-favourable mixture)")
    p.add_argument("--clusters", type=positive_int, required=True, help="K, independent clusters")
    p.add_argument("--trials", type=positive_int, default=1, help="M, trials (pairs) per cluster (default %(default)s)")
    p.add_argument("--margin", type=_open_unit, required=True, help="non-inferiority margin, in (0, 1)")
    p.add_argument("--rho-max", type=checked(float, lambda v: 0.0 <= v < 1.0, "in [0, 1)"), default=0.1,
                   help="largest intra-cluster correlation of the null grid (default %(default)s)")
    p.add_argument("--discordance", type=_unit, default=None,
                   help="discordance of the alternative (true difference 0), in (0, 1] (default: the margin)")
    p.add_argument("--rho", type=float_at_least(0.0), default=None,
                   help="intra-cluster correlation of the alternative (default: --rho-max)")
    p.add_argument("--alpha", type=checked(float, lambda v: 0.0 < v < 0.5, "in (0, 0.5)"), default=0.025,
                   help="one-sided level every null law of the grid is held to (default %(default)s)")
    p.add_argument("--q-hi", type=_unit, default=0.5, help="largest discordance of the null grid (default %(default)s)")
    p.add_argument("--n-q", type=int_at_least(1), default=30,
                   help="discordances of the null grid, dense near the margin (default %(default)s)")
    p.add_argument("--n-rho", type=int_at_least(1), default=3,
                   help="rho values of the null grid, 0..rho-max (default %(default)s)")
    p.add_argument("--draws", type=int_at_least(10), default=4000,
                   help="importance-sampling draws per null law for the mixture's search (default %(default)s)")
    p.add_argument("--replications", type=int_at_least(1000), default=400_000,
                   help="fresh draws for the critical value and for the power (default %(default)s)")
    p.add_argument("--seed", type=nonnegative_int, default=20261206, help="random seed (default %(default)s)")
    add_max_memory(p)
    add_max_seconds(p)
    add_json(p)
    p.set_defaults(func=run_power_bound)
