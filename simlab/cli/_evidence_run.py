"""What ``simlab evidence run`` and ``simlab compare`` share: their options, the manifest and
component arguments, and library refusals turned into usage errors that name the flag and
the next step."""
from __future__ import annotations

import datetime as dt
import json
import os
import re
from pathlib import Path

from simlab.cli._args import nonempty_path
from simlab.cli._output import UsageError


def qualification_folder(text: str) -> str:
    """``--qualification-dir``, an argparse type: a folder that is there.  A missing one was read as
    a folder without records: the run went on and its receipt said only "record not found"."""
    import argparse

    nonempty_path(text)
    if not os.path.isdir(text):
        there = "is not a directory" if os.path.exists(text) else "no such directory"
        raise argparse.ArgumentTypeError(f"{text}: {there} (the folder of qualification records the manifest's "
                                         "pinned record is read from; leave the option out for the shipped ones)")
    return text


def parse_time(text: str | None, flag: str) -> dt.datetime | None:
    if text is None:
        return None
    try:
        t = dt.datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        raise UsageError(f"{flag}: not an ISO 8601 time: {text!r}", flag) from None
    if t.tzinfo is None:
        raise UsageError(f"{flag}: {text!r} needs a time zone, e.g. 2026-12-01T12:00:00Z", flag)
    # validity windows and clock skews are added to and compared with this time: keep a year's
    # room either side of what Python's datetime holds (9999-12-31 plus a window overflows)
    try:
        utc = t.astimezone(dt.timezone.utc)
    except OverflowError:
        utc = None
    if utc is None or not 2 <= utc.year <= 9998:
        raise UsageError(f"{flag}: {text!r} is out of range (a time from year 2 to 9998, in UTC)", flag)
    return t


def trusted_keys(paths: list[str] | None) -> dict | None:
    if not paths:
        return None
    from simlab import signing
    keys = {}
    for path in paths:  # one file at a time, so a refusal names the file (a directory holds several)
        p = Path(path)
        if not p.exists():
            raise UsageError(f"--trusted {path}: no file or directory there", "--trusted")
        found = sorted(p.glob("*.pub")) if p.is_dir() else [p]
        if not found:  # a trust set with no key in it verifies nothing: bad input, not a verdict
            raise UsageError(f"--trusted {path}: a directory with no *.pub public key in it", "--trusted")
        for f in found:
            try:
                keys.update(signing.trusted_keys([f]))
            except (OSError, ValueError) as exc:
                why = str(exc).removeprefix(f"{f}: ").splitlines()[0]
                raise UsageError(f"--trusted {f}: not an Ed25519 public key in PEM format ({why})",
                                 "--trusted") from None
    return keys


def sha256_arg(value: str, flag: str) -> str:
    """A ``sha256:<64 hex>`` hash given on the command line (a receipt or component hash)."""
    from simlab.hashing import SHA256_PATTERN

    if not re.match(SHA256_PATTERN, value):
        raise UsageError(f"{flag}: expected sha256: and 64 lowercase hex digits, got {value!r}", flag)
    return value


def check_out(path: str | None, flag: str = "--out", what: str = "packet") -> None:
    """Refuse the path a new file (``what``) goes to, before any work: empty, already there (a
    dangling symbolic link too: writing would follow it), or below something not a folder."""
    if path is None:
        return
    if not path.strip():
        raise UsageError(f"{flag}: an empty path; name the {what} file to write", flag)
    target = Path(path)
    if os.path.lexists(target):
        there = "is a symbolic link to nothing" if not target.exists() else "exists"
        raise UsageError(f"{flag} {path} {there}; a {what} is never overwritten (choose a new path)", flag)
    folder = nearest_existing(target.parent)
    if not folder.is_dir():
        raise UsageError(f"{flag} {path}: {folder} is not a directory", flag)


def nearest_existing(path: Path) -> Path:
    """``path`` or its nearest ancestor that is there (a link to nothing counts): where a
    missing folder would be created."""
    while not os.path.lexists(path):
        path = path.parent
    return path


