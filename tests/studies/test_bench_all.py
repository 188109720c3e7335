"""``simlab bench all``'s one table: rows from every sub-benchmark, ratio = simlab /
reference, written atomically as JSON keyed by machine with the provenance attrs."""
from __future__ import annotations

import json

import pytest

from studies.bench import summary


def test_one_table_keyed_by_machine(tmp_path, monkeypatch):
    calls = []

    def part(name, simlab, reference):
        def rows(*args):
            calls.append(name)
            return [summary._row(f"{name} workload", "replications/s", simlab, reference,
                                 None if reference is None else "ref")]
        return rows

    monkeypatch.setattr(summary, "_simulate_rows", part("simulate", 300.0, 60.0))
    monkeypatch.setattr(summary, "_methods_rows", part("methods", 10.0, 4.0))
    monkeypatch.setattr(summary, "_study_rows", part("study", 9.0, 3.0))
    monkeypatch.setattr(summary, "_sequential_rows", part("sequential", 5.0, None))
    monkeypatch.setattr(summary, "_qualify_rows", part("qualify", 6.0, 1.0))
    out = summary.bench_all(scale=0.5, out_dir=tmp_path)
    assert calls == ["simulate", "methods", "study", "sequential", "qualify"]
    f = tmp_path / f"{summary.machine_key()}.json"
    assert out["file"] == str(f) and [p.name for p in tmp_path.iterdir()] == [f.name]
    saved = json.loads(f.read_text())
    assert saved["dataset_kind"] == "bench" and saved["machine"] == summary.machine_key()
    assert json.loads(saved["spec_json"])["scale"] == 0.5 and saved["code_revision"]
    assert [r["ratio"] for r in saved["rows"]] == [5.0, 2.5, 3.0, None, 6.0]


def test_bad_scale_is_refused_before_work():
    with pytest.raises(ValueError, match="scale must lie in"):
        summary.bench_all(scale=0, out_dir=None)


def test_qualify_bench_times_both_engines_on_one_workload():
    """``simlab bench qualify``'s library call: both engines, same workload, equal records
    (it raises otherwise), the ratio of their times; ``summary`` turns it into one row."""
    from studies.bench.qualify import bench_qualify, workload_policy

    p = bench_qualify(policy="reduced-small", methods=("clustered_normal", "tango_score"), clusters=(10,))
    assert [r["path"] for r in p["rows"]] == ["per-scenario", "batched"] and p["identical"]
    per, batched = p["rows"]
    assert per["scenarios"] == batched["scenarios"] > 0 and per["replications"] == batched["replications"]
    assert p["ratio"] == pytest.approx(per["seconds"] / batched["seconds"]) and p["clusters"] == [10]
    pol = workload_policy("reduced-small", rounds=1)
    assert pol.max_replications == pol.min_replications and pol.refine_evaluations == 0
    assert workload_policy("reduced-small", rounds=0).max_replications == 8000
    with pytest.raises(ValueError, match="none is on the policy's K grid"):
        workload_policy("reduced-small", clusters=(11,))
