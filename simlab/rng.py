"""Counter-based random numbers.

Every uniform is a pure function of ``(seed, scenario key, replication, draw index)``:

    u = mix64(mix64(counter ^ k1) ^ k2) >> 11  * 2**-53,   counter = rep << 32 | draw

where ``mix64`` is the SplitMix64 finaliser (Steele, Lea & Flood 2014, "Fast splittable
pseudorandom number generators", OOPSLA) and ``(k1, k2)`` are two 64-bit words of
``sha256(seed, scenario key)``.  For a fixed key the map counter -> output is a bijection
(xor and mix64 are both invertible), so no two (replication, draw) pairs of one scenario
share a value, and any replication can be regenerated alone.  Kernels therefore produce
bitwise-identical tables for any chunking, worker count or backend.
"""
from __future__ import annotations

import hashlib

import numba as nb
import numpy as np

from simlab.limits import MAX_REPLICATIONS  # noqa: F401 - re-exported: kernels and samplers read it here

MAX_DRAWS_PER_REPLICATION = 1 << 32

_M1 = np.uint64(0xBF58476D1CE4E5B9)
_M2 = np.uint64(0x94D049BB133111EB)
_S30 = np.uint64(30)
_S27 = np.uint64(27)
_S31 = np.uint64(31)
_S32 = np.uint64(32)
_S11 = np.uint64(11)
_INV53 = 1.0 / 9007199254740992.0


@nb.njit(inline="always", cache=True)
def mix64(z):
    """SplitMix64 output function (a bijection of uint64)."""
    z = (z ^ (z >> _S30)) * _M1
    z = (z ^ (z >> _S27)) * _M2
    return z ^ (z >> _S31)


@nb.njit(inline="always", cache=True)
def uniform(k1, k2, rep, draw):
    """Uniform in [0, 1) for (key, replication, draw index); 53-bit resolution."""
    counter = (np.uint64(rep) << _S32) | np.uint64(draw)
    z = mix64(mix64(counter ^ k1) ^ k2)
    return np.float64(z >> _S11) * _INV53


@nb.njit(cache=True)
def uniforms(k1, k2, rep, first_draw, n):
    """``n`` consecutive uniforms of one replication's stream (for tests and references)."""
    out = np.empty(n, np.float64)
    for i in range(n):
        out[i] = uniform(k1, k2, rep, first_draw + i)
    return out


def stream_key(seed: int, scenario_key: str) -> tuple[np.uint64, np.uint64]:
    """Derive the two 64-bit key words from a user seed and a scenario's content key."""
    if not isinstance(seed, (int, np.integer)) or isinstance(seed, bool) or seed < 0:
        raise ValueError(f"seed must be a non-negative integer, got {seed!r}")
    digest = hashlib.sha256(f"simlab-stream|{int(seed)}|{scenario_key}".encode()).digest()
    return (np.uint64(int.from_bytes(digest[:8], "little")),
            np.uint64(int.from_bytes(digest[8:16], "little")))
