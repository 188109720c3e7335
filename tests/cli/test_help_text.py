"""Every option and argument of every subcommand has help text (issue 29.3): the parser is
walked, so a new option without help fails here."""
from __future__ import annotations

import argparse

from simlab.cli import build_parser


def _undocumented(parser: argparse.ArgumentParser, path: str) -> list[str]:
    missing = []
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                missing += _undocumented(sub, f"{path} {name}")
        elif not isinstance(action, argparse._HelpAction) and action.help in (None, "", argparse.SUPPRESS):
            missing.append(f"{path} {'/'.join(action.option_strings) or action.dest}")
    return missing


def test_every_option_has_help_text():
    assert _undocumented(build_parser(), "simlab") == []


def test_the_walk_finds_an_option_without_help():
    parser = argparse.ArgumentParser()
    sub = parser.add_subparsers().add_parser("x")
    sub.add_argument("--bare")
    sub.add_argument("--told", help="documented")
    assert _undocumented(parser, "p") == ["p x --bare"]
