"""``simlab methods`` (the registry), ``simlab interval`` (one experiment's interval and
decision) (``simlab bench methods`` is in bench.py)."""
from __future__ import annotations

import argparse

from simlab.cli._args import (add_json, check_methods, finite_float, memory_size, option_error, parse_options,
                              parse_tables, positive_float, first_use_compiles)
from simlab.cli._output import UsageError, emit, log_to_stderr


def analyze_fixed(method, table, margin: float, alpha: float, calibration=None):
    """The one call of a fixed method's single analysis (one-sided ``alpha``, methods.protocol);
    a judge-corrected method also takes its calibration sets (methods.judged)."""
    if calibration is not None:
        return method.analyze(table, margin, alpha, calibration=calibration)
    return method.analyze(table, margin, alpha)


NO_BOUND = "none"   # the text of a bound the method did not give (NaN: an inconclusive analysis)


def _number_text(x: float) -> str:
    """A bound as text: six decimals, ``-inf`` / ``inf`` (an unbounded end: no information at
    this level), or ``none`` (NaN: the method gave no bound, e.g. too few clusters)."""
    import math

    return f"{x:.6f}" if math.isfinite(x) else (NO_BOUND if math.isnan(x) else ("inf" if x > 0 else "-inf"))


def _interval_text(lo: str, hi: str, status: str, reasons: list[str]) -> str:
    """``[lo, hi]``, or for an analysis that gave no bounds ``none (inconclusive: <why>)`` -- never
    "[nan, nan]"."""
    if lo == NO_BOUND and hi == NO_BOUND:
        return f"none ({status}: {reasons[0] if reasons else 'the method gave no bounds'})"
    return f"[{lo}, {hi}]"


ANNOUNCE_SECONDS = 1.0   # an analysis declared to take this long says so on stderr before it starts


def run_interval(args: argparse.Namespace) -> None:
    from methods import check_alpha, check_margin, info

    # every input is checked against the method's catalogue entry before a kernel, numpy or scipy is imported
    entry = info(args.method)
    if entry.kind != "fixed":
        raise UsageError(f"method {args.method!r} is {entry.kind}; simlab interval runs fixed-sample methods "
                         "(use simlab sequential analyze)", "--method")
    judged = "judge_calibration" in entry.inputs
    if judged and not args.calibration:
        raise UsageError(f"method {args.method!r} corrects judge labels: give its calibration sets with "
                         "--calibration (once for a shared set, or baseline's then candidate's)", "--calibration")
    if args.calibration and not judged:
        raise UsageError(f"method {args.method!r} reads no judge calibration sets; --calibration is for "
                         "judge-corrected methods", "--calibration")
    options = parse_options(args.option)
    check_methods(args.method, "--method", options=options)
    for flag, check, value in (("--margin", check_margin, args.margin), ("--alpha", check_alpha, args.alpha)):
        try:
            check(value)
        except ValueError as exc:
            raise UsageError(str(exc), flag) from None
    table = parse_tables(args.table)
    calibration = parse_tables(args.calibration, "--calibration", "one per set") if judged else None

    from methods import AnalysisTooCostly, check_analysis_cost, explain, get

    method = get(args.method)
    try:  # an option's range is checked where the method prepares: its error names --option
        if options:
            method = method.with_options(**options)
        try:
            cost = check_analysis_cost(method, table, max_bytes=args.max_memory, max_seconds=args.max_seconds)
        except AnalysisTooCostly as exc:
            flag = "--max-seconds" if exc.resource == "time" else "--max-memory"
            raise UsageError(f"{exc.what}; raise {flag} to run it anyway, or choose a method whose cost does not "
                             "grow with the counts", flag) from None
        say = log_to_stderr(args)
        if cost.seconds >= ANNOUNCE_SECONDS:   # a construction at a new design ran 11-13 s without a word
            say(f"{method.name}: {cost.driver}: estimated {cost.seconds:.0f} s")
        with first_use_compiles([method], say) as compiled:
            result = analyze_fixed(method, table, args.margin, args.alpha, calibration)
    except UsageError:
        raise
    except ValueError as exc:
        raise option_error(exc, options) or exc from None
    reasons = ([result.reason] if result.reason else []) if judged else explain(method, table, result.status)
    # an all-zero --table is an empty cluster: the methods leave it out, which the text says
    empty = sum(1 for row in table if not any(row))
    # JSON has no infinity, so as_dict gives None for an unbounded end as for a NaN one: the text
    # says which (an interval of [-inf, inf] -- no information at this level -- printed as [nan, nan];
    # no bounds at all, an inconclusive analysis, printed as [nan, nan] too: now "none")
    bounds_text = [_number_text(result.lower), _number_text(result.upper)]
    payload = {**result.as_dict(), "bounds_text": bounds_text, "options": dict(method.options),
               "version": method.version,
               "citation": method.citation, "reasons": reasons, "tables_given": len(table), "empty_clusters": empty,
               "compiled_first": compiled}
    if args.json:  # the text does not show the code's identity, and hashing it costs 0.05-0.06 s of the ~1 s
        payload["source_sha256"] = method.identity.source_sha256

    def render(p: dict) -> None:
        lo, hi = p["bounds_text"]
        est = "nan" if p["estimate"] is None else f"{p['estimate']:.6f}"
        clusters, trials = p["clusters"], p["trials"]
        print(f"{p['method']} v{p['version']} ({p['estimand']}), {clusters} cluster{'s' * (clusters != 1)}, "
              f"{trials} trial{'s' * (trials != 1)}")
        if p["empty_clusters"]:
            print(f"note: {p['empty_clusters']} of the {p['tables_given']} --table clusters have no trials (0,0,0,0) "
                  "and are left out")
        level = f"{100 * (1 - 2 * p['alpha']):g}%"
        level = level if level != "100%" else f"1 - {2 * p['alpha']:g}"   # alpha 1e-20 read "100% interval"
        interval = _interval_text(lo, hi, p["status"], p["reasons"])
        if interval.startswith(NO_BOUND):   # its reason in parentheses: the level goes first
            print(f"estimate {est}   {level} interval (one-sided alpha {p['alpha']:g}): {interval}")
        else:
            print(f"estimate {est}   {level} interval {interval} (one-sided alpha {p['alpha']:g})")
        if "raw_estimate" in p:
            raw = [("nan" if p[k] is None else f"{p[k]:.6f}") for k in ("raw_estimate", "raw_lower", "raw_upper")]
            print(f"judge scale: estimate {raw[0]}   interval [{raw[1]}, {raw[2]}]   judge "
                  + ", ".join(f"{s} Se {se if se is None else round(se, 4)} Sp {sp if sp is None else round(sp, 4)} "
                              f"({n} items)" for s, se, sp, n in zip(p["calibration_sets"], p["sensitivity"],
                                                                    p["specificity"], p["calibration_items"])))
        print(f"decision: {p['status']}  (pass iff lower >= -{p['margin']:g})")
        for reason in p["reasons"]:
            print(f"  why: {reason}")

    emit(args, payload, render)


