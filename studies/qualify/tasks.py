"""The per-scenario engine of the qualifier: one task's counts through the engine's one loop
(``run_task``; ``qualify(..., batched=False)``).  The batched engine (``studies.qualify.batch``)
gives the same counts."""
from __future__ import annotations

from methods.qualification import QualificationPolicy

from studies.qualify.scenarios import Task, look_schedule, refusal, resolve_method, scenario_of


def run_task(policy: QualificationPolicy, task: Task, estimands: tuple[str, ...]) -> dict[tuple, tuple[int, int]]:
    """Pass and inconclusive counts of each method on the task's replication range (the
    engine's one loop, ``studies.engine.evaluate``: on the moment path when every method can
    take it, the same counts)."""
    from simlab.sampling import table_source
    from studies.engine.evaluate import MethodError, PassCounts, ScenarioRows, evaluate

    spec = task.spec
    scenario = scenario_of(policy, spec, estimands[0])
    for e in estimands[1:]:
        scenario_of(policy, spec, e)
    methods = [resolve_method(k) for k in task.methods]
    counts = PassCounts(len(methods))
    try:
        evaluate(ScenarioRows(table_source(scenario, policy.seed, policy.sampler)), task.start, task.stop, methods,
                 (spec.margin,), (policy.alpha,), counts, schedule=look_schedule(policy))
    except MethodError as exc:
        raise refusal(task.methods[exc.index], spec, exc.reason) from None
    return {k: (c[0], c[1]) for k, c in zip(task.methods, counts.counts)}


def run_tasks_one_by_one(policy, batch, estimands):
    return [(i, run_task(policy, t, estimands)) for i, t in batch]
