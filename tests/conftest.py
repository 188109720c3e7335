"""Test-session setup shared by every package's tests.

GPU kernels (``simlab.gpu``, ``methods.gpu``, ``studies.engine.gpu``) are tested on a real GPU
where one is installed and otherwise under numba's CUDA simulator, which must be chosen
before numba is first imported: hence here.  Set ``NUMBA_ENABLE_CUDASIM`` yourself to
override (``0`` on a GPU machine keeps the real device; that is also the default there).

The persistent store of constructions (``simlab.stored_constructions``) is a fresh directory
per session, inherited by the CLI's subprocesses, so that the suite neither reads nor fills the
user's store; the shipped entries are still read, as a user's run reads them.
"""
import os
import shutil
import tempfile

os.environ["SIMLAB_CACHE_DIR"] = tempfile.mkdtemp(prefix="simlab-test-store-")

if "NUMBA_ENABLE_CUDASIM" not in os.environ and shutil.which("nvidia-smi") is None:
    os.environ["NUMBA_ENABLE_CUDASIM"] = "1"
