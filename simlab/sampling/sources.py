"""Where a study's tables come from: the composition sampler or the trial-level generator.

``trial`` is ``simlab.generate.TableGenerator`` (one uniform per trial pair, the
project's reference stream: the tables ``simulate_tables`` returns).

``composition`` draws whole cluster tables: each cluster's exact recorded-table law
(``simlab.exact.cluster_laws``: multinomial / Dirichlet-multinomial over the
compositions of its size) is tabulated once, consecutive clusters are grouped so that a
group's joint law has at most ``GROUP_OUTCOMES`` outcomes (e.g. three 3-trial clusters:
20^3 = 8000; six 1-trial clusters: 4^6 = 4096), and each group is drawn with
ONE uniform through Walker's alias method (Walker 1977, ACM TOMS 3:253-256; table set-up
by Vose 1991, IEEE TSE 17:972-975): ``x = u n``, ``j = floor(x)``, take ``j`` if
``x - j < prob[j]`` else ``alias[j]``.  The uniform is ``simlab.rng.uniform(k1, k2, rep,
group)`` with the key of ``(seed, scenario key | composition-v2)``, so every replication
is still a pure function of its index: identical for any chunking or worker count.
The joint law is the product of the member laws, so the tables have exactly the
scenario's distribution (the 53-bit uniform leaves ``53 - log2(n)`` bits for the alias
fraction); only the realisation differs from the ``trial`` stream.

Moment path: when every non-empty cluster table of the scenario has the same size ``m``
(``moment_size``), ``fill_moments`` makes the same draws but adds up each drawn group
outcome's precomputed ``(clusters, sum D, sum D^2)`` instead of writing its tables
(``D = n01 - n10``): the sufficient statistics of the cluster-moment methods
(``simlab.sampling.moments``; the methods of ``methods.fixed._moments`` decide from them),
at a fraction of the memory traffic.

``auto`` uses ``composition`` when the cluster laws are available (fixed or explicit
sizes; rho = 0 or perfect recording or one-trial clusters; at most ``SINGLE_OUTCOMES``
tables per cluster) and ``trial`` otherwise.
"""
from __future__ import annotations

import abc
import math

import numba as nb
import numpy as np

from simlab.exact import ExactUnsupported, cluster_laws
from simlab.generate import GENERATOR_VERSION, TableGenerator
from simlab.rng import MAX_REPLICATIONS, stream_key, uniform
from simlab.scenario import PairedScenario

from .calibration import CalibrationSource, calibration_source
from .moments import common_size, row_moments

COMPOSITION_VERSION = "2"  # 2: laws computed with IEEE +-*/ only, the same bits on every CPU
GROUP_OUTCOMES = 8192      # joint outcomes per group (alias table rows)
TOTAL_OUTCOMES = 1 << 21   # all distinct alias tables of a scenario together
SINGLE_OUTCOMES = 65_536   # tables of one cluster's law, beyond which ``auto`` falls back
MAX_GROUP = 16             # clusters per group


@nb.njit(inline="always", cache=True)
def alias_slot(x, n):
    """(slot j, fraction) of ``x = u n`` in an ``n``-slot alias table."""
    j = int(x)
    if j >= n:
        j = n - 1
    return j, x - j


@nb.njit(inline="always", cache=True)
def _alias_slot(k1, k2, rep, h, n):
    """(slot j, fraction) of group ``h``'s ``n``-slot alias table for replication ``rep``:
    ONE uniform; the caller takes slot j when the fraction is below ``prob[j]``, else its alias."""
    return alias_slot(uniform(k1, k2, rep, h) * n, n)


@nb.njit(cache=True)
def _fill_groups(k1, k2, rep_start, out64, prob, alias, comp64, g_off, g_n, g_first, g_width):
    """out64: int64[R, 2K] view of int32[R, K, 4]; group h writes g_width[h] int64 words
    starting at word 2 * g_first[h] from row ``alias-selected`` of its table."""
    R = out64.shape[0]
    G = g_off.shape[0]
    for i in range(R):
        rep = rep_start + i
        for h in range(G):
            off = g_off[h]
            j, f = _alias_slot(k1, k2, rep, h, g_n[h])
            row = off + (j if f < prob[off + j] else alias[off + j])
            w0 = 2 * g_first[h]
            for t in range(g_width[h]):
                out64[i, w0 + t] = comp64[row, t]


