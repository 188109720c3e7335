"""Registry of decision methods.

Three ways a method is found, all giving the same kind of object (a
:class:`methods.protocol.DecisionMethod`), so studies, qualification, certification and the
evidence path treat every method alike:

1. **built-in**: every module in ``methods/fixed`` and ``methods/sequential`` that defines
   ``METHOD``; ``methods.catalogue`` lists them without importing a kernel, and ``get``
   imports just the module of the method asked for;
2. **entry points** of the group ``simlab.methods`` in any installed package
   (``[project.entry-points."simlab.methods"] my_rule = "my_pkg.my_rule:METHOD"``);
3. **a reference** ``package.module:ATTR`` given where a method name is expected
   (``simlab false-pass --method my_pkg.my_rule:METHOD``).

A method's identity hashes its own source files whatever way it was found.
:func:`reference` gives the string that finds a method again (in a worker process, or
when a qualification record is re-checked)."""
from __future__ import annotations

import importlib
from dataclasses import replace
from functools import lru_cache

from methods import catalogue
from methods.conventions import CALIBRATED, check_alpha

ENTRY_POINT_GROUP = "simlab.methods"


def _check(obj, where: str):
    from methods.protocol import DecisionMethod

    if not isinstance(obj, DecisionMethod):
        raise ValueError(f"{where} is a {type(obj).__name__}, not a simlab decision method "
                         "(a methods.protocol.FixedMethod or SequentialMethod; see methods.adapters "
                         "for plain numpy functions)")
    return obj


@lru_cache(maxsize=1)
def _entry_points() -> dict[str, object]:
    """Entry-point name -> entry point (loaded on demand)."""
    from importlib.metadata import entry_points  # tens of ms: not needed to find a built-in method

    return {ep.name: ep for ep in entry_points(group=ENTRY_POINT_GROUP)}


def infos() -> dict[str, catalogue.MethodInfo]:
    """Name -> :class:`methods.catalogue.MethodInfo` of every registered method: the built-ins
    from the catalogue (no kernel imported), the entry points loaded and described."""
    found = dict(catalogue.builtin())
    for name, ep in _entry_points().items():
        if name in found:
            raise RuntimeError(f"entry point {name!r} ({ENTRY_POINT_GROUP}) shadows a built-in method")
        found[name] = catalogue.describe(_load_entry_point(name), ep.value)
    return found


def names(kind: str | None = None, inputs: tuple[str, ...] | None = ("tables",)) -> list[str]:
    """Registered method names (optionally only ``fixed`` or ``sequential``) that decide from
    the data ``inputs`` names: by default from tables alone, so a loop that runs every method
    on simulated tables gets the methods it can run; ``("tables", "judge_calibration")`` adds
    the judge-corrected methods (``methods.judged``), ``None`` lists every method."""
    return sorted(n for n, m in infos().items() if (kind is None or m.kind == kind)
                  and (inputs is None or set(m.inputs) <= set(inputs)))


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
    base, level = _split_calibrated(name)
    if level is not None:
        try:
            return get(base).calibrated(level)
        except ValueError as exc:
            raise KeyError(f"method {name!r}: {exc}") from None
    if ":" in name:
        return _by_reference(name)
    builtin = catalogue.builtin().get(name)
    if builtin is not None:
        return importlib.import_module(builtin.module).METHOD
    if name in _entry_points():
        return _load_entry_point(name)
    raise KeyError(_unknown(name))


def _unknown(name: str) -> str:
    return (f"unknown method {name!r}; registered methods: {', '.join(sorted(infos()))} "
            "(or give package.module:ATTR)")


def _split_calibrated(name: str) -> tuple[str, float | None]:
    """``(base name, nominal level)`` of ``NAME@alpha=LEVEL`` (level None without the suffix)."""
    if not isinstance(name, str) or not name:
        raise KeyError(f"a method name must be a non-empty string, got {name!r}")
    if CALIBRATED not in name:
        return name, None
    base, _, level = name.partition(CALIBRATED)
    try:
        return base, float(level)
    except ValueError:
        raise KeyError(f"method {name!r}: the calibrated level after {CALIBRATED!r} must be a number") from None


def info(name: str) -> catalogue.MethodInfo:
    """What :func:`get` would find, described without importing a built-in method's kernel
    (``simlab interval`` checks its input against it first); a reference or an entry point
    is loaded.  Errors are those of :func:`get`."""
    base, level = _split_calibrated(name)
    if level is not None:
        try:
            check_alpha(level)
        except ValueError as exc:
            raise KeyError(f"method {name!r}: {exc}") from None
    if ":" in base:
        method = _by_reference(base)
        return catalogue.describe(method, base.partition(":")[0])
    found = catalogue.builtin().get(base)
    if found is not None:
        return found
    if base in _entry_points():
        return catalogue.describe(_load_entry_point(base), _entry_points()[base].value)
    raise KeyError(_unknown(base))


def reference(method) -> str:
    """The string :func:`get` finds ``method`` by again (its name, or its ``module:ATTR``,
    with a calibrated level)."""
    base = method.origin or method.name
    level = getattr(method, "nominal_alpha", None)
    return base if level is None else f"{base}{CALIBRATED}{level!r}"
