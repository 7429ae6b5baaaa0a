#!/usr/bin/env bash
# SIGTERM while a request runs: during the drain delay health says
# NOT_SERVING and new requests are still served; the running request
# finishes; the server exits 0.
set -euo pipefail
gemmd=$1
client=$2
work=$(mktemp -d)
trap 'kill -9 "$pid" 2>/dev/null || true; rm -rf "$work"' EXIT
"$gemmd" --listen 127.0.0.1:0 --metrics-listen "" --port-file "$work/port" --shutdown-grace-seconds 30 \
  --drain-delay-seconds 2 \
  2>"$work/log" &
pid=$!
for _ in $(seq 100); do [[ -s $work/port ]] && break; sleep 0.1; done
export GEMM_TARGET=127.0.0.1:$(cat "$work/port")

# A CPU GEMM long enough (about a second) to still run when SIGTERM lands.
"$client" run --m 1024 --n 1024 --k 1024 --repeats 100 --no-verify >"$work/run" 2>&1 &
run=$!
# gemm-client asks ListKernels just before it sends the Multiply.
for _ in $(seq 200); do grep -q "ListKernels" "$work/log" 2>/dev/null && break; sleep 0.05; done
sleep 0.3
kill -TERM "$pid"
sleep 0.2
if "$client" health >"$work/health" 2>&1; then cat "$work/health"; echo "FAIL: SERVING after SIGTERM" >&2; exit 1; fi
"$client" run --m 64 --n 64 --k 64 >"$work/late" 2>&1 || {
  cat "$work/late"; echo "FAIL: a request in the drain delay was refused" >&2; exit 1; }
wait "$run" || { cat "$work/run" "$work/log"; echo "FAIL: in-flight request did not finish" >&2; exit 1; }
wait "$pid" || { cat "$work/log"; echo "FAIL: gemmd did not exit 0" >&2; exit 1; }
grep -q "SIGTERM received: draining" "$work/log" || { echo "FAIL: no drain log" >&2; exit 1; }
# The Multiply finished after the signal: it was drained, not cut off.
sig_line=$(grep -n "SIGTERM received" "$work/log" | cut -d: -f1)
ok_line=$(grep -n "Multiply .*1024x1024x1024 status=OK" "$work/log" | cut -d: -f1)
[[ -n $ok_line && $ok_line -gt $sig_line ]] || { cat "$work/log"; echo "FAIL: request not drained" >&2; exit 1; }
grep -q "stopped cleanly" "$work/log"
echo "1 passed, 0 failed"
