"""Re-stamp records and certificates after a change that moves code but not what it computes.

A method's identity covers the code its decisions run through (``methods.identity``), so a
refactor of that code -- a shared helper extracted, a protocol method reworded -- makes its
records stale even when every decision is the same.  Re-running a qualification costs what
it cost (hours for the slow methods); re-stamping checks the claim instead:

1. the record is verified as usual (content and policy hash, dataset, bounds and verdicts
   from the counts), all but the method identity;
2. a random sample of its scenarios (``sample``, drawn with a seed derived from the record's
   own hash, so the choice is reproducible and not the caller's) is re-simulated with the
   current code, each over exactly the record's replication range;
3. only if every sampled scenario's pass and inconclusive counts equal the record's, bit for
   bit, is the record rewritten with the current identity, its original ``created`` and
   ``valid_until`` (a re-stamp never extends validity), the one hash form (schema 3), its
   dataset rewritten beside it, and ``software["identity_migration"]`` naming the old and
   new identities, the scenarios checked and their replications.  A record signed before
   loses its signature (it must be signed again: the bytes changed).

This is evidence, not proof, that the new code computes what the old did on the scenarios
not re-simulated; the record says so.  Bitwise equality is meaningful because every table is
a pure function of (seed, scenario, replication) on every machine (``simlab.sampling``).
"""
from __future__ import annotations

import hashlib
import json
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

import numpy as np

from methods.qualification import (QualificationRecord, RecordError, ScenarioPoint, load_record, record_paths,
                                   same_digest)

DEFAULT_SAMPLE = 24


@dataclass
class Restamp:
    record: str
    method: str
    status: str              # "current", "restamped", "mismatch"
    checked: int = 0
    replications: int = 0
    detail: str = ""

    def as_dict(self) -> dict:
        return dict(self.__dict__)


def _sample(record: QualificationRecord, k: int) -> list[int]:
    seed = int(hashlib.sha256(record.record_sha256.encode()).hexdigest()[:16], 16)
    n = len(record.scenarios)
    return sorted(np.random.default_rng(seed).choice(n, size=min(k, n), replace=False).tolist())


def restamp_record(path: str | Path, *, sample: int = DEFAULT_SAMPLE, dry_run: bool = False,
                   progress: Callable[[str], None] | None = None) -> Restamp:
    """Check and re-stamp one record (see the module docstring)."""
    from studies.qualify.run import software_info, write_record
    from studies.qualify.scenarios import Task, method_key
    from studies.qualify.tasks import run_task

    path = Path(path)
    record = load_record(path, check_current=False)
    method = record.method.resolve()
    ident = method.identity
    label = record.method.name
    if same_digest(ident.source_sha256, record.method.source_sha256) and record.schema_version == "3":
        return Restamp(path.name, label, "current")
    if ident.version != record.method.version:
        return Restamp(path.name, label, "mismatch", detail=f"version changed ({record.method.version} -> "
                                                                f"{ident.version}): qualify again")
    s = record.scenarios
    key = method_key(method)
    picked = _sample(record, sample)
    reps = 0
    for j, i in enumerate(picked):
        spec_args = (s.clusters[i], s.size[i], s.rho[i], s.margin[i], s.noise[i], s.baseline[i], s.discordance[i],
                     s.stage[i])
        got = run_task(record.policy, Task(ScenarioPoint(*spec_args), (key,), 0, s.n_reps[i]),
                       (record.method.estimand,))[key]
        reps += s.n_reps[i]
        if progress:
            progress(f"{label}: scenario {i} ({j + 1}/{len(picked)}, {s.n_reps[i]} replications): {got}")
        if tuple(got) != (s.n_pass[i], s.n_inconclusive[i]):
            return Restamp(path.name, label, "mismatch", j + 1, reps,
                           f"scenario {i} (K={s.clusters[i]}, rho={s.rho[i]:g}, margin={s.margin[i]:g}, baseline="
                           f"{s.baseline[i]:g}, discordance={s.discordance[i]:g}): the record counts "
                           f"{s.n_pass[i]} passes and {s.n_inconclusive[i]} inconclusive in {s.n_reps[i]}, the "
                           f"current code {got[0]} and {got[1]}: qualify again")
    if dry_run:
        return Restamp(path.name, label, "restampable", len(picked), reps)
    software = dict(record.software)
    software.update(software_info())
    software["identity_migration"] = json.dumps({
        "from": record.method.source_sha256, "to": ident.source_sha256, "schema_from": record.schema_version,
        "checked_scenarios": picked, "checked_replications": reps,
        "rule": "each checked scenario re-simulated over its full replication range with the current code; pass "
                "and inconclusive counts bitwise equal to the record's (studies.qualify.restamp)"}, sort_keys=True)
    from simlab.clock import parse_time
    write_record(method, key, record.method.estimand, record.policy, s, software, path.parent,
                 created=parse_time(record.created))
    return Restamp(path.name, label, "restamped", len(picked), reps)


