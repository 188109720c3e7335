"""Run the evidence path and write the experiment packet.

A packet holds the manifest, references to the raw artifacts (path + sha256 of their
exact bytes: a trial file, or two Inspect AI logs and the adapter mapping), the test and
prerequisite receipts, and the receipt recomputed from all of them.  ``replay`` rebuilds
the receipt from the same inputs and must arrive at the same bytes."""
from __future__ import annotations

import datetime as dt
import json
import os
from pathlib import Path
from typing import Any

from .comparison import compare
from .coverage import check_qualification, default_directory
from .experiment import pair_trials
from .hashing import file_hash
from .manifest import Manifest
from .receipt import PrerequisiteReceipt, TestReceipt, build_receipt
from .trials import TrialColumns, read_trial_file, trial_format

PACKET_KIND = "simlab.evidence.packet"


def trial_artifacts(path: str | Path) -> list[dict]:
    return [{"role": "trials", "format": trial_format(path), "path": str(path)}]


def inspect_artifacts(baseline: str | Path, candidate: str | Path) -> list[dict]:
    return [{"role": "inspect_baseline", "format": "inspect", "path": str(baseline)},
            {"role": "inspect_candidate", "format": "inspect", "path": str(candidate)}]


def load_trials(artifacts: list[dict], adapter: dict | None, base: Path) -> tuple[TrialColumns, dict[str, str]]:
    """Read the raw artifacts into validated columns; returns them and each file's sha256."""
    paths = {a["role"]: (base / a["path"]) for a in artifacts}
    for role, p in paths.items():
        if not p.is_file():
            raise ValueError(f"artifact {role}: no file at {p}")
    roles = sorted(paths)
    if roles == ["trials"]:
        cols, digest = read_trial_file(paths["trials"])
        return cols, {"trials": digest}
    hashes = {role: file_hash(p) for role, p in paths.items()}
    if roles == ["inspect_baseline", "inspect_candidate"]:
        from .adapters.inspect import read_inspect_pair
        if not adapter or adapter.get("name") != "inspect":
            raise ValueError("Inspect artifacts need the inspect adapter mapping (cluster field, score)")
        cols = read_inspect_pair(paths["inspect_baseline"], paths["inspect_candidate"],
                                 cluster_field=adapter["cluster_field"], score=adapter["score"])
        return cols, hashes
    raise ValueError(f"unknown artifact roles {roles}: expected trials, or inspect_baseline + inspect_candidate")


def evaluate(*, manifest: Manifest, artifacts: list[dict], adapter: dict | None, base: Path,
             tests: tuple[TestReceipt, ...], prerequisites: tuple[PrerequisiteReceipt, ...],
             qualification_dir: Path | None, trusted: dict | None, issued_at: dt.datetime) -> dict:
    """The receipt, recomputed from the raw artifacts (errors in the evidence raise ValueError)."""
    cols, hashes = load_trials(artifacts, adapter, base)
    experiment = pair_trials(cols, manifest)
    comparison = compare(experiment, manifest)
    qdir = Path(qualification_dir) if qualification_dir else default_directory()
    qualification = check_qualification(manifest, experiment, directory=qdir, now=issued_at, trusted=trusted)
    return build_receipt(manifest=manifest, experiment=experiment, comparison=comparison,
                         qualification=qualification, tests=tests,
                         prerequisites=prerequisites, raw_artifacts=hashes, issued_at=issued_at)


def _relative(path: str | Path, to: Path) -> str:
    p = Path(path).resolve()
    try:
        return os.path.relpath(p, to.resolve())
    except ValueError:  # another drive
        return str(p)


def run_experiment(*, manifest: Manifest, artifacts: list[dict], out: str | Path, adapter: dict | None = None,
                   tests: tuple[TestReceipt, ...] = (), prerequisites: tuple[PrerequisiteReceipt, ...] = (),
                   qualification_dir: str | Path | None = None, trusted: dict | None = None,
                   now: dt.datetime | None = None, overwrite: bool = False) -> dict:
    """Evaluate and write the packet to ``out`` (an existing packet is never overwritten)."""
    out = Path(out)
    if out.exists() and not overwrite:
        raise ValueError(f"{out} exists; a packet is never overwritten (choose a new path)")
    issued_at = (now or dt.datetime.now(dt.timezone.utc)).replace(microsecond=0)
    base = out.parent if str(out.parent) else Path(".")
    rel = [{**a, "path": _relative(a["path"], base)} for a in artifacts]
    receipt = evaluate(manifest=manifest, artifacts=rel, adapter=adapter, base=base, tests=tests,
                       prerequisites=prerequisites, qualification_dir=qualification_dir, trusted=trusted,
                       issued_at=issued_at)
    for a in rel:
        a["sha256"] = receipt["components"]["raw_artifacts"][a["role"]]
    packet = {"schema_version": "1", "kind": PACKET_KIND, "manifest": manifest.canonical(), "artifacts": rel,
              "adapter": adapter, "tests": [t.model_dump(mode="json") for t in tests],
              "prerequisites": [p.model_dump(mode="json") for p in prerequisites], "receipt": receipt}
    write_json(out, packet, overwrite=overwrite)
    return packet


def write_json(path: str | Path, payload: Any, overwrite: bool = False) -> None:
    """Write JSON; an existing file is refused unless ``overwrite`` (evidence is never replaced)."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    text = json.dumps(payload, indent=1, allow_nan=False) + "\n"
    try:
        with open(path, "w" if overwrite else "x") as f:
            f.write(text)
    except FileExistsError:
        raise ValueError(f"{path} exists; it is never overwritten (choose a new path)") from None
