"""``simlab recommend``: the methods covered at a design, ranked by power (``studies.recommend``)."""
from __future__ import annotations

import argparse
import math

from simlab.cli._args import add_json, checked, finite_float, int_at_least, nonnegative_int, positive_int

_open_unit = checked(float, lambda v: 0.0 < v < 1.0, "in (0, 1)")
_unit_interval_open_top = checked(float, lambda v: 0.0 <= v < 1.0, "in [0, 1)")
_discordance = checked(float, lambda v: 0.0 < v <= 1.0, "in (0, 1]")


def _num(x, fmt: str = ".4f") -> str:
    return "-" if x is None or (isinstance(x, float) and not math.isfinite(x)) else format(x, fmt)


def render_recommendation(p: dict) -> None:
    """The readable table (also used by ``simlab demo``)."""
    from simlab.cli._output import print_table

    d, a = p["design"], p["alternative"]
    print(f"design: K={d['clusters']} clusters x {d['trials_per_cluster']} trials, margin {d['margin']:g}, "
          f"rho <= {d['rho_max']:g}, one-sided alpha {d['alpha']:g}; alternative: difference {a['difference']:g}, "
          f"baseline {a['baseline']:g}, discordance {a['discordance']:g}, rho {a['rho']:g}")
    rows = []
    for r in p["ranked"]:
        fp, pw, sz = r["false_pass"] or {}, r["power"], r.get("size") or {}
        power = _num(pw["value"]) + (" (exact)" if pw["exact"] else f"±{pw['mc_se']:.4f}")
        where = f"b={fp['baseline']:g} q={fp['discordance']:g} rho={fp['rho']:g}" if fp else "-"
        k = sz.get("clusters")
        k_txt = "-" if not sz else ("refused" if "refused" in sz else
                                    f"{k} ({_num(sz['power_at_k'])})" + ("" if sz["false_pass_checked"] else " *"))
        rows.append([r["rank"], r["method"], r["estimand"], power, _num(fp.get("upper")), _num(fp.get("rate")),
                     where, k_txt, r["record"]])
    print_table(f"covered methods ranked by power at the alternative (target {a['target_power']:g})",
                ["rank", "method", "estimand", "power", "FP upper", "FP rate", "worst case", "K for power",
                 "record"], rows)
    if any((r.get("size") or {}).get("false_pass_checked") is False for r in p["ranked"]):
        print("* K for the target power; its false-pass check over the nuisance domain: `simlab size`")
    for r in p["ranked"]:
        if "refused" in (r.get("size") or {}):
            print(f"{r['method']}: sizing refused: {r['size']['refused']}")
    if p["not_covered"]:
        print(f"not covered at this design ({len(p['not_covered'])}): " +
              "; ".join(f"{r['method']}: {r['coverage']}" for r in p["not_covered"][:6]) +
              (" ..." if len(p["not_covered"]) > 6 else ""))


def cmd_recommend(args: argparse.Namespace) -> None:
    from simlab.cli._output import emit, log_to_stderr
    from studies import recommend

    progress = log_to_stderr(args)
    kw = {} if args.directory is None else {"directory": args.directory}
    payload = recommend(clusters=args.clusters, trials=args.trials, margin=args.margin, rho_max=args.rho_max,
                        difference=args.true_difference, power=args.power, alpha=args.alpha, baseline=args.baseline,
                        discordance=args.discordance, top=args.top, seed=args.seed,
                        check_false_pass=args.check_false_pass, progress=progress, **kw)
    emit(args, payload, render_recommendation)


def register(subparsers, bench_subparsers) -> None:
    p = subparsers.add_parser("recommend", help="methods covered at a design, ranked by power; K for the target power")
    p.add_argument("--clusters", type=int_at_least(2), required=True, help="independent clusters K")
    p.add_argument("--trials", type=positive_int, required=True, help="trial pairs per cluster M")
    p.add_argument("--margin", type=_open_unit, required=True, help="non-inferiority margin in (0, 1)")
    p.add_argument("--rho-max", type=_unit_interval_open_top, required=True,
                   help="largest intra-cluster correlation to guard against, in [0, 1)")
    p.add_argument("--true-difference", type=finite_float, default=0.0,
                   help="alternative: candidate - baseline (default 0)")
    p.add_argument("--power", type=_open_unit, default=0.8, help="target power (default %(default)s)")
    p.add_argument("--alpha", type=_open_unit, default=0.025, help="one-sided level (default %(default)s)")
    p.add_argument("--baseline", type=_open_unit, default=0.9)
    p.add_argument("--discordance", type=_discordance, default=None,
                   help="P(outcomes differ) under the alternative (default max(2|difference|, margin, 0.1))")
    p.add_argument("--top", type=nonnegative_int, default=3, help="methods sized for the target power (default %(default)s)")
    p.add_argument("--check-false-pass", action="store_true",
                   help="also check the false-pass rate over the nuisance domain at each sized K (slow)")
    p.add_argument("--directory", default=None, help="qualification records (default: results/qualification)")
    p.add_argument("--seed", type=nonnegative_int, default=20261129)
    add_json(p)
    p.set_defaults(func=cmd_recommend)
