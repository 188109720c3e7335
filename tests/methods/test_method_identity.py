"""A method's identity hashes every file that defines it: an edit to any of them must make
its qualification records stale."""
from __future__ import annotations

import inspect
import sys
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
