"""Certification at the design point (README, "Choosing a method"; results/qualification/README.md).

``certify(method, clusters, trials, margin, rho_max, looks)`` evaluates the method at
exactly that design -- K clusters of M trials, that margin and look schedule -- and takes
the worst false-pass rate over the nuisance domain: baseline pass rate and discordance
(ranges, default the standard domain's 0.5..1 and 0.01..0.5, always at the null boundary
true difference = -margin), rho from 0 up to ``rho_max``, and the declared label-noise
models.  The answer is a content-addressed ``Certificate`` (``methods.qualification.
certificate``) that ``find_coverage`` accepts for exactly that design.

Engines, picked in this order (``engine="auto"``; ``engine="exact"`` takes the first exact one):

1. ``exact-discordant`` (``studies.exact.discordant``): independent pairs (M = 1, where rho has
   no effect, or rho_max = 0), perfect labels, no looks, and a method that sees only the
   pooled discordant counts (checked on its kernel).  The nuisance is then one number, the
   discordance, and the search is dense *and proven*: branch and bound until every interval
   between nodes carries a rigorous upper bound (Bhattacharyya angle) below the threshold,
   or a node exceeds it.  No Monte Carlo error.
2. ``exact-convolution`` (``studies.exact.convolution``): clusters of one size M > 1 with
   rho_max > 0, perfect labels, no looks, and a method that sees only the pooled discordant
   counts (the same probe).  The law of the pooled counts is the K-fold convolution of one
   cluster's Dirichlet-multinomial law, independent of the baseline, so the nuisance is
   (discordance, rho); the rate is exact at every node of a dense grid (121 discordances x 6
   rho values, then a local refinement around the worst node), but no bound between nodes is
   proven: the certificate's ``search`` says it is a dense exact grid, and ``proven_upper`` is
   empty.
3. ``simulation``: the qualifier (``studies.qualify.run``) on a one-cell domain at exactly this
   design: rho on 5 equally spaced values 0..rho_max (one value when M = 1), baseline on 5
   and discordance on 8 values (denser near the margin, where p01 is small), every
   label-noise model, then 3 golden-section steps per nuisance axis around each cell's
   worst point; each scenario's acceptance is the staged Clopper-Pearson rule of
   ``methods.qualification.verdicts`` (valid at 95% under the adaptive schedule); the
   first scenario that exceeds settles the verdict and stops the search.  This grid is a
   search, not a proof: the certificate says so in ``search``.
"""
from __future__ import annotations

import time
from pathlib import Path
from typing import Any, Callable

import numpy as np

from methods.qualification import (EXCEEDS, MC_RULE, QUALIFIED, Axis, IntAxis, RecordedMethod, QualificationDomain,
                                   QualificationPolicy, format_time, utcnow)
from methods.qualification.certificate import (Certificate, CertifiedDesign, CertPoint, certificate_verdict,
                                               proven_upper)
from simlab.estimands import is_difference, null_discordance_range
from simlab.scenario import FixedSize, LabelNoise
from studies.exact.applicability import exact_refusal

SIM_RHO_VALUES = 5
SIM_BASELINE_VALUES = 5
SIM_DISCORDANCE_VALUES = 8


def _resolve(method):
    if isinstance(method, str):
        from methods import registry
        return registry.get(method)
    return method


def method_ref(method, estimand: str) -> RecordedMethod:
    from studies.qualify.run import method_key
    name, options, inner = method_key(method)
    return RecordedMethod(kind=method.kind, estimand=estimand, registered_name=name,
                     options=dict(options), inner=inner, **method.identity.as_dict())


def best_baseline(margin: float, baseline: tuple[float, float], estimand: str = "trial_weighted") -> float:
    """The baseline in range with the widest feasible discordance on the null boundary: for
    a difference q <= 2b - m and q <= 2(1 - b) + m peak together at b = 1/2 + m/2; for the
    loss rate q <= 1 - b + m is widest at the smallest baseline >= m."""
    if is_difference(estimand):
        return float(np.clip(0.5 + margin / 2.0, baseline[0], baseline[1]))
    return float(min(max(baseline[0], margin), baseline[1]))


