"""``simlab certify``: certify a method at exactly one design (``studies.qualify.certify``)."""
from __future__ import annotations

import argparse

from simlab.cli._args import (add_design_arguments, add_json, check_and_say_time, check_design_ranges, check_methods,
                             check_time, deadline_of, finite_float, over_time, positive_int)
from simlab.cli._backend import add_backend_arguments
from simlab.cli._judge_args import add_label_noise_arguments, label_noise_options
from simlab.cli._output import UsageError, emit, log_to_stderr
from simlab.cli.study import check_folder


def signing_key(args: argparse.Namespace):
    if not args.sign_key:
        return None
    from simlab.cli.records import private_key
    return private_key(args.sign_key, "--sign-key")


def render_certificate(p: dict) -> None:
    w = p["worst"]
    print(f"{p['method']} at K={p['design']['clusters']}, M={p['design']['trials']}, margin={p['design']['margin']:g}, "
          f"rho <= {p['design']['rho_max']:g}: {p['verdict'].upper()} ({p['engine']}, {p['guarantee']})")
    bound = (f", proven bound over the range {p['proven_upper']:.5g}"
             if p["proven_upper"] is not None and p["verdict"] != "exceeds" else "")
    print(f"worst false-pass rate {w['rate']:.5g} (upper {w['upper']:.5g}{bound}) vs threshold "
          f"{p['threshold']:.4g} at baseline {w['baseline']:g}, discordance {w['discordance']:.5g}, rho {w['rho']:g}")
    domain = p["design"].get("label_noise_domain")
    if domain:
        judges = "one judge for both arms" if domain["calibration_shared"] else "each arm's judge"
        print(f"label noise: sensitivity {domain['sensitivity']}, specificity {domain['specificity']} ({judges}), "
              f"{domain['calibration_items']} calibration items "
              f"{'shared' if domain['calibration_shared'] else 'per arm'}; worst of the "
              f"{len(p['design']['label_noise'])} nodes searched (not proved between them) at judge "
              f"{w['noise']}: {p['design']['label_noise'][w['noise']]}")
    print(f"{p['points']} nuisance points, {p['seconds']:.1f} s; certificate {p['file']}"
          + (f", signed by {p['signed_by']}" if p["signed_by"] else ""))


def stream_options(args: argparse.Namespace) -> dict:
    """The threshold, replication and stream options given on the command line (the rest keep
    ``certify``'s defaults; a judge-labelled certificate derives its seed from its design)."""
    given = {"allowed_excess": args.allowed_excess, "max_replications": args.max_reps, "seed": args.seed}
    return {k: v for k, v in given.items() if v is not None}


def check_exact_design(args: argparse.Namespace, perfect_labels: bool) -> None:
    """``--engine exact`` at a design no exact engine takes is refused from the catalogue's kind,
    before the method loads (the method's own probe, which needs its kernel, comes later)."""
    from methods import info
    from studies.exact import design_blocker, exact_refusal

    if isinstance(args.method, str) and ":" not in args.method:
        why = design_blocker(info(args.method).kind, args.looks, perfect_labels, args.clusters, args.trials)
        if why is not None:
            raise UsageError(exact_refusal(args.method, why), "--engine")


def _bounds(field) -> tuple[float, float]:
    """``(low, high)`` of a pydantic field declared with ``ge`` / ``le``."""
    low = next((m.ge for m in field.metadata if getattr(m, "ge", None) is not None), float("-inf"))
    high = next((m.le for m in field.metadata if getattr(m, "le", None) is not None), float("inf"))
    return low, high


def check_stream_options(args: argparse.Namespace) -> None:
    """``--allowed-excess``, ``--max-reps`` and ``--seed`` checked against the qualification
    policy's own field ranges (``QualificationPolicy``: the model every certificate's policy is)
    before the method and the studies load (they were refused 1-2 s later, in pydantic's words
    or with no field).  ``--max-reps`` must reach the first replication stage, certify's
    ``min_replications`` (the policy's default; the command has no flag for it)."""
    if args.allowed_excess is None and args.max_reps is None and args.seed is None:
        return
    from methods.qualification import QualificationPolicy

    fields = QualificationPolicy.model_fields
    if args.allowed_excess is not None:
        low, high = _bounds(fields["allowed_excess"])
        if not low <= args.allowed_excess <= high:
            raise UsageError(f"--allowed-excess {args.allowed_excess:g} must lie in [{low:g}, {high:g}]: the threshold "
                             f"is allowed-excess x alpha (1 holds alpha itself, as calibrate does)", "--allowed-excess")
    if args.max_reps is not None:
        low, high = _bounds(fields["max_replications"])
        first = fields["min_replications"].default
        if not max(low, first) <= args.max_reps <= high:
            raise UsageError(f"--max-reps {args.max_reps:,} must lie in [{max(low, first):,}, {high:,}]: the largest "
                             f"replication stage per scenario, at least the first stage ({first:,} replications)",
                             "--max-reps")
    if args.seed is not None:
        low, high = _bounds(fields["seed"])
        if not low <= args.seed <= high:
            raise UsageError(f"--seed {args.seed} must lie in [{low}, {high}] (2^53 - 1: the certificate hashes it as "
                             "an exact JSON number)", "--seed")


