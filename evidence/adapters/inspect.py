"""Inspect AI evaluation logs -> trial records, read straight from Inspect's log format.

A log is what ``inspect eval`` writes: a ``.eval`` file (a zip holding ``header.json`` -- the
``EvalLog`` without samples: ``version``, ``status``, ``eval`` (the ``EvalSpec``: ``created``,
``task``, ``task_args``, ``model``, ``dataset``, ``metadata``, ``config.epochs``), ``results``,
``stats``, ``invalidated`` -- and one ``samples/<id>_epoch_<n>.json`` per ``EvalSample``: ``id``,
``epoch``, ``scores``, ``metadata``, ``error``, ``started_at``, ``total_time``, ``uuid``), or a
``.json`` file holding the whole ``EvalLog``.  The schema is Inspect's
(``inspect_ai.log._log``, version 2); the models below validate the fields the evidence
path uses and ignore the rest.  Zip entries are zstandard-compressed by current Inspect:
``zipfile_zstd`` (installed with ``inspect-ai``) adds that codec on Python < 3.14.  Reading
the format directly keeps the route fast: importing ``inspect_ai`` alone takes longer than
the whole analysis (the test suite checks this reader against ``inspect_ai.log.read_eval_log``
on logs ``inspect eval`` wrote).

Mapping: sample id -> case id, epoch -> trial index, the sample-metadata field
``cluster_field`` -> cluster id (and ``slice_field`` -> slice), the score ``score`` -> passed
(``C``/``I``, true/false, 1/0; Inspect's ``N``, no answer, is a fail, as its
``value_to_float`` scores it), the sample's ``started_at`` -> timestamp, ``total_time`` ->
latency.  A scorer may add ``failed_checks`` (names) to its score metadata, and
``judge_labelled`` (true when a model judge gave the value, false when it did not) -- or the
mapping's ``judge_labelled`` states it for every sample of the score (``--judge-scored``:
the score is a model judge's verdict); a sample whose metadata contradicts the mapping is a
problem, never silently relabelled.  Inspect records
no cost.  Every problem is named by file, sample id and epoch and grouped by root cause:
a scorer the log does not have (listing those it has), a metadata field no sample has,
errored, unscored or invalidated samples, partial credit.  Logs that did not complete
(``started`` / ``cancelled`` / ``error``) or were invalidated are refused.  Each log must
carry the manifest hash in its eval metadata (``inspect eval ... --metadata
simlab_manifest_sha256=sha256:...``) unless analysed as registered after measurement; it
may say which arm it is (``--metadata simlab_arm=baseline``)."""
from __future__ import annotations

import json
import sys
import zipfile
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, StrictInt, ValidationError

from ..errors import EvidenceError, Problem, SampleErrors
from ..jsonfiles import TOO_DEEP
from simlab.hashing import file_hash
from ..trial_schema import TrialColumns
from ..trials import columns_from_places

MANIFEST_KEY = "simlab_manifest_sha256"
ARM_KEY = "simlab_arm"
_ZSTD = 93  # zip compression method id of zstandard


class _Model(BaseModel):
    model_config = ConfigDict(extra="ignore")


class _Dataset(_Model):
    name: str | None = None
    location: str | None = None
    samples: int | None = None
    sample_ids: list[str | int] | None = None


class _Config(_Model):
    epochs: int | None = None


class _Spec(_Model):
    eval_id: str = ""
    run_id: str = ""
    created: str
    task: str
    task_version: int | str = 0
    task_args: dict[str, Any] = {}
    dataset: _Dataset
    model: str
    metadata: dict[str, Any] | None = None
    config: _Config = _Config()
    revision: dict[str, Any] | None = None


class _Error(_Model):
    message: str = ""


class _Stats(_Model):
    started_at: str = ""
    completed_at: str = ""


class _Header(_Model):
    version: int = 2
    status: Literal["started", "success", "cancelled", "error"]
    eval: _Spec
    stats: _Stats = _Stats()
    error: _Error | None = None
    invalidated: bool = False
    log_updates: list[Any] | None = None


