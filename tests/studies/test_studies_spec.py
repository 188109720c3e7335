"""Study specs: loading (TOML / JSON), content hash, grid expansion, derived scenario
parameters and errors that name the field."""
from __future__ import annotations

import json

import pytest

from simlab.scenario import ExplicitSizes, FixedSize, GeometricSize, PairedScenario
from studies.engine.spec import MethodRef, ScenarioTemplate, load_spec, parse_spec

TOML = """
name = "boundary"
methods = ["clustered_normal", {name = "cluster_t", options = {min_clusters = 5}}]
margins = [0.03]
alpha = 0.025
replications = 2000
seed = 1

[scenario]
clusters = 30
trials = 3
rho = 0.1
baseline = 0.9
discordance = 0.1
difference = -0.03

[grid]
difference = [-0.05, -0.03, 0.0]
clusters = [10, 30]
"""


def test_toml_and_json_load_to_the_same_spec(tmp_path):
    t = tmp_path / "s.toml"
    t.write_text(TOML)
    spec = load_spec(t)
    j = tmp_path / "s.json"
    j.write_text(json.dumps(spec.model_dump(mode="json")))
    assert load_spec(j) == spec
    assert spec.hash == load_spec(j).hash and spec.hash.startswith("sha256:") and len(spec.hash) == 71
    assert spec.method_keys == ("clustered_normal", "cluster_t[min_clusters=5]")
    assert spec.alphas == (0.025,) and spec.dims == ("difference", "clusters") and spec.shape == (3, 2)


def test_shipped_example_spec_is_valid():
    from pathlib import Path

    spec = load_spec(Path(__file__).resolve().parents[2] / "studies" / "specs" / "boundary.toml")
    assert spec.n_replications == 11_875 and len(spec.points()) == 10
    assert [m.resolve().name for m in spec.methods][:2] == ["clustered_normal", "clustered_normal"]


def test_hash_ignores_key_order_and_chunk_size_but_not_content():
    a = parse_spec({"methods": ["paired_wald"], "replications": 100, "seed": 1, "grid": {"rho": [0.0, 0.1]},
                    "scenario": {"cells": [0.9, 0.04, 0.03, 0.03]}})
    b = parse_spec({"scenario": {"cells": [0.9, 0.04, 0.03, 0.03]}, "grid": {"rho": [0.0, 0.1]}, "seed": 1,
                    "replications": 100, "methods": ["paired_wald"], "chunk_size": 17})
    assert a.hash == b.hash
    c = parse_spec({**a.model_dump(mode="json"), "seed": 2})
    assert c.hash != a.hash


def test_grid_is_the_cartesian_product_in_grid_order():
    spec = parse_spec({"methods": ["paired_wald"], "replications": 10,
                       "scenario": {"baseline": 0.9, "discordance": 0.1, "difference": 0.0, "trials": 2},
                       "grid": {"difference": [-0.05, 0.0], "clusters": [5, 10, 20]}})
    pts = spec.points()
    assert [c for c, _ in pts] == [{"difference": d, "clusters": k} for d in (-0.05, 0.0) for k in (5, 10, 20)]
    sc = pts[1][1]
    assert sc == PairedScenario.from_rates(0.9, -0.05, 0.1, clusters=10, cluster_size=FixedSize(trials=2))


def test_derived_scenario_parameters():
    t = ScenarioTemplate(baseline=0.97, candidate=0.93, clusters=30, trials=3)
    assert t.build() == PairedScenario.independent_arms(0.97, 0.93, clusters=30, cluster_size=FixedSize(trials=3))
    t = ScenarioTemplate(cells=(0.9, 0.04, 0.03, 0.03), sizes=(1, 2, 3), sensitivity=0.9, specificity=0.95,
                         loss_rate=0.1)
    sc = t.build()
    assert sc.clusters == 3 and sc.cluster_size == ExplicitSizes(sizes=(1, 2, 3))
    assert sc.label_noise.baseline_sensitivity == sc.label_noise.candidate_sensitivity == 0.9
    assert sc.missingness.loss_rate == 0.1
    t = ScenarioTemplate(cells=(0.9, 0.04, 0.03, 0.03), mean_trials=4, size_law="geometric", clusters=8)
    assert isinstance(t.build().cluster_size, GeometricSize)
    win, lose = (0.0, 0.0, 1.0, 0.0), (0.0, 1.0, 0.0, 0.0)
    t = ScenarioTemplate(cluster_cells=(win,) * 15 + (lose,) * 15, sizes=(1,) * 15 + (9,) * 15)
    sc = t.build()
    assert sc.true_difference_trial() == pytest.approx(-0.8) and sc.true_difference_cluster() == pytest.approx(0)


