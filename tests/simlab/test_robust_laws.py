"""Laws outside the Dirichlet-multinomial family (simlab.sampling.robust): each sampler's
population difference, cell rates and ICC of D against the law's stated values (4 MC SE),
its cluster-table law against an independently computed pmf (chi-square), bitwise identity
for any chunking, the quadrature against scipy's adaptive integration, and the variates."""
from __future__ import annotations

import itertools
import math

import numba as nb
import numpy as np
import pytest
from scipy import integrate, stats
from scipy.special import expit

from simlab.sampling import CompositionSource
from simlab.sampling.robust import (DirectionLaw, DirichletLaw, DiscordanceLaw, LogitNormalLaw, capped_gamma,
                                    mean_expit, parse_law, realised_moments, solve_intercept)
from simlab.sampling.robust.variates import gamma
from simlab.scenario import FixedSize, GeometricSize, PairedScenario, PoissonSize

SEED = 20260417
COMMON = dict(clusters=40, margin=0.03, baseline=0.9)
LAWS = [
    LogitNormalLaw(trials=3, cluster_sd=1.0, candidate_sd=0.5, case_sd=1.0, **COMMON),
    LogitNormalLaw(trials=3, cluster_sd=0.0, candidate_sd=1.5, **COMMON),
    DiscordanceLaw(trials=3, discordance=0.1, cluster_shape=0.5, **COMMON),
    DiscordanceLaw(trials=3, discordance=0.2, cluster_shape=0.5, case_shape=2.0, **COMMON),
    DirectionLaw(trials=3, discordance=0.2, favour_share=0.2, favour_difference=0.2, **COMMON),
    DirichletLaw(cluster_size=GeometricSize(mean_trials=3), discordance=0.1, rho=0.1, **COMMON),
    DirichletLaw(cluster_size=PoissonSize(mean_trials=3, minimum=0), discordance=0.03, rho=0.1, **COMMON),
]
IDS = [law.label[:60] for law in LAWS]
TABLES = [tuple(t) for t in itertools.product(range(4), repeat=4) if sum(t) == 3]  # the 20 tables of 3 pairs


def _within(mean: np.ndarray, se: np.ndarray, target, what: str) -> None:
    """Within 4 MC SE; a quantity with no spread (a cell of probability 0) must be exact."""
    gap, se = np.abs(np.asarray(mean) - np.asarray(target)), np.asarray(se)
    assert np.all(np.where(se > 0, gap < 4.0 * se, gap < 1e-15)), f"{what}: {mean} vs {target} (SE {se})"


@pytest.mark.parametrize("law", LAWS, ids=IDS)
def test_difference_cells_and_icc_match_the_law(law):
    R = 3000
    tables = law.source(SEED).tables(0, R).astype(np.int64)
    n = tables.sum(axis=(1, 2)).astype(np.float64)
    assert abs(law.implied_difference() + law.margin) < 1e-12  # on the null boundary by construction
    rates = tables.sum(axis=1) / n[:, None]                  # per replication: trial-weighted cell rates
    _within(rates.mean(axis=0), rates.std(axis=0, ddof=1) / math.sqrt(R), law.cells(), "cells")
    diff = rates[:, 2] - rates[:, 1]
    _within(diff.mean(), diff.std(ddof=1) / math.sqrt(R), -law.margin, "difference")
    icc = realised_moments(tables, law.implied_difference(), law.implied_discordance())["icc_d"]
    icc = icc[np.isfinite(icc)]
    _within(icc.mean(), icc.std(ddof=1) / math.sqrt(icc.size), law.icc_d(), "ICC of D")


@pytest.mark.parametrize("law", LAWS, ids=IDS)
def test_any_chunking_gives_the_same_tables(law):
    src = law.source(SEED)
    whole = src.tables(0, 300)
    parts = np.concatenate([src.tables(0, 1), src.tables(1, 117), src.tables(117, 300)])
    assert np.array_equal(whole, parts)
    again = law.source(SEED).fill(np.empty((50, law.clusters, 4), np.int32), 200)  # a fresh source, mid-stream
    assert np.array_equal(again, whole[200:250])
    other = law.source(SEED + 1).tables(0, 300)
    assert not np.array_equal(other, whole)


def _cluster_counts(tables: np.ndarray) -> np.ndarray:
    flat = tables.reshape(-1, 4)
    index = {t: i for i, t in enumerate(TABLES)}
    return np.bincount([index[tuple(r)] for r in flat.tolist()], minlength=len(TABLES))


def _gof(counts: np.ndarray, pmf: np.ndarray) -> float:
    """Chi-square goodness-of-fit p-value, cells with expected count < 5 pooled."""
    expected = counts.sum() * pmf / pmf.sum()
    small = expected < 5
    obs = np.append(counts[~small], counts[small].sum())
    exp = np.append(expected[~small], expected[small].sum())
    keep = exp > 0
    return float(stats.chisquare(obs[keep], exp[keep]).pvalue)


