"""Strict trial ingest (JSONL / CSV) and the manifest: every bad row named by line and field."""
from __future__ import annotations

import json

import numpy as np
import pytest

from evidence.manifest import Manifest, load_manifest, template
from evidence.trials import TrialsError, parse_trials

H = "sha256:" + "a" * 64
HEADER = "case_id,trial_index,cluster_id,arm,passed,failed_checks,latency_ms,cost,cost_provenance,manifest_sha256"


def row(**kw):
    r = dict(case_id="c1", trial_index=0, cluster_id="k1", arm="baseline", passed=True, failed_checks=[],
             latency_ms=12.5, cost=None, cost_provenance="absent", manifest_sha256=H)
    r.update(kw)
    return r


def jsonl(rows) -> bytes:
    return ("\n".join(json.dumps(r) for r in rows) + "\n").encode()


def good_rows(n=4):
    return [row(case_id=f"c{i}", cluster_id=f"k{i % 2}", arm=a, passed=(i + j) % 3 > 0,
                failed_checks=["x"] if (i, a) == (1, "candidate") else [], cost=0.5, cost_provenance="measured")
            for i in range(n) for j, a in enumerate(("baseline", "candidate"))]


def errors_of(data: bytes, fmt="jsonl") -> list[str]:
    with pytest.raises(TrialsError) as exc:
        parse_trials(data, fmt, "t")
    return exc.value.errors


def test_fast_path_equals_line_by_line_path():
    from evidence.trials import columns_from_records, validate_rows
    rows = good_rows(6)
    fast = parse_trials(jsonl(rows), "jsonl", "t")
    slow = columns_from_records(validate_rows(list(enumerate(rows, 1)), "t"), "t")
    for name in ("case", "trial", "cluster", "candidate", "passed", "n_failed", "provenance", "lines"):
        assert np.array_equal(getattr(fast, name), getattr(slow, name)), name
    assert list(fast.case_names) == list(slow.case_names) and list(fast.cluster_names) == list(slow.cluster_names)
    assert np.allclose(fast.cost, slow.cost) and fast.manifest_hashes == slow.manifest_hashes == {H: 12}
    assert fast.failed_checks_of(3) == ("x",)


def test_csv_equals_jsonl():
    rows = good_rows(3)
    lines = [HEADER] + [",".join([r["case_id"], str(r["trial_index"]), r["cluster_id"], r["arm"],
                                  "true" if r["passed"] else "false", ";".join(r["failed_checks"]),
                                  str(r["latency_ms"]), str(r["cost"]), r["cost_provenance"], H]) for r in rows]
    c = parse_trials(("\n".join(lines) + "\n").encode(), "csv", "t")
    j = parse_trials(jsonl(rows), "jsonl", "t")
    for name in ("case", "trial", "cluster", "candidate", "passed", "n_failed"):
        assert np.array_equal(getattr(c, name), getattr(j, name)), name
    assert list(c.lines) == [2, 3, 4, 5, 6, 7]  # the header is line 1
    # Excel's "CSV UTF-8" starts with a byte-order mark: no data, on the fast and the
    # line-by-line path (a blank line sends a file down the latter)
    body = ("\n".join(lines) + "\n").encode()
    bom = parse_trials(b"\xef\xbb\xbf" + body, "csv", "t")
    for name in ("case", "trial", "cluster", "candidate", "passed", "n_failed", "lines"):
        assert np.array_equal(getattr(bom, name), getattr(c, name)), name
    slow = errors_of(b"\xef\xbb\xbf" + body + b"\n", "csv")
    assert slow == ["line 8: expected 10 columns, got 0"]  # the header was read: only the blank line is wrong


