"""The paired experiment: baseline and candidate trials joined by (case id, trial index).

Repeating a case measures stochastic reliability; it does not create independent units.
Each pair therefore keeps its cluster (e.g. the customer), and the comparison is made on
per-cluster 2x2 tables (cell order of ``simlab.scenario``: n11, n10, n01, n00).  A missing, duplicated or
cluster-mismatched pair, a trial run under another manifest, a case split over clusters
or slices, or a case with the wrong number of repetitions is an error naming the key --
never a silent drop.  Problems are grouped by root cause: trial indices that only one arm
has (the arms ran different numbers of epochs), clusters that only one arm has, and cases
that only one arm has are each named once, with examples, before single missing pairs.

Besides the trial-pair tables the experiment keeps, per case, the passes of each arm (for
pass^k / pass@k) and the per-cluster tables of *cases* by "all k trials passed" in each arm
(the tables a pass^k comparison analyses).

Judges cannot override deterministic checks (issue 30, item 4): when the manifest registers
a judge, a candidate trial with a failed check counts as a fail in the tables whatever the
judge said (``candidate_passes_overridden`` counts them).  Only candidate trials: forcing a
baseline trial to fail would move the corrected difference towards the candidate.  The
receipt blocks on any such trial in any case.  Which outcomes are judge labels (the trials'
``judge_labelled``) is checked and counted by ``evidence.labels``."""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .errors import EvidenceErrors, Problem
from .labels import check_judge_labels, first_judge_labelled, judge_label_counts
from .manifest import Manifest
from .trial_schema import PROVENANCE, TrialColumns
from .trials import MAX_REPORTED


class PairingError(EvidenceErrors):
    """The trials do not form the registered paired experiment; ``errors`` names every key."""
    title = "the trials do not pair ({causes} root cause(s)): "
    unit = "key"


@dataclass(frozen=True)
class PairedExperiment:
    tables: np.ndarray            # int64 (K, 4) per cluster, clusters in arrival order
    cluster_names: np.ndarray     # cluster id of each table row
    pairs: int
    cases: int
    candidate_failed_trials: int  # candidate trials with at least one failed check
    failed_examples: tuple[dict, ...]
    provenance_counts: dict[str, int]  # cost provenance over all trials
    case_names: np.ndarray = None      # case id of each case code
    case_cluster: np.ndarray = None    # int64 cluster row of each case
    case_passes: np.ndarray = None     # int64 (cases, 2): baseline, candidate passes
    case_trials: np.ndarray = None     # int64 paired trials of each case
    case_slice: np.ndarray | None = None  # object: each case's slice value (None: no slices given)
    case_cells: np.ndarray = None      # int64 (cases, 4): each case's trial pairs by cell
    candidate_passes_overridden: int = 0  # judge-labelled candidate passes with a failed check, counted as fails
    judge_labels: dict = None          # rows stating judge_labelled true / false / not at all (evidence.labels)
    judge_label_example: str | None = None  # where the first judge-labelled row is

    @property
    def clusters(self) -> int:
        return int(self.tables.shape[0])

    def trials_per_cluster(self) -> np.ndarray:
        return self.tables.sum(axis=1)

    def trial_tables(self, cases: np.ndarray | None = None) -> np.ndarray:
        """(K, 4) per cluster of the trial pairs of ``cases`` (bool per case; all by default)."""
        if cases is None:
            return self.tables
        out = np.zeros((self.clusters, 4), np.int64)
        np.add.at(out, self.case_cluster[cases], self.case_cells[cases])
        return out

    def case_tables(self, cases: np.ndarray | None = None) -> np.ndarray:
        """(K, 4) per cluster: cases by (baseline all-k pass, candidate all-k pass), DESIGN order;
        ``cases`` (bool per case) restricts to some cases (zero rows are missing clusters)."""
        keep = np.ones(self.cases, bool) if cases is None else cases
        all_b = self.case_passes[:, 0] == self.case_trials
        all_c = self.case_passes[:, 1] == self.case_trials
        cell = (~all_b).astype(np.int64) * 2 + (~all_c).astype(np.int64)
        k = self.clusters
        return np.bincount(self.case_cluster[keep] * 4 + cell[keep], minlength=4 * k).reshape(k, 4)


def _key(cols: TrialColumns, row) -> str:
    return f"(case {cols.case_names[cols.case[row]]!r}, trial {int(cols.trial[row])})"