def is_baseline_free(method, design: CertifiedDesign, alpha: float) -> bool:
    """Is the baseline no nuisance for ``method`` at ``design``?  Perfect labels and a
    fixed-sample method that sees each cluster's concordant pairs only through their number
    (``studies.exact.probes``, probe 'concordant')."""
    from studies.exact.probes import probe

    if method.kind != "fixed" or any(n != LabelNoise() for n in design.label_noise):
        return False
    return probe("concordant", method, alpha, [design.trials] * min(design.clusters, 64))


def certification_engine(method, design: CertifiedDesign, alpha: float) -> tuple[str | None, str]:
    """The exact certification engine that applies at ``design`` (None: none does) and why."""
    from studies.exact.applicability import design_blocker
    from studies.exact.discordant import discordant_probe

    blocker = design_blocker(method.kind, design.looks, all(n == LabelNoise() for n in design.label_noise),
                             design.clusters, design.trials)
    if blocker is not None:
        return None, blocker
    if not discordant_probe(method, design.clusters, design.trials, design.margin, alpha):
        return None, "the method uses more than the pooled discordant counts"
    if design.trials > 1 and design.rho_max > 0:
        return "exact-convolution", ("clusters of one size with Dirichlet-multinomial pairs; the method sees only "
                                     "the pooled discordant counts")
    return "exact-discordant", "independent pairs; the method sees only the pooled discordant counts"


def _null_discordances(method, design: CertifiedDesign) -> tuple[float, float, float]:
    """``(baseline, q_lo, q_hi)``: the baseline with the widest null-boundary discordance range and
    that range (the law of the discordant counts does not depend on the baseline)."""
    m, est = design.margin, method.estimand.value
    b = best_baseline(m, design.baseline, est)
    lim = null_discordance_range(est, b, m, *design.discordance)
    q_lo, q_hi = lim if lim is not None else (1.0, 0.0)
    if q_hi < q_lo:
        raise ValueError(f"no discordance in [{design.discordance[0]:g}, {design.discordance[1]:g}] is feasible at "
                         f"the null boundary -{m:g} for a baseline in [{design.baseline[0]:g}, {design.baseline[1]:g}]")
    return b, q_lo, q_hi


def _convolution_points(method, design: CertifiedDesign, alpha: float,
                        threshold: float) -> tuple[list[CertPoint], str]:
    from studies.exact.convolution import GRID_DISCORDANCES, GRID_RHOS, LOCAL_POINTS, ConvolutionStates, dense_search

    b, q_lo, q_hi = _null_discordances(method, design)
    states = ConvolutionStates(method, design.clusters, design.trials, design.margin, alpha, probe=False)
    q, rho, r = dense_search(states, q_lo, q_hi, design.rho_max)
    pts = [CertPoint(rho=float(y), noise=0, baseline=b, discordance=float(x), rate=float(v), lower=float(v),
                     upper=float(v), verdict=QUALIFIED if v <= threshold else EXCEEDS) for x, y, v in zip(q, rho, r)]
    text = (f"exact-convolution: the method's kernel on all {states.states:,} states (L, W) of pooled losses and "
            f"wins of K = {design.clusters} clusters of M = {design.trials} pairs (representative tables; the method "
            f"sees only these counts, checked on its kernel). The law of (L, W) is the K-fold convolution of one "
            f"cluster's Dirichlet-multinomial (n10, n01) law, by FFT: exact up to float rounding, and the same for "
            f"every baseline (perfect labels; Dirichlet aggregation). Node values are exact. Grid: "
            f"{GRID_DISCORDANCES} discordances uniform in sqrt(q - margin) on [{q_lo:g}, {q_hi:g}] x {GRID_RHOS} "
            f"rho values on [0, {design.rho_max:g}], then {LOCAL_POINTS} points between the worst node's neighbours "
            f"in q (at its rho and at rho_max) and in rho; {len(pts)} nodes evaluated. The grid is dense but no bound between "
            f"nodes is proven: the statement is a dense exact grid.")
    return pts, text


