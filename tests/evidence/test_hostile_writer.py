"""What a hostile or careless writer could still get through (issue 27, item 9), each refused
with its reason: omitted clusters or cases against the registered population, resolve
trusting a self-consistent packet, a truncated or rebuilt ledger, a lax CSV route."""
from __future__ import annotations

import copy
import json
import sqlite3

import pytest

from simlab.hashing import with_self_hash
from evidence.ledger import append, sign_head, verify, verify_signed_head
from evidence.packet import population_artifact, run_experiment, trial_artifacts
from evidence.population import PopulationError, identity
from evidence.resolve import UNAUTHENTICATED, resolve_receipt, resolve_packet
from evidence.trials import TrialsError, parse_trials
from simlab import signing


def _trials(path, manifest, clusters: int, cases: int, loss_clusters: set[int], drop=lambda k, j: False):
    """One trial per case; clusters in ``loss_clusters`` lose their first case (baseline pass,
    candidate fail); every other pair ties (both pass)."""
    rows = []
    for k in range(clusters):
        for j in range(cases):
            if drop(k, j):
                continue
            for arm in ("baseline", "candidate"):
                passed = not (arm == "candidate" and k in loss_clusters and j == 0)
                rows.append({"case_id": f"c{k}-{j}", "trial_index": 0, "cluster_id": f"u{k}", "arm": arm,
                             "passed": passed, "failed_checks": [], "latency_ms": None, "cost": 0.001,
                             "cost_provenance": "measured", "manifest_sha256": manifest.sha256})
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


def _population(path, clusters: int, cases: int):
    cases_of = {f"c{k}-{j}": f"u{k}" for k in range(clusters) for j in range(cases)}
    path.write_text("".join(json.dumps({"case_id": c, "cluster_id": u}) + "\n" for c, u in cases_of.items()))
    return path, identity(cases_of)


LOSSES = set(range(0, 525, 21))  # 25 clusters with a loss among 530: the full data fail


@pytest.fixture
def omission(world, tmp_path):
    pop, h = _population(tmp_path / "cases.jsonl", 530, 1)
    manifest = world.manifest(population_hash=h)
    return manifest, pop


def _go(world, manifest, trials, out, pop=None):
    arts = trial_artifacts(trials) + ([population_artifact(pop)] if pop else [])
    return run_experiment(manifest=manifest, artifacts=arts, out=out, qualification_dir=world.qdir,
                          trusted=world.trusted, now=world.now)


def test_full_data_fail(world, tmp_path, omission):
    manifest, pop = omission
    packet = _go(world, manifest, _trials(tmp_path / "all.jsonl", manifest, 530, 1, LOSSES), tmp_path / "a.json", pop)
    assert packet["receipt"]["action"] == "block" and packet["receipt"]["comparison"]["status"] == "fail"


def test_dropping_the_loss_clusters_is_refused_naming_them(world, tmp_path, omission):
    manifest, pop = omission
    dropped = LOSSES | {1, 2, 3, 4, 5}  # and 5 others: 500 clusters remain, all ties
    trials = _trials(tmp_path / "cut.jsonl", manifest, 530, 1, LOSSES, drop=lambda k, j: k in dropped)
    with pytest.raises(PopulationError) as exc:
        _go(world, manifest, trials, tmp_path / "b.json", pop)
    msg = str(exc.value)
    assert "registered cases missing from the trials (30 cases; 30 whole clusters) (30 cases, e.g. case 'c0-0' " \
           "(cluster 'u0'), case 'c1-0' (cluster 'u1'), case 'c105-0' (cluster 'u105'), and 27 more)" in msg
    assert len(exc.value.errors) == 30
    # without the registered list the same trials cannot pass as more than lab work
    packet = _go(world, manifest, trials, tmp_path / "c.json")
    r = packet["receipt"]
    assert r["comparison"]["status"] == "pass" and r["action"] == "lab_pass"
    assert r["reasons"] == ["population membership not checked: no registered case list was given (the manifest's "
                            "population_hash binds the cases and clusters that must be present)"]