@nb.njit(cache=True)
def _fill_group_moments(k1, k2, rep_start, out, pack, g_off, g_n):
    """out: int64[R, 3] rows (k_used, S1, S2): the sums over groups of the drawn outcomes'
    moments -- the same draws as ``_fill_groups``, without writing tables.  ``pack`` row
    ``off + j`` = (alias probability, moments of outcome j, moments of its alias, pad):
    one cache line per draw instead of three dependent loads (1.6x faster)."""
    R = out.shape[0]
    G = g_off.shape[0]
    for i in range(R):
        rep = rep_start + i
        k_used = 0
        S1 = 0
        S2 = 0
        for h in range(G):
            j, f = _alias_slot(k1, k2, rep, h, g_n[h])
            row = g_off[h] + j
            c = 1 if f < pack[row, 0] else 4
            k_used += np.int64(pack[row, c])
            S1 += np.int64(pack[row, c + 1])
            S2 += np.int64(pack[row, c + 2])
        out[i, 0] = k_used
        out[i, 1] = S1
        out[i, 2] = S2


@nb.njit(cache=True)
def vose_alias(p):
    """Alias table (prob, alias) for the probabilities ``p`` (Vose 1991, "Method 3")."""
    n = p.shape[0]
    q = p * n
    prob = np.zeros(n)
    alias = np.arange(n).astype(np.int64)
    small = np.empty(n, np.int64)
    large = np.empty(n, np.int64)
    ns = 0
    nl = 0
    for i in range(n):
        if q[i] < 1.0:
            small[ns] = i
            ns += 1
        else:
            large[nl] = i
            nl += 1
    while ns > 0 and nl > 0:
        ns -= 1
        s = small[ns]
        nl -= 1
        g = large[nl]
        prob[s] = q[s]
        alias[s] = g
        q[g] = (q[g] + q[s]) - 1.0
        if q[g] < 1.0:
            small[ns] = g
            ns += 1
        else:
            large[nl] = g
            nl += 1
    for t in range(nl):
        prob[large[t]] = 1.0
    for t in range(ns):
        prob[small[t]] = 1.0
    return prob, alias


def composition_key(scenario_key: str, seed: int) -> tuple[np.uint64, np.uint64]:
    """The stream key of the composition sampler for a scenario's content key."""
    return stream_key(int(seed), f"{scenario_key}|composition-v{COMPOSITION_VERSION}")


