#!/usr/bin/env bash
# One-shot check on a machine with an NVIDIA GPU: the GPU tests, then the GPU benchmarks.
#
#   scripts/gpu_check.sh
#
# Installs eagerflow with its gpu and dev extras when cupy or pytest is missing, runs the
# tests marked `gpu` (memory first, then devices, the generated fused kernels, captured
# steps, then the registry sweep, each under a time limit so the whole stays within about
# 9 minutes), then `python -m eagerflow.benchmarks --filter gpu`. A failing or timed-out
# step does not stop the next one. Outputs go to "$OUT" when set (else
# /tmp/eagerflow_gpu_check): summary.txt, a log per step, nvidia-smi.txt. Time limits, in
# seconds: GPU_CHECK_FAST_S (memory and device tests, default 100), GPU_CHECK_CODEGEN_S (the
# generated-kernel tests, 90), GPU_CHECK_CAPTURE_S (captured steps, 70), GPU_CHECK_SWEEP_S
# (the sweep, 150), GPU_CHECK_BENCH_S (benchmarks, 120). GPU_CHECK_INSTALL=0 skips the
# install step (for a machine without a package index).
set -u
cd "$(dirname "$0")/.."
OUT_DIR="${OUT:-/tmp/eagerflow_gpu_check}"
mkdir -p "$OUT_DIR"
PY="${PYTHON:-python3}"
SUMMARY="$OUT_DIR/summary.txt"
: > "$SUMMARY"
export PYTHONUNBUFFERED=1  # logs stay complete when a step is stopped at its time limit

say() { echo "[gpu_check] $*" | tee -a "$SUMMARY"; }

# Runs "$@" under a time limit; SIGINT first, so that pytest still prints its counts.
limited() {
    local seconds="$1"; shift
    timeout -s INT -k 15 "$seconds" "$@"
}

nvidia-smi > "$OUT_DIR/nvidia-smi.txt" 2>&1 || say "nvidia-smi failed (see nvidia-smi.txt)"
if [ "${GPU_CHECK_INSTALL:-1}" != 0 ] && ! "$PY" -c "import cupy, pytest" > /dev/null 2>&1
then
    say "installing eagerflow[gpu,dev]"
    # Few retries: on a machine without a package index this fails fast instead of hanging.
    limited 180 "$PY" -m pip install --quiet --disable-pip-version-check --retries 1 \
        --timeout 15 -e ".[gpu,dev]" > "$OUT_DIR/pip.txt" 2>&1 \
        || say "pip install failed (see pip.txt)"
fi
"$PY" - 2>&1 <<'EOF' | tee -a "$SUMMARY"
import importlib.util
try:
    import cupy
    print("[gpu_check] cupy %s, %d CUDA device(s)" % (
        cupy.__version__, cupy.cuda.runtime.getDeviceCount()))
except Exception as exc:  # noqa: BLE001
    print("[gpu_check] cupy unusable: %s" % exc)
if importlib.util.find_spec("torch") is None:
    print("[gpu_check] torch not installed: its DLPack test and benchmark column are skipped")
else:
    import torch
    print("[gpu_check] torch %s, cuda available: %s" % (torch.__version__,
                                                         torch.cuda.is_available()))
EOF

run_tests() {  # name, seconds, test files...
    local name="$1" seconds="$2"; shift 2
    limited "$seconds" "$PY" -m pytest -m gpu -q -rfEs -p no:cacheprovider "$@" \
        > "$OUT_DIR/tests_$name.txt" 2>&1
    local rc=$?
    local counts
    counts=$(grep -E "(passed|failed|error|skipped|no tests ran)" "$OUT_DIR/tests_$name.txt" \
        | tail -n 1)
    say "tests $name: exit $rc${counts:+; $counts}"
    grep -E "^(FAILED|ERROR) " "$OUT_DIR/tests_$name.txt" | head -n 20 | tee -a "$SUMMARY"
}

run_tests memory_and_devices "${GPU_CHECK_FAST_S:-100}" \
    tests/test_gpu_memory.py tests/test_devices.py
run_tests codegen "${GPU_CHECK_CODEGEN_S:-90}" tests/function/test_gpu_codegen.py
run_tests capture "${GPU_CHECK_CAPTURE_S:-70}" tests/function/test_capture.py
run_tests sweep "${GPU_CHECK_SWEEP_S:-150}" tests/test_gpu_sweep.py

limited "${GPU_CHECK_BENCH_S:-120}" "$PY" -m eagerflow.benchmarks --filter gpu \
    > "$OUT_DIR/benchmarks.txt" 2>&1
say "benchmarks: exit $?"
tee -a "$SUMMARY" < "$OUT_DIR/benchmarks.txt"
