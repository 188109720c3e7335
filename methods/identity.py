"""A method's implementation identity: a hash of the code its decisions depend on.

The identity must change whenever executed code that can change a decision changes, and
must not change when nothing executed does: a comment, a docstring, a moved or renamed file,
an import written another way.  So it hashes *code*, not files:

1. **Roots.** The method object names the callables its decisions run through
   (``DecisionMethod.decision_roots``): its kernel(s), ``prepare``, and the protocol
   methods that call them (``batch``, ``analyze``...).
2. **Reach.** From each root the walk follows every global name the function's code loads
   (``co_names`` resolved in its globals and closure): a function, a numba dispatcher (its
   Python source), a class (its body) or a module attribute defined in code outside the
   libraries of :data:`EXTERNAL` is reached in turn; a number, string or array constant is
   taken by value; a library object (``np.sqrt``, ``scipy.stats.norm``) by its dotted name.
3. **Normal form.** Each reached function or class is parsed (``ast``), docstrings are
   removed (comments never reach the AST), its own name is dropped, every resolved global
   reference is replaced by what it resolves to -- the *hash* of the referenced code (so a
   renamed or moved helper is the same helper), a library object's dotted name
   (``<ext:math.sqrt>``) or a constant's value -- and the tree is dumped without positions
   (``ast.dump``).  The identity is the sha256 of the roots' hashes, with the method's name,
   version, options and the identity of a wrapped inner method.

What it cannot see: code reached only through ``getattr`` with a computed name, ``eval``,
or attributes of objects passed in at run time (``self.kernel`` is a root for that reason).
Library versions are recorded beside the identity (``software`` of a record), not in it.
"""
from __future__ import annotations

import ast
import hashlib
import inspect
import re
import sys
import textwrap
import types
from functools import lru_cache
from typing import Any, Iterable

import numpy as np

EXTERNAL = frozenset({"numpy", "scipy", "numba", "statsmodels", "pydantic", "rfc8785", "xarray", "cryptography",
                      "llvmlite", "pandas", "joblib"}) | frozenset(sys.stdlib_module_names)
_CONSTANT_TYPES = (bool, int, float, complex, str, bytes, type(None))


def _top(module_name: str | None) -> str:
    return (module_name or "").split(".")[0]


def _unwrap(obj: Any) -> Any:
    """The Python object whose code runs: a numba dispatcher's ``py_func``, a bound method's
    function, a staticmethod's function."""
    for attr in ("py_func", "__func__"):
        inner = getattr(obj, attr, None)
        if inner is not None and (inspect.isfunction(inner) or inspect.ismethod(inner)):
            obj = inner
    if isinstance(obj, (staticmethod, classmethod)):
        obj = obj.__func__
    wrapped = getattr(obj, "__wrapped__", None)   # functools.wraps, lru_cache
    if wrapped is not None and not _is_external(obj):
        return _unwrap(wrapped)
    return obj


def _is_external(obj: Any) -> bool:
    if isinstance(obj, types.ModuleType):
        return _top(obj.__name__) in EXTERNAL
    mod = getattr(obj, "__module__", None)
    if mod is None:
        mod = getattr(type(obj), "__module__", None)
    return _top(mod) in EXTERNAL or mod == "builtins"


def _constant(value: Any) -> ast.expr | None:
    """A value that is hashed as a constant, or None."""
    if isinstance(value, _CONSTANT_TYPES):
        return ast.Constant(value=value)
    if isinstance(value, np.generic):
        return ast.Constant(value=repr(value))
    if isinstance(value, np.ndarray):
        h = hashlib.sha256(np.ascontiguousarray(value).tobytes()).hexdigest()
        return ast.Constant(value=f"<array {value.dtype} {value.shape} {h}>")
    if isinstance(value, (tuple, frozenset)) and all(isinstance(v, _CONSTANT_TYPES) for v in value):
        return ast.Constant(value=repr(tuple(sorted(value, key=repr)) if isinstance(value, frozenset) else value))
    return None


def _local_names(code: types.CodeType) -> set[str]:
    names = set(code.co_varnames) | set(code.co_cellvars) | set(code.co_freevars)
    for c in code.co_consts:
        if isinstance(c, types.CodeType):
            names |= _local_names(c)
    return names


def _label(obj: Any) -> str:
    return getattr(obj, "__qualname__", type(obj).__qualname__)


class _Collector:
    """Collects what one object's normal form refers to: each reference is written as a
    token ``<ref:i>`` that :func:`_deep` replaces by the referenced code's own hash."""

    def __init__(self) -> None:
        self.refs: list[Any] = []

    def enqueue(self, obj: Any) -> str:
        self.refs.append(_unwrap(obj))
        return f"<ref:{len(self.refs) - 1}>"


