"""``simlab calibrate``: the largest nominal level at which a method's worst-case false-pass
rate at one design is at most alpha, certified on a stream the search never saw
(``studies.qualify.calibrate``)."""
from __future__ import annotations

import argparse

from simlab.cli._args import (add_design_arguments, add_json, check_and_say_time, check_design_ranges, check_methods,
                             check_time, deadline_of, finite_float, over_time, positive_int)
from simlab.cli._backend import add_backend_arguments
from simlab.cli._judge_args import add_label_noise_arguments, label_noise_options
from simlab.cli._output import UsageError, emit, log_to_stderr
from simlab.cli.study import check_folder


def refusal(exc: ValueError, args: argparse.Namespace) -> UsageError | None:
    """The calibration's own refusal ("refused: even at nominal level ... the worst case is not
    below alpha", and the like) as the ``--method`` field's error: the method cannot be
    calibrated at this design (the field was null).  Whether it can is what the calibration
    computes, so this answer comes after its search, not from the catalogue (a method whose
    ``calibration`` is None is calibrated by searching its levels)."""
    text = " ".join(str(exc).split())
    if not text.startswith("refused: "):
        return None
    return UsageError(f"--method {args.method} cannot be calibrated at this design (K={args.clusters}, "
                      f"M={args.trials}, margin {args.margin:g}, rho <= {args.rho_max:g}): "
                      f"{text.removeprefix('refused: ')}", "--method")


def cmd_calibrate(args: argparse.Namespace) -> None:
    deadline = deadline_of(args)
    check_methods(args.method, "--method")  # from the catalogue: a typo answers before the studies load
    check_design_ranges(args)
    from methods.qualification import records_dir
    from simlab.cli._backend import executor_from_args
    from simlab.cli.certify import render_certificate, signing_key
    from studies.qualify import calibrate, certificate_payload, write_certificate

    if args.target is not None and not 0.0 < args.target <= args.alpha:  # was refused after the estimate
        raise UsageError(f"--target {args.target:g} must lie in (0, --alpha] = (0, {args.alpha:g}]", "--target")
    judged = label_noise_options(args)
    check_folder(args.out or records_dir(), "--out")  # a file there is refused now, not after the calibration
    say = log_to_stderr(args)
    with executor_from_args(args, args.n_jobs) as ex:
        if judged is not None:  # judge-labelled outcomes: studies.qualify.certify_judge
            from studies.qualify import calibrate_label_noise, certify_label_noise_estimate

            # its floor: the certificate over every judge node at the level found (the search comes on top)
            floor = certify_label_noise_estimate(args.method, args.clusters, args.trials, args.margin, args.rho_max,
                                                 alpha=args.alpha, baseline=args.baseline,
                                                 discordance=args.discordance, workers=ex.workers, **judged)
            what = f"calibrating {args.method} at K={args.clusters}, M={args.trials} over the judge's label noise"
            check_time(args, floor.low, what)
            say(f"{what}: its certificate alone estimated {floor.describe()} on {ex.describe()}; the level search "
                "comes on top")
            try:
                cal = calibrate_label_noise(args.method, args.clusters, args.trials, args.margin, args.rho_max,
                                            alpha=args.alpha, target=args.target, baseline=args.baseline,
                                            discordance=args.discordance, search_replications=args.search_reps,
                                            executor=ex, sign_key=signing_key(args), progress=say, **judged)
            except ValueError as exc:
                raise refusal(exc, args) or exc from None
        else:
            from methods import get
            from studies.engine import design_preparation
            from studies.qualify import calibrate_estimate

            what = f"calibrating {args.method} at K={args.clusters}, M={args.trials}"
            for cost in design_preparation(get(args.method), args.clusters, args.trials):  # before its pilot pays it
                check_and_say_time(args, cost.seconds, f"{what}: {cost.driver}", say)
            estimate = calibrate_estimate(args.method, args.clusters, args.trials, args.margin, args.rho_max,
                                          args.looks, search_replications=args.search_reps, baseline=args.baseline,
                                          discordance=args.discordance, alpha=args.alpha, workers=ex.workers)
            check_time(args, estimate.low, what)
            say(f"{what}: estimated {estimate.describe()} on {ex.describe()}")
            from studies.qualify import DeadlineReached

            try:
                cal = calibrate(args.method, args.clusters, args.trials, args.margin, args.rho_max, args.looks,
                                alpha=args.alpha, target=args.target, baseline=args.baseline,
                                discordance=args.discordance, search_replications=args.search_reps, executor=ex,
                                sign_key=signing_key(args), progress=say, deadline=deadline)
            except DeadlineReached as exc:
                raise over_time(exc, f"{what}: its certificate", "nothing was calibrated") from None
            except ValueError as exc:
                raise refusal(exc, args) or exc from None
    path = write_certificate(cal.certificate, args.out or records_dir())
    payload = {**certificate_payload(cal.certificate, path), "calibration": cal.as_dict(),
               "method_options": dict(cal.certificate.method.options)}

    def render(p: dict) -> None:
        c = p["calibration"]
        name = (f"name it in a manifest as statistical_method = \"{c['statistical_method']}\""
                if c["statistical_method"] else "its options differ from the registered method's, so no manifest "
                "name finds it (calibrate it with the registered options to name it)")
        domain = p["design"].get("label_noise_domain")
        if domain and not c["statistical_method"]:  # a judge block registers min_calibration beside the name
            options = p["method_options"]
            name = (f"name it in a manifest as statistical_method = \"{c['method']}\" with judge.min_calibration "
                    f"= {options.get('min_calibration', 0):g}")
        print(f"calibrated: {c['method']} (nominal level {c['nominal_alpha']:.5g} for a worst case <= alpha "
              f"{c['alpha']:g}; search target {c['target']:.4g}, {c['search']['route']}); {name}")
        if c["search"].get("target_not_used"):
            print(f"note: {c['search']['target_not_used']}")
        render_certificate(p)

    emit(args, payload, render)


def register(subparsers, bench_subparsers) -> None:
    p = subparsers.add_parser("calibrate", help="calibrate a method's nominal level at one design so that its "
                                                "worst-case false-pass rate there is at most alpha; writes the "
                                                "calibrated method's certificate")
    add_design_arguments(p)
    p.add_argument("--alpha", type=finite_float, default=0.025, help="one-sided level to hold (default %(default)s)")
    p.add_argument("--target", type=finite_float, default=None,
                   help="worst search-stream rate to calibrate to (default 0.96 alpha, 0.976 alpha for a "
                        "least-favourable method: room for the certificate's Monte Carlo bound)")
    p.add_argument("--search-reps", type=positive_int, default=None,
                   help="replications per null scenario on the search stream (default 20000; 200000 for a "
                        "least-favourable method such as dm_likelihood_ratio)")
    add_label_noise_arguments(p)
    add_backend_arguments(p)
    add_json(p)
    p.set_defaults(func=cmd_calibrate)