class _Score(_Model):
    value: Any = None
    metadata: dict[str, Any] | None = None


class _Sample(_Model):
    id: int | str
    epoch: StrictInt  # a trial index: "1" is refused, as trial rows refuse a string trial_index
    scores: dict[str, _Score] | None = None
    metadata: dict[str, Any] = {}
    error: _Error | None = None
    started_at: str | None = None
    total_time: float | None = None
    uuid: str | None = None
    invalidation: Any = None


def _label(value) -> bool | None:
    if isinstance(value, bool):
        return value
    if isinstance(value, (int, float)) and value in (0, 1):
        return bool(value)
    if isinstance(value, str) and value in ("C", "I", "N"):
        return value == "C"
    return None


def _zip(path: Path) -> zipfile.ZipFile:
    z = zipfile.ZipFile(path)
    if sys.version_info < (3, 14) and any(i.compress_type == _ZSTD for i in z.infolist()):
        try:
            import zipfile_zstd  # noqa: F401  (adds the zstandard codec to zipfile)
        except ImportError:
            raise EvidenceError(f"{path}: zstandard-compressed Inspect log; reading it needs zipfile-zstd "
                                "(installed with the inspect extra: pip install 'simlab[inspect]')") from None
    return z


# members Inspect writes when a run finishes, with header.json last: a log holding them but no
# header.json is damaged, not a run that is still going
_FINISHED = ("summaries.json", "reductions.json")


def _check_directory(z: zipfile.ZipFile) -> None:
    """Every member's name in the zip's directory must be the one its local header states
    (a damaged directory can rename ``header.json``; opening a member compares the two)."""
    for info in z.infolist():
        with z.open(info):
            pass


def _read(path: Path) -> tuple[_Header, list[tuple[str, bytes | dict]]]:
    """The header and the raw samples of one log (``.eval`` zip or ``.json``), each sample
    with the member (or list position) it came from."""
    try:
        if path.suffix == ".json":
            data = json.loads(path.read_bytes())
            samples = data.pop("samples", None) or []
            return _Header.model_validate(data), [(f"samples[{i}]", s) for i, s in enumerate(samples)]
        with _zip(path) as z:
            names = z.namelist()
            if "header.json" not in names:
                _check_directory(z)
                finished = [n for n in _FINISHED if n in names]
                if finished:
                    raise EvidenceError(f"{path}: damaged Inspect log: it holds a finished run's {finished[0]} but no "
                                        "header.json")
                status = "started" if any(n.startswith("_journal/") for n in names) else "unknown"
                return _Header.model_validate({"status": status, "eval": json.loads(
                    z.read("_journal/start.json")).get("eval")}) if status == "started" else None, []
            header = _Header.model_validate_json(z.read("header.json"))
            if header.status != "success":
                return header, []
            return header, [(n, z.read(n)) for n in names if n.startswith("samples/") and n.endswith(".json")]
    except (zipfile.BadZipFile, OSError, ValueError, KeyError, TypeError, RecursionError) as exc:
        if isinstance(exc, EvidenceError):  # said already (a ValueError too)
            raise
        if isinstance(exc, ValidationError):
            exc = "; ".join(f"{'.'.join(map(str, e['loc']))}: {e['msg']}" for e in exc.errors()[:3])
        elif isinstance(exc, RecursionError):
            exc = TOO_DEEP
        damaged = "damaged Inspect log" if isinstance(exc, zipfile.BadZipFile) else "not a readable Inspect log"
        raise EvidenceError(f"{path}: {damaged} ({exc})") from None