def cmd_certify(args: argparse.Namespace) -> None:
    deadline = deadline_of(args)
    check_methods(args.method, "--method")  # from the catalogue: a typo answers before the studies load
    check_stream_options(args)
    check_design_ranges(args)
    judged = label_noise_options(args)
    if args.engine == "exact":
        check_exact_design(args, judged is None)
    from methods.qualification import records_dir
    from simlab.cli._backend import executor_from_args
    from studies.qualify import certificate_payload, certify, certify_estimate, write_certificate

    key = signing_key(args)
    check_folder(args.out or records_dir(), "--out")  # a file there is refused now, not after the certification
    say = log_to_stderr(args)
    with executor_from_args(args, args.n_jobs) as ex:
        if judged is not None:  # judge-labelled outcomes: studies.qualify.certify_judge
            from studies.qualify import certify_label_noise, certify_label_noise_estimate

            what = f"certifying {args.method} at K={args.clusters}, M={args.trials} over the judge's label noise"
            estimate = certify_label_noise_estimate(args.method, args.clusters, args.trials, args.margin,
                                                    args.rho_max, baseline=args.baseline,
                                                    discordance=args.discordance, workers=ex.workers, **judged,
                                                    **stream_options(args))
            check_time(args, estimate.low, what)
            say(f"{what}: estimated {estimate.describe()} on {ex.describe()}")
            cert = certify_label_noise(args.method, args.clusters, args.trials, args.margin, args.rho_max,
                                       baseline=args.baseline, discordance=args.discordance, executor=ex,
                                       sign_key=key, progress=say, **judged, **stream_options(args))
        else:
            from methods import get
            from studies.engine import design_preparation

            what = f"certifying {args.method} at K={args.clusters}, M={args.trials}"
            for cost in design_preparation(get(args.method), args.clusters, args.trials):  # before any pilot pays it
                check_and_say_time(args, cost.seconds, f"{what}: {cost.driver}", say)
            estimate = certify_estimate(args.method, args.clusters, args.trials, args.margin, args.rho_max,
                                        args.looks, baseline=args.baseline, discordance=args.discordance,
                                        engine=args.engine, workers=ex.workers, **stream_options(args))
            check_time(args, estimate.low, what)
            say(f"{what}: estimated {estimate.describe()} on {ex.describe()}")
            from studies.qualify import DeadlineReached

            try:
                cert = certify(args.method, args.clusters, args.trials, args.margin, args.rho_max, args.looks,
                               baseline=args.baseline, discordance=args.discordance, engine=args.engine, executor=ex,
                               sign_key=key, progress=say, deadline=deadline, **stream_options(args))
            except DeadlineReached as exc:
                raise over_time(exc, f"{what}:", "nothing was certified") from None
    path = write_certificate(cert, args.out or records_dir())
    emit(args, certificate_payload(cert, path), render_certificate)


def register(subparsers, bench_subparsers) -> None:
    p = subparsers.add_parser("certify", help="certify a method at exactly one design (worst case over the nuisance)")
    add_design_arguments(p)
    p.add_argument("--allowed-excess", type=finite_float, default=None,
                   help="threshold as a multiple of alpha: 1.1 as the grid records (default), 1 to hold alpha "
                        "itself as calibrate does")
    p.add_argument("--max-reps", type=positive_int, default=None,
                   help="the largest replication stage per scenario of the simulation engine (default 128000; a "
                        "least-favourable test, whose rates sit near its level, needs 2048000)")
    p.add_argument("--seed", type=positive_int, default=None,
                   help="the certification stream (default 20261129; a judge-labelled certificate derives its own "
                        "from its design): a stream no search for the method saw")
    p.add_argument("--engine", choices=("auto", "exact", "simulation"), default="auto",
                   help="exact where it applies (auto), exact only, or simulation (default %(default)s)")
    add_label_noise_arguments(p)
    add_backend_arguments(p)
    add_json(p)
    p.set_defaults(func=cmd_certify)