def _exact_points(method, design: CertifiedDesign, alpha: float, threshold: float,
                  max_nodes: int) -> tuple[list[CertPoint], str]:
    from studies.exact.discordant import DiscordantStates, search

    m = design.margin
    b, q_lo, q_hi = _null_discordances(method, design)
    states = DiscordantStates(method, design.clusters, design.trials, m, alpha)
    q, r = search(states, q_lo, q_hi, threshold, max_nodes=max_nodes)
    pts = [CertPoint(rho=0.0, noise=0, baseline=b, discordance=float(x), rate=float(y), lower=float(y),
                     upper=float(y), verdict=QUALIFIED if y <= threshold else EXCEEDS) for x, y in zip(q, r)]
    why = ("one trial per cluster, so rho has no effect" if design.trials == 1 else "rho_max = 0")
    text = (f"exact-discordant: the method's kernel on all {states.states:,} states (n10, n01) of N = "
            f"{states.N} independent pairs ({why}; perfect labels, so the law of (n10, n01) does not depend on "
            f"the baseline). Discordance searched on [{q_lo:g}, {q_hi:g}] by branch and bound: 64 nodes uniform "
            f"in sqrt(q - margin), intervals bisected until each carries a proven upper bound (Bhattacharyya angle, "
            f"methods.qualification.certificate) at or below the threshold, a node exceeds it, or {max_nodes} nodes "
            f"are spent; {len(pts)} nodes evaluated. proven_upper bounds the rate over the whole range.")
    return pts, text


def sim_policy(design: CertifiedDesign, alpha: float, allowed_excess: float, mc_confidence: float,
               min_replications: int, max_replications: int, seed: int, baseline_free: bool = False,
               estimand: str = "trial_weighted") -> QualificationPolicy:
    """The qualifier's policy for a one-cell domain at exactly ``design``; ``baseline_free``: one
    baseline (the one with the widest feasible discordance) stands for all."""
    m = design.margin
    rhos = (0.0,) if design.trials == 1 or design.rho_max == 0 else \
        tuple(float(x) for x in np.round(np.linspace(0.0, design.rho_max, SIM_RHO_VALUES), 12))
    b_lo, b_hi = design.baseline
    if baseline_free:
        bs = (best_baseline(m, design.baseline, estimand),)
    elif b_hi == b_lo:
        bs = (b_lo,)
    else:
        bs = tuple(float(x) for x in np.round(np.linspace(b_lo, b_hi, SIM_BASELINE_VALUES), 12))
    q_lo, q_hi = design.discordance
    start = max(q_lo, m)
    u = np.linspace(0.0, np.sqrt(max(q_hi - start, 0.0)), SIM_DISCORDANCE_VALUES)
    qs = tuple(sorted({round(q_lo, 12)} | {round(float(start + x * x), 12) for x in u if start + x * x <= q_hi}))
    dom = QualificationDomain(
        clusters=IntAxis(lo=design.clusters, hi=design.clusters, grid=(design.clusters,)),
        cluster_sizes=(FixedSize(trials=design.trials),),
        rho=Axis(lo=rhos[0], hi=rhos[-1], grid=rhos),
        margin=Axis(lo=m, hi=m, grid=(m,)),
        baseline=Axis(lo=bs[0], hi=bs[-1], grid=bs),
        discordance=Axis(lo=qs[0], hi=qs[-1], grid=qs),
        label_noise=design.label_noise, looks=design.looks)
    return QualificationPolicy(alpha=alpha, allowed_excess=allowed_excess, mc_confidence=mc_confidence,
                               min_replications=min_replications, max_replications=max_replications,
                               refine_evaluations=3, refine_fraction=0.5, seed=seed, domain=dom)


