"""The default grid of laws a robustness report measures a claim under, by family.

Each family is a small grid at the design ``(K, M, margin)`` and one population baseline,
every law on the null boundary (``simlab.sampling.robust``); the grid spans implied ICCs of
``D`` both below and above ``rho_max`` where the family can reach them:

* ``logit_normal`` -- cluster, candidate-only and case effects (sds on the logit scale); a
  shared cluster effect alone implies a small ICC of D, a candidate-only one a large one;
* ``random_sizes`` -- the Dirichlet-multinomial model at ``rho_max`` with ``1 + Poisson``,
  ``1 + geometric`` and ``Poisson`` (empty clusters allowed) sizes of mean ``M``, at
  discordance ``margin`` (the model's least favourable corner) and two larger ones;
* ``discordance`` -- gamma multipliers of the discordance per cluster (shapes 0.5 and 2),
  per case, and both;
* ``direction`` -- customers favouring the candidate or the baseline, symmetric and skewed splits;
* ``model`` -- the Dirichlet-multinomial model itself at fixed sizes and ``rho_max``, at
  discordance ``margin`` and 0.1: the claim's own worst corner, for reference.

Points that fall outside the boundary's feasible discordances at this baseline (``q <= 2 b
- m`` and ``q <= 2 (1 - b) + m``) are moved to the largest feasible one, and a direction
split too wide for its discordance to the widest that fits (points that become equal are
one law).
"""
from __future__ import annotations

from simlab.estimands import Estimand, null_discordance_range
from simlab.sampling.robust import DirectionLaw, DirichletLaw, DiscordanceLaw, LogitNormalLaw, RobustLaw
from simlab.scenario import FixedSize, GeometricSize, PoissonSize

FAMILIES = ("logit_normal", "random_sizes", "discordance", "direction", "model")
DEFAULT_BASELINE = 0.9

# (cluster_sd, candidate_sd, case_sd)
LOGIT_NORMAL = ((1.0, 0.0, 0.0), (2.0, 0.0, 0.0), (0.0, 0.0, 1.0), (0.0, 0.5, 0.0), (1.0, 0.5, 0.0),
                (0.5, 0.5, 1.0), (1.0, 1.0, 1.5), (0.0, 1.0, 0.0), (1.0, 1.0, 0.0), (2.0, 2.0, 0.0))
# (discordance, cluster shape, case shape)
DISCORDANCE = ((0.05, 0.5, None), (0.05, 2.0, None), (0.1, 0.5, None), (0.1, 2.0, None), (0.2, 0.5, None),
               (0.2, 2.0, None), (0.1, None, 0.5), (0.1, 0.5, 0.5))
# (discordance, share favouring the candidate, their difference)
DIRECTION = ((0.1, 0.5, 0.04), (0.2, 0.5, 0.11), (0.23, 0.5, 0.17), (0.2, 0.2, 0.2), (0.23, 0.8, 0.02))
RANDOM_DISCORDANCES = (None, 0.1, 0.2)  # None: the margin itself
MODEL_DISCORDANCES = (None, 0.1)


def _feasible(q: float | None, baseline: float, margin: float) -> float:
    lim = null_discordance_range(Estimand.TRIAL, baseline, margin)
    if lim is None:
        raise ValueError(f"baseline {baseline:g}: no law lies on the null boundary at margin {margin:g}")
    return lim[0] if q is None else min(max(q, lim[0]), lim[1])


def default_laws(clusters: int, trials: int, margin: float, rho_max: float = 0.1,
                 families: tuple[str, ...] | list[str] = FAMILIES, baseline: float = DEFAULT_BASELINE) -> list[RobustLaw]:
    """The grid of each family in ``families`` at this design (module docstring)."""
    unknown = [f for f in families if f not in FAMILIES]
    if unknown:
        raise ValueError(f"unknown law families {unknown}; known: {', '.join(FAMILIES)}")
    common = dict(clusters=clusters, margin=margin, baseline=baseline)
    laws: list[RobustLaw] = []
    seen: set[str] = set()

    def add(law: RobustLaw) -> None:
        if law.key not in seen:  # clipping can make two points one law
            seen.add(law.key)
            laws.append(law)

    for family in families:
        if family == "logit_normal":
            for sc, tau, se in LOGIT_NORMAL:
                add(LogitNormalLaw(trials=trials, cluster_sd=sc, candidate_sd=tau, case_sd=se, **common))
        elif family == "random_sizes":
            most = min(getattr(c, "le", float("inf"))  # the sized laws' own bound on their mean
                       for law in (PoissonSize, GeometricSize) for c in law.model_fields["mean_trials"].metadata)
            if trials > most:
                raise ValueError(f"trials: the random_sizes laws draw cluster sizes of mean M, at most {most:g}; "
                                 f"got {trials} (leave random_sizes out of the law families for a larger M)")
            sizes = (PoissonSize(mean_trials=trials, minimum=1), GeometricSize(mean_trials=trials, minimum=1),
                     PoissonSize(mean_trials=trials, minimum=0))
            for size in sizes:
                for q in RANDOM_DISCORDANCES:
                    add(DirichletLaw(cluster_size=size, discordance=_feasible(q, baseline, margin), rho=rho_max,
                                     **common))
        elif family == "discordance":
            for q, kc, kt in DISCORDANCE:
                add(DiscordanceLaw(trials=trials, discordance=_feasible(q, baseline, margin), cluster_shape=kc,
                                   case_shape=kt, **common))
        elif family == "direction":
            for q, share, lead in DIRECTION:
                q = _feasible(q, baseline, margin)
                # the others' difference (-m - s lead)/(1 - s) stays >= -q while lead <= (q (1 - s) - m)/s
                lead = min(lead, q, (q * (1.0 - share) - margin) / share)
                add(DirectionLaw(trials=trials, discordance=q, favour_share=share, favour_difference=lead, **common))
        else:
            for q in MODEL_DISCORDANCES:
                add(DirichletLaw(cluster_size=FixedSize(trials=trials), discordance=_feasible(q, baseline, margin),
                                 rho=rho_max, **common))
    return laws


def law_family(law: RobustLaw) -> str:
    """The family of ``FAMILIES`` a law belongs to."""
    if isinstance(law, DirichletLaw):
        return "model" if isinstance(law.cluster_size, FixedSize) else "random_sizes"
    return {"logit_normal": "logit_normal", "gamma_discordance": "discordance",
            "direction_mixture": "direction"}[law.kind]
