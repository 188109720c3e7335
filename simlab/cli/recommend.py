"""``simlab recommend``: the methods covered at a design, ranked by power (``studies.recommend``)."""
from __future__ import annotations

import argparse
import math

from simlab.cli._args import (DESIGN_CLUSTERS, DESIGN_TRIALS, add_json, check_power, checked, finite_float, n_jobs,
                              nonnegative_int, one_sided_alpha, positive_float)

_open_unit = checked(float, lambda v: 0.0 < v < 1.0, "in (0, 1)")
_unit_interval_open_top = checked(float, lambda v: 0.0 <= v < 1.0, "in [0, 1)")
_discordance = checked(float, lambda v: 0.0 < v <= 1.0, "in (0, 1]")


def _num(x, fmt: str = ".4f") -> str:
    return "-" if x is None or (isinstance(x, float) and not math.isfinite(x)) else format(x, fmt)


WHY_WIDTH = 80   # the reference table's 'why' column: whole lines of words, never a word cut ("calibrat")


def _wrap(text: str, width: int = WHY_WIDTH) -> str:
    """``text`` on lines of at most ``width`` characters, broken between words only (a hyphenated
    word or a longer command argument stays whole); the table shows every line."""
    import textwrap

    return "\n".join(textwrap.wrap(text, width, break_long_words=False, break_on_hyphens=False)) or text


def _print_reference(reference: list[dict]) -> None:
    """The uncovered methods' table, its 'why' left-aligned and wrapped between words (rich wraps a
    narrower terminal's cells between words too)."""
    from rich.console import Console
    from rich.table import Table

    table = Table(title="for reference, methods that may NOT decide here (uncovered), by power")
    table.add_column("method")
    table.add_column("power", justify="right")
    table.add_column("why", overflow="fold")   # fold only a single word wider than the column
    for r in reference:
        table.add_row(r["method"], _num(r["power"]["value"]), _wrap(r["coverage"]))
    console = Console()
    if not console.is_terminal:  # piped or captured: as print_table, the full width
        console = Console(width=240)
    console.print(table)


def render_recommendation(p: dict) -> None:
    """The readable table (also used by ``simlab demo``)."""
    from simlab.cli._output import print_table

    d, a, f = p["design"], p["alternative"], p["distribution_free_floor"]
    print(f"design: K={d['clusters']} clusters x {d['trials_per_cluster']} trials, margin {d['margin']:g}, "
          f"rho <= {d['rho_max']:g}, one-sided alpha {d['alpha']:g}; alternative: difference {a['difference']:g}, "
          f"baseline {a['baseline']:g}, discordance {a['discordance']:g}, rho {a['rho']:g}")
    print(f"distribution-free floor: K >= {f['clusters']} ((1 - margin)^K <= alpha) before any method valid for every "
          f"law of cluster differences can pass an all-ties sample; this design is "
          f"{'above' if f['reached'] else 'BELOW'} it")
    rows = []
    for r in p["ranked"]:
        fp, pw, sz = r["false_pass"] or {}, r["power"], r.get("size") or {}
        power = _num(pw["value"]) + (" (exact)" if pw["exact"] else f"±{pw['mc_se']:.4f}")
        if not pw["exact"] and pw["n_reps"] < p.get("power_reps", 0):   # cut to the budget
            power += f" (n={pw['n_reps']:,})"
        where = f"b={fp['baseline']:g} q={fp['discordance']:.3g} rho={fp['rho']:g}" if "baseline" in fp else "-"
        k = sz.get("clusters")
        k_txt = "-" if not k else f"{k} ({_num(sz['power_at_k'])})"
        if "refused" in sz:
            k_txt = "refused"
        rows.append([r["rank"], r["method"], r["guarantee"], power, _num(fp.get("upper")), _num(fp.get("rate")),
                     where, k_txt, r["record"] + (f" ({r['made']})" if r["made"] else "")])
    print_table(f"methods that may decide here, ranked by power at the alternative (target {a['target_power']:g})",
                ["rank", "method", "guarantee", "power", "FP upper", "FP rate", "worst case", "K for power",
                 "source"], rows)
    if any((r.get("size") or {}).get("clusters") for r in p["ranked"]):
        print("K for power: the target power without a false-pass check at that K (`simlab size` adds it); theorem "
              "methods are valid there anyway")
    for r in p["ranked"]:
        if "statistical_method" in r and r["statistical_method"] is None:
            print(f"{r['method']}: calibrated with options other than the registered method's; no manifest name "
                  "finds it, so the evidence path cannot run it")
        if "refused" in (r.get("size") or {}):
            print(f"{r['method']}: sizing refused: {r['size']['refused']}")
    if p["reference"]:
        _print_reference(p["reference"])
    for s in p["skipped"]:
        print(f"skipped {s['what']} of {s['method']}: {s['why']}")
    if p["not_covered"]:
        print(f"not covered at this design ({len(p['not_covered'])}): " +
              "; ".join(f"{r['method']}: {r['coverage']}" for r in p["not_covered"][:4]) +
              (" ..." if len(p["not_covered"]) > 4 else ""))


