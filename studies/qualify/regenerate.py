"""Regenerate every record in a records directory: each record's own method (registry name,
options, wrapped method) under its own embedded policy, methods sharing a policy qualified
together (common random numbers; a method's counts do not depend on its companions, since
every table is a pure function of (seed, scenario, replication index)).

Use after a change that makes records stale (method protocol, method source) or that
changes the record schema (e.g. schema 2's staged Bonferroni bounds).  Heat maps beside
the records are redrawn.
"""
from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

from methods.qualification import RecordedMethod, QualificationPolicy, content_hash, record_paths, same_digest, short


@dataclass(frozen=True)
class PlanItem:
    policy: QualificationPolicy
    methods: tuple[RecordedMethod, ...]
    sources: tuple[Path, ...]

    def as_dict(self) -> dict:
        return {"policy_sha256": self.policy.sha256, "methods": [m.name for m in self.methods],
                "records": [str(p) for p in self.sources], "grid_cells": len(self.policy.domain.cells())}


def _policy_matches(policy: QualificationPolicy, wanted: str | None) -> bool:
    """``wanted``: a built-in policy name or a policy sha256 prefix (None: any)."""
    if wanted is None:
        return True
    from methods.qualification import named_policy, policy_names
    if wanted in policy_names():
        return policy.sha256 == named_policy(wanted).sha256
    return short(policy.sha256, 64).startswith(wanted.removeprefix("sha256:"))


def plan(directory: str | Path, only: set[str] | None = None, policy: str | None = None) -> list[PlanItem]:
    """Group the records in ``directory`` by policy (hash-checked, stale methods allowed);
    ``only`` method names, ``policy`` a built-in name or hash prefix."""
    groups: dict[str, tuple[QualificationPolicy, dict[str, RecordedMethod], list[Path]]] = {}
    for p in record_paths(None, directory):
        data = json.loads(p.read_text())
        if not same_digest(content_hash(data["policy"]), data.get("policy_sha256")):
            raise ValueError(f"record {p.name}: policy hash mismatch; refusing to regenerate from it")
        ref = RecordedMethod.model_validate(data["method"])
        if only and ref.name not in only and ref.registered_name not in only:
            continue
        pol_p = QualificationPolicy.model_validate(data["policy"])
        if not _policy_matches(pol_p, policy):
            continue
        pol, methods, paths = groups.setdefault(pol_p.sha256, (pol_p, {}, []))
        methods.setdefault(ref.name, ref)
        paths.append(p)
    return [PlanItem(pol, tuple(sorted(ms.values(), key=lambda m: m.name)), tuple(ps))
            for pol, ms, ps in groups.values()]


def regenerate_estimate(items: list[PlanItem], workers: int = 1, checkpoint: str | Path | None = None):
    """Wall seconds of regenerating ``items`` (``studies.engine.cost.TimeEstimate``): the
    qualifier's estimate of every (policy, methods) group, summed, leaving out the tasks a
    ``checkpoint`` already holds (``low``: every group's first round)."""
    from studies.engine.cost import TimeEstimate, qualify_estimate
    from studies.qualify.checkpoint import finished_ranges

    low = high = 0.0
    for item in items:
        methods = [ref.resolve() for ref in item.methods]
        finished = finished_ranges(checkpoint, item.policy, methods) if checkpoint else set()
        est = qualify_estimate(methods, item.policy, workers, finished)
        low, high = low + est.low, high + est.high
    return TimeEstimate(low, high, workers)


def regenerate(directory: str | Path, out_dir: str | Path | None = None, *, only: set[str] | None = None,
               policy: str | None = None, n_jobs: int = 1, heatmaps: bool = True, checkpoint: str | Path | None = None,
               progress: Callable[[str], None] | None = None) -> list[dict]:
    """Re-run every planned (policy, methods) group; write into ``out_dir`` (default: in
    place).  ``checkpoint``: a directory where finished tasks are kept, so that a stopped
    regeneration resumes (``studies.qualify.checkpoint``).  Returns one summary per
    regenerated record."""
    from studies.qualify.run import qualify
    from studies.plots.qualification import heatmap

    out = Path(out_dir) if out_dir is not None else Path(directory)
    done = []
    for item in plan(directory, only, policy):
        methods = [ref.resolve() for ref in item.methods]
        if progress:
            progress(f"policy {short(item.policy.sha256, 10)}: {', '.join(m.name for m in item.methods)}")
        run = qualify(methods, item.policy, n_jobs=n_jobs, out_dir=out, progress=progress, checkpoint=checkpoint)
        for o in run.outcomes:
            if heatmaps and o.record_path is not None:
                heatmap(o.record, o.record_path.with_suffix(".png"))
            q = o.record.qualified
            done.append({"method": o.record.method.name, "policy_sha256": item.policy.sha256,
                         "record": str(o.record_path), "cells_qualified": q.cells_qualified,
                         "cells_total": q.cells_total, "seconds": run.seconds})
    return done
