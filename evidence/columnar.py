"""The fast path of trial ingest: pyarrow's multithreaded JSON / CSV readers with an
explicit schema (an unknown field fails the read: ``unexpected_field_behavior="error"``)
and vectorised checks over the chunked columns (the table is never copied whole).  Any
problem returns None, and the caller (``evidence.trials``) re-reads the file line by line to name every
bad line and field."""
from __future__ import annotations

from pathlib import Path

import numpy as np

from .trial_schema import ARMS, PROVENANCE, TrialColumns, csv_header_problem


def _arrow_schema():
    import pyarrow as pa
    return pa.schema([("case_id", pa.string()), ("trial_index", pa.int64()), ("cluster_id", pa.string()),
                      ("arm", pa.string()), ("passed", pa.bool_()), ("failed_checks", pa.list_(pa.string())),
                      ("latency_ms", pa.float64()), ("cost", pa.float64()), ("cost_provenance", pa.string()),
                      ("manifest_sha256", pa.string()), ("timestamp", pa.string()), ("slice", pa.string()),
                      ("judge_labelled", pa.bool_())])


def _csv_header(source) -> list[str] | None:
    """The CSV's header row (read with the csv module, as the slow path reads it)."""
    import csv

    if isinstance(source, (str, Path)):
        with open(source, "rb") as f:
            first = f.readline()
    else:
        first = bytes(source[: (bytes(source[:1 << 16]).find(b"\n") + 1) or 1 << 16])
    try:
        return next(csv.reader([first.decode("utf-8-sig").rstrip("\r\n")]), None)  # a BOM (Excel) is no data
    except UnicodeDecodeError:
        return None


def _read_csv(src, header: list[str]):
    """The CSV through pyarrow: only an empty cell is null (``nan`` stays a number, so it is
    refused as non-finite, exactly like JSONL's NaN); the header was checked already."""
    import pyarrow as pa
    import pyarrow.compute as pc
    import pyarrow.csv as pcsv

    types = {f.name: (pa.string() if f.name == "failed_checks" else f.type) for f in _arrow_schema()}
    table = pcsv.read_csv(src, read_options=pcsv.ReadOptions(block_size=1 << 24),
                          convert_options=pcsv.ConvertOptions(
                              column_types={h: types[h] for h in header}, null_values=[""],
                              strings_can_be_null=True, true_values=["true", "True", "1"],
                              false_values=["false", "False", "0"]))
    checks = table.column("failed_checks")
    lists = pc.if_else(pc.is_null(checks), pa.scalar([], pa.list_(pa.string())), pc.split_pattern(checks, ";"))
    table = table.set_column(table.schema.get_field_index("failed_checks"), "failed_checks", lists)
    for name, kind in (("timestamp", pa.string()), ("slice", pa.string()), ("judge_labelled", pa.bool_())):
        if name not in header:
            table = table.append_column(name, pa.nulls(table.num_rows, kind))
    return table


def read_arrow(source, fmt: str):
    """The whole file (a path, or bytes) through pyarrow, or None when anything is off (then
    the slow path reports)."""
    import pyarrow as pa
    import pyarrow.json as pj

    src = str(source) if isinstance(source, (str, Path)) else pa.BufferReader(pa.py_buffer(source))
    try:
        if fmt == "jsonl":
            opts = pj.ParseOptions(explicit_schema=_arrow_schema(), unexpected_field_behavior="error")
            table = pj.read_json(src, parse_options=opts, read_options=pj.ReadOptions(block_size=1 << 24))
        else:
            header = _csv_header(source)
            if header is None or csv_header_problem(header):  # unknown / repeated / missing columns
                return None
            table = _read_csv(src, header)
        table.validate(full=True)  # the JSON reader keeps strings that are not UTF-8 (the slow path names them)
        return table
    except (pa.ArrowInvalid, pa.ArrowTypeError, KeyError):
        return None


def _codes(column) -> tuple[np.ndarray, np.ndarray]:
    """Dictionary codes of a (chunked) string column in order of first appearance."""
    import pyarrow.compute as pc
    names = pc.unique(column)
    codes = pc.index_in(column, value_set=names).to_numpy().astype(np.int32)
    return np.asarray(names.to_pylist(), dtype=object), codes


def _strings_ok(table) -> bool:
    import pyarrow.compute as pc
    for name in ("case_id", "trial_index", "cluster_id", "arm", "passed", "failed_checks",
                 "cost_provenance", "manifest_sha256"):  # a null manifest hash: the slow path decides
        if table.column(name).null_count:
            return False
    flat = pc.list_flatten(table.column("failed_checks"))
    if len(flat) and pc.any(pc.starts_with(pc.utf8_ltrim_whitespace(flat), "[")).as_py():
        return False  # a JSON list in a CSV cell: the slow path names the row
    slices = table.column("slice")
    slices = slices.drop_null() if slices.null_count else slices
    for col in (table.column("case_id"), table.column("cluster_id"), flat, slices):
        if len(col) and col.null_count:
            return False
        if len(col):
            lo_hi = pc.min_max(pc.utf8_length(col)).as_py()
            if lo_hi["min"] < 1 or lo_hi["max"] > 1000:
                return False
    return True


