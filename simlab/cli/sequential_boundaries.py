"""``simlab sequential boundaries``: efficacy boundaries of a one-sided group-sequential design
(Z scale, nominal p-values, cumulative alpha spent) for the obf / pocock / hsd / power families.

Registered inside the ``sequential`` command group (``simlab/cli/sequential.py``): the module
name sorts after ``sequential``, so that group exists when this module registers."""
from __future__ import annotations

import argparse

from simlab.cli._args import add_json, finite_float
from simlab.cli._output import UsageError, emit, print_table


def _fractions(text: str) -> list[float]:
    try:
        return [float(x) for x in text.split(",") if x.strip()]
    except ValueError:
        raise UsageError(f"--information: expected comma-separated fractions such as 0.5,1, got {text!r}",
                         "--information") from None


def check_design(args: argparse.Namespace) -> list[float]:
    """The information fractions, with ``--alpha``, ``--information`` and ``--gamma`` checked
    from the arguments as ``methods.sequential.boundaries.check_design`` checks them, before
    that module loads (numba and the spending recursion: ``--alpha 0.5`` was refused after 1 s).
    The hsd gamma limit stays the library's check."""
    import math

    if not 0.0 < args.alpha < 0.5:
        raise UsageError(f"--alpha {args.alpha:g} must lie in (0, 0.5): the one-sided level", "--alpha")
    t = _fractions(args.information)
    if not t:
        raise UsageError(f"--information {args.information!r} lists no fraction; give e.g. 0.5,1", "--information")
    if any(not math.isfinite(x) for x in t) or t[0] <= 0.0 or any(b <= a for a, b in zip(t, t[1:])) \
            or abs(t[-1] - 1.0) > 1e-12:
        raise UsageError(f"--information {args.information!r}: fractions must increase strictly in (0, 1] and end "
                         "at 1", "--information")
    if args.gamma is not None and args.spending in ("obf", "pocock"):
        raise UsageError(f"--gamma {args.gamma:g}: the {args.spending} family has no parameter", "--gamma")
    if args.gamma is not None and args.spending == "power" and args.gamma <= 0.0:
        raise UsageError(f"--gamma {args.gamma:g}: the power family's exponent rho must be > 0", "--gamma")
    return t


def cmd_boundaries(args: argparse.Namespace) -> None:
    information = check_design(args)
    from methods import efficacy_boundaries

    import math

    p = efficacy_boundaries(args.spending, args.alpha, information, args.gamma)
    # a look at which the family spends no alpha in double precision (obf at information 1e-6) has
    # no finite boundary: no result stops there (its z was printed as nan)
    spent = [c - (p["cumulative_alpha"][k - 1] if k else 0.0) for k, c in enumerate(p["cumulative_alpha"])]
    p["no_stop_looks"] = [k + 1 for k, (z, a) in enumerate(zip(p["z"], spent))
                          if a <= 0.0 and (z is None or not math.isfinite(z))]

    def render(p):
        par = "" if p["parameter"] is None else f", parameter {p['parameter']:g}"
        rows = [[k + 1, t, "inf (spends nothing)" if k + 1 in p["no_stop_looks"] else z, q, c] for k, (t, z, q, c) in
                enumerate(zip(p["information"], p["z"], p["nominal_p"], p["cumulative_alpha"]))]
        print_table(f"{p['family']} spending, one-sided alpha {p['alpha']:g}{par}",
               ["look", "information", "z boundary", "nominal p", "cumulative alpha"], rows)

    emit(args, p, render)


def _sequential_subparsers(sub) -> argparse._SubParsersAction | None:
    group = sub.choices.get("sequential")
    if group is None:
        return None
    for action in group._actions:
        if isinstance(action, argparse._SubParsersAction):
            return action
    return None


def register(sub, bench_sub) -> None:
    target = _sequential_subparsers(sub) or sub
    p = target.add_parser("boundaries", help="efficacy boundaries (Z, nominal p, alpha spent) of a "
                                             "group-sequential design: obf, pocock, hsd, power families")
    p.add_argument("--spending", required=True, choices=["obf", "pocock", "hsd", "power"],
                   help="spending family: Lan-DeMets O'Brien-Fleming / Pocock, Hwang-Shih-DeCani, "
                        "Kim-DeMets power alpha*t^rho")
    p.add_argument("--alpha", type=finite_float, default=0.025, help="one-sided level (default %(default)s)")
    p.add_argument("--information", required=True,
                   help="comma-separated information fractions, strictly increasing, ending at 1")
    p.add_argument("--gamma", type=finite_float, default=None,
                   help="family parameter: HSD gamma (default -4) or power exponent rho (default 3)")
    add_json(p)
    p.set_defaults(func=cmd_boundaries)