def _sim_points(method, design: CertifiedDesign, policy: QualificationPolicy, n_jobs: int,
                progress: Callable[[str], None] | None, executor=None,
                deadline: float | None = None) -> tuple[list[CertPoint], str]:
    from studies.qualify.run import qualify

    run = qualify([method], policy, n_jobs=n_jobs, out_dir=None, progress=progress, one_verdict=True,
                  executor=executor, deadline=deadline)
    s = run.outcomes[0].record.scenarios
    pts = [CertPoint(rho=s.rho[i], noise=s.noise[i], baseline=s.baseline[i], discordance=s.discordance[i],
                     rate=s.n_pass[i] / s.n_reps[i], n_reps=s.n_reps[i], n_pass=s.n_pass[i], lower=s.lower[i],
                     upper=s.upper[i], verdict=s.verdict[i]) for i in range(len(s))]
    dom = policy.domain
    sched = policy.replication_schedule()
    text = (f"simulation: rho {list(dom.rho.grid)}, baseline {list(dom.baseline.grid)}, discordance "
            f"{list(dom.discordance.grid)} (clipped to the feasible range at each baseline), "
            f"{len(dom.label_noise)} label-noise model(s); then {policy.refine_evaluations} golden-section steps per "
            f"axis around the worst point; {len(pts)} scenarios, seed {policy.seed}; the search stops at the first "
            f"scenario that exceeds the threshold (the verdict is then settled). Replications {sched} while "
            f"undetermined, each stage's one-sided Clopper-Pearson bound at {policy.stage_confidence:.5g} "
            f"(Bonferroni over {len(sched)} stages: acceptance valid at {policy.mc_confidence:g} whatever the "
            f"stopping). A grid search: no bound between the evaluated points.")
    return pts, text


