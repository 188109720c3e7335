"""Registry of decision methods.

Three ways a method is found, all giving the same kind of object (a
:class:`methods.protocol.DecisionMethod`), so studies, qualification, certification and the
evidence path treat every method alike:

1. **built-in**: every module in ``methods/fixed`` and ``methods/sequential`` that defines
   ``METHOD`` (modules are named after their method, so ``get`` imports just that module;
   listing scans them all);
2. **entry points** of the group ``simlab.methods`` in any installed package
   (``[project.entry-points."simlab.methods"] my_rule = "my_pkg.my_rule:METHOD"``);
3. **a reference** ``package.module:ATTR`` given where a method name is expected
   (``simlab false-pass --method my_pkg.my_rule:METHOD``).

A method's identity hashes its own source files whatever way it was found.
:func:`reference` gives the string that finds a method again (in a worker process, or
when a qualification record is re-checked)."""
from __future__ import annotations

import importlib
import pkgutil
from dataclasses import replace
from functools import lru_cache
from importlib.metadata import entry_points

from methods.protocol import CALIBRATED

_PACKAGES = ["methods.fixed", "methods.sequential"]
ENTRY_POINT_GROUP = "simlab.methods"


def _check(obj, where: str):
    from methods.protocol import DecisionMethod

    if not isinstance(obj, DecisionMethod):
        raise ValueError(f"{where} is a {type(obj).__name__}, not a simlab decision method "
                         "(a methods.protocol.FixedMethod or SequentialMethod; see methods.adapters "
                         "for plain numpy functions)")
    return obj


@lru_cache(maxsize=1)
def _builtin() -> dict[str, object]:
    found: dict[str, object] = {}
    for pkg_name in _PACKAGES:
        pkg = importlib.import_module(pkg_name)
        for info in pkgutil.iter_modules(pkg.__path__):
            if info.name.startswith("_"):
                continue
            mod = importlib.import_module(f"{pkg_name}.{info.name}")
            method = getattr(mod, "METHOD", None)
            if method is None:
                continue
            if method.name in found:
                raise RuntimeError(f"two methods are named {method.name!r}")
            found[method.name] = method
    return found


@lru_cache(maxsize=1)
def _entry_points() -> dict[str, object]:
    """Entry-point name -> entry point (loaded on demand)."""
    return {ep.name: ep for ep in entry_points(group=ENTRY_POINT_GROUP)}


def _all() -> dict[str, object]:
    methods = dict(_builtin())
    for name in _entry_points():
        if name in methods:
            raise RuntimeError(f"entry point {name!r} ({ENTRY_POINT_GROUP}) shadows a built-in method")
        methods[name] = _load_entry_point(name)
    return methods


def names(kind: str | None = None, inputs: tuple[str, ...] | None = ("tables",)) -> list[str]:
    """Registered method names (optionally only ``fixed`` or ``sequential``) that decide from
    the data ``inputs`` names: by default from tables alone, so a loop that runs every method
    on simulated tables gets the methods it can run; ``("tables", "judge_calibration")`` adds
    the judge-corrected methods (``methods.judged``), ``None`` lists every method."""
    return sorted(n for n, m in _all().items() if (kind is None or m.kind == kind)
                  and (inputs is None or set(m.inputs) <= set(inputs)))


@lru_cache(maxsize=None)
def _by_module(name: str):
    for pkg_name in _PACKAGES:
        try:
            mod = importlib.import_module(f"{pkg_name}.{name}")
        except ModuleNotFoundError as exc:
            if exc.name != f"{pkg_name}.{name}":  # a missing dependency inside the module
                raise
            continue
        method = getattr(mod, "METHOD", None)
        if method is not None and method.name == name:
            return method
    return None


@lru_cache(maxsize=None)
def _load_entry_point(name: str):
    ep = _entry_points()[name]
    obj = ep.load()
    obj = getattr(obj, "METHOD", obj)  # a module that defines METHOD
    method = _check(obj, f"entry point {name!r} ({ep.value})")
    if method.name != name:
        raise ValueError(f"entry point {name!r} ({ep.value}) loads a method named {method.name!r}; "
                         "name the entry point after the method")
    return method


@lru_cache(maxsize=None)
def _by_reference(ref: str):
    module_name, _, attr = ref.partition(":")
    if not module_name or not attr:
        raise KeyError(f"method reference {ref!r} must look like package.module:ATTR")
    try:
        module = importlib.import_module(module_name)
    except ModuleNotFoundError as exc:
        raise KeyError(f"method reference {ref!r}: cannot import {module_name!r} ({exc})") from None
    obj = module
    for part in attr.split("."):
        if not hasattr(obj, part):
            raise KeyError(f"method reference {ref!r}: {module_name!r} has no attribute {attr!r}")
        obj = getattr(obj, part)
    method = _check(obj, f"method reference {ref!r}")
    return replace(method, origin=ref)


def get(name: str):
    """Look a method up by name (built-in or entry point) or by ``package.module:ATTR``; an
    unknown name is a KeyError listing the known ones.  ``NAME@alpha=LEVEL`` is the method
    calibrated to nominal one-sided level ``LEVEL`` (``DecisionMethod.calibrated``)."""
    if not isinstance(name, str) or not name:
        raise KeyError(f"a method name must be a non-empty string, got {name!r}")
    if CALIBRATED in name:
        base, _, level = name.partition(CALIBRATED)
        try:
            value = float(level)
        except ValueError:
            raise KeyError(f"method {name!r}: the calibrated level after {CALIBRATED!r} must be a number") from None
        try:
            return get(base).calibrated(value)
        except ValueError as exc:
            raise KeyError(f"method {name!r}: {exc}") from None
    if ":" in name:
        return _by_reference(name)
    if name.isidentifier() and not name.startswith("_"):
        method = _by_module(name)
        if method is not None:
            return method
    if name in _entry_points():
        return _load_entry_point(name)
    methods = _all()
    if name not in methods:
        raise KeyError(f"unknown method {name!r}; registered methods: {', '.join(sorted(methods))} "
                       "(or give package.module:ATTR)")
    return methods[name]


def reference(method) -> str:
    """The string :func:`get` finds ``method`` by again (its name, or its ``module:ATTR``,
    with a calibrated level)."""
    base = method.origin or method.name
    level = getattr(method, "nominal_alpha", None)
    return base if level is None else f"{base}{CALIBRATED}{level!r}"
