"""The scenarios and tasks of a qualification: a policy's grid scenarios on the null boundary
of the methods' estimand, the DGM of each, and a task = replications ``start .. stop - 1`` of
one scenario for some methods (how a worker finds the same methods again: ``method_key``).

Randomness: a scenario's tables are ``simlab.sampling.table_source(scenario, policy.seed,
policy.sampler)`` -- exactly the tables a study of that scenario and seed evaluates, each
replication a pure function of (seed, scenario, replication index).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from methods.qualification import QualificationPolicy, ScenarioPoint, nuisance_grid
from simlab.scenario import PairedScenario
from simlab.estimands import null_scenario, true_value


@dataclass
class Counts:
    n_reps: int = 0
    n_pass: int = 0
    n_inconclusive: int = 0
    verdict: str | None = None  # of the counts as they stand, and their Clopper-Pearson
    upper: float | None = None    # upper bound at the stage confidence (``Escalation`` keeps both current)

    @property
    def rate(self) -> float:
        return self.n_pass / self.n_reps if self.n_reps else float("nan")


def grid_specs(policy: QualificationPolicy, estimand: str) -> list[ScenarioPoint]:
    """Every grid scenario of the policy for methods of ``estimand``: each cell x its
    (baseline, discordance) grid on that estimand's null boundary."""
    dom = policy.domain
    return [ScenarioPoint(k, s, r, m, n, b, q) for (k, s, r, m, n) in dom.cells()
            for (b, q) in nuisance_grid(dom, m, estimand)]


def scenario_of(policy: QualificationPolicy, spec: ScenarioPoint, estimand: str) -> PairedScenario:
    """The DGM of ``spec`` on the null boundary of ``estimand`` (``simlab.estimands.null_scenario``);
    checks that the estimand's true value is ``-margin``."""
    dom = policy.domain
    sc = null_scenario(estimand, spec.baseline, spec.discordance, spec.margin, clusters=spec.clusters,
                       cluster_size=dom.cluster_sizes[spec.size], rho=spec.rho,
                       label_noise=dom.label_noise[spec.noise])
    check_null(sc, spec, estimand)
    return sc


def check_null(sc: PairedScenario, spec: ScenarioPoint, estimand: str, true: float | None = None) -> None:
    """Raise unless ``estimand``'s true value in ``sc`` (``true``, when already known) is
    ``-margin``: the scenario is on the null boundary of the estimand it is evaluated for."""
    if true is None:
        true = true_value(sc, estimand)
    if abs(true + spec.margin) > 1e-12:
        raise ValueError(f"scenario {spec}: true {estimand} value {true} is not on the null boundary "
                         f"-{spec.margin}")


def method_key(method) -> tuple:
    """How a worker process finds the same method: registry name, options, wrapped method."""
    from methods import registry

    inner = getattr(method, "inner", None)
    return (registry.reference(method), tuple(sorted(method.options.items())),
            None if inner is None else registry.reference(inner))


_RESOLVED: dict[tuple, Any] = {}


def resolve_method(key: tuple):
    if key not in _RESOLVED:
        from methods import registry
        name, options, inner = key
        m = registry.get(name)
        if inner is not None:
            m = m.with_inner(inner)
        if options and dict(options) != m.options:
            m = m.with_options(**dict(options))
        _RESOLVED[key] = m
    return _RESOLVED[key]


@dataclass(frozen=True)
class Task:
    """Replications ``start .. stop-1`` of one scenario for some methods."""
    spec: ScenarioPoint
    methods: tuple[tuple, ...]   # method keys
    start: int
    stop: int


def look_schedule(policy: QualificationPolicy):
    """The look schedule of a K-cluster scenario (a function of K), or None without looks."""
    if policy.domain.looks is None:
        return None
    from methods.sequential.base import LookSchedule
    return lambda k: LookSchedule(looks=policy.domain.look_schedule(k))


def refusal(key: tuple, spec: ScenarioPoint, reason: str) -> ValueError:
    """A method's refusal of a domain point, as an error naming the method and the point."""
    return ValueError(f"method {key[0]!r} cannot run at K={spec.clusters}, margin={spec.margin:g} of this "
                      f"policy's domain: {reason}")


def task_cost(policy: QualificationPolicy, task: Task) -> float:
    """Relative cost of a task (replications x clusters x (trials + 2 per method))."""
    return (task.stop - task.start) * task.spec.clusters * (
        policy.domain.cluster_sizes[task.spec.size].mean() + 2.0 * len(task.methods))
