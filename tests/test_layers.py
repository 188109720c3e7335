"""The layers (README, "Layout"), enforced on the source (imports inside functions included):

* imports point down only: simlab below methods below studies below evidence; only
  simlab/cli/, the front door, may import upward;
* no package imports another top-level package's private module (a dotted path with a
  component starting with one underscore), and no module imports a private *name* of
  another module (a private module may be imported only inside its own package);
* the front door imports methods, studies and evidence through their packages' public APIs
  only (``from studies.engine import run_study``: a package, and a name in its ``__all__``);
* no circle of imports among the project's modules;
* inside studies/ no chain of imports is longer than :data:`MAX_STUDIES_DEPTH` modules.
"""
from __future__ import annotations

import ast
import functools
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
LAYERS = {"simlab": 0, "methods": 1, "studies": 2, "evidence": 3}
FRONT_DOOR = ("simlab", "cli")
PUBLIC_API = ("methods", "studies", "evidence")
MAX_STUDIES_DEPTH = 8


def _module_name(path: Path, root: Path | None = None) -> tuple[str, ...]:
    parts = path.relative_to(root or ROOT).with_suffix("").parts
    return parts[:-1] if parts[-1] == "__init__" else parts


def _module_file(dotted: str, root: Path | None = None) -> Path | None:
    base = (root or ROOT).joinpath(*dotted.split("."))
    for p in (base.with_suffix(".py"), base / "__init__.py"):
        if p.is_file():
            return p
    return None