def test_every_bad_row_is_reported_with_line_and_field():
    rows = good_rows(2)
    bad = [json.dumps(r) for r in rows]
    bad[1] = json.dumps(row(passed=None))
    bad.append(json.dumps({k: v for k, v in row().items() if k != "passed"}))
    bad.append("{not json")
    bad.append(json.dumps(row(arm="treatment", extra=1)))
    bad.append(json.dumps(row(trial_index="3")))
    bad.append(json.dumps(row(cost=1.0, cost_provenance="absent")))
    bad.append(json.dumps(row(manifest_sha256="abc")))
    errs = errors_of(("\n".join(bad) + "\n").encode())
    assert errs == [
        "line 2, field passed: missing label (a missing label is never a pass or a fail)",
        "line 5, field passed: missing label (a missing label is never a pass or a fail)",
        "line 6: not valid JSON (Expecting property name enclosed in double quotes at column 2)",
        "line 7, field arm: Input should be 'baseline' or 'candidate'",
        "line 7, field extra: unknown field",
        "line 8, field trial_index: Input should be a valid integer",
        "line 9: cost_provenance must be 'absent' exactly when cost is null",
        "line 10, field manifest_sha256: String should match pattern '^sha256:[0-9a-f]{64}$'",
    ]


def test_non_finite_numbers_are_rejected():
    data = jsonl(good_rows(1)).replace(b'"latency_ms": 12.5', b'"latency_ms": NaN', 1)
    assert errors_of(data) == ["line 1, field latency_ms: Input should be a finite number"]


def test_a_repeated_key_is_refused_not_resolved_to_its_last_value():
    """``{"passed": false, "passed": true}`` would read as a pass to the program (json keeps the
    last value) and as a failure to a person reading the line: refused, naming the key and line,
    on the fast and the line-by-line path alike; a manifest repeating a key too."""
    data = jsonl(good_rows(2)).replace(b'"passed": false', b'"passed": false, "passed": true', 1)
    assert b'"passed": false, "passed": true' in data
    line = data[:data.index(b'"passed": false, "passed": true')].count(b"\n") + 1
    want = [f"line {line}: key 'passed' appears twice in one object (which value counts would be a guess)"]
    assert errors_of(data) == want
    blank_at_end = data + b"\n"  # a blank line sends the whole file down the line-by-line path
    last = data.count(b"\n") + 1
    assert errors_of(blank_at_end) == want + [f"line {last}: empty line (one trial per line; nothing is skipped "
                                              "silently)"]
    text = json.dumps(template()).replace('"margin":', '"margin": 0.5, "margin":', 1)
    with pytest.raises(ValueError, match="invalid manifest: key 'margin' appears twice in one object"):
        Manifest.parse(text)


@pytest.mark.parametrize("form", ["text", "bytes", "file"])
def test_a_manifest_with_a_byte_order_mark_is_refused_by_name(form, tmp_path):
    # it was "Invalid JSON: expected value at line 1 column 1", which hid the invisible mark
    text = "\ufeff" + json.dumps(template())
    path = tmp_path / "m.json"
    path.write_text(text, encoding="utf-8")
    parse = {"text": lambda: Manifest.parse(text), "bytes": lambda: Manifest.parse(text.encode()),
             "file": lambda: load_manifest(path)}[form]
    with pytest.raises(ValueError, match="starts with a UTF-8 byte-order mark .BOM., which JSON does not allow"):
        parse()
    assert Manifest.parse(text[1:]).sha256 == Manifest.parse(json.dumps(template())).sha256


def test_blank_line_is_an_error_not_a_skip():
    data = jsonl(good_rows(2)).replace(b"\n", b"\n\n", 1)
    assert errors_of(data) == ["line 2: empty line (one trial per line; nothing is skipped silently)"]


def test_missing_label_in_csv_is_never_a_pass_or_fail():
    data = (HEADER + "\n" + f"c1,0,k1,baseline,,,1,,absent,{H}\n").encode()
    assert errors_of(data, "csv") == ["line 2, field passed: missing label (a missing label is never a pass or a fail)"]


def test_csv_header_must_name_every_column():
    data = (HEADER.replace(",cost_provenance", "") + "\n").encode()
    assert errors_of(data, "csv")[0].startswith("line 1: header: missing column(s) ['cost_provenance']")


def test_all_errors_are_kept_even_when_the_message_is_shortened():
    data = jsonl([row(trial_index=-1, case_id=f"c{i}") for i in range(120)])
    with pytest.raises(TrialsError) as exc:
        parse_trials(data, "jsonl", "t")
    assert len(exc.value.errors) == 120
    # one root cause, summarised once: a count and three examples, not 120 copies
    assert str(exc.value) == ("t: 120 problem(s) in the trial rows, 1 root cause(s): field trial_index: Input should "
                              "be greater than or equal to 0 (120 rows, e.g. line 1, line 2, line 3, and 117 more)")


