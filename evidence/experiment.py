"""The paired experiment: baseline and candidate trials joined by (case id, trial index).

Repeating a case measures stochastic reliability; it does not create independent units.
Each pair therefore keeps its cluster (e.g. the customer), and the comparison is made on
per-cluster 2x2 tables (DESIGN.md order n11, n10, n01, n00).  A missing, duplicated or
cluster-mismatched pair, a trial run under another manifest, a case split over clusters
or a case with the wrong number of repetitions is an error naming the key -- never a
silent drop."""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .manifest import Manifest
from .trials import MAX_REPORTED, PROVENANCE, EvidenceErrors, TrialColumns


class PairingError(EvidenceErrors):
    """The trials do not form the registered paired experiment; ``errors`` names every key."""


@dataclass(frozen=True)
class PairedExperiment:
    tables: np.ndarray            # int64 (K, 4) per cluster, clusters in arrival order
    cluster_names: np.ndarray     # cluster id of each table row
    pairs: int
    cases: int
    candidate_failed_trials: int  # candidate trials with at least one failed check
    failed_examples: tuple[dict, ...]
    provenance_counts: dict[str, int]  # cost provenance over all trials

    @property
    def clusters(self) -> int:
        return int(self.tables.shape[0])

    def trials_per_cluster(self) -> np.ndarray:
        return self.tables.sum(axis=1)


def _key(cols: TrialColumns, rows: np.ndarray) -> str:
    return f"(case {cols.case_names[cols.case[rows]]!r}, trial {int(cols.trial[rows])})"


def _check_manifest(cols: TrialColumns, manifest: Manifest) -> list[str]:
    expected = manifest.sha256
    errors = []
    for h, count in cols.manifest_hashes.items():
        if h != expected:
            row = cols.first_row_of_hash.get(h, 0)
            errors.append(f"line {int(cols.lines[row])} and {count - 1} more trial(s) ran under manifest {h}, "
                          f"not {expected} (manifest changed after execution?)")
    return errors


def _sorted_keys(cols: TrialColumns, rows: np.ndarray, arm: str, errors: list[str]):
    keys = (cols.case[rows].astype(np.int64) << 32) | cols.trial[rows]
    if not np.all(keys[1:] > keys[:-1]):  # files written case by case are already in order
        order = np.argsort(keys, kind="stable")
        keys, rows = keys[order], rows[order]
    dup = np.flatnonzero(keys[1:] == keys[:-1])
    for i in dup[:MAX_REPORTED]:
        errors.append(f"duplicated {arm} trial {_key(cols, rows[i])} at lines {int(cols.lines[rows[i]])} "
                      f"and {int(cols.lines[rows[i + 1]])}")
    if len(dup) > MAX_REPORTED:
        errors.append(f"... {len(dup) - MAX_REPORTED} more duplicated {arm} trials")
    return keys, rows


def pair_trials(cols: TrialColumns, manifest: Manifest) -> PairedExperiment:
    """Join the arms and build per-cluster tables; any inconsistency is a PairingError."""
    errors = _check_manifest(cols, manifest)
    base_rows = np.flatnonzero(~cols.candidate)
    cand_rows = np.flatnonzero(cols.candidate)
    bk, br = _sorted_keys(cols, base_rows, "baseline", errors)
    ck, cr = _sorted_keys(cols, cand_rows, "candidate", errors)
    if errors:
        raise PairingError(cols.source, errors)
    if len(bk) != len(ck) or not np.array_equal(bk, ck):
        for arm, other, keys, rows, okeys in (("baseline", "candidate", bk, br, ck), ("candidate", "baseline", ck, cr, bk)):
            lonely = np.flatnonzero(~np.isin(keys, okeys))
            for i in lonely[:MAX_REPORTED]:
                errors.append(f"missing pair: {_key(cols, rows[i])} has a {arm} trial (line "
                              f"{int(cols.lines[rows[i]])}) but no {other} trial")
        raise PairingError(cols.source, errors)
    bcl, ccl = cols.cluster[br], cols.cluster[cr]
    for i in np.flatnonzero(bcl != ccl)[:MAX_REPORTED]:
        errors.append(f"cluster mismatch: {_key(cols, br[i])} is in cluster {cols.cluster_names[bcl[i]]!r} for the "
                      f"baseline (line {int(cols.lines[br[i]])}) but {cols.cluster_names[ccl[i]]!r} for the candidate "
                      f"(line {int(cols.lines[cr[i]])})")
    case = cols.case[br]
    n_cases = len(cols.case_names)
    # every case belongs to one cluster and has the registered number of repetitions
    first_cluster = np.full(n_cases, -1, np.int64)
    first_cluster[case[::-1]] = bcl[::-1]
    for i in np.flatnonzero(first_cluster[case] != bcl)[:MAX_REPORTED]:
        errors.append(f"case {cols.case_names[case[i]]!r} appears in clusters {cols.cluster_names[first_cluster[case[i]]]!r} "
                      f"and {cols.cluster_names[bcl[i]]!r} (line {int(cols.lines[br[i]])})")
    reps = np.bincount(case, minlength=n_cases)
    for c in np.flatnonzero(reps != manifest.repetitions)[:MAX_REPORTED]:
        errors.append(f"case {cols.case_names[c]!r} has {int(reps[c])} paired trial(s); the manifest registers "
                      f"{manifest.repetitions} repetitions")
    if errors:
        raise PairingError(cols.source, errors)
    category = (~cols.passed[br]).astype(np.int64) * 2 + (~cols.passed[cr]).astype(np.int64)
    k = len(cols.cluster_names)
    tables = np.bincount(bcl.astype(np.int64) * 4 + category, minlength=4 * k).reshape(k, 4)
    failed = cr[cols.n_failed[cr] > 0]
    examples = tuple({"case_id": str(cols.case_names[cols.case[r]]), "trial_index": int(cols.trial[r]),
                      "line": int(cols.lines[r]), "failed_checks": list(cols.failed_checks_of(int(r)))}
                     for r in failed[:5])
    prov = np.bincount(cols.provenance, minlength=len(PROVENANCE))
    return PairedExperiment(tables=tables, cluster_names=cols.cluster_names, pairs=len(br), cases=n_cases,
                            candidate_failed_trials=int(len(failed)), failed_examples=examples,
                            provenance_counts={p: int(c) for p, c in zip(PROVENANCE, prov)})
