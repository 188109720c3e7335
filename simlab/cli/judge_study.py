"""``simlab judge-study``: false-pass rate and power of the judge-corrected method against the
naive paired methods under judge label noise, for calibration sets of several sizes
(``studies.judge``); writes a netCDF dataset and a PNG plot."""
from __future__ import annotations

import argparse
import math

from simlab.cli._args import add_json, int_between, add_max_seconds, check_methods, check_time, checked, finite_float, nonnegative_int, positive_int
from simlab.cli._output import UsageError, emit, log_to_stderr, print_table

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


# the spec's fields the flags fill, where the names differ
_FLAG_OF_FIELD = {"calibration_items": "--items", "shared_calibration": "--shared", "replications": "--reps",
                  "judges": "--judge"}


def _spec(model, fields: dict):
    """The spec, or its first error as the flag's (``calibration_items[0]`` was reported as
    ``calibration_items``, not ``--items``)."""
    from pydantic import ValidationError

    try:
        return model.model_validate(fields)
    except ValidationError as exc:
        err = exc.errors(include_url=False)[0]
        loc = [str(p) for p in err.get("loc", ())]
        msg = str(err.get("msg", "invalid value")).removeprefix("Value error, ")
        if not loc:  # a check across fields (every scenario of the grid is built): its message says which
            if msg.startswith("calibration.shared: "):
                raise UsageError(f"--shared: {msg.removeprefix('calibration.shared: ')}", "--shared") from None
            flag = "--differences" if "difference=" in msg else None
            raise UsageError(msg, flag) from None
        flag = _FLAG_OF_FIELD.get(loc[0], "--" + loc[0].replace("_", "-"))
        where = ".".join(loc[1:])
        raise UsageError(f"{flag}{f' ({where})' if where else ''}: {msg}", flag) from None


def run_judge_study(args: argparse.Namespace) -> None:
    if args.methods:
        check_methods(args.methods, "--methods", "fixed")  # before the studies load: a typo answers at once
    import os

    if os.path.exists(args.out_dir) and not os.path.isdir(args.out_dir):  # was found after the study's work
        raise UsageError(f"--out-dir {args.out_dir} exists and is not a directory", "--out-dir")
    from simlab.cli.study import check_plot_out, refuse_foreign_file
    from studies import JudgeStudySpec, judge_study, judge_study_estimate, judge_study_paths

    fields = {"methods": args.methods, "calibration_items": args.items, "shared_calibration": args.shared,
              "clusters": args.clusters, "trials": args.trials, "rho": args.rho, "baseline": args.baseline,
              "discordance": args.discordance, "margin": args.margin, "alpha": args.alpha,
              "replications": args.reps, "seed": args.seed, "judges": args.judge or None,
              "differences": args.differences}
    spec = _spec(JudgeStudySpec, {k: v for k, v in fields.items() if v is not None})
    nc, png = judge_study_paths(spec, args.out_dir)   # a user's file of these names is not replaced unasked
    refuse_foreign_file(nc, "--out-dir", args.force, kind="judge")
    check_plot_out(png, "--out-dir", args.force)
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
                   help="one calibration set for both arms (needs judges with the same error on both; the "
                        "default judges are then 'equal' alone)")
    p.add_argument("--judge", type=_judge, action="append", default=[], metavar="NAME=Se_b,Sp_b,Se_c,Sp_c",
                   help="a judge model (repeatable; default: 'equal' 0.9,0.85,0.9,0.85 and 'lenient_candidate' "
                        "0.9,0.85,0.95,0.7)")
    p.add_argument("--differences", type=_floats, default=None,
                   help="comma-separated true differences (default: -margin and 0)")
    p.add_argument("--clusters", type=int_between(2, 100_000), default=None,
                   help="independent clusters K, 2 to 100,000 (default 200)")
    p.add_argument("--trials", type=int_between(1, 10_000), default=None,
                   help="trial pairs per cluster, at most 10,000 (default 5)")
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
    p.add_argument("--force", action="store_true",
                   help="replace the dataset and plot in --out-dir even when they are not files simlab wrote")
    add_max_seconds(p)
    add_json(p)
    p.set_defaults(func=run_judge_study)