def check_paths(args, inputs: dict[str | None, str]) -> dict[str, str]:
    """Before any work (exit 2 naming the flag): ``--out``, ``--ledger`` and every input file
    (``inputs``: path -> the flag or argument that named it; the side inputs are added).
    Returns the input files, for :func:`refused` to name the one a refusal is about."""
    check_out(args.out)
    check_ledger(args.ledger, args.out)
    given = {**inputs, args.population: "--population", args.judge_calibration: "--judge-calibration"}
    files = {path: flag for path, flag in given.items() if path is not None}
    for path, flag in files.items():
        if not Path(path).is_file():
            raise UsageError(f"{flag} {path or repr(path)}: no file there", flag)
    return files


def check_ledger(path: str | None, out: str | None) -> None:
    """``--ledger`` before any work: a ledger, an empty file or a new file (another program's
    database, a text file, a directory, the packet's own path are refused)."""
    if path is None:
        return
    if not path.strip():
        raise UsageError("--ledger: an empty path; name the SQLite ledger file", "--ledger")
    if out is not None and Path(path).resolve() == Path(out).resolve():
        raise UsageError(f"--ledger {path} is the packet's path (--out); the ledger is a separate SQLite file",
                         "--ledger")
    from evidence import ledger
    why = ledger.problem(path)
    if why is not None:
        raise UsageError(f"--ledger {path}: {why}", "--ledger")


def component_receipts(paths: list[str] | None):
    if not paths:
        return (), ()
    from evidence import PrerequisiteReceipt, read_json, TestReceipt
    tests, pres = [], []
    for path in paths or []:
        try:
            data = read_json(path)
        except ValueError as exc:
            raise UsageError(f"--component {exc}", "--component") from None
        for item in data if isinstance(data, list) else [data]:
            kind = item.get("kind") if isinstance(item, dict) else None
            model = {"test": TestReceipt, "prerequisite": PrerequisiteReceipt}.get(kind)
            if model is None:
                raise UsageError(f"--component {path}: each entry needs kind 'test' or 'prerequisite'", "--component")
            try:
                (tests if kind == "test" else pres).append(model.model_validate_json(json.dumps(item)))
            except ValueError as exc:  # pydantic ValidationError: name the file, the field and why
                first = exc.errors()[0] if hasattr(exc, "errors") and exc.errors() else None
                why = f"{'.'.join(map(str, first['loc'])) or kind}: {first['msg']}" if first else exc
                raise UsageError(f"--component {path}: {why}".splitlines()[0], "--component") from None
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


def _field_of_file(exc, files: dict[str | None, str]) -> str | None:
    """The flag or argument that named the file a refusal is about: its ``source`` (bad rows),
    else the file its message starts with (a path, or a file name alone)."""
    where = getattr(exc, "source", None) or str(exc).split(" ", 1)[0].rstrip(":,")
    try:
        named = Path(where).resolve()
        hits = {flag for path, flag in files.items() if named == Path(path).resolve() or where == Path(path).name}
    except (OSError, ValueError, RuntimeError):  # not a path at all
        return None
    return hits.pop() if where and len(hits) == 1 else None


def refused(exc, files: dict[str | None, str] | None = None) -> UsageError:
    """A library refusal as a usage error naming the flag and the next step; ``files`` (path ->
    flag) names the flag of a refusal about one input file that no option addresses."""
    flag, hint = OPTION_HINTS.get(getattr(exc, "option", None) or "", (None, None))
    if flag is None and files:
        flag = _field_of_file(exc, files)
    return UsageError(f"{exc} -- {hint}" if hint else str(exc), flag)


def run_evidence(files: dict[str | None, str] | None = None, **kw) -> dict:
    """``evidence.packet.run_experiment`` with its refusals turned into usage errors (``files``:
    :func:`refused`)."""
    from evidence import EvidenceError, run_experiment
    try:
        return run_experiment(**kw)
    except EvidenceError as exc:
        raise refused(exc, files) from None