@pytest.mark.parametrize("data,match", [
    ({"methods": ["paired_wald"]}, "exactly one of replications or target_mcse"),
    ({"methods": ["paired_wald"], "replications": 10, "target_mcse": 0.01}, "exactly one"),
    ({"methods": [], "replications": 10}, "at least one method"),
    ({"methods": ["paired_wald", "paired_wald"], "replications": 10}, "duplicate method labels"),
    ({"methods": ["paired_wald"], "replications": 10, "grid": {"colour": [1]}}, "grid.colour is not a scenario field"),
    ({"methods": ["paired_wald"], "replications": 10, "grid": {"rho": []}}, "grid.rho lists no values"),
    ({"methods": ["paired_wald"], "replications": 10, "margins": [1.5]}, r"margins\[0\]"),
    ({"methods": ["paired_wald"], "replications": 10, "alphas": [0.3]}, r"alphas\[0\]"),
    ({"methods": ["paired_wald"], "replications": 10, "margin": 0.03, "margins": [0.03]}, "margin or margins"),
])
def test_spec_errors_name_the_field(data, match):
    with pytest.raises(ValueError, match=match):
        parse_spec(data)


def test_grid_point_errors_name_the_point():
    # every grid point's scenario is built when the spec is read: a bad one names the source and the point
    with pytest.raises(ValueError, match=r"^s.toml: grid point \{'difference': -0.2\}.*incompatible"):
        parse_spec({"methods": ["paired_wald"], "replications": 10,
                    "scenario": {"baseline": 0.9, "discordance": 0.1, "difference": 0.0},
                    "grid": {"difference": [0.0, -0.2]}}, source="s.toml")
    with pytest.raises(ValueError, match="cells one way only"):
        ScenarioTemplate(cells=(0.9, 0.04, 0.03, 0.03), candidate=0.5, baseline=0.5).build()
    with pytest.raises(ValueError, match="cluster sizes one way only"):
        ScenarioTemplate(cells=(0.9, 0.04, 0.03, 0.03), trials=2, sizes=(1, 2)).build()


def test_load_errors_name_the_file(tmp_path):
    with pytest.raises(ValueError, match="cannot read spec"):
        load_spec(tmp_path / "missing.toml")
    bad = tmp_path / "bad.toml"
    bad.write_text("methods = [")
    with pytest.raises(ValueError, match="bad.toml"):
        load_spec(bad)
    yml = tmp_path / "s.yaml"
    yml.write_text("x: 1")
    with pytest.raises(ValueError, match=".toml or .json"):
        load_spec(yml)


def test_method_refs_resolve_with_options():
    ref = MethodRef(name="clustered_normal", options={"min_clusters": 2})
    assert ref.key == "clustered_normal[min_clusters=2]"
    assert ref.resolve().options["min_clusters"] == 2
    with pytest.raises(ValueError, match="no option"):
        MethodRef(name="clustered_normal", options={"nope": 1}).resolve()


def test_a_huge_grid_is_checked_axis_by_axis_when_read():
    # 10^6 points are not built when the spec is read (the memory check refuses such a grid);
    # each value is checked on its own, so a bad one is still named with the source
    grid = {"clusters": list(range(10, 110)), "rho": [0.0005 * i for i in range(100)],
            "difference": [-0.05 + 0.0005 * i for i in range(99)] + [-0.5]}
    data = {"methods": ["paired_wald"], "replications": 10,
            "scenario": {"baseline": 0.9, "discordance": 0.1, "difference": 0.0}, "grid": grid}
    with pytest.raises(ValueError, match=r"^s.toml: grid point \{'difference': -0.5\}.*incompatible"):
        parse_spec(data, source="s.toml")
    grid["difference"][-1] = 0.0005 * 99 - 0.05
    spec = parse_spec(data, source="s.toml")
    assert "_points" not in spec.__dict__ and spec.shape == (100, 100, 100)
