"""simlab core: counter-based randomness, scenario models, samplers (numba kernels that emit
per-cluster 2x2 tables or their sufficient statistics), exact distributions.  Knows
nothing of methods.  Importing it keys numba's cache on the kernel sources
(:mod:`simlab.numba_cache`)."""
from simlab.numba_cache import configure as _configure_numba_cache

_configure_numba_cache()
