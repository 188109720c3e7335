#!/usr/bin/env bash
# One lease of a CUDA machine: GPU tests on the real device, then `simlab bench gpu`.
# Run from the project root with the wheels the image lacks in .whl/ (numpy < 2.5 for
# numba-cuda, pydantic & co.) and limit_cupy.py beside this script's caller; writes logs
# and gpu-bench.json under $OUT (default ./out).
set -u
OUT=${OUT:-out}; mkdir -p "$OUT"
export PYTHONUNBUFFERED=1 NUMBA_ENABLE_CUDASIM=0
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site \
    $(ls .whl/*.whl | grep -v numpy-) >"$OUT/install.log" 2>&1 || { cat "$OUT/install.log"; exit 1; }
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/np \
    .whl/numpy-*.whl >>"$OUT/install.log" 2>&1 || { cat "$OUT/install.log"; exit 1; }
export PYTHONPATH=/tmp/site:/tmp/np:$PWD
probe='import numpy, numba; from numba import cuda; print("numpy", numpy.__version__, "numba", numba.__version__,
"cuda", getattr(cuda, "implementation", "?"), cuda.is_available())'
if ! timeout 120 python3 -c "$probe"; then
    echo "carried numpy failed: trying the image's numpy"; export PYTHONPATH=/tmp/site:$PWD
    timeout 120 python3 -c "$probe" || exit 1
fi
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv
timeout ${BENCH_TIMEOUT:-200} python3 -c "from simlab.cli import main; import sys; sys.exit(main(sys.argv[1:]))" bench gpu \
    --reps "${REPS:-4000000000}" --check-reps "${CHECK_REPS:-1073741824}" --cpu-reps "${CPU_REPS:-16000000}" \
    --repeat "${REPEAT:-3}" --limit-cupy "${LIMIT_CUPY:-limit_cupy.py}" --out "$OUT/gpu-bench.json" 2>&1 \
    | tee "$OUT/bench.log" | grep -v RuntimeWarning | tail -25
timeout ${TEST_TIMEOUT:-120} python3 -m pytest -q -p no:cacheprovider tests/simlab/test_gpu_sampler.py \
    tests/methods/test_gpu_moments.py tests/studies/test_gpu_runner.py 2>&1 | tee "$OUT/pytest.log" | tail -15
