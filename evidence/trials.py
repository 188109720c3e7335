"""Trial records: ingest JSONL or CSV strictly, into columns.

One row per executed trial: case id, trial index, cluster id (the independent unit, e.g.
the customer), arm, passed, failed checks, latency, cost with its provenance, and the
manifest hash the trial ran under (``null`` only for trials measured before the manifest
existed: the registered-after-measurement route, capped at lab_only).  Optional columns:
``timestamp`` (ISO 8601 with a zone: when the trial ran; the manifest must predate it),
``slice`` (the case's value of the manifest's protected-slice field) and ``judge_labelled``
(true when a model judge gave ``passed``, false when a human or a deterministic check did;
empty / null: not stated -- ``evidence.labels`` says what each means for the run).  Strict: unknown,
repeated or missing fields, wrong types, non-finite numbers (``nan`` in a CSV is a number,
not "not recorded": leave the cell empty), and a missing label (never a pass or a fail) are
errors; every bad row is kept, and the message names each root cause once with a few
lines as examples; nothing is dropped.  JSONL and CSV are equally strict.

The row and column schema is ``evidence.trial_schema``.  Fast path (``evidence.columnar``): pyarrow's multithreaded JSON/CSV readers with an
explicit schema (``unexpected_field_behavior="error"``: an unknown field fails the read)
and vectorised checks.  Whenever the fast path sees any problem -- or the file has blank or
whitespace-only lines, so rows and lines could disagree -- the file is read again to name
every bad line and field: a JSONL file in blocks of :data:`BLOCK_LINES` lines, each through the fast path again and only a
block it refuses line by line with the pydantic row model, so one bad row near the end of a
big file costs one block's slow path, not the whole file's (and the file is never held in
memory whole); a CSV file (a quoted cell may hold a line break) line by line.  Clean files
never pay for the slow path."""
from __future__ import annotations

import csv
import datetime as dt
import io
import re
from pathlib import Path
from typing import Any, Iterable, Literal

import numpy as np
from pydantic import (AwareDatetime, ConfigDict, Field, StringConstraints, ValidationError, field_validator,
                      model_validator)
from typing_extensions import Annotated

from simlab.models import FrozenModel

from .errors import EvidenceErrors, Problem
from .jsonfiles import NotUTF8, json_lines, utf8_text
from .manifest import Sha256
from .trial_schema import PROVENANCE, TrialColumns, concat_judge_labels, csv_header_problem, judge_label_codes

MAX_REPORTED = 50  # keys spelled out per kind of pairing problem (all are counted)
_Id = Annotated[str, StringConstraints(min_length=1, max_length=1000)]


class TrialRecord(FrozenModel):
    """One trial, as a row model (the slow path and the record-by-record adapters)."""
    model_config = ConfigDict(strict=True)
    case_id: _Id
    trial_index: int = Field(ge=0, lt=2**31)
    cluster_id: _Id
    arm: Literal["baseline", "candidate"]
    passed: bool
    failed_checks: tuple[_Id, ...] = Field(strict=False)
    latency_ms: float | None = Field(default=None, ge=0.0)
    cost: float | None = Field(default=None, ge=0.0)
    cost_provenance: Literal["absent", "synthetic", "measured"]
    manifest_sha256: Sha256 | None  # required; null = measured before the manifest existed
    timestamp: AwareDatetime | None = Field(default=None, strict=False)
    slice: _Id | None = None
    judge_labelled: bool | None = None

    @field_validator("timestamp")
    @classmethod
    def _in_utc_range(cls, t):
        if t is not None:
            try:  # 0001-01-01T00:00:00+01:00 is year 0 in UTC, where the times are compared
                t.astimezone(dt.timezone.utc)
            except OverflowError:
                raise ValueError("out of range: in UTC it falls outside years 1 to 9999") from None
        return t

    @model_validator(mode="after")
    def _provenance(self):
        if (self.cost is None) != (self.cost_provenance == "absent"):
            raise ValueError("cost_provenance must be 'absent' exactly when cost is null")
        return self


class TrialsError(EvidenceErrors):
    """Bad trial rows: ``errors`` lists every one as ``line N, field F: why``; the message
    gives each root cause once."""
    title = "{n} problem(s) in the trial rows, {causes} root cause(s): "


# ---------------------------------------------------------------- row validation (slow path)


MISSING_LABEL = "field passed: missing label (a missing label is never a pass or a fail)"


