"""Probe round 4's remaining findings (issue 29), each with the reason asserted."""
from __future__ import annotations

import json

from simlab.cli import main


def _error(argv, capsys) -> dict:
    assert main(argv + ["--json"]) == 2
    return json.loads(capsys.readouterr().out)["error"]


def test_signing_a_document_that_cannot_be_content_addressed_names_the_document(tmp_path, capsys):
    assert main(["evidence", "keygen", "--out", str(tmp_path / "k"), "--json"]) == 0
    capsys.readouterr()
    doc = tmp_path / "nan.json"
    doc.write_text('{"a": NaN}\n')                  # said "$.a: non-finite number ..." and no file
    err = _error(["evidence", "sign", "--key", str(tmp_path / "k" / "simlab.key"), str(doc)], capsys)
    assert err["field"] == "file" and err["message"].startswith(f"{doc}: $.a: non-finite number")
    assert not (tmp_path / "nan.json.sig").exists()


def test_false_pass_says_when_an_exact_answer_leaves_device_gpu_unused(capsys):
    """The exact engines run on the CPU: --device gpu is named as not used (it said nothing)."""
    assert main(["false-pass", "--method", "cluster_t", "--clusters", "30", "--trials", "1", "--device", "gpu",
                 "--json"]) == 0
    p = json.loads(capsys.readouterr().out)
    assert p["exact"] and p["notes"] == ["--device gpu not used: the exact engine applies (add --simulate to "
                                         "simulate)"]
