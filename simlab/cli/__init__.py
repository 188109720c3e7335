"""``simlab`` -- the one front door.  Parse, call a layer, print or serialise; nothing else.

Every command that prints figures accepts ``--json`` and then writes exactly one JSON
object to stdout.  This package is the only place allowed to import upward (methods,
studies, evidence).  Each public module ``simlab/cli/<group>.py`` is one command group and
defines ``register(subparsers, bench_subparsers)``; it is found by name, so adding a command
group touches no other file.  Heavy imports happen inside the command functions.
"""
from __future__ import annotations

import importlib
import pkgutil
import sys


def _command_modules() -> list[str]:
    return sorted(info.name for info in pkgutil.iter_modules(__path__) if not info.name.startswith("_"))


def build_parser():
    from simlab.cli import _legacy
    parser, sub, bench_sub = _legacy.build_parser()
    for name in _command_modules():
        importlib.import_module(f"{__name__}.{name}").register(sub, bench_sub)
    return parser


def main(argv: list[str] | None = None) -> int:
    from simlab.cli import _legacy
    args = build_parser().parse_args(argv)
    return _legacy.dispatch(args)


if __name__ == "__main__":
    sys.exit(main())