_SAME_FIELDS = ("design", "engine", "search", "replications", "points", "worst", "proven_upper", "verdict", "threshold")


_SEED = re.compile(r" scenarios, seed (\d+);")
_STREAM_SEED = re.compile(r"(Certification stream|Stream) seed (\d+)")


def stored_seed(cert) -> int | None:
    """The simulation stream seed a certificate's search text names (``certify``'s
    "N scenarios, seed S;"), or None (an exact certificate, or no seed stated)."""
    if cert.engine != "simulation":
        return None
    m = _SEED.search(cert.search)
    return int(m.group(1)) if m else None


def _with_stored_domain(new, old, seed: int | None):
    """``new`` (certified again over ``old``'s label-noise nodes) with ``old``'s label-noise
    domain recorded as ``certify_judge`` records it, and whether ``old``'s search says the
    same: ``(certificate, same, rerendered)``.

    ``old.search`` must be ``new.search`` (the current code's text for those points, bitwise)
    followed by a label-noise note whose closing sentence names the streams' seeds, the
    certificate's stream seed being ``seed``.  The note is written again as the current code
    writes it: the domain's description, rendered from the stored domain (which the design
    comparison checks; its wording may have changed since -- ``rerendered``), then that
    closing sentence, carried verbatim (the level search it names is not run again)."""
    from studies.qualify.certify_judge import label_noise_note, with_label_noise_domain

    domain = old.design.label_noise_domain
    described = label_noise_note(domain, old.design)
    head = new.search + " "
    tail = old.search[len(head):] if old.search.startswith(head) else ""
    named = _STREAM_SEED.search(tail)
    same = bool(tail.startswith("Label noise: ") and named and seed is not None and int(named.group(2)) == seed)
    closing = tail[named.start():] if same else ""
    cert = with_label_noise_domain(new, domain, f"{described} {closing}".rstrip(), None)
    return cert, same, same and tail != f"{described} {closing}"


