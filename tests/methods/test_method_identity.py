"""A method's identity hashes every file that defines it: an edit to any of them must make
its qualification records stale."""
from __future__ import annotations

import contextlib
import inspect
import sys
import types
from pathlib import Path

import pytest

from methods import registry


@pytest.mark.parametrize("name", registry.names())
def test_source_files_include_the_method_module_and_the_protocol(name):
    m = registry.get(name)
    module = sys.modules[f"methods.{m.kind}.{name}"]
    files = {str(Path(p).resolve()) for p in m.source_files}
    assert str(Path(inspect.getsourcefile(module)).resolve()) in files
    assert all(Path(p).is_file() for p in files)
    assert any(p.endswith(str(Path("methods", "protocol.py"))) or p.endswith(str(Path("sequential", "base.py")))
               for p in files)
    # and the kernel's own file, wherever the kernel lives (wrappers run their inner method's)
    if m.kernel is not None:
        assert str(Path(inspect.getsourcefile(m.kernel.py_func)).resolve()) in files


def _code_names(code) -> set[str]:
    names = set(code.co_names)
    for c in code.co_consts:
        if isinstance(c, types.CodeType):
            names |= _code_names(c)
    return names


def _project_files_reached(*fns) -> set[str]:
    """Project source files of every function (numba dispatchers by their ``py_func``) that
    ``fns`` reach through the names their code uses: module globals, attributes of imported
    modules (``_common.decide``) and closures -- what a kernel compiles in."""
    root = Path(__file__).resolve().parents[2]
    seen, files, stack = set(), set(), list(fns)
    while stack:
        f = stack.pop()
        f = getattr(f, "py_func", f)
        if not inspect.isfunction(f) or f in seen:
            continue
        seen.add(f)
        path = Path(inspect.getsourcefile(f)).resolve()
        if root in path.parents and ".venv" not in path.parts and "site-packages" not in path.parts:
            files.add(str(path))
        names = _code_names(f.__code__)
        for n in names:
            obj = f.__globals__.get(n)
            found = [getattr(obj, a, None) for a in names] if isinstance(obj, types.ModuleType) else [obj]
            stack += [o for o in found if inspect.isfunction(o) or hasattr(o, "py_func")]
        for cell in f.__closure__ or ():
            with contextlib.suppress(ValueError):
                stack.append(cell.cell_contents)
    return files


@pytest.mark.parametrize("name", registry.names())
def test_identity_hashes_every_project_file_the_kernel_reaches(name):
    """A helper module (``methods/fixed/_bootstrap.py``) or simlab function
    (``simlab/rng.py``'s stream) compiled into the kernel is part of what was qualified: an
    edit to it must make the records stale, so its file must be hashed."""
    m = registry.get(name)
    entry = [f for f in (getattr(m, a, None) for a in ("kernel", "prepare", "evaluate")) if f is not None]
    entry = [getattr(f, "py_func", f) for f in entry]
    files = {str(Path(p).resolve()) for p in m.source_files}
    assert _project_files_reached(*entry) - files == set()
