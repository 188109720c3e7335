"""A bad row in a big JSONL file costs one block's line-by-line check, not the whole file's
(issue 29.4: one bad row at line 839,991 of 213 MB took 4.7x the clean file's time and 4x its
memory); the blocks read back exactly what the whole file's fast path reads."""
from __future__ import annotations

import json

import numpy as np
import pytest

import evidence.trials as trials
from evidence.trials import TrialsError, parse_jsonl_blocks, parse_trials, read_trial_file

H = "sha256:" + "a" * 64
FIELDS = ("case", "trial", "cluster", "candidate", "passed", "n_failed", "latency", "cost", "provenance", "lines",
          "timestamps")


def rows(n: int) -> list[dict]:
    out = []
    for i in range(n):
        for j, arm in enumerate(("baseline", "candidate")):
            out.append(dict(case_id=f"c{i}", trial_index=0, cluster_id=f"k{i % 7}", arm=arm, passed=(i + j) % 3 > 0,
                            failed_checks=["late"] if (i * 2 + j) % 11 == 0 else [], latency_ms=1.0 + i,
                            cost=0.5 if i % 2 else None, cost_provenance="measured" if i % 2 else "absent",
                            manifest_sha256=H, slice="eu" if i % 5 == 0 else None,
                            timestamp="2026-12-01T10:00:00Z" if i % 3 == 0 else None))
    return out


def jsonl(items: list[dict]) -> bytes:
    return ("\n".join(json.dumps(r) for r in items) + "\n").encode()


@pytest.fixture
def small_blocks(monkeypatch):
    monkeypatch.setattr(trials, "BLOCK_LINES", 64)


def test_blocks_read_back_what_the_whole_file_gives(small_blocks):
    data = jsonl(rows(300))                                  # 600 lines: 10 blocks, the last one short
    whole = parse_trials(data, "jsonl", "t")                  # the whole file's fast path
    joined = parse_jsonl_blocks(data.splitlines(keepends=True), "t")
    for name in FIELDS:
        assert np.array_equal(getattr(whole, name), getattr(joined, name), equal_nan=name in (
            "latency", "cost", "timestamps")), name
    assert list(whole.case_names) == list(joined.case_names)
    assert list(whole.cluster_names) == list(joined.cluster_names)
    assert list(whole.slice_names) == list(joined.slice_names)
    assert whole.manifest_hashes == joined.manifest_hashes == {H: 600}
    assert [joined.failed_checks_of(r) for r in range(600)] == [whole.failed_checks_of(r) for r in range(600)]


def test_one_bad_row_near_the_end_is_checked_line_by_line_in_its_block_only(small_blocks, monkeypatch, tmp_path):
    items = rows(300)
    items[589]["passed"] = "maybe"                            # line 590, in the tenth block (lines 577..600)
    path = tmp_path / "t.jsonl"
    path.write_bytes(jsonl(items))
    checked = []
    real = trials.validate_rows

    def counting(rows_, source, label="line"):
        checked.append(len(rows_))
        return real(rows_, source, label)

    monkeypatch.setattr(trials, "validate_rows", counting)
    with pytest.raises(TrialsError) as exc:
        read_trial_file(path)
    assert exc.value.errors == ["line 590, field passed: Input should be a valid boolean"]
    assert "1 problem(s)" in str(exc.value) and "(line 590)" in str(exc.value)
    assert checked == [24]                                   # one block, not 600 lines


def test_every_bad_row_of_every_block_is_named(small_blocks):
    items = rows(100)
    items[3]["cost"] = -1.0                                   # line 4, first block
    items[150]["arm"] = "treatment"                           # line 151, third block
    data = jsonl(items)
    data = data.replace(b"\n", b"\n\n", 1)                    # a blank line 2: every later line moves down one
    with pytest.raises(TrialsError) as exc:
        parse_trials(data, "jsonl", "t")
    errors = exc.value.errors
    assert errors[0] == "line 2: empty line (one trial per line; nothing is skipped silently)"
    assert any(e.startswith("line 5, field cost") for e in errors), errors
    assert any(e.startswith("line 152, field arm") for e in errors), errors
    assert len(errors) == 3
