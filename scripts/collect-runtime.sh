#!/usr/bin/env bash
# Usage: collect-runtime.sh DEST [BINARY...]
# Copies the binaries (default: gemmd and gemm-client from build/) into
# DEST/bin, debug info stripped but symbols kept for stack traces, and every
# non-system shared library they load into DEST/lib: what ldd lists, plus
# OpenBLAS, which gemmd loads with dlopen. glibc, libstdc++ and CUDA's own
# libraries stay out: the target (the CUDA runtime image, the GPU machine)
# has them. Used by the Dockerfile and scripts/gpu/bundle.sh.
set -euo pipefail
dest=$1
shift
bins=("$@")
[[ ${#bins[@]} -gt 0 ]] || bins=(build/server/gemmd build/client/gemm-client)
mkdir -p "$dest/bin" "$dest/lib"
for b in "${bins[@]}"; do
  strip --strip-debug -o "$dest/bin/$(basename "$b")" "$b"
done
# awk reads to the end: an early exit would kill ldconfig with SIGPIPE, which pipefail reports.
openblas=$(ldconfig -p | awk '/libopenblas\.so\.0 / && !found {print $NF; found = 1}')
{
  for b in "${bins[@]}" $openblas; do ldd "$b" | awk '/=>/ {print $3}'; done
  # OpenBLAS itself, and (above) what it loads: libgfortran, libquadmath.
  if [[ -n $openblas ]]; then echo "$openblas"; fi
} | sort -u | grep -vE '/(libc|libm|libstdc\+\+|libgcc_s|libpthread|libdl|librt|ld-linux[^/]*)\.so|/libcuda|/libcudart|/libcublas' |
  while read -r lib; do cp -L "$lib" "$dest/lib/"; done