def imported(path: Path, root: Path | None = None) -> list[tuple[int, str, tuple[str, ...]]]:
    """``(line, dotted module, names)`` of every import in ``path`` (inside functions too;
    relative imports resolved against the module's package)."""
    tree = ast.parse(path.read_text(), filename=str(path))
    mod = _module_name(path, root)
    package = mod if path.name == "__init__.py" else mod[:-1]
    out = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            out.extend((node.lineno, a.name, ()) for a in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package[:len(package) - (node.level - 1)]
                target = ".".join(base + ((node.module,) if node.module else ()))
            else:
                target = node.module or ""
            out.append((node.lineno, target, tuple(a.name for a in node.names if a.name != "*")))
    return out


@functools.lru_cache(maxsize=None)
def _lazy_map(init: Path) -> dict[str, str]:
    """``name -> submodule`` of a package ``__init__`` that hands names on with
    ``lazy_loader.attach(..., submodules=[...], submod_attrs={...})``."""
    out: dict[str, str] = {}
    for node in ast.walk(ast.parse(init.read_text())):
        if isinstance(node, ast.Call) and getattr(node.func, "attr", "") == "attach":
            for kw in node.keywords:
                value = ast.literal_eval(kw.value)
                if kw.arg == "submod_attrs":
                    out.update({name: sub for sub, names in value.items() for name in names})
                elif kw.arg == "submodules":
                    out.update({sub: sub for sub in value})
    return out


def public_names(package: str, root: Path | None = None) -> set[str] | None:
    """A package's public names (``__all__`` literal, or its lazy map), or None if ``package``
    is no package."""
    init = (root or ROOT).joinpath(*package.split(".")) / "__init__.py"
    if not init.is_file():
        return None
    names = set(_lazy_map(init))
    for node in ast.walk(ast.parse(init.read_text())):
        if isinstance(node, ast.Assign) and any(getattr(t, "id", "") == "__all__" for t in node.targets):
            try:
                names |= set(ast.literal_eval(node.value))
            except ValueError:
                pass
    return names


def _sources(root: Path):
    for pkg in LAYERS:
        yield from sorted((root / pkg).rglob("*.py"))


def _private(part: str) -> bool:
    return part.startswith("_") and not part.startswith("__")


def violations(root: Path | None = None) -> list[str]:
    root = root or ROOT
    out: dict[str, str] = {}
    for path in _sources(root):
        mod = _module_name(path, root)
        rel = path.relative_to(root)
        here = mod[0]
        front_door = mod[:2] == FRONT_DOOR
        for line, target, names in imported(path, root):
            top = target.split(".")[0]
            if top not in LAYERS:
                continue
            key = f"{rel}:{line}"
            where = f"{rel}:{line} imports {target}" + (f" ({', '.join(names)})" if names else "")
            if top != here and LAYERS[top] > LAYERS[here] and not front_door:
                out.setdefault(key, f"upward: {where}")
            if top != here and any(_private(p) for p in target.split(".")[1:]):
                out.setdefault(key, f"private: {where}")
            for n in names:
                if not _private(n):
                    continue
                sub = _module_file(f"{target}.{n}", root)
                if sub is None:
                    out.setdefault(key, f"private name: {where}")
                elif top != here or tuple(target.split(".")) != tuple(mod[:len(target.split("."))]):
                    out.setdefault(key, f"private: {where}")
            if front_door and top in PUBLIC_API:
                public = public_names(target, root)
                if public is None:
                    out.setdefault(key, f"not public: {where} (a module, not a package's API)")
                else:
                    hidden = sorted(set(names) - public)
                    if hidden:
                        out.setdefault(key, f"not public: {where}: {', '.join(hidden)} not in {target}.__all__")
    return list(out.values())


def import_graph(root: Path | None = None) -> dict[str, set[str]]:
    """Project module -> the project modules it imports (a name handed on by a lazy package
    ``__init__`` counts as an import of the submodule that defines it)."""
    root = root or ROOT
    graph: dict[str, set[str]] = {}
    for path in _sources(root):
        me = ".".join(_module_name(path, root))
        edges = graph.setdefault(me, set())
        for _line, target, names in imported(path, root):
            if target.split(".")[0] not in LAYERS:
                continue
            init = root.joinpath(*target.split(".")) / "__init__.py"
            lazy = _lazy_map(init) if init.is_file() else {}
            for n in names or (None,):
                if n is not None and _module_file(f"{target}.{n}", root) is not None:
                    edges.add(f"{target}.{n}")
                elif n is not None and n in lazy:
                    edges.add(f"{target}.{lazy[n]}")
                elif _module_file(target, root) is not None:
                    edges.add(target)
        edges.discard(me)
    return graph


def circles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components with more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on: set[str] = set()
    out: list[list[str]] = []
    counter = [0]

    def visit(v: str) -> None:
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in graph.get(v, ()):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(sorted(comp))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return out


def longest_chain(graph: dict[str, set[str]], prefix: str) -> list[str]:
    """The longest import chain among modules under ``prefix`` (the graph must have no circle)."""
    inside = {v: {w for w in ws if w.startswith(prefix)} for v, ws in graph.items() if v.startswith(prefix)}

    @functools.lru_cache(maxsize=None)
    def chain(v: str) -> tuple[str, ...]:
        best: tuple[str, ...] = ()
        for w in inside.get(v, ()):
            c = chain(w)
            if len(c) > len(best):
                best = c
        return (v,) + best

    return list(max((chain(v) for v in inside), key=len, default=()))


def hidden_imports(graph: dict[str, set[str]], root: Path | None = None) -> list[str]:
    """Edges to a lazy package itself (``import studies.engine``, ``from studies import engine``):
    the names used through it are resolved at run time, so the graph would not see which
    submodule they come from -- nor the circles and chains through it."""
    root = root or ROOT
    lazy = {v for v in graph if (init := root.joinpath(*v.split(".")) / "__init__.py").is_file() and _lazy_map(init)}
    return sorted(f"{v} -> {w}" for v, ws in graph.items() for w in ws if w in lazy)


def test_imports_point_down_stay_public_and_use_public_apis():
    bad = violations()
    assert not bad, "layer violations:\n" + "\n".join(bad)


def test_no_circle_of_imports():
    found = circles(import_graph())
    assert not found, "import circles:\n" + "\n".join(" <-> ".join(c) for c in found)


def test_no_import_goes_through_a_lazy_package_unresolved():
    found = hidden_imports(import_graph())
    assert not found, "import a name from the package instead:\n" + "\n".join(found)


def test_studies_import_chains_are_short():
    chain = longest_chain(import_graph(), "studies")
    assert len(chain) <= MAX_STUDIES_DEPTH, " -> ".join(chain)


@pytest.mark.parametrize("source, rel, expect", [
    ("import studies.engine.runner\n", "simlab/x.py", "upward"),
    ("from methods.fixed._moments import X\n", "studies/x.py", "private"),
    ("from methods.fixed import _moments\n", "studies/x.py", "private"),
    ("def f():\n    from evidence import ledger\n", "methods/x.py", "upward"),
    ("from methods.fixed.paired_wald import _helper\n", "methods/fixed/other.py", "private name"),
    ("from studies.engine.runner import run_study\n", "simlab/cli/x.py", "not public"),
    ("from studies.engine import secret\n", "simlab/cli/x.py", "not public"),
    ("from ..runner import run_study\n", "studies/bench/x.py", None),
    ("from studies.engine import run_study\n", "simlab/cli/x.py", None),
    ("from methods.fixed import _moments\n", "methods/fixed/x.py", None),
])
def test_the_checker_catches_what_it_should(tmp_path, source, rel, expect):
    """The checker itself, on a throwaway tree: what it should report is reported, what is
    allowed is not."""
    for d in ("methods/fixed", "studies/engine", "studies/bench", "simlab/cli"):
        (tmp_path / d).mkdir(parents=True, exist_ok=True)
    (tmp_path / "methods/fixed/_moments.py").write_text("X = 1\n")
    (tmp_path / "methods/fixed/paired_wald.py").write_text("_helper = 1\n")
    (tmp_path / "studies/engine/__init__.py").write_text(
        'import lazy_loader as _lazy\n__getattr__, __dir__, __all__ = _lazy.attach(__name__, '
        'submod_attrs={"runner": ["run_study"]})\n')
    (tmp_path / "studies/engine/runner.py").write_text("def run_study(): pass\n")
    p = tmp_path / rel
    p.write_text(source)
    found = violations(tmp_path)
    if expect is None:
        assert found == []
    else:
        assert len(found) == 1 and found[0].startswith(expect), found


def test_a_wholesale_import_of_a_lazy_package_is_found(tmp_path):
    (tmp_path / "studies/engine").mkdir(parents=True)
    (tmp_path / "studies/engine/__init__.py").write_text(
        'import lazy_loader as _lazy\n__getattr__, __dir__, __all__ = _lazy.attach(__name__, '
        'submod_attrs={"runner": ["run_study"]})\n')
    (tmp_path / "studies/engine/runner.py").write_text("def run_study(): pass\n")
    (tmp_path / "studies/a.py").write_text("from studies import engine\n")
    (tmp_path / "studies/b.py").write_text("from studies.engine import run_study\n")
    assert hidden_imports(import_graph(tmp_path), tmp_path) == ["studies.a -> studies.engine"]


def test_circles_and_chains_are_found():
    g = {"studies.a": {"studies.b"}, "studies.b": {"studies.c"}, "studies.c": {"studies.a"}, "studies.d": set()}
    assert circles(g) == [["studies.a", "studies.b", "studies.c"]]
    assert longest_chain({"studies.a": {"studies.b"}, "studies.b": {"studies.c"}, "studies.c": set()},
                         "studies") == ["studies.a", "studies.b", "studies.c"]
