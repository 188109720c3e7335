"""Study specification: methods x scenario grid x margins x levels (one-sided alpha).

A :class:`StudySpec` is a frozen pydantic model, loadable from TOML or JSON
(:func:`load_spec`), identified by ``spec.hash`` = sha256 of its RFC 8785 canonical JSON
(the execution-only field ``chunk_size`` is left out: it never changes a result).

The scenario is described by a :class:`ScenarioTemplate` -- every ``PairedScenario``
field plus the convenient derived parameters -- and ``grid`` lists the values of the
fields that vary; the study's scenarios are the cartesian product, in the order the
grid lists its fields (that order is also the order of the dataset's dimensions)::

    name = "boundary"
    methods = ["clustered_normal", {name = "cluster_t", options = {min_clusters = 5}}]
    margins = [0.03]
    alpha = 0.025                 # the one-sided level (or alphas = [...])
    replications = 20000          # or: target_mcse = 0.002
    seed = 1

    [scenario]
    clusters = 30
    trials = 3
    rho = 0.1
    baseline = 0.9
    discordance = 0.1
    difference = -0.03

    [grid]
    difference = [-0.05, -0.03, 0.0]
    clusters = [10, 30]
"""
from __future__ import annotations

import itertools
import json
import math
import re
from functools import cached_property
from pathlib import Path
from typing import Annotated, Any, ClassVar, Literal

import rfc8785
from pydantic import BeforeValidator, Field, Strict, ValidationError, field_validator, model_serializer, model_validator

from simlab.hashing import bytes_hash
from methods.method_ref import MethodRef, as_method_refs
from simlab.models import FrozenModel
from simlab.limits import MAX_REPLICATIONS
from studies.engine.spec_file import read_spec_file
from simlab.scenario import (ExplicitSizes, FixedSize, GeometricSize, JudgeCalibration, LabelNoise, Missingness,
                             PairedScenario, PoissonSize)


def _not_text(v):
    """A spec file's numbers are numbers: the string "2000" (or true for 1) is refused, not coerced."""
    if isinstance(v, (str, bytes, bool)):
        raise ValueError(f"give a number, not {'a boolean' if isinstance(v, bool) else 'the string'} {v!r}")
    return v


SInt = Annotated[int, BeforeValidator(_not_text)]
SFloat = Annotated[float, BeforeValidator(_not_text)]
# The seed is hashed with the spec (RFC 8785 canonical JSON), whose integers must be exact in a
# JSON double: larger seeds failed deep in the hash with "exceeds safe integer domain".
MAX_SEED = 2 ** 53 - 1
# The name forms the default output path (simlab-out/NAME-HASH.nc): a plain file stem only.
_SAFE_NAME = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.-]{0,99}")