def _pydantic_errors(exc: ValidationError, where: str) -> list[Problem]:
    out = []
    for e in exc.errors():
        loc = ".".join(str(p) for p in e["loc"])
        if e["type"] == "missing" and loc == "passed":
            out.append(Problem(where, MISSING_LABEL))
        elif e["type"] == "missing":
            out.append(Problem(where, f"field {loc}: required field is missing"))
        elif e["type"] == "extra_forbidden":
            out.append(Problem(where, f"field {loc}: unknown field"))
        elif loc:
            out.append(Problem(where, f"field {loc}: {e['msg'].removeprefix('Value error, ')}"))
        else:
            out.append(Problem(where, e["msg"].removeprefix("Value error, ")))
    return out


def validate_rows(rows: Iterable[tuple[int | str, Any]], source: str, label: str = "line") -> list[TrialRecord]:
    """Validate ``(line number or place, parsed row or exception)`` pairs; raise one
    TrialsError with all problems."""
    records, errors = [], []
    for number, row in rows:
        where = f"{label} {number}" if label else str(number)
        if isinstance(row, CellError):
            errors.append(Problem(f"{where}, field {row.field}", str(row)))
            continue
        if isinstance(row, Exception):
            errors.append(Problem(where, str(row)))
            continue
        if not isinstance(row, dict):
            errors.append(Problem(where, f"expected a JSON object, got {type(row).__name__}"))
            continue
        if row.get("passed", 0) is None:
            errors.append(Problem(where, MISSING_LABEL))
            row = {k: v for k, v in row.items() if k != "passed"}
            try:
                TrialRecord.model_validate({**row, "passed": False})
            except ValidationError as exc:
                errors.extend(_pydantic_errors(exc, where))
            continue
        try:
            records.append(TrialRecord.model_validate(row))
        except ValidationError as exc:
            errors.extend(_pydantic_errors(exc, where))
    if errors:
        raise TrialsError(source, errors)
    return records


def _json_lines(data: bytes) -> Iterable[tuple[int, Any]]:
    return json_lines(data, "trial", parse_constant=lambda c: float(c))


class CellError(ValueError):
    """A CSV cell that stands for no JSON value of its field (reported with the field's name)."""

    def __init__(self, field: str, message: str):
        super().__init__(message)
        self.field = field


def _csv_value(name: str, text: str) -> Any:
    """A CSV cell as the JSON value it stands for (an empty cell is null, as in JSONL)."""
    if name == "trial_index":
        return int(text) if text.strip().lstrip("-").isdigit() else text
    if name == "passed":
        return {"true": True, "false": False, "1": True, "0": False, "": None}.get(text.strip().lower(), text)
    if name == "judge_labelled":  # an empty cell is "not stated"
        return {"true": True, "false": False, "1": True, "0": False, "": None}.get(text.strip().lower(), text)
    if name == "failed_checks":
        if text.lstrip().startswith("["):  # JSON's list written into a cell: "[]" is not a check named "[]"
            raise CellError(name, f"check names separated by ';' (an empty cell for none), got {text[:40]!r}: "
                                  "a JSON list is the JSONL form, not the CSV one")
        return [c for c in text.split(";")] if text else []
    if name in ("latency_ms", "cost"):
        if text == "":
            return None
        try:
            return float(text)  # "nan" / "inf" become non-finite floats: refused like JSONL's NaN
        except ValueError:
            return text
    if name in ("manifest_sha256", "timestamp", "slice") and text == "":
        return None
    return text


def _csv_rows(data: bytes) -> Iterable[tuple[int, Any]]:
    try:
        text = utf8_text(data, bom=True)  # a leading BOM (Excel's "CSV UTF-8") is no data
    except NotUTF8 as exc:
        yield exc.line, ValueError(exc.cause)
        return
    reader = csv.reader(io.StringIO(text))
    header = next(reader, None)
    if header is None:
        return
    problem = csv_header_problem(header)
    if problem:
        yield 1, ValueError(problem)
        return
    for number, values in enumerate(reader, start=2):
        if len(values) != len(header):
            yield number, ValueError(f"expected {len(header)} columns, got {len(values)}")
            continue
        try:
            yield number, {h: _csv_value(h, v) for h, v in zip(header, values)}
        except CellError as exc:
            yield number, exc


