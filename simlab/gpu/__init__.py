"""Optional GPU back end (numba's CUDA target): ``import simlab`` never imports it.

Kernels here compute the same numbers as the CPU kernels, bit for bit:

* integer and comparison code is not rewritten: :func:`device_twin` compiles the CPU
  kernel's own Python source (``simlab.rng.uniform`` and friends) for the GPU;
* floating-point code uses IEEE operations that are correctly rounded on both targets
  (``+ - * / sqrt``, integer conversions); the one thing a GPU compiler adds is fused
  multiply-add contraction (``a * b + c`` rounded once), which numba's CPU target never
  does.  NVVM contracts by default and numba's ``cuda.jit`` has no switch for it, so
  every product that is added to or subtracted from is written with :data:`mul_rn`,
  :data:`add_rn`, :data:`sub_rn` -- libdevice's ``__nv_dmul_rn`` etc., which lower to
  ``mul.rn.f64`` / ``add.rn.f64``, instructions PTX forbids ptxas to fuse (PTX ISA,
  "Floating point instructions": an explicit rounding modifier disables contraction).
  ``tests/simlab/test_gpu_sampler.py`` checks the compiled PTX holds no ``fma``.

Where no GPU is present the kernels still run under numba's CUDA simulator
(``NUMBA_ENABLE_CUDASIM=1``, set before numba is imported): that is how CI tests them.
"""
from __future__ import annotations

import functools
import types


@functools.lru_cache(maxsize=1)
def _probe() -> tuple[bool, str]:
    try:
        from numba import cuda
    except Exception as exc:  # numba without a CUDA target (numba-cuda not installed)
        return False, f"numba.cuda cannot be imported ({exc}); install the 'gpu' extra (numba-cuda)"
    try:
        ok = bool(cuda.is_available())
    except Exception as exc:  # driver present but broken
        return False, f"numba.cuda.is_available() failed: {exc}"
    if not ok:
        return False, "no CUDA GPU is visible (numba.cuda.is_available() is False) and NUMBA_ENABLE_CUDASIM is not set"
    return True, "simulator" if simulated() else "gpu"


def simulated() -> bool:
    """True when numba's CUDA simulator stands in for a GPU."""
    from numba.core import config

    return bool(config.ENABLE_CUDASIM)


def available() -> bool:
    """A CUDA GPU (or numba's CUDA simulator) can run the kernels of this package."""
    return _probe()[0]


def why_unavailable() -> str:
    """Why :func:`available` is False ('' when it is True)."""
    ok, why = _probe()
    return "" if ok else why


def require() -> None:
    """Raise ``ValueError`` naming the reason when no GPU can run the kernels."""
    ok, why = _probe()
    if not ok:
        raise ValueError(f"--device gpu: {why}")


def device_twin(fn, **rebind):
    """A CUDA device function compiled from the Python source of the numba CPU function
    ``fn`` (``@njit``), with the global names in ``rebind`` (the helpers it calls)
    pointing at their own twins: one source of truth for both targets."""
    from numba import cuda

    f = getattr(fn, "py_func", fn)
    g = dict(f.__globals__)
    g.update(rebind)
    twin = types.FunctionType(f.__code__, g, f.__name__, f.__defaults__, f.__closure__)
    return cuda.jit(device=True)(twin)


def _rounded_ops():
    if simulated():  # Python floats are IEEE doubles rounded to nearest: already exact
        from numba import cuda

        return (cuda.jit(device=True)(lambda x, y: x * y), cuda.jit(device=True)(lambda x, y: x + y),
                cuda.jit(device=True)(lambda x, y: x - y))
    from numba import cuda
    from numba.cuda import libdevice

    add_rn = libdevice.dadd_rn

    @cuda.jit(device=True)
    def sub_rn(x, y):  # libdevice has no __nv_dsub_rn; negation is exact
        return add_rn(x, -y)

    return libdevice.dmul_rn, add_rn, sub_rn


@functools.lru_cache(maxsize=1)
def rounded_ops():
    """``(mul_rn, add_rn, sub_rn)``: float64 operations each rounded on its own (never fused)."""
    return _rounded_ops()


def launch_shape(n: int, per_thread: int = 1) -> tuple[int, int]:
    """(blocks, threads per block) covering ``n`` items, ``per_thread`` items per thread;
    small blocks under the simulator, which runs every thread as a Python thread."""
    threads = 32 if simulated() else 256
    return max(1, -(-n // (threads * per_thread))), threads
