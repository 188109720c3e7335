"""Replay and failure injection: each rejection with its own test asserting the reason."""
from __future__ import annotations

import copy
import datetime as dt
import json
import shutil

import pytest

from simlab.hashing import content_hash, file_hash, with_self_hash
from evidence.replay import replay_packet
from evidence.resolve import resolve_receipt


def _copy(good, tmp_path):
    """A private copy of the good packet's folder (packet + trial file)."""
    folder, packet = good
    shutil.copytree(folder, tmp_path / "p")
    return tmp_path / "p", copy.deepcopy(packet)


def _replay(world, folder, packet, **kw):
    return replay_packet(packet, base=folder, qualification_dir=world.qdir, trusted=world.trusted, **kw)


def _lines(folder):
    return (folder / "exp.jsonl").read_text().splitlines()


def _write(folder, lines):
    (folder / "exp.jsonl").write_text("\n".join(lines) + "\n")


def _reseal_artifact(folder, packet):
    """An attacker who also updates the packet's recorded artifact hash."""
    packet["artifacts"][0]["sha256"] = file_hash(folder / "exp.jsonl")


def _reseal_receipt(packet):
    packet["receipt"] = with_self_hash(packet["receipt"], "receipt_sha256")


def test_good_packet_replays_to_the_same_receipt(world, good):
    folder, packet = good
    out = _replay(world, folder, packet)
    assert out["ok"] and out["action"] == "canary_eligible" and out["receipt"] == packet["receipt"]


def test_changed_artifact_is_rejected(world, good, tmp_path):
    folder, packet = _copy(good, tmp_path)
    lines = _lines(folder)
    row = json.loads(lines[1])
    row["passed"] = not row["passed"]
    lines[1] = json.dumps(row)
    _write(folder, lines)
    out = _replay(world, folder, packet)
    assert out["action"] == "block"
    assert any(r.startswith("changed artifact: trials hashes to") for r in out["reasons"])


def test_missing_pair_is_rejected_naming_the_key(world, good, tmp_path):
    folder, packet = _copy(good, tmp_path)
    lines = _lines(folder)
    dropped = json.loads(lines[3])
    _write(folder, lines[:3] + lines[4:])
    _reseal_artifact(folder, packet)
    out = _replay(world, folder, packet)
    assert out["action"] == "block"
    assert any("missing pair" in r and repr(dropped["case_id"]) in r for r in out["reasons"])


def test_duplicated_pair_is_rejected_naming_the_key(world, good, tmp_path):
    folder, packet = _copy(good, tmp_path)
    lines = _lines(folder)
    _write(folder, lines + [lines[0]])
    _reseal_artifact(folder, packet)
    out = _replay(world, folder, packet)
    dup = json.loads(lines[0])
    assert out["action"] == "block"
    assert any(f"duplicated baseline trial ((case {dup['case_id']!r}, trial 0) at line 1 and line " in r
               for r in out["reasons"])


def _omit_the_failing_case(world, folder, **kw):
    """A blocked packet whose failing case is then dropped from the trials (both arms), the
    artifact hash resealed; returns the packet and its replay."""
    packet = world.run(folder, draw={"candidate_failed": 1}, **kw)
    assert packet["receipt"]["action"] == "block"
    keep = [ln for ln in _lines(folder) if json.loads(ln)["case_id"] != "case-00000-00"]
    _write(folder, keep)
    _reseal_artifact(folder, packet)
    return packet, _replay(world, folder, packet)


def test_omitted_failure_row_is_refused_against_the_population(world, tmp_path):
    _, out = _omit_the_failing_case(world, tmp_path / "f")
    assert out["action"] == "block" and not out["ok"]
    assert any("registered cases missing from the trials (1 cases; 1 whole clusters) (case 'case-00000-00' "
               "(cluster 'customer-00000'))" in r for r in out["reasons"]), out["reasons"]


def test_omitted_failure_row_without_a_population_needs_the_anchor(world, tmp_path):
    folder = tmp_path / "f"
    packet, out = _omit_the_failing_case(world, folder, population=False)
    assert out["action"] == "block" and not out["ok"]
    assert any(r.startswith("forged raw hashes") for r in out["reasons"])
    assert any(r.startswith("forged hard-failure count") for r in out["reasons"])
    # an operator who anchored the receipt in the ledger catches even a consistently rewritten packet
    rewritten = copy.deepcopy(out["receipt"])
    packet["receipt"] = rewritten
    assert _replay(world, folder, packet)["ok"]  # a self-consistent rewrite, without an anchor ...
    anchored = _replay(world, folder, packet, anchor=world.run(tmp_path / "g", draw={"candidate_failed": 1},
                                                               population=False)["receipt"]["receipt_sha256"])
    assert not anchored["ok"] and "is not the anchored receipt" in anchored["reasons"][0]


def test_manifest_changed_after_execution_is_rejected(world, good, tmp_path):
    folder, packet = _copy(good, tmp_path)
    packet["manifest"]["margin"] = 0.05
    out = _replay(world, folder, packet)
    assert out["action"] == "block"
    assert any(r.startswith("manifest changed after execution") for r in out["reasons"])
    assert any("ran under manifest" in r for r in out["reasons"])  # the trials still carry the old hash