def joint_law(members: list[tuple[np.ndarray, np.ndarray]]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The joint law of a group of clusters with laws ``members`` (``(tables, probs)``
    each), drawn with one uniform: ``(prob, alias, moments)`` -- the alias table
    (``vose_alias``, aliases relative to the table) and each joint outcome's ``(clusters,
    sum D, sum D^2)`` (the members' ``row_moments`` added up), outcomes in the order of
    ``joint_words``."""
    joint_p = np.ones(1)
    mom = np.zeros((1, 3), np.int64)
    seen: dict[int, np.ndarray] = {}  # each distinct member's moments, once
    for t, p in members:
        if id(t) not in seen:
            seen[id(t)] = row_moments(t[:, None, :])
        joint_p = (joint_p[:, None] * p[None, :]).ravel()
        mom = (mom[:, None, :] + seen[id(t)][None, :, :]).reshape(-1, 3)
    joint_p = joint_p / math.fsum(joint_p)  # correctly rounded: the same on every CPU
    pr, al = vose_alias(joint_p)
    return pr, al, mom


def joint_words(members: list[tuple[np.ndarray, np.ndarray]]) -> np.ndarray:
    """Each joint outcome's tables of ``members``' group as ``int64[n, 2 len(members)]``
    words (the group's ``int32[len, 4]`` tables), the first member varying slowest."""
    joint_t = np.zeros((1, 0, 4), np.int32)
    for t, _ in members:
        joint_t = np.concatenate([np.repeat(joint_t, t.shape[0], axis=0),
                                  np.tile(t[:, None, :], (joint_t.shape[0], 1, 1))], axis=1)
    return np.ascontiguousarray(joint_t).view(np.int64).reshape(joint_t.shape[0], -1)


class TableSource(abc.ABC):
    """Fills ``int32[R, K, 4]`` buffers with replications of one scenario under one seed."""
    name = "?"
    version = "?"
    moment_size: int | None = None  # set when fill_moments can draw (k, S1, S2) directly
    calibration: CalibrationSource | None = None  # the scenario's judge calibration sets, when it declares them

    @abc.abstractmethod
    def fill(self, out: np.ndarray, rep_start: int) -> np.ndarray:
        """Write replications ``rep_start .. rep_start + len(out) - 1`` into ``out``."""

    def check_buffer(self, out: np.ndarray, rep_start: int) -> int:
        """The replications ``len(out)`` that ``fill`` may write: ``out`` must be a C-contiguous
        ``int32[R, K, 4]`` and ``rep_start .. rep_start + R - 1`` inside the counter's range."""
        R = out.shape[0]
        if out.dtype != np.int32 or out.ndim != 3 or out.shape[1:] != (self.clusters, 4) \
                or not out.flags.c_contiguous:
            raise ValueError(f"out must be C-contiguous int32[R, {self.clusters}, 4], got {out.dtype}{out.shape}")
        if rep_start < 0 or rep_start + R > MAX_REPLICATIONS:
            raise ValueError(f"replications must lie in [0, {MAX_REPLICATIONS}), got {rep_start}..{rep_start + R}")
        return R

    def tables(self, start: int, stop: int) -> np.ndarray:
        if stop < start:
            raise ValueError(f"stop ({stop}) must be >= start ({start})")
        return self.fill(np.empty((stop - start, self.clusters, 4), np.int32), start)

    def fill_calibration(self, out: np.ndarray, rep_start: int) -> np.ndarray:
        """Write the judge calibration counts of replications ``rep_start ..`` into
        ``int32[R, A, 4]`` ``out`` (``simlab.sampling.calibration``): the calibration sets that
        go with the tables ``fill`` writes for the same replications."""
        if self.calibration is None:
            raise ValueError("the scenario declares no judge calibration set (label_noise.calibration), so there "
                             "are no calibration counts to give a judge-corrected method")
        return self.calibration.fill(out, rep_start)

    def fill_moments(self, out: np.ndarray, rep_start: int) -> np.ndarray:
        """Write the cluster moments ``(k_used, S1, S2)`` of replications ``rep_start ..``
        into ``int64[R, 3]`` ``out``: the per-replication ``(non-empty clusters, sum D,
        sum D^2)`` of what ``fill`` writes.  Only where ``moment_size`` is set."""
        raise ValueError(f"the {self.name} source cannot draw cluster moments (its clusters do not share one "
                         "size, or it is the trial-level generator); use fill")


class TrialSource(TableSource):
    name = "trial"
    version = GENERATOR_VERSION

    def __init__(self, scenario: PairedScenario, seed: int):
        self.clusters = scenario.clusters
        self._gen = TableGenerator(scenario, seed)
        self.calibration = calibration_source(scenario, seed)

    def fill(self, out, rep_start):
        return self._gen.fill(out, rep_start)


class CompositionSource(TableSource):
    name = "composition"
    version = COMPOSITION_VERSION

    def __init__(self, scenario: PairedScenario, seed: int):
        laws = cluster_laws(scenario)  # raises ExactUnsupported
        if max(law[0].shape[0] for law in laws) > SINGLE_OUTCOMES:
            raise ExactUnsupported(f"a cluster law has more than {SINGLE_OUTCOMES} tables")
        self.clusters = scenario.clusters
        self.calibration = calibration_source(scenario, seed)
        self.moment_size = common_size(laws, scenario.clusters)
        self.k1, self.k2 = composition_key(scenario.key, seed)
        limit = GROUP_OUTCOMES
        while True:
            built = self._build(laws, limit)
            if built <= TOTAL_OUTCOMES or limit <= max(law[0].shape[0] for law in laws):
                break
            limit //= 4

    def _build(self, laws, limit: int) -> int:
        law_ids = {}
        ids = []
        for law in laws:
            ids.append(law_ids.setdefault(id(law), len(law_ids)))
        by_id = {i: laws[k] for k, i in enumerate(ids)}
        # greedy grouping of consecutive clusters
        groups = []  # (first cluster, tuple of law ids)
        k = 0
        K = len(laws)
        while k < K:
            members = [ids[k]]
            size = laws[k][0].shape[0]
            while (k + len(members) < K and len(members) < MAX_GROUP
                   and size * laws[k + len(members)][0].shape[0] <= limit):
                size *= laws[k + len(members)][0].shape[0]
                members.append(ids[k + len(members)])
            groups.append((k, tuple(members)))
            k += len(members)
        tables_by_sig: dict[tuple, int] = {}
        probs, aliases, comps, moms, offsets, counts = [], [], [], [], [], []
        total = 0
        width_max = 2 * max(len(m) for _, m in groups)
        g_off, g_n, g_first, g_width = [], [], [], []
        for first, sig in groups:
            if sig not in tables_by_sig:
                members = [by_id[lid] for lid in sig]
                pr, al, mom = joint_law(members)
                c64 = np.zeros((pr.size, width_max), np.int64)
                c64[:, :2 * len(sig)] = joint_words(members)
                tables_by_sig[sig] = len(offsets)
                offsets.append(total)
                counts.append(pr.size)
                probs.append(pr)
                aliases.append(al)
                comps.append(c64)
                moms.append(mom)
                total += pr.size
            t_id = tables_by_sig[sig]
            g_off.append(offsets[t_id])
            g_n.append(counts[t_id])
            g_first.append(first)
            g_width.append(2 * len(sig))
        self._prob = np.concatenate(probs)
        self._alias = np.concatenate(aliases)
        self._comp = np.ascontiguousarray(np.concatenate(comps, axis=0))
        self._pack = _moment_pack(self._prob, self._alias, np.concatenate(moms, axis=0), offsets, counts)
        self._g = tuple(np.asarray(a, np.int64) for a in (g_off, g_n, g_first, g_width))
        self.groups = len(groups)
        return total

    def fill(self, out, rep_start):
        R = self.check_buffer(out, rep_start)
        if R:
            _fill_groups(self.k1, self.k2, np.int64(rep_start), out.view(np.int64).reshape(R, 2 * self.clusters),
                         self._prob, self._alias, self._comp, *self._g)
        return out


    def moment_tables(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """``(pack, group offsets, group sizes)``: what ``fill_moments`` draws from (for
        other back ends of the same draws, e.g. ``simlab.gpu.moments``)."""
        return self._pack, self._g[0], self._g[1]

    def fill_moments(self, out, rep_start):
        if self.moment_size is None:
            return super().fill_moments(out, rep_start)
        R = out.shape[0]
        if out.dtype != np.int64 or out.shape != (R, 3) or not out.flags.c_contiguous:
            raise ValueError(f"out must be C-contiguous int64[R, 3], got {out.dtype}{out.shape}")
        if rep_start < 0 or rep_start + R > MAX_REPLICATIONS:
            raise ValueError(f"replications must lie in [0, {MAX_REPLICATIONS}), got {rep_start}..{rep_start + R}")
        if R:
            _fill_group_moments(self.k1, self.k2, np.int64(rep_start), out, self._pack, self._g[0], self._g[1])
        return out


@nb.njit(cache=True)
def pack_rows(out, prob, alias, mom):
    """One alias table's pack rows into ``out`` (float64[n, 8]): (prob, own k/S1/S2, alias's
    k/S1/S2, 0) per slot, ``alias`` relative to the table; the moments are small integers,
    exact in float64."""
    for i in range(prob.shape[0]):
        a = alias[i]
        out[i, 0] = prob[i]
        for c in range(3):
            out[i, 1 + c] = mom[i, c]
            out[i, 4 + c] = mom[a, c]
        out[i, 7] = 0.0


def _moment_pack(prob, alias, mom, offsets, counts) -> np.ndarray:
    """float64[rows, 8]: ``pack_rows`` of every table (at ``offsets``, ``counts`` slots)."""
    pack = np.empty((prob.shape[0], 8), np.float64)
    for off, n in zip(offsets, counts):
        pack_rows(pack[off:off + n], prob[off:off + n], alias[off:off + n], mom[off:off + n])
    return pack


def table_source(scenario: PairedScenario, seed: int, sampler: str = "auto") -> TableSource:
    """The table source a study uses for ``scenario`` (see the module docstring)."""
    if sampler == "trial":
        return TrialSource(scenario, seed)
    if sampler not in ("auto", "composition"):
        raise ValueError(f"sampler must be 'auto', 'composition' or 'trial', got {sampler!r}")
    try:
        return CompositionSource(scenario, seed)
    except ExactUnsupported as exc:
        if sampler == "composition":
            raise ValueError(f"the composition sampler cannot draw this scenario: {exc}") from None
        return TrialSource(scenario, seed)


def source_name(scenario: PairedScenario, sampler: str = "auto") -> str:
    """Which source ``table_source`` picks, without building its tables."""
    if sampler == "trial":
        return "trial"
    try:
        laws = cluster_laws(scenario)
    except ExactUnsupported:
        return "trial"
    return "composition" if max(law[0].shape[0] for law in laws) <= SINGLE_OUTCOMES else "trial"


def scenario_tables(scenario: PairedScenario, seed: int, start: int, stop: int, sampler: str = "auto") -> np.ndarray:
    """Exactly the tables a study evaluates for replications ``start .. stop-1``."""
    return table_source(scenario, seed, sampler).tables(start, stop)
