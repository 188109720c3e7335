"""Certificates for judge-labelled outcomes: a method certified at exactly one design with the
judge's label noise as part of the nuisance (issue 30, item 3).

``certify_label_noise`` runs ``studies.qualify.certify.certify`` (simulation engine) over the
nodes of a :class:`~methods.qualification.label_noise.LabelNoiseDomain` -- each arm's judge
sensitivity and specificity at the corners, edge midpoints and centre of the registered box
(``nodes="edges"``, the default; ``"corners"``: corners and centre only), a calibration set
of exactly ``calibration_items`` human-labelled items drawn with every replication
(``simlab.sampling.calibration``, a stream of its own beside the tables), so the estimated
sensitivity and specificity vary from replication to replication as they would between
experiments -- and records the domain and the nodes in the certificate's design.  The
certificate's worst case is the worst over those nodes (and the baseline / discordance
grid): a search, not a proof between its points, and its text says so.  The cost grows with
the nodes: 9 with one shared set (5 for ``corners``), 49 per arm (17).  The evidence path then
accepts the certificate for a judge-labelled experiment only when the registered
calibration lies inside that domain (``methods.qualification.label_noise``).

Valid despite any search.  Each scenario's acceptance is the staged Clopper-Pearson rule of
``methods.qualification.verdicts``, made on that scenario's own counter-based stream.  The
stream's seed is, unless given, derived from the certificate's whole design (method
identity, K, M, margin, rho_max, the nuisance ranges, the label-noise domain, alpha): the
same design always meets the same stream, so a verdict cannot be re-drawn by simply
certifying again, and no other study or search in this project uses these streams (the
judge study, the qualifier and ``certify`` use fixed seeds of their own), so a certificate is
never evaluated on replications that chose the design it certifies.

A judge-corrected method is certified with ``min_calibration`` as registered (default: the
calibration-set size): the option is part of its identity, and the evidence path runs the
method with the manifest's ``judge.min_calibration``.

``calibrate_label_noise`` is ``studies.qualify.calibrate.calibrate`` over the same models: the
largest nominal level whose worst case over the label-noise domain is at most alpha is
searched on a search stream (the certificate's seed + ``calibrate.SEARCH_OFFSET``), then the
calibrated method (``judge_corrected@alpha=L``; ``min_calibration`` from the judge block) is
certified once on the certificate's own stream, which the search never saw, with threshold
alpha itself.  Use it where the method at its nominal level exceeds alpha somewhere in the
domain (the delta-method interval of ``judge_corrected`` is not exact).
"""
from __future__ import annotations

from methods.judged import needs_calibration
from methods.qualification.certificate import Certificate, CertifiedDesign
from methods.qualification.label_noise import LabelNoiseDomain, NodeSet
from simlab.hashing import content_hash

from .certify import certify

SEED_TAG = "simlab-label-noise-certificate-v1"


def label_noise_seed(method, design: CertifiedDesign, alpha: float, route: str = "certify") -> int:
    """The certificate's stream seed: a pure function of what it certifies and of the route
    (``certify``, or ``calibrate``: its level search and certificate use other streams than a
    plain certificate of the base method)."""
    h = content_hash({"tag": SEED_TAG, "route": route, "method": method.identity.as_dict(), "alpha": alpha,
                      "design": design.model_dump(mode="json")})
    return int(h.split(":")[1][:13], 16)  # 52 bits: a seed canonical JSON holds exactly


def certify_label_noise(method, clusters: int, trials: int, margin: float, rho_max: float = 0.0, *,
                        sensitivity: tuple[float, float], specificity: tuple[float, float], calibration_items: int,
                        calibration_shared: bool = False, min_calibration: int | None = None,
                        nodes: NodeSet = "edges", alpha: float = 0.025, seed: int | None = None, sign_key=None,
                        **kw) -> Certificate:
    """Certify ``method`` at exactly this design over the label-noise domain's ``nodes``
    (module docstring); ``kw`` goes to ``certify`` (nuisance ranges, replications, backend,
    progress)."""
    if kw.get("engine", "simulation") != "simulation":
        raise ValueError("a label-noise domain is certified by simulation (no exact engine models judge error)")
    kw.pop("engine", None)
    domain = LabelNoiseDomain(sensitivity=tuple(sensitivity), specificity=tuple(specificity),
                              calibration_items=calibration_items, calibration_shared=calibration_shared)
    method = _prepared(method, domain, min_calibration)
    design = _design(domain, nodes, clusters, trials, margin, rho_max, kw)
    if seed is None:
        seed = label_noise_seed(method, design, alpha)
    cert = certify(method, clusters, trials, margin, rho_max, None, label_noise=design.label_noise, alpha=alpha,
                   engine="simulation", seed=seed, **kw)
    note = (f"{label_noise_note(domain, design)} Stream seed "
            f"{seed}{' (derived from the design)' if seed == label_noise_seed(method, design, alpha) else ''}.")
    return with_label_noise_domain(cert, domain, note, sign_key)


