"""The experiment manifest: everything a decision depends on, pinned before measurement.

The estimand, method, margin, confidence, minimum independent clusters, look schedule,
nuisance bound ``rho_max``, population, the qualification record the decision will rely
on and the validity window are decision inputs, never post-run arguments (evidence-spine
chapter, "Manifest before measurement").  Its identity is the sha256 of its RFC 8785
canonical JSON; every trial record carries that hash.  Measured evidence needs a pinned
(40-hex git) code revision; non-finite numbers and unknown fields are refused.

Plan before data: ``created_at`` must precede every log and trial it governs;
``arms`` registers, per arm, the model, task and task arguments the logs must record, and
``dataset`` the dataset identity; ``population_hash`` is the identity of the case list
(``evidence.population``: case ids and clusters) that must be present, no more, no fewer.
``protected_slices`` registers slices (a metadata field and its values) that must each be
non-inferior too, under a multiplicity rule (Holm, or fixed-sequence gatekeeping).
``judge`` registers the judge and its calibration set when the outcomes are judge labels
(``evidence.judge``); ``holdout`` a sealed holdout and its maximum number of confirmatory accesses.  The
optional blocks are left out of the canonical JSON when absent, so a manifest that does
not use them keeps its identity."""
from __future__ import annotations

import datetime as dt
import json
import re
from pathlib import Path
from typing import Annotated, Literal

from pydantic import AwareDatetime, ConfigDict, Field, StringConstraints, ValidationError, model_validator

from simlab.models import FrozenModel

from simlab.hashing import SHA256_PATTERN, content_hash

from .jsonfiles import RefusedJSON, loads, utf8_text
from .judge import JudgeRegistration

Sha256 = Annotated[str, StringConstraints(pattern=SHA256_PATTERN)]
Name = Annotated[str, StringConstraints(min_length=1, max_length=200, strip_whitespace=False)]
UNPINNED = "working-tree-unpinned"
_REVISION = re.compile(r"^[0-9a-f]{40}$")
# the changes that invalidate a receipt, as the manifest registers them (``evidence init``'s template lists all)
INVALIDATION_RULES = ("model_or_prompt_change", "tool_or_evaluator_change", "dataset_or_policy_change")
InvalidationRule = Literal[INVALIDATION_RULES]


class SequentialPolicy(FrozenModel):
    """``fixed_sample`` (one analysis) or ``group_sequential`` with cumulative cluster looks."""
    model_config = ConfigDict(strict=True)
    kind: Literal["fixed_sample", "group_sequential"] = "fixed_sample"
    looks: tuple[int, ...] = ()

    @model_validator(mode="after")
    def _looks(self):
        if self.kind == "fixed_sample" and self.looks:
            raise ValueError("a fixed_sample policy has no interim looks")
        if self.kind == "group_sequential":
            if not self.looks or list(self.looks) != sorted(set(self.looks)) or self.looks[0] < 1:
                raise ValueError("group_sequential looks must be strictly increasing positive cluster counts")
        return self


Scalar = str | int | float | bool | None


class ArmIdentity(FrozenModel):
    """What one arm's logs must record: ``eval.model``, ``eval.task`` and the registered
    ``eval.task_args`` (each key given here must be in the log with this value)."""
    model_config = ConfigDict(strict=True)
    model: Name
    task: Name | None = None
    task_args: dict[Name, Scalar] = {}


class DatasetIdentity(FrozenModel):
    """The dataset both arms ran (Inspect's ``eval.dataset``: name, location, sample count)."""
    model_config = ConfigDict(strict=True)
    name: Name | None = None
    location: Name | None = None
    samples: int | None = Field(default=None, ge=1)


class ProtectedSlices(FrozenModel):
    """Slices that must each be non-inferior: the field (Inspect sample metadata; the trial
    rows' ``slice`` column), its protected values (in gatekeeping order) and the rule."""
    model_config = ConfigDict(strict=True)
    field: Name
    values: tuple[Name, ...] = Field(min_length=1)
    rule: Literal["holm", "fixed_sequence"]

    @model_validator(mode="after")
    def _distinct(self):
        if len(set(self.values)) != len(self.values):
            raise ValueError("protected_slices.values lists a value twice")
        return self