def test_fabricated_cost_provenance_is_rejected(world, good, tmp_path):
    folder, packet = _copy(good, tmp_path)
    # a measured experiment: relabel one trial's cost as synthetic
    lines = _lines(folder)
    row = json.loads(lines[0])
    row["cost_provenance"] = "synthetic"
    lines[0] = json.dumps(row)
    _write(folder, lines)
    _reseal_artifact(folder, packet)
    out = _replay(world, folder, packet)
    assert out["action"] == "block"
    assert "fabricated cost provenance" in " ".join(out["receipt"]["reasons"])


def test_forged_comparison_is_rejected(world, good, tmp_path):
    folder, packet = _copy(good, tmp_path)
    packet["receipt"]["comparison"]["lower"] = 0.0
    _reseal_receipt(packet)
    out = _replay(world, folder, packet)
    assert out["action"] == "block" and out["reasons"] == [
        "forged comparison: the stored comparison differs from the one recomputed from raw trials"]


def test_forged_hard_failure_count_is_rejected(world, tmp_path):
    folder = tmp_path / "f"
    packet = world.run(folder, draw={"candidate_failed": 2})
    packet["receipt"]["hard_failures"]["candidate_trials_with_failed_checks"] = 0
    packet["receipt"]["action"], packet["receipt"]["state"] = "canary_eligible", "qualified"
    _reseal_receipt(packet)
    out = _replay(world, folder, packet)
    assert out["action"] == "block"
    assert any(r.startswith("forged hard-failure count") for r in out["reasons"])


def test_forged_raw_hash_is_rejected(world, good, tmp_path):
    folder, packet = _copy(good, tmp_path)
    packet["receipt"]["components"]["raw_artifacts"]["trials"] = "sha256:" + "9" * 64
    _reseal_receipt(packet)
    out = _replay(world, folder, packet)
    assert out["action"] == "block" and any(r.startswith("forged raw hashes") for r in out["reasons"])


def test_edited_receipt_without_resealing_is_rejected(world, good, tmp_path):
    folder, packet = _copy(good, tmp_path)
    packet["receipt"]["valid_until"] = "2099-01-01T00:00:00Z"
    out = _replay(world, folder, packet)
    assert out["action"] == "block"
    assert "receipt content hash does not match its contents (edited after issue)" in out["reasons"]


def test_replayed_qualification_record_replaced_is_rejected(world, good, tmp_path):
    folder, packet = _copy(good, tmp_path)
    qdir = tmp_path / "q"
    shutil.copytree(world.qdir, qdir)
    record = json.loads(world.record.read_text())
    record["valid_until"] = "2099-01-01T00:00:00Z"
    record["record_sha256"] = content_hash({k: v for k, v in record.items() if k != "record_sha256"})[7:]
    (qdir / world.record.name).write_text(json.dumps(record))
    out = replay_packet(packet, base=folder, qualification_dir=qdir, trusted=world.trusted)
    assert out["action"] == "block"
    assert any(r.startswith("stored action 'canary_eligible' differs") for r in out["reasons"])
    assert "not found" in " ".join(out["receipt"]["reasons"])  # the pinned hash no longer exists


def test_expired_receipt_resolves_expired(good):
    _, packet = good
    r = packet["receipt"]
    end = dt.datetime.fromisoformat(r["valid_until"].replace("Z", "+00:00"))
    inside = resolve_receipt(r, end - dt.timedelta(seconds=1), replayed=True)
    after = resolve_receipt(r, end + dt.timedelta(seconds=1), replayed=True)
    assert inside["action"] == "canary_eligible"
    assert (after["state"], after["action"], after["authority"]) == ("expired", "block", "none")
    assert after["reasons"][0].startswith(f"expired: valid until {r['valid_until']}")


def test_component_drift_resolves_expired(good):
    _, packet = good
    r = packet["receipt"]
    t = dt.datetime.fromisoformat(r["issued_at"].replace("Z", "+00:00")) + dt.timedelta(hours=1)
    same = resolve_receipt(r, t, {"inputs.dataset": r["components"]["inputs"]["dataset"],
                          "population": r["components"]["population"]}, replayed=True)
    assert same["action"] == "canary_eligible"
    for name in ("inputs.dataset", "population", "qualification"):
        out = resolve_receipt(r, t, {name: "sha256:" + "e" * 64})
        assert out["action"] == "block" and out["state"] == "expired"
        assert out["reasons"] == [f"drift: {name} is now sha256:{'e' * 64}, the receipt bound "
                                  f"{resolve_bound(r, name)}"]


def resolve_bound(receipt, name):
    from evidence.resolve import bound_components
    return bound_components(receipt)[name]