def log_info(path: Path, header: _Header, samples: list[_Sample]) -> dict:
    """The log's identity and times, as the packet records them."""
    e = header.eval
    times = sorted(s.started_at for s in samples if s.started_at)
    return {"file": path.name, "sha256": file_hash(path), "format": path.suffix.lstrip("."),
            "status": header.status, "eval_id": e.eval_id, "run_id": e.run_id, "created": e.created,
            "started_at": header.stats.started_at or None, "completed_at": header.stats.completed_at or None,
            "first_sample_started": times[0] if times else None, "last_sample_started": times[-1] if times else None,
            "task": e.task, "task_version": e.task_version, "task_args": e.task_args, "model": e.model,
            "dataset": {"name": e.dataset.name, "location": e.dataset.location, "samples": e.dataset.samples},
            "epochs": e.config.epochs, "samples": len(samples), "revision": e.revision,
            "manifest_sha256": (e.metadata or {}).get(MANIFEST_KEY), "arm_label": (e.metadata or {}).get(ARM_KEY),
            "edited": len(header.log_updates or []),
            "sample_uuids": sorted(s.uuid for s in samples if s.uuid)}


def read_log(path: str | Path) -> tuple[_Header, list[_Sample]]:
    """One complete log: refused when it did not finish, was invalidated or holds no samples."""
    path = Path(path)
    if not path.is_file():
        raise EvidenceError(f"no Inspect log at {path}")
    header, raw = _read(path)
    if header is None:
        raise EvidenceError(f"{path}: not an Inspect log (no header.json)")
    if header.status != "success":
        why = f": {header.error.message.splitlines()[0]}" if header.error and header.error.message else ""
        raise EvidenceError(f"{path}: the eval did not complete (status {header.status!r}{why}); a partial, "
                            "cancelled or failed run is not evidence")
    if header.invalidated:
        raise EvidenceError(f"{path}: the log is marked invalidated")
    samples = []
    for member, s in raw:
        try:
            samples.append(_Sample.model_validate(s) if isinstance(s, dict) else _Sample.model_validate_json(s))
        except ValidationError as exc:
            e = exc.errors()[0]
            field = ".".join(map(str, e["loc"]))
            raise EvidenceError(f"{path}: sample {member} does not follow Inspect's schema "
                                f"({f'{field}: ' if field else ''}{e['msg']})") from None
    if not samples:
        raise EvidenceError(f"{path}: the log holds no samples")
    samples.sort(key=lambda s: (s.epoch, str(s.id)))
    return header, samples


def _scorers(samples: list[_Sample]) -> list[str]:
    return sorted({name for s in samples for name in (s.scores or {})})


def _fields(samples: list[_Sample]) -> list[str]:
    return sorted({k for s in samples for k in s.metadata})


def choose_score(samples: list[_Sample], score: str | None, name: str) -> str:
    """The scorer to read: the one named, or the log's only one (else an error listing them)."""
    scorers = _scorers(samples)
    if score is None:
        if len(scorers) == 1:
            return scorers[0]
        raise EvidenceError(f"{name}: the log has {len(scorers)} scorers ({', '.join(map(repr, scorers)) or 'none'}); "
                            "choose the one whose value is the pass/fail label", option="score")
    if score not in scorers:
        raise EvidenceError(f"{name}: the log has no scorer {score!r}; it has "
                            f"{', '.join(map(repr, scorers)) or 'no scores at all'}", option="score")
    return score


def _metadata_value(sample: _Sample, field: str, name: str, what: str, problems: list[Problem], where: str):
    value = sample.metadata.get(field)
    if value is None:
        problems.append(Problem(where, f"no {what} field {field!r} in the sample metadata"))
        return None
    if isinstance(value, (dict, list)):
        problems.append(Problem(where, f"{what} field {field!r} is not a single value"))
        return None
    return str(value)


def _judge_label(meta: dict, judged: bool | None, score: str, where: str, problems: list[Problem]):
    """The sample's ``judge_labelled``: its score metadata's, else the mapping's (None: not stated)."""
    said = meta.get("judge_labelled")
    if said is None:
        return judged
    if not isinstance(said, bool):
        problems.append(Problem(f"{where} (value {said!r})", f"score {score!r} metadata judge_labelled is not true "
                                                               "or false"))
        return None
    if judged is not None and said != judged:
        problems.append(Problem(where, f"score {score!r} metadata says judge_labelled {str(said).lower()}, the "
                                       f"mapping says {str(judged).lower()} for every sample of that score"))
    return said