def test_dropping_both_rows_of_the_loss_cases_is_an_omission_too(world, tmp_path):
    pop, h = _population(tmp_path / "cases.jsonl", 300, 2)
    manifest = world.manifest(population_hash=h)
    losses = {7, 91}
    trials = _trials(tmp_path / "t.jsonl", manifest, 300, 2, losses, drop=lambda k, j: k in losses and j == 0)
    with pytest.raises(PopulationError, match=r"registered cases missing from the trials \(2 cases; 0 whole clusters\) "
                                              r"\(2 cases, e.g. case 'c7-0' \(cluster 'u7'\), case 'c91-0'"):
        _go(world, manifest, trials, tmp_path / "p.json", pop)


def test_extra_cases_and_moved_cases_are_named(world, tmp_path):
    pop, h = _population(tmp_path / "cases.jsonl", 300, 1)
    manifest = world.manifest(population_hash=h)
    trials = _trials(tmp_path / "t.jsonl", manifest, 301, 1, set())
    with pytest.raises(PopulationError, match=r"cases in the trials that the population does not list \(case "
                                              r"'c300-0' \(cluster 'u300'\)\)"):
        _go(world, manifest, trials, tmp_path / "p.json", pop)


def test_a_population_file_that_is_not_the_registered_one_is_refused(world, tmp_path):
    pop, _ = _population(tmp_path / "cases.jsonl", 300, 1)
    manifest = world.manifest()  # pins another population hash
    trials = _trials(tmp_path / "t.jsonl", manifest, 300, 1, set())
    with pytest.raises(ValueError, match="not the registered population") as exc:
        _go(world, manifest, trials, tmp_path / "p.json", pop)
    assert exc.value.option == "population"


# ---------------------------------------------------------------- resolve


def _resealed_canary(receipt: dict, **changes) -> dict:
    forged = copy.deepcopy(receipt)
    forged.update(state="qualified", action="canary_eligible", authority="canary", **changes)
    return with_self_hash(forged, "receipt_sha256")


def test_a_resealed_lab_pass_does_not_resolve_to_canary(world, tmp_path):
    packet = world.run(tmp_path, world.manifest(measurement_kind="synthetic", code_revision="a" * 40))
    assert packet["receipt"]["action"] == "lab_pass"
    forged = _resealed_canary(packet["receipt"])
    out = resolve_receipt(forged, world.now)
    assert (out["action"], out["authority"]) == ("lab_pass", "lab_only") and out["reasons"][0] == UNAUTHENTICATED
    packet["receipt"] = forged
    replayed = resolve_packet(packet, world.now, base=tmp_path, qualification_dir=world.qdir, trusted=world.trusted)
    assert replayed["action"] == "block"
    assert "packet does not replay: stored action 'canary_eligible' differs from the recomputed 'lab_pass'" in \
        replayed["reasons"]


def test_a_zeroed_hard_failure_count_does_not_resolve_to_canary(world, tmp_path):
    packet = world.run(tmp_path, draw={"candidate_failed": 1})
    assert packet["receipt"]["action"] == "block"
    forged = _resealed_canary(packet["receipt"], hard_failures={"candidate_trials_with_failed_checks": 0,
                                                                "examples": []}, reasons=[], other_findings=[])
    out = resolve_receipt(forged, world.now)
    assert out["action"] == "lab_pass" and out["reasons"][0] == UNAUTHENTICATED
    packet["receipt"] = forged
    replayed = resolve_packet(packet, world.now, base=tmp_path, qualification_dir=world.qdir, trusted=world.trusted)
    assert replayed["action"] == "block" and "packet does not replay: forged hard-failure count: stored candidate " \
                                              "failed-check count differs from the raw trials" in replayed["reasons"]


def test_an_honest_canary_resolves_to_canary_when_replayed_or_signed(world, good):
    folder, packet = good
    assert resolve_packet(packet, world.now, base=folder, qualification_dir=world.qdir,
                          trusted=world.trusted)["action"] == "canary_eligible"
    key = signing.load_private_key(world.key)
    from evidence.signatures import sign_document
    envelope = sign_document(packet["receipt"], key)
    from evidence.signatures import verify_document
    signed_by = verify_document(packet["receipt"], envelope, world.trusted)
    assert resolve_receipt(packet["receipt"], world.now, signature={"signed_by": signed_by})["action"] == "canary_eligible"


