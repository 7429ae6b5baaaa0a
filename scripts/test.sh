#!/usr/bin/env bash
# One command for the whole test suite: install dependencies, build, run
# every test; then the same suite again under AddressSanitizer and
# LeakSanitizer, so a leak or memory error fails the run. GPU tests skip
# with a reason on machines without a GPU. Set GEMMD_SKIP_SANITIZE=1 to skip
# the second pass. Last, the libFuzzer targets run for FUZZ_SECONDS each
# (scripts/fuzz.sh; GEMMD_SKIP_FUZZ=1 skips them).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
scripts/build.sh
(cd build && ctest --output-on-failure -j "$(nproc)")
if [[ ${GEMMD_SKIP_SANITIZE:-0} != 1 ]]; then
  GEMMD_BUILD_DIR=build-asan scripts/build.sh -DGEMMD_SANITIZE=ON -DGEMMD_CUDA=OFF -DCMAKE_BUILD_TYPE=Debug
  # tests/lsan.supp: OpenSSL's per-thread state, freed after LeakSanitizer looks.
  (cd build-asan && LSAN_OPTIONS="suppressions=$PWD/../tests/lsan.supp" ctest --output-on-failure -j "$(nproc)")
fi
if [[ ${GEMMD_SKIP_FUZZ:-0} != 1 ]]; then
  scripts/fuzz.sh
fi