def check_manifest_binding(cols: TrialColumns, manifest: Manifest, registered_after: bool) -> list[Problem]:
    """Every trial must carry the manifest's hash -- or, on the registered-after-measurement
    route, no hash at all (it was measured before the manifest existed)."""
    expected = manifest.sha256
    problems = []
    for h, count in cols.manifest_hashes.items():
        row = cols.first_row_of_hash.get(h, 0)
        if h is None and not registered_after:
            problems.append(Problem(f"{count} trial(s), first at {cols.where(row)}",
                                    "no manifest hash: the trials were not run under this manifest (measured before "
                                    "it existed?); they can only be analysed as registered after measurement"))
        elif h is not None and h != expected:
            problems.append(Problem(f"{count} trial(s), first at {cols.where(row)}",
                                    f"ran under manifest {h}, not {expected} (manifest changed after execution?)"))
    return problems


def _sorted_keys(cols: TrialColumns, rows: np.ndarray, arm: str, errors: list[Problem]):
    keys = (cols.case[rows].astype(np.int64) << 32) | cols.trial[rows]
    if not np.all(keys[1:] > keys[:-1]):  # files written case by case are already in order
        order = np.argsort(keys, kind="stable")
        keys, rows = keys[order], rows[order]
    dup = np.flatnonzero(keys[1:] == keys[:-1])
    for i in dup[:MAX_REPORTED]:
        errors.append(Problem(f"{_key(cols, rows[i])} at {cols.where(rows[i])} and {cols.where(rows[i + 1])}",
                              f"duplicated {arm} trial"))
    if len(dup) > MAX_REPORTED:
        errors.append(Problem(f"{len(dup) - MAX_REPORTED} more keys", f"duplicated {arm} trial"))
    return keys, rows


def _lonely(cols: TrialColumns, arm: str, other: str, keys, rows, okeys, orows) -> list[Problem]:
    """Keys of one arm without a partner, grouped by their root cause."""
    lonely = np.flatnonzero(~np.isin(keys, okeys))
    if not len(lonely):
        return []
    out: list[Problem] = []
    other_trials = set(cols.trial[orows].tolist())
    other_cases = np.zeros(len(cols.case_names), bool)
    other_cases[cols.case[orows]] = True
    other_clusters = np.zeros(len(cols.cluster_names), bool)
    other_clusters[cols.cluster[orows]] = True
    seen_clusters: dict[int, int] = {}
    shown = 0
    for i in lonely:
        r = rows[i]
        t, c, k = int(cols.trial[r]), int(cols.case[r]), int(cols.cluster[r])
        if t not in other_trials:
            cause = (f"missing pairs: trial index {t} only in the {arm} (the arms ran different numbers of "
                     "epochs / repetitions)")
        elif not other_clusters[k]:
            seen_clusters[k] = seen_clusters.get(k, 0) + 1
            if seen_clusters[k] > 1:
                continue
            cause = f"missing pairs: clusters with {arm} trials only (the {other} did not run their cases)"
            out.append(Problem(f"cluster {cols.cluster_names[k]!r}: {_key(cols, r)} at {cols.where(r)}", cause))
            continue
        elif not other_cases[c]:
            cause = f"missing pairs: cases with {arm} trials only"
        else:
            cause = f"missing pair: a {arm} trial with no {other} trial"
        if shown < MAX_REPORTED * 4:
            out.append(Problem(f"{_key(cols, r)} at {cols.where(r)}", cause))
            shown += 1
    return out


def _case_values(cols: TrialColumns, case: np.ndarray, rows: np.ndarray, values: np.ndarray, what: str,
                 names: np.ndarray | None, errors: list[Problem]) -> np.ndarray:
    """Each case's single value of ``values`` (cluster code or slice), naming cases that have two."""
    n_cases = len(cols.case_names)
    first = np.full(n_cases, -1, np.int64) if names is not None else np.full(n_cases, None, object)
    first[case[::-1]] = values[::-1]
    bad = np.flatnonzero(first[case] != values)
    for i in bad[:MAX_REPORTED]:
        a, b = first[case[i]], values[i]
        a, b = (names[a], names[b]) if names is not None else (a, b)
        errors.append(Problem(f"case {cols.case_names[case[i]]!r} ({a!r} and {b!r}, at {cols.where(rows[i])})",
                              f"a case in two {what}s"))
    return first


