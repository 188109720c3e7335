"""The benchmark runs end to end and its two paths agree (same pairs, clusters, decision)."""
from __future__ import annotations

from evidence.bench import bench_evidence


def test_bench_paths_agree(tmp_path):
    out = bench_evidence(trials_per_arm=2000, clusters=40, folder=tmp_path)
    ours, ref = out["simlab"], out["reference"]
    assert ours["pairs"] == ref["pairs"] == 2000 and ours["clusters"] == ref["clusters"] == 40
    assert ours["action"] == ref["action"]
    assert ours["comparison_sha256"] == ref["comparison_sha256"]  # identical tables, same comparison
    assert set(ours["stages"]) >= {"ingest", "pairing", "comparison", "receipt", "replay"}
    assert out["speedup"] > 0 and ours["peak_rss_bytes"] > 0
