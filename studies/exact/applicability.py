"""Which designs an exact certification engine can take, decided from the design and the
method's kind alone: no kernel is loaded, so a command can refuse ``--engine exact`` before
it imports the method (issue 29: an input error answers in under a second).  Whether the
method sees only the pooled discordant counts is the other condition; it needs the kernel
(``studies.exact.discordant.discordant_probe``)."""
from __future__ import annotations

MAX_STATES = 3_000_000   # discordant states (n10, n01) of N pairs: (N + 1)(N + 2) / 2


def design_blocker(kind: str, looks: int | None, perfect_labels: bool, clusters: int, trials: int) -> str | None:
    """Why no exact certification engine applies at this design, or None when one may (the
    method's probe still decides)."""
    if kind != "fixed" or looks is not None:
        return "sequential methods and look schedules are simulated"
    if not perfect_labels:
        return "label noise makes the law depend on the baseline"
    n = clusters * trials
    if (n + 1) * (n + 2) // 2 > MAX_STATES:
        return f"{n} pairs give more than {MAX_STATES:,} discordant states"
    return None


def exact_refusal(name: str, why: str) -> str:
    """The message for ``engine='exact'`` where no exact engine applies."""
    return f"the exact engine does not apply to {name!r} here: {why}"
