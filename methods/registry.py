"""Registry of decision methods: every module in ``methods/fixed`` (and
``methods/sequential``) that defines ``METHOD`` is registered under its name.

Modules are named after their method, so ``get`` imports just that module (loading every
kernel costs seconds); listing, or a name no module carries, scans them all."""
from __future__ import annotations

import importlib
import pkgutil
from functools import lru_cache


_PACKAGES = ["methods.fixed", "methods.sequential"]


@lru_cache(maxsize=1)
def _all() -> dict[str, object]:
    found: dict[str, object] = {}
    for pkg_name in _PACKAGES:
        try:
            pkg = importlib.import_module(pkg_name)
        except ModuleNotFoundError:
            continue
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


def names(kind: str | None = None) -> list[str]:
    """Registered method names (optionally only ``fixed`` or ``sequential``)."""
    return sorted(n for n, m in _all().items() if kind is None or m.kind == kind)


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


def get(name: str):
    """Look a method up by name; an unknown name is an error listing the known ones."""
    if isinstance(name, str) and name.isidentifier() and not name.startswith("_"):
        method = _by_module(name)
        if method is not None:
            return method
    methods = _all()
    if name not in methods:
        raise KeyError(f"unknown method {name!r}; registered methods: {', '.join(sorted(methods))}")
    return methods[name]
