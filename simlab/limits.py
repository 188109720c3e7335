"""Bounds of the counter-based streams that specs validate against without importing numba
(``simlab.rng`` holds the generator itself)."""

MAX_REPLICATIONS = 1 << 32  # replication index occupies the high 32 bits of the counter
