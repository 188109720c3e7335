"""Issue 10.5: an installed simlab finds its shipped records.  Build the wheel, install it
into a fresh virtual environment (uv; its cache makes this quick), and from a directory
outside the source tree find and verify a shipped record through the installed package,
through ``SIMLAB_RECORDS`` and through ``simlab records list --records DIR``."""
from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

PROBE = """
import json, sys
import methods.qualification as q
d = q.records_dir()
paths = q.record_paths(directory=d)
rec = q.load_record(paths[0], check_current=False)   # hashes, dates, counts re-derived from the .nc
certs = q.certificate_paths(directory=d)
cert = q.load_certificate(certs[0], check_current=False) if certs else None
print(json.dumps({"dir": str(d), "n": len(paths), "method": rec.method.name, "file": paths[0].name,
                  "cells": len(rec.cells), "policy": q.named_policy("standard").sha256,
                  "certificates": len(certs), "cert_verdict": cert.verdict if cert else None}))
"""


def _run(cmd, cwd, env=None):
    out = subprocess.run(cmd, cwd=cwd, env=env, capture_output=True, text=True, timeout=240)
    assert out.returncode == 0, f"{cmd}: {out.stdout}\n{out.stderr}"
    return out.stdout


def test_wheel_ships_and_finds_the_records(tmp_path):
    uv = shutil.which("uv")
    assert uv, "uv is needed to build and install the wheel (the project's tool)"
    shipped = sorted(p.name for p in (ROOT / "results" / "qualification").glob("*.json")
                     if not p.name.endswith((".cert.json", ".theorem.json")))
    certificates = sorted((ROOT / "results" / "qualification").glob("*.cert.json"))
    assert shipped and certificates
    _run([uv, "build", "--wheel", "-q", "-o", str(tmp_path / "dist")], cwd=ROOT)
    wheel = next((tmp_path / "dist").glob("simlab-*.whl"))
    _run([uv, "venv", "-q", str(tmp_path / "venv")], cwd=tmp_path)
    py = tmp_path / "venv" / "bin" / "python"
    _run([uv, "pip", "install", "-q", "--python", str(py), str(wheel)], cwd=tmp_path)
    away = tmp_path / "elsewhere"
    away.mkdir()
    env = {k: v for k, v in os.environ.items() if k not in ("SIMLAB_RECORDS", "PYTHONPATH", "VIRTUAL_ENV")}

    got = json.loads(_run([str(py), "-c", PROBE], cwd=away, env=env))
    site = Path(got["dir"])
    assert site.parts[-3:] == ("methods", "qualification", "records") and "site-packages" in site.parts
    assert ROOT not in site.parents
    assert got["n"] == len(shipped) and got["file"] in shipped and got["cells"] > 0
    assert got["certificates"] == len(certificates) and got["cert_verdict"] in ("qualified", "exceeds")
    assert got["policy"] == "sha256:b2433391f9e44134047a971e81bde28fadda957b31d916490dd6bfbc3cbae6b0"  # one hash form

    # an explicit override: SIMLAB_RECORDS, and --records on the command line
    mine = tmp_path / "my-records"
    mine.mkdir()
    for suffix in (".json", ".nc"):
        shutil.copy(site / Path(got["file"]).with_suffix(suffix).name, mine)
    via_env = json.loads(_run([str(py), "-c", PROBE], cwd=away, env={**env, "SIMLAB_RECORDS": str(mine)}))
    assert via_env["dir"] == str(mine) and via_env["n"] == 1
    listed = json.loads(_run([str(tmp_path / "venv" / "bin" / "simlab"), "records", "list", "--records", str(mine),
                              "--json"], cwd=away, env=env))
    assert listed["directory"] == str(mine) and [Path(f["file"]).name for f in listed["files"]] == [got["file"]]
