"""Run the evidence path and write the experiment packet.

A packet holds the manifest, references to the raw artifacts (path + sha256 of their
exact bytes: a trial file; one trial file per arm; two Inspect AI logs or two
lm-evaluation-harness samples files and the adapter mapping; the registered population's
case list), whether the plan was declared registered after measurement, the test and
prerequisite receipts, and the receipt recomputed from all of them.  ``replay`` rebuilds
the receipt from the same inputs and must arrive at the same bytes.

Order of the checks: the population file and the output location come first (no log is
read for a run that cannot be written), then the logs (identity, times, samples), the
pairs, the population membership, the comparison and the qualification."""
from __future__ import annotations

import datetime as dt
import json
import os
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from .errors import EvidenceError
from .jsonfiles import write_json
from .manifest import Manifest
from .population import Population, check_membership, read_population
from .provenance import check_logs, measurement
from .trial_schema import TrialColumns
from .trials import concat_columns, read_trial_file, trial_format

if TYPE_CHECKING:  # the comparison's modules are imported when the trials have been read
    from .receipt import PrerequisiteReceipt, TestReceipt

PACKET_KIND = "simlab.evidence.packet"
PACKET_SCHEMA_VERSION = "1"  # what run writes and replay reads
SIDE_ROLES = ("population", "judge_calibration")  # inputs beside the trials
PAIRED_ROLES = {"inspect": ("inspect_baseline", "inspect_candidate"), "lm-eval": ("lmeval_baseline", "lmeval_candidate"),
                "trials": ("trials_baseline", "trials_candidate")}


def trial_artifacts(path: str | Path) -> list[dict]:
    return [{"role": "trials", "format": trial_format(path), "path": str(path)}]


def paired_artifacts(kind: str, baseline: str | Path, candidate: str | Path) -> list[dict]:
    """One input per arm: ``kind`` inspect, lm-eval or trials (JSONL / CSV)."""
    b, c = PAIRED_ROLES[kind]
    fmt = (lambda p: trial_format(p)) if kind == "trials" else (lambda p: kind)
    return [{"role": b, "format": fmt(baseline), "path": str(baseline)},
            {"role": c, "format": fmt(candidate), "path": str(candidate)}]


def inspect_artifacts(baseline: str | Path, candidate: str | Path) -> list[dict]:
    return paired_artifacts("inspect", baseline, candidate)


def population_artifact(path: str | Path) -> dict:
    return {"role": "population", "format": Path(path).suffix.lstrip(".") or "jsonl", "path": str(path)}


def artifact_format(role: str, path: str | Path) -> str | None:
    """The ``format`` the writers above record for an input of ``role`` at ``path`` (None for a
    role they do not write): what a packet's stated format must say."""
    if role == "trials" or role in PAIRED_ROLES["trials"]:
        return trial_format(path)
    if role in SIDE_ROLES:
        return Path(path).suffix.lstrip(".") or "jsonl"
    return next((kind for kind, roles in PAIRED_ROLES.items() if role in roles), None)


def calibration_artifact(path: str | Path) -> dict:
    """The judge's calibration file of paired labels (``evidence.judge``)."""
    return {"role": "judge_calibration", "format": Path(path).suffix.lstrip(".") or "jsonl", "path": str(path)}


def load_calibration(artifacts: list[dict], base: Path, manifest: Manifest):
    """``(counts or None, file sha256 or None)``: the registered judge calibration."""
    art = next((a for a in artifacts if a["role"] == "judge_calibration"), None)
    if manifest.judge is None:
        if art is not None:
            raise EvidenceError("judge: a judge calibration file was given, but the manifest registers no judge",
                                option="judge_calibration")
        return None, None
    from .judge import registered_calibration
    return registered_calibration(manifest.judge, base / art["path"] if art else None)


