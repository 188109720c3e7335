"""Property: no random mutation of a valid packet -- its receipt, manifest, component
receipts or raw trials, with or without resealing the hashes an attacker can recompute --
replays to a stronger action than the original."""
from __future__ import annotations

import copy
import json
import shutil
import tempfile
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from simlab.hashing import file_hash, with_self_hash
from evidence.receipt import action_strength
from evidence.replay import replay_packet

RECEIPT_EDITS = [
    ("comparison", "lower", 0.5), ("comparison", "status", "pass"), ("comparison", "estimate", 0.2),
    ("hard_failures", "candidate_trials_with_failed_checks", 0), ("evidence", "clusters", 10_000),
    (None, "action", "canary_eligible"), (None, "state", "qualified"), (None, "authority", "canary"),
    (None, "valid_until", "2099-01-01T00:00:00Z"), (None, "reasons", []),
    ("qualification", "covered", True), ("components", "qualification", "sha256:" + "1" * 64),
]
MANIFEST_EDITS = [("margin", 0.1), ("minimum_independent_clusters", 2), ("rho_max", 0.9),
                  ("measurement_kind", "measured"), ("code_revision", "b" * 40), ("statistical_method", "paired_wald"),
                  ("repetitions", 2), ("valid_until", "2099-01-01T00:00:00Z")]
TRIAL_EDITS = ["flip", "drop", "duplicate", "cluster", "provenance", "failed_check", "trial_index"]


def _mutate_trials(path: Path, edit: str, line: int) -> None:
    lines = path.read_text().splitlines()
    i = line % len(lines)
    row = json.loads(lines[i])
    if edit == "drop":
        del lines[i]
    elif edit == "duplicate":
        lines.append(lines[i])
    else:
        if edit == "flip":
            row["passed"] = not row["passed"]
        elif edit == "cluster":
            row["cluster_id"] = "customer-x"
        elif edit == "provenance":
            row["cost_provenance"] = "measured" if row["cost_provenance"] == "synthetic" else "synthetic"
        elif edit == "failed_check":
            row["failed_checks"] = [] if row["failed_checks"] else ["x"]
        elif edit == "trial_index":
            row["trial_index"] += 1
        lines[i] = json.dumps(row)
    path.write_text("\n".join(lines) + "\n")


mutation = st.one_of(
    st.tuples(st.just("receipt"), st.sampled_from(RECEIPT_EDITS), st.booleans()),
    st.tuples(st.just("manifest"), st.sampled_from(MANIFEST_EDITS), st.booleans()),
    st.tuples(st.just("trials"), st.sampled_from(TRIAL_EDITS), st.integers(0, 10_000), st.booleans()),
    st.tuples(st.just("component"), st.sampled_from(["test", "prerequisite"]), st.booleans()),
)


def _apply(packet: dict, folder: Path, m) -> None:
    kind = m[0]
    if kind == "receipt":
        (group, key, value), reseal = m[1], m[2]
        target = packet["receipt"] if group is None else packet["receipt"][group]
        target[key] = value
        if reseal:
            packet["receipt"] = with_self_hash(packet["receipt"], "receipt_sha256")
    elif kind == "manifest":
        (key, value), reseal = m[1], m[2]
        packet["manifest"][key] = value
        if reseal:  # also rebind the receipt to the edited manifest
            from evidence.manifest import Manifest
            try:
                packet["receipt"]["components"]["manifest"] = Manifest.parse(packet["manifest"]).sha256
            except ValueError:
                pass
            packet["receipt"] = with_self_hash(packet["receipt"], "receipt_sha256")
    elif kind == "trials":
        _, edit, line, reseal = m
        _mutate_trials(folder / "exp.jsonl", edit, line)
        if reseal:
            packet["artifacts"][0]["sha256"] = file_hash(folder / "exp.jsonl")
    else:
        _, what, ok = m
        item = ({"kind": "test", "name": "extra", "code_revision": "c" * 40, "passed": ok,
                 "ran_at": "2026-11-30T12:00:00Z"} if what == "test" else
                {"kind": "prerequisite", "name": "extra", "satisfied": ok, "evidence": ""})
        packet["tests" if what == "test" else "prerequisites"].append(item)


def _check(world, folder: Path, packet: dict, m) -> None:
    original = action_strength(packet["receipt"]["action"])
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp) / "p"
        shutil.copytree(folder, work)
        mutated = copy.deepcopy(packet)
        _apply(mutated, work, m)
        out = replay_packet(mutated, base=work, qualification_dir=world.qdir, trusted=world.trusted)
    assert action_strength(out["action"]) <= original, (m, out["reasons"])


@pytest.fixture(scope="module")
def lab(world, tmp_path_factory):
    folder = tmp_path_factory.mktemp("lab")
    packet = world.run(folder, world.manifest(measurement_kind="synthetic", code_revision="working-tree-unpinned"))
    assert packet["receipt"]["action"] == "lab_pass"
    return folder, packet


_SETTINGS = settings(max_examples=30, deadline=None, derandomize=True,
                     suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])


@_SETTINGS
@given(m=mutation)
def test_no_mutation_of_a_canary_packet_strengthens_it(world, good, m):
    _check(world, *good, m)


@_SETTINGS
@given(m=mutation)
def test_no_mutation_of_a_lab_packet_strengthens_it(world, lab, m):
    _check(world, *lab, m)


def test_mutations_are_actually_rejected(world, lab):
    """The property is not vacuous: a mutation that would strengthen is seen and blocked."""
    folder, packet = lab
    mutated = copy.deepcopy(packet)
    mutated["manifest"]["measurement_kind"] = "measured"
    mutated["manifest"]["code_revision"] = "b" * 40
    out = replay_packet(mutated, base=folder, qualification_dir=world.qdir, trusted=world.trusted)
    assert out["action"] == "block" and any(r.startswith("manifest changed after execution") for r in out["reasons"])
