"""The layers of DESIGN.md, enforced: imports point down only (simlab below methods below
studies below evidence; only simlab/cli/, the front door, may import upward) and no
package imports another top-level package's private module (a dotted path with a
component starting with one underscore)."""
from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
LAYERS = {"simlab": 0, "methods": 1, "studies": 2, "evidence": 3}
FRONT_DOOR = ("simlab", "cli")


def _module_name(path: Path) -> tuple[str, ...]:
    parts = path.relative_to(ROOT).with_suffix("").parts
    return parts[:-1] if parts[-1] == "__init__" else parts


def imports_of(path: Path) -> list[tuple[int, str]]:
    """``(line, dotted module)`` of every import in ``path`` (inside functions too;
    relative imports resolved against the module's package; ``from a import b`` also
    yields ``a.b``, which may be a module)."""
    tree = ast.parse(path.read_text(), filename=str(path))
    mod = _module_name(path)
    package = mod if path.name == "__init__.py" else mod[:-1]
    out = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            out.extend((node.lineno, a.name) for a in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package[:len(package) - (node.level - 1)]
                target = ".".join(base + ((node.module,) if node.module else ()))
            else:
                target = node.module or ""
            out.append((node.lineno, target))
            out.extend((node.lineno, f"{target}.{a.name}") for a in node.names if a.name != "*")
    return out


def _sources():
    for pkg in LAYERS:
        yield from sorted((ROOT / pkg).rglob("*.py"))


def _private(dotted: str) -> bool:
    return any(p.startswith("_") and not p.startswith("__") for p in dotted.split(".")[1:])


def violations() -> list[str]:
    out = []
    for path in _sources():
        mod = _module_name(path)
        here = mod[0]
        front_door = mod[:2] == FRONT_DOOR
        for line, target in imports_of(path):
            top = target.split(".")[0]
            if top not in LAYERS or top == here:
                continue
            where = f"{path.relative_to(ROOT)}:{line} imports {target}"
            if LAYERS[top] > LAYERS[here] and not front_door:
                out.append((f"upward: {path.relative_to(ROOT)}:{line}", where))
            if _private(target):
                out.append((f"private: {path.relative_to(ROOT)}:{line}", where))
    seen: dict[str, str] = {}
    for kind_line, where in out:  # one report per statement (``from a import b`` checks a and a.b)
        seen.setdefault(kind_line, f"{kind_line.split(':')[0]}: {where}")
    return list(seen.values())


def test_imports_point_down_and_stay_public():
    bad = violations()
    assert not bad, "layer violations:\n" + "\n".join(bad)


@pytest.mark.parametrize("source, rel, expect", [
    ("import studies.engine.runner\n", "simlab/x.py", "upward"),
    ("from methods.fixed._moments import X\n", "studies/x.py", "private"),
    ("from methods.fixed import _moments\n", "studies/x.py", "private"),
    ("def f():\n    from evidence import ledger\n", "methods/x.py", "upward"),
    ("from ..runner import run_study\n", "studies/bench/x.py", None),
    ("from studies.engine.runner import run_study\n", "simlab/cli/x.py", None),
    ("from methods.fixed._moments import X\n", "methods/x.py", None),
])
def test_the_checker_catches_what_it_should(tmp_path, monkeypatch, source, rel, expect):
    """The checker itself: an upward or private import in a throwaway tree is reported,
    allowed ones are not."""
    monkeypatch.setitem(globals(), "ROOT", tmp_path)
    p = tmp_path / rel
    p.parent.mkdir(parents=True, exist_ok=True)
    p.write_text(source)
    found = violations()
    if expect is None:
        assert found == []
    else:
        assert len(found) == 1 and found[0].startswith(expect), found
