"""The one executor every parallel loop of the studies layer runs through.

An executor maps a top-level (picklable) function over a list of argument tuples.
:meth:`Executor.imap` yields ``(index, result)`` as tasks finish (any order: the callers
save or add each result as it comes and reduce in a fixed order at the end);
:meth:`Executor.map` returns the results in task order.  Every task is a pure function of
its arguments (counter-based randomness), so the answer is the same for every backend,
worker count and completion order:

* ``serial``  -- in this process, in order;
* ``joblib``  -- a pool of ``n_jobs`` worker processes (loky), reused while the executor is
  open (``with make_executor(...) as ex:``);
* ``dask``    -- a ``dask.distributed`` cluster: an existing scheduler
  (``scheduler="tcp://host:port"``) or a local cluster of ``dask_workers`` processes with
  one thread each.  A task whose worker dies is rerun by the scheduler on another worker
  (up to ``distributed.scheduler.allowed-failures`` times); each task's result is
  collected exactly once, so nothing is lost or counted twice.
"""
from __future__ import annotations

import abc
from typing import Any, Callable, Iterator, Sequence


class Executor(abc.ABC):
    """Maps ``fn(*args)`` over argument tuples (see the module docstring)."""
    name = "?"
    workers = 1

    def __enter__(self):
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def close(self) -> None:
        """Release workers (a no-op for the serial backend)."""

    @abc.abstractmethod
    def imap(self, fn: Callable, tasks: Sequence[tuple]) -> Iterator[tuple[int, Any]]:
        """Yield ``(i, fn(*tasks[i]))`` for every task, in completion order."""

    def map(self, fn: Callable, tasks: Sequence[tuple]) -> list:
        """``[fn(*t) for t in tasks]``, computed by the backend, in task order."""
        out: list = [None] * len(tasks)
        for i, r in self.imap(fn, tasks):
            out[i] = r
        return out

    def describe(self) -> str:
        return f"{self.name} ({self.workers} worker{'s' if self.workers != 1 else ''})"


class SerialExecutor(Executor):
    name = "serial"

    def imap(self, fn, tasks):
        for i, t in enumerate(tasks):
            yield i, fn(*t)


def _indexed(fn, i, args):
    return i, fn(*args)


class JoblibExecutor(Executor):
    """A loky process pool of ``n_jobs`` workers (-1: all cores)."""
    name = "joblib"

    def __init__(self, n_jobs: int):
        import joblib

        self.workers = joblib.cpu_count() if n_jobs == -1 else int(n_jobs)
        self._parallel = None

    def _pool(self):
        if self._parallel is None:
            from joblib import Parallel

            self._parallel = Parallel(n_jobs=self.workers, return_as="generator_unordered", batch_size=1)
            self._parallel.__enter__()
        return self._parallel

    def close(self) -> None:
        if self._parallel is not None:
            self._parallel.__exit__(None, None, None)
            self._parallel = None

    def imap(self, fn, tasks):
        from joblib import delayed

        if not tasks:
            return
        yield from self._pool()(delayed(_indexed)(fn, i, t) for i, t in enumerate(tasks))


class DaskExecutor(Executor):
    """Tasks submitted to a ``dask.distributed`` scheduler; results gathered as they finish."""
    name = "dask"

    def __init__(self, scheduler: str | None = None, workers: int | None = None):
        try:
            from distributed import Client, LocalCluster
        except ImportError:  # pragma: no cover - dask is a dependency
            raise ValueError("the dask backend needs dask.distributed: uv add 'dask[distributed]'") from None
        self._cluster = None
        if scheduler is not None:
            try:
                self._client = Client(scheduler, timeout="10s")
            except (OSError, TimeoutError) as exc:
                raise ValueError(f"cannot reach the dask scheduler at {scheduler}: {exc}") from None
        else:
            n = int(workers or 1)
            self._cluster = LocalCluster(n_workers=n, threads_per_worker=1, processes=True,
                                         dashboard_address=None)
            self._client = Client(self._cluster)
        self.scheduler = self._client.scheduler.address
        self.workers = max(1, len(self._client.scheduler_info().get("workers", {})))

    @property
    def client(self):
        return self._client

    def close(self) -> None:
        if self._client is not None:
            self._client.close()
            self._client = None
        if self._cluster is not None:
            self._cluster.close()
            self._cluster = None

    def imap(self, fn, tasks):
        from distributed import as_completed

        if not tasks:
            return
        # pure=False: every task runs even if two have equal arguments; the index travels
        # with the result so each is placed exactly once whatever the completion order.
        futures = [self._client.submit(_indexed, fn, i, t, pure=False) for i, t in enumerate(tasks)]
        try:
            for fut in as_completed(futures):
                yield fut.result()
                fut.release()
        finally:
            for fut in futures:
                fut.cancel()

    def describe(self) -> str:
        return f"dask at {self.scheduler} ({self.workers} worker{'s' if self.workers != 1 else ''})"


def make_executor(n_jobs: int = 1, scheduler: str | None = None, dask_workers: int | None = None) -> Executor:
    """The executor for ``n_jobs`` local processes, or a dask cluster (``scheduler``
    address, or ``dask_workers`` local worker processes).  Bad values are errors naming
    the option."""
    if scheduler is not None and dask_workers is not None:
        raise ValueError("give scheduler or dask_workers, not both")
    if dask_workers is not None:
        if int(dask_workers) < 1:
            raise ValueError(f"dask_workers must be >= 1, got {dask_workers}")
        return DaskExecutor(workers=int(dask_workers))
    if scheduler is not None:
        if "://" not in scheduler:
            raise ValueError(f"scheduler must be an address such as tcp://host:8786, got {scheduler!r}")
        return DaskExecutor(scheduler=scheduler)
    if n_jobs == 0 or n_jobs < -1:
        raise ValueError(f"n_jobs must be >= 1 (or -1 for all cores), got {n_jobs}")
    return SerialExecutor() if n_jobs == 1 else JoblibExecutor(n_jobs)


def as_executor(executor: Executor | None, n_jobs: int = 1) -> tuple[Executor, bool]:
    """``(executor, owned)``: the given one, or a new one for ``n_jobs`` that the caller
    must close (``owned``)."""
    if executor is not None:
        return executor, False
    return make_executor(n_jobs), True


__all__ = ["Executor", "SerialExecutor", "JoblibExecutor", "DaskExecutor", "make_executor", "as_executor"]
