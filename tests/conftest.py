"""Test-session setup shared by every package's tests.

GPU kernels (``simlab.gpu``, ``methods.gpu``, ``studies.engine.gpu``) are tested on a real GPU
where one is installed and otherwise under numba's CUDA simulator, which must be chosen
before numba is first imported: hence here.  Set ``NUMBA_ENABLE_CUDASIM`` yourself to
override (``0`` on a GPU machine keeps the real device; that is also the default there).
"""
import os
import shutil

if "NUMBA_ENABLE_CUDASIM" not in os.environ and shutil.which("nvidia-smi") is None:
    os.environ["NUMBA_ENABLE_CUDASIM"] = "1"
