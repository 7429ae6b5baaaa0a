#!/usr/bin/env bash
# Configures and builds into build/ (or $GEMMD_BUILD_DIR). Extra arguments go
# to CMake, e.g. -DGEMMD_CUDA=OFF.
set -euo pipefail
cd "$(dirname "$0")/.."
dir=${GEMMD_BUILD_DIR:-build}
cmake -S . -B "$dir" -G Ninja "$@" >/dev/null
cmake --build "$dir" -j "$(nproc)"
