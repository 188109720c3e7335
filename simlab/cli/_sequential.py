"""Shared pieces of the sequential commands: defaults, method references from the flags,
the look schedule, and the cost models of the exact enumeration."""
from __future__ import annotations

import argparse

from simlab.cli._args import parse_looks_text
from simlab.cli._output import UsageError

DEFAULT_LOOKS = "50:500:50"
DEFAULT_MARGIN = 0.03
DEFAULT_ALPHA = 0.05
DEFAULT_METHODS = "repeated_fixed,likelihood_ratio,bonferroni,fixed_final"
WRAPPERS = ("fixed_final", "repeated_fixed", "bonferroni")
CHUNK_TABLE_BYTES = 64 << 20  # studies.exact.sequential evaluates states in 64 MB chunks of tables
# Each state at look j is decided on a representative table of n_j cluster rows: measured
# 22 ns per cluster row per method (binomial, looks 5000 vs 20000, repeated_fixed +
# likelihood_ratio).  Check: trinomial, one look at 800, bonferroni: 6.1 s and 71 MB peak RSS
# measured against 6.4 s and 82 MB modelled.
SECONDS_PER_STATE_ROW = 2.5e-8


def exact_memory(looks: tuple[int, ...], trinomial: bool) -> float:
    """Peak bytes of the exact path enumeration (simlab.exact.sequential): per look a status
    region over every state (n+1 binomial, (n+1)^2 trinomial, int8, kept, plus int64 state
    indices while it is built), and the forward probabilities (float64) over the last look's states."""
    last = looks[-1] + 1
    if trinomial:
        return 2.0 * sum((n + 1) ** 2 for n in looks) + 12.0 * last * (last + 1) + 16.0 * last ** 2 + CHUNK_TABLE_BYTES
    return 2.0 * sum(n + 1 for n in looks) + 24.0 * last + 16.0 * last + CHUNK_TABLE_BYTES


def exact_seconds(looks: tuple[int, ...], trinomial: bool, n_methods: int, n_laws: int) -> float:
    """Time of the enumeration: every state of every look decided on an n-row table."""
    rows = sum(((n + 1) * (n + 2) / 2 if trinomial else n + 1) * n for n in looks)
    return SECONDS_PER_STATE_ROW * rows * n_methods * n_laws


def method_refs(text: str, inner: str | None, alternative: float | None) -> list:
    from methods.method_ref import MethodRef

    names = [n.strip() for n in text.split(",") if n.strip()]
    if not names:
        raise UsageError("--methods lists no method", "--methods")
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
    from methods.sequential.base import LookSchedule

    parse_looks_text(looks)
    return LookSchedule.parse(looks, unit=args.unit)
