"""The trial schema shared by both read paths: the columns a trial row has, the arms and cost
provenances, the CSV header rule, and :class:`TrialColumns` (validated trials as arrays).
Optional columns: ``timestamp``, ``slice`` and ``judge_labelled`` (was the outcome a model
judge's label? ``evidence.labels`` says what follows).
``evidence.trials`` (the line-by-line path and the entry points) and ``evidence.columnar``
(the pyarrow fast path) both build on it, so neither imports the other's module for it."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

ARMS = ("baseline", "candidate")
PROVENANCE = ("absent", "synthetic", "measured")
FIELDS = ("case_id", "trial_index", "cluster_id", "arm", "passed", "failed_checks", "latency_ms",
          "cost", "cost_provenance", "manifest_sha256")
OPTIONAL_FIELDS = ("timestamp", "slice", "judge_labelled")


@dataclass(frozen=True)
class TrialColumns:
    """Validated trials as arrays (row i came from line ``lines[i]`` of ``source``)."""
    source: str
    case: np.ndarray          # int32 codes into case_names
    case_names: np.ndarray    # object array of str
    trial: np.ndarray         # int64
    cluster: np.ndarray       # int32 codes into cluster_names
    cluster_names: np.ndarray
    candidate: np.ndarray     # bool: arm == candidate
    passed: np.ndarray        # bool
    n_failed: np.ndarray      # int32 failed checks per trial
    latency: np.ndarray       # float64, NaN = not recorded
    cost: np.ndarray          # float64, NaN = absent
    provenance: np.ndarray    # int8 index into PROVENANCE
    manifest_hashes: dict[str | None, int]  # manifest hash (None: not bound) -> row count
    first_row_of_hash: dict[str | None, int]
    lines: np.ndarray         # int64 line number of each row
    failed_names: Any = field(repr=False, default=None)  # row -> tuple of failed check names (lazy)
    timestamps: np.ndarray | None = None  # float64 POSIX seconds of each trial, NaN = not given
    slice_names: np.ndarray | None = None  # object array: each row's slice value (None = not given)
    locate: Any = field(repr=False, default=None)  # row -> place ("line N"; Inspect: sample and epoch)
    # int8 per row: 1 the outcome is a judge's label, 0 it is not (a human's or a deterministic
    # check's), -1 not stated; None when no row states it (``evidence.labels``)
    judge_labelled: np.ndarray | None = None

    def __len__(self) -> int:
        return len(self.trial)

    def where(self, row: int) -> str:
        """The row's place as its input names it (a line, or a log's sample id and epoch)."""
        return self.locate(int(row)) if self.locate else f"line {int(self.lines[int(row)])}"

    def failed_checks_of(self, row: int) -> tuple[str, ...]:
        return tuple(self.failed_names(row)) if self.failed_names else ()


def judge_label_codes(values) -> np.ndarray | None:
    """``judge_labelled`` values (True / False / None) as int8 codes 1 / 0 / -1, or None when
    none is stated."""
    codes = np.fromiter((-1 if v is None else int(bool(v)) for v in values), dtype=np.int8)
    return codes if np.any(codes >= 0) else None


def concat_judge_labels(a: TrialColumns, b: TrialColumns) -> np.ndarray | None:
    if a.judge_labelled is None and b.judge_labelled is None:
        return None
    return np.concatenate([c.judge_labelled if c.judge_labelled is not None else np.full(len(c), -1, np.int8)
                           for c in (a, b)])


def csv_header_problem(header: list[str]) -> str | None:
    """Why a CSV header is not the trial schema (missing, unknown or repeated columns), or None."""
    missing = [f for f in FIELDS if f not in header]
    unknown = [h for h in header if h not in FIELDS + OPTIONAL_FIELDS]
    repeated = sorted({h for h in header if header.count(h) > 1})
    if missing or unknown or repeated:   # only the kinds that occur are named (it printed "missing []")
        kinds = [f"{what} column(s) {cols}" for what, cols in (("missing", missing), ("unknown", unknown),
                                                              ("repeated", repeated)) if cols]
        return (f"header: {', '.join(kinds)} (the columns are {', '.join(FIELDS)}, optionally "
                f"{', '.join(OPTIONAL_FIELDS)})")
    return None