class HoldoutRegistration(FrozenModel):
    """A sealed holdout set: its id, the sha256 of its sealed contents and ``max_uses``, the
    maximum number of confirmatory accesses.  Each run against it is recorded in the ledger
    as an access of its kind, confirmatory or exploratory, before any trial is read
    (``evidence.ledger.record_use``; reading the holdout is the access), and the receipt
    states both counts.  Only confirmatory accesses count towards ``max_uses``: a
    confirmatory run beyond it is still counted, and its receipt holds with that reason
    (evidence spine: a repeatedly used sealed set becomes optimisation data); exploratory
    runs authorise lab work at most."""
    model_config = ConfigDict(strict=True)
    id: Name
    sha256: Sha256
    max_uses: int = Field(ge=1, le=1_000_000)


# A manifest's plan-before-data check trusts created_at: one dated in year 1 preceded every log and was
# accepted.  No plan for an AI evaluation predates this.
EARLIEST_CREATED = dt.datetime(2000, 1, 1, tzinfo=dt.timezone.utc)

OPTIONAL_BLOCKS = ("arms", "dataset", "protected_slices", "judge", "holdout")


class Manifest(FrozenModel):
    model_config = ConfigDict(strict=True)

    schema_version: Literal["1"] = "1"
    experiment_id: Name
    created_at: AwareDatetime
    valid_until: AwareDatetime
    code_revision: Name
    model_id: Name
    prompt_version: Name
    tool_version: Name
    dataset_version: Name
    evaluator_version: Name
    policy_version: Name
    environment_version: Name
    population_hash: Sha256
    repetitions: int = Field(ge=1, le=100_000)
    measurement_kind: Literal["synthetic", "measured"]
    estimand: Name                      # a methods.protocol.Estimand value, e.g. trial_weighted
    statistical_method: Name
    margin: float = Field(gt=0.0, lt=1.0)
    confidence: float = Field(ge=0.5, lt=1.0)
    minimum_independent_clusters: int = Field(ge=2)
    sequential_policy: SequentialPolicy = SequentialPolicy()
    rho_max: float = Field(ge=0.0, lt=1.0)
    qualification_sha256: Sha256
    input_hashes: dict[Name, Sha256] = {}
    invalidation_rules: tuple[InvalidationRule, ...] = ()
    required_tests: tuple[Name, ...] = ()
    required_prerequisites: tuple[Name, ...] = ()
    arms: dict[Literal["baseline", "candidate"], ArmIdentity] | None = None
    dataset: DatasetIdentity | None = None
    protected_slices: ProtectedSlices | None = None
    judge: JudgeRegistration | None = None
    holdout: HoldoutRegistration | None = None

    @model_validator(mode="after")
    def _consistent(self):
        from methods.protocol import Estimand
        known = [e.value for e in Estimand]
        if self.estimand not in known:
            raise ValueError(f"estimand must be one of {known}, got {self.estimand!r}")
        if self.created_at < EARLIEST_CREATED:
            raise ValueError(f"created_at {self.created_at.isoformat()} is before {EARLIEST_CREATED.date()}: not a date "
                             "a plan for these logs was written (a placeholder, or a date edited to precede the data)")
        if self.valid_until <= self.created_at:
            raise ValueError("valid_until must be after created_at")
        pinned = bool(_REVISION.match(self.code_revision))
        if not pinned and self.code_revision != UNPINNED:
            raise ValueError(f"code_revision must be a 40-hex git revision or {UNPINNED!r}, "
                             f"got {self.code_revision!r}")
        if self.measurement_kind == "measured" and not pinned:
            raise ValueError("measured evidence requires a pinned code revision (40-hex git commit); "
                             f"{self.code_revision!r} is rejected")
        for group in ("required_tests", "required_prerequisites", "invalidation_rules"):
            values = getattr(self, group)
            if len(set(values)) != len(values):
                raise ValueError(f"{group} lists a name twice")
        if self.arms is not None:
            if set(self.arms) != {"baseline", "candidate"}:
                raise ValueError("arms must register both 'baseline' and 'candidate'")
            if self.arms["candidate"].model != self.model_id:
                raise ValueError(f"model_id {self.model_id!r} must be the candidate arm's model "
                                 f"{self.arms['candidate'].model!r}")
        if self.judge is not None and self.protected_slices is not None:
            raise ValueError("protected_slices: slice tests of a judge-labelled comparison are not supported (each "
                             "slice would need its own calibration); register one or the other")
        return self

    @property
    def pinned(self) -> bool:
        return bool(_REVISION.match(self.code_revision))

    def canonical(self) -> dict:
        absent = {k for k in OPTIONAL_BLOCKS if getattr(self, k) is None}
        return self.model_dump(mode="json", exclude=absent)

    @property
    def sha256(self) -> str:
        return content_hash(self.canonical())

    @classmethod
    def parse(cls, data: dict | str | bytes, source: str = "manifest") -> "Manifest":
        """Validate JSON text or a JSON-compatible dict (strict types; errors name the field)."""
        text = data if isinstance(data, (str, bytes)) else json.dumps(data, allow_nan=True)
        if text[:1] == "\ufeff" or text[:3] == b"\xef\xbb\xbf":
            # JSON (RFC 8259 sec. 8.1) has no byte-order mark; pydantic's "expected value at column 1" hid it
            raise ValueError(f"{source}: invalid manifest: the file starts with a UTF-8 byte-order mark (BOM), "
                             "which JSON does not allow; save it as UTF-8 without a BOM")
        try:
            text = utf8_text(text) if isinstance(text, bytes) else text
            loads(text)  # pydantic's parser keeps a repeated key's last value silently
        except RefusedJSON as exc:  # a repeated key, nesting past the parser's depth, not UTF-8
            raise ValueError(f"{source}: invalid manifest: {exc}") from None
        except ValueError:
            pass  # malformed JSON: pydantic names where
        try:
            return cls.model_validate_json(text)
        except ValidationError as exc:
            lines = [f"{'.'.join(str(p) for p in e['loc']) or '(manifest)'}: {e['msg']}" for e in exc.errors()]
            raise ValueError(f"{source}: invalid manifest: " + "; ".join(lines)) from None


