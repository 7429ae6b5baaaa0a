#!/usr/bin/env bash
# gemmd and gemm-client with their defaults take the canonical inline
# request (4096³, A and B in the message, D back in the reply), and a
# request over the message cap is told to go by handle.
set -euo pipefail
gemmd=$1
client=$2
work=$(mktemp -d)
trap 'kill -9 "$pid" 2>/dev/null || true; rm -rf "$work"' EXIT
"$gemmd" --listen 127.0.0.1:0 --metrics-listen "" --port-file "$work/port" 2>"$work/log" &
pid=$!
for _ in $(seq 100); do [[ -s $work/port ]] && break; sleep 0.1; done
export GEMM_TARGET=127.0.0.1:$(cat "$work/port")
"$client" bench --inline --shapes 4096x4096x4096 --steps 0 --concurrency 1 --count 1 >"$work/bench" 2>&1 ||
  { cat "$work/bench" "$work/log"; echo "FAIL: bench --inline 4096^3 with the defaults" >&2; exit 1; }
grep -q "total: 1 ok of 1" "$work/bench" || { cat "$work/bench"; echo "FAIL: the inline 4096^3 request failed" >&2; exit 1; }
"$client" bench --inline --shapes 8192x8192x4096 --steps 0 --concurrency 1 --count 1 >"$work/big" 2>&1 || true
grep -q "RESOURCE_EXHAUSTED: the request is .* bytes, over the largest message of .* multiply by handle" "$work/big" ||
  { cat "$work/big"; echo "FAIL: a request over the cap was not told to go by handle" >&2; exit 1; }
echo "2 passed, 0 failed"
