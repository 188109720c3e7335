"""The execution-backend options of the CLI (--scheduler / --dask-workers, beside
--n-jobs): bad combinations and unwritable outputs are refused before any work, with
one-line errors.  (``simlab study run --scheduler`` on a real cluster is tested with the
dask backend, tests/studies/test_dask_backend.py, to share its cluster.)"""
from __future__ import annotations

import json

from simlab.cli import main

SPEC = {"name": "backend", "methods": ["paired_wald"], "replications": 1000, "seed": 4,
        "scenario": {"clusters": 10, "baseline": 0.9, "discordance": 0.1, "difference": -0.03}}


def _json(capsys, argv):
    rc = main(argv)
    out = capsys.readouterr().out.strip().splitlines()
    assert len(out) == 1, out
    return rc, json.loads(out[0])


def test_backend_and_output_errors_come_before_any_work(tmp_path, capsys):
    spec = tmp_path / "s.json"
    spec.write_text(json.dumps(SPEC))
    rc, p = _json(capsys, ["study", "run", str(spec), "--dask-workers", "2", "--n-jobs", "2", "--json"])
    assert rc == 2 and "not both" in p["error"]["message"]
    rc, p = _json(capsys, ["study", "run", str(spec), "--dask-workers", "0", "--json"])
    assert rc == 2 and "--dask-workers" in json.dumps(p["error"])
    (tmp_path / "file").write_text("x")
    rc, p = _json(capsys, ["study", "run", str(spec), "--out", str(tmp_path / "file" / "x.nc"), "--json"])
    assert rc == 2 and "is not a directory" in p["error"]["message"]
    rc, p = _json(capsys, ["qualify", "--method", "paired_wald", "--policy", "reduced-small",
                           "--out", str(tmp_path / "file"), "--json"])
    assert rc == 2 and "is a file, not a directory" in p["error"]["message"] and p["error"]["field"] == "--out"