_ANALYSED: dict[int, tuple[Any, str, tuple[Any, ...]]] = {}  # id -> (object kept alive, dump, refs)


def _analyse(obj: Any) -> tuple[str, tuple[Any, ...]]:
    """``(normal form, objects it refers to)`` of one reached object (cached: code does not
    change while the process runs)."""
    hit = _ANALYSED.get(id(obj))
    if hit is not None and hit[0] is obj:
        return hit[1], hit[2]
    col = _Collector()
    if inspect.isfunction(obj) or inspect.isclass(obj):
        dump = _dump_code(obj, col)
    elif isinstance(obj, types.ModuleType):
        dump = f"<module {obj.__name__}>"
    else:  # an instance of an internal class: its class's code and the names of its state
        col.enqueue(type(obj))
        state = getattr(obj, "__dict__", None)
        dump = f"<instance {type(obj).__qualname__} {sorted(state) if state is not None else ''}>"
    _ANALYSED[id(obj)] = (obj, dump, tuple(col.refs))
    return dump, tuple(col.refs)


def _reach(roots: Iterable[Any]) -> list[Any]:
    """Every object reached from ``roots`` (each once)."""
    seen: dict[int, Any] = {}
    queue = [_unwrap(r) for r in roots if r is not None]
    while queue:
        obj = queue.pop()
        if id(obj) not in seen:
            seen[id(obj)] = obj
            queue.extend(_analyse(obj)[1])
    return list(seen.values())


def _dump_code(obj: Any, col: _Collector) -> str:
    try:
        node = _source_node(obj)
    except (OSError, TypeError, SyntaxError) as exc:
        raise ValueError(f"cannot read the source of {_label(obj)!r}, so it cannot be part of a method identity "
                         f"({exc}); define it in a file") from None
    if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
        node.name = "_"  # a renamed or moved function is the same code; callers refer to it by content
    node = _Normaliser(col, _Scope.of(obj)).visit(node)
    return ast.dump(node, annotate_fields=True, include_attributes=False)


@lru_cache(maxsize=64)
def _file_tree(path: str) -> ast.Module:
    with open(path, encoding="utf-8") as f:
        return ast.parse(f.read())


def _source_node(obj: Any) -> ast.AST:
    """The AST of a function or class; a lambda is found in its file by its line (every
    lambda on that line, as one expression: the line's text is what identifies it)."""
    if inspect.isfunction(obj) and obj.__name__ == "<lambda>":
        line = obj.__code__.co_firstlineno
        found = [n for n in ast.walk(_file_tree(inspect.getsourcefile(obj))) if isinstance(n, ast.Lambda)
                 and n.lineno == line]
        if not found:
            raise OSError(f"no lambda on line {line}")
        return ast.Tuple(elts=found, ctx=ast.Load())
    tree = ast.parse(textwrap.dedent(inspect.getsource(obj)))
    return tree.body[0]


class _Scope:
    """Where the names a function's code loads resolve."""

    def __init__(self, globals_: dict, closure: dict, local: set[str]) -> None:
        self.globals, self.closure, self.local = globals_, closure, local

    @classmethod
    def of(cls, obj: Any) -> "_Scope":
        if inspect.isclass(obj):
            mod = sys.modules.get(obj.__module__)
            g = vars(mod) if mod is not None else {}
            local: set[str] = set()
            for v in vars(obj).values():
                f = _unwrap(v)
                if inspect.isfunction(f):
                    local |= _local_names(f.__code__)
            return cls(g, {}, local)
        code = obj.__code__
        closure = {}
        if obj.__closure__:
            for name, cell in zip(code.co_freevars, obj.__closure__):
                try:
                    closure[name] = cell.cell_contents
                except ValueError:  # an empty cell
                    pass
        return cls(obj.__globals__, closure, _local_names(code) - set(closure))

    def lookup(self, name: str) -> tuple[bool, Any]:
        if name in self.closure:
            return True, self.closure[name]
        if name in self.local:
            return False, None
        if name in self.globals:
            return True, self.globals[name]
        return False, None


