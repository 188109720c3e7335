"""``simlab`` -- the one front door.  Parse, call a layer, print or serialise; nothing else.

Conventions for a command module (``simlab/cli/<group>.py``; files starting with ``_`` are
shared helpers, not command groups):

Registration
    Each public module is one command group, found by name (adding a group touches no other
    file), and defines ``register(subparsers, bench_subparsers) -> None``.  It adds its
    parsers with ``subparsers.add_parser(...)`` (and ``bench_subparsers.add_parser(...)`` for
    a ``simlab bench <x>`` row) and binds each to a function with
    ``p.set_defaults(func=run_x)``.  Add ``--json`` with ``_args.add_json(p)``.  Validate
    numbers in argparse with the checked types of ``_args`` (``positive_int``, ``n_jobs``,
    ``nonnegative_float``, ``memory_size``...), so a bad value never reaches the work.

Commands
    ``run_x(args) -> int | None``: parse the arguments into library objects, call ONE library
    function, then ``_output.emit(args, payload, render)``: ``payload`` is a JSON-able dict
    (numpy values are converted; non-finite floats become null) printed as one object under
    ``--json``; ``render(payload)`` prints the human form otherwise.  Imports of ``methods``,
    ``studies``, ``evidence``, numpy, scipy, xarray or numba happen inside the function:
    ``simlab --help`` imports none of scipy.stats, numba or xarray, and ``simlab methods``
    neither scipy.stats nor xarray (``tests/cli/test_imports.py``).  Long work reports
    progress: a rich bar on a terminal, timestamped lines on stderr otherwise
    (``simlab.progress``; ``_output.log_to_stderr(args)`` for a ``progress(str)`` callback).
    Library code never names a CLI flag; a message that must name one is written here.
    Before heavy work, estimate its memory and call ``_args.check_memory(args, bytes, what)``
    (with ``_args.add_max_memory(p)``: ``--max-memory``, default ``$SIMLAB_MAX_MEMORY`` or 4G);
    where its time can be modelled, ``_args.check_time(args, seconds, what)`` (with
    ``_args.add_max_seconds(p)``: ``--max-seconds``, default ``$SIMLAB_MAX_SECONDS`` or 600).
    State the cost model and the measurement behind its constants beside it.

Exit codes and errors (one contract for every command)
    0  success (whatever the figures say).
    1  reserved for a *decision that blocks* (the evidence path may return 1 from its
       ``run_x`` when a release is blocked); never used for errors.
    2  bad input or refused work: argparse errors, ``ValueError`` (raise ``_output.UsageError
       (message, field)`` to name the field, e.g. ``"--reps"``), ``KeyError`` (unknown names),
       pydantic ``ValidationError`` (one line naming the field, no URL), ``OSError`` (the
       path and the reason), ``MemoryError``.  The message is one line naming the field and
       the allowed range; it goes to stderr as ``error: ...``, or under ``--json`` to stdout
       as ``{"error": {"message": ..., "field": ...}}`` (``field`` may be null).
    128 + N  stopped by signal N (Ctrl-C: 130, SIGTERM: 143, SIGHUP: 129) after a clean
       shutdown: worker processes ended, locks released, finished checkpoint batches kept
       (``simlab/cli/_signals.py``); one line ``interrupted: ...`` on stderr, or the JSON
       error object under ``--json``.
    Anything else is a bug and keeps its traceback.

Bytecode
    Run as the ``simlab`` console script, the command stores the bytecode of what it imports
    even where ``PYTHONDONTWRITEBYTECODE`` is set (many container images set it): without
    stored bytecode every run -- and every worker process -- compiles numpy, numba, scipy and
    simlab from source again, seconds per command on a small machine.  Only this process
    writes (the environment is left as it is, so subprocesses keep the user's setting; worker
    processes read what it stored).  Set ``SIMLAB_WRITE_BYTECODE=0`` to keep Python's setting;
    a directory that cannot be written is skipped silently by Python itself.

BLAS threads
    The console script runs OpenBLAS (numpy's and scipy's) on one thread unless
    ``OPENBLAS_NUM_THREADS`` is set.  simlab's work is numba kernels and processes, not large
    matrix products: the idle BLAS threads started at import cost every command about 0.3 s of
    CPU (``simlab interval``: 1.1 -> 0.8 s CPU on 2 cores), time a loaded machine takes from
    the command itself.  It also matches joblib's worker processes, which already limit BLAS
    to one thread each, so a product computed in this process and one computed in a worker run
    the same code.  The environment variable is set, so worker processes inherit it.
"""
from __future__ import annotations

