"""lm-evaluation-harness ``--log_samples`` output -> trial records.

``lm_eval ... --output_path OUT --log_samples`` writes, per model, ``samples_<task>_<date>.jsonl``
(one JSON object per document and filter: ``doc_id``, ``doc`` (the dataset row), ``target``,
``filter``, ``metrics`` (the metric names) and one field per metric, e.g. ``"exact_match":
1.0``) beside ``results_<date>.json`` (``config.model`` / ``model_args``, ``model_name``,
``date``: the run's start as POSIX seconds, ``configs[<task>]``: the task's configuration
with its ``dataset_path`` / ``dataset_name`` and ``metadata``).  Mapping: ``doc_id`` -> case
id, trial index 0 (the harness logs one graded response per document: register
``repetitions = 1``), ``doc[cluster_field]`` -> cluster, ``doc[slice_field]`` -> slice, the
metric ``score`` -> passed (1/0, true/false; a fractional value is partial credit and is
refused), the results file's model and date -> the log's identity and time; the manifest
hash may come from ``--metadata '{"simlab_manifest_sha256": "sha256:..."}'`` (it lands in the
task configuration's metadata).  Several filters log one row per document each: name one
(``filter``) when the file has more than one."""
from __future__ import annotations

import datetime as dt
import json
from pathlib import Path

from ..errors import EvidenceError, Problem, SampleErrors
from ..jsonfiles import TOO_DEEP, NotUTF8, RefusedJSON, loads
from simlab.hashing import file_hash
from ..trial_schema import TrialColumns
from ..trials import columns_from_places
from .inspect import MANIFEST_KEY

_BOOK = {"doc_id", "doc", "target", "arguments", "resps", "filtered_resps", "filter", "metrics", "doc_hash",
         "prompt_hash", "target_hash"}


def _results(samples: Path) -> tuple[dict | None, str]:
    """The results file written with ``samples`` (same date id), and the task name."""
    stem = samples.stem
    if not stem.startswith("samples_"):
        return None, stem
    body = stem[len("samples_"):]
    for candidate in sorted(samples.parent.glob("results_*.json")):
        date_id = candidate.stem[len("results_"):]
        if body.endswith("_" + date_id):
            try:
                return json.loads(candidate.read_text()), body[: -len(date_id) - 1]
            except (OSError, ValueError, RecursionError) as exc:
                why = TOO_DEEP if isinstance(exc, RecursionError) else exc
                raise EvidenceError(f"{candidate}: not readable lm-evaluation-harness results ({why})") from None
    return None, body


def _info(path: Path, results: dict | None, task: str, arm: str) -> dict:
    config = (results or {}).get("config") or {}
    task_config = ((results or {}).get("configs") or {}).get(task) or {}
    date = (results or {}).get("date")
    try:
        created = (dt.datetime.fromtimestamp(float(date), dt.timezone.utc).isoformat().replace("+00:00", "Z")
                   if isinstance(date, (int, float)) else None)
    except (ValueError, OverflowError, OSError) as exc:  # NaN, or seconds beyond the years a datetime holds
        raise EvidenceError(f"{path.name}: the results file's date {date!r} is not a usable time ({exc})") from None
    model = (results or {}).get("model_name") or config.get("model_args") or config.get("model")
    return {"file": path.name, "sha256": file_hash(path), "format": "lm-eval", "role": f"lmeval_{arm}", "arm": arm,
            "records_identity": results is not None, "created": created, "task": task, "task_args": {},
            "model": model, "dataset": {"name": task_config.get("dataset_path"),
                                        "location": task_config.get("dataset_name"), "samples": None},
            "manifest_sha256": (task_config.get("metadata") or {}).get(MANIFEST_KEY), "arm_label": None}