def _numbers(table) -> dict | None:
    """Numeric columns, or None when a value is out of range (NaN marks a null number)."""
    import pyarrow as pa
    import pyarrow.compute as pc

    trial = table.column("trial_index").to_numpy()
    if len(trial) and (trial.min() < 0 or trial.max() >= 2**31):
        return None
    arm = pc.index_in(table.column("arm"), value_set=pa.array(ARMS))
    prov = pc.index_in(table.column("cost_provenance"), value_set=pa.array(PROVENANCE))
    if arm.null_count or prov.null_count:
        return None
    out = {"trial": trial.astype(np.int64), "candidate": arm.to_numpy() == 1,
           "provenance": prov.to_numpy().astype(np.int8),
           "passed": table.column("passed").to_numpy().astype(bool),
           "n_failed": pc.list_value_length(table.column("failed_checks")).to_numpy().astype(np.int32)}
    for key, name in (("latency", "latency_ms"), ("cost", "cost")):
        col = table.column(name)
        values = col.to_numpy().astype(np.float64)  # nulls become NaN
        present = ~col.is_null().to_numpy()
        with np.errstate(invalid="ignore"):
            if np.any(present & ~(np.isfinite(values) & (values >= 0))):
                return None
        out[key] = values
        if key == "cost" and np.any(present != (out["provenance"] != 0)):
            return None
    return out


# POSIX microseconds of 0001-01-01 and 9999-12-31T23:59:59.999999, UTC: the times Python holds
_FIRST_MICRO, _LAST_MICRO = -62135596800 * 10**6, 253402300800 * 10**6 - 1


def _timestamps(table) -> np.ndarray | None:
    """POSIX seconds of each row's ``timestamp`` (NaN where absent), or None when one is not
    ISO 8601 with a zone (the slow path names it)."""
    import pyarrow as pa
    import pyarrow.compute as pc

    col = table.column("timestamp")
    if col.null_count == len(col):
        return np.full(len(col), np.nan)
    present = col.drop_null()
    zoned = pc.match_substring_regex(present, r"^\d{4}-\d\d-\d\dT\d\d:\d\d(:\d\d(\.\d+)?)?(Z|[+-]\d\d:\d\d)$")
    if not pc.all(zoned).as_py():
        return None
    try:
        stamps = pc.cast(col, pa.timestamp("us", tz="UTC"))
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
        return None
    micro = pc.cast(stamps, pa.int64()).to_numpy(zero_copy_only=False).astype(np.float64)  # nulls -> NaN
    with np.errstate(invalid="ignore"):  # year 0 parses here but is no Python datetime: the slow path names it
        if np.any((micro < _FIRST_MICRO) | (micro > _LAST_MICRO)):
            return None
    return micro / 1e6


def _judge_labels(table) -> np.ndarray | None:
    """int8 codes of the ``judge_labelled`` column (1 / 0, -1 where not stated), None when no
    row states it."""
    col = table.column("judge_labelled")
    if col.null_count == len(col):
        return None
    stated = ~col.is_null().to_numpy(zero_copy_only=False)
    values = col.fill_null(False).to_numpy(zero_copy_only=False).astype(np.int8)
    return np.where(stated, values, np.int8(-1)).astype(np.int8)


def columns_from_arrow(table, source: str, first_line: int) -> TrialColumns | None:
    """Vectorised checks; None when any row is bad (the slow path then names them all)."""
    import re

    import pyarrow.compute as pc

    if not _strings_ok(table):
        return None
    numbers = _numbers(table)
    if numbers is None:
        return None
    stamps = _timestamps(table)
    if stamps is None:
        return None
    hash_col = table.column("manifest_sha256")
    manifest_hashes = {h["values"]: int(h["counts"]) for h in pc.value_counts(hash_col).to_pylist()}
    if any(not re.fullmatch(r"sha256:[0-9a-f]{64}", h) for h in manifest_hashes):
        return None
    first_row = {h: int(pc.index(hash_col, h).as_py()) for h in manifest_hashes} if len(manifest_hashes) > 1 else {}
    case_names, case = _codes(table.column("case_id"))
    cluster_names, cluster = _codes(table.column("cluster_id"))
    checks = table.column("failed_checks")  # kept (list offsets only, when checks are rare) for examples
    return TrialColumns(
        source=source, case=case, case_names=case_names, cluster=cluster, cluster_names=cluster_names,
        manifest_hashes=manifest_hashes, first_row_of_hash=first_row,
        lines=np.arange(first_line, first_line + table.num_rows, dtype=np.int64),
        failed_names=lambda row: checks[row].as_py(), timestamps=stamps,
        slice_names=(np.asarray(table.column("slice").to_pylist(), dtype=object)
                     if table.column("slice").null_count < table.num_rows else None),
        judge_labelled=_judge_labels(table), **numbers)