def test_resolve_is_idempotent(good):
    _, packet = good
    r = packet["receipt"]
    t = dt.datetime(2030, 1, 1, tzinfo=dt.timezone.utc)
    first = resolve_receipt(r, t, {"population": "sha256:" + "e" * 64})
    assert first == resolve_receipt(r, t, {"population": "sha256:" + "e" * 64})
    ok_t = dt.datetime.fromisoformat(r["issued_at"].replace("Z", "+00:00"))
    assert resolve_receipt(r, ok_t) == resolve_receipt(r, ok_t)
    assert resolve_receipt(r, ok_t, replayed=True) == resolve_receipt(r, ok_t, replayed=True)


def test_method_source_drift_resolves_expired(good):
    _, packet = good
    r = copy.deepcopy(packet["receipt"])
    r["components"]["method"]["source_sha256"] = "0" * 64
    r = with_self_hash(r, "receipt_sha256")
    t = dt.datetime.fromisoformat(r["issued_at"].replace("Z", "+00:00"))
    out = resolve_receipt(r, t)
    assert out["action"] == "block" and out["reasons"][0].startswith("drift: method source is now")


CLAIMS = {  # scenario -> (manifest overrides, run options, phrase the recomputed receipt must give)
    "synthetic_claims_canary": (dict(measurement_kind="synthetic"), {}, "synthetic evidence authorises lab work only"),
    "few_clusters_many_trials": (dict(repetitions=3), dict(clusters=10, cases=10),
                                 "10 independent clusters < the registered minimum 30"),
    "record_for_another_method": (dict(method="exact_discordant"), dict(draw={"discordance": 0.1}),
                                  "record is for method 'binomial_loss', not the registered 'exact_discordant'"),
    "record_for_another_design": (dict(margin=0.05), {}, "margin=0.05 is not on the record's grid"),
    "icc_above_rho_max": (dict(repetitions=3, rho_max=0.0), dict(draw={"rho": 0.5}),
                          "exceeds the registered rho_max 0"),
}


@pytest.mark.parametrize("name", sorted(CLAIMS))
def test_forged_canary_claim_is_rejected_with_the_recomputed_reason(world, tmp_path, name):
    overrides, run, phrase = CLAIMS[name]
    folder = tmp_path / name
    packet = world.run(folder, world.manifest(**overrides), **run)
    honest = packet["receipt"]["action"]
    assert honest != "canary_eligible"
    packet["receipt"].update(state="qualified", action="canary_eligible", authority="canary")
    _reseal_receipt(packet)
    out = _replay(world, folder, packet)
    assert out["action"] == "block" and not out["ok"]
    assert f"stored action 'canary_eligible' differs from the recomputed {honest!r}" in out["reasons"]
    recomputed = out["receipt"]["reasons"] + out["receipt"]["other_findings"]
    assert any(phrase in r for r in recomputed), recomputed


@pytest.mark.parametrize("version", ["99", 1, None])
def test_a_packet_of_another_schema_version_is_rejected(world, good, tmp_path, version):
    """A packet of a schema this simlab does not write replayed as identical (probe round 3)."""
    folder, packet = _copy(good, tmp_path)
    packet["schema_version"] = version
    out = _replay(world, folder, packet)
    assert out["action"] == "block" and out["reasons"] == [
        f"packet schema_version {version!r} is not one this simlab reads ('1')"]


def test_an_artifact_whose_stated_format_is_not_how_it_is_read_is_rejected(world, good, tmp_path):
    """A .jsonl file listed as format csv replayed as identical: the stated format went unchecked."""
    folder, packet = _copy(good, tmp_path)
    packet["artifacts"][0]["format"] = "csv"
    out = _replay(world, folder, packet)
    assert out["action"] == "block"
    assert "artifact trials states format 'csv', but exp.jsonl is read as 'jsonl'" in out["reasons"]


@pytest.mark.parametrize("edit, reason", [
    (lambda p: p["artifacts"][0].pop("format"), "artifacts[0].format must be a string, got None"),
    (lambda p: p["artifacts"][0].update(path=None), "artifacts[0].path must be a string, got None"),
    (lambda p: p["artifacts"][0].update(note="x"), "artifacts[0] has fields simlab does not write: note"),
    (lambda p: p.update(extra_field=1), "packet has fields simlab does not write: extra_field"),
    (lambda p: p["artifacts"].append(dict(p["artifacts"][0])), "artifact role 'trials' is listed 2 times"),
])
def test_a_packet_simlab_could_not_have_written_is_rejected(world, good, tmp_path, edit, reason):
    """Each of these replayed as identical (probe round 4): deleting the format evaded its check,
    a null path gave Python's TypeError text, extra fields and a repeated artifact went unnoticed."""
    folder, packet = _copy(good, tmp_path)
    edit(packet)
    out = _replay(world, folder, packet)
    assert out["action"] == "block" and reason in out["reasons"]


def test_a_malformed_test_receipt_is_named_in_one_line(world, good, tmp_path):
    folder, packet = _copy(good, tmp_path)
    packet["tests"] = [{"name": "t", "passed": True}]
    out = _replay(world, folder, packet)
    assert out["action"] == "block"
    assert any(r.startswith("packet components invalid: tests[0].") and "\n" not in r and "pydantic" not in r
               for r in out["reasons"])
