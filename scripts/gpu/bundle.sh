#!/usr/bin/env bash
# Builds here and packs what the GPU machine runs into .bundle.tar.xz
# (ignored by git, carried by the device tool): the binaries, stripped, and every
# non-system shared library they need (gRPC, protobuf, abseil,
# prometheus-cpp, ...). CUDA's own libraries are on that machine already.
set -euo pipefail
cd "$(dirname "$0")/../.."
scripts/build.sh
rm -rf .bundle
scripts/collect-runtime.sh .bundle build/server/gemmd build/client/gemm-client build/client/grpc-echo-bench build/kernels/bench/gemm-bench build/kernels/bench/transfer-limits \
  build/server/gemmd-selftest build/tests/kernels_gpu_test build/tests/planted_faults_gpu_test build/tests/cuda_engine_gpu_test build/tests/forms_gpu_test \
  build/tests/sketch_check_gpu_test \
  build/tests/device_fault_gpu_test build/tests/step_gate_gpu_test build/tests/soak_test
# The Python package as pip installed it (its stubs generated): the GPU
# machine has Debian's grpcio and numpy but no protoc to build them.
for site in build/python-venv/lib/python3*/site-packages; do
  if [[ -d $site/gemmd ]]; then mkdir -p .bundle/python && cp -r "$site/gemmd" .bundle/python/; fi
done
# OpenBLAS alone is 35 MB: compressed, the whole bundle fits the transfer.
tar -cJf .bundle.tar.xz .bundle
du -sh .bundle .bundle.tar.xz
