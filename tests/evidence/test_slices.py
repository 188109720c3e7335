"""Protected slices (issue 27, item 7): Holm's step-down and fixed-sequence gatekeeping, the
receipt holding or blocking on a slice, per-slice results in the packet, and each slice's
test needing its own covered design."""
from __future__ import annotations

import json
from dataclasses import dataclass
from types import SimpleNamespace

import numpy as np
import pytest

from evidence.manifest import ProtectedSlices
from evidence.packet import population_artifact, run_experiment, trial_artifacts
from evidence.population import identity
from evidence.slices import slice_comparisons, slice_findings


@dataclass
class _Result:
    status: str
    estimate: float = 0.0
    lower: float = 0.0
    upper: float = 0.0


class _PValueMethod:
    """A test that passes at level alpha exactly when the slice's p-value is <= alpha (the slice
    is told by its only non-empty table row), as an interval method whose bound falls with alpha."""
    kind = "fixed"
    name = "p-value stub"

    def __init__(self, pvalues):
        self.pvalues = pvalues

    def analyze(self, tables, margin, alpha):
        row = int(np.flatnonzero(tables.sum(axis=1))[0])
        return _Result("pass" if self.pvalues[row] <= alpha else "fail")


def _family(pvalues, rule):
    m = len(pvalues)
    names = [f"s{i}" for i in range(m)]
    experiment = SimpleNamespace(case_slice=np.array(names, dtype=object))
    manifest = SimpleNamespace(protected_slices=ProtectedSlices(field="segment", values=tuple(names), rule=rule),
                               margin=0.05)
    tables_of = lambda mask: np.where(mask[:, None], 1, 0) * np.ones((m, 4), int)  # noqa: E731
    out = slice_comparisons(_PValueMethod(pvalues), experiment, manifest, tables_of, alpha=0.05)
    return {s["value"]: s for s in out["slices"]}


@pytest.mark.parametrize("seed", range(8))
def test_holm_establishes_exactly_what_holms_procedure_rejects(seed):
    from statsmodels.stats.multitest import multipletests

    p = np.random.default_rng(seed).uniform(0, 0.08, size=5)
    got = _family(p, "holm")
    reject = multipletests(p, alpha=0.05, method="holm")[0]
    assert [got[f"s{i}"]["decision"] == "established" for i in range(5)] == list(reject)


def test_holm_steps_down():
    got = _family([0.03, 0.02], "holm")  # 0.02 <= 0.05/2 first, then 0.03 <= 0.05/1
    assert got["s1"]["tests"][0]["level"] == 0.025 and got["s1"]["decision"] == "established"
    assert [t["level"] for t in got["s0"]["tests"]] == [0.025, 0.05] and got["s0"]["decision"] == "established"
    none = _family([0.03, 0.04], "holm")  # neither passes at 0.025: stop, neither established
    assert {s["decision"] for s in none.values()} == {"not_established_fail"}


def test_fixed_sequence_stops_at_the_first_not_established():
    got = _family([0.01, 0.2, 0.001], "fixed_sequence")
    assert got["s0"]["decision"] == "established" and got["s1"]["decision"] == "not_established_fail"
    assert got["s2"]["decision"] == "not_tested" and got["s2"]["tests"] == []
    assert all(t["level"] == 0.05 for s in got.values() for t in s["tests"])
    findings = slice_findings({"field": "segment", "rule": "fixed_sequence", "slices": list(got.values())})
    assert [f[1] for f in findings] == ["block", "hold"]
    assert findings[1][2] == ("protected slice segment='s2' not tested: an earlier slice in the registered order was "
                              "not established (fixed-sequence gatekeeping)")


# ---------------------------------------------------------------- through the evidence path


def _cases(segments: dict[str, tuple[int, set[int]]]) -> dict[str, tuple[str, str, bool]]:
    """Per segment (clusters, clusters whose case loses): case -> (cluster, segment, loses);
    one case and one trial per cluster."""
    return {f"{seg}-c{k}": (f"{seg}-u{k}", seg, k in losses) for seg, (clusters, losses) in segments.items()
            for k in range(clusters)}


def _run(world, folder, segments, rule="holm"):
    cases = _cases(segments)
    slices = {"field": "segment", "values": ["enterprise", "smb"], "rule": rule}
    h = identity({c: u for c, (u, _, _) in cases.items()}, {c: s for c, (_, s, _) in cases.items()})
    manifest = world.manifest(protected_slices=slices, population_hash=h)
    rows = [{"case_id": c, "trial_index": 0, "cluster_id": u, "arm": arm, "passed": not (arm == "candidate" and lose),
             "failed_checks": [], "latency_ms": None, "cost": 0.001, "cost_provenance": "measured",
             "manifest_sha256": manifest.sha256, "slice": seg}
            for c, (u, seg, lose) in cases.items() for arm in ("baseline", "candidate")]
    (folder / "t.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    (folder / "cases.jsonl").write_text("".join(json.dumps({"case_id": c, "cluster_id": u, "slice": seg}) + "\n"
                                                for c, (u, seg, _) in cases.items()))
    return run_experiment(manifest=manifest, artifacts=trial_artifacts(folder / "t.jsonl") +
                          [population_artifact(folder / "cases.jsonl")], out=folder / "p.json",
                          qualification_dir=world.qdir, trusted=world.trusted, now=world.now)


def test_a_failing_protected_slice_blocks_a_passing_whole(world, tmp_path):
    # 250 + 250 clusters; 2 losses overall pass, but all of them in the smb slice of 250 ...
    packet = _run(world, tmp_path, {"enterprise": (250, set()), "smb": (250, {3, 70, 140, 200, 220, 240})})
    r = packet["receipt"]
    slices = {s["value"]: s for s in r["comparison"]["slices"]["slices"]}
    assert r["comparison"]["status"] == "pass" and slices["enterprise"]["decision"] == "established"
    assert slices["smb"]["decision"] == "not_established_fail" and slices["smb"]["clusters"] == 250
    assert r["action"] == "block"
    assert r["reasons"][0].startswith("protected slice segment='smb': non-inferiority not established at one-sided "
                                      "level 0.025 (Holm; lower bound")


def test_every_slice_test_needs_a_covered_design(world, tmp_path):
    packet = _run(world, tmp_path, {"enterprise": (250, set()), "smb": (250, set())})
    r = packet["receipt"]
    assert r["comparison"]["status"] == "pass"
    assert {s["decision"] for s in r["comparison"]["slices"]["slices"]} == {"established"}
    assert r["action"] == "lab_pass"  # the record covers K = 300 and 500 at the manifest's level only
    assert any("protected slice 'enterprise' tested at level 0.0125: design not covered" in x for x in r["reasons"])


def test_trials_without_slice_values_cannot_show_the_slices(world, tmp_path):
    slices = {"field": "segment", "values": ["enterprise"], "rule": "holm"}
    with pytest.raises(ValueError, match="the manifest protects slices of 'segment', but the trials give no slice"):
        world.run(tmp_path, world.manifest(protected_slices=slices))