def test_manifest_hash_is_canonical_and_changes_with_any_field():
    m = Manifest.parse(template())
    same = Manifest.parse(json.dumps(template(), indent=3, sort_keys=True))
    assert m.sha256 == same.sha256 and m.sha256.startswith("sha256:")
    for field, value in (("prompt_version", "v2"), ("margin", 0.031), ("rho_max", 0.06)):
        assert Manifest.parse({**template(), field: value}).sha256 != m.sha256


@pytest.mark.parametrize("field,value,message", [
    ("margin", float("nan"), "margin: Input should be a finite number"),
    ("repetitions", "3", "repetitions: Input should be a valid integer"),
    ("unknown", 1, "unknown: Extra inputs are not permitted"),
    ("measurement_kind", "measured", "measured evidence requires a pinned code revision"),
    ("code_revision", "main", "code_revision must be a 40-hex git revision"),
    ("valid_until", "2020-01-01T00:00:00Z", "valid_until must be after created_at"),
    ("created_at", "2026-11-30T12:00:00", "created_at: Input should have timezone info"),
    ("created_at", "0001-01-01T00:00:00Z", "created_at 0001-01-01T00:00:00[+]00:00 is before 2000-01-01"),  # probe 3
    ("estimand", "median", "estimand must be one of"),
])
def test_manifest_rejects(field, value, message):
    with pytest.raises(ValueError, match=message.replace("(", r"\(")):
        Manifest.parse({**template(), field: value})


def test_file_reader_equals_bytes_reader_and_reports_blank_lines(tmp_path):
    from evidence.trials import read_trials
    path = tmp_path / "t.jsonl"
    path.write_bytes(jsonl(good_rows(5)))
    a, b = read_trials(path), parse_trials(path.read_bytes(), "jsonl", str(path))
    for name in ("case", "trial", "cluster", "candidate", "passed", "n_failed", "provenance", "lines"):
        assert np.array_equal(getattr(a, name), getattr(b, name)), name
    path.write_bytes(jsonl(good_rows(5)).replace(b"\n", b"\n\n", 3))
    with pytest.raises(TrialsError) as exc:
        read_trials(path)
    assert [e.split(":")[0] for e in exc.value.errors] == ["line 2", "line 4", "line 6"]


def test_scan_file_finds_blank_lines_across_block_seams(tmp_path):
    import hashlib

    from evidence.trials import scan_file
    block = 1 << 24
    for at in (block - 1, block, block + 1):  # the two newlines around the seam
        data = bytearray(b"x" * (block + 10))
        data[at - 1:at + 1] = b"\n\n"
        path = tmp_path / f"s{at}.jsonl"
        path.write_bytes(bytes(data))
        digest, blank = scan_file(path)
        assert blank and digest == "sha256:" + hashlib.sha256(bytes(data)).hexdigest()
    path.write_bytes(b"x" * (block + 10))
    assert not scan_file(path)[1]
    path.write_bytes(b"\nx")
    assert scan_file(path)[1]


def test_a_population_line_repeating_a_key_is_refused(tmp_path):
    """A case list whose line names ``cluster_id`` twice would put the case in whichever cluster
    came last: refused, naming the line and the key."""
    from evidence.population import PopulationError, read_population

    path = tmp_path / "cases.jsonl"
    path.write_text('{"case_id": "a", "cluster_id": "k1"}\n{"case_id": "b", "cluster_id": "k1", "cluster_id": "k2"}\n')
    with pytest.raises(PopulationError, match=r"key .cluster_id. appears twice in one object .*\(line 2\)"):
        read_population(path)


def test_a_population_csv_with_a_byte_order_mark_reads_like_one_without(tmp_path):
    from evidence.population import read_population

    plain, bom = tmp_path / "plain.csv", tmp_path / "bom.csv"
    plain.write_bytes(b"case_id,cluster_id\na,k1\nb,k2\n")
    bom.write_bytes(b"\xef\xbb\xbf" + plain.read_bytes())
    assert read_population(bom).sha256 == read_population(plain).sha256
