#!/usr/bin/env bash
# The libFuzzer targets (tests/fuzz), each run for FUZZ_SECONDS (default
# 30) from its committed seed corpus: request validation, the upload wire
# parser and state machine, the flag parser, Multiply's zero-copy wire
# parser. Built with clang, coverage instrumentation, ASan and UBSan in
# build-fuzz; a crash, a sanitizer report, a leak or a
# timeout fails the run, and the input that did it is kept in
# build-fuzz/findings.
set -euo pipefail
cd "$(dirname "$0")/.."
seconds=${FUZZ_SECONDS:-30}
targets=(request_validation upload_sequence config multiply_wire)
CC=clang CXX=clang++ cmake -S . -B build-fuzz -G Ninja -DGEMMD_FUZZ=ON -DGEMMD_CUDA=OFF \
  -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
cmake --build build-fuzz -j "$(nproc)" --target "${targets[@]/%/_fuzz}" >/dev/null
mkdir -p build-fuzz/findings
status=0
for target in "${targets[@]}"; do
  corpus=$(mktemp -d)  # new inputs go here, not into the repository
  cp tests/fuzz/corpus/$target/* "$corpus"/
  if build-fuzz/tests/fuzz/${target}_fuzz "$corpus" -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 \
       -max_len=4096 -artifact_prefix=build-fuzz/findings/${target}- -print_final_stats=1 \
       >build-fuzz/findings/$target.log 2>&1; then
    echo "fuzz $target: $(grep -o 'stat::number_of_executed_units: *[0-9]*' build-fuzz/findings/$target.log |
      grep -o '[0-9]*$') runs in ${seconds} s, nothing found"
  else
    echo "fuzz $target: FOUND something (build-fuzz/findings/$target.log):"
    grep -m5 -E "ERROR|SUMMARY|==[0-9]+==" build-fuzz/findings/$target.log || true
    status=1
  fi
  rm -rf "$corpus"
done
exit $status
