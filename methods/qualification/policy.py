"""Qualification policy: the question a qualification answers (content-hashed; the hash is
in every record).  Built-in policies are data files, ``policies/<name>.toml``, validated
into the same model as a user's own policy file."""
from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Literal

from pydantic import Field, ValidationError, model_validator

from simlab.models import FrozenModel
from simlab.scenario import FixedSize

from simlab.hashing import content_hash
from .domain import Axis, IntAxis, QualificationDomain
from .verdicts import MC_RULE, stage_confidence

POLICY_DIR = Path(__file__).resolve().parent / "policies"


class QualificationPolicy(FrozenModel):
    """How a method is qualified (content-hashed; the hash is in every record)."""
    alpha: float = Field(default=0.025, gt=0.0, lt=0.5)
    allowed_excess: float = Field(default=1.1, ge=1.0, le=10.0)
    mc_confidence: float = Field(default=0.95, ge=0.5, lt=1.0)
    min_replications: int = Field(default=2000, ge=10, le=10_000_000)
    max_replications: int = Field(default=128_000, ge=10, le=100_000_000)
    replication_growth: int = Field(default=4, ge=2, le=64)
    estimand: Literal["method", "trial_weighted", "cluster_weighted"] = "method"
    refine_fraction: float = Field(default=0.5, ge=0.0, le=1.0)
    refine_evaluations: int = Field(default=3, ge=0, le=50)
    validity_days: int = Field(default=365, ge=1, le=3650)
    seed: int = Field(default=20261129, ge=0, le=2 ** 53 - 1)  # hashed as RFC 8785 JSON: exact in a double
    sampler: Literal["auto", "trial", "composition"] = "auto"
    domain: QualificationDomain

    @model_validator(mode="after")
    def _reps(self):
        if self.max_replications < self.min_replications:
            raise ValueError(f"max_replications ({self.max_replications}) must be >= "
                             f"min_replications ({self.min_replications})")
        return self

    @property
    def threshold(self) -> float:
        """Largest acceptable false-pass upper bound: allowed_excess * alpha."""
        return self.allowed_excess * self.alpha

    @property
    def confidence(self) -> float:
        """Two-sided confidence the method runs at: 1 - 2 alpha."""
        return 1.0 - 2.0 * self.alpha

    def replication_schedule(self) -> list[int]:
        """Cumulative replication counts tried for a scenario: min, min*g, ... up to max."""
        out = [self.min_replications]
        while out[-1] < self.max_replications:
            out.append(min(out[-1] * self.replication_growth, self.max_replications))
        return out

    @property
    def stage_confidence(self) -> float:
        """Confidence of each stage's Clopper-Pearson bound under the rule new records use
        (``verdicts.MC_RULE``): the whole adaptive schedule then holds at ``mc_confidence``."""
        return stage_confidence(self.mc_confidence, len(self.replication_schedule()), MC_RULE)

    def canonical(self) -> dict:
        return self.model_dump(mode="json")

    @property
    def sha256(self) -> str:
        return content_hash(self.canonical())

    @classmethod
    def load(cls, path: str | Path) -> "QualificationPolicy":
        """Read a policy from JSON or TOML; errors name the offending field."""
        path = Path(path)
        try:
            text = path.read_text()
            if path.suffix.lower() == ".toml":
                import tomllib
                data = tomllib.loads(text)
            else:
                data = json.loads(text)
        except (ValueError, json.JSONDecodeError) as exc:
            raise ValueError(f"policy file {path}: cannot parse: {exc}") from None
        except RecursionError:  # thousands of nested arrays: no policy looks like that
            raise ValueError(f"policy file {path}: cannot parse: nested too deeply") from None
        try:
            return cls.model_validate(data)
        except ValidationError as exc:  # str(exc) is pydantic's multi-line report, with the model's name
            raise ValueError(f"policy file {path}: {validation_summary(exc)}") from None


def validation_summary(exc: ValidationError) -> str:
    """One line per pydantic error, ``field.path: message``, joined by "; " (no model class name,
    no input repr)."""
    parts = []
    for err in exc.errors(include_url=False):
        loc = ".".join(str(x) for x in err.get("loc", ()))
        msg = " ".join(str(err.get("msg", "invalid value")).removeprefix("Value error, ").split())
        parts.append(f"{loc}: {msg}" if loc else msg)
    return "; ".join(parts)




def policy_names() -> list[str]:
    """Names of the built-in policies (``policies/*.toml``)."""
    return sorted(p.stem for p in POLICY_DIR.glob("*.toml"))


def named_policy(name: str) -> QualificationPolicy:
    """A built-in policy by name (see ``policies/*.toml`` for what each one covers)."""
    path = POLICY_DIR / f"{name}.toml"
    if "/" in name or not path.is_file():
        raise ValueError(f"unknown policy {name!r}: give a JSON/TOML file or one of {', '.join(policy_names())}")
    return QualificationPolicy.load(path)


def standard_policy(**overrides: Any) -> QualificationPolicy:
    """The ``standard`` policy, with field overrides."""
    base = named_policy("standard")
    return QualificationPolicy.model_validate({**base.model_dump(), **overrides}) if overrides else base


def standard_domain() -> QualificationDomain:
    """The standard domain (``policies/standard.toml``)."""
    return named_policy("standard").domain


def reduced_domain(clusters: tuple[int, ...] = (10, 30, 100)) -> QualificationDomain:
    """A smaller declared domain for methods too slow for the standard one (resampling and
    Bayesian kernels): K in ``clusters``, 1 or 3 trials per cluster, rho 0 or 0.2, margin 0.03
    or 0.10, baseline 0.7..1.0, discordance from the margin to 0.3."""
    return QualificationDomain(
        clusters=IntAxis(lo=clusters[0], hi=clusters[-1], grid=clusters),
        cluster_sizes=(FixedSize(trials=1), FixedSize(trials=3)),
        rho=Axis(lo=0.0, hi=0.2, grid=(0.0, 0.2)),
        margin=Axis(lo=0.03, hi=0.10, grid=(0.03, 0.10)),
        baseline=Axis(lo=0.7, hi=1.0, grid=(0.7, 1.0)),
        discordance=Axis(lo=0.01, hi=0.3, grid=(0.01, 0.1, 0.3)),
    )