# ---------------------------------------------------------------- scenario template
class ScenarioTemplate(FrozenModel):
    """Every way a study may describe a ``PairedScenario``.

    Cells (exactly one way): ``cells = [p11, p10, p01, p00]``; or ``baseline`` +
    ``difference`` + ``discordance`` (``PairedScenario.from_rates``); or ``baseline`` +
    ``candidate`` (independent arms); or ``cluster_cells`` alone (their mean is the
    population cells).  Sizes (at most one way; default one trial): ``trials`` (fixed),
    ``mean_trials`` with ``size_law`` poisson/geometric and ``min_trials``, or ``sizes``
    (explicit, one per cluster).  Judge noise: ``sensitivity`` / ``specificity`` for both
    arms, or per arm (``baseline_sensitivity`` ...), and the judge's calibration sets:
    ``calibration_items`` per set (``calibration_shared``: one set for both arms), drawn per
    replication for the judge-corrected methods.  Loss: ``loss_rate`` and
    ``loss_rate_candidate_fail``."""
    cells: tuple[SFloat, SFloat, SFloat, SFloat] | None = None
    baseline: SFloat | None = None
    difference: SFloat | None = None
    discordance: SFloat | None = None
    candidate: SFloat | None = None
    cluster_cells: tuple[tuple[SFloat, SFloat, SFloat, SFloat], ...] | None = None
    clusters: SInt | None = None
    trials: SInt | None = None
    mean_trials: SFloat | None = None
    size_law: Literal["poisson", "geometric"] = "poisson"
    min_trials: SInt = 1
    sizes: tuple[SInt, ...] | None = None
    rho: SFloat = 0.0
    sensitivity: SFloat | None = None
    specificity: SFloat | None = None
    baseline_sensitivity: SFloat | None = None
    baseline_specificity: SFloat | None = None
    candidate_sensitivity: SFloat | None = None
    candidate_specificity: SFloat | None = None
    loss_rate: SFloat = 0.0
    loss_rate_candidate_fail: SFloat | None = None
    calibration_items: SInt | None = None
    calibration_shared: Annotated[bool, Strict()] = False

    @model_serializer(mode="wrap")
    def _drop_no_calibration(self, handler):
        # A template without calibration sets serialises as before they existed: the
        # content hashes of existing specs do not move.
        data = handler(self)
        if self.calibration_items is None:
            data.pop("calibration_items", None)
        if not self.calibration_shared:
            data.pop("calibration_shared", None)
        return data

    def build(self) -> PairedScenario:
        """The ``PairedScenario`` this template describes (errors name the field)."""
        try:
            return self._build()
        except ValidationError as exc:
            raise ValueError(f"scenario: {_short_validation(exc)}") from None

    def _build(self) -> PairedScenario:
        size = self._size()
        clusters = self.clusters
        if clusters is None:
            if self.sizes is not None:
                clusters = len(self.sizes)
            elif self.cluster_cells is not None:
                clusters = len(self.cluster_cells)
            else:
                clusters = 30
        noise = self._noise()
        miss = Missingness(loss_rate=self.loss_rate, loss_rate_candidate_fail=self.loss_rate_candidate_fail)
        common = dict(clusters=clusters, cluster_size=size, rho=self.rho, label_noise=noise, missingness=miss,
                      cluster_cells=self.cluster_cells)
        ways = {"cells": self.cells is not None,
                "baseline+difference+discordance": self.difference is not None or self.discordance is not None,
                "baseline+candidate": self.candidate is not None}
        chosen = [k for k, v in ways.items() if v]
        if len(chosen) > 1:
            raise ValueError(f"scenario: give the cells one way only, got {' and '.join(chosen)}")
        if not chosen:
            if self.cluster_cells is None:
                raise ValueError("scenario: give cells, baseline+difference+discordance, baseline+candidate "
                                 "or cluster_cells")
            if self.baseline is not None:
                raise ValueError("scenario.baseline needs difference+discordance or candidate")
            w = [1.0] * len(self.cluster_cells) if self.sizes is None else [float(s) for s in self.sizes]
            tot = sum(w) or 1.0
            mean = [sum(wi * row[j] for wi, row in zip(w, self.cluster_cells)) / tot for j in range(4)]
            s = sum(mean)
            return PairedScenario(cells=tuple(x / s for x in mean), **common)
        if chosen[0] == "cells":
            if self.baseline is not None:
                raise ValueError("scenario: baseline conflicts with cells")
            return PairedScenario(cells=self.cells, **common)
        if self.baseline is None:
            raise ValueError(f"scenario: {chosen[0]} needs baseline")
        if chosen[0] == "baseline+candidate":
            return PairedScenario.independent_arms(self.baseline, self.candidate, **common)
        if self.difference is None or self.discordance is None:
            raise ValueError("scenario: baseline, difference and discordance go together")
        return PairedScenario.from_rates(self.baseline, self.difference, self.discordance, **common)

    def _size(self):
        given = [k for k in ("trials", "mean_trials", "sizes") if getattr(self, k) is not None]
        if len(given) > 1:
            raise ValueError(f"scenario: give cluster sizes one way only, got {' and '.join(given)}")
        if self.sizes is not None:
            return ExplicitSizes(sizes=self.sizes)
        if self.mean_trials is not None:
            law = PoissonSize if self.size_law == "poisson" else GeometricSize
            return law(mean_trials=self.mean_trials, minimum=self.min_trials)
        return FixedSize(trials=1 if self.trials is None else self.trials)

    def _noise(self) -> LabelNoise:
        kw = {}
        for arm in ("baseline", "candidate"):
            for what in ("sensitivity", "specificity"):
                own = getattr(self, f"{arm}_{what}")
                both = getattr(self, what)
                if own is not None and both is not None:
                    raise ValueError(f"scenario: {arm}_{what} conflicts with {what}")
                v = own if own is not None else both
                if v is not None:
                    kw[f"{arm}_{what}"] = v
        if self.calibration_items is not None:
            kw["calibration"] = JudgeCalibration(items=self.calibration_items, shared=self.calibration_shared)
        elif self.calibration_shared:
            raise ValueError("scenario: calibration_shared needs calibration_items")
        return LabelNoise(**kw)


