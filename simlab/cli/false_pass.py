"""``simlab false-pass``: pass probability of one method on one scenario (exact when possible)."""
from __future__ import annotations

import argparse

from simlab.cli._args import (
    add_max_seconds,
    check_and_say_time,
    first_use_compiles,
    check_time,
    add_device_option,
    on_selected_device,
    add_json,
    add_scenario_args,
    check_device,
    check_methods,
    finite_float,
    nonnegative_int,
    parse_options,
    positive_float,
    positive_int,
    scenario_from_args,
)
from simlab.cli._output import UsageError, emit, log_to_stderr

DEFAULT_REPS = 200_000
DEFAULT_EXACT_SECONDS = 60.0
DEFAULT_SEED = 20261129


def run_false_pass(args: argparse.Namespace) -> None:
    if args.simulate and args.exact_seconds is not None:
        raise UsageError("--exact-seconds bounds the exact evaluation, which --simulate skips; give one of them",
                         "--exact-seconds")
    options = parse_options(args.option)
    check_methods(args.method, "--method", "fixed", options)
    check_device(args, [args.method])
    scenario = scenario_from_args(args)

    from methods import MethodRef
    from studies.engine import false_pass

    ref = MethodRef(name=args.method, options=options)
    reps = args.reps or DEFAULT_REPS
    say = log_to_stderr(args)

    def before_simulating(seconds: float) -> None:
        check_and_say_time(args, seconds, f"simulating {reps:,} replications of {ref.key}", say)

    def before_preparing(seconds: float, what: str) -> None:
        check_and_say_time(args, seconds, f"the first replication of {ref.key} ({what})", say)

    with first_use_compiles([ref.resolve()], say):
        payload = false_pass(scenario, ref, args.margin, args.alpha, reps,
                             DEFAULT_SEED if args.seed is None else args.seed,
                             exact="never" if args.simulate else "auto",
                             max_exact_seconds=DEFAULT_EXACT_SECONDS if args.exact_seconds is None else args.exact_seconds,
                             before_simulating=before_simulating, before_preparing=before_preparing, progress=True)
    unused = [f for f, v in (("--reps", args.reps), ("--seed", args.seed)) if v is not None]
    if getattr(args, "device", "cpu") == "gpu":   # the exact engines run on the CPU
        unused.append("--device gpu")
    payload["notes"] = ([f"{' and '.join(unused)} not used: the exact engine applies (add --simulate to simulate)"]
                        if payload["exact"] and unused else [])

    def render(p: dict) -> None:
        what = "false-pass rate" if p["is_null"] else "pass rate (power: the scenario is not a null)"
        how = (f"exact ({p['engine']} engine, {p['states']:,} states)" if p["exact"]
               else f"simulated, {p['replications']:,} replications, MC SE {p['mc_se']:.2g}, "
                    f"95% CP [{p['cp_lower']:.5f}, {p['cp_upper']:.5f}]")
        print(f"{p['method']} ({p['estimand']}; true value {p['true_value']:.5g}, margin {p['margin']:g}, "
              f"alpha {p['alpha']:g})")
        print(f"{what}: {p['value']:.5f}   {how}")
        if not p["exact"]:
            print(f"not exact: {p['why_not_exact']}")
        for note in p["notes"]:
            print(note)

    emit(args, payload, render)


def register(sub, bench_sub) -> None:
    p = sub.add_parser("false-pass", help="pass probability of one method on one scenario (exact when possible)")
    p.add_argument("--method", required=True, help="registered fixed-sample method")
    p.add_argument("--option", action="append", default=[], metavar="key=value", help="method option (repeatable)")
    add_scenario_args(p, clusters=30, trials=1, rho=0.0, cells="0.96,0.04,0,0")
    p.add_argument("--margin", type=finite_float, default=0.03, help="non-inferiority margin (default %(default)s)")
    p.add_argument("--alpha", type=finite_float, default=0.025, help="one-sided level (default %(default)s)")
    p.add_argument("--reps", type=positive_int, default=None,
                   help=f"replications when simulating (default {DEFAULT_REPS})")
    p.add_argument("--seed", type=nonnegative_int, default=None, help=f"when simulating (default {DEFAULT_SEED})")
    p.add_argument("--simulate", action="store_true", help="simulate even when an exact engine applies")
    p.add_argument("--exact-seconds", type=positive_float, default=None,
                   help="simulate instead when the exact evaluation's declared cost (its states times the method's "
                        f"declared cost of a table: the same on every machine) is over this (default "
                        f"{DEFAULT_EXACT_SECONDS:g})")
    add_max_seconds(p)
    add_device_option(p)
    add_json(p)
    p.set_defaults(func=on_selected_device(run_false_pass))
