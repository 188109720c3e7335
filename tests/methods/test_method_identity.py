"""A method's identity covers the code its decisions run through (``methods.identity``): a
comment, a docstring, a moved file or another import style changes no identity; any change
to executed code -- in the kernel, in a helper it inlines, in a constant it reads, in the
protocol that runs it -- does."""
from __future__ import annotations

import importlib.util
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from methods import registry
from methods.identity import reached_names
from methods.protocol import Estimand, FixedMethod

HELPER = '''
"""A helper module."""
import math

SCALE = 2.0


def half_width(x, n):
    """Docstring of the helper."""
    return SCALE * math.sqrt(x / n)  # a comment
'''

METHOD = '''
"""A method module."""
import numpy as np

import {helper}
from {helper} import half_width

LIMIT = 0.5


def prepare(method, alpha, margin, tables):
    return np.array([alpha])


def kernel(tables, margin, consts, lower, upper, estimate, status):
    """Kernel docstring."""
    for r in range(tables.shape[0]):
        n = tables[r].sum()
        d = (tables[r, :, 2].sum() - tables[r, :, 1].sum()) / n
        h = {call}(LIMIT, n)
        estimate[r] = d
        lower[r] = d - h
        upper[r] = d + h
        status[r] = 1 if lower[r] >= -margin else 0
'''


def _load(directory: Path, name: str, text: str):
    path = directory / f"{name}.py"
    path.write_text(textwrap.dedent(text))
    spec = importlib.util.spec_from_file_location(name, path)
    mod = importlib.util.module_from_spec(spec)
    sys.modules[name] = mod
    spec.loader.exec_module(mod)
    return mod


def _method(tmp_path: Path, tag: str, helper: str = HELPER, method: str = METHOD, call: str = "half_width",
            subdir: str = "a") -> FixedMethod:
    d = tmp_path / subdir
    d.mkdir(parents=True, exist_ok=True)
    h = f"helper_{tag}"
    _load(d, h, helper)
    mod = _load(d, f"method_{tag}", method.format(helper=h, call=call.format(helper=h)))
    return FixedMethod(name="toy", version="1", estimand=Estimand.TRIAL, citation="-", summary="-",
                       kernel=mod.kernel, prepare=mod.prepare)


def test_comments_docstrings_moves_and_import_style_change_no_identity(tmp_path):
    base = _method(tmp_path, "base").identity
    commented = HELPER.replace('"""Docstring of the helper."""', '"""Another docstring."""\n    # more words')
    assert _method(tmp_path, "doc", helper=commented).identity == base
    moved = _method(tmp_path, "moved", subdir="elsewhere/deeper")
    assert moved.identity == base
    # the same helper reached through its module instead of a from-import
    assert _method(tmp_path, "attr", call="{helper}.half_width").identity == base
    blank = METHOD.replace("    for r in", "\n    # loop over replications\n    for r in")
    assert _method(tmp_path, "blank", method=blank).identity == base
    # a helper renamed (and every call to it) is the same code
    renamed_helper = HELPER.replace("def half_width(", "def interval_half_width(")
    renamed_call = METHOD.replace("from {helper} import half_width", "from {helper} import interval_half_width")
    assert _method(tmp_path, "renamed", helper=renamed_helper, method=renamed_call,
                   call="interval_half_width").identity == base


@pytest.mark.parametrize("edit", [
    ("helper", "SCALE = 2.0", "SCALE = 2.5"),                                  # a constant a helper reads
    ("helper", "math.sqrt(x / n)", "math.sqrt(x / (n + 1))"),                 # a helper's arithmetic
    ("method", "LIMIT = 0.5", "LIMIT = 0.25"),                                # a constant the kernel reads
    ("method", "lower[r] >= -margin", "lower[r] > -margin"),                  # the decision rule
    ("method", "np.array([alpha])", "np.array([alpha / 2])"),                # prepare
])
def test_any_change_to_executed_code_changes_the_identity(tmp_path, edit):
    base = _method(tmp_path, "base").identity
    where, old, new = edit
    helper = HELPER.replace(old, new) if where == "helper" else HELPER
    method = METHOD.replace(old, new) if where == "method" else METHOD
    assert (helper, method) != (HELPER, METHOD)
    changed = _method(tmp_path, "changed", helper=helper, method=method).identity
    assert changed.source_sha256 != base.source_sha256


def test_options_version_and_the_protocol_are_part_of_the_identity(tmp_path):
    m = _method(tmp_path, "base")
    assert "FixedMethod.batch" in reached_names(m.decision_roots())
    assert "half_width" in reached_names(m.decision_roots())
    import dataclasses
    assert dataclasses.replace(m, version="2").identity != m.identity
    assert dataclasses.replace(m, options={"x": 1.0}).identity != m.identity


@pytest.mark.parametrize("name", registry.names())
def test_every_registered_method_reaches_its_kernel_and_protocol(name):
    m = registry.get(name)
    names = reached_names(m.decision_roots())
    protocol = "SequentialMethod.batch" if m.sequential else "FixedMethod.batch"
    assert protocol in names
    for attr in ("kernel", "moments_kernel", "prepare"):
        f = getattr(m, attr, None)
        if f is not None:
            assert getattr(getattr(f, "py_func", f), "__qualname__") in names


def test_identities_are_the_same_in_a_fresh_process():
    """No memory address or run-time state leaks into an identity."""
    here = {n: registry.get(n).identity.source_sha256 for n in registry.names()}
    code = ("import json; from methods import registry; "
            "print(json.dumps({n: registry.get(n).identity.source_sha256 for n in registry.names()}))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                         cwd=Path(__file__).resolve().parents[2])
    import json
    assert json.loads(out.stdout.strip().splitlines()[-1]) == here
