#!/usr/bin/env bash
# Installs gemmd's build and test dependencies from Debian 12's packages.
# Idempotent: apt runs only when something is missing. CUDA 13 is not a
# Debian package: where /usr/local/cuda exists it is used, else the GPU parts
# are left out of the build.
#   install-deps.sh          everything: build, tests, deploy checks
#   install-deps.sh build    only what building needs (the Dockerfile's builder)
set -euo pipefail
packages=(
  build-essential cmake ninja-build pkg-config git
  libgrpc++-dev protobuf-compiler-grpc libprotobuf-dev protobuf-compiler grpc-proto
  libabsl-dev prometheus-cpp-dev libspdlog-dev libcli11-dev nlohmann-json3-dev
  libopenblas-dev libfp16-dev libcurl4-openssl-dev zlib1g-dev
  libgtest-dev libgmock-dev python3
)
if [[ ${1:-all} != build ]]; then
  # Tests: the Python package (pip-installed into a virtual environment;
  # torch, CPU-only, for its tensor tests), the ladder plot, TLS
  # certificates made per run, a real Prometheus (and promtool) scraping the
  # server, manifest linting, clang and its libFuzzer runtime for the fuzz
  # targets.
  packages+=(curl openssl python3-grpcio python3-protobuf python3-numpy python3-matplotlib python3-yaml
             python3-venv python3-setuptools python3-torch
             prometheus yamllint clang libclang-rt-14-dev)
fi
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "ok installed" || missing+=("$p")
done
if [[ ${#missing[@]} -eq 0 ]]; then
  echo "install-deps: all ${#packages[@]} packages present"
  exit 0
fi
sudo=""
[[ $(id -u) -eq 0 ]] || sudo=sudo
echo "install-deps: installing ${missing[*]}"
$sudo apt-get update -qq
DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}"