def log_rows(path: Path, samples: list[_Sample], arm: str, *, cluster_field: str, score: str,
             slice_field: str | None, manifest_hash: str | None,
             judge_labelled: bool | None = None) -> tuple[list, list[Problem]]:
    """``(where, row dict)`` for every good sample of one log and the problems of the others."""
    name = path.name
    for field, what in ((cluster_field, "cluster"), (slice_field, "slice")):
        if field is not None and not any(field in s.metadata for s in samples):
            raise EvidenceError(f"{name}: no sample has the {what} field {field!r} in its metadata; the samples' "
                                f"metadata fields are {', '.join(map(repr, _fields(samples))) or 'none'}",
                                option=f"{what}_field")
    rows, problems = [], []
    for s in samples:
        where = f"{name} sample {s.id!r} epoch {s.epoch}"
        if s.error is not None:
            problems.append(Problem(where, "errored samples (an error is not a label)"))
            continue
        if s.invalidation is not None:
            problems.append(Problem(where, "invalidated samples"))
            continue
        sc = (s.scores or {}).get(score)
        if sc is None:
            problems.append(Problem(where, f"unscored samples (no {score!r} score: a missing label is never a pass "
                                           "or a fail)"))
            continue
        passed = _label(sc.value)
        if passed is None:
            problems.append(Problem(f"{where} (value {sc.value!r})", f"score {score!r} is not a pass/fail label "
                                    "(C/I, true/false, 1/0): partial credit or a numeric grade cannot be paired"))
            continue
        cluster = _metadata_value(s, cluster_field, name, "cluster", problems, where)
        slice_value = _metadata_value(s, slice_field, name, "slice", problems, where) if slice_field else None
        judged = _judge_label(sc.metadata or {}, judge_labelled, score, where, problems)
        if cluster is None or (slice_field and slice_value is None):
            continue
        rows.append((where, {"case_id": str(s.id), "trial_index": s.epoch, "cluster_id": cluster, "arm": arm,
                             "passed": passed, "failed_checks": (sc.metadata or {}).get("failed_checks", []),
                             "latency_ms": None if s.total_time is None else float(s.total_time) * 1000.0,
                             "cost": None, "cost_provenance": "absent", "manifest_sha256": manifest_hash,
                             "timestamp": s.started_at, "slice": slice_value, "judge_labelled": judged}))
    return rows, problems


def read_inspect_pair(baseline: str | Path, candidate: str | Path, *, cluster_field: str, score: str | None,
                      slice_field: str | None = None, check_logs=None,
                      judge_labelled: bool | None = None) -> tuple[TrialColumns, list[dict]]:
    """Both logs as one validated set of trial columns, and each log's identity and times.
    ``judge_labelled``: the score is (True) or is not (False) a model judge's verdict, for
    every sample (None: as each sample's score metadata says, else not stated).
    ``check_logs(infos)`` runs on the two logs' identities before any sample is judged: the
    wrong log is a root cause that comes before its samples' problems."""
    logs = [(Path(baseline), "baseline", *read_log(baseline)), (Path(candidate), "candidate", *read_log(candidate))]
    infos = [{**log_info(path, header, samples), "role": f"inspect_{arm}", "arm": arm}
             for path, arm, header, samples in logs]
    if check_logs is not None:
        check_logs(infos)
    rows, problems = [], []
    for (path, arm, header, samples), info in zip(logs, infos):
        chosen = choose_score(samples, score, path.name)
        r, p = log_rows(path, samples, arm, cluster_field=cluster_field, score=chosen, slice_field=slice_field,
                        manifest_hash=info["manifest_sha256"], judge_labelled=judge_labelled)
        rows += r
        problems += p
        info["score"] = chosen
    source = f"Inspect logs {Path(baseline).name}, {Path(candidate).name}"
    if problems:
        raise SampleErrors(source, problems)
    return columns_from_places(rows, source), infos
