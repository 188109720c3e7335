"""Probe round 3, the readers: a damaged Inspect log is called damaged (never "the eval did not
complete"), a sample member that is not JSON or not Inspect's schema is named, and times out
of the range Python's datetime holds name their log and field.  The logs are small zips built
here in Inspect's layout (header.json, samples/<id>_epoch_<n>.json, summaries.json, ...)."""
from __future__ import annotations

import json
import zipfile

import pytest

from evidence.adapters.inspect import read_log
from evidence.errors import EvidenceError

HEADER = {"version": 2, "status": "success",
          "eval": {"created": "2026-11-30T12:00:00+00:00", "task": "t", "dataset": {"name": "d"}, "model": "m"}}


def _sample(case: str, epoch=1) -> bytes:
    return json.dumps({"id": case, "epoch": epoch, "scores": {"s": {"value": "C"}},
                       "metadata": {"customer": "u0"}}).encode()


def _log(path, members: dict[str, bytes]):
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as z:
        for name, data in members.items():
            z.writestr(name, data)
    return path


def _finished(**samples) -> dict[str, bytes]:
    """A finished run's members, header.json last (as Inspect writes it)."""
    return {"_journal/start.json": json.dumps({"eval": HEADER["eval"]}).encode(),
            **{f"samples/{k}_epoch_1.json": v for k, v in (samples or {"case0": _sample("case0")}).items()},
            "summaries.json": b"[]", "reductions.json": b"[]", "header.json": json.dumps(HEADER).encode()}


def test_the_built_log_reads(tmp_path):
    header, samples = read_log(_log(tmp_path / "ok.eval", _finished()))
    assert header.status == "success" and [s.id for s in samples] == ["case0"]


def test_a_damaged_zip_directory_is_damage_not_an_unfinished_run(tmp_path):
    data = _log(tmp_path / "ok.eval", _finished()).read_bytes()
    at = data.rfind(b"header.json")  # the zip's central directory comes last: rename the entry there only
    (tmp_path / "flip.eval").write_bytes(data[:at] + b"heater.json" + data[at + len(b"header.json"):])
    with pytest.raises(EvidenceError) as exc:
        read_log(tmp_path / "flip.eval")
    assert "damaged Inspect log" in str(exc.value) and "did not complete" not in str(exc.value)


def test_a_finished_log_without_its_header_is_damaged(tmp_path):
    members = _finished()
    del members["header.json"]
    with pytest.raises(EvidenceError, match=r"damaged Inspect log: it holds a finished run's summaries.json but no "
                                            r"header.json"):
        read_log(_log(tmp_path / "noheader.eval", members))


def test_a_run_that_only_started_is_still_an_unfinished_run(tmp_path):
    members = {"_journal/start.json": json.dumps({"eval": HEADER["eval"]}).encode(),
               "samples/case0_epoch_1.json": _sample("case0")}
    with pytest.raises(EvidenceError, match=r"the eval did not complete \(status 'started'\)"):
        read_log(_log(tmp_path / "started.eval", members))


@pytest.mark.parametrize("data,why", [(b"\xff\xfe garbage", "Invalid JSON"),
                                      (_sample("case0", epoch="1"), "epoch: Input should be a valid integer")])
def test_a_bad_sample_member_is_named(tmp_path, data, why):
    with pytest.raises(EvidenceError) as exc:
        read_log(_log(tmp_path / "bad.eval", _finished(case0=data, case1=_sample("case1"))))
    assert "sample samples/case0_epoch_1.json does not follow Inspect's schema" in str(exc.value)
    assert why in str(exc.value)


@pytest.mark.parametrize("created", ["0000-01-01T00:00:00+00:00", "0001-01-01T00:00:00+01:00"])
def test_an_out_of_range_log_time_names_the_log_and_field(created):
    from evidence.provenance import check_logs
    from evidence.synthetic import demo_manifest

    with pytest.raises(EvidenceError) as exc:
        check_logs(demo_manifest(), [{"file": "c.eval", "created": created}], registered_after=False)
    assert str(exc.value).startswith(f"c.eval eval.created: {created!r} is not a usable ISO 8601 time")


def test_an_out_of_range_lm_eval_date_names_the_file(tmp_path):
    from evidence.adapters.lmeval import _info

    with pytest.raises(EvidenceError, match=r"samples_t\.jsonl: the results file's date 1e\+300 is not a usable"):
        _info(tmp_path / "samples_t.jsonl", {"date": 1e300}, "t", "baseline")
