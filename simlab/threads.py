"""numba's thread count, set and restored by the benchmarks that time one thread."""
from __future__ import annotations


def numba_threads(n: int | None = None) -> int:
    """Set numba's thread count (when ``n`` is given) and return the previous one."""
    import numba

    before = int(numba.get_num_threads())
    if n is not None:
        numba.set_num_threads(n)
    return before
