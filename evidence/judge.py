"""A registered judge calibration: which judge labelled the outcomes, and the human-labelled
set its errors were measured on (issue 30, item 1).

When a model judge supplies the binary outcome, the comparison measures judge-labelled
outcomes, not customer truth (evidence spine).  A manifest that analyses judge labels
registers, in its ``judge`` block:

* ``identity_sha256``: the hash of the judge's whole identity (model and version, prompt,
  rubric, output parser and schema, adapter / endpoint / retry settings -- the spine's
  Kata 49: a config dict is not the whole identity).  The receipt binds it; a changed judge
  resolves as drift.
* ``components``: the judge's parts by name and version -- at least ``model``, ``prompt``,
  ``rubric`` and ``parser`` (more may be named: ``schema``, ``adapter``...).  The receipt
  binds each as ``judge.<name>``, so ``resolve --current judge.rubric=rubric-v4`` expires it
  naming the part that changed (the spine's requalification trigger for judge, prompt,
  rubric or parser change).
* the calibration set, either inline ``calibration_counts`` -- one row per set, baseline's
  then candidate's, or a single shared row, columns ``2 * human_fail + judge_fail``
  (human pass & judge pass, human pass & judge fail, human fail & judge pass, human fail &
  judge fail; ``methods.judged``) -- or ``calibration_sha256``, the sha256 of the bytes of a
  file of paired labels the operator supplies at run time (:func:`read_calibration_file`);
* ``calibration_shared``: one set for both arms (must agree with the counts or the file);
* ``min_calibration``: the registered minimum items per set.  It is also the method's
  ``min_calibration`` option, so the comparison runs exactly the registered method.

A file whose bytes are not the registered hash, a missing file, a file for a manifest that
registers inline counts, or malformed counts or rows are refused (never treated as a perfect
judge), the message naming the field or row.  A well-formed set smaller than
``min_calibration`` is not refused: the correction is not identified to the registered
bound, so the run is analysed and its comparison is inconclusive, naming each short set's
size and the registered minimum (:func:`calibration_shortfall`; issue 30, item 2) -- a hold,
never a pass."""
from __future__ import annotations

import csv
import hashlib
import io
from pathlib import Path
from typing import Annotated

from pydantic import ConfigDict, Field, StringConstraints, model_validator

from simlab.hashing import SHA256_PATTERN, content_hash
from simlab.models import FrozenModel

from .errors import EvidenceError
from .jsonfiles import NotUTF8, loads, utf8_text

Sha256 = Annotated[str, StringConstraints(pattern=SHA256_PATTERN)]
PartName = Annotated[str, StringConstraints(pattern=r"^[a-z][a-z0-9_]{0,39}$")]
Version = Annotated[str, StringConstraints(min_length=1, max_length=200)]
REQUIRED_PARTS = ("model", "prompt", "rubric", "parser")
SETS = ("baseline", "candidate", "shared")
FILE_FIELDS = ("item_id", "set", "human_passed", "judge_passed")


def set_names(rows: int) -> tuple[str, ...]:
    return ("shared",) if rows == 1 else ("baseline", "candidate")