def _rows(path: Path, arm: str, cluster_field: str, score: str | None, slice_field: str | None,
          filter_name: str | None, manifest_hash: str | None) -> tuple[list, list[Problem]]:
    items = []
    for number, line in enumerate(path.read_bytes().split(b"\n"), start=1):
        if line.strip():
            try:
                items.append((number, loads(line)))
            except json.JSONDecodeError as exc:
                raise EvidenceError(f"{path.name} line {number}: not valid JSON ({exc.msg})") from None
            except UnicodeDecodeError as exc:
                raise EvidenceError(f"{path.name} line {number}: {NotUTF8(line, exc).cause}") from None
            except RefusedJSON as exc:  # a repeated key, nesting past the parser's depth
                raise EvidenceError(f"{path.name} line {number}: {exc}") from None
    if not items:
        raise EvidenceError(f"{path}: holds no samples")
    filters = sorted({str(r.get("filter")) for _, r in items if isinstance(r, dict)})
    if filter_name is None and len(filters) > 1:
        raise EvidenceError(f"{path.name}: rows for {len(filters)} filters ({', '.join(map(repr, filters))}); "
                            "choose one", option="filter")
    metrics = sorted({k for _, r in items if isinstance(r, dict) for k in r if k not in _BOOK})
    if score is None and len(metrics) != 1:
        raise EvidenceError(f"{path.name}: {len(metrics)} metrics ({', '.join(map(repr, metrics))}); choose the "
                            "pass/fail one", option="score")
    score = score or metrics[0]
    if score not in metrics:
        raise EvidenceError(f"{path.name}: no metric {score!r}; the samples have {', '.join(map(repr, metrics))}",
                            option="score")
    rows, problems = [], []
    for number, r in items:
        if filter_name is not None and str(r.get("filter")) != filter_name:
            continue
        where = f"{path.name} doc {r.get('doc_id')!r} (line {number})"
        doc = r.get("doc") if isinstance(r.get("doc"), dict) else {}
        value = r.get(score)
        passed = value if isinstance(value, bool) else (bool(value) if value in (0, 1) else None)
        if passed is None:
            problems.append(Problem(f"{where} (value {value!r})", f"metric {score!r} is not pass/fail (1/0, "
                                                                 "true/false): partial credit cannot be paired"))
            continue
        cluster, part = doc.get(cluster_field), (doc.get(slice_field) if slice_field else None)
        if cluster is None or (slice_field and part is None):
            problems.append(Problem(where, f"no field {cluster_field if cluster is None else slice_field!r} in doc"))
            continue
        rows.append((where, {"case_id": str(r.get("doc_id")), "trial_index": 0, "cluster_id": str(cluster),
                             "arm": arm, "passed": passed, "failed_checks": [], "latency_ms": None, "cost": None,
                             "cost_provenance": "absent", "manifest_sha256": manifest_hash,
                             "slice": None if part is None else str(part)}))
    return rows, problems


def read_lmeval_pair(baseline: str | Path, candidate: str | Path, *, cluster_field: str, score: str | None,
                     slice_field: str | None = None, filter_name: str | None = None,
                     check_logs=None) -> tuple[TrialColumns, list[dict]]:
    """Both arms' samples files as validated trial columns, and each run's identity and time
    (``check_logs(infos)`` runs on the identities before any sample is judged)."""
    paths = ((Path(baseline), "baseline"), (Path(candidate), "candidate"))
    infos = []
    for path, arm in paths:
        if not path.is_file():
            raise EvidenceError(f"no lm-evaluation-harness samples file at {path}")
        results, task = _results(path)
        infos.append(_info(path, results, task, arm))
    if check_logs is not None:
        check_logs(infos)
    rows, problems = [], []
    for (path, arm), info in zip(paths, infos):
        r, p = _rows(path, arm, cluster_field, score, slice_field, filter_name, info["manifest_sha256"])
        rows += r
        problems += p
    source = f"lm-eval samples {Path(baseline).name}, {Path(candidate).name}"
    if problems:
        raise SampleErrors(source, problems)
    return columns_from_places(rows, source), infos
