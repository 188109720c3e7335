"""Emission for every command: one JSON object under ``--json``, else rendered text; the
error contract (exit codes, one-line messages naming the field); plain progress lines."""
from __future__ import annotations

import argparse
import json
import math
import re
import sys
import time
from typing import Any, Callable

from simlab.interrupts import raise_pending

EXIT_OK = 0
EXIT_BLOCKED = 1  # reserved: a decision that blocks (evidence path), never an error
EXIT_USAGE = 2  # bad input, refused work, unreadable or unwritable files


class UsageError(ValueError):
    """Bad input or refused work, with the offending field (a flag such as ``--reps``)."""

    def __init__(self, message: str, field: str | None = None):
        super().__init__(message)
        self.field = field


def jsonable(x: Any) -> Any:
    """Plain JSON values: numpy scalars and arrays unwrapped, non-finite floats as null."""
    if isinstance(x, dict):
        return {str(k): jsonable(v) for k, v in x.items()}
    if isinstance(x, (list, tuple)):
        return [jsonable(v) for v in x]
    if hasattr(x, "tolist") and hasattr(x, "dtype"):  # numpy array or scalar, without importing numpy
        return jsonable(x.tolist())
    if isinstance(x, float):
        return x if math.isfinite(x) else None
    return x


def emit(args: argparse.Namespace, payload: dict, render: Callable[[dict], None]) -> None:
    """Print ``payload`` as one JSON object (``--json``) or through ``render``."""
    if getattr(args, "json", False):
        sys.stdout.write(json.dumps(jsonable(payload), allow_nan=False) + "\n")
    else:
        render(payload)


def fmt(v: Any) -> str:
    if isinstance(v, float):
        return "nan" if not math.isfinite(v) else (f"{v:.6g}" if abs(v) >= 1e-3 or v == 0 else f"{v:.3e}")
    return str(v)


def print_table(title: str, columns: list[str], rows: list[list[Any]]) -> None:
    from rich.console import Console
    from rich.table import Table

    table = Table(title=title)
    for c in columns:
        table.add_column(c, justify="right" if c not in ("method", "name", "field") else "left")
    for row in rows:
        table.add_row(*[fmt(v) for v in row])
    console = Console()
    if not console.is_terminal:  # piped or captured: never truncate figures to 80 columns
        console = Console(width=240)
    console.print(table)


def plain_table(columns: list[str], rows: list[list[Any]]) -> None:
    """Aligned plain-text columns (long method labels stay readable in any terminal width)."""
    cells = [[c if isinstance(c, str) else ("-" if c is None else fmt(c)) for c in row] for row in rows]
    widths = [max(len(h), *(len(r[i]) for r in cells)) if cells else len(h) for i, h in enumerate(columns)]
    print("  ".join(h.ljust(w) if i < 2 else h.rjust(w) for i, (h, w) in enumerate(zip(columns, widths))))
    for r in cells:
        print("  ".join(c.ljust(w) if i < 2 else c.rjust(w) for i, (c, w) in enumerate(zip(r, widths))))


def log_to_stderr(args: argparse.Namespace) -> Callable[[str], None]:
    """A progress callback: timestamped lines on stderr (also under ``--json``: stdout stays one
    object, and piped or CI runs still see that long work is moving)."""
    t0 = time.monotonic()

    def say(message: str) -> None:
        raise_pending()  # long work reports here: a swallowed interrupt stops it (simlab.interrupts)
        print(f"[{time.monotonic() - t0:7.1f} s] {message}", file=sys.stderr, flush=True)

    return say


# ---------------------------------------------------------------- the error contract


# filled by main from the parser: each command's (its function's) positional arguments, named bare, not as --flags
POSITIONALS: dict[Any, set[str]] = {}


def _flag(dest: str, args: argparse.Namespace | None) -> str:
    positional = dest in POSITIONALS.get(getattr(args, "func", None), ())
    return dest if positional else "--" + dest.replace("_", "-")


def field_of(message: str, args: argparse.Namespace | None) -> str | None:
    """Best guess of the field an error message is about: a flag it names, else the first of
    the command's own argument names it mentions."""
    m = re.search(r"(?<![\w-])(--[a-z][a-z0-9-]*)", message)
    if m:
        return m.group(1)
    if args is None:
        return None
    if "spec" in POSITIONALS.get(getattr(args, "func", None), ()) and re.match(r"(method|option \w+ of) '", message):
        return "spec"   # a method the spec file names, refused where it prepared (a range only its own code knows)
    best = None
    for dest in vars(args):
        if dest in ("func", "json") or dest.endswith("_command") or dest == "command":
            continue
        for name in {dest, dest.replace("_", "-"), dest.replace("_", " ")}:  # "true difference" too
            hit = re.search(rf"(?<![\w.-]){re.escape(name)}(?![\w-])", message)
            if hit and (best is None or hit.start() < best[0]):
                best = (hit.start(), dest)
    return None if best is None else _flag(best[1], args)


def _path_field(filename: Any, args: argparse.Namespace | None) -> str | None:
    if args is None or filename is None:
        return None
    name = str(filename)
    for dest, value in vars(args).items():
        if isinstance(value, str) and value and (name == value or name.startswith(value.rstrip("/") + "/")):
            return _flag(dest, args)
    return None