def pair_trials(cols: TrialColumns, manifest: Manifest, registered_after: bool = False) -> PairedExperiment:
    """Join the arms and build per-cluster tables; any inconsistency is a PairingError."""
    check_judge_labels(cols, manifest)
    errors = check_manifest_binding(cols, manifest, registered_after)
    base_rows = np.flatnonzero(~cols.candidate)
    cand_rows = np.flatnonzero(cols.candidate)
    bk, br = _sorted_keys(cols, base_rows, "baseline", errors)
    ck, cr = _sorted_keys(cols, cand_rows, "candidate", errors)
    if errors:
        raise PairingError(cols.source, errors, option="registered_after_measurement"
                           if any(p.cause.startswith("no manifest hash") for p in errors) else None)
    if len(bk) != len(ck) or not np.array_equal(bk, ck):
        errors += _lonely(cols, "baseline", "candidate", bk, br, ck, cr)
        errors += _lonely(cols, "candidate", "baseline", ck, cr, bk, br)
        raise PairingError(cols.source, errors)
    bcl, ccl = cols.cluster[br], cols.cluster[cr]
    for i in np.flatnonzero(bcl != ccl)[:MAX_REPORTED]:
        errors.append(Problem(f"{_key(cols, br[i])}: {cols.cluster_names[bcl[i]]!r} for the baseline "
                              f"({cols.where(br[i])}), {cols.cluster_names[ccl[i]]!r} for the candidate "
                              f"({cols.where(cr[i])})", "cluster mismatch between the arms"))
    case = cols.case[br]
    n_cases = len(cols.case_names)
    case_cluster = _case_values(cols, case, br, bcl.astype(np.int64), "cluster", cols.cluster_names, errors)
    case_slice = None
    if cols.slice_names is not None:
        bs, cs = cols.slice_names[br], cols.slice_names[cr]
        for i in np.flatnonzero(bs != cs)[:MAX_REPORTED]:
            errors.append(Problem(f"{_key(cols, br[i])}: {bs[i]!r} for the baseline, {cs[i]!r} for the candidate",
                                  "slice mismatch between the arms"))
        case_slice = _case_values(cols, case, br, bs, "slice", None, errors)
    reps = np.bincount(case, minlength=n_cases)
    for c in np.flatnonzero(reps != manifest.repetitions)[:MAX_REPORTED]:
        errors.append(Problem(f"case {cols.case_names[c]!r} ({int(reps[c])})",
                              f"paired trials per case differ from the manifest's {manifest.repetitions} repetitions"))
    if errors:
        raise PairingError(cols.source, errors)
    pb, pc_ = cols.passed[br], cols.passed[cr]
    overridden = 0
    if manifest.judge is not None:
        checked_fail = cols.n_failed[cr] > 0
        overridden = int(np.count_nonzero(pc_ & checked_fail))
        pc_ = pc_ & ~checked_fail
    category = (~pb).astype(np.int64) * 2 + (~pc_).astype(np.int64)
    k = len(cols.cluster_names)
    tables = np.bincount(bcl.astype(np.int64) * 4 + category, minlength=4 * k).reshape(k, 4)
    case_cells = np.bincount(case.astype(np.int64) * 4 + category, minlength=4 * n_cases).reshape(n_cases, 4)
    case_passes = np.stack([np.bincount(case, weights=pb, minlength=n_cases),
                            np.bincount(case, weights=pc_, minlength=n_cases)], axis=1).astype(np.int64)
    failed = cr[cols.n_failed[cr] > 0]
    examples = tuple({"case_id": str(cols.case_names[cols.case[r]]), "trial_index": int(cols.trial[r]),
                      "where": cols.where(r), "failed_checks": list(cols.failed_checks_of(int(r)))}
                     for r in failed[:5])
    prov = np.bincount(cols.provenance, minlength=len(PROVENANCE))
    return PairedExperiment(tables=tables, cluster_names=cols.cluster_names, pairs=len(br), cases=n_cases,
                            candidate_failed_trials=int(len(failed)), failed_examples=examples,
                            provenance_counts={p: int(c) for p, c in zip(PROVENANCE, prov)},
                            case_names=cols.case_names, case_cluster=case_cluster, case_passes=case_passes,
                            case_trials=reps.astype(np.int64), case_slice=case_slice, case_cells=case_cells,
                            candidate_passes_overridden=overridden, judge_labels=judge_label_counts(cols),
                            judge_label_example=first_judge_labelled(cols))
