"""The execution-backend options shared by every command that runs parallel work (study
run, sequential run, qualify, certify; size for its false-pass certificate): local
worker processes, or a dask.distributed cluster through ``studies.engine.executor``."""
from __future__ import annotations

import argparse

from simlab.cli._args import at_most_per_core, positive_int


def add_backend_arguments(parser: argparse.ArgumentParser) -> None:
    """``--scheduler`` and ``--dask-workers`` (the local ``--n-jobs`` stays per command)."""
    g = parser.add_mutually_exclusive_group()
    g.add_argument("--scheduler", metavar="ADDRESS",
                   help="run the work on this dask.distributed scheduler (e.g. tcp://host:8786); results are "
                        "bitwise identical to a local run")
    g.add_argument("--dask-workers", type=local_workers, metavar="N",
                   help="run the work on a local dask cluster of N worker processes (one thread each; at most "
                        "4 per core)")


def local_workers(text: str) -> int:
    """``--dask-workers``: a local cluster of at most 4 processes per core (1000 on 2 cores started
    hundreds of failing worker processes, no refusal, until killed)."""
    return at_most_per_core(positive_int(text), "local workers")


def executor_from_args(args: argparse.Namespace, n_jobs: int | None):
    """The executor the options ask for (a context manager: close it after the work);
    ``--n-jobs`` above 1 together with a dask option is refused (one or the other)."""
    from studies.engine import make_executor

    scheduler, workers = getattr(args, "scheduler", None), getattr(args, "dask_workers", None)
    if (scheduler is not None or workers is not None) and n_jobs not in (None, 1):
        raise ValueError("give --n-jobs (local processes) or --scheduler/--dask-workers (dask), not both")
    return make_executor(1 if n_jobs is None else n_jobs, scheduler=scheduler, dask_workers=workers)
