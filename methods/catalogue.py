"""The built-in methods' metadata, read without importing a kernel.

Importing a method module loads numba, numpy and often scipy (seconds on a small machine), so
listing the registry by importing every module made ``simlab methods`` and every "unknown
method" error slow.  ``catalogue.json`` beside this file holds what a listing and an input
check need -- name, module, kind, estimand, version, inputs, options and their named choices,
citation, summary, the guarantee the method declares, how it is calibrated, its default inner
method, whether the GPU path runs it -- written from the registry itself::

    python -m methods.catalogue          # rewrite methods/catalogue.json

``tests/methods/test_catalogue.py`` compares the file with what the imported methods report,
so it cannot drift unnoticed.  A module of ``methods/fixed`` or ``methods/sequential`` that the
file does not list yet (a method added since it was written) is imported and described at run
time, and an entry whose module is gone is dropped: the catalogue is never the reason a method
goes missing.  ``methods.registry`` loads a method's kernel module only when it is used.
"""
from __future__ import annotations

import importlib
import json
import pkgutil
import sys
from dataclasses import asdict, dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any

from methods.conventions import OptionRange

PACKAGES = ("methods.fixed", "methods.sequential")
PATH = Path(__file__).with_name("catalogue.json")


@dataclass(frozen=True)
class MethodInfo:
    """What the registry knows of a method without running it (``simlab methods``)."""
    name: str
    module: str            # where ``METHOD`` is defined (a built-in) or found (an entry point, a reference)
    kind: str              # "fixed" or "sequential"
    estimand: str
    version: str
    inputs: tuple[str, ...]
    options: dict[str, float]
    choices: dict[str, dict[str, float]]
    ranges: dict[str, OptionRange]
    citation: str
    summary: str
    guarantee: str | None  # "theorem" when the method declares a finite-sample theorem, else None
    calibration: str | None
    inner: str | None      # the default inner fixed-sample method of a sequential wrapper
    gpu: bool = False      # decides from cluster moments with the kernel ``methods.gpu`` mirrors

    def as_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d["inputs"] = list(self.inputs)
        d["ranges"] = {k: r.as_json() for k, r in self.ranges.items()}
        return d


def describe(method: Any, module: str) -> MethodInfo:
    """The catalogue entry of a loaded method object."""
    inner = getattr(method, "inner", None)
    return MethodInfo(
        name=method.name, module=module, kind=method.kind, estimand=getattr(method.estimand, "value", method.estimand),
        version=method.version, inputs=tuple(method.inputs), options={k: float(v) for k, v in method.options.items()},
        choices={k: {c: float(v) for c, v in cs.items()} for k, cs in method.choices.items()},
        ranges={k: OptionRange(*r) for k, r in getattr(method, "ranges", {}).items()},
        citation=method.citation, summary=method.summary,
        guarantee="theorem" if getattr(method, "theorem", None) is not None else None,
        calibration=getattr(method, "calibration", None), inner=None if inner is None else inner.name,
        gpu=_runs_on_gpu(method))


def gpu_refusal(names: list[str]) -> str:
    """Why the GPU path cannot run ``names`` (methods whose catalogue entry says ``gpu=False``)."""
    able = ", ".join(sorted(n for n, e in builtin().items() if e.gpu))
    return f"methods {names} need tables; the GPU runs the cluster-moment methods ({able}) only"


def _runs_on_gpu(method: Any) -> bool:
    from methods.gpu import supports   # numba's CUDA module: imported only where a method is described

    return supports(method)


def _from_dict(d: dict[str, Any]) -> MethodInfo:
    return MethodInfo(**{**d, "inputs": tuple(d["inputs"]),
                         "ranges": {k: OptionRange.from_json(r) for k, r in d.get("ranges", {}).items()}})


def modules() -> list[str]:
    """The public modules of the method packages, found on disk (nothing is imported but the
    two package ``__init__`` files)."""
    found = []
    for pkg_name in PACKAGES:
        pkg = importlib.import_module(pkg_name)
        found += [f"{pkg_name}.{info.name}" for info in pkgutil.iter_modules(pkg.__path__)
                  if not info.name.startswith("_")]
    return sorted(found)


def _load(module: str) -> MethodInfo | None:
    method = getattr(importlib.import_module(module), "METHOD", None)
    return None if method is None else describe(method, module)


def build() -> dict[str, MethodInfo | None]:
    """Every built-in module and the method it defines (None: a helper module such as
    ``methods.sequential.boundaries``), by importing them all (what the file must equal)."""
    return {module: _load(module) for module in modules()}


def _read(path: Path = PATH) -> dict[str, MethodInfo | None]:
    data = json.loads(path.read_text(encoding="utf-8"))
    return {module: None if d is None else _from_dict(d) for module, d in data["modules"].items()}


@lru_cache(maxsize=1)
def builtin() -> dict[str, MethodInfo]:
    """Name -> entry of every built-in method: from the file, with modules it does not list
    imported and described, and entries of vanished modules dropped (module docstring)."""
    try:
        stored = _read(PATH)
    except FileNotFoundError:
        stored = {}
    entries = {m: (stored[m] if m in stored else _load(m)) for m in modules()}
    found: dict[str, MethodInfo] = {}
    for info in entries.values():
        if info is None:
            continue
        if info.name in found:
            raise RuntimeError(f"two methods are named {info.name!r}")
        found[info.name] = info
    return found


def write(path: Path = PATH) -> Path:
    """Rewrite the catalogue from the imported methods."""
    entries = build()
    names = [e.name for e in entries.values() if e is not None]
    if len(names) != len(set(names)):
        raise RuntimeError(f"two methods share a name: {sorted(n for n in names if names.count(n) > 1)}")
    data = {"about": "written by `python -m methods.catalogue` from the registry; tests/methods/test_catalogue.py "
                     "checks it against the imported methods",
            "modules": {m: None if e is None else e.as_dict() for m, e in entries.items()}}
    path.write_text(json.dumps(data, indent=1, sort_keys=True) + "\n", encoding="utf-8")
    return path


if __name__ == "__main__":
    print(write(Path(sys.argv[1]) if len(sys.argv) > 1 else PATH))


__all__ = ["MethodInfo", "PATH", "build", "builtin", "describe", "modules", "write"]