def _multinomial(cells) -> np.ndarray:
    return np.array([stats.multinomial.pmf(t, 3, cells) for t in TABLES])


# A fixed seed makes each p-value one number; 1e-3 is the level at which a correct sampler
# would fail one such test in a thousand seeds (the laws' pmfs are computed independently).
P_MIN = 1e-3


def test_zero_variance_logit_normal_is_the_independent_trials_law():
    law = LogitNormalLaw(trials=3, cluster_sd=0.0, **COMMON)
    b, c = law.baseline, law.baseline - law.margin
    assert np.allclose(law.cells(), (b * c, b * (1 - c), (1 - b) * c, (1 - b) * (1 - c)), atol=1e-14)
    ln = _cluster_counts(law.source(SEED).tables(0, 2500))
    dm = PairedScenario.independent_arms(b, c, clusters=law.clusters, cluster_size=FixedSize(trials=3), rho=0.0)
    comp = _cluster_counts(CompositionSource(dm, SEED).tables(0, 2500))
    pmf = _multinomial(law.cells())
    assert _gof(ln, pmf) > P_MIN and _gof(comp, pmf) > P_MIN
    seen = (ln + comp) > 0
    assert stats.chi2_contingency(np.vstack([ln[seen], comp[seen]]))[1] > P_MIN   # the two samplers agree


def test_case_effects_alone_are_independent_pairs_with_the_laws_cells():
    law = LogitNormalLaw(trials=3, cluster_sd=0.0, case_sd=1.5, **COMMON)
    assert abs(law.icc_d()) < 1e-12
    assert _gof(_cluster_counts(law.source(SEED).tables(0, 2500)), _multinomial(law.cells())) > P_MIN
    gamma_case = DiscordanceLaw(trials=3, discordance=0.2, case_shape=0.5, **COMMON)
    assert gamma_case.icc_d() == 0.0
    assert _gof(_cluster_counts(gamma_case.source(SEED).tables(0, 2500)), _multinomial(gamma_case.cells())) > P_MIN


def _pair_cells(law, lam: float) -> tuple[float, float, float, float]:
    q, m = law.discordance * lam, law.margin
    p10 = lam * (law.discordance + m) / 2
    r = (law.baseline - (law.discordance + m) / 2) / (1 - law.discordance)
    return (1 - q) * r, p10, q - p10, (1 - q) * (1 - r)


def test_cluster_gamma_tables_follow_the_capped_gamma_mixture():
    law = DiscordanceLaw(trials=3, discordance=0.25, cluster_shape=0.7, clusters=40, margin=0.03, baseline=0.75)
    shape = law.cluster_shape
    cap, mean, _ = law.multipliers[0]
    dens = stats.gamma(shape, scale=1 / shape)
    pmf = []
    for t in TABLES:
        body = integrate.quad(lambda g: dens.pdf(g) * stats.multinomial.pmf(t, 3, _pair_cells(law, g / mean)), 0, cap,
                              epsabs=1e-13, limit=200)[0]
        pmf.append(body + dens.sf(cap) * stats.multinomial.pmf(t, 3, _pair_cells(law, cap / mean)))
    assert abs(sum(pmf) - 1) < 1e-8
    assert _gof(_cluster_counts(law.source(SEED).tables(0, 2500)), np.array(pmf)) > P_MIN


def test_direction_tables_follow_the_two_type_mixture():
    law = DirectionLaw(trials=3, discordance=0.3, favour_share=0.3, favour_difference=0.25, clusters=40, margin=0.03,
                       baseline=0.75)
    q, r = law.discordance, (law.baseline - (law.discordance + law.margin) / 2) / (1 - law.discordance)

    def cells(d):
        return ((1 - q) * r, (q - d) / 2, (q + d) / 2, (1 - q) * (1 - r))

    pmf = (law.favour_share * _multinomial(cells(law.favour_difference))
           + (1 - law.favour_share) * _multinomial(cells(law.other_difference)))
    assert _gof(_cluster_counts(law.source(SEED).tables(0, 2500)), pmf) > P_MIN
    s, spread = law.favour_share, law.favour_difference - law.other_difference
    assert law.icc_d() == pytest.approx(s * (1 - s) * spread ** 2 / (q - law.margin ** 2), rel=1e-12)