# ---------------------------------------------------------------- the ledger


def _ledger(tmp_path, actions=("lab_pass", "block", "hold", "lab_pass")):
    path = tmp_path / "ledger.sqlite"
    for i, a in enumerate(actions):
        append(path, {"kind": "simlab.evidence.receipt", "experiment_id": f"exp-{i}", "action": a})
    return path


def test_deleting_the_last_entry_is_caught_by_the_retained_head(tmp_path):
    path = _ledger(tmp_path)
    head = verify(path)["head"]
    con = sqlite3.connect(path, isolation_level=None)
    con.execute("DROP TRIGGER entries_no_delete")
    con.execute("DELETE FROM entries WHERE seq = 4")
    con.execute("CREATE TRIGGER entries_no_delete BEFORE DELETE ON entries "
                "BEGIN SELECT RAISE(ABORT, 'the ledger is append-only'); END")   # put back, as it was
    con.close()
    assert verify(path)["ok"]  # the chain alone is self-consistent ...
    out = verify(path, head=head)
    assert not out["ok"] and out["problems"] == [f"retained head {head} is not in the chain: entries were deleted "
                                                 "(truncated) or the chain was rebuilt since that head was kept"]


def test_a_chain_rebuilt_without_the_block_entry_is_caught_by_a_signed_head(tmp_path):
    path = _ledger(tmp_path)
    key = signing.generate_key()
    _, public = signing.save_keypair(key, tmp_path / "keys", "ops")
    trusted = signing.trusted_keys([public])
    envelope = sign_head(path, key)
    rebuilt = tmp_path / "rebuilt.sqlite"
    from evidence.ledger import entries
    for receipt in entries(path):
        if receipt["action"] != "block":
            append(rebuilt, receipt)
    assert verify(rebuilt)["ok"]
    statement = verify_signed_head(envelope, trusted)
    assert statement["seq"] == 4 and statement["signed_by"] == signing.key_id(key)
    out = verify(rebuilt, head=statement["entry_sha256"], head_seq=statement["seq"])
    assert not out["ok"] and "is not in the chain" in out["problems"][0]
    assert verify(path, head=statement["entry_sha256"], head_seq=4)["ok"]


def test_a_head_signed_for_a_rebuilt_chain_needs_the_trusted_key(tmp_path):
    path = _ledger(tmp_path)
    key, stranger = signing.generate_key(), signing.generate_key()
    _, public = signing.save_keypair(key, tmp_path / "keys", "ops")
    trusted = signing.trusted_keys([public])
    forged = sign_head(path, key)
    forged["statement"]["entry_sha256"] = "sha256:" + "e" * 64  # the head of some rebuilt chain
    with pytest.raises(signing.SignatureError, match="does not verify"):
        verify_signed_head(forged, trusted)
    with pytest.raises(signing.SignatureError, match="not in the trusted key set"):
        verify_signed_head(sign_head(path, stranger), trusted)


def test_cli_verify_ledger_against_a_head(tmp_path, capsys):
    from simlab.cli import main

    path = _ledger(tmp_path)
    head = verify(path)["head"]
    assert main(["evidence", "verify-ledger", str(path), "--head", head]) == 0
    assert "retained head found at entry 4" in capsys.readouterr().out
    assert main(["evidence", "keygen", "--out", str(tmp_path / "k"), "--json"]) == 0
    capsys.readouterr()
    assert main(["evidence", "sign-head", str(path), "--key", str(tmp_path / "k" / "simlab.key"), "--out",
                 str(tmp_path / "head.json")]) == 0
    capsys.readouterr()
    append(path, {"kind": "simlab.evidence.receipt", "experiment_id": "later", "action": "hold"})
    assert main(["evidence", "verify-ledger", str(path), "--signed-head", str(tmp_path / "head.json"), "--trusted",
                 str(tmp_path / "k" / "simlab.pub")]) == 0
    out = capsys.readouterr().out
    assert "retained head found at entry 4, signed by ed25519:" in out and "1 entries after it" in out
    assert main(["evidence", "verify-ledger", str(path), "--signed-head", str(tmp_path / "head.json")]) == 2


