"""Coverage: may a method's decision at this design point be trusted?

A grid record covers a design point only *on* its grid (``build.COVERAGE_RULE``): the
false-pass rate is not monotone between grid points (discreteness), so nothing is
interpolated.  Any other design needs a certificate (``certificate``), the method
evaluated at exactly that design.  ``find_coverage`` consults every record and certificate
of the method and answers conservatively: one source that holds the point and finds it not
qualified outweighs any that qualifies it.
"""
from __future__ import annotations

import datetime as _dt
import math
from pathlib import Path
from typing import Iterable, Mapping

from simlab.scenario import FixedSize

from .build import size_label
from .design import Coverage, DesignPoint
from .record import QualificationRecord
from .records import records_dir
from .verdicts import QUALIFIED

_TOL = 1e-12
JUDGE_NOT_ON_GRID = ("judge-labelled outcomes: a grid record's label-noise models are exact judge errors, but a "
                     "registered judge's errors are estimated from its calibration set; a certificate with a "
                     "label-noise domain covering that calibration is needed (simlab certify --sensitivity ...)")


def _on_grid(grid, x: float) -> float | None:
    for g in grid:
        if abs(g - x) <= _TOL * max(1.0, abs(x)):
            return g
    return None


def covers(record: QualificationRecord, point: DesignPoint | dict, *, now: _dt.datetime | None = None) -> Coverage:
    """Does grid ``record`` qualify its method at ``point``?  (``build.COVERAGE_RULE``.)

    The record must already be verified (``load_record``).  An expired record, or one made
    under unadjusted Monte Carlo bounds (schema 1), covers nothing.  A ``Coverage`` with
    ``cells`` set means the point lies on the grid (the record has an opinion)."""
    if isinstance(point, dict):
        point = DesignPoint.model_validate(point)
    if record.is_expired(now):
        return Coverage(False, f"record expired at {record.valid_until}")
    if record.mc_rule == "unadjusted":
        return Coverage(False, "record was made under unadjusted Monte Carlo bounds (schema 1): its acceptances are "
                               "not valid level-5% statements; regenerate it (simlab records regenerate)")
    pol, dom = record.policy, record.policy.domain
    if point.confidence is not None and not math.isclose(point.confidence, pol.confidence):
        return Coverage(False, f"confidence {point.confidence} differs from the qualified {pol.confidence:g}")
    if point.looks != dom.looks:
        return Coverage(False, f"look schedule differs: design has {point.looks or 'no'} interim looks, the record "
                               f"qualified {dom.looks or 'none (fixed sample)'}")
    for name, axis, x in (("baseline", dom.baseline, point.baseline), ("discordance", dom.discordance,
                                                                        point.discordance)):
        if x is not None and not axis.contains(x):
            return Coverage(False, f"{name}={x:g} lies outside the qualified domain [{axis.lo:g}, {axis.hi:g}]")
    if point.calibration is not None:
        return Coverage(False, JUDGE_NOT_ON_GRID)
    if point.label_noise not in dom.label_noise:
        return Coverage(False, "label-noise model is not in the qualified domain")
    noise = dom.label_noise.index(point.label_noise)
    if point.cluster_size not in dom.cluster_sizes:
        return Coverage(False, f"cluster size {size_label(point.cluster_size)} is not on the record's grid "
                               "(off-grid designs need a certificate: simlab certify)")
    size = dom.cluster_sizes.index(point.cluster_size)
    k = _on_grid(dom.clusters.grid, point.clusters)
    m = _on_grid(dom.margin.grid, point.margin)
    for name, v, x, grid in (("clusters", k, point.clusters, dom.clusters.grid), ("margin", m, point.margin,
                                                                                  dom.margin.grid)):
        if v is None:
            return Coverage(False, f"{name}={x:g} is not on the record's grid {list(grid)}: grid records cover grid "
                                   "points only (off-grid designs need a certificate: simlab certify)")
    if point.rho_irrelevant:
        rhos = dom.rho.grid   # same law at every rho: all must agree, conservatively
    elif point.rho is not None and _on_grid(dom.rho.grid, point.rho) is not None:
        rhos = (_on_grid(dom.rho.grid, point.rho),)
    else:
        what = "unknown" if point.rho is None else f"{point.rho:g}, not on the grid {list(dom.rho.grid)}"
        return Coverage(False, f"rho is {what}: a grid record covers rho grid values only (certify the design "
                               "up to its rho_max: simlab certify)")
    cmap = record.cell_map()
    needed = [(k, size, r, m, noise) for r in rhos]
    bad = [c for c in needed if cmap[c].verdict != QUALIFIED]
    if bad:
        c = cmap[bad[0]]
        return Coverage(False, f"cell K={c.clusters}, {size_label(dom.cluster_sizes[c.size])}, rho={c.rho:g}, "
                               f"margin={c.margin:g}: {c.verdict} (false-pass upper bound {c.upper:.4g} vs "
                               f"{pol.threshold:.4g})", tuple(needed))
    return Coverage(True, f"grid cell{'s' if len(needed) > 1 else ''} qualified", tuple(needed))