def _codes_by_first_appearance(values: list[str]) -> tuple[np.ndarray, np.ndarray]:
    """Dictionary codes in order of first appearance (as pyarrow's dictionary_encode), so both
    read paths give clusters the same (arrival) order."""
    index: dict[str, int] = {}
    codes = np.fromiter((index.setdefault(v, len(index)) for v in values), dtype=np.int32, count=len(values))
    return np.asarray(list(index), dtype=object), codes


def columns_from_records(records: list[TrialRecord], source: str, lines: Iterable[int] | None = None,
                         locate=None) -> TrialColumns:
    """Columns from validated row models (slow path and adapters; ``locate`` names a row's place)."""
    case_names, case = _codes_by_first_appearance([r.case_id for r in records])
    cluster_names, cluster = _codes_by_first_appearance([r.cluster_id for r in records])
    hashes: dict[str | None, int] = {}
    first: dict[str | None, int] = {}
    for i, r in enumerate(records):
        hashes[r.manifest_sha256] = hashes.get(r.manifest_sha256, 0) + 1
        first.setdefault(r.manifest_sha256, i)
    nan = float("nan")
    stamps = [nan if r.timestamp is None else r.timestamp.timestamp() for r in records]
    slices = [r.slice for r in records]
    return TrialColumns(
        source=source, case=case, case_names=case_names,
        trial=np.asarray([r.trial_index for r in records], dtype=np.int64),
        cluster=cluster, cluster_names=cluster_names,
        candidate=np.asarray([r.arm == "candidate" for r in records], dtype=bool),
        passed=np.asarray([r.passed for r in records], dtype=bool),
        n_failed=np.asarray([len(r.failed_checks) for r in records], dtype=np.int32),
        latency=np.asarray([nan if r.latency_ms is None else r.latency_ms for r in records], dtype=np.float64),
        cost=np.asarray([nan if r.cost is None else r.cost for r in records], dtype=np.float64),
        provenance=np.asarray([PROVENANCE.index(r.cost_provenance) for r in records], dtype=np.int8),
        manifest_hashes=hashes, first_row_of_hash=first if len(hashes) > 1 else {},
        lines=np.asarray(list(lines) if lines is not None else range(1, len(records) + 1), dtype=np.int64),
        failed_names=lambda row: list(records[row].failed_checks),
        timestamps=np.asarray(stamps, dtype=np.float64),
        slice_names=np.asarray(slices, dtype=object) if any(v is not None for v in slices) else None,
        locate=locate, judge_labelled=judge_label_codes(r.judge_labelled for r in records))


def columns_from_places(rows: list[tuple[str, dict]], source: str) -> TrialColumns:
    """Rows named by their place in a log (``(place, row dict)``, e.g. a sample id and epoch):
    validated, and located by that place in every later message."""
    places = [where for where, _ in rows]
    records = validate_rows(rows, source, label="")
    return columns_from_records(records, source, lines=range(1, len(records) + 1), locate=lambda row: places[row])


def trial_format(path: str | Path) -> str:
    suffix = Path(path).suffix.lower()
    if suffix in (".jsonl", ".ndjson"):
        return "jsonl"
    if suffix == ".csv":
        return "csv"
    raise ValueError(f"{path}: trial records must be .jsonl/.ndjson or .csv, got {suffix or 'no suffix'!r}")


def _fast(source, fmt: str, source_name: str, first_line: int | None = None) -> "TrialColumns | None":
    from .columnar import columns_from_arrow, read_arrow

    table = read_arrow(source, fmt)
    if table is None or not table.num_rows:
        return None
    return columns_from_arrow(table, source_name, first_line=first_line or (1 if fmt == "jsonl" else 2))


BLOCK_LINES = 1 << 16  # JSONL lines read again together when the whole file's fast path refused it


def _line_blocks(lines: Iterable[bytes]) -> Iterable[tuple[int, bytes]]:
    """``(number of its first line, bytes)`` of consecutive blocks of :data:`BLOCK_LINES` lines."""
    block: list[bytes] = []
    first = 1
    for line in lines:
        block.append(line)
        if len(block) == BLOCK_LINES:
            yield first, b"".join(block)
            first += BLOCK_LINES
            block = []
    if block:
        yield first, b"".join(block)


def _merge_codes(parts: list[tuple[np.ndarray, np.ndarray]]) -> tuple[np.ndarray, np.ndarray]:
    """Dictionary codes of several parts' ``(names, codes)`` as one column (order of first appearance)."""
    index: dict[str, int] = {}
    out = []
    for names, codes in parts:
        remap = np.asarray([index.setdefault(n, len(index)) for n in names], dtype=np.int32)
        out.append(remap[codes] if len(names) else codes.astype(np.int32))
    return np.asarray(list(index), dtype=object), np.concatenate(out)


