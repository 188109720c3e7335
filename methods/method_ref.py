"""The one reference to a registered method: how specs, studies and records name a method.

A :class:`MethodRef` is a registry name plus options, an optional wrapped fixed-sample
method (``inner`` + ``inner_options``, for the sequential wrappers) and a label.
:meth:`MethodRef.resolve` finds the method in the registry (optionally checking its kind)
and applies the options, so a worker process given only the reference rebuilds exactly
the same method.
"""
from __future__ import annotations

from typing import Any

from pydantic import Field, ValidationError, model_serializer

from simlab.models import FrozenModel


class UnknownMethodError(KeyError, ValueError):
    """A name the registry does not know (a ``KeyError`` for lookups, a ``ValueError`` for
    input validation: callers may catch either)."""

    def __str__(self) -> str:
        return str(self.args[0]) if self.args else ""


def _fmt(v: Any) -> str:
    """An option value in a label: ``g`` format where it round-trips, else in full."""
    if isinstance(v, str):
        return v
    short = f"{v:g}"
    return short if float(short) == v else repr(v)


class MethodRef(FrozenModel):
    """A registered method with options, an optional wrapped method and a label.

    ``key`` (the label a dataset or table shows) defaults to the name, then ``[inner]``
    when a method is wrapped, then the options: ``[a=1,b=2]`` without a wrapped method,
    ``{a=1,inner.b=2}`` with one."""
    name: str
    options: dict[str, float | str] = Field(default_factory=dict)
    inner: str | None = None
    inner_options: dict[str, float] = Field(default_factory=dict)
    label: str | None = None

    @model_serializer(mode="wrap")
    def _drop_unused(self, handler):
        # A reference without a wrapped method serialises as before wrapping existed, so
        # the content hashes of specs that name plain methods do not move.
        data = handler(self)
        if self.inner is None and not self.inner_options:
            data.pop("inner", None)
            data.pop("inner_options", None)
        return data

    @property
    def key(self) -> str:
        if self.label:
            return self.label
        if self.inner is None:
            opts = ",".join(f"{a}={_fmt(b)}" for a, b in sorted(self.options.items()))
            return f"{self.name}[{opts}]" if opts else self.name
        opts = {**self.options, **{f"{self.inner}.{a}": b for a, b in self.inner_options.items()}}
        k = f"{self.name}[{self.inner}]"
        return k + ("{" + ",".join(f"{a}={_fmt(b)}" for a, b in sorted(opts.items())) + "}" if opts else "")

    def resolve(self, kind: str | None = None):
        """The registered method with the options applied (and its inner method wrapped);
        ``kind`` ("fixed" or "sequential") checks what kind of method it is."""
        from methods import registry

        m, inner = _lookup(registry, self.name), None if self.inner is None else _lookup(registry, self.inner)
        m_kind = getattr(m, "kind", "fixed")
        if kind is not None and m_kind != kind:
            word = "fixed-sample" if kind == "fixed" else kind
            raise ValueError(f"method {self.name!r} is not a {word} method; {word} methods: "
                             f"{', '.join(registry.names(kind))}")
        if self.options:
            m = m.with_options(**self.options)
        if inner is not None:
            if self.inner_options:
                inner = inner.with_options(**self.inner_options)
            m = m.with_inner(inner)
        elif self.inner_options:
            raise ValueError(f"method {self.name!r}: inner_options given without inner")
        return m


def _lookup(registry, name: str):
    try:
        return registry.get(name)
    except KeyError as exc:
        raise UnknownMethodError(exc.args[0] if exc.args else f"unknown method {name!r}") from None


def as_method_refs(methods, fields: str = "name, options, inner, label") -> tuple[MethodRef, ...]:
    """Spec entries (a name, a mapping, or a :class:`MethodRef`) as references; errors
    name the entry."""
    out = []
    for i, m in enumerate(methods):
        if isinstance(m, MethodRef):
            out.append(m)
        elif isinstance(m, str):
            out.append(MethodRef(name=m))
        elif isinstance(m, dict):
            try:
                out.append(MethodRef.model_validate(m))
            except ValidationError as exc:
                msg = "; ".join(f"{'.'.join(str(x) for x in e.get('loc', ()))}: {e.get('msg')}"
                                for e in exc.errors())
                raise ValueError(f"methods[{i}]: {msg}") from None
        else:
            raise ValueError(f"methods[{i}]: expected a name or {{{fields}}}, got {m!r}")
    return tuple(out)


__all__ = ["MethodRef", "UnknownMethodError", "as_method_refs"]