def check_holdout_use(manifest: Manifest, use: dict | None, exploratory: bool = False) -> dict | None:
    """The holdout access this run took (from the ledger at run time, from the packet on
    replay), checked against the registered holdout.  Only confirmatory accesses count towards
    ``max_uses``; a confirmatory access beyond it is stated as such (the receipt holds), never
    refused: the run happened and the ledger counts it.  Exploratory accesses are stated beside."""
    h = manifest.holdout
    if h is None:
        if use is not None:
            raise EvidenceError("holdout: a holdout use is recorded, but the manifest registers no holdout")
        return None
    numbers = ("access", "confirmatory", "exploratory")
    if not isinstance(use, dict) or not all(type(use.get(k)) is int for k in numbers):
        raise EvidenceError(f"holdout: the manifest registers sealed holdout {h.id!r}; the run has no recorded access "
                            "of it (runs against a holdout are counted in the ledger)", option="ledger")
    purpose = "exploratory" if exploratory else "confirmatory"
    if use.get("purpose", purpose) != purpose:
        raise EvidenceError(f"holdout: the ledger recorded this use as {use.get('purpose')}, the run is {purpose}")
    if (use.get("max_uses") != h.max_uses or use[purpose] < 1 or min(use[k] for k in numbers) < 0
            or use["confirmatory"] + use["exploratory"] != use["access"]):
        raise EvidenceError(f"holdout.max_uses: recorded access {use['access']} (confirmatory {use['confirmatory']}, "
                            f"exploratory {use['exploratory']}) of at most {use.get('max_uses')} confirmatory does not "
                            f"belong to the registered holdout (at most {h.max_uses} confirmatory accesses)")
    return {"id": h.id, "sha256": h.sha256, "purpose": purpose, "access": use["access"],
            "confirmatory_accesses": use["confirmatory"], "exploratory_accesses": use["exploratory"],
            "max_uses": h.max_uses, "beyond_maximum": purpose == "confirmatory" and use["confirmatory"] > h.max_uses,
            "ledger_seq": use.get("seq"), "ledger_entry": use.get("entry_sha256")}


def _trial_file_info(path: Path, digest: str, arm: str) -> dict:
    return {"file": path.name, "sha256": digest, "format": trial_format(path), "role": f"trials_{arm}", "arm": arm,
            "records_identity": False}


def _per_arm_trials(b: Path, c: Path) -> tuple[TrialColumns, dict[str, str], list[dict]]:
    """Two trial files, one per arm: each file's rows must all be of its arm."""
    read = [read_trial_file(b), read_trial_file(c)]
    if read[0][1] == read[1][1]:
        raise EvidenceError(f"{b.name} (baseline) and {c.name} (candidate) are the same file (identical bytes): one "
                            "run given as both arms")
    out, hashes, infos = [], {}, []
    for (path, arm), (cols, digest) in zip(((b, "baseline"), (c, "candidate")), read):
        wrong = int(np.count_nonzero(cols.candidate != (arm == "candidate")))
        if wrong:
            other = "candidate" if arm == "baseline" else "baseline"
            swapped = " (swapped arms?)" if wrong == len(cols) else ""
            raise EvidenceError(f"{path.name} was given as the {arm} but {wrong} of its {len(cols)} trials say arm "
                                f"{other!r}{swapped}; baseline file {b.name}, candidate file {c.name}")
        out.append(cols)
        hashes[f"trials_{arm}"] = digest
        infos.append(_trial_file_info(path, digest, arm))
    return concat_columns(out[0], out[1], f"trials {b.name}, {c.name}"), hashes, infos


def load_trials(artifacts: list[dict], adapter: dict | None, base: Path,
                checks=None) -> tuple[TrialColumns, dict[str, str], list[dict]]:
    """Read the raw trial artifacts into validated columns; returns them, each file's sha256
    and each log's identity and times (none for a single trial file).  ``checks(infos)``
    judges two logs' identities before their samples."""
    paths = {a["role"]: (base / a["path"]) for a in artifacts if a["role"] not in SIDE_ROLES}
    for role, p in paths.items():
        if not p.is_file():
            raise EvidenceError(f"artifact {role}: no file at {p}")
    roles = tuple(sorted(paths))
    if roles == ("trials",):
        cols, digest = read_trial_file(paths["trials"])
        return cols, {"trials": digest}, []
    kind = next((k for k, r in PAIRED_ROLES.items() if roles == r), None)
    if kind is None:
        raise EvidenceError(f"unknown artifact roles {list(roles)}: expected trials, or a baseline and a candidate "
                            "input of one kind (inspect, lm-eval, trials)")
    b, c = (paths[r] for r in PAIRED_ROLES[kind])
    if b.resolve() == c.resolve():
        raise EvidenceError(f"{b} was given as both the baseline and the candidate")
    if kind == "trials":
        return _per_arm_trials(b, c)
    mapping = adapter or {}
    if mapping.get("name") != kind:
        raise EvidenceError(f"{kind} artifacts need the {kind} adapter mapping (cluster field, score)")
    if kind == "inspect":
        from .adapters.inspect import read_inspect_pair
        cols, infos = read_inspect_pair(b, c, cluster_field=mapping["cluster_field"], score=mapping.get("score"),
                                        slice_field=mapping.get("slice_field"), check_logs=checks,
                                        judge_labelled=mapping.get("judge_labelled"))
    else:
        from .adapters.lmeval import read_lmeval_pair
        cols, infos = read_lmeval_pair(b, c, cluster_field=mapping["cluster_field"], score=mapping.get("score"),
                                       slice_field=mapping.get("slice_field"), filter_name=mapping.get("filter"),
                                       check_logs=checks)
    return cols, {i["role"]: i["sha256"] for i in infos}, infos


