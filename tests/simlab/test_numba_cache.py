"""numba's cache is keyed on every kernel source: editing a shared helper that a kernel
inlines (not the kernel's own file) recompiles instead of loading stale machine code."""
from __future__ import annotations

import ast
import os
import shutil
import subprocess
import sys
from pathlib import Path

from simlab import numba_cache

ROOT = Path(__file__).resolve().parents[2]


def _copy_sources(dest: Path) -> Path:
    for pkg in ("simlab", "methods"):
        shutil.copytree(ROOT / pkg, dest / pkg, ignore=shutil.ignore_patterns("__pycache__"))
    return dest


def test_digest_moves_with_any_kernel_source(tmp_path):
    src = _copy_sources(tmp_path / "src")
    before = numba_cache.source_digest(src)
    helper = src / "methods" / "fixed" / "_common.py"
    helper.write_text(helper.read_text() + "\n# an edit\n")
    assert numba_cache.source_digest(src) != before


def test_digest_ignores_the_front_door(tmp_path):
    """Editing a command (simlab/cli: no kernel there) keeps the compiled kernels; the
    front door really holds none."""
    src = _copy_sources(tmp_path / "src")
    before = numba_cache.source_digest(src)
    command = src / "simlab" / "cli" / "demo.py"
    command.write_text(command.read_text() + "\n# an edit\n")
    assert numba_cache.source_digest(src) == before
    for path in (ROOT / "simlab" / "cli").rglob("*.py"):
        tree = ast.parse(path.read_text())
        imported = {a.name for n in ast.walk(tree) if isinstance(n, ast.Import) for a in n.names}
        imported |= {n.module or "" for n in ast.walk(tree) if isinstance(n, ast.ImportFrom)}
        assert not {m for m in imported if m.split(".")[0] == "numba"}, path


def test_configure_nests_under_a_given_cache_dir(monkeypatch, tmp_path):
    monkeypatch.setenv("NUMBA_CACHE_DIR", str(tmp_path))
    monkeypatch.delenv("SIMLAB_NUMBA_CACHE", raising=False)
    d = numba_cache.configure()
    assert Path(d).parent == tmp_path and Path(d).name == "simlab-" + numba_cache.source_digest()[:16]
    assert numba_cache.configure() == d  # idempotent (child processes inherit it)


def test_editing_an_inlined_helper_recompiles(tmp_path):
    src = _copy_sources(tmp_path / "src")
    env = {**os.environ, "PYTHONPATH": str(src), "NUMBA_CACHE_DIR": str(tmp_path / "cache")}
    env.pop("SIMLAB_NUMBA_CACHE", None)
    code = ("from methods import registry; "
            "print(registry.get('paired_wald').analyze([[10, 0, 0, 0]], 0.03).status)")

    def status() -> str:
        r = subprocess.run([sys.executable, "-c", code], env=env, cwd=tmp_path, capture_output=True, text=True,
                           timeout=300)
        assert r.returncode == 0, r.stderr
        return r.stdout.strip()

    assert status() == "pass"      # zero discordance: Wald's zero-variance pass
    assert status() == "pass"      # loaded from the cache
    helper = src / "methods" / "fixed" / "_common.py"
    text = helper.read_text()
    edited = text.replace("return PASS if lower >= -margin else FAIL", "return FAIL")
    assert edited != text
    helper.write_text(edited)      # the kernel's own file (paired_wald.py) is untouched
    assert status() == "fail"


_CLOSURE_PROBE = """
import json, sys
import numpy as np
from methods import registry
tables = np.array([[[10, 1, 2, 5], [8, 2, 1, 6], [7, 0, 3, 4]]], np.int32)
out = {}
for name in sys.argv[1:]:
    m = registry.get(name)
    lower = m.decide(tables, 0.05, 0.025)
    s = m.kernel.stats
    out[name] = {"hits": sum(s.cache_hits.values()), "misses": sum(s.cache_misses.values()),
                 "result": repr(lower)}
print(json.dumps(out))
"""
_FACTORY_KERNELS = ("paired_wald", "tango_score", "obuchowski", "cluster_robust", "cluster_bootstrap")


def test_factory_kernels_load_from_the_cache_in_the_next_process(tmp_path):
    """A kernel made by a factory (a closure over the method's own jitted functions) is
    compiled by the first process and loaded, not compiled again, by the next one (numba
    keyed it on a random uuid: every process recompiled), with the same decisions; two
    closures of one factory (paired_wald, tango_score) keep separate cache entries."""
    env = {**os.environ, "NUMBA_CACHE_DIR": str(tmp_path)}
    runs = []
    for _ in range(2):
        proc = subprocess.run([sys.executable, "-c", _CLOSURE_PROBE, *_FACTORY_KERNELS], cwd=ROOT, env=env,
                              capture_output=True, text=True, timeout=600)
        assert proc.returncode == 0, proc.stderr
        runs.append(__import__("json").loads(proc.stdout))
    first, second = runs
    for name in _FACTORY_KERNELS:
        assert first[name]["misses"] >= 1, (name, first[name])
        assert second[name] == {**first[name], "hits": second[name]["hits"], "misses": 0}, (name, second[name])
        assert second[name]["hits"] >= 1, (name, second[name])
    assert first["paired_wald"]["result"] != first["tango_score"]["result"]


def test_closure_keys_tell_captured_functions_apart():
    from methods import registry

    keys = {n: numba_cache._describe(registry.get(n).kernel) for n in ("paired_wald", "tango_score", "bonett_price")}
    assert len(set(keys.values())) == 3
    assert numba_cache._describe(registry.get("paired_wald").kernel) == keys["paired_wald"]


def test_is_compiled_tells_a_first_use_from_a_loaded_kernel():
    """A jitted function with no machine code here and no cache entry compiles on first use;
    after one call it has machine code."""
    import numba as nb

    f = nb.njit(lambda x: x + 1)   # not cached on disk
    assert not numba_cache.is_compiled(f)
    assert f(1) == 2 and numba_cache.is_compiled(f)
    assert numba_cache.is_compiled(len)   # not a jitted function: nothing to compile


def test_interval_announces_a_first_use_compile_and_not_a_cached_one(tmp_path):
    """With an empty cache, ``simlab interval`` says while it waits that it compiles the method's
    kernel (a silent minute-long wait otherwise) and names it in --json; the next process loads
    it from the cache and says nothing."""
    import json

    env = {**os.environ, "NUMBA_CACHE_DIR": str(tmp_path / "cache")}
    env.pop("SIMLAB_NUMBA_CACHE", None)
    # announced at once here (a command waits a second first, so that a quick compile says nothing)
    code = ("import sys; import simlab.cli._args as a; a.COMPILE_NOTICE_AFTER = 0.0; from simlab.cli import main; "
            "sys.exit(main(sys.argv[1:]))")
    cmd = [sys.executable, "-c", code, "interval", "--method", "paired_wald", "--table", "3,1,0,1", "--json"]

    def run() -> tuple[dict, str]:
        r = subprocess.run(cmd, env=env, cwd=ROOT, capture_output=True, text=True, timeout=300)
        assert r.returncode == 0, r.stderr
        return json.loads(r.stdout), r.stderr

    first, said = run()
    assert first["compiled_first"] == ["paired_wald.kernel"]
    assert "compiling 1 kernel first (paired_wald.kernel)" in said
    second, said = run()
    assert second["compiled_first"] == [] and "compiling" not in said
    assert {k: v for k, v in first.items() if k != "compiled_first"} == \
        {k: v for k, v in second.items() if k != "compiled_first"}