def load_manifest_arg(path: str):
    if not Path(path).exists():  # before the manifest model (pydantic) loads: a wrong path answers at once
        raise UsageError(f"no manifest at {path}", "--manifest")
    from evidence import load_manifest
    try:
        return load_manifest(path)
    except ValueError as exc:
        raise UsageError(str(exc), "--manifest") from None


# the options that read a log (dest, flag, the input kinds it applies to, what a trial file has instead)
LOG_OPTIONS = (
    ("score", "--score", ("inspect", "lm-eval"), "each trial row's pass/fail is its `passed` field"),
    ("cluster_field", "--cluster-field", ("inspect", "lm-eval"), "each trial row names its cluster in `cluster_id`"),
    ("filter", "--filter", ("lm-eval",), "a trial file has no filters"),
    ("judge_scored", "--judge-scored", ("inspect",),
     "each trial row states `judge_labelled` itself (true when a model judge gave `passed`)"),
)
_KIND_WORDS = {"inspect": "Inspect logs", "lm-eval": "lm-eval logs", "trials": "trial files (--trials / --format trials)"}


def check_log_options(kind: str, args) -> None:
    """Refuse an option that reads logs on input it does not apply to (exit 2 naming it): given with
    trial files, ``--judge-scored``, ``--score``, ``--cluster-field`` and ``--filter`` were ignored
    silently -- the run analysed the trials as if they had not been given."""
    for dest, flag, kinds, instead in LOG_OPTIONS:
        value = getattr(args, dest, None)
        if value is None or value is False or kind in kinds:
            continue
        applies = " / ".join(_KIND_WORDS[k].removesuffix(" logs") for k in kinds) + " logs"
        why = f"; {instead}" if kind == "trials" else ""
        raise UsageError(f"{flag} applies to {applies}, not to {_KIND_WORDS[kind]}{why}", flag)


def adapter_of(kind: str, args, manifest) -> dict | None:
    """The mapping from log fields to trial fields (Inspect and lm-eval inputs)."""
    check_log_options(kind, args)
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
    if getattr(args, "judge_scored", False):   # Inspect logs only (check_log_options)
        out["judge_labelled"] = True
    return out


def common_artifacts(artifacts: list[dict], args) -> list[dict]:
    from evidence import calibration_artifact, population_artifact
    return (artifacts + ([population_artifact(args.population)] if args.population else [])
            + ([calibration_artifact(args.judge_calibration)] if args.judge_calibration else []))


def report_ledger(args, payload: dict, written: str | Path) -> None:
    """Append the receipt to ``--ledger`` once the packet (``written``) is there.  The ledger
    is append-only, so its entry is the last thing this run adds; when the append fails the
    packet is removed (it was written by this run a moment ago): a packet whose receipt is
    not in the ledger it was meant for must not look like a recorded run."""
    if not args.ledger:
        return
    from evidence import ledger
    try:
        payload["ledger"] = ledger.append(args.ledger, payload["receipt"])
    except (ValueError, OSError) as exc:
        Path(written).unlink(missing_ok=True)
        why = str(exc).removeprefix(f"{args.ledger}: ").splitlines()[0]
        raise UsageError(f"--ledger {args.ledger}: {why}; the packet {written} was not kept", "--ledger") from None


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
    p.add_argument("--qualification-dir", type=qualification_folder,
                   help="where the pinned qualification record lives (default: shipped)")
    p.add_argument("--trusted", type=nonempty_path, action="append",
                   help="trusted public key file or directory (repeatable)")
    p.add_argument("--judge-calibration", help="the judge's calibration file of paired labels (JSONL/CSV of item_id, "
                                               "set, human_passed, judge_passed) the manifest's judge block pins")
    p.add_argument("--ledger", help="append the receipt to this SQLite ledger (a run against a registered sealed "
                                    "holdout also records its access there, with its kind; a confirmatory run past "
                                    "the maximum holds)")
    p.add_argument("--now", help="issue time (ISO 8601 with zone; default: now)")