def _short_validation(exc: ValidationError) -> str:
    parts = []
    for err in exc.errors():
        loc = ".".join(str(x) for x in err.get("loc", ()))
        msg = str(err.get("msg")).removeprefix("Value error, ")  # pydantic's prefix for a validator's own message
        parts.append(f"{loc}: {msg}" if loc else msg)
    return "; ".join(parts)


SCENARIO_FIELDS = tuple(ScenarioTemplate.model_fields)


# ---------------------------------------------------------------- the spec
def plural_alias(data: dict, single: str, plural: str) -> None:
    """Accept ``single = x`` (or a list) for the tuple field ``plural`` in spec files."""
    if single in data:
        if plural in data:
            raise ValueError(f"give {single} or {plural}, not both")
        v = data.pop(single)
        data[plural] = v if isinstance(v, (list, tuple)) else [v]


def _distinct_in_range(name: str, v: tuple[float, ...], lo: float, hi: float, lo_open: bool,
                       hi_open: bool = True) -> tuple[float, ...]:
    if not v:
        raise ValueError(f"{name}: give at least one value")
    for i, x in enumerate(v):
        if not ((lo < x) if lo_open else (lo <= x)) or not ((x < hi) if hi_open else (x <= hi)):
            raise ValueError(f"{name}[{i}] must lie in {'(' if lo_open else '['}{lo:g}, {hi:g}{')' if hi_open else ']'}, "
                             f"got {x!r}")
    if len(set(v)) != len(v):
        raise ValueError(f"{name}: values must be distinct")
    return v