def cmd_recommend(args: argparse.Namespace) -> None:
    from simlab.cli._output import UsageError, emit, log_to_stderr

    check_power(args)
    if args.true_difference <= -args.margin:  # checked before the studies load (an input error answers at once)
        raise UsageError(f"--true-difference {args.true_difference:g} must exceed -margin ({-args.margin:g}): power "
                         "is only defined under the alternative", "--true-difference")
    import os

    if args.directory is not None and not os.path.isdir(args.directory):  # it was read as an empty set of records
        raise UsageError(f"--directory {args.directory}: no such directory of qualification records", "--directory")
    if args.certify_dir is not None and os.path.exists(args.certify_dir) and not os.path.isdir(args.certify_dir):
        raise UsageError(f"--certify-dir {args.certify_dir} is not a directory", "--certify-dir")
    from studies import recommend

    payload = recommend(clusters=args.clusters, trials=args.trials, margin=args.margin, rho_max=args.rho_max,
                        difference=args.true_difference, power=args.power, alpha=args.alpha, baseline=args.baseline,
                        discordance=args.discordance, top=args.top, seed=args.seed, directory=args.directory,
                        certify_dir=args.certify_dir, certify_missing=not args.no_certify,
                        calibrate_missing=not args.no_calibrate,
                        max_seconds=args.max_seconds, n_jobs=args.n_jobs, progress=log_to_stderr(args))
    emit(args, payload, render_recommendation)


def register(subparsers, bench_subparsers) -> None:
    p = subparsers.add_parser("recommend", help="methods covered at a design, ranked by power; K for the target power")
    p.add_argument("--clusters", type=DESIGN_CLUSTERS, required=True, help="independent clusters K")
    p.add_argument("--trials", type=DESIGN_TRIALS, required=True, help="trial pairs per cluster M")
    p.add_argument("--margin", type=_open_unit, required=True, help="non-inferiority margin in (0, 1)")
    p.add_argument("--rho-max", type=_unit_interval_open_top, required=True,
                   help="largest intra-cluster correlation to guard against, in [0, 1)")
    p.add_argument("--true-difference", type=finite_float, default=0.0,
                   help="alternative: candidate - baseline (default 0)")
    p.add_argument("--power", type=_open_unit, default=0.8, help="target power (default %(default)s)")
    p.add_argument("--alpha", type=one_sided_alpha, default=0.025, help="one-sided level (default %(default)s)")
    p.add_argument("--baseline", type=_open_unit, default=0.9,
                   help="baseline pass rate of the power scenario (default %(default)s)")
    p.add_argument("--discordance", type=_discordance, default=None,
                   help="P(outcomes differ) under the alternative (default max(2|difference|, margin, 0.1))")
    p.add_argument("--top", type=nonnegative_int, default=3,
                   help="methods valid at every K that are sized for the target power; 0 sizes none and only "
                        "ranks validity (default %(default)s)")
    p.add_argument("--directory", default=None,
                   help="qualification records (default: $SIMLAB_RECORDS or the checkout's results/qualification)")
    p.add_argument("--certify-dir", default=None,
                   help="where certificates and calibrations made on demand are written and looked up (default: the "
                        "records directory)")
    p.add_argument("--no-certify", action="store_true", help="do not certify uncovered methods at this design")
    p.add_argument("--no-calibrate", action="store_true",
                   help="do not calibrate the score tests at this design (stored calibrations are still used)")
    p.add_argument("--max-seconds", type=positive_float, default=60.0,
                   help="time budget for certificates, calibrations, powers and sizing made on demand: work beyond "
                        "it is listed as skipped, and the ranked methods' powers use fewer tables (their standard "
                        "errors say so); the check of the stored files comes first (default %(default)s)")
    p.add_argument("--n-jobs", type=n_jobs, default=1, help="worker processes for on-demand certification (default 1)")
    p.add_argument("--seed", type=nonnegative_int, default=20261129,
                   help="random seed: the same seed gives the same replications (default %(default)s)")
    add_json(p)
    p.set_defaults(func=cmd_recommend)
