#!/usr/bin/env bash
# Usage: with_server.sh GEMMD COMMAND [ARGS...]
# Starts GEMMD on a free loopback port, waits until it is healthy, runs
# COMMAND with GEMM_TARGET and GEMMD_METRICS_URL set, stops the server with
# SIGTERM and checks that it exits 0. Exits with COMMAND's status.
set -euo pipefail
gemmd=$1
shift
work=$(mktemp -d)
trap 'kill -9 "$pid" 2>/dev/null || true; rm -rf "$work"' EXIT

"$gemmd" --listen 127.0.0.1:0 --metrics-listen 127.0.0.1:0 --port-file "$work/port" \
  --max-message-bytes 4MiB --matrix-quota-bytes 256MiB --shutdown-grace-seconds 10 \
  2>"$work/server.log" &
pid=$!
for _ in $(seq 100); do
  [[ -s $work/port ]] && break
  kill -0 "$pid" 2>/dev/null || { cat "$work/server.log"; echo "gemmd died at start" >&2; exit 1; }
  sleep 0.1
done
[[ -s $work/port ]] || { cat "$work/server.log"; echo "gemmd did not start" >&2; exit 1; }
export GEMM_TARGET=127.0.0.1:$(cat "$work/port")
export GEMM_MAX_MESSAGE_BYTES=4MiB
metrics_port=$(grep -o 'metrics on port [0-9]*' "$work/server.log" | grep -o '[0-9]*$')
export GEMMD_METRICS_URL=http://127.0.0.1:$metrics_port/metrics

set +e
"$@"
rc=$?
set -e

kill -TERM "$pid"
if ! wait "$pid"; then
  echo "gemmd did not exit 0 after SIGTERM" >&2
  cat "$work/server.log" >&2
  exit 1
fi
if [[ $rc -ne 0 ]]; then
  echo "--- server log ---" >&2
  tail -n 30 "$work/server.log" >&2
fi
exit $rc
