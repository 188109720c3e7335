"""Composition tables shared by many scenarios, drawn in one call: the batched sampler.

A qualification grid holds thousands of scenarios whose clusters all share one law (a
fixed cluster size and one cells row) and which differ only in their number of clusters
``K`` or their stream key.  ``CompositionSource`` builds, for each of them, the law of
every cluster, the greedy grouping of consecutive clusters and one alias table per
distinct group.  :class:`SharedComposition` builds each ``(law, group length)`` joint
table once (``sources.joint_law``) for all the scenarios added to it, and draws any
number of replication ranges of any of them in ONE numba call.

Same draws, bitwise: a scenario of ``K`` clusters with one shared law of ``n`` outcomes is
grouped exactly as ``CompositionSource`` groups it -- ``g`` clusters per group (the
largest ``g <= MAX_GROUP`` with ``n^g <= limit``, at least one), the last group holding
the remaining ``K mod g`` -- with the same ``limit`` reduction while the distinct tables
exceed ``TOTAL_OUTCOMES``; group ``h`` of replication ``rep`` takes the uniform
``uniform(k1, k2, rep, h)`` through the same alias slot, so ``fill`` writes and
``fill_moments`` sums exactly what the scenario's ``CompositionSource`` would
(``tests/simlab/test_shared_composition.py``).
"""
from __future__ import annotations

import numba as nb
import numpy as np

from simlab.exact import ExactUnsupported
from simlab.exact.cluster_pmf import cluster_law, law_tables
from simlab.rng import MAX_REPLICATIONS, uniform
from simlab.scenario import FixedSize, PairedScenario

from .moments import one_size, table_sizes
from .sources import (GROUP_OUTCOMES, MAX_GROUP, SINGLE_OUTCOMES, TOTAL_OUTCOMES, alias_slot, joint_law, joint_words,
                      pack_rows)

# layout columns of a scenario: full groups, clusters per full group, then (table offset,
# outcomes, word base) of the full groups' table, the remainder's cluster count and table
_NFULL, _G, _OFF, _N, _BASE, _R, _ROFF, _RN, _RBASE = range(9)


def recording(scenario: PairedScenario) -> np.ndarray | None:
    """The measurement matrix ``cluster_laws`` passes on (None: perfect recording)."""
    return scenario.measurement_matrix() if scenario.has_measurement_error else None


def shared_law(scenario: PairedScenario,
               meas: np.ndarray | None | str = "auto") -> tuple[np.ndarray, np.ndarray] | None:
    """The recorded-table law every cluster of ``scenario`` shares (``cluster_laws``' law
    of each cluster), or None when its clusters differ (explicit sizes, per-cluster cells)
    or their sizes are random.  Raises ``ExactUnsupported`` where ``CompositionSource``
    does (no exact law, or more than ``SINGLE_OUTCOMES`` tables).  ``meas``: the
    scenario's ``recording`` when already known."""
    if not isinstance(scenario.cluster_size, FixedSize) or scenario.cluster_cells is not None:
        return None
    if isinstance(meas, str):
        meas = recording(scenario)
    cells = np.asarray(scenario.cells, dtype=np.float64)
    n = law_tables(cells, int(scenario.cluster_size.trials), meas)
    if n > SINGLE_OUTCOMES:  # counted before the law is built: many trials would take hours to enumerate
        raise ExactUnsupported(f"a cluster law has {n:,} tables, more than {SINGLE_OUTCOMES}")
    law = cluster_law(np.asarray(scenario.cells, dtype=np.float64), int(scenario.cluster_size.trials),
                      scenario.rho, meas)
    if law[0].shape[0] > SINGLE_OUTCOMES:
        raise ExactUnsupported(f"a cluster law has more than {SINGLE_OUTCOMES} tables")
    return law


def group_length(outcomes: int, clusters: int) -> int:
    """Clusters per group of a ``clusters``-cluster scenario whose clusters share a law of
    ``outcomes`` tables (``CompositionSource``'s greedy grouping and limit reduction)."""
    limit = GROUP_OUTCOMES
    while True:
        g = 1
        while g < min(MAX_GROUP, clusters) and outcomes ** (g + 1) <= limit:
            g += 1
        r = clusters % g
        total = outcomes ** g + (outcomes ** r if r else 0)
        if total <= TOTAL_OUTCOMES or limit <= outcomes:
            return g
        limit //= 4


# The kernels draw a replication's uniforms for all its groups first (a loop the compiler
# vectorises), then look them up; indices are cast to uint64, so numba skips the
# negative-index wraparound of every array access (they are never negative).

@nb.njit(inline="always", cache=True)
def _scaled_uniforms(k1, k2, rep, nfull, n, r, rn, xs):
    """``xs[h] = u_h n_h``: ``_alias_slot``'s ``x`` for every group of replication ``rep``."""
    for h in range(nfull):
        xs[h] = uniform(k1, k2, rep, h) * n
    if r > 0:
        xs[nfull] = uniform(k1, k2, rep, nfull) * rn