def load_manifest(path: str | Path) -> Manifest:
    path = Path(path)
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        raise ValueError(f"no manifest at {path}") from None
    return Manifest.parse(data, source=str(path))


def template(now: dt.datetime | None = None) -> dict:
    """A manifest to fill in (``simlab evidence init``): every field, placeholder hashes."""
    now = (now or dt.datetime.now(dt.timezone.utc)).replace(microsecond=0)
    iso = lambda t: t.isoformat().replace("+00:00", "Z")  # noqa: E731
    return {
        "schema_version": "1", "experiment_id": "my-agent-rc1-vs-baseline",
        "created_at": iso(now), "valid_until": iso(now + dt.timedelta(days=30)),
        "code_revision": UNPINNED, "model_id": "provider/model@version",
        "prompt_version": "prompt-v1", "tool_version": "tools-v1", "dataset_version": "cases-v1",
        "evaluator_version": "evaluator-v1", "policy_version": "release-policy-v1",
        "environment_version": "python-3.12-container-v1", "population_hash": "sha256:" + "0" * 64,
        "repetitions": 3, "measurement_kind": "synthetic", "estimand": "loss_rate",
        "statistical_method": "binomial_loss", "margin": 0.03, "confidence": 0.95,
        "minimum_independent_clusters": 30, "sequential_policy": {"kind": "fixed_sample", "looks": []},
        "rho_max": 0.05, "qualification_sha256": "sha256:" + "0" * 64,
        "input_hashes": {"dataset": "sha256:" + "0" * 64},
        "invalidation_rules": list(INVALIDATION_RULES),
        "required_tests": [], "required_prerequisites": [],
        "arms": {"baseline": {"model": "provider/baseline-model@version", "task": "my_task", "task_args": {}},
                 "candidate": {"model": "provider/model@version", "task": "my_task", "task_args": {}}},
        "dataset": {"name": "cases-v1", "location": None, "samples": None},
    }