def run_methods(args: argparse.Namespace) -> None:
    from methods import infos

    # the catalogue (methods.catalogue): no kernel, numpy or scipy is imported to list the registry
    rows = [{"name": i.name, "kind": i.kind, "estimand": i.estimand, "version": i.version, "inputs": list(i.inputs),
             "options": i.options, "guarantee": i.guarantee, "calibration": i.calibration, "citation": i.citation}
            for _, i in sorted(infos().items())]

    def render(p: dict) -> None:
        width = max((len(r["name"]) for r in p["methods"]), default=4)
        print(f"{'name':<{width}}  {'kind':<10}  {'estimand':<16}  {'version':<7}  guarantee")
        for r in p["methods"]:
            print(f"{r['name']:<{width}}  {r['kind']:<10}  {r['estimand']:<16}  {r['version']:<7}  "
                  f"{r['guarantee'] or '-'}")
            print(f"{'':<{width}}  {r['citation']}")
        print("guarantee: theorem = a finite-sample guarantee at every design its assumptions cover; "
              "- = valid where a qualification record or certificate covers the design (simlab records coverage)")

    emit(args, {"methods": rows}, render)


def register(sub, bench_sub) -> None:
    p = sub.add_parser("interval", help="one experiment's non-inferiority interval and decision")
    p.add_argument("--method", required=True, help="registered method name (see `simlab methods`)")
    p.add_argument("--table", action="append", default=[], metavar="n11,n10,n01,n00",
                   help="one cluster's paired counts; repeat once per cluster")
    p.add_argument("--alpha", type=finite_float, default=0.025,
                   help="one-sided level of the non-inferiority test; the interval is 1 - 2 alpha (default %(default)s)")
    p.add_argument("--margin", type=finite_float, default=0.03, help="non-inferiority margin m > 0 (default %(default)s)")
    p.add_argument("--calibration", action="append", default=[], metavar="hp_jp,hp_jf,hf_jp,hf_jf",
                   help="judge-corrected methods: a calibration set's counts (human pass & judge pass, human pass & "
                        "judge fail, human fail & judge pass, human fail & judge fail); once for a set shared by "
                        "both arms, or twice: the baseline's, then the candidate's")
    p.add_argument("--option", action="append", default=[], metavar="key=value",
                   help="method option, e.g. min_clusters=2 (repeatable)")
    p.add_argument("--max-memory", type=memory_size, default=None, metavar="SIZE",
                   help="refuse an analysis estimated to need more memory (default: methods.analysis_cost)")
    p.add_argument("--max-seconds", type=positive_float, default=None,
                   help="refuse an analysis estimated to take longer (default: methods.analysis_cost); a first use's "
                        "kernel compile, announced on stderr, comes on top")
    add_json(p)
    p.set_defaults(func=run_interval)

    p = sub.add_parser("methods", help="list registered methods")
    add_json(p)
    p.set_defaults(func=run_methods)