@nb.njit(cache=True)
def _segment_moments(k1, k2, rep0, count, row0, nfull, off, n, r, roff, rn, pack, out):
    xs = np.empty(nfull + 1, np.float64)
    groups = nfull + (1 if r > 0 else 0)
    for q in range(count):
        _scaled_uniforms(k1, k2, rep0 + q, nfull, n, r, rn, xs)
        k_used = 0
        S1 = 0
        S2 = 0
        for part in range(2):  # the full groups, then the remainder group
            lo, hi, o, m = (0, nfull, off, n) if part == 0 else (nfull, groups, roff, rn)
            for h in range(lo, hi):
                j, f = alias_slot(xs[h], m)
                row = np.uint64(o + j)
                c = np.uint64(1 if f < pack[row, 0] else 4)
                k_used += np.int64(pack[row, c])
                S1 += np.int64(pack[row, c + np.uint64(1)])
                S2 += np.int64(pack[row, c + np.uint64(2)])
        i = np.uint64(row0 + q)
        out[i, 0] = k_used
        out[i, 1] = S1
        out[i, 2] = S2


@nb.njit(cache=True)
def _fill_moments_many(segs, k1s, k2s, layout, pack, out):
    """``out[row0 + q] = (k_used, S1, S2)`` of replication ``rep0 + q`` of scenario ``s``
    for every segment ``(s, rep0, count, row0)``: ``sources._fill_group_moments``' draws."""
    for i in range(segs.shape[0]):
        s = segs[i, 0]
        _segment_moments(k1s[s], k2s[s], segs[i, 1], segs[i, 2], segs[i, 3], layout[s, _NFULL], layout[s, _OFF],
                         layout[s, _N], layout[s, _R], layout[s, _ROFF], layout[s, _RN], pack, out)


@nb.njit(inline="always", cache=True)
def _copy_group(x, off, n, base, width, w0, prob, alias, words, out64, i):
    """Write the words of the outcome ``x`` selects in the table at ``off`` at word ``w0``."""
    j, f = alias_slot(x, n)
    w = np.uint64(base + (j if f < prob[np.uint64(off + j)] else alias[np.uint64(off + j)]) * width)
    w0 = np.uint64(w0)
    for t in range(width):
        out64[i, w0 + np.uint64(t)] = words[w + np.uint64(t)]


@nb.njit(cache=True)
def _segment_tables(k1, k2, rep0, count, row0, nfull, g, off, n, base, r, roff, rn, rbase, prob, alias, words,
                    out64):
    xs = np.empty(nfull + 1, np.float64)
    for q in range(count):
        _scaled_uniforms(k1, k2, rep0 + q, nfull, n, r, rn, xs)
        i = np.uint64(row0 + q)
        for h in range(nfull):
            _copy_group(xs[h], off, n, base, 2 * g, 2 * g * h, prob, alias, words, out64, i)
        if r > 0:
            _copy_group(xs[nfull], roff, rn, rbase, 2 * r, 2 * g * nfull, prob, alias, words, out64, i)


@nb.njit(cache=True)
def _fill_many(segs, k1s, k2s, layout, prob, alias, words, out64):
    """Tables of every segment into ``out64`` (``int64[R, 2K]`` view of ``int32[R, K, 4]``):
    ``sources._fill_groups``' draws, each group's words from its table's flat block."""
    for i in range(segs.shape[0]):
        s = segs[i, 0]
        _segment_tables(k1s[s], k2s[s], segs[i, 1], segs[i, 2], segs[i, 3], layout[s, _NFULL], layout[s, _G],
                        layout[s, _OFF], layout[s, _N], layout[s, _BASE], layout[s, _R], layout[s, _ROFF],
                        layout[s, _RN], layout[s, _RBASE], prob, alias, words, out64)


