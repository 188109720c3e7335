"""``simlab certify``: certify a method at exactly one design (``studies.qualify.certify``)."""
from __future__ import annotations

import argparse

from simlab.cli._args import add_json, finite_float, n_jobs, positive_int
from simlab.cli._backend import add_backend_arguments
from simlab.cli._output import emit, log_to_stderr


def _pair(text: str) -> tuple[float, float]:
    try:
        lo, hi = (float(x) for x in text.split(","))
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected LO,HI, got {text!r}") from None
    return lo, hi


def cmd_certify(args: argparse.Namespace) -> None:
    from simlab.cli._backend import executor_from_args
    from studies.qualify import certificate_payload, certify, write_certificate

    key = None
    if args.sign_key:
        from simlab.cli.records import private_key
        key = private_key(args.sign_key, "--sign-key")
    with executor_from_args(args, args.n_jobs) as ex:
        cert = certify(args.method, args.clusters, args.trials, args.margin, args.rho_max, args.looks,
                       baseline=args.baseline, discordance=args.discordance, engine=args.engine, executor=ex,
                       sign_key=key, progress=log_to_stderr(args))
    path = write_certificate(cert, args.out)

    def render(p: dict) -> None:
        w = p["worst"]
        print(f"{p['method']} at K={p['design']['clusters']}, M={p['design']['trials']}, margin={p['design']['margin']:g}, "
              f"rho <= {p['design']['rho_max']:g}: {p['verdict'].upper()} ({p['engine']})")
        bound = (f", proven bound over the range {p['proven_upper']:.5g}"
                 if p["proven_upper"] is not None and p["verdict"] != "exceeds" else "")
        print(f"worst false-pass rate {w['rate']:.5g} (upper {w['upper']:.5g}{bound}) vs threshold "
              f"{p['threshold']:.4g} at baseline {w['baseline']:g}, discordance {w['discordance']:.5g}, rho {w['rho']:g}")
        print(f"{p['points']} nuisance points, {p['seconds']:.1f} s; certificate {p['file']}"
              + (f", signed by {p['signed_by']}" if p["signed_by"] else ""))

    emit(args, certificate_payload(cert, path), render)


def register(subparsers, bench_subparsers) -> None:
    p = subparsers.add_parser("certify", help="certify a method at exactly one design (worst case over the nuisance)")
    p.add_argument("--method", required=True, help="registered method name")
    p.add_argument("--clusters", type=positive_int, required=True, help="K, independent clusters")
    p.add_argument("--trials", type=positive_int, default=1, help="M, trials (pairs) per cluster (default %(default)s)")
    p.add_argument("--margin", type=finite_float, required=True, help="non-inferiority margin")
    p.add_argument("--rho-max", type=finite_float, default=0.0, help="largest intra-cluster correlation (default 0)")
    p.add_argument("--looks", type=positive_int, default=None, help="equally spaced looks (sequential methods)")
    p.add_argument("--baseline", type=_pair, default=(0.5, 1.0), metavar="LO,HI",
                   help="baseline pass-rate range (default 0.5,1)")
    p.add_argument("--discordance", type=_pair, default=(0.01, 0.5), metavar="LO,HI",
                   help="discordance range (default 0.01,0.5)")
    p.add_argument("--engine", choices=("auto", "exact", "simulation"), default="auto")
    p.add_argument("--out", default="certificates", metavar="DIR", help="output directory (default %(default)s)")
    p.add_argument("--sign-key", default=None, metavar="PEM", help="Ed25519 private key to sign the certificate")
    p.add_argument("--n-jobs", type=n_jobs, default=1)
    add_backend_arguments(p)
    add_json(p)
    p.set_defaults(func=cmd_certify)