def restamp_certificate(path: str | Path, *, dry_run: bool = False,
                        progress: Callable[[str], None] | None = None) -> Restamp:
    """Check and re-stamp one certificate.  A certificate is small (seconds to certify), so
    nothing is sampled: it is certified again with the current code on exactly its own
    arguments (method and options, design, alpha, allowed excess, MC confidence, replication
    schedule, validity; the engine kind; the default seed, which every ``simlab certify`` and
    ``simlab calibrate`` certificate is made with, or the seed its search names: a judge
    certificate's stream seed is derived from the design and the method identity at the time,
    so it is read back, not derived again), and re-stamped only if the design, engine, search,
    schedule, every point (rates, counts, bounds, verdicts), the worst point, the proven
    bound and the verdict are bitwise the ones stored.

    A certificate over a judge's label noise (``design.label_noise_domain``,
    ``studies.qualify.certify_judge``) is certified again over exactly its stored nodes and
    stream seed, and its domain recorded again as ``certify_judge`` records it.  Its search
    text must be the current code's text for those points, bitwise, followed by a label-noise
    note; the note is written again as the current code writes it (the domain's description
    rendered from the stored domain, which the design comparison checks -- its wording has
    changed since the shipped certificate was made, and the migration says so when it differs),
    and only the note's closing sentence on the streams' seeds is carried over verbatim (the
    level search whose seed it names is the provenance of a calibrated level and is not run
    again); the stream seed that sentence names must be the one used.

    The re-stamped certificate keeps the original ``created`` and ``valid_until`` and names
    the migration in ``software["identity_migration"]``; the old file (named by its old hash)
    is removed."""
    from methods.qualification import load_certificate
    from studies.qualify.certify import certify, write_certificate
    from studies.qualify.run import software_info

    path = Path(path)
    old = load_certificate(path, check_current=False)
    method = old.method.resolve()
    ident = method.identity
    label = old.method.name
    if same_digest(ident.source_sha256, old.method.source_sha256):
        return Restamp(path.name, label, "current")
    if ident.version != old.method.version:
        return Restamp(path.name, label, "mismatch", detail=f"version changed ({old.method.version} -> "
                                                            f"{ident.version}): certify again")
    d = old.design
    # a simulation certificate's staged schedule; an exact one has none (certify's defaults then)
    sched = {"min_replications": old.replications[0], "max_replications": old.replications[-1]} \
        if old.replications else {}
    seed = stored_seed(old)
    if seed is not None:
        sched["seed"] = seed
    if progress:
        progress(f"{label}: certifying again at K={d.clusters}, M={d.trials} ({old.engine}"
                 f"{'' if seed is None else f', seed {seed}'})")
    new = certify(method, d.clusters, d.trials, d.margin, d.rho_max, d.looks, label_noise=tuple(d.label_noise),
                  baseline=tuple(d.baseline), discordance=tuple(d.discordance), alpha=old.alpha,
                  allowed_excess=old.allowed_excess, mc_confidence=old.mc_confidence, **sched,
                  validity_days=old.validity_days,
                  engine="simulation" if old.engine == "simulation" else "exact")
    rerendered = False
    if d.label_noise_domain is not None:
        new, same_search, rerendered = _with_stored_domain(new, old, seed)
        differ = [f for f in _SAME_FIELDS if f != "search" and getattr(new, f) != getattr(old, f)]
        differ += [] if same_search else ["search"]
    else:
        differ = [f for f in _SAME_FIELDS if getattr(new, f) != getattr(old, f)]
    if differ:
        return Restamp(path.name, label, "mismatch", len(new.points), detail=f"certified again with the current "
                       f"code, the certificate differs in {', '.join(differ)}: certify again")
    reps = sum(pt.n_reps for pt in new.points)
    if dry_run:
        return Restamp(path.name, label, "restampable", len(new.points), reps)
    software = {**old.software, **software_info(), "certify_seconds": new.software.get("certify_seconds", "")}
    software["identity_migration"] = json.dumps({
        "from": old.method.source_sha256, "to": new.method.source_sha256, "checked_points": len(new.points),
        **({} if seed is None else {"seed": seed}),
        **({"search_note": "the label-noise domain's description rendered again from the stored domain by the "
                           "current code (its wording had changed); the rest of the search text bitwise equal"}
           if rerendered else {}),
        "rule": "certified again with the current code on the certificate's own arguments; every point, the worst "
                "point, the proven bound and the verdict bitwise equal to the certificate's (studies.qualify.restamp)"},
        sort_keys=True)
    stamped = new.model_copy(update={"created": old.created, "valid_until": old.valid_until,
                                     "software": software}).sealed()
    written = write_certificate(stamped, path.parent)
    if written.resolve() != path.resolve():
        path.unlink()
    return Restamp(written.name, label, "restamped", len(new.points), reps)


PILOT_REPS = (2, 66)   # a record's pilot: replications 0-1 load the kernel, 2-65 are timed


def _pairs(record: QualificationRecord, i: int) -> float:
    s = record.scenarios
    return s.clusters[i] * record.policy.domain.cluster_sizes[s.size[i]].mean()