class GridSpec(FrozenModel):
    """What fixed-sample and sequential study specs share: methods, a base scenario and a
    grid of varied scenario fields (cartesian product), margins, seed and sampler.  The
    content hash leaves out the execution-only ``chunk_size`` (it never changes results)."""
    method_kind: ClassVar[str | None] = None   # "fixed" / "sequential": what kind of method it runs, when known
    name: str = "study"
    description: str = ""
    scenario: ScenarioTemplate = ScenarioTemplate()
    grid: dict[str, tuple[Any, ...]] = Field(default_factory=dict)
    margins: tuple[SFloat, ...] = (0.03,)
    seed: SInt = Field(default=20261129, ge=0, le=MAX_SEED)
    chunk_size: SInt = Field(default=65_536, ge=1)
    sampler: Literal["auto", "composition", "trial"] = "auto"
    mc_confidence: SFloat = Field(default=0.95, gt=0, lt=1)

    @field_validator("name")
    @classmethod
    def _name(cls, v):
        if not _SAFE_NAME.fullmatch(v) or ".." in v:
            raise ValueError(f"{v!r} is not a plain file name: it names the default output file, so use 1 to 100 "
                             "letters, digits, '_', '.' or '-', not starting with '.' or '-' (no '/' or '..')")
        return v

    @field_validator("methods", check_fields=False)
    @classmethod
    def _methods(cls, v):
        if not v:
            raise ValueError("a study needs at least one method")
        keys = [m.key for m in v]
        dup = sorted({k for k in keys if keys.count(k) > 1})
        if dup:
            raise ValueError(f"duplicate method labels {dup}; give each a distinct 'label'")
        return v

    @field_validator("margins")
    @classmethod
    def _margins(cls, v):
        return _distinct_in_range("margins", v, 0.0, 1.0, lo_open=True)

    @field_validator("grid")
    @classmethod
    def _grid(cls, v):
        for field, values in v.items():
            if field not in SCENARIO_FIELDS:
                raise ValueError(f"grid.{field} is not a scenario field; known: {', '.join(SCENARIO_FIELDS)}")
            if len(values) == 0:
                raise ValueError(f"grid.{field} lists no values")
            keys = [json.dumps(x, sort_keys=True) for x in values]
            if len(set(keys)) != len(keys):
                raise ValueError(f"grid.{field} repeats a value")
        return v

    # -- identity ----------------------------------------------------------
    def canonical_json(self) -> bytes:
        """RFC 8785 canonical JSON of the spec without the execution-only ``chunk_size``."""
        return rfc8785.dumps(self.model_dump(mode="json", exclude={"chunk_size"}))

    @cached_property
    def hash(self) -> str:
        """``sha256:<hex>`` of the canonical JSON (``simlab.hashing``)."""
        return bytes_hash(self.canonical_json())

    def to_json(self) -> str:
        return json.dumps(self.model_dump(mode="json"), sort_keys=True)

    # -- grid ----------------------------------------------------------------
    @property
    def dims(self) -> tuple[str, ...]:
        return tuple(self.grid)

    @property
    def shape(self) -> tuple[int, ...]:
        return tuple(len(self.grid[f]) for f in self.grid)

    @property
    def method_keys(self) -> tuple[str, ...]:
        return tuple(m.key for m in self.methods)

    def _base_scenario(self) -> dict[str, Any]:
        return self.scenario.model_dump(exclude_unset=False)

    def _check_point(self, coords: dict[str, Any], scenario: PairedScenario) -> None:
        """Hook for spec kinds that constrain grid points further."""

    def points(self) -> list[tuple[dict[str, Any], PairedScenario]]:
        """Every grid point as ``(varied field values, PairedScenario)``, in C order (built once:
        :func:`validate_spec` builds them to check the spec, the engine reuses them)."""
        return [(dict(coords), scenario) for coords, scenario in self._points]

    def cheapest_point(self) -> PairedScenario:
        """The grid point with the fewest trial pairs per replication, built alone (a huge grid's
        floor is priced from it before its points are built): the least clusters and cluster
        size on their axes, every other varied field at its first value.  ``ValueError`` when
        that combination is not a valid scenario."""
        def mean_size(v) -> float:
            return sum(v) / len(v) if isinstance(v, (list, tuple)) else float(v)

        coords = {f: v[0] for f, v in self.grid.items()}
        for field in ("clusters", "trials", "mean_trials", "sizes"):
            if field in self.grid:
                coords[field] = min(self.grid[field], key=mean_size if field == "sizes" else float)
        return ScenarioTemplate.model_validate({**self._base_scenario(), **coords}).build()

    @cached_property
    def _points(self) -> list[tuple[dict[str, Any], PairedScenario]]:
        base = self._base_scenario()
        fields = list(self.grid)
        out = []
        for combo in itertools.product(*(self.grid[f] for f in fields)):
            coords = dict(zip(fields, combo))
            try:
                scenario = ScenarioTemplate.model_validate({**base, **coords}).build()
            except (ValidationError, ValueError) as exc:
                msg = _short_validation(exc) if isinstance(exc, ValidationError) else str(exc)
                raise ValueError(f"grid point {coords}: {msg}" if coords else msg) from None
            self._check_point(coords, scenario)
            out.append((coords, scenario))
        if not out:
            raise ValueError("the grid is empty")
        return out


class StudySpec(GridSpec):
    """What to run.  See the module docstring for the file format."""
    method_kind: ClassVar[str | None] = "fixed"   # the kind of method it runs (checked when the spec is read)
    methods: tuple[MethodRef, ...]
    alphas: tuple[SFloat, ...] = (0.025,)
    replications: SInt | None = Field(default=None, ge=1, le=MAX_REPLICATIONS)
    target_mcse: SFloat | None = Field(default=None, gt=0, lt=0.5)
    planning_rate: SFloat = Field(default=0.5, gt=0, lt=1)
    exact: Annotated[bool, Strict()] = False

    @model_validator(mode="before")
    @classmethod
    def _aliases(cls, data):
        if not isinstance(data, dict):
            return data
        data = dict(data)
        plural_alias(data, "margin", "margins")
        plural_alias(data, "alpha", "alphas")
        if "methods" in data:
            data["methods"] = as_method_refs(data["methods"])
        return data

    @field_validator("alphas")
    @classmethod
    def _alphas(cls, v):
        return _distinct_in_range("alphas", v, 0.0, 0.25, lo_open=True, hi_open=False)

    @model_validator(mode="after")
    def _replications(self):
        if (self.replications is None) == (self.target_mcse is None):
            raise ValueError("give exactly one of replications or target_mcse")
        return self

    @property
    def n_replications(self) -> int:
        """Replications per scenario: given, or ``ceil(r (1 - r) / target_mcse^2)`` for the
        planning rate ``r`` (Morris, White & Crowther 2019, Stat Med 38:2074-2102, sec. 5.3)."""
        if self.replications is not None:
            return int(self.replications)
        n = math.ceil(self.planning_rate * (1.0 - self.planning_rate) / self.target_mcse ** 2)
        return min(max(n, 1), MAX_REPLICATIONS)


