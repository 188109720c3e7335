"""What ``simlab evidence run`` and ``simlab compare`` share: their options, the manifest and
component arguments, and library refusals turned into usage errors that name the flag and
the next step."""
from __future__ import annotations

import datetime as dt
import json

from simlab.cli._output import UsageError


def parse_time(text: str | None, flag: str) -> dt.datetime | None:
    if text is None:
        return None
    try:
        t = dt.datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        raise UsageError(f"{flag}: not an ISO 8601 time: {text!r}", flag) from None
    if t.tzinfo is None:
        raise UsageError(f"{flag}: {text!r} needs a time zone, e.g. 2026-12-01T12:00:00Z", flag)
    return t


def trusted_keys(paths: list[str] | None) -> dict | None:
    if not paths:
        return None
    from simlab import signing
    try:
        return signing.trusted_keys(paths)
    except (OSError, ValueError) as exc:
        raise UsageError(f"--trusted: {exc}", "--trusted") from None


def component_receipts(paths: list[str] | None):
    if not paths:
        return (), ()
    from evidence import PrerequisiteReceipt, read_json, TestReceipt
    tests, pres = [], []
    for path in paths or []:
        data = read_json(path)
        for item in data if isinstance(data, list) else [data]:
            kind = item.get("kind") if isinstance(item, dict) else None
            model = {"test": TestReceipt, "prerequisite": PrerequisiteReceipt}.get(kind)
            if model is None:
                raise UsageError(f"--component {path}: each entry needs kind 'test' or 'prerequisite'", "--component")
            try:
                (tests if kind == "test" else pres).append(model.model_validate_json(json.dumps(item)))
            except ValueError as exc:  # pydantic ValidationError: name the file
                raise UsageError(f"--component {path}: {exc}".splitlines()[0], "--component") from None
    return tuple(tests), tuple(pres)


# what a library refusal's ``option`` means on this command line: (flag, what to do next)
OPTION_HINTS = {
    "registered_after_measurement": ("--registered-after-measurement", "to analyse logs or trials measured before "
                                     "the manifest existed, re-run with --registered-after-measurement: the receipt "
                                     "then says so and authority is capped at lab_only"),
    "score": ("--score", "name the scorer (metric) that gives the pass/fail label with --score"),
    "cluster_field": ("--cluster-field", "name the sample-metadata field that identifies the cluster with "
                                         "--cluster-field"),
    "slice_field": ("--manifest", "the manifest's protected_slices.field must be a sample-metadata field"),
    "population": ("--population", "give the registered case list with --population (its identity, printed by "
                                   "`simlab evidence hash FILE`, must be the manifest's population_hash)"),
    "out": ("--out", "choose another --out"),
    "judge_calibration": ("--judge-calibration", "give the registered judge calibration file (its sha256 is the "
                                                 "manifest's judge.calibration_sha256) with --judge-calibration"),
    "ledger": ("--ledger", "a run against a sealed holdout is counted in the ledger given with --ledger"),
    "manifest": ("--manifest", "fix the manifest"),
    "filter": ("--filter", "choose the lm-evaluation-harness filter with --filter"),
    "format": ("--format", "say which kind of input it is with --format"),
}


def refused(exc) -> UsageError:
    """A library refusal as a usage error naming the flag and the next step."""
    flag, hint = OPTION_HINTS.get(getattr(exc, "option", None) or "", (None, None))
    return UsageError(f"{exc} -- {hint}" if hint else str(exc), flag)


def run_evidence(**kw) -> dict:
    """``evidence.packet.run_experiment`` with its refusals turned into usage errors."""
    from evidence import EvidenceError, run_experiment
    try:
        return run_experiment(**kw)
    except EvidenceError as exc:
        raise refused(exc) from None


def load_manifest_arg(path: str):
    from pathlib import Path

    if not Path(path).exists():  # before the manifest model (pydantic) loads: a wrong path answers at once
        raise UsageError(f"no manifest at {path}", "--manifest")
    from evidence import load_manifest
    try:
        return load_manifest(path)
    except ValueError as exc:
        raise UsageError(str(exc), "--manifest") from None


def adapter_of(kind: str, args, manifest) -> dict | None:
    """The mapping from log fields to trial fields (Inspect and lm-eval inputs)."""
    if kind == "trials":
        return None
    if not args.cluster_field:
        raise UsageError(f"{kind} inputs need --cluster-field (the sample-metadata / doc field that identifies the "
                         "cluster, e.g. the customer)", "--cluster-field")
    slices = manifest.protected_slices
    out = {"name": kind, "cluster_field": args.cluster_field, "score": args.score,
           "slice_field": slices.field if slices else None}
    if kind == "lm-eval":
        out["filter"] = getattr(args, "filter", None)
    if getattr(args, "judge_scored", False):
        if kind != "inspect":
            raise UsageError("--judge-scored applies to Inspect logs (a model-graded scorer's verdicts)",
                             "--judge-scored")
        out["judge_labelled"] = True
    return out


def common_artifacts(artifacts: list[dict], args) -> list[dict]:
    from evidence import calibration_artifact, population_artifact
    return (artifacts + ([population_artifact(args.population)] if args.population else [])
            + ([calibration_artifact(args.judge_calibration)] if args.judge_calibration else []))


def report_ledger(args, payload: dict) -> None:
    from evidence import ledger
    if args.ledger:
        payload["ledger"] = ledger.append(args.ledger, payload["receipt"])


def add_run_options(p) -> None:
    """Options ``evidence run`` and ``compare`` share."""
    p.add_argument("--manifest", required=True, help="the pinned manifest (JSON)")
    p.add_argument("--cluster-field", help="Inspect / lm-eval: sample-metadata (doc) field naming the cluster")
    p.add_argument("--score", help="Inspect / lm-eval: scorer (metric) whose value C/I, 1/0, true/false is passed "
                                   "(default: the log's only one)")
    p.add_argument("--filter", help="lm-eval: the filter whose rows to read, when the samples have several")
    p.add_argument("--judge-scored", action="store_true",
                   help="Inspect: the score is a model judge's verdict (every trial judge-labelled; a score's own "
                        "metadata judge_labelled may also say so per sample)")
    p.add_argument("--population", help="the registered case list (JSONL/CSV/JSON of case_id, cluster_id); its "
                                        "identity must be the manifest's population_hash (without it: lab_only)")
    p.add_argument("--registered-after-measurement", action="store_true",
                   help="the logs were written before the manifest: analyse them, say so, cap authority at lab_only")
    p.add_argument("--exploratory", action="store_true",
                   help="declare the run exploratory: marked in the receipt (and its holdout access, which does not "
                        "count towards the holdout's maximum of confirmatory accesses), lab_only at most")
    p.add_argument("--component", action="append", help="test / prerequisite receipt JSON (repeatable)")
    p.add_argument("--qualification-dir", help="where the pinned qualification record lives (default: shipped)")
    p.add_argument("--trusted", action="append", help="trusted public key file or directory (repeatable)")
    p.add_argument("--judge-calibration", help="the judge's calibration file of paired labels (JSONL/CSV of item_id, "
                                               "set, human_passed, judge_passed) the manifest's judge block pins")
    p.add_argument("--ledger", help="append the receipt to this SQLite ledger (a run against a registered sealed "
                                    "holdout also records its access there, with its kind; a confirmatory run past "
                                    "the maximum holds)")
    p.add_argument("--now", help="issue time (ISO 8601 with zone; default: now)")
