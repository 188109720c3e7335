"""Built-in synthetic paired experiments (demo, tests, benchmark).

Each cluster's cell probabilities (p11, p10, p01, p00) are drawn from a Dirichlet with
concentration ``(1 - rho) / rho`` around the cells implied by baseline pass rate ``b``,
discordance ``q`` and difference ``d`` (p10 = (q - d)/2, p01 = (q + d)/2; the DGM of
``simlab.scenario``), and every (case, trial) pair draws its cell from them.  Fixed seed:
the same arguments give the same bytes.

Judge-labelled experiments (``judge=(Se_b, Sp_b, Se_c, Sp_c)``): the drawn cells are the true
outcomes; each arm's recorded label is then the judge's, passing a true pass with
probability Se and a true fail with probability 1 - Sp (the measurement model of
``simlab.scenario.LabelNoise``), and every row says ``judge_labelled: true``.
:func:`draw_calibration` draws the judge's representative human-labelled calibration sets
under the same model (``simlab.sampling.calibration``'s), :func:`write_calibration` writes
them as a file of paired labels (``evidence.judge``)."""
from __future__ import annotations

import datetime as dt
from pathlib import Path

import numpy as np

from .manifest import Manifest, template

_ARMS = ("baseline", "candidate")


def demo_manifest(*, experiment_id: str = "demo-agent-rc1-vs-baseline", method: str = "binomial_loss",
                  repetitions: int = 1, minimum_clusters: int = 30, margin: float = 0.03, rho_max: float = 0.05,
                  measurement_kind: str = "synthetic", code_revision: str | None = None,
                  qualification_sha256: str = "sha256:" + "0" * 64, created: dt.datetime | None = None,
                  **extra) -> Manifest:
    from methods import registry

    created = created or dt.datetime(2026, 11, 30, 12, 0, tzinfo=dt.timezone.utc)
    data = template(created)
    extra.setdefault("estimand", registry.get(method).estimand.value)  # the method's own estimand
    extra.setdefault("population_hash", "sha256:" + "1" * 64)
    data.update(experiment_id=experiment_id, statistical_method=method, repetitions=repetitions,
                minimum_independent_clusters=minimum_clusters, margin=margin, rho_max=rho_max,
                measurement_kind=measurement_kind, qualification_sha256=qualification_sha256,
                code_revision=code_revision or ("a" * 40 if measurement_kind == "measured" else "working-tree-unpinned"),
                **extra)
    return Manifest.parse(data)


def cell_probabilities(baseline: float, discordance: float, difference: float) -> np.ndarray:
    p10, p01 = (discordance - difference) / 2.0, (discordance + difference) / 2.0
    cells = np.array([baseline - p10, p10, p01, 1.0 - baseline - p01])
    if np.any(cells < -1e-12):
        raise ValueError(f"baseline {baseline}, discordance {discordance}, difference {difference} give "
                         f"negative cell probabilities {cells.tolist()}")
    return np.clip(cells, 0.0, 1.0) / np.clip(cells, 0.0, 1.0).sum()


def draw_categories(*, clusters: int, pairs_per_cluster: int, baseline: float = 0.9, discordance: float = 0.02,
                    difference: float = 0.0, rho: float = 0.0, seed: int = 20261130) -> np.ndarray:
    """Cell index (0..3 = n11, n10, n01, n00) of every pair, cluster-major: shape (K, M)."""
    rng = np.random.default_rng(seed)
    p = cell_probabilities(baseline, discordance, difference)
    if rho > 0.0:
        alpha = (1.0 - rho) / rho
        probs = rng.dirichlet(np.maximum(alpha * p, 1e-12), size=clusters)
    else:
        probs = np.broadcast_to(p, (clusters, 4))
    cum = np.cumsum(probs, axis=1)
    u = rng.random((clusters, pairs_per_cluster))
    return np.minimum((u[:, :, None] > cum[:, None, :]).sum(axis=2), 3)


def judge_labels(cats: np.ndarray, judge: tuple[float, float, float, float], seed: int) -> np.ndarray:
    """The cells the judge records for true cells ``cats`` (same shape, 0..3 = n11, n10, n01,
    n00): each arm's label through that arm's (sensitivity, specificity)."""
    rng = np.random.default_rng([seed, 1])
    se_b, sp_b, se_c, sp_c = judge
    out = []
    for truth, se, sp in (((cats == 0) | (cats == 1), se_b, sp_b), ((cats == 0) | (cats == 2), se_c, sp_c)):
        u = rng.random(cats.shape)
        out.append(np.where(truth, u < se, u < 1.0 - sp))
    return 2 * (~out[0]).astype(np.int64) + (~out[1]).astype(np.int64)


