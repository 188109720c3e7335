"""A team's own rule, from a package outside the source tree, through the same front door:
``package.module:ATTR`` and a ``simlab.methods`` entry point, a numpy function through the
adapter; false-pass and a small qualification treat it exactly like a built-in."""
from __future__ import annotations

from simlab.hashing import is_hash
import json
import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest

from methods import registry
from methods.identity import reached_modules
from methods.adapters import numpy_method
from methods.protocol import Estimand
from tests.reference_values import SEED_FALSE_PASS

RULE = textwrap.dedent('''
    """A team's rule: pooled Wald interval written in plain numpy (Newcombe 1998, method 1)."""
    import numpy as np
    from scipy import stats

    from methods.adapters import numpy_method
    from methods.protocol import Estimand


    def pooled_wald(tables, margin, alpha, floor=0.0):
        n = tables.sum(axis=(1, 2)).astype(float)
        b = tables[:, :, 1].sum(axis=1) / np.where(n > 0, n, 1)
        c = tables[:, :, 2].sum(axis=1) / np.where(n > 0, n, 1)
        est = c - b
        half = stats.norm.ppf(1 - alpha) * np.sqrt(np.maximum((b + c - est ** 2) / np.where(n > 0, n, 1), floor))
        nan = np.where(n > 0, 0.0, np.nan)
        return est - half + nan, est + half + nan, est + nan


    METHOD = numpy_method(pooled_wald, name="team_wald", version="1", estimand=Estimand.TRIAL,
                          citation="Newcombe (1998) Stat Med 17:2635-2650, method 1",
                          summary="pooled Wald in numpy (no truncation)", options={"floor": 0.0})
''')


@pytest.fixture(scope="module")
def plugin_dir(tmp_path_factory):
    root = tmp_path_factory.mktemp("plugin")
    pkg = root / "team_rules"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "wald.py").write_text(RULE)
    # an installed distribution's metadata, as pip would write it, declaring the entry point
    dist = root / "team_rules-0.1.dist-info"
    dist.mkdir()
    (dist / "METADATA").write_text("Metadata-Version: 2.1\nName: team-rules\nVersion: 0.1\n")
    (dist / "entry_points.txt").write_text("[simlab.methods]\nteam_wald = team_rules.wald:METHOD\n")
    return root


def _simlab(args, plugin_dir, cwd):
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(plugin_dir), os.environ.get("PYTHONPATH", "")])}
    code = "import sys; from simlab.cli import main; sys.exit(main(sys.argv[1:]))"
    return subprocess.run([sys.executable, "-c", code, *args], capture_output=True, text=True, env=env, cwd=cwd,
                          timeout=600)


def test_adapter_matches_builtin_wald_where_no_truncation_applies():
    # paired_wald truncates to [-1, 1]; away from the edges the two are the same interval
    def wald(tables, margin, alpha):
        n = tables.sum(axis=(1, 2)).astype(float)
        b, c = tables[:, :, 1].sum(axis=1) / n, tables[:, :, 2].sum(axis=1) / n
        from scipy import stats
        half = stats.norm.ppf(1 - alpha) * np.sqrt((b + c - (c - b) ** 2) / n)
        return c - b - half, c - b + half, c - b

    m = numpy_method(wald, name="w", version="1", estimand=Estimand.TRIAL, citation="c", summary="s")
    tables = np.array([[[40, 6, 5, 49]], [[30, 2, 9, 59]], [[10, 10, 1, 79]]], np.int32)
    got, want = m.batch(tables, 0.03), registry.get("paired_wald").batch(tables, 0.03)
    np.testing.assert_allclose(got.lower, want.lower, rtol=0, atol=1e-12)
    np.testing.assert_array_equal(got.status, want.status)
    assert m.analyze([[40, 6, 5, 49]], 0.03).confidence_interval() == pytest.approx(
        registry.get("paired_wald").analyze([[40, 6, 5, 49]], 0.03).confidence_interval(), abs=1e-12)


def test_adapter_rejects_bad_output_shapes():
    m = numpy_method(lambda t, margin, alpha: (np.zeros(1), np.zeros(1), np.zeros(1)), name="bad", version="1",
                     estimand=Estimand.TRIAL, citation="c", summary="s")
    with pytest.raises(ValueError, match="lower has shape"):
        m.batch(np.zeros((3, 2, 4), np.int32), 0.03)


def test_reference_and_entry_point_resolve_and_hash_their_own_source(plugin_dir, monkeypatch):
    monkeypatch.syspath_prepend(str(plugin_dir))
    registry._entry_points.cache_clear()
    try:
        by_ref = registry.get("team_rules.wald:METHOD")
        by_ep = registry.get("team_wald")
        assert by_ref.identity == by_ep.identity and registry.reference(by_ref) == "team_rules.wald:METHOD"
        assert "team_rules.wald" in reached_modules(by_ref.decision_roots())
        assert "team_wald" in registry.names("fixed")
        with pytest.raises(KeyError, match="has no attribute"):
            registry.get("team_rules.wald:NOPE")
        with pytest.raises(ValueError, match="not a simlab decision method"):
            registry.get("team_rules.wald:pooled_wald")
    finally:
        registry._entry_points.cache_clear()


def test_false_pass_and_qualify_run_a_plugin_like_a_builtin(plugin_dir, tmp_path):
    r = _simlab(["false-pass", "--method", "team_rules.wald:METHOD", "--clusters", "30", "--trials", "1",
                 "--cells", "0.96,0.04,0,0", "--rho", "0", "--reps", "2000", "--json"], plugin_dir, tmp_path)
    assert r.returncode == 0, r.stderr
    p = json.loads(r.stdout)
    # with no loss observed the Wald variance is zero: the seed's false pass, 0.96^30, exactly
    assert p["exact"] is True and p["value"] == pytest.approx(SEED_FALSE_PASS, rel=1e-12)
    assert p["method_name"] == "team_wald" and p["estimand"] == "trial_weighted"
    from methods.qualification import Axis, IntAxis, QualificationDomain, QualificationPolicy
    from simlab.scenario import FixedSize
    dom = QualificationDomain(clusters=IntAxis(lo=10, hi=30, grid=(10, 30)), cluster_sizes=(FixedSize(trials=2),),
                              rho=Axis(lo=0.0, hi=0.0, grid=(0.0,)), margin=Axis(lo=0.05, hi=0.05, grid=(0.05,)),
                              baseline=Axis(lo=0.9, hi=0.9, grid=(0.9,)),
                              discordance=Axis(lo=0.1, hi=0.1, grid=(0.1,)))
    policy = tmp_path / "policy.json"
    policy.write_text(json.dumps(QualificationPolicy(domain=dom, min_replications=500,
                                                     max_replications=500).canonical()))
    r = _simlab(["qualify", "--method", "team_rules.wald:METHOD", "--policy", str(policy), "--out", str(tmp_path / "rec"),
                 "--json"], plugin_dir, tmp_path)
    assert r.returncode == 0, r.stderr
    rec = json.loads(r.stdout)["records"][0]
    assert rec["method"]["name"] == "team_wald" and is_hash(rec["method"]["source_sha256"])