def check_method_refs(refs, kind: str | None = None) -> None:
    """Each method reference's name, kind, wrapped method and options checked against the method
    catalogue (``methods.info``: no kernel is imported), so that a spec naming an unknown method,
    a method of the wrong kind, or an option that is unknown or not a number (or outside a range
    the catalogue declares) is refused with its file before the engine loads (it was refused
    where the engine resolved the method, 1-2 s later, without naming the file).  ``ValueError``
    naming the entry, ``methods[i]: ...``.  A ``package.module:ATTR`` reference is left to
    :meth:`MethodRef.resolve` (finding it imports its module); a range that only a method's own
    code knows is checked where the method prepares."""
    from methods import info, names, option_values

    def entry_of(name: str, where: str):
        try:
            return info(name)
        except KeyError as exc:
            raise ValueError(f"{where}: {exc.args[0] if exc.args else f'unknown method {name!r}'}") from None

    def check_options(entry, given, where: str) -> None:
        try:
            option_values(entry.name, entry.options, entry.choices, given, entry.ranges)
        except ValueError as exc:
            raise ValueError(f"{where}: {exc}") from None

    for i, ref in enumerate(refs):
        where = f"methods[{i}]"
        if ":" in ref.name:
            continue
        entry = entry_of(ref.name, where)
        if kind is not None and entry.kind != kind:
            word = "fixed-sample" if kind == "fixed" else kind
            raise ValueError(f"{where}: method {ref.name!r} is not a {word} method; {word} methods: "
                             f"{', '.join(names(kind))}")
        check_options(entry, ref.options, where)
        if ref.inner is None:
            if ref.inner_options:
                raise ValueError(f"{where}: method {ref.name!r}: inner_options given without inner")
            continue
        if entry.inner is None:
            raise ValueError(f"{where}: method {ref.name!r} does not wrap a fixed-sample method, so it takes no "
                             f"inner (got {ref.inner!r})")
        if ":" in ref.inner:
            continue
        inner = entry_of(ref.inner, f"{where}.inner")
        if inner.kind != "fixed":
            raise ValueError(f"{where}.inner: {ref.name!r} wraps fixed-sample methods; {ref.inner!r} is not one; "
                             f"fixed-sample methods: {', '.join(names('fixed'))}")
        check_options(inner, ref.inner_options, f"{where}.inner_options")


def validate_spec(model: type[GridSpec], data: dict, source: str = "spec"):
    """``model.model_validate(data)`` with a one-line error naming the source and fields; the
    methods are checked against the catalogue (:func:`check_method_refs`) and the scenario of
    every grid point is built too, so that a bad one is named with the file before the engine
    loads (building them is cheap next to importing the kernels)."""
    try:
        spec = model.model_validate(data)
    except ValidationError as exc:
        raise ValueError(f"{source}: {_short_validation(exc)}") from None
    try:
        check_method_refs(spec.methods, model.method_kind)
    except ValueError as exc:
        raise ValueError(f"{source}: {exc}") from None
    try:
        if math.prod(spec.shape) <= EAGER_POINTS:
            spec.points()
        else:  # a huge grid (the memory and time checks refuse it): each value on its own, the base elsewhere
            base = spec._base_scenario()
            for field, values in spec.grid.items():
                for v in values:
                    try:
                        ScenarioTemplate.model_validate({**base, field: v}).build()
                    except ValidationError as exc:
                        raise ValueError(f"grid point {{{field!r}: {v!r}}}: {_short_validation(exc)}") from None
                    except ValueError as exc:
                        raise ValueError(f"grid point {{{field!r}: {v!r}}}: {exc}") from None
    except ValueError as exc:
        raise ValueError(f"{source}: {exc}") from None
    return spec


# Grids up to this many points are built when the spec is read (~0.1 ms a point)
EAGER_POINTS = 20_000


def load_spec(path: str | Path) -> StudySpec:
    """Read a spec from a ``.toml`` or ``.json`` file (errors name the file and field)."""
    return parse_spec(read_spec_file(path), source=str(path))


def parse_spec(data: dict, source: str = "spec") -> StudySpec:
    return validate_spec(StudySpec, data, source)