def load_population(artifacts: list[dict], base: Path, manifest: Manifest) -> Population | None:
    """The registered case list, when given: its identity must be the manifest's population_hash."""
    art = next((a for a in artifacts if a["role"] == "population"), None)
    if art is None:
        return None
    population = read_population(base / art["path"])
    if population.sha256 != manifest.population_hash:
        raise EvidenceError(f"{art['path']}: this case list's identity is {population.sha256}, but the manifest "
                            f"registers population_hash {manifest.population_hash}: not the registered population",
                            option="population")
    return population


def evaluate(*, manifest: Manifest, artifacts: list[dict], adapter: dict | None, base: Path,
             tests: tuple[TestReceipt, ...], prerequisites: tuple[PrerequisiteReceipt, ...],
             qualification_dir: Path | None, trusted: dict | None, issued_at: dt.datetime,
             registered_after: bool = False, holdout_use: dict | None = None, exploratory: bool = False) -> dict:
    """The receipt, recomputed from the raw artifacts (errors in the evidence raise ValueError).
    The statistics' modules are imported only once the inputs have been read: a refused input
    exits without them.  ``exploratory``: the run was declared exploratory (lab_only at most)."""
    holdout = check_holdout_use(manifest, holdout_use, exploratory)
    population = load_population(artifacts, base, manifest)
    calibration, calibration_file = load_calibration(artifacts, base, manifest)
    cols, hashes, logs = load_trials(artifacts, adapter, base,
                                     checks=lambda infos: check_logs(manifest, infos, registered_after))
    if calibration_file is not None:
        hashes["judge_calibration"] = calibration_file
    record, findings = measurement(manifest, cols, logs, registered_after, cols.source, decided=issued_at)
    from .comparison import compare
    from .qualification_check import check_qualification, default_directory
    from .experiment import pair_trials
    from .receipt import build_receipt

    experiment = pair_trials(cols, manifest, registered_after=registered_after)
    pop = None
    if population is not None:
        check_membership(population, experiment.case_names, experiment.cluster_names[experiment.case_cluster],
                         experiment.case_slice, cols.source)
        hashes["population"] = population.file_sha256
        pop = {"sha256": population.sha256, "cases": population.cases, "checked": True}
    comparison = compare(experiment, manifest, calibration)
    qdir = Path(qualification_dir) if qualification_dir else default_directory()
    qualification = check_qualification(manifest, experiment, directory=qdir, now=issued_at, trusted=trusted,
                                        slices=comparison.get("slices"), calibration=calibration)
    return build_receipt(manifest=manifest, experiment=experiment, comparison=comparison,
                         qualification=qualification, tests=tests, prerequisites=prerequisites, raw_artifacts=hashes,
                         issued_at=issued_at, measurement=record, measurement_findings=findings, population=pop,
                         holdout=holdout, exploratory=exploratory)


def _relative(path: str | Path, to: Path) -> str:
    p = Path(path).resolve()
    try:
        return os.path.relpath(p, to.resolve())
    except ValueError:  # another drive
        return str(p)


def prepare_output(out: str | Path, overwrite: bool = False) -> Path:
    """The packet's folder, created when missing (a file in the way is named as the problem)."""
    out = Path(out)
    if os.path.lexists(out) and not overwrite:  # a symbolic link to nothing too: writing would follow it
        raise EvidenceError(f"{out} exists; a packet is never overwritten (choose a new path)", option="out")
    folder = out.parent if str(out.parent) else Path(".")
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except (FileExistsError, NotADirectoryError):
        raise EvidenceError(f"cannot write the packet {out}: {folder} is not a folder", option="out") from None
    return folder