def find_coverage(name: str, point: DesignPoint | dict, directory: str | Path | None = None,
                  now: _dt.datetime | None = None, *, certificates: Iterable[str | Path] = (),
                  trusted_keys: Mapping | None = None) -> Coverage:
    """Look through every record, theorem record and certificate of method ``name`` (its identity name, e.g.
    ``repeated_fixed[binomial_loss]`` for wrappers): those in the records directory
    (``records.records_dir(directory)``) and the ``certificates`` files given.  Covered when
    one covers ``point`` and none that holds ``point`` finds it unqualified (records that
    disagree give the conservative answer, so a decision can never pick the favourable one).
    A tampered, untrusted (when ``trusted_keys`` is given) or stale file is an error, never
    silently skipped."""
    from .certificate import certificate_covers, certificate_paths, load_certificate
    from .records import record_paths
    from .theorem import load_theorem_record, theorem_covers, theorem_paths
    from .verify import load_record

    directory = records_dir(directory)
    if isinstance(point, dict):
        point = DesignPoint.model_validate(point)
    from .records import damaged_files_of
    from .verdicts import TamperedRecordError

    damaged = damaged_files_of(name, directory)
    if damaged:   # it said "no qualification record" of a record cut short
        raise TamperedRecordError(f"{', '.join(p.name for p in damaged)}: damaged (cut short, not JSON, or not a "
                                  "record, theorem record or certificate); restore or remove it")
    answers: list[tuple[Path, Coverage]] = []
    for p in record_paths(name, directory):
        answers.append((p, covers(load_record(p, trusted_keys=trusted_keys, now=now), point, now=now)))
    for p in theorem_paths(name, directory):
        answers.append((p, theorem_covers(load_theorem_record(p, trusted_keys=trusted_keys), point)))
    for p in list(certificate_paths(name, directory)) + [Path(c) for c in certificates]:
        cert = load_certificate(p, trusted_keys=trusted_keys, now=now)
        if cert.method.name == name:
            answers.append((p, certificate_covers(cert, point, now=now)))
    if not answers:
        return Coverage(False, f"no qualification record or certificate for {name!r} in {directory}")
    hits = [(p, c) for p, c in answers if c.covered]
    against = [(p, c) for p, c in answers if not c.covered and c.cells]  # holds the point, not qualified
    if hits and not against:
        p, c = hits[0]
        return Coverage(True, f"{p.name}: {c.reason}", c.cells, str(p))
    if hits:
        p, c = against[0]
        return Coverage(False, f"sources disagree: {hits[0][0].name} qualifies this design but {p.name} does not "
                               f"({c.reason}); the conservative answer is not covered", c.cells, str(p))
    return Coverage(False, "; ".join(f"{p.name}: {c.reason}" for p, c in answers))


