"""Normal and gamma variates from the counter-based uniforms of ``simlab.rng``.

Each function takes the stream key ``(k1, k2)``, the replication ``rep`` and the next free
draw index ``draw``, and returns ``(value, next free draw index)``: a sampler threads one
draw counter through a replication, so replication ``r`` is a pure function of ``(key, r)``
whatever the chunking (the counter restarts at 0 in every replication).

* normal: Box & Muller (1958), "A note on the generation of random normal deviates", Ann.
  Math. Statist. 29:610-611 -- ``sqrt(-2 log(1 - u1)) cos(2 pi u2)`` (``1 - u1`` lies in
  ``(0, 1]``, so the logarithm is finite); two uniforms per variate.
* gamma: Marsaglia & Tsang (2000), "A simple method for generating gamma variables", ACM
  TOMS 26:363-372, for shape ``a >= 1`` (squeeze ``1 - 0.0331 x^4``, then the log test), and
  their boost ``G(a) = G(a + 1) U^(1/a)`` for ``a < 1``.  A rejection method: the number of
  draws varies, which is why the counter is threaded (acceptance is above 0.95 for every
  shape, so a cluster costs about three uniforms on average).
"""
from __future__ import annotations

import math

import numba as nb

from simlab.rng import uniform

TWO_PI = 2.0 * math.pi


@nb.njit(inline="always", cache=True)
def normal(k1, k2, rep, draw):
    """A standard normal variate and the next free draw index (two uniforms)."""
    u1 = uniform(k1, k2, rep, draw)
    u2 = uniform(k1, k2, rep, draw + 1)
    return math.sqrt(-2.0 * math.log(1.0 - u1)) * math.cos(TWO_PI * u2), draw + 2


@nb.njit(cache=True)
def gamma(k1, k2, rep, draw, shape):
    """A Gamma(shape, scale 1) variate and the next free draw index (``shape > 0``)."""
    boost = shape < 1.0
    a = shape + 1.0 if boost else shape
    d = a - 1.0 / 3.0
    c = 1.0 / math.sqrt(9.0 * d)
    while True:
        x, draw = normal(k1, k2, rep, draw)
        v = 1.0 + c * x
        if v <= 0.0:
            continue
        v = v * v * v
        w = 1.0 - uniform(k1, k2, rep, draw)  # uniform on (0, 1]: its logarithm is finite
        draw += 1
        x2 = x * x
        if w < 1.0 - 0.0331 * x2 * x2 or math.log(w) < 0.5 * x2 + d * (1.0 - v + math.log(v)):
            break
    g = d * v
    if boost:
        u = uniform(k1, k2, rep, draw)
        draw += 1
        g *= (1.0 - u) ** (1.0 / shape)  # 1 - u in (0, 1]: never a zero variate from u = 0
    return g, draw
