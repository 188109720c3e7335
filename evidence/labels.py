"""Which outcomes are judge labels, and what follows for the run (issue 30, item 1).

A trial row may state ``judge_labelled``: true when a model judge gave ``passed``, false
when a human or a deterministic check did (JSONL / CSV column; Inspect: the score's
metadata, or ``--judge-scored`` for every sample of a model-graded score).  When a judge
supplies the outcome, the comparison measures judge-labelled outcomes, not customer truth
(evidence spine, "Noisy labels and judge-error propagation"), so:

* **manifest registers a judge** (its method corrects for judge error, ``judge_corrected``):
  every outcome is read as a label of the registered judge -- a row that does not state it
  is taken as the manifest says.  A row stating ``false`` is refused (exit 2) with the rows
  named: the correction would be applied to labels the judge did not give (mixed judge- and
  human-labelled trials need a method that corrects only the judge's; none is registered),
  and dropping them would be a silent drop.
* **manifest registers no judge**: rows stating ``true`` are judge labels taken as truth by
  a method that does not correct them; the run is analysed as registered, but it authorises
  ``lab_only`` at most and the receipt says why (register the judge, its calibration set and
  a judge-corrected method to lift that).
* rows that do not state it, under a manifest without a judge: outcomes as recorded (the
  operator's statement that they are not judge labels is the manifest's).

The receipt counts the rows of each kind (``evidence.judge_labelled``).
"""
from __future__ import annotations

import numpy as np

from .errors import EvidenceError
from .trial_schema import TrialColumns

EXAMPLES = 3


def judge_label_counts(cols: TrialColumns) -> dict[str, int]:
    """Rows stating a judge label, stating none, and not stating it."""
    codes = cols.judge_labelled
    if codes is None:
        return {"judge": 0, "not_judge": 0, "unstated": len(cols)}
    return {"judge": int(np.count_nonzero(codes == 1)), "not_judge": int(np.count_nonzero(codes == 0)),
            "unstated": int(np.count_nonzero(codes < 0))}


def _places(cols: TrialColumns, rows: np.ndarray) -> str:
    shown = ", ".join(cols.where(int(r)) for r in rows[:EXAMPLES])
    return shown + (f", and {len(rows) - EXAMPLES} more" if len(rows) > EXAMPLES else "")


def check_judge_labels(cols: TrialColumns, manifest) -> None:
    """Refuse trials that are not judge labels under a manifest that registers a judge."""
    if manifest.judge is None or cols.judge_labelled is None:
        return
    rows = np.flatnonzero(cols.judge_labelled == 0)
    if len(rows):
        raise EvidenceError(
            f"{cols.source}: field judge_labelled: {len(rows)} trial(s) say false (e.g. {_places(cols, rows)}), but "
            f"the manifest registers a judge and {manifest.statistical_method} corrects every outcome as that judge's "
            "label: mixed judge- and human-labelled trials cannot be corrected together -- have the registered judge "
            "label them, or analyse them under a manifest without a judge")


def uncorrected_judge_finding(manifest, counts: dict[str, int], example: str | None) -> list[tuple[str, str, str]]:
    """The receipt's finding for judge labels taken as truth (no judge registered)."""
    if manifest.judge is not None or not counts.get("judge"):
        return []
    return [("evidence_ready", "lab_pass",
             f"judge-labelled outcomes taken as truth: {counts['judge']} trial(s) say judge_labelled true (e.g. "
             f"{example}) but the manifest registers no judge, and {manifest.statistical_method} does not correct "
             "for judge error; authority capped at lab_only (register the judge, its calibration set and a "
             "judge-corrected method)")]


def first_judge_labelled(cols: TrialColumns) -> str | None:
    if cols.judge_labelled is None:
        return None
    rows = np.flatnonzero(cols.judge_labelled == 1)
    return cols.where(int(rows[0])) if len(rows) else None