def _loc_flag(loc: tuple, args: argparse.Namespace | None) -> str | None:
    """The flag of a validation error's location when its first part is one of the command's
    own arguments (``cells.2`` -> ``--cells``, ``rho`` -> ``--rho``), else None."""
    if args is None or not loc or not isinstance(loc[0], str):
        return None
    dest = loc[0]
    if dest in ("func", "json", "command") or dest.endswith("_command") or dest not in vars(args):
        return None
    return _flag(dest, args)


def _unknown_flag(message: str) -> tuple[str, str | None]:
    """An argparse refusal without an "argument X:" part: an unrecognized option (the first one
    given, without its ``=value``) or an ambiguous prefix (``--tr could match --trials, ...``) is
    the field.  ``--json`` before the command is unrecognized because it is each command's
    option: the message says where it goes."""
    m = re.search(r"ambiguous option: (-[^\s=]+)", message)
    if m:
        return message, m.group(1)
    m = re.search(r"unrecognized arguments: (.*)$", message)
    flags = [t.split("=", 1)[0] for t in (m.group(1).split() if m else ()) if t.startswith("-")]
    if not flags:
        return message, None
    if flags[0] == "--json":
        message += " (--json is an option of each command: give it after the command, e.g. simlab methods --json)"
    return message, flags[0]


def describe_error(exc: BaseException, args: argparse.Namespace | None) -> tuple[str, str | None] | None:
    """``(one-line message, field)`` for an error that the user's input caused, or None for a
    genuine bug (which keeps its traceback)."""
    core = sys.modules.get("pydantic_core")  # not imported: the error cannot be pydantic's (and stays fast)

    if isinstance(exc, UsageError):
        if exc.field is None:  # argparse's own words name no "argument X:" for these
            return _unknown_flag(str(exc))
        return str(exc), exc.field
    if core is not None and isinstance(exc, core.ValidationError):
        err = exc.errors(include_url=False)[0] if exc.errors() else {"loc": (), "msg": str(exc)}
        loc = ".".join(str(p) for p in err.get("loc", ()))
        msg = str(err.get("msg", "invalid value")).removeprefix("Value error, ")
        extra = f" (and {exc.error_count() - 1} more)" if exc.error_count() > 1 else ""
        flag = _loc_flag(err.get("loc", ()), args)
        if flag is not None:  # a model field the command's own argument filled: the message names the flag
            where = flag if loc == flag[2:].replace("-", "_") else f"{flag} ({loc})"
            return f"{where}: {msg}{extra}", flag
        return (f"{loc}: {msg}{extra}" if loc else f"{msg}{extra}"), (loc or field_of(msg, args))
    if isinstance(exc, MemoryError):
        return ("out of memory: the work needs more memory than is available; lower the replications, "
                "clusters or grid, or run it in chunks"), None
    if isinstance(exc, OSError):
        path = exc.filename if exc.filename is not None else None
        what = exc.strerror or exc.__class__.__name__
        return (f"{path}: {what}" if path else f"I/O error: {what}"), _path_field(path, args)
    if isinstance(exc, KeyError):
        msg = str(exc.args[0]) if exc.args else "unknown key"
        return msg, field_of(msg, args)
    if isinstance(exc, (ValueError, OverflowError)):
        msg = " ".join(str(exc).split())  # one line
        # a lower layer's error class may say which argument it is about (a class attribute)
        return msg, getattr(exc, "field", None) or field_of(msg, args)
    return None


def report_interrupt(exc: KeyboardInterrupt, json_mode: bool, args: argparse.Namespace | None = None) -> int:
    """One line for a command stopped by a signal; the exit code is 128 + the signal.  What
    is kept is said only for a command that keeps something."""
    from simlab.cli._signals import interrupt_exit_code

    name, code = interrupt_exit_code(exc)
    kept = ""
    if getattr(args, "checkpoint", None):
        kept = "; batches finished in --checkpoint are kept (run the same command to resume)"
    elif hasattr(args, "work_dir") and not getattr(args, "no_checkpoint", False):
        kept = "; chunks finished in the work directory are kept (run the same command to resume)"
    message = f"stopped by {name}: worker processes ended{kept}"
    if json_mode:
        sys.stdout.write(json.dumps({"error": {"message": message, "field": None}}) + "\n")
    else:
        print(f"interrupted: {message}", file=sys.stderr)
    return code


def report_error(message: str, field: str | None, json_mode: bool) -> int:
    message = " ".join(message.split())
    message = re.sub(r"\s*\[type=[^\]]*\]", "", message)  # pydantic's machine details, wrapped by a layer
    # third-party messages point at web pages ("See https://... for more details."): the message is the error
    message = re.sub(r"\s*(See|For further information visit|Visit)?\s*https?://\S+( for more details)?\.?", "", message)
    if json_mode:
        sys.stdout.write(json.dumps({"error": {"message": message, "field": field}}) + "\n")
    else:  # the field JSON carries, named in the one line too (a library's "alpha must lie..." named no flag)
        named = field is None or not field.startswith("-") or field in message
        print(f"error: {message if named else f'{field}: {message}'}", file=sys.stderr)
    return EXIT_USAGE
