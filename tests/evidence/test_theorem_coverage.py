"""A method valid by theorem is covered at every design by its theorem record: the evidence
path pins the record by its ``theorem_sha256``, and the design's K, cluster sizes and rho are
no assumption of the theorem -- clusters of unequal size included, which no grid record or
certificate covers."""
from __future__ import annotations

import datetime as dt
import json
from pathlib import Path

from evidence import population_artifact, replay_packet, run_experiment, trial_artifacts
from evidence.population import identity
from evidence.synthetic import demo_manifest

SHIPPED = Path(__file__).resolve().parents[2] / "results" / "qualification" / "betting_ci.theorem.json"
CLUSTERS = 200


def _population() -> dict[str, str]:
    """Unequal clusters: customer k has 1 + k % 3 cases."""
    return {f"case-{k:05d}-{j}": f"customer-{k:05d}" for k in range(CLUSTERS) for j in range(1 + k % 3)}


def _write(folder: Path, manifest, population: dict[str, str]) -> list[dict]:
    rows = [{"case_id": case, "trial_index": 0, "cluster_id": cluster, "arm": arm,
             "passed": not (arm == "baseline" and case.endswith("-0") and int(cluster[-5:]) % 25 == 0),
             "failed_checks": [], "latency_ms": None, "cost": 0.001, "cost_provenance": "measured",
             "manifest_sha256": manifest.sha256}
            for case, cluster in population.items() for arm in ("baseline", "candidate")]
    (folder / "trials.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    (folder / "cases.jsonl").write_text("".join(json.dumps({"case_id": c, "cluster_id": k}) + "\n"
                                                for c, k in population.items()))
    return trial_artifacts(folder / "trials.jsonl") + [population_artifact(folder / "cases.jsonl")]


def _signed_theorem(world, qdir: Path) -> str:
    from methods.qualification import load_theorem_record
    from simlab import signing

    record = load_theorem_record(SHIPPED).signed(signing.load_private_key(world.key))
    qdir.mkdir(parents=True, exist_ok=True)
    (qdir / SHIPPED.name).write_text(record.to_json())
    return record.theorem_sha256


def test_a_theorem_record_covers_unequal_clusters_and_lifts_the_receipt(world, tmp_path):
    qdir = tmp_path / "q"
    pin = _signed_theorem(world, qdir)
    population = _population()
    # the registered rho_max still bounds the observed ICC (a plan-consistency rule of the
    # receipt), although the theorem itself holds at any rho
    manifest = demo_manifest(method="betting_ci", margin=0.05, rho_max=0.6, minimum_clusters=30,
                             measurement_kind="measured", code_revision="c" * 40, qualification_sha256=pin,
                             population_hash=identity(population), created=world.now - dt.timedelta(minutes=5))
    packet = run_experiment(manifest=manifest, artifacts=_write(tmp_path, manifest, population),
                            out=tmp_path / "packet.json", qualification_dir=qdir, trusted=world.trusted, now=world.now)
    r = packet["receipt"]
    q = r["qualification"]
    assert q["covered"] and q["guarantee"] == "theorem" and q["record_file"] == SHIPPED.name, q["reasons"]
    assert "Waudby-Smith & Ramdas" in q["assumptions"]
    assert q["reasons"][0].startswith(f"{SHIPPED.name} covers K={CLUSTERS}, 1..3 trial pair(s) per cluster")
    assert "any rho (valid by theorem)" in q["reasons"][0] and r["comparison"]["icc"]["upper"] > 0.05
    assert q["signature"]["signed_by"] is not None and q["valid_until"] is None
    assert r["comparison"]["status"] == "pass"
    assert (r["state"], r["action"]) == ("qualified", "canary_eligible"), r["reasons"]
    assert replay_packet(packet, base=tmp_path, qualification_dir=qdir, trusted=world.trusted)["ok"]


def test_unequal_clusters_are_refused_by_a_grid_record_and_the_theorem_record_must_be_current(world, tmp_path):
    """The same unequal design under the grid record of binomial_loss is not covered (grid
    records hold fixed cluster sizes); a theorem record whose statement was edited no longer
    loads (its hash, then the method's declaration, are checked)."""
    population = _population()
    manifest = world.manifest(population_hash=identity(population))
    packet = run_experiment(manifest=manifest, artifacts=_write(tmp_path, manifest, population),
                            out=tmp_path / "grid.json", qualification_dir=world.qdir, trusted=world.trusted,
                            now=world.now)
    q = packet["receipt"]["qualification"]
    assert not q["covered"] and q["guarantee"] == "model-certified"
    assert "unequal numbers of analysed units (1..3)" in q["reasons"][0]
    assert packet["receipt"]["action"] != "canary_eligible"

    qdir = tmp_path / "edited"
    pin = _signed_theorem(world, qdir)
    data = json.loads((qdir / SHIPPED.name).read_text())
    data["statement"] = "for any law whatsoever"
    (qdir / SHIPPED.name).write_text(json.dumps(data))
    theorem = demo_manifest(method="betting_ci", margin=0.05, measurement_kind="measured", code_revision="c" * 40,
                            qualification_sha256=pin, population_hash=identity(population),
                            created=world.now - dt.timedelta(minutes=5))
    edited = run_experiment(manifest=theorem, artifacts=_write(tmp_path, theorem, population),
                            out=tmp_path / "edited.json", qualification_dir=qdir, trusted=world.trusted,
                            now=world.now)["receipt"]
    assert not edited["qualification"]["covered"] and edited["action"] != "canary_eligible"
    assert edited["qualification"]["reasons"][0].startswith("qualification record unusable: theorem record"), \
        edited["qualification"]["reasons"]