def record_seconds(path: str | Path, sample: int = DEFAULT_SAMPLE) -> float:
    """Estimated seconds of :func:`restamp_record` (0 for a current record or one whose version
    changed): its sampled scenarios' replications priced by a timed pilot of the costliest of
    them (per trial pair and replication)."""
    import time

    from studies.qualify.scenarios import Task, method_key
    from studies.qualify.tasks import run_task

    record = load_record(path, check_current=False)
    method = record.method.resolve()
    ident = method.identity
    if (same_digest(ident.source_sha256, record.method.source_sha256) and record.schema_version == "3") or \
            ident.version != record.method.version:
        return 0.0
    s = record.scenarios
    picked = _sample(record, sample)
    i = max(picked, key=lambda j: _pairs(record, j))
    point = ScenarioPoint(s.clusters[i], s.size[i], s.rho[i], s.margin[i], s.noise[i], s.baseline[i],
                          s.discordance[i], s.stage[i])
    warm, timed = PILOT_REPS
    run_task(record.policy, Task(point, (method_key(method),), 0, warm), (record.method.estimand,))
    t0 = time.perf_counter()
    run_task(record.policy, Task(point, (method_key(method),), warm, timed), (record.method.estimand,))
    per_pair_rep = (time.perf_counter() - t0) / ((timed - warm) * _pairs(record, i))
    return per_pair_rep * sum(s.n_reps[j] * _pairs(record, j) for j in picked)


def certificate_seconds(path: str | Path) -> float:
    """Estimated seconds of :func:`restamp_certificate` (0 for a current one or one whose version
    changed): the certification estimate of its own arguments (the high end)."""
    from methods.qualification import load_certificate
    from studies.qualify.estimate import certify_estimate

    old = load_certificate(path, check_current=False)
    method = old.method.resolve()
    ident = method.identity
    if same_digest(ident.source_sha256, old.method.source_sha256) or ident.version != old.method.version:
        return 0.0
    d = old.design
    sched = {"min_replications": old.replications[0], "max_replications": old.replications[-1]} \
        if old.replications else {}
    return certify_estimate(method, d.clusters, d.trials, d.margin, d.rho_max, d.looks, baseline=tuple(d.baseline),
                            discordance=tuple(d.discordance), alpha=old.alpha, allowed_excess=old.allowed_excess,
                            mc_confidence=old.mc_confidence,
                            engine="simulation" if old.engine == "simulation" else "exact", **sched).high


def _selected(directory, only: set[str] | None) -> list[tuple[Path, str, bool]]:
    """``(path, method name, is a certificate)`` of the files a restamp looks at, in its order."""
    from methods.qualification import certificate_paths

    out = []
    for cert, paths in ((False, record_paths(None, directory)), (True, certificate_paths(None, directory))):
        for p in paths:
            m = json.loads(p.read_text()).get("method") or {}
            if only and m.get("name") not in only and m.get("registered_name") not in only:
                continue
            out.append((p, m.get("name") or "?", cert))
    return out


def restamp(directory: str | Path | None = None, *, only: set[str] | None = None, sample: int = DEFAULT_SAMPLE,
            dry_run: bool = False, progress: Callable[[str], None] | None = None,
            before: Callable[[float, int], None] | None = None) -> list[Restamp]:
    """:func:`restamp_record` for every record in ``directory`` (optionally only ``only``
    method names), then :func:`restamp_certificate` for every certificate; a file that cannot
    be read is reported, not skipped.  ``before(seconds, files)``: told the estimated time of
    the work and the number of files that need it before any is done (it may raise to stop)."""
    files = _selected(directory, only)
    if before is not None:
        total, stale = 0.0, 0
        for p, _, cert in files:
            try:
                t = certificate_seconds(p) if cert else record_seconds(p, sample)
            except RecordError:    # reported below as unusable
                continue
            total, stale = total + t, stale + (t > 0.0)
        before(total, stale)
    out = []
    for p, name, cert in files:
        try:
            out.append(restamp_certificate(p, dry_run=dry_run, progress=progress) if cert else
                       restamp_record(p, sample=sample, dry_run=dry_run, progress=progress))
        except RecordError as exc:
            out.append(Restamp(p.name, name, "unusable", detail=str(exc)))
    return out


__all__ = ["DEFAULT_SAMPLE", "Restamp", "certificate_seconds", "record_seconds", "restamp", "restamp_certificate",
           "restamp_record", "stored_seed"]