def test_trapezoidal_sums_match_independent_quadrature():
    """One dimension against scipy's adaptive Gauss-Kronrod; two dimensions against a
    Gauss-Hermite product rule (at unit sds it is exact to rounding with 100 nodes)."""
    def quad_mean(mu, sd):
        return integrate.quad(lambda z: expit(mu + sd * z) * stats.norm.pdf(z), -40, 40, epsabs=1e-15, limit=500,
                              points=[-mu / sd])[0]

    for mu, sd in ((0.5, 1.0), (2.2, 2.5), (4.0, 4.0), (-4.0, 5.6)):
        assert mean_expit(mu, sd) == pytest.approx(quad_mean(mu, sd), abs=1e-13)
    assert mean_expit(-2.0, 0.0) == pytest.approx(expit(-2.0), abs=1e-16)
    for rate, sd in ((0.9, 1.5), (0.03, 4.0)):
        assert quad_mean(solve_intercept(rate, sd), sd) == pytest.approx(rate, abs=1e-12)
    law = LogitNormalLaw(trials=3, cluster_sd=1.0, candidate_sd=1.0, case_sd=0.0, **COMMON)
    mu_b, mu_c = law.intercepts
    x, w = np.polynomial.hermite_e.hermegauss(100)
    w = w / math.sqrt(2 * math.pi)
    u, v = x[:, None], x[None, :]
    p11 = w @ (expit(mu_b + u) * expit(mu_c + u + v)) @ w
    assert law.cells()[0] == pytest.approx(p11, abs=1e-13)
    eg2 = w @ ((expit(mu_c + u + v) - expit(mu_b + u)) ** 2) @ w
    m2 = law.margin ** 2
    assert law.icc_d() == pytest.approx((eg2 - m2) / (law.implied_discordance() - m2), abs=1e-12)


def test_capped_gamma_has_mean_one_and_the_stated_largest_value():
    for shape, largest in ((0.5, 3.0), (2.0, 1.5), (0.05, 10.0), (2.0, 40.0)):
        cap, mean, var = capped_gamma(shape, largest)
        dens = stats.gamma(shape, scale=1 / shape)
        m1 = integrate.quad(lambda g: g * dens.pdf(g), 0, cap, limit=200)[0] + cap * dens.sf(cap)
        m2 = integrate.quad(lambda g: g * g * dens.pdf(g), 0, cap, limit=200)[0] + cap * cap * dens.sf(cap)
        assert mean == pytest.approx(m1, rel=1e-8) and cap / mean == pytest.approx(largest, rel=1e-9)
        assert var == pytest.approx(m2 / m1 ** 2 - 1, rel=1e-6, abs=1e-12)


@nb.njit(cache=True)
def _gammas(shape, n):
    out = np.empty(n)
    draw = 0
    for i in range(n):
        out[i], draw = gamma(np.uint64(3), np.uint64(5), 0, draw, shape)
    return out


@pytest.mark.parametrize("shape", [0.3, 1.0, 2.5, 40.0])
def test_gamma_variates_follow_the_gamma_law(shape):
    x = _gammas(shape, 20_000)
    assert stats.kstest(x, stats.gamma(shape).cdf).pvalue > P_MIN
    assert np.all(x > 0)


def test_laws_are_validated_and_content_keyed():
    law = LAWS[0]
    assert parse_law(law.model_dump(mode="json")) == law and parse_law(law.model_dump(mode="json")).key == law.key
    copy = law.model_copy(update={"case_sd": 0.9})
    assert copy.key != law.key and copy.intercepts != law.intercepts   # nothing cached is carried over
    with pytest.raises(ValueError, match="case_sd"):
        law.model_copy(update={"case_sd": -1.0})                        # and the copy is validated
    assert len({x.key for x in LAWS}) == len(LAWS)
    bad = [
        (LogitNormalLaw, dict(trials=3, cluster_sd=1.0, clusters=10, margin=0.3, baseline=0.2), "must exceed margin"),
        (LogitNormalLaw, dict(trials=3, cluster_sd=9.0, **COMMON), "cluster_sd"),
        (DiscordanceLaw, dict(trials=3, discordance=0.4, cluster_shape=1.0, **COMMON), "feasible"),
        (DiscordanceLaw, dict(trials=3, discordance=0.02, cluster_shape=1.0, **COMMON), "feasible"),
        (DirectionLaw, dict(trials=3, discordance=0.1, favour_share=0.5, favour_difference=0.09, **COMMON),
         "other clusters' difference"),
        (DirectionLaw, dict(trials=3, discordance=0.1, favour_share=0.5, favour_difference=-0.05, **COMMON),
         ">= -margin"),
        (DirichletLaw, dict(cluster_size=FixedSize(trials=3), discordance=0.1, rho=1.0, **COMMON), "rho"),
    ]
    for cls, kw, words in bad:
        with pytest.raises(ValueError, match=words):
            cls(**kw)
    with pytest.raises(ValueError, match="kind"):
        parse_law({"kind": "student_t", **COMMON})