def certify(method, clusters: int, trials: int, margin: float, rho_max: float = 0.0, looks: int | None = None, *,
            label_noise: tuple[LabelNoise, ...] = (LabelNoise(),), baseline: tuple[float, float] = (0.5, 1.0),
            discordance: tuple[float, float] = (0.01, 0.5), alpha: float = 0.025, allowed_excess: float = 1.1,
            mc_confidence: float = 0.95, min_replications: int = 2000, max_replications: int = 128_000,
            seed: int = 20261129, validity_days: int = 365, engine: str = "auto", max_nodes: int = 4096,
            n_jobs: int = 1, sign_key=None, progress: Callable[[str], None] | None = None,
            executor=None, baseline_free: bool | None = None, deadline: float | None = None) -> Certificate:
    """Certify ``method`` (a registered name or method object) at exactly this design; see
    the module docstring.  ``engine``: 'auto', 'exact' (refuse when it does not apply) or
    'simulation'.  ``sign_key``: an Ed25519 private key (``simlab.signing``) to sign with.
    ``n_jobs`` local processes or ``executor`` (``studies.engine.executor``, e.g. dask) for the
    simulation engine: the certificate is the same for every backend.  ``baseline_free``:
    search one baseline for all (None: when the method passes the ``concordant`` probe and the
    labels are perfect -- then the law of what it sees does not depend on the baseline).
    ``deadline`` (``time.monotonic()``): the simulation engine stops there with
    :class:`~studies.qualify.escalation.DeadlineReached` (``qualify``)."""
    from studies.qualify.run import software_info

    t0 = time.perf_counter()
    method = _resolve(method)
    design = CertifiedDesign(clusters=clusters, trials=trials, margin=margin, rho_max=rho_max, looks=looks,
                             label_noise=tuple(label_noise), baseline=tuple(baseline),
                             discordance=tuple(discordance))
    kind = method.kind
    if kind == "sequential" and looks is None:
        raise ValueError(f"method {method.name!r} is sequential: give --looks")
    if kind == "fixed" and looks is not None:
        raise ValueError(f"method {method.name!r} is fixed-sample: it takes no looks")
    if engine not in ("auto", "exact", "simulation"):
        raise ValueError(f"engine must be auto, exact or simulation, got {engine!r}")
    threshold = allowed_excess * alpha
    if baseline_free is None:
        baseline_free = is_baseline_free(method, design, alpha)
    policy = sim_policy(design, alpha, allowed_excess, mc_confidence, min_replications, max_replications, seed,
                        baseline_free=baseline_free, estimand=method.estimand.value)
    exact, why = (None, "simulation requested") if engine == "simulation" else certification_engine(method, design, alpha)
    if engine == "exact" and exact is None:
        raise ValueError(exact_refusal(method.name, why))
    if progress:
        progress(f"certify {method.name} at K={clusters}, M={trials}, margin={margin:g}: "
                 f"{exact or 'simulation'} ({why})")
    if exact == "exact-discordant":
        pts, text = _exact_points(method, design, alpha, threshold, max_nodes)
        eng, sched = exact, ()
    elif exact == "exact-convolution":
        pts, text = _convolution_points(method, design, alpha, threshold)
        eng, sched = exact, ()
    else:
        pts, text = _sim_points(method, design, policy, n_jobs, progress, executor, deadline)
        if baseline_free:
            text += (f" The baseline is searched at {policy.domain.baseline.grid[0]:g} only: the method passes the "
                     "'concordant' probe (its result depends on each cluster's n11 and n00 only through their sum), "
                     "and with perfect labels a Dirichlet-multinomial cluster's (n10, n01, n11 + n00) has a law that "
                     "does not depend on the baseline (aggregation property of the Dirichlet).")
        eng, sched = "simulation", tuple(policy.replication_schedule())
    estimand = method.estimand.value
    worst = max(range(len(pts)), key=lambda i: (pts[i].upper, pts[i].rate, -i))
    created = utcnow()
    import datetime as _dt
    cert = Certificate(
        method=method_ref(method, estimand), design=design, alpha=alpha, allowed_excess=allowed_excess,
        threshold=threshold, confidence=1.0 - 2.0 * alpha, engine=eng, search=text, mc_confidence=mc_confidence,
        mc_rule=MC_RULE, replications=sched, points=tuple(pts), worst=worst,
        proven_upper=proven_upper(pts, design, estimand) if eng == "exact-discordant" else None,
        verdict=QUALIFIED, validity_days=validity_days, created=format_time(created),
        valid_until=format_time(created + _dt.timedelta(days=validity_days)),
        software={**software_info(), "certify_seconds": f"{time.perf_counter() - t0:.2f}"})
    cert = cert.model_copy(update={"verdict": certificate_verdict(cert)}).sealed()
    return cert.signed(sign_key) if sign_key is not None else cert


def write_certificate(cert: Certificate, out_dir: str | Path) -> Path:
    """Write ``cert`` as ``<method>.K<K>.M<M>.m<margin>.<hash>.cert.json`` (atomic)."""
    from studies.datasets import save_json

    return save_json(cert.to_json(), Path(out_dir) / cert.file_name())


def certificate_payload(cert: Certificate, path: Path | None = None) -> dict[str, Any]:
    """JSON-friendly summary (for the CLI)."""
    w = cert.worst_point
    return {"method": cert.method.name, "design": cert.design.model_dump(mode="json"), "engine": cert.engine,
            "guarantee": cert.guarantee, "assumptions": cert.assumptions,
            "verdict": cert.verdict, "threshold": cert.threshold, "worst": w.model_dump(),
            "proven_upper": cert.proven_upper, "points": len(cert.points), "search": cert.search,
            "certificate_sha256": cert.certificate_sha256, "signed_by": cert.signature.key_id if cert.signature else None,
            "created": cert.created, "valid_until": cert.valid_until, "file": str(path) if path else None,
            "seconds": float(cert.software.get("certify_seconds", "nan"))}
