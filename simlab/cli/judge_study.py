"""``simlab judge-study``: false-pass rate and power of the judge-corrected method against the
naive paired methods under judge label noise, for calibration sets of several sizes
(``studies.judge``); writes a netCDF dataset and a PNG plot."""
from __future__ import annotations

import argparse
import math

from simlab.cli._args import DESIGN_TRIALS, SCENARIO_CLUSTERS, add_json, add_max_seconds, check_methods, check_time, checked, finite_float, nonnegative_int, positive_int
from simlab.cli._output import emit, log_to_stderr, print_table

DEFAULT_OUT_DIR = "judge-study"


def _items(text: str) -> tuple[int, ...]:
    try:
        return tuple(int(x) for x in text.split(",") if x.strip())
    except ValueError:
        raise argparse.ArgumentTypeError(f"must be integers separated by commas, got {text!r}") from None


def _floats(text: str) -> tuple[float, ...]:
    try:
        v = tuple(float(x) for x in text.split(",") if x.strip())
    except ValueError:
        v = ()
    if not v or not all(math.isfinite(x) for x in v):
        raise argparse.ArgumentTypeError(f"must be finite numbers separated by commas, got {text!r}")
    return v


def _names(text: str) -> tuple[str, ...]:
    return tuple(x.strip() for x in text.split(",") if x.strip())


def _judge(text: str) -> dict:
    """``NAME=Se_b,Sp_b,Se_c,Sp_c``."""
    name, _, values = text.partition("=")
    try:
        v = [float(x) for x in values.split(",")]
    except ValueError:
        v = []
    if not name or len(v) != 4 or not all(math.isfinite(x) for x in v):
        raise argparse.ArgumentTypeError("must be NAME=Se_b,Sp_b,Se_c,Sp_c (baseline sensitivity, specificity, "
                                         f"candidate sensitivity, specificity), got {text!r}")
    keys = ("baseline_sensitivity", "baseline_specificity", "candidate_sensitivity", "candidate_specificity")
    return {"name": name, **dict(zip(keys, v))}


def run_judge_study(args: argparse.Namespace) -> None:
    if args.methods:
        check_methods(args.methods, "--methods", "fixed")  # before the studies load: a typo answers at once
    from studies import JudgeStudySpec, judge_study, judge_study_estimate

    fields = {"methods": args.methods, "calibration_items": args.items, "shared_calibration": args.shared,
              "clusters": args.clusters, "trials": args.trials, "rho": args.rho, "baseline": args.baseline,
              "discordance": args.discordance, "margin": args.margin, "alpha": args.alpha,
              "replications": args.reps, "seed": args.seed, "judges": args.judge or None,
              "differences": args.differences}
    spec = JudgeStudySpec.model_validate({k: v for k, v in fields.items() if v is not None})
    say = log_to_stderr(args)
    total = len(spec.judges) * len(spec.calibration_items) * len(spec.difference_grid)
    what = f"judge study: {total} scenarios x {spec.replications:,} replications x {len(spec.methods)} methods"
    estimate = judge_study_estimate(spec)
    check_time(args, estimate.low, what)
    say(f"{what}: estimated {estimate.describe()}")
    done = {"n": 0}

    def progress(n: int) -> None:
        done["n"] += 1
        say(f"scenario {done['n']}/{total} done")

    payload = judge_study(spec, args.out_dir, progress)

    def render(p: dict) -> None:
        rows = [[r["judge"], r["calibration_items"], f"{r['difference']:g}", r["method"],
                 "false pass" if r["is_null"] else "power", f"{r['pass_rate']:.4f}±{r['pass_rate_mcse']:.4f}",
                 f"[{r['pass_rate_cp_lower']:.4f}, {r['pass_rate_cp_upper']:.4f}]", f"{r['inconclusive_rate']:.3f}",
                 "-" if not math.isfinite(r["coverage"]) else f"{r['coverage']:.3f}", f"{r['observed_difference']:.4f}"]
                for r in p["rows"]]
        print_table(f"judge-labelled outcomes (margin {p['margin']:g}, alpha {p['alpha']:g}, "
                    f"{p['replications']:,} replications per scenario)",
                    ["judge", "items", "true diff", "method", "measure", "pass rate ± MC SE", "95% CP",
                     "inconcl.", "coverage", "judge diff"], rows)
        print(f"wrote {p['dataset']} and {p['plot']} ({p['seconds']:.1f} s)")

    emit(args, payload, render)


def register(sub, bench_sub) -> None:
    p = sub.add_parser("judge-study", help="judge-corrected vs naive methods under judge label noise, by calibration "
                                           "set size (dataset + plot)")
    p.add_argument("--methods", type=_names, default=None,
                   help="comma-separated methods (default judge_corrected,cluster_robust,paired_wald)")
    p.add_argument("--items", type=_items, default=None,
                   help="comma-separated calibration-set sizes, items per set (default 50,200,1000)")
    p.add_argument("--shared", action="store_true", default=None,
                   help="one calibration set for both arms (needs judges with the same error on both)")
    p.add_argument("--judge", type=_judge, action="append", default=[], metavar="NAME=Se_b,Sp_b,Se_c,Sp_c",
                   help="a judge model (repeatable; default: 'equal' 0.9,0.85,0.9,0.85 and 'lenient_candidate' "
                        "0.9,0.85,0.95,0.7)")
    p.add_argument("--differences", type=_floats, default=None,
                   help="comma-separated true differences (default: -margin and 0)")
    p.add_argument("--clusters", type=SCENARIO_CLUSTERS, default=None, help="independent clusters K (default 200)")
    p.add_argument("--trials", type=DESIGN_TRIALS, default=None, help="trial pairs per cluster (default 5)")
    p.add_argument("--rho", type=checked(float, lambda v: 0 <= v < 1, "in [0, 1)"), default=None,
                   help="intra-cluster correlation (default 0.1)")
    p.add_argument("--baseline", type=finite_float, default=None, help="baseline true pass rate (default 0.8)")
    p.add_argument("--discordance", type=finite_float, default=None,
                   help="P(the two arms' true outcomes differ) (default 0.2)")
    p.add_argument("--margin", type=finite_float, default=None, help="non-inferiority margin (default 0.05)")
    p.add_argument("--alpha", type=finite_float, default=None, help="one-sided level (default 0.025)")
    p.add_argument("--reps", type=positive_int, default=None, help="replications per scenario (default 2000)")
    p.add_argument("--seed", type=nonnegative_int, default=None, help="seed of the counter-based streams")
    p.add_argument("--out-dir", default=DEFAULT_OUT_DIR,
                   help="folder for the dataset and plot (default ./%(default)s; not results/)")
    add_max_seconds(p)
    add_json(p)
    p.set_defaults(func=run_judge_study)