def draw_calibration(items: int, pass_rates: tuple[float, float], judge: tuple[float, float, float, float],
                     seed: int, shared: bool = False) -> list[list[int]]:
    """A representative calibration set of ``items`` human-labelled items per arm: each item's
    human label passes with its arm's true pass rate, the judge labels it through that arm's
    sensitivity and specificity; counts per arm ``2 * human_fail + judge_fail``.  ``shared``:
    one set for both arms (one judge: the baseline's error; the mean pass rate)."""
    rng = np.random.default_rng([seed, 2])
    counts = []
    sets = ([(sum(pass_rates) / 2.0, judge[0], judge[1])] if shared
            else list(zip(pass_rates, judge[0::2], judge[1::2])))
    for rate, se, sp in sets:
        human = rng.random(items) < rate
        u = rng.random(items)
        judged = np.where(human, u < se, u < 1.0 - sp)
        counts.append(np.bincount(2 * (~human) + (~judged), minlength=4).tolist())
    return counts


def write_calibration(path: str | Path, counts: list[list[int]]) -> str:
    """Write calibration ``counts`` (per arm, or one shared row) as a JSONL file of paired
    labels; returns its sha256."""
    import hashlib
    import json

    lines = [json.dumps({"item_id": f"{arm}-{i}", "set": arm, "human_passed": cell < 2, "judge_passed": cell % 2 == 0})
             for arm, row in zip(_ARMS if len(counts) == 2 else ("shared",), counts) for cell, n in enumerate(row) for i in range(sum(row[:cell]),
                                                                                          sum(row[:cell]) + n)]
    path = Path(path)
    path.write_text("\n".join(lines) + "\n")
    return "sha256:" + hashlib.sha256(path.read_bytes()).hexdigest()


def write_trials(path: str | Path, manifest: Manifest, *, clusters: int, cases_per_cluster: int = 1,
                 candidate_failed: int = 0, cost_provenance: str = "synthetic",
                 judge: tuple[float, float, float, float] | None = None, **draw) -> Path:
    """Write a JSONL trial file for ``manifest`` (both arms, ``manifest.repetitions`` trials per
    case); the first ``candidate_failed`` candidate trials get a failed check; ``judge``: the
    recorded labels are this judge's (module docstring)."""
    reps = manifest.repetitions
    cats = draw_categories(clusters=clusters, pairs_per_cluster=cases_per_cluster * reps, **draw)
    if judge is not None:
        cats = judge_labels(cats, judge, draw.get("seed", 20261130))
    judged = ',"judge_labelled":true' if judge is not None else ""
    h = manifest.sha256
    cost = "null" if cost_provenance == "absent" else "0.002"
    lines = []
    failed_left = candidate_failed
    for k in range(clusters):
        for j in range(cases_per_cluster):
            for t in range(reps):
                cat = int(cats[k, j * reps + t])
                for arm, passed in (("baseline", cat in (0, 1)), ("candidate", cat in (0, 2))):
                    checks = "[]"
                    if arm == "candidate" and failed_left > 0:
                        checks, failed_left = '["refund_over_limit"]', failed_left - 1
                    lines.append(f'{{"case_id":"case-{k:05d}-{j:02d}","trial_index":{t},"cluster_id":"customer-{k:05d}",'
                                 f'"arm":"{arm}","passed":{"true" if passed else "false"},"failed_checks":{checks},'
                                 f'"latency_ms":{100 + 7 * t + k % 13 + 3 * (arm == "candidate")},"cost":{cost},'
                                 f'"cost_provenance":"{cost_provenance}","manifest_sha256":"{h}"{judged}}}')
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("\n".join(lines) + "\n")
    return path


def population_of(clusters: int, cases_per_cluster: int = 1) -> dict[str, str]:
    """The case list ``write_trials`` writes: case id -> cluster id."""
    return {f"case-{k:05d}-{j:02d}": f"customer-{k:05d}" for k in range(clusters) for j in range(cases_per_cluster)}


def write_population(path: str | Path, clusters: int, cases_per_cluster: int = 1) -> Path:
    """The registered case list of a synthetic experiment, as JSONL (``evidence.population``)."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(f'{{"case_id":"{c}","cluster_id":"{k}"}}\n'
                            for c, k in population_of(clusters, cases_per_cluster).items()))
    return path


def with_population(manifest: Manifest, clusters: int, cases_per_cluster: int = 1) -> Manifest:
    """``manifest`` registering the synthetic experiment's population."""
    from .population import identity

    h = identity(population_of(clusters, cases_per_cluster))
    return manifest if manifest.population_hash == h else Manifest.parse({**manifest.canonical(), "population_hash": h})
