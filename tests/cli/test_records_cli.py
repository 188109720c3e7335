"""`simlab certify` and `simlab records` (list, verify, sign, coverage, regenerate)."""
from __future__ import annotations

import json
from pathlib import Path

from methods.qualification import Axis, IntAxis, QualificationDomain, QualificationPolicy, load_record
from simlab import signing
from simlab.cli import main
from simlab.scenario import FixedSize


def _qualified_dir(tmp_path, capsys):
    dom = QualificationDomain(clusters=IntAxis(lo=20, hi=40, grid=(20, 40)), cluster_sizes=(FixedSize(trials=1),),
                              rho=Axis(lo=0.0, hi=0.0, grid=(0.0,)), margin=Axis(lo=0.1, hi=0.1, grid=(0.1,)),
                              baseline=Axis(lo=0.9, hi=1.0, grid=(0.9, 1.0)),
                              discordance=Axis(lo=0.1, hi=0.2, grid=(0.1, 0.2)))
    pol = QualificationPolicy(domain=dom, min_replications=300, max_replications=1200, refine_evaluations=1)
    f = tmp_path / "policy.json"
    f.write_text(json.dumps(pol.canonical()))
    d = tmp_path / "records"
    assert main(["qualify", "--method", "tango_score,exact_discordant", "--policy", str(f), "--out", str(d),
                 "--json"]) == 0
    capsys.readouterr()
    return d


def test_records_regenerate_reproduces_and_verify_sign_coverage(tmp_path, capsys):
    d = _qualified_dir(tmp_path, capsys)
    assert main(["records", "list", "--records", str(d), "--json"]) == 0
    files = json.loads(capsys.readouterr().out)["files"]
    assert [f["kind"] for f in files] == ["grid record", "grid record"]
    listed = [f["file"] for f in files]

    assert main(["records", "regenerate", "--records", str(d), "--dry-run", "--json"]) == 0
    plan = json.loads(capsys.readouterr().out)["plan"]
    assert len(plan) == 1 and plan[0]["methods"] == ["exact_discordant", "tango_score"]
    again = tmp_path / "again"
    assert main(["records", "regenerate", "--records", str(d), "--out", str(again), "--only", "tango_score",
                 "--json"]) == 0
    done = json.loads(capsys.readouterr().out)["records"]
    assert [r["method"] for r in done] == ["tango_score"]
    old = load_record(next(p for p in map(Path, listed) if "tango" in p.name))
    new = load_record(done[0]["record"])
    assert new.scenarios == old.scenarios and new.cells == old.cells and new.policy_sha256 == old.policy_sha256
    assert (again / (new.dataset.file.replace(".nc", ".png"))).read_bytes()[:4] == b"\x89PNG"

    assert main(["records", "verify", "--records", str(d), "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["all_ok"]
    key = signing.generate_key()
    priv, pub = signing.save_keypair(key, tmp_path / "keys")
    assert main(["records", "verify", "--records", str(d), "--trusted-keys", str(pub), "--json"]) == 2
    err = json.loads(capsys.readouterr().out)["error"]["message"]
    assert "2 of 2 files failed verification" in err and "unsigned" in err
    assert main(["records", "sign", "--records", str(d), "--key", str(priv), "--json"]) == 0
    assert len(json.loads(capsys.readouterr().out)["signed"]) == 2
    assert main(["records", "verify", "--records", str(d), "--trusted-keys", str(pub), "--json"]) == 0
    capsys.readouterr()

    assert main(["records", "coverage", "--records", str(d), "--method", "tango_score", "--clusters", "30",
                 "--margin", "0.1", "--json"]) == 0
    c = json.loads(capsys.readouterr().out)
    assert not c["covered"] and "not on the record's grid" in c["reason"]


def test_certify_command(tmp_path, capsys):
    assert main(["certify", "--method", "tango_score", "--clusters", "110", "--margin", "0.01",
                 "--out", str(tmp_path), "--json"]) == 0
    p = json.loads(capsys.readouterr().out)
    assert p["verdict"] == "exceeds" and p["engine"] == "exact-discordant" and p["worst"]["rate"] > 0.0275
    assert main(["records", "coverage", "--records", str(tmp_path / "none"), "--method", "tango_score",
                 "--clusters", "110", "--margin", "0.01", "--certificate", p["file"], "--json"]) == 0
    c = json.loads(capsys.readouterr().out)
    assert not c["covered"] and "exceeds" in c["reason"]
    assert main(["certify", "--method", "newcombe_hybrid", "--clusters", "30", "--margin", "0.03", "--engine",
                 "exact", "--json"]) == 2
    assert "does not apply" in json.loads(capsys.readouterr().out)["error"]["message"]
