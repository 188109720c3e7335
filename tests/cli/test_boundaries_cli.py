"""``simlab sequential boundaries``: one JSON object, the rpact-checked figures, clear errors."""
from __future__ import annotations

import json

import pytest

from simlab.cli import main


def run(capsys, *argv):
    rc = main(list(argv))
    out = capsys.readouterr().out
    lines = [ln for ln in out.splitlines() if ln.strip()]
    assert len(lines) == 1, out
    return rc, json.loads(lines[0])


def test_power_family_json(capsys):
    # rpact tests/testthat/test-f_design_group_sequential.R, x3 (asKD, gammaA = 2.2), line 226
    rc, p = run(capsys, "sequential", "boundaries", "--spending", "power", "--alpha", "0.03",
                "--information", "0.3,0.7,1", "--gamma", "2.2", "--json")
    assert rc == 0
    assert p["z"] == pytest.approx([2.8594012, 2.2435708, 1.9735737], abs=2e-7)
    assert p["cumulative_alpha"] == pytest.approx([0.0021222083, 0.013687904, 0.03], rel=1e-6)
    assert set(p) >= {"information", "nominal_p", "incremental_alpha", "parameter", "family"}


def test_table_output_and_errors(capsys):
    assert main(["sequential", "boundaries", "--spending", "obf", "--information", "0.5,1"]) == 0
    out = capsys.readouterr().out
    assert "z boundary" in out and "2.96" in out  # obf, alpha 0.025, two equal looks: b1 = 2.9626
    rc, p = run(capsys, "sequential", "boundaries", "--spending", "hsd", "--information", "0.5,x", "--json")
    assert rc == 2 and "information" in p["error"]["message"]
    rc, p = run(capsys, "sequential", "boundaries", "--spending", "pocock", "--information", "0.5,1",
                "--gamma", "1", "--json")
    assert rc == 2 and "no parameter" in p["error"]["message"]