def _join_blocks(parts: list[TrialColumns], source: str) -> TrialColumns:
    """Consecutive blocks of one file (absolute line numbers) as one set of columns, equal to
    what the whole file's fast path gives."""
    if len(parts) == 1:
        return parts[0]
    case_names, case = _merge_codes([(p.case_names, p.case) for p in parts])
    cluster_names, cluster = _merge_codes([(p.cluster_names, p.cluster) for p in parts])
    starts = np.cumsum([0] + [len(p) for p in parts])
    hashes: dict[str | None, int] = {}
    first: dict[str | None, int] = {}
    for start, p in zip(starts, parts):
        for h, n in p.manifest_hashes.items():
            first.setdefault(h, int(start) + p.first_row_of_hash.get(h, 0))
            hashes[h] = hashes.get(h, 0) + n
    slices = None
    if any(p.slice_names is not None for p in parts):
        slices = np.concatenate([p.slice_names if p.slice_names is not None else np.full(len(p), None, object)
                                 for p in parts])

    def failed(row: int):
        i = int(np.searchsorted(starts, row, side="right")) - 1
        return parts[i].failed_checks_of(row - int(starts[i]))

    def cat(name: str) -> np.ndarray:
        return np.concatenate([getattr(p, name) for p in parts])

    return TrialColumns(
        source=source, case=case, case_names=case_names, cluster=cluster, cluster_names=cluster_names,
        trial=cat("trial"), candidate=cat("candidate"), passed=cat("passed"), n_failed=cat("n_failed"),
        latency=cat("latency"), cost=cat("cost"), provenance=cat("provenance"), manifest_hashes=hashes,
        first_row_of_hash=first if len(hashes) > 1 else {}, lines=cat("lines"), failed_names=failed,
        timestamps=np.concatenate([p.timestamps if p.timestamps is not None else np.full(len(p), np.nan)
                                   for p in parts]), slice_names=slices)


def parse_jsonl_blocks(lines: Iterable[bytes], source: str) -> TrialColumns:
    """A JSONL file's lines (each with its newline) validated block by block: the fast path on
    every block, line by line only where it refuses one; every bad line is named (module docstring)."""
    parts: list[TrialColumns] = []
    problems: list[Problem] = []
    for first, block in _line_blocks(lines):
        cols = None if _has_blank_line(block) else _fast(block, "jsonl", source, first_line=first)
        if cols is None:
            rows = [(first + i - 1, row) for i, row in _json_lines(block)]
            try:
                records = validate_rows(rows, source)
            except TrialsError as exc:
                problems.extend(exc.problems)
                continue
            if records and not problems:
                cols = columns_from_records(records, source, lines=[n for n, _ in rows])
        if cols is not None and not problems:  # after a problem only the problems are kept
            parts.append(cols)
    if problems:
        raise TrialsError(source, problems)
    if not parts:
        raise TrialsError(source, [Problem("", "file holds no trial rows")])
    return _join_blocks(parts, source)


# a newline followed by whitespace: a blank or whitespace-only line (which pyarrow would skip,
# so rows and lines would disagree) -- or, rarely, a line indented before its JSON; either
# sends the data down the line-by-line path, which refuses only the first kind
_BLANK = re.compile(rb"\n[\n\r \t]")


def _blank_inside(data) -> bool:
    return _BLANK.search(data) is not None


def _has_blank_line(data) -> bool:
    return data[:1] in (b"\n", b"\r", b" ", b"\t") or _blank_inside(data)


def parse_trials(data, fmt: Literal["jsonl", "csv"], source: str) -> TrialColumns:
    """Validate the raw bytes (``bytes`` or a read-only ``mmap``) of a JSONL or CSV trial
    file into columns (errors: TrialsError)."""
    if fmt not in ("jsonl", "csv"):
        raise ValueError(f"unknown trial format {fmt!r}")
    if not _has_blank_line(data):
        cols = _fast(data, fmt, source)
        if cols is not None:
            return cols
    data = bytes(data)
    if fmt == "jsonl":
        return parse_jsonl_blocks(io.BytesIO(data), source)
    rows = list(_csv_rows(data))
    records = validate_rows(rows, source)
    if not records:
        raise TrialsError(source, [Problem("", "file holds no trial rows")])
    return columns_from_records(records, source, lines=[n for n, _ in rows])


