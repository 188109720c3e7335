"""The robustness report (studies.qualify.robustness): its DM rows equal the engine's
evaluate_scenario on the same law and seed, it is bitwise the same for any chunking, its
verdicts follow the stated rule, its dataset round-trips, and bad input is refused."""
from __future__ import annotations

import json

import numpy as np
import pytest

from methods.qualification import cp_lower, cp_upper
from simlab.sampling.robust import DirectionLaw, DirichletLaw, LogitNormalLaw
from simlab.scenario import FixedSize, GeometricSize
from studies.datasets import open_dataset, save_dataset
from studies.engine import evaluate_scenario
from studies.qualify import FAMILIES, default_laws, robustness, robustness_estimate
from studies.qualify.robustness import verdict

K, M, MARGIN = 30, 3, 0.03
METHODS = ["cluster_t", "clustered_score@alpha=0.02"]
DM_LAWS = [DirichletLaw(clusters=K, cluster_size=FixedSize(trials=M), margin=MARGIN, baseline=0.9, discordance=0.03,
                        rho=0.1),
           DirichletLaw(clusters=K, cluster_size=GeometricSize(mean_trials=M), margin=MARGIN, baseline=0.9,
                        discordance=0.1, rho=0.1)]


def test_dirichlet_rows_equal_evaluate_scenario_on_the_same_law():
    rep = robustness(METHODS, K, M, MARGIN, laws=DM_LAWS, replications=4000, seed=77)
    for law in DM_LAWS:
        counts = evaluate_scenario(law.scenario, METHODS, [MARGIN], [0.025], replications=4000, seed=77)
        for m in METHODS:
            row = next(r for r in rep.rows if r.law == law and r.method == m)
            assert row.n_pass == counts.count("n_pass", m) and row.n_reps == 4000
            assert row.n_inconclusive == counts.count("n_inconclusive", m)
    assert any(r.n_pass > 0 for r in rep.rows)  # the comparison compared something


def test_the_report_is_the_same_for_any_chunking():
    laws = [LogitNormalLaw(clusters=K, trials=M, margin=MARGIN, baseline=0.9, cluster_sd=1.0, candidate_sd=1.0),
            DirectionLaw(clusters=K, trials=M, margin=MARGIN, baseline=0.9, discordance=0.2, favour_share=0.5,
                         favour_difference=0.11), DM_LAWS[1]]
    a = robustness(METHODS, K, M, MARGIN, laws=laws, replications=3000, seed=5)
    b = robustness(METHODS, K, M, MARGIN, laws=laws, replications=3000, seed=5, chunk=701)
    assert [(r.n_pass, r.n_inconclusive) for r in a.rows] == [(r.n_pass, r.n_inconclusive) for r in b.rows]
    c = robustness(METHODS, K, M, MARGIN, laws=laws, replications=3000, seed=6)
    assert [r.n_pass for r in a.rows] != [r.n_pass for r in c.rows]


def test_verdicts_follow_the_clopper_pearson_rule(tmp_path):
    assert verdict(0.01, 0.0275, 0.0275) == "holds"
    assert verdict(0.02751, 0.04, 0.0275) == "fails"
    assert verdict(0.0275, 0.04, 0.0275) == "undetermined"
    rep = robustness(["cluster_t"], K, M, MARGIN, laws=DM_LAWS[:1], replications=2000, seed=3)
    row = rep.rows[0].as_dict()
    assert row["cp_upper"] == cp_upper(row["n_pass"], 2000, 0.95)
    assert row["cp_lower"] == cp_lower(row["n_pass"], 2000, 0.95)
    assert row["verdict"] == verdict(row["cp_lower"], row["cp_upper"], 1.1 * 0.025)
    assert row["upper_within_alpha"] == (row["cp_upper"] <= 0.025)
    assert row["icc_d"] == 0.1 and row["icc_above_rho_max"] is False and row["family"] == "model"
    payload = rep.as_dict()
    assert json.loads(json.dumps(payload))["rows"][0]["n_pass"] == row["n_pass"]
    ds = open_dataset(save_dataset(rep.dataset(), tmp_path / "r.nc"))
    assert ds.attrs["dataset_kind"] == "robustness" and ds.attrs["seed"] == 3
    assert int(ds["n_pass"].sel({"method": "cluster_t"})[0]) == row["n_pass"]
    assert float(ds["cp_upper"].sel({"method": "cluster_t"})[0]) == row["cp_upper"]
    assert str(ds["law_key"][0].values) == DM_LAWS[0].key


