"""The registered population: the list of cases (and their clusters) an experiment must cover.

The manifest's ``population_hash`` is the identity of this list, fixed before measurement:
``sha256`` of the RFC 8785 canonical JSON ``{"kind": "simlab.population", "cases": [[case_id,
cluster_id], ...]}`` sorted by case id (``[case_id, cluster_id, slice]`` when the file gives
slices).  A canonical value, not the file's bytes, so JSONL, CSV and JSON spellings of one
list have one identity (``simlab evidence hash cases.jsonl`` prints it).

The evidence path refuses trials whose cases differ from the registered list, naming the
missing and the extra cases and any case placed in another cluster (or slice): dropping
the clusters or cases with losses is an omission, not a smaller experiment (evidence-spine:
"population membership that differs from the manifest").  Files: JSONL or CSV rows with
``case_id``, ``cluster_id`` and optionally ``slice``, or a JSON list of such objects;
unknown fields, repeated cases and blank lines are errors naming the line."""
from __future__ import annotations

import csv
import io
import json
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from .errors import EvidenceErrors, Problem
from .jsonfiles import NotUTF8, RefusedJSON, json_lines, loads, utf8_text
from simlab.hashing import content_hash, file_hash

KIND = "simlab.population"
_COLUMNS = ("case_id", "cluster_id")
_OPTIONAL = ("slice",)


class PopulationError(EvidenceErrors):
    """The population file is malformed, or the trials' cases differ from it."""
    title = "{n} problem(s), {causes} root cause(s): "
    unit = "case"


@dataclass(frozen=True)
class Population:
    clusters: dict[str, str]        # case id -> cluster id
    slices: dict[str, str] | None   # case id -> slice value, when the file gives them
    sha256: str                     # the canonical identity the manifest pins
    file_sha256: str | None = None  # the file's bytes (recorded as the raw artifact)

    @property
    def cases(self) -> int:
        return len(self.clusters)


def identity(clusters: dict[str, str], slices: dict[str, str] | None = None) -> str:
    rows = [[c, clusters[c]] + ([slices[c]] if slices is not None else []) for c in sorted(clusters)]
    return content_hash({"kind": KIND, "cases": rows})


def _rows(path: Path, data: bytes):
    suffix = path.suffix.lower()
    if suffix in (".csv", ".json"):
        try:
            text = utf8_text(data, bom=suffix == ".csv")  # a CSV's leading BOM is no data
        except NotUTF8 as exc:
            yield exc.line, ValueError(exc.cause)
            return
    if suffix == ".csv":
        reader = csv.reader(io.StringIO(text))
        header = next(reader, None) or []
        for number, values in enumerate(reader, start=2):
            yield number, (dict(zip(header, values)) if len(values) == len(header)
                           else ValueError(f"expected {len(header)} columns, got {len(values)}"))
        return
    if suffix == ".json":
        try:
            items = loads(text)
        except json.JSONDecodeError as exc:
            yield exc.lineno, ValueError(f"not valid JSON ({exc.msg} at column {exc.colno})")
            return
        except RefusedJSON as exc:
            yield 1, ValueError(str(exc))
            return
        items = items.get("cases") if isinstance(items, dict) else items
        if not isinstance(items, list):
            yield 1, ValueError("expected a list of cases (or {\"cases\": [...]})")
            return
        yield from ((f"item {i}", item) for i, item in enumerate(items))
        return
    yield from json_lines(data, "case")


def read_population(path: str | Path) -> Population:
    """The population file, strictly: every bad line named, nothing skipped."""
    path = Path(path)
    if not path.is_file():
        raise PopulationError(str(path), [Problem("", "no population file here")], option="population")
    problems: list[Problem] = []
    clusters: dict[str, str] = {}
    slices: dict[str, str] = {}
    with_slice = None
    for number, row in _rows(path, path.read_bytes()):
        where = f"line {number}" if isinstance(number, int) else str(number)
        if isinstance(row, Exception):
            problems.append(Problem(where, str(row)))
            continue
        if not isinstance(row, dict):
            problems.append(Problem(where, "expected an object with case_id and cluster_id"))
            continue
        unknown = sorted(set(row) - set(_COLUMNS + _OPTIONAL))
        missing = [c for c in _COLUMNS if c not in row]
        if unknown or missing:
            kinds = "; ".join(f"{what} {cols}" for what, cols in (("missing", missing), ("unknown", unknown)) if cols)
            problems.append(Problem(where, f"fields must be case_id, cluster_id (optionally slice); {kinds}"))
            continue
        values = [row[c] for c in _COLUMNS] + ([row["slice"]] if "slice" in row else [])
        if not all(isinstance(v, str) and v for v in values):
            problems.append(Problem(where, "case_id, cluster_id and slice must be non-empty strings"))
            continue
        if with_slice is None:
            with_slice = "slice" in row
        elif with_slice != ("slice" in row):
            problems.append(Problem(where, "some cases give a slice and some do not"))
            continue
        case = row["case_id"]
        if case in clusters:
            problems.append(Problem(where, f"case {case!r} listed twice"))
            continue
        clusters[case] = row["cluster_id"]
        if with_slice:
            slices[case] = row["slice"]
    if not clusters and not problems:
        problems.append(Problem("", "the file lists no cases"))
    if problems:
        raise PopulationError(str(path), problems, option="population")
    s = slices if with_slice else None
    return Population(clusters, s, identity(clusters, s), file_hash(path))


def check_membership(population: Population, case_names: np.ndarray, case_cluster_names: np.ndarray,
                     case_slice: np.ndarray | None, source: str) -> None:
    """Refuse trials whose cases differ from the registered population (PopulationError
    naming the missing and the extra cases, and cases in another cluster or slice)."""
    problems: list[Problem] = []
    present = {str(c): str(k) for c, k in zip(case_names, case_cluster_names)}
    missing = sorted(set(population.clusters) - set(present))
    extra = sorted(set(present) - set(population.clusters))
    n_missing_clusters = len({population.clusters[c] for c in missing} - set(present.values()))
    for c in missing:
        problems.append(Problem(f"case {c!r} (cluster {population.clusters[c]!r})",
                                f"registered cases missing from the trials ({len(missing)} cases; "
                                f"{n_missing_clusters} whole clusters)"))
    for c in extra:
        problems.append(Problem(f"case {c!r} (cluster {present[c]!r})", "cases in the trials that the population "
                                                                        "does not list"))
    for c in sorted(set(present) & set(population.clusters)):
        if present[c] != population.clusters[c]:
            problems.append(Problem(f"case {c!r}: {present[c]!r} in the trials, {population.clusters[c]!r} registered",
                                    "cases in another cluster than registered"))
    if population.slices is not None and case_slice is not None:
        given = {str(c): s for c, s in zip(case_names, case_slice)}
        for c in sorted(set(given) & set(population.slices)):
            if given[c] is not None and given[c] != population.slices[c]:
                problems.append(Problem(f"case {c!r}: {given[c]!r} in the trials, {population.slices[c]!r} registered",
                                        "cases in another slice than registered"))
    if problems:
        raise PopulationError(f"{source} vs the registered population {population.sha256}", problems)