def scan_file(path: str | Path) -> tuple[str, bool]:
    """One pass over a trial file: its ``sha256:`` and whether it has a blank line."""
    import hashlib

    h, blank, tail = hashlib.sha256(), False, None
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 24), b""):
            h.update(block)
            if not blank:  # a blank line may straddle two blocks: look across the seam
                blank = _has_blank_line(block) if tail is None else _blank_inside(tail + block[:2]) or _blank_inside(block)
            tail = block[-2:]
    return "sha256:" + h.hexdigest(), blank


def read_trial_file(path: str | Path) -> tuple[TrialColumns, str]:
    """Read and validate a trial file; returns the columns and the file's ``sha256:``.

    The hash (and blank-line scan) runs in a second thread while pyarrow parses: hashlib
    releases the GIL, so the two passes over the file overlap.  A blank line found by the
    scan discards the fast result for the line-by-line path (rows and lines must agree)."""
    from concurrent.futures import ThreadPoolExecutor

    path = Path(path)
    fmt = trial_format(path)
    if not path.is_file():
        raise ValueError(f"no trial file at {path}")
    with ThreadPoolExecutor(max_workers=1) as pool:
        scan = pool.submit(scan_file, path)
        cols = _fast(path, fmt, str(path)) if path.stat().st_size else None
        digest, blank = scan.result()
    if cols is None or blank:
        if fmt == "jsonl":  # streamed: one block in memory at a time
            with open(path, "rb") as f:
                cols = parse_jsonl_blocks(f, str(path))
        else:
            cols = parse_trials(path.read_bytes(), fmt, str(path))
    return cols, digest


def read_trials(path: str | Path) -> TrialColumns:
    """Read and validate a trial file (see :func:`read_trial_file`)."""
    return read_trial_file(path)[0]


def _merged_codes(a_names, a_codes, b_names, b_codes) -> tuple[np.ndarray, np.ndarray]:
    index = {n: i for i, n in enumerate(a_names)}
    for n in b_names:
        index.setdefault(n, len(index))
    remap = np.asarray([index[n] for n in b_names], dtype=np.int32)
    codes = np.concatenate([a_codes, remap[b_codes] if len(b_names) else b_codes.astype(np.int32)])
    return np.asarray(list(index), dtype=object), codes


def concat_columns(a: TrialColumns, b: TrialColumns, source: str) -> TrialColumns:
    """Two validated trial files as one (rows of ``a`` first; places name their file)."""
    case_names, case = _merged_codes(a.case_names, a.case, b.case_names, b.case)
    cluster_names, cluster = _merged_codes(a.cluster_names, a.cluster, b.cluster_names, b.cluster)
    hashes = dict(a.manifest_hashes)
    first = {h: a.first_row_of_hash.get(h, 0) for h in a.manifest_hashes}
    for h, n in b.manifest_hashes.items():
        first.setdefault(h, len(a) + b.first_row_of_hash.get(h, 0))
        hashes[h] = hashes.get(h, 0) + n
    n_a = len(a)
    stamps = [c.timestamps if c.timestamps is not None else np.full(len(c), np.nan) for c in (a, b)]
    slices = None
    if a.slice_names is not None or b.slice_names is not None:
        slices = np.concatenate([c.slice_names if c.slice_names is not None else np.full(len(c), None, object)
                                 for c in (a, b)])
    name_a, name_b = Path(a.source).name, Path(b.source).name
    return TrialColumns(
        source=source, case=case, case_names=case_names, cluster=cluster, cluster_names=cluster_names,
        trial=np.concatenate([a.trial, b.trial]), candidate=np.concatenate([a.candidate, b.candidate]),
        passed=np.concatenate([a.passed, b.passed]), n_failed=np.concatenate([a.n_failed, b.n_failed]),
        latency=np.concatenate([a.latency, b.latency]), cost=np.concatenate([a.cost, b.cost]),
        provenance=np.concatenate([a.provenance, b.provenance]), manifest_hashes=hashes,
        first_row_of_hash=first if len(hashes) > 1 else {}, lines=np.concatenate([a.lines, b.lines]),
        failed_names=lambda row: a.failed_checks_of(row) if row < n_a else b.failed_checks_of(row - n_a),
        timestamps=np.concatenate(stamps), slice_names=slices, judge_labelled=concat_judge_labels(a, b),
        locate=lambda row: f"{name_a} {a.where(row)}" if row < n_a else f"{name_b} {b.where(row - n_a)}")