def run_experiment(*, manifest: Manifest, artifacts: list[dict], out: str | Path, adapter: dict | None = None,
                   tests: tuple[TestReceipt, ...] = (), prerequisites: tuple[PrerequisiteReceipt, ...] = (),
                   qualification_dir: str | Path | None = None, trusted: dict | None = None,
                   now: dt.datetime | None = None, overwrite: bool = False,
                   registered_after: bool = False, ledger: str | Path | None = None,
                   exploratory: bool = False) -> dict:
    """Evaluate and write the packet to ``out`` (an existing packet is never overwritten;
    a missing folder is created first, so the artifact paths are relative to a real one).
    A manifest registering a sealed holdout needs ``ledger``: the run records its access
    there, with its kind, before any trial is read; a confirmatory access beyond the
    registered maximum of confirmatory accesses is counted too and the receipt holds, saying
    so.  ``exploratory``: the run is declared exploratory -- marked in the packet, the
    ledger's access and the receipt (which states both counts), and capped at lab_only; it
    does not count towards the maximum."""
    out = Path(out)
    base = prepare_output(out, overwrite)
    for a in artifacts:
        if not Path(a["path"]).is_file():
            raise EvidenceError(f"artifact {a['role']}: no file at {a['path']}")
    issued_at = (now or dt.datetime.now(dt.timezone.utc)).replace(microsecond=0)
    rel = [{**a, "path": _relative(a["path"], base)} for a in artifacts]
    # read through the paths as given (relative to the working folder), so that an error names
    # the file the user typed, not its path from the packet's folder (replay reads ``rel``)
    given = [{**a, "path": str(a["path"])} for a in artifacts]
    load_calibration(given, Path(), manifest)  # a wrong or missing calibration is refused before a holdout use is taken
    use = _take_holdout_use(manifest, ledger, issued_at, exploratory)
    receipt = evaluate(manifest=manifest, artifacts=given, adapter=adapter, base=Path(), tests=tests,
                       prerequisites=prerequisites, qualification_dir=qualification_dir, trusted=trusted,
                       issued_at=issued_at, registered_after=registered_after, holdout_use=use,
                       exploratory=exploratory)
    for a in rel:
        a["sha256"] = receipt["components"]["raw_artifacts"][a["role"]]
    packet = {"schema_version": PACKET_SCHEMA_VERSION, "kind": PACKET_KIND, "manifest": manifest.canonical(),
              "artifacts": rel,
              "adapter": adapter, "registered_after_measurement": bool(registered_after),
              "exploratory": bool(exploratory),
              "tests": [t.model_dump(mode="json") for t in tests],
              "prerequisites": [p.model_dump(mode="json") for p in prerequisites], "receipt": receipt}
    if use is not None:
        packet["holdout_use"] = use
    write_json(out, packet, overwrite=overwrite)
    return packet


def _take_holdout_use(manifest: Manifest, ledger, issued_at: dt.datetime, exploratory: bool) -> dict | None:
    h = manifest.holdout
    if h is None:
        return None
    if ledger is None:
        raise EvidenceError(f"holdout: the manifest registers sealed holdout {h.id!r} (at most {h.max_uses} "
                            "confirmatory accesses); give the ledger that counts its accesses", option="ledger")
    from .ledger import record_use
    return record_use(ledger, holdout_id=h.id, holdout_sha256=h.sha256, max_uses=h.max_uses,
                      experiment_id=manifest.experiment_id, manifest_sha256=manifest.sha256, now=issued_at,
                      purpose="exploratory" if exploratory else "confirmatory")


def detect_kind(path: str | Path) -> str:
    """The kind of one arm's input from its name: an Inspect log (``.eval``, ``.json``), an
    lm-evaluation-harness samples file (``samples_*.jsonl``) or a trial file (``.jsonl``/``.csv``)."""
    p = Path(path)
    suffix = p.suffix.lower()
    if suffix in (".eval", ".json"):
        return "inspect"
    if suffix in (".jsonl", ".ndjson") and p.name.startswith("samples_"):
        return "lm-eval"
    if suffix in (".jsonl", ".ndjson", ".csv"):
        return "trials"
    raise EvidenceError(f"{p}: cannot tell the input kind from the name (.eval/.json Inspect log, samples_*.jsonl "
                        "lm-evaluation-harness output, .jsonl/.csv trial records)", option="format")
