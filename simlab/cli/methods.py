"""``simlab methods`` (the registry), ``simlab interval`` (one experiment's interval and
decision) (``simlab bench methods`` is in bench.py)."""
from __future__ import annotations

import argparse

from simlab.cli._args import add_json, finite_float, memory_size, parse_options, parse_tables, positive_float
from simlab.cli._output import UsageError, emit


def analyze_fixed(method, table, margin: float, alpha: float):
    """The one call of a fixed method's single analysis (one-sided ``alpha``, methods.protocol)."""
    return method.analyze(table, margin, alpha)


def run_interval(args: argparse.Namespace) -> None:
    from methods import explain
    from methods import AnalysisTooCostly, check_analysis_cost
    from methods import get

    method = get(args.method)
    if method.kind != "fixed":
        raise UsageError(f"method {args.method!r} is {method.kind}; simlab interval runs fixed-sample methods "
                         "(use simlab sequential analyze)", "--method")
    table = parse_tables(args.table)
    options = parse_options(args.option)
    if options:
        method = method.with_options(**options)
    try:
        check_analysis_cost(method, table, max_bytes=args.max_memory, max_seconds=args.max_seconds)
    except AnalysisTooCostly as exc:
        flag = "--max-seconds" if exc.resource == "time" else "--max-memory"
        raise UsageError(f"{exc.what}; raise {flag} to run it anyway, or choose a method whose cost does not grow "
                         "with the counts", flag) from None
    result = analyze_fixed(method, table, args.margin, args.alpha)
    payload = {**result.as_dict(), "options": dict(method.options), "version": method.version,
               "source_sha256": method.identity.source_sha256, "citation": method.citation,
               "reasons": explain(method, table, result.status)}

    def render(p: dict) -> None:
        lo = "nan" if p["lower"] is None else f"{p['lower']:.6f}"
        hi = "nan" if p["upper"] is None else f"{p['upper']:.6f}"
        est = "nan" if p["estimate"] is None else f"{p['estimate']:.6f}"
        print(f"{p['method']} v{p['version']} ({p['estimand']}), {p['clusters']} clusters, {p['trials']} trials")
        print(f"estimate {est}   {100 * (1 - 2 * p['alpha']):g}% interval [{lo}, {hi}] (one-sided alpha {p['alpha']:g})")
        print(f"decision: {p['status']}  (pass iff lower >= -{p['margin']:g})")
        for reason in p["reasons"]:
            print(f"  why: {reason}")

    emit(args, payload, render)


def run_methods(args: argparse.Namespace) -> None:
    from methods import get, names

    rows = []
    for name in names():
        m = get(name)
        rows.append({"name": name, "kind": m.kind, "estimand": m.estimand.value, "version": m.version,
                     "options": dict(m.options), "citation": m.citation})

    def render(p: dict) -> None:
        width = max((len(r["name"]) for r in p["methods"]), default=4)
        print(f"{'name':<{width}}  {'kind':<10}  {'estimand':<16}  version")
        for r in p["methods"]:
            print(f"{r['name']:<{width}}  {r['kind']:<10}  {r['estimand']:<16}  {r['version']}")
            print(f"{'':<{width}}  {r['citation']}")

    emit(args, {"methods": rows}, render)


def register(sub, bench_sub) -> None:
    p = sub.add_parser("interval", help="one experiment's non-inferiority interval and decision")
    p.add_argument("--method", required=True, help="registered method name (see `simlab methods`)")
    p.add_argument("--table", action="append", default=[], metavar="n11,n10,n01,n00",
                   help="one cluster's paired counts; repeat once per cluster")
    p.add_argument("--alpha", type=finite_float, default=0.025,
                   help="one-sided level of the non-inferiority test; the interval is 1 - 2 alpha (default %(default)s)")
    p.add_argument("--margin", type=finite_float, default=0.03, help="non-inferiority margin m > 0 (default %(default)s)")
    p.add_argument("--option", action="append", default=[], metavar="key=value",
                   help="method option, e.g. min_clusters=2 (repeatable)")
    p.add_argument("--max-memory", type=memory_size, default=None, metavar="SIZE",
                   help="refuse an analysis estimated to need more memory (default: methods.analysis_cost)")
    p.add_argument("--max-seconds", type=positive_float, default=None,
                   help="refuse an analysis estimated to take longer (default: methods.analysis_cost)")
    add_json(p)
    p.set_defaults(func=run_interval)

    p = sub.add_parser("methods", help="list registered methods")
    add_json(p)
    p.set_defaults(func=run_methods)