class JudgeRegistration(FrozenModel):
    """The manifest's ``judge`` block (see the module docstring)."""
    model_config = ConfigDict(strict=True)
    identity_sha256: Sha256
    components: dict[PartName, Version]
    calibration_counts: tuple[tuple[int, int, int, int], ...] | None = None
    calibration_sha256: Sha256 | None = None
    calibration_shared: bool
    min_calibration: int = Field(ge=1, le=10_000_000)

    @model_validator(mode="after")
    def _calibration(self):
        missing = [p for p in REQUIRED_PARTS if p not in self.components]
        if missing:
            raise ValueError(f"judge.components: name the judge's {', '.join(REQUIRED_PARTS)} versions (missing "
                             f"{', '.join(missing)}): a changed part must expire the receipt by name")
        clash = sorted({"identity", "calibration"} & set(self.components))
        if clash:
            raise ValueError(f"judge.components: {', '.join(clash)} is bound already (identity_sha256, the "
                             "calibration): name the part otherwise")
        if (self.calibration_counts is None) == (self.calibration_sha256 is None):
            raise ValueError("register exactly one of judge.calibration_counts (inline) and judge.calibration_sha256 "
                             "(the sha256 of a file of paired labels)")
        if self.calibration_counts is not None:
            import numpy as np  # only for a manifest that registers a judge (a manifest loads without numpy)

            check_counts(np.asarray(self.calibration_counts, dtype=np.int64), self, "judge.calibration_counts")
        return self

    def bound(self) -> dict[str, str]:
        """What the receipt binds of the judge: its identity, calibration and every named part."""
        return {"identity": self.identity_sha256, "calibration": self.calibration_hash(),
                **dict(sorted(self.components.items()))}

    def calibration_hash(self) -> str:
        """What the receipt binds as the calibration: the file's sha256, or the counts' content hash."""
        return self.calibration_sha256 or content_hash([list(r) for r in self.calibration_counts])


def check_counts(counts: np.ndarray, reg: JudgeRegistration, where: str) -> None:
    """Shape, shared flag and non-negative counts of each set (a set below the registered
    minimum size is well-formed: :func:`calibration_shortfall`)."""
    import numpy as np

    if counts.ndim != 2 or counts.shape[1] != 4 or counts.shape[0] not in (1, 2):
        raise ValueError(f"{where}: one row per set (baseline, candidate) or one shared row, 4 counts each; got "
                         f"shape {counts.shape}")
    if reg.calibration_shared != (counts.shape[0] == 1):
        raise ValueError(f"{where}: {counts.shape[0]} set(s) but judge.calibration_shared is "
                         f"{str(reg.calibration_shared).lower()} (one shared set exactly when shared)")
    for name, row in zip(set_names(counts.shape[0]), counts):
        if np.any(row < 0):
            raise ValueError(f"{where} ({name} set): counts must be >= 0, got {row.tolist()}")


def calibration_shortfall(counts, min_calibration: int) -> str | None:
    """Each calibration set smaller than the registered ``min_calibration``, with its size
    (``"candidate set 40 items < judge.min_calibration 50"``), or None when every set is large
    enough."""
    import numpy as np

    c = np.asarray(counts, dtype=np.int64)
    short = [f"{name} set {int(row.sum())} items < judge.min_calibration {min_calibration}"
             for name, row in zip(set_names(c.shape[0]), c) if int(row.sum()) < min_calibration]
    return "; ".join(short) or None


def _label(value, where: str, field: str) -> bool:
    if isinstance(value, bool):
        return value
    if isinstance(value, str) and value.strip().lower() in ("true", "false"):
        return value.strip().lower() == "true"
    raise EvidenceError(f"{where}, field {field}: expected true or false, got {value!r}", option="judge_calibration")


def _rows(text: str, suffix: str, source: str):
    if suffix == ".csv":
        reader = csv.DictReader(io.StringIO(text))
        if reader.fieldnames is None or sorted(reader.fieldnames) != sorted(FILE_FIELDS):
            raise EvidenceError(f"{source}: header must be {', '.join(FILE_FIELDS)}, got {reader.fieldnames}",
                                option="judge_calibration")
        yield from ((i + 2, row) for i, row in enumerate(reader))
        return
    for i, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            raise EvidenceError(f"{source}: line {i} is blank", option="judge_calibration")
        try:
            row = loads(line)
        except ValueError as exc:  # malformed, or a repeated key
            raise EvidenceError(f"{source}: line {i}: not JSON ({exc})", option="judge_calibration") from None
        if not isinstance(row, dict) or sorted(row) != sorted(FILE_FIELDS):
            raise EvidenceError(f"{source}: line {i}: expected an object with exactly the fields "
                                f"{', '.join(FILE_FIELDS)}", option="judge_calibration")
        yield i, row