import importlib
import os
import pkgutil
import sys


def _command_modules() -> list[str]:
    return sorted(info.name for info in pkgutil.iter_modules(__path__) if not info.name.startswith("_"))


def build_parser():
    from simlab.cli._args import Parser

    parser = Parser(prog="simlab",
                    description="Measure, size and qualify non-inferiority decision methods for paired, clustered "
                                "binary outcomes.  Every command that prints figures takes --json.  Exit codes: 0 "
                                "success, 2 bad input or refused work (1 is reserved for a blocking decision).  The "
                                "command stores Python bytecode even where PYTHONDONTWRITEBYTECODE is set, so later "
                                "runs start faster (SIMLAB_WRITE_BYTECODE=0 keeps Python's setting).")
    sub = parser.add_subparsers(dest="command", required=True)
    bench = sub.add_parser("bench", help="speed benchmarks against references measured in the same run")
    bench_sub = bench.add_subparsers(dest="bench_command", required=True)
    for name in _command_modules():
        importlib.import_module(f"{__name__}.{name}").register(sub, bench_sub)
    _note_positionals(parser)
    return parser


def _note_positionals(parser) -> None:
    """Remember each command's positional argument names (by the function it calls): an error
    about one names it bare (``spec``), not as a flag -- in that command only (``compare``'s
    positional ``baseline`` is ``false-pass``'s ``--baseline``)."""
    import argparse

    from simlab.cli._output import POSITIONALS

    func = parser._defaults.get("func")
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for child in action.choices.values():
                _note_positionals(child)
        elif not action.option_strings and action.dest != "help" and func is not None:
            POSITIONALS.setdefault(func, set()).add(action.dest)


BYTECODE_ENV = "SIMLAB_WRITE_BYTECODE"


def store_bytecode() -> bool:
    """Let this process write the bytecode of what it imports unless ``SIMLAB_WRITE_BYTECODE=0``
    (module docstring, "Bytecode"); True when it will."""
    if os.environ.get(BYTECODE_ENV, "1").strip().lower() in ("0", "no", "false"):
        return False
    sys.dont_write_bytecode = False
    return True


BLAS_THREADS_ENV = "OPENBLAS_NUM_THREADS"


def one_blas_thread() -> None:
    """One OpenBLAS thread unless the user chose (module docstring, "BLAS threads"); it only
    takes effect before numpy is first imported, which the console script guarantees."""
    os.environ.setdefault(BLAS_THREADS_ENV, "1")


def main(argv: list[str] | None = None) -> int:
    if argv is None:  # the console script (tests and library callers pass argv and keep their setting)
        store_bytecode()
        one_blas_thread()
    from simlab.cli._output import EXIT_OK, describe_error, report_error, report_interrupt
    from simlab.cli._signals import signals_as_interrupts
    from simlab.interrupts import raise_pending

    argv = list(sys.argv[1:] if argv is None else argv)
    json_mode = "--json" in argv
    args = None
    try:
        with signals_as_interrupts():
            args = build_parser().parse_args(argv)
            json_mode = bool(getattr(args, "json", False))
            from simlab.cli._args import check_environment

            check_environment()
            rc = args.func(args)
            raise_pending()  # an interrupt a library call swallowed (simlab.interrupts) is still one
    except KeyboardInterrupt as exc:   # Ctrl-C, SIGTERM, SIGHUP: everything above has unwound
        return report_interrupt(exc, json_mode, args)
    except Exception as exc:  # noqa: BLE001 - mapped by the contract; unmapped ones re-raise
        described = describe_error(exc, args)
        if described is None:
            raise
        return report_error(*described, json_mode)
    return EXIT_OK if rc is None else int(rc)


if __name__ == "__main__":
    sys.exit(main())
