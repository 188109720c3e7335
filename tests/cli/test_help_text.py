"""Every option and argument of every subcommand has help text (issue 29.3): the parser is
walked, so a new option without help fails here."""
from __future__ import annotations

import argparse

from simlab.cli import build_parser


def _options(parser: argparse.ArgumentParser, path: str):
    """``(command path, action)`` of every option and argument, subcommands walked."""
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                yield from _options(sub, f"{path} {name}")
        else:
            yield path, action


def _undocumented(parser: argparse.ArgumentParser, path: str) -> list[str]:
    return [f"{where} {'/'.join(a.option_strings) or a.dest}" for where, a in _options(parser, path)
            if not isinstance(a, argparse._HelpAction) and a.help in (None, "", argparse.SUPPRESS)]


def test_every_option_has_help_text():
    assert _undocumented(build_parser(), "simlab") == []


def test_the_walk_finds_an_option_without_help():
    parser = argparse.ArgumentParser()
    sub = parser.add_subparsers().add_parser("x")
    sub.add_argument("--bare")
    sub.add_argument("--told", help="documented")
    assert _undocumented(parser, "p") == ["p x --bare"]


def _defaults(parser: argparse.ArgumentParser, path: str) -> list[tuple[str, object]]:
    return [(f"{where} {a.option_strings[-1]}", a.default) for where, a in _options(parser, path) if a.option_strings]


def test_scratch_output_defaults_stay_out_of_results():
    """``results/`` holds what ships; a command's default output goes to ``simlab-out/``.  The
    one default inside ``results/`` is the benchmark table that ships (``bench all``)."""
    into_results = [(opt, d) for opt, d in _defaults(build_parser(), "simlab")
                    if isinstance(d, str) and d.replace("\\", "/").lstrip("./").startswith("results")]
    assert into_results == [("simlab bench all --out", "results/bench")]
    scratch = dict(_defaults(build_parser(), "simlab"))
    assert scratch["simlab demo --out"] == "simlab-out/demo"
    from simlab.cli.study import DEFAULT_WORK_DIR  # --work-dir's default, applied when it is not given

    assert DEFAULT_WORK_DIR == "simlab-out/.runs"
