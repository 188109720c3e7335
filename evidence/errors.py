"""Errors a user can act on: one summary per root cause, a few examples, a count.

An input with 128 rows that all lack the same label has one problem, not 128: every
problem is kept (``errors``, ``problems``) but the message groups them by cause --
``"field passed: missing label ... (128 rows, e.g. line 3, line 5, line 9, and 125 more)"``.
A place is named the way the input names it: a line for a JSONL/CSV file, a sample id and
epoch for an Inspect log (``where``), never a line number a ``.eval`` file does not have.

``EvidenceError.option`` names the run option that addresses the problem (``score``,
``cluster_field``, ``registered_after_measurement``...); the command line maps it to its
flag -- library code never names a flag."""
from __future__ import annotations

from dataclasses import dataclass

EXAMPLES = 3  # places shown per cause


class EvidenceError(ValueError):
    """Refused evidence: the message names the root cause; ``option`` the option that addresses it."""

    def __init__(self, message: str, option: str | None = None):
        super().__init__(message)
        self.option = option


@dataclass(frozen=True)
class Problem:
    """One bad place: ``cause`` is shared by every place with the same root cause."""
    where: str
    cause: str

    def __str__(self) -> str:
        sep = ", " if self.cause.startswith("field ") else ": "
        return f"{self.where}{sep}{self.cause}" if self.where else self.cause


def summarise(problems: list[Problem], unit: str = "row") -> str:
    """``cause (N units, e.g. a, b, c, and M more); next cause (...)`` in order of first appearance."""
    groups: dict[str, list[str]] = {}
    for p in problems:
        groups.setdefault(p.cause, []).append(p.where)
    parts = []
    for cause, places in groups.items():
        places = [w for w in places if w]
        if not places:
            parts.append(cause)
            continue
        n = len(places)
        shown = ", ".join(places[:EXAMPLES])
        more = f", and {n - EXAMPLES} more" if n > EXAMPLES else ""
        parts.append(f"{cause} ({n} {unit}{'s' if n != 1 else ''}, e.g. {shown}{more})" if n > 1
                     else f"{cause} ({shown})")
    return "; ".join(parts)


class EvidenceErrors(EvidenceError):
    """Every problem found in one input: ``problems`` (and ``errors``, their strings) hold all
    of them; the message summarises them by root cause."""
    title = ""
    unit = "row"

    def __init__(self, source: str, problems: list[Problem | str], option: str | None = None):
        self.source = source
        self.problems = [p if isinstance(p, Problem) else Problem("", p) for p in problems]
        self.errors = [str(p) for p in self.problems]
        causes = len({p.cause for p in self.problems})
        title = self.title.format(n=len(self.problems), causes=causes)
        super().__init__(f"{source}: {title}{summarise(self.problems, self.unit)}", option)


class SampleErrors(EvidenceErrors):
    """Bad samples in evaluation logs, grouped by root cause and named by file, sample and epoch."""
    title = "{n} bad sample(s), {causes} root cause(s): "
    unit = "sample"