# ---------------------------------------------------------------- CSV as strict as JSONL

H = "sha256:" + "a" * 64
HEADER = "case_id,trial_index,cluster_id,arm,passed,failed_checks,latency_ms,cost,cost_provenance,manifest_sha256"


def _csv(header: str, *rows: str) -> bytes:
    return ("\n".join([header, *rows]) + "\n").encode()


def _errors(data: bytes, fmt="csv") -> list[str]:
    with pytest.raises(TrialsError) as exc:
        parse_trials(data, fmt, "t")
    return exc.value.errors


def test_csv_extra_column_is_refused():
    data = _csv(HEADER + ",note", f"c1,0,k1,baseline,true,,1,,absent,{H},hello")
    assert _errors(data)[0].startswith("line 1: header: unknown column(s) ['note']")   # no empty kinds named


def test_csv_second_passed_column_is_refused():
    data = _csv(HEADER + ",passed", f"c1,0,k1,baseline,true,,1,,absent,{H},false")
    assert "repeated column(s) ['passed']" in _errors(data)[0]


def test_csv_nan_latency_is_refused_as_jsonl_refuses_it():
    csv_err = _errors(_csv(HEADER, f"c1,0,k1,baseline,true,,nan,,absent,{H}"))
    row = {"case_id": "c1", "trial_index": 0, "cluster_id": "k1", "arm": "baseline", "passed": True,
           "failed_checks": [], "latency_ms": float("nan"), "cost": None, "cost_provenance": "absent",
           "manifest_sha256": H}
    jsonl_err = _errors(json.dumps(row).encode() + b"\n", "jsonl")
    assert csv_err == [e.replace("line 1", "line 2") for e in jsonl_err] == \
        ["line 2, field latency_ms: Input should be a finite number"]


def test_csv_empty_cell_is_not_recorded_on_both_read_paths():
    from evidence.columnar import columns_from_arrow, read_arrow
    from evidence.trials import _csv_rows, columns_from_records, validate_rows

    data = _csv(HEADER + ",slice", f"c1,0,k1,baseline,true,,,,absent,{H},smb", f"c1,0,k1,candidate,false,x;y,3.5,,absent,{H},smb")
    fast = columns_from_arrow(read_arrow(data, "csv"), "t", first_line=2)
    slow = columns_from_records(validate_rows(list(_csv_rows(data)), "t"), "t")
    for cols in (fast, slow):
        assert cols.failed_checks_of(1) == ("x", "y") and list(cols.slice_names) == ["smb", "smb"]
        assert cols.latency[0] != cols.latency[0] and cols.latency[1] == 3.5


@pytest.mark.parametrize("cell", ["[]", '"[""a""]"', " [a]"])
def test_csv_json_list_in_failed_checks_is_refused_on_both_read_paths(cell):
    # "[]" (a JSON list typed into a CSV) was read as one failed check named "[]"
    from evidence.columnar import read_arrow
    data = _csv(HEADER, f"c1,0,k1,baseline,true,,1,,absent,{H}", f"c1,0,k1,candidate,true,{cell},1,,absent,{H}")
    err = _errors(data)
    assert len(err) == 1 and err[0].startswith("line 3, field failed_checks: check names separated by ';'")
    assert "JSON list" in err[0]
    assert columns_from_arrow_or_none(read_arrow(data, "csv")) is None


def columns_from_arrow_or_none(table):
    """The fast path's answer: None where it hands the file to the slow path."""
    from evidence.columnar import columns_from_arrow
    return None if table is None else columns_from_arrow(table, "t", first_line=2)


def test_csv_check_names_without_brackets_still_read():
    data = _csv(HEADER, f"c1,0,k1,candidate,true,a;b],1,,absent,{H}")
    assert parse_trials(data, "csv", "t").failed_checks_of(0) == ("a", "b]")
