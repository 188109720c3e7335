"""``simlab sequential boundaries``: efficacy boundaries of a one-sided group-sequential design
(Z scale, nominal p-values, cumulative alpha spent) for the obf / pocock / hsd / power families.

Registered inside the ``sequential`` command group.  The module name sorts after
``sequential`` so that, wherever that group is defined (the legacy module or its own
``simlab/cli/sequential.py``), it exists when this module registers."""
from __future__ import annotations

import argparse


def _emit(args, payload, render):
    try:
        from simlab.cli.output import emit
    except ImportError:
        from simlab.cli._legacy import emit
    emit(args, payload, render)


def _table(title, columns, rows):
    try:
        from simlab.cli.output import print_table
    except ImportError:
        from simlab.cli._legacy import print_table
    print_table(title, columns, rows)


def _fractions(text: str) -> list[float]:
    try:
        return [float(x) for x in text.split(",") if x.strip()]
    except ValueError:
        raise ValueError(f"information: expected comma-separated fractions such as 0.5,1, got {text!r}") from None


def cmd_boundaries(args: argparse.Namespace) -> None:
    from methods.sequential.boundaries import efficacy_boundaries

    p = efficacy_boundaries(args.spending, args.alpha, _fractions(args.information), args.gamma)

    def render(p):
        par = "" if p["parameter"] is None else f", parameter {p['parameter']:g}"
        rows = [[k + 1, t, z, q, c] for k, (t, z, q, c) in
                enumerate(zip(p["information"], p["z"], p["nominal_p"], p["cumulative_alpha"]))]
        _table(f"{p['family']} spending, one-sided alpha {p['alpha']:g}{par}",
               ["look", "information", "z boundary", "nominal p", "cumulative alpha"], rows)

    _emit(args, p, render)


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
    p.add_argument("--alpha", type=float, default=0.025, help="one-sided level (default %(default)s)")
    p.add_argument("--information", required=True,
                   help="comma-separated information fractions, strictly increasing, ending at 1")
    p.add_argument("--gamma", type=float, default=None,
                   help="family parameter: HSD gamma (default -4) or power exponent rho (default 3)")
    p.add_argument("--json", action="store_true", help="print one JSON object on stdout")
    p.set_defaults(func=cmd_boundaries)