class SharedComposition:
    """Scenarios whose clusters share one law each, drawn from shared joint tables.

    ``add(law, clusters, k1, k2)`` registers a scenario (its law from :func:`shared_law`,
    its stream key from ``sources.composition_key``) and returns its handle; ``fill`` and
    ``fill_moments`` draw segments ``(handle, first replication, count, output row)``."""

    def __init__(self) -> None:
        self._tables: dict[tuple[bytes, int], int] = {}  # (law content, group length) -> table
        self._joint: list[tuple] = []  # (prob, alias, moments, law, group length)
        self._laws: dict[bytes, tuple] = {}              # law content -> (law, its table sizes)
        self._ids: dict[int, bytes] = {}                 # id(law) -> its content
        self._alive: list = []                           # every law added (their ids stay theirs)
        self._rows: list[list[int]] = []                 # layout rows
        self._keys: list[tuple[np.uint64, np.uint64]] = []
        self.clusters: list[int] = []
        self.moment_size: list[int | None] = []
        self._built: dict[str, tuple] = {}

    def _content(self, law) -> bytes:
        """A law's content key: equal laws (e.g. one-trial clusters at any rho) share tables."""
        if id(law) not in self._ids:
            self._alive.append(law)  # its id stays its own
            key = law[0].tobytes() + law[1].tobytes()
            self._ids[id(law)] = key
            if key not in self._laws:
                self._laws[key] = (law, table_sizes(law))
        return self._ids[id(law)]

    def _table(self, key: bytes, length: int) -> int:
        if (key, length) not in self._tables:
            law = self._laws[key][0]
            self._tables[(key, length)] = len(self._joint)
            self._joint.append(joint_law([law] * length) + (law, length))
        return self._tables[(key, length)]

    def add(self, law: tuple[np.ndarray, np.ndarray], clusters: int, k1: np.uint64, k2: np.uint64) -> int:
        key = self._content(law)
        g = group_length(law[0].shape[0], clusters)
        r = clusters % g
        self._rows.append([clusters // g, g, self._table(key, g), 0, 0, r, self._table(key, r) if r else -1, 0, 0])
        self._keys.append((k1, k2))
        self.clusters.append(int(clusters))
        self.moment_size.append(one_size(self._laws[key][1], clusters))
        self._built.clear()
        return len(self._rows) - 1

    def _arrays(self, kind: str) -> tuple:
        """``(k1s, k2s, layout)`` + ``(pack,)`` (kind ``moments``) or ``(prob, alias,
        words)`` (kind ``tables``), built once for the scenarios added so far."""
        if kind not in self._built:
            j = self._joint
            sizes = np.array([x[0].size for x in j], np.int64)
            off = np.concatenate([[0], np.cumsum(sizes)[:-1]]).astype(np.int64)
            base = np.concatenate([[0], np.cumsum(sizes * 2 * np.array([x[4] for x in j], np.int64))[:-1]])
            layout = np.array(self._rows, np.int64).reshape(-1, 9)
            for col in (_OFF, _ROFF):  # table index -> (offset, outcomes, word base)
                t = layout[:, col].copy()
                has = t >= 0
                layout[has, col], layout[has, col + 1], layout[has, col + 2] = off[t[has]], sizes[t[has]], base[t[has]]
            keys = (np.array([k[0] for k in self._keys], np.uint64), np.array([k[1] for k in self._keys], np.uint64),
                    layout)
            if kind == "moments":
                pack = np.empty((int(sizes.sum()), 8), np.float64)
                for x, o in zip(j, off.tolist()):
                    pack_rows(pack[o:o + x[0].size], x[0], x[1], x[2])
                self._built[kind] = keys + (pack,)
            else:
                self._built[kind] = keys + (np.concatenate([x[0] for x in j]), np.concatenate([x[1] for x in j]),
                                            np.concatenate([joint_words([x[3]] * x[4]).ravel() for x in j]))
        return self._built[kind]

    def _segments(self, segments, rows: int) -> np.ndarray:
        segs = np.ascontiguousarray(np.asarray(segments, np.int64).reshape(-1, 4))
        if len(segs) and (segs[:, 0].min() < 0 or segs[:, 0].max() >= len(self._rows)):
            raise ValueError("a segment names a scenario that was not added")
        if np.any(segs[:, 1] < 0) or np.any(segs[:, 1] + segs[:, 2] > MAX_REPLICATIONS) or np.any(segs[:, 2] < 0):
            raise ValueError(f"replications must lie in [0, {MAX_REPLICATIONS})")
        if np.any(segs[:, 3] < 0) or np.any(segs[:, 3] + segs[:, 2] > rows):
            raise ValueError(f"a segment's rows fall outside the {rows} rows of out")
        return segs

    def fill_moments(self, out: np.ndarray, segments) -> np.ndarray:
        """``(k_used, S1, S2)`` rows (``int64[R, 3]``) of every segment's replications; every
        segment's scenario must have a ``moment_size``."""
        if out.dtype != np.int64 or out.ndim != 2 or out.shape[1] != 3 or not out.flags.c_contiguous:
            raise ValueError(f"out must be C-contiguous int64[R, 3], got {out.dtype}{out.shape}")
        segs = self._segments(segments, out.shape[0])
        if any(self.moment_size[int(s)] is None for s in np.unique(segs[:, 0])):
            raise ValueError("a segment's scenario has no common cluster size: it cannot draw cluster moments")
        k1s, k2s, layout, pack = self._arrays("moments")
        _fill_moments_many(segs, k1s, k2s, layout, pack, out)
        return out

    def fill(self, out: np.ndarray, segments) -> np.ndarray:
        """Tables (``int32[R, K, 4]``) of every segment's replications; every segment's
        scenario must have ``K`` clusters."""
        R = out.shape[0]
        segs = self._segments(segments, R)
        K = {self.clusters[int(s)] for s in np.unique(segs[:, 0])}
        if out.dtype != np.int32 or out.ndim != 3 or out.shape[2] != 4 or not out.flags.c_contiguous \
                or K - {out.shape[1]}:
            raise ValueError(f"out must be C-contiguous int32[R, K, 4] with the segments' K {sorted(K)}, "
                             f"got {out.dtype}{out.shape}")
        k1s, k2s, layout, prob, alias, words = self._arrays("tables")
        if R:
            _fill_many(segs, k1s, k2s, layout, prob, alias, words, out.view(np.int64).reshape(R, 2 * out.shape[1]))
        return out


__all__ = ["SharedComposition", "group_length", "recording", "shared_law"]