class _Normaliser(ast.NodeTransformer):
    """Drop docstrings; replace resolved global references by what they resolve to."""

    def __init__(self, walker: _Collector, scope: _Scope) -> None:
        self.walker, self.scope = walker, scope

    def _strip_docstring(self, node):
        body = getattr(node, "body", None)
        if (isinstance(body, list) and body and isinstance(body[0], ast.Expr)
                and isinstance(body[0].value, ast.Constant) and isinstance(body[0].value.value, str)):
            node.body = body[1:] or [ast.Pass()]
        return node

    def visit_FunctionDef(self, node):
        self._strip_docstring(node)
        return self.generic_visit(node)

    visit_AsyncFunctionDef = visit_FunctionDef

    def visit_ClassDef(self, node):
        self._strip_docstring(node)
        return self.generic_visit(node)

    def _placeholder(self, value: Any) -> ast.expr:
        const = _constant(value)
        if const is not None:
            return const
        if _is_external(value):
            mod = value.__name__ if isinstance(value, types.ModuleType) else getattr(value, "__module__", "?")
            qual = "" if isinstance(value, types.ModuleType) else "." + getattr(value, "__qualname__",
                                                                                  type(value).__qualname__)
            return ast.Name(id=f"<ext:{_top(mod)}{qual}>", ctx=ast.Load())
        if isinstance(value, types.ModuleType):
            return ast.Name(id=f"<module {value.__name__}>", ctx=ast.Load())
        if isinstance(value, dict):
            return ast.Constant(value=repr(sorted((repr(k), repr(v)) for k, v in value.items())))
        return ast.Name(id=self.walker.enqueue(value), ctx=ast.Load())

    def _resolve_chain(self, node: ast.expr) -> tuple[bool, Any]:
        """Resolve ``a.b.c`` whose root ``a`` is a global: follow attributes through modules."""
        if isinstance(node, ast.Name):
            return self.scope.lookup(node.id)
        if isinstance(node, ast.Attribute):
            ok, base = self._resolve_chain(node.value)
            if ok and isinstance(base, types.ModuleType) and not _is_external(base) and hasattr(base, node.attr):
                return True, getattr(base, node.attr)
            if ok and _is_external(base) and hasattr(base, node.attr):
                return True, getattr(base, node.attr)
        return False, None

    def visit_Attribute(self, node):
        if isinstance(node.ctx, ast.Load):
            ok, value = self._resolve_chain(node)
            if ok:
                return self._placeholder(value)
        return self.generic_visit(node)

    def visit_Name(self, node):
        if isinstance(node.ctx, ast.Load):
            ok, value = self.scope.lookup(node.id)
            if ok:
                return self._placeholder(value)
        return node


_DEEP: dict[int, tuple[Any, str]] = {}
_REF = re.compile(r"<ref:(\d+)>")


def _deep(obj: Any, active: dict[int, int]) -> tuple[str, bool]:
    """``(hash, closed)``: sha256 of ``obj``'s normal form with every reference replaced by
    the referenced object's own hash, so names and places never enter an identity.  A
    reference back to an object still being hashed (recursion) is written by its position
    on the path; ``closed`` is False when that happened below (such hashes are not cached)."""
    hit = _DEEP.get(id(obj))
    if hit is not None and hit[0] is obj:
        return hit[1], True
    if id(obj) in active:
        return f"<recursion:{len(active) - active[id(obj)]}>", False
    active[id(obj)] = len(active)
    dump, refs = _analyse(obj)
    closed = True
    parts = []
    for r in refs:
        h, c = _deep(r, active)
        parts.append(h)
        closed = closed and c
    del active[id(obj)]
    digest = hashlib.sha256(_REF.sub(lambda m: parts[int(m.group(1))], dump).encode()).hexdigest()
    if closed:
        _DEEP[id(obj)] = (obj, digest)
    return digest, closed


def code_sha256(roots: Iterable[Any]) -> str:
    """sha256 (hex) of the normal form of everything reached from ``roots`` (module docstring)."""
    digests = sorted(_deep(_unwrap(r), {})[0] for r in roots if r is not None)
    return hashlib.sha256("\0".join(digests).encode()).hexdigest()


def _walk(roots: Iterable[Any]) -> list[str]:
    """``label=normal form`` of everything reached from ``roots``, sorted (for inspection)."""
    return sorted(_label(obj) + "=" + _analyse(obj)[0] for obj in _reach(roots))


def reached_names(roots: Iterable[Any]) -> list[str]:
    """The qualified names of the code an identity covers (for inspection and tests)."""
    return sorted(d.split("=", 1)[0] for d in _walk(roots))


def reached_modules(roots: Iterable[Any]) -> set[str]:
    """The modules that define the code an identity covers."""
    return {getattr(obj, "__module__", "") for obj in _reach(roots)}


__all__ = ["EXTERNAL", "code_sha256", "reached_modules", "reached_names"]
