"""Inspect AI evaluation logs -> trial records, through Inspect's own reader.

Two logs (baseline and candidate), read with ``inspect_ai.log.read_eval_log``: sample id
-> case id, epoch -> trial index, the sample-metadata field ``cluster_field`` -> cluster
id, the score ``score`` -> passed (``C``/``I``, true/false or 1/0; anything else, or a
missing score, is an error naming the sample and epoch: a missing label is never a pass or
a fail).  A scorer may add ``failed_checks`` (a list of names) to its score metadata.
Latency is the sample's ``total_time``; Inspect records no cost, so cost is absent.  Each
log must carry the manifest hash in its eval metadata (``inspect eval ... --metadata
simlab_manifest_sha256=sha256:...``), binding the run to the registered manifest.

Optional dependency: ``pip install 'simlab[inspect]'``."""
from __future__ import annotations

from pathlib import Path

from ..trials import TrialColumns, columns_from_records, validate_rows

MANIFEST_KEY = "simlab_manifest_sha256"


def _label(value) -> bool | None:
    if isinstance(value, bool):
        return value
    if isinstance(value, (int, float)) and value in (0, 1):
        return bool(value)
    if isinstance(value, str) and value in ("C", "I"):
        return value == "C"
    return None


def log_rows(path: str | Path, arm: str, cluster_field: str, score: str) -> list[tuple[str, object]]:
    """``(where, row dict or error)`` for every sample of one log."""
    try:
        from inspect_ai.log import read_eval_log
    except ImportError:
        raise ValueError("reading Inspect logs needs the optional extra: pip install 'simlab[inspect]'") from None
    try:
        log = read_eval_log(str(path))
    except Exception as exc:  # the reader raises its own exception types for a bad file
        raise ValueError(f"{path}: not a readable Inspect log ({type(exc).__name__}: {exc})") from None
    if log.status != "success":
        raise ValueError(f"{path}: the eval did not complete (status {log.status!r}); partial logs are not evidence")
    manifest_hash = (log.eval.metadata or {}).get(MANIFEST_KEY)
    if not isinstance(manifest_hash, str):
        raise ValueError(f"{path}: eval metadata has no {MANIFEST_KEY} (run inspect eval with "
                         f"--metadata {MANIFEST_KEY}=<manifest hash>)")
    rows: list[tuple[str, object]] = []
    for sample in log.samples or []:
        where = f"{Path(path).name} sample {sample.id!r} epoch {sample.epoch}"
        s = (sample.scores or {}).get(score)
        passed = _label(s.value) if s is not None else None
        if s is not None and passed is None:
            rows.append((where, ValueError(f"field passed: score {score!r} value {s.value!r} is not C/I, "
                                           "true/false or 1/0")))
            continue
        cluster = (sample.metadata or {}).get(cluster_field)
        checks = ((s.metadata or {}).get("failed_checks", []) if s is not None else [])
        row = {"case_id": str(sample.id), "trial_index": sample.epoch,
               "cluster_id": cluster if cluster is None else str(cluster), "arm": arm,
               "failed_checks": checks, "latency_ms": None if sample.total_time is None else
               float(sample.total_time) * 1000.0, "cost": None, "cost_provenance": "absent",
               "manifest_sha256": manifest_hash}
        if passed is not None:
            row["passed"] = passed
        if sample.error is not None:
            rows.append((where, ValueError(f"sample errored ({sample.error.message}); no label")))
            continue
        rows.append((where, row))
    if not rows:
        raise ValueError(f"{path}: the log holds no samples")
    return rows


def read_inspect_pair(baseline: str | Path, candidate: str | Path, *, cluster_field: str,
                      score: str) -> TrialColumns:
    """Both logs as one validated set of trial columns."""
    rows = log_rows(baseline, "baseline", cluster_field, score) + log_rows(candidate, "candidate", cluster_field, score)
    source = f"Inspect logs {Path(baseline).name}, {Path(candidate).name}"
    records = validate_rows(rows, source, label="")
    return columns_from_records(records, source, lines=range(1, len(records) + 1))
