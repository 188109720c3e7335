"""Theorem records: a method whose false-pass guarantee is a theorem is covered at every
design its theorem's assumptions hold for, without simulation.

The betting and empirical-Bernstein intervals and the betting confidence sequence are
valid for *any* law of independent cluster differences in [-1, 1] with a common mean (their
papers' theorems; Ville's inequality), so no grid of simulations adds to what they
guarantee -- simulation records of them stay, as measurements of power and of how close
to the level they run.  A method declares its theorem (``DecisionMethod.theorem``: the
statement, its assumptions, the citation); a theorem record pins that declaration to the
method's identity, content-addressed (``record_sha256``) and optionally signed like any
record, so a manifest can pin it.  It covers a design point when:

* the method is current (its identity is the record's) -- a theorem is about this code;
* the labels are perfect: the theorem bounds the false-pass rate for the *recorded*
  outcomes' mean; judge errors change what is estimated, which no theorem about the
  recorded data can cover;
* a fixed-sample method is used without interim looks (a sequential one: at any looks);
* the confidence, if stated, is ``1 - 2 alpha`` of some alpha (every level is covered).

K, the cluster sizes, rho, the baseline and the discordance are free: the theorem makes no
assumption about them beyond independence of the clusters.
"""
from __future__ import annotations

import datetime as _dt
import json
from pathlib import Path
from typing import ClassVar, Literal, Mapping


from simlab.clock import format_time, utcnow
from simlab.hashing import content_hash
from simlab.models import FrozenModel
from simlab.scenario import LabelNoise
from simlab.signing import Signature

from .design import Coverage, DesignPoint
from .record import RecordedMethod, body_of, signed_payload
from .records import json_files, safe_name
from .verdicts import TamperedRecordError

THEOREM_SCHEMA_VERSION = "1"
THEOREM_SUFFIX = ".theorem.json"


class TheoremRecord(FrozenModel):
    schema_version: Literal["1"] = THEOREM_SCHEMA_VERSION
    kind: Literal["theorem"] = "theorem"
    method: RecordedMethod
    statement: str
    assumptions: tuple[str, ...]
    citation: str
    created: str
    software: dict[str, str] = {}
    theorem_sha256: str = ""
    signature: Signature | None = None

    guarantee: ClassVar[str] = "theorem"

    def body(self) -> dict:
        return body_of(self.model_dump(mode="json"))

    def sealed(self) -> "TheoremRecord":
        return self.model_copy(update={"theorem_sha256": content_hash(self.body())})

    def signed(self, key) -> "TheoremRecord":
        from simlab.signing import sign
        sealed = self if self.theorem_sha256 else self.sealed()
        return sealed.model_copy(update={"signature": sign(signed_payload(sealed.model_dump(mode="json")), key)})

    def file_name(self) -> str:
        return f"{safe_name(self.method.name)}{THEOREM_SUFFIX}"

    def to_json(self) -> str:
        return json.dumps(self.model_dump(mode="json"), separators=(",", ":")) + "\n"


def build_theorem_record(method, key: tuple, created: _dt.datetime | None = None,
                         software: dict[str, str] | None = None) -> TheoremRecord:
    """The sealed theorem record of ``method`` (which must declare a ``theorem``);
    ``key`` = (registry reference, options items, wrapped method reference or None)."""
    th = getattr(method, "theorem", None)
    if th is None:
        raise ValueError(f"method {method.name!r} declares no theorem: its guarantee must be measured "
                         "(simlab qualify / certify)")
    name, options, inner = key
    ref = RecordedMethod(kind=method.kind, estimand=method.estimand.value, registered_name=name,
                         options=dict(options), inner=inner, **method.identity.as_dict())
    rec = TheoremRecord(method=ref, statement=th.statement, assumptions=tuple(th.assumptions),
                        citation=th.citation, created=format_time(created or utcnow()), software=dict(software or {}))
    return rec.sealed()


def theorem_paths(name: str | None = None, directory: str | Path | None = None) -> list[Path]:
    """Theorem record files in the records directory (optionally only one method's), sorted."""
    return json_files(f"*{THEOREM_SUFFIX}", "theorem_sha256", name, directory)


def load_theorem_record(path: str | Path, *, check_current: bool = True,
                        trusted_keys: Mapping | None = None) -> TheoremRecord:
    """Read and verify a theorem record: content hash, signature when a trusted key set is
    given, the schema, that the method still declares this theorem and has this identity."""
    from .verify import check_method_current, read_verified

    path = Path(path)
    rec = read_verified(path, "theorem record", "theorem_sha256", TheoremRecord, trusted_keys)
    if check_current:
        label = f"theorem record for {rec.method.name!r}"
        check_method_current(rec.method, label)
        th = getattr(rec.method.resolve(), "theorem", None)
        if th is None or (th.statement, tuple(th.assumptions), th.citation) != (rec.statement, rec.assumptions,
                                                                                rec.citation):
            raise TamperedRecordError(f"{label}: the method no longer declares this theorem")
    return rec


def theorem_covers(record: TheoremRecord, point: DesignPoint | dict) -> Coverage:
    """Does the theorem cover ``point``?  (module docstring)."""
    if isinstance(point, dict):
        point = DesignPoint.model_validate(point)
    if point.label_noise != LabelNoise() or point.calibration is not None:
        return Coverage(False, "the theorem bounds the recorded outcomes' false-pass rate; with judge label noise "
                               "the recorded outcomes estimate something else (a measured or certified qualification "
                               "under the label-noise model is needed)")
    if record.method.kind == "fixed" and point.looks is not None:
        return Coverage(False, "a fixed-time theorem does not cover interim looks")
    if point.confidence is not None and not 0.5 <= point.confidence < 1.0:
        return Coverage(False, f"confidence {point.confidence} is not 1 - 2 alpha of a one-sided level")
    return Coverage(True, f"valid by theorem ({record.citation}): {record.statement}", (("theorem",),))


__all__ = ["THEOREM_SUFFIX", "TheoremRecord", "build_theorem_record", "load_theorem_record", "theorem_covers",
           "theorem_paths"]
