"""The one evaluation loop: draw a block of replications, let every method decide it, tally.

Everything that simulates -- studies (fixed and sequential), qualification tasks and
batches, power frames -- runs :func:`evaluate`: a *row source* yields :class:`Block` s of
replications (tables ``int32[R, K, 4]``, or on the moment path the cluster moments
``int64[R, 3]`` = ``(k, sum D, sum D^2)``), each method decides each block through the
protocol's one dispatch (``DecisionMethod.decide``; ``MomentMethod.batch_moments`` on the
moment path), and a *tally* adds the results up.  A judge-corrected method
(``methods.judged.needs_calibration``) also gets the block's judge calibration counts
``int32[R, A, 4]``, drawn by the source beside the tables of the same replications
(``simlab.sampling.calibration``; a source that draws none is refused, naming the method).  Sources differ in where rows come from:

* :class:`ScenarioRows` -- one scenario's ``simlab.sampling`` source, replications
  ``start .. stop - 1`` in order (the moment path when every method and the source allow it);
* ``studies.qualify.batch`` -- several scenarios of one K drawn together;
* ``studies.engine.frame`` -- prefixes ``tables[:, :k]`` of one K-frame simulation.

Replication ``r`` is a pure function of ``(seed, scenario, r)`` and tallies are integers,
so results do not depend on block sizes, batching or worker count.  All methods see the
same rows (common random numbers).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Iterator, Protocol, Sequence

import numpy as np

from methods.judged import needs_calibration
from methods.protocol import INCONCLUSIVE, PASS

BATCH_BYTES = 8 << 20   # table buffer per block (fits a typical L2/L3 slice)
MAX_BATCH = 16_384      # replications per table block
MOMENT_BATCH = 65_536   # rows of (k, S1, S2) per moment block


@dataclass
class Block:
    """Replications to decide: ``tables`` or, on the moment path, ``stats`` of clusters of
    ``size`` trials (``clusters`` K either way).  ``tag`` is the source's note for the
    tally (which scenario's rows, which prefix); ``start`` the first replication; ``alphas``
    the indices of the levels to decide these rows at (None: every level); ``calibration``
    the judge calibration counts of the same rows, when a method needs them."""
    clusters: int
    tables: np.ndarray | None = None
    calibration: np.ndarray | None = None
    stats: np.ndarray | None = None
    size: int | None = None
    start: int = 0
    tag: Any = None
    alphas: tuple[int, ...] | None = None

    @property
    def rows(self) -> int:
        return int((self.stats if self.stats is not None else self.tables).shape[0])


class Rows(Protocol):
    def blocks(self, start: int, stop: int, methods: Sequence) -> Iterator[Block]:
        """Blocks covering replications ``start .. stop - 1`` (the moment path only if
        every method can take it)."""


class MethodError(ValueError):
    """A method refused the data: ``index`` says which, ``reason`` why (the caller may name
    the point)."""

    def __init__(self, index: int, label: str, reason: str):
        # a reason that already names the method (most methods' own refusals do) is not prefixed twice
        super().__init__(reason if reason.startswith(f"method {label!r}") else f"method {label!r}: {reason}")
        self.index, self.reason = index, reason


def table_batch(clusters: int) -> int:
    """Replications per table block of ``clusters`` clusters (``BATCH_BYTES`` of tables)."""
    return int(max(1, min(MAX_BATCH, BATCH_BYTES // (16 * max(clusters, 1)))))


def takes_moments(methods: Sequence) -> bool:
    """Can every method decide from cluster moments?"""
    return all(getattr(m, "moments_kernel", None) is not None for m in methods)


def takes_calibration(methods: Sequence) -> bool:
    """Does any method need judge calibration counts beside the tables?"""
    return any(needs_calibration(m) for m in methods)


def moment_path(source, methods: Sequence) -> bool:
    """Does :func:`evaluate` take the moment path for ``methods`` on this table source?"""
    return ScenarioRows(source).moment_path(methods)


class ScenarioRows:
    """One scenario's replications from a ``simlab.sampling`` table source."""

    def __init__(self, source, *, moments: bool = True, batch: int | None = None):
        self.source, self.moments, self.batch = source, moments, batch

    def moment_path(self, methods: Sequence) -> bool:
        return self.moments and self.source.moment_size is not None and takes_moments(methods)

    def blocks(self, start: int, stop: int, methods: Sequence) -> Iterator[Block]:
        src, K = self.source, self.source.clusters
        if stop <= start:
            return
        if self.moment_path(methods):
            b = self.batch or MOMENT_BATCH
            buf = np.empty((min(b, stop - start), 3), np.int64)
            for s in range(start, stop, b):
                n = min(b, stop - s)
                yield Block(K, stats=src.fill_moments(buf[:n], s), size=src.moment_size, start=s)
            return
        b = self.batch or table_batch(K)
        buf = np.empty((min(b, stop - start), K, 4), np.int32)
        cal = None
        if takes_calibration(methods) and src.calibration is not None:
            cal = np.empty((buf.shape[0], src.calibration.arms, 4), np.int32)
        for s in range(start, stop, b):
            n = min(b, stop - s)
            yield Block(K, tables=src.fill(buf[:n], s), start=s,
                        calibration=None if cal is None else src.fill_calibration(cal[:n], s))


Tally = Callable[[int, int, int, Any, Block], None]   # (method, margin, alpha, result, block)


def evaluate(rows: Rows, start: int, stop: int, methods: Sequence, margins: Sequence[float],
             alphas: Sequence[float], tally: Tally, schedule=None, consts: dict | None = None) -> None:
    """Decide replications ``start .. stop - 1`` of ``rows`` by every method x alpha x margin
    and pass each result to ``tally(i, j, c, result, block)`` (method ``i``, margin ``j``,
    alpha ``c``).  ``schedule``: the look schedule of sequential methods (a ``LookSchedule``,
    or a function of K for sources whose K varies).  A method's refusal is a
    :class:`MethodError` naming it.  ``consts``: a cache of the moment path's constants the
    caller keeps across calls (keyed by method, alpha, margin and K)."""
    consts = {} if consts is None else consts
    for block in rows.blocks(start, stop, methods):
        sched = schedule(block.clusters) if callable(schedule) else schedule
        levels = range(len(alphas)) if block.alphas is None else block.alphas
        for i, m in enumerate(methods):
            for c in levels:
                alpha = alphas[c]
                for j, margin in enumerate(margins):
                    try:
                        if block.stats is not None:
                            key = (id(m), float(alpha), float(margin), block.clusters)
                            if key not in consts:
                                consts[key] = m.moment_consts(alpha, margin, block.clusters)
                            res = m.batch_moments(block.stats, block.size, block.clusters, margin, alpha,
                                                  consts[key])
                        elif needs_calibration(m):
                            if block.calibration is None:
                                raise ValueError("it needs judge calibration counts beside the tables, and these "
                                                 "rows have none (the scenario must declare a calibration set: "
                                                 "label_noise.calibration)")
                            res = m.decide(block.tables, margin, alpha, None, calibration=block.calibration)
                        else:
                            res = m.decide(block.tables, margin, alpha, sched if m.sequential else None)
                    except ValueError as exc:
                        raise MethodError(i, getattr(m, "label", m.name), str(exc)) from None
                    tally(i, j, c, res, block)


# ---------------------------------------------------------------- common tallies
class PassCounts:
    """``counts[i] = [passes, inconclusive]`` per method (one margin, one alpha): what a
    qualification task needs.  A sequential method's promotion is its pass."""

    def __init__(self, n_methods: int):
        self.counts = [[0, 0] for _ in range(n_methods)]

    def __call__(self, i: int, j: int, c: int, res, block: Block) -> None:
        self.counts[i][0] += int(np.count_nonzero(res.status == PASS))
        self.counts[i][1] += int(np.count_nonzero(res.status == INCONCLUSIVE))


__all__ = ["BATCH_BYTES", "Block", "MAX_BATCH", "MOMENT_BATCH", "MethodError", "PassCounts", "Rows", "ScenarioRows",
           "evaluate", "moment_path", "table_batch", "takes_calibration", "takes_moments"]
