"""The cluster-moment sufficient statistics of a paired table batch: data, not method.

With ``D_k = n01 - n10`` in cluster ``k``, a replication whose non-empty clusters all have
``m`` trials is summarised by three integers ``(k_used, S1 = sum D_k, S2 = sum D_k^2)``.
The cluster-mean methods (``methods.fixed._moments``) decide from exactly these numbers,
so the samplers may draw them instead of whole tables (``CompositionSource.fill_moments``).
"""
from __future__ import annotations

import numpy as np

# (k m)^2 must stay below 2^63 for the int64 numerator k S2 - S1^2 of the moment variance
MAX_TRIALS_EXACT = 3_000_000_000


def row_moments(joint_t: np.ndarray) -> np.ndarray:
    """int64[rows, 3]: ``(non-empty clusters, sum D, sum D^2)`` of each row of
    ``joint_t[rows, clusters, 4]``."""
    t = joint_t.astype(np.int64)
    D = t[..., 2] - t[..., 1]
    return np.stack([(t.sum(axis=2) > 0).sum(axis=1), D.sum(axis=1), (D * D).sum(axis=1)], axis=1)


def common_size(laws, clusters: int) -> int | None:
    """The one size ``m`` every non-empty cluster table of every law ``(tables, probs)``
    has, if there is one and the moments stay exact in int64 (``m K <= MAX_TRIALS_EXACT``);
    else None."""
    sizes = set()
    for law in {id(law): law for law in laws}.values():  # identical clusters share one law object
        sizes |= table_sizes(law)
    return one_size(sizes, clusters)


def table_sizes(law) -> set[int]:
    """The sizes of the non-empty tables of a law ``(tables, probs)``."""
    n = law[0].sum(axis=1)
    return {int(v) for v in np.unique(n[n > 0])}


def one_size(sizes: set[int], clusters: int) -> int | None:
    """``common_size``'s answer from the sizes of all its laws' non-empty tables."""
    if len(sizes) != 1:
        return None
    m = next(iter(sizes))
    return m if m * clusters <= MAX_TRIALS_EXACT else None