def certify_label_noise_estimate(method, clusters: int, trials: int, margin: float, rho_max: float = 0.0, *,
                                 sensitivity: tuple[float, float], specificity: tuple[float, float],
                                 calibration_items: int, calibration_shared: bool = False,
                                 min_calibration: int | None = None, nodes: NodeSet = "edges", alpha: float = 0.025,
                                 workers: int = 1, **kw):
    """``studies.qualify.estimate.certify_estimate`` of what :func:`certify_label_noise` runs with
    these arguments: the prepared method on every judge node of the domain (it had no estimate:
    ``--max-seconds 5`` ran 51 s)."""
    from studies.qualify.estimate import certify_estimate

    domain = LabelNoiseDomain(sensitivity=tuple(sensitivity), specificity=tuple(specificity),
                              calibration_items=calibration_items, calibration_shared=calibration_shared)
    method = _prepared(method, domain, min_calibration)
    design = _design(domain, nodes, clusters, trials, margin, rho_max, kw)
    stream = {k: kw[k] for k in ("allowed_excess", "max_replications", "seed", "mc_confidence", "min_replications")
              if k in kw}
    return certify_estimate(method, clusters, trials, margin, rho_max, None, baseline=design.baseline,
                            discordance=design.discordance, engine="simulation", alpha=alpha, workers=workers,
                            label_noise=design.label_noise, **stream)


def _design(domain: LabelNoiseDomain, nodes: NodeSet, clusters, trials, margin, rho_max, kw) -> CertifiedDesign:
    return CertifiedDesign(clusters=clusters, trials=trials, margin=margin, rho_max=rho_max,
                           label_noise=domain.models(nodes), label_noise_domain=domain,
                           **{k: tuple(kw[k]) for k in ("baseline", "discordance") if k in kw})


def label_noise_note(domain: LabelNoiseDomain, design: CertifiedDesign) -> str:
    """The certificate's words for its label-noise search: the domain and the nodes evaluated."""
    return (f"Label noise: {domain.describe()}; {domain.describe_nodes(design.label_noise)} (listed in "
            "design.label_noise).")


def with_label_noise_domain(cert: Certificate, domain: LabelNoiseDomain, note: str, sign_key) -> Certificate:
    """``cert`` with its label-noise domain recorded and described, re-validated and resealed."""
    cert = cert.model_copy(update={"design": cert.design.model_copy(update={"label_noise_domain": domain}),
                                   "search": f"{cert.search} {note}", "certificate_sha256": "", "signature": None})
    cert = Certificate.model_validate(cert.model_dump(mode="json")).sealed()  # re-validated with its domain
    return cert.signed(sign_key) if sign_key is not None else cert


def _prepared(method, domain: LabelNoiseDomain, min_calibration: int | None):
    if isinstance(method, str):
        from methods import registry
        method = registry.get(method)
    if needs_calibration(method):
        return method.with_options(min_calibration=float(min_calibration or domain.calibration_items))
    if min_calibration is not None:
        raise ValueError(f"min_calibration: method {method.name!r} does not read a calibration set")
    return method


def calibrate_label_noise(method, clusters: int, trials: int, margin: float, rho_max: float = 0.0, *,
                          sensitivity: tuple[float, float], specificity: tuple[float, float], calibration_items: int,
                          calibration_shared: bool = False, min_calibration: int | None = None,
                          nodes: NodeSet = "edges", alpha: float = 0.025, seed: int | None = None, sign_key=None,
                          **kw):
    """Calibrate ``method``'s nominal level over the label-noise domain and certify the
    calibrated method on a fresh stream (module docstring); returns the ``Calibration`` with
    the certificate that records the domain.  ``kw`` goes to ``calibrate``."""
    from dataclasses import replace

    from .calibrate import calibrate

    domain = LabelNoiseDomain(sensitivity=tuple(sensitivity), specificity=tuple(specificity),
                              calibration_items=calibration_items, calibration_shared=calibration_shared)
    base = _prepared(method, domain, min_calibration)
    design = _design(domain, nodes, clusters, trials, margin, rho_max, kw)
    derived = label_noise_seed(replace(base, nominal_alpha=None), design, alpha, route="calibrate")
    seed = derived if seed is None else seed
    cal = calibrate(base, clusters, trials, margin, rho_max, None, alpha=alpha, label_noise=design.label_noise,
                    seed=seed, **kw)
    note = (f"{label_noise_note(domain, design)} Certification stream seed {seed}"
            f"{' (derived from the design)' if seed == derived else ''}; the level search ran on seed "
            f"{cal.search.get('search_seed', seed)}.")
    return replace(cal, certificate=with_label_noise_domain(cal.certificate, domain, note, sign_key))


__all__ = ["SEED_TAG", "calibrate_label_noise", "certify_label_noise", "label_noise_note", "label_noise_seed",
           "with_label_noise_domain"]