def test_default_grid_sits_on_the_null_boundary_at_the_design():
    laws = default_laws(100, 3, 0.03, rho_max=0.1)
    assert {type(law).__name__ for law in laws} == {"LogitNormalLaw", "DirichletLaw", "DiscordanceLaw", "DirectionLaw"}
    for law in laws:
        assert law.clusters == 100 and law.mean_trials() == 3
        assert law.implied_difference() == pytest.approx(-0.03, abs=1e-12)
    iccs = [law.icc_d() for law in laws]
    assert min(iccs) < 0.1 < max(iccs)  # laws an ICC check could and could not catch
    tight = default_laws(100, 3, 0.03, baseline=0.97)   # feasible discordance <= 0.09: points clipped, merged
    assert len({law.key for law in tight}) == len(tight) < len(laws)
    assert all(law.implied_discordance() <= 0.09 + 1e-12 for law in tight if not isinstance(law, LogitNormalLaw))
    only = default_laws(100, 3, 0.03, families=("direction",))
    assert only and all(isinstance(law, DirectionLaw) for law in only)
    assert set(FAMILIES) == {"logit_normal", "random_sizes", "discordance", "direction", "model"}
    assert robustness_estimate(["cluster_t"], 20, 3, 0.03, families=("model",), replications=100).low > 0


def test_bad_input_is_refused():
    with pytest.raises(ValueError, match="not at the design"):
        robustness(["cluster_t"], 40, M, MARGIN, laws=DM_LAWS[:1], replications=10)
    with pytest.raises(ValueError, match="loss_rate"):
        robustness(["binomial_loss"], K, M, MARGIN, laws=DM_LAWS[:1], replications=10)
    with pytest.raises(ValueError, match="twice"):
        robustness(["cluster_t"], K, M, MARGIN, laws=DM_LAWS[:1] * 2, replications=10)
    with pytest.raises(ValueError, match="unknown law families"):
        default_laws(K, M, MARGIN, families=("t_copula",))
    with pytest.raises(ValueError, match="fixed-sample"):
        robustness(["betting_cs"], K, M, MARGIN, laws=DM_LAWS[:1], replications=10)
    # a pydantic error named the sized laws' own field (mean_trials) for --trials 1000
    with pytest.raises(ValueError, match="^trials: the random_sizes laws .* at most 500; got 1000"):
        default_laws(K, 1000, MARGIN, families=("random_sizes",))
    assert default_laws(K, 1000, MARGIN, families=("model",))
    assert np.isfinite(DM_LAWS[0].icc_d())


def test_a_huge_design_is_piloted_on_laws_with_fewer_clusters(monkeypatch):
    """At 10^6 clusters x 100 the estimate ran each law kind at full size (32 s to refuse); it
    now pilots copies of at most ``PILOT_MAX_PAIRS`` pairs and scales up to a positive
    estimate for the whole design."""
    import importlib

    from studies.engine.cost import PILOT_MAX_PAIRS

    rob = importlib.import_module("studies.qualify.robustness")  # the package's `robustness` is the function

    piloted = []
    real = rob.law_counts

    def spy(law_json, *args):
        piloted.append(law_json["clusters"])
        return real(law_json, *args)

    monkeypatch.setattr(rob, "law_counts", spy)
    est = robustness_estimate(["cluster_t"], 1_000_000, 100, MARGIN, families=("model", "logit_normal"),
                              replications=1000)
    assert piloted and max(piloted) * 100 <= PILOT_MAX_PAIRS and min(piloted) >= 2
    assert est.low > 1000 * 1e-3  # 10^8 pairs a replication: well over a millisecond each
