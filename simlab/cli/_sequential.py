"""Shared pieces of the sequential commands: defaults, method references from the flags and
the look schedule."""
from __future__ import annotations

import argparse

from simlab.cli._args import check_methods, parse_looks_text
from simlab.cli._output import UsageError

DEFAULT_LOOKS = "50:500:50"
MAX_LOOK = 10 ** 11  # the largest design a scenario can have, in trials
DEFAULT_MARGIN = 0.03
DEFAULT_ALPHA = 0.05
DEFAULT_METHODS = "repeated_fixed,likelihood_ratio,bonferroni,fixed_final"
WRAPPERS = ("fixed_final", "repeated_fixed", "bonferroni")


def method_refs(text: str, inner: str | None, alternative: float | None) -> list:
    from methods import MethodRef

    names = [n.strip() for n in text.split(",") if n.strip()]
    if not names:
        raise UsageError("--methods lists no method", "--methods")
    twice = sorted({n for n in names if names.count(n) > 1})
    if twice:
        raise UsageError(f"--methods lists {', '.join(twice)} more than once: each method once", "--methods")
    check_methods(names, "--methods", "sequential")  # from the catalogue, before any method module loads
    if inner is not None:
        check_methods(inner, "--inner", "fixed")
    if inner is not None and not any(n in WRAPPERS for n in names):
        raise UsageError(f"--inner applies to the wrapping methods ({', '.join(WRAPPERS)}); --methods lists none",
                         "--inner")
    if alternative is not None and "likelihood_ratio" not in names:
        raise UsageError("--alternative is likelihood_ratio's option; --methods does not list likelihood_ratio",
                         "--alternative")
    return [MethodRef(name=n, options={"alternative": alternative} if n == "likelihood_ratio"
                                and alternative is not None else {}, inner=inner if n in WRAPPERS else None)
            for n in names]


def schedule_of(args: argparse.Namespace, looks: str):
    from methods import LookSchedule

    parse_looks_text(looks)
    try:
        schedule = LookSchedule.parse(looks, unit=args.unit)
    except (ValueError, OverflowError) as exc:  # the library's wording, under the flag that gave it
        from pydantic import ValidationError

        why = ("; ".join(e["msg"].removeprefix("Value error, ") for e in exc.errors())
               if isinstance(exc, ValidationError) else str(exc))
        raise UsageError(f"--looks {looks!r}: {why}", "--looks") from None
    if schedule.looks and schedule.looks[-1] > MAX_LOOK:  # 10^20 reached the kernels as a raw overflow
        raise UsageError(f"--looks {looks!r}: a look at {schedule.looks[-1]:,} {args.unit} is beyond any design "
                         f"(at most {MAX_LOOK:,}: 10^6 clusters of 10^5 trials)", "--looks")
    return schedule