def read_calibration_file(path: Path, reg: JudgeRegistration) -> tuple[np.ndarray, str]:
    """``(counts (A, 4), file sha256)`` of a file of paired labels (JSONL or CSV, one row per
    item: item_id, set = baseline / candidate / shared, human_passed, judge_passed), checked
    against the registration: its bytes must hash to ``judge.calibration_sha256``."""
    import numpy as np

    if reg.calibration_sha256 is None:
        raise EvidenceError("judge.calibration_counts: the manifest registers inline calibration counts; a calibration "
                            "file was given as well (give one, not both)", option="judge_calibration")
    if not path.is_file():
        raise EvidenceError(f"judge.calibration_sha256: no calibration file at {path}", option="judge_calibration")
    data = path.read_bytes()
    digest = "sha256:" + hashlib.sha256(data).hexdigest()
    if digest != reg.calibration_sha256:
        raise EvidenceError(f"judge.calibration_sha256: {path.name} hashes to {digest}, the manifest registers "
                            f"{reg.calibration_sha256}: not the registered calibration set", option="judge_calibration")
    try:
        text = utf8_text(data, bom=True)  # a leading BOM (a spreadsheet export) is no data
    except NotUTF8 as exc:
        raise EvidenceError(f"{path.name}: {exc}", option="judge_calibration") from None
    counts = {s: [0, 0, 0, 0] for s in SETS}
    seen: dict[str, int] = {}
    for line, row in _rows(text, path.suffix.lower(), path.name):
        where = f"{path.name}: line {line}"
        item, group = row["item_id"], row["set"]
        if not isinstance(item, str) or not item:
            raise EvidenceError(f"{where}, field item_id: a non-empty string", option="judge_calibration")
        if item in seen:
            raise EvidenceError(f"{where}, field item_id: {item!r} already on line {seen[item]}",
                                option="judge_calibration")
        seen[item] = line
        if group not in SETS:
            raise EvidenceError(f"{where}, field set: {group!r} is not one of {', '.join(SETS)}",
                                option="judge_calibration")
        human, judge = _label(row["human_passed"], where, "human_passed"), _label(row["judge_passed"], where,
                                                                               "judge_passed")
        counts[group][2 * (not human) + (not judge)] += 1
    used = [s for s in SETS if sum(counts[s])]
    if "shared" in used and len(used) > 1:
        raise EvidenceError(f"{path.name}, field set: mixes a shared set with per-arm sets", option="judge_calibration")
    rows = [counts["shared"]] if reg.calibration_shared else [counts["baseline"], counts["candidate"]]
    if used and ("shared" in used) != reg.calibration_shared:
        raise EvidenceError(f"{path.name}, field set: the file has {'a shared' if 'shared' in used else 'per-arm'} "
                            f"set(s) but judge.calibration_shared is {str(reg.calibration_shared).lower()}",
                            option="judge_calibration")
    arr = np.asarray(rows, dtype=np.int64)
    try:
        check_counts(arr, reg, path.name)
    except ValueError as exc:
        raise EvidenceError(str(exc), option="judge_calibration") from None
    return arr, digest


def registered_calibration(reg: JudgeRegistration, file: Path | None) -> tuple[np.ndarray, str | None]:
    """The calibration counts the comparison must use, and the file's sha256 (None: inline)."""
    import numpy as np

    if reg.calibration_counts is not None:
        if file is not None:
            read_calibration_file(file, reg)  # refuses: counts were registered inline
        return np.asarray(reg.calibration_counts, dtype=np.int64), None
    if file is None:
        raise EvidenceError("judge.calibration_sha256: the manifest registers a calibration file, but none was given",
                            option="judge_calibration")
    return read_calibration_file(file, reg)
