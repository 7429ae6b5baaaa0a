#!/usr/bin/env bash
# A restart of gemmd under load reaches no caller as an error: 16 requests
# in flight while the server is stopped with SIGTERM and started again, and
# then killed with -9 and started again, on the same port. The client
# waits out each outage within its deadline (wait-for-ready), reconnects
# within 0.1-1 s and retries what the restart broke.
set -euo pipefail
gemmd=$1
client=$2
work=$(mktemp -d)
trap 'kill -9 $(jobs -p) 2>/dev/null || true; pkill -9 -f "port-file $work/port" 2>/dev/null || true; rm -rf "$work"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
start() {
  rm -f "$work/port"
  "$gemmd" --listen "127.0.0.1:$port" --metrics-listen "" --port-file "$work/port" \
    --shutdown-grace-seconds 5 2>>"$work/log" &
  pid=$!
  for _ in $(seq 100); do [[ -s $work/port ]] && return 0; sleep 0.02; done
  fail "gemmd did not start"
}
start
export GEMM_TARGET=127.0.0.1:$port
"$client" --timeout 30 bench --shapes 64x64x64 --steps 0 --concurrency 16 --duration 9 >"$work/bench" 2>&1 &
bench=$!
sleep 2
kill -TERM "$pid"; wait "$pid" || true
start  # as a supervisor restarts it
echo "SIGTERM + restart done" >&2
sleep 3
kill -9 "$pid"; wait "$pid" 2>/dev/null || true
start
echo "kill -9 + restart done" >&2
wait "$bench" || { cat "$work/bench"; fail "bench failed"; }
tail -3 "$work/bench"
line=$(grep "^total:" "$work/bench")
ok=$(sed -E 's/total: ([0-9]+) ok of ([0-9]+).*/\1/' <<<"$line")
all=$(sed -E 's/total: ([0-9]+) ok of ([0-9]+).*/\2/' <<<"$line")
[[ $ok -gt 1000 && $ok -eq $all ]] || { cat "$work/bench"; fail "$((all - ok)) of $all calls failed across the restarts"; }
echo "1 passed, 0 failed"
